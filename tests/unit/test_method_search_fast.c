/* The fast paths of grouped_search (lib/src/method/simd/search_*.c) against the in-tree scalar
 * reference nf_grouped_search_rows_reference, bit for bit.
 *
 * Every check runs once per level (scalar = the portable fast path, avx2, avx512): the level is
 * forced with nf_simd_force, the same chunk is encoded by nf_grouped_search_rows and by the
 * reference, and the status, every code and every scale word (or, on failure, the exact error
 * message) must be identical.  A level the CPU lacks is skipped with a message naming it.
 *
 * The groups are random and of many kinds (normal values, outliers, exact ties, zero groups,
 * subnormals, values near the largest scale binary16 allows, wide dynamic range, single
 * nonzero lanes, +-m extremes), for q4/q5/q6/q8, F32/F16/BF16 sources, widths K with partial
 * last groups, with and without importance (random, with zero entries, all zero, subnormal
 * and huge weights, small integers), with and without negative_scales. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "support/test_rng.h"

#include "common/cpu.h"
#include "method/simd/search_simd.h"

/* ------------------------------------------------------------------ helpers */

TEST_RNG(0x243F6A8885A308D3ull)

static unsigned below(unsigned n) { return rng32() % n; }

static const nf_format_id grouped_ids[4] = {NF_FMT_Q4_G64_FP16, NF_FMT_Q5_G64_FP16, NF_FMT_Q6_G64_FP16,
                                            NF_FMT_Q8_G32_FP16};
static const nf_src_type float_types[3] = {NF_SRC_F32, NF_SRC_F16, NF_SRC_BF16};

static size_t esize_of(nf_src_type t) { return t == NF_SRC_F32 ? 4 : 2; }

static void put_value(uint8_t *data, nf_src_type t, size_t i, float v)
{
    if (t == NF_SRC_F32) {
        uint32_t u;
        memcpy(&u, &v, sizeof u);
        for (int j = 0; j < 4; j++) data[4 * i + (size_t)j] = (uint8_t)(u >> (8 * j));
        return;
    }
    uint16_t w = t == NF_SRC_F16 ? nf_f32_to_f16(v) : nf_f32_to_bf16(v);
    data[2 * i] = (uint8_t)w;
    data[2 * i + 1] = (uint8_t)(w >> 8);
}

/* The largest finite magnitude of a source type, and its smallest subnormal. */
static float type_max(nf_src_type t) { return t == NF_SRC_F16 ? 65504.0f : t == NF_SRC_BF16 ? 3.3895314e38f : FLT_MAX; }
static float type_min_sub(nf_src_type t)
{
    return t == NF_SRC_F16 ? 0x1p-24f : t == NF_SRC_BF16 ? 0x1p-133f : 0x1p-149f;
}

typedef struct encoded {
    nf_status st;
    int8_t *codes;
    uint16_t *scales;
    char msg[NF_ERROR_MESSAGE_MAX];
} encoded;

static void encode(bool reference, const nf_format *f, const nf_method_params *p, const nf_src_rows *src, uint8_t fill,
                   encoded *e)
{
    uint64_t groups = (src->cols + f->group_size - 1) / f->group_size;
    size_t ncodes = (size_t)(src->rows * src->cols), nscales = (size_t)(src->rows * groups);
    e->codes = malloc(ncodes + 1);
    e->scales = malloc(2 * nscales + 2);
    memset(e->codes, fill, ncodes + 1);
    memset(e->scales, fill, 2 * nscales + 2);
    nf_words w = {.rows = src->rows, .cols = src->cols, .codes = e->codes, .scales = e->scales};
    nf_error err = {0};
    e->st = reference ? nf_grouped_search_rows_reference(f, p, src, &w, &err)
                      : nf_grouped_search_rows(f, p, src, &w, &err);
    uint16_t guard;
    memset(&guard, fill, sizeof guard);
    cr_assert_eq((uint8_t)e->codes[ncodes], fill, "wrote past the codes");
    cr_assert_eq(e->scales[nscales], guard, "wrote past the scales");
    snprintf(e->msg, sizeof e->msg, "%s", e->st == NF_OK ? "" : err.message);
}

static uint64_t compared_groups, searched_groups, compared_errors;

