/* ninfer-diff: what differs between two inputs (docs/ninfer-diff.md).  Two artifacts are compared
 * object by object (matched by id): records, stored bytes in bounded chunks, and where words
 * differ the decoded values; with a checkpoint on either side (safetensors, a quantized dialect,
 * GGUF, PyTorch) the values of each pair of tensors, paired by name or through llama.cpp's names
 * (diff_pair.c).  The values are compared with the library's decoders and its error statistics
 * (stats/stats.h, the figures of ninfer-convert's report), so the numbers mean what they mean
 * everywhere else. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "common/pool.h"
#include "diff.h"
#include "report_page.h"

typedef struct diff_opts {
    unsigned threads; /* 0: every core */
    bool csv;
    const char *arch;
    const char *imatrix;
    const char *html;
} diff_opts;

static const nf_option options[] = {
    NF_OPT_UINT_ROW(diff_opts, threads, 1, NF_CLI_MAX_THREADS, NULL, "threads", 'j', "N",
                    "compare on N threads (default: every core); the output is the same for any N"),
    NF_OPT_FLAG_ROW(diff_opts, csv, "csv", 0, "print one CSV row per pair of tensors (every pair, changed or not)"),
    NF_OPT_STRING_ROW(diff_opts, arch, "arch", 0, "NAME",
                      "the architecture of llama.cpp's names (docs/names.md), when neither side says it"),
    NF_OPT_STRING_ROW(diff_opts, imatrix, "imatrix", 0, "FILE",
                      "an importance matrix (llama-imatrix): also the importance-weighted squared error"),
    NF_OPT_STRING_ROW(diff_opts, html, "html", 0, "OUT.html",
                      "also write the report page of every pair (docs/ninfer-inspect.md; '-': standard output)"),
    NF_OPT_END,
};

static const nf_program program = {
    "ninfer-diff",
    "ninfer-diff A B [--json | --csv] [--html OUT.html] [--imatrix FILE] [--arch NAME] [--threads N] [-q]",
    "Compare two inputs, each an artifact or a checkpoint (a safetensors file or directory, a\n"
    "sharded index, a quantized checkpoint of a dialect ninfer-convert reads, a .gguf file, a\n"
    "PyTorch file).  Two artifacts are compared object by object (matched by id): objects added\n"
    "and removed, changed kind, format, layout and shape, whether the stored words are equal, and\n"
    "where they are not the error statistics of B's decoded values against A's; the directory's\n"
    "other members and the artifact id key by key.  With a checkpoint on either side, the values\n"
    "of each pair of tensors are compared, the checkpoint as the reference (B when both are):\n"
    "tensors are paired by name, or, when one side carries llama.cpp's GGUF names and the other\n"
    "Hugging Face's, through the name table of docs/names.md (a stacked experts tensor against\n"
    "each expert's matrix, q/k rows in llama.cpp's order); names the table does not hold are listed\n"
    "as unmapped.  Each pair: bits per weight of each side, max |A - B|, RMSE, SNR in dB, and the\n"
    "importance-weighted error with --imatrix.  --html writes every pair as ninfer-inspect's report\n"
    "page (a heatmap of the error per layer and role, bits per weight per layer, a sortable table).",
    options,
    "  ninfer-diff a.ninfer b.ninfer              # exit 0 when the same, 1 when not\n"
    "  ninfer-diff q8.ninfer q4.ninfer --json > diff.json\n"
    "  ninfer-diff model.ninfer ./MyModel         # every tensor against its source tensor\n"
    "  ninfer-diff model-Q4_K_M.gguf ./MyModel --csv > q4km.csv\n"
    "  ninfer-diff ./MyModel-GPTQ ./MyModel --imatrix imatrix.gguf --html gptq.html\n"
    "  ninfer diff -q a.ninfer b.ninfer && echo same\n",
    /* like cmp and diff: 1 is "different"; an invalid input is 1 too, as in every program
     * (docs/decisions.md, "Exit statuses"), told apart by its error on stderr and no summary */
    "0 same, 1 different (or an invalid input: an error on stderr), 2 usage error, 3 system error",
};

