/* ggml block dequantizers for the 18 imported gguf_* formats.
 *
 * Written from ggml-common.h and docs/formats.md 8.3; each reproduces ggml's dequantize_row_* at
 * ggml-org/ggml d99724f2 bit for bit.  Rules followed throughout, because they are what makes
 * the results bit-exact (spec sections 2.4-2.6):
 *   - every intermediate is a float; each product/sum is its own expression, written in ggml's
 *     association order (the build uses -ffp-contract=off, so nothing is fused);
 *   - every integer is converted to float on its own: multiplying a signed scale by a code as
 *     integers first would turn ggml's -0.0 results into +0.0;
 *   - a zero code is never short-cut to +0.0;
 *   - multi-byte fields are assembled from bytes (blocks are unaligned and little-endian) and
 *     grid values are taken out of table entries by shifting, so the host's byte order and
 *     alignment never matter.
 * Each block decodes on its own from exactly block_bytes bytes. */
#include "common/simd_target.h"
#include "format/ggml.h"

#include <stddef.h>
#include <stdint.h>

#include "common/checked.h"
#include "common/cpu.h"
#include "common/ggml_types.h"
#include "format/ggml_tables.h"

/* ---------------------------------------------------------------- field access */
static inline uint16_t rd_u16(const uint8_t *p) { return (uint16_t)((unsigned)p[0] | ((unsigned)p[1] << 8)); }

static inline uint32_t rd_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}


/* Byte j (0 = least significant) of a grid entry. */
static inline unsigned grid8(uint64_t entry, unsigned j) { return (unsigned)(entry >> (8u * j)) & 0xFFu; }
static inline unsigned grid4(uint32_t entry, unsigned j) { return (entry >> (8u * j)) & 0xFFu; }

/* iq1s_grid bytes are two's-complement int8 in {-1, 0, +1}. */
static inline int grid8_signed(uint64_t entry, unsigned j)
{
    int v = (int)grid8(entry, j);
    return v >= 128 ? v - 256 : v;
}

/* ggml applies an i-quant sign as a multiplication by -1.f or 1.f (not a negation); doing the
 * same keeps even NaN handling as close to ggml as the host allows. */
static inline float sign_of(unsigned sign_byte, unsigned j)
{
    return (sign_byte & nf_ggml_kmask_iq2xs[j]) ? -1.0f : 1.0f;
}

/* ---------------------------------------------------------------- simple blocks (4-7, 17) */
/* Q8_0: y = F(q) * D. */
static void deq_q8_0(const uint8_t *b, float *y)
{
    const float d = nf_ggml_half_at(b);
    for (unsigned n = 0; n < 32; n++) {
        const int q = (int)b[2 + n] - (b[2 + n] >= 128 ? 256 : 0);
        y[n] = (float)q * d;
    }
}

/* Q4_0: element j in the low nibble of byte 2+j, element j+16 in its high nibble. */
static void deq_q4_0(const uint8_t *b, float *y)
{
    const float d = nf_ggml_half_at(b);
    for (unsigned j = 0; j < 16; j++) {
        const unsigned x = b[2 + j];
        const int q0 = (int)(x & 0xFu) - 8;
        const int q1 = (int)(x >> 4) - 8;
        y[j] = (float)q0 * d;
        y[j + 16] = (float)q1 * d;
    }
}

/* Q5_0: the 5th bit of element n is bit n of the u32 at offset 2. */
static void deq_q5_0(const uint8_t *b, float *y)
{
    const float d = nf_ggml_half_at(b);
    const uint32_t qh = rd_u32(b + 2);
    for (unsigned j = 0; j < 16; j++) {
        const unsigned x = b[6 + j];
        const unsigned h0 = (unsigned)((qh >> j) & 1u) << 4;
        const unsigned h1 = (unsigned)((qh >> (j + 16)) & 1u) << 4;
        const int q0 = (int)((x & 0xFu) | h0) - 16;
        const int q1 = (int)((x >> 4) | h1) - 16;
        y[j] = (float)q0 * d;
        y[j + 16] = (float)q1 * d;
    }
}

