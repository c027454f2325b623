/* Fast paths of grouped_search (conversion.md 5.4), internal.
 *
 * grouped.c keeps the plain scalar reference (nf_grouped_search_rows_reference: one candidate
 * at a time through consider(), exactly as the method is written down).  The fast paths search
 * one group and give the reference's scale word and codes bit for bit for every input;
 * tests/unit/test_method_search_fast.c compares them on many random groups for every variant.
 * The schedule (search_algo.inc, shared by the variants) and why each step cannot change a word:
 *
 *   - Selection.  consider() keeps a candidate when its error is strictly below the best so far.
 *     Over a list evaluated first and compared afterwards in the same order that is the same
 *     choice: the first candidate with the least error.  Only step 6 (the refit of the best
 *     codes after the first 66 scales) depends on earlier results; it is a second round.  fit
 *     (step 5) depends only on the baseline codes, so its candidates join the first round.
 *   - Skipped candidates.  An invalid word (zero, infinite, negative without negative_scales)
 *     never competes; a word equal to one listed earlier has the same codes and error (both are
 *     functions of the word), never strictly below the best at its turn.
 *   - Screening.  Each candidate's error is first summed in binary32 (lanes side by side, any
 *     order, FMA allowed; the codes are the reference's), which lies within a proven relative
 *     and absolute bound of the exact sum, and so of the reference's binary64 sum (the bound is
 *     derived at search_screenable in search_algo.inc; groups outside its range, amax or a
 *     weight above 2^30 or amax below 2^-30, skip screening).  A candidate whose lower bound
 *     exceeds the least upper bound is strictly worse than the candidate holding that bound and
 *     is never chosen.  The others (usually one) get the reference's error exactly: for each
 *     element k ascending, code = clamp(x * inv) rounded to nearest even in binary32,
 *     r = x - s * q and e += (w * r) * r (r * r without importance) in binary64, each lane
 *     summing its own terms in the reference's order, no FMA (or one where it provably rounds
 *     the same: s * q is exact), and they are compared in the reference's order.  The second
 *     round decides by the bounds where they separate, and otherwise by exact errors again.
 *   - Least squares.  The sums of step 5/6 have terms of one sign, so any order of summation is
 *     within 2^-45 relatively of the reference's; round_candidate is monotone, so a quotient
 *     whose slightly widened interval rounds to one word gives the reference's word, and
 *     otherwise the reference's sums are formed (search_fit_word).
 *
 * The vector kernels round candidates lane-wise with the hardware conversions (VCVTPD2PS, then
 * VCVTPS2PH with imm8 = 0: round to nearest even, overflow to infinity and subnormal results
 * exactly as nf_f32_to_f16), in the default floating-point environment of ninfer/method.h. */
#ifndef NINFER_METHOD_SEARCH_SIMD_H
#define NINFER_METHOD_SEARCH_SIMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ninfer/format.h>
#include <ninfer/method.h>

/* One group with amax > 0, after the baseline (the grouped_absmax result). */
typedef struct nf_search_group {
    const float *x;          /* n values, finite */
    const double *w;         /* n importance weights widened to binary64, or NULL (all 1) */
    const float *wf;         /* the same weights as given (binary32), NULL with w */
    size_t n;                /* 1..NF_METHOD_MAX_GROUP */
    float amax;              /* max |x| > 0 */
    float qmin, qmax;        /* legal code interval, as floats for the clamp */
    double qmin_d;           /* code_min */
    double denominator_d;    /* encoder qmax */
    bool negative_scales;
    uint16_t canonical;      /* the baseline word */
    const int8_t *canonical_q; /* the baseline codes */
} nf_search_group;

/* Searches one group: returns the chosen word and writes its n codes to q. */
typedef uint16_t (*nf_search_group_fn)(const nf_search_group *g, int8_t *q);

/* Portable C (the scalar level). */
uint16_t nf_search_group_portable(const nf_search_group *g, int8_t *q);
/* Defined only on x86-64 GCC/Clang builds; call only when common/cpu.h says the CPU has them. */
uint16_t nf_search_group_avx2(const nf_search_group *g, int8_t *q);
uint16_t nf_search_group_avx512(const nf_search_group *g, int8_t *q);

/* The kernel of the active level (common/cpu.h); never NULL. */
nf_search_group_fn nf_search_group_kernel(void);

/* The reference: grouped_search one candidate at a time, as conversion.md 5.4 writes it.  Same
 * contract as nf_grouped_search_rows; kept for the tests of the fast paths. */
nf_status nf_grouped_search_rows_reference(const nf_format *fmt, const nf_method_params *params,
                                           const nf_src_rows *src, nf_words *out, nf_error *err);

#endif
