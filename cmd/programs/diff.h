/* ninfer-diff's parts (docs/ninfer-diff.md): diff.c reads the command line and prints,
 * diff_pair.c pairs the two sides' objects and tensors (by name, or through llama.cpp's names of
 * ninfer/names.h) and says what is to be compared, diff_values.c compares them on the pool. */
#ifndef NINFER_PROGRAMS_DIFF_H
#define NINFER_PROGRAMS_DIFF_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <ninfer/ninfer.h>

#include "cli.h"
#include "stats/stats.h"

/* About 2^18 values (1 MiB of f32) per chunk, ninfer-convert's and ninfer-dequant's chunk; a
 * multiple of NF_STATS_BLOCK and of the weighted error's block (budget/werror.h), so that a span
 * starts a block as a whole row does. */
#define DIFF_CHUNK_VALUES ((uint64_t)1 << 18)
#define DIFF_CHUNK_BYTES ((size_t)1 << 20)

enum {
    DIFF_ADDED = 1u << 0,   /* only in B */
    DIFF_REMOVED = 1u << 1, /* only in A */
    DIFF_KIND = 1u << 2,
    DIFF_FORMAT = 1u << 3,
    DIFF_LAYOUT = 1u << 4,
    DIFF_SHAPE = 1u << 5,
    DIFF_WORDS = 1u << 6, /* stored bytes differ (two artifacts) */
    DIFF_VALUES = 1u << 7 /* decoded values differ (a checkpoint on either side) */
};

/* One input: an artifact, or a checkpoint read as ninfer-convert reads it. */
typedef struct diff_side {
    const char *path;
    nf_artifact *art;
    nf_source *src;
    nf_dialects *dialects; /* of src: its quantized weights (docs/dialects.md) */
    bool gguf_names;       /* its tensors carry llama.cpp's names (a GGUF file, or an artifact of one) */
} diff_side;

/* One side of a pair: an artifact's object or a checkpoint's tensor, and which of its rows. */
typedef struct diff_end {
    const char *name;
    const nf_object *o;        /* an artifact's object, or */
    const nf_source_tensor *t; /* a checkpoint's tensor */
    const nf_qweight *q;       /* t is a dialect's quantized weight: its values are q's */
    uint64_t row0;             /* the pair's rows start here: an expert's matrix in a stack */
    uint64_t mats;             /* the end is a stack of this many matrices (0: not a stack) */
    uint64_t qk_heads;         /* > 0: llama.cpp's q/k row order (ninfer/names.h): the pair's row h
                                   is stored row nf_qk_gguf_row(rows, qk_heads, h) */
} diff_end;

typedef struct diff_pair {
    const char *id;       /* A's name, or B's for what only B has */
    char *label;          /* for people, when the names differ: "A's name = B's name" (owned) */
    diff_end e[2];        /* A's side and B's; name NULL: absent */
    int expert;           /* the pair is expert `expert` of a stack, or -1 */
    unsigned changes;     /* DIFF_* */
    bool not_compared;    /* a resource of A against a checkpoint: no tensor to compare */
    const char *no_stats; /* why no statistics are given, or NULL */
    char *unmapped;       /* a llama.cpp name the table does not map: why (owned), or NULL */
    bool want_bytes, want_stats;
    uint64_t rows, cols; /* the values compared */
    /* the value chunks: rows [k * chunk, ...) or, for rows longer than a chunk, spans of `span`
     * columns, `spans` per row */
    uint64_t chunk, span, spans, nchunks;
    /* --imatrix: the importance of the reference's columns, or NULL; `wmats` vectors of `cols`
     * values when each matrix of a stack has its own (row r: vector r / (rows / wmats)) */
    const float *weights;
    uint64_t wmats;
    const char *weights_entry; /* the imatrix entry that matched */
    nf_errstats *acc;          /* while its chunks run; merged under the pool's lock: exact, so in any order */
    uint64_t nonfinite_differ; /* values whose difference is not finite and whose words differ */
    nf_errstats_summary sum;
    bool have_sum;
} diff_pair;

/* One entry of the directory comparison: a path of keys and what happened to it. */
typedef struct diff_key {
    char *path;         /* for people: provenance.objects[ID] */
    json_t *keys;       /* for --json: ["provenance", "objects", ID] */
    const char *change; /* "added", "removed", "changed" */
} diff_key;

/* What ninfer-diff knows of the model, for llama.cpp's names: from --arch, a GGUF's metadata or a
 * checkpoint's config.json. */
typedef struct diff_model {
    bool known; /* arch is set */
    nf_arch arch;
    const char *arch_from;    /* where arch came from, for messages */
    uint64_t heads, kv_heads; /* 0: unknown */
    uint64_t experts;         /* 0: unknown */
} diff_model;

typedef struct diff_run {
    const nf_cli *cli;
    diff_side side[2];
    int ref;        /* the reference of the statistics: A (0), or B (1) when B is a checkpoint */
    bool artifacts; /* two artifacts: words, records and the directory compared too */
    diff_model model;
    const char *arch_option; /* --arch */
    nf_imatrix *imatrix;     /* --imatrix */
    const char *imatrix_path;
    diff_pair *pairs;
    size_t npairs, pairs_cap;
    diff_key *keys;
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

/* diff_pair.c: the pairs, classified (what differs in the records, what is to be compared),
 * their chunks planned; the model read for llama.cpp's names. */
nf_status diff_make_pairs(diff_run *r, nf_error *err);
/* diff_values.c: the bytes of the pairs whose records agree, then the values of the pairs
 * with want_stats, on the pool. */
nf_status diff_plan_chunks(diff_run *r, diff_pair *p, nf_error *err);
nf_status diff_run_phases(diff_run *r, nf_error *err);
/* The geometry of an artifact end (checked against its record). */
void diff_shape_text(const diff_end *e, char *out, size_t n);
nf_status diff_end_geometry(const diff_run *r, int side, const diff_end *e, nf_geometry *g, nf_error *err);

#endif
