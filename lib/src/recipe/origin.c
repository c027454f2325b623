/* What a recipe was made from, as data (ninfer/recipe.h, nf_recipe_origin): a scale-out plan
 * records it and every task rebuilds the same recipe from it (docs/scale-out.md, "What a plan
 * holds") -- the text as parsed, its name and directory, the ${VAR} values it expanded, the
 * sources and the allowed paths the caller added, and the budget's sensitivity source -- never
 * a command line.  Rebuilding takes the record as untrusted input: every member is checked and
 * a wrong one named by its place in the record. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/escape.h>

#include "recipe/recipe_internal.h"

nf_status nf_recipe_origin(const nf_recipe *r, json_t **out, nf_error *err)
{
    const recipe_impl *impl = (const recipe_impl *)r;
    *out = NULL;
    json_t *text = json_stringn(impl->text, impl->text_len);
    if (!text)
        return nf_error_set(err, NF_ERR_INVALID, "%s: the recipe's text is not UTF-8 (a plan records it as JSON text)",
                            r->path);
    if (impl->origin_nomem)
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: a path or variable value given to the recipe is not UTF-8 (a "
                            "plan records them as JSON text), or memory ran out",
                            r->path);
    const char *sens = r->budget.sensitivity;
    *out = json_pack("{s:s,s:o,s:o,s:o,s:o,s:o,s:o}", "name", r->path, "dir",
                     impl->has_dir ? json_string(r->dir) : json_null(), "text", text, "variables",
                     impl->vars ? json_deep_copy(impl->vars) : json_object(), "sources",
                     impl->cli_sources ? json_deep_copy(impl->cli_sources) : json_array(), "allow_paths",
                     impl->allow_paths ? json_deep_copy(impl->allow_paths) : json_array(), "sensitivity",
                     sens ? json_string(sens) : json_null());
    return *out ? NF_OK : nf_error_set(err, NF_ERR_NOMEM, "out of memory");
}

/* ---------------------------------------------------------------- rebuilding */
typedef struct origin_check {
    const char *where; /* "PLAN.json: conversion.recipe" */
    nf_error *err;
} origin_check;

static nf_status bad(const origin_check *c, const char *member, const char *why)
{
    return nf_error_set(c->err, NF_ERR_INVALID, "%s.%s: %s", c->where, member, why);
}

/* Every member of o is one of `known` (a NULL-terminated list). */
static nf_status only_known(const origin_check *c, const json_t *o, const char *what, const char *const *known)
{
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)o, key, v)
    {
        bool ok = false;
        for (size_t i = 0; known[i] && !ok; i++) ok = strcmp(key, known[i]) == 0;
        if (!ok) {
            char m[NF_ESCAPED_MAX + 128];
            snprintf(m, sizeof m, "%s%s'%s'", what, *what ? "." : "", nf_esc(key).s);
            return bad(c, m, "unknown member (a plan of another version, or edited)");
        }
    }
    return NF_OK;
}

/* A list of strings, or of {"name", "path"} objects (pairs). */
static nf_status check_list(const origin_check *c, const json_t *v, const char *member, bool pairs)
{
    if (!json_is_array(v)) return bad(c, member, "not a list");
    static const char *const pair_keys[] = {"name", "path", NULL};
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *e = json_array_get(v, i);
        char m[96];
        snprintf(m, sizeof m, "%s[%zu]", member, i);
        if (!pairs && !json_is_string(e)) return bad(c, m, "not a string");
        if (pairs && (!json_is_object(e) || !json_is_string(json_object_get(e, "name")) ||
                      !json_is_string(json_object_get(e, "path"))))
            return bad(c, m, "not an object {\"name\": STRING, \"path\": STRING}");
        if (pairs) NF_TRY(only_known(c, e, m, pair_keys));
    }
    return NF_OK;
}