/* Encodes with the forced level and with the reference; asserts identical results. */
static nf_status check_same(nf_simd_level level, nf_format_id id, const nf_method_params *p, const nf_src_rows *src,
                            const char *what)
{
    const nf_format *f = nf_format_by_id(id);
    cr_assert_eq(nf_simd_force(level), level, "could not force %s: %s", nf_simd_level_name(level), nf_simd_reason());
    encoded ref, got;
    encode(true, f, p, src, 0xA5, &ref);
    encode(false, f, p, src, 0x5B, &got);
    const char *lv = nf_simd_level_name(level);
    unsigned long k = (unsigned long)src->cols;
    const char *imp = p && p->importance ? "importance" : "no importance";
    bool neg = p && p->negative_scales;
    cr_assert_eq(got.st, ref.st, "%s %s %s %s K=%lu %s neg=%d: status %d (%s), reference %d (%s)", lv, what, f->name,
                 nf_src_type_name(src->type), k, imp, neg, got.st, got.msg, ref.st, ref.msg);
    if (ref.st != NF_OK) {
        cr_assert_str_eq(got.msg, ref.msg, "%s %s %s: message differs", lv, what, f->name);
        compared_errors++;
    } else {
        uint64_t groups = (src->cols + f->group_size - 1) / f->group_size;
        for (uint64_t r = 0; r < src->rows; r++)
            for (uint64_t gi = 0; gi < groups; gi++) {
                size_t si = (size_t)(r * groups + gi);
                cr_assert_eq(got.scales[si], ref.scales[si],
                             "%s %s %s %s K=%lu %s neg=%d: row %lu group %lu scale 0x%04x, reference 0x%04x", lv, what,
                             f->name, nf_src_type_name(src->type), k, imp, neg, (unsigned long)r, (unsigned long)gi,
                             got.scales[si], ref.scales[si]);
                size_t c0 = (size_t)(r * src->cols + gi * f->group_size);
                size_t n = (size_t)(src->cols - gi * f->group_size);
                if (n > f->group_size) n = f->group_size;
                bool zero = true;
                for (size_t i = 0; i < n; i++) {
                    cr_assert_eq(got.codes[c0 + i], ref.codes[c0 + i],
                                 "%s %s %s %s K=%lu %s neg=%d: row %lu group %lu col %zu code %d, reference %d", lv,
                                 what, f->name, nf_src_type_name(src->type), k, imp, neg, (unsigned long)r,
                                 (unsigned long)gi, gi * f->group_size + i, got.codes[c0 + i], ref.codes[c0 + i]);
                    zero = zero && ref.codes[c0 + i] == 0;
                }
                compared_groups++;
                if (ref.scales[si] != 0) searched_groups++;
                (void)zero;
            }
    }
    nf_status st = ref.st;
    free(ref.codes);
    free(ref.scales);
    free(got.codes);
    free(got.scales);
    return st;
}

static void require(nf_simd_level level)
{
    if (!nf_simd_supported(level))
        cr_skip_test("the CPU lacks the %s variant (best here: %s): its grouped_search kernel is NOT tested here",
                     nf_simd_level_name(level), nf_simd_level_name(nf_simd_best()));
}

/* ------------------------------------------------------------------ random groups */

enum {
    KIND_NORMAL,
    KIND_OUTLIERS,
    KIND_TIES,
    KIND_ZERO,
    KIND_SUBNORMAL,
    KIND_BIG,
    KIND_WIDE,
    KIND_SINGLE,
    KIND_PM_EXTREME,
    KIND_TINY_SCALE,
    KIND_MIDPOINT,
    KIND_COUNT
};

/* Largest amax whose absmax scale stays finite for format f, a little below. */
static double big_amax(const nf_format *f) { return 65504.0 * (double)f->encoder_qmax * 0.98; }

