/* import_encoded of compressed-tensors FP8 rows (docs/methods.md, import_encoded) into
 * fp8_e4m3fn_row_bf16: BF16 and F32 scales per row ([N] and [N,1]) and per tensor, the single
 * RNE rounding of F32 scales to BF16 (expected words from the spec's integer formula
 * (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16, evaluated by hand), docs/vectors.md item 8's
 * bytes and values, refusals, and chunk independence. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "support/test_float.h"

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

static const nf_format *BF16ROW(void) { return nf_format_lookup("fp8_e4m3fn_row_bf16"); }

/* One FP8 source: codes [n,k] and a scale tensor of `dtype` and shape. */
typedef struct fp8_src {
    uint64_t codes_shape[2], scale_shape[2];
    nf_import_tensor codes, scales;
    uint8_t *code_bytes;
    uint8_t scale_bytes[4 * 64];
    uint64_t n, k;
} fp8_src;

static void make(fp8_src *s, uint64_t n, uint64_t k, const char *dtype, uint32_t scale_rank, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    s->k = k;
    s->codes_shape[0] = n;
    s->codes_shape[1] = k;
    s->scale_shape[0] = scale_rank == 0 ? 1 : n;
    s->scale_shape[1] = 1;
    s->codes = (nf_import_tensor){"model.layers.2.mlp.down_proj.weight", "F8_E4M3", -1, 2, s->codes_shape};
    s->scales = (nf_import_tensor){"model.layers.2.mlp.down_proj.weight_scale", dtype, -1, scale_rank,
                                   scale_rank ? s->scale_shape : NULL};
    s->code_bytes = malloc(n * k);
    rng r = {seed};
    for (uint64_t i = 0; i < n * k; i++) { /* any code but the NaNs */
        uint8_t c = (uint8_t)rng_next(&r);
        if ((c & 0x7F) == 0x7F) c ^= 1;
        s->code_bytes[i] = c;
    }
}

static void put_scale(fp8_src *s, uint64_t i, uint32_t word)
{
    bool f32 = strcmp(s->scales.dtype, "F32") == 0;
    for (int b = 0; b < (f32 ? 4 : 2); b++)
        s->scale_bytes[i * (f32 ? 4 : 2) + (uint64_t)b] = (uint8_t)(word >> (8 * b));
}

static size_t scale_size(const fp8_src *s) { return strcmp(s->scales.dtype, "F32") == 0 ? 4 : 2; }

static nf_status init(nf_import *imp, const fp8_src *s, nf_error *err)
{
    return nf_import_init_fp8(imp, BF16ROW(), &s->codes, &s->scales, s->scale_bytes, scale_size(s), err);
}

static nf_import init_ok(const fp8_src *s)
{
    nf_import imp;
    nf_error err = {0};
    nf_status st = init(&imp, s, &err);
    cr_assert_eq(st, NF_OK, "%s", err.message);
    return imp;
}

static nf_status import_rows(const nf_import *imp, const fp8_src *s, uint64_t r0, uint64_t rows, nf_words *w,
                             uint64_t out_row, nf_error *err)
{
    nf_import_chunk c = {.first_row = r0, .rows = rows, .data = s->code_bytes + r0 * s->k, .data_len = rows * s->k};
    if (imp->scale_row_bytes) {
        c.scales = s->scale_bytes + r0 * imp->scale_row_bytes;
        c.scales_len = rows * imp->scale_row_bytes;
    }
    return nf_import_rows(imp, &c, w, out_row, err);
}

static nf_words import_whole(const nf_import *imp, const fp8_src *s, nf_geometry *g)
{
    nf_error err = {0};
    cr_assert_eq(nf_import_geometry(imp, g, &err), NF_OK, "%s", err.message);
    nf_words w;
    cr_assert_eq(nf_words_alloc(&w, g, s->n, &err), NF_OK);
    nf_status st = import_rows(imp, s, 0, s->n, &w, 0, &err);
    cr_assert_eq(st, NF_OK, "%s", err.message);
    cr_assert_eq(memcmp(w.codes8, s->code_bytes, s->n * s->k), 0, "codes are copied");
    cr_assert_eq(nf_words_check(g, &w, 0, &err), NF_OK, "%s", err.message);
    return w;
}

