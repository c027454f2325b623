/* nf_layout_decode_rows_f32 (the fused decode: encoded bytes straight to binary32) against the
 * split path it replaces, nf_layout_decode_rows followed by nf_words_to_f32: the same value bits
 * (NaN payloads included) and the same status and message, for every registered format in every
 * layout that accepts it, under every kernel variant; under a SIMD variant the values must also
 * equal those of the split path under the portable scalar kernels.
 *
 * Suites fused_scalar, fused_avx2, fused_avx512 and fused_neon force their variant with nf_simd_force (a
 * variant the CPU lacks is skipped with a message naming it, never passed silently).  Objects are
 * random bytes (every stored word occurs, legal or not: illegal codes, NaN/inf/subnormal/negative
 * scales, odd divisors), all-0x00, all-0xFF, and encodings of random legal words; shapes include
 * partial groups, wholly-padding groups, rows wider than the fused block (NF_FUSED_COLS) and
 * several nvfp4 divisors; row ranges are arbitrary, empty ones included.  Failing readers (a
 * truncated memory object, a reader that refuses one byte) must fail both paths the same way. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_layout_util.h"

#include "common/cpu.h"
#include "layout/kernels.h"
#include "support/test_float.h"

static uint64_t compared, objects_run;

static void require(nf_simd_level level)
{
    if (!nf_simd_supported(level))
        cr_skip_test("the CPU lacks the %s variant (best here: %s): its fused kernels are NOT tested on this machine",
                     nf_simd_level_name(level), nf_simd_level_name(nf_simd_best()));
    cr_assert_eq(nf_simd_force(level), level);
}

static void restore(void) { nf_simd_force(nf_simd_best()); }

/* ------------------------------------------------------------------ readers */
/* Fails every read that covers byte `bad` (so both paths fail exactly when they need that byte,
 * whatever the order and size of their reads). */
typedef struct poison_source {
    nf_memory_source mem;
    nf_byte_reader inner;
    uint64_t bad;
} poison_source;

static nf_status poison_read(void *ctx, uint64_t offset, void *buf, size_t len, nf_error *err)
{
    poison_source *p = ctx;
    if (len && p->bad >= offset && p->bad - offset < len)
        return nf_error_set(err, NF_ERR_IO, "injected I/O error at byte %" PRIu64, p->bad);
    return p->inner.read(p->inner.ctx, offset, buf, len, err);
}

/* ------------------------------------------------------------------ one comparison */
typedef struct outcome {
    nf_status st;
    nf_error err;
    float *values;
} outcome;

static outcome run_split(const nf_geometry *g, const nf_byte_reader *src, uint64_t r0, uint64_t r1)
{
    outcome o = {0};
    nf_words w;
    nf_error aerr = {0};
    cr_assert_eq(nf_words_alloc(&w, g, r1 - r0, &aerr), NF_OK, "%s", aerr.message);
    o.values = malloc((size_t)((r1 - r0) * g->cols + 1) * sizeof(float));
    memset(o.values, 0x5A, (size_t)((r1 - r0) * g->cols + 1) * sizeof(float));
    o.st = nf_layout_decode_rows(g, src, r0, r1, &w, &o.err);
    if (o.st == NF_OK) o.st = nf_words_to_f32(g, &w, r0, o.values, &o.err);
    nf_words_free(&w);
    return o;
}

static outcome run_fused(const nf_geometry *g, const nf_byte_reader *src, uint64_t r0, uint64_t r1)
{
    outcome o = {0};
    o.values = malloc((size_t)((r1 - r0) * g->cols + 1) * sizeof(float));
    memset(o.values, 0x5A, (size_t)((r1 - r0) * g->cols + 1) * sizeof(float));
    o.st = nf_layout_decode_rows_f32(g, src, r0, r1, o.values, &o.err);
    return o;
}

/* Do the plane reads of this layout come in the same order in both paths (so that a truncated
 * object names the same read)?  nvfp4 and row_scale_v1 read their planes in another order. */
static bool same_read_order(const nf_geometry *g)
{
    return g->layout->id != NF_LAYOUT_BLOCK_SCALE_K16_M128X4_V1 && g->layout->id != NF_LAYOUT_ROW_SCALE_V1;
}