/* Fills n values of one group (cols c0.. of v) with a random kind. */
static void fill_group(float *v, size_t n, int kind, const nf_format *f, nf_src_type t)
{
    double scale = ldexp(1.0, (int)below(16) - 10);
    switch (kind) {
    case KIND_NORMAL:
        for (size_t i = 0; i < n; i++) v[i] = (float)(scale * (uniform() + uniform() + uniform()));
        break;
    case KIND_OUTLIERS:
        for (size_t i = 0; i < n; i++) v[i] = (float)(scale * (uniform() + uniform()));
        for (unsigned j = 0, c = 1 + below(3); j < c; j++)
            v[below((unsigned)n)] = (float)(scale * (8 + below(93)) * (rng32() & 1 ? 1 : -1));
        break;
    case KIND_TIES: {
        /* small integers times a step: many equal magnitudes, exact fits and tied errors */
        double step = rng32() & 1 ? scale : scale * (0.5 + (double)below(1000) / 1000.0);
        int span = 1 + (int)below(20);
        for (size_t i = 0; i < n; i++) v[i] = (float)(step * ((int)below((unsigned)(2 * span + 1)) - span));
        break;
    }
    case KIND_ZERO:
        for (size_t i = 0; i < n; i++) v[i] = rng32() & 1 ? 0.0f : -0.0f;
        break;
    case KIND_SUBNORMAL: {
        float m = type_min_sub(t);
        for (size_t i = 0; i < n; i++) v[i] = m * (float)((int)below(2001) - 1000) * (rng32() & 1 ? 1.0f : 1.0f / 64);
        break;
    }
    case KIND_BIG: {
        double a = big_amax(f);
        if (a > type_max(t)) a = type_max(t);
        for (size_t i = 0; i < n; i++) v[i] = (float)(a * uniform());
        v[below((unsigned)n)] = (float)(rng32() & 1 ? a : -a);
        break;
    }
    case KIND_WIDE:
        for (size_t i = 0; i < n; i++) v[i] = (float)ldexp(uniform(), (int)below(40) - 30);
        break;
    case KIND_SINGLE:
        for (size_t i = 0; i < n; i++) v[i] = 0.0f;
        v[below((unsigned)n)] = (float)(scale * uniform());
        break;
    case KIND_PM_EXTREME: {
        for (size_t i = 0; i < n; i++) v[i] = (float)(scale * uniform());
        float m = (float)(scale * 1.5);
        v[below((unsigned)n)] = m;
        v[below((unsigned)n)] = -m;
        break;
    }
    case KIND_TINY_SCALE: {
        /* amax around qmax * 2^-24 .. 2^-14: binary16-subnormal and underflowing scales */
        double a = (double)f->encoder_qmax * ldexp(1.0, -(int)below(14) - 12);
        for (size_t i = 0; i < n; i++) v[i] = (float)(a * uniform());
        break;
    }
    case KIND_MIDPOINT: {
        /* some lanes a = qmax * m, the rest 0, with m halfway between two binary16 values: the
         * least-squares scales then land exactly on a rounding boundary (F32 sources keep a
         * exactly), where the fast paths must fall back to the reference's order of summation */
        uint16_t w = (uint16_t)(0x2000u + below(0x4000u));
        double m = nf_f16_to_f32(w) + ldexp(1.0, ((w >> 10) & 31) - 26);
        double a = (double)f->encoder_qmax * m * (rng32() & 1 ? 1.0 : -1.0);
        for (size_t i = 0; i < n; i++) v[i] = below(3) ? (float)a : 0.0f;
        v[below((unsigned)n)] = (float)a;
        break;
    }
    default: break;
    }
}

enum { IMP_NONE, IMP_UNIFORM, IMP_ZEROS, IMP_ALL_ZERO, IMP_EXTREME, IMP_INTEGER, IMP_COUNT };

static void fill_importance(float *imp, size_t k, int kind)
{
    for (size_t i = 0; i < k; i++) {
        switch (kind) {
        case IMP_UNIFORM: imp[i] = 0.25f + (float)(rng32() >> 8) / 16777216.0f; break;
        case IMP_ZEROS: imp[i] = below(3) == 0 ? 0.0f : (float)(rng32() >> 8) / 16777216.0f * 4.0f; break;
        case IMP_ALL_ZERO: imp[i] = 0.0f; break;
        case IMP_EXTREME:
            imp[i] = below(4) == 0 ? 0.0f : (float)ldexp(1.0 + uniform() * 0.5, (int)below(250) - 149);
            break;
        case IMP_INTEGER: imp[i] = (float)below(4); break;
        default: imp[i] = 1.0f; break;
        }
    }
}

static const uint64_t widths[] = {64, 128, 32, 1, 7, 31, 33, 63, 65, 97, 127, 129, 200, 257};

/* One random chunk: rows x K of type t, every group of a random kind (or all of `only`), and
 * importance of kind ik; compared at `level`. */
static nf_status random_chunk(nf_simd_level level, nf_format_id id, nf_src_type t, uint64_t rows, uint64_t k, int ik,
                              bool neg, int only)
{
    const nf_format *f = nf_format_by_id(id);
    size_t n = (size_t)(rows * k);
    float *v = malloc(n * sizeof *v);
    size_t g = f->group_size;
    for (uint64_t r = 0; r < rows; r++)
        for (size_t c0 = 0; c0 < k; c0 += g) {
            size_t m = k - c0 < g ? (size_t)(k - c0) : g;
            fill_group(v + r * k + c0, m, only >= 0 ? only : (int)below(KIND_COUNT), f, t);
        }
    uint8_t *data = malloc(n * esize_of(t) + 1);
    for (size_t i = 0; i < n; i++) put_value(data, t, i, v[i]);
    float *imp = NULL;
    nf_method_params p = {.negative_scales = neg};
    if (ik != IMP_NONE) {
        imp = malloc((size_t)k * sizeof *imp);
        fill_importance(imp, (size_t)k, ik);
        p.importance = imp;
        p.importance_len = k;
    }
    nf_src_rows src = {.name = "blk.0.w", .type = t, .data = data, .first_row = 3, .rows = rows, .cols = k};
    nf_status st = check_same(level, id, &p, &src, "random");
    free(imp);
    free(data);
    free(v);
    return st;
}

