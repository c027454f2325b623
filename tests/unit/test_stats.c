/* The conversion report's error statistics (lib/src/stats, docs/ninfer-convert.md "How the
 * statistics are summed"):
 *   - nf_xsum sums exactly: integer-valued doubles against a uint64 sum, carries across words,
 *     ties and sticky bits of the one final rounding, subnormals, overflow, any order of
 *     additions and merges;
 *   - the definition: one block computed here from the text (lanes c mod 16, the pairwise
 *     tree) against the library's reference; two blocks are two exact additions;
 *   - every SIMD variant the CPU has gives the scalar reference's statistics bit for bit
 *     (count, skipped, max, and the exact sums word for word), on rows of every length around
 *     the block and vector sizes, with NaN, infinities, subnormals and differences that
 *     overflow binary32, for row_f32 and for grouped words from F32, F16 and BF16 sources;
 *   - the grouped kernel agrees with row_f32 of explicitly decoded values. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "common/cpu.h"
#include "stats/stats.h"
#include "support/test_float.h"
#include "support/test_rng.h"

TEST_RNG(0x5DEECE66DA3B9F11ull)

static double f64_of_bits(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* ---------------------------------------------------------------- nf_xsum */
Test(xsum, integers_against_uint64)
{
    for (int rep = 0; rep < 50; rep++) {
        nf_xsum s;
        nf_xsum_init(&s);
        uint64_t exact = 0;
        int n = 1 + (int)(rng32() % 2000);
        for (int i = 0; i < n; i++) {
            uint64_t v = (uint64_t)rng32() << (rng32() % 21); /* sums stay below 2^64 */
            exact += v;
            nf_xsum_add(&s, (double)v);
        }
        cr_assert_eq(nf_xsum_value(&s), (double)exact, "rep %d", rep);
    }
}

Test(xsum, rounding_of_the_final_value)
{
    nf_xsum s;
    nf_xsum_init(&s);
    cr_assert_eq(nf_xsum_value(&s), 0.0);
    /* 2^53 + 1 is a tie between 2^53 and 2^53 + 2: even */
    nf_xsum_add(&s, 0x1p53);
    nf_xsum_add(&s, 1.0);
    cr_assert_eq(nf_xsum_value(&s), 0x1p53);
    /* one more 1: 2^53 + 2 exactly (a naive sum would stay at 2^53) */
    nf_xsum_add(&s, 1.0);
    cr_assert_eq(nf_xsum_value(&s), 0x1p53 + 2.0);
    /* 2^53 + 3 is a tie between +2 and +4: even is +4 */
    nf_xsum_add(&s, 1.0);
    cr_assert_eq(nf_xsum_value(&s), 0x1p53 + 4.0);
    /* a tie broken by a sticky bit far below: 2^53 + 1 + 2^-1074 rounds up */
    nf_xsum_init(&s);
    nf_xsum_add(&s, 0x1p53);
    nf_xsum_add(&s, 1.0);
    nf_xsum_add(&s, f64_of_bits(1));
    cr_assert_eq(nf_xsum_value(&s), 0x1p53 + 2.0);
    /* subnormals add exactly */
    nf_xsum_init(&s);
    for (int i = 0; i < 3; i++) nf_xsum_add(&s, f64_of_bits(1));
    cr_assert_eq(nf_xsum_value(&s), f64_of_bits(3));
    nf_xsum_add(&s, DBL_MIN);
    cr_assert_eq(nf_xsum_value(&s), DBL_MIN + f64_of_bits(3));
    /* tiny values below a huge one are kept until they matter: 2^60 copies of 2^-60... in 2^20
     * additions of 2^-20 each after 1.0: exactly 2.0 */
    nf_xsum_init(&s);
    nf_xsum_add(&s, 1.0);
    for (int i = 0; i < (1 << 20); i++) nf_xsum_add(&s, 0x1p-20);
    cr_assert_eq(nf_xsum_value(&s), 2.0);
    /* overflow to +inf, and +inf itself */
    nf_xsum_init(&s);
    nf_xsum_add(&s, DBL_MAX);
    cr_assert_eq(nf_xsum_value(&s), DBL_MAX);
    nf_xsum_add(&s, DBL_MAX);
    cr_assert(isinf(nf_xsum_value(&s)));
    nf_xsum_init(&s);
    nf_xsum_add(&s, 1.0);
    nf_xsum_add(&s, INFINITY);
    cr_assert(isinf(nf_xsum_value(&s)));
    /* -0 is +0 */
    nf_xsum_init(&s);
    nf_xsum_add(&s, -0.0);
    cr_assert(!signbit(nf_xsum_value(&s)) && nf_xsum_value(&s) == 0.0);
}

