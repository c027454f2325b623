/* YAML text -> positioned tree, through libyaml's event API.
 *
 * The event API (not libyaml's document loader) lets every hostile construct be refused at the
 * event that introduces it, before anything is built from it: an anchor or alias (so a
 * "billion laughs" file costs nothing), nesting past NF_RECIPE_MAX_DEPTH, a node past
 * NF_RECIPE_MAX_NODES.  libyaml's parser is an explicit state machine and its scanner looks
 * ahead at most one simple-key window (1024 characters), so the refusal comes early whatever
 * follows in the file. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "common/fail.h"
#include "common/strset.h"
#include "common/utf8.h"
#include "recipe/recipe_internal.h"

/* Small mappings are checked for duplicate keys by a linear scan; past this many keys a hash
 * set takes over so a mapping of 100,000 keys stays linear. */
#define LINEAR_KEYS 8u

typedef struct frame {
    ynode *node;
    nf_strset keys; /* used once the mapping holds more than LINEAR_KEYS keys */
} frame;

typedef struct builder {
    const char *name;
    const char *text;
    size_t len;
    nf_error *err;
    ynode *root;
    frame stack[NF_RECIPE_MAX_DEPTH];
    size_t depth;
    size_t nodes;
    size_t documents;
} builder;

static int clamp_int(size_t v) { return v >= (size_t)INT_MAX ? INT_MAX : (int)v; }

static nf_recipe_pos mark_pos(yaml_mark_t m)
{
    nf_recipe_pos p = {clamp_int(m.line + 1), clamp_int(m.column + 1)};
    return p;
}

static nf_status fail_at(builder *b, nf_recipe_pos p, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static nf_status fail_at(builder *b, nf_recipe_pos p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    nf_status st = nf_common_fail_atv(b->err, b->name, p.line, p.col, fmt, ap);
    va_end(ap);
    return st;
}

static nf_status nomem(builder *b) { return nf_common_nomem_in(b->err, b->name); }

void nf_recipe_yn_free(ynode *n)
{
    if (!n) return;
    for (size_t i = 0; i < n->nslots; i++) nf_recipe_yn_free(n->items[i]);
    free(n->items);
    free(n->text);
    free(n);
}

/* ---------------------------------------------------------------- scalar typing */
static bool all_digits(const char *s, size_t n)
{
    if (n == 0) return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9') return false;
    return true;
}

/* YAML 1.2 core schema float: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?, plus the
 * .inf/.nan spellings. */
static bool is_core_float(const char *s)
{
    const char *p = s;
    if (*p == '+' || *p == '-') p++;
    if (!strcmp(p, ".inf") || !strcmp(p, ".Inf") || !strcmp(p, ".INF")) return true;
    if (p == s && (!strcmp(p, ".nan") || !strcmp(p, ".NaN") || !strcmp(p, ".NAN"))) return true;
    size_t int_digits = strspn(p, "0123456789");
    p += int_digits;
    size_t frac_digits = 0;
    if (*p == '.') {
        p++;
        frac_digits = strspn(p, "0123456789");
        p += frac_digits;
    }
    if (int_digits == 0 && frac_digits == 0) return false;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        size_t exp_digits = strspn(p, "0123456789");
        if (exp_digits == 0) return false;
        p += exp_digits;
    }
    return *p == '\0';
}

static void classify_plain(ynode *n)
{
    const char *s = n->text;
    if (n->len == 0 || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL")) {
        n->type = YS_NULL;
        return;
    }
    /* Only the lower-case spellings: "yes", "on", "True" stay strings, so a recipe cannot mean
     * a boolean by accident of spelling (the schema then reports them as not true/false). */
    if (!strcmp(s, "true") || !strcmp(s, "false")) {
        n->type = YS_BOOL;
        n->bval = s[0] == 't';
        return;
    }
    const char *digits = s + (s[0] == '+' || s[0] == '-');
    if (all_digits(digits, strlen(digits))) {
        n->type = YS_INT;
        errno = 0;
        long long v = strtoll(s, NULL, 10);
        n->int_overflow = errno == ERANGE;
        n->ival = (int64_t)v;
        return;
    }
    if (is_core_float(s)) {
        n->type = YS_FLOAT;
        return;
    }
    n->type = YS_STRING;
}

