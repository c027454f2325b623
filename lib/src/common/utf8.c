/* Strict UTF-8 validation (common/utf8.h). */
#include "common/utf8.h"

bool nf_utf8_valid(const uint8_t *s, size_t len, size_t *bad)
{
    size_t i = 0;
    while (i < len) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t n;
        uint32_t cp, min;
        if (c >= 0xC2 && c <= 0xDF) {
            n = 1;
            cp = c & 0x1Fu;
            min = 0x80;
        } else if (c >= 0xE0 && c <= 0xEF) {
            n = 2;
            cp = c & 0x0Fu;
            min = 0x800;
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 3;
            cp = c & 0x07u;
            min = 0x10000;
        } else {
            if (bad) *bad = i;
            return false;
        }
        if (len - i - 1 < n) {
            if (bad) *bad = i;
            return false;
        }
        for (size_t k = 1; k <= n; k++) {
            uint8_t t = s[i + k];
            if ((t & 0xC0) != 0x80) {
                if (bad) *bad = i;
                return false;
            }
            cp = (cp << 6) | (t & 0x3Fu);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            if (bad) *bad = i;
            return false;
        }
        i += n + 1;
    }
    return true;
}
