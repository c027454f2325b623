/* The JSON walk of json_walk.h. */
#include "common/json_walk.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_string.h"
#include "common/strset.h"
#include "common/utf8.h"

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t nf_jw_space(const char *t, size_t n, size_t i)
{
    while (i < n && is_space(t[i])) i++;
    return i;
}

bool nf_jw_value_end(const char *t, size_t n, size_t i, size_t *end)
{
    if (i >= n) return false;
    if (t[i] == '"') return nf_json_string_end(t, n, i, end);
    if (t[i] != '{' && t[i] != '[') {
        size_t j = i;
        /* up to the next byte that begins or ends another token (a NUL is part of this one, as
         * jansson reads "2\0" as 2): what follows is then judged where jansson judges it */
        while (j < n && !is_space(t[j]) && !memchr(",:[]{}\"", t[j], 7)) j++;
        *end = j;
        return j > i;
    }
    size_t depth = 0;
    for (; i < n; i++) {
        char c = t[i];
        if (c == '"') {
            if (!nf_json_string_end(t, n, i, &i)) return false;
            i--; /* (the loop steps past the closing quote) */
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (--depth == 0) {
                *end = i + 1;
                return true;
            }
        }
    }
    return false;
}

void nf_jw_items_open(nf_jw_items *it, const char *t, size_t n, size_t at)
{
    it->t = t;
    it->n = n;
    it->pos = at + 1;
    it->object = t[at] == '{';
    it->started = false;
}

int nf_jw_items_next(nf_jw_items *it, nf_jw_span *key, nf_jw_span *value)
{
    const char *t = it->t;
    char close = it->object ? '}' : ']';
    size_t i = nf_jw_space(t, it->n, it->pos);
    it->pos = i;
    if (i < it->n && t[i] == close) {
        it->pos = i + 1;
        return 0;
    }
    if (it->started) {
        if (i >= it->n || t[i] != ',') return -1;
        i = nf_jw_space(t, it->n, i + 1);
        it->pos = i;
    }
    if (it->object) {
        if (i >= it->n || t[i] != '"' || !nf_json_string_end(t, it->n, i, &key->end)) return -1;
        key->at = i;
        i = nf_jw_space(t, it->n, key->end);
        it->pos = i;
        if (i >= it->n || t[i] != ':') return -1;
        i = nf_jw_space(t, it->n, i + 1);
        it->pos = i;
    }
    if (i >= it->n || t[i] == close || !nf_jw_value_end(t, it->n, i, &value->end)) return -1;
    value->at = i;
    it->pos = value->end;
    it->started = true;
    return 1;
}

/* ---------------------------------------------------------------- positions */
/* Line (from 1), column and position of byte at, as jansson counts them: columns in characters
 * (UTF-8 lead bytes), the first character of a line column 1; and a NUL is not counted at all
 * (jansson reads "2\0" as 2 and its position and column lose a byte for each such NUL: text
 * it accepts has NULs nowhere else). */
static void line_col(const char *t, size_t at, int *line, int *col, int *pos)
{
    int l = 1, c = 0, lost = 0;
    for (size_t i = 0; i < at; i++) {
        if (t[i] == '\n') {
            l++;
            c = 0;
        } else if (t[i] == '\0') {
            lost++;
        } else if (!nf_utf8_continues((uint8_t)t[i])) {
            c++;
        }
    }
    *line = l;
    *col = c;
    *pos = (int)at - lost;
}

/* An error of a parse that began at byte `at`, made absolute. */
static void shift_error(const char *t, size_t at, json_error_t *je)
{
    int line, col, pos;
    line_col(t, at, &line, &col, &pos);
    if (je->line == 1) je->column += col;
    je->line += line - 1;
    je->position += pos;
}

static void set_error(json_error_t *je, const char *t, size_t at, enum json_error_code code, const char *what,
                      nf_jw_span near)
{
    memset(je, 0, sizeof *je);
    line_col(t, at, &je->line, &je->column, &je->position);
    size_t nn = near.end - near.at;
    if (nn <= 20) /* jansson quotes the token it stopped at when it is short */
        snprintf(je->text, sizeof je->text - 1, "%s near '%.*s'", what, (int)nn, t + near.at);
    else snprintf(je->text, sizeof je->text - 1, "%s", what);
    je->text[JSON_ERROR_TEXT_LENGTH - 1] = (char)code;
}

json_t *nf_jw_parse(const char *t, size_t n, nf_jw_span s, size_t flags, json_error_t *je)
{
    (void)n;
    json_t *v = json_loadb(t + s.at, s.end - s.at, flags | JSON_DECODE_ANY, je);
    if (!v) shift_error(t, s.at, je);
    return v;
}

