/* grouped_absmax row kernel for NEON (absmax_simd.h): 4 lanes of binary32, the steps of
 * absmax_avx2.c.  A row goes in blocks of 4 groups: each group's amax (an unsigned integer max
 * over the sign-cleared words, UMAXV per group), then the 4 scale words and reciprocals at once
 * (FDIV, correctly rounded; FCVTN to binary16 and FCVTL back: round to nearest even, subnormals
 * kept and the overflow to infinity included, since Linux starts a process with FPCR's rounding
 * mode, flush-to-zero and alternative-half-precision bits clear), then each group's codes, 16 at
 * a time: one FMUL (no fused multiply-add: -ffp-contract=off), FMAX/FMIN against qmin/qmax
 * (the product is never NaN; a -0 the clamp keeps gives code 0 as +0 does), FRINTN (ties to
 * even whatever FPCR says), FCVTZS (exact on integral values) and XTN narrowing.  A partial
 * vector (the tail of a row whose K is not a multiple of 4) is read through a zeroed stack
 * copy, so nothing beyond the row is touched, and its codes are written through one too. */
#include "common/simd_target.h"
#include "method/simd/absmax_simd.h"

#if NF_ARM_KERNELS

#include <arm_neon.h>

#include "stats/simd/lanes_neon.h"

#define LANES 4u

/* LANES elements at p widened exactly to binary32 (a binary16 NaN comes out quiet, still at
 * or above the infinity word, so its row is declined all the same). */
static inline float32x4_t load_full(const uint8_t *p, nf_src_type type)
{
    if (type == NF_SRC_F32) return vld1q_f32((const float *)(const void *)p);
    uint16x4_t h = vld1_u16((const uint16_t *)(const void *)p);
    if (type == NF_SRC_F16) return vcvt_f32_f16(vreinterpret_f16_u16(h));
    return vreinterpretq_f32_u32(vshll_n_u16(h, 16));
}

/* m < LANES elements at p, the other lanes +0. */
static inline float32x4_t load_part(const uint8_t *p, size_t m, nf_src_type type, size_t esize)
{
    uint8_t buf[LANES * 4] = {0};
    memcpy(buf, p, m * esize);
    return load_full(buf, type);
}

/* clamp(f32(x * inv), qmin, qmax) rounded to nearest even. */
static inline float32x4_t code_float(float32x4_t x, float32x4_t inv, float32x4_t qmin, float32x4_t qmax)
{
    float32x4_t t = vmulq_f32(x, inv);
    t = vmaxq_f32(t, qmin);
    t = vminq_f32(t, qmax);
    return vrndnq_f32(t);
}

/* The largest |x| word of the n values at p (n a constant at the hot call sites). */
static inline uint32_t group_amax(const uint8_t *p, size_t n, nf_src_type type, size_t esize)
{
    const uint32x4_t mag = vdupq_n_u32(0x7FFFFFFF);
    size_t full = n / LANES, rest = n % LANES;
    uint32x4_t mx = vdupq_n_u32(0);
    for (size_t v = 0; v < full; v++)
        mx = vmaxq_u32(mx, vandq_u32(vreinterpretq_u32_f32(load_full(p + v * LANES * esize, type)), mag));
    if (rest)
        mx = vmaxq_u32(mx,
                       vandq_u32(vreinterpretq_u32_f32(load_part(p + full * LANES * esize, rest, type, esize)), mag));
    return vmaxvq_u32(mx);
}

/* The statistics lanes (lanes_neon.h) for absmax_row.inc. */
typedef nf_lanes_neon STAT_LANES;
static inline void stat_zero(STAT_LANES *l) { nf_lanes_neon_zero(l); }
static inline bool stat_finish(STAT_LANES *l, size_t n, nf_errstats *st) { return nf_lanes_neon_finish(l, n, st); }
static inline void stat_skip16(STAT_LANES *l) { nf_lanes_neon_skip16(l); }

/* Codes of 4 values, and with lanes their statistics: vector v of a group (groups start at
 * multiples of 16 columns, so v mod 4 is its quarter of the 16 statistics lanes). */
static inline int32x4_t codes4(float32x4_t x, float32x4_t vinv, float32x4_t qmin, float32x4_t qmax, float32x4_t vs,
                               size_t v, STAT_LANES *lanes)
{
    float32x4_t t = code_float(x, vinv, qmin, qmax);
    if (lanes) nf_lanes_neon_step4(lanes, (int)(v & 3), x, vmulq_f32(vs, t));
    return vcvtq_s32_f32(t);
}

