/* The budget's measuring pass and allocation (docs/recipes.md, "Budgets").
 *
 * For every tensor left to the budget (an item) and every candidate it may take (an option),
 * the error is measured with the real encoder on the real weights: the sampled rows are read as
 * the conversion reads them, encoded, decoded, and compared with the budget's weighted squared
 * error (budget/werror.h).  The sample is the same for every option of a tensor, and the rule
 * that picks it depends only on the tensor's rows and budget.sample_rows, so the figures -- and
 * the allocation solved from them (budget/solve.h) -- do not depend on the thread count.
 *
 * The sampling rule: a tensor of N rows with S = min(N, sample_rows) (S = N when sample_rows is
 * 0) measures rows floor((2i + 1) N / (2S)) for i < S, evenly spaced, and estimates the tensor's
 * error as the sample's times N / S; with S = N the estimate is the exact figure.
 *
 * A sampled row longer than SPAN_VALUES is measured span by span (docs/layouts.md section 12), as
 * the conversion encodes it (execute.c), so memory stays bounded whatever the row's length: each
 * option encodes a span as it would the whole row there (fp8_row_maxabs given the row's maximum,
 * ggml_quantize with an importance vector the row's sum of squares),
 * and the error's blocks start at a span's first column (budget/werror.h), so the figures are the
 * whole rows' to the bit. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ninfer/escape.h>

#include "budget/werror.h"
#include "common/checked.h"
#include "convert/convert_impl.h"

/* Values of a row measured at once: a multiple of NF_COLSPAN_ALIGN (the conversion's chunk). */
#define SPAN_VALUES ((uint64_t)1 << 18)

/* ---------------------------------------------------------------- sampling */
static uint64_t sample_count(const plan_budget_item *it, uint64_t sample_rows)
{
    return sample_rows == 0 || sample_rows >= it->rows ? it->rows : sample_rows;
}

/* (2i + 1) N: i < N < 2^63 (rows of a tensor), so the product fits in 128 bits */
__extension__ typedef unsigned __int128 u128;

static uint64_t sample_row(uint64_t i, uint64_t s, uint64_t rows)
{
    return (uint64_t)(((2 * (u128)i + 1) * rows) / (2 * (u128)s));
}

/* ---------------------------------------------------------------- one item */
/* The words of one row for each option, and the row's values (x) and represented values (y). */
typedef struct scratch {
    float *x, *y;
    size_t cols;
} scratch;

static nf_status scratch_fit(scratch *sc, uint64_t cols, nf_error *err)
{
    if (cols <= sc->cols) return NF_OK;
    size_t n;
    if (!nf_u64_to_size(cols, &n) || n > SIZE_MAX / sizeof(float))
        return nf_error_set(err, NF_ERR_NOMEM, "out of memory (a row of %llu values)", (unsigned long long)cols);
    float *x = realloc(sc->x, n * sizeof *x);
    if (x) sc->x = x;
    float *y = x ? realloc(sc->y, n * sizeof *y) : NULL;
    if (y) sc->y = y;
    if (!x || !y) return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    sc->cols = n;
    return NF_OK;
}

/* The columns of a row measured at once: spans of SPAN_VALUES when the row is longer and every
 * option's layout can be cut into spans, else the whole row. */
static uint64_t measure_span(const plan_budget_item *it, const nf_geometry *g)
{
    if (it->cols <= SPAN_VALUES) return it->cols;
    for (size_t k = 0; k < it->nopts; k++)
        if (!nf_layout_has_colspans(&g[k])) return it->cols;
    return SPAN_VALUES;
}

/* What a span of row r needs of the whole row, per option (execute.c reads it alike): the largest
 * magnitude word for fp8_row_maxabs (nf_src_rows.row_max), the sum of x^2 in column order for
 * ggml_quantize with an importance vector (row_sum2; nothing for the types that do not use it). */
typedef struct whole_row {
    uint32_t max;
    float sum2;
} whole_row;

