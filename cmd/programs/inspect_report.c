/* ninfer-inspect --report R.json --html OUT.html (docs/ninfer-inspect.md, "The report page"): a
 * conversion report (OUT.conversion.json) or a comparison (ninfer-diff --json) read, checked
 * member by member, and drawn as the report page (cmd/cli/report_page.h).  The report is someone
 * else's file: a member of the wrong type is an error naming the file, the object and the member,
 * and a report of a newer schema is refused rather than half read. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ninfer/ninfer.h>

#include "common/checked.h"
#include "inspect.h"
#include "report_page.h"

/* The largest report read: 2 * 10^5 objects of about 300 bytes (a 1T-parameter model's report
 * is about 15 MB).  The parsed tree takes about 30 times the text. */
#define REPORT_MAX_BYTES ((long long)64 << 20)

typedef struct report_read {
    const nf_cli *cli;
    const char *path;
    json_t *root;
    nf_page_row *rows;
    size_t nrows;
    nf_page_point *points;
    size_t npoints;
    char **labels; /* names and labels built here (owned) */
    size_t nlabels;
    char title[512], about[1024];
} report_read;

static int bad(const report_read *r, size_t i, const char *member, const char *what)
{
    if (i == SIZE_MAX) return nf_cli_error(r->cli, NF_ERR_INVALID, "%s: %s", nf_cli_name(r->path).s, what);
    return nf_cli_error(r->cli, NF_ERR_INVALID, "%s: objects[%zu]: '%s' %s", nf_cli_name(r->path).s, i, member, what);
}

/* A number member: absent or null is NaN (when allowed), else it must be a number, one >= 0 but
 * for an SNR. */
static int number(const report_read *r, size_t i, const json_t *o, const char *key, bool optional, double *out)
{
    const json_t *v = json_object_get(o, key);
    *out = NAN;
    if ((!v || json_is_null(v)) && optional) return NF_EXIT_OK;
    if (!json_is_number(v)) return bad(r, i, key, optional ? "is not a number or null" : "is missing or not a number");
    *out = json_number_value(v);
    if (!(*out >= 0) && strcmp(key, "snr_db") != 0) return bad(r, i, key, "is negative");
    return NF_EXIT_OK;
}

static int count(const report_read *r, size_t i, const json_t *o, const char *key, uint64_t *out)
{
    const json_t *v = json_object_get(o, key);
    *out = 0;
    if (!v) return NF_EXIT_OK;
    if (!json_is_integer(v) || json_integer_value(v) < 0) return bad(r, i, key, "is not a count");
    *out = (uint64_t)json_integer_value(v);
    return NF_EXIT_OK;
}

static const char *text(const json_t *o, const char *key) { return json_string_value(json_object_get(o, key)); }

/* A member that is a string when present: false for another type (the caller says so). */
static bool text_or_absent(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return !v || json_is_string(v) || json_is_null(v);
}

/* s kept for freeing with the report; NULL (s freed) when out of memory */
static const char *or_dash(const char *s) { return s ? s : "-"; }

static char *keep(report_read *r, char *s)
{
    if (!s) return NULL;
    char **l = realloc(r->labels, (r->nlabels + 1) * sizeof *l);
    if (!l) {
        free(s);
        return NULL;
    }
    r->labels = l;
    r->labels[r->nlabels++] = s;
    return s;
}

/* One object of a conversion report. */
static int conversion_row(report_read *r, size_t i, const json_t *o, nf_page_row *row)
{
    if (!json_is_object(o)) return bad(r, i, "object", "is not a JSON object");
    row->name = text(o, "object");
    if (!row->name) return bad(r, i, "object", "is missing or not a string");
    row->format = text(o, "format");
    if (!text_or_absent(o, "format")) return bad(r, i, "format", "is not a string");
    const json_t *shape = json_object_get(o, "shape");
    uint64_t bytes, values = 1;
    int rc = count(r, i, o, "bytes", &bytes);
    if (rc != NF_EXIT_OK) return rc;
    if (!json_is_array(shape)) return bad(r, i, "shape", "is missing or not an array");
    for (size_t k = 0; k < json_array_size(shape); k++) {
        const json_t *d = json_array_get(shape, k);
        if (!json_is_integer(d) || json_integer_value(d) < 0) return bad(r, i, "shape", "is not an array of counts");
        if (!nf_mul_u64(values, (uint64_t)json_integer_value(d), &values))
            return bad(r, i, "shape", "has more values than 2^64");
    }
    row->values = values;
    row->bpw = values ? (double)bytes * 8.0 / (double)values : NAN;
    if ((rc = count(r, i, o, "values_compared", &row->count)) != NF_EXIT_OK) return rc;
    row->stats = json_object_get(o, "values_compared") != NULL;
    if (!row->stats) return NF_EXIT_OK;
    if ((rc = number(r, i, o, "max_abs_error", false, &row->max_abs)) != NF_EXIT_OK) return rc;
    if ((rc = number(r, i, o, "rmse", false, &row->rmse)) != NF_EXIT_OK) return rc;
    if ((rc = number(r, i, o, "snr_db", true, &row->snr_db)) != NF_EXIT_OK) return rc;
    /* the report's null SNR is an exact object (sse = 0) */
    if (isnan(row->snr_db) && row->rmse == 0 && row->count) row->snr_db = INFINITY;
    const json_t *budget = json_object_get(o, "budget");
    row->weighted = NAN;
    if (budget && !json_is_object(budget)) return bad(r, i, "budget", "is not a JSON object");
    if (budget) return number(r, i, budget, "weighted_error", true, &row->weighted);
    return NF_EXIT_OK;
}

