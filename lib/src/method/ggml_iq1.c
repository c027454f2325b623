/* ggml_quantize's IQ1_S and IQ1_M block encoders (docs/methods.md "ggml_quantize"): the bytes
 * ggml's quantize_iq1_s and quantize_iq1_m write, at the ggml version docs/methods.md names.
 *
 * Both types store, per group of values (32 for IQ1_S, 16 for IQ1_M), codes l in {0, 1, 2}
 * standing for the values -1, 0, +1 shifted by a delta of +-0.125, eight codes at a time as the
 * index of a point of ggml's 2048-point IQ1 grid, and a 3-bit group scale under a binary16
 * super-scale.  The search is ggml's: the codes of a group split its values, sorted, at two
 * boundaries; every pair of boundaries (and every delta sign) is tried and the one of largest
 * weighted least-squares gain kept; eight codes that are no grid point become the grid point
 * nearest to the values (ggml_grid.h's neighbour lists), and the scale is fitted again.  Every
 * binary32 operation happens in ggml's order (ggml_encoders.h).
 *
 * ggml itself aborts on some inputs (its grid search finds no point when every weighted error
 * overflows binary32, or a scale is NaN); the encoders report those blocks instead of
 * guessing bytes (GQ_GGML_ABORTS), and the row driver refuses them.
 *
 * Internal to the method module: called by the row driver, ggml_quant.c. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "method/ggml_grid.h"
#include "method/ggml_encoders.h"
#include "method/simd/ggml_simd.h"

#define IQ1_GROUPS_S 8u  /* groups of 32 values in a super-block */
#define IQ1_GROUPS_M 16u /* groups of 16 values */
#define IQ1_EPS_S 1e-12f /* below this a group's largest magnitude counts as all zero */
#define IQ1_EPS_M 1e-7f

/* The values the codes 0, 1, 2 stand for, with the delta added (x_p) or subtracted (x_m). */
static const float iq1_xp[3] = {-1.0f + 0.125f, 0.125f, 1.0f + 0.125f};
static const float iq1_xm[3] = {-1.0f - 0.125f, -0.125f, 1.0f - 0.125f};

/* sigma2 of a super-block: twice the mean square, computed as ggml does (2 * sum / 256). */
static float iq1_sigma2(const float *x)
{
    float s = 0.0f;
    for (unsigned i = 0; i < GQ_SUPER; i++) s += x[i] * x[i];
    return 2.0f * s / gq_f((int)GQ_SUPER);
}

/* Weights of n values: qw * sqrt(sigma2 + x^2) with importance, x^2 without (IQ1_M only). */
static void iq1_weights(const float *x, const float *qw, float sigma2, int n, float *w)
{
    for (int i = 0; i < n; i++) w[i] = qw ? qw[i] * sqrtf(sigma2 + x[i] * x[i]) : x[i] * x[i];
}

static float iq1_amax(const float *x, int n)
{
    float m = fabsf(x[0]);
    for (int i = 1; i < n; i++) m = m > fabsf(x[i]) ? m : fabsf(x[i]);
    return m;
}

/* The order of n values ascending, equal values in column order: ggml sorts (value, column)
 * pairs by value with qsort, which glibc implements as a stable merge sort for these sizes (the
 * kernels' iq1_order). */
void nf_gq1_order_ref(const float *x, int n, int *idx)
{
    for (int j = 0; j < n; j++) {
        int i = j;
        while (i > 0 && x[idx[i - 1]] > x[j]) {
            idx[i] = idx[i - 1];
            i--;
        }
        idx[i] = j;
    }
}

/* One candidate of the search: kept when its gain sumqx^2 / sumq2 beats *best. */
static bool iq1_better(float sumqx, float sumq2, float *best, float *scale)
{
    if (!(sumq2 > 0.0f && sumqx * sumqx > *best * sumq2)) return false;
    *scale = sumqx / sumq2;
    *best = *scale * sumqx;
    return true;
}

