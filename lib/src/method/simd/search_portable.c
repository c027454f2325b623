/* grouped_search fast path in portable C (search_simd.h): the schedule of search_algo.inc with
 * plain loops, 8 candidates side by side (the compiler may vectorize the lane loops; every
 * lane's arithmetic is the reference's, in the reference's order). */
#include "method/method_impl.h"
#include "method/simd/search_simd.h"

#define LANES 8u
#define SEARCH_LANES 96u

static void search_round(const double *c, size_t m, uint16_t *words);
static void search_prep(const uint16_t *words, size_t m, double *s, float *sf, float *inv);
static void search_screen(const nf_search_group *g, const float *sf, const float *inv, size_t m, double *a);
static void search_lsq_sums(const nf_search_group *g, const double *xd, const int8_t *q, double *num, double *den);
static void search_eval(const nf_search_group *g, const double *xd, const double *s, const float *inv, size_t m,
                        double *e);
static void search_codes(const nf_search_group *g, float inv, int8_t *q);

#define SEARCH_FN nf_search_group_portable
#define SEARCH_ATTR
#include "method/simd/search_algo.inc"

static void search_round(const double *c, size_t m, uint16_t *words)
{
    for (size_t i = 0; i < m; i++) words[i] = search_round_one(c[i]);
}

static void search_prep(const uint16_t *words, size_t m, double *s, float *sf, float *inv)
{
    for (size_t i = 0; i < SEARCH_LANES; i++) {
        float v = i < m ? nf_f16_to_f32(words[i]) : 0.0f;
        s[i] = (double)v;
        sf[i] = v;
        inv[i] = i < m ? nf_recip_f32(v) : 0.0f;
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

NF_METHOD_INLINE void eval_block(const nf_search_group *g, const double *xd, const double *s, const float *inv,
                                 double *e, bool weighted)
{
    double acc[LANES] = {0};
    float qmin = g->qmin, qmax = g->qmax;
    for (size_t k = 0; k < g->n; k++) {
        float xk = g->x[k];
        double xdk = xd[k];
        double wk = weighted ? g->w[k] : 1.0;
        for (size_t j = 0; j < LANES; j++) {
            double r = xdk - s[j] * (double)code_f(xk, inv[j], qmin, qmax);
            double wr = weighted ? wk * r : r;
            acc[j] += wr * r;
        }
    }
    memcpy(e, acc, sizeof acc);
}

static void search_eval(const nf_search_group *g, const double *xd, const double *s, const float *inv, size_t m,
                        double *e)
{
    for (size_t j = 0; j < m; j += LANES) {
        if (g->w) eval_block(g, xd, s + j, inv + j, e + j, true);
        else eval_block(g, xd, s + j, inv + j, e + j, false);
    }
}

static void search_codes(const nf_search_group *g, float inv, int8_t *q)
{
    for (size_t i = 0; i < g->n; i++) q[i] = nf_grouped_code(g->x[i], inv, g->qmin, g->qmax);
}

/* Screening sums (search_algo.inc): binary32, unfused, 8 lanes side by side. */
NF_METHOD_INLINE void screen_block(const nf_search_group *g, const float *sf, const float *inv, double *a,
                                   bool weighted)
{
    float acc[LANES] = {0};
    float qmin = g->qmin, qmax = g->qmax;
    for (size_t k = 0; k < g->n; k++) {
        float xk = g->x[k];
        float wk = weighted ? g->wf[k] : 1.0f;
        for (size_t j = 0; j < LANES; j++) {
            float r = xk - sf[j] * code_f(xk, inv[j], qmin, qmax);
            float wr = weighted ? wk * r : r;
            acc[j] += wr * r;
        }
    }
    for (size_t j = 0; j < LANES; j++) a[j] = (double)acc[j];
}

static void search_screen(const nf_search_group *g, const float *sf, const float *inv, size_t m, double *a)
{
    for (size_t j = 0; j < m; j += LANES) {
        if (g->wf) screen_block(g, sf + j, inv + j, a + j, true);
        else screen_block(g, sf + j, inv + j, a + j, false);
    }
}

/* The least-squares sums, 4 interleaved partial sums (search_algo.inc: any order). */
static void search_lsq_sums(const nf_search_group *g, const double *xd, const int8_t *q, double *num, double *den)
{
    double nv[4] = {0}, dv[4] = {0};
    for (size_t i = 0; i < g->n; i++) {
        double w = g->w ? g->w[i] : 1.0, c = (double)q[i];
        nv[i & 3] += (w * xd[i]) * c;
        dv[i & 3] += (w * c) * c;
    }
    *num = (nv[0] + nv[1]) + (nv[2] + nv[3]);
    *den = (dv[0] + dv[1]) + (dv[2] + dv[3]);
}
