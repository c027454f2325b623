/* cmd/cli/numtext.h: every shortest decimal reads back to the same bits, no %.*g with fewer digits
 * does, and the text has the one documented form.  Exhaustive over binary16 and bfloat16 (65536
 * words each); for binary32 and binary64 every power of two, the subnormal and normal edges and
 * a large sample of random bit patterns (the whole binary32 domain would take minutes). */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/format.h>

#include "numtext.h"

typedef enum kind { K_F16, K_BF16, K_F32, K_F64 } kind;

/* Does text read back to the value (bits) under kind's rule (numtext.h)? */
static bool reads_back(kind k, const char *text, uint64_t bits)
{
    switch (k) {
    case K_F16: return nf_f32_to_f16(strtof(text, NULL)) == (uint16_t)bits;
    case K_BF16: return nf_f32_to_bf16(strtof(text, NULL)) == (uint16_t)bits;
    case K_F32: return nf_f32_bits(strtof(text, NULL)) == (uint32_t)bits;
    case K_F64: {
        double d = strtod(text, NULL);
        uint64_t b;
        memcpy(&b, &d, sizeof b);
        return b == bits;
    }
    }
    return false;
}

static double value_of(kind k, uint64_t bits)
{
    switch (k) {
    case K_F16: return nf_f16_to_f32((uint16_t)bits);
    case K_BF16: return nf_bf16_to_f32((uint16_t)bits);
    case K_F32: return nf_f32_from_bits((uint32_t)bits);
    case K_F64: {
        double d;
        memcpy(&d, &bits, sizeof d);
        return d;
    }
    }
    return 0;
}

/* Significant digits of a finite text: the mantissa's digits without leading and trailing zeros. */
static int significant_digits(const char *t)
{
    char d[64];
    size_t n = 0;
    for (; *t && *t != 'e'; t++)
        if (*t >= '0' && *t <= '9' && (n || *t != '0')) d[n++] = *t;
    while (n > 1 && d[n - 1] == '0') n--;
    return n ? (int)n : 1;
}

/* The form of numtext.h: plain decimal or d[.ddd]e-N / eN, no '+', no exponent's leading zero. */
static bool well_formed(const char *t)
{
    const char *e = strchr(t, 'e');
    if (strchr(t, '+')) return false;
    if (!e) return true;
    const char *x = e[1] == '-' ? e + 2 : e + 1;
    return *x >= '1' && *x <= '9';
}

static void check(kind k, uint64_t bits)
{
    char buf[NF_NUM_TEXT];
    double v = value_of(k, bits);
    switch (k) {
    case K_F16: nf_num_shortest_f16((uint16_t)bits, buf, sizeof buf); break;
    case K_BF16: nf_num_shortest_bf16((uint16_t)bits, buf, sizeof buf); break;
    case K_F32: nf_num_shortest_f32((float)v, buf, sizeof buf); break;
    case K_F64: nf_num_shortest_f64(v, buf, sizeof buf); break;
    }
    if (isnan(v)) {
        cr_assert_str_eq(buf, "nan");
        return;
    }
    char *end;
    strtod(buf, &end);
    cr_assert(*end == '\0', "kind %d bits 0x%llx: '%s' is not one number", k, (unsigned long long)bits, buf);
    cr_assert(reads_back(k, buf, bits), "kind %d bits 0x%llx: '%s' does not read back", k, (unsigned long long)bits,
              buf);
    cr_assert(well_formed(buf), "kind %d bits 0x%llx: '%s' is not in the documented form", k, (unsigned long long)bits,
              buf);
    if (isinf(v) || v == 0) return;
    int p = significant_digits(buf);
    for (int q = 1; q < p; q++) {
        char shorter[400];
        snprintf(shorter, sizeof shorter, "%.*g", q, v);
        cr_assert(!reads_back(k, shorter, bits), "kind %d bits 0x%llx: '%s' but '%s' reads back too", k,
                  (unsigned long long)bits, buf, shorter);
    }
}

