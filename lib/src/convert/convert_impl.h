/* Internal structures of the conversion pipeline, shared by planner.c and plan_tensor.c
 * (resolution, validation, directory members), plan_digest.c (the plan's content digest),
 * budget.c (a budget's measuring pass and allocation) and execute.c with its exec_*.c files (row
 * chunks on a thread pool, the report, the outputs). */
#ifndef NINFER_CONVERT_IMPL_H
#define NINFER_CONVERT_IMPL_H

#include <jansson.h>

#include <ninfer/convert.h>
#include <ninfer/dialect.h>
#include <ninfer/imatrix.h>
#include <ninfer/import.h>
#include <ninfer/method.h>
#include <ninfer/source.h>

#include "budget/sensitivity.h"
#include "budget/solve.h"
#include "mprog/mprog_module.h"

/* The method id of an object a method program encodes (plan_object.program says which): past
 * every built-in id, so no test for a built-in method matches it. */
#define NF_PLAN_METHOD_PROGRAM ((nf_method_id)NF_METHOD_COUNT)

/* The method's name as recipes, provenance and reports spell it. */
static inline const char *nf_plan_method_name(nf_method_id id, const nf_mprog_spec *program)
{
    return program ? program->name : nf_method_name(id);
}

/* An opened source of the recipe. */
typedef struct plan_source {
    const char *name; /* recipe name ("base") */
    const char *path;
    nf_source *src;        /* NULL for sources that are not checkpoints (an imatrix) */
    uint64_t bytes;        /* sum of its files' sizes */
    nf_dialects *dialects; /* its quantized weights (docs/dialects.md), with src */
} plan_source;

/* Rows of one source tensor feeding rows of a parent object. */
typedef struct plan_member {
    const plan_source *source;
    const nf_source_tensor *t;       /* values, codes or blocks */
    const nf_source_tensor *scale_t; /* import: the scale tensor (nvfp4, fp8 per row), else NULL */
    nf_import imp;                   /* import_encoded only */
    const nf_qweight *q;             /* a quantized weight whose values a method reads (requantized),
                                        or NULL: the values are the tensor's own */
    bool raw;                        /* method reads raw words of src_type (else binary32 values) */
    nf_src_type src_type;
    uint64_t rows;        /* source rows (matrix view) */
    uint64_t parent_row0; /* where they land in the parent */
} plan_member;

/* ---------------------------------------------------------------- the budget (budget.c)
 * docs/recipes.md, "Budgets": the tensors a rule leaves to the budget get one candidate each. */
typedef struct plan_candidate {
    const nf_format *fmt;
    const nf_layout *layout; /* the format's default */
    nf_method_id method;
    json_t *with; /* {imatrix: NAME} for a method that takes one (owned), or NULL */
} plan_candidate;

/* A candidate that is not one for a tensor, and why (its layout cannot hold the tensor, or ggml
 * needs an imatrix for it): --dry-run says it. */
typedef struct plan_exclusion {
    size_t cand; /* into plan_budget.cands */
    char *why;   /* owned */
} plan_exclusion;

/* One candidate of one tensor: what the object would be with it. */
typedef struct plan_option {
    size_t cand; /* into plan_budget.cands */
    nf_method_params params;
    const json_t *with; /* the candidate's, or the rule's (borrowed) */
    uint64_t bytes;     /* the object's bytes */
    double error;       /* estimated weighted squared error (budget.c) */
    uint64_t sampled;   /* rows it was measured on (a costly one: fewer, budget.c) */
} plan_option;

typedef struct plan_budget_item {
    const plan_source *source;
    const nf_source_tensor *t;
    size_t object;                         /* its plan object */
    uint64_t rows, cols;                   /* the matrix view */
    uint64_t sampled;                      /* rows sampled (its options measure all or some of them) */
    const float *weights;                  /* importance per input channel, or NULL (uniform) */
    uint64_t weights_rows, weights_stride; /* a stack's: rows per matrix, and the distance of matrix
                                              m's vector from weights (m * K); 0: one vector */
    double factor;                         /* its sensitivity (budget.sensitivity; 1 when absent) */
    plan_option *opts;
    size_t nopts;
    plan_exclusion *excluded; /* the budget's other candidates (a rule's method aside) */
    size_t nexcluded;
    size_t pick, runner_up; /* into opts; runner_up SIZE_MAX: none */
} plan_budget_item;

