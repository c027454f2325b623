/* ninfer-verify: structural, word-level and checksum validation of .ninfer artifacts, with an
 * exit status for CI (docs/ninfer-verify.md, "Exit status"). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "cli.h"
#include "common/fail.h"

typedef struct verify_opts {
    nf_verify_level level;
    const char *against;
    const char *recipe;
    nf_cli_recipe_args ra; /* with --recipe: --source, --allow-path, --allow-env */
    unsigned threads;      /* 0: every core */
    bool require_checksums;
    const char *plan, *task; /* --plan PLAN.json --task I|all (docs/ninfer-verify.md, "One task of a plan") */
    /* resolved from them: the plan, the task (all: every task), its files (files_end 0: all) */
    nf_scaleout *scaleout;
    bool all_tasks;
    size_t task_index, files_first, files_end;
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
    NF_OPT_LIST_ROW(verify_opts, ra.method_programs, ra.nmethod_programs, NF_CHECK_KEY_VALUE, NULL, "method-program", 0,
                    "NAME=COMMAND",
                    "with --against: run COMMAND for the objects method program NAME made (their recorded digest must "
                    "match; repeatable; docs/method-programs.md)"),
    NF_OPT_UINT_ROW(verify_opts, ra.method_timeout, 1, 604800, "seconds", "method-timeout", 0, "SECONDS",
                    "with --method-program: the longest it may take to answer one chunk (default 300)"),
    NF_OPT_STRING_ROW(verify_opts, plan, "plan", 0, "PLAN.json",
                      "with --against and --task: the scale-out plan the artifact was converted by"),
    NF_OPT_STRING_ROW(verify_opts, task, "task", 0, "I",
                      "with --plan: re-derive only the objects of task I (0-based; structure of the whole artifact, "
                      "no words or checksums levels), or of every task (all: the usual levels too)"),
    NF_OPT_UINT_ROW(verify_opts, threads, 1, NF_CLI_MAX_THREADS, NULL, "threads", 'j', "N",
                    "check objects on N threads (default: every core); the report is the same for any N"),
    NF_OPT_END,
};

static const nf_program program = {
    "ninfer-verify",
    "ninfer-verify FILE... [--json] [--quick | --require-checksums] [--threads N]\n"
    "                     [--against SOURCE [--recipe R.yaml [--source NAME=PATH]... [--allow-path DIR]...\n"
    "                                        [--allow-env NAME]...]\n"
    "                                       [--method-program NAME=COMMAND]... [--method-timeout SECONDS]\n"
    "                                       [--plan PLAN.json --task I|all]]",
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
    "      --source imatrix=./imatrix.gguf\n"
    "  ninfer-verify out/model.ninfer --against ./MyModel --plan plan.json --task 17   # one task's objects\n",
    NULL, /* the usual exit statuses */
};

/* ---------------------------------------------------------------- --against
 * The comparison is the library's (ninfer/convert.h, nf_verify_against; docs/ninfer-verify.md,
 * "Re-deriving with --against"): here the options become its data and its result is printed. */

/* --source NAME=PATH as {name, path} (each row checked for '=' by NF_CHECK_KEY_VALUE); the names
 * are copies, freed by sources_free. */
static nf_verify_against_source *sources_split(const nf_cli_recipe_args *ra, nf_error *err)
{
    nf_verify_against_source *s = calloc(ra->nsources + 1, sizeof *s);
    if (!s) {
        nf_common_nomem(err);
        return NULL;
    }
    for (size_t i = 0; i < ra->nsources; i++) {
        const char *eq = strchr(ra->sources[i], '=');
        s[i].path = eq + 1;
        if (!(s[i].name = strndup(ra->sources[i], (size_t)(eq - ra->sources[i])))) {
            for (size_t k = 0; k < i; k++) free((char *)s[k].name);
            free(s);
            nf_common_nomem(err);
            return NULL;
        }
    }
    return s;
}

