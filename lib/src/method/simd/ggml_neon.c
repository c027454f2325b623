/* ggml_quantize's searches for NEON (ggml_simd.h): one sub-block a lane, 4 lanes of binary32,
 * the lane kernels of ggml_lanes.inc on 128-bit vectors (ggml_ops_n.inc).  A super-block's 8
 * sub-blocks (Q4_K, Q5_K) take two vectors, its 16 (Q2_K, Q3_K, Q6_K) four; Q3_K's sweeps run
 * 8 sub-blocks at a time (two vectors interleaved).  The loops around the searches (Q4_0, Q5_0
 * and Q8_0 without importance, the weights of Q4_0 / Q5_0 with importance, Q2_0's codes) follow
 * ggml_avx2.c and ggml_q2_0_avx2.c step for step, with the x86 conversions they rely on
 * reproduced (cvtt_x86).  The IQ3 and IQ1 entries are in ggml_iq3_neon.c and ggml_iq1_neon.c. */
#include "common/simd_target.h"
#include "method/ggml_encoders.h"
#include "method/simd/ggml_simd.h"

#if NF_ARM_KERNELS

#include <arm_neon.h>
#include <string.h>

#define GQ(name) name##_n
#define GQ_FN
#define GQ_INLINE static inline
#include "method/simd/ggml_ops_n.inc"
#include "method/simd/ggml_lanes.inc"
#include "method/simd/ggml_ops_undef.inc"

#define LANES 4

static void fit_min_neon(int nsub, int n, int nmax, const float *x, const float *w, uint8_t *L, float *scales,
                         float *mins, float rmin, float rdelta, int nstep, bool use_mad)
{
    for (int j = 0; j < nsub; j += LANES)
        fit_min_lanes_n(gq_min(LANES, nsub - j), n, nmax, x + j * n, w + j * n, L + j * n, scales + j, mins + j, rmin,
                        rdelta, nstep, use_mad);
}

static void fit_signed_neon(int nsub, int n, int nmax, const float *x, const float *qw, int8_t *L, float *scales)
{
    for (int j = 0; j < nsub; j += LANES)
        fit_signed_lanes_n(gq_min(LANES, nsub - j), n, nmax, x + j * n, qw ? qw + j * n : NULL, L + j * n, scales + j);
}

static void fit_q3_neon(int nsub, int n, int nmax, const float *x, int8_t *L, float *scales)
{
    for (int j = 0; j < nsub; j += 2 * LANES)
        fit_q3_lanes_n(gq_min(2 * LANES, nsub - j), n, nmax, x + j * n, L + j * n, scales + j);
}

static void iq4_scales_neon(int nsub, const float *x, const float *w, const int8_t *values, float *scales)
{
    for (int j = 0; j < nsub; j += LANES)
        iq4_scales_lanes_n(gq_min(LANES, nsub - j), x + 32 * j, w + 32 * j, values, scales + j);
}

static void requant_neon(int n, const float *x, float d, bool with_min, float dm, int lo, int hi, int offset,
                         uint8_t *L)
{
    requant_n(n, x, d, with_min, dm, lo, hi, offset, L);
}

/* ---------------------------------------------------------------- x86's conversions */

/* float -> int32 as x86-64's CVTTPS2DQ converts (gq_trunc_i32, gq_trunc_i8 in the reference):
 * truncation toward zero, and INT32_MIN for NaN or a value outside int32.  FCVTZS saturates
 * instead (and gives 0 for NaN), so those lanes are replaced. */
static inline int32x4_t cvtt_x86(float32x4_t f)
{
    const uint32x4_t in = vandq_u32(vcgtq_f32(f, vdupq_n_f32(-2147483904.0f)),
                                    vcltq_f32(f, vdupq_n_f32(2147483648.0f)));
    return vbslq_s32(in, vcvtq_s32_f32(f), vdupq_n_s32(INT32_MIN));
}

/* 8 int32 codes (a: values 0..3, b: 4..7) to their low bytes, in order (XTN keeps the low half
 * of each lane: no saturation). */