/* The importance row `row` of the item's matrix is weighed by (a stack's matrix's vector). */
static inline const float *nf_budget_item_weights(const plan_budget_item *it, uint64_t row)
{
    if (!it->weights || !it->weights_rows) return it->weights;
    return it->weights + row / it->weights_rows * it->weights_stride;
}

typedef struct plan_budget {
    plan_candidate *cands;
    size_t ncands;
    plan_budget_item *items; /* checkpoint order */
    size_t nitems;
    uint64_t elements;             /* of the items */
    uint64_t fixed_bytes;          /* of the other tensor objects (a bytes budget counts them) */
    uint64_t capacity;             /* bytes the items may have */
    uint64_t min_bytes, max_bytes; /* what the items can have */
    const char *imatrix;           /* the weighing source's name, or NULL: uniform */
    nf_sensitivity sens;           /* budget.sensitivity's factors (n 0 without one) */
    nf_budget_solution sol;
} plan_budget;

/* The least and the most bytes the items can have (min_bytes, max_bytes), before measuring. */
nf_status nf_budget_reach(plan_budget *b, nf_error *err);
/* Measures every item's options on its sampled rows (threads: 0 every core; the figures do not
 * depend on it) -- or takes them from figures, a plan's (nf_budget_figures of its maker), checked
 * against the items -- and solves the allocation: picks, runners-up, sol. */
nf_status nf_budget_allocate(plan_budget *b, const nf_recipe_budget *rb, unsigned threads, const json_t *figures,
                             nf_error *err);
/* The measured figures, for a scale-out plan: {"rows_measured": [...], "errors": [[...], ...]}. */
json_t *nf_budget_figures(const plan_budget *b);
/* The "budget" member of --dry-run's description (the allocation table, budget used). */
json_t *nf_budget_describe(const plan_budget *b, const nf_recipe_budget *rb);
void nf_budget_free(plan_budget *b);

typedef struct plan_object {
    char *id;
    nf_object_kind kind;
    /* tensor */
    nf_geometry g;
    nf_method_id method;
    const nf_mprog_spec *program; /* method NF_PLAN_METHOD_PROGRAM: the program (the plan's) */
    nf_method_params params;
    const json_t *with; /* recipe's with (borrowed) */
    char *source_dtype;
    plan_member *members;
    size_t nmembers;
    uint32_t *divisors;  /* nvfp4 parents: g.divisors words */
    uint32_t matrix_max; /* nvfp4_quantize / _search: the matrix's largest magnitude word (nvfp4_pass.c) */
    char *note;          /* what the plan does to an already encoded source (NULL: nothing
                                        to say), e.g. "requantized from Q4_K"; --dry-run shows it */
    char *dialect;       /* a quantized source weight: nf_qweight_describe (NULL: none) */
    bool requantized;    /* ... whose values a method encodes (else it is imported) */
    /* resource */
    char *path; /* its file, or what made `data` (said in messages) */
    uint64_t bytes;
    uint8_t *data; /* made by the plan (a GGUF's metadata), else NULL: read path */
    /* execution */
    size_t writer_index;
    const plan_budget_item *budget; /* the budget chose it (its report adds the weighted error), or NULL */
} plan_object;

/* A cursor over the records of bindings or provenance.objects. */
typedef struct nf_plan_records {
    const nf_plan *p;
    size_t object, member;
} nf_plan_records;

