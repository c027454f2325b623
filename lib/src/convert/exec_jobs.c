/* The jobs of an execution (exec_impl.h): every tensor object cut into chunks of rows, run by
 * worker threads from common/pool.h; a job reads its rows, encodes them (method or import),
 * measures the represented values for the report, and hands the bytes to the sink (the writer,
 * or the comparison with an artifact: nf_convert_compare_write). */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <ninfer/ninfer.h>

#include "common/io.h"
#include "common/pool.h"
#include "convert/convert_impl.h"
#include "convert/exec_impl.h"
#include "dialect/qweight_rows.h"
#include "budget/werror.h"
#include "method/measure.h"
#include "stats/stats.h"

/* A path as messages show it: shortened in the middle when long (common/io.h, docs/security.md 7.1, M8). */
#define MP(path) nf_io_msg_path((path), (char[NF_IO_MSG_PATH + 1]){0})

/* ---------------------------------------------------------------- source rows -> words */
/* nvfp4_quantize and nvfp4_search: their chunks take the matrix's maximum from the plan. */
static bool nvfp4_quantizer(nf_method_id id) { return id == NF_METHOD_NVFP4_QUANTIZE || id == NF_METHOD_NVFP4_SEARCH; }

/* GPTQ's and AWQ's values (q - z) * s from the integers and scales the import was given, as
 * nf_qweight_read_f32 computes them (one binary32 product; docs/dialects.md "GPTQ and AWQ"):
 * the chunk's codes are not read twice. */
static void int_group_values(const nf_import *imp, uint64_t rows, const void *ints_buf, const void *scale_buf,
                             float *values)
{
    const int16_t *ints = ints_buf;
    const float *scales = scale_buf;
    const uint64_t k = imp->cols, g = imp->scale_row_bytes / sizeof(float);
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t j = 0; j < g; j++) {
            const uint64_t c1 = (j + 1) * imp->group < k ? (j + 1) * imp->group : k;
            const float s = scales[r * g + j];
            for (uint64_t c = j * imp->group; c < c1; c++) values[r * k + c] = (float)ints[r * k + c] * s;
        }
}

nf_status nf_convert_member_rows(const plan_object *o, const plan_member *m, uint64_t r0, uint64_t r1, void *raw_buf,
                                 size_t raw_len, void *scale_buf, size_t scale_len, float *values, nf_words *words,
                                 uint64_t words_row, nf_errstats *stats, nf_error *err)
{
    const nf_source *src = m->source->src;
    uint64_t rows = r1 - r0;
    if (o->method == NF_METHOD_IMPORT_ENCODED) {
        const nf_import *imp = &m->imp;
        size_t len = (size_t)(rows * imp->row_bytes);
        if (len > raw_len) return nf_error_set(err, NF_ERR_USAGE, "chunk buffer too small");
        nf_import_chunk chunk = {r0, rows, raw_buf, len, NULL, 0, 0};
        if (imp->kind == NF_IMPORT_INT_GROUPS) {
            /* GPTQ, AWQ: the integers q - z and the group scales, as the dialect reads them */
            size_t slen = (size_t)(rows * imp->scale_row_bytes);
            if (slen > scale_len) return nf_error_set(err, NF_ERR_USAGE, "chunk buffer too small");
            NF_TRY(nf_qweight_read_ints(src, m->q, r0, r1, raw_buf, len / 2, scale_buf, slen / 4, err));
            chunk.scales = scale_buf;
            chunk.scales_len = slen;
        } else {
            NF_TRY(nf_source_read_bytes(src, m->t, r0 * imp->row_bytes, raw_buf, len, err));
        }
        if (imp->scale_row_bytes && m->scale_t) {
            size_t slen = (size_t)(rows * imp->scale_row_bytes);
            if (slen > scale_len) return nf_error_set(err, NF_ERR_USAGE, "chunk buffer too small");
            NF_TRY(nf_source_read_bytes(src, m->scale_t, r0 * imp->scale_row_bytes, scale_buf, slen, err));
            chunk.scales = scale_buf;
            chunk.scales_len = slen;
        }
        /* the import names the tensor and the word; the checkpoint is named here */
        NF_TRY_CTX(nf_import_rows(imp, &chunk, words, words_row, err), err, "%s", nf_source_path(src));
        /* GGUF sources have values of their own (ggml's dequantization) to compare with, and so
         * do GPTQ, AWQ and MXFP4 weights (the report shows their import exact).  NVFP4 and FP8
         * imports are not compared: their contract admits a +0 block scale over zero codes,
         * which a dialect's values refuse (docs/dialects.md "Bad input") */
        if (values) {
            if (imp->kind == NF_IMPORT_INT_GROUPS) int_group_values(imp, rows, raw_buf, scale_buf, values);
            else if (m->t->ggml_type >= 0 && m->t->convertible)
                NF_TRY(nf_source_read_f32(src, m->t, r0, r1, values, (size_t)(rows * o->g.cols), err));
            else if (m->q) NF_TRY(nf_qweight_read_f32(src, m->q, r0, r1, values, (size_t)(rows * o->g.cols), err));
            else
                for (size_t i = 0; i < rows * o->g.cols; i++) values[i] = NAN;
        }
        return NF_OK;
    }
    nf_src_rows s = {.name = m->t->name,
                     .type = m->src_type,
                     .first_row = r0,
                     .rows = rows,
                     .cols = o->g.cols,
                     .matrix_max = o->matrix_max,
                     .has_matrix_max = nvfp4_quantizer(o->method)};
    size_t count = (size_t)(rows * o->g.cols);
    if (m->raw) {
        size_t len = (size_t)(rows * m->t->row_bytes);
        if (len > raw_len) return nf_error_set(err, NF_ERR_USAGE, "chunk buffer too small");
        NF_TRY(nf_source_read_rows(src, m->t, r0, r1, raw_buf, len, err));
        s.data = raw_buf;
    } else if (m->q) {
        NF_TRY(nf_qweight_read_f32(src, m->q, r0, r1, values, count, err));
        s.data = values;
    } else {
        NF_TRY(nf_source_read_f32(src, m->t, r0, r1, values, count, err));
        s.data = values;
    }
    nf_words view = *words;
    /* Methods write rows [0, rows) of the words they are given. */
    if (words_row != 0) return nf_error_set(err, NF_ERR_USAGE, "method chunks start at row 0");
    view.rows = rows;
    return nf_method_encode_rows_measured(o->method, o->g.format, &o->params, &s, &view, stats, err);
}


