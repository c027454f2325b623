/* The budget's measuring pass and allocation (docs/recipes.md, "Budgets").
 *
 * For every tensor left to the budget (an item) and every candidate it may take (an option),
 * the error is measured with the real encoder on the real weights: the sampled rows are read as
 * the conversion reads them, encoded, decoded, and compared with the budget's weighted squared
 * error (budget/werror.h).  The rules that pick the rows depend only on the tensor's rows, its
 * options and budget.sample_rows, so the figures -- and the allocation solved from them
 * (budget/solve.h) -- do not depend on the thread count.
 *
 * The sampling rule: a tensor of N rows with S = min(N, sample_rows) (S = N when sample_rows is
 * 0) samples rows floor((2i + 1) N / (2S)) for i < S, evenly spaced.  Each option measures S_k of
 * them, sampled i = floor((2j + 1) S / (2 S_k)) for j < S_k, and estimates the tensor's error as
 * its rows' times N / S_k; with S_k = N the estimate is the exact figure.  S_k is S unless the
 * options' rows would cost more than the tensor's allowance (row_cost, ALLOWANCE_PER_ROW): then the
 * costliest options measure fewer rows (nf_budget_sample_rows), never fewer than a floor of 16
 * rows, or on a tensor too small for that 8 to 16 (effort_floor), or S.
 * sample_rows 0 measures every row by every option.
 *
 * A sampled row longer than SPAN_VALUES is measured span by span (docs/layouts.md section 12), as
 * the conversion encodes it (exec_jobs.c), so memory stays bounded whatever the row's length: each
 * option encodes a span as it would the whole row there (fp8_row_maxabs given the row's maximum,
 * ggml_quantize with an importance vector the row's sum of squares),
 * and the error's blocks start at a span's first column (budget/werror.h), so the figures are the
 * whole rows' to the bit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/escape.h>

#include "budget/werror.h"
#include "common/checked.h"
#include "common/fail.h"
#include "common/pool.h"
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

/* ---------------------------------------------------------------- effort
 * What measuring one row costs each candidate, in units of the cheapest encoders' (a row of
 * grouped_absmax to q8_g32_fp16): reading, encoding, decoding and the weighted error of a row, the
 * CPU time per row bench/row_costs.py measures with the real encoders at the CPU's default kernel
 * level, over its unit's, rounded (bench/README.md, "The budget's measuring pass", has the figures
 * and how to refresh them).  A constant, never a timing: only the ratios matter, and only for how
 * many sampled rows a costly candidate measures, so a stale figure costs time or accuracy, never
 * a different byte, and the CPU never changes which rows are measured. */
static uint64_t row_cost(const plan_candidate *cd)
{
    switch (cd->method) {
    case NF_METHOD_GROUPED_SEARCH: return 3;
    case NF_METHOD_NVFP4_SEARCH: return 6;
    case NF_METHOD_GGML_QUANTIZE: break;
    default: return 1; /* grouped_absmax, fp8_row_maxabs, nvfp4_quantize */
    }
    switch (cd->fmt->id) {
    case NF_FMT_GGUF_Q8_0: return 1;
    case NF_FMT_GGUF_Q2_0:
    case NF_FMT_GGUF_Q4_0:
    case NF_FMT_GGUF_Q6_K: return 2;
    case NF_FMT_GGUF_Q3_K:
    case NF_FMT_GGUF_Q5_0: return 3;
    case NF_FMT_GGUF_Q5_K: return 4;
    case NF_FMT_GGUF_Q2_K:
    case NF_FMT_GGUF_Q4_K: return 5;
    case NF_FMT_GGUF_IQ4_NL: return 6;
    case NF_FMT_GGUF_IQ2_S: return 10;
    case NF_FMT_GGUF_IQ4_XS: return 11;
    case NF_FMT_GGUF_IQ1_S: return 15;
    case NF_FMT_GGUF_IQ2_XXS: return 16;
    case NF_FMT_GGUF_IQ2_XS: return 19;
    case NF_FMT_GGUF_IQ3_S: return 23;
    case NF_FMT_GGUF_IQ1_M: return 29;
    case NF_FMT_GGUF_IQ3_XXS: return 36;
    default: return 5; /* a type added later: between the k-quants and the IQ grids until measured */
    }
}

