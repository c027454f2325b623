/* Fuzz target: a safetensors file image (docs/security.md 2.2) through
 * nf_source_open_memory(NF_SOURCE_SAFETENSORS); when it opens, its metadata and the first
 * tensors are read back (raw bytes, raw rows, binary32 rows) - see fuzz_source_common.h.  The
 * same bytes written to a file and opened with nf_source_open must give the same answer
 * (except for files starting with "GGUF", which the file reader takes for GGUF). */
#include <string.h>

#include <ninfer/ninfer.h>

#include "fuzz_source_common.h"
#include "fuzz_target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    nf_source *s = NULL;
    nf_error err;
    nf_error_clear(&err);
    nf_status st = nf_source_open_memory(data, size, NF_SOURCE_SAFETENSORS, "fuzz.safetensors", &s, &err);
    fz_note("nf_source_open_memory", st == NF_OK, err.message);
    if (st == NF_OK) {
        if (nf_source_kind_of(s) != NF_SOURCE_SAFETENSORS) abort();
        fz_exercise_source(s);
    } else {
        fz_consume_str(err.message);
    }
    if (size < 4 || memcmp(data, "GGUF", 4) != 0) fz_compare_file_mode(data, size, "fuzz.safetensors", s, st);
    nf_source_close(s);
    return 0;
}