nf_status nf_convert_compare_write(void *ctx, uint64_t offset, const void *data, size_t len, nf_error *err)
{
    compare_ctx *c = ctx;
    const nf_object *t = c->s->targets[c->object];
    if (offset > t->bytes || len > t->bytes - offset) {
        atomic_store(&c->s->differs[c->object], true);
        return NF_OK;
    }
    const uint8_t *p = data;
    while (len > 0) {
        size_t n = len < c->cap ? len : c->cap;
        NF_TRY(nf_artifact_read(c->s->artifact, t->offset + offset, c->buf, n, err));
        if (memcmp(c->buf, p, n) != 0) {
            size_t i = 0;
            while (c->buf[i] == p[i]) i++;
            pthread_mutex_lock(&c->s->lock);
            if (!atomic_load(&c->s->differs[c->object]) || offset + i < c->s->first_diff[c->object])
                c->s->first_diff[c->object] = offset + i;
            atomic_store(&c->s->differs[c->object], true);
            pthread_mutex_unlock(&c->s->lock);
            return NF_OK;
        }
        p += n;
        offset += n;
        len -= n;
    }
    return NF_OK;
}

static void fail(runner *r, nf_status st, const nf_error *e)
{
    pthread_mutex_lock(&r->lock);
    if (r->status == NF_OK) {
        r->status = st;
        r->error = *e;
    }
    pthread_mutex_unlock(&r->lock);
    atomic_store(&r->failed, true);
}

/* An nvfp4 object imported from NVFP4 checkpoints: its 128-row bands are imported span by span
 * (nf_colspan of a band; every row and group of a chunk is imported on its own, ninfer/import.h,
 * so a span's words are the whole rows' at its columns). */
static bool nvfp4_band_spans(const plan_object *o)
{
    if (o->method != NF_METHOD_IMPORT_ENCODED || nf_layout_colspan_rows(&o->g) != 128) return false;
    for (size_t k = 0; k < o->nmembers; k++) {
        const plan_member *m = &o->members[k];
        if ((m->imp.kind != NF_IMPORT_NVFP4_MODELOPT && m->imp.kind != NF_IMPORT_NVFP4_COMPRESSED &&
             m->imp.kind != NF_IMPORT_MXFP4) ||
            !m->scale_t || m->rows % 128 || m->parent_row0 % 128)
            return false;
    }
    return o->divisors != NULL;
}

/* Can an nvfp4_quantize or nvfp4_search object's bands be cut into spans?  Its groups are encoded on their own
 * under the matrix's maximum (nvfp4_pass.c), so a span of a band of 128 rows read from raw words
 * or a dialect's values gives the band's words at its columns. */
static bool nvfp4_quantize_band_spans(const plan_object *o)
{
    if (!nvfp4_quantizer(o->method) || nf_layout_colspan_rows(&o->g) != 128) return false;
    for (size_t k = 0; k < o->nmembers; k++) {
        const plan_member *m = &o->members[k];
        if ((!m->raw && !m->q) || m->rows % 128 || m->parent_row0 % 128) return false;
    }
    return o->divisors != NULL;
}

/* Are the object's rows longer than a chunk, and can they be cut into spans?  Every method
 * encodes a span of a row as it would the whole row (fp8_row_maxabs given the row's maximum),
 * from raw words or from a dialect's values (nf_qweight_read_f32_span, docs/dialects.md
 * "Values"); imported words keep whole rows, as do other sources read as binary32 values and
 * nvfp4's tiles. */
static bool spanned(const plan_object *o, uint64_t chunk_values)
{
    /* nvfp4: a job of whole rows is a band of 128 of them */
    if (nvfp4_band_spans(o) || nvfp4_quantize_band_spans(o))
        return o->g.cols > chunk_values / 128 && o->g.cols > NF_COLSPAN_ALIGN;
    if (o->g.cols <= chunk_values || o->g.cols <= NF_COLSPAN_ALIGN) return false;
    if (o->method == NF_METHOD_IMPORT_ENCODED || !nf_layout_has_colspans(&o->g)) return false;
    for (size_t k = 0; k < o->nmembers; k++)
        if (!o->members[k].raw && !o->members[k].q) return false;
    return true;
}

/* A GPTQ or AWQ weight reads its codes across the rows of a packed tensor (GPTQ's qweight
 * [K*b/32, N], AWQ GEMM's [K, N/8]; docs/dialects.md "GPTQ and AWQ"): r rows are K*b/32 (or K)
 * runs of r*b/8 (r/2) bytes, which read well only when r is large. */
static bool reads_across_rows(const plan_object *o)
{
    for (size_t k = 0; k < o->nmembers; k++) {
        const nf_qweight *q = o->members[k].q;
        if (q && (q->pack == NF_QPACK_GPTQ || q->pack == NF_QPACK_AWQ_GEMM)) return true;
    }
    return false;
}

/* Such a weight whose words the dialect reads by bands (dialect/qweight_rows.h) is cut into jobs
 * of up to JOB_CHUNKS chunks' rows, each job's words read once (about b/8 bytes a value), then
 * read as values, encoded and written a chunk at a time while those values are in cache
 * (run_step_job): the worker holds a chunk's values and a band's words.  Other such weights
 * (act-order, 3 bits) take chunks TRANSPOSED_CHUNKS times longer, for longer runs.  For objects
 * whose members are all such weights, chunks of 8 rows or more (AWQ's word), methods that encode
 * rows as they are given (not nvfp4's, whose chunks carry the matrix's maximum and whose tiles
 * span 128 rows) and no budget (whose figure reads a job's values again): the most rows a job
 * may hold (the members' nf_dialect_rows_most), 0 for every other object. */
