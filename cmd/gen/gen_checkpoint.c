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
 *                              [--experts E] [--shards N] [--sparse] [--dialect D]
 * (--gguf: DIR/model.gguf, the norms in F32 as llama.cpp keeps them; --experts: a router and E
 * experts of width I in place of each layer's MLP; --shards: N safetensors files with a
 * model.safetensors.index.json; --sparse: real headers, the data left as holes (a checkpoint of
 * terabytes that takes a few MB of disk, for planning at scale: bench/README.md); --dialect: the
 * layers' projections quantized from the same values as a published quantized checkpoint stores
 * them, with its declaration (docs/dialects.md), every other tensor as without it; an NVFP4,
 * MXFP4, GPTQ or AWQ dialect's defaults are --hidden 512 --intermediate 1536, so that every
 * projection fits nvfp4 or groups of 128) */
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

typedef enum dtype { DT_BF16, DT_F16, DT_F32, DT_F8_E4M3, DT_U8, DT_I32, DT_I64 } dtype;
#define VALUE_DTYPES 3 /* the first three: what --dtype names and values are drawn as */

static const struct {
    const char *name, *st, *torch;
    unsigned bytes;
    uint32_t ggml;
} DTYPES[] = {
    [DT_BF16] = {"bf16", "BF16", "bfloat16", 2, 30},
    [DT_F16] = {"f16", "F16", "float16", 2, 1},
    [DT_F32] = {"f32", "F32", "float32", 4, 0},
    [DT_F8_E4M3] = {"f8_e4m3", "F8_E4M3", NULL, 1, 0},
    [DT_U8] = {"u8", "U8", NULL, 1, 0},
    [DT_I32] = {"i32", "I32", NULL, 4, 0},
    [DT_I64] = {"i64", "I64", NULL, 8, 0},
};

/* The quantized dialects --dialect writes (docs/dialects.md; tests/cli/gen_dialects.py lays out
 * the same tensors). */
typedef enum dialect {
    Q_NONE,
    Q_DEEPSEEK_FP8,   /* <p>.weight F8_E4M3 + <p>.weight_scale_inv F32 128x128 blocks */
    Q_CT_FP8,         /* <p>.weight F8_E4M3 + <p>.weight_scale F32 [N,1] */
    Q_CT_INT,         /* <p>.weight_packed I32 int4 + <p>.weight_scale BF16 groups of 128 + weight_shape */
    Q_CT_NVFP4,       /* <p>.weight_packed U8 + weight_scale F8_E4M3 + weight_global_scale (a divisor) */
    Q_MODELOPT_NVFP4, /* <p>.weight U8 + weight_scale F8_E4M3 + weight_scale_2 (a multiplier) */
    Q_MODELOPT_FP8,   /* <p>.weight F8_E4M3 + <p>.weight_scale F32 scalar */
    Q_GPTQ,           /* <p>.qweight I32 [K/8, N] 4-bit sym, groups of 128 (v1) + qzeros, scales F16, g_idx */
    Q_AWQ,            /* <p>.qweight I32 [K, N/8] (GEMM order) + qzeros + scales F16, groups of 128 */
    Q_CT_MXFP4,       /* <p>.weight_packed U8 [N, K/2] + weight_scale U8 E8M0 [N, K/32] */
    Q_COUNT
} dialect;

static const char *const DIALECTS[Q_COUNT] = {
    "none",
    "deepseek_fp8",
    "compressed_tensors_fp8",
    "compressed_tensors_int",
    "compressed_tensors_nvfp4",
    "modelopt_nvfp4",
    "modelopt_fp8",
    "gptq",
    "awq",
    "compressed_tensors_mxfp4",
};

static bool is_nvfp4(dialect q) { return q == Q_CT_NVFP4 || q == Q_MODELOPT_NVFP4; }
/* the dialects whose shapes need --hidden and --intermediate multiples of 128 (groups of 128;
 * MXFP4: nvfp4's tiles) */
static bool needs_128(dialect q) { return is_nvfp4(q) || q == Q_GPTQ || q == Q_AWQ || q == Q_CT_MXFP4; }

typedef struct tensor {
    char name[128], gguf_name[64];
    uint64_t rows, cols; /* cols == 0: a vector of `rows` values */
    int kind;            /* 0 weight, 1 norm, 2 embedding */
    dtype type;          /* as stored */
    uint64_t offset;     /* in the data section */
    bool scalar;         /* shape [] (one value) */
    /* the codes of a quantized weight: its dialect, the shape [n, k] of its values, the dtype
     * they are drawn as before they are quantized, and how many companions follow it */
    dialect quant;
    uint64_t n, k;
    dtype vtype;
    size_t companions;
    uint8_t *bytes; /* a companion: its data, made while its weight's codes are written */
} tensor;

static uint64_t elements(const tensor *t) { return t->scalar ? 1 : t->cols ? t->rows * t->cols : t->rows; }
static uint64_t tensor_bytes(const tensor *t) { return elements(t) * DTYPES[t->type].bytes; }

static int write_all(FILE *f, const void *p, size_t n) { return fwrite(p, 1, n, f) == n ? 0 : -1; }

/* Per-tensor scale like initialised weights: ~1/sqrt(fan_in). */
static float sigma_of(const tensor *t)
{
    uint64_t cols = t->quant ? t->k : t->cols ? t->cols : t->rows;
    return t->kind == 1 ? 0.05f : 1.0f / sqrtf((float)cols) * (t->kind == 2 ? 0.5f : 1.0f);
}

