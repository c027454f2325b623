/* Exact scalar codecs of the format module: binary16, bfloat16, E4M3FN and E2M1 against
 * oracles written independently here.
 *
 * The oracles decode words with ldexp on their sign/exponent/fraction fields (binary64 holds
 * every value of these formats exactly) and encode by searching a sorted table of every
 * representable value and comparing against the exact binary64 midpoint between neighbours.
 * None of them shares an algorithm with the library's integer shift-and-round code. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <ninfer/format.h>

#include "support/test_float.h"
#include "support/test_rng.h"

/* ------------------------------------------------------------------ helpers */

static float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

TEST_RNG(0x9E3779B97F4A7C15ull)


/* Picks the word with even last bit when a value sits exactly between two table entries. */
static unsigned even_of(unsigned a, unsigned b) { return (a & 1u) ? b : a; }

/* Largest index i in [0, n-1) with table[i] <= a (a >= table[0]). */
static unsigned floor_index(const double *table, unsigned n, double a)
{
    unsigned lo = 0, hi = n - 1; /* invariant: table[lo] <= a < table[hi] or hi is the end */
    if (a >= table[n - 1]) return n - 1;
    while (hi - lo > 1) {
        unsigned mid = lo + (hi - lo) / 2;
        if (table[mid] <= a) lo = mid;
        else hi = mid;
    }
    return lo;
}

/* Nearest table index to a, ties to the even index; table[n-1] is the "overflow" entry. */
static unsigned nearest_index(const double *table, unsigned n, double a)
{
    unsigned i = floor_index(table, n, a);
    if (table[i] == a || i == n - 1) return i;
    double mid = (table[i] + table[i + 1]) / 2.0; /* exact: one more bit than the table */
    if (a < mid) return i;
    if (a > mid) return i + 1;
    return even_of(i, i + 1);
}

/* ------------------------------------------------------------------ binary16 oracle */

static double f16_oracle_value(uint16_t h) /* finite words only */
{
    int e = (h >> 10) & 0x1F;
    int m = h & 0x3FF;
    double v = e == 0 ? ldexp((double)m, -24) : ldexp((double)(1024 + m), e - 25);
    return (h & 0x8000) ? -v : v;
}

/* Positive binary16 values by word: index i < 0x7C00 is word i, and 0x7C00 stands for the
 * first value past 65504 on the same grid (2^16), so rounding to it means "infinity". */
#define F16_TABLE_N 0x7C01u
static double f16_table[F16_TABLE_N];

static void f16_table_init(void)
{
    for (unsigned i = 0; i < 0x7C00u; i++) f16_table[i] = f16_oracle_value((uint16_t)i);
    f16_table[0x7C00] = 65536.0;
}

static uint16_t f16_oracle_encode(float x)
{
    uint32_t u = bits_of_f32(x);
    uint16_t sign = (u & 0x80000000u) ? 0x8000 : 0;
    if (isnan(x)) return (uint16_t)(sign | 0x7E00u | ((u >> 13) & 0x1FFu));
    double a = fabs((double)x);
    if (a >= 65536.0) return (uint16_t)(sign | 0x7C00u);
    return (uint16_t)(sign | nearest_index(f16_table, F16_TABLE_N, a));
}

/* ------------------------------------------------------------------ bfloat16 oracle */

static double bf16_oracle_value(uint16_t w) /* finite words only */
{
    int e = (w >> 7) & 0xFF;
    int m = w & 0x7F;
    double v = e == 0 ? ldexp((double)m, -133) : ldexp((double)(128 + m), e - 134);
    return (w & 0x8000) ? -v : v;
}

#define BF16_TABLE_N 0x7F81u
static double bf16_table[BF16_TABLE_N];

static void bf16_table_init(void)
{
    for (unsigned i = 0; i < 0x7F80u; i++) bf16_table[i] = bf16_oracle_value((uint16_t)i);
    bf16_table[0x7F80] = ldexp(1.0, 128);
}

