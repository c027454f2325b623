/* ninfer-convert: checkpoint + YAML recipe -> .ninfer artifact (docs/ninfer-convert.md).
 * The whole plan is resolved and validated before any byte is written; encoding streams row
 * chunks on a thread pool into the container writer, which publishes atomically. */
#define _XOPEN_SOURCE 700 /* realpath (XSI): quick mode's hub-cache links */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <ninfer/ninfer.h>

#include "common/hex.h"
#include "common/utf8.h"

#include "cli.h"
#include "convert.h"
#include "convert_preset.h"
#include "outputs/out_file.h"
#include "outputs/out_signals.h"
#include "table.h"


static int on_max_file_bytes(nf_cli *cli, const nf_option *row, void *opts, const char *arg)
{
    (void)row;
    convert_opts *o = opts;
    /* Every file needs a 4096-byte header page and one page of payload (docs/artifact.md 4):
     * a smaller limit suits no artifact at all.  One the entry's own directory does not fit
     * in is judged with the plan (invalid input, exit 1). */
    if (!nf_cli_parse_u64(arg, &o->max_file_bytes) || (o->max_file_bytes > 0 && o->max_file_bytes < 8192))
        return nf_cli_usage(cli,
                            "--max-file-bytes takes 0 (one file) or a byte count of at least 8192 (a "
                            "4096-byte header page and one page of payload per file), not '%s'",
                            arg);
    o->has_max_file_bytes = true;
    return NF_EXIT_OK;
}

static int on_target_bpw(nf_cli *cli, const nf_option *row, void *opts, const char *arg)
{
    (void)row;
    convert_opts *o = opts;
    char *end = NULL;
    double v = strtod(arg, &end);
    if (!*arg || !end || *end || !isfinite(v) || !(v > 0))
        return nf_cli_usage(cli, "--target-bpw takes a number of bits per weight above 0 (e.g. 4.5), not '%s'", arg);
    o->target_bpw = v;
    o->has_target_bpw = true;
    return NF_EXIT_OK;
}

static int on_artifact_id(nf_cli *cli, const nf_option *row, void *opts, const char *arg)
{
    (void)row;
    convert_opts *o = opts;
    if (!nf_hex_parse(arg, o->artifact_id, 16)) return nf_cli_usage(cli, "--artifact-id takes 32 hex digits");
    o->has_id = true;
    return NF_EXIT_OK;
}

/* --list-formats, --list-methods, --list-presets: the registry's names, one a line, for shell completion
 * (completion/ninfer.bash) and scripts; printed like --help (exit 0, nothing converted). */
static int on_list_formats(nf_cli *cli, const nf_option *row, void *opts, const char *arg)
{
    (void)row, (void)opts, (void)arg;
    for (size_t i = 0; i < nf_format_count(); i++) printf("%s\n", nf_format_at(i)->name);
    cli->done = true;
    return NF_EXIT_OK;
}

static int on_list_methods(nf_cli *cli, const nf_option *row, void *opts, const char *arg)
{
    (void)row, (void)opts, (void)arg;
    for (unsigned i = 0; i < NF_METHOD_COUNT; i++) printf("%s\n", nf_method_name((nf_method_id)i));
    cli->done = true;
    return NF_EXIT_OK;
}

static int on_list_presets(nf_cli *cli, const nf_option *row, void *opts, const char *arg)
{
    (void)row, (void)opts, (void)arg;
    for (unsigned i = 0; i < NF_PRESET_COUNT; i++) printf("%s\n", nf_preset_name((nf_preset)i));
    cli->done = true;
    return NF_EXIT_OK;
}

/* What a plan does with each option (docs/scale-out.md, "What a plan can make a task do"), from
 * the rows' tags alone: PLAN_RECORDS rows decide the artifact's bytes, and --plan-out records
 * them in the plan as data (the recipe they make, the options); PLAN_OK rows are what a task's
 * host may choose with --plan PLAN.json.  plan_mode refuses every other option given (exit 2), so
 * a new option is refused there until its row says otherwise.  The common options (-q, -v,
 * --json, --progress, --help, --version) are always allowed. */
#define PLAN_OK 1u
#define PLAN_RECORDS 2u

