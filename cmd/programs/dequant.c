/* ninfer-dequant: the represented values of one tensor (raw / .npy / text), its stored words
 * (--to native), or every tensor of an artifact as a safetensors checkpoint (--all), streamed
 * in bounded row chunks (docs/ninfer-dequant.md). */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* the reader, the words and the outputs: nothing of the conversion (docs/library.md, "Modules
 * and headers") */
#include <ninfer/container.h>
#include <ninfer/error.h>
#include <ninfer/format.h>
#include <ninfer/layout.h>
#include <ninfer/outputs.h>
#include <ninfer/source.h> /* the safetensors limits its output keeps */

#include "cli.h"
#include "common/fail.h"
#include "common/pool.h"
#include "outputs/out_file.h"
#include "outputs/out_signals.h"

typedef enum value_type { TO_F32, TO_F16, TO_BF16, TO_NATIVE } value_type;
typedef enum out_format { FMT_RAW, FMT_NPY, FMT_TEXT } out_format;

typedef struct dq_opts {
    const char *output;
    value_type to;
    out_format format;
    bool all, remove_stale;
    nf_cli_span rows;
    unsigned zstd;    /* 0: no compression */
    unsigned threads; /* 0: every core */
} dq_opts;

static const nf_opt_choice value_types[] = {
    {"f32", TO_F32}, {"f16", TO_F16}, {"bf16", TO_BF16}, {"native", TO_NATIVE}, {NULL, 0}};
static const nf_opt_choice out_formats[] = {{"raw", FMT_RAW}, {"npy", FMT_NPY}, {"text", FMT_TEXT}, {NULL, 0}};

static const nf_option options[] = {
    NF_OPT_STRING_ROW(dq_opts, output, "output", 'o', "OUT", "write to OUT (replaced atomically); default stdout"),
    NF_OPT_CHOICE_ROW(dq_opts, to, value_types, "to", 0, "f32|f16|bf16|native",
                      "value type (default f32); native: the stored words of a direct tensor"),
    NF_OPT_CHOICE_ROW(dq_opts, format, out_formats, "format", 0, "raw|npy|text",
                      "raw little-endian words, a NumPy .npy file, or one text line per row (default raw)"),
    NF_OPT_SPAN_ROW(dq_opts, rows, "rows", 0, "A:B", "only rows A (inclusive) to B (exclusive)"),
    NF_OPT_UINT_OPTARG_ROW(dq_opts, zstd, 1, 22, 3, "a level", "zstd", 0, "LEVEL",
                           "compress the output with zstd (default level 3)"),
    NF_OPT_FLAG_ROW(dq_opts, all, "all", 0, "every tensor object into one safetensors file (needs -o)"),
    NF_OPT_UINT_ROW(dq_opts, threads, 1, NF_CLI_MAX_THREADS, NULL, "threads", 'j', "N",
                    "decode row chunks on N threads (default: every core); the output is the same for any N"),
    NF_OPT_FLAG_ROW(dq_opts, remove_stale, "remove-stale", 0,
                    "remove the temp files killed runs left for OUT (alone with -o: only that)"),
    NF_OPT_END,
};

static const nf_program program = {
    "ninfer-dequant",
    "ninfer-dequant FILE ID [-o OUT] [--to f32|f16|bf16|native] [--format raw|npy|text]\n"
    "                      [--rows A:B] [--zstd[=LEVEL]] [--threads N]\n"
    "       ninfer-dequant FILE --all -o OUT.safetensors [--to f32|bf16|f16] [--threads N]\n"
    "       ninfer-dequant -o OUT --remove-stale",
    "Write the represented values of a tensor object in C order of its logical shape: exactly the\n"
    "spec's binary32 reconstruction (ggml's dequantization for gguf_* formats), optionally rounded\n"
    "to f16 or bf16 (nearest, ties to even).  --to native writes the stored words of a direct\n"
    "tensor (bf16/fp32/int32) and refuses quantized formats.  --all writes every tensor object as\n"
    "a safetensors checkpoint named by object ID.  Tensors are streamed in bounded row chunks.\n"
    "Ctrl-C (SIGINT, SIGTERM, SIGHUP) stops a run without leaving a temp file (exit 3); temp files\n"
    "that a killed run (SIGKILL) could not remove are reported, and removed with --remove-stale.",
    options,
    "  ninfer-dequant model.ninfer lm_head.weight --format npy -o lm_head.npy\n"
    "  ninfer-dequant model.ninfer lm_head.weight --format text --rows 0:2\n"
    "  ninfer-dequant model.ninfer lm_head.weight --to bf16 --zstd -o lm_head.bf16.zst\n"
    "  ninfer-dequant model.ninfer --all -o model.dequant.safetensors\n",
    NULL, /* the usual exit statuses */
};

/* ---------------------------------------------------------------- element encoding */
static unsigned element_bytes(const nf_geometry *g, value_type to)
{
    if (to == TO_NATIVE) return g->format->word_bytes;
    return to == TO_F32 ? 4u : 2u;
}

static const char *npy_descr(const nf_geometry *g, value_type to)
{
    switch (to) {
    case TO_F32: return "<f4";
    case TO_F16: return "<f2";
    case TO_BF16: return "<u2"; /* NumPy has no bfloat16: the words, as uint16 */
    case TO_NATIVE: return g->format->id == NF_FMT_BF16 ? "<u2" : g->format->id == NF_FMT_FP32 ? "<f4" : "<i4";
    }
    return "<f4";
}

static void put_le(uint8_t *p, uint32_t v, unsigned bytes)
{
    for (unsigned i = 0; i < bytes; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* The word written for one element. */
static uint32_t element_word(const nf_geometry *g, value_type to, const nf_words *w, const float *values, size_t i)
{
    switch (to) {
    case TO_F32: return nf_f32_bits(values[i]);
    case TO_F16: return nf_f32_to_f16(values[i]);
    case TO_BF16: return nf_f32_to_bf16(values[i]);
    case TO_NATIVE: return g->format->word_bytes == 2 ? w->w16[i] : w->w32[i];
    }
    return 0;
}

static nf_status write_text_element(nf_out *out, const nf_geometry *g, value_type to, uint32_t word, bool first,
                                    nf_error *err)
{
    const char *sep = first ? "" : " ";
    switch (to) {
    case TO_F32: return nf_out_printf(out, err, "%s%.9g", sep, (double)nf_f32_from_bits(word));
    case TO_F16: return nf_out_printf(out, err, "%s%.5g", sep, (double)nf_f16_to_f32((uint16_t)word));
    case TO_BF16: return nf_out_printf(out, err, "%s%.4g", sep, (double)nf_bf16_to_f32((uint16_t)word));
    case TO_NATIVE:
        if (g->format->id == NF_FMT_INT32) return nf_out_printf(out, err, "%s%" PRId32, sep, (int32_t)word);
        if (g->format->id == NF_FMT_BF16) return nf_out_printf(out, err, "%s0x%04x", sep, word);
        return nf_out_printf(out, err, "%s0x%08x", sep, word);
    }
    return NF_OK;
}

/* The artifact path (when given) and "object 'ID'" before a library message about the object:
 * the library leaves both to the caller that chose the object (docs/library.md, "Who names
 * what"); names from the artifact are shown escaped (ninfer/escape.h), as the library does. */
static void prefix_object(nf_error *err, const char *path, const char *id)
{
    if (path) nf_error_prefix(err, "%s: object '%s'", nf_cli_name(path).s, nf_cli_name(id).s);
    else nf_error_prefix(err, "object '%s'", nf_cli_name(id).s);
}

/* ---------------------------------------------------------------- streaming one tensor */
typedef struct rows_job {
    nf_artifact *a;
    const nf_object *o;
    const nf_geometry *g;
    uint64_t r0, r1;
    value_type to;
    out_format format;
} rows_job;

/* One chunk of rows in flight: its words, values and output bytes. */
typedef struct dq_slot {
    nf_words w;
    float *values;
    uint8_t *bytes;
    uint64_t r0, r1;
    uint64_t c0, c1; /* a span of row r0 (rows longer than a chunk), else 0, 0: whole rows */
    nf_status st;
    nf_error err;
} dq_slot;

/* Values in the slot. */
static size_t slot_count(const nf_geometry *g, const dq_slot *s)
{
    return (size_t)(s->c1 ? s->c1 - s->c0 : (s->r1 - s->r0) * g->cols);
}

/* Decode rows [s->r0, s->r1) into s->bytes (raw/npy element words, little-endian).  Values come
 * straight from the encoded bytes (nf_layout_decode_rows_f32); f32 raw/npy output is decoded in
 * place into the output bytes on a little-endian host.  Only --to native decodes words. */
static void decode_slot(const rows_job *job, dq_slot *s)
{
    const nf_geometry *g = job->g;
    nf_byte_reader reader;
    nf_artifact_object_reader(job->a, job->o, &reader);
    size_t count = slot_count(g, s);
    /* a span is a [1, c1 - c0] tensor of its own, read through the object's reader (nvfp4: a
     * [128, c1 - c0] piece of the row's 128-row band, of which the row is decoded) */
    nf_colspan sp;
    nf_colspan_source span_src = {&sp, &reader};
    nf_byte_reader span_reader;
    const nf_geometry *dg = g;
    const nf_byte_reader *rd = &reader;
    uint64_t r0 = s->r0, r1 = s->r1;
    if (s->c1) {
        const uint64_t band = nf_layout_colspan_rows(g);
        if ((s->st = nf_colspan_init(&sp, g, s->r0 - s->r0 % band, s->c0, s->c1 - s->c0, &s->err)) != NF_OK) return;
        nf_colspan_reader(&span_src, &span_reader);
        dg = &sp.g;
        rd = &span_reader;
        r0 = s->r0 % band;
        r1 = r0 + 1;
    }
    if (job->to == TO_NATIVE) {
        nf_words view = s->w;
        view.rows = r1 - r0;
        view.cols = dg->cols;
        s->st = nf_layout_decode_rows(dg, rd, r0, r1, &view, &s->err);
    } else {
        float *values = s->values ? s->values : (float *)(void *)s->bytes; /* f32 in place */
        s->st = nf_layout_decode_rows_f32(dg, rd, r0, r1, values, &s->err);
    }
    if (s->st != NF_OK || !s->bytes || (!s->values && job->to != TO_NATIVE)) return;
    unsigned eb = element_bytes(g, job->to);
    for (size_t i = 0; i < count; i++) put_le(s->bytes + i * eb, element_word(g, job->to, &s->w, s->values, i), eb);
}

/* f32 raw/npy output on a little-endian host: the binary32 values are the output bytes. */
static bool f32_in_place(const rows_job *job)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return job->to == TO_F32 && job->format != FMT_TEXT;
#else
    (void)job;
    return false;
#endif
}

static nf_status text_rows(const rows_job *job, dq_slot *s, nf_out *out, nf_error *err)
{
    const nf_geometry *g = job->g;
    size_t count = slot_count(g, s);
    nf_status st = NF_OK;
    for (size_t i = 0; st == NF_OK && i < count; i++) {
        uint64_t col = (s->c0 + i) % g->cols; /* the element's column in its row */
        st = write_text_element(out, g, job->to, element_word(g, job->to, &s->w, s->values, i), col == 0, err);
        if (st == NF_OK && col + 1 == g->cols) st = nf_out_write(out, "\n", 1, err);
    }
    return st;
}

/* The decoders of one tensor: worker threads decode chunks in row order into a ring of slots
 * (chunk c in slot c % nslots) while the calling thread writes the finished ones in order, so
 * decoding overlaps the writes and the output bytes do not depend on the thread count.  A
 * worker waits before it reuses a slot whose chunk is not written yet; the writer waits for the
 * chunk it needs next.  Text is formatted by the writer. */
typedef struct dq_pool {
    const rows_job *job;
    dq_slot *slots;
    size_t nslots;
    uint64_t chunk, nchunks;
    uint64_t span, spans; /* rows longer than a chunk: columns per span and spans per row */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    uint64_t next;     /* the next chunk a worker takes */
    uint64_t written;  /* chunks written */
    uint64_t *decoded; /* per slot: 1 + the chunk decoded in it, 0 while none */
    bool stop;
} dq_pool;

static void slot_range(const dq_pool *p, uint64_t c, dq_slot *s)
{
    if (p->span) { /* chunk c: span c % spans of row c / spans */
        uint64_t cols = p->job->g->cols;
        s->r0 = p->job->r0 + c / p->spans;
        s->r1 = s->r0 + 1;
        s->c0 = c % p->spans * p->span;
        s->c1 = s->c0 + p->span < cols ? s->c0 + p->span : cols;
        return;
    }
    s->r0 = p->job->r0 + c * p->chunk;
    s->r1 = s->r0 + p->chunk < p->job->r1 ? s->r0 + p->chunk : p->job->r1;
}

static void *decode_worker(void *arg)
{
    dq_pool *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        uint64_t c = p->next;
        if (p->stop || c >= p->nchunks) break;
        p->next++;
        /* the slot is free once the chunk nslots before this one is written */
        while (!p->stop && c >= p->nslots && p->written < c - p->nslots + 1) pthread_cond_wait(&p->cond, &p->lock);
        if (p->stop) break;
        dq_slot *s = &p->slots[c % p->nslots];
        pthread_mutex_unlock(&p->lock);
        slot_range(p, c, s);
        decode_slot(p->job, s);
        pthread_mutex_lock(&p->lock);
        p->decoded[c % p->nslots] = c + 1;
        pthread_cond_broadcast(&p->cond);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* Writes chunk c (decoded in its slot) and frees the slot. */
static nf_status write_slot(const rows_job *job, dq_slot *s, unsigned eb, nf_out *out, nf_error *err)
{
    if (s->st != NF_OK) {
        if (err) *err = s->err;
        return s->st;
    }
    if (job->format == FMT_TEXT) return text_rows(job, s, out, err);
    return nf_out_write(out, s->bytes, slot_count(job->g, s) * eb, err);
}

/* Rows [job->r0, job->r1) in chunks of about 2^18 values (1 MiB of f32, the converter's chunk),
 * decoded by `threads` workers (none for one thread: the calling thread decodes and writes in
 * turn). */
static nf_status stream_rows(const rows_job *job, unsigned threads, nf_out *out, nf_error *err)
{
    const nf_geometry *g = job->g;
    dq_pool p = {.job = job};
    const uint64_t chunk_values = (uint64_t)1 << 18;
    p.chunk = nf_geometry_chunk_rows(g, chunk_values);
    uint64_t nrows = job->r1 - job->r0;
    if (p.chunk > nrows) p.chunk = nrows;
    p.nchunks = p.chunk ? (nrows + p.chunk - 1) / p.chunk : 0;
    /* (nvfp4's whole-row chunks are bands of 128 rows: spans when a band exceeds a chunk) */
    if (nf_layout_colspan_rows(g) && g->cols > chunk_values / nf_layout_colspan_rows(g)) {
        /* a row longer than a chunk is decoded in spans (docs/ninfer-dequant.md): memory stays
         * bounded by the chunk whatever the row's length (nvfp4: spans of its 128-row bands,
         * one row of each decoded in turn, so the output stays in row order) */
        p.span = chunk_values < g->cols ? chunk_values : g->cols;
        p.spans = (g->cols + p.span - 1) / p.span;
        p.chunk = 1;
        p.nchunks = nrows * p.spans;
    }
    if (p.nchunks == 0) return NF_OK;
    size_t workers = threads > 1 ? threads : 0;
    if (workers > p.nchunks) workers = (size_t)p.nchunks;
    /* two slots per worker: one being decoded while the other waits to be written */
    p.nslots = workers ? 2 * workers : 1;
    unsigned eb = element_bytes(g, job->to);
    size_t n = (size_t)(p.span ? p.span : p.chunk * g->cols);
    p.slots = calloc(p.nslots, sizeof *p.slots);
    p.decoded = calloc(p.nslots, sizeof *p.decoded);
    nf_status st = p.slots && p.decoded ? NF_OK : nf_common_nomem(err);
    size_t ready = 0; /* slots whose buffers exist */
    /* words only for --to native; a values buffer only when values are not the output bytes */
    bool need_values = job->to != TO_NATIVE && !f32_in_place(job);
    for (; st == NF_OK && ready < p.nslots; ready++) {
        dq_slot *s = &p.slots[ready];
        if (job->to == TO_NATIVE) {
            nf_colspan sp; /* a span's words: those of a [1, span] tensor */
            if (p.span) st = nf_colspan_init(&sp, g, 0, 0, p.span, err);
            if (st == NF_OK) st = nf_words_alloc(&s->w, p.span ? &sp.g : g, p.chunk, err);
            if (st != NF_OK) break;
        }
        s->values = need_values ? malloc(n * sizeof *s->values) : NULL;
        /* on a cache line: whole-line stores when f32 values are decoded into it */
        s->bytes = job->format == FMT_TEXT ? NULL : aligned_alloc(64, (n * eb + 63) / 64 * 64);
        if ((need_values && !s->values) || (job->format != FMT_TEXT && !s->bytes))
            st = nf_common_nomem(err); /* freed below: the loop counts it */
    }
    nf_pool_workers pool = {0};
    size_t started = 0;
    if (st == NF_OK && workers > 0) {
        pthread_mutex_init(&p.lock, NULL);
        pthread_cond_init(&p.cond, NULL);
        sigset_t saved;
        nf_sig_block(&saved); /* the workers never take Ctrl-C: the writer (this thread) does */
        started = nf_pool_start(&pool, workers, decode_worker, &p);
        nf_sig_restore(&saved);
        if (started == 0) { /* no thread could start: the calling thread does it all */
            pthread_cond_destroy(&p.cond);
            pthread_mutex_destroy(&p.lock);
        }
    }
    if (st == NF_OK && started == 0) {
        for (uint64_t c = 0; st == NF_OK && c < p.nchunks; c++) {
            if (nf_sig_cancelled()) {
                st = nf_error_set(err, NF_ERR_IO, "interrupted");
                break;
            }
            slot_range(&p, c, &p.slots[0]);
            decode_slot(job, &p.slots[0]);
            st = write_slot(job, &p.slots[0], eb, out, err);
        }
    } else if (st == NF_OK) {
        for (uint64_t c = 0; st == NF_OK && c < p.nchunks; c++) {
            dq_slot *s = &p.slots[c % p.nslots];
            pthread_mutex_lock(&p.lock);
            while (p.decoded[c % p.nslots] != c + 1) pthread_cond_wait(&p.cond, &p.lock);
            pthread_mutex_unlock(&p.lock);
            st = nf_sig_cancelled() ? nf_error_set(err, NF_ERR_IO, "interrupted") : write_slot(job, s, eb, out, err);
            pthread_mutex_lock(&p.lock);
            p.written = c + 1;
            pthread_cond_broadcast(&p.cond);
            pthread_mutex_unlock(&p.lock);
        }
        pthread_mutex_lock(&p.lock);
        p.stop = true;
        pthread_cond_broadcast(&p.cond);
        pthread_mutex_unlock(&p.lock);
        nf_pool_join(&pool);
        pthread_cond_destroy(&p.cond);
        pthread_mutex_destroy(&p.lock);
    }
    for (size_t i = 0; i < ready; i++) {
        free(p.slots[i].values);
        free(p.slots[i].bytes);
        nf_words_free(&p.slots[i].w);
    }
    free(p.slots);
    free(p.decoded);
    return st;
}

/* NumPy format 1.0 header: magic, version, little-endian header length, then a Python dict
 * literal padded with spaces and a newline to a multiple of 64 bytes. */
static nf_status write_npy_header(nf_out *out, const char *descr, const uint64_t *shape, uint32_t rank, nf_error *err)
{
    char dict[512];
    size_t used = (size_t)snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (uint32_t i = 0; i < rank && used < sizeof dict; i++)
        used += (size_t)snprintf(dict + used, sizeof dict - used, "%" PRIu64 "%s", shape[i],
                                 rank == 1 ? "," : (i + 1 < rank ? ", " : ""));
    used += (size_t)snprintf(dict + used, sizeof dict - used, "), }");
    size_t total = 10 + used + 1;
    size_t padded = (total + 63) / 64 * 64;
    if (padded - 10 > 65535 || padded > sizeof dict + 10)
        return nf_error_set(err, NF_ERR_INVALID, "shape too long for .npy");
    uint8_t head[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
    put_le(head + 8, (uint32_t)(padded - 10), 2);
    NF_TRY(nf_out_write(out, head, sizeof head, err));
    NF_TRY(nf_out_write(out, dict, used, err));
    for (size_t i = total; i < padded; i++) NF_TRY(nf_out_write(out, " ", 1, err));
    return nf_out_write(out, "\n", 1, err);
}

static int refuse_terminal(const nf_cli *cli)
{
    return nf_cli_error(cli, NF_ERR_USAGE,
                        "refusing to write binary data to a terminal: give -o OUT, --format text, or a pipe");
}

static int dequant_one(const nf_cli *cli, nf_artifact *a, const char *id, const dq_opts *opts)
{
    const nf_object *o = nf_artifact_find(a, id);
    if (!o)
        return nf_cli_error(cli, NF_ERR_INVALID, "%s: no object '%s'", nf_cli_name(nf_artifact_path(a)).s,
                            nf_cli_name(id).s);
    if (o->kind != NF_OBJECT_TENSOR)
        return nf_cli_error(cli, NF_ERR_INVALID, "%s: object '%s' is a resource, not a tensor",
                            nf_cli_name(nf_artifact_path(a)).s, nf_cli_name(id).s);
    nf_geometry g;
    nf_error err;
    if (nf_artifact_check_object(a, o, &g, &err) != NF_OK) {
        prefix_object(&err, nf_artifact_path(a), id);
        return nf_cli_report(cli, &err);
    }
    if (opts->to == TO_NATIVE && g.format->category != NF_CAT_DIRECT)
        return nf_cli_error(cli, NF_ERR_USAGE,
                            "%s: object '%s' is %s: --to native gives the words of direct tensors (bf16, fp32, "
                            "int32) only; use --to f32 for values or ninfer-inspect --words for codes and scales",
                            nf_artifact_path(a), id, g.format->name);
    rows_job job = {a, o, &g, 0, g.rows, opts->to, opts->format};
    if (opts->rows.given) {
        job.r0 = opts->rows.has_a ? opts->rows.a : 0;
        job.r1 = opts->rows.has_b ? opts->rows.b : g.rows;
        if (job.r0 >= job.r1 || job.r1 > g.rows)
            return nf_cli_error(cli, NF_ERR_USAGE, "--rows %" PRIu64 ":%" PRIu64 " is not within 0:%" PRIu64, job.r0,
                                job.r1, g.rows);
    }
    nf_out *out;
    if (nf_out_open(opts->output, (int)opts->zstd, &out, &err) != NF_OK) return nf_cli_report(cli, &err);
    if (opts->format != FMT_TEXT && !opts->zstd && nf_out_terminal(out)) {
        nf_out_abort(out);
        return refuse_terminal(cli);
    }
    nf_status st = NF_OK;
    if (opts->format == FMT_NPY) {
        uint64_t shape[NF_MAX_RANK];
        uint32_t rank = g.rank;
        memcpy(shape, g.shape, sizeof shape);
        if (opts->rows.given && rank >= 2) { /* rows of the [rows, cols] view */
            shape[0] = job.r1 - job.r0;
            shape[1] = g.cols;
            rank = 2;
        }
        st = write_npy_header(out, npy_descr(&g, opts->to), shape, rank, &err);
    }
    if (st == NF_OK) st = stream_rows(&job, opts->threads, out, &err);
    if (st != NF_OK) {
        nf_out_abort(out);
        prefix_object(&err, nf_artifact_path(a), id);
        return nf_cli_report(cli, &err);
    }
    if (nf_out_commit(out, &err) != NF_OK) return nf_cli_report(cli, &err);
    return NF_EXIT_OK;
}

/* ---------------------------------------------------------------- --all */
/* Every cap a reader enforces is checked by the writer (docs/security.md 1.3): a safetensors file holds
 * its metadata under the name "__metadata__", so a tensor of that name would replace it (and a
 * reader refuses the file); safetensors readers (ours: lib/src/source, NF_SOURCE_MAX_*) take
 * names of at most 1024 bytes and at most 2^20 tensors.  Such an artifact is refused rather than
 * renamed: the names are what tools match tensors by (docs/ninfer-dequant.md). */
static int check_safetensors_name(const nf_cli *cli, const nf_artifact *a, const char *id, size_t count)
{
    if (strcmp(id, "__metadata__") == 0)
        return nf_cli_error(cli, NF_ERR_INVALID,
                            "%s: object '__metadata__': safetensors reserves that name for the "
                            "file's metadata, so --all cannot write the object under its ID; dequantize it alone "
                            "(ninfer-dequant FILE __metadata__ -o OUT)",
                            nf_artifact_path(a));
    size_t len = strlen(id);
    if (len > NF_SOURCE_MAX_NAME_BYTES)
        return nf_cli_error(cli, NF_ERR_INVALID,
                            "%s: object '%.64s...': its ID is %zu bytes, longer than a safetensors "
                            "reader takes (%u bytes, NF_SOURCE_MAX_NAME_BYTES); dequantize it alone",
                            nf_artifact_path(a), id, len, NF_SOURCE_MAX_NAME_BYTES);
    if (count > NF_SOURCE_MAX_TENSORS)
        return nf_cli_error(cli, NF_ERR_INVALID,
                            "%s: more than %u tensor objects, more than a safetensors reader takes "
                            "(NF_SOURCE_MAX_TENSORS); dequantize them one at a time",
                            nf_artifact_path(a), NF_SOURCE_MAX_TENSORS);
    return NF_EXIT_OK;
}

static int dequant_all(const nf_cli *cli, nf_artifact *a, const dq_opts *opts)
{
    nf_error err;
    size_t n = nf_artifact_object_count(a);
    nf_geometry *geo = calloc(n ? n : 1, sizeof *geo);
    if (!geo) return nf_cli_error(cli, NF_ERR_NOMEM, "out of memory");
    const char *dtype = opts->to == TO_F32 ? "F32" : opts->to == TO_F16 ? "F16" : "BF16";
    unsigned eb = opts->to == TO_F32 ? 4u : 2u;
    /* The header first: names, dtypes, shapes and contiguous offsets are known up front. */
    json_t *header = json_object();
    json_object_set_new(header, "__metadata__", json_pack("{s:s}", "format", "pt"));
    char idhex[33];
    nf_artifact_id_hex(a, idhex);
    json_object_set_new(json_object_get(header, "__metadata__"), "ninfer_artifact_id", json_string(idhex));
    uint64_t offset = 0;
    int rc = NF_EXIT_OK;
    size_t tensors = 0;
    for (size_t i = 0; i < n && rc == NF_EXIT_OK; i++) {
        const nf_object *o = nf_artifact_object(a, i);
        if (o->kind != NF_OBJECT_TENSOR) continue;
        if ((rc = check_safetensors_name(cli, a, o->id, ++tensors)) != NF_EXIT_OK) break;
        if (nf_artifact_check_object(a, o, &geo[i], &err) != NF_OK) {
            prefix_object(&err, nf_artifact_path(a), o->id);
            rc = nf_cli_report(cli, &err);
            break;
        }
        json_t *shape = json_array();
        for (uint32_t d = 0; d < geo[i].rank; d++)
            json_array_append_new(shape, json_integer((json_int_t)geo[i].shape[d]));
        uint64_t bytes = geo[i].elements * eb;
        json_object_set_new(header, o->id,
                            json_pack("{s:s,s:o,s:[I,I]}", "dtype", dtype, "shape", shape, "data_offsets",
                                      (json_int_t)offset, (json_int_t)(offset + bytes)));
        offset += bytes;
    }
    char *text = rc == NF_EXIT_OK ? json_dumps(header, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(header);
    if (rc != NF_EXIT_OK || !text) {
        free(geo);
        free(text);
        return rc != NF_EXIT_OK ? rc : nf_cli_error(cli, NF_ERR_NOMEM, "out of memory");
    }
    size_t len = strlen(text), padded = (len + 7) / 8 * 8; /* keep the data 8-byte aligned */
    if (padded > NF_ST_MAX_HEADER_BYTES) {
        free(geo);
        free(text);
        return nf_cli_error(cli, NF_ERR_INVALID,
                            "%s: the safetensors header for %zu tensors would be %zu bytes, more "
                            "than a safetensors reader takes (%u, NF_ST_MAX_HEADER_BYTES); dequantize the tensors "
                            "one at a time",
                            nf_artifact_path(a), tensors, padded, NF_ST_MAX_HEADER_BYTES);
    }
    nf_out *out;
    if (nf_out_open(opts->output, (int)opts->zstd, &out, &err) != NF_OK) {
        free(geo);
        free(text);
        return nf_cli_report(cli, &err);
    }
    if (!opts->zstd && nf_out_terminal(out)) {
        nf_out_abort(out);
        free(geo);
        free(text);
        return refuse_terminal(cli);
    }
    uint8_t prefix[8];
    put_le(prefix, (uint32_t)padded, 4);
    put_le(prefix + 4, (uint32_t)((uint64_t)padded >> 32), 4);
    nf_status st = nf_out_write(out, prefix, 8, &err);
    if (st == NF_OK) st = nf_out_write(out, text, len, &err);
    for (size_t i = len; st == NF_OK && i < padded; i++) st = nf_out_write(out, " ", 1, &err);
    free(text);
    for (size_t i = 0; st == NF_OK && i < n; i++) {
        const nf_object *o = nf_artifact_object(a, i);
        if (o->kind != NF_OBJECT_TENSOR) continue;
        rows_job job = {a, o, &geo[i], 0, geo[i].rows, opts->to, FMT_RAW};
        if ((st = stream_rows(&job, opts->threads, out, &err)) != NF_OK)
            prefix_object(&err, nf_artifact_path(a), o->id);
    }
    free(geo);
    if (st != NF_OK) {
        nf_out_abort(out);
        return nf_cli_report(cli, &err);
    }
    if (nf_out_commit(out, &err) != NF_OK) return nf_cli_report(cli, &err);
    return NF_EXIT_OK;
}

/* Replacing OUT atomically must never replace the artifact being read. */
static bool output_is_input(const nf_artifact *a, const char *output)
{
    struct stat out_st, in_st;
    if (!output || strcmp(output, "-") == 0 || stat(output, &out_st) != 0) return false;
    const char *entry = nf_artifact_path(a);
    for (size_t i = 0; i < nf_artifact_file_count(a); i++) {
        char path[4096];
        const nf_file_entry *f = nf_artifact_file(a, i);
        if (i == 0) {
            snprintf(path, sizeof path, "%s", entry);
        } else {
            const char *slash = strrchr(entry, '/');
            snprintf(path, sizeof path, "%.*s%s", slash ? (int)(slash - entry + 1) : 0, entry, f->path);
        }
        if (stat(path, &in_st) == 0 && in_st.st_dev == out_st.st_dev && in_st.st_ino == out_st.st_ino) return true;
    }
    return false;
}

/* Temp files that a killed run (SIGKILL: nothing can clean up) left for OUT, beside the file a
 * run replaces (OUT, or the end of its links; outputs/out_file.h): those whose process is gone are
 * named in a warning, or removed with --remove-stale, as ninfer-convert does for its outputs
 * (docs/ninfer-dequant.md, "Interrupted runs").  Returns NF_EXIT_OK, or NF_EXIT_SYSTEM when a
 * removal fails (or, with --remove-stale, the directory cannot be listed). */
static int handle_stale(const nf_cli *cli, const dq_opts *o)
{
    char *target = o->output ? nf_out_atomic_target(o->output) : NULL;
    if (!target) return NF_EXIT_OK; /* standard output or a stream: no temp files */
    nf_stale *st = NULL;
    size_t n = 0;
    nf_error err;
    int rc = NF_EXIT_OK;
    if (nf_stale_find(target, false, &st, &n, &err) != NF_OK) {
        if (o->remove_stale) rc = nf_cli_report(cli, &err);
        else nf_cli_warn(cli, "cannot look for stale temp files: %s", err.message);
        n = 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (st[i].kind != NF_STALE_TEMP) continue;
        int r = nf_cli_stale_temp(cli, st[i].path, st[i].pid, o->remove_stale, "--remove-stale removes it");
        if (r != NF_EXIT_OK) rc = r;
    }
    nf_stale_free(st, n);
    free(target);
    return rc;
}

int main(int argc, char **argv)
{
    nf_cli cli;
    dq_opts opts = {0};
    bool done = false;
    int rc = nf_cli_parse(&cli, &program, argc, argv, &opts, &done);
    if (rc != NF_EXIT_OK || done) goto out;
    /* before any output exists: Ctrl-C then stops the run cleanly (temp file removed, exit 3) */
    nf_sig_catch();
    if (opts.remove_stale && cli.npositional == 0) { /* cleanup only */
        rc = opts.output
                 ? handle_stale(&cli, &opts)
                 : nf_cli_usage(&cli, "--remove-stale needs -o OUT (the output whose stale temp files to remove)");
        goto out;
    }
    opts.threads = nf_pool_threads(opts.threads);
    if (opts.all) {
        if (cli.npositional != 1) {
            rc = nf_cli_usage(&cli, "--all takes one FILE and no object ID");
            goto out;
        }
        if (!opts.output) {
            rc = nf_cli_usage(&cli, "--all needs -o OUT.safetensors (or -o - for standard output)");
            goto out;
        }
        if (opts.to == TO_NATIVE || opts.format != FMT_RAW || opts.rows.given) {
            rc = nf_cli_usage(
                &cli, "--all writes safetensors of f32, f16 or bf16 values: no --to native, --format or --rows");
            goto out;
        }
    } else if (cli.npositional != 2) {
        rc = nf_cli_usage(&cli, cli.npositional < 2 ? "give FILE and an object ID (or FILE --all -o OUT)"
                                                    : "one FILE and one object ID at a time");
        goto out;
    }
    nf_artifact *a = NULL;
    nf_error err;
    if (nf_artifact_open(cli.positional[0], NF_READ_PREAD, &a, &err) != NF_OK) {
        rc = nf_cli_report(&cli, &err);
        goto out;
    }
    if (output_is_input(a, opts.output)) {
        rc = nf_cli_usage(&cli, "-o %s is a file of the artifact being read", opts.output);
        nf_artifact_close(a);
        goto out;
    }
    if ((rc = handle_stale(&cli, &opts)) != NF_EXIT_OK) {
        nf_artifact_close(a);
        goto out;
    }
    rc = opts.all ? dequant_all(&cli, a, &opts) : dequant_one(&cli, a, cli.positional[1], &opts);
    nf_artifact_close(a);
out:
    nf_cli_free(&cli);
    return rc;
}