static uint16_t bf16_oracle_encode(float x)
{
    uint32_t u = bits_of_f32(x);
    uint16_t sign = (u & 0x80000000u) ? 0x8000 : 0;
    if (isnan(x)) return (uint16_t)((u >> 16) | 0x0040u);
    double a = fabs((double)x);
    if (a >= ldexp(1.0, 128)) return (uint16_t)(sign | 0x7F80u);
    return (uint16_t)(sign | nearest_index(bf16_table, BF16_TABLE_N, a));
}

/* ------------------------------------------------------------------ E4M3FN oracle */

static double e4m3_oracle_value(uint8_t w) /* the spec's table of cases; NaN for 0x7F/0xFF */
{
    int e = (w >> 3) & 0xF;
    int m = w & 7;
    double v;
    if (e == 0) v = m * ldexp(1.0, -9);
    else if (e == 15 && m == 7) return NAN;
    else v = (1.0 + m / 8.0) * ldexp(1.0, e - 7);
    return (w & 0x80) ? -v : v;
}

#define E4M3_TABLE_N 127u /* codes 0x00..0x7E */
static double e4m3_table[E4M3_TABLE_N];

static void e4m3_table_init(void)
{
    for (unsigned i = 0; i < E4M3_TABLE_N; i++) e4m3_table[i] = e4m3_oracle_value((uint8_t)i);
}

static uint8_t e4m3_oracle_encode(float x)
{
    uint8_t sign = (bits_of_f32(x) & 0x80000000u) ? 0x80 : 0;
    if (isnan(x)) return (uint8_t)(sign | 0x7F);
    double a = fabs((double)x);
    if (a > 448.0) a = 448.0;
    return (uint8_t)(sign | nearest_index(e4m3_table, E4M3_TABLE_N, a));
}

static void init_tables(void)
{
    f16_table_init();
    bf16_table_init();
    e4m3_table_init();
}

TestSuite(format_scalar, .init = init_tables);

/* ------------------------------------------------------------------ f32 bits */

Test(format_scalar, f32_bits_round_trip)
{
    const uint32_t words[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x3F800000u, 0x7F7FFFFFu,
                              0x7F800000u, 0xFF800000u, 0x7FC00001u, 0x7F800001u, 0xFFFFFFFFu};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        cr_assert_eq(nf_f32_bits(nf_f32_from_bits(words[i])), words[i], "word %08x", words[i]);
        cr_assert_eq(bits_of_f32(nf_f32_from_bits(words[i])), words[i]);
        cr_assert_eq(nf_f32_bits(float_of(words[i])), words[i]);
    }
}

/* ------------------------------------------------------------------ binary16 */

Test(format_scalar, f16_decode_all_words)
{
    for (uint32_t h = 0; h <= 0xFFFFu; h++) {
        uint32_t got = bits_of_f32(nf_f16_to_f32((uint16_t)h));
        uint32_t sign = (h & 0x8000u) << 16;
        if ((h & 0x7C00u) == 0x7C00u) {
            /* infinity or NaN: all-ones exponent, the 10 payload bits on top of the fraction */
            cr_assert_eq(got & 0x80000000u, sign, "h=%04x", h);
            cr_assert_eq(got & 0x7F800000u, 0x7F800000u, "h=%04x", h);
            cr_assert_eq(got & 0x007FFFFFu, (h & 0x3FFu) * 8192u, "h=%04x payload", h);
            continue;
        }
        float want = (float)f16_oracle_value((uint16_t)h); /* exact */
        cr_assert_eq(got, bits_of_f32(want), "h=%04x got %08x want %08x", h, got, bits_of_f32(want));
    }
}

