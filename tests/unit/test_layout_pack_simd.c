/* The encode side of the grouped formats (lib/src/layout/kernels*.c, lib/src/layout/simd): the
 * row_split packer rs_pack_row and the word scans codes_within / grouped_scales, in every
 * variant, against a packer written here from docs/layouts.md 4.3-4.5 (group by group, bit by
 * bit) and against the scalar kernels, byte for byte; and the public paths built on them
 * (nf_layout_encode_rows checked and unchecked, nf_words_check) under every variant: the same
 * object bytes, the same refusals with the same messages, nothing written by a refused call,
 * decode(encode(words)) == words.
 *
 * Suites pack_scalar, pack_avx2, pack_avx512 and pack_neon run the same checks with the variant forced
 * through nf_simd_force; a variant the CPU lacks is skipped with a message naming it, never
 * passed silently. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_layout_util.h"

#include "common/cpu.h"
#include "layout/kernels.h"
#include "layout/layout_impl.h"

static uint64_t compared;

static void require(nf_simd_level level)
{
    if (!nf_simd_supported(level))
        cr_skip_test("the CPU lacks the %s variant (best here: %s): its kernels are NOT tested on this machine",
                     nf_simd_level_name(level), nf_simd_level_name(nf_simd_best()));
    cr_assert_eq(nf_simd_force(level), level);
}

static void restore(void) { nf_simd_force(nf_simd_best()); }

static const char *const GROUPED[] = {"q2_g64_fp16", "q4_g64_fp16", "q5_g64_fp16",
                                      "q6_g64_fp16", "q8_g32_fp16", "t2_g128_fp16"};
#define NGROUPED (sizeof GROUPED / sizeof GROUPED[0])

/* Column counts: K = 1, K < 128, around every vector width (32, 64 lanes), group size (32, 64,
 * 128), block (128 lanes) and row padding, partial last groups and wholly padding groups. */
static const uint64_t COLS[] = {1,   2,   3,   7,   8,   15,  16,  17,  31,   32,   33,   63,  64,  65,
                                95,  96,  97,  127, 128, 129, 159, 160, 191,  192,  193,  255, 256, 257,
                                300, 383, 384, 385, 511, 512, 513, 640, 1000, 4095, 4096, 4097};
#define NCOLS (sizeof COLS / sizeof COLS[0])

/* ------------------------------------------------------------------ the reference, from the spec */
static unsigned lane_bits(const nf_format *f) { return f->code_bits == 2 ? 2 : f->code_bits == 8 ? 8 : 4; }
static unsigned high_bits(const nf_format *f) { return f->code_bits == 5 || f->code_bits == 6 ? f->code_bits - 4 : 0; }

/* The codes that have a stored word: Q2 -1..2 (u = q + 1), the others b-bit two's complement. */
static void stored_range(const nf_format *f, int *lo, int *hi)
{
    int w = 1 << f->code_bits;
    *lo = f->code_bias ? -f->code_bias : -w / 2;
    *hi = f->code_bias ? w - 1 - f->code_bias : w / 2 - 1;
}

/* Stored word u of code q (docs/layouts.md 4.3): q + 1 for Q2, q mod 2^b otherwise. */
static unsigned ref_u(const nf_format *f, int q)
{
    if (f->code_bias) return (unsigned)(q + f->code_bias);
    return (unsigned)q & ((1u << f->code_bits) - 1u);
}

/* One row of `lanes` physical lanes (columns k.. are padding: code 0), group by group: group g
 * owns base bytes [g*B, g*B + B) and high bytes [g*H, g*H + H) of the row; lane i of a group goes
 * to base bits i*b' (b' = 2, 4 or 8) and, for Q5/Q6, to stream bits i*(b-4) .. of the high bytes
 * (stream bit t = bit t%8 of byte t/8). */
static void ref_pack_row(const nf_format *f, const int8_t *codes, uint64_t k, uint64_t lanes, uint8_t *base,
                         uint8_t *high)
{
    unsigned G = f->group_size, lb = lane_bits(f), hb = high_bits(f);
    unsigned B = G * lb / 8, H = G * hb / 8;
    memset(base, 0, (size_t)(lanes / G * B));
    if (H) memset(high, 0, (size_t)(lanes / G * H));
    for (uint64_t g = 0; g < lanes / G; g++)
        for (unsigned i = 0; i < G; i++) {
            uint64_t col = g * G + i;
            unsigned u = ref_u(f, col < k ? codes[col] : 0);
            uint8_t *gb = base + g * B, *gh = high + g * H;
            if (lb == 8) gb[i] = (uint8_t)u;
            else if (lb == 2) gb[i / 4] = (uint8_t)(gb[i / 4] | (u << (2 * (i % 4))));
            else gb[i / 2] = (uint8_t)(gb[i / 2] | ((u & 15u) << (4 * (i % 2))));
            for (unsigned t = 0; t < hb; t++)
                if ((u >> (4 + t)) & 1u) {
                    unsigned s = i * hb + t;
                    gh[s / 8] = (uint8_t)(gh[s / 8] | (1u << (s % 8)));
                }
        }
}