/* Q2_0 (GSQ): 64 sequential 2-bit codes c, value F(c - 1) * D; code 3 (+2D) is legal. */
static void deq_q2_0(const uint8_t *b, float *y)
{
    const float d = nf_ggml_half_at(b);
    for (unsigned n = 0; n < 64; n++) {
        const unsigned c = ((unsigned)b[2 + n / 4] >> (2u * (n % 4))) & 3u;
        const int q = (int)c - 1;
        y[n] = (float)q * d;
    }
}

/* IQ4_NL: Q4_0's nibble order, values from kvalues_iq4nl; y = D * F(kv). */
static void deq_iq4_nl(const uint8_t *b, float *y)
{
    const float d = nf_ggml_half_at(b);
    for (unsigned j = 0; j < 16; j++) {
        const unsigned x = b[2 + j];
        y[j] = d * (float)nf_ggml_kvalues_iq4nl[x & 0xFu];
        y[j + 16] = d * (float)nf_ggml_kvalues_iq4nl[x >> 4];
    }
}

/* ---------------------------------------------------------------- k-quants (8-12) */
/* Q2_K: y = (A_s * F(q)) - B_s with A_s = D * F(sc), B_s = M * F(m); the subtraction is the one
 * rounding step, so the two products must be rounded to float before it. */
static void deq_q2_k(const uint8_t *b, float *y)
{
    const float d = nf_ggml_half_at(b + 80);
    const float dmin = nf_ggml_half_at(b + 82);
    for (unsigned n = 0; n < 256; n += 16) {
        const unsigned sb = b[n / 16];
        const float dl = d * (float)(sb & 0xFu);
        const float ml = dmin * (float)(sb >> 4);
        const unsigned half = n / 128, shift = 2u * ((n / 32) % 4), t0 = n % 32;
        const uint8_t *qs = b + 16 + 32 * half + t0;
        float *out = y + n;
        /* codes converted as int (the same value; a plain signed conversion vectorizes) */
        for (unsigned t = 0; t < 16; t++) {
            const int q = (int)(((unsigned)qs[t] >> shift) & 3u);
            const float prod = dl * (float)q;
            out[t] = prod - ml;
        }
    }
}

/* Q3_K: signed 6-bit scales (packed, minus 32), 2 low code bits + hmask bit (clear = -4).
 * y = (D * F(sc - 32)) * F(q): the scale product first, so q = 0 gives a signed zero. */
static void deq_q3_k(const uint8_t *b, float *y)
{
    const float d = nf_ggml_half_at(b + 108);
    const uint8_t *hmask = b, *qs = b + 32, *sc = b + 96;
    for (unsigned s = 0; s < 16; s++) {
        const unsigned low4 = s < 8 ? (sc[s] & 0xFu) : ((unsigned)sc[s - 8] >> 4);
        const unsigned high2 = ((unsigned)sc[8 + s % 4] >> (2u * (s / 4))) & 3u;
        const int scale = (int)(low4 | (high2 << 4)) - 32;
        const float dl = d * (float)scale;
        const unsigned n0 = 16 * s, half = n0 / 128, shift = 2u * ((n0 / 32) % 4), hshift = n0 / 32, t0 = n0 % 32;
        const uint8_t *q2 = qs + 32 * half + t0, *hm = hmask + t0;
        for (unsigned t = 0; t < 16; t++) {
            const int low2 = (int)(((unsigned)q2[t] >> shift) & 3u);
            const int hbit = (int)(((unsigned)hm[t] >> hshift) & 1u);
            const int q = low2 - 4 + 4 * hbit; /* a clear hmask bit subtracts 4 */
            y[n0 + t] = dl * (float)q;
        }
    }
}


/* Q4_K: sub-block s = n/32; even sub-blocks take low nibbles, odd ones high nibbles of the same
 * 32 bytes.  y = ((D * F(sc)) * F(q)) - (M * F(m)). */
