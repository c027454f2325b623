/* The JSON directory: strict parse and every record rule of docs/artifact.md 5, checked in the
 * order the upstream readers use (2.8 step 2): files, objects, components, bindings, uses,
 * metadata/provenance.  Messages name the member path ("objects[3] ('w.q8'): ...") so that a
 * user can find the defect in the JSON text.
 *
 * jansson does the tokenizing: JSON_REJECT_DUPLICATES compares decoded member names (so "\u0069d"
 * duplicates "id", as the C++ reader's SAX pass requires), NaN/Infinity are not JSON tokens to
 * it, and it refuses trailing data.  JSON_ALLOW_NUL keeps "\u0000" in free-form strings legal as
 * in Python; IDs are then checked for NUL explicitly. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/escape.h>
#include <ninfer/format.h>
#include <ninfer/layout.h>

#include "common/checked.h"
#include "common/json_prescan.h"
#include "common/json_walk.h"
#include "common/utf8.h"
#include "container/container_internal.h"

#define WHAT_MAX 256

static nf_status fail(nf_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static nf_status fail(nf_error *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    nf_error_vset(err, NF_ERR_INVALID, fmt, ap);
    va_end(ap);
    return NF_ERR_INVALID;
}

/* Member paths for messages; a path cut short by the buffer is still a useful message. */
static void pathf(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void pathf(char *buf, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, n, fmt, ap);
    va_end(ap);
}

static nf_status nomem(nf_error *err) { return nf_error_set(err, NF_ERR_NOMEM, "directory: out of memory"); }

/* A string quoted for a message: 'text', escaped by nf_escape (ninfer/escape.h: the rule of
 * every program) so hostile names cannot garble the terminal or the message, cut after about
 * 60 bytes. */
typedef struct quoted {
    char s[96];
} quoted;

static quoted quote_n(const char *s, size_t len)
{
    quoted q;
    q.s[0] = '\'';
    nf_escape(s, len, 0, q.s + 1, 72);
    size_t o = strlen(q.s);
    q.s[o++] = '\'';
    q.s[o] = '\0';
    return q;
}

static quoted quote(const char *s) { return quote_n(s, strlen(s)); }

/* A JSON value shown in a message: strings quoted, numbers and literals as text. */
static quoted show(const json_t *v)
{
    quoted q;
    if (!v) {
        snprintf(q.s, sizeof q.s, "(absent)");
    } else if (json_is_string(v)) {
        q = quote_n(json_string_value(v), json_string_length(v));
    } else if (json_is_integer(v)) {
        snprintf(q.s, sizeof q.s, "%lld", (long long)json_integer_value(v));
    } else if (json_is_real(v)) {
        nf_json_format_real(json_real_value(v), q.s);
    } else if (json_is_true(v)) {
        snprintf(q.s, sizeof q.s, "true");
    } else if (json_is_false(v)) {
        snprintf(q.s, sizeof q.s, "false");
    } else if (json_is_null(v)) {
        snprintf(q.s, sizeof q.s, "null");
    } else if (json_is_array(v)) {
        snprintf(q.s, sizeof q.s, "an array");
    } else {
        snprintf(q.s, sizeof q.s, "an object");
    }
    return q;
}

/* ---------------------------------------------------------------- value predicates (2.1) */
static bool get_u64(const json_t *v, uint64_t *out)
{
    /* json_is_integer excludes true/false and 1.0; jansson cannot hold integers above 2^63-1
     * (the parser refuses them), so the U64 domain narrows to what a file can address anyway. */
    if (!json_is_integer(v)) return false;
    json_int_t x = json_integer_value(v);
    if (x < 0) return false;
    *out = (uint64_t)x;
    return true;
}

static bool get_pos_u64(const json_t *v, uint64_t *out) { return get_u64(v, out) && *out > 0; }

static bool is_id(const json_t *v)
{
    return json_is_string(v) && json_string_length(v) > 0 &&
           memchr(json_string_value(v), '\0', json_string_length(v)) == NULL;
}

/* Member names: jansson refuses NUL in keys, so an empty name is the only way to fail. */
static bool is_id_key(const char *k) { return k[0] != '\0'; }

static bool in_list(const char *k, const char *const *list)
{
    for (; list && *list; list++)
        if (strcmp(k, *list) == 0) return true;
    return false;
}

/* Closed record: an object with every required member and nothing beyond required+optional. */
static nf_status closed(const json_t *rec, const char *const *required, const char *const *optional, const char *what,
                        nf_error *err)
{
    if (!json_is_object(rec)) return fail(err, "%s must be an object", what);
    for (const char *const *r = required; *r; r++)
        if (!json_object_get(rec, *r)) return fail(err, "%s: missing member '%s'", what, *r);
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)rec, key, val)
    {
        (void)val;
        if (!in_list(key, required) && !in_list(key, optional))
            return fail(err, "%s: unknown member %s", what, quote(key).s);
    }
    return NF_OK;
}