#define JOB_CHUNKS 64
#define PROGRAM_CHUNKS 4
#define TRANSPOSED_CHUNKS 4
static uint64_t stepped(const plan_object *o, uint64_t chunk_rows)
{
    if (chunk_rows < 8 || o->method == NF_METHOD_IMPORT_ENCODED || nvfp4_quantizer(o->method) || o->budget ||
        o->nmembers == 0 || (o->g.format && o->g.format->category == NF_CAT_NVFP4))
        return 0;
    uint64_t most = UINT64_MAX;
    for (size_t k = 0; k < o->nmembers; k++) {
        const uint64_t m = nf_dialect_rows_most(o->members[k].q); /* 0 for another dialect or none */
        most = m < most ? m : most;
    }
    return most >= chunk_rows / 8 * 8 ? most : 0;
}

/* Cuts every tensor object into jobs (nvfp4: multiples of 128 rows, restarting at each member,
 * as the import module's chunking rule asks). */
nf_status nf_convert_plan_jobs(runner *r, nf_error *err)
{
    const nf_plan *p = r->plan;
    size_t n = p->nobjects;
    r->objs = calloc(n ? n : 1, sizeof *r->objs);
    r->first_job = calloc(n + 1, sizeof *r->first_job);
    if (!r->objs || !r->first_job) return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    uint64_t total = 0;
    nf_errstats none;
    nf_errstats_init(&none);
    for (size_t i = 0; i < n; i++) {
        r->first_job[i] = total;
        const plan_object *o = &p->objects[i];
        object_run *run = &r->objs[i];
        run->sum = nf_errstats_summarize(&none);
        if (o->kind != NF_OBJECT_TENSOR) continue;
        run->chunk_rows = nf_geometry_chunk_rows(&o->g, r->chunk_values);
        uint64_t most;
        if (o->program) {
            /* one job: the program sees the tensor's rows in order, from one worker, so that
             * what it carries from row to row is the same for any --threads; its chunks hold
             * PROGRAM_CHUNKS chunks' values, for fewer round trips through the pipes */
            const uint64_t values = r->chunk_values <= UINT64_MAX / PROGRAM_CHUNKS ? r->chunk_values * PROGRAM_CHUNKS
                                                                                   : r->chunk_values;
            run->chunk_rows = nf_geometry_chunk_rows(&o->g, values);
            run->whole = true;
            run->pending = 1;
            total += 1;
            continue;
        }
        if (spanned(o, r->chunk_values)) {
            /* a row longer than a chunk is cut into spans: memory stays bounded by the chunk
             * whatever the row's length (spans are multiples of NF_COLSPAN_ALIGN columns, the
             * statistics' block, so the figures do not change either) */
            uint64_t band = nf_layout_colspan_rows(&o->g); /* nvfp4: a job is a band of 128 rows */
            run->chunk_rows = band;
            run->span_cols = r->chunk_values / band / NF_COLSPAN_ALIGN * NF_COLSPAN_ALIGN;
            if (run->span_cols < NF_COLSPAN_ALIGN) run->span_cols = NF_COLSPAN_ALIGN;
        } else if ((most = stepped(o, run->chunk_rows)) != 0) {
            /* steps and jobs of whole words of AWQ's rows (8 a word), jobs no longer than a band */
            const uint64_t step = run->chunk_rows / 8 * 8;
            uint64_t values = r->chunk_values <= UINT64_MAX / JOB_CHUNKS ? r->chunk_values * JOB_CHUNKS
                                                                         : r->chunk_values;
            uint64_t rows = nf_geometry_chunk_rows(&o->g, values);
            rows = rows < most ? rows : most;
            run->step_rows = step;
            run->chunk_rows = rows > step ? rows / step * step : step;
        } else if (reads_across_rows(o)) {
            uint64_t values = r->chunk_values <= UINT64_MAX / TRANSPOSED_CHUNKS ? r->chunk_values * TRANSPOSED_CHUNKS
                                                                                : r->chunk_values;
            run->chunk_rows = nf_geometry_chunk_rows(&o->g, values);
        }
        for (size_t k = 0; k < o->nmembers; k++)
            run->pending += (o->members[k].rows + run->chunk_rows - 1) / run->chunk_rows;
        total += run->pending;
        if (run->pending == 0) atomic_fetch_add(&r->objects_done, 1);
    }
    r->first_job[n] = total;
    if (total > SIZE_MAX)
        return nf_error_set(err, NF_ERR_NOMEM, "%llu row chunks do not fit in memory", (unsigned long long)total);
    r->njobs = (size_t)total;
    return NF_OK;
}

static job job_at(const runner *r, size_t index)
{
    /* the last object whose first job is <= index: one with jobs (an object without any has the
     * same first job as the next) */
    size_t lo = 0, hi = r->plan->nobjects;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->first_job[mid] <= index) lo = mid;
        else hi = mid;
    }
    const plan_object *o = &r->plan->objects[lo];
    uint64_t rows = r->objs[lo].chunk_rows, local = index - r->first_job[lo];
    size_t k = 0;
    for (;; k++) {
        uint64_t chunks = (o->members[k].rows + rows - 1) / rows;
        if (local < chunks || k + 1 == o->nmembers) break;
        local -= chunks;
    }
    uint64_t r0 = local * rows, end = o->members[k].rows;
    return (job){lo, k, r0, r0 + rows < end ? r0 + rows : end};
}

/* A job is done: its statistics join the object's, and the object's last job summarizes them. */
static void job_finished(runner *r, const job *j, const nf_errstats *st)
{
    object_run *run = &r->objs[j->object];
    pthread_mutex_lock(&r->lock);
    if (st) {
        if (!run->acc && (run->acc = malloc(sizeof *run->acc)) != NULL) nf_errstats_init(run->acc);
        if (run->acc) {
            nf_errstats_merge(run->acc, st);
        } else if (r->status == NF_OK) {
            r->status = NF_ERR_NOMEM;
            nf_error_set(&r->error, NF_ERR_NOMEM, "out of memory");
            atomic_store(&r->failed, true);
        }
    }
    if (--run->pending == 0) {
        if (run->acc) run->sum = nf_errstats_summarize(run->acc);
        free(run->acc);
        run->acc = NULL;
        atomic_fetch_add(&r->objects_done, 1);
    }
    pthread_mutex_unlock(&r->lock);
}

