/* ggml_quantize's encoders of the 2-bit i-quants, IQ2_XXS, IQ2_XS and IQ2_S (docs/methods.md
 * "ggml_quantize"): ggml's quantize_row_iq2_{xxs,xs,s}_impl of ggml-org/ggml d99724f2, rewritten.
 *
 * A super-block of 256 values is cut into groups of 32 (IQ2_XXS) or 16 values, each with its own
 * scale; a group's magnitudes are coded as points of ggml's grid of 8-value points (levels 0, 1,
 * 2 standing for 1, 3, 5 times the scale; ggml_grid.h), its signs as sign bits.  For a group:
 *   1. signs: magnitudes xval = |x|; IQ2_XXS and IQ2_XS store 7 sign bits per 8 values (the 8th
 *      is the parity), so with an odd count of negatives the value of least w * x^2 is flipped;
 *   2. search: for a range of trial inverse scales, each 8 values are rounded to levels; a point
 *      off the grid is replaced by the neighbour of least weighted error; the trial whose
 *      least-squares fit sum(w x q)^2 / sum(w q^2) is largest strictly wins (earlier trials win
 *      ties);
 *   3. the winning scale is refitted once from the codes it gives;
 *   4. the super-block's d = largest group scale / 31 (IQ2_S: stored times 0.9875), and each
 *      group scale becomes a 4-bit code (2l + 1) * d / 2.
 * Steps 2 and 3 run through the kernels of simd/ggml_iq2_simd.h (chosen once per super-block,
 * common/cpu.h): this file keeps their scalar reference (iq2_trials_scalar, iq2_nearest_scalar),
 * and the best trial is chosen here, in trial order, whatever the level.
 * Every binary32 operation is written in ggml's order (ggml_encoders.h).  Where ggml would abort
 * (a point left off the grid, a scale that is NaN: only for values whose squares overflow), an
 * encoder returns GQ_GGML_ABORTS and the method refuses the block. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "method/ggml_grid.h"
#include "method/ggml_encoders.h"
#include "method/simd/ggml_iq2_simd.h"

#define IQ2_MAXQ 3         /* levels 0 .. IQ2_MAXQ - 1 (ggml's kMaxQ) */
#define IQ2_XXS_EPS 1e-15f /* a group below this largest magnitude is all zero */
#define IQ2_S_EPS 1e-8f    /* the same for IQ2_S */

/* ggml's MAX macro, operand order kept (it decides which of +0 / -0, or a NaN, survives). */
static inline float iq2_max(float a, float b) { return a > b ? a : b; }

static inline int iq2_level(float id, float xv) { return gq_clamp(gq_nearest(0.5f * (id * xv - 1)), 0, IQ2_MAXQ - 1); }

/* The scalar reference of the nearest kernel (simd/ggml_iq2_simd.h): the code of the neighbour
 * of least weighted error sum_i w_i (scale * q_i - x_i)^2, where q = 2l + 1 of the point's
 * levels, the first one on a tie; -1 when no error is below FLT_MAX (a NaN weight: ggml aborts). */
static int32_t iq2_nearest_scalar(const nf_ggml_grid *g, int32_t m, const float *xval, const float *w, float scale)
{
    const uint16_t *nb = nf_ggml_grid_neighbours(g, m);
    int8_t L[8];
    if (gq_grid_nearest(g->level, 8, nb + 1, nb[0], xval, w, scale, L) < 0) return -1;
    uint8_t lv[8];
    for (int i = 0; i < 8; i++) lv[i] = (uint8_t)L[i];
    return (int32_t)nf_ggml_grid_code(lv);
}

/* The levels of the point of code c into L. */
static void iq2_levels(uint32_t c, int8_t *L)
{
    for (int i = 0; i < 8; i++) L[i] = (int8_t)(c >> 2 * i & 3u);
}

/* Rounds 8 magnitudes to levels with the inverse scale id into L; a point off the grid is
 * replaced by its nearest neighbour at scale (kern's search).  The code of the point (on the
 * grid), or -1 when no neighbour is found (ggml aborts).  *on_grid tells whether the rounded
 * point was on the grid. */