/* ---------------------------------------------------------------- strict JSON (2.8 step 2) */
/* The pre-scan of common/json_prescan.h bounds what jansson would build (docs/security.md 7, C2 of
 * docs/security.md: 64 MiB of "[{},{},...]" used to cost 5 GB).  Real directories hold about 10
 * containers and 25 values per object (a 100,000-object directory: 1 M and 2.5 M), far below the
 * caps; the caps bound the parse at about 1 GB. */
static nf_status prescan_json(const uint8_t *p, size_t n, nf_error *err)
{
    static const nf_json_caps caps = {NF_MAX_JSON_DEPTH, NF_MAX_JSON_CONTAINERS, NF_MAX_JSON_VALUES};
    size_t at = 0;
    switch (nf_json_prescan(p, n, &caps, &at)) {
    case NF_JSON_TOO_DEEP:
        return fail(err, "directory: JSON byte %zu: nesting deeper than %u levels (the reader's cap)", at,
                    NF_MAX_JSON_DEPTH);
    case NF_JSON_TOO_MANY_CONTAINERS:
        return fail(err, "directory: JSON byte %zu: more than %u objects and arrays (the reader's cap)", at,
                    NF_MAX_JSON_CONTAINERS);
    case NF_JSON_TOO_MANY_VALUES:
        return fail(err, "directory: JSON byte %zu: more than %u values (the reader's cap)", at, NF_MAX_JSON_VALUES);
    default: return NF_OK;
    }
}

/* UTF-8 and the pre-scan: what both parses check before jansson sees the text. */
static nf_status text_checks(const uint8_t *json, size_t len, nf_error *err)
{
    size_t bad;
    if (!nf_utf8_valid(json, len, &bad))
        return fail(err, "directory is not UTF-8: invalid byte sequence at JSON byte %zu (0x%02x)", bad, json[bad]);
    return prescan_json(json, len, err);
}

/* jansson's refusal of the text, as the message of the reader. */
static nf_status syntax_error(const uint8_t *json, size_t len, const json_error_t *je, nf_error *err)
{
    enum json_error_code code = json_error_code(je);
    if (code == json_error_out_of_memory) return nomem(err);
    if (code == json_error_duplicate_key)
        return fail(err, "directory: duplicate JSON member (%s) at line %d, column %d", nf_esc(je->text).s, je->line,
                    je->column);
    /* Name the literal Python refuses (parse_constant) rather than a generic token error: jansson
     * stops at or just after its first character. */
    static const char *const literals[] = {"-Infinity", "Infinity", "NaN", NULL};
    size_t at = je->position > 0 ? (size_t)je->position : 0;
    for (size_t p = at > 12 ? at - 12 : 0; p <= at && p < len; p++)
        for (const char *const *l = literals; *l; l++)
            if (len - p >= strlen(*l) && memcmp(json + p, *l, strlen(*l)) == 0)
                return fail(err, "directory: JSON literal %s is not allowed (line %d, column %d)", *l, je->line,
                            je->column);
    if (code == json_error_end_of_input_expected)
        return fail(err, "directory: trailing data after the JSON value at line %d, column %d (byte %d)", je->line,
                    je->column, je->position);
    if (code == json_error_numeric_overflow)
        return fail(err,
                    "directory: number out of range at line %d, column %d (%s); integers above 2^63-1 are "
                    "not supported",
                    je->line, je->column, je->text);
    return fail(err, "directory is not valid JSON: %s at line %d, column %d (byte %d)", nf_esc(je->text).s, je->line,
                je->column, je->position);
}

#define PARSE_FLAGS (JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL)

static nf_status parse_json(const uint8_t *json, size_t len, json_t **out, nf_error *err)
{
    NF_TRY(text_checks(json, len, err));
    json_error_t je;
    json_t *v = json_loadb((const char *)json, len, PARSE_FLAGS | JSON_DECODE_ANY, &je);
    if (!v) return syntax_error(json, len, &je, err);
    *out = v;
    return NF_OK;
}

/* ---------------------------------------------------------------- the directory's strings */
/* Copies of the ids, names and paths *dir points to, in chunks: one allocation per 64 KiB, not
 * one per string (10^5 objects hold 3 * 10^5 strings). */
struct nf_dir_chunk {
    struct nf_dir_chunk *next;
    size_t used, cap;
    char data[];
};

#define DIR_CHUNK ((size_t)64 << 10)

static const char *keep(nf_dir *dir, const char *s, size_t len)
{
    struct nf_dir_chunk *c = dir->strings;
    if (!c || c->cap - c->used < len + 1) {
        size_t cap = len + 1 > DIR_CHUNK ? len + 1 : DIR_CHUNK;
        c = malloc(sizeof *c + cap);
        if (!c) return NULL;
        c->next = dir->strings;
        c->used = 0;
        c->cap = cap;
        dir->strings = c;
    }
    char *p = c->data + c->used;
    memcpy(p, s, len);
    p[len] = '\0';
    c->used += len + 1;
    return p;
}

/* ---------------------------------------------------------------- record rules (2.6) */
/* The rules read the text a record at a time: each record (an object, a binding, the files
 * table, the components) is parsed alone and dropped, so they hold the tree of one record, for
 * the reader (which has the whole tree as well) and for the writer's check alike. */