Test(xsum, carries_across_words)
{
    nf_xsum s;
    nf_xsum_init(&s);
    /* values straddling word boundaries: 2^k - ulp for k around multiples of 64 bits */
    double sum_check = 0.0;
    for (int k = -1000; k < 1000; k += 7) {
        double v = ldexp(1.0, k);
        nf_xsum_add(&s, v);
        nf_xsum_add(&s, v);
        (void)sum_check;
    }
    nf_xsum t;
    nf_xsum_init(&t);
    for (int k = -1000; k < 1000; k += 7) nf_xsum_add(&t, ldexp(1.0, k + 1));
    cr_assert_eq(memcmp(s.w, t.w, sizeof s.w), 0, "v + v == 2v in every word");
    /* 2^64 additions' worth of carries in one word: all ones plus one */
    nf_xsum_init(&s);
    for (int i = 0; i < 64; i++) nf_xsum_add(&s, ldexp(1.0, i - 1074)); /* word 0 = all ones */
    nf_xsum_add(&s, ldexp(1.0, -1074));
    cr_assert_eq(s.w[0], 0);
    cr_assert_eq(s.w[1], 1);
}

Test(xsum, order_and_merges_do_not_matter)
{
    enum { N = 3000 };
    static double v[N];
    for (int i = 0; i < N; i++) v[i] = ldexp((double)(rng32() | 1u), (int)(rng32() % 600) - 300);
    nf_xsum a;
    nf_xsum_init(&a);
    for (int i = 0; i < N; i++) nf_xsum_add(&a, v[i]);
    for (int rep = 0; rep < 20; rep++) {
        /* a random permutation, cut into random pieces merged in reverse */
        for (int i = N - 1; i > 0; i--) {
            int j = (int)(rng32() % (unsigned)(i + 1));
            double t = v[i];
            v[i] = v[j];
            v[j] = t;
        }
        nf_xsum parts[8];
        for (int p = 0; p < 8; p++) nf_xsum_init(&parts[p]);
        for (int i = 0; i < N; i++) nf_xsum_add(&parts[rng32() % 8], v[i]);
        nf_xsum b;
        nf_xsum_init(&b);
        for (int p = 7; p >= 0; p--) nf_xsum_merge(&b, &parts[p]);
        cr_assert_eq(memcmp(a.w, b.w, sizeof a.w), 0, "rep %d", rep);
        cr_assert_eq(nf_xsum_value(&a), nf_xsum_value(&b));
    }
}

/* ---------------------------------------------------------------- the definition */
/* One block, written from the text of docs/ninfer-convert.md: d = x - y in binary32, compared
 * when finite; lane l holds the columns l, l+16, l+32, ... of the block, cut into runs of 8;
 * a run sums d*d and x*x in binary32 (a product, then an addition), each run's sums are added
 * to the lane's sums in binary64; if a run's binary32 sum is not finite, every lane sums d*d and
 * x*x in binary64 instead; lanes added l + l+8, l + l+4, l + l+2, l + l+1. */