/* The next value of a tensor as a word of `type` (F32, F16 or BF16). */
static uint32_t next_word(gen *g, int kind, float sigma, dtype type)
{
    float v = normalish(g) * sigma;
    if (kind == 1) v += 1.0f;
    else if ((next64(g) & 1023) == 0) v *= 8.0f; /* rare outliers, as real weights have */
    return type == DT_F32 ? nf_f32_bits(v) : type == DT_F16 ? nf_f32_to_f16(v) : nf_f32_to_bf16(v);
}

/* The values of one tensor, in order, stored as its type. */
static int write_values(FILE *f, const tensor *t, gen *g, uint8_t *buf, size_t block)
{
    uint64_t total = elements(t);
    unsigned wb = DTYPES[t->type].bytes;
    float sigma = sigma_of(t);
    for (uint64_t done = 0; done < total;) {
        size_t m = (size_t)(total - done < block ? total - done : block);
        for (size_t k = 0; k < m; k++) {
            uint32_t w = next_word(g, t->kind, sigma, t->type);
            for (unsigned b = 0; b < wb; b++) buf[wb * k + b] = (uint8_t)(w >> (8 * b));
        }
        if (write_all(f, buf, m * wb)) return -1;
        done += m;
    }
    return 0;
}

/* ---------------------------------------------------------------- quantized weights */
/* A quantized weight's values are the ones the same arguments give without --dialect (drawn as
 * --dtype, read back as binary32), quantized as the dialect's producers do: a scale from the
 * absolute maximum of the values it covers, then every code the nearest to value / scale. */
static float word_value(uint32_t w, dtype type)
{
    return type == DT_F32   ? nf_f32_from_bits(w)
           : type == DT_F16 ? nf_f16_to_f32((uint16_t)w)
                            : nf_bf16_to_f32((uint16_t)w);
}

static void draw(gen *g, const tensor *t, float sigma, float *out, size_t count)
{
    for (size_t i = 0; i < count; i++) out[i] = word_value(next_word(g, t->kind, sigma, t->vtype), t->vtype);
}

/* The absolute maximum of the whole weight, from a first pass over its values (g is left as it
 * was, so the second pass draws them again). */
static float amax_of(const gen *g0, const tensor *t, float sigma, float *row)
{
    gen g = *g0;
    float amax = 0.0f;
    for (uint64_t r = 0; r < t->n; r++) {
        draw(&g, t, sigma, row, (size_t)t->k);
        for (uint64_t c = 0; c < t->k; c++) amax = fmaxf(amax, fabsf(row[c]));
    }
    return amax;
}

static void put_le(uint8_t *p, uint64_t v, unsigned bytes)
{
    for (unsigned b = 0; b < bytes; b++) p[b] = (uint8_t)(v >> (8 * b));
}

