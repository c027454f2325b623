/* ninfer-verify: structural, word-level and checksum validation of .ninfer artifacts, with an
 * exit status for CI (design.md section 2). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "cli.h"

enum { OPT_QUICK = NF_OPT_PROGRAM, OPT_AGAINST, OPT_THREADS, OPT_REQUIRE_CHECKSUMS };

static const nf_option options[] = {
    {"quick", 0, NF_ARG_NONE, OPT_QUICK, NULL,
     "check structure only (framing, directory, files, object ranges, sizes, references)"},
    {"require-checksums", 0, NF_ARG_NONE, OPT_REQUIRE_CHECKSUMS, NULL,
     "invalid unless metadata.checksums has a digest for every object and for the directory (CI gates)"},
    {"against", 0, NF_ARG_REQUIRED, OPT_AGAINST, "SOURCE",
     "also re-derive every object from SOURCE with the recipe recorded in provenance and compare bit for bit"},
    {"threads", 'j', NF_ARG_REQUIRED, OPT_THREADS, "N",
     "check objects on N threads (default: every core); the report is the same for any N"},
    {NULL, 0, NF_ARG_NONE, 0, NULL, NULL},
};

static const nf_program program = {
    "ninfer-verify",
    "ninfer-verify FILE... [--json] [--quick | --require-checksums] [--against SOURCE] [--threads N]",
    "Check .ninfer artifacts: structure (framing, JSON directory, files, object ranges, encoded\n"
    "sizes, references), words (every code and scale legal for its format, canonical padding, zero\n"
    "gaps between objects, after the JSON directory and in continuation headers) and checksums\n"
    "(xxh3-128 of each object and of the directory, as recorded in metadata.checksums).  Every\n"
    "problem found is reported, not just the first.  Only with a digest for every object and for\n"
    "the directory is any change to any byte detected; an artifact that records fewer checksums\n"
    "(or none) can still be valid, unless --require-checksums.  --against re-runs the conversion\n"
    "recorded in provenance on SOURCE and compares every object bit for bit.",
    options,
    "  ninfer-verify model.ninfer                 # exit 0 when valid, 1 when not\n"
    "  ninfer-verify --quick model.ninfer         # structure only; reads no payload\n"
    "  ninfer-verify --require-checksums model.ninfer   # CI gate: every byte covered\n"
    "  ninfer-verify --json model.ninfer > verdict.json\n"
    "  ninfer-verify model.ninfer --against ./MyModel   # re-derive every object\n",
};

typedef struct verify_opts {
    nf_verify_level level;
    const char *against;
    unsigned threads; /* 0: every core */
    bool require_checksums;
} verify_opts;

static int on_option(void *ctx, nf_cli *cli, int id, const char *arg)
{
    verify_opts *o = ctx;
    uint64_t v;
    if (id == OPT_QUICK) o->level = NF_VERIFY_STRUCTURE;
    if (id == OPT_REQUIRE_CHECKSUMS) o->require_checksums = true;
    if (id == OPT_AGAINST) o->against = arg;
    if (id == OPT_THREADS) {
        if (!nf_cli_parse_u64(arg, &v) || v == 0 || v > 1024)
            return nf_cli_usage(cli, "--threads takes a number from 1 to 1024, not '%s'", arg);
        o->threads = (unsigned)v;
    }
    return NF_EXIT_OK;
}

/* ---------------------------------------------------------------- --against */
typedef struct against_sink {
    nf_verify_report *report;
} against_sink;

static void add_against(nf_verify_report *r, const char *object, const char *message)
{
    if (r->count == r->capacity) {
        size_t cap = r->capacity ? r->capacity * 2 : 16;
        nf_problem *p = realloc(r->problems, cap * sizeof *p);
        if (!p) return;
        r->problems = p;
        r->capacity = cap;
    }
    nf_problem *p = &r->problems[r->count++];
    p->object = object ? strdup(object) : NULL;
    p->check = strdup("against");
    p->message = strdup(message);
    r->valid = false;
}

static void on_difference(void *ctx, const char *object, const char *message)
{
    add_against(((against_sink *)ctx)->report, object, message);
}

/* Rebuild the plan from provenance.recipe with `source` as its base and compare.  Returns NF_OK
 * when the comparison ran (differences go into the report). */
