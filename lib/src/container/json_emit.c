/* JSON text byte-identical to Python's
 *   json.dumps(v, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
 * which is what the upstream writer stores (docs/artifact.md 6 item 3).  jansson's own dumper
 * differs (number formatting, escapes), and upstream readers compare nothing byte-wise, but
 * our artifacts must be byte-for-byte what the upstream writer would produce. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "container/container_internal.h"

/* Python raises RecursionError around depth 1000; refuse earlier than the C stack would. */
#define NF_JSON_MAX_DEPTH 900

/* ---------------------------------------------------------------- floats */
/* Digits of the p-significant-digit decimal nearest to v (v > 0), as printf rounds it: digits
 * (no point) and the decimal exponent of the first digit. */
static void nearest_digits(double v, int p, char *digits, int *exp10)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%.*e", p - 1, v);
    /* The decimal point is locale-dependent: take the digits and skip anything else. */
    size_t n = 0;
    const char *s = buf;
    for (; *s && *s != 'e' && *s != 'E'; s++)
        if (*s >= '0' && *s <= '9') digits[n++] = *s;
    digits[n] = '\0';
    *exp10 = (*s) ? atoi(s + 1) : 0;
}

/* Does digits x 10^(exp10 - ndigits + 1) read back as v?  The text has no decimal point, so the
 * check does not depend on the locale either. */
static bool reads_back(const char *digits, int exp10, double v)
{
    char buf[64];
    int n = (int)strlen(digits);
    snprintf(buf, sizeof buf, "%se%d", digits, exp10 - n + 1);
    return strtod(buf, NULL) == v;
}

/* Add delta (+1 or -1) to the last digit of a p-digit string, carrying; keeps p digits (a carry
 * out of the top digit or a borrow below 10^(p-1) changes exp10).  Returns false when the
 * result would have no leading nonzero digit. */
static bool step_digits(char *digits, int *exp10, int delta)
{
    int n = (int)strlen(digits);
    if (delta > 0) {
        int i = n - 1;
        while (i >= 0 && digits[i] == '9') digits[i--] = '0';
        if (i >= 0) {
            digits[i]++;
            return true;
        }
        /* 999 + 1 = 1000 -> "100" with exponent + 1 */
        digits[0] = '1';
        for (int k = 1; k < n; k++) digits[k] = '0';
        (*exp10)++;
        return true;
    }
    int i = n - 1;
    while (i >= 0 && digits[i] == '0') digits[i--] = '9';
    if (i < 0) return false;
    digits[i]--;
    if (digits[0] == '0') {
        /* 100 - 1 = 099 -> "999" with exponent - 1: the next p-digit decimal below a power of
         * ten has the finer spacing of the lower decade */
        memmove(digits, digits + 1, (size_t)n - 1);
        digits[n - 1] = '9';
        (*exp10)--;
    }
    return true;
}

/* Shortest digit string that reads back as v (v > 0, finite), and among those the nearest to v:
 * what David Gay's dtoa mode 0 returns and Python's repr uses.  The nearest p-digit decimal is
 * tried first; next to a power of two the rounding interval is lopsided, so one neighbour on
 * the wide side may read back when the nearest does not. */
static void shortest_digits(double v, char digits[32], int *exp10)
{
    for (int p = 1; p <= 17; p++) {
        nearest_digits(v, p, digits, exp10);
        if (reads_back(digits, *exp10, v)) return;
        for (int delta = -1; delta <= 1; delta += 2) {
            char alt[32];
            int e = *exp10;
            memcpy(alt, digits, strlen(digits) + 1);
            if (step_digits(alt, &e, delta) && reads_back(alt, e, v)) {
                memcpy(digits, alt, strlen(alt) + 1);
                *exp10 = e;
                return;
            }
        }
    }
    nearest_digits(v, 17, digits, exp10); /* 17 digits always read back */
}

size_t nf_json_format_real(double v, char out[32])
{
    size_t o = 0;
    if (signbit(v)) {
        out[o++] = '-';
        v = -v;
    }
    if (v == 0.0) {
        memcpy(out + o, "0.0", 4);
        return o + 3;
    }
    char digits[32];
    int exp10;
    shortest_digits(v, digits, &exp10);
    int nd = (int)strlen(digits);
    while (nd > 1 && digits[nd - 1] == '0') digits[--nd] = '\0';
    int decpt = exp10 + 1; /* v = 0.d1d2... x 10^decpt */
    if (decpt <= -4 || decpt > 16) {
        /* Python: "1e-05", "1.5e+16": mantissa without ".0", exponent signed, >= 2 digits */
        out[o++] = digits[0];
        if (nd > 1) {
            out[o++] = '.';
            memcpy(out + o, digits + 1, (size_t)nd - 1);
            o += (size_t)nd - 1;
        }
        int e = decpt - 1;
        int n = snprintf(out + o, 32 - o, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
        return o + (size_t)n;
    }
    if (decpt <= 0) {
        out[o++] = '0';
        out[o++] = '.';
        for (int k = 0; k < -decpt; k++) out[o++] = '0';
        memcpy(out + o, digits, (size_t)nd);
        o += (size_t)nd;
    } else if (decpt >= nd) {
        memcpy(out + o, digits, (size_t)nd);
        o += (size_t)nd;
        for (int k = nd; k < decpt; k++) out[o++] = '0';
        out[o++] = '.';
        out[o++] = '0';
    } else {
        memcpy(out + o, digits, (size_t)decpt);
        o += (size_t)decpt;
        out[o++] = '.';
        memcpy(out + o, digits + decpt, (size_t)(nd - decpt));
        o += (size_t)(nd - decpt);
    }
    out[o] = '\0';
    return o;
}

/* ---------------------------------------------------------------- strings */
/* Python's py_encode_basestring (ensure_ascii=False): escapes only '"', '\\' and the C0
 * controls; \b \f \n \r \t get their short forms, the rest \u00XX with lowercase hex.  DEL and
 * everything non-ASCII stay raw. */
static bool emit_string(nf_buf *out, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    if (!nf_buf_putc(out, '"')) return false;
    size_t run = 0; /* start of the pending run of unescaped bytes */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char u[7];
        if (c == '"') esc = "\\\"";
        else if (c == '\\') esc = "\\\\";
        else if (c == '\n') esc = "\\n";
        else if (c == '\r') esc = "\\r";
        else if (c == '\t') esc = "\\t";
        else if (c == '\b') esc = "\\b";
        else if (c == '\f') esc = "\\f";
        else if (c < 0x20) {
            u[0] = '\\';
            u[1] = 'u';
            u[2] = '0';
            u[3] = '0';
            u[4] = hex[c >> 4];
            u[5] = hex[c & 15];
            u[6] = '\0';
            esc = u;
        }
        if (esc) {
            if (!nf_buf_append(out, s + run, i - run) || !nf_buf_append(out, esc, strlen(esc))) return false;
            run = i + 1;
        }
    }
    return nf_buf_append(out, s + run, len - run) && nf_buf_putc(out, '"');
}

