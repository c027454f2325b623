/* grouped_search (docs/methods.md, grouped_search): docs/vectors.md item 13, refusals, and random groups
 * checked two ways: error never above the absmax error (error recomputed here), and words
 * equal to an oracle written here from the spec text (candidate list built up front in
 * docs/methods.md's order, then evaluated; binary16 rounding by frexp/ldexp). */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "support/test_float.h"
#include "support/test_rng.h"

/* ------------------------------------------------------------------ helpers */

TEST_RNG(0xB7E151628AED2A6Bull)

typedef struct grouped_out {
    nf_words w;
    uint64_t groups;
} grouped_out;

static void out_alloc(grouped_out *o, const nf_format *f, uint64_t rows, uint64_t cols)
{
    memset(o, 0, sizeof *o);
    o->groups = (cols + f->group_size - 1) / f->group_size;
    o->w.rows = rows;
    o->w.cols = cols;
    o->w.codes = calloc(rows * cols + 1, 1);
    o->w.scales = calloc(rows * o->groups + 1, 2);
}

static void out_free(grouped_out *o)
{
    free(o->w.codes);
    free(o->w.scales);
}

static nf_status run(nf_method_id m, nf_format_id id, const nf_method_params *p, const float *v, uint64_t rows,
                     uint64_t cols, uint64_t first_row, grouped_out *o, nf_error *err)
{
    const nf_format *f = nf_format_by_id(id);
    out_alloc(o, f, rows, cols);
    uint8_t *data = pack_f32(v, rows * cols);
    nf_src_rows src =
        {.name = "w", .type = NF_SRC_F32, .data = data, .first_row = first_row, .rows = rows, .cols = cols};
    nf_status st = nf_method_encode_rows(m, f, p, &src, &o->w, err);
    free(data);
    return st;
}

static nf_status search(nf_format_id id, const nf_method_params *p, const float *v, uint64_t rows, uint64_t cols,
                        grouped_out *o, nf_error *err)
{
    return run(NF_METHOD_GROUPED_SEARCH, id, p, v, rows, cols, 0, o, err);
}

/* ------------------------------------------------------------------ the oracle */

/* Codes of x for a finite nonzero scale word (docs/formats.md 5.5 reciprocal multiply). */
static void oracle_codes(const nf_format *f, const float *x, size_t n, uint16_t w, int *q)
{
    float inv = (float)(1.0 / f16_value(w));
    for (size_t i = 0; i < n; i++) {
        double r = rint((double)(float)((double)x[i] * (double)inv));
        q[i] = (int)fmin(fmax(r, f->code_min), f->code_max);
    }
}

/* sum imp * (x - s q)^2 over logical lanes, k ascending; imp NULL = 1. */
static double oracle_error(const float *x, const float *imp, size_t n, uint16_t w, const int *q)
{
    double s = f16_value(w), e = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)x[i] - s * q[i];
        double wt = imp ? (double)imp[i] : 1.0;
        e += wt * d * d;
    }
    return e;
}

static double oracle_lsq(const float *x, const float *imp, size_t n, const int *q)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double wt = imp ? (double)imp[i] : 1.0;
        num += wt * x[i] * q[i];
        den += wt * q[i] * q[i];
    }
    return den == 0.0 ? 0.0 : num / den;
}

/* _round_scales: -1 (as int) marks "no candidate". */
static int oracle_round(double c)
{
    if (!isfinite(c)) return 0x7C00;
    uint16_t w = f16_round((double)(float)c);
    if ((w & 0x7FFF) == 0 && c != 0.0) return c < 0 ? 0x8001 : 0x0001;
    return w;
}

static int oracle_step(int w, int n)
{
    if (w < 0) return -1;
    int mag = w & 0x7FFF;
    if (mag == 0 || mag + n <= 0 || mag + n > 0x7BFF) return -1;
    return (w & 0x8000) | (mag + n);
}

