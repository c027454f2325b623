/* ggml k-quant block dequantizers for NEON (format/ggml.h): Q2_K, Q3_K, Q4_K, Q5_K and Q6_K,
 * 16 elements at a time.  Each computes exactly what the scalar dequantizer of ggml_dequant.c
 * computes, element for element, as the x86 ones (ggml_kquant_simd.c): the per-sub-block float
 * factors are the same scalar expressions, the codes are unpacked with byte shifts and masks
 * into the same integers, converted to float on their own (SCVTF), and every product and
 * difference is a separate IEEE binary32 instruction in the scalar code's operand order (nothing
 * fused, -ffp-contract=off).  Q2_K's and Q3_K's elements are computed, not looked up: (dl *
 * F(q)) - ml and dl * F(q), the operations whose results the x86 kernels tabulate.
 * tests/unit/test_layout_simd.c compares them with the scalar code bit for bit on random blocks. */
#include "common/simd_target.h"
#include "format/ggml.h"

#if NF_ARM_KERNELS

#include <arm_neon.h>
#include <stdint.h>

static inline uint8x16_t load16(const uint8_t *p) { return vld1q_u8(p); }

/* (x >> shift) & mask in every byte. */
static inline uint8x16_t bits_at(uint8x16_t x, unsigned shift, unsigned mask)
{
    return vandq_u8(vshlq_u8(x, vdupq_n_s8((int8_t) - (int)shift)), vdupq_n_u8((uint8_t)mask));
}

/* 16 signed byte integers -> four vectors of 4 binary32 (exact). */
static inline void i8_f32(int8x16_t q, float32x4_t v[4])
{
    int16x8_t lo = vmovl_s8(vget_low_s8(q)), hi = vmovl_s8(vget_high_s8(q));
    v[0] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo)));
    v[1] = vcvtq_f32_s32(vmovl_s16(vget_high_s16(lo)));
    v[2] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi)));
    v[3] = vcvtq_f32_s32(vmovl_s16(vget_high_s16(hi)));
}

/* y[0..16) = (a * F(q)) - m */
static inline void store_am(float *y, int8x16_t q, float a, float m)
{
    const float32x4_t av = vdupq_n_f32(a), mv = vdupq_n_f32(m);
    float32x4_t v[4];
    i8_f32(q, v);
    for (int k = 0; k < 4; k++) vst1q_f32(y + 4 * k, vsubq_f32(vmulq_f32(av, v[k]), mv));
}

/* y[0..16) = a * F(q) */
static inline void store_a(float *y, int8x16_t q, float a)
{
    const float32x4_t av = vdupq_n_f32(a);
    float32x4_t v[4];
    i8_f32(q, v);
    for (int k = 0; k < 4; k++) vst1q_f32(y + 4 * k, vmulq_f32(av, v[k]));
}

static inline int8x16_t s8(uint8x16_t x) { return vreinterpretq_s8_u8(x); }

static void deq_q2_k(const uint8_t *b, float *y)
{
    const float d = nf_ggml_half_at(b + 80);
    const float dmin = nf_ggml_half_at(b + 82);
    for (unsigned half = 0; half < 2; half++)
        for (unsigned t0 = 0; t0 < 32; t0 += 16) {
            /* 16 bytes hold the codes of sub-blocks (128 half + 32 j + t0) / 16, j = 0..3, at bits 2j */
            const uint8x16_t x = load16(b + 16 + 32 * half + t0);
            for (unsigned j = 0; j < 4; j++) {
                const unsigned n = 128 * half + 32 * j + t0, i = n / 16;
                const float dl = d * (float)(int)(b[i] & 0xFu), ml = dmin * (float)(int)(b[i] >> 4);
                store_am(y + n, s8(bits_at(x, 2 * j, 3)), dl, ml);
            }
        }
}

static void deq_q3_k(const uint8_t *b, float *y)
{
    const float d = nf_ggml_half_at(b + 108);
    const uint8_t *hmask = b, *qs = b + 32, *sc = b + 96;
    for (unsigned half = 0; half < 2; half++)
        for (unsigned t0 = 0; t0 < 32; t0 += 16) {
            const uint8x16_t q = load16(qs + 32 * half + t0), h = load16(hmask + t0);
            for (unsigned j = 0; j < 4; j++) {
                const unsigned n0 = 128 * half + 32 * j + t0, s = n0 / 16;
                const unsigned low4 = s < 8 ? (sc[s] & 0xFu) : ((unsigned)sc[s - 8] >> 4);
                const unsigned high2 = ((unsigned)sc[8 + s % 4] >> (2u * (s / 4))) & 3u;
                const float dl = d * (float)((int)(low4 | (high2 << 4)) - 32);
                /* q = low2 - 4 + 4 hbit */
                const uint8x16_t idx = vorrq_u8(bits_at(q, 2 * j, 3), vshlq_n_u8(bits_at(h, 4 * half + j, 1), 2));
                store_a(y + n0, vsubq_s8(s8(idx), vdupq_n_s8(4)), dl);
            }
        }
}

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
        store_am(y + 32 * s, s8(bits_at(load16(qs), shift, 15)), d1, m1);
        store_am(y + 32 * s + 16, s8(bits_at(load16(qs + 16), shift, 15)), d1, m1);
    }
}

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
        for (unsigned h = 0; h < 32; h += 16) {
            const uint8x16_t low = bits_at(load16(qs + h), shift, 15);
            const uint8x16_t hbit = bits_at(load16(qh + h), s, 1);
            store_am(y + 32 * s + h, s8(vorrq_u8(low, vshlq_n_u8(hbit, 4))), d1, m1);
        }
    }
}

static void deq_q6_k(const uint8_t *b, float *y)
{
    const float d = nf_ggml_half_at(b + 208);
    for (unsigned h = 0; h < 2; h++)
        for (unsigned g = 0; g < 4; g++)
            for (unsigned t0 = 0; t0 < 32; t0 += 16) {
                const unsigned n0 = 128 * h + 32 * g + t0;
                const unsigned sbyte = b[192 + n0 / 16];
                const int sc = (int)sbyte - (sbyte >= 128 ? 256 : 0);
                const float dl = d * (float)sc;
                const uint8x16_t low4 = bits_at(load16(b + 64 * h + 32 * (g % 2) + t0), g < 2 ? 0u : 4u, 15);
                const uint8x16_t high2 = bits_at(load16(b + 128 + 32 * h + t0), 2u * g, 3);
                const int8x16_t q = vsubq_s8(s8(vorrq_u8(low4, vshlq_n_u8(high2, 4))), vdupq_n_s8(32));
                store_a(y + n0, q, dl);
            }
}

const nf_ggml_kernels nf_ggml_kernels_neon = {
    .name = "neon", .q2_k = deq_q2_k, .q3_k = deq_q3_k, .q4_k = deq_q4_k, .q5_k = deq_q5_k, .q6_k = deq_q6_k};

#else
typedef int nf_ggml_kquant_neon_unused; /* not an aarch64 GCC/Clang build: no NEON kernels */
#endif
