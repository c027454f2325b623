/* The closed format registry against the spec's tables (docs/formats.md 1,
 * docs/layouts.md 1 and docs/formats.md 1), transcribed here independently of format_registry.c. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <ninfer/format.h>

typedef struct expected_format {
    nf_format_id id;
    const char *name;
    nf_category category;
    const char *layout;
} expected_format;

static const expected_format expected[] = {
    {NF_FMT_BF16, "bf16", NF_CAT_DIRECT, "contiguous_le_v1"},
    {NF_FMT_FP32, "fp32", NF_CAT_DIRECT, "contiguous_le_v1"},
    {NF_FMT_INT32, "int32", NF_CAT_DIRECT, "contiguous_le_v1"},
    {NF_FMT_Q2_G64_FP16, "q2_g64_fp16", NF_CAT_GROUPED, "row_split_k128_v1"},
    {NF_FMT_Q4_G64_FP16, "q4_g64_fp16", NF_CAT_GROUPED, "row_split_k128_v1"},
    {NF_FMT_Q5_G64_FP16, "q5_g64_fp16", NF_CAT_GROUPED, "row_split_k128_v1"},
    {NF_FMT_Q6_G64_FP16, "q6_g64_fp16", NF_CAT_GROUPED, "row_split_k128_v1"},
    {NF_FMT_Q8_G32_FP16, "q8_g32_fp16", NF_CAT_GROUPED, "row_split_k128_v1"},
    {NF_FMT_T2_G128_FP16, "t2_g128_fp16", NF_CAT_GROUPED, "row_split_k128_v1"},
    {NF_FMT_NVFP4, "nvfp4", NF_CAT_NVFP4, "block_scale_k16_m128x4_v1"},
    {NF_FMT_FP8_E4M3FN_ROW_BF16, "fp8_e4m3fn_row_bf16", NF_CAT_FP8_ROW, "row_scale_v1"},
    {NF_FMT_FP8_E4M3FN_ROW_FP16, "fp8_e4m3fn_row_fp16", NF_CAT_FP8_ROW, "row_interleaved_v1"},
    {NF_FMT_GGUF_Q8_0, "gguf_q8_0", NF_CAT_GGUF, "gguf_blocks_v1"},
    {NF_FMT_GGUF_Q4_0, "gguf_q4_0", NF_CAT_GGUF, "gguf_blocks_v1"},
    {NF_FMT_GGUF_Q5_0, "gguf_q5_0", NF_CAT_GGUF, "gguf_blocks_v1"},
    {NF_FMT_GGUF_Q2_0, "gguf_q2_0", NF_CAT_GGUF, "gguf_blocks_v1"},
    {NF_FMT_GGUF_Q2_K, "gguf_q2_k", NF_CAT_GGUF, "gguf_blocks_v1"},
    {NF_FMT_GGUF_Q3_K, "gguf_q3_k", NF_CAT_GGUF, "gguf_blocks_v1"},
    {NF_FMT_GGUF_Q4_K, "gguf_q4_k", NF_CAT_GGUF, "gguf_blocks_v1"},
    {NF_FMT_GGUF_Q5_K, "gguf_q5_k", NF_CAT_GGUF, "gguf_blocks_v1"},
    {NF_FMT_GGUF_Q6_K, "gguf_q6_k", NF_CAT_GGUF, "gguf_blocks_v1"},
    {NF_FMT_GGUF_IQ2_XXS, "gguf_iq2_xxs", NF_CAT_GGUF, "gguf_blocks_v1"},
    {NF_FMT_GGUF_IQ2_XS, "gguf_iq2_xs", NF_CAT_GGUF, "gguf_blocks_v1"},
    {NF_FMT_GGUF_IQ3_XXS, "gguf_iq3_xxs", NF_CAT_GGUF, "gguf_blocks_v1"},
    {NF_FMT_GGUF_IQ1_S, "gguf_iq1_s", NF_CAT_GGUF, "gguf_blocks_v1"},
    {NF_FMT_GGUF_IQ4_NL, "gguf_iq4_nl", NF_CAT_GGUF, "gguf_blocks_v1"},
    {NF_FMT_GGUF_IQ3_S, "gguf_iq3_s", NF_CAT_GGUF, "gguf_blocks_v1"},
    {NF_FMT_GGUF_IQ2_S, "gguf_iq2_s", NF_CAT_GGUF, "gguf_blocks_v1"},
    {NF_FMT_GGUF_IQ4_XS, "gguf_iq4_xs", NF_CAT_GGUF, "gguf_blocks_v1"},
    {NF_FMT_GGUF_IQ1_M, "gguf_iq1_m", NF_CAT_GGUF, "gguf_blocks_v1"},
};
#define N_EXPECTED (sizeof expected / sizeof expected[0])

Test(format_registry, thirty_formats_in_id_order)
{
    cr_assert_eq(N_EXPECTED, 30);
    cr_assert_eq(nf_format_count(), 30);
    cr_assert_eq((int)NF_FMT_COUNT, 30);
    for (size_t i = 0; i < N_EXPECTED; i++) {
        const nf_format *f = nf_format_at(i);
        cr_assert_not_null(f, "index %zu", i);
        cr_assert_eq(f->id, expected[i].id, "index %zu", i);
        cr_assert_eq((size_t)expected[i].id, i);
        cr_assert_str_eq(f->name, expected[i].name);
        cr_assert_eq(f->category, expected[i].category, "%s", f->name);
        cr_assert_str_eq(f->default_layout, expected[i].layout, "%s", f->name);
        cr_assert_eq(nf_format_by_id(expected[i].id), f);
    }
    cr_assert_null(nf_format_at(30));
    cr_assert_null(nf_format_at((size_t)-1));
    cr_assert_null(nf_format_by_id(NF_FMT_COUNT));
    cr_assert_null(nf_format_by_id((nf_format_id)-1));
}

Test(format_registry, every_name_round_trips)
{
    for (size_t i = 0; i < nf_format_count(); i++) {
        const nf_format *f = nf_format_at(i);
        cr_assert_eq(nf_format_lookup(f->name), f, "%s", f->name);
        /* a copy of the name, so lookup compares contents rather than pointers */
        char copy[64];
        snprintf(copy, sizeof copy, "%s", f->name);
        cr_assert_eq(nf_format_lookup(copy), f);
        const nf_format *found = NULL;
        nf_error err = {0};
        cr_assert_eq(nf_format_find(copy, &found, &err), NF_OK, "%s", copy);
        cr_assert_eq(found, f);
        for (size_t j = 0; j < i; j++) cr_assert_str_neq(nf_format_at(j)->name, f->name);
    }
}

