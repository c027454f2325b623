/* ninfer-bench: micro-benchmarks of libninfer's kernels, and the timing/RSS helper of the
 * end-to-end part (bench/run.sh).  `make bench` only, never part of `make test`: nothing here
 * asserts a time (bench/README.md, "Targets").
 *
 *   ninfer-bench [--rows N] [--cols K] [--threads T] [--min-time SECONDS] [--chunk-rows R]
 *                [--filter SUBSTR[,SUBSTR...]] [--rows-only] [--passes P [--input T]]
 *       Prints the kernel table (--filter: only kernels whose label contains one of the
 *       substrings, or is exactly the one written =LABEL; --rows-only: the rows alone, memcpy
 *       still measured as the reference; --passes: counting mode, below).  One [N,K] matrix of
 *       pseudo-normal weights (rare outliers, like ninfer-gen-checkpoint's) is held as F32, BF16 and F16 source bytes; every kernel is timed
 *       on 1 thread and on T threads (default: every online CPU), each thread on its own rows,
 *       cut into chunks of R rows (default 64 = the converter's 2^18 values at K = 4096) whose
 *       output stays in a per-thread buffer, as ninfer-convert and ninfer-dequant do.  The
 *       reference is memcpy of the whole BF16 buffer (N*K*2 bytes) into a second buffer.
 *
 *   ninfer-bench --print-simd
 *       Prints the grouped_absmax kernel variant in use (nf_simd_name; NINFER_SIMD forces one).
 *
 *   ninfer-bench exec [--repeat R] [--log FILE] [--ratio] --label L --bytes B --weights W -- PROG ARGS...
 *                     [--next --label L2 --bytes B2 --weights W2 -- PROG2 ARGS...]...
 *       Runs the commands in turn (A B A B ...), R times each (fork/exec, output to FILE), and
 *       prints one end-to-end row per command: the median wall time and the range, B/median in
 *       MB/s, W/median in weights/s and the peak RSS of its runs (wait4's ru_maxrss, the
 *       largest); --ratio (two commands): the median and range of the pairwise ratios A/B.
 *
 * Timing: clock_gettime(CLOCK_MONOTONIC) around the whole parallel run (thread start and join
 * included).  A calibration run sizes the work (rows of the matrix, then whole passes) so that a
 * run lasts at least --min-time (0.3 s); the figure is the best of 3 runs of that size.
 * MB = 10^6 bytes; Mw/s = 10^6 weights per second.
 *
 * Counting mode (--passes P, for bench/insns.sh): no memcpy, no timing, one thread; each selected
 * row (--input: only those of that input column, e.g. BF16) runs exactly P passes over its whole
 * matrix and prints "label TAB input TAB weights TAB bytes" of one pass.  The instructions of
 * two runs that differ only in P differ by the extra passes' own: the matrix, the objects, every
 * setup and the work done once on first use (tables, CPU detection) are the same in both. */
#define _DEFAULT_SOURCE /* wait4: the peak RSS of each child */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ninfer/ninfer.h>

#define MAX_THREADS 64

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, const nf_error *err)
{
    fprintf(stderr, "ninfer-bench: error: %s%s%s\n", what, err ? ": " : "", err ? err->message : "");
    exit(1);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) die("out of memory", NULL);
    return p;
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* ---------------------------------------------------------------- settings and data */
typedef struct settings {
    uint64_t rows, cols, chunk_rows;
    unsigned threads;
    double min_time;
    const char *filter; /* comma-separated label substrings; NULL: every kernel */
    bool rows_only;     /* print the kernel rows only (no preamble, header or memcpy row) */
    unsigned passes;    /* --passes: each row runs exactly this many passes, untimed (counting mode) */
    const char *input;  /* --input: counting mode runs only the rows of this input column */
} settings;

static settings S = {32768, 4096, 64, 0, 0.3, NULL, false, 0, NULL};

/* Does the label match --filter?  An entry matches a label that contains it, or, written
 * =LABEL, only the label that is exactly LABEL. */
static bool selected(const char *label)
{
    if (!S.filter) return true;
    for (const char *f = S.filter; *f;) {
        size_t n = strcspn(f, ",");
        if (*f == '=') {
            if (n - 1 == strlen(label) && strncmp(label, f + 1, n - 1) == 0) return true;
        } else
            for (const char *l = label; n && *l; l++)
                if (strncmp(l, f, n) == 0) return true;
        f += n;
        if (*f == ',') f++;
    }
    return false;
}

/* The matrix as source bytes (little-endian, row-major). */
static uint8_t *src_f32, *src_bf16, *src_f16;
static float *importance;

typedef struct gen_job {
    uint64_t r0, r1;
} gen_job;

static void *gen_main(void *p)
{
    const gen_job *j = p;
    float sigma = 1.0f / sqrtf((float)S.cols);
    for (uint64_t r = j->r0; r < j->r1; r++) {
        uint64_t s = 0x5EED0000ull + r * 0x100000001B3ull;
        for (uint64_t c = 0; c < S.cols; c++) {
            uint64_t z = splitmix(&s);
            /* Irwin-Hall(3) of 16-bit uniforms: mean 1.5, sd 0.5 -> about N(0, sigma). */
            float u = ((float)(z & 0xFFFF) + (float)((z >> 16) & 0xFFFF) + (float)((z >> 32) & 0xFFFF)) *
                          (1.0f / 65536.0f) -
                      1.5f;
            float v = 2.0f * u * sigma;
            if ((z >> 54) == 0) v *= 8.0f; /* one value in 1024 is an outlier */
            uint64_t i = r * S.cols + c;
            uint32_t w32 = nf_f32_bits(v);
            uint16_t b = nf_f32_to_bf16(v), h = nf_f32_to_f16(v);
            for (unsigned k = 0; k < 4; k++) src_f32[4 * i + k] = (uint8_t)(w32 >> (8 * k));
            src_bf16[2 * i] = (uint8_t)b, src_bf16[2 * i + 1] = (uint8_t)(b >> 8);
            src_f16[2 * i] = (uint8_t)h, src_f16[2 * i + 1] = (uint8_t)(h >> 8);
        }
    }
    return NULL;
}

