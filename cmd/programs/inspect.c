/* ninfer-inspect: header, directory, objects, bindings and uses of a .ninfer artifact, the
 * geometry and statistics of one tensor, and its logical words (docs/ninfer-inspect.md).  FILE may
 * also be a source checkpoint (safetensors file, index or directory; GGUF file): its files,
 * metadata, companions and tensors, and one tensor's statistics.
 * Reads no payload unless asked (--tensor --stats, --words). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ninfer/ninfer.h>

#include "inspect.h"

static const nf_option options[] = {
    NF_OPT_FLAG_ROW(inspect_opts, objects, "objects", 0, "list the objects (artifacts only)"),
    NF_OPT_FLAG_ROW(inspect_opts, bindings, "bindings", 0, "list the bindings (artifacts only)"),
    NF_OPT_FLAG_ROW(inspect_opts, uses, "uses", 0, "list the uses (artifacts only)"),
    NF_OPT_FLAG_ROW(inspect_opts, files, "files", 0, "list the files of the artifact or checkpoint"),
    NF_OPT_FLAG_ROW(inspect_opts, summary, "summary", 0,
                    "one screen: totals per format, bits/weight, methods (artifacts only)"),
    NF_OPT_FLAG_ROW(inspect_opts, provenance, "provenance", 0,
                    "the converter, the recipe's SHA-256 and each source's hub revision and files with their sizes "
                    "and SHA-256 (artifacts only)"),
    NF_OPT_STRING_ROW(inspect_opts, tensor, "tensor", 't', "ID",
                      "one tensor: object geometry and planes, or checkpoint tensor"),
    NF_OPT_FLAG_ROW(inspect_opts, stats, "stats", 0, "with --tensor: statistics of the (represented) values"),
    NF_OPT_STRING_ROW(inspect_opts, words, "words", 'w', "ID",
                      "logical words of a tensor object: codes, scales, divisors (artifacts only)"),
    NF_OPT_SPAN_ROW(inspect_opts, rows, "rows", 0, "A:B", "with --words: rows A (inclusive) to B (exclusive)"),
    NF_OPT_SPAN_ROW(inspect_opts, cols, "cols", 0, "A:B", "with --words: columns A to B"),
    NF_OPT_STRING_ROW(inspect_opts, report, "report", 0, "R.json",
                      "a conversion report (OUT.conversion.json) or ninfer-diff --json, for --html"),
    NF_OPT_STRING_ROW(inspect_opts, html, "html", 0, "OUT.html",
                      "with --report: write its page (charts and a sortable table; '-': standard output)"),
    NF_OPT_END,
};

static const nf_program program = {
    "ninfer-inspect",
    "ninfer-inspect FILE [--json] [--objects] [--bindings] [--uses] [--files]\n"
    "       ninfer-inspect FILE --summary [--json]\n"
    "       ninfer-inspect FILE --provenance [--json]\n"
    "       ninfer-inspect FILE --tensor ID [--stats] [--json]\n"
    "       ninfer-inspect FILE --words ID [--rows A:B] [--cols A:B] [--json]\n"
    "       ninfer-inspect CHECKPOINT [--json] [--files]\n"
    "       ninfer-inspect CHECKPOINT --tensor NAME [--stats] [--json]\n"
    "       ninfer-inspect --report R.json --html OUT.html",
    "Show what a .ninfer artifact holds: its files, objects (format, layout, shape, bytes,\n"
    "bits/weight), totals per format, components, bindings and uses.  --tensor shows one tensor's\n"
    "geometry and planes; --words prints its logical words as stored.  Only the header and the\n"
    "JSON directory are read unless --stats or --words asks for payload.  --summary fits one\n"
    "screen: totals per format, bits per weight of the artifact and of its tensors, and the\n"
    "methods that made the tensors (from provenance).\n"
    "\n"
    "FILE may also be a source CHECKPOINT: a .safetensors file, a *.safetensors.index.json, a\n"
    "checkpoint directory, a .gguf file or a PyTorch pytorch_model.bin (told apart by content:\n"
    "a file starting with NINFER\\0 is an artifact).  Its summary lists the files, the\n"
    "safetensors __metadata__ or the GGUF version, alignment, data offset and key/values, the\n"
    "companion files (config.json, tokenizer.json, ...) and every tensor (dtype, shape, offset,\n"
    "bytes) with totals per dtype.\n"
    "--tensor NAME [--stats] shows one tensor; --objects, --bindings, --uses and --words are for\n"
    "artifacts only.  Only headers are read unless --stats asks for tensor data.\n"
    "\n"
    "--report R.json --html OUT.html draws a conversion report (OUT.conversion.json) or a\n"
    "comparison (ninfer-diff --json) as one self-contained HTML page: the error per layer and\n"
    "tensor role, size against error for a budget's candidates and its allocation, bits per\n"
    "weight per layer, and every tensor in a table sortable without JavaScript.",
    options,
    "  ninfer-inspect model.ninfer\n"
    "  ninfer-inspect model.ninfer --json | jq '.objects[].id'\n"
    "  ninfer-inspect model.ninfer --tensor lm_head.weight --stats\n"
    "  ninfer-inspect model.ninfer --provenance\n"
    "  ninfer-inspect model.ninfer --words lm_head.weight --rows 0:2 --cols 0:64\n"
    "  ninfer-inspect checkpoint/                       # safetensors directory, index or file\n"
    "  ninfer-inspect --report model.ninfer.conversion.json --html model.html\n"
    "  ninfer-inspect model.gguf --json | jq '.metadata'\n"
    "  ninfer-inspect checkpoint/ --tensor lm_head.weight --stats\n",
    NULL, /* the usual exit statuses */
};

