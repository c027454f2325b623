/* ninfer-diff's comparisons (docs/ninfer-diff.md): the stored bytes of two artifacts' objects
 * whose records agree, and the decoded values of every pair with something to compare, each side
 * read with the library's readers (nf_layout_decode_rows_f32, nf_source_read_f32,
 * nf_qweight_read_f32) in bounded chunks on the pool, summed with ninfer-convert's statistics
 * (stats/stats.h) and weighted error (budget/werror.h) so that no cut of the work changes a bit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "budget/werror.h"
#include "common/checked.h"
#include "common/fail.h"
#include "common/pool.h"
#include "diff.h"

/* Keep the failure of chunk k of pair pi when it comes before the one kept (call under the
 * lock): the error reported does not depend on the thread count. */
static void record_failure(diff_run *r, size_t pi, uint64_t k, nf_status st, const nf_error *err, int side)
{
    if (r->fail_st != NF_OK && (r->fail_pair < pi || (r->fail_pair == pi && r->fail_chunk <= k))) return;
    r->fail_st = st;
    r->fail_pair = pi;
    r->fail_chunk = k;
    r->fail_err = *err;
    if (side >= 0) {
        const diff_end *e = &r->pairs[pi].e[side];
        nf_error_prefix(&r->fail_err, "%s: %s '%s'", nf_cli_name(r->side[side].path).s, e->o ? "object" : "tensor",
                        nf_cli_name(e->name ? e->name : r->pairs[pi].id).s);
    }
}

nf_status diff_end_geometry(const diff_run *r, int side, const diff_end *e, nf_geometry *g, nf_error *err)
{
    nf_status st = nf_artifact_check_object(r->side[side].art, e->o, g, err);
    if (st != NF_OK)
        return nf_error_forward(err, st, "%s: object '%s'", nf_cli_name(r->side[side].path).s, nf_cli_name(e->name).s);
    return NF_OK;
}

/* Chunking of a pair's values: rows in chunks of about DIFF_CHUNK_VALUES values, or spans of a
 * row when a row is longer and every side can be read by spans (nvfp4, whose scales are tiled by
 * 128 rows, by spans of a 128-row band, one row decoded at a time, as ninfer-dequant reads them;
 * a dialect's weight and a checkpoint's tensor by nf_qweight_read_f32_span and
 * nf_source_read_f32_span, docs/dialects.md "Values"). */
nf_status diff_plan_chunks(diff_run *r, diff_pair *p, nf_error *err)
{
    uint64_t rows = p->rows, cols = p->cols, band = 1, ca = 0, cb = 0;
    bool spans_ok = true;
    for (int k = 0; k < 2; k++) {
        const diff_end *e = &p->e[k];
        uint64_t c;
        if (e->o) {
            nf_geometry g;
            NF_TRY(diff_end_geometry(r, k, e, &g, err));
            uint64_t b = nf_layout_colspan_rows(&g);
            if (!b) spans_ok = false;
            else if (b > band) band = b;
            c = nf_geometry_chunk_rows(&g, DIFF_CHUNK_VALUES);
        } else {
            c = cols >= DIFF_CHUNK_VALUES ? 1 : DIFF_CHUNK_VALUES / (cols ? cols : 1);
        }
        if (!ca || c > ca) ca = c;
        if (!cb || c < cb) cb = c;
    }
    if (spans_ok && cols > DIFF_CHUNK_VALUES / band) {
        p->span = cols < DIFF_CHUNK_VALUES ? cols : DIFF_CHUNK_VALUES;
        p->spans = cols / p->span + (cols % p->span != 0);
        p->chunk = 1;
        if (!nf_mul_u64(rows, p->spans, &p->nchunks))
            return nf_error_set(err, NF_ERR_INVALID, "object '%s': too many chunks", nf_cli_name(p->id).s);
    } else {
        /* both sides read the same rows: the larger chunk, rounded up to a multiple of the
         * smaller (only nvfp4 constrains its chunks, to multiples of 128 rows) */
        p->chunk = ca;
        if (cb && p->chunk % cb) p->chunk += cb - p->chunk % cb;
        if (p->chunk > rows) p->chunk = rows;
        p->nchunks = p->chunk ? rows / p->chunk + (rows % p->chunk != 0) : 0;
    }
    uint64_t n;
    if (!nf_mul_u64(p->span ? 1 : p->chunk, p->span ? p->span : cols, &n) || n > SIZE_MAX / sizeof(float))
        return nf_error_set(err, NF_ERR_INVALID, "object '%s': a chunk of %llu rows of %llu values is too large",
                            nf_cli_name(p->id).s, (unsigned long long)p->chunk, (unsigned long long)cols);
    if (n > r->buf_values) r->buf_values = (size_t)n;
    return NF_OK;
}

