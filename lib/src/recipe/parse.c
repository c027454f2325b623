/* Recipe schema (docs/recipes.md): the YAML tree is checked against a closed schema at
 * every level and turned into nf_recipe.  Every error names the file, the 1-based line and
 * column of the offending node, the key path ("rules[2].when.rank") and what was expected.
 *
 * Mappings are walked in document order, so the first error reported is the first one in the
 * file; the exceptions are `recipe:` (checked first: a different schema version explains any
 * other surprise) and `sources:` (read before the sections that refer to sources by name). */
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ninfer/format.h>
#include <ninfer/layout.h>
#include <ninfer/method.h>
#include <ninfer/source.h>

#include "common/buf.h"
#include "common/fail.h"
#include "common/strset.h"
#include "recipe/recipe_internal.h"

typedef struct parser {
    const char *name; /* the file as named in messages */
    const nf_recipe_options *opt; /* what the command line allows (never NULL) */
    const char *dir;  /* NULL or "." = the current directory */
    nf_error *err;
    recipe_impl *impl;
    nf_recipe *r;
    size_t nregex; /* "re:" selectors so far */
    const json_t *values; /* nf_recipe_parse_with: ${VAR}'s values, or NULL: the environment's */
} parser;

#define CTX_MAX 256

static nf_status fail(parser *p, nf_recipe_pos pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static nf_status fail(parser *p, nf_recipe_pos pos, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    nf_status st = nf_common_fail_atv(p->err, p->name, pos.line, pos.col, fmt, ap);
    va_end(ap);
    return st;
}

static nf_status nomem(parser *p)
{
    return nf_common_nomem_in(p->err, p->name);
}

static nf_status expected(parser *p, const ynode *n, const char *ctx, const char *what)
{
    char got[128];
    nf_recipe_yn_describe(n, got, sizeof got);
    return fail(p, n->pos, "%s: expected %s, got %s", ctx, what, got);
}

static nf_status dup_into(parser *p, const char *s, char **out)
{
    *out = strdup(s);
    return *out ? NF_OK : nomem(p);
}

/* Grow an array of `size`-byte elements by one zeroed element. */
static nf_status grow_one(parser *p, void **array, size_t *count, size_t size)
{
    if (*count >= SIZE_MAX / size - 1) return nomem(p);
    unsigned char *a = realloc(*array, (*count + 1) * size);
    if (!a) return nomem(p);
    memset(a + *count * size, 0, size);
    *array = a;
    (*count)++;
    return NF_OK;
}

/* ---------------------------------------------------------------- typed scalars */
static nf_status get_string(parser *p, const ynode *n, const char *ctx, const char *what, const char **out)
{
    if (n->kind != YN_SCALAR || n->type != YS_STRING) return expected(p, n, ctx, what);
    if (n->len == 0) return fail(p, n->pos, "%s: expected %s, got an empty string", ctx, what);
    *out = n->text;
    return NF_OK;
}

/* U64 values are capped at INT64_MAX: JSON (the recipe's provenance copy) holds no more. */
static nf_status get_u64(parser *p, const ynode *n, const char *ctx, uint64_t *out)
{
    if (n->kind != YN_SCALAR || n->type != YS_INT || n->ival < 0) {
        if (n->kind == YN_SCALAR && n->type == YS_INT && n->int_overflow)
            return fail(p, n->pos, "%s: integer %s is out of range (at most %lld)", ctx, n->text, (long long)INT64_MAX);
        return expected(p, n, ctx, "a non-negative integer");
    }
    if (n->int_overflow)
        return fail(p, n->pos, "%s: integer %s is out of range (at most %lld)", ctx, n->text, (long long)INT64_MAX);
    *out = (uint64_t)n->ival;
    return NF_OK;
}

static nf_status get_bool(parser *p, const ynode *n, const char *ctx, bool *out)
{
    if (n->kind != YN_SCALAR || n->type != YS_BOOL) return expected(p, n, ctx, "true or false");
    *out = n->bval;
    return NF_OK;
}

static nf_status want_map(parser *p, const ynode *n, const char *ctx)
{
    return n->kind == YN_MAP ? NF_OK : expected(p, n, ctx, "a mapping");
}

static nf_status want_seq(parser *p, const ynode *n, const char *ctx)
{
    return n->kind == YN_SEQ ? NF_OK : expected(p, n, ctx, "a list");
}

static nf_status unknown_key(parser *p, const ynode *key, const char *ctx, const char *const *allowed)
{
    char list[256] = "";
    size_t used = 0;
    for (size_t i = 0; allowed[i]; i++) {
        int k = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", allowed[i]);
        if (k < 0 || (size_t)k >= sizeof list - used) break;
        used += (size_t)k;
    }
    if (ctx) return fail(p, key->pos, "%s: unknown key '%s' (expected one of: %s)", ctx, key->text, list);
    return fail(p, key->pos, "unknown top-level key '%s' (expected one of: %s)", key->text, list);
}

static const ynode *find_key(const ynode *map, const char *key, const ynode **key_node)
{
    for (size_t i = 0; i < map->n; i++) {
        if (!strcmp(yn_key(map, i)->text, key)) {
            if (key_node) *key_node = yn_key(map, i);
            return yn_val(map, i);
        }
    }
    return NULL;
}

/* ---------------------------------------------------------------- registry names */
static nf_status get_format(parser *p, const ynode *n, const char *ctx, char **out)
{
    const char *s = NULL;
    NF_TRY(get_string(p, n, ctx, "a format name (e.g. q4_g64_fp16)", &s));
    if (!nf_format_lookup(s)) return fail(p, n->pos, "%s: unknown format '%s'", ctx, s);
    return dup_into(p, s, out);
}

/* A rule's format: a format name, or `budget` (the budget chooses, docs/recipes.md "Budgets"). */
static nf_status get_rule_format(parser *p, const ynode *n, const char *ctx, char **out)
{
    if (n->kind == YN_SCALAR && n->type == YS_STRING && !strcmp(n->text, NF_RECIPE_BUDGET))
        return dup_into(p, n->text, out);
    return get_format(p, n, ctx, out);
}

static nf_status get_method(parser *p, const ynode *n, const char *ctx, char **out)
{
    const char *s = NULL;
    NF_TRY(get_string(p, n, ctx, "a method name", &s));
    nf_method_id id;
    if (nf_method_find(s, &id, NULL) != NF_OK) {
        char list[160] = "";
        size_t used = 0;
        for (unsigned i = 0; i < NF_METHOD_COUNT; i++) {
            int k = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", nf_method_name((nf_method_id)i));
            if (k < 0 || (size_t)k >= sizeof list - used) break;
            used += (size_t)k;
        }
        return fail(p, n->pos, "%s: unknown method '%s' (expected one of: %s)", ctx, s, list);
    }
    return dup_into(p, s, out);
}

static nf_status get_layout(parser *p, const ynode *n, const char *ctx, char **out)
{
    const char *s = NULL;
    NF_TRY(get_string(p, n, ctx, "a layout name or auto", &s));
    if (strcmp(s, "auto") != 0) {
        const nf_layout *l = nf_layout_lookup(s);
        if (!l || l->resource_encoding) return fail(p, n->pos, "%s: unknown tensor layout '%s'", ctx, s);
    }
    return dup_into(p, s, out);
}

/* ---------------------------------------------------------------- paths */
static bool var_name_char(char c, bool first)
{
    return c == '_' || isalpha((unsigned char)c) || (!first && isdigit((unsigned char)c));
}

static bool var_allowed(const parser *p, const char *var)
{
    for (size_t i = 0; i < p->opt->nallow_env; i++)
        if (p->opt->allow_env[i] && strcmp(p->opt->allow_env[i], var) == 0) return true;
    return false;
}

/* ${VAR} from the environment, for the variables the command line allows (--allow-env); a '$'
 * not followed by '{' is kept as written.  A variable that is not allowed leaves the path
 * unexpanded: *out is NULL and *blocked its name, for the planner to report if the path is
 * used (docs/security.md 7.1, F2: a recipe could read any variable, a CI secret, and the messages printed the
 * expanded text).  Messages here quote `raw`, the text as written, never a value. */
static nf_status expand_vars(parser *p, const ynode *n, const char *ctx, const char *raw, char **out, char **blocked)
{
    nf_buf b = {0};
    nf_status st = NF_OK;
    *out = NULL;
    *blocked = NULL;
    for (const char *s = raw; *s && st == NF_OK;) {
        if (s[0] != '$' || s[1] != '{') {
            if (!nf_buf_putc(&b, *s++)) st = nomem(p);
            continue;
        }
        const char *name = s + 2;
        const char *close = strchr(name, '}');
        if (!close) {
            st = fail(p, n->pos, "%s: unterminated '${' in '%s'", ctx, raw);
            break;
        }
        size_t len = (size_t)(close - name);
        bool ok = len > 0;
        for (size_t i = 0; i < len && ok; i++) ok = var_name_char(name[i], i == 0);
        if (!ok) {
            st = fail(p, n->pos, "%s: bad variable name '${%.*s}' in '%s'", ctx, (int)len, name, raw);
            break;
        }
        char var[256];
        if (len >= sizeof var) {
            st = fail(p, n->pos, "%s: variable name too long in '%s'", ctx, raw);
            break;
        }
        memcpy(var, name, len);
        var[len] = '\0';
        if (!var_allowed(p, var)) {
            nf_buf_free(&b);
            *blocked = strdup(var);
            return *blocked ? NF_OK : nomem(p);
        }
        const char *value = p->values ? json_string_value(json_object_get(p->values, var)) : getenv(var);
        /* noted: a plan records the values it expanded (origin.c), so a task reads no variable */
        if (value && !json_object_get(p->impl->vars, var)) {
            if (!p->impl->vars) p->impl->vars = json_object();
            if (!p->impl->vars || json_object_set_new(p->impl->vars, var, json_string(value)) != 0)
                p->impl->origin_nomem = true;
        }
        if (!value) {
            st = fail(p, n->pos, "%s: environment variable '%s' is not set (in '%s')", ctx, var, raw);
            break;
        }
        if (!nf_buf_append(&b, value, strlen(value))) st = nomem(p);
        s = close + 1;
    }
    if (st == NF_OK && !nf_buf_putc(&b, '\0')) st = nomem(p);
    if (st == NF_OK && b.data[0] == '\0') st = fail(p, n->pos, "%s: '%s' expands to an empty path", ctx, raw);
    if (st != NF_OK) {
        nf_buf_free(&b);
        return st;
    }
    *out = b.data;
    return NF_OK;
}

/* dir + "/" + path for a relative path; dir NULL, "" or "." leaves it relative to the current
 * directory as written.  NULL on ENOMEM. */
static char *join_path(const char *dir, const char *path)
{
    if (path[0] == '/' || !dir || !dir[0] || !strcmp(dir, ".")) return strdup(path);
    while (path[0] == '.' && path[1] == '/') {
        path += 2;
        while (path[0] == '/') path++;
    }
    size_t dl = strlen(dir), pl = strlen(path);
    bool slash = dl > 0 && dir[dl - 1] == '/';
    char *out = malloc(dl + pl + 2);
    if (!out) return NULL;
    memcpy(out, dir, dl);
    if (!slash) out[dl++] = '/';
    memcpy(out + dl, path, pl + 1);
    return out;
}

char *nf_recipe_dirname(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    while (slash > path && slash[-1] == '/') slash--;
    if (slash == path) return strdup("/");
    size_t n = (size_t)(slash - path);
    char *out = malloc(n + 1);
    if (!out) return NULL;
    memcpy(out, path, n);
    out[n] = '\0';
    return out;
}

/* Where a source's files live: the source itself when it is a directory, the file's directory
 * when it is a file (a .safetensors or .gguf).  A path that cannot be examined counts as a
 * directory: the checkpoint reader reports the missing source properly later. */
static char *source_dir(const char *source_path)
{
    struct stat st;
    if (!source_path) return NULL;
    if (stat(source_path, &st) == 0 && !S_ISDIR(st.st_mode)) return nf_recipe_dirname(source_path);
    return strdup(source_path);
}

static const nf_recipe_source *find_source(const nf_recipe *r, const char *name)
{
    for (size_t i = 0; i < r->nsources; i++)
        if (!strcmp(r->sources[i].name, name)) return &r->sources[i];
    return NULL;
}

const nf_recipe_source *nf_recipe_find_source(const nf_recipe *r, const char *name)
{
    if (!r || !name) return NULL;
    return find_source(r, name);
}

static void source_list(const nf_recipe *r, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    if (r->nsources == 0) {
        snprintf(out, size, "none defined");
        return;
    }
    for (size_t i = 0; i < r->nsources; i++) {
        int k = snprintf(out + used, size - used, "%s%s", i ? ", " : "", r->sources[i].name);
        if (k < 0 || (size_t)k >= size - used) break;
        used += (size_t)k;
    }
}

/* ---------------------------------------------------------------- sections */
static nf_status parse_version(parser *p, const ynode *root)
{
    const ynode *v = find_key(root, "recipe", NULL);
    if (!v) return fail(p, root->pos, "missing key 'recipe' (the schema version: recipe: 1)");
    if (v->kind == YN_SCALAR && v->type == YS_INT && !v->int_overflow) {
        if (v->ival != 1)
            return fail(p, v->pos, "recipe: unsupported schema version %s (this tool reads version 1)", v->text);
        p->r->version = 1;
        return NF_OK;
    }
    return expected(p, v, "recipe", "the schema version 1");
}

static nf_status parse_sources(parser *p, const ynode *n)
{
    NF_TRY(want_map(p, n, "sources"));
    /* One array for every source up front: grown by one per source it would be copied once per
     * source wherever realloc cannot extend in place (quadratic under ASan, tests/unit/
     * test_recipe_parse.c large_mappings_stay_linear_and_unique).  `sources` is one key of the
     * recipe (duplicates are refused), so this runs once, on a recipe without sources. */
    nf_recipe *r = p->r;
    if (n->n > 0) {
        r->sources = calloc(n->n, sizeof *r->sources);
        if (!r->sources) return nomem(p);
    }
    for (size_t i = 0; i < n->n; i++) {
        const ynode *k = yn_key(n, i), *v = yn_val(n, i);
        char ctx[CTX_MAX];
        snprintf(ctx, sizeof ctx, "sources.%s", k->text);
        if (k->len == 0) return fail(p, k->pos, "sources: a source name must not be empty");
        /* resources name files as SOURCE/file: a name with '/' could never be referred to */
        if (strchr(k->text, '/')) return fail(p, k->pos, "sources: source name '%s' must not contain '/'", k->text);
        const char *raw = NULL;
        NF_TRY(get_string(p, v, ctx, "a path", &raw));
        char *expanded = NULL, *blocked = NULL;
        NF_TRY(expand_vars(p, v, ctx, raw, &expanded, &blocked));
        char *path = expanded ? join_path(p->dir, expanded) : NULL;
        free(expanded);
        if (!path && !blocked) return nomem(p);
        nf_recipe_source *s = &r->sources[r->nsources++];
        s->path = path;
        s->blocked = blocked;
        s->pos = k->pos;
        NF_TRY(dup_into(p, raw, &s->written));
        NF_TRY(dup_into(p, k->text, &s->name));
    }
    return NF_OK;
}

static nf_status parse_output(parser *p, const ynode *n)
{
    static const char *const keys[] = {"name", "max_file_bytes", NULL};
    NF_TRY(want_map(p, n, "output"));
    for (size_t i = 0; i < n->n; i++) {
        const ynode *k = yn_key(n, i), *v = yn_val(n, i);
        if (!strcmp(k->text, "name")) {
            const char *s = NULL;
            NF_TRY(get_string(p, v, "output.name", "a string", &s));
            NF_TRY(dup_into(p, s, &p->r->output_name));
        } else if (!strcmp(k->text, "max_file_bytes")) {
            NF_TRY(get_u64(p, v, "output.max_file_bytes", &p->r->max_file_bytes));
        } else {
            return unknown_key(p, k, "output", keys);
        }
    }
    return NF_OK;
}

/* A `keep` or `drop` value: *keep true for keep. */
static nf_status get_keep(parser *p, const ynode *v, const char *ctx, bool *keep)
{
    const char *s = NULL;
    NF_TRY(get_string(p, v, ctx, "keep or drop", &s));
    if (strcmp(s, "keep") != 0 && strcmp(s, "drop") != 0)
        return fail(p, v->pos, "%s: '%s' is neither keep nor drop", ctx, s);
    *keep = strcmp(s, "keep") == 0;
    return NF_OK;
}

static nf_status parse_defaults(parser *p, const ynode *n)
{
    static const char *const keys[] = {"format", "method", "activation_scales", "gguf_metadata", NULL};
    NF_TRY(want_map(p, n, "defaults"));
    for (size_t i = 0; i < n->n; i++) {
        const ynode *k = yn_key(n, i), *v = yn_val(n, i);
        if (!strcmp(k->text, "format")) {
            char *f = NULL;
            NF_TRY(get_format(p, v, "defaults.format", &f));
            free(p->r->default_format);
            p->r->default_format = f;
            p->r->default_format_pos = v->pos;
        } else if (!strcmp(k->text, "method")) {
            NF_TRY(get_method(p, v, "defaults.method", &p->r->default_method));
            p->r->default_method_pos = v->pos;
        } else if (!strcmp(k->text, "activation_scales")) {
            NF_TRY(get_keep(p, v, "defaults.activation_scales", &p->r->keep_activation_scales));
        } else if (!strcmp(k->text, "gguf_metadata")) {
            bool keep = true;
            NF_TRY(get_keep(p, v, "defaults.gguf_metadata", &keep));
            p->r->drop_gguf_metadata = !keep;
        } else {
            return unknown_key(p, k, "defaults", keys);
        }
    }
    return NF_OK;
}

/* A selector: non-empty, at most RECIPE_MAX_SELECTOR_BYTES; "re:" ones must be POSIX extended
 * regular expressions (the syntax glibc's regcomp accepts, with its messages naming what is
 * wrong: regex_guard.c) that the resolver's own matcher compiles (lib/src/recipe/match.c: the
 * features a tensor name needs), and there are at most RECIPE_MAX_REGEX_SELECTORS of them: each
 * is compiled here and again by the resolver (docs/security.md 7.1, F9, docs/recipes.md). */
#define RECIPE_MAX_SELECTOR_BYTES 4096u
#define RECIPE_MAX_REGEX_SELECTORS 4096u

static nf_status add_selector(parser *p, nf_recipe_rule *rule, const ynode *n, const char *ctx)
{
    const char *s = NULL;
    NF_TRY(get_string(p, n, ctx, "a tensor name, glob or re:REGEX", &s));
    if (n->len > RECIPE_MAX_SELECTOR_BYTES)
        return fail(p, n->pos, "%s: selector of %zu bytes, more than the cap of %u (a tensor name has at most %u)", ctx,
                    n->len, RECIPE_MAX_SELECTOR_BYTES, NF_SOURCE_MAX_NAME_BYTES);
    if (nf_recipe_is_regex(s) && ++p->nregex > RECIPE_MAX_REGEX_SELECTORS)
        return fail(p, n->pos, "%s: more than %u regular expression selectors (the cap; a glob or an exact name "
                    "costs less)", ctx, RECIPE_MAX_REGEX_SELECTORS);
    if (nf_recipe_is_regex(s)) {
        const char *pattern = s + strlen(RECIPE_RE_PREFIX);
        if (!pattern[0]) return fail(p, n->pos, "%s: empty regular expression '%s'", ctx, s);
        const char *why_complex = nf_recipe_regex_too_complex(pattern);
        if (why_complex) return fail(p, n->pos, "%s: regular expression '%s' %s", ctx, pattern, why_complex);
        const char *bad_syntax = nf_recipe_regex_syntax_error(pattern);
        if (bad_syntax) return fail(p, n->pos, "%s: bad regular expression '%s': %s", ctx, pattern, bad_syntax);
        recipe_regex *mine = NULL;
        const char *why = nf_recipe_regex_compile(pattern, &mine);
        nf_recipe_regex_free(mine);
        if (why) return fail(p, n->pos, "%s: regular expression '%s' %s", ctx, pattern, why);
    }
    size_t count = rule->nmatch;
    NF_TRY(grow_one(p, (void **)&rule->match, &count, sizeof *rule->match));
    rule->nmatch = count;
    return dup_into(p, s, &rule->match[count - 1]);
}

static nf_status parse_match(parser *p, nf_recipe_rule *rule, const ynode *n, const char *rctx)
{
    char ctx[CTX_MAX + 16];
    snprintf(ctx, sizeof ctx, "%s.match", rctx);
    if (n->kind == YN_SCALAR) return add_selector(p, rule, n, ctx);
    if (n->kind != YN_SEQ) return expected(p, n, ctx, "a selector or a list of selectors");
    if (n->n == 0) return fail(p, n->pos, "%s: empty list: expected at least one selector", ctx);
    for (size_t i = 0; i < n->n; i++) {
        char ictx[CTX_MAX + 48];
        snprintf(ictx, sizeof ictx, "%s[%zu]", ctx, i);
        NF_TRY(add_selector(p, rule, n->items[i], ictx));
    }
    return NF_OK;
}

static nf_status parse_when(parser *p, nf_recipe_rule *rule, const ynode *n, const char *rctx)
{
    static const char *const keys[] = {"rank", "dtype", "min_elements", "quantized", NULL};
    char ctx[CTX_MAX + 16];
    snprintf(ctx, sizeof ctx, "%s.when", rctx);
    NF_TRY(want_map(p, n, ctx));
    for (size_t i = 0; i < n->n; i++) {
        const ynode *k = yn_key(n, i), *v = yn_val(n, i);
        char kctx[CTX_MAX + 48];
        snprintf(kctx, sizeof kctx, "%s.%s", ctx, k->text);
        if (!strcmp(k->text, "rank")) {
            uint64_t rank = 0;
            NF_TRY(get_u64(p, v, kctx, &rank));
            if (rank > (uint64_t)INT_MAX) return fail(p, v->pos, "%s: rank %s is out of range", kctx, v->text);
            rule->when_rank = (int)rank;
        } else if (!strcmp(k->text, "dtype")) {
            const char *s = NULL;
            NF_TRY(get_string(p, v, kctx, "a source dtype (e.g. BF16, F32, Q4_K)", &s));
            NF_TRY(dup_into(p, s, &rule->when_dtype));
        } else if (!strcmp(k->text, "min_elements")) {
            NF_TRY(get_u64(p, v, kctx, &rule->when_min_elements));
        } else if (!strcmp(k->text, "quantized")) {
            bool b = false;
            NF_TRY(get_bool(p, v, kctx, &b));
            rule->when_quantized = b ? 1 : 0;
        } else {
            return unknown_key(p, k, ctx, keys);
        }
    }
    return NF_OK;
}

/* Method parameters checked where the rule names its method, pointing at the offending key
 * (unknown parameter) or value (wrong type). */
static nf_status check_with_now(parser *p, const nf_recipe_rule *rule, const ynode *with_node, const char *rctx)
{
    char why[256];
    size_t bad = 0;
    bool bad_value = false;
    if (nf_recipe_check_with(rule->method, rule->with, why, sizeof why, &bad, &bad_value)) return NF_OK;
    nf_recipe_pos pos = with_node->pos;
    if (bad < with_node->n) pos = bad_value ? yn_val(with_node, bad)->pos : yn_key(with_node, bad)->pos;
    return fail(p, pos, "%s.with: %s", rctx, why);
}

static nf_status parse_rule(parser *p, nf_recipe_rule *rule, const ynode *n, size_t index)
{
    static const char *const keys[] = {"match", "when", "format", "layout", "method",
                                       "with",  "skip", "optional", NULL};
    char ctx[CTX_MAX];
    snprintf(ctx, sizeof ctx, "rules[%zu]", index);
    rule->when_rank = -1;
    rule->when_quantized = -1;
    rule->skip = -1;
    rule->pos = n->pos;
    NF_TRY(want_map(p, n, ctx));
    const ynode *with_node = NULL;
    bool has_match = false;
    for (size_t i = 0; i < n->n; i++) {
        const ynode *k = yn_key(n, i), *v = yn_val(n, i);
        char kctx[CTX_MAX + 32];
        snprintf(kctx, sizeof kctx, "%s.%s", ctx, k->text);
        if (!strcmp(k->text, "match")) {
            NF_TRY(parse_match(p, rule, v, ctx));
            has_match = true;
        } else if (!strcmp(k->text, "when")) {
            NF_TRY(parse_when(p, rule, v, ctx));
        } else if (!strcmp(k->text, "format")) {
            NF_TRY(get_rule_format(p, v, kctx, &rule->format));
            rule->format_pos = v->pos;
        } else if (!strcmp(k->text, "layout")) {
            NF_TRY(get_layout(p, v, kctx, &rule->layout));
            rule->layout_pos = v->pos;
        } else if (!strcmp(k->text, "method")) {
            NF_TRY(get_method(p, v, kctx, &rule->method));
            rule->method_pos = v->pos;
        } else if (!strcmp(k->text, "with")) {
            NF_TRY(want_map(p, v, kctx));
            NF_TRY(nf_recipe_yn_to_json(v, p->name, &rule->with, p->err));
            rule->with_pos = v->pos;
            with_node = v;
        } else if (!strcmp(k->text, "skip")) {
            bool b = false;
            NF_TRY(get_bool(p, v, kctx, &b));
            rule->skip = b ? 1 : 0;
        } else if (!strcmp(k->text, "optional")) {
            NF_TRY(get_bool(p, v, kctx, &rule->optional));
        } else {
            return unknown_key(p, k, ctx, keys);
        }
    }
    if (!has_match) return fail(p, n->pos, "%s: missing key 'match' (a selector or a list of selectors)", ctx);
    /* With the method in the same rule the parameters are known to be for it; otherwise the
     * method comes from another rule or the defaults, and nf_recipe_resolve checks them. */
    if (with_node && rule->method) NF_TRY(check_with_now(p, rule, with_node, ctx));
    return NF_OK;
}

static nf_status parse_rules(parser *p, const ynode *n)
{
    NF_TRY(want_seq(p, n, "rules"));
    nf_recipe *r = p->r;
    if (n->n == 0) return NF_OK;
    r->rules = calloc(n->n, sizeof *r->rules);
    if (!r->rules) return nomem(p);
    for (size_t i = 0; i < n->n; i++) {
        r->nrules = i + 1; /* counted before parsing so a failure frees the partial rule */
        NF_TRY(parse_rule(p, &r->rules[i], n->items[i], i));
    }
    return NF_OK;
}

/* "SOURCE/file" names a file of a source; "/abs", "./rel", "../rel", "${VAR}/..." and a name
 * without '/' are plain paths, relative to the recipe's directory. */
static bool plain_resource_path(const char *raw)
{
    return raw[0] == '/' || !strncmp(raw, "./", 2) || !strncmp(raw, "../", 3) || !strncmp(raw, "${", 2) ||
           !strchr(raw, '/');
}

static nf_status parse_resource(parser *p, nf_recipe_resource *res, char **file_out, const ynode *k, const ynode *v,
                                const char *cctx)
{
    char ctx[CTX_MAX + 40];
    snprintf(ctx, sizeof ctx, "%s.resources.%s", cctx, k->text);
    res->pos = k->pos;
    if (k->len == 0) return fail(p, k->pos, "%s.resources: a resource role must not be empty", cctx);
    NF_TRY(dup_into(p, k->text, &res->role));
    const char *raw = NULL;
    NF_TRY(get_string(p, v, ctx, "SOURCE/file or a path", &raw));
    NF_TRY(dup_into(p, raw, &res->written));
    if (plain_resource_path(raw)) {
        char *expanded = NULL;
        NF_TRY(expand_vars(p, v, ctx, raw, &expanded, &res->blocked));
        if (res->blocked) return NF_OK;
        res->path = join_path(p->dir, expanded);
        free(expanded);
        return res->path ? NF_OK : nomem(p);
    }
    const char *slash = strchr(raw, '/');
    size_t name_len = (size_t)(slash - raw);
    char name[256];
    if (name_len >= sizeof name) return fail(p, v->pos, "%s: source name too long in '%s'", ctx, raw);
    memcpy(name, raw, name_len);
    name[name_len] = '\0';
    const nf_recipe_source *src = find_source(p->r, name);
    if (!src) {
        char list[200];
        source_list(p->r, list, sizeof list);
        return fail(p, v->pos,
                    "%s: unknown source '%s' in '%s' (sources: %s; a plain path starts with /, ./, ../ or ${VAR})", ctx,
                    name, raw, list);
    }
    const char *file_raw = slash + 1;
    while (*file_raw == '/') file_raw++;
    if (!*file_raw) return fail(p, v->pos, "%s: no file named after '%s/'", ctx, name);
    NF_TRY(dup_into(p, name, &res->source));
    NF_TRY(expand_vars(p, v, ctx, file_raw, file_out, &res->blocked));
    if (res->blocked || !src->path) return NF_OK; /* (a blocked source: --source may give it) */
    char *dir = source_dir(src->path);
    if (!dir) return nomem(p);
    res->path = join_path(dir, *file_out);
    free(dir);
    return res->path ? NF_OK : nomem(p);
}

static nf_status parse_config(parser *p, nf_recipe_component *c, const ynode *n, const char *cctx)
{
    char ctx[CTX_MAX + 8];
    snprintf(ctx, sizeof ctx, "%s.config", cctx);
    if (n->kind != YN_MAP) return expected(p, n, ctx, "{from: SOURCE} or a config mapping");
    const ynode *key = NULL;
    const ynode *from = find_key(n, "from", &key);
    if (from && n->n == 1) {
        char fctx[CTX_MAX + 16];
        snprintf(fctx, sizeof fctx, "%s.from", ctx);
        const char *s = NULL;
        NF_TRY(get_string(p, from, fctx, "a source name", &s));
        if (!find_source(p->r, s)) {
            char list[200];
            source_list(p->r, list, sizeof list);
            return fail(p, from->pos, "%s: unknown source '%s' (sources: %s)", fctx, s, list);
        }
        return dup_into(p, s, &c->config_from);
    }
    return nf_recipe_yn_to_json(n, p->name, &c->config, p->err);
}

static nf_status parse_component(parser *p, size_t ci, const ynode *k, const ynode *v)
{
    static const char *const keys[] = {"config", "resources", NULL};
    nf_recipe_component *c = &p->r->components[ci];
    char ctx[CTX_MAX];
    snprintf(ctx, sizeof ctx, "components.%s", k->text);
    c->pos = k->pos;
    if (k->len == 0) return fail(p, k->pos, "components: a component name must not be empty");
    NF_TRY(dup_into(p, k->text, &c->name));
    NF_TRY(want_map(p, v, ctx));
    for (size_t i = 0; i < v->n; i++) {
        const ynode *ck = yn_key(v, i), *cv = yn_val(v, i);
        if (!strcmp(ck->text, "config")) {
            NF_TRY(parse_config(p, c, cv, ctx));
        } else if (!strcmp(ck->text, "resources")) {
            char rctx[CTX_MAX + 16];
            snprintf(rctx, sizeof rctx, "%s.resources", ctx);
            NF_TRY(want_map(p, cv, rctx));
            if (cv->n == 0) continue;
            c->resources = calloc(cv->n, sizeof *c->resources);
            p->impl->res_file[ci] = calloc(cv->n, sizeof(char *));
            if (!c->resources || !p->impl->res_file[ci]) return nomem(p);
            for (size_t j = 0; j < cv->n; j++) {
                c->nresources = j + 1;
                NF_TRY(parse_resource(p, &c->resources[j], &p->impl->res_file[ci][j], yn_key(cv, j), yn_val(cv, j),
                                      ctx));
            }
        } else {
            return unknown_key(p, ck, ctx, keys);
        }
    }
    return NF_OK;
}

static nf_status parse_components(parser *p, const ynode *n)
{
    NF_TRY(want_map(p, n, "components"));
    if (n->n == 0) return NF_OK;
    nf_recipe *r = p->r;
    r->components = calloc(n->n, sizeof *r->components);
    p->impl->res_file = calloc(n->n, sizeof *p->impl->res_file);
    if (!r->components || !p->impl->res_file) return nomem(p);
    for (size_t i = 0; i < n->n; i++) {
        r->ncomponents = i + 1;
        NF_TRY(parse_component(p, i, yn_key(n, i), yn_val(n, i)));
    }
    return NF_OK;
}

static nf_status parse_groups(parser *p, const ynode *n)
{
    static const char *const keys[] = {"id", "members", NULL};
    NF_TRY(want_seq(p, n, "groups"));
    if (n->n == 0) return NF_OK;
    nf_recipe *r = p->r;
    r->groups = calloc(n->n, sizeof *r->groups);
    if (!r->groups) return nomem(p);
    /* ids and members are checked for uniqueness with hash sets: groups are disjoint. */
    nf_strset ids = {0}, members = {0};
    nf_status st = NF_OK;
    for (size_t i = 0; i < n->n && st == NF_OK; i++) {
        nf_recipe_group *g = &r->groups[i];
        r->ngroups = i + 1;
        const ynode *gn = n->items[i];
        char ctx[64];
        snprintf(ctx, sizeof ctx, "groups[%zu]", i);
        g->pos = gn->pos;
        if ((st = want_map(p, gn, ctx)) != NF_OK) break;
        const ynode *mem = NULL;
        for (size_t j = 0; j < gn->n && st == NF_OK; j++) {
            const ynode *k = yn_key(gn, j), *v = yn_val(gn, j);
            char kctx[96];
            snprintf(kctx, sizeof kctx, "%s.%s", ctx, k->text);
            if (!strcmp(k->text, "id")) {
                const char *s = NULL;
                if ((st = get_string(p, v, kctx, "an object id", &s)) != NF_OK) break;
                size_t first = 0;
                int rc = nf_strset_insert(&ids, v->text, NULL, i, &first);
                if (rc < 0) st = nomem(p);
                else if (rc == 0)
                    st = fail(p, v->pos, "%s: duplicate group id '%s' (groups[%zu] at %d:%d)", kctx, s, first,
                              r->groups[first].pos.line, r->groups[first].pos.col);
                else
                    st = dup_into(p, s, &g->id);
            } else if (!strcmp(k->text, "members")) {
                if ((st = want_seq(p, v, kctx)) != NF_OK) break;
                if (v->n == 0) {
                    st = fail(p, v->pos, "%s: empty list: expected at least one tensor name", kctx);
                    break;
                }
                mem = v;
            } else {
                st = unknown_key(p, k, ctx, keys);
            }
        }
        if (st != NF_OK) break;
        if (!g->id) {
            st = fail(p, gn->pos, "%s: missing key 'id' (the parent object id)", ctx);
            break;
        }
        if (!mem) {
            st = fail(p, gn->pos, "%s: missing key 'members' (the tensors to stack)", ctx);
            break;
        }
        g->members = calloc(mem->n, sizeof *g->members);
        g->member_pos = calloc(mem->n, sizeof *g->member_pos);
        if (!g->members || !g->member_pos) {
            st = nomem(p);
            break;
        }
        for (size_t j = 0; j < mem->n && st == NF_OK; j++) {
            const ynode *m = mem->items[j];
            char mctx[128];
            snprintf(mctx, sizeof mctx, "%s.members[%zu]", ctx, j);
            const char *s = NULL;
            if ((st = get_string(p, m, mctx, "a tensor name", &s)) != NF_OK) break;
            size_t first = 0;
            int rc = nf_strset_insert(&members, m->text, NULL, i, &first);
            if (rc < 0) st = nomem(p);
            else if (rc == 0)
                st = fail(p, m->pos, "%s: tensor '%s' is already a member of group '%s'", mctx, s,
                          r->groups[first].id);
            else if ((st = dup_into(p, s, &g->members[j])) == NF_OK) {
                g->member_pos[j] = m->pos;
                g->nmembers = j + 1;
            }
        }
    }
    nf_strset_free(&ids);
    nf_strset_free(&members);
    return st;
}

/* ---------------------------------------------------------------- budget */
/* A list of names, each checked by get (a format or a method), into a fresh array. */
static nf_status get_name_list(parser *p, const ynode *n, const char *ctx,
                               nf_status (*get)(parser *, const ynode *, const char *, char **), char ***out,
                               size_t *count)
{
    NF_TRY(want_seq(p, n, ctx));
    if (n->n == 0) return fail(p, n->pos, "%s: expected at least one name, got an empty list", ctx);
    *out = calloc(n->n, sizeof **out);
    if (!*out) return nomem(p);
    for (size_t i = 0; i < n->n; i++) {
        char ictx[CTX_MAX + 32];
        snprintf(ictx, sizeof ictx, "%s[%zu]", ctx, i);
        NF_TRY(get(p, n->items[i], ictx, &(*out)[i]));
        *count = i + 1;
        for (size_t j = 0; j < i; j++)
            if (!strcmp((*out)[j], (*out)[i])) return fail(p, n->items[i]->pos, "%s: '%s' is listed twice", ictx, (*out)[i]);
    }
    return NF_OK;
}

/* bits_per_weight: a number > 0 (an integer is one too). */
static nf_status get_positive_number(parser *p, const ynode *n, const char *ctx, double *out)
{
    if (n->kind == YN_SCALAR && n->type == YS_INT && !n->int_overflow) {
        *out = (double)n->ival;
    } else if (n->kind == YN_SCALAR && n->type == YS_FLOAT) {
        char *end = NULL;
        *out = strtod(n->text, &end);
        if (!end || *end) return expected(p, n, ctx, "a positive number");
    } else {
        return expected(p, n, ctx, "a positive number");
    }
    if (!(*out > 0) || !isfinite(*out)) return fail(p, n->pos, "%s: %s is not a positive number", ctx, n->text);
    return NF_OK;
}

static nf_status parse_budget(parser *p, const ynode *n)
{
    static const char *const keys[] = {"bits_per_weight", "bytes",       "formats",     "methods",
                                       "imatrix",         "sample_rows", "sensitivity", NULL};
    nf_recipe_budget *b = &p->r->budget;
    NF_TRY(want_map(p, n, "budget"));
    b->set = true;
    b->pos = n->pos;
    b->sample_rows = NF_RECIPE_BUDGET_SAMPLE_ROWS;
    const ynode *limit = NULL;
    for (size_t i = 0; i < n->n; i++) {
        const ynode *k = yn_key(n, i), *v = yn_val(n, i);
        char kctx[CTX_MAX];
        snprintf(kctx, sizeof kctx, "budget.%s", k->text);
        if (!strcmp(k->text, "bits_per_weight") || !strcmp(k->text, "bytes")) {
            if (limit)
                return fail(p, k->pos, "budget: both bits_per_weight and bytes are given (line %d): the budget is one "
                            "of them", limit->pos.line);
            limit = k;
            b->limit_pos = v->pos;
            if (!strcmp(k->text, "bytes")) {
                NF_TRY(get_u64(p, v, kctx, &b->bytes));
                if (b->bytes == 0) return fail(p, v->pos, "%s: expected a positive number of bytes, got 0", kctx);
            } else {
                NF_TRY(get_positive_number(p, v, kctx, &b->bits_per_weight));
            }
        } else if (!strcmp(k->text, "formats")) {
            NF_TRY(get_name_list(p, v, kctx, get_format, &b->formats, &b->nformats));
        } else if (!strcmp(k->text, "methods")) {
            NF_TRY(get_name_list(p, v, kctx, get_method, &b->methods, &b->nmethods));
        } else if (!strcmp(k->text, "imatrix")) {
            const char *s = NULL;
            NF_TRY(get_string(p, v, kctx, "a source name", &s)); /* (--source may add it: the planner checks) */
            NF_TRY(dup_into(p, s, &b->imatrix));
            b->imatrix_pos = v->pos;
        } else if (!strcmp(k->text, "sample_rows")) {
            NF_TRY(get_u64(p, v, kctx, &b->sample_rows));
        } else if (!strcmp(k->text, "sensitivity")) {
            const char *s = NULL;
            NF_TRY(get_string(p, v, kctx, "a source name", &s)); /* (--sensitivity may add it: the planner checks) */
            NF_TRY(dup_into(p, s, &b->sensitivity));
            b->sensitivity_pos = v->pos;
        } else {
            return unknown_key(p, k, "budget", keys);
        }
    }
    if (!limit)
        return fail(p, n->pos, "budget: missing the budget: bits_per_weight (e.g. 4.5) or bytes (e.g. 4000000000)");
    return NF_OK;
}

static nf_status parse_root(parser *p, const ynode *root)
{
    static const char *const keys[] = {"recipe", "sources", "output", "components", "defaults",
                                       "rules",  "groups",  "budget", NULL};
    if (!root) return fail(p, (nf_recipe_pos){1, 1}, "empty recipe: expected a mapping starting with 'recipe: 1'");
    if (root->kind != YN_MAP) return expected(p, root, "recipe file", "a mapping starting with 'recipe: 1'");
    NF_TRY(parse_version(p, root));
    for (size_t i = 0; i < root->n; i++) {
        const char *k = yn_key(root, i)->text;
        bool known = false;
        for (size_t j = 0; keys[j] && !known; j++) known = !strcmp(k, keys[j]);
        if (!known) return unknown_key(p, yn_key(root, i), NULL, keys);
    }
    const ynode *sources = find_key(root, "sources", NULL);
    if (sources) NF_TRY(parse_sources(p, sources));
    for (size_t i = 0; i < root->n; i++) {
        const char *k = yn_key(root, i)->text;
        const ynode *v = yn_val(root, i);
        if (!strcmp(k, "output")) NF_TRY(parse_output(p, v));
        else if (!strcmp(k, "defaults")) NF_TRY(parse_defaults(p, v));
        else if (!strcmp(k, "rules")) NF_TRY(parse_rules(p, v));
        else if (!strcmp(k, "components")) NF_TRY(parse_components(p, v));
        else if (!strcmp(k, "groups")) NF_TRY(parse_groups(p, v));
        else if (!strcmp(k, "budget")) NF_TRY(parse_budget(p, v));
    }
    return nf_recipe_yn_to_json(root, p->name, &p->r->json, p->err);
}

/* ---------------------------------------------------------------- public entry points */
static void free_rule(nf_recipe_rule *rule)
{
    for (size_t i = 0; i < rule->nmatch; i++) free(rule->match[i]);
    free(rule->match);
    free(rule->when_dtype);
    free(rule->format);
    free(rule->layout);
    free(rule->method);
    json_decref(rule->with);
}

void nf_recipe_free(nf_recipe *r)
{
    if (!r) return;
    recipe_impl *impl = (recipe_impl *)r;
    free(r->path);
    free(r->dir);
    for (size_t i = 0; i < r->nsources; i++) {
        free(r->sources[i].name);
        free(r->sources[i].path);
        free(r->sources[i].written);
        free(r->sources[i].blocked);
    }
    free(r->sources);
    free(r->output_name);
    for (size_t i = 0; i < r->ncomponents; i++) {
        nf_recipe_component *c = &r->components[i];
        free(c->name);
        free(c->config_from);
        json_decref(c->config);
        for (size_t j = 0; j < c->nresources; j++) {
            free(c->resources[j].role);
            free(c->resources[j].source);
            free(c->resources[j].path);
            free(c->resources[j].written);
            free(c->resources[j].blocked);
            if (impl->res_file && impl->res_file[i]) free(impl->res_file[i][j]);
        }
        free(c->resources);
        if (impl->res_file) free(impl->res_file[i]);
    }
    free(impl->res_file);
    nf_recipe_free_roots(impl);
    free(impl->text);
    json_decref(impl->vars);
    json_decref(impl->cli_sources);
    json_decref(impl->allow_paths);
    free(r->components);
    free(r->default_format);
    free(r->default_method);
    for (size_t i = 0; i < r->budget.nformats; i++) free(r->budget.formats[i]);
    free(r->budget.formats);
    for (size_t i = 0; i < r->budget.nmethods; i++) free(r->budget.methods[i]);
    free(r->budget.methods);
    free(r->budget.imatrix);
    free(r->budget.sensitivity);
    for (size_t i = 0; i < r->nrules; i++) free_rule(&r->rules[i]);
    free(r->rules);
    for (size_t i = 0; i < r->ngroups; i++) {
        for (size_t j = 0; j < r->groups[i].nmembers; j++) free(r->groups[i].members[j]);
        free(r->groups[i].members);
        free(r->groups[i].member_pos);
        free(r->groups[i].id);
    }
    free(r->groups);
    json_decref(r->json);
    free(impl);
}

nf_status nf_recipe_parse(const char *text, size_t len, const char *name, const char *dir, nf_recipe **out,
                          nf_error *err)
{
    return nf_recipe_parse_ex(text, len, name, dir, NULL, out, err);
}

nf_status nf_recipe_parse_ex(const char *text, size_t len, const char *name, const char *dir,
                             const nf_recipe_options *opt, nf_recipe **out, nf_error *err)
{
    return nf_recipe_parse_with(text, len, name, dir, opt, NULL, out, err);
}

nf_status nf_recipe_parse_with(const char *text, size_t len, const char *name, const char *dir,
                            const nf_recipe_options *opt, const json_t *values, nf_recipe **out, nf_error *err)
{
    static const nf_recipe_options none = {NULL, 0};
    if (!out) return nf_error_set(err, NF_ERR_USAGE, "nf_recipe_parse: missing output argument");
    *out = NULL;
    if (!text && len) return nf_error_set(err, NF_ERR_USAGE, "nf_recipe_parse: missing text");
    if (!name) name = "<memory>";
    if (len > NF_RECIPE_MAX_BYTES)
        return nf_error_set(err, NF_ERR_INVALID, "%s: recipe of %zu bytes is larger than the %u-byte cap", name, len,
                            (unsigned)NF_RECIPE_MAX_BYTES);
    recipe_impl *impl = calloc(1, sizeof *impl);
    if (!impl) return nf_common_nomem_in(err, name);
    nf_recipe *r = &impl->pub;
    parser p = {.name = name, .opt = opt ? opt : &none, .dir = dir, .err = err, .impl = impl, .r = r,
                .values = values};
    r->path = strdup(name);
    r->dir = strdup(dir ? dir : ".");
    r->default_format = strdup("bf16");
    impl->has_dir = dir != NULL;
    impl->text = malloc(len + 1); /* (a recipe is at most NF_RECIPE_MAX_BYTES) */
    if (impl->text) {
        if (len) memcpy(impl->text, text, len);
        impl->text[len] = '\0';
        impl->text_len = len;
    }
    if (!r->path || !r->dir || !r->default_format || !impl->text) {
        nf_recipe_free(r);
        return nomem(&p);
    }
    /* What the recipe may read, to begin with: its own directory (docs/recipes.md) */
    nf_status st = dir ? nf_recipe_add_root(impl, dir, "the recipe's directory", false, err) : NF_OK;
    ynode *root = NULL;
    if (st == NF_OK) st = nf_recipe_yn_parse(text ? text : "", len, name, &root, err);
    if (st == NF_OK) st = parse_root(&p, root);
    nf_recipe_yn_free(root);
    if (st != NF_OK) {
        nf_recipe_free(r);
        return st;
    }
    *out = r;
    return NF_OK;
}

nf_status nf_recipe_set_source(nf_recipe *r, const char *name, const char *path, nf_error *err)
{
    if (!r || !name || !path) return nf_error_set(err, NF_ERR_USAGE, "nf_recipe_set_source: missing argument");
    if (!name[0] || strchr(name, '/'))
        return nf_error_set(err, NF_ERR_USAGE, "--source %s=%s: a source name must be non-empty and without '/'",
                            name, path);
    if (!path[0]) return nf_error_set(err, NF_ERR_USAGE, "--source %s=: empty path", name);
    recipe_impl *impl = (recipe_impl *)r;
    nf_recipe_note(impl, &impl->cli_sources, json_pack("{s:s,s:s}", "name", name, "path", path));
    /* The override is a command-line path: relative to the current directory, not the
     * recipe's, and taken as given (the shell has expanded it). */
    char *copy = strdup(path);
    if (!copy) return nf_common_nomem(err);
    /* The command line names it: the recipe's other paths may point into it (paths.c). */
    nf_status rst = nf_recipe_add_root(impl, path, "--source", false, err);
    if (rst != NF_OK) {
        free(copy);
        return rst;
    }
    nf_recipe_source *s = (nf_recipe_source *)find_source(r, name);
    if (s) {
        free(s->path);
        free(s->blocked);
        s->blocked = NULL;
        s->path = copy;
        s->command_line = true;
    } else {
        nf_recipe_source *grown = realloc(r->sources, (r->nsources + 1) * sizeof *grown);
        char *name_copy = strdup(name);
        if (grown) r->sources = grown;
        if (!grown || !name_copy) {
            free(copy);
            free(name_copy);
            return nf_common_nomem(err);
        }
        s = &r->sources[r->nsources++];
        memset(s, 0, sizeof *s);
        s->name = name_copy;
        s->path = copy;
        s->pos = (nf_recipe_pos){0, 0};
        s->command_line = true;
    }
    /* Resources named SOURCE/file follow their source to its new place. */
    char *dir = NULL;
    for (size_t i = 0; i < r->ncomponents; i++) {
        nf_recipe_component *c = &r->components[i];
        for (size_t j = 0; j < c->nresources; j++) {
            nf_recipe_resource *res = &c->resources[j];
            if (!res->source || strcmp(res->source, name) != 0) continue;
            const char *file = impl->res_file && impl->res_file[i] ? impl->res_file[i][j] : NULL;
            if (!file) continue;
            if (!dir && !(dir = source_dir(s->path))) return nf_common_nomem(err);
            char *joined = join_path(dir, file);
            if (!joined) {
                free(dir);
                return nf_common_nomem(err);
            }
            free(res->path);
            res->path = joined;
        }
    }
    free(dir);
    return NF_OK;
}