static void deq_q4_k(const uint8_t *b, float *y)
{
    const float d = nf_ggml_half_at(b);
    const float dmin = nf_ggml_half_at(b + 2);
    for (unsigned s = 0; s < 8; s++) {
        unsigned sc, m;
        nf_ggml_k4_scale_min(b + 4, s, &sc, &m);
        const float d1 = d * (float)sc;
        const float m1 = dmin * (float)m;
        const uint8_t *qs = b + 16 + 32 * (s / 2);
        const unsigned shift = 4u * (s % 2);
        for (unsigned t = 0; t < 32; t++) {
            const int q = (int)(((unsigned)qs[t] >> shift) & 0xFu);
            const float prod = d1 * (float)q;
            y[32 * s + t] = prod - m1;
        }
    }
}

/* Q5_K: Q4_K plus a 5th code bit, bit s of qh byte t. */
static void deq_q5_k(const uint8_t *b, float *y)
{
    const float d = nf_ggml_half_at(b);
    const float dmin = nf_ggml_half_at(b + 2);
    const uint8_t *qh = b + 16;
    for (unsigned s = 0; s < 8; s++) {
        unsigned sc, m;
        nf_ggml_k4_scale_min(b + 4, s, &sc, &m);
        const float d1 = d * (float)sc;
        const float m1 = dmin * (float)m;
        const uint8_t *qs = b + 48 + 32 * (s / 2);
        const unsigned shift = 4u * (s % 2);
        for (unsigned t = 0; t < 32; t++) {
            const unsigned hbit = ((unsigned)qh[t] >> s) & 1u;
            const int q = (int)((((unsigned)qs[t] >> shift) & 0xFu) | (hbit << 4));
            const float prod = d1 * (float)q;
            y[32 * s + t] = prod - m1;
        }
    }
}

/* Q6_K: 4 low bits in ql, 2 high bits in qh, int8 scales.  y = (D * F(sc)) * F(q - 32). */
static void deq_q6_k(const uint8_t *b, float *y)
{
    const float d = nf_ggml_half_at(b + 208);
    /* Element n = 128h + 32g + t: the scale of its 16 (byte 192 + n/16) is the same for
     * 16 consecutive t, so it is converted once per 16. */
    for (unsigned h = 0; h < 2; h++)
        for (unsigned g = 0; g < 4; g++)
            for (unsigned t0 = 0; t0 < 32; t0 += 16) {
                const unsigned n0 = 128 * h + 32 * g + t0;
                const unsigned sbyte = b[192 + n0 / 16];
                const int sc = (int)sbyte - (sbyte >= 128 ? 256 : 0);
                const float dl = d * (float)sc;
                const uint8_t *ql = b + 64 * h + 32 * (g % 2) + t0, *qh = b + 128 + 32 * h + t0;
                const unsigned lshift = g < 2 ? 0u : 4u, hshift = 2u * g;
                for (unsigned t = 0; t < 16; t++) {
                    const int low4 = (int)(((unsigned)ql[t] >> lshift) & 0xFu);
                    const int high2 = (int)(((unsigned)qh[t] >> hshift) & 3u);
                    const int q = (low4 | (high2 << 4)) - 32;
                    y[n0 + t] = dl * (float)q;
                }
            }
}

/* ---------------------------------------------------------------- i-quants (13-16, 18-21) */
/* The IQ2 family's group scale: (D * (0.5 + F(k))) * 0.25, in that order. */
static inline float iq2_scale(float d, unsigned k)
{
    const float kf = 0.5f + (float)k;
    const float dk = d * kf;
    return dk * 0.25f;
}

/* 8 outputs (db * F(magnitude_j)) * sigma(sign bit j) from one 8-value grid entry. */
static inline void iq_grid8_signed_out(float db, uint64_t entry, unsigned signs, float *y)
{
    for (unsigned j = 0; j < 8; j++) {
        const float v = db * (float)grid8(entry, j);
        y[j] = v * sign_of(signs, j);
    }
}

