/* import_encoded of GGUF block tensors (docs/methods.md, import_encoded): Q2_0 -> q2_g64_fp16 (docs/vectors.md
 * item 11), Q8_0 -> q8_g32_fp16 (item 12), PQ2_0 -> t2_g128_fp16 (bit remapping), gguf_* byte
 * copies; the real ggml fixtures of tests/data/gguf decoded bit for bit against ggml's own
 * dequantization; refusals with their messages; chunk independence and placement of rows in a
 * parent.
 *
 * Expected words come from the block bytes through the spec's formulas written out here
 * (element j of a Q2_0 block at bits 2(j%4) of byte 2 + j/4, value d * (u - 1)), expected
 * encoded bytes from docs/layouts.md 4's plane formulas: nothing is taken from the code under test. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "support/test_float.h"
#include "support/test_data.h"

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

static const nf_format *F(const char *name)
{
    const nf_format *f = nf_format_lookup(name);
    cr_assert_not_null(f, "format %s", name);
    return f;
}

static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

/* A GGUF tensor declaration [n, k] (shape must outlive the import's use of it). */
static nf_import_tensor gguf2(const char *name, int type, uint64_t shape[2], uint64_t n, uint64_t k)
{
    shape[0] = n;
    shape[1] = k;
    return (nf_import_tensor){.name = name, .dtype = NULL, .ggml_type = type, .rank = 2, .shape = shape};
}

static nf_import init_ok(const char *target, const nf_import_tensor *t)
{
    nf_import imp;
    nf_error err = {0};
    nf_status st = nf_import_init_gguf(&imp, F(target), t, &err);
    cr_assert_eq(st, NF_OK, "init %s: %s", target, err.message);
    return imp;
}

static nf_geometry geometry_ok(const nf_import *imp)
{
    nf_geometry g;
    nf_error err = {0};
    cr_assert_eq(nf_import_geometry(imp, &g, &err), NF_OK, "%s", err.message);
    return g;
}

static nf_words words_for(const nf_geometry *g, uint64_t rows)
{
    nf_words w;
    nf_error err = {0};
    cr_assert_eq(nf_words_alloc(&w, g, rows, &err), NF_OK, "%s", err.message);
    return w;
}

/* Import rows [r0, r0 + rows) of data into w at out_row; returns the status. */
static nf_status import_rows(const nf_import *imp, const uint8_t *data, uint64_t r0, uint64_t rows, nf_words *w,
                             uint64_t out_row, nf_error *err)
{
    nf_import_chunk c = {.first_row = r0,
                         .rows = rows,
                         .data = data + r0 * imp->row_bytes,
                         .data_len = (size_t)(rows * imp->row_bytes)};
    return nf_import_rows(imp, &c, w, out_row, err);
}

static void import_all(const nf_import *imp, const uint8_t *data, nf_words *w)
{
    nf_error err = {0};
    nf_status st = import_rows(imp, data, 0, imp->rows, w, 0, &err);
    cr_assert_eq(st, NF_OK, "%s", err.message);
}

/* Import a whole tensor of `rows` x `k` from blocks; expect a refusal whose message holds every
 * needle. */
static void expect_refused(const char *target, int type, const uint8_t *blocks, uint64_t n, uint64_t k,
                           const char *const *needles)
{
    uint64_t shape[2];
    nf_import_tensor t = gguf2("blk.0.ffn_up.weight", type, shape, n, k);
    nf_import imp = init_ok(target, &t);
    nf_geometry g = geometry_ok(&imp);
    nf_words w = words_for(&g, n);
    nf_error err = {0};
    nf_status st = import_rows(&imp, blocks, 0, n, &w, 0, &err);
    cr_assert_eq(st, NF_ERR_INVALID, "expected a refusal, got %d (%s)", st, err.message);
    for (size_t i = 0; needles[i]; i++)
        cr_assert_not_null(strstr(err.message, needles[i]), "message '%s' lacks '%s'", err.message, needles[i]);
    nf_words_free(&w);
}

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

/* Chunk independence: random splits of the rows, each imported into its own words and into its
 * place in a larger buffer, equal the whole import. */