/* 8 codes (two vectors of 4, each in [-128, 127]) as bytes. */
static inline int8x8_t narrow8(int32x4_t lo, int32x4_t hi)
{
    return vmovn_s16(vcombine_s16(vmovn_s32(lo), vmovn_s32(hi)));
}

/* The codes of the n values at p for the reciprocal inv (n a constant at the hot call sites);
 * with lanes, each value against sval * code (nf_grouped_value).  A partial vector's zero lanes
 * have code 0 and y = 0: they add nothing. */
static inline void group_codes(const uint8_t *p, size_t n, nf_src_type type, size_t esize, float inv, float sval,
                               const nf_absmax_shape *s, int8_t *q, STAT_LANES *lanes)
{
    const float32x4_t vinv = vdupq_n_f32(inv), qmin = vdupq_n_f32(s->qmin), qmax = vdupq_n_f32(s->qmax);
    const float32x4_t vs = vdupq_n_f32(sval);
    size_t full = n / LANES, rest = n % LANES;
    size_t v = 0;
    for (; v + 4 <= full; v += 4) {
        const uint8_t *pv = p + v * LANES * esize;
        int32x4_t q0 = codes4(load_full(pv, type), vinv, qmin, qmax, vs, v, lanes);
        int32x4_t q1 = codes4(load_full(pv + LANES * esize, type), vinv, qmin, qmax, vs, v + 1, lanes);
        int32x4_t q2 = codes4(load_full(pv + 2 * LANES * esize, type), vinv, qmin, qmax, vs, v + 2, lanes);
        int32x4_t q3 = codes4(load_full(pv + 3 * LANES * esize, type), vinv, qmin, qmax, vs, v + 3, lanes);
        vst1q_s8(q + v * LANES, vcombine_s8(narrow8(q0, q1), narrow8(q2, q3)));
    }
    /* the vectors left over, counted down (counting v up to full, GCC 12 for aarch64 sees a bogus
     * trip count once n is a constant and warns of undefined behaviour) */
    for (size_t left = full - v; left > 0; left--, v++) {
        int8_t buf[8];
        int32x4_t c = codes4(load_full(p + v * LANES * esize, type), vinv, qmin, qmax, vs, v, lanes);
        vst1_s8(buf, narrow8(c, c));
        memcpy(q + v * LANES, buf, LANES);
    }
    if (rest) {
        int8_t buf[8];
        int32x4_t c = codes4(load_part(p + full * LANES * esize, rest, type, esize), vinv, qmin, qmax, vs, full, lanes);
        vst1_s8(buf, narrow8(c, c));
        memcpy(q + full * LANES, buf, rest);
    }
}

/* The scale words and reciprocals of LANES groups at once (absmax_simd.h's steps, lane-wise):
 * raw = amax / qmax, the binary16 word (FCVTN, nearest even), 0 -> 0x0001, inv = 1 / f32(word)
 * (FCVTL exact, FDIV correctly rounded).  Lanes with amax == 0 get word 0 (their inv is
 * unused).  false when a lane's word is infinite. */
static inline bool block_scales(const uint32_t *amax, float denominator, uint16_t *words, float *inv, float *sval)
{
    uint32x4_t m = vld1q_u32(amax);
    float32x4_t raw = vdivq_f32(vreinterpretq_f32_u32(m), vdupq_n_f32(denominator));
    uint16x4_t h = vreinterpret_u16_f16(vcvt_f16_f32(raw));
    h = vorr_u16(h, vand_u16(vceq_u16(h, vdup_n_u16(0)), vdup_n_u16(1)));
    if (vmaxv_u16(vceq_u16(vand_u16(h, vdup_n_u16(0x7C00)), vdup_n_u16(0x7C00)))) return false;
    h = vbic_u16(h, vmovn_u32(vceqq_u32(m, vdupq_n_u32(0))));
    vst1_u16(words, h);
    float32x4_t v = vcvt_f32_f16(vreinterpret_f16_u16(h));
    vst1q_f32(sval, v);
    vst1q_f32(inv, vdivq_f32(vdupq_n_f32(1.0f), v));
    return true;
}

#define ABSMAX_INLINE static inline
#include "method/simd/absmax_row.inc"

static bool absmax_row_neon(const uint8_t *row, nf_src_type type, size_t k, const nf_absmax_shape *shape, int8_t *codes,
                            uint16_t *scales, nf_errstats *st, size_t *measured)
{
    return absmax_row(row, type, k, shape, codes, scales, st, measured);
}

const nf_absmax_kernels nf_absmax_kernels_neon = {.name = "neon", .row = absmax_row_neon};

#else
typedef int nf_absmax_neon_unused; /* not an aarch64 GCC/Clang build: no NEON kernel */
#endif
