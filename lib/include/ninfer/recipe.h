/* ninfer/recipe.h - YAML conversion recipes (docs/recipes.md): parsing with positions,
 * validation, and resolution of the rules against a checkpoint's tensor list.
 *
 * Semantics (docs/recipes.md, "How rules apply"):
 * - Every tensor starts with the defaults (format `defaults.format`, bf16 when absent; method
 *   `defaults.method` when given).  Rules apply in order; a rule changes only the fields it sets
 *   (format, layout, method, with, skip), so a later rule that sets only `format` keeps an
 *   earlier rule's method.
 * - A rule's `match` is one selector or a list.  A selector equal to a tensor's name matches
 *   exactly that tensor (an exact name beats a glob); otherwise it is a case-sensitive glob
 *   (fnmatch) or, with the prefix "re:", a POSIX extended regular expression that must match the
 *   whole name (matched by the resolver's own automaton, see docs/recipes.md for the subset and
 *   for what resolution may cost: NF_RECIPE_MAX_MATCH_*).  `when` narrows the matched tensors: rank, dtype (the source's spelling, e.g.
 *   "BF16", "F32", "Q4_K"), min_elements.  A selector that matches no tensor name is an error
 *   unless the rule says `optional: true`.
 * - A method left unset by every rule is the format's natural one: cast_direct for direct
 *   formats, grouped_absmax for q4/q5/q6/q8, fp8_row_maxabs for fp8 rows, import_encoded for
 *   nvfp4, q2, t2 and gguf_*.
 * - `${VAR}` in source and resource paths expands from the environment, for the variables the
 *   command line allows only (nf_recipe_options; an allowed but unset variable is an error);
 *   relative paths are relative to the recipe file's directory, and every resource (published
 *   byte for byte) must stay inside what the command line allows (nf_recipe_check_path,
 *   docs/recipes.md "What a recipe may read").
 *
 * Every error is reported as "FILE:LINE:COL: what" (libyaml positions, 1-based). */
#ifndef NINFER_RECIPE_H
#define NINFER_RECIPE_H

#include <ninfer/export.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ninfer/error.h>
#include <ninfer/mprog.h>

