/* fp8_row_maxabs (docs/methods.md): the derived rows of docs/vectors.md, the exhaustive E4M3 rounding oracle
 * of docs/vectors.md item 10 (upstream's test_fp16_scale_quantizer_against_independent_scalar_
 * oracle, re-derived), refusals, BF16 pre-rounding and chunk independence.
 *
 * The oracle here decodes E4M3FN and binary16 words through ldexp, rounds to binary16 with
 * frexp/ldexp, to BF16 with the spec's integer formula, and picks the E4M3FN code by comparing
 * the normalized magnitude with the exact binary64 midpoints of neighbouring codes (ties to the
 * even code).  Nothing is taken from the library's codecs. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "support/test_float.h"
#include "support/test_rng.h"

/* ------------------------------------------------------------------ oracle helpers */

/* E4M3FN word -> value (words 0..126 positive; sign bit 0x80). */
static double e4(unsigned w)
{
    unsigned e = (w >> 3) & 15, m = w & 7;
    double v = e == 0 ? ldexp(m, -9) : ldexp(1.0 + m / 8.0, (int)e - 7);
    return (w & 0x80) ? -v : v;
}

/* docs/methods.md, fp8_row_maxabs formula (finite inputs). */
static uint16_t bf16_rne(float f)
{
    uint32_t b = bits_of_f32(f);
    return (uint16_t)(((uint64_t)b + 0x7FFF + ((b >> 16) & 1)) >> 16);
}

static float bf16_value(uint16_t w) { return f32_of_bits((uint32_t)w << 16); }

/* Nearest positive E4M3FN code (0..126) to a in [0, 448], ties to the even code. */
static unsigned e4_nearest(double a)
{
    unsigned c = 0;
    while (c < 126 && a > e4(c + 1)) c++;
    /* e4(c) < a <= e4(c+1) now (or c = 126, or a == 0) */
    if (c == 126 || a == e4(c)) return c;
    double mid = (e4(c) + e4(c + 1)) / 2.0; /* exact: at most 5 significant bits */
    if (a < mid) return c;
    if (a > mid) return c + 1;
    return (c & 1) ? c + 1 : c;
}

/* One row as upstream's scalar oracle computes it: codes and the scale word.  x are BF16 values;
 * fp16 selects binary16 (else BF16) scales.  Returns false when the row must be refused. */
static bool oracle_row(const float *x, size_t k, bool fp16, uint8_t *codes, uint16_t *scale)
{
    double m = 0;
    for (size_t i = 0; i < k; i++) m = fmax(m, fabs((double)x[i]));
    if (m == 0) {
        memset(codes, 0, k);
        *scale = 0;
        return true;
    }
    float raw = (float)(m / 448.0);
    uint16_t w;
    double s;
    if (fp16) {
        w = f16_round((double)raw);
        if (w == 0) w = 1;
        if ((w & 0x7C00) == 0x7C00) return false;
        s = f16_value(w);
    } else {
        w = bf16_rne(raw);
        if (w == 0) w = 1;
        s = (double)bf16_value(w);
    }
    float r = (float)(1.0 / s);
    for (size_t i = 0; i < k; i++) {
        float n = (float)((double)x[i] * (double)r);
        if (!isfinite(n)) return false;
        double a = fmin(448.0, fabs((double)n));
        codes[i] = (uint8_t)(e4_nearest(a) | (signbit(x[i]) ? 0x80u : 0u));
    }
    *scale = w;
    return true;
}

/* ------------------------------------------------------------------ running the method */

typedef struct fp8_out {
    nf_words w;
} fp8_out;

static void out_alloc(fp8_out *o, uint64_t rows, uint64_t cols)
{
    memset(o, 0, sizeof *o);
    o->w.rows = rows;
    o->w.cols = cols;
    o->w.codes8 = calloc(rows * cols + 1, 1);
    o->w.scales = calloc(rows + 1, 2);
}

static void out_free(fp8_out *o)
{
    free(o->w.codes8);
    free(o->w.scales);
}

