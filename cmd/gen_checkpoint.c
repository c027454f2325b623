/* ninfer-gen-checkpoint: writes a deterministic Llama-shaped safetensors checkpoint (plus
 * config.json and a tiny tokenizer.json) for the demo, the tests and the benchmarks.  Weights
 * are pseudo-normal with a few outliers per row, norms near 1; the same arguments always give
 * the same bytes.  Tensors are generated and written one row block at a time, so a
 * multi-gigabyte checkpoint needs only a few megabytes of memory.
 *
 * usage: ninfer-gen-checkpoint DIR [--hidden H] [--kv-hidden H] [--intermediate I] [--layers L]
 *                              [--vocab V] [--dtype bf16|f32] [--seed S] */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ninfer/ninfer.h>

typedef struct gen {
    uint64_t state;
} gen;

static uint64_t next64(gen *g)
{
    uint64_t z = (g->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Approximately normal: the sum of four uniforms, scaled to unit variance. */
static float normalish(gen *g)
{
    float s = 0.0f;
    for (int i = 0; i < 4; i++) s += (float)(next64(g) >> 40) / 16777216.0f - 0.5f;
    return s * 1.7320508f;
}

typedef struct tensor {
    char name[128];
    uint64_t rows, cols;  /* cols == 0: a vector of `rows` values */
    int kind;             /* 0 weight, 1 norm, 2 embedding */
} tensor;

static uint64_t elements(const tensor *t) { return t->cols ? t->rows * t->cols : t->rows; }

static int write_all(FILE *f, const void *p, size_t n) { return fwrite(p, 1, n, f) == n ? 0 : -1; }

int main(int argc, char **argv)
{
    const char *dir = NULL, *dtype = "bf16";
    uint64_t hidden = 200, kv_hidden = 0, inter = 520, layers = 2, vocab = 1000, seed = 2026;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        uint64_t *target = NULL;
        if (strcmp(a, "--hidden") == 0) target = &hidden;
        else if (strcmp(a, "--kv-hidden") == 0) target = &kv_hidden;
        else if (strcmp(a, "--intermediate") == 0) target = &inter;
        else if (strcmp(a, "--layers") == 0) target = &layers;
        else if (strcmp(a, "--vocab") == 0) target = &vocab;
        else if (strcmp(a, "--seed") == 0) target = &seed;
        else if (strcmp(a, "--dtype") == 0 && i + 1 < argc) {
            dtype = argv[++i];
            continue;
        } else if (!dir && a[0] != '-') {
            dir = a;
            continue;
        } else {
            fprintf(stderr, "ninfer-gen-checkpoint: error: unexpected argument '%s'\n", a);
            return 2;
        }
        if (i + 1 >= argc) return 2;
        *target = strtoull(argv[++i], NULL, 10);
    }
    bool f32 = strcmp(dtype, "f32") == 0;
    if (!dir || (!f32 && strcmp(dtype, "bf16") != 0) || hidden == 0 || inter == 0 || vocab == 0) {
        fprintf(stderr, "usage: ninfer-gen-checkpoint DIR [--hidden H] [--kv-hidden H] [--intermediate I] "
                        "[--layers L] [--vocab V] [--dtype bf16|f32] [--seed S]\n");
        return 2;
    }
    if (kv_hidden == 0) kv_hidden = hidden / 4 ? hidden / 4 : 1;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "ninfer-gen-checkpoint: error: cannot create %s: %s\n", dir, strerror(errno));
        return 3;
    }
    size_t cap = 3 + 9 * (size_t)layers, n = 0;
    tensor *ts = calloc(cap, sizeof *ts);
    if (!ts) return 3;
    ts[n++] = (tensor){"model.embed_tokens.weight", vocab, hidden, 2};
    for (uint64_t l = 0; l < layers; l++) {
        static const struct {
            const char *name;
            int shape;
            int kind;
        } per_layer[] = {{"input_layernorm.weight", 0, 1},       {"self_attn.q_proj.weight", 1, 0},
                         {"self_attn.k_proj.weight", 2, 0},      {"self_attn.v_proj.weight", 2, 0},
                         {"self_attn.o_proj.weight", 1, 0},      {"post_attention_layernorm.weight", 0, 1},
                         {"mlp.gate_proj.weight", 3, 0},         {"mlp.up_proj.weight", 3, 0},
                         {"mlp.down_proj.weight", 4, 0}};
        for (size_t k = 0; k < sizeof per_layer / sizeof per_layer[0]; k++) {
            tensor *t = &ts[n++];
            snprintf(t->name, sizeof t->name, "model.layers.%" PRIu64 ".%s", l, per_layer[k].name);
            t->kind = per_layer[k].kind;
            switch (per_layer[k].shape) {
            case 0: t->rows = hidden, t->cols = 0; break;
            case 1: t->rows = hidden, t->cols = hidden; break;
            case 2: t->rows = kv_hidden, t->cols = hidden; break;
            case 3: t->rows = inter, t->cols = hidden; break;
            default: t->rows = hidden, t->cols = inter; break;
            }
        }
    }
    ts[n++] = (tensor){"model.norm.weight", hidden, 0, 1};
    ts[n++] = (tensor){"lm_head.weight", vocab, hidden, 0};

    /* Header: names, dtypes, shapes and offsets are known before any value. */
    unsigned wb = f32 ? 4u : 2u;
    size_t hcap = 256 + n * 200, hlen = 0;
    char *header = malloc(hcap);
    if (!header) return 3;
    hlen += (size_t)snprintf(header + hlen, hcap - hlen, "{\"__metadata__\":{\"format\":\"pt\"}");
    uint64_t off = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t bytes = elements(&ts[i]) * wb;
        if (ts[i].cols)
            hlen += (size_t)snprintf(header + hlen, hcap - hlen,
                                     ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%" PRIu64 ",%" PRIu64
                                     "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}",
                                     ts[i].name, f32 ? "F32" : "BF16", ts[i].rows, ts[i].cols, off, off + bytes);
        else
            hlen += (size_t)snprintf(header + hlen, hcap - hlen,
                                     ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%" PRIu64 "],\"data_offsets\":[%" PRIu64
                                     ",%" PRIu64 "]}",
                                     ts[i].name, f32 ? "F32" : "BF16", ts[i].rows, off, off + bytes);
        off += bytes;
    }
    hlen += (size_t)snprintf(header + hlen, hcap - hlen, "}");
    while (hlen % 8) header[hlen++] = ' ';
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "ninfer-gen-checkpoint: error: cannot create %s: %s\n", path, strerror(errno));
        return 3;
    }
    uint8_t len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (uint8_t)((uint64_t)hlen >> (8 * i));
    int bad = write_all(f, len8, 8) || write_all(f, header, hlen);
    free(header);
    size_t block = 1 << 16;
    uint8_t *buf = malloc(block * 4);
    gen g = {seed};
    for (size_t i = 0; i < n && !bad && buf; i++) {
        const tensor *t = &ts[i];
        uint64_t total = elements(t), cols = t->cols ? t->cols : t->rows;
        /* Per-tensor scale like initialised weights: ~1/sqrt(fan_in). */
        float sigma = t->kind == 1 ? 0.05f : 1.0f / sqrtf((float)cols) * (t->kind == 2 ? 0.5f : 1.0f);
        for (uint64_t done = 0; done < total && !bad;) {
            size_t m = (size_t)(total - done < block ? total - done : block);
            for (size_t k = 0; k < m; k++) {
                float v = normalish(&g) * sigma;
                if (t->kind == 1) v += 1.0f;
                else if ((next64(&g) & 1023) == 0) v *= 8.0f; /* rare outliers, as real weights have */
                if (f32) {
                    uint32_t w = nf_f32_bits(v);
                    for (int b = 0; b < 4; b++) buf[4 * k + (size_t)b] = (uint8_t)(w >> (8 * b));
                } else {
                    uint16_t w = nf_f32_to_bf16(v);
                    buf[2 * k] = (uint8_t)w;
                    buf[2 * k + 1] = (uint8_t)(w >> 8);
                }
            }
            bad = write_all(f, buf, m * wb);
            done += m;
        }
    }
    free(buf);
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "ninfer-gen-checkpoint: error: cannot write %s\n", path);
        return 3;
    }
    snprintf(path, sizeof path, "%s/config.json", dir);
    f = fopen(path, "wb");
    if (!f) return 3;
    fprintf(f,
            "{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"model_type\": \"llama\",\n"
            "  \"hidden_size\": %" PRIu64 ",\n  \"intermediate_size\": %" PRIu64 ",\n"
            "  \"num_hidden_layers\": %" PRIu64 ",\n  \"num_key_value_heads\": %" PRIu64 ",\n"
            "  \"vocab_size\": %" PRIu64 ",\n  \"rms_norm_eps\": 1e-06,\n  \"rope_theta\": 10000.0,\n"
            "  \"torch_dtype\": \"%s\"\n}\n",
            hidden, inter, layers, kv_hidden, vocab, f32 ? "float32" : "bfloat16");
    fclose(f);
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    f = fopen(path, "wb");
    if (!f) return 3;
    fputs("{\"version\": \"1.0\", \"model\": {\"type\": \"BPE\", \"vocab\": {\"<s>\": 0, \"</s>\": 1}}}\n", f);
    fclose(f);
    free(ts);
    printf("wrote %s (%zu tensors, %" PRIu64 " bytes of %s weights)\n", dir, n, off, dtype);
    return 0;
}