static nf_status verify_against(const char *path, const char *source, unsigned threads, nf_verify_report *r,
                                nf_error *err)
{
    nf_artifact *a = NULL;
    NF_TRY(nf_artifact_open(path, NF_READ_PREAD, &a, err));
    json_t *prov = json_object_get(nf_artifact_directory(a), "provenance");
    json_t *recipe_json = prov ? json_object_get(prov, "recipe") : NULL;
    nf_status st = NF_OK;
    if (!json_is_object(recipe_json)) {
        add_against(r, NULL, "provenance.recipe is missing: the artifact does not record how it was made");
        goto done;
    }
    char *text = json_dumps(recipe_json, JSON_PRESERVE_ORDER);
    nf_recipe *recipe = NULL;
    nf_plan *plan = NULL;
    /* JSON is YAML: the recorded recipe parses with the recipe parser itself. */
    st = text ? nf_recipe_parse(text, strlen(text), "provenance.recipe", NULL, &recipe, err)
              : nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    free(text);
    if (st == NF_OK) st = nf_recipe_set_source(recipe, "base", source, err);
    if (st == NF_OK) st = nf_plan_build(recipe, &plan, err);
    if (st == NF_OK) {
        against_sink sink = {r};
        size_t differing = 0;
        st = nf_plan_compare(plan, a, threads, on_difference, &sink, &differing, err);
        /* objects the artifact has but the recipe no longer produces */
        for (size_t i = 0; st == NF_OK && i < nf_artifact_object_count(a); i++) {
            const nf_object *o = nf_artifact_object(a, i);
            json_t *objs = prov ? json_object_get(prov, "objects") : NULL;
            if (o->kind == NF_OBJECT_TENSOR && objs && !json_object_get(objs, o->id))
                add_against(r, o->id, "not recorded in provenance.objects: cannot be re-derived");
        }
    }
    if (st == NF_ERR_INVALID) { /* the recorded recipe or the source does not fit: a verdict */
        add_against(r, NULL, err->message);
        st = NF_OK;
    }
    nf_plan_free(plan);
    nf_recipe_free(recipe);
done:
    nf_artifact_close(a);
    return st;
}

static json_t *report_json(const char *path, const nf_verify_report *r)
{
    json_t *problems = json_array();
    for (size_t i = 0; i < r->count; i++) {
        const nf_problem *p = &r->problems[i];
        json_array_append_new(problems, json_pack("{s:o,s:s,s:s}", "object",
                                                  p->object ? json_string(p->object) : json_null(),
                                                  "check", p->check, "message", p->message));
    }
    return json_pack("{s:o,s:b,s:I,s:I,s:o}", "file", nf_cli_json_cstr(path), "valid", r->valid, "objects_checked",
                     (json_int_t)r->objects_checked, "checksums_checked", (json_int_t)r->checksums_checked,
                     "problems", problems);
}

static void print_human(const nf_cli *cli, const char *path, const nf_verify_report *r, nf_verify_level level,
                        const char *against)
{
    if (r->valid) {
        if (cli->verbosity < 0) return;
        printf("%s: valid (%llu objects; checked structure", nf_cli_name(path).s, (unsigned long long)r->objects_checked);
        if (level >= NF_VERIFY_WORDS) printf(", words");
        if (level >= NF_VERIFY_CHECKSUMS) {
            if (r->checksums_checked)
                printf(", %llu checksums", (unsigned long long)r->checksums_checked);
            else
                printf("; no checksums recorded");
        }
        if (against) printf("; every object re-derived from %s", nf_cli_name(against).s);
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

int main(int argc, char **argv)
{
    nf_cli cli;
    verify_opts vo = {NF_VERIFY_CHECKSUMS, NULL, 0, false};
    bool done = false;
    int rc = nf_cli_parse(&cli, &program, argc, argv, on_option, &vo, &done);
    if (rc != NF_EXIT_OK || done) {
        nf_cli_free(&cli);
        return rc;
    }
    if (vo.require_checksums && vo.level < NF_VERIFY_CHECKSUMS) {
        rc = nf_cli_usage(&cli, "--require-checksums needs the checksums level: it cannot be combined with --quick");
        nf_cli_free(&cli);
        return rc;
    }
    if (cli.npositional == 0) {
        rc = nf_cli_usage(&cli, "no artifact given");
        nf_cli_free(&cli);
        return rc;
    }
    json_t *all = cli.json ? json_array() : NULL;
    bool all_valid = true, system_error = false;
    for (int i = 0; i < cli.npositional; i++) {
        const char *path = cli.positional[i];
        nf_verify_report report;
        nf_error err;
        nf_verify_options vopt = {vo.level, vo.threads, vo.require_checksums};
        nf_status st = nf_verify_artifact_with(path, &vopt, &report, &err);
        if (st == NF_OK && vo.against && report.valid) {
            st = verify_against(path, vo.against, vo.threads, &report, &err);
            if (st != NF_OK) nf_verify_report_free(&report);
        }
        if (st != NF_OK) {
            nf_cli_report(&cli, &err);
            system_error = true;
            continue;
        }
        all_valid = all_valid && report.valid;
        if (cli.json)
            json_array_append_new(all, report_json(path, &report));
        else
            print_human(&cli, path, &report, vo.level, vo.against);
        nf_verify_report_free(&report);
    }
    if (cli.json) {
        json_t *out;
        if (json_array_size(all) == 1 && cli.npositional == 1) {
            out = json_incref(json_array_get(all, 0));
        } else {
            out = json_pack("{s:b,s:O}", "valid", all_valid && !system_error, "files", all);
        }
        if (out) {
            int prc = nf_cli_print_json(&cli, out);
            if (prc != NF_EXIT_OK) system_error = true;
        }
        json_decref(out);
        json_decref(all);
    }
    nf_cli_free(&cli);
    if (system_error) return NF_EXIT_SYSTEM;
    return all_valid ? NF_EXIT_OK : NF_EXIT_INVALID;
}
