/* A stack's importance (nf_method_params.importance_rows, ninfer/method.h): a chunk that crosses
 * its matrices' boundaries encodes as each matrix's rows would with that matrix's own vector,
 * for grouped_search and ggml_quantize; rows past the stack are refused. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#define MATS 3
#define PER 5 /* rows per matrix */
#define K 256

static float src[MATS * PER * K], imp[MATS * K];

static void fill(void)
{
    uint64_t s = 12345;
    for (size_t i = 0; i < sizeof src / sizeof src[0]; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        src[i] = (float)((double)(s >> 40) / 16777216.0 - 0.5) * (i % 37 == 0 ? 8.0f : 1.0f);
    }
    for (int m = 0; m < MATS; m++) /* very different weights per matrix */
        for (int k = 0; k < K; k++) imp[m * K + k] = (float)((k * (m + 3)) % 17) + (m == 1 ? 100.0f : 0.5f);
}

static nf_geometry geom(const char *fmt, uint64_t rows)
{
    nf_geometry g;
    nf_error err;
    const uint64_t shape[2] = {rows, K};
    const nf_format *f = nf_format_lookup(fmt);
    cr_assert_not_null(f);
    cr_assert_eq(nf_geometry_init(&g, nf_layout_default_for(f), f, 2, shape, 1, &err), NF_OK, "%s", err.message);
    return g;
}

/* rows [r0, r0 + n) of the stack encoded at once with the stacked params, and matrix by matrix
 * with each one's vector: the same words */