static void compare(const nf_geometry *g, const nf_byte_reader *src, uint64_t r0, uint64_t r1, const char *what,
                    bool messages)
{
    outcome a = run_split(g, src, r0, r1), b = run_fused(g, src, r0, r1);
    const char *fl = g->layout->name, *ff = g->format->name;
    cr_assert_eq(b.st, a.st, "%s %s/%s [%" PRIu64 ",%" PRIu64 "): fused status %d (%s), split %d (%s)", what, ff, fl,
                 r0, r1, b.st, b.err.message, a.st, a.err.message);
    if (a.st != NF_OK) {
        if (messages)
            cr_assert_str_eq(b.err.message, a.err.message, "%s %s/%s [%" PRIu64 ",%" PRIu64 "): messages differ", what,
                             ff, fl, r0, r1);
    } else {
        uint64_t n = (r1 - r0) * g->cols;
        for (uint64_t i = 0; i < n; i++)
            if (bits_of_f32(b.values[i]) != bits_of_f32(a.values[i]))
                cr_assert_fail("%s %s/%s [%" PRIu64 ",%" PRIu64 ") %" PRIu64 "x%" PRIu64 ": value %" PRIu64
                               " (row %" PRIu64 " col %" PRIu64 ") is 0x%08x fused, 0x%08x split",
                               what, ff, fl, r0, r1, g->rows, g->cols, i, r0 + i / g->cols, i % g->cols,
                               bits_of_f32(b.values[i]), bits_of_f32(a.values[i]));
        /* and the portable scalar kernels' values (the reference the SIMD variants must equal) */
        nf_simd_level level = nf_simd_active();
        if (level != NF_SIMD_SCALAR) {
            nf_simd_force(NF_SIMD_SCALAR);
            outcome c = run_split(g, src, r0, r1);
            nf_simd_force(level);
            cr_assert_eq(c.st, NF_OK, "%s", c.err.message);
            for (uint64_t i = 0; i < n; i++)
                if (bits_of_f32(b.values[i]) != bits_of_f32(c.values[i]))
                    cr_assert_fail("%s %s/%s [%" PRIu64 ",%" PRIu64 "): value %" PRIu64 " is 0x%08x fused (%s), "
                                   "0x%08x scalar",
                                   what, ff, fl, r0, r1, i, bits_of_f32(b.values[i]), nf_simd_level_name(level),
                                   bits_of_f32(c.values[i]));
            free(c.values);
        }
        /* nothing written past the rows asked for */
        cr_assert_eq(bits_of_f32(b.values[n]), 0x5A5A5A5Au, "%s %s/%s: fused wrote past its output", what, ff, fl);
        compared += n;
    }
    free(a.values);
    free(b.values);
}

/* ------------------------------------------------------------------ shapes and objects */
static bool make_geometry(const nf_format *f, const nf_layout *l, uint64_t n, uint64_t k, uint64_t divisors,
                          nf_geometry *g)
{
    nf_error err = {0};
    uint64_t shape[2] = {n, k};
    return nf_geometry_init(g, l, f, 2, shape, divisors, &err) == NF_OK;
}

/* Row ranges: all rows, none, single rows at both ends, and random ones. */
static void ranges(rng *r, const nf_geometry *g, const nf_byte_reader *src, const char *what)
{
    uint64_t n = g->rows;
    compare(g, src, 0, n, what, true);
    compare(g, src, 0, 0, what, true);
    compare(g, src, n, n, what, true);
    compare(g, src, n - 1, n, what, true);
    compare(g, src, 0, 1, what, true);
    for (int i = 0; i < 4; i++) {
        uint64_t a = rng_range(r, 0, n), b = rng_range(r, 0, n);
        if (a > b) {
            uint64_t t = a;
            a = b;
            b = t;
        }
        compare(g, src, a, b, what, true);
    }
}

static void one_geometry(rng *r, const nf_geometry *g)
{
    uint64_t size = g->bytes;
    uint8_t *obj = calloc(1, size ? size : 1);
    nf_byte_reader src;
    nf_memory_source mem;
    nf_byte_reader_memory(&src, &mem, obj, size);
    /* random bytes: every stored word, legal or not */
    for (uint64_t i = 0; i < size; i++) obj[i] = (uint8_t)rng_next(r);
    ranges(r, g, &src, "random bytes");
    /* edges */
    memset(obj, 0x00, size);
    compare(g, &src, 0, g->rows, "all 0x00", true);
    memset(obj, 0xFF, size);
    compare(g, &src, 0, g->rows, "all 0xFF", true);
    /* encoded legal words */
    {
        nf_words w;
        nf_error err = {0};
        cr_assert_eq(nf_words_alloc(&w, g, g->rows, &err), NF_OK);
        random_words(r, g, &w);
        nf_status st = nf_layout_encode(g, &w, obj, &err);
        cr_assert_eq(st, NF_OK, "%s/%s encode: %s", g->format->name, g->layout->name, err.message);
        nf_words_free(&w);
        ranges(r, g, &src, "legal words");
    }
    /* a truncated object: the memory reader refuses the reads past its end */
    {
        nf_byte_reader tr;
        nf_memory_source tm;
        uint64_t cut = rng_range(r, 0, size - 1);
        nf_byte_reader_memory(&tr, &tm, obj, cut);
        compare(g, &tr, 0, g->rows, "truncated", same_read_order(g));
        uint64_t a = rng_range(r, 0, g->rows - 1);
        if (g->layout->id == NF_LAYOUT_BLOCK_SCALE_K16_M128X4_V1) a -= a % 128;
        compare(g, &tr, a, g->rows, "truncated", same_read_order(g));
    }
    /* a reader that refuses one byte: the same message from both paths whatever their order */
    for (int i = 0; i < 3; i++) {
        poison_source ps;
        nf_byte_reader pr = {poison_read, &ps};
        nf_byte_reader_memory(&ps.inner, &ps.mem, obj, size);
        ps.bad = rng_range(r, 0, size - 1);
        compare(g, &pr, 0, g->rows, "poisoned byte", true);
        uint64_t a = rng_range(r, 0, g->rows), b = rng_range(r, a, g->rows);
        compare(g, &pr, a, b, "poisoned byte", true);
    }
    free(obj);
    objects_run++;
}

