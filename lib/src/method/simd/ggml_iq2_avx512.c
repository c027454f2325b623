/* ggml_quantize's IQ2 searches for AVX-512 F/BW/VL (ggml_iq2_simd.h): 16 trials or 16
 * neighbours a vector (an IQ2_XXS group's 13 trials in one), the lane kernels of
 * ggml_iq2_lanes.inc on 512-bit vectors with masks in mask registers. */
#include "common/simd_target.h"
#include "method/ggml_grid.h"
#include "method/simd/ggml_iq2_simd.h"

#if NF_X86_KERNELS

#include <immintrin.h>
#include <math.h>

#define IQ(name) name##_avx512
#define IQ_FN NF_AVX512_FN
#define IQ_INLINE NF_AVX512_INLINE
#define IQ_W 16
#include "method/simd/ggml_ops_z.inc"
#define ILOAD(p) _mm512_loadu_si512((const void *)(p))
#define FSQRT(a) _mm512_sqrt_ps(a)
#define ICLAMP02(v) _mm512_max_epi32(_mm512_setzero_si512(), _mm512_min_epi32(_mm512_set1_epi32(2), v))
#define ISHL(v, n) _mm512_sll_epi32(v, _mm_cvtsi32_si128(n))
#define ISHR(v, n) _mm512_srl_epi32(v, _mm_cvtsi32_si128(n))
#define IOR(a, b) _mm512_or_si512(a, b)
#define TBL4_LOAD(p) _mm512_broadcast_f32x4(_mm_loadu_ps(p))
#define TBL4(t, i) _mm512_permutexvar_ps(i, t)
#define CODES(p) _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(p)))
#define MAP(map, c) map16(map, c)
#define NEGBITS(v) ((unsigned)_mm512_movepi32_mask(v))
#define LANE_MIN(d, n, first) lane_min_avx512(d, n, first)

/* MAP of ggml_iq2_lanes.inc as two 8-lane gathers: the 16-lane one's -O0 macro converts its
 * mask with a sign change, which the build's warnings refuse (the sanitizer build is -O0). */
NF_AVX512_INLINE __m512i map16(const int32_t *map, __m512i c)
{
    __m256i lo = _mm256_i32gather_epi32(map, _mm512_castsi512_si256(c), 4);
    __m256i hi = _mm256_i32gather_epi32(map, _mm512_extracti64x4_epi64(c, 1), 4);
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

/* LANE_MIN of ggml_iq2_lanes.inc: NaN lanes and lanes from n on become FLT_MAX, which never wins. */
NF_AVX512_INLINE float lane_min_avx512(__m512 d, unsigned n, int *first)
{
    __mmask16 in = (__mmask16)(n >= 16 ? 0xFFFFu : (1u << n) - 1u);
    __mmask16 keep = _mm512_mask_cmp_ps_mask(in, d, d, _CMP_ORD_Q);
    d = _mm512_mask_blend_ps(keep, _mm512_set1_ps(3.40282347e38f), d);
    float m = _mm512_reduce_min_ps(d);
    *first = __builtin_ctz((unsigned)_mm512_cmp_ps_mask(d, _mm512_set1_ps(m), _CMP_EQ_OQ));
    return m;
}

#define PREFETCH(p) _mm_prefetch((const char *)(p), _MM_HINT_T0)
#include "method/simd/ggml_iq2_lanes.inc"
#include "method/simd/ggml_iq2_signs_y.inc"

const nf_iq2_kernels nf_iq2_kernels_avx512 = {.name = "avx512",
                                              .trials = trials_avx512,
                                              .nearest = nearest_point_avx512,
                                              .weights = weights_avx512,
                                              .signs = signs_avx512};

#endif