static inline uint8x8_t low_bytes8(int32x4_t a, int32x4_t b)
{
    return vmovn_u16(vcombine_u16(vmovn_u32(vreinterpretq_u32_s32(a)), vmovn_u32(vreinterpretq_u32_s32(b))));
}

/* ---------------------------------------------------------------- Q4_0, Q5_0, Q8_0 without importance */

/* A block's 32 source words as 8 vectors of binary32 (every conversion exact: FCVTL widens a
 * binary16 exactly, a bfloat16 is the high half of its binary32). */
static inline void load32(nf_gq_words words, const uint8_t *p, float32x4_t *v)
{
    for (int k = 0; k < 8; k++) {
        if (words == NF_GQ_WORDS_F32) v[k] = vld1q_f32((const float *)(const void *)(p + 16 * k));
        else {
            uint16x4_t h = vld1_u16((const uint16_t *)(const void *)(p + 8 * k));
            v[k] = words == NF_GQ_WORDS_F16 ? vcvt_f32_f16(vreinterpret_f16_u16(h))
                                            : vreinterpretq_f32_u32(vshll_n_u16(h, 16));
        }
    }
}

/* The binary16 words of 4 scales, as nf_f32_to_f16 rounds them: FCVTN rounds to nearest even
 * under FPCR's mode (Linux starts a process with it, and with flush-to-zero off), subnormals
 * kept and an overflow to infinity. */
static inline uint16x4_t f16_words(float32x4_t d) { return vreinterpret_u16_f16(vcvt_f16_f32(d)); }

/* A block's largest magnitude (Q8_0) or extreme (Q4_0, Q5_0) to *m, false when the block holds a
 * value to refuse: as ggml_avx2.c's block_max, the magnitudes compared as integers (for values
 * that are not NaN their order is that of the words), the first position of the largest one
 * giving the signed extreme (gq_extreme's first on a tie). */
static inline bool block_max(nf_gq_plain type, const float32x4_t *v, float *m)
{
    const uint32x4_t mag = vdupq_n_u32(0x7FFFFFFFu);
    uint32x4_t a[8], mx = vdupq_n_u32(0);
    for (int k = 0; k < 8; k++) {
        a[k] = vandq_u32(vreinterpretq_u32_f32(v[k]), mag);
        mx = vmaxq_u32(mx, a[k]);
    }
    const uint32_t abits = vmaxvq_u32(mx);
    if (abits >= 0x5F800000u) return false; /* NaN, infinite, or 2^64 and above */
    if (type == NF_GQ_PLAIN_Q8_0 || abits == 0) {
        memcpy(m, &abits, sizeof *m); /* +0 for an all-zero block, as gq_extreme */
        return true;
    }
    const uint32x4_t e = vdupq_n_u32(abits);
    for (int k = 0;; k++)
        if (vmaxvq_u32(vceqq_u32(a[k], e))) {
            float t[4];
            uint32_t u[4];
            vst1q_f32(t, v[k]);
            vst1q_u32(u, a[k]);
            int j = 0;
            while (u[j] != abits) j++;
            *m = t[j];
            return true;
        }
}