static void generate(void)
{
    uint64_t e = S.rows * S.cols;
    src_f32 = xmalloc((size_t)(e * 4));
    src_bf16 = xmalloc((size_t)(e * 2));
    src_f16 = xmalloc((size_t)(e * 2));
    gen_job jobs[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    for (unsigned t = 0; t < S.threads; t++) {
        jobs[t] = (gen_job){S.rows * t / S.threads, S.rows * (t + 1) / S.threads};
        if (pthread_create(&th[t], NULL, gen_main, &jobs[t]) != 0) die("pthread_create", NULL);
    }
    for (unsigned t = 0; t < S.threads; t++) pthread_join(th[t], NULL);
    importance = xmalloc((size_t)S.cols * sizeof *importance);
    uint64_t s = 42;
    for (uint64_t c = 0; c < S.cols; c++) importance[c] = 0.25f + (float)(splitmix(&s) >> 40) / 16777216.0f;
}

/* ---------------------------------------------------------------- encoded objects */
/* One encoded tensor of the benchmark's shape, held as `pieces` standalone objects of
 * rows/pieces rows each (one per thread), so that nf_layout_check, which scans a whole object,
 * can be split across threads too. */
typedef struct object {
    const nf_format *fmt;
    unsigned pieces;
    uint64_t piece_rows;
    nf_geometry g; /* geometry of one piece (all pieces have the same shape) */
    uint8_t *bytes[MAX_THREADS];
    nf_memory_source mem[MAX_THREADS];
    nf_byte_reader reader[MAX_THREADS];
} object;

typedef struct sink {
    uint8_t *out;
    uint64_t size;
} sink;

static nf_status sink_write(void *ctx, uint64_t offset, const void *buf, size_t len, nf_error *err)
{
    sink *s = ctx;
    if (offset > s->size || len > s->size - offset)
        return nf_error_set(err, NF_ERR_USAGE, "write past the end of the object");
    memcpy(s->out + offset, buf, len);
    return NF_OK;
}

/* Offsets of the binary16 d / dmin fields in ggml's k-quant blocks (ggml-common.h); the other
 * bytes are random.  Fixed sane scales keep the values finite and normal. */
static void ggml_block_scales(nf_format_id id, size_t *d, size_t *dmin)
{
    *d = *dmin = SIZE_MAX;
    switch (id) {
    case NF_FMT_GGUF_Q2_K: *d = 80, *dmin = 82; break;
    case NF_FMT_GGUF_Q3_K: *d = 108; break;
    case NF_FMT_GGUF_Q4_K: *d = 0, *dmin = 2; break;
    case NF_FMT_GGUF_Q5_K: *d = 0, *dmin = 2; break;
    case NF_FMT_GGUF_Q6_K: *d = 208; break;
    default: break;
    }
}

/* Fill the words of rows [r0, r0 + w->rows) of the matrix (r0 is a global row). */
static nf_status make_words(const nf_format *f, const nf_geometry *g, uint64_t r0, nf_words *w, nf_error *err)
{
    uint64_t k = S.cols, n = w->rows;
    uint64_t s = 0xB10Cull ^ (r0 * 0x9E3779B97F4A7C15ull);
    nf_src_rows bf =
        {.name = "bench", .type = NF_SRC_BF16, .data = src_bf16 + r0 * k * 2, .first_row = r0, .rows = n, .cols = k};
    switch (f->category) {
    case NF_CAT_DIRECT:
        if (f->id == NF_FMT_BF16) return nf_cast_direct_rows(f, &bf, w, err);
        if (f->id == NF_FMT_FP32) {
            nf_src_rows src = {.name = "bench",
                               .type = NF_SRC_F32,
                               .data = src_f32 + r0 * k * 4,
                               .first_row = r0,
                               .rows = n,
                               .cols = k};
            return nf_cast_direct_rows(f, &src, w, err);
        }
        for (uint64_t i = 0; i < n * k; i++) w->w32[i] = (uint32_t)splitmix(&s); /* int32: any word */
        return NF_OK;
    case NF_CAT_GROUPED:
        if (f->id != NF_FMT_Q2_G64_FP16 && f->id != NF_FMT_T2_G128_FP16) return nf_grouped_absmax_rows(f, &bf, w, err);
        /* q2 / t2 take trained codes (import_encoded): random legal codes, positive scales. */
        for (uint64_t i = 0; i < n * k; i++) {
            int span = f->code_max - f->code_min + 1, q;
            do q = f->code_min + (int)(splitmix(&s) % (uint64_t)span);
            while (!nf_grouped_code_valid(f, q));
            w->codes[i] = (int8_t)q;
        }
        for (uint64_t i = 0; i < n * g->logical_groups; i++)
            w->scales[i] = nf_f32_to_f16(0.001f * (1.0f + (float)(splitmix(&s) >> 40) / 16777216.0f));
        return NF_OK;
    case NF_CAT_NVFP4:
        for (uint64_t i = 0; i < n * k; i++) w->codes8[i] = (uint8_t)(splitmix(&s) & 15);
        for (uint64_t i = 0; i < n * k / 16; i++) w->scales8[i] = (uint8_t)(0x20 + splitmix(&s) % 0x40);
        w->divisors[0] = nf_f32_bits(1.5f);
        return NF_OK;
    case NF_CAT_FP8_ROW: return nf_fp8_row_maxabs_rows(f, &bf, w, err);
    case NF_CAT_GGUF: {
        size_t d, dmin;
        ggml_block_scales(f->id, &d, &dmin);
        if (d == SIZE_MAX) return nf_error_set(err, NF_ERR_USAGE, "no block generator for %s", f->name);
        uint64_t bytes = n * g->row_bytes;
        for (uint64_t i = 0; i < bytes; i++) w->blocks[i] = (uint8_t)splitmix(&s);
        for (uint64_t b = 0; b < bytes; b += f->block_bytes) {
            w->blocks[b + d] = 0x00, w->blocks[b + d + 1] = 0x20;                             /* 2^-7 */
            if (dmin != SIZE_MAX) w->blocks[b + dmin] = 0x00, w->blocks[b + dmin + 1] = 0x1C; /* 2^-8 */
        }
        return NF_OK;
    }
    }
    return nf_error_set(err, NF_ERR_USAGE, "no word generator for %s", f->name);
}

typedef struct build_job {
    object *o;
    unsigned piece;
    nf_error err;
    nf_status st;
} build_job;

static void *build_main(void *p)
{
    build_job *j = p;
    object *o = j->o;
    const nf_geometry *g = &o->g;
    uint64_t chunk = o->fmt->category == NF_CAT_NVFP4 ? 128 : S.chunk_rows;
    nf_words w;
    j->st = nf_words_alloc(&w, g, chunk, &j->err);
    if (j->st != NF_OK) return NULL;
    sink out = {o->bytes[j->piece], g->bytes};
    for (uint64_t r = 0; r < o->piece_rows && j->st == NF_OK; r += chunk) {
        w.rows = min_u64(chunk, o->piece_rows - r);
        j->st = make_words(o->fmt, g, j->piece * o->piece_rows + r, &w, &j->err);
        if (j->st == NF_OK) j->st = nf_layout_encode_rows(g, &w, r, false, sink_write, &out, &j->err);
    }
    if (j->st == NF_OK) j->st = nf_layout_encode_tail(g, &w, false, sink_write, &out, &j->err);
    nf_words_free(&w);
    return NULL;
}

static object *object_build(const char *format_name)
{
    nf_error err = {0};
    object *o = calloc(1, sizeof *o);
    if (!o) die("out of memory", NULL);
    o->fmt = nf_format_lookup(format_name);
    if (!o->fmt) die(format_name, NULL);
    o->pieces = S.threads;
    o->piece_rows = S.rows / S.threads;
    uint64_t shape[2] = {o->piece_rows, S.cols};
    if (nf_geometry_init(&o->g, nf_layout_default_for(o->fmt), o->fmt, 2, shape, 1, &err) != NF_OK)
        die(format_name, &err);
    build_job jobs[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    for (unsigned p = 0; p < o->pieces; p++) {
        o->bytes[p] = xmalloc((size_t)o->g.bytes);
        nf_byte_reader_memory(&o->reader[p], &o->mem[p], o->bytes[p], o->g.bytes);
        jobs[p] = (build_job){o, p, {0}, NF_OK};
        if (pthread_create(&th[p], NULL, build_main, &jobs[p]) != 0) die("pthread_create", NULL);
    }
    for (unsigned p = 0; p < o->pieces; p++) pthread_join(th[p], NULL);
    for (unsigned p = 0; p < o->pieces; p++)
        if (jobs[p].st != NF_OK) die(format_name, &jobs[p].err);
    return o;
}

static void object_free(object *o)
{
    for (unsigned p = 0; p < o->pieces; p++) free(o->bytes[p]);
    free(o);
}

/* ---------------------------------------------------------------- grouped words */
/* The logical words of the whole matrix in one grouped format, as the encoders leave them in
 * memory before the layout encode: q4-q8 from grouped_absmax, q2/t2 random legal codes
 * (make_words). */
typedef struct wordset {
    const nf_format *fmt;
    nf_geometry g; /* [rows, cols] */
    nf_words w;
} wordset;

typedef struct words_job {
    wordset *ws;
    uint64_t r0, r1;
    nf_error err;
    nf_status st;
} words_job;

/* rows [r, r + n) of the words, as a words struct of their own */
static nf_words words_rows(const wordset *ws, uint64_t r, uint64_t n)
{
    nf_words v = ws->w;
    v.rows = n;
    v.codes += r * S.cols;
    v.scales += r * ws->g.logical_groups;
    return v;
}

static void *words_main(void *p)
{
    words_job *j = p;
    for (uint64_t r = j->r0; r < j->r1 && j->st == NF_OK; r += S.chunk_rows) {
        nf_words v = words_rows(j->ws, r, min_u64(S.chunk_rows, j->r1 - r));
        j->st = make_words(j->ws->fmt, &j->ws->g, r, &v, &j->err);
    }
    return NULL;
}

static wordset *wordset_build(const char *format_name)
{
    nf_error err = {0};
    wordset *ws = calloc(1, sizeof *ws);
    if (!ws) die("out of memory", NULL);
    ws->fmt = nf_format_lookup(format_name);
    if (!ws->fmt) die(format_name, NULL);
    uint64_t shape[2] = {S.rows, S.cols};
    if (nf_geometry_init(&ws->g, nf_layout_default_for(ws->fmt), ws->fmt, 2, shape, 1, &err) != NF_OK ||
        nf_words_alloc(&ws->w, &ws->g, S.rows, &err) != NF_OK)
        die(format_name, &err);
    words_job jobs[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    uint64_t chunks = S.rows / S.chunk_rows;
    for (unsigned t = 0; t < S.threads; t++) {
        jobs[t] = (words_job){ws,
                              chunks * t / S.threads * S.chunk_rows,
                              chunks * (t + 1) / S.threads * S.chunk_rows,
                              {0},
                              NF_OK};
        if (pthread_create(&th[t], NULL, words_main, &jobs[t]) != 0) die("pthread_create", NULL);
    }
    for (unsigned t = 0; t < S.threads; t++) pthread_join(th[t], NULL);
    for (unsigned t = 0; t < S.threads; t++)
        if (jobs[t].st != NF_OK) die(format_name, &jobs[t].err);
    return ws;
}

static void wordset_free(wordset *ws)
{
    nf_words_free(&ws->w);
    free(ws);
}

/* ---------------------------------------------------------------- kernels */
typedef struct tstate {
    nf_words w;
    bool have_words;
    float *f32;
    char hex[33];
    uint8_t *enc; /* encode rows: the encoded bytes of one chunk */
    uint64_t enc_size, enc_used;
    nf_errstats *stats; /* measured encoders */
    nf_error err;
    bool failed;
} tstate;

typedef struct kernel kernel;
typedef void (*kernel_fn)(const kernel *k, tstate *ts, uint64_t u0, uint64_t u1);

struct kernel {
    char label[56];
    char input[24];
    kernel_fn run;
    /* Work: `units` units, handed out in multiples of `grain`; a `whole` kernel always does all
     * of them (nf_layout_check scans whole objects: its units are the pieces). */
    uint64_t units, grain;
    bool whole;
    double bytes_per_unit, weights_per_unit; /* weights 0: not a per-weight kernel */
    /* encoders */
    nf_method_id method;
    const nf_format *fmt;
    const nf_method_params *params;
    nf_src_type src_type;
    const uint8_t *src;
    bool measured;       /* nf_method_encode_rows_measured: the report's statistics as well */
    uint32_t matrix_max; /* nvfp4_quantize: the matrix's largest magnitude, found once (the plan's
                            first pass), given to every chunk */
    /* dequant / check */
    const object *obj;
    /* GGUF source values */
    const nf_source *source;
    const nf_source_tensor *tensor;
    /* check / encode of grouped words */
    const wordset *words;
    /* memcpy */
    uint8_t *dst;
};

static void run_memcpy(const kernel *k, tstate *ts, uint64_t u0, uint64_t u1)
{
    (void)ts;
    memcpy(k->dst + u0, k->src + u0, (size_t)(u1 - u0));
}

static void run_xxh3(const kernel *k, tstate *ts, uint64_t u0, uint64_t u1)
{
    nf_xxh3_128_hex(k->src + u0, (size_t)(u1 - u0), ts->hex);
}

static void run_encode(const kernel *k, tstate *ts, uint64_t u0, uint64_t u1)
{
    size_t esize = nf_src_type_size(k->src_type);
    for (uint64_t r = u0; r < u1 && !ts->failed; r += k->grain) {
        uint64_t n = min_u64(k->grain, u1 - r);
        nf_src_rows src = {.name = k->label,
                           .type = k->src_type,
                           .data = k->src + (size_t)(r * S.cols) * esize,
                           .first_row = r,
                           .rows = n,
                           .cols = S.cols};
        src.matrix_max = k->matrix_max;
        src.has_matrix_max = k->method == NF_METHOD_NVFP4_QUANTIZE || k->method == NF_METHOD_NVFP4_SEARCH;
        ts->w.rows = n;
        nf_errstats *st = k->measured ? ts->stats : NULL;
        if (nf_method_encode_rows_measured(k->method, k->fmt, k->params, &src, &ts->w, st, &ts->err) != NF_OK)
            ts->failed = true;
    }
}

/* nf_layout_decode_rows_f32 from the in-memory object into the thread's f32 chunk: what
 * ninfer-dequant does per chunk of f32 output (the encoded bytes straight to values), minus the
 * output file. */
static void run_dequant(const kernel *k, tstate *ts, uint64_t u0, uint64_t u1)
{
    const object *o = k->obj;
    for (uint64_t r = u0; r < u1 && !ts->failed; r += k->grain) {
        uint64_t n = min_u64(k->grain, u1 - r);
        unsigned p = (unsigned)(r / o->piece_rows);
        uint64_t lr = r % o->piece_rows; /* grain divides piece_rows: [lr, lr+n) is in piece p */
        if (nf_layout_decode_rows_f32(&o->g, &o->reader[p], lr, lr + n, ts->f32, &ts->err) != NF_OK) ts->failed = true;
    }
}

/* nf_source_read_f32 of a GGUF tensor held in memory: ggml's to_float as the converter reads a
 * block tensor's values (chunks of rows into the thread's f32 buffer). */
static void run_source_values(const kernel *k, tstate *ts, uint64_t u0, uint64_t u1)
{
    for (uint64_t r = u0; r < u1 && !ts->failed; r += k->grain) {
        uint64_t n = min_u64(k->grain, u1 - r);
        if (nf_source_read_f32(k->source, k->tensor, r, r + n, ts->f32, (size_t)(n * S.cols), &ts->err) != NF_OK)
            ts->failed = true;
    }
}

/* nf_layout_check of whole pieces: what ninfer-verify's word level does per object. */
static void run_check(const kernel *k, tstate *ts, uint64_t u0, uint64_t u1)
{
    const object *o = k->obj;
    for (uint64_t p = u0; p < u1 && !ts->failed; p++) {
        uint64_t problems = 0;
        if (nf_layout_check(&o->g, &o->reader[p], NULL, NULL, 0, &problems, &ts->err) != NF_OK) ts->failed = true;
        else if (problems) {
            nf_error_set(&ts->err, NF_ERR_INVALID, "%" PRIu64 " word problems in a valid object", problems);
            ts->failed = true;
        }
    }
}

/* The writer of the encode rows: the chunk's bytes, plane after plane, into the thread's buffer
 * (a copy out, as the artifact writer's into its file). */
static nf_status chunk_write(void *ctx, uint64_t offset, const void *buf, size_t len, nf_error *err)
{
    (void)offset;
    tstate *ts = ctx;
    if (len > ts->enc_size - ts->enc_used) return nf_error_set(err, NF_ERR_USAGE, "chunk buffer too small");
    memcpy(ts->enc + ts->enc_used, buf, len);
    ts->enc_used += len;
    return NF_OK;
}

/* nf_layout_encode_rows of the words chunk by chunk, checked: what ninfer-convert does with the
 * words of each chunk after its method. */
static void run_words_encode(const kernel *k, tstate *ts, uint64_t u0, uint64_t u1)
{
    for (uint64_t r = u0; r < u1 && !ts->failed; r += k->grain) {
        nf_words v = words_rows(k->words, r, min_u64(k->grain, u1 - r));
        ts->enc_used = 0;
        if (nf_layout_encode_rows(&k->words->g, &v, r, false, chunk_write, ts, &ts->err) != NF_OK) ts->failed = true;
    }
}

/* nf_words_check of the words chunk by chunk (the check an encode makes unless unchecked). */
static void run_words_check(const kernel *k, tstate *ts, uint64_t u0, uint64_t u1)
{
    for (uint64_t r = u0; r < u1 && !ts->failed; r += k->grain) {
        nf_words v = words_rows(k->words, r, min_u64(k->grain, u1 - r));
        if (nf_words_check(&k->words->g, &v, r, &ts->err) != NF_OK) ts->failed = true;
    }
}

/* ---------------------------------------------------------------- timing */
typedef struct job {
    const kernel *k;
    tstate *ts;
    uint64_t u0, u1;
    unsigned passes;
} job;

static void *job_main(void *p)
{
    job *j = p;
    for (unsigned i = 0; i < j->passes && !j->ts->failed; i++) j->k->run(j->k, j->ts, j->u0, j->u1);
    return NULL;
}

/* One run: `n` units split evenly over T threads (thread 0 is the caller), `passes` times. */
static double timed_run(const kernel *k, tstate *ts, unsigned T, uint64_t n, unsigned passes)
{
    job jobs[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    uint64_t grains = n / k->grain;
    for (unsigned t = 0; t < T; t++)
        jobs[t] = (job){k, &ts[t], grains * t / T * k->grain, grains * (t + 1) / T * k->grain, passes};
    double t0 = now();
    for (unsigned t = 1; t < T; t++)
        if (pthread_create(&th[t], NULL, job_main, &jobs[t]) != 0) die("pthread_create", NULL);
    job_main(&jobs[0]);
    for (unsigned t = 1; t < T; t++) pthread_join(th[t], NULL);
    double t1 = now();
    for (unsigned t = 0; t < T; t++)
        if (ts[t].failed) die(k->label, &ts[t].err);
    return t1 - t0;
}

typedef struct result {
    double mbps, mwps; /* best of 3 */
    double seconds;    /* of the best run */
} result;

static result measure(const kernel *k, tstate *ts, unsigned T)
{
    uint64_t step = k->whole ? k->units : k->grain * T;
    uint64_t full = k->units / step * step;
    uint64_t n = k->whole ? k->units : step;
    unsigned passes = 1;
    double t = timed_run(k, ts, T, n, passes); /* warm-up and first estimate */
    for (int i = 0; i < 10 && t < S.min_time; i++) {
        double per_unit = t / ((double)n * passes), want = 1.15 * S.min_time / (per_unit > 0 ? per_unit : 1e-12);
        if (!k->whole && want <= (double)full) {
            uint64_t m = ((uint64_t)want + step - 1) / step * step;
            n = m > n ? m : n + step;
            if (n > full) n = full;
            passes = 1;
        } else {
            n = full;
            double p = ceil(want / (double)n);
            unsigned np = p > 1e6 ? 1000000u : (unsigned)p;
            passes = np > passes ? np : passes * 2;
        }
        t = timed_run(k, ts, T, n, passes);
    }
    double best = t; /* the last calibration run is the first of the three */
    for (int i = 0; i < 2; i++) {
        double u = timed_run(k, ts, T, n, passes);
        if (u < best) best = u;
    }
    double units = (double)n * passes;
    return (result){units * k->bytes_per_unit / best / 1e6, units * k->weights_per_unit / best / 1e6, best};
}

static double memcpy_mbps[2]; /* 1 thread, T threads */

static void print_header(void)
{
    char tt[32];
    snprintf(tt, sizeof tt, "%u threads", S.threads);
    printf("%-44s %-12s | %-31s | %-31s |\n", "", "", "1 thread", tt);
    printf("%-44s %-12s | %9s %9s %11s | %9s %9s %11s | %s\n", "kernel", "input", "in MB/s", "Mw/s", "/memcpy",
           "in MB/s", "Mw/s", "/memcpy", "scaling");
}

/* The units a pass of kernel k does on one thread: all of them, in whole grains. */
static uint64_t pass_units(const kernel *k) { return k->whole ? k->units : k->units / k->grain * k->grain; }

/* Does the row run?  Always, but in counting mode with --input, only for that input. */
static bool counted(const kernel *k) { return !S.passes || !S.input || strcmp(k->input, S.input) == 0; }

static void print_row(const kernel *k, result r1, result rt)
{
    if (!counted(k)) return;
    if (S.passes) { /* counting mode: what one pass reads (bench/insns.sh divides by it) */
        printf("%s\t%s\t%.0f\t%.0f\n", k->label, k->input, (double)pass_units(k) * k->weights_per_unit,
               (double)pass_units(k) * k->bytes_per_unit);
        fflush(stdout);
        return;
    }
    char w1[32] = "-", wt[32] = "-";
    if (k->weights_per_unit > 0) {
        snprintf(w1, sizeof w1, "%.1f", r1.mwps);
        snprintf(wt, sizeof wt, "%.1f", rt.mwps);
    }
    printf("%-44s %-12s | %9.1f %9s %11.3f | %9.1f %9s %11.3f | %6.2fx\n", k->label, k->input, r1.mbps, w1,
           r1.mbps / memcpy_mbps[0], rt.mbps, wt, rt.mbps / memcpy_mbps[1], rt.mbps / r1.mbps);
    fflush(stdout);
}

/* Per-thread scratch for kernel k (words of one chunk, its binary32 values). */
static void scratch_init(const kernel *k, tstate *ts, const nf_geometry *g, bool values)
{
    nf_error err = {0};
    for (unsigned t = 0; t < S.threads; t++) {
        memset(&ts[t], 0, sizeof ts[t]);
        if (g) {
            if (nf_words_alloc(&ts[t].w, g, k->grain, &err) != NF_OK) die(k->label, &err);
            ts[t].have_words = true;
        }
        if (k->words && k->run == run_words_encode) {
            const nf_geometry *wg = &k->words->g;
            ts[t].enc_size = 0;
            for (uint32_t p = 0; p < wg->nplanes; p++) ts[t].enc_size += k->grain * wg->planes[p].row_bytes;
            ts[t].enc = xmalloc((size_t)ts[t].enc_size);
        }
        if (k->measured && !(ts[t].stats = nf_errstats_new())) die("out of memory", NULL);
        if (values) { /* on a cache line, as ninfer-dequant's chunk buffers */
            ts[t].f32 = aligned_alloc(64, (size_t)(k->grain * S.cols) * sizeof(float));
            if (!ts[t].f32) die("out of memory", NULL);
        }
    }
}

static void scratch_free(tstate *ts)
{
    for (unsigned t = 0; t < S.threads; t++) {
        if (ts[t].have_words) nf_words_free(&ts[t].w);
        nf_errstats_free(ts[t].stats);
        free(ts[t].f32);
        free(ts[t].enc);
    }
}

static void bench(const kernel *k, const nf_geometry *g, bool values, result *out1, result *outt)
{
    static tstate ts[MAX_THREADS];
    if (S.passes) { /* counting mode: exactly S.passes passes on one thread, nothing timed */
        if (out1) *out1 = (result){0};
        if (outt) *outt = (result){0};
        if (!counted(k)) return;
        scratch_init(k, ts, g, values);
        timed_run(k, ts, 1, pass_units(k), S.passes);
        scratch_free(ts);
        return;
    }
    scratch_init(k, ts, g, values);
    result r1 = measure(k, ts, 1), rt = S.threads > 1 ? measure(k, ts, S.threads) : r1;
    scratch_free(ts);
    if (out1) *out1 = r1;
    if (outt) *outt = rt;
}

static void bench_encode_as(const char *label, nf_method_id method, const char *format, nf_src_type type,
                            const nf_method_params *params, bool measured)
{
    nf_error err = {0};
    kernel k = {0};
    k.measured = measured;
    /* grouped_absmax runs the SIMD variant chosen at run time (ninfer/method.h nf_simd_name) */
    if (method == NF_METHOD_GROUPED_ABSMAX) snprintf(k.label, sizeof k.label, "%s [%s]", label, nf_simd_name());
    else snprintf(k.label, sizeof k.label, "%s", label);
    if (!selected(k.label)) return;
    snprintf(k.input, sizeof k.input, "%s", nf_src_type_name(type));
    k.run = run_encode;
    k.method = method;
    k.fmt = nf_format_lookup(format);
    if (!k.fmt) die(format, NULL);
    k.params = params;
    k.src_type = type;
    k.src = type == NF_SRC_F32 ? src_f32 : type == NF_SRC_F16 ? src_f16 : src_bf16;
    k.units = S.rows;
    k.grain = S.chunk_rows;
    k.bytes_per_unit = (double)(S.cols * nf_src_type_size(type));
    k.weights_per_unit = (double)S.cols;
    nf_geometry g;
    uint64_t shape[2] = {S.rows, S.cols};
    if (nf_geometry_init(&g, nf_layout_default_for(k.fmt), k.fmt, 2, shape, 1, &err) != NF_OK) die(format, &err);
    if (method == NF_METHOD_NVFP4_QUANTIZE || method == NF_METHOD_NVFP4_SEARCH) {
        nf_src_rows all = {.name = "bench", .type = type, .data = k.src, .rows = S.rows, .cols = S.cols};
        if (nf_nvfp4_quantize_max(&all, &k.matrix_max, &err) != NF_OK) die(label, &err);
    }
    result r1, rt;
    bench(&k, &g, false, &r1, &rt);
    print_row(&k, r1, rt);
}

static void bench_encode(const char *label, nf_method_id method, const char *format, nf_src_type type,
                         const nf_method_params *params)
{
    bench_encode_as(label, method, format, type, params, false);
}

static void bench_object(const object *o, bool check)
{
    kernel k = {0};
    snprintf(k.input, sizeof k.input, "%.0f MB", (double)o->g.bytes * o->pieces / 1e6);
    k.obj = o;
    k.weights_per_unit = (double)S.cols; /* per row */
    if (check) {
        snprintf(k.label, sizeof k.label, "verify words %s", o->fmt->name);
        k.run = run_check;
        k.units = o->pieces;
        k.grain = 1;
        k.whole = true;
        k.bytes_per_unit = (double)o->g.bytes;
        k.weights_per_unit = (double)(o->piece_rows * S.cols);
        result r1, rt;
        bench(&k, NULL, false, &r1, &rt);
        print_row(&k, r1, rt);
        return;
    }
    snprintf(k.label, sizeof k.label, "dequant %s", o->fmt->name);
    k.run = run_dequant;
    k.units = S.rows;
    k.grain = o->fmt->category == NF_CAT_NVFP4 ? 128 : S.chunk_rows;
    k.bytes_per_unit = (double)o->g.bytes / (double)o->piece_rows;
    result r1, rt;
    bench(&k, NULL, true, &r1, &rt); /* no words: the fused call needs none */
    print_row(&k, r1, rt);
}

/* A GGUF image in memory of one [rows, cols] tensor of ggml type `type` (values, bytes per block),
 * random blocks whose binary16 (or, Q8_K, binary32) scale fields at `scales` hold normal numbers,
 * as a quantizer's do; *len its size. */
static uint8_t *gguf_image(unsigned type, unsigned values, unsigned bytes, const int *scales, size_t *len)
{
    const char name[] = "w";
    const uint64_t row_bytes = S.cols / values * bytes, data = row_bytes * S.rows;
    size_t head = 4 + 4 + 8 + 8 + 8 + sizeof name - 1 + 4 + 16 + 4 + 8;
    head = (head + 31) / 32 * 32;
    uint8_t *b = xmalloc(head + (size_t)data);
    memset(b, 0, head);
    uint8_t *p = b;
#define PUT(v, n)                                                               \
    do {                                                                        \
        uint64_t v_ = (v);                                                      \
        for (unsigned i_ = 0; i_ < (n); i_++) *p++ = (uint8_t)(v_ >> (8 * i_)); \
    } while (0)
    memcpy(p, "GGUF", 4);
    p += 4;
    PUT(3, 4);
    PUT(1, 8); /* tensors */
    PUT(0, 8); /* metadata */
    PUT(sizeof name - 1, 8);
    memcpy(p, name, sizeof name - 1);
    p += sizeof name - 1;
    PUT(2, 4);
    PUT(S.cols, 8);
    PUT(S.rows, 8);
    PUT(type, 4);
    PUT(0, 8);
#undef PUT
    uint64_t st = 0x9E3779B97F4A7C15ull;
    uint8_t *d = b + head;
    for (uint64_t i = 0; i < data; i += 8) {
        uint64_t r = splitmix(&st);
        for (uint64_t j = i; j < i + 8 && j < data; j++, r >>= 8) d[j] = (uint8_t)r;
    }
    for (uint64_t blk = 0; blk < data / bytes; blk++)
        for (const int *o = scales; *o >= 0; o++) {
            uint8_t *f = d + blk * bytes + *o;
            if (type == 15) { /* Q8_K: binary32 d in [2^-10, 2^-9) */
                f[2] = (uint8_t)(f[2] | 0x80);
                f[3] = 0x3A;
            } else if (type == 39) { /* MXFP4: E8M0 2^-8..2^-1 */
                f[0] = (uint8_t)(119 + f[0] % 8);
            } else { /* binary16 in [2^-8, 2^-4) */
                f[1] = (uint8_t)(0x1C + f[1] % 16);
            }
        }
    *len = head + (size_t)data;
    return b;
}

/* source values TYPE: nf_source_read_f32 of a GGUF tensor of each ggml block type the converter
 * reads (docs/formats.md 8 and 8.5), grouped by block size for comparison (issue: the types read as
 * values run at least at the speed of the existing ones of the same block size). */
static void bench_gguf_values(void)
{
    static const int S0[] = {0, -1}, S02[] = {0, 2, -1}, S_Q2K[] = {80, 82, -1}, S_Q3K[] = {108, -1},
                     S_Q6K[] = {208, -1}, S_TQ1[] = {52, -1}, S_TQ2[] = {64, -1}, NONE[] = {-1};
    static const struct {
        const char *name;
        unsigned type, values, bytes;
        const int *scales;
    } T[] = {
        {"q4_0", 2, 32, 18, S0},       {"q5_0", 6, 32, 22, S0},       {"q8_0", 8, 32, 34, S0},
        {"iq4_nl", 20, 32, 18, S0},    {"q4_1", 3, 32, 20, S02},      {"q5_1", 7, 32, 24, S02},
        {"q8_1", 9, 32, 36, S0},       {"mxfp4", 39, 32, 17, S0},     {"q2_0", 42, 64, 18, S0},
        {"nvfp4", 40, 64, 36, NONE},   {"q1_0", 41, 128, 18, S0},     {"q2_k", 10, 256, 84, S_Q2K},
        {"q3_k", 11, 256, 110, S_Q3K}, {"q4_k", 12, 256, 144, S02},   {"q6_k", 14, 256, 210, S_Q6K},
        {"iq4_xs", 23, 256, 136, S0},  {"iq2_xxs", 16, 256, 66, S0},  {"q8_k", 15, 256, 292, S0},
        {"tq1_0", 34, 256, 54, S_TQ1}, {"tq2_0", 35, 256, 66, S_TQ2},
    };
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) {
        kernel k = {0};
        snprintf(k.label, sizeof k.label, "source values %s (%u per block)", T[i].name, T[i].values);
        if (!selected(k.label)) continue;
        size_t len;
        uint8_t *img = gguf_image(T[i].type, T[i].values, T[i].bytes, T[i].scales, &len);
        nf_source *src = NULL;
        nf_error err = {0};
        if (nf_source_open_memory(img, len, NF_SOURCE_AUTO, k.label, &src, &err) != NF_OK) die(k.label, &err);
        snprintf(k.input, sizeof k.input, "%.0f MB", (double)(S.cols / T[i].values * T[i].bytes * S.rows) / 1e6);
        k.run = run_source_values;
        k.source = src;
        k.tensor = nf_source_tensor_at(src, 0);
        k.units = S.rows;
        k.grain = S.chunk_rows;
        k.bytes_per_unit = (double)(S.cols / T[i].values * T[i].bytes);
        k.weights_per_unit = (double)S.cols;
        result r1, rt;
        bench(&k, NULL, true, &r1, &rt);
        print_row(&k, r1, rt);
        nf_source_close(src);
        free(img);
    }
}

/* check FORMAT / encode FORMAT: the words of the whole matrix, in chunks of --chunk-rows. */
static void bench_words(const wordset *ws, bool encode)
{
    kernel k = {0};
    double words_per_row = (double)S.cols + 2.0 * (double)ws->g.logical_groups; /* codes + binary16 scales */
    snprintf(k.label, sizeof k.label, "%s %s", encode ? "encode" : "check", ws->fmt->name);
    snprintf(k.input, sizeof k.input, "%.0f MB", words_per_row * (double)S.rows / 1e6);
    k.run = encode ? run_words_encode : run_words_check;
    k.words = ws;
    k.units = S.rows;
    k.grain = S.chunk_rows;
    k.bytes_per_unit = words_per_row;
    k.weights_per_unit = (double)S.cols;
    result r1, rt;
    bench(&k, NULL, false, &r1, &rt);
    print_row(&k, r1, rt);
}

static void machine_line(void)
{
    char model[256] = "unknown", line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "model name", 10) == 0) {
            const char *c = strchr(line, ':');
            if (c) {
                snprintf(model, sizeof model, "%s", c + 2);
                model[strcspn(model, "\n")] = 0;
            }
            break;
        }
    if (f) fclose(f);
    unsigned long long mem_kb = 0;
    f = fopen("/proc/meminfo", "r");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemTotal: %llu kB", &mem_kb) == 1) break;
    if (f) fclose(f);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    char date[64] = "";
    time_t tnow = time(NULL);
    struct tm tm;
    if (gmtime_r(&tnow, &tm)) strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", &tm);
    printf("machine: %s, %ld CPUs online, %.1f GiB RAM; %s\n", model, cpus, (double)mem_kb / 1048576.0, date);
}

static void loadavg_line(const char *when)
{
    char buf[128] = "?";
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (!fgets(buf, sizeof buf, f)) snprintf(buf, sizeof buf, "?");
        fclose(f);
    }
    buf[strcspn(buf, "\n")] = 0;
    printf("load average %s: %s\n", when, buf);
}