static uint8_t *pack_bf16(const float *v, size_t n)
{
    uint8_t *b = malloc(2 * n + 1);
    for (size_t i = 0; i < n; i++) {
        uint16_t w = (uint16_t)(bits_of_f32(v[i]) >> 16); /* callers pass BF16 values */
        b[2 * i] = (uint8_t)w;
        b[2 * i + 1] = (uint8_t)(w >> 8);
    }
    return b;
}

static nf_status fp8(nf_format_id id, nf_src_type type, const float *v, uint64_t rows, uint64_t cols, fp8_out *o,
                     nf_error *err)
{
    out_alloc(o, rows, cols);
    uint8_t *data = type == NF_SRC_BF16 ? pack_bf16(v, rows * cols) : pack_f32(v, rows * cols);
    nf_src_rows src = {.name = "ngram", .type = type, .data = data, .rows = rows, .cols = cols};
    nf_status st = nf_fp8_row_maxabs_rows(nf_format_by_id(id), &src, &o->w, err);
    free(data);
    return st;
}

/* ------------------------------------------------------------------ docs/vectors.md, derived vectors */

static void expect_row(nf_format_id id, const float *v, size_t k, const uint8_t *codes, uint16_t scale)
{
    fp8_out o;
    nf_error err = {0};
    cr_assert_eq(fp8(id, NF_SRC_F32, v, 1, k, &o, &err), NF_OK, "%s", err.message);
    for (size_t i = 0; i < k; i++)
        cr_expect_eq(o.w.codes8[i], codes[i], "col %zu: 0x%02x, want 0x%02x", i, o.w.codes8[i], codes[i]);
    cr_expect_eq(o.w.scales[0], scale, "scale 0x%04x, want 0x%04x", o.w.scales[0], scale);
    out_free(&o);
}

Test(fp8, vector_rows)
{
    const float a[4] = {1, -2, 0.5f, 3};
    const uint8_t ca[4] = {0x71, 0xF9, 0x69, 0x7E};
    expect_row(NF_FMT_FP8_E4M3FN_ROW_FP16, a, 4, ca, 0x1EDB);
    expect_row(NF_FMT_FP8_E4M3FN_ROW_BF16, a, 4, ca, 0x3BDB);

    const float b[5] = {448, 1.0625f, 1.1875f, -1.0625f, -1.1875f}; /* ties to even codes */
    const uint8_t cb[5] = {0x7E, 0x38, 0x3A, 0xB8, 0xBA};
    expect_row(NF_FMT_FP8_E4M3FN_ROW_FP16, b, 5, cb, 0x3C00);

    const float c[4] = {0, -0.0f, 0.001f, -3};
    const uint8_t cc[4] = {0x00, 0x80, 0x22, 0xFE};
    expect_row(NF_FMT_FP8_E4M3FN_ROW_FP16, c, 4, cc, 0x1EDB);
}

Test(fp8, zero_rows_use_positive_zero_codes)
{
    const float z[6] = {0, -0.0f, 0, -0.0f, 0, 0};
    const uint8_t cz[6] = {0};
    expect_row(NF_FMT_FP8_E4M3FN_ROW_FP16, z, 6, cz, 0x0000);
    expect_row(NF_FMT_FP8_E4M3FN_ROW_BF16, z, 6, cz, 0x0000);
}

/* ------------------------------------------------------------------ docs/vectors.md item 10 */

/* Rows: the 127 positive E4M3FN values then the 126 midpoints, times each multiplier and sign,
 * first element -0; an all-zero row; a row of 2^-40.  Every value is exact in BF16. */
static float *exhaustive_rows(size_t *rows, size_t *k)
{
    static const double mult[6] = {0x1p-22, 0x1p-14, 0.125, 1, 64, 32768};
    *k = 253;
    *rows = 6 * 2 + 2;
    float *v = malloc(sizeof(float) * *rows * *k);
    size_t r = 0;
    for (int mi = 0; mi < 6; mi++) {
        for (int sign = 1; sign >= -1; sign -= 2, r++) {
            float *row = v + r * 253;
            for (unsigned i = 0; i < 127; i++) row[i] = (float)(sign * e4(i) * mult[mi]);
            for (unsigned i = 0; i < 126; i++) row[127 + i] = (float)(sign * (e4(i) + e4(i + 1)) / 2 * mult[mi]);
            row[0] = -0.0f;
        }
    }
    for (size_t i = 0; i < 253; i++) v[r * 253 + i] = 0.0f;
    r++;
    for (size_t i = 0; i < 253; i++) v[r * 253 + i] = 0x1p-40f;
    for (size_t i = 0; i < *rows * *k; i++) cr_assert_eq(bf16_value(bf16_rne(v[i])), v[i], "not BF16-exact");
    return v;
}

