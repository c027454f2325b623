/* grouped_absmax (docs/formats.md 5.5, docs/methods.md, grouped_absmax): the known answers of docs/vectors.md
 * 6.2, the reciprocal-multiply trap, refusals, and properties on random matrices checked
 * against an oracle written here.
 *
 * The oracle follows the spec's text with different arithmetic from the library's: binary64
 * quotients and products rounded to binary32 by a cast, rint() for the integral rounding, a
 * binary16 rounding done with frexp/ldexp on the exact value, and decoding through ldexp. */
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

/* ------------------------------------------------------------------ helpers */

TEST_RNG(0x243F6A8885A308D3ull)

static uint8_t *pack_u16(const uint16_t *v, size_t n)
{
    uint8_t *b = malloc(2 * n + 1);
    for (size_t i = 0; i < n; i++) {
        b[2 * i] = (uint8_t)v[i];
        b[2 * i + 1] = (uint8_t)(v[i] >> 8);
    }
    return b;
}

typedef struct grouped_out {
    nf_words w;
    uint64_t groups;
} grouped_out;

static void out_alloc(grouped_out *o, const nf_format *f, uint64_t rows, uint64_t cols)
{
    memset(o, 0, sizeof *o);
    o->groups = (cols + f->group_size - 1) / f->group_size;
    o->w.rows = rows;
    o->w.cols = cols;
    o->w.codes = calloc(rows * cols + 1, 1);
    o->w.scales = calloc(rows * o->groups + 1, 2);
}

static void out_free(grouped_out *o)
{
    free(o->w.codes);
    free(o->w.scales);
}

/* Encode a rows x cols F32 matrix with grouped_absmax. */
static nf_status absmax(nf_format_id id, const float *v, uint64_t rows, uint64_t cols, grouped_out *o, nf_error *err)
{
    const nf_format *f = nf_format_by_id(id);
    out_alloc(o, f, rows, cols);
    uint8_t *data = pack_f32(v, rows * cols);
    nf_src_rows src = {.name = "w", .type = NF_SRC_F32, .data = data, .first_row = 0, .rows = rows, .cols = cols};
    nf_status st = nf_grouped_absmax_rows(f, &src, &o->w, err);
    free(data);
    return st;
}

/* The oracle: docs/formats.md 5.5 for one group.  Returns false when the scale overflows. */
static bool oracle_group(const nf_format *f, const float *x, size_t n, uint16_t *scale, int *q)
{
    float amax = 0.0f;
    for (size_t i = 0; i < n; i++)
        if (fabsf(x[i]) > amax) amax = fabsf(x[i]);
    if (amax == 0.0f) {
        *scale = 0;
        for (size_t i = 0; i < n; i++) q[i] = 0;
        return true;
    }
    float raw = (float)((double)amax / (double)f->encoder_qmax);
    uint16_t w = f16_round((double)raw);
    if (w == 0) w = 1;
    if ((w & 0x7C00) == 0x7C00) return false;
    *scale = w;
    float inv = (float)(1.0 / f16_value(w));
    for (size_t i = 0; i < n; i++) {
        double r = rint((double)(float)((double)x[i] * (double)inv));
        if (r < f->code_min) r = f->code_min;
        if (r > f->code_max) r = f->code_max;
        q[i] = (int)r;
    }
    return true;
}

/* ------------------------------------------------------------------ docs/vectors.md, derived vectors */