/* The whole object of g from words w (all rows): the planes at the geometry's offsets, scales
 * little-endian, +0 for padding groups, zero gaps. */
static uint8_t *ref_object(const nf_geometry *g, const nf_words *w)
{
    const nf_format *f = g->format;
    uint8_t *obj = calloc((size_t)g->bytes, 1);
    cr_assert(obj);
    const nf_plane *base = &g->planes[0], *sc = &g->planes[g->nplanes - 1];
    const nf_plane *hi = g->nplanes == 3 ? &g->planes[1] : NULL;
    uint8_t scratch[1];
    for (uint64_t r = 0; r < g->rows; r++) {
        ref_pack_row(f, w->codes + r * g->cols, g->cols, g->k_pad, obj + base->offset + r * base->row_bytes,
                     hi ? obj + hi->offset + r * hi->row_bytes : scratch);
        for (uint64_t gi = 0; gi < g->groups_per_row; gi++) {
            uint16_t s = gi < g->logical_groups ? w->scales[r * g->logical_groups + gi] : 0;
            uint8_t *p = obj + sc->offset + 2 * (r * g->groups_per_row + gi);
            p[0] = (uint8_t)(s & 0xFF);
            p[1] = (uint8_t)(s >> 8);
        }
    }
    return obj;
}

/* ------------------------------------------------------------------ rs_pack_row, kernel level */
#define GUARD 64u

typedef struct packed {
    uint8_t *base, *high; /* row bytes + GUARD guard bytes each */
    size_t nbase, nhigh;
} packed;

static packed packed_alloc(const nf_format *f, uint64_t lanes)
{
    packed p;
    p.nbase = (size_t)(lanes * lane_bits(f) / 8);
    p.nhigh = (size_t)(lanes * high_bits(f) / 8);
    p.base = malloc(p.nbase + GUARD);
    p.high = malloc(p.nhigh + GUARD);
    cr_assert(p.base && p.high);
    return p;
}

static void packed_free(packed *p)
{
    free(p->base);
    free(p->high);
}

/* Run kern->rs_pack_row on exactly k codes (a copy of exactly k bytes, so that a sanitizer build
 * sees any read past them) into buffers whose guard bytes must stay untouched. */
static bool run_pack(const nf_layout_kernels *kern, const nf_rs_params *p, const int8_t *codes, uint64_t k,
                     uint64_t lanes, int lo, int hi, packed *out, const char *what)
{
    int8_t *exact = malloc((size_t)k);
    cr_assert(exact);
    memcpy(exact, codes, (size_t)k);
    memset(out->base, 0xA5, out->nbase + GUARD);
    memset(out->high, 0xA5, out->nhigh + GUARD);
    bool ok = kern->rs_pack_row(p, exact, (size_t)k, (size_t)lanes, lo, hi, out->base, out->high);
    free(exact);
    for (size_t i = 0; i < GUARD; i++)
        if (out->base[out->nbase + i] != 0xA5 || out->high[out->nhigh + i] != 0xA5)
            cr_assert_fail("%s: %s wrote past the row's bytes (guard byte %zu)", what, kern->name, i);
    return ok;
}

static void same_bytes(const uint8_t *got, const uint8_t *want, size_t n, const char *plane, const char *what,
                       const char *kname)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i])
            cr_assert_fail("%s: %s %s byte %zu is 0x%02x, expected 0x%02x", what, kname, plane, i, got[i], want[i]);
    compared += n;
}

/* Pack one row with the active kernels and with the scalar kernels; both must accept it and
 * give the reference's bytes. */
