/* ninfer-verify: structural, word-level and checksum validation of .ninfer artifacts, with an
 * exit status for CI (docs/ninfer-verify.md, "Exit status"). */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "cli.h"

typedef struct verify_opts {
    nf_verify_level level;
    const char *against;
    const char *recipe;
    nf_cli_recipe_args ra; /* with --recipe: --source, --allow-path, --allow-env */
    unsigned threads;      /* 0: every core */
    bool require_checksums;
} verify_opts;

static const nf_option options[] = {
    NF_OPT_SET_ROW(verify_opts, level, NF_VERIFY_STRUCTURE, "quick", 0,
                   "check structure only (framing, directory, files, object ranges, sizes, references)"),
    NF_OPT_FLAG_ROW(verify_opts, require_checksums, "require-checksums", 0,
                    "invalid unless metadata.checksums has a digest for every object and for the directory (CI "
                    "gates)"),
    NF_OPT_STRING_ROW(verify_opts, against, "against", 0, "SOURCE",
                      "also re-derive every tensor from SOURCE alone, with the format, method and parameters recorded "
                      "per object in provenance.objects, and compare bit for bit (nothing the artifact names is "
                      "opened; resources are not compared)"),
    NF_OPT_STRING_ROW(verify_opts, recipe, "recipe", 0, "R.yaml",
                      "with --against: re-derive with this recipe (SOURCE as its base source) instead, resources "
                      "included; the recipe recorded in provenance.recipe is only compared with it, never run"),
    NF_OPT_LIST_ROW(verify_opts, ra.sources, ra.nsources, NF_CHECK_KEY_VALUE, NULL, "source", 0, "NAME=PATH",
                    "with --recipe: replace (or add) the recipe's source NAME, e.g. its imatrix (repeatable)"),
    NF_OPT_LIST_ROW(verify_opts, ra.allow_paths, ra.nallow_paths, NF_CHECK_NONEMPTY, "a directory", "allow-path", 0,
                    "DIR",
                    "with --recipe: let the recipe's resources also come from DIR (besides its own directory, "
                    "SOURCE and --source paths; repeatable)"),
    NF_OPT_LIST_ROW(verify_opts, ra.allow_env, ra.nallow_env, NF_CHECK_NONEMPTY, "a variable name", "allow-env", 0,
                    "NAME", "with --recipe: let ${NAME} in the recipe's paths expand (repeatable)"),
    NF_OPT_UINT_ROW(verify_opts, threads, 1, NF_CLI_MAX_THREADS, NULL, "threads", 'j', "N",
                    "check objects on N threads (default: every core); the report is the same for any N"),
    NF_OPT_END,
};

static const nf_program program = {
    "ninfer-verify",
    "ninfer-verify FILE... [--json] [--quick | --require-checksums] [--threads N]\n"
    "                     [--against SOURCE [--recipe R.yaml [--source NAME=PATH]... [--allow-path DIR]...\n"
    "                                        [--allow-env NAME]...]]",
    "Check .ninfer artifacts: structure (framing, JSON directory, files, object ranges, encoded\n"
    "sizes, references), words (every code and scale legal for its format, canonical padding, zero\n"
    "gaps between objects, after the JSON directory and in continuation headers) and checksums\n"
    "(xxh3-128 of each object and of the directory, as recorded in metadata.checksums).  Every\n"
    "problem found is reported, not just the first.  Only with a digest for every object and for\n"
    "the directory is any change to any byte detected; an artifact that records fewer checksums\n"
    "(or none) can still be valid, unless --require-checksums.  --against SOURCE re-derives every\n"
    "tensor from SOURCE with the method and parameters recorded per object and compares it bit for\n"
    "bit; --recipe R.yaml re-derives with that recipe instead.  The recipe recorded in the artifact\n"
    "is never run: an artifact never makes verify open, stat or expand anything it names.",
    options,
    "  ninfer-verify model.ninfer                 # exit 0 when valid, 1 when not\n"
    "  ninfer-verify --quick model.ninfer         # structure only; reads no payload\n"
    "  ninfer-verify --require-checksums model.ninfer   # CI gate: every byte covered\n"
    "  ninfer-verify --json model.ninfer > verdict.json\n"
    "  ninfer-verify model.ninfer --against ./MyModel   # re-derive every tensor\n"
    "  ninfer-verify model.ninfer --against ./MyModel --recipe recipes/q4-imatrix.yaml \\\n"
    "      --source imatrix=./imatrix.gguf\n",
};

