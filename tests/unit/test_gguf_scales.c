/* GGUF blocks with non-finite scales (docs/formats.md 8.1): a NaN or infinite binary16 d or dmin
 * makes the block's values NaN or infinite, and ggml's ggml_validate_row_data refuses it.  For
 * every one of the 18 imported block types, with the field positions written out here from
 * ggml-common.h's block structs (independent of the code under test):
 *   - the real ggml fixtures have no such field;
 *   - each field poisoned with each non-finite pattern, at blocks on either side of the
 *     prescan's run boundaries, is found exactly (block, field, word), by the fast path and the
 *     exact one alike, and really is the block's scale (its values become non-finite);
 *   - the largest finite patterns and the zeros are not;
 *   - import_encoded refuses such a block naming tensor, row and block;
 *   - the writer refuses the words (nf_words_check), and ninfer-verify's word check reports one
 *     problem per bad block, naming row, block, field and byte offset, the same with the fast
 *     prescans off. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "format/ggml.h"
#include "support/test_data.h"

/* layout_impl.h's test hook (that header clashes with verify.h's nf_problem) */
extern bool nf_layout_check_fast;

#define ROWS 16u
#define COLS 512u

typedef struct block_type {
    nf_format_id id;
    const char *stem, *ggml_name;
    unsigned qk, bb;
    int d, dmin; /* byte offsets of the binary16 fields; dmin -1 when none; d -1 for IQ1_M */
} block_type;

static const block_type TYPES[] = {
    {NF_FMT_GGUF_Q8_0, "q8_0", "Q8_0", 32, 34, 0, -1},
    {NF_FMT_GGUF_Q4_0, "q4_0", "Q4_0", 32, 18, 0, -1},
    {NF_FMT_GGUF_Q5_0, "q5_0", "Q5_0", 32, 22, 0, -1},
    {NF_FMT_GGUF_Q2_0, "q2_0", "Q2_0", 64, 18, 0, -1},
    {NF_FMT_GGUF_Q2_K, "q2_k", "Q2_K", 256, 84, 80, 82},
    {NF_FMT_GGUF_Q3_K, "q3_k", "Q3_K", 256, 110, 108, -1},
    {NF_FMT_GGUF_Q4_K, "q4_k", "Q4_K", 256, 144, 0, 2},
    {NF_FMT_GGUF_Q5_K, "q5_k", "Q5_K", 256, 176, 0, 2},
    {NF_FMT_GGUF_Q6_K, "q6_k", "Q6_K", 256, 210, 208, -1},
    {NF_FMT_GGUF_IQ2_XXS, "iq2_xxs", "IQ2_XXS", 256, 66, 0, -1},
    {NF_FMT_GGUF_IQ2_XS, "iq2_xs", "IQ2_XS", 256, 74, 0, -1},
    {NF_FMT_GGUF_IQ3_XXS, "iq3_xxs", "IQ3_XXS", 256, 98, 0, -1},
    {NF_FMT_GGUF_IQ1_S, "iq1_s", "IQ1_S", 256, 50, 0, -1},
    {NF_FMT_GGUF_IQ4_NL, "iq4_nl", "IQ4_NL", 32, 18, 0, -1},
    {NF_FMT_GGUF_IQ3_S, "iq3_s", "IQ3_S", 256, 110, 0, -1},
    {NF_FMT_GGUF_IQ2_S, "iq2_s", "IQ2_S", 256, 82, 0, -1},
    {NF_FMT_GGUF_IQ4_XS, "iq4_xs", "IQ4_XS", 256, 136, 0, -1},
    {NF_FMT_GGUF_IQ1_M, "iq1_m", "IQ1_M", 256, 56, -1, -1},
};
#define NTYPES (sizeof TYPES / sizeof TYPES[0])

static const uint16_t NONFINITE[] = {0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFFFF, 0x7DFF};
static const uint16_t FINITE[] = {0x7BFF, 0xFBFF, 0x0000, 0x8000, 0x0001, 0x3C00};

/* Set field f (0: d, 1: dmin) of block b to h.  IQ1_M's d is the top nibble of each of its four
 * scale words at 48, 50, 52, 54 (nibble i = bits 4i..4i+3 of h); the other bits stay. */
