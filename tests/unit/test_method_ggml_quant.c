/* ggml_quantize (docs/methods.md "ggml_quantize"): the blocks of every supported type compared
 * byte for byte with the bytes ggml itself wrote for tests/data/gguf/source.f32
 * (tests/data/gguf/MANIFEST.md: ggml_quantize_chunk without an importance matrix for these
 * types; tests/data/gguf/extra for the importance paths and unusual rows), plus the refusals (row length, non-finite values, overflowing scales, parameters) and
 * properties of the importance path that the fixtures do not cover byte for byte. */
#include <criterion/criterion.h>

#include <stdbool.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/method.h>

#include "format/ggml.h"
#include "support/test_data.h"

#define ROWS 16
#define COLS 512

/* Geometry as MANIFEST.md lists it, independent of the registry. */
typedef struct qtype {
    nf_format_id id;
    const char *stem;
    unsigned qk, bb;
} qtype;

static const qtype TYPES[] = {
    {NF_FMT_GGUF_Q8_0, "q8_0", 32, 34},
    {NF_FMT_GGUF_Q4_0, "q4_0", 32, 18},
    {NF_FMT_GGUF_Q5_0, "q5_0", 32, 22},
    {NF_FMT_GGUF_Q2_K, "q2_k", 256, 84},
    {NF_FMT_GGUF_Q3_K, "q3_k", 256, 110},
    {NF_FMT_GGUF_Q4_K, "q4_k", 256, 144},
    {NF_FMT_GGUF_Q5_K, "q5_k", 256, 176},
    {NF_FMT_GGUF_Q6_K, "q6_k", 256, 210},
    {NF_FMT_GGUF_Q2_0, "q2_0", 64, 18},
    /* MANIFEST.md: ggml wrote the IQ fixtures with imatrix.f32 */
    {NF_FMT_GGUF_IQ4_NL, "iq4_nl", 32, 18},
    {NF_FMT_GGUF_IQ4_XS, "iq4_xs", 256, 136},
    {NF_FMT_GGUF_IQ3_XXS, "iq3_xxs", 256, 98},
    {NF_FMT_GGUF_IQ3_S, "iq3_s", 256, 110},
};
static bool is_iq(const qtype *t) { return t->stem[0] == 'i'; }
#define NTYPES (sizeof TYPES / sizeof TYPES[0])

static float *source(void)
{
    size_t len;
    float *x = (float *)nf_test_data(&len, "gguf/source.f32");
    cr_assert_eq(len, sizeof(float) * ROWS * COLS);
    return x;
}

/* Encode rows x cols binary32 values (a chunk starting at first_row) into blocks. */
static nf_status encode(const qtype *t, const float *x, uint64_t first_row, uint64_t rows, uint64_t cols,
                        const float *imp, uint8_t *blocks, nf_error *err)
{
    nf_src_rows src = {.name = "w", .type = NF_SRC_F32, .data = x, .first_row = first_row, .rows = rows, .cols = cols};
    nf_words w = {.rows = rows, .cols = cols, .blocks = blocks};
    nf_method_params p = {.importance = imp, .importance_len = imp ? cols : 0};
    return nf_method_encode_rows(NF_METHOD_GGML_QUANTIZE, nf_format_by_id(t->id), imp ? &p : NULL, &src, &w, err);
}

static size_t row_bytes(const qtype *t, uint64_t cols) { return (size_t)(cols / t->qk * t->bb); }

Test(ggml_quant, same_bytes_as_ggml)
{
    float *x = source();
    size_t ilen;
    float *imatrix = (float *)nf_test_data(&ilen, "gguf/imatrix.f32");
    for (size_t i = 0; i < NTYPES; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s.qbytes", TYPES[i].stem);
        size_t len;
        uint8_t *want = nf_test_data(&len, "gguf/%s", name);
        cr_assert_eq(len, ROWS * row_bytes(&TYPES[i], COLS), "%s", name);
        uint8_t *got = calloc(1, len);
        nf_error err = {0};
        cr_assert_eq(encode(&TYPES[i], x, 0, ROWS, COLS, is_iq(&TYPES[i]) ? imatrix : NULL, got, &err), NF_OK, "%s: %s",
                     name, err.message);
        size_t first = len;
        for (size_t b = 0; b < len && first == len; b++)
            if (got[b] != want[b]) first = b;
        cr_expect_eq(first, len, "%s: first differing byte %zu (row %zu, block %zu, byte %zu): got 0x%02x, ggml 0x%02x",
                     TYPES[i].stem, first, first / row_bytes(&TYPES[i], COLS),
                     first % row_bytes(&TYPES[i], COLS) / TYPES[i].bb, first % TYPES[i].bb,
                     first < len ? got[first] : 0, first < len ? want[first] : 0);
        free(got);
        free(want);
    }
    free(imatrix);
    free(x);
}