static int32_t iq2_point(const nf_iq2_kernels *kern, const nf_ggml_grid *g, const float *xval, const float *waux,
                         float id, float scale, int8_t *L, bool *on_grid)
{
    uint8_t lv[8];
    for (int i = 0; i < 8; i++) {
        lv[i] = (uint8_t)iq2_level(id, xval[i]);
        L[i] = (int8_t)lv[i];
    }
    uint32_t c = nf_ggml_grid_code(lv);
    int32_t m = g->map[c];
    *on_grid = m >= 0;
    if (m >= 0) return (int32_t)c;
    int32_t at = kern->nearest(g, m, xval, waux, scale);
    if (at >= 0) iq2_levels((uint32_t)at, L);
    return at;
}

/* The grid index of 8 levels, or -1 off the grid. */
static int32_t iq2_index(const nf_ggml_grid *g, const int8_t *L)
{
    uint8_t lv[8];
    for (int i = 0; i < 8; i++) lv[i] = (uint8_t)L[i];
    return g->map[nf_ggml_grid_code(lv)];
}

/* sum w x q and sum w q^2 over n values with q = 2L + 1. */
static void iq2_sums(int n, const float *w, const float *xval, const int8_t *L, float *sumqx, float *sumq2)
{
    float sx = 0.0f, s2 = 0.0f;
    for (int i = 0; i < n; i++) {
        float q = gq_f(2 * L[i] + 1);
        sx += w[i] * xval[i] * q;
        s2 += w[i] * q * q;
    }
    *sumqx = sx;
    *sumq2 = s2;
}

/* Step 1 for 8 values: magnitudes into xval, the sign bits returned; with parity, an odd count
 * of negatives flips the value of least w * x^2 (the first on a tie). */
static unsigned iq2_signs(const float *x, const float *w, bool parity, float *xval)
{
    unsigned s = 0;
    int nflip = 0;
    for (int i = 0; i < 8; i++) {
        if (x[i] >= 0) {
            xval[i] = x[i];
        } else {
            xval[i] = -x[i];
            nflip++;
            s |= 1u << i;
        }
    }
    if (parity && nflip % 2) {
        int imin = 0;
        float min = w[0] * x[0] * x[0];
        for (int i = 1; i < 8; i++) {
            float ax = w[i] * x[i] * x[i];
            if (ax < min) {
                min = ax;
                imin = i;
            }
        }
        xval[imin] = -xval[imin];
        s ^= 1u << imin;
    }
    return s;
}

/* The scalar reference of the trials kernel (simd/ggml_iq2_simd.h): each trial's points and
 * sums, as ggml computes them inside its loop over trial scales. */
static bool iq2_trials_scalar(const nf_ggml_grid *g, int npoint, int ntrial, const float *id, const float *scale,
                              const float *xval, const float *w, const float *waux, uint16_t *code, bool *on,
                              float *sumqx, float *sumq2)
{
    int8_t L[8 * NF_IQ2_MAX_POINTS];
    for (int t = 0; t < ntrial; t++) {
        for (int k = 0; k < npoint; k++) {
            int32_t at = iq2_point(&nf_iq2_kernels_scalar, g, xval + 8 * k, waux + 8 * k, id[t], scale[t], L + 8 * k,
                                   &on[k * NF_IQ2_TRIAL_ROOM + t]);
            if (at < 0) return false;
            code[k * NF_IQ2_TRIAL_ROOM + t] = (uint16_t)at;
        }
        iq2_sums(8 * npoint, w, xval, L, &sumqx[t], &sumq2[t]);
    }
    return true;
}

/* The scalar reference of the signs kernel (simd/ggml_iq2_simd.h): step 1 for n values. */
static void iq2_signs_scalar(int n, const float *x, const float *w, bool parity, float *xval, uint8_t *s)
{
    for (int k = 0; k < n / 8; k++) s[k] = (uint8_t)iq2_signs(x + 8 * k, w + 8 * k, parity, xval + 8 * k);
}

