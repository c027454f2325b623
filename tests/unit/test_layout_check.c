/* nf_layout_check and nf_words_check: canonical encodings are clean; every single mutation class
 * is reported naming the right row/column/group or byte offset; unchecked encodes build invalid
 * artifacts that check() then finds; report capping keeps counting. */
#include "test_layout_util.h"

/* Independent setter of one stored lane word of a row_split object (docs/layouts.md 4). */
static void set_lane(const nf_geometry *g, uint8_t *bytes, uint64_t row, uint64_t col, unsigned u)
{
    const nf_format *f = g->format;
    unsigned b = f->code_bits, G = f->group_size;
    uint64_t slot = row * g->groups_per_row + col / G, lane = col % G;
    uint64_t B = g->planes[0].row_bytes / g->groups_per_row;
    uint8_t *base = bytes + slot * B;
    if (b == 8) {
        base[lane] = (uint8_t)u;
    } else if (b == 2) {
        unsigned sh = 2 * (lane % 4);
        base[lane / 4] = (uint8_t)((base[lane / 4] & ~(3u << sh)) | ((u & 3u) << sh));
    } else {
        unsigned sh = 4 * (lane % 2);
        base[lane / 2] = (uint8_t)((base[lane / 2] & ~(0xFu << sh)) | ((u & 0xFu) << sh));
        unsigned hb = b - 4;
        uint64_t H = g->planes[1].row_bytes / g->groups_per_row;
        uint8_t *high = bytes + g->planes[1].offset + slot * H;
        for (unsigned j = 0; j < hb; j++) {
            uint64_t t = lane * hb + j;
            high[t / 8] = (uint8_t)((high[t / 8] & ~(1u << (t % 8))) | (((u >> (4 + j)) & 1u) << (t % 8)));
        }
    }
}

static void set_scale(const nf_geometry *g, uint8_t *bytes, uint64_t row, uint64_t group, uint16_t s)
{
    uint8_t *p = bytes + g->planes[g->nplanes - 1].offset + 2 * (row * g->groups_per_row + group);
    p[0] = (uint8_t)s;
    p[1] = (uint8_t)(s >> 8);
}

typedef struct rs_fixture {
    nf_geometry g;
    nf_words w;
    uint8_t *bytes;
} rs_fixture;

/* Random legal words, with row 1 group 0 forced to scale +0 and codes 0. */
static rs_fixture make_rs(const char *fmt, uint64_t n, uint64_t k, uint64_t seed)
{
    rs_fixture x;
    rng r = {seed};
    x.g = geo2(fmt, n, k, 1);
    cr_assert_eq(nf_words_alloc(&x.w, &x.g, n, NULL), NF_OK);
    random_words(&r, &x.g, &x.w);
    x.w.scales[1 * x.g.logical_groups] = 0;
    for (uint64_t c = 0; c < x.g.format->group_size && c < k; c++) x.w.codes[k + c] = 0;
    x.bytes = encode_all(&x.g, &x.w);
    return x;
}

static void free_rs(rs_fixture *x)
{
    nf_words_free(&x->w);
    free(x->bytes);
}

/* Run check on a mutated copy; returns the problem count. */
static uint64_t check_mutated(const rs_fixture *x, void (*mutate)(const nf_geometry *, uint8_t *, void *), void *arg,
                              problems *p)
{
    uint8_t *copy = malloc(x->g.bytes);
    memcpy(copy, x->bytes, x->g.bytes);
    mutate(&x->g, copy, arg);
    uint64_t n = check_bytes(&x->g, copy, p);
    free(copy);
    return n;
}

typedef struct lane_arg {
    uint64_t row, col;
    unsigned u;
} lane_arg;

static void mut_lane(const nf_geometry *g, uint8_t *b, void *arg)
{
    lane_arg *a = arg;
    set_lane(g, b, a->row, a->col, a->u);
}

typedef struct scale_arg {
    uint64_t row, group;
    uint16_t s;
} scale_arg;

static void mut_scale(const nf_geometry *g, uint8_t *b, void *arg)
{
    scale_arg *a = arg;
    set_scale(g, b, a->row, a->group, a->s);
}

static void mut_byte(const nf_geometry *g, uint8_t *b, void *arg)
{
    (void)g;
    uint64_t *off = arg;
    b[off[0]] = (uint8_t)off[1];
}

static void expect_one(uint64_t n, const problems *p, const char *a, const char *b, const char *what)
{
    if (n != 1 || !problems_have(p, a, b)) problems_dump(p);
    cr_assert_eq(n, 1, "%s: %" PRIu64 " problems", what, n);
    cr_assert(problems_have(p, a, b), "%s: no problem naming '%s'", what, a);
}