/* E2M1 nearest to x (|x| above 6 gives 6), ties to the even code. */
static uint8_t e2m1_nearest(float x)
{
    /* the midpoints between neighbouring magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6 */
    static const float mid[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
    float a = fabsf(x);
    unsigned i = 0;
    while (i < 7 && (a > mid[i] || (a == mid[i] && (i & 1)))) i++;
    return (uint8_t)(i | (i && signbit(x) ? 8u : 0u));
}

/* An E4M3FN scale word for s > 0 (nearest, ties to even); a block whose scale rounds to zero
 * gets the smallest one, an all-zero block 1.0: a dialect's scales are > 0. */
static uint8_t e4m3_scale(float s, float block_amax)
{
    uint8_t w = nf_f32_to_e4m3fn(s);
    if ((w & 0x7F) == 0) w = block_amax > 0.0f ? 0x01 : 0x38;
    return w;
}

/* FP8 E4M3 codes in blocks of br x bc values (DeepSeek 128x128, per row 1 x K, per tensor N x K),
 * scale = block amax / 448 (an all-zero block: 1), code = E4M3FN(value / scale); the scales into
 * scales[ceil(N/br) * ceil(K/bc)]. */
static int write_fp8(FILE *f, const tensor *t, gen *g, uint64_t br, uint64_t bc, float *scales)
{
    const uint64_t n = t->n, k = t->k, sc = (k + bc - 1) / bc;
    const float sigma = sigma_of(t);
    const bool whole = br >= n && bc >= k;
    const uint64_t slab = whole ? 1 : br; /* rows drawn at once */
    float *vals = malloc((size_t)(slab * k) * sizeof *vals);
    uint8_t *codes = malloc((size_t)(slab * k));
    int bad = !vals || !codes;
    if (!bad && whole) {
        float amax = amax_of(g, t, sigma, vals);
        scales[0] = amax > 0.0f ? amax / 448.0f : 1.0f;
    }
    for (uint64_t r0 = 0; r0 < n && !bad; r0 += slab) {
        const uint64_t rows = n - r0 < slab ? n - r0 : slab;
        draw(g, t, sigma, vals, (size_t)(rows * k));
        for (uint64_t j = 0, c0 = 0; c0 < k; j++, c0 += bc) {
            const uint64_t c1 = c0 + bc < k ? c0 + bc : k;
            float s = scales[0];
            if (!whole) {
                float amax = 0.0f;
                for (uint64_t r = 0; r < rows; r++)
                    for (uint64_t c = c0; c < c1; c++) amax = fmaxf(amax, fabsf(vals[r * k + c]));
                s = amax > 0.0f ? amax / 448.0f : 1.0f;
                scales[(r0 / br) * sc + j] = s;
            }
            for (uint64_t r = 0; r < rows; r++)
                for (uint64_t c = c0; c < c1; c++) codes[r * k + c] = nf_f32_to_e4m3fn(vals[r * k + c] / s);
        }
        bad = write_all(f, codes, (size_t)(rows * k));
    }
    free(vals);
    free(codes);
    return bad ? -1 : 0;
}

/* compressed-tensors pack-quantized int4, symmetric, groups of 128 columns: scale = BF16(group
 * amax / 7) (an all-zero group: 1), q = the nearest integer to value / scale in [-8, 7], stored
 * offset-binary (q + 8), eight per little-endian int32, the lowest column in the lowest bits. */
static int write_int4(FILE *f, const tensor *t, gen *g, uint16_t *scales)
{
    const uint64_t k = t->k, groups = (k + 127) / 128, words = (k + 7) / 8;
    const float sigma = sigma_of(t);
    float *vals = malloc((size_t)k * sizeof *vals);
    uint8_t *packed = malloc((size_t)words * 4);
    int bad = !vals || !packed;
    for (uint64_t r = 0; r < t->n && !bad; r++) {
        draw(g, t, sigma, vals, (size_t)k);
        memset(packed, 0, (size_t)words * 4);
        for (uint64_t j = 0; j < groups; j++) {
            const uint64_t c0 = j * 128, c1 = c0 + 128 < k ? c0 + 128 : k;
            float amax = 0.0f;
            for (uint64_t c = c0; c < c1; c++) amax = fmaxf(amax, fabsf(vals[c]));
            uint16_t w = nf_f32_to_bf16(amax > 0.0f ? amax / 7.0f : 1.0f);
            float s = nf_bf16_to_f32(w);
            if (!(s > 0.0f)) s = nf_bf16_to_f32(w = nf_f32_to_bf16(1.0f));
            scales[r * groups + j] = w;
            for (uint64_t c = c0; c < c1; c++) {
                float q = nearbyintf(vals[c] / s);
                int v = q < -8.0f ? -8 : q > 7.0f ? 7 : (int)q;
                packed[(c / 8) * 4 + (c % 8) / 2] |= (uint8_t)((unsigned)(v + 8) << ((c % 2) * 4));
            }
        }
        bad = write_all(f, packed, (size_t)words * 4);
    }
    free(vals);
    free(packed);
    return bad ? -1 : 0;
}

/* NVFP4: E2M1 codes in blocks of 16 with an E4M3FN scale each, under a per-tensor global scale
 * from the weight's absolute maximum.  ModelOpt: weight_scale_2 = amax / (6 * 448), a multiplier,
 * block scale = E4M3(block amax / (6 * weight_scale_2)), values code * scale * weight_scale_2;
 * compressed-tensors: weight_global_scale = 6 * 448 / amax, a divisor, block scale =
 * E4M3(block amax * global / 6), values code * scale / global.  Two codes per byte, the lower
 * column in the low nibble. */
static int write_nvfp4(FILE *f, const tensor *t, gen *g, uint8_t *scales, float *global)
{
    const uint64_t k = t->k, blocks = k / 16;
    const bool modelopt = t->quant == Q_MODELOPT_NVFP4;
    const float sigma = sigma_of(t);
    float *vals = malloc((size_t)k * sizeof *vals);
    uint8_t *codes = malloc((size_t)k / 2);
    int bad = !vals || !codes;
    if (!bad) {
        float amax = amax_of(g, t, sigma, vals);
        *global = !(amax > 0.0f) ? 1.0f : modelopt ? amax / (6.0f * 448.0f) : 6.0f * 448.0f / amax;
    }
    const float gs = *global;
    for (uint64_t r = 0; r < t->n && !bad; r++) {
        draw(g, t, sigma, vals, (size_t)k);
        memset(codes, 0, (size_t)k / 2);
        for (uint64_t j = 0; j < blocks; j++) {
            const float *v = vals + j * 16;
            float amax = 0.0f;
            for (int c = 0; c < 16; c++) amax = fmaxf(amax, fabsf(v[c]));
            uint8_t sw = e4m3_scale(modelopt ? amax / (6.0f * gs) : amax * gs / 6.0f, amax);
            scales[r * blocks + j] = sw;
            const float s = nf_e4m3fn_to_f32(sw);
            for (int c = 0; c < 16; c++) {
                uint8_t q = e2m1_nearest(modelopt ? v[c] / (s * gs) : v[c] * gs / s);
                codes[j * 8 + (uint64_t)c / 2] |= (uint8_t)(q << ((c % 2) * 4));
            }
        }
        bad = write_all(f, codes, (size_t)k / 2);
    }
    free(vals);
    free(codes);
    return bad ? -1 : 0;
}

/* GPTQ and AWQ 4-bit in groups of 128 columns, as AutoGPTQ (symmetric, checkpoint format gptq)
 * and AutoAWQ (GEMM) write them: scale = F16(group amax / 7) (an all-zero group: 1), q = the
 * nearest integer to value / scale in [-8, 7], stored as q + 8 with zero point 8.  GPTQ: qweight
 * [K/8, N], word (r, n) holding k = 8r + j at bits 4j; qzeros [K/128, N/8] of z - 1 = 7; scales
 * [K/128, N].  AWQ: qweight [K, N/8], word (k, w) holding column 8w + ORDER[i] at bits 4i; qzeros
 * [K/128, N/8] of 8 alike; scales [K/128, N].  The whole qweight is built in memory (N * K / 2
 * bytes) since its rows run along K. */
static int write_gptq_awq(FILE *f, const tensor *t, gen *g, uint8_t *qzeros, uint8_t *scales, uint8_t *g_idx)
{
    static const unsigned ORDER[8] = {0, 2, 4, 6, 1, 3, 5, 7};
    const bool awq = t->quant == Q_AWQ;
    const uint64_t n = t->n, k = t->k, groups = k / 128;
    const float sigma = sigma_of(t);
    float *vals = malloc((size_t)k * sizeof *vals);
    uint32_t *words = calloc((size_t)(n * k / 8), sizeof *words);
    unsigned slot[8];
    for (unsigned i = 0; i < 8; i++) slot[ORDER[i]] = i; /* AWQ: the nibble of column 8w + c */
    int bad = !vals || !words;
    for (uint64_t r = 0; r < n && !bad; r++) {
        draw(g, t, sigma, vals, (size_t)k);
        for (uint64_t j = 0; j < groups; j++) {
            float amax = 0.0f;
            for (uint64_t c = j * 128; c < (j + 1) * 128; c++) amax = fmaxf(amax, fabsf(vals[c]));
            uint16_t w = nf_f32_to_f16(amax > 0.0f ? amax / 7.0f : 1.0f);
            float s = nf_f16_to_f32(w);
            if (!(s > 0.0f)) s = nf_f16_to_f32(w = nf_f32_to_f16(1.0f));
            put_le(scales + 2 * (j * n + r), w, 2);
            for (uint64_t c = j * 128; c < (j + 1) * 128; c++) {
                float q = nearbyintf(vals[c] / s);
                uint32_t u = (uint32_t)((q < -8.0f ? -8 : q > 7.0f ? 7 : (int)q) + 8);
                if (awq) words[c * (n / 8) + r / 8] |= u << (4 * slot[r % 8]);
                else words[(c / 8) * n + r] |= u << (4 * (c % 8));
            }
        }
    }
    for (uint64_t i = 0; i < groups * n / 8; i++) put_le(qzeros + 4 * i, awq ? 0x88888888u : 0x77777777u, 4);
    for (uint64_t c = 0; g_idx && c < k; c++) put_le(g_idx + 4 * c, c / 128, 4);
    for (uint64_t i = 0; !bad && i < n * k / 8; i++) {
        uint8_t b[4];
        put_le(b, words[i], 4);
        bad = write_all(f, b, 4);
    }
    free(vals);
    free(words);
    return bad ? -1 : 0;
}

/* compressed-tensors mxfp4-pack-quantized (the OCP MX recipe): per 32 values the E8M0 exponent
 * e = floor(log2(block amax)) - 2 (E2M1's largest is 6 = 1.5 * 2^2; an all-zero block 2^-127),
 * code = E2M1 nearest to value / 2^e; two codes a byte, the lower column in the low nibble. */
static int write_mxfp4(FILE *f, const tensor *t, gen *g, uint8_t *scales)
{
    const uint64_t k = t->k, blocks = k / 32;
    const float sigma = sigma_of(t);
    float *vals = malloc((size_t)k * sizeof *vals);
    uint8_t *codes = malloc((size_t)k / 2);
    int bad = !vals || !codes;
    for (uint64_t r = 0; r < t->n && !bad; r++) {
        draw(g, t, sigma, vals, (size_t)k);
        memset(codes, 0, (size_t)k / 2);
        for (uint64_t j = 0; j < blocks; j++) {
            float amax = 0.0f;
            for (int c = 0; c < 32; c++) amax = fmaxf(amax, fabsf(vals[j * 32 + (uint64_t)c]));
            int e = amax > 0.0f ? ilogbf(amax) - 2 : -127;
            e = e < -127 ? -127 : e > 127 ? 127 : e;
            scales[r * blocks + j] = (uint8_t)(e + 127);
            for (int c = 0; c < 32; c++) {
                uint8_t q = e2m1_nearest(ldexpf(vals[j * 32 + (uint64_t)c], -e));
                codes[j * 16 + (uint64_t)c / 2] |= (uint8_t)(q << ((c % 2) * 4));
            }
        }
        bad = write_all(f, codes, (size_t)k / 2);
    }
    free(vals);
    free(codes);
    return bad ? -1 : 0;
}

/* The codes of quantized weight ts[i] into f, and the bytes of its companions (the tensors after
 * it) into their buffers. */
static int write_quantized(FILE *f, tensor *ts, size_t i, gen *g)
{
    tensor *t = &ts[i];
    for (size_t c = 1; c <= t->companions; c++)
        if (!(ts[i + c].bytes = calloc(1, (size_t)tensor_bytes(&ts[i + c])))) return -1;
    uint8_t *out = ts[i + 1].bytes;
    int bad = 0;
    switch (t->quant) {
    case Q_DEEPSEEK_FP8:
    case Q_CT_FP8:
    case Q_MODELOPT_FP8: {
        const tensor *s = &ts[i + 1];
        uint64_t count = elements(s);
        float *scales = malloc((size_t)count * sizeof *scales);
        if (!scales) return -1;
        uint64_t br = t->quant == Q_DEEPSEEK_FP8 ? 128 : t->quant == Q_CT_FP8 ? 1 : t->n;
        uint64_t bc = t->quant == Q_DEEPSEEK_FP8 ? 128 : t->k;
        bad = write_fp8(f, t, g, br, bc, scales);
        for (uint64_t j = 0; j < count; j++) put_le(out + 4 * j, nf_f32_bits(scales[j]), 4);
        free(scales);
        break;
    }
    case Q_CT_INT: {
        uint64_t count = elements(&ts[i + 1]);
        uint16_t *scales = malloc((size_t)count * sizeof *scales);
        if (!scales) return -1;
        bad = write_int4(f, t, g, scales);
        for (uint64_t j = 0; j < count; j++) put_le(out + 2 * j, scales[j], 2);
        free(scales);
        put_le(ts[i + 2].bytes, t->n, 8); /* weight_shape: [N, K] */
        put_le(ts[i + 2].bytes + 8, t->k, 8);
        break;
    }
    case Q_CT_NVFP4:
    case Q_MODELOPT_NVFP4: {
        float global = 1.0f;
        bad = write_nvfp4(f, t, g, out, &global);
        put_le(ts[i + 2].bytes, nf_f32_bits(global), 4);
        break;
    }
    case Q_GPTQ:
    case Q_AWQ: bad = write_gptq_awq(f, t, g, out, ts[i + 2].bytes, t->quant == Q_GPTQ ? ts[i + 3].bytes : NULL); break;
    case Q_CT_MXFP4: bad = write_mxfp4(f, t, g, out); break;
    default: return -1;
    }
    return bad;
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
        uint64_t bytes = tensor_bytes(&ts[i]);
        const char *st = DTYPES[ts[i].type].st;
        char shape[48];
        if (ts[i].scalar) shape[0] = 0;
        else if (ts[i].cols) snprintf(shape, sizeof shape, "%" PRIu64 ",%" PRIu64, ts[i].rows, ts[i].cols);
        else snprintf(shape, sizeof shape, "%" PRIu64, ts[i].rows);
        hlen += (size_t)snprintf(header + hlen, hcap - hlen,
                                 ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%s],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}",
                                 ts[i].name, st, shape, off, off + bytes);
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
        for (size_t i = first; i < end && !bad; i++) {
            if (ts[i].quant) bad = write_quantized(f, ts, i, g);
            else if (ts[i].bytes) bad = write_all(f, ts[i].bytes, (size_t)tensor_bytes(&ts[i]));
            else bad = write_values(f, &ts[i], g, buf, block);
            free(ts[i].bytes); /* a companion's, written */
            ts[i].bytes = NULL;
        }
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
    for (size_t i = 0; i < n; i++) total += tensor_bytes(&ts[i]);
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
        do sum += tensor_bytes(&ts[end]), end++;
        while (end < n - (shards - 1 - k) &&
               (k + 1 == shards || (double)sum < (double)total * (double)(k + 1) / (double)shards));
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
                      uint64_t layers, uint64_t kv_hidden, uint64_t head_dim)
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
    /* llama.cpp's rules read heads per kv head (docs/presets.md): --head-dim sets it for small shapes */
    uint32_t heads = head_dim && hidden % head_dim == 0 ? (uint32_t)(hidden / head_dim) : 1;
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