static void definition_block(const float *x, const float *y, size_t n, double *sse, double *ssx, float *max,
                             uint64_t *count)
{
    double a[16] = {0}, b[16] = {0};
    bool overflow = false;
    *max = 0.0f;
    *count = 0;
    for (int lane = 0; lane < 16; lane++)
        for (size_t start = (size_t)lane; start < n; start += 16 * 8) { /* one run */
            volatile float ra = 0.0f, rb = 0.0f;                        /* binary32 each step, whatever the compiler */
            for (size_t c = start; c < n && c < start + 16 * 8; c += 16) {
                float d = x[c] - y[c];
                if (isnan(d) || isinf(d)) continue;
                volatile float dd = d * d, xx = x[c] * x[c];
                ra = ra + dd;
                rb = rb + xx;
            }
            if (isinf(ra) || isinf(rb)) overflow = true;
            a[lane] = a[lane] + (double)ra;
            b[lane] = b[lane] + (double)rb;
        }
    for (size_t c = 0; c < n; c++) {
        float d = x[c] - y[c];
        if (isnan(d) || isinf(d)) continue;
        if (fabsf(d) > *max) *max = fabsf(d);
        (*count)++;
    }
    if (overflow) {
        for (int l = 0; l < 16; l++) a[l] = b[l] = 0.0;
        for (size_t c = 0; c < n; c++) {
            float d = x[c] - y[c];
            if (isnan(d) || isinf(d)) continue;
            a[c % 16] = a[c % 16] + (double)d * (double)d;
            b[c % 16] = b[c % 16] + (double)x[c] * (double)x[c];
        }
    }
    for (int h = 8; h >= 1; h /= 2)
        for (int l = 0; l < h; l++) {
            a[l] = a[l] + a[l + h];
            b[l] = b[l] + b[l + h];
        }
    *sse = a[0];
    *ssx = b[0];
}

static float random_value(void)
{
    switch (rng32() % 64) {
    case 0: return NAN;
    case 1: return INFINITY;
    case 2: return -INFINITY;
    case 3: return f32_of_bits(rng32() & 0x807FFFFFu); /* subnormal */
    case 4: return (rng32() & 1) ? FLT_MAX : -FLT_MAX; /* differences that overflow */
    default: return (float)uniform() * ldexp(1.0f, (int)(rng32() % 20) - 10);
    }
}

static void random_pairs(float *x, float *y, size_t n, bool specials)
{
    for (size_t i = 0; i < n; i++) {
        x[i] = specials ? random_value() : (float)uniform();
        y[i] = specials && rng32() % 8 == 0 ? random_value() : x[i] + (float)uniform() * 0.01f;
    }
}