Test(fp8, exhaustive_e4m3_rounding_fp16_scales)
{
    size_t rows, k;
    float *v = exhaustive_rows(&rows, &k);
    for (int src = 0; src < 2; src++) { /* the same rows given as F32 and as BF16 */
        fp8_out o;
        nf_error err = {0};
        cr_assert_eq(fp8(NF_FMT_FP8_E4M3FN_ROW_FP16, src ? NF_SRC_BF16 : NF_SRC_F32, v, rows, k, &o, &err), NF_OK, "%s",
                     err.message);
        uint8_t codes[253];
        for (size_t r = 0; r < rows; r++) {
            uint16_t scale;
            cr_assert(oracle_row(v + r * k, k, true, codes, &scale), "oracle refuses row %zu", r);
            cr_assert_eq(o.w.scales[r], scale, "row %zu: scale 0x%04x, oracle 0x%04x", r, o.w.scales[r], scale);
            for (size_t i = 0; i < k; i++)
                cr_assert_eq(o.w.codes8[r * k + i], codes[i], "row %zu col %zu (x=%a): 0x%02x, oracle 0x%02x", r, i,
                             (double)v[r * k + i], o.w.codes8[r * k + i], codes[i]);
        }
        /* the known corners: -0 first, the zero row, 2^-40 rescued to 0x0001 with zero codes */
        cr_expect_eq(o.w.codes8[0], 0x80);
        cr_expect_eq(o.w.scales[12], 0x0000);
        cr_expect_eq(o.w.scales[13], 0x0001);
        for (size_t i = 0; i < k; i++) cr_expect_eq(o.w.codes8[13 * k + i], 0x00);
        out_free(&o);
    }
    free(v);
}

Test(fp8, exhaustive_rows_bf16_scales)
{
    /* The same rows with BF16 scales (the table-search path upstream).  BF16 has binary32's
     * exponent range, so the 2^-40 row gets a normal scale near 2^-49 instead of a rescue. */
    size_t rows, k;
    float *v = exhaustive_rows(&rows, &k);
    fp8_out o;
    nf_error err = {0};
    cr_assert_eq(fp8(NF_FMT_FP8_E4M3FN_ROW_BF16, NF_SRC_F32, v, rows, k, &o, &err), NF_OK, "%s", err.message);
    uint8_t codes[253];
    for (size_t r = 0; r < rows; r++) {
        uint16_t scale;
        cr_assert(oracle_row(v + r * k, k, false, codes, &scale));
        cr_assert_eq(o.w.scales[r], scale, "row %zu: scale 0x%04x, oracle 0x%04x", r, o.w.scales[r], scale);
        for (size_t i = 0; i < k; i++) cr_assert_eq(o.w.codes8[r * k + i], codes[i], "row %zu col %zu", r, i);
    }
    cr_expect_eq(o.w.scales[12], 0x0000);
    out_free(&o);
    free(v);
}

Test(fp8, bf16_scales_of_tiny_rows)
{
    /* m = 2^-110: scale bf16(2^-110 / 448), a normal BF16 with a finite reciprocal. */
    float row[3] = {0x1p-110f, -0x1p-111f, 0.0f};
    uint8_t codes[3];
    uint16_t scale;
    cr_assert(oracle_row(row, 3, false, codes, &scale));
    expect_row(NF_FMT_FP8_E4M3FN_ROW_BF16, row, 3, codes, scale);
    cr_expect_eq(codes[0], 0x7E);
    /* m = 2^-126: raw = 2^-126 / 448 rounds to BF16 zero and is rescued to 0x0001 = 2^-133,
     * whose binary32 reciprocal 2^133 is infinite: upstream refuses the normalized values, and
     * so does the encoder (the binary16 variant is fine: its rescued scale is 2^-24). */
    float tiny[2] = {0x1p-126f, 0.0f};
    fp8_out o;
    nf_error err = {0};
    cr_expect_eq(fp8(NF_FMT_FP8_E4M3FN_ROW_BF16, NF_SRC_F32, tiny, 1, 2, &o, &err), NF_ERR_INVALID);
    cr_expect(strstr(err.message, "row 0 col 0: normalized value") && strstr(err.message, "not finite"), "%s",
              err.message);
    out_free(&o);
    const uint8_t zero[2] = {0, 0};
    expect_row(NF_FMT_FP8_E4M3FN_ROW_FP16, tiny, 2, zero, 0x0001);
}

