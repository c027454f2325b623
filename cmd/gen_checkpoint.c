/* ninfer-gen-checkpoint: writes a deterministic Llama-shaped checkpoint for the demo, the tests
 * and the benchmarks: a safetensors file with config.json and a tiny tokenizer.json (Hugging
 * Face layout), or a GGUF v3 file with llama.cpp's tensor names and hyperparameter keys (the
 * form llama.cpp's tools convert from).  Weights are pseudo-normal with a few outliers per row,
 * norms near 1; the same arguments always give the same values, in either container.  Tensors
 * are generated and written one block of values at a time, so a multi-gigabyte checkpoint needs
 * only a few megabytes of memory.
 *
 * usage: ninfer-gen-checkpoint DIR [--hidden H] [--kv-hidden H] [--intermediate I] [--layers L]
 *                              [--vocab V] [--dtype bf16|f16|f32] [--seed S] [--gguf]
 *                              [--experts E] [--shards N] [--sparse]
 * (--gguf: DIR/model.gguf, the norms in F32 as llama.cpp keeps them; --experts: a router and E
 * experts of width I in place of each layer's MLP; --shards: N safetensors files with a
 * model.safetensors.index.json; --sparse: real headers, the data left as holes (a checkpoint of
 * terabytes that takes a few MB of disk, for planning at scale: bench/README.md)) */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

typedef enum dtype { DT_BF16, DT_F16, DT_F32 } dtype;

static const struct {
    const char *name, *st, *torch;
    unsigned bytes;
    uint32_t ggml;
} DTYPES[] = {
    [DT_BF16] = {"bf16", "BF16", "bfloat16", 2, 30},
    [DT_F16] = {"f16", "F16", "float16", 2, 1},
    [DT_F32] = {"f32", "F32", "float32", 4, 0},
};

typedef struct tensor {
    char name[128], gguf_name[64];
    uint64_t rows, cols;  /* cols == 0: a vector of `rows` values */
    int kind;             /* 0 weight, 1 norm, 2 embedding */
    dtype type;           /* as stored */
    uint64_t offset;      /* in the data section */
} tensor;

static uint64_t elements(const tensor *t) { return t->cols ? t->rows * t->cols : t->rows; }

static int write_all(FILE *f, const void *p, size_t n) { return fwrite(p, 1, n, f) == n ? 0 : -1; }

/* The values of one tensor, in order, stored as its type. */
static int write_values(FILE *f, const tensor *t, gen *g, uint8_t *buf, size_t block)
{
    uint64_t total = elements(t), cols = t->cols ? t->cols : t->rows;
    unsigned wb = DTYPES[t->type].bytes;
    /* Per-tensor scale like initialised weights: ~1/sqrt(fan_in). */
    float sigma = t->kind == 1 ? 0.05f : 1.0f / sqrtf((float)cols) * (t->kind == 2 ? 0.5f : 1.0f);
    for (uint64_t done = 0; done < total;) {
        size_t m = (size_t)(total - done < block ? total - done : block);
        for (size_t k = 0; k < m; k++) {
            float v = normalish(g) * sigma;
            if (t->kind == 1) v += 1.0f;
            else if ((next64(g) & 1023) == 0) v *= 8.0f; /* rare outliers, as real weights have */
            uint32_t w = t->type == DT_F32 ? nf_f32_bits(v) : t->type == DT_F16 ? nf_f32_to_f16(v) : nf_f32_to_bf16(v);
            for (unsigned b = 0; b < wb; b++) buf[wb * k + b] = (uint8_t)(w >> (8 * b));
        }
        if (write_all(f, buf, m * wb)) return -1;
        done += m;
    }
    return 0;
}