/* A tensor's allowance, in row_cost units: ALLOWANCE_PER_ROW a row of the tensor, whatever the
 * sample, so that the measuring pass stays a fraction of the conversion, which encodes every row
 * (docs/recipes.md, "Budgets", *Measuring*).  Each option measures at least MIN_ROWS rows when
 * that fits the allowance; on a tensor too small for it (where the conversion itself is cheap)
 * the floor is what fits, floor(allowance / sum of the costs), but never below LOW_MIN_ROWS, so
 * that no estimate rests on fewer rows than that (or S). */
#define ALLOWANCE_PER_ROW 1u
#define MIN_ROWS 16u
#define LOW_MIN_ROWS 8u

/* The floor of the options' rows: MIN_ROWS, or less where every option's MIN_ROWS rows would
 * cost more than the allowance. */
static uint64_t effort_floor(const uint64_t *cost, size_t n, uint64_t allowance)
{
    u128 sum = 0;
    for (size_t k = 0; k < n; k++) sum += cost[k];
    if (sum == 0 || sum * MIN_ROWS <= allowance) return MIN_ROWS;
    u128 fit = allowance / sum;
    return fit < LOW_MIN_ROWS ? LOW_MIN_ROWS : (uint64_t)fit;
}

/* The rows each option of the item measures (opts[k].sampled), from the sampled ones: all of
 * them with sample_rows 0 (every row, the exact figures), else nf_budget_sample_rows's share. */
static nf_status plan_effort(const plan_budget *b, plan_budget_item *it, uint64_t sample_rows, nf_error *err)
{
    it->sampled = sample_count(it, sample_rows);
    uint64_t *cost = calloc(it->nopts ? it->nopts : 1, sizeof *cost),
             *rows = calloc(it->nopts ? it->nopts : 1, sizeof *rows);
    if (!cost || !rows) {
        free(cost);
        free(rows);
        return nf_common_nomem(err);
    }
    for (size_t k = 0; k < it->nopts; k++) cost[k] = sample_rows ? row_cost(&b->cands[it->opts[k].cand]) : 0;
    u128 wide = (u128)it->rows * ALLOWANCE_PER_ROW;
    const uint64_t allowance = wide > UINT64_MAX ? UINT64_MAX : (uint64_t)wide;
    nf_budget_sample_rows(cost, it->nopts, it->sampled, effort_floor(cost, it->nopts, allowance), allowance, rows);
    for (size_t k = 0; k < it->nopts; k++) it->opts[k].sampled = rows[k];
    free(cost);
    free(rows);
    return NF_OK;
}

/* The index, among the item's sampled rows, of option k's j-th row: its sampled rows spread
 * evenly over the item's (all of them when it measures every one), the same rule as the sample's. */
static uint64_t option_row(const plan_budget_item *it, size_t k, uint64_t j)
{
    return sample_row(j, it->opts[k].sampled, it->sampled);
}

/* ---------------------------------------------------------------- one item */
/* The row's values (x) and represented values (y). */
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
    if (!x || !y) return nf_common_nomem(err);
    sc->cols = n;
    return NF_OK;
}

/* nvfp4 holds whole tiles of 128 rows, one global scale from the matrix's largest magnitude
 * (nvfp4_pass.c), and encodes each row's groups on their own under it: a sampled row is measured
 * as the first row of a tile (the words and geometry of a tile, a view of one row) with the
 * tensor's true maximum, so its words are those the conversion writes for that row. */
static bool takes_matrix_max(const plan_candidate *cd)
{
    return cd->method == NF_METHOD_NVFP4_QUANTIZE || cd->method == NF_METHOD_NVFP4_SEARCH;
}

static uint64_t tile_rows(const plan_candidate *cd) { return cd->fmt->category == NF_CAT_NVFP4 ? 128 : 1; }