Test(stats, the_reference_follows_the_definition)
{
    static float x[NF_STATS_BLOCK * 2], y[NF_STATS_BLOCK * 2];
    static const size_t lengths[] = {1, 15, 16, 17, 100, 4095, 4096};
    for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++)
        for (int specials = 0; specials < 2; specials++) {
            size_t n = lengths[li];
            random_pairs(x, y, n, specials);
            double sse, ssx;
            float max;
            uint64_t count;
            definition_block(x, y, n, &sse, &ssx, &max, &count);
            nf_errstats st;
            nf_errstats_init(&st);
            nf_stats_kernels_scalar.row_f32(x, y, n, &st);
            cr_assert_eq(st.count, count);
            cr_assert_eq(st.skipped, n - count);
            cr_assert_eq(bits_of_f32(st.max_abs), bits_of_f32(max), "n %zu", n);
            cr_assert_eq(nf_xsum_value(&st.sse), sse, "n %zu: sse %a vs %a", n, nf_xsum_value(&st.sse), sse);
            cr_assert_eq(nf_xsum_value(&st.ssx), ssx, "n %zu", n);
        }
    /* a run whose binary32 sum overflows (x = 2^70, x*x = 2^140): the block is summed in
     * binary64, where the square is exact, not reported infinite */
    for (size_t i = 0; i < 64; i++) x[i] = y[i] = 1.0f;
    x[16] = y[16] = 0x1p70f;
    {
        double sse, ssx;
        float max;
        uint64_t count;
        definition_block(x, y, 64, &sse, &ssx, &max, &count);
        cr_assert_eq(ssx, 0x1p140, "ssx %a", ssx); /* the 63 ones round away beside 2^140 */
        cr_assert_eq(sse, 0.0);
        nf_errstats st;
        nf_errstats_init(&st);
        nf_stats_kernels_scalar.row_f32(x, y, 64, &st);
        cr_assert_eq(nf_xsum_value(&st.ssx), 0x1p140, "ssx %a", nf_xsum_value(&st.ssx));
        cr_assert_eq(nf_xsum_value(&st.sse), 0.0);
    }
    /* two blocks: the exact sum of the two block sums, rounded once (= one binary64 addition) */
    size_t n = NF_STATS_BLOCK + 777;
    random_pairs(x, y, n, false);
    double s1, x1, s2, x2;
    float m1, m2;
    uint64_t c1, c2;
    definition_block(x, y, NF_STATS_BLOCK, &s1, &x1, &m1, &c1);
    definition_block(x + NF_STATS_BLOCK, y + NF_STATS_BLOCK, n - NF_STATS_BLOCK, &s2, &x2, &m2, &c2);
    nf_errstats st;
    nf_errstats_init(&st);
    nf_stats_kernels_scalar.row_f32(x, y, n, &st);
    cr_assert_eq(nf_xsum_value(&st.sse), s1 + s2);
    cr_assert_eq(nf_xsum_value(&st.ssx), x1 + x2);
    cr_assert_eq(st.count, c1 + c2);
}

/* ---------------------------------------------------------------- variants */
static const nf_stats_kernels *variant(nf_simd_level level)
{
    if (!nf_simd_supported(level)) return NULL;
#if NF_X86_KERNELS
    if (level == NF_SIMD_AVX2) return &nf_stats_kernels_avx2;
    if (level == NF_SIMD_AVX512) return &nf_stats_kernels_avx512;
#endif
#if NF_ARM_KERNELS
    if (level == NF_SIMD_NEON) return &nf_stats_kernels_neon;
#endif
    return level == NF_SIMD_SCALAR ? &nf_stats_kernels_scalar : NULL;
}

static void assert_same(const nf_errstats *a, const nf_errstats *b, const char *what)
{
    cr_assert_eq(a->count, b->count, "%s: count %llu vs %llu", what, (unsigned long long)a->count,
                 (unsigned long long)b->count);
    cr_assert_eq(a->skipped, b->skipped, "%s: skipped", what);
    cr_assert_eq(bits_of_f32(a->max_abs), bits_of_f32(b->max_abs), "%s: max %a vs %a", what, (double)a->max_abs,
                 (double)b->max_abs);
    cr_assert_eq(memcmp(a->sse.w, b->sse.w, sizeof a->sse.w), 0, "%s: sse %a vs %a", what, nf_xsum_value(&a->sse),
                 nf_xsum_value(&b->sse));
    cr_assert_eq(a->sse.inf, b->sse.inf, "%s: sse inf", what);
    cr_assert_eq(memcmp(a->ssx.w, b->ssx.w, sizeof a->ssx.w), 0, "%s: ssx", what);
}

static const size_t LENGTHS[] = {1,  2,   7,   8,   9,   15,   16,   17,   31,   32,   33,         63,          64,
                                 65, 127, 128, 129, 200, 1000, 4095, 4096, 4097, 8192, 8192 + 130, 3 * 4096 + 1};
#define NLENGTHS (sizeof LENGTHS / sizeof LENGTHS[0])
#define MAXLEN (3 * 4096 + 1)