/* ---------------------------------------------------------------- inputs */
/* Each input told apart by content, as ninfer-inspect does (cli.h, nf_cli_input_kind): an
 * artifact, a checkpoint, or what is not a file of ours (exit 3); a path that cannot be examined
 * is left to the artifact reader, whose message names it. */
static nf_status open_side(diff_side *sd, nf_error *err)
{
    nf_cli_input kind = nf_cli_input_kind(sd->path, err);
    if (kind == NF_INPUT_NOT_A_FILE) return err->status;
    if (kind != NF_INPUT_CHECKPOINT) return nf_artifact_open(sd->path, NF_READ_PREAD, &sd->art, err);
    NF_TRY(nf_source_open(sd->path, &sd->src, err));
    return nf_dialects_scan(sd->src, &sd->dialects, err);
}

/* ---------------------------------------------------------------- the directory */
static nf_status add_key(diff_run *r, const char *path, json_t *keys, const char *change)
{
    if (r->nkeys == r->keys_cap) {
        size_t cap = r->keys_cap ? 2 * r->keys_cap : 16;
        diff_key *k = cap > SIZE_MAX / sizeof *k ? NULL : realloc(r->keys, cap * sizeof *k);
        if (!k) {
            json_decref(keys);
            return NF_ERR_NOMEM;
        }
        r->keys = k;
        r->keys_cap = cap;
    }
    char *p = strdup(path);
    if (!p || !keys) {
        free(p);
        json_decref(keys);
        return NF_ERR_NOMEM;
    }
    r->keys[r->nkeys++] = (diff_key){p, keys, change};
    return NF_OK;
}

/* The path of a key below `path` for people: the first key below a member with a dot
 * (provenance.objects, metadata.checksums), deeper ones and names (bindings, components) in
 * brackets, each escaped. */
static char *key_path(const char *path, const char *key, bool bracket)
{
    nf_cli_text k = nf_cli_name(key);
    size_t n = strlen(path) + strlen(k.s) + 3;
    char *s = malloc(n);
    if (s) snprintf(s, n, bracket ? "%s[%s]" : "%s.%s", path, k.s);
    return s;
}

/* Members and keys that differ between two JSON values at `path`: recursing into objects
 * present on both sides down to `depth` more levels, then reporting the whole value as changed
 * (the point is which keys differ, not a full JSON diff). */
static nf_status diff_json(diff_run *r, const char *path, json_t *keys, const json_t *x, const json_t *y, int depth,
                           bool bracket)
{
    if (json_equal((json_t *)x, (json_t *)y)) return NF_OK;
    if (depth == 0 || !json_is_object(x) || !json_is_object(y))
        return add_key(r, path, json_deep_copy(keys), "changed");
    const char *k;
    json_t *v;
    nf_status st = NF_OK;
    json_object_foreach((json_t *)x, k, v)
    {
        json_t *w = json_object_get(y, k);
        char *sub = key_path(path, k, bracket);
        json_t *subkeys = json_deep_copy(keys);
        if (!sub || !subkeys || json_array_append_new(subkeys, json_string(k)) != 0) st = NF_ERR_NOMEM;
        else if (!w) st = add_key(r, sub, json_incref(subkeys), "removed");
        else st = diff_json(r, sub, subkeys, v, w, depth - 1, true);
        free(sub);
        json_decref(subkeys);
        if (st != NF_OK) return st;
    }
    json_object_foreach((json_t *)y, k, v)
    {
        if (json_object_get(x, k)) continue;
        char *sub = key_path(path, k, bracket);
        json_t *subkeys = json_deep_copy(keys);
        if (!sub || !subkeys || json_array_append_new(subkeys, json_string(k)) != 0) st = NF_ERR_NOMEM;
        else st = add_key(r, sub, json_incref(subkeys), "added");
        free(sub);
        json_decref(subkeys);
        if (st != NF_OK) return st;
    }
    return NF_OK;
}

