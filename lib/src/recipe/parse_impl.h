/* The recipe parser's internals shared by parse.c (the document, sources, output, the entry
 * points), parse_rules.c (defaults and rules), parse_artifact.c (components, groups, budget) and
 * parse_node.c (the helpers below them all).  Nothing outside those four files includes it. */
#ifndef NINFER_RECIPE_PARSE_IMPL_H
#define NINFER_RECIPE_PARSE_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "recipe/recipe_internal.h"

typedef struct parser {
    const char *name;             /* the file as named in messages */
    const nf_recipe_options *opt; /* what the command line allows (never NULL) */
    const char *dir;              /* NULL or "." = the current directory */
    nf_error *err;
    recipe_impl *impl;
    nf_recipe *r;
    size_t nregex;        /* "re:" selectors so far */
    const json_t *values; /* nf_recipe_parse_with: ${VAR}'s values, or NULL: the environment's */
} parser;

#define CTX_MAX 256

/* ---------------------------------------------------------------- parse_node.c */
/* strdup of s into *out (NULL stays NULL); out of memory reported. */
nf_status nf_recipe_dup_into(parser *p, const char *s, char **out);
/* ${VAR} from the environment, for the variables the command line allows (--allow-env); a '$'
 * not followed by '{' is kept as written.  A variable that is not allowed leaves the path
 * unexpanded: *out is NULL and *blocked its name, for the planner to report if the path is
 * used (docs/security.md 7.1, F2: a recipe could read any variable, a CI secret, and the messages printed the
 * expanded text).  Messages here quote `raw`, the text as written, never a value. */
nf_status nf_recipe_expand_vars(parser *p, const ynode *n, const char *ctx, const char *raw, char **out,
                                char **blocked);
/* "CTX: expected WHAT, got KIND" at n. */
nf_status nf_recipe_pexpected(parser *p, const ynode *n, const char *ctx, const char *what);
/* The parse error "FILE:LINE:COL: message" at pos (NF_ERR_INVALID). */
nf_status nf_recipe_pfail(parser *p, nf_recipe_pos pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The value of `key` in a mapping (and its key node), NULL: none. */
const ynode *nf_recipe_find_key(const ynode *map, const char *key, const ynode **key_node);
/* The recipe's source `name`, NULL: none. */
const nf_recipe_source *nf_recipe_source_by_name(const nf_recipe *r, const char *name);
/* Typed scalars at n, named by ctx in messages; registry names checked against the registries. */
nf_status nf_recipe_get_bool(parser *p, const ynode *n, const char *ctx, bool *out);
nf_status nf_recipe_get_format(parser *p, const ynode *n, const char *ctx, char **out);
nf_status nf_recipe_get_layout(parser *p, const ynode *n, const char *ctx, char **out);
nf_status nf_recipe_get_method(parser *p, const ynode *n, const char *ctx, char **out);
/* A rule's format: a format name, or `budget` (the budget chooses, docs/recipes.md "Budgets"). */
nf_status nf_recipe_get_rule_format(parser *p, const ynode *n, const char *ctx, char **out);
nf_status nf_recipe_get_string(parser *p, const ynode *n, const char *ctx, const char *what, const char **out);
/* U64 values are capped at INT64_MAX: JSON (the recipe's provenance copy) holds no more. */
nf_status nf_recipe_get_u64(parser *p, const ynode *n, const char *ctx, uint64_t *out);
/* Grow an array of `size`-byte elements by one zeroed element. */
nf_status nf_recipe_grow_one(parser *p, void **array, size_t *count, size_t size);
/* dir + "/" + path for a relative path; dir NULL, "" or "." leaves it relative to the current
 * directory as written.  NULL on ENOMEM. */
char *nf_recipe_join_path(const char *dir, const char *path);
/* "out of memory" (NF_ERR_NOMEM). */
nf_status nf_recipe_pnomem(parser *p);
/* Where a source's files live: the source itself when it is a directory, the file's directory
 * when it is a file (a .safetensors or .gguf).  A path that cannot be examined counts as a
 * directory: the checkpoint reader reports the missing source properly later. */
char *nf_recipe_source_dir(const char *source_path);
/* "'a', 'b'": the sources' names for messages, cut to size. */
void nf_recipe_source_list(const nf_recipe *r, char *out, size_t size);
/* "CTX: unknown key 'K' (expected one of: ...)" for a key not in allowed; want_*: the node's kind. */
nf_status nf_recipe_unknown_key(parser *p, const ynode *key, const char *ctx, const char *const *allowed);
nf_status nf_recipe_want_map(parser *p, const ynode *n, const char *ctx);
nf_status nf_recipe_want_seq(parser *p, const ynode *n, const char *ctx);

/* ---------------------------------------------------------------- parse_rules.c */
/* `defaults:` and `rules:`. */
nf_status nf_recipe_parse_defaults(parser *p, const ynode *n);
nf_status nf_recipe_parse_rules(parser *p, const ynode *n);

/* ---------------------------------------------------------------- parse_artifact.c */
/* `budget:`, `components:` and `groups:`. */
nf_status nf_recipe_parse_budget(parser *p, const ynode *n);
nf_status nf_recipe_parse_components(parser *p, const ynode *n);
nf_status nf_recipe_parse_groups(parser *p, const ynode *n);

#endif