/* Shapes for f: partial groups, padding groups, rows wider than NF_FUSED_COLS. */
static void all_shapes(rng *r, const nf_format *f, const nf_layout *l)
{
    nf_geometry g;
    switch (f->category) {
    case NF_CAT_DIRECT:
    case NF_CAT_FP8_ROW: {
        static const uint64_t ks[] = {1, 5, 16, 31, 64, 100, 257, 4096 + 37};
        for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
            uint64_t n = ks[i] > 1000 ? 3 : rng_range(r, 1, 9);
            if (make_geometry(f, l, n, ks[i], 1, &g)) one_geometry(r, &g);
        }
        break;
    }
    case NF_CAT_GROUPED: {
        static const uint64_t ks[] = {1, 7, 16, 33, 64, 100, 128, 130, 250, 384, 4096, 4096 + 70, 2 * 4096 + 200};
        for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
            uint64_t n = ks[i] > 1000 ? rng_range(r, 1, 3) : rng_range(r, 1, 9);
            if (make_geometry(f, l, n, ks[i], 1, &g)) one_geometry(r, &g);
        }
        break;
    }
    case NF_CAT_NVFP4: {
        static const uint64_t shapes[][3] = {{128, 64, 1},         {256, 192, 2},           {384, 128, 3},
                                             {128, 4096 + 128, 1}, {256, 2 * 4096 + 64, 1}, {512, 320, 2}};
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
            if (make_geometry(f, l, shapes[i][0], shapes[i][1], shapes[i][2], &g)) one_geometry(r, &g);
        break;
    }
    case NF_CAT_GGUF: {
        static const uint64_t mult[] = {1, 3, 17};
        for (size_t i = 0; i < sizeof mult / sizeof mult[0]; i++)
            if (make_geometry(f, l, rng_range(r, 1, 5), f->block_values * mult[i], 1, &g)) one_geometry(r, &g);
        break;
    }
    }
}

static void every_format(uint64_t seed)
{
    rng r = {seed};
    size_t formats = 0;
    for (size_t i = 0; i < nf_format_count(); i++) {
        const nf_format *f = nf_format_at(i);
        for (size_t j = 0; j < nf_layout_count(); j++) {
            const nf_layout *l = nf_layout_at(j);
            if (l->resource_encoding || !nf_layout_accepts(l, f)) continue;
            all_shapes(&r, f, l);
            formats++;
        }
    }
    cr_assert_geq(formats, 30, "only %zu format/layout pairs", formats);
    cr_log_info("%zu format/layout pairs, %" PRIu64 " objects, %" PRIu64 " values compared bit for bit", formats,
                objects_run, compared);
}

/* ------------------------------------------------------------------ per variant */
Test(fused_scalar, every_format_and_layout, .fini = restore)
{
    require(NF_SIMD_SCALAR);
    every_format(1);
}

Test(fused_avx2, every_format_and_layout, .fini = restore)
{
    require(NF_SIMD_AVX2);
    every_format(2);
}

Test(fused_avx512, every_format_and_layout, .fini = restore)
{
    require(NF_SIMD_AVX512);
    every_format(3);
}

Test(fused_neon, every_format_and_layout, .fini = restore)
{
    require(NF_SIMD_NEON);
    every_format(4);
}

/* Output rows that start at every float offset of a cache line: the SIMD kernels pick their
 * store alignment from the output address. */