static bool needs_whole_row(const plan_candidate *cd, const plan_option *op)
{
    return cd->method == NF_METHOD_FP8_ROW_MAXABS || (cd->method == NF_METHOD_GGML_QUANTIZE && op->params.importance);
}

static nf_status row_wholes(const plan_budget *b, const plan_budget_item *it, uint64_t r, uint64_t span, scratch *sc,
                            whole_row *wr, nf_error *err)
{
    bool any = false;
    for (size_t k = 0; k < it->nopts; k++) {
        wr[k] = (whole_row){0, 0.0f};
        any = any || needs_whole_row(&b->cands[it->opts[k].cand], &it->opts[k]);
    }
    for (uint64_t c0 = 0; any && c0 < it->cols; c0 += span) {
        uint64_t n = it->cols - c0 < span ? it->cols - c0 : span;
        NF_TRY(nf_source_read_f32_span(it->source->src, it->t, r, c0, n, sc->x, sc->cols, err));
        nf_src_rows rows = {.name = it->t->name, .type = NF_SRC_F32, .data = sc->x, .first_row = r, .rows = 1,
                            .cols = n, .first_col = c0, .row_cols = it->cols};
        for (size_t k = 0; k < it->nopts; k++) {
            const plan_candidate *cd = &b->cands[it->opts[k].cand];
            if (!needs_whole_row(cd, &it->opts[k])) continue;
            if (cd->method == NF_METHOD_GGML_QUANTIZE) {
                NF_TRY(nf_ggml_quantize_row_sum2(cd->fmt, &rows, &wr[k].sum2, err));
                continue;
            }
            uint32_t mx;
            NF_TRY(nf_fp8_row_maxabs_max(cd->fmt, &rows, &mx, err));
            if (mx > wr[k].max) wr[k].max = mx;
        }
    }
    return NF_OK;
}

/* Columns [c0, c0 + n) of sampled row r (the whole row, or a span of it) by every option into
 * acc[k]: read, encoded, decoded and compared. */
static nf_status measure_cols(const plan_budget *b, const plan_budget_item *it, uint64_t r, uint64_t c0, uint64_t n,
                              const nf_geometry *g, nf_words *w, const whole_row *wr, scratch *sc, nf_xsum *acc,
                              nf_error *err)
{
    const nf_source *src = it->source->src;
    const bool whole = n == it->cols;
    nf_status st = whole ? nf_source_read_f32(src, it->t, r, r + 1, sc->x, (size_t)n, err)
                         : nf_source_read_f32_span(src, it->t, r, c0, n, sc->x, sc->cols, err);
    if (st != NF_OK) {
        nf_error_prefix(err, "%s", nf_source_path(src));
        return st;
    }
    nf_src_rows rows = {.name = it->t->name, .type = NF_SRC_F32, .data = sc->x, .first_row = r, .rows = 1, .cols = n};
    if (!whole) {
        rows.first_col = c0;
        rows.row_cols = it->cols;
    }
    for (size_t k = 0; k < it->nopts; k++) {
        const plan_candidate *cd = &b->cands[it->opts[k].cand];
        nf_method_params params = it->opts[k].params;
        nf_colspan sp;
        const nf_geometry *gk = &g[k];
        nf_words view = w[k];
        view.rows = 1;
        if (!whole) { /* the span as a row of its own: its columns of the importance, its geometry */
            NF_TRY(nf_colspan_init(&sp, &g[k], 0, c0, n, err));
            gk = &sp.g;
            view.cols = n;
            rows.row_max = wr[k].max;
            rows.row_sum2 = wr[k].sum2;
            rows.has_row_sum2 = cd->method == NF_METHOD_GGML_QUANTIZE && params.importance;
            if (params.importance) {
                params.importance += c0;
                params.importance_len = n;
            }
        }
        st = nf_method_encode_rows(cd->method, cd->fmt, &params, &rows, &view, err);
        if (st == NF_OK) st = nf_convert_words_values(gk, &view, 0, sc->y, err);
        if (st != NF_OK) {
            nf_error_prefix(err, "%s: measuring %s by %s", nf_source_path(src), cd->fmt->name, nf_method_name(cd->method));
            return st;
        }
        nf_budget_werror_rows(sc->x, sc->y, 1, n, c0, it->weights, &acc[k]);
    }
    return NF_OK;
}

