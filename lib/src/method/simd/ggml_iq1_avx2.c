/* ggml_quantize's IQ1 split searches for AVX2 (ggml_simd.h, iq1s_split and iq1m_split): 8
 * candidate splits a vector, the lane kernels of ggml_iq1_lanes.inc on 256-bit vectors. */
#include <pthread.h>

#include "common/simd_target.h"
#include "method/ggml_encoders.h"
#include "method/simd/ggml_simd.h"

#if NF_X86_KERNELS

#include <immintrin.h>

#define GQ(name) name##_y
#define GQ_FN NF_AVX2_FN
#define GQ_INLINE NF_AVX2_INLINE
#include "method/simd/ggml_ops_y.inc"
#define ILOAD(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define IGT(a, b) _mm256_castsi256_ps(_mm256_cmpgt_epi32(a, b))
#define BITS(m) ((unsigned)_mm256_movemask_ps(m))
#include "method/simd/ggml_iq1_lanes.inc"
#include "method/simd/ggml_ops_undef.inc"

bool nf_gq1s_split_avx2(const float *sumx, const float *sumw, float s0, int *b1, int *b2, int *shift, float *scale)
{
    return iq1s_split_y(sumx, sumw, s0, b1, b2, shift, scale);
}

bool nf_gq1m_split_avx2(const float *x, const float *w, const int *idx, float s0, int *b1, int *b2, int *kind,
                        float *scale)
{
    return iq1m_split_y(x, w, idx, s0, b1, b2, kind, scale);
}

/* nf_gq1_nearest_ref (ggml_iq1.c) with GQ_W candidates of the list at a time: lane j computes the
 * reference's error of point list[j0 + j] with the same operations in the same order (diff =
 * scale xx[l] - x, d2 += w diff diff, value by value), and of the lanes below the running best (an
 * ordered "<", as the reference's: NaN and values from FLT_MAX up never win) the least error wins,
 * the first lane on a tie -- the reference's choice, since a later candidate replaces the best
 * only when strictly less.  A point's 8 levels are read as two 32-bit words. */
NF_AVX2_FN int nf_gq1_nearest_avx2(const uint8_t *levels, const uint16_t *list, unsigned n, const float *x,
                                   const float *w, float scale, const float *xx)
{
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256 inf = _mm256_set1_ps(__builtin_inff());
    float best = 3.40282347e38f;
    int pick = -1;
    for (unsigned j0 = 0; j0 < n; j0 += 8) {
        const unsigned nl = n - j0 < 8 ? n - j0 : 8;
        uint16_t tail[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        const uint16_t *at = list + j0;
        if (nl < 8) { /* the list ends: its last entries into a full vector */
            for (unsigned j = 0; j < nl; j++) tail[j] = at[j];
            at = tail;
        }
        const __m256i off = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)at)),
                                              3);
        const __m256i lo = _mm256_i32gather_epi32((const int *)(const void *)levels, off, 1);
        const __m256i hi = _mm256_i32gather_epi32((const int *)(const void *)(levels + 4), off, 1);
        __m256 d2 = _mm256_setzero_ps();
        for (int i = 0; i < 8; i++) {
            const __m256i l = _mm256_and_si256(_mm256_srl_epi32(i < 4 ? lo : hi, _mm_cvtsi32_si128(8 * (i % 4))),
                                               _mm256_set1_epi32(0xFF));
            const __m256 q = _mm256_blendv_ps(
                _mm256_blendv_ps(_mm256_set1_ps(xx[2]), _mm256_set1_ps(xx[1]),
                                 _mm256_castsi256_ps(_mm256_cmpeq_epi32(l, _mm256_set1_epi32(1)))),
                _mm256_set1_ps(xx[0]), _mm256_castsi256_ps(_mm256_cmpeq_epi32(l, _mm256_setzero_si256())));
            const __m256 diff = _mm256_sub_ps(_mm256_mul_ps(_mm256_set1_ps(scale), q), _mm256_set1_ps(x[i]));
            d2 = _mm256_add_ps(d2, _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(w[i]), diff), diff));
        }
        const __m256 cand = _mm256_and_ps(_mm256_cmp_ps(d2, _mm256_set1_ps(best), _CMP_LT_OQ),
                                          _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32((int)nl), lane)));
        if (!_mm256_movemask_ps(cand)) continue;
        const __m256 dm = _mm256_blendv_ps(inf, d2, cand);
        __m256 m = _mm256_min_ps(dm, _mm256_permute2f128_ps(dm, dm, 1));
        m = _mm256_min_ps(m, _mm256_shuffle_ps(m, m, 0x4E));
        m = _mm256_min_ps(m, _mm256_shuffle_ps(m, m, 0xB1));
        const unsigned first = (unsigned)_mm256_movemask_ps(_mm256_and_ps(cand, _mm256_cmp_ps(dm, m, _CMP_EQ_OQ)));
        best = _mm256_cvtss_f32(m);
        pick = at[__builtin_ctz(first)];
    }
    return pick;
}

/* nf_gq1_order_ref (ggml_iq1.c) by ranks: value j goes to the place of the values below it plus
 * the equal ones before it, which is where the stable sort puts it (the values are finite: the row
 * driver refuses others; with a NaN, whose comparisons all fail, the reference runs instead). */
NF_AVX2_FN void nf_gq1_order_avx2(const float *x, int n, int *idx)
{
    __m256 v[4];
    int nan = 0;
    for (int k = 0; k < n / 8; k++) {
        v[k] = _mm256_loadu_ps(x + 8 * k);
        nan |= _mm256_movemask_ps(_mm256_cmp_ps(v[k], v[k], _CMP_UNORD_Q));
    }
    if (nan) {
        nf_gq1_order_ref(x, n, idx);
        return;
    }
    for (int j = 0; j < n; j++) {
        const __m256 xj = _mm256_set1_ps(x[j]);
        uint32_t lt = 0, eq = 0;
        for (int k = 0; k < n / 8; k++) {
            lt |= (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(v[k], xj, _CMP_LT_OQ)) << (8 * k);
            eq |= (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(v[k], xj, _CMP_EQ_OQ)) << (8 * k);
        }
        idx[__builtin_popcount(lt) + __builtin_popcount(eq & ((1u << j) - 1u))] = j;
    }
}

#endif
