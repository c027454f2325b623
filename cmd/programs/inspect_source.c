/* ninfer-inspect on a source checkpoint: its files, metadata (safetensors __metadata__, GGUF
 * key/values), companions and tensors, and one tensor with its statistics (--tensor [--stats]). */
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

#include "common/utf8.h"

#include "cli.h"
#include "inspect.h"
#include "numtext.h"
#include "table.h"

/* ---------------------------------------------------------------- checkpoints
 * FILE may also be a source checkpoint (docs/ninfer-inspect.md, "Checkpoints"): a .safetensors file, a sharded
 * *.safetensors.index.json, a checkpoint directory or a GGUF file, opened with the library's
 * source reader.  Only headers are parsed; tensor data is read for --tensor --stats alone. */

enum {
    TEXT_BUF = 4 * 4096 + 16, /* a displayed path or name: each byte shows as at most 4 */
    KV_TEXT_CHARS = 60,       /* a GGUF string value shown in the summary */
    KV_ELEM_CHARS = 24,       /* a string element of a GGUF array */
    KV_ELEMS_SHOWN = 8,       /* elements of a GGUF array shown in the summary */
    KV_JSON_MAX = 64,         /* elements of a GGUF array in --json */
    META_TEXT_CHARS = 100     /* a safetensors __metadata__ value in the summary */
};