static void pack_matches(const nf_format *f, const int8_t *codes, uint64_t k, uint64_t lanes, int lo, int hi,
                         const char *what)
{
    const nf_layout_kernels *kern = nf_layout_kernels_active();
    nf_rs_params p;
    cr_assert(nf_rs_params_for(f, &p));
    packed want = packed_alloc(f, lanes), got = packed_alloc(f, lanes), ref = packed_alloc(f, lanes);
    ref_pack_row(f, codes, k, lanes, want.base, want.high);
    if (!run_pack(kern, &p, codes, k, lanes, lo, hi, &got, what))
        cr_assert_fail("%s: %s refused codes inside [%d,%d]", what, kern->name, lo, hi);
    if (!run_pack(&nf_layout_kernels_scalar, &p, codes, k, lanes, lo, hi, &ref, what))
        cr_assert_fail("%s: the scalar packer refused codes inside [%d,%d]", what, lo, hi);
    same_bytes(got.base, want.base, want.nbase, "base", what, kern->name);
    same_bytes(got.high, want.high, want.nhigh, "high", what, kern->name);
    same_bytes(got.base, ref.base, ref.nbase, "base (vs the scalar packer)", what, kern->name);
    same_bytes(got.high, ref.high, ref.nhigh, "high (vs the scalar packer)", what, kern->name);
    packed_free(&want);
    packed_free(&got);
    packed_free(&ref);
}

static uint64_t align128(uint64_t k) { return (k + 127) / 128 * 128; }

/* Random codes over the whole stored range (illegal-but-storable ones included, as an unchecked
 * encode takes them) and over the legal range, for every column count, with the row's own
 * padding and with an extra block of padding lanes. */
static void check_pack_random(void)
{
    rng r = {0x9ACC0001};
    for (size_t fi = 0; fi < NGROUPED; fi++) {
        const nf_format *f = F(GROUPED[fi]);
        int slo, shi;
        stored_range(f, &slo, &shi);
        for (size_t ci = 0; ci < NCOLS; ci++) {
            uint64_t k = COLS[ci];
            int8_t *codes = malloc((size_t)k);
            for (int trial = 0; trial < 4; trial++) {
                bool legal = trial % 2 == 1;
                int lo = legal ? f->code_min : slo, hi = legal ? f->code_max : shi;
                for (uint64_t c = 0; c < k; c++) codes[c] = (int8_t)(lo + (int)rng_range(&r, 0, (uint64_t)(hi - lo)));
                char what[96];
                snprintf(what, sizeof what, "%s K=%" PRIu64 " %s codes", f->name, k, legal ? "legal" : "storable");
                pack_matches(f, codes, k, align128(k), lo, hi, what);
                if (trial == 3) pack_matches(f, codes, k, align128(k) + 128, lo, hi, what);
            }
            free(codes);
        }
    }
}

/* Every storable code in every lane position of two blocks and a partial third (K = 300): row
 * s holds code lo + (c + s) mod span in column c, so over the rows each column sees each code. */
static void check_pack_every_code_every_lane(void)
{
    for (size_t fi = 0; fi < NGROUPED; fi++) {
        const nf_format *f = F(GROUPED[fi]);
        int lo, hi;
        stored_range(f, &lo, &hi);
        uint64_t k = 300, span = (uint64_t)(hi - lo + 1);
        int8_t codes[300];
        for (uint64_t s = 0; s < span; s++) {
            for (uint64_t c = 0; c < k; c++) codes[c] = (int8_t)(lo + (int)((c + s) % span));
            char what[96];
            snprintf(what, sizeof what, "%s K=300 shift %" PRIu64, f->name, s);
            pack_matches(f, codes, k, align128(k), lo, hi, what);
        }
        /* and each code alone in a row of zeros, at every lane of one block */
        for (int q = lo; q <= hi; q++)
            for (uint64_t l = 0; l < 128; l++) {
                int8_t one[128] = {0};
                one[l] = (int8_t)q;
                char what[96];
                snprintf(what, sizeof what, "%s code %d alone in lane %" PRIu64, f->name, q, l);
                pack_matches(f, one, 128, 128, lo, hi, what);
            }
    }
}

/* Only padding: K = 1 with code 0 is the all-padding row (Q2: bytes 0x55), in the row's block
 * and in extra blocks. */
static void check_pack_padding(void)
{
    const nf_layout_kernels *kern = nf_layout_kernels_active();
    for (size_t fi = 0; fi < NGROUPED; fi++) {
        const nf_format *f = F(GROUPED[fi]);
        nf_rs_params p;
        cr_assert(nf_rs_params_for(f, &p));
        int lo, hi;
        stored_range(f, &lo, &hi);
        int8_t zero = 0;
        packed got = packed_alloc(f, 512);
        cr_assert(run_pack(kern, &p, &zero, 1, 512, lo, hi, &got, f->name));
        uint8_t fill = f->code_bias ? 0x55 : 0x00; /* docs/layouts.md 4.5 */
        for (size_t i = 0; i < got.nbase; i++)
            if (got.base[i] != fill) cr_assert_fail("%s: padding base byte %zu is 0x%02x", f->name, i, got.base[i]);
        for (size_t i = 0; i < got.nhigh; i++)
            if (got.high[i] != 0) cr_assert_fail("%s: padding high byte %zu is 0x%02x", f->name, i, got.high[i]);
        compared += got.nbase + got.nhigh;
        packed_free(&got);
        char what[64];
        snprintf(what, sizeof what, "%s padding", f->name);
        pack_matches(f, &zero, 1, 512, lo, hi, what);
    }
}