/* ---------------------------------------------------------------- the workers */
typedef struct worker_bufs {
    uint8_t *ba, *bb; /* DIFF_CHUNK_BYTES each */
    float *va, *vb;   /* buf_values each */
} worker_bufs;

/* Phase 0: the stored bytes of a pair of objects, chunk by chunk (never a whole object in
 * memory). */
static void compare_bytes(diff_run *r, size_t pi, worker_bufs *w)
{
    diff_pair *p = &r->pairs[pi];
    const nf_object *a = p->e[0].o, *b = p->e[1].o;
    uint64_t total = a->bytes, off = 0;
    nf_error err;
    while (off < total) {
        size_t n = total - off < DIFF_CHUNK_BYTES ? (size_t)(total - off) : DIFF_CHUNK_BYTES;
        int side = 0;
        nf_status st = nf_artifact_read(r->side[0].art, a->offset + off, w->ba, n, &err);
        if (st == NF_OK) {
            side = 1;
            st = nf_artifact_read(r->side[1].art, b->offset + off, w->bb, n, &err);
        }
        if (st != NF_OK) {
            pthread_mutex_lock(&r->lock);
            record_failure(r, pi, 0, st, &err, side);
            pthread_mutex_unlock(&r->lock);
            return;
        }
        if (memcmp(w->ba, w->bb, n) != 0) {
            p->changes |= DIFF_WORDS;
            /* the same format, layout and shape with other words: the values are compared too
             * (a tensor's bytes are positive, so it has elements) */
            if (a->kind == NF_OBJECT_TENSOR) p->want_stats = true;
            return;
        }
        off += n;
    }
}

/* Stored rows [s0, s1) of an end, or columns [c0, c0 + n) of stored row s0 when the pair is read
 * by spans, into out. */
static nf_status read_stored(const diff_run *r, const diff_pair *p, int side, uint64_t s0, uint64_t s1, uint64_t c0,
                             uint64_t n, float *out, nf_error *err)
{
    const diff_end *e = &p->e[side];
    const nf_source *src = r->side[side].src;
    if (e->q)
        return p->span ? nf_qweight_read_f32_span(src, e->q, s0, c0, n, out, (size_t)n, err)
                       : nf_qweight_read_f32(src, e->q, s0, s1, out, (size_t)n, err);
    if (e->t)
        return p->span ? nf_source_read_f32_span(src, e->t, s0, c0, n, out, (size_t)n, err)
                       : nf_source_read_f32(src, e->t, s0, s1, out, (size_t)n, err);
    nf_geometry g;
    NF_TRY(diff_end_geometry(r, side, e, &g, err));
    nf_byte_reader reader;
    nf_artifact_object_reader(r->side[side].art, e->o, &reader);
    if (!p->span) return nf_layout_decode_rows_f32(&g, &reader, s0, s1, out, err);
    /* a span is a [1, n] tensor of its own, read through the object's reader (nvfp4: a [128, n]
     * piece of the row's band, of which row s0 is decoded) */
    const uint64_t band = nf_layout_colspan_rows(&g);
    nf_colspan sp;
    nf_colspan_source span_src = {&sp, &reader};
    nf_byte_reader span_reader;
    NF_TRY(nf_colspan_init(&sp, &g, s0 - s0 % band, c0, n, err));
    nf_colspan_reader(&span_src, &span_reader);
    return nf_layout_decode_rows_f32(&sp.g, &span_reader, s0 % band, s0 % band + 1, out, err);
}

/* The pair's rows [r0, r1) (or a span of row r0) of one end: its rows from row0 on, or, in
 * llama.cpp's q/k order, each row from where the permutation put it. */