static bool oracle_absmax(const nf_format *f, const float *x, size_t n, uint16_t *w, int *q)
{
    float amax = 0;
    for (size_t i = 0; i < n; i++) amax = fmaxf(amax, fabsf(x[i]));
    if (amax == 0) {
        *w = 0;
        for (size_t i = 0; i < n; i++) q[i] = 0;
        return true;
    }
    uint16_t s = f16_round((double)(float)((double)amax / f->encoder_qmax));
    if (s == 0) s = 1;
    if ((s & 0x7C00) == 0x7C00) return false;
    *w = s;
    oracle_codes(f, x, n, s, q);
    return true;
}

typedef struct oracle_state {
    const nf_format *f;
    const float *x, *imp;
    size_t n;
    bool neg;
    uint16_t w;
    int q[128];
    double e;
} oracle_state;

static void oracle_try(oracle_state *st, int cand)
{
    if (cand < 0) return;
    uint16_t w = (uint16_t)cand;
    if ((w & 0x7FFF) == 0 || (w & 0x7C00) == 0x7C00) return;
    if ((w & 0x8000) && !st->neg) return;
    int q[128];
    oracle_codes(st->f, st->x, st->n, w, q);
    double e = oracle_error(st->x, st->imp, st->n, w, q);
    if (e < st->e) {
        st->w = w;
        st->e = e;
        memcpy(st->q, q, sizeof q);
    }
}

/* unrounded_fit_multiples: take fit x2^-1 and x2^1 from the binary64 fit instead of the rounded
 * binary16 one (the Python conformance oracle's reading; upstream's implementation, and the
 * library, scale the rounded fit). */
static void oracle_search_variant(const nf_format *f, const float *x, const float *imp, size_t n, bool neg,
                                  bool unrounded_fit_multiples, uint16_t *w, int *q)
{
    oracle_state st = {.f = f, .x = x, .imp = imp, .n = n, .neg = neg};
    cr_assert(oracle_absmax(f, x, n, &st.w, st.q));
    float amax = 0;
    size_t ext = 0;
    for (size_t i = 0; i < n; i++) {
        if (fabsf(x[i]) > amax) {
            amax = fabsf(x[i]);
            ext = i;
        }
    }
    if (amax > 0) {
        st.e = oracle_error(x, imp, n, st.w, st.q);
        /* first phase: 65 candidates known before any is evaluated */
        int cands[65], nc = 0;
        for (int i = 0; i < 25; i++)
            cands[nc++] = oracle_round((double)amax / f->encoder_qmax * ((70 + 2 * i) / 100.0));
        for (int i = 0; i < 25; i++) cands[nc++] = oracle_round((double)x[ext] / f->code_min * ((70 + 2 * i) / 100.0));
        double canon = f16_value(st.w);
        cands[nc++] = oracle_round(canon / 4);
        cands[nc++] = oracle_round(canon / 2);
        cands[nc++] = oracle_round(canon * 2);
        cands[nc++] = oracle_round(canon * 4);
        cands[nc++] = oracle_step(st.w, -2);
        cands[nc++] = oracle_step(st.w, -1);
        cands[nc++] = oracle_step(st.w, 1);
        cands[nc++] = oracle_step(st.w, 2);
        double fit64 = oracle_lsq(x, imp, n, st.q);
        int fit = oracle_round(fit64);
        double fit_base = unrounded_fit_multiples ? fit64 : f16_value((uint16_t)fit);
        cands[nc++] = fit;
        cands[nc++] = oracle_round(fit_base / 2);
        cands[nc++] = oracle_round(fit_base * 2);
        cands[nc++] = oracle_step(fit, -2);
        cands[nc++] = oracle_step(fit, -1);
        cands[nc++] = oracle_step(fit, 1);
        cands[nc++] = oracle_step(fit, 2);
        cr_assert_eq(nc, 65);
        for (int i = 0; i < nc; i++) oracle_try(&st, cands[i]);
        /* second phase: the refit of the winner and its two steps (68 candidates in all) */
        int refit = oracle_round(oracle_lsq(x, imp, n, st.q));
        oracle_try(&st, refit);
        oracle_try(&st, oracle_step(refit, -1));
        oracle_try(&st, oracle_step(refit, 1));
    }
    *w = st.w;
    memcpy(q, st.q, sizeof(int) * n);
}