/* One object of ninfer-diff --json: its pair, the side that is not the reference. */
static int diff_row(report_read *r, size_t i, const json_t *o, bool ref_b, nf_page_row *row)
{
    if (!json_is_object(o)) return bad(r, i, "object", "is not a JSON object");
    const char *id = text(o, "id"), *id_b = text(o, "id_b");
    if (!id) return bad(r, i, "id", "is missing or not a string");
    row->name = id;
    if (id_b) {
        size_t n = strlen(id) + strlen(id_b) + 4;
        char *s = keep(r, malloc(n));
        if (!s) return nf_cli_error(r->cli, NF_ERR_NOMEM, "out of memory");
        snprintf(s, n, "%s = %s", id, id_b);
        row->name = s;
    }
    if (!text_or_absent(o, "id_b")) return bad(r, i, "id_b", "is not a string");
    /* layer and role from the reference's name (the source's, against a quant) */
    row->layer_name = ref_b && id_b ? id_b : id;
    const char *side = ref_b ? "a" : "b";
    char key[32];
    snprintf(key, sizeof key, "format_%s", side);
    row->format = text(o, key);
    if (!text_or_absent(o, key)) return bad(r, i, key, "is not a string");
    snprintf(key, sizeof key, "bits_per_weight_%s", side);
    int rc = number(r, i, o, key, true, &row->bpw);
    if (rc != NF_EXIT_OK) return rc;
    const json_t *st = json_object_get(o, "statistics");
    if (!st) return NF_EXIT_OK;
    if (!json_is_object(st)) return bad(r, i, "statistics", "is not a JSON object");
    if ((rc = count(r, i, st, "count", &row->count)) != NF_EXIT_OK) return rc;
    row->values = row->count;
    row->stats = true;
    if ((rc = number(r, i, st, "max_abs", false, &row->max_abs)) != NF_EXIT_OK) return rc;
    if ((rc = number(r, i, st, "rmse", true, &row->rmse)) != NF_EXIT_OK) return rc;
    const json_t *snr = json_object_get(st, "snr_db");
    if (json_is_string(snr) && !strcmp(json_string_value(snr), "exact")) row->snr_db = INFINITY;
    else if ((rc = number(r, i, st, "snr_db", true, &row->snr_db)) != NF_EXIT_OK) return rc;
    return number(r, i, st, "weighted_error", true, &row->weighted);
}

/* A budget's points: each uniform candidate, and the allocation. */
static int budget_points(report_read *r, const json_t *b)
{
    if (!b) return NF_EXIT_OK;
    if (!json_is_object(b)) return bad(r, SIZE_MAX, NULL, "'budget' is not a JSON object");
    const json_t *uni = json_object_get(b, "uniform");
    if (uni && !json_is_array(uni)) return bad(r, SIZE_MAX, NULL, "'budget.uniform' is not an array");
    size_t n = json_is_array(uni) ? json_array_size(uni) : 0;
    r->points = calloc(n + 1, sizeof *r->points);
    if (!r->points) return nf_cli_error(r->cli, NF_ERR_NOMEM, "out of memory");
    for (size_t k = 0; k < n; k++) {
        const json_t *u = json_array_get(uni, k);
        const json_t *bpw = json_object_get(u, "bits_per_weight"), *e = json_object_get(u, "estimated_error");
        const char *f = text(u, "format"), *m = text(u, "method");
        if (!f || !m || !json_is_number(bpw) || !json_is_number(e) || !(json_number_value(bpw) >= 0) ||
            !(json_number_value(e) >= 0))
            return bad(r, SIZE_MAX, NULL,
                       "budget.uniform: an entry without format, method, bits_per_weight and "
                       "estimated_error (numbers >= 0)");
        size_t len = strlen(f) + strlen(m) + 2;
        char *label = keep(r, malloc(len));
        if (!label) return nf_cli_error(r->cli, NF_ERR_NOMEM, "out of memory");
        snprintf(label, len, "%s %s", f, m);
        r->points[r->npoints++] = (nf_page_point){label, json_number_value(bpw), json_number_value(e), false};
    }
    const json_t *bpw = json_object_get(b, "bits_per_weight"), *e = json_object_get(b, "estimated_error");
    if (json_is_number(bpw) && json_is_number(e) && json_number_value(bpw) >= 0 && json_number_value(e) >= 0)
        r->points[r->npoints++] = (nf_page_point){"chosen allocation", json_number_value(bpw), json_number_value(e),
                                                  true};
    return NF_EXIT_OK;
}

