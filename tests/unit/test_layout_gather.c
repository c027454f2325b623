/* Row gathers: for every format/layout and random row lists (repeats allowed), the gathered
 * bytes equal encoding the gathered words directly; nvfp4 re-swizzles scale tiles and keeps
 * one shared divisor; refusals; reads are per-row spans, coalesced for consecutive rows. */
#include "test_layout_util.h"

/* Words of rows[0..count) of w as a standalone tensor of geometry og. */
static nf_words gathered_words(const nf_geometry *g, const nf_words *w, const nf_geometry *og, const uint64_t *rows,
                               uint64_t count)
{
    nf_words o;
    cr_assert_eq(nf_words_alloc(&o, og, count, NULL), NF_OK);
    for (uint64_t i = 0; i < count; i++) {
        nf_words src = words_view(g, w, rows[i], 1), dst = words_view(og, &o, i, 1);
        uint64_t k = g->cols;
        if (src.blocks) memcpy(dst.blocks, src.blocks, g->row_bytes);
        if (src.w16) memcpy(dst.w16, src.w16, 2 * k);
        if (src.w32) memcpy(dst.w32, src.w32, 4 * k);
        if (src.codes) memcpy(dst.codes, src.codes, k);
        if (src.codes8) memcpy(dst.codes8, src.codes8, k);
        if (src.scales8) memcpy(dst.scales8, src.scales8, k / 16);
        if (src.scales) {
            uint64_t per = g->format->category == NF_CAT_GROUPED ? g->logical_groups : 1;
            memcpy(dst.scales, src.scales, 2 * per);
        }
    }
    if (o.divisors) o.divisors[0] = w->divisors[rows[0] / (g->rows / g->divisors)];
    return o;
}

static void gather_and_compare(const nf_geometry *g, const nf_words *w, const uint8_t *bytes, const uint64_t *rows,
                               uint64_t count)
{
    nf_error err = {0};
    nf_memory_source mem;
    nf_byte_reader rd;
    nf_byte_reader_memory(&rd, &mem, bytes, g->bytes);
    nf_geometry og;
    cr_assert_eq(nf_layout_gather_rows(g, &rd, rows, count, &og, NULL, &err), NF_OK, "%s: %s", g->format->name,
                 err.message);
    cr_assert_eq(og.rows, count);
    cr_assert_eq(og.cols, g->cols);
    cr_assert_eq(og.layout, g->layout);
    cr_assert_eq(og.format, g->format);
    cr_assert_eq(og.divisors, 1);
    uint8_t *out = malloc(og.bytes);
    memset(out, 0xEE, og.bytes);
    cr_assert_eq(nf_layout_gather_rows(g, &rd, rows, count, &og, out, &err), NF_OK, "%s: %s", g->format->name,
                 err.message);
    nf_words ow = gathered_words(g, w, &og, rows, count);
    uint8_t *want = encode_all(&og, &ow);
    for (uint64_t i = 0; i < og.bytes; i++)
        cr_assert_eq(out[i], want[i],
                     "%s [%" PRIu64 ",%" PRIu64 "] gather of %" PRIu64 " rows: byte %" PRIu64 " is 0x%02x, want 0x%02x",
                     g->format->name, g->rows, g->cols, count, i, out[i], want[i]);
    problems p;
    cr_assert_eq(check_bytes(&og, out, &p), 0);
    free(want);
    free(out);
    nf_words_free(&ow);
}

Test(layout_gather, every_format_random_rows)
{
    rng r = {0x6A7};
    for (size_t fi = 0; fi < nf_format_count(); fi++) {
        const nf_format *f = nf_format_at(fi);
        int trials = f->category == NF_CAT_GGUF ? 4 : f->category == NF_CAT_NVFP4 ? 16 : 30;
        for (int t = 0; t < trials; t++) {
            nf_geometry g = random_geometry(&r, f);
            nf_words w;
            cr_assert_eq(nf_words_alloc(&w, &g, g.rows, NULL), NF_OK);
            random_words(&r, &g, &w);
            uint64_t rows[512], count;
            if (f->category == NF_CAT_NVFP4) {
                /* rows of one source matrix (one divisor), 128 or 256 of them, any order */
                uint64_t per = g.rows / g.divisors, src = rng_range(&r, 0, g.divisors - 1);
                count = 128 * rng_range(&r, 1, 2);
                for (uint64_t i = 0; i < count; i++) rows[i] = src * per + rng_range(&r, 0, per - 1);
                if (t % 4 == 0) /* consecutive rows of the source, wrapping */
                    for (uint64_t i = 0; i < count; i++) rows[i] = src * per + i % per;
            } else {
                count = rng_range(&r, 1, 9);
                for (uint64_t i = 0; i < count; i++) rows[i] = rng_range(&r, 0, g.rows - 1);
            }
            uint8_t *bytes = encode_all(&g, &w);
            gather_and_compare(&g, &w, bytes, rows, count);
            free(bytes);
            nf_words_free(&w);
        }
    }
}