/* The option's error on the sampled rows, summed exactly (acc[k] for option k). */
static nf_status measure_item(const plan_budget *b, plan_budget_item *it, uint64_t sample_rows, scratch *sc,
                              nf_error *err)
{
    uint64_t s = sample_count(it, sample_rows);
    nf_xsum *acc = calloc(it->nopts, sizeof *acc);
    nf_geometry *g = calloc(it->nopts, sizeof *g);
    nf_words *w = calloc(it->nopts, sizeof *w);
    whole_row *wr = calloc(it->nopts, sizeof *wr);
    nf_status st = acc && g && w && wr ? NF_OK : nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    uint64_t shape[2] = {1, it->cols};
    for (size_t k = 0; st == NF_OK && k < it->nopts; k++) {
        const plan_candidate *cd = &b->cands[it->opts[k].cand];
        nf_xsum_init(&acc[k]);
        st = nf_geometry_init(&g[k], cd->layout, cd->fmt, 2, shape, 1, err);
    }
    const uint64_t span = st == NF_OK ? measure_span(it, g) : it->cols;
    for (size_t k = 0; st == NF_OK && k < it->nopts; k++) { /* the words of one span (or row) */
        nf_colspan sp;
        if (span < it->cols) st = nf_colspan_init(&sp, &g[k], 0, 0, span, err);
        if (st == NF_OK) st = nf_words_alloc(&w[k], span < it->cols ? &sp.g : &g[k], 1, err);
    }
    if (st == NF_OK) st = scratch_fit(sc, span, err);
    for (uint64_t i = 0; st == NF_OK && i < s; i++) {
        uint64_t r = sample_row(i, s, it->rows);
        if (span < it->cols) st = row_wholes(b, it, r, span, sc, wr, err);
        if (st != NF_OK) nf_error_prefix(err, "%s", nf_source_path(it->source->src));
        for (uint64_t c0 = 0; st == NF_OK && c0 < it->cols; c0 += span)
            st = measure_cols(b, it, r, c0, it->cols - c0 < span ? it->cols - c0 : span, g, w, wr, sc, acc, err);
    }
    for (size_t k = 0; st == NF_OK && k < it->nopts; k++) {
        double e = nf_xsum_value(&acc[k]);
        it->opts[k].error = s == it->rows ? e : e * ((double)it->rows / (double)s);
        if (!isfinite(it->opts[k].error))
            st = nf_error_set(err, NF_ERR_INVALID, "tensor '%s': its weighted squared error by %s is beyond binary64",
                              it->t->name, b->cands[it->opts[k].cand].fmt->name);
    }
    it->sampled = s;
    for (size_t k = 0; w && k < it->nopts; k++) nf_words_free(&w[k]);
    free(w);
    free(g);
    free(acc);
    free(wr);
    return st;
}

/* ---------------------------------------------------------------- the measuring pass */
typedef struct pass {
    plan_budget *b;
    uint64_t sample_rows;
    atomic_size_t next;
    pthread_mutex_t lock;
    size_t failed;        /* the first failing item (the message is the same on any thread count) */
    nf_error error;
} pass;

static void *measure_worker(void *arg)
{
    pass *ps = arg;
    scratch sc = {0};
    for (;;) {
        size_t i = atomic_fetch_add(&ps->next, 1);
        if (i >= ps->b->nitems) break;
        pthread_mutex_lock(&ps->lock);
        bool past = i > ps->failed;
        pthread_mutex_unlock(&ps->lock);
        if (past) break; /* items are taken in order: every later one is past the failure too */
        nf_error e;
        if (measure_item(ps->b, &ps->b->items[i], ps->sample_rows, &sc, &e) != NF_OK) {
            pthread_mutex_lock(&ps->lock);
            if (i < ps->failed) {
                ps->failed = i;
                ps->error = e;
            }
            pthread_mutex_unlock(&ps->lock);
        }
    }
    free(sc.x);
    free(sc.y);
    return NULL;
}

