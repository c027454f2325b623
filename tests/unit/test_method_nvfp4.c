/* nvfp4_quantize (docs/methods.md, nvfp4_quantize): known answers worked out by hand from the
 * documented arithmetic (exact E2M1 ties, zero groups, scales that underflow to E4M3FN's
 * subnormals or round to its largest value, the global scale and divisor), the refusals with
 * their messages, an exhaustive sweep of every E2M1 rounding boundary against an oracle written
 * here (rint on each binade's grid), and random matrices: the reference against an independent
 * oracle of this file, and every SIMD level's kernels (lib/src/method/simd/nvfp4_*.c:
 * nvfp4_quantize's and nvfp4_search's) against the references bit for bit.  nvfp4_search: a
 * hand-worked group, never worse than nvfp4_quantize.  A level the CPU lacks is skipped with a
 * message naming it. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "support/test_float.h"
#include "support/test_rng.h"

#include "common/cpu.h"
#include "method/simd/nvfp4_simd.h"

TEST_RNG(0x9E3779B97F4A7C15ull)

#define UNIT_MAX 0x45280000u /* 2688.0f: gs = 1, six_gs = 6, divisor 1 */

typedef struct enc {
    uint8_t *codes, *scales;
    uint32_t divisor;
    nf_status st;
    nf_error err;
} enc;

static const nf_format *nvfp4(void) { return nf_format_by_id(NF_FMT_NVFP4); }

/* Encodes rows x cols binary32 values (F32 source) through fn; max_word < 0: the chunk's own. */
static enc encode_with(nf_status (*fn)(const nf_format *, const nf_method_params *, const nf_src_rows *, nf_words *,
                                       nf_error *),
                       const float *x, uint64_t rows, uint64_t cols, int64_t max_word)
{
    enc e = {malloc(rows * cols + 1), malloc(rows * cols / 16 + 1), 0xDEADBEEFu, NF_OK, {0}};
    uint8_t *data = pack_f32(x, (size_t)(rows * cols));
    nf_src_rows src = {.name = "w", .type = NF_SRC_F32, .data = data, .first_row = 3, .rows = rows, .cols = cols};
    if (max_word >= 0) {
        src.matrix_max = (uint32_t)max_word;
        src.has_matrix_max = true;
    }
    nf_words w = {.rows = rows, .cols = cols, .codes8 = e.codes, .scales8 = e.scales, .divisors = &e.divisor};
    e.st = fn(nvfp4(), NULL, &src, &w, &e.err);
    free(data);
    return e;
}

static enc encode(const float *x, uint64_t rows, uint64_t cols, int64_t max_word)
{
    return encode_with(nf_nvfp4_quantize_rows, x, rows, cols, max_word);
}

static void enc_free(enc *e)
{
    free(e->codes);
    free(e->scales);
}

/* ---------------------------------------------------------------- known answers */

Test(nvfp4_kat, e2m1_ties_under_unit_scale)
{
    /* matrix maximum 2688: gs = 2688 / 2688 = 1, so a group whose largest magnitude is 6 has
     * s = 6 / 6 = 1 (E4M3FN 0x38) and every code is the E2M1 rounding of x itself */
    const float x[16] = {6.0f,
                         3.0f,
                         -1.5f,
                         0.25f,
                         0.75f,
                         1.25f,
                         1.75f,
                         2.5f,
                         3.5f,
                         5.0f,
                         nextafterf(5.0f, 6.0f),
                         -0.0f,
                         -0.1f,
                         nextafterf(0.25f, 1.0f),
                         nextafterf(0.75f, 0.0f),
                         0.0f};
    const uint8_t want[16] = {7, 5, 0xB, 0, 2, 2, 4, 4, 6, 6, 7, 0, 8, 1, 1, 0};
    enc e = encode(x, 1, 16, UNIT_MAX);
    cr_assert_eq(e.st, NF_OK, "%s", e.err.message);
    cr_assert_eq(e.scales[0], 0x38);
    cr_assert_eq(e.divisor, 0x3F800000u);
    for (int i = 0; i < 16; i++)
        cr_assert_eq(e.codes[i], want[i], "value %d (%.9g): code %u, want %u", i, (double)x[i], e.codes[i], want[i]);
    enc_free(&e);
}