Test(format_scalar, f16_decode_spot_values)
{
    cr_assert_eq(bits_of_f32(nf_f16_to_f32(0x0000)), 0x00000000u);
    cr_assert_eq(bits_of_f32(nf_f16_to_f32(0x8000)), 0x80000000u);
    cr_assert_eq(nf_f16_to_f32(0x0001), 0x1p-24f);
    cr_assert_eq(nf_f16_to_f32(0x03FF), 0x3FFp-24f);
    cr_assert_eq(nf_f16_to_f32(0x0400), 0x1p-14f);
    cr_assert_eq(nf_f16_to_f32(0x3C00), 1.0f);
    cr_assert_eq(nf_f16_to_f32(0xBC00), -1.0f);
    cr_assert_eq(nf_f16_to_f32(0x3800), 0.5f);
    cr_assert_eq(nf_f16_to_f32(0x3E00), 1.5f);
    cr_assert_eq(nf_f16_to_f32(0x7BFF), 65504.0f);
    cr_assert_eq(bits_of_f32(nf_f16_to_f32(0x7C00)), 0x7F800000u);
    cr_assert_eq(bits_of_f32(nf_f16_to_f32(0xFC00)), 0xFF800000u);
    cr_assert_eq(bits_of_f32(nf_f16_to_f32(0x7E00)), 0x7FC00000u);
    cr_assert_eq(bits_of_f32(nf_f16_to_f32(0x7C01)), 0x7F802000u, "signaling NaN stays signaling");
    cr_assert_eq(bits_of_f32(nf_f16_to_f32(0xFFFF)), 0xFFFFE000u);
}

static void check_f16_encode(float x)
{
    uint16_t got = nf_f32_to_f16(x);
    uint16_t want = f16_oracle_encode(x);
    cr_assert_eq(got, want, "f32 %08x (%a): got %04x want %04x", bits_of_f32(x), (double)x, got, want);
}

Test(format_scalar, f16_encode_every_value_round_trips)
{
    for (uint32_t h = 0; h <= 0xFFFFu; h++) {
        if ((h & 0x7C00u) == 0x7C00u && (h & 0x3FFu)) continue; /* NaN: see nan test */
        float x = (h & 0x7C00u) == 0x7C00u ? ((h & 0x8000u) ? -INFINITY : INFINITY)
                                           : (float)f16_oracle_value((uint16_t)h);
        cr_assert_eq(nf_f32_to_f16(x), h, "h=%04x", h);
    }
}

Test(format_scalar, f16_encode_all_midpoints_and_neighbours)
{
    unsigned ties_up = 0, ties_down = 0;
    for (unsigned i = 0; i < 0x7C00u; i++) {
        double mid_d = (f16_table[i] + f16_table[i + 1]) / 2.0;
        float mid = (float)mid_d;
        cr_assert_eq((double)mid, mid_d, "midpoint %u not exact in binary32", i);
        for (int s = 0; s < 2; s++) {
            float m = s ? -mid : mid;
            uint16_t sign = s ? 0x8000 : 0;
            /* the tie itself: the even word of the pair, which for i = 0x7BFF is infinity */
            uint16_t tie = (uint16_t)(sign | even_of(i, i + 1));
            cr_assert_eq(nf_f32_to_f16(m), tie, "midpoint above word %04x", i);
            if (even_of(i, i + 1) == i) ties_down++;
            else ties_up++;
            check_f16_encode(m);
            /* one binary32 ulp either side decides the other way, away from the tie */
            cr_assert_eq(nf_f32_to_f16(nextafterf(m, 0.0f)), (uint16_t)(sign | i));
            cr_assert_eq(nf_f32_to_f16(nextafterf(m, s ? -INFINITY : INFINITY)), (uint16_t)(sign | (i + 1)));
            check_f16_encode(nextafterf(m, 0.0f));
            check_f16_encode(nextafterf(m, s ? -INFINITY : INFINITY));
        }
    }
    cr_assert(ties_up > 0 && ties_down > 0);
}