static nf_status measure_all(plan_budget *b, uint64_t sample_rows, unsigned threads, nf_error *err)
{
    if (threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (unsigned)n : 1u;
    }
    if (threads > b->nitems) threads = b->nitems ? (unsigned)b->nitems : 1u;
    pass ps = {.b = b, .sample_rows = sample_rows, .failed = SIZE_MAX};
    atomic_init(&ps.next, 0);
    pthread_mutex_init(&ps.lock, NULL);
    pthread_t *tids = calloc(threads, sizeof *tids);
    unsigned started = 0;
    for (; tids && started < threads; started++)
        if (pthread_create(&tids[started], NULL, measure_worker, &ps) != 0) break;
    if (started == 0) measure_worker(&ps); /* no thread to spare: measure here */
    for (unsigned i = 0; i < started; i++) pthread_join(tids[i], NULL);
    free(tids);
    pthread_mutex_destroy(&ps.lock);
    if (ps.failed != SIZE_MAX) {
        if (err) *err = ps.error;
        return ps.error.status;
    }
    return NF_OK;
}

/* ---------------------------------------------------------------- allocation */
/* ---------------------------------------------------------------- a plan's figures */
json_t *nf_budget_figures(const plan_budget *b)
{
    json_t *rows = json_array(), *errors = json_array();
    for (size_t i = 0; i < b->nitems; i++) {
        const plan_budget_item *it = &b->items[i];
        json_t *e = json_array();
        for (size_t k = 0; k < it->nopts; k++) json_array_append_new(e, json_real(it->opts[k].error));
        json_array_append_new(errors, e);
        json_array_append_new(rows, json_integer((json_int_t)it->sampled));
    }
    return json_pack("{s:o,s:o}", "rows_measured", rows, "errors", errors);
}

/* The figures of a plan's maker in place of a measuring pass: one list per item, one finite
 * error >= 0 per option, and the rows this plan would measure. */
static nf_status take_figures(plan_budget *b, const json_t *f, uint64_t sample_rows, nf_error *err)
{
    const json_t *rows = json_object_get(f, "rows_measured"), *errors = json_object_get(f, "errors");
    if (!json_is_array(rows) || !json_is_array(errors) || json_array_size(rows) != b->nitems ||
        json_array_size(errors) != b->nitems)
        return nf_error_set(err, NF_ERR_INVALID, "the plan's budget figures are not those of this plan's %zu tensors",
                            b->nitems);
    for (size_t i = 0; i < b->nitems; i++) {
        plan_budget_item *it = &b->items[i];
        const json_t *e = json_array_get(errors, i), *r = json_array_get(rows, i);
        if (!json_is_array(e) || json_array_size(e) != it->nopts || !json_is_integer(r) ||
            json_integer_value(r) != (json_int_t)sample_count(it, sample_rows))
            return nf_error_set(err, NF_ERR_INVALID, "the plan's budget figures of tensor '%s' are not this plan's",
                                it->t->name);
        it->sampled = sample_count(it, sample_rows);
        for (size_t k = 0; k < it->nopts; k++) {
            const json_t *v = json_array_get(e, k);
            double x = json_is_real(v) ? json_real_value(v) : json_is_integer(v) ? (double)json_integer_value(v) : NAN;
            if (!isfinite(x) || x < 0)
                return nf_error_set(err, NF_ERR_INVALID, "the plan's budget figure %zu of tensor '%s' is not a finite "
                                    "number >= 0", k, it->t->name);
            it->opts[k].error = x;
        }
    }
    return NF_OK;
}