/* What one item's measuring holds, per option k: its geometry (of a row, or of nvfp4's tile), the
 * words of a span (or row), what a span needs of the whole row, the exact sum of its errors and
 * the index of its next row among the sampled ones (next[k] of them measured). */
typedef struct whole_row whole_row;
typedef struct item_state {
    nf_geometry *g;
    nf_words *w;
    whole_row *wr;
    nf_xsum *acc;
    uint64_t *next;
    bool *now;           /* does option k measure the row at hand */
    uint32_t matrix_max; /* the tensor's largest magnitude word, for nvfp4 */
} item_state;

/* The columns of a row measured at once: spans of SPAN_VALUES when the row is longer and every
 * option's layout can be cut into spans, else the whole row. */
static uint64_t measure_span(const plan_budget_item *it, const nf_geometry *g)
{
    if (it->cols <= SPAN_VALUES) return it->cols;
    for (size_t k = 0; k < it->nopts; k++)
        if (!nf_layout_has_colspans(&g[k]) && nf_layout_colspan_rows(&g[k]) != 128) return it->cols;
    return SPAN_VALUES;
}

/* What a span of row r needs of the whole row, per option (exec_jobs.c reads it alike): the largest
 * magnitude word for fp8_row_maxabs (nf_src_rows.row_max), the sum of x^2 in column order for
 * ggml_quantize with an importance vector (row_sum2; nothing for the types that do not use it). */
struct whole_row {
    uint32_t max;
    float sum2;
};

static bool needs_whole_row(const plan_candidate *cd, const plan_option *op)
{
    return cd->method == NF_METHOD_FP8_ROW_MAXABS || (cd->method == NF_METHOD_GGML_QUANTIZE && op->params.importance);
}

static nf_status row_wholes(const plan_budget *b, const plan_budget_item *it, uint64_t r, uint64_t span, scratch *sc,
                            item_state *is, nf_error *err)
{
    bool any = false;
    for (size_t k = 0; k < it->nopts; k++) {
        is->wr[k] = (whole_row){0, 0.0f};
        any = any || (is->now[k] && needs_whole_row(&b->cands[it->opts[k].cand], &it->opts[k]));
    }
    for (uint64_t c0 = 0; any && c0 < it->cols; c0 += span) {
        uint64_t n = it->cols - c0 < span ? it->cols - c0 : span;
        NF_TRY(nf_source_read_f32_span(it->source->src, it->t, r, c0, n, sc->x, sc->cols, err));
        nf_src_rows rows = {.name = it->t->name,
                            .type = NF_SRC_F32,
                            .data = sc->x,
                            .first_row = r,
                            .rows = 1,
                            .cols = n,
                            .first_col = c0,
                            .row_cols = it->cols};
        for (size_t k = 0; k < it->nopts; k++) {
            const plan_candidate *cd = &b->cands[it->opts[k].cand];
            if (!is->now[k] || !needs_whole_row(cd, &it->opts[k])) continue;
            if (cd->method == NF_METHOD_GGML_QUANTIZE) {
                NF_TRY(nf_ggml_quantize_row_sum2(cd->fmt, &rows, &is->wr[k].sum2, err));
                continue;
            }
            uint32_t mx;
            NF_TRY(nf_fp8_row_maxabs_max(cd->fmt, &rows, &mx, err));
            if (mx > is->wr[k].max) is->wr[k].max = mx;
        }
    }
    return NF_OK;
}

/* Columns [c0, c0 + n) of sampled row r (the whole row, or a span of it) by every option that
 * measures the row into its sum: read, encoded, decoded and compared. */