static uint64_t parse_u64(const char *s, const char *opt)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end) {
        fprintf(stderr, "ninfer-bench: error: %s needs a number, got '%s'\n", opt, s);
        exit(2);
    }
    return v;
}

static void preamble(uint64_t e)
{
    machine_line();
    printf("matrix [%" PRIu64 ",%" PRIu64 "] = %.1f M weights (BF16 %.0f MiB, F32 %.0f MiB); chunks of %" PRIu64
           " rows; %u threads; best of 3 runs of >= %.2f s\n",
           S.rows, S.cols, (double)e / 1e6, (double)e * 2 / 1048576.0, (double)e * 4 / 1048576.0, S.chunk_rows,
           S.threads, S.min_time);
    printf("in MB/s: bytes read per second (source rows for encoders, the encoded object for dequant/verify, the\n"
           "buffer for xxh3; memcpy: bytes copied), MB = 10^6 B; Mw/s: 10^6 weights/s; /memcpy: in MB/s over memcpy's\n"
           "at the same thread count; scaling: %u-thread over 1-thread throughput\n",
           S.threads);
    printf("grouped_absmax kernel variant: %s (NINFER_SIMD=scalar, avx2, avx512 or neon, as the CPU has them, asks "
           "for another)\n",
           nf_simd_name());
    loadavg_line("at start");
    fflush(stdout);
}