Test(numtext, known_answers)
{
    char b[NF_NUM_TEXT];
    cr_assert_str_eq(nf_num_shortest_f32(1e-45f, b, sizeof b), "1e-45");
    cr_assert_str_eq(nf_num_shortest_f64(5e-324, b, sizeof b), "5e-324");
    cr_assert_str_eq(nf_num_shortest_f32(0.1f, b, sizeof b), "0.1");
    cr_assert_str_eq(nf_num_shortest_f32(0.02f, b, sizeof b), "0.02");
    cr_assert_str_eq(nf_num_shortest_f32(FLT_MAX, b, sizeof b), "3.4028235e38");
    cr_assert_str_eq(nf_num_shortest_f32(FLT_MIN, b, sizeof b), "1.1754944e-38");
    cr_assert_str_eq(nf_num_shortest_f64(DBL_MAX, b, sizeof b), "1.7976931348623157e308");
    cr_assert_str_eq(nf_num_shortest_f64(0.1, b, sizeof b), "0.1");
    cr_assert_str_eq(nf_num_shortest_f64(100, b, sizeof b), "100");
    cr_assert_str_eq(nf_num_shortest_f64(123456789, b, sizeof b), "123456789");
    cr_assert_str_eq(nf_num_shortest_f32(123456789.0f, b, sizeof b), "123456790");
    cr_assert_str_eq(nf_num_shortest_f64(1e20, b, sizeof b), "100000000000000000000");
    cr_assert_str_eq(nf_num_shortest_f64(1e21, b, sizeof b), "1e21");
    cr_assert_str_eq(nf_num_shortest_f64(1.5e-7, b, sizeof b), "1.5e-7");
    cr_assert_str_eq(nf_num_shortest_f64(0.000001, b, sizeof b), "0.000001");
    cr_assert_str_eq(nf_num_shortest_f64(-2.5, b, sizeof b), "-2.5");
    cr_assert_str_eq(nf_num_shortest_f64(-0.0, b, sizeof b), "-0");
    cr_assert_str_eq(nf_num_shortest_f32(INFINITY, b, sizeof b), "inf");
    cr_assert_str_eq(nf_num_shortest_f32(-INFINITY, b, sizeof b), "-inf");
    cr_assert_str_eq(nf_num_shortest_f64(NAN, b, sizeof b), "nan");
    cr_assert_str_eq(nf_num_shortest_f16(0x3c00, b, sizeof b), "1");
    cr_assert_str_eq(nf_num_shortest_f16(0x2e66, b, sizeof b), "0.1");
    /* 65500 rounds to the largest binary16, 65504: the next word up would be 65536 */
    cr_assert_str_eq(nf_num_shortest_f16(0x7bff, b, sizeof b), "65500");
    cr_assert_str_eq(nf_num_shortest_f16(0x0001, b, sizeof b), "6e-8");
    cr_assert_str_eq(nf_num_shortest_bf16(0x3dcd, b, sizeof b), "0.1");
    cr_assert_str_eq(nf_num_shortest_bf16(0x3f80, b, sizeof b), "1");
}

Test(numtext, every_binary16_word)
{
    for (uint32_t w = 0; w <= 0xFFFF; w++) check(K_F16, w);
}

Test(numtext, every_bfloat16_word)
{
    for (uint32_t w = 0; w <= 0xFFFF; w++) check(K_BF16, w);
}

/* xorshift64*: a fixed sequence, so a failure repeats */
static uint64_t next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

Test(numtext, binary32_edges_and_sample)
{
    for (uint32_t sign = 0; sign < 2; sign++) {
        uint32_t s = sign << 31;
        for (uint32_t e = 0; e < 255; e++) check(K_F32, s | e << 23); /* powers of two (and 0) */
        for (uint32_t m = 1; m < 20000; m++) {
            check(K_F32, s | m);                 /* smallest subnormals */
            check(K_F32, s | (0x007FFFFFu - m)); /* largest subnormals */
            check(K_F32, s | (0x00800000u + m)); /* just above FLT_MIN */
            check(K_F32, s | (0x7F7FFFFFu - m)); /* just below FLT_MAX */
        }
        check(K_F32, s | 0x7F7FFFFFu);
        check(K_F32, s | 0x00800000u);
    }
    for (uint32_t p = 0; p < 2; p++) check(K_F32, 0x7F800000u | p << 31); /* infinities */
    uint64_t st = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 400000; i++) check(K_F32, (uint32_t)(next(&st) >> 32));
}

Test(numtext, binary64_edges_and_sample)
{
    for (uint64_t sign = 0; sign < 2; sign++) {
        uint64_t s = sign << 63;
        for (uint64_t e = 0; e < 2047; e++) check(K_F64, s | e << 52);
        for (uint64_t m = 1; m < 5000; m++) {
            check(K_F64, s | m);
            check(K_F64, s | (0x000FFFFFFFFFFFFFull - m));
            check(K_F64, s | (0x0010000000000000ull + m));
            check(K_F64, s | (0x7FEFFFFFFFFFFFFFull - m));
        }
        check(K_F64, s | 0x7FEFFFFFFFFFFFFFull);
    }
    uint64_t st = 0xD1B54A32D192ED03ull;
    for (int i = 0; i < 150000; i++) check(K_F64, next(&st));
}
