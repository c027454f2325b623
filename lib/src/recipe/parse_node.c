/* The recipe parser's helpers (parse_impl.h), below parse.c, parse_rules.c and parse_artifact.c:
 * positioned errors, typed scalars and the registry names of the closed schema, and the paths
 * (${VAR} expansion under --allow-env, the recipe's directory, the sources by name). */
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
#include "recipe/parse_impl.h"
#include "recipe/recipe_internal.h"
nf_status nf_recipe_pfail(parser *p, nf_recipe_pos pos, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    nf_status st = nf_common_fail_atv(p->err, p->name, pos.line, pos.col, fmt, ap);
    va_end(ap);
    return st;
}

nf_status nf_recipe_pnomem(parser *p) { return nf_common_nomem_in(p->err, p->name); }

nf_status nf_recipe_pexpected(parser *p, const ynode *n, const char *ctx, const char *what)
{
    char got[128];
    nf_recipe_yn_describe(n, got, sizeof got);
    return nf_recipe_pfail(p, n->pos, "%s: expected %s, got %s", ctx, what, got);
}

nf_status nf_recipe_dup_into(parser *p, const char *s, char **out)
{
    *out = strdup(s);
    return *out ? NF_OK : nf_recipe_pnomem(p);
}

/* Grow an array of `size`-byte elements by one zeroed element. */
nf_status nf_recipe_grow_one(parser *p, void **array, size_t *count, size_t size)
{
    if (*count >= SIZE_MAX / size - 1) return nf_recipe_pnomem(p);
    unsigned char *a = realloc(*array, (*count + 1) * size);
    if (!a) return nf_recipe_pnomem(p);
    memset(a + *count * size, 0, size);
    *array = a;
    (*count)++;
    return NF_OK;
}

/* ---------------------------------------------------------------- typed scalars */
nf_status nf_recipe_get_string(parser *p, const ynode *n, const char *ctx, const char *what, const char **out)
{
    if (n->kind != YN_SCALAR || n->type != YS_STRING) return nf_recipe_pexpected(p, n, ctx, what);
    if (n->len == 0) return nf_recipe_pfail(p, n->pos, "%s: expected %s, got an empty string", ctx, what);
    *out = n->text;
    return NF_OK;
}

/* U64 values are capped at INT64_MAX: JSON (the recipe's provenance copy) holds no more. */
nf_status nf_recipe_get_u64(parser *p, const ynode *n, const char *ctx, uint64_t *out)
{
    if (n->kind != YN_SCALAR || n->type != YS_INT || n->ival < 0) {
        if (n->kind == YN_SCALAR && n->type == YS_INT && n->int_overflow)
            return nf_recipe_pfail(p, n->pos, "%s: integer %s is out of range (at most %lld)", ctx, n->text,
                                   (long long)INT64_MAX);
        return nf_recipe_pexpected(p, n, ctx, "a non-negative integer");
    }
    if (n->int_overflow)
        return nf_recipe_pfail(p, n->pos, "%s: integer %s is out of range (at most %lld)", ctx, n->text,
                               (long long)INT64_MAX);
    *out = (uint64_t)n->ival;
    return NF_OK;
}

nf_status nf_recipe_get_bool(parser *p, const ynode *n, const char *ctx, bool *out)
{
    if (n->kind != YN_SCALAR || n->type != YS_BOOL) return nf_recipe_pexpected(p, n, ctx, "true or false");
    *out = n->bval;
    return NF_OK;
}

nf_status nf_recipe_want_map(parser *p, const ynode *n, const char *ctx)
{
    return n->kind == YN_MAP ? NF_OK : nf_recipe_pexpected(p, n, ctx, "a mapping");
}

nf_status nf_recipe_want_seq(parser *p, const ynode *n, const char *ctx)
{
    return n->kind == YN_SEQ ? NF_OK : nf_recipe_pexpected(p, n, ctx, "a list");
}

nf_status nf_recipe_unknown_key(parser *p, const ynode *key, const char *ctx, const char *const *allowed)
{
    char list[256] = "";
    size_t used = 0;
    for (size_t i = 0; allowed[i]; i++) {
        int k = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", allowed[i]);
        if (k < 0 || (size_t)k >= sizeof list - used) break;
        used += (size_t)k;
    }
    if (ctx) return nf_recipe_pfail(p, key->pos, "%s: unknown key '%s' (expected one of: %s)", ctx, key->text, list);
    return nf_recipe_pfail(p, key->pos, "unknown top-level key '%s' (expected one of: %s)", key->text, list);
}

const ynode *nf_recipe_find_key(const ynode *map, const char *key, const ynode **key_node)
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
nf_status nf_recipe_get_format(parser *p, const ynode *n, const char *ctx, char **out)
{
    const char *s = NULL;
    NF_TRY(nf_recipe_get_string(p, n, ctx, "a format name (e.g. q4_g64_fp16)", &s));
    if (!nf_format_lookup(s)) return nf_recipe_pfail(p, n->pos, "%s: unknown format '%s'", ctx, s);
    return nf_recipe_dup_into(p, s, out);
}

/* A rule's format: a format name, or `budget` (the budget chooses, docs/recipes.md "Budgets"). */
nf_status nf_recipe_get_rule_format(parser *p, const ynode *n, const char *ctx, char **out)
{
    if (n->kind == YN_SCALAR && n->type == YS_STRING && !strcmp(n->text, NF_RECIPE_BUDGET))
        return nf_recipe_dup_into(p, n->text, out);
    return nf_recipe_get_format(p, n, ctx, out);
}