static void kernels(uint64_t e)
{
    /* memcpy: the physical reference (not in counting mode, whose rows have no /memcpy column) */
    kernel mc = {0};
    snprintf(mc.label, sizeof mc.label, "memcpy");
    snprintf(mc.input, sizeof mc.input, "%.0f MiB", (double)e * 2 / 1048576.0);
    mc.run = run_memcpy;
    mc.src = src_bf16;
    mc.dst = xmalloc((size_t)(e * 2));
    memset(mc.dst, 0, (size_t)(e * 2));
    mc.units = e * 2;
    mc.grain = 1 << 16;
    mc.bytes_per_unit = 1;
    result r1, rt;
    memcpy_mbps[0] = memcpy_mbps[1] = 1;
    if (!S.passes) {
        bench(&mc, NULL, false, &r1, &rt);
        memcpy_mbps[0] = r1.mbps;
        memcpy_mbps[1] = rt.mbps;
    }
    free(mc.dst);
    if (!S.rows_only) {
        print_header();
        print_row(&mc, r1, rt);
    }

    kernel xx = mc;
    snprintf(xx.label, sizeof xx.label, "xxh3-128 (nf_xxh3_128_hex)");
    xx.run = run_xxh3;
    xx.dst = NULL;
    if (selected(xx.label)) {
        bench(&xx, NULL, false, &r1, &rt);
        print_row(&xx, r1, rt);
    }

    bench_encode("cast_direct -> bf16", NF_METHOD_CAST_DIRECT, "bf16", NF_SRC_F32, NULL);
    bench_encode("cast_direct -> bf16", NF_METHOD_CAST_DIRECT, "bf16", NF_SRC_BF16, NULL);
    static const char *const grouped[] = {"q4_g64_fp16", "q5_g64_fp16", "q6_g64_fp16", "q8_g32_fp16"};
    static const nf_src_type types[] = {NF_SRC_BF16, NF_SRC_F16, NF_SRC_F32};
    for (size_t f = 0; f < sizeof grouped / sizeof grouped[0]; f++)
        for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
            char label[64];
            snprintf(label, sizeof label, "grouped_absmax -> %s", grouped[f]);
            bench_encode(label, NF_METHOD_GROUPED_ABSMAX, grouped[f], types[t], NULL);
        }
    /* the same measuring as it encodes, for the conversion report (what the report costs) */
    for (size_t f = 0; f < sizeof grouped / sizeof grouped[0]; f += 3)
        for (size_t t = 0; t < 2; t++) {
            char label[64];
            snprintf(label, sizeof label, "grouped_absmax+stats -> %s", grouped[f]);
            bench_encode_as(label, NF_METHOD_GROUPED_ABSMAX, grouped[f], types[t], NULL, true);
        }
    free(src_f16);
    src_f16 = NULL;
    nf_method_params imp = {.importance = importance, .importance_len = S.cols};
    bench_encode("grouped_search -> q4_g64_fp16", NF_METHOD_GROUPED_SEARCH, "q4_g64_fp16", NF_SRC_BF16, NULL);
    bench_encode("grouped_search -> q4_g64_fp16 +importance", NF_METHOD_GROUPED_SEARCH, "q4_g64_fp16", NF_SRC_BF16,
                 &imp);
    bench_encode_as("grouped_search+stats -> q4_g64_fp16", NF_METHOD_GROUPED_SEARCH, "q4_g64_fp16", NF_SRC_BF16, NULL,
                    true);
    bench_encode("fp8_row_maxabs -> fp8_e4m3fn_row_bf16", NF_METHOD_FP8_ROW_MAXABS, "fp8_e4m3fn_row_bf16", NF_SRC_BF16,
                 NULL);
    bench_encode("fp8_row_maxabs -> fp8_e4m3fn_row_fp16", NF_METHOD_FP8_ROW_MAXABS, "fp8_e4m3fn_row_fp16", NF_SRC_BF16,
                 NULL);
    bench_encode("nvfp4_quantize -> nvfp4", NF_METHOD_NVFP4_QUANTIZE, "nvfp4", NF_SRC_BF16, NULL);
    bench_encode("nvfp4_quantize -> nvfp4", NF_METHOD_NVFP4_QUANTIZE, "nvfp4", NF_SRC_F32, NULL);
    bench_encode("nvfp4_search -> nvfp4", NF_METHOD_NVFP4_SEARCH, "nvfp4", NF_SRC_BF16, NULL);
    /* ggml_quantize to every gguf_* type it encodes, in issue 24's order (the k-quants first), with
     * the search kernels of the level chosen at run time; F32 rows, as ggml's quantize_<type>
     * takes (bench/README.md quotes ggml's own figures for the same matrix) */
    static const char *const gguf[] = {"gguf_q4_k",   "gguf_q6_k",   "gguf_q5_k", "gguf_q3_k", "gguf_q2_k",
                                       "gguf_iq4_xs", "gguf_iq4_nl", "gguf_q4_0", "gguf_q5_0", "gguf_q8_0"};
    for (size_t f = 0; f < sizeof gguf / sizeof gguf[0]; f++)
        for (int with = 0; with < 2; with++) {
            char label[56];
            snprintf(label, sizeof label, "ggml_quantize -> %s%s [%s]", gguf[f] + 5, with ? " +importance" : "",
                     nf_simd_name()); /* the type without "gguf_", to fit the column */
            bench_encode(label, NF_METHOD_GGML_QUANTIZE, gguf[f], NF_SRC_F32, with ? &imp : NULL);
        }
    /* the iq2 types, whose searches have kernels of their own (docs/methods.md "Speed of the iq2
     * searches"); iq2_xxs and iq2_xs only with an importance vector, as ggml quantizes them */
    static const char *const gguf_iq2[] = {"gguf_iq2_xxs", "gguf_iq2_xs", "gguf_iq2_s"};
    for (size_t f = 0; f < sizeof gguf_iq2 / sizeof gguf_iq2[0]; f++)
        for (int with = f < 2; with < 2; with++) {
            char label[56];
            snprintf(label, sizeof label, "ggml_quantize -> %s%s [%s]", gguf_iq2[f] + 5, with ? " +importance" : "",
                     nf_simd_name());
            bench_encode(label, NF_METHOD_GGML_QUANTIZE, gguf_iq2[f], NF_SRC_F32, with ? &imp : NULL);
        }

    bench_gguf_values();
    /* dequant (encoded bytes -> f32, nf_layout_decode_rows_f32) and the verify word scan, one encoded object at a time */
    static const char *const objects[] = {"bf16",
                                          "fp32",
                                          "int32",
                                          "q2_g64_fp16",
                                          "q4_g64_fp16",
                                          "q5_g64_fp16",
                                          "q6_g64_fp16",
                                          "q8_g32_fp16",
                                          "t2_g128_fp16",
                                          "nvfp4",
                                          "fp8_e4m3fn_row_bf16",
                                          "fp8_e4m3fn_row_fp16",
                                          "gguf_q2_k",
                                          "gguf_q3_k",
                                          "gguf_q4_k",
                                          "gguf_q5_k",
                                          "gguf_q6_k"};
    const size_t nobj = sizeof objects / sizeof objects[0];
    bool checkable[sizeof objects / sizeof objects[0]] = {false};
    char label[64];
    for (size_t i = 0; i < nobj; i++) {
        const nf_format *f = nf_format_lookup(objects[i]);
        /* contiguous_le_v1 has no word rules: nf_layout_check reads nothing (gguf_blocks_v1 checks its
         * binary16 scale fields, docs/formats.md 8.1) */
        snprintf(label, sizeof label, "verify words %s", objects[i]);
        checkable[i] = f && f->category != NF_CAT_DIRECT && selected(label);
        snprintf(label, sizeof label, "dequant %s", objects[i]);
        if (!selected(label)) continue;
        object *o = object_build(objects[i]);
        bench_object(o, false);
        object_free(o);
    }
    for (size_t i = 0; i < nobj; i++) {
        if (!checkable[i]) continue;
        object *o = object_build(objects[i]);
        bench_object(o, true);
        object_free(o);
    }
    /* the word check and the layout encode of grouped words (logical words -> encoded bytes) */
    static const char *const words_formats[] = {"q2_g64_fp16", "q4_g64_fp16", "q5_g64_fp16",
                                                "q6_g64_fp16", "q8_g32_fp16", "t2_g128_fp16"};
    for (size_t i = 0; i < sizeof words_formats / sizeof words_formats[0]; i++) {
        char check_label[64], encode_label[64];
        snprintf(check_label, sizeof check_label, "check %s", words_formats[i]);
        snprintf(encode_label, sizeof encode_label, "encode %s", words_formats[i]);
        bool check = selected(check_label), encode = selected(encode_label);
        if (!check && !encode) continue;
        wordset *ws = wordset_build(words_formats[i]);
        if (check) bench_words(ws, false);
        if (encode) bench_words(ws, true);
        wordset_free(ws);
    }
    if (!S.rows_only) loadavg_line("at end");
    free(src_f32);
    free(src_bf16);
    free(importance);
}

