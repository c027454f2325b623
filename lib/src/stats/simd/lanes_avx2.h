/* The 16 lanes of the statistics (stats.h) in AVX2 registers, for stats_avx2.c and the
 * grouped_absmax kernel (method/simd/absmax_avx2.c): the binary32 runs in two vectors of 8
 * (columns c..c+7 and c+8..c+15 of every 16; a product then an addition, as the reference), and
 * every NF_STATS_RUN steps of 16 columns, and at the end of a block, their widening into four
 * vectors of 4 binary64 sums: columns c..c+3, c+4..c+7, c+8..c+11, c+12..c+15. */
#ifndef NINFER_STATS_LANES_AVX2_H
#define NINFER_STATS_LANES_AVX2_H

#include <immintrin.h>
#include <math.h>

#include "common/simd_target.h"
#include "stats/stats.h"


typedef struct nf_lanes256 {
    __m256d se[4], sx[4];
    __m256 re[2], rx[2];
    __m256 mx;
    unsigned steps; /* steps of 16 columns in the runs */
} nf_lanes256;

NF_AVX2_INLINE void nf_lanes256_zero(nf_lanes256 *l)
{
    for (int i = 0; i < 4; i++) l->se[i] = l->sx[i] = _mm256_setzero_pd();
    l->re[0] = l->re[1] = l->rx[0] = l->rx[1] = _mm256_setzero_ps();
    l->mx = _mm256_setzero_ps();
    l->steps = 0;
}

/* The runs end: added to the binary64 sums, and started again from +0. */
NF_AVX2_INLINE void nf_lanes256_flush(nf_lanes256 *l)
{
    for (int h = 0; h < 2; h++) {
        l->se[2 * h] = _mm256_add_pd(l->se[2 * h], _mm256_cvtps_pd(_mm256_castps256_ps128(l->re[h])));
        l->se[2 * h + 1] = _mm256_add_pd(l->se[2 * h + 1], _mm256_cvtps_pd(_mm256_extractf128_ps(l->re[h], 1)));
        l->sx[2 * h] = _mm256_add_pd(l->sx[2 * h], _mm256_cvtps_pd(_mm256_castps256_ps128(l->rx[h])));
        l->sx[2 * h + 1] = _mm256_add_pd(l->sx[2 * h + 1], _mm256_cvtps_pd(_mm256_extractf128_ps(l->rx[h], 1)));
        l->re[h] = l->rx[h] = _mm256_setzero_ps();
    }
    l->steps = 0;
}

/* 8 columns: half 0 for c..c+7 of a 16 (c a multiple of 16), half 1 for c+8..c+15; a step of 16
 * columns ends with its half 1. */
NF_AVX2_INLINE void nf_lanes256_step8(nf_lanes256 *l, int half, __m256 x, __m256 y)
{
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    __m256 d = _mm256_sub_ps(x, y);
    l->mx = _mm256_max_ps(_mm256_and_ps(d, abs_mask), l->mx);
    l->re[half] = _mm256_add_ps(l->re[half], _mm256_mul_ps(d, d));
    l->rx[half] = _mm256_add_ps(l->rx[half], _mm256_mul_ps(x, x));
    if (half && ++l->steps == NF_STATS_RUN) nf_lanes256_flush(l);
}

/* As nf_lanes512_skip16: 16 columns of zeros take their place in the runs. */
NF_AVX2_INLINE void nf_lanes256_skip16(nf_lanes256 *l)
{
    if (++l->steps == NF_STATS_RUN) nf_lanes256_flush(l);
}

/* l + l+8, l + l+4, l + l+2, l + l+1 (stats.h): lanes 0-3 + 8-11 and 4-7 + 12-15 first. */
NF_AVX2_INLINE double nf_lanes256_reduce(const __m256d *v)
{
    __m256d a = _mm256_add_pd(v[0], v[2]), b = _mm256_add_pd(v[1], v[3]);
    __m256d u = _mm256_add_pd(a, b);
    __m128d w = _mm_add_pd(_mm256_castpd256_pd128(u), _mm256_extractf128_pd(u, 1));
    return _mm_cvtsd_f64(_mm_add_sd(w, _mm_unpackhi_pd(w, w)));
}

NF_AVX2_INLINE float nf_lanes256_max(__m256 v)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
}

/* As nf_lanes512_finish. */
NF_AVX2_INLINE bool nf_lanes256_finish(nf_lanes256 *l, size_t n, nf_errstats *st)
{
    nf_lanes256_flush(l); /* the block's last runs */
    double sse = nf_lanes256_reduce(l->se), ssx = nf_lanes256_reduce(l->sx);
    if (!isfinite(sse) || !isfinite(ssx)) return false;
    nf_stats_block_done(st, n, sse, ssx, nf_lanes256_max(l->mx));
    return true;
}

#endif