static void poison(const block_type *t, uint8_t *blocks, uint64_t b, int f, uint16_t h)
{
    uint8_t *p = blocks + b * t->bb;
    if (t->d < 0) {
        for (int i = 0; i < 4; i++) {
            uint8_t *w = p + 48 + 2 * i;
            w[1] = (uint8_t)((w[1] & 0x0F) | (((h >> (4 * i)) & 0xF) << 4));
        }
        return;
    }
    int off = f ? t->dmin : t->d;
    p[off] = (uint8_t)(h & 0xFF);
    p[off + 1] = (uint8_t)(h >> 8);
}

static const nf_format *fmt_of(const block_type *t)
{
    const nf_format *f = nf_format_by_id(t->id);
    cr_assert_not_null(f);
    cr_assert_eq(f->block_bytes, t->bb, "%s", t->stem);
    return f;
}

static void expect_found(const block_type *t, const uint8_t *blocks, uint64_t n, uint64_t want_block, int f, uint16_t h)
{
    for (int fast = 0; fast < 2; fast++) {
        nf_ggml_scan_fast = fast;
        nf_ggml_bad_scale bad;
        cr_assert(nf_ggml_find_nonfinite_scale(fmt_of(t), blocks, 0, n, &bad),
                  "%s: block %llu field %d 0x%04x not "
                  "found (fast %d)",
                  t->stem, (unsigned long long)want_block, f, h, fast);
        cr_assert_eq(bad.block, want_block, "%s: found block %llu, want %llu", t->stem, (unsigned long long)bad.block,
                     (unsigned long long)want_block);
        cr_assert_str_eq(bad.field, f ? "dmin" : "d", "%s", t->stem);
        cr_assert_eq(bad.word, h, "%s: word 0x%04x, want 0x%04x", t->stem, bad.word, h);
        cr_assert_eq(bad.offset, (unsigned)(t->d < 0 ? 48 : f ? t->dmin : t->d), "%s", t->stem);
        cr_assert(!nf_ggml_find_nonfinite_scale(fmt_of(t), blocks, want_block + 1, n, &bad) || bad.block > want_block);
    }
    nf_ggml_scan_fast = true;
}

Test(gguf_scales, fixtures_are_clean_and_every_field_is_found)
{
    for (size_t ti = 0; ti < NTYPES; ti++) {
        const block_type *t = &TYPES[ti];
        size_t len;
        uint8_t *q = nf_test_data(&len, "gguf/%s.qbytes", t->stem);
        uint64_t n = (uint64_t)ROWS * (COLS / t->qk);
        cr_assert_eq(len, n * t->bb, "%s", t->stem);
        nf_ggml_bad_scale bad;
        cr_assert(!nf_ggml_find_nonfinite_scale(fmt_of(t), q, 0, n, &bad), "%s: fixture block %llu", t->stem,
                  (unsigned long long)bad.block);
        /* a run of the prescan is 256 blocks: make the run boundary fall inside the data */
        uint64_t big = 600;
        uint8_t *many = malloc((size_t)(big * t->bb));
        for (uint64_t b = 0; b < big; b++) memcpy(many + b * t->bb, q + (b % n) * t->bb, t->bb);
        const uint64_t where[] = {0, 1, 255, 256, 257, 511, 512, big - 1};
        for (int f = 0; f < (t->dmin >= 0 ? 2 : 1); f++)
            for (size_t k = 0; k < sizeof NONFINITE / sizeof NONFINITE[0]; k++)
                for (size_t w = 0; w < sizeof where / sizeof where[0]; w++) {
                    uint8_t saved[256];
                    memcpy(saved, many + where[w] * t->bb, t->bb);
                    poison(t, many, where[w], f, NONFINITE[k]);
                    expect_found(t, many, big, where[w], f, NONFINITE[k]);
                    memcpy(many + where[w] * t->bb, saved, t->bb);
                }
        for (int f = 0; f < (t->dmin >= 0 ? 2 : 1); f++)
            for (size_t k = 0; k < sizeof FINITE / sizeof FINITE[0]; k++) {
                poison(t, many, 300, f, FINITE[k]);
                for (int fast = 0; fast < 2; fast++) {
                    nf_ggml_scan_fast = fast;
                    cr_assert(!nf_ggml_find_nonfinite_scale(fmt_of(t), many, 0, big, &bad), "%s: 0x%04x is finite",
                              t->stem, FINITE[k]);
                }
                nf_ggml_scan_fast = true;
            }
        free(many);
        free(q);
    }
}