static int micro(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--rows-only") == 0) {
            S.rows_only = true;
            continue;
        }
        if (strcmp(a, "--print-simd") == 0) {
            printf("%s\n", nf_simd_name());
            return 0;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "ninfer-bench: error: unexpected argument '%s'\n", a);
            return 2;
        }
        const char *v = argv[++i];
        if (strcmp(a, "--rows") == 0) S.rows = parse_u64(v, a);
        else if (strcmp(a, "--cols") == 0) S.cols = parse_u64(v, a);
        else if (strcmp(a, "--chunk-rows") == 0) S.chunk_rows = parse_u64(v, a);
        else if (strcmp(a, "--threads") == 0) S.threads = (unsigned)parse_u64(v, a);
        else if (strcmp(a, "--min-time") == 0) S.min_time = strtod(v, NULL);
        else if (strcmp(a, "--filter") == 0) S.filter = v;
        else if (strcmp(a, "--input") == 0) S.input = v;
        else if (strcmp(a, "--passes") == 0) {
            S.passes = (unsigned)parse_u64(v, a);
            if (S.passes == 0 || S.passes > 1000) {
                fprintf(stderr, "ninfer-bench: error: --passes needs 1 to 1000\n");
                return 2;
            }
        } else {
            fprintf(stderr, "ninfer-bench: error: unknown option '%s'\n", a);
            return 2;
        }
    }
    if (S.threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        S.threads = n > 0 ? (unsigned)n : 1;
    }
    if (S.threads > MAX_THREADS) S.threads = MAX_THREADS;
    if (S.passes) { /* counting mode: one thread, the rows alone */
        S.threads = 1;
        S.rows_only = true;
    }
    /* Every piece holds whole nvfp4 tiles and whole chunks; K holds whole k-quant blocks. */
    uint64_t unit = S.threads * 128;
    if (S.chunk_rows == 0 || 128 % S.chunk_rows != 0 || S.cols == 0 || S.cols % 256 != 0 || S.rows < unit ||
        S.min_time <= 0) {
        fprintf(stderr,
                "ninfer-bench: error: need --cols a multiple of 256, --chunk-rows a divisor of 128, "
                "--rows >= %" PRIu64 ", --min-time > 0\n",
                unit);
        return 2;
    }
    S.rows = S.rows / unit * unit;

    uint64_t e = S.rows * S.cols;
    if (!S.rows_only) preamble(e);
    generate();
    kernels(e);
    return 0;
}

