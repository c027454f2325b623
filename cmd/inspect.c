/* ninfer-inspect: header, directory, objects, bindings and uses of a .ninfer artifact, the
 * geometry and statistics of one tensor, and its logical words (design.md section 2).  FILE may
 * also be a source checkpoint (safetensors file, index or directory; GGUF file): its files,
 * metadata, companions and tensors, and one tensor's statistics.
 * Reads no payload unless asked (--tensor --stats, --words). */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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
    {"objects", 0, NF_ARG_NONE, OPT_OBJECTS, NULL, "list the objects (artifacts only)"},
    {"bindings", 0, NF_ARG_NONE, OPT_BINDINGS, NULL, "list the bindings (artifacts only)"},
    {"uses", 0, NF_ARG_NONE, OPT_USES, NULL, "list the uses (artifacts only)"},
    {"files", 0, NF_ARG_NONE, OPT_FILES, NULL, "list the files of the artifact or checkpoint"},
    {"tensor", 't', NF_ARG_REQUIRED, OPT_TENSOR, "ID", "one tensor: object geometry and planes, or checkpoint tensor"},
    {"stats", 0, NF_ARG_NONE, OPT_STATS, NULL, "with --tensor: statistics of the (represented) values"},
    {"words", 'w', NF_ARG_REQUIRED, OPT_WORDS, "ID",
     "logical words of a tensor object: codes, scales, divisors (artifacts only)"},
    {"rows", 0, NF_ARG_REQUIRED, OPT_ROWS, "A:B", "with --words: rows A (inclusive) to B (exclusive)"},
    {"cols", 0, NF_ARG_REQUIRED, OPT_COLS, "A:B", "with --words: columns A to B"},
    {NULL, 0, NF_ARG_NONE, 0, NULL, NULL},
};

static const nf_program program = {
    "ninfer-inspect",
    "ninfer-inspect FILE [--json] [--objects] [--bindings] [--uses] [--files]\n"
    "       ninfer-inspect FILE --tensor ID [--stats] [--json]\n"
    "       ninfer-inspect FILE --words ID [--rows A:B] [--cols A:B] [--json]\n"
    "       ninfer-inspect CHECKPOINT [--json] [--files]\n"
    "       ninfer-inspect CHECKPOINT --tensor NAME [--stats] [--json]",
    "Show what a .ninfer artifact holds: its files, objects (format, layout, shape, bytes,\n"
    "bits/weight), totals per format, components, bindings and uses.  --tensor shows one tensor's\n"
    "geometry and planes; --words prints its logical words as stored.  Only the header and the\n"
    "JSON directory are read unless --stats or --words asks for payload.\n"
    "\n"
    "FILE may also be a source CHECKPOINT: a .safetensors file, a *.safetensors.index.json, a\n"
    "checkpoint directory or a .gguf file (told apart by content: a file starting with NINFER\\0\n"
    "is an artifact).  Its summary lists the files, the safetensors __metadata__ or the GGUF\n"
    "version, alignment, data offset and key/values, the companion files (config.json,\n"
    "tokenizer.json, ...) and every tensor (dtype, shape, offset, bytes) with totals per dtype.\n"
    "--tensor NAME [--stats] shows one tensor; --objects, --bindings, --uses and --words are for\n"
    "artifacts only.  Only headers are read unless --stats asks for tensor data.",
    options,
    "  ninfer-inspect model.ninfer\n"
    "  ninfer-inspect model.ninfer --json | jq '.objects[].id'\n"
    "  ninfer-inspect model.ninfer --tensor lm_head.weight --stats\n"
    "  ninfer-inspect model.ninfer --words lm_head.weight --rows 0:2 --cols 0:64\n"
    "  ninfer-inspect checkpoint/                       # safetensors directory, index or file\n"
    "  ninfer-inspect model.gguf --json | jq '.metadata'\n"
    "  ninfer-inspect checkpoint/ --tensor lm_head.weight --stats\n",
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
        printf("  %-4zu %-40s %16" PRIu64 "\n", i, f->path ? nf_cli_name(f->path).s : "(entry)", f->payload_bytes);
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
            printf("  %-32s %-22s %-26s %-16s %12" PRIu64 " %12" PRIu64 " %9.3f%s\n", nf_cli_name(o->id).s,
                   nf_cli_name(o->format_name).s, nf_cli_name(o->layout_name).s, shape, o->offset, o->bytes,
                   bits_per_weight(o), extra);
        } else {
            printf("  %-32s %-22s %-26s %-16s %12" PRIu64 " %12" PRIu64 " %9s\n", nf_cli_name(o->id).s, "(resource)",
                   nf_cli_name(o->layout_name).s, "-", o->offset, o->bytes, "-");
        }
    }
}