/* The scalar reference of the weights kernel (simd/ggml_iq2_simd.h). */
static void iq2_weights_scalar(int n, const float *x, const float *qw, float s2, float *w, float *waux)
{
    for (int i = 0; i < n; i++) {
        w[i] = qw ? qw[i] * sqrtf(s2 + x[i] * x[i]) : 0.25f * s2 + x[i] * x[i];
        waux[i] = sqrtf(w[i]);
    }
}

const nf_iq2_kernels nf_iq2_kernels_scalar = {.name = "scalar",
                                              .trials = iq2_trials_scalar,
                                              .nearest = iq2_nearest_scalar,
                                              .weights = iq2_weights_scalar,
                                              .signs = iq2_signs_scalar};

NF_SIMD_SELECTOR(nf_iq2_kernels, nf_iq2_kernels, nf_iq2_kernels_scalar, nf_iq2_kernels_avx2, nf_iq2_kernels_avx512,
                 nf_iq2_kernels_neon)

/* Step 2 for ntrial trial inverse scales id (NF_IQ2_TRIAL_ROOM entries, 0 past ntrial; the
 * scales are their reciprocals): the best trial into *best_trial (-1 when no trial has sumq2 > 0
 * and sumqx^2 > best sumq2), its points' levels into L, the scale of its fit into *scale and its
 * points' grid flags into on (the three unchanged without a best trial).  False where ggml
 * aborts. */
static bool iq2_search(const nf_iq2_kernels *kern, const nf_ggml_grid *g, int npoint, int ntrial, const float *id,
                       const float *xval, const float *w, const float *waux, int8_t *L, bool *on, float *scale,
                       int *best_trial)
{
    float sc[NF_IQ2_TRIAL_ROOM], sumqx[NF_IQ2_TRIAL_ROOM], sumq2[NF_IQ2_TRIAL_ROOM];
    uint16_t code[NF_IQ2_MAX_POINTS * NF_IQ2_TRIAL_ROOM];
    bool on_t[NF_IQ2_MAX_POINTS * NF_IQ2_TRIAL_ROOM];
    for (int t = 0; t < NF_IQ2_TRIAL_ROOM; t++) sc[t] = t < ntrial ? 1 / id[t] : 0.0f;
    if (!kern->trials(g, npoint, ntrial, id, sc, xval, w, waux, code, on_t, sumqx, sumq2)) return false;
    float best = 0.0f;
    *best_trial = -1;
    for (int t = 0; t < ntrial; t++)
        if (sumq2[t] > 0 && sumqx[t] * sumqx[t] > best * sumq2[t]) {
            *scale = sumqx[t] / sumq2[t];
            best = *scale * sumqx[t];
            *best_trial = t;
        }
    if (*best_trial >= 0)
        for (int k = 0; k < npoint; k++) {
            iq2_levels(code[k * NF_IQ2_TRIAL_ROOM + *best_trial], L + 8 * k);
            on[k] = on_t[k * NF_IQ2_TRIAL_ROOM + *best_trial];
        }
    return true;
}

/* The mean square of a super-block, as ggml sums it (times `times`: IQ2_S takes twice it). */
static float iq2_sigma2(const float *x, float times)
{
    float sumx2 = 0.0f;
    for (unsigned i = 0; i < GQ_SUPER; i++) sumx2 += x[i] * x[i];
    return times * sumx2 / gq_f((int)GQ_SUPER);
}

/* ---------------------------------------------------------------- IQ2_XXS */

/* One group of 32 of IQ2_XXS: its scale in *scale (0 for a zero group), its 4 grid indices and
 * 4 x 7 sign bits into q2[0], q2[1] (the scale code is added by the caller). */