enum { R_COMPONENTS, R_OBJECTS, R_BINDINGS, R_USES, R_FILES, R_METADATA, R_PROVENANCE, R_COUNT };
static const char *const ROOT_MEMBERS[] = {"components", "objects",  "bindings",   "uses",
                                           "files",      "metadata", "provenance", NULL};

typedef struct parse_state {
    nf_dir *dir;
    const char *text;
    size_t len;
    nf_jw_span member[R_COUNT];
    bool has[R_COUNT];
    nf_strset bound; /* the bindings' names (copies in dir->strings) */
    bool whole;      /* dir->objects holds every record (the reader's), else one (the check's) */
    uint8_t *kind;   /* each object's nf_object_kind and id: what the later rules look up */
    const char **id;
    nf_error *err;
} parse_state;

static const char *const ROOT_REQ[] = {"components", "objects", "bindings", "uses", "files", NULL};
static const char *const ROOT_OPT[] = {"metadata", "provenance", NULL};
static const char *const FILE_REQ[] = {"path", "payload_bytes", NULL};
static const char *const TENSOR_REQ[] = {"id", "kind", "shape", "format", "layout", "offset", "bytes", NULL};
static const char *const TENSOR_OPT[] = {"divisors", NULL};
static const char *const RESOURCE_REQ[] = {"id", "kind", "encoding", "offset", "bytes", NULL};
static const char *const COMPONENT_REQ[] = {"config", NULL};
static const char *const COMPONENT_OPT[] = {"target", "resources", "proposal", NULL};
static const char *const PROPOSAL_FULL[] = {"domain", NULL};
static const char *const PROPOSAL_INDEXED[] = {"domain", "rows", NULL};
static const char *const BINDING_OBJECT[] = {"object", NULL};
static const char *const BINDING_PARTS[] = {"parts", NULL};
static const char *const PART_REQ[] = {"object", "range", NULL};
static const char *const USE_REQ[] = {"parameter", "input", NULL};
static const char *const USE_OPT[] = {"activation_policy", "auxiliaries", NULL};
static const char *const NONE[] = {NULL};

/* One span of the text as a tree (the text passed the whole check: only memory can fail). */
static nf_status piece(parse_state *ps, nf_jw_span s, json_t **out)
{
    json_error_t je;
    *out = nf_jw_parse(ps->text, ps->len, s, PARSE_FLAGS, &je);
    return *out ? NF_OK : syntax_error((const uint8_t *)ps->text, ps->len, &je, ps->err);
}

static char first_byte(const parse_state *ps, int m) { return ps->text[ps->member[m].at]; }

/* The root's members located, and the root judged as a closed record. */
static nf_status parse_root(parse_state *ps)
{
    size_t at = nf_jw_space(ps->text, ps->len, 0);
    json_t *standin = ps->text[at] == '{' ? json_object() : json_null(); /* the names, for closed() */
    if (!standin) return nomem(ps->err);
    nf_status st = NF_OK;
    if (ps->text[at] == '{') {
        nf_jw_items it;
        nf_jw_items_open(&it, ps->text, ps->len, at);
        nf_jw_span key, value;
        while (st == NF_OK && nf_jw_items_next(&it, &key, &value) == 1) {
            json_t *k;
            if ((st = piece(ps, key, &k)) != NF_OK) break;
            const char *name = json_string_value(k);
            for (int m = 0; m < R_COUNT; m++)
                if (strcmp(name, ROOT_MEMBERS[m]) == 0) {
                    ps->member[m] = value;
                    ps->has[m] = true;
                }
            if (json_object_set_new(standin, name, json_null()) != 0) st = nomem(ps->err);
            json_decref(k);
        }
    }
    if (st == NF_OK) st = closed(standin, ROOT_REQ, ROOT_OPT, "root", ps->err);
    json_decref(standin);
    return st;
}