Test(format_scalar, f16_encode_boundaries)
{
    /* overflow threshold: 65520 is the tie between 65504 (odd) and 2^16, so it overflows */
    cr_assert_eq(nf_f32_to_f16(65504.0f), 0x7BFF);
    cr_assert_eq(nf_f32_to_f16(65519.99609375f), 0x7BFF); /* largest binary32 below 65520 */
    cr_assert_eq(nf_f32_to_f16(nextafterf(65520.0f, 0.0f)), 0x7BFF);
    cr_assert_eq(nf_f32_to_f16(65520.0f), 0x7C00);
    cr_assert_eq(nf_f32_to_f16(-65520.0f), 0xFC00);
    cr_assert_eq(nf_f32_to_f16(65536.0f), 0x7C00);
    cr_assert_eq(nf_f32_to_f16(FLT_MAX), 0x7C00);
    cr_assert_eq(nf_f32_to_f16(-FLT_MAX), 0xFC00);
    cr_assert_eq(nf_f32_to_f16(INFINITY), 0x7C00);
    cr_assert_eq(nf_f32_to_f16(-INFINITY), 0xFC00);
    /* underflow: 2^-25 is the tie between +0 and 2^-24 and goes to +0 (even) */
    cr_assert_eq(nf_f32_to_f16(0x1p-25f), 0x0000);
    cr_assert_eq(nf_f32_to_f16(-0x1p-25f), 0x8000);
    cr_assert_eq(nf_f32_to_f16(nextafterf(0x1p-25f, 1.0f)), 0x0001);
    cr_assert_eq(nf_f32_to_f16(0x1p-26f), 0x0000);
    cr_assert_eq(nf_f32_to_f16(0x1.fffffep-26f), 0x0000);
    cr_assert_eq(nf_f32_to_f16(0x1p-24f), 0x0001);
    cr_assert_eq(nf_f32_to_f16(0x3p-25f), 0x0002);  /* tie between 1 and 2 units -> 2 */
    cr_assert_eq(nf_f32_to_f16(0x5p-25f), 0x0002);  /* tie between 2 and 3 units -> 2 */
    cr_assert_eq(nf_f32_to_f16(0x1p-149f), 0x0000); /* binary32 subnormals vanish */
    cr_assert_eq(nf_f32_to_f16(-0x1p-149f), 0x8000);
    cr_assert_eq(nf_f32_to_f16(0x1p-126f), 0x0000);
    /* subnormal/normal boundary: largest subnormal 0x3FF units, then 2^-14 */
    cr_assert_eq(nf_f32_to_f16(0x3FFp-24f), 0x03FF);
    cr_assert_eq(nf_f32_to_f16(0x7FFp-25f), 0x0400); /* tie 0x3FF/0x400 -> even 0x400 */
    cr_assert_eq(nf_f32_to_f16(nextafterf(0x7FFp-25f, 0.0f)), 0x03FF);
    cr_assert_eq(nf_f32_to_f16(0x1p-14f), 0x0400);
    /* normal ties */
    cr_assert_eq(nf_f32_to_f16(1.0f + 0x1p-11f), 0x3C00);
    cr_assert_eq(nf_f32_to_f16(1.0f + 0x3p-11f), 0x3C02);
    cr_assert_eq(nf_f32_to_f16(2047.0f + 0.5f), 0x6800); /* 2047.5 -> 2048 */
    cr_assert_eq(nf_f32_to_f16(2049.0f), 0x6800);        /* tie 2048/2050 -> 2048 */
    cr_assert_eq(nf_f32_to_f16(2051.0f), 0x6802);        /* tie 2050/2052 -> 2052 */
    cr_assert_eq(nf_f32_to_f16(0.0f), 0x0000);
    cr_assert_eq(nf_f32_to_f16(-0.0f), 0x8000);
}

