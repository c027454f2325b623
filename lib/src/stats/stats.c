/* Error statistics (stats.h): the scalar reference kernels, the dispatcher, and the summary the
 * report prints. */
#include "stats/stats.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/format.h>

#include "common/cpu.h"

#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "the statistics need binary32/binary64 evaluation without excess precision"
#endif

nf_errstats *nf_errstats_new(void)
{
    nf_errstats *st = malloc(sizeof *st);
    if (st) nf_errstats_init(st);
    return st;
}

void nf_errstats_free(nf_errstats *st) { free(st); }

void nf_errstats_reset(nf_errstats *st) { nf_errstats_init(st); }

void nf_errstats_init(nf_errstats *st)
{
    st->count = 0;
    st->skipped = 0;
    st->max_abs = 0.0f;
    nf_xsum_init(&st->sse);
    nf_xsum_init(&st->ssx);
    nf_xsum_init(&st->wse);
}

void nf_errstats_merge(nf_errstats *dst, const nf_errstats *src)
{
    dst->count += src->count;
    dst->skipped += src->skipped;
    if (src->max_abs > dst->max_abs) dst->max_abs = src->max_abs;
    nf_xsum_merge(&dst->sse, &src->sse);
    nf_xsum_merge(&dst->ssx, &src->ssx);
    nf_xsum_merge(&dst->wse, &src->wse);
}

nf_errstats_summary nf_errstats_summarize(const nf_errstats *st)
{
    nf_errstats_summary s = {
        st->count, st->skipped, (double)st->max_abs,    nf_xsum_value(&st->sse), nf_xsum_value(&st->ssx),
        NAN,       NAN,         nf_xsum_value(&st->wse)};
    if (s.count) {
        s.rmse = sqrt(s.sse / (double)s.count);
        /* an exact object (no error) or an all-zero source has no finite SNR */
        if (s.sse > 0.0 && s.ssx > 0.0) s.snr_db = 10.0 * log10(s.ssx / s.sse);
    }
    return s;
}

/* ---------------------------------------------------------------- the reference */
/* The lanes of a block added pairwise: l + l+8, then l + l+4, l + l+2, l + l+1 (stats.h). */
static double reduce_lanes(double *lane)
{
    for (unsigned h = NF_STATS_LANES / 2; h >= 1; h /= 2)
        for (unsigned l = 0; l < h; l++) lane[l] = lane[l] + lane[l + h];
    return lane[0];
}

/* A block's lane sums in binary64 with every square exact: the definition's fallback for a block
 * whose binary32 runs overflow. */
static void block_sums_binary64(const float *x, const float *y, size_t n, double *se, double *sx)
{
    for (size_t c = 0; c < n; c++) {
        float d = x[c] - y[c];
        if (!(fabsf(d) <= FLT_MAX)) continue; /* not compared */
        double dd = (double)d, xd = (double)x[c];
        se[c % NF_STATS_LANES] += dd * dd; /* exact product, one rounding in the sum */
        sx[c % NF_STATS_LANES] += xd * xd;
    }
}

void nf_stats_block_scalar(const float *x, const float *y, size_t n, nf_errstats *st)
{
    double se[NF_STATS_LANES] = {0}, sx[NF_STATS_LANES] = {0};
    float re[NF_STATS_LANES] = {0}, rx[NF_STATS_LANES] = {0}; /* the runs in progress */
    float mx = 0.0f;
    size_t compared = 0;
    for (size_t c = 0; c < n; c++) {
        size_t lane = c % NF_STATS_LANES;
        float d = x[c] - y[c];
        float a = fabsf(d);
        if (a <= FLT_MAX) {              /* NaN or infinite: not compared */
            re[lane] = re[lane] + d * d; /* -ffp-contract=off: two roundings, as the kernels */
            rx[lane] = rx[lane] + x[c] * x[c];
            mx = a > mx ? a : mx;
            compared++;
        }
        /* the lane's last column of its run, or of the block: the run ends */
        if ((c / NF_STATS_LANES) % NF_STATS_RUN == NF_STATS_RUN - 1 || c + NF_STATS_LANES >= n) {
            se[lane] += (double)re[lane];
            sx[lane] += (double)rx[lane];
            re[lane] = rx[lane] = 0.0f;
        }
    }
    double sse = reduce_lanes(se), ssx = reduce_lanes(sx);
    if (!isfinite(sse) || !isfinite(ssx)) {
        memset(se, 0, sizeof se);
        memset(sx, 0, sizeof sx);
        block_sums_binary64(x, y, n, se, sx);
        sse = reduce_lanes(se);
        ssx = reduce_lanes(sx);
    }
    st->skipped += n - compared;
    st->count += compared;
    if (mx > st->max_abs) st->max_abs = mx;
    nf_xsum_add(&st->sse, sse);
    nf_xsum_add(&st->ssx, ssx);
}

static void row_f32_scalar(const float *x, const float *y, size_t n, nf_errstats *st)
{
    for (size_t c = 0; c < n; c += NF_STATS_BLOCK)
        nf_stats_block_scalar(x + c, y + c, n - c < NF_STATS_BLOCK ? n - c : NF_STATS_BLOCK, st);
}

/* The binary32 value of source word i (little-endian, any alignment): exact widenings. */
static float source_value(const uint8_t *p, nf_stats_source type, size_t i)
{
    switch (type) {
    case NF_STATS_F32: {
        uint32_t w = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 | (uint32_t)p[4 * i + 2] << 16 |
                     (uint32_t)p[4 * i + 3] << 24;
        return nf_f32_from_bits(w);
    }
    case NF_STATS_F16: return nf_f16_to_f32((uint16_t)(p[2 * i] | p[2 * i + 1] << 8));
    case NF_STATS_BF16: return nf_bf16_to_f32((uint16_t)(p[2 * i] | p[2 * i + 1] << 8));
    }
    return NAN;
}

static void row_grouped_scalar(const void *src, nf_stats_source type, const int8_t *codes, const uint16_t *scales,
                               size_t n, unsigned group, nf_errstats *st)
{
    float x[NF_STATS_BLOCK], y[NF_STATS_BLOCK];
    const uint8_t *p = src;
    for (size_t c0 = 0; c0 < n; c0 += NF_STATS_BLOCK) {
        size_t m = n - c0 < NF_STATS_BLOCK ? n - c0 : NF_STATS_BLOCK;
        for (size_t i = 0; i < m; i++) {
            size_t c = c0 + i;
            x[i] = source_value(p, type, c);
            y[i] = nf_grouped_value(scales[c / group], codes[c]);
        }
        nf_stats_block_scalar(x, y, m, st);
    }
}

const nf_stats_kernels nf_stats_kernels_scalar = {
    .name = "scalar",
    .row_f32 = row_f32_scalar,
    .row_grouped = row_grouped_scalar,
};

NF_SIMD_SELECTOR(nf_stats_kernels, nf_stats_kernels, nf_stats_kernels_scalar, nf_stats_kernels_avx2,
                 nf_stats_kernels_avx512, nf_stats_kernels_neon)