/* A block's codes from its inverse scale id, packed to b + 2 (ggml_simd.h plain_blocks). */
static inline void block_codes(nf_gq_plain type, const float32x4_t *v, float32x4_t id, uint8_t *b)
{
    int32x4_t c[8];
    if (type == NF_GQ_PLAIN_Q8_0) {
        /* roundf is FRINTA (to nearest, ties away from zero; NaN and infinities kept), then
         * x86's conversion and the low byte, as gq_trunc_i8 */
        for (int k = 0; k < 8; k++) c[k] = cvtt_x86(vrndaq_f32(vmulq_f32(v[k], id)));
        for (int k = 0; k < 4; k++) vst1_u8(b + 2 + 8 * k, low_bytes8(c[2 * k], c[2 * k + 1]));
        return;
    }
    /* trunc(x * id + (nmax + 0.5)) by x86's conversion, at most 2 nmax - 1 (as ggml_avx2.c) */
    const int nmax = type == NF_GQ_PLAIN_Q4_0 ? 8 : 16;
    const float32x4_t half = vdupq_n_f32((float)nmax + 0.5f);
    const int32x4_t top = vdupq_n_s32(2 * nmax - 1);
    for (int k = 0; k < 8; k++) c[k] = vminq_s32(cvtt_x86(vaddq_f32(vmulq_f32(v[k], id), half)), top);
    /* value j low nibble, j + 16 high (values j + 16 are in vector 4 + j / 4) */
    if (type == NF_GQ_PLAIN_Q4_0) {
        int32x4_t q[4];
        for (int k = 0; k < 4; k++) q[k] = vorrq_s32(c[k], vshlq_n_s32(c[k + 4], 4));
        vst1_u8(b + 2, low_bytes8(q[0], q[1]));
        vst1_u8(b + 10, low_bytes8(q[2], q[3]));
        return;
    }
    const int32x4_t low4 = vdupq_n_s32(0xF);
    const int32x4_t lane_shift = {0, 1, 2, 3};
    uint32_t qh = 0;
    for (int k = 0; k < 8; k++) { /* bit 4 of value 4k + l to bit l, then the 4 bits to 4k */
        uint32x4_t bit = vandq_u32(vshrq_n_u32(vreinterpretq_u32_s32(c[k]), 4), vdupq_n_u32(1));
        qh |= vaddvq_u32(vshlq_u32(bit, lane_shift)) << (4 * k);
    }
    int32x4_t q[4];
    for (int k = 0; k < 4; k++) q[k] = vorrq_s32(vandq_s32(c[k], low4), vshlq_n_s32(vandq_s32(c[k + 4], low4), 4));
    for (int i = 0; i < 4; i++) b[2 + i] = (uint8_t)(qh >> (8 * i));
    vst1_u8(b + 6, low_bytes8(q[0], q[1]));
    vst1_u8(b + 14, low_bytes8(q[2], q[3]));
}

/* The divisor of a block's scale: d = m / 127 (Q8_0), m / -nmax (Q4_0, Q5_0). */
static inline float scale_div(nf_gq_plain type)
{
    return type == NF_GQ_PLAIN_Q8_0 ? 127.0f : type == NF_GQ_PLAIN_Q4_0 ? -8.0f : -16.0f;
}

/* One block, false when it is refused. */
static inline bool plain_block(nf_gq_plain type, nf_gq_words words, const uint8_t *p, uint8_t *b)
{
    float32x4_t v[8];
    float m;
    load32(words, p, v);
    if (!block_max(type, v, &m)) return false;
    float d = m / scale_div(type);
    uint16_t h = vget_lane_u16(f16_words(vdupq_n_f32(d)), 0);
    if ((h & 0x7C00u) == 0x7C00u) return false; /* the scale overflows binary16 */
    b[0] = (uint8_t)(h & 0xFFu);
    b[1] = (uint8_t)(h >> 8);
    block_codes(type, v, vdupq_n_f32(d != 0.0f ? 1.0f / d : 0.0f), b);
    return true;
}

/* 4 blocks, false when one of them is refused: the 4 scales (FDIV, correctly rounded as the
 * scalar division), their binary16 words and reciprocals in one vector each. */
static inline bool plain_group(nf_gq_plain type, nf_gq_words words, size_t wb, size_t bb, const uint8_t *p,
                               uint8_t *out)
{
    float m[4], inv[4];
    uint16_t hw[4];
    float32x4_t v[8];
    for (int g = 0; g < 4; g++) {
        load32(words, p + wb * (size_t)g, v);
        if (!block_max(type, v, &m[g])) return false;
    }
    const float32x4_t d = vdivq_f32(vld1q_f32(m), vdupq_n_f32(scale_div(type)));
    const uint16x4_t h = f16_words(d);
    const uint16x4_t e = vdup_n_u16(0x7C00);
    if (vmaxv_u16(vceq_u16(vand_u16(h, e), e))) return false;
    vst1_u16(hw, h);
    /* 1 / d where d != 0 (d is never NaN here), else 0 */
    const uint32x4_t nz = vmvnq_u32(vceqq_f32(d, vdupq_n_f32(0.0f)));
    vst1q_f32(inv, vreinterpretq_f32_u32(vandq_u32(nz, vreinterpretq_u32_f32(vdivq_f32(vdupq_n_f32(1.0f), d)))));
    for (int g = 0; g < 4; g++) {
        uint8_t *b = out + bb * (size_t)g;
        b[0] = (uint8_t)(hw[g] & 0xFFu);
        b[1] = (uint8_t)(hw[g] >> 8);
        load32(words, p + wb * (size_t)g, v);
        block_codes(type, v, vdupq_n_f32(inv[g]), b);
    }
    return true;
}