static nf_status measure_cols(const plan_budget *b, const plan_budget_item *it, uint64_t r, uint64_t c0, uint64_t n,
                              item_state *is, scratch *sc, nf_error *err)
{
    const nf_source *src = it->source->src;
    const bool whole = n == it->cols;
    nf_status st = whole ? nf_source_read_f32(src, it->t, r, r + 1, sc->x, (size_t)n, err)
                         : nf_source_read_f32_span(src, it->t, r, c0, n, sc->x, sc->cols, err);
    if (st != NF_OK) {
        nf_error_prefix(err, "%s", nf_source_path(src));
        return st;
    }
    for (size_t k = 0; k < it->nopts; k++) {
        if (!is->now[k]) continue;
        const plan_candidate *cd = &b->cands[it->opts[k].cand];
        nf_src_rows rows = {.name = it->t->name,
                            .type = NF_SRC_F32,
                            .data = sc->x,
                            .first_row = r,
                            .rows = 1,
                            .cols = n,
                            .matrix_max = is->matrix_max,
                            .has_matrix_max = takes_matrix_max(cd)};
        nf_method_params params = it->opts[k].params;
        nf_colspan sp;
        const nf_geometry *gk = &is->g[k];
        nf_words view = is->w[k];
        view.rows = 1;
        if (!whole) { /* the span as a row of its own: its columns of the importance, its geometry */
            NF_TRY(nf_colspan_init(&sp, &is->g[k], 0, c0, n, err));
            gk = &sp.g;
            view.cols = n;
            rows.first_col = c0;
            rows.row_cols = it->cols;
            rows.row_max = is->wr[k].max;
            rows.row_sum2 = is->wr[k].sum2;
            rows.has_row_sum2 = cd->method == NF_METHOD_GGML_QUANTIZE && params.importance;
            if (params.importance) {
                params.importance += c0;
                params.importance_len = n;
            }
        }
        st = nf_method_encode_rows(cd->method, cd->fmt, &params, &rows, &view, err);
        if (st == NF_OK) st = nf_convert_words_values(gk, &view, 0, sc->y, err);
        if (st != NF_OK) {
            nf_error_prefix(err, "%s: measuring %s by %s", nf_source_path(src), cd->fmt->name,
                            nf_method_name(cd->method));
            return st;
        }
        nf_budget_werror_rows(sc->x, sc->y, 1, n, c0, nf_budget_item_weights(it, r), &is->acc[k]);
    }
    return NF_OK;
}

static void item_state_free(item_state *is, size_t nopts)
{
    for (size_t k = 0; is->w && k < nopts; k++) nf_words_free(&is->w[k]);
    free(is->w);
    free(is->g);
    free(is->acc);
    free(is->wr);
    free(is->next);
    free(is->now);
}

/* The geometry and words of each option, and the tensor's maximum when an option is nvfp4's. */
static nf_status item_state_init(const plan_budget *b, const plan_budget_item *it, item_state *is, uint64_t *span,
                                 nf_error *err)
{
    size_t n = it->nopts ? it->nopts : 1;
    is->acc = calloc(n, sizeof *is->acc);
    is->g = calloc(n, sizeof *is->g);
    is->w = calloc(n, sizeof *is->w);
    is->wr = calloc(n, sizeof *is->wr);
    is->next = calloc(n, sizeof *is->next);
    is->now = calloc(n, sizeof *is->now);
    if (!is->acc || !is->g || !is->w || !is->wr || !is->next || !is->now) return nf_common_nomem(err);
    bool nvfp4 = false;
    for (size_t k = 0; k < it->nopts; k++) {
        const plan_candidate *cd = &b->cands[it->opts[k].cand];
        uint64_t shape[2] = {tile_rows(cd), it->cols};
        nf_xsum_init(&is->acc[k]);
        NF_TRY(nf_geometry_init(&is->g[k], cd->layout, cd->fmt, 2, shape, 1, err));
        nvfp4 = nvfp4 || (takes_matrix_max(cd) && it->opts[k].sampled > 0);
    }
    *span = measure_span(it, is->g);
    for (size_t k = 0; k < it->nopts; k++) { /* the words of one span (or row, or nvfp4's tile) */
        nf_colspan sp;
        if (*span < it->cols) NF_TRY(nf_colspan_init(&sp, &is->g[k], 0, 0, *span, err));
        NF_TRY(nf_words_alloc(&is->w[k], *span < it->cols ? &sp.g : &is->g[k], 1, err));
    }
    if (nvfp4) {
        nf_status st = nf_convert_nvfp4_tensor_max(it->source->src, it->t, it->rows, it->cols, &is->matrix_max, err);
        if (st != NF_OK) nf_error_prefix(err, "%s", nf_source_path(it->source->src));
        return st;
    }
    return NF_OK;
}

