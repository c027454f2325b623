/* Reconstruction of represented values (docs/formats.md 5.3, 6.1, 7.1; docs/decisions.md D14
 * items 14-16) against an exact integer oracle: every operand is turned into an integer
 * significand and a power of two, products and quotients are formed on integers, and the one
 * rounding to binary32 is done by round_to_f32 below -- no floating-point arithmetic decides an
 * expected value. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <ninfer/format.h>

#include "support/test_float.h"
#include "support/test_rng.h"

static float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

TEST_RNG(0x243F6A8885A308D3ull)


/* An exact nonzero magnitude sig * 2^exp, plus `sticky` when the true value lies strictly
 * between sig and sig + 1 units (then sig must carry well over 24 significant bits). */
typedef struct exact {
    int neg;
    uint64_t sig;
    int exp;
    int sticky;
} exact;

static int top_bit(uint64_t x)
{
    int t = -1;
    while (x) {
        x >>= 1;
        t++;
    }
    return t;
}

/* binary32 word nearest to x, ties to even, with subnormals and overflow to infinity */
static uint32_t round_to_f32(exact x)
{
    uint32_t sign = x.neg ? 0x80000000u : 0u;
    if (x.sig == 0) {
        cr_assert(!x.sticky);
        return sign;
    }
    int msb = top_bit(x.sig);
    if (x.sticky) cr_assert_geq(msb, 26, "oracle needs more quotient bits");
    int binade = msb + x.exp; /* value in [2^binade, 2^(binade+1)) */
    if (binade > 127) return sign | 0x7F800000u;
    int lsb = binade - 23 > -149 ? binade - 23 : -149; /* exponent of the result's last bit */
    int drop = lsb - x.exp;
    uint64_t kept;
    if (drop <= 0) {
        kept = x.sig << -drop;
    } else if (drop > 64) {
        kept = 0; /* below half the smallest subnormal */
    } else {
        kept = drop == 64 ? 0 : x.sig >> drop;
        uint64_t rest = drop == 64 ? x.sig : x.sig - (kept << drop);
        uint64_t half = 1ull << (drop - 1);
        if (rest > half || (rest == half && (x.sticky || (kept & 1)))) kept++;
    }
    if (kept == (1ull << 24)) {
        kept >>= 1;
        lsb++;
    }
    if (kept == 0) return sign;
    if (kept < (1ull << 23)) return sign | (uint32_t)kept; /* subnormal, lsb == -149 */
    int biased = lsb + 23 + 127;
    if (biased >= 255) return sign | 0x7F800000u;
    return sign | (uint32_t)biased << 23 | (uint32_t)(kept - (1ull << 23));
}

/* operands as integer significand and exponent (finite, non-NaN words only) */
typedef struct operand {
    int neg;
    uint64_t sig;
    int exp;
} operand;

static operand f16_operand(uint16_t h)
{
    int e = (h >> 10) & 0x1F, m = h & 0x3FF;
    operand o = {(h & 0x8000) != 0, (uint64_t)(e ? 1024 + m : m), e ? e - 25 : -24};
    return o;
}

static operand bf16_operand(uint16_t w)
{
    int e = (w >> 7) & 0xFF, m = w & 0x7F;
    operand o = {(w & 0x8000) != 0, (uint64_t)(e ? 128 + m : m), e ? e - 134 : -133};
    return o;
}

static operand e4m3_operand(uint8_t w)
{
    int e = (w >> 3) & 0xF, m = w & 7;
    operand o = {(w & 0x80) != 0, (uint64_t)(e ? 8 + m : m), e ? e - 10 : -9};
    return o;
}

static operand e2m1_operand(uint8_t w)
{
    static const unsigned halves[8] = {0, 1, 2, 3, 4, 6, 8, 12}; /* value * 2 */
    operand o = {(w & 8) != 0, halves[w & 7], -1};
    return o;
}

static operand f32_operand(uint32_t u)
{
    int e = (int)((u >> 23) & 0xFF);
    uint32_t m = u & 0x7FFFFFu;
    operand o = {(u >> 31) != 0, e ? (uint64_t)(m | 0x800000u) : m, e ? e - 150 : -149};
    return o;
}

static uint32_t exact_product(operand a, operand b)
{
    exact x = {a.neg != b.neg, a.sig * b.sig, a.exp + b.exp, 0};
    return round_to_f32(x);
}

