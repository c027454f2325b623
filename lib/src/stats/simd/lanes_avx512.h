/* The 16 lanes of the statistics (stats.h) in AVX-512 F registers, for the kernels that measure
 * as they go: stats_avx512.c and the grouped_absmax kernel (method/simd/absmax_avx512.c), which
 * has each value and its code in registers already.  A step takes 16 columns, one per lane: the
 * binary32 runs re, rx (d*d and x*x, a product then an addition, as the reference) and, every
 * NF_STATS_RUN steps and at the end of a block, their widening into the binary64 sums: columns
 * c..c+7 of every 16 in the first vector of 8 binary64 sums, c+8..c+15 in the second. */
#ifndef NINFER_STATS_LANES_AVX512_H
#define NINFER_STATS_LANES_AVX512_H

#include <immintrin.h>
#include <math.h>

#include "common/simd_target.h"
#include "stats/stats.h"


typedef struct nf_lanes512 {
    __m512d se0, se1, sx0, sx1;
    __m512 re, rx, mx;
    unsigned steps; /* steps in the runs re, rx */
} nf_lanes512;

NF_AVX512_INLINE void nf_lanes512_zero(nf_lanes512 *l)
{
    l->se0 = l->se1 = l->sx0 = l->sx1 = _mm512_setzero_pd();
    l->re = l->rx = l->mx = _mm512_setzero_ps();
    l->steps = 0;
}

/* The runs end: added to the binary64 sums, and started again from +0.  The widenings go
 * through memory: VCVTPS2PD from a 256-bit memory operand needs no shuffle, a register
 * operand's upper half an extract and a lane crossing. */
NF_AVX512_INLINE void nf_lanes512_flush(nf_lanes512 *l)
{
    float buf[32] __attribute__((aligned(64)));
    _mm512_store_ps(buf, l->re);
    _mm512_store_ps(buf + 16, l->rx);
    __asm__("" : "+m"(buf)); /* keep the round trip: GCC would fold it back into extracts */
    l->se0 = _mm512_add_pd(l->se0, _mm512_cvtps_pd(_mm256_load_ps(buf)));
    l->se1 = _mm512_add_pd(l->se1, _mm512_cvtps_pd(_mm256_load_ps(buf + 8)));
    l->sx0 = _mm512_add_pd(l->sx0, _mm512_cvtps_pd(_mm256_load_ps(buf + 16)));
    l->sx1 = _mm512_add_pd(l->sx1, _mm512_cvtps_pd(_mm256_load_ps(buf + 24)));
    l->re = l->rx = _mm512_setzero_ps();
    l->steps = 0;
}

/* Columns c..c+15 of a block (c a multiple of 16): x the source values, y the represented ones. */
NF_AVX512_INLINE void nf_lanes512_step(nf_lanes512 *l, __m512 x, __m512 y)
{
    __m512 d = _mm512_sub_ps(x, y);
    /* max(|d|, mx) keeps mx for a NaN |d|: such a block is summed again by the reference */
    l->mx = _mm512_max_ps(_mm512_abs_ps(d), l->mx);
    l->re = _mm512_add_ps(l->re, _mm512_mul_ps(d, d));
    l->rx = _mm512_add_ps(l->rx, _mm512_mul_ps(x, x));
    if (++l->steps == NF_STATS_RUN) nf_lanes512_flush(l);
}

/* Columns c..c+15 whose x and y are all zero: they add +0, which leaves the lanes as they are, but
 * they take their place in the runs (stats.h: a run is NF_STATS_RUN steps of columns). */
NF_AVX512_INLINE void nf_lanes512_skip16(nf_lanes512 *l)
{
    if (++l->steps == NF_STATS_RUN) nf_lanes512_flush(l);
}

/* The pairwise reduction of stats.h: l + l+8 (the two vectors), l + l+4, l + l+2, l + l+1. */
NF_AVX512_INLINE double nf_lanes512_reduce(__m512d a, __m512d b)
{
    __m512d t = _mm512_add_pd(a, b);
    __m256d u = _mm256_add_pd(_mm512_castpd512_pd256(t), _mm512_extractf64x4_pd(t, 1));
    __m128d v = _mm_add_pd(_mm256_castpd256_pd128(u), _mm256_extractf128_pd(u, 1));
    return _mm_cvtsd_f64(_mm_add_sd(v, _mm_unpackhi_pd(v, v)));
}

/* Ends a block of n values: true with its figures added to st when every pair was compared and
 * no run overflowed binary32 (either makes a sum not finite); false, adding nothing, otherwise:
 * the caller then sums the block with the reference, which skips the pairs not compared and
 * sums an overflowing block in binary64. */
NF_AVX512_INLINE bool nf_lanes512_finish(nf_lanes512 *l, size_t n, nf_errstats *st)
{
    nf_lanes512_flush(l); /* the block's last runs */
    double sse = nf_lanes512_reduce(l->se0, l->se1), ssx = nf_lanes512_reduce(l->sx0, l->sx1);
    if (!isfinite(sse) || !isfinite(ssx)) return false;
    nf_stats_block_done(st, n, sse, ssx, _mm512_reduce_max_ps(l->mx));
    return true;
}

#endif
