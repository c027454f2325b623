/* ninfer-inspect: header, directory, objects, bindings and uses of a .ninfer artifact, the
 * geometry and statistics of one tensor, and its logical words (design.md section 2).
 * Reads no payload unless asked (--tensor --stats, --words). */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "cli.h"

enum {
    OPT_OBJECTS = NF_OPT_PROGRAM,
    OPT_BINDINGS,
    OPT_USES,
    OPT_FILES,
    OPT_TENSOR,
    OPT_STATS,
    OPT_WORDS,
    OPT_ROWS,
    OPT_COLS
};

static const nf_option options[] = {
    {"objects", 0, NF_ARG_NONE, OPT_OBJECTS, NULL, "list the objects"},
    {"bindings", 0, NF_ARG_NONE, OPT_BINDINGS, NULL, "list the bindings"},
    {"uses", 0, NF_ARG_NONE, OPT_USES, NULL, "list the uses"},
    {"files", 0, NF_ARG_NONE, OPT_FILES, NULL, "list the files of the artifact"},
    {"tensor", 't', NF_ARG_REQUIRED, OPT_TENSOR, "ID", "geometry and planes of one tensor object"},
    {"stats", 0, NF_ARG_NONE, OPT_STATS, NULL, "with --tensor: statistics of the represented values"},
    {"words", 'w', NF_ARG_REQUIRED, OPT_WORDS, "ID", "logical words of a tensor: codes, scales, divisors"},
    {"rows", 0, NF_ARG_REQUIRED, OPT_ROWS, "A:B", "with --words: rows A (inclusive) to B (exclusive)"},
    {"cols", 0, NF_ARG_REQUIRED, OPT_COLS, "A:B", "with --words: columns A to B"},
    {NULL, 0, NF_ARG_NONE, 0, NULL, NULL},
};

static const nf_program program = {
    "ninfer-inspect",
    "ninfer-inspect FILE [--json] [--objects] [--bindings] [--uses] [--files]\n"
    "       ninfer-inspect FILE --tensor ID [--stats] [--json]\n"
    "       ninfer-inspect FILE --words ID [--rows A:B] [--cols A:B] [--json]",
    "Show what a .ninfer artifact holds: its files, objects (format, layout, shape, bytes,\n"
    "bits/weight), totals per format, components, bindings and uses.  --tensor shows one tensor's\n"
    "geometry and planes; --words prints its logical words as stored.  Only the header and the\n"
    "JSON directory are read unless --stats or --words asks for payload.",
    options,
    "  ninfer-inspect model.ninfer\n"
    "  ninfer-inspect model.ninfer --json | jq '.objects[].id'\n"
    "  ninfer-inspect model.ninfer --tensor lm_head.weight --stats\n"
    "  ninfer-inspect model.ninfer --words lm_head.weight --rows 0:2 --cols 0:64\n",
};

typedef struct inspect_opts {
    bool objects, bindings, uses, files, stats;
    const char *tensor;
    const char *words;
    uint64_t row_a, row_b, col_a, col_b;
    bool has_row_a, has_row_b, has_col_a, has_col_b, has_rows, has_cols;
} inspect_opts;

static int on_option(void *ctx, nf_cli *cli, int id, const char *arg)
{
    inspect_opts *o = ctx;
    switch (id) {
    case OPT_OBJECTS: o->objects = true; break;
    case OPT_BINDINGS: o->bindings = true; break;
    case OPT_USES: o->uses = true; break;
    case OPT_FILES: o->files = true; break;
    case OPT_STATS: o->stats = true; break;
    case OPT_TENSOR: o->tensor = arg; break;
    case OPT_WORDS: o->words = arg; break;
    case OPT_ROWS:
        if (!nf_cli_parse_range(arg, &o->row_a, &o->row_b, &o->has_row_a, &o->has_row_b))
            return nf_cli_usage(cli, "--rows takes A:B, not '%s'", arg);
        o->has_rows = true;
        break;
    case OPT_COLS:
        if (!nf_cli_parse_range(arg, &o->col_a, &o->col_b, &o->has_col_a, &o->has_col_b))
            return nf_cli_usage(cli, "--cols takes A:B, not '%s'", arg);
        o->has_cols = true;
        break;
    default: return nf_cli_usage(cli, "unexpected option");
    }
    return NF_EXIT_OK;
}