/* Any cut of the rows into chunks gives the same bytes; so does each row alone. */
Test(ggml_quant, chunks_do_not_matter)
{
    float *x = source();
    for (size_t i = 0; i < NTYPES; i++) {
        size_t rb = row_bytes(&TYPES[i], COLS);
        uint8_t *whole = calloc(ROWS, rb), *cut = calloc(ROWS, rb);
        cr_assert_eq(encode(&TYPES[i], x, 0, ROWS, COLS, NULL, whole, NULL), NF_OK);
        for (uint64_t r = 0; r < ROWS; r += 3) {
            uint64_t n = ROWS - r < 3 ? ROWS - r : 3;
            cr_assert_eq(encode(&TYPES[i], x + r * COLS, r, n, COLS, NULL, cut + r * rb, NULL), NF_OK);
        }
        cr_expect_eq(memcmp(whole, cut, ROWS * rb), 0, "%s", TYPES[i].stem);
        free(whole);
        free(cut);
    }
    free(x);
}

Test(ggml_quant, refuses_row_lengths_off_the_block)
{
    float x[300] = {0};
    uint8_t blocks[1024];
    for (size_t i = 0; i < NTYPES; i++) {
        nf_error err = {0};
        uint64_t cols = TYPES[i].qk == 32 ? 48 : 288;
        cr_assert_eq(encode(&TYPES[i], x, 0, 1, cols, NULL, blocks, &err), NF_ERR_INVALID, "%s", TYPES[i].stem);
        char want[128];
        snprintf(want, sizeof want, "row length %u is not a multiple of gguf_%s's block of %u values", (unsigned)cols,
                 TYPES[i].stem, TYPES[i].qk);
        cr_expect(strstr(err.message, "tensor 'w'") && strstr(err.message, want), "%s", err.message);
    }
}

Test(ggml_quant, refuses_non_finite_values)
{
    static float x[2 * 256];
    uint8_t blocks[2 * 272]; /* two rows of 256 values: Q8_0 is the largest, 272 bytes a row */
    const float bad[] = {NAN, INFINITY, -INFINITY};
    const char *names[] = {"NaN", "+inf", "-inf"};
    for (size_t i = 0; i < NTYPES; i++)
        for (size_t b = 0; b < 3; b++) {
            for (size_t j = 0; j < 512; j++) x[j] = 0.01f * (float)((int)(j % 7) - 3);
            x[256 + 77] = bad[b];
            nf_error err = {0};
            uint64_t cols = 256;
            cr_assert_eq(encode(&TYPES[i], x, 40, 2, cols, NULL, blocks, &err), NF_ERR_INVALID);
            char want[96];
            snprintf(want, sizeof want, "tensor 'w': row 41 col 77: source value %s is not finite", names[b]);
            cr_expect(strstr(err.message, want), "%s: %s", TYPES[i].stem, err.message);
        }
}

/* Values too large for binary16 give ggml an infinite d; the method refuses the block. */
Test(ggml_quant, refuses_scales_beyond_binary16)
{
    static float x[256];
    uint8_t blocks[272]; /* a row of 256 values: Q8_0 is the largest, 8 blocks of 34 bytes */
    for (size_t i = 0; i < NTYPES; i++) {
        for (size_t j = 0; j < 256; j++) x[j] = (j % 2 ? 1.0f : -1.0f) * 1e10f * (float)(j % 5 + 1);
        nf_error err = {0};
        cr_assert_eq(encode(&TYPES[i], x, 2, 1, 256, NULL, blocks, &err), NF_ERR_INVALID, "%s", TYPES[i].stem);
        cr_expect(strstr(err.message, "tensor 'w': row 2 block 0 (cols 0..") &&
                      strstr(err.message, "too large for binary16"),
                  "%s: %s", TYPES[i].stem, err.message);
        /* 2^64 and beyond: ggml's squared weights overflow and it would write zero scales */
        for (size_t j = 0; j < 256; j++) x[j] = 0.01f;
        x[200] = 3e19f;
        cr_assert_eq(encode(&TYPES[i], x, 2, 1, 256, NULL, blocks, &err), NF_ERR_INVALID, "%s", TYPES[i].stem);
        cr_expect(strstr(err.message, "tensor 'w': row 2 col 200: source value 3e+19 is too large for gguf_"), "%s: %s",
                  TYPES[i].stem, err.message);
    }
}

