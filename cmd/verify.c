/* ninfer-verify: structural, word-level and checksum validation of .ninfer artifacts, with an
 * exit status for CI (design.md section 2). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "cli.h"

enum { OPT_QUICK = NF_OPT_PROGRAM };

static const nf_option options[] = {
    {"quick", 0, NF_ARG_NONE, OPT_QUICK, NULL,
     "check structure only (framing, directory, files, object ranges, sizes, references)"},
    {NULL, 0, NF_ARG_NONE, 0, NULL, NULL},
};

static const nf_program program = {
    "ninfer-verify",
    "ninfer-verify FILE... [--json] [--quick]",
    "Check .ninfer artifacts: structure (framing, JSON directory, files, object ranges, encoded\n"
    "sizes, references), words (every code and scale legal for its format, canonical padding and\n"
    "zero gaps) and checksums (xxh3-128 of each object and of the directory, when recorded in\n"
    "metadata.checksums).  Every problem found is reported, not just the first.",
    options,
    "  ninfer-verify model.ninfer                 # exit 0 when valid, 1 when not\n"
    "  ninfer-verify --quick model.ninfer         # structure only; reads no payload\n"
    "  ninfer-verify --json model.ninfer | jq .problems\n",
};

typedef struct verify_opts {
    nf_verify_level level;
} verify_opts;

static int on_option(void *ctx, nf_cli *cli, int id, const char *arg)
{
    (void)cli;
    (void)arg;
    verify_opts *o = ctx;
    if (id == OPT_QUICK) o->level = NF_VERIFY_STRUCTURE;
    return NF_EXIT_OK;
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
    return json_pack("{s:s,s:b,s:I,s:I,s:o}", "file", path, "valid", r->valid, "objects_checked",
                     (json_int_t)r->objects_checked, "checksums_checked", (json_int_t)r->checksums_checked,
                     "problems", problems);
}

static void print_human(const nf_cli *cli, const char *path, const nf_verify_report *r, nf_verify_level level)
{
    if (r->valid) {
        if (cli->verbosity < 0) return;
        printf("%s: valid (%llu objects; checked structure", path, (unsigned long long)r->objects_checked);
        if (level >= NF_VERIFY_WORDS) printf(", words");
        if (level >= NF_VERIFY_CHECKSUMS) {
            if (r->checksums_checked)
                printf(", %llu checksums", (unsigned long long)r->checksums_checked);
            else
                printf("; no checksums recorded");
        }
        printf(")\n");
        return;
    }
    printf("%s: INVALID: %zu problem%s\n", path, r->count, r->count == 1 ? "" : "s");
    for (size_t i = 0; i < r->count; i++) {
        const nf_problem *p = &r->problems[i];
        if (p->object)
            printf("  object '%s': %s: %s\n", p->object, p->check, p->message);
        else
            printf("  %s: %s\n", p->check, p->message);
    }
}

int main(int argc, char **argv)
{
    nf_cli cli;
    verify_opts vo = {NF_VERIFY_CHECKSUMS};
    bool done = false;
    int rc = nf_cli_parse(&cli, &program, argc, argv, on_option, &vo, &done);
    if (rc != NF_EXIT_OK || done) {
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
        nf_status st = nf_verify_artifact(path, vo.level, &report, &err);
        if (st != NF_OK) {
            nf_cli_report(&cli, &err);
            system_error = true;
            continue;
        }
        all_valid = all_valid && report.valid;
        if (cli.json)
            json_array_append_new(all, report_json(path, &report));
        else
            print_human(&cli, path, &report, vo.level);
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