/* ---------------------------------------------------------------- building */
static nf_status new_node(builder *b, yn_kind kind, yaml_mark_t start, ynode **out)
{
    if (b->nodes >= NF_RECIPE_MAX_NODES)
        return fail_at(b, mark_pos(start), "more than %u YAML nodes: not a recipe", NF_RECIPE_MAX_NODES);
    ynode *n = calloc(1, sizeof *n);
    if (!n) return nomem(b);
    n->kind = kind;
    n->pos = mark_pos(start);
    b->nodes++;
    *out = n;
    return NF_OK;
}

static bool push_slot(ynode *parent, ynode *child)
{
    if (parent->nslots == parent->cap) {
        size_t cap = parent->cap ? parent->cap * 2 : 8;
        ynode **items = realloc(parent->items, cap * sizeof *items);
        if (!items) return false;
        parent->items = items;
        parent->cap = cap;
    }
    parent->items[parent->nslots++] = child;
    return true;
}

/* Checks a new key of the mapping in frame f against the keys before it. */
static nf_status check_duplicate(builder *b, frame *f, const ynode *key, size_t index)
{
    const ynode *map = f->node;
    if (index < LINEAR_KEYS) {
        for (size_t i = 0; i < index; i++) {
            const ynode *k = yn_key(map, i);
            if (k->len == key->len && !memcmp(k->text, key->text, key->len))
                return fail_at(b, key->pos, "duplicate key '%s' (first at %d:%d)", key->text, k->pos.line, k->pos.col);
        }
        return NF_OK;
    }
    if (index == LINEAR_KEYS)
        for (size_t i = 0; i < index; i++)
            if (nf_strset_insert(&f->keys, yn_key(map, i)->text, NULL, i, NULL) < 0) return nomem(b);
    size_t first = 0;
    int r = nf_strset_insert(&f->keys, key->text, NULL, index, &first);
    if (r < 0) return nomem(b);
    if (r == 0) {
        const ynode *k = yn_key(map, first);
        return fail_at(b, key->pos, "duplicate key '%s' (first at %d:%d)", key->text, k->pos.line, k->pos.col);
    }
    return NF_OK;
}

/* Attach a just-made node to the open collection (or make it the root).  The node is owned by
 * the tree from here on, even on failure, so nf_recipe_yn_free of the root releases everything. */
static nf_status attach(builder *b, ynode *n)
{
    if (b->depth == 0) {
        b->root = n;
        return NF_OK;
    }
    frame *f = &b->stack[b->depth - 1];
    ynode *parent = f->node;
    if (!push_slot(parent, n)) {
        nf_recipe_yn_free(n);
        return nomem(b);
    }
    if (parent->kind == YN_SEQ) {
        parent->n++;
        return NF_OK;
    }
    /* Mapping slots alternate key, value: an odd slot count means a key waits for its value. */
    if (parent->nslots % 2 == 0) {
        parent->n++;
        return NF_OK;
    }
    if (n->kind != YN_SCALAR)
        return fail_at(b, n->pos, "a mapping key must be a scalar, got a %s",
                       n->kind == YN_MAP ? "mapping" : "sequence");
    return check_duplicate(b, f, n, parent->n);
}

static nf_status refuse_anchor_tag(builder *b, const yaml_event_t *ev, const yaml_char_t *anchor,
                                   const yaml_char_t *tag)
{
    if (anchor)
        return fail_at(b, mark_pos(ev->start_mark), "anchor '&%s': anchors and aliases are not allowed in a recipe",
                       (const char *)anchor);
    if (tag)
        return fail_at(b, mark_pos(ev->start_mark), "tag '%s': tags are not allowed in a recipe", (const char *)tag);
    return NF_OK;
}

static nf_status on_scalar(builder *b, const yaml_event_t *ev)
{
    NF_TRY(refuse_anchor_tag(b, ev, ev->data.scalar.anchor, ev->data.scalar.tag));
    const char *value = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    if (memchr(value, '\0', len))
        return fail_at(b, mark_pos(ev->start_mark), "a NUL character in a scalar is not allowed");
    ynode *n = NULL;
    NF_TRY(new_node(b, YN_SCALAR, ev->start_mark, &n));
    n->text = malloc(len + 1);
    if (!n->text) {
        nf_recipe_yn_free(n);
        return nomem(b);
    }
    memcpy(n->text, value, len);
    n->text[len] = '\0';
    n->len = len;
    if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) classify_plain(n);
    else n->type = YS_STRING;
    return attach(b, n);
}