static void oracle_search(const nf_format *f, const float *x, const float *imp, size_t n, bool neg, uint16_t *w, int *q)
{
    oracle_search_variant(f, x, imp, n, neg, false, w, q);
}

/* ------------------------------------------------------------------ docs/vectors.md item 13 */

Test(search, negative_scale_uses_the_full_code_range)
{
    float v[64] = {8, -3, 5, 1};
    grouped_out o;
    nf_error err = {0};
    cr_assert_eq(search(NF_FMT_Q4_G64_FP16, NULL, v, 1, 64, &o, &err), NF_OK, "%s", err.message);
    cr_expect(o.w.scales[0] != 0 && !(o.w.scales[0] & 0x8000), "positive-only scale 0x%04x", o.w.scales[0]);
    out_free(&o);

    nf_method_params p = {.negative_scales = true};
    cr_assert_eq(search(NF_FMT_Q4_G64_FP16, &p, v, 1, 64, &o, &err), NF_OK, "%s", err.message);
    cr_expect_eq(o.w.scales[0], 0xBC00, "scale 0x%04x, want -1.0", o.w.scales[0]);
    static const int8_t want[4] = {-8, 3, -5, -1};
    for (int i = 0; i < 4; i++) cr_expect_eq(o.w.codes[i], want[i], "code %d is %d", i, o.w.codes[i]);
    for (int i = 4; i < 64; i++) cr_expect_eq(o.w.codes[i], 0);
    out_free(&o);
}

Test(search, negative_extreme_gives_positive_full_range_scale)
{
    float v[64] = {-8, 3, -5, 1};
    for (int neg = 0; neg < 2; neg++) {
        nf_method_params p = {.negative_scales = neg};
        grouped_out o;
        nf_error err = {0};
        cr_assert_eq(search(NF_FMT_Q4_G64_FP16, &p, v, 1, 64, &o, &err), NF_OK, "%s", err.message);
        cr_expect_eq(o.w.scales[0], 0x3C00, "negative_scales=%d: scale 0x%04x", neg, o.w.scales[0]);
        static const int8_t want[4] = {-8, 3, -5, 1};
        for (int i = 0; i < 4; i++) cr_expect_eq(o.w.codes[i], want[i]);
        out_free(&o);
    }
}

Test(search, q6_zero_tiny_and_unit_rows)
{
    float v[3 * 64] = {0};
    v[64] = ldexpf(1.0f, -126);
    v[128] = 1.0f;
    nf_method_params p = {.negative_scales = true};
    grouped_out o;
    nf_error err = {0};
    cr_assert_eq(search(NF_FMT_Q6_G64_FP16, &p, v, 3, 64, &o, &err), NF_OK, "%s", err.message);
    cr_expect_eq(o.w.scales[0], 0x0000);
    cr_expect_eq(o.w.scales[1], 0x0001);
    cr_expect_neq(o.w.scales[2] & 0x7FFF, 0);
    for (int i = 0; i < 128; i++) cr_expect_eq(o.w.codes[i], 0, "code %d is %d", i, o.w.codes[i]);
    out_free(&o);
}

Test(search, all_zero_importance_is_absmax)
{
    enum { K = 200 };
    float imp[K] = {0};
    float *v = malloc(sizeof(float) * 7 * K);
    for (int i = 0; i < 7 * K; i++) v[i] = (float)(uniform() * 3.0);
    for (int neg = 0; neg < 2; neg++) {
        nf_method_params p = {.importance = imp, .importance_len = K, .negative_scales = neg};
        grouped_out a, s;
        nf_error err = {0};
        cr_assert_eq(run(NF_METHOD_GROUPED_ABSMAX, NF_FMT_Q5_G64_FP16, NULL, v, 7, K, 0, &a, &err), NF_OK, "%s",
                     err.message);
        cr_assert_eq(search(NF_FMT_Q5_G64_FP16, &p, v, 7, K, &s, &err), NF_OK, "%s", err.message);
        cr_expect_arr_eq(a.w.codes, s.w.codes, 7 * K);
        cr_expect_arr_eq(a.w.scales, s.w.scales, 2 * 7 * a.groups);
        out_free(&a);
        out_free(&s);
    }
    free(v);
}