static void check_chunks(const nf_import *imp, const uint8_t *data, const nf_words *whole, uint64_t seed)
{
    nf_geometry g = geometry_ok(imp);
    const nf_format *f = imp->target;
    uint64_t k = imp->cols;
    uint64_t groups = f->category == NF_CAT_GROUPED ? k / f->group_size : 0;
    rng r = {seed};
    for (int trial = 0; trial < 8; trial++) {
        nf_words placed = words_for(&g, imp->rows + 3);
        uint64_t r0 = 0;
        while (r0 < imp->rows) {
            uint64_t rows = 1 + rng_below(&r, imp->rows - r0);
            nf_words part = words_for(&g, rows);
            nf_error err = {0};
            cr_assert_eq(import_rows(imp, data, r0, rows, &part, 0, &err), NF_OK, "%s", err.message);
            cr_assert_eq(import_rows(imp, data, r0, rows, &placed, r0 + 3, &err), NF_OK, "%s", err.message);
            if (f->category == NF_CAT_GGUF) {
                cr_assert_eq(memcmp(part.blocks, whole->blocks + r0 * imp->row_bytes, rows * imp->row_bytes), 0);
            } else {
                cr_assert_eq(memcmp(part.codes, whole->codes + r0 * k, rows * k), 0,
                             "codes of rows [%" PRIu64 ",+%" PRIu64 ")", r0, rows);
                cr_assert_eq(memcmp(part.scales, whole->scales + r0 * groups, rows * groups * 2), 0);
            }
            nf_words_free(&part);
            r0 += rows;
        }
        if (f->category == NF_CAT_GGUF) {
            cr_assert_eq(memcmp(placed.blocks + 3 * imp->row_bytes, whole->blocks, imp->rows * imp->row_bytes), 0);
        } else {
            cr_assert_eq(memcmp(placed.codes + 3 * k, whole->codes, imp->rows * k), 0);
            cr_assert_eq(memcmp(placed.scales + 3 * groups, whole->scales, imp->rows * groups * 2), 0);
            /* rows before out_row untouched */
            for (uint64_t i = 0; i < 3 * k; i++) cr_assert_eq(placed.codes[i], 0);
        }
        nf_words_free(&placed);
    }
}

/* ------------------------------------------------------------------ Q2_0 -> q2 (item 11) */

static const uint16_t Q2_SCALES[5] = {0x3800, 0xBC00, 0x0001, 0x8000, 0x0000};

static uint8_t *random_q2_blocks(uint64_t nblocks, uint64_t seed)
{
    rng r = {seed};
    uint8_t *b = malloc(nblocks * 18);
    cr_assert_not_null(b);
    for (uint64_t i = 0; i < nblocks; i++) {
        put16(b + 18 * i, Q2_SCALES[i % 5]);
        for (int j = 2; j < 18; j++) b[18 * i + j] = (uint8_t)rng_next(&r);
    }
    return b;
}

static void q2_vector(uint64_t k)
{
    const uint64_t n = 3, nb = k / 64;
    uint8_t *blocks = random_q2_blocks(n * nb, 0x51 + k);
    uint64_t shape[2];
    nf_import_tensor t = gguf2("blk.0.ffn_gate.weight", 42, shape, n, k);
    nf_import imp = init_ok("q2_g64_fp16", &t);
    cr_assert_eq(imp.kind, NF_IMPORT_GSQ_Q2_0);
    cr_assert_eq(imp.rows, n);
    cr_assert_eq(imp.cols, k);
    cr_assert_eq(imp.row_bytes, nb * 18);
    nf_geometry g = geometry_ok(&imp);
    nf_words w = words_for(&g, n);
    import_all(&imp, blocks, &w);

    /* Words: scale = bytes 0..1, code of element j = ((byte[2 + (j%64)/4] >> 2(j%4)) & 3) - 1. */
    for (uint64_t r = 0; r < n; r++)
        for (uint64_t j = 0; j < k; j++) {
            const uint8_t *blk = blocks + (r * nb + j / 64) * 18;
            uint64_t jj = j % 64;
            int u = (blk[2 + jj / 4] >> (2 * (jj % 4))) & 3;
            cr_assert_eq(w.codes[r * k + j], u - 1, "K=%" PRIu64 " row %" PRIu64 " col %" PRIu64, k, r, j);
            if (jj == 0) cr_assert_eq(w.scales[r * nb + j / 64], (uint16_t)(blk[0] | blk[1] << 8));
        }
    nf_error err = {0};
    cr_assert_eq(nf_words_check(&g, &w, 0, &err), NF_OK, "%s", err.message);

    /* Values: scale * (code - 1) in binary32, bit for bit (signed zeros included). */
    float *vals = malloc(n * k * sizeof *vals);
    cr_assert_eq(nf_words_to_f32(&g, &w, 0, vals, &err), NF_OK, "%s", err.message);
    for (uint64_t r = 0; r < n; r++)
        for (uint64_t j = 0; j < k; j++) {
            const uint8_t *blk = blocks + (r * nb + j / 64) * 18;
            uint64_t jj = j % 64;
            int u = (blk[2 + jj / 4] >> (2 * (jj % 4))) & 3;
            double d = f16_value((uint16_t)(blk[0] | blk[1] << 8)); /* support/test_float.h */
            cr_assert(isfinite(d), "a non-finite scale in the fixture");
            float want = (float)d * (float)(u - 1);
            cr_assert_eq(bits_of_f32(vals[r * k + j]), bits_of_f32(want), "value row %" PRIu64 " col %" PRIu64, r, j);
        }

    /* Encoded: base plane = block bytes 2..17 in row order, padding groups 0x55; scale plane =
     * bytes 0..1, padding 0 (docs/layouts.md 4). */
    uint64_t gpr = align_up(k, 128) / 64, base_bytes = n * gpr * 16, scale_off = align_up(base_bytes, 256);
    cr_assert_eq(g.bytes, scale_off + n * gpr * 2);
    uint8_t *out = malloc(g.bytes);
    cr_assert_eq(nf_layout_encode(&g, &w, out, &err), NF_OK, "%s", err.message);
    for (uint64_t r = 0; r < n; r++)
        for (uint64_t gi = 0; gi < gpr; gi++) {
            const uint8_t *base = out + (r * gpr + gi) * 16, *sc = out + scale_off + (r * gpr + gi) * 2;
            if (gi < nb) {
                const uint8_t *blk = blocks + (r * nb + gi) * 18;
                cr_assert_eq(memcmp(base, blk + 2, 16), 0, "K=%" PRIu64 " row %" PRIu64 " group %" PRIu64, k, r, gi);
                cr_assert_eq(memcmp(sc, blk, 2), 0);
            } else {
                for (int b = 0; b < 16; b++) cr_assert_eq(base[b], 0x55, "padding group byte");
                cr_assert_eq(sc[0] | sc[1], 0);
            }
        }
    for (uint64_t i = base_bytes; i < scale_off; i++) cr_assert_eq(out[i], 0, "plane gap");

    check_chunks(&imp, blocks, &w, k);
    free(out);
    free(vals);
    nf_words_free(&w);
    free(blocks);
}

