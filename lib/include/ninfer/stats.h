/* ninfer/stats.h - error statistics of an encoding: how far the values an artifact represents
 * are from the source values they were encoded from (the figures of ninfer-convert's report).
 *
 * An nf_errstats accumulates pairs (x, y), x a source value and y the value its words
 * represent, both binary32.  A pair is compared when d = x - y (one binary32 subtraction) is
 * finite; the others are counted as skipped.  The sums are formed in one fixed order that does
 * not depend on how the rows are cut into chunks or spread over threads, nor on the SIMD
 * variant (docs/ninfer-convert.md, "How the statistics are summed"): accumulators of disjoint
 * rows merge exactly, in any order.  nf_method_encode_rows_measured (ninfer/method.h) fills one
 * as it encodes. */
#ifndef NINFER_STATS_H
#define NINFER_STATS_H

#include <ninfer/export.h>

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nf_errstats nf_errstats;

/* The figures: count and skipped pairs, max |d|, the sums of d*d and x*x rounded once to
 * binary64, rmse = sqrt(sse / count) and snr_db = 10 log10(ssx / sse); rmse and snr_db are NaN
 * when undefined (no pair compared; an exact encoding or an all-zero source has no SNR). */
typedef struct nf_errstats_summary {
    uint64_t count, skipped;
    double max_abs, sse, ssx, rmse, snr_db;
    /* an object a budget chose (docs/recipes.md, "Budgets"): its importance-weighted squared
     * error, summed as the budget measures it; 0 for the others */
    double wse;
} nf_errstats_summary;

/* A new, empty accumulator (NULL when out of memory). */
NF_API nf_errstats *nf_errstats_new(void);
NF_API void nf_errstats_free(nf_errstats *st);
/* Empty it again. */
NF_API void nf_errstats_reset(nf_errstats *st);
/* dst += src: exact, so merging in any order gives the same figures. */
NF_API void nf_errstats_merge(nf_errstats *dst, const nf_errstats *src);
NF_API nf_errstats_summary nf_errstats_summarize(const nf_errstats *st);

#ifdef __cplusplus
}
#endif
#endif
