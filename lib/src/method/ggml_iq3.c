/* ggml_quantize's IQ3_XXS and IQ3_S block encoders (docs/methods.md "ggml_quantize"): the bytes
 * of ggml's quantize_iq3_xxs and quantize_iq3_s at the ggml version docs/methods.md names, with
 * and without an importance vector (ggml allows both).
 *
 * Each 32-value group is fitted on its magnitudes: signs apart, a scale is searched over trial
 * inverse scales, the 4-value points of each trial's codes are moved onto ggml's grid through its
 * neighbour lists (method/ggml_grid3.h), and the weighted least-squares scale of the best trial
 * is kept; the group scales are then coded in 4 bits under the block's d.  Every binary32
 * operation is ggml's, in ggml's order (docs/library.md "Build flags": no contraction), and so
 * are ggml's quirks where they decide bytes -- for IQ3_S, an all-zero group does not advance the
 * places of the later groups' indices and signs, as in ggml.
 *
 * Layering: part of the method module, below ggml_quant.c (the row driver) and above
 * ggml_grid3.c. */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "method/ggml_grid3.h"
#include "method/ggml_encoders.h"
#include "method/simd/ggml_simd.h"

#define GQ3_GROUP 32u /* values of a group, one 4-bit scale each */
#define GQ3_NMAX 8    /* levels of a value: ggml's kMaxQ */

/* What differs between the two types' group fits (ggml's quantize_row_iq3_xxs_impl and
 * quantize_row_iq3_s_impl). */
typedef struct gq3_kind {
    nf_format_id grid; /* whose grid */
    int ntry;          /* trial inverse scales (15 + 0.2 is) / max for is in [-ntry, ntry] */
    bool xxs;          /* IQ3_XXS's rules: 7 sign bits per 8 values (an even count of minus
                        * signs), groups below 1e-8 skipped, and only the off-grid points coded
                        * again from the fitted scale */
} gq3_kind;

static const gq3_kind gq3_xxs = {NF_FMT_GGUF_IQ3_XXS, 15, true};
static const gq3_kind gq3_s = {NF_FMT_GGUF_IQ3_S, 9, false};

/* One fitted group: its scale (0 for a group ggml skips), grid indices and sign bytes. */
typedef struct gq3_fit {
    float scale;
    bool skipped;
    int index[GQ3_GROUP / 4];
    uint8_t signs[GQ3_GROUP / 8];
} gq3_fit;

/* The grid point of list[0..n) nearest xval at scale, by the weights w (ggml's
 * iq3_find_best_neighbour: the first one on a tie); its levels go to L.  -1 when no distance is
 * below FLT_MAX, where ggml stops with an assertion. */
static int gq3_best_neighbour(const nf_gq3_grid *g, const uint16_t *list, unsigned n, const float *xval, const float *w,
                              float scale, int8_t *L)
{
    return gq_grid_nearest(&g->level[0][0], 4, list, n, xval, w, scale, L);
}

/* The levels of 4 values at inverse scale id, clamped to the grid's range. */
static void gq3_levels(const float *xval, float id, int8_t *L)
{
    for (int i = 0; i < 4; i++) L[i] = (int8_t)gq_clamp(gq_nearest(0.5f * (id * xval[i] - 1)), 0, GQ3_NMAX - 1);
}

/* The levels of 4 values at inverse scale id, moved to the nearest grid point at scale when off
 * the grid.  Returns 1 on the grid, 0 moved to it, -1 when no neighbour could be chosen. */
static int gq3_point(const nf_gq3_grid *g, const float *xval, const float *waux, float id, float scale, int8_t *L)
{
    gq3_levels(xval, id, L);
    unsigned key = nf_gq3_key(L);
    if (nf_gq3_point(g, key) >= 0) return 1;
    unsigned n;
    const uint16_t *list = nf_gq3_neighbours(g, key, &n);
    return gq3_best_neighbour(g, list, n, xval, waux, scale, L) >= 0 ? 0 : -1;
}

/* sum w x q and sum w q^2 over the group, q = 2 L + 1. */
static void gq3_sums(const float *w, const float *xval, const int8_t *L, float *sumqx, float *sumq2)
{
    float qx = 0.0f, q2 = 0.0f;
    for (unsigned i = 0; i < GQ3_GROUP; i++) {
        float q = gq_f(2 * L[i] + 1);
        qx += w[i] * xval[i] * q;
        q2 += w[i] * q * q;
    }
    *sumqx = qx;
    *sumq2 = q2;
}