/* Each option's error on its measured rows, summed exactly and scaled to the tensor's rows. */
static nf_status measure_item(const plan_budget *b, plan_budget_item *it, scratch *sc, nf_error *err)
{
    const uint64_t s = it->sampled;
    item_state is = {0};
    uint64_t span = it->cols;
    nf_status st = item_state_init(b, it, &is, &span, err);
    if (st == NF_OK) st = scratch_fit(sc, span, err);
    for (uint64_t i = 0; st == NF_OK && i < s; i++) {
        bool any = false;
        for (size_t k = 0; k < it->nopts; k++) {
            is.now[k] = is.next[k] < it->opts[k].sampled && option_row(it, k, is.next[k]) == i;
            any = any || is.now[k];
        }
        if (!any) continue;
        uint64_t r = sample_row(i, s, it->rows);
        if (span < it->cols) st = row_wholes(b, it, r, span, sc, &is, err);
        if (st != NF_OK) nf_error_prefix(err, "%s", nf_source_path(it->source->src));
        for (uint64_t c0 = 0; st == NF_OK && c0 < it->cols; c0 += span)
            st = measure_cols(b, it, r, c0, it->cols - c0 < span ? it->cols - c0 : span, &is, sc, err);
        for (size_t k = 0; k < it->nopts; k++) is.next[k] += is.now[k];
    }
    for (size_t k = 0; st == NF_OK && k < it->nopts; k++) {
        double e = nf_xsum_value(&is.acc[k]);
        uint64_t m = it->opts[k].sampled;
        it->opts[k].error = m == it->rows ? e : e * ((double)it->rows / (double)m);
        if (!isfinite(it->opts[k].error))
            st = nf_error_set(err, NF_ERR_INVALID, "tensor '%s': its weighted squared error by %s is beyond binary64",
                              it->t->name, b->cands[it->opts[k].cand].fmt->name);
    }
    item_state_free(&is, it->nopts);
    return st;
}

/* ---------------------------------------------------------------- the measuring pass */
typedef struct pass {
    plan_budget *b;
    uint64_t sample_rows;
} pass;

/* One item on the pool (common/pool.h), with its thread's scratch rows; the pool returns the
 * first failing item's error, the same on any thread count. */
static nf_status measure_task(void *ctx, size_t i, void **local, nf_error *err)
{
    pass *ps = ctx;
    if (!*local && !(*local = calloc(1, sizeof(scratch)))) return nf_common_nomem(err);
    NF_TRY(plan_effort(ps->b, &ps->b->items[i], ps->sample_rows, err));
    return measure_item(ps->b, &ps->b->items[i], *local, err);
}

static void measure_done(void *ctx, void *local)
{
    (void)ctx;
    scratch *sc = local;
    if (sc) {
        free(sc->x);
        free(sc->y);
    }
    free(sc);
}