Test(stats, row_f32_variants_match_the_reference)
{
    float *x = malloc(MAXLEN * sizeof *x + 64), *y = malloc(MAXLEN * sizeof *y + 64);
    cr_assert(x && y);
    size_t tested = 0;
    for (int lv = NF_SIMD_AVX2; lv < NF_SIMD_LEVEL_COUNT; lv++) {
        const nf_stats_kernels *k = variant((nf_simd_level)lv);
        if (!k) {
            cr_log_info("stats: the CPU lacks %s; that variant is not tested", nf_simd_level_name((nf_simd_level)lv));
            continue;
        }
        for (size_t li = 0; li < NLENGTHS; li++)
            for (int specials = 0; specials < 4; specials++)
                for (size_t off = 0; off < 2; off++) { /* aligned and misaligned arrays */
                    size_t n = LENGTHS[li];
                    float *xs = x + off, *ys = y + 2 * off;
                    random_pairs(xs, ys, n, specials == 1);
                    if (specials == 2 && n > 1) xs[n / 2] = NAN; /* one bad pair in an otherwise clean row */
                    /* a finite value whose square is beyond binary32: its block is summed in binary64 */
                    if (specials == 3) xs[n / 2] = ys[n / 2] = 0x1p70f;
                    nf_errstats a, b;
                    nf_errstats_init(&a);
                    nf_errstats_init(&b);
                    nf_stats_kernels_scalar.row_f32(xs, ys, n, &a);
                    k->row_f32(xs, ys, n, &b);
                    char what[96];
                    snprintf(what, sizeof what, "%s n %zu specials %d off %zu", k->name, n, specials, off);
                    assert_same(&a, &b, what);
                    tested++;
                }
    }
    cr_log_info("stats: %zu row_f32 comparisons", tested);
    free(x);
    free(y);
}

/* Random little-endian source words of a type: mostly ordinary values, some specials. */
static void random_source(uint8_t *p, nf_stats_source type, size_t n, bool specials)
{
    for (size_t i = 0; i < n; i++) {
        float v = specials ? random_value() : (float)uniform() * 0.1f;
        uint32_t w;
        size_t es;
        if (type == NF_STATS_F32) {
            w = bits_of_f32(v);
            es = 4;
        } else if (type == NF_STATS_F16) {
            w = isfinite(v) && fabsf(v) < 65504.0f ? f16_round(v) : (specials ? (uint32_t)(rng32() & 0xFFFF) : 0u);
            es = 2;
        } else {
            w = bits_of_f32(v) >> 16;
            es = 2;
        }
        for (size_t b = 0; b < es; b++) p[i * es + b] = (uint8_t)(w >> (8 * b));
    }
}

static void decode_source(const uint8_t *p, nf_stats_source type, size_t n, float *x)
{
    for (size_t i = 0; i < n; i++) {
        if (type == NF_STATS_F32) {
            uint32_t w = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 | (uint32_t)p[4 * i + 2] << 16 |
                         (uint32_t)p[4 * i + 3] << 24;
            x[i] = f32_of_bits(w);
        } else {
            uint16_t w = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
            x[i] = type == NF_STATS_F16 ? nf_f16_to_f32(w) : f32_of_bits((uint32_t)w << 16);
        }
    }
}

