/* ggml block types that are read as values only: no gguf_* format keeps their blocks, so a GGUF
 * tensor of one of them is dequantized on the way in (docs/formats.md 8.5).
 *
 * Written from the block structs of ggml-common.h and docs/formats.md 8.5; each reproduces
 * ggml's dequantize_row_* at ggml-org/ggml d99724f2 bit for bit, under the rules of
 * ggml_dequant.c (one float expression per ggml operation, in ggml's order, every integer
 * converted on its own, fields assembled from bytes).  ggml registers no to_float for Q8_1 and
 * Q8_K; their values are Q8_0's definition on (d, qs) and ggml's dequantize_row_q8_K. */
#include "format/ggml.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common/checked.h"
#include "common/ggml_types.h"

static inline uint16_t le16(const uint8_t *p) { return (uint16_t)((unsigned)p[0] | ((unsigned)p[1] << 8)); }
static inline uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline float half_at(const uint8_t *p) { return nf_f16_to_f32(le16(p)); }
static inline int s8(unsigned b) { return (int)b - (b >= 128 ? 256 : 0); }

/* ggml's E2M1 table, doubled (kvalues_mxfp4): code 8 is the integer 0, so it decodes to +0. */
static const int8_t KV_FP4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/* Q4_1, 20 bytes: d, m, 16 nibble bytes (element j low, j+16 high); y = (F(q) * d) + m. */
static void deq_q4_1(const uint8_t *b, float *y)
{
    const float d = half_at(b), m = half_at(b + 2);
    /* two passes, each storing 16 consecutive values: what vectorises */
    for (unsigned j = 0; j < 16; j++) {
        const float p = (float)(int)(b[4 + j] & 0xFu) * d;
        y[j] = p + m;
    }
    for (unsigned j = 0; j < 16; j++) {
        const float p = (float)(int)(b[4 + j] >> 4) * d;
        y[j + 16] = p + m;
    }
}

/* Q5_1, 24 bytes: d, m, u32 of fifth bits (bit n for element n), nibbles as Q4_1. */
static void deq_q5_1(const uint8_t *b, float *y)
{
    const float d = half_at(b), m = half_at(b + 2);
    const uint32_t qh = le32(b + 4);
    for (unsigned j = 0; j < 16; j++) {
        const unsigned x = b[8 + j];
        const unsigned q0 = (x & 0xFu) | (((qh >> j) & 1u) << 4);
        const unsigned q1 = (x >> 4) | (((qh >> (j + 16)) & 1u) << 4);
        const float p0 = (float)(int)q0 * d;
        const float p1 = (float)(int)q1 * d;
        y[j] = p0 + m;
        y[j + 16] = p1 + m;
    }
}

/* Q8_1, 36 bytes: d, s (d times the codes' sum, not part of the value), 32 int8 codes. */
static void deq_q8_1(const uint8_t *b, float *y)
{
    const float d = half_at(b);
    for (unsigned n = 0; n < 32; n++) y[n] = (float)s8(b[4 + n]) * d;
}

/* Q8_K, 292 bytes: binary32 d, 256 int8 codes, 16 int16 sums (not part of the value); y = d * F(q),
 * the one type here whose product can round (d has 24 significant bits). */
static void deq_q8_k(const uint8_t *b, float *y)
{
    const float d = nf_f32_from_bits(le32(b));
    for (unsigned n = 0; n < 256; n++) y[n] = d * (float)s8(b[4 + n]);
}

/* A base-3 digit of TQ1_0: the byte times 3^n kept modulo 256, times 3, divided by 256. */
static inline int tq1_digit(unsigned byte, unsigned pow3)
{
    const unsigned q = (byte * pow3) & 0xFFu;
    return (int)((q * 3u) >> 8);
}

/* TQ1_0, 54 bytes: 48 bytes of five trits each, 4 bytes of four trits each, d at 52.  Elements
 * 0..159: digit n of byte m (m < 32) is element 32n + m; 160..239: digit n of byte 32 + m (m < 16)
 * is element 160 + 16n + m; 240..255: digit n of byte 48 + m (m < 4) is element 240 + 4n + m;
 * q = digit - 1. */
