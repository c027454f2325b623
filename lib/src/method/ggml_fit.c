/* ggml's scale searches (docs/methods.md "ggml_quantize"), the scalar reference of the block
 * encoders: the signed, Q3 and min-offset fits and the positive fit of the k-quants, each in
 * ggml's order of binary32 operations so that the codes and scales are ggml's (ggml_encoders.h). */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "format/ggml.h"
#include "method/common.h"
#include "method/ggml_encoders.h"
#include "method/method_impl.h"
#include "method/simd/ggml_simd.h"

/* ---------------------------------------------------------------- ggml's scale searches */

/* The signed value of largest magnitude, the first one on a tie (every search starts from it). */
float nf_gq_extreme(const float *x, int n)
{
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; j++) {
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    }
    return max;
}

/* The weighted sums of the codes of inverse scale iscale: sum w x l and sum w l^2 over the n
 * values, l = clamp(nearest(iscale x), -nmax, nmax - 1), w = qw or x^2; the codes plus offset go
 * to L when it is not NULL. */
static void gq_trial(int n, int nmax, float iscale, const float *x, const float *qw, int8_t *L, int offset,
                     float *sumlx, float *suml2)
{
    float lx = 0.0f, l2 = 0.0f;
    for (int i = 0; i < n; i++) {
        int l = gq_clamp(gq_nearest(iscale * x[i]), -nmax, nmax - 1);
        if (L) L[i] = (int8_t)(l + offset);
        float w = qw ? qw[i] : x[i] * x[i];
        lx += w * x[i] * gq_f(l);
        l2 += w * gq_f(l) * gq_f(l);
    }
    *sumlx = lx;
    *suml2 = l2;
}

/* Symmetric codes l in [-nmax, nmax) for n values, weighted least squares over 18 trial inverse
 * scales around -nmax / max (ggml's make_qx_quants, rmse_type 1).  L receives l + nmax; the
 * return is the scale.  Weights qw, or x^2 when NULL.  An all-zero group gives L = 0, scale 0. */
float nf_gq_fit_signed(int n, int nmax, const float *x, int8_t *L, const float *qw)
{
    const float max = nf_gq_extreme(x, n), amax = fabsf(max);
    if (amax < GQ_ZERO_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float iscale = gq_f(-nmax) / max;
    float sumlx, suml2;
    gq_trial(n, nmax, iscale, x, qw, L, nmax, &sumlx, &suml2);
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; is++) {
        if (is == 0) continue;
        iscale = -(gq_f(nmax) + 0.1f * gq_f(is)) / max;
        gq_trial(n, nmax, iscale, x, qw, NULL, 0, &sumlx, &suml2);
        if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++) L[i] = (int8_t)(nmax + gq_clamp(gq_nearest(iscale * x[i]), -nmax, nmax - 1));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* Q3_K's codes without an importance vector (ggml's make_q3_quants with do_rmse): the codes of
 * -nmax / max, then up to 5 sweeps that move single codes while the x^2-weighted fit improves.
 * L receives l + nmax, except that an all-zero group leaves L = 0 (as ggml does). */
