/* nf-llama-quantize: llama-quantize's job done by llama.cpp's own library, for comparing and timing
 * ninfer-convert beside it (bench/README.md "Beside llama-quantize"; tests/cli/test_preset_peer.sh).
 *
 *   nf-llama-quantize LIBLLAMA [--pure] [--imatrix FILE] IN.gguf OUT.gguf TYPE [NTHREADS]
 *   nf-llama-quantize LIBLLAMA --jobs FILE [NTHREADS]
 *
 * It dlopens LIBLLAMA (libllama.so of a prebuilt llama.cpp: scripts/peer-llama.sh installs one),
 * takes llama_model_quantize_default_params, sets the thread count, the file type TYPE (a preset
 * name as llama-quantize takes it: Q4_K_M, IQ2_XS, ...), --pure and the importance matrix, and
 * calls llama_model_quantize, as `llama-quantize [--pure] [--imatrix FILE] IN OUT TYPE NTHREADS`
 * does.  --imatrix reads a llama-imatrix GGUF (T.in_sum2 and T.counts, F32) and gives llama.cpp
 * in_sum2 / count per expert row (1 where the count is 0), as llama-quantize's loader does.
 *
 * The parameter struct is the one of the llama.cpp release scripts/peer-llama.sh pins (its
 * include/llama.h, read, not copied): the fields this driver sets come first, in that order.  A
 * library whose defaults write past the fields known here, or whose defaults differ, is refused
 * (exit 3) rather than called with a struct of another shape.
 *
 * --jobs FILE makes many runs in one process, one a line of FILE (`[--pure] [--imatrix FILE] IN OUT
 * TYPE`, words separated by blanks), and prints `job N: exit S` for line N, S as the exit status of
 * that run alone.  ggml builds the search tables of the IQ types once a process (IQ1_S/IQ1_M's
 * take 10 s of one core, IQ3_XXS's 5), so tests/cli/test_preset_peer.sh's 48 runs are one process.
 *
 * Exit status: 0 done (with --jobs: every line was run, whatever each run's status), 1
 * llama_model_quantize failed (or a bad imatrix), 2 usage (or a line of FILE that is not a run), 3
 * the library cannot be loaded or has another ABI. */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* llama_model_quantize_params of the pinned release (64 bytes), then room that must stay as the
 * driver filled it: a larger struct in the library would write into it. */
typedef struct peer_params {
    int32_t nthread;
    int32_t ftype;
    int32_t output_tensor_type;
    int32_t token_embedding_type;
    bool allow_requantize;
    bool quantize_output_tensor;
    bool only_copy;
    bool pure;
    bool keep_split;
    bool dry_run;
    const void *imatrix;
    const void *kv_overrides;
    const void *tt_overrides;
    const int32_t *prune_layers;
    size_t max_buf_size;
    unsigned char guard[192];
} peer_params;

/* llama.cpp's struct llama_model_imatrix_data: one entry per tensor, a NULL name ends the list */
typedef struct peer_imatrix_entry {
    const char *name;
    const float *data;
    size_t size;
} peer_imatrix_entry;

/* llama_model_quantize_default_params returns its struct in memory: on x86-64 (System V, the only
 * platform of the pinned package) the caller passes the address to fill as a hidden first
 * argument, so calling it as taking that pointer fills p itself (no copy through a temporary), and
 * the guard after the known fields shows whether the library's struct is longer. */
typedef void (*defaults_fn)(peer_params *ret);
typedef uint32_t (*quantize_fn)(const char *in, const char *out, const peer_params *params);
typedef void (*init_fn)(void);

/* llama_ftype values of the pinned release's include/llama.h, by llama-quantize's names */
static const struct {
    const char *name;
    int32_t ftype;
} FTYPES[] = {
    {"Q4_0", 2},     {"Q4_1", 3},    {"Q8_0", 7},    {"Q5_0", 8},    {"Q5_1", 9},     {"Q2_K", 10},   {"Q3_K_S", 11},
    {"Q3_K_M", 12},  {"Q3_K_L", 13}, {"Q4_K_S", 14}, {"Q4_K_M", 15}, {"Q5_K_S", 16},  {"Q5_K_M", 17}, {"Q6_K", 18},
    {"IQ2_XXS", 19}, {"IQ2_XS", 20}, {"Q2_K_S", 21}, {"IQ3_XS", 22}, {"IQ3_XXS", 23}, {"IQ1_S", 24},  {"IQ4_NL", 25},
    {"IQ3_S", 26},   {"IQ3_M", 27},  {"IQ2_S", 28},  {"IQ2_M", 29},  {"IQ4_XS", 30},  {"IQ1_M", 31},  {"BF16", 32},
    {"TQ1_0", 36},   {"TQ2_0", 37},  {"Q2_0", 41},
};

