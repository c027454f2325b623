/* Error statistics of an encoding (internal): how far the represented values y of an object are
 * from its source values x, for the conversion report (docs/ninfer-convert.md, "The report").
 *
 * The figures are defined so that they do not depend on how the work is cut: any thread count,
 * chunk size or SIMD variant gives the same bits (docs/ninfer-convert.md, "How the statistics
 * are summed", is the normative text; this is its summary):
 *   - a pair (x, y) is compared when d = x - y, one binary32 subtraction, is finite (so x and y
 *     are finite too); other pairs are counted as not compared;
 *   - max_abs = the largest |d|;
 *   - each row is cut into blocks of NF_STATS_BLOCK columns from its first column; in a block,
 *     column c goes to lane c mod NF_STATS_LANES, and its columns, in order, into runs of
 *     NF_STATS_RUN (a lane's j-th column of the block goes to run j / NF_STATS_RUN);
 *   - a run sums d*d and x*x in binary32 from +0, each product and each addition rounded on its
 *     own (no fused multiply-add), and each run's sums are added, in order, to its lane's sums
 *     in binary64, from +0;
 *   - a block in which a run's binary32 sum is not finite (a square beyond binary32's range) is
 *     summed in binary64 instead: each lane adds d*d and x*x, exact in binary64, in column order;
 *   - a block's lanes are added pairwise, lane l + lane l+8 for l < 8, then l + l+4, l + l+2,
 *     l + l+1, each sum rounded to binary64;
 *   - the object's sums are the exact sum of its blocks' sums (nf_xsum, a fixed-point
 *     accumulator with no rounding at all), rounded once to binary64 at the end.
 * Only the last step joins work from different chunks or threads, and it is exact, so the order
 * in which chunks finish cannot change a bit.
 *
 * The kernels (scalar reference, AVX2 + F16C, AVX-512 F/BW/VL, NEON) implement exactly that order;
 * tests/unit/test_stats.c compares them bit for bit. */
#ifndef NINFER_STATS_STATS_H
#define NINFER_STATS_STATS_H

#include "common/cpu.h"
#include "common/simd_target.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ninfer/stats.h>

#define NF_STATS_LANES 16u
#define NF_STATS_BLOCK 4096u
#define NF_STATS_RUN 8u

/* ---------------------------------------------------------------- exact sums */
/* The exact sum of nonnegative binary64 values (and +inf): a 2240-bit fixed-point integer in
 * units of 2^-1074, the smallest subnormal, so every finite double is an integer here; the 142
 * bits above the largest double leave room for 2^142 additions. */
#define NF_XSUM_WORDS 35u

typedef struct nf_xsum {
    uint64_t w[NF_XSUM_WORDS]; /* little-endian words: w[0] holds 2^-1074 .. 2^-1011 */
    bool inf;                  /* +inf (or a NaN) was added */
} nf_xsum;

void nf_xsum_init(nf_xsum *s);
/* v >= +0 (or -0); +inf and NaN set the infinite flag. */
void nf_xsum_add(nf_xsum *s, double v);
void nf_xsum_merge(nf_xsum *dst, const nf_xsum *src);
/* The sum rounded to nearest binary64, ties to even (+inf when it is too large or inf was
 * added). */
double nf_xsum_value(const nf_xsum *s);

/* ---------------------------------------------------------------- statistics */
struct nf_errstats {
    uint64_t count;   /* pairs compared */
    uint64_t skipped; /* pairs not compared: x - y is not a finite binary32 */
    float max_abs;    /* max |x - y| over the compared pairs (+0 when none) */
    nf_xsum sse, ssx; /* sum of (x - y)^2 and of x^2 over the compared pairs */
    nf_xsum wse;      /* an object the budget chose: its weighted squared error (budget/werror.h) */
};

/* An accumulator in place (on the stack, in a struct): empty. */
void nf_errstats_init(nf_errstats *st);

/* The source words the kernels read: little-endian binary32, binary16 or bfloat16. */
typedef enum nf_stats_source { NF_STATS_F32, NF_STATS_F16, NF_STATS_BF16 } nf_stats_source;

/* ---------------------------------------------------------------- kernels */
/* Each function takes one whole row (its columns from the first), so that the blocks start
 * where the definition says. */
typedef struct nf_stats_kernels {
    const char *name;
    /* x[c] against y[c], c < n: binary32 values in memory (any alignment). */
    void (*row_f32)(const float *x, const float *y, size_t n, nf_errstats *st);
    /* Source words against grouped words: x[c] = the binary32 value of source word c at src
     * (any alignment), y[c] = nf_grouped_value(scales[c / group], codes[c]). */
    void (*row_grouped)(const void *src, nf_stats_source type, const int8_t *codes, const uint16_t *scales, size_t n,
                        unsigned group, nf_errstats *st);
} nf_stats_kernels;

/* The instances of the levels (common/cpu.h: one dispatch structure). */
extern const nf_stats_kernels nf_stats_kernels_scalar;
#if NF_X86_KERNELS
extern const nf_stats_kernels nf_stats_kernels_avx2;
extern const nf_stats_kernels nf_stats_kernels_avx512;
#endif
#if NF_ARM_KERNELS
extern const nf_stats_kernels nf_stats_kernels_neon;
#endif

/* The kernels of a level and of the active one (common/cpu.h); never NULL. */
const nf_stats_kernels *nf_stats_kernels_for(nf_simd_level level);
const nf_stats_kernels *nf_stats_kernels_active(void);

/* ---------------------------------------------------------------- shared by the variants */
/* The reference for one block (n <= NF_STATS_BLOCK values): the definition above, step by
 * step.  The vector kernels take it for any block holding a pair that is not compared. */
void nf_stats_block_scalar(const float *x, const float *y, size_t n, nf_errstats *st);

/* A block's sums as the vector kernels found them when every pair was compared: count n. */
static inline void nf_stats_block_done(nf_errstats *st, size_t n, double sse, double ssx, float max_abs)
{
    st->count += n;
    if (max_abs > st->max_abs) st->max_abs = max_abs;
    nf_xsum_add(&st->sse, sse);
    nf_xsum_add(&st->ssx, ssx);
}

#endif