static gq_fail iq2_xxs_group(const nf_iq2_kernels *kern, const nf_ggml_grid *g, const float *xb, const float *w,
                             const float *waux, float *out_scale, uint32_t *q2)
{
    float xval[32];
    int8_t L[32];
    unsigned signs[4];
    uint8_t sb[4];
    kern->signs(32, xb, w, true, xval, sb);
    for (int k = 0; k < 4; k++) signs[k] = sb[k] & 127u;
    float max = xval[0];
    for (int i = 1; i < 32; i++) max = iq2_max(max, xval[i]);
    *out_scale = 0.0f;
    if (max < IQ2_XXS_EPS) return GQ_OK;
    uint8_t Lqp[32];
    float scale = nf_method_gq_fit_positive(32, IQ2_MAXQ + 1, xval, Lqp, w);
    float eff_max = scale * gq_f(IQ2_MAXQ);
    if (eff_max <= 0) return GQ_OK;
    float ids[NF_IQ2_TRIAL_ROOM] = {0};
    for (int is = -6; is <= 6; is++) ids[is + 6] = (gq_f(2 * IQ2_MAXQ - 1) + gq_f(is) * 0.1f) / eff_max;
    bool on_best[4];
    int best_trial;
    if (!iq2_search(kern, g, 4, 13, ids, xval, w, waux, L, on_best, &scale, &best_trial)) return GQ_GGML_ABORTS;
    bool have_L = best_trial >= 0;
    if (scale > 0) {
        float id = 1 / scale;
        bool on;
        for (int k = 0; k < 4; k++)
            if (iq2_point(kern, g, xval + 8 * k, waux + 8 * k, id, scale, L + 8 * k, &on) < 0) return GQ_GGML_ABORTS;
        float sumqx, sumq2;
        iq2_sums(32, w, xval, L, &sumqx, &sumq2);
        if (sumq2 > 0) scale = sumqx / sumq2;
    } else if (!have_L) {
        return GQ_GGML_ABORTS; /* ggml would look up make_qp_quants' codes, which need not be points */
    }
    if (scale < 0) {
        scale = -scale;
        for (int k = 0; k < 4; k++) signs[k] = ~signs[k] & 127u;
    }
    for (int k = 0; k < 4; k++) {
        int32_t index = iq2_index(g, L + 8 * k);
        if (index < 0) return GQ_GGML_ABORTS;
        q2[0] |= (uint32_t)index << 8 * k;
        q2[1] |= signs[k] << 7 * k;
    }
    if (!(scale >= 0)) return GQ_GGML_ABORTS;
    *out_scale = scale;
    return GQ_OK;
}

/* IQ2_XXS, 66 bytes: d, then per group of 32 two little-endian words: 4 grid indices (a byte
 * each), and 4 x 7 sign bits with the 4-bit scale code in the top 4 bits.  ggml quantizes it
 * only with an importance vector (weights imp * sqrt(mean square + x^2)). */
gq_fail nf_ggml_enc_iq2_xxs(const float *x, const float *qw, float sigma2, uint8_t *b)
{
    (void)sigma2;
    const nf_ggml_grid *g = nf_ggml_grid_get(NF_GGML_GRID8_IQ2XXS);
    if (!g) return GQ_NO_MEMORY;
    if (!qw) return GQ_NEEDS_IMATRIX;
    const nf_iq2_kernels *kern = nf_iq2_kernels_active();
    uint32_t q2[16] = {0};
    float scales[8], w[GQ_SUPER], waux[GQ_SUPER];
    float max_scale = 0.0f;
    kern->weights((int)GQ_SUPER, x, qw, iq2_sigma2(x, 1.0f), w, waux);
    for (int ib = 0; ib < 8; ib++) {
        gq_fail st = iq2_xxs_group(kern, g, x + 32 * ib, w + 32 * ib, waux + 32 * ib, &scales[ib], q2 + 2 * ib);
        if (st != GQ_OK) return st;
        max_scale = iq2_max(max_scale, scales[ib]);
    }
    memset(b, 0, 66);
    if (max_scale != 0.0f) {
        float d = max_scale / 31;
        gq_put_f16(b, d);
        float id = 1 / d;
        for (int ib = 0; ib < 8; ib++)
            q2[2 * ib + 1] |= (uint32_t)gq_clamp(gq_nearest(0.5f * (id * scales[ib] - 1)), 0, 15) << 28;
        for (int j = 0; j < 16; j++)
            for (int byte = 0; byte < 4; byte++) b[2 + 4 * j + byte] = (uint8_t)(q2[j] >> 8 * byte & 0xFFu);
    }
    return GQ_OK;
}