int nf_gq1_nearest_ref(const uint8_t *levels, const uint16_t *list, unsigned n, const float *x, const float *w,
                       float scale, const float *xx)
{
    float best = 3.40282347e38f;
    int pick = -1;
    for (unsigned j = 0; j < n; j++) {
        const uint8_t *lv = levels + 8u * list[j];
        float d2 = 0.0f;
        for (int i = 0; i < 8; i++) {
            float diff = scale * xx[lv[i]] - x[i];
            d2 += w[i] * diff * diff;
        }
        if (d2 < best) {
            best = d2;
            pick = list[j];
        }
    }
    return pick;
}

/* The grid point for 8 codes L, with the values xx the codes stand for: the point itself, or
 * among its neighbours the one of least weighted error sum w (scale xx[l] - x)^2, the first on a
 * tie (the kernels' iq1_nearest), whose codes replace L.  -1 when no neighbour's error is below
 * FLT_MAX (ggml aborts). */
static int iq1_point(const nf_ggml_grid *grid, const float *x, const float *w, float scale, const float *xx, uint8_t *L,
                     bool *on_grid)
{
    int32_t m = grid->map[nf_ggml_grid_code(L)];
    if (m >= 0) return (int)m;
    *on_grid = false;
    const uint16_t *nb = nf_ggml_grid_neighbours(grid, m);
    int pick = nf_gq_kernels_current()->iq1_nearest(grid->level, nb + 1, nb[0], x, w, scale, xx);
    if (pick >= 0) memcpy(L, grid->level + 8u * (unsigned)pick, 8);
    return pick;
}

/* The least-squares scale of a group's chosen grid points (n / 8 of them, point k's values
 * xs[k]), or `scale` unchanged when the fit is not positive. */
static float iq1_refit(const nf_ggml_grid *grid, const float *x, const float *w, int n, const int *index,
                       const float *const *xs, float scale)
{
    float sumqx = 0.0f, sumq2 = 0.0f;
    for (int k = 0; k < n / 8; k++) {
        const uint8_t *lv = grid->level + 8u * (unsigned)index[k];
        for (int j = 0; j < 8; j++) {
            float q = xs[k][lv[j]];
            sumqx += w[8 * k + j] * q * x[8 * k + j];
            sumq2 += w[8 * k + j] * q * q;
        }
    }
    return sumqx > 0.0f && sumq2 > 0.0f ? sumqx / sumq2 : scale;
}

/* ---------------------------------------------------------------- IQ1_S */

bool nf_gq1s_split_ref(const float *sumx, const float *sumw, float s0, int *b1, int *b2, int *shift, float *scale)
{
    float best = -3.40282347e38f, s = s0;
    int bi1 = -1, bi2 = -1, sh = 0;
    for (int i1 = 0; i1 <= 32; i1++)
        for (int i2 = i1; i2 <= 32; i2++)
            for (int sign = 1; sign >= -1; sign -= 2) {
                const float *v = sign == 1 ? iq1_xp : iq1_xm;
                float sumqx = (sumx[i1] - sumx[0]) * v[0] + (sumx[i2] - sumx[i1]) * v[1] + (sumx[32] - sumx[i2]) * v[2];
                float sumq2 = (sumw[i1] - sumw[0]) * v[0] * v[0] + (sumw[i2] - sumw[i1]) * v[1] * v[1] +
                              (sumw[32] - sumw[i2]) * v[2] * v[2];
                if (iq1_better(sumqx, sumq2, &best, &s)) {
                    bi1 = i1;
                    bi2 = i2;
                    sh = sign;
                }
            }
    *b1 = bi1;
    *b2 = bi2;
    *shift = sh;
    *scale = s;
    return bi1 >= 0;
}

/* One group of 32: the best boundaries i1 <= i2 of the sorted values and the delta sign (shift
 * +1: x_p, -1: x_m) by prefix sums, ggml's exhaustive search (the kernels' iq1s_split).  Returns
 * false when no candidate has a positive sumq2 (ggml then stores the group as zero). */
