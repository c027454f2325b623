/* Shortest decimals that read back to the same bits (numtext.h). */
#include "numtext.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/format.h>

char *nf_num_format(int negative, const char *digits, int exp, char *buf, size_t size)
{
    size_t nd = strlen(digits), o = 0;
    char tmp[64];
    if (negative) tmp[o++] = '-';
    if (exp > -7 && exp < 21) {
        if (exp < 0) {
            tmp[o++] = '0';
            tmp[o++] = '.';
            for (int i = -1; i > exp; i--) tmp[o++] = '0';
            for (size_t i = 0; i < nd; i++) tmp[o++] = digits[i];
        } else {
            /* exp + 1 digits before the point, zeros if the digits run out */
            for (int i = 0; i <= exp; i++) tmp[o++] = (size_t)i < nd ? digits[i] : '0';
            if (nd > (size_t)exp + 1) {
                tmp[o++] = '.';
                for (size_t i = (size_t)exp + 1; i < nd; i++) tmp[o++] = digits[i];
            }
        }
        tmp[o] = '\0';
    } else {
        tmp[o++] = digits[0];
        if (nd > 1) {
            tmp[o++] = '.';
            for (size_t i = 1; i < nd; i++) tmp[o++] = digits[i];
        }
        snprintf(tmp + o, sizeof tmp - o, "e%d", exp);
    }
    snprintf(buf, size, "%s", tmp);
    return buf;
}

/* Does the text read back to the value we started from?  ctx is the caller's target. */
typedef bool (*same_fn)(const char *text, const void *ctx);

static bool same_f32(const char *t, const void *ctx)
{
    return nf_f32_bits(strtof(t, NULL)) == nf_f32_bits(*(const float *)ctx);
}

static bool same_f64(const char *t, const void *ctx)
{
    double d = strtod(t, NULL), want = *(const double *)ctx;
    return memcmp(&d, &want, sizeof d) == 0;
}

static bool same_f16(const char *t, const void *ctx)
{
    return nf_f32_to_f16(strtof(t, NULL)) == *(const uint16_t *)ctx;
}

static bool same_bf16(const char *t, const void *ctx)
{
    return nf_f32_to_bf16(strtof(t, NULL)) == *(const uint16_t *)ctx;
}

/* v's digits at precisions 1..max_digits (%.*e rounds the exact binary value correctly, so each
 * candidate is the nearest p-digit decimal), the first one `same` accepts. */
static char *shortest(double v, int max_digits, same_fn same, const void *ctx, char *buf, size_t size)
{
    if (isnan(v)) {
        snprintf(buf, size, "nan");
        return buf;
    }
    if (isinf(v)) {
        snprintf(buf, size, "%s", v < 0 ? "-inf" : "inf");
        return buf;
    }
    if (v == 0) {
        snprintf(buf, size, "%s", signbit(v) ? "-0" : "0");
        return buf;
    }
    char e[48], digits[24], text[NF_NUM_TEXT];
    for (int p = 1; p <= max_digits; p++) {
        snprintf(e, sizeof e, "%.*e", p - 1, fabs(v));
        /* "d.ddde[+-]XX": the digits without the point, then the exponent */
        size_t nd = 0;
        const char *c = e;
        for (; *c && *c != 'e'; c++)
            if (*c != '.') digits[nd++] = *c;
        while (nd > 1 && digits[nd - 1] == '0') nd--;
        digits[nd] = '\0';
        int exp = *c == 'e' ? (int)strtol(c + 1, NULL, 10) : 0;
        nf_num_format(signbit(v) != 0, digits, exp, text, sizeof text);
        if (same(text, ctx) || p == max_digits) {
            snprintf(buf, size, "%s", text);
            return buf;
        }
    }
    return buf;
}

char *nf_num_shortest_f32(float v, char *buf, size_t size) { return shortest(v, 9, same_f32, &v, buf, size); }
char *nf_num_shortest_f64(double v, char *buf, size_t size) { return shortest(v, 17, same_f64, &v, buf, size); }
char *nf_num_shortest_f16(uint16_t h, char *buf, size_t size)
{
    return shortest(nf_f16_to_f32(h), 9, same_f16, &h, buf, size);
}
char *nf_num_shortest_bf16(uint16_t b, char *buf, size_t size)
{
    return shortest(nf_bf16_to_f32(b), 9, same_bf16, &b, buf, size);
}
