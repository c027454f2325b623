/* ninfer-diff: what differs between two artifacts, object by object (matched by id), or between
 * an artifact and a checkpoint (docs/ninfer-diff.md).  The stored bytes are compared in bounded
 * chunks; where words differ, the decoded values are compared with the library's decoders
 * (nf_layout_decode_rows_f32, nf_source_read_f32) and its error statistics (stats/stats.h, the
 * figures of ninfer-convert's report), so the numbers mean what they mean everywhere else. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ninfer/ninfer.h>

#include "cli.h"
#include "common/checked.h"
#include "common/fail.h"
#include "common/pool.h"
#include "stats/stats.h"

typedef struct diff_opts {
    unsigned threads; /* 0: every core */
} diff_opts;

static const nf_option options[] = {
    NF_OPT_UINT_ROW(diff_opts, threads, 1, NF_CLI_MAX_THREADS, NULL, "threads", 'j', "N",
                    "compare on N threads (default: every core); the output is the same for any N"),
    NF_OPT_END,
};

static const nf_program program = {
    "ninfer-diff",
    "ninfer-diff A.ninfer B.ninfer [--json] [--threads N] [-q]\n"
    "       ninfer-diff A.ninfer CHECKPOINT [--json] [--threads N] [-q]",
    "Compare two artifacts object by object (matched by id): objects added and removed, changed\n"
    "kind, format, layout and shape, whether the stored words are equal, and where they are not\n"
    "the error statistics of B's decoded values against A's (max |A - B|, RMSE, SNR in dB with A\n"
    "as the reference).  The directory's other members (components, bindings, uses, files,\n"
    "metadata, provenance) and the artifact id are compared key by key.  When B is a checkpoint\n"
    "(a safetensors file or directory, a sharded index, a .gguf file), each tensor object's\n"
    "values are compared with the source tensor of the same name (the source as the reference:\n"
    "the figures of ninfer-convert's report).",
    options,
    "  ninfer-diff a.ninfer b.ninfer              # exit 0 when the same, 1 when not\n"
    "  ninfer-diff q8.ninfer q4.ninfer --json > diff.json\n"
    "  ninfer-diff model.ninfer ./MyModel         # every tensor against its source tensor\n"
    "  ninfer diff -q a.ninfer b.ninfer && echo same\n",
    /* like cmp and diff: 1 is "different"; an invalid input is 1 too, as in every program
     * (docs/decisions.md, "Exit statuses"), told apart by its error on stderr and no summary */
    "0 same, 1 different (or an invalid input: an error on stderr), 2 usage error, 3 system error",
};

/* ---------------------------------------------------------------- inputs */
typedef enum path_kind { PATH_ARTIFACT, PATH_CHECKPOINT } path_kind;

/* Decided by content, as ninfer-inspect does: a regular file starting with "NINFER\0" is an
 * artifact, any other file or a directory a checkpoint.  A path that cannot be examined is left
 * to the reader that opens it, whose message names it. */
static path_kind classify(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) return PATH_ARTIFACT;
    if (S_ISDIR(st.st_mode)) return PATH_CHECKPOINT;
    if (!S_ISREG(st.st_mode)) return PATH_ARTIFACT; /* the artifact reader refuses it (exit 3) */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return PATH_ARTIFACT;
    unsigned char head[8];
    ssize_t n;
    do {
        n = pread(fd, head, sizeof head, 0);
    } while (n < 0 && errno == EINTR);
    close(fd);
    /* an empty or short file is offered to the artifact reader, which says what is wrong */
    if (n < 7) return PATH_ARTIFACT;
    return memcmp(head, "NINFER\0", 7) == 0 ? PATH_ARTIFACT : PATH_CHECKPOINT;
}

/* ---------------------------------------------------------------- one object pair */
enum {
    CH_ADDED = 1u << 0,   /* only in B */
    CH_REMOVED = 1u << 1, /* only in A */
    CH_KIND = 1u << 2,
    CH_FORMAT = 1u << 3,
    CH_LAYOUT = 1u << 4,
    CH_SHAPE = 1u << 5,
    CH_WORDS = 1u << 6, /* stored bytes differ (artifact vs artifact) */
    CH_VALUES = 1u << 7 /* decoded values differ (artifact vs checkpoint) */
};

typedef struct pair {
    const char *id;
    const nf_object *a, *b;    /* b: B an artifact */
    const nf_source_tensor *t; /* B a checkpoint */
    const nf_qweight *q;       /* t is a quantized weight of a dialect: its values are q's */
    unsigned changes;
    bool not_compared;    /* a resource of A against a checkpoint: no tensor to compare */
    const char *no_stats; /* why no statistics are given, or NULL */
    bool want_bytes, want_stats;
    uint64_t rows, cols; /* of A's tensor (the geometries are recomputed where needed:
                                 * a pair stays small for artifacts of 10^5 objects) */
    /* the value chunks: rows [k * chunk, ...) or, for rows longer than a chunk, spans of `span`
     * columns, `spans` per row */
    uint64_t chunk, span, spans, nchunks;
    nf_errstats *acc; /* while its chunks run; merged under the pool's lock: exact,
                                 * so in any order */
    nf_errstats_summary sum;
    bool have_sum;
} pair;