/* ---------------------------------------------------------------- error statistics */
/* Imported words: each row of the source's own values (ggml's dequantization for GGUF blocks,
 * NaN, so not compared, where the source has none) against the row's represented values.  (A
 * method's rows are measured by the method as it encodes: nf_method_encode_rows_measured.)
 * Row by row: stats/stats.h's blocks start at each row's first column. */
static nf_status import_stats(const runner *r, const plan_object *o, const nf_words *w, uint64_t parent_r0,
                              const float *values, float *decoded, nf_errstats *st, nf_error *err)
{
    size_t k = (size_t)o->g.cols, rows = (size_t)w->rows;
    NF_TRY(nf_convert_words_values(&o->g, w, parent_r0, decoded, err));
    for (size_t i = 0; i < rows; i++) r->kern->row_f32(values + i * k, decoded + i * k, k, st);
    return NF_OK;
}

/* An object the budget chose: the weighted squared error of its rows (budget/werror.h), the
 * figure the budget estimated (docs/recipes.md, "Budgets"). */
static nf_status budget_error(const plan_object *o, const plan_member *m, const job *j, const nf_words *w,
                              uint64_t parent_r0, float *values, float *decoded, nf_errstats *st, nf_error *err)
{
    size_t count = (size_t)((j->r1 - j->r0) * o->g.cols);
    if (m->raw) NF_TRY(nf_source_read_f32(m->source->src, m->t, j->r0, j->r1, values, count, err));
    NF_TRY(nf_convert_words_values(&o->g, w, parent_r0, decoded, err));
    const uint64_t k = o->g.cols;
    for (uint64_t r = j->r0; r < j->r1; r++) /* row by row: a stack's rows weigh by their matrix's vector */
        nf_budget_werror_rows(values + (r - j->r0) * k, decoded + (r - j->r0) * k, 1, k, 0,
                              nf_budget_item_weights(o->budget, r), &st->wse);
    return NF_OK;
}

/* Encoded rows of object `object` from its row parent_r0 on: to the writer, or to the
 * comparison of verify --against. */
static nf_status put_rows(runner *r, size_t object, const nf_words *view, uint64_t parent_r0, compare_ctx *cmp,
                          nf_error *err)
{
    const plan_object *o = &r->plan->objects[object];
    if (r->sink->writer) {
        nf_writer_sink ws = {r->sink->writer, o->writer_index};
        NF_TRY(nf_layout_encode_rows(&o->g, view, parent_r0, false, nf_writer_sink_write, &ws, err));
    } else {
        cmp->object = object;
        NF_TRY(nf_layout_encode_rows(&o->g, view, parent_r0, false, nf_convert_compare_write, cmp, err));
    }
    atomic_fetch_add(&r->bytes_done, o->g.bytes * view->rows / (o->g.rows ? o->g.rows : 1));
    return NF_OK;
}

static nf_status run_job(runner *r, const job *j, nf_words *w, uint8_t *raw, size_t raw_len, uint8_t *scales,
                         size_t scale_len, float *values, float *decoded, compare_ctx *cmp, nf_errstats *st,
                         nf_error *err)
{
    const plan_object *o = &r->plan->objects[j->object];
    const plan_member *m = &o->members[j->member];
    uint64_t rows = j->r1 - j->r0;
    uint64_t parent_r0 = m->parent_row0 + j->r0;
    /* Binary32 source values are wanted where the method reads them (a source that is not raw
     * words) and for the statistics of imported words. */
    bool import = o->method == NF_METHOD_IMPORT_ENCODED;
    bool need_values = import ? r->stats : !m->raw;
    NF_TRY(nf_convert_member_rows(o, m, j->r0, j->r1, raw, raw_len, scales, scale_len, need_values ? values : NULL, w,
                                  0, r->stats && !import ? st : NULL, err));
    nf_words view = *w;
    view.rows = rows;
    if (o->divisors && view.divisors) memcpy(view.divisors, o->divisors, (size_t)o->g.divisors * sizeof *o->divisors);
    if (r->stats && import) NF_TRY(import_stats(r, o, &view, parent_r0, values, decoded, st, err));
    if (r->stats && o->budget) NF_TRY(budget_error(o, m, j, &view, parent_r0, values, decoded, st, err));
    return put_rows(r, j->object, &view, parent_r0, cmp, err);
}

/* A job of a stepped object (GPTQ, AWQ): its rows' words read once, then step_rows rows at a
 * time read as values, encoded, measured and written as run_job does a chunk's. */
static nf_status run_step_job(runner *r, const job *j, const nf_words *w, float *values, size_t nvalues,
                              compare_ctx *cmp, nf_errstats *st, nf_error *err)
{
    const plan_object *o = &r->plan->objects[j->object];
    const plan_member *m = &o->members[j->member];
    const uint64_t step = r->objs[j->object].step_rows;
    nf_dialect_rows *c;
    NF_TRY(nf_dialect_rows_open(m->source->src, m->q, j->r0, j->r1, &c, err));
    nf_status s = NF_OK;
    for (uint64_t a = j->r0; s == NF_OK && a < j->r1; a += step) {
        if (atomic_load(&r->failed) || (r->cancel && *r->cancel)) break; /* the run reports why */
        const uint64_t b = j->r1 - a < step ? j->r1 : a + step;
        s = nf_dialect_rows_read(c, a, b, values, nvalues, err);
        nf_src_rows rows =
            {.name = m->t->name, .type = m->src_type, .first_row = a, .rows = b - a, .cols = o->g.cols, .data = values};
        nf_words view = *w;
        view.rows = b - a;
        if (s == NF_OK)
            s = nf_method_encode_rows_measured(o->method, o->g.format, &o->params, &rows, &view, r->stats ? st : NULL,
                                               err);
        if (s == NF_OK) s = put_rows(r, j->object, &view, m->parent_row0 + a, cmp, err);
    }
    nf_dialect_rows_close(c);
    return s;
}

