/* Spans of long rows (ninfer/layout.h nf_colspan_*, docs/layouts.md "Spans of a row"): for every
 * format in every layout that has spans, a tensor encoded span by span (each row cut at
 * multiples of NF_COLSPAN_ALIGN columns, the last span of a row shorter, with its padding) gives
 * the whole encoding's bytes, every byte written exactly once (the shared row scale by the first
 * span only); and each span decoded through a reader of the whole object gives the values of
 * its columns of the whole decode; nvfp4's spans of 128-row bands likewise decode to the whole
 * decode's values, divisors included.  Refusals: misaligned spans, an nvfp4 span off a band. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "test_layout_util.h"

/* The words of columns [c0, c0 + w) of row r of whole words, for the span geometry sg. */
static void span_words(const nf_geometry *g, const nf_words *all, uint64_t r, uint64_t c0, uint64_t w,
                       const nf_geometry *sg, nf_words *out)
{
    nf_error err;
    cr_assert_eq(nf_words_alloc(out, sg, 1, &err), NF_OK, "%s", err.message);
    const nf_format *f = g->format;
    uint64_t k = g->cols;
    if (g->layout->id == NF_LAYOUT_GGUF_BLOCKS_V1) {
        uint64_t b0 = c0 / f->block_values * f->block_bytes;
        memcpy(out->blocks, all->blocks + r * g->row_bytes + b0, (size_t)sg->row_bytes);
        return;
    }
    switch (f->category) {
    case NF_CAT_DIRECT:
        if (f->word_bytes == 2) memcpy(out->w16, all->w16 + r * k + c0, (size_t)w * 2);
        else memcpy(out->w32, all->w32 + r * k + c0, (size_t)w * 4);
        break;
    case NF_CAT_GROUPED:
        memcpy(out->codes, all->codes + r * k + c0, (size_t)w);
        memcpy(out->scales, all->scales + r * g->logical_groups + c0 / f->group_size, (size_t)sg->logical_groups * 2);
        break;
    case NF_CAT_FP8_ROW:
        memcpy(out->codes8, all->codes8 + r * k + c0, (size_t)w);
        out->scales[0] = all->scales[r];
        break;
    default: cr_assert_fail("no spans for %s", f->name);
    }
}