/* ---------------------------------------------------------------- helpers */
static json_t *dims_json(const uint64_t *dims, uint32_t rank)
{
    json_t *a = json_array();
    for (uint32_t i = 0; i < rank; i++) json_array_append_new(a, json_integer((json_int_t)dims[i]));
    return a;
}

static json_t *shape_json(const nf_object *o) { return dims_json(o->shape, o->rank); }

/* "[d0,d1,...]"; `reversed` lists the dimensions last first (ggml's ne order). */
static void dims_text(const uint64_t *dims, uint32_t rank, bool reversed, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (uint32_t i = 0; i < rank && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%" PRIu64, i ? "," : "",
                                 dims[reversed ? rank - 1 - i : i]);
    if (used < size) snprintf(buf + used, size - used, "]");
}

static void shape_text(const nf_object *o, char *buf, size_t size) { dims_text(o->shape, o->rank, false, buf, size); }

static uint64_t elements_of(const nf_object *o)
{
    /* The directory parser has checked that the product fits U64. */
    uint64_t n = 1;
    for (uint32_t i = 0; i < o->rank; i++) n *= o->shape[i];
    return n;
}

static double bits_per_weight(const nf_object *o)
{
    return o->kind == NF_OBJECT_TENSOR ? (double)o->bytes * 8.0 / (double)elements_of(o) : 0.0;
}

static const json_t *member(const nf_artifact *a, const char *name)
{
    return json_object_get(nf_artifact_directory(a), name);
}

/* ---------------------------------------------------------------- summary */
static json_t *summary_json(const nf_artifact *a, const inspect_opts *o)
{
    bool all = !(o->objects || o->bindings || o->uses || o->files);
    char id[33];
    nf_artifact_id_hex(a, id);
    json_t *doc = json_object();
    json_object_set_new(doc, "artifact_id", json_string(id));
    json_object_set_new(doc, "json_bytes", json_integer((json_int_t)nf_artifact_json_bytes(a)));
    json_object_set_new(doc, "payload_bytes", json_integer((json_int_t)nf_artifact_payload_bytes(a)));
    json_object_set_new(doc, "payload_offset", json_integer((json_int_t)nf_artifact_entry_payload_start(a)));
    if (all || o->files) json_object_set(doc, "files", (json_t *)member(a, "files"));
    if (all || o->objects) json_object_set(doc, "objects", (json_t *)member(a, "objects"));
    if (all) {
        json_object_set(doc, "components", (json_t *)member(a, "components"));
    }
    if (all || o->bindings) json_object_set(doc, "bindings", (json_t *)member(a, "bindings"));
    if (all || o->uses) json_object_set(doc, "uses", (json_t *)member(a, "uses"));
    if (all) {
        const json_t *m = member(a, "metadata"), *p = member(a, "provenance");
        json_object_set_new(doc, "metadata", m ? json_deep_copy(m) : json_object());
        json_object_set_new(doc, "provenance", p ? json_deep_copy(p) : json_object());
        json_t *totals = json_object();
        for (size_t i = 0; i < nf_artifact_object_count(a); i++) {
            const nf_object *ob = nf_artifact_object(a, i);
            const char *key = ob->kind == NF_OBJECT_TENSOR ? ob->format_name : "(resources)";
            json_t *t = json_object_get(totals, key);
            if (!t) {
                t = json_pack("{s:i,s:I,s:I}", "objects", 0, "elements", (json_int_t)0, "bytes", (json_int_t)0);
                json_object_set_new(totals, key, t);
            }
            json_object_set_new(t, "objects", json_integer(json_integer_value(json_object_get(t, "objects")) + 1));
            if (ob->kind == NF_OBJECT_TENSOR)
                json_object_set_new(t, "elements", json_integer(json_integer_value(json_object_get(t, "elements")) +
                                                                (json_int_t)elements_of(ob)));
            json_object_set_new(t, "bytes",
                                json_integer(json_integer_value(json_object_get(t, "bytes")) + (json_int_t)ob->bytes));
        }
        json_object_set_new(doc, "totals", totals);
    }
    return doc;
}

static void print_files(const nf_artifact *a)
{
    printf("files (%zu)\n  %-4s %-40s %16s\n", nf_artifact_file_count(a), "#", "path", "payload_bytes");
    for (size_t i = 0; i < nf_artifact_file_count(a); i++) {
        const nf_file_entry *f = nf_artifact_file(a, i);
        printf("  %-4zu %-40s %16" PRIu64 "\n", i, f->path ? f->path : "(entry)", f->payload_bytes);
    }
}