float nf_gq_fit_q3(int n, int nmax, const float *x, int8_t *L)
{
    const float max = nf_gq_extreme(x, n), amax = fabsf(max);
    if (amax < GQ_ZERO_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float iscale = gq_f(-nmax) / max;
    float sumlx, suml2;
    gq_trial(n, nmax, iscale, x, NULL, L, 0, &sumlx, &suml2);
    for (int itry = 0; itry < 5; itry++) {
        int changed = 0;
        for (int i = 0; i < n; i++) {
            float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * gq_f(L[i]);
            if (slx > 0.0f) {
                float sl2 = suml2 - w * gq_f(L[i]) * gq_f(L[i]);
                int nl = gq_clamp(gq_nearest(x[i] * sl2 / slx), -nmax, nmax - 1);
                if (nl != L[i]) {
                    slx += w * x[i] * gq_f(nl);
                    sl2 += w * gq_f(nl) * gq_f(nl);
                    if (sl2 > 0.0f && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (int8_t)nl;
                        sumlx = slx;
                        suml2 = sl2;
                        changed++;
                    }
                }
            }
        }
        if (!changed) break;
    }
    for (int i = 0; i < n; i++) L[i] = (int8_t)(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* Codes l in [0, nmax] with a scale and a minimum, x ~ scale * l - the_min (ggml's
 * make_qkx2_quants; its make_qkx3_quants is the same computation for the non-NULL weights every
 * caller here passes): the codes of the full range, then nstep + 1 trial inverse scales
 * (rmin + rdelta * is + nmax) / (max - min), each refitted by weighted least squares and kept
 * when its error (absolute with use_mad, else squared) is strictly smaller.  n <= 32. */
float nf_gq_fit_min(int n, int nmax, const float *x, const float *w, uint8_t *L, float *the_min, float rmin,
                    float rdelta, int nstep, bool use_mad)
{
    uint8_t Laux[32];
    float min = x[0], max = x[0];
    float sum_w = w[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0.0f) min = 0.0f;
    if (max <= min) {
        memset(L, 0, (size_t)n);
        *the_min = -min;
        return 0.0f;
    }
    float iscale = gq_f(nmax) / (max - min);
    float scale = 1 / iscale;
    float best = 0.0f;
    for (int i = 0; i < n; i++) {
        L[i] = (uint8_t)gq_clamp(gq_nearest(iscale * (x[i] - min)), 0, nmax);
        float diff = scale * gq_f(L[i]) + min - x[i];
        diff = use_mad ? fabsf(diff) : diff * diff;
        best += w[i] * diff;
    }
    for (int is = 0; is <= nstep; is++) {
        iscale = (rmin + rdelta * gq_f(is) + gq_f(nmax)) / (max - min);
        float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
        for (int i = 0; i < n; i++) {
            int l = gq_clamp(gq_nearest(iscale * (x[i] - min)), 0, nmax);
            Laux[i] = (uint8_t)l;
            sum_l += w[i] * gq_f(l);
            sum_l2 += w[i] * gq_f(l) * gq_f(l);
            sum_xl += w[i] * gq_f(l) * x[i];
        }
        float D = sum_w * sum_l2 - sum_l * sum_l;
        if (!(D > 0.0f)) continue;
        float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
        float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
        if (this_min > 0.0f) {
            this_min = 0.0f;
            this_scale = sum_xl / sum_l2;
        }
        float cur = 0.0f;
        for (int i = 0; i < n; i++) {
            float diff = this_scale * gq_f(Laux[i]) + this_min - x[i];
            diff = use_mad ? fabsf(diff) : diff * diff;
            cur += w[i] * diff;
        }
        if (cur < best) {
            memcpy(L, Laux, (size_t)n);
            best = cur;
            scale = this_scale;
            min = this_min;
        }
    }
    *the_min = -min;
    return scale;
}

/* Non-negative codes in [0, nmax] for the sub-block scales or minima of a super-block with the
 * importance path (ggml's make_qp_quants): the best of 9 inverse scales around nmax / max by
 * weighted error, then up to 5 sweeps moving single codes.  L is stored as ggml stores it, in a
 * byte (a negative code wraps).  Shared with the i-quants (ggml_encoders.h). */
float nf_method_gq_fit_positive(int n, int nmax, const float *x, uint8_t *L, const float *qw)
{
    float max = 0.0f;
    for (int i = 0; i < n; i++) max = max > x[i] ? max : x[i];
    if (max < GQ_ZERO_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float iscale = gq_f(nmax) / max;
    for (int i = 0; i < n; i++) L[i] = (uint8_t)gq_nearest(iscale * x[i]);
    float scale = 1 / iscale;
    float best_mse = 0.0f;
    for (int i = 0; i < n; i++) {
        float diff = x[i] - scale * gq_f(L[i]);
        best_mse += qw[i] * diff * diff;
    }
    for (int is = -4; is <= 4; is++) {
        if (is == 0) continue;
        float iscale_is = (0.1f * gq_f(is) + gq_f(nmax)) / max;
        float scale_is = 1 / iscale_is;
        float mse = 0.0f;
        for (int i = 0; i < n; i++) {
            int l = gq_min(nmax, gq_nearest(iscale_is * x[i]));
            float diff = x[i] - scale_is * gq_f(l);
            mse += qw[i] * diff * diff;
        }
        if (mse < best_mse) {
            best_mse = mse;
            iscale = iscale_is;
        }
    }
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; i++) {
        int l = gq_min(nmax, gq_nearest(iscale * x[i]));
        L[i] = (uint8_t)l;
        sumlx += qw[i] * x[i] * gq_f(l);
        suml2 += qw[i] * gq_f(l) * gq_f(l);
    }
    for (int itry = 0; itry < 5; itry++) {
        int changed = 0;
        for (int i = 0; i < n; i++) {
            float w = qw[i];
            float slx = sumlx - w * x[i] * gq_f(L[i]);
            float sl2 = suml2 - w * gq_f(L[i]) * gq_f(L[i]);
            if (slx > 0.0f && sl2 > 0.0f) {
                int nl = gq_min(nmax, gq_nearest(x[i] * sl2 / slx));
                if (nl != (int)L[i]) {
                    slx += w * x[i] * gq_f(nl);
                    sl2 += w * gq_f(nl) * gq_f(nl);
                    if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (uint8_t)nl;
                        sumlx = slx;
                        suml2 = sl2;
                        changed++;
                    }
                }
            }
        }
        if (!changed) break;
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}
