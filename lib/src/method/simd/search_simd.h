/* Fast paths of grouped_search (docs/methods.md, grouped_search), internal.
 *
 * grouped.c keeps the plain scalar reference (nf_grouped_search_rows_reference: one candidate
 * at a time through consider(), exactly as the method is written down).  The fast paths search
 * a batch of up to NF_SEARCH_BATCH groups at once and give every group the reference's scale
 * word and codes bit for bit for every input; tests/unit/test_method_search_fast.c compares
 * them on many random chunks for every variant.
 *
 * Layout.  A batch is transposed: one vector lane per group (16 in the AVX-512 and portable
 * kernels, 8 in the AVX2 one), element k of every group in one vector.  Everything per candidate
 * (its binary64 value, the rounding to binary16, validity, the reciprocal, the screening sum,
 * the choice) is then one vector operation for all the groups of the batch, and every lane
 * sums its own terms in the reference's order (k ascending) where the order matters.  The
 * driver (nf_grouped_search_rows) checks and loads groups in the reference's order, reports the
 * reference's first error before anything of a later group is searched, writes the groups with
 * amax = 0 at once, and queues the others in three batches that may cross rows: groups whose
 * full-range candidates (step 2) compete, groups whose full-range candidates are all negative
 * and do not compete (so the batch skips those 25), and groups outside the screening range.
 * Groups are independent, so the order in which batches run cannot change a word.
 *
 * The schedule (search_algo.inc, shared by the variants) and why each step cannot change a word:
 *
 *   - Baseline.  The driver refuses a group whose absmax scale overflows exactly when the
 *     reference does (f32(amax / qmax) >= 65520 is what rounds to the binary16 infinity: the tie
 *     above 65504 goes to the even word); the kernels form the word lane-wise by the same
 *     binary32 division and binary16 rounding.
 *   - Candidates.  Per lane, in the reference's order: the baseline, steps 1-4, step 5 (66 in
 *     the first round), computed with the reference's binary64 operations; the rounding to a
 *     binary16 word is the reference's round_candidate (see the vector kernels below).  The
 *     least-squares sums of step 5 and step 6 are the reference's own: each lane adds
 *     (w x) q and (w q) q in binary64, k ascending, without FMA, with the reference's codes;
 *     padding lanes add +0, which leaves a sum that starts at +0 unchanged.  (Without importance
 *     the denominator sums squares of integers, exactly in any precision that holds 2^21.)
 *   - Selection.  consider() keeps a candidate when its error is strictly below the best so far.
 *     Over a list evaluated first and compared afterwards in the same order that is the same
 *     choice: the first candidate with the least error.  Only step 6 (the refit of the best
 *     codes after the first 66 scales) depends on earlier results; it is a second round.
 *   - Skipped candidates.  An invalid word (zero, infinite or NaN, negative without
 *     negative_scales) never competes; a word equal to one listed earlier has the same codes
 *     and error (both are functions of the word), so it is never strictly below the best at its
 *     turn.  So a candidate row is skipped where every competing word of it repeats an earlier
 *     row's (step 2 rows equal to step 1 rows: (amax / qmax) r_i = (amax / |qmin|) r_j exactly
 *     for some ratio pairs), the refit candidates equal to a first-round word are skipped, and
 *     step 1's ratio 1.00 is skipped for good: (amax / qmax) * 1 in binary64, rounded to
 *     binary32, is the binary32 quotient amax / qmax (a binary64 quotient of binary32 operands
 *     rounds again to the correctly rounded binary32 one, 53 >= 2 * 24 + 2), so its word is the
 *     baseline's.
 *   - Screening.  Each candidate's error is first summed in binary32 (any order, FMA allowed),
 *     with residuals that may differ from the reference's by a proven amount (see Codes), and
 *     the result lies within proven bounds, linear in the screened sum, of the exact sum and of
 *     the reference's binary64 sum (derived at search_rho in search_algo.inc; groups outside the
 *     range of the proof, amax or a weight above 2^30 or amax below 2^-30, are not screened:
 *     every candidate gets its exact error).  A candidate whose lower bound exceeds the least
 *     upper bound is strictly worse than the candidate holding that bound and is never chosen;
 *     search_algo.inc tests this against one binary32 threshold per lane, derived so that it
 *     only ever keeps more candidates.  When the survivors of a lane are one word (nearly
 *     always), it is the lane's first-round best.  Otherwise the lane's distinct survivors get
 *     the reference's error exactly: for each element k ascending, code = clamp(x * inv) rounded
 *     to nearest even in binary32, r = x - s * q and e += (w * r) * r (r * r without importance)
 *     in binary64, no FMA (or one where it provably rounds the same: s * q is exact), and they
 *     are compared in the reference's order.
 *   - Second round.  In the reference's order, each refit candidate is compared with the current
 *     best: where both have the codes of the first round's best (checked element by element with
 *     the reference's codes), by the exact difference of their errors, a closed form in that
 *     round's least-squares sums with a proven error bound (search_same_codes); else by the
 *     screening bounds where they separate; otherwise by exact errors again.
 *   - Codes.  The codes of the final word, of the least-squares sums, of the second round's
 *     same-codes check and of every exact error are the reference's: u = f32(x * inv), clamped
 *     to [qmin, qmax] and rounded by adding and subtracting 1.5 * 2^23, as nf_grouped_code does.
 *     The screening may differ: the AVX-512 kernel rounds x * inv + 1.5 * 2^23 in one FMA (its
 *     codes then differ only at ties, where both residuals are as large within 2.0001 |x| 2^-23),
 *     the AVX2 kernel sums (u - q)^2 scaled by s^2 (residuals within 1.0001 |x| 2^-23), the
 *     portable one the reference's residuals; each variant's SEARCH_BETA states its margin,
 *     which the bounds carry.  A clamp is left out of a candidate's screening only where no lane
 *     can need it: u is monotone in x (for either sign of inv), so every u (and every exact
 *     product x * inv) lies between those of xmin and xmax; when f32(xmin * inv) and
 *     f32(xmax * inv) lie strictly inside (qmin - 0.5, qmax + 0.5) for every lane, clamping cannot
 *     change any rounded code, and |u| < 2^22 keeps the rounding trick exact.
 *
 * The NEON kernel (search_neon.c, 4 lanes) does the portable kernel's arithmetic lane-wise.
 *
 * The vector kernels round candidates lane-wise with the hardware conversions (VCVTPD2PS, then
 * VCVTPS2PH with imm8 = 0: round to nearest even, overflow to infinity and subnormal results
 * exactly as nf_f32_to_f16, and |c| >= 65536 always infinite, as the reference's early exit),
 * a NaN candidate (an infinite least-squares quotient) made +infinity first, as the reference's
 * early exit makes it, and then the reference's fix-up of a nonzero candidate rounding to zero;
 * all in the default floating-point environment of ninfer/method.h. */
