/* import_encoded of the GGUF block types read as values (docs/formats.md 8.5, ninfer/import.h):
 * every MXFP4 exponent and every NVFP4 scale byte with every code, imported into nvfp4 and decoded,
 * against ggml's own to_float of the same blocks (tests/data/gguf/more) bit for bit, or refused by
 * row and block where nvfp4 cannot hold them; the ternary types' and Q8_1's refusals by row,
 * column and word. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "support/test_data.h"
#include "support/test_float.h"

static const uint64_t fp4_shape[2] = {128, 64};

/* One row of two MXFP4 blocks (both `blk`) imported under 2^p: OK and the 64 values, or the error. */
static nf_status mxfp4_row(const uint8_t *blk, int32_t p, float *vals, nf_error *err)
{
    const nf_import_tensor t = {"blk.0.ffn_down_exps.weight", NULL, 39, 2, fp4_shape};
    nf_import imp;
    cr_assert_eq(nf_import_init_gguf_fp4(&imp, &t, p, err), NF_OK, "%s", err->message);
    cr_assert_str_eq(nf_import_kind_name(imp.kind), "gguf_mxfp4");
    nf_geometry g;
    cr_assert_eq(nf_import_geometry(&imp, &g, err), NF_OK, "%s", err->message);
    nf_words w;
    cr_assert_eq(nf_words_alloc(&w, &g, 1, err), NF_OK);
    uint8_t row[34];
    memcpy(row, blk, 17);
    memcpy(row + 17, blk, 17);
    nf_import_chunk c = {5, 1, row, sizeof row, NULL, 0, 0};
    nf_status st = nf_import_rows(&imp, &c, &w, 0, err);
    if (st == NF_OK)
        for (unsigned col = 0; col < 64; col++)
            vals[col] = nf_nvfp4_value(w.codes8[col], w.scales8[col / 16], imp.divisor);
    nf_words_free(&w);
    return st;
}

Test(import_gguf_values, mxfp4_every_exponent)
{
    size_t qlen, flen;
    uint8_t *q = nf_test_data(&qlen, "gguf/more/mxfp4.sweep.qbytes");
    uint8_t *ref = nf_test_data(&flen, "gguf/more/mxfp4.sweep.dequant.f32");
    cr_assert_eq(qlen, 256u * 17u);
    unsigned refused = 0;
    for (int e = 0; e < 256; e++) {
        const uint8_t *blk = q + 17 * e;
        float want[32], got[64];
        memcpy(want, ref + 4 * 32 * e, sizeof want);
        bool inf = false;
        for (int i = 0; i < 32; i++) inf = inf || isinf(want[i]);
        /* the divisor the plan chooses for a matrix whose largest exponent is e, and one 17
         * octaves lower (the range's other end), and one past it */
        const int32_t top = 135 - e < 127 ? 135 - e : 127;
        const int32_t ps[3] = {top, top - 17 >= -126 ? top - 17 : top, top - 18 >= -126 ? top - 18 : top};
        for (int k = 0; k < 3; k++) {
            nf_error err = {0};
            const int t = e - 127 + ps[k];
            nf_status st = mxfp4_row(blk, ps[k], got, &err);
            if (inf) {
                cr_assert_eq(st, NF_ERR_INVALID, "e %d", e);
                cr_assert(strstr(err.message, "row 5 block 0 (cols 0..31)") && strstr(err.message, "overflows"), "%s",
                          err.message);
                refused++;
                continue;
            }
            if (t < -9 || t > 8) {
                cr_assert_eq(st, NF_ERR_INVALID, "e %d p %d", e, ps[k]);
                cr_assert(strstr(err.message, "row 5 block 0") && strstr(err.message, "requantize"), "%s", err.message);
                continue;
            }
            cr_assert_eq(st, NF_OK, "e %d p %d: %s", e, ps[k], err.message);
            for (int col = 0; col < 64; col++)
                cr_assert_eq(bits_of_f32(got[col]), bits_of_f32(want[col % 32]), "e %d p %d col %d: %a, ggml %a", e,
                             ps[k], col, (double)got[col], (double)want[col % 32]);
        }
    }
    cr_expect_eq(refused, 3u * 3u, "e 253..255 hold codes past binary32 (12 * 2^125 and up)");
    free(q);
    free(ref);
}