/* Finite values below 2^64 on which ggml's IQ3 grid search overflows binary32: ggml's encoder
 * stops with an assertion (iq3_find_best_neighbour finds no point; checked on ggml d99724f2 with
 * these values), so the method refuses the block. */
Test(ggml_quant, refuses_blocks_ggml_stops_on)
{
    static float x[2 * 256];
    uint8_t blocks[2 * 110];
    for (size_t i = 0; i < NTYPES; i++) {
        const qtype *t = &TYPES[i];
        if (strncmp(t->stem, "iq3", 3) != 0) continue;
        for (size_t j = 0; j < 512; j++) x[j] = j < 256 ? 0.01f : 1e15f * sinf(0.7f * (float)(j - 256));
        nf_error err = {0};
        cr_assert_eq(encode(t, x, 4, 1, 512, NULL, blocks, &err), NF_ERR_INVALID, "%s", t->stem);
        char want[160];
        snprintf(want, sizeof want,
                 "tensor 'w': row 4 block 1 (cols 256..511): the values are too large for gguf_%s: ggml's search "
                 "overflows binary32",
                 t->stem);
        cr_expect(strstr(err.message, want), "%s: %s", t->stem, err.message);
    }
}

Test(ggml_quant, targets_and_parameters)
{
    nf_error err = {0};
    cr_assert_eq(nf_method_check_target(NF_METHOD_GGML_QUANTIZE, nf_format_by_id(NF_FMT_Q2_G64_FP16), &err),
                 NF_ERR_INVALID);
    cr_expect(strstr(err.message, "ggml_quantize cannot target q2_g64_fp16"), "%s", err.message);
    cr_assert_eq(nf_method_check_target(NF_METHOD_GGML_QUANTIZE, nf_format_by_id(NF_FMT_Q4_G64_FP16), NULL),
                 NF_ERR_INVALID);
    for (size_t i = 0; i < NTYPES; i++)
        cr_expect_eq(nf_method_check_target(NF_METHOD_GGML_QUANTIZE, nf_format_by_id(TYPES[i].id), NULL), NF_OK);
    cr_assert_eq(nf_method_find("ggml_quantize", &(nf_method_id){0}, NULL), NF_OK);
    nf_method_params neg = {.negative_scales = true};
    cr_expect_eq(nf_method_check_params(NF_METHOD_GGML_QUANTIZE, &neg, 256, &err), NF_ERR_INVALID);
    float imp[256];
    for (int j = 0; j < 256; j++) imp[j] = 1.0f;
    imp[9] = -1.0f;
    nf_method_params p = {.importance = imp, .importance_len = 256};
    cr_expect_eq(nf_method_check_params(NF_METHOD_GGML_QUANTIZE, &p, 256, &err), NF_ERR_INVALID);
    imp[9] = 1.0f;
    cr_expect_eq(nf_method_check_params(NF_METHOD_GGML_QUANTIZE, &p, 256, &err), NF_OK);
    cr_expect_eq(nf_method_check_params(NF_METHOD_GGML_QUANTIZE, &p, 512, &err), NF_ERR_INVALID);
}

/* ---------------------------------------------------------------- importance path properties */

static double sq_error(const qtype *t, const float *x, const uint8_t *blocks, const float *imp)
{
    float y[COLS];
    double e = 0;
    for (int r = 0; r < ROWS; r++) {
        cr_assert_eq(
            nf_ggml_dequant_row(nf_format_by_id(t->id), blocks + (size_t)r * row_bytes(t, COLS), COLS, y, NULL), NF_OK);
        for (int c = 0; c < COLS; c++) {
            double d = (double)x[r * COLS + c] - (double)y[c];
            e += (imp ? imp[c] : 1.0) * d * d;
        }
    }
    return e;
}

/* With the fixtures' importance vector: deterministic, every block valid (finite scales), and
 * the importance-weighted error within a small factor of the path without it. */
