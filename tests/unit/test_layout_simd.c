/* The fast layout kernels (lib/src/layout/kernels*.c, lib/src/layout/simd) against plain
 * references, bit for bit, and the word-at-a-time prescans of nf_layout_check against its
 * per-word path.
 *
 * Every decode/value check runs once per variant (suites layout_scalar, layout_avx2,
 * layout_avx512, layout_neon): the variant is forced with nf_simd_force, objects of random bytes (so every
 * stored word occurs, legal or not: NaN/inf/subnormal scales, illegal codes, odd divisors) are
 * decoded over arbitrary row ranges with nf_layout_decode_rows and turned into values with
 * nf_words_to_f32.  The words are compared with a decoder written here from docs/layouts.md, the
 * values with the per-element reference functions of <ninfer/format.h> (nf_grouped_value,
 * nf_nvfp4_value, nf_fp8_row_value, nf_bf16_to_f32, nf_int32_value).  Exhaustive tables cover
 * every scale word of the grouped and FP8 formats and every (scale, code) of nvfp4.  The row_split
 * kernels (unpacking, and the direct row to values) and the nvfp4 value table are also called
 * directly and compared with the scalar kernels for every row length up to 520 and divisors of
 * every kind.  A variant the CPU lacks is skipped with a message naming it, never passed silently. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_layout_util.h"

#include "common/cpu.h"
#include "layout/kernels.h"
#include "layout/layout_impl.h"
#include "support/test_float.h"

static uint64_t compared;

static void require(nf_simd_level level)
{
    if (!nf_simd_supported(level))
        cr_skip_test("the CPU lacks the %s variant (best here: %s): its kernels are NOT tested on this machine",
                     nf_simd_level_name(level), nf_simd_level_name(nf_simd_best()));
    cr_assert_eq(nf_simd_force(level), level);
}

static void restore(void)
{
    nf_simd_force(nf_simd_best());
    nf_layout_check_fast = true;
}

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static uint8_t *random_bytes(rng *r, uint64_t n)
{
    uint8_t *b = malloc(n ? n : 1);
    for (uint64_t i = 0; i < n; i++) b[i] = (uint8_t)rng_next(r);
    return b;
}

static void same_values(const float *got, const float *want, uint64_t n, const char *what, uint64_t r0)
{
    for (uint64_t i = 0; i < n; i++)
        if (bits_of_f32(got[i]) != bits_of_f32(want[i]))
            cr_assert_fail("%s (rows from %" PRIu64 "): value %" PRIu64 " is 0x%08x, reference 0x%08x", what, r0, i,
                           bits_of_f32(got[i]), bits_of_f32(want[i]));
    compared += n;
}

/* ------------------------------------------------------------------ references from the spec */
/* row_split_k128_v1 (docs/layouts.md 4): signed logical code at (row, col). */
static int ref_rs_code(const nf_geometry *g, const uint8_t *obj, uint64_t row, uint64_t col)
{
    const nf_format *f = g->format;
    unsigned b = f->code_bits, G = f->group_size;
    uint64_t gi = col / G, l = col % G;
    const nf_plane *base = &g->planes[0];
    const uint8_t *gb = obj + base->offset + row * base->row_bytes + gi * (base->row_bytes / g->groups_per_row);
    unsigned u;
    if (b == 8) u = gb[l];
    else if (b == 2) u = (gb[l / 4] >> (2 * (l % 4))) & 3u;
    else u = (gb[l / 2] >> (4 * (l % 2))) & 15u;
    if (b == 5 || b == 6) {
        const nf_plane *hi = &g->planes[1];
        const uint8_t *gh = obj + hi->offset + row * hi->row_bytes + gi * (hi->row_bytes / g->groups_per_row);
        unsigned hb = b - 4;
        for (unsigned j = 0; j < hb; j++) {
            uint64_t t = l * hb + j;
            if ((gh[t / 8] >> (t % 8)) & 1u) u |= 1u << (4 + j);
        }
    }
    if (f->code_bias) return (int)u - f->code_bias;
    return u >= (1u << (b - 1)) ? (int)u - (1 << b) : (int)u;
}

/* The same, for lane c of one row given as its planes (base and high bytes, groups contiguous). */
static int ref_rs_code_row(const nf_format *f, const uint8_t *base, const uint8_t *high, uint64_t c)
{
    unsigned b = f->code_bits, u;
    if (b == 8) u = base[c];
    else if (b == 2) u = (base[c / 4] >> (2 * (c % 4))) & 3u;
    else u = (base[c / 2] >> (4 * (c % 2))) & 15u;
    if (b == 5 || b == 6) {
        unsigned hb = b - 4;
        for (unsigned j = 0; j < hb; j++) {
            uint64_t t = c * hb + j;
            if ((high[t / 8] >> (t % 8)) & 1u) u |= 1u << (4 + j);
        }
    }
    if (f->code_bias) return (int)u - f->code_bias;
    return u >= (1u << (b - 1)) ? (int)u - (1 << b) : (int)u;
}

static uint16_t ref_rs_scale(const nf_geometry *g, const uint8_t *obj, uint64_t row, uint64_t gi)
{
    const nf_plane *sp = &g->planes[g->nplanes - 1];
    return le16(obj + sp->offset + 2 * (row * g->groups_per_row + gi));
}

static uint8_t ref_nvfp4_code(const nf_geometry *g, const uint8_t *obj, uint64_t row, uint64_t col)
{
    return (uint8_t)((obj[row * (g->cols / 2) + col / 2] >> (4 * (col % 2))) & 15u);
}

static uint8_t ref_nvfp4_scale(const nf_geometry *g, const uint8_t *obj, uint64_t row, uint64_t group)
{
    uint64_t k_tiles = g->cols / 64, rt = row / 128, ri = row % 128;
    return obj[g->planes[1].offset + (rt * k_tiles + group / 4) * 512 + (ri % 32) * 16 + (ri / 32) * 4 + group % 4];
}