static const nf_option options[] = {
    NF_OPT_TAGGED(PLAN_RECORDS, NF_OPT_STRING_FIELDS(convert_opts, recipe, "recipe", 'r', "RECIPE.yaml",
                                                     "the conversion recipe (design: docs/recipes.md)")),
    NF_OPT_TAGGED(PLAN_RECORDS, NF_OPT_STRING_FIELDS(convert_opts, output, "output", 'o', "OUT.ninfer",
                                                     "the artifact to write (required)")),
    NF_OPT_TAGGED(PLAN_RECORDS,
                  NF_OPT_LIST_FIELDS(convert_opts, ra.sources, ra.nsources, NF_CHECK_KEY_VALUE, NULL, "source", 0,
                                     "NAME=PATH", "replace (or add) the recipe's source NAME")),
    NF_OPT_TAGGED(PLAN_RECORDS, NF_OPT_LIST_FIELDS(convert_opts, ra.allow_paths, ra.nallow_paths, NF_CHECK_NONEMPTY,
                                                   "a directory", "allow-path", 0, "DIR",
                                                   "let the recipe's resources also come from DIR (besides its own "
                                                   "directory and --source paths; repeatable)")),
    NF_OPT_TAGGED(PLAN_RECORDS,
                  NF_OPT_LIST_FIELDS(convert_opts, ra.allow_env, ra.nallow_env, NF_CHECK_NONEMPTY, "a variable name",
                                     "allow-env", 0, "NAME", "let ${NAME} in the recipe's paths expand (repeatable)")),
    NF_OPT_TAGGED(PLAN_OK, NF_OPT_UINT_FIELDS(convert_opts, threads, 1, NF_CLI_MAX_THREADS, NULL, "threads", 'j', "N",
                                              "encoding threads (default: every core)")),
    NF_OPT_TAGGED(PLAN_RECORDS, NF_OPT_CALLBACK_FIELDS(on_max_file_bytes, NF_ARG_REQUIRED, "max-file-bytes", 0, "BYTES",
                                                       "split into parts of at most BYTES each (0: one "
                                                       "file; overrides the recipe)")),
    NF_OPT_FLAG_ROW(convert_opts, dry_run, "dry-run", 'n', "print the resolved plan and write nothing"),
    NF_OPT_TAGGED(PLAN_RECORDS,
                  NF_OPT_FLAG_FIELDS(convert_opts, force, "force", 'f', "replace an existing output (never an input)")),
    NF_OPT_TAGGED(PLAN_RECORDS,
                  NF_OPT_FLAG_FIELDS(convert_opts, no_report, "no-report", 0, "do not write OUT.conversion.json")),
    /* (a plan's maker hashes the sources and records the digests: --no-source-digests is its to
     * give; no statement is written by a plan's tasks or assembly) */
    NF_OPT_STRING_ROW(convert_opts, attest, "attest", 0, "STATEMENT.json",
                      "also publish an in-toto statement of the artifact's files and their SHA-256, with the "
                      "provenance as its predicate, for a signing tool (docs/provenance.md)"),
    NF_OPT_TAGGED(PLAN_RECORDS,
                  NF_OPT_FLAG_FIELDS(convert_opts, no_source_digests, "no-source-digests", 0,
                                     "record the sources' file sizes but not their SHA-256 (no second read of the "
                                     "sources)")),
    NF_OPT_TAGGED(PLAN_OK, NF_OPT_FLAG_FIELDS(convert_opts, remove_stale, "remove-stale", 0,
                                              "remove temp files of killed runs for OUT (alone with -o: only that)")),
    NF_OPT_TAGGED(
        PLAN_RECORDS,
        NF_OPT_CALLBACK_FIELDS(on_artifact_id, NF_ARG_REQUIRED, "artifact-id", 0, "HEX",
                               "the 16-byte artifact id as 32 hex digits (default: random, or derived from the inputs "
                               "when SOURCE_DATE_EPOCH is set)")),
    NF_OPT_TAGGED(PLAN_RECORDS, NF_OPT_STRING_FIELDS(convert_opts, format, "format", 0, "FORMAT",
                                                     "quick mode: the format of every rank-2 float tensor")),
    NF_OPT_TAGGED(PLAN_RECORDS,
                  NF_OPT_CALLBACK_FIELDS(
                      on_target_bpw, NF_ARG_REQUIRED, "target-bpw", 0, "X",
                      "quick mode, in place of --format: give each rank-2 float tensor the format and method (of "
                      "every one the methods quantize into) with the least error such that they average X bits per "
                      "weight")),
    NF_OPT_TAGGED(
        PLAN_RECORDS,
        NF_OPT_STRING_FIELDS(convert_opts, sensitivity, "sensitivity", 0, "FILE",
                             "a budget's per-tensor factors of the error (JSON {\"name\": factor} or CSV name,factor; "
                             "with --target-bpw or a recipe's budget)")),
    NF_OPT_TAGGED(PLAN_RECORDS,
                  NF_OPT_STRING_FIELDS(
                      convert_opts, preset, "preset", 0, "PRESET",
                      "quick mode, in place of --format: the ggml type llama-quantize gives each tensor for PRESET "
                      "(Q4_K_M, IQ2_M, ...; docs/presets.md), encoded by ggml_quantize")),
    NF_OPT_TAGGED(
        PLAN_RECORDS,
        NF_OPT_STRING_FIELDS(convert_opts, imatrix, "imatrix", 0, "FILE",
                             "with --preset: the importance matrix llama-imatrix wrote (as llama-quantize --imatrix)")),
    NF_OPT_TAGGED(PLAN_RECORDS,
                  NF_OPT_STRING_FIELDS(
                      convert_opts, method, "method", 0, "METHOD",
                      "quick mode: the method for --format (default: natural), or the only one --target-bpw tries")),
    NF_OPT_TAGGED(PLAN_RECORDS,
                  NF_OPT_LIST_FIELDS(convert_opts, rules, nrules, NF_CHECK_KEY_VALUE, NULL, "rule", 0,
                                     "GLOB=FORMAT[:METHOD]", "quick mode: an override rule (repeatable)")),
    NF_OPT_TAGGED(
        PLAN_RECORDS,
        NF_OPT_FLAG_FIELDS(
            convert_opts, requantize, "requantize", 0,
            "quick mode: give quantized weights (FP8, INT4, NVFP4 checkpoints, GGUF blocks) FORMAT from their "
            "values instead of importing them as they are")),
    NF_OPT_TAGGED(PLAN_RECORDS,
                  NF_OPT_FLAG_FIELDS(
                      convert_opts, no_resources, "no-resources", 0,
                      "quick mode: leave out the tokenizer and generation files it keeps beside the weights, and a "
                      "GGUF's metadata")),
    NF_OPT_TAGGED(PLAN_OK,
                  NF_OPT_U64_FIELDS(convert_opts, chunk_values, 1, UINT64_MAX, "a positive count", "chunk-values", 0,
                                    "N", "values per encoded row chunk (tuning; the output never depends on it)")),
    NF_OPT_TAGGED(PLAN_OK, NF_OPT_LIST_FIELDS(convert_opts, ra.method_programs, ra.nmethod_programs, NF_CHECK_KEY_VALUE,
                                              NULL, "method-program", 0, "NAME=COMMAND",
                                              "let the recipe's `method: NAME` run COMMAND, one per thread, no shell "
                                              "(repeatable; docs/method-programs.md)")),
    NF_OPT_TAGGED(PLAN_OK, NF_OPT_UINT_FIELDS(convert_opts, ra.method_timeout, 1, 604800, "seconds", "method-timeout",
                                              0, "SECONDS",
                                              "the longest a method program may take to answer one chunk (default "
                                              "300)")),
    NF_OPT_STRING_ROW(convert_opts, plan_out, "plan-out", 0, "PLAN.json",
                      "scale-out: check everything, convert nothing, write the plan of independent tasks; prints "
                      "their count"),
    NF_OPT_UINT_ROW(convert_opts, tasks, 1, 1000000, NULL, "tasks", 0, "N",
                    "with --plan-out: group the parts into N tasks of near-equal bytes (default: one per part)"),
    NF_OPT_TAGGED(PLAN_OK, NF_OPT_STRING_FIELDS(convert_opts, plan, "plan", 0, "PLAN.json",
                                                "scale-out: run a task of the plan, or assemble it")),
    NF_OPT_TAGGED(PLAN_OK, NF_OPT_STRING_FIELDS(convert_opts, task, "task", 0, "I",
                                                "with --plan: convert task I (0-based), or every task not done yet "
                                                "(all)")),
    NF_OPT_TAGGED(PLAN_OK, NF_OPT_FLAG_FIELDS(convert_opts, assemble, "assemble", 0,
                                              "with --plan: check every part against its receipt, write the entry "
                                              "and the report")),
    NF_OPT_TAGGED(PLAN_OK, NF_OPT_FLAG_FIELDS(convert_opts, verify, "verify", 0,
                                              "with --assemble: also check each part's bytes (rereads them)")),
    NF_OPT_TAGGED(PLAN_OK, NF_OPT_CALLBACK_FIELDS(on_list_formats, NF_ARG_NONE, "list-formats", 0, NULL,
                                                  "print the name of every format, one a line, and exit")),
    NF_OPT_TAGGED(PLAN_OK, NF_OPT_CALLBACK_FIELDS(on_list_methods, NF_ARG_NONE, "list-methods", 0, NULL,
                                                  "print the name of every method, one a line, and exit")),
    NF_OPT_TAGGED(PLAN_OK, NF_OPT_CALLBACK_FIELDS(on_list_presets, NF_ARG_NONE, "list-presets", 0, NULL,
                                                  "print the name of every --preset, one a line, and exit")),
    NF_OPT_END,
};