bool nf_gq3_trials_ref(const nf_gq3_grid *g, int nt, const float *id, const float *scale, const float *xval,
                       const float *waux, const float *w, int8_t *L, uint32_t *on_grid, float *sumqx, float *sumq2)
{
    for (unsigned k = 0; k < GQ3_GROUP / 4; k++) on_grid[k] = 0;
    for (unsigned t = 0; t < (unsigned)nt; t++) {
        int8_t Lt[GQ3_GROUP];
        for (unsigned k = 0; k < GQ3_GROUP / 4; k++) {
            int on = gq3_point(g, xval + 4 * k, waux + 4 * k, id[t], scale[t], Lt + 4 * k);
            if (on < 0) return false;
            on_grid[k] |= (uint32_t)(on == 1) << t;
        }
        gq3_sums(w, xval, Lt, &sumqx[t], &sumq2[t]);
        for (unsigned i = 0; i < GQ3_GROUP; i++) L[NF_GQ3_TRIAL_STRIDE * i + t] = Lt[i];
    }
    return true;
}

/* The magnitudes xval of a group and its sign bytes; for IQ3_XXS an odd count of minus signs in
 * 8 values is made even by flipping the value of least w x^2 (its xval turns negative). */
static void gq3_signs(const gq3_kind *kind, const float *xb, const float *w, float *xval, uint8_t *signs)
{
    for (unsigned k = 0; k < GQ3_GROUP / 8; k++) {
        unsigned s = 0, nflip = 0;
        for (unsigned i = 0; i < 8; i++) {
            /* ggml: x >= 0 keeps x, anything else (NaN too) is negated and its sign bit set --
             * here without a branch, the sign flipped in the bits as C's negation flips it */
            const unsigned neg = !(xb[8 * k + i] >= 0);
            uint32_t bits;
            memcpy(&bits, &xb[8 * k + i], sizeof bits);
            bits ^= (uint32_t)neg << 31;
            memcpy(&xval[8 * k + i], &bits, sizeof bits);
            nflip += neg;
            s |= neg << i;
        }
        if (kind->xxs && nflip % 2) {
            unsigned imin = 0;
            float min = w[8 * k] * xb[8 * k] * xb[8 * k];
            for (unsigned i = 1; i < 8; i++) {
                float ax = w[8 * k + i] * xb[8 * k + i] * xb[8 * k + i];
                if (ax < min) {
                    min = ax;
                    imin = i;
                }
            }
            xval[8 * k + imin] = -xval[8 * k + imin];
            s ^= 1u << imin;
        }
        signs[k] = (uint8_t)(kind->xxs ? s & 127u : s);
    }
}

/* Codes the group again from its fitted *scale -- IQ3_XXS the points off the grid, IQ3_S all --
 * and fits the scale again on the new levels (ggml's second pass).  That is one more trial, at
 * the inverse scale 1 / *scale, so the trial kernel runs it (its levels and sums are the
 * reference's); IQ3_XXS keeps its on-grid points' levels and sums again.  Where the kernel fails
 * (a point without a neighbour below FLT_MAX) the points go one by one as ggml takes them, since
 * IQ3_XXS does not search the points it keeps.  False where ggml stops with an assertion. */
static bool gq3_refit(const gq3_kind *kind, const nf_gq3_grid *g, const float *xval, const float *waux, const float *w,
                      const bool *on_grid, int8_t *L, float *scale)
{
    const float id = 1 / *scale;
    int8_t Lt[NF_GQ3_TRIAL_STRIDE * GQ3_GROUP];
    uint32_t on_t[GQ3_GROUP / 4];
    float sumqx, sumq2;
    if (nf_gq_kernels_current()->iq3_trials(g, 1, &id, scale, xval, waux, w, Lt, on_t, &sumqx, &sumq2)) {
        for (unsigned i = 0; i < GQ3_GROUP; i++)
            if (!(kind->xxs && on_grid[i / 4])) L[i] = Lt[NF_GQ3_TRIAL_STRIDE * i];
        if (kind->xxs) gq3_sums(w, xval, L, &sumqx, &sumq2);
    } else {
        for (unsigned k = 0; k < GQ3_GROUP / 4; k++) {
            if (kind->xxs && on_grid[k]) continue;
            if (gq3_point(g, xval + 4 * k, waux + 4 * k, id, *scale, L + 4 * k) < 0) return false;
        }
        gq3_sums(w, xval, L, &sumqx, &sumq2);
    }
    if (sumq2 > 0) *scale = sumqx / sumq2;
    return true;
}

