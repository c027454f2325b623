/* Float helpers shared by the method tests, header-only: bit casts and a binary16 oracle built
 * from the IEEE 754 definition with frexp/ldexp (independent of the library's conversions, which
 * the tests check against it). */
#ifndef NINFER_TEST_FLOAT_H
#define NINFER_TEST_FLOAT_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline uint32_t bits_of_f32(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float f32_of_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* binary16 word -> value, from its fields (infinities and NaN for exponent 31). */
static inline double f16_value(uint16_t w)
{
    int e = (w >> 10) & 31, m = w & 1023;
    double v = e == 31 ? (m ? NAN : INFINITY) : e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
    return (w & 0x8000) ? -v : v;
}

/* Nearest binary16 word to a finite double, ties to even, overflow to infinity. */
static inline uint16_t f16_round(double v)
{
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    double a = fabs(v);
    if (a >= 65520.0) return sign | 0x7C00;
    if (a == 0.0) return sign;
    int e;
    frexp(a, &e); /* a in [2^(e-1), 2^e): spacing 2^(e-11), never below 2^-24 */
    int ue = e - 11 < -24 ? -24 : e - 11;
    double q = ldexp(a, -ue), fl = floor(q), rest = q - fl;
    if (rest > 0.5 || (rest == 0.5 && fmod(fl, 2.0) != 0.0)) fl += 1.0;
    double r = ldexp(fl, ue);
    if (r < ldexp(1.0, -14)) return sign | (uint16_t)ldexp(r, 24);
    frexp(r, &e);
    int E = e - 1;
    return sign | (uint16_t)((E + 15) << 10) | (uint16_t)(ldexp(r, -E) * 1024.0 - 1024.0);
}

/* Little-endian F32 bytes of values (malloc'ed; NULL when out of memory). */
static inline uint8_t *pack_f32(const float *v, size_t n)
{
    uint8_t *p = malloc(n * 4 + 1);
    if (!p) return NULL;
    for (size_t i = 0; i < n; i++) {
        uint32_t u = bits_of_f32(v[i]);
        for (int j = 0; j < 4; j++) p[4 * i + (size_t)j] = (uint8_t)(u >> (8 * j));
    }
    return p;
}

#endif