static void codes_tq1_0(const uint8_t *b, int8_t *q)
{
    static const unsigned POW3[5] = {1, 3, 9, 27, 81};
    for (unsigned n = 0; n < 5; n++)
        for (unsigned m = 0; m < 32; m++) q[32 * n + m] = (int8_t)(tq1_digit(b[m], POW3[n]) - 1);
    for (unsigned n = 0; n < 5; n++)
        for (unsigned m = 0; m < 16; m++) q[160 + 16 * n + m] = (int8_t)(tq1_digit(b[32 + m], POW3[n]) - 1);
    for (unsigned n = 0; n < 4; n++)
        for (unsigned m = 0; m < 4; m++) q[240 + 4 * n + m] = (int8_t)(tq1_digit(b[48 + m], POW3[n]) - 1);
}

/* TQ2_0, 66 bytes: 64 bytes of 2-bit codes c, d at 64.  Element 128h + 32l + m is bits 2l of
 * byte 32h + m; q = c - 1 (code 3 is +2, as in ggml). */
static void codes_tq2_0(const uint8_t *b, int8_t *q)
{
    for (unsigned h = 0; h < 2; h++)
        for (unsigned l = 0; l < 4; l++)
            for (unsigned m = 0; m < 32; m++)
                q[128 * h + 32 * l + m] = (int8_t)((int)((b[32 * h + m] >> (2 * l)) & 3u) - 1);
}

/* Q1_0, 18 bytes: d, then 16 bytes of bits (element j is bit j%8 of byte 2 + j/8); set is +1,
 * clear is -1. */
static void codes_q1_0(const uint8_t *b, int8_t *q)
{
    /* 2 * bit - 1 without a branch: the bits of real blocks are noise to a branch predictor */
    for (unsigned j = 0; j < 128; j++) q[j] = (int8_t)((int)(((unsigned)b[2 + j / 8] >> (j % 8)) & 1u) * 2 - 1);
}

bool nf_ggml_block_codes(int ggml_type, const uint8_t *block, int8_t *q, unsigned *d_offset)
{
    switch (ggml_type) {
    case NF_GGML_TQ1_0:
        codes_tq1_0(block, q);
        *d_offset = 52;
        return true;
    case NF_GGML_TQ2_0:
        codes_tq2_0(block, q);
        *d_offset = 64;
        return true;
    case NF_GGML_Q1_0:
        codes_q1_0(block, q);
        *d_offset = 0;
        return true;
    default: return false;
    }
}

/* TQ1_0, TQ2_0: y = F(q) * d. */
static void deq_codes(int ggml_type, const uint8_t *b, float *y)
{
    int8_t q[256];
    unsigned off = 0;
    (void)nf_ggml_block_codes(ggml_type, b, q, &off);
    const float d = half_at(b + off);
    for (unsigned j = 0; j < 256; j++) y[j] = (float)q[j] * d;
}
static void deq_tq1_0(const uint8_t *b, float *y) { deq_codes(NF_GGML_TQ1_0, b, y); }
static void deq_tq2_0(const uint8_t *b, float *y) { deq_codes(NF_GGML_TQ2_0, b, y); }

/* Q1_0: d for a set bit, -d for a clear one -- a negation, which flips the sign bit of any d, a
 * NaN's included (a multiplication by -1 would keep a NaN's sign); done on the bits, without a
 * branch. */
static void deq_q1_0(const uint8_t *b, float *y)
{
    const float df = half_at(b);
    uint32_t d;
    memcpy(&d, &df, sizeof d);
    for (unsigned j = 0; j < 128; j++) {
        const uint32_t v = d ^ ((~((uint32_t)b[2 + j / 8] >> (j % 8)) & 1u) << 31);
        memcpy(&y[j], &v, sizeof v);
    }
}

/* Half of an E8M0 exponent, 2^(e - 128), built as ggml builds it: e = 0 and 1 are the subnormals
 * 2^-128 and 2^-127, 255 is 2^127 (no NaN). */
static inline float e8m0_half(unsigned e)
{
    const uint32_t bits = e < 2 ? (uint32_t)0x00200000u << e : (uint32_t)(e - 1) << 23;
    return nf_f32_from_bits(bits);
}

/* MXFP4, 17 bytes: E8M0 e, 16 nibble bytes (element j low, j+16 high); y = F(kv[c]) * e8m0_half(e). */
static void deq_mxfp4(const uint8_t *b, float *y)
{
    const float d = e8m0_half(b[0]);
    for (unsigned j = 0; j < 16; j++) {
        const unsigned x = b[1 + j];
        y[j] = (float)KV_FP4[x & 0xFu] * d;
        y[j + 16] = (float)KV_FP4[x >> 4] * d;
    }
}