static nf_status read_end(const diff_run *r, const diff_pair *p, int side, uint64_t r0, uint64_t r1, uint64_t c0,
                          uint64_t n, float *out, nf_error *err)
{
    const diff_end *e = &p->e[side];
    if (!e->qk_heads) return read_stored(r, p, side, e->row0 + r0, e->row0 + r1, c0, n, out, err);
    uint64_t len = p->span ? n : p->cols;
    for (uint64_t h = r0; h < r1; h++) {
        uint64_t s;
        if (!nf_qk_gguf_row(p->rows, e->qk_heads, h, &s))
            return nf_error_set(err, NF_ERR_INVALID, "%llu rows are not %llu heads of rotary halves",
                                (unsigned long long)p->rows, (unsigned long long)e->qk_heads);
        NF_TRY(read_stored(r, p, side, e->row0 + s, e->row0 + s + 1, c0, len, out + (h - r0) * len, err));
    }
    return NF_OK;
}

/* Phase 1: the values of chunk k of a pair, the reference against the other side, into a local
 * accumulator merged into the pair's (an exact merge: the figures do not depend on which thread
 * ran which chunk). */
static void compare_values(diff_run *r, size_t pi, uint64_t k, worker_bufs *w)
{
    diff_pair *p = &r->pairs[pi];
    uint64_t cols = p->cols, r0, r1, c0 = 0, n;
    if (p->span) {
        r0 = k / p->spans;
        r1 = r0 + 1;
        c0 = k % p->spans * p->span;
        n = cols - c0 < p->span ? cols - c0 : p->span;
    } else {
        r0 = k * p->chunk;
        r1 = p->rows - r0 < p->chunk ? p->rows : r0 + p->chunk;
        n = (r1 - r0) * cols; /* bounded by buf_values (diff_plan_chunks) */
    }
    nf_error err;
    int side = 0;
    nf_status st = read_end(r, p, 0, r0, r1, c0, n, w->va, &err);
    if (st == NF_OK) {
        side = 1;
        st = read_end(r, p, 1, r0, r1, c0, n, w->vb, &err);
    }
    nf_errstats local;
    nf_errstats_init(&local);
    uint64_t differ = 0;
    if (st == NF_OK) {
        /* one call per row (or span): the statistics blocks start at a row's first column */
        uint64_t len = p->span ? n : cols, nrows = p->span ? 1 : r1 - r0;
        /* the reference x: A against an artifact; the checkpoint otherwise, so that the figures
         * are those ninfer-convert reports for the encoding (source x, values y) */
        const float *x = r->ref ? w->vb : w->va, *y = r->ref ? w->va : w->vb;
        for (uint64_t i = 0; i < nrows; i++) {
            r->kern->row_f32(x + i * len, y + i * len, (size_t)len, &local);
            if (!p->weights) continue;
            const float *wv = p->weights;
            if (p->wmats > 1) wv += (r0 + i) / (p->rows / p->wmats) * cols;
            nf_budget_werror_rows(x + i * len, y + i * len, 1, len, c0, wv, &local.wse);
        }
        /* pairs the statistics skip (a NaN, an infinity): a difference only when their words
         * differ, so two copies of the same NaN are the same */
        if (local.skipped)
            for (uint64_t i = 0; i < n; i++) {
                uint32_t bx, by;
                memcpy(&bx, &x[i], 4);
                memcpy(&by, &y[i], 4);
                if (bx != by && !isfinite(x[i] - y[i])) differ++;
            }
    }
    pthread_mutex_lock(&r->lock);
    if (st == NF_OK) {
        nf_errstats_merge(p->acc, &local);
        p->nonfinite_differ += differ;
    } else {
        record_failure(r, pi, k, st, &err, side);
    }
    pthread_mutex_unlock(&r->lock);
}