/* ---------------------------------------------------------------- dialects */
static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* The layers' projections (attention q/k/v/o, the MLP's or the experts' gate/up/down) are what a
 * quantized checkpoint quantizes; embeddings, norms, the router and lm_head stay as they are. */
static bool quantized_in_dialect(const tensor *t)
{
    return t->kind == 0 && t->cols && strncmp(t->name, "model.layers.", 13) == 0 && ends_with(t->name, "_proj.weight");
}

static tensor *push(tensor *out, size_t *n, const char *stem, const char *suffix, dtype type, uint64_t rows,
                    uint64_t cols)
{
    tensor *t = &out[(*n)++];
    *t = (tensor){.rows = rows, .cols = cols, .type = type, .name = {0}};
    snprintf(t->name, sizeof t->name, "%s%s", stem, suffix);
    return t;
}

/* ts[0..n) with every projection replaced by its dialect's codes and companions, into out (room
 * for 4 * n); returns the new count. */
static size_t quantize_list(const tensor *ts, size_t n, dialect q, tensor *out)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (!quantized_in_dialect(&ts[i])) {
            out[m++] = ts[i];
            continue;
        }
        char stem[128];
        snprintf(stem, sizeof stem, "%.*s", (int)(strlen(ts[i].name) - strlen(".weight")), ts[i].name);
        const uint64_t nn = ts[i].rows, k = ts[i].cols;
        tensor *c;
        switch (q) {
        case Q_DEEPSEEK_FP8:
        case Q_CT_FP8:
        case Q_MODELOPT_FP8:
            c = push(out, &m, stem, ".weight", DT_F8_E4M3, nn, k);
            c->companions = 1;
            if (q == Q_DEEPSEEK_FP8)
                push(out, &m, stem, ".weight_scale_inv", DT_F32, (nn + 127) / 128, (k + 127) / 128);
            else if (q == Q_CT_FP8) push(out, &m, stem, ".weight_scale", DT_F32, nn, 1);
            else push(out, &m, stem, ".weight_scale", DT_F32, 1, 0)->scalar = true;
            break;
        case Q_CT_INT:
            c = push(out, &m, stem, ".weight_packed", DT_I32, nn, (k + 7) / 8);
            c->companions = 2;
            push(out, &m, stem, ".weight_scale", DT_BF16, nn, (k + 127) / 128);
            push(out, &m, stem, ".weight_shape", DT_I64, 2, 0);
            break;
        case Q_GPTQ:
        case Q_AWQ:
            c = q == Q_GPTQ ? push(out, &m, stem, ".qweight", DT_I32, k / 8, nn)
                            : push(out, &m, stem, ".qweight", DT_I32, k, nn / 8);
            c->companions = q == Q_GPTQ ? 3 : 2;
            push(out, &m, stem, ".qzeros", DT_I32, k / 128, nn / 8);
            push(out, &m, stem, ".scales", DT_F16, k / 128, nn);
            if (q == Q_GPTQ) push(out, &m, stem, ".g_idx", DT_I32, k, 0);
            break;
        case Q_CT_MXFP4:
            c = push(out, &m, stem, ".weight_packed", DT_U8, nn, k / 2);
            c->companions = 1;
            push(out, &m, stem, ".weight_scale", DT_U8, nn, k / 32);
            break;
        default: /* NVFP4 */
            c = push(out, &m, stem, q == Q_CT_NVFP4 ? ".weight_packed" : ".weight", DT_U8, nn, k / 2);
            c->companions = 2;
            push(out, &m, stem, ".weight_scale", DT_F8_E4M3, nn, k / 16);
            if (q == Q_CT_NVFP4) push(out, &m, stem, ".weight_global_scale", DT_F32, 1, 0);
            else push(out, &m, stem, ".weight_scale_2", DT_F32, 1, 0)->scalar = true;
            break;
        }
        c->quant = q;
        c->n = nn;
        c->k = k;
        c->vtype = ts[i].type;
        c->kind = ts[i].kind;
    }
    return m;
}