static nf_status parse_files(parse_state *ps, const char *entry_name)
{
    nf_error *err = ps->err;
    nf_dir *dir = ps->dir;
    json_t *files;
    NF_TRY(piece(ps, ps->member[R_FILES], &files));
    nf_strset paths = {0};
    nf_status st = NF_OK;
    size_t n = json_is_array(files) ? json_array_size(files) : 0;
    if (n == 0) st = fail(err, "files must be a non-empty array");
    else if (n > NF_MAX_FILES)
        st = fail(err, "files: %zu entries exceed the reader's limit of %u files", n, NF_MAX_FILES);
    if (st == NF_OK && !(dir->files = calloc(n, sizeof *dir->files))) st = nomem(err);
    if (st == NF_OK) dir->nfiles = n;
    uint64_t total = 0;
    for (size_t i = 0; i < n && st == NF_OK; i++) {
        char what[WHAT_MAX];
        pathf(what, sizeof what, "files[%zu]", i);
        const json_t *f = json_array_get(files, i);
        if ((st = closed(f, FILE_REQ, NONE, what, err)) != NF_OK) break;
        const json_t *pb = json_object_get(f, "payload_bytes");
        uint64_t bytes;
        if (!get_pos_u64(pb, &bytes)) {
            st = fail(err, "%s.payload_bytes must be a PositiveU64 (got %s)", what, show(pb).s);
            break;
        }
        if (!nf_add_u64(total, bytes, &total)) {
            st = fail(err, "files: the total payload overflows U64 at %s", what);
            break;
        }
        dir->files[i].payload_bytes = bytes;
        const json_t *p = json_object_get(f, "path");
        if (i == 0) {
            if (!json_is_null(p)) st = fail(err, "files[0].path must be null (got %s)", show(p).s);
            continue;
        }
        const char *s = json_is_string(p) ? json_string_value(p) : NULL;
        size_t len = s ? json_string_length(p) : 0;
        if (!s || len == 0 || memchr(s, '\0', len) || strchr(s, '/') || strchr(s, '\\') || strcmp(s, ".") == 0 ||
            strcmp(s, "..") == 0) {
            st = fail(err,
                      "%s.path %s is not a plain sibling file name (non-empty, no '/', '\\\\' or NUL, "
                      "not '.' or '..')",
                      what, show(p).s);
            break;
        }
        if (entry_name && strcmp(s, entry_name) == 0) {
            st = fail(err, "%s.path %s names the entry file itself", what, quote(s).s);
            break;
        }
        if (!(s = keep(dir, s, len))) {
            st = nomem(err);
            break;
        }
        size_t first = 0;
        int r = nf_strset_insert(&paths, s, NULL, i, &first);
        if (r < 0) {
            st = nomem(err);
        } else if (r == 0) {
            st = fail(err, "%s.path %s repeats files[%zu].path", what, quote(s).s, first);
        }
        dir->files[i].path = s;
    }
    nf_strset_free(&paths);
    json_decref(files);
    if (st != NF_OK) return st;
    uint64_t start = 0;
    for (size_t i = 0; i < n; i++) {
        dir->files[i].logical_start = start;
        start += dir->files[i].payload_bytes; /* cannot overflow: total fitted */
    }
    dir->total_payload = total;
    return NF_OK;
}

static nf_status parse_shape(const json_t *shape, nf_object *o, uint64_t *elements, const char *what, nf_error *err)
{
    if (!json_is_array(shape) || json_array_size(shape) > NF_MAX_RANK)
        return fail(err, "%s: shape must be an array of at most %d dimensions", what, NF_MAX_RANK);
    uint64_t n = 1;
    size_t rank = json_array_size(shape);
    for (size_t k = 0; k < rank; k++) {
        const json_t *d = json_array_get(shape, k);
        uint64_t v;
        if (!get_pos_u64(d, &v))
            return fail(err, "%s: shape[%zu] must be a positive integer (got %s)", what, k, show(d).s);
        if (!nf_mul_u64(n, v, &n)) return fail(err, "%s: the element count of the shape overflows U64", what);
        o->shape[k] = v;
    }
    o->rank = (uint32_t)rank;
    *elements = n;
    return NF_OK;
}

/* A string member of a record, copied into the directory's strings. */
static nf_status keep_member(parse_state *ps, const json_t *v, const char **out)
{
    return (*out = keep(ps->dir, json_string_value(v), json_string_length(v))) ? NF_OK : nomem(ps->err);
}

/* A format or layout name: the registry's own string when it is that very name (10^5 objects
 * share a handful of names), else a copy. */
static nf_status keep_name(parse_state *ps, const json_t *v, const char *registered, const char **out)
{
    if (registered && strcmp(registered, json_string_value(v)) == 0) {
        *out = registered;
        return NF_OK;
    }
    return keep_member(ps, v, out);
}

