/* grouped_absmax (docs/formats.md 5.5, docs/methods.md, grouped_absmax) and grouped_search
 * (docs/methods.md, grouped_search) for q4/q5/q6/q8.
 *
 * Both work one logical group at a time: the group's values are widened to binary32 into a
 * stack buffer and everything else is a pure function of that buffer (and, for the search, the
 * group's importance weights).  Partial last groups use their logical values only; the zero
 * padding a layout adds would contribute nothing anyway (it is 0 in amax, encodes to code 0, and
 * has zero residual in the search error and zero terms in the least-squares sums). */
#include <inttypes.h>

#include "method/common.h"
#include "method/method_impl.h"
#include "method/grouped.h"
#include "method/simd/absmax_simd.h"
#include "method/simd/search_simd.h"

#define F16_INF_EXP 0x7C00u
#define F16_MAG 0x7FFFu
#define F16_SIGN 0x8000u
#define F16_MAX_FINITE_MAG 0x7BFFu
#define F16_MIN_SUBNORMAL 0x0001u

typedef struct grouped_spec {
    size_t group;      /* G */
    float qmin, qmax;  /* legal code interval, as floats for the clamp */
    float denominator; /* qmax of the reference encoder: 7 / 15 / 31 / 127, never |qmin| */
    double qmin_d, qmax_d;
} grouped_spec;

static nf_status grouped_setup(nf_method_id id, const nf_format *fmt, const nf_src_rows *src, nf_words *out,
                               grouped_spec *g, size_t *k, nf_error *err)
{
    NF_TRY(nf_method_check_target(id, fmt, err));
    NF_TRY(nf_method_check_rows(src, out, k, err));
    if (src->type != NF_SRC_F32 && src->type != NF_SRC_F16 && src->type != NF_SRC_BF16)
        return nf_method_error(err, NF_ERR_INVALID, src, "%s needs a floating-point source, not %s", nf_method_name(id),
                               nf_src_type_name(src->type));
    if (!out->codes || !out->scales)
        return nf_method_error(err, NF_ERR_USAGE, src, "output words lack the codes/scales arrays of %s", fmt->name);
    if (fmt->group_size == 0 || fmt->group_size > NF_METHOD_MAX_GROUP)
        return nf_error_set(err, NF_ERR_USAGE, "group size %u of %s is not supported", fmt->group_size, fmt->name);
    g->group = fmt->group_size;
    g->qmin = (float)fmt->code_min;
    g->qmax = (float)fmt->code_max;
    g->denominator = (float)fmt->encoder_qmax;
    g->qmin_d = (double)fmt->code_min;
    g->qmax_d = (double)fmt->encoder_qmax;
    return NF_OK;
}

/* restrict and the hoisted bounds matter: int8_t stores may alias anything, and without them the
 * loop would not vectorize. */
NF_METHOD_INLINE void codes_n(const float *restrict x, size_t n, float inv, float qmin, float qmax, int8_t *restrict q)
{
    for (size_t i = 0; i < n; i++) q[i] = nf_grouped_code(x[i], inv, qmin, qmax);
}

/* The full-group sizes as constants, so the inlined loops have known trip counts and vectorize
 * under -O2's cost model; partial groups take the generic loop.  Same arithmetic either way. */
static uint32_t amax_word(const float *x, size_t n)
{
    if (n == 64) return nf_method_amax_word(x, 64);
    if (n == 32) return nf_method_amax_word(x, 32);
    return nf_method_amax_word(x, n);
}

static void codes_for(const float *x, size_t n, float inv, const grouped_spec *g, int8_t *q)
{
    float qmin = g->qmin, qmax = g->qmax;
    if (n == 64) codes_n(x, 64, inv, qmin, qmax, q);
    else if (n == 32) codes_n(x, 32, inv, qmin, qmax, q);
    else codes_n(x, n, inv, qmin, qmax, q);
}

/* Loads group gi of chunk row r into x; returns its logical length, *amax and the index of the
 * first non-finite value (n when all are finite). */