/* ------------------------------------------------------------------ decode + values of a range */
/* Decode rows [r0, r1) of obj and check the words and the values against the references. */
static void check_range(const nf_geometry *g, const uint8_t *obj, uint64_t r0, uint64_t r1, const char *what)
{
    nf_memory_source mem;
    nf_byte_reader rd;
    nf_error err = {0};
    nf_words w;
    const nf_format *f = g->format;
    uint64_t n = r1 - r0, k = g->cols;
    nf_byte_reader_memory(&rd, &mem, obj, g->bytes);
    cr_assert_eq(nf_words_alloc(&w, g, n + 1, &err), NF_OK, "%s", err.message); /* room for more rows */
    cr_assert_eq(nf_layout_decode_rows(g, &rd, r0, r1, &w, &err), NF_OK, "%s: %s", what, err.message);
    nf_words view = w;
    view.rows = n;
    float *got = malloc((size_t)(n * k + 1) * sizeof *got), *want = malloc((size_t)(n * k + 1) * sizeof *want);
    cr_assert_eq(nf_words_to_f32(g, &view, r0, got, &err), NF_OK, "%s: %s", what, err.message);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t row = r0 + i;
        for (uint64_t c = 0; c < k; c++) {
            uint64_t at = i * k + c;
            switch (f->category) {
            case NF_CAT_DIRECT:
                if (f->word_bytes == 2) {
                    uint16_t word = le16(obj + 2 * (row * k + c));
                    cr_assert_eq(w.w16[at], word, "%s: word [%" PRIu64 ",%" PRIu64 "]", what, row, c);
                    want[at] = nf_bf16_to_f32(word);
                } else {
                    uint32_t word = le32(obj + 4 * (row * k + c));
                    cr_assert_eq(w.w32[at], word, "%s: word [%" PRIu64 ",%" PRIu64 "]", what, row, c);
                    want[at] = f->id == NF_FMT_INT32 ? nf_int32_value(word) : nf_f32_from_bits(word);
                }
                break;
            case NF_CAT_GROUPED: {
                int q = ref_rs_code(g, obj, row, c);
                uint16_t s = ref_rs_scale(g, obj, row, c / f->group_size);
                cr_assert_eq(w.codes[at], q, "%s: code [%" PRIu64 ",%" PRIu64 "] %d, reference %d", what, row, c,
                             w.codes[at], q);
                cr_assert_eq(w.scales[i * g->logical_groups + c / f->group_size], s, "%s: scale", what);
                want[at] = nf_grouped_value(s, q);
                break;
            }
            case NF_CAT_NVFP4: {
                uint8_t q = ref_nvfp4_code(g, obj, row, c), s = ref_nvfp4_scale(g, obj, row, c / 16);
                cr_assert_eq(w.codes8[at], q, "%s: code [%" PRIu64 ",%" PRIu64 "]", what, row, c);
                cr_assert_eq(w.scales8[i * (k / 16) + c / 16], s, "%s: scale", what);
                uint32_t d = le32(obj + g->planes[2].offset + 4 * (row / (g->rows / g->divisors)));
                want[at] = nf_nvfp4_value(q, s, d);
                break;
            }
            case NF_CAT_FP8_ROW: {
                bool inter = g->layout->id == NF_LAYOUT_ROW_INTERLEAVED_V1;
                uint8_t q = inter ? obj[row * (k + 2) + c] : obj[row * k + c];
                uint16_t s = inter ? le16(obj + row * (k + 2) + k) : le16(obj + g->planes[1].offset + 2 * row);
                cr_assert_eq(w.codes8[at], q, "%s: code [%" PRIu64 ",%" PRIu64 "]", what, row, c);
                cr_assert_eq(w.scales[i], s, "%s: scale", what);
                want[at] = nf_fp8_row_value(f, q, s);
                break;
            }
            case NF_CAT_GGUF: break;
            }
        }
    }
    same_values(got, want, n * k, what, r0);
    free(got);
    free(want);
    nf_words_free(&w);
}

/* Random objects of fmt [n,k]: the whole tensor, then random row ranges. */
static void random_object_ranges(rng *r, const char *fmt, uint64_t n, uint64_t k, uint64_t divisors, int ranges)
{
    nf_geometry g = geo2(fmt, n, k, divisors);
    uint8_t *obj = random_bytes(r, g.bytes);
    char what[96];
    snprintf(what, sizeof what, "%s [%" PRIu64 ",%" PRIu64 "]", fmt, n, k);
    check_range(&g, obj, 0, n, what);
    for (int i = 0; i < ranges; i++) {
        /* any rows, nvfp4 included: its scale tiles are read as needed */
        uint64_t r0 = rng_range(r, 0, n - 1), r1 = rng_range(r, r0 + 1, n);
        check_range(&g, obj, r0, r1, what);
    }
    free(obj);
}

static const char *const GROUPED[] = {"q2_g64_fp16", "q4_g64_fp16", "q5_g64_fp16",
                                      "q6_g64_fp16", "q8_g32_fp16", "t2_g128_fp16"};
/* Column counts around every vector width, group size and the 128-column row padding. */
static const uint64_t COLS[] = {1,  2,   3,   7,   8,   15,  16,  17,  31,  32,  33,  63,  64,  65,   95,
                                96, 127, 128, 129, 191, 192, 255, 256, 257, 300, 383, 384, 511, 1000, 4096};

static void check_grouped_random(void)
{
    rng r = {0x5EED0001};
    for (size_t f = 0; f < sizeof GROUPED / sizeof GROUPED[0]; f++)
        for (size_t i = 0; i < sizeof COLS / sizeof COLS[0]; i++)
            random_object_ranges(&r, GROUPED[f], rng_range(&r, 1, 9), COLS[i], 1, 4);
}

/* Every binary16 scale word under random codes (all 256 int8 values, illegal ones included),
 * through nf_words_to_f32 directly: [256, 256 groups] so row r group g has scale r*256+g. */