nf_status nf_recipe_get_method(parser *p, const ynode *n, const char *ctx, char **out)
{
    const char *s = NULL;
    NF_TRY(nf_recipe_get_string(p, n, ctx, "a method name", &s));
    nf_method_id id;
    for (size_t i = 0; i < p->opt->nprograms; i++) /* a method program the command line gave */
        if (p->opt->programs[i].name && !strcmp(p->opt->programs[i].name, s)) return nf_recipe_dup_into(p, s, out);
    if (nf_method_find(s, &id, NULL) != NF_OK) {
        char list[160] = "";
        size_t used = 0;
        for (unsigned i = 0; i < NF_METHOD_COUNT; i++) {
            int k = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", nf_method_name((nf_method_id)i));
            if (k < 0 || (size_t)k >= sizeof list - used) break;
            used += (size_t)k;
        }
        return nf_recipe_pfail(p, n->pos,
                               "%s: unknown method '%s' (expected one of: %s; or a method program the command "
                               "line gives with --method-program %s=COMMAND, docs/method-programs.md)",
                               ctx, s, list, s);
    }
    return nf_recipe_dup_into(p, s, out);
}

nf_status nf_recipe_get_layout(parser *p, const ynode *n, const char *ctx, char **out)
{
    const char *s = NULL;
    NF_TRY(nf_recipe_get_string(p, n, ctx, "a layout name or auto", &s));
    if (strcmp(s, "auto") != 0) {
        const nf_layout *l = nf_layout_lookup(s);
        if (!l || l->resource_encoding) return nf_recipe_pfail(p, n->pos, "%s: unknown tensor layout '%s'", ctx, s);
    }
    return nf_recipe_dup_into(p, s, out);
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
nf_status nf_recipe_expand_vars(parser *p, const ynode *n, const char *ctx, const char *raw, char **out, char **blocked)
{
    nf_buf b = {0};
    nf_status st = NF_OK;
    *out = NULL;
    *blocked = NULL;
    for (const char *s = raw; *s && st == NF_OK;) {
        if (s[0] != '$' || s[1] != '{') {
            if (!nf_buf_putc(&b, *s++)) st = nf_recipe_pnomem(p);
            continue;
        }
        const char *name = s + 2;
        const char *close = strchr(name, '}');
        if (!close) {
            st = nf_recipe_pfail(p, n->pos, "%s: unterminated '${' in '%s'", ctx, raw);
            break;
        }
        size_t len = (size_t)(close - name);
        bool ok = len > 0;
        for (size_t i = 0; i < len && ok; i++) ok = var_name_char(name[i], i == 0);
        if (!ok) {
            st = nf_recipe_pfail(p, n->pos, "%s: bad variable name '${%.*s}' in '%s'", ctx, (int)len, name, raw);
            break;
        }
        char var[256];
        if (len >= sizeof var) {
            st = nf_recipe_pfail(p, n->pos, "%s: variable name too long in '%s'", ctx, raw);
            break;
        }
        memcpy(var, name, len);
        var[len] = '\0';
        if (!var_allowed(p, var)) {
            nf_buf_free(&b);
            *blocked = strdup(var);
            return *blocked ? NF_OK : nf_recipe_pnomem(p);
        }
        const char *value = p->values ? json_string_value(json_object_get(p->values, var)) : getenv(var);
        /* noted: a plan records the values it expanded (origin.c), so a task reads no variable */
        if (value && !json_object_get(p->impl->vars, var)) {
            if (!p->impl->vars) p->impl->vars = json_object();
            if (!p->impl->vars || json_object_set_new(p->impl->vars, var, json_string(value)) != 0)
                p->impl->origin_nomem = true;
        }
        if (!value) {
            st = nf_recipe_pfail(p, n->pos, "%s: environment variable '%s' is not set (in '%s')", ctx, var, raw);
            break;
        }
        if (!nf_buf_append(&b, value, strlen(value))) st = nf_recipe_pnomem(p);
        s = close + 1;
    }
    if (st == NF_OK && !nf_buf_putc(&b, '\0')) st = nf_recipe_pnomem(p);
    if (st == NF_OK && b.data[0] == '\0')
        st = nf_recipe_pfail(p, n->pos, "%s: '%s' expands to an empty path", ctx, raw);
    if (st != NF_OK) {
        nf_buf_free(&b);
        return st;
    }
    *out = b.data;
    return NF_OK;
}

/* dir + "/" + path for a relative path; dir NULL, "" or "." leaves it relative to the current
 * directory as written.  NULL on ENOMEM. */
char *nf_recipe_join_path(const char *dir, const char *path)
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
char *nf_recipe_source_dir(const char *source_path)
{
    struct stat st;
    if (!source_path) return NULL;
    if (stat(source_path, &st) == 0 && !S_ISDIR(st.st_mode)) return nf_recipe_dirname(source_path);
    return strdup(source_path);
}

const nf_recipe_source *nf_recipe_source_by_name(const nf_recipe *r, const char *name)
{
    for (size_t i = 0; i < r->nsources; i++)
        if (!strcmp(r->sources[i].name, name)) return &r->sources[i];
    return NULL;
}

const nf_recipe_source *nf_recipe_find_source(const nf_recipe *r, const char *name)
{
    if (!r || !name) return NULL;
    return nf_recipe_source_by_name(r, name);
}

void nf_recipe_source_list(const nf_recipe *r, char *out, size_t size)
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