/* The dialect's declaration in config.json: its quantization_config (DeepSeek, compressed-tensors;
 * ModelOpt declares in hf_quant_config.json, write_hf_quant). */
static void print_quantization_config(FILE *f, dialect q, bool experts)
{
    /* with experts, the router (mlp.gate) is left unquantized, as the producers leave it */
    const char *ignore = experts ? "[\"lm_head\", \"re:.*mlp[.]gate$\"]" : "[\"lm_head\"]";
    switch (q) {
    case Q_DEEPSEEK_FP8:
        fprintf(f, "  \"quantization_config\": {\n    \"activation_scheme\": \"dynamic\",\n    \"fmt\": \"e4m3\",\n"
                   "    \"quant_method\": \"fp8\",\n    \"weight_block_size\": [128, 128]\n  },\n");
        break;
    case Q_GPTQ:
        fprintf(f, "  \"quantization_config\": {\n    \"quant_method\": \"gptq\",\n    \"bits\": 4,\n"
                   "    \"group_size\": 128,\n    \"desc_act\": false,\n    \"sym\": true,\n"
                   "    \"checkpoint_format\": \"gptq\"\n  },\n");
        break;
    case Q_AWQ:
        fprintf(f, "  \"quantization_config\": {\n    \"quant_method\": \"awq\",\n    \"bits\": 4,\n"
                   "    \"group_size\": 128,\n    \"version\": \"gemm\",\n    \"zero_point\": true\n  },\n");
        break;
    case Q_CT_FP8:
    case Q_CT_INT:
    case Q_CT_NVFP4:
    case Q_CT_MXFP4: {
        const char *format = q == Q_CT_FP8     ? "float-quantized"
                             : q == Q_CT_INT   ? "pack-quantized"
                             : q == Q_CT_MXFP4 ? "mxfp4-pack-quantized"
                                               : "nvfp4-pack-quantized";
        const char *weights =
            q == Q_CT_FP8     ? "\"num_bits\": 8, \"type\": \"float\", \"symmetric\": true, \"strategy\": \"channel\""
            : q == Q_CT_INT   ? "\"num_bits\": 4, \"type\": \"int\", \"symmetric\": true, \"strategy\": \"group\", "
                                "\"group_size\": 128"
            : q == Q_CT_MXFP4 ? "\"num_bits\": 4, \"type\": \"float\", \"symmetric\": true, \"strategy\": \"group\", "
                                "\"group_size\": 32"
                              : "\"num_bits\": 4, \"type\": \"float\", \"symmetric\": true, \"strategy\": "
                                "\"tensor_group\", \"group_size\": 16";
        fprintf(f,
                "  \"quantization_config\": {\n    \"quant_method\": \"compressed-tensors\",\n    \"format\": \"%s\",\n"
                "    \"config_groups\": {\n      \"group_0\": {\n        \"targets\": [\"Linear\"],\n"
                "        \"weights\": {%s}\n      }\n    },\n    \"ignore\": %s\n  },\n",
                format, weights, ignore);
        break;
    }
    default: break;
    }
}