static size_t load_group(const nf_src_rows *src, const grouped_spec *g, size_t k, uint64_t r, size_t gi, float *x,
                         float *amax, size_t *bad)
{
    size_t c0 = gi * g->group;
    size_t n = k - c0 < g->group ? k - c0 : g->group;
    if (n == 64) nf_method_load_f32_inline(src, r, c0, 64, x);
    else if (n == 32) nf_method_load_f32_inline(src, r, c0, 32, x);
    else nf_method_load_f32(src, r, c0, n, x);
    uint32_t m = amax_word(x, n);
    memcpy(amax, &m, sizeof m);
    *bad = m < 0x7F800000u ? n : nf_method_first_nonfinite(x, n);
    return n;
}

static nf_status nonfinite_error(nf_error *err, const nf_src_rows *src, uint64_t r, size_t col, float v)
{
    return nf_method_row_error(err, NF_ERR_INVALID, src, r, " col %zu: source value %s is not finite",
                               nf_method_col(src, col), nf_method_nonfinite_name(v));
}

/* The canonical scale word of a group with amax > 0: f16(f32(amax / qmax)), 2^-24 when that
 * underflows to +0; false when it overflows to infinity (amax / qmax >= 65520).  f32(amax /
 * qmax) is the same number as docs/methods.md's float32(float64(amax) / qmax): the binary64
 * quotient of binary32 operands double-rounds innocuously to binary32. */
static bool absmax_scale(float amax, const grouped_spec *g, uint16_t *word)
{
    float raw = amax / g->denominator;
    uint16_t w = nf_f32_to_f16(raw);
    if (w == 0) w = F16_MIN_SUBNORMAL;
    if ((w & F16_INF_EXP) == F16_INF_EXP) return false;
    *word = w;
    return true;
}

/* Section 7.2 code selection for a finite nonzero scale word. */
static void select_codes(const float *x, size_t n, uint16_t word, const grouped_spec *g, int8_t *q)
{
    codes_for(x, n, nf_recip_f32(nf_f16_to_f32(word)), g, q);
}

/* Canonical result of one group; false on scale overflow (codes untouched then). */
static bool absmax_group(const float *x, size_t n, float amax, const grouped_spec *g, uint16_t *word, int8_t *q)
{
    if (amax == 0.0f) {
        *word = 0x0000;
        memset(q, 0, n);
        return true;
    }
    if (!absmax_scale(amax, g, word)) return false;
    select_codes(x, n, *word, g, q);
    return true;
}

static nf_status overflow_error(nf_error *err, const nf_src_rows *src, uint64_t r, size_t gi, size_t n,
                                const grouped_spec *g, float amax)
{
    /* a span starts on a group boundary (NF_COLSPAN_ALIGN is a multiple of every group size) */
    size_t c0 = nf_method_col(src, gi * g->group);
    return nf_method_row_error(err, NF_ERR_INVALID, src, r,
                               " group %zu (cols %zu..%zu): scale amax / qmax = %.9g / %.0f = %.9g overflows binary16",
                               c0 / g->group, c0, c0 + n - 1, (double)amax, (double)g->denominator,
                               (double)(amax / g->denominator));
}

/* Rows of grouped_absmax, measured into st when it is not NULL (method_impl.h). */
static nf_status absmax_rows(const nf_format *fmt, const nf_src_rows *src, nf_words *out, nf_errstats *st,
                             nf_error *err)
{
    grouped_spec g = {0}; /* filled by grouped_setup; zeroed so -O3 sees it initialised */
    size_t k;
    NF_TRY(grouped_setup(NF_METHOD_GROUPED_ABSMAX, fmt, src, out, &g, &k, err));
    size_t groups = (k + g.group - 1) / g.group;
    float x[NF_METHOD_MAX_GROUP];
    /* SIMD hook (method/simd/absmax_simd.h): the active kernel encodes a row to the same words
     * as the loop below, or declines it (a non-finite value or an overflowing scale) and the loop
     * below, the reference, encodes the row and names the error.  A kernel measures what it
     * encodes; the columns it did not measure (all of them at the scalar level) are measured
     * from the words afterwards, in the same statistics blocks. */
    nf_absmax_row_fn kernel = nf_absmax_kernels_active()->row;
    const nf_stats_kernels *sk = st ? nf_stats_kernels_active() : NULL;
    const nf_absmax_shape shape = {.group = g.group, .qmin = g.qmin, .qmax = g.qmax, .denominator = g.denominator};
    size_t esize = nf_src_type_size(src->type), row_bytes = k * esize;
    for (uint64_t r = 0; r < src->rows; r++) {
        int8_t *codes = out->codes + (size_t)r * k;
        uint16_t *scales = out->scales + (size_t)r * groups;
        const uint8_t *row = (const uint8_t *)src->data + (size_t)r * row_bytes;
        size_t measured = 0;
        if (!kernel(row, src->type, k, &shape, codes, scales, st, &measured)) {
            for (size_t gi = 0; gi < groups; gi++) {
                float amax;
                size_t bad;
                size_t n = load_group(src, &g, k, r, gi, x, &amax, &bad);
                if (bad < n) return nonfinite_error(err, src, r, gi * g.group + bad, x[bad]);
                if (!absmax_group(x, n, amax, &g, &scales[gi], codes + gi * g.group))
                    return overflow_error(err, src, r, gi, n, &g, amax);
            }
        }
        if (st && measured < k)
            sk->row_grouped(row + measured * esize, nf_absmax_stats_source(src->type), codes + measured,
                            scales + measured / g.group, k - measured, (unsigned)g.group, st);
    }
    return NF_OK;
}