Test(import_q2, vector_k64) { q2_vector(64); }
Test(import_q2, vector_k640) { q2_vector(640); }
Test(import_q2, vector_k2560) { q2_vector(2560); }

Test(import_q2, refuses_non_finite_scales)
{
    static const uint16_t bad[3] = {0x7C00, 0xFC00, 0x7E01};
    for (int i = 0; i < 3; i++) {
        uint8_t *blocks = random_q2_blocks(2 * 2, 7);
        put16(blocks + 3 * 18, bad[i]); /* row 1 block 1 */
        char word[16];
        snprintf(word, sizeof word, "0x%04X", bad[i]);
        const char *needles[] = {"blk.0.ffn_up.weight", "row 1 block 1", word, "finite", "q2_g64_fp16", NULL};
        expect_refused("q2_g64_fp16", 42, blocks, 2, 128, needles);
        free(blocks);
    }
}

Test(import_q2, refuses_other_types)
{
    uint64_t shape[2];
    nf_import imp;
    nf_error err = {0};
    nf_import_tensor t = gguf2("blk.3.attn_q.weight", 2, shape, 4, 64); /* Q4_0 */
    cr_assert_eq(nf_import_init_gguf(&imp, F("q2_g64_fp16"), &t, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "blk.3.attn_q.weight"), "%s", err.message);
    cr_assert_not_null(strstr(err.message, "Q2_0"), "%s", err.message);
    cr_assert_not_null(strstr(err.message, "Q4_0"), "%s", err.message);
    /* a safetensors tensor is no GGUF block tensor */
    uint64_t st_shape[2] = {4, 64};
    nf_import_tensor st = {.name = "w", .dtype = "BF16", .ggml_type = -1, .rank = 2, .shape = st_shape};
    cr_assert_eq(nf_import_init_gguf(&imp, F("q2_g64_fp16"), &st, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "BF16"), "%s", err.message);
    /* K must be whole blocks */
    t = gguf2("w", 42, shape, 4, 96);
    cr_assert_eq(nf_import_init_gguf(&imp, F("q2_g64_fp16"), &t, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "K = 96"), "%s", err.message);
}

/* docs/vectors.md item 11, grouped: gate rows [4,5] + [1] and up rows [0,1] packed in one parent ->
 * base plane = blocks of gate 4, 5, 1, up 0, 1 (bytes 2..17) in that order. */
