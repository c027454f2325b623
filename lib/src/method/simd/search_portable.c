/* grouped_search fast path in portable C (search_simd.h): the batch schedule of search_algo.inc
 * with plain loops over 16 groups side by side (the compiler may vectorize the lane loops;
 * every lane's arithmetic is the reference's, in the reference's order where it matters). */
#include "method/common.h"
#include "method/method_impl.h"
#include "method/simd/search_simd.h"

#define SEARCH_L 16u
#define SEARCH_BETA 0.0 /* the screening's codes and residuals are the reference's */

#define SEARCH_KERNEL_INLINE static
#include "method/simd/search_kernels.inc"

#define SEARCH_BATCH_FN search_batch_portable
#define SEARCH_ATTR
#include "method/simd/search_algo.inc"

static void search_transpose(const nf_search_shape *sh, const nf_search_group *const *g, search_lanes *b)
{
    (void)sh;
    for (size_t l = 0; l < SEARCH_L; l++) b->xmax[l] = b->xmin[l] = b->xx[l] = 0.0f;
    for (size_t k = 0; k < b->G; k++)
        for (size_t l = 0; l < SEARCH_L; l++) {
            float v = g[l]->x[k];
            b->x[k][l] = v;
            b->xmax[l] = v > b->xmax[l] ? v : b->xmax[l];
            b->xmin[l] = v < b->xmin[l] ? v : b->xmin[l];
        }
    if (b->weighted)
        for (size_t k = 0; k < b->G; k++)
            for (size_t l = 0; l < SEARCH_L; l++) b->w[k][l] = g[l]->wf[k];
    for (size_t k = 0; k < b->G; k++)
        for (size_t l = 0; l < SEARCH_L; l++) {
            float v = b->x[k][l];
            b->xx[l] += (b->weighted ? b->w[k][l] * v : v) * v;
        }
}

static void search_round(const double *c, uint16_t *w)
{
    for (size_t l = 0; l < SEARCH_L; l++) w[l] = search_round_one(c[l]);
}

static void search_prep(const uint16_t *w, float *sf, float *inv)
{
    for (size_t l = 0; l < SEARCH_L; l++) {
        float v = nf_f16_to_f32(w[l]);
        sf[l] = v;
        inv[l] = nf_recip_f32(v);
    }
}

/* The reference's code as a float (an integer in [qmin, qmax]). */
NF_METHOD_INLINE float code_f(float x, float inv, float qmin, float qmax)
{
    const float magic = 12582912.0f; /* 1.5 * 2^23 */
    float n = x * inv;
    n = n < qmin ? qmin : n;
    n = n > qmax ? qmax : n;
    return (n + magic) - magic;
}

/* Screening sums (search_algo.inc): binary32, unfused, one candidate over all lanes at a time. */
NF_METHOD_INLINE void screen_one(const nf_search_shape *sh, const search_lanes *b, const float *sf, const float *inv,
                                 float *a, bool weighted)
{
    float acc[SEARCH_L] = {0};
    float qmin = sh->qmin, qmax = sh->qmax;
    for (size_t k = 0; k < b->G; k++)
        for (size_t l = 0; l < SEARCH_L; l++) {
            float x = b->x[k][l];
            float r = x - sf[l] * code_f(x, inv[l], qmin, qmax);
            float wr = weighted ? b->w[k][l] * r : r;
            acc[l] += wr * r;
        }
    memcpy(a, acc, sizeof acc);
}

static void search_screen(const nf_search_shape *sh, const search_lanes *b, search_cands *C, const uint8_t *list,
                          size_t m)
{
    for (size_t i = 0; i < m; i++) {
        size_t j = list[i];
        if (b->weighted) screen_one(sh, b, C->sf[j], C->inv[j], C->a[j], true);
        else screen_one(sh, b, C->sf[j], C->inv[j], C->a[j], false);
    }
}

static void search_refit_screen(const nf_search_shape *sh, const search_lanes *b, search_cands *C,
                                const float (*qb)[SEARCH_L], const uint8_t *list, size_t m, uint16_t (*same)[SEARCH_L])
{
    search_screen(sh, b, C, list, m);
    for (size_t i = 0; i < m; i++) {
        const float *inv = C->inv[list[i]];
        uint16_t *eq = same[list[i] - SC_REFIT];
        for (size_t l = 0; l < SEARCH_L; l++) eq[l] = 1;
        for (size_t k = 0; k < b->G; k++)
            for (size_t l = 0; l < SEARCH_L; l++) {
                float x = b->x[k][l];
                bool differ = code_f(x, inv[l], sh->qmin, sh->qmax) != qb[k][l];
                eq[l] = (uint16_t)(differ ? 0 : eq[l]);
            }
    }
}