static void same_words(nf_method_id id, const char *fmt, uint64_t r0, uint64_t n)
{
    const nf_format *f = nf_format_lookup(fmt);
    nf_geometry g = geom(fmt, 128); /* nvfp4's tile; only the words' shape matters */
    nf_words all, one;
    nf_error err;
    cr_assert_eq(nf_words_alloc(&all, &g, n, &err), NF_OK);
    cr_assert_eq(nf_words_alloc(&one, &g, n, &err), NF_OK);
    nf_src_rows s = {.name = "w", .type = NF_SRC_F32, .data = src + r0 * K, .first_row = r0, .rows = n, .cols = K};
    nf_method_params p = {.importance = imp, .importance_len = K};
    p.importance_rows = PER;
    p.importance_mats = MATS;
    p.importance_stride = K;
    cr_assert_eq(nf_method_check_params(id, &p, K, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_method_encode_rows(id, f, &p, &s, &all, &err), NF_OK, "%s", err.message);
    for (uint64_t r = 0; r < n; r++) {
        const uint64_t row = r0 + r, m = row / PER;
        nf_src_rows s1 =
            {.name = "w", .type = NF_SRC_F32, .data = src + row * K, .first_row = row, .rows = 1, .cols = K};
        nf_method_params p1 = {.importance = imp + m * K, .importance_len = K};
        nf_words w1 = one;
        w1.rows = 1;
        cr_assert_eq(nf_method_encode_rows(id, f, &p1, &s1, &w1, &err), NF_OK, "%s", err.message);
        switch (f->category) {
        case NF_CAT_GROUPED:
            cr_assert_eq(memcmp(all.codes + r * K, w1.codes, K), 0, "%s row %llu codes", fmt, (unsigned long long)row);
            cr_assert_eq(memcmp(all.scales + r * (K / f->group_size), w1.scales, 2 * (K / f->group_size)), 0,
                         "%s row %llu scales", fmt, (unsigned long long)row);
            break;
        case NF_CAT_GGUF: {
            const size_t rb = K / f->block_values * f->block_bytes;
            cr_assert_eq(memcmp(all.blocks + r * rb, w1.blocks, rb), 0, "%s row %llu", fmt, (unsigned long long)row);
            break;
        }
        case NF_CAT_NVFP4:
            cr_assert_eq(memcmp(all.codes8 + r * K, w1.codes8, K), 0, "%s row %llu", fmt, (unsigned long long)row);
            cr_assert_eq(memcmp(all.scales8 + r * (K / 16), w1.scales8, K / 16), 0, "%s row %llu scales", fmt,
                         (unsigned long long)row);
            break;
        default: cr_assert_fail("category");
        }
    }
    /* and the vectors matter: matrix 1's vector for every row changes some row's words */
    nf_method_params flat = {.importance = imp + K, .importance_len = K};
    cr_assert_eq(nf_method_encode_rows(id, f, &flat, &s, &one, &err), NF_OK, "%s", err.message);
    bool differ = f->category == NF_CAT_GROUPED ? memcmp(all.codes, one.codes, n * K) != 0
                  : f->category == NF_CAT_GGUF
                      ? memcmp(all.blocks, one.blocks, n * (K / f->block_values * f->block_bytes)) != 0
                      : memcmp(all.codes8, one.codes8, n * K) != 0 || memcmp(all.scales8, one.scales8, n * K / 16) != 0;
    if (r0 / PER != 1 || (r0 + n - 1) / PER != 1) /* rows outside matrix 1 */
        cr_assert(differ, "%s: the stack's vectors make no difference: the test cannot fail", fmt);
    else cr_assert(!differ, "%s: matrix 1 alone is matrix 1's vector", fmt);
    nf_words_free(&all);
    nf_words_free(&one);
}

Test(method_stack, pieces_get_their_vectors)
{
    fill();
    same_words(NF_METHOD_GROUPED_SEARCH, "q4_g64_fp16", 3, 11); /* rows 3..13: matrices 0, 1, 2 */
    same_words(NF_METHOD_GROUPED_SEARCH, "q4_g64_fp16", 5, 5);  /* exactly matrix 1 */
    same_words(NF_METHOD_GGML_QUANTIZE, "gguf_q4_k", 0, 15);
    same_words(NF_METHOD_GGML_QUANTIZE, "gguf_iq4_xs", 4, 7);
}

Test(method_stack, refusals)
{
    fill();
    const nf_format *f = nf_format_lookup("q4_g64_fp16");
    nf_geometry g = geom("q4_g64_fp16", 128);
    nf_words w;
    nf_error err;
    cr_assert_eq(nf_words_alloc(&w, &g, 4, &err), NF_OK);
    nf_src_rows s = {.name = "w", .type = NF_SRC_F32, .data = src, .first_row = 13, .rows = 4, .cols = K};
    nf_method_params p = {.importance = imp, .importance_len = K};
    p.importance_rows = PER;
    p.importance_mats = MATS;
    p.importance_stride = K;
    /* rows 13..16: row 15 would be matrix 3 of 3 */
    cr_assert_eq(nf_method_encode_rows(NF_METHOD_GROUPED_SEARCH, f, &p, &s, &w, &err), NF_ERR_USAGE);
    cr_assert(strstr(err.message, "row 15 is in matrix 3 of a stack of 3"), "%s", err.message);
    /* the check reads every matrix's vector: a NaN in matrix 2's is found */
    imp[2 * K + 7] = NAN;
    cr_assert_eq(nf_method_check_params(NF_METHOD_GROUPED_SEARCH, &p, K, &err), NF_ERR_INVALID);
    imp[2 * K + 7] = 1.0f;
    p.importance_mats = 0;
    cr_assert_eq(nf_method_check_params(NF_METHOD_GROUPED_SEARCH, &p, K, &err), NF_ERR_USAGE);
    /* methods without parameters refuse a stack too */
    nf_method_params only = {0};
    only.importance_rows = PER;
    cr_assert_eq(nf_method_check_params(NF_METHOD_GROUPED_ABSMAX, &only, K, &err), NF_ERR_INVALID);
    nf_words_free(&w);
}

/* nvfp4_search without the matrix's maximum takes the chunk as the matrix: its pieces share the
 * whole chunk's divisor, so a stack whose matrices weigh alike encodes as one vector would. */
Test(method_stack, nvfp4_pieces_share_the_divisor)
{
    fill();
    for (int r = 0; r < MATS * PER; r++)
        for (int k = 0; k < K; k++) src[r * K + k] *= r < PER ? 1.0f : 100.0f;
    for (int m = 1; m < MATS; m++) memcpy(imp + m * K, imp, K * sizeof *imp);
    const nf_format *f = nf_format_lookup("nvfp4");
    nf_geometry g = geom("nvfp4", 128);
    nf_words a, b;
    nf_error err;
    cr_assert_eq(nf_words_alloc(&a, &g, MATS * PER, &err), NF_OK);
    cr_assert_eq(nf_words_alloc(&b, &g, MATS * PER, &err), NF_OK);
    nf_src_rows s = {.name = "w", .type = NF_SRC_F32, .data = src, .first_row = 0, .rows = MATS * PER, .cols = K};
    nf_method_params flat = {.importance = imp, .importance_len = K}, stack = flat;
    stack.importance_rows = PER;
    stack.importance_mats = MATS;
    stack.importance_stride = K;
    cr_assert_eq(nf_method_encode_rows(NF_METHOD_NVFP4_SEARCH, f, &flat, &s, &a, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_method_encode_rows(NF_METHOD_NVFP4_SEARCH, f, &stack, &s, &b, &err), NF_OK, "%s", err.message);
    cr_assert_eq(a.divisors[0], b.divisors[0]);
    cr_assert_eq(memcmp(a.codes8, b.codes8, (size_t)MATS * PER * K), 0);
    cr_assert_eq(memcmp(a.scales8, b.scales8, (size_t)MATS * PER * K / 16), 0);
    nf_words_free(&a);
    nf_words_free(&b);
}