static void print_objects(const nf_artifact *a)
{
    printf("objects (%zu)\n  %-32s %-22s %-26s %-16s %12s %12s %9s\n", nf_artifact_object_count(a), "id",
           "format", "layout", "shape", "offset", "bytes", "bits/w");
    for (size_t i = 0; i < nf_artifact_object_count(a); i++) {
        const nf_object *o = nf_artifact_object(a, i);
        char shape[128];
        if (o->kind == NF_OBJECT_TENSOR) {
            shape_text(o, shape, sizeof shape);
            char extra[48] = "";
            if (o->divisors > 1) snprintf(extra, sizeof extra, "  (%" PRIu64 " divisors)", o->divisors);
            printf("  %-32s %-22s %-26s %-16s %12" PRIu64 " %12" PRIu64 " %9.3f%s\n", o->id, o->format_name,
                   o->layout_name, shape, o->offset, o->bytes, bits_per_weight(o), extra);
        } else {
            printf("  %-32s %-22s %-26s %-16s %12" PRIu64 " %12" PRIu64 " %9s\n", o->id, "(resource)",
                   o->layout_name, "-", o->offset, o->bytes, "-");
        }
    }
}

static void print_binding(const char *name, const json_t *b)
{
    json_t *obj = json_object_get(b, "object");
    if (obj) {
        printf("  %s -> %s\n", name, json_string_value(obj));
        return;
    }
    printf("  %s ->", name);
    size_t i;
    json_t *part;
    json_array_foreach(json_object_get(b, "parts"), i, part) {
        json_t *r = json_object_get(part, "range");
        printf("%s %s[%" JSON_INTEGER_FORMAT ":%" JSON_INTEGER_FORMAT "]", i ? " +" : "",
               json_string_value(json_object_get(part, "object")), json_integer_value(json_array_get(r, 0)),
               json_integer_value(json_array_get(r, 1)));
    }
    printf("\n");
}

static void print_bindings(const nf_artifact *a)
{
    const json_t *b = member(a, "bindings");
    printf("bindings (%zu)\n", json_object_size(b));
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)b, name, v) print_binding(name, v);
}

static void print_uses(const nf_artifact *a)
{
    const json_t *u = member(a, "uses");
    printf("uses (%zu)\n", json_array_size(u));
    size_t i;
    json_t *use;
    json_array_foreach((json_t *)u, i, use) {
        json_t *pol = json_object_get(use, "activation_policy");
        printf("  %s <- %s  %s", json_string_value(json_object_get(use, "parameter")),
               json_string_value(json_object_get(use, "input")), pol ? json_string_value(pol) : "(default)");
        json_t *aux = json_object_get(use, "auxiliaries");
        if (aux) {
            const char *role;
            json_t *bind;
            json_object_foreach(aux, role, bind) {
                json_t *obj = json_object_get(bind, "object");
                printf("  %s=%s", role, obj ? json_string_value(obj) : "(parts)");
            }
        }
        printf("\n");
    }
}

static void print_totals(const nf_artifact *a)
{
    json_t *doc = summary_json(a, &(inspect_opts){0});
    json_t *totals = json_object_get(doc, "totals");
    printf("totals per format\n  %-22s %8s %16s %16s %9s\n", "format", "objects", "elements", "bytes", "bits/w");
    const char *key;
    json_t *t;
    json_object_foreach(totals, key, t) {
        json_int_t el = json_integer_value(json_object_get(t, "elements"));
        json_int_t by = json_integer_value(json_object_get(t, "bytes"));
        if (el > 0)
            printf("  %-22s %8" JSON_INTEGER_FORMAT " %16" JSON_INTEGER_FORMAT " %16" JSON_INTEGER_FORMAT " %9.3f\n",
                   key, json_integer_value(json_object_get(t, "objects")), el, by, (double)by * 8.0 / (double)el);
        else
            printf("  %-22s %8" JSON_INTEGER_FORMAT " %16s %16" JSON_INTEGER_FORMAT " %9s\n", key,
                   json_integer_value(json_object_get(t, "objects")), "-", by, "-");
    }
    json_decref(doc);
}