/* ---------------------------------------------------------------- values */
typedef struct emit_ctx {
    nf_buf *out;
    nf_json_string_hook hook;
    void *hook_ctx;
    nf_error *err;
} emit_ctx;

static nf_status nomem(emit_ctx *c) { return nf_error_set(c->err, NF_ERR_NOMEM, "JSON text: out of memory"); }

static nf_status emit_value(emit_ctx *c, const json_t *v, int depth)
{
    if (depth > NF_JSON_MAX_DEPTH)
        return nf_error_set(c->err, NF_ERR_INVALID, "JSON value nests deeper than %d levels", NF_JSON_MAX_DEPTH);
    nf_buf *out = c->out;
    switch (json_typeof(v)) {
    case JSON_NULL: return nf_buf_append(out, "null", 4) ? NF_OK : nomem(c);
    case JSON_TRUE: return nf_buf_append(out, "true", 4) ? NF_OK : nomem(c);
    case JSON_FALSE: return nf_buf_append(out, "false", 5) ? NF_OK : nomem(c);
    case JSON_INTEGER: {
        char num[32];
        int n = snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
        return nf_buf_append(out, num, (size_t)n) ? NF_OK : nomem(c);
    }
    case JSON_REAL: {
        double d = json_real_value(v);
        if (!isfinite(d))
            return nf_error_set(c->err, NF_ERR_INVALID, "JSON value: out of range float values are not JSON compliant");
        char num[32];
        size_t n = nf_json_format_real(d, num);
        return nf_buf_append(out, num, n) ? NF_OK : nomem(c);
    }
    case JSON_STRING: {
        const char *s = json_string_value(v);
        size_t len = json_string_length(v);
        size_t bad;
        if (!nf_utf8_valid((const uint8_t *)s, len, &bad))
            return nf_error_set(c->err, NF_ERR_INVALID, "JSON string is not valid UTF-8 (byte %zu)", bad);
        if (c->hook) c->hook(c->hook_ctx, v, out->len + 1);
        return emit_string(out, s, len) ? NF_OK : nomem(c);
    }
    case JSON_ARRAY: {
        if (!nf_buf_putc(out, '[')) return nomem(c);
        size_t n = json_array_size(v);
        for (size_t i = 0; i < n; i++) {
            if (i && !nf_buf_putc(out, ',')) return nomem(c);
            NF_TRY(emit_value(c, json_array_get(v, i), depth + 1));
        }
        return nf_buf_putc(out, ']') ? NF_OK : nomem(c);
    }
    case JSON_OBJECT: {
        if (!nf_buf_putc(out, '{')) return nomem(c);
        const char *key;
        json_t *val;
        bool first = true;
        /* jansson (>= 2.8) iterates in insertion order, which is Python's dict order. */
        json_object_foreach((json_t *)v, key, val)
        {
            if (!first && !nf_buf_putc(out, ',')) return nomem(c);
            first = false;
            size_t klen = strlen(key);
            size_t bad;
            if (!nf_utf8_valid((const uint8_t *)key, klen, &bad))
                return nf_error_set(c->err, NF_ERR_INVALID, "JSON member name is not valid UTF-8 (byte %zu)", bad);
            if (!emit_string(out, key, klen) || !nf_buf_putc(out, ':')) return nomem(c);
            NF_TRY(emit_value(c, val, depth + 1));
        }
        return nf_buf_putc(out, '}') ? NF_OK : nomem(c);
    }
    }
    return nf_error_set(c->err, NF_ERR_INVALID, "JSON value of an unknown type");
}

nf_status nf_json_emit(const json_t *v, nf_buf *out, nf_json_string_hook hook, void *hook_ctx, nf_error *err)
{
    if (!v) return nf_error_set(err, NF_ERR_USAGE, "JSON value is NULL");
    emit_ctx c = {out, hook, hook_ctx, err};
    return emit_value(&c, v, 0);
}