Test(import_gguf_values, nvfp4_every_scale_byte)
{
    size_t qlen, flen;
    uint8_t *q = nf_test_data(&qlen, "gguf/more/nvfp4.sweep.qbytes");
    uint8_t *ref = nf_test_data(&flen, "gguf/more/nvfp4.sweep.dequant.f32");
    cr_assert_eq(qlen, 64u * 36u);
    const nf_import_tensor t = {"blk.0.ffn_up.weight", NULL, 40, 2, fp4_shape};
    nf_import imp;
    nf_error err = {0};
    cr_assert_eq(nf_import_init_gguf_fp4(&imp, &t, 1, &err), NF_ERR_USAGE); /* NVFP4: divisor 1 only */
    cr_assert_eq(nf_import_init_gguf_fp4(&imp, &t, 0, &err), NF_OK, "%s", err.message);
    cr_assert_eq(imp.divisor, 0x3F800000u);
    nf_geometry g;
    cr_assert_eq(nf_import_geometry(&imp, &g, &err), NF_OK, "%s", err.message);
    nf_words w;
    cr_assert_eq(nf_words_alloc(&w, &g, 1, &err), NF_OK);
    for (unsigned b = 0; b < 64; b++) {
        nf_import_chunk c = {7, 1, q + 36 * b, 36, NULL, 0, 0};
        nf_status st = nf_import_rows(&imp, &c, &w, 0, &err);
        if (b == 63) { /* scale bytes 0xFC..0xFF: 0xFF (ggml's 240) has no E4M3 word */
            cr_assert_eq(st, NF_ERR_INVALID);
            cr_assert(strstr(err.message, "row 7 block 0 sub-block 3 (cols 48..63): UE4M3 scale 0xFF"), "%s",
                      err.message);
            continue;
        }
        cr_assert_eq(st, NF_OK, "block %u: %s", b, err.message);
        for (unsigned col = 0; col < 64; col++) {
            float want;
            memcpy(&want, ref + 4 * (64 * b + col), 4);
            float got = nf_nvfp4_value(w.codes8[col], w.scales8[col / 16], imp.divisor);
            cr_assert_eq(bits_of_f32(got), bits_of_f32(want), "block %u col %u: %a, ggml %a", b, col, (double)got,
                         (double)want);
        }
    }
    nf_words_free(&w);
    free(q);
    free(ref);
}

/* One row of blocks of a ternary-style type into `target`: the status, err. */
static nf_status ternary_row(int ggml_type, const char *target, const uint8_t *row, size_t len, uint64_t k,
                             nf_error *err)
{
    const uint64_t shape[2] = {4, k};
    const nf_import_tensor t = {"blk.0.attn_v.weight", NULL, ggml_type, 2, shape};
    nf_import imp;
    cr_assert_eq(nf_import_init_gguf(&imp, nf_format_lookup(target), &t, err), NF_OK, "%s", err->message);
    cr_assert_str_eq(nf_import_kind_name(imp.kind), "gguf_ternary");
    nf_geometry g;
    cr_assert_eq(nf_import_geometry(&imp, &g, err), NF_OK, "%s", err->message);
    nf_words w;
    cr_assert_eq(nf_words_alloc(&w, &g, 1, err), NF_OK);
    nf_import_chunk c = {2, 1, row, len, NULL, 0, 0};
    nf_status st = nf_import_rows(&imp, &c, &w, 0, err);
    nf_words_free(&w);
    return st;
}

Test(import_gguf_values, ternary_refusals)
{
    nf_error err = {0};
    uint8_t tq2[66] = {0};
    memset(tq2, 0x55, 64); /* every code 1: q = 0 */
    tq2[64] = 0x00;
    tq2[65] = 0x3C; /* d = 1 */
    cr_assert_eq(ternary_row(35, "t2_g128_fp16", tq2, 66, 256, &err), NF_OK, "%s", err.message);
    tq2[40] = 0x57; /* element 128 + 8: code 3 (+2) */
    cr_assert_eq(ternary_row(35, "t2_g128_fp16", tq2, 66, 256, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "blk.0.attn_v.weight") &&
                  strstr(err.message, "row 2 col 136 (block 0): TQ2_0 code 2 under scale 0x3C00"),
              "%s", err.message);
    cr_assert_eq(ternary_row(35, "q2_g64_fp16", tq2, 66, 256, &err), NF_OK, "%s", err.message); /* q2: +2 */
    tq2[65] = 0x80;                                                                             /* d = -0 */
    cr_assert_eq(ternary_row(35, "t2_g128_fp16", tq2, 66, 256, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "row 2 block 0: TQ2_0 scale 0x8000 is -0"), "%s", err.message);
    cr_assert_eq(ternary_row(35, "q2_g64_fp16", tq2, 66, 256, &err), NF_OK, "%s", err.message);
    tq2[65] = 0x7C; /* +infinity: refused by both */
    cr_assert_eq(ternary_row(35, "q2_g64_fp16", tq2, 66, 256, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "scale 0x7C00 is +infinity"), "%s", err.message);
    /* Q1_0 under d = +0: +-1 codes over a zero scale, which T2 does not allow */
    uint8_t q1[18] = {0x00, 0x00, 0xFF};
    cr_assert_eq(ternary_row(41, "t2_g128_fp16", q1, 18, 128, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "row 2 col 0 (block 0): Q1_0 code 1 under scale 0x0000"), "%s", err.message);
    cr_assert_eq(ternary_row(41, "q2_g64_fp16", q1, 18, 128, &err), NF_OK, "%s", err.message);
    /* TQ1_0 into q8: not a target of it */
    const uint64_t shape[2] = {4, 256};
    const nf_import_tensor t = {"w", NULL, 34, 2, shape};
    nf_import imp;
    cr_assert_eq(nf_import_init_gguf(&imp, nf_format_lookup("q8_g32_fp16"), &t, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "TQ1_0") && strstr(err.message, "Q8_0"), "%s", err.message);
}