static void sources_free(nf_verify_against_source *s, size_t n)
{
    for (size_t i = 0; s && i < n; i++) free((char *)s[i].name);
    free(s);
}

/* Run the comparison of an artifact found valid.  Returns NF_OK when it ran to a verdict
 * (differences and what cannot be re-derived go into the report); NF_ERR_IO / NF_ERR_NOMEM
 * when the artifact, SOURCE or the recipe cannot be read (exit 3). */
static nf_status verify_against(const char *path, const verify_opts *vo, nf_verify_report *r,
                                nf_verify_against_result *res, nf_error *err)
{
    nf_verify_against_source *sources = sources_split(&vo->ra, err);
    if (!sources) return NF_ERR_NOMEM;
    nf_artifact *a = NULL;
    nf_status st = nf_artifact_open(path, NF_READ_PREAD, &a, err);
    if (st == NF_OK) {
        nf_verify_against_opts o = {
            .source = vo->against,
            .recipe = vo->recipe,
            .sources = sources,
            .nsources = vo->ra.nsources,
            .allow_paths = vo->ra.allow_paths,
            .nallow_paths = vo->ra.nallow_paths,
            .allow_env = vo->ra.allow_env,
            .nallow_env = vo->ra.nallow_env,
            .threads = vo->threads,
            .files_first = vo->files_first,
            .files_end = vo->files_end,
            .programs = vo->ra.programs,
            .nprograms = vo->ra.nprograms,
        };
        if (vo->scaleout) { /* the plan of another artifact would name other objects' bytes */
            uint8_t id[16];
            char want[33], have[33];
            nf_scaleout_artifact_id(vo->scaleout, id);
            for (int i = 0; i < 16; i++) snprintf(want + 2 * i, 3, "%02x", id[i]);
            nf_artifact_id_hex(a, have);
            if (strcmp(want, have) != 0)
                st = nf_verify_report_add(r, NULL, "against",
                                          "the artifact's id %s is not the plan's %s (%s is the "
                                          "plan of another artifact)",
                                          have, want, nf_cli_name(vo->plan).s);
        }
        if (st == NF_OK) st = nf_verify_against(a, &o, r, res, err);
        else nf_error_set(err, st, "out of memory");
        nf_artifact_close(a);
    }
    sources_free(sources, vo->ra.nsources);
    return st;
}

/* What --against did, in the report: {"source", "recipe", "objects_rederived",
 * "resources_not_compared": [ids], "recipe_matches_provenance": bool (with --recipe),
 * "source_digests": "equal" | "differ" | "not recorded" | "not compared", "source_files_checked",
 * "source_files_unrecorded"}. */
static json_t *against_json(const verify_opts *vo, const nf_verify_against_result *res)
{
    json_t *ids = json_array();
    for (size_t i = 0; ids && i < res->nresources_not_compared; i++)
        json_array_append_new(ids, json_string(res->resources_not_compared[i]));
    json_t *j = json_pack("{s:o,s:o,s:I,s:o}", "source", nf_cli_json_cstr(vo->against), "recipe",
                          vo->recipe ? nf_cli_json_cstr(vo->recipe) : json_null(), "objects_rederived",
                          (json_int_t)res->objects_rederived, "resources_not_compared", ids);
    if (j && vo->recipe)
        json_object_set_new(j, "recipe_matches_provenance", json_boolean(res->recipe_matches_provenance == 1));
    if (j) {
        json_object_set_new(j, "source_digests",
                            json_string(res->source_digests == 1    ? "equal"
                                        : res->source_digests == 0  ? "differ"
                                        : res->source_digests == -1 ? "not recorded"
                                                                    : "not compared"));
        json_object_set_new(j, "source_files_checked", json_integer((json_int_t)res->source_files_checked));
        json_object_set_new(j, "source_files_unrecorded", json_integer((json_int_t)res->source_files_unrecorded));
    }
    if (j && vo->scaleout) {
        json_object_set_new(j, "plan", nf_cli_json_cstr(vo->plan));
        json_object_set_new(j, "task", vo->all_tasks ? json_string("all") : json_integer((json_int_t)vo->task_index));
    }
    return j;
}