static void expect_rows_refused(const fp8_src *s, const char *n1, const char *n2)
{
    nf_import imp = init_ok(s);
    nf_geometry g;
    nf_error err = {0};
    cr_assert_eq(nf_import_geometry(&imp, &g, &err), NF_OK);
    nf_words w;
    cr_assert_eq(nf_words_alloc(&w, &g, s->n, &err), NF_OK);
    cr_assert_eq(import_rows(&imp, s, 0, s->n, &w, 0, &err), NF_ERR_INVALID, "%s", err.message);
    cr_assert_not_null(strstr(err.message, n1), "message '%s' lacks '%s'", err.message, n1);
    if (n2) cr_assert_not_null(strstr(err.message, n2), "message '%s' lacks '%s'", err.message, n2);
    nf_words_free(&w);
}

static void expect_init_refused(const fp8_src *s, nf_status want, const char *needle)
{
    nf_import imp;
    nf_error err = {0};
    nf_status st = init(&imp, s, &err);
    cr_assert_eq(st, want, "status %d (%s)", st, err.message);
    if (needle) cr_assert_not_null(strstr(err.message, needle), "message '%s' lacks '%s'", err.message, needle);
}

/* ------------------------------------------------------------------ vectors */

/* docs/vectors.md item 8 through the import: [2,4] codes 00 80 38 B8 / 40 C0 7E FE, BF16 scales
 * 0x3F00 (0.5) and 0x4000 (2.0) -> 260 bytes and values [0, -0, 0.5, -0.5; 4, -4, 896, -896]. */
Test(import_fp8, vector_bf16_per_row)
{
    static const uint8_t codes[8] = {0x00, 0x80, 0x38, 0xB8, 0x40, 0xC0, 0x7E, 0xFE};
    for (uint32_t rank = 1; rank <= 2; rank++) { /* [N] and [N,1] */
        fp8_src s;
        make(&s, 2, 4, "BF16", rank, 1);
        memcpy(s.code_bytes, codes, 8);
        put_scale(&s, 0, 0x3F00);
        put_scale(&s, 1, 0x4000);
        nf_import imp = init_ok(&s);
        cr_assert_eq(imp.kind, NF_IMPORT_FP8_COMPRESSED);
        cr_assert_eq(imp.scale_row_bytes, 2);
        cr_assert(!imp.scale_per_tensor);
        nf_geometry g;
        nf_words w = import_whole(&imp, &s, &g);
        cr_assert_eq(w.scales[0], 0x3F00);
        cr_assert_eq(w.scales[1], 0x4000);
        cr_assert_eq(g.bytes, 260);
        uint8_t out[260];
        nf_error err = {0};
        cr_assert_eq(nf_layout_encode(&g, &w, out, &err), NF_OK, "%s", err.message);
        cr_assert_eq(memcmp(out, codes, 8), 0);
        for (int i = 8; i < 256; i++) cr_assert_eq(out[i], 0);
        static const uint8_t sc[4] = {0x00, 0x3F, 0x00, 0x40};
        cr_assert_eq(memcmp(out + 256, sc, 4), 0);
        float vals[8];
        cr_assert_eq(nf_words_to_f32(&g, &w, 0, vals, &err), NF_OK);
        static const float want[8] = {0.0f, -0.0f, 0.5f, -0.5f, 4.0f, -4.0f, 896.0f, -896.0f};
        for (int i = 0; i < 8; i++) cr_assert_eq(bits_of_f32(vals[i]), bits_of_f32(want[i]), "value %d", i);
        nf_words_free(&w);
        free(s.code_bytes);
    }
}

/* F32 row scales round to BF16 once, nearest with ties to even.  Truncation, or rounding ties
 * away, would give a different word in the marked rows. */
Test(import_fp8, f32_per_row_rounding)
{
    static const uint32_t f32[][2] = {
        {0x3F808000u, 0x3F80}, /* tie, even below (ties-away would give 3F81) */
        {0x3F818000u, 0x3F82}, /* tie, even above (truncation would give 3F81) */
        {0x3F808001u, 0x3F81}, /* just above the tie */
        {0x3F80FFFFu, 0x3F81}, /* truncation would give 3F80 */
        {0x3E2AAAABu, 0x3E2B}, /* 1/6 */
        {0x7F7F7FFFu, 0x7F7F}, /* largest that stays finite */
        {0x00018000u, 0x0002}, /* subnormal tie, rounds up to even */
        {0x3F7FFFFFu, 0x3F80}, /* carry into the exponent */
    };
    const uint64_t n = sizeof f32 / sizeof f32[0];
    for (uint32_t rank = 1; rank <= 2; rank++) {
        fp8_src s;
        make(&s, n, 48, "F32", rank, 2);
        for (uint64_t i = 0; i < n; i++) put_scale(&s, i, f32[i][0]);
        /* under the largest finite multiplier only codes of magnitude <= 1.0 (0x38) keep the
         * values finite; larger ones are refused as overflowing binary32 (fp8_overflow_refused) */
        for (uint64_t j = 0; j < 48; j++) {
            uint8_t *c = &s.code_bytes[5 * 48 + j];
            *c = (uint8_t)((*c & 0x80) | ((*c & 0x7F) % 0x39));
        }
        nf_import imp = init_ok(&s);
        cr_assert(imp.scale_f32);
        cr_assert_eq(imp.scale_row_bytes, 4);
        nf_geometry g;
        nf_words w = import_whole(&imp, &s, &g);
        for (uint64_t i = 0; i < n; i++)
            cr_assert_eq(w.scales[i], f32[i][1], "F32 0x%08X -> 0x%04X, want 0x%04X", f32[i][0], w.scales[i],
                         f32[i][1]);
        nf_words_free(&w);
        free(s.code_bytes);
    }
}

