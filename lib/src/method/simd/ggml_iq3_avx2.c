/* ggml_quantize's IQ3 trial kernel for AVX2 (ggml_simd.h, iq3_trials): 8 trials a vector, the
 * lane kernel of ggml_iq3_lanes.inc on 256-bit vectors, the grid lookups by VPGATHERDD. */
#include "common/simd_target.h"
#include "method/ggml_grid3.h"
#include "method/ggml_encoders.h"
#include "method/simd/ggml_simd.h"

#if NF_X86_KERNELS

#include <immintrin.h>
#include <math.h>

#define GQ(name) name##_y
#define GQ_FN NF_AVX2_FN
#define GQ_INLINE NF_AVX2_INLINE
#include "method/simd/ggml_ops_y.inc"
#define ILOAD(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define IAND(a, b) _mm256_and_si256(a, b)
#define ISHL(v, n) _mm256_sll_epi32(v, _mm_cvtsi32_si128(n))
#define ISRL(v, n) _mm256_srl_epi32(v, _mm_cvtsi32_si128(n))
#define IGT(a, b) _mm256_castsi256_ps(_mm256_cmpgt_epi32(a, b))
#define BITS(m) ((unsigned)_mm256_movemask_ps(m))
#define GATHER32(p, i) _mm256_i32gather_epi32((const int *)(const void *)(p), i, 4)
#define BLOAD(p) _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(p)))
#define FEQ(a, b) _mm256_cmp_ps(a, b, _CMP_EQ_OQ)
#define FMIN_OF(m, v) min_of_y(m, v)
#define STORE_I8(p, v)                                                                                           \
    _mm_storel_epi64((__m128i *)(void *)(p),                                                                     \
                     _mm_packs_epi16(_mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)), \
                                     _mm_setzero_si128()))

static const int32_t lane_index_y[8] = {0, 1, 2, 3, 4, 5, 6, 7};

/* The least lane of v in m: the others set to +infinity, then halves folded onto each other. */
NF_AVX2_INLINE float min_of_y(__m256 m, __m256 v)
{
    __m256 t = _mm256_blendv_ps(_mm256_set1_ps(INFINITY), v, m);
    __m128 h = _mm_min_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
    h = _mm_min_ps(h, _mm_movehl_ps(h, h));
    h = _mm_min_ss(h, _mm_shuffle_ps(h, h, 1));
    return _mm_cvtss_f32(h);
}

/* Queues the lanes of off (AVX2 has no compressing store: lane by lane). */
NF_AVX2_INLINE int queue_y(unsigned off, __m256i p, __m256i b, int32_t *pair, int32_t *base, int nq)
{
    int32_t pv[8], bv[8];
    _mm256_storeu_si256((__m256i *)(void *)pv, p);
    _mm256_storeu_si256((__m256i *)(void *)bv, b);
    for (; off; off &= off - 1u) {
        const int j = __builtin_ctz(off);
        pair[nq] = pv[0] + j;
        base[nq++] = bv[j];
    }
    return nq;
}

#include "method/simd/ggml_iq3_lanes.inc"
#include "method/simd/ggml_ops_undef.inc"

bool nf_gq3_trials_avx2(const nf_gq3_grid *g, int nt, const float *id, const float *scale, const float *xval,
                        const float *waux, const float *w, int8_t *L, uint32_t *on_grid, float *sumqx, float *sumq2)
{
    return iq3_trials_y(g, nt, id, scale, xval, waux, w, L, on_grid, sumqx, sumq2);
}

#endif