static void random_battery(nf_simd_level level)
{
    require(level);
    compared_groups = searched_groups = compared_errors = 0;
    *nf_search_stats_local() = (nf_search_stats){0};
    for (int round = 0; round < 24; round++)
        for (int fi = 0; fi < 4; fi++)
            for (int ti = 0; ti < 3; ti++)
                for (int ik = 0; ik < IMP_COUNT; ik++) {
                    uint64_t k = widths[below(sizeof widths / sizeof widths[0])];
                    uint64_t rows = 1 + (3000 / k > 64 ? 64 : 3000 / k + 1) * (round == 0 ? 1 : 1);
                    random_chunk(level, grouped_ids[fi], float_types[ti], rows, k, ik, (round & 1) != 0, -1);
                }
    /* each kind alone, so that one refusal (a BIG group's candidates are fine, its baseline too)
     * never hides the rest of a chunk */
    for (int kind = 0; kind < KIND_COUNT; kind++)
        for (int fi = 0; fi < 4; fi++)
            for (int ti = 0; ti < 3; ti++)
                for (int ik = 0; ik < IMP_COUNT; ik += 1) {
                    uint64_t k = widths[below(sizeof widths / sizeof widths[0])];
                    random_chunk(level, grouped_ids[fi], float_types[ti], 8, k, ik, (kind & 1) != 0, kind);
                }
    cr_log_info("%s: %lu groups (%lu with a nonzero scale) identical to the reference, %lu refusals identical",
                nf_simd_level_name(level), (unsigned long)compared_groups, (unsigned long)searched_groups,
                (unsigned long)compared_errors);
    const nf_search_stats *st = nf_search_stats_local();
    cr_log_info(
        "%s: paths: %lu batches, %lu groups, %lu unscreened, first round exact %lu, second round same-codes %lu "
        "bounds %lu exact %lu",
        nf_simd_level_name(level), (unsigned long)st->batches, (unsigned long)st->groups, (unsigned long)st->unscreened,
        (unsigned long)st->first_exact, (unsigned long)st->second_same, (unsigned long)st->second_bounds,
        (unsigned long)st->second_exact);
    /* every path of the schedule was taken */
    cr_assert(st->unscreened > 0 && st->first_exact > 0 && st->second_same > 0 && st->second_bounds > 0 &&
              st->second_exact > 0);
    cr_assert(searched_groups > 10000);
}

Test(search_fast, scalar_random) { random_battery(NF_SIMD_SCALAR); }
Test(search_fast, avx2_random) { random_battery(NF_SIMD_AVX2); }
Test(search_fast, avx512_random) { random_battery(NF_SIMD_AVX512); }
Test(search_fast, neon_random) { random_battery(NF_SIMD_NEON); }

/* ------------------------------------------------------------------ edges */

/* The refusals (non-finite values, overflowing absmax scales) and their messages, and groups
 * at the type's largest finite values. */
static void edges(nf_simd_level level)
{
    require(level);
    compared_errors = 0;
    for (int fi = 0; fi < 4; fi++)
        for (int ti = 0; ti < 3; ti++) {
            nf_src_type t = float_types[ti];
            const nf_format *f = nf_format_by_id(grouped_ids[fi]);
            size_t k = 3 * f->group_size + 5;
            float v[3 * 64 + 5];
            for (int trial = 0; trial < 6; trial++) {
                for (size_t i = 0; i < k; i++) v[i] = (float)uniform();
                size_t at = below((unsigned)k);
                switch (trial) {
                case 0: v[at] = type_max(t); break;
                case 1: v[at] = -type_max(t); break;
                case 2: v[at] = INFINITY; break;
                case 3: v[at] = NAN; break;
                case 4: v[at] = (float)big_amax(f) > type_max(t) ? type_max(t) : (float)big_amax(f); break;
                case 5: v[at] = type_min_sub(t); break;
                }
                uint8_t data[(3 * 64 + 5) * 4];
                for (size_t i = 0; i < k; i++) put_value(data, t, i, v[i]);
                nf_src_rows src = {.name = "e", .type = t, .data = data, .rows = 1, .cols = k};
                for (int neg = 0; neg < 2; neg++) {
                    nf_method_params p = {.negative_scales = neg != 0};
                    check_same(level, grouped_ids[fi], &p, &src, "edge");
                }
            }
        }
    cr_log_info("%s: %lu refusals identical to the reference", nf_simd_level_name(level),
                (unsigned long)compared_errors);
    cr_assert(compared_errors > 0);
}