nf_status nf_grouped_absmax_rows(const nf_format *fmt, const nf_src_rows *src, nf_words *out, nf_error *err)
{
    return absmax_rows(fmt, src, out, NULL, err);
}

nf_status nf_grouped_absmax_rows_measured(const nf_format *fmt, const nf_src_rows *src, nf_words *out, nf_errstats *st,
                                          nf_error *err)
{
    return absmax_rows(fmt, src, out, st, err);
}

/* ---------------------------------------------------------------- grouped_search */

/* One group being searched: its values, weights (NULL = all 1), and the best result so far. */
typedef struct search_group {
    const float *x;
    const double *w;
    size_t n;
    const grouped_spec *g;
    bool negative_scales;
    uint16_t best_word;
    double best_err;
    int8_t best_q[NF_METHOD_MAX_GROUP];
} search_group;

/* sum_k w[k] * (x[k] - s * q[k])^2 in binary64, k ascending.  s * q is exact in binary64 (an
 * 11-bit significand times an 8-bit integer); the weighted square is (w * r) * r as upstream's
 * `weights * residual * residual` evaluates it. */
static double group_error(const search_group *sg, double s, const int8_t *q)
{
    double e = 0.0;
    for (size_t i = 0; i < sg->n; i++) {
        double r = (double)sg->x[i] - s * (double)q[i];
        double wr = sg->w ? sg->w[i] * r : r;
        e += wr * r;
    }
    return e;
}

/* Weighted least-squares scale of codes q: sum w*x*q / sum w*q*q, 0 when the denominator is 0
 * (upstream clamps the denominator to 1e-300, which binary32 weights can never go below). */
static double least_squares(const search_group *sg, const int8_t *q)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < sg->n; i++) {
        double w = sg->w ? sg->w[i] : 1.0;
        double xq = (double)q[i];
        num += (w * (double)sg->x[i]) * xq;
        den += (w * xq) * xq;
    }
    return den > 0.0 ? num / den : 0.0;
}

/* Upstream's _round_scales: float64 -> float32 -> float16, a nonzero candidate that underflows
 * to (either) zero becomes the smallest subnormal of its sign (docs/decisions.md D6), overflow
 * gives the infinity word which valid() rejects.  Magnitudes >= 65536 are infinite in binary16
 * however they round, and are caught first so the double -> float conversion never overflows. */
static uint16_t round_candidate(double c)
{
    if (!(fabs(c) < 65536.0)) return (uint16_t)(c < 0.0 ? F16_SIGN | F16_INF_EXP : F16_INF_EXP);
    uint16_t w = nf_f32_to_f16((float)c);
    if ((w & F16_MAG) == 0 && c != 0.0) w = (uint16_t)(c < 0.0 ? F16_SIGN | F16_MIN_SUBNORMAL : F16_MIN_SUBNORMAL);
    return w;
}

/* Upstream's _ulp_neighbour: the word n steps away on the magnitude bits, sign kept; 0 (never a
 * valid candidate) when starting from a zero magnitude or leaving (0, 0x7BFF].  An infinite word
 * steps down to the largest finite ones, as upstream's does. */
static uint16_t step_word(uint16_t w, int n)
{
    int mag = (int)(w & F16_MAG);
    int m = mag + n;
    if (mag == 0 || m <= 0 || m > (int)F16_MAX_FINITE_MAG) return 0;
    return (uint16_t)((w & F16_SIGN) | (unsigned)m);
}