/* ---------------------------------------------------------------- exec: end-to-end rows */
#define EXEC_MAX_COMMANDS 8
#define EXEC_MAX_REPEAT 64

typedef struct exec_cmd {
    const char *label;
    double bytes, weights;
    char **argv; /* NULL-terminated (the -- ... part) */
    double t[EXEC_MAX_REPEAT];
    double maxrss_kib;
} exec_cmd;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_of(const double *v, unsigned n)
{
    double s[EXEC_MAX_REPEAT];
    memcpy(s, v, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_double);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2.0;
}

/* One run of c: wall time (fork to reap) and the child's own peak RSS (wait4). */
static int exec_once(exec_cmd *c, const char *log, double *t)
{
    fflush(stdout);
    double t0 = now();
    pid_t pid = fork();
    if (pid < 0) die("fork", NULL);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execvp(c->argv[0], c->argv);
        fprintf(stderr, "ninfer-bench exec: cannot run %s: %s\n", c->argv[0], strerror(errno));
        _exit(127);
    }
    int status;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0)
        if (errno != EINTR) die("wait4", NULL);
    *t = now() - t0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "ninfer-bench exec: %s failed (status %d); see %s\n", c->argv[0], status, log);
        return 1;
    }
    if ((double)ru.ru_maxrss > c->maxrss_kib) c->maxrss_kib = (double)ru.ru_maxrss;
    return 0;
}

