/* Round-trip properties over every format/layout with random shapes and random legal words:
 * encode -> decode == words; chunked decode == whole decode; encode_rows in random chunk splits
 * plus encode_tail == nf_layout_encode and writes every byte exactly once; check() of a canonical
 * encoding finds nothing; values match the per-element reconstruction.  Also bounded reads and
 * multi-chunk objects larger than the internal chunk size. */
#include "test_layout_util.h"

/* Random split of [0, rows) into consecutive chunks, each a multiple of `unit` rows. */
static uint64_t random_splits(rng *r, uint64_t rows, uint64_t unit, uint64_t *cuts)
{
    uint64_t n = 0, at = 0;
    while (at < rows) {
        uint64_t left = (rows - at) / unit;
        uint64_t take = unit * rng_range(r, 1, left);
        cuts[n++] = take;
        at += take;
    }
    return n;
}

static float reference_value(const nf_geometry *g, const nf_words *w, uint64_t row, uint64_t col)
{
    const nf_format *f = g->format;
    uint64_t k = g->cols, i = row * k + col;
    switch (f->category) {
    case NF_CAT_DIRECT:
        if (f->id == NF_FMT_BF16) return nf_f32_from_bits((uint32_t)w->w16[i] << 16);
        if (f->id == NF_FMT_FP32) return nf_f32_from_bits(w->w32[i]);
        return (float)(int32_t)w->w32[i];
    case NF_CAT_GROUPED:
        return nf_f16_to_f32(w->scales[row * g->logical_groups + col / f->group_size]) * (float)w->codes[i];
    case NF_CAT_NVFP4: {
        uint64_t per = g->rows / g->divisors;
        return nf_nvfp4_value(w->codes8[i], w->scales8[row * (k / 16) + col / 16], w->divisors[row / per]);
    }
    case NF_CAT_FP8_ROW: return nf_fp8_row_value(f, w->codes8[i], w->scales[row]);
    case NF_CAT_GGUF: break;
    }
    return 0;
}

static bool same_value(float a, float b)
{
    if (a != a && b != b) return true; /* NaN payloads may differ (docs/decisions.md D14) */
    return nf_f32_bits(a) == nf_f32_bits(b);
}