Test(search, refuses_bad_importance)
{
    float v[2 * 40] = {1, 2, 3};
    float imp[41];
    for (int i = 0; i < 41; i++) imp[i] = 1.0f;
    grouped_out o;
    nf_error err = {0};
    nf_method_params p = {.importance = imp, .importance_len = 41};
    cr_expect_eq(search(NF_FMT_Q4_G64_FP16, &p, v, 2, 40, &o, &err), NF_ERR_INVALID);
    cr_expect(strstr(err.message, "one value per input channel (40)") != NULL, "%s", err.message);
    out_free(&o);
    p.importance_len = 40;
    imp[17] = -0.5f;
    cr_expect_eq(search(NF_FMT_Q4_G64_FP16, &p, v, 2, 40, &o, &err), NF_ERR_INVALID);
    cr_expect(strstr(err.message, "channel 17") && strstr(err.message, ">= 0"), "%s", err.message);
    out_free(&o);
    imp[17] = NAN;
    cr_expect_eq(search(NF_FMT_Q4_G64_FP16, &p, v, 2, 40, &o, &err), NF_ERR_INVALID);
    cr_expect(strstr(err.message, "NaN") && strstr(err.message, "finite"), "%s", err.message);
    out_free(&o);
    imp[17] = INFINITY;
    cr_expect_eq(search(NF_FMT_Q4_G64_FP16, &p, v, 2, 40, &o, &err), NF_ERR_INVALID);
    out_free(&o);
    /* the same checks up front, per tensor */
    cr_expect_eq(nf_method_check_params(NF_METHOD_GROUPED_SEARCH, &p, 40, &err), NF_ERR_INVALID);
    imp[17] = 0.0f;
    cr_expect_eq(nf_method_check_params(NF_METHOD_GROUPED_SEARCH, &p, 40, &err), NF_OK, "%s", err.message);
    cr_expect_eq(nf_method_check_params(NF_METHOD_GROUPED_SEARCH, &p, 39, &err), NF_ERR_INVALID);
    cr_expect_eq(nf_method_check_params(NF_METHOD_GROUPED_ABSMAX, &p, 40, &err), NF_ERR_INVALID);
    cr_expect(strstr(err.message, "takes no parameters") != NULL, "%s", err.message);
    cr_expect_eq(nf_method_check_params(NF_METHOD_GROUPED_ABSMAX, NULL, 40, &err), NF_OK);
    /* absmax given parameters through the dispatcher */
    nf_method_params neg = {.negative_scales = true};
    cr_expect_eq(run(NF_METHOD_GROUPED_ABSMAX, NF_FMT_Q4_G64_FP16, &neg, v, 2, 40, 0, &o, &err), NF_ERR_INVALID);
    out_free(&o);
}

Test(search, refuses_q2_t2_and_non_finite)
{
    float v[128] = {1};
    grouped_out o;
    nf_error err = {0};
    cr_expect_eq(search(NF_FMT_Q2_G64_FP16, NULL, v, 1, 64, &o, &err), NF_ERR_INVALID);
    cr_expect(strstr(err.message, "grouped_search") && strstr(err.message, "import_encoded"), "%s", err.message);
    out_free(&o);
    cr_expect_eq(search(NF_FMT_T2_G128_FP16, NULL, v, 1, 128, &o, &err), NF_ERR_INVALID);
    cr_expect(strstr(err.message, "import_encoded") != NULL, "%s", err.message);
    out_free(&o);
    v[70] = -INFINITY;
    cr_expect_eq(run(NF_METHOD_GROUPED_SEARCH, NF_FMT_Q8_G32_FP16, NULL, v, 2, 64, 5, &o, &err), NF_ERR_INVALID);
    cr_expect_str_eq(err.message, "tensor 'w': row 6 col 6: source value -inf is not finite");
    out_free(&o);
}