static int f16_finite(uint16_t h) { return (h & 0x7C00) != 0x7C00; }
static int bf16_finite(uint16_t w) { return (w & 0x7F80) != 0x7F80; }

Test(format_reconstruct, oracle_self_check)
{
    /* the oracle's rounding against hand-computed binary32 words */
    cr_assert_eq(round_to_f32((exact){0, 16777217, 0, 0}), 0x4B800000u);
    cr_assert_eq(round_to_f32((exact){0, 16777219, 0, 0}), 0x4B800002u);
    cr_assert_eq(round_to_f32((exact){1, 1, -149, 0}), 0x80000001u);
    cr_assert_eq(round_to_f32((exact){0, 1, -150, 0}), 0x00000000u);
    cr_assert_eq(round_to_f32((exact){0, 3, -151, 0}), 0x00000001u);
    cr_assert_eq(round_to_f32((exact){0, 1, 128, 0}), 0x7F800000u);
    cr_assert_eq(round_to_f32((exact){0, 0xFFFFFF, 104, 0}), 0x7F7FFFFFu);
    cr_assert_eq(round_to_f32((exact){0, 0x1FFFFFF, 103, 0}), 0x7F800000u);
    cr_assert_eq(round_to_f32((exact){0, 1ull << 40, -40, 1}), 0x3F800000u);
}

/* ------------------------------------------------------------------ grouped */

Test(format_reconstruct, grouped_exhaustive)
{
    for (uint32_t s = 0; s <= 0xFFFFu; s++) {
        if (!f16_finite((uint16_t)s)) continue;
        operand so = f16_operand((uint16_t)s);
        for (int q = -128; q <= 127; q++) {
            operand qo = {q < 0, (uint64_t)(q < 0 ? -q : q), 0};
            uint32_t want = exact_product(so, qo);
            uint32_t got = bits_of_f32(nf_grouped_value((uint16_t)s, q));
            cr_assert_eq(got, want, "scale %04x q %d: got %08x want %08x", s, q, got, want);
        }
    }
}

Test(format_reconstruct, grouped_signed_zeros_and_q2_vectors)
{
    /* code 0 under a negative scale is -0 (docs/decisions.md D14) */
    cr_assert_eq(bits_of_f32(nf_grouped_value(0xBC00, 0)), 0x80000000u);
    cr_assert_eq(bits_of_f32(nf_grouped_value(0x8001, 0)), 0x80000000u);
    cr_assert_eq(bits_of_f32(nf_grouped_value(0x3C00, 0)), 0x00000000u);
    cr_assert_eq(bits_of_f32(nf_grouped_value(0x0000, 0)), 0x00000000u);
    /* docs/vectors.md item 4: Q2 codes -1..2 under scales 3800 BC00 0001 8000 */
    const struct {
        uint16_t scale;
        uint32_t want[4];
    } v[] = {
        {0x3800, {0xBF000000u, 0x00000000u, 0x3F000000u, 0x3F800000u}}, /* -0.5 0 0.5 1 */
        {0xBC00, {0x3F800000u, 0x80000000u, 0xBF800000u, 0xC0000000u}}, /* 1 -0 -1 -2 */
        {0x0001, {0xB3800000u, 0x00000000u, 0x33800000u, 0x34000000u}}, /* +-2^-24, 2^-23 */
        {0x8000, {0x00000000u, 0x80000000u, 0x80000000u, 0x80000000u}}, /* -0 scale */
    };
    for (size_t i = 0; i < 4; i++)
        for (int q = -1; q <= 2; q++)
            cr_assert_eq(bits_of_f32(nf_grouped_value(v[i].scale, q)), v[i].want[q + 1], "scale %04x q %d", v[i].scale,
                         q);
    /* Q2 code 0 under -0 is -0; +0 scale times -1 follows IEEE too (-0) */
    cr_assert_eq(bits_of_f32(nf_grouped_value(0x8000, 0)), 0x80000000u);
    cr_assert_eq(bits_of_f32(nf_grouped_value(0x0000, -1)), 0x80000000u);
    /* extreme legal products are exact */
    cr_assert_eq(nf_grouped_value(0x7BFF, 127), 65504.0f * 127.0f);
    cr_assert_eq(nf_grouped_value(0x7BFF, -127), -8319008.0f);
    cr_assert_eq(nf_grouped_value(0x0001, 127), 0x7Fp-24f);
    /* a multiplier, never a divisor: 1.5 * 7 */
    cr_assert_eq(nf_grouped_value(0x3E00, 7), 10.5f);
}