static int read_report(report_read *r)
{
    struct stat st;
    if (stat(r->path, &st) != 0 || !S_ISREG(st.st_mode))
        return nf_cli_error(r->cli, NF_ERR_IO, "%s: not a regular file", nf_cli_name(r->path).s);
    if (st.st_size > REPORT_MAX_BYTES)
        return nf_cli_error(r->cli, NF_ERR_INVALID, "%s: %lld bytes, more than a report holds (%lld)",
                            nf_cli_name(r->path).s, (long long)st.st_size, REPORT_MAX_BYTES);
    json_error_t je;
    r->root = json_load_file(r->path, JSON_REJECT_DUPLICATES, &je);
    if (!r->root)
        return nf_cli_error(r->cli, NF_ERR_INVALID, "%s: line %d column %d: %s", nf_cli_name(r->path).s, je.line,
                            je.column, nf_cli_line(je.text).s);
    if (!json_is_object(r->root)) return bad(r, SIZE_MAX, NULL, "not a JSON object");
    const json_t *ver = json_object_get(r->root, "report_version");
    if (ver && (!json_is_integer(ver) || json_integer_value(ver) < 1))
        return bad(r, SIZE_MAX, NULL, "'report_version' is not a version number");
    if (ver && json_integer_value(ver) > NF_REPORT_VERSION)
        return nf_cli_error(r->cli, NF_ERR_INVALID,
                            "%s: report_version %lld: written by a newer version of ninfer-tools (this "
                            "ninfer-inspect reads version %d and older)",
                            nf_cli_name(r->path).s, (long long)json_integer_value(ver), NF_REPORT_VERSION);
    const json_t *objects = json_object_get(r->root, "objects");
    if (!json_is_array(objects))
        return bad(r, SIZE_MAX, NULL,
                   "no 'objects' array: not a conversion report "
                   "(OUT.conversion.json) nor ninfer-diff --json");
    bool diff = json_object_get(r->root, "summary") && json_object_get(r->root, "b");
    static const char *const texts[] = {"output", "recipe", "a", "b", "reference"};
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++)
        if (!text_or_absent(r->root, texts[k]))
            return nf_cli_error(r->cli, NF_ERR_INVALID, "%s: '%s' is not a string", nf_cli_name(r->path).s, texts[k]);
    const json_t *prov = json_object_get(r->root, "provenance");
    if (prov && !json_is_object(prov)) return bad(r, SIZE_MAX, NULL, "'provenance' is not a JSON object");
    if (!text_or_absent(prov, "converter")) return bad(r, SIZE_MAX, NULL, "'provenance.converter' is not a string");
    size_t n = json_array_size(objects);
    r->rows = calloc(n ? n : 1, sizeof *r->rows);
    if (!r->rows) return nf_cli_error(r->cli, NF_ERR_NOMEM, "out of memory");
    const char *ref = text(r->root, "reference");
    for (size_t i = 0; i < n; i++) {
        nf_page_row *row = &r->rows[r->nrows++];
        row->bpw = row->max_abs = row->rmse = row->snr_db = row->weighted = NAN;
        int rc = diff ? diff_row(r, i, json_array_get(objects, i), ref && !strcmp(ref, "b"), row)
                      : conversion_row(r, i, json_array_get(objects, i), row);
        if (rc != NF_EXIT_OK) return rc;
    }
    /* raw names: the page escapes what it prints */
    if (diff) {
        snprintf(r->title, sizeof r->title, "Comparison: %s and %s", or_dash(text(r->root, "a")),
                 or_dash(text(r->root, "b")));
        snprintf(r->about, sizeof r->about, "%s (ninfer-diff --json); %s is the reference", r->path,
                 ref && !strcmp(ref, "b") ? "B" : "A");
        return NF_EXIT_OK;
    }
    snprintf(r->title, sizeof r->title, "Conversion report: %s", or_dash(text(r->root, "output")));
    snprintf(r->about, sizeof r->about, "%s; converter %s; recipe %s", r->path, or_dash(text(prov, "converter")),
             text(r->root, "recipe") ? text(r->root, "recipe") : "(quick mode)");
    return budget_points(r, json_object_get(r->root, "budget"));
}

int inspect_report(const nf_cli *cli, const char *report, const char *html)
{
    report_read r = {.cli = cli, .path = report};
    int rc = read_report(&r);
    if (rc == NF_EXIT_OK) {
        char generator[96];
        snprintf(generator, sizeof generator, "ninfer-inspect (ninfer-tools %s)", nf_version());
        nf_page page = {r.title, r.about, generator, "estimated weighted squared error",
                        r.rows,  r.nrows, r.points,  r.npoints};
        rc = nf_page_write(cli, &page, html);
    }
    for (size_t i = 0; i < r.nlabels; i++) free(r.labels[i]);
    free(r.labels);
    free(r.rows);
    free(r.points);
    json_decref(r.root);
    return rc;
}