Test(absmax, q4_k65_row)
{
    /* [0.9, -0.35, 0.1, 0, -0.9, 0.45, 0.15, 0.05, 0 x 56, -0.2] */
    float v[65] = {0.9f, -0.35f, 0.1f, 0.0f, -0.9f, 0.45f, 0.15f, 0.05f};
    v[64] = -0.2f;
    grouped_out o;
    nf_error err = {0};
    cr_assert_eq(absmax(NF_FMT_Q4_G64_FP16, v, 1, 65, &o, &err), NF_OK, "%s", err.message);
    cr_expect_eq(o.groups, 2);
    cr_expect_eq(o.w.scales[0], 0x301D, "group 0 scale 0x%04x", o.w.scales[0]);
    cr_expect_eq(o.w.scales[1], 0x2750, "group 1 scale 0x%04x", o.w.scales[1]);
    static const int8_t want[8] = {7, -3, 1, 0, -7, 4, 1, 0};
    for (int i = 0; i < 8; i++) cr_expect_eq(o.w.codes[i], want[i], "code %d is %d", i, o.w.codes[i]);
    for (int i = 8; i < 64; i++) cr_expect_eq(o.w.codes[i], 0);
    cr_expect_eq(o.w.codes[64], -7);

    /* The same words through the row-split layout give docs/vectors.md's 260-byte payload. */
    const nf_format *f = nf_format_by_id(NF_FMT_Q4_G64_FP16);
    nf_geometry g;
    uint64_t shape[2] = {1, 65};
    cr_assert_eq(nf_geometry_init(&g, nf_layout_default_for(f), f, 2, shape, 1, &err), NF_OK, "%s", err.message);
    cr_assert_eq(g.bytes, 260);
    uint8_t payload[260];
    cr_assert_eq(nf_layout_encode(&g, &o.w, payload, &err), NF_OK, "%s", err.message);
    static const uint8_t head[4] = {0xD7, 0x01, 0x49, 0x01};
    cr_expect_arr_eq(payload, head, 4);
    cr_expect_eq(payload[32], 0x09);
    for (int i = 4; i < 256; i++)
        if (i != 32) cr_expect_eq(payload[i], 0, "byte %d is 0x%02x", i, payload[i]);
    static const uint8_t scales[4] = {0x1D, 0x30, 0x50, 0x27};
    cr_expect_arr_eq(payload + 256, scales, 4);
    out_free(&o);
}

Test(absmax, q4_ties_to_even)
{
    float v[8] = {7, 3.5f, -3.5f, 2.5f, -2.5f, 0.5f, -0.5f, 1.5f};
    grouped_out o;
    nf_error err = {0};
    cr_assert_eq(absmax(NF_FMT_Q4_G64_FP16, v, 1, 8, &o, &err), NF_OK, "%s", err.message);
    cr_expect_eq(o.w.scales[0], 0x3C00);
    static const int8_t want[8] = {7, 4, -4, 2, -2, 0, 0, 2};
    for (int i = 0; i < 8; i++) cr_expect_eq(o.w.codes[i], want[i], "code %d is %d", i, o.w.codes[i]);
    out_free(&o);
}

Test(absmax, underflow_rescue)
{
    float v[64] = {ldexpf(1.0f, -30)};
    grouped_out o;
    nf_error err = {0};
    cr_assert_eq(absmax(NF_FMT_Q4_G64_FP16, v, 1, 64, &o, &err), NF_OK, "%s", err.message);
    cr_expect_eq(o.w.scales[0], 0x0001);
    for (int i = 0; i < 64; i++) cr_expect_eq(o.w.codes[i], 0);
    out_free(&o);
}

Test(absmax, q8_group)
{
    float v[32] = {1, -1, 0.5f, 0.25f, -0.125f};
    grouped_out o;
    nf_error err = {0};
    cr_assert_eq(absmax(NF_FMT_Q8_G32_FP16, v, 1, 32, &o, &err), NF_OK, "%s", err.message);
    cr_expect_eq(o.w.scales[0], 0x2008, "scale 0x%04x", o.w.scales[0]);
    static const int8_t want[6] = {127, -127, 64, 32, -16, 0};
    for (int i = 0; i < 6; i++) cr_expect_eq(o.w.codes[i], want[i], "code %d is %d", i, o.w.codes[i]);
    out_free(&o);
}

Test(absmax, q8_never_minus_128_and_qmax_denominator)
{
    /* The most negative value maps to -127: qmax = 127 is the denominator and the clamp comes
     * after rounding; q4's -8 likewise is never reached from amax / 7. */
    float v[32] = {-1.0f, 1.0f, -0.99f};
    grouped_out o;
    nf_error err = {0};
    cr_assert_eq(absmax(NF_FMT_Q8_G32_FP16, v, 1, 32, &o, &err), NF_OK, "%s", err.message);
    cr_expect_eq(o.w.codes[0], -127);
    cr_expect_eq(o.w.codes[1], 127);
    out_free(&o);
    float w[64] = {-7.0f, 7.0f};
    cr_assert_eq(absmax(NF_FMT_Q4_G64_FP16, w, 1, 64, &o, &err), NF_OK, "%s", err.message);
    cr_expect_eq(o.w.scales[0], 0x3C00);
    cr_expect_eq(o.w.codes[0], -7);
    out_free(&o);
}