/* ---------------------------------------------------------------- IQ2_XS and IQ2_S */

/* What differs between IQ2_XS and IQ2_S in their groups of 16. */
typedef struct iq2_kind {
    bool parity;    /* 7 sign bits and a flip (IQ2_XS) or 8 sign bits (IQ2_S) */
    unsigned smask; /* the sign bits kept */
    float eps;      /* a group whose largest magnitude is below this is all zero */
} iq2_kind;

/* One group of 16: its scale (0 for a zero group), its 2 grid indices and sign bytes. */
static gq_fail iq2_pair_group(const nf_iq2_kernels *kern, const nf_ggml_grid *g, const iq2_kind *kind, const float *xb,
                              const float *w, const float *waux, float *out_scale, int32_t *index, unsigned *signs)
{
    float xval[16];
    int8_t L[16] = {0};
    bool on[2] = {true, true};
    uint8_t sb[2];
    kern->signs(16, xb, w, kind->parity, xval, sb);
    for (int k = 0; k < 2; k++) signs[k] = sb[k] & kind->smask;
    float max = xval[0];
    for (int i = 1; i < 16; i++) max = iq2_max(max, xval[i]);
    *out_scale = 0.0f;
    if (max < kind->eps) {
        signs[0] = signs[1] = 0; /* ggml stores nothing for a zero group */
        return GQ_OK;
    }
    float scale = max / gq_f(2 * IQ2_MAXQ - 1);
    float ids[NF_IQ2_TRIAL_ROOM] = {0};
    for (int is = -9; is <= 9; is++) ids[is + 9] = (gq_f(2 * IQ2_MAXQ - 1) + gq_f(is) * 0.1f) / max;
    int best_trial;
    if (!iq2_search(kern, g, 2, 19, ids, xval, w, waux, L, on, &scale, &best_trial)) return GQ_GGML_ABORTS;
    if ((!on[0] || !on[1]) && scale > 0) {
        /* only the points the search had to move off are rounded again, at the best scale */
        float id = 1 / scale;
        bool on_now;
        for (int k = 0; k < 2; k++)
            if (!on[k] && iq2_point(kern, g, xval + 8 * k, waux + 8 * k, id, scale, L + 8 * k, &on_now) < 0)
                return GQ_GGML_ABORTS;
        float sumqx, sumq2;
        iq2_sums(16, w, xval, L, &sumqx, &sumq2);
        if (sumq2 > 0) scale = sumqx / sumq2;
    }
    if (scale < 0) {
        scale = -scale;
        for (int k = 0; k < 2; k++) signs[k] = ~signs[k] & kind->smask;
    }
    for (int k = 0; k < 2; k++) {
        index[k] = iq2_index(g, L + 8 * k);
        if (index[k] < 0) return GQ_GGML_ABORTS;
    }
    if (!(scale >= 0)) return GQ_GGML_ABORTS;
    *out_scale = scale;
    return GQ_OK;
}

/* The 16 group scales of a super-block of IQ2_XS or IQ2_S (weights w: imp * sqrt(s2 + x^2),
 * or without imp IQ2_S's s2 / 4 + x^2), their grid indices and sign bytes; *max_scale the
 * largest scale. */
static gq_fail iq2_pair_groups(const nf_ggml_grid *g, const iq2_kind *kind, const float *x, const float *qw, float s2,
                               float *scales, int32_t *index, unsigned *signs, float *max_scale)
{
    const nf_iq2_kernels *kern = nf_iq2_kernels_active();
    float w[GQ_SUPER], waux[GQ_SUPER];
    kern->weights((int)GQ_SUPER, x, qw, s2, w, waux);
    *max_scale = 0.0f;
    for (int ib = 0; ib < 16; ib++) {
        const float *xb = x + 16 * ib;
        index[2 * ib] = index[2 * ib + 1] = 0;
        signs[2 * ib] = signs[2 * ib + 1] = 0;
        gq_fail st = iq2_pair_group(kern, g, kind, xb, w + 16 * ib, waux + 16 * ib, &scales[ib], index + 2 * ib,
                                    signs + 2 * ib);
        if (st != GQ_OK) return st;
        *max_scale = iq2_max(*max_scale, scales[ib]);
    }
    return GQ_OK;
}