Test(ggml_quant, importance_path_properties)
{
    float *x = source();
    size_t len;
    float *imp = (float *)nf_test_data(&len, "gguf/imatrix.f32");
    cr_assert_eq(len, sizeof(float) * COLS);
    for (size_t i = 0; i < NTYPES; i++) {
        const qtype *t = &TYPES[i];
        size_t n = ROWS * row_bytes(t, COLS);
        uint8_t *a = calloc(1, n), *b = calloc(1, n), *plain = calloc(1, n);
        nf_error err = {0};
        cr_assert_eq(encode(t, x, 0, ROWS, COLS, imp, a, &err), NF_OK, "%s: %s", t->stem, err.message);
        cr_assert_eq(encode(t, x, 0, ROWS, COLS, imp, b, &err), NF_OK);
        cr_expect_eq(memcmp(a, b, n), 0, "%s: not deterministic", t->stem);
        cr_assert_eq(encode(t, x, 0, ROWS, COLS, NULL, plain, &err), NF_OK);
        nf_ggml_bad_scale bad;
        cr_expect(!nf_ggml_find_nonfinite_scale(nf_format_by_id(t->id), a, 0, ROWS * COLS / t->qk, &bad), "%s",
                  t->stem);
        double ew = sq_error(t, x, a, imp), ep = sq_error(t, x, plain, imp);
        cr_expect(ew <= 1.25 * ep, "%s: weighted error %g with importance, %g without", t->stem, ew, ep);
        if (is_iq(t)) /* the IQ types' plain path weighs by x^2 instead */
            cr_expect_neq(memcmp(a, plain, n), 0, "%s: importance changed nothing", t->stem);
        else if (t->id != NF_FMT_GGUF_Q8_0 && t->id != NF_FMT_GGUF_Q2_0) /* they ignore it, as ggml does */
            cr_expect_neq(memcmp(a, plain, n), 0, "%s: importance changed nothing", t->stem);
        else cr_expect_eq(memcmp(a, plain, n), 0, "%s must ignore the importance", t->stem);
        free(a);
        free(b);
        free(plain);
    }
    free(imp);
    free(x);
}

/* ggml's bytes for its importance paths and for rows of every kind (all zero, an outlier,
 * subnormals, a huge dynamic range, -0.0), made by ggml itself (tests/data/gguf/README.md,
 * "Extra vectors"). */
static void expect_extra(const qtype *t, const char *variant, const float *x, uint64_t rows, const float *imp)
{
    char name[96];
    snprintf(name, sizeof name, "extra/%s.%s.qbytes", t->stem, variant);
    size_t len;
    uint8_t *want = nf_test_data(&len, "gguf/%s", name);
    cr_assert_eq(len, rows * row_bytes(t, COLS), "%s", name);
    uint8_t *got = calloc(1, len);
    nf_error err = {0};
    cr_assert_eq(encode(t, x, 0, rows, COLS, imp, got, &err), NF_OK, "%s: %s", name, err.message);
    size_t first = len;
    for (size_t b = 0; b < len && first == len; b++)
        if (got[b] != want[b]) first = b;
    cr_expect_eq(first, len, "%s: first differing byte %zu (row %zu, block %zu, byte %zu)", name, first,
                 first / row_bytes(t, COLS), first % row_bytes(t, COLS) / t->bb, first % t->bb);
    free(got);
    free(want);
}

Test(ggml_quant, same_bytes_as_ggml_other_path)
{
    float *x = source();
    size_t len;
    float *imp = (float *)nf_test_data(&len, "gguf/imatrix.f32");
    cr_assert_eq(len, sizeof(float) * COLS);
    for (size_t i = 0; i < NTYPES; i++) {
        if (is_iq(&TYPES[i])) expect_extra(&TYPES[i], "plain", x, ROWS, NULL); /* the fixture is the imatrix one */
        else expect_extra(&TYPES[i], "imatrix", x, ROWS, imp);
    }
    free(imp);
    free(x);
}

Test(ggml_quant, same_bytes_as_ggml_special_rows)
{
    size_t len;
    float *x = (float *)nf_test_data(&len, "gguf/extra/special.f32");
    cr_assert_eq(len, sizeof(float) * 6 * COLS);
    float *imp = (float *)nf_test_data(&len, "gguf/imatrix.f32");
    for (size_t i = 0; i < NTYPES; i++) {
        expect_extra(&TYPES[i], "special", x, 6, NULL);
        expect_extra(&TYPES[i], "special.imatrix", x, 6, imp);
    }
    free(imp);
    free(x);
}