/* The field really is the scale: a block with it infinite dequantizes to some non-finite
 * value (docs/formats.md 8.3), and only that block. */
Test(gguf_scales, the_field_is_the_blocks_scale)
{
    for (size_t ti = 0; ti < NTYPES; ti++) {
        const block_type *t = &TYPES[ti];
        size_t len;
        uint8_t *q = nf_test_data(&len, "gguf/%s.qbytes", t->stem);
        unsigned per_row = COLS / t->qk;
        for (int f = 0; f < (t->dmin >= 0 ? 2 : 1); f++) {
            uint8_t *row = malloc(per_row * t->bb);
            memcpy(row, q, per_row * t->bb);
            poison(t, row, 1, f, 0x7E00); /* NaN: every affected output is NaN */
            float out[COLS];
            nf_error err;
            cr_assert_eq(nf_ggml_dequant_row(fmt_of(t), row, COLS, out, &err), NF_OK, "%s", err.message);
            size_t bad_in = 0, bad_out = 0;
            for (unsigned i = 0; i < COLS; i++)
                if (!isfinite(out[i])) {
                    if (i / t->qk == 1) bad_in++;
                    else bad_out++;
                }
            cr_assert_gt(bad_in, 0, "%s field %d: no NaN in the poisoned block", t->stem, f);
            cr_assert_eq(bad_out, 0, "%s", t->stem);
            free(row);
        }
        free(q);
    }
}

Test(gguf_scales, import_refuses_naming_tensor_row_and_block)
{
    for (size_t ti = 0; ti < NTYPES; ti++) {
        const block_type *t = &TYPES[ti];
        size_t len;
        uint8_t *q = nf_test_data(&len, "gguf/%s.qbytes", t->stem);
        uint64_t shape[2] = {ROWS, COLS};
        nf_import_tensor it = {"blk.0.attn_q.weight", t->ggml_name, fmt_of(t)->ggml_type, 2, shape};
        nf_import imp;
        nf_error err;
        cr_assert_eq(nf_import_init_gguf(&imp, fmt_of(t), &it, &err), NF_OK, "%s: %s", t->stem, err.message);
        nf_geometry g;
        cr_assert_eq(nf_import_geometry(&imp, &g, &err), NF_OK, "%s", err.message);
        nf_words w;
        cr_assert_eq(nf_words_alloc(&w, &g, ROWS, &err), NF_OK);
        nf_import_chunk c = {0, ROWS, q, len, NULL, 0, 0};
        cr_assert_eq(nf_import_rows(&imp, &c, &w, 0, &err), NF_OK, "%s: %s", t->stem, err.message);
        int f = t->dmin >= 0 ? 1 : 0;
        unsigned per_row = COLS / t->qk;
        poison(t, q, 5 * per_row + 1, f, 0xFC00);
        cr_assert_eq(nf_import_rows(&imp, &c, &w, 0, &err), NF_ERR_INVALID, "%s", t->stem);
        char want[128];
        snprintf(want, sizeof want, "row 5 block 1: %s scale %s 0xFC00 is -infinity", t->ggml_name, f ? "dmin" : "d");
        cr_assert(strstr(err.message, "blk.0.attn_q.weight") && strstr(err.message, want), "%s: %s", t->stem,
                  err.message);
        /* a later chunk names its absolute row */
        nf_import_chunk c2 = {7, 1, q + 5 * per_row * t->bb, per_row * t->bb, NULL, 0};
        cr_assert_eq(nf_import_rows(&imp, &c2, &w, 0, &err), NF_ERR_INVALID);
        cr_assert(strstr(err.message, "row 7 block 1"), "%s", err.message);
        /* the writer's word check refuses the same words */
        cr_assert_eq(nf_words_check(&g, &w, 0, &err), NF_OK, "%s", err.message);
        poison(t, w.blocks, 3 * per_row + per_row - 1, 0, 0x7C00);
        cr_assert_eq(nf_words_check(&g, &w, 0, &err), NF_ERR_INVALID, "%s", t->stem);
        snprintf(want, sizeof want, "row 3 block %u: %s scale d 0x7c00 is +infinity", per_row - 1, t->ggml_name);
        cr_assert(strstr(err.message, want), "%s: %s", t->stem, err.message);
        nf_words_free(&w);
        free(q);
    }
}