#ifndef NINFER_METHOD_SEARCH_SIMD_H
#define NINFER_METHOD_SEARCH_SIMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ninfer/format.h>
#include <ninfer/method.h>

#include "common/cpu.h"
#include "common/simd_target.h"

/* Groups per kernel call at most. */
#define NF_SEARCH_BATCH 16u

/* What the groups of one call share. */
typedef struct nf_search_shape {
    size_t group;         /* G: every x and wf below is readable and zero-padded up to G */
    float qmin, qmax;     /* legal code interval, as floats for the clamp */
    double qmin_d;        /* code_min */
    float denominator;    /* encoder qmax */
    double denominator_d; /* the same */
    bool negative_scales;
} nf_search_shape;

/* One group with amax > 0 whose baseline word (the grouped_absmax one, f16(f32(amax / qmax)),
 * 0x0001 when that is 0) is finite, as the driver has checked (amax / qmax < 65520); the
 * kernels form the word themselves, lane-wise, by the same operations. */
typedef struct nf_search_group {
    const float *x;  /* G values: the group's n finite values, then zeros */
    const float *wf; /* G importance weights (n given, then zeros), or NULL (all 1); all
                              groups of a call have weights or none has */
    size_t n;        /* 1..G */
    float amax;      /* max |x| > 0 */
    float extreme;   /* x[k] of the first k with |x[k]| = amax (docs/decisions.md D13) */
    uint16_t *word;  /* out: the chosen word */
    int8_t *q;       /* out: its n codes */
} nf_search_group;

