/* cast_direct (docs/methods.md) and the method table: names, targets, source types, the
 * dispatcher.  Expected words are literals or come from oracles written here (docs/methods.md
 * 5.5's BF16 rounding formula, binary16 fields decoded through ldexp). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "support/test_float.h"

/* Little-endian bytes of n words of `size` bytes each. */
static uint8_t *pack(const uint64_t *words, size_t n, size_t size)
{
    uint8_t *b = malloc(n * size + 1);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < size; j++) b[i * size + j] = (uint8_t)(words[i] >> (8 * j));
    return b;
}

/* cast_direct of one row of n source words into out16 or out32. */
static nf_status cast(nf_format_id fid, nf_src_type type, const uint64_t *words, size_t n, uint16_t *out16,
                      uint32_t *out32, nf_error *err)
{
    uint8_t *data = pack(words, n, nf_src_type_size(type));
    nf_src_rows src = {.name = "t", .type = type, .data = data, .first_row = 9, .rows = 1, .cols = n};
    nf_words w = {.rows = 1, .cols = n, .w16 = out16, .w32 = out32};
    nf_status st = nf_cast_direct_rows(nf_format_by_id(fid), &src, &w, err);
    free(data);
    return st;
}

/* docs/methods.md, fp8_row_maxabs BF16 rounding formula, with cast_direct's canonical NaN. */
static uint16_t bf16_oracle(uint32_t bits)
{
    if ((bits & 0x7F800000u) == 0x7F800000u && (bits & 0x007FFFFFu)) return 0x7FC0;
    return (uint16_t)(((uint64_t)bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
}

/* binary16 -> binary32 word by fields (NaN payload moved to the top of the fraction). */
static uint32_t f16_to_f32_oracle(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    int e = (h >> 10) & 31, m = h & 1023;
    if (e == 31) return sign | 0x7F800000u | (uint32_t)m << 13;
    double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
    return sign | bits_of_f32((float)v);
}

/* ------------------------------------------------------------------ bf16 */

Test(cast_direct, f32_to_bf16_rounds_to_nearest_even)
{
    static const uint64_t in[] = {0x3F808000, 0x3F818000, 0x3F808001, 0x80000000, 0x00000001, 0x007FFFFF,
                                  0x80012345, 0x7F7F0000, 0xC2F7FFFF, 0x7F7F7FFF, 0x7F800000, 0xFF800000,
                                  0x7F800001, 0xFFC12345, 0x7FFFFFFF, 0x3F7FFFFF};
    static const uint16_t want[] = {0x3F80, 0x3F82, 0x3F81, 0x8000, 0x0000, 0x0080, 0x8001, 0x7F7F,
                                    0xC2F8, 0x7F7F, 0x7F80, 0xFF80, 0x7FC0, 0x7FC0, 0x7FC0, 0x3F80};
    enum { N = sizeof in / sizeof in[0] };
    uint16_t out[N];
    nf_error err = {0};
    cr_assert_eq(cast(NF_FMT_BF16, NF_SRC_F32, in, N, out, NULL, &err), NF_OK, "%s", err.message);
    for (size_t i = 0; i < N; i++)
        cr_expect_eq(out[i], want[i], "0x%08lx -> 0x%04x, want 0x%04x", (unsigned long)in[i], out[i], want[i]);
}

Test(cast_direct, f32_to_bf16_random_words)
{
    enum { N = 20000 };
    uint64_t *in = malloc(sizeof(uint64_t) * N);
    uint16_t *out = malloc(2 * N);
    uint64_t s = 0x452821E638D01377ull;
    for (size_t i = 0; i < N; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        in[i] = (uint32_t)(s >> 32);
        /* a finite value that rounds to infinity is refused (below): keep this row convertible */
        if ((in[i] & 0x7FFFFFFFu) >= 0x7F7F8000u && (in[i] & 0x7FFFFFFFu) < 0x7F800000u) in[i] &= 0xBFFFFFFFu;
    }
    nf_error err = {0};
    cr_assert_eq(cast(NF_FMT_BF16, NF_SRC_F32, in, N, out, NULL, &err), NF_OK, "%s", err.message);
    for (size_t i = 0; i < N; i++) cr_assert_eq(out[i], bf16_oracle((uint32_t)in[i]), "0x%08lx", (unsigned long)in[i]);
    free(in);
    free(out);
}

/* Finding F4: FLT_MAX cast to bf16 became +inf, with exit 0 and a valid artifact.  A finite
 * source value whose nearest bfloat16 is an infinity (|x| >= 0x7F7F8000, the midpoint above
 * the largest finite bf16 0x7F7F) is refused like a scale overflow, naming tensor, row and
 * column; the largest value below the midpoint becomes 0x7F7F; infinities and NaN of the
 * source are not values that overflow, and keep their meaning (docs/methods.md). */
Test(cast_direct, f32_to_bf16_refuses_a_finite_value_that_rounds_to_infinity)
{
    static const uint64_t over[] = {0x7F7F8000, 0x7F7FFFFF, 0xFF7F8000, 0xFF7FFFFF, 0x7F7FC000};
    for (size_t k = 0; k < sizeof over / sizeof over[0]; k++) {
        uint64_t in[4] = {0x3F800000, 0x40000000, over[k], 0x7F800000};
        uint16_t out[4];
        nf_error err = {0};
        cr_assert_eq(cast(NF_FMT_BF16, NF_SRC_F32, in, 4, out, NULL, &err), NF_ERR_INVALID, "0x%08llx",
                     (unsigned long long)over[k]);
        cr_expect(strstr(err.message, "tensor 't'") != NULL || strstr(err.message, "t:") != NULL, "%s", err.message);
        cr_expect(strstr(err.message, "row 9 col 2") != NULL, "%s", err.message);
        cr_expect(strstr(err.message, "overflows bfloat16") != NULL, "%s", err.message);
    }
    uint64_t edge[4] = {0x7F7F7FFF, 0xFF7F7FFF, 0x7F800000, 0xFFC00000};
    uint16_t out[4];
    nf_error err = {0};
    cr_assert_eq(cast(NF_FMT_BF16, NF_SRC_F32, edge, 4, out, NULL, &err), NF_OK, "%s", err.message);
    cr_expect_eq(out[0], 0x7F7F);
    cr_expect_eq(out[1], 0xFF7F);
    cr_expect_eq(out[2], 0x7F80);
    cr_expect_eq(out[3], 0x7FC0);
    /* to fp32 nothing rounds: FLT_MAX stays FLT_MAX */
    uint32_t o32[1];
    uint64_t fmax[1] = {0x7F7FFFFF};
    cr_assert_eq(cast(NF_FMT_FP32, NF_SRC_F32, fmax, 1, NULL, o32, &err), NF_OK, "%s", err.message);
    cr_expect_eq(o32[0], 0x7F7FFFFFu);
}

Test(cast_direct, f16_and_bf16_to_bf16)
{
    /* every binary16 word: exact widening then the BF16 rounding */
    uint64_t *in = malloc(sizeof(uint64_t) * 65536);
    uint16_t *out = malloc(2 * 65536);
    for (size_t i = 0; i < 65536; i++) in[i] = i;
    nf_error err = {0};
    cr_assert_eq(cast(NF_FMT_BF16, NF_SRC_F16, in, 65536, out, NULL, &err), NF_OK, "%s", err.message);
    for (size_t i = 0; i < 65536; i++)
        cr_assert_eq(out[i], bf16_oracle(f16_to_f32_oracle((uint16_t)i)), "f16 0x%04zx -> 0x%04x", i, out[i]);
    cr_expect_eq(out[0x3C00], 0x3F80);
    cr_expect_eq(out[0x0001], 0x3380);
    cr_expect_eq(out[0x7E00], 0x7FC0);
    /* a BF16 source is kept word for word, NaN payloads and signalling bits included */
    cr_assert_eq(cast(NF_FMT_BF16, NF_SRC_BF16, in, 65536, out, NULL, &err), NF_OK, "%s", err.message);
    for (size_t i = 0; i < 65536; i++) cr_assert_eq(out[i], i);
    free(in);
    free(out);
}

/* ------------------------------------------------------------------ fp32 */

Test(cast_direct, to_fp32_is_exact)
{
    uint64_t *in = malloc(sizeof(uint64_t) * 65536);
    uint32_t *out = malloc(4 * 65536);
    for (size_t i = 0; i < 65536; i++) in[i] = i;
    nf_error err = {0};
    cr_assert_eq(cast(NF_FMT_FP32, NF_SRC_F16, in, 65536, NULL, out, &err), NF_OK, "%s", err.message);
    for (size_t i = 0; i < 65536; i++)
        cr_assert_eq(out[i], f16_to_f32_oracle((uint16_t)i), "f16 0x%04zx -> 0x%08x", i, out[i]);
    cr_assert_eq(cast(NF_FMT_FP32, NF_SRC_BF16, in, 65536, NULL, out, &err), NF_OK, "%s", err.message);
    for (size_t i = 0; i < 65536; i++) cr_assert_eq(out[i], (uint32_t)i << 16);
    static const uint64_t f32[] = {0x7F800001, 0xFFBFFFFF, 0x80000000, 0x00000001, 0x7F7FFFFF, 0x3F800000};
    cr_assert_eq(cast(NF_FMT_FP32, NF_SRC_F32, f32, 6, NULL, out, &err), NF_OK, "%s", err.message);
    for (size_t i = 0; i < 6; i++) cr_expect_eq(out[i], (uint32_t)f32[i]);
    free(in);
    free(out);
}

/* ------------------------------------------------------------------ int32 */

typedef struct int_case {
    nf_src_type type;
    uint64_t word; /* source element bits */
    bool ok;
    uint32_t want; /* int32 word when ok */
} int_case;

Test(cast_direct, integers_to_int32)
{
    static const int_case cases[] = {
        {NF_SRC_I8, 0x80, true, 0xFFFFFF80},
        {NF_SRC_I8, 0x7F, true, 0x7F},
        {NF_SRC_I16, 0x8000, true, 0xFFFF8000},
        {NF_SRC_I16, 0xFFFF, true, 0xFFFFFFFF},
        {NF_SRC_I32, 0x80000000, true, 0x80000000},
        {NF_SRC_I32, 0x7FFFFFFF, true, 0x7FFFFFFF},
        {NF_SRC_I64, 0xFFFFFFFF80000000ull, true, 0x80000000},
        {NF_SRC_I64, 0x000000007FFFFFFFull, true, 0x7FFFFFFF},
        {NF_SRC_I64, 0xFFFFFFFFFFFFFFFFull, true, 0xFFFFFFFF},
        {NF_SRC_I64, 0x0000000080000000ull, false, 0},
        {NF_SRC_I64, 0xFFFFFFFF7FFFFFFFull, false, 0},
        {NF_SRC_I64, 0x8000000000000000ull, false, 0},
        {NF_SRC_U8, 0xFF, true, 0xFF},
        {NF_SRC_U16, 0xFFFF, true, 0xFFFF},
        {NF_SRC_U32, 0x7FFFFFFF, true, 0x7FFFFFFF},
        {NF_SRC_U32, 0x80000000, false, 0},
        {NF_SRC_U64, 0x7FFFFFFF, true, 0x7FFFFFFF},
        {NF_SRC_U64, 0xFFFFFFFFFFFFFFFFull, false, 0},
        {NF_SRC_BOOL, 0, true, 0},
        {NF_SRC_BOOL, 1, true, 1},
        {NF_SRC_BOOL, 2, false, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int_case *c = &cases[i];
        uint64_t row[3] = {0, c->word, 1};
        uint32_t out[3] = {0};
        nf_error err = {0};
        nf_status st = cast(NF_FMT_INT32, c->type, row, 3, NULL, out, &err);
        if (c->ok) {
            cr_expect_eq(st, NF_OK, "case %zu: %s", i, err.message);
            cr_expect_eq(out[1], c->want, "case %zu: 0x%08x, want 0x%08x", i, out[1], c->want);
            cr_expect_eq(out[2], 1u);
        } else {
            cr_expect_eq(st, NF_ERR_INVALID, "case %zu accepted", i);
            cr_expect(strncmp(err.message, "tensor 't': row 9 col 1: ", 25) == 0, "case %zu: %s", i, err.message);
        }
    }
}

Test(cast_direct, floats_to_int32_truncate_toward_zero)
{
    const float ok[] = {2.7f, -2.7f, -0.5f, -0.0f, 0x1p-140f, 2147483520.0f, -2147483648.0f, 16777217.0f, 1e9f};
    const uint32_t want[] = {2, 0xFFFFFFFE, 0, 0, 0, 2147483520u, 0x80000000, 16777216, 1000000000};
    enum { N = sizeof ok / sizeof ok[0] };
    uint64_t in[N];
    for (size_t i = 0; i < N; i++) in[i] = bits_of_f32(ok[i]);
    uint32_t out[N];
    nf_error err = {0};
    cr_assert_eq(cast(NF_FMT_INT32, NF_SRC_F32, in, N, NULL, out, &err), NF_OK, "%s", err.message);
    for (size_t i = 0; i < N; i++) cr_expect_eq(out[i], want[i], "%a -> 0x%08x", (double)ok[i], out[i]);

    const float bad[] = {2147483648.0f, -2147483904.0f, 1e20f, NAN, INFINITY, -INFINITY};
    const char *why[] = {"outside the int32 range", "outside the int32 range",  "outside the int32 range",
                         "NaN cannot become int32", "+inf cannot become int32", "-inf cannot become int32"};
    for (size_t i = 0; i < 6; i++) {
        uint64_t row[2] = {bits_of_f32(1.0f), bits_of_f32(bad[i])};
        cr_expect_eq(cast(NF_FMT_INT32, NF_SRC_F32, row, 2, NULL, out, &err), NF_ERR_INVALID, "%a", (double)bad[i]);
        cr_expect(strstr(err.message, "row 9 col 1") && strstr(err.message, why[i]), "%s", err.message);
    }
    /* binary16 and BF16 sources too: 65504 and -3.5 */
    uint64_t h[2] = {0x7BFF, 0xC300};
    cr_assert_eq(cast(NF_FMT_INT32, NF_SRC_F16, h, 2, NULL, out, &err), NF_OK, "%s", err.message);
    cr_expect_eq(out[0], 65504u);
    cr_expect_eq(out[1], 0xFFFFFFFDu);
    uint64_t b[2] = {0x4F00, 0xCF00}; /* 2^31 refused, -2^31 fine */
    cr_expect_eq(cast(NF_FMT_INT32, NF_SRC_BF16, b, 2, NULL, out, &err), NF_ERR_INVALID);
    cr_expect_eq(cast(NF_FMT_INT32, NF_SRC_BF16, b + 1, 1, NULL, out, &err), NF_OK, "%s", err.message);
    cr_expect_eq(out[0], 0x80000000u);
}

Test(cast_direct, refusals)
{
    uint64_t in[2] = {1, 2};
    uint16_t o16[2];
    uint32_t o32[2];
    nf_error err = {0};
    cr_expect_eq(cast(NF_FMT_BF16, NF_SRC_I32, in, 2, o16, NULL, &err), NF_ERR_INVALID);
    cr_expect(strstr(err.message, "integer source (I32)") != NULL, "%s", err.message);
    cr_expect_eq(cast(NF_FMT_FP32, NF_SRC_U8, in, 2, NULL, o32, &err), NF_ERR_INVALID);
    cr_expect_eq(cast(NF_FMT_Q8_G32_FP16, NF_SRC_F32, in, 2, NULL, o32, &err), NF_ERR_INVALID);
    cr_expect(strstr(err.message, "cast_direct cannot target q8_g32_fp16") != NULL, "%s", err.message);
    cr_expect_eq(cast(NF_FMT_BF16, NF_SRC_F32, in, 2, NULL, o32, &err), NF_ERR_USAGE); /* no w16 */
    cr_expect_eq(cast(NF_FMT_FP32, NF_SRC_F32, in, 2, o16, NULL, &err), NF_ERR_USAGE); /* no w32 */
}

Test(cast_direct, chunks_and_rows)
{
    /* 3 rows x 5: row-major placement, first_row only affects messages */
    uint64_t in[15];
    for (int i = 0; i < 15; i++) in[i] = (uint64_t)(i * 1000 - 7000);
    uint8_t *data = pack(in, 15, 4);
    uint32_t out[15];
    nf_src_rows src = {.type = NF_SRC_I32, .data = data, .first_row = 100, .rows = 3, .cols = 5};
    nf_words w = {.rows = 3, .cols = 5, .w32 = out};
    nf_error err = {0};
    cr_assert_eq(nf_method_encode_rows(NF_METHOD_CAST_DIRECT, nf_format_by_id(NF_FMT_INT32), NULL, &src, &w, &err),
                 NF_OK, "%s", err.message);
    for (int i = 0; i < 15; i++) cr_expect_eq(out[i], (uint32_t)(i * 1000 - 7000));
    nf_method_params p = {.negative_scales = true};
    cr_expect_eq(nf_method_encode_rows(NF_METHOD_CAST_DIRECT, nf_format_by_id(NF_FMT_INT32), &p, &src, &w, &err),
                 NF_ERR_INVALID);
    cr_expect(strstr(err.message, "cast_direct takes no parameters") != NULL, "%s", err.message);
    free(data);
}

/* ------------------------------------------------------------------ the method table */

Test(method_table, names_and_lookup)
{
    static const char *names[NF_METHOD_COUNT] = {"cast_direct",    "grouped_absmax", "grouped_search", "fp8_row_maxabs",
                                                 "import_encoded", "ggml_quantize",  "nvfp4_quantize", "nvfp4_search"};
    for (int i = 0; i < NF_METHOD_COUNT; i++) {
        cr_expect_str_eq(nf_method_name((nf_method_id)i), names[i]);
        nf_method_id id = NF_METHOD_COUNT;
        nf_error err = {0};
        cr_expect_eq(nf_method_find(names[i], &id, &err), NF_OK);
        cr_expect_eq(id, (nf_method_id)i);
    }
    cr_expect_null(nf_method_name(NF_METHOD_COUNT));
    nf_method_id id;
    nf_error err = {0};
    cr_expect_eq(nf_method_find("Grouped_absmax", &id, &err), NF_ERR_INVALID);
    cr_expect_str_eq(err.message, "unknown method 'Grouped_absmax'");
}

Test(method_table, targets)
{
    /* expected: which methods accept each format (docs/methods.md, docs/decisions.md D5) */
    for (size_t i = 0; i < nf_format_count(); i++) {
        const nf_format *f = nf_format_at(i);
        bool direct = f->category == NF_CAT_DIRECT;
        bool quant = f->category == NF_CAT_GROUPED && f->id != NF_FMT_Q2_G64_FP16 && f->id != NF_FMT_T2_G128_FP16;
        bool fp8 = f->category == NF_CAT_FP8_ROW;
        bool import = f->id == NF_FMT_NVFP4 || f->id == NF_FMT_FP8_E4M3FN_ROW_BF16 || f->id == NF_FMT_T2_G128_FP16 ||
                      f->id == NF_FMT_Q2_G64_FP16 || f->id == NF_FMT_Q8_G32_FP16 || f->category == NF_CAT_GGUF ||
                      f->id == NF_FMT_Q4_G64_FP16 || f->id == NF_FMT_Q5_G64_FP16; /* GPTQ, AWQ */
        bool ggml = f->category == NF_CAT_GGUF; /* every gguf_* type has ggml's encoder */
        bool nvfp4 = f->id == NF_FMT_NVFP4;
        bool want[NF_METHOD_COUNT] = {direct, quant, quant, fp8, import, ggml, nvfp4, nvfp4};
        for (int m = 0; m < NF_METHOD_COUNT; m++) {
            nf_error err = {0};
            nf_status st = nf_method_check_target((nf_method_id)m, f, &err);
            cr_expect_eq(st == NF_OK, want[m], "%s / %s: %s", nf_method_name((nf_method_id)m), f->name, err.message);
            if (st != NF_OK) cr_expect_eq(st, NF_ERR_INVALID);
        }
    }
    nf_error err = {0};
    cr_expect_eq(nf_method_check_target(NF_METHOD_GROUPED_SEARCH, nf_format_lookup("q2_g64_fp16"), &err),
                 NF_ERR_INVALID);
    cr_expect_str_eq(err.message,
                     "grouped_search cannot target q2_g64_fp16: it requires import_encoded (trained GSQ Q2_0 codes)");
    cr_expect_eq(nf_method_check_target(NF_METHOD_COUNT, nf_format_lookup("bf16"), &err), NF_ERR_USAGE);
    cr_expect_eq(nf_method_check_target(NF_METHOD_CAST_DIRECT, NULL, &err), NF_ERR_USAGE);
}

Test(method_table, source_types)
{
    static const struct {
        const char *name;
        size_t size;
    } want[NF_SRC_COUNT] = {{"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I8", 1},  {"I16", 2}, {"I32", 4},
                            {"I64", 8}, {"U8", 1},  {"U16", 2},  {"U32", 4}, {"U64", 8}, {"BOOL", 1}};
    for (int i = 0; i < NF_SRC_COUNT; i++) {
        cr_expect_str_eq(nf_src_type_name((nf_src_type)i), want[i].name);
        cr_expect_eq(nf_src_type_size((nf_src_type)i), want[i].size);
        nf_src_type t = NF_SRC_COUNT;
        cr_expect(nf_src_type_lookup(want[i].name, &t));
        cr_expect_eq(t, (nf_src_type)i);
    }
    nf_src_type t;
    cr_expect_not(nf_src_type_lookup("F64", &t));
    cr_expect_not(nf_src_type_lookup("f32", &t));
    cr_expect_null(nf_src_type_name(NF_SRC_COUNT));
    cr_expect_eq(nf_src_type_size(NF_SRC_COUNT), 0);
}

Test(method_table, dispatcher)
{
    const uint64_t v[4] = {0x3F800000, 0x40000000, 0x40400000, 0x40800000}; /* 1, 2, 3, 4 */
    uint8_t *data = pack(v, 4, 4);
    nf_src_rows src = {.type = NF_SRC_F32, .data = data, .rows = 1, .cols = 4};
    nf_words w = {.rows = 1, .cols = 4};
    nf_error err = {0};
    cr_expect_eq(nf_method_encode_rows(NF_METHOD_IMPORT_ENCODED, nf_format_lookup("q8_g32_fp16"), NULL, &src, &w, &err),
                 NF_ERR_USAGE);
    cr_expect_eq(nf_method_encode_rows(NF_METHOD_COUNT, nf_format_lookup("q8_g32_fp16"), NULL, &src, &w, &err),
                 NF_ERR_USAGE);
    /* fp8 through the dispatcher, with empty parameters */
    uint8_t codes[4];
    uint16_t scale;
    nf_words f = {.rows = 1, .cols = 4, .codes8 = codes, .scales = &scale};
    nf_method_params none = {0};
    cr_assert_eq(
        nf_method_encode_rows(NF_METHOD_FP8_ROW_MAXABS, nf_format_lookup("fp8_e4m3fn_row_bf16"), &none, &src, &f, &err),
        NF_OK, "%s", err.message);
    cr_expect_eq(codes[3], 0x7E);
    free(data);
}