struct nf_plan {
    const nf_recipe *recipe;
    plan_source *sources;
    size_t nsources;
    nf_imatrix **imatrices; /* one per source (loaded when a rule uses it), else NULL */
    plan_object *objects;
    size_t nobjects;
    /* the directory's members; bindings and provenance.objects (a record per object, 10^5 of
     * them) are never one tree: nf_plan_binding_record and nf_plan_provenance_record make them a
     * record at a time, provenance holds the rest (docs/scale-out.md, the coordinator's memory) */
    json_t *components, *metadata, *provenance;
    /* a run's provenance with its sources' files (source_digests.c): as the writer lays it out
     * (digests as placeholders) and as they are once hashed (the report's); NULL: provenance */
    json_t *provenance_laid, *provenance_final;
    nf_plan_records binding_records, provenance_records; /* the writer's cursors (plan_writer) */
    /* companions of the base source that imports read at plan time (scales, scalars), sorted by
     * address; with the members' tensors, what nf_plan_content_digest reads */
    const nf_source_tensor **companions;
    size_t ncompanions;
    plan_budget *budget;     /* the recipe's budget, or NULL */
    nf_mprog_spec *programs; /* the recipe's method programs (nf_recipe.programs), ready to start */
    size_t nprograms;
};

/* ---------------------------------------------------------------- source digests
 * The sources' files, sizes and SHA-256, their hub repository and revision, and the recipe's
 * SHA-256 (source_digests.c, docs/provenance.md). */
typedef struct nf_convert_digests nf_convert_digests;
/* Every file of every source listed and sized now (hash: with digest placeholders to fill). */
nf_status nf_convert_digests_plan(const nf_plan *p, bool hash, nf_convert_digests **out, nf_error *err);
/* p's provenance with the files and hubs: placeholders (final false) or digests (after finish). */
json_t *nf_convert_digests_provenance(const nf_plan *p, nf_convert_digests *d, bool final);
/* The workers that hash the files while a conversion of `threads` encoding threads runs
 * (nothing without hash). */
nf_status nf_convert_digests_start(nf_convert_digests *d, unsigned threads, volatile int *cancel, nf_error *err);
/* The files hashed now on `threads` threads (a scale-out plan's maker: docs/provenance.md). */
nf_status nf_convert_digests_hash_all(nf_convert_digests *d, unsigned threads, volatile int *cancel, nf_error *err);
/* Joins it (give_up: stops it first and returns NF_OK) and patches w's placeholders. */
nf_status nf_convert_digests_finish(nf_convert_digests *d, nf_writer *w, bool give_up, nf_error *err);
void nf_convert_digests_free(nf_convert_digests *d);
/* The directory a source's files are named from (the source itself, or the file's directory),
 * and a file's name under it: the same for the conversion and for verify --against. */
char *nf_convert_digests_root(const char *source_path);
char *nf_convert_digests_name(const char *root, const char *path);

/* The --attest statement's temp file beside path (attest.c): w published, provenance the run's
 * (with its sources' digests). */
nf_status nf_convert_attest_temp(const nf_plan *p, const nf_writer *w, const json_t *provenance, const char *path,
                                 volatile int *cancel, char **tmp, nf_error *err);

/* verify --against's first step (against_sources.c): SOURCE's files against the artifact's
 * provenance.sources.base.files, each difference a problem(ctx, NULL, message); *verdict 1 all
 * equal, 0 not, -1 no SHA-256 recorded. */
typedef void (*nf_convert_problem_fn)(void *ctx, const char *object, const char *message);
nf_status nf_convert_against_files(nf_artifact *a, const char *source, volatile int *cancel,
                                   nf_convert_problem_fn problem, void *ctx, int *verdict, size_t *checked,
                                   size_t *unrecorded, nf_error *err);

/* Convert one tensor's words into the rows of a words buffer (exec_jobs.c); a method's rows are
 * measured into stats when it is not NULL. */
nf_status nf_convert_member_rows(const plan_object *o, const plan_member *m, uint64_t r0, uint64_t r1, void *raw_buf,
                                 size_t raw_len, void *scale_buf, size_t scale_len, float *values, nf_words *words,
                                 uint64_t words_row, nf_errstats *stats, nf_error *err);

/* nvfp4_quantize's and nvfp4_search's first pass over every such object of the plan: its matrix_max and divisor
 * (nvfp4_pass.c, docs/methods.md); refuses a non-finite value or a divisor nvfp4 cannot hold. */
