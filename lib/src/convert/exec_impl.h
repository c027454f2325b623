/* The internals of a plan's execution shared by execute.c (the top), exec_jobs.c (the jobs on
 * the pool), exec_report.c (the conversion report) and exec_outputs.c (inputs, outputs and the
 * writer).  Nothing outside those four files includes it. */
#ifndef NINFER_EXEC_IMPL_H
#define NINFER_EXEC_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "convert/convert_impl.h"
#include "stats/stats.h"

/* Values per chunk of rows when the options leave it at 0. */
#define DEFAULT_CHUNK_VALUES ((uint64_t)1 << 18)

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
    const nf_object **targets; /* artifact object per plan object */
    atomic_bool *differs;      /* per plan object */
    uint64_t *first_diff;      /* per plan object: smallest differing offset seen */
    pthread_mutex_t lock;
} sink;

typedef struct compare_ctx {
    sink *s;
    size_t object;
    uint8_t *buf;
    size_t cap;
} compare_ctx;


/* One plan object while it is converted: how its rows are cut, how many of its jobs are still to
 * finish, and its statistics: summed exactly while jobs finish (in whatever order), summarized
 * when the last one does. */
typedef struct object_run {
    uint64_t chunk_rows;     /* rows a job */
    uint64_t step_rows;      /* GPTQ, AWQ (exec_jobs.c stepped): a job's rows are read once and
                                encoded this many at a time; 0: all at once */
    uint64_t span_cols;      /* rows longer than a chunk: a job is one row, encoded in spans of
                                  this many columns (ninfer/layout.h nf_colspan); 0: whole rows */
    uint64_t pending;        /* jobs not finished (under the runner's lock) */
    bool skip;               /* compare mode: the object is not re-derived */
    bool whole;              /* a method program's: one job, every row of every member in order
                                (chunk_rows at a time), on one worker (docs/method-programs.md 4) */
    nf_errstats *acc;        /* while jobs are pending (allocated by the first to finish) */
    nf_errstats_summary sum; /* once none is */
} object_run;

typedef struct runner {
    nf_plan *plan;
    object_run *objs;    /* one per plan object */
    uint64_t *first_job; /* nobjects + 1: number of each object's first job, then the total */
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

/* ---------------------------------------------------------------- exec_jobs.c */
/* The sink of compare mode: compares len bytes at the object's offset with the artifact's. */
nf_status nf_convert_compare_write(void *ctx, uint64_t offset, const void *data, size_t len, nf_error *err);
/* Number the jobs of r->plan's objects (r->chunk_values per chunk); allocates r->objs. */
nf_status nf_convert_plan_jobs(runner *r, nf_error *err);
/* Run every job not skipped on `threads` workers; the first error stops them all. */
nf_status nf_convert_run_jobs(runner *r, unsigned threads, const nf_convert_options *opt, nf_error *err);
void nf_convert_runner_free(runner *r);

/* ---------------------------------------------------------------- exec_report.c */
/* The objects' statistics in one array (the report's input); NULL: out of memory. */
nf_errstats_summary *nf_convert_summaries(const nf_plan *p, const runner *r);
/* The report written to a temp file beside path (*tmp, the caller publishes or unlinks it). */
nf_status nf_convert_report_temp(nf_plan *p, const nf_convert_options *opt, const char *id_hex,
                                 const nf_errstats_summary *sums, const char *path, char **tmp, nf_error *err);

/* ---------------------------------------------------------------- exec_outputs.c */
/* Every file the plan reads, by identity. */
nf_status nf_convert_collect_inputs(const nf_plan *p, input_set *in, nf_error *err);
/* The input that is the file at path, NULL: none. */
const input_file *nf_convert_input_of(const input_set *in, const char *path);
/* Refuse OUT or any name the run writes beside it (nf_outputs_role) that is an input, by name or
 * as another link to the same file. */
nf_status nf_convert_refuse_inputs(const input_set *in, const char *output, bool report, nf_error *err);
/* Before a byte is written: no output is an input, and the report (when there is one) is no
 * special file, nor an existing file without --force. */
nf_status nf_convert_prepare_outputs(const input_set *in, const nf_convert_options *opt, const char *report_path,
                                     nf_error *err);
/* The resources' bytes and the tensors' tails, written before the row chunks. */
nf_status nf_convert_write_resources(nf_plan *p, nf_writer *w, nf_error *err);
nf_status nf_convert_write_tails(nf_plan *p, nf_writer *w, nf_error *err);
/* The writer of the plan's objects, options and fingerprint (not begun). */
nf_status nf_convert_plan_writer(nf_plan *p, const nf_convert_options *opt, nf_writer **out, nf_error *err);

#endif
