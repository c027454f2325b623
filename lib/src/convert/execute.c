/* Executing a plan: every tensor object is cut into bounded chunks of rows; worker threads
 * read a chunk from its source, encode it (method or import), compare the represented values
 * with the source for the report, and hand the bytes to a sink: the container writer, or a
 * comparison with an existing artifact (verify --against).  Each chunk owns disjoint output
 * bytes, so the result is the same for any thread count or chunk size; the report's statistics
 * are summed exactly across chunks (stats/stats.h), so they are the same too. */
#include <errno.h>
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

#include "common/checked.h"
#include "common/io.h"
#include "common/json_walk.h"
#include "common/pool.h"
#include "convert/convert_impl.h"
#include "outputs/out_names.h"
#include "outputs/out_publish.h"
#include "budget/werror.h"
#include "stats/stats.h"

#define DEFAULT_CHUNK_VALUES ((uint64_t)1 << 18)
/* A path as messages show it: shortened in the middle when long (common/io.h, docs/security.md 7.1, M8). */
#define MP(path) nf_io_msg_path((path), (char[NF_IO_MSG_PATH + 1]){0})

/* ---------------------------------------------------------------- source rows -> words */
/* nvfp4_quantize and nvfp4_search: their chunks take the matrix's maximum from the plan. */
static bool nvfp4_quantizer(nf_method_id id) { return id == NF_METHOD_NVFP4_QUANTIZE || id == NF_METHOD_NVFP4_SEARCH; }

nf_status nf_convert_member_rows(const plan_object *o, const plan_member *m, uint64_t r0, uint64_t r1,
                                 void *raw_buf, size_t raw_len, void *scale_buf, size_t scale_len, float *values,
                                 nf_words *words, uint64_t words_row, nf_errstats *stats, nf_error *err)
{
    const nf_source *src = m->source->src;
    uint64_t rows = r1 - r0;
    if (o->method == NF_METHOD_IMPORT_ENCODED) {
        const nf_import *imp = &m->imp;
        size_t len = (size_t)(rows * imp->row_bytes);
        if (len > raw_len) return nf_error_set(err, NF_ERR_USAGE, "chunk buffer too small");
        NF_TRY(nf_source_read_bytes(src, m->t, r0 * imp->row_bytes, raw_buf, len, err));
        nf_import_chunk chunk = {r0, rows, raw_buf, len, NULL, 0, 0};
        if (imp->scale_row_bytes && m->scale_t) {
            size_t slen = (size_t)(rows * imp->scale_row_bytes);
            if (slen > scale_len) return nf_error_set(err, NF_ERR_USAGE, "chunk buffer too small");
            NF_TRY(nf_source_read_bytes(src, m->scale_t, r0 * imp->scale_row_bytes, scale_buf, slen, err));
            chunk.scales = scale_buf;
            chunk.scales_len = slen;
        }
        /* the import names the tensor and the word; the checkpoint is named here */
        NF_TRY_CTX(nf_import_rows(imp, &chunk, words, words_row, err), err, "%s", nf_source_path(src));
        /* GGUF sources have values of their own (ggml's dequantization) to compare with. */
        if (values) {
            if (m->t->ggml_type >= 0 && m->t->convertible)
                NF_TRY(nf_source_read_f32(src, m->t, r0, r1, values, (size_t)(rows * o->g.cols), err));
            else
                for (size_t i = 0; i < rows * o->g.cols; i++) values[i] = NAN;
        }
        return NF_OK;
    }
    nf_src_rows s = {.name = m->t->name, .type = m->src_type, .first_row = r0, .rows = rows, .cols = o->g.cols,
                     .matrix_max = o->matrix_max, .has_matrix_max = nvfp4_quantizer(o->method)};
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

/* ---------------------------------------------------------------- jobs */
/* A job: rows [r0, r1) of one member of one tensor object.  Jobs are numbered object by object,
 * member by member, chunk by chunk, and job_at finds one from its number: no list of every
 * chunk of the model is held in memory. */
typedef struct job {
    size_t object, member;
    uint64_t r0, r1;
} job;

typedef struct sink {
    /* writer mode */
    nf_writer *writer;
    /* compare mode */
    nf_artifact *artifact;
    const nf_object **targets;      /* artifact object per plan object */
    atomic_bool *differs;           /* per plan object */
    uint64_t *first_diff;           /* per plan object: smallest differing offset seen */
    pthread_mutex_t lock;
} sink;

typedef struct compare_ctx {
    sink *s;
    size_t object;
    uint8_t *buf;
    size_t cap;
} compare_ctx;

static nf_status compare_write(void *ctx, uint64_t offset, const void *data, size_t len, nf_error *err)
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

/* One plan object while it is converted: how its rows are cut, how many of its jobs are still to
 * finish, and its statistics: summed exactly while jobs finish (in whatever order), summarized
 * when the last one does. */
typedef struct object_run {
    uint64_t chunk_rows;
    uint64_t span_cols;        /* rows longer than a chunk: a job is one row, encoded in spans of
                                  this many columns (ninfer/layout.h nf_colspan); 0: whole rows */
    uint64_t pending;          /* jobs not finished (under the runner's lock) */
    bool skip;                 /* compare mode: the object is not re-derived */
    nf_errstats *acc;          /* while jobs are pending (allocated by the first to finish) */
    nf_errstats_summary sum;   /* once none is */
} object_run;

typedef struct runner {
    nf_plan *plan;
    object_run *objs;          /* one per plan object */
    uint64_t *first_job;       /* nobjects + 1: number of each object's first job, then the total */
    size_t njobs;
    atomic_size_t next;
    atomic_size_t done;
    atomic_size_t objects_done;
    atomic_uint_fast64_t bytes_done;
    sink *sink;
    bool stats;
    const nf_stats_kernels *kern;
    volatile int *cancel;
    uint64_t chunk_values;
    /* the first error, the objects' statistics, the workers still running (under lock; each
     * signals `wake` when it stops, so the calling thread never sleeps past the end) */
    pthread_mutex_t lock;
    pthread_cond_t wake;
    unsigned running;
    nf_status status;
    nf_error error;
    atomic_bool failed; /* status != NF_OK, for the workers' unlocked check */
} runner;

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
        if ((m->imp.kind != NF_IMPORT_NVFP4_MODELOPT && m->imp.kind != NF_IMPORT_NVFP4_COMPRESSED) || !m->scale_t ||
            m->rows % 128 || m->parent_row0 % 128)
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

/* Cuts every tensor object into jobs (nvfp4: multiples of 128 rows, restarting at each member,
 * as the import module's chunking rule asks). */
static nf_status plan_jobs(runner *r, nf_error *err)
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
        if (spanned(o, r->chunk_values)) {
            /* a row longer than a chunk is cut into spans: memory stays bounded by the chunk
             * whatever the row's length (spans are multiples of NF_COLSPAN_ALIGN columns, the
             * statistics' block, so the figures do not change either) */
            uint64_t band = nf_layout_colspan_rows(&o->g); /* nvfp4: a job is a band of 128 rows */
            run->chunk_rows = band;
            run->span_cols = r->chunk_values / band / NF_COLSPAN_ALIGN * NF_COLSPAN_ALIGN;
            if (run->span_cols < NF_COLSPAN_ALIGN) run->span_cols = NF_COLSPAN_ALIGN;
        }
        for (size_t k = 0; k < o->nmembers; k++) run->pending += (o->members[k].rows + run->chunk_rows - 1) / run->chunk_rows;
        total += run->pending;
        if (run->pending == 0) atomic_fetch_add(&r->objects_done, 1);
    }
    r->first_job[n] = total;
    if (total > SIZE_MAX) return nf_error_set(err, NF_ERR_NOMEM, "%llu row chunks do not fit in memory",
                                              (unsigned long long)total);
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
    nf_budget_werror_rows(values, decoded, j->r1 - j->r0, o->g.cols, 0, o->budget->weights, &st->wse);
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
    NF_TRY(nf_convert_member_rows(o, m, j->r0, j->r1, raw, raw_len, scales, scale_len, need_values ? values : NULL,
                                  w, 0, r->stats && !import ? st : NULL, err));
    nf_words view = *w;
    view.rows = rows;
    if (o->divisors && view.divisors) memcpy(view.divisors, o->divisors, (size_t)o->g.divisors * sizeof *o->divisors);
    if (r->stats && import) NF_TRY(import_stats(r, o, &view, parent_r0, values, decoded, st, err));
    if (r->stats && o->budget) NF_TRY(budget_error(o, m, j, &view, parent_r0, values, decoded, st, err));
    if (r->sink->writer) {
        nf_writer_sink ws = {r->sink->writer, o->writer_index};
        NF_TRY(nf_layout_encode_rows(&o->g, &view, parent_r0, false, nf_writer_sink_write, &ws, err));
    } else {
        cmp->object = j->object;
        NF_TRY(nf_layout_encode_rows(&o->g, &view, parent_r0, false, compare_write, cmp, err));
    }
    atomic_fetch_add(&r->bytes_done, o->g.bytes * rows / (o->g.rows ? o->g.rows : 1));
    return NF_OK;
}