static void print_summary(const nf_artifact *a, const inspect_opts *o)
{
    bool all = !(o->objects || o->bindings || o->uses || o->files);
    if (all) {
        char id[33];
        nf_artifact_id_hex(a, id);
        const json_t *meta = member(a, "metadata");
        const json_t *name = meta ? json_object_get(meta, "name") : NULL;
        printf("artifact      %s\n", id);
        if (name) printf("name          %s\n", json_string_value(name));
        printf("directory     %" PRIu64 " bytes of JSON\n", nf_artifact_json_bytes(a));
        printf("payload       %" PRIu64 " bytes in %zu file%s (entry payload at %" PRIu64 ")\n",
               nf_artifact_payload_bytes(a), nf_artifact_file_count(a), nf_artifact_file_count(a) == 1 ? "" : "s",
               nf_artifact_entry_payload_start(a));
        const json_t *comps = member(a, "components");
        printf("components   ");
        const char *cname;
        json_t *c;
        json_object_foreach((json_t *)comps, cname, c) printf(" %s", cname);
        printf("\n\n");
    }
    if (all || o->files) {
        print_files(a);
        printf("\n");
    }
    if (all || o->objects) {
        print_objects(a);
        printf("\n");
    }
    if (all) {
        print_totals(a);
        printf("\n");
    }
    if (all || o->bindings) {
        print_bindings(a);
        printf("\n");
    }
    if (all || o->uses) print_uses(a);
}

/* ---------------------------------------------------------------- --tensor */
typedef struct value_stats {
    uint64_t count, zeros, nans, infs;
    double min, max, sum, sum_sq, abs_max;
} value_stats;

static void stats_init(value_stats *s)
{
    memset(s, 0, sizeof *s);
    s->min = INFINITY;
    s->max = -INFINITY;
}

static void stats_add(value_stats *s, const float *values, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        double v = values[i];
        if (isnan(v)) {
            s->nans++;
            continue;
        }
        if (isinf(v)) {
            s->infs++;
            continue;
        }
        s->count++;
        if (v == 0.0) s->zeros++;
        if (v < s->min) s->min = v;
        if (v > s->max) s->max = v;
        if (fabs(v) > s->abs_max) s->abs_max = fabs(v);
        s->sum += v;
        s->sum_sq += v * v;
    }
}

static double stats_mean(const value_stats *s) { return s->count ? s->sum / (double)s->count : 0.0; }
static double stats_rms(const value_stats *s) { return s->count ? sqrt(s->sum_sq / (double)s->count) : 0.0; }

static json_t *stats_json(const value_stats *s)
{
    return json_pack("{s:I,s:I,s:I,s:I,s:f,s:f,s:f,s:f,s:f}", "finite", (json_int_t)s->count, "zeros",
                     (json_int_t)s->zeros, "nan", (json_int_t)s->nans, "inf", (json_int_t)s->infs, "min",
                     s->count ? s->min : 0.0, "max", s->count ? s->max : 0.0, "mean", stats_mean(s), "rms",
                     stats_rms(s), "abs_max", s->abs_max);
}

static void print_stats(const value_stats *s)
{
    printf("stats\n  finite %" PRIu64 "  zeros %" PRIu64 "  nan %" PRIu64 "  inf %" PRIu64 "\n", s->count, s->zeros,
           s->nans, s->infs);
    if (s->count)
        printf("  min %.9g  max %.9g  mean %.9g  rms %.9g  abs max %.9g\n", s->min, s->max, stats_mean(s),
               stats_rms(s), s->abs_max);
}

static nf_status collect_stats(nf_artifact *a, const nf_object *o, const nf_geometry *g, value_stats *s,
                               nf_error *err)
{
    stats_init(s);
    nf_byte_reader reader;
    nf_artifact_object_reader(a, o, &reader);
    /* Bounded chunks: about 1M values at a time (nvfp4 reads whole 128-row tiles). */
    uint64_t chunk = g->cols ? ((uint64_t)1 << 20) / g->cols : 1;
    if (chunk == 0) chunk = 1;
    if (g->format->category == NF_CAT_NVFP4) chunk = (chunk + 127) / 128 * 128;
    if (chunk > g->rows) chunk = g->rows;
    nf_words w;
    NF_TRY(nf_words_alloc(&w, g, chunk, err));
    float *values = malloc((size_t)(chunk * g->cols) * sizeof *values);
    nf_status st = values ? NF_OK : nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    for (uint64_t r = 0; st == NF_OK && r < g->rows; r += chunk) {
        uint64_t r1 = r + chunk < g->rows ? r + chunk : g->rows;
        st = nf_layout_decode_rows(g, &reader, r, r1, &w, err);
        if (st != NF_OK) break;
        w.rows = r1 - r;
        st = nf_words_to_f32(g, &w, r, values, err);
        if (st != NF_OK) break;
        stats_add(s, values, (r1 - r) * g->cols);
    }
    free(values);
    nf_words_free(&w);
    return st;
}