/* The items as the solver takes them (budget/solve.h): bytes and estimates, one array of all. */
static nf_status solver_view(const plan_budget *b, nf_budget_item **items, nf_budget_choice **choices, nf_error *err)
{
    size_t total = 0;
    for (size_t i = 0; i < b->nitems; i++) total += b->items[i].nopts;
    *items = calloc(b->nitems ? b->nitems : 1, sizeof **items);
    *choices = calloc(total ? total : 1, sizeof **choices);
    if (!*items || !*choices) {
        free(*items);
        free(*choices);
        return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0, at = 0; i < b->nitems; i++) {
        const plan_budget_item *it = &b->items[i];
        (*items)[i] = (nf_budget_item){*choices + at, it->nopts};
        for (size_t k = 0; k < it->nopts; k++, at++) {
            /* the objective's term: the error times the tensor's sensitivity (1 without a file) */
            double e = it->factor * it->opts[k].error;
            (*choices)[at] = (nf_budget_choice){it->opts[k].bytes, e};
            if (isfinite(e)) continue;
            free(*items);
            free(*choices);
            return nf_error_set(err, NF_ERR_INVALID,
                                "tensor '%s': its error by %s times its sensitivity factor %g is beyond binary64",
                                nf_esc(it->t->name).s, b->cands[it->opts[k].cand].fmt->name, it->factor);
        }
    }
    return NF_OK;
}

nf_status nf_budget_reach(plan_budget *b, nf_error *err)
{
    nf_budget_item *items;
    nf_budget_choice *choices;
    NF_TRY(solver_view(b, &items, &choices, err));
    nf_status st = nf_budget_range(items, b->nitems, &b->min_bytes, &b->max_bytes, err);
    free(choices);
    free(items);
    return st;
}

nf_status nf_budget_allocate(plan_budget *b, const nf_recipe_budget *rb, unsigned threads, const json_t *figures,
                             nf_error *err)
{
    if (figures) NF_TRY(take_figures(b, figures, rb->sample_rows, err));
    else NF_TRY(measure_all(b, rb->sample_rows, threads, err));
    nf_budget_item *items;
    nf_budget_choice *choices;
    NF_TRY(solver_view(b, &items, &choices, err));
    nf_status st = nf_budget_solve(items, b->nitems, b->capacity, 0, &b->sol, err);
    for (size_t i = 0; st == NF_OK && i < b->nitems; i++) {
        b->items[i].pick = b->sol.pick[i];
        b->items[i].runner_up = b->sol.runner_up[i];
    }
    free(choices);
    free(items);
    return st;
}

/* ---------------------------------------------------------------- description */
static json_t *option_json(const plan_budget *b, const plan_budget_item *it, size_t k)
{
    if (k >= it->nopts) return json_null();
    const plan_option *op = &it->opts[k];
    const plan_candidate *cd = &b->cands[op->cand];
    return json_pack("{s:s,s:s,s:I,s:f,s:f}", "format", cd->fmt->name, "method", nf_method_name(cd->method), "bytes",
                     (json_int_t)op->bytes, "bits_per_weight",
                     8.0 * (double)op->bytes / (double)(it->rows * it->cols), "estimated_error", op->error);
}