/* The words of one job of the object: chunk_rows rows, or one span of span_cols columns (of a
 * row, or of an nvfp4 band). */
static nf_status alloc_words(const nf_geometry *g, const object_run *run, nf_words *w, nf_error *err)
{
    if (!run->span_cols) return nf_words_alloc(w, g, run->chunk_rows, err);
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
    nf_colspan_sink to = {sp, r->sink->writer ? nf_writer_sink_write : compare_write,
                          r->sink->writer ? (void *)&ws : (void *)cmp};
    NF_TRY(nf_layout_encode_rows(&sp->g, view, 0, false, nf_colspan_write, &to, err));
    atomic_fetch_add(&r->bytes_done, sp->g.bytes);
    return NF_OK;
}

/* A band of 128 rows of an nvfp4 import (nvfp4_band_spans), span by span: each span's codes and
 * scales read, imported as a [128, n] matrix of its own, measured as whole rows are (no values of
 * its own: its statistics count every value as not compared, docs/ninfer-convert.md) and written
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
        nf_import_chunk chunk = {j->r0, rows, raw, (size_t)(rows * imp.row_bytes), scales,
                                 (size_t)(rows * imp.scale_row_bytes), c0};
        nf_words view = *w;
        view.rows = rows;
        view.cols = n;
        NF_TRY_CTX(nf_import_rows(&imp, &chunk, &view, 0, err), err, "%s", nf_source_path(src));
        if (view.divisors) view.divisors[0] = o->divisors[band0 / (o->g.rows / o->g.divisors)];
        if (r->stats) {
            size_t count = (size_t)(rows * n);
            if (count > nvalues) return nf_error_set(err, NF_ERR_USAGE, "span buffer too small");
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
static nf_status run_span_job(runner *r, const job *j, const nf_words *w, uint8_t *raw, size_t raw_len,
                              float *values, float *decoded, size_t nvalues, compare_ctx *cmp, nf_errstats *st,
                              nf_error *err)
{
    const plan_object *o = &r->plan->objects[j->object];
    const plan_member *m = &o->members[j->member];
    const nf_source *src = m->source->src;
    const uint64_t k = o->g.cols, span = r->objs[j->object].span_cols, row = j->r0;
    nf_src_rows s = {.name = m->t->name, .type = m->src_type, .data = raw, .first_row = row, .rows = 1,
                     .row_cols = k};
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
            nf_budget_werror_rows(values, decoded, 1, n, c0, o->budget->weights, &st->wse);
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
        nf_src_rows s = {.name = m->t->name, .type = m->src_type, .first_row = j->r0, .rows = rows,
                         .row_cols = k, .matrix_max = o->matrix_max, .has_matrix_max = true};
        for (uint64_t i = 0; i < rows; i++) {
            nf_src_rows row = s;
            NF_TRY(read_span(m, j->r0 + i, c0, n, raw + i * n * es, (size_t)(n * es), values + i * n, (size_t)n,
                             &row, err));
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

static void *worker(void *arg)
{
    runner *r = arg;
    /* Buffers for the largest chunk of any object: bounded by the chunk size, not the model. */
    uint64_t max_values = 0, max_raw = 0, max_scale = 0;
    for (size_t i = 0; i < r->plan->nobjects; i++) {
        const plan_object *o = &r->plan->objects[i];
        if (o->kind != NF_OBJECT_TENSOR) continue;
        uint64_t rows = r->objs[i].chunk_rows, span = r->objs[i].span_cols;
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
    if (!raw || !scales || !values || !decoded || !cmp.buf || (r->stats && !st)) {
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
        if (s == NF_OK && r->objs[j.object].span_cols && o->method == NF_METHOD_IMPORT_ENCODED) {
            s = run_import_span_job(r, &j, &w, raw, (size_t)max_raw, scales, (size_t)max_scale, values, decoded, nv,
                                    &cmp, st, &err);
        } else if (s == NF_OK && r->objs[j.object].span_cols && nvfp4_quantizer(o->method)) {
            s = run_quant_span_job(r, &j, &w, raw, (size_t)max_raw, values, nv, &cmp, st, &err);
        } else if (s == NF_OK && r->objs[j.object].span_cols) {
            s = run_span_job(r, &j, &w, raw, (size_t)max_raw, values, decoded, nv, &cmp, st, &err);
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
static nf_status run_jobs(runner *r, unsigned threads, const nf_convert_options *opt, nf_error *err)
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

static void runner_free(runner *r)
{
    for (size_t i = 0; r->objs && i < r->plan->nobjects; i++) free(r->objs[i].acc);
    free(r->objs);
    free(r->first_job);
}

/* ---------------------------------------------------------------- report */
/* A figure of the report: a finite binary64, or null (no finite value). */
static json_t *figure(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static json_t *object_report(const nf_plan *p, const nf_errstats_summary *st, size_t i)
{
    const plan_object *o = &p->objects[i];
    json_t *shape = json_array();
    for (uint32_t d = 0; d < o->g.rank; d++) json_array_append_new(shape, json_integer((json_int_t)o->g.shape[d]));
    json_t *srcs = json_array();
    for (size_t k = 0; k < o->nmembers; k++) json_array_append_new(srcs, json_string(o->members[k].t->name));
    json_t *rec = json_pack("{s:s,s:o,s:s,s:s,s:s,s:o,s:o,s:I}", "object", o->id, "sources", srcs, "method",
                            nf_method_name(o->method), "format", o->g.format->name, "layout", o->g.layout->name,
                            "method_parameters", o->with ? json_deep_copy(o->with) : json_object(), "shape", shape,
                            "bytes", (json_int_t)o->g.bytes);
    json_object_set_new(rec, "values_compared", json_integer((json_int_t)st->count));
    if (st->skipped) json_object_set_new(rec, "values_not_compared", json_integer((json_int_t)st->skipped));
    if (st->count) {
        json_object_set_new(rec, "max_abs_error", figure(st->max_abs));
        json_object_set_new(rec, "rmse", figure(st->rmse));
        /* SNR in dB; an exact object has no finite SNR: null */
        json_object_set_new(rec, "snr_db", figure(st->snr_db));
    }
    if (o->budget) { /* chosen by the budget: the error it estimated, and the one measured */
        const plan_budget_item *it = o->budget;
        json_object_set_new(rec, "budget",
                            json_pack("{s:f,s:o,s:I,s:s}", "estimated_error", it->opts[it->pick].error,
                                      "weighted_error", figure(st->wse), "rows_measured", (json_int_t)it->opts[it->pick].sampled,
                                      "weights", it->weights ? "imatrix" : "uniform"));
    }
    return rec;
}

/* The report's members before "objects": output, name, recipe, and the provenance without its
 * per-object records (each object's record below carries its method, parameters and sources, the
 * same as the artifact's provenance.objects: the report need not hold them twice). */
static json_t *report_head(const nf_plan *p, const nf_convert_options *opt)
{
    json_t *prov = json_copy(p->provenance); /* shallow: the plan's tree is untouched */
    if (!prov) return NULL;
    json_object_del(prov, "objects");
    return json_pack("{s:s,s:o,s:o,s:o}", "output", opt->output, "name",
                     p->recipe->output_name ? json_string(p->recipe->output_name) : json_null(), "recipe",
                     p->recipe->path ? json_string(p->recipe->path) : json_null(), "provenance", prov);
}

#define REPORT_BUFFER ((size_t)1 << 20) /* the report goes out in writes of 1 MiB */

/* JSON text of v as the report writes it: compact, members in order, binary64 figures exact. */
static char *report_text(const json_t *v)
{
    return nf_jw_dump(v, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17) | JSON_ENCODE_ANY, 0, NULL);
}

/* The report's last members: tail's, and with a budget its summary (docs/recipes.md, "Budgets"):
 * the allocation's figures, the estimate and the measured weighted error in total (each
 * object's record has its own). */
static json_t *report_tail(const nf_plan *p, const nf_errstats_summary *sums, const json_t *tail)
{
    json_t *end = json_copy((json_t *)tail);
    if (!end || !p->budget) return end;
    json_t *b = nf_budget_describe(p->budget, &p->recipe->budget);
    double measured = 0;
    for (size_t k = 0; k < p->budget->nitems; k++) measured += sums[p->budget->items[k].object].wse;
    if (!b || json_object_del(b, "allocation") != 0 ||
        json_object_set_new(b, "weighted_error", json_real(measured)) != 0 || json_object_set_new(end, "budget", b)) {
        json_decref(end);
        return NULL;
    }
    return end;
}

/* The report, streamed to a temp file beside its destination (renamed once the artifact is
 * published): head's members, then "objects" with one compact record per line, built one at a
 * time (memory does not grow with the number of objects), then tail's members:
 *   {"output":...,"name":...,"recipe":...,"provenance":{...},"objects":[
 *   {"object":...},
 *   ...
 *   ],"artifact_id":...,"threads":...,"chunk_values":...}
 * Through the I/O shim like every other file the library writes. */
static nf_status write_report(const nf_plan *p, const nf_errstats_summary *sums, const char *path,
                              const json_t *head, const json_t *tail, char **tmp_out, nf_error *err)
{
    char *tmp = NULL;
    int fd = nf_outputs_temp(path, &tmp);
    if (fd < 0) return nf_error_errno(err, errno, "cannot create a temp file for %s", MP(path));
    nf_io_out o;
    nf_status st = nf_io_out_init(&o, fd, REPORT_BUFFER) ? NF_OK : nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    char *text = st == NF_OK ? report_text(head) : NULL;
    if (st == NF_OK && !text) st = nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    if (st == NF_OK) {
        nf_io_out_put(&o, text, strlen(text) - 1); /* without its closing brace */
        nf_io_out_put(&o, ",\"objects\":[\n", 13);
    }
    free(text);
    bool first = true;
    for (size_t i = 0; st == NF_OK && i < p->nobjects; i++) {
        if (p->objects[i].kind != NF_OBJECT_TENSOR) continue;
        json_t *rec = object_report(p, &sums[i], i);
        text = rec ? report_text(rec) : NULL;
        json_decref(rec);
        if (!text) {
            st = nf_error_set(err, NF_ERR_NOMEM, "out of memory");
            break;
        }
        if (!first) nf_io_out_put(&o, ",\n", 2);
        first = false;
        nf_io_out_put(&o, text, strlen(text));
        free(text);
    }
    json_t *end = st == NF_OK ? report_tail(p, sums, tail) : NULL;
    text = end ? report_text(end) : NULL;
    json_decref(end);
    if (st == NF_OK && !text) st = nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    if (st == NF_OK) {
        nf_io_out_put(&o, first ? "]," : "\n],", first ? 2 : 3);
        nf_io_out_put(&o, text + 1, strlen(text) - 1); /* without its opening brace */
        nf_io_out_put(&o, "\n", 1);
        nf_io_out_flush(&o);
    }
    free(text);
    int e = o.e;
    if (st == NF_OK && !e && (e = nf_io_fchmod(fd, 0644)) == 0) e = nf_io_fdatasync(fd);
    if (st == NF_OK && e) st = nf_error_errno(err, e, "cannot write %s", MP(tmp));
    nf_io_out_free(&o);
    nf_io_close(fd);
    if (st != NF_OK) {
        nf_io_unlink(tmp);
        free(tmp);
        return st;
    }
    *tmp_out = tmp;
    return NF_OK;
}

/* ---------------------------------------------------------------- inputs and outputs */
/* Every file the conversion reads, by identity (device and inode, following links), with what
 * it is for messages. */
typedef struct input_file {
    dev_t dev;
    ino_t ino;
    char what[160];
} input_file;

typedef struct input_set {
    input_file *v;
    size_t n, cap;
    bool nomem;
} input_set;

static void add_input(input_set *in, const char *path, const char *what)
{
    struct stat sb;
    if (!path || stat(path, &sb) != 0) return; /* not a file (stdin, "(quick mode)"): nothing to protect */
    if (in->n == in->cap) {
        size_t cap = in->cap ? in->cap * 2 : 16;
        input_file *v = realloc(in->v, cap * sizeof *v);
        if (!v) {
            in->nomem = true;
            return;
        }
        in->v = v;
        in->cap = cap;
    }
    input_file *f = &in->v[in->n++];
    f->dev = sb.st_dev;
    f->ino = sb.st_ino;
    snprintf(f->what, sizeof f->what, "%s", what);
}

static nf_status collect_inputs(const nf_plan *p, input_set *in, nf_error *err)
{
    char what[160];
    add_input(in, p->recipe->path, "the recipe");
    for (size_t i = 0; i < p->nsources; i++) {
        const char *name = p->sources[i].name;
        snprintf(what, sizeof what, "source '%s'", name);
        add_input(in, p->sources[i].path, what);
        const nf_source *s = p->sources[i].src;
        snprintf(what, sizeof what, "a file of source '%s'", name);
        for (size_t f = 0; s && f < nf_source_file_count(s); f++) add_input(in, nf_source_file_path(s, f), what);
        snprintf(what, sizeof what, "the index of source '%s'", name);
        add_input(in, s ? nf_source_index_path(s) : NULL, what);
        for (size_t c = 0; s && c < nf_source_companion_count(s); c++) {
            const char *cname = NULL, *cpath = nf_source_companion_at(s, c, &cname);
            snprintf(what, sizeof what, "%s of source '%s'", cname ? cname : "a companion file", name);
            add_input(in, cpath, what);
        }
    }
    for (size_t i = 0; i < p->nobjects; i++)
        if (p->objects[i].kind == NF_OBJECT_RESOURCE) add_input(in, p->objects[i].path, "a resource file");
    if (in->nomem) return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    return NF_OK;
}

static const input_file *input_of(const input_set *in, const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0) return NULL;
    for (size_t i = 0; i < in->n; i++)
        if (in->v[i].dev == sb.st_dev && in->v[i].ino == sb.st_ino) return &in->v[i];
    return NULL;
}

/* A name the run to OUT touches (nf_outputs_each_role) that is an input: refused. */
typedef struct refusal {
    const input_set *in;
    const char *output;
} refusal;

static nf_status refuse_input(void *ctx, const char *path, const char *role, nf_error *err)
{
    const refusal *r = ctx;
    const input_file *f = input_of(r->in, path);
    if (f && strcmp(role, "the artifact") == 0)
        return nf_error_set(err, NF_ERR_USAGE, "%s is %s: refusing to overwrite an input", MP(path), f->what);
    if (f)
        return nf_error_set(err, NF_ERR_USAGE, "%s is %s: refusing to overwrite an input (a conversion to %s "
                            "writes, replaces or removes %s)", MP(path), f->what, MP(r->output), role);
    return NF_OK;
}

/* No input is ever replaced, --force or not (docs/security.md 1.3, docs/security.md 7.1, F1): no file the run creates,
 * replaces or removes for OUT (every name nf_outputs_role knows, found in OUT's directory) may be an
 * input, by its name or as another link to the same file. */
static nf_status refuse_inputs(const input_set *in, const char *output, bool report, nf_error *err)
{
    refusal r = {in, output};
    return nf_outputs_each_role(output, report, refuse_input, &r, err);
}

/* Before anything is written: no output is an input, and the report (when there is one) is no
 * special file (docs/security.md 1.3: never replaced; it is published by rename like the artifact), nor
 * an existing file without force. */
static nf_status prepare_outputs(const input_set *in, const nf_convert_options *opt, const char *report_path,
                                 nf_error *err)
{
    NF_TRY(refuse_inputs(in, opt->output, opt->report, err));
    if (!opt->report) return NF_OK;
    struct stat sb;
    int e = nf_io_lstat(report_path, &sb);
    if (e == 0 && !S_ISREG(sb.st_mode))
        return nf_error_set(err, NF_ERR_USAGE, "%s is %s, not a regular file: the report is published by rename, "
                            "which would replace it; give another output name, or --no-report",
                            MP(report_path), nf_io_kind_name(sb.st_mode));
    if (e == 0 && !opt->force)
        return nf_error_set(err, NF_ERR_IO, "%s exists (use --force to replace it)", MP(report_path));
    if (e != 0 && e != ENOENT) return nf_error_errno(err, e, "%s", MP(report_path));
    return NF_OK;
}

static nf_status write_resources(nf_plan *p, nf_writer *w, nf_error *err)
{
    uint8_t buf[65536];
    for (size_t i = 0; i < p->nobjects; i++) {
        const plan_object *o = &p->objects[i];
        if (o->kind != NF_OBJECT_RESOURCE || !nf_writer_object_selected(w, o->writer_index)) continue;
        if (o->data) { /* made by the plan */
            NF_TRY(nf_writer_write(w, o->writer_index, 0, o->data, (size_t)o->bytes, err));
            continue;
        }
        int fd = nf_io_open(o->path, O_RDONLY, 0);
        if (fd < 0) return nf_error_errno(err, errno, "cannot open %s", MP(o->path));
        struct stat sb;
        int e = nf_io_fstat(fd, &sb);
        nf_status st = e ? nf_error_errno(err, e, "cannot stat %s", MP(o->path)) : NF_OK;
        if (st == NF_OK && (uint64_t)sb.st_size != o->bytes)
            st = nf_error_set(err, NF_ERR_IO, "%s changed size while converting", MP(o->path));
        for (uint64_t pos = 0; st == NF_OK && pos < o->bytes;) {
            size_t n = o->bytes - pos < sizeof buf ? (size_t)(o->bytes - pos) : sizeof buf;
            if ((e = nf_io_pread_full(fd, buf, n, pos)) != 0)
                st = nf_error_errno(err, e, "cannot read %s", MP(o->path));
            else
                st = nf_writer_write(w, o->writer_index, pos, buf, n, err);
            pos += n;
        }
        nf_io_close(fd);
        if (st != NF_OK) return st;
    }
    return NF_OK;
}

static nf_status write_tails(nf_plan *p, nf_writer *w, nf_error *err)
{
    for (size_t i = 0; i < p->nobjects; i++) {
        const plan_object *o = &p->objects[i];
        if (o->kind != NF_OBJECT_TENSOR || !nf_writer_object_selected(w, o->writer_index)) continue;
        nf_words words;
        NF_TRY(nf_words_alloc(&words, &o->g, 0, err));
        if (o->divisors && words.divisors)
            memcpy(words.divisors, o->divisors, (size_t)o->g.divisors * sizeof *o->divisors);
        nf_writer_sink ws = {w, o->writer_index};
        nf_status st = nf_layout_encode_tail(&o->g, &words, false, nf_writer_sink_write, &ws, err);
        nf_words_free(&words);
        if (st != NF_OK) return nf_error_forward(err, st, "object '%s'", o->id);
    }
    return NF_OK;
}

/* The writer of p's artifact: every object planned, the directory members set (not laid out). */
static nf_status plan_writer(nf_plan *p, const nf_convert_options *opt, nf_writer **out, nf_error *err)
{
    nf_writer_options wo = {opt->has_max_file_bytes ? opt->max_file_bytes : p->recipe->max_file_bytes,
                            opt->artifact_id, opt->force, true};
    nf_writer *w = NULL;
    NF_TRY(nf_writer_create(opt->output, &wo, &w, err));
    nf_status st = NF_OK;
    for (size_t i = 0; st == NF_OK && i < p->nobjects; i++) {
        plan_object *o = &p->objects[i];
        st = o->kind == NF_OBJECT_TENSOR ? nf_writer_add_tensor(w, o->id, &o->g, &o->writer_index, err)
                                         : nf_writer_add_resource(w, o->id, o->bytes, &o->writer_index, err);
    }
    if (st == NF_OK) st = nf_writer_set_member(w, "components", json_incref(p->components), err);
    p->binding_records = (nf_plan_records){p, 0, 0};
    p->provenance_records = (nf_plan_records){p, 0, 0};
    if (st == NF_OK)
        st = nf_writer_set_member_records(w, "bindings", NULL, NULL, nf_plan_binding_record, &p->binding_records, err);
    if (st == NF_OK) st = nf_writer_set_member(w, "metadata", json_deep_copy(p->metadata), err);
    if (st == NF_OK)
        st = nf_writer_set_member_records(w, "provenance", json_incref(p->provenance), "objects",
                                          nf_plan_provenance_record, &p->provenance_records, err);
    if (st != NF_OK) {
        nf_writer_free(w);
        return st;
    }
    *out = w;
    return NF_OK;
}

nf_status nf_convert_check_outputs(const nf_plan *p, const nf_convert_options *opt, nf_error *err)
{
    char *report_path = nf_outputs_report_name(opt->output);
    if (!report_path) return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    input_set in = {0};
    nf_status st = collect_inputs(p, &in, err);
    if (st == NF_OK) st = prepare_outputs(&in, opt, report_path, err);
    free(in.v);
    free(report_path);
    struct stat sb;
    if (st == NF_OK && nf_io_lstat(opt->output, &sb) == 0)
        st = nf_error_errno(err, EEXIST, "%s: the tasks of a plan write an output that does not exist yet; remove it "
                            "first", MP(opt->output));
    return st;
}

nf_status nf_convert_writer(nf_plan *p, const nf_convert_options *opt, const char *fingerprint, nf_writer **out,
                            nf_error *err)
{
    nf_writer *w = NULL;
    NF_TRY(plan_writer(p, opt, &w, err));
    nf_status st = nf_writer_layout_known(w, fingerprint, err);
    if (st != NF_OK) {
        nf_writer_free(w);
        return st;
    }
    *out = w;
    return NF_OK;
}

/* Every object w wants (all of them, or a task's: nf_writer_object_selected) encoded into the
 * begun writer: resources, tails, then the row chunks on the thread pool, measured when
 * opt->report.  r is the caller's (its statistics stay there); s lives as long as r runs. */
static nf_status encode_into(nf_plan *p, nf_writer *w, const nf_convert_options *opt, runner *r, sink *s,
                             nf_error *err)
{
    NF_TRY(write_resources(p, w, err));
    NF_TRY(write_tails(p, w, err));
    r->plan = p;
    r->chunk_values = opt->chunk_values ? opt->chunk_values : DEFAULT_CHUNK_VALUES;
    NF_TRY(plan_jobs(r, err));
    for (size_t i = 0; i < p->nobjects; i++) r->objs[i].skip = !nf_writer_object_selected(w, p->objects[i].writer_index);
    r->sink = s;
    s->writer = w;
    r->stats = opt->report;
    r->kern = nf_stats_kernels_active();
    r->cancel = opt->cancel;
    pthread_mutex_init(&r->lock, NULL);
    nf_status st = run_jobs(r, nf_pool_threads(opt->threads), opt, err);
    pthread_mutex_destroy(&r->lock);
    if (st == NF_OK && opt->cancel && *opt->cancel) st = nf_error_set(err, NF_ERR_IO, "interrupted");
    return st;
}

/* The objects' statistics in one array (the report's input). */
static nf_errstats_summary *summaries(const nf_plan *p, const runner *r)
{
    nf_errstats_summary *v = calloc(p->nobjects ? p->nobjects : 1, sizeof *v);
    for (size_t i = 0; v && i < p->nobjects; i++) v[i] = r->objs[i].sum;
    return v;
}

/* The report's temp file beside path: its head from the plan and the options, its tail the
 * artifact id and how the run was made (threads, chunk_values). */
static nf_status report_temp(nf_plan *p, const nf_convert_options *opt, const char *id_hex,
                             const nf_errstats_summary *sums, const char *path, char **tmp, nf_error *err)
{
    uint64_t chunk_values = opt->chunk_values ? opt->chunk_values : DEFAULT_CHUNK_VALUES;
    json_t *head = report_head(p, opt);
    json_t *tail = json_pack("{s:s,s:I,s:I}", "artifact_id", id_hex, "threads", (json_int_t)nf_pool_threads(opt->threads),
                             "chunk_values", (json_int_t)chunk_values);
    nf_status st = head && tail ? write_report(p, sums, path, head, tail, tmp, err)
                                : nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    json_decref(head);
    json_decref(tail);
    return st;
}

nf_status nf_plan_execute(nf_plan *p, const nf_convert_options *opt, nf_error *err)
{
    char *report_path = nf_outputs_report_name(opt->output);
    if (!report_path) return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    input_set in = {0};
    nf_status st = collect_inputs(p, &in, err);
    if (st == NF_OK) st = prepare_outputs(&in, opt, report_path, err);
    /* --force --no-report removes the report of the artifact it replaces, unless that is an input
     * or not a regular file (never replaced, docs/security.md 1.3). */
    struct stat rsb;
    bool report_regular = nf_io_lstat(report_path, &rsb) != 0 || S_ISREG(rsb.st_mode);
    bool replace_report = opt->force && report_regular && (opt->report || !input_of(&in, report_path));
    free(in.v);
    nf_writer *w = NULL;
    if (st == NF_OK) st = plan_writer(p, opt, &w, err);
    if (st != NF_OK) {
        free(report_path);
        return st;
    }
    runner r = {0};
    sink s = {0};
    char *report_tmp = NULL;
    st = nf_writer_begin(w, err);
    if (st == NF_OK) st = encode_into(p, w, opt, &r, &s, err);
    if (st == NF_OK && opt->report) {
        char id[33];
        nf_writer_id_hex(w, id);
        nf_errstats_summary *sums = summaries(p, &r);
        st = sums ? report_temp(p, opt, id, sums, report_path, &report_tmp, err)
                  : nf_error_set(err, NF_ERR_NOMEM, "out of memory");
        free(sums);
    }
    /* Publication of the set (artifact and report) as one: the artifact is published with the
     * files it replaces kept aside, then the report (the one it replaces kept aside too), and
     * only then are the kept files dropped (the writer's commit first: its old entry is the
     * commit point).  Any failure before puts the whole old set back. */
    if (st == NF_OK) st = nf_writer_publish(w, err);
    char *report_backup = NULL;
    if (st == NF_OK) {
        st = nf_outputs_publish_report(report_path, report_tmp, replace_report, &report_backup, err);
        if (st == NF_OK) {
            free(report_tmp);
            report_tmp = NULL; /* renamed into place */
            nf_writer_commit(w, NULL);
            if (report_backup) nf_io_unlink(report_backup); /* best effort, like the writer's */
        } else {
            if (report_backup) nf_outputs_restore(report_path, report_backup);
            nf_writer_abort(w);
        }
    }
    free(report_backup);
    if (report_tmp && st != NF_OK) nf_io_unlink(report_tmp);
    free(report_tmp);
    runner_free(&r);
    nf_writer_free(w);
    free(report_path);
    return st;
}

nf_status nf_convert_task(nf_plan *p, nf_writer *w, const nf_convert_options *opt, const char *entry_staged,
                          nf_errstats_summary *sums, char (*checksums)[33], nf_error *err)
{
    input_set in = {0};
    nf_status st = collect_inputs(p, &in, err);
    if (st == NF_OK) st = refuse_inputs(&in, opt->output, false, err);
    free(in.v);
    NF_TRY(st);
    runner r = {0};
    sink s = {0};
    st = nf_writer_begin(w, err);
    if (st == NF_OK) st = encode_into(p, w, opt, &r, &s, err);
    if (st == NF_OK) st = nf_writer_stage(w, entry_staged, err);
    for (size_t i = 0; st == NF_OK && i < p->nobjects; i++) {
        size_t k = p->objects[i].writer_index;
        sums[i] = r.objs[i].sum;
        checksums[i][0] = '\0';
        if (nf_writer_object_selected(w, k) && !nf_writer_object_checksum(w, k, checksums[i]))
            st = nf_error_set(err, NF_ERR_IO, "object '%s': no checksum was formed", p->objects[i].id);
    }
    runner_free(&r);
    return st;
}

nf_status nf_convert_assemble(nf_plan *p, nf_writer *w, const nf_convert_options *opt, const char *entry_staged,
                              const nf_errstats_summary *sums, const char *const *checksums, bool published,
                              nf_error *err)
{
    char *report_path = nf_outputs_report_name(opt->output);
    if (!report_path) return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    /* the report's place as a run checks it (never an input, never a non-regular file, an
     * existing one only with --force) -- except the report an interrupted assembly of this very
     * artifact may have put there */
    nf_convert_options ro = *opt;
    if (published) ro.force = true;
    input_set in = {0};
    nf_status st = collect_inputs(p, &in, err);
    if (st == NF_OK) st = prepare_outputs(&in, &ro, report_path, err);
    free(in.v);
    char *report_tmp = NULL;
    if (st == NF_OK && opt->report) {
        char id[33];
        nf_writer_id_hex(w, id);
        st = report_temp(p, opt, id, sums, report_path, &report_tmp, err);
    }
    const char **by_writer = calloc(p->nobjects ? p->nobjects : 1, sizeof *by_writer);
    if (st == NF_OK && !by_writer) st = nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    for (size_t i = 0; st == NF_OK && i < p->nobjects; i++) by_writer[p->objects[i].writer_index] = checksums[i];
    if (st == NF_OK && !published) st = nf_writer_assemble(w, by_writer, entry_staged, err);
    /* published (by a run that failed after its commit point): the staged name is a second link
     * of the entry, no longer needed */
    if (st == NF_OK && published) (void)nf_io_unlink(entry_staged);
    free(by_writer);
    /* the entry is the commit point; the report follows it (a failure here leaves the complete
     * artifact without its report, said so) */
    if (st == NF_OK && report_tmp) {
        int e = nf_io_rename(report_tmp, report_path);
        if (e) st = nf_error_errno(err, e, "%s: the artifact is complete, but its report could not be put in place "
                                   "from %s", MP(report_path), MP(report_tmp));
        else {
            free(report_tmp);
            report_tmp = NULL;
        }
    }
    if (report_tmp) {
        if (st != NF_OK) nf_io_unlink(report_tmp);
        free(report_tmp);
    }
    free(report_path);
    return st;
}

nf_status nf_plan_compare(nf_plan *p, nf_artifact *a, unsigned threads, nf_compare_fn report, void *ctx,
                          size_t *differing, nf_error *err)
{
    return nf_convert_compare_some(p, a, threads, NULL, report, ctx, differing, err);
}

nf_status nf_convert_compare_some(nf_plan *p, nf_artifact *a, unsigned threads, const bool *only, nf_compare_fn report,
                                  void *ctx, size_t *differing, nf_error *err)
{
    *differing = 0;
    sink s = {0};
    s.artifact = a;
    s.targets = calloc(p->nobjects ? p->nobjects : 1, sizeof *s.targets);
    s.differs = calloc(p->nobjects ? p->nobjects : 1, sizeof *s.differs);
    s.first_diff = calloc(p->nobjects ? p->nobjects : 1, sizeof *s.first_diff);
    if (!s.targets || !s.differs || !s.first_diff) {
        free(s.targets);
        free(s.differs);
        free(s.first_diff);
        return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    }
    pthread_mutex_init(&s.lock, NULL);
    nf_status st = NF_OK;
    /* Objects the plan re-derives must exist with the same geometry. */
    bool *usable = calloc(p->nobjects ? p->nobjects : 1, sizeof *usable);
    if (!usable) st = nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    for (size_t i = 0; st == NF_OK && i < p->nobjects; i++) {
        if (only && !only[i]) continue; /* not asked for: neither re-derived nor reported */
        const plan_object *o = &p->objects[i];
        const nf_object *t = nf_artifact_find(a, o->id);
        char msg[512];
        if (!t) {
            snprintf(msg, sizeof msg, "the artifact has no object '%s'", o->id);
        } else if (o->kind == NF_OBJECT_RESOURCE) {
            if (t->kind == NF_OBJECT_RESOURCE && t->bytes == o->bytes) continue;
            snprintf(msg, sizeof msg, "resource differs in kind or size from %s", o->path);
        } else if (t->kind != NF_OBJECT_TENSOR || t->format != o->g.format || t->layout != o->g.layout ||
                   t->bytes != o->g.bytes || t->rank != o->g.rank ||
                   memcmp(t->shape, o->g.shape, o->g.rank * sizeof *t->shape) != 0) {
            snprintf(msg, sizeof msg, "the recipe gives %s %s of %llu bytes; the artifact holds something else",
                     o->g.format->name, o->g.layout->name, (unsigned long long)o->g.bytes);
        } else {
            s.targets[i] = t;
            usable[i] = true;
            continue;
        }
        report(ctx, o->id, msg);
        (*differing)++;
    }
    runner r = {0};
    r.plan = p;
    r.chunk_values = DEFAULT_CHUNK_VALUES;
    if (st == NF_OK) st = plan_jobs(&r, err);
    if (st == NF_OK) {
        /* the jobs of objects that cannot be compared are skipped */
        for (size_t i = 0; i < p->nobjects; i++) r.objs[i].skip = !usable[i];
        r.sink = &s;
        r.kern = nf_stats_kernels_active();
        pthread_mutex_init(&r.lock, NULL);
        st = run_jobs(&r, nf_pool_threads(threads), NULL, err);
        pthread_mutex_destroy(&r.lock);
    }
    runner_free(&r);
    /* tails (gaps, divisors) compared on the calling thread */
    compare_ctx cmp = {&s, 0, malloc(1 << 16), 1 << 16};
    if (st == NF_OK && !cmp.buf) st = nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    for (size_t i = 0; st == NF_OK && i < p->nobjects; i++) {
        const plan_object *o = &p->objects[i];
        if (!usable[i] || o->kind != NF_OBJECT_TENSOR) continue;
        nf_words words;
        if ((st = nf_words_alloc(&words, &o->g, 0, err)) != NF_OK) break;
        if (o->divisors && words.divisors)
            memcpy(words.divisors, o->divisors, (size_t)o->g.divisors * sizeof *o->divisors);
        cmp.object = i;
        st = nf_layout_encode_tail(&o->g, &words, false, compare_write, &cmp, err);
        nf_words_free(&words);
    }
    free(cmp.buf);
    for (size_t i = 0; st == NF_OK && i < p->nobjects; i++) {
        if (!usable[i] || !atomic_load(&s.differs[i])) continue;
        char msg[256];
        snprintf(msg, sizeof msg, "re-derived bytes differ from the artifact's, first at object byte %llu",
                 (unsigned long long)s.first_diff[i]);
        report(ctx, p->objects[i].id, msg);
        (*differing)++;
    }
    pthread_mutex_destroy(&s.lock);
    free(usable);
    free(s.targets);
    free(s.differs);
    free(s.first_diff);
    return st;
}
