/* ggml_quantize's IQ2 searches for NEON (ggml_iq2_simd.h): 4 trials or 4 neighbours a vector,
 * the lane kernels of ggml_iq2_lanes.inc on 128-bit vectors (ggml_ops_n.inc).  NEON has no
 * gather: the grid map is read lane by lane, the same words the AVX2 gather reads; TBL4 is one
 * TBL over the 4 binary32 of the table.  The signs kernel follows ggml_iq2_signs_y.inc. */
#include "common/simd_target.h"
#include "method/ggml_grid.h"
#include "method/simd/ggml_iq2_simd.h"

#if NF_ARM_KERNELS

#include <arm_neon.h>
#include <math.h>

#define IQ(name) name##_neon
#define IQ_FN
#define IQ_INLINE static inline
#define IQ_W 4
#include "method/simd/ggml_ops_n.inc"

/* t[i & 3] lane-wise for the 4 binary32 of t (as the AVX2 VPERMPS over the table broadcast to
 * both halves gives it): the byte indices 4 (i & 3) + 0 .. 3 of each lane */
static inline float32x4_t tbl4_n(float32x4_t t, int32x4_t i)
{
    const uint32x4_t k = vandq_u32(vreinterpretq_u32_s32(i), vdupq_n_u32(3));
    const uint32x4_t b = vaddq_u32(vmulq_n_u32(k, 0x04040404u), vdupq_n_u32(0x03020100u));
    return vreinterpretq_f32_u8(vqtbl1q_u8(vreinterpretq_u8_f32(t), vreinterpretq_u8_u32(b)));
}

/* map[c] lane-wise, a load a lane */
static inline int32x4_t map_n(const int32_t *map, int32x4_t c)
{
    int32_t t[4];
    vst1q_s32(t, c);
    const int32_t v[4] = {map[t[0]], map[t[1]], map[t[2]], map[t[3]]};
    return vld1q_s32(v);
}


/* LANE_MIN of ggml_iq2_lanes.inc: NaN lanes and lanes from n on become FLT_MAX, which never wins
 * (no NaN is left, so FMINV's NaN rule never applies; a -0 and a +0 compare equal). */
static inline float lane_min_n(float32x4_t d, unsigned n, int *first)
{
    const int32x4_t lane = {0, 1, 2, 3};
    const uint32x4_t keep = vandq_u32(vcgtq_s32(vdupq_n_s32((int)n), lane), vceqq_f32(d, d));
    d = vbslq_f32(keep, d, vdupq_n_f32(3.40282347e38f));
    const float m = vminvq_f32(d);
    *first = __builtin_ctz(gq_n_bits(vceqq_f32(d, vdupq_n_f32(m))));
    return m;
}

#define ILOAD(p) vld1q_s32((const int32_t *)(const void *)(p))
#define FSQRT(a) vsqrtq_f32(a)
#define ICLAMP02(v) vmaxq_s32(vdupq_n_s32(0), vminq_s32(vdupq_n_s32(2), v))
#define ISHL(v, n) vshlq_s32(v, vdupq_n_s32(n))
#define ISHR(v, n) vreinterpretq_s32_u32(vshlq_u32(vreinterpretq_u32_s32(v), vdupq_n_s32(-(n))))
#define IOR(a, b) vorrq_s32(a, b)
#define TBL4_LOAD(p) vld1q_f32(p)
#define TBL4(t, i) tbl4_n(t, i)
#define CODES(p) vreinterpretq_s32_u32(vmovl_u16(vld1_u16((const uint16_t *)(const void *)(p))))
#define MAP(map, c) map_n(map, c)
#define NEGBITS(v) gq_n_bits(vcltq_s32(v, vdupq_n_s32(0)))
#define LANE_MIN(d, n, first) lane_min_n(d, n, first)
#define PREFETCH(p) __builtin_prefetch(p)

#include "method/simd/ggml_iq2_lanes.inc"

/* The first of 8 products of least value, scanning as the scalar does from the first with a
 * strict <: the first one when it is NaN, and NaN never below (as ggml_iq2_signs_y.inc). */
static inline int first_min8_n(float32x4_t a, float32x4_t b)
{
    if (vgetq_lane_f32(a, 0) != vgetq_lane_f32(a, 0)) return 0;
    const float32x4_t inf = vdupq_n_f32(INFINITY);
    a = vbslq_f32(vceqq_f32(a, a), a, inf);
    b = vbslq_f32(vceqq_f32(b, b), b, inf);
    const float m = vminvq_f32(vbslq_f32(vcltq_f32(b, a), b, a));
    const float32x4_t vm = vdupq_n_f32(m);
    return __builtin_ctz(gq_n_bits(vceqq_f32(a, vm)) | gq_n_bits(vceqq_f32(b, vm)) << 4);
}

/* Step 1 for n values, 8 (two vectors) a group's parity. */
static void signs_neon(int n, const float *x, const float *w, bool parity, float *xval, uint8_t *s)
{
    for (int k = 0; k < n / 8; k++) {
        const float32x4_t x0 = vld1q_f32(x + 8 * k), x1 = vld1q_f32(x + 8 * k + 4);
        /* x >= 0 keeps x; anything else (NaN too) is negated (its sign bit flipped) and counted */
        const uint32x4_t k0 = vcgeq_f32(x0, vdupq_n_f32(0.0f)), k1 = vcgeq_f32(x1, vdupq_n_f32(0.0f));
        vst1q_f32(xval + 8 * k, vbslq_f32(k0, x0, vnegq_f32(x0)));
        vst1q_f32(xval + 8 * k + 4, vbslq_f32(k1, x1, vnegq_f32(x1)));
        unsigned bits = ~(gq_n_bits(k0) | gq_n_bits(k1) << 4) & 0xFFu;
        if (parity && __builtin_popcount(bits) % 2) {
            const float32x4_t w0 = vld1q_f32(w + 8 * k), w1 = vld1q_f32(w + 8 * k + 4);
            const int imin = first_min8_n(vmulq_f32(vmulq_f32(w0, x0), x0), vmulq_f32(vmulq_f32(w1, x1), x1));
            xval[8 * k + imin] = -xval[8 * k + imin];
            bits ^= 1u << imin;
        }
        s[k] = (uint8_t)bits;
    }
}

const nf_iq2_kernels nf_iq2_kernels_neon = {
    .name = "neon", .trials = trials_neon, .nearest = nearest_point_neon, .weights = weights_neon, .signs = signs_neon};

#endif