/* The words of one job of the object: chunk_rows rows, or one span of span_cols columns (of a
 * row, or of an nvfp4 band). */
static nf_status alloc_words(const nf_geometry *g, const object_run *run, nf_words *w, nf_error *err)
{
    if (!run->span_cols) return nf_words_alloc(w, g, run->step_rows ? run->step_rows : run->chunk_rows, err);
    nf_colspan sp;
    NF_TRY(nf_colspan_init(&sp, g, 0, 0, run->span_cols, err));
    return nf_words_alloc(w, &sp.g, sp.g.rows, err);
}

/* Columns [c0, c0 + n) of rows [r0, r0 + rows) of an import's source tensor of row_bytes a row
 * (cols / row_bytes columns a byte: 2 for nvfp4's codes, 16 for its scales, which divide c0 and
 * n): one read a row. */
static nf_status read_band_span(const nf_source *src, const nf_source_tensor *t, uint64_t row_bytes, uint64_t cols,
                                uint64_t r0, uint64_t rows, uint64_t c0, uint64_t n, uint8_t *out, size_t len,
                                nf_error *err)
{
    const uint64_t per = cols / row_bytes, span = n / per;
    if (rows * span > len) return nf_error_set(err, NF_ERR_USAGE, "span buffer too small");
    for (uint64_t i = 0; i < rows; i++)
        NF_TRY(nf_source_read_bytes(src, t, (r0 + i) * row_bytes + c0 / per, out + i * span, (size_t)span, err));
    return NF_OK;
}

/* The words of one span where the whole rows would have them: to the writer, or to the
 * comparison of verify --against. */
static nf_status put_span(runner *r, const job *j, const nf_colspan *sp, const nf_words *view, compare_ctx *cmp,
                          nf_error *err)
{
    nf_writer_sink ws = {r->sink->writer, r->plan->objects[j->object].writer_index};
    if (!r->sink->writer) cmp->object = j->object;
    nf_colspan_sink to = {sp, r->sink->writer ? nf_writer_sink_write : nf_convert_compare_write,
                          r->sink->writer ? (void *)&ws : (void *)cmp};
    NF_TRY(nf_layout_encode_rows(&sp->g, view, 0, false, nf_colspan_write, &to, err));
    atomic_fetch_add(&r->bytes_done, sp->g.bytes);
    return NF_OK;
}

/* A band of 128 rows of an nvfp4 import (nvfp4_band_spans), span by span: each span's codes and
 * scales read, imported as a [128, n] matrix of its own, measured as whole rows are (NVFP4 has no
 * values of its own: its statistics count every value as not compared, docs/ninfer-convert.md;
 * MXFP4's are read span by span) and written
 * where the whole band would have it (nf_colspan).  The divisor words are the object's tail. */
static nf_status run_import_span_job(runner *r, const job *j, const nf_words *w, uint8_t *raw, size_t raw_len,
                                     uint8_t *scales, size_t scale_len, float *values, float *decoded, size_t nvalues,
                                     compare_ctx *cmp, nf_errstats *st, nf_error *err)
{
    const plan_object *o = &r->plan->objects[j->object];
    const plan_member *m = &o->members[j->member];
    const nf_source *src = m->source->src;
    const uint64_t k = o->g.cols, span = r->objs[j->object].span_cols, rows = j->r1 - j->r0;
    const uint64_t band0 = m->parent_row0 + j->r0;
    for (uint64_t c0 = 0; c0 < k; c0 += span) {
        uint64_t n = k - c0 < span ? k - c0 : span;
        nf_colspan sp;
        NF_TRY(nf_colspan_init(&sp, &o->g, band0, c0, n, err));
        nf_import imp = m->imp;
        imp.cols = n;
        imp.row_bytes = n / (k / m->imp.row_bytes);
        imp.scale_row_bytes = n / (k / m->imp.scale_row_bytes);
        NF_TRY(read_band_span(src, m->t, m->imp.row_bytes, k, j->r0, rows, c0, n, raw, raw_len, err));
        NF_TRY(read_band_span(src, m->scale_t, m->imp.scale_row_bytes, k, j->r0, rows, c0, n, scales, scale_len, err));
        nf_import_chunk chunk = {
            j->r0, rows, raw, (size_t)(rows * imp.row_bytes), scales, (size_t)(rows * imp.scale_row_bytes), c0};
        nf_words view = *w;
        view.rows = rows;
        view.cols = n;
        NF_TRY_CTX(nf_import_rows(&imp, &chunk, &view, 0, err), err, "%s", nf_source_path(src));
        if (view.divisors) view.divisors[0] = o->divisors[band0 / (o->g.rows / o->g.divisors)];
        if (r->stats) {
            size_t count = (size_t)(rows * n);
            if (count > nvalues) return nf_error_set(err, NF_ERR_USAGE, "span buffer too small");
            if (m->imp.kind == NF_IMPORT_MXFP4) /* compared as whole rows are (nf_convert_member_rows) */
                for (uint64_t i = 0; i < rows; i++)
                    NF_TRY(nf_qweight_read_f32_span(src, m->q, j->r0 + i, c0, n, values + i * n, (size_t)n, err));
            else
                for (size_t i = 0; i < count; i++) values[i] = NAN;
            NF_TRY(nf_convert_words_values(&sp.g, &view, 0, decoded, err));
            for (uint64_t i = 0; i < rows; i++) r->kern->row_f32(values + i * n, decoded + i * n, (size_t)n, st);
        }
        NF_TRY(put_span(r, j, &sp, &view, cmp, err));
    }
    return NF_OK;
}

/* Columns [c0, c0 + n) of row `row` of a member as the method reads them: raw words into raw, or
 * a dialect's values into values (s->data set to the one read). */
static nf_status read_span(const plan_member *m, uint64_t row, uint64_t c0, uint64_t n, uint8_t *raw, size_t raw_len,
                           float *values, size_t nvalues, nf_src_rows *s, nf_error *err)
{
    const size_t es = nf_src_type_size(m->src_type);
    s->cols = n;
    s->first_col = c0;
    if (m->q) {
        s->data = values;
        return nf_qweight_read_f32_span(m->source->src, m->q, row, c0, n, values, nvalues, err);
    }
    if (n * es > raw_len) return nf_error_set(err, NF_ERR_USAGE, "span buffer too small");
    s->data = raw;
    return nf_source_read_bytes(m->source->src, m->t, row * m->t->row_bytes + c0 * es, raw, (size_t)(n * es), err);
}