json_t *nf_budget_describe(const plan_budget *b, const nf_recipe_budget *rb)
{
    json_t *alloc = json_array(), *cands = json_array();
    for (size_t k = 0; k < b->ncands; k++) {
        json_t *c = json_pack("{s:s,s:s}", "format", b->cands[k].fmt->name, "method", nf_method_name(b->cands[k].method));
        json_array_append_new(cands, c);
    }
    uint64_t used = 0;
    double estimated = 0; /* the picks' errors, without the sensitivity factors */
    for (size_t i = 0; i < b->nitems; i++) {
        const plan_budget_item *it = &b->items[i];
        used += it->opts[it->pick].bytes;
        json_t *rec = option_json(b, it, it->pick);
        json_object_set_new(rec, "tensor", json_string(it->t->name));
        json_object_set_new(rec, "rows", json_integer((json_int_t)it->rows));
        json_object_set_new(rec, "rows_measured", json_integer((json_int_t)it->sampled));
        json_object_set_new(rec, "weights", json_string(it->weights ? "imatrix" : "uniform"));
        json_object_set_new(rec, "sensitivity", json_real(it->factor));
        estimated += it->opts[it->pick].error;
        json_object_set_new(rec, "runner_up", option_json(b, it, it->runner_up));
        json_t *opts = json_array(); /* every candidate measured, for scripts that check the choice */
        for (size_t k = 0; k < it->nopts; k++) json_array_append_new(opts, option_json(b, it, k));
        json_object_set_new(rec, "options", opts);
        json_t *out = json_array(); /* the candidates it cannot take, and why */
        for (size_t k = 0; k < it->nexcluded; k++) {
            const plan_candidate *cd = &b->cands[it->excluded[k].cand];
            json_array_append_new(out, json_pack("{s:s,s:s,s:s}", "format", cd->fmt->name, "method",
                                                 nf_method_name(cd->method), "why", it->excluded[k].why));
        }
        json_object_set_new(rec, "not_candidates", out);
        json_array_append_new(alloc, rec);
    }
    json_t *limit = rb->bytes ? json_pack("{s:I}", "bytes", (json_int_t)rb->bytes)
                              : json_pack("{s:f}", "bits_per_weight", rb->bits_per_weight);
    json_t *sampling = json_pack("{s:I,s:s}", "rows_per_tensor", (json_int_t)rb->sample_rows, "rule",
                                 rb->sample_rows ? "rows floor((2i+1)N/(2S)), i < S = min(N, rows_per_tensor); error "
                                                   "scaled by N/S"
                                                 : "every row");
    json_t *d = json_pack("{s:o,s:o,s:I,s:I,s:I,s:I,s:I,s:I,s:f,s:o,s:o,s:o,s:f,s:f,s:b,s:o}", "budget", limit,
                          "candidates", cands, "tensors", (json_int_t)b->nitems, "elements", (json_int_t)b->elements,
                          "capacity_bytes", (json_int_t)b->capacity, "used_bytes", (json_int_t)used,
                          "other_tensor_bytes", (json_int_t)b->fixed_bytes, "tensor_bytes",
                          (json_int_t)(b->fixed_bytes + used), "bits_per_weight",
                          b->elements ? 8.0 * (double)used / (double)b->elements : 0.0, "reachable",
                          json_pack("{s:I,s:I}", "min_bytes", (json_int_t)b->min_bytes, "max_bytes",
                                    (json_int_t)b->max_bytes),
                          "weights", b->imatrix ? json_pack("{s:s}", "imatrix", b->imatrix) : json_string("uniform"),
                          "sampling", sampling, "estimated_error", rb->sensitivity ? estimated : b->sol.error,
                          "lower_bound", b->sol.lower_bound, "optimal", b->sol.exact, "allocation", alloc);
    /* with a sensitivity file the solver's figure is the objective (sum of factor x error) */
    if (d && rb->sensitivity) {
        json_object_set_new(d, "sensitivity", json_string(rb->sensitivity));
        json_object_set_new(d, "objective", json_real(b->sol.error));
    }
    return d;
}

void nf_budget_free(plan_budget *b)
{
    if (!b) return;
    for (size_t k = 0; k < b->ncands; k++) json_decref(b->cands[k].with);
    free(b->cands);
    for (size_t i = 0; i < b->nitems; i++) {
        free(b->items[i].opts);
        for (size_t k = 0; k < b->items[i].nexcluded; k++) free(b->items[i].excluded[k].why);
        free(b->items[i].excluded);
    }
    free(b->items);
    nf_budget_solution_free(&b->sol);
    nf_sensitivity_free(&b->sens);
    free(b);
}
