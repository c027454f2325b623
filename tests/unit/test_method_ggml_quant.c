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
    {NF_FMT_GGUF_Q8_0, "q8_0", 32, 34},   {NF_FMT_GGUF_Q4_0, "q4_0", 32, 18},   {NF_FMT_GGUF_Q5_0, "q5_0", 32, 22},
    {NF_FMT_GGUF_Q2_K, "q2_k", 256, 84},  {NF_FMT_GGUF_Q3_K, "q3_k", 256, 110}, {NF_FMT_GGUF_Q4_K, "q4_k", 256, 144},
    {NF_FMT_GGUF_Q5_K, "q5_k", 256, 176}, {NF_FMT_GGUF_Q6_K, "q6_k", 256, 210},
    /* MANIFEST.md: ggml wrote the IQ fixtures with imatrix.f32 */
    {NF_FMT_GGUF_IQ4_NL, "iq4_nl", 32, 18},  {NF_FMT_GGUF_IQ4_XS, "iq4_xs", 256, 136},
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
        cr_expect(strstr(err.message, "tensor 'w': row 2 block 0 (cols 0..") && strstr(err.message, "too large for binary16"),
                  "%s: %s", TYPES[i].stem, err.message);
        /* 2^64 and beyond: ggml's squared weights overflow and it would write zero scales */
        for (size_t j = 0; j < 256; j++) x[j] = 0.01f;
        x[200] = 3e19f;
        cr_assert_eq(encode(&TYPES[i], x, 2, 1, 256, NULL, blocks, &err), NF_ERR_INVALID, "%s", TYPES[i].stem);
        cr_expect(strstr(err.message, "tensor 'w': row 2 col 200: source value 3e+19 is too large for gguf_"), "%s: %s",
                  TYPES[i].stem, err.message);
    }
}

Test(ggml_quant, targets_and_parameters)
{
    nf_error err = {0};
    cr_assert_eq(nf_method_check_target(NF_METHOD_GGML_QUANTIZE, nf_format_by_id(NF_FMT_GGUF_Q2_0), NULL),
                 NF_ERR_INVALID);
    cr_assert_eq(nf_method_check_target(NF_METHOD_GGML_QUANTIZE, nf_format_by_id(NF_FMT_GGUF_IQ2_XXS), &err),
                 NF_ERR_INVALID);
    cr_expect(strstr(err.message, "ggml_quantize cannot target gguf_iq2_xxs"), "%s", err.message);
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
        cr_assert_eq(nf_ggml_dequant_row(nf_format_by_id(t->id), blocks + (size_t)r * row_bytes(t, COLS), COLS, y, NULL),
                     NF_OK);
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
        if (is_iq(t)) /* the IQ4 types' plain path weighs by x^2 instead */
            cr_expect_neq(memcmp(a, plain, n), 0, "%s: importance changed nothing", t->stem);
        else if (t->id != NF_FMT_GGUF_Q8_0) /* Q8_0 ignores it, as ggml does */
            cr_expect_neq(memcmp(a, plain, n), 0, "%s: importance changed nothing", t->stem);
        else
            cr_expect_eq(memcmp(a, plain, n), 0, "q8_0 must ignore the importance");
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
