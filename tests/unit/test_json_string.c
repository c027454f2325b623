/* The one JSON string tokenizer (common/json_string.h): each escape, \u pairs, lone surrogates,
 * control characters, unclosed tokens, with the decoded value and the byte named; then, on random
 * tokens over an alphabet of the bytes that matter, the scanners it replaced -- the pre-scans'
 * and the walk's lexical rule (a '\' takes the next byte, the first other '"' closes) and the
 * sensitivity reader's decoder, kept below as they were -- agreeing with it on every one. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "common/json_string.h"
#include "support/test_rng.h"

TEST_RNG(0x6a736f6e53747221ull)

/* One token (a C literal holding it from its opening quote), decoded. */
typedef struct scanned {
    nf_json_string_problem problem;
    nf_json_string_token tok;
    char out[256];
} scanned;

static scanned scan(const char *t, size_t n)
{
    scanned s;
    memset(s.out, 0x55, sizeof s.out);
    s.problem = nf_json_string_scan(t, n, 0, s.out, &s.tok);
    return s;
}
#define SCAN(lit) scan(lit, sizeof(lit) - 1)

static void decodes_to(const char *t, size_t n, const char *want, size_t want_len)
{
    scanned s = scan(t, n);
    cr_assert_eq(s.problem, NF_JSON_STRING_OK, "%.*s: problem %d", (int)n, t, s.problem);
    cr_assert(s.tok.closed);
    cr_assert_eq(s.tok.end, n, "%.*s: end %zu", (int)n, t, s.tok.end);
    cr_assert_eq(s.tok.len, want_len, "%.*s: length %zu", (int)n, t, s.tok.len);
    cr_assert_eq(memcmp(s.out, want, want_len), 0, "%.*s", (int)n, t);
}
#define DECODES(lit, want) decodes_to(lit, sizeof(lit) - 1, want, sizeof(want) - 1)

static void refused(const char *t, size_t n, nf_json_string_problem p, size_t where, size_t end)
{
    scanned s = scan(t, n);
    cr_assert_eq(s.problem, p, "%.*s: problem %d, expected %d", (int)n, t, s.problem, p);
    cr_assert_eq(s.tok.where, where, "%.*s: at %zu, expected %zu", (int)n, t, s.tok.where, where);
    cr_assert_eq(s.tok.end, end, "%.*s: end %zu, expected %zu", (int)n, t, s.tok.end, end);
}
#define REFUSED(lit, p, where, end) refused(lit, sizeof(lit) - 1, p, where, end)

Test(json_string, plain_and_simple_escapes)
{
    DECODES("\"\"", "");
    DECODES("\"model.layers.0.q_proj.weight\"", "model.layers.0.q_proj.weight");
    DECODES("\"a\\\"b\\\\c\\/d\"", "a\"b\\c/d");
    DECODES("\"\\b\\f\\n\\r\\t\"", "\b\f\n\r\t");
    DECODES("\"\xce\xb3 \xff\"", "\xce\xb3 \xff"); /* bytes kept as they are: UTF-8 is the caller's */
    scanned s = SCAN("\"ab\" tail\"");
    cr_assert_eq(s.tok.end, 4, "the first closing quote ends it");
}

Test(json_string, u_escapes)
{
    DECODES("\"\\u0041\"", "A");
    DECODES("\"\\u0000\"", "\0");
    DECODES("\"\\u00e9\\u00E9\"", "\xc3\xa9\xc3\xa9");
    DECODES("\"\\u07ff\\u0800\\uffff\"", "\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf");
    DECODES("\"\\ud83d\\ude00\"", "\xf0\x9f\x98\x80"); /* a pair */
    DECODES("\"\\uD800\\uDC00\\uDBFF\\uDFFF\"", "\xf0\x90\x80\x80\xf4\x8f\xbf\xbf");
}

