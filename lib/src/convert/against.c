/* verify --against in the library (ninfer/convert.h, nf_verify_against; docs/ninfer-verify.md,
 * "Re-deriving with --against").  It sits in the convert module, not in verify, because it
 * re-derives through the planner (nf_plan_build, nf_plan_compare), and verify is below recipe
 * and convert in the module order (docs/library.md, "Modules and headers").
 *
 * docs/security.md 1.3: an artifact never makes a program open, stat or expand anything it names,
 * and `verify --against` opens only what the caller names.  provenance.recipe is a recipe someone
 * else wrote: executing it would open its sources and resources, expand ${VAR} (and echo the
 * value in a message), stat resource paths (the verdict would tell the artifact's author whether
 * /etc/shadow exists and its size), compile its regular expressions.  So it is never executed
 * (docs/security.md 7.1, F10):
 *   no recipe                 every tensor object is re-derived from the source alone, with the
 *                             format and layout of its object record and the method, parameters
 *                             and source tensor names of its provenance.objects record, all taken
 *                             as data (names looked up among the source's tensors, parameters
 *                             checked); a record that needs anything but the source (an
 *                             importance matrix) is a problem that says so; resources are not
 *                             compared;
 *   opts->recipe              the plan of the caller's recipe, with the source as its base source
 *                             (its other sources and its resources are the recipe's, the caller's
 *                             own file), every object of the artifact compared;
 *                             provenance.recipe is only compared with it, never used. */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "common/checked.h"
#include "common/fail.h"
#include "convert/convert_impl.h"

/* Problems of check "against" go to the report; the first one that cannot be stored makes the
 * whole call NF_ERR_NOMEM (a report missing a problem would be a wrong verdict). */
typedef struct against_sink {
    nf_verify_report *r;
    nf_status st;
} against_sink;