Test(nvfp4_kat, global_scale_and_divisor)
{
    /* m = 1: gs = f32(1 / 2688) = 0x39C30C31, d = f32(1 / gs) = 2688 exactly (0x45280000);
     * s = f32(1 / f32(6 * gs)) = 447.99997 -> E4M3FN 448 (0x7E); sv = f32(448 * gs) and
     * 1 / sv = 5.9999998 > 5 -> code 7: the value (6 * 448) / 2688 = 1 comes back exactly */
    float x[16] = {1.0f, -0.5f, 0.25f, 0.0f};
    enc e = encode(x, 1, 16, -1);
    cr_assert_eq(e.st, NF_OK, "%s", e.err.message);
    cr_assert_eq(e.divisor, 0x45280000u);
    cr_assert_eq(e.scales[0], 0x7E);
    cr_assert_eq(e.codes[0], 7);
    cr_assert_eq(bits_of_f32(nf_nvfp4_value(e.codes[0], e.scales[0], e.divisor)), bits_of_f32(1.0f));
    /* -0.5 / sv = -2.99999... -> 3 (code 5) negative; 0.25 / sv = 1.4999999 -> 1.5 (code 3) */
    cr_assert_eq(e.codes[1], 0xD);
    cr_assert_eq(e.codes[2], 3);
    enc_free(&e);
    /* the same words when the maximum comes from a first pass over the matrix */
    uint8_t *data = pack_f32(x, 16);
    nf_src_rows src = {.name = "w", .type = NF_SRC_F32, .data = data, .rows = 1, .cols = 16};
    uint32_t mw = 0, d = 0;
    cr_assert_eq(nf_nvfp4_quantize_max(&src, &mw, NULL), NF_OK);
    cr_assert_eq(mw, 0x3F800000u);
    cr_assert_eq(nf_nvfp4_quantize_divisor(&src, mw, &d, NULL), NF_OK);
    cr_assert_eq(d, 0x45280000u);
    /* m = 0.1: gs = 0x381C09C1, whose reciprocal rounds to 0x46D1FFFF (26879.998) */
    cr_assert_eq(nf_nvfp4_quantize_divisor(&src, bits_of_f32(0.1f), &d, NULL), NF_OK);
    cr_assert_eq(d, 0x46D1FFFFu);
    free(data);
}

Test(nvfp4_kat, scale_above_448_rounds_to_448)
{
    /* m = 0x3FACA054 (1.3486428): f32(m / f32(6 * f32(m / 2688))) = 448.00003, above E4M3FN's
     * largest value; it rounds to 448 (0x7E), as PyTorch's cast does below 464 */
    float x[16] = {f32_of_bits(0x3FACA054u), 1.0f};
    enc e = encode(x, 1, 16, -1);
    cr_assert_eq(e.st, NF_OK, "%s", e.err.message);
    cr_assert_eq(e.scales[0], 0x7E);
    cr_assert_eq(e.codes[0], 7);
    enc_free(&e);
    /* values beyond the maximum a chunk is given (an inconsistent caller): the scale clamps to
     * 448 and the codes saturate at 6 */
    float y[16] = {6000.0f, -3000.0f};
    e = encode(y, 1, 16, UNIT_MAX);
    cr_assert_eq(e.st, NF_OK, "%s", e.err.message);
    cr_assert_eq(e.scales[0], 0x7E);
    cr_assert_eq(e.codes[0], 7);
    cr_assert_eq(e.codes[1], 0xF);
    enc_free(&e);
}

Test(nvfp4_kat, zero_groups_and_zero_matrix)
{
    float x[32] = {0};
    x[3] = -0.0f;
    x[16] = 12.0f; /* second group: s = 12 / 6 = 2 (0x40), sv = 2 */
    x[17] = -3.0f; /* -1.5: code 0xB */
    enc e = encode(x, 1, 32, UNIT_MAX);
    cr_assert_eq(e.st, NF_OK, "%s", e.err.message);
    cr_assert_eq(e.scales[0], 0x38, "a zero group's scale is 1 (ModelOpt), got 0x%02x", e.scales[0]);
    for (int i = 0; i < 16; i++) cr_assert_eq(e.codes[i], 0, "zero group code %d (-0 gives +0's word)", i);
    cr_assert_eq(e.scales[1], 0x40);
    cr_assert_eq(e.codes[16], 7);
    cr_assert_eq(e.codes[17], 0xB);
    enc_free(&e);
    /* an all-zero matrix: divisor 1, every scale 0x38, every code 0 */
    float z[64] = {0};
    z[5] = -0.0f;
    e = encode(z, 1, 64, -1);
    cr_assert_eq(e.st, NF_OK, "%s", e.err.message);
    cr_assert_eq(e.divisor, 0x3F800000u);
    for (int g = 0; g < 4; g++) cr_assert_eq(e.scales[g], 0x38);
    for (int i = 0; i < 64; i++) cr_assert_eq(e.codes[i], 0);
    enc_free(&e);
}

Test(nvfp4_kat, subnormal_scales)
{
    float x[64] = {0};
    /* group 0: bmax 2^-20, s = 2^-20 / 6 < 2^-9 -> clamped to 2^-9 (0x01), sv = 2^-9: the
     * quotients 2^-11 round to zero, the negative one to -0 (0x8) */
    x[0] = 0x1p-20f;
    x[1] = -0x1p-20f;
    /* group 1: bmax 6 * 3 * 2^-9, s = 3 * 2^-9 exactly: subnormal 0x03, the maximum codes 6 */
    x[16] = 6.0f * 3.0f * 0x1p-9f;
    x[17] = 3.0f * 0x1p-9f; /* y = 1: code 2 */
    /* group 2: s = 2.5 * 2^-9, halfway between the subnormals 2 and 3: even, 0x02; sv = 2^-8
     * and the maximum's y = 7.5 saturates */
    x[32] = 6.0f * 2.5f * 0x1p-9f;
    /* group 3: s = 0.4 * 2^-9 would round to E4M3FN zero; the clamp keeps 0x01 */
    x[48] = 6.0f * 0.4f * 0x1p-9f;
    enc e = encode(x, 1, 64, UNIT_MAX);
    cr_assert_eq(e.st, NF_OK, "%s", e.err.message);
    cr_assert_eq(e.scales[0], 0x01);
    cr_assert_eq(e.codes[0], 0);
    cr_assert_eq(e.codes[1], 8);
    cr_assert_eq(e.scales[1], 0x03);
    cr_assert_eq(e.codes[16], 7);
    cr_assert_eq(e.codes[17], 2);
    cr_assert_eq(e.scales[2], 0x02);
    cr_assert_eq(e.codes[32], 7);
    cr_assert_eq(e.scales[3], 0x01);
    /* 0.4 * 6 = 2.4 -> 2 (code 4) */
    cr_assert_eq(e.codes[48], 4);
    enc_free(&e);
}