/* A code outside [lo, hi] in any lane is refused, whatever the other lanes hold; the bounds are
 * the stored range and the (narrower, for Q8 and T2) legal range. */
static void check_pack_refusals(void)
{
    rng r = {0x9ACC0002};
    const nf_layout_kernels *kern = nf_layout_kernels_active();
    uint64_t refused = 0;
    for (size_t fi = 0; fi < NGROUPED; fi++) {
        const nf_format *f = F(GROUPED[fi]);
        nf_rs_params p;
        cr_assert(nf_rs_params_for(f, &p));
        int slo, shi;
        stored_range(f, &slo, &shi);
        static const uint64_t ks[] = {1, 65, 128, 300, 513};
        for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
            uint64_t k = ks[ki];
            int8_t *codes = malloc((size_t)k);
            packed out = packed_alloc(f, align128(k));
            for (int legal = 0; legal < 2; legal++) {
                int lo = legal ? f->code_min : slo, hi = legal ? f->code_max : shi;
                int bad[4], nbad = 0;
                if (lo > INT8_MIN) bad[nbad++] = lo - 1, bad[nbad++] = INT8_MIN;
                if (hi < INT8_MAX) bad[nbad++] = hi + 1, bad[nbad++] = INT8_MAX;
                for (uint64_t l = 0; l < k; l++)
                    for (int b = 0; b < nbad; b++) {
                        for (uint64_t c = 0; c < k; c++)
                            codes[c] = (int8_t)(lo + (int)rng_range(&r, 0, (uint64_t)(hi - lo)));
                        codes[l] = (int8_t)bad[b];
                        if (run_pack(kern, &p, codes, k, align128(k), lo, hi, &out, f->name))
                            cr_assert_fail("%s K=%" PRIu64 ": %s accepted code %d in lane %" PRIu64 " (bounds [%d,%d])",
                                           f->name, k, kern->name, bad[b], l, lo, hi);
                        refused++;
                    }
            }
            packed_free(&out);
            free(codes);
        }
    }
    compared += refused;
}

/* Every row length 1..520 (every tail modulo the kernels' 32-, 64- and 128-lane blocks), with the
 * row's own padding and, for every third length, a block of padding lanes more: random codes
 * inside the bounds against the reference and the scalar packer; then one code outside them in the
 * first lane, the last lane and a random one, which the variant must refuse as the scalar packer
 * does. */
static void check_pack_every_length(void)
{
    rng r = {0x9ACC0007};
    const nf_layout_kernels *kern = nf_layout_kernels_active();
    int8_t codes[520];
    for (size_t fi = 0; fi < NGROUPED; fi++) {
        const nf_format *f = F(GROUPED[fi]);
        nf_rs_params p;
        cr_assert(nf_rs_params_for(f, &p));
        int slo, shi;
        stored_range(f, &slo, &shi);
        for (uint64_t k = 1; k <= 520; k++) {
            /* the stored range at even lengths, the (narrower, for Q8 and T2) legal one at odd */
            int lo = k % 2 ? f->code_min : slo, hi = k % 2 ? f->code_max : shi;
            const int bad[] = {lo - 1, hi + 1, INT8_MIN, INT8_MAX};
            uint64_t lanes = align128(k) + (k % 3 == 0 ? 128 : 0);
            for (uint64_t c = 0; c < k; c++) codes[c] = (int8_t)(lo + (int)rng_range(&r, 0, (uint64_t)(hi - lo)));
            char what[96];
            snprintf(what, sizeof what, "%s K=%" PRIu64 " lanes %" PRIu64, f->name, k, lanes);
            pack_matches(f, codes, k, lanes, lo, hi, what);
            packed out = packed_alloc(f, lanes);
            for (int at = 0; at < 3; at++) {
                uint64_t l = at == 0 ? 0 : at == 1 ? k - 1 : rng_range(&r, 0, k - 1);
                int8_t keep = codes[l];
                for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
                    if (bad[b] < INT8_MIN || bad[b] > INT8_MAX || (bad[b] >= lo && bad[b] <= hi)) continue;
                    codes[l] = (int8_t)bad[b];
                    bool got = run_pack(kern, &p, codes, k, lanes, lo, hi, &out, what);
                    bool want = run_pack(&nf_layout_kernels_scalar, &p, codes, k, lanes, lo, hi, &out, what);
                    if (got || want)
                        cr_assert_fail("%s: code %d in lane %" PRIu64 " (bounds [%d,%d]): %s says %d, scalar %d", what,
                                       bad[b], l, lo, hi, kern->name, got, want);
                    compared++;
                }
                codes[l] = keep;
            }
            packed_free(&out);
        }
    }
}