/* ---------------------------------------------------------------- safetensors */
/* Tensors [first, end) as one safetensors file; sparse: the data section a hole of its size. */
static int write_shard(const char *path, tensor *ts, size_t first, size_t end, gen *g, bool sparse)
{
    size_t hcap = 256 + (end - first) * 200, hlen = 0;
    char *header = malloc(hcap);
    if (!header) return 3;
    hlen += (size_t)snprintf(header + hlen, hcap - hlen, "{\"__metadata__\":{\"format\":\"pt\"}");
    uint64_t off = 0;
    for (size_t i = first; i < end; i++) {
        uint64_t bytes = elements(&ts[i]) * DTYPES[ts[i].type].bytes;
        const char *st = DTYPES[ts[i].type].st;
        if (ts[i].cols)
            hlen += (size_t)snprintf(header + hlen, hcap - hlen,
                                     ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%" PRIu64 ",%" PRIu64
                                     "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}",
                                     ts[i].name, st, ts[i].rows, ts[i].cols, off, off + bytes);
        else
            hlen += (size_t)snprintf(header + hlen, hcap - hlen,
                                     ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%" PRIu64 "],\"data_offsets\":[%" PRIu64
                                     ",%" PRIu64 "]}",
                                     ts[i].name, st, ts[i].rows, off, off + bytes);
        off += bytes;
    }
    hlen += (size_t)snprintf(header + hlen, hcap - hlen, "}");
    while (hlen % 8) header[hlen++] = ' ';
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "ninfer-gen-checkpoint: error: cannot create %s: %s\n", path, strerror(errno));
        free(header);
        return 3;
    }
    uint8_t len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (uint8_t)((uint64_t)hlen >> (8 * i));
    int bad = write_all(f, len8, 8) || write_all(f, header, hlen);
    free(header);
    if (sparse) {
        /* the data: a hole of its size (reads as zeros, takes no blocks) */
        bad = bad || fflush(f) != 0 || ftruncate(fileno(f), (off_t)(8 + hlen + off)) != 0;
    } else {
        size_t block = 1 << 16;
        uint8_t *buf = malloc(block * 4);
        bad = bad || !buf;
        for (size_t i = first; i < end && !bad; i++) bad = write_values(f, &ts[i], g, buf, block);
        free(buf);
    }
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "ninfer-gen-checkpoint: error: cannot write %s\n", path);
        return 3;
    }
    return 0;
}

/* One file model.safetensors, or `shards` files model-NNNNN-of-MMMMM.safetensors of near-equal
 * bytes (whole tensors, in order) and the index that maps every tensor to its file.  The values
 * are the same sequence either way. */
static int write_safetensors(const char *dir, tensor *ts, size_t n, uint64_t seed, uint64_t shards, bool sparse)
{
    gen g = {seed};
    char path[4096];
    if (shards <= 1) {
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        return write_shard(path, ts, 0, n, &g, sparse);
    }
    if (shards > n) shards = n;
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) total += elements(&ts[i]) * DTYPES[ts[i].type].bytes;
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    FILE *ix = fopen(path, "wb");
    if (!ix) {
        fprintf(stderr, "ninfer-gen-checkpoint: error: cannot create %s: %s\n", path, strerror(errno));
        return 3;
    }
    fprintf(ix, "{\"metadata\": {\"total_size\": %" PRIu64 "}, \"weight_map\": {", total);
    int rc = 0;
    uint64_t sum = 0;
    size_t first = 0;
    for (uint64_t k = 0; k < shards && rc == 0; k++) {
        /* shard k ends where the bytes so far reach (k + 1) / shards of the total, leaving at
         * least one tensor for each shard after it */
        size_t end = first;
        do sum += elements(&ts[end]) * DTYPES[ts[end].type].bytes, end++;
        while (end < n - (shards - 1 - k) && (k + 1 == shards || (double)sum < (double)total * (double)(k + 1) / (double)shards));
        if (k + 1 == shards) end = n;
        char name[64];
        snprintf(name, sizeof name, "model-%05" PRIu64 "-of-%05" PRIu64 ".safetensors", k + 1, shards);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        rc = write_shard(path, ts, first, end, &g, sparse);
        for (size_t i = first; i < end; i++) fprintf(ix, "%s\"%s\": \"%s\"", i ? ", " : "", ts[i].name, name);
        first = end;
    }
    fprintf(ix, "}}\n");
    if (fclose(ix) != 0 && rc == 0) {
        fprintf(stderr, "ninfer-gen-checkpoint: error: cannot write %s\n", path);
        rc = 3;
    }
    return rc;
}

/* ---------------------------------------------------------------- GGUF */
#define GGUF_ALIGNMENT 32u
enum { KV_U32 = 4, KV_F32 = 6, KV_STRING = 8 };

typedef struct gbuf {
    uint8_t *p;
    size_t len, cap;
    int bad;
} gbuf;

