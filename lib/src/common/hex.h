/* Lowercase hex of bytes (artifact ids, header fields in messages): one definition for the
 * container's reader and writer and the scale-out plan (convert/scaleout.c). */
#ifndef NINFER_COMMON_HEX_H
#define NINFER_COMMON_HEX_H

#include <stddef.h>
#include <stdint.h>

/* out gets 2 n digits and a NUL. */
static inline void nf_hex_bytes(const uint8_t *p, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
    out[2 * n] = '\0';
}

#endif