Test(layout_gather, nvfp4_divisors)
{
    rng r = {3};
    nf_geometry g = geo2("nvfp4", 512, 128, 4);
    nf_words w;
    cr_assert_eq(nf_words_alloc(&w, &g, 512, NULL), NF_OK);
    random_words(&r, &g, &w);
    w.divisors[0] = 0x40200000;
    w.divisors[1] = 0x3F800000;
    w.divisors[2] = 0x40200000; /* same word as source 0 */
    w.divisors[3] = 0x40000000;
    uint8_t *bytes = encode_all(&g, &w);
    uint64_t rows[256];
    /* sources 0 and 2 share their divisor word: one result divisor */
    for (int i = 0; i < 256; i++) rows[i] = i < 128 ? (uint64_t)(127 - i) : (uint64_t)(128 + i);
    gather_and_compare(&g, &w, bytes, rows, 256);
    nf_memory_source mem;
    nf_byte_reader rd;
    nf_byte_reader_memory(&rd, &mem, bytes, g.bytes);
    nf_geometry og;
    uint8_t *out = malloc(256 * 64 + 256 * 8 + 4);
    nf_error err = {0};
    uint64_t out_div_at = 256 * 64 + 256 * 8;
    cr_assert_eq(nf_layout_gather_rows(&g, &rd, rows, 256, &og, out, &err), NF_OK);
    cr_assert_eq(og.bytes, out_div_at + 4);
    cr_assert_eq(out[out_div_at + 2], 0x20);
    cr_assert_eq(out[out_div_at + 3], 0x40);
    /* rows of sources 0 and 1 differ */
    rows[200] = 130;
    cr_assert_eq(nf_layout_gather_rows(&g, &rd, rows, 256, &og, out, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "different nvfp4 divisors") && strstr(err.message, "130"), "%s", err.message);
    /* geometry only: no reads, so no divisor comparison */
    cr_assert_eq(nf_layout_gather_rows(&g, NULL, rows, 256, &og, NULL, &err), NF_OK);
    /* whole tiles only */
    cr_assert_eq(nf_layout_gather_rows(&g, &rd, rows, 100, &og, out, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "128"), "%s", err.message);
    free(out);
    free(bytes);
    nf_words_free(&w);
}

Test(layout_gather, refusals_and_reads)
{
    rng r = {8};
    nf_geometry g = geo2("q5_g64_fp16", 10, 300, 1);
    nf_words w;
    cr_assert_eq(nf_words_alloc(&w, &g, 10, NULL), NF_OK);
    random_words(&r, &g, &w);
    uint8_t *bytes = encode_all(&g, &w);
    counting_source cs;
    nf_byte_reader rd;
    counting_reader(&rd, &cs, bytes, g.bytes);
    nf_geometry og;
    nf_error err = {0};
    uint64_t rows[4] = {2, 3, 4, 5};
    uint8_t *out = malloc(g.bytes);
    cr_assert_eq(nf_layout_gather_rows(&g, &rd, rows, 4, &og, out, &err), NF_OK);
    cr_assert_eq(cs.reads, 3, "consecutive rows read in one piece per plane, got %" PRIu64 " reads", cs.reads);
    nf_span sp[NF_MAX_PLANES];
    uint32_t ns;
    cr_assert_eq(nf_layout_row_spans(&g, 2, 6, sp, &ns, NULL), NF_OK);
    cr_assert_eq(cs.bytes, sp[0].bytes + sp[1].bytes + sp[2].bytes);
    /* a consecutive gather is exactly the row view's bytes, re-based */
    for (uint32_t i = 0; i < ns; i++)
        cr_assert_eq(memcmp(out + og.planes[i].offset, bytes + sp[i].offset, sp[i].bytes), 0, "plane %u", i);

    rows[2] = 10;
    cr_assert_eq(nf_layout_gather_rows(&g, &rd, rows, 4, &og, out, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "row 10"), "%s", err.message);
    cr_assert_eq(nf_layout_gather_rows(&g, &rd, rows, 0, &og, out, &err), NF_ERR_INVALID);
    free(out);
    free(bytes);
    nf_words_free(&w);

    /* contiguous rank 3: leading dimensions flatten into rows */
    uint64_t s3[3] = {2, 3, 5};
    cr_assert_eq(nf_geometry_init(&g, L("contiguous_le_v1"), F("bf16"), 3, s3, 1, NULL), NF_OK);
    cr_assert_eq(nf_words_alloc(&w, &g, 6, NULL), NF_OK);
    random_words(&r, &g, &w);
    bytes = encode_all(&g, &w);
    uint64_t rr[3] = {5, 0, 5};
    gather_and_compare(&g, &w, bytes, rr, 3);
    nf_memory_source mem;
    nf_byte_reader_memory(&rd, &mem, bytes, g.bytes);
    cr_assert_eq(nf_layout_gather_rows(&g, &rd, rr, 3, &og, NULL, NULL), NF_OK);
    cr_assert_eq(og.rank, 2);
    cr_assert_eq(og.shape[0], 3);
    cr_assert_eq(og.shape[1], 5);
    free(bytes);
    nf_words_free(&w);
}