static bool iq1s_search(const float *x, const float *w, const int *idx, uint8_t *L, float *scale, int *shift)
{
    float sumx[33], sumw[33];
    sumx[0] = sumw[0] = 0.0f;
    for (int j = 0; j < 32; j++) {
        sumx[j + 1] = sumx[j] + w[idx[j]] * x[idx[j]];
        sumw[j + 1] = sumw[j] + w[idx[j]];
    }
    int b1, b2, sh;
    float s;
    if (!nf_gq_kernels_current()->iq1s_split(sumx, sumw, iq1_amax(x, 32), &b1, &b2, &sh, &s)) return false;
    for (int j = 0; j < 32; j++) L[idx[j]] = (uint8_t)(j < b1 ? 0 : j < b2 ? 1 : 2);
    if (s < 0.0f) { /* the mirrored codes with the other delta sign fit the same values */
        for (int j = 0; j < 32; j++) L[j] = (uint8_t)(2 - L[j]);
        s = -s;
        sh = -sh;
    }
    *scale = s;
    *shift = sh;
    return true;
}

/* IQ1_S, 50 bytes: d (binary16), qs[32] (the low 8 bits of the 32 grid indices), qh[8] (u16 per
 * group: the high 3 bits of its 4 indices at 3k, its 3-bit scale l at 12, the delta sign at 15).
 * d = 1.125 * max scale / 15 (ggml's constant); l = nearest((scale / (max / 15) - 1) / 2). */
gq_fail nf_ggml_enc_iq1_s(const float *x, const float *qw, float sigma2, uint8_t *b)
{
    (void)sigma2;
    const nf_ggml_grid *grid = nf_ggml_grid_get(NF_GGML_GRID8_IQ1S);
    if (!grid) return GQ_NO_MEMORY;
    if (!qw) return GQ_GGML_ABORTS; /* ggml asserts an importance vector (the driver refuses first) */
    memset(b, 0, 50);
    uint8_t *qs = b + 2, *qh = b + 34;
    const float s2 = iq1_sigma2(x);
    float scales[IQ1_GROUPS_S], max_scale = 0.0f;
    int shifts[IQ1_GROUPS_S];
    for (unsigned ib = 0; ib < IQ1_GROUPS_S; ib++) {
        const float *xb = x + 32 * ib;
        float w[32];
        int idx[32];
        uint8_t L[32];
        iq1_weights(xb, qw + 32 * ib, s2, 32, w);
        scales[ib] = 0.0f;
        shifts[ib] = 1;
        if (iq1_amax(xb, 32) < IQ1_EPS_S) continue;
        nf_gq_kernels_current()->iq1_order(xb, 32, idx);
        float scale;
        int shift;
        if (!iq1s_search(xb, w, idx, L, &scale, &shift)) continue;
        const float *xx = shift == 1 ? iq1_xp : iq1_xm;
        const float *xs[4] = {xx, xx, xx, xx};
        int index[4];
        bool on_grid = true;
        for (int k = 0; k < 4; k++) {
            index[k] = iq1_point(grid, xb + 8 * k, w + 8 * k, scale, xx, L + 8 * k, &on_grid);
            if (index[k] < 0) return GQ_GGML_ABORTS;
        }
        if (!on_grid) scale = iq1_refit(grid, xb, w, 32, index, xs, scale);
        unsigned h = 0;
        for (int k = 0; k < 4; k++) {
            qs[4 * ib + (unsigned)k] = (uint8_t)(index[k] & 0xFF);
            h |= ((unsigned)index[k] >> 8) << 3 * k;
        }
        qh[2 * ib] = (uint8_t)(h & 0xFFu);
        qh[2 * ib + 1] = (uint8_t)(h >> 8);
        if (!(scale >= 0.0f)) return GQ_GGML_ABORTS; /* NaN: ggml asserts */
        scales[ib] = scale;
        shifts[ib] = shift;
        max_scale = max_scale > scale ? max_scale : scale;
    }
    if (max_scale == 0.0f) return GQ_OK;
    float d = max_scale / 15.0f;
    gq_put_f16(b, d * 1.125f);
    float id = 1 / d;
    for (unsigned ib = 0; ib < IQ1_GROUPS_S; ib++) {
        int l = gq_clamp(gq_nearest(0.5f * (id * scales[ib] - 1.0f)), 0, 7);
        if (shifts[ib] == -1) l |= 8;
        qh[2 * ib + 1] = (uint8_t)(qh[2 * ib + 1] | (unsigned)l << 4);
    }
    return GQ_OK;
}

