/* The JSON cursor of json_cursor.h. */
#include "common/json_cursor.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static bool is_space(unsigned char b) { return b == ' ' || b == '\t' || b == '\n' || b == '\r'; }
static bool is_digit(unsigned char b) { return b >= '0' && b <= '9'; }
static bool is_alpha(unsigned char b) { return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z'); }

/* jansson counts a column for each byte that may start a UTF-8 sequence (ASCII and the lead
 * bytes C2..F4), so a multibyte character is one column. */
static bool starts_character(unsigned char b) { return b < 0x80 || (b >= 0xC2 && b <= 0xF4); }

/* The first failure, at byte `at` of the whole text: its line and column counted as jansson's
 * reader counts them while it reads (line 1, column 0 before the first byte). */
static void fail_at(nf_json_cursor *c, size_t at, bool nomem, const char *fmt, ...)
{
    if (c->failed) return;
    c->failed = true;
    c->nomem = nomem;
    if (at > c->len) at = c->len;
    int line = 1, column = 0;
    for (size_t i = 0; i < at; i++) {
        unsigned char b = (unsigned char)c->text[i];
        if (b == '\n') {
            line++;
            column = 0;
        } else if (starts_character(b)) {
            column++;
        }
    }
    c->error.line = line;
    c->error.column = column;
    c->error.position = (int)at; /* (at <= len <= INT_MAX: nf_json_cursor_init) */
    c->error.source[0] = '\0';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->error.text, sizeof c->error.text - 1, fmt, ap);
    va_end(ap);
    /* where json_error_code() finds the code, as jansson stores it */
    c->error.text[sizeof c->error.text - 1] = (char)(nomem ? json_error_out_of_memory : json_error_invalid_syntax);
}

/* jansson failed on the piece of the text that starts at byte `start`: its failure, placed in
 * the whole text. */
static void adopt(nf_json_cursor *c, size_t start, const json_error_t *je)
{
    size_t at = start + (je->position > 0 ? (size_t)je->position : 0);
    /* (jansson says nothing when it cannot allocate its reader) */
    if (!je->text[0] || json_error_code(je) == json_error_out_of_memory) fail_at(c, at, true, "out of memory");
    else fail_at(c, at, false, "%s", je->text);
}

/* Where the token that starts at byte `at` ends, as jansson's reader takes it: a string to its
 * closing quote, a number as far as a number's characters go, a word (true, false, null or an
 * invalid one) as far as its letters go, anything else one character.  A failure about a token
 * is placed at its end, as jansson places it. */
static size_t token_end(const nf_json_cursor *c, size_t at)
{
    const unsigned char *t = (const unsigned char *)c->text;
    size_t n = c->len;
    if (at >= n) return n;
    size_t i = at;
    if (t[i] == '"') {
        for (i++; i < n; i++) {
            if (t[i] == '\\') i++;
            else if (t[i] == '"') return i + 1;
        }
        return n;
    }
    if (t[i] == '-' || is_digit(t[i])) {
        if (t[i] == '-') i++;
        while (i < n && is_digit(t[i])) i++;
        if (i < n && t[i] == '.')
            for (i++; i < n && is_digit(t[i]); i++) continue;
        if (i < n && (t[i] == 'e' || t[i] == 'E')) {
            i++;
            if (i < n && (t[i] == '+' || t[i] == '-')) i++;
            while (i < n && is_digit(t[i])) i++;
        }
        return i;
    }
    if (is_alpha(t[i])) {
        while (i < n && is_alpha(t[i])) i++;
        return i;
    }
    size_t k = t[i] >= 0xF0 ? 4 : t[i] >= 0xE0 ? 3 : t[i] >= 0xC0 ? 2 : 1;
    return k <= n - i ? i + k : n;
}

bool nf_json_cursor_init(nf_json_cursor *c, const char *text, size_t len)
{
    memset(c, 0, sizeof *c);
    c->text = text;
    c->len = len;
    c->error.line = c->error.column = -1;
    if (len > (size_t)INT_MAX) {
        c->len = 0;
        fail_at(c, 0, false, "more than %d bytes of JSON text", INT_MAX);
        return false;
    }
    return true;
}

