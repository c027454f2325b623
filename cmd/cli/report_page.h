/* The report page (docs/ninfer-inspect.md, "The report page"): one self-contained HTML file of a
 * conversion report or a comparison, for people to look at and to share -- a heatmap of the
 * error per layer and tensor role, size against error (each uniform candidate of a budget and the
 * chosen allocation), bits per weight per layer, and every tensor in a table sortable without
 * JavaScript.  Inline SVG (svg.h) and CSS only: no script, nothing fetched (a Content Security
 * Policy says so to the browser), every name from a file escaped. */
#ifndef NINFER_CLI_REPORT_PAGE_H
#define NINFER_CLI_REPORT_PAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

/* One tensor (an object of a conversion, or a pair of a comparison). */
typedef struct nf_page_row {
    const char *name;
    const char *layer_name; /* the name its layer and role are read from (a pair's reference side), or NULL: name */
    const char *format;     /* or NULL */
    double bpw;             /* bits per weight as stored; NAN: not known */
    uint64_t values;        /* its values, which weigh its bits per weight in its layer's */
    bool stats;             /* the error figures below are given */
    uint64_t count;         /* values compared */
    double max_abs, rmse;
    double snr_db;   /* INFINITY: exact (no value differs); NAN: undefined */
    double weighted; /* importance-weighted squared error; NAN: none */
} nf_page_row;

/* One point of the size-against-error chart. */
typedef struct nf_page_point {
    const char *label; /* "q4_g64_fp16 grouped_search" */
    double bpw, error;
    bool chosen; /* the allocation the budget chose */
} nf_page_point;

typedef struct nf_page {
    const char *title;       /* the heading: what the page is of */
    const char *about;       /* a line under it (the report's file, its converter), or NULL */
    const char *generator;   /* "ninfer-inspect (ninfer-tools 0.1.0)" */
    const char *error_title; /* the chart's error axis, with its unit */
    const nf_page_row *rows;
    size_t nrows;
    const nf_page_point *points; /* none: the page says the chart needs a budget's figures */
    size_t npoints;
} nf_page;

/* The page's HTML appended to out; false when out of memory. */
bool nf_page_html(const nf_page *p, nf_buf *out);

struct nf_cli;
/* The page written to path as the programs write a file (outputs/out_file.h: "-" standard output,
 * a regular file replaced at once, never a partial page); an exit status, errors reported. */
int nf_page_write(const struct nf_cli *cli, const nf_page *p, const char *path);

/* The layer of a tensor name (model.layers.N., blk.N., h.N., layers.N.), or -1; and its role, the
 * name without the layer's part, an expert's index made "*" (mlp.experts.*.down_proj.weight),
 * into role (size bytes). */
long nf_page_layer(const char *name, char *role, size_t size);

#endif