/* One entry of the directory comparison: a path of keys and what happened to it. */
typedef struct key_diff {
    char *path;         /* for people: provenance.objects[ID] */
    json_t *keys;       /* for --json: ["provenance", "objects", ID] */
    const char *change; /* "added", "removed", "changed" */
} key_diff;

typedef struct diff_run {
    const nf_cli *cli;
    const char *path_a, *path_b;
    nf_artifact *a, *b;
    nf_source *src;
    nf_dialects *dialects; /* of src: quantized weights read as ninfer-convert reads them */
    pair *pairs;
    size_t npairs;
    key_diff *keys;
    size_t nkeys, keys_cap;
    unsigned threads;
    const nf_stats_kernels *kern;
    /* the pool */
    pthread_mutex_t lock;
    uint64_t next; /* the next job a worker takes */
    uint64_t njobs;
    uint64_t *job_end; /* value phase: job_end[i] = jobs of pairs [0, i] */
    size_t *job_pair;  /* the pairs with jobs, in order */
    size_t njob_pairs;
    int phase;           /* 0: bytes (one job per pair), 1: values (one job per chunk) */
    size_t buf_values;   /* floats per value buffer */
    size_t not_compared; /* resources of A against a checkpoint */
    /* the first failure in (pair, chunk) order, whichever thread met it first */
    nf_status fail_st;
    size_t fail_pair;
    uint64_t fail_chunk;
    nf_error fail_err;
} diff_run;

/* Keep the failure of chunk k of pair pi when it comes before the one kept (call under the
 * lock): the error reported does not depend on the thread count. */
static void record_failure(diff_run *r, size_t pi, uint64_t k, nf_status st, const nf_error *err, const char *side)
{
    if (r->fail_st != NF_OK && (r->fail_pair < pi || (r->fail_pair == pi && r->fail_chunk <= k))) return;
    r->fail_st = st;
    r->fail_pair = pi;
    r->fail_chunk = k;
    r->fail_err = *err;
    if (side) nf_error_prefix(&r->fail_err, "%s: object '%s'", nf_cli_name(side).s, nf_cli_name(r->pairs[pi].id).s);
}

/* The geometries of a tensor pair (B's only when B is an artifact), as the records were checked
 * by classify_pair. */
static nf_status geometries(const diff_run *r, const pair *p, nf_geometry *ga, nf_geometry *gb, nf_error *err)
{
    nf_status st = nf_artifact_check_object(r->a, p->a, ga, err);
    if (st != NF_OK)
        return nf_error_forward(err, st, "%s: object '%s'", nf_cli_name(r->path_a).s, nf_cli_name(p->id).s);
    if (!p->b) return NF_OK;
    st = nf_artifact_check_object(r->b, p->b, gb, err);
    if (st != NF_OK)
        return nf_error_forward(err, st, "%s: object '%s'", nf_cli_name(r->path_b).s, nf_cli_name(p->id).s);
    return NF_OK;
}

/* About 2^18 values (1 MiB of f32) per chunk, ninfer-convert's and ninfer-dequant's chunk; a
 * multiple of NF_STATS_BLOCK, so that a span starts a statistics block as a whole row does. */
#define CHUNK_VALUES ((uint64_t)1 << 18)
#define CHUNK_BYTES ((size_t)1 << 20)

static bool shape_equal(uint32_t ra, const uint64_t *sa, uint32_t rb, const uint64_t *sb)
{
    if (ra != rb) return false;
    for (uint32_t i = 0; i < ra; i++)
        if (sa[i] != sb[i]) return false;
    return true;
}

/* An object [N, K] holding a source tensor of rank 3 or more as its rows: N is the product of the
 * leading dimensions and K the last (an import of a GGUF expert bank [E, R, K], ninfer/import.h). */
static bool rows_of(uint32_t ra, const uint64_t *sa, uint32_t rt, const uint64_t *st)
{
    if (ra != 2 || rt < 3 || sa[1] != st[rt - 1]) return false;
    uint64_t n = 1;
    for (uint32_t i = 0; i + 1 < rt; i++)
        if (!nf_mul_u64(n, st[i], &n)) return false;
    return n == sa[0];
}

static void shape_text(uint32_t rank, const uint64_t *shape, char *out, size_t n)
{
    size_t k = (size_t)snprintf(out, n, "[");
    for (uint32_t i = 0; i < rank && k < n; i++)
        k += (size_t)snprintf(out + k, n - k, "%s%llu", i ? "," : "", (unsigned long long)shape[i]);
    if (k < n) snprintf(out + k, n - k, "]");
}

static bool same_name(const char *x, const char *y) { return (!x && !y) || (x && y && strcmp(x, y) == 0); }

/* Chunking of a pair's values: rows in chunks of about CHUNK_VALUES values, or spans of a row
 * when a row is longer and both sides can be read by spans (nvfp4, whose scales are tiled by 128
 * rows, by spans of a 128-row band, one row decoded at a time, as ninfer-dequant reads them). */
