/* Fuzz target: a GGUF v2/v3 file image (docs/security.md 2.3) through
 * nf_source_open_memory(NF_SOURCE_GGUF); when it opens, every key/value pair is read with
 * every typed getter (first and last element of arrays) and found again by key, and the first
 * tensors are read back as in fuzz_source_common.h (ggml block types through the
 * dequantizers).  The same bytes written to a file and opened with nf_source_open (the
 * windowed pread parser) must give the same answer. */
#include <stdbool.h>

#include <ninfer/ninfer.h>

#include "fuzz_source_common.h"
#include "fuzz_target.h"

#define FZ_GGUF_KVS 256u

static void read_value(const nf_gguf_kv *kv, uint64_t index)
{
    nf_error err;
    uint64_t u;
    int64_t i;
    double d;
    bool b;
    const char *str;
    size_t len;
    if (nf_gguf_kv_uint(kv, index, &u, &err) == NF_OK) fz_consume(&u, sizeof u);
    if (nf_gguf_kv_int(kv, index, &i, &err) == NF_OK) fz_consume(&i, sizeof i);
    if (nf_gguf_kv_float(kv, index, &d, &err) == NF_OK) fz_consume(&d, sizeof d);
    if (nf_gguf_kv_bool(kv, index, &b, &err) == NF_OK) fz_consume(&b, sizeof b);
    if (nf_gguf_kv_string(kv, index, &str, &len, &err) == NF_OK) {
        fz_consume(str, len + 1); /* NUL-terminated after len bytes */
    }
    fz_consume_str(err.message);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    nf_source *s = NULL;
    nf_error err;
    nf_error_clear(&err);
    nf_status st = nf_source_open_memory(data, size, NF_SOURCE_GGUF, "fuzz.gguf", &s, &err);
    fz_note("nf_source_open_memory", st == NF_OK, err.message);
    if (st != NF_OK) {
        fz_consume_str(err.message);
        fz_compare_file_mode(data, size, "fuzz.gguf", NULL, st);
        return 0;
    }
    if (nf_source_kind_of(s) != NF_SOURCE_GGUF) abort();
    uint32_t version = nf_source_gguf_version(s);
    uint64_t alignment = nf_source_gguf_alignment(s);
    if (version < 2 || version > 3 || alignment == 0 || (alignment & (alignment - 1)) != 0) abort();
    fz_consume(&version, sizeof version);
    size_t nkv = nf_source_gguf_kv_count(s);
    for (size_t k = 0; k < nkv && k < FZ_GGUF_KVS; k++) {
        const nf_gguf_kv *kv = nf_source_gguf_kv_at(s, k);
        if (!kv) abort();
        fz_consume_str(kv->key);
        fz_consume_str(nf_gguf_type_name(kv->type));
        if (nf_source_gguf_kv_find(s, kv->key) != kv) abort(); /* keys are unique */
        if (kv->count > 0) {
            read_value(kv, 0);
            if (kv->count > 1) read_value(kv, kv->count - 1);
        }
        read_value(kv, kv->count); /* one past the end: a usage error, never a read */
    }
    if (nf_source_gguf_kv_at(s, nkv) != NULL) abort();
    size_t nt = nf_source_tensor_count(s);
    for (size_t i = 0; i < nt && i < FZ_SOURCE_TENSORS; i++) {
        const nf_source_tensor *t = nf_source_tensor_at(s, i);
        fz_consume_str(nf_ggml_type_name(t->ggml_type));
        uint32_t bv, bb;
        if (nf_ggml_type_block(t->ggml_type, &bv, &bb) && (bv != t->block_values || bb != t->block_bytes)) abort();
    }
    fz_exercise_source(s);
    fz_compare_file_mode(data, size, "fuzz.gguf", s, st);
    nf_source_close(s);
    return 0;
}