static int write_hf_quant(const char *dir, dialect q, bool experts)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/hf_quant_config.json", dir);
    FILE *f = fopen(path, "wb");
    if (!f) return 3;
    fprintf(f,
            "{\n  \"producer\": {\"name\": \"modelopt\"},\n  \"quantization\": {\n    \"quant_algo\": \"%s\",\n%s"
            "    \"exclude_modules\": %s\n  }\n}\n",
            q == Q_MODELOPT_NVFP4 ? "NVFP4" : "FP8", q == Q_MODELOPT_NVFP4 ? "    \"group_size\": 16,\n" : "",
            experts ? "[\"lm_head\", \"re:.*mlp[.]gate$\"]" : "[\"lm_head\"]");
    return fclose(f) == 0 ? 0 : 3;
}

/* ---------------------------------------------------------------- main */
#define USAGE                                                                                                         \
    "usage: ninfer-gen-checkpoint DIR [--hidden H] [--kv-hidden H] [--intermediate I] [--layers L] [--vocab V]\n"     \
    "                             [--dtype bf16|f16|f32] [--seed S] [--gguf] [--experts E] [--shards N] [--sparse]\n" \
    "                             [--dialect D] [--head-dim D]\n"

static int usage(void)
{
    fprintf(stderr, USAGE);
    return 2;
}

