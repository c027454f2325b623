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
#include "recipe/parse_impl.h"
#include "recipe/recipe_internal.h"

/* ---------------------------------------------------------------- sections */
static nf_status parse_version(parser *p, const ynode *root)
{
    const ynode *v = nf_recipe_find_key(root, "recipe", NULL);
    if (!v) return nf_recipe_pfail(p, root->pos, "missing key 'recipe' (the schema version: recipe: 1)");
    if (v->kind == YN_SCALAR && v->type == YS_INT && !v->int_overflow) {
        if (v->ival != 1)
            return nf_recipe_pfail(p, v->pos, "recipe: unsupported schema version %s (this tool reads version 1)",
                                   v->text);
        p->r->version = 1;
        return NF_OK;
    }
    return nf_recipe_pexpected(p, v, "recipe", "the schema version 1");
}

static nf_status parse_sources(parser *p, const ynode *n)
{
    NF_TRY(nf_recipe_want_map(p, n, "sources"));
    /* One array for every source up front: grown by one per source it would be copied once per
     * source wherever realloc cannot extend in place (quadratic under ASan, tests/unit/
     * test_recipe_parse.c large_mappings_stay_linear_and_unique).  `sources` is one key of the
     * recipe (duplicates are refused), so this runs once, on a recipe without sources. */
    nf_recipe *r = p->r;
    if (n->n > 0) {
        r->sources = calloc(n->n, sizeof *r->sources);
        if (!r->sources) return nf_recipe_pnomem(p);
    }
    for (size_t i = 0; i < n->n; i++) {
        const ynode *k = yn_key(n, i), *v = yn_val(n, i);
        char ctx[CTX_MAX];
        snprintf(ctx, sizeof ctx, "sources.%s", k->text);
        if (k->len == 0) return nf_recipe_pfail(p, k->pos, "sources: a source name must not be empty");
        /* resources name files as SOURCE/file: a name with '/' could never be referred to */
        if (strchr(k->text, '/'))
            return nf_recipe_pfail(p, k->pos, "sources: source name '%s' must not contain '/'", k->text);
        const char *raw = NULL;
        NF_TRY(nf_recipe_get_string(p, v, ctx, "a path", &raw));
        char *expanded = NULL, *blocked = NULL;
        NF_TRY(nf_recipe_expand_vars(p, v, ctx, raw, &expanded, &blocked));
        char *path = expanded ? nf_recipe_join_path(p->dir, expanded) : NULL;
        free(expanded);
        if (!path && !blocked) return nf_recipe_pnomem(p);
        nf_recipe_source *s = &r->sources[r->nsources++];
        s->path = path;
        s->blocked = blocked;
        s->pos = k->pos;
        NF_TRY(nf_recipe_dup_into(p, raw, &s->written));
        NF_TRY(nf_recipe_dup_into(p, k->text, &s->name));
    }
    return NF_OK;
}

static nf_status parse_output(parser *p, const ynode *n)
{
    static const char *const keys[] = {"name", "max_file_bytes", NULL};
    NF_TRY(nf_recipe_want_map(p, n, "output"));
    for (size_t i = 0; i < n->n; i++) {
        const ynode *k = yn_key(n, i), *v = yn_val(n, i);
        if (!strcmp(k->text, "name")) {
            const char *s = NULL;
            NF_TRY(nf_recipe_get_string(p, v, "output.name", "a string", &s));
            NF_TRY(nf_recipe_dup_into(p, s, &p->r->output_name));
        } else if (!strcmp(k->text, "max_file_bytes")) {
            NF_TRY(nf_recipe_get_u64(p, v, "output.max_file_bytes", &p->r->max_file_bytes));
        } else {
            return nf_recipe_unknown_key(p, k, "output", keys);
        }
    }
    return NF_OK;
}