#define GUARD_BYTE 0xA5

static int usage(void)
{
    fprintf(stderr, "usage: nf-llama-quantize LIBLLAMA [--pure] [--imatrix FILE] IN.gguf OUT.gguf TYPE [NTHREADS]\n"
                    "       nf-llama-quantize LIBLLAMA --jobs FILE [NTHREADS]\n");
    return 2;
}

/* ---------------------------------------------------------------- a llama-imatrix GGUF */
typedef struct reader {
    const unsigned char *p;
    size_t len, at;
    bool bad;
} reader;

static uint64_t rd(reader *r, unsigned n)
{
    uint64_t v = 0;
    if (r->bad || n > r->len - r->at) {
        r->bad = true;
        return 0;
    }
    for (unsigned i = 0; i < n; i++) v |= (uint64_t)r->p[r->at + i] << (8 * i);
    r->at += n;
    return v;
}

static const char *rd_str(reader *r, uint64_t *n)
{
    *n = rd(r, 8);
    if (r->bad || *n > r->len - r->at) {
        r->bad = true;
        return NULL;
    }
    const char *s = (const char *)r->p + r->at;
    r->at += *n;
    return s;
}

/* bytes of one GGUF scalar value type; 0 for a string or array, -1 for an unknown type */
static int scalar_size(uint32_t type)
{
    static const int size[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return type < sizeof size / sizeof size[0] ? size[type] : -1;
}

static void skip_value(reader *r, uint32_t type, int depth)
{
    uint64_t n;
    if (type == 8) {
        rd_str(r, &n);
    } else if (type == 9 && depth == 0) {
        uint32_t inner = (uint32_t)rd(r, 4);
        uint64_t count = rd(r, 8);
        for (uint64_t i = 0; i < count && !r->bad; i++) skip_value(r, inner, 1);
    } else if (scalar_size(type) > 0) {
        rd(r, (unsigned)scalar_size(type));
    } else {
        r->bad = true;
    }
}

typedef struct gtensor {
    char name[256];
    uint64_t ne[4], offset;
    uint32_t dims, type;
} gtensor;

static bool ends_with(const char *s, const char *tail)
{
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && !strcmp(s + a - b, tail);
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *buf = NULL;
    size_t cap = 0, n = 0, got;
    do {
        if (n == cap) {
            unsigned char *p = realloc(buf, cap = cap ? cap * 2 : 1 << 20);
            if (!p) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = p;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    fclose(f);
    *len = n;
    return buf;
}

/* The importance vectors of a llama-imatrix GGUF as llama-quantize computes them: for each tensor
 * T with T.in_sum2 [ne0, ne1] and T.counts [ne1], row j is in_sum2 / counts[j], or 1s where the
 * count is not positive.  Returns the NULL-terminated list, or NULL with a message. */
static peer_imatrix_entry *load_imatrix(const char *path, unsigned char **keep)
{
    size_t len = 0;
    unsigned char *buf = slurp(path, &len);
    if (!buf) {
        fprintf(stderr, "nf-llama-quantize: error: cannot read %s\n", path);
        return NULL;
    }
    *keep = buf;
    reader r = {buf, len, 0, false};
    uint32_t alignment = 32;
    if (rd(&r, 4) != 0x46554747u || rd(&r, 4) != 3) r.bad = true;
    uint64_t nt = rd(&r, 8), nkv = rd(&r, 8);
    for (uint64_t i = 0; i < nkv && !r.bad; i++) {
        uint64_t kn;
        const char *k = rd_str(&r, &kn);
        uint32_t type = (uint32_t)rd(&r, 4);
        if (!r.bad && kn == 17 && !memcmp(k, "general.alignment", 17) && type == 4) alignment = (uint32_t)rd(&r, 4);
        else skip_value(&r, type, 0);
    }
    gtensor *ts = nt < len ? calloc(nt ? nt : 1, sizeof *ts) : NULL;
    if (!ts) r.bad = true;
    for (uint64_t i = 0; i < nt && !r.bad; i++) {
        uint64_t n;
        const char *s = rd_str(&r, &n);
        if (r.bad || n >= sizeof ts[i].name) {
            r.bad = true;
            break;
        }
        memcpy(ts[i].name, s, n);
        ts[i].dims = (uint32_t)rd(&r, 4);
        if (ts[i].dims < 1 || ts[i].dims > 4) r.bad = true;
        for (uint32_t d = 0; d < 4; d++) ts[i].ne[d] = d < ts[i].dims && !r.bad ? rd(&r, 8) : 1;
        ts[i].type = (uint32_t)rd(&r, 4);
        ts[i].offset = rd(&r, 8);
    }
    size_t data = alignment ? (r.at + alignment - 1) / alignment * alignment : r.at;
    peer_imatrix_entry *out = r.bad ? NULL : calloc(nt + 1, sizeof *out);
    size_t k = 0;
    for (uint64_t i = 0; out && i < nt; i++) {
        if (!ends_with(ts[i].name, ".in_sum2")) continue;
        char base[256], want[270];
        snprintf(base, sizeof base, "%.*s", (int)(strlen(ts[i].name) - 8), ts[i].name);
        snprintf(want, sizeof want, "%s.counts", base);
        const gtensor *c = NULL;
        for (uint64_t j = 0; j < nt; j++)
            if (!strcmp(ts[j].name, want)) c = &ts[j];
        uint64_t ne0 = ts[i].ne[0], ne1 = ts[i].ne[1] * ts[i].ne[2] * ts[i].ne[3];
        if (!c || ts[i].type != 0 || c->type != 0 || c->ne[0] * c->ne[1] != ne1 || ne0 == 0 || ne1 > (len / 4) / ne0 ||
            ts[i].offset > len - data || ne0 * ne1 * 4 > len - data - ts[i].offset || c->offset > len - data ||
            ne1 * 4 > len - data - c->offset) {
            fprintf(stderr,
                    "nf-llama-quantize: error: %s: entry %s has no F32 counts of its rows or lies outside the file\n",
                    path, base);
            free(out);
            out = NULL;
            break;
        }
        float *v = malloc(ne0 * ne1 * sizeof *v);
        char *name = strdup(base);
        if (!v || !name) {
            free(v);
            free(name);
            free(out);
            out = NULL;
            break;
        }
        for (uint64_t row = 0; row < ne1; row++) {
            float count, sum;
            memcpy(&count, buf + data + c->offset + 4 * row, 4);
            for (uint64_t col = 0; col < ne0; col++) {
                memcpy(&sum, buf + data + ts[i].offset + 4 * (row * ne0 + col), 4);
                v[row * ne0 + col] = count > 0.0f ? sum / count : 1.0f;
            }
        }
        out[k++] = (peer_imatrix_entry){name, v, (size_t)(ne0 * ne1)};
    }
    if (r.bad) fprintf(stderr, "nf-llama-quantize: error: %s is not a GGUF v3 file this driver can read\n", path);
    free(ts);
    return out;
}

/* ---------------------------------------------------------------- one run */
typedef struct peer_job {
    const char *in, *out, *type, *imatrix;
    bool pure;
} peer_job;

typedef struct peer_lib {
    peer_params defaults;
    quantize_fn quantize;
} peer_lib;

/* a run's words, [--pure] [--imatrix FILE] IN OUT TYPE [NTHREADS] (NTHREADS only where threads is
 * not NULL); false on a word out of place */
static bool parse_job(int n, char **w, peer_job *job, long *threads)
{
    const char *pos[4] = {0};
    int npos = 0;
    *job = (peer_job){0};
    for (int i = 0; i < n; i++) {
        if (!strcmp(w[i], "--pure")) job->pure = true;
        else if (!strcmp(w[i], "--imatrix") && i + 1 < n) job->imatrix = w[++i];
        else if (w[i][0] == '-' && w[i][1]) return false;
        else if (npos < (threads ? 4 : 3)) pos[npos++] = w[i];
        else return false;
    }
    if (npos < 3) return false;
    job->in = pos[0], job->out = pos[1], job->type = pos[2];
    if (threads && npos == 4) {
        char *end = NULL;
        *threads = strtol(pos[3], &end, 10);
        if (*end || *threads < 0 || *threads > 4096) return false;
    }
    return true;
}

/* llama_model_quantize on one run: 0 done, 1 failed, 2 an unknown type */
static int run_job(const peer_lib *lib, const peer_job *job, long threads)
{
    int32_t ftype = -1;
    for (size_t i = 0; i < sizeof FTYPES / sizeof FTYPES[0]; i++)
        if (!strcasecmp(job->type, FTYPES[i].name)) ftype = FTYPES[i].ftype;
    if (ftype < 0) {
        fprintf(stderr, "nf-llama-quantize: error: unknown type '%s'\n", job->type);
        return 2;
    }
    peer_params p = lib->defaults;
    p.nthread = (int32_t)threads;
    p.ftype = ftype;
    p.pure = job->pure;
    unsigned char *keep = NULL;
    peer_imatrix_entry *im = NULL;
    if (job->imatrix) {
        im = load_imatrix(job->imatrix, &keep);
        if (!im) {
            free(keep);
            return 1;
        }
        p.imatrix = im;
    }
    uint32_t rc = lib->quantize(job->in, job->out, &p);
    if (rc != 0) fprintf(stderr, "nf-llama-quantize: error: llama_model_quantize failed (%u)\n", rc);
    for (size_t i = 0; im && im[i].name; i++) {
        free((void *)im[i].name);
        free((void *)im[i].data);
    }
    free(im);
    free(keep);
    return rc == 0 ? 0 : 1;
}

/* --jobs FILE: each line one run's words, separated by blanks; its outcome on standard output */
static int run_jobs(const peer_lib *lib, const char *path, long threads)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "nf-llama-quantize: error: cannot read %s\n", path);
        return 2;
    }
    char line[4096];
    int status = 0;
    for (unsigned n = 1; fgets(line, sizeof line, f); n++) {
        if (!strchr(line, '\n') && !feof(f)) {
            fprintf(stderr, "nf-llama-quantize: error: %s:%u: longer than %zu bytes\n", path, n, sizeof line - 2);
            status = 2;
            break;
        }
        char *w[8];
        int nw = 0;
        for (char *t = strtok(line, " \t\r\n"); t; t = strtok(NULL, " \t\r\n"))
            if (nw < 8) w[nw++] = t;
            else nw = 9;
        if (nw == 0) continue;
        peer_job job;
        if (nw > 8 || !parse_job(nw, w, &job, NULL)) {
            fprintf(stderr, "nf-llama-quantize: error: %s:%u: not a run ([--pure] [--imatrix FILE] IN OUT TYPE)\n",
                    path, n);
            status = 2;
            break;
        }
        int rc = run_job(lib, &job, threads);
        fflush(stderr);
        printf("job %u: exit %d\n", n, rc);
        fflush(stdout);
    }
    fclose(f);
    return status;
}