/* exec [--repeat R] [--log FILE] [--ratio] CMD [--next CMD]...  with CMD = --label L --bytes B
 * --weights W -- PROG ARGS...: the commands run in turn, A B A B ..., R times each (after no
 * warm-up: run.sh warms the page cache first), so that a drift of the machine's speed affects
 * all alike; one row per command with the median and the range of its wall times.  --ratio
 * (two commands): also the median and range of the pairwise ratios A/B. */
static int exec_mode(int argc, char **argv)
{
    const char *log = "/dev/null";
    unsigned repeat = 1;
    bool ratio = false;
    exec_cmd cmds[EXEC_MAX_COMMANDS];
    unsigned ncmds = 0;
    memset(cmds, 0, sizeof cmds);
    int i = 2;
    while (i < argc) {
        const char *a = argv[i];
        if (strcmp(a, "--next") == 0) {
            i++;
            continue;
        }
        if (strcmp(a, "--ratio") == 0) {
            ratio = true;
            i++;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            if (ncmds == EXEC_MAX_COMMANDS) die("exec: too many commands", NULL);
            exec_cmd *c = &cmds[ncmds++];
            c->argv = argv + i + 1;
            int j = i + 1;
            while (j < argc && strcmp(argv[j], "--next") != 0) j++;
            if (j < argc) argv[j] = NULL; /* ends this command's argv; "--next" is consumed */
            i = j + 1;
            continue;
        }
        if (i + 1 >= argc) return 2;
        const char *v = argv[i + 1];
        exec_cmd *c = &cmds[ncmds < EXEC_MAX_COMMANDS ? ncmds : EXEC_MAX_COMMANDS - 1];
        if (strcmp(a, "--label") == 0) c->label = v;
        else if (strcmp(a, "--log") == 0) log = v;
        else if (strcmp(a, "--bytes") == 0) c->bytes = (double)parse_u64(v, a);
        else if (strcmp(a, "--weights") == 0) c->weights = (double)parse_u64(v, a);
        else if (strcmp(a, "--repeat") == 0) repeat = (unsigned)parse_u64(v, a);
        else {
            fprintf(stderr, "ninfer-bench exec: error: unknown option '%s'\n", a);
            return 2;
        }
        i += 2;
    }
    if (ncmds == 0 || repeat == 0 || repeat > EXEC_MAX_REPEAT || (ratio && ncmds != 2)) {
        fprintf(stderr, "usage: ninfer-bench exec [--repeat R] [--log FILE] [--ratio] --label L --bytes B --weights W "
                        "-- PROG ARGS... [--next --label L2 ... -- PROG2 ARGS...]...\n");
        return 2;
    }
    for (unsigned r = 0; r < repeat; r++)
        for (unsigned k = 0; k < ncmds; k++)
            if (exec_once(&cmds[k], log, &cmds[k].t[r])) return 1;
    for (unsigned k = 0; k < ncmds; k++) {
        exec_cmd *c = &cmds[k];
        double med = median_of(c->t, repeat), lo = c->t[0], hi = c->t[0];
        for (unsigned r = 1; r < repeat; r++) {
            lo = c->t[r] < lo ? c->t[r] : lo;
            hi = c->t[r] > hi ? c->t[r] : hi;
        }
        char range[48];
        snprintf(range, sizeof range, "%.2f-%.2f", lo, hi);
        printf("%-56s | %7.3f %11s %9.1f %9.1f | %12.1f\n", c->label ? c->label : "?", med, range, c->bytes / med / 1e6,
               c->weights / med / 1e6, c->maxrss_kib / 1024.0);
    }
    if (ratio) {
        double q[EXEC_MAX_REPEAT], lo = INFINITY, hi = 0;
        for (unsigned r = 0; r < repeat; r++) {
            q[r] = cmds[0].t[r] / cmds[1].t[r];
            lo = q[r] < lo ? q[r] : lo;
            hi = q[r] > hi ? q[r] : hi;
        }
        char range[48];
        snprintf(range, sizeof range, "%.3f-%.3f", lo, hi);
        printf("%-56s | %7.3f %11s   (time over time, run by run)\n", "  ratio of the two rows above",
               median_of(q, repeat), range);
    }
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "exec") == 0) return exec_mode(argc, argv);
    if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        printf("usage: ninfer-bench [--rows N] [--cols K] [--threads T] [--min-time S] [--chunk-rows R]\n"
               "                    [--filter SUBSTR[,SUBSTR...]] [--rows-only] [--passes P [--input T]]\n"
               "       ninfer-bench --print-simd\n"
               "       ninfer-bench exec [--repeat R] [--log FILE] [--ratio] --label L --bytes B --weights W -- PROG "
               "ARGS...\n"
               "                         [--next --label L2 --bytes B2 --weights W2 -- PROG2 ARGS...]...\n");
        return 0;
    }
    return micro(argc, argv);
}