Test(absmax, zero_groups_and_partial_group)
{
    /* q5, K = 70: group 0 all zero (with -0), group 1 holds 6 logical values. */
    float v[70] = {0};
    v[3] = -0.0f;
    v[64] = 3.0f;
    v[69] = -1.5f;
    grouped_out o;
    nf_error err = {0};
    cr_assert_eq(absmax(NF_FMT_Q5_G64_FP16, v, 1, 70, &o, &err), NF_OK, "%s", err.message);
    cr_expect_eq(o.w.scales[0], 0x0000);
    for (int i = 0; i < 64; i++) cr_expect_eq(o.w.codes[i], 0);
    /* 3 / 15 = 0.2 -> binary16 0x3266; codes from the 6 logical values only */
    uint16_t ws;
    int q[6];
    cr_assert(oracle_group(nf_format_by_id(NF_FMT_Q5_G64_FP16), v + 64, 6, &ws, q));
    cr_expect_eq(ws, 0x3266);
    cr_expect_eq(o.w.scales[1], ws);
    for (int i = 0; i < 6; i++) cr_expect_eq(o.w.codes[64 + i], q[i]);
    cr_expect_eq(o.w.codes[64], 15);
    out_free(&o);
}

/* ------------------------------------------------------------------ refusals */

Test(absmax, refuses_q2_t2_and_other_categories)
{
    float v[128] = {1};
    grouped_out o;
    nf_error err = {0};
    cr_expect_eq(absmax(NF_FMT_Q2_G64_FP16, v, 1, 64, &o, &err), NF_ERR_INVALID);
    cr_expect(strstr(err.message, "import_encoded") != NULL, "%s", err.message);
    out_free(&o);
    cr_expect_eq(absmax(NF_FMT_T2_G128_FP16, v, 1, 128, &o, &err), NF_ERR_INVALID);
    cr_expect(strstr(err.message, "import_encoded") != NULL, "%s", err.message);
    out_free(&o);
    nf_src_rows src = {.type = NF_SRC_F32, .data = v, .rows = 1, .cols = 4};
    nf_words w = {.rows = 1, .cols = 4};
    cr_expect_eq(nf_grouped_absmax_rows(nf_format_by_id(NF_FMT_BF16), &src, &w, &err), NF_ERR_INVALID);
    cr_expect_eq(nf_grouped_absmax_rows(nf_format_by_id(NF_FMT_FP8_E4M3FN_ROW_FP16), &src, &w, &err), NF_ERR_INVALID);
}

Test(absmax, refuses_non_finite_naming_tensor_row_and_column)
{
    const float bad[3] = {NAN, INFINITY, -INFINITY};
    const char *names[3] = {"NaN", "+inf", "-inf"};
    for (int b = 0; b < 3; b++) {
        float v[3 * 70] = {0};
        v[2 * 70 + 66] = bad[b];
        const nf_format *f = nf_format_by_id(NF_FMT_Q6_G64_FP16);
        grouped_out o;
        out_alloc(&o, f, 3, 70);
        uint8_t *data = pack_f32(v, 3 * 70);
        nf_src_rows src = {.name = "blk.w", .type = NF_SRC_F32, .data = data, .first_row = 40, .rows = 3, .cols = 70};
        nf_error err = {0};
        cr_expect_eq(nf_grouped_absmax_rows(f, &src, &o.w, &err), NF_ERR_INVALID);
        char want[128];
        snprintf(want, sizeof want, "tensor 'blk.w': row 42 col 66: source value %s is not finite", names[b]);
        cr_expect_str_eq(err.message, want);
        free(data);
        out_free(&o);
    }
}

