/* Strict UTF-8 decoding and encoding (common/utf8.h). */
#include "common/utf8.h"

size_t nf_utf8_decode(const uint8_t *p, size_t n, uint32_t *cp)
{
    uint8_t c = p[0];
    if (c < 0x80) {
        if (cp) *cp = c;
        return 1;
    }
    /* the lead byte gives the length; the second byte's range excludes the overlong forms (E0,
     * F0), the surrogates (ED) and what lies beyond U+10FFFF (F4), so no value is checked after */
    size_t need;
    uint8_t lo = 0x80, hi = 0xBF;
    uint32_t v;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
        v = c & 0x1Fu;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        v = c & 0x0Fu;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        v = c & 0x07u;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return 0; /* a continuation byte, C0/C1 (always overlong) or F5..FF */
    }
    if (n <= need || p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 1; i <= need; i++) {
        if (!nf_utf8_continues(p[i])) return 0;
        v = (v << 6) | (p[i] & 0x3Fu);
    }
    if (cp) *cp = v;
    return need + 1;
}

size_t nf_utf8_encode(uint32_t cp, uint8_t out[4])
{
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xC0u | (cp >> 6));
        out[1] = (uint8_t)(0x80u | (cp & 0x3Fu));
        return 2;
    }
    if (cp >= 0xD800 && cp <= 0xDFFF) return 0; /* a surrogate: no scalar value */
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xE0u | (cp >> 12));
        out[1] = (uint8_t)(0x80u | ((cp >> 6) & 0x3Fu));
        out[2] = (uint8_t)(0x80u | (cp & 0x3Fu));
        return 3;
    }
    if (cp > 0x10FFFF) return 0;
    out[0] = (uint8_t)(0xF0u | (cp >> 18));
    out[1] = (uint8_t)(0x80u | ((cp >> 12) & 0x3Fu));
    out[2] = (uint8_t)(0x80u | ((cp >> 6) & 0x3Fu));
    out[3] = (uint8_t)(0x80u | (cp & 0x3Fu));
    return 4;
}

bool nf_utf8_valid(const uint8_t *s, size_t len, size_t *bad)
{
    for (size_t i = 0, k; i < len; i += k) {
        if ((k = nf_utf8_decode(s + i, len - i, NULL)) == 0) {
            if (bad) *bad = i;
            return false;
        }
    }
    return true;
}
