/* ggml_quantize's IQ3 trial kernel for NEON (ggml_simd.h, iq3_trials): 4 trials a vector, the
 * lane kernel of ggml_iq3_lanes.inc on 128-bit vectors (ggml_ops_n.inc).  NEON has no gather:
 * the grid lookups load lane by lane, which gives each lane the same word the AVX2 gather does;
 * the rest is the AVX2 kernel's operations (ggml_iq3_avx2.c), so every lane performs the scalar
 * reference's sequence of its trial. */
#include "common/simd_target.h"
#include "method/ggml_encoders.h"
#include "method/ggml_grid3.h"
#include "method/simd/ggml_simd.h"

#if NF_ARM_KERNELS

#include <arm_neon.h>
#include <math.h>
#include <string.h>

#define GQ(name) name##_n
#define GQ_FN
#define GQ_INLINE static inline
#include "method/simd/ggml_ops_n.inc"


/* p[i] lane-wise, a load a lane */
static inline int32x4_t gather32_n(const int32_t *p, int32x4_t i)
{
    int32_t t[4];
    vst1q_s32(t, i);
    const int32_t v[4] = {p[t[0]], p[t[1]], p[t[2]], p[t[3]]};
    return vld1q_s32(v);
}

/* the 4 bytes at p as int32 lanes */
static inline int32x4_t bload_n(const uint8_t *p)
{
    uint32_t u;
    memcpy(&u, p, sizeof u);
    return vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(vmovl_u8(vreinterpret_u8_u32(vdup_n_u32(u))))));
}

/* 4 lanes (each in [0, 7]) as bytes to p */
static inline void store_i8_n(int8_t *p, int32x4_t v)
{
    int8_t t[8];
    const int16x4_t h = vmovn_s32(v);
    vst1_s8(t, vmovn_s16(vcombine_s16(h, h)));
    memcpy(p, t, 4);
}

#define ILOAD(p) vld1q_s32((const int32_t *)(const void *)(p))
#define IAND(a, b) vandq_s32(a, b)
#define ISHL(v, n) vshlq_s32(v, vdupq_n_s32(n))
#define ISRL(v, n) vreinterpretq_s32_u32(vshlq_u32(vreinterpretq_u32_s32(v), vdupq_n_s32(-(n))))
#define IGT(a, b) vcgtq_s32(a, b)
#define BITS(m) gq_n_bits(m)
#define GATHER32(p, i) gather32_n((const int32_t *)(const void *)(p), i)
#define BLOAD(p) bload_n((const uint8_t *)(const void *)(p))
#define FEQ(a, b) vceqq_f32(a, b)
#define FMIN_OF(m, v) min_of_n(m, v)
#define STORE_I8(p, v) store_i8_n((int8_t *)(void *)(p), v)

static const int32_t lane_index_n[4] = {0, 1, 2, 3};

/* The least lane of v in m: the others set to +infinity (the lanes in m are below FLT_MAX, never
 * NaN, so FMINV's NaN rule never applies). */
static inline float min_of_n(uint32x4_t m, float32x4_t v) { return vminvq_f32(vbslq_f32(m, v, vdupq_n_f32(INFINITY))); }

/* Queues the lanes of off, lane by lane (as ggml_iq3_avx2.c's queue_y). */
static inline int queue_n(unsigned off, int32x4_t p, int32x4_t b, int32_t *pair, int32_t *base, int nq)
{
    int32_t pv[4], bv[4];
    vst1q_s32(pv, p);
    vst1q_s32(bv, b);
    for (; off; off &= off - 1u) {
        const int j = __builtin_ctz(off);
        pair[nq] = pv[0] + j;
        base[nq++] = bv[j];
    }
    return nq;
}

#include "method/simd/ggml_iq3_lanes.inc"
#include "method/simd/ggml_ops_undef.inc"

bool nf_gq3_trials_neon(const nf_gq3_grid *g, int nt, const float *id, const float *scale, const float *xval,
                        const float *waux, const float *w, int8_t *L, uint32_t *on_grid, float *sumqx, float *sumq2)
{
    return iq3_trials_n(g, nt, id, scale, xval, waux, w, L, on_grid, sumqx, sumq2);
}

#endif