/* ---------------------------------------------------------------- refusals */

Test(nvfp4_refuse, tiny_matrix_maximum)
{
    float x[16] = {1e-37f};
    enc e = encode(x, 1, 16, -1);
    cr_assert_eq(e.st, NF_ERR_INVALID);
    cr_assert(strstr(e.err.message, "tensor 'w': largest magnitude 9.99999991e-38 is too small for nvfp4") != NULL,
              "%s", e.err.message);
    enc_free(&e);
    /* 1e-35: gs = 3.7e-39 (subnormal), 1 / gs finite: accepted, and the maximum comes back
     * within the subnormal global scale's precision */
    x[0] = 1e-35f;
    e = encode(x, 1, 16, -1);
    cr_assert_eq(e.st, NF_OK, "%s", e.err.message);
    float v = nf_nvfp4_value(e.codes[0], e.scales[0], e.divisor);
    cr_assert(fabs((double)v - 1e-35) < 1e-35 * 1e-3, "%.9g", (double)v);
    enc_free(&e);
}

Test(nvfp4_refuse, non_finite_values_named)
{
    float x[64] = {1.0f};
    x[32 + 17] = NAN; /* row 1 col 17, chunk starting at row 3 */
    enc e = encode(x, 2, 32, -1);
    cr_assert_eq(e.st, NF_ERR_INVALID);
    cr_assert_str_eq(e.err.message, "tensor 'w': row 4 col 17: source value NaN is not finite");
    enc_free(&e);
    x[32 + 17] = 0.0f;
    x[2] = -INFINITY;
    e = encode(x, 2, 32, UNIT_MAX); /* given the maximum: the encoding pass refuses it */
    cr_assert_eq(e.st, NF_ERR_INVALID);
    cr_assert_str_eq(e.err.message, "tensor 'w': row 3 col 2: source value -inf is not finite");
    enc_free(&e);
}

Test(nvfp4_refuse, shapes_params_types_formats)
{
    float x[24] = {1.0f};
    enc e = encode(x, 1, 24, -1);
    cr_assert_eq(e.st, NF_ERR_INVALID);
    cr_assert_str_eq(e.err.message, "tensor 'w': a row of 24 values is not a multiple of nvfp4's group of 16");
    enc_free(&e);
    uint8_t codes[16], scales[1];
    int32_t ints[16] = {0};
    nf_src_rows src = {.name = "w", .type = NF_SRC_I32, .data = ints, .rows = 1, .cols = 16};
    nf_words w = {.rows = 1, .cols = 16, .codes8 = codes, .scales8 = scales};
    nf_error err;
    cr_assert_eq(nf_nvfp4_quantize_rows(nvfp4(), NULL, &src, &w, &err), NF_ERR_INVALID);
    cr_assert_str_eq(err.message, "tensor 'w': nvfp4_quantize needs a floating-point source, not I32");
    src.type = NF_SRC_F32;
    float imp[16] = {1};
    nf_method_params p = {.importance = imp, .importance_len = 16};
    cr_assert_eq(nf_nvfp4_quantize_rows(nvfp4(), &p, &src, &w, &err), NF_ERR_INVALID);
    cr_assert_str_eq(err.message, "tensor 'w': nvfp4_quantize takes no parameters");
    cr_assert_eq(nf_nvfp4_quantize_rows(nf_format_by_id(NF_FMT_Q8_G32_FP16), NULL, &src, &w, &err), NF_ERR_INVALID);
    cr_assert_str_eq(err.message, "nvfp4_quantize cannot target q8_g32_fp16: it targets nvfp4");
    nf_method_id id;
    cr_assert_eq(nf_method_find("nvfp4_quantize", &id, NULL), NF_OK);
    cr_assert_eq(id, NF_METHOD_NVFP4_QUANTIZE);
    cr_assert_eq(nf_method_check_target(id, nvfp4(), NULL), NF_OK);
    cr_assert_eq(nf_method_check_params(id, &p, 16, &err), NF_ERR_INVALID);
}

/* ---------------------------------------------------------------- E2M1 rounding, exhaustively */

/* The E2M1 word of y by the spec's rule, written independently of the library: in [0, 2) the
 * E2M1 values are the multiples of 0.5, in [2, 4) the integers, in [4, 6] the even integers;
 * rint (ties to even, the default rounding mode) on that grid; beyond 6, 6. */