static void check_grouped_all_scales(void)
{
    rng r = {0x5EED0002};
    for (size_t fi = 0; fi < sizeof GROUPED / sizeof GROUPED[0]; fi++) {
        const nf_format *f = F(GROUPED[fi]);
        uint64_t k = 256 * (uint64_t)f->group_size - (fi % 2 ? 5 : 0); /* odd: a partial last group */
        nf_geometry g = geo2(GROUPED[fi], 256, k, 1);
        nf_words w;
        nf_error err = {0};
        cr_assert_eq(nf_words_alloc(&w, &g, 256, &err), NF_OK);
        for (uint64_t i = 0; i < 256 * k; i++) w.codes[i] = (int8_t)(uint8_t)rng_next(&r);
        for (uint64_t i = 0; i < 256 * 256; i++) w.scales[i] = (uint16_t)i;
        float *got = malloc((size_t)(256 * k) * sizeof *got), *want = malloc((size_t)(256 * k) * sizeof *want);
        /* in pieces starting at arbitrary rows */
        for (uint64_t r0 = 0; r0 < 256;) {
            uint64_t nrows = rng_range(&r, 1, 40);
            if (nrows > 256 - r0) nrows = 256 - r0;
            nf_words view = words_view(&g, &w, r0, nrows);
            cr_assert_eq(nf_words_to_f32(&g, &view, r0, got + r0 * k, &err), NF_OK, "%s", err.message);
            r0 += nrows;
        }
        for (uint64_t row = 0; row < 256; row++)
            for (uint64_t c = 0; c < k; c++)
                want[row * k + c] = nf_grouped_value(w.scales[row * 256 + c / f->group_size], w.codes[row * k + c]);
        same_values(got, want, 256 * k, f->name, 0);
        free(got);
        free(want);
        nf_words_free(&w);
    }
}

static void check_nvfp4_random(void)
{
    rng r = {0x5EED0003};
    static const uint64_t ks[] = {64, 128, 192, 320, 4096};
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        random_object_ranges(&r, "nvfp4", 128, ks[i], 1, 3);
        random_object_ranges(&r, "nvfp4", 384, ks[i], 3, 3);
    }
}

/* Every (scale word, code) pair under special and random divisors, codes above 15 included (the
 * reference reads the low 4 bits). */
static void check_nvfp4_all_pairs(void)
{
    static const uint32_t divisors[] = {0x3F800000u, 0x40400000u, 0x3DCCCCCDu, 0x00000001u, 0x007FFFFFu,
                                        0x7F7FFFFFu, 0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u,
                                        0x7FC00000u, 0x7F800001u, 0xFFC12345u, 0xC1200000u, 0x4B000001u};
    rng r = {0x5EED0004};
    uint64_t k = 256 * 16;
    nf_geometry g = geo2("nvfp4", 128 * (sizeof divisors / sizeof divisors[0]), k,
                         sizeof divisors / sizeof divisors[0]);
    nf_words w;
    nf_error err = {0};
    cr_assert_eq(nf_words_alloc(&w, &g, g.rows, &err), NF_OK);
    for (uint64_t i = 0; i < g.rows * k; i++) w.codes8[i] = (uint8_t)(i % 16 == 0 ? rng_next(&r) : (i + i / k) % 16);
    for (uint64_t i = 0; i < g.rows * 256; i++) w.scales8[i] = (uint8_t)(i + i / 256);
    memcpy(w.divisors, divisors, sizeof divisors);
    float *got = malloc((size_t)(g.rows * k) * sizeof *got), *want = malloc((size_t)(g.rows * k) * sizeof *want);
    for (uint64_t r0 = 0; r0 < g.rows;) {
        uint64_t nrows = rng_range(&r, 1, 300);
        if (nrows > g.rows - r0) nrows = g.rows - r0;
        nf_words view = words_view(&g, &w, r0, nrows);
        view.divisors = w.divisors;
        cr_assert_eq(nf_words_to_f32(&g, &view, r0, got + r0 * k, &err), NF_OK, "%s", err.message);
        r0 += nrows;
    }
    for (uint64_t row = 0; row < g.rows; row++)
        for (uint64_t c = 0; c < k; c++)
            want[row * k + c] = nf_nvfp4_value(w.codes8[row * k + c], w.scales8[row * 256 + c / 16],
                                               divisors[row / 128]);
    same_values(got, want, g.rows * k, "nvfp4 all pairs", 0);
    free(got);
    free(want);
    nf_words_free(&w);
}

static void check_fp8_random(void)
{
    rng r = {0x5EED0005};
    static const char *const fmts[] = {"fp8_e4m3fn_row_bf16", "fp8_e4m3fn_row_fp16"};
    for (size_t f = 0; f < 2; f++)
        for (size_t i = 0; i < sizeof COLS / sizeof COLS[0]; i++)
            random_object_ranges(&r, fmts[f], rng_range(&r, 1, 9), COLS[i], 1, 4);
}

/* Every code under every scale word: [65536, 259], row r has scale r, codes cover 0..255. */
static void check_fp8_all_pairs(void)
{
    static const char *const fmts[] = {"fp8_e4m3fn_row_bf16", "fp8_e4m3fn_row_fp16"};
    rng r = {0x5EED0006};
    for (size_t fi = 0; fi < 2; fi++) {
        const nf_format *f = F(fmts[fi]);
        uint64_t k = 259, rows = 65536, chunk = 4096;
        nf_geometry g = geo2(fmts[fi], rows, k, 1);
        nf_words w;
        nf_error err = {0};
        cr_assert_eq(nf_words_alloc(&w, &g, chunk, &err), NF_OK);
        float *got = malloc((size_t)(chunk * k) * sizeof *got), *want = malloc((size_t)(chunk * k) * sizeof *want);
        for (uint64_t r0 = 0; r0 < rows; r0 += chunk) {
            for (uint64_t i = 0; i < chunk; i++) {
                w.scales[i] = (uint16_t)(r0 + i);
                for (uint64_t c = 0; c < k; c++) w.codes8[i * k + c] = (uint8_t)(c < 256 ? c + i : rng_next(&r));
            }
            cr_assert_eq(nf_words_to_f32(&g, &w, r0, got, &err), NF_OK, "%s", err.message);
            for (uint64_t i = 0; i < chunk * k; i++) want[i] = nf_fp8_row_value(f, w.codes8[i], w.scales[i / k]);
            same_values(got, want, chunk * k, f->name, r0);
        }
        free(got);
        free(want);
        nf_words_free(&w);
    }
}