/* With +m and -m both largest, the first lane decides the sign of the full-range candidates
 * (docs/decisions.md D13). */
Test(search, extreme_is_the_first_largest_lane)
{
    nf_method_params p = {.negative_scales = true};
    float a[64] = {4, -4, 1, -1, 2, 3}, b[64] = {-4, 4, 1, -1, 2, 3};
    const nf_format *f = nf_format_by_id(NF_FMT_Q4_G64_FP16);
    for (int t = 0; t < 2; t++) {
        float *v = t ? b : a;
        grouped_out o;
        nf_error err = {0};
        cr_assert_eq(search(NF_FMT_Q4_G64_FP16, &p, v, 1, 64, &o, &err), NF_OK, "%s", err.message);
        uint16_t w;
        int q[64];
        oracle_search(f, v, NULL, 64, true, &w, q);
        cr_expect_eq(o.w.scales[0], w, "case %d: 0x%04x, oracle 0x%04x", t, o.w.scales[0], w);
        for (int i = 0; i < 64; i++) cr_expect_eq(o.w.codes[i], q[i]);
        out_free(&o);
    }
}

/* A q4 group (found by a random cross-check) where the fit x2^-1 candidate differs depending on
 * whether it scales the binary16-rounded fit or the binary64 one: the fit is a binary16
 * subnormal, where halving is not exact.  The library follows upstream's implementation. */
static const uint32_t fit_group[64] = {
    0x3489d723, 0x360d9286, 0x36e8124a, 0xb69f4111, 0x00000000, 0x363e8c19, 0x35d8c59c, 0x358c23bf,
    0xb68b77c2, 0xb5711b68, 0xb7475ab2, 0x36c06037, 0xb61c4203, 0xb63c2c6e, 0x370dad9e, 0x365e472b,
    0xb5cf3356, 0x3574279b, 0x367e6a86, 0xb59a5f23, 0x366b9089, 0x344e2ef4, 0xb6ef810c, 0xb69f5abc,
    0x3607e060, 0xb58389b1, 0xb6b35e85, 0x36800000, 0x35a37b6c, 0xb63d4e05, 0xb86d2c73, 0x3794354e,
    0xb50240a8, 0x36893358, 0xb5930be8, 0xb683ad63, 0x37a00000, 0xb5bee756, 0x370858db, 0x3688efe2,
    0xb5836889, 0xb8369634, 0xb6db07f8, 0x35f097f4, 0xb457d4dc, 0xb6ee1c29, 0x35d3a260, 0x35b9d221,
    0xb60fc644, 0xb53f4cc5, 0xb69bf024, 0xb5ca8003, 0xb6bbdf20, 0x35008b5a, 0x35930ed5, 0x35c27cbf,
    0xb69e5255, 0x36655aaf, 0x00000000, 0xb6a8a1ea, 0x3500a880, 0xb674029e, 0x35517689, 0xb532b406,
};
static const uint32_t fit_importance[64] = {
    0x3dc247a1, 0x3c658a57, 0x3ba40fdf, 0x3e7d85f0, 0x3d765844, 0x3d15d7c6, 0x3e055c7a, 0x3fb3abd3,
    0x3e80b3b5, 0x406f7530, 0x40f7c662, 0x3d23dacf, 0x3d15ad50, 0x4177395c, 0x00000000, 0x3e6608a3,
    0x40559c98, 0x3cfb8163, 0x40a6650e, 0x3b1cf264, 0x00000000, 0x409bdbc1, 0x3dab80da, 0x3b98b860,
    0x00000000, 0x3e50ab8a, 0x00000000, 0x3ccb43eb, 0x40b71edf, 0x3ca692f9, 0x3b890489, 0x3df7b7c5,
    0x3c4db6d3, 0x3ba5ff64, 0x00000000, 0x3d5764e0, 0x3f2f1426, 0x3e08eb3c, 0x3d486e48, 0x3cf76b41,
    0x41502213, 0x3f93350a, 0x3fd96c35, 0x3dc4a9b1, 0x3d426bea, 0x3f9971a7, 0x41b52395, 0x41dd0a18,
    0x4165371a, 0x40007274, 0x40d9231f, 0x3bb39146, 0x40838cfc, 0x3bf39f83, 0x3fa1181e, 0x3f5212db,
    0x3d26c91a, 0x41599452, 0x3fc4e5fa, 0x3f3879d3, 0x3eb97393, 0x3f574b94, 0x3dda26e1, 0x415d7bb2,
};