Test(import_fp8, per_tensor_scales)
{
    /* F32 rank 0, rounded once and replicated */
    fp8_src s;
    make(&s, 6, 40, "F32", 0, 3);
    put_scale(&s, 0, 0x3F818000u);
    nf_import imp = init_ok(&s);
    cr_assert(imp.scale_per_tensor);
    cr_assert_eq(imp.scale_row_bytes, 0);
    cr_assert_eq(imp.tensor_scale, 0x3F82);
    cr_assert_eq(imp.source_scalar, 0x3F818000u);
    nf_geometry g;
    nf_words w = import_whole(&imp, &s, &g);
    for (int r = 0; r < 6; r++) cr_assert_eq(w.scales[r], 0x3F82);
    nf_words_free(&w);
    /* BF16 [1] and F32 [1,1] */
    s.scales.dtype = "BF16";
    s.scales.rank = 1;
    s.scales.shape = s.scale_shape;
    s.scale_shape[0] = 1;
    put_scale(&s, 0, 0x4000);
    imp = init_ok(&s);
    cr_assert_eq(imp.tensor_scale, 0x4000);
    w = import_whole(&imp, &s, &g);
    for (int r = 0; r < 6; r++) cr_assert_eq(w.scales[r], 0x4000);
    nf_words_free(&w);
    s.scales.dtype = "F32";
    s.scales.rank = 2;
    put_scale(&s, 0, 0x3F808000u);
    imp = init_ok(&s);
    cr_assert_eq(imp.tensor_scale, 0x3F80);
    /* the per-tensor value must be given */
    nf_error err = {0};
    cr_assert_eq(nf_import_init_fp8(&imp, BF16ROW(), &s.codes, &s.scales, NULL, 0, &err), NF_ERR_USAGE);
    cr_assert_eq(nf_import_init_fp8(&imp, BF16ROW(), &s.codes, &s.scales, s.scale_bytes, 2, &err), NF_ERR_USAGE);
    /* a per-tensor scale that is refused is refused at init */
    put_scale(&s, 0, 0xBF800000u);
    expect_init_refused(&s, NF_ERR_INVALID, "F32 scale 0xBF800000 is negative");
    put_scale(&s, 0, 0x7F7F8000u);
    expect_init_refused(&s, NF_ERR_INVALID, "rounds to BF16 0x7F80, infinity");
    free(s.code_bytes);
}

/* ------------------------------------------------------------------ refusals */

Test(import_fp8, refuses_nan_codes)
{
    static const uint8_t nan[2] = {0x7F, 0xFF};
    for (int i = 0; i < 2; i++) {
        fp8_src s;
        make(&s, 4, 16, "BF16", 1, 4);
        for (int r = 0; r < 4; r++) put_scale(&s, (uint64_t)r, 0x3F80);
        s.code_bytes[2 * 16 + 9] = nan[i];
        char word[32];
        snprintf(word, sizeof word, "code 0x%02X is NaN", nan[i]);
        expect_rows_refused(&s, "model.layers.2.mlp.down_proj.weight: row 2 col 9", word);
        free(s.code_bytes);
    }
}

/* A finite code times a finite row multiplier whose product overflows binary32 (448 x 0x7F7F) is
 * refused naming row, column, code and multiplier (docs/dialects.md "Bad input"); the largest
 * code that stays finite under it (1.0, 0x38) is not. */