static void check_direct(void)
{
    rng r = {0x5EED0007};
    static const char *const fmts[] = {"bf16", "fp32", "int32"};
    for (size_t f = 0; f < 3; f++)
        for (size_t i = 0; i < sizeof COLS / sizeof COLS[0]; i++)
            random_object_ranges(&r, fmts[f], rng_range(&r, 1, 9), COLS[i], 1, 4);
    /* every bf16 word */
    {
        nf_geometry g = geo2("bf16", 256, 256, 1);
        uint8_t *obj = malloc(g.bytes);
        for (uint64_t i = 0; i < 65536; i++) {
            obj[2 * i] = (uint8_t)i;
            obj[2 * i + 1] = (uint8_t)(i >> 8);
        }
        check_range(&g, obj, 0, 256, "bf16 every word");
        check_range(&g, obj, 3, 200, "bf16 every word");
        free(obj);
    }
    /* int32 around the exact-conversion bound 2^24, the rounding ties and the extremes */
    {
        static const int64_t centers[] = {0,          1 << 24,   -(1 << 24), 1 << 25,    -(1 << 25), 1 << 30,
                                          -(1 << 30), INT32_MAX, INT32_MIN,  0x7FFFFF80, -0x7FFFFF80};
        uint64_t k = 11 * 64;
        nf_geometry g = geo2("int32", 2, k, 1);
        uint8_t *obj = malloc(g.bytes);
        for (uint64_t i = 0; i < 2 * k; i++) {
            int64_t v = centers[(i / 64) % 11] + (int64_t)(i % 64) - 32 + (i >= k ? (int64_t)(rng_next(&r) % 7) : 0);
            if (v > INT32_MAX) v = INT32_MAX;
            if (v < INT32_MIN) v = INT32_MIN;
            uint32_t u = (uint32_t)v;
            for (int b = 0; b < 4; b++) obj[4 * i + (uint64_t)b] = (uint8_t)(u >> (8 * b));
        }
        check_range(&g, obj, 0, 2, "int32 edges");
        check_range(&g, obj, 1, 2, "int32 edges");
        free(obj);
    }
    /* int32 rounding ties and their neighbours for every dropped-bit count (1..8), both
     * significand parities, both signs, and the carry into the next power of two */
    {
        uint64_t k = 8 * 2 * 2 * 3 * 2 * 2, i = 0;
        nf_geometry g = geo2("int32", 1, k, 1);
        uint8_t *obj = malloc(g.bytes);
        for (unsigned drop = 1; drop <= 8; drop++)
            for (unsigned top_sig = 0; top_sig < 2; top_sig++) /* significand 0xFFFFFF (carry) or random */
                for (unsigned odd = 0; odd < 2; odd++)
                    for (int delta = -1; delta <= 1; delta++)
                        for (unsigned neg = 0; neg < 2; neg++)
                            for (unsigned rep = 0; rep < 2; rep++) {
                                uint64_t sig = top_sig ? 0xFFFFFFu : (0x800000u | (rng_next(&r) & 0x7FFFFFu));
                                sig = (sig & ~1ull) | (top_sig ? 1 : odd);
                                int64_t v = (int64_t)((sig << drop) + (1ull << (drop - 1))) + delta;
                                if (v > INT32_MAX) v = INT32_MAX;
                                if (neg) v = -v;
                                uint32_t u = (uint32_t)v;
                                for (int b = 0; b < 4; b++) obj[4 * i + (uint64_t)b] = (uint8_t)(u >> (8 * b));
                                i++;
                            }
        check_range(&g, obj, 0, 1, "int32 ties");
        free(obj);
    }
}

/* Outputs at every float offset from a 64-byte line (the AVX-512 kernels align their stores),
 * for row lengths around the group sizes. */