/* ------------------------------------------------------------------ FP8 rows */

static void check_fp8_all(const nf_format *f, int bf16)
{
    for (uint32_t s = 0; s <= 0xFFFFu; s++) {
        int finite = bf16 ? bf16_finite((uint16_t)s) : f16_finite((uint16_t)s);
        operand so = bf16 ? bf16_operand((uint16_t)s) : f16_operand((uint16_t)s);
        for (unsigned c = 0; c < 256; c++) {
            float got = nf_fp8_row_value(f, (uint8_t)c, (uint16_t)s);
            int code_nan = (c & 0x7F) == 0x7F;
            int scale_nan = !finite && (s & (bf16 ? 0x7Fu : 0x3FFu));
            if (code_nan || scale_nan) {
                cr_assert(isnan(got), "%s c %02x s %04x", f->name, c, s);
                continue;
            }
            operand co = e4m3_operand((uint8_t)c);
            uint32_t want;
            if (!finite) /* infinite multiplier: inf * 0 is NaN, else a signed infinity */
                want = co.sig == 0 ? 0x7FC00000u : ((co.neg != so.neg) ? 0xFF800000u : 0x7F800000u);
            else want = exact_product(co, so);
            if (want == 0x7FC00000u) {
                cr_assert(isnan(got), "%s c %02x s %04x", f->name, c, s);
                continue;
            }
            cr_assert_eq(bits_of_f32(got), want, "%s c %02x s %04x: got %08x want %08x", f->name, c, s,
                         bits_of_f32(got), want);
        }
    }
}

Test(format_reconstruct, fp8_row_bf16_exhaustive) { check_fp8_all(nf_format_by_id(NF_FMT_FP8_E4M3FN_ROW_BF16), 1); }

Test(format_reconstruct, fp8_row_fp16_exhaustive) { check_fp8_all(nf_format_by_id(NF_FMT_FP8_E4M3FN_ROW_FP16), 0); }

Test(format_reconstruct, vectors_fp8_rows)
{
    /* docs/vectors.md item 8 (BF16 scales 0.5, 2.0) and item 9 (FP16 scales 0.5, 2.0):
     * [0, -0, 0.5, -0.5; 4, -4, 896, -896] */
    const uint8_t codes[2][4] = {{0x00, 0x80, 0x38, 0xB8}, {0x40, 0xC0, 0x7E, 0xFE}};
    const uint32_t want[2][4] = {{0x00000000u, 0x80000000u, 0x3F000000u, 0xBF000000u},
                                 {0x40800000u, 0xC0800000u, 0x44600000u, 0xC4600000u}};
    const uint16_t bf16_scales[2] = {0x3F00, 0x4000}, f16_scales[2] = {0x3800, 0x4000};
    const nf_format *b = nf_format_by_id(NF_FMT_FP8_E4M3FN_ROW_BF16);
    const nf_format *h = nf_format_by_id(NF_FMT_FP8_E4M3FN_ROW_FP16);
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < 4; k++) {
            cr_assert_eq(bits_of_f32(nf_fp8_row_value(b, codes[r][k], bf16_scales[r])), want[r][k], "bf16 [%d,%d]", r,
                         k);
            cr_assert_eq(bits_of_f32(nf_fp8_row_value(h, codes[r][k], f16_scales[r])), want[r][k], "fp16 [%d,%d]", r,
                         k);
        }
    /* the same 16-bit scale word means different multipliers per format */
    cr_assert_eq(nf_fp8_row_value(b, 0x38, 0x3C00), 0x1p-7f);
    cr_assert_eq(nf_fp8_row_value(h, 0x38, 0x3C00), 1.0f);
    /* a zero scale with a zero code */
    cr_assert_eq(bits_of_f32(nf_fp8_row_value(b, 0x80, 0x0000)), 0x80000000u);
    /* a format that is not an FP8 row format has no FP8 value */
    cr_assert(isnan(nf_fp8_row_value(nf_format_by_id(NF_FMT_Q4_G64_FP16), 0x38, 0x3C00)));
    cr_assert(isnan(nf_fp8_row_value(NULL, 0x38, 0x3C00)));
}

/* ------------------------------------------------------------------ NVFP4 */