/* A candidate competes when finite, nonzero, and positive unless negative scales are allowed. */
static bool valid_candidate(const search_group *sg, uint16_t w)
{
    if ((w & F16_MAG) == 0 || (w & F16_INF_EXP) == F16_INF_EXP) return false;
    return sg->negative_scales || !(w & F16_SIGN);
}

static void consider(search_group *sg, uint16_t w)
{
    if (!valid_candidate(sg, w)) return;
    int8_t q[NF_METHOD_MAX_GROUP];
    select_codes(sg->x, sg->n, w, sg->g, q);
    double e = group_error(sg, (double)nf_f16_to_f32(w), q);
    if (e < sg->best_err) { /* strictly smaller: earlier candidates win ties */
        sg->best_word = w;
        sg->best_err = e;
        memcpy(sg->best_q, q, sg->n);
    }
}

/* SEARCH_RATIOS[i] = round(0.70 + 0.02 i, 2): the binary64 nearest (70 + 2i) / 100, which is
 * what a correctly rounded division of the two exact integers yields. */
static double search_ratio(int i) { return (double)(70 + 2 * i) / 100.0; }

#define SEARCH_RATIO_COUNT 25

/* The search of one group whose amax > 0 and whose baseline (the absmax result) is in sg.
 * 69 scales in all: the baseline and 68 candidates, in docs/methods.md, grouped_search order. */
static void search(search_group *sg, float amax)
{
    const grouped_spec *g = sg->g;
    /* The canonical word and codes, kept before any candidate can replace them. */
    uint16_t canonical = sg->best_word;
    int8_t canonical_q[NF_METHOD_MAX_GROUP];
    memcpy(canonical_q, sg->best_q, sg->n);

    /* 1. 25 ratios of the max-abs scale amax / qmax (binary64) */
    double base = (double)amax / g->qmax_d;
    for (int i = 0; i < SEARCH_RATIO_COUNT; i++) consider(sg, round_candidate(base * search_ratio(i)));

    /* 2. 25 ratios of the full-range scale extreme / qmin; extreme is the signed value of the
     *    first lane holding the largest magnitude (docs/decisions.md D13), so the candidates are
     *    negative when it is positive */
    size_t ext = 0;
    for (size_t i = 1; i < sg->n; i++)
        if (fabsf(sg->x[i]) > fabsf(sg->x[ext])) ext = i;
    double full = (double)sg->x[ext] / g->qmin_d;
    for (int i = 0; i < SEARCH_RATIO_COUNT; i++) consider(sg, round_candidate(full * search_ratio(i)));

    /* 3. the canonical scale times 2^-2, 2^-1, 2^1, 2^2 */
    double canon = (double)nf_f16_to_f32(canonical);
    consider(sg, round_candidate(canon * 0.25));
    consider(sg, round_candidate(canon * 0.5));
    consider(sg, round_candidate(canon * 2.0));
    consider(sg, round_candidate(canon * 4.0));

    /* 4. the canonical scale's binary16 steps -2, -1, +1, +2 */
    static const int steps[4] = {-2, -1, 1, 2};
    for (int i = 0; i < 4; i++) consider(sg, step_word(canonical, steps[i]));

    /* 5. least squares of the canonical codes, rounded; the rounded fit times 2^-1 and 2^1 (as
     *    upstream's implementation scales the binary16 fit, not the binary64 one); its steps */
    uint16_t fit = round_candidate(least_squares(sg, canonical_q));
    consider(sg, fit);
    double fit_value = (double)nf_f16_to_f32(fit); /* may be infinite: then so are its multiples */
    consider(sg, round_candidate(fit_value * 0.5));
    consider(sg, round_candidate(fit_value * 2.0));
    for (int i = 0; i < 4; i++) consider(sg, step_word(fit, steps[i]));

    /* 6. least squares of the best codes so far, rounded, and its steps -1, +1 */
    uint16_t refit = round_candidate(least_squares(sg, sg->best_q));
    consider(sg, refit);
    consider(sg, step_word(refit, -1));
    consider(sg, step_word(refit, 1));
}

/* The reference (search_simd.h): one candidate at a time through consider(), as the method is
 * written down.  nf_grouped_search_rows below runs the same checks and the same baseline, and
 * hands each group with amax > 0 to a fast path that must give these words bit for bit. */
