/* The JSON string tokenizer of json_string.h. */
#include "common/json_string.h"

#include <stdint.h>
#include <string.h>

#include "common/utf8.h"

/* The value of the 4 hex digits at p, -1 when they are not. */
static int hex4(const char *p)
{
    int v = 0;
    for (int k = 0; k < 4; k++) {
        char c = p[k];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

/* The \uXXXX escape at t[i] (its backslash), -1 when there is none. */
static int u_escape(const char *t, size_t n, size_t i)
{
    return n - i >= 6 && t[i] == '\\' && t[i + 1] == 'u' ? hex4(t + i + 2) : -1;
}

/* The escape whose backslash is t[i] (a byte follows it): the bytes it takes and, when it is
 * well formed, its value in *cp; 2 with *problem set for a malformed one, so the scan goes on as
 * the lexical rule (a '\' takes the next byte) does -- hex digits are neither '"' nor '\'. */
static size_t escape(const char *t, size_t n, size_t i, uint32_t *cp, nf_json_string_problem *problem)
{
    static const char simple[] = "\"\\/bfnrt", value[] = "\"\\/\b\f\n\r\t";
    const char *s = t[i + 1] ? memchr(simple, t[i + 1], sizeof simple - 1) : NULL;
    if (s) {
        *cp = (unsigned char)value[s - simple];
        return 2;
    }
    int hi = u_escape(t, n, i);
    if (hi < 0) {
        *problem = NF_JSON_STRING_BAD_ESCAPE;
        return 2;
    }
    if (hi >= 0xD800 && hi < 0xDC00) { /* a high surrogate: its low one must follow */
        int lo = u_escape(t, n, i + 6);
        if (lo < 0xDC00 || lo > 0xDFFF) {
            *problem = NF_JSON_STRING_LONE_SURROGATE;
            return 6;
        }
        *cp = 0x10000 + (((uint32_t)hi - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
        return 12;
    }
    if (hi >= 0xDC00 && hi < 0xE000) {
        *problem = NF_JSON_STRING_LONE_SURROGATE;
        return 6;
    }
    *cp = (uint32_t)hi;
    return 6;
}

nf_json_string_problem nf_json_string_scan(const char *t, size_t n, size_t at, char *out, nf_json_string_token *tok)
{
    nf_json_string_problem first = NF_JSON_STRING_OK;
    size_t len = 0;
    *tok = (nf_json_string_token){false, n, at, 0};
    for (size_t i = at + 1; i < n;) {
        unsigned char c = (unsigned char)t[i];
        if (c == '"') {
            tok->closed = true;
            tok->end = i + 1;
            tok->len = first == NF_JSON_STRING_OK ? len : 0;
            return first;
        }
        nf_json_string_problem p = NF_JSON_STRING_OK;
        uint32_t cp = c;
        size_t k = 1;
        if (c == '\\') {
            if (i + 1 >= n) break; /* the backslash ends the text: not closed */
            k = escape(t, n, i, &cp, &p);
        } else if (c < 0x20) {
            p = NF_JSON_STRING_CONTROL;
        }
        if (p != NF_JSON_STRING_OK && first == NF_JSON_STRING_OK) {
            first = p;
            tok->where = i;
        }
        if (out && first == NF_JSON_STRING_OK) {
            /* an escape's value: a scalar value always (a surrogate escape is a problem above) */
            if (c == '\\') len += nf_utf8_encode(cp, (uint8_t *)(out + len));
            else out[len++] = (char)c; /* a byte as it is (UTF-8 is the caller's to judge) */
        }
        i += k;
    }
    return first != NF_JSON_STRING_OK ? first : NF_JSON_STRING_UNCLOSED;
}

bool nf_json_string_end(const char *t, size_t n, size_t at, size_t *end)
{
    nf_json_string_token tok;
    nf_json_string_scan(t, n, at, NULL, &tok);
    if (tok.closed) *end = tok.end;
    return tok.closed;
}