/* (e2m1 * e4m3) / d rounded once; scale and divisor finite, divisor > 0 */
static uint32_t nvfp4_oracle(uint8_t code, uint8_t scale, uint32_t divisor_bits)
{
    operand c = e2m1_operand(code), s = e4m3_operand(scale), d = f32_operand(divisor_bits);
    uint64_t num = c.sig * s.sig; /* < 2^8 */
    int neg = c.neg != s.neg;
    if (num == 0) return neg ? 0x80000000u : 0u;
    const int shift = 55; /* quotient keeps >= 31 significant bits */
    uint64_t q = (num << shift) / d.sig;
    uint64_t r = (num << shift) % d.sig;
    exact x = {neg, q, c.exp + s.exp - shift - d.exp, r != 0};
    return round_to_f32(x);
}

static uint32_t divisor_sample(unsigned i)
{
    static const uint32_t fixed[] = {
        0x3F800000u,              /* 1 */
        0x40200000u,              /* 2.5 */
        0x40400000u,              /* 3 */
        0x40E00000u,              /* 7 */
        0x3DCCCCCDu,              /* 0.1 */
        0x41200000u,              /* 10 */
        0x3EAAAAABu,              /* 1/3 */
        0x00000001u,              /* 2^-149: quotients overflow */
        0x00000003u, 0x007FFFFFu, /* largest subnormal */
        0x00800000u,              /* 2^-126 */
        0x7F7FFFFFu,              /* FLT_MAX: quotients underflow to subnormals or zero */
        0x7E800000u,              /* 2^126 */
        0x4B800001u, 0x3F800001u, 0x3FFFFFFFu, 0x43E00000u, 0x42C80000u,
    };
    const unsigned n = sizeof fixed / sizeof fixed[0];
    if (i < n) return fixed[i];
    uint32_t u;
    do u = rng32() & 0x7FFFFFFFu; /* positive finite nonzero */
    while (u == 0 || (u & 0x7F800000u) == 0x7F800000u);
    return u;
}

Test(format_reconstruct, nvfp4_exhaustive_codes_and_scales)
{
    unsigned recip_differs = 0;
    uint32_t example_d = 0;
    unsigned example_c = 0, example_s = 0;
    for (unsigned i = 0; i < 2000; i++) {
        uint32_t d = divisor_sample(i);
        float df = float_of(d);
        float recip = 1.0f / df;
        for (unsigned s = 0; s < 256; s++) {
            for (unsigned c = 0; c < 16; c++) {
                float got = nf_nvfp4_value((uint8_t)c, (uint8_t)s, d);
                if ((s & 0x7F) == 0x7F) {
                    cr_assert(isnan(got), "c %x s %02x d %08x", c, s, d);
                    continue;
                }
                uint32_t want = nvfp4_oracle((uint8_t)c, (uint8_t)s, d);
                cr_assert_eq(bits_of_f32(got), want, "c %x s %02x d %08x: got %08x want %08x", c, s, d,
                             bits_of_f32(got), want);
                /* the wrong formula, multiplying by a rounded reciprocal */
                float product = float_of(exact_product(e2m1_operand((uint8_t)c), e4m3_operand((uint8_t)s)));
                float wrong = product * recip;
                if (bits_of_f32(wrong) != want && !recip_differs++) {
                    example_c = c;
                    example_s = s;
                    example_d = d;
                }
            }
        }
    }
    cr_assert_gt(recip_differs, 0, "division and reciprocal multiply never differed");
    cr_log_info("reciprocal multiply differs in %u cases, e.g. c %x s %02x d %08x", recip_differs, example_c, example_s,
                example_d);
}

Test(format_reconstruct, nvfp4_division_not_reciprocal)
{
    /* 3 * 1.0 / 3: division gives exactly 1; 3 * round(1/3) = 1.0000000298 rounds to 1 too,
     * but 6 * 448 / 7 = 384 exactly while 2688 * round(1/7) rounds to 384.00003 */
    cr_assert_eq(bits_of_f32(nf_nvfp4_value(0x5, 0x38, 0x40400000u)), 0x3F800000u);
    cr_assert_eq(bits_of_f32(nf_nvfp4_value(0x7, 0x7E, 0x40E00000u)), 0x43C00000u);
    float wrong = 2688.0f * (1.0f / 7.0f);
    cr_assert_neq(bits_of_f32(wrong), 0x43C00000u, "the reciprocal route rounds twice");
    cr_assert_eq(nvfp4_oracle(0x7, 0x7E, 0x40E00000u), 0x43C00000u);
}