Test(format_registry, unknown_names_fail_with_their_name)
{
    const char *bad[] = {
        "Q4_G64_FP16", "q4",      "",          "q4_g64_fp16 ", " q4_g64_fp16", "q4_g64",           "q4_g32_fp16",
        "q4_k",        "gguf_q4", "GGUF_Q4_K", "gguf_",        "fp8",          "fp8_e4m3fn_row",   "bfloat16",
        "f32",         "fp16",    "nvfp4\n",   "q8_0",         "int32_t",      "row_split_k128_v1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_null(nf_format_lookup(bad[i]), "'%s' must be unknown", bad[i]);
        const nf_format *found = nf_format_at(0); /* must be reset on failure */
        nf_error err = {0};
        cr_assert_eq(nf_format_find(bad[i], &found, &err), NF_ERR_INVALID);
        cr_assert_null(found);
        cr_assert_eq(err.status, NF_ERR_INVALID);
        if (strchr(bad[i], '\n')) continue; /* control characters are escaped, checked below */
        char want[128];
        snprintf(want, sizeof want, "unknown format '%s'", bad[i]);
        cr_assert_str_eq(err.message, want);
    }
    nf_error err = {0};
    const nf_format *found = NULL;
    cr_assert_eq(nf_format_find("nvfp4\n", &found, &err), NF_ERR_INVALID);
    cr_assert_str_eq(err.message, "unknown format 'nvfp4\\x0a'");
    cr_assert_eq(nf_format_find("q4", &found, NULL), NF_ERR_INVALID, "err may be NULL");
    cr_assert_null(nf_format_lookup(NULL));
    cr_assert_eq(nf_format_find(NULL, &found, &err), NF_ERR_INVALID);
    cr_assert_null(found);
    cr_assert_neq(nf_format_find("bf16", NULL, &err), NF_OK);
}