Test(fp8, refuses_nan_inf_and_overflowing_scale)
{
    const float bad[3] = {NAN, INFINITY, 0x1p30f};
    const char *want[3] = {"tensor 'ngram': row 0 col 0: source value NaN is not finite",
                           "tensor 'ngram': row 0 col 0: source value +inf is not finite", "overflows binary16"};
    for (int b = 0; b < 3; b++) {
        float row[160];
        for (int i = 0; i < 160; i++) row[i] = bad[b];
        fp8_out o;
        nf_error err = {0};
        cr_expect_eq(fp8(NF_FMT_FP8_E4M3FN_ROW_FP16, NF_SRC_BF16, row, 1, 160, &o, &err), NF_ERR_INVALID, "value %d",
                     b);
        cr_expect(strstr(err.message, want[b]) != NULL, "%s", err.message);
        out_free(&o);
    }
    /* 2^30 is fine with a BF16 scale */
    float row[160];
    for (int i = 0; i < 160; i++) row[i] = 0x1p30f;
    fp8_out o;
    nf_error err = {0};
    cr_expect_eq(fp8(NF_FMT_FP8_E4M3FN_ROW_BF16, NF_SRC_F32, row, 1, 160, &o, &err), NF_OK, "%s", err.message);
    out_free(&o);
    /* a finite F32 value that overflows BF16 when rounded is refused, naming its column */
    float big[3] = {1, 2, FLT_MAX};
    cr_expect_eq(fp8(NF_FMT_FP8_E4M3FN_ROW_BF16, NF_SRC_F32, big, 1, 3, &o, &err), NF_ERR_INVALID);
    cr_expect(strstr(err.message, "row 0 col 2") && strstr(err.message, "overflows bfloat16"), "%s", err.message);
    out_free(&o);
}

Test(fp8, refuses_other_targets)
{
    float row[4] = {1};
    fp8_out o;
    out_alloc(&o, 1, 4);
    nf_error err = {0};
    nf_src_rows src = {.type = NF_SRC_F32, .data = row, .rows = 1, .cols = 4};
    cr_expect_eq(nf_fp8_row_maxabs_rows(nf_format_by_id(NF_FMT_Q8_G32_FP16), &src, &o.w, &err), NF_ERR_INVALID);
    cr_expect_eq(nf_fp8_row_maxabs_rows(nf_format_by_id(NF_FMT_NVFP4), &src, &o.w, &err), NF_ERR_INVALID);
    src.type = NF_SRC_I32;
    cr_expect_eq(nf_fp8_row_maxabs_rows(nf_format_by_id(NF_FMT_FP8_E4M3FN_ROW_FP16), &src, &o.w, &err), NF_ERR_INVALID);
    out_free(&o);
}

/* ------------------------------------------------------------------ BF16 pre-rounding, chunks */

TEST_RNG(0x13198A2E03707344ull)