Test(import_fp8, fp8_overflow_refused)
{
    fp8_src s;
    make(&s, 4, 16, "BF16", 1, 5);
    for (uint64_t i = 0; i < 4 * 16; i++)
        s.code_bytes[i] = (uint8_t)((s.code_bytes[i] & 0x80) | ((s.code_bytes[i] & 0x7F) % 0x39));
    for (int r = 0; r < 4; r++) put_scale(&s, (uint64_t)r, 0x7F7F);
    nf_import imp = init_ok(&s);
    nf_geometry g;
    nf_words w = import_whole(&imp, &s, &g); /* every value finite: accepted */
    nf_words_free(&w);
    s.code_bytes[3 * 16 + 11] = 0xFE; /* -448 */
    expect_rows_refused(&s, "model.layers.2.mlp.down_proj.weight: row 3 col 11",
                        "E4M3 code 0xFE x row scale BF16 0x7F7F");
    free(s.code_bytes);
}

Test(import_fp8, refuses_bad_row_scales)
{
    static const struct {
        const char *dtype;
        uint32_t w;
        const char *why;
    } bad[] = {
        {"BF16", 0xBF80, "BF16 scale 0xBF80 is negative"},
        {"BF16", 0x8000, "BF16 scale 0x8000 is -0"},
        {"BF16", 0x7F80, "BF16 scale 0x7F80 is +infinity"},
        {"BF16", 0xFF80, "BF16 scale 0xFF80 is -infinity"},
        {"BF16", 0x7FC0, "BF16 scale 0x7FC0 is NaN"},
        {"BF16", 0xFFC1, "NaN"},
        {"F32", 0x80000000u, "F32 scale 0x80000000 is -0"},
        {"F32", 0xBF800000u, "F32 scale 0xBF800000 is negative"},
        {"F32", 0x80000001u, "is negative"}, /* rounds to -0, refused before rounding */
        {"F32", 0x7F800000u, "is +infinity"},
        {"F32", 0x7FC00000u, "is NaN"},
        {"F32", 0x7F7F8000u, "rounds to BF16 0x7F80, infinity"},
        {"F32", 0x7F7FFFFFu, "rounds to BF16 0x7F80, infinity"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fp8_src s;
        make(&s, 4, 16, bad[i].dtype, 2, 5);
        for (int r = 0; r < 4; r++) put_scale(&s, (uint64_t)r, strcmp(bad[i].dtype, "F32") ? 0x3F80 : 0x3F800000u);
        put_scale(&s, 3, bad[i].w);
        expect_rows_refused(&s, "model.layers.2.mlp.down_proj.weight_scale: row 3", bad[i].why);
        free(s.code_bytes);
    }
}

Test(import_fp8, zero_scale_rules)
{
    /* +0 (BF16 or F32, or F32 that rounds to +0) admits 0x00 and 0x80 only */
    static const struct {
        const char *dtype;
        uint32_t w;
    } zeros[] = {{"BF16", 0x0000}, {"F32", 0x00000000u}, {"F32", 0x00000001u}, {"F32", 0x00008000u}};
    for (size_t i = 0; i < 4; i++) {
        fp8_src s;
        make(&s, 3, 16, zeros[i].dtype, 1, 6);
        for (int r = 0; r < 3; r++) put_scale(&s, (uint64_t)r, strcmp(zeros[i].dtype, "F32") ? 0x3F80 : 0x3F800000u);
        put_scale(&s, 1, zeros[i].w);
        for (int j = 0; j < 16; j++) s.code_bytes[16 + j] = j % 2 ? 0x80 : 0x00;
        nf_import imp = init_ok(&s);
        nf_geometry g;
        nf_words w = import_whole(&imp, &s, &g);
        cr_assert_eq(w.scales[1], 0x0000);
        nf_words_free(&w);
        s.code_bytes[16 + 7] = 0x38;
        expect_rows_refused(
            &s, "model.layers.2.mlp.down_proj.weight: row 1 col 7: code 0x38 is nonzero under the row's +0 scale",
            NULL);
        if (zeros[i].w > 0) {
            char src_word[32];
            snprintf(src_word, sizeof src_word, "F32 0x%08X", zeros[i].w);
            expect_rows_refused(&s, src_word, "weight_scale");
        }
        free(s.code_bytes);
    }
    /* per-tensor +0 scale with a nonzero code */
    fp8_src s;
    make(&s, 3, 16, "F32", 0, 7);
    put_scale(&s, 0, 0x00000001u);
    memset(s.code_bytes, 0, 48);
    s.code_bytes[40] = 0x01;
    expect_rows_refused(&s, "row 2 col 8", "F32 0x00000001");
    free(s.code_bytes);
}

Test(import_fp8, refuses_bad_declarations)
{
    fp8_src s;
    make(&s, 4, 16, "BF16", 1, 8);
    nf_import imp;
    nf_error err = {0};
    /* fp8_e4m3fn_row_fp16 is not an import target */
    cr_assert_eq(nf_import_init_fp8(&imp, nf_format_lookup("fp8_e4m3fn_row_fp16"), &s.codes, &s.scales, NULL, 0, &err),
                 NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "fp8_e4m3fn_row_fp16 is not an import_encoded target"), "%s", err.message);
    cr_assert_eq(nf_import_init_fp8(&imp, nf_format_lookup("nvfp4"), &s.codes, &s.scales, NULL, 0, &err),
                 NF_ERR_INVALID);
    /* scale dtype and shapes */
    s.scales.dtype = "F16";
    expect_init_refused(&s, NF_ERR_INVALID, "dtype F16 is not BF16");
    s.scales.dtype = "BF16";
    s.codes.dtype = "U8";
    expect_init_refused(&s, NF_ERR_INVALID, "dtype U8 is not F8_E4M3");
    s.codes.dtype = "F8_E4M3";
    s.scale_shape[0] = 3;
    expect_init_refused(&s, NF_ERR_INVALID, "shape [3] is neither one scale per row");
    s.scale_shape[0] = 4;
    s.scales.rank = 2;
    s.scale_shape[1] = 2;
    expect_init_refused(&s, NF_ERR_INVALID, "shape [4,2]");
    s.scale_shape[1] = 1;
    s.codes.rank = 3;
    uint64_t c3[3] = {1, 4, 16};
    s.codes.shape = c3;
    expect_init_refused(&s, NF_ERR_INVALID, "matrix");
    s.codes.rank = 2;
    s.codes.shape = s.codes_shape;
    /* names: the scale must be the same layer's weight_scale */
    s.scales.name = "model.layers.2.mlp.up_proj.weight_scale";
    expect_init_refused(&s, NF_ERR_INVALID, "same layer");
    s.scales.name = "model.layers.2.mlp.down_proj.input_scale";
    expect_init_refused(&s, NF_ERR_INVALID, "weight_scale");
    s.scales.name = "model.layers.2.mlp.down_proj.weight_scale";
    s.codes.name = "model.layers.2.mlp.down_proj.weight_packed";
    expect_init_refused(&s, NF_ERR_INVALID, "'weight'");
    s.codes.name = "model.layers.2.mlp.down_proj.weight";
    init_ok(&s);
    free(s.code_bytes);
}