Test(search_fast, scalar_edges) { edges(NF_SIMD_SCALAR); }
Test(search_fast, avx2_edges) { edges(NF_SIMD_AVX2); }
Test(search_fast, avx512_edges) { edges(NF_SIMD_AVX512); }
Test(search_fast, neon_edges) { edges(NF_SIMD_NEON); }

/* Groups whose least-squares scale lands exactly on a rounding boundary of round_candidate
 * (binary64 -> binary32 -> binary16): {7, 3, 2, 1, x5} with x5 = 1 + 2^-5 + 2^-18 has baseline
 * scale 1.0, codes {7, 3, 2, 1, 1}, sum q^2 = 64 and fit = 1 + 2^-11 + 2^-24 exactly, a binary32
 * tie that rounds down to the binary16 tie 1 + 2^-11 (and then to 1.0), while anything above it
 * rounds to the next binary16 word.  The fast paths sum the fit in another order and must fall
 * back to the reference's sums there.  Scaled by powers of two, negated, shuffled, padded with
 * zeros, with and without (all-one) importance. */
static void boundary(nf_simd_level level)
{
    require(level);
    compared_groups = 0;
    const float base[5] = {7.0f, 3.0f, 2.0f, 1.0f, 1.0f + 0x1p-5f + 0x1p-18f};
    for (int trial = 0; trial < 400; trial++) {
        size_t k = 5 + below(60);
        float v[64] = {0};
        float sc = ldexpf(rng32() & 1 ? 1.0f : -1.0f, (int)below(20) - 10);
        size_t at[5];
        for (int i = 0; i < 5; i++) {
            size_t p;
            bool used;
            do {
                p = below((unsigned)k);
                used = false;
                for (int j = 0; j < i; j++) used = used || at[j] == p;
            } while (used);
            at[i] = p;
            v[p] = base[i] * sc;
        }
        uint8_t data[64 * 4];
        for (size_t i = 0; i < k; i++) put_value(data, NF_SRC_F32, i, v[i]);
        nf_src_rows src = {.name = "b", .type = NF_SRC_F32, .data = data, .rows = 1, .cols = k};
        float ones[64];
        for (size_t i = 0; i < 64; i++) ones[i] = 1.0f;
        nf_method_params p = {.negative_scales = (trial & 2) != 0};
        if (trial & 1) {
            p.importance = ones;
            p.importance_len = k;
        }
        check_same(level, NF_FMT_Q4_G64_FP16, &p, &src, "boundary");
    }
    cr_log_info("%s: %lu boundary groups identical to the reference", nf_simd_level_name(level),
                (unsigned long)compared_groups);
}

Test(search_fast, scalar_boundary) { boundary(NF_SIMD_SCALAR); }
Test(search_fast, avx2_boundary) { boundary(NF_SIMD_AVX2); }
Test(search_fast, avx512_boundary) { boundary(NF_SIMD_AVX512); }
Test(search_fast, neon_boundary) { boundary(NF_SIMD_NEON); }

/* ------------------------------------------------------------------ batches */

/* One F32 chunk of rows x k values v (and importance imp of k entries, or none) at every level
 * against the reference. */
static nf_status f32_chunk(nf_simd_level level, nf_format_id id, const float *v, uint64_t rows, uint64_t k,
                           const float *imp, bool neg, const char *what)
{
    size_t n = (size_t)(rows * k);
    uint8_t *data = malloc(4 * n + 1);
    for (size_t i = 0; i < n; i++) put_value(data, NF_SRC_F32, i, v[i]);
    nf_method_params p = {.negative_scales = neg, .importance = imp, .importance_len = imp ? k : 0};
    nf_src_rows src = {.name = "b", .type = NF_SRC_F32, .data = data, .first_row = 7, .rows = rows, .cols = k};
    nf_status st = check_same(level, id, &p, &src, what);
    free(data);
    return st;
}

/* Group kinds for the batch shapes: which queue a group goes to (search_simd.h) depends on the
 * sign of its extreme, on negative_scales and on the screening range. */
enum { SHAPE_ZERO, SHAPE_POSITIVE, SHAPE_NEGATIVE, SHAPE_UNSCREENED, SHAPE_COUNT };