/* The root members but `objects` (compared object by object), and the artifact id of the
 * header.  metadata and provenance are open objects that may be absent: absent is {}. */
static nf_status diff_directory(diff_run *r, nf_error *err)
{
    static const char *const members[] = {"components", "bindings", "uses", "files", "metadata", "provenance"};
    const json_t *da = nf_artifact_directory(r->side[0].art), *db = nf_artifact_directory(r->side[1].art);
    nf_status st = NF_OK;
    char ida[33], idb[33];
    nf_artifact_id_hex(r->side[0].art, ida);
    nf_artifact_id_hex(r->side[1].art, idb);
    if (strcmp(ida, idb) != 0) st = add_key(r, "artifact_id", json_pack("[s]", "artifact_id"), "changed");
    json_t *empty = json_object();
    if (!empty) st = NF_ERR_NOMEM;
    for (size_t i = 0; st == NF_OK && i < sizeof members / sizeof members[0]; i++) {
        const json_t *x = json_object_get(da, members[i]), *y = json_object_get(db, members[i]);
        bool open = i >= 4; /* metadata and provenance: the open objects of the schema */
        if (open) {
            if (!x) x = empty;
            if (!y) y = empty;
        }
        json_t *keys = json_pack("[s]", members[i]);
        if (!keys) st = NF_ERR_NOMEM;
        /* bindings and components are keyed by names: one level, in brackets; metadata and
         * provenance by schema keys, then ids (provenance.objects[ID]): two levels */
        else st = diff_json(r, members[i], keys, x, y, open ? 2 : 1, !open);
        json_decref(keys);
    }
    json_decref(empty);
    if (st != NF_OK) return nf_error_set(err, st, "out of memory");
    return NF_OK;
}

/* ---------------------------------------------------------------- output */
static double object_elements(const nf_object *o)
{
    double n = 1;
    for (uint32_t i = 0; i < o->rank; i++) n *= (double)o->shape[i];
    return n;
}

/* Bits per weight of an end as stored: an object's bytes, a tensor's, or a quantized weight's
 * codes with its scales, global scale, zero points, group indices and biases; NaN when not a
 * tensor.  A stack's matrix has the stack's figure. */
static double end_bpw(const diff_end *e)
{
    if (e->o) return e->o->kind == NF_OBJECT_TENSOR ? (double)e->o->bytes * 8.0 / object_elements(e->o) : NAN;
    if (!e->t) return NAN;
    if (!e->q) return e->t->elements ? (double)e->t->bytes * 8.0 / (double)e->t->elements : NAN;
    const nf_source_tensor *parts[] = {e->q->codes,      e->q->scale,         e->q->global,
                                       e->q->zero_point, e->q->g_idx,         e->q->biases,
                                       e->q->quant_map,  e->q->nested_absmax, e->q->nested_quant_map};
    double bytes = 0, n = (double)e->q->shape[0] * (double)e->q->shape[1];
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (parts[i]) bytes += (double)parts[i]->bytes;
    return n > 0 ? bytes * 8.0 / n : NAN;
}

static const char *end_format(const diff_end *e)
{
    if (e->o) return e->o->kind == NF_OBJECT_TENSOR ? e->o->format_name : NULL;
    if (e->q) return nf_dialect_name(e->q->dialect);
    return e->t ? e->t->type_name : NULL;
}

static const char *pair_name(const diff_pair *p) { return p->label ? p->label : p->id; }

