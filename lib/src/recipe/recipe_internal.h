/* Internal interface of the recipe module: the positioned YAML tree the parser validates, the
 * private extension of nf_recipe, and the method-parameter check shared by parse and resolve. */
#ifndef NINFER_RECIPE_INTERNAL_H
#define NINFER_RECIPE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <ninfer/error.h>
#include <ninfer/recipe.h>

/* A recipe is a handful of sections with at most a few thousand rules (a rule is about 5 nodes);
 * 200,000 nodes is far beyond any real recipe and keeps a hostile file from costing more than a
 * bounded amount of memory: a node costs up to ~700 bytes once an inline config becomes JSON, so
 * the former cap of 1,000,000 let a 3 MB "config: {x: [{},{},...]}" cost 680 MB (now ~140 MB). */
#define NF_RECIPE_MAX_NODES 200000u

/* ---------------------------------------------------------------- positioned YAML tree */
typedef enum yn_kind { YN_SCALAR, YN_MAP, YN_SEQ } yn_kind;

/* Type of a scalar under the YAML 1.2 core schema, restricted to what recipes use: quoted and
 * block scalars are always strings; plain ones may be null, true/false, integers or floats. */
typedef enum ys_type { YS_STRING, YS_NULL, YS_BOOL, YS_INT, YS_FLOAT } ys_type;

typedef struct ynode {
    yn_kind kind;
    nf_recipe_pos pos;
    /* scalars */
    char *text; /* NUL-terminated (scalars with an embedded NUL are refused) */
    size_t len;
    ys_type type;
    bool bval;
    bool int_overflow; /* YS_INT whose value does not fit int64 */
    int64_t ival;
    /* collections: a sequence has n items; a mapping has n pairs, key i at items[2i] (always
     * a scalar) and its value at items[2i+1] */
    struct ynode **items;
    size_t n;
    size_t nslots, cap; /* filled and allocated slots of items (building) */
} ynode;

static inline const ynode *yn_key(const ynode *map, size_t i) { return map->items[2 * i]; }
static inline const ynode *yn_val(const ynode *map, size_t i) { return map->items[2 * i + 1]; }

/* Parse YAML text into a tree.  *root is NULL for an empty stream (no document or an empty
 * document).  Refuses anchors, aliases, tags, several documents, nesting deeper than
 * NF_RECIPE_MAX_DEPTH, more than NF_RECIPE_MAX_NODES nodes, non-scalar mapping keys, duplicate
 * keys and NUL characters in scalars; libyaml's own errors keep its problem and position.
 * `name` prefixes every message. */
nf_status nf_recipe_yn_parse(const char *text, size_t len, const char *name, ynode **root, nf_error *err);
void nf_recipe_yn_free(ynode *n);

/* "a mapping", "the string 'x'", "the integer 3", ... for "expected ..., got ..." messages. */
void nf_recipe_yn_describe(const ynode *n, char *out, size_t size);

/* The node as JSON: mappings become objects (keys in document order), sequences arrays, scalars
 * by their core-schema type.  Fails (with the node's position) for an integer beyond int64 or a
 * float JSON cannot hold (.inf, .nan). */
nf_status nf_recipe_yn_to_json(const ynode *n, const char *name, json_t **out, nf_error *err);

/* ---------------------------------------------------------------- private recipe state */
/* nf_recipe objects are only ever made by nf_recipe_parse/load, so they carry this extension:
 * the part of each "SOURCE/file" resource after the source name, which --source overrides
 * (nf_recipe_set_source) need to re-resolve the resource against the new source path.
 * nf_recipe_resolve uses the public fields only. */
/* A place the recipe may read (paths.c): its real path and its lexically normalized absolute
 * form (the same unless a symbolic link is on the way), so that a path that does not exist yet
 * can be judged as written. */
typedef struct recipe_root {
    char *real; /* NULL when it could not be resolved */
    char *lexical;
    const char *why; /* "the recipe's directory", "--source", "--allow-path" (static) */
} recipe_root;

typedef struct recipe_impl {
    nf_recipe pub;    /* first: a nf_recipe * is a recipe_impl * */
    char ***res_file; /* [component][resource]: the file part, NULL for plain paths (or blocked) */
    recipe_root *roots;
    size_t nroots;
    /* What the recipe was made from, for a scale-out plan to record it as data and rebuild it
     * (origin.c; docs/scale-out.md, "What a plan holds"): the text as parsed, whether a
     * directory was given, the ${VAR} values it expanded, and the nf_recipe_set_source and
     * nf_recipe_allow_path calls in order.  origin_nomem: one of them could not be noted. */
    char *text;
    size_t text_len;
    bool has_dir;
    json_t *vars, *cli_sources, *allow_paths;
    bool origin_nomem;
    bool loaded; /* read from a file (or stdin) by nf_recipe_load_ex: its text is a user's file */
} recipe_impl;