Test(absmax, refuses_overflowing_scale)
{
    /* 65520 * 7 is the first amax whose scale rounds to binary16 infinity; just below is fine. */
    float v[64] = {65519.0f * 7.0f};
    grouped_out o;
    nf_error err = {0};
    cr_expect_eq(absmax(NF_FMT_Q4_G64_FP16, v, 1, 64, &o, &err), NF_OK, "%s", err.message);
    cr_expect_eq(o.w.scales[0], 0x7BFF);
    out_free(&o);
    v[0] = -65520.0f * 7.0f;
    cr_expect_eq(absmax(NF_FMT_Q4_G64_FP16, v, 1, 64, &o, &err), NF_ERR_INVALID);
    cr_expect(strstr(err.message, "row 0 group 0") && strstr(err.message, "overflows binary16"), "%s", err.message);
    out_free(&o);
}

Test(absmax, refuses_bad_arguments)
{
    const nf_format *f = nf_format_by_id(NF_FMT_Q4_G64_FP16);
    float v[64] = {1};
    grouped_out o;
    out_alloc(&o, f, 1, 64);
    nf_error err = {0};
    nf_src_rows src = {.type = NF_SRC_F32, .data = v, .rows = 2, .cols = 64};
    cr_expect_eq(nf_grouped_absmax_rows(f, &src, &o.w, &err), NF_ERR_USAGE); /* rows differ */
    src.rows = 1;
    src.type = NF_SRC_I32;
    cr_expect_eq(nf_grouped_absmax_rows(f, &src, &o.w, &err), NF_ERR_INVALID);
    src.type = NF_SRC_F32;
    int8_t *codes = o.w.codes;
    o.w.codes = NULL;
    cr_expect_eq(nf_grouped_absmax_rows(f, &src, &o.w, &err), NF_ERR_USAGE);
    o.w.codes = codes;
    cr_expect_eq(nf_grouped_absmax_rows(f, NULL, &o.w, &err), NF_ERR_USAGE);
    cr_expect_eq(nf_grouped_absmax_rows(NULL, &src, &o.w, &err), NF_ERR_USAGE);
    src.cols = 0;
    o.w.cols = 0;
    cr_expect_eq(nf_grouped_absmax_rows(f, &src, &o.w, &err), NF_ERR_USAGE);
    /* rows * cols overflowing is refused, not wrapped */
    src.cols = o.w.cols = UINT64_MAX / 2;
    src.rows = o.w.rows = 3;
    cr_expect_eq(nf_grouped_absmax_rows(f, &src, &o.w, &err), NF_ERR_USAGE);
    /* an empty chunk is a no-op */
    src.rows = o.w.rows = 0;
    src.cols = o.w.cols = 64;
    src.data = NULL;
    cr_expect_eq(nf_grouped_absmax_rows(f, &src, &o.w, &err), NF_OK, "%s", err.message);
    out_free(&o);
}

/* ------------------------------------------------------------------ reciprocal-multiply trap */

/* Finds x for which round(f32(x / s)) and round(f32(x * f32(1 / s))) differ, and checks that the
 * encoder follows the reciprocal multiply.  The group is [127 s, x] in q8, so its scale word is
 * exactly s (127 s is exact in binary32 and 127 s / 127 = s). */
Test(absmax, reciprocal_multiply_not_division)
{
    const nf_format *f = nf_format_by_id(NF_FMT_Q8_G32_FP16);
    int found = 0;
    for (uint16_t w = 0x2000; w < 0x5000 && found < 200; w = (uint16_t)(w + 7)) {
        float s = (float)f16_value(w);
        float inv = 1.0f / s;
        for (int j = 0; j < 126 && found < 200; j++) {
            float mid = (float)((j + 0.5) * (double)s);
            for (int d = -3; d <= 3; d++) {
                float x = f32_of_bits(bits_of_f32(mid) + (uint32_t)d);
                float by_div = rintf(x / s);
                float by_mul = rintf(x * inv);
                if (by_div == by_mul) continue;
                float v[2] = {127.0f * s, x};
                grouped_out o;
                nf_error err = {0};
                cr_assert_eq(absmax(NF_FMT_Q8_G32_FP16, v, 1, 2, &o, &err), NF_OK, "%s", err.message);
                cr_assert_eq(o.w.scales[0], w);
                cr_expect_eq(o.w.codes[1], (int)by_mul, "s=0x%04x x=%a: code %d, reciprocal gives %d, division %d", w,
                             (double)x, o.w.codes[1], (int)by_mul, (int)by_div);
                out_free(&o);
                found++;
            }
        }
    }
    (void)f;
    cr_assert(found >= 10, "the search found only %d trap inputs", found);
}