/* objects[i]: its record rules, and its place after the object before it (ending at *prev_end). */
static nf_status parse_object(parse_state *ps, size_t i, const json_t *jo, uint64_t *prev_end)
{
    nf_error *err = ps->err;
    nf_dir *dir = ps->dir;
    nf_object *o = ps->whole ? &dir->objects[i] : dir->objects; /* (the check's one scratch record) */
    memset(o, 0, sizeof *o);
    char what[WHAT_MAX];
    /* Name the object by its id in every message when it has a usable one. */
    const json_t *jid = json_is_object(jo) ? json_object_get(jo, "id") : NULL;
    if (is_id(jid)) pathf(what, sizeof what, "objects[%zu] (%s)", i, quote(json_string_value(jid)).s);
    else pathf(what, sizeof what, "objects[%zu]", i);
    if (!json_is_object(jo)) return fail(err, "%s must be an object", what);
    const json_t *kind = json_object_get(jo, "kind");
    const char *ks = json_is_string(kind) ? json_string_value(kind) : "";
    if (json_is_string(kind) && strcmp(ks, "tensor") == 0 && json_string_length(kind) == 6) {
        NF_TRY(closed(jo, TENSOR_REQ, TENSOR_OPT, what, err));
        o->kind = NF_OBJECT_TENSOR;
        NF_TRY(parse_shape(json_object_get(jo, "shape"), o, &dir->elements[i], what, err));
        const json_t *f = json_object_get(jo, "format"), *l = json_object_get(jo, "layout");
        if (!is_id(f)) return fail(err, "%s: format must be an ID (got %s)", what, show(f).s);
        if (!is_id(l)) return fail(err, "%s: layout must be an ID (got %s)", what, show(l).s);
        o->format = nf_format_lookup(json_string_value(f));
        o->layout = nf_layout_lookup(json_string_value(l));
        NF_TRY(keep_name(ps, f, o->format ? o->format->name : NULL, &o->format_name));
        NF_TRY(keep_name(ps, l, o->layout ? o->layout->name : NULL, &o->layout_name));
        o->divisors = 1;
        const json_t *dv = json_object_get(jo, "divisors");
        if (dv) {
            if (!get_pos_u64(dv, &o->divisors))
                return fail(err, "%s: divisors must be a PositiveU64 (got %s)", what, show(dv).s);
            o->has_divisors = true;
        }
    } else if (json_is_string(kind) && strcmp(ks, "resource") == 0 && json_string_length(kind) == 8) {
        NF_TRY(closed(jo, RESOURCE_REQ, NONE, what, err));
        o->kind = NF_OBJECT_RESOURCE;
        const json_t *e = json_object_get(jo, "encoding");
        if (!is_id(e)) return fail(err, "%s: encoding must be an ID (got %s)", what, show(e).s);
        o->layout = nf_layout_lookup(json_string_value(e));
        NF_TRY(keep_name(ps, e, o->layout ? o->layout->name : NULL, &o->layout_name));
        o->divisors = 1;
        dir->elements[i] = 1;
    } else {
        return fail(err, "%s: kind must be \"tensor\" or \"resource\" (got %s)", what, show(kind).s);
    }
    if (!is_id(jid))
        return fail(err, "%s: id must be an ID (a non-empty string without NUL; got %s)", what, show(jid).s);
    NF_TRY(keep_member(ps, jid, &o->id));
    const json_t *off = json_object_get(jo, "offset"), *by = json_object_get(jo, "bytes");
    if (!get_u64(off, &o->offset)) return fail(err, "%s: offset must be a U64 (got %s)", what, show(off).s);
    if (!get_pos_u64(by, &o->bytes)) return fail(err, "%s: bytes must be a PositiveU64 (got %s)", what, show(by).s);
    size_t first = 0;
    int r = nf_strset_insert(&dir->ids, o->id, NULL, i, &first);
    if (r < 0) return nomem(err);
    if (r == 0) return fail(err, "%s: duplicate object id (objects[%zu] has it too)", what, first);
    if (o->offset < *prev_end)
        return fail(err,
                    "%s: offset %llu overlaps the previous object (which ends at %llu); objects must be "
                    "sorted by offset and must not overlap",
                    what, (unsigned long long)o->offset, (unsigned long long)*prev_end);
    uint64_t end;
    if (!nf_add_u64(o->offset, o->bytes, &end)) return fail(err, "%s: offset + bytes overflows U64", what);
    if (end > dir->total_payload)
        return fail(err, "%s: ends at %llu, beyond the payload (%llu bytes)", what, (unsigned long long)end,
                    (unsigned long long)dir->total_payload);
    *prev_end = end;
    ps->kind[i] = (uint8_t)o->kind;
    ps->id[i] = o->id;
    return NF_OK;
}

static nf_status parse_objects(parse_state *ps)
{
    nf_error *err = ps->err;
    nf_dir *dir = ps->dir;
    nf_jw_span s = ps->member[R_OBJECTS];
    nf_jw_items it;
    nf_jw_span key, value;
    size_t n = 0;
    if (first_byte(ps, R_OBJECTS) == '[') { /* counted first: the tables are allocated once */
        nf_jw_items_open(&it, ps->text, s.end, s.at);
        while (nf_jw_items_next(&it, &key, &value) == 1) n++;
    }
    if (n == 0) return fail(err, "objects must be a non-empty array");
    dir->objects = calloc(ps->whole ? n : 1, sizeof *dir->objects);
    dir->elements = calloc(n, sizeof *dir->elements);
    ps->kind = calloc(n, sizeof *ps->kind);
    ps->id = calloc(n, sizeof *ps->id);
    if (!dir->objects || !dir->elements || !ps->kind || !ps->id) return nomem(err);
    dir->nobjects = n;
    uint64_t prev_end = 0;
    nf_jw_items_open(&it, ps->text, s.end, s.at);
    for (size_t i = 0; i < n && nf_jw_items_next(&it, &key, &value) == 1; i++) {
        json_t *jo;
        NF_TRY(piece(ps, value, &jo));
        nf_status st = parse_object(ps, i, jo, &prev_end);
        json_decref(jo);
        NF_TRY(st);
    }
    return NF_OK;
}