/* ---------------------------------------------------------------- IQ2_XXS, IQ2_XS, IQ2_S */
/* ggml_iq2.c against ggml's bytes: the fixtures <t>.qbytes (made with imatrix.f32), the
 * special rows with it, and IQ2_S, which ggml also quantizes without one, on both sources
 * without it (tests/data/gguf/README.md).  IQ2_XXS and IQ2_XS need the importance vector. */

static const qtype IQ2[] = {
    {NF_FMT_GGUF_IQ2_XXS, "iq2_xxs", 256, 66},
    {NF_FMT_GGUF_IQ2_XS, "iq2_xs", 256, 74},
    {NF_FMT_GGUF_IQ2_S, "iq2_s", 256, 82},
};
#define NIQ2 (sizeof IQ2 / sizeof IQ2[0])
static bool iq2_needs_imatrix(const qtype *t) { return t->id != NF_FMT_GGUF_IQ2_S; }

/* The blocks of rows x COLS values x (with imp or not) equal gguf/<path> byte for byte. */
static void expect_file(const qtype *t, const char *path, const float *x, uint64_t rows, const float *imp)
{
    size_t len;
    uint8_t *want = nf_test_data(&len, "gguf/%s", path);
    cr_assert_eq(len, rows * row_bytes(t, COLS), "%s", path);
    uint8_t *got = calloc(1, len);
    nf_error err = {0};
    cr_assert_eq(encode(t, x, 0, rows, COLS, imp, got, &err), NF_OK, "%s: %s", path, err.message);
    size_t first = len;
    for (size_t b = 0; b < len && first == len; b++)
        if (got[b] != want[b]) first = b;
    cr_expect_eq(first, len, "%s: first differing byte %zu (row %zu, block %zu, byte %zu): got 0x%02x, ggml 0x%02x",
                 path, first, first / row_bytes(t, COLS), first % row_bytes(t, COLS) / t->bb, first % t->bb,
                 first < len ? got[first] : 0, first < len ? want[first] : 0);
    free(got);
    free(want);
}

static void expect_iq2(const qtype *t)
{
    float *x = source();
    size_t len;
    float *sp = (float *)nf_test_data(&len, "gguf/extra/special.f32");
    cr_assert_eq(len, sizeof(float) * 6 * COLS);
    float *imp = (float *)nf_test_data(&len, "gguf/imatrix.f32");
    char path[96];
    snprintf(path, sizeof path, "%s.qbytes", t->stem);
    expect_file(t, path, x, ROWS, imp);
    snprintf(path, sizeof path, "extra/%s.special.imatrix.qbytes", t->stem);
    expect_file(t, path, sp, 6, imp);
    if (!iq2_needs_imatrix(t)) {
        snprintf(path, sizeof path, "extra/%s.plain.qbytes", t->stem);
        expect_file(t, path, x, ROWS, NULL);
        snprintf(path, sizeof path, "extra/%s.special.qbytes", t->stem);
        expect_file(t, path, sp, 6, NULL);
    }
    free(imp);
    free(sp);
    free(x);
}

Test(ggml_quant, iq2_xxs_same_bytes_as_ggml) { expect_iq2(&IQ2[0]); }
Test(ggml_quant, iq2_xs_same_bytes_as_ggml) { expect_iq2(&IQ2[1]); }
Test(ggml_quant, iq2_s_same_bytes_as_ggml) { expect_iq2(&IQ2[2]); }

/* ggml_quantize_requires_imatrix: IQ2_XXS and IQ2_XS without an importance vector are a usage
 * error naming the tensor and the type, before anything is encoded; IQ2_S is not. */