typedef struct sink {
    char text[8192];
    size_t n;
} sink;

static void collect(void *ctx, const char *message)
{
    sink *s = ctx;
    s->n++;
    size_t used = strlen(s->text);
    snprintf(s->text + used, sizeof s->text - used, "%s\n", message);
}

/* The same check ninfer-verify runs on each object (nf_layout_check), over bytes in memory. */
typedef struct mem {
    const uint8_t *p;
    uint64_t len;
} mem;

static nf_status mem_read(void *ctx, uint64_t off, void *buf, size_t len, nf_error *err)
{
    mem *m = ctx;
    if (off + len > m->len) return nf_error_set(err, NF_ERR_INVALID, "read past the end");
    memcpy(buf, m->p + off, len);
    return NF_OK;
}

Test(gguf_scales, verify_reports_every_bad_block)
{
    for (size_t ti = 0; ti < NTYPES; ti++) {
        const block_type *t = &TYPES[ti];
        size_t len;
        uint8_t *q = nf_test_data(&len, "gguf/%s.qbytes", t->stem);
        nf_geometry g;
        nf_error err;
        uint64_t shape[2] = {ROWS, COLS};
        cr_assert_eq(nf_geometry_init(&g, nf_layout_lookup("gguf_blocks_v1"), fmt_of(t), 2, shape, 1, &err), NF_OK);
        mem m = {q, len};
        nf_byte_reader r = {mem_read, &m};
        sink clean = {{0}, 0};
        uint64_t found = 99;
        cr_assert_eq(nf_layout_check(&g, &r, collect, &clean, 20, &found, &err), NF_OK, "%s", err.message);
        cr_assert_eq(found, 0, "%s: %s", t->stem, clean.text);
        unsigned per_row = COLS / t->qk;
        poison(t, q, 0, 0, 0x7C00);
        poison(t, q, 9 * per_row + per_row - 1, t->dmin >= 0 ? 1 : 0, 0x7E01);
        poison(t, q, 15 * per_row, 0, 0xFFFF);
        sink s[2];
        for (int fast = 0; fast < 2; fast++) {
            nf_ggml_scan_fast = fast;
            nf_layout_check_fast = fast;
            memset(&s[fast], 0, sizeof s[fast]);
            cr_assert_eq(nf_layout_check(&g, &r, collect, &s[fast], 20, &found, &err), NF_OK, "%s", err.message);
            cr_assert_eq(found, 3, "%s: %s", t->stem, s[fast].text);
        }
        nf_ggml_scan_fast = true;
        nf_layout_check_fast = true;
        cr_assert_str_eq(s[0].text, s[1].text, "%s: fast and exact paths differ", t->stem);
        char want[3][160];
        int f = t->dmin >= 0 ? 1 : 0;
        unsigned dlast = t->d < 0 ? 48u : (unsigned)(f ? t->dmin : t->d), d0 = t->d < 0 ? 48u : (unsigned)t->d;
        snprintf(want[0], sizeof want[0], "row 0 block 0: %s scale d 0x7c00 at byte offset %u is +infinity",
                 t->ggml_name, d0);
        snprintf(want[1], sizeof want[1], "row 9 block %u: %s scale %s 0x7e01 at byte offset %u is NaN", per_row - 1,
                 t->ggml_name, f ? "dmin" : "d", (9 * per_row + per_row - 1) * t->bb + dlast);
        snprintf(want[2], sizeof want[2], "row 15 block 0: %s scale d 0xffff at byte offset %u is NaN", t->ggml_name,
                 15 * per_row * t->bb + d0);
        for (int k = 0; k < 3; k++)
            cr_assert(strstr(s[1].text, want[k]), "%s: want '%s' in\n%s", t->stem, want[k], s[1].text);
        free(q);
    }
}