Test(format_reconstruct, nvfp4_signed_zeros_and_vectors)
{
    cr_assert_eq(bits_of_f32(nf_nvfp4_value(0x8, 0x38, 0x3F800000u)), 0x80000000u, "-0 code");
    cr_assert_eq(bits_of_f32(nf_nvfp4_value(0x0, 0x38, 0x3F800000u)), 0x00000000u);
    cr_assert_eq(bits_of_f32(nf_nvfp4_value(0x1, 0x00, 0x3F800000u)), 0x00000000u, "+0 scale");
    cr_assert_eq(bits_of_f32(nf_nvfp4_value(0x9, 0x00, 0x3F800000u)), 0x80000000u);
    /* divisor 2.5 of docs/vectors.md item 7: 6 * 448 / 2.5 = 1075.2 -> nearest binary32 */
    cr_assert_eq(bits_of_f32(nf_nvfp4_value(0x7, 0x7E, 0x40200000u)), 0x44866666u);
    cr_assert_eq(nf_nvfp4_value(0xF, 0x38, 0x40000000u), -3.0f);
}

/* ------------------------------------------------------------------ int32 */

static uint32_t int32_oracle(uint32_t word)
{
    int64_t v = word < 0x80000000u ? (int64_t)word : (int64_t)word - 4294967296ll;
    exact x = {v < 0, (uint64_t)(v < 0 ? -v : v), 0, 0};
    return round_to_f32(x);
}

Test(format_reconstruct, int32_named_values)
{
    cr_assert_eq(nf_int32_value(16777216u), 16777216.0f);
    cr_assert_eq(bits_of_f32(nf_int32_value(16777217u)), 0x4B800000u, "-> 16777216");
    cr_assert_eq(bits_of_f32(nf_int32_value(16777218u)), 0x4B800001u);
    cr_assert_eq(bits_of_f32(nf_int32_value(16777219u)), 0x4B800002u, "-> 16777220");
    cr_assert_eq(nf_int32_value(33554434u), 33554432.0f, "tie to even 2^25");
    cr_assert_eq(nf_int32_value(33554438u), 33554440.0f, "tie to even 2^25 + 8");
    cr_assert_eq(nf_int32_value(33554435u), 33554436.0f);
    cr_assert_eq(nf_int32_value((uint32_t)-16777217), -16777216.0f);
    cr_assert_eq(nf_int32_value((uint32_t)-16777219), -16777220.0f);
    cr_assert_eq(bits_of_f32(nf_int32_value(0x80000000u)), 0xCF000000u, "INT32_MIN = -2^31 exactly");
    cr_assert_eq(bits_of_f32(nf_int32_value(0x7FFFFFFFu)), 0x4F000000u, "INT32_MAX rounds to 2^31");
    cr_assert_eq(bits_of_f32(nf_int32_value(0x80000001u)), 0xCF000000u);
    cr_assert_eq(bits_of_f32(nf_int32_value(0xFFFFFFFFu)), 0xBF800000u);
    cr_assert_eq(bits_of_f32(nf_int32_value(0)), 0x00000000u);
    cr_assert_eq(nf_int32_value(1), 1.0f);
}

Test(format_reconstruct, int32_sweep)
{
    /* all of [-2^26, 2^26]: exact region and the first two rounding binades */
    for (int64_t v = -(1ll << 26); v <= (1ll << 26); v++) {
        uint32_t w = (uint32_t)(v & 0xFFFFFFFF);
        uint32_t got = bits_of_f32(nf_int32_value(w));
        if (got != int32_oracle(w)) cr_assert_fail("v %lld: got %08x want %08x", (long long)v, got, int32_oracle(w));
    }
    /* around every power of two and at both ends */
    for (int k = 24; k <= 31; k++)
        for (int64_t d = -300; d <= 300; d++) {
            int64_t p = (1ll << k) + d;
            for (int s = 0; s < 2; s++) {
                int64_t v = s ? -p : p;
                if (v < INT32_MIN || v > INT32_MAX) continue;
                uint32_t w = (uint32_t)(v & 0xFFFFFFFF);
                cr_assert_eq(bits_of_f32(nf_int32_value(w)), int32_oracle(w), "v %lld", (long long)v);
            }
        }
    for (int i = 0; i < (1 << 23); i++) {
        uint32_t w = rng32();
        uint32_t got = bits_of_f32(nf_int32_value(w));
        if (got != int32_oracle(w)) cr_assert_fail("w %08x: got %08x want %08x", w, got, int32_oracle(w));
    }
}