static void g_bytes(gbuf *b, const void *data, size_t n)
{
    if (b->bad) return;
    if (b->len + n > b->cap) {
        size_t cap = (b->cap ? b->cap * 2 : 4096) + n;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->bad = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void g_u32(gbuf *b, uint32_t v)
{
    uint8_t x[4];
    for (int i = 0; i < 4; i++) x[i] = (uint8_t)(v >> (8 * i));
    g_bytes(b, x, 4);
}

static void g_u64(gbuf *b, uint64_t v)
{
    uint8_t x[8];
    for (int i = 0; i < 8; i++) x[i] = (uint8_t)(v >> (8 * i));
    g_bytes(b, x, 8);
}

static void g_str(gbuf *b, const char *s)
{
    g_u64(b, strlen(s));
    g_bytes(b, s, strlen(s));
}

static void kv_u32(gbuf *b, const char *key, uint32_t v)
{
    g_str(b, key);
    g_u32(b, KV_U32);
    g_u32(b, v);
}

static void kv_f32(gbuf *b, const char *key, float v)
{
    g_str(b, key);
    g_u32(b, KV_F32);
    g_u32(b, nf_f32_bits(v));
}

static void kv_str(gbuf *b, const char *key, const char *v)
{
    g_str(b, key);
    g_u32(b, KV_STRING);
    g_str(b, v);
}

static int write_gguf(const char *dir, tensor *ts, size_t n, uint64_t seed, uint64_t hidden, uint64_t inter,
                      uint64_t layers, uint64_t kv_hidden)
{
    gbuf b = {0};
    g_bytes(&b, "GGUF", 4);
    g_u32(&b, 3);
    g_u64(&b, n);
    g_u64(&b, 10);
    kv_str(&b, "general.architecture", "llama");
    kv_str(&b, "general.name", "ninfer-gen-checkpoint");
    kv_u32(&b, "general.alignment", GGUF_ALIGNMENT);
    kv_u32(&b, "llama.block_count", (uint32_t)layers);
    kv_u32(&b, "llama.context_length", 4096);
    kv_u32(&b, "llama.embedding_length", (uint32_t)hidden);
    kv_u32(&b, "llama.feed_forward_length", (uint32_t)inter);
    uint32_t heads = hidden % 128 == 0 ? (uint32_t)(hidden / 128) : 1;
    kv_u32(&b, "llama.attention.head_count", heads);
    kv_u32(&b, "llama.attention.head_count_kv",
           (uint32_t)(heads * kv_hidden / hidden ? heads * kv_hidden / hidden : 1));
    kv_f32(&b, "llama.attention.layer_norm_rms_epsilon", 1e-6f);
    uint64_t off = 0;
    for (size_t i = 0; i < n; i++) {
        tensor *t = &ts[i];
        g_str(&b, t->gguf_name);
        if (t->cols) {
            g_u32(&b, 2);
            g_u64(&b, t->cols); /* ne[0]: the innermost (contiguous) dimension */
            g_u64(&b, t->rows);
        } else {
            g_u32(&b, 1);
            g_u64(&b, t->rows);
        }
        g_u32(&b, DTYPES[t->type].ggml);
        t->offset = off;
        g_u64(&b, off);
        off += (elements(t) * DTYPES[t->type].bytes + GGUF_ALIGNMENT - 1) / GGUF_ALIGNMENT * GGUF_ALIGNMENT;
    }
    static const uint8_t zeros[GGUF_ALIGNMENT];
    g_bytes(&b, zeros, (GGUF_ALIGNMENT - b.len % GGUF_ALIGNMENT) % GGUF_ALIGNMENT);
    if (b.bad) return 3;
    char path[4096];
    snprintf(path, sizeof path, "%s/model.gguf", dir);
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "ninfer-gen-checkpoint: error: cannot create %s: %s\n", path, strerror(errno));
        free(b.p);
        return 3;
    }
    int bad = write_all(f, b.p, b.len);
    free(b.p);
    size_t block = 1 << 16;
    uint8_t *buf = malloc(block * 4);
    gen g = {seed};
    for (size_t i = 0; i < n && !bad && buf; i++) {
        bad = write_values(f, &ts[i], &g, buf, block);
        size_t bytes = (size_t)(elements(&ts[i]) * DTYPES[ts[i].type].bytes);
        if (!bad && bytes % GGUF_ALIGNMENT) bad = write_all(f, zeros, GGUF_ALIGNMENT - bytes % GGUF_ALIGNMENT);
    }
    free(buf);
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "ninfer-gen-checkpoint: error: cannot write %s\n", path);
        return 3;
    }
    return 0;
}

