/* ninfer/convert.h - the conversion pipeline: a recipe and its checkpoints -> a resolved,
 * validated plan -> encoded rows on a thread pool -> the container writer (or a comparison
 * against an existing artifact, and nf_verify_against on top of it).
 *
 * Planning opens every source, resolves the rules, and checks every choice (format, layout,
 * method, parameters, shapes, imatrix vectors, components and resources) before any byte is
 * written; all problems of one kind are reported together (e.g. every tensor whose shape the
 * chosen format cannot hold).  Execution streams bounded row chunks: memory does not grow with
 * the model, and the output bytes do not depend on the thread count or chunk size. */
#ifndef NINFER_CONVERT_H
#define NINFER_CONVERT_H

#include <ninfer/export.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ninfer/container.h>
#include <ninfer/error.h>
#include <ninfer/outputs.h> /* nf_stale_find, which was declared here */
#include <ninfer/recipe.h>
#include <ninfer/verify.h>

#ifdef __cplusplus
extern "C" {
#endif

struct json_t;

typedef struct nf_plan nf_plan;

/* Open the recipe's sources and resolve and validate everything.  The recipe must outlive the
 * plan. */
NF_API nf_status nf_plan_build(const nf_recipe *recipe, nf_plan **out, nf_error *err);
/* How a plan is built: the threads of a budget's measuring pass (docs/recipes.md, "Budgets"; 0:
 * every online core; the plan is the same for any count). */
typedef struct nf_plan_build_options {
    unsigned threads;
    /* A scale-out plan's measured figures (its "budget" member): used in place of the measuring
     * pass, after a check that they belong to this plan; NULL measures. */
    const struct json_t *budget_figures;
} nf_plan_build_options;
NF_API nf_status nf_plan_build_ex(const nf_recipe *recipe, const nf_plan_build_options *opt, nf_plan **out,
                                  nf_error *err);
NF_API void nf_plan_free(nf_plan *p);

/* The plan as JSON: {"objects": [{"id", "kind", "sources", "shape", "source_dtype", "format",
 * "layout", "method", "with", "bytes", "bits_per_weight"} ...], "totals": {...}}. */
struct json_t *nf_plan_describe(const nf_plan *p);
/* objects[i] of that description alone (NULL past the end or without memory): a caller looking at
 * every object holds one record at a time, not the tree of 10^5 (docs/scale-out.md). */
struct json_t *nf_plan_describe_object(const nf_plan *p, size_t i);
NF_API size_t nf_plan_object_count(const nf_plan *p);
/* The imatrix sources the plan opened: source i's (0 .. the recipe's source count), NULL for a
 * source that is not an imatrix (or past the end); *name gets the recipe's name of it. */
NF_API const struct nf_imatrix *nf_plan_imatrix_at(const nf_plan *p, size_t i, const char **name);

/* XXH3-128 of everything the artifact's bytes are made from: the plan (its description, the
 * components with their configs, bindings, metadata and provenance) and the bytes the plan reads
 * -- every source tensor of every object, the companions imports read, the imatrix files and the
 * resources.  Two plans with the same digest produce the same artifact; ninfer-convert derives
 * the artifact id from it under SOURCE_DATE_EPOCH (docs/ninfer-convert.md).  Reads every byte
 * once, sequentially. */
NF_API nf_status nf_plan_content_digest(const nf_plan *p, uint8_t out[16], nf_error *err);

typedef struct nf_convert_progress {
    size_t objects_done, objects_total;
    uint64_t bytes_done, bytes_total; /* encoded output bytes */
} nf_convert_progress;

typedef void (*nf_progress_fn)(void *ctx, const nf_convert_progress *p);

typedef struct nf_convert_options {
    const char *output;      /* OUT.ninfer */
    unsigned threads;        /* 0: every online core */
    bool has_max_file_bytes; /* max_file_bytes overrides the recipe's */
    uint64_t max_file_bytes;
    bool force;                 /* replace an existing output (never an input) */
    bool report;                /* write OUT.conversion.json */
    const uint8_t *artifact_id; /* 16 bytes, or NULL for a random UUIDv4 */
    uint64_t chunk_values;      /* values per row chunk (0: 1 << 18); output never depends on it */
    nf_progress_fn progress;
    void *progress_ctx;
    volatile int *cancel; /* set non-zero (e.g. by SIGINT) to stop; nothing is published */
    /* docs/provenance.md: the sources' SHA-256 are recorded unless this is set (sizes only) */
    bool no_source_digests;
    /* an in-toto statement of the artifact's files (their SHA-256) and its provenance, published
     * with the artifact (nf_plan_execute only), or NULL */
    const char *attest;
} nf_convert_options;

/* The version of OUT.conversion.json's schema, its member "report_version" (docs/ninfer-convert.md,
 * "The report"): a reader refuses a larger one.  Reports without the member are version 1. */
#define NF_REPORT_VERSION 1

/* Encode every object and publish the artifact (and its report). */
NF_API nf_status nf_plan_execute(nf_plan *p, const nf_convert_options *opt, nf_error *err);

/* Re-derive every object of the plan and compare with the artifact's bytes: one problem per
 * differing object is passed to report (object id, message).  *differing receives the count. */
typedef void (*nf_compare_fn)(void *ctx, const char *object, const char *message);
NF_API nf_status nf_plan_compare(nf_plan *p, nf_artifact *a, unsigned threads, nf_compare_fn report, void *ctx,
                                 size_t *differing, nf_error *err);

/* ---------------------------------------------------------------- verify --against
 * Re-derive the tensors of an artifact from a checkpoint and compare them bit for bit
 * (docs/ninfer-verify.md, "Re-deriving with --against"; docs/library.md, "Re-deriving an artifact").  It lives
 * here, above verify, because it re-derives through the planner above.
 *
 * docs/security.md 1.3: an artifact never makes this open, stat or expand anything it names.
 * Without a recipe every tensor object is re-derived from opts->source alone, with the format
 * and layout of its object record and the method, parameters and source tensor names of its
 * provenance.objects record, all taken as data; a record that needs anything but the source (an
 * importance matrix) is a problem that says so, and resources are not compared.  With
 * opts->recipe that recipe is planned instead, opts->source as its source "base" (its other
 * sources and resources are the recipe's: the caller's own file), and every object of the
 * artifact is compared; provenance.recipe is only compared with it, never run. */
typedef struct nf_verify_against_source {
    const char *name; /* a source of the recipe, e.g. "imatrix" */
    const char *path; /* what it is replaced with (or added as) */
} nf_verify_against_source;

typedef struct nf_verify_against_opts {
    const char *source; /* SOURCE: the checkpoint the objects are re-derived from (required) */
    const char *recipe; /* R.yaml, or NULL: re-derive from provenance.objects */
    /* With recipe only (NF_ERR_USAGE otherwise), in the order ninfer-verify applies them:
     * sources replaced or added (--source NAME=PATH), directories the recipe may also read
     * (--allow-path DIR), variables ${VAR} of its paths may expand (--allow-env NAME). */
    const nf_verify_against_source *sources;
    size_t nsources;
    const char *const *allow_paths;
    size_t nallow_paths;
    const char *const *allow_env;
    size_t nallow_env;
    unsigned threads; /* 0: every online core; the report is the same for any count */
    /* Only these objects (ids of the artifact; e.g. one scale-out task's, nf_scaleout_task_objects):
     * NULL re-derives every object; otherwise only the nobjects ids listed (0 of them: none) are
     * re-derived and compared, an id the artifact has not is a problem, and the artifact's other
     * objects are neither compared nor reported.  Added last, after threads. */
    const char *const *objects;
    size_t nobjects;
    /* Only the objects with bytes in the artifact's files [files_first, files_end), as the
     * artifact's own directory lays them out (its files' logical ranges and its objects' offsets:
     * e.g. a scale-out task's files, nf_scaleout_task_files), so that no list of ids can leave one
     * out; files_end 0: no such restriction.  With objects too, an object must be in both.  A
     * range the artifact's file table does not hold is a problem.  Added last, after objects. */
    size_t files_first, files_end;
    /* The method programs the caller gives again (--method-program): an object whose provenance
     * records a method program is re-derived only by the program of that name given here, and
     * only when its files' digest is the recorded one (docs/method-programs.md 5).  Added last. */
    const nf_method_program *programs;
    size_t nprograms;
} nf_verify_against_opts;

/* What was compared besides the problems (ninfer-verify prints it). */
typedef struct nf_verify_against_result {
    size_t objects_rederived;      /* objects of the plan, each compared with the artifact */
    char **resources_not_compared; /* ids of resources left out (no recipe), artifact order */
    size_t nresources_not_compared;
    int recipe_matches_provenance; /* with a recipe: 1 it equals provenance.recipe, 0 not;
                                        -1 without one */
    /* The source's files compared first with provenance.sources.base.files (docs/provenance.md):
     * source_digests 1 when every recorded file is in SOURCE with its size and SHA-256, 0 when
     * one is not (each such file is a problem), -1 when the artifact records no SHA-256, -2 when
     * not compared (a part of the artifact: objects or files_end given). */
    int source_digests;
    size_t source_files_checked;    /* recorded files found equal */
    size_t source_files_unrecorded; /* files SOURCE has that the artifact does not record */
} nf_verify_against_result;

/* Compare artifact a (opened by the caller; meant for one nf_verify_artifact_with found valid)
 * with what opts re-derives.  Every difference, every object that cannot be re-derived, every
 * object the recipe does not produce and every problem of the plan (the recipe, the records or
 * the source do not fit) is appended to r as a problem of check "against" (r->valid becomes
 * false); r may already hold problems, and a zeroed report with valid = true starts one.
 * res (may be NULL) is filled and then owned by the caller (nf_verify_against_result_free).
 * Returns NF_OK when the comparison ran to a verdict; NF_ERR_IO / NF_ERR_NOMEM when the source
 * or the recipe cannot be read (then err says why, res is empty and the problems added so far
 * stay in r); NF_ERR_USAGE when opts is NULL, has no source, gives sources, paths or variables
 * without a recipe, or allows a path that does not exist (nf_recipe_allow_path). */
NF_API nf_status nf_verify_against(nf_artifact *a, const nf_verify_against_opts *opts, nf_verify_report *r,
                                   nf_verify_against_result *res, nf_error *err);
NF_API void nf_verify_against_result_free(nf_verify_against_result *res);

/* ---------------------------------------------------------------- scale-out
 * One artifact converted as independent tasks on any number of hosts, then assembled
 * (docs/scale-out.md): byte for byte the artifact nf_plan_execute writes with the same plan,
 * options and artifact id.  The plan records as data what rebuilds the nf_plan -- the recipe as
 * made (its text, the variables it expanded, the sources and paths given to it) and the options
 * that decide bytes, never a command line; every task and the assembler rebuild it
 * (nf_scaleout_rebuild) and check it against the plan (the inputs' fingerprints under the
 * allowed roots, the layout's fingerprint) before they write. */
typedef struct nf_scaleout nf_scaleout;

/* Lay p's artifact out (nothing is written but plan_path) and write the plan: the conversion as
 * data (p's recipe, opt's max_file_bytes, force and report), the files, their objects and source
 * byte ranges, `tasks` tasks of near-equal bytes (0: one per file; never more than the files),
 * fingerprints, and the artifact id every task will use: opt->artifact_id, or a random one drawn
 * now.  NF_ERR_INVALID when a file the plan reads is outside its allowed roots (the recipe's
 * directory, the sources and the paths given to it) or a recorded text is not UTF-8. */
NF_API nf_status nf_scaleout_plan(nf_plan *p, const nf_convert_options *opt, size_t tasks, const char *plan_path,
                                  size_t *ntasks, nf_error *err);
/* Read and check a plan file (untrusted JSON: capped, every member checked, an unknown one
 * refused; a plan of version 1 -- a command line -- is refused: make it again). */
NF_API nf_status nf_scaleout_open(const char *plan_path, nf_scaleout **out, nf_error *err);
NF_API void nf_scaleout_free(nf_scaleout *s);
NF_API size_t nf_scaleout_task_count(const nf_scaleout *s);
NF_API const char *nf_scaleout_output(const nf_scaleout *s);
/* The working directory the plan was made in: its relative paths are that directory's, and
 * nf_scaleout_rebuild runs only there (the library never changes directory). */
NF_API const char *nf_scaleout_directory(const nf_scaleout *s);
NF_API void nf_scaleout_artifact_id(const nf_scaleout *s, uint8_t out[16]);
/* What a task's host chooses; everything else comes from the plan. */
typedef struct nf_scaleout_run {
    unsigned threads;      /* 0: every online core */
    uint64_t chunk_values; /* 0: the default; the output never depends on it */
    nf_progress_fn progress;
    void *progress_ctx;
    volatile int *cancel; /* set non-zero (e.g. by SIGINT) to stop; nothing is published */
    /* The method programs the plan's conversion was made with, given again by the task's host:
     * each must have the digest the plan records (docs/method-programs.md 5).  Added last. */
    const nf_method_program *programs;
    size_t nprograms;
} nf_scaleout_run;
/* The plan's conversion made ready: the recipe rebuilt from the plan's data (its variables from
 * the plan, never the environment), every recorded input checked to lie under the allowed
 * roots and to be unchanged (size and digests) before any source is opened, the nf_plan built
 * (a budget's figures taken from the plan) and found to read exactly the recorded inputs.  Run
 * in the plan's directory (NF_ERR_USAGE elsewhere).  NF_ERR_INVALID names the plan file and the
 * member at fault. */
NF_API nf_status nf_scaleout_rebuild(nf_scaleout *s, const nf_scaleout_run *run, nf_error *err);
/* The nf_plan nf_scaleout_rebuild made (NULL before), owned by s. */
NF_API nf_plan *nf_scaleout_conversion(const nf_scaleout *s);
/* Task `task` of the rebuilt plan: its files written beside the output (temp + rename), then one
 * receipt per file.  *skipped: every file already had a receipt of this plan (nothing done).
 * NF_ERR_INVALID when the plan's layout or inputs no longer match, or for a task out of range;
 * NF_ERR_IO for a failure worth retrying; NF_ERR_USAGE before nf_scaleout_rebuild. */
NF_API nf_status nf_scaleout_task(const nf_scaleout *s, size_t task, bool *skipped, nf_error *err);
/* Every file checked against its receipt and the plan (size, header; with verify, its digest:
 * the only reread of payload), the checksums and statistics merged, the entry and the report
 * published; the receipts removed.  A missing or mismatching file is named with the task to
 * rerun, and nothing is published.  NF_ERR_USAGE before nf_scaleout_rebuild. */
NF_API nf_status nf_scaleout_assemble(const nf_scaleout *s, bool verify, nf_error *err);
/* The object ids with bytes in the files of task `task` (the union of their "objects" in the
 * plan, each once, in the plan's order): *ids is a malloc'd array of *nids strings borrowed from
 * s (valid until nf_scaleout_free; free the array only).  NF_ERR_INVALID for a task out of range
 * (a file without a list of ids is refused by nf_scaleout_open).  For
 * nf_verify_against_opts.objects (ninfer-verify --plan --task, docs/ninfer-verify.md). */
NF_API nf_status nf_scaleout_task_objects(const nf_scaleout *s, size_t task, const char ***ids, size_t *nids,
                                          nf_error *err);
/* The files of task `task`: [*first, *end) of the plan's files (the artifact's file indices), for
 * nf_verify_against_opts.files_first / files_end (ninfer-verify --plan --task: the task's
 * objects from the artifact's own directory, not the plan's lists).  NF_ERR_INVALID for a task
 * out of range. */
NF_API nf_status nf_scaleout_task_files(const nf_scaleout *s, size_t task, size_t *first, size_t *end, nf_error *err);

#ifdef __cplusplus
}
#endif
#endif