/* Fits one group of 32 values with weights w (ggml's group loop).  False where ggml stops with an
 * assertion: no neighbour within binary32 range, or a scale that is NaN. */
static bool gq3_fit_group(const gq3_kind *kind, const nf_gq3_grid *g, const float *xb, const float *w, gq3_fit *f)
{
    float xval[GQ3_GROUP], waux[GQ3_GROUP];
    int8_t L[GQ3_GROUP];
    bool on_grid[GQ3_GROUP / 4];
    for (unsigned i = 0; i < GQ3_GROUP; i++) waux[i] = sqrtf(w[i]);
    gq3_signs(kind, xb, w, xval, f->signs);
    float max = xval[0];
    for (unsigned i = 1; i < GQ3_GROUP; i++) max = max > xval[i] ? max : xval[i];
    memset(L, 0, sizeof L);
    /* ggml: IQ3_XXS skips a group below its GROUP_MAX_EPS_IQ3_XXS, IQ3_S only an all-zero one;
     * IQ3_XXS counts every point on the grid until a trial is kept, IQ3_S none */
    f->skipped = kind->xxs ? max < 1e-8f : max == 0.0f;
    if (f->skipped) {
        f->scale = 0.0f;
        return true;
    }
    float best = 0.0f, scale = max / gq_f(2 * GQ3_NMAX - 1);
    for (unsigned k = 0; k < GQ3_GROUP / 4; k++) on_grid[k] = kind->xxs;
    /* the trials are independent until one is kept, so the kernels run them a trial a lane
     * (method/simd/ggml_simd.h); the choice below goes through them in ggml's order */
    const unsigned nt = 2 * (unsigned)kind->ntry + 1;
    float ids[NF_GQ3_MAX_TRIALS], scales[NF_GQ3_MAX_TRIALS], tqx[NF_GQ3_MAX_TRIALS], tq2[NF_GQ3_MAX_TRIALS];
    int8_t Laux[NF_GQ3_TRIAL_STRIDE * GQ3_GROUP];
    uint32_t on_grid_aux[GQ3_GROUP / 4];
    for (unsigned t = 0; t < nt; t++) {
        ids[t] = (gq_f(2 * GQ3_NMAX - 1) + gq_f((int)t - kind->ntry) * 0.2f) / max;
        scales[t] = 1 / ids[t];
    }
    if (!nf_gq_kernels_current()->iq3_trials(g, (int)nt, ids, scales, xval, waux, w, Laux, on_grid_aux, tqx, tq2))
        return false;
    unsigned kept = nt; /* none */
    for (unsigned t = 0; t < nt; t++) {
        if (tq2[t] > 0 && tqx[t] * tqx[t] > best * tq2[t]) {
            scale = tqx[t] / tq2[t];
            best = scale * tqx[t];
            kept = t;
        }
    }
    if (kept < nt) {
        for (unsigned i = 0; i < GQ3_GROUP; i++) L[i] = Laux[NF_GQ3_TRIAL_STRIDE * i + kept];
        for (unsigned k = 0; k < GQ3_GROUP / 4; k++) on_grid[k] = on_grid_aux[k] >> kept & 1u;
    }
    unsigned n_off = 0;
    for (unsigned k = 0; k < GQ3_GROUP / 4; k++) n_off += !on_grid[k];
    if (n_off > 0 && scale > 0 && !gq3_refit(kind, g, xval, waux, w, on_grid, L, &scale)) return false;
    if (scale < 0) {
        /* a negative fit (possible only through IQ3_XXS's flipped value): ggml stores the
         * scale's magnitude and flips every sign */
        scale = -scale;
        for (unsigned k = 0; k < GQ3_GROUP / 8; k++)
            f->signs[k] = (uint8_t)(kind->xxs ? ~f->signs[k] & 127u : ~f->signs[k] & 0xFFu);
    }
    if (isnan(scale)) return false;
    for (unsigned k = 0; k < GQ3_GROUP / 4; k++) {
        f->index[k] = nf_gq3_point(g, nf_gq3_key(L + 4 * k));
        if (f->index[k] < 0) return false;
    }
    f->scale = scale;
    return true;
}

/* Fits the 8 groups of a super-block; the largest scale goes to *max_scale.  Weights x^2, or
 * qw * sqrt(sigma2 + x^2) with sigma2 twice the super-block's mean square. */