/* ------------------------------------------------------------------ chunks */

Test(import_fp8, chunk_independence)
{
    const uint64_t n = 50, k = 24;
    for (int variant = 0; variant < 3; variant++) {
        fp8_src s;
        make(&s, n, k, variant == 1 ? "F32" : "BF16", variant == 2 ? 0 : 1, 9 + (uint64_t)variant);
        rng r = {77};
        for (uint64_t i = 0; i < n; i++)
            put_scale(&s, i,
                      variant == 1 ? (uint32_t)(0x3C000000u + rng_below(&r, 0x4000000u))
                                   : (uint32_t)(0x3C00 + rng_below(&r, 0x400)));
        nf_import imp = init_ok(&s);
        nf_geometry g;
        nf_words whole = import_whole(&imp, &s, &g);
        nf_error err = {0};
        for (int trial = 0; trial < 10; trial++) {
            nf_words placed;
            cr_assert_eq(nf_words_alloc(&placed, &g, n + 5, &err), NF_OK);
            uint64_t r0 = 0;
            while (r0 < n) {
                uint64_t rows = 1 + rng_below(&r, n - r0);
                nf_words part;
                cr_assert_eq(nf_words_alloc(&part, &g, rows, &err), NF_OK);
                cr_assert_eq(import_rows(&imp, &s, r0, rows, &part, 0, &err), NF_OK, "%s", err.message);
                cr_assert_eq(import_rows(&imp, &s, r0, rows, &placed, r0 + 5, &err), NF_OK, "%s", err.message);
                cr_assert_eq(memcmp(part.codes8, whole.codes8 + r0 * k, rows * k), 0);
                cr_assert_eq(memcmp(part.scales, whole.scales + r0, rows * 2), 0);
                nf_words_free(&part);
                r0 += rows;
            }
            cr_assert_eq(memcmp(placed.codes8 + 5 * k, whole.codes8, n * k), 0);
            cr_assert_eq(memcmp(placed.scales + 5, whole.scales, n * 2), 0);
            nf_words_free(&placed);
        }
        nf_words_free(&whole);
        free(s.code_bytes);
    }
}