static void add_against(against_sink *s, const char *object, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add_against(against_sink *s, const char *object, const char *fmt, ...)
{
    /* formatted here at the report's own cut (NF_ERROR_MESSAGE_MAX), then stored as is */
    char msg[NF_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    nf_status st = nf_verify_report_add(s->r, object, "against", "%s", msg);
    if (st != NF_OK && s->st == NF_OK) s->st = st;
}

static void on_difference(void *ctx, const char *object, const char *message)
{
    add_against(ctx, object, "%s", message);
}

/* A plan error as problems: the planner joins several problems with "\n  ". */
static void add_plan_error(against_sink *s, const char *message)
{
    const char *p = message;
    for (const char *nl; (nl = strstr(p, "\n  ")) != NULL; p = nl + 3) add_against(s, NULL, "%.*s", (int)(nl - p), p);
    add_against(s, NULL, "%s", p);
}

/* The re-derivation recipe built from provenance.objects (owned arrays; json borrowed from the
 * artifact's directory, which outlives the plan). */
typedef struct derived {
    nf_recipe recipe;
    nf_recipe_source source;
    nf_recipe_component component;
    nf_recipe_rule *rules;
    const char **selectors; /* rule i matches selectors[i] */
    nf_recipe_group *groups;
    json_t *config;
    nf_mprog_spec *programs; /* the caller's method programs, digested (opts->programs) */
    size_t nprograms;
} derived;

static void derived_free(derived *d)
{
    for (size_t i = 0; i < d->nprograms; i++) nf_mprog_spec_free(&d->programs[i]);
    free(d->programs);
    for (size_t i = 0; i < d->recipe.ngroups; i++) free(d->groups[i].members);
    free(d->rules);
    free(d->selectors);
    free(d->groups);
    json_decref(d->config);
}

/* opts->objects as a set of ids (*out NULL: every object), each id the artifact has not a
 * problem.  The ids are borrowed (json_object_set only copies keys). */
static nf_status filter_of(nf_artifact *a, const nf_verify_against_opts *o, json_t **out, against_sink *s,
                           nf_error *err)
{
    *out = NULL;
    if (!o->objects) return NF_OK;
    json_t *want = json_object();
    if (!want) return nf_common_nomem(err);
    for (size_t i = 0; i < o->nobjects; i++) {
        const char *id = o->objects[i];
        if (!id || json_object_get(want, id)) continue;
        if (json_object_set_new(want, id, json_true()) != 0) {
            json_decref(want);
            return nf_common_nomem(err);
        }
        if (!nf_artifact_find(a, id)) add_against(s, id, "asked for, but the artifact has no such object");
    }
    *out = want;
    return NF_OK;
}

static bool wanted(const json_t *want, const char *id) { return !want || json_object_get(want, id) != NULL; }

/* opts->files_first/files_end: of the set *want (NULL: every object), only the objects with
 * bytes in those files of the artifact, as its own directory lays them out (a file holds the
 * logical payload [logical_start, logical_start + payload_bytes); an object the bytes [offset,
 * offset + bytes)): the rule by which the writer gives each file its objects
 * (nf_writer_file_objects), so a plan's lists of ids are never trusted for it. */
static nf_status filter_files(nf_artifact *a, const nf_verify_against_opts *o, json_t **want, against_sink *s,
                              nf_error *err)
{
    if (!o->files_end) return NF_OK;
    size_t nf = nf_artifact_file_count(a);
    json_t *in = json_object();
    if (!in) return nf_common_nomem(err);
    if (o->files_first >= o->files_end || o->files_end > nf) {
        add_against(s, NULL, "files %zu to %zu asked for, but the artifact has files 0 to %zu", o->files_first,
                    o->files_end - 1, nf - 1);
    } else {
        const nf_file_entry *f = nf_artifact_file(a, o->files_first), *l = nf_artifact_file(a, o->files_end - 1);
        uint64_t fa = f->logical_start, fb;
        if (!nf_add_u64(l->logical_start, l->payload_bytes, &fb)) fb = UINT64_MAX; /* (checked by the reader) */
        for (size_t i = 0; i < nf_artifact_object_count(a); i++) {
            const nf_object *ob = nf_artifact_object(a, i);
            /* ob->offset + ob->bytes > fa, without the sum */
            bool ends_after = ob->offset >= fa ? ob->bytes > 0 || ob->offset > fa : fa - ob->offset < ob->bytes;
            if (ends_after && ob->offset < fb && wanted(*want, ob->id) &&
                json_object_set_new(in, ob->id, json_true()) != 0) {
                json_decref(in);
                return nf_common_nomem(err);
            }
        }
    }
    json_decref(*want);
    *want = in;
    return NF_OK;
}

/* Can this record be re-derived from SOURCE alone?  NULL when yes, else why not (into why). */
/* A record of a method program (docs/method-programs.md 5): re-derivable only by the program of
 * that name the caller gives again, whose files' digest is the one recorded.  NULL when so. */
static const char *program_problem(const json_t *rec, const char *name, const nf_mprog_spec *progs, size_t nprogs,
                                   char *why, size_t size)
{
    const nf_mprog_spec *given = NULL;
    for (size_t i = 0; i < nprogs; i++)
        if (!strcmp(progs[i].name, name)) given = &progs[i];
    const json_t *prog = json_object_get(rec, "program");
    const char *digest = json_string_value(json_object_get(prog, "digest"));
    if (!given) {
        snprintf(why, size,
                 "made by method program '%s' (provenance.objects records no built-in method): give "
                 "--method-program %s=COMMAND to run it again (docs/method-programs.md 5)",
                 nf_esc(name).s, nf_esc(name).s);
        return why;
    }
    if (!digest || strcmp(digest, given->digest) != 0) {
        snprintf(why, size,
                 "method program '%s': the command given (its words and files) has digest %s, provenance.objects "
                 "records %s: not the program that made it (docs/method-programs.md 5)",
                 nf_esc(name).s, given->digest, digest ? nf_esc(digest).s : "none");
        return why;
    }
    return NULL;
}

static const char *record_problem(const nf_object *o, const json_t *rec, const nf_source *src, const char *source,
                                  const json_t *used, const nf_mprog_spec *progs, size_t nprogs, char *why, size_t size)
{
    const json_t *method = json_object_get(rec, "method"), *with = json_object_get(rec, "with");
    const json_t *srcs = json_object_get(rec, "sources");
    nf_method_id mid = NF_PLAN_METHOD_PROGRAM;
    const bool builtin = json_is_string(method) && nf_method_find(json_string_value(method), &mid, NULL) == NF_OK;
    if (!builtin && json_is_string(method) && json_object_get(rec, "program") &&
        nf_method_program_check_name(json_string_value(method), NULL) == NF_OK) {
        if (program_problem(rec, json_string_value(method), progs, nprogs, why, size)) return why;
    } else if (!builtin) {
        snprintf(why, size, "provenance.objects records no known method (%s)",
                 json_is_string(method) ? nf_esc(json_string_value(method)).s : "none");
        return why;
    }
    nf_error e;
    if (builtin && nf_method_check_target(mid, o->format, &e) != NF_OK) {
        snprintf(why, size, "the recorded method cannot produce %s: %s", o->format->name, e.message);
        return why;
    }
    if (with && !json_is_object(with)) {
        snprintf(why, size, "provenance.objects records parameters that are not an object");
        return why;
    }
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)with, key, v)
    {
        if (!strcmp(key, "imatrix")) {
            /* the value names a source or a path of the artifact's author: never looked at */
            snprintf(why, size,
                     "cannot be re-derived from %s alone: it was made with an importance matrix "
                     "(with.imatrix); give the recipe and its sources with --recipe",
                     nf_esc(source).s);
            return why;
        }
        if (!builtin) continue; /* a program's parameters are its own */
        if (strcmp(key, "negative_scales") != 0 || !json_is_boolean(v) || mid != NF_METHOD_GROUPED_SEARCH) {
            snprintf(why, size, "cannot be re-derived: parameter '%s' of method %s is not one the converter takes",
                     nf_esc(key).s, nf_method_name(mid));
            return why;
        }
    }
    if (!json_is_array(srcs) || json_array_size(srcs) == 0) {
        snprintf(why, size, "provenance.objects records no source tensors");
        return why;
    }
    size_t i;
    json_array_foreach(srcs, i, v)
    {
        if (!json_is_string(v)) {
            snprintf(why, size, "provenance.objects records a source tensor name that is not a string");
            return why;
        }
        if (!nf_source_find(src, json_string_value(v))) {
            snprintf(why, size, "cannot be re-derived: its source tensor '%s' is not a tensor of %s",
                     nf_esc(json_string_value(v)).s, nf_esc(source).s);
            return why;
        }
        if (json_object_get(used, json_string_value(v))) {
            snprintf(why, size, "cannot be re-derived: its source tensor '%s' is recorded for another object too",
                     nf_esc(json_string_value(v)).s);
            return why;
        }
    }
    return NULL;
}

