/* ggml_quantize's IQ1 searches for NEON (ggml_simd.h, iq1s_split, iq1m_split, iq1_nearest and
 * iq1_order): 4 candidates a vector.  The split searches are the lane kernels of
 * ggml_iq1_lanes.inc on 128-bit vectors (ggml_ops_n.inc); the nearest point and the order follow
 * ggml_iq1_avx2.c's, a point's levels read lane by lane (NEON has no gather). */
#include <math.h>
#include <pthread.h>

#include "common/simd_target.h"
#include "method/ggml_encoders.h"
#include "method/simd/ggml_simd.h"

#if NF_ARM_KERNELS

#include <arm_neon.h>

#define GQ(name) name##_n
#define GQ_FN
#define GQ_INLINE static inline
#include "method/simd/ggml_ops_n.inc"


#define ILOAD(p) vld1q_s32((const int32_t *)(const void *)(p))
#define IGT(a, b) vcgtq_s32(a, b)
#define BITS(m) gq_n_bits(m)
#include "method/simd/ggml_iq1_lanes.inc"
#include "method/simd/ggml_ops_undef.inc"

bool nf_gq1s_split_neon(const float *sumx, const float *sumw, float s0, int *b1, int *b2, int *shift, float *scale)
{
    return iq1s_split_n(sumx, sumw, s0, b1, b2, shift, scale);
}

bool nf_gq1m_split_neon(const float *x, const float *w, const int *idx, float s0, int *b1, int *b2, int *kind,
                        float *scale)
{
    return iq1m_split_n(x, w, idx, s0, b1, b2, kind, scale);
}

/* nf_gq1_nearest_ref (ggml_iq1.c) with 4 candidates of the list at a time: lane j computes the
 * reference's error of point list[j0 + j] with the same operations in the same order (diff =
 * scale xx[l] - x, d2 += w diff diff, value by value; xx[l] read for each lane's own level, as
 * the reference reads it), and of the lanes below the running best (an ordered "<": NaN and
 * values from FLT_MAX up never win) the least error wins, the first lane on a tie -- the
 * reference's choice, since a later candidate replaces the best only when strictly less. */
int nf_gq1_nearest_neon(const uint8_t *levels, const uint16_t *list, unsigned n, const float *x, const float *w,
                        float scale, const float *xx)
{
    const int32x4_t lane = {0, 1, 2, 3};
    const uint32x4_t bit = {1, 2, 4, 8};
    float best = 3.40282347e38f;
    int pick = -1;
    for (unsigned j0 = 0; j0 < n; j0 += 4) {
        const unsigned nl = n - j0 < 4 ? n - j0 : 4;
        const uint8_t *lv[4];
        for (unsigned j = 0; j < 4; j++) lv[j] = levels + 8u * list[j0 + (j < nl ? j : 0)]; /* idle lanes: any point */
        float32x4_t d2 = vdupq_n_f32(0.0f);
        for (int i = 0; i < 8; i++) {
            const float qa[4] = {xx[lv[0][i]], xx[lv[1][i]], xx[lv[2][i]], xx[lv[3][i]]};
            const float32x4_t diff = vsubq_f32(vmulq_f32(vdupq_n_f32(scale), vld1q_f32(qa)), vdupq_n_f32(x[i]));
            d2 = vaddq_f32(d2, vmulq_f32(vmulq_f32(vdupq_n_f32(w[i]), diff), diff));
        }
        const uint32x4_t cand = vandq_u32(vcltq_f32(d2, vdupq_n_f32(best)), vcgtq_s32(vdupq_n_s32((int)nl), lane));
        if (!vmaxvq_u32(cand)) continue;
        /* the candidates are below FLT_MAX, never NaN: FMINV is their least */
        const float m = vminvq_f32(vbslq_f32(cand, d2, vdupq_n_f32(INFINITY)));
        const unsigned first = vaddvq_u32(vandq_u32(vandq_u32(cand, vceqq_f32(d2, vdupq_n_f32(m))), bit));
        best = m;
        pick = list[j0 + (unsigned)__builtin_ctz(first)];
    }
    return pick;
}

/* nf_gq1_order_ref (ggml_iq1.c) by ranks, as ggml_iq1_avx2.c: value j goes to the place of the
 * values below it plus the equal ones before it, which is where the stable sort puts it (with a
 * NaN, whose comparisons all fail, the reference runs instead). */
void nf_gq1_order_neon(const float *x, int n, int *idx)
{
    const uint32x4_t bit = {1, 2, 4, 8};
    float32x4_t v[8];
    uint32x4_t nan = vdupq_n_u32(0);
    for (int k = 0; k < n / 4; k++) {
        v[k] = vld1q_f32(x + 4 * k);
        nan = vorrq_u32(nan, vmvnq_u32(vceqq_f32(v[k], v[k])));
    }
    if (vmaxvq_u32(nan)) {
        nf_gq1_order_ref(x, n, idx);
        return;
    }
    for (int j = 0; j < n; j++) {
        const float32x4_t xj = vdupq_n_f32(x[j]);
        uint32_t lt = 0, eq = 0;
        for (int k = 0; k < n / 4; k++) {
            lt |= vaddvq_u32(vandq_u32(vcltq_f32(v[k], xj), bit)) << (4 * k);
            eq |= vaddvq_u32(vandq_u32(vceqq_f32(v[k], xj), bit)) << (4 * k);
        }
        idx[__builtin_popcount(lt) + __builtin_popcount(eq & ((1u << j) - 1u))] = j;
    }
}

#endif