/* "format q8_g32_fp16 -> q4_g64_fp16, words" */
static void change_text(const diff_pair *p, char *out, size_t n)
{
    size_t k = 0;
    out[0] = '\0';
#define APPEND(...)                                                            \
    do {                                                                       \
        if (k < n) k += (size_t)snprintf(out + k, n - k, "%s", k ? ", " : ""); \
        if (k < n) k += (size_t)snprintf(out + k, n - k, __VA_ARGS__);         \
    } while (0)
    if (p->changes & DIFF_ADDED) APPEND("only in B");
    if (p->changes & DIFF_REMOVED) APPEND("only in A");
    if (p->unmapped) APPEND("unmapped: %s", nf_cli_line(p->unmapped).s);
    if (p->changes & DIFF_KIND) APPEND("kind");
    if (p->changes & DIFF_FORMAT)
        APPEND("format %s -> %s", nf_cli_name(p->e[0].o->format_name).s, nf_cli_name(p->e[1].o->format_name).s);
    if (p->changes & DIFF_LAYOUT)
        APPEND("layout %s -> %s", nf_cli_name(p->e[0].o->layout_name).s, nf_cli_name(p->e[1].o->layout_name).s);
    if (p->changes & DIFF_SHAPE) {
        char sa[256], sb[256];
        diff_shape_text(&p->e[0], sa, sizeof sa);
        diff_shape_text(&p->e[1], sb, sizeof sb);
        APPEND("shape %s -> %s", sa, sb);
    }
    if (p->changes & DIFF_WORDS) APPEND("words");
    if (p->changes & DIFF_VALUES) APPEND("values");
    if (p->no_stats && !(p->changes & (DIFF_ADDED | DIFF_REMOVED))) APPEND("no statistics: %s", p->no_stats);
#undef APPEND
}

static void snr_text(const nf_errstats_summary *s, char *out, size_t n)
{
    if (s->sse == 0) snprintf(out, n, "exact");
    else if (s->snr_db != s->snr_db) snprintf(out, n, "-");
    else snprintf(out, n, "%.1f", s->snr_db);
}

static void bpw_text(double v, char *out, size_t n)
{
    if (v == v) snprintf(out, n, "%.3f", v);
    else snprintf(out, n, "-");
}

typedef struct diff_counts {
    size_t changed, added, removed, unmapped;
} diff_counts;

static void print_human(const diff_run *r, const diff_counts *c)
{
    bool weighted = r->imatrix != NULL;
    if (c->changed + c->added + c->removed) {
        printf("%-44s %-40s %12s %12s %8s %7s %7s%s\n", "object", "change", "max_abs", "rmse", "snr_db", "bpw_a",
               "bpw_b", weighted ? "   weighted_error" : "");
        for (size_t i = 0; i < r->npairs; i++) {
            const diff_pair *p = &r->pairs[i];
            if (!p->changes) continue;
            char what[2048], ba[32], bb[32], w[40] = "";
            change_text(p, what, sizeof what);
            bpw_text(p->e[0].name ? end_bpw(&p->e[0]) : NAN, ba, sizeof ba);
            bpw_text(p->e[1].name ? end_bpw(&p->e[1]) : NAN, bb, sizeof bb);
            if (weighted) snprintf(w, sizeof w, " %16s", "-");
            if (weighted && p->have_sum && p->weights) snprintf(w, sizeof w, " %16.6g", p->sum.wse);
            if (p->have_sum && p->sum.count) {
                char snr[32];
                snr_text(&p->sum, snr, sizeof snr);
                printf("%-44s %-40s %12.3g %12.3g %8s %7s %7s%s\n", nf_cli_name(pair_name(p)).s, what, p->sum.max_abs,
                       p->sum.rmse, snr, ba, bb, w);
            } else {
                printf("%-44s %-40s %12s %12s %8s %7s %7s%s\n", nf_cli_name(pair_name(p)).s, what, "-", "-", "-", ba,
                       bb, w);
            }
        }
    }
    for (size_t i = 0; i < r->nkeys; i++) printf("directory %s: %s\n", r->keys[i].path, r->keys[i].change);
    size_t compared = r->npairs - c->added - c->removed - r->not_compared;
    char tail[128] = "";
    size_t k = 0;
    if (r->not_compared)
        k += (size_t)snprintf(tail + k, sizeof tail - k, "; %zu resource%s not compared", r->not_compared,
                              r->not_compared == 1 ? "" : "s");
    if (c->unmapped)
        snprintf(tail + k, sizeof tail - k, "; %zu name%s unmapped", c->unmapped, c->unmapped == 1 ? "" : "s");
    nf_cli_text a = nf_cli_name(r->side[0].path), b = nf_cli_name(r->side[1].path);
    if (c->changed + c->added + c->removed + r->nkeys == 0) {
        printf("%s and %s: same (%zu object%s compared%s)\n", a.s, b.s, compared, compared == 1 ? "" : "s", tail);
        return;
    }
    printf("%s and %s: different: %zu object%s changed, %zu only in A, %zu only in B, %zu directory key%s "
           "differ%s (%zu object%s compared%s)\n",
           a.s, b.s, c->changed, c->changed == 1 ? "" : "s", c->removed, c->added, r->nkeys, r->nkeys == 1 ? "" : "s",
           r->nkeys == 1 ? "s" : "", compared, compared == 1 ? "" : "s", tail);
}