/* ---------------------------------------------------------------- validation */
/* Names of one walked object, copied (the set stores pointers). */
typedef struct names {
    nf_strset set;
    char **copies;
    size_t n, cap;
} names;

static void names_free(names *nm)
{
    nf_strset_free(&nm->set);
    for (size_t i = 0; i < nm->n; i++) free(nm->copies[i]);
    free(nm->copies);
}

/* 1 new, 0 a duplicate, -1 out of memory. */
static int names_add(names *nm, const char *s, size_t len)
{
    if (nm->n == nm->cap) {
        size_t cap = nm->cap ? 2 * nm->cap : 64;
        char **c = realloc(nm->copies, cap * sizeof *c);
        if (!c) return -1;
        nm->copies = c;
        nm->cap = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy) return -1;
    memcpy(copy, s, len + 1);
    int r = nf_strset_insert(&nm->set, copy, NULL, 0, NULL);
    if (r != 1) {
        free(copy);
        return r;
    }
    nm->copies[nm->n++] = copy;
    return 1;
}

/* The walk found the container starting at `at` malformed: jansson's own message, from a parse
 * of the container (everything before it is valid, so jansson stops where a whole parse would).
 * Only a refused text pays for this tree. */
static bool malformed(const char *t, size_t n, size_t at, size_t flags, json_error_t *je)
{
    json_t *v = json_loadb(t + at, n - at, flags | JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK, je);
    if (!v) {
        shift_error(t, at, je);
        return false;
    }
    /* (not reached for text the walk refuses; say where the walk stopped) */
    json_decref(v);
    set_error(je, t, at, json_error_invalid_syntax, "unexpected token", (nf_jw_span){at, at + 1});
    return false;
}

/* jansson's refusal of `prefix` followed by the text from byte `at` on, with its position made
 * one of the whole text: the prefix stands for what is already judged (so jansson builds no tree
 * of it), a message past it is where jansson stops in the text.  Accepted (not expected of the
 * callers' texts): an error at `at` named `what`. */
typedef struct prefixed_feed {
    const char *prefix, *t;
    size_t at, n;
} prefixed_feed;

static size_t feed_prefixed(void *buf, size_t size, void *data)
{
    prefixed_feed *f = data;
    if (f->prefix) {
        size_t k = strlen(f->prefix); /* (2 or 3 bytes: jansson asks for far more) */
        memcpy(buf, f->prefix, k);
        f->prefix = NULL;
        return k;
    }
    size_t k = f->n - f->at < size ? f->n - f->at : size;
    memcpy(buf, f->t + f->at, k);
    f->at += k;
    return k;
}

static bool refused_after(const char *prefix, const char *t, size_t n, size_t at, size_t flags,
                          enum json_error_code code, const char *what, json_error_t *je)
{
    prefixed_feed f = {prefix, t, at, n};
    int plen = (int)strlen(prefix);
    json_t *v = json_load_callback(feed_prefixed, &f, flags, je);
    if (v) {
        json_decref(v);
        set_error(je, t, at, code, what, (nf_jw_span){at, at + (at < n)});
        return false;
    }
    int line, col, pos;
    line_col(t, at, &line, &col, &pos);
    if (je->line == 1) je->column += col - plen;
    je->line += line - 1;
    je->position += pos - plen;
    return false;
}

/* malformed() for an element of an array after its first: "[0 " and the text from the separator
 * before the element, so that only the element jansson stops in is built, not the elements
 * before it (a late error in 10^6 records). */
static bool malformed_element(const char *t, size_t n, size_t sep, size_t flags, json_error_t *je)
{
    return refused_after("[0 ", t, n, sep, flags | JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK, json_error_invalid_syntax,
                         "unexpected token", je);
}

static bool validate_value(const char *t, size_t n, nf_jw_span v, size_t flags, size_t piece, json_error_t *je);