/* Row j->r0 of a member whose rows are longer than a chunk, span by span (nf_colspan): each span
 * read, encoded and measured by the method as a row of its own and written where the whole row
 * would have it.  fp8_row_maxabs first reads the row once for its maximum, and ggml_quantize with
 * an importance vector once for its sum of squares (gguf_q4_0, gguf_q5_0). */
static nf_status run_span_job(runner *r, const job *j, const nf_words *w, uint8_t *raw, size_t raw_len, float *values,
                              float *decoded, size_t nvalues, compare_ctx *cmp, nf_errstats *st, nf_error *err)
{
    const plan_object *o = &r->plan->objects[j->object];
    const plan_member *m = &o->members[j->member];
    const nf_source *src = m->source->src;
    const uint64_t k = o->g.cols, span = r->objs[j->object].span_cols, row = j->r0;
    nf_src_rows s = {.name = m->t->name, .type = m->src_type, .data = raw, .first_row = row, .rows = 1, .row_cols = k};
    if (o->method == NF_METHOD_FP8_ROW_MAXABS) {
        for (uint64_t c0 = 0; c0 < k; c0 += span) {
            uint64_t n = k - c0 < span ? k - c0 : span;
            NF_TRY(read_span(m, row, c0, n, raw, raw_len, values, nvalues, &s, err));
            uint32_t mx;
            NF_TRY(nf_fp8_row_maxabs_max(o->g.format, &s, &mx, err));
            s.row_max = mx > s.row_max ? mx : s.row_max;
        }
    }
    if (o->method == NF_METHOD_GGML_QUANTIZE && o->params.importance) { /* the row's x^2, in column order */
        float sum2 = 0.0f;
        for (uint64_t c0 = 0; c0 < k; c0 += span) {
            uint64_t n = k - c0 < span ? k - c0 : span;
            NF_TRY(read_span(m, row, c0, n, raw, raw_len, values, nvalues, &s, err));
            NF_TRY(nf_ggml_quantize_row_sum2(o->g.format, &s, &sum2, err));
        }
        s.row_sum2 = sum2;
        s.has_row_sum2 = true;
    }
    for (uint64_t c0 = 0; c0 < k; c0 += span) {
        uint64_t n = k - c0 < span ? k - c0 : span;
        nf_colspan sp;
        NF_TRY(nf_colspan_init(&sp, &o->g, m->parent_row0 + row, c0, n, err));
        NF_TRY(read_span(m, row, c0, n, raw, raw_len, values, nvalues, &s, err));
        /* the span's importance: its own columns of the tensor's vector */
        nf_method_params params = o->params;
        if (params.importance) {
            params.importance += c0;
            params.importance_len = n;
        }
        nf_words view = *w;
        view.rows = 1;
        view.cols = n;
        NF_TRY(nf_method_encode_rows_measured(o->method, o->g.format, &params, &s, &view, r->stats ? st : NULL, err));
        if (r->stats && o->budget) { /* the budget's figure of the span's columns */
            if (!m->q) NF_TRY(nf_source_read_f32_span(src, m->t, row, c0, n, values, nvalues, err));
            NF_TRY(nf_convert_words_values(&sp.g, &view, 0, decoded, err));
            nf_budget_werror_rows(values, decoded, 1, n, c0, nf_budget_item_weights(o->budget, row), &st->wse);
        }
        NF_TRY(put_span(r, j, &sp, &view, cmp, err));
    }
    return NF_OK;
}

/* A band of 128 rows of an nvfp4_quantize or nvfp4_search object (nvfp4_quantize_band_spans), span by span: each
 * span's values read row by row into one [128, w] chunk, encoded under the matrix's maximum,
 * measured, and written where the whole band would have it (nf_colspan).  The divisor word is
 * the object's tail. */
static nf_status run_quant_span_job(runner *r, const job *j, const nf_words *w, uint8_t *raw, size_t raw_len,
                                    float *values, size_t nvalues, compare_ctx *cmp, nf_errstats *st, nf_error *err)
{
    const plan_object *o = &r->plan->objects[j->object];
    const plan_member *m = &o->members[j->member];
    const uint64_t k = o->g.cols, span = r->objs[j->object].span_cols, rows = j->r1 - j->r0;
    const size_t es = nf_src_type_size(m->src_type);
    for (uint64_t c0 = 0; c0 < k; c0 += span) {
        uint64_t n = k - c0 < span ? k - c0 : span;
        nf_colspan sp;
        NF_TRY(nf_colspan_init(&sp, &o->g, m->parent_row0 + j->r0, c0, n, err));
        if (rows * n > nvalues || rows * n * es > raw_len)
            return nf_error_set(err, NF_ERR_USAGE, "span buffer too small");
        nf_src_rows s = {.name = m->t->name,
                         .type = m->src_type,
                         .first_row = j->r0,
                         .rows = rows,
                         .row_cols = k,
                         .matrix_max = o->matrix_max,
                         .has_matrix_max = true};
        for (uint64_t i = 0; i < rows; i++) {
            nf_src_rows row = s;
            NF_TRY(read_span(m, j->r0 + i, c0, n, raw + i * n * es, (size_t)(n * es), values + i * n, (size_t)n, &row,
                             err));
            if (i == 0) s.data = row.data;
        }
        s.cols = n;
        s.first_col = c0;
        nf_method_params params = o->params; /* the span's columns of an importance vector */
        if (params.importance) {
            params.importance += c0;
            params.importance_len = n;
        }
        nf_words view = *w;
        view.rows = rows;
        view.cols = n;
        NF_TRY(nf_method_encode_rows_measured(o->method, o->g.format, &params, &s, &view, r->stats ? st : NULL, err));
        NF_TRY(put_span(r, j, &sp, &view, cmp, err));
    }
    return NF_OK;
}