/* One rule per source tensor of every re-derivable record (format, layout, method, with of the
 * object), after a first rule that skips every tensor of SOURCE; a record of several tensors
 * (or one whose id is not its tensor's name) is a group.  Selectors are exact names of SOURCE's
 * tensors (checked above), so none is read as a glob or a regular expression; nothing holds a
 * path but the command line's SOURCE, and the one component has an empty literal config, so no
 * config.json or resource is read either. */
static nf_status derive_recipe(nf_artifact *a, const nf_verify_against_opts *opts, const nf_source *src,
                               const json_t *want, derived *d, against_sink *s, nf_error *err)
{
    const char *source = opts->source;
    memset(d, 0, sizeof *d);
    if (opts->nprograms && !(d->programs = calloc(opts->nprograms, sizeof *d->programs))) return nf_common_nomem(err);
    for (size_t i = 0; i < opts->nprograms; i++) {
        d->nprograms++;
        NF_TRY(nf_mprog_spec_init(&d->programs[i], &opts->programs[i], err));
    }
    const json_t *prov = json_object_get(nf_artifact_directory(a), "provenance");
    const json_t *objs = json_is_object(prov) ? json_object_get(prov, "objects") : NULL;
    size_t n = nf_artifact_object_count(a), nrules = 1, ngroups = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *rec = objs ? json_object_get(objs, nf_artifact_object(a, i)->id) : NULL;
        const json_t *srcs = json_is_object(rec) ? json_object_get(rec, "sources") : NULL;
        nrules += json_is_array(srcs) ? json_array_size(srcs) : 0;
        ngroups++;
    }
    d->rules = calloc(nrules, sizeof *d->rules);
    d->selectors = calloc(nrules, sizeof *d->selectors);
    d->groups = calloc(ngroups ? ngroups : 1, sizeof *d->groups);
    d->config = json_object();
    json_t *used = json_object();
    if (!d->rules || !d->selectors || !d->groups || !d->config || !used) {
        json_decref(used);
        return nf_common_nomem(err);
    }
    d->selectors[0] = "*";
    d->rules[0] = (nf_recipe_rule){.match = (char **)&d->selectors[0],
                                   .nmatch = 1,
                                   .when_rank = -1,
                                   .when_quantized = -1,
                                   .skip = 1,
                                   .optional = true,
                                   .pos = {1, 1}};
    d->recipe.nrules = 1;
    for (size_t i = 0; i < n; i++) {
        const nf_object *o = nf_artifact_object(a, i);
        if (o->kind != NF_OBJECT_TENSOR || !wanted(want, o->id)) continue;
        const json_t *rec = objs ? json_object_get(objs, o->id) : NULL;
        char why[4 * NF_ERROR_MESSAGE_MAX];
        if (!json_is_object(rec)) {
            add_against(s, o->id, "not recorded in provenance.objects: cannot be re-derived");
            continue;
        }
        if (record_problem(o, rec, src, source, used, d->programs, d->nprograms, why, sizeof why)) {
            add_against(s, o->id, "%s", why);
            continue;
        }
        const json_t *srcs = json_object_get(rec, "sources"), *with = json_object_get(rec, "with");
        size_t k;
        const json_t *v;
        json_array_foreach(srcs, k, v)
        {
            json_object_set_new(used, json_string_value(v), json_true());
            nf_recipe_rule *rule = &d->rules[d->recipe.nrules];
            d->selectors[d->recipe.nrules] = json_string_value(v);
            rule->match = (char **)&d->selectors[d->recipe.nrules];
            rule->nmatch = 1;
            rule->when_rank = -1;
            rule->when_quantized = -1;
            rule->format = (char *)o->format->name;
            rule->layout = (char *)o->layout->name;
            rule->method = (char *)json_string_value(json_object_get(rec, "method"));
            rule->with = json_object_size(with) ? (json_t *)with : NULL;
            rule->skip = 0;
            rule->pos = (nf_recipe_pos){(int)i + 1, 1}; /* "provenance.objects:<object index + 1>" in messages */
            d->recipe.nrules++;
        }
        bool single = json_array_size(srcs) == 1 && strcmp(json_string_value(json_array_get(srcs, 0)), o->id) == 0;
        if (!single) {
            nf_recipe_group *g = &d->groups[d->recipe.ngroups];
            g->id = (char *)o->id;
            g->nmembers = json_array_size(srcs);
            g->members = calloc(g->nmembers, sizeof *g->members);
            g->pos = (nf_recipe_pos){(int)i + 1, 1};
            if (!g->members) {
                json_decref(used);
                return nf_common_nomem(err);
            }
            json_array_foreach(srcs, k, v) g->members[k] = (char *)json_string_value(v);
            d->recipe.ngroups++;
        }
    }
    json_decref(used);
    /* SOURCE is the command line's, as --source base=SOURCE is to convert (docs/recipes.md) */
    d->source = (nf_recipe_source){.name = "base", .path = (char *)source, .command_line = true};
    d->component = (nf_recipe_component){.name = "text", .config = d->config};
    d->recipe.path = "provenance.objects";
    d->recipe.dir = ".";
    d->recipe.version = 1;
    d->recipe.sources = &d->source;
    d->recipe.nsources = 1;
    d->recipe.components = &d->component;
    d->recipe.ncomponents = 1;
    d->recipe.default_format = "bf16";
    d->recipe.rules = d->rules;
    d->recipe.groups = d->groups;
    d->recipe.programs = (nf_method_program *)opts->programs; /* the caller's, for the planner to start */
    d->recipe.nprograms = opts->nprograms;
    return NF_OK;
}
/* The caller's recipe, loaded with what the caller allows it (the order of ninfer-verify's
 * options: the base source, then --source, then --allow-path; --allow-env decides at load how
 * the recipe's paths expand). */