Test(search, fit_multiples_scale_the_rounded_fit)
{
    const nf_format *f = nf_format_by_id(NF_FMT_Q4_G64_FP16);
    float x[64], imp[64];
    for (int i = 0; i < 64; i++) {
        memcpy(&x[i], &fit_group[i], 4);
        memcpy(&imp[i], &fit_importance[i], 4);
    }
    uint16_t rounded, unrounded;
    int qr[64], qu[64];
    oracle_search_variant(f, x, imp, 64, true, false, &rounded, qr);
    oracle_search_variant(f, x, imp, 64, true, true, &unrounded, qu);
    cr_assert_neq(rounded, unrounded, "the group no longer separates the two readings");
    nf_method_params p = {.importance = imp, .importance_len = 64, .negative_scales = true};
    grouped_out o;
    nf_error err = {0};
    cr_assert_eq(search(NF_FMT_Q4_G64_FP16, &p, x, 1, 64, &o, &err), NF_OK, "%s", err.message);
    cr_expect_eq(o.w.scales[0], rounded, "scale 0x%04x, rounded-fit reading 0x%04x, binary64-fit reading 0x%04x",
                 o.w.scales[0], rounded, unrounded);
    for (int i = 0; i < 64; i++) cr_expect_eq(o.w.codes[i], qr[i]);
    out_free(&o);
}

/* ------------------------------------------------------------------ random groups */

static float random_value(double scale)
{
    uint32_t k = rng32() % 16;
    if (k == 0) return 0.0f;
    double v = (uniform() + uniform() + uniform()) * scale;
    if (k == 1) v *= 6.0;
    if (k == 2) v = round(uniform() * 8) * scale; /* values on a grid: exact fits exist */
    return (float)v;
}

static float random_importance(void)
{
    uint32_t k = rng32() % 8;
    if (k == 0) return 0.0f;
    return (float)ldexp(fabs(uniform()), (int)(rng32() % 20) - 10);
}