static nf_status measure_all(plan_budget *b, uint64_t sample_rows, unsigned threads, nf_error *err)
{
    pass ps = {.b = b, .sample_rows = sample_rows};
    return nf_pool_for(nf_pool_threads(threads), b->nitems, measure_task, measure_done, &ps, err);
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
        NF_TRY(plan_effort(b, it, sample_rows, err));
        for (size_t k = 0; k < it->nopts; k++) {
            const json_t *v = json_array_get(e, k);
            double x = json_is_real(v) ? json_real_value(v) : json_is_integer(v) ? (double)json_integer_value(v) : NAN;
            if (!isfinite(x) || x < 0)
                return nf_error_set(err, NF_ERR_INVALID,
                                    "the plan's budget figure %zu of tensor '%s' is not a finite "
                                    "number >= 0",
                                    k, it->t->name);
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
        return nf_common_nomem(err);
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
    return json_pack("{s:s,s:s,s:I,s:f,s:f,s:I}", "format", cd->fmt->name, "method", nf_method_name(cd->method),
                     "bytes", (json_int_t)op->bytes, "bits_per_weight",
                     8.0 * (double)op->bytes / (double)(it->rows * it->cols), "estimated_error", op->error,
                     "rows_measured", (json_int_t)op->sampled);
}

json_t *nf_budget_describe(const plan_budget *b, const nf_recipe_budget *rb)
{
    json_t *alloc = json_array(), *cands = json_array();
    for (size_t k = 0; k < b->ncands; k++) {
        json_t *c = json_pack("{s:s,s:s}", "format", b->cands[k].fmt->name, "method",
                              nf_method_name(b->cands[k].method));
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
        json_object_set_new(rec, "rows_sampled", json_integer((json_int_t)it->sampled));
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
    /* each candidate every tensor can take, alone: the uniform quantizations the allocation is
     * measured against (the report page's size-vs-error chart) */
    json_t *uniform = json_array();
    for (size_t k = 0; uniform && k < b->ncands; k++) {
        uint64_t bytes = 0;
        double error = 0;
        size_t taken = 0;
        for (size_t i = 0; i < b->nitems; i++) {
            const plan_budget_item *it = &b->items[i];
            for (size_t o = 0; o < it->nopts; o++)
                if (it->opts[o].cand == k) {
                    bytes += it->opts[o].bytes;
                    error += it->opts[o].error;
                    taken++;
                    break;
                }
        }
        if (taken != b->nitems || !b->nitems) continue;
        json_array_append_new(uniform, json_pack("{s:s,s:s,s:I,s:f,s:f}", "format", b->cands[k].fmt->name, "method",
                                                 nf_method_name(b->cands[k].method), "bytes", (json_int_t)bytes,
                                                 "bits_per_weight",
                                                 b->elements ? 8.0 * (double)bytes / (double)b->elements : 0.0,
                                                 "estimated_error", error));
    }
    json_t *limit = rb->bytes ? json_pack("{s:I}", "bytes", (json_int_t)rb->bytes)
                              : json_pack("{s:f}", "bits_per_weight", rb->bits_per_weight);
    json_t *sampling = json_pack("{s:I,s:s}", "rows_per_tensor", (json_int_t)rb->sample_rows, "rule",
                                 rb->sample_rows
                                     ? "rows floor((2i+1)N/(2S)), i < S = min(N, rows_per_tensor); a costly "
                                       "candidate measures S_k of them, floor((2j+1)S/(2S_k)); error "
                                       "scaled by N/S_k"
                                     : "every row");
    json_t *d = json_pack(
        "{s:o,s:o,s:I,s:I,s:I,s:I,s:I,s:I,s:f,s:o,s:o,s:o,s:f,s:f,s:b,s:o}", "budget", limit, "candidates", cands,
        "tensors", (json_int_t)b->nitems, "elements", (json_int_t)b->elements, "capacity_bytes",
        (json_int_t)b->capacity, "used_bytes", (json_int_t)used, "other_tensor_bytes", (json_int_t)b->fixed_bytes,
        "tensor_bytes", (json_int_t)(b->fixed_bytes + used), "bits_per_weight",
        b->elements ? 8.0 * (double)used / (double)b->elements : 0.0, "reachable",
        json_pack("{s:I,s:I}", "min_bytes", (json_int_t)b->min_bytes, "max_bytes", (json_int_t)b->max_bytes), "weights",
        b->imatrix ? json_pack("{s:s}", "imatrix", b->imatrix) : json_string("uniform"), "sampling", sampling,
        "estimated_error", rb->sensitivity ? estimated : b->sol.error, "lower_bound", b->sol.lower_bound, "optimal",
        b->sol.exact, "allocation", alloc);
    if (d) json_object_set_new(d, "uniform", uniform);
    else json_decref(uniform);
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