static void check_alignment(void)
{
    rng r = {0x5EED000A};
    static const char *const fmts[] = {
        "q2_g64_fp16",         "q4_g64_fp16",         "q5_g64_fp16", "q6_g64_fp16", "q8_g32_fp16", "t2_g128_fp16",
        "fp8_e4m3fn_row_bf16", "fp8_e4m3fn_row_fp16", "nvfp4",       "bf16",        "int32",       "fp32"};
    static const uint64_t ks[] = {1, 5, 16, 17, 31, 47, 64, 100, 128, 129, 200, 256, 333};
    float *buf = aligned_alloc(64, 64 * 1024 * sizeof(float));
    float *want = malloc(64 * 1024 * sizeof(float));
    for (size_t fi = 0; fi < sizeof fmts / sizeof fmts[0]; fi++) {
        const nf_format *f = F(fmts[fi]);
        bool nv = f->category == NF_CAT_NVFP4;
        for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
            uint64_t k = nv ? 64 * (ki % 4 + 1) : ks[ki], n = nv ? 128 : 3;
            nf_geometry g = geo2(fmts[fi], n, k, 1);
            uint8_t *obj = random_bytes(&r, g.bytes);
            if (nv) { /* a sane divisor: the values are ordinary numbers */
                uint32_t d = 0x3F800000u + (uint32_t)(rng_next(&r) % 1000);
                memcpy(obj + g.planes[2].offset, &d, 4);
            }
            nf_memory_source mem;
            nf_byte_reader rd;
            nf_error err = {0};
            nf_words w;
            nf_byte_reader_memory(&rd, &mem, obj, g.bytes);
            cr_assert_eq(nf_words_alloc(&w, &g, n, &err), NF_OK);
            cr_assert_eq(nf_layout_decode_rows(&g, &rd, 0, n, &w, &err), NF_OK, "%s", err.message);
            nf_simd_level level = nf_simd_active();
            nf_simd_force(NF_SIMD_SCALAR);
            cr_assert_eq(nf_words_to_f32(&g, &w, 0, want, &err), NF_OK);
            nf_simd_force(level);
            /* the scalar kernels against the per-element references once */
            for (uint64_t i = 0; i < n * k; i++) {
                float ref;
                uint64_t row = i / k, c = i % k;
                switch (f->category) {
                case NF_CAT_GROUPED:
                    ref = nf_grouped_value(w.scales[row * g.logical_groups + c / f->group_size], w.codes[i]);
                    break;
                case NF_CAT_NVFP4:
                    ref = nf_nvfp4_value(w.codes8[i], w.scales8[row * (k / 16) + c / 16], w.divisors[0]);
                    break;
                case NF_CAT_FP8_ROW: ref = nf_fp8_row_value(f, w.codes8[i], w.scales[row]); break;
                default:
                    ref = f->id == NF_FMT_BF16    ? nf_bf16_to_f32(w.w16[i])
                          : f->id == NF_FMT_INT32 ? nf_int32_value(w.w32[i])
                                                  : nf_f32_from_bits(w.w32[i]);
                    break;
                }
                cr_assert_eq(bits_of_f32(want[i]), bits_of_f32(ref), "%s scalar value %" PRIu64, f->name, i);
            }
            for (unsigned off = 0; off < 16; off++) {
                float *out = buf + off;
                memset(buf, 0xEE, (size_t)(n * k + 32) * sizeof(float));
                cr_assert_eq(nf_words_to_f32(&g, &w, 0, out, &err), NF_OK);
                char what[96];
                snprintf(what, sizeof what, "%s [%" PRIu64 ",%" PRIu64 "] output at float %u of a line", f->name, n, k,
                         off);
                same_values(out, want, n * k, what, 0);
                for (unsigned j = 0; j < off; j++)
                    cr_assert_eq(bits_of_f32(buf[j]), 0xEEEEEEEEu, "%s: wrote before", what);
                for (unsigned j = 0; j < 16; j++)
                    cr_assert_eq(bits_of_f32(out[n * k + j]), 0xEEEEEEEEu, "%s: wrote past the end", what);
            }
            nf_words_free(&w);
            free(obj);
        }
    }
    free(buf);
    free(want);
}

/* gguf k-quant blocks of random bytes (every binary16 d/dmin word occurs: NaN, inf, subnormal
 * super-scales included) against the forced scalar dequantizers of ggml_dequant.c, which
 * test_ggml_dequant checks against ggml's own output. */
static void check_gguf(void)
{
    rng r = {0x5EED000B};
    static const char *const fmts[] = {"gguf_q2_k", "gguf_q3_k", "gguf_q4_k", "gguf_q5_k",
                                       "gguf_q6_k", "gguf_q8_0", "gguf_q4_0", "gguf_iq4_xs"};
    for (size_t fi = 0; fi < sizeof fmts / sizeof fmts[0]; fi++) {
        const nf_format *f = F(fmts[fi]);
        uint64_t k = 256 * 8, n = 64;
        nf_geometry g = geo2(fmts[fi], n, k, 1);
        uint8_t *obj = random_bytes(&r, g.bytes);
        /* every d word once per format: the first binary16 field of block i of the tensor gets i
         * (and so do the others, shifted) */
        for (uint64_t i = 0; i < g.bytes / f->block_bytes && i < 65536; i++) {
            obj[i * f->block_bytes + f->block_bytes - 2] = (uint8_t)i;
            obj[i * f->block_bytes + f->block_bytes - 1] = (uint8_t)(i >> 8);
            obj[i * f->block_bytes] = (uint8_t)(i * 7);
            obj[i * f->block_bytes + 1] = (uint8_t)((i * 7) >> 8);
        }
        nf_memory_source mem;
        nf_byte_reader rd;
        nf_error err = {0};
        nf_words w;
        nf_byte_reader_memory(&rd, &mem, obj, g.bytes);
        cr_assert_eq(nf_words_alloc(&w, &g, n, &err), NF_OK);
        cr_assert_eq(nf_layout_decode_rows(&g, &rd, 0, n, &w, &err), NF_OK, "%s", err.message);
        float *got = malloc((size_t)(n * k) * sizeof *got), *want = malloc((size_t)(n * k) * sizeof *want);
        cr_assert_eq(nf_words_to_f32(&g, &w, 0, got, &err), NF_OK, "%s", err.message);
        nf_simd_level level = nf_simd_active();
        nf_simd_force(NF_SIMD_SCALAR);
        cr_assert_eq(nf_words_to_f32(&g, &w, 0, want, &err), NF_OK, "%s", err.message);
        nf_simd_force(level);
        same_values(got, want, n * k, f->name, 0);
        free(got);
        free(want);
        nf_words_free(&w);
        free(obj);
    }
}

/* ------------------------------------------------------------------ the kernels themselves */
/* Scale words of every kind for the row_split rows: infinities, NaNs (quiet, signalling, with
 * payloads), zeros, subnormals, the largest finite ones. */
static const uint16_t SPECIAL_SCALES[] = {0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFE01, 0x7FFF, 0x8000, 0x0000,
                                          0x0001, 0x03FF, 0x8001, 0x0400, 0x7BFF, 0xFBFF, 0x3C00, 0xBC00};
#define NSPECIAL_SCALES (sizeof SPECIAL_SCALES / sizeof SPECIAL_SCALES[0])

