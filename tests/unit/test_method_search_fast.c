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
static float type_min_sub(nf_src_type t) { return t == NF_SRC_F16 ? 0x1p-24f : t == NF_SRC_BF16 ? 0x1p-133f : 0x1p-149f; }

typedef struct encoded {
    nf_status st;
    int8_t *codes;
    uint16_t *scales;
    char msg[NF_ERROR_MESSAGE_MAX];
} encoded;

static void encode(bool reference, const nf_format *f, const nf_method_params *p, const nf_src_rows *src,
                   uint8_t fill, encoded *e)
{
    uint64_t groups = (src->cols + f->group_size - 1) / f->group_size;
    size_t ncodes = (size_t)(src->rows * src->cols), nscales = (size_t)(src->rows * groups);
    e->codes = malloc(ncodes + 1);
    e->scales = malloc(2 * nscales + 2);
    memset(e->codes, fill, ncodes + 1);
    memset(e->scales, fill, 2 * nscales + 2);
    nf_words w = {.rows = src->rows, .cols = src->cols, .codes = e->codes, .scales = e->scales};
    nf_error err = {0};
    e->st = reference ? nf_grouped_search_rows_reference(f, p, src, &w, &err) : nf_grouped_search_rows(f, p, src, &w, &err);
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

enum { KIND_NORMAL, KIND_OUTLIERS, KIND_TIES, KIND_ZERO, KIND_SUBNORMAL, KIND_BIG, KIND_WIDE, KIND_SINGLE,
       KIND_PM_EXTREME, KIND_TINY_SCALE, KIND_MIDPOINT, KIND_COUNT };

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
        for (unsigned j = 0, c = 1 + below(3); j < c; j++) v[below((unsigned)n)] = (float)(scale * (8 + below(93)) * (rng32() & 1 ? 1 : -1));
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
    cr_assert(searched_groups > 10000);
}

Test(search_fast, scalar_random) { random_battery(NF_SIMD_SCALAR); }
Test(search_fast, avx2_random) { random_battery(NF_SIMD_AVX2); }
Test(search_fast, avx512_random) { random_battery(NF_SIMD_AVX512); }

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