/* The 4-bit code of each group scale under d, two per byte (low nibble first) into s. */
static void iq2_scale_codes(const float *scales, float d, uint8_t *s)
{
    float id = 1 / d;
    for (int ib = 0; ib < 16; ib++) {
        unsigned l = (unsigned)gq_clamp(gq_nearest(0.5f * (id * scales[ib] - 1)), 0, 15);
        s[ib / 2] = (uint8_t)(ib % 2 ? s[ib / 2] | l << 4 : l);
    }
}

/* IQ2_XS, 74 bytes: d, 32 little-endian words (a 9-bit grid index and 7 sign bits per 8
 * values), 8 bytes of two 4-bit scale codes.  ggml quantizes it only with an importance
 * vector. */
gq_fail nf_ggml_enc_iq2_xs(const float *x, const float *qw, float sigma2, uint8_t *b)
{
    (void)sigma2;
    static const iq2_kind kind = {true, 127u, IQ2_XXS_EPS};
    const nf_ggml_grid *g = nf_ggml_grid_get(NF_GGML_GRID8_IQ2XS);
    if (!g) return GQ_NO_MEMORY;
    if (!qw) return GQ_NEEDS_IMATRIX;
    float scales[16], max_scale;
    int32_t index[32];
    unsigned signs[32];
    gq_fail st = iq2_pair_groups(g, &kind, x, qw, iq2_sigma2(x, 1.0f), scales, index, signs, &max_scale);
    if (st != GQ_OK) return st;
    memset(b, 0, 74);
    if (max_scale == 0.0f) return GQ_OK;
    gq_put_f16(b, max_scale / 31);
    for (int j = 0; j < 32; j++) {
        unsigned q = (unsigned)index[j] | signs[j] << 9;
        b[2 + 2 * j] = (uint8_t)(q & 0xFFu);
        b[3 + 2 * j] = (uint8_t)(q >> 8);
    }
    iq2_scale_codes(scales, max_scale / 31, b + 66);
    return GQ_OK;
}

/* IQ2_S, 82 bytes: d (stored times 0.9875), the low 8 bits of the 32 grid indices, 32 sign
 * bytes, 8 bytes of the indices' top 2 bits (four per byte), 8 bytes of two 4-bit scale codes.
 * Without an importance vector the weights are mean square / 2 + x^2 (ggml's sigma2 of IQ2_S is
 * twice the mean square). */
gq_fail nf_ggml_enc_iq2_s(const float *x, const float *qw, float sigma2, uint8_t *b)
{
    (void)sigma2;
    static const iq2_kind kind = {false, 255u, IQ2_S_EPS};
    const nf_ggml_grid *g = nf_ggml_grid_get(NF_GGML_GRID8_IQ2S);
    if (!g) return GQ_NO_MEMORY;
    float scales[16], max_scale;
    int32_t index[32];
    unsigned signs[32];
    gq_fail st = iq2_pair_groups(g, &kind, x, qw, iq2_sigma2(x, 2.0f), scales, index, signs, &max_scale);
    if (st != GQ_OK) return st;
    memset(b, 0, 82);
    for (int j = 0; j < 32; j++) {
        b[2 + j] = (uint8_t)(index[j] & 0xFF);
        b[34 + j] = (uint8_t)signs[j];
        b[66 + j / 4] = (uint8_t)(b[66 + j / 4] | (unsigned)(index[j] >> 8) << 2 * (j % 4));
    }
    if (max_scale == 0.0f) return GQ_OK;
    float d = max_scale / 31;
    gq_put_f16(b, d * 0.9875f);
    iq2_scale_codes(scales, d, b + 74);
    return GQ_OK;
}