static void misaligned(nf_simd_level level)
{
    require(level);
    rng r = {77};
    static const char *const fmts[] = {"q2_g64_fp16",         "t2_g128_fp16", "q4_g64_fp16", "q8_g32_fp16", "nvfp4",
                                       "fp8_e4m3fn_row_bf16", "gguf_q2_k",    "gguf_q3_k",   "bf16",        "int32"};
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
        const nf_format *f = F(fmts[i]);
        uint64_t n = f->category == NF_CAT_NVFP4 ? 128 : 3;
        uint64_t k = f->category == NF_CAT_GGUF ? 2 * f->block_values : f->category == NF_CAT_NVFP4 ? 192 : 4096 + 77;
        nf_geometry g;
        cr_assert(make_geometry(f, nf_layout_default_for(f), n, k, 1, &g));
        uint8_t *obj = malloc(g.bytes);
        for (uint64_t j = 0; j < g.bytes; j++) obj[j] = (uint8_t)rng_next(&r);
        nf_byte_reader src;
        nf_memory_source mem;
        nf_byte_reader_memory(&src, &mem, obj, g.bytes);
        outcome a = run_split(&g, &src, 0, n);
        cr_assert_eq(a.st, NF_OK, "%s", a.err.message);
        float *buf = malloc((size_t)(n * k + 16) * sizeof(float) + 64);
        float *base = (float *)(void *)(((uintptr_t)buf + 63) & ~(uintptr_t)63);
        for (unsigned off = 0; off < 16; off++) {
            nf_error err = {0};
            cr_assert_eq(nf_layout_decode_rows_f32(&g, &src, 0, n, base + off, &err), NF_OK, "%s", err.message);
            for (uint64_t j = 0; j < n * k; j++)
                if (bits_of_f32(base[off + j]) != bits_of_f32(a.values[j]))
                    cr_assert_fail("%s, output at float offset %u: value %" PRIu64 " is 0x%08x, split 0x%08x", fmts[i],
                                   off, j, bits_of_f32(base[off + j]), bits_of_f32(a.values[j]));
        }
        free(buf);
        free(a.values);
        free(obj);
    }
}

Test(fused_scalar, misaligned_output, .fini = restore) { misaligned(NF_SIMD_SCALAR); }
Test(fused_avx2, misaligned_output, .fini = restore) { misaligned(NF_SIMD_AVX2); }
Test(fused_avx512, misaligned_output, .fini = restore) { misaligned(NF_SIMD_AVX512); }
Test(fused_neon, misaligned_output, .fini = restore) { misaligned(NF_SIMD_NEON); }

/* ------------------------------------------------------------------ refusals */
Test(fused, refusals_match_the_split_path)
{
    nf_geometry g = geo2("q4_g64_fp16", 4, 100, 1);
    uint8_t *obj = calloc(1, g.bytes);
    nf_byte_reader src;
    nf_memory_source mem;
    nf_byte_reader_memory(&src, &mem, obj, g.bytes);
    float out[4 * 100];
    nf_error a = {0}, b = {0};
    /* rows outside the tensor: the same message */
    nf_words w;
    cr_assert_eq(nf_words_alloc(&w, &g, 8, &a), NF_OK);
    cr_assert_eq(nf_layout_decode_rows(&g, &src, 2, 5, &w, &a), NF_ERR_USAGE);
    cr_assert_eq(nf_layout_decode_rows_f32(&g, &src, 2, 5, out, &b), NF_ERR_USAGE);
    cr_assert_str_eq(b.message, a.message);
    cr_assert_eq(nf_layout_decode_rows_f32(&g, &src, 3, 2, out, &b), NF_ERR_USAGE);
    nf_words_free(&w);
    /* missing pieces */
    cr_assert_eq(nf_layout_decode_rows_f32(NULL, &src, 0, 1, out, &b), NF_ERR_USAGE);
    cr_assert_eq(nf_layout_decode_rows_f32(&g, NULL, 0, 1, out, &b), NF_ERR_USAGE);
    cr_assert_eq(nf_layout_decode_rows_f32(&g, &src, 0, 1, NULL, &b), NF_ERR_USAGE);
    cr_assert_eq(nf_layout_decode_rows_f32(&g, &src, 1, 1, NULL, &b), NF_OK, "no rows need no output");
    /* a resource has no values, as nf_words_to_f32 says */
    nf_geometry rg;
    cr_assert_eq(nf_geometry_resource(&rg, 16, &a), NF_OK);
    nf_words rw;
    cr_assert_eq(nf_words_alloc(&rw, &rg, 1, &a), NF_OK);
    nf_byte_reader rsrc;
    nf_memory_source rmem;
    nf_byte_reader_memory(&rsrc, &rmem, obj, 16);
    cr_assert_eq(nf_layout_decode_rows(&rg, &rsrc, 0, 1, &rw, &a), NF_OK);
    cr_assert_eq(nf_words_to_f32(&rg, &rw, 0, out, &a), NF_ERR_USAGE);
    cr_assert_eq(nf_layout_decode_rows_f32(&rg, &rsrc, 0, 1, out, &b), NF_ERR_USAGE);
    cr_assert_str_eq(b.message, a.message);
    nf_words_free(&rw);
    free(obj);
}