/* ---------------------------------------------------------------- main */
int main(int argc, char **argv)
{
    if (argc < 2) return usage();
    const char *lib_path = argv[1], *jobs = NULL;
    peer_job job = {0};
    long threads = 0;
    if (argc >= 4 && !strcmp(argv[2], "--jobs")) {
        jobs = argv[3];
        char *end = NULL;
        if (argc > 5) return usage();
        if (argc == 5) threads = strtol(argv[4], &end, 10);
        if (argc == 5 && (*end || threads < 0 || threads > 4096)) return usage();
    } else if (!parse_job(argc - 2, argv + 2, &job, &threads)) {
        return usage();
    }

    void *h = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "nf-llama-quantize: error: cannot load %s: %s\n", lib_path, dlerror());
        return 3;
    }
    defaults_fn defaults;
    peer_lib lib;
    init_fn init;
    *(void **)&defaults = dlsym(h, "llama_model_quantize_default_params");
    *(void **)&lib.quantize = dlsym(h, "llama_model_quantize");
    *(void **)&init = dlsym(h, "llama_backend_init");
    if (!defaults || !lib.quantize) {
        fprintf(stderr, "nf-llama-quantize: error: %s does not export llama_model_quantize\n", lib_path);
        return 3;
    }
    peer_params *p = &lib.defaults;
    memset(p, GUARD_BYTE, sizeof *p);
    defaults(p);
    bool shape = p->ftype == 7 && p->allow_requantize == false && p->quantize_output_tensor == true && !p->pure &&
                 !p->imatrix && !p->kv_overrides && !p->tt_overrides && !p->prune_layers;
    for (size_t i = 0; i < sizeof p->guard; i++) shape = shape && p->guard[i] == GUARD_BYTE;
    if (!shape) {
        fprintf(stderr,
                "nf-llama-quantize: error: %s's llama_model_quantize_params is not the one this driver "
                "knows (scripts/peer-llama.sh pins the release)\n",
                lib_path);
        return 3;
    }
    if (init) init();
    return jobs ? run_jobs(&lib, jobs, threads) : run_job(&lib, &job, threads);
}
