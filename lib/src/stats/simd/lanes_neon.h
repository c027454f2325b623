/* The 16 lanes of the statistics (stats.h) in NEON registers, for stats_neon.c: the binary32
 * runs in four vectors of 4 (columns c..c+3, c+4..c+7, c+8..c+11 and c+12..c+15 of every 16; a
 * product then an addition, as the reference: -ffp-contract=off keeps them apart), and every
 * NF_STATS_RUN steps of 16 columns, and at the end of a block, their widening into eight vectors
 * of 2 binary64 sums, lanes 2k and 2k+1 in vector k. */
#ifndef NINFER_STATS_LANES_NEON_H
#define NINFER_STATS_LANES_NEON_H

#include <arm_neon.h>
#include <math.h>

#include "stats/stats.h"

typedef struct nf_lanes_neon {
    float64x2_t se[8], sx[8];
    float32x4_t re[4], rx[4];
    float32x4_t mx;
    unsigned steps; /* steps of 16 columns in the runs */
} nf_lanes_neon;

static inline void nf_lanes_neon_zero(nf_lanes_neon *l)
{
    for (int i = 0; i < 8; i++) l->se[i] = l->sx[i] = vdupq_n_f64(0.0);
    for (int i = 0; i < 4; i++) l->re[i] = l->rx[i] = vdupq_n_f32(0.0f);
    l->mx = vdupq_n_f32(0.0f);
    l->steps = 0;
}

/* The runs end: added to the binary64 sums, and started again from +0. */
static inline void nf_lanes_neon_flush(nf_lanes_neon *l)
{
    for (int q = 0; q < 4; q++) {
        l->se[2 * q] = vaddq_f64(l->se[2 * q], vcvt_f64_f32(vget_low_f32(l->re[q])));
        l->se[2 * q + 1] = vaddq_f64(l->se[2 * q + 1], vcvt_high_f64_f32(l->re[q]));
        l->sx[2 * q] = vaddq_f64(l->sx[2 * q], vcvt_f64_f32(vget_low_f32(l->rx[q])));
        l->sx[2 * q + 1] = vaddq_f64(l->sx[2 * q + 1], vcvt_high_f64_f32(l->rx[q]));
        l->re[q] = l->rx[q] = vdupq_n_f32(0.0f);
    }
    l->steps = 0;
}

/* 4 columns: quarter q for c+4q..c+4q+3 of a 16 (c a multiple of 16); a step of 16 columns ends
 * with its quarter 3.  (A NaN |d| makes the maximum NaN here where x86's max keeps the other
 * operand; it makes the block's sums NaN too, as an infinite d makes them infinite, and the
 * reference sums that block again.) */
static inline void nf_lanes_neon_step4(nf_lanes_neon *l, int q, float32x4_t x, float32x4_t y)
{
    float32x4_t d = vsubq_f32(x, y);
    l->mx = vmaxq_f32(vabsq_f32(d), l->mx);
    l->re[q] = vaddq_f32(l->re[q], vmulq_f32(d, d));
    l->rx[q] = vaddq_f32(l->rx[q], vmulq_f32(x, x));
    if (q == 3 && ++l->steps == NF_STATS_RUN) nf_lanes_neon_flush(l);
}

/* As nf_lanes512_skip16 (lanes_avx512.h): 16 columns of zeros take their place in the runs. */
static inline void nf_lanes_neon_skip16(nf_lanes_neon *l)
{
    if (++l->steps == NF_STATS_RUN) nf_lanes_neon_flush(l);
}

/* l + l+8, l + l+4, l + l+2, l + l+1 (stats.h) */
static inline double nf_lanes_neon_reduce(const float64x2_t *v)
{
    float64x2_t t[4];
    for (int k = 0; k < 4; k++) t[k] = vaddq_f64(v[k], v[k + 4]); /* lanes 2k, 2k+1 + 2k+8, 2k+9 */
    float64x2_t u0 = vaddq_f64(t[0], t[2]), u1 = vaddq_f64(t[1], t[3]);
    float64x2_t w = vaddq_f64(u0, u1);
    return vgetq_lane_f64(w, 0) + vgetq_lane_f64(w, 1);
}

/* As nf_lanes256_finish (lanes_avx2.h): false when the block's sums are not finite. */
static inline bool nf_lanes_neon_finish(nf_lanes_neon *l, size_t n, nf_errstats *st)
{
    nf_lanes_neon_flush(l); /* the block's last runs */
    double sse = nf_lanes_neon_reduce(l->se), ssx = nf_lanes_neon_reduce(l->sx);
    if (!isfinite(sse) || !isfinite(ssx)) return false;
    nf_stats_block_done(st, n, sse, ssx, vmaxvq_f32(l->mx));
    return true;
}

#endif