/* IQ2_XXS: per group of 32, 4 grid indices then a u32 of 4 sign codes + 4-bit scale. */
static void deq_iq2_xxs(const uint8_t *b, float *y)
{
    const float d = nf_ggml_half_at(b);
    for (unsigned g = 0; g < 8; g++) {
        const uint8_t *o = b + 2 + 8 * g;
        const uint32_t w = rd_u32(o + 4);
        const float db = iq2_scale(d, w >> 28);
        for (unsigned l = 0; l < 4; l++) {
            const unsigned signs = nf_ggml_ksigns_iq2xs[(w >> (7u * l)) & 127u];
            iq_grid8_signed_out(db, nf_ggml_iq2xxs_grid[o[l]], signs, y + 32 * g + 8 * l);
        }
    }
}

/* IQ2_XS: one u16 per 8 values (9-bit grid index, 7-bit sign code); two scales per group. */
static void deq_iq2_xs(const uint8_t *b, float *y)
{
    const float d = nf_ggml_half_at(b);
    for (unsigned g = 0; g < 8; g++) {
        const unsigned sb = b[66 + g];
        const float db[2] = {iq2_scale(d, sb & 0xFu), iq2_scale(d, sb >> 4)};
        for (unsigned l = 0; l < 4; l++) {
            const unsigned v = rd_u16(b + 2 + 8 * g + 2 * l);
            const unsigned signs = nf_ggml_ksigns_iq2xs[v >> 9];
            iq_grid8_signed_out(db[l / 2], nf_ggml_iq2xs_grid[v & 511u], signs, y + 32 * g + 8 * l);
        }
    }
}

/* IQ2_S: 10-bit grid indices (8 bits + 2 from qh), explicit sign bytes, two scales per group. */
static void deq_iq2_s(const uint8_t *b, float *y)
{
    const float d = nf_ggml_half_at(b);
    for (unsigned g = 0; g < 8; g++) {
        const unsigned sb = b[74 + g];
        const float db[2] = {iq2_scale(d, sb & 0xFu), iq2_scale(d, sb >> 4)};
        const unsigned qh = b[66 + g];
        for (unsigned l = 0; l < 4; l++) {
            const unsigned idx = (unsigned)b[2 + 4 * g + l] | (((qh >> (2u * l)) & 3u) << 8);
            const unsigned signs = b[34 + 4 * g + l];
            iq_grid8_signed_out(db[l / 2], nf_ggml_iq2s_grid[idx], signs, y + 32 * g + 8 * l);
        }
    }
}

/* IQ3_XXS: 8-bit indices into a 4-value grid; group scale (D * (0.5 + F(k))) * 0.5. */
static void deq_iq3_xxs(const uint8_t *b, float *y)
{
    const float d = nf_ggml_half_at(b);
    for (unsigned g = 0; g < 8; g++) {
        const uint32_t w = rd_u32(b + 66 + 4 * g);
        const float kf = 0.5f + (float)(w >> 28);
        const float dk = d * kf;
        const float db = dk * 0.5f;
        for (unsigned l = 0; l < 4; l++) {
            const unsigned signs = nf_ggml_ksigns_iq2xs[(w >> (7u * l)) & 127u];
            const uint32_t e1 = nf_ggml_iq3xxs_grid[b[2 + 8 * g + 2 * l]];
            const uint32_t e2 = nf_ggml_iq3xxs_grid[b[2 + 8 * g + 2 * l + 1]];
            float *out = y + 32 * g + 8 * l;
            for (unsigned j = 0; j < 4; j++) {
                const float v1 = db * (float)grid4(e1, j);
                const float v2 = db * (float)grid4(e2, j);
                out[j] = v1 * sign_of(signs, j);
                out[j + 4] = v2 * sign_of(signs, j + 4);
            }
        }
    }
}