Test(layout_check, row_split_mutations)
{
    static const struct {
        const char *fmt;
        uint64_t k;
    } cases[] = {
        {"q2_g64_fp16", 50}, {"q4_g64_fp16", 50}, {"q5_g64_fp16", 50},
        {"q6_g64_fp16", 50}, {"q8_g32_fp16", 40}, {"t2_g128_fp16", 130},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const char *fmt = cases[ci].fmt;
        uint64_t k = cases[ci].k;
        rs_fixture x = make_rs(fmt, 3, k, 100 + ci);
        const nf_format *f = x.g.format;
        unsigned zero_u = (unsigned)f->code_bias, G = f->group_size;
        bool q2 = f->id == NF_FMT_Q2_G64_FP16;
        problems p;
        char at[64];
        cr_assert_eq(check_bytes(&x.g, x.bytes, &p), 0, "%s canonical", fmt);

        /* 1. a padding lane of the partial group */
        lane_arg la = {1, k, zero_u ^ 1u};
        snprintf(at, sizeof at, "row 1 col %" PRIu64 ":", k);
        expect_one(check_mutated(&x, mut_lane, &la, &p), &p, at, "padding lane", fmt);

        /* 2. Q5/Q6: only the high bit of a padding lane */
        if (f->code_bits == 5 || f->code_bits == 6) {
            la = (lane_arg){2, k + 3, 0x10};
            snprintf(at, sizeof at, "row 2 col %" PRIu64 ":", k + 3);
            expect_one(check_mutated(&x, mut_lane, &la, &p), &p, at, "padding lane", fmt);
            if (f->code_bits == 6) {
                la = (lane_arg){2, k + 3, 0x20};
                expect_one(check_mutated(&x, mut_lane, &la, &p), &p, at, "padding lane", fmt);
            }
        }

        /* 3./4. a wholly padding group: scale and codes */
        if (x.g.groups_per_row > x.g.logical_groups) {
            uint64_t pg = x.g.logical_groups;
            scale_arg sa = {2, pg, 0x3C00};
            snprintf(at, sizeof at, "row 2 group %" PRIu64 ":", pg);
            expect_one(check_mutated(&x, mut_scale, &sa, &p), &p, at, "padding group scale", fmt);
            sa.s = 0x8000; /* even -0 is not the canonical 0x0000 */
            expect_one(check_mutated(&x, mut_scale, &sa, &p), &p, at, "padding group scale", fmt);
            la = (lane_arg){2, pg * G + 3, zero_u ^ 2u};
            snprintf(at, sizeof at, "row 2 col %" PRIu64 " (padding group %" PRIu64 ")", pg * G + 3, pg);
            expect_one(check_mutated(&x, mut_lane, &la, &p), &p, at, NULL, fmt);
            if (q2) { /* a padding byte 0x00 instead of 0x55: four lanes stored 00 */
                uint64_t mb[2] = {(0 * x.g.groups_per_row + pg) * 16 + 5, 0x00};
                problems p2;
                cr_assert_eq(check_mutated(&x, mut_byte, mb, &p2), 4);
                cr_assert(problems_have(&p2, "row 0 col 84 ", "expected 0x01"), "%s", p2.msgs[0]);
            }
        }

        /* 5. nonzero plane gap bytes (codes -> next plane, Q5/Q6 high -> scales) */
        uint64_t gap[2] = {x.g.planes[0].bytes + 1, 0x01};
        snprintf(at, sizeof at, "plane gap byte at offset %" PRIu64 " is 0x01", gap[0]);
        expect_one(check_mutated(&x, mut_byte, gap, &p), &p, at, NULL, fmt);
        if (x.g.nplanes == 3) {
            gap[0] = x.g.planes[1].offset + x.g.planes[1].bytes + 7;
            gap[1] = 0x80;
            snprintf(at, sizeof at, "plane gap byte at offset %" PRIu64 " is 0x80", gap[0]);
            expect_one(check_mutated(&x, mut_byte, gap, &p), &p, at, NULL, fmt);
        }

        /* 6. illegal codes: Q8 0x80, T2 0b10 (every other stored word is a legal code) */
        if (f->id == NF_FMT_Q8_G32_FP16 || f->id == NF_FMT_T2_G128_FP16) {
            la = (lane_arg){2, 5, f->id == NF_FMT_Q8_G32_FP16 ? 0x80u : 2u};
            /* keep the group's scale nonzero so the only problem is the code */
            scale_arg sa = {2, 0, 0x3C00};
            uint8_t *copy = malloc(x.g.bytes);
            memcpy(copy, x.bytes, x.g.bytes);
            set_scale(&x.g, copy, 2, 0, sa.s);
            for (uint64_t c = 0; c < G && c < k; c++) set_lane(&x.g, copy, 2, c, 0);
            cr_assert_eq(check_bytes(&x.g, copy, &p), 0);
            set_lane(&x.g, copy, la.row, la.col, la.u);
            snprintf(at, sizeof at, "row 2 col 5: code %d is not a legal", f->id == NF_FMT_Q8_G32_FP16 ? -128 : -2);
            expect_one(check_bytes(&x.g, copy, &p), &p, at, fmt, fmt);
            free(copy);
        }

        /* 7. invalid scales of a logical group (per-format rules) */
        scale_arg sa = {0, 0, 0x8000};
        uint8_t *copy = malloc(x.g.bytes);
        memcpy(copy, x.bytes, x.g.bytes);
        set_scale(&x.g, copy, 0, 0, 0x8000);
        uint64_t n = check_bytes(&x.g, copy, &p);
        if (q2) cr_assert_eq(n, 0, "q2 accepts a -0 scale");
        else expect_one(n, &p, "row 0 group 0: scale 0x8000", "not a valid", fmt);
        static const uint16_t nonfinite[3] = {0x7C00, 0xFC00, 0x7E01};
        for (int i = 0; i < 3; i++) {
            sa.s = nonfinite[i];
            expect_one(check_mutated(&x, mut_scale, &sa, &p), &p, "row 0 group 0: scale", "not a valid", fmt);
        }
        free(copy);

        /* 8. nonzero code under a +0 scale (row 1 group 0 is +0 with zero codes) */
        la = (lane_arg){1, 7, q2 ? 3u : 1u};
        n = check_mutated(&x, mut_lane, &la, &p);
        if (q2) cr_assert_eq(n, 0, "q2 allows any code under a zero scale");
        else expect_one(n, &p, "row 1 col 7: code 1 under the +0 scale", NULL, fmt);

        free_rs(&x);
    }
}