/* ---------------------------------------------------------------- --against
 * docs/security.md 1.3: an artifact never makes a program open, stat or expand anything it names,
 * and `verify --against` opens only what the command line names.  provenance.recipe is a recipe
 * someone else wrote: executing it would open its sources and resources, expand ${VAR} (and
 * echo the value in a message), stat resource paths (the verdict would tell the artifact's
 * author whether /etc/shadow exists and its size), compile its regular expressions.  So it is
 * never executed (docs/security.md 7.1, F10; docs/ninfer-verify.md):
 *   --against SOURCE          every tensor object is re-derived from SOURCE alone, with the format
 *                             and layout of its object record and the method, parameters and
 *                             source tensor names of its provenance.objects record, all taken
 *                             as data (names looked up among SOURCE's tensors, parameters
 *                             checked); a record that needs anything but SOURCE (an importance
 *                             matrix) is a problem that says so; resources are not compared;
 *   --against SOURCE --recipe R.yaml
 *                             the plan of the command line's recipe, with SOURCE as its base
 *                             source (its other sources and its resources are the recipe's,
 *                             the user's own file), every object of the artifact compared;
 *                             provenance.recipe is only compared with R, never used. */
typedef struct against_result {
    size_t rederived;         /* objects of the plan, each compared with the artifact */
    json_t *not_compared;     /* ids of resources left out (SOURCE alone) */
    int recipe_same;          /* --recipe: 1 R equals provenance.recipe, 0 differs, -1 not asked */
} against_result;

/* A problem of check "against" (the library's report type, nf_verify_report_add). */
#define add_against(r, object, ...) ((void)nf_verify_report_add((r), (object), "against", __VA_ARGS__))

static void on_difference(void *ctx, const char *object, const char *message)
{
    add_against(ctx, object, "%s", message);
}

/* A plan error as problems: the planner joins several problems with "\n  ". */
static void add_plan_error(nf_verify_report *r, const char *message)
{
    const char *p = message;
    for (const char *nl; (nl = strstr(p, "\n  ")) != NULL; p = nl + 3)
        add_against(r, NULL, "%.*s", (int)(nl - p), p);
    add_against(r, NULL, "%s", p);
}

/* The re-derivation recipe built from provenance.objects (owned arrays; json borrowed from the
 * artifact's directory, which outlives the plan). */
typedef struct derived {
    nf_recipe recipe;
    nf_recipe_source source;
    nf_recipe_component component;
    nf_recipe_rule *rules;
    const char **selectors;   /* rule i matches selectors[i] */
    nf_recipe_group *groups;
    json_t *config;
} derived;

static void derived_free(derived *d)
{
    for (size_t i = 0; i < d->recipe.ngroups; i++) free(d->groups[i].members);
    free(d->rules);
    free(d->selectors);
    free(d->groups);
    json_decref(d->config);
}