Test(import_gguf_values, q8_1_into_q8)
{
    const uint64_t shape[2] = {1, 32};
    const nf_import_tensor t = {"blk.0.attn_q.weight", NULL, 9, 2, shape};
    nf_import imp;
    nf_error err = {0};
    cr_assert_eq(nf_import_init_gguf(&imp, nf_format_lookup("q8_g32_fp16"), &t, &err), NF_OK, "%s", err.message);
    cr_assert_str_eq(nf_import_kind_name(imp.kind), "q8_1");
    cr_assert_eq(imp.row_bytes, 36u);
    nf_geometry g;
    cr_assert_eq(nf_import_geometry(&imp, &g, &err), NF_OK, "%s", err.message);
    nf_words w;
    cr_assert_eq(nf_words_alloc(&w, &g, 1, &err), NF_OK);
    uint8_t blk[36] = {0x00, 0x3C, 0x12, 0x34}; /* d = 1, s = anything */
    for (int j = 0; j < 32; j++) blk[4 + j] = (uint8_t)(j * 7 - 100);
    nf_import_chunk c = {0, 1, blk, 36, NULL, 0, 0};
    cr_assert_eq(nf_import_rows(&imp, &c, &w, 0, &err), NF_OK, "%s", err.message);
    cr_assert_eq(w.scales[0], 0x3C00);
    for (int j = 0; j < 32; j++) cr_assert_eq(w.codes[j], (int8_t)(uint8_t)(j * 7 - 100), "code %d", j);
    blk[4 + 9] = 0x80;
    cr_assert_eq(nf_import_rows(&imp, &c, &w, 0, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "row 0 col 9 (block 0): Q8_1 code 0x80 is -128"), "%s", err.message);
    nf_words_free(&w);
}

/* An all-zero MXFP4 block takes any scale: exponent 255 beside 127 is no reason to refuse. */
Test(import_gguf_values, mxfp4_zero_block_any_exponent)
{
    const nf_import_tensor t = {"blk.0.ffn_down_exps.weight", NULL, 39, 2, fp4_shape};
    nf_import imp;
    nf_error err = {0};
    cr_assert_eq(nf_import_init_gguf_fp4(&imp, &t, 8, &err), NF_OK, "%s", err.message); /* 135 - 127 */
    nf_geometry g;
    cr_assert_eq(nf_import_geometry(&imp, &g, &err), NF_OK, "%s", err.message);
    nf_words w;
    cr_assert_eq(nf_words_alloc(&w, &g, 1, &err), NF_OK);
    uint8_t row[34] = {127};
    memset(row + 1, 0x22, 16); /* codes 2: 1.0 */
    row[17] = 255;
    memset(row + 18, 0x88, 16); /* codes 8: ggml's +0 */
    nf_import_chunk c = {0, 1, row, sizeof row, NULL, 0, 0};
    cr_assert_eq(nf_import_rows(&imp, &c, &w, 0, &err), NF_OK, "%s", err.message);
    for (unsigned col = 0; col < 64; col++) {
        float v = nf_nvfp4_value(w.codes8[col], w.scales8[col / 16], imp.divisor);
        cr_assert_eq(bits_of_f32(v), bits_of_f32(col < 32 ? 1.0f : 0.0f), "col %u: %a", col, (double)v);
    }
    nf_words_free(&w);
}