Test(stats, row_grouped_variants_match_the_reference_and_row_f32)
{
    uint8_t *src = malloc(MAXLEN * 4 + 64);
    int8_t *codes = malloc(MAXLEN + 64);
    uint16_t *scales = malloc((MAXLEN / 16 + 2) * sizeof *scales);
    float *x = malloc(MAXLEN * sizeof *x), *y = malloc(MAXLEN * sizeof *y);
    cr_assert(src && codes && scales && x && y);
    static const nf_stats_source types[] = {NF_STATS_F32, NF_STATS_F16, NF_STATS_BF16};
    static const unsigned groups[] = {32, 64, 128};
    static const uint16_t special_scales[] = {0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E01, 0x0001, 0x7BFF};
    size_t tested = 0;
    for (size_t ti = 0; ti < 3; ti++)
        for (size_t gi = 0; gi < 3; gi++)
            for (size_t li = 0; li < NLENGTHS; li++)
                for (int specials = 0; specials < 2; specials++) {
                    nf_stats_source type = types[ti];
                    unsigned group = groups[gi];
                    size_t n = LENGTHS[li], es = (type == NF_STATS_F32 ? 4u : 2u), ng = (n + group - 1) / group;
                    uint8_t *s = src + 1; /* misaligned on purpose */
                    random_source(s, type, n, specials);
                    for (size_t i = 0; i < n; i++) codes[i] = (int8_t)(rng32() % 256 - 128);
                    for (size_t g = 0; g < ng; g++)
                        scales[g] = specials && rng32() % 8 == 0 ? special_scales[rng32() % 7]
                                                                 : (uint16_t)(0x1C00 + rng32() % 0x1000);
                    /* the reference against row_f32 of the decoded values */
                    decode_source(s, type, n, x);
                    for (size_t i = 0; i < n; i++) y[i] = nf_grouped_value(scales[i / group], codes[i]);
                    nf_errstats ref, flat;
                    nf_errstats_init(&ref);
                    nf_errstats_init(&flat);
                    nf_stats_kernels_scalar.row_grouped(s, type, codes, scales, n, group, &ref);
                    nf_stats_kernels_scalar.row_f32(x, y, n, &flat);
                    char what[128];
                    snprintf(what, sizeof what, "scalar grouped/f32 %s G %u n %zu specials %d",
                             (type == NF_STATS_F32   ? "F32"
                              : type == NF_STATS_F16 ? "F16"
                                                     : "BF16"),
                             group, n, specials);
                    assert_same(&ref, &flat, what);
                    for (int lv = NF_SIMD_AVX2; lv < NF_SIMD_LEVEL_COUNT; lv++) {
                        const nf_stats_kernels *k = variant((nf_simd_level)lv);
                        if (!k) continue;
                        nf_errstats got;
                        nf_errstats_init(&got);
                        k->row_grouped(s, type, codes, scales, n, group, &got);
                        snprintf(what, sizeof what, "%s grouped %s G %u n %zu specials %d", k->name,
                                 (type == NF_STATS_F32   ? "F32"
                                  : type == NF_STATS_F16 ? "F16"
                                                         : "BF16"),
                                 group, n, specials);
                        assert_same(&ref, &got, what);
                        tested++;
                    }
                    (void)es;
                }
    cr_log_info("stats: %zu row_grouped comparisons", tested);
    free(src);
    free(codes);
    free(scales);
    free(x);
    free(y);
}

Test(stats, summary)
{
    nf_errstats st;
    nf_errstats_init(&st);
    nf_errstats_summary s = nf_errstats_summarize(&st);
    cr_assert_eq(s.count, 0);
    cr_assert(isnan(s.rmse) && isnan(s.snr_db));
    float x[4] = {1.0f, 2.0f, 3.0f, 4.0f}, y[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    nf_stats_kernels_scalar.row_f32(x, y, 4, &st);
    s = nf_errstats_summarize(&st);
    cr_assert_eq(s.count, 4);
    cr_assert_eq(s.rmse, 0.0);
    cr_assert(isnan(s.snr_db), "an exact object has no SNR");
    y[0] = 0.0f; /* error 1 in one of 4: sse 1, ssx 30 */
    nf_errstats_init(&st);
    nf_stats_kernels_scalar.row_f32(x, y, 4, &st);
    s = nf_errstats_summarize(&st);
    cr_assert_eq(s.sse, 1.0);
    cr_assert_eq(s.ssx, 30.0);
    cr_assert_eq(s.rmse, 0.5);
    cr_assert_eq(s.max_abs, 1.0);
    cr_assert_float_eq(s.snr_db, 10.0 * log10(30.0), 1e-12);
    y[1] = NAN;
    nf_errstats_init(&st);
    nf_stats_kernels_scalar.row_f32(x, y, 4, &st);
    cr_assert_eq(st.count, 3);
    cr_assert_eq(st.skipped, 1);
}