/* ---------------------------------------------------------------- IQ1_M */

/* The delta values of the two halves of a 16-value group of kind k: bit 1 of k the first half's
 * sign, bit 0 the second's (0: +delta, x_p; 1: -delta, x_m). */
static const float *iq1m_values(int kind, int half)
{
    int minus = half == 0 ? kind >> 1 : kind & 1;
    return minus ? iq1_xm : iq1_xp;
}

bool nf_gq1m_split_ref(const float *x, const float *w, const int *idx, float s0, int *b1, int *b2, int *kind,
                       float *scale)
{
    float best = -3.40282347e38f, s = s0;
    int bi1 = -1, bi2 = -1, bk = -1;
    for (int i1 = 0; i1 <= 16; i1++)
        for (int i2 = i1; i2 <= 16; i2++) {
            float sumqx[4] = {0.0f, 0.0f, 0.0f, 0.0f}, sumq2[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            for (int j = 0; j < 16; j++) {
                const int i = idx[j], r = j < i1 ? 0 : j < i2 ? 1 : 2;
                for (int k = 0; k < 4; k++) {
                    const float v = iq1m_values(k, i < 8 ? 0 : 1)[r];
                    sumqx[k] += w[i] * v * x[i];
                    sumq2[k] += w[i] * v * v;
                }
            }
            for (int k = 0; k < 4; k++)
                if (iq1_better(sumqx[k], sumq2[k], &best, &s)) {
                    bi1 = i1;
                    bi2 = i2;
                    bk = k;
                }
        }
    *b1 = bi1;
    *b2 = bi2;
    *kind = bk;
    *scale = s;
    return bi1 >= 0;
}

/* One group of 16: the best boundaries i1 <= i2 of the sorted values and the kind (the delta
 * sign of each half), every candidate's sums taken afresh in sorted order, as ggml does (the
 * kernels' iq1m_split).  Returns false when no candidate has a positive sumq2 (ggml then stores
 * the group as zero). */
static bool iq1m_search(const float *x, const float *w, const int *idx, uint8_t *L, float *scale, int *kind)
{
    int b1, b2, bk;
    float s;
    if (!nf_gq_kernels_current()->iq1m_split(x, w, idx, iq1_amax(x, 16), &b1, &b2, &bk, &s)) return false;
    for (int j = 0; j < 16; j++) L[idx[j]] = (uint8_t)(j < b1 ? 0 : j < b2 ? 1 : 2);
    if (s < 0.0f) { /* mirrored codes, both delta signs flipped */
        for (int j = 0; j < 16; j++) L[j] = (uint8_t)(2 - L[j]);
        s = -s;
        bk = 3 - bk;
    }
    *scale = s;
    *kind = bk;
    return true;
}

/* The final super-scale of IQ1_M: the least-squares fit of all groups' values to their stored
 * codes and 3-bit scales l (values xx[level] * (2l + 1)), d when that fit has no positive
 * sumq2.  qs, qh and the scales ls are the block's. */
static float iq1m_fit_d(const nf_ggml_grid *grid, const float *x, const float *w, const uint8_t *qs, const uint8_t *qh,
                        const int *ls, const int *kinds, float d)
{
    float sumqx = 0.0f, sumq2 = 0.0f;
    for (unsigned ib = 0; ib < IQ1_GROUPS_M; ib++) {
        const float *xb = x + 16 * ib, *wb = w + 16 * ib;
        const float m = gq_f(2 * ls[ib] + 1);
        for (unsigned k = 0; k < 2; k++) {
            const float *xx = iq1m_values(kinds[ib], (int)k);
            const unsigned point = qs[2 * ib + k] | (((unsigned)qh[ib] >> 4 * k) & 7u) << 8;
            const uint8_t *lv = grid->level + 8u * point;
            for (unsigned j = 0; j < 8; j++) {
                float q = xx[lv[j]] * m;
                sumqx += wb[8 * k + j] * q * xb[8 * k + j];
                sumq2 += wb[8 * k + j] * q * q;
            }
        }
    }
    return sumq2 > 0.0f ? sumqx / sumq2 : d;
}

/* IQ1_M, 56 bytes: qs[32] (the low 8 bits of the 32 grid indices), qh[16] (per group of 16: the
 * high 3 bits of its two indices at 0 and 4, their delta signs at 3 and 7), scales (four u16:
 * the 3-bit group scales at 3 * (ib % 4) of word ib / 4, and the binary16 super-scale's four
 * nibbles at 12 of words 0..3).  The super-scale is 1.1125 (ggml's constant) times the final
 * fit of every value to its stored codes (iq1m_fit_d). */
gq_fail nf_ggml_enc_iq1_m(const float *x, const float *qw, float sigma2, uint8_t *b)
{
    (void)sigma2;
    const nf_ggml_grid *grid = nf_ggml_grid_get(NF_GGML_GRID8_IQ1S);
    if (!grid) return GQ_NO_MEMORY;
    memset(b, 0, 56);
    uint8_t *qs = b, *qh = b + 32, *sc = b + 48;
    float w[GQ_SUPER];
    iq1_weights(x, qw, iq1_sigma2(x), (int)GQ_SUPER, w);
    float scales[IQ1_GROUPS_M], max_scale = 0.0f;
    int kinds[IQ1_GROUPS_M];
    for (unsigned ib = 0; ib < IQ1_GROUPS_M; ib++) {
        const float *xb = x + 16 * ib, *wb = w + 16 * ib;
        int idx[16];
        uint8_t L[16];
        scales[ib] = 0.0f;
        kinds[ib] = 0;
        if (iq1_amax(xb, 16) < IQ1_EPS_M) continue;
        nf_gq_kernels_current()->iq1_order(xb, 16, idx);
        float scale;
        int kind;
        if (!iq1m_search(xb, wb, idx, L, &scale, &kind)) continue;
        const float *xs[2] = {iq1m_values(kind, 0), iq1m_values(kind, 1)};
        int index[2];
        bool on_grid = true;
        for (int k = 0; k < 2; k++) {
            index[k] = iq1_point(grid, xb + 8 * k, wb + 8 * k, scale, xs[k], L + 8 * k, &on_grid);
            if (index[k] < 0) return GQ_GGML_ABORTS;
        }
        if (!on_grid) scale = iq1_refit(grid, xb, wb, 16, index, xs, scale);
        qs[2 * ib] = (uint8_t)(index[0] & 0xFF);
        qs[2 * ib + 1] = (uint8_t)(index[1] & 0xFF);
        qh[ib] = (uint8_t)(((unsigned)index[0] >> 8) | ((unsigned)index[1] >> 8) << 4);
        if (!(scale >= 0.0f)) return GQ_GGML_ABORTS; /* NaN: ggml asserts */
        scales[ib] = scale;
        kinds[ib] = kind;
        max_scale = max_scale > scale ? max_scale : scale;
    }
    if (max_scale == 0.0f) return GQ_OK;
    float d = max_scale / 15.0f;
    float id = 1 / d;
    int ls[IQ1_GROUPS_M];
    unsigned words[4] = {0, 0, 0, 0};
    for (unsigned ib = 0; ib < IQ1_GROUPS_M; ib++) {
        ls[ib] = gq_clamp(gq_nearest(0.5f * (id * scales[ib] - 1.0f)), 0, 7);
        words[ib / 4] |= (unsigned)ls[ib] << 3 * (ib % 4);
        qh[ib] = (uint8_t)(qh[ib] | (kinds[ib] >> 1) << 3 | (kinds[ib] & 1) << 7);
    }
    d = iq1m_fit_d(grid, x, w, qs, qh, ls, kinds, d);
    const uint16_t h = nf_f32_to_f16(d * 1.1125f);
    for (unsigned i = 0; i < 4; i++) {
        words[i] |= ((unsigned)h >> 4 * i & 0xFu) << 12;
        sc[2 * i] = (uint8_t)(words[i] & 0xFFu);
        sc[2 * i + 1] = (uint8_t)(words[i] >> 8);
    }
    return GQ_OK;
}
