/* Fast paths of ggml_quantize's IQ2 searches (docs/methods.md "ggml_quantize"), internal.
 *
 * ggml_iq2.c keeps the scalar reference (iq2_trials_scalar).  A group of IQ2_XXS (32 values, 13
 * trial scales) or IQ2_XS / IQ2_S (16 values, 19 trial scales) rounds its 8-value points at every
 * trial scale, replaces a point off the grid by its nearest listed neighbour, and sums the
 * least-squares fit of each trial.  The trials are independent until the best one is chosen (in
 * ggml_iq2.c, in trial order, at every level), so the vector kernels give each trial a lane for
 * the rounding, the grid lookup and the sums; a neighbour search gives each neighbour a lane.
 * Every lane performs exactly the scalar binary32 sequence of its trial or neighbour: the same
 * operations in the same order (sums in element order, no FMA: the build has
 * -ffp-contract=off; ggml's rounding by 1.5 * 2^23), and the search keeps the first neighbour of
 * least distance, as the scalar does.  A neighbour's distance is a sum over its 8 values of one
 * of 4 terms per value (its level is 0 .. 2), each computed once per search by the scalar's own
 * operations and then looked up per lane, so the sums are the scalar's bit for bit.
 * tests/unit/test_method_ggml_iq2_simd.c compares every level's bytes with the scalar ones.
 *
 * The table follows common/cpu.h (one instance per level, NINFER_SIMD a ceiling). */
#ifndef NF_METHOD_SIMD_GGML_IQ2_SIMD_H
#define NF_METHOD_SIMD_GGML_IQ2_SIMD_H

#include <stdbool.h>
#include <stdint.h>

#include "common/cpu.h"
#include "method/ggml_grid.h"

/* Trials a kernel takes at most, and the room of its per-trial arrays (a multiple of every
 * level's lane count). */
#define NF_IQ2_MAX_TRIALS 19
#define NF_IQ2_TRIAL_ROOM 32
#define NF_IQ2_MAX_POINTS 4

typedef struct nf_iq2_kernels {
    const char *name;
    /* For each trial t < ntrial: the npoint (<= NF_IQ2_MAX_POINTS) points of 8 magnitudes xval
     * rounded to levels at the inverse scale id[t], a point off grid g replaced by its listed
     * neighbour of least distance at scale[t] under the weights waux; the code (ggml_grid.h) of
     * point k, a grid point's, to code[k * NF_IQ2_TRIAL_ROOM + t], whether it was on the grid to
     * on[k * NF_IQ2_TRIAL_ROOM + t], and sum w x q, sum w q^2 (q = 2l + 1, weights w) over the
     * 8 npoint values to sumqx[t], sumq2[t].  id and scale hold NF_IQ2_TRIAL_ROOM entries (those
     * past ntrial are read and ignored).  False when a point has no neighbour below FLT_MAX
     * (ggml aborts); the outputs are then undefined. */
    bool (*trials)(const nf_ggml_grid *g, int npoint, int ntrial, const float *id, const float *scale,
                   const float *xval, const float *w, const float *waux, uint16_t *code, bool *on, float *sumqx,
                   float *sumq2);
    /* The code of the first listed neighbour of least distance sum_i waux_i (scale q_i -
     * x_i)^2 to the 8 magnitudes xval, for an off-grid code whose map entry is m (< 0); -1 when
     * no distance is below FLT_MAX.  gq_grid_nearest's choice, for the final refit. */
    int32_t (*nearest)(const nf_ggml_grid *g, int32_t m, const float *xval, const float *waux, float scale);
    /* The weights of n values (a multiple of 16): w = qw * sqrt(s2 + x^2), or without qw (NULL)
     * IQ2_S's s2 / 4 + x^2, and waux = sqrt(w), in ggml's operations. */
    void (*weights)(int n, const float *x, const float *qw, float s2, float *w, float *waux);
    /* Step 1 of ggml_iq2.c for n values (a multiple of 8): the magnitudes to xval and each 8
     * values' sign bits to s[k] (bit i: value 8k + i is negative or NaN); with parity, an odd
     * count of negatives flips the value of least w x x (the first on a tie, the first value
     * when its own product is NaN): its xval negated, its bit toggled. */
    void (*signs)(int n, const float *x, const float *w, bool parity, float *xval, uint8_t *s);
} nf_iq2_kernels;

extern const nf_iq2_kernels nf_iq2_kernels_scalar;
#if NF_X86_KERNELS
extern const nf_iq2_kernels nf_iq2_kernels_avx2;
extern const nf_iq2_kernels nf_iq2_kernels_avx512;
#endif
#if NF_ARM_KERNELS
extern const nf_iq2_kernels nf_iq2_kernels_neon; /* simd/ggml_iq2_neon.c */
#endif

const nf_iq2_kernels *nf_iq2_kernels_for(nf_simd_level level);
const nf_iq2_kernels *nf_iq2_kernels_active(void);

#endif