Test(ggml_quant, iq2_importance_vector_required)
{
    float *x = source();
    uint8_t blocks[2 * 82];
    for (size_t i = 0; i < NIQ2; i++) {
        const nf_format *fmt = nf_format_by_id(IQ2[i].id);
        nf_error err = {0};
        cr_expect_eq(nf_method_check_target(NF_METHOD_GGML_QUANTIZE, fmt, &err), NF_OK, "%s", err.message);
        nf_status st = encode(&IQ2[i], x, 0, 1, COLS, NULL, blocks, &err);
        nf_status choice = nf_method_check_choice(NF_METHOD_GGML_QUANTIZE, fmt, NULL, NULL);
        if (!iq2_needs_imatrix(&IQ2[i])) {
            cr_expect_eq(st, NF_OK, "%s: %s", IQ2[i].stem, err.message);
            cr_expect_eq(choice, NF_OK);
            continue;
        }
        cr_expect_eq(st, NF_ERR_USAGE, "%s", IQ2[i].stem);
        cr_expect_eq(choice, NF_ERR_USAGE, "%s", IQ2[i].stem);
        char want[96];
        snprintf(want, sizeof want, "tensor 'w': ggml_quantize into gguf_%s needs an importance vector", IQ2[i].stem);
        cr_expect(strstr(err.message, want), "%s", err.message);
        /* other methods and an importance vector are fine */
        float imp[COLS];
        for (int j = 0; j < COLS; j++) imp[j] = 1.0f;
        nf_method_params p = {.importance = imp, .importance_len = COLS};
        cr_expect_eq(nf_method_check_choice(NF_METHOD_GGML_QUANTIZE, fmt, &p, NULL), NF_OK);
        cr_expect_eq(nf_method_check_choice(NF_METHOD_IMPORT_ENCODED, fmt, NULL, NULL), NF_OK);
    }
    free(x);
}

/* A row length off the 256-value block, a NaN, and cuts of the rows into chunks. */
Test(ggml_quant, iq2_rows)
{
    float *x = source();
    size_t len;
    float *imp = (float *)nf_test_data(&len, "gguf/imatrix.f32");
    for (size_t i = 0; i < NIQ2; i++) {
        const qtype *t = &IQ2[i];
        size_t rb = row_bytes(t, COLS);
        uint8_t *whole = calloc(ROWS, rb), *cut = calloc(ROWS, rb);
        nf_error err = {0};
        cr_assert_eq(encode(t, x, 0, 1, 288, imp, whole, &err), NF_ERR_INVALID, "%s", t->stem);
        char want[128];
        snprintf(want, sizeof want, "row length 288 is not a multiple of gguf_%s's block of 256 values", t->stem);
        cr_expect(strstr(err.message, "tensor 'w'") && strstr(err.message, want), "%s", err.message);
        float row[COLS];
        memcpy(row, x, sizeof row);
        row[300] = NAN;
        cr_assert_eq(encode(t, row, 7, 1, COLS, imp, whole, &err), NF_ERR_INVALID, "%s", t->stem);
        cr_expect(strstr(err.message, "tensor 'w': row 7 col 300: source value NaN is not finite"), "%s", err.message);
        cr_assert_eq(encode(t, x, 0, ROWS, COLS, imp, whole, NULL), NF_OK);
        for (uint64_t r = 0; r < ROWS; r += 5) {
            uint64_t n = ROWS - r < 5 ? ROWS - r : 5;
            cr_assert_eq(encode(t, x + r * COLS, r, n, COLS, imp, cut + r * rb, NULL), NF_OK);
        }
        cr_expect_eq(memcmp(whole, cut, ROWS * rb), 0, "%s", t->stem);
        free(whole);
        free(cut);
    }
    free(imp);
    free(x);
}

/* Values whose block scale overflows binary16, and values below 2^64 whose squares sum past
 * binary32 (ggml's weights become infinite or NaN, and ggml would store an infinite d or abort):
 * refused with exit status 1 naming the row and block, never a crash. */
Test(ggml_quant, iq2_refuses_huge_values)
{
    static float x[256], imp[256];
    uint8_t blocks[82];
    for (size_t j = 0; j < 256; j++) imp[j] = 1.0f;
    for (size_t i = 0; i < NIQ2; i++) {
        for (size_t j = 0; j < 256; j++) x[j] = (j % 2 ? 1.0f : -1.0f) * 1e10f * (float)(j % 5 + 1);
        nf_error err = {0};
        cr_assert_eq(encode(&IQ2[i], x, 2, 1, 256, imp, blocks, &err), NF_ERR_INVALID, "%s", IQ2[i].stem);
        cr_expect(strstr(err.message, "tensor 'w': row 2 block 0 (cols 0..255): ") &&
                      strstr(err.message, "too large for binary16"),
                  "%s: %s", IQ2[i].stem, err.message);
        for (size_t j = 0; j < 256; j++) x[j] = (j % 3 ? 1.0f : -1.0f) * 1.5e19f;
        cr_assert_eq(encode(&IQ2[i], x, 2, 1, 256, imp, blocks, &err), NF_ERR_INVALID, "%s", IQ2[i].stem);
        cr_expect(strstr(err.message, "tensor 'w': row 2 block 0 (cols 0..255): "), "%s: %s", IQ2[i].stem, err.message);
    }
}