static void check_spans(const nf_geometry *g, rng *rg)
{
    nf_error err;
    nf_words all;
    cr_assert_eq(nf_words_alloc(&all, g, g->rows, &err), NF_OK, "%s", err.message);
    random_words(rg, g, &all);
    uint8_t *whole = encode_all(g, &all);
    cover_sink c;
    cover_init(&c, g->bytes);
    /* the object's own tail (plane gaps), then every span of every row */
    nf_words none;
    cr_assert_eq(nf_words_alloc(&none, g, 0, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_layout_encode_tail(g, &none, false, cover_write, &c, &err), NF_OK, "%s", err.message);
    nf_words_free(&none);
    float *want = malloc((size_t)g->cols * sizeof *want), *got = malloc((size_t)g->cols * sizeof *got);
    nf_memory_source mem;
    nf_byte_reader whole_reader;
    nf_byte_reader_memory(&whole_reader, &mem, whole, g->bytes);
    for (uint64_t r = 0; r < g->rows; r++) {
        cr_assert_eq(nf_layout_decode_rows_f32(g, &whole_reader, r, r + 1, want, &err), NF_OK, "%s", err.message);
        for (uint64_t c0 = 0, w; c0 < g->cols; c0 += w) {
            w = g->cols - c0 < NF_COLSPAN_ALIGN ? g->cols - c0 : NF_COLSPAN_ALIGN;
            /* every other row in spans of twice the alignment where they fit */
            if (r % 2 == 1 && c0 + 2 * NF_COLSPAN_ALIGN <= g->cols) w = 2 * NF_COLSPAN_ALIGN;
            nf_colspan sp;
            cr_assert_eq(nf_colspan_init(&sp, g, r, c0, w, &err), NF_OK, "%s: %s", g->format->name, err.message);
            nf_words sw;
            span_words(g, &all, r, c0, w, &sp.g, &sw);
            nf_colspan_sink sink = {&sp, cover_write, &c};
            cr_assert_eq(nf_layout_encode_rows(&sp.g, &sw, 0, false, nf_colspan_write, &sink, &err), NF_OK,
                         "%s row %llu col %llu: %s", g->format->name, (unsigned long long)r, (unsigned long long)c0,
                         err.message);
            nf_words_free(&sw);
            /* and back: the span read through the whole object */
            nf_colspan_source src = {&sp, &whole_reader};
            nf_byte_reader rd;
            nf_colspan_reader(&src, &rd);
            cr_assert_eq(nf_layout_decode_rows_f32(&sp.g, &rd, 0, 1, got, &err), NF_OK, "%s", err.message);
            cr_assert_eq(memcmp(got, want + c0, (size_t)w * sizeof *got), 0, "%s row %llu col %llu: values differ",
                         g->format->name, (unsigned long long)r, (unsigned long long)c0);
        }
    }
    uint64_t bad = cover_first_bad(&c);
    cr_assert_eq(bad, UINT64_MAX, "%s in %s: byte %llu written %u times", g->format->name, g->layout->name,
                 (unsigned long long)bad, bad == UINT64_MAX ? 0 : c.count[bad]);
    cr_assert_eq(memcmp(c.bytes, whole, g->bytes), 0, "%s in %s: span bytes differ from the whole encoding",
                 g->format->name, g->layout->name);
    cover_free(&c);
    free(whole);
    free(want);
    free(got);
    nf_words_free(&all);
}

Test(colspan, every_layout_with_spans)
{
    rng rg = {20261201};
    size_t tested = 0;
    for (size_t i = 0; i < nf_format_count(); i++) {
        const nf_format *f = nf_format_at(i);
        for (size_t li = 0; li < nf_layout_count(); li++) {
            const nf_layout *l = nf_layout_at(li);
            if (!nf_layout_accepts(l, f) || l->resource_encoding) continue;
            /* row_split: a partial last group and padding; gguf: whole blocks */
            uint64_t k = l->id == NF_LAYOUT_GGUF_BLOCKS_V1 ? 3 * NF_COLSPAN_ALIGN + 512 : 3 * NF_COLSPAN_ALIGN + 37;
            if (f->category == NF_CAT_NVFP4) continue;
            uint64_t shape[2] = {3, k};
            nf_geometry g;
            nf_error err;
            if (nf_geometry_init(&g, l, f, 2, shape, 1, &err) != NF_OK) continue; /* e.g. K % 32 for q8 */
            cr_assert(nf_layout_has_colspans(&g), "%s in %s", f->name, l->name);
            check_spans(&g, &rg);
            tested++;
        }
    }
    cr_assert_geq(tested, 20, "only %zu format/layout pairs", tested);
    cr_log_info("colspan: %zu format/layout pairs", tested);
}

Test(colspan, refusals)
{
    nf_geometry g = geo2("q4_g64_fp16", 2, 3 * NF_COLSPAN_ALIGN, 1);
    nf_colspan sp;
    nf_error err;
    cr_assert_eq(nf_colspan_init(&sp, &g, 0, 64, NF_COLSPAN_ALIGN, &err), NF_ERR_USAGE, "a misaligned start");
    cr_assert_eq(nf_colspan_init(&sp, &g, 0, 0, 100, &err), NF_ERR_USAGE, "a short span inside the row");
    cr_assert_eq(nf_colspan_init(&sp, &g, 2, 0, NF_COLSPAN_ALIGN, &err), NF_ERR_USAGE, "a row past the end");
    cr_assert_eq(nf_colspan_init(&sp, &g, 0, 2 * NF_COLSPAN_ALIGN, 2 * NF_COLSPAN_ALIGN, &err), NF_ERR_USAGE,
                 "past the row's end");
    cr_assert_eq(nf_colspan_init(&sp, &g, 1, 2 * NF_COLSPAN_ALIGN, NF_COLSPAN_ALIGN, &err), NF_OK, "%s", err.message);
    nf_geometry n = geo2("nvfp4", 256, 2 * NF_COLSPAN_ALIGN, 1);
    cr_assert(!nf_layout_has_colspans(&n));
    cr_assert_eq(nf_layout_colspan_rows(&n), 128);
    cr_assert_eq(nf_colspan_init(&sp, &n, 1, 0, NF_COLSPAN_ALIGN, &err), NF_ERR_USAGE, "a row inside a band");
    cr_assert_eq(nf_colspan_init(&sp, &n, 128, 0, NF_COLSPAN_ALIGN, &err), NF_OK, "%s", err.message);
    cr_assert_eq(sp.g.rows, 128);
}

/* nvfp4 (docs/layouts.md section 12): a span of a 128-row band, read through a reader of the
 * whole object, decodes row by row to the whole decode's values at its columns, each band with
 * its own divisor. */
Test(colspan, nvfp4_bands)
{
    rng rg = {20261202};
    nf_geometry g = geo2("nvfp4", 256, 2 * NF_COLSPAN_ALIGN + 64, 2);
    nf_error err;
    nf_words all;
    cr_assert_eq(nf_words_alloc(&all, &g, g.rows, &err), NF_OK, "%s", err.message);
    random_words(&rg, &g, &all);
    uint8_t *whole = encode_all(&g, &all);
    nf_memory_source mem;
    nf_byte_reader whole_reader;
    nf_byte_reader_memory(&whole_reader, &mem, whole, g.bytes);
    float *want = malloc((size_t)g.cols * sizeof *want), *got = malloc((size_t)g.cols * sizeof *got);
    for (uint64_t r = 0; r < g.rows; r += 37) {
        cr_assert_eq(nf_layout_decode_rows_f32(&g, &whole_reader, r, r + 1, want, &err), NF_OK, "%s", err.message);
        for (uint64_t c0 = 0, w; c0 < g.cols; c0 += w) {
            w = g.cols - c0 < NF_COLSPAN_ALIGN ? g.cols - c0 : NF_COLSPAN_ALIGN;
            nf_colspan sp;
            cr_assert_eq(nf_colspan_init(&sp, &g, r - r % 128, c0, w, &err), NF_OK, "%s", err.message);
            nf_colspan_source src = {&sp, &whole_reader};
            nf_byte_reader rd;
            nf_colspan_reader(&src, &rd);
            cr_assert_eq(nf_layout_decode_rows_f32(&sp.g, &rd, r % 128, r % 128 + 1, got, &err), NF_OK, "%s",
                         err.message);
            cr_assert_eq(memcmp(got, want + c0, (size_t)w * sizeof *got), 0, "row %llu col %llu: values differ",
                         (unsigned long long)r, (unsigned long long)c0);
        }
    }
    free(whole);
    free(want);
    free(got);
    nf_words_free(&all);
}
