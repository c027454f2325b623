/* Word validity of the quantized formats: every predicate of format.h against the spec's rules
 * (docs/formats.md 5.4, 6.2, 7.2; docs/layouts.md 5-7 and 4) and its vectors
 * (docs/vectors.md items 4, 8, 9, 11, 12).
 *
 * The exhaustive checks compare each predicate with one phrased on decoded values (is the value
 * finite, is it a negative zero, ...) rather than on bit masks as the library does. */
#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <ninfer/format.h>

static float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* value of a binary16 word, infinities and NaN included */
static double f16_value(uint16_t h)
{
    int e = (h >> 10) & 0x1F;
    int m = h & 0x3FF;
    double v;
    if (e == 31) v = m ? NAN : INFINITY;
    else if (e == 0) v = ldexp((double)m, -24);
    else v = ldexp((double)(1024 + m), e - 25);
    return (h & 0x8000) ? -v : v;
}

static double bf16_value(uint16_t w)
{
    int e = (w >> 7) & 0xFF;
    int m = w & 0x7F;
    double v;
    if (e == 255) v = m ? NAN : INFINITY;
    else if (e == 0) v = ldexp((double)m, -133);
    else v = ldexp((double)(128 + m), e - 134);
    return (w & 0x8000) ? -v : v;
}

static double e4m3_value(uint8_t w)
{
    int e = (w >> 3) & 0xF;
    int m = w & 7;
    double v;
    if (e == 15 && m == 7) v = NAN;
    else if (e == 0) v = m * ldexp(1.0, -9);
    else v = (1.0 + m / 8.0) * ldexp(1.0, e - 7);
    return (w & 0x80) ? -v : v;
}

static int is_negative_zero(double v) { return v == 0.0 && signbit(v); }
static int is_positive_zero(double v) { return v == 0.0 && !signbit(v); }

static const nf_format *fmt(nf_format_id id)
{
    const nf_format *f = nf_format_by_id(id);
    cr_assert_not_null(f);
    return f;
}

static const nf_format_id grouped_ids[] = {NF_FMT_Q2_G64_FP16, NF_FMT_Q4_G64_FP16, NF_FMT_Q5_G64_FP16,
                                           NF_FMT_Q6_G64_FP16, NF_FMT_Q8_G32_FP16, NF_FMT_T2_G128_FP16};
#define N_GROUPED (sizeof grouped_ids / sizeof grouped_ids[0])

/* ------------------------------------------------------------------ grouped codes */

Test(format_validity, grouped_code_intervals)
{
    /* the spec's legal signed intervals, not the registry's fields */
    const struct {
        nf_format_id id;
        int lo, hi;
    } r[] = {{NF_FMT_Q2_G64_FP16, -1, 2},   {NF_FMT_Q4_G64_FP16, -8, 7},     {NF_FMT_Q5_G64_FP16, -16, 15},
             {NF_FMT_Q6_G64_FP16, -32, 31}, {NF_FMT_Q8_G32_FP16, -127, 127}, {NF_FMT_T2_G128_FP16, -1, 1}};
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) {
        const nf_format *f = fmt(r[i].id);
        for (int q = -300; q <= 300; q++)
            cr_assert_eq(nf_grouped_code_valid(f, q), q >= r[i].lo && q <= r[i].hi, "%s q=%d", f->name, q);
        cr_assert(!nf_grouped_code_valid(f, INT_MIN));
        cr_assert(!nf_grouped_code_valid(f, INT_MAX));
    }
}