/* The row_split kernels of the active variant (rs_unpack_row, and rs_row_f32 through
 * nf_rs_row_f32) against the scalar kernels and nf_grouped_value, one row at a time for every
 * length 0..520: every tail modulo the vectors' 16, 32 and 64 lanes, partial and whole last
 * groups.  Rows of random bytes, of 0x00 and of 0xFF (every lane the stored word 0 or the
 * largest), random and special scale words; the rows' planes in buffers of exactly their size,
 * outputs with guard elements that must stay untouched. */
#define RS_MAX_K 520u
#define RS_GUARD 16u
static void check_rs_kernels(void)
{
    rng r = {0x5EED000C};
    const nf_layout_kernels *kern = nf_layout_kernels_active(), *ref = &nf_layout_kernels_scalar;
    int8_t got[RS_MAX_K + RS_GUARD], want[RS_MAX_K + RS_GUARD];
    float vgot[RS_MAX_K + RS_GUARD], vwant[RS_MAX_K + RS_GUARD];
    for (size_t fi = 0; fi < sizeof GROUPED / sizeof GROUPED[0]; fi++) {
        const nf_format *f = F(GROUPED[fi]);
        nf_rs_params p;
        cr_assert(nf_rs_params_for(f, &p));
        for (size_t k = 0; k <= RS_MAX_K; k++) {
            size_t groups = (k + 127) / 128 * 128 / p.group, nbase = groups * p.base_bytes;
            size_t nhigh = groups * p.high_bytes, nsc = 2 * groups;
            uint8_t *base = malloc(nbase ? nbase : 1), *high = malloc(nhigh ? nhigh : 1);
            uint8_t *sc = malloc(nsc ? nsc : 1);
            cr_assert(base && high && sc);
            for (int fill = 0; fill < 3; fill++) {
                for (size_t i = 0; i < nbase; i++)
                    base[i] = fill == 0 ? (uint8_t)rng_next(&r) : fill == 1 ? 0x00 : 0xFF;
                for (size_t i = 0; i < nhigh; i++)
                    high[i] = fill == 0 ? (uint8_t)rng_next(&r) : fill == 1 ? 0x00 : 0xFF;
                for (size_t gi = 0; gi < groups; gi++) {
                    uint16_t s = fill == 0 ? (uint16_t)rng_next(&r)
                                           : SPECIAL_SCALES[(gi + k + (size_t)fill) % NSPECIAL_SCALES];
                    sc[2 * gi] = (uint8_t)s;
                    sc[2 * gi + 1] = (uint8_t)(s >> 8);
                }
                memset(got, 0x5A, sizeof got);
                memset(want, 0x5A, sizeof want);
                kern->rs_unpack_row(&p, base, high, k, got);
                ref->rs_unpack_row(&p, base, high, k, want);
                for (size_t c = 0; c < k + RS_GUARD; c++)
                    if (got[c] != want[c])
                        cr_assert_fail("%s K=%zu fill %d: %s rs_unpack_row code %zu is %d, scalar %d%s", f->name, k,
                                       fill, kern->name, c, got[c], want[c], c >= k ? " (past the row)" : "");
                for (size_t c = 0; c < k; c++) {
                    int q = ref_rs_code_row(f, base, high, c);
                    if (want[c] != q)
                        cr_assert_fail("%s K=%zu: scalar code %zu is %d, spec %d", f->name, k, c, want[c], q);
                }
                memset(vgot, 0x5A, sizeof vgot);
                memset(vwant, 0x5A, sizeof vwant);
                nf_rs_row_f32(kern, &p, base, high, sc, k, vgot);
                nf_rs_row_f32(ref, &p, base, high, sc, k, vwant);
                for (size_t c = 0; c < k + RS_GUARD; c++) {
                    uint32_t a = bits_of_f32(vgot[c]), b = bits_of_f32(vwant[c]);
                    if (a != b)
                        cr_assert_fail("%s K=%zu fill %d: %s rs_row_f32 value %zu is 0x%08x, scalar 0x%08x%s", f->name,
                                       k, fill, kern->name, c, a, b, c >= k ? " (past the row)" : "");
                    if (c < k) {
                        size_t gi = c / p.group;
                        float e = nf_grouped_value((uint16_t)(sc[2 * gi] | sc[2 * gi + 1] << 8), want[c]);
                        if (bits_of_f32(e) != b)
                            cr_assert_fail("%s K=%zu: scalar value %zu is 0x%08x, nf_grouped_value 0x%08x", f->name, k,
                                           c, b, bits_of_f32(e));
                    }
                }
                compared += 2 * k;
            }
            free(base);
            free(high);
            free(sc);
        }
    }
}

/* The nvfp4 value table of the active variant against the scalar kernel and nf_nvfp4_value,
 * every entry, for divisors of every kind (zeros, subnormals, the extremes, infinities, quiet
 * and signalling NaNs with payloads, both signs) and random ones. */