/* A JSON number, or null for what is undefined (JSON has no NaN). */
static json_t *num(double v) { return v == v ? json_real(v) : json_null(); }

/* The changes' names in the JSON and the CSV, in this order. */
static const struct {
    unsigned bit;
    const char *name;
} change_names[] = {{DIFF_ADDED, "only_in_b"}, {DIFF_REMOVED, "only_in_a"}, {DIFF_KIND, "kind"},
                    {DIFF_FORMAT, "format"},   {DIFF_LAYOUT, "layout"},     {DIFF_SHAPE, "shape"},
                    {DIFF_WORDS, "words"},     {DIFF_VALUES, "values"}};
#define NCHANGE_NAMES (sizeof change_names / sizeof change_names[0])

static json_t *pair_json(const diff_run *r, const diff_pair *p)
{
    json_t *changes = json_array();
    for (size_t i = 0; changes && i < NCHANGE_NAMES; i++)
        if (p->changes & change_names[i].bit) json_array_append_new(changes, json_string(change_names[i].name));
    json_t *j = json_pack("{s:o,s:o}", "id", nf_cli_json_cstr(p->id), "changes", changes);
    if (!j) return NULL;
    if (p->e[1].name && p->e[0].name && strcmp(p->e[0].name, p->e[1].name) != 0)
        json_object_set_new(j, "id_b", nf_cli_json_cstr(p->e[1].name));
    if (p->expert >= 0) json_object_set_new(j, "expert", json_integer(p->expert));
    for (int k = 0; k < 2; k++) {
        const diff_end *e = &p->e[k];
        if (!e->name || (e->o && e->o->kind != NF_OBJECT_TENSOR)) continue;
        json_object_set_new(j, k ? "format_b" : "format_a", nf_cli_json_cstr(end_format(e)));
        if (e->o) json_object_set_new(j, k ? "layout_b" : "layout_a", nf_cli_json_cstr(e->o->layout_name));
        if (!r->artifacts) json_object_set_new(j, k ? "bits_per_weight_b" : "bits_per_weight_a", num(end_bpw(e)));
    }
    if (p->unmapped) json_object_set_new(j, "unmapped", nf_cli_json_cstr(p->unmapped));
    if (p->no_stats && !(p->changes & (DIFF_ADDED | DIFF_REMOVED)))
        json_object_set_new(j, "no_statistics", json_string(p->no_stats));
    if (p->have_sum) {
        const nf_errstats_summary *s = &p->sum;
        json_t *st = json_pack("{s:I,s:I,s:o,s:o,s:o}", "count", (json_int_t)s->count, "skipped",
                               (json_int_t)s->skipped, "max_abs", num(s->max_abs), "rmse", num(s->rmse), "snr_db",
                               s->sse == 0 && s->count ? json_string("exact") : num(s->snr_db));
        if (st && p->weights) {
            json_object_set_new(st, "weighted_error", num(s->wse));
            json_object_set_new(st, "imatrix_entry", nf_cli_json_cstr(p->weights_entry));
        }
        json_object_set_new(j, "statistics", st);
    }
    return j;
}