/* ---------------------------------------------------------------- dispatch */
/* ---------------------------------------------------------------- main */
int main(int argc, char **argv)
{
    nf_cli cli;
    inspect_opts opts = {0};
    bool done = false;
    int rc = nf_cli_parse(&cli, &program, argc, argv, &opts, &done);
    if (rc != NF_EXIT_OK || done) goto out;
    if (opts.report || opts.html) {
        if (!opts.report || !opts.html)
            rc = nf_cli_usage(&cli, "--report R.json and --html OUT.html go together (the report page)");
        else if (cli.npositional) rc = nf_cli_usage(&cli, "--report reads R.json alone: no FILE with it");
        else if (opts.tensor || opts.words || opts.summary || opts.provenance || opts.objects || opts.bindings ||
                 opts.uses || opts.files || opts.stats || cli.json)
            rc = nf_cli_usage(&cli, "--report --html is a view of its own; give it without the other views and --json");
        else rc = inspect_report(&cli, opts.report, opts.html);
        goto out;
    }
    if (cli.npositional != 1) {
        rc = nf_cli_usage(&cli, cli.npositional ? "one FILE at a time" : "no FILE given");
        goto out;
    }
    if (opts.tensor && opts.words) {
        rc = nf_cli_usage(&cli, "--tensor and --words are separate views; give one");
        goto out;
    }
    if (opts.summary && (opts.tensor || opts.words || opts.objects || opts.bindings || opts.uses || opts.files)) {
        rc = nf_cli_usage(&cli, "--summary is a view of its own; give it without --tensor, --words, --objects, "
                                "--bindings, --uses and --files");
        goto out;
    }
    if (opts.provenance &&
        (opts.summary || opts.tensor || opts.words || opts.objects || opts.bindings || opts.uses || opts.files)) {
        rc = nf_cli_usage(&cli, "--provenance is a view of its own; give it without the other views");
        goto out;
    }
    if (opts.stats && !opts.tensor) {
        rc = nf_cli_usage(&cli, "--stats goes with --tensor ID");
        goto out;
    }
    if ((opts.rows.given || opts.cols.given) && !opts.words) {
        rc = nf_cli_usage(&cli, "--rows and --cols go with --words ID");
        goto out;
    }
    nf_error cerr;
    nf_cli_input kind = nf_cli_input_kind(cli.positional[0], &cerr);
    if (kind == NF_INPUT_NOT_A_FILE) {
        rc = nf_cli_report(&cli, &cerr);
        goto out;
    }
    if (kind != NF_INPUT_ARTIFACT && opts.provenance) {
        rc = nf_cli_usage(&cli, "--provenance is for artifacts: a checkpoint records none");
        goto out;
    }
    if (kind != NF_INPUT_ARTIFACT) {
        rc = inspect_source(&cli, cli.positional[0], kind, &opts);
        goto out;
    }
    rc = inspect_artifact(&cli, cli.positional[0], &opts);
out:
    nf_cli_free(&cli);
    return rc;
}