static int help(void)
{
    printf(USAGE "Writes a deterministic Llama-shaped checkpoint into DIR: model.safetensors, config.json and\n"
                 "tokenizer.json (or model.gguf with --gguf).  The same arguments give the same bytes.\n"
                 "\n"
                 "  --hidden H        hidden size (default 200; 512 with an NVFP4, MXFP4, GPTQ or AWQ dialect)\n"
                 "  --kv-hidden H     rows of k_proj and v_proj (default H / 4)\n"
                 "  --intermediate I  MLP width (default 520; 1536 with an NVFP4, MXFP4, GPTQ or AWQ dialect)\n"
                 "  --layers L        transformer layers (default 2)\n"
                 "  --vocab V         rows of the embedding and lm_head (default 1000)\n"
                 "  --dtype T         bf16 (default), f16 or f32\n"
                 "  --seed S          the values' seed (default 2026)\n"
                 "  --gguf            DIR/model.gguf with llama.cpp's names, the norms in F32\n"
                 "  --head-dim D      with --gguf: H / D attention heads and KV / D kv heads in its\n"
                 "                    metadata (default 128; H not a multiple of D: 1 head)\n"
                 "  --experts E       a router and E experts of width I in place of each layer's MLP\n"
                 "  --shards N        N safetensors files and a model.safetensors.index.json\n"
                 "  --sparse          real headers, the data left as holes (reads as zeros)\n"
                 "  --dialect D       the layers' projections (q/k/v/o, gate/up/down) quantized as dialect D\n"
                 "                    stores them, with its declaration (docs/dialects.md); the embedding,\n"
                 "                    norms, router and lm_head stay --dtype.  D: deepseek_fp8,\n"
                 "                    compressed_tensors_fp8, compressed_tensors_int, compressed_tensors_nvfp4,\n"
                 "                    compressed_tensors_mxfp4, modelopt_fp8, modelopt_nvfp4, gptq, awq.\n"
                 "                    Not with --gguf or --sparse\n"
                 "  -h, --help        this text\n");
    return 0;
}

