/* Fuzz target: a llama-imatrix GGUF image through nf_imatrix_open_memory; when it opens, every
 * entry is listed and looked up by its own name (right and wrong column counts), by the Hugging
 * Face names that map onto llama.cpp's, and the name mapping itself runs on text taken from
 * the input. */
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "fuzz_target.h"

static const char *const HF_NAMES[] = {
    "model.embed_tokens.weight",
    "lm_head.weight",
    "model.norm.weight",
    "model.layers.0.self_attn.q_proj.weight",
    "model.layers.0.self_attn.k_proj.weight",
    "model.layers.0.mlp.down_proj.weight",
    "model.layers.1.mlp.gate_up_proj.weight",
    "model.layers.4294967295.self_attn.o_proj.bias",
    "model.layers.99999999999999999999.mlp.up_proj.weight",
    "model.layers..weight",
    ".weight",
    "",
};
#define N_HF (sizeof HF_NAMES / sizeof HF_NAMES[0])

static void lookup(const nf_imatrix *m, const char *name, uint64_t cols)
{
    const float *imp = NULL;
    const char *matched = NULL;
    nf_error err;
    if (nf_imatrix_lookup(m, name, cols, &imp, &matched, &err) == NF_OK) {
        if (imp) {
            fz_consume(imp, (size_t)cols * sizeof *imp);
            fz_consume_str(matched);
        }
    } else {
        fz_consume_str(err.message);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The name mapping is a pure function of a string: feed it a prefix of the input. */
    char text[512];
    size_t tn = size < sizeof text - 1 ? size : sizeof text - 1;
    memcpy(text, data, tn);
    text[tn] = '\0';
    char out[64];
    char big[1100];
    fz_consume(out, nf_imatrix_gguf_name(text, out, sizeof out));
    fz_consume(big, nf_imatrix_gguf_name(text, big, sizeof big));
    fz_consume(out, nf_imatrix_gguf_name(text, out, 1));

    nf_imatrix *m = NULL;
    nf_error err;
    nf_error_clear(&err);
    nf_status st = nf_imatrix_open_memory(data, size, "fuzz.imatrix.gguf", &m, &err);
    fz_note("nf_imatrix_open_memory", st == NF_OK, err.message);
    if (st != NF_OK) {
        fz_consume_str(err.message);
        return 0;
    }
    size_t n = nf_imatrix_count(m);
    if (n == 0) abort(); /* an imatrix without entries is refused */
    for (size_t i = 0; i < n; i++) {
        uint64_t len = 0;
        const float *imp = NULL;
        const char *name = nf_imatrix_name_at(m, i, &len, &imp);
        if (!name || !imp) abort();
        fz_consume_str(name);
        fz_consume(imp, (size_t)len * sizeof *imp);
        lookup(m, name, len);
        lookup(m, name, len + 1);
    }
    if (nf_imatrix_name_at(m, n, NULL, NULL) != NULL) abort();
    for (size_t i = 0; i < N_HF; i++) {
        uint64_t len = 0;
        nf_imatrix_name_at(m, 0, &len, NULL);
        lookup(m, HF_NAMES[i], len);
    }
    lookup(m, text, 1);
    nf_imatrix_close(m);
    return 0;
}