/* ------------------------------------------------------------------ the word scans */
/* Every scale word of every grouped format, alone and at every position of a vector's worth:
 * the kernels' reading of the rules (nf_grouped_rules_for) against format/validity.c. */
static void check_scales_every_word(void)
{
    const nf_layout_kernels *kern = nf_layout_kernels_active();
    for (size_t fi = 0; fi < NGROUPED; fi++) {
        const nf_format *f = F(GROUPED[fi]);
        nf_grouped_rules rules;
        nf_grouped_rules_for(f, &rules);
        uint16_t block[67];
        for (uint32_t s = 0; s < 65536; s++) {
            uint16_t h = (uint16_t)s;
            unsigned want = (nf_grouped_scale_valid(f, h) ? 0 : NF_SCALES_INVALID) |
                            (nf_grouped_scale_valid(f, h) && nf_grouped_scale_requires_zero_codes(f, h)
                                 ? NF_SCALES_ZERO_RULE
                                 : 0);
            unsigned got = kern->grouped_scales(&rules, &h, 1);
            if (got != want)
                cr_assert_fail("%s: %s says 0x%x for scale 0x%04x, validity.c 0x%x", f->name, kern->name, got, h, want);
            /* among ordinary scales, at a position that walks through the vector lanes and tails */
            size_t n = 1 + s % 67, at = (s / 67) % n;
            for (size_t i = 0; i < n; i++) block[i] = 0x3C00;
            block[at] = h;
            got = kern->grouped_scales(&rules, block, n);
            if (got != want)
                cr_assert_fail("%s: %s says 0x%x for scale 0x%04x at %zu of %zu, validity.c 0x%x", f->name, kern->name,
                               got, h, at, n, want);
        }
        compared += 65536;
    }
}

/* codes_within against the obvious loop for every length 0..300, every bound pair of the
 * grouped formats, with one out-of-range code at each position. */
static void check_codes_within(void)
{
    rng r = {0x9ACC0003};
    const nf_layout_kernels *kern = nf_layout_kernels_active();
    int8_t *buf = malloc(301);
    for (size_t fi = 0; fi < NGROUPED; fi++) {
        const nf_format *f = F(GROUPED[fi]);
        int lo = f->code_min, hi = f->code_max;
        for (size_t n = 0; n <= 300; n++) {
            for (size_t i = 0; i < n; i++) buf[i] = (int8_t)(lo + (int)rng_range(&r, 0, (uint64_t)(hi - lo)));
            int8_t *exact = malloc(n ? n : 1);
            memcpy(exact, buf, n);
            if (!kern->codes_within(exact, n, lo, hi))
                cr_assert_fail("%s: %s refused %zu codes inside [%d,%d]", f->name, kern->name, n, lo, hi);
            for (size_t at = 0; at < n; at++) {
                int8_t keep = exact[at];
                exact[at] = (int8_t)(at % 2 && lo > INT8_MIN ? lo - 1 : hi < INT8_MAX ? hi + 1 : lo - 1);
                if (kern->codes_within(exact, n, lo, hi))
                    cr_assert_fail("%s: %s accepted code %d at %zu of %zu (bounds [%d,%d])", f->name, kern->name,
                                   exact[at], at, n, lo, hi);
                exact[at] = keep;
            }
            free(exact);
            compared += n + 1;
        }
    }
    free(buf);
}

/* ------------------------------------------------------------------ the public paths */
typedef struct counted_sink {
    cover_sink cover;
    uint64_t writes;
} counted_sink;

static nf_status counted_write(void *ctx, uint64_t offset, const void *buf, size_t len, nf_error *err)
{
    counted_sink *c = ctx;
    c->writes++;
    return cover_write(&c->cover, offset, buf, len, err);
}

