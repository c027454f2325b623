/* ninfer-inspect's parts (docs/ninfer-inspect.md): the options every view reads, the value
 * statistics of --tensor --stats and the shape helpers (inspect_common.c), the artifact views (inspect_artifact.c) and
 * the checkpoint views (inspect_source.c); inspect.c parses the command line and dispatches. */
#ifndef NINFER_CMD_INSPECT_H
#define NINFER_CMD_INSPECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <ninfer/container.h>

#include "cli.h"

typedef struct inspect_opts {
    bool objects, bindings, uses, files, stats, summary, provenance;
    const char *tensor;
    const char *words;
    nf_cli_span rows, cols; /* --rows, --cols */
    const char *report;     /* --report R.json */
    const char *html;       /* --html OUT.html */
} inspect_opts;

/* A shape as a JSON array, and as text "[d0,d1,...]" (`reversed`: the dimensions last first,
 * ggml's ne order). */
json_t *dims_json(const uint64_t *dims, uint32_t rank);
void dims_text(const uint64_t *dims, uint32_t rank, bool reversed, char *buf, size_t size);

/* The values of one tensor for --stats: count, zeros, non-finite ones, min, max, mean, rms,
 * max |v| (summed in row-major order in binary64). */
typedef struct value_stats {
    uint64_t count, zeros, nans, infs;
    double min, max, sum, sum_sq, abs_max;
} value_stats;

/* Values read at a time for --stats: about a million (nvfp4 reads whole 128-row tiles). */
#define STATS_CHUNK_VALUES ((uint64_t)1 << 20)

void stats_init(value_stats *s);
void stats_add(value_stats *s, const float *values, uint64_t n);
double stats_mean(const value_stats *s);
double stats_rms(const value_stats *s);
json_t *stats_json(const value_stats *s);
void print_stats(const value_stats *s);


/* The artifact at path (its magic checked): the summary, --tensor or --words. */
int inspect_artifact(const nf_cli *cli, const char *path, const inspect_opts *opts);
/* --provenance: the converter, the recipe's and the sources' SHA-256 (inspect_provenance.c). */
int inspect_provenance(const nf_cli *cli, const nf_artifact *a, const char *path);
/* --report R.json --html OUT.html: the report page of a conversion report or a comparison
 * (inspect_report.c). */
int inspect_report(const nf_cli *cli, const char *report, const char *html);
/* A checkpoint (or a path the source reader must judge): its summary or --tensor. */
int inspect_source(const nf_cli *cli, const char *path, nf_cli_input kind, const inspect_opts *opts);

#endif