Test(layout_check, report_cap_keeps_counting)
{
    rs_fixture x = make_rs("q4_g64_fp16", 2, 10, 3);
    uint8_t *copy = malloc(x.g.bytes);
    memcpy(copy, x.bytes, x.g.bytes);
    for (uint64_t c = 10; c < 128; c++) set_lane(&x.g, copy, 0, c, 5); /* 118 padding lanes */
    nf_memory_source mem;
    nf_byte_reader rd;
    nf_byte_reader_memory(&rd, &mem, copy, x.g.bytes);
    problems p = {0};
    uint64_t n = 0;
    cr_assert_eq(nf_layout_check(&x.g, &rd, collect_problem, &p, 3, &n, NULL), NF_OK);
    cr_assert_eq(p.n, 3);
    cr_assert_eq(n, 118);
    cr_assert(strstr(p.msgs[0], "row 0 col 10:"), "%s", p.msgs[0]);
    /* max_reports 0 and a NULL callback only count */
    n = 0;
    cr_assert_eq(nf_layout_check(&x.g, &rd, NULL, NULL, 0, &n, NULL), NF_OK);
    cr_assert_eq(n, 118);
    free(copy);
    free_rs(&x);
}

/* ---------------------------------------------------------------- nvfp4 */
Test(layout_check, nvfp4_mutations)
{
    rng r = {44};
    nf_geometry g = geo2("nvfp4", 256, 128, 2);
    nf_words w;
    cr_assert_eq(nf_words_alloc(&w, &g, 256, NULL), NF_OK);
    random_words(&r, &g, &w);
    uint8_t *bytes = encode_all(&g, &w);
    problems p;
    cr_assert_eq(check_bytes(&g, bytes, &p), 0);
    cr_assert_eq(g.planes[0].bytes, g.planes[1].offset); /* N*K/2 is always 256-aligned: no gap */
    uint64_t so = g.planes[1].offset;
    uint8_t *copy = malloc(g.bytes);

    /* scale with the sign bit, and the NaN word, at known natural positions */
    struct {
        uint64_t row, group;
        uint8_t v;
        const char *needle;
    } sc[] = {{200, 5, 0x80, "row 200 group 5 (cols 80..95): scale 0x80"},
              {3, 0, 0x7F, "row 3 group 0 (cols 0..15): scale 0x7f"},
              {127, 7, 0xB8, "row 127 group 7"},
              {128, 4, 0xFF, "row 128 group 4"}};
    for (int i = 0; i < 4; i++) {
        memcpy(copy, bytes, g.bytes);
        uint64_t k_tiles = 2, row = sc[i].row, grp = sc[i].group, ri = row % 128;
        uint64_t off = ((row / 128) * k_tiles + grp / 4) * 512 + (ri % 32) * 16 + (ri / 32) * 4 + grp % 4;
        copy[so + off] = sc[i].v;
        expect_one(check_bytes(&g, copy, &p), &p, sc[i].needle, "nvfp4", "nvfp4 scale");
    }
    /* divisors: zero, negative, infinite, NaN; each names the divisor */
    static const uint32_t bad_div[4] = {0x00000000, 0xBF800000, 0x7F800000, 0x7FC00000};
    for (int i = 0; i < 4; i++) {
        memcpy(copy, bytes, g.bytes);
        uint8_t *d = copy + g.planes[2].offset + 4;
        d[0] = (uint8_t)bad_div[i];
        d[1] = (uint8_t)(bad_div[i] >> 8);
        d[2] = (uint8_t)(bad_div[i] >> 16);
        d[3] = (uint8_t)(bad_div[i] >> 24);
        expect_one(check_bytes(&g, copy, &p), &p, "divisor 1 (rows 128..255)", "finite", "nvfp4 divisor");
    }
    /* every code nibble is a valid E2M1 word */
    memcpy(copy, bytes, g.bytes);
    memset(copy, 0xFF, g.planes[0].bytes);
    cr_assert_eq(check_bytes(&g, copy, &p), 0);

    /* unchecked encode of an invalid scale builds an object check() refuses */
    w.scales8[17 * 8 + 6] = 0x85;
    nf_error err = {0};
    cr_assert_eq(nf_words_check(&g, &w, 0, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "row 17 group 6"), "%s", err.message);
    cover_sink c;
    cover_init(&c, g.bytes);
    cr_assert_eq(nf_layout_encode_rows(&g, &w, 0, true, cover_write, &c, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_layout_encode_tail(&g, &w, true, cover_write, &c, &err), NF_OK);
    expect_one(check_bytes(&g, c.bytes, &p), &p, "row 17 group 6", NULL, "unchecked nvfp4");
    cover_free(&c);
    free(copy);
    free(bytes);
    nf_words_free(&w);
}

/* ---------------------------------------------------------------- fp8 rows */
static void fp8_mutations(const char *fmt)
{
    rng r = {77};
    nf_geometry g = geo2(fmt, 3, 100, 1);
    nf_words w;
    cr_assert_eq(nf_words_alloc(&w, &g, 3, NULL), NF_OK);
    random_words(&r, &g, &w);
    w.scales[0] = 0; /* row 0: +0 scale, signed-zero codes */
    for (int c = 0; c < 100; c++) w.codes8[c] = (uint8_t)((c % 2) << 7);
    w.scales[1] = w.scales[2] = 0x3C00; /* positive and finite in both BF16 and FP16 */
    uint8_t *bytes = encode_all(&g, &w);
    problems p;
    cr_assert_eq(check_bytes(&g, bytes, &p), 0, "%s canonical", fmt);
    bool interleaved = g.layout->id == NF_LAYOUT_ROW_INTERLEAVED_V1;
    uint64_t code_at[3], scale_at[3];
    for (int row = 0; row < 3; row++) {
        code_at[row] = interleaved ? (uint64_t)row * 102 : (uint64_t)row * 100;
        scale_at[row] = interleaved ? (uint64_t)row * 102 + 100 : g.planes[1].offset + 2 * (uint64_t)row;
    }
    uint8_t *copy = malloc(g.bytes);
    static const uint8_t nan_codes[2] = {0x7F, 0xFF};
    for (int i = 0; i < 2; i++) {
        memcpy(copy, bytes, g.bytes);
        copy[code_at[2] + 9] = nan_codes[i];
        expect_one(check_bytes(&g, copy, &p), &p, "row 2 col 9:", "NaN", fmt);
    }
    static const uint16_t bad_scales[4] = {0x8000, 0xBF80, 0x7F80, 0x7C00};
    for (int i = 0; i < 4; i++) {
        uint16_t s = bad_scales[i];
        if (nf_fp8_row_scale_valid(g.format, s)) continue; /* 0x7C00 is a finite bf16 */
        memcpy(copy, bytes, g.bytes);
        copy[scale_at[1]] = (uint8_t)s;
        copy[scale_at[1] + 1] = (uint8_t)(s >> 8);
        expect_one(check_bytes(&g, copy, &p), &p, "row 1: scale", "not a valid", fmt);
    }
    memcpy(copy, bytes, g.bytes);
    copy[code_at[0] + 4] = 0x38;
    expect_one(check_bytes(&g, copy, &p), &p, "row 0 col 4: code 0x38", "+0 row scale", fmt);
    if (!interleaved) { /* row_scale_v1: zeros between the planes */
        memcpy(copy, bytes, g.bytes);
        copy[400] = 0x10;
        expect_one(check_bytes(&g, copy, &p), &p, "plane gap byte at offset 400 is 0x10", NULL, fmt);
    }
    /* unchecked encode of a NaN code */
    w.codes8[150] = 0x7F;
    nf_error err = {0};
    cr_assert_eq(nf_words_check(&g, &w, 0, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "row 1 col 50"), "%s", err.message);
    nf_words tail = words_view(&g, &w, 1, 2); /* first_row shifts the reported row */
    cr_assert_eq(nf_words_check(&g, &tail, 1, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "row 1 col 50"), "%s", err.message);
    cover_sink c;
    cover_init(&c, g.bytes);
    cr_assert_eq(nf_layout_encode_rows(&g, &w, 0, true, cover_write, &c, &err), NF_OK);
    cr_assert_eq(nf_layout_encode_tail(&g, &w, true, cover_write, &c, &err), NF_OK);
    expect_one(check_bytes(&g, c.bytes, &p), &p, "row 1 col 50:", "NaN", fmt);
    cr_assert_eq(nf_layout_encode_rows(&g, &w, 0, false, cover_write, &c, &err), NF_ERR_INVALID);
    cover_free(&c);
    free(copy);
    free(bytes);
    nf_words_free(&w);
}

Test(layout_check, fp8_row_scale_mutations) { fp8_mutations("fp8_e4m3fn_row_bf16"); }

Test(layout_check, fp8_row_interleaved_mutations) { fp8_mutations("fp8_e4m3fn_row_fp16"); }

/* ---------------------------------------------------------------- grouped words via unchecked */
Test(layout_check, unchecked_grouped_invalid_words)
{
    rs_fixture x = make_rs("q8_g32_fp16", 4, 70, 9);
    nf_error err = {0};
    x.w.codes[2 * 70 + 33] = -128;
    x.w.scales[2 * 3 + 1] = 0x3C00;
    cr_assert_eq(nf_words_check(&x.g, &x.w, 0, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "row 2 col 33: code -128"), "%s", err.message);
    cover_sink c;
    cover_init(&c, x.g.bytes);
    cr_assert_eq(nf_layout_encode_rows(&x.g, &x.w, 0, false, cover_write, &c, &err), NF_ERR_INVALID);
    cr_assert_eq(nf_layout_encode_rows(&x.g, &x.w, 0, true, cover_write, &c, &err), NF_OK);
    cr_assert_eq(nf_layout_encode_tail(&x.g, &x.w, true, cover_write, &c, &err), NF_OK);
    problems p;
    expect_one(check_bytes(&x.g, c.bytes, &p), &p, "row 2 col 33: code -128", NULL, "q8 unchecked");
    cover_free(&c);

    /* a -0 scale (invalid for Q4) through an unchecked encode */
    rs_fixture y = make_rs("q4_g64_fp16", 2, 64, 10);
    y.w.scales[1] = 0x8000;
    cr_assert_eq(nf_words_check(&y.g, &y.w, 0, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "row 1 group 0: scale 0x8000 (-0)"), "%s", err.message);
    cover_init(&c, y.g.bytes);
    cr_assert_eq(nf_layout_encode_rows(&y.g, &y.w, 0, true, cover_write, &c, &err), NF_OK);
    cr_assert_eq(nf_layout_encode_tail(&y.g, &y.w, true, cover_write, &c, &err), NF_OK);
    uint64_t n = check_bytes(&y.g, c.bytes, &p);
    cr_assert_geq(n, 1);
    cr_assert(problems_have(&p, "row 1 group 0: scale 0x8000", NULL));
    cover_free(&c);
    free_rs(&x);
    free_rs(&y);
}

/* Direct and gguf objects have no word rules: any bytes are clean. */
Test(layout_check, no_rules_for_direct_and_gguf)
{
    uint8_t junk[4096];
    for (int i = 0; i < 4096; i++) junk[i] = (uint8_t)(i * 37 + 11);
    problems p;
    nf_geometry g = geo2("gguf_q4_k", 2, 512, 1);
    cr_assert_eq(check_bytes(&g, junk, &p), 0);
    uint64_t s[2] = {16, 16};
    cr_assert_eq(nf_geometry_init(&g, L("contiguous_le_v1"), F("fp32"), 2, s, 1, NULL), NF_OK);
    cr_assert_eq(check_bytes(&g, junk, &p), 0);
}