int nf_json_cursor_peek(nf_json_cursor *c)
{
    if (c->failed) return -1;
    while (c->pos < c->len && is_space((unsigned char)c->text[c->pos])) c->pos++;
    return c->pos < c->len ? (unsigned char)c->text[c->pos] : -1;
}

int nf_json_cursor_open(nf_json_cursor *c, char open)
{
    char close = open == '{' ? '}' : ']';
    if (nf_json_cursor_peek(c) != (unsigned char)open) {
        fail_at(c, token_end(c, c->pos), false, "'%c' expected", open);
        return -1;
    }
    c->pos++;
    int b = nf_json_cursor_peek(c);
    if (b == (unsigned char)close) {
        c->pos++;
        return 0;
    }
    if (b < 0 && open == '[') { /* (jansson's words for an array cut short) */
        fail_at(c, c->len, false, "']' expected");
        return -1;
    }
    return c->failed ? -1 : 1;
}

bool nf_json_cursor_key(nf_json_cursor *c, json_t *seen, json_t **key)
{
    *key = NULL;
    if (nf_json_cursor_peek(c) != '"') {
        fail_at(c, token_end(c, c->pos), false, "string or '}' expected");
        return false;
    }
    size_t start = c->pos, end = token_end(c, start);
    json_error_t je = {0};
    /* NUL admitted by the reader and refused here: what jansson says of such a name */
    json_t *k = json_loadb(c->text + start, end - start, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!k) {
        adopt(c, start, &je);
        return false;
    }
    const char *name = json_string_value(k);
    if (strlen(name) != json_string_length(k)) {
        fail_at(c, end, false, "NUL byte in object key not supported");
    } else if (seen && json_object_get(seen, name)) {
        fail_at(c, end, false, "duplicate object key");
    } else if (seen && json_object_set_new(seen, name, json_null()) != 0) {
        fail_at(c, end, true, "out of memory");
    }
    c->pos = end;
    if (!c->failed && nf_json_cursor_peek(c) != ':') fail_at(c, token_end(c, c->pos), false, "':' expected");
    if (c->failed) {
        json_decref(k);
        return false;
    }
    c->pos++;
    *key = k;
    return true;
}

json_t *nf_json_cursor_value(nf_json_cursor *c, size_t flags)
{
    int b = nf_json_cursor_peek(c);
    if (b < 0) {
        fail_at(c, c->len, false, "unexpected token");
        return NULL;
    }
    size_t start = c->pos;
    json_error_t je = {0};
    json_t *v;
    if (b == '{' || b == '[') {
        /* jansson reads the container and stops after its closing bracket, saying how far */
        v = json_loadb(c->text + start, c->len - start, flags | JSON_DISABLE_EOF_CHECK, &je);
        if (v && (je.position <= 0 || (size_t)je.position > c->len - start)) {
            json_decref(v);
            fail_at(c, start, false, "the JSON reader did not say where the value ends");
            return NULL;
        }
        if (v) c->pos = start + (size_t)je.position;
    } else {
        /* a string or a scalar on exactly its bytes (with JSON_DISABLE_EOF_CHECK jansson may
         * read past a scalar's end, and a string needs no such help) */
        size_t end = token_end(c, start);
        v = json_loadb(c->text + start, end - start, flags | JSON_DECODE_ANY, &je);
        if (v) c->pos = end;
    }
    if (!v) adopt(c, start, &je);
    return v;
}

int nf_json_cursor_next(nf_json_cursor *c, char close)
{
    int b = nf_json_cursor_peek(c);
    if (b == (unsigned char)close) {
        c->pos++;
        return 0;
    }
    if (b == ',') {
        c->pos++;
        if (close == ']' && nf_json_cursor_peek(c) < 0) { /* (as in nf_json_cursor_open) */
            fail_at(c, c->len, false, "']' expected");
            return -1;
        }
        return 1;
    }
    fail_at(c, token_end(c, c->pos), false, "'%c' expected", close);
    return -1;
}

bool nf_json_cursor_end(nf_json_cursor *c)
{
    if (nf_json_cursor_peek(c) < 0) return !c->failed;
    fail_at(c, token_end(c, c->pos), false, "end of file expected");
    return false;
}