static const nf_program program = {
    "ninfer-convert",
    "ninfer-convert -r RECIPE.yaml -o OUT.ninfer [--source NAME=PATH]... [--allow-path DIR]...\n"
    "                      [--allow-env NAME]... [--method-program NAME=COMMAND]...\n"
    "                      [--method-timeout SECONDS] [--threads N]\n"
    "                      [--max-file-bytes BYTES] [--dry-run] [--force] [--no-report]\n"
    "                      [--attest STATEMENT.json] [--no-source-digests] [--remove-stale]\n"
    "       ninfer-convert -o OUT.ninfer --remove-stale\n"
    "       ninfer-convert SOURCE -o OUT.ninfer --format FORMAT [--method METHOD]\n"
    "                      [--rule 'GLOB=FORMAT[:METHOD]']... [--requantize] [--no-resources]\n"
    "       ninfer-convert SOURCE -o OUT.ninfer --target-bpw X [--method METHOD] [--rule ...]\n"
    "       ninfer-convert SOURCE -o OUT.ninfer --preset PRESET [--imatrix FILE] [--rule ...]",
    "Convert a checkpoint (safetensors file, sharded index, checkpoint directory, GGUF, or a\n"
    "PyTorch pytorch_model.bin, read without executing it) into a .ninfer artifact following a\n"
    "YAML recipe.  The plan is resolved and checked before anything is written; the output is\n"
    "published atomically (nothing is left behind on failure or Ctrl-C) and, unless --no-report,\n"
    "OUT.conversion.json gets per-object error statistics.  Temp files that a killed run\n"
    "(SIGKILL) could not remove are reported, and removed with --remove-stale.\n"
    "The second form (quick mode) gives every rank-2 floating-point tensor FORMAT and keeps the\n"
    "others as bf16, fp32 or int32; GGUF block tensors and the quantized weights of an FP8, INT4\n"
    "or NVFP4 checkpoint are imported as they are where a format holds them, and need --requantize\n"
    "otherwise (docs/dialects.md).",
    options,
    "  ninfer-convert -r recipes/q8.yaml -o model.ninfer --source base=./Qwen3-0.6B\n"
    "  ninfer-convert -r recipe.yaml -o model.ninfer --dry-run\n"
    "  ninfer-convert model.safetensors -o model.ninfer --format q8_g32_fp16\n"
    "  ninfer-convert ckpt/ -o m.ninfer --format q4_g64_fp16 --method grouped_search --rule 'lm_head.*=q8_g32_fp16'\n"
    "  ninfer-convert ckpt/ -o m.ninfer --target-bpw 4.8 --dry-run\n"
    "  ninfer-convert ckpt/ -o m.ninfer --preset Q4_K_M --imatrix imatrix.gguf --dry-run\n"
    "  ninfer-convert ckpt/ -o m.ninfer --format q4_g64_fp16 --method mine --method-program mine='python3 mine.py'\n",
    NULL, /* the usual exit statuses */
};

/* ---------------------------------------------------------------- progress */
typedef struct progress_ctx {
    bool enabled;
    bool ended; /* the final line (all objects) is out */
    struct timespec start;
} progress_ctx;