/* IQ3_S: 9-bit indices (8 bits + 1 from qh), explicit sign bytes, scale D * F(1 + 2k). */
static void deq_iq3_s(const uint8_t *b, float *y)
{
    const float d = nf_ggml_half_at(b);
    for (unsigned g = 0; g < 8; g++) {
        const unsigned k = ((unsigned)b[106 + g / 2] >> (4u * (g % 2))) & 0xFu;
        const float db = d * (float)(1u + 2u * k);
        const unsigned qh = b[66 + g];
        for (unsigned l = 0; l < 4; l++) {
            const unsigned signs = b[74 + 4 * g + l];
            float *out = y + 32 * g + 8 * l;
            for (unsigned j = 0; j < 8; j++) {
                const unsigned i = 2 * l + j / 4;
                const unsigned idx = (unsigned)b[2 + 8 * g + i] | (((qh >> i) & 1u) << 8);
                const float v = db * (float)grid4(nf_ggml_iq3s_grid[idx], j % 4);
                out[j] = v * sign_of(signs, j);
            }
        }
    }
}

/* IQ1 (S and M): delta 0.125 (ggml's IQ1S_DELTA) is added to the signed grid value before the
 * multiplication by the scale: y = dl * (F(g) + delta). */
#define IQ1_DELTA 0.125f

static inline void iq1_out8(float dl, uint64_t entry, float delta, float *y)
{
    for (unsigned j = 0; j < 8; j++) {
        const float gv = (float)grid8_signed(entry, j) + delta;
        y[j] = dl * gv;
    }
}

/* IQ1_S: 11-bit indices (8 bits in qs, 3 in the group's u16), one delta sign per group. */
static void deq_iq1_s(const uint8_t *b, float *y)
{
    const float d = nf_ggml_half_at(b);
    for (unsigned g = 0; g < 8; g++) {
        const unsigned v = rd_u16(b + 34 + 2 * g);
        const float dl = d * (float)(2u * ((v >> 12) & 7u) + 1u);
        const float delta = (v & 0x8000u) ? -IQ1_DELTA : IQ1_DELTA;
        for (unsigned l = 0; l < 4; l++) {
            const unsigned idx = (unsigned)b[2 + 4 * g + l] | (((v >> (3u * l)) & 7u) << 8);
            iq1_out8(dl, nf_ggml_iq1s_grid[idx], delta, y + 32 * g + 8 * l);
        }
    }
}

/* IQ1_M: the binary16 super-scale is the top nibbles of the four scale words; one delta per 8. */
static void deq_iq1_m(const uint8_t *b, float *y)
{
    uint16_t w[4];
    for (unsigned i = 0; i < 4; i++) w[i] = rd_u16(b + 48 + 2 * i);
    const uint16_t h = (uint16_t)(((unsigned)w[0] >> 12) | (((unsigned)w[1] >> 12) << 4) |
                                  (((unsigned)w[2] >> 12) << 8) | (((unsigned)w[3] >> 12) << 12));
    const float d = nf_f16_to_f32(h);
    for (unsigned g = 0; g < 8; g++) {
        const unsigned sw = w[g / 2], p = 6u * (g % 2);
        const float dl1 = d * (float)(2u * ((sw >> p) & 7u) + 1u);
        const float dl2 = d * (float)(2u * ((sw >> (p + 3)) & 7u) + 1u);
        for (unsigned l = 0; l < 4; l++) {
            const unsigned nib = ((unsigned)b[32 + 2 * g + l / 2] >> (4u * (l % 2))) & 0xFu;
            const unsigned idx = (unsigned)b[4 * g + l] | ((nib & 7u) << 8);
            const float delta = (nib & 8u) ? -IQ1_DELTA : IQ1_DELTA;
            iq1_out8(l < 2 ? dl1 : dl2, nf_ggml_iq1s_grid[idx], delta, y + 32 * g + 8 * l);
        }
    }
}

/* IQ4_XS: 6-bit group scales (4 low bits in scales_l, 2 high in scales_h), minus 32;
 * y = (D * F(ls - 32)) * F(kv). */