static int inspect_tensor(const nf_cli *cli, nf_artifact *a, const inspect_opts *opts)
{
    const nf_object *o = nf_artifact_find(a, opts->tensor);
    if (!o) return nf_cli_error(cli, NF_ERR_INVALID, "%s: no object '%s'", nf_artifact_path(a), opts->tensor);
    if (o->kind != NF_OBJECT_TENSOR)
        return nf_cli_error(cli, NF_ERR_INVALID, "%s: object '%s' is a resource, not a tensor", nf_artifact_path(a),
                            o->id);
    nf_geometry g;
    nf_error err;
    if (nf_artifact_check_object(a, o, &g, &err) != NF_OK) {
        nf_error_prefix(&err, "%s: object '%s'", nf_artifact_path(a), o->id);
        return nf_cli_report(cli, &err);
    }
    value_stats s;
    stats_init(&s);
    if (opts->stats && collect_stats(a, o, &g, &s, &err) != NF_OK) {
        nf_error_prefix(&err, "%s: object '%s'", nf_artifact_path(a), o->id);
        return nf_cli_report(cli, &err);
    }
    if (cli->json) {
        json_t *planes = json_array();
        for (uint32_t i = 0; i < g.nplanes; i++)
            json_array_append_new(planes, json_pack("{s:s,s:I,s:I,s:I}", "name", g.planes[i].name, "offset",
                                                    (json_int_t)g.planes[i].offset, "bytes",
                                                    (json_int_t)g.planes[i].bytes, "row_bytes",
                                                    (json_int_t)g.planes[i].row_bytes));
        json_t *doc = json_pack("{s:s,s:s,s:s,s:o,s:I,s:I,s:I,s:I,s:I,s:I,s:f,s:o}", "id", o->id, "format",
                                o->format_name, "layout", o->layout_name, "shape", shape_json(o), "elements",
                                (json_int_t)g.elements, "rows", (json_int_t)g.rows, "cols", (json_int_t)g.cols,
                                "offset", (json_int_t)o->offset, "bytes", (json_int_t)o->bytes, "divisors",
                                (json_int_t)o->divisors, "bits_per_weight", bits_per_weight(o), "planes", planes);
        if (g.format->category == NF_CAT_GROUPED) {
            json_object_set_new(doc, "k_pad", json_integer((json_int_t)g.k_pad));
            json_object_set_new(doc, "groups_per_row", json_integer((json_int_t)g.groups_per_row));
            json_object_set_new(doc, "logical_groups", json_integer((json_int_t)g.logical_groups));
        }
        if (opts->stats) json_object_set_new(doc, "stats", stats_json(&s));
        int rc = nf_cli_print_json(cli, doc);
        json_decref(doc);
        return rc;
    }
    char shape[128];
    shape_text(o, shape, sizeof shape);
    printf("object        %s\nformat        %s\nlayout        %s\n", o->id, o->format_name, o->layout_name);
    printf("shape         %s  (%" PRIu64 " rows x %" PRIu64 " cols, %" PRIu64 " elements)\n", shape, g.rows, g.cols,
           g.elements);
    printf("offset        %" PRIu64 "\nbytes         %" PRIu64 "  (%.4f bits/weight)\n", o->offset, o->bytes,
           bits_per_weight(o));
    if (g.format->category == NF_CAT_GROUPED)
        printf("groups        %" PRIu64 " logical per row, %" PRIu64 " physical (K padded to %" PRIu64 ")\n",
               g.logical_groups, g.groups_per_row, g.k_pad);
    if (g.format->category == NF_CAT_NVFP4) printf("divisors      %" PRIu64 "\n", g.divisors);
    printf("planes\n  %-10s %14s %14s %12s\n", "name", "offset", "bytes", "row_bytes");
    for (uint32_t i = 0; i < g.nplanes; i++)
        printf("  %-10s %14" PRIu64 " %14" PRIu64 " %12" PRIu64 "\n", g.planes[i].name, g.planes[i].offset,
               g.planes[i].bytes, g.planes[i].row_bytes);
    if (opts->stats) print_stats(&s);
    return NF_EXIT_OK;
}