static int print_json(const diff_run *r, const diff_counts *c)
{
    json_t *objects = json_array(), *keys = json_array(), *skipped = json_array();
    for (size_t i = 0; skipped && i < r->npairs; i++)
        if (r->pairs[i].not_compared) json_array_append_new(skipped, nf_cli_json_cstr(r->pairs[i].id));
    for (size_t i = 0; objects && i < r->npairs; i++)
        if (r->pairs[i].changes) json_array_append_new(objects, pair_json(r, &r->pairs[i]));
    for (size_t i = 0; keys && i < r->nkeys; i++)
        json_array_append_new(keys, json_pack("{s:s,s:O,s:s}", "path", r->keys[i].path, "keys", r->keys[i].keys,
                                              "change", r->keys[i].change));
    bool same = c->changed + c->added + c->removed + r->nkeys == 0;
    json_t *j = json_pack(
        "{s:o,s:o,s:s,s:s,s:b,s:{s:I,s:I,s:I,s:I,s:I},s:o,s:o,s:o}", "a", nf_cli_json_cstr(r->side[0].path), "b",
        nf_cli_json_cstr(r->side[1].path), "a_kind", r->side[0].art ? "artifact" : "checkpoint", "b_kind",
        r->side[1].art ? "artifact" : "checkpoint", "same", same, "summary", "objects_compared",
        (json_int_t)(r->npairs - c->added - c->removed - r->not_compared), "objects_changed", (json_int_t)c->changed,
        "only_in_a", (json_int_t)c->removed, "only_in_b", (json_int_t)c->added, "directory_keys", (json_int_t)r->nkeys,
        "objects", objects, "directory", keys, "resources_not_compared", skipped);
    if (j && !r->artifacts) {
        json_object_set_new(j, "reference", json_string(r->ref ? "b" : "a"));
        json_object_set_new(json_object_get(j, "summary"), "unmapped", json_integer((json_int_t)c->unmapped));
        json_object_set_new(j, "architecture", r->model.known ? json_string(nf_arch_name(r->model.arch)) : json_null());
        if (r->imatrix) json_object_set_new(j, "imatrix", nf_cli_json_cstr(r->imatrix_path));
    }
    if (!j) return nf_cli_error(r->cli, NF_ERR_NOMEM, "out of memory");
    int rc = nf_cli_print_json(r->cli, j);
    json_decref(j);
    return rc;
}

/* One CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break; a text that
 * a spreadsheet would take for a formula (= + - @ first) gets a leading apostrophe. */
static void csv_text(const char *s, bool last)
{
    if (!s) s = "";
    bool quote = strpbrk(s, ",\"\r\n") != NULL || (s[0] && strchr("=+-@\t", s[0]));
    if (quote) putchar('"');
    if (s[0] && strchr("=+-@\t", s[0])) putchar('\'');
    for (const char *c = s; *c; c++) {
        if (*c == '"') putchar('"');
        putchar(*c);
    }
    if (quote) putchar('"');
    putchar(last ? '\n' : ',');
}

static void csv_num(double v, bool have)
{
    if (have && v == v) printf("%.9g,", v);
    else printf(",");
}

/* One row per pair, changed or not (the table a spreadsheet or a plot reads); names as the
 * human output escapes them. */