Test(format_validity, grouped_code_named_refusals)
{
    cr_assert(!nf_grouped_code_valid(fmt(NF_FMT_Q8_G32_FP16), -128), "Q8 byte 0x80");
    cr_assert(nf_grouped_code_valid(fmt(NF_FMT_Q8_G32_FP16), -127));
    cr_assert(!nf_grouped_code_valid(fmt(NF_FMT_T2_G128_FP16), -2), "T2 word 0b10");
    cr_assert(!nf_grouped_code_valid(fmt(NF_FMT_T2_G128_FP16), 2));
    /* docs/vectors.md item 4: Q2 codes -2 and 3 refused, -1..2 legal */
    cr_assert(!nf_grouped_code_valid(fmt(NF_FMT_Q2_G64_FP16), -2));
    cr_assert(!nf_grouped_code_valid(fmt(NF_FMT_Q2_G64_FP16), 3));
    for (int q = -1; q <= 2; q++) cr_assert(nf_grouped_code_valid(fmt(NF_FMT_Q2_G64_FP16), q));
    cr_assert(nf_grouped_code_valid(fmt(NF_FMT_Q4_G64_FP16), -8));
    cr_assert(!nf_grouped_code_valid(fmt(NF_FMT_Q4_G64_FP16), 8));
}

Test(format_validity, grouped_predicates_refuse_other_categories)
{
    for (size_t i = 0; i < nf_format_count(); i++) {
        const nf_format *f = nf_format_at(i);
        if (f->category == NF_CAT_GROUPED) continue;
        for (int q = -2; q <= 2; q++) cr_assert(!nf_grouped_code_valid(f, q), "%s", f->name);
        cr_assert(!nf_grouped_scale_valid(f, 0x3C00), "%s", f->name);
        cr_assert(!nf_grouped_scale_requires_zero_codes(f, 0x0000), "%s", f->name);
    }
    cr_assert(!nf_grouped_code_valid(NULL, 0));
    cr_assert(!nf_grouped_scale_valid(NULL, 0x3C00));
    cr_assert(!nf_grouped_scale_requires_zero_codes(NULL, 0));
}

/* ------------------------------------------------------------------ grouped scales */

Test(format_validity, grouped_scales_exhaustive)
{
    for (size_t i = 0; i < N_GROUPED; i++) {
        const nf_format *f = fmt(grouped_ids[i]);
        int q2 = grouped_ids[i] == NF_FMT_Q2_G64_FP16;
        for (uint32_t w = 0; w <= 0xFFFFu; w++) {
            double v = f16_value((uint16_t)w);
            int want_valid = isfinite(v) && (q2 || !is_negative_zero(v));
            int want_zero_rule = !q2 && is_positive_zero(v);
            cr_assert_eq(nf_grouped_scale_valid(f, (uint16_t)w), want_valid, "%s %04x", f->name, w);
            cr_assert_eq(nf_grouped_scale_requires_zero_codes(f, (uint16_t)w), want_zero_rule, "%s %04x", f->name, w);
        }
    }
}

Test(format_validity, grouped_scale_named_cases)
{
    const nf_format *q4 = fmt(NF_FMT_Q4_G64_FP16);
    const nf_format *t2 = fmt(NF_FMT_T2_G128_FP16);
    const nf_format *q2 = fmt(NF_FMT_Q2_G64_FP16);
    cr_assert(nf_grouped_scale_valid(q4, 0x0000));
    cr_assert(!nf_grouped_scale_valid(q4, 0x8000));
    cr_assert(nf_grouped_scale_valid(q4, 0x0001), "min subnormal");
    cr_assert(nf_grouped_scale_valid(q4, 0x8001), "negative subnormal");
    cr_assert(nf_grouped_scale_valid(q4, 0xBC00), "negative scales are ordinary multipliers");
    cr_assert(nf_grouped_scale_valid(q4, 0xFBFF));
    cr_assert(!nf_grouped_scale_valid(q4, 0x7C00));
    cr_assert(!nf_grouped_scale_valid(q4, 0xFC00));
    cr_assert(!nf_grouped_scale_valid(q4, 0x7E00));
    cr_assert(!nf_grouped_scale_valid(q4, 0xFC01));
    /* T2 follows the general rule (docs/decisions.md D4) */
    cr_assert(!nf_grouped_scale_valid(t2, 0x8000));
    cr_assert(nf_grouped_scale_requires_zero_codes(t2, 0x0000));
    /* a nonzero scale never requires zero codes, and all-zero codes under it stay legal */
    cr_assert(!nf_grouped_scale_requires_zero_codes(q4, 0x3C00));
    cr_assert(!nf_grouped_scale_requires_zero_codes(q4, 0x0001));
    cr_assert(!nf_grouped_scale_requires_zero_codes(q4, 0x8000));
    /* Q2 overrides: both zeros legal, any code under them */
    cr_assert(nf_grouped_scale_valid(q2, 0x8000));
    cr_assert(nf_grouped_scale_valid(q2, 0x0000));
    cr_assert(!nf_grouped_scale_requires_zero_codes(q2, 0x0000));
    cr_assert(!nf_grouped_scale_requires_zero_codes(q2, 0x8000));
}

