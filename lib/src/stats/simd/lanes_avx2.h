/* The 16 lanes of the statistics (stats.h) in AVX2 registers, for stats_avx2.c and the
 * grouped_absmax kernel (method/simd/absmax_avx2.c): four vectors of 4 binary64 sums, columns
 * c..c+3, c+4..c+7, c+8..c+11, c+12..c+15 of every 16.  No FMA (the AVX2 level does not promise
 * it): d*d and x*x are exact in binary64, then added, as the reference does. */
#ifndef NINFER_STATS_LANES_AVX2_H
#define NINFER_STATS_LANES_AVX2_H

#include <immintrin.h>
#include <math.h>

#include "stats/stats.h"

#define NF_LANES256_INLINE static inline __attribute__((always_inline, target("avx2,f16c")))

typedef struct nf_lanes256 {
    __m256d se[4], sx[4];
    __m256 mx;
} nf_lanes256;

NF_LANES256_INLINE void nf_lanes256_zero(nf_lanes256 *l)
{
    for (int i = 0; i < 4; i++) l->se[i] = l->sx[i] = _mm256_setzero_pd();
    l->mx = _mm256_setzero_ps();
}

NF_LANES256_INLINE __m256d nf_lanes256_sq_add(__m256d acc, __m256d v) { return _mm256_add_pd(acc, _mm256_mul_pd(v, v)); }

/* 8 columns: half 0 for c..c+7 of a 16 (c a multiple of 16), half 1 for c+8..c+15. */
NF_LANES256_INLINE void nf_lanes256_step8(nf_lanes256 *l, int half, __m256 x, __m256 y)
{
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    __m256 d = _mm256_sub_ps(x, y);
    l->mx = _mm256_max_ps(_mm256_and_ps(d, abs_mask), l->mx);
    l->se[2 * half] = nf_lanes256_sq_add(l->se[2 * half], _mm256_cvtps_pd(_mm256_castps256_ps128(d)));
    l->se[2 * half + 1] = nf_lanes256_sq_add(l->se[2 * half + 1], _mm256_cvtps_pd(_mm256_extractf128_ps(d, 1)));
    l->sx[2 * half] = nf_lanes256_sq_add(l->sx[2 * half], _mm256_cvtps_pd(_mm256_castps256_ps128(x)));
    l->sx[2 * half + 1] = nf_lanes256_sq_add(l->sx[2 * half + 1], _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)));
}

/* l + l+8, l + l+4, l + l+2, l + l+1 (stats.h): lanes 0-3 + 8-11 and 4-7 + 12-15 first. */
NF_LANES256_INLINE double nf_lanes256_reduce(const __m256d *v)
{
    __m256d a = _mm256_add_pd(v[0], v[2]), b = _mm256_add_pd(v[1], v[3]);
    __m256d u = _mm256_add_pd(a, b);
    __m128d w = _mm_add_pd(_mm256_castpd256_pd128(u), _mm256_extractf128_pd(u, 1));
    return _mm_cvtsd_f64(_mm_add_sd(w, _mm_unpackhi_pd(w, w)));
}

NF_LANES256_INLINE float nf_lanes256_max(__m256 v)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
}

/* As nf_lanes512_finish. */
NF_LANES256_INLINE bool nf_lanes256_finish(const nf_lanes256 *l, size_t n, nf_errstats *st)
{
    double sse = nf_lanes256_reduce(l->se), ssx = nf_lanes256_reduce(l->sx);
    if (!isfinite(sse)) return false;
    nf_stats_block_done(st, n, sse, ssx, nf_lanes256_max(l->mx));
    return true;
}

#endif