static bool validate_items(const char *t, size_t n, size_t at, size_t flags, size_t piece, json_error_t *je)
{
    nf_jw_items it;
    nf_jw_items_open(&it, t, n, at);
    names nm = {{0}, NULL, 0, 0};
    bool ok = true;
    for (;;) {
        nf_jw_span key, value;
        /* where this item begins: the '[' or '{', or the separator after the item before it */
        size_t sep = it.started ? nf_jw_space(t, n, it.pos) : at;
        int r = nf_jw_items_next(&it, &key, &value);
        if (r == 0) break;
        if (r < 0) {
            ok = !it.object && sep != at ? malformed_element(t, n, sep, flags, je) : malformed(t, n, at, flags, je);
            break;
        }
        if (it.object) {
            /* (as jansson's parse_object: the name decoded with its NULs, then refused for them) */
            json_t *k = nf_jw_parse(t, n, key, JSON_ALLOW_NUL, je);
            if (!k) {
                ok = false;
                break;
            }
            const char *s = json_string_value(k);
            size_t len = json_string_length(k);
            int added = memchr(s, '\0', len) ? -2 : (flags & JSON_REJECT_DUPLICATES) ? names_add(&nm, s, len) : 1;
            json_decref(k);
            if (added == -2) {
                set_error(je, t, key.end, json_error_null_byte_in_key, "NUL byte in object key not supported", key);
                ok = false;
            } else if (added == 0) {
                set_error(je, t, key.end, json_error_duplicate_key, "duplicate object key", key);
                ok = false;
            } else if (added < 0) {
                set_error(je, t, key.at, json_error_out_of_memory, "out of memory", key);
                ok = false;
            }
            if (!ok) break;
        }
        bool walked = value.end - value.at > piece && (t[value.at] == '{' || t[value.at] == '[');
        if (!(ok = validate_value(t, n, value, flags, piece, je))) {
            /* a piece jansson refused alone: its message as a whole parse gives it (where a
             * token ends may differ, "0[" alone is trailing data, in a container a syntax error) */
            if (!walked && json_error_code(je) != json_error_out_of_memory) {
                if (!it.object && sep != at) malformed_element(t, n, sep, flags, je);
                else malformed(t, n, at, flags, je);
            }
            break;
        }
    }
    names_free(&nm);
    return ok;
}

static bool validate_value(const char *t, size_t n, nf_jw_span v, size_t flags, size_t piece, json_error_t *je)
{
    if (v.end - v.at > piece && (t[v.at] == '{' || t[v.at] == '[')) return validate_items(t, n, v.at, flags, piece, je);
    json_t *x = nf_jw_parse(t, n, v, flags, je);
    json_decref(x);
    return x != NULL;
}

/* Whether brackets (outside strings) nest deeper than jansson parses (JSON_PARSER_MAX_DEPTH):
 * the pieces' parses each count from 0, and the walk recurses once per level. */
static bool too_deep(const char *t, size_t n)
{
    size_t depth = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i] == '"') {
            if (!nf_json_string_end(t, n, i, &i)) return false;
            i--;
        } else if (t[i] == '{' || t[i] == '[') {
            if (++depth > JSON_PARSER_MAX_DEPTH) return true;
        } else if ((t[i] == '}' || t[i] == ']') && depth) {
            depth--;
        }
    }
    return false;
}

/* What follows a valid value (text [end, n) that is not all whitespace): jansson's own
 * "end of file expected" and position, from "[]" and that text (the value, already judged, is not
 * parsed again, nor held as a tree; jansson reads one token of what follows). */
static bool trailing(const char *t, size_t n, size_t end, size_t flags, json_error_t *je)
{
    return refused_after("[]", t, n, end, flags | JSON_DECODE_ANY, json_error_end_of_input_expected,
                         "end of file expected", je);
}

bool nf_jw_validate(const char *t, size_t n, size_t flags, size_t piece, json_error_t *je)
{
    flags &= JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL;
    size_t at = nf_jw_space(t, n, 0), end = 0;
    /* a text that is not one delimited value, or has more after it, or nests beyond jansson's
     * depth: jansson's own message */
    if (nf_jw_value_end(t, n, at, &end) && nf_jw_space(t, n, end) != n && !too_deep(t, n))
        return validate_value(t, n, (nf_jw_span){at, end}, flags, piece, je) && trailing(t, n, end, flags, je);
    if (!nf_jw_value_end(t, n, at, &end) || nf_jw_space(t, n, end) != n || too_deep(t, n)) {
        json_t *v = json_loadb(t, n, flags | JSON_DECODE_ANY, je);
        if (!v) return false;
        json_decref(v); /* (a token nf_jw_value_end misjudges would land here: accept as jansson does) */
        return true;
    }
    return validate_value(t, n, (nf_jw_span){at, end}, flags, piece, je);
}

/* ---------------------------------------------------------------- dumping */
char *nf_jw_dump(const json_t *v, size_t flags, size_t extra, size_t *len)
{
    size_t n = v ? json_dumpb(v, NULL, 0, flags) : 0;
    if (n == 0 || n > SIZE_MAX - 1 - extra) return NULL;
    char *text = malloc(n + 1 + extra);
    if (text && json_dumpb(v, text, n, flags) != n) {
        free(text);
        return NULL;
    }
    if (text) text[n] = '\0';
    if (text && len) *len = n;
    return text;
}
