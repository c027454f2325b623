/* import_encoded of NVFP4 checkpoints (docs/methods.md, import_encoded; docs/recipes.md): ModelOpt
 * (weight / weight_scale / weight_scale_2, a multiplier inverted to the divisor) and
 * compressed-tensors (weight_packed / weight_scale / weight_global_scale, already a divisor);
 * hand-built [128,64] tensors, the encoded block_scale_k16_m128x4_v1 bytes (docs/vectors.md
 * item 7 offsets), stacked parents and their divisor count, refusals, chunk independence.
 *
 * Expected reciprocals were computed outside the library with exact rational arithmetic (1/m
 * rounded to nearest binary32, ties to even); expected values use an E2M1 table and an ldexp
 * E4M3FN decode written here. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "support/test_float.h"

/* ------------------------------------------------------------------ helpers */

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rng_next(rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t rng_below(rng *r, uint64_t n) { return rng_next(r) % n; }

static double e2m1(unsigned c)
{
    static const double mag[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
    return (c & 8) ? -mag[c & 7] : mag[c & 7];
}

static double e4m3(unsigned w)
{
    unsigned e = (w >> 3) & 15, m = w & 7;
    double v = e == 0 ? ldexp(m, -9) : ldexp(1.0 + m / 8.0, (int)e - 7);
    return (w & 0x80) ? -v : v;
}

/* One NVFP4 source matrix held in memory, with its declarations. */
typedef struct src {
    char codes_name[96], scales_name[96], scalar_name[96];
    uint64_t codes_shape[2], scales_shape[2];
    nf_import_tensor codes, scales, scalar;
    uint8_t *packed; /* [n, k/2] */
    uint8_t *bscale; /* [n, k/16] */
    uint8_t scalar_bytes[4];
    uint64_t n, k;
} src;

static void le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static src *make_src(nf_import_kind dialect, const char *prefix, uint64_t n, uint64_t k, uint32_t scalar_word,
                     uint64_t seed)
{
    src *s = calloc(1, sizeof *s);
    cr_assert_not_null(s);
    bool mo = dialect == NF_IMPORT_NVFP4_MODELOPT;
    snprintf(s->codes_name, sizeof s->codes_name, "%s.%s", prefix, mo ? "weight" : "weight_packed");
    snprintf(s->scales_name, sizeof s->scales_name, "%s.weight_scale", prefix);
    snprintf(s->scalar_name, sizeof s->scalar_name, "%s.%s", prefix, mo ? "weight_scale_2" : "weight_global_scale");
    s->n = n;
    s->k = k;
    s->codes_shape[0] = n;
    s->codes_shape[1] = k / 2;
    s->scales_shape[0] = n;
    s->scales_shape[1] = k / 16;
    s->codes = (nf_import_tensor){s->codes_name, "U8", -1, 2, s->codes_shape};
    s->scales = (nf_import_tensor){s->scales_name, "F8_E4M3", -1, 2, s->scales_shape};
    s->scalar = (nf_import_tensor){s->scalar_name, "F32", -1, 0, NULL};
    s->packed = malloc(n * k / 2);
    s->bscale = malloc(n * k / 16);
    rng r = {seed};
    for (uint64_t i = 0; i < n * k / 2; i++) s->packed[i] = (uint8_t)rng_next(&r);
    for (uint64_t i = 0; i < n * k / 16; i++) s->bscale[i] = (uint8_t)rng_below(&r, 0x7F); /* 0x00..0x7E */
    le32(s->scalar_bytes, scalar_word);
    return s;
}

static void free_src(src *s)
{
    free(s->packed);
    free(s->bscale);
    free(s);
}

static nf_status init(nf_import *imp, nf_import_kind dialect, const src *s, nf_error *err)
{
    return nf_import_init_nvfp4(imp, dialect, &s->codes, &s->scales, &s->scalar, s->scalar_bytes, 4, err);
}

static nf_import init_ok(nf_import_kind dialect, const src *s)
{
    nf_import imp;
    nf_error err = {0};
    nf_status st = init(&imp, dialect, s, &err);
    cr_assert_eq(st, NF_OK, "%s", err.message);
    return imp;
}

static nf_status import_rows(const nf_import *imp, const src *s, uint64_t r0, uint64_t rows, nf_words *w,
                             uint64_t out_row, nf_error *err)
{
    nf_import_chunk c = {.first_row = r0,
                         .rows = rows,
                         .data = s->packed + r0 * (s->k / 2),
                         .data_len = rows * (s->k / 2),
                         .scales = s->bscale + r0 * (s->k / 16),
                         .scales_len = rows * (s->k / 16)};
    return nf_import_rows(imp, &c, w, out_row, err);
}

static nf_words words_for(const nf_geometry *g, uint64_t rows)
{
    nf_words w;
    nf_error err = {0};
    cr_assert_eq(nf_words_alloc(&w, g, rows, &err), NF_OK, "%s", err.message);
    return w;
}

/* The words of src rows [0, n) at out rows [at, at + n): codes low nibble first, scales as given. */
static void check_words(const src *s, const nf_words *w, uint64_t at)
{
    uint64_t k = s->k;
    for (uint64_t r = 0; r < s->n; r++) {
        for (uint64_t i = 0; i < k / 2; i++) {
            uint8_t b = s->packed[r * k / 2 + i];
            cr_assert_eq(w->codes8[(at + r) * k + 2 * i], b % 16, "row %" PRIu64 " byte %" PRIu64, r, i);
            cr_assert_eq(w->codes8[(at + r) * k + 2 * i + 1], b / 16);
        }
        cr_assert_eq(memcmp(w->scales8 + (at + r) * (k / 16), s->bscale + r * (k / 16), k / 16), 0);
    }
}

/* ------------------------------------------------------------------ single matrices */

Test(import_nvfp4, modelopt_128x64)
{
    src *s = make_src(NF_IMPORT_NVFP4_MODELOPT, "model.layers.0.mlp.up_proj", 128, 64, 0x40400000u /* 3.0 */, 1);
    s->packed[0] = 0x10; /* docs/vectors.md item 7: k=0 low nibble 0, k=1 high nibble 1 */
    nf_import imp = init_ok(NF_IMPORT_NVFP4_MODELOPT, s);
    cr_assert_eq(imp.kind, NF_IMPORT_NVFP4_MODELOPT);
    cr_assert_eq(imp.rows, 128);
    cr_assert_eq(imp.cols, 64);
    cr_assert_eq(imp.row_bytes, 32);
    cr_assert_eq(imp.scale_row_bytes, 4);
    cr_assert_eq(imp.source_scalar, 0x40400000u);
    cr_assert_eq(imp.divisor, 0x3EAAAAABu, "1/3 rounds up to 0x3EAAAAAB, got 0x%08X", imp.divisor);
    cr_assert_str_eq(imp.name, "model.layers.0.mlp.up_proj.weight");

    nf_geometry g;
    nf_error err = {0};
    cr_assert_eq(nf_import_geometry(&imp, &g, &err), NF_OK, "%s", err.message);
    cr_assert_eq(g.bytes, 4612);
    cr_assert_eq(g.divisors, 1);
    nf_words w = words_for(&g, 128);
    cr_assert_eq(import_rows(&imp, s, 0, 128, &w, 0, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_import_nvfp4_divisors(&imp, 1, &g, w.divisors, &err), NF_OK, "%s", err.message);
    cr_assert_eq(w.divisors[0], 0x3EAAAAABu);
    check_words(s, &w, 0);
    cr_assert_eq(w.codes8[0], 0);
    cr_assert_eq(w.codes8[1], 1);
    cr_assert_eq(nf_words_check(&g, &w, 0, &err), NF_OK, "%s", err.message);

    /* Encoded bytes: packed codes as given, natural scales at their swizzled offsets, divisor. */
    uint8_t *out = malloc(g.bytes);
    cr_assert_eq(nf_layout_encode(&g, &w, out, &err), NF_OK, "%s", err.message);
    cr_assert_eq(memcmp(out, s->packed, 4096), 0);
    cr_assert_eq(out[0], 0x10);
    for (uint64_t row = 0; row < 128; row++)
        for (uint64_t lane = 0; lane < 4; lane++)
            cr_assert_eq(out[4096 + (row % 32) * 16 + (row / 32) * 4 + lane], s->bscale[row * 4 + lane],
                         "scale (%" PRIu64 ",%" PRIu64 ")", row, lane);
    static const uint8_t d[4] = {0xAB, 0xAA, 0xAA, 0x3E};
    cr_assert_eq(memcmp(out + 4608, d, 4), 0);

    /* Values: (e2m1 * e4m3) exact, then one binary32 division by d_w. */
    float *vals = malloc(128 * 64 * sizeof *vals);
    cr_assert_eq(nf_words_to_f32(&g, &w, 0, vals, &err), NF_OK, "%s", err.message);
    for (uint64_t row = 0; row < 128; row++)
        for (uint64_t k = 0; k < 64; k++) {
            uint8_t b = s->packed[row * 32 + k / 2];
            unsigned c = k % 2 ? b >> 4 : b & 15;
            float prod = (float)(e2m1(c) * e4m3(s->bscale[row * 4 + k / 16]));
            float want = prod / f32_of_bits(0x3EAAAAABu);
            cr_assert_eq(bits_of_f32(vals[row * 64 + k]), bits_of_f32(want), "value (%" PRIu64 ",%" PRIu64 ")", row, k);
        }
    free(vals);
    free(out);
    nf_words_free(&w);
    free_src(s);
}

Test(import_nvfp4, modelopt_reciprocal_rounding)
{
    /* weight_scale_2 word -> expected divisor word (exact 1/m rounded to nearest even). */
    static const uint32_t cases[][2] = {
        {0x40400000u, 0x3EAAAAABu}, /* 3.0 */
        {0x3DCCCCCDu, 0x41200000u}, /* 0.1f: 9.99999985 rounds to 10 */
        {0x40E00000u, 0x3E124925u}, /* 7.0 */
        {0x3B800000u, 0x43800000u}, /* 2^-8: exact */
        {0x3F800001u, 0x3F7FFFFEu}, /* 1 + 2^-23 */
        {0x3F7FFFFFu, 0x3F800001u}, /* 1 - 2^-24 */
        {0x006CE3EEu, 0x7E96769Au}, /* subnormal 1e-38 */
        {0x00800000u, 0x7E800000u}, /* FLT_MIN */
        {0x00200001u, 0x7F7FFFF8u}, /* just above 2^-128: still finite */
        {0x7F7FFFFFu, 0x00200000u}, /* FLT_MAX: subnormal divisor, nonzero */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        src *s = make_src(NF_IMPORT_NVFP4_MODELOPT, "m", 128, 64, cases[i][0], 2);
        nf_import imp = init_ok(NF_IMPORT_NVFP4_MODELOPT, s);
        cr_assert_eq(imp.divisor, cases[i][1], "1/0x%08X: got 0x%08X, want 0x%08X", cases[i][0], imp.divisor,
                     cases[i][1]);
        cr_assert_eq(imp.source_scalar, cases[i][0]);
        free_src(s);
    }
}

Test(import_nvfp4, compressed_tensors_direct)
{
    static const uint32_t words[] = {0x44E00000u /* 1792 */, 0x3EAAAAABu, 0x00000001u /* smallest subnormal */,
                                     0x7F7FFFFFu};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        src *s = make_src(NF_IMPORT_NVFP4_COMPRESSED, "model.layers.3.self_attn.o_proj", 128, 64, words[i], 3);
        nf_import imp = init_ok(NF_IMPORT_NVFP4_COMPRESSED, s);
        cr_assert_eq(imp.divisor, words[i], "the global scale is the divisor as stored");
        cr_assert_str_eq(imp.name, "model.layers.3.self_attn.o_proj.weight_packed");
        nf_geometry g;
        nf_error err = {0};
        cr_assert_eq(nf_import_geometry(&imp, &g, &err), NF_OK, "%s", err.message);
        nf_words w = words_for(&g, 128);
        cr_assert_eq(import_rows(&imp, s, 0, 128, &w, 0, &err), NF_OK, "%s", err.message);
        check_words(s, &w, 0);
        nf_words_free(&w);
        free_src(s);
    }
    /* the same scalar word gives different divisors in the two dialects */
    src *s = make_src(NF_IMPORT_NVFP4_MODELOPT, "p", 128, 64, 0x40400000u, 4);
    src *c = make_src(NF_IMPORT_NVFP4_COMPRESSED, "p", 128, 64, 0x40400000u, 4);
    cr_assert_eq(init_ok(NF_IMPORT_NVFP4_MODELOPT, s).divisor, 0x3EAAAAABu);
    cr_assert_eq(init_ok(NF_IMPORT_NVFP4_COMPRESSED, c).divisor, 0x40400000u);
    free_src(s);
    free_src(c);
}

/* ------------------------------------------------------------------ refusals */

static void expect_init_refused(nf_import_kind dialect, const src *s, nf_status want, const char *needle)
{
    nf_import imp;
    nf_error err = {0};
    nf_status st = init(&imp, dialect, s, &err);
    cr_assert_eq(st, want, "status %d (%s)", st, err.message);
    if (needle) cr_assert_not_null(strstr(err.message, needle), "message '%s' lacks '%s'", err.message, needle);
}

Test(import_nvfp4, refuses_bad_scales)
{
    static const struct {
        uint8_t w;
        const char *why;
    } bad[] = {{0x80, "is -0"}, {0xB8, "is negative"}, {0x7F, "is NaN"}, {0xFF, "is NaN"}};
    for (int d = 0; d < 2; d++) {
        nf_import_kind dialect = d ? NF_IMPORT_NVFP4_COMPRESSED : NF_IMPORT_NVFP4_MODELOPT;
        for (size_t i = 0; i < 4; i++) {
            src *s = make_src(dialect, "model.layers.1.mlp.down_proj", 128, 64, 0x3F800000u, 5);
            s->bscale[5 * 4 + 2] = bad[i].w; /* row 5 group 2 */
            nf_import imp = init_ok(dialect, s);
            nf_geometry g;
            nf_error err = {0};
            cr_assert_eq(nf_import_geometry(&imp, &g, &err), NF_OK);
            nf_words w = words_for(&g, 128);
            cr_assert_eq(import_rows(&imp, s, 0, 128, &w, 0, &err), NF_ERR_INVALID);
            char word[8];
            snprintf(word, sizeof word, "0x%02X", bad[i].w);
            cr_assert_not_null(strstr(err.message, "model.layers.1.mlp.down_proj.weight_scale: row 5 group 2"), "%s",
                               err.message);
            cr_assert_not_null(strstr(err.message, word), "%s", err.message);
            cr_assert_not_null(strstr(err.message, bad[i].why), "%s", err.message);
            /* a chunk that does not hold row 5 is fine; one that does names the absolute row */
            cr_assert_eq(import_rows(&imp, s, 0, 5, &w, 0, &err), NF_OK, "%s", err.message);
            cr_assert_eq(import_rows(&imp, s, 4, 3, &w, 0, &err), NF_ERR_INVALID);
            cr_assert_not_null(strstr(err.message, "row 5 group 2"), "%s", err.message);
            nf_words_free(&w);
            free_src(s);
        }
    }
}

Test(import_nvfp4, refuses_bad_divisors)
{
    static const struct {
        uint32_t w;
        const char *why;
    } bad[] = {{0x00000000u, "+0"},        {0x80000000u, "-0"},  {0x7F800000u, "+infinity"},
               {0xFF800000u, "-infinity"}, {0x7FC00000u, "NaN"}, {0xBF800000u, "negative"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        src *s = make_src(NF_IMPORT_NVFP4_MODELOPT, "a", 128, 64, bad[i].w, 6);
        expect_init_refused(NF_IMPORT_NVFP4_MODELOPT, s, NF_ERR_INVALID, bad[i].why);
        expect_init_refused(NF_IMPORT_NVFP4_MODELOPT, s, NF_ERR_INVALID, "a.weight_scale_2");
        free_src(s);
        s = make_src(NF_IMPORT_NVFP4_COMPRESSED, "a", 128, 64, bad[i].w, 6);
        expect_init_refused(NF_IMPORT_NVFP4_COMPRESSED, s, NF_ERR_INVALID, bad[i].why);
        expect_init_refused(NF_IMPORT_NVFP4_COMPRESSED, s, NF_ERR_INVALID, "a.weight_global_scale");
        free_src(s);
    }
    /* ModelOpt multipliers whose reciprocal overflows binary32 */
    static const uint32_t tiny[] = {0x00000001u, 0x001FFFFFu, 0x00200000u /* 2^-128: 1/m = 2^128 */};
    for (size_t i = 0; i < 3; i++) {
        src *s = make_src(NF_IMPORT_NVFP4_MODELOPT, "a", 128, 64, tiny[i], 6);
        expect_init_refused(NF_IMPORT_NVFP4_MODELOPT, s, NF_ERR_INVALID, "reciprocal");
        free_src(s);
        /* the same word is a valid compressed-tensors divisor */
        s = make_src(NF_IMPORT_NVFP4_COMPRESSED, "a", 128, 64, tiny[i], 6);
        cr_assert_eq(init_ok(NF_IMPORT_NVFP4_COMPRESSED, s).divisor, tiny[i]);
        free_src(s);
    }
}

Test(import_nvfp4, refuses_bad_declarations)
{
    nf_import_kind MO = NF_IMPORT_NVFP4_MODELOPT, CT = NF_IMPORT_NVFP4_COMPRESSED;
    /* K = 40: 20 packed bytes per row, not a multiple of 16 */
    src *s = make_src(MO, "x", 128, 40, 0x3F800000u, 7);
    s->scales_shape[1] = 3;
    expect_init_refused(MO, s, NF_ERR_INVALID, "K = 40");
    expect_init_refused(MO, s, NF_ERR_INVALID, "multiple of 16");
    free_src(s);

    s = make_src(MO, "x", 128, 64, 0x3F800000u, 7);
    s->scales_shape[1] = 5;
    expect_init_refused(MO, s, NF_ERR_INVALID, "[128,4]");
    s->scales_shape[1] = 4;
    s->scales_shape[0] = 64;
    expect_init_refused(MO, s, NF_ERR_INVALID, "x.weight_scale: shape [64,4]");
    s->scales_shape[0] = 128;
    s->scales.dtype = "U8";
    expect_init_refused(MO, s, NF_ERR_INVALID, "F8_E4M3");
    s->scales.dtype = "F8_E4M3";
    s->codes.dtype = "F8_E4M3";
    expect_init_refused(MO, s, NF_ERR_INVALID, "dtype F8_E4M3 is not U8");
    s->codes.dtype = "U8";
    s->scalar.dtype = "BF16";
    expect_init_refused(MO, s, NF_ERR_INVALID, "dtype BF16 is not F32");
    s->scalar.dtype = "F32";
    uint64_t two[1] = {2}, one[2] = {1, 1};
    s->scalar.rank = 1;
    s->scalar.shape = two;
    expect_init_refused(MO, s, NF_ERR_INVALID, "not a scalar");
    s->scalar.rank = 2;
    s->scalar.shape = one; /* one element: accepted */
    init_ok(MO, s);
    s->scalar.rank = 0;
    s->scalar.shape = NULL;
    /* dialect names: a weight_global_scale is not a ModelOpt weight_scale_2, and back */
    expect_init_refused(CT, s, NF_ERR_INVALID, "weight_packed");
    strcpy(s->scalar_name, "x.weight_global_scale");
    expect_init_refused(MO, s, NF_ERR_INVALID, "weight_scale_2");
    strcpy(s->scalar_name, "y.weight_scale_2");
    expect_init_refused(MO, s, NF_ERR_INVALID, "same layer");
    strcpy(s->scalar_name, "x.weight_scale_2");
    s->codes.ggml_type = 0;
    expect_init_refused(MO, s, NF_ERR_INVALID, "GGUF");
    s->codes.ggml_type = -1;
    s->codes.rank = 1;
    expect_init_refused(MO, s, NF_ERR_INVALID, "matrix");
    s->codes.rank = 2;
    /* argument errors */
    nf_import imp;
    nf_error err = {0};
    cr_assert_eq(nf_import_init_nvfp4(&imp, MO, &s->codes, &s->scales, &s->scalar, s->scalar_bytes, 2, &err),
                 NF_ERR_USAGE);
    cr_assert_eq(nf_import_init_nvfp4(&imp, MO, &s->codes, &s->scales, &s->scalar, NULL, 4, &err), NF_ERR_USAGE);
    cr_assert_eq(nf_import_init_nvfp4(&imp, NF_IMPORT_FP8_COMPRESSED, &s->codes, &s->scales, &s->scalar,
                                      s->scalar_bytes, 4, &err),
                 NF_ERR_USAGE);
    cr_assert_eq(nf_import_init_nvfp4(&imp, MO, &s->codes, NULL, &s->scalar, s->scalar_bytes, 4, &err), NF_ERR_USAGE);
    init_ok(MO, s);
    free_src(s);

    /* shapes the layout cannot hold are refused by the geometry, naming the tensor */
    s = make_src(MO, "z", 100, 64, 0x3F800000u, 8);
    nf_import imp2 = init_ok(MO, s);
    nf_geometry g;
    cr_assert_eq(nf_import_geometry(&imp2, &g, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "z.weight"), "%s", err.message);
    free_src(s);
    s = make_src(MO, "z", 128, 80, 0x3F800000u, 8);
    imp2 = init_ok(MO, s);
    cr_assert_eq(nf_import_geometry(&imp2, &g, &err), NF_ERR_INVALID);
    free_src(s);
}

/* ------------------------------------------------------------------ stacking */

static void stack_case(uint32_t d0, uint32_t d1, uint64_t want_divisors, uint64_t want_bytes)
{
    src *a = make_src(NF_IMPORT_NVFP4_MODELOPT, "layers.0.mlp.gate_proj", 128, 64, d0, 9);
    src *b = make_src(NF_IMPORT_NVFP4_COMPRESSED, "layers.0.mlp.up_proj", 128, 64, d1, 10);
    nf_import imps[2] = {init_ok(NF_IMPORT_NVFP4_MODELOPT, a), init_ok(NF_IMPORT_NVFP4_COMPRESSED, b)};
    nf_geometry g;
    nf_error err = {0};
    cr_assert_eq(nf_import_nvfp4_stack(imps, 2, &g, &err), NF_OK, "%s", err.message);
    cr_assert_eq(g.rows, 256);
    cr_assert_eq(g.cols, 64);
    cr_assert_eq(g.divisors, want_divisors);
    cr_assert_eq(g.bytes, want_bytes);
    nf_words w = words_for(&g, 256);
    cr_assert_eq(import_rows(&imps[0], a, 0, 128, &w, 0, &err), NF_OK, "%s", err.message);
    cr_assert_eq(import_rows(&imps[1], b, 0, 128, &w, 128, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_import_nvfp4_divisors(imps, 2, &g, w.divisors, &err), NF_OK, "%s", err.message);
    check_words(a, &w, 0);
    check_words(b, &w, 128);
    uint8_t *out = malloc(g.bytes);
    cr_assert_eq(nf_layout_encode(&g, &w, out, &err), NF_OK, "%s", err.message);
    /* [256,64]: codes 8192, scales at 8192 (1024 bytes), divisors at 9216 (docs/layouts.md 5) */
    uint32_t first, second;
    memcpy(&first, out + 9216, 4);
    cr_assert_eq(first, imps[0].divisor);
    if (want_divisors == 2) {
        memcpy(&second, out + 9220, 4);
        cr_assert_eq(second, d1);
    }
    free(out);
    nf_words_free(&w);
    free_src(a);
    free_src(b);
}

/* ModelOpt 0.5 -> divisor 2.0 (0x40000000); compressed-tensors divisor 0x40000000 or 1.5. */
Test(import_nvfp4, stack_different_divisors) { stack_case(0x3F000000u, 0x3FC00000u, 2, 9224); }
Test(import_nvfp4, stack_same_divisor) { stack_case(0x3F000000u, 0x40000000u, 1, 9220); }

Test(import_nvfp4, stack_rules)
{
    nf_import_kind CT = NF_IMPORT_NVFP4_COMPRESSED;
    src *a = make_src(CT, "a", 128, 64, 0x3F800000u, 11), *b = make_src(CT, "b", 256, 64, 0x40000000u, 12);
    src *c = make_src(CT, "c", 256, 64, 0x3F800000u, 13), *d = make_src(CT, "d", 128, 128, 0x3F800000u, 14);
    nf_geometry g;
    nf_error err = {0};
    /* different divisors need equal row counts */
    nf_import ab[2] = {init_ok(CT, a), init_ok(CT, b)};
    cr_assert_eq(nf_import_nvfp4_stack(ab, 2, &g, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "b.weight_packed: has 256 rows"), "%s", err.message);
    /* equal divisors: any rows the layout holds, one divisor */
    nf_import ac[2] = {init_ok(CT, a), init_ok(CT, c)};
    cr_assert_eq(nf_import_nvfp4_stack(ac, 2, &g, &err), NF_OK, "%s", err.message);
    cr_assert_eq(g.rows, 384);
    cr_assert_eq(g.divisors, 1);
    uint32_t dv[2] = {0, 0};
    cr_assert_eq(nf_import_nvfp4_divisors(ac, 2, &g, dv, &err), NF_OK);
    cr_assert_eq(dv[0], 0x3F800000u);
    cr_assert_eq(dv[1], 0);
    /* sources that cannot stack are refused here too */
    cr_assert_eq(nf_import_nvfp4_divisors(ab, 2, &g, dv, &err), NF_ERR_INVALID);
    /* K must agree */
    nf_import ad[2] = {init_ok(CT, a), init_ok(CT, d)};
    cr_assert_eq(nf_import_nvfp4_stack(ad, 2, &g, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "K = 128"), "%s", err.message);
    /* three sources, two divisor words: divisors = 3 */
    src *e = make_src(CT, "e", 128, 64, 0x40000000u, 15), *f = make_src(CT, "f", 128, 64, 0x3F800000u, 16);
    nf_import aef[3] = {init_ok(CT, a), init_ok(CT, e), init_ok(CT, f)};
    cr_assert_eq(nf_import_nvfp4_stack(aef, 3, &g, &err), NF_OK, "%s", err.message);
    cr_assert_eq(g.divisors, 3);
    uint32_t dv3[3];
    cr_assert_eq(nf_import_nvfp4_divisors(aef, 3, &g, dv3, &err), NF_OK);
    cr_assert_eq(dv3[0], 0x3F800000u);
    cr_assert_eq(dv3[1], 0x40000000u);
    cr_assert_eq(dv3[2], 0x3F800000u);
    /* a geometry of other sources is refused */
    cr_assert_eq(nf_import_nvfp4_divisors(ac, 2, &g, dv, &err), NF_ERR_USAGE);
    cr_assert_eq(nf_import_nvfp4_stack(aef, 0, &g, &err), NF_ERR_USAGE);
    free_src(a);
    free_src(b);
    free_src(c);
    free_src(d);
    free_src(e);
    free_src(f);
}

/* ------------------------------------------------------------------ chunks */

Test(import_nvfp4, chunk_independence)
{
    src *s = make_src(NF_IMPORT_NVFP4_COMPRESSED, "big", 384, 128, 0x3F800000u, 17);
    nf_import imp = init_ok(NF_IMPORT_NVFP4_COMPRESSED, s);
    nf_geometry g;
    nf_error err = {0};
    cr_assert_eq(nf_import_geometry(&imp, &g, &err), NF_OK);
    nf_words whole = words_for(&g, 384);
    cr_assert_eq(import_rows(&imp, s, 0, 384, &whole, 0, &err), NF_OK, "%s", err.message);
    check_words(s, &whole, 0);
    rng r = {99};
    for (int trial = 0; trial < 10; trial++) {
        uint64_t r0 = 0;
        while (r0 < 384) {
            uint64_t rows = 1 + rng_below(&r, 384 - r0);
            nf_words part = words_for(&g, rows);
            cr_assert_eq(import_rows(&imp, s, r0, rows, &part, 0, &err), NF_OK, "%s", err.message);
            cr_assert_eq(memcmp(part.codes8, whole.codes8 + r0 * 128, rows * 128), 0);
            cr_assert_eq(memcmp(part.scales8, whole.scales8 + r0 * 8, rows * 8), 0);
            nf_words_free(&part);
            r0 += rows;
        }
    }
    /* short scale buffer */
    nf_import_chunk c =
        {.first_row = 0, .rows = 2, .data = s->packed, .data_len = 128, .scales = s->bscale, .scales_len = 15};
    cr_assert_eq(nf_import_rows(&imp, &c, &whole, 0, &err), NF_ERR_USAGE);
    c.scales = NULL;
    c.scales_len = 16;
    cr_assert_eq(nf_import_rows(&imp, &c, &whole, 0, &err), NF_ERR_USAGE);
    nf_words_free(&whole);
    free_src(s);
}