nf_status nf_grouped_search_rows_reference(const nf_format *fmt, const nf_method_params *params, const nf_src_rows *src,
                                           nf_words *out, nf_error *err)
{
    grouped_spec g = {0}; /* filled by grouped_setup; zeroed so -O3 sees it initialised */
    size_t k;
    NF_TRY(grouped_setup(NF_METHOD_GROUPED_SEARCH, fmt, src, out, &g, &k, err));
    if (params) {
        nf_status st = nf_method_check_params(NF_METHOD_GROUPED_SEARCH, params, src->cols, err);
        if (st != NF_OK) {
            if (src->name) nf_error_prefix(err, "tensor '%s'", src->name);
            return st;
        }
    }
    const float *imp = params ? params->importance : NULL;
    size_t groups = (k + g.group - 1) / g.group;
    float x[NF_METHOD_MAX_GROUP];
    double w[NF_METHOD_MAX_GROUP];
    search_group sg;
    sg.x = x;
    sg.g = &g;
    sg.negative_scales = params && params->negative_scales;
    for (uint64_t r = 0; r < src->rows; r++) {
        int8_t *codes = out->codes + (size_t)r * k;
        uint16_t *scales = out->scales + (size_t)r * groups;
        for (size_t gi = 0; gi < groups; gi++) {
            float amax;
            size_t bad;
            size_t n = load_group(src, &g, k, r, gi, x, &amax, &bad);
            if (bad < n) return nonfinite_error(err, src, r, gi * g.group + bad, x[bad]);
            sg.n = n;
            if (!absmax_group(x, n, amax, &g, &sg.best_word, sg.best_q))
                return overflow_error(err, src, r, gi, n, &g, amax);
            if (amax > 0.0f) {
                /* Importance of the group's logical lanes; padding lanes would weigh 0. */
                sg.w = NULL;
                if (imp) {
                    for (size_t i = 0; i < n; i++) w[i] = (double)imp[gi * g.group + i];
                    sg.w = w;
                }
                sg.best_err = group_error(&sg, (double)nf_f16_to_f32(sg.best_word), sg.best_q);
                search(&sg, amax);
            }
            scales[gi] = sg.best_word;
            memcpy(codes + gi * g.group, sg.best_q, n);
        }
    }
    return NF_OK;
}

/* The pending groups of nf_grouped_search_rows (search_simd.h): three queues of up to
 * NF_SEARCH_BATCH groups (full-range candidates competing, full-range candidates all negative
 * and not competing, outside the screening range), whose values live in a pool of slots. */
enum { SEARCH_COMPETING, SEARCH_NEGATIVE_FULL, SEARCH_UNSCREENED, SEARCH_QUEUES };
#define SEARCH_SLOTS (SEARCH_QUEUES * NF_SEARCH_BATCH)

typedef struct search_queues {
    float x[SEARCH_SLOTS][NF_METHOD_MAX_GROUP]; /* a group's values, zero-padded up to G */
    unsigned free_slot[SEARCH_SLOTS];
    size_t nfree;
    nf_search_group g[SEARCH_QUEUES][NF_SEARCH_BATCH];
    unsigned slot[SEARCH_QUEUES][NF_SEARCH_BATCH];
    size_t count[SEARCH_QUEUES];
} search_queues;

static void search_flush(search_queues *Q, int qi, const nf_search_kernels *kern, const nf_search_shape *sh)
{
    if (!Q->count[qi]) return;
    kern->batch(sh, Q->g[qi], Q->count[qi], qi != SEARCH_UNSCREENED);
    for (size_t i = 0; i < Q->count[qi]; i++) Q->free_slot[Q->nfree++] = Q->slot[qi][i];
    Q->count[qi] = 0;
}

/* The fast path (search_simd.h): the reference's checks, errors and baseline, group by group in
 * order; the groups with amax > 0 are searched by the active kernel in batches. */