/* ---------------------------------------------------------------- --words */
typedef struct words_view {
    const nf_geometry *g;
    uint64_t r0, r1, c0, c1;
    uint64_t g0, g1;          /* groups (or blocks) covering [c0, c1) */
    uint64_t group;           /* columns per group: scale group, nvfp4 16, gguf block */
} words_view;

static json_t *row_words_json(const words_view *v, const nf_words *w, uint64_t i, json_t *doc)
{
    const nf_geometry *g = v->g;
    const uint64_t cols = g->cols;
    json_t *codes = json_array();
    switch (g->format->category) {
    case NF_CAT_DIRECT:
        for (uint64_t c = v->c0; c < v->c1; c++)
            json_array_append_new(codes, json_integer(g->format->word_bytes == 2 ? (json_int_t)w->w16[i * cols + c]
                                                                                 : (json_int_t)w->w32[i * cols + c]));
        json_array_append_new(json_object_get(doc, "words"), codes);
        return doc;
    case NF_CAT_GROUPED:
    case NF_CAT_NVFP4:
    case NF_CAT_FP8_ROW:
        for (uint64_t c = v->c0; c < v->c1; c++) {
            json_int_t code = g->format->category == NF_CAT_GROUPED ? (json_int_t)w->codes[i * cols + c]
                                                                     : (json_int_t)w->codes8[i * cols + c];
            json_array_append_new(codes, json_integer(code));
        }
        json_array_append_new(json_object_get(doc, "codes"), codes);
        if (g->format->category == NF_CAT_FP8_ROW) {
            json_array_append_new(json_object_get(doc, "scales"), json_integer(w->scales[i]));
        } else {
            json_t *scales = json_array();
            for (uint64_t k = v->g0; k < v->g1; k++)
                json_array_append_new(scales, json_integer(g->format->category == NF_CAT_GROUPED
                                                               ? (json_int_t)w->scales[i * g->logical_groups + k]
                                                               : (json_int_t)w->scales8[i * (cols / 16) + k]));
            json_array_append_new(json_object_get(doc, "scales"), scales);
        }
        return doc;
    case NF_CAT_GGUF: {
        json_decref(codes);
        json_t *blocks = json_array();
        uint64_t bb = g->format->block_bytes;
        for (uint64_t b = v->g0; b < v->g1; b++) {
            char hex[2 * 256 + 1];
            const uint8_t *p = w->blocks + i * g->row_bytes + b * bb;
            for (uint64_t j = 0; j < bb; j++) snprintf(hex + 2 * j, 3, "%02x", p[j]);
            json_array_append_new(blocks, json_string(hex));
        }
        json_array_append_new(json_object_get(doc, "blocks"), blocks);
        return doc;
    }
    }
    json_decref(codes);
    return doc;
}