/* The record's members, each of its type. */
static nf_status check_origin(const origin_check *c, const json_t *o)
{
    static const char *const keys[] = {"name",    "dir",         "text",        "variables",
                                       "sources", "allow_paths", "sensitivity", NULL};
    if (!json_is_object(o)) return nf_error_set(c->err, NF_ERR_INVALID, "%s: not an object", c->where);
    NF_TRY(only_known(c, o, "", keys));
    const json_t *dir = json_object_get(o, "dir"), *sens = json_object_get(o, "sensitivity");
    if (!json_is_string(json_object_get(o, "name"))) return bad(c, "name", "not a string");
    if (!json_is_string(dir) && !json_is_null(dir)) return bad(c, "dir", "neither a string nor null");
    if (!json_is_string(json_object_get(o, "text"))) return bad(c, "text", "not a string");
    const json_t *vars = json_object_get(o, "variables");
    if (!json_is_object(vars)) return bad(c, "variables", "not an object");
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)vars, key, v) if (!json_is_string(v))
    {
        char m[NF_ESCAPED_MAX + 16];
        snprintf(m, sizeof m, "variables.'%s'", nf_esc(key).s);
        return bad(c, m, "not a string");
    }
    NF_TRY(check_list(c, json_object_get(o, "sources"), "sources", true));
    NF_TRY(check_list(c, json_object_get(o, "allow_paths"), "allow_paths", false));
    if (!json_is_string(sens) && !json_is_null(sens)) return bad(c, "sensitivity", "neither a string nor null");
    return NF_OK;
}

/* The caller's additions, in the order recorded: sources, allowed paths, the sensitivity
 * source's name. */
static nf_status replay(const origin_check *c, const json_t *o, nf_recipe *r)
{
    nf_error local;
    const json_t *sources = json_object_get(o, "sources"), *paths = json_object_get(o, "allow_paths");
    for (size_t i = 0; i < json_array_size(sources); i++) {
        const json_t *s = json_array_get(sources, i);
        nf_status st = nf_recipe_set_source(r, json_string_value(json_object_get(s, "name")),
                                            json_string_value(json_object_get(s, "path")), &local);
        if (st != NF_OK)
            return nf_error_set(c->err, st == NF_ERR_USAGE ? NF_ERR_INVALID : st, "%s.sources[%zu]: %s", c->where, i,
                                local.message);
    }
    for (size_t i = 0; i < json_array_size(paths); i++) {
        nf_status st = nf_recipe_allow_path(r, json_string_value(json_array_get(paths, i)), &local);
        if (st != NF_OK)
            return nf_error_set(c->err, st == NF_ERR_USAGE ? NF_ERR_INVALID : st, "%s.allow_paths[%zu]: %s", c->where,
                                i, local.message);
    }
    const char *sens = json_string_value(json_object_get(o, "sensitivity"));
    nf_recipe_budget *rb = &r->budget;
    if (sens && !rb->set) return bad(c, "sensitivity", "the recipe has no budget");
    if (!sens != !rb->sensitivity || (sens && strcmp(sens, rb->sensitivity) != 0)) {
        if (!sens || rb->sensitivity) return bad(c, "sensitivity", "not the recipe's budget.sensitivity");
        if (!(rb->sensitivity = strdup(sens))) return nf_error_set(c->err, NF_ERR_NOMEM, "out of memory");
    }
    return NF_OK;
}

nf_status nf_recipe_from_origin(const json_t *origin, const char *where, nf_recipe **out, nf_error *err)
{
    return nf_recipe_from_origin_ex(origin, where, NULL, 0, out, err);
}

nf_status nf_recipe_from_origin_ex(const json_t *origin, const char *where, const nf_method_program *programs,
                                   size_t nprograms, nf_recipe **out, nf_error *err)
{
    *out = NULL;
    origin_check c = {where, err};
    NF_TRY(check_origin(&c, origin));
    const json_t *vars = json_object_get(origin, "variables"), *dir = json_object_get(origin, "dir");
    const char *text = json_string_value(json_object_get(origin, "text"));
    size_t nvars = json_object_size(vars), i = 0;
    const char **names = calloc(nvars ? nvars : 1, sizeof *names);
    if (!names) return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)vars, key, v) names[i++] = key;
    nf_recipe_options ro = {.allow_env = names, .nallow_env = nvars, .programs = programs, .nprograms = nprograms};
    nf_recipe *r = NULL;
    nf_error local;
    nf_status st = nf_recipe_parse_with(text, json_string_length(json_object_get(origin, "text")),
                                        json_string_value(json_object_get(origin, "name")), json_string_value(dir), &ro,
                                        vars, &r, &local);
    free(names);
    if (st != NF_OK) return nf_error_set(err, st, "%s.text: %s", where, local.message);
    st = replay(&c, origin, r);
    if (st != NF_OK) {
        nf_recipe_free(r);
        return st;
    }
    *out = r;
    return NF_OK;
}