Test(json_string, lone_surrogates)
{
    REFUSED("\"\\ud800\"", NF_JSON_STRING_LONE_SURROGATE, 1, 8);
    REFUSED("\"ab\\udbff x\"", NF_JSON_STRING_LONE_SURROGATE, 3, 12);
    REFUSED("\"\\ud800\\u0041\"", NF_JSON_STRING_LONE_SURROGATE, 1, 14); /* a high one, then no low one */
    REFUSED("\"\\ud800\\ud800\"", NF_JSON_STRING_LONE_SURROGATE, 1, 14);
    REFUSED("\"\\ud800\\uZZZZ\"", NF_JSON_STRING_LONE_SURROGATE, 1, 14);
    REFUSED("\"\\udc00\"", NF_JSON_STRING_LONE_SURROGATE, 1, 8);         /* a low one alone */
    REFUSED("\"\\ude00\\ud83d\"", NF_JSON_STRING_LONE_SURROGATE, 1, 14); /* a pair the wrong way round */
}

Test(json_string, bad_escapes)
{
    REFUSED("\"\\x\"", NF_JSON_STRING_BAD_ESCAPE, 1, 4);
    REFUSED("\"ab\\'\"", NF_JSON_STRING_BAD_ESCAPE, 3, 6);
    REFUSED("\"\\u12\"", NF_JSON_STRING_BAD_ESCAPE, 1, 6);
    REFUSED("\"\\u12g4\"", NF_JSON_STRING_BAD_ESCAPE, 1, 8);
    refused("\"\\\0\"", 4, NF_JSON_STRING_BAD_ESCAPE, 1, 4);
    REFUSED("\"\\U0041\"", NF_JSON_STRING_BAD_ESCAPE, 1, 8);
}

Test(json_string, control_characters)
{
    REFUSED("\"a\nb\"", NF_JSON_STRING_CONTROL, 2, 5);
    REFUSED("\"\tb\"", NF_JSON_STRING_CONTROL, 1, 4);
    refused("\"a\0b\"", 5, NF_JSON_STRING_CONTROL, 2, 5);
    REFUSED("\"\x1f\"", NF_JSON_STRING_CONTROL, 1, 3);
    DECODES("\"\x20\x7f\"", "\x20\x7f");
    REFUSED("\"\x01\\x\"", NF_JSON_STRING_CONTROL, 1, 5); /* the first problem in reading order */
}

Test(json_string, unclosed)
{
    REFUSED("\"", NF_JSON_STRING_UNCLOSED, 0, 1);
    REFUSED("\"abc", NF_JSON_STRING_UNCLOSED, 0, 4);
    REFUSED("\"abc\\", NF_JSON_STRING_UNCLOSED, 0, 5);   /* a backslash at the end */
    REFUSED("\"abc\\\"", NF_JSON_STRING_UNCLOSED, 0, 6); /* an escaped quote closes nothing */
    REFUSED("\"\\u00", NF_JSON_STRING_BAD_ESCAPE, 1, 5); /* another problem first */
    REFUSED("\"a\nb", NF_JSON_STRING_CONTROL, 2, 4);
    size_t end = 77;
    cr_assert_not(nf_json_string_end("\"abc", 4, 0, &end));
    cr_assert_eq(end, 77, "end untouched when not closed");
    cr_assert(nf_json_string_end("x\"a\\\"b\"y", 8, 1, &end));
    cr_assert_eq(end, 7);
}

/* ---------------------------------------------------------------- the replaced scanners */
/* The lexical rule of json_prescan.c, json_walk.c and the safetensors pre-scans, as they were:
 * past the closing quote, 0 when the text ends first. */
static size_t old_lexical_end(const char *t, size_t n)
{
    bool esc = false;
    for (size_t i = 1; i < n; i++) {
        if (esc) esc = false;
        else if (t[i] == '\\') esc = true;
        else if (t[i] == '"') return i + 1;
    }
    return 0;
}

static int old_hex4(const char *p)
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

static size_t old_put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* budget/sensitivity.c's json_string as it was, its messages as problems: the problem, *where,
 * and on success the decoded bytes and *end -- but for a text that ends in a backslash inside the
 * string, on which it never returned (now "not closed", as the walk and the pre-scans judge it). */