static void print_csv(const diff_run *r)
{
    printf("id,id_b,expert,changes,format_a,format_b,bits_per_weight_a,bits_per_weight_b,count,skipped,max_abs,"
           "rmse,snr_db,weighted_error,no_statistics,unmapped\n");
    for (size_t i = 0; i < r->npairs; i++) {
        const diff_pair *p = &r->pairs[i];
        if (p->not_compared) continue;
        char what[2048];
        change_text(p, what, sizeof what);
        csv_text(nf_cli_name(p->e[0].name ? p->e[0].name : "").s, false);
        csv_text(nf_cli_name(p->e[1].name ? p->e[1].name : "").s, false);
        if (p->expert >= 0) printf("%d,", p->expert);
        else printf(",");
        char changes[256] = "";
        for (size_t k = 0; k < NCHANGE_NAMES; k++)
            if (p->changes & change_names[k].bit)
                snprintf(changes + strlen(changes), sizeof changes - strlen(changes), "%s%s", changes[0] ? " " : "",
                         change_names[k].name);
        csv_text(changes, false);
        csv_text(p->e[0].name ? nf_cli_name(end_format(&p->e[0])).s : "", false);
        csv_text(p->e[1].name ? nf_cli_name(end_format(&p->e[1])).s : "", false);
        csv_num(p->e[0].name ? end_bpw(&p->e[0]) : NAN, true);
        csv_num(p->e[1].name ? end_bpw(&p->e[1]) : NAN, true);
        const nf_errstats_summary *s = &p->sum;
        if (p->have_sum) printf("%llu,%llu,", (unsigned long long)s->count, (unsigned long long)s->skipped);
        else printf(",,");
        csv_num(s->max_abs, p->have_sum);
        csv_num(s->rmse, p->have_sum && s->count);
        if (p->have_sum && s->count && s->sse == 0) printf("exact,");
        else csv_num(s->snr_db, p->have_sum && s->count);
        csv_num(s->wse, p->have_sum && p->weights);
        csv_text(p->no_stats && !(p->changes & (DIFF_ADDED | DIFF_REMOVED)) ? p->no_stats : "", false);
        csv_text(p->unmapped ? nf_cli_line(p->unmapped).s : "", true);
    }
}

/* --html: every pair of tensors as the report page's rows, the side that is not the
 * reference giving its format and bits per weight (for a quant against its source: the quant's). */
static int write_page(const diff_run *r, const char *path)
{
    nf_page_row *rows = calloc(r->npairs ? r->npairs : 1, sizeof *rows);
    if (!rows) return nf_cli_error(r->cli, NF_ERR_NOMEM, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < r->npairs; i++) {
        const diff_pair *p = &r->pairs[i];
        if (p->not_compared) continue;
        const diff_end *e = p->e[1 - r->ref].name ? &p->e[1 - r->ref] : &p->e[r->ref];
        if (e->o && e->o->kind != NF_OBJECT_TENSOR) continue;
        nf_page_row *row = &rows[n++];
        row->name = pair_name(p);
        /* layer and role from the reference's name: one scheme on the page whichever side is A */
        row->layer_name = p->e[r->ref].name ? p->e[r->ref].name : p->e[1 - r->ref].name;
        row->format = end_format(e);
        row->bpw = end_bpw(e);
        row->values = p->rows * p->cols;
        row->max_abs = row->rmse = row->snr_db = row->weighted = NAN;
        if (!p->have_sum) continue;
        row->stats = true;
        row->count = p->sum.count;
        row->max_abs = p->sum.max_abs;
        row->rmse = p->sum.rmse;
        row->snr_db = p->sum.count && p->sum.sse == 0 ? INFINITY : p->sum.snr_db;
        if (p->weights) row->weighted = p->sum.wse;
    }
    char title[8192], about[256], generator[96];
    snprintf(title, sizeof title, "Comparison: %s and %s", r->side[0].path, r->side[1].path);
    snprintf(about, sizeof about, "ninfer-diff; %s is the reference%s", r->ref ? "B" : "A",
             r->imatrix ? "; weighted by the importance matrix given" : "");
    snprintf(generator, sizeof generator, "ninfer-diff (ninfer-tools %s)", nf_version());
    nf_page page = {title, about, generator, "weighted squared error", rows, n, NULL, 0};
    int rc = nf_page_write(r->cli, &page, path);
    free(rows);
    return rc;
}