static nf_status plan_chunks(diff_run *r, pair *p, nf_error *err)
{
    nf_geometry ga, gb;
    NF_TRY(geometries(r, p, &ga, &gb, err));
    const nf_geometry *g = &ga;
    uint64_t rows = g->rows, cols = g->cols;
    p->rows = rows;
    p->cols = cols;
    /* a dialect's weight is read by spans too (nf_qweight_read_f32_span, docs/dialects.md "Values") */
    bool spans_ok = nf_layout_colspan_rows(g) && (!p->b || nf_layout_colspan_rows(&gb));
    /* whole-row chunks hold a band of 128 rows when either side is nvfp4 */
    uint64_t band = spans_ok ? nf_layout_colspan_rows(g) : 1;
    if (p->b && spans_ok && nf_layout_colspan_rows(&gb) > band) band = nf_layout_colspan_rows(&gb);
    if (cols > CHUNK_VALUES / band && spans_ok) {
        p->span = cols < CHUNK_VALUES ? cols : CHUNK_VALUES;
        p->spans = cols / p->span + (cols % p->span != 0);
        p->chunk = 1;
        if (!nf_mul_u64(rows, p->spans, &p->nchunks))
            return nf_error_set(err, NF_ERR_INVALID, "object '%s': too many chunks", nf_cli_name(p->id).s);
    } else {
        uint64_t ca = nf_geometry_chunk_rows(g, CHUNK_VALUES);
        uint64_t cb = p->b ? nf_geometry_chunk_rows(&gb, CHUNK_VALUES) : ca;
        /* both sides read the same rows: the larger chunk, rounded up to a multiple of the
         * smaller (only nvfp4 constrains its chunks, to multiples of 128 rows) */
        uint64_t lo = ca < cb ? ca : cb;
        p->chunk = ca > cb ? ca : cb;
        if (lo && p->chunk % lo) p->chunk += lo - p->chunk % lo;
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

/* What differs for one id, and what is to be compared; the reading is done by the workers. */
static nf_status classify_pair(diff_run *r, pair *p, nf_error *err)
{
    const nf_object *a = p->a;
    nf_geometry ga, gb;
    if (r->src && a && a->kind == NF_OBJECT_RESOURCE && !p->t) {
        /* a checkpoint holds tensors; its companion files (tokenizer.json, ...) are the
         * recipe's to map onto resources, so a resource has nothing to be compared with */
        p->not_compared = true;
        return NF_OK;
    }
    if (!a || (!p->b && !p->t)) {
        p->changes = a ? CH_REMOVED : CH_ADDED;
        return NF_OK;
    }
    if (a->kind == NF_OBJECT_TENSOR) {
        nf_status st = nf_artifact_check_object(r->a, a, &ga, err);
        if (st != NF_OK)
            return nf_error_forward(err, st, "%s: object '%s'", nf_cli_name(r->path_a).s, nf_cli_name(p->id).s);
    }
    if (p->t) { /* against a checkpoint: values only */
        if (a->kind != NF_OBJECT_TENSOR) {
            p->changes = CH_KIND;
            p->no_stats = "a resource in A, a tensor in B";
        } else if (p->q ? !shape_equal(a->rank, a->shape, 2, p->q->shape)
                        : !shape_equal(a->rank, a->shape, p->t->rank, p->t->shape) &&
                              !rows_of(a->rank, a->shape, p->t->rank, p->t->shape)) {
            p->changes = CH_SHAPE;
            p->no_stats = "the shapes differ";
        } else if (!p->q && !p->t->convertible) {
            p->changes = CH_VALUES;
            p->no_stats = "the source type cannot be read as values";
        } else {
            p->want_stats = ga.elements > 0;
        }
        return p->want_stats ? plan_chunks(r, p, err) : NF_OK;
    }
    const nf_object *b = p->b;
    if (b->kind == NF_OBJECT_TENSOR) {
        nf_status st = nf_artifact_check_object(r->b, b, &gb, err);
        if (st != NF_OK)
            return nf_error_forward(err, st, "%s: object '%s'", nf_cli_name(r->path_b).s, nf_cli_name(p->id).s);
    }
    if (a->kind != b->kind) {
        p->changes = CH_KIND;
        p->no_stats = "a tensor on one side, a resource on the other";
        return NF_OK;
    }
    if (a->kind == NF_OBJECT_RESOURCE) {
        /* a resource's bytes are its value: equal or not */
        if (a->bytes != b->bytes) p->changes = CH_WORDS;
        else p->want_bytes = true;
        return NF_OK;
    }
    if (!same_name(a->format_name, b->format_name)) p->changes |= CH_FORMAT;
    if (!same_name(a->layout_name, b->layout_name)) p->changes |= CH_LAYOUT;
    if (!shape_equal(a->rank, a->shape, b->rank, b->shape)) p->changes |= CH_SHAPE;
    if (p->changes & CH_SHAPE) {
        p->changes |= CH_WORDS;
        p->no_stats = "the shapes differ";
        return NF_OK;
    }
    if (p->changes || a->bytes != b->bytes || a->divisors != b->divisors) {
        /* another encoding of the same shape: the words differ, the values may not */
        p->changes |= CH_WORDS;
        p->want_stats = ga.elements > 0;
    } else {
        p->want_bytes = true;
    }
    return p->want_stats ? plan_chunks(r, p, err) : NF_OK;
}

/* ---------------------------------------------------------------- the workers */
typedef struct worker_bufs {
    uint8_t *ba, *bb; /* CHUNK_BYTES each */
    float *va, *vb;   /* buf_values each */
} worker_bufs;

/* Phase 0: the stored bytes of a pair, chunk by chunk (never a whole object in memory). */
static void compare_bytes(diff_run *r, size_t pi, worker_bufs *w)
{
    pair *p = &r->pairs[pi];
    uint64_t total = p->a->bytes, off = 0;
    nf_error err;
    while (off < total) {
        size_t n = total - off < CHUNK_BYTES ? (size_t)(total - off) : CHUNK_BYTES;
        const char *side = r->path_a;
        nf_status st = nf_artifact_read(r->a, p->a->offset + off, w->ba, n, &err);
        if (st == NF_OK) {
            side = r->path_b;
            st = nf_artifact_read(r->b, p->b->offset + off, w->bb, n, &err);
        }
        if (st != NF_OK) {
            pthread_mutex_lock(&r->lock);
            record_failure(r, pi, 0, st, &err, side);
            pthread_mutex_unlock(&r->lock);
            return;
        }
        if (memcmp(w->ba, w->bb, n) != 0) {
            p->changes |= CH_WORDS;
            /* the same format, layout and shape with other words: the values are compared too
             * (a tensor's bytes are positive, so it has elements) */
            if (p->a->kind == NF_OBJECT_TENSOR) p->want_stats = true;
            return;
        }
        off += n;
    }
}

/* Decode one side's chunk: rows [r0, r1) or columns [c0, c0 + n) of row r0, into out. */
static nf_status decode_artifact(nf_artifact *a, const nf_object *o, const nf_geometry *g, const pair *p, uint64_t r0,
                                 uint64_t r1, uint64_t c0, uint64_t n, float *out, nf_error *err)
{
    nf_byte_reader reader;
    nf_artifact_object_reader(a, o, &reader);
    if (!p->span) return nf_layout_decode_rows_f32(g, &reader, r0, r1, out, err);
    /* a span is a [1, n] tensor of its own, read through the object's reader (nvfp4: a [128, n]
     * piece of the row's band, of which row r0 is decoded) */
    const uint64_t band = nf_layout_colspan_rows(g);
    nf_colspan sp;
    nf_colspan_source span_src = {&sp, &reader};
    nf_byte_reader span_reader;
    NF_TRY(nf_colspan_init(&sp, g, r0 - r0 % band, c0, n, err));
    nf_colspan_reader(&span_src, &span_reader);
    return nf_layout_decode_rows_f32(&sp.g, &span_reader, r0 % band, r0 % band + 1, out, err);
}

/* Phase 1: the values of chunk k of a pair, A against B, into a local accumulator merged into
 * the pair's (an exact merge: the figures do not depend on which thread ran which chunk). */
static void compare_values(diff_run *r, size_t pi, uint64_t k, worker_bufs *w)
{
    pair *p = &r->pairs[pi];
    uint64_t cols = p->cols, r0, r1, c0 = 0, n;
    if (p->span) {
        r0 = k / p->spans;
        r1 = r0 + 1;
        c0 = k % p->spans * p->span;
        n = cols - c0 < p->span ? cols - c0 : p->span;
    } else {
        r0 = k * p->chunk;
        r1 = p->rows - r0 < p->chunk ? p->rows : r0 + p->chunk;
        n = (r1 - r0) * cols; /* bounded by buf_values (plan_chunks) */
    }
    nf_error err;
    nf_geometry ga, gb;
    const char *side = NULL; /* geometries() names the file and object itself */
    nf_status st = geometries(r, p, &ga, &gb, &err);
    if (st == NF_OK) {
        side = r->path_a;
        st = decode_artifact(r->a, p->a, &ga, p, r0, r1, c0, n, w->va, &err);
    }
    if (st == NF_OK) {
        side = r->path_b;
        if (p->b) st = decode_artifact(r->b, p->b, &gb, p, r0, r1, c0, n, w->vb, &err);
        else if (p->q && p->span) st = nf_qweight_read_f32_span(r->src, p->q, r0, c0, n, w->vb, (size_t)n, &err);
        else if (p->q) st = nf_qweight_read_f32(r->src, p->q, r0, r1, w->vb, (size_t)n, &err);
        else if (p->span) st = nf_source_read_f32_span(r->src, p->t, r0, c0, n, w->vb, (size_t)n, &err);
        else st = nf_source_read_f32(r->src, p->t, r0, r1, w->vb, (size_t)n, &err);
    }
    nf_errstats local;
    nf_errstats_init(&local);
    if (st == NF_OK) {
        /* one call per row (or span): the statistics blocks start at a row's first column */
        uint64_t len = p->span ? n : cols, nrows = p->span ? 1 : r1 - r0;
        /* the reference x: A against an artifact; the source against a checkpoint, so that
         * the figures are those ninfer-convert reports for the encoding (source x, values y) */
        const float *x = p->t ? w->vb : w->va, *y = p->t ? w->va : w->vb;
        for (uint64_t i = 0; i < nrows; i++) r->kern->row_f32(x + i * len, y + i * len, (size_t)len, &local);
    }
    pthread_mutex_lock(&r->lock);
    if (st == NF_OK) nf_errstats_merge(p->acc, &local);
    else record_failure(r, pi, k, st, &err, side);
    pthread_mutex_unlock(&r->lock);
}

static void *worker(void *arg)
{
    diff_run *r = arg;
    worker_bufs w = {0};
    if (r->phase == 0) {
        w.ba = malloc(CHUNK_BYTES);
        w.bb = malloc(CHUNK_BYTES);
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
            record_failure(r, pi, k, NF_ERR_NOMEM, &e, NULL);
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

/* ---------------------------------------------------------------- the directory */
static nf_status add_key(diff_run *r, const char *path, json_t *keys, const char *change)
{
    if (r->nkeys == r->keys_cap) {
        size_t cap = r->keys_cap ? 2 * r->keys_cap : 16;
        key_diff *k = cap > SIZE_MAX / sizeof *k ? NULL : realloc(r->keys, cap * sizeof *k);
        if (!k) {
            json_decref(keys);
            return NF_ERR_NOMEM;
        }
        r->keys = k;
        r->keys_cap = cap;
    }
    char *p = strdup(path);
    if (!p || !keys) {
        free(p);
        json_decref(keys);
        return NF_ERR_NOMEM;
    }
    r->keys[r->nkeys++] = (key_diff){p, keys, change};
    return NF_OK;
}

/* The path of a key below `path` for people: the first key below a member with a dot
 * (provenance.objects, metadata.checksums), deeper ones and names (bindings, components) in
 * brackets, each escaped. */
static char *key_path(const char *path, const char *key, bool bracket)
{
    nf_cli_text k = nf_cli_name(key);
    size_t n = strlen(path) + strlen(k.s) + 3;
    char *s = malloc(n);
    if (s) snprintf(s, n, bracket ? "%s[%s]" : "%s.%s", path, k.s);
    return s;
}

/* Members and keys that differ between two JSON values at `path`: recursing into objects
 * present on both sides down to `depth` more levels, then reporting the whole value as changed
 * (the point is which keys differ, not a full JSON diff). */
static nf_status diff_json(diff_run *r, const char *path, json_t *keys, const json_t *x, const json_t *y, int depth,
                           bool bracket)
{
    if (json_equal((json_t *)x, (json_t *)y)) return NF_OK;
    if (depth == 0 || !json_is_object(x) || !json_is_object(y))
        return add_key(r, path, json_deep_copy(keys), "changed");
    const char *k;
    json_t *v;
    nf_status st = NF_OK;
    json_object_foreach((json_t *)x, k, v)
    {
        json_t *w = json_object_get(y, k);
        char *sub = key_path(path, k, bracket);
        json_t *subkeys = json_deep_copy(keys);
        if (!sub || !subkeys || json_array_append_new(subkeys, json_string(k)) != 0) st = NF_ERR_NOMEM;
        else if (!w) st = add_key(r, sub, json_incref(subkeys), "removed");
        else st = diff_json(r, sub, subkeys, v, w, depth - 1, true);
        free(sub);
        json_decref(subkeys);
        if (st != NF_OK) return st;
    }
    json_object_foreach((json_t *)y, k, v)
    {
        if (json_object_get(x, k)) continue;
        char *sub = key_path(path, k, bracket);
        json_t *subkeys = json_deep_copy(keys);
        if (!sub || !subkeys || json_array_append_new(subkeys, json_string(k)) != 0) st = NF_ERR_NOMEM;
        else st = add_key(r, sub, json_incref(subkeys), "added");
        free(sub);
        json_decref(subkeys);
        if (st != NF_OK) return st;
    }
    return NF_OK;
}

/* The root members but `objects` (compared object by object), and the artifact id of the
 * header.  metadata and provenance are open objects that may be absent: absent is {}. */
static nf_status diff_directory(diff_run *r, nf_error *err)
{
    static const char *const members[] = {"components", "bindings", "uses", "files", "metadata", "provenance"};
    const json_t *da = nf_artifact_directory(r->a), *db = nf_artifact_directory(r->b);
    nf_status st = NF_OK;
    char ida[33], idb[33];
    nf_artifact_id_hex(r->a, ida);
    nf_artifact_id_hex(r->b, idb);
    if (strcmp(ida, idb) != 0) st = add_key(r, "artifact_id", json_pack("[s]", "artifact_id"), "changed");
    json_t *empty = json_object();
    if (!empty) st = NF_ERR_NOMEM;
    for (size_t i = 0; st == NF_OK && i < sizeof members / sizeof members[0]; i++) {
        const json_t *x = json_object_get(da, members[i]), *y = json_object_get(db, members[i]);
        bool open = i >= 4; /* metadata and provenance: the open objects of the schema */
        if (open) {
            if (!x) x = empty;
            if (!y) y = empty;
        }
        json_t *keys = json_pack("[s]", members[i]);
        if (!keys) st = NF_ERR_NOMEM;
        /* bindings and components are keyed by names: one level, in brackets; metadata and
         * provenance by schema keys, then ids (provenance.objects[ID]): two levels */
        else st = diff_json(r, members[i], keys, x, y, open ? 2 : 1, !open);
        json_decref(keys);
    }
    json_decref(empty);
    if (st != NF_OK) return nf_error_set(err, st, "out of memory");
    return NF_OK;
}

/* ---------------------------------------------------------------- pairing */
static nf_status make_pairs(diff_run *r, nf_error *err)
{
    size_t na = nf_artifact_object_count(r->a);
    size_t nb = r->b ? nf_artifact_object_count(r->b) : nf_source_tensor_count(r->src);
    size_t n;
    if (na > SIZE_MAX - nb || (n = na + nb) > SIZE_MAX / sizeof *r->pairs) return nf_common_nomem(err);
    r->pairs = calloc(n ? n : 1, sizeof *r->pairs);
    if (!r->pairs) return nf_common_nomem(err);
    /* A's objects in A's order, then what only B has in B's order */
    for (size_t i = 0; i < na; i++) {
        pair *p = &r->pairs[r->npairs++];
        p->a = nf_artifact_object(r->a, i);
        p->id = p->a->id;
        if (r->b) p->b = nf_artifact_find(r->b, p->id);
        else if (p->a->kind == NF_OBJECT_TENSOR) p->t = nf_source_find(r->src, p->id);
        if (p->t && nf_dialects_role(r->dialects, p->t, &p->q) != NF_QROLE_WEIGHT) p->q = NULL;
    }
    for (size_t i = 0; i < nb; i++) {
        const char *id;
        if (r->b) {
            const nf_object *o = nf_artifact_object(r->b, i);
            if (nf_artifact_find(r->a, o->id)) continue;
            id = o->id;
            r->pairs[r->npairs].b = NULL;
        } else {
            const nf_source_tensor *t = nf_source_tensor_at(r->src, i);
            /* a quantized weight's scales and zero points are part of it, not tensors of their
             * own (the weight is named after its codes tensor, as ninfer-convert names it) */
            if (nf_dialects_role(r->dialects, t, NULL) == NF_QROLE_COMPANION) continue;
            const nf_object *o = nf_artifact_find(r->a, t->name);
            if (o && o->kind == NF_OBJECT_TENSOR) continue;
            if (o) continue; /* a resource of A by that name: its pair says so */
            id = t->name;
        }
        pair *p = &r->pairs[r->npairs++];
        p->id = id;
    }
    for (size_t i = 0; i < r->npairs; i++) {
        pair *p = &r->pairs[i];
        /* a resource of A named like a source tensor: a kind change */
        if (!r->b && p->a && p->a->kind == NF_OBJECT_RESOURCE) p->t = nf_source_find(r->src, p->id);
        NF_TRY(classify_pair(r, p, err));
    }
    return NF_OK;
}

static nf_status run_phases(diff_run *r, nf_error *err)
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
    /* phase 1: the values of the pairs whose words differ, one job per chunk */
    r->njob_pairs = 0;
    uint64_t total = 0;
    for (size_t i = 0; i < r->npairs; i++) {
        pair *p = &r->pairs[i];
        if (!p->want_stats) continue;
        if (!p->nchunks && !p->chunk) NF_TRY(plan_chunks(r, p, err)); /* found by phase 0 */
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
        pair *p = &r->pairs[i];
        if (!p->acc) continue;
        p->sum = nf_errstats_summarize(p->acc);
        p->have_sum = true;
        free(p->acc);
        p->acc = NULL;
        /* against a checkpoint the values are what is compared: any difference, or a pair
         * that could not be compared (a NaN), is a change */
        if (p->t && (p->sum.max_abs != 0 || p->sum.skipped != 0)) p->changes |= CH_VALUES;
    }
    return NF_OK;
}

/* ---------------------------------------------------------------- output */
/* "format q8_g32_fp16 -> q4_g64_fp16, words" */
static void change_text(const pair *p, char *out, size_t n)
{
    size_t k = 0;
    out[0] = '\0';
#define APPEND(...)                                                            \
    do {                                                                       \
        if (k < n) k += (size_t)snprintf(out + k, n - k, "%s", k ? ", " : ""); \
        if (k < n) k += (size_t)snprintf(out + k, n - k, __VA_ARGS__);         \
    } while (0)
    if (p->changes & CH_ADDED) APPEND("only in B");
    if (p->changes & CH_REMOVED) APPEND("only in A");
    if (p->changes & CH_KIND) APPEND("kind");
    if (p->changes & CH_FORMAT)
        APPEND("format %s -> %s", nf_cli_name(p->a->format_name).s, nf_cli_name(p->b->format_name).s);
    if (p->changes & CH_LAYOUT)
        APPEND("layout %s -> %s", nf_cli_name(p->a->layout_name).s, nf_cli_name(p->b->layout_name).s);
    if (p->changes & CH_SHAPE) {
        char sa[256], sb[256];
        shape_text(p->a->rank, p->a->shape, sa, sizeof sa);
        if (p->b) shape_text(p->b->rank, p->b->shape, sb, sizeof sb);
        else if (p->q) shape_text(2, p->q->shape, sb, sizeof sb);
        else shape_text(p->t->rank, p->t->shape, sb, sizeof sb);
        APPEND("shape %s -> %s", sa, sb);
    }
    if (p->changes & CH_WORDS) APPEND("words");
    if (p->changes & CH_VALUES) APPEND("values");
    if (p->no_stats && !(p->changes & (CH_ADDED | CH_REMOVED))) APPEND("no statistics: %s", p->no_stats);
#undef APPEND
}

static void print_human(const diff_run *r, size_t nchanged, size_t nadded, size_t nremoved)
{
    if (nchanged + nadded + nremoved) {
        printf("%-44s %-40s %12s %12s %8s\n", "object", "change", "max_abs", "rmse", "snr_db");
        for (size_t i = 0; i < r->npairs; i++) {
            const pair *p = &r->pairs[i];
            if (!p->changes) continue;
            char what[1024];
            change_text(p, what, sizeof what);
            if (p->have_sum && p->sum.count) {
                char snr[32];
                if (p->sum.sse == 0) snprintf(snr, sizeof snr, "exact");
                else if (p->sum.snr_db != p->sum.snr_db) snprintf(snr, sizeof snr, "-");
                else snprintf(snr, sizeof snr, "%.1f", p->sum.snr_db);
                printf("%-44s %-40s %12.3g %12.3g %8s\n", nf_cli_name(p->id).s, what, p->sum.max_abs, p->sum.rmse, snr);
            } else {
                printf("%-44s %-40s %12s %12s %8s\n", nf_cli_name(p->id).s, what, "-", "-", "-");
            }
        }
    }
    for (size_t i = 0; i < r->nkeys; i++) printf("directory %s: %s\n", r->keys[i].path, r->keys[i].change);
    size_t compared = r->npairs - nadded - nremoved - r->not_compared;
    char skipped[64] = "";
    if (r->not_compared)
        snprintf(skipped, sizeof skipped, "; %zu resource%s not compared", r->not_compared,
                 r->not_compared == 1 ? "" : "s");
    if (nchanged + nadded + nremoved + r->nkeys == 0) {
        printf("%s and %s: same (%zu object%s compared%s)\n", nf_cli_name(r->path_a).s, nf_cli_name(r->path_b).s,
               compared, compared == 1 ? "" : "s", skipped);
        return;
    }
    printf("%s and %s: different: %zu object%s changed, %zu only in A, %zu only in B, %zu directory key%s "
           "differ%s (%zu object%s compared%s)\n",
           nf_cli_name(r->path_a).s, nf_cli_name(r->path_b).s, nchanged, nchanged == 1 ? "" : "s", nremoved, nadded,
           r->nkeys, r->nkeys == 1 ? "" : "s", r->nkeys == 1 ? "s" : "", compared, compared == 1 ? "" : "s", skipped);
}

/* A JSON number, or null for what is undefined (JSON has no NaN). */
static json_t *num(double v) { return v == v ? json_real(v) : json_null(); }

static json_t *pair_json(const pair *p)
{
    static const struct {
        unsigned bit;
        const char *name;
    } names[] = {{CH_ADDED, "only_in_b"}, {CH_REMOVED, "only_in_a"}, {CH_KIND, "kind"},   {CH_FORMAT, "format"},
                 {CH_LAYOUT, "layout"},   {CH_SHAPE, "shape"},       {CH_WORDS, "words"}, {CH_VALUES, "values"}};
    json_t *changes = json_array();
    for (size_t i = 0; changes && i < sizeof names / sizeof names[0]; i++)
        if (p->changes & names[i].bit) json_array_append_new(changes, json_string(names[i].name));
    json_t *j = json_pack("{s:o,s:o}", "id", nf_cli_json_cstr(p->id), "changes", changes);
    if (!j) return NULL;
    if (p->a && p->a->kind == NF_OBJECT_TENSOR) {
        json_object_set_new(j, "format_a", nf_cli_json_cstr(p->a->format_name));
        json_object_set_new(j, "layout_a", nf_cli_json_cstr(p->a->layout_name));
    }
    if (p->b && p->b->kind == NF_OBJECT_TENSOR) {
        json_object_set_new(j, "format_b", nf_cli_json_cstr(p->b->format_name));
        json_object_set_new(j, "layout_b", nf_cli_json_cstr(p->b->layout_name));
    }
    if (p->no_stats && !(p->changes & (CH_ADDED | CH_REMOVED)))
        json_object_set_new(j, "no_statistics", json_string(p->no_stats));
    if (p->have_sum) {
        const nf_errstats_summary *s = &p->sum;
        json_object_set_new(j, "statistics",
                            json_pack("{s:I,s:I,s:o,s:o,s:o}", "count", (json_int_t)s->count, "skipped",
                                      (json_int_t)s->skipped, "max_abs", num(s->max_abs), "rmse", num(s->rmse),
                                      "snr_db", s->sse == 0 && s->count ? json_string("exact") : num(s->snr_db)));
    }
    return j;
}

static int print_json(const diff_run *r, size_t nchanged, size_t nadded, size_t nremoved)
{
    json_t *objects = json_array(), *keys = json_array(), *skipped = json_array();
    for (size_t i = 0; skipped && i < r->npairs; i++)
        if (r->pairs[i].not_compared) json_array_append_new(skipped, nf_cli_json_cstr(r->pairs[i].id));
    for (size_t i = 0; objects && i < r->npairs; i++)
        if (r->pairs[i].changes) json_array_append_new(objects, pair_json(&r->pairs[i]));
    for (size_t i = 0; keys && i < r->nkeys; i++)
        json_array_append_new(keys, json_pack("{s:s,s:O,s:s}", "path", r->keys[i].path, "keys", r->keys[i].keys,
                                              "change", r->keys[i].change));
    bool same = nchanged + nadded + nremoved + r->nkeys == 0;
    json_t *j = json_pack("{s:o,s:o,s:s,s:b,s:{s:I,s:I,s:I,s:I,s:I},s:o,s:o,s:o}", "a", nf_cli_json_cstr(r->path_a),
                          "b", nf_cli_json_cstr(r->path_b), "b_kind", r->b ? "artifact" : "checkpoint", "same", same,
                          "summary", "objects_compared", (json_int_t)(r->npairs - nadded - nremoved - r->not_compared),
                          "objects_changed", (json_int_t)nchanged, "only_in_a", (json_int_t)nremoved, "only_in_b",
                          (json_int_t)nadded, "directory_keys", (json_int_t)r->nkeys, "objects", objects, "directory",
                          keys, "resources_not_compared", skipped);
    if (!j) return nf_cli_error(r->cli, NF_ERR_NOMEM, "out of memory");
    int rc = nf_cli_print_json(r->cli, j);
    json_decref(j);
    return rc;
}

/* ---------------------------------------------------------------- main */
static int diff(const nf_cli *cli, const diff_opts *o)
{
    diff_run r = {.cli = cli, .path_a = cli->positional[0], .path_b = cli->positional[1]};
    pthread_mutex_init(&r.lock, NULL);
    r.threads = nf_pool_threads(o->threads);
    r.kern = nf_stats_kernels_active();
    nf_error err;
    nf_status st = nf_artifact_open(r.path_a, NF_READ_PREAD, &r.a, &err);
    if (st == NF_OK) {
        if (classify(r.path_b) == PATH_ARTIFACT) st = nf_artifact_open(r.path_b, NF_READ_PREAD, &r.b, &err);
        else if ((st = nf_source_open(r.path_b, &r.src, &err)) == NF_OK)
            st = nf_dialects_scan(r.src, &r.dialects, &err);
    }
    if (st == NF_OK) st = make_pairs(&r, &err);
    if (st == NF_OK && r.b) st = diff_directory(&r, &err);
    if (st == NF_OK) st = run_phases(&r, &err);
    int rc;
    if (st != NF_OK) {
        rc = nf_cli_report(cli, &err);
    } else {
        size_t nchanged = 0, nadded = 0, nremoved = 0;
        for (size_t i = 0; i < r.npairs; i++) {
            unsigned c = r.pairs[i].changes;
            if (r.pairs[i].not_compared) r.not_compared++;
            else if (c & CH_ADDED) nadded++;
            else if (c & CH_REMOVED) nremoved++;
            else if (c) nchanged++;
        }
        bool same = nchanged + nadded + nremoved + r.nkeys == 0;
        rc = same ? NF_EXIT_OK : 1;
        int prc = NF_EXIT_OK;
        if (cli->verbosity < 0) prc = NF_EXIT_OK;
        else if (cli->json) prc = print_json(&r, nchanged, nadded, nremoved);
        else {
            print_human(&r, nchanged, nadded, nremoved);
            if (fflush(stdout) != 0 || ferror(stdout))
                prc = nf_cli_error(cli, NF_ERR_IO, "standard output: %s", strerror(errno));
        }
        if (prc != NF_EXIT_OK) rc = prc;
    }
    for (size_t i = 0; i < r.nkeys; i++) {
        free(r.keys[i].path);
        json_decref(r.keys[i].keys);
    }
    free(r.keys);
    for (size_t i = 0; i < r.npairs; i++) free(r.pairs[i].acc);
    free(r.pairs);
    free(r.job_pair);
    free(r.job_end);
    nf_artifact_close(r.a);
    nf_artifact_close(r.b);
    nf_dialects_free(r.dialects);
    nf_source_close(r.src);
    pthread_mutex_destroy(&r.lock);
    return rc;
}

int main(int argc, char **argv)
{
    nf_cli cli;
    diff_opts o = {0};
    bool done = false;
    int rc = nf_cli_parse(&cli, &program, argc, argv, &o, &done);
    if (rc == NF_EXIT_OK && !done && cli.npositional != 2)
        rc = nf_cli_usage(&cli,
                          "two inputs are compared: A (an artifact) and B (an artifact or a checkpoint), %d given",
                          cli.npositional);
    if (rc == NF_EXIT_OK && !done) rc = diff(&cli, &o);
    nf_cli_free(&cli);
    return rc;
}
