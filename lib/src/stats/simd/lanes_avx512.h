/* The 16 lanes of the statistics (stats.h) in AVX-512 F registers, for the kernels that measure
 * as they go: stats_avx512.c and the grouped_absmax kernel (method/simd/absmax_avx512.c), which
 * has each value and its code in registers already.  Columns c..c+7 of every 16 are the first
 * vector of 8 binary64 sums, c+8..c+15 the second.  d*d and x*x are exact in binary64 (binary32
 * operands), so the fused multiply-add into a lane rounds as the reference's multiply then add. */
#ifndef NINFER_STATS_LANES_AVX512_H
#define NINFER_STATS_LANES_AVX512_H

#include <immintrin.h>
#include <math.h>

#include "stats/stats.h"

#define NF_LANES512_TARGET "avx512f,avx512bw,avx512vl,avx2,f16c,fma"
#define NF_LANES512_INLINE static inline __attribute__((always_inline, target(NF_LANES512_TARGET)))

typedef struct nf_lanes512 {
    __m512d se0, se1, sx0, sx1;
    __m512 mx;
} nf_lanes512;

NF_LANES512_INLINE void nf_lanes512_zero(nf_lanes512 *l)
{
    l->se0 = l->se1 = l->sx0 = l->sx1 = _mm512_setzero_pd();
    l->mx = _mm512_setzero_ps();
}

/* Columns c..c+15 of a block (c a multiple of 16): x the source values, y the represented ones.
 * The binary64 widenings go through memory: VCVTPS2PD from a 256-bit memory operand needs no
 * shuffle, a register operand's upper half an extract and a lane crossing. */
NF_LANES512_INLINE void nf_lanes512_step(nf_lanes512 *l, __m512 x, __m512 y)
{
    __m512 d = _mm512_sub_ps(x, y);
    /* max(|d|, mx) keeps mx for a NaN |d|: such a block is summed again by the reference */
    l->mx = _mm512_max_ps(_mm512_abs_ps(d), l->mx);
    float buf[32] __attribute__((aligned(64)));
    _mm512_store_ps(buf, d);
    _mm512_store_ps(buf + 16, x);
    __asm__("" : "+m"(buf)); /* keep the round trip: GCC would fold it back into extracts */
    __m512d dl = _mm512_cvtps_pd(_mm256_load_ps(buf)), dh = _mm512_cvtps_pd(_mm256_load_ps(buf + 8));
    __m512d xl = _mm512_cvtps_pd(_mm256_load_ps(buf + 16)), xh = _mm512_cvtps_pd(_mm256_load_ps(buf + 24));
    l->se0 = _mm512_fmadd_pd(dl, dl, l->se0);
    l->se1 = _mm512_fmadd_pd(dh, dh, l->se1);
    l->sx0 = _mm512_fmadd_pd(xl, xl, l->sx0);
    l->sx1 = _mm512_fmadd_pd(xh, xh, l->sx1);
}

/* The pairwise reduction of stats.h: l + l+8 (the two vectors), l + l+4, l + l+2, l + l+1. */
NF_LANES512_INLINE double nf_lanes512_reduce(__m512d a, __m512d b)
{
    __m512d t = _mm512_add_pd(a, b);
    __m256d u = _mm256_add_pd(_mm512_castpd512_pd256(t), _mm512_extractf64x4_pd(t, 1));
    __m128d v = _mm_add_pd(_mm256_castpd256_pd128(u), _mm256_extractf128_pd(u, 1));
    return _mm_cvtsd_f64(_mm_add_sd(v, _mm_unpackhi_pd(v, v)));
}

/* Ends a block of n values: true with its figures added to st when every pair was compared (a
 * finite d gives d*d < 2^256, so a block sum that is not finite means some d was not); false,
 * adding nothing, otherwise: the caller then sums the block with the reference. */
NF_LANES512_INLINE bool nf_lanes512_finish(const nf_lanes512 *l, size_t n, nf_errstats *st)
{
    double sse = nf_lanes512_reduce(l->se0, l->se1), ssx = nf_lanes512_reduce(l->sx0, l->sx1);
    if (!isfinite(sse)) return false;
    nf_stats_block_done(st, n, sse, ssx, _mm512_reduce_max_ps(l->mx));
    return true;
}

#endif