/* Random legal words of [n, k] (test_layout_util.h: special scales, zero codes under +0). */
static nf_words legal_words(rng *r, const nf_geometry *g)
{
    nf_words w;
    nf_error err = {0};
    cr_assert_eq(nf_words_alloc(&w, g, g->rows, &err), NF_OK, "%s", err.message);
    random_words(r, g, &w);
    return w;
}

/* Encode w (all rows) in random row ranges, checked or not, and compare with the reference
 * object; then decode it back. */
static void encode_matches(rng *r, const nf_geometry *g, const nf_words *w, bool unchecked, const char *what)
{
    counted_sink s = {0};
    cover_init(&s.cover, g->bytes);
    nf_error err = {0};
    for (uint64_t r0 = 0; r0 < g->rows;) {
        uint64_t n = rng_range(r, 1, g->rows - r0);
        nf_words view = words_view(g, w, r0, n);
        if (nf_layout_encode_rows(g, &view, r0, unchecked, counted_write, &s, &err) != NF_OK)
            cr_assert_fail("%s: rows [%" PRIu64 ",+%" PRIu64 "): %s", what, r0, n, err.message);
        r0 += n;
    }
    cr_assert_eq(nf_layout_encode_tail(g, w, unchecked, counted_write, &s, &err), NF_OK, "%s", err.message);
    cr_assert_eq(cover_first_bad(&s.cover), UINT64_MAX, "%s: a byte not written exactly once", what);
    uint8_t *want = ref_object(g, w);
    same_bytes(s.cover.bytes, want, (size_t)g->bytes, "object", what, nf_layout_kernels_active()->name);
    nf_memory_source mem;
    nf_byte_reader rd;
    nf_byte_reader_memory(&rd, &mem, s.cover.bytes, g->bytes);
    nf_words back;
    cr_assert_eq(nf_words_alloc(&back, g, g->rows, &err), NF_OK);
    cr_assert_eq(nf_layout_decode_rows(g, &rd, 0, g->rows, &back, &err), NF_OK, "%s: %s", what, err.message);
    cr_assert(words_equal(g, &back, w, g->rows, false), "%s: decode(encode(words)) differs from the words", what);
    nf_words_free(&back);
    free(want);
    cover_free(&s.cover);
}

static void check_encode_objects(void)
{
    rng r = {0x9ACC0004};
    for (size_t fi = 0; fi < NGROUPED; fi++) {
        const nf_format *f = F(GROUPED[fi]);
        int slo, shi;
        stored_range(f, &slo, &shi);
        for (size_t ci = 0; ci < NCOLS; ci++) {
            nf_geometry g = geo2(f->name, rng_range(&r, 1, 6), COLS[ci], 1);
            nf_words w = legal_words(&r, &g);
            char what[96];
            snprintf(what, sizeof what, "%s [%" PRIu64 ",%" PRIu64 "] checked", f->name, g.rows, g.cols);
            encode_matches(&r, &g, &w, false, what);
            /* unchecked: any storable code, Q8 -128 and T2 -2 included */
            for (uint64_t i = 0; i < g.rows * g.cols; i++)
                w.codes[i] = (int8_t)(slo + (int)rng_range(&r, 0, (uint64_t)(shi - slo)));
            snprintf(what, sizeof what, "%s [%" PRIu64 ",%" PRIu64 "] unchecked", f->name, g.rows, g.cols);
            encode_matches(&r, &g, &w, true, what);
            nf_words_free(&w);
        }
    }
}

/* Encode w expecting a refusal with exactly `want`, and nothing written. */
static void expect_encode_refused(const nf_geometry *g, const nf_words *w, bool unchecked, const char *want,
                                  const char *what)
{
    counted_sink s = {0};
    cover_init(&s.cover, g->bytes);
    nf_error err = {0};
    nf_status st = nf_layout_encode_rows(g, w, 0, unchecked, counted_write, &s, &err);
    if (st != NF_ERR_INVALID)
        cr_assert_fail("%s: encode (%s) returned %d, expected a refusal '%s'", what,
                       unchecked ? "unchecked" : "checked", (int)st, want);
    if (strcmp(err.message, want) != 0)
        cr_assert_fail("%s: encode (%s) said '%s', expected '%s'", what, unchecked ? "unchecked" : "checked",
                       err.message, want);
    if (s.writes) cr_assert_fail("%s: a refused encode wrote %" PRIu64 " times", what, s.writes);
    cover_free(&s.cover);
    compared++;
}

static void expect_check_refused(const nf_geometry *g, const nf_words *w, const char *want, const char *what)
{
    nf_error err = {0};
    if (nf_words_check(g, w, 0, &err) != NF_ERR_INVALID)
        cr_assert_fail("%s: nf_words_check accepted the words, expected '%s'", what, want);
    if (strcmp(err.message, want) != 0)
        cr_assert_fail("%s: nf_words_check said '%s', expected '%s'", what, err.message, want);
    compared++;
}