/* ------------------------------------------------------------------ properties */

/* A random value of varied magnitude: mostly gaussian-like rows with outliers, some exact
 * halves of the step (ties) and zeros. */
static float random_value(double scale)
{
    uint32_t k = rng32() % 16;
    if (k == 0) return 0.0f;
    if (k == 1) return -0.0f;
    double v = (uniform() + uniform() + uniform()) * scale;
    if (k == 2) v *= 8.0;
    if (k == 3) v = ldexp(round(uniform() * 16.0) + 0.5, -4) * scale; /* half steps */
    return (float)v;
}

static double random_scale(void)
{
    /* log-uniform over 2^-40 .. 2^12 */
    return ldexp(1.0 + fabs(uniform()), (int)(rng32() % 53) - 40);
}

Test(absmax, random_matrices_match_oracle_and_bounds)
{
    static const nf_format_id ids[4] = {NF_FMT_Q4_G64_FP16, NF_FMT_Q5_G64_FP16, NF_FMT_Q6_G64_FP16, NF_FMT_Q8_G32_FP16};
    uint64_t checked = 0;
    for (int t = 0; t < 400; t++) {
        const nf_format *f = nf_format_by_id(ids[t % 4]);
        uint64_t rows = 1 + rng32() % 5, cols = 1 + rng32() % 300;
        float *v = malloc(sizeof(float) * rows * cols);
        for (uint64_t r = 0; r < rows; r++) {
            double sc = random_scale();
            for (uint64_t c = 0; c < cols; c++) v[r * cols + c] = random_value(sc);
        }
        grouped_out o;
        nf_error err = {0};
        cr_assert_eq(absmax(f->id, v, rows, cols, &o, &err), NF_OK, "%s", err.message);
        for (uint64_t r = 0; r < rows; r++) {
            for (uint64_t gi = 0; gi < o.groups; gi++) {
                uint64_t c0 = gi * f->group_size;
                size_t n = (size_t)(cols - c0 < f->group_size ? cols - c0 : f->group_size);
                uint16_t s = o.w.scales[r * o.groups + gi];
                uint16_t ws;
                int q[128];
                cr_assert(oracle_group(f, v + r * cols + c0, n, &ws, q));
                cr_assert_eq(s, ws, "%s row %lu group %lu: scale 0x%04x, oracle 0x%04x", f->name, (unsigned long)r,
                             (unsigned long)gi, s, ws);
                cr_assert(nf_grouped_scale_valid(f, s));
                double sv = f16_value(s);
                for (size_t i = 0; i < n; i++) {
                    int code = o.w.codes[r * cols + c0 + i];
                    cr_assert_eq(code, q[i], "%s row %lu col %lu: code %d, oracle %d", f->name, (unsigned long)r,
                                 (unsigned long)(c0 + i), code, q[i]);
                    cr_assert(nf_grouped_code_valid(f, code));
                    if (s == 0) cr_assert_eq(code, 0);
                    /* |x - w_hat| <= s/2, up to the binary32 roundings of 1/s and x * inv (a value
                     * within a few ulps of a half step can land on either side) */
                    double x = v[r * cols + c0 + i];
                    double what = (double)nf_grouped_value(s, code);
                    bool clamped = code == f->code_min || code == f->code_max;
                    if (!clamped || fabs(x) <= (fabs((double)code) + 0.5) * sv)
                        cr_assert(fabs(x - what) <= sv * 0.5 * (1.0 + ldexp(1.0, -20)), "%s: x=%a s=%a q=%d error %a",
                                  f->name, x, sv, code, fabs(x - what));
                    checked++;
                }
            }
        }
        free(v);
        out_free(&o);
    }
    cr_assert(checked > 10000);
}