static double seconds_since(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

static void show_progress(void *ctx, const nf_convert_progress *p)
{
    progress_ctx *pc = ctx;
    if (!pc->enabled || pc->ended) return;
    double s = seconds_since(&pc->start);
    double rate = s > 0 ? (double)p->bytes_done / s : 0;
    double eta = rate > 0 ? (double)(p->bytes_total - p->bytes_done) / rate : 0;
    int width = 30;
    int filled = p->bytes_total ? (int)((double)width * (double)p->bytes_done / (double)p->bytes_total) : width;
    fprintf(stderr, "\r[%.*s%*s] %zu/%zu objects  %.1f/%.1f MB  %.1f MB/s  ETA %.0fs ", filled,
            "##############################", width - filled, "", p->objects_done, p->objects_total,
            (double)p->bytes_done / 1e6, (double)p->bytes_total / 1e6, rate / 1e6, eta);
    if (p->objects_done == p->objects_total) {
        fputc('\n', stderr);
        pc->ended = true;
    }
    fflush(stderr);
}

/* ---------------------------------------------------------------- stale files */
/* What a killed run left for the output (ninfer/outputs.h, nf_stale_find): temp files whose process is
 * gone are reported, or removed with --remove-stale (not under --dry-run).  Files that may be
 * the only copy of data are only reported: a set-aside file of a replaced artifact (a killed
 * --force run), and parts without their entry (a renamed entry may still use them).  Returns
 * NF_EXIT_OK, or NF_EXIT_SYSTEM when a removal fails or, with --remove-stale, the directory
 * cannot be listed. */
static int handle_stale(const nf_cli *cli, const convert_opts *o)
{
    nf_stale *st = NULL;
    size_t n = 0;
    nf_error err;
    if (nf_stale_find(o->output, true, &st, &n, &err) != NF_OK) {
        if (o->remove_stale) return nf_cli_report(cli, &err);
        nf_cli_warn(cli, "cannot look for stale temp files: %s", err.message); /* the conversion can still run */
        return NF_EXIT_OK;
    }
    int rc = NF_EXIT_OK;
    bool remove = o->remove_stale && !o->dry_run;
    /* The processes whose set-aside entry is still there: the set-aside entry is removed first
     * when a --force run commits (lib/src/container/writer_publish.c), so the other ".old" files
     * of a process without one are leftovers of a replacement that was complete (renaming them
     * back would mix two artifacts). */
    long *entry_pids = calloc(n ? n : 1, sizeof *entry_pids);
    size_t nentry = 0;
    for (size_t i = 0; entry_pids && i < n; i++)
        if (st[i].kind == NF_STALE_BACKUP && st[i].entry) entry_pids[nentry++] = st[i].pid;
    for (size_t i = 0; i < n; i++) {
        if (st[i].kind == NF_STALE_ORPHAN_PART && o->staging) continue;
        if (st[i].kind == NF_STALE_ORPHAN_PART) {
            nf_cli_warn(cli,
                        "%s: a part file without its entry %s (an interrupted publication?); remove it, or "
                        "convert with --force, unless a renamed entry still uses it",
                        nf_cli_name(st[i].path).s, nf_cli_name(o->output).s);
        } else if (st[i].kind == NF_STALE_BACKUP) {
            const char *orig = st[i].original;
            struct stat a, b;
            if (stat(st[i].path, &a) == 0 && stat(orig, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
                /* a second link of a file still in place: no data of its own */
                if (!remove)
                    nf_cli_warn(cli,
                                "%s: a second link of %s left by an interrupted --force run (process %ld is "
                                "gone); %s",
                                nf_cli_name(st[i].path).s, nf_cli_name(orig).s, st[i].pid,
                                o->remove_stale ? "--remove-stale would remove it" : "--remove-stale removes it");
                else if (unlink(st[i].path) == 0 || errno == ENOENT) {
                    if (cli->verbosity >= 0)
                        fprintf(stderr, "%s: removed stale link %s of %s (process %ld is gone)\n", cli->prog,
                                nf_cli_name(st[i].path).s, nf_cli_name(orig).s, st[i].pid);
                } else {
                    rc = nf_cli_error(cli, NF_ERR_IO, "%s: cannot remove the stale link: %s", nf_cli_name(st[i].path).s,
                                      strerror(errno));
                }
                continue;
            }
            bool restorable = !entry_pids;
            for (size_t k = 0; k < nentry; k++) restorable |= entry_pids[k] == st[i].pid;
            if (restorable)
                nf_cli_warn(cli,
                            "%s: a file of the artifact that an interrupted --force run (process %ld is gone) "
                            "was replacing, set aside: rename it back to %s to restore that artifact, or remove it",
                            nf_cli_name(st[i].path).s, st[i].pid, nf_cli_name(orig).s);
            else
                nf_cli_warn(cli,
                            "%s: a file set aside by an interrupted --force run (process %ld is gone) that "
                            "belongs to no artifact to restore (that run had already completed %s and dropped the "
                            "old entry, or there was none); remove it",
                            nf_cli_name(st[i].path).s, st[i].pid, nf_cli_name(o->output).s);
        } else {
            int r = nf_cli_stale_temp(cli, st[i].path, st[i].pid, remove,
                                      o->remove_stale ? "--remove-stale would remove it" : "--remove-stale removes it");
            if (r != NF_EXIT_OK) rc = r;
        }
    }
    free(entry_pids);
    nf_stale_free(st, n);
    return rc;
}

/* What -o may name (docs/ninfer-convert.md, "Outputs"): a file name.  An artifact is an entry,
 * its parts and its report, published together by rename, so it cannot be streamed: "-" is
 * refused here, and an existing output that is not a regular file by the writer (exit 2). */
static int check_output(const nf_cli *cli, const char *out)
{
    if (strcmp(out, "-") == 0)
        return nf_cli_usage(cli, "-o -: an artifact (an entry, its parts and its report, published by rename) "
                                 "cannot be written to standard output; give a file name");
    const char *slash = strrchr(out, '/');
    const char *base = slash ? slash + 1 : out;
    if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        return nf_cli_usage(cli, "-o '%s': give the artifact's file name (e.g. -o model.ninfer)", out);
    return NF_EXIT_OK;
}

/* Text the artifact's report, its provenance or a plan records as JSON strings must be UTF-8
 * (docs/ninfer-convert.md, "Outputs"): any other is refused at once (exit 2), naming the first
 * byte that is not, before anything is read or written.  why: what records it. */
static int check_utf8(const nf_cli *cli, const char *what, const char *text, const char *why)
{
    size_t bad = 0;
    if (nf_utf8_valid((const uint8_t *)text, strlen(text), &bad)) return NF_EXIT_OK;
    return nf_cli_usage(cli, "%s '%s' is not UTF-8 (byte 0x%02x at offset %zu): %s", what, nf_cli_name(text).s,
                        (unsigned)(unsigned char)text[bad], bad, why);
}

/* SOURCE_DATE_EPOCH: an artifact id that depends only on the inputs, for reproducible builds.
 * It binds the content (docs/security.md 7.1, F13): the plan's content digest covers the plan and every byte
 * it reads (nf_plan_content_digest), hashed with the epoch and the split setting, which the plan
 * does not hold.  The same inputs give the same id; other weights under the same names and
 * shapes give another one, so an entry never accepts the parts of another artifact. */
static nf_status derived_id(const nf_plan *plan, const char *epoch, const convert_opts *o, uint8_t out[16],
                            nf_error *err)
{
    uint8_t digest[16];
    NF_TRY(nf_plan_content_digest(plan, digest, err));
    char text[256];
    int n = snprintf(text, sizeof text, "ninfer-convert artifact id v2\n%s\n%d %" PRIu64 "\n", epoch,
                     o->has_max_file_bytes ? 1 : 0, o->max_file_bytes);
    size_t len = n > 0 && (size_t)n < sizeof text ? (size_t)n : 0;
    uint8_t all[sizeof text + 16];
    memcpy(all, text, len);
    memcpy(all + len, digest, 16);
    char hex[33];
    nf_xxh3_128_hex(all, len + 16, hex);
    nf_hex_parse(hex, out, 16);
    out[6] = (uint8_t)((out[6] & 0x0F) | 0x40); /* shaped like a UUIDv4 */
    out[8] = (uint8_t)((out[8] & 0x3F) | 0x80);
    return NF_OK;
}

static int build_plan(const nf_cli *cli, convert_opts *opts, bool warn, nf_recipe **recipe, nf_plan **plan);

/* --method-program NAME=COMMAND as the recipe's options take them; COMMAND is recorded in the
 * provenance as text, so it must be UTF-8 (exit 2 otherwise). */
static int method_programs(const nf_cli *cli, nf_cli_recipe_args *ra)
{
    nf_error err;
    if (ra->method_timeout && !ra->nmethod_programs)
        return nf_cli_usage(cli, "--method-timeout belongs to --method-program NAME=COMMAND");
    for (size_t i = 0; i < ra->nmethod_programs; i++) {
        int rc = check_utf8(cli, "--method-program", ra->method_programs[i],
                            "the artifact's provenance records the command as text; give one that is");
        if (rc != NF_EXIT_OK) return rc;
    }
    if (nf_cli_method_programs(ra, &err) != NF_OK) return nf_cli_report(cli, &err);
    return NF_EXIT_OK;
}

/* --preset: the choice per tensor (docs/presets.md), into opts->prun; an exit status.  A tensor
 * whose type no ninfer format holds is refused here (exit 1), not left to a default. */
static int prepare_preset(const nf_cli *cli, convert_opts *opts)
{
    opts->prun = calloc(1, sizeof *opts->prun);
    if (!opts->prun) return nf_cli_error(cli, NF_ERR_NOMEM, "out of memory");
    return preset_prepare(cli, cli->positional[0], opts->preset, opts->imatrix, opts->rules, opts->nrules, opts->prun);
}

static int refuse_formatless(const nf_cli *cli, const preset_run *run)
{
    for (size_t i = 0; i < run->n; i++) {
        const preset_choice *c = &run->c[i];
        if (c->gguf[0] && c->floats && !c->format && !c->replaced_by)
            return nf_cli_error(cli, NF_ERR_INVALID,
                                "preset %s: tensor '%s' (%s): llama-quantize gives it %s, which "
                                "no ninfer format holds (--dry-run shows every choice; docs/presets.md)",
                                nf_preset_name(run->preset), nf_cli_name(c->tensor).s, nf_cli_name(c->gguf).s, c->type);
    }
    return NF_EXIT_OK;
}

/* --preset --dry-run: the choice per tensor, then the plan when this build can convert it
 * (docs/presets.md, "Dry run"). */
static int print_preset(const nf_cli *cli, convert_opts *opts, nf_recipe **recipe, nf_plan **plan)
{
    const preset_run *run = opts->prun;
    int rc = NF_EXIT_OK;
    bool convertible = run->unencodable == 0;
    if (convertible && (rc = build_plan(cli, opts, true, recipe, plan)) != NF_EXIT_OK) return rc;
    if (cli->json) {
        json_t *doc = json_pack("{s:o,s:o}", "preset", preset_describe(run), "plan",
                                *plan ? nf_plan_describe(*plan) : json_null());
        rc = doc ? nf_cli_print_json(cli, doc) : nf_cli_error(cli, NF_ERR_NOMEM, "out of memory");
        json_decref(doc);
        return rc;
    }
    if ((rc = preset_print(cli, run)) != NF_EXIT_OK || !*plan) return rc;
    json_t *d = nf_plan_describe(*plan);
    printf("\n");
    rc = convert_print_plan(cli, d);
    json_decref(d);
    return rc;
}

/* Quick mode's options, checked together; an exit status. */
static int check_quick(const nf_cli *cli, const convert_opts *opts)
{
    if (cli->npositional != 1 || opts->recipe ||
        (opts->format != NULL) + opts->has_target_bpw + (opts->preset != NULL) != 1)
        return nf_cli_usage(cli, "quick mode takes one SOURCE and one of --format FORMAT, --target-bpw X and "
                                 "--preset NAME, and no --recipe");
    int rc = check_utf8(cli, "SOURCE", cli->positional[0],
                        "quick mode's recipe and the artifact's provenance "
                        "record it as text; give a path that is (e.g. a symbolic link with a UTF-8 name)");
    if (rc != NF_EXIT_OK) return rc;
    if (opts->format && !nf_format_lookup(opts->format)) return nf_cli_usage(cli, "unknown format '%s'", opts->format);
    if (opts->method) { /* a built-in method, or a method program given beside it */
        nf_method_id id;
        bool known = nf_method_find(opts->method, &id, NULL) == NF_OK;
        for (size_t i = 0; !known && i < opts->ra.nprograms; i++)
            known = !strcmp(opts->ra.programs[i].name, opts->method);
        if (!known)
            return nf_cli_usage(cli,
                                "--method %s: unknown method (ninfer-convert --list-methods lists them; a program of "
                                "your own needs --method-program %s=COMMAND)",
                                opts->method, opts->method);
    }
    if (opts->imatrix && !opts->preset) return nf_cli_usage(cli, "--imatrix belongs to --preset NAME");
    if (opts->preset && (opts->method || opts->requantize))
        return nf_cli_usage(cli,
                            "--preset chooses the types and the method (ggml_quantize) of the floating-point "
                            "tensors; --%s does not go with it",
                            opts->method ? "method" : "requantize");
    if (opts->imatrix && (rc = check_utf8(cli, "--imatrix", opts->imatrix,
                                          "quick mode's recipe records it as text; "
                                          "give a path that is")) != NF_EXIT_OK)
        return rc;
    if (opts->has_target_bpw && opts->requantize)
        return nf_cli_usage(cli, "--target-bpw chooses formats for tensors of floating-point values: quantized "
                                 "weights are imported (give --format FORMAT --requantize to requantize them)");
    return NF_EXIT_OK;
}

/* The recipe (or quick mode's) and the plan of the parsed options; an exit status. */
static int build_plan(const nf_cli *cli, convert_opts *opts, bool warn, nf_recipe **recipe, nf_plan **plan)
{
    nf_error err;
    bool quick = cli->npositional > 0;
    if (quick) {
        int rc = check_quick(cli, opts);
        if (rc != NF_EXIT_OK) return rc;
        size_t len = 0;
        char too_big[8192] = "";
        char *text = convert_quick_recipe(cli->positional[0], opts, &len, too_big, sizeof too_big);
        if (!text) return nf_cli_error(cli, NF_ERR_NOMEM, "out of memory");
        if (*too_big) {
            free(text);
            return nf_cli_error(cli, NF_ERR_INVALID,
                                "%s: more than the %llu MiB quick mode keeps as a resource; "
                                "give --no-resources, or a recipe",
                                nf_cli_line(too_big).s, (unsigned long long)(QUICK_RESOURCE_MAX >> 20));
        }
        nf_recipe_options qo = {.programs = opts->ra.programs, .nprograms = opts->ra.nprograms};
        nf_status st = nf_recipe_parse_ex(text, len, "(quick mode)", NULL, &qo, recipe, &err);
        free(text);
        if (st == NF_OK && opts->nrules && !opts->rule_labels &&
            (opts->rule_labels = calloc(opts->nrules, sizeof(char *))))
            for (size_t k = 0; k < opts->nrules; k++) {
                int n = snprintf(NULL, 0, "--rule '%s'", nf_cli_line(opts->rules[k]).s);
                if (n > 0 && (opts->rule_labels[k] = malloc((size_t)n + 1)) != NULL)
                    snprintf(opts->rule_labels[k], (size_t)n + 1, "--rule '%s'", nf_cli_line(opts->rules[k]).s);
            }
        if (st == NF_OK) convert_label_quick_rules(*recipe, opts);
        /* SOURCE is the command line's: given as --source base=SOURCE would be */
        if (st == NF_OK) st = nf_recipe_set_source(*recipe, "base", cli->positional[0], &err);
        if (st == NF_OK && opts->imatrix) st = nf_recipe_set_source(*recipe, "imatrix", opts->imatrix, &err);
        /* and so are the files beside a safetensors file that quick mode keeps (its own recipe
         * names nothing else there) */
        char dir[4096];
        if (st == NF_OK && !opts->no_resources && convert_quick_source_dir(cli->positional[0], dir, sizeof dir)) {
            st = nf_recipe_allow_path(*recipe, dir, &err);
            if (st == NF_OK) st = convert_allow_hub_blobs(*recipe, dir, &err);
        }
        if (st != NF_OK) return nf_cli_report(cli, &err);
    } else {
        if (!opts->recipe) return nf_cli_usage(cli, "give -r RECIPE.yaml, or SOURCE --format FORMAT (quick mode)");
        if (opts->format || opts->has_target_bpw || opts->method || opts->nrules || opts->requantize ||
            opts->no_resources || opts->preset || opts->imatrix)
            return nf_cli_usage(cli, "--format, --target-bpw, --preset, --imatrix, --method, --rule, --requantize and "
                                     "--no-resources belong to quick mode (SOURCE --format FORMAT)");
        nf_recipe_options ro = {opts->ra.allow_env, opts->ra.nallow_env, opts->ra.programs, opts->ra.nprograms};
        if (nf_recipe_load_ex(opts->recipe, &ro, recipe, &err) != NF_OK) return nf_cli_report(cli, &err);
    }
    if (nf_cli_recipe_apply(*recipe, &opts->ra, &err) != NF_OK) return nf_cli_report(cli, &err);
    if (opts->sensitivity) { /* the budget's sensitivity source, given as --source NAME=FILE would be */
        nf_recipe_budget *rb = &(*recipe)->budget;
        if (!rb->set)
            return nf_cli_usage(cli, "--sensitivity weighs the tensors of a budget: give --target-bpw, or a recipe "
                                     "with a budget: section");
        if (!rb->sensitivity && !(rb->sensitivity = strdup("sensitivity")))
            return nf_cli_error(cli, NF_ERR_NOMEM, "out of memory");
        if (nf_recipe_set_source(*recipe, rb->sensitivity, opts->sensitivity, &err) != NF_OK)
            return nf_cli_report(cli, &err);
    }
    nf_plan_build_options bo = {opts->threads, NULL};
    if (nf_plan_build_ex(*recipe, &bo, plan, &err) != NF_OK) return nf_cli_report(cli, &err);
    /* -v: what an imatrix held that the reader ignores (a newer llama-imatrix's T.in_sum, ...) */
    for (size_t i = 0; cli->verbosity > 0 && i < (*recipe)->nsources; i++) {
        const char *name = NULL;
        const nf_imatrix *im = nf_plan_imatrix_at(*plan, i, &name);
        for (size_t k = 0; im && k < nf_imatrix_ignored_count(im); k++)
            nf_cli_info(cli, "imatrix '%s': ignoring tensor '%s' (not T.in_sum2 or T.counts)", nf_cli_name(name).s,
                        nf_cli_name(nf_imatrix_ignored_at(im, k)).s);
    }
    if (warn) convert_warn_reencoded(cli, *plan); /* (a plan's tasks and its assembler leave it to its maker) */
    return NF_EXIT_OK;
}

static nf_convert_options convert_options(const convert_opts *opts, progress_ctx *pc)
{
    nf_convert_options co = {opts->output,
                             opts->threads,
                             opts->has_max_file_bytes,
                             opts->max_file_bytes,
                             opts->force,
                             !opts->no_report,
                             opts->has_id ? opts->artifact_id : NULL,
                             opts->chunk_values,
                             show_progress,
                             pc,
                             nf_sig_flag(),
                             opts->no_source_digests,
                             opts->attest};
    return co;
}

/* --plan-out: the plan of this conversion, for tasks to run anywhere (docs/scale-out.md): the
 * library records the recipe as made and the options that decide bytes, as data. */
static int write_plan(const nf_cli *cli, convert_opts *opts, nf_plan *plan)
{
    nf_error err;
    progress_ctx pc = {false, false, {0, 0}};
    nf_convert_options co = convert_options(opts, &pc);
    /* SIGINT, SIGTERM, SIGHUP: the plan's temp file goes, no plan is put in place (docs/security.md) */
    nf_sig_catch();
    size_t ntasks = 0;
    if (nf_scaleout_plan(plan, &co, opts->tasks, opts->plan_out, &ntasks, &err) != NF_OK)
        return nf_cli_report(cli, &err);
    if (cli->json) {
        json_t *doc = json_pack("{s:s,s:s,s:I}", "plan", opts->plan_out, "output", opts->output, "tasks",
                                (json_int_t)ntasks);
        int rc = nf_cli_print_json(cli, doc);
        json_decref(doc);
        return rc;
    }
    printf("%zu\n", ntasks);
    if (cli->verbosity >= 0)
        fprintf(stderr,
                "%s: wrote the plan %s: %zu task%s (run each with --plan %s --task I, I from 0 to %zu, then "
                "--assemble)\n",
                cli->prog, nf_cli_name(opts->plan_out).s, ntasks, ntasks == 1 ? "" : "s", nf_cli_name(opts->plan_out).s,
                ntasks - 1);
    return NF_EXIT_OK;
}

/* The options given beside --plan that a task may not take, refused from the rows' tags
 * (PLAN_OK, PLAN_RECORDS): an exit status.  The message lists what a task may add, from the
 * table too. */
static int plan_options(const nf_cli *cli)
{
    for (size_t i = 0; i < cli->ngiven; i++) {
        const nf_option *row = cli->given[i];
        if (row->tags & PLAN_OK) continue;
        char may[512] = "";
        for (const nf_option *o = options; o->long_name; o++)
            if ((o->tags & PLAN_OK) && strcmp(o->long_name, "plan") != 0 && strncmp(o->long_name, "list-", 5) != 0)
                snprintf(may + strlen(may), sizeof may - strlen(may), "--%s, ", o->long_name);
        const char *why = row->tags & PLAN_RECORDS ? "the plan records it (it decides the artifact's bytes)"
                                                   : "it does not go with --plan";
        return nf_cli_usage(cli, "--%s: %s; with --plan a task may add only %s-q, -v, --json and --progress",
                            row->long_name, why, may);
    }
    return NF_EXIT_OK;
}

/* --plan PLAN (--task I|all | --assemble): the plan's conversion rebuilt from its data by the
 * library, in the plan's directory, then the task(s) or the assembly. */
static int plan_mode(const nf_cli *cli, const convert_opts *given)
{
    nf_error err;
    int rc = plan_options(cli);
    if (rc != NF_EXIT_OK) return rc;
    if (cli->npositional)
        return nf_cli_usage(cli, "'%s': with --plan, the plan gives the sources", nf_cli_name(cli->positional[0]).s);
    if (!given->task == !given->assemble) return nf_cli_usage(cli, "--plan takes --task I (or all) or --assemble");
    if (given->verify && !given->assemble) return nf_cli_usage(cli, "--verify belongs to --assemble");
    size_t task = 0;
    bool all = given->task && strcmp(given->task, "all") == 0, beyond = false;
    if (given->task && !all) {
        if (!*given->task || strspn(given->task, "0123456789") != strlen(given->task))
            return nf_cli_usage(cli, "--task takes a task number (0-based) or all, not '%s'",
                                nf_cli_name(given->task).s);
        errno = 0;
        unsigned long long v = strtoull(given->task, NULL, 10);
        beyond = errno == ERANGE || v > SIZE_MAX; /* a number, out of range like any other (below) */
        task = (size_t)v;
    }
    nf_scaleout *s = NULL;
    if (nf_scaleout_open(given->plan, &s, &err) != NF_OK) return nf_cli_report(cli, &err);
    if (given->task && !all && (beyond || task >= nf_scaleout_task_count(s))) {
        rc = nf_cli_error(cli, NF_ERR_INVALID, "%s: no task %s (the plan has tasks 0 to %zu)",
                          nf_cli_name(given->plan).s, nf_cli_name(given->task).s, nf_scaleout_task_count(s) - 1);
        nf_scaleout_free(s);
        return rc;
    }
    /* the plan's relative paths are its directory's (nf_scaleout_rebuild runs there) */
    const char *dir = nf_scaleout_directory(s);
    if (chdir(dir) != 0) {
        rc = nf_cli_error(cli, NF_ERR_IO, "%s: cannot change to the plan's directory %s: %s",
                          nf_cli_name(given->plan).s, nf_cli_name(dir).s, strerror(errno));
        nf_scaleout_free(s);
        return rc;
    }
    nf_sig_catch(); /* SIGINT, SIGTERM, SIGHUP stop the run: nothing published, no temp file left */
    progress_ctx pc = {cli->progress == NF_PROGRESS_ALWAYS ||
                           (cli->progress == NF_PROGRESS_AUTO && isatty(STDERR_FILENO) && cli->verbosity >= 0),
                       false,
                       {0, 0}};
    clock_gettime(CLOCK_MONOTONIC, &pc.start);
    nf_scaleout_run run = {given->threads, given->chunk_values, show_progress,      &pc,
                           nf_sig_flag(),  given->ra.programs,  given->ra.nprograms};
    convert_opts opts = {0}; /* for the stale files beside the plan's output */
    opts.output = nf_scaleout_output(s);
    opts.remove_stale = given->remove_stale;
    opts.staging = true;
    if (nf_scaleout_rebuild(s, &run, &err) != NF_OK) rc = nf_cli_report(cli, &err);
    if (rc == NF_EXIT_OK) rc = handle_stale(cli, &opts);
    size_t nobjects = rc == NF_EXIT_OK ? nf_plan_object_count(nf_scaleout_conversion(s)) : 0;
    if (rc == NF_EXIT_OK && given->assemble) {
        if (nf_scaleout_assemble(s, given->verify, &err) != NF_OK) {
            rc = nf_cli_report(cli, &err);
        } else if (cli->json) {
            json_t *doc = json_pack("{s:s,s:s,s:I,s:f}", "plan", given->plan, "output", opts.output, "objects",
                                    (json_int_t)nobjects, "seconds", seconds_since(&pc.start));
            rc = nf_cli_print_json(cli, doc);
            json_decref(doc);
        } else if (cli->verbosity >= 0) {
            fprintf(stderr, "%s: assembled %s (%zu objects) in %.2f s\n", cli->prog, nf_cli_name(opts.output).s,
                    nobjects, seconds_since(&pc.start));
        }
    }
    size_t first = all ? 0 : task, last = all ? nf_scaleout_task_count(s) : task + 1; /* (task < the count) */
    json_t *done_list = cli->json ? json_array() : NULL;
    for (size_t t = first; rc == NF_EXIT_OK && !given->assemble && t < last; t++) {
        bool skipped = false;
        if (nf_scaleout_task(s, t, &skipped, &err) != NF_OK) {
            rc = nf_cli_report(cli, &err);
        } else if (done_list) {
            json_array_append_new(
                done_list, json_pack("{s:I,s:s}", "task", (json_int_t)t, "status", skipped ? "done already" : "done"));
        } else if (cli->verbosity >= 0) {
            fprintf(stderr, "%s: task %zu of %zu %s\n", cli->prog, t, nf_scaleout_task_count(s),
                    skipped ? "was done already" : "done");
        }
    }
    if (rc == NF_EXIT_OK && done_list && !given->assemble) {
        json_t *doc = json_pack("{s:s,s:s,s:I,s:O}", "plan", given->plan, "output", opts.output, "task_count",
                                (json_int_t)nf_scaleout_task_count(s), "tasks", done_list);
        rc = nf_cli_print_json(cli, doc);
        json_decref(doc);
    }
    json_decref(done_list);
    nf_scaleout_free(s);
    return rc;
}

int main(int argc, char **argv)
{
    nf_cli cli;
    convert_opts opts = {0};
    opts.rules = calloc((size_t)argc + 1, sizeof *opts.rules);
    if (!nf_cli_recipe_args_init(&opts.ra, argc) || !opts.rules) return NF_EXIT_SYSTEM;
    bool done = false;
    nf_recipe *recipe = NULL;
    nf_plan *plan = NULL;
    nf_error err;
    int rc = nf_cli_parse(&cli, &program, argc, argv, &opts, &done);
    if (rc != NF_EXIT_OK || done) goto out;
    if ((rc = method_programs(&cli, &opts.ra)) != NF_EXIT_OK) goto out;
    if (opts.plan) {
        rc = plan_mode(&cli, &opts);
        goto out;
    }
    if (opts.task || opts.assemble || opts.verify) {
        rc = nf_cli_usage(&cli, "--task, --assemble and --verify belong to --plan PLAN.json");
        goto out;
    }
    if (opts.tasks && !opts.plan_out) {
        rc = nf_cli_usage(&cli, "--tasks belongs to --plan-out PLAN.json");
        goto out;
    }
    if (opts.attest && opts.plan_out) {
        rc = nf_cli_usage(&cli, "--attest belongs to a run that publishes the artifact; a plan's tasks and its "
                                "assembly write no statement");
        goto out;
    }
    bool quick = cli.npositional > 0;
    if (!opts.output) {
        rc = nf_cli_usage(&cli, "-o OUT.ninfer is required");
        goto out;
    }
    if ((rc = check_output(&cli, opts.output)) != NF_EXIT_OK ||
        (rc = check_utf8(&cli, "-o", opts.output,
                         "its report and a plan record the output's name as JSON text; give "
                         "a name that is")) != NF_EXIT_OK)
        goto out;
    for (int i = 1; opts.plan_out && i < argc; i++) {
        char what[64];
        snprintf(what, sizeof what, "argument %d", i);
        if ((rc = check_utf8(&cli, what, argv[i],
                             "--plan-out records the conversion (the recipe, the paths and "
                             "names given) in the plan as JSON text; give arguments that are")) != NF_EXIT_OK)
            goto out;
    }
    if (opts.remove_stale && !quick && !opts.recipe) { /* cleanup only */
        if (opts.format || opts.method || opts.nrules || opts.ra.nsources) {
            rc = nf_cli_usage(&cli, "-o OUT --remove-stale alone removes stale files; give a recipe to convert");
            goto out;
        }
        rc = handle_stale(&cli, &opts);
        goto out;
    }
    if (quick && opts.preset) {
        if ((rc = check_quick(&cli, &opts)) != NF_EXIT_OK || (rc = prepare_preset(&cli, &opts)) != NF_EXIT_OK) goto out;
        if (opts.dry_run) {
            if ((rc = handle_stale(&cli, &opts)) == NF_EXIT_OK) rc = print_preset(&cli, &opts, &recipe, &plan);
            goto out;
        }
        if ((rc = refuse_formatless(&cli, opts.prun)) != NF_EXIT_OK) goto out;
    }
    if ((rc = build_plan(&cli, &opts, true, &recipe, &plan)) != NF_EXIT_OK) goto out;
    if (opts.dry_run) {
        if ((rc = handle_stale(&cli, &opts)) != NF_EXIT_OK) goto out;
        json_t *d = nf_plan_describe(plan);
        if (cli.json) rc = nf_cli_print_json(&cli, d);
        else rc = convert_print_plan(&cli, d);
        json_decref(d);
        goto out;
    }
    if ((rc = handle_stale(&cli, &opts)) != NF_EXIT_OK) goto out;
    const char *epoch = getenv("SOURCE_DATE_EPOCH");
    if (!opts.has_id && epoch && *epoch) {
        if (derived_id(plan, epoch, &opts, opts.artifact_id, &err) != NF_OK) {
            rc = nf_cli_report(&cli, &err);
            goto out;
        }
        opts.has_id = true;
    }
    if (opts.plan_out) {
        rc = write_plan(&cli, &opts, plan);
        goto out;
    }
    nf_cli_info(&cli, "kernels: %s", nf_simd_name());
    nf_sig_catch(); /* SIGINT, SIGTERM, SIGHUP stop the run: nothing published, no temp file left */
    progress_ctx pc = {cli.progress == NF_PROGRESS_ALWAYS ||
                           (cli.progress == NF_PROGRESS_AUTO && isatty(STDERR_FILENO) && cli.verbosity >= 0),
                       false,
                       {0, 0}};
    clock_gettime(CLOCK_MONOTONIC, &pc.start);
    nf_convert_options co = convert_options(&opts, &pc);
    if (nf_plan_execute(plan, &co, &err) != NF_OK) {
        rc = nf_cli_report(&cli, &err);
        goto out;
    }
    double secs = seconds_since(&pc.start);
    if (cli.json) {
        json_t *d = nf_plan_describe(plan);
        json_t *doc = json_pack("{s:s,s:O,s:f}", "output", opts.output, "totals", json_object_get(d, "totals"),
                                "seconds", secs);
        rc = nf_cli_print_json(&cli, doc);
        json_decref(doc);
        json_decref(d);
    } else if (cli.verbosity >= 0) {
        fprintf(stderr, "%s: wrote %s (%zu objects) in %.2f s\n", cli.prog, nf_cli_name(opts.output).s,
                nf_plan_object_count(plan), secs);
    }
out:
    nf_plan_free(plan);
    nf_recipe_free(recipe);
    convert_free_rule_labels(&opts);
    if (opts.prun) preset_free(opts.prun);
    free(opts.prun);
    nf_cli_free(&cli);
    free(opts.rules);
    nf_cli_recipe_args_free(&opts.ra);
    return rc;
}