static void *worker(void *arg)
{
    diff_run *r = arg;
    worker_bufs w = {0};
    if (r->phase == 0) {
        w.ba = malloc(DIFF_CHUNK_BYTES);
        w.bb = malloc(DIFF_CHUNK_BYTES);
    } else {
        w.va = malloc(r->buf_values * sizeof(float));
        w.vb = malloc(r->buf_values * sizeof(float));
    }
    bool ok = r->phase == 0 ? w.ba && w.bb : w.va && w.vb;
    for (;;) {
        pthread_mutex_lock(&r->lock);
        uint64_t j = r->next < r->njobs ? r->next++ : UINT64_MAX;
        pthread_mutex_unlock(&r->lock);
        if (j == UINT64_MAX) break;
        size_t pi;
        uint64_t k = 0;
        if (r->phase == 0) {
            pi = r->job_pair[j];
        } else { /* the pair whose jobs hold j: binary search of the prefix counts */
            size_t lo = 0, hi = r->njob_pairs - 1;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (r->job_end[mid] > j) hi = mid;
                else lo = mid + 1;
            }
            pi = r->job_pair[lo];
            k = j - (lo ? r->job_end[lo - 1] : 0);
        }
        if (!ok) {
            nf_error e;
            nf_common_nomem(&e);
            pthread_mutex_lock(&r->lock);
            record_failure(r, pi, k, NF_ERR_NOMEM, &e, -1);
            pthread_mutex_unlock(&r->lock);
            continue;
        }
        if (r->phase == 0) compare_bytes(r, pi, &w);
        else compare_values(r, pi, k, &w);
    }
    free(w.ba);
    free(w.bb);
    free(w.va);
    free(w.vb);
    return NULL;
}

/* Run the jobs of the current phase on r->threads threads of the pool (common/pool.h); the
 * calling thread alone for one, or when no thread could start. */
static void run_pool(diff_run *r)
{
    r->next = 0;
    if (r->njobs == 0) return;
    size_t n = r->threads < r->njobs ? r->threads : (size_t)r->njobs;
    nf_pool_workers pool = {0};
    if (n <= 1 || nf_pool_start(&pool, n, worker, r) == 0) worker(r);
    nf_pool_join(&pool);
}

nf_status diff_run_phases(diff_run *r, nf_error *err)
{
    /* phase 0: the bytes of the pairs whose records agree */
    r->job_pair = calloc(r->npairs ? r->npairs : 1, sizeof *r->job_pair);
    r->job_end = calloc(r->npairs ? r->npairs : 1, sizeof *r->job_end);
    if (!r->job_pair || !r->job_end) return nf_common_nomem(err);
    r->njobs = 0;
    for (size_t i = 0; i < r->npairs; i++)
        if (r->pairs[i].want_bytes) r->job_pair[r->njobs++] = i;
    r->phase = 0;
    run_pool(r);
    if (r->fail_st != NF_OK) {
        *err = r->fail_err;
        return r->fail_st;
    }
    /* phase 1: the values of the pairs to be compared, one job per chunk */
    r->njob_pairs = 0;
    uint64_t total = 0;
    for (size_t i = 0; i < r->npairs; i++) {
        diff_pair *p = &r->pairs[i];
        if (!p->want_stats) continue;
        if (!p->nchunks && !p->chunk) NF_TRY(diff_plan_chunks(r, p, err)); /* found by phase 0 */
        if (!p->nchunks) continue;
        if (!(p->acc = malloc(sizeof *p->acc))) return nf_common_nomem(err);
        nf_errstats_init(p->acc);
        if (!nf_add_u64(total, p->nchunks, &total)) return nf_error_set(err, NF_ERR_INVALID, "too many chunks");
        r->job_pair[r->njob_pairs] = i;
        r->job_end[r->njob_pairs++] = total;
    }
    r->njobs = total;
    r->phase = 1;
    run_pool(r);
    if (r->fail_st != NF_OK) {
        *err = r->fail_err;
        return r->fail_st;
    }
    for (size_t i = 0; i < r->npairs; i++) {
        diff_pair *p = &r->pairs[i];
        if (!p->acc) continue;
        p->sum = nf_errstats_summarize(p->acc);
        p->have_sum = true;
        free(p->acc);
        p->acc = NULL;
        /* against a checkpoint the values are what is compared: any difference, or a pair
         * that could not be compared (a NaN), is a change */
        if (!r->artifacts && (p->sum.max_abs != 0 || p->nonfinite_differ != 0)) p->changes |= DIFF_VALUES;
    }
    return NF_OK;
}