Test(format_scalar, f16_encode_nan)
{
    /* sign kept, payload truncated to its top 10 bits, quiet bit forced */
    cr_assert_eq(nf_f32_to_f16(float_of(0x7FC00000u)), 0x7E00);
    cr_assert_eq(nf_f32_to_f16(float_of(0xFFC00000u)), 0xFE00);
    cr_assert_eq(nf_f32_to_f16(float_of(0x7F800001u)), 0x7E00, "payload truncated to 0 stays NaN");
    cr_assert_eq(nf_f32_to_f16(float_of(0xFF800001u)), 0xFE00);
    cr_assert_eq(nf_f32_to_f16(float_of(0x7F802000u)), 0x7E01);
    cr_assert_eq(nf_f32_to_f16(float_of(0x7FFFFFFFu)), 0x7FFF);
    cr_assert_eq(nf_f32_to_f16(float_of(0xFFBFE000u)), 0xFFFF);
    for (int i = 0; i < 100000; i++) {
        uint32_t u = 0x7F800000u | (rng32() & 0x807FFFFFu);
        if ((u & 0x007FFFFFu) == 0) continue;
        uint16_t h = nf_f32_to_f16(float_of(u));
        cr_assert((h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0, "NaN %08x -> %04x", u, h);
        check_f16_encode(float_of(u));
    }
}

Test(format_scalar, f16_encode_random_binary32)
{
    /* every bit pattern... */
    for (int i = 0; i < (1 << 22); i++) check_f16_encode(float_of(rng32()));
    /* ...and patterns concentrated where binary16 lives (2^-27 .. 2^17) */
    for (int i = 0; i < (1 << 22); i++) {
        uint32_t u = rng32();
        uint32_t exp = 100u + (u >> 8) % 45u;
        check_f16_encode(float_of((u & 0x80000000u) | exp << 23 | (rng32() & 0x7FFFFFu)));
    }
}

Test(format_scalar, f16_encode_dense_sweep_of_the_subnormal_range)
{
    /* [2^-26, 2^-13): underflow to zero, every subnormal, the first normal binade; a stride
     * coprime to every power of two reaches all residues of the dropped low bits */
    for (uint32_t u = 0x32800000u; u < 0x39000000u; u += 5) {
        check_f16_encode(float_of(u));
        check_f16_encode(float_of(u | 0x80000000u));
    }
    /* below 2^-26 everything is a signed zero, binary32 subnormals included */
    for (uint32_t u = 0; u < 0x32800000u; u += 4099) {
        cr_assert_eq(nf_f32_to_f16(float_of(u)), 0x0000, "%08x", u);
        cr_assert_eq(nf_f32_to_f16(float_of(u | 0x80000000u)), 0x8000, "%08x", u);
    }
}

/* ggml's own binary16 conversion of real data (tests/data/gguf/MANIFEST.md: f16.dequant.f32 is
 * the exact decode of fp16(source rows 0..3), RNE). */
static size_t read_f32_file(const char *name, float *out, size_t n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/gguf/%s", NINFER_TEST_DATA, name);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    unsigned char b[4];
    size_t i = 0;
    for (; i < n && fread(b, 1, 4, f) == 4; i++)
        out[i] = float_of((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24);
    fclose(f);
    return i;
}

Test(format_scalar, f16_and_bf16_match_ggml_fixture)
{
    enum { N = 4 * 512 };
    static float src[N], f16[N], bf16[N];
    cr_assert_eq(read_f32_file("source.f32", src, N), N);
    cr_assert_eq(read_f32_file("f16.dequant.f32", f16, N), N);
    cr_assert_eq(read_f32_file("bf16.dequant.f32", bf16, N), N);
    for (size_t i = 0; i < N; i++) {
        cr_assert_eq(bits_of_f32(nf_f16_to_f32(nf_f32_to_f16(src[i]))), bits_of_f32(f16[i]), "f16 %zu", i);
        cr_assert_eq(bits_of_f32(nf_bf16_to_f32(nf_f32_to_bf16(src[i]))), bits_of_f32(bf16[i]), "bf16 %zu", i);
    }
}

/* ------------------------------------------------------------------ bfloat16 */

Test(format_scalar, bf16_decode_all_words)
{
    for (uint32_t w = 0; w <= 0xFFFFu; w++) {
        uint32_t got = bits_of_f32(nf_bf16_to_f32((uint16_t)w));
        if ((w & 0x7F80u) == 0x7F80u) {
            cr_assert_eq(got >> 16, w, "w=%04x", w);
            cr_assert_eq(got & 0xFFFFu, 0u, "w=%04x", w);
            continue;
        }
        float want = (float)bf16_oracle_value((uint16_t)w);
        cr_assert_eq(got, bits_of_f32(want), "w=%04x got %08x want %08x", w, got, bits_of_f32(want));
    }
    cr_assert_eq(bits_of_f32(nf_bf16_to_f32(0x7F81)), 0x7F810000u, "signaling NaN kept");
}

static void check_bf16_encode(float x)
{
    uint16_t got = nf_f32_to_bf16(x);
    uint16_t want = bf16_oracle_encode(x);
    cr_assert_eq(got, want, "f32 %08x (%a): got %04x want %04x", bits_of_f32(x), (double)x, got, want);
}

Test(format_scalar, bf16_encode_every_value_round_trips)
{
    for (uint32_t w = 0; w <= 0xFFFFu; w++) {
        if ((w & 0x7F80u) == 0x7F80u && (w & 0x7Fu)) continue;
        float x = (w & 0x7F80u) == 0x7F80u ? ((w & 0x8000u) ? -INFINITY : INFINITY)
                                           : (float)bf16_oracle_value((uint16_t)w);
        cr_assert_eq(nf_f32_to_bf16(x), w, "w=%04x", w);
    }
}

Test(format_scalar, bf16_encode_all_midpoints_and_neighbours)
{
    for (unsigned i = 0; i < 0x7F80u; i++) {
        double mid_d = (bf16_table[i] + bf16_table[i + 1]) / 2.0;
        float mid = (float)mid_d;
        cr_assert_eq((double)mid, mid_d);
        for (int s = 0; s < 2; s++) {
            float m = s ? -mid : mid;
            uint16_t sign = s ? 0x8000 : 0;
            cr_assert_eq(nf_f32_to_bf16(m), (uint16_t)(sign | even_of(i, i + 1)), "mid %04x", i);
            check_bf16_encode(m);
            cr_assert_eq(nf_f32_to_bf16(nextafterf(m, 0.0f)), (uint16_t)(sign | i));
            cr_assert_eq(nf_f32_to_bf16(nextafterf(m, s ? -INFINITY : INFINITY)), (uint16_t)(sign | (i + 1)));
        }
    }
}

Test(format_scalar, bf16_encode_boundaries_and_nan)
{
    cr_assert_eq(nf_f32_to_bf16(float_of(0x7F7F7FFFu)), 0x7F7F);
    cr_assert_eq(nf_f32_to_bf16(float_of(0x7F7F8000u)), 0x7F80, "tie above the max overflows");
    cr_assert_eq(nf_f32_to_bf16(FLT_MAX), 0x7F80);
    cr_assert_eq(nf_f32_to_bf16(-FLT_MAX), 0xFF80);
    cr_assert_eq(nf_f32_to_bf16(INFINITY), 0x7F80);
    cr_assert_eq(nf_f32_to_bf16(float_of(0x3F808000u)), 0x3F80);
    cr_assert_eq(nf_f32_to_bf16(float_of(0x3F818000u)), 0x3F82);
    cr_assert_eq(nf_f32_to_bf16(float_of(0x00008000u)), 0x0000);
    cr_assert_eq(nf_f32_to_bf16(float_of(0x00018000u)), 0x0002);
    cr_assert_eq(nf_f32_to_bf16(float_of(0x80008001u)), 0x8001);
    cr_assert_eq(nf_f32_to_bf16(-0.0f), 0x8000);
    /* NaN: sign and high payload kept, quiet bit set, never infinity */
    cr_assert_eq(nf_f32_to_bf16(float_of(0x7F800001u)), 0x7FC0);
    cr_assert_eq(nf_f32_to_bf16(float_of(0xFF800001u)), 0xFFC0);
    cr_assert_eq(nf_f32_to_bf16(float_of(0x7F810000u)), 0x7FC1);
    cr_assert_eq(nf_f32_to_bf16(float_of(0xFFC1FFFFu)), 0xFFC1, "no rounding of NaN payloads");
    cr_assert_eq(nf_f32_to_bf16(float_of(0x7FFFFFFFu)), 0x7FFF);
}

Test(format_scalar, bf16_encode_random_binary32)
{
    for (int i = 0; i < (1 << 23); i++) check_bf16_encode(float_of(rng32()));
}

/* ------------------------------------------------------------------ E4M3FN */

Test(format_scalar, e4m3_decode_all_words)
{
    for (unsigned w = 0; w < 256; w++) {
        float got = nf_e4m3fn_to_f32((uint8_t)w);
        double want = e4m3_oracle_value((uint8_t)w);
        if ((w & 0x7F) == 0x7F) {
            cr_assert(isnan(got), "w=%02x", w);
            cr_assert_eq(signbit(got) != 0, (w & 0x80) != 0, "NaN sign of %02x", w);
            continue;
        }
        cr_assert_eq(bits_of_f32(got), bits_of_f32((float)want), "w=%02x got %a want %a", w, (double)got, want);
    }
}

Test(format_scalar, e4m3_decode_spot_values)
{
    cr_assert_eq(bits_of_f32(nf_e4m3fn_to_f32(0x00)), 0x00000000u);
    cr_assert_eq(bits_of_f32(nf_e4m3fn_to_f32(0x80)), 0x80000000u);
    cr_assert_eq(nf_e4m3fn_to_f32(0x01), 0x1p-9f);
    cr_assert_eq(nf_e4m3fn_to_f32(0x07), 0x7p-9f);
    cr_assert_eq(nf_e4m3fn_to_f32(0x08), 0x1p-6f);
    cr_assert_eq(nf_e4m3fn_to_f32(0x38), 1.0f);
    cr_assert_eq(nf_e4m3fn_to_f32(0xB8), -1.0f);
    cr_assert_eq(nf_e4m3fn_to_f32(0x39), 1.125f);
    cr_assert_eq(nf_e4m3fn_to_f32(0x40), 2.0f);
    cr_assert_eq(nf_e4m3fn_to_f32(0x78), 256.0f);
    cr_assert_eq(nf_e4m3fn_to_f32(0x7E), 448.0f);
    cr_assert_eq(nf_e4m3fn_to_f32(0xFE), -448.0f);
}

static void check_e4m3_encode(float x)
{
    uint8_t got = nf_f32_to_e4m3fn(x);
    uint8_t want = e4m3_oracle_encode(x);
    cr_assert_eq(got, want, "f32 %08x (%a): got %02x want %02x", bits_of_f32(x), (double)x, got, want);
}

Test(format_scalar, e4m3_encode_decode_round_trip)
{
    for (unsigned w = 0; w < 256; w++) {
        if ((w & 0x7F) == 0x7F) continue;
        cr_assert_eq(nf_f32_to_e4m3fn((float)e4m3_oracle_value((uint8_t)w)), w, "w=%02x", w);
    }
}

Test(format_scalar, e4m3_encode_midpoints)
{
    for (unsigned i = 0; i + 1 < E4M3_TABLE_N; i++) {
        float mid = (float)((e4m3_table[i] + e4m3_table[i + 1]) / 2.0);
        for (int s = 0; s < 2; s++) {
            float m = s ? -mid : mid;
            uint8_t sign = s ? 0x80 : 0;
            cr_assert_eq(nf_f32_to_e4m3fn(m), (uint8_t)(sign | even_of(i, i + 1)), "mid %02x", i);
            cr_assert_eq(nf_f32_to_e4m3fn(nextafterf(m, 0.0f)), (uint8_t)(sign | i));
            cr_assert_eq(nf_f32_to_e4m3fn(nextafterf(m, s ? -INFINITY : INFINITY)), (uint8_t)(sign | (i + 1)));
            check_e4m3_encode(m);
        }
    }
    /* the spec's fixture row: 1.0625 and 1.1875 are ties, resolved to the even code */
    cr_assert_eq(nf_f32_to_e4m3fn(1.0625f), 0x38);
    cr_assert_eq(nf_f32_to_e4m3fn(1.1875f), 0x3A);
    cr_assert_eq(nf_f32_to_e4m3fn(-1.0625f), 0xB8);
    cr_assert_eq(nf_f32_to_e4m3fn(-1.1875f), 0xBA);
}

Test(format_scalar, e4m3_encode_clamp)
{
    const float big[] = {448.0f, 448.5f,  449.0f,   463.0f, 464.0f,  465.0f,  480.0f,
                         500.0f, 1024.0f, 65504.0f, 1e30f,  FLT_MAX, INFINITY};
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
        cr_assert_eq(nf_f32_to_e4m3fn(big[i]), 0x7E, "%a", (double)big[i]);
        cr_assert_eq(nf_f32_to_e4m3fn(-big[i]), 0xFE, "%a", (double)-big[i]);
        check_e4m3_encode(big[i]);
    }
    cr_assert_eq(nf_f32_to_e4m3fn(nextafterf(448.0f, 0.0f)), 0x7E);
    cr_assert_eq(nf_f32_to_e4m3fn(432.0f), 0x7E); /* tie 416/448 -> even 0x7E */
    cr_assert_eq(nf_f32_to_e4m3fn(nextafterf(432.0f, 0.0f)), 0x7D);
    cr_assert_eq(nf_f32_to_e4m3fn(416.0f), 0x7D);
}

Test(format_scalar, e4m3_encode_subnormal_grid)
{
    /* k * 2^-10: even k are the codes k/2 (code 8 = 2^-6 continues the same 2^-9 grid up to
     * code 15), odd k are ties between neighbours and take the even code */
    for (unsigned k = 0; k < 32; k++) {
        float x = ldexpf((float)k, -10);
        unsigned want = (k % 2 == 0) ? k / 2 : even_of((k - 1) / 2, (k + 1) / 2);
        cr_assert_eq(nf_f32_to_e4m3fn(x), want, "k=%u", k);
        cr_assert_eq(nf_f32_to_e4m3fn(-x), 0x80 | want, "k=%u", k);
        check_e4m3_encode(x);
        if (k > 0) {
            check_e4m3_encode(nextafterf(x, 0.0f));
            check_e4m3_encode(nextafterf(x, 1.0f));
        }
    }
    cr_assert_eq(nf_f32_to_e4m3fn(nextafterf(0x1p-10f, 1.0f)), 0x01);
    cr_assert_eq(nf_f32_to_e4m3fn(0x1p-11f), 0x00);
    cr_assert_eq(nf_f32_to_e4m3fn(0x1p-149f), 0x00);
}

Test(format_scalar, e4m3_encode_signs_and_nan)
{
    cr_assert_eq(nf_f32_to_e4m3fn(0.0f), 0x00);
    cr_assert_eq(nf_f32_to_e4m3fn(-0.0f), 0x80);
    cr_assert_eq(nf_f32_to_e4m3fn(-1e-30f), 0x80);
    cr_assert_eq(nf_f32_to_e4m3fn(-0x1p-149f), 0x80);
    cr_assert_eq(nf_f32_to_e4m3fn(-0x1p-10f), 0x80);
    cr_assert_eq(nf_f32_to_e4m3fn(float_of(0x7FC00000u)), 0x7F);
    cr_assert_eq(nf_f32_to_e4m3fn(float_of(0xFFC00000u)), 0xFF);
    cr_assert_eq(nf_f32_to_e4m3fn(float_of(0x7F800001u)), 0x7F);
}

Test(format_scalar, e4m3_encode_random_binary32)
{
    for (int i = 0; i < (1 << 22); i++) check_e4m3_encode(float_of(rng32()));
    for (int i = 0; i < (1 << 22); i++) {
        uint32_t u = rng32();
        uint32_t exp = 110u + (u >> 8) % 30u; /* 2^-17 .. 2^12 */
        check_e4m3_encode(float_of((u & 0x80000000u) | exp << 23 | (rng32() & 0x7FFFFFu)));
    }
}

/* ------------------------------------------------------------------ E2M1 */

Test(format_scalar, e2m1_all_words)
{
    static const float table[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    for (unsigned w = 0; w < 16; w++) {
        float want = (w & 8) ? -table[w & 7] : table[w & 7];
        cr_assert_eq(bits_of_f32(nf_e2m1_to_f32((uint8_t)w)), bits_of_f32(want), "w=%x", w);
    }
    cr_assert_eq(bits_of_f32(nf_e2m1_to_f32(0x8)), 0x80000000u);
}