/* nf_recipe_parse_ex with the values of ${VAR} taken from `values` (an object of strings: a
 * variable it lacks is not set) in place of the environment; values NULL reads the
 * environment (parse.c). */
nf_status nf_recipe_parse_with(const char *text, size_t len, const char *name, const char *dir,
                               const nf_recipe_options *opt, const json_t *values, nf_recipe **out, nf_error *err);
/* A noted step of the recipe's making (origin.c): v appended to *list (made on first use); a
 * failure sets impl->origin_nomem. */
static inline void nf_recipe_note(recipe_impl *impl, json_t **list, json_t *v)
{
    /* inline here, not in origin.c: parse.c and paths.c note steps while origin.c rebuilds a
     * recipe through them, and a call each way would tie the three files in a circle */
    if (!*list) *list = json_array();
    if (!v || !*list || json_array_append_new(*list, v) != 0) impl->origin_nomem = true;
}

/* Adds a root (paths.c).  must_exist: an unresolvable path is NF_ERR_USAGE (--allow-path);
 * otherwise it is kept in its lexical form only. */
nf_status nf_recipe_add_root(recipe_impl *impl, const char *path, const char *why, bool must_exist, nf_error *err);
void nf_recipe_free_roots(recipe_impl *impl);
/* The absolute, lexically normalized form of path ("." and ".." resolved as text, no link
 * followed); NULL on ENOMEM or when the current directory is unknown. */
char *nf_recipe_lexical_abs(const char *path);

/* ---------------------------------------------------------------- shared checks */
/* Check method parameters (`with`) against a method (docs/methods.md).  Returns true when
 * they are acceptable; otherwise writes the reason into why and the index (in object order) of
 * the offending member into *bad_index (so the parser can point at its key or value; *bad_value
 * says which of the two). */
bool nf_recipe_check_with(const char *method, const json_t *with, char *why, size_t why_size, size_t *bad_index,
                          bool *bad_value);

/* Selector helpers shared by parse (validation) and resolve (matching). */
#define RECIPE_RE_PREFIX "re:"
bool nf_recipe_is_regex(const char *selector);
/* Does a glob selector contain any fnmatch metacharacter?  Without one it matches only the
 * identical name, which the exact lookup already decided. */
bool nf_recipe_glob_has_meta(const char *selector);

/* Matchers with a counted cost (match.c; docs/recipes.md).  Each adds the work it did to
 * *steps: a glob at most (pattern length + 1) x (name length + 1), a regular expression at
 * most (states + 1) x (name length + 1). */
bool nf_recipe_glob_match(const char *pattern, const char *name, uint64_t *steps); /* fnmatch(p, n, 0) */
bool nf_recipe_glob_needs_fnmatch(const char *pattern); /* holds [: [= or [. (then fnmatch decides) */
size_t nf_recipe_glob_prefix_len(const char *pattern);  /* literal bytes before the first * ? [ \ */

typedef struct recipe_regex recipe_regex;
/* The whole-name matcher of a "re:" pattern (without the prefix): NULL and *out set, or the
 * reason it is refused ("has an unmatched '('", "uses a backslash before a letter ...") to
 * follow "regular expression 'P' ". */
const char *nf_recipe_regex_compile(const char *pattern, recipe_regex **out);
bool nf_recipe_regex_match(recipe_regex *re, const char *name, uint64_t *steps); /* not thread-safe */
size_t nf_recipe_regex_states(const recipe_regex *re);
void nf_recipe_regex_free(recipe_regex *re);
/* The literal text every name the pattern matches starts with (NUL-terminated in buf); its
 * length.  Empty when unsure (an alternation anywhere). */
size_t nf_recipe_regex_prefix(const char *pattern, char *buf, size_t size);
#define RECIPE_RE_PREFIX_MAX 260 /* a pattern is at most 256 bytes (parse.c) */

/* The directory part of a path: "a/b" -> "a", "b" -> ".", "/b" -> "/".  NULL on ENOMEM. */
char *nf_recipe_dirname(const char *path);

/* Why the "re:" pattern is beyond what a selector may be -- the bounds that kept glibc's regcomp
 * cheap when it compiled selectors: too long, too many or stacked repetition operators, large
 * bounds, a back-reference, a compiled size beyond 4096 nodes, a repeated operand that matches
 * the empty string -- or NULL when it may be compiled (regex_guard.c; docs/recipes.md). */
const char *nf_recipe_regex_too_complex(const char *pattern);

/* Why the "re:" pattern is not a POSIX extended regular expression, in the words of glibc's
 * regerror ("Unmatched ( or \\("), or NULL: the patterns glibc's regcomp refuses (REG_EXTENDED,
 * the C locale), for one that passed nf_recipe_regex_too_complex (regex_guard.c). */
const char *nf_recipe_regex_syntax_error(const char *pattern);

#endif