/* ---------------------------------------------------------------- method programs */
static bool program_stop(void *ctx)
{
    runner *r = ctx;
    return atomic_load(&r->failed) || (r->cancel && *r->cancel);
}

/* Rows [r0, r0 + n) of member m as binary32 values (what a program is sent). */
static nf_status member_values(const plan_object *o, const plan_member *m, uint64_t r0, uint64_t n, float *values,
                               nf_error *err)
{
    const size_t count = (size_t)(n * o->g.cols);
    if (m->q) return nf_qweight_read_f32(m->source->src, m->q, r0, r0 + n, values, count, err);
    return nf_source_read_f32(m->source->src, m->t, r0, r0 + n, values, count, err);
}

/* A method program's object: each member begun with its tensor header, then its rows chunk by
 * chunk (cut where a stack's matrix ends, so a chunk has one importance vector); each answer is
 * checked as imported words are (nf_words_check), measured and written. */
static nf_status run_program_job(runner *r, size_t object, const nf_words *w, float *values, size_t nvalues,
                                 nf_mprog_proc **procs, compare_ctx *cmp, nf_errstats *st, nf_error *err)
{
    const plan_object *o = &r->plan->objects[object];
    const size_t pi = (size_t)(o->program - r->plan->programs);
    if (!procs[pi]) NF_TRY(nf_mprog_start(o->program, program_stop, r, &procs[pi], err));
    nf_mprog_proc *proc = procs[pi];
    const nf_method_params *pa = &o->params;
    const uint64_t k = o->g.cols, chunk = r->objs[object].chunk_rows;
    for (size_t mi = 0; mi < o->nmembers; mi++) {
        const plan_member *m = &o->members[mi];
        const nf_mprog_tensor t = {m->t->name, o->g.format, m->rows, k, o->with, o->divisors ? o->divisors[0] : 0};
        NF_TRY(nf_mprog_begin_tensor(proc, &t, err));
        for (uint64_t r0 = 0; r0 < m->rows;) {
            if (program_stop(r)) return nf_error_set(err, NF_ERR_IO, "interrupted");
            uint64_t n = m->rows - r0 < chunk ? m->rows - r0 : chunk;
            const float *imp = pa->importance;
            if (imp && pa->importance_rows) {
                const uint64_t per = pa->importance_rows, left = per - r0 % per;
                n = n < left ? n : left;
                imp += r0 / per * pa->importance_stride;
            }
            if (n * k > nvalues) return nf_error_set(err, NF_ERR_USAGE, "chunk buffer too small");
            NF_TRY(member_values(o, m, r0, n, values, err));
            nf_words view = *w;
            view.rows = n;
            if (o->divisors && view.divisors)
                memcpy(view.divisors, o->divisors, (size_t)o->g.divisors * sizeof *o->divisors);
            NF_TRY(nf_mprog_encode(proc, &t, r0, n, values, imp, &view, err));
            NF_TRY_CTX(nf_words_check(&o->g, &view, r0, err), err,
                       "method program '%s' (pid %ld): its answer to rows %" PRIu64 "..%" PRIu64
                       " of tensor '%s' breaks the format's contract",
                       o->program->name, nf_mprog_proc_pid(proc), r0, r0 + n - 1, m->t->name);
            if (st) {
                nf_src_rows src =
                    {.name = m->t->name, .type = NF_SRC_F32, .first_row = r0, .rows = n, .cols = k, .data = values};
                NF_TRY(nf_method_measure_words(o->g.format, &src, &view, st, err));
            }
            NF_TRY(put_rows(r, object, &view, m->parent_row0 + r0, cmp, err));
            r0 += n;
        }
    }
    return NF_OK;
}

/* The worker's programs at its end: each asked to exit (its answers all given), or killed when
 * the run failed or was interrupted. */
static void end_programs(runner *r, nf_mprog_proc **procs, size_t n)
{
    for (size_t i = 0; procs && i < n; i++) {
        if (!procs[i]) continue;
        nf_error err;
        if (program_stop(r)) nf_mprog_proc_kill(procs[i]);
        else if (nf_mprog_proc_finish(procs[i], &err) != NF_OK) fail(r, err.status, &err);
    }
    free(procs);
}