Test(search, random_groups_match_oracle_and_never_lose_to_absmax)
{
    static const nf_format_id ids[4] = {NF_FMT_Q4_G64_FP16, NF_FMT_Q5_G64_FP16, NF_FMT_Q6_G64_FP16, NF_FMT_Q8_G32_FP16};
    uint64_t groups = 0, improved = 0, negative = 0;
    for (int t = 0; t < 240; t++) {
        const nf_format *f = nf_format_by_id(ids[t % 4]);
        bool with_imp = (t / 4) % 2, neg = (t / 8) % 2;
        uint64_t rows = 1 + rng32() % 6, cols = 1 + rng32() % 260;
        float *v = malloc(sizeof(float) * rows * cols);
        float *imp = malloc(sizeof(float) * cols);
        for (uint64_t r = 0; r < rows; r++) {
            double sc = ldexp(1.0 + fabs(uniform()), (int)(rng32() % 40) - 30);
            for (uint64_t c = 0; c < cols; c++) v[r * cols + c] = random_value(sc);
        }
        for (uint64_t c = 0; c < cols; c++) imp[c] = random_importance();
        nf_method_params p = {.importance = with_imp ? imp : NULL,
                              .importance_len = with_imp ? cols : 0,
                              .negative_scales = neg};
        grouped_out a, s;
        nf_error err = {0};
        cr_assert_eq(run(NF_METHOD_GROUPED_ABSMAX, f->id, NULL, v, rows, cols, 0, &a, &err), NF_OK, "%s", err.message);
        cr_assert_eq(search(f->id, &p, v, rows, cols, &s, &err), NF_OK, "%s", err.message);
        for (uint64_t r = 0; r < rows; r++) {
            for (uint64_t gi = 0; gi < s.groups; gi++) {
                uint64_t c0 = gi * f->group_size;
                size_t n = (size_t)(cols - c0 < f->group_size ? cols - c0 : f->group_size);
                const float *x = v + r * cols + c0;
                const float *gimp = with_imp ? imp + c0 : NULL;
                uint16_t ws = s.w.scales[r * s.groups + gi], wa = a.w.scales[r * a.groups + gi];
                int qs[128], qa[128];
                for (size_t i = 0; i < n; i++) {
                    qs[i] = s.w.codes[r * cols + c0 + i];
                    qa[i] = a.w.codes[r * cols + c0 + i];
                    cr_assert(nf_grouped_code_valid(f, qs[i]));
                }
                cr_assert(nf_grouped_scale_valid(f, ws), "scale 0x%04x", ws);
                if (!neg) cr_assert(!(ws & 0x8000), "negative scale 0x%04x without negative_scales", ws);
                if (ws == 0)
                    for (size_t i = 0; i < n; i++) cr_assert_eq(qs[i], 0);
                double es = oracle_error(x, gimp, n, ws, qs), ea = oracle_error(x, gimp, n, wa, qa);
                cr_assert(es <= ea, "%s group: search error %a > absmax error %a", f->name, es, ea);
                improved += es < ea;
                negative += (ws & 0x8000) != 0;
                uint16_t wo;
                int qo[128];
                oracle_search(f, x, gimp, n, neg, &wo, qo);
                cr_assert_eq(ws, wo, "%s row %lu group %lu (imp %d, neg %d): scale 0x%04x, oracle 0x%04x", f->name,
                             (unsigned long)r, (unsigned long)gi, with_imp, neg, ws, wo);
                for (size_t i = 0; i < n; i++) cr_assert_eq(qs[i], qo[i]);
                groups++;
            }
        }
        free(v);
        free(imp);
        out_free(&a);
        out_free(&s);
    }
    cr_log_info("%lu groups, %lu improved on absmax, %lu negative scales", (unsigned long)groups,
                (unsigned long)improved, (unsigned long)negative);
    cr_assert(groups >= 2000, "only %lu groups", (unsigned long)groups);
    cr_assert(improved > groups / 4, "search improved only %lu of %lu groups", (unsigned long)improved,
              (unsigned long)groups);
    cr_assert(negative > 0, "no negative scale was ever chosen");
}

Test(search, chunk_size_independence)
{
    const nf_format *f = nf_format_by_id(NF_FMT_Q4_G64_FP16);
    const uint64_t rows = 23, cols = 130;
    float *v = malloc(sizeof(float) * rows * cols);
    float imp[130];
    for (uint64_t i = 0; i < rows * cols; i++) v[i] = random_value(0.01);
    for (int i = 0; i < 130; i++) imp[i] = random_importance();
    nf_method_params p = {.importance = imp, .importance_len = cols, .negative_scales = true};
    grouped_out whole;
    nf_error err = {0};
    cr_assert_eq(search(f->id, &p, v, rows, cols, &whole, &err), NF_OK, "%s", err.message);
    static const uint64_t chunks[] = {1, 4, 7, 22};
    for (size_t ci = 0; ci < sizeof chunks / sizeof chunks[0]; ci++) {
        for (uint64_t r0 = 0; r0 < rows; r0 += chunks[ci]) {
            uint64_t n = rows - r0 < chunks[ci] ? rows - r0 : chunks[ci];
            grouped_out part;
            cr_assert_eq(run(NF_METHOD_GROUPED_SEARCH, f->id, &p, v + r0 * cols, n, cols, r0, &part, &err), NF_OK, "%s",
                         err.message);
            cr_assert_arr_eq(part.w.codes, whole.w.codes + r0 * cols, n * cols);
            cr_assert_arr_eq(part.w.scales, whole.w.scales + r0 * whole.groups, 2 * n * whole.groups);
            out_free(&part);
        }
    }
    free(v);
    out_free(&whole);
}
