/* Known answers of docs/vectors.md items 4-9, 11, 12, 15 and the derived ones (layout level), byte
 * for byte, plus the GGUF Q2_0 fixture moved into row_split planes. */
#include <math.h>

#include "test_layout_util.h"
#include "support/test_data.h"

/* Full expected image: zeros except the given (offset, bytes) pieces. */
typedef struct piece {
    uint64_t offset;
    const char *hex; /* "D7 01 49" */
} piece;

static void expect_image(const uint8_t *got, uint64_t size, const piece *pieces, size_t npieces)
{
    uint8_t *want = calloc(size, 1);
    for (size_t i = 0; i < npieces; i++) {
        const char *h = pieces[i].hex;
        uint64_t off = pieces[i].offset;
        while (*h) {
            while (*h == ' ') h++;
            if (!*h) break;
            unsigned v;
            cr_assert_eq(sscanf(h, "%2x", &v), 1);
            want[off++] = (uint8_t)v;
            h += 2;
        }
    }
    for (uint64_t i = 0; i < size; i++)
        cr_assert_eq(got[i], want[i], "byte %" PRIu64 ": got 0x%02x, want 0x%02x", i, got[i], want[i]);
    free(want);
}

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static nf_words alloc_words(const nf_geometry *g)
{
    nf_words w;
    nf_error err = {0};
    cr_assert_eq(nf_words_alloc(&w, g, g->rows, &err), NF_OK, "%s", err.message);
    return w;
}

static nf_status encode_status(const nf_geometry *g, const nf_words *w, nf_error *err)
{
    uint8_t *out = malloc(g->bytes);
    nf_status st = nf_layout_encode(g, w, out, err);
    free(out);
    return st;
}

/* ---------------------------------------------------------------- item 4: Q2 codec */
static void q2_item4_words(nf_geometry *g, nf_words *w)
{
    *g = geo2("q2_g64_fp16", 2, 128, 1);
    *w = alloc_words(g);
    for (int i = 0; i < 256; i++) w->codes[i] = (int8_t)(i % 4 - 1);
    static const uint16_t s[4] = {0x3800, 0xBC00, 0x0001, 0x8000};
    memcpy(w->scales, s, sizeof s);
}

Test(layout_vectors, item4_q2_codec)
{
    nf_geometry g;
    nf_words w;
    q2_item4_words(&g, &w);
    cr_assert_eq(g.bytes, 264);
    uint8_t *out = encode_all(&g, &w);
    for (int i = 0; i < 64; i++) cr_assert_eq(out[i], 0xE4, "byte %d", i);
    for (int i = 64; i < 256; i++) cr_assert_eq(out[i], 0x00, "byte %d", i);
    static const uint8_t sc[8] = {0x00, 0x38, 0x00, 0xBC, 0x01, 0x00, 0x00, 0x80};
    cr_assert_eq(memcmp(out + 256, sc, 8), 0);
    problems p;
    cr_assert_eq(check_bytes(&g, out, &p), 0);
    free(out);

    nf_error err = {0};
    /* codes -2 and 3 refused (checked and, as they do not fit 2-bit offset words, unchecked) */
    int bad_codes[2] = {-2, 3};
    for (int i = 0; i < 2; i++) {
        w.codes[77] = (int8_t)bad_codes[i];
        cr_assert_eq(nf_words_check(&g, &w, 0, &err), NF_ERR_INVALID);
        cr_assert(strstr(err.message, "row 0 col 77"), "%s", err.message);
        cr_assert_eq(encode_status(&g, &w, &err), NF_ERR_INVALID);
        cover_sink c;
        cover_init(&c, g.bytes);
        cr_assert_eq(nf_layout_encode_rows(&g, &w, 0, true, cover_write, &c, &err), NF_ERR_INVALID);
        cr_assert(strstr(err.message, "does not fit"), "%s", err.message);
        cover_free(&c);
    }
    w.codes[77] = 0;
    /* +-inf and NaN scales refused; -0 and subnormals fine */
    uint16_t bad_scales[4] = {0x7C00, 0xFC00, 0x7E00, 0x7E01};
    for (int i = 0; i < 4; i++) {
        w.scales[3] = bad_scales[i];
        cr_assert_eq(nf_words_check(&g, &w, 0, &err), NF_ERR_INVALID, "0x%04x", bad_scales[i]);
        cr_assert(strstr(err.message, "row 1 group 1"), "%s", err.message);
    }
    w.scales[3] = 0x8000;
    cr_assert_eq(nf_words_check(&g, &w, 0, &err), NF_OK);
    nf_words_free(&w);
}