Test(import_q2, grouped_parent)
{
    const uint64_t k = 128, nb = 2;
    uint8_t *gate = random_q2_blocks(6 * nb, 11), *up = random_q2_blocks(2 * nb, 12);
    uint64_t gs[2], us[2];
    nf_import_tensor tg = gguf2("blk.0.ffn_gate.weight", 42, gs, 6, k), tu = gguf2("blk.0.ffn_up.weight", 42, us, 2, k);
    nf_import ig = init_ok("q2_g64_fp16", &tg), iu = init_ok("q2_g64_fp16", &tu);
    nf_geometry g;
    nf_error err = {0};
    uint64_t shape[2] = {5, k};
    cr_assert_eq(nf_geometry_init(&g, nf_layout_lookup("row_split_k128_v1"), F("q2_g64_fp16"), 2, shape, 1, &err),
                 NF_OK);
    nf_words w = words_for(&g, 5);
    cr_assert_eq(import_rows(&ig, gate, 4, 2, &w, 0, &err), NF_OK, "%s", err.message);
    cr_assert_eq(import_rows(&ig, gate, 1, 1, &w, 2, &err), NF_OK, "%s", err.message);
    cr_assert_eq(import_rows(&iu, up, 0, 2, &w, 3, &err), NF_OK, "%s", err.message);
    uint8_t *out = malloc(g.bytes);
    cr_assert_eq(nf_layout_encode(&g, &w, out, &err), NF_OK, "%s", err.message);
    const uint8_t *src_rows[5] = {gate + 4 * nb * 18, gate + 5 * nb * 18, gate + 1 * nb * 18, up, up + nb * 18};
    for (int r = 0; r < 5; r++)
        for (uint64_t b = 0; b < nb; b++)
            cr_assert_eq(memcmp(out + (r * nb + b) * 16, src_rows[r] + b * 18 + 2, 16), 0, "row %d block %d", r,
                         (int)b);
    free(out);
    nf_words_free(&w);
    free(gate);
    free(up);
}

/* ------------------------------------------------------------------ Q8_0 -> q8 (item 12) */

static const uint16_t Q8_SCALES[4] = {0x3800, 0xBC00, 0x0001, 0x0000};

static uint8_t *random_q8_blocks(uint64_t nblocks, uint64_t seed)
{
    rng r = {seed};
    uint8_t *b = malloc(nblocks * 34);
    cr_assert_not_null(b);
    for (uint64_t i = 0; i < nblocks; i++) {
        uint16_t d = Q8_SCALES[i % 4];
        put16(b + 34 * i, d);
        for (int j = 0; j < 32; j++) /* codes in [-127, 127]; zero under a zero scale */
            b[34 * i + 2 + j] = d == 0 ? 0 : (uint8_t)(int8_t)((int)rng_below(&r, 255) - 127);
    }
    return b;
}

static void q8_vector(uint64_t k)
{
    const uint64_t n = 5, nb = k / 32;
    uint8_t *blocks = random_q8_blocks(n * nb, 0x80 + k);
    uint64_t shape[2];
    nf_import_tensor t = gguf2("output.weight", 8, shape, n, k);
    nf_import imp = init_ok("q8_g32_fp16", &t);
    cr_assert_eq(imp.kind, NF_IMPORT_Q8_0);
    nf_geometry g = geometry_ok(&imp);
    nf_words w = words_for(&g, n);
    import_all(&imp, blocks, &w);
    for (uint64_t r = 0; r < n; r++)
        for (uint64_t b = 0; b < nb; b++) {
            const uint8_t *blk = blocks + (r * nb + b) * 34;
            cr_assert_eq(w.scales[r * nb + b], (uint16_t)(blk[0] | blk[1] << 8));
            for (int j = 0; j < 32; j++) cr_assert_eq(w.codes[r * k + b * 32 + j], (int8_t)blk[2 + j]);
        }
    nf_error err = {0};
    cr_assert_eq(nf_words_check(&g, &w, 0, &err), NF_OK, "%s", err.message);

    /* Encoded: logical groups = the blocks' codes and scales; padding groups codes 0, scale 0. */
    uint64_t gpr = align_up(k, 128) / 32, base_bytes = n * gpr * 32, scale_off = align_up(base_bytes, 256);
    cr_assert_eq(g.bytes, scale_off + n * gpr * 2);
    uint8_t *out = malloc(g.bytes);
    cr_assert_eq(nf_layout_encode(&g, &w, out, &err), NF_OK, "%s", err.message);
    for (uint64_t r = 0; r < n; r++)
        for (uint64_t gi = 0; gi < gpr; gi++) {
            const uint8_t *base = out + (r * gpr + gi) * 32, *sc = out + scale_off + (r * gpr + gi) * 2;
            if (gi < nb) {
                const uint8_t *blk = blocks + (r * nb + gi) * 34;
                cr_assert_eq(memcmp(base, blk + 2, 32), 0);
                cr_assert_eq(memcmp(sc, blk, 2), 0);
            } else {
                for (int b = 0; b < 32; b++) cr_assert_eq(base[b], 0, "padding code");
                cr_assert_eq(sc[0] | sc[1], 0, "padding scale");
            }
        }
    check_chunks(&imp, blocks, &w, k);
    free(out);
    nf_words_free(&w);
    free(blocks);
}

