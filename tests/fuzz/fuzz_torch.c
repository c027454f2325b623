/* Fuzz target: a PyTorch checkpoint image (torch.save's zip or its legacy stream; docs/security.md 2.6) through
 * nf_source_open_memory(NF_SOURCE_TORCH): the zip reader, the pickle interpreter and the mapping
 * of each tensor onto its storage member; when it opens, the first tensors are read back (raw
 * bytes, raw rows, binary32 rows) - see fuzz_source_common.h.  The same bytes written to a file
 * and opened with nf_source_open must give the same answer. */
#include <string.h>

#include <ninfer/ninfer.h>

#include "fuzz_source_common.h"
#include "fuzz_target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    nf_source *s = NULL;
    nf_error err;
    nf_error_clear(&err);
    nf_status st = nf_source_open_memory(data, size, NF_SOURCE_TORCH, "fuzz.bin", &s, &err);
    fz_note("nf_source_open_memory", st == NF_OK, err.message);
    if (st == NF_OK) {
        if (nf_source_kind_of(s) != NF_SOURCE_TORCH) abort();
        fz_exercise_source(s);
    } else {
        fz_consume_str(err.message);
    }
    /* the file reader decides by the magic: the same answer for what starts as a zip or as the legacy stream */
    if ((size >= 4 && memcmp(data, "PK\3\4", 4) == 0) ||
        (size >= 3 && data[0] == 0x80 && data[1] <= 5 && data[2] == 0x8a))
        fz_compare_file_mode(data, size, "fuzz.bin", s, st);
    nf_source_close(s);
    return 0;
}