Test(format_validity, vectors_q2_codec_and_import)
{
    const nf_format *q2 = fmt(NF_FMT_Q2_G64_FP16);
    /* 6.1 item 4: scale words 3800 BC00 0001 8000 accepted; +-inf and NaN refused */
    const uint16_t ok[] = {0x3800, 0xBC00, 0x0001, 0x8000, 0x0000};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) cr_assert(nf_grouped_scale_valid(q2, ok[i]), "%04x", ok[i]);
    /* 6.1 item 11: 7C00, FC00, 7E01 refused ("finite") */
    const uint16_t bad[] = {0x7C00, 0xFC00, 0x7E01, 0x7E00, 0xFE00, 0x7C01};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert(!nf_grouped_scale_valid(q2, bad[i]), "%04x", bad[i]);
}

/* A group is valid when its scale is valid, every code is legal, and a scale that requires
 * zero codes sees only zeros: the composition a writer or verifier applies. */
static int group_valid(const nf_format *f, uint16_t scale, const int *codes, size_t n)
{
    if (!nf_grouped_scale_valid(f, scale)) return 0;
    for (size_t i = 0; i < n; i++) {
        if (!nf_grouped_code_valid(f, codes[i])) return 0;
        if (codes[i] != 0 && nf_grouped_scale_requires_zero_codes(f, scale)) return 0;
    }
    return 1;
}

Test(format_validity, vectors_q8_import)
{
    const nf_format *q8 = fmt(NF_FMT_Q8_G32_FP16);
    /* 6.1 item 12: scale words cycling 3800 BC00 0001 0000 (codes zeroed under 0) are valid */
    const int some[] = {1, -127, 127, 0};
    const int zeros[] = {0, 0, 0, 0};
    cr_assert(group_valid(q8, 0x3800, some, 4));
    cr_assert(group_valid(q8, 0xBC00, some, 4));
    cr_assert(group_valid(q8, 0x0001, some, 4));
    cr_assert(group_valid(q8, 0x0000, zeros, 4));
    /* refusals: (0x8000, 0), (0, code 1), (0x7C00, 0), (0x3800, -128) */
    const int zero[] = {0}, one[] = {1}, m128[] = {-128};
    cr_assert(!group_valid(q8, 0x8000, zero, 1));
    cr_assert(!group_valid(q8, 0x0000, one, 1));
    cr_assert(!group_valid(q8, 0x7C00, zero, 1));
    cr_assert(!group_valid(q8, 0x3800, m128, 1));
    /* Q2 keeps any code under a zero scale */
    const int q2codes[] = {-1, 0, 1, 2};
    cr_assert(group_valid(fmt(NF_FMT_Q2_G64_FP16), 0x0000, q2codes, 4));
    cr_assert(group_valid(fmt(NF_FMT_Q2_G64_FP16), 0x8000, q2codes, 4));
}

/* ------------------------------------------------------------------ NVFP4 */