Test(format_registry, very_long_unknown_name_is_bounded)
{
    char name[4000];
    memset(name, 'x', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    nf_error err = {0};
    const nf_format *found = NULL;
    cr_assert_eq(nf_format_find(name, &found, &err), NF_ERR_INVALID);
    cr_assert(strncmp(err.message, "unknown format 'xxxx", 20) == 0, "%s", err.message);
    cr_assert(strlen(err.message) < 200, "%s", err.message);
    cr_assert_not_null(strstr(err.message, "...'"));
}

Test(format_registry, direct_properties)
{
    const struct {
        nf_format_id id;
        unsigned bits, bytes;
    } d[] = {{NF_FMT_BF16, 16, 2}, {NF_FMT_FP32, 32, 4}, {NF_FMT_INT32, 32, 4}};
    for (size_t i = 0; i < 3; i++) {
        const nf_format *f = nf_format_by_id(d[i].id);
        cr_assert_eq(f->code_bits, d[i].bits, "%s", f->name);
        cr_assert_eq(f->word_bytes, d[i].bytes, "%s", f->name);
        cr_assert_eq(f->bits_per_weight, (double)d[i].bits, "%s", f->name);
        cr_assert_eq(f->scale_type, NF_SCALE_NONE);
        cr_assert_eq(f->group_size, 0);
        cr_assert_eq(f->ggml_type, -1);
        cr_assert_eq(f->block_values, 0);
        cr_assert_eq(f->block_bytes, 0);
        cr_assert_null(f->short_name);
    }
}

Test(format_registry, grouped_properties)
{
    /* spec table: code width, group, legal interval, encoder qmax, full-group bits/weight */
    const struct {
        nf_format_id id;
        unsigned bits, group;
        int qmin, qmax, bias, enc_qmax;
        double bpw;
    } g[] = {
        {NF_FMT_Q2_G64_FP16, 2, 64, -1, 2, 1, 2, 2.25},       {NF_FMT_Q4_G64_FP16, 4, 64, -8, 7, 0, 7, 4.25},
        {NF_FMT_Q5_G64_FP16, 5, 64, -16, 15, 0, 15, 5.25},    {NF_FMT_Q6_G64_FP16, 6, 64, -32, 31, 0, 31, 6.25},
        {NF_FMT_Q8_G32_FP16, 8, 32, -127, 127, 0, 127, 8.50}, {NF_FMT_T2_G128_FP16, 2, 128, -1, 1, 0, 1, 2.125},
    };
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
        const nf_format *f = nf_format_by_id(g[i].id);
        cr_assert_eq(f->code_bits, g[i].bits, "%s", f->name);
        cr_assert_eq(f->group_size, g[i].group, "%s", f->name);
        cr_assert_eq(f->code_min, g[i].qmin, "%s", f->name);
        cr_assert_eq(f->code_max, g[i].qmax, "%s", f->name);
        cr_assert_eq(f->code_bias, g[i].bias, "%s", f->name);
        cr_assert_eq(f->encoder_qmax, g[i].enc_qmax, "%s", f->name);
        cr_assert_eq(f->bits_per_weight, g[i].bpw, "%s", f->name);
        cr_assert_eq(f->bits_per_weight, g[i].bits + 16.0 / g[i].group, "b + 16/G for %s", f->name);
        cr_assert_eq(f->scale_type, NF_SCALE_FP16, "%s", f->name);
        cr_assert_eq(f->ggml_type, -1);
        cr_assert_eq(f->word_bytes, 0);
        cr_assert_null(f->short_name);
        /* every stored word of the width decodes to a code: the interval fits the width */
        cr_assert_leq(f->code_max - f->code_min + 1, 1 << f->code_bits, "%s", f->name);
    }
}

Test(format_registry, nvfp4_and_fp8_properties)
{
    const nf_format *n = nf_format_by_id(NF_FMT_NVFP4);
    cr_assert_eq(n->code_bits, 4);
    cr_assert_eq(n->group_size, 16);
    cr_assert_eq(n->scale_type, NF_SCALE_E4M3FN);
    cr_assert_eq(n->bits_per_weight, 4.0 + 8.0 / 16.0, "E2M1 code + one E4M3 scale per 16");
    cr_assert_eq(n->ggml_type, -1);

    const nf_format *b = nf_format_by_id(NF_FMT_FP8_E4M3FN_ROW_BF16);
    const nf_format *h = nf_format_by_id(NF_FMT_FP8_E4M3FN_ROW_FP16);
    cr_assert_eq(b->scale_type, NF_SCALE_BF16);
    cr_assert_eq(h->scale_type, NF_SCALE_FP16);
    cr_assert_eq(b->code_bits, 8);
    cr_assert_eq(h->code_bits, 8);
    cr_assert_eq(b->bits_per_weight, 8.0);
    cr_assert_eq(h->bits_per_weight, 8.0);
    cr_assert_eq(b->group_size, 0);
    cr_assert_eq(b->ggml_type, -1);
    cr_assert_eq(h->ggml_type, -1);
}