static bool gq3_fit_block(const gq3_kind *kind, const float *x, const float *qw, gq3_fit *fits, float *max_scale)
{
    const nf_gq3_grid *g = nf_gq3_grid_of(kind->grid);
    if (!g) return false; /* only with broken grid tables, which tests/unit/test_ggml_grid3.c rules out */
    float sumx2 = 0.0f;
    for (unsigned i = 0; i < GQ_SUPER; i++) sumx2 += x[i] * x[i];
    float sigma2 = 2 * sumx2 / gq_f(GQ_SUPER);
    float w[GQ3_GROUP], ms = 0.0f;
    for (unsigned ib = 0; ib < GQ_SUPER / GQ3_GROUP; ib++) {
        const float *xb = x + GQ3_GROUP * ib;
        for (unsigned i = 0; i < GQ3_GROUP; i++)
            w[i] = qw ? qw[GQ3_GROUP * ib + i] * sqrtf(sigma2 + xb[i] * xb[i]) : xb[i] * xb[i];
        if (!gq3_fit_group(kind, g, xb, w, &fits[ib])) return false;
        if (!fits[ib].skipped) ms = ms > fits[ib].scale ? ms : fits[ib].scale;
    }
    *max_scale = ms;
    return true;
}

/* A group's 4-bit scale code under d's inverse id: nearest (id * scale - 1) / 2. */
static unsigned gq3_scale_code(float id, float scale)
{
    return (unsigned)gq_clamp(gq_nearest(0.5f * (id * scale - 1)), 0, 15);
}

gq_fail nf_ggml_enc_iq3_xxs(const float *x, const float *qw, float sigma2, uint8_t *b)
{
    (void)sigma2;
    gq3_fit fits[GQ_SUPER / GQ3_GROUP];
    float max_scale;
    if (!gq3_fit_block(&gq3_xxs, x, qw, fits, &max_scale)) return GQ_GGML_ABORTS;
    memset(b, 0, 98);
    if (max_scale == 0.0f) return GQ_OK;
    float d = max_scale / 31;
    gq_put_f16(b, d * 1.0125f); /* ggml's fudge factor */
    float id = 1 / d;
    for (unsigned ib = 0; ib < GQ_SUPER / GQ3_GROUP; ib++) {
        const gq3_fit *f = &fits[ib];
        uint32_t word = 0;
        if (!f->skipped) {
            for (unsigned k = 0; k < GQ3_GROUP / 4; k++) b[2 + 8 * ib + k] = (uint8_t)f->index[k];
            for (unsigned k = 0; k < GQ3_GROUP / 8; k++) word |= (uint32_t)f->signs[k] << (7 * k);
        }
        word |= (uint32_t)gq3_scale_code(id, f->scale) << 28;
        for (unsigned j = 0; j < 4; j++) b[66 + 4 * ib + j] = (uint8_t)(word >> (8 * j));
    }
    return GQ_OK;
}

gq_fail nf_ggml_enc_iq3_s(const float *x, const float *qw, float sigma2, uint8_t *b)
{
    (void)sigma2;
    gq3_fit fits[GQ_SUPER / GQ3_GROUP];
    float max_scale;
    if (!gq3_fit_block(&gq3_s, x, qw, fits, &max_scale)) return GQ_GGML_ABORTS;
    memset(b, 0, 110);
    uint8_t *qs = b + 2, *qh = b + 66, *signs = b + 74, *scales = b + 106;
    for (unsigned ib = 0; ib < GQ_SUPER / GQ3_GROUP; ib++) {
        const gq3_fit *f = &fits[ib];
        /* ggml advances the places of indices and signs only past a group it fitted */
        if (f->skipped) continue;
        for (unsigned k = 0; k < GQ3_GROUP / 4; k++) {
            qs[k] = (uint8_t)(f->index[k] & 0xFF);
            qh[ib] = (uint8_t)(qh[ib] | (unsigned)(f->index[k] >> 8) << k);
        }
        memcpy(signs, f->signs, GQ3_GROUP / 8);
        qs += GQ3_GROUP / 4;
        signs += GQ3_GROUP / 8;
    }
    if (max_scale == 0.0f) return GQ_OK;
    float d = max_scale / 31;
    gq_put_f16(b, d * 1.033f); /* ggml's fudge factor */
    float id = 1 / d;
    for (unsigned ib = 0; ib < GQ_SUPER / GQ3_GROUP; ib += 2)
        scales[ib / 2] = (uint8_t)(gq3_scale_code(id, fits[ib].scale) | gq3_scale_code(id, fits[ib + 1].scale) << 4);
    return GQ_OK;
}