static void print_binding(const char *name, const json_t *b)
{
    json_t *obj = json_object_get(b, "object");
    if (obj) {
        printf("  %s -> %s\n", nf_cli_name(name).s, nf_cli_name(json_string_value(obj)).s);
        return;
    }
    printf("  %s ->", nf_cli_name(name).s);
    size_t i;
    json_t *part;
    json_array_foreach(json_object_get(b, "parts"), i, part) {
        json_t *r = json_object_get(part, "range");
        printf("%s %s[%" JSON_INTEGER_FORMAT ":%" JSON_INTEGER_FORMAT "]", i ? " +" : "",
               nf_cli_name(json_string_value(json_object_get(part, "object"))).s, json_integer_value(json_array_get(r, 0)),
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
        printf("  %s <- %s  %s", nf_cli_name(json_string_value(json_object_get(use, "parameter"))).s,
               nf_cli_name(json_string_value(json_object_get(use, "input"))).s,
               pol ? nf_cli_name(json_string_value(pol)).s : "(default)");
        json_t *aux = json_object_get(use, "auxiliaries");
        if (aux) {
            const char *role;
            json_t *bind;
            json_object_foreach(aux, role, bind) {
                json_t *obj = json_object_get(bind, "object");
                printf("  %s=%s", nf_cli_name(role).s, obj ? nf_cli_name(json_string_value(obj)).s : "(parts)");
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
                   nf_cli_name(key).s, json_integer_value(json_object_get(t, "objects")), el, by,
                   (double)by * 8.0 / (double)el);
        else
            printf("  %-22s %8" JSON_INTEGER_FORMAT " %16s %16" JSON_INTEGER_FORMAT " %9s\n", nf_cli_name(key).s,
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
        if (json_is_string(name)) printf("name          %s\n", nf_cli_name(json_string_value(name)).s);
        printf("directory     %" PRIu64 " bytes of JSON\n", nf_artifact_json_bytes(a));
        printf("payload       %" PRIu64 " bytes in %zu file%s (entry payload at %" PRIu64 ")\n",
               nf_artifact_payload_bytes(a), nf_artifact_file_count(a), nf_artifact_file_count(a) == 1 ? "" : "s",
               nf_artifact_entry_payload_start(a));
        const json_t *comps = member(a, "components");
        printf("components   ");
        const char *cname;
        json_t *c;
        json_object_foreach((json_t *)comps, cname, c) printf(" %s", nf_cli_name(cname).s);
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

/* About a million values at a time (nvfp4 reads whole 128-row tiles). */
#define STATS_CHUNK_VALUES ((uint64_t)1 << 20)

/* A row longer than a chunk is decoded span by span (ninfer/layout.h nf_colspan, docs/layouts.md
 * "Spans of a row"), so memory stays bounded whatever the row's length. */
static nf_status collect_stats_spans(nf_artifact *a, const nf_object *o, const nf_geometry *g, value_stats *s,
                                     nf_error *err)
{
    nf_byte_reader whole;
    nf_artifact_object_reader(a, o, &whole);
    const uint64_t span = STATS_CHUNK_VALUES; /* a multiple of NF_COLSPAN_ALIGN */
    float *values = malloc((size_t)span * sizeof *values);
    if (!values) return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    nf_status st = NF_OK;
    for (uint64_t r = 0; st == NF_OK && r < g->rows; r++) {
        for (uint64_t c0 = 0; st == NF_OK && c0 < g->cols; c0 += span) {
            uint64_t n = g->cols - c0 < span ? g->cols - c0 : span;
            nf_colspan sp;
            st = nf_colspan_init(&sp, g, r, c0, n, err);
            if (st != NF_OK) break;
            nf_colspan_source src = {&sp, &whole};
            nf_byte_reader reader;
            nf_colspan_reader(&src, &reader);
            st = nf_layout_decode_rows_f32(&sp.g, &reader, 0, 1, values, err);
            if (st == NF_OK) stats_add(s, values, n);
        }
    }
    free(values);
    return st;
}

static nf_status collect_stats(nf_artifact *a, const nf_object *o, const nf_geometry *g, value_stats *s,
                               nf_error *err)
{
    stats_init(s);
    if (g->cols > STATS_CHUNK_VALUES && nf_layout_has_colspans(g)) return collect_stats_spans(a, o, g, s, err);
    nf_byte_reader reader;
    nf_artifact_object_reader(a, o, &reader);
    uint64_t chunk = g->cols ? STATS_CHUNK_VALUES / g->cols : 1;
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

/* Report a library error about object o as "FILE: object 'ID': what".  Library messages about an
 * object (nf_artifact_check_object, the object reader) may already start with "object 'ID': " or
 * "FILE: object 'ID': ": only the missing part is added, so the object is named once. */
static int report_object_error(const nf_cli *cli, const nf_artifact *a, const nf_object *o, nf_error *err)
{
    /* The library names the object and the file escaped (nf_esc), so the same forms are
     * compared here. */
    nf_escaped path = nf_esc(nf_artifact_path(a)), id = nf_esc(o->id);
    char head[2 * NF_ESCAPED_MAX + 16];
    snprintf(head, sizeof head, "%s: object '%s': ", path.s, id.s);
    size_t path_len = strlen(path.s) + 2;
    if (strncmp(err->message, head, strlen(head)) == 0) return nf_cli_report(cli, err);
    if (strncmp(err->message, head + path_len, strlen(head + path_len)) == 0)
        nf_error_prefix(err, "%s", path.s);
    else
        nf_error_prefix(err, "%s: object '%s'", path.s, id.s);
    return nf_cli_report(cli, err);
}

static int inspect_tensor(const nf_cli *cli, nf_artifact *a, const inspect_opts *opts)
{
    const nf_object *o = nf_artifact_find(a, opts->tensor);
    if (!o)
        return nf_cli_error(cli, NF_ERR_INVALID, "%s: no object '%s'", nf_cli_name(nf_artifact_path(a)).s,
                            nf_cli_name(opts->tensor).s);
    if (o->kind != NF_OBJECT_TENSOR)
        return nf_cli_error(cli, NF_ERR_INVALID, "%s: object '%s' is a resource, not a tensor",
                            nf_cli_name(nf_artifact_path(a)).s, nf_cli_name(o->id).s);
    nf_geometry g;
    nf_error err;
    if (nf_artifact_check_object(a, o, &g, &err) != NF_OK) return report_object_error(cli, a, o, &err);
    value_stats s;
    stats_init(&s);
    if (opts->stats && collect_stats(a, o, &g, &s, &err) != NF_OK) return report_object_error(cli, a, o, &err);
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
    printf("object        %s\nformat        %s\nlayout        %s\n", nf_cli_name(o->id).s, o->format->name,
           o->layout->name);
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
    if (!o)
        return nf_cli_error(cli, NF_ERR_INVALID, "%s: no object '%s'", nf_cli_name(nf_artifact_path(a)).s,
                            nf_cli_name(opts->words).s);
    if (o->kind != NF_OBJECT_TENSOR)
        return nf_cli_error(cli, NF_ERR_INVALID, "%s: object '%s' is a resource, not a tensor",
                            nf_cli_name(nf_artifact_path(a)).s, nf_cli_name(o->id).s);
    nf_geometry g;
    nf_error err;
    if (nf_artifact_check_object(a, o, &g, &err) != NF_OK) return report_object_error(cli, a, o, &err);
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
    if (nf_words_alloc(&w, &g, chunk, &err) != NF_OK) return report_object_error(cli, a, o, &err);
    json_t *doc = cli->json ? words_doc(o, &v) : NULL;
    if (!cli->json) {
        printf("%s  %s  rows %" PRIu64 ":%" PRIu64 "  cols %" PRIu64 ":%" PRIu64 "  (words as stored)\n",
               nf_cli_name(o->id).s, o->format->name, v.r0, v.r1, v.c0, v.c1);
    }
    int rc = NF_EXIT_OK;
    bool divisors_done = false;
    for (uint64_t r = v.r0; r < v.r1 && rc == NF_EXIT_OK; r += chunk) {
        uint64_t r1 = r + chunk < v.r1 ? r + chunk : v.r1;
        if (nf_layout_decode_rows(&g, &reader, r, r1, &w, &err) != NF_OK) {
            rc = report_object_error(cli, a, o, &err);
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

/* ---------------------------------------------------------------- checkpoints
 * FILE may also be a source checkpoint (design.md section 2): a .safetensors file, a sharded
 * *.safetensors.index.json, a checkpoint directory or a GGUF file, opened with the library's
 * source reader.  Only headers are parsed; tensor data is read for --tensor --stats alone. */

enum {
    TEXT_BUF = 4 * 4096 + 16,  /* a displayed path or name: each byte shows as at most 4 */
    KV_TEXT_CHARS = 60,        /* a GGUF string value shown in the summary */
    KV_ELEM_CHARS = 24,        /* a string element of a GGUF array */
    KV_ELEMS_SHOWN = 8,        /* elements of a GGUF array shown in the summary */
    KV_JSON_MAX = 64,          /* elements of a GGUF array in --json */
    META_TEXT_CHARS = 100      /* a safetensors __metadata__ value in the summary */
};

static bool utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0, k; i < len; i += k)
        if ((k = nf_cli_utf8_seq(p + i, len - i)) == 0) return false;
    return true;
}

/* obj[key] = value (stolen), the key made valid UTF-8 first. */
static void json_set_key(json_t *obj, const char *key, json_t *value)
{
    size_t len = strlen(key);
    if (utf8_valid(key, len)) {
        json_object_set_new(obj, key, value);
        return;
    }
    char *c = nf_cli_utf8_clean(key, len, NULL);
    if (c) json_object_set_new(obj, c, value);
    else json_decref(value);
    free(c);
}

/* s[0..len) for a terminal, escaped by nf_escape (ninfer/escape.h: the rule every program
 * uses); with `quoted` inside double quotes, a '"' shown as \".  After max_chars characters (0:
 * no limit) or when buf is full the rest is cut and "..." appended.  size >= 16. */
static const char *display_text(const char *s, size_t len, size_t max_chars, bool quoted, char *buf, size_t size)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t cut = len, chars = 0;
    if (max_chars)
        for (size_t i = 0, k; i < len; i += k, chars++) {
            if (chars == max_chars) {
                cut = i;
                break;
            }
            k = nf_cli_utf8_seq(p + i, len - i);
            if (k == 0) k = 1;
        }
    /* escaped text first, then the quotes (escapes never produce a '"') */
    char *tmp = malloc(size);
    if (!tmp) {
        snprintf(buf, size, "?");
        return buf;
    }
    nf_escape(s, cut, 0, tmp, quoted ? size / 2 - 4 : size - 4);
    size_t o = 0;
    if (quoted) buf[o++] = '"';
    for (const char *t = tmp; *t && o + 6 < size; t++) {
        if (quoted && *t == '"') buf[o++] = '\\';
        buf[o++] = *t;
    }
    if (quoted) buf[o++] = '"';
    size_t tl = strlen(tmp);
    if (cut < len && !(tl >= 3 && strcmp(tmp + tl - 3, "...") == 0)) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o] = '\0';
    free(tmp);
    return buf;
}

static const char *display_cstr(const char *s, char *buf, size_t size)
{
    return display_text(s, strlen(s), 0, false, buf, size);
}

static const char *source_kind_name(const nf_source *s)
{
    return nf_source_kind_of(s) == NF_SOURCE_GGUF ? "gguf" : "safetensors";
}

static double source_bits_per_weight(const nf_source_tensor *t)
{
    return t->elements ? (double)t->bytes * 8.0 / (double)t->elements : 0.0;
}

/* ---- GGUF key/value pairs */
static const char *gguf_type_text(nf_gguf_type t)
{
    const char *n = nf_gguf_type_name(t);
    return n ? n : "?";
}

static bool gguf_type_signed(nf_gguf_type t)
{
    return t == NF_GGUF_I8 || t == NF_GGUF_I16 || t == NF_GGUF_I32 || t == NF_GGUF_I64;
}

/* The shortest decimal that reads back as the same binary32 (`single`) or binary64 value, so
 * that an f32 KV holding 0.02f shows as 0.02 rather than its exact widening 0.0199999995.... */
static void shortest_real(double v, bool single, char *buf, size_t size)
{
    if (isnan(v)) {
        snprintf(buf, size, "nan");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, size, "%s", v < 0 ? "-inf" : "inf");
        return;
    }
    for (int prec = single ? 6 : 15; prec <= (single ? 9 : 17); prec++) {
        snprintf(buf, size, "%.*g", prec, v);
        if (single ? strtof(buf, NULL) == (float)v : strtod(buf, NULL) == v) return;
    }
}

/* Element i of a KV (0 for a scalar) as text; strings quoted and cut after max_chars. */
static void kv_elem_text(const nf_gguf_kv *kv, uint64_t i, size_t max_chars, char *buf, size_t size)
{
    nf_error err;
    nf_gguf_type t = kv->elem_type;
    if (t == NF_GGUF_STRING) {
        const char *str;
        size_t len;
        if (nf_gguf_kv_string(kv, i, &str, &len, &err) == NF_OK) display_text(str, len, max_chars, true, buf, size);
        else snprintf(buf, size, "?");
    } else if (t == NF_GGUF_BOOL) {
        bool b;
        if (nf_gguf_kv_bool(kv, i, &b, &err) == NF_OK) snprintf(buf, size, "%s", b ? "true" : "false");
        else snprintf(buf, size, "(a bool byte neither 0 nor 1)");
    } else if (t == NF_GGUF_F32 || t == NF_GGUF_F64) {
        double d = 0.0;
        if (nf_gguf_kv_float(kv, i, &d, &err) == NF_OK) shortest_real(d, t == NF_GGUF_F32, buf, size);
        else snprintf(buf, size, "?");
    } else if (gguf_type_signed(t)) {
        int64_t v = 0;
        if (nf_gguf_kv_int(kv, i, &v, &err) == NF_OK) snprintf(buf, size, "%" PRId64, v);
        else snprintf(buf, size, "?");
    } else {
        uint64_t v = 0;
        if (nf_gguf_kv_uint(kv, i, &v, &err) == NF_OK) snprintf(buf, size, "%" PRIu64, v);
        else snprintf(buf, size, "?");
    }
}

/* Element i of a KV as a typed JSON value: integers as integers (a u64 above 2^63 - 1 as a
 * decimal string), f32 as its shortest decimal, f64 as is (NaN and infinities as the strings
 * "nan", "inf", "-inf"), bools, strings (invalid UTF-8 bytes replaced by U+FFFD). */
static json_t *kv_elem_json(const nf_gguf_kv *kv, uint64_t i)
{
    nf_error err;
    nf_gguf_type t = kv->elem_type;
    if (t == NF_GGUF_STRING) {
        const char *str;
        size_t len;
        return nf_gguf_kv_string(kv, i, &str, &len, &err) == NF_OK ? nf_cli_json_text(str, len) : json_null();
    }
    if (t == NF_GGUF_BOOL) {
        bool b;
        return nf_gguf_kv_bool(kv, i, &b, &err) == NF_OK ? json_boolean(b) : json_null();
    }
    if (t == NF_GGUF_F32 || t == NF_GGUF_F64) {
        double d = 0.0;
        if (nf_gguf_kv_float(kv, i, &d, &err) != NF_OK) return json_null();
        char buf[32];
        shortest_real(d, t == NF_GGUF_F32, buf, sizeof buf);
        return isfinite(d) ? json_real(strtod(buf, NULL)) : json_string(buf);
    }
    if (gguf_type_signed(t)) {
        int64_t v = 0;
        return nf_gguf_kv_int(kv, i, &v, &err) == NF_OK ? json_integer((json_int_t)v) : json_null();
    }
    uint64_t u = 0;
    if (nf_gguf_kv_uint(kv, i, &u, &err) != NF_OK) return json_null();
    if (u <= (uint64_t)INT64_MAX) return json_integer((json_int_t)u);
    char buf[24];
    snprintf(buf, sizeof buf, "%" PRIu64, u);
    return json_string(buf);
}

/* A KV's value: a scalar, an array of at most KV_JSON_MAX elements, or for a longer array
 * {"type": "array", "element_type", "count", "values": [the first KV_JSON_MAX]}. */
static json_t *kv_json(const nf_gguf_kv *kv)
{
    if (kv->type != NF_GGUF_ARRAY) return kv_elem_json(kv, 0);
    json_t *values = json_array();
    uint64_t n = kv->count < KV_JSON_MAX ? kv->count : KV_JSON_MAX;
    for (uint64_t i = 0; i < n; i++) json_array_append_new(values, kv_elem_json(kv, i));
    if (kv->count <= KV_JSON_MAX) return values;
    return json_pack("{s:s,s:s,s:I,s:o}", "type", "array", "element_type", gguf_type_text(kv->elem_type), "count",
                     (json_int_t)kv->count, "values", values);
}

static void kv_type_text(const nf_gguf_kv *kv, char *buf, size_t size)
{
    if (kv->type == NF_GGUF_ARRAY) snprintf(buf, size, "array[%s]", gguf_type_text(kv->elem_type));
    else snprintf(buf, size, "%s", gguf_type_text(kv->type));
}

static void print_kv(const nf_gguf_kv *kv, int key_width)
{
    char key[4 * 96 + 16], value[1024];
    display_text(kv->key, strlen(kv->key), 96, false, key, sizeof key);
    if (kv->type == NF_GGUF_ARRAY) {
        size_t o = (size_t)snprintf(value, sizeof value, "[%" PRIu64 " x %s]", kv->count,
                                    gguf_type_text(kv->elem_type));
        uint64_t i = 0;
        for (; i < kv->count && i < KV_ELEMS_SHOWN && o < 80; i++) {
            char el[4 * KV_ELEM_CHARS + 16];
            kv_elem_text(kv, i, KV_ELEM_CHARS, el, sizeof el);
            o += (size_t)snprintf(value + o, sizeof value - o, "%s%s", i ? ", " : " ", el);
        }
        if (i < kv->count) snprintf(value + o, sizeof value - o, "%s...", i ? ", " : " ");
    } else {
        kv_elem_text(kv, 0, KV_TEXT_CHARS, value, sizeof value);
    }
    printf("  %-*s  %-7s  %s\n", key_width, key, gguf_type_text(kv->type), value);
}

/* ---- summary */
static json_t *source_files_json(const nf_source *s)
{
    json_t *files = json_array();
    for (size_t i = 0; i < nf_source_file_count(s); i++)
        json_array_append_new(files, json_pack("{s:o,s:I}", "path", nf_cli_json_cstr(nf_source_file_path(s, i)), "bytes",
                                               (json_int_t)nf_source_file_size(s, i)));
    return files;
}

static json_t *source_tensor_json(const nf_source *s, const nf_source_tensor *t)
{
    return json_pack("{s:o,s:s,s:o,s:I,s:o,s:I}", "name", nf_cli_json_cstr(t->name), "dtype", t->type_name, "shape",
                     dims_json(t->shape, t->rank), "bytes", (json_int_t)t->bytes, "file",
                     nf_cli_json_cstr(nf_source_file_path(s, t->file)), "offset", (json_int_t)t->offset);
}

/* safetensors: the __metadata__ strings of every file (a key in several shards: the first
 * file's value); GGUF: every KV, typed. */
static json_t *source_metadata_json(const nf_source *s)
{
    json_t *meta = json_object();
    if (nf_source_kind_of(s) == NF_SOURCE_GGUF) {
        for (size_t i = 0; i < nf_source_gguf_kv_count(s); i++) {
            const nf_gguf_kv *kv = nf_source_gguf_kv_at(s, i);
            json_set_key(meta, kv->key, kv_json(kv));
        }
        return meta;
    }
    for (size_t f = 0; f < nf_source_file_count(s); f++) {
        for (size_t i = 0; i < nf_source_st_metadata_count(s, f); i++) {
            const char *key, *value;
            if (nf_source_st_metadata_at(s, f, i, &key, &value) && !json_object_get(meta, key))
                json_set_key(meta, key, nf_cli_json_cstr(value));
        }
    }
    return meta;
}

static void add_count(json_t *obj, const char *key, uint64_t delta)
{
    json_object_set_new(obj, key, json_integer(json_integer_value(json_object_get(obj, key)) + (json_int_t)delta));
}

/* {"tensors", "elements", "bytes", "dtypes": {DTYPE: {"tensors", "elements", "bytes"}}}, the
 * dtypes in order of first appearance. */
static json_t *source_totals_json(const nf_source *s)
{
    json_t *totals = json_pack("{s:I,s:I,s:I,s:{}}", "tensors", (json_int_t)0, "elements", (json_int_t)0, "bytes",
                               (json_int_t)0, "dtypes");
    json_t *dtypes = json_object_get(totals, "dtypes");
    for (size_t i = 0; i < nf_source_tensor_count(s); i++) {
        const nf_source_tensor *t = nf_source_tensor_at(s, i);
        json_t *d = json_object_get(dtypes, t->type_name);
        if (!d) {
            d = json_pack("{s:I,s:I,s:I}", "tensors", (json_int_t)0, "elements", (json_int_t)0, "bytes", (json_int_t)0);
            json_object_set_new(dtypes, t->type_name, d);
        }
        json_t *both[2] = {totals, d};
        for (int k = 0; k < 2; k++) {
            add_count(both[k], "tensors", 1);
            add_count(both[k], "elements", t->elements);
            add_count(both[k], "bytes", t->bytes);
        }
    }
    return totals;
}

static json_t *source_json(const nf_source *s, const inspect_opts *o)
{
    json_t *doc = json_object();
    json_object_set_new(doc, "kind", json_string(source_kind_name(s)));
    json_object_set_new(doc, "path", nf_cli_json_cstr(nf_source_path(s)));
    if (nf_source_kind_of(s) == NF_SOURCE_SAFETENSORS) {
        const char *index = nf_source_index_path(s);
        json_object_set_new(doc, "index", index ? nf_cli_json_cstr(index) : json_null());
    }
    json_object_set_new(doc, "files", source_files_json(s));
    if (o->files) return doc;
    json_t *tensors = json_array();
    for (size_t i = 0; i < nf_source_tensor_count(s); i++)
        json_array_append_new(tensors, source_tensor_json(s, nf_source_tensor_at(s, i)));
    json_object_set_new(doc, "tensors", tensors);
    json_object_set_new(doc, "metadata", source_metadata_json(s));
    json_t *comps = json_object();
    for (size_t i = 0; i < nf_source_companion_count(s); i++) {
        const char *name = NULL;
        const char *path = nf_source_companion_at(s, i, &name);
        if (path && name) json_object_set_new(comps, name, nf_cli_json_cstr(path));
    }
    json_object_set_new(doc, "companions", comps);
    if (nf_source_kind_of(s) == NF_SOURCE_GGUF) {
        json_t *types = json_object();
        for (size_t i = 0; i < nf_source_gguf_kv_count(s); i++) {
            const nf_gguf_kv *kv = nf_source_gguf_kv_at(s, i);
            char type[32];
            kv_type_text(kv, type, sizeof type);
            json_set_key(types, kv->key, json_string(type));
        }
        json_object_set_new(doc, "gguf",
                            json_pack("{s:I,s:I,s:I,s:o}", "version", (json_int_t)nf_source_gguf_version(s),
                                      "alignment", (json_int_t)nf_source_gguf_alignment(s), "data_offset",
                                      (json_int_t)nf_source_gguf_data_offset(s), "kv_types", types));
    }
    json_object_set_new(doc, "totals", source_totals_json(s));
    return doc;
}

static void print_source_files(const nf_source *s)
{
    char path[TEXT_BUF];
    printf("files (%zu)\n  %-4s %-56s %16s\n", nf_source_file_count(s), "#", "path", "bytes");
    for (size_t i = 0; i < nf_source_file_count(s); i++)
        printf("  %-4zu %-56s %16" PRIu64 "\n", i, display_cstr(nf_source_file_path(s, i), path, sizeof path),
               nf_source_file_size(s, i));
}

static void print_source_metadata(const nf_source *s)
{
    if (nf_source_kind_of(s) == NF_SOURCE_GGUF) {
        size_t n = nf_source_gguf_kv_count(s);
        int width = 8;
        for (size_t i = 0; i < n; i++) {
            size_t len = strlen(nf_source_gguf_kv_at(s, i)->key);
            if (len > (size_t)width) width = len > 48 ? 48 : (int)len;
        }
        printf("metadata (%zu key%s)\n", n, n == 1 ? "" : "s");
        for (size_t i = 0; i < n; i++) print_kv(nf_source_gguf_kv_at(s, i), width);
        return;
    }
    json_t *meta = source_metadata_json(s);
    int width = 8;
    const char *key;
    json_t *v;
    json_object_foreach(meta, key, v) {
        size_t len = strlen(key);
        if (len > (size_t)width) width = len > 48 ? 48 : (int)len;
    }
    printf("metadata (%zu)\n", json_object_size(meta));
    json_object_foreach(meta, key, v) {
        char k[4 * 96 + 16], value[4 * META_TEXT_CHARS + 16];
        printf("  %-*s  %s\n", width, display_text(key, strlen(key), 96, false, k, sizeof k),
               display_text(json_string_value(v), json_string_length(v), META_TEXT_CHARS, false, value,
                            sizeof value));
    }
    json_decref(meta);
}

static void print_source_tensors(const nf_source *s)
{
    size_t n = nf_source_tensor_count(s);
    bool sharded = nf_source_file_count(s) > 1;
    static char name[TEXT_BUF];
    int width = 4;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(display_cstr(nf_source_tensor_at(s, i)->name, name, sizeof name));
        if (len > (size_t)width) width = len > 60 ? 60 : (int)len;
    }
    printf("tensors (%zu)\n  %-*s %-8s %-20s %s%14s %14s\n", n, width, "name", "dtype", "shape",
           sharded ? " file " : "", "offset", "bytes");
    for (size_t i = 0; i < n; i++) {
        const nf_source_tensor *t = nf_source_tensor_at(s, i);
        char shape[160], file[16] = "";
        dims_text(t->shape, t->rank, false, shape, sizeof shape);
        if (sharded) snprintf(file, sizeof file, "%5zu ", t->file);
        printf("  %-*s %-8s %-20s %s%14" PRIu64 " %14" PRIu64 "\n", width, display_cstr(t->name, name, sizeof name),
               t->type_name, shape, file, t->offset, t->bytes);
    }
}

static void print_source_totals(const nf_source *s)
{
    json_t *totals = source_totals_json(s);
    json_int_t n = json_integer_value(json_object_get(totals, "tensors"));
    printf("totals        %" JSON_INTEGER_FORMAT " tensor%s, %" JSON_INTEGER_FORMAT " elements, %" JSON_INTEGER_FORMAT
           " bytes\n",
           n, n == 1 ? "" : "s", json_integer_value(json_object_get(totals, "elements")),
           json_integer_value(json_object_get(totals, "bytes")));
    printf("  %-10s %8s %16s %16s %9s\n", "dtype", "tensors", "elements", "bytes", "bits/w");
    const char *key;
    json_t *d;
    json_object_foreach(json_object_get(totals, "dtypes"), key, d) {
        json_int_t el = json_integer_value(json_object_get(d, "elements"));
        json_int_t by = json_integer_value(json_object_get(d, "bytes"));
        printf("  %-10s %8" JSON_INTEGER_FORMAT " %16" JSON_INTEGER_FORMAT " %16" JSON_INTEGER_FORMAT, key,
               json_integer_value(json_object_get(d, "tensors")), el, by);
        if (el > 0) printf(" %9.3f\n", (double)by * 8.0 / (double)el);
        else printf(" %9s\n", "-");
    }
    json_decref(totals);
}

static void print_source_summary(const nf_source *s, const inspect_opts *o)
{
    char path[TEXT_BUF];
    if (!o->files) {
        printf("kind          %s\n", source_kind_name(s));
        printf("path          %s\n", display_cstr(nf_source_path(s), path, sizeof path));
        if (nf_source_index_path(s))
            printf("index         %s\n", display_cstr(nf_source_index_path(s), path, sizeof path));
        if (nf_source_kind_of(s) == NF_SOURCE_GGUF)
            printf("version       %" PRIu32 "\nalignment     %" PRIu64 "\ndata offset   %" PRIu64 "\n",
                   nf_source_gguf_version(s), nf_source_gguf_alignment(s), nf_source_gguf_data_offset(s));
        printf("\n");
    }
    print_source_files(s);
    if (o->files) return;
    printf("\n");
    print_source_metadata(s);
    printf("\n");
    if (nf_source_kind_of(s) == NF_SOURCE_SAFETENSORS) {
        size_t n = nf_source_companion_count(s);
        printf("companions (%zu)\n", n);
        for (size_t i = 0; i < n; i++) {
            const char *name = NULL;
            const char *p = nf_source_companion_at(s, i, &name);
            if (p && name) printf("  %-26s %s\n", name, display_cstr(p, path, sizeof path));
        }
        printf("\n");
    }
    print_source_tensors(s);
    printf("\n");
    print_source_totals(s);
}

/* ---- --tensor NAME */
/* Statistics of a tensor's values, read as binary32 in chunks of about a million values: whole
 * rows, or spans of a row longer than that (nf_source_read_f32_span). */
static nf_status collect_source_stats(const nf_source *s, const nf_source_tensor *t, value_stats *vs, nf_error *err)
{
    stats_init(vs);
    if (t->elements == 0) return NF_OK;
    const uint64_t cols = t->row_elements;
    uint64_t chunk = STATS_CHUNK_VALUES / cols;
    if (chunk > t->rows) chunk = t->rows;
    /* a span is whole blocks of the type */
    size_t len = (size_t)(chunk ? chunk * cols : STATS_CHUNK_VALUES - STATS_CHUNK_VALUES % t->block_values);
    float *values = malloc(len * sizeof *values);
    if (!values)
        return nf_error_set(err, NF_ERR_NOMEM, "%s: tensor '%s': out of memory", nf_esc(nf_source_path(s)).s,
                            nf_esc(t->name).s);
    nf_status st = NF_OK;
    if (chunk == 0) {
        for (uint64_t r = 0; st == NF_OK && r < t->rows; r++) {
            for (uint64_t c0 = 0; st == NF_OK && c0 < cols; c0 += len) {
                uint64_t n = cols - c0 < len ? cols - c0 : len;
                st = nf_source_read_f32_span(s, t, r, c0, n, values, len, err);
                if (st == NF_OK) stats_add(vs, values, n);
            }
        }
    }
    for (uint64_t r = 0; chunk && st == NF_OK && r < t->rows; r += chunk) {
        uint64_t r1 = r + chunk < t->rows ? r + chunk : t->rows;
        st = nf_source_read_f32(s, t, r, r1, values, len, err);
        if (st == NF_OK) stats_add(vs, values, (r1 - r) * cols);
    }
    free(values);
    return st;
}

static int inspect_source_tensor(const nf_cli *cli, const nf_source *s, const inspect_opts *opts)
{
    const nf_source_tensor *t = nf_source_find(s, opts->tensor);
    if (!t)
        return nf_cli_error(cli, NF_ERR_INVALID, "%s: no tensor '%s'", nf_cli_name(nf_source_path(s)).s,
                            nf_cli_name(opts->tensor).s);
    bool gguf = nf_source_kind_of(s) == NF_SOURCE_GGUF;
    value_stats vs;
    stats_init(&vs);
    if (opts->stats) {
        if (!t->convertible)
            return nf_cli_error(cli, NF_ERR_INVALID,
                                "%s: tensor '%s': --stats cannot read %s values: the source reader has no conversion "
                                "of this %s to binary32",
                                nf_cli_name(nf_source_path(s)).s, nf_cli_name(t->name).s, t->type_name,
                                gguf ? "ggml type" : "dtype");
        nf_error err;
        if (collect_source_stats(s, t, &vs, &err) != NF_OK) return nf_cli_report(cli, &err);
    }
    const char *file = nf_source_file_path(s, t->file);
    if (cli->json) {
        json_t *doc = json_pack("{s:o,s:s,s:o,s:I,s:I,s:I,s:I,s:f,s:o,s:I,s:b}", "name", nf_cli_json_cstr(t->name), "dtype",
                                t->type_name, "shape", dims_json(t->shape, t->rank), "elements",
                                (json_int_t)t->elements, "rows", (json_int_t)t->rows, "cols",
                                (json_int_t)t->row_elements, "bytes", (json_int_t)t->bytes, "bits_per_weight",
                                source_bits_per_weight(t), "file", nf_cli_json_cstr(file), "offset", (json_int_t)t->offset,
                                "convertible", t->convertible);
        if (gguf) {
            uint64_t ne[NF_GGUF_MAX_DIMS];
            for (uint32_t i = 0; i < t->rank && i < NF_GGUF_MAX_DIMS; i++) ne[i] = t->shape[t->rank - 1 - i];
            json_object_set_new(doc, "ggml_type", json_integer(t->ggml_type));
            json_object_set_new(doc, "ne", dims_json(ne, t->rank < NF_GGUF_MAX_DIMS ? t->rank : NF_GGUF_MAX_DIMS));
            json_object_set_new(doc, "block_values", json_integer((json_int_t)t->block_values));
            json_object_set_new(doc, "block_bytes", json_integer((json_int_t)t->block_bytes));
        }
        if (opts->stats) json_object_set_new(doc, "stats", stats_json(&vs));
        int rc = nf_cli_print_json(cli, doc);
        json_decref(doc);
        return rc;
    }
    char name[TEXT_BUF], shape[160];
    dims_text(t->shape, t->rank, false, shape, sizeof shape);
    printf("tensor        %s\ndtype         %s\n", display_cstr(t->name, name, sizeof name), t->type_name);
    printf("shape         %s  (%" PRIu64 " rows x %" PRIu64 " cols, %" PRIu64 " elements)\n", shape, t->rows,
           t->row_elements, t->elements);
    if (gguf) {
        dims_text(t->shape, t->rank, true, shape, sizeof shape);
        printf("ggml          type %d, ne %s, blocks of %" PRIu32 " value%s in %" PRIu32 " bytes\n", t->ggml_type,
               shape, t->block_values, t->block_values == 1 ? "" : "s", t->block_bytes);
    }
    printf("file          %s\n", display_cstr(file, name, sizeof name));
    printf("offset        %" PRIu64 "\nbytes         %" PRIu64 "  (%.4f bits/weight)\n", t->offset, t->bytes,
           source_bits_per_weight(t));
    if (opts->stats) print_stats(&vs);
    return NF_EXIT_OK;
}

/* ---- dispatch */
typedef enum path_kind { PATH_UNREADABLE, PATH_ARTIFACT, PATH_CHECKPOINT, PATH_NOT_A_FILE } path_kind;

/* Decided by content, not by name: a regular file starting with "NINFER\0" is an artifact
 * (whatever its version byte: the artifact reader explains old versions); any other file or a
 * directory is a checkpoint.  A path that cannot be examined is left to the source reader,
 * whose message names it.  What is neither a regular file nor a directory (a device, a FIFO, a
 * socket), and a pseudo-file of /proc or /sys (regular and 0 bytes by stat, yet reads fail or
 * return text), is refused here as a system error, with the status ninfer-verify and
 * ninfer-dequant give it (design.md section 2: exit 3); *err says why. */
static path_kind classify_path(const char *path, nf_error *err)
{
    struct stat st;
    if (stat(path, &st) != 0) return PATH_UNREADABLE;
    if (S_ISDIR(st.st_mode)) return PATH_CHECKPOINT;
    if (!S_ISREG(st.st_mode)) {
        nf_error_set(err, NF_ERR_IO, "%s: not a regular file (a device, FIFO or socket)", nf_esc(path).s);
        return PATH_NOT_A_FILE;
    }
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return PATH_UNREADABLE;
    unsigned char head[64];
    ssize_t n;
    do {
        n = pread(fd, head, sizeof head, 0);
    } while (n < 0 && errno == EINTR);
    int e = errno;
    close(fd);
    if (n < 0) {
        nf_error_errno(err, e, "%s: cannot read", nf_esc(path).s);
        return PATH_NOT_A_FILE;
    }
    if ((uint64_t)st.st_size < sizeof head && (uint64_t)n != (uint64_t)st.st_size) {
        nf_error_set(err, NF_ERR_IO, "%s: not a regular file (it reports %llu bytes and reads %s%zd: a "
                     "pseudo-file such as /proc's)", nf_esc(path).s, (unsigned long long)st.st_size,
                     (size_t)n == sizeof head ? "at least " : "", n);
        return PATH_NOT_A_FILE;
    }
    return n >= 7 && memcmp(head, "NINFER\0", 7) == 0 ? PATH_ARTIFACT : PATH_CHECKPOINT;
}

/* The views that exist only for artifacts. */
static int source_usage(const nf_cli *cli, const inspect_opts *o, const char *path)
{
    if (o->words)
        return nf_cli_usage(cli, "--words prints the stored words of a .ninfer object, and %s is a checkpoint, not "
                                 "an artifact: use --tensor NAME [--stats] to look at one of its tensors", nf_cli_name(path).s);
    if (o->objects)
        return nf_cli_usage(cli, "--objects lists the objects of a .ninfer artifact, and %s is a checkpoint: its "
                                 "tensors are listed by the summary (or one by --tensor NAME)", nf_cli_name(path).s);
    if (o->bindings)
        return nf_cli_usage(cli, "--bindings lists the bindings of a .ninfer artifact, and %s is a checkpoint, "
                                 "which has none", nf_cli_name(path).s);
    if (o->uses)
        return nf_cli_usage(cli, "--uses lists the uses of a .ninfer artifact, and %s is a checkpoint, which has "
                                 "none", nf_cli_name(path).s);
    return NF_EXIT_OK;
}

static int inspect_source(const nf_cli *cli, const char *path, path_kind kind, const inspect_opts *opts)
{
    int rc = kind == PATH_CHECKPOINT ? source_usage(cli, opts, path) : NF_EXIT_OK;
    if (rc != NF_EXIT_OK) return rc;
    nf_source *s = NULL;
    nf_error err;
    if (nf_source_open(path, &s, &err) != NF_OK) {
        size_t len = strlen(path);
        if (err.status == NF_ERR_INVALID && kind == PATH_CHECKPOINT && len > 7 && strcmp(path + len - 7, ".ninfer") == 0)
            nf_error_prefix(&err, "%s: no NINFER\\0\\3 magic, so read as a checkpoint", nf_esc(path).s);
        return nf_cli_report(cli, &err);
    }
    if (kind != PATH_CHECKPOINT) rc = source_usage(cli, opts, path);
    if (rc == NF_EXIT_OK && opts->tensor) {
        rc = inspect_source_tensor(cli, s, opts);
    } else if (rc == NF_EXIT_OK && cli->json) {
        json_t *doc = source_json(s, opts);
        rc = nf_cli_print_json(cli, doc);
        json_decref(doc);
    } else if (rc == NF_EXIT_OK) {
        print_source_summary(s, opts);
    }
    nf_source_close(s);
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
    nf_error cerr;
    path_kind kind = classify_path(cli.positional[0], &cerr);
    if (kind == PATH_NOT_A_FILE) {
        rc = nf_cli_report(&cli, &cerr);
        goto out;
    }
    if (kind != PATH_ARTIFACT) {
        rc = inspect_source(&cli, cli.positional[0], kind, &opts);
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