/* ---------------------------------------------------------------- IQ1_S, IQ1_M */

/* ggml_quantize_requires_imatrix holds for IQ1_S: ggml quantizes it only with an importance
 * vector, so the fixture and every IQ1_S vector are made with imatrix.f32. */
static const qtype IQ1[] = {{NF_FMT_GGUF_IQ1_S, "iq1_s", 256, 50}, {NF_FMT_GGUF_IQ1_M, "iq1_m", 256, 56}};
#define IQ1_S (&IQ1[0])
#define IQ1_M (&IQ1[1])
#define NIQ1 (sizeof IQ1 / sizeof IQ1[0])

/* The fixtures of MANIFEST.md (imatrix.f32), and IQ1_M without importance (extra/). */
Test(ggml_quant, iq1_same_bytes_as_ggml)
{
    float *x = source();
    size_t len;
    float *imp = (float *)nf_test_data(&len, "gguf/imatrix.f32");
    for (size_t i = 0; i < NIQ1; i++) {
        size_t n;
        uint8_t *want = nf_test_data(&n, "gguf/%s.qbytes", IQ1[i].stem);
        cr_assert_eq(n, ROWS * row_bytes(&IQ1[i], COLS), "%s", IQ1[i].stem);
        uint8_t *got = calloc(1, n);
        nf_error err = {0};
        cr_assert_eq(encode(&IQ1[i], x, 0, ROWS, COLS, imp, got, &err), NF_OK, "%s: %s", IQ1[i].stem, err.message);
        size_t first = n;
        for (size_t b = 0; b < n && first == n; b++)
            if (got[b] != want[b]) first = b;
        cr_expect_eq(first, n, "%s: first differing byte %zu (row %zu, block %zu, byte %zu): got 0x%02x, ggml 0x%02x",
                     IQ1[i].stem, first, first / row_bytes(&IQ1[i], COLS), first % row_bytes(&IQ1[i], COLS) / IQ1[i].bb,
                     first % IQ1[i].bb, first < n ? got[first] : 0, first < n ? want[first] : 0);
        free(got);
        free(want);
    }
    expect_extra(IQ1_M, "plain", x, ROWS, NULL);
    free(imp);
    free(x);
}

/* special.f32 (all zero, an outlier, subnormals, a huge range, -0.0) and iq1.special.f32 (ties
 * the sort must keep in column order, groups below IQ1_M's and IQ1_S's zero thresholds, scales
 * that flip sign, sparse groups, values near binary16's limit, a constant row): tests/data/gguf/README.md. */
Test(ggml_quant, iq1_same_bytes_as_ggml_special_rows)
{
    size_t len;
    float *imp = (float *)nf_test_data(&len, "gguf/imatrix.f32");
    const char *files[] = {"special", "iq1.special"}, *variants[] = {"special", "iq1special"};
    for (size_t f = 0; f < 2; f++) {
        float *x = (float *)nf_test_data(&len, "gguf/extra/%s.f32", files[f]);
        cr_assert_eq(len, sizeof(float) * 6 * COLS);
        char v[64];
        snprintf(v, sizeof v, "%s.imatrix", variants[f]);
        expect_extra(IQ1_S, v, x, 6, imp);
        expect_extra(IQ1_M, v, x, 6, imp);
        expect_extra(IQ1_M, variants[f], x, 6, NULL);
        free(x);
    }
    free(imp);
}