static void print_row_words(const words_view *v, const nf_words *w, uint64_t i, uint64_t row)
{
    const nf_geometry *g = v->g;
    const uint64_t cols = g->cols;
    switch (g->format->category) {
    case NF_CAT_DIRECT:
        printf("row %" PRIu64 ":", row);
        for (uint64_t c = v->c0; c < v->c1; c++) {
            if (g->format->word_bytes == 2)
                printf(" 0x%04x", w->w16[i * cols + c]);
            else
                printf(" 0x%08x", w->w32[i * cols + c]);
        }
        printf("\n");
        return;
    case NF_CAT_FP8_ROW:
        printf("row %" PRIu64 ": scale 0x%04x (%.9g)  codes", row, w->scales[i],
               (double)(g->format->scale_type == NF_SCALE_BF16 ? nf_bf16_to_f32(w->scales[i])
                                                               : nf_f16_to_f32(w->scales[i])));
        for (uint64_t c = v->c0; c < v->c1; c++) printf(" 0x%02x", w->codes8[i * cols + c]);
        printf("\n");
        return;
    case NF_CAT_GROUPED:
    case NF_CAT_NVFP4:
        printf("row %" PRIu64 "\n", row);
        for (uint64_t k = v->g0; k < v->g1; k++) {
            uint64_t a = k * v->group > v->c0 ? k * v->group : v->c0;
            uint64_t b = (k + 1) * v->group < v->c1 ? (k + 1) * v->group : v->c1;
            if (g->format->category == NF_CAT_GROUPED) {
                uint16_t s = w->scales[i * g->logical_groups + k];
                printf("  group %-4" PRIu64 " scale 0x%04x (%.9g)  codes", k, s, (double)nf_f16_to_f32(s));
                for (uint64_t c = a; c < b; c++) printf(" %d", w->codes[i * cols + c]);
            } else {
                uint8_t s = w->scales8[i * (cols / 16) + k];
                printf("  group %-4" PRIu64 " scale 0x%02x (%.9g)  codes", k, s, (double)nf_e4m3fn_to_f32(s));
                for (uint64_t c = a; c < b; c++) printf(" 0x%x", w->codes8[i * cols + c]);
            }
            printf("\n");
        }
        return;
    case NF_CAT_GGUF:
        printf("row %" PRIu64 "\n", row);
        for (uint64_t b = v->g0; b < v->g1; b++) {
            const uint8_t *p = w->blocks + i * g->row_bytes + b * g->format->block_bytes;
            printf("  block %-4" PRIu64 " ", b);
            for (uint64_t j = 0; j < g->format->block_bytes; j++) printf("%02x", p[j]);
            printf("\n");
        }
        return;
    }
}

static json_t *words_doc(const nf_object *o, const words_view *v)
{
    json_t *doc = json_pack("{s:s,s:s,s:s,s:o,s:[I,I],s:[I,I]}", "id", o->id, "format", o->format_name, "layout",
                            o->layout_name, "shape", shape_json(o), "rows", (json_int_t)v->r0, (json_int_t)v->r1,
                            "cols", (json_int_t)v->c0, (json_int_t)v->c1);
    switch (v->g->format->category) {
    case NF_CAT_DIRECT: json_object_set_new(doc, "words", json_array()); break;
    case NF_CAT_GGUF:
        json_object_set_new(doc, "block_range", json_pack("[I,I]", (json_int_t)v->g0, (json_int_t)v->g1));
        json_object_set_new(doc, "blocks", json_array());
        break;
    case NF_CAT_GROUPED:
    case NF_CAT_NVFP4:
        json_object_set_new(doc, "groups", json_pack("[I,I]", (json_int_t)v->g0, (json_int_t)v->g1));
        /* fall through */
    case NF_CAT_FP8_ROW:
        json_object_set_new(doc, "codes", json_array());
        json_object_set_new(doc, "scales", json_array());
        break;
    }
    return doc;
}