#ifdef __cplusplus
extern "C" {
#endif

struct json_t;

#define NF_RECIPE_MAX_DEPTH 32 /* YAML nesting cap */
#define NF_RECIPE_MAX_BYTES (16u << 20)

typedef struct nf_recipe_pos {
    int line, col; /* 1-based; 0 when unknown */
} nf_recipe_pos;

typedef struct nf_recipe_source {
    char *name; /* "base", "imatrix", ... */
    char *path; /* expanded, relative to the recipe's directory resolved; NULL while it
                            holds a variable the command line does not allow (see blocked) */
    nf_recipe_pos pos;
    /* added after pos so that code initialising the fields above is unaffected */
    char *written;     /* the path as the recipe wrote it (${VAR} unexpanded), for messages */
    char *blocked;     /* the first ${VAR} of it that is not allowed, or NULL */
    bool command_line; /* set by nf_recipe_set_source: a path the command line gave */
} nf_recipe_source;

typedef struct nf_recipe_resource {
    char *role;   /* "tokenizer.json" */
    char *source; /* "base" for "base/tokenizer.json", NULL for a plain path */
    char *path;   /* the file: resolved against the source directory or the recipe's;
                            NULL while a ${VAR} of it (or of its source) is not allowed */
    nf_recipe_pos pos;
    char *written; /* as the recipe wrote it, for messages */
    char *blocked; /* the first ${VAR} of its file part that is not allowed, or NULL */
} nf_recipe_resource;

typedef struct nf_recipe_component {
    char *name;            /* "text" */
    char *config_from;     /* {from: base}: the source whose config.json is the config */
    struct json_t *config; /* a literal config object (when not config_from), or NULL */
    nf_recipe_resource *resources;
    size_t nresources;
    nf_recipe_pos pos;
} nf_recipe_component;

typedef struct nf_recipe_rule {
    char **match; /* selectors as written ("re:..." kept) */
    size_t nmatch;
    int when_rank;              /* -1: no predicate */
    char *when_dtype;           /* NULL: no predicate */
    uint64_t when_min_elements; /* 0: no predicate */
    char *format;               /* NULL: not set by this rule */
    char *layout;               /* NULL: not set ("auto" resets to the format's default) */
    char *method;               /* NULL: not set */
    struct json_t *with;        /* NULL: not set; else an object of method parameters */
    int skip;                   /* -1 not set, 0 false, 1 true */
    bool optional;
    nf_recipe_pos pos; /* the rule (its mapping) */
    /* Where the rule sets each field (the value's position), {0, 0} when it does not; added
     * after `pos` so that code initialising the fields above is unaffected. */
    nf_recipe_pos format_pos, layout_pos, method_pos, with_pos;
    /* when.quantized: -1 no predicate; 1 only the weights a checkpoint stores quantized, in one
     * of the dialects of docs/dialects.md; 0 only the others.  Added last. */
    int when_quantized;
    /* Where a rule the command line made came from ("--rule 'lm_head.*=q8_g32_fp16'"), named in
     * messages in place of "FILE:LINE:COL: rules[i]"; NULL for a recipe's own rule.  Borrowed:
     * it must outlive the recipe (quick mode's rules, cmd/programs/convert.c). */
    const char *label;
} nf_recipe_rule;

typedef struct nf_recipe_group {
    char *id;       /* parent object id */
    char **members; /* tensor names, stacked in this order */
    size_t nmembers;
    nf_recipe_pos pos;         /* the group (its mapping) */
    nf_recipe_pos *member_pos; /* nmembers positions of the member names, or NULL (unknown) */
} nf_recipe_group;

/* The recipe's `budget:` (docs/recipes.md, "Budgets"): the tensors a rule gives `format: budget`
 * get, each, one of the candidate (format, method) pairs, chosen by the planner so that the
 * weights fit the budget with the least importance-weighted squared error. */
#define NF_RECIPE_BUDGET "budget"         /* the format (and method) name a rule leaves to the budget */
#define NF_RECIPE_BUDGET_SAMPLE_ROWS 128u /* budget.sample_rows when absent */

typedef struct nf_recipe_budget {
    bool set;               /* the recipe has a budget section */
    double bits_per_weight; /* > 0: bits per weight over the tensors left to it; else 0 */
    uint64_t bytes;         /* > 0: the bytes of every tensor object of the artifact; else 0 */
    char **formats;         /* candidate formats; NULL/0: every format of the registry */
    size_t nformats;
    char **methods; /* candidate methods; NULL/0: every method that quantizes */
    size_t nmethods;
    char *imatrix;                             /* the source whose importance weighs the error (and feeds
                                     every method that takes one), or NULL: every input channel weighs 1 */
    uint64_t sample_rows;                      /* rows measured per tensor for the estimates; 0: every row */
    nf_recipe_pos pos, imatrix_pos, limit_pos; /* the section, budget.imatrix, the budget's value */
    /* Named in messages in place of "FILE:LINE:COL: budget" when the command line made the
     * budget ("quick mode (--target-bpw 4.5)"), like nf_recipe_rule.label; NULL otherwise. */
    const char *label;
    /* The source of per-tensor sensitivity factors (docs/recipes.md, "Budgets", *Sensitivity*),
     * or NULL: every tensor's error counts once.  Added last. */
    char *sensitivity;
    nf_recipe_pos sensitivity_pos;
} nf_recipe_budget;

typedef struct nf_recipe {
    char *path;  /* the recipe file ("<memory>" when parsed from text) */
    char *dir;   /* its directory, for relative paths */
    int version; /* `recipe: 1` */
    nf_recipe_source *sources;
    size_t nsources;
    char *output_name;               /* output.name or NULL */
    uint64_t max_file_bytes;         /* output.max_file_bytes, 0 when absent */
    nf_recipe_component *components; /* NULL/0: the default {text: {config: base config.json or {}}} */
    size_t ncomponents;
    char *default_format; /* defaults.format, "bf16" when absent */
    char *default_method; /* defaults.method or NULL */
    nf_recipe_rule *rules;
    size_t nrules;
    nf_recipe_group *groups;
    size_t ngroups;
    struct json_t *json;                                  /* the whole recipe as JSON (for provenance) */
    nf_recipe_pos default_format_pos, default_method_pos; /* defaults.format/method values; {0, 0} absent */
    /* defaults.activation_scales: "keep" makes the activation scales of quantized weights
     * (input_scale, input_global_scale; docs/dialects.md) tensors the rules see; "drop" (the
     * default) leaves them out.  Added last. */
    bool keep_activation_scales;
    /* Named in messages in place of "FILE:LINE:COL: defaults.format" (and .method) when the
     * command line made the recipe, like nf_recipe_rule.label; NULL otherwise.  Borrowed. */
    const char *defaults_label;
    /* defaults.gguf_metadata: "drop" leaves out what a recipe without components keeps of a
     * GGUF source: its key/value pairs as the resource gguf_metadata.json and its
     * hyperparameters as the text config ("keep", the default; docs/ninfer-convert.md). */
    bool drop_gguf_metadata;
    /* budget: (docs/recipes.md, "Budgets").  Added last. */
    nf_recipe_budget budget;
    /* The method programs the command line allowed (nf_recipe_options.programs), owned copies,
     * in the order given: what the planner starts for a `method:` that names one.  Added last. */
    nf_method_program *programs;
    size_t nprograms;
} nf_recipe;

/* What the command line allows a recipe (docs/security.md 1.3; docs/security.md 7.1, F2).
 * `${VAR}` in a path expands only the variables named here; a path holding another one stays
 * unexpanded (nf_recipe_source.blocked) and is an error only if it is used -- a source that
 * --source replaces never is.  Messages quote paths as written, never a variable's value. */
typedef struct nf_recipe_options {
    const char *const *allow_env; /* names of the variables ${VAR} may expand (--allow-env) */
    size_t nallow_env;
    /* The method programs the command line gave (--method-program NAME=COMMAND): `method:` may
     * name these besides the built-in methods, and the recipe keeps a copy of them
     * (nf_recipe.programs) for the planner.  Added last. */
    const nf_method_program *programs;
    size_t nprograms;
} nf_recipe_options;

/* Parse a recipe file ("-" reads stdin; a name ending in ".zst" is decompressed).  The file's
 * directory is where its relative paths resolve and what it may read (nf_recipe_check_path); a
 * recipe read from stdin has no directory of its own (paths resolve against the current
 * directory, and only what the command line allows may be read). */
NF_API nf_status nf_recipe_load(const char *path, nf_recipe **out, nf_error *err);
NF_API nf_status nf_recipe_load_ex(const char *path, const nf_recipe_options *opt, nf_recipe **out, nf_error *err);
/* Parse recipe text; `name` is used in messages, `dir` resolves relative paths and is what the
 * recipe may read (NULL: paths resolve against the current directory and nothing is allowed but
 * what nf_recipe_set_source and nf_recipe_allow_path add).  opt NULL: no variable is allowed. */
NF_API nf_status nf_recipe_parse(const char *text, size_t len, const char *name, const char *dir, nf_recipe **out,
                                 nf_error *err);
NF_API nf_status nf_recipe_parse_ex(const char *text, size_t len, const char *name, const char *dir,
                                    const nf_recipe_options *opt, nf_recipe **out, nf_error *err);
NF_API void nf_recipe_free(nf_recipe *r);

/* --source NAME=PATH: replace (or add) a source.  The command line names it: its files are not
 * confined (nf_recipe_check_path), and PATH -- the directory, or for a file the file itself -- is
 * one of the places the recipe's other paths may point into. */
NF_API nf_status nf_recipe_set_source(nf_recipe *r, const char *name, const char *path, nf_error *err);
/* --allow-path DIR: the recipe may also read DIR and below (a file: that file).  It must exist
 * (NF_ERR_USAGE otherwise); it is resolved at once, symbolic links followed. */
NF_API nf_status nf_recipe_allow_path(nf_recipe *r, const char *path, nf_error *err);
/* May `path` be opened for the recipe?  Its real path (every symbolic link resolved; for a path
 * that does not exist, its lexically normalized absolute form) must be inside the recipe's
 * directory, a --source path or an --allow-path directory.  Otherwise NF_ERR_INVALID:
 * "FILE:LINE:COL: KEY: 'WRITTEN' resolves to REAL, outside ...". */
NF_API nf_status nf_recipe_check_path(const nf_recipe *r, const char *path, const char *key, nf_recipe_pos pos,
                                      const char *written, nf_error *err);
NF_API const nf_recipe_source *nf_recipe_find_source(const nf_recipe *r, const char *name);

/* The SHA-256 of the recipe's text as read (after zstd decompression): 64 lowercase hex digits
 * in hex, true for a recipe nf_recipe_load_ex read from a file or stdin; false (hex "") for one
 * parsed from memory, e.g. quick mode's (docs/provenance.md). */
NF_API bool nf_recipe_text_sha256(const nf_recipe *r, char hex[65]);

/* What r was made from, as data (internal: not exported; docs/scale-out.md, "What a plan
 * holds"): {"name", "dir" (null: none given), "text" (as parsed), "variables" ({NAME: value} of
 * every ${NAME} it expanded), "sources" ([{"name", "path"}] of each nf_recipe_set_source, in
 * order), "allow_paths" (each nf_recipe_allow_path, in order), "sensitivity" (its budget's
 * sensitivity source, or null)}.  NF_ERR_INVALID when any of it is not UTF-8. */
nf_status nf_recipe_origin(const nf_recipe *r, struct json_t **out, nf_error *err);
/* The recipe such a record rebuilds, the variables taken from the record, never from the
 * environment.  The record is untrusted: a member of another type, an unknown one, a text that
 * does not parse, a path that cannot be allowed: NF_ERR_INVALID, named "WHERE.member: ...". */
nf_status nf_recipe_from_origin(const struct json_t *origin, const char *where, nf_recipe **out, nf_error *err);
/* The same with the method programs the caller gives (a scale-out task's --method-program). */
nf_status nf_recipe_from_origin_ex(const struct json_t *origin, const char *where, const nf_method_program *programs,
                                   size_t nprograms, nf_recipe **out, nf_error *err);

/* A tensor of the checkpoint, as the resolver sees it. */
typedef struct nf_recipe_tensor {
    const char *name;
    const char *dtype; /* source spelling: "BF16", "F32", "Q8_0", ... */
    uint32_t rank;
    const uint64_t *shape;
    uint64_t elements;
    bool quantized; /* a weight its checkpoint stores quantized (when.quantized);
                                     dtype is then its codes tensor's, shape the weight's [N, K] */
} nf_recipe_tensor;

/* What the rules chose for one tensor. */
typedef struct nf_recipe_choice {
    bool skip;
    const char *format;        /* canonical name as written in the recipe (validated later) */
    const char *layout;        /* NULL: the format's default layout */
    const char *method;        /* never NULL after resolution */
    const struct json_t *with; /* NULL or an object */
    int rule;                  /* index of the last rule that matched the tensor, -1 if none */
    /* The rule that set each field, -1 when it comes from the defaults (or, for the method and
     * layout, is the format's natural one), so messages can point at the line responsible. */
    int format_rule, layout_rule, method_rule, with_rule;
} nf_recipe_choice;

/* Apply defaults and rules to every tensor.  choices has n entries.  Fails with every unmatched
 * selector (not optional) listed, each with its position. */
NF_API nf_status nf_recipe_resolve(const nf_recipe *r, const nf_recipe_tensor *tensors, size_t n,
                                   nf_recipe_choice *choices, nf_error *err);

/* What resolution may cost (docs/recipes.md, "How rules apply"): a pattern selector (glob or
 * "re:") is tried on the names that start with its literal prefix; the (selector, name) pairs
 * are counted before any is tried, and the matchers' steps while they run.  Far above what a real
 * recipe needs (30 suffix globs against 250,000 tensors are 7.5 million pairs and 420 million
 * steps), low enough that resolution stays within seconds (about two at the step cap). */
#define NF_RECIPE_MAX_MATCH_PAIRS ((uint64_t)1 << 27)
#define NF_RECIPE_MAX_MATCH_STEPS ((uint64_t)1 << 30)

typedef struct nf_recipe_resolve_limits {
    uint64_t max_pairs, max_steps; /* 0: the defaults above */
} nf_recipe_resolve_limits;

typedef struct nf_recipe_resolve_work {
    uint64_t pairs; /* (pattern selector, candidate name) pairs */
    uint64_t steps; /* matcher steps, plus one per selector and per tensor a rule applies to */
} nf_recipe_resolve_work;

/* nf_recipe_resolve with explicit caps (NULL: the defaults) and, when work is not NULL, what the
 * resolution cost.  Beyond a cap: NF_ERR_INVALID naming the rule where it was crossed. */
NF_API nf_status nf_recipe_resolve_ex(const nf_recipe *r, const nf_recipe_tensor *tensors, size_t n,
                                      nf_recipe_choice *choices, const nf_recipe_resolve_limits *limits,
                                      nf_recipe_resolve_work *work, nf_error *err);

/* One selector as a rule's `match` holds it (an exact name, a glob, or "re:" and a regular
 * expression of the resolver's subset), for other lists of names that follow the same syntax
 * (a quantized checkpoint's ignore list, docs/dialects.md).  Compile fails with NF_ERR_INVALID
 * saying why; a compiled selector is not thread-safe. */
typedef struct nf_recipe_selector nf_recipe_selector;
NF_API nf_status nf_recipe_selector_compile(const char *selector, nf_recipe_selector **out, nf_error *err);
NF_API bool nf_recipe_selector_match(nf_recipe_selector *sel, const char *name);
NF_API void nf_recipe_selector_free(nf_recipe_selector *sel);

/* The natural method of a format name (see above); NULL for an unknown format. */
NF_API const char *nf_recipe_default_method(const char *format);

#ifdef __cplusplus
}
#endif
#endif