static void check_nvfp4_table(void)
{
    static const uint32_t special[] = {0x3F800000u, 0x40400000u, 0x3DCCCCCDu, 0x00000001u, 0x007FFFFFu, 0x00800000u,
                                       0x7F7FFFFFu, 0xFF7FFFFFu, 0x00000000u, 0x80000000u, 0x80000001u, 0x7F800000u,
                                       0xFF800000u, 0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF800001u, 0x7FBFFFFFu,
                                       0xFFC12345u, 0xC1200000u, 0x4B000001u, 0x3F800001u, 0x34000000u, 0x5E800000u};
    const size_t nspecial = sizeof special / sizeof special[0];
    rng r = {0x5EED000D};
    const nf_layout_kernels *kern = nf_layout_kernels_active();
    float *got = malloc((NF_NVFP4_TABLE_SIZE + RS_GUARD) * sizeof *got);
    float *want = malloc(NF_NVFP4_TABLE_SIZE * sizeof *want);
    cr_assert(got && want);
    for (size_t i = 0; i < nspecial + 100; i++) {
        uint32_t d = i < nspecial ? special[i] : (uint32_t)rng_next(&r);
        memset(got, 0x5A, (NF_NVFP4_TABLE_SIZE + RS_GUARD) * sizeof *got);
        kern->nvfp4_table(d, got);
        nf_nvfp4_table_scalar(d, want);
        for (unsigned e = 0; e < NF_NVFP4_TABLE_SIZE; e++) {
            uint32_t a = bits_of_f32(got[e]), b = bits_of_f32(want[e]);
            if (a != b)
                cr_assert_fail("divisor 0x%08x: %s table entry %u (scale 0x%02x, code %u) is 0x%08x, scalar 0x%08x", d,
                               kern->name, e, e / 16, e % 16, a, b);
            uint32_t v = bits_of_f32(nf_nvfp4_value((uint8_t)(e % 16), (uint8_t)(e / 16), d));
            if (b != v)
                cr_assert_fail("divisor 0x%08x: scalar table entry %u is 0x%08x, nf_nvfp4_value 0x%08x", d, e, b, v);
        }
        for (unsigned e = 0; e < RS_GUARD; e++)
            cr_assert_eq(bits_of_f32(got[NF_NVFP4_TABLE_SIZE + e]), 0x5A5A5A5Au, "%s wrote past the table", kern->name);
        compared += NF_NVFP4_TABLE_SIZE;
    }
    free(got);
    free(want);
}

/* ------------------------------------------------------------------ suites per variant */
#define VARIANT_TEST(suite, level, check)                                                                      \
    Test(suite, check, .fini = restore)                                                                        \
    {                                                                                                          \
        require(level);                                                                                        \
        compared = 0;                                                                                          \
        check_##check();                                                                                       \
        cr_log_info("%s %s: %" PRIu64 " values identical to the reference", nf_simd_level_name(level), #check, \
                    compared);                                                                                 \
        cr_assert(compared > 0);                                                                               \
    }

#define VARIANT_SUITE(suite, level)                \
    VARIANT_TEST(suite, level, grouped_random)     \
    VARIANT_TEST(suite, level, grouped_all_scales) \
    VARIANT_TEST(suite, level, nvfp4_random)       \
    VARIANT_TEST(suite, level, nvfp4_all_pairs)    \
    VARIANT_TEST(suite, level, fp8_random)         \
    VARIANT_TEST(suite, level, fp8_all_pairs)      \
    VARIANT_TEST(suite, level, direct)             \
    VARIANT_TEST(suite, level, alignment)          \
    VARIANT_TEST(suite, level, gguf)               \
    VARIANT_TEST(suite, level, rs_kernels)         \
    VARIANT_TEST(suite, level, nvfp4_table)

VARIANT_SUITE(layout_scalar, NF_SIMD_SCALAR)
VARIANT_SUITE(layout_avx2, NF_SIMD_AVX2)
VARIANT_SUITE(layout_avx512, NF_SIMD_AVX512)
VARIANT_SUITE(layout_neon, NF_SIMD_NEON)

/* ------------------------------------------------------------------ verify prescans */
/* Every message (in order) and the count of nf_layout_check, as one FNV-1a hash plus the first
 * messages for the failure report. */
typedef struct transcript {
    uint64_t hash, count;
    char first[4][512];
} transcript;

static void transcript_add(void *ctx, const char *msg)
{
    transcript *t = ctx;
    for (const char *p = msg; *p; p++) t->hash = (t->hash ^ (uint8_t)*p) * 0x100000001B3ull;
    t->hash = (t->hash ^ 0xFF) * 0x100000001B3ull;
    if (t->count < 4) snprintf(t->first[t->count], sizeof t->first[0], "%s", msg);
    t->count++;
}

static uint64_t check_transcript(const nf_geometry *g, const uint8_t *obj, bool fast, transcript *t)
{
    nf_memory_source mem;
    nf_byte_reader rd;
    nf_error err = {0};
    uint64_t found = 0; /* (not "problems": test_layout_util.h's type of that name) */
    memset(t, 0, sizeof *t);
    t->hash = 0xCBF29CE484222325ull;
    nf_layout_check_fast = fast;
    nf_byte_reader_memory(&rd, &mem, obj, g->bytes);
    cr_assert_eq(nf_layout_check(g, &rd, transcript_add, t, UINT64_MAX, &found, &err), NF_OK, "%s", err.message);
    nf_layout_check_fast = true;
    cr_assert_eq(found, t->count);
    return found;
}

static void same_transcripts(const nf_geometry *g, const uint8_t *obj, const char *what, uint64_t *total)
{
    transcript a, b;
    uint64_t na = check_transcript(g, obj, true, &a), nb = check_transcript(g, obj, false, &b);
    if (na != nb || a.hash != b.hash)
        cr_assert_fail("%s: fast check reports %" PRIu64 " problems (first: %s), the per-word path %" PRIu64
                       " (first: %s)",
                       what, na, a.first[0], nb, b.first[0]);
    *total += na;
}

/* A legal object of fmt, then the same with a few random bytes changed (each mutation lands in
 * any plane, padding or gap), then with one special scale word written into every group or row. */