static void fill_shape(float *v, size_t n, int kind)
{
    double scale = ldexp(1.0, (int)below(8) - 4);
    for (size_t i = 0; i < n; i++) v[i] = kind == SHAPE_ZERO ? 0.0f : (float)(scale * uniform());
    if (kind == SHAPE_ZERO) return;
    size_t at = below((unsigned)n);
    if (kind == SHAPE_UNSCREENED) {
        /* amax below 2^-30: the exact path throughout */
        for (size_t i = 0; i < n; i++) v[i] = (float)ldexp(v[i], -34);
        return;
    }
    v[at] = (float)(kind == SHAPE_POSITIVE ? 2.0 * scale : -2.0 * scale);
}

/* Batches of every fill: chunks whose groups of each kind number 0..40 in patterns that cross
 * rows, leave partial batches of every size behind, mix groups with amax = 0 among the others,
 * and end rows with partial groups; q4 (G = 64) and q8 (G = 32), with and without importance and
 * negative scales. */
static void batch_shapes(nf_simd_level level)
{
    require(level);
    compared_groups = 0;
    *nf_search_stats_local() = (nf_search_stats){0};
    static const uint64_t ks[] = {64, 192, 1088, 40, 97, 161};
    static const uint64_t rowss[] = {1, 2, 3, 5, 17};
    static const nf_format_id ids[2] = {NF_FMT_Q4_G64_FP16, NF_FMT_Q8_G32_FP16};
    for (int trial = 0; trial < 120; trial++) {
        uint64_t k = ks[trial % 6], rows = rowss[(trial / 6) % 5];
        nf_format_id id = ids[(trial / 30) % 2];
        size_t g = nf_format_by_id(id)->group_size;
        float *v = malloc((size_t)(rows * k) * sizeof *v);
        /* a pattern of kinds per trial: one kind only, two alternating, or all at random */
        int mode = trial % 4;
        size_t gi = 0;
        for (uint64_t r = 0; r < rows; r++)
            for (size_t c0 = 0; c0 < k; c0 += g, gi++) {
                int kind = mode == 0   ? SHAPE_POSITIVE
                           : mode == 1 ? (int)(gi % 2) + SHAPE_POSITIVE
                           : mode == 2 ? (int)(gi % 3)
                                       : (int)below(SHAPE_COUNT);
                fill_shape(v + r * k + c0, k - c0 < g ? (size_t)(k - c0) : g, kind);
            }
        float *imp = NULL;
        if (trial & 1) {
            imp = malloc((size_t)k * sizeof *imp);
            fill_importance(imp, (size_t)k, IMP_UNIFORM);
        }
        cr_assert_eq(f32_chunk(level, id, v, rows, k, imp, (trial & 2) != 0, "batch shape"), NF_OK);
        free(imp);
        free(v);
    }
    const nf_search_stats *st = nf_search_stats_local();
    cr_log_info("%s: %lu groups in batch shapes identical to the reference (%lu searched in %lu passes)",
                nf_simd_level_name(level), (unsigned long)compared_groups, (unsigned long)st->groups,
                (unsigned long)st->batches);
    /* the shapes did leave partial passes behind and did use the unscreened queue */
    cr_assert(st->groups > 1000 && st->unscreened > 100);
    cr_assert(st->batches * nf_search_kernels_active()->lanes > st->groups);
}

/* AVX2's unscaled screening form, which real groups never need (search_avx2.c), for every
 * candidate. */
Test(search_fast, avx2_unscaled_shapes)
{
    require(NF_SIMD_AVX2);
    nf_search_scaled_limit = 0.0f;
    batch_shapes(NF_SIMD_AVX2);
    nf_search_scaled_limit = 0x1p20f;
}

Test(search_fast, scalar_batch_shapes) { batch_shapes(NF_SIMD_SCALAR); }
Test(search_fast, avx2_batch_shapes) { batch_shapes(NF_SIMD_AVX2); }
Test(search_fast, avx512_batch_shapes) { batch_shapes(NF_SIMD_AVX512); }
Test(search_fast, neon_batch_shapes) { batch_shapes(NF_SIMD_NEON); }

/* The edges of the screening range (nf_search_screenable): amax 2^-30 exactly and just below it,
 * weights 2^30 exactly and just above it (in a full group and in a partial last group), beside
 * ordinary groups in the same rows, so that a batch holds groups of both kinds around it. */