/* The object a binding names, which must be a tensor. */
static nf_status binding_tensor(parse_state *ps, const json_t *ref, const char *what, size_t *index)
{
    const nf_dir *dir = ps->dir;
    if (!json_is_string(ref) || !nf_strset_find(&dir->ids, json_string_value(ref), NULL, index) ||
        json_string_length(ref) != strlen(json_string_value(ref)))
        return fail(ps->err, "%s: %s names no object", what, show(ref).s);
    if (ps->kind[*index] != NF_OBJECT_TENSOR)
        return fail(ps->err, "%s: %s is a resource, not a tensor object", what, show(ref).s);
    return NF_OK;
}

/* Binding grammar (2.6): {"object": ID} or {"parts": [{"object": ID, "range": [b, e]}, ...]}. */
static nf_status parse_binding(parse_state *ps, const json_t *b, const char *what)
{
    nf_error *err = ps->err;
    if (!json_is_object(b)) return fail(err, "%s must be an object", what);
    size_t index;
    if (json_object_get(b, "object")) {
        NF_TRY(closed(b, BINDING_OBJECT, NONE, what, err));
        return binding_tensor(ps, json_object_get(b, "object"), what, &index);
    }
    NF_TRY(closed(b, BINDING_PARTS, NONE, what, err));
    const json_t *parts = json_object_get(b, "parts");
    if (!json_is_array(parts) || json_array_size(parts) == 0)
        return fail(err, "%s.parts must be a non-empty array", what);
    for (size_t j = 0; j < json_array_size(parts); j++) {
        char pw[WHAT_MAX];
        pathf(pw, sizeof pw, "%s.parts[%zu]", what, j);
        const json_t *p = json_array_get(parts, j);
        NF_TRY(closed(p, PART_REQ, NONE, pw, err));
        NF_TRY(binding_tensor(ps, json_object_get(p, "object"), pw, &index));
        const json_t *r = json_object_get(p, "range");
        uint64_t r0, r1;
        if (!json_is_array(r) || json_array_size(r) != 2 || !get_u64(json_array_get(r, 0), &r0) ||
            !get_u64(json_array_get(r, 1), &r1))
            return fail(err, "%s.range must be [begin, end] with U64 integers", pw);
        uint64_t elements = ps->dir->elements[index];
        if (!(r0 < r1 && r1 <= elements))
            return fail(err, "%s.range [%llu, %llu] is empty or outside the %llu elements of %s", pw,
                        (unsigned long long)r0, (unsigned long long)r1, (unsigned long long)elements,
                        quote(ps->id[index]).s);
    }
    return NF_OK;
}

/* components[name].resources: roles naming resource objects. */
static nf_status parse_component_resources(parse_state *ps, const json_t *c, const char *what)
{
    nf_error *err = ps->err;
    const json_t *res = json_object_get(c, "resources");
    if (!res) return NF_OK;
    if (!json_is_object(res)) return fail(err, "%s.resources must be an object", what);
    const char *role;
    json_t *oid;
    json_object_foreach((json_t *)res, role, oid)
    {
        char rw[WHAT_MAX];
        pathf(rw, sizeof rw, "%s.resources[%s]", what, quote(role).s);
        if (!is_id_key(role)) return fail(err, "%s: a role must be an ID (non-empty)", rw);
        size_t index;
        if (!json_is_string(oid) || !nf_strset_find(&ps->dir->ids, json_string_value(oid), NULL, &index) ||
            json_string_length(oid) != strlen(json_string_value(oid)))
            return fail(err, "%s: %s names no object (must be a resource object)", rw, show(oid).s);
        if (ps->kind[index] != NF_OBJECT_RESOURCE)
            return fail(err, "%s: %s is a tensor, not a resource object", rw, show(oid).s);
    }
    return NF_OK;
}

/* components[name].proposal: only on 'text', {"domain": "full"} or {"domain": "indexed", "rows": N}. */
static nf_status parse_proposal(parse_state *ps, const char *name, const json_t *c, const char *what)
{
    nf_error *err = ps->err;
    const json_t *p = json_object_get(c, "proposal");
    if (!p) return NF_OK;
    if (strcmp(name, "text") != 0) return fail(err, "%s: proposal is only allowed on component 'text'", what);
    char pw[WHAT_MAX];
    pathf(pw, sizeof pw, "%s.proposal", what);
    if (!json_is_object(p)) return fail(err, "%s must be an object", pw);
    const json_t *domain = json_object_get(p, "domain");
    if (json_is_string(domain) && strcmp(json_string_value(domain), "full") == 0 && json_string_length(domain) == 4)
        return closed(p, PROPOSAL_FULL, NONE, pw, err);
    NF_TRY(closed(p, PROPOSAL_INDEXED, NONE, pw, err));
    uint64_t rows;
    if (!json_is_string(domain) || strcmp(json_string_value(domain), "indexed") != 0 || json_string_length(domain) != 7)
        return fail(err, "%s.domain must be \"full\" or \"indexed\" (got %s)", pw, show(domain).s);
    if (!get_pos_u64(json_object_get(p, "rows"), &rows))
        return fail(err, "%s.rows must be a PositiveU64 (got %s)", pw, show(json_object_get(p, "rows")).s);
    return NF_OK;
}