/* ---------------------------------------------------------------- item 5: Q2 writer interop */
Test(layout_vectors, item5_q2_writer_interop)
{
    nf_geometry g = geo2("q2_g64_fp16", 2, 65, 1);
    nf_words w = alloc_words(&g);
    for (int r = 0; r < 2; r++) {
        for (int i = 0; i < 64; i++) w.codes[r * 65 + i] = (int8_t)(i % 4 - 1);
        w.codes[r * 65 + 64] = -1;
    }
    static const uint16_t s[4] = {0x3800, 0xBC00, 0x0001, 0x8000};
    memcpy(w.scales, s, sizeof s);
    uint8_t *out = encode_all(&g, &w);
    cr_assert_eq(g.bytes, 264);
    for (int r = 0; r < 2; r++)
        for (int j = 0; j < 32; j++) {
            uint8_t want = j < 16 ? 0xE4 : j == 16 ? 0x54 : 0x55;
            cr_assert_eq(out[32 * r + j], want, "row %d byte %d", r, j);
        }
    for (int i = 64; i < 256; i++) cr_assert_eq(out[i], 0);
    static const uint8_t sc[8] = {0x00, 0x38, 0x00, 0xBC, 0x01, 0x00, 0x00, 0x80};
    cr_assert_eq(memcmp(out + 256, sc, 8), 0);
    problems p;
    cr_assert_eq(check_bytes(&g, out, &p), 0);

    /* decode restores the words, padding dropped */
    nf_words d = alloc_words(&g);
    nf_memory_source mem;
    nf_byte_reader rd;
    nf_byte_reader_memory(&rd, &mem, out, g.bytes);
    cr_assert_eq(nf_layout_decode_rows(&g, &rd, 0, 2, &d, NULL), NF_OK);
    cr_assert(words_equal(&g, &w, &d, 2, false));
    /* values: Q2 reconstructs (u-1)*scale; -0 scale gives signed zeros */
    float v[130];
    cr_assert_eq(nf_words_to_f32(&g, &w, 0, v, NULL), NF_OK);
    cr_assert_eq(v[0], -0.5f);
    cr_assert_eq(v[3], 1.0f);
    cr_assert_eq(v[64], 1.0f);                          /* -1 * -1.0 */
    cr_assert_eq(nf_f32_bits(v[65 + 64]), 0x00000000u); /* -1 * -0 = +0 */
    cr_assert_eq(nf_f32_bits(v[65 + 2]), 0x33800000u);  /* 1 * 2^-24 */
    nf_words_free(&w);
    nf_words_free(&d);
    free(out);
}

/* ---------------------------------------------------------------- item 6: packed bytes */
typedef struct pack_case {
    const char *fmt;
    uint64_t k;
    int codes[8];
    int ncodes;
    uint64_t total;
    piece pieces[3];
    size_t npieces;
} pack_case;