static void screening_edges(nf_simd_level level)
{
    require(level);
    *nf_search_stats_local() = (nf_search_stats){0};
    const uint64_t k = 64 * 5 + 9;
    float v[2 * (64 * 5 + 9)], imp[64 * 5 + 9];
    for (int trial = 0; trial < 40; trial++) {
        for (size_t i = 0; i < 2 * k; i++) v[i] = (float)uniform();
        /* group 0 of each row: amax exactly 2^-30 (row 0) or just below it (row 1) */
        float edge[2] = {0x1p-30f, nextafterf(0x1p-30f, 0.0f)};
        for (int r = 0; r < 2; r++) {
            for (size_t i = 0; i < 64; i++) v[r * k + i] = edge[r] * (float)uniform();
            v[r * k + below(64)] = trial & 1 ? -edge[r] : edge[r];
        }
        for (size_t i = 0; i < k; i++) imp[i] = 0.5f + (float)(rng32() >> 8) / 16777216.0f;
        imp[64 + below(64)] = 0x1p30f;                        /* group 1: screened */
        imp[128 + below(64)] = nextafterf(0x1p30f, INFINITY); /* group 2: not */
        imp[320 + below(9)] = trial & 2 ? 0x1p30f : 0x1p31f;  /* the partial group */
        for (int withimp = 0; withimp < 2; withimp++)
            cr_assert_eq(
                f32_chunk(level, NF_FMT_Q4_G64_FP16, v, 2, k, withimp ? imp : NULL, (trial & 4) != 0, "screening edge"),
                NF_OK);
    }
    const nf_search_stats *st = nf_search_stats_local();
    /* per chunk outside the range: row 1's group 0; with importance also group 2 of both rows,
     * and the partial groups when their weight is 2^31 (half the trials) */
    cr_assert_eq(st->unscreened, 40 * 1 + 20 * 3 + 20 * 5, "%lu groups unscreened", (unsigned long)st->unscreened);
}

Test(search_fast, scalar_screening_edges) { screening_edges(NF_SIMD_SCALAR); }
Test(search_fast, avx2_screening_edges) { screening_edges(NF_SIMD_AVX2); }
Test(search_fast, avx512_screening_edges) { screening_edges(NF_SIMD_AVX512); }
Test(search_fast, neon_screening_edges) { screening_edges(NF_SIMD_NEON); }

/* The overflow check (amax / qmax < 65520): amax = 65520 qmax exactly is refused, the float below
 * it searched, in rows with other groups before and after, for every format and sign. */
static void overflow_edges(nf_simd_level level)
{
    require(level);
    compared_errors = 0;
    for (int fi = 0; fi < 4; fi++) {
        const nf_format *f = nf_format_by_id(grouped_ids[fi]);
        size_t g = f->group_size, k = 3 * g;
        float top = 65520.0f * (float)f->encoder_qmax; /* exact: at most 23 significant bits */
        for (int trial = 0; trial < 8; trial++) {
            float v[3 * 64];
            for (size_t i = 0; i < k; i++) v[i] = (float)uniform() * 1000.0f;
            float a = trial & 1 ? top : nextafterf(top, 0.0f);
            for (size_t i = g; i < 2 * g; i++) v[i] = a * (float)uniform();
            v[g + below((unsigned)g)] = trial & 2 ? -a : a;
            nf_status st = f32_chunk(level, grouped_ids[fi], v, 1, k, NULL, (trial & 4) != 0, "overflow edge");
            cr_assert_eq(st, trial & 1 ? NF_ERR_INVALID : NF_OK, "%s amax %.9g", f->name, (double)a);
        }
    }
    cr_assert_eq(compared_errors, 4 * 4);
}

Test(search_fast, scalar_overflow_edges) { overflow_edges(NF_SIMD_SCALAR); }
Test(search_fast, avx2_overflow_edges) { overflow_edges(NF_SIMD_AVX2); }
Test(search_fast, avx512_overflow_edges) { overflow_edges(NF_SIMD_AVX512); }
Test(search_fast, neon_overflow_edges) { overflow_edges(NF_SIMD_NEON); }

/* Exact ties between distinct words: x = m q for small integer codes q, m halfway between two
 * binary16 values s1 < s2 (12 significant bits, exact in binary32).  Both words give the codes q
 * and the same real error (m - s1)^2 sum w q^2 = (s2 - m)^2 sum w q^2, so only the reference's
 * binary64 rounding decides between them: neither the screening nor the same-codes difference
 * (which is exactly 0) can, and the exact comparison runs.  With max |q| = 7 the baseline is one
 * of the two words and a fit step the other (a first-round tie); with max |q| = 6 the baseline
 * is elsewhere, the least-squares refit of the codes q is m, rounded to one of the two words,
 * and its step the other (a second-round tie).  And half-integer products: values (k + 1/2) s
 * for the baseline scale s, where the binary32 product x * inv may land on the half-integer
 * (rounding to even) while the exact product lies beside it, so that codes rounded from the
 * exact product (AVX-512's screening) differ from the reference's, which the output must still
 * have (the groups are built so that s is chosen). */