Test(format_validity, nvfp4_scales_all_words)
{
    for (unsigned w = 0; w < 256; w++) {
        double v = e4m3_value((uint8_t)w);
        int want = !isnan(v) && !signbit(v); /* sign-zero finite, +0 included */
        cr_assert_eq(nf_nvfp4_scale_valid((uint8_t)w), want, "%02x", w);
    }
    cr_assert(nf_nvfp4_scale_valid(0x00));
    cr_assert(!nf_nvfp4_scale_valid(0x80));
    cr_assert(!nf_nvfp4_scale_valid(0x7F));
    cr_assert(!nf_nvfp4_scale_valid(0xFF));
    cr_assert(nf_nvfp4_scale_valid(0x7E));
}

static int divisor_oracle(uint32_t bits)
{
    float d = float_of(bits);
    return isfinite(d) && d > 0.0f;
}

Test(format_validity, nvfp4_divisors)
{
    const uint32_t words[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x80000001u, 0x007FFFFFu, 0x00800000u,
                              0x3F800000u, 0x40200000u, 0xBF800000u, 0x7F7FFFFFu, 0x7F800000u, 0xFF800000u,
                              0x7FC00000u, 0x7F800001u, 0xFFC00000u, 0xFFFFFFFFu, 0x7FFFFFFFu};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        cr_assert_eq(nf_nvfp4_divisor_valid(words[i]), divisor_oracle(words[i]), "%08x", words[i]);
    cr_assert(nf_nvfp4_divisor_valid(0x40200000u), "2.5 of docs/vectors.md item 7");
    cr_assert(!nf_nvfp4_divisor_valid(0x00000000u));
    cr_assert(!nf_nvfp4_divisor_valid(0x7F800000u));
    /* every exponent and sign with a spread of fractions */
    for (uint32_t hi = 0; hi < 512; hi++)
        for (uint32_t lo = 0; lo < 64; lo++) {
            uint32_t u = hi << 23 | (lo * 0x20821u & 0x7FFFFFu);
            cr_assert_eq(nf_nvfp4_divisor_valid(u), divisor_oracle(u), "%08x", u);
            cr_assert_eq(nf_nvfp4_divisor_valid(hi << 23), divisor_oracle(hi << 23));
        }
}

/* ------------------------------------------------------------------ FP8 rows */

Test(format_validity, fp8_codes_all_words)
{
    for (unsigned w = 0; w < 256; w++) {
        double v = e4m3_value((uint8_t)w);
        cr_assert_eq(nf_fp8_code_valid((uint8_t)w), !isnan(v), "%02x", w);
        cr_assert_eq(nf_fp8_code_is_zero((uint8_t)w), v == 0.0, "%02x", w);
    }
    cr_assert(!nf_fp8_code_valid(0x7F));
    cr_assert(!nf_fp8_code_valid(0xFF));
    cr_assert(nf_fp8_code_is_zero(0x00));
    cr_assert(nf_fp8_code_is_zero(0x80));
}

Test(format_validity, fp8_row_scales_exhaustive)
{
    const nf_format *b = fmt(NF_FMT_FP8_E4M3FN_ROW_BF16);
    const nf_format *h = fmt(NF_FMT_FP8_E4M3FN_ROW_FP16);
    for (uint32_t w = 0; w <= 0xFFFFu; w++) {
        double vb = bf16_value((uint16_t)w);
        double vh = f16_value((uint16_t)w);
        cr_assert_eq(nf_fp8_row_scale_valid(b, (uint16_t)w), isfinite(vb) && !signbit(vb), "bf16 %04x", w);
        cr_assert_eq(nf_fp8_row_scale_valid(h, (uint16_t)w), isfinite(vh) && !signbit(vh), "fp16 %04x", w);
        /* +0 is the same word in both scale types */
        cr_assert_eq(nf_fp8_row_scale_is_zero((uint16_t)w), is_positive_zero(vb), "%04x", w);
        cr_assert_eq(nf_fp8_row_scale_is_zero((uint16_t)w), is_positive_zero(vh), "%04x", w);
    }
    /* the two kinds really differ: 0x7C00 is +inf in binary16 but 2^121 in BF16 (no word is
     * the other way round: a BF16 all-ones exponent covers the binary16 one) */
    cr_assert(nf_fp8_row_scale_valid(b, 0x7C00));
    cr_assert(!nf_fp8_row_scale_valid(h, 0x7C00));
    cr_assert(!nf_fp8_row_scale_valid(b, 0x7F80));
    cr_assert(!nf_fp8_row_scale_valid(h, 0x7F80));
    for (size_t i = 0; i < nf_format_count(); i++) {
        const nf_format *f = nf_format_at(i);
        if (f->category != NF_CAT_FP8_ROW) cr_assert(!nf_fp8_row_scale_valid(f, 0x3C00), "%s", f->name);
    }
    cr_assert(!nf_fp8_row_scale_valid(NULL, 0x3C00));
}

