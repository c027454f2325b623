/* ninfer-inspect on a .ninfer artifact: the summary (files, objects, totals, components,
 * bindings, uses), one tensor's geometry and statistics (--tensor [--stats]) and its logical
 * words (--words).  Reads no payload unless --stats or --words asks for it. */
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
#include "common/fail.h"
#include "inspect.h"
#include "numtext.h"
#include "table.h"

/* ---------------------------------------------------------------- helpers */
static json_t *shape_json(const nf_object *o) { return dims_json(o->shape, o->rank); }
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

/* An int32 word's two's-complement value (the conversion of a uint32_t above INT32_MAX to int32_t
 * is implementation-defined, so it is spelt out). */
static int32_t int32_of(uint32_t word)
{
    return word <= (uint32_t)INT32_MAX ? (int32_t)word : (int32_t)(word - 0x80000000u) - INT32_MAX - 1;
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
                json_object_set_new(
                    t, "elements",
                    json_integer(json_integer_value(json_object_get(t, "elements")) + (json_int_t)elements_of(ob)));
            json_object_set_new(t, "bytes",
                                json_integer(json_integer_value(json_object_get(t, "bytes")) + (json_int_t)ob->bytes));
        }
        json_object_set_new(doc, "totals", totals);
    }
    return doc;
}

/* The tables below size every column from its cells (table.h): ids, format and layout names
 * come from the file and have no bound. */
static bool print_files(const nf_artifact *a)
{
    printf("files (%zu)\n", nf_artifact_file_count(a));
    nf_table t;
    nf_table_init(&t, "  ", "llr", (const char *[]){"#", "path", "payload_bytes"});
    for (size_t i = 0; i < nf_artifact_file_count(a); i++) {
        const nf_file_entry *f = nf_artifact_file(a, i);
        nf_table_cell(&t, "%zu", i);
        nf_table_cell(&t, "%s", f->path ? nf_cli_name(f->path).s : "(entry)");
        nf_table_cell(&t, "%" PRIu64, f->payload_bytes);
    }
    bool ok = nf_table_print(&t, stdout);
    nf_table_free(&t);
    return ok;
}