/* Can this record be re-derived from SOURCE alone?  NULL when yes, else why not (into why). */
static const char *record_problem(const nf_object *o, const json_t *rec, const nf_source *src, const char *source,
                                  const json_t *used, char *why, size_t size)
{
    const json_t *method = json_object_get(rec, "method"), *with = json_object_get(rec, "with");
    const json_t *srcs = json_object_get(rec, "sources");
    nf_method_id mid;
    if (!json_is_string(method) || nf_method_find(json_string_value(method), &mid, NULL) != NF_OK) {
        snprintf(why, size, "provenance.objects records no known method (%s)",
                 json_is_string(method) ? nf_esc(json_string_value(method)).s : "none");
        return why;
    }
    nf_error e;
    if (nf_method_check_target(mid, o->format, &e) != NF_OK) {
        snprintf(why, size, "the recorded method cannot produce %s: %s", o->format->name, e.message);
        return why;
    }
    if (with && !json_is_object(with)) {
        snprintf(why, size, "provenance.objects records parameters that are not an object");
        return why;
    }
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)with, key, v) {
        if (!strcmp(key, "imatrix")) {
            /* the value names a source or a path of the artifact's author: never looked at */
            snprintf(why, size, "cannot be re-derived from %s alone: it was made with an importance matrix "
                     "(with.imatrix); give the recipe and its sources with --recipe", nf_esc(source).s);
            return why;
        }
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
    json_array_foreach(srcs, i, v) {
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
static nf_status derive_recipe(nf_artifact *a, const char *source, const nf_source *src, derived *d,
                               nf_verify_report *r, nf_error *err)
{
    memset(d, 0, sizeof *d);
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
        return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    }
    d->selectors[0] = "*";
    d->rules[0] = (nf_recipe_rule){.match = (char **)&d->selectors[0], .nmatch = 1, .when_rank = -1, .skip = 1,
                                   .optional = true, .pos = {1, 1}};
    d->recipe.nrules = 1;
    for (size_t i = 0; i < n; i++) {
        const nf_object *o = nf_artifact_object(a, i);
        if (o->kind != NF_OBJECT_TENSOR) continue;
        const json_t *rec = objs ? json_object_get(objs, o->id) : NULL;
        char why[4 * NF_ERROR_MESSAGE_MAX];
        if (!json_is_object(rec)) {
            add_against(r, o->id, "not recorded in provenance.objects: cannot be re-derived");
            continue;
        }
        if (record_problem(o, rec, src, source, used, why, sizeof why)) {
            add_against(r, o->id, "%s", why);
            continue;
        }
        const json_t *srcs = json_object_get(rec, "sources"), *with = json_object_get(rec, "with");
        size_t k;
        const json_t *v;
        json_array_foreach(srcs, k, v) {
            json_object_set_new(used, json_string_value(v), json_true());
            nf_recipe_rule *rule = &d->rules[d->recipe.nrules];
            d->selectors[d->recipe.nrules] = json_string_value(v);
            rule->match = (char **)&d->selectors[d->recipe.nrules];
            rule->nmatch = 1;
            rule->when_rank = -1;
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
                return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
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
    return NF_OK;
}
/* Run the comparison of an artifact found valid.  Returns NF_OK when it ran to a verdict
 * (differences and what cannot be re-derived go into the report); NF_ERR_IO / NF_ERR_NOMEM
 * when SOURCE or the recipe cannot be read (exit 3). */
static nf_status verify_against(const char *path, const char *source, const char *recipe_path,
                                const nf_cli_recipe_args *ra, unsigned threads, nf_verify_report *r,
                                against_result *res, nf_error *err)
{
    nf_artifact *a = NULL;
    NF_TRY(nf_artifact_open(path, NF_READ_PREAD, &a, err));
    nf_recipe *recipe = NULL;
    nf_source *src = NULL;
    nf_plan *plan = NULL;
    derived d;
    memset(&d, 0, sizeof d);
    nf_status st = NF_OK;
    if (recipe_path) {
        nf_recipe_options ro = {ra->allow_env, ra->nallow_env};
        st = nf_recipe_load_ex(recipe_path, &ro, &recipe, err);
        if (st == NF_OK) st = nf_recipe_set_source(recipe, "base", source, err);
        if (st == NF_OK) st = nf_cli_recipe_apply(recipe, ra, err);
        if (st == NF_OK) {
            const json_t *prov = json_object_get(nf_artifact_directory(a), "provenance");
            const json_t *recorded = json_is_object(prov) ? json_object_get(prov, "recipe") : NULL;
            res->recipe_same = recorded && recipe->json && json_equal((json_t *)recorded, recipe->json);
        }
    } else {
        /* SOURCE opened here first: the records' tensor names are looked up among its tensors */
        st = nf_source_open(source, &src, err);
        if (st == NF_OK) st = derive_recipe(a, source, src, &d, r, err);
    }
    const nf_recipe *use = recipe_path ? recipe : &d.recipe;
    if (st == NF_OK && (recipe_path || d.recipe.nrules > 1)) st = nf_plan_build(use, &plan, err);
    if (st == NF_OK && plan) {
        size_t differing = 0;
        st = nf_plan_compare(plan, a, threads, on_difference, r, &differing, err);
        res->rederived = nf_plan_object_count(plan);
        /* what the artifact holds and the plan does not produce */
        json_t *desc = nf_plan_describe(plan);
        json_t *made = json_object();
        size_t i;
        json_t *po;
        json_array_foreach(json_object_get(desc, "objects"), i, po) {
            json_t *id = json_object_get(po, "id");
            if (json_is_string(id)) json_object_set_new(made, json_string_value(id), json_true());
        }
        for (i = 0; st == NF_OK && i < nf_artifact_object_count(a); i++) {
            const nf_object *o = nf_artifact_object(a, i);
            if (json_object_get(made, o->id)) continue;
            if (o->kind == NF_OBJECT_RESOURCE && !recipe_path)
                json_array_append_new(res->not_compared, json_string(o->id));
            else if (recipe_path)
                add_against(r, o->id, "not produced by the recipe %s from %s", nf_esc(recipe_path).s,
                            nf_esc(source).s);
        }
        json_decref(made);
        json_decref(desc);
    } else if (st == NF_OK && !recipe_path) {
        for (size_t i = 0; i < nf_artifact_object_count(a); i++)
            if (nf_artifact_object(a, i)->kind == NF_OBJECT_RESOURCE)
                json_array_append_new(res->not_compared, json_string(nf_artifact_object(a, i)->id));
    }
    if (st == NF_ERR_INVALID) { /* the recipe, the records or SOURCE do not fit: a verdict */
        add_plan_error(r, err->message);
        st = NF_OK;
    }
    nf_plan_free(plan);
    nf_recipe_free(recipe);
    derived_free(&d);
    nf_source_close(src);
    nf_artifact_close(a);
    return st;
}

/* What --against did, in the report: {"source", "recipe", "objects_rederived",
 * "resources_not_compared": [ids], "recipe_matches_provenance": bool (with --recipe)}. */
static json_t *against_json(const verify_opts *vo, const against_result *res)
{
    json_t *j = json_pack("{s:o,s:o,s:I,s:O}", "source", nf_cli_json_cstr(vo->against), "recipe",
                          vo->recipe ? nf_cli_json_cstr(vo->recipe) : json_null(), "objects_rederived",
                          (json_int_t)res->rederived, "resources_not_compared", res->not_compared);
    if (j && vo->recipe) json_object_set_new(j, "recipe_matches_provenance", json_boolean(res->recipe_same == 1));
    return j;
}

static json_t *report_json(const char *path, const nf_verify_report *r, const verify_opts *vo,
                           const against_result *res)
{
    json_t *problems = json_array();
    for (size_t i = 0; i < r->count; i++) {
        const nf_problem *p = &r->problems[i];
        json_array_append_new(problems, json_pack("{s:o,s:s,s:s}", "object",
                                                  p->object ? json_string(p->object) : json_null(),
                                                  "check", p->check, "message", p->message));
    }
    json_t *j = json_pack("{s:o,s:b,s:I,s:I,s:o}", "file", nf_cli_json_cstr(path), "valid", r->valid,
                          "objects_checked", (json_int_t)r->objects_checked, "checksums_checked",
                          (json_int_t)r->checksums_checked, "problems", problems);
    if (j && res) json_object_set_new(j, "against", against_json(vo, res));
    return j;
}

static void print_human(const nf_cli *cli, const char *path, const nf_verify_report *r, const verify_opts *vo,
                        const against_result *res)
{
    if (r->valid) {
        if (cli->verbosity < 0) return;
        printf("%s: valid (%llu objects; checked structure", nf_cli_name(path).s, (unsigned long long)r->objects_checked);
        if (vo->level >= NF_VERIFY_WORDS) printf(", words");
        if (vo->level >= NF_VERIFY_CHECKSUMS) {
            if (r->checksums_checked)
                printf(", %llu checksums", (unsigned long long)r->checksums_checked);
            else
                printf("; no checksums recorded");
        }
        if (res && vo->recipe) {
            printf("; %zu objects re-derived from %s with %s", res->rederived, nf_cli_name(vo->against).s,
                   nf_cli_name(vo->recipe).s);
            if (res->recipe_same != 1) printf(", and the recipe differs from provenance.recipe");
        } else if (res) {
            size_t skipped = json_array_size(res->not_compared);
            printf("; %zu tensors re-derived from %s", res->rederived, nf_cli_name(vo->against).s);
            if (skipped) printf(", %zu resource%s not compared", skipped, skipped == 1 ? "" : "s");
        }
        printf(")\n");
        return;
    }
    /* One line per problem whatever the names hold: the id escaped, and the message (whose
     * names the library escaped) made one line (ninfer/escape.h). */
    printf("%s: INVALID: %zu problem%s\n", nf_cli_name(path).s, r->count, r->count == 1 ? "" : "s");
    for (size_t i = 0; i < r->count; i++) {
        const nf_problem *p = &r->problems[i];
        if (p->object)
            printf("  object '%s': %s: %s\n", nf_cli_name(p->object).s, p->check, nf_cli_line(p->message).s);
        else
            printf("  %s: %s\n", p->check, nf_cli_line(p->message).s);
    }
}

/* Verify every FILE of the command line; the exit status of the whole run. */
static int verify_files(const nf_cli *cli, const verify_opts *vo)
{
    json_t *all = cli->json ? json_array() : NULL;
    bool all_valid = true, system_error = false;
    for (int i = 0; i < cli->npositional; i++) {
        const char *path = cli->positional[i];
        nf_verify_report report;
        nf_error err;
        nf_verify_options vopt = {vo->level, vo->threads, vo->require_checksums};
        against_result res = {0, json_array(), -1};
        bool compared = false;
        nf_status st = nf_verify_artifact_with(path, &vopt, &report, &err);
        if (st == NF_OK && vo->against && report.valid) {
            compared = true;
            st = verify_against(path, vo->against, vo->recipe, &vo->ra, vo->threads, &report, &res, &err);
            if (st != NF_OK) nf_verify_report_free(&report);
        }
        if (st != NF_OK) {
            nf_cli_report(cli, &err);
            system_error = true;
            json_decref(res.not_compared);
            continue;
        }
        all_valid = all_valid && report.valid;
        if (cli->json)
            json_array_append_new(all, report_json(path, &report, vo, compared ? &res : NULL));
        else
            print_human(cli, path, &report, vo, compared ? &res : NULL);
        json_decref(res.not_compared);
        nf_verify_report_free(&report);
    }
    if (cli->json) {
        json_t *out;
        if (json_array_size(all) == 1 && cli->npositional == 1) {
            out = json_incref(json_array_get(all, 0));
        } else {
            out = json_pack("{s:b,s:O}", "valid", all_valid && !system_error, "files", all);
        }
        if (out) {
            int prc = nf_cli_print_json(cli, out);
            if (prc != NF_EXIT_OK) system_error = true;
        }
        json_decref(out);
        json_decref(all);
    }
    if (system_error) return NF_EXIT_SYSTEM;
    return all_valid ? NF_EXIT_OK : NF_EXIT_INVALID;
}

/* The combinations of options that make no sense: a usage error each. */
static int check_args(const nf_cli *cli, const verify_opts *vo)
{
    if (vo->require_checksums && vo->level < NF_VERIFY_CHECKSUMS)
        return nf_cli_usage(cli, "--require-checksums needs the checksums level: it cannot be combined with --quick");
    if (vo->recipe && !vo->against)
        return nf_cli_usage(cli, "--recipe goes with --against SOURCE (the checkpoint to re-derive the objects from)");
    if (!vo->recipe && (vo->ra.nsources || vo->ra.nallow_paths || vo->ra.nallow_env))
        return nf_cli_usage(cli, "--source, --allow-path and --allow-env go with --recipe R.yaml: they say what the "
                                 "recipe may read and expand");
    if (cli->npositional == 0) return nf_cli_usage(cli, "no artifact given");
    return NF_EXIT_OK;
}

int main(int argc, char **argv)
{
    nf_cli cli;
    verify_opts vo = {.level = NF_VERIFY_CHECKSUMS};
    if (!nf_cli_recipe_args_init(&vo.ra, argc)) return NF_EXIT_SYSTEM;
    bool done = false;
    int rc = nf_cli_parse(&cli, &program, argc, argv, &vo, &done);
    if (rc == NF_EXIT_OK && !done) rc = check_args(&cli, &vo);
    if (rc == NF_EXIT_OK && !done) rc = verify_files(&cli, &vo);
    nf_cli_free(&cli);
    nf_cli_recipe_args_free(&vo.ra);
    return rc;
}