static nf_json_string_problem old_decode(const char *t, size_t n, char *o, size_t *len, size_t *where, size_t *end)
{
    size_t i = 1;
    *len = 0;
    for (;;) {
        if (i >= n) {
            *where = 0;
            return NF_JSON_STRING_UNCLOSED;
        }
        unsigned char c = (unsigned char)t[i];
        if (c == '"') break;
        if (c < 0x20) {
            *where = i;
            return NF_JSON_STRING_CONTROL;
        }
        if (c != '\\') {
            o[(*len)++] = (char)c;
            i++;
            continue;
        }
        if (i + 1 >= n) { /* the original went on with the same byte here, for ever: the one change */
            *where = 0;
            return NF_JSON_STRING_UNCLOSED;
        }
        char e = t[i + 1];
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e && simple) {
            o[(*len)++] = "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
            i += 2;
            continue;
        }
        int cp = e == 'u' && i + 6 <= n ? old_hex4(t + i + 2) : -1;
        if (cp < 0) {
            *where = i;
            return NF_JSON_STRING_BAD_ESCAPE;
        }
        i += 6;
        if (cp >= 0xD800 && cp < 0xDC00) {
            int lo = i + 6 <= n && t[i] == '\\' && t[i + 1] == 'u' ? old_hex4(t + i + 2) : -1;
            if (lo < 0xDC00 || lo > 0xDFFF) {
                *where = i - 6;
                return NF_JSON_STRING_LONE_SURROGATE;
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            i += 6;
        } else if (cp >= 0xDC00 && cp < 0xE000) {
            *where = i - 6;
            return NF_JSON_STRING_LONE_SURROGATE;
        }
        *len += old_put_utf8(o + *len, (unsigned)cp);
    }
    *end = i + 1;
    return NF_JSON_STRING_OK;
}

/* A random token: an opening quote, then pieces drawn from the ones that matter. */
static size_t random_token(char *t, size_t cap)
{
    static const char *const pieces[] = {"a",       "\"",       "\\",      "\\\"",    "\\\\",    "\\n",     "\\/",
                                         "\\x",     "\\u",      "\\u0041", "\\u00e9", "\\u20ac", "\\ud83d", "\\ude00",
                                         "\\uDBFF", "\\uDC00",  "\\u12",   "\\uZZZZ", "\n",      "\x01",    "\x1f",
                                         " ",       "\xc3\xa9", "\xff",    "0",       "d",       "u"};
    size_t n = 0, npieces = 1 + rng32() % 8;
    t[n++] = '"';
    for (size_t k = 0; k < npieces; k++) {
        const char *p = pieces[rng32() % (sizeof pieces / sizeof pieces[0])];
        size_t len = strlen(p);
        if (n + len > cap) break;
        memcpy(t + n, p, len);
        n += len;
    }
    if (rng32() % 4 == 0 && n < cap) t[n++] = '\0'; /* a NUL inside or at the end */
    if (rng32() % 3 != 0 && n < cap) t[n++] = '"';
    return n;
}

Test(json_string, the_replaced_scanners_agree, .timeout = 60)
{
    char t[128], o[256], oo[256];
    for (int round = 0; round < 400000; round++) {
        size_t n = random_token(t, sizeof t);
        nf_json_string_token tok;
        nf_json_string_problem p = nf_json_string_scan(t, n, 0, o, &tok);
        size_t lex = old_lexical_end(t, n), end = 0;
        if (lex ? !tok.closed || tok.end != lex : tok.closed)
            cr_assert_fail("round %d: extent %zu, lexical %zu", round, tok.end, lex);
        if (nf_json_string_end(t, n, 0, &end) != (lex != 0) || (lex && end != lex))
            cr_assert_fail("round %d: end", round);
        size_t len = 0, where = 0, oend = 0;
        nf_json_string_problem op = old_decode(t, n, oo, &len, &where, &oend);
        if (op != p) cr_assert_fail("round %d: problem %d, the old decoder's %d", round, p, op);
        if (op != NF_JSON_STRING_OK && tok.where != where)
            cr_assert_fail("round %d: at %zu, old %zu", round, tok.where, where);
        if (op == NF_JSON_STRING_OK && (tok.end != oend || tok.len != len || memcmp(o, oo, len) != 0))
            cr_assert_fail("round %d: decoded differently", round);
    }
}