static nf_status parse_components(parse_state *ps)
{
    json_t *components;
    NF_TRY(piece(ps, ps->member[R_COMPONENTS], &components));
    nf_error *err = ps->err;
    nf_status st = NF_OK;
    if (!json_is_object(components) || json_object_size(components) == 0)
        st = fail(err, "components must be a non-empty object");
    const char *name;
    json_t *c;
    json_object_foreach(st == NF_OK ? components : NULL, name, c)
    {
        char what[WHAT_MAX];
        pathf(what, sizeof what, "components[%s]", quote(name).s);
        if (!is_id_key(name)) {
            st = fail(err, "%s: a component name must be an ID (non-empty)", what);
            break;
        }
        if ((st = closed(c, COMPONENT_REQ, COMPONENT_OPT, what, err)) != NF_OK) break;
        if (!json_is_object(json_object_get(c, "config"))) {
            st = fail(err, "%s.config must be an object", what);
            break;
        }
        const json_t *target = json_object_get(c, "target");
        if (target && (!is_id(target) || strcmp(json_string_value(target), name) == 0 ||
                       !json_object_get(components, json_string_value(target)))) {
            st = fail(err, "%s.target %s must name another component", what, show(target).s);
            break;
        }
        if ((st = parse_component_resources(ps, c, what)) != NF_OK) break;
        if ((st = parse_proposal(ps, name, c, what)) != NF_OK) break;
    }
    json_decref(components);
    return st;
}

static nf_status parse_bindings(parse_state *ps)
{
    if (first_byte(ps, R_BINDINGS) != '{') return fail(ps->err, "bindings must be an object");
    nf_jw_items it;
    nf_jw_span key, value;
    nf_jw_items_open(&it, ps->text, ps->member[R_BINDINGS].end, ps->member[R_BINDINGS].at);
    while (nf_jw_items_next(&it, &key, &value) == 1) {
        json_t *k, *b;
        NF_TRY(piece(ps, key, &k));
        const char *name = keep(ps->dir, json_string_value(k), json_string_length(k));
        json_decref(k);
        if (!name || nf_strset_insert(&ps->bound, name, NULL, 0, NULL) < 0) return nomem(ps->err);
        char what[WHAT_MAX];
        pathf(what, sizeof what, "bindings[%s]", quote(name).s);
        if (!is_id_key(name)) return fail(ps->err, "%s: a binding name must be an ID (non-empty)", what);
        NF_TRY(piece(ps, value, &b));
        nf_status st = parse_binding(ps, b, what);
        json_decref(b);
        NF_TRY(st);
    }
    return NF_OK;
}

/* uses[i]'s optional members: activation_policy and auxiliaries (role -> binding). */
static nf_status parse_use_extras(parse_state *ps, const json_t *u, const char *what)
{
    nf_error *err = ps->err;
    const json_t *pol = json_object_get(u, "activation_policy");
    if (pol) {
        const char *s = json_is_string(pol) ? json_string_value(pol) : "";
        if (!json_is_string(pol) || json_string_length(pol) != strlen(s) ||
            (strcmp(s, "A16Only") != 0 && strcmp(s, "AllowA8") != 0 && strcmp(s, "AllowA4") != 0))
            return fail(err, "%s: activation_policy %s is not one of A16Only, AllowA8, AllowA4", what, show(pol).s);
    }
    const json_t *aux = json_object_get(u, "auxiliaries");
    if (!aux) return NF_OK;
    if (!json_is_object(aux)) return fail(err, "%s.auxiliaries must be an object", what);
    const char *role;
    json_t *b;
    json_object_foreach((json_t *)aux, role, b)
    {
        char aw[WHAT_MAX];
        pathf(aw, sizeof aw, "%s.auxiliaries[%s]", what, quote(role).s);
        if (!is_id_key(role)) return fail(err, "%s: a role must be an ID (non-empty)", aw);
        NF_TRY(parse_binding(ps, b, aw));
    }
    return NF_OK;
}

static nf_status parse_uses(parse_state *ps)
{
    nf_error *err = ps->err;
    json_t *uses;
    NF_TRY(piece(ps, ps->member[R_USES], &uses));
    nf_strset pairs = {0};
    nf_status st = json_is_array(uses) ? NF_OK : fail(err, "uses must be an array");
    for (size_t i = 0; st == NF_OK && i < json_array_size(uses); i++) {
        char what[WHAT_MAX];
        pathf(what, sizeof what, "uses[%zu]", i);
        const json_t *u = json_array_get(uses, i);
        if ((st = closed(u, USE_REQ, USE_OPT, what, err)) != NF_OK) break;
        const json_t *param = json_object_get(u, "parameter"), *input = json_object_get(u, "input");
        if (!json_is_string(param) || json_string_length(param) != strlen(json_string_value(param)) ||
            !nf_strset_find(&ps->bound, json_string_value(param), NULL, NULL)) {
            st = fail(err, "%s: parameter %s is not bound (not a key of bindings)", what, show(param).s);
            break;
        }
        if (!is_id(input)) {
            st = fail(err, "%s: input must be an ID (got %s)", what, show(input).s);
            break;
        }
        size_t first = 0;
        int r = nf_strset_insert(&pairs, json_string_value(param), json_string_value(input), i, &first);
        if (r < 0) {
            st = nomem(err);
            break;
        }
        if (r == 0) {
            st = fail(err, "%s: duplicate (parameter, input) pair (%s, %s), also uses[%zu]", what, show(param).s,
                      show(input).s, first);
            break;
        }
        st = parse_use_extras(ps, u, what);
    }
    nf_strset_free(&pairs);
    json_decref(uses);
    return st;
}