/* obj[key] = value (stolen), the key made valid UTF-8 first. */
static void json_set_key(json_t *obj, const char *key, json_t *value)
{
    size_t len = strlen(key);
    if (nf_utf8_valid((const uint8_t *)key, len, NULL)) {
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
            k = nf_utf8_decode(p + i, len - i, NULL);
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
    return nf_source_kind_of(s) == NF_SOURCE_GGUF    ? "gguf"
           : nf_source_kind_of(s) == NF_SOURCE_TORCH ? "pytorch"
                                                     : "safetensors";
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

/* The shortest decimal that reads back as the same binary32 (`single`) or binary64 value
 * (numtext.h), so that an f32 KV holding 0.02f shows as 0.02 rather than its exact widening
 * 0.0199999995.... */
static void shortest_real(double v, bool single, char *buf, size_t size)
{
    if (single) nf_num_shortest_f32((float)v, buf, size);
    else nf_num_shortest_f64(v, buf, size);
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
        json_array_append_new(files, json_pack("{s:o,s:I}", "path", nf_cli_json_cstr(nf_source_file_path(s, i)),
                                               "bytes", (json_int_t)nf_source_file_size(s, i)));
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

/* ---- quantized weights (docs/dialects.md) */
static json_t *qweight_json(const nf_qweight *q)
{
    char what[256];
    nf_qweight_describe(q, what, sizeof what);
    json_t *comps = json_array();
    const nf_source_tensor *c[NF_QWEIGHT_MAX_READS + 2];
    size_t n = nf_qweight_companions(q, c);
    for (size_t i = 0; i < 2; i++)
        if (q->activation[i]) c[n++] = q->activation[i];
    for (size_t i = 0; i < n; i++) json_array_append_new(comps, nf_cli_json_cstr(c[i]->name));
    return json_pack("{s:o,s:s,s:s,s:s,s:o,s:o}", "name", nf_cli_json_cstr(q->codes->name), "dialect",
                     nf_dialect_name(q->dialect), "strategy", q->strategy, "description", what, "shape",
                     dims_json(q->shape, 2), "companions", comps);
}

static json_t *quantized_json(const nf_dialects *d)
{
    json_t *weights = json_array();
    for (size_t i = 0; i < nf_dialects_weight_count(d); i++)
        json_array_append_new(weights, qweight_json(nf_dialects_weight_at(d, i)));
    const char *decl = nf_dialects_declared(d);
    return json_pack("{s:o,s:o}", "declared", decl ? json_string(decl) : json_null(), "weights", weights);
}

static void print_quantized(const nf_dialects *d)
{
    size_t n = nf_dialects_weight_count(d);
    const char *decl = nf_dialects_declared(d);
    printf("quantized weights (%zu)%s%s\n", n, decl ? ", declared by " : "", decl ? decl : "");
    static char name[TEXT_BUF];
    int width = 4;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(display_cstr(nf_dialects_weight_at(d, i)->codes->name, name, sizeof name));
        if (len > (size_t)width) width = len > 60 ? 60 : (int)len;
    }
    if (n) printf("  %-*s %-20s %s\n", width, "name", "shape", "dialect");
    for (size_t i = 0; i < n; i++) {
        const nf_qweight *q = nf_dialects_weight_at(d, i);
        char shape[64], what[256];
        dims_text(q->shape, 2, false, shape, sizeof shape);
        nf_qweight_describe(q, what, sizeof what);
        printf("  %-*s %-20s %s\n", width, display_cstr(q->codes->name, name, sizeof name), shape, what);
    }
}

static json_t *source_json(const nf_source *s, const nf_dialects *d, const inspect_opts *o)
{
    json_t *doc = json_object();
    json_object_set_new(doc, "kind", json_string(source_kind_name(s)));
    json_object_set_new(doc, "path", nf_cli_json_cstr(nf_source_path(s)));
    if (nf_source_kind_of(s) != NF_SOURCE_GGUF) {
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
    if (d) json_object_set_new(doc, "quantized", quantized_json(d));
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

static bool print_source_files(const nf_source *s)
{
    char path[TEXT_BUF];
    printf("files (%zu)\n", nf_source_file_count(s));
    nf_table t;
    nf_table_init(&t, "  ", "llr", (const char *[]){"#", "path", "bytes"});
    for (size_t i = 0; i < nf_source_file_count(s); i++) {
        nf_table_cell(&t, "%zu", i);
        nf_table_cell(&t, "%s", display_cstr(nf_source_file_path(s, i), path, sizeof path));
        nf_table_cell(&t, "%" PRIu64, nf_source_file_size(s, i));
    }
    bool ok = nf_table_print(&t, stdout);
    nf_table_free(&t);
    return ok;
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
    json_object_foreach(meta, key, v)
    {
        size_t len = strlen(key);
        if (len > (size_t)width) width = len > 48 ? 48 : (int)len;
    }
    printf("metadata (%zu)\n", json_object_size(meta));
    json_object_foreach(meta, key, v)
    {
        char k[4 * 96 + 16], value[4 * META_TEXT_CHARS + 16];
        printf("  %-*s  %s\n", width, display_text(key, strlen(key), 96, false, k, sizeof k),
               display_text(json_string_value(v), json_string_length(v), META_TEXT_CHARS, false, value, sizeof value));
    }
    json_decref(meta);
}

/* Both tables size their columns from the cells (table.h): names, dtypes (a GGUF's IQ2_XXS) and
 * shapes have no fixed bound. */
static bool print_source_tensors(const nf_source *s)
{
    size_t n = nf_source_tensor_count(s);
    bool sharded = nf_source_file_count(s) > 1;
    static char name[TEXT_BUF];
    printf("tensors (%zu)\n", n);
    nf_table t;
    if (sharded)
        nf_table_init(&t, "  ", "lllrrr", (const char *[]){"name", "dtype", "shape", "file", "offset", "bytes"});
    else nf_table_init(&t, "  ", "lllrr", (const char *[]){"name", "dtype", "shape", "offset", "bytes"});
    for (size_t i = 0; i < n; i++) {
        const nf_source_tensor *te = nf_source_tensor_at(s, i);
        char shape[160];
        dims_text(te->shape, te->rank, false, shape, sizeof shape);
        nf_table_cell(&t, "%s", display_cstr(te->name, name, sizeof name));
        nf_table_cell(&t, "%s", te->type_name);
        nf_table_cell(&t, "%s", shape);
        if (sharded) nf_table_cell(&t, "%zu", te->file);
        nf_table_cell(&t, "%" PRIu64, te->offset);
        nf_table_cell(&t, "%" PRIu64, te->bytes);
    }
    bool ok = nf_table_print(&t, stdout);
    nf_table_free(&t);
    return ok;
}

static bool print_source_totals(const nf_source *s)
{
    json_t *totals = source_totals_json(s);
    json_int_t n = json_integer_value(json_object_get(totals, "tensors"));
    printf("totals        %" JSON_INTEGER_FORMAT " tensor%s, %" JSON_INTEGER_FORMAT " elements, %" JSON_INTEGER_FORMAT
           " bytes\n",
           n, n == 1 ? "" : "s", json_integer_value(json_object_get(totals, "elements")),
           json_integer_value(json_object_get(totals, "bytes")));
    nf_table t;
    nf_table_init(&t, "  ", "lrrrr", (const char *[]){"dtype", "tensors", "elements", "bytes", "bits/w"});
    const char *key;
    json_t *d;
    json_object_foreach(json_object_get(totals, "dtypes"), key, d)
    {
        json_int_t el = json_integer_value(json_object_get(d, "elements"));
        json_int_t by = json_integer_value(json_object_get(d, "bytes"));
        nf_table_cell(&t, "%s", key);
        nf_table_cell(&t, "%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(d, "tensors")));
        nf_table_cell(&t, "%" JSON_INTEGER_FORMAT, el);
        nf_table_cell(&t, "%" JSON_INTEGER_FORMAT, by);
        if (el > 0) nf_table_cell(&t, "%.3f", (double)by * 8.0 / (double)el);
        else nf_table_cell(&t, "-");
    }
    bool ok = nf_table_print(&t, stdout);
    nf_table_free(&t);
    json_decref(totals);
    return ok;
}

/* false when a table could not be held (out of memory) */
static bool print_source_summary(const nf_source *s, const nf_dialects *d, const inspect_opts *o)
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
    bool files_ok = print_source_files(s);
    if (o->files || !files_ok) return files_ok;
    printf("\n");
    print_source_metadata(s);
    printf("\n");
    if (nf_source_kind_of(s) != NF_SOURCE_GGUF) {
        size_t n = nf_source_companion_count(s);
        printf("companions (%zu)\n", n);
        for (size_t i = 0; i < n; i++) {
            const char *name = NULL;
            const char *p = nf_source_companion_at(s, i, &name);
            if (p && name) printf("  %-26s %s\n", name, display_cstr(p, path, sizeof path));
        }
        printf("\n");
    }
    bool ok = print_source_tensors(s);
    printf("\n");
    if (d && (nf_dialects_weight_count(d) || nf_dialects_declared(d))) {
        print_quantized(d);
        printf("\n");
    }
    return print_source_totals(s) && ok;
}

/* ---- --tensor NAME */
/* Statistics of a tensor's values, read as binary32 in chunks of about a million values: whole
 * rows, or spans of a row longer than that (nf_source_read_f32_span). */
/* A quantized weight's values (its dialect's, docs/dialects.md), a chunk of rows at a time. */
static nf_status collect_qweight_stats(const nf_source *s, const nf_qweight *q, value_stats *vs, nf_error *err)
{
    stats_init(vs);
    uint64_t cols = q->shape[1], chunk = STATS_CHUNK_VALUES / cols ? STATS_CHUNK_VALUES / cols : 1;
    /* chunk * cols <= max(STATS_CHUNK_VALUES, cols): a row longer than memory fails the malloc */
    if (cols > SIZE_MAX / sizeof(float))
        return nf_error_set(err, NF_ERR_NOMEM, "tensor '%s': rows too long", nf_esc(q->codes->name).s);
    size_t len = (size_t)(chunk * cols);
    float *values = malloc(len * sizeof *values);
    if (!values) return nf_error_set(err, NF_ERR_NOMEM, "tensor '%s': out of memory", nf_esc(q->codes->name).s);
    nf_status st = NF_OK;
    for (uint64_t r = 0; st == NF_OK && r < q->shape[0]; r += chunk) {
        uint64_t r1 = r + chunk < q->shape[0] ? r + chunk : q->shape[0];
        st = nf_qweight_read_f32(s, q, r, r1, values, len, err);
        if (st == NF_OK) stats_add(vs, values, (r1 - r) * cols);
    }
    free(values);
    return st;
}

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

static int inspect_source_tensor(const nf_cli *cli, const nf_source *s, const nf_dialects *d, const inspect_opts *opts)
{
    const nf_source_tensor *t = nf_source_find(s, opts->tensor);
    if (!t)
        return nf_cli_error(cli, NF_ERR_INVALID, "%s: no tensor '%s'", nf_cli_name(nf_source_path(s)).s,
                            nf_cli_name(opts->tensor).s);
    bool gguf = nf_source_kind_of(s) == NF_SOURCE_GGUF;
    const nf_qweight *q = NULL;
    nf_qrole role = nf_dialects_role(d, t, &q);
    value_stats vs;
    stats_init(&vs);
    if (opts->stats && role == NF_QROLE_WEIGHT) {
        nf_error err;
        if (collect_qweight_stats(s, q, &vs, &err) != NF_OK) return nf_cli_report(cli, &err);
    } else if (opts->stats) {
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
        json_t *doc = json_pack("{s:o,s:s,s:o,s:I,s:I,s:I,s:I,s:f,s:o,s:I,s:b}", "name", nf_cli_json_cstr(t->name),
                                "dtype", t->type_name, "shape", dims_json(t->shape, t->rank), "elements",
                                (json_int_t)t->elements, "rows", (json_int_t)t->rows, "cols",
                                (json_int_t)t->row_elements, "bytes", (json_int_t)t->bytes, "bits_per_weight",
                                source_bits_per_weight(t), "file", nf_cli_json_cstr(file), "offset",
                                (json_int_t)t->offset, "convertible", t->convertible);
        if (gguf) {
            uint64_t ne[NF_GGUF_MAX_DIMS];
            for (uint32_t i = 0; i < t->rank && i < NF_GGUF_MAX_DIMS; i++) ne[i] = t->shape[t->rank - 1 - i];
            json_object_set_new(doc, "ggml_type", json_integer(t->ggml_type));
            json_object_set_new(doc, "ne", dims_json(ne, t->rank < NF_GGUF_MAX_DIMS ? t->rank : NF_GGUF_MAX_DIMS));
            json_object_set_new(doc, "block_values", json_integer((json_int_t)t->block_values));
            json_object_set_new(doc, "block_bytes", json_integer((json_int_t)t->block_bytes));
        }
        if (role == NF_QROLE_WEIGHT) json_object_set_new(doc, "quantized", qweight_json(q));
        else if (q) json_object_set_new(doc, "companion_of", nf_cli_json_cstr(q->codes->name));
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
    if (role == NF_QROLE_WEIGHT) {
        char what[256];
        nf_qweight_describe(q, what, sizeof what);
        dims_text(q->shape, 2, false, shape, sizeof shape);
        printf("quantized     %s; the weight %s%s\n", what, shape, opts->stats ? " (statistics of its values)" : "");
    } else if (q) {
        printf("companion of  %s\n", display_cstr(q->codes->name, name, sizeof name));
    }
    if (opts->stats) print_stats(&vs);
    return NF_EXIT_OK;
}


/* The views that exist only for artifacts. */
static int source_usage(const nf_cli *cli, const inspect_opts *o, const char *path)
{
    if (o->words)
        return nf_cli_usage(cli,
                            "--words prints the stored words of a .ninfer object, and %s is a checkpoint, not "
                            "an artifact: use --tensor NAME [--stats] to look at one of its tensors",
                            nf_cli_name(path).s);
    if (o->objects)
        return nf_cli_usage(cli,
                            "--objects lists the objects of a .ninfer artifact, and %s is a checkpoint: its "
                            "tensors are listed by the summary (or one by --tensor NAME)",
                            nf_cli_name(path).s);
    if (o->bindings)
        return nf_cli_usage(cli,
                            "--bindings lists the bindings of a .ninfer artifact, and %s is a checkpoint, "
                            "which has none",
                            nf_cli_name(path).s);
    if (o->summary)
        return nf_cli_usage(cli,
                            "--summary totals the objects of a .ninfer artifact, and %s is a checkpoint: its "
                            "summary ends with the totals per dtype",
                            nf_cli_name(path).s);
    if (o->uses)
        return nf_cli_usage(cli,
                            "--uses lists the uses of a .ninfer artifact, and %s is a checkpoint, which has "
                            "none",
                            nf_cli_name(path).s);
    return NF_EXIT_OK;
}

int inspect_source(const nf_cli *cli, const char *path, nf_cli_input kind, const inspect_opts *opts)
{
    int rc = kind == NF_INPUT_CHECKPOINT ? source_usage(cli, opts, path) : NF_EXIT_OK;
    if (rc != NF_EXIT_OK) return rc;
    nf_source *s = NULL;
    nf_error err;
    if (nf_source_open(path, &s, &err) != NF_OK) {
        size_t len = strlen(path);
        if (err.status == NF_ERR_INVALID && kind == NF_INPUT_CHECKPOINT && len > 7 &&
            strcmp(path + len - 7, ".ninfer") == 0)
            nf_error_prefix(&err, "%s: no NINFER\\0\\3 magic, so read as a checkpoint", nf_esc(path).s);
        return nf_cli_report(cli, &err);
    }
    if (kind != NF_INPUT_CHECKPOINT) rc = source_usage(cli, opts, path);
    /* its quantized weights (docs/dialects.md): a declaration or weight that is not what its
     * dialect says is reported after the views that do not need it (exit 1) */
    nf_dialects *d = NULL;
    nf_error derr;
    bool scanned = rc == NF_EXIT_OK && nf_dialects_scan(s, &d, &derr) == NF_OK;
    if (rc == NF_EXIT_OK && opts->tensor) {
        rc = scanned ? inspect_source_tensor(cli, s, d, opts) : nf_cli_report(cli, &derr);
    } else if (rc == NF_EXIT_OK && cli->json) {
        json_t *doc = source_json(s, d, opts);
        rc = nf_cli_print_json(cli, doc);
        json_decref(doc);
    } else if (rc == NF_EXIT_OK && !print_source_summary(s, d, opts)) {
        rc = nf_cli_error(cli, NF_ERR_NOMEM, "out of memory for a table");
    }
    if (rc == NF_EXIT_OK && !scanned && !opts->files) rc = nf_cli_report(cli, &derr);
    nf_dialects_free(d);
    nf_source_close(s);
    return rc;
}