/* Half of a UE4M3 scale byte as ggml reads it: 0x00 and 0x7F are 0; bit 7 is not looked at
 * (0x80 is 0, 0xFF is 240); exponent field 0 is subnormal. */
static inline float ue4m3_half(unsigned x)
{
    if (x == 0 || x == 0x7F) return 0.0f;
    const int e = (int)((x >> 3) & 0xFu), man = (int)(x & 7u);
    const float raw = e == 0 ? ldexpf((float)man, -9) : ldexpf(1.0f + (float)man / 8.0f, e - 7);
    return raw * 0.5f;
}

/* NVFP4, 36 bytes: four UE4M3 scales, then 32 nibble bytes; sub-block s (16 elements) reads bytes
 * 4 + 8s .. 4 + 8s + 7: element 16s + j low, 16s + 8 + j high; y = F(kv[c]) * ue4m3_half(d[s]). */
static void deq_nvfp4(const uint8_t *b, float *y)
{
    for (unsigned s = 0; s < 4; s++) {
        const float d = ue4m3_half(b[s]);
        for (unsigned j = 0; j < 8; j++) {
            const unsigned x = b[4 + 8 * s + j];
            y[16 * s + j] = (float)KV_FP4[x & 0xFu] * d;
            y[16 * s + 8 + j] = (float)KV_FP4[x >> 4] * d;
        }
    }
}

typedef struct values_type {
    int ggml_type;
    unsigned values, bytes;
    nf_ggml_block_fn fn;
} values_type;

static const values_type VALUES_TYPES[] = {
    {NF_GGML_Q4_1, NF_GGML_Q4_1_VALUES, NF_GGML_Q4_1_BYTES, deq_q4_1},
    {NF_GGML_Q5_1, NF_GGML_Q5_1_VALUES, NF_GGML_Q5_1_BYTES, deq_q5_1},
    {NF_GGML_Q8_1, NF_GGML_Q8_1_VALUES, NF_GGML_Q8_1_BYTES, deq_q8_1},
    {NF_GGML_Q8_K, NF_GGML_Q8_K_VALUES, NF_GGML_Q8_K_BYTES, deq_q8_k},
    {NF_GGML_TQ1_0, NF_GGML_TQ1_0_VALUES, NF_GGML_TQ1_0_BYTES, deq_tq1_0},
    {NF_GGML_TQ2_0, NF_GGML_TQ2_0_VALUES, NF_GGML_TQ2_0_BYTES, deq_tq2_0},
    {NF_GGML_MXFP4, NF_GGML_MXFP4_VALUES, NF_GGML_MXFP4_BYTES, deq_mxfp4},
    {NF_GGML_NVFP4, NF_GGML_NVFP4_VALUES, NF_GGML_NVFP4_BYTES, deq_nvfp4},
    {NF_GGML_Q1_0, NF_GGML_Q1_0_VALUES, NF_GGML_Q1_0_BYTES, deq_q1_0},
};

static const values_type *values_type_of(int ggml_type)
{
    for (size_t i = 0; i < sizeof VALUES_TYPES / sizeof VALUES_TYPES[0]; i++)
        if (VALUES_TYPES[i].ggml_type == ggml_type) return &VALUES_TYPES[i];
    return NULL;
}

bool nf_ggml_values_type(int ggml_type) { return values_type_of(ggml_type) != NULL; }

nf_status nf_ggml_values_row(int ggml_type, const uint8_t *blocks, uint64_t k, float *out, nf_error *err)
{
    const values_type *t = values_type_of(ggml_type);
    if (!t) return nf_error_set(err, NF_ERR_USAGE, "nf_ggml_values_row: ggml type %d is not read here", ggml_type);
    if (k % t->values != 0)
        return nf_error_set(err, NF_ERR_USAGE, "nf_ggml_values_row: %llu values are not whole blocks of %u",
                            (unsigned long long)k, t->values);
    if (k && (!blocks || !out)) return nf_error_set(err, NF_ERR_USAGE, "nf_ggml_values_row: NULL buffer");
    const uint64_t nb = k / t->values;
    for (uint64_t i = 0; i < nb; i++) t->fn(blocks + i * t->bytes, out + i * t->values);
    return NF_OK;
}
