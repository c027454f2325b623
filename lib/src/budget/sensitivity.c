/* The budget's sensitivity file, read as sensitivity.h says: a small scanner of its own for each
 * spelling, so that every refusal knows its line, column and byte (a tree built by a JSON
 * library would have lost where each member was). */
#include "budget/sensitivity.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ninfer/escape.h>

#include "common/fail.h"
#include "common/json_string.h"
#include "common/open_regular.h"
#include "common/strset.h"
#include "common/utf8.h"

/* ---------------------------------------------------------------- the reader's state */
typedef struct reader {
    const char *path, *t;
    size_t n, i;
    nf_sensitivity *out;
    size_t cap;
    nf_strset seen; /* names -> entry */
    nf_error *err;
} reader;

static void position(const reader *r, size_t at, uint64_t *line, uint64_t *col)
{
    *line = 1;
    size_t start = 0;
    for (size_t k = 0; k < at && k < r->n; k++)
        if (r->t[k] == '\n') {
            (*line)++;
            start = k + 1;
        }
    *col = at - start + 1;
}

/* "PATH:LINE:COL (byte B): [tensor 'NAME': ]WHAT" */
static nf_status fail_at(reader *r, size_t at, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static nf_status fail_at(reader *r, size_t at, const char *name, const char *fmt, ...)
{
    char what[NF_ERROR_MESSAGE_MAX / 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    uint64_t line, col;
    position(r, at, &line, &col);
    if (name)
        return nf_error_set(r->err, NF_ERR_INVALID, "%s:%llu:%llu (byte %zu): tensor '%s': %s", r->path,
                            (unsigned long long)line, (unsigned long long)col, at, nf_esc(name).s, what);
    return nf_error_set(r->err, NF_ERR_INVALID, "%s:%llu:%llu (byte %zu): %s", r->path, (unsigned long long)line,
                        (unsigned long long)col, at, what);
}

/* The factor's text [a, b) as a number: finite and >= 0, else the refusal naming the tensor. */
static nf_status take_factor(reader *r, const char *name, size_t a, size_t b, double *out)
{
    char buf[64];
    size_t len = b - a;
    if (len == 0) return fail_at(r, a, name, "expected a factor (a number >= 0)");
    if (len >= sizeof buf) return fail_at(r, a, name, "expected a factor (a number >= 0), got %zu bytes", len);
    memcpy(buf, r->t + a, len);
    buf[len] = '\0';
    char *end = NULL;
    errno = 0;
    double v = strtod(buf, &end);
    if (end != buf + len || len == 0)
        return fail_at(r, a, name, "expected a factor (a number >= 0), got '%s'", nf_esc(buf).s);
    if (!isfinite(v)) return fail_at(r, a, name, "factor %s is not a finite number", nf_esc(buf).s);
    if (v < 0 || (v == 0 && signbit(v)))
        return fail_at(r, a, name, "factor %s is negative: a factor is a number >= 0", nf_esc(buf).s);
    *out = v;
    return NF_OK;
}

/* One entry: its name (owned by the entry from here on, freed on failure) at byte at. */
static nf_status add_entry(reader *r, char *name, size_t at, double factor)
{
    nf_sensitivity *s = r->out;
    if (s->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 64;
        char **names = realloc(s->names, cap * sizeof *names);
        if (names) s->names = names;
        double *f = names ? realloc(s->factors, cap * sizeof *f) : NULL;
        if (f) s->factors = f;
        uint64_t *l = f ? realloc(s->line, cap * sizeof *l) : NULL;
        if (l) s->line = l;
        uint64_t *c = l ? realloc(s->col, cap * sizeof *c) : NULL;
        if (c) s->col = c;
        uint64_t *b = c ? realloc(s->byte, cap * sizeof *b) : NULL;
        if (b) s->byte = b;
        if (!b) {
            free(name);
            return nf_error_set(r->err, NF_ERR_NOMEM, "out of memory reading %s", r->path);
        }
        r->cap = cap;
    }
    s->names[s->n] = name;
    s->factors[s->n] = factor;
    s->byte[s->n] = at; /* line and col: one sweep at the end (locate) */
    size_t first;
    int ins = nf_strset_insert(&r->seen, name, NULL, s->n, &first);
    s->n++;
    if (ins < 0) return nf_error_set(r->err, NF_ERR_NOMEM, "out of memory reading %s", r->path);
    if (ins == 0) {
        uint64_t line, col;
        position(r, s->byte[first], &line, &col);
        return fail_at(r, at, name, "given twice (first at line %llu): a tensor has one factor",
                       (unsigned long long)line);
    }
    return NF_OK;
}

/* A name must be UTF-8 without NUL: tensor names are. */
static nf_status check_name(reader *r, const char *name, size_t len, size_t at)
{
    size_t bad;
    if (memchr(name, '\0', len)) return fail_at(r, at, NULL, "a tensor name holds a NUL character");
    if (!nf_utf8_valid((const uint8_t *)name, len, &bad))
        return fail_at(r, at + bad, NULL, "a tensor name is not UTF-8");
    return NF_OK;
}

/* ---------------------------------------------------------------- JSON */
static void skip_space(reader *r)
{
    while (r->i < r->n && (r->t[r->i] == ' ' || r->t[r->i] == '\t' || r->t[r->i] == '\n' || r->t[r->i] == '\r')) r->i++;
}

/* The string token at r->i (its opening quote), decoded into a fresh NUL-terminated name. */
static nf_status json_string(reader *r, char **out)
{
    size_t at = r->i;
    char *o = malloc(r->n - at + 1); /* decoding never lengthens the text */
    if (!o) return nf_error_set(r->err, NF_ERR_NOMEM, "out of memory reading %s", r->path);
    nf_json_string_token tok;
    const char *why = NULL;
    switch (nf_json_string_scan(r->t, r->n, at, o, &tok)) {
    case NF_JSON_STRING_OK: break;
    case NF_JSON_STRING_UNCLOSED: why = "a string is not closed"; break;
    case NF_JSON_STRING_CONTROL: why = "a control character in a string (escape it)"; break;
    case NF_JSON_STRING_BAD_ESCAPE: why = "a bad escape in a string"; break;
    case NF_JSON_STRING_LONE_SURROGATE: why = "a lone surrogate escape in a string"; break;
    }
    if (why) {
        free(o);
        return fail_at(r, tok.where, NULL, "%s", why);
    }
    r->i = tok.end;
    o[tok.len] = '\0';
    nf_status st = check_name(r, o, tok.len, at);
    if (st != NF_OK) {
        free(o);
        return st;
    }
    *out = o;
    return NF_OK;
}

/* A number's extent by JSON's grammar, or the word a writer may have put for a non-finite one
 * (Python's NaN, Infinity, -Infinity): the factor check names it. */
static size_t json_number_end(const reader *r, size_t i)
{
    size_t j = i;
    while (j < r->n && (strchr("+-.eE", r->t[j]) || (r->t[j] >= '0' && r->t[j] <= '9') ||
                        (r->t[j] >= 'A' && r->t[j] <= 'Z') || (r->t[j] >= 'a' && r->t[j] <= 'z')))
        j++;
    return j;
}

/* JSON's number grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool json_number_ok(const char *p, size_t n)
{
    size_t i = 0;
    if (i < n && p[i] == '-') i++;
    if (i < n && p[i] == '0') i++;
    else if (i < n && p[i] >= '1' && p[i] <= '9')
        while (i < n && p[i] >= '0' && p[i] <= '9') i++;
    else return false;
    if (i < n && p[i] == '.') {
        size_t d = ++i;
        while (i < n && p[i] >= '0' && p[i] <= '9') i++;
        if (i == d) return false;
    }
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        i++;
        if (i < n && (p[i] == '+' || p[i] == '-')) i++;
        size_t d = i;
        while (i < n && p[i] >= '0' && p[i] <= '9') i++;
        if (i == d) return false;
    }
    return i == n;
}

static nf_status read_json(reader *r)
{
    skip_space(r);
    if (r->i >= r->n || r->t[r->i] != '{')
        return fail_at(r, r->i, NULL, "expected a JSON object of tensor names and factors");
    r->i++;
    skip_space(r);
    if (r->i < r->n && r->t[r->i] == '}') {
        r->i++;
    } else {
        for (;;) {
            skip_space(r);
            size_t at = r->i;
            if (r->i >= r->n || r->t[r->i] != '"') return fail_at(r, r->i, NULL, "expected a tensor name (a string)");
            char *name = NULL;
            NF_TRY(json_string(r, &name));
            skip_space(r);
            if (r->i >= r->n || r->t[r->i] != ':') {
                nf_status st = fail_at(r, r->i, name, "expected ':' after the name");
                free(name);
                return st;
            }
            r->i++;
            skip_space(r);
            size_t a = r->i, b = json_number_end(r, a);
            double f = 0;
            nf_status st = NF_OK;
            if (b > a && !json_number_ok(r->t + a, b - a) && (r->t[a] == '-' || (r->t[a] >= '0' && r->t[a] <= '9')))
                st = fail_at(r, a, name, "expected a factor (a JSON number >= 0)");
            else if (b == a) st = fail_at(r, a, name, "expected a factor (a JSON number >= 0)");
            if (st == NF_OK) st = take_factor(r, name, a, b, &f);
            if (st != NF_OK) {
                free(name);
                return st;
            }
            r->i = b;
            NF_TRY(add_entry(r, name, at, f));
            skip_space(r);
            if (r->i < r->n && r->t[r->i] == ',') {
                r->i++;
                continue;
            }
            if (r->i < r->n && r->t[r->i] == '}') {
                r->i++;
                break;
            }
            return fail_at(r, r->i, NULL, "expected ',' or '}' after a factor");
        }
    }
    skip_space(r);
    if (r->i < r->n) return fail_at(r, r->i, NULL, "text after the JSON object");
    return NF_OK;
}

/* ---------------------------------------------------------------- CSV */
static bool blank(char c) { return c == ' ' || c == '\t'; }

/* One line [a, b) (no newline; a trailing '\r' dropped by the caller). */
static nf_status read_csv_line(reader *r, size_t a, size_t b, bool first)
{
    size_t i = a;
    while (i < b && blank(r->t[i])) i++;
    if (i == b || r->t[i] == '#') return NF_OK;
    char *name = NULL;
    size_t at = i, comma;
    if (r->t[i] == '"') { /* "quoted", "" for a quote */
        name = malloc(b - i + 1);
        if (!name) return nf_error_set(r->err, NF_ERR_NOMEM, "out of memory reading %s", r->path);
        size_t len = 0;
        for (i++;; i++) {
            if (i >= b) {
                free(name);
                return fail_at(r, at, NULL, "a quoted name is not closed on its line");
            }
            if (r->t[i] == '"' && i + 1 < b && r->t[i + 1] == '"') {
                name[len++] = '"';
                i++;
            } else if (r->t[i] == '"') {
                break;
            } else {
                name[len++] = r->t[i];
            }
        }
        name[len] = '\0';
        for (i++; i < b && blank(r->t[i]);) i++;
        if (i >= b || r->t[i] != ',') {
            nf_status st = fail_at(r, i, NULL, "expected ',' after the quoted name");
            free(name);
            return st;
        }
        comma = i;
        nf_status st = check_name(r, name, len, at);
        if (st != NF_OK) {
            free(name);
            return st;
        }
    } else {
        comma = b;
        for (size_t k = i; k < b; k++)
            if (r->t[k] == ',') comma = k;
        if (comma == b) return fail_at(r, at, NULL, "expected NAME,FACTOR");
        size_t e = comma;
        while (e > i && blank(r->t[e - 1])) e--;
        if (e == i) return fail_at(r, at, NULL, "expected NAME,FACTOR: the name is empty");
        NF_TRY(check_name(r, r->t + i, e - i, i));
        if (!(name = strndup(r->t + i, e - i))) return nf_common_nomem(r->err);
    }
    size_t fa = comma + 1, fb = b;
    while (fa < fb && blank(r->t[fa])) fa++;
    while (fb > fa && blank(r->t[fb - 1])) fb--;
    if (first && !strcasecmp(name, "name") && fb - fa == 6 && !strncasecmp(r->t + fa, "factor", 6)) {
        free(name); /* the header */
        return NF_OK;
    }
    double f;
    nf_status st = take_factor(r, name, fa, fb, &f);
    if (st != NF_OK) {
        free(name);
        return st;
    }
    return add_entry(r, name, at, f);
}

static nf_status read_csv(reader *r)
{
    bool first = true;
    for (size_t a = 0; a < r->n;) {
        size_t b = a;
        while (b < r->n && r->t[b] != '\n') b++;
        size_t e = b > a && r->t[b - 1] == '\r' ? b - 1 : b;
        NF_TRY(read_csv_line(r, a, e, first));
        size_t i = a;
        while (i < e && blank(r->t[i])) i++;
        if (i < e && r->t[i] != '#') first = false; /* the header is the first line with text */
        a = b + 1;
    }
    return NF_OK;
}

/* The line and column of every entry, in one sweep (entries come in the text's order). */
static void locate(const reader *r)
{
    nf_sensitivity *s = r->out;
    uint64_t line = 1;
    size_t start = 0, k = 0;
    for (size_t e = 0; e < s->n; e++) {
        for (; k < s->byte[e]; k++)
            if (r->t[k] == '\n') {
                line++;
                start = k + 1;
            }
        s->line[e] = line;
        s->col[e] = s->byte[e] - start + 1;
    }
}

/* ---------------------------------------------------------------- entry points */
nf_status nf_sensitivity_parse(const char *path, const char *text, size_t len, nf_sensitivity *out, nf_error *err)
{
    memset(out, 0, sizeof *out);
    reader r = {.path = path, .t = text, .n = len, .out = out, .err = err};
    skip_space(&r);
    bool json = r.i < r.n && r.t[r.i] == '{';
    if (r.i < r.n && r.t[r.i] == '[') {
        nf_status st = fail_at(&r, r.i, NULL, "expected a JSON object of tensor names and factors, not an array");
        nf_strset_free(&r.seen);
        return st;
    }
    r.i = 0;
    nf_status st = json ? read_json(&r) : read_csv(&r);
    nf_strset_free(&r.seen);
    if (st == NF_OK) locate(&r);
    if (st != NF_OK) nf_sensitivity_free(out);
    return st;
}

nf_status nf_sensitivity_read(const char *path, nf_sensitivity *out, nf_error *err)
{
    memset(out, 0, sizeof *out);
    /* (a FIFO is refused, not waited for: common/open_regular.h) */
    int fd;
    struct stat sb;
    NF_TRY(nf_common_open_regular(path, path, NF_ERR_INVALID, &fd, &sb, err));
    if ((uint64_t)sb.st_size > NF_SENSITIVITY_MAX_BYTES) {
        close(fd);
        return nf_error_set(err, NF_ERR_INVALID, "%s: the sensitivity file has %llu bytes, more than its cap of %llu",
                            path, (unsigned long long)sb.st_size, (unsigned long long)NF_SENSITIVITY_MAX_BYTES);
    }
    size_t size = (size_t)sb.st_size, got = 0;
    char *text = malloc(size ? size : 1);
    if (!text) {
        close(fd);
        return nf_error_set(err, NF_ERR_NOMEM, "out of memory reading %s", path);
    }
    while (got < size) {
        ssize_t k = read(fd, text + got, size - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            int e = k < 0 ? errno : EIO;
            free(text);
            close(fd);
            return nf_error_errno(err, e, "cannot read %s", path);
        }
        got += (size_t)k;
    }
    close(fd);
    nf_status st = nf_sensitivity_parse(path, text, size, out, err);
    free(text);
    return st;
}

size_t nf_sensitivity_find(const nf_sensitivity *s, const char *name)
{
    for (size_t i = 0; s && i < s->n; i++)
        if (!strcmp(s->names[i], name)) return i;
    return SIZE_MAX;
}

void nf_sensitivity_free(nf_sensitivity *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->n; i++) free(s->names[i]);
    free(s->names);
    free(s->factors);
    free(s->line);
    free(s->col);
    free(s->byte);
    memset(s, 0, sizeof *s);
}