/* A row is valid when its scale is valid, every code is finite, and a +0 scale sees only
 * signed-zero codes. */
static int fp8_row_valid(const nf_format *f, uint16_t scale, const uint8_t *codes, size_t n)
{
    if (!nf_fp8_row_scale_valid(f, scale)) return 0;
    for (size_t i = 0; i < n; i++) {
        if (!nf_fp8_code_valid(codes[i])) return 0;
        if (nf_fp8_row_scale_is_zero(scale) && !nf_fp8_code_is_zero(codes[i])) return 0;
    }
    return 1;
}

Test(format_validity, vectors_fp8_row_bf16)
{
    /* 6.1 item 8 */
    const nf_format *b = fmt(NF_FMT_FP8_E4M3FN_ROW_BF16);
    const uint8_t row0[] = {0x00, 0x80, 0x38, 0xB8}, row1[] = {0x40, 0xC0, 0x7E, 0xFE};
    cr_assert(fp8_row_valid(b, 0x3F00, row0, 4));
    cr_assert(fp8_row_valid(b, 0x4000, row1, 4));
    const uint8_t nan_code[] = {0x7F}, c38[] = {0x38}, zeros[] = {0x00, 0x80};
    cr_assert(!fp8_row_valid(b, 0x3F00, nan_code, 1), "code 0x7F refused");
    cr_assert(!fp8_row_valid(b, 0x8000, row0, 4), "scale 0x8000 refused");
    cr_assert(!fp8_row_valid(b, 0x0000, c38, 1), "0x38 under a zero scale refused");
    cr_assert(fp8_row_valid(b, 0x0000, zeros, 2), "signed zeros under a zero scale");
}

Test(format_validity, vectors_fp8_row_fp16)
{
    /* 6.1 item 9 */
    const nf_format *h = fmt(NF_FMT_FP8_E4M3FN_ROW_FP16);
    const uint8_t row0[] = {0x00, 0x80, 0x38, 0xB8}, row1[] = {0x40, 0xC0, 0x7E, 0xFE};
    cr_assert(fp8_row_valid(h, 0x3800, row0, 4));
    cr_assert(fp8_row_valid(h, 0x4000, row1, 4));
    const uint16_t bad_scales[] = {0x8000, 0xBC00, 0x7C00, 0x7E00};
    for (size_t i = 0; i < 4; i++) cr_assert(!fp8_row_valid(h, bad_scales[i], row0, 4), "scale %04x", bad_scales[i]);
    const uint8_t c56[] = {56};
    cr_assert(!fp8_row_valid(h, 0x0000, c56, 1), "[56, 00, 00] refused");
    const uint8_t c127[] = {127}, c255[] = {255};
    cr_assert(!fp8_row_valid(h, 0x3C00, c127, 1));
    cr_assert(!fp8_row_valid(h, 0x3C00, c255, 1));
    cr_assert(nf_fp8_row_scale_valid(h, 0x0001), "positive subnormal");
    cr_assert(nf_fp8_row_scale_valid(h, 0x0000));
}