static void prescan_case(rng *r, const char *fmt, uint64_t n, uint64_t k, uint64_t divisors, uint64_t *total)
{
    nf_geometry g = geo2(fmt, n, k, divisors);
    nf_words w;
    nf_error err = {0};
    cr_assert_eq(nf_words_alloc(&w, &g, n, &err), NF_OK);
    random_words(r, &g, &w);
    uint8_t *obj = encode_all(&g, &w);
    char what[128];
    snprintf(what, sizeof what, "%s [%" PRIu64 ",%" PRIu64 "] legal", fmt, n, k);
    transcript t;
    cr_assert_eq(check_transcript(&g, obj, true, &t), 0, "%s: %s", what, t.first[0]);
    uint8_t *mut = malloc(g.bytes);
    for (int round = 0; round < 12; round++) {
        memcpy(mut, obj, g.bytes);
        int changes = (int)rng_range(r, 1, 6);
        for (int i = 0; i < changes; i++) {
            uint64_t at = rng_range(r, 0, g.bytes - 1);
            /* byte values that matter: 0x80, 0x7F, 0xFF, 0x00, 0x55, 0xAA, a random one */
            static const uint8_t special[] = {0x80, 0x7F, 0xFF, 0x00, 0x55, 0xAA, 0x02, 0x7C, 0xFC};
            mut[at] = (rng_next(r) & 1) ? special[rng_next(r) % sizeof special] : (uint8_t)rng_next(r);
        }
        snprintf(what, sizeof what, "%s [%" PRIu64 ",%" PRIu64 "] mutation round %d", fmt, n, k, round);
        same_transcripts(&g, mut, what, total);
    }
    /* fully random bytes */
    for (uint64_t i = 0; i < g.bytes; i++) mut[i] = (uint8_t)rng_next(r);
    snprintf(what, sizeof what, "%s [%" PRIu64 ",%" PRIu64 "] random bytes", fmt, n, k);
    same_transcripts(&g, mut, what, total);
    free(mut);
    free(obj);
    nf_words_free(&w);
}

/* Every grouped scale word in a scale slot of an otherwise legal object, with zero and nonzero
 * codes under it. */
static void prescan_all_scales(const char *fmt, uint64_t *total)
{
    rng r = {0x5EED0008};
    const nf_format *f = F(fmt);
    uint64_t k = 128 * 4 + 7, n = 2;
    nf_geometry g = geo2(fmt, n, k, 1);
    nf_words w;
    nf_error err = {0};
    cr_assert_eq(nf_words_alloc(&w, &g, n, &err), NF_OK);
    random_words(&r, &g, &w);
    for (uint64_t i = 0; i < n * k; i++)
        if (i % 3) w.codes[i] = 0; /* a group of mostly zero codes: some all-zero groups */
    for (uint64_t i = 0; i < n * k; i++)
        if (i % 97 == 0) w.codes[i] = 0;
    uint8_t *obj = encode_all(&g, &w);
    const nf_plane *sp = &g.planes[g.nplanes - 1];
    for (uint32_t s = 0; s < 65536; s += (s < 0x0400 || (s & 0x7C00) >= 0x7C00 || (s & 0x7FFF) < 0x0400) ? 1 : 61) {
        for (uint64_t slot = 0; slot < n * g.groups_per_row; slot++) {
            obj[sp->offset + 2 * slot] = (uint8_t)s;
            obj[sp->offset + 2 * slot + 1] = (uint8_t)(s >> 8);
        }
        char what[96];
        snprintf(what, sizeof what, "%s scale 0x%04x in every slot", f->name, s);
        same_transcripts(&g, obj, what, total);
    }
    free(obj);
    nf_words_free(&w);
}

Test(layout_check_prescan, same_reports_as_per_word_path, .fini = restore)
{
    rng r = {0x5EED0009};
    uint64_t total = 0;
    static const char *const fmts[] = {"q2_g64_fp16", "q4_g64_fp16",         "q5_g64_fp16",
                                       "q6_g64_fp16", "q8_g32_fp16",         "t2_g128_fp16",
                                       "nvfp4",       "fp8_e4m3fn_row_bf16", "fp8_e4m3fn_row_fp16"};
    for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
        bool nv = strcmp(fmts[f], "nvfp4") == 0;
        for (int i = 0; i < 6; i++) {
            uint64_t k = nv ? 64 * rng_range(&r, 1, 5) : COLS[rng_range(&r, 0, sizeof COLS / sizeof COLS[0] - 2)];
            uint64_t n = nv ? 128 * rng_range(&r, 1, 2) : rng_range(&r, 1, 5);
            prescan_case(&r, fmts[f], n, k, nv && n == 256 ? 2 : 1, &total);
        }
    }
    cr_log_info("prescans: %" PRIu64 " problems reported identically", total);
    cr_assert(total > 0);
}

Test(layout_check_prescan, every_scale_word, .fini = restore)
{
    uint64_t total = 0;
    for (size_t f = 0; f < sizeof GROUPED / sizeof GROUPED[0]; f++) prescan_all_scales(GROUPED[f], &total);
    cr_assert(total > 0);
}

/* FP8 codes: every code in a row under a valid, a zero and an invalid scale. */
Test(layout_check_prescan, fp8_every_code, .fini = restore)
{
    uint64_t total = 0;
    static const char *const fmts[] = {"fp8_e4m3fn_row_bf16", "fp8_e4m3fn_row_fp16"};
    static const uint16_t scales[] = {0x3C00, 0x0000, 0x0001, 0x8000, 0x7F80, 0x7C00, 0x7FFF};
    for (size_t f = 0; f < 2; f++)
        for (unsigned code = 0; code < 256; code++) {
            uint64_t n = 7, k = 75;
            nf_geometry g = geo2(fmts[f], n, k, 1);
            uint8_t *obj = calloc(1, g.bytes);
            bool inter = g.layout->id == NF_LAYOUT_ROW_INTERLEAVED_V1;
            for (uint64_t row = 0; row < n; row++) {
                uint8_t *codes = obj + (inter ? row * (k + 2) : row * k);
                codes[(row * 11 + code) % k] = (uint8_t)code;
                uint8_t *sp = inter ? obj + row * (k + 2) + k : obj + g.planes[1].offset + 2 * row;
                sp[0] = (uint8_t)scales[row];
                sp[1] = (uint8_t)(scales[row] >> 8);
            }
            char what[64];
            snprintf(what, sizeof what, "%s code 0x%02x", fmts[f], code);
            same_transcripts(&g, obj, what, &total);
            free(obj);
        }
    cr_assert(total > 0);
}