Test(absmax, chunk_size_independence)
{
    const nf_format *f = nf_format_by_id(NF_FMT_Q6_G64_FP16);
    const uint64_t rows = 37, cols = 200;
    float *v = malloc(sizeof(float) * rows * cols);
    for (uint64_t r = 0; r < rows; r++) {
        double sc = random_scale();
        for (uint64_t c = 0; c < cols; c++) v[r * cols + c] = random_value(sc);
    }
    uint8_t *data = pack_f32(v, rows * cols);
    grouped_out whole;
    out_alloc(&whole, f, rows, cols);
    nf_error err = {0};
    nf_src_rows src = {.name = "w", .type = NF_SRC_F32, .data = data, .rows = rows, .cols = cols};
    cr_assert_eq(nf_grouped_absmax_rows(f, &src, &whole.w, &err), NF_OK, "%s", err.message);
    static const uint64_t chunks[] = {1, 2, 5, 16, 36};
    for (size_t ci = 0; ci < sizeof chunks / sizeof chunks[0]; ci++) {
        for (uint64_t r0 = 0; r0 < rows; r0 += chunks[ci]) {
            uint64_t n = rows - r0 < chunks[ci] ? rows - r0 : chunks[ci];
            grouped_out part;
            out_alloc(&part, f, n, cols);
            nf_src_rows s = {.name = "w",
                             .type = NF_SRC_F32,
                             .data = data + r0 * cols * 4,
                             .first_row = r0,
                             .rows = n,
                             .cols = cols};
            cr_assert_eq(nf_grouped_absmax_rows(f, &s, &part.w, &err), NF_OK, "%s", err.message);
            cr_assert_arr_eq(part.w.codes, whole.w.codes + r0 * cols, n * cols);
            cr_assert_arr_eq(part.w.scales, whole.w.scales + r0 * whole.groups, n * whole.groups * 2);
            out_free(&part);
        }
    }
    free(data);
    free(v);
    out_free(&whole);
}

Test(absmax, half_and_bfloat_sources_widen_exactly)
{
    /* F16 and BF16 sources give the words of their exact binary32 values. */
    const nf_format *f = nf_format_by_id(NF_FMT_Q4_G64_FP16);
    enum { K = 150 };
    uint16_t h[K], b[K];
    float vh[K], vb[K];
    for (int i = 0; i < K; i++) {
        do h[i] = (uint16_t)rng32();
        while ((h[i] & 0x7C00) == 0x7C00);
        do b[i] = (uint16_t)(rng32() & 0xBFFF); /* keep magnitudes away from overflowing scales */
        while ((b[i] & 0x7F80) == 0x7F80);
        vh[i] = (float)f16_value(h[i]);
        vb[i] = f32_of_bits((uint32_t)b[i] << 16);
    }
    struct {
        nf_src_type type;
        uint16_t *words;
        float *values;
    } cases[2] = {{NF_SRC_F16, h, vh}, {NF_SRC_BF16, b, vb}};
    for (int c = 0; c < 2; c++) {
        uint8_t *data = pack_u16(cases[c].words, K);
        grouped_out a, ref;
        out_alloc(&a, f, 1, K);
        nf_error err = {0};
        nf_src_rows src = {.type = cases[c].type, .data = data, .rows = 1, .cols = K};
        cr_assert_eq(nf_grouped_absmax_rows(f, &src, &a.w, &err), NF_OK, "%s", err.message);
        cr_assert_eq(absmax(f->id, cases[c].values, 1, K, &ref, &err), NF_OK, "%s", err.message);
        cr_expect_arr_eq(a.w.codes, ref.w.codes, K);
        cr_expect_arr_eq(a.w.scales, ref.w.scales, 2 * a.groups);
        free(data);
        out_free(&a);
        out_free(&ref);
    }
}

/* The equivalences the encoder's arithmetic rests on, checked exhaustively over every finite
 * nonzero binary16 scale: f32(1 / s) from a binary32 division equals float32(1 / float64(s)). */
Test(absmax, reciprocal_of_every_binary16_scale)
{
    for (uint32_t w = 1; w < 0x10000; w++) {
        if ((w & 0x7FFF) == 0 || (w & 0x7C00) == 0x7C00) continue;
        double s = f16_value((uint16_t)w);
        float a = 1.0f / (float)s;
        float b = (float)(1.0 / s);
        cr_assert_eq(bits_of_f32(a), bits_of_f32(b), "word 0x%04x", w);
    }
}