/* ---------------------------------------------------------------- main */
static int diff(const nf_cli *cli, const diff_opts *o)
{
    diff_run r = {.cli = cli, .arch_option = o->arch, .imatrix_path = o->imatrix};
    r.side[0].path = cli->positional[0];
    r.side[1].path = cli->positional[1];
    pthread_mutex_init(&r.lock, NULL);
    r.threads = nf_pool_threads(o->threads);
    r.kern = nf_stats_kernels_active();
    nf_error err;
    nf_status st = open_side(&r.side[0], &err);
    if (st == NF_OK) st = open_side(&r.side[1], &err);
    if (st == NF_OK && o->imatrix) st = nf_imatrix_open(o->imatrix, &r.imatrix, &err);
    r.artifacts = r.side[0].art && r.side[1].art;
    r.ref = r.side[1].src ? 1 : 0;
    if (st == NF_OK) st = diff_make_pairs(&r, &err);
    if (st == NF_OK && r.artifacts) st = diff_directory(&r, &err);
    if (st == NF_OK) st = diff_run_phases(&r, &err);
    int rc;
    if (st != NF_OK) {
        rc = nf_cli_report(cli, &err);
    } else {
        diff_counts c = {0};
        for (size_t i = 0; i < r.npairs; i++) {
            unsigned ch = r.pairs[i].changes;
            if (r.pairs[i].not_compared) r.not_compared++;
            else if (ch & DIFF_ADDED) c.added++;
            else if (ch & DIFF_REMOVED) c.removed++;
            else if (ch) c.changed++;
            if (r.pairs[i].unmapped && !r.pairs[i].not_compared) c.unmapped++;
        }
        bool same = c.changed + c.added + c.removed + r.nkeys == 0;
        rc = same ? NF_EXIT_OK : 1;
        int prc = NF_EXIT_OK;
        if (cli->verbosity < 0) prc = NF_EXIT_OK;
        else if (cli->json) prc = print_json(&r, &c);
        else {
            if (o->csv) print_csv(&r);
            else print_human(&r, &c);
            if (fflush(stdout) != 0 || ferror(stdout))
                prc = nf_cli_error(cli, NF_ERR_IO, "standard output: %s", strerror(errno));
        }
        if (prc != NF_EXIT_OK) rc = prc;
        if (prc == NF_EXIT_OK && o->html) {
            int hrc = write_page(&r, o->html);
            if (hrc != NF_EXIT_OK) rc = hrc;
        }
    }
    for (size_t i = 0; i < r.nkeys; i++) {
        free(r.keys[i].path);
        json_decref(r.keys[i].keys);
    }
    free(r.keys);
    for (size_t i = 0; i < r.npairs; i++) {
        free(r.pairs[i].acc);
        free(r.pairs[i].label);
        free(r.pairs[i].unmapped);
    }
    free(r.pairs);
    free(r.job_pair);
    free(r.job_end);
    nf_imatrix_close(r.imatrix);
    for (int k = 0; k < 2; k++) {
        nf_artifact_close(r.side[k].art);
        nf_dialects_free(r.side[k].dialects);
        nf_source_close(r.side[k].src);
    }
    pthread_mutex_destroy(&r.lock);
    return rc;
}

int main(int argc, char **argv)
{
    nf_cli cli;
    diff_opts o = {0};
    bool done = false;
    int rc = nf_cli_parse(&cli, &program, argc, argv, &o, &done);
    nf_arch arch;
    if (rc == NF_EXIT_OK && !done && cli.npositional != 2)
        rc = nf_cli_usage(&cli, "two inputs are compared: A and B (each an artifact or a checkpoint), %d given",
                          cli.npositional);
    else if (rc == NF_EXIT_OK && !done && o.csv && cli.json)
        rc = nf_cli_usage(&cli, "--csv and --json are two outputs; give one");
    else if (rc == NF_EXIT_OK && !done && o.html && !strcmp(o.html, "-") && cli.verbosity >= 0)
        rc = nf_cli_usage(&cli,
                          "--html - writes the page on standard output: give -q, so that nothing else goes there");
    else if (rc == NF_EXIT_OK && !done && o.arch && !nf_arch_lookup(o.arch, &arch))
        rc = nf_cli_usage(&cli,
                          "--arch: '%s' is not an architecture of docs/names.md (llama, mistral, qwen2, qwen3, "
                          "qwen3_moe, gemma, gemma2, gemma3, deepseek2, gpt_oss)",
                          nf_cli_name(o.arch).s);
    if (rc == NF_EXIT_OK && !done) rc = diff(&cli, &o);
    nf_cli_free(&cli);
    return rc;
}