#define PLAIN_W 4
#define PLAIN_FN
#define PLAIN_INLINE static inline
#define PLAIN_BLOCKS plain_blocks_neon
#include "method/simd/ggml_plain_runs.inc"

/* ---------------------------------------------------------------- Q4_0 / Q5_0 weights, Q2_0 */

/* FSQRT is correctly rounded, as sqrtf; the product and the sum stay separate operations. */
static void sqrt_weights_neon(size_t n, const float *x, const float *qw, float s2, float *w)
{
    const float32x4_t s = vdupq_n_f32(s2);
    for (size_t j = 0; j < n; j += 4) {
        float32x4_t v = vld1q_f32(x + j);
        vst1q_f32(w + j, vmulq_f32(vld1q_f32(qw + j), vsqrtq_f32(vaddq_f32(s, vmulq_f32(v, v)))));
    }
}

/* gq_q2_0_plain (ggml_quant.c) for nblk blocks of 64, as ggml_q2_0_avx2.c: the largest
 * magnitude by the reference's "a > amax" lane-wise (a NaN never taken; the maximum of the
 * lanes is then that of the values in any order), the product x * (1 / d), roundf as FRINTA,
 * x86's conversion (INT32_MIN for NaN and out of range, as gq_trunc_i32), + 1 and the clamp to
 * [0, 3]; the 4 codes of a byte at bits 0, 2, 4, 6 (disjoint, so their sum is their or). */
static void codes_q2_0_neon(unsigned nblk, const float *x, float *d, uint8_t *q)
{
    const int32x4_t shifts = {0, 2, 4, 6};
    for (unsigned b = 0; b < nblk; b++) {
        const float *xb = x + 64 * b;
        float32x4_t v[16], m = vdupq_n_f32(0.0f);
        for (int k = 0; k < 16; k++) {
            v[k] = vld1q_f32(xb + 4 * k);
            const float32x4_t a = vabsq_f32(v[k]);
            m = vbslq_f32(vcgtq_f32(a, m), a, m);
        }
        const float amax = vmaxvq_f32(m);
        const float32x4_t id = vdupq_n_f32(amax > 0.0f ? 1.0f / amax : 0.0f);
        d[b] = amax;
        for (int k = 0; k < 16; k++) {
            int32x4_t c = vaddq_s32(cvtt_x86(vrndaq_f32(vmulq_f32(v[k], id))), vdupq_n_s32(1));
            c = vmaxq_s32(vdupq_n_s32(0), vminq_s32(vdupq_n_s32(3), c));
            q[16 * b + (unsigned)k] = (uint8_t)vaddvq_u32(vshlq_u32(vreinterpretq_u32_s32(c), shifts));
        }
    }
}

const nf_gq_kernels nf_gq_kernels_neon = {.name = "neon",
                                          .fit_min = fit_min_neon,
                                          .fit_signed = fit_signed_neon,
                                          .fit_q3 = fit_q3_neon,
                                          .iq4_scales = iq4_scales_neon,
                                          .requant = requant_neon,
                                          .iq3_trials = nf_gq3_trials_neon,
                                          .iq1s_split = nf_gq1s_split_neon,
                                          .iq1m_split = nf_gq1m_split_neon,
                                          .iq1_nearest = nf_gq1_nearest_neon,
                                          .plain_blocks = plain_blocks_neon,
                                          .sqrt_weights = sqrt_weights_neon,
                                          .codes_q2_0 = codes_q2_0_neon,
                                          .iq1_order = nf_gq1_order_neon};

#endif
