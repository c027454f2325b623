/* Fuzz target: a sharded safetensors checkpoint's index (`*.safetensors.index.json`,
 * docs/security.md 2.2) through nf_source_open.
 *
 * Input: the index's JSON text, written as "model.safetensors.index.json" in a private
 * directory (fuzz_tmpdir.h) that also holds two fixed, valid shards,
 * "model-00001-of-00002.safetensors" (model.embed_tokens.weight BF16 [2,4], model.norm.weight
 * F32 [4]) and "model-00002-of-00002.safetensors" (lm_head.weight BF16 [2,4],
 * model.layers.0.mlp.down_proj.weight F8_E4M3 [2,4]), and a config.json companion.  The
 * weight_map decides which shards are opened and every cross-check between the map and the
 * shards runs on it; when the checkpoint opens, its tensors are read back as in
 * fuzz_source_common.h. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "fuzz_source_common.h"
#include "fuzz_target.h"
#include "fuzz_tmpdir.h"

#define INDEX_NAME "model.safetensors.index.json"

/* A safetensors file image: u64 header length, header, data. */
static size_t shard(uint8_t *out, const char *header, const uint8_t *data, size_t n)
{
    size_t h = strlen(header);
    for (int i = 0; i < 8; i++) out[i] = (uint8_t)((uint64_t)h >> (8 * i));
    memcpy(out + 8, header, h);
    memcpy(out + 8 + h, data, n);
    return 8 + h + n;
}

static void make_fixtures(void)
{
    static bool done;
    if (done) return;
    done = true;
    uint8_t buf[512];
    static const uint8_t d1[24] = {0x80, 0x3f, 0x00, 0x40, 0x40, 0x40, 0x80, 0x40, 0x80, 0xbf, 0x00, 0x00,
                                   0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x40, 0x40};
    size_t n = shard(buf,
                     "{\"model.embed_tokens.weight\":{\"dtype\":\"BF16\",\"shape\":[2,4],\"data_offsets\":[0,16]},"
                     "\"model.norm.weight\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[16,24]}}",
                     d1, sizeof d1);
    fz_keep_file("model-00001-of-00002.safetensors", buf, n);
    static const uint8_t d2[24] = {0x80, 0x3f, 0x80, 0xbf, 0x00, 0x00, 0x80, 0x7f, 0x01, 0x00, 0x00, 0x40,
                                   0x00, 0x80, 0x00, 0x3f, 0x38, 0xb8, 0x00, 0x80, 0x7e, 0xfe, 0x01, 0x40};
    n = shard(
        buf,
        "{\"__metadata__\":{\"format\":\"pt\"},"
        "\"lm_head.weight\":{\"dtype\":\"BF16\",\"shape\":[2,4],\"data_offsets\":[0,16]},"
        "\"model.layers.0.mlp.down_proj.weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[2,4],\"data_offsets\":[16,24]}}",
        d2, sizeof d2);
    fz_keep_file("model-00002-of-00002.safetensors", buf, n);
    static const char config[] = "{\"architectures\":[\"LlamaForCausalLM\"]}";
    fz_keep_file("config.json", (const uint8_t *)config, sizeof config - 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    make_fixtures();
    fz_write_file(INDEX_NAME, data, size);
    char path[FZ_PATH_BYTES];
    fz_path(INDEX_NAME, path);
    nf_source *s = NULL;
    nf_error err;
    nf_error_clear(&err);
    nf_status st = nf_source_open(path, &s, &err);
    fz_note("nf_source_open", st == NF_OK, err.message);
    if (st == NF_OK) {
        if (nf_source_kind_of(s) != NF_SOURCE_SAFETENSORS || nf_source_index_path(s) == NULL) abort();
        size_t nc = nf_source_companion_count(s);
        for (size_t i = 0; i < nc; i++) {
            const char *name = NULL;
            fz_consume_str(nf_source_companion_at(s, i, &name));
            fz_consume_str(name);
        }
        if (nf_source_companion_at(s, nc, NULL) != NULL) abort();
        fz_exercise_source(s);
        nf_source_close(s);
    } else {
        fz_consume_str(err.message);
    }
    fz_remove_file(INDEX_NAME);
    return 0;
}