static nf_status on_start(builder *b, const yaml_event_t *ev, yn_kind kind)
{
    if (kind == YN_MAP) NF_TRY(refuse_anchor_tag(b, ev, ev->data.mapping_start.anchor, ev->data.mapping_start.tag));
    else NF_TRY(refuse_anchor_tag(b, ev, ev->data.sequence_start.anchor, ev->data.sequence_start.tag));
    if (b->depth >= NF_RECIPE_MAX_DEPTH)
        return fail_at(b, mark_pos(ev->start_mark), "nesting deeper than %d levels", NF_RECIPE_MAX_DEPTH);
    ynode *n = NULL;
    NF_TRY(new_node(b, kind, ev->start_mark, &n));
    NF_TRY(attach(b, n));
    b->stack[b->depth].node = n;
    memset(&b->stack[b->depth].keys, 0, sizeof b->stack[b->depth].keys);
    b->depth++;
    return NF_OK;
}

static void on_end(builder *b)
{
    /* libyaml guarantees balanced start/end events */
    if (b->depth == 0) return;
    b->depth--;
    nf_strset_free(&b->stack[b->depth].keys);
}

/* Position of a byte offset (reader errors report offsets, not marks): 1-based line, and the
 * column counted in characters like libyaml's marks. */
static nf_recipe_pos offset_pos(const char *text, size_t len, size_t offset)
{
    nf_recipe_pos p = {1, 1};
    if (offset > len) offset = len;
    for (size_t i = 0; i < offset; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '\n') {
            if (p.line < INT_MAX) p.line++;
            p.col = 1;
        } else if (!nf_utf8_continues(c) && p.col < INT_MAX) {
            p.col++;
        }
    }
    return p;
}

static nf_status syntax_error(builder *b, const yaml_parser_t *parser)
{
    if (parser->error == YAML_MEMORY_ERROR) return nomem(b);
    const char *problem = parser->problem ? parser->problem : "unknown problem";
    if (parser->error == YAML_READER_ERROR) {
        nf_recipe_pos p = offset_pos(b->text, b->len, parser->problem_offset);
        return fail_at(b, p, "YAML syntax error: %s (byte offset %zu)", problem, parser->problem_offset);
    }
    nf_recipe_pos p = mark_pos(parser->problem_mark);
    if (parser->context) {
        nf_recipe_pos c = mark_pos(parser->context_mark);
        return fail_at(b, p, "YAML syntax error: %s (%s at %d:%d)", problem, parser->context, c.line, c.col);
    }
    return fail_at(b, p, "YAML syntax error: %s", problem);
}

nf_status nf_recipe_yn_parse(const char *text, size_t len, const char *name, ynode **root, nf_error *err)
{
    *root = NULL;
    builder b = {.name = name, .text = text, .len = len, .err = err};
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) return nomem(&b);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    nf_status st = NF_OK;
    bool done = false;
    while (st == NF_OK && !done) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            st = syntax_error(&b, &parser);
            break;
        }
        switch (ev.type) {
        case YAML_STREAM_END_EVENT: done = true; break;
        case YAML_DOCUMENT_START_EVENT:
            if (b.documents++ > 0)
                st = fail_at(&b, mark_pos(ev.start_mark), "a second YAML document: a recipe is one document");
            break;
        case YAML_ALIAS_EVENT:
            st = fail_at(&b, mark_pos(ev.start_mark), "alias '*%s': anchors and aliases are not allowed in a recipe",
                         (const char *)ev.data.alias.anchor);
            break;
        case YAML_SCALAR_EVENT: st = on_scalar(&b, &ev); break;
        case YAML_SEQUENCE_START_EVENT: st = on_start(&b, &ev, YN_SEQ); break;
        case YAML_MAPPING_START_EVENT: st = on_start(&b, &ev, YN_MAP); break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: on_end(&b); break;
        default: break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    while (b.depth > 0) on_end(&b);
    if (st != NF_OK) {
        nf_recipe_yn_free(b.root);
        return st;
    }
    /* An empty document ("---" alone, or only comments) is the same as no document. */
    if (b.root && b.root->kind == YN_SCALAR && b.root->type == YS_NULL) {
        nf_recipe_yn_free(b.root);
        b.root = NULL;
    }
    *root = b.root;
    return NF_OK;
}