static void deq_iq4_xs(const uint8_t *b, float *y)
{
    const float d = nf_ggml_half_at(b);
    const unsigned sh = rd_u16(b + 2);
    for (unsigned g = 0; g < 8; g++) {
        const unsigned lo4 = ((unsigned)b[4 + g / 2] >> (4u * (g % 2))) & 0xFu;
        const unsigned hi2 = (sh >> (2u * g)) & 3u;
        const int ls = (int)(lo4 | (hi2 << 4)) - 32;
        const float dl = d * (float)ls;
        for (unsigned j = 0; j < 16; j++) {
            const unsigned x = b[8 + 16 * g + j];
            y[32 * g + j] = dl * (float)nf_ggml_kvalues_iq4nl[x & 0xFu];
            y[32 * g + 16 + j] = dl * (float)nf_ggml_kvalues_iq4nl[x >> 4];
        }
    }
}

/* ---------------------------------------------------------------- dispatch */
typedef nf_ggml_block_fn block_fn;

typedef struct ggml_kind {
    nf_format_id id;
    int ggml_type;
    unsigned block_values;
    unsigned block_bytes;
    block_fn fn;
} ggml_kind;

/* Each type's geometry from common/ggml_types.h (docs/formats.md section 8), the table the
 * registry takes its own from; it is still checked against the registry entry we are given:
 * the block functions above hard-code the block layout, so a disagreement must stop us before
 * we read past a block. */
#define KIND(name) NF_GGML_##name, NF_GGML_##name##_VALUES, NF_GGML_##name##_BYTES
static const ggml_kind KINDS[] = {
    {NF_FMT_GGUF_Q8_0, KIND(Q8_0), deq_q8_0},       {NF_FMT_GGUF_Q4_0, KIND(Q4_0), deq_q4_0},
    {NF_FMT_GGUF_Q5_0, KIND(Q5_0), deq_q5_0},       {NF_FMT_GGUF_Q2_0, KIND(Q2_0), deq_q2_0},
    {NF_FMT_GGUF_Q2_K, KIND(Q2_K), deq_q2_k},       {NF_FMT_GGUF_Q3_K, KIND(Q3_K), deq_q3_k},
    {NF_FMT_GGUF_Q4_K, KIND(Q4_K), deq_q4_k},       {NF_FMT_GGUF_Q5_K, KIND(Q5_K), deq_q5_k},
    {NF_FMT_GGUF_Q6_K, KIND(Q6_K), deq_q6_k},       {NF_FMT_GGUF_IQ2_XXS, KIND(IQ2_XXS), deq_iq2_xxs},
    {NF_FMT_GGUF_IQ2_XS, KIND(IQ2_XS), deq_iq2_xs}, {NF_FMT_GGUF_IQ3_XXS, KIND(IQ3_XXS), deq_iq3_xxs},
    {NF_FMT_GGUF_IQ1_S, KIND(IQ1_S), deq_iq1_s},    {NF_FMT_GGUF_IQ4_NL, KIND(IQ4_NL), deq_iq4_nl},
    {NF_FMT_GGUF_IQ3_S, KIND(IQ3_S), deq_iq3_s},    {NF_FMT_GGUF_IQ2_S, KIND(IQ2_S), deq_iq2_s},
    {NF_FMT_GGUF_IQ4_XS, KIND(IQ4_XS), deq_iq4_xs}, {NF_FMT_GGUF_IQ1_M, KIND(IQ1_M), deq_iq1_m},
};

const nf_ggml_kernels nf_ggml_kernels_scalar = {
    .name = "scalar", .q2_k = deq_q2_k, .q3_k = deq_q3_k, .q4_k = deq_q4_k, .q5_k = deq_q5_k, .q6_k = deq_q6_k};

NF_SIMD_SELECTOR(nf_ggml_kernels, nf_ggml_kernels, nf_ggml_kernels_scalar, nf_ggml_kernels_avx2, nf_ggml_kernels_avx512,
                 nf_ggml_kernels_neon)