static nf_status parse_root(parser *p, const ynode *root)
{
    static const char *const keys[] = {"recipe", "sources", "output", "components", "defaults",
                                       "rules",  "groups",  "budget", NULL};
    if (!root)
        return nf_recipe_pfail(p, (nf_recipe_pos){1, 1}, "empty recipe: expected a mapping starting with 'recipe: 1'");
    if (root->kind != YN_MAP) return nf_recipe_pexpected(p, root, "recipe file", "a mapping starting with 'recipe: 1'");
    NF_TRY(parse_version(p, root));
    for (size_t i = 0; i < root->n; i++) {
        const char *k = yn_key(root, i)->text;
        bool known = false;
        for (size_t j = 0; keys[j] && !known; j++) known = !strcmp(k, keys[j]);
        if (!known) return nf_recipe_unknown_key(p, yn_key(root, i), NULL, keys);
    }
    const ynode *sources = nf_recipe_find_key(root, "sources", NULL);
    if (sources) NF_TRY(parse_sources(p, sources));
    for (size_t i = 0; i < root->n; i++) {
        const char *k = yn_key(root, i)->text;
        const ynode *v = yn_val(root, i);
        if (!strcmp(k, "output")) NF_TRY(parse_output(p, v));
        else if (!strcmp(k, "defaults")) NF_TRY(nf_recipe_parse_defaults(p, v));
        else if (!strcmp(k, "rules")) NF_TRY(nf_recipe_parse_rules(p, v));
        else if (!strcmp(k, "components")) NF_TRY(nf_recipe_parse_components(p, v));
        else if (!strcmp(k, "groups")) NF_TRY(nf_recipe_parse_groups(p, v));
        else if (!strcmp(k, "budget")) NF_TRY(nf_recipe_parse_budget(p, v));
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
    for (size_t i = 0; i < r->nprograms; i++) {
        free((char *)r->programs[i].name);
        free((char *)r->programs[i].command);
    }
    free(r->programs);
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

/* The method programs the command line gave, kept by the recipe for the planner: checked
 * names (nf_method_program_check_name), each given once. */
static nf_status copy_programs(nf_recipe *r, const nf_recipe_options *opt, nf_error *err)
{
    if (!opt->nprograms) return NF_OK;
    if (!opt->programs) return nf_error_set(err, NF_ERR_USAGE, "nf_recipe_options: programs missing");
    r->programs = calloc(opt->nprograms, sizeof *r->programs);
    if (!r->programs) return nf_common_nomem(err);
    for (size_t i = 0; i < opt->nprograms; i++) {
        const nf_method_program *m = &opt->programs[i];
        NF_TRY(nf_method_program_check_name(m->name, err));
        if (!m->command) return nf_error_set(err, NF_ERR_USAGE, "--method-program %s: missing command", m->name);
        for (size_t k = 0; k < i; k++)
            if (!strcmp(opt->programs[k].name, m->name))
                return nf_error_set(err, NF_ERR_USAGE, "--method-program %s: given twice", m->name);
        nf_method_program *c = &r->programs[r->nprograms++];
        c->timeout = m->timeout;
        c->name = strdup(m->name);
        c->command = strdup(m->command);
        if (!c->name || !c->command) return nf_common_nomem(err);
    }
    return NF_OK;
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
    static const nf_recipe_options none = {NULL, 0, NULL, 0};
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
    parser p = {.name = name, .opt = opt ? opt : &none, .dir = dir, .err = err, .impl = impl, .r = r, .values = values};
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
        return nf_recipe_pnomem(&p);
    }
    /* What the recipe may read, to begin with: its own directory (docs/recipes.md) */
    nf_status st = dir ? nf_recipe_add_root(impl, dir, "the recipe's directory", false, err) : NF_OK;
    if (st == NF_OK) st = copy_programs(r, p.opt, err);
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
        return nf_error_set(err, NF_ERR_USAGE, "--source %s=%s: a source name must be non-empty and without '/'", name,
                            path);
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
    nf_recipe_source *s = (nf_recipe_source *)nf_recipe_source_by_name(r, name);
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
            if (!dir && !(dir = nf_recipe_source_dir(s->path))) return nf_common_nomem(err);
            char *joined = nf_recipe_join_path(dir, file);
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