/* The least-squares sums of the reference, lane by lane in its order (k ascending). */
NF_METHOD_INLINE void lsq_lanes(const nf_search_shape *sh, const search_lanes *b, const float *inv, double *num,
                                double *den, float (*qout)[SEARCH_L], bool weighted)
{
    double nv[SEARCH_L] = {0}, dv[SEARCH_L] = {0};
    for (size_t k = 0; k < b->G; k++)
        for (size_t l = 0; l < SEARCH_L; l++) {
            double x = (double)b->x[k][l];
            float qf = code_f(b->x[k][l], inv[l], sh->qmin, sh->qmax);
            double q = (double)qf;
            if (qout) qout[k][l] = qf;
            if (weighted) {
                double w = (double)b->w[k][l];
                nv[l] += (w * x) * q;
                dv[l] += (w * q) * q;
            } else {
                nv[l] += x * q;
                dv[l] += q * q;
            }
        }
    memcpy(num, nv, sizeof nv);
    memcpy(den, dv, sizeof dv);
}

static void search_lsq(const nf_search_shape *sh, const search_lanes *b, const float *inv, double *num, double *den,
                       float (*q)[SEARCH_L])
{
    /* the four cases apart, so that each loop is simple enough to vectorize */
    if (b->weighted) {
        if (q) lsq_lanes(sh, b, inv, num, den, q, true);
        else lsq_lanes(sh, b, inv, num, den, NULL, true);
    } else {
        if (q) lsq_lanes(sh, b, inv, num, den, q, false);
        else lsq_lanes(sh, b, inv, num, den, NULL, false);
    }
}

/* The reference's group_error of 8 candidates side by side. */
NF_METHOD_INLINE void exact_block(const nf_search_shape *sh, const nf_search_group *g, const double *s,
                                  const float *inv, double *e, bool weighted)
{
    enum { B = 8 };
    double acc[B] = {0};
    float qmin = sh->qmin, qmax = sh->qmax;
    for (size_t k = 0; k < g->n; k++) {
        float xk = g->x[k];
        double xdk = (double)xk;
        double wk = weighted ? (double)g->wf[k] : 1.0;
        for (size_t j = 0; j < B; j++) {
            double r = xdk - s[j] * (double)code_f(xk, inv[j], qmin, qmax);
            double wr = weighted ? wk * r : r;
            acc[j] += wr * r;
        }
    }
    memcpy(e, acc, sizeof acc);
}

static void search_exact(const nf_search_shape *sh, const nf_search_group *g, const double *s, const float *inv,
                         size_t m, double *e)
{
    for (size_t j = 0; j < m; j += 8) {
        if (g->wf) exact_block(sh, g, s + j, inv + j, e + j, true);
        else exact_block(sh, g, s + j, inv + j, e + j, false);
    }
}

static void search_codes(const nf_search_shape *sh, const nf_search_group *g, float inv, int8_t *q)
{
    for (size_t i = 0; i < g->n; i++) q[i] = nf_grouped_code(g->x[i], inv, sh->qmin, sh->qmax);
}

float nf_search_extreme_portable(const float *x, size_t n, float amax)
{
    size_t k = 0;
    while (k + 1 < n && fabsf(x[k]) != amax) k++;
    return x[k];
}

/* The loading of the vector kernels in plain C: each word widened exactly (as grouped.c's own
 * loading, nf_method_load_f32, widens it), then the largest |x| word over the binary32 words. */
uint32_t nf_search_load_portable(const uint8_t *p, nf_src_type type, size_t n, float *x, float *extreme)
{
    for (size_t i = 0; i < n; i++) {
        if (type == NF_SRC_F32) {
            memcpy(&x[i], p + 4 * i, sizeof x[i]);
        } else {
            uint16_t w;
            memcpy(&w, p + 2 * i, sizeof w);
            x[i] = type == NF_SRC_F16 ? nf_f16_to_f32(w) : nf_bf16_to_f32(w);
        }
    }
    uint32_t m = nf_method_amax_word(x, n);
    float amax;
    memcpy(&amax, &m, sizeof amax);
    if (m < 0x7F800000u && m != 0) *extreme = nf_search_extreme_portable(x, n, amax);
    return m;
}

const nf_search_kernels nf_search_kernels_scalar = {.name = "scalar",
                                                    .batch = search_batch_portable,
                                                    .extreme = nf_search_extreme_portable,
                                                    .load = nf_search_load_portable,
                                                    .lanes = SEARCH_L};