static void roundtrip_one(rng *r, const nf_format *f)
{
    nf_error err = {0};
    nf_geometry g = random_geometry(r, f);
    uint64_t rows = g.rows;
    nf_words w, d, d2;
    cr_assert_eq(nf_words_alloc(&w, &g, rows, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_words_alloc(&d, &g, rows, &err), NF_OK);
    cr_assert_eq(nf_words_alloc(&d2, &g, rows, &err), NF_OK);
    random_words(r, &g, &w);
    cr_assert_eq(nf_words_check(&g, &w, 0, &err), NF_OK, "%s: %s", f->name, err.message);

    uint8_t *bytes = encode_all(&g, &w);
    nf_memory_source mem;
    nf_byte_reader rd;
    nf_byte_reader_memory(&rd, &mem, bytes, g.bytes);

    /* whole decode */
    cr_assert_eq(nf_layout_decode_rows(&g, &rd, 0, rows, &d, &err), NF_OK, "%s: %s", f->name, err.message);
    cr_assert(words_equal(&g, &w, &d, rows, true), "%s [%" PRIu64 ",%" PRIu64 "]: decode differs", f->name, g.rows,
              g.cols);

    /* decode in random row chunks (any boundaries, nvfp4 included) */
    uint32_t *divs = d2.divisors;
    for (uint64_t at = 0; at < rows;) {
        uint64_t n = rng_range(r, 1, rows - at);
        nf_words view = words_view(&g, &d2, at, n);
        view.divisors = NULL;
        cr_assert_eq(nf_layout_decode_rows(&g, &rd, at, at + n, &view, &err), NF_OK, "%s", err.message);
        at += n;
    }
    if (divs) {
        nf_words none = d2;
        none.rows = 0;
        cr_assert_eq(nf_layout_decode_rows(&g, &rd, 0, 0, &none, &err), NF_OK); /* divisors only */
    }
    cr_assert(words_equal(&g, &w, &d2, rows, true), "%s: chunked decode differs", f->name);

    /* encode_rows in random chunks, in random order, plus the tail: same bytes, each once */
    uint64_t unit = g.layout->id == NF_LAYOUT_BLOCK_SCALE_K16_M128X4_V1 ? 128 : 1;
    uint64_t cuts[1024], ncuts = random_splits(r, rows, unit, cuts);
    uint64_t starts[1024], at = 0;
    for (uint64_t i = 0; i < ncuts; i++) {
        starts[i] = at;
        at += cuts[i];
    }
    for (uint64_t i = ncuts; i > 1; i--) { /* shuffle */
        uint64_t j = rng_range(r, 0, i - 1), t1 = cuts[i - 1], t2 = starts[i - 1];
        cuts[i - 1] = cuts[j];
        starts[i - 1] = starts[j];
        cuts[j] = t1;
        starts[j] = t2;
    }
    cover_sink c;
    cover_init(&c, g.bytes);
    bool tail_first = rng_next(r) & 1;
    if (tail_first) cr_assert_eq(nf_layout_encode_tail(&g, &w, false, cover_write, &c, &err), NF_OK, "%s", err.message);
    for (uint64_t i = 0; i < ncuts; i++) {
        nf_words view = words_view(&g, &w, starts[i], cuts[i]);
        cr_assert_eq(nf_layout_encode_rows(&g, &view, starts[i], false, cover_write, &c, &err), NF_OK, "%s: %s",
                     f->name, err.message);
    }
    if (!tail_first)
        cr_assert_eq(nf_layout_encode_tail(&g, &w, false, cover_write, &c, &err), NF_OK, "%s", err.message);
    uint64_t bad = cover_first_bad(&c);
    cr_assert_eq(bad, UINT64_MAX, "%s [%" PRIu64 ",%" PRIu64 "]: byte %" PRIu64 " written %u times", f->name, g.rows,
                 g.cols, bad, bad == UINT64_MAX ? 1 : c.count[bad]);
    cr_assert_eq(memcmp(c.bytes, bytes, g.bytes), 0, "%s: chunked encode differs", f->name);
    cover_free(&c);

    /* canonical encodings are clean */
    problems p;
    uint64_t np = check_bytes(&g, bytes, &p);
    if (np) problems_dump(&p);
    cr_assert_eq(np, 0, "%s [%" PRIu64 ",%" PRIu64 "]: %" PRIu64 " problems", f->name, g.rows, g.cols, np);

    /* values, whole and per random first_row chunk */
    if (f->category != NF_CAT_GGUF) {
        float *v = malloc(sizeof(float) * (g.elements ? g.elements : 1));
        cr_assert_eq(nf_words_to_f32(&g, &w, 0, v, &err), NF_OK, "%s", err.message);
        for (uint64_t row = 0; row < rows; row++)
            for (uint64_t col = 0; col < g.cols; col++) {
                float want = reference_value(&g, &w, row, col);
                cr_assert(same_value(v[row * g.cols + col], want), "%s row %" PRIu64 " col %" PRIu64, f->name, row,
                          col);
            }
        float *v2 = malloc(sizeof(float) * (g.elements ? g.elements : 1));
        for (uint64_t a = 0; a < rows;) {
            uint64_t n = rng_range(r, 1, rows - a);
            nf_words view = words_view(&g, &w, a, n);
            cr_assert_eq(nf_words_to_f32(&g, &view, a, v2 + a * g.cols, &err), NF_OK, "%s", err.message);
            a += n;
        }
        for (uint64_t i = 0; i < g.elements; i++) cr_assert(same_value(v[i], v2[i]), "%s value %" PRIu64, f->name, i);
        free(v);
        free(v2);
    }
    free(bytes);
    nf_words_free(&w);
    nf_words_free(&d);
    nf_words_free(&d2);
}

Test(layout_roundtrip, every_format_random_shapes)
{
    rng r = {0x5EED};
    for (size_t i = 0; i < nf_format_count(); i++) {
        const nf_format *f = nf_format_at(i);
        int trials = f->category == NF_CAT_GGUF ? 6 : f->category == NF_CAT_NVFP4 ? 25 : 60;
        for (int t = 0; t < trials; t++) roundtrip_one(&r, f);
    }
}

/* Extreme code words and scales at interval ends for every grouped format. */
Test(layout_roundtrip, grouped_interval_endpoints)
{
    static const char *fmts[] = {"q2_g64_fp16", "q4_g64_fp16", "q5_g64_fp16",
                                 "q6_g64_fp16", "q8_g32_fp16", "t2_g128_fp16"};
    for (size_t i = 0; i < 6; i++) {
        nf_geometry g = geo2(fmts[i], 3, 131, 1);
        const nf_format *f = g.format;
        nf_words w, d;
        cr_assert_eq(nf_words_alloc(&w, &g, 3, NULL), NF_OK);
        cr_assert_eq(nf_words_alloc(&d, &g, 3, NULL), NF_OK);
        for (uint64_t j = 0; j < 3 * 131; j++) w.codes[j] = (int8_t)(j % 2 ? f->code_max : f->code_min);
        for (uint64_t j = 0; j < 3 * g.logical_groups; j++) w.scales[j] = j % 2 ? 0xFBFF : 0x0001;
        uint8_t *bytes = encode_all(&g, &w);
        nf_memory_source mem;
        nf_byte_reader rd;
        nf_byte_reader_memory(&rd, &mem, bytes, g.bytes);
        cr_assert_eq(nf_layout_decode_rows(&g, &rd, 0, 3, &d, NULL), NF_OK);
        cr_assert(words_equal(&g, &w, &d, 3, false), "%s", fmts[i]);
        problems p;
        cr_assert_eq(check_bytes(&g, bytes, &p), 0, "%s", fmts[i]);
        free(bytes);
        nf_words_free(&w);
        nf_words_free(&d);
    }
}

/* ---------------------------------------------------------------- large objects, bounded reads */
typedef struct big_case {
    const char *fmt;
    uint64_t n, k, divisors;
} big_case;

static const big_case big_cases[] = {
    {"q4_g64_fp16", 600, 4096, 1},         {"q6_g64_fp16", 520, 4000, 1},
    {"q2_g64_fp16", 1100, 4095, 1},        {"nvfp4", 1024, 2048, 2},
    {"fp8_e4m3fn_row_bf16", 300, 4100, 1}, {"fp8_e4m3fn_row_fp16", 300, 4100, 1},
    {"gguf_q8_0", 40, 32 * 1024, 1},       {"bf16", 700, 1000, 1},
};

Test(layout_roundtrip, objects_larger_than_a_chunk)
{
    rng r = {99};
    for (size_t i = 0; i < sizeof big_cases / sizeof big_cases[0]; i++) {
        const big_case *b = &big_cases[i];
        nf_geometry g = geo2(b->fmt, b->n, b->k, b->divisors);
        cr_assert_gt(g.bytes, 1u << 20, "%s is not larger than a chunk", b->fmt);
        nf_words w, d;
        nf_error err = {0};
        cr_assert_eq(nf_words_alloc(&w, &g, g.rows, &err), NF_OK);
        cr_assert_eq(nf_words_alloc(&d, &g, g.rows, &err), NF_OK);
        random_words(&r, &g, &w);
        uint8_t *bytes = encode_all(&g, &w);
        counting_source cs;
        nf_byte_reader rd;
        counting_reader(&rd, &cs, bytes, g.bytes);
        cr_assert_eq(nf_layout_decode_rows(&g, &rd, 0, g.rows, &d, &err), NF_OK, "%s", err.message);
        cr_assert(words_equal(&g, &w, &d, g.rows, true), "%s", b->fmt);
        cr_assert_leq(cs.max_read, 1u << 20, "%s: one read of %" PRIu64 " bytes", b->fmt, cs.max_read);
        uint64_t plane_bytes = 0; /* every plane byte read once, gaps never */
        for (uint32_t pi = 0; pi < g.nplanes; pi++) plane_bytes += g.planes[pi].bytes;
        cr_assert_eq(cs.bytes, plane_bytes, "%s read %" PRIu64 " bytes", b->fmt, cs.bytes);
        /* check() works in bounded pieces too */
        counting_reader(&rd, &cs, bytes, g.bytes);
        uint64_t np = 1;
        cr_assert_eq(nf_layout_check(&g, &rd, NULL, NULL, 0, &np, &err), NF_OK);
        cr_assert_eq(np, 0, "%s", b->fmt);
        cr_assert_leq(cs.max_read, 1u << 20, "%s: check read %" PRIu64 " bytes at once", b->fmt, cs.max_read);
        /* chunked encode covers every byte once */
        cover_sink c;
        cover_init(&c, g.bytes);
        cr_assert_eq(nf_layout_encode_rows(&g, &w, 0, false, cover_write, &c, &err), NF_OK);
        cr_assert_eq(nf_layout_encode_tail(&g, &w, false, cover_write, &c, &err), NF_OK);
        cr_assert_eq(cover_first_bad(&c), UINT64_MAX, "%s", b->fmt);
        cr_assert_eq(memcmp(c.bytes, bytes, g.bytes), 0);
        cover_free(&c);
        free(bytes);
        nf_words_free(&w);
        nf_words_free(&d);
    }
}

/* Decoding a few rows reads only those rows' spans (nvfp4: the scale tiles of their row tile). */
Test(layout_roundtrip, few_rows_read_few_bytes)
{
    rng r = {5};
    for (size_t i = 0; i < sizeof big_cases / sizeof big_cases[0]; i++) {
        const big_case *b = &big_cases[i];
        nf_geometry g = geo2(b->fmt, b->n, b->k, b->divisors);
        nf_words w, d;
        cr_assert_eq(nf_words_alloc(&w, &g, g.rows, NULL), NF_OK);
        cr_assert_eq(nf_words_alloc(&d, &g, 2, NULL), NF_OK);
        random_words(&r, &g, &w);
        uint8_t *bytes = encode_all(&g, &w);
        counting_source cs;
        nf_byte_reader rd;
        counting_reader(&rd, &cs, bytes, g.bytes);
        uint64_t r0 = g.rows >= 132 ? 130 : g.rows - 2;
        uint32_t *divs = d.divisors;
        d.divisors = NULL;
        nf_error err = {0};
        cr_assert_eq(nf_layout_decode_rows(&g, &rd, r0, r0 + 2, &d, &err), NF_OK, "%s", err.message);
        nf_words view = words_view(&g, &w, r0, 2);
        cr_assert(words_equal(&g, &view, &d, 2, false), "%s", b->fmt);
        uint64_t want = 0;
        nf_span sp[NF_MAX_PLANES];
        uint32_t ns = 0;
        if (g.layout->id == NF_LAYOUT_BLOCK_SCALE_K16_M128X4_V1) {
            want = 2 * (g.cols / 2) + 128 * (g.cols / 16); /* two code rows + one row tile of scales */
        } else {
            cr_assert_eq(nf_layout_row_spans(&g, r0, r0 + 2, sp, &ns, NULL), NF_OK);
            for (uint32_t s = 0; s < ns; s++) want += sp[s].bytes;
        }
        cr_assert_eq(cs.bytes, want, "%s: read %" PRIu64 " bytes for 2 rows, want %" PRIu64, b->fmt, cs.bytes, want);
        d.divisors = divs;
        free(bytes);
        nf_words_free(&w);
        nf_words_free(&d);
    }
}

/* ---------------------------------------------------------------- argument errors */
Test(layout_roundtrip, usage_errors)
{
    nf_error err = {0};
    nf_geometry g = geo2("q4_g64_fp16", 4, 100, 1);
    nf_words w, small;
    cr_assert_eq(nf_words_alloc(&w, &g, 4, NULL), NF_OK);
    cr_assert_eq(nf_words_alloc(&small, &g, 1, NULL), NF_OK);
    uint8_t *bytes = encode_all(&g, &w);
    nf_memory_source mem;
    nf_byte_reader rd;
    nf_byte_reader_memory(&rd, &mem, bytes, g.bytes);
    cr_assert_eq(nf_layout_decode_rows(&g, &rd, 0, 2, &small, &err), NF_ERR_USAGE); /* room for 1 row */
    cr_assert_eq(nf_layout_decode_rows(&g, &rd, 3, 5, &w, &err), NF_ERR_USAGE);
    cr_assert_eq(nf_layout_decode_rows(&g, &rd, 3, 2, &w, &err), NF_ERR_USAGE);
    cr_assert_eq(nf_layout_decode_rows(&g, &rd, 3, 4, &small, &err), NF_OK);
    cover_sink c;
    cover_init(&c, g.bytes);
    cr_assert_eq(nf_layout_encode_rows(&g, &small, 4, false, cover_write, &c, &err), NF_ERR_USAGE);
    cr_assert_eq(nf_layout_encode_rows(&g, &w, 0, false, NULL, &c, &err), NF_ERR_USAGE);
    cover_free(&c);
    uint8_t *out = malloc(g.bytes);
    cr_assert_eq(nf_layout_encode(&g, &small, out, &err), NF_ERR_USAGE); /* needs all rows */
    nf_geometry other = geo2("q4_g64_fp16", 4, 101, 1);
    cr_assert_eq(nf_layout_encode(&other, &w, out, &err), NF_ERR_USAGE); /* wrong cols */
    free(out);
    nf_words_free(&w);
    nf_words_free(&small);
    free(bytes);

    g = geo2("nvfp4", 256, 64, 1);
    cr_assert_eq(nf_words_alloc(&w, &g, 256, NULL), NF_OK);
    w.divisors[0] = 0x3F800000;
    cover_init(&c, g.bytes);
    nf_words v = words_view(&g, &w, 0, 100);
    cr_assert_eq(nf_layout_encode_rows(&g, &v, 0, false, cover_write, &c, &err), NF_ERR_USAGE);
    v = words_view(&g, &w, 64, 128);
    cr_assert_eq(nf_layout_encode_rows(&g, &v, 64, false, cover_write, &c, &err), NF_ERR_USAGE);
    cr_assert_eq(nf_layout_encode_tail(&g, NULL, false, cover_write, &c, &err), NF_ERR_USAGE);
    w.divisors[0] = 0; /* divisor 0 is refused unless unchecked */
    cr_assert_eq(nf_layout_encode_tail(&g, &w, false, cover_write, &c, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "divisor 0"), "%s", err.message);
    cr_assert_eq(nf_layout_encode_tail(&g, &w, true, cover_write, &c, &err), NF_OK);
    w.codes8[5] = 16; /* not an E2M1 word at all, even unchecked */
    cr_assert_eq(nf_layout_encode_rows(&g, &w, 0, true, cover_write, &c, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "row 0 col 5"), "%s", err.message);
    cover_free(&c);
    nf_words_free(&w);
}

/* A reader that fails after some reads: the status and message come back unchanged. */
typedef struct failing_source {
    int left;
} failing_source;

static nf_status failing_read(void *ctx, uint64_t offset, void *buf, size_t len, nf_error *err)
{
    failing_source *f = ctx;
    if (f->left-- <= 0) return nf_error_set(err, NF_ERR_IO, "disk on fire at %" PRIu64, offset);
    memset(buf, 0, len);
    return NF_OK;
}

Test(layout_roundtrip, reader_errors_propagate)
{
    static const char *fmts[] = {"bf16",     "q5_g64_fp16", "nvfp4", "fp8_e4m3fn_row_bf16", "fp8_e4m3fn_row_fp16",
                                 "gguf_q4_0"};
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
        nf_geometry g = geo2(fmts[i], 128, 128, 1);
        nf_words w;
        cr_assert_eq(nf_words_alloc(&w, &g, 128, NULL), NF_OK);
        for (int after = 0; after < (g.nplanes > 1 ? 2 : 1); after++) {
            failing_source fs = {after};
            nf_byte_reader rd = {failing_read, &fs};
            nf_error err = {0};
            cr_assert_eq(nf_layout_decode_rows(&g, &rd, 0, 128, &w, &err), NF_ERR_IO, "%s decode", fmts[i]);
            cr_assert(strstr(err.message, "disk on fire"), "%s", err.message);
            nf_geometry og;
            uint64_t rows[128];
            for (int r = 0; r < 128; r++) rows[r] = (uint64_t)(127 - r);
            uint8_t *out = malloc(g.bytes);
            fs.left = after;
            cr_assert_eq(nf_layout_gather_rows(&g, &rd, rows, 128, &og, out, &err), NF_ERR_IO, "%s gather", fmts[i]);
            free(out);
            if (g.layout->id == NF_LAYOUT_CONTIGUOUS_LE_V1 || g.layout->id == NF_LAYOUT_GGUF_BLOCKS_V1) continue;
            fs.left = after;
            uint64_t n = 0;
            cr_assert_eq(nf_layout_check(&g, &rd, NULL, NULL, 0, &n, &err), NF_ERR_IO, "%s check", fmts[i]);
        }
        nf_words_free(&w);
    }
}