Test(ggml_quant, iq1_chunks_do_not_matter)
{
    float *x = source();
    size_t len;
    float *imp = (float *)nf_test_data(&len, "gguf/imatrix.f32");
    for (size_t i = 0; i < NIQ1; i++) {
        size_t rb = row_bytes(&IQ1[i], COLS);
        uint8_t *whole = calloc(ROWS, rb), *cut = calloc(ROWS, rb);
        cr_assert_eq(encode(&IQ1[i], x, 0, ROWS, COLS, imp, whole, NULL), NF_OK);
        for (uint64_t r = 0; r < ROWS; r += 5) {
            uint64_t n = ROWS - r < 5 ? ROWS - r : 5;
            cr_assert_eq(encode(&IQ1[i], x + r * COLS, r, n, COLS, imp, cut + r * rb, NULL), NF_OK);
        }
        cr_expect_eq(memcmp(whole, cut, ROWS * rb), 0, "%s", IQ1[i].stem);
        free(whole);
        free(cut);
    }
    free(imp);
    free(x);
}

/* IQ1_S without an importance vector is a usage error naming the tensor and the type (ggml
 * asserts one); IQ1_M takes either.  A row length off the 256-value block is refused. */
Test(ggml_quant, iq1_refusals)
{
    float *x = source();
    size_t len;
    float *imp = (float *)nf_test_data(&len, "gguf/imatrix.f32");
    uint8_t blocks[2 * 56];
    nf_error err = {0};
    cr_assert_eq(encode(IQ1_S, x, 3, 1, COLS, NULL, blocks, &err), NF_ERR_USAGE);
    cr_expect(strstr(err.message, "tensor 'w'") &&
                  strstr(err.message, "ggml_quantize into gguf_iq1_s needs an importance vector") &&
                  strstr(err.message, "ggml quantizes gguf_iq1_s only with one"),
              "%s", err.message);
    cr_expect_eq(encode(IQ1_M, x, 3, 1, COLS, NULL, blocks, &err), NF_OK, "%s", err.message);
    for (size_t i = 0; i < NIQ1; i++) {
        cr_assert_eq(encode(&IQ1[i], x, 0, 1, 288, imp, blocks, &err), NF_ERR_INVALID, "%s", IQ1[i].stem);
        char want[128];
        snprintf(want, sizeof want, "row length 288 is not a multiple of gguf_%s's block of 256 values", IQ1[i].stem);
        cr_expect(strstr(err.message, "tensor 'w'") && strstr(err.message, want), "%s", err.message);
        cr_expect_eq(nf_method_check_target(NF_METHOD_GGML_QUANTIZE, nf_format_by_id(IQ1[i].id), NULL), NF_OK);
    }
    free(imp);
    free(x);
}

/* Inputs on which ggml's IQ1 encoders overflow binary32 (an importance value near FLT_MAX, values
 * whose squares sum past it): where ggml still writes a block (IQ1_S: all zero) the method writes
 * the same; where ggml aborts (its assertion that the scale is not NaN: checked with ggml
 * d99724f2's quantize_iq1_s / quantize_iq1_m) the method refuses the block with exit status 1. */
Test(ggml_quant, iq1_blocks_ggml_aborts_on_are_refused)
{
    static float x[256], imp[256];
    uint8_t blk[56];
    static const uint8_t zero[56];
    for (int kase = 0; kase < 3; kase++) {
        for (int c = 0; c < 256; c++) {
            x[c] = kase == 0 ? sinf((float)c) : 0.01f * sinf((float)c);
            imp[c] = kase == 0 ? 3.4e38f : 1.0f;
        }
        if (kase == 1) x[10] = 1.5e19f, x[20] = -1.5e19f; /* below 2^64, its square near FLT_MAX */
        if (kase == 2) x[5] = 2.0f, imp[5] = 3.4e38f;
        for (size_t i = 0; i < NIQ1; i++) {
            nf_error err = {0};
            nf_status st = encode(&IQ1[i], x, 7, 1, 256, imp, blk, &err);
            if (kase < 2 && IQ1[i].id == NF_FMT_GGUF_IQ1_S) { /* ggml: a block of zeros */
                cr_expect_eq(st, NF_OK, "case %d %s: %s", kase, IQ1[i].stem, err.message);
                cr_expect_eq(memcmp(blk, zero, 50), 0, "case %d %s", kase, IQ1[i].stem);
                continue;
            }
            cr_expect_eq(st, NF_ERR_INVALID, "case %d %s", kase, IQ1[i].stem);
            cr_expect(strstr(err.message, "tensor 'w': row 7 block 0 (cols 0..255): the values are too large") &&
                          strstr(err.message, "ggml's encoder stops with an assertion"),
                      "case %d %s: %s", kase, IQ1[i].stem, err.message);
        }
    }
}