/* One bad word at a time, anywhere (full groups, the partial last group, the first and last
 * column, the first and a later row): nf_words_check and the checked encode refuse it with the
 * same message, written out here as before; the unchecked encode refuses a code without a stored
 * word with its own message. */
static void check_refusal_messages(void)
{
    rng r = {0x9ACC0005};
    static const uint64_t ks[] = {1, 33, 64, 65, 200, 383, 1000};
    for (size_t fi = 0; fi < NGROUPED; fi++) {
        const nf_format *f = F(GROUPED[fi]);
        int slo, shi;
        stored_range(f, &slo, &shi);
        for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++)
            for (int trial = 0; trial < 24; trial++) {
                nf_geometry g = geo2(f->name, 4, ks[ki], 1);
                nf_words w = legal_words(&r, &g);
                uint64_t k = g.cols, lg = g.logical_groups;
                uint64_t row = trial < 6 ? 0 : rng_range(&r, 0, 3);
                uint64_t col = trial % 3 == 0 ? 0 : trial % 3 == 1 ? k - 1 : rng_range(&r, 0, k - 1);
                uint64_t gi = col / f->group_size;
                /* rows before the bad one stay clean; the bad one's group gets an ordinary scale */
                uint16_t ordinary = 0x3C00;
                char want[256], what[96];
                snprintf(what, sizeof what, "%s [4,%" PRIu64 "] row %" PRIu64 " col %" PRIu64, f->name, k, row, col);
                switch (trial % 4) {
                case 0: /* a code outside the legal range */
                case 1: {
                    int bad = trial % 4 == 0 ? (f->code_min > INT8_MIN ? f->code_min - 1 : f->code_max + 1)
                                             : (f->code_max < INT8_MAX ? INT8_MAX : INT8_MIN);
                    w.scales[row * lg + gi] = ordinary;
                    w.codes[row * k + col] = (int8_t)bad;
                    snprintf(want, sizeof want,
                             "row %" PRIu64 " col %" PRIu64 ": code %d is not a legal %s code [%d,%d]", row, col, bad,
                             f->name, f->code_min, f->code_max);
                    expect_check_refused(&g, &w, want, what);
                    expect_encode_refused(&g, &w, false, want, what);
                    if (bad < slo || bad > shi) {
                        snprintf(want, sizeof want,
                                 "row %" PRIu64 " col %" PRIu64 ": code %d does not fit the %u-bit stored word of %s",
                                 row, col, bad, f->code_bits, f->name);
                        expect_encode_refused(&g, &w, true, want, what);
                    }
                    break;
                }
                case 2: { /* a scale that is never valid: +inf, NaN */
                    uint16_t s = trial % 8 == 2 ? 0x7C00 : 0xFE01;
                    w.scales[row * lg + gi] = s;
                    snprintf(want, sizeof want,
                             "row %" PRIu64 " group %" PRIu64 ": scale 0x%04x (%s) is not a valid %s scale", row, gi, s,
                             s == 0x7C00 ? "infinite" : "NaN", f->name);
                    expect_check_refused(&g, &w, want, what);
                    expect_encode_refused(&g, &w, false, want, what);
                    break;
                }
                case 3: /* -0 where refused, or a nonzero code under the +0 scale */
                    if (!nf_grouped_scale_requires_zero_codes(f, 0x0000)) {
                        /* Q2: -0 and +0 are valid scales under any code; the words stay legal */
                        w.scales[row * lg + gi] = trial % 8 == 3 ? 0x8000 : 0x0000;
                        nf_error err = {0};
                        cr_assert_eq(nf_words_check(&g, &w, 0, &err), NF_OK, "%s: %s", what, err.message);
                        encode_matches(&r, &g, &w, false, what);
                        break;
                    }
                    if (trial % 8 == 3) {
                        w.scales[row * lg + gi] = 0x8000;
                        snprintf(want, sizeof want,
                                 "row %" PRIu64 " group %" PRIu64 ": scale 0x8000 (-0) is not a valid %s scale", row,
                                 gi, f->name);
                    } else {
                        uint64_t c0 = gi * f->group_size, c1 = c0 + f->group_size < k ? c0 + f->group_size : k;
                        w.scales[row * lg + gi] = 0x0000;
                        memset(w.codes + row * k + c0, 0, (size_t)(c1 - c0));
                        w.codes[row * k + col] = (int8_t)(col % 2 ? -1 : 1);
                        snprintf(want, sizeof want,
                                 "row %" PRIu64 " col %" PRIu64 ": code %d under the +0 scale of group %" PRIu64
                                 " (%s requires zero codes there)",
                                 row, col, col % 2 ? -1 : 1, gi, f->name);
                    }
                    expect_check_refused(&g, &w, want, what);
                    expect_encode_refused(&g, &w, false, want, what);
                    break;
                }
                nf_words_free(&w);
            }
    }
}