static nf_status load_recipe(const nf_verify_against_opts *o, nf_recipe **out, nf_error *err)
{
    nf_recipe_options ro = {o->allow_env, o->nallow_env, o->programs, o->nprograms};
    NF_TRY(nf_recipe_load_ex(o->recipe, &ro, out, err));
    NF_TRY(nf_recipe_set_source(*out, "base", o->source, err));
    for (size_t i = 0; i < o->nsources; i++)
        NF_TRY(nf_recipe_set_source(*out, o->sources[i].name, o->sources[i].path, err));
    for (size_t i = 0; i < o->nallow_paths; i++) NF_TRY(nf_recipe_allow_path(*out, o->allow_paths[i], err));
    return NF_OK;
}

static nf_status note_not_compared(nf_verify_against_result *res, const char *id, nf_error *err)
{
    char **ids = realloc(res->resources_not_compared, (res->nresources_not_compared + 1) * sizeof *ids);
    if (!ids) return nf_common_nomem(err);
    res->resources_not_compared = ids;
    if (!(ids[res->nresources_not_compared] = strdup(id))) return nf_common_nomem(err);
    res->nresources_not_compared++;
    return NF_OK;
}

void nf_verify_against_result_free(nf_verify_against_result *res)
{
    if (!res) return;
    for (size_t i = 0; i < res->nresources_not_compared; i++) free(res->resources_not_compared[i]);
    free(res->resources_not_compared);
    memset(res, 0, sizeof *res);
    res->recipe_matches_provenance = -1;
    res->source_digests = -1;
}