static bool print_objects(const nf_artifact *a)
{
    printf("objects (%zu)\n", nf_artifact_object_count(a));
    nf_table t;
    nf_table_init(&t, "  ", "llllrrrl",
                  (const char *[]){"id", "format", "layout", "shape", "offset", "bytes", "bits/w", ""});
    for (size_t i = 0; i < nf_artifact_object_count(a); i++) {
        const nf_object *o = nf_artifact_object(a, i);
        nf_table_cell(&t, "%s", nf_cli_name(o->id).s);
        if (o->kind == NF_OBJECT_TENSOR) {
            char shape[128];
            shape_text(o, shape, sizeof shape);
            nf_table_cell(&t, "%s", nf_cli_name(o->format_name).s);
            nf_table_cell(&t, "%s", nf_cli_name(o->layout_name).s);
            nf_table_cell(&t, "%s", shape);
            nf_table_cell(&t, "%" PRIu64, o->offset);
            nf_table_cell(&t, "%" PRIu64, o->bytes);
            nf_table_cell(&t, "%.3f", bits_per_weight(o));
            if (o->divisors > 1) nf_table_cell(&t, "(%" PRIu64 " divisors)", o->divisors);
            else nf_table_cell(&t, "%s", "");
        } else {
            nf_table_cell(&t, "%s", "(resource)");
            nf_table_cell(&t, "%s", nf_cli_name(o->layout_name).s);
            nf_table_cell(&t, "%s", "-");
            nf_table_cell(&t, "%" PRIu64, o->offset);
            nf_table_cell(&t, "%" PRIu64, o->bytes);
            nf_table_cell(&t, "%s", "-");
            nf_table_cell(&t, "%s", "");
        }
    }
    bool ok = nf_table_print(&t, stdout);
    nf_table_free(&t);
    return ok;
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
    json_array_foreach(json_object_get(b, "parts"), i, part)
    {
        json_t *r = json_object_get(part, "range");
        printf("%s %s[%" JSON_INTEGER_FORMAT ":%" JSON_INTEGER_FORMAT "]", i ? " +" : "",
               nf_cli_name(json_string_value(json_object_get(part, "object"))).s,
               json_integer_value(json_array_get(r, 0)), json_integer_value(json_array_get(r, 1)));
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
    json_array_foreach((json_t *)u, i, use)
    {
        json_t *pol = json_object_get(use, "activation_policy");
        printf("  %s <- %s  %s", nf_cli_name(json_string_value(json_object_get(use, "parameter"))).s,
               nf_cli_name(json_string_value(json_object_get(use, "input"))).s,
               pol ? nf_cli_name(json_string_value(pol)).s : "(default)");
        json_t *aux = json_object_get(use, "auxiliaries");
        if (aux) {
            const char *role;
            json_t *bind;
            json_object_foreach(aux, role, bind)
            {
                json_t *obj = json_object_get(bind, "object");
                printf("  %s=%s", nf_cli_name(role).s, obj ? nf_cli_name(json_string_value(obj)).s : "(parts)");
            }
        }
        printf("\n");
    }
}

static bool print_totals(const nf_artifact *a)
{
    json_t *doc = summary_json(a, &(inspect_opts){0});
    json_t *totals = json_object_get(doc, "totals");
    printf("totals per format\n");
    nf_table t;
    nf_table_init(&t, "  ", "lrrrr", (const char *[]){"format", "objects", "elements", "bytes", "bits/w"});
    const char *key;
    json_t *tot;
    json_object_foreach(totals, key, tot)
    {
        json_int_t el = json_integer_value(json_object_get(tot, "elements"));
        json_int_t by = json_integer_value(json_object_get(tot, "bytes"));
        nf_table_cell(&t, "%s", nf_cli_name(key).s);
        nf_table_cell(&t, "%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(tot, "objects")));
        if (el > 0) {
            nf_table_cell(&t, "%" JSON_INTEGER_FORMAT, el);
            nf_table_cell(&t, "%" JSON_INTEGER_FORMAT, by);
            nf_table_cell(&t, "%.3f", (double)by * 8.0 / (double)el);
        } else {
            nf_table_cell(&t, "%s", "-");
            nf_table_cell(&t, "%" JSON_INTEGER_FORMAT, by);
            nf_table_cell(&t, "%s", "-");
        }
    }
    bool ok = nf_table_print(&t, stdout);
    nf_table_free(&t);
    json_decref(doc);
    return ok;
}

/* The first lines of both summaries: the artifact id and, when the directory has one, its name. */
static void print_identity(const nf_artifact *a)
{
    char id[33];
    nf_artifact_id_hex(a, id);
    const json_t *meta = member(a, "metadata");
    const json_t *name = meta ? json_object_get(meta, "name") : NULL;
    printf("artifact      %s\n", id);
    if (json_is_string(name)) printf("name          %s\n", nf_cli_name(json_string_value(name)).s);
}

/* false when a table could not be held (out of memory) */
static bool print_summary(const nf_artifact *a, const inspect_opts *o)
{
    bool ok = true;
    bool all = !(o->objects || o->bindings || o->uses || o->files);
    if (all) {
        print_identity(a);
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
        ok = print_files(a) && ok;
        printf("\n");
    }
    if (all || o->objects) {
        ok = print_objects(a) && ok;
        printf("\n");
    }
    if (all) {
        ok = print_totals(a) && ok;
        printf("\n");
    }
    if (all || o->bindings) {
        print_bindings(a);
        printf("\n");
    }
    if (all || o->uses) print_uses(a);
    return ok;
}


/* ---------------------------------------------------------------- --summary
 * One screen whatever the artifact's size (docs/ninfer-inspect.md, "--summary"): the default
 * view lists every object, so a model of 10^4 tensors needs pages before its totals.  Only the
 * header and the directory are read. */
typedef struct artifact_sums {
    uint64_t tensors, resources, weights, tensor_bytes, resource_bytes, file_bytes;
    uint64_t recorded; /* tensors with a provenance.objects record */
} artifact_sums;

static void sum_artifact(const nf_artifact *a, artifact_sums *t)
{
    memset(t, 0, sizeof *t);
    for (size_t i = 0; i < nf_artifact_object_count(a); i++) {
        const nf_object *o = nf_artifact_object(a, i);
        if (o->kind == NF_OBJECT_TENSOR) {
            t->tensors++;
            t->weights += elements_of(o);
            t->tensor_bytes += o->bytes;
        } else {
            t->resources++;
            t->resource_bytes += o->bytes;
        }
    }
    /* the files' sizes as the reader checks them (docs/artifact.md): the entry holds its header,
     * the directory and the gap before its payload; a part is 4096 bytes of header and gap, then
     * its payload */
    t->file_bytes = nf_artifact_entry_payload_start(a) + nf_artifact_payload_bytes(a);
    if (nf_artifact_file_count(a) > 1) t->file_bytes += 4096u * (uint64_t)(nf_artifact_file_count(a) - 1);
    const json_t *prov = json_object_get(member(a, "provenance"), "objects");
    for (size_t i = 0; i < nf_artifact_object_count(a); i++) {
        const nf_object *o = nf_artifact_object(a, i);
        if (o->kind == NF_OBJECT_TENSOR && json_is_object(json_object_get(prov, o->id))) t->recorded++;
    }
}

static double bits_of(uint64_t bytes, uint64_t weights)
{
    return weights ? (double)bytes * 8.0 / (double)weights : 0.0;
}

/* {METHOD: {"tensors", "weights", "bytes"}} over the tensors provenance.objects records, in order
 * of first appearance; a record without a string method counts as "(unknown)". */
static json_t *methods_json(const nf_artifact *a)
{
    json_t *by = json_object();
    const json_t *prov = json_object_get(member(a, "provenance"), "objects");
    for (size_t i = 0; i < nf_artifact_object_count(a); i++) {
        const nf_object *o = nf_artifact_object(a, i);
        const json_t *rec = o->kind == NF_OBJECT_TENSOR ? json_object_get(prov, o->id) : NULL;
        if (!json_is_object(rec)) continue;
        const char *m = json_string_value(json_object_get(rec, "method"));
        if (!m) m = "(unknown)";
        json_t *e = json_object_get(by, m);
        if (!e) {
            e = json_pack("{s:I,s:I,s:I}", "tensors", (json_int_t)0, "weights", (json_int_t)0, "bytes", (json_int_t)0);
            json_object_set_new(by, m, e);
        }
        json_object_set_new(e, "tensors", json_integer(json_integer_value(json_object_get(e, "tensors")) + 1));
        json_object_set_new(
            e, "weights", json_integer(json_integer_value(json_object_get(e, "weights")) + (json_int_t)elements_of(o)));
        json_object_set_new(e, "bytes",
                            json_integer(json_integer_value(json_object_get(e, "bytes")) + (json_int_t)o->bytes));
    }
    return by;
}

static json_t *summary_only_json(const nf_artifact *a)
{
    artifact_sums t;
    sum_artifact(a, &t);
    char id[33];
    nf_artifact_id_hex(a, id);
    json_t *full = summary_json(a, &(inspect_opts){0});
    json_t *formats = json_object();
    const char *key;
    json_t *v;
    json_object_foreach(json_object_get(full, "totals"), key, v)
    {
        json_int_t el = json_integer_value(json_object_get(v, "elements"));
        json_int_t by = json_integer_value(json_object_get(v, "bytes"));
        json_t *f = json_pack("{s:O,s:I,s:I}", "objects", json_object_get(v, "objects"), "weights", el, "bytes", by);
        if (el > 0) json_object_set_new(f, "bits_per_weight", json_real(bits_of((uint64_t)by, (uint64_t)el)));
        json_object_set_new(formats, key, f);
    }
    json_decref(full);
    const json_t *meta = member(a, "metadata");
    const json_t *name = meta ? json_object_get(meta, "name") : NULL;
    json_t *doc = json_pack("{s:s,s:O,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "artifact_id", id, "name",
                            json_is_string(name) ? name : json_null(), "files", (json_int_t)nf_artifact_file_count(a),
                            "file_bytes", (json_int_t)t.file_bytes, "tensors", (json_int_t)t.tensors, "resources",
                            (json_int_t)t.resources, "weights", (json_int_t)t.weights, "tensor_bytes",
                            (json_int_t)t.tensor_bytes, "resource_bytes", (json_int_t)t.resource_bytes, "json_bytes",
                            (json_int_t)nf_artifact_json_bytes(a));
    json_object_set_new(doc, "bits_per_weight",
                        json_pack("{s:f,s:f}", "artifact", bits_of(t.file_bytes, t.weights), "tensors",
                                  bits_of(t.tensor_bytes, t.weights)));
    json_object_set_new(doc, "formats", formats);
    json_object_set_new(
        doc, "provenance",
        json_pack("{s:I,s:o,s:n}", "recorded", (json_int_t)t.recorded, "methods", methods_json(a), "source_dtypes"));
    return doc;
}

static bool print_summary_only(const nf_artifact *a)
{
    artifact_sums t;
    sum_artifact(a, &t);
    print_identity(a);
    printf("files         %zu, %" PRIu64 " bytes (directory %" PRIu64 " bytes of JSON)\n", nf_artifact_file_count(a),
           t.file_bytes, nf_artifact_json_bytes(a));
    printf("objects       %" PRIu64 " tensor%s (%" PRIu64 " weights, %" PRIu64 " bytes), %" PRIu64
           " resource%s (%" PRIu64 " bytes)\n",
           t.tensors, t.tensors == 1 ? "" : "s", t.weights, t.tensor_bytes, t.resources, t.resources == 1 ? "" : "s",
           t.resource_bytes);
    if (t.weights)
        printf("bits/weight   %.3f the whole artifact (every byte of its files), %.3f its tensors\n",
               bits_of(t.file_bytes, t.weights), bits_of(t.tensor_bytes, t.weights));
    else printf("bits/weight   - (no weights)\n");
    printf("\n");
    bool ok = print_totals(a);
    printf("\nprovenance    %" PRIu64 " of %" PRIu64 " tensor%s recorded\n", t.recorded, t.tensors,
           t.tensors == 1 ? "" : "s");
    json_t *methods = methods_json(a);
    if (json_object_size(methods)) {
        nf_table m;
        nf_table_init(&m, "  ", "lrrr", (const char *[]){"method", "tensors", "weights", "bytes"});
        const char *key;
        json_t *v;
        json_object_foreach(methods, key, v)
        {
            nf_table_cell(&m, "%s", nf_cli_name(key).s);
            nf_table_cell(&m, "%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(v, "tensors")));
            nf_table_cell(&m, "%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(v, "weights")));
            nf_table_cell(&m, "%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(v, "bytes")));
        }
        ok = nf_table_print(&m, stdout) && ok;
        nf_table_free(&m);
    }
    json_decref(methods);
    /* provenance.objects holds method, parameters and source tensor names only: a count per
     * source dtype needs the checkpoint (ninfer-convert --dry-run shows each tensor's dtype) */
    printf("  source dtypes: not recorded in the directory\n");
    return ok;
}

/* ---------------------------------------------------------------- --tensor */
static nf_status collect_stats_spans(nf_artifact *a, const nf_object *o, const nf_geometry *g, value_stats *s,
                                     nf_error *err)
{
    nf_byte_reader whole;
    nf_artifact_object_reader(a, o, &whole);
    const uint64_t span = STATS_CHUNK_VALUES; /* a multiple of NF_COLSPAN_ALIGN */
    float *values = malloc((size_t)span * sizeof *values);
    if (!values) return nf_common_nomem(err);
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

static nf_status collect_stats(nf_artifact *a, const nf_object *o, const nf_geometry *g, value_stats *s, nf_error *err)
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
    nf_status st = values ? NF_OK : nf_common_nomem(err);
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

/* Report a library error about object o as "FILE: object 'ID': what": the library leaves the
 * file and the object to the caller that chose the object (docs/library.md, "Who names what"). */
static int report_object_error(const nf_cli *cli, const nf_artifact *a, const nf_object *o, nf_error *err)
{
    nf_error_prefix(err, "%s: object '%s'", nf_esc(nf_artifact_path(a)).s, nf_esc(o->id).s);
    return nf_cli_report(cli, err);
}

/* The tensor object `id` of the artifact, checked, with its geometry; or the exit status of the
 * message that says why not (no such object, a resource, a check that fails). */
static int find_tensor(const nf_cli *cli, const nf_artifact *a, const char *id, const nf_object **out, nf_geometry *g)
{
    const nf_object *o = nf_artifact_find(a, id);
    if (!o)
        return nf_cli_error(cli, NF_ERR_INVALID, "%s: no object '%s'", nf_cli_name(nf_artifact_path(a)).s,
                            nf_cli_name(id).s);
    if (o->kind != NF_OBJECT_TENSOR)
        return nf_cli_error(cli, NF_ERR_INVALID, "%s: object '%s' is a resource, not a tensor",
                            nf_cli_name(nf_artifact_path(a)).s, nf_cli_name(o->id).s);
    nf_error err;
    if (nf_artifact_check_object(a, o, g, &err) != NF_OK) return report_object_error(cli, a, o, &err);
    *out = o;
    return NF_EXIT_OK;
}

static int inspect_tensor(const nf_cli *cli, nf_artifact *a, const inspect_opts *opts)
{
    const nf_object *o;
    nf_geometry g;
    int found = find_tensor(cli, a, opts->tensor, &o, &g);
    if (found != NF_EXIT_OK) return found;
    nf_error err;
    value_stats s;
    stats_init(&s);
    if (opts->stats && collect_stats(a, o, &g, &s, &err) != NF_OK) return report_object_error(cli, a, o, &err);
    if (cli->json) {
        json_t *planes = json_array();
        for (uint32_t i = 0; i < g.nplanes; i++)
            json_array_append_new(planes,
                                  json_pack("{s:s,s:I,s:I,s:I}", "name", g.planes[i].name, "offset",
                                            (json_int_t)g.planes[i].offset, "bytes", (json_int_t)g.planes[i].bytes,
                                            "row_bytes", (json_int_t)g.planes[i].row_bytes));
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
    uint64_t g0, g1; /* groups (or blocks) covering [c0, c1) */
    uint64_t group;  /* columns per group: scale group, nvfp4 16, gguf block */
} words_view;

static json_t *row_words_json(const words_view *v, const nf_words *w, uint64_t i, json_t *doc)
{
    const nf_geometry *g = v->g;
    const uint64_t cols = g->cols;
    json_t *codes = json_array();
    switch (g->format->category) {
    case NF_CAT_DIRECT:
        for (uint64_t c = v->c0; c < v->c1; c++) {
            /* an int32 word is a two's-complement integer: its value, not its bits read unsigned */
            json_int_t word = g->format->word_bytes == 2      ? (json_int_t)w->w16[i * cols + c]
                              : g->format->id == NF_FMT_INT32 ? (json_int_t)int32_of(w->w32[i * cols + c])
                                                              : (json_int_t)w->w32[i * cols + c];
            json_array_append_new(codes, json_integer(word));
        }
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
            if (g->format->word_bytes == 2) printf(" 0x%04x", w->w16[i * cols + c]);
            else if (g->format->id == NF_FMT_INT32)
                printf(" 0x%08x (%" PRId32 ")", w->w32[i * cols + c], int32_of(w->w32[i * cols + c]));
            else printf(" 0x%08x", w->w32[i * cols + c]);
        }
        printf("\n");
        return;
    case NF_CAT_FP8_ROW: {
        char value[NF_NUM_TEXT];
        if (g->format->scale_type == NF_SCALE_BF16) nf_num_shortest_bf16(w->scales[i], value, sizeof value);
        else nf_num_shortest_f16(w->scales[i], value, sizeof value);
        printf("row %" PRIu64 ": scale 0x%04x (%s)  codes", row, w->scales[i], value);
        for (uint64_t c = v->c0; c < v->c1; c++) printf(" 0x%02x", w->codes8[i * cols + c]);
        printf("\n");
        return;
    }
    case NF_CAT_GROUPED:
    case NF_CAT_NVFP4:
        printf("row %" PRIu64 "\n", row);
        for (uint64_t k = v->g0; k < v->g1; k++) {
            uint64_t a = k * v->group > v->c0 ? k * v->group : v->c0;
            uint64_t b = (k + 1) * v->group < v->c1 ? (k + 1) * v->group : v->c1;
            if (g->format->category == NF_CAT_GROUPED) {
                uint16_t s = w->scales[i * g->logical_groups + k];
                char value[NF_NUM_TEXT];
                printf("  group %-4" PRIu64 " scale 0x%04x (%s)  codes", k, s,
                       nf_num_shortest_f16(s, value, sizeof value));
                for (uint64_t c = a; c < b; c++) printf(" %d", w->codes[i * cols + c]);
            } else {
                uint8_t s = w->scales8[i * (cols / 16) + k];
                char value[NF_NUM_TEXT]; /* E4M3FN values are exact in binary32 */
                printf("  group %-4" PRIu64 " scale 0x%02x (%s)  codes", k, s,
                       nf_num_shortest_f32(nf_e4m3fn_to_f32(s), value, sizeof value));
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
    const nf_object *o;
    nf_geometry g;
    int found = find_tensor(cli, a, opts->words, &o, &g);
    if (found != NF_EXIT_OK) return found;
    nf_error err;
    words_view v = {&g,
                    opts->rows.has_a ? opts->rows.a : 0,
                    opts->rows.has_b ? opts->rows.b : g.rows,
                    opts->cols.has_a ? opts->cols.a : 0,
                    opts->cols.has_b ? opts->cols.b : g.cols,
                    0,
                    0,
                    1};
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
                for (uint64_t k = 0; k < g.divisors; k++) {
                    char value[NF_NUM_TEXT];
                    printf(" 0x%08x (%s)", w.divisors[k],
                           nf_num_shortest_f32(nf_f32_from_bits(w.divisors[k]), value, sizeof value));
                }
                printf("\n");
            }
        }
        for (uint64_t i = 0; i < r1 - r; i++) {
            if (doc) row_words_json(&v, &w, i, doc);
            else print_row_words(&v, &w, i, r + i);
        }
    }
    nf_words_free(&w);
    if (doc) {
        if (rc == NF_EXIT_OK) rc = nf_cli_print_json(cli, doc);
        json_decref(doc);
    }
    return rc;
}


/* ---------------------------------------------------------------- entry */
int inspect_artifact(const nf_cli *cli, const char *path, const inspect_opts *opts)
{
    nf_artifact *a = NULL;
    nf_error err;
    if (nf_artifact_open(path, NF_READ_PREAD, &a, &err) != NF_OK) return nf_cli_report(cli, &err);
    int rc;
    if (opts->provenance) {
        rc = inspect_provenance(cli, a, path);
    } else if (opts->tensor) {
        rc = inspect_tensor(cli, a, opts);
    } else if (opts->words) {
        rc = inspect_words(cli, a, opts);
    } else if (opts->summary && cli->json) {
        json_t *doc = summary_only_json(a);
        rc = nf_cli_print_json(cli, doc);
        json_decref(doc);
    } else if (opts->summary) {
        rc = print_summary_only(a) ? NF_EXIT_OK : nf_cli_error(cli, NF_ERR_NOMEM, "out of memory for a table");
    } else if (cli->json) {
        json_t *doc = summary_json(a, opts);
        rc = nf_cli_print_json(cli, doc);
        json_decref(doc);
    } else {
        rc = print_summary(a, opts) ? NF_EXIT_OK : nf_cli_error(cli, NF_ERR_NOMEM, "out of memory for a table");
    }
    nf_artifact_close(a);
    return rc;
}
