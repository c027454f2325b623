/* ggml_quantize's IQ2 searches for AVX2 (ggml_iq2_simd.h): 8 trials or 8 neighbours a vector,
 * the lane kernels of ggml_iq2_lanes.inc on 256-bit vectors. */
#include "common/simd_target.h"
#include "method/ggml_grid.h"
#include "method/simd/ggml_iq2_simd.h"

#if NF_X86_KERNELS

#include <immintrin.h>
#include <math.h>

#define IQ(name) name##_avx2
#define IQ_FN NF_AVX2_FN
#define IQ_INLINE NF_AVX2_INLINE
#define IQ_W 8
#include "method/simd/ggml_ops_y.inc"
#define ILOAD(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define FSQRT(a) _mm256_sqrt_ps(a)
#define ICLAMP02(v) _mm256_max_epi32(_mm256_setzero_si256(), _mm256_min_epi32(_mm256_set1_epi32(2), v))
#define ISHL(v, n) _mm256_sll_epi32(v, _mm_cvtsi32_si128(n))
#define ISHR(v, n) _mm256_srl_epi32(v, _mm_cvtsi32_si128(n))
#define IOR(a, b) _mm256_or_si256(a, b)
#define TBL4_LOAD(p) _mm256_broadcast_ps((const __m128 *)(const void *)(p))
#define TBL4(t, i) _mm256_permutevar8x32_ps(t, i)
#define CODES(p) _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(p)))
#define MAP(map, c) _mm256_i32gather_epi32(map, c, 4)
#define NEGBITS(v) ((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(v)))
#define LANE_MIN(d, n, first) lane_min_avx2(d, n, first)

/* LANE_MIN of ggml_iq2_lanes.inc: NaN lanes and lanes from n on become FLT_MAX, which never wins. */
NF_AVX2_INLINE float lane_min_avx2(__m256 d, unsigned n, int *first)
{
    __m256 in = _mm256_castsi256_ps(
        _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
    __m256 keep = _mm256_and_ps(in, _mm256_cmp_ps(d, d, _CMP_ORD_Q));
    d = _mm256_blendv_ps(_mm256_set1_ps(3.40282347e38f), d, keep);
    __m256 m = _mm256_min_ps(d, _mm256_permute2f128_ps(d, d, 1));
    m = _mm256_min_ps(m, _mm256_permute_ps(m, 0x4E));
    m = _mm256_min_ps(m, _mm256_permute_ps(m, 0xB1));
    *first = __builtin_ctz((unsigned)_mm256_movemask_ps(_mm256_cmp_ps(d, m, _CMP_EQ_OQ)));
    return _mm256_cvtss_f32(m);
}

#define PREFETCH(p) _mm_prefetch((const char *)(p), _MM_HINT_T0)
#include "method/simd/ggml_iq2_lanes.inc"
#include "method/simd/ggml_iq2_signs_y.inc"

const nf_iq2_kernels nf_iq2_kernels_avx2 = {
    .name = "avx2", .trials = trials_avx2, .nearest = nearest_point_avx2, .weights = weights_avx2, .signs = signs_avx2};

#endif