Test(import_q8, vector_k32) { q8_vector(32); }
Test(import_q8, vector_k96) { q8_vector(96); }
Test(import_q8, vector_k256) { q8_vector(256); }
Test(import_q8, vector_k640) { q8_vector(640); }

Test(import_q8, refusals)
{
    static const struct {
        uint16_t d;
        int code;
        const char *why;
    } cases[] = {
        {0x8000, 0, "scale 0x8000 is -0"},        {0x0000, 1, "scale 0x0000 (+0) over the nonzero code 0x01"},
        {0x7C00, 0, "scale 0x7C00 is +infinity"}, {0xFE00, 0, "scale 0xFE00 is NaN"},
        {0x3800, -128, "code 0x80 is -128"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t *blocks = random_q8_blocks(4 * 2, 3);
        for (int b = 0; b < 8; b++) put16(blocks + 34 * b, 0x3C00);
        uint8_t *blk = blocks + (3 * 2 + 1) * 34; /* row 3 block 1 */
        put16(blk, cases[i].d);
        memset(blk + 2, 0, 32);
        blk[2 + 5] = (uint8_t)(int8_t)cases[i].code;
        const char *needles[] = {"blk.0.ffn_up.weight: row 3", cases[i].why, "outside the native q8_g32_fp16 contract",
                                 cases[i].code == -128 ? "col 37" : "block 1", NULL};
        expect_refused("q8_g32_fp16", 8, blocks, 4, 64, needles);
        free(blocks);
    }
    /* the brief's example message, whole */
    uint8_t *blocks = random_q8_blocks(4 * 2, 3);
    for (int b = 0; b < 8; b++) put16(blocks + 34 * b, 0x3C00);
    put16(blocks + (3 * 2 + 1) * 34, 0x8000);
    uint64_t shape[2];
    nf_import_tensor t = gguf2("blk.0.ffn_up.weight", 8, shape, 4, 64);
    nf_import imp = init_ok("q8_g32_fp16", &t);
    nf_geometry g = geometry_ok(&imp);
    nf_words w = words_for(&g, 4);
    nf_error err = {0};
    cr_assert_eq(import_rows(&imp, blocks, 0, 4, &w, 0, &err), NF_ERR_INVALID);
    cr_assert_str_eq(
        err.message,
        "blk.0.ffn_up.weight: row 3 block 1: Q8_0 scale 0x8000 is -0, outside the native q8_g32_fp16 contract");
    /* the same refusal from a chunk names the absolute row */
    cr_assert_eq(import_rows(&imp, blocks, 2, 2, &w, 0, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "row 3 block 1"), "%s", err.message);
    nf_words_free(&w);
    free(blocks);
    /* wrong source type */
    t = gguf2("w", 42, shape, 4, 64);
    cr_assert_eq(nf_import_init_gguf(&imp, F("q8_g32_fp16"), &t, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "Q8_0"), "%s", err.message);
}

/* ------------------------------------------------------------------ real ggml fixtures */

static void fixture(const char *stem, const char *target, int type, uint64_t bv, uint64_t bb)
{
    char qname[64], dname[64];
    snprintf(qname, sizeof qname, "%s.qbytes", stem);
    snprintf(dname, sizeof dname, "%s.dequant.f32", stem);
    size_t qlen, dlen;
    uint8_t *q = nf_test_data(&qlen, "gguf/%s", qname), *d = nf_test_data(&dlen, "gguf/%s", dname);
    const uint64_t n = 16, k = 512;
    cr_assert_eq(qlen, n * (k / bv) * bb);
    cr_assert_eq(dlen, n * k * 4);
    uint64_t shape[2];
    nf_import_tensor t = gguf2(stem, type, shape, n, k);
    nf_import imp = init_ok(target, &t);
    nf_geometry g = geometry_ok(&imp);
    nf_words w = words_for(&g, n);
    import_all(&imp, q, &w);
    nf_error err = {0};
    cr_assert_eq(nf_words_check(&g, &w, 0, &err), NF_OK, "%s", err.message);
    float *vals = malloc(n * k * sizeof *vals);
    cr_assert_eq(nf_words_to_f32(&g, &w, 0, vals, &err), NF_OK, "%s", err.message);
    for (uint64_t i = 0; i < n * k; i++) {
        uint32_t want;
        memcpy(&want, d + 4 * i, 4);
        cr_assert_eq(bits_of_f32(vals[i]), want, "%s -> %s: element %" PRIu64 " (row %" PRIu64 " col %" PRIu64 ")",
                     stem, target, i, i / k, i % k);
    }
    check_chunks(&imp, q, &w, 99);
    free(vals);
    nf_words_free(&w);
    free(q);
    free(d);
}

Test(import_fixture, q8_0_to_q8) { fixture("q8_0", "q8_g32_fp16", 8, 32, 34); }
Test(import_fixture, q2_0_to_q2) { fixture("q2_0", "q2_g64_fp16", 42, 64, 18); }
Test(import_fixture, q8_0_to_gguf) { fixture("q8_0", "gguf_q8_0", 8, 32, 34); }
Test(import_fixture, q4_k_to_gguf) { fixture("q4_k", "gguf_q4_k", 12, 256, 144); }
Test(import_fixture, iq2_xxs_to_gguf) { fixture("iq2_xxs", "gguf_iq2_xxs", 16, 256, 66); }

/* ------------------------------------------------------------------ gguf_* byte copies */

Test(import_gguf, copies_rows_and_refuses_other_types)
{
    size_t qlen;
    uint8_t *q = nf_test_data(&qlen, "gguf/q4_k.qbytes");
    uint64_t shape[2];
    nf_import_tensor t = gguf2("blk.1.ffn_down.weight", 12, shape, 16, 512);
    nf_import imp = init_ok("gguf_q4_k", &t);
    cr_assert_eq(imp.kind, NF_IMPORT_GGUF_BLOCKS);
    cr_assert_eq(imp.row_bytes, 2 * 144);
    nf_geometry g = geometry_ok(&imp);
    nf_words w = words_for(&g, 16);
    import_all(&imp, q, &w);
    cr_assert_eq(memcmp(w.blocks, q, qlen), 0);
    /* a row permutation: rows 15, 0 into a [2, 512] object */
    nf_geometry g2;
    nf_error err = {0};
    uint64_t s2[2] = {2, 512};
    cr_assert_eq(nf_geometry_init(&g2, nf_layout_lookup("gguf_blocks_v1"), F("gguf_q4_k"), 2, s2, 1, &err), NF_OK);
    nf_words w2 = words_for(&g2, 2);
    cr_assert_eq(import_rows(&imp, q, 15, 1, &w2, 0, &err), NF_OK, "%s", err.message);
    cr_assert_eq(import_rows(&imp, q, 0, 1, &w2, 1, &err), NF_OK, "%s", err.message);
    cr_assert_eq(memcmp(w2.blocks, q + 15 * 288, 288), 0);
    cr_assert_eq(memcmp(w2.blocks + 288, q, 288), 0);
    nf_words_free(&w2);
    nf_words_free(&w);

    /* ggml type must equal the target's: both are named */
    t = gguf2("blk.1.ffn_down.weight", 12, shape, 16, 512);
    cr_assert_eq(nf_import_init_gguf(&imp, F("gguf_q5_k"), &t, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "blk.1.ffn_down.weight"), "%s", err.message);
    cr_assert_not_null(strstr(err.message, "Q4_K"), "%s", err.message);
    cr_assert_not_null(strstr(err.message, "Q5_K"), "%s", err.message);
    cr_assert_not_null(strstr(err.message, "gguf_q5_k"), "%s", err.message);
    /* non-import targets */
    cr_assert_eq(nf_import_init_gguf(&imp, F("q4_g64_fp16"), &t, &err), NF_ERR_INVALID);
    cr_assert_eq(nf_import_init_gguf(&imp, F("fp8_e4m3fn_row_fp16"), &t, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "not an import_encoded target"), "%s", err.message);
    free(q);
}

Test(import_gguf, rank3_bank_and_shape_refusals)
{
    /* [E=2, N=3, K=32] Q8_0: 6 rows */
    uint64_t shape3[3] = {2, 3, 32};
    nf_import_tensor t = {.name = "blk.0.ffn_up_exps.weight", .ggml_type = 8, .rank = 3, .shape = shape3};
    nf_import imp = init_ok("gguf_q8_0", &t);
    cr_assert_eq(imp.rows, 6);
    cr_assert_eq(imp.cols, 32);
    nf_error err = {0};
    uint64_t zero[2] = {0, 32};
    t.rank = 2;
    t.shape = zero;
    cr_assert_eq(nf_import_init_gguf(&imp, F("gguf_q8_0"), &t, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "empty"), "%s", err.message);
    uint64_t odd[2] = {2, 48};
    t.shape = odd;
    cr_assert_eq(nf_import_init_gguf(&imp, F("gguf_q8_0"), &t, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "K = 48"), "%s", err.message);
    t.rank = 0;
    cr_assert_eq(nf_import_init_gguf(&imp, F("gguf_q8_0"), &t, &err), NF_ERR_INVALID);
    uint64_t huge[3] = {UINT64_C(1) << 40, UINT64_C(1) << 40, 32};
    t.rank = 3;
    t.shape = huge;
    cr_assert_eq(nf_import_init_gguf(&imp, F("gguf_q8_0"), &t, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "overflow"), "%s", err.message);
}

/* ------------------------------------------------------------------ PQ2_0 -> t2 */

/* Hand-built blocks: 00 = -1, 01 = 0, 10 = +1.  Block 0 (scale 1.0): byte 0 = 0x92 = 10|00|01|10
 * from the low bits -> codes +1, -1, 0, +1; every other byte 0x55 -> 0.  Block 1 (scale -1.0):
 * all bytes 0x00 -> -1 everywhere; in T2's two's complement -1 is 11, so its base bytes are 0xFF
 * and block 0's first byte is 01|11|00|01 = 0x4D. */
static void pq2_blocks(uint8_t *b)
{
    put16(b, 0x3C00);
    memset(b + 2, 0x55, 32);
    b[2] = 0x92;
    put16(b + 34, 0xBC00);
    memset(b + 36, 0x00, 32);
}

Test(import_pq2, bit_remapping)
{
    uint8_t blocks[68];
    pq2_blocks(blocks);
    uint64_t shape[2];
    nf_import_tensor t = gguf2("blk.0.attn_k.weight", 142, shape, 1, 256);
    nf_import imp = init_ok("t2_g128_fp16", &t);
    cr_assert_eq(imp.kind, NF_IMPORT_PQ2_0);
    nf_geometry g = geometry_ok(&imp);
    nf_words w = words_for(&g, 1);
    import_all(&imp, blocks, &w);
    static const int8_t head[4] = {1, -1, 0, 1};
    for (int j = 0; j < 256; j++) {
        int want = j < 4 ? head[j] : j < 128 ? 0 : -1;
        cr_assert_eq(w.codes[j], want, "col %d", j);
    }
    cr_assert_eq(w.scales[0], 0x3C00);
    cr_assert_eq(w.scales[1], 0xBC00);
    nf_error err = {0};
    uint8_t out[264];
    cr_assert_eq(g.bytes, 260); /* t2 [1,256]: base 64, scales at 256, 2 words */
    cr_assert_eq(nf_layout_encode(&g, &w, out, &err), NF_OK, "%s", err.message);
    cr_assert_eq(out[0], 0x4D);
    for (int i = 1; i < 32; i++) cr_assert_eq(out[i], 0x00, "byte %d", i);
    for (int i = 32; i < 64; i++) cr_assert_eq(out[i], 0xFF, "byte %d", i);
    for (int i = 64; i < 256; i++) cr_assert_eq(out[i], 0);
    static const uint8_t sc[4] = {0x00, 0x3C, 0x00, 0xBC};
    cr_assert_eq(memcmp(out + 256, sc, 4), 0);
    float vals[256];
    cr_assert_eq(nf_words_to_f32(&g, &w, 0, vals, &err), NF_OK);
    cr_assert_eq(vals[0], 1.0f);
    cr_assert_eq(vals[1], -1.0f);
    cr_assert_eq(vals[128], 1.0f); /* -1 * -1.0 */
    nf_words_free(&w);
}

Test(import_pq2, refusals)
{
    uint8_t blocks[68];
    uint64_t shape[2];
    /* code 11 */
    pq2_blocks(blocks);
    blocks[36 + 3] = 0x30; /* block 1 byte 3: element 3*4+2 = 14 is 11 */
    const char *n1[] = {"row 0 col 142 (block 1)", "PQ2_0 code 11", NULL};
    expect_refused("t2_g128_fp16", 142, blocks, 1, 256, n1);
    /* -0 and non-finite scales */
    static const struct {
        uint16_t d;
        const char *why;
    } bad[] = {{0x8000, "-0"}, {0x7C00, "+infinity"}, {0xFC00, "-infinity"}, {0x7E00, "NaN"}};
    for (size_t i = 0; i < 4; i++) {
        pq2_blocks(blocks);
        put16(blocks + 34, bad[i].d);
        const char *n2[] = {"row 0 block 1", bad[i].why, "t2_g128_fp16", NULL};
        expect_refused("t2_g128_fp16", 142, blocks, 1, 256, n2);
    }
    /* +0 scale over nonzero codes; +0 over zero codes is fine */
    pq2_blocks(blocks);
    put16(blocks, 0x0000);
    const char *n3[] = {"row 0 block 0", "scale 0x0000 (+0) over the nonzero code", NULL};
    expect_refused("t2_g128_fp16", 142, blocks, 1, 256, n3);
    blocks[2] = 0x55;
    nf_import_tensor t = gguf2("w", 142, shape, 1, 256);
    nf_import imp = init_ok("t2_g128_fp16", &t);
    nf_geometry g = geometry_ok(&imp);
    nf_words w = words_for(&g, 1);
    import_all(&imp, blocks, &w);
    cr_assert_eq(w.scales[0], 0);
    nf_words_free(&w);
    /* wrong type, K */
    nf_error err = {0};
    t = gguf2("w", 42, shape, 1, 256);
    cr_assert_eq(nf_import_init_gguf(&imp, F("t2_g128_fp16"), &t, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "PQ2_0"), "%s", err.message);
    t = gguf2("w", 142, shape, 1, 64);
    cr_assert_eq(nf_import_init_gguf(&imp, F("t2_g128_fp16"), &t, &err), NF_ERR_INVALID);
}

Test(import_pq2, chunks)
{
    const uint64_t n = 9, k = 384, nb = 3;
    rng r = {42};
    uint8_t *blocks = malloc(n * nb * 34);
    for (uint64_t i = 0; i < n * nb; i++) {
        put16(blocks + 34 * i, (uint16_t)(0x3000 + rng_below(&r, 0x800)) | (i & 1 ? 0x8000 : 0));
        for (int j = 0; j < 32; j++) { /* random ternary codes */
            uint8_t b = 0;
            for (int e = 0; e < 4; e++) b |= (uint8_t)(rng_below(&r, 3) << (2 * e));
            blocks[34 * i + 2 + j] = b;
        }
    }
    uint64_t shape[2];
    nf_import_tensor t = gguf2("w", 142, shape, n, k);
    nf_import imp = init_ok("t2_g128_fp16", &t);
    nf_geometry g = geometry_ok(&imp);
    nf_words w = words_for(&g, n);
    import_all(&imp, blocks, &w);
    for (uint64_t row = 0; row < n; row++)
        for (uint64_t j = 0; j < k; j++) {
            const uint8_t *blk = blocks + (row * nb + j / 128) * 34;
            int u = (blk[2 + (j % 128) / 4] >> (2 * (j % 4))) & 3;
            cr_assert_eq(w.codes[row * k + j], u == 0 ? -1 : u == 1 ? 0 : 1);
        }
    nf_error err = {0};
    cr_assert_eq(nf_words_check(&g, &w, 0, &err), NF_OK, "%s", err.message);
    check_chunks(&imp, blocks, &w, 5);
    nf_words_free(&w);
    free(blocks);
}

/* ------------------------------------------------------------------ argument checks */

Test(import_args, usage_errors)
{
    uint8_t *blocks = random_q8_blocks(4 * 2, 1);
    uint64_t shape[2];
    nf_import_tensor t = gguf2("w", 8, shape, 4, 64);
    nf_import imp = init_ok("q8_g32_fp16", &t);
    nf_geometry g = geometry_ok(&imp);
    nf_words w = words_for(&g, 2);
    nf_error err = {0};
    /* rows beyond the tensor */
    nf_import_chunk c = {.first_row = 3, .rows = 2, .data = blocks, .data_len = 8 * 34};
    cr_assert_eq(nf_import_rows(&imp, &c, &w, 0, &err), NF_ERR_USAGE);
    /* rows beyond the output */
    c = (nf_import_chunk){.first_row = 0, .rows = 2, .data = blocks, .data_len = 4 * 34};
    cr_assert_eq(nf_import_rows(&imp, &c, &w, 1, &err), NF_ERR_USAGE);
    /* short buffer */
    c.data_len = 4 * 34 - 1;
    cr_assert_eq(nf_import_rows(&imp, &c, &w, 0, &err), NF_ERR_USAGE);
    c.data = NULL;
    cr_assert_eq(nf_import_rows(&imp, &c, &w, 0, &err), NF_ERR_USAGE);
    /* empty chunk is a no-op */
    c.rows = 0;
    cr_assert_eq(nf_import_rows(&imp, &c, &w, 0, &err), NF_OK);
    /* words of another width */
    nf_words narrow = w;
    narrow.cols = 32;
    c = (nf_import_chunk){.first_row = 0, .rows = 1, .data = blocks, .data_len = 2 * 34};
    cr_assert_eq(nf_import_rows(&imp, &c, &narrow, 0, &err), NF_ERR_USAGE);
    /* words without the grouped arrays */
    nf_words none = {.rows = 2, .cols = 64};
    cr_assert_eq(nf_import_rows(&imp, &c, &none, 0, &err), NF_ERR_USAGE);
    cr_assert_eq(nf_import_rows(NULL, &c, &w, 0, &err), NF_ERR_USAGE);
    cr_assert_eq(nf_import_init_gguf(&imp, F("q8_g32_fp16"), NULL, &err), NF_ERR_USAGE);
    t.name = NULL;
    cr_assert_eq(nf_import_init_gguf(&imp, F("q8_g32_fp16"), &t, &err), NF_ERR_USAGE);
    cr_assert_str_eq(nf_import_kind_name(NF_IMPORT_PQ2_0), "pq2_0");
    cr_assert_null(nf_import_kind_name(NF_IMPORT_KIND_COUNT));
    nf_words_free(&w);
    free(blocks);
}