nf_status nf_verify_against(nf_artifact *a, const nf_verify_against_opts *opts, nf_verify_report *r,
                            nf_verify_against_result *res_out, nf_error *err_out)
{
    /* a local record: a plan error becomes problems even when the caller passes no err */
    nf_error local, *err = &local;
    memset(&local, 0, sizeof local);
    nf_verify_against_result res = {0, NULL, 0, -1, -1, 0, 0};
    if (res_out) *res_out = res;
    if (!a || !opts || !r || !opts->source)
        return nf_error_set(err_out, NF_ERR_USAGE, "nf_verify_against: needs an artifact, a report and a source");
    const char *recipe_path = opts->recipe, *source = opts->source;
    if (!recipe_path && (opts->nsources || opts->nallow_paths || opts->nallow_env))
        return nf_error_set(err_out, NF_ERR_USAGE,
                            "nf_verify_against: sources, allowed paths and variables go "
                            "with a recipe: they say what the recipe may read and expand");
    against_sink sink = {r, NF_OK};
    nf_recipe *recipe = NULL;
    nf_source *src = NULL;
    nf_plan *plan = NULL;
    derived d;
    memset(&d, 0, sizeof d);
    json_t *want = NULL;
    nf_status st = filter_of(a, opts, &want, &sink, err);
    if (st == NF_OK) st = filter_files(a, opts, &want, &sink, err);
    if (st != NF_OK) {
        if (err_out) *err_out = local;
        return st;
    }
    /* the source's files first: a file that is not the one converted is named before any
     * re-derivation (docs/provenance.md, "Checking a source"); not for a part of the artifact
     * (a scale-out task's objects: every task would read every file of the source again) */
    if (opts->objects || opts->files_end) res.source_digests = -2;
    else
        st = nf_convert_against_files(a, source, NULL, on_difference, &sink, &res.source_digests,
                                      &res.source_files_checked, &res.source_files_unrecorded, err);
    if (st != NF_OK) {
        if (err_out) *err_out = local;
        json_decref(want);
        return st;
    }
    if (recipe_path) {
        st = load_recipe(opts, &recipe, err);
        if (st == NF_OK) {
            const json_t *prov = json_object_get(nf_artifact_directory(a), "provenance");
            const json_t *recorded = json_is_object(prov) ? json_object_get(prov, "recipe") : NULL;
            res.recipe_matches_provenance = recorded && recipe->json && json_equal((json_t *)recorded, recipe->json);
        }
    } else {
        /* the source opened here first: the records' tensor names are looked up among its tensors */
        st = nf_source_open(source, &src, err);
        /* a checkpoint the planner would refuse (a quantized one no dialect reads, a malformed
         * declaration: docs/dialects.md) is refused with its message even when none of its
         * tensors' names is the artifact's, and no plan is built */
        nf_dialects *dl = NULL;
        if (st == NF_OK) st = nf_dialects_scan(src, &dl, err);
        nf_dialects_free(dl);
        if (st == NF_OK) st = derive_recipe(a, opts, src, want, &d, &sink, err);
    }
    const nf_recipe *use = recipe_path ? recipe : &d.recipe;
    if (st == NF_OK && (recipe_path || d.recipe.nrules > 1)) st = nf_plan_build(use, &plan, err);
    if (st == NF_OK && plan) {
        size_t differing = 0;
        /* the asked-for objects the artifact has (one it has not is a problem already) */
        bool *only = want ? calloc(plan->nobjects ? plan->nobjects : 1, sizeof *only) : NULL;
        if (want && !only) st = nf_common_nomem(err);
        res.objects_rederived = want ? 0 : nf_plan_object_count(plan);
        for (size_t k = 0; only && k < plan->nobjects; k++) {
            const char *id = plan->objects[k].id;
            only[k] = wanted(want, id) && nf_artifact_find(a, id);
            res.objects_rederived += only[k];
        }
        if (st == NF_OK)
            st = nf_convert_compare_some(plan, a, opts->threads, only, on_difference, &sink, &differing, err);
        free(only);
        /* what the artifact holds and the plan does not produce */
        json_t *desc = nf_plan_describe(plan);
        json_t *made = json_object();
        if (!desc || !made) st = nf_common_nomem(err);
        size_t i;
        json_t *po;
        json_array_foreach(json_object_get(desc, "objects"), i, po)
        {
            json_t *id = json_object_get(po, "id");
            if (json_is_string(id) && json_object_set_new(made, json_string_value(id), json_true()) != 0)
                st = nf_common_nomem(err);
        }
        for (i = 0; st == NF_OK && i < nf_artifact_object_count(a); i++) {
            const nf_object *o = nf_artifact_object(a, i);
            if (json_object_get(made, o->id) || !wanted(want, o->id)) continue;
            if (o->kind == NF_OBJECT_RESOURCE && !recipe_path) st = note_not_compared(&res, o->id, err);
            else if (recipe_path)
                add_against(&sink, o->id, "not produced by the recipe %s from %s", nf_esc(recipe_path).s,
                            nf_esc(source).s);
        }
        json_decref(made);
        json_decref(desc);
    } else if (st == NF_OK && !recipe_path) {
        for (size_t i = 0; st == NF_OK && i < nf_artifact_object_count(a); i++)
            if (nf_artifact_object(a, i)->kind == NF_OBJECT_RESOURCE && wanted(want, nf_artifact_object(a, i)->id))
                st = note_not_compared(&res, nf_artifact_object(a, i)->id, err);
    }
    if (st == NF_ERR_INVALID) { /* the recipe, the records or the source do not fit: a verdict */
        add_plan_error(&sink, local.message);
        st = NF_OK;
    }
    if (st == NF_OK && sink.st != NF_OK) st = nf_error_set(err, sink.st, "out of memory");
    nf_plan_free(plan);
    nf_recipe_free(recipe);
    derived_free(&d);
    json_decref(want);
    nf_source_close(src);
    if (st != NF_OK || !res_out) {
        if (st != NF_OK && err_out) *err_out = local;
        nf_verify_against_result_free(&res);
        return st;
    }
    *res_out = res;
    return NF_OK;
}