static void *worker(void *arg)
{
    runner *r = arg;
    /* Buffers for the largest chunk of any object: bounded by the chunk size, not the model. */
    uint64_t max_values = 0, max_raw = 0, max_scale = 0;
    for (size_t i = 0; i < r->plan->nobjects; i++) {
        const plan_object *o = &r->plan->objects[i];
        if (o->kind != NF_OBJECT_TENSOR) continue;
        uint64_t rows = r->objs[i].step_rows ? r->objs[i].step_rows : r->objs[i].chunk_rows;
        uint64_t span = r->objs[i].span_cols;
        uint64_t cols = span ? span : o->g.cols;
        if (rows * cols > max_values) max_values = rows * cols;
        for (size_t k = 0; k < o->nmembers; k++) {
            const plan_member *m = &o->members[k];
            const bool import = o->method == NF_METHOD_IMPORT_ENCODED;
            /* an import's span: nvfp4's, 2 columns a code byte and 16 a scale byte */
            uint64_t rb = import && span ? span / (o->g.cols / m->imp.row_bytes)
                          : import       ? m->imp.row_bytes
                          : span         ? span * nf_src_type_size(m->src_type)
                                         : m->t->row_bytes;
            uint64_t sb = import && span ? span / (o->g.cols / m->imp.scale_row_bytes) : m->imp.scale_row_bytes;
            if (rows * rb > max_raw) max_raw = rows * rb;
            if (import && rows * sb > max_scale) max_scale = rows * sb;
        }
    }
    size_t nv = (size_t)max_values;
    uint8_t *raw = malloc((size_t)max_raw + 16);
    uint8_t *scales = malloc((size_t)max_scale + 16);
    float *values = malloc((nv + 1) * sizeof *values);
    float *decoded = malloc((nv + 1) * sizeof *decoded);
    compare_ctx cmp = {r->sink, 0, malloc(1 << 16), 1 << 16};
    nf_errstats *st = r->stats ? malloc(sizeof *st) : NULL;
    nf_words w = {0};
    size_t words_object = SIZE_MAX; /* the object w was allocated for */
    nf_error err;
    /* this worker's method programs, started when it first meets an object of theirs */
    nf_mprog_proc **procs = r->plan->nprograms ? calloc(r->plan->nprograms, sizeof *procs) : NULL;
    if (!raw || !scales || !values || !decoded || !cmp.buf || (r->stats && !st) || (r->plan->nprograms && !procs)) {
        nf_error_set(&err, NF_ERR_NOMEM, "out of memory");
        fail(r, NF_ERR_NOMEM, &err);
        goto out;
    }
    for (;;) {
        if (atomic_load(&r->failed) || (r->cancel && *r->cancel)) break;
        size_t i = atomic_fetch_add(&r->next, 1);
        if (i >= r->njobs) break;
        job j = job_at(r, i);
        const plan_object *o = &r->plan->objects[j.object];
        if (r->objs[j.object].skip) {
            job_finished(r, &j, NULL);
            atomic_fetch_add(&r->done, 1);
            continue;
        }
        if (st) nf_errstats_init(st);
        /* The words of a chunk, kept from one job to the next of the same object: every encoder
         * and importer writes all the words of the rows it is given, so only a new object needs
         * a new (zeroed) allocation, not every chunk. */
        nf_status s = NF_OK;
        if (words_object != j.object) {
            nf_words_free(&w);
            words_object = SIZE_MAX;
            s = alloc_words(&o->g, &r->objs[j.object], &w, &err);
            if (s == NF_OK) words_object = j.object;
        }
        if (s == NF_OK && r->objs[j.object].whole) {
            s = run_program_job(r, j.object, &w, values, nv, procs, &cmp, st, &err);
        } else if (s == NF_OK && r->objs[j.object].span_cols && o->method == NF_METHOD_IMPORT_ENCODED) {
            s = run_import_span_job(r, &j, &w, raw, (size_t)max_raw, scales, (size_t)max_scale, values, decoded, nv,
                                    &cmp, st, &err);
        } else if (s == NF_OK && r->objs[j.object].span_cols && nvfp4_quantizer(o->method)) {
            s = run_quant_span_job(r, &j, &w, raw, (size_t)max_raw, values, nv, &cmp, st, &err);
        } else if (s == NF_OK && r->objs[j.object].span_cols) {
            s = run_span_job(r, &j, &w, raw, (size_t)max_raw, values, decoded, nv, &cmp, st, &err);
        } else if (s == NF_OK && r->objs[j.object].step_rows) {
            s = run_step_job(r, &j, &w, values, nv, &cmp, st, &err);
        } else if (s == NF_OK) {
            nf_words view = w;
            view.rows = j.r1 - j.r0;
            s = run_job(r, &j, &view, raw, (size_t)max_raw, scales, (size_t)max_scale, values, decoded, &cmp, st, &err);
        }
        if (s != NF_OK) {
            nf_error_prefix(&err, "object '%s'", o->id);
            fail(r, s, &err);
            break;
        }
        job_finished(r, &j, st);
        atomic_fetch_add(&r->done, 1);
    }
out:
    end_programs(r, procs, r->plan->nprograms);
    nf_words_free(&w);
    free(raw);
    free(scales);
    free(values);
    free(decoded);
    free(cmp.buf);
    free(st);
    pthread_mutex_lock(&r->lock);
    r->running--;
    pthread_cond_signal(&r->wake);
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

/* Runs every job on `threads` workers; the calling thread reports progress every 100 ms, and
 * once more when the last worker has stopped. */
nf_status nf_convert_run_jobs(runner *r, unsigned threads, const nf_convert_options *opt, nf_error *err)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&r->wake, &ca);
    pthread_condattr_destroy(&ca);
    /* (under the lock: a worker that stops at once decrements running only after it is set) */
    nf_pool_workers pool;
    pthread_mutex_lock(&r->lock);
    size_t started = nf_pool_start(&pool, threads, worker, r);
    r->running = (unsigned)started;
    pthread_mutex_unlock(&r->lock);
    if (started == 0) {
        pthread_cond_destroy(&r->wake);
        return nf_error_set(err, NF_ERR_NOMEM, "cannot start a worker thread");
    }
    size_t total_objects = 0;
    uint64_t total_bytes = 0;
    for (size_t i = 0; i < r->plan->nobjects; i++)
        if (r->plan->objects[i].kind == NF_OBJECT_TENSOR) {
            total_objects++;
            total_bytes += r->plan->objects[i].g.bytes;
        }
    bool progress = opt && opt->progress;
    pthread_mutex_lock(&r->lock);
    while (r->running > 0) {
        if (progress) {
            pthread_mutex_unlock(&r->lock);
            nf_convert_progress pr = {atomic_load(&r->objects_done), total_objects, atomic_load(&r->bytes_done),
                                      total_bytes};
            opt->progress(opt->progress_ctx, &pr);
            pthread_mutex_lock(&r->lock);
            if (r->running == 0) break;
        }
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += 100 * 1000 * 1000;
        if (until.tv_nsec >= 1000 * 1000 * 1000) {
            until.tv_sec++;
            until.tv_nsec -= 1000 * 1000 * 1000;
        }
        pthread_cond_timedwait(&r->wake, &r->lock, &until);
    }
    pthread_mutex_unlock(&r->lock);
    if (progress) {
        nf_convert_progress pr = {atomic_load(&r->objects_done), total_objects, atomic_load(&r->bytes_done),
                                  total_bytes};
        opt->progress(opt->progress_ctx, &pr);
    }
    nf_pool_join(&pool);
    pthread_cond_destroy(&r->wake);
    if (r->status != NF_OK) {
        if (err) *err = r->error;
        return r->status;
    }
    if (r->cancel && *r->cancel) return nf_error_set(err, NF_ERR_IO, "interrupted");
    return NF_OK;
}

void nf_convert_runner_free(runner *r)
{
    for (size_t i = 0; r->objs && i < r->plan->nobjects; i++) free(r->objs[i].acc);
    free(r->objs);
    free(r->first_job);
}