static void ties(nf_simd_level level)
{
    require(level);
    *nf_search_stats_local() = (nf_search_stats){0};
    compared_groups = 0;
    for (int trial = 0; trial < 600; trial++) {
        size_t n = 8 + below(57);
        float v[64];
        uint16_t w = (uint16_t)(0x0800u + below(0x6800u)); /* normal words, s2 normal too */
        double s1 = nf_f16_to_f32(w), s2 = nf_f16_to_f32((uint16_t)(w + 1));
        float m = (float)((s1 + s2) / 2);
        int kind = trial % 3, top = kind == 0 ? 7 : 6;
        float imp[64];
        for (size_t i = 0; i < n; i++) imp[i] = (float)(1 + below(3));
        if (kind == 2) {
            /* +-6 s and +-7 s for the baseline scale s = s1 (amax = 7 s1), and one value s / 2:
             * its binary32 product lands on 1/2 (the reference's code 0) while the exact one
             * may lie above it (code 1); code 0 adds nothing to the least-squares sums, so the
             * refit is s, and a neighbouring scale gains less on s / 2 than it loses on the
             * others, so s is chosen */
            double sg = trial & 1 ? 1.0 : -1.0;
            for (size_t i = 0; i < n; i++) v[i] = (float)(s1 * (6 + below(2)) * (rng32() & 1 ? 1 : -1));
            size_t a = below((unsigned)n), b = (a + 1 + below((unsigned)n - 1)) % n;
            v[a] = (float)(7.0 * s1 * sg);
            v[b] = (float)(0.5 * s1 * (rng32() & 1 ? 1 : -1));
        } else {
            for (size_t i = 0; i < n; i++) v[i] = m * (float)((int)below((unsigned)(2 * top + 1)) - top);
            v[below((unsigned)n)] = m * (float)(trial & 1 ? top : -top);
        }
        cr_assert_eq(f32_chunk(level, NF_FMT_Q4_G64_FP16, v, 1, n, trial & 4 ? imp : NULL, (trial & 8) != 0, "ties"),
                     NF_OK);
    }
    const nf_search_stats *st = nf_search_stats_local();
    cr_log_info("%s: %lu tie groups identical to the reference (first round exact %lu, second round exact %lu)",
                nf_simd_level_name(level), (unsigned long)compared_groups, (unsigned long)st->first_exact,
                (unsigned long)st->second_exact);
    cr_assert(st->first_exact > 100 && st->second_exact > 50);
}

Test(search_fast, scalar_ties) { ties(NF_SIMD_SCALAR); }
Test(search_fast, avx2_ties) { ties(NF_SIMD_AVX2); }
Test(search_fast, avx512_ties) { ties(NF_SIMD_AVX512); }
Test(search_fast, neon_ties) { ties(NF_SIMD_NEON); }

/* ------------------------------------------------------------------ the reciprocal */

#include "method/simd/recip_avx512.h"

#if NF_X86_KERNELS
/* every binary16 word, 16 at a time, through the kernel's reciprocal */
static NF_AVX512_FN void recip_words(const uint16_t *w, float *v, float *inv)
{
    __m512 x = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)w));
    _mm512_storeu_ps(v, x);
    _mm512_storeu_ps(inv, nf_recip16_avx512(x));
}
#endif

/* recip_avx512.h: f32(1 / v) as the division rounds it, for every binary16 value but 0 and NaN
 * (the exhaustive domain: 63,486 finite nonzero values and +-infinity). */
Test(search_fast, avx512_reciprocal_exhaustive)
{
#if NF_X86_KERNELS
    require(NF_SIMD_AVX512);
    size_t checked = 0;
    for (uint32_t base = 0; base < 65536; base += 16) {
        uint16_t w[16];
        float v[16], inv[16];
        for (uint32_t i = 0; i < 16; i++) w[i] = (uint16_t)(base + i);
        recip_words(w, v, inv);
        for (int i = 0; i < 16; i++) {
            if (v[i] == 0.0f || isnan(v[i])) continue;
            float want = 1.0f / v[i];
            uint32_t a, b;
            memcpy(&a, &inv[i], 4);
            memcpy(&b, &want, 4);
            cr_assert_eq(a, b, "word 0x%04x (%a): 1/v is %a, the kernel gives %a", (unsigned)w[i], (double)v[i],
                         (double)want, (double)inv[i]);
            checked++;
        }
    }
    cr_assert_eq(checked, 63488u); /* 2 x (31 x 1024 finite nonzero + infinity) */
#else
    cr_skip_test("no x86 kernels in this build: the AVX-512 reciprocal is NOT tested here");
#endif
}