Test(fp8, f32_and_f16_sources_round_to_bf16_first)
{
    /* Random F32 rows give the words of their BF16 roundings; F16 rows likewise. */
    enum { R = 40, K = 300 };
    float *v = malloc(sizeof(float) * R * K), *vb = malloc(sizeof(float) * R * K);
    uint16_t *h = malloc(2 * R * K);
    for (int r = 0; r < R; r++) {
        int e = (int)(rng32() % 40) - 30; /* |x| < 2^15: finite in binary16 too */
        for (int i = 0; i < K; i++) {
            float x = ldexpf((float)((int32_t)rng32()) / 2147483648.0f, e + (int)(rng32() % 6));
            v[r * K + i] = x;
            vb[r * K + i] = bf16_value(bf16_rne(x));
            h[r * K + i] = f16_round((double)x);
        }
    }
    for (int fmt = 0; fmt < 2; fmt++) {
        nf_format_id id = fmt ? NF_FMT_FP8_E4M3FN_ROW_BF16 : NF_FMT_FP8_E4M3FN_ROW_FP16;
        fp8_out a;
        nf_error err = {0};
        nf_status st = fp8(id, NF_SRC_F32, v, R, K, &a, &err);
        cr_assert_eq(st, NF_OK, "%s", err.message);
        uint8_t codes[K];
        for (int r = 0; r < R; r++) {
            uint16_t scale;
            cr_assert(oracle_row(vb + r * K, K, !fmt, codes, &scale));
            cr_assert_eq(a.w.scales[r], scale, "row %d", r);
            cr_assert_arr_eq(a.w.codes8 + r * K, codes, K, "row %d", r);
        }
        out_free(&a);
        /* binary16 source words */
        uint8_t *data = malloc(2 * R * K);
        for (int i = 0; i < R * K; i++) {
            data[2 * i] = (uint8_t)h[i];
            data[2 * i + 1] = (uint8_t)(h[i] >> 8);
        }
        fp8_out b;
        out_alloc(&b, R, K);
        nf_src_rows src = {.type = NF_SRC_F16, .data = data, .rows = R, .cols = K};
        cr_assert_eq(nf_fp8_row_maxabs_rows(nf_format_by_id(id), &src, &b.w, &err), NF_OK, "%s", err.message);
        float row[K];
        for (int r = 0; r < R; r++) {
            uint16_t scale;
            for (int i = 0; i < K; i++) row[i] = bf16_value(bf16_rne((float)f16_value(h[r * K + i])));
            cr_assert(oracle_row(row, K, !fmt, codes, &scale));
            cr_assert_eq(b.w.scales[r], scale, "f16 row %d", r);
            cr_assert_arr_eq(b.w.codes8 + r * K, codes, K, "f16 row %d", r);
        }
        free(data);
        out_free(&b);
    }
    free(v);
    free(vb);
    free(h);
}

Test(fp8, chunk_size_independence)
{
    enum { R = 29, K = 530 }; /* K spans several of the encoder's column blocks */
    float *v = malloc(sizeof(float) * R * K);
    for (int i = 0; i < R * K; i++) v[i] = ldexpf((float)((int32_t)rng32()) / 2147483648.0f, (int)(rng32() % 12) - 6);
    v[3 * K + 511] = 300.0f; /* a row maximum in a late block */
    fp8_out whole;
    nf_error err = {0};
    cr_assert_eq(fp8(NF_FMT_FP8_E4M3FN_ROW_FP16, NF_SRC_F32, v, R, K, &whole, &err), NF_OK, "%s", err.message);
    uint8_t *data = pack_f32(v, R * K);
    static const int chunks[] = {1, 3, 8, 28};
    for (size_t ci = 0; ci < 4; ci++) {
        for (int r0 = 0; r0 < R; r0 += chunks[ci]) {
            int n = R - r0 < chunks[ci] ? R - r0 : chunks[ci];
            fp8_out part;
            out_alloc(&part, (uint64_t)n, K);
            nf_src_rows src = {.type = NF_SRC_F32,
                               .data = data + (size_t)r0 * K * 4,
                               .first_row = (uint64_t)r0,
                               .rows = (uint64_t)n,
                               .cols = K};
            cr_assert_eq(nf_fp8_row_maxabs_rows(nf_format_by_id(NF_FMT_FP8_E4M3FN_ROW_FP16), &src, &part.w, &err),
                         NF_OK, "%s", err.message);
            cr_assert_arr_eq(part.w.codes8, whole.w.codes8 + (size_t)r0 * K, (size_t)n * K);
            cr_assert_arr_eq(part.w.scales, whole.w.scales + r0, 2 * (size_t)n);
            out_free(&part);
        }
    }
    cr_expect_eq(whole.w.codes8[3 * K + 511], 0x7E);
    free(data);
    free(v);
    out_free(&whole);
}