/* ---------------------------------------------------------------- description and JSON */
static void quote_text(const char *s, size_t len, char *out, size_t size)
{
    /* Keep messages short: at most 60 bytes of the value, cut on a character boundary. */
    size_t n = len;
    bool cut = false;
    if (n > 60) {
        n = 60;
        while (n > 0 && nf_utf8_continues((uint8_t)s[n])) n--;
        cut = true;
    }
    snprintf(out, size, "'%.*s%s'", (int)n, s, cut ? "..." : "");
}

void nf_recipe_yn_describe(const ynode *n, char *out, size_t size)
{
    char q[80];
    switch (n->kind) {
    case YN_MAP: snprintf(out, size, "a mapping"); return;
    case YN_SEQ: snprintf(out, size, "a sequence"); return;
    case YN_SCALAR: break;
    }
    quote_text(n->text, n->len, q, sizeof q);
    switch (n->type) {
    case YS_STRING: snprintf(out, size, "the string %s", q); return;
    case YS_NULL: snprintf(out, size, "null (an empty value)"); return;
    case YS_BOOL: snprintf(out, size, "the boolean %s", n->bval ? "true" : "false"); return;
    case YS_INT: snprintf(out, size, "the integer %s", n->text); return;
    case YS_FLOAT: snprintf(out, size, "the number %s", q); return;
    }
}

static nf_status json_fail(const char *name, const ynode *n, nf_error *err, const char *what)
{
    return nf_common_fail_at(err, name, n->pos.line, n->pos.col, "%s", what);
}

nf_status nf_recipe_yn_to_json(const ynode *n, const char *name, json_t **out, nf_error *err)
{
    *out = NULL;
    json_t *v = NULL;
    switch (n->kind) {
    case YN_MAP:
        v = json_object();
        if (!v) break;
        for (size_t i = 0; i < n->n; i++) {
            json_t *child = NULL;
            nf_status st = nf_recipe_yn_to_json(yn_val(n, i), name, &child, err);
            if (st != NF_OK) {
                json_decref(v);
                return st;
            }
            /* keys are valid UTF-8 (libyaml checks its input) without NUL (refused) */
            if (json_object_set_new(v, yn_key(n, i)->text, child) != 0) {
                json_decref(v);
                return nf_common_nomem_in(err, name);
            }
        }
        break;
    case YN_SEQ:
        v = json_array();
        if (!v) break;
        for (size_t i = 0; i < n->n; i++) {
            json_t *child = NULL;
            nf_status st = nf_recipe_yn_to_json(n->items[i], name, &child, err);
            if (st != NF_OK) {
                json_decref(v);
                return st;
            }
            if (json_array_append_new(v, child) != 0) {
                json_decref(v);
                return nf_common_nomem_in(err, name);
            }
        }
        break;
    case YN_SCALAR:
        switch (n->type) {
        case YS_STRING: v = json_stringn(n->text, n->len); break;
        case YS_NULL: v = json_null(); break;
        case YS_BOOL: v = json_boolean(n->bval); break;
        case YS_INT:
            if (n->int_overflow) return json_fail(name, n, err, "integer out of range (beyond 64 bits)");
            v = json_integer((json_int_t)n->ival);
            break;
        case YS_FLOAT: {
            /* .inf and .nan are YAML spellings strtod does not read; 1e999 overflows */
            const char *body = n->text + (n->text[0] == '+' || n->text[0] == '-');
            double d = body[0] == '.' && (body[1] == 'i' || body[1] == 'I' || body[1] == 'n' || body[1] == 'N')
                           ? HUGE_VAL
                           : strtod(n->text, NULL);
            if (!isfinite(d)) {
                char what[128];
                snprintf(what, sizeof what, "the number '%.60s' cannot be represented in JSON (not finite)", n->text);
                return json_fail(name, n, err, what);
            }
            v = json_real(d);
            break;
        }
        }
        break;
    }
    if (!v) return nf_common_nomem_in(err, name);
    *out = v;
    return NF_OK;
}