static json_t *report_json(const char *path, const nf_verify_report *r, const verify_opts *vo,
                           const nf_verify_against_result *res)
{
    json_t *problems = json_array();
    for (size_t i = 0; i < r->count; i++) {
        const nf_problem *p = &r->problems[i];
        json_array_append_new(problems,
                              json_pack("{s:o,s:s,s:s}", "object", p->object ? json_string(p->object) : json_null(),
                                        "check", p->check, "message", p->message));
    }
    json_t *j = json_pack("{s:o,s:b,s:I,s:I,s:o}", "file", nf_cli_json_cstr(path), "valid", r->valid, "objects_checked",
                          (json_int_t)r->objects_checked, "checksums_checked", (json_int_t)r->checksums_checked,
                          "problems", problems);
    if (j && res) json_object_set_new(j, "against", against_json(vo, res));
    return j;
}

static void print_human(const nf_cli *cli, const char *path, const nf_verify_report *r, const verify_opts *vo,
                        const nf_verify_against_result *res)
{
    if (r->valid) {
        if (cli->verbosity < 0) return;
        printf("%s: valid (%llu objects; checked structure", nf_cli_name(path).s,
               (unsigned long long)r->objects_checked);
        if (vo->level >= NF_VERIFY_WORDS) printf(", words");
        if (vo->level >= NF_VERIFY_CHECKSUMS) {
            if (r->checksums_checked) printf(", %llu checksums", (unsigned long long)r->checksums_checked);
            else printf("; no checksums recorded");
        }
        if (res && res->source_digests == 1)
            printf("; %zu source file%s with the recorded SHA-256", res->source_files_checked,
                   res->source_files_checked == 1 ? "" : "s");
        else if (res && res->source_digests == -1) printf("; no source SHA-256 recorded");
        if (res && vo->recipe) {
            printf("; %zu objects re-derived from %s with %s", res->objects_rederived, nf_cli_name(vo->against).s,
                   nf_cli_name(vo->recipe).s);
            if (res->recipe_matches_provenance != 1) printf(", and the recipe differs from provenance.recipe");
        } else if (res) {
            size_t skipped = res->nresources_not_compared;
            printf("; %zu tensors re-derived from %s", res->objects_rederived, nf_cli_name(vo->against).s);
            if (skipped) printf(", %zu resource%s not compared", skipped, skipped == 1 ? "" : "s");
        }
        if (res && vo->scaleout) {
            if (vo->all_tasks) printf(", every task of %s", nf_cli_name(vo->plan).s);
            else printf(", task %zu of %s", vo->task_index, nf_cli_name(vo->plan).s);
        }
        printf(")\n");
        return;
    }
    /* One line per problem whatever the names hold: the id escaped, and the message (whose
     * names the library escaped) made one line (ninfer/escape.h). */
    printf("%s: INVALID: %zu problem%s\n", nf_cli_name(path).s, r->count, r->count == 1 ? "" : "s");
    for (size_t i = 0; i < r->count; i++) {
        const nf_problem *p = &r->problems[i];
        if (p->object) printf("  object '%s': %s: %s\n", nf_cli_name(p->object).s, p->check, nf_cli_line(p->message).s);
        else printf("  %s: %s\n", p->check, nf_cli_line(p->message).s);
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
        nf_verify_against_result res = {0, NULL, 0, -1, -1, 0, 0};
        bool compared = false;
        nf_status st = nf_verify_artifact_with(path, &vopt, &report, &err);
        if (st == NF_OK && vo->against && report.valid) {
            compared = true;
            st = verify_against(path, vo, &report, &res, &err);
            if (st != NF_OK) nf_verify_report_free(&report);
        }
        if (st != NF_OK) {
            nf_cli_report(cli, &err);
            system_error = true;
            nf_verify_against_result_free(&res);
            continue;
        }
        all_valid = all_valid && report.valid;
        if (cli->json) json_array_append_new(all, report_json(path, &report, vo, compared ? &res : NULL));
        else print_human(cli, path, &report, vo, compared ? &res : NULL);
        nf_verify_against_result_free(&res);
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
    if ((vo->ra.nmethod_programs || vo->ra.method_timeout) && !vo->against)
        return nf_cli_usage(cli, "--method-program and --method-timeout go with --against SOURCE");
    if (vo->ra.method_timeout && !vo->ra.nmethod_programs)
        return nf_cli_usage(cli, "--method-timeout belongs to --method-program NAME=COMMAND");
    if (cli->npositional == 0) return nf_cli_usage(cli, "no artifact given");
    if ((vo->plan || vo->task) && !(vo->plan && vo->task && vo->against))
        return nf_cli_usage(cli, "--plan PLAN.json and --task I (or all) go together, with --against SOURCE");
    if (vo->plan && cli->npositional != 1) return nf_cli_usage(cli, "--plan goes with one artifact (the plan's)");
    if (vo->task && strcmp(vo->task, "all") != 0) {
        /* digits only; a number too large for a task index is out of range (exit 1, resolve_task) */
        if (!*vo->task || strspn(vo->task, "0123456789") != strlen(vo->task))
            return nf_cli_usage(cli, "--task takes a task number (0-based) or all, not '%s'", nf_cli_name(vo->task).s);
        if (vo->require_checksums)
            return nf_cli_usage(cli, "--require-checksums needs the checksums level, which --task I does not run "
                                     "(verify the whole artifact once, or use --task all)");
    }
    return NF_EXIT_OK;
}

/* --plan PLAN --task I|all: the plan read, and task I's files, whose objects the artifact's own
 * directory gives (nf_verify_against_opts.files_first/_end), never the plan's lists of ids,
 * which could leave objects out; every task is every file, so all compares every object.  A
 * task I checks the structure of the whole artifact and re-derives its objects only. */
static int resolve_task(const nf_cli *cli, verify_opts *vo)
{
    nf_error err;
    if (nf_scaleout_open(vo->plan, &vo->scaleout, &err) != NF_OK) return nf_cli_report(cli, &err);
    vo->all_tasks = strcmp(vo->task, "all") == 0;
    if (vo->all_tasks) return NF_EXIT_OK;
    errno = 0;
    unsigned long long v = strtoull(vo->task, NULL, 10);
    size_t n = nf_scaleout_task_count(vo->scaleout);
    if (errno == ERANGE || v >= n) /* every index out of range alike (docs/ninfer-verify.md) */
        return nf_cli_error(cli, NF_ERR_INVALID, "%s: no task %s (the plan has tasks 0 to %zu)",
                            nf_cli_name(vo->plan).s, nf_cli_name(vo->task).s, n - 1);
    vo->task_index = (size_t)v;
    vo->level = NF_VERIFY_STRUCTURE;
    if (nf_scaleout_task_files(vo->scaleout, vo->task_index, &vo->files_first, &vo->files_end, &err) != NF_OK)
        return nf_cli_report(cli, &err);
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
    nf_error err;
    if (rc == NF_EXIT_OK && !done && nf_cli_method_programs(&vo.ra, &err) != NF_OK) rc = nf_cli_report(&cli, &err);
    if (rc == NF_EXIT_OK && !done && vo.plan) rc = resolve_task(&cli, &vo);
    if (rc == NF_EXIT_OK && !done) rc = verify_files(&cli, &vo);
    nf_scaleout_free(vo.scaleout);
    nf_cli_free(&cli);
    nf_cli_recipe_args_free(&vo.ra);
    return rc;
}