/* Searches count (1..NF_SEARCH_BATCH) groups; screen tells whether every one of them is
 * screenable (nf_search_screenable), otherwise none is. */
typedef void (*nf_search_batch_fn)(const nf_search_shape *sh, const nf_search_group *g, size_t count, bool screen);
/* x[k] of the first k < n with |x[k]| = amax (which some k holds). */
typedef float (*nf_search_extreme_fn)(const float *x, size_t n, float amax);

/* n values of type F32, F16 or BF16 (little-endian bytes at any alignment) at p, widened exactly
 * to binary32 into x[0..n) (a signaling NaN may come out quiet); returns the largest |x| as a
 * binary32 word (>= 0x7F800000 when some value is not finite) and, when that is finite and
 * nonzero, sets *extreme as nf_search_extreme_fn would. */
typedef uint32_t (*nf_search_load_fn)(const uint8_t *p, nf_src_type type, size_t n, float *x, float *extreme);

/* The kernels table of grouped_search (common/cpu.h: one dispatch structure); the scalar
 * instance is the portable C of search_portable.c. */
typedef struct nf_search_kernels {
    const char *name;
    nf_search_batch_fn batch;
    nf_search_extreme_fn extreme;
    nf_search_load_fn load; /* used on little-endian hosts (grouped.c loads the groups itself on others) */
    size_t lanes;           /* groups side by side in one pass (a batch takes one or two) */
} nf_search_kernels;

extern const nf_search_kernels nf_search_kernels_scalar;
/* The portable table's loading and extreme (search_portable.c), which the NEON table shares:
 * GCC's vectorizing of the plain loops is all a 4-lane kernel would add there. */
float nf_search_extreme_portable(const float *x, size_t n, float amax);
uint32_t nf_search_load_portable(const uint8_t *p, nf_src_type type, size_t n, float *x, float *extreme);
#if NF_X86_KERNELS
extern const nf_search_kernels nf_search_kernels_avx2;
extern const nf_search_kernels nf_search_kernels_avx512;
#endif
#if NF_ARM_KERNELS
extern const nf_search_kernels nf_search_kernels_neon; /* search_neon.c */
#endif

/* The kernels of a level and of the active one (common/cpu.h); never NULL. */
const nf_search_kernels *nf_search_kernels_for(nf_simd_level level);
const nf_search_kernels *nf_search_kernels_active(void);

/* How often the kernels of this thread took each path (for the tests, which show with them that
 * every path is exercised; reset by assigning zeros). */
typedef struct nf_search_stats {
    uint64_t batches;       /* batch passes (SEARCH_L lanes each) */
    uint64_t groups;        /* groups searched */
    uint64_t unscreened;    /* groups outside the screening range (exact errors throughout) */
    uint64_t first_exact;   /* groups whose first round needed exact errors */
    uint64_t second_same;   /* second-round comparisons decided by the same-codes difference */
    uint64_t second_bounds; /* second-round comparisons decided by the screening bounds */
    uint64_t second_exact;  /* groups whose second round needed exact errors */
} nf_search_stats;
nf_search_stats *nf_search_stats_local(void);

/* The AVX2 screening sums scaled residuals only where every |x * inv| is below this (search_avx2.c);
 * 2^20 unless a test lowers it, to run the unscaled form (a test hook like nf_simd_force: not
 * to be changed while encoders run). */
extern float nf_search_scaled_limit;

/* The range the screening bound is proven for (search_algo.inc, search_rho): 2^-30 <= amax <=
 * 2^30 and every weight at most 2^30; wmax_bits is the largest |weight| as a binary32 word (0
 * without importance). */
static inline bool nf_search_screenable(float amax, uint32_t wmax_bits)
{
    return amax >= 0x1p-30f && amax <= 0x1p30f && wmax_bits <= 0x4E800000u;
}

/* The reference: grouped_search one candidate at a time, as docs/methods.md, grouped_search writes it.  Same
 * contract as nf_grouped_search_rows; kept for the tests of the fast paths. */
nf_status nf_grouped_search_rows_reference(const nf_format *fmt, const nf_method_params *params, const nf_src_rows *src,
                                           nf_words *out, nf_error *err);

#endif
