/* Error statistics for AVX2 + F16C (stats.h), through the lanes of lanes_avx2.h, in the blocks of
 * stats_blocks16.inc (tails padded with zeros; a block holding a pair that is not compared summed
 * again by the reference). */
#include "common/simd_target.h"
#include "stats/stats.h"

#if NF_X86_KERNELS

#include <string.h>

#include "stats/simd/lanes_avx2.h"


/* 16 binary32 columns at x and y */
NF_AVX2_INLINE void step16(nf_lanes256 *l, const float *x, const float *y)
{
    nf_lanes256_step8(l, 0, _mm256_loadu_ps(x), _mm256_loadu_ps(y));
    nf_lanes256_step8(l, 1, _mm256_loadu_ps(x + 8), _mm256_loadu_ps(y + 8));
}


/* 8 source words at p as binary32 (exact widenings). */
NF_AVX2_INLINE __m256 load_source8(const uint8_t *p, nf_stats_source type)
{
    if (type == NF_STATS_F32) return _mm256_loadu_ps((const float *)(const void *)p);
    __m128i h = _mm_loadu_si128((const __m128i *)(const void *)p);
    if (type == NF_STATS_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* y = f16(scale) * q for 8 codes at q (nf_grouped_value). */
NF_AVX2_INLINE __m256 grouped8(const int8_t *q, __m256 s)
{
    __m128i b = _mm_loadl_epi64((const __m128i *)(const void *)q);
    return _mm256_mul_ps(s, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)));
}

NF_AVX2_INLINE void grouped_step16(nf_lanes256 *l, const uint8_t *p, size_t es, nf_stats_source type, const int8_t *q,
                                   __m256 s)
{
    nf_lanes256_step8(l, 0, load_source8(p, type), grouped8(q, s));
    nf_lanes256_step8(l, 1, load_source8(p + 8 * es, type), grouped8(q + 8, s));
}

#define STATS_FN NF_AVX2_FN
#define STATS_INLINE NF_AVX2_INLINE
#define BLOCKS_LANES nf_lanes256
#define BLOCKS_ZERO nf_lanes256_zero
#define BLOCKS_FINISH nf_lanes256_finish
#define BLOCKS_STEP16 step16
#define BLOCKS_SCALE __m256
#define BLOCKS_SCALE_OF(w) _mm256_set1_ps(_cvtsh_ss(w))
#define BLOCKS_GROUPED16 grouped_step16
#include "stats/simd/stats_blocks16.inc"

#define STATS_KERNELS nf_stats_kernels_avx2
#define STATS_NAME "avx2"
#include "stats/simd/stats_rows.inc"

#endif