/* ---------------------------------------------------------------- main */
static int usage(void)
{
    fprintf(stderr, "usage: ninfer-gen-checkpoint DIR [--hidden H] [--kv-hidden H] [--intermediate I] "
                    "[--layers L] [--vocab V] [--dtype bf16|f16|f32] [--seed S] [--gguf] [--experts E] "
                    "[--shards N] [--sparse]\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *dir = NULL, *dtype_name = "bf16";
    bool gguf = false, sparse = false;
    uint64_t hidden = 200, kv_hidden = 0, inter = 520, layers = 2, vocab = 1000, seed = 2026, experts = 0, shards = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        uint64_t *target = NULL;
        if (strcmp(a, "--hidden") == 0) target = &hidden;
        else if (strcmp(a, "--kv-hidden") == 0) target = &kv_hidden;
        else if (strcmp(a, "--intermediate") == 0) target = &inter;
        else if (strcmp(a, "--layers") == 0) target = &layers;
        else if (strcmp(a, "--vocab") == 0) target = &vocab;
        else if (strcmp(a, "--seed") == 0) target = &seed;
        else if (strcmp(a, "--experts") == 0) target = &experts;
        else if (strcmp(a, "--shards") == 0) target = &shards;
        else if (strcmp(a, "--sparse") == 0) {
            sparse = true;
            continue;
        } else if (strcmp(a, "--gguf") == 0) {
            gguf = true;
            continue;
        } else if (strcmp(a, "--dtype") == 0 && i + 1 < argc) {
            dtype_name = argv[++i];
            continue;
        } else if (!dir && a[0] != '-') {
            dir = a;
            continue;
        } else {
            fprintf(stderr, "ninfer-gen-checkpoint: error: unexpected argument '%s'\n", a);
            return usage();
        }
        if (i + 1 >= argc) return usage();
        *target = strtoull(argv[++i], NULL, 10);
    }
    dtype dt = DT_BF16;
    bool known = false;
    for (int t = 0; t < 3; t++)
        if (strcmp(dtype_name, DTYPES[t].name) == 0) {
            dt = (dtype)t;
            known = true;
        }
    if (!dir || !known || hidden == 0 || inter == 0 || vocab == 0 || shards == 0 || experts > 65536 ||
        layers > 65536)
        return usage();
    if (gguf && (experts || shards > 1 || sparse)) {
        fprintf(stderr, "ninfer-gen-checkpoint: error: --experts, --shards and --sparse write safetensors, not --gguf\n");
        return 2;
    }
    if (kv_hidden == 0) kv_hidden = hidden / 4 ? hidden / 4 : 1;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "ninfer-gen-checkpoint: error: cannot create %s: %s\n", dir, strerror(errno));
        return 3;
    }
    size_t cap = 3 + (10 + 3 * (size_t)experts) * (size_t)layers, n = 0;
    tensor *ts = calloc(cap, sizeof *ts);
    if (!ts) return 3;
    ts[n++] = (tensor){"model.embed_tokens.weight", "token_embd.weight", vocab, hidden, 2, dt, 0};
    for (uint64_t l = 0; l < layers; l++) {
        static const struct {
            const char *name, *gguf;
            int shape;
            int kind;
        } per_layer[] = {{"input_layernorm.weight", "attn_norm.weight", 0, 1},
                         {"self_attn.q_proj.weight", "attn_q.weight", 1, 0},
                         {"self_attn.k_proj.weight", "attn_k.weight", 2, 0},
                         {"self_attn.v_proj.weight", "attn_v.weight", 2, 0},
                         {"self_attn.o_proj.weight", "attn_output.weight", 1, 0},
                         {"post_attention_layernorm.weight", "ffn_norm.weight", 0, 1},
                         {"mlp.gate_proj.weight", "ffn_gate.weight", 3, 0},
                         {"mlp.up_proj.weight", "ffn_up.weight", 3, 0},
                         {"mlp.down_proj.weight", "ffn_down.weight", 4, 0}};
        /* with experts: the router and E experts in place of the MLP's three matrices */
        size_t kinds = sizeof per_layer / sizeof per_layer[0] - (experts ? 3 : 0);
        for (size_t k = 0; k < kinds; k++) {
            tensor *t = &ts[n++];
            snprintf(t->name, sizeof t->name, "model.layers.%" PRIu64 ".%s", l, per_layer[k].name);
            snprintf(t->gguf_name, sizeof t->gguf_name, "blk.%" PRIu64 ".%s", l, per_layer[k].gguf);
            t->kind = per_layer[k].kind;
            t->type = dt;
            switch (per_layer[k].shape) {
            case 0: t->rows = hidden, t->cols = 0; break;
            case 1: t->rows = hidden, t->cols = hidden; break;
            case 2: t->rows = kv_hidden, t->cols = hidden; break;
            case 3: t->rows = inter, t->cols = hidden; break;
            default: t->rows = hidden, t->cols = inter; break;
            }
        }
        if (experts) {
            tensor *t = &ts[n++];
            *t = (tensor){.rows = experts, .cols = hidden, .kind = 0, .type = dt, .name = {0}};
            snprintf(t->name, sizeof t->name, "model.layers.%" PRIu64 ".mlp.gate.weight", l);
        }
        for (uint64_t e = 0; e < experts; e++) {
            static const char *const proj[] = {"gate_proj", "up_proj", "down_proj"};
            for (int k = 0; k < 3; k++) {
                tensor *t = &ts[n++];
                *t = (tensor){.rows = k < 2 ? inter : hidden, .cols = k < 2 ? hidden : inter, .kind = 0, .type = dt};
                snprintf(t->name, sizeof t->name, "model.layers.%" PRIu64 ".mlp.experts.%" PRIu64 ".%s.weight", l, e,
                         proj[k]);
            }
        }
    }
    ts[n++] = (tensor){"model.norm.weight", "output_norm.weight", hidden, 0, 1, dt, 0};
    ts[n++] = (tensor){"lm_head.weight", "output.weight", vocab, hidden, 0, dt, 0};
    if (gguf)
        for (size_t i = 0; i < n; i++)
            if (ts[i].kind == 1) ts[i].type = DT_F32; /* llama.cpp keeps the norms in F32 */
    uint64_t weight_bytes = 0;
    for (size_t i = 0; i < n; i++) weight_bytes += elements(&ts[i]) * DTYPES[ts[i].type].bytes;
    int rc = gguf ? write_gguf(dir, ts, n, seed, hidden, inter, layers, kv_hidden)
                  : write_safetensors(dir, ts, n, seed, shards, sparse);
    free(ts);
    if (rc) return rc;
    if (gguf) {
        printf("wrote %s/model.gguf (%zu tensors, %" PRIu64 " bytes of %s weights, F32 norms)\n", dir, n, weight_bytes,
               DTYPES[dt].name);
        return 0;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "wb");
    if (!f) return 3;
    fprintf(f,
            "{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"model_type\": \"llama\",\n"
            "  \"hidden_size\": %" PRIu64 ",\n  \"intermediate_size\": %" PRIu64 ",\n"
            "  \"num_hidden_layers\": %" PRIu64 ",\n  \"num_key_value_heads\": %" PRIu64 ",\n"
            "  \"vocab_size\": %" PRIu64 ",\n  \"rms_norm_eps\": 1e-06,\n  \"rope_theta\": 10000.0,\n",
            hidden, inter, layers, kv_hidden, vocab);
    /* only a mixture of experts says how many: a dense checkpoint stays what it always was */
    if (experts) fprintf(f, "  \"num_local_experts\": %" PRIu64 ",\n", experts);
    fprintf(f, "  \"torch_dtype\": \"%s\"\n}\n", DTYPES[dt].torch);
    fclose(f);
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    f = fopen(path, "wb");
    if (!f) return 3;
    fputs("{\"version\": \"1.0\", \"model\": {\"type\": \"BPE\", \"vocab\": {\"<s>\": 0, \"</s>\": 1}}}\n", f);
    fclose(f);
    printf("wrote %s (%zu tensors, %" PRIu64 " bytes of %s weights%s)\n", dir, n, weight_bytes, DTYPES[dt].name,
           sparse ? ", the data as holes" : "");
    return 0;
}