Test(layout_vectors, item6_row_split_packed_bytes)
{
    static const pack_case cases[] = {
        {"q4_g64_fp16", 65, {-8, -7, -1, 0, 1, 7}, 6, 260, {{0, "98 0F 71"}, {256, "00 3E 00 34"}}, 2},
        {"q5_g64_fp16", 130, {-16, -15, -1, 0, 1, 15}, 6, 520, {{0, "10 0F F1"}, {256, "07"}, {512, "00 3E 00 34"}}, 3},
        {"q6_g64_fp16",
         65,
         {-32, -31, -17, -16, -1, 0, 15, 31},
         8,
         516,
         {{0, "10 0F 0F FF"}, {256, "EA 43"}, {512, "00 3E 00 34"}},
         3},
        {"q8_g32_fp16", 33, {-127, -1, 0, 1, 127}, 5, 264, {{0, "81 FF 00 01 7F"}, {256, "00 3E 00 34"}}, 2},
        {"t2_g128_fp16", 130, {-1, 0, 1, 1, -1, 0, 0, 1}, 8, 260, {{0, "53 43"}, {256, "00 3E 00 34"}}, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const pack_case *c = &cases[i];
        nf_geometry g = geo2(c->fmt, 1, c->k, 1);
        cr_assert_eq(g.bytes, c->total, "%s", c->fmt);
        nf_words w = alloc_words(&g);
        for (int j = 0; j < c->ncodes; j++) w.codes[j] = (int8_t)c->codes[j];
        w.scales[0] = 0x3E00;
        w.scales[1] = 0x3400;
        uint8_t *out = encode_all(&g, &w);
        expect_image(out, g.bytes, c->pieces, c->npieces);
        problems p;
        cr_assert_eq(check_bytes(&g, out, &p), 0, "%s", c->fmt);
        nf_words d = alloc_words(&g);
        nf_memory_source mem;
        nf_byte_reader rd;
        nf_byte_reader_memory(&rd, &mem, out, g.bytes);
        cr_assert_eq(nf_layout_decode_rows(&g, &rd, 0, 1, &d, NULL), NF_OK);
        cr_assert(words_equal(&g, &w, &d, 1, false), "%s", c->fmt);
        nf_words_free(&w);
        nf_words_free(&d);
        free(out);
    }
}

/* ---------------------------------------------------------------- 6.2: grouped_absmax q4 payload */
Test(layout_vectors, derived_q4_payload)
{
    nf_geometry g = geo2("q4_g64_fp16", 1, 65, 1);
    nf_words w = alloc_words(&g);
    static const int8_t c0[8] = {7, -3, 1, 0, -7, 4, 1, 0};
    memcpy(w.codes, c0, 8);
    w.codes[64] = -7;
    w.scales[0] = 0x301D;
    w.scales[1] = 0x2750;
    uint8_t *out = encode_all(&g, &w);
    cr_assert_eq(g.bytes, 260);
    static const piece pieces[] = {{0, "D7 01 49 01"}, {32, "09"}, {256, "1D 30 50 27"}};
    expect_image(out, g.bytes, pieces, 3);
    float v[65];
    cr_assert_eq(nf_words_to_f32(&g, &w, 0, v, NULL), NF_OK);
    for (int i = 0; i < 65; i++) {
        uint16_t s = i < 64 ? 0x301D : 0x2750;
        float want = nf_f16_to_f32(s) * (float)w.codes[i];
        cr_assert_eq(nf_f32_bits(v[i]), nf_f32_bits(want), "col %d", i);
    }
    nf_words_free(&w);
    free(out);
}

/* ---------------------------------------------------------------- item 7: NVFP4 */
Test(layout_vectors, item7_nvfp4)
{
    nf_geometry g = geo2("nvfp4", 128, 64, 1);
    cr_assert_eq(g.planes[0].bytes, 4096);
    cr_assert_eq(g.planes[1].offset, 4096);
    cr_assert_eq(g.planes[1].bytes, 512);
    cr_assert_eq(g.planes[2].offset, 4608);
    cr_assert_eq(g.bytes, 4612);
    nf_words w = alloc_words(&g);
    w.codes8[0] = 0;
    w.codes8[1] = 1;
    /* distinct scale words at every natural position */
    for (int r = 0; r < 128; r++)
        for (int l = 0; l < 4; l++) w.scales8[r * 4 + l] = (uint8_t)((r * 4 + l) % 0x7F);
    w.divisors[0] = 0x40200000; /* 2.5 */
    uint8_t *out = encode_all(&g, &w);
    cr_assert_eq(out[0], 0x10);
    static const int probes[4][2] = {{0, 0}, {31, 3}, {32, 0}, {127, 3}};
    for (int i = 0; i < 4; i++) {
        int r = probes[i][0], l = probes[i][1];
        cr_assert_eq(out[4096 + (r % 32) * 16 + (r / 32) * 4 + l], w.scales8[r * 4 + l], "(%d,%d)", r, l);
    }
    /* the documented swizzle offsets */
    cr_assert_eq(out[4096 + 496], w.scales8[31 * 4 + 0]);
    cr_assert_eq(out[4096 + 4], w.scales8[32 * 4 + 0]);
    cr_assert_eq(out[4096 + 499], w.scales8[31 * 4 + 3]);
    cr_assert_eq(out[4096 + 511], w.scales8[127 * 4 + 3]);
    static const uint8_t d25[4] = {0x00, 0x00, 0x20, 0x40};
    cr_assert_eq(memcmp(out + 4608, d25, 4), 0);

    /* represented value divides by 2.5 after the exact product */
    w.codes8[2] = 2;     /* 1.0 */
    w.scales8[0] = 0x38; /* 1.0 */
    float *v = malloc(sizeof(float) * 128 * 64);
    cr_assert_eq(nf_words_to_f32(&g, &w, 0, v, NULL), NF_OK);
    cr_assert_eq(v[2], 1.0f / 2.5f);
    cr_assert_eq(nf_f32_bits(v[2]), nf_f32_bits(nf_nvfp4_value(2, 0x38, 0x40200000)));
    free(v);
    nf_words_free(&w);
    free(out);
}

/* Full swizzle of a multi-tile plane against an independent reading of the formula. */
Test(layout_vectors, nvfp4_swizzle_multi_tile)
{
    nf_geometry g = geo2("nvfp4", 256, 192, 1);
    nf_words w = alloc_words(&g);
    uint64_t spr = 192 / 16, k_tiles = 3;
    rng r = {7};
    for (uint64_t i = 0; i < 256 * spr; i++) w.scales8[i] = (uint8_t)(rng_next(&r) % 0x7F);
    w.divisors[0] = 0x3F800000;
    uint8_t *out = encode_all(&g, &w);
    uint64_t base = g.planes[1].offset;
    cr_assert_eq(base, 256 * 96);
    for (uint64_t n = 0; n < 256; n++)
        for (uint64_t grp = 0; grp < spr; grp++) {
            uint64_t off = ((n / 128) * k_tiles + grp / 4) * 512 + ((n % 128) % 32) * 16 + ((n % 128) / 32) * 4 +
                           grp % 4;
            cr_assert_eq(out[base + off], w.scales8[n * spr + grp], "row %" PRIu64 " group %" PRIu64, n, grp);
        }
    nf_words_free(&w);
    free(out);
}

/* ---------------------------------------------------------------- item 8: FP8 row bf16 */
static const uint8_t fp8_codes[8] = {0x00, 0x80, 0x38, 0xB8, 0x40, 0xC0, 0x7E, 0xFE};

Test(layout_vectors, item8_fp8_row_bf16)
{
    nf_geometry g = geo2("fp8_e4m3fn_row_bf16", 2, 4, 1);
    nf_words w = alloc_words(&g);
    memcpy(w.codes8, fp8_codes, 8);
    w.scales[0] = 0x3F00;
    w.scales[1] = 0x4000;
    uint8_t *out = encode_all(&g, &w);
    static const piece pieces[] = {{0, "00 80 38 B8 40 C0 7E FE"}, {256, "00 3F 00 40"}};
    cr_assert_eq(g.bytes, 260);
    expect_image(out, g.bytes, pieces, 2);
    float v[8];
    cr_assert_eq(nf_words_to_f32(&g, &w, 0, v, NULL), NF_OK);
    static const uint32_t want[8] = {0x00000000, 0x80000000, 0x3F000000, 0xBF000000,
                                     0x40800000, 0xC0800000, 0x44600000, 0xC4600000}; /* 896 */
    for (int i = 0; i < 8; i++) cr_assert_eq(nf_f32_bits(v[i]), want[i], "value %d: %a", i, (double)v[i]);

    nf_error err = {0};
    w.codes8[5] = 0x7F;
    cr_assert_eq(nf_words_check(&g, &w, 0, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "row 1 col 1"), "%s", err.message);
    cr_assert_eq(encode_status(&g, &w, &err), NF_ERR_INVALID);
    w.codes8[5] = 0xC0;
    w.scales[0] = 0x8000;
    cr_assert_eq(nf_words_check(&g, &w, 0, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "row 0"), "%s", err.message);
    w.scales[0] = 0x0000;
    w.codes8[0] = 0x38;
    w.codes8[1] = 0x00;
    w.codes8[2] = 0x00;
    w.codes8[3] = 0x00;
    cr_assert_eq(nf_words_check(&g, &w, 0, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "row 0 col 0") && strstr(err.message, "+0"), "%s", err.message);
    w.codes8[0] = 0x80; /* signed zeros are fine under a +0 scale */
    cr_assert_eq(nf_words_check(&g, &w, 0, &err), NF_OK, "%s", err.message);
    nf_words_free(&w);
    free(out);
}

/* ---------------------------------------------------------------- item 9: FP8 row fp16 */
Test(layout_vectors, item9_fp8_row_fp16_interleaved)
{
    nf_geometry g = geo2("fp8_e4m3fn_row_fp16", 2, 4, 1);
    nf_words w = alloc_words(&g);
    memcpy(w.codes8, fp8_codes, 8);
    w.scales[0] = 0x3800;
    w.scales[1] = 0x4000;
    uint8_t *out = encode_all(&g, &w);
    static const uint8_t want[12] = {0x00, 0x80, 0x38, 0xB8, 0x00, 0x38, 0x40, 0xC0, 0x7E, 0xFE, 0x00, 0x40};
    cr_assert_eq(g.bytes, 12);
    cr_assert_eq(memcmp(out, want, 12), 0);
    float v[8];
    cr_assert_eq(nf_words_to_f32(&g, &w, 0, v, NULL), NF_OK);
    cr_assert_eq(v[6], 896.0f);
    cr_assert_eq(nf_f32_bits(v[1]), 0x80000000u);

    nf_error err = {0};
    uint16_t bad[4] = {0x8000, 0xBC00, 0x7C00, 0x7E00};
    for (int i = 0; i < 4; i++) {
        w.scales[1] = bad[i];
        cr_assert_eq(nf_words_check(&g, &w, 0, &err), NF_ERR_INVALID, "0x%04x", bad[i]);
        cr_assert(strstr(err.message, "row 1"), "%s", err.message);
    }
    w.scales[1] = 0x0001; /* subnormal allowed */
    cr_assert_eq(nf_words_check(&g, &w, 0, &err), NF_OK);

    /* [1,1] record 38 00 00: zero scale with a nonzero code; decode restores, check refuses */
    nf_geometry g1 = geo2("fp8_e4m3fn_row_fp16", 1, 1, 1);
    static const uint8_t rec[3] = {56, 0, 0};
    problems p;
    cr_assert_geq(check_bytes(&g1, rec, &p), 1);
    cr_assert(problems_have(&p, "row 0 col 0", "+0 row scale"), "%s", p.msgs[0]);
    nf_words d = alloc_words(&g1);
    nf_memory_source mem;
    nf_byte_reader rd;
    nf_byte_reader_memory(&rd, &mem, rec, 3);
    cr_assert_eq(nf_layout_decode_rows(&g1, &rd, 0, 1, &d, &err), NF_OK);
    cr_assert_eq(d.codes8[0], 56);
    cr_assert_eq(d.scales[0], 0);
    /* codes 127 / 255 with scale 1.0 */
    uint8_t rec2[3] = {127, 0x00, 0x3C};
    cr_assert_geq(check_bytes(&g1, rec2, &p), 1);
    cr_assert(problems_have(&p, "row 0 col 0", "NaN"), "%s", p.msgs[0]);
    rec2[0] = 255;
    cr_assert_geq(check_bytes(&g1, rec2, &p), 1);
    /* truncated payload */
    nf_byte_reader_memory(&rd, &mem, out, 11);
    nf_words d2 = alloc_words(&g);
    cr_assert_eq(nf_layout_decode_rows(&g, &rd, 0, 2, &d2, &err), NF_ERR_INVALID);
    cr_assert_eq(nf_layout_decode_rows(&g, &rd, 0, 1, &d2, &err), NF_OK); /* row 0 is intact */
    uint64_t n = 0;
    cr_assert_eq(nf_layout_check(&g, &rd, NULL, NULL, 0, &n, &err), NF_ERR_INVALID);
    nf_words_free(&d);
    nf_words_free(&d2);
    nf_words_free(&w);
    free(out);
}

/* ---------------------------------------------------------------- item 11: Q2 import pieces */

/* ggml Q2_0 blocks [16,512] -> q2_g64_fp16 words -> row_split: the base plane is the blocks'
 * bytes 2..17 in row order, and the values equal ggml's dequantization bit for bit. */
Test(layout_vectors, item11_q2_from_gguf_blocks)
{
    size_t qn, dn;
    uint8_t *q = nf_test_data(&qn, "gguf/q2_0.qbytes");
    uint8_t *deq = nf_test_data(&dn, "gguf/q2_0.dequant.f32");
    cr_assert_eq(qn, 2304);
    cr_assert_eq(dn, 16 * 512 * 4);
    nf_geometry g = geo2("q2_g64_fp16", 16, 512, 1);
    nf_words w = alloc_words(&g);
    for (int r = 0; r < 16; r++)
        for (int b = 0; b < 8; b++) {
            const uint8_t *blk = q + (r * 8 + b) * 18;
            w.scales[r * 8 + b] = (uint16_t)(blk[0] | (blk[1] << 8));
            for (int j = 0; j < 64; j++)
                w.codes[r * 512 + b * 64 + j] = (int8_t)(((blk[2 + j / 4] >> (2 * (j % 4))) & 3) - 1);
        }
    uint8_t *out = encode_all(&g, &w);
    for (int r = 0; r < 16; r++)
        for (int b = 0; b < 8; b++)
            cr_assert_eq(memcmp(out + (r * 8 + b) * 16, q + (r * 8 + b) * 18 + 2, 16), 0, "row %d block %d", r, b);
    for (int i = 0; i < 128; i++) cr_assert_eq(le16(out + g.planes[1].offset + 2 * i), w.scales[i]);
    float *v = malloc(sizeof(float) * 16 * 512);
    cr_assert_eq(nf_words_to_f32(&g, &w, 0, v, NULL), NF_OK);
    cr_assert_eq(memcmp(v, deq, dn), 0, "q2 values differ from ggml's");
    problems p;
    cr_assert_eq(check_bytes(&g, out, &p), 0);
    free(v);
    free(out);
    nf_words_free(&w);

    /* K = 64: the second (padding) group is 0x55 with scale 0 */
    g = geo2("q2_g64_fp16", 2, 64, 1);
    w = alloc_words(&g);
    for (int r = 0; r < 2; r++) {
        const uint8_t *blk = q + r * 8 * 18;
        w.scales[r] = (uint16_t)(blk[0] | (blk[1] << 8));
        for (int j = 0; j < 64; j++) w.codes[r * 64 + j] = (int8_t)(((blk[2 + j / 4] >> (2 * (j % 4))) & 3) - 1);
    }
    out = encode_all(&g, &w);
    for (int r = 0; r < 2; r++) {
        cr_assert_eq(memcmp(out + 32 * r, q + r * 8 * 18 + 2, 16), 0);
        for (int j = 16; j < 32; j++) cr_assert_eq(out[32 * r + j], 0x55);
        cr_assert_eq(out[g.planes[1].offset + 4 * r + 2], 0);
        cr_assert_eq(out[g.planes[1].offset + 4 * r + 3], 0);
    }
    free(out);
    nf_words_free(&w);
    free(q);
    free(deq);

    /* scale words cycling 3800 BC00 0001 8000 0000 with any codes are legal Q2 words */
    g = geo2("q2_g64_fp16", 1, 640, 1);
    w = alloc_words(&g);
    static const uint16_t cyc[5] = {0x3800, 0xBC00, 0x0001, 0x8000, 0x0000};
    for (int i = 0; i < 10; i++) w.scales[i] = cyc[i % 5];
    for (int i = 0; i < 640; i++) w.codes[i] = (int8_t)(i % 4 - 1);
    nf_error err = {0};
    cr_assert_eq(nf_words_check(&g, &w, 0, &err), NF_OK, "%s", err.message);
    uint16_t bad[3] = {0x7C00, 0xFC00, 0x7E01};
    for (int i = 0; i < 3; i++) {
        w.scales[4] = bad[i];
        cr_assert_eq(nf_words_check(&g, &w, 0, &err), NF_ERR_INVALID);
        cr_assert(strstr(err.message, "group 4"), "%s", err.message);
    }
    nf_words_free(&w);
}

/* ---------------------------------------------------------------- item 12: Q8 words */
Test(layout_vectors, item12_q8_words)
{
    nf_geometry g = geo2("q8_g32_fp16", 2, 100, 1); /* 4 groups, 4 logical (last partial) */
    nf_words w = alloc_words(&g);
    static const uint16_t cyc[4] = {0x3800, 0xBC00, 0x0001, 0x0000};
    rng r = {12};
    for (int i = 0; i < 8; i++) w.scales[i] = cyc[i % 4];
    for (int row = 0; row < 2; row++)
        for (int c = 0; c < 100; c++)
            w.codes[row * 100 + c] = w.scales[row * 4 + c / 32] ? (int8_t)(rng_range(&r, 0, 254) - 127) : 0;
    nf_error err = {0};
    cr_assert_eq(nf_words_check(&g, &w, 0, &err), NF_OK, "%s", err.message);
    uint8_t *out = encode_all(&g, &w);
    /* padding lanes 100..127 of each row: code 0; no padding group here */
    for (int row = 0; row < 2; row++)
        for (int c = 100; c < 128; c++) cr_assert_eq(out[row * 128 + c], 0);
    free(out);

    struct {
        uint16_t scale;
        int code;
        const char *needle;
    } bad[] = {{0x8000, 0, "scale 0x8000"},
               {0x0000, 1, "+0 scale"},
               {0x7C00, 0, "scale 0x7c00"},
               {0x3800, -128, "-128"}};
    for (int i = 0; i < 4; i++) {
        nf_words b = alloc_words(&g);
        b.scales[5] = bad[i].scale;
        b.codes[100 + 40] = (int8_t)bad[i].code; /* row 1 group 1 */
        cr_assert_eq(nf_words_check(&g, &b, 0, &err), NF_ERR_INVALID, "case %d", i);
        cr_assert(strstr(err.message, bad[i].needle) && strstr(err.message, "row 1"), "%s", err.message);
        nf_words_free(&b);
    }
    nf_words_free(&w);
}

/* ---------------------------------------------------------------- item 15: q5 fixture pieces */
Test(layout_vectors, item15_q5_fixture)
{
    nf_geometry g = geo2("q5_g64_fp16", 2, 130, 1);
    cr_assert_eq(g.bytes, 528);
    nf_words w = alloc_words(&g);
    static const uint16_t s[6] = {0x3800, 0x3C00, 0x3C00, 0x4000, 0x3C00, 0x3C00};
    memcpy(w.scales, s, sizeof s);
    w.codes[130 + 0] = 2;
    w.codes[130 + 1] = 5;
    uint8_t *out = encode_all(&g, &w);
    cr_assert_eq(out[128], 0x52);
    static const uint8_t sc[16] = {0x00, 0x38, 0x00, 0x3C, 0x00, 0x3C, 0x00, 0x00,
                                   0x00, 0x40, 0x00, 0x3C, 0x00, 0x3C, 0x00, 0x00};
    cr_assert_eq(memcmp(out + 512, sc, 16), 0);
    nf_words_free(&w);
    free(out);
}

/* ---------------------------------------------------------------- direct words and values */
Test(layout_vectors, direct_words_exact)
{
    uint64_t shape[2] = {2, 2};
    nf_geometry g;
    cr_assert_eq(nf_geometry_init(&g, L("contiguous_le_v1"), F("bf16"), 2, shape, 1, NULL), NF_OK);
    nf_words w = alloc_words(&g);
    static const uint16_t words[4] = {0x0000, 0x8000, 0x3F80, 0x7FC1};
    memcpy(w.w16, words, 8);
    uint8_t *out = encode_all(&g, &w);
    static const uint8_t want[8] = {0x00, 0x00, 0x00, 0x80, 0x80, 0x3F, 0xC1, 0x7F};
    cr_assert_eq(memcmp(out, want, 8), 0);
    free(out);
    nf_words_free(&w);

    uint64_t v3[1] = {3};
    cr_assert_eq(nf_geometry_init(&g, L("contiguous_le_v1"), F("int32"), 1, v3, 1, NULL), NF_OK);
    w = alloc_words(&g);
    w.w32[0] = 0x7FFFFFFF;
    w.w32[1] = 16777217;
    w.w32[2] = (uint32_t)-16777219;
    float v[3];
    cr_assert_eq(nf_words_to_f32(&g, &w, 0, v, NULL), NF_OK);
    cr_assert_eq(v[0], 2147483648.0f);
    cr_assert_eq(v[1], 16777216.0f); /* tie to even */
    cr_assert_eq(v[2], -16777220.0f);
    nf_words_free(&w);

    cr_assert_eq(nf_geometry_init(&g, L("contiguous_le_v1"), F("fp32"), 0, NULL, 1, NULL), NF_OK);
    w = alloc_words(&g);
    w.w32[0] = 0x7FA00001; /* signalling NaN payload kept as a word */
    out = encode_all(&g, &w);
    static const uint8_t nan_bytes[4] = {0x01, 0x00, 0xA0, 0x7F};
    cr_assert_eq(memcmp(out, nan_bytes, 4), 0);
    free(out);
    nf_words_free(&w);
}