/* metadata and provenance are open; metadata.name, when present, is an ID. */
static nf_status parse_open_members(parse_state *ps)
{
    if (ps->has[R_METADATA] && first_byte(ps, R_METADATA) != '{') return fail(ps->err, "metadata must be an object");
    if (ps->has[R_PROVENANCE] && first_byte(ps, R_PROVENANCE) != '{')
        return fail(ps->err, "provenance must be an object");
    if (!ps->has[R_METADATA]) return NF_OK;
    nf_jw_items it;
    nf_jw_span key, value;
    nf_jw_items_open(&it, ps->text, ps->member[R_METADATA].end, ps->member[R_METADATA].at);
    while (nf_jw_items_next(&it, &key, &value) == 1) {
        json_t *k, *name;
        NF_TRY(piece(ps, key, &k));
        bool is_name = strcmp(json_string_value(k), "name") == 0;
        json_decref(k);
        if (!is_name) continue;
        NF_TRY(piece(ps, value, &name));
        nf_status st = is_id(name) ? NF_OK : fail(ps->err, "metadata.name must be an ID (got %s)", show(name).s);
        json_decref(name);
        return st;
    }
    return NF_OK;
}

void nf_dir_free(nf_dir *dir)
{
    if (!dir) return;
    free(dir->objects);
    free(dir->elements);
    free(dir->files);
    nf_strset_free(&dir->ids);
    while (dir->strings) {
        struct nf_dir_chunk *next = dir->strings->next;
        free(dir->strings);
        dir->strings = next;
    }
    memset(dir, 0, sizeof *dir);
}

/* The record rules on text whose syntax passed, in the reader's order. */
static nf_status parse_records(const uint8_t *json, size_t len, const char *entry_name, bool whole, nf_dir *dir,
                               nf_error *err)
{
    memset(dir, 0, sizeof *dir);
    parse_state ps = {.dir = dir, .text = (const char *)json, .len = len, .whole = whole, .err = err};
    nf_status st = parse_root(&ps);
    if (st == NF_OK) st = parse_files(&ps, entry_name);
    if (st == NF_OK) st = parse_objects(&ps);
    if (st == NF_OK) st = parse_components(&ps);
    if (st == NF_OK) st = parse_bindings(&ps);
    if (st == NF_OK) st = parse_uses(&ps);
    if (st == NF_OK) st = parse_open_members(&ps);
    nf_strset_free(&ps.bound);
    free(ps.kind);
    free(ps.id);
    if (st != NF_OK) {
        /* the schema checks name the member, this adds where it is (an out-of-memory message
         * already says "directory: out of memory") */
        if (st == NF_ERR_INVALID) nf_error_prefix(err, "directory");
        nf_dir_free(dir);
    }
    return st;
}

nf_status nf_dir_parse(const uint8_t *json, size_t len, const char *entry_name, json_t **root_out, nf_dir *dir,
                       nf_error *err)
{
    memset(dir, 0, sizeof *dir);
    *root_out = NULL;
    json_t *root = NULL;
    NF_TRY(parse_json(json, len, &root, err));
    nf_status st = parse_records(json, len, entry_name, true, dir, err);
    if (st != NF_OK) {
        json_decref(root);
        return st;
    }
    *root_out = root;
    return NF_OK;
}

#define CHECK_PIECE ((size_t)64 << 10)

nf_status nf_dir_check(const uint8_t *json, size_t len, const char *entry_name, size_t piece_bytes, nf_error *err)
{
    NF_TRY(text_checks(json, len, err));
    json_error_t je;
    if (!nf_jw_validate((const char *)json, len, PARSE_FLAGS, piece_bytes ? piece_bytes : CHECK_PIECE, &je))
        return syntax_error(json, len, &je, err);
    nf_dir dir;
    NF_TRY(parse_records(json, len, entry_name, false, &dir, err));
    nf_dir_free(&dir);
    return NF_OK;
}

nf_status nf_directory_parse(const uint8_t *json, size_t len, const char *entry_name, struct json_t **root,
                             nf_error *err)
{
    if (!json || !root) return nf_error_set(err, NF_ERR_USAGE, "nf_directory_parse: NULL argument");
    nf_dir dir;
    NF_TRY(nf_dir_parse(json, len, entry_name, root, &dir, err));
    nf_dir_free(&dir);
    return NF_OK;
}