int main(int argc, char **argv)
{
    const char *dir = NULL, *dtype_name = "bf16", *dialect_name = NULL;
    bool gguf = false, sparse = false, hidden_set = false, inter_set = false;
    uint64_t hidden = 200, kv_hidden = 0, inter = 520, layers = 2, vocab = 1000, seed = 2026, experts = 0, shards = 1,
             head_dim = 128;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        uint64_t *target = NULL;
        if (strcmp(a, "--hidden") == 0) target = &hidden, hidden_set = true;
        else if (strcmp(a, "--kv-hidden") == 0) target = &kv_hidden;
        else if (strcmp(a, "--intermediate") == 0) target = &inter, inter_set = true;
        else if (strcmp(a, "--layers") == 0) target = &layers;
        else if (strcmp(a, "--vocab") == 0) target = &vocab;
        else if (strcmp(a, "--seed") == 0) target = &seed;
        else if (strcmp(a, "--experts") == 0) target = &experts;
        else if (strcmp(a, "--shards") == 0) target = &shards;
        else if (strcmp(a, "--head-dim") == 0) target = &head_dim;
        else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) return help();
        else if (strcmp(a, "--sparse") == 0) {
            sparse = true;
            continue;
        } else if (strcmp(a, "--gguf") == 0) {
            gguf = true;
            continue;
        } else if (strcmp(a, "--dtype") == 0 && i + 1 < argc) {
            dtype_name = argv[++i];
            continue;
        } else if (strcmp(a, "--dialect") == 0 && i + 1 < argc) {
            dialect_name = argv[++i];
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
    for (int t = 0; t < VALUE_DTYPES; t++)
        if (strcmp(dtype_name, DTYPES[t].name) == 0) {
            dt = (dtype)t;
            known = true;
        }
    dialect q = Q_NONE;
    if (dialect_name) {
        for (int d = 1; d < Q_COUNT; d++)
            if (strcmp(dialect_name, DIALECTS[d]) == 0) q = (dialect)d;
        if (q == Q_NONE) {
            fprintf(stderr,
                    "ninfer-gen-checkpoint: error: --dialect takes deepseek_fp8, compressed_tensors_fp8, "
                    "compressed_tensors_int, compressed_tensors_nvfp4, compressed_tensors_mxfp4, modelopt_fp8, "
                    "modelopt_nvfp4, gptq or awq, not '%s'\n",
                    dialect_name);
            return usage();
        }
        if (gguf || sparse) {
            fprintf(stderr, "ninfer-gen-checkpoint: error: --dialect writes quantized safetensors with their values, "
                            "not --gguf or --sparse\n");
            return 2;
        }
        /* NVFP4 defaults every projection can be imported into nvfp4 with (N % 128, K % 64); the
         * same for GPTQ's and AWQ's groups of 128 and MXFP4 */
        if (needs_128(q) && !hidden_set) hidden = 512;
        if (needs_128(q) && !inter_set) inter = 1536;
    }
    if (!dir || !known || hidden == 0 || inter == 0 || vocab == 0 || shards == 0 || experts > 65536 || layers > 65536)
        return usage();
    if (gguf && (experts || shards > 1 || sparse)) {
        fprintf(stderr,
                "ninfer-gen-checkpoint: error: --experts, --shards and --sparse write safetensors, not --gguf\n");
        return 2;
    }
    if (kv_hidden == 0) kv_hidden = hidden / 4 ? hidden / 4 : 1;
    if (is_nvfp4(q) && (hidden % 16 || inter % 16)) {
        fprintf(stderr,
                "ninfer-gen-checkpoint: error: --dialect %s needs --hidden and --intermediate multiples of 16 "
                "(NVFP4 blocks of 16 values along K)\n",
                DIALECTS[q]);
        return 2;
    }
    if ((q == Q_GPTQ || q == Q_AWQ || q == Q_CT_MXFP4) && (hidden % 128 || kv_hidden % 128 || inter % 128)) {
        fprintf(stderr,
                "ninfer-gen-checkpoint: error: --dialect %s needs --hidden, --kv-hidden and --intermediate multiples "
                "of 128\n",
                DIALECTS[q]);
        return 2;
    }
    if (is_nvfp4(q) && (hidden % 128 || kv_hidden % 128 || inter % 128))
        fprintf(stderr, "ninfer-gen-checkpoint: note: nvfp4 holds [N, K] with N %% 128 == 0 and K %% 64 == 0: the "
                        "projections of other shapes import only with --requantize\n");
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "ninfer-gen-checkpoint: error: cannot create %s: %s\n", dir, strerror(errno));
        return 3;
    }
    size_t cap = 3 + (10 + 3 * (size_t)experts) * (size_t)layers, n = 0;
    tensor *ts = calloc(cap, sizeof *ts);
    if (!ts) return 3;
    ts[n++] = (tensor){.name = "model.embed_tokens.weight",
                       .gguf_name = "token_embd.weight",
                       .rows = vocab,
                       .cols = hidden,
                       .kind = 2,
                       .type = dt};
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
    ts[n++] =
        (tensor){.name = "model.norm.weight", .gguf_name = "output_norm.weight", .rows = hidden, .kind = 1, .type = dt};
    ts[n++] =
        (tensor){.name = "lm_head.weight", .gguf_name = "output.weight", .rows = vocab, .cols = hidden, .type = dt};
    if (gguf)
        for (size_t i = 0; i < n; i++)
            if (ts[i].kind == 1) ts[i].type = DT_F32; /* llama.cpp keeps the norms in F32 */
    if (q) {
        tensor *qs = calloc(4 * n, sizeof *qs);
        if (!qs) {
            free(ts);
            return 3;
        }
        n = quantize_list(ts, n, q, qs);
        free(ts);
        ts = qs;
    }
    uint64_t weight_bytes = 0;
    for (size_t i = 0; i < n; i++) weight_bytes += tensor_bytes(&ts[i]);
    int rc = gguf ? write_gguf(dir, ts, n, seed, hidden, inter, layers, kv_hidden, head_dim)
                  : write_safetensors(dir, ts, n, seed, shards, sparse);
    for (size_t i = 0; i < n; i++) free(ts[i].bytes);
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
    print_quantization_config(f, q, experts > 0);
    fprintf(f, "  \"torch_dtype\": \"%s\"\n}\n", DTYPES[dt].torch);
    if (fclose(f) != 0) return 3;
    if ((q == Q_MODELOPT_FP8 || q == Q_MODELOPT_NVFP4) && write_hf_quant(dir, q, experts > 0)) return 3;
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    f = fopen(path, "wb");
    if (!f) return 3;
    fputs("{\"version\": \"1.0\", \"model\": {\"type\": \"BPE\", \"vocab\": {\"<s>\": 0, \"</s>\": 1}}}\n", f);
    fclose(f);
    if (q)
        printf("wrote %s (%zu tensors, %" PRIu64 " bytes: the projections as %s, the rest %s)\n", dir, n, weight_bytes,
               DIALECTS[q], DTYPES[dt].name);
    else
        printf("wrote %s (%zu tensors, %" PRIu64 " bytes of %s weights%s)\n", dir, n, weight_bytes, DTYPES[dt].name,
               sparse ? ", the data as holes" : "");
    return 0;
}
