/* Escaping of names from files for human output (ninfer/escape.h has the rule and why). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <ninfer/escape.h>

#include "common/utf8.h"

/* Code points a terminal or a bidi-aware viewer acts on rather than shows. */
static int is_format_control(uint32_t cp)
{
    return (cp >= 0x80 && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
           (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 || cp == 0x2029;
}

/* The escaped form of the character at p[0] (n bytes left) into piece; returns its length and
 * sets *used to the bytes of the input it stands for. */
static size_t escape_one(const unsigned char *p, size_t n, unsigned flags, char piece[16], size_t *used)
{
    uint32_t cp = 0;
    size_t k = nf_utf8_decode(p, n, &cp);
    *used = k ? k : 1;
    if (k == 0) return (size_t)snprintf(piece, 16, "\\x%02x", p[0]);
    if (k == 1 && cp == '\n' && (flags & NF_ESCAPE_KEEP_NEWLINE)) {
        piece[0] = '\n';
        return 1;
    }
    if (k == 1 && (cp < 0x20 || cp == 0x7F)) {
        const char *e = cp == '\n' ? "\\n" : cp == '\r' ? "\\r" : cp == '\t' ? "\\t" : NULL;
        if (e) return (size_t)snprintf(piece, 16, "%s", e);
        return (size_t)snprintf(piece, 16, "\\x%02x", (unsigned)cp);
    }
    if (k == 1 && cp == '\\' && !(flags & NF_ESCAPE_KEEP_BACKSLASH)) return (size_t)snprintf(piece, 16, "\\\\");
    if (is_format_control(cp)) return (size_t)snprintf(piece, 16, "\\u%04x", (unsigned)cp);
    memcpy(piece, p, k);
    return k;
}

const char *nf_escape(const char *s, size_t len, unsigned flags, char *buf, size_t size)
{
    if (!buf || size == 0) return buf;
    if (!s) {
        snprintf(buf, size, "(null)");
        return buf;
    }
    const unsigned char *p = (const unsigned char *)s;
    char piece[16];
    size_t used, total = 0;
    for (size_t i = 0; i < len; i += used) total += escape_one(p + i, len - i, flags, piece, &used);
    /* When all of it does not fit, stop where "..." and the NUL still fit after the last whole
     * character (a character's escape is never split). */
    size_t limit = total < size ? size - 1 : (size >= 4 ? size - 4 : 0);
    size_t o = 0, i = 0;
    while (i < len) {
        size_t plen = escape_one(p + i, len - i, flags, piece, &used);
        if (o + plen > limit) break;
        memcpy(buf + o, piece, plen);
        o += plen;
        i += used;
    }
    if (i < len && size >= 4) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o] = '\0';
    return buf;
}

nf_escaped nf_esc(const char *s)
{
    nf_escaped e;
    nf_escape(s, s ? strlen(s) : 0, 0, e.s, sizeof e.s);
    return e;
}