nf_status nf_grouped_search_rows(const nf_format *fmt, const nf_method_params *params, const nf_src_rows *src,
                                 nf_words *out, nf_error *err)
{
    grouped_spec g = {0}; /* filled by grouped_setup; zeroed so -O3 sees it initialised */
    size_t k;
    NF_TRY(grouped_setup(NF_METHOD_GROUPED_SEARCH, fmt, src, out, &g, &k, err));
    if (params) {
        nf_status st = nf_method_check_params(NF_METHOD_GROUPED_SEARCH, params, src->cols, err);
        if (st != NF_OK) {
            if (src->name) nf_error_prefix(err, "tensor '%s'", src->name);
            return st;
        }
    }
    size_t G = g.group, groups = (k + G - 1) / G;
    const float *imp = params ? params->importance : NULL;
    const nf_search_shape sh = {.group = G,
                                .qmin = g.qmin,
                                .qmax = g.qmax,
                                .qmin_d = g.qmin_d,
                                .denominator = g.denominator,
                                .denominator_d = g.qmax_d,
                                .negative_scales = params && params->negative_scales};
    const nf_search_kernels *kern = nf_search_kernels_active();
    /* The weights of a partial last group, zero-padded; whether every weight is in the
     * screening range (else each group's are checked). */
    float wtail[NF_METHOD_MAX_GROUP] = {0};
    bool weights_screenable = true;
    if (imp) {
        if (k % G) memcpy(wtail, imp + (groups - 1) * G, (k % G) * sizeof *wtail);
        weights_screenable = nf_search_screenable(1.0f, nf_method_amax_word(imp, k));
    }
    /* the kernels' loading reads little-endian floating-point bytes */
    bool fast_load = false;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    fast_load = true;
#endif
    size_t esize = nf_src_type_size(src->type);
    search_queues Q;
    Q.nfree = SEARCH_SLOTS;
    for (unsigned i = 0; i < SEARCH_SLOTS; i++) Q.free_slot[i] = i;
    for (int qi = 0; qi < SEARCH_QUEUES; qi++) Q.count[qi] = 0;
    for (uint64_t r = 0; r < src->rows; r++) {
        int8_t *codes = out->codes + (size_t)r * k;
        uint16_t *scales = out->scales + (size_t)r * groups;
        for (size_t gi = 0; gi < groups; gi++) {
            unsigned si = Q.free_slot[Q.nfree - 1]; /* a queue that fills is flushed at once */
            float *x = Q.x[si];
            float amax, extreme = 0.0f;
            size_t bad, n;
            if (fast_load) {
                size_t c0 = gi * G;
                n = k - c0 < G ? k - c0 : G;
                uint32_t m = kern->load((const uint8_t *)src->data + ((size_t)r * k + c0) * esize, src->type, n, x,
                                        &extreme);
                memcpy(&amax, &m, sizeof m);
                bad = m < 0x7F800000u ? n : nf_method_first_nonfinite(x, n);
            } else {
                n = load_group(src, &g, k, r, gi, x, &amax, &bad);
                if (bad == n && amax > 0.0f) extreme = kern->extreme(x, n, amax);
            }
            if (bad < n) return nonfinite_error(err, src, r, gi * G + bad, x[bad]);
            if (amax == 0.0f) {
                scales[gi] = 0x0000;
                memset(codes + gi * G, 0, n);
                continue;
            }
            /* absmax_scale's refusal: f32(amax / qmax) rounds to the binary16 infinity exactly
             * from 65520 up (the tie above 65504 goes to the even word, infinity); the word
             * itself is formed by the kernel */
            if (!(amax / g.denominator < 65520.0f)) return overflow_error(err, src, r, gi, n, &g, amax);
            if (n < G) memset(x + n, 0, (G - n) * sizeof *x);
            const float *wf = imp ? (n < G ? wtail : imp + gi * G) : NULL;
            bool screen = nf_search_screenable(amax, weights_screenable ? 0 : amax_word(wf, n));
            int qi = !screen                                 ? SEARCH_UNSCREENED
                     : !sh.negative_scales && extreme > 0.0f ? SEARCH_NEGATIVE_FULL
                                                             : SEARCH_COMPETING;
            Q.nfree--;
            Q.slot[qi][Q.count[qi]] = si;
            Q.g[qi][Q.count[qi]++] = (nf_search_group){.x = x,
                                                       .wf = wf,
                                                       .n = n,
                                                       .amax = amax,
                                                       .extreme = extreme,
                                                       .word = &scales[gi],
                                                       .q = codes + gi * G};
            if (Q.count[qi] == NF_SEARCH_BATCH) search_flush(&Q, qi, kern, &sh);
        }
    }
    for (int qi = 0; qi < SEARCH_QUEUES; qi++) search_flush(&Q, qi, kern, &sh);
    return NF_OK;
}