static int inspect_words(const nf_cli *cli, nf_artifact *a, const inspect_opts *opts)
{
    const nf_object *o = nf_artifact_find(a, opts->words);
    if (!o) return nf_cli_error(cli, NF_ERR_INVALID, "%s: no object '%s'", nf_artifact_path(a), opts->words);
    if (o->kind != NF_OBJECT_TENSOR)
        return nf_cli_error(cli, NF_ERR_INVALID, "%s: object '%s' is a resource, not a tensor", nf_artifact_path(a),
                            o->id);
    nf_geometry g;
    nf_error err;
    if (nf_artifact_check_object(a, o, &g, &err) != NF_OK) {
        nf_error_prefix(&err, "%s: object '%s'", nf_artifact_path(a), o->id);
        return nf_cli_report(cli, &err);
    }
    words_view v = {&g, opts->has_row_a ? opts->row_a : 0, opts->has_row_b ? opts->row_b : g.rows,
                    opts->has_col_a ? opts->col_a : 0, opts->has_col_b ? opts->col_b : g.cols, 0, 0, 1};
    if (v.r0 >= v.r1 || v.r1 > g.rows)
        return nf_cli_error(cli, NF_ERR_USAGE, "--rows %" PRIu64 ":%" PRIu64 " is not within 0:%" PRIu64, v.r0, v.r1,
                            g.rows);
    if (v.c0 >= v.c1 || v.c1 > g.cols)
        return nf_cli_error(cli, NF_ERR_USAGE, "--cols %" PRIu64 ":%" PRIu64 " is not within 0:%" PRIu64, v.c0, v.c1,
                            g.cols);
    switch (g.format->category) {
    case NF_CAT_GROUPED: v.group = g.format->group_size; break;
    case NF_CAT_NVFP4: v.group = 16; break;
    case NF_CAT_GGUF: v.group = g.format->block_values; break;
    default: v.group = 1; break;
    }
    v.g0 = v.c0 / v.group;
    v.g1 = (v.c1 + v.group - 1) / v.group;

    nf_byte_reader reader;
    nf_artifact_object_reader(a, o, &reader);
    uint64_t chunk = 256;
    nf_words w;
    if (nf_words_alloc(&w, &g, chunk, &err) != NF_OK) return nf_cli_report(cli, &err);
    json_t *doc = cli->json ? words_doc(o, &v) : NULL;
    if (!cli->json) {
        printf("%s  %s  rows %" PRIu64 ":%" PRIu64 "  cols %" PRIu64 ":%" PRIu64 "  (words as stored)\n", o->id,
               o->format_name, v.r0, v.r1, v.c0, v.c1);
    }
    int rc = NF_EXIT_OK;
    bool divisors_done = false;
    for (uint64_t r = v.r0; r < v.r1 && rc == NF_EXIT_OK; r += chunk) {
        uint64_t r1 = r + chunk < v.r1 ? r + chunk : v.r1;
        if (nf_layout_decode_rows(&g, &reader, r, r1, &w, &err) != NF_OK) {
            nf_error_prefix(&err, "%s: object '%s'", nf_artifact_path(a), o->id);
            rc = nf_cli_report(cli, &err);
            break;
        }
        if (g.format->category == NF_CAT_NVFP4 && !divisors_done) {
            divisors_done = true;
            if (doc) {
                json_t *d = json_array();
                for (uint64_t k = 0; k < g.divisors; k++) json_array_append_new(d, json_integer(w.divisors[k]));
                json_object_set_new(doc, "divisors", d);
            } else {
                printf("divisors:");
                for (uint64_t k = 0; k < g.divisors; k++)
                    printf(" 0x%08x (%.9g)", w.divisors[k], (double)nf_f32_from_bits(w.divisors[k]));
                printf("\n");
            }
        }
        for (uint64_t i = 0; i < r1 - r; i++) {
            if (doc)
                row_words_json(&v, &w, i, doc);
            else
                print_row_words(&v, &w, i, r + i);
        }
    }
    nf_words_free(&w);
    if (doc) {
        if (rc == NF_EXIT_OK) rc = nf_cli_print_json(cli, doc);
        json_decref(doc);
    }
    return rc;
}

/* ---------------------------------------------------------------- main */
int main(int argc, char **argv)
{
    nf_cli cli;
    inspect_opts opts = {0};
    bool done = false;
    int rc = nf_cli_parse(&cli, &program, argc, argv, on_option, &opts, &done);
    if (rc != NF_EXIT_OK || done) goto out;
    if (cli.npositional != 1) {
        rc = nf_cli_usage(&cli, cli.npositional ? "one FILE at a time" : "no FILE given");
        goto out;
    }
    if (opts.tensor && opts.words) {
        rc = nf_cli_usage(&cli, "--tensor and --words are separate views; give one");
        goto out;
    }
    if (opts.stats && !opts.tensor) {
        rc = nf_cli_usage(&cli, "--stats goes with --tensor ID");
        goto out;
    }
    if ((opts.has_rows || opts.has_cols) && !opts.words) {
        rc = nf_cli_usage(&cli, "--rows and --cols go with --words ID");
        goto out;
    }
    nf_artifact *a = NULL;
    nf_error err;
    if (nf_artifact_open(cli.positional[0], NF_READ_PREAD, &a, &err) != NF_OK) {
        rc = nf_cli_report(&cli, &err);
        goto out;
    }
    if (opts.tensor) {
        rc = inspect_tensor(&cli, a, &opts);
    } else if (opts.words) {
        rc = inspect_words(&cli, a, &opts);
    } else if (cli.json) {
        json_t *doc = summary_json(a, &opts);
        rc = nf_cli_print_json(&cli, doc);
        json_decref(doc);
    } else {
        print_summary(a, &opts);
    }
    nf_artifact_close(a);
out:
    nf_cli_free(&cli);
    return rc;
}