/* docs/formats.md 1, GGUF table */
static const struct {
    nf_format_id id;
    const char *short_name;
    int ggml_type;
    unsigned values, bytes;
    double bpw;
} gguf[] = {
    {NF_FMT_GGUF_Q8_0, "q8_0", 8, 32, 34, 8.50},         {NF_FMT_GGUF_Q4_0, "q4_0", 2, 32, 18, 4.50},
    {NF_FMT_GGUF_Q5_0, "q5_0", 6, 32, 22, 5.50},         {NF_FMT_GGUF_Q2_0, "q2_0", 42, 64, 18, 2.25},
    {NF_FMT_GGUF_Q2_K, "q2_k", 10, 256, 84, 2.625},      {NF_FMT_GGUF_Q3_K, "q3_k", 11, 256, 110, 3.4375},
    {NF_FMT_GGUF_Q4_K, "q4_k", 12, 256, 144, 4.50},      {NF_FMT_GGUF_Q5_K, "q5_k", 13, 256, 176, 5.50},
    {NF_FMT_GGUF_Q6_K, "q6_k", 14, 256, 210, 6.5625},    {NF_FMT_GGUF_IQ2_XXS, "iq2_xxs", 16, 256, 66, 2.0625},
    {NF_FMT_GGUF_IQ2_XS, "iq2_xs", 17, 256, 74, 2.3125}, {NF_FMT_GGUF_IQ3_XXS, "iq3_xxs", 18, 256, 98, 3.0625},
    {NF_FMT_GGUF_IQ1_S, "iq1_s", 19, 256, 50, 1.5625},   {NF_FMT_GGUF_IQ4_NL, "iq4_nl", 20, 32, 18, 4.50},
    {NF_FMT_GGUF_IQ3_S, "iq3_s", 21, 256, 110, 3.4375},  {NF_FMT_GGUF_IQ2_S, "iq2_s", 22, 256, 82, 2.5625},
    {NF_FMT_GGUF_IQ4_XS, "iq4_xs", 23, 256, 136, 4.25},  {NF_FMT_GGUF_IQ1_M, "iq1_m", 29, 256, 56, 1.75},
};

Test(format_registry, gguf_properties)
{
    cr_assert_eq(sizeof gguf / sizeof gguf[0], 18);
    for (size_t i = 0; i < 18; i++) {
        const nf_format *f = nf_format_by_id(gguf[i].id);
        cr_assert_eq(f->ggml_type, gguf[i].ggml_type, "%s", f->name);
        cr_assert_eq(f->block_values, gguf[i].values, "%s", f->name);
        cr_assert_eq(f->block_bytes, gguf[i].bytes, "%s", f->name);
        cr_assert_eq(f->bits_per_weight, gguf[i].bpw, "%s", f->name);
        cr_assert_eq(f->bits_per_weight, 8.0 * gguf[i].bytes / gguf[i].values, "%s", f->name);
        cr_assert_str_eq(f->short_name, gguf[i].short_name);
        cr_assert_eq(strncmp(f->name, "gguf_", 5), 0);
        cr_assert_str_eq(f->name + 5, f->short_name);
        cr_assert_eq(f->scale_type, NF_SCALE_GGML, "%s", f->name);
        cr_assert_eq(f->code_bits, 0);
        cr_assert_eq(f->group_size, 0);
        cr_assert_eq(nf_format_by_ggml_type(gguf[i].ggml_type), f, "%s", f->name);
    }
}

Test(format_registry, gguf_short_names_are_fixture_stems)
{
    for (size_t i = 0; i < 18; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/gguf/%s.qbytes", NINFER_TEST_DATA, gguf[i].short_name);
        cr_assert_eq(access(path, R_OK), 0, "missing fixture %s", path);
    }
}

Test(format_registry, ggml_types_outside_the_imported_set)
{
    /* f32, f16, q4_1, q5_1, q8_1, q8_k, bf16, mxfp4, nvfp4, q1_0 and nonsense ids */
    const int other[] = {-1, 0, 1, 3, 7, 9, 15, 24, 25, 26, 27, 28, 30, 39, 40, 41, 43, 1000, -42};
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
        cr_assert_null(nf_format_by_ggml_type(other[i]), "type %d", other[i]);
    size_t hits = 0;
    for (int t = -10; t < 256; t++)
        if (nf_format_by_ggml_type(t)) hits++;
    cr_assert_eq(hits, 18);
}

Test(format_registry, fields_that_do_not_apply_are_zero)
{
    for (size_t i = 0; i < nf_format_count(); i++) {
        const nf_format *f = nf_format_at(i);
        if (f->category != NF_CAT_GGUF) {
            cr_assert_eq(f->ggml_type, -1, "%s", f->name);
            cr_assert_null(f->short_name, "%s", f->name);
            cr_assert_eq(f->block_values, 0, "%s", f->name);
        }
        if (f->category != NF_CAT_GROUPED) {
            cr_assert_eq(f->code_min, 0, "%s", f->name);
            cr_assert_eq(f->code_max, 0, "%s", f->name);
            cr_assert_eq(f->code_bias, 0, "%s", f->name);
            cr_assert_eq(f->encoder_qmax, 0, "%s", f->name);
        }
        if (f->category != NF_CAT_DIRECT) cr_assert_eq(f->word_bytes, 0, "%s", f->name);
        cr_assert_gt(f->bits_per_weight, 0.0, "%s", f->name);
        cr_assert_not_null(f->default_layout, "%s", f->name);
    }
}