/* Words spanning several encode chunks: a bad word in a later chunk is still refused before the
 * first byte is written, and clean words give the same bytes as one row at a time. */
static void check_multi_chunk(void)
{
    rng r = {0x9ACC0006};
    const nf_format *f = F("q8_g32_fp16");
    /* a q8 row of 4096 columns owns 4352 bytes: a 1 MiB chunk holds 240 rows */
    nf_geometry g = geo2(f->name, 600, 4096, 1);
    nf_words w = legal_words(&r, &g);
    encode_matches(&r, &g, &w, false, "q8 [600,4096]");
    uint64_t k = g.cols, row = 555, col = 77;
    w.scales[row * g.logical_groups + col / 32] = 0x3C00;
    w.codes[row * k + col] = -128;
    expect_encode_refused(&g, &w, false, "row 555 col 77: code -128 is not a legal q8_g32_fp16 code [-127,127]",
                          "q8 [600,4096], bad row in the third chunk");
    expect_check_refused(&g, &w, "row 555 col 77: code -128 is not a legal q8_g32_fp16 code [-127,127]",
                         "q8 [600,4096], bad row in the third chunk");
    /* unchecked, -128 is a stored word like any other */
    encode_matches(&r, &g, &w, true, "q8 [600,4096] unchecked");
    nf_words_free(&w);
}

/* ------------------------------------------------------------------ suites per variant */
#define VARIANT_TEST(suite, level, check)                                                                          \
    Test(suite, check, .fini = restore)                                                                            \
    {                                                                                                              \
        require(level);                                                                                            \
        compared = 0;                                                                                              \
        check_##check();                                                                                           \
        cr_log_info("%s %s: %" PRIu64 " bytes and verdicts identical to the reference", nf_simd_level_name(level), \
                    #check, compared);                                                                             \
        cr_assert(compared > 0);                                                                                   \
    }

#define VARIANT_SUITE(suite, level)                        \
    VARIANT_TEST(suite, level, pack_random)                \
    VARIANT_TEST(suite, level, pack_every_code_every_lane) \
    VARIANT_TEST(suite, level, pack_padding)               \
    VARIANT_TEST(suite, level, pack_refusals)              \
    VARIANT_TEST(suite, level, pack_every_length)          \
    VARIANT_TEST(suite, level, scales_every_word)          \
    VARIANT_TEST(suite, level, codes_within)               \
    VARIANT_TEST(suite, level, encode_objects)             \
    VARIANT_TEST(suite, level, refusal_messages)           \
    VARIANT_TEST(suite, level, multi_chunk)

VARIANT_SUITE(pack_scalar, NF_SIMD_SCALAR)
VARIANT_SUITE(pack_avx2, NF_SIMD_AVX2)
VARIANT_SUITE(pack_avx512, NF_SIMD_AVX512)
VARIANT_SUITE(pack_neon, NF_SIMD_NEON)

/* The variant really is the one asked for: the kernels table named after it is in use.  A level
 * the CPU lacks is reported as a skipped test (never a warning: the verdict must not depend on
 * the CPU). */
static void check_active_table(nf_simd_level level)
{
    if (!nf_simd_supported(level)) cr_skip_test("the CPU lacks %s: not checked", nf_simd_level_name(level));
    nf_simd_force(level);
    const nf_layout_kernels *k = nf_layout_kernels_active();
    cr_assert_str_eq(k->name, nf_simd_level_name(level));
    cr_assert(k->rs_pack_row && k->codes_within && k->grouped_scales, "%s lacks an encode kernel", k->name);
}

Test(pack_dispatch, active_table_scalar, .fini = restore) { check_active_table(NF_SIMD_SCALAR); }
Test(pack_dispatch, active_table_avx2, .fini = restore) { check_active_table(NF_SIMD_AVX2); }
Test(pack_dispatch, active_table_avx512, .fini = restore) { check_active_table(NF_SIMD_AVX512); }
Test(pack_dispatch, active_table_neon, .fini = restore) { check_active_table(NF_SIMD_NEON); }