nf_status nf_convert_nvfp4_pass(nf_plan *p, nf_error *err);
/* The same pass over one tensor of rows x cols floating-point values: the largest magnitude word,
 * the matrix_max its nvfp4 encoding takes (for the budget's measuring pass, budget.c). */
nf_status nf_convert_nvfp4_tensor_max(const nf_source *src, const nf_source_tensor *t, uint64_t rows, uint64_t cols,
                                      uint32_t *max_word, nf_error *err);

/* The represented values of words, bit for bit those of nf_words_to_f32, with fast loops for the
 * grouped, FP8-row and direct bf16/fp32 formats (word_values.c; for the report's statistics and the
 * budget's measuring pass). */
nf_status nf_convert_words_values(const nf_geometry *g, const nf_words *w, uint64_t first_row, float *out,
                                  nf_error *err);

/* nf_plan_compare of the plan objects i with only[i] (only NULL: every object); the others are
 * neither re-derived nor reported (execute.c; for nf_verify_against_opts.objects). */
nf_status nf_convert_compare_some(nf_plan *p, nf_artifact *a, unsigned threads, const bool *only, nf_compare_fn report,
                                  void *ctx, size_t *differing, nf_error *err);

/* ---------------------------------------------------------------- scale-out (execute.c)
 * The pieces scaleout*.c assemble into plan, task and assemble (docs/scale-out.md). */
/* What a run checks of its outputs before it writes (the output is no input, the report's
 * place), and that the output does not exist yet: a plan's tasks never write under an artifact. */
nf_status nf_convert_check_outputs(const nf_plan *p, const nf_convert_options *opt, nf_error *err);

/* A GGUF source's metadata (gguf_meta.c): every key/value pair as JSON text, malloc'ed; the
 * hyperparameters that have a config.json name, as a config (an empty one when none). */
nf_status nf_gguf_metadata_text(const nf_source *s, uint8_t **out, size_t *len, nf_error *err);
json_t *nf_gguf_hparams_config(const nf_source *s);
/* Every tensor name of a source is UTF-8, as an object id must be (docs/artifact.md): a GGUF
 * name that is not refuses the source, naming its file, the tensor's index and the escaped name
 * (docs/ninfer-convert.md, "GGUF metadata"). */
nf_status nf_gguf_check_names(const nf_source *s, nf_error *err);

/* The members of bindings, and of provenance.objects, in order (nf_writer_records_fn over an
 * nf_plan_records with its plan set: i = 0 starts again). */
nf_status nf_plan_binding_record(void *records, size_t i, const char **key, json_t **value, nf_error *err);
nf_status nf_plan_provenance_record(void *records, size_t i, const char **key, json_t **value, nf_error *err);

/* The source whose tensors are converted: "base", else the only checkpoint source (NULL when
 * neither; planner.c refuses such a recipe).  Used by planner.c and plan_digest.c. */
const plan_source *nf_plan_base_source(const nf_plan *p);

/* p's writer, every object planned and laid out (nothing created); fingerprint: a plan's, whose
 * directory its maker checked (nf_writer_layout_known), or NULL. */
nf_status nf_convert_writer(nf_plan *p, const nf_convert_options *opt, const char *fingerprint, nf_writer **out,
                            nf_error *err);
/* A task: w laid out with its selection; its objects encoded, its files staged (the entry to
 * entry_staged); per plan object, the statistics (sums) and, for the task's objects, the
 * checksum (checksums[i], "" for the others). */
nf_status nf_convert_task(nf_plan *p, nf_writer *w, const nf_convert_options *opt, const char *entry_staged,
                          nf_errstats_summary *sums, char (*checksums)[33], nf_error *err);
/* The assembler: w laid out, no selection; every object's statistics and checksum (per plan
 * object); the entry completed and published (unless published: an earlier run did, and failed
 * after), then the report (unless !opt->report). */
nf_status nf_convert_assemble(nf_plan *p, nf_writer *w, const nf_convert_options *opt, const char *entry_staged,
                              const nf_errstats_summary *sums, const char *const *checksums, bool published,
                              nf_error *err);

#endif