static uint8_t oracle_e2m1(float y)
{
    double a = fabs((double)y), v;
    if (a < 2.0) v = rint(a * 2.0) / 2.0;
    else if (a < 4.0) v = rint(a);
    else if (a <= 6.0) v = 2.0 * rint(a / 2.0);
    else v = 6.0;
    static const double mag[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
    uint8_t c = 0;
    while (mag[c] != v) c++;
    return (uint8_t)(c | (y < 0.0f ? 8 : 0));
}

/* The values of the sweep: every BF16 magnitude up to 6 and 2^14 binary32 neighbours on each
 * side of every E2M1 boundary, both signs; each group of 16 starts with 6, which pins the
 * group's scale to 1 under the unit global scale, so the codes are E2M1(x). */
static float *sweep_values(size_t *count)
{
    static const float bounds[] = {0.0f, 0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f};
    size_t cap = 2 * (0x40C1 + 9 * (2 * 16384 + 1)), n = 0;
    float *v = malloc(cap * sizeof *v);
    for (uint32_t b = 0; b <= 0x40C0u; b++) v[n++] = f32_of_bits(b << 16);
    for (size_t i = 0; i < sizeof bounds / sizeof bounds[0]; i++) {
        uint32_t c = bits_of_f32(bounds[i]);
        for (int64_t d = -16384; d <= 16384; d++) {
            int64_t w = (int64_t)c + d;
            if (w < 0) continue;
            float f = f32_of_bits((uint32_t)w);
            if (f <= 6.0f) v[n++] = f;
        }
    }
    for (size_t i = 0, m = n; i < m; i++) v[n++] = -v[i];
    *count = n;
    return v;
}

/* Runs the sweep through fn; every code must be the oracle's. */
static void sweep(nf_status (*fn)(const nf_format *, const nf_method_params *, const nf_src_rows *, nf_words *,
                                  nf_error *),
                  const char *what)
{
    size_t n;
    float *v = sweep_values(&n);
    size_t groups = (n + 14) / 15, cols = 16 * 64, rows = (groups + 63) / 64;
    float *x = calloc(rows * cols, sizeof *x);
    for (size_t g = 0, i = 0; g < rows * 64; g++) {
        x[16 * g] = 6.0f;
        for (size_t j = 1; j < 16 && i < n; j++) x[16 * g + j] = v[i++];
    }
    enc e = encode_with(fn, x, rows, cols, UNIT_MAX);
    cr_assert_eq(e.st, NF_OK, "%s: %s", what, e.err.message);
    for (size_t i = 0; i < rows * cols; i++) {
        if (i % 16 == 0)
            cr_assert_eq(e.scales[i / 16], 0x38, "%s: group %zu scale 0x%02x", what, i / 16, e.scales[i / 16]);
        uint8_t want = oracle_e2m1(x[i]);
        if (e.codes[i] != want)
            cr_assert_fail("%s: E2M1 of %.9g (0x%08x): code %u, want %u", what, (double)x[i], bits_of_f32(x[i]),
                           e.codes[i], want);
    }
    enc_free(&e);
    free(x);
    free(v);
}

Test(nvfp4_e2m1, every_boundary_reference) { sweep(nf_nvfp4_quantize_rows_reference, "reference"); }

static bool force(nf_simd_level level)
{
    if (!nf_simd_supported(level)) return false;
    return nf_simd_force(level) == level;
}

Test(nvfp4_e2m1, every_boundary_every_level)
{
    nf_simd_level before = nf_simd_active();
    for (int lv = 0; lv < NF_SIMD_LEVEL_COUNT; lv++) {
        if (!force((nf_simd_level)lv)) continue;
        sweep(nf_nvfp4_quantize_rows, nf_simd_level_name((nf_simd_level)lv));
    }
    nf_simd_force(before);
}

/* ---------------------------------------------------------------- random matrices */

/* E4M3FN by the spec: the nearest of the 127 non-negative finite words, ties to the even word,
 * beyond 448 the largest (the values here are positive). */
static uint8_t oracle_e4m3(float s)
{
    uint8_t best = 0;
    for (uint8_t w = 1; w <= 0x7E; w++) {
        double d = fabs((double)s - (double)nf_e4m3fn_to_f32(w)), db = fabs((double)s - (double)nf_e4m3fn_to_f32(best));
        if (d < db || (d == db && w % 2 == 0)) best = w;
    }
    return best;
}

/* The documented steps (docs/methods.md, nvfp4_quantize), in the test's own words. */
static void oracle(const float *x, size_t rows, size_t cols, uint8_t *codes, uint8_t *scales, uint32_t *divisor)
{
    float m = 0.0f;
    for (size_t i = 0; i < rows * cols; i++) m = fmaxf(m, fabsf(x[i]));
    float gs = m == 0.0f ? 1.0f : (float)((double)m / 2688.0);
    *divisor = bits_of_f32(m == 0.0f ? 1.0f : (float)(1.0 / (double)gs));
    float six = (float)(6.0 * (double)gs);
    for (size_t g = 0; g < rows * cols / 16; g++) {
        float bmax = 0.0f;
        for (int i = 0; i < 16; i++) bmax = fmaxf(bmax, fabsf(x[16 * g + i]));
        float s = (float)((double)bmax / (double)six);
        if (s == 0.0f) s = 1.0f;
        s = fmaxf(s, 0x1p-9f);
        scales[g] = oracle_e4m3(s);
        float sv = (float)((double)nf_e4m3fn_to_f32(scales[g]) * (double)gs);
        for (int i = 0; i < 16; i++) codes[16 * g + i] = oracle_e2m1((float)((double)x[16 * g + i] / (double)sv));
    }
}

static float random_value(double scale)
{
    uint32_t k = rng32() % 16;
    if (k == 0) return 0.0f;
    if (k == 1) return -0.0f;
    double v = (uniform() + uniform()) * scale;
    if (k == 2) v *= 64.0;
    if (k == 3) v = ldexp(round(uniform() * 24.0) + 0.5, -2) * scale; /* near E2M1 ties */
    if (k == 4) v *= 1e-6;
    return (float)v;
}

/* A random rows x cols matrix (some groups zero, some tiny, scale of 10^-30..10^30). */
static float *random_matrix(size_t rows, size_t cols)
{
    float *x = malloc(rows * cols * sizeof *x);
    double scale = pow(10.0, (double)(rng32() % 61) - 30.0);
    for (size_t g = 0; g < rows * cols / 16; g++) {
        uint32_t kind = rng32() % 8;
        for (int i = 0; i < 16; i++) x[16 * g + i] = kind == 0 ? 0.0f : random_value(kind == 1 ? scale * 1e-5 : scale);
    }
    x[rng32() % (rows * cols)] = (float)scale; /* a maximum the divisor can hold */
    return x;
}

Test(nvfp4_random, reference_matches_oracle)
{
    for (int t = 0; t < 60; t++) {
        size_t rows = 1 + rng32() % 5, cols = 16 * (1 + rng32() % 20);
        float *x = random_matrix(rows, cols);
        uint8_t *codes = malloc(rows * cols), *scales = malloc(rows * cols / 16);
        uint32_t d;
        oracle(x, rows, cols, codes, scales, &d);
        enc e = encode_with(nf_nvfp4_quantize_rows_reference, x, rows, cols, -1);
        cr_assert_eq(e.st, NF_OK, "%s", e.err.message);
        cr_assert_eq(e.divisor, d, "trial %d: divisor 0x%08x, oracle 0x%08x", t, e.divisor, d);
        for (size_t g = 0; g < rows * cols / 16; g++)
            cr_assert_eq(e.scales[g], scales[g], "trial %d group %zu: scale 0x%02x, oracle 0x%02x", t, g, e.scales[g],
                         scales[g]);
        for (size_t i = 0; i < rows * cols; i++)
            cr_assert_eq(e.codes[i], codes[i], "trial %d value %zu (%.9g): code %u, oracle %u", t, i, (double)x[i],
                         e.codes[i], codes[i]);
        enc_free(&e);
        free(codes);
        free(scales);
        free(x);
    }
}

/* Every level's words (through the public call, for F32, F16 and BF16 sources) against the
 * reference's; also cut into row chunks and column spans given the matrix maximum. */
static void levels_match(nf_simd_level level)
{
    cr_assert_eq(nf_simd_force(level), level);
    for (int t = 0; t < 40; t++) {
        size_t rows = 1 + rng32() % 6, cols = 16 * (1 + rng32() % 40);
        float *x = random_matrix(rows, cols);
        nf_src_type type = (nf_src_type[]){NF_SRC_F32, NF_SRC_F16, NF_SRC_BF16}[t % 3];
        size_t es = type == NF_SRC_F32 ? 4 : 2, n = rows * cols;
        uint8_t *data = malloc(n * es);
        for (size_t i = 0; i < n; i++) {
            float v = x[i];
            if (type == NF_SRC_F16 && !isfinite(nf_f16_to_f32(nf_f32_to_f16(v)))) v = 0.0f;
            uint32_t w = type == NF_SRC_F32   ? bits_of_f32(v)
                         : type == NF_SRC_F16 ? nf_f32_to_f16(v)
                                              : nf_f32_to_bf16(v);
            for (size_t j = 0; j < es; j++) data[es * i + j] = (uint8_t)(w >> (8 * j));
        }
        nf_src_rows src = {.name = "w", .type = type, .data = data, .rows = rows, .cols = cols};
        uint8_t *c_ref = malloc(n), *s_ref = malloc(n / 16), *c_var = malloc(n + 1), *s_var = malloc(n / 16 + 1);
        uint32_t d_ref = 0, d_var = 0;
        nf_words wr = {.rows = rows, .cols = cols, .codes8 = c_ref, .scales8 = s_ref, .divisors = &d_ref};
        nf_words wv = {.rows = rows, .cols = cols, .codes8 = c_var, .scales8 = s_var, .divisors = &d_var};
        memset(c_var, 0x5A, n + 1);
        memset(s_var, 0x5A, n / 16 + 1);
        nf_error er = {0}, ev = {0};
        nf_status sr = nf_nvfp4_quantize_rows_reference(nvfp4(), NULL, &src, &wr, &er);
        nf_status sv = nf_nvfp4_quantize_rows(nvfp4(), NULL, &src, &wv, &ev);
        cr_assert_eq(sr, NF_OK, "%s", er.message);
        cr_assert_eq(sv, NF_OK, "%s", ev.message);
        cr_assert_eq(c_var[n], 0x5A, "wrote past the codes");
        cr_assert_eq(s_var[n / 16], 0x5A, "wrote past the scales");
        cr_assert_eq(d_var, d_ref);
        cr_assert_eq(memcmp(s_var, s_ref, n / 16), 0, "%s trial %d: scales differ", nf_simd_level_name(level), t);
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(c_var[i], c_ref[i], "%s trial %d type %d: code %zu 0x%x vs 0x%x", nf_simd_level_name(level), t,
                         (int)type, i, c_var[i], c_ref[i]);
        /* row by row, and span by span (16-column pieces of each row), given the maximum */
        uint32_t mw;
        cr_assert_eq(nf_nvfp4_quantize_max(&src, &mw, NULL), NF_OK);
        for (size_t r = 0; r < rows; r++) {
            for (size_t c0 = 0; c0 < cols; c0 += 16 * (1 + r)) {
                size_t w = cols - c0 < 16 * (1 + r) ? cols - c0 : 16 * (1 + r);
                uint8_t *buf = malloc(w * es);
                memcpy(buf, data + (r * cols + c0) * es, w * es);
                nf_src_rows sp = {.name = "w",
                                  .type = type,
                                  .data = buf,
                                  .first_row = r,
                                  .rows = 1,
                                  .cols = w,
                                  .first_col = c0,
                                  .row_cols = cols,
                                  .matrix_max = mw,
                                  .has_matrix_max = true};
                uint8_t cc[16 * 6], ss[6];
                uint32_t dd = 0;
                nf_words ws = {.rows = 1, .cols = w, .codes8 = cc, .scales8 = ss, .divisors = &dd};
                cr_assert_eq(nf_method_encode_rows(NF_METHOD_NVFP4_QUANTIZE, nvfp4(), NULL, &sp, &ws, NULL), NF_OK);
                cr_assert_eq(dd, d_ref);
                cr_assert_eq(memcmp(cc, c_ref + r * cols + c0, w), 0, "span codes differ");
                cr_assert_eq(memcmp(ss, s_ref + (r * cols + c0) / 16, w / 16), 0, "span scales differ");
                free(buf);
            }
        }
        /* a non-finite element under a given maximum: the kernel declines its row, and the
         * status and message are the reference's */
        {
            size_t at = rng32() % n;
            uint8_t *bad = malloc(n * es);
            memcpy(bad, data, n * es);
            uint32_t inf = type == NF_SRC_F32 ? 0x7F800000u : type == NF_SRC_F16 ? 0xFC00u : 0x7FC1u;
            for (size_t j = 0; j < es; j++) bad[es * at + j] = (uint8_t)(inf >> (8 * j));
            nf_src_rows bs = src;
            bs.data = bad;
            bs.matrix_max = mw;
            bs.has_matrix_max = true;
            nf_error e1 = {0}, e2 = {0};
            cr_assert_eq(nf_nvfp4_quantize_rows_reference(nvfp4(), NULL, &bs, &wr, &e1), NF_ERR_INVALID);
            cr_assert_eq(nf_nvfp4_quantize_rows(nvfp4(), NULL, &bs, &wv, &e2), NF_ERR_INVALID);
            cr_assert_str_eq(e2.message, e1.message);
            cr_assert(strstr(e1.message, "is not finite") != NULL, "%s", e1.message);
            free(bad);
        }
        /* nvfp4_search, with importance on odd trials (some of it zero): the level's kernel
         * against the reference search */
        {
            float *imp = NULL;
            if (t % 2) {
                imp = malloc(cols * sizeof *imp);
                for (size_t c = 0; c < cols; c++) imp[c] = c % 40 < 8 ? 0.0f : (float)(uniform() + 1.5);
            }
            nf_method_params p = {.importance = imp, .importance_len = imp ? cols : 0};
            nf_error e1 = {0}, e2 = {0};
            memset(c_var, 0x5A, n + 1);
            cr_assert_eq(nf_nvfp4_search_rows_reference(nvfp4(), &p, &src, &wr, &e1), NF_OK, "%s", e1.message);
            cr_assert_eq(nf_nvfp4_search_rows(nvfp4(), &p, &src, &wv, &e2), NF_OK, "%s", e2.message);
            cr_assert_eq(c_var[n], 0x5A, "search wrote past the codes");
            cr_assert_eq(d_var, d_ref);
            for (size_t g = 0; g < n / 16; g++)
                cr_assert_eq(s_var[g], s_ref[g], "%s trial %d: search scale %zu 0x%02x vs 0x%02x",
                             nf_simd_level_name(level), t, g, s_var[g], s_ref[g]);
            cr_assert_eq(memcmp(c_var, c_ref, n), 0, "%s trial %d: search codes differ", nf_simd_level_name(level), t);
            free(imp);
        }
        free(c_ref);
        free(s_ref);
        free(c_var);
        free(s_var);
        free(data);
        free(x);
    }
}

Test(nvfp4_simd, scalar)
{
    nf_simd_level before = nf_simd_active();
    levels_match(NF_SIMD_SCALAR);
    nf_simd_force(before);
}

Test(nvfp4_simd, avx2)
{
    if (!nf_simd_supported(NF_SIMD_AVX2)) cr_skip_test("this CPU (or NINFER_SIMD) has no avx2 level");
    nf_simd_level before = nf_simd_active();
    levels_match(NF_SIMD_AVX2);
    nf_simd_force(before);
}

Test(nvfp4_simd, avx512)
{
    if (!nf_simd_supported(NF_SIMD_AVX512)) cr_skip_test("this CPU (or NINFER_SIMD) has no avx512 level");
    nf_simd_level before = nf_simd_active();
    levels_match(NF_SIMD_AVX512);
    nf_simd_force(before);
}

/* ---------------------------------------------------------------- nvfp4_search */

/* 15 values of 4.9 and one 6 under a unit global scale (d = 1): nvfp4_quantize's scale 1 (0x38)
 * puts 4.9 on 4 (error 15 * 0.81 = 12.15); the candidates in order 0x37 (8.02), 0x39 (2.96),
 * 0x36 (2.40), 0x3A (1.25: every value on 4 * 1.25 = 5, error 1 + 15 * 0.01 = 1.15), 0x35
 * (1.28), 0x3B (5.65), 0x34 (4.65), 0x3C (2.40): 0x3A wins.  Weighing the 6 by 100 makes 0x3C
 * (1.5: 6 exact, 4.9 on 3 * 1.5 = 4.5, error 2.4) the best. */
Test(nvfp4_search_kat, neighbours_and_importance)
{
    float x[16];
    for (int i = 0; i < 16; i++) x[i] = 4.9f;
    x[5] = 6.0f;
    uint8_t *data = pack_f32(x, 16);
    nf_src_rows src = {.name = "w",
                       .type = NF_SRC_F32,
                       .data = data,
                       .rows = 1,
                       .cols = 16,
                       .matrix_max = UNIT_MAX,
                       .has_matrix_max = true};
    uint8_t codes[16], scale = 0;
    uint32_t d = 0;
    nf_words w = {.rows = 1, .cols = 16, .codes8 = codes, .scales8 = &scale, .divisors = &d};
    nf_error err;
    cr_assert_eq(nf_nvfp4_search_rows(nvfp4(), NULL, &src, &w, &err), NF_OK, "%s", err.message);
    cr_assert_eq(d, 0x3F800000u);
    cr_assert_eq(scale, 0x3A, "scale 0x%02x", scale);
    for (int i = 0; i < 16; i++) cr_assert_eq(codes[i], 6, "value %d: code %u", i, codes[i]);
    float imp[16];
    for (int i = 0; i < 16; i++) imp[i] = 1.0f;
    imp[5] = 100.0f;
    nf_method_params p = {.importance = imp, .importance_len = 16};
    cr_assert_eq(nf_nvfp4_search_rows(nvfp4(), &p, &src, &w, &err), NF_OK, "%s", err.message);
    cr_assert_eq(scale, 0x3C, "scale 0x%02x", scale);
    cr_assert_eq(codes[5], 6);
    cr_assert_eq(codes[0], 5);
    /* through the dispatcher, and refusals of its parameters */
    cr_assert_eq(nf_method_encode_rows(NF_METHOD_NVFP4_SEARCH, nvfp4(), &p, &src, &w, &err), NF_OK);
    cr_assert_eq(scale, 0x3C);
    p.negative_scales = true;
    cr_assert_eq(nf_nvfp4_search_rows(nvfp4(), &p, &src, &w, &err), NF_ERR_INVALID);
    cr_assert_str_eq(err.message, "tensor 'w': nvfp4_search takes only imatrix, not negative_scales");
    p.negative_scales = false;
    p.importance_len = 15;
    cr_assert_eq(nf_nvfp4_search_rows(nvfp4(), &p, &src, &w, &err), NF_ERR_INVALID);
    cr_assert_str_eq(err.message, "tensor 'w': importance must have one value per input channel (16), it has 15");
    free(data);
}

/* The weighted squared error of one group's words. */
static double words_error(const float *x, const float *imp, const uint8_t *codes, uint8_t scale, uint32_t d)
{
    double e = 0.0;
    for (int i = 0; i < 16; i++) {
        double diff = (double)x[i] - (double)nf_nvfp4_value(codes[i], scale, d);
        e += (imp ? (double)imp[i] : 1.0) * diff * diff;
    }
    return e;
}

/* Random matrices, with and without importance (some of it zero): every group's error is at most
 * nvfp4_quantize's, its scale within 4 words of it, its codes the rule's for its scale; a group
 * with all-zero importance keeps nvfp4_quantize's words; most groups improve somewhere. */
Test(nvfp4_search, never_worse_than_quantize)
{
    unsigned long groups = 0, better = 0;
    for (int t = 0; t < 40; t++) {
        size_t rows = 1 + rng32() % 4, cols = 16 * (1 + rng32() % 24), n = rows * cols;
        float *x = random_matrix(rows, cols);
        float *imp = NULL;
        if (t % 2) {
            imp = malloc(cols * sizeof *imp);
            for (size_t c = 0; c < cols; c++) imp[c] = c % 48 < 16 ? 0.0f : (float)(uniform() + 1.0);
        }
        uint8_t *data = pack_f32(x, n);
        nf_src_rows src = {.name = "w", .type = NF_SRC_F32, .data = data, .rows = rows, .cols = cols};
        uint8_t *cq = malloc(n), *sq = malloc(n / 16), *cs = malloc(n), *ss = malloc(n / 16);
        uint32_t dq = 0, ds = 0;
        nf_words wq = {.rows = rows, .cols = cols, .codes8 = cq, .scales8 = sq, .divisors = &dq};
        nf_words ws = {.rows = rows, .cols = cols, .codes8 = cs, .scales8 = ss, .divisors = &ds};
        nf_method_params p = {.importance = imp, .importance_len = imp ? cols : 0};
        nf_error err;
        cr_assert_eq(nf_nvfp4_quantize_rows(nvfp4(), NULL, &src, &wq, &err), NF_OK, "%s", err.message);
        cr_assert_eq(nf_nvfp4_search_rows(nvfp4(), imp ? &p : NULL, &src, &ws, &err), NF_OK, "%s", err.message);
        cr_assert_eq(ds, dq);
        float m = 0.0f;
        for (size_t i = 0; i < n; i++) m = fmaxf(m, fabsf(x[i]));
        float gs = m == 0.0f ? 1.0f : (float)((double)m / 2688.0);
        for (size_t g = 0; g < n / 16; g++) {
            const float *xi = x + 16 * g, *wi = imp ? imp + (16 * g) % cols : NULL;
            double eq = words_error(xi, wi, cq + 16 * g, sq[g], dq), es = words_error(xi, wi, cs + 16 * g, ss[g], ds);
            cr_assert(es <= eq, "trial %d group %zu: search error %.17g > quantize's %.17g", t, g, es, eq);
            cr_assert(abs((int)ss[g] - (int)sq[g]) <= 4, "scale 0x%02x vs 0x%02x", ss[g], sq[g]);
            float sv = (float)((double)nf_e4m3fn_to_f32(ss[g]) * (double)gs);
            for (int i = 0; i < 16; i++)
                cr_assert_eq(cs[16 * g + i], oracle_e2m1((float)((double)xi[i] / (double)sv)),
                             "group %zu value %d: not the rule's code for its scale", g, i);
            bool zero_w = wi && wi[0] == 0.0f && (16 * g) % cols % 48 < 16;
            if (zero_w) {
                cr_assert_eq(ss[g], sq[g], "a zero-importance group keeps its scale");
                cr_assert_eq(memcmp(cs + 16 * g, cq + 16 * g, 16), 0);
            }
            groups++;
            better += es < eq;
        }
        free(cq);
        free(sq);
        free(cs);
        free(ss);
        free(data);
        free(imp);
        free(x);
    }
    cr_assert(better > groups / 8, "only %lu of %lu groups improved", better, groups);
    cr_log_info("nvfp4_search: %lu of %lu groups improved on nvfp4_quantize", better, groups);
}

/* nvfp4_search's kernels at E2M1 ties of every candidate: a global scale of 1.5 (matrix maximum
 * 4032; the divisor f32(1 / 1.5) is inexact, so the two sides of a tie represent values at
 * slightly different distances), groups pinned to nvfp4_quantize's scale 1 by a 9, whose other
 * values are b * s * 1.5 and their binary32 neighbours, b an E2M1 boundary and s the value of a
 * candidate word (0x34..0x3C), so that the candidates' quotients land on the boundaries exactly;
 * every level against the reference search. */
Test(nvfp4_search, candidate_ties_every_level)
{
    static const float bounds[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
    float v[7 * 9 * 3];
    size_t nv = 0;
    for (int b = 0; b < 7; b++)
        for (uint8_t e = 0x34; e <= 0x3C; e++) {
            float x = bounds[b] * nf_e4m3fn_to_f32(e) * 1.5f;
            if (x >= 9.0f) continue;
            v[nv++] = x;
            v[nv++] = nextafterf(x, 0.0f);
            v[nv++] = -nextafterf(x, 10.0f);
        }
    size_t groups = (nv + 14) / 15 * 4, n = 16 * groups; /* each value in four groups, different company */
    float *x = calloc(n, sizeof *x);
    for (size_t g = 0; g < groups; g++) {
        x[16 * g] = 9.0f;
        for (size_t j = 1; j < 16; j++) x[16 * g + j] = v[(g * 15 + j * (g % 4 + 1)) % nv];
    }
    uint8_t *data = pack_f32(x, n);
    nf_src_rows src = {.name = "w",
                       .type = NF_SRC_F32,
                       .data = data,
                       .rows = 1,
                       .cols = n,
                       .matrix_max = bits_of_f32(4032.0f),
                       .has_matrix_max = true};
    uint8_t *cr = malloc(n), *sr = malloc(groups), *cv = malloc(n), *sv = malloc(groups);
    nf_words wr = {.rows = 1, .cols = n, .codes8 = cr, .scales8 = sr};
    nf_words wv = {.rows = 1, .cols = n, .codes8 = cv, .scales8 = sv};
    cr_assert_eq(nf_nvfp4_search_rows_reference(nvfp4(), NULL, &src, &wr, NULL), NF_OK);
    cr_assert_eq(sr[0], 0x38);
    nf_simd_level before = nf_simd_active();
    for (int lv = 0; lv < NF_SIMD_LEVEL_COUNT; lv++) {
        if (!force((nf_simd_level)lv)) continue;
        cr_assert_eq(nf_nvfp4_search_rows(nvfp4(), NULL, &src, &wv, NULL), NF_OK);
        cr_assert_eq(memcmp(sv, sr, groups), 0, "%s: scales differ", nf_simd_level_name((nf_simd_level)lv));
        cr_assert_eq(memcmp(cv, cr, n), 0, "%s: codes differ", nf_simd_level_name((nf_simd_level)lv));
    }
    nf_simd_force(before);
    free(cr);
    free(sr);
    free(cv);
    free(sv);
    free(data);
    free(x);
}