/* The block function of a kind at the level of t: t's entry for a k-quant, else the scalar one. */
static block_fn block_fn_of(const nf_ggml_kernels *t, const ggml_kind *kind)
{
    switch (kind->id) {
    case NF_FMT_GGUF_Q2_K: return t->q2_k;
    case NF_FMT_GGUF_Q3_K: return t->q3_k;
    case NF_FMT_GGUF_Q4_K: return t->q4_k;
    case NF_FMT_GGUF_Q5_K: return t->q5_k;
    case NF_FMT_GGUF_Q6_K: return t->q6_k;
    default: return kind->fn;
    }
}

static const ggml_kind *kind_of(nf_format_id id)
{
    for (size_t i = 0; i < sizeof KINDS / sizeof KINDS[0]; i++)
        if (KINDS[i].id == id) return &KINDS[i];
    return NULL;
}

nf_status nf_ggml_dequant_row(const nf_format *fmt, const uint8_t *blocks, uint64_t k, float *out, nf_error *err)
{
    if (!fmt) return nf_error_set(err, NF_ERR_USAGE, "ggml dequantize: no format given");
    const ggml_kind *kind = fmt->category == NF_CAT_GGUF ? kind_of(fmt->id) : NULL;
    if (!kind)
        return nf_error_set(err, NF_ERR_USAGE, "ggml dequantize: format '%s' is not a gguf block format",
                            fmt->name ? fmt->name : "(unnamed)");
    if (fmt->ggml_type != kind->ggml_type || fmt->block_values != kind->block_values ||
        fmt->block_bytes != kind->block_bytes)
        return nf_error_set(err, NF_ERR_INVALID,
                            "ggml dequantize: format '%s' is registered as ggml type %d with %u "
                            "values in %u bytes per block, but its dequantizer expects type %d "
                            "with %u values in %u bytes",
                            fmt->name, fmt->ggml_type, fmt->block_values, fmt->block_bytes, kind->ggml_type,
                            kind->block_values, kind->block_bytes);
    if (k == 0 || k % kind->block_values != 0)
        return nf_error_set(err, NF_ERR_USAGE,
                            "ggml dequantize %s: row length %llu is not a positive multiple of "
                            "the block size %u",
                            fmt->name, (unsigned long long)k, kind->block_values);
    if (!blocks || !out)
        return nf_error_set(err, NF_ERR_USAGE, "ggml dequantize %s: %s buffer is NULL", fmt->name,
                            !blocks ? "input" : "output");

    /* k values are in caller buffers, so k and (k / QK) * BB fit in memory; checking anyway
     * keeps a nonsense k on a 32-bit host from wrapping the offsets below. */
    const uint64_t nblocks = k / kind->block_values;
    uint64_t in_bytes;
    size_t nb;
    if (k > SIZE_MAX || !nf_mul_u64(nblocks, kind->block_bytes, &in_bytes) || in_bytes > SIZE_MAX ||
        !nf_u64_to_size(nblocks, &nb))
        return nf_error_set(err, NF_ERR_USAGE, "ggml dequantize %s: row length %llu is too large", fmt->name,
                            (unsigned long long)k);

    block_fn fn = block_fn_of(nf_ggml_kernels_active(), kind);
    for (size_t i = 0; i < nb; i++) fn(blocks + i * kind->block_bytes, out + i * kind->block_values);
    return NF_OK;
}

const uint32_t *nf_ggml_grid4_of(nf_format_id id, unsigned *n)
{
    switch (id) {
    case NF_FMT_GGUF_IQ3_XXS: *n = NF_GGML_IQ3XXS_GRID_SIZE; return nf_ggml_iq3xxs_grid;
    case NF_FMT_GGUF_IQ3_S: *n = NF_GGML_IQ3S_GRID_SIZE; return nf_ggml_iq3s_grid;
    default: *n = 0; return NULL;
    }
}
