/* Hex of bytes (artifact ids, header fields in messages): one encoder for the container's
 * reader and writer, one parser for ninfer-convert's --artifact-id and the scale-out plan
 * (convert/scaleout_open.c). */
#ifndef NINFER_COMMON_HEX_H
#define NINFER_COMMON_HEX_H

#include <stdbool.h>
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

/* 2 n hex digits (either case) to n bytes; false (out unspecified) for any other text. */
static inline bool nf_hex_parse(const char *s, uint8_t *out, size_t n)
{
    for (size_t i = 0; i < 2 * n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') || (s[i] >= 'A' && s[i] <= 'F')))
            return false;
    if (s[2 * n] != '\0') return false;
    for (size_t i = 0; i < 2 * n; i++) {
        char c = s[i];
        unsigned v = c <= '9' ? (unsigned)(c - '0') : c <= 'F' ? (unsigned)(c - 'A' + 10) : (unsigned)(c - 'a' + 10);
        out[i / 2] = (uint8_t)(i % 2 ? (out[i / 2] | v) : (v << 4));
    }
    return true;
}

#endif
