/* The fp8_row_maxabs kernels (lib/src/method/simd/fp8_*.c: the portable fast kernel, AVX2+F16C,
 * AVX-512 F/BW/VL) against the reference loop of fp8_row_maxabs.c, bit for bit.
 *
 * Every check runs once per variant (suites fp8_scalar, fp8_avx2, fp8_avx512): the variant is
 * forced with nf_simd_force and the chunk is encoded through the public nf_fp8_row_maxabs_rows
 * (kernel, falling back to the reference on a refused row) and by
 * nf_fp8_row_maxabs_rows_reference; status, every code, every scale word and the error message
 * must be identical.  Each row is also given to the variant's kernel directly: it must accept
 * exactly the rows the reference accepts, with the same words.  A variant the CPU lacks is
 * skipped with a message naming it. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "support/test_float.h"
#include "support/test_rng.h"

#include "common/cpu.h"
#include "method/simd/fp8_simd.h"

TEST_RNG(0x243F6A8885A308D3ull)

static const nf_src_type types[3] = {NF_SRC_F32, NF_SRC_F16, NF_SRC_BF16};
static const nf_format_id fmts[2] = {NF_FMT_FP8_E4M3FN_ROW_BF16, NF_FMT_FP8_E4M3FN_ROW_FP16};

static size_t esize_of(nf_src_type t) { return t == NF_SRC_F32 ? 4 : 2; }

static void put_word(uint8_t *data, nf_src_type t, size_t i, uint32_t u)
{
    size_t es = esize_of(t);
    for (size_t j = 0; j < es; j++) data[es * i + j] = (uint8_t)(u >> (8 * j));
}

static void put_value(uint8_t *data, nf_src_type t, size_t i, float v)
{
    if (t == NF_SRC_F32) put_word(data, t, i, bits_of_f32(v));
    else put_word(data, t, i, t == NF_SRC_F16 ? nf_f32_to_f16(v) : nf_f32_to_bf16(v));
}

static unsigned long compared_rows, refused_rows;

static nf_fp8_row_fn level_kernel(nf_simd_level level) { return nf_fp8_kernels_for(level)->row; }

/* Encodes rows x cols elements at data (type t) into format fid with the variant and the
 * reference; everything must agree.  Returns the status. */
static nf_status check_buf(nf_simd_level level, nf_format_id fid, nf_src_type t, const uint8_t *data, uint64_t rows,
                           uint64_t cols, const char *what)
{
    const nf_format *f = nf_format_by_id(fid);
    cr_assert_not_null(f);
    cr_assert_eq(nf_simd_force(level), level);
    size_t n = (size_t)(rows * cols);
    uint8_t *c_ref = malloc(n + 1), *c_var = malloc(n + 1), *c_k = malloc(cols + 1);
    uint16_t *s_ref = malloc(2 * rows + 2), *s_var = malloc(2 * rows + 2);
    memset(c_ref, 0xA5, n + 1);
    memset(c_var, 0x5A, n + 1);
    memset(s_ref, 0xA5, 2 * rows + 2);
    memset(s_var, 0x5A, 2 * rows + 2);
    nf_src_rows src = {.name = "w", .type = t, .data = data, .first_row = 7, .rows = rows, .cols = cols};
    nf_words wr = {.rows = rows, .cols = cols, .codes8 = c_ref, .scales = s_ref};
    nf_words wv = {.rows = rows, .cols = cols, .codes8 = c_var, .scales = s_var};
    nf_error er = {0}, ev = {0};
    nf_status sr = nf_fp8_row_maxabs_rows_reference(f, &src, &wr, &er);
    nf_status sv = nf_fp8_row_maxabs_rows(f, &src, &wv, &ev);
    cr_assert_eq(sv, sr, "%s %s %s type %d: status %d vs reference %d (%s)", nf_simd_level_name(level), what, f->name,
                 (int)t, (int)sv, (int)sr, sr ? er.message : ev.message);
    cr_assert_eq(c_var[n], 0x5A, "%s wrote past the codes", what);
    cr_assert_eq(s_var[rows], 0x5A5A, "%s wrote past the scales", what);
    if (sr == NF_OK) {
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(c_var[i], c_ref[i], "%s %s %s type %d: code %zu (row %zu col %zu) 0x%02x vs 0x%02x",
                         nf_simd_level_name(level), what, f->name, (int)t, i, i / (size_t)cols, i % (size_t)cols,
                         c_var[i], c_ref[i]);
        for (size_t r = 0; r < rows; r++)
            cr_assert_eq(s_var[r], s_ref[r], "%s %s %s: scale %zu 0x%04x vs 0x%04x", nf_simd_level_name(level), what,
                         f->name, r, s_var[r], s_ref[r]);
    } else {
        cr_assert_str_eq(ev.message, er.message, "%s %s", nf_simd_level_name(level), what);
    }
    /* the kernel itself, row by row, against the reference row */
    nf_fp8_row_fn kernel = level_kernel(level);
    size_t es = esize_of(t);
    for (uint64_t r = 0; r < rows; r++) {
        nf_src_rows one = src;
        one.data = data + (size_t)r * (size_t)cols * es;
        one.rows = 1;
        uint16_t s1 = 0xA5A5, sk = 0x5A5A;
        nf_words w1 = {.rows = 1, .cols = cols, .codes8 = c_ref, .scales = &s1};
        nf_error e1 = {0};
        bool ok_ref = nf_fp8_row_maxabs_rows_reference(f, &one, &w1, &e1) == NF_OK;
        memset(c_k, 0x5A, cols + 1);
        bool ok_k = kernel(one.data, t, (size_t)cols, f->scale_type != NF_SCALE_BF16, c_k, &sk);
        cr_assert_eq(ok_k, ok_ref, "%s %s %s type %d row %zu: kernel %s, reference %s (%s)", nf_simd_level_name(level),
                     what, f->name, (int)t, (size_t)r, ok_k ? "accepts" : "declines", ok_ref ? "accepts" : "refuses",
                     e1.message);
        cr_assert_eq(c_k[cols], 0x5A, "kernel wrote past the row's codes");
        if (ok_ref) {
            cr_assert_eq(sk, s1);
            cr_assert_eq(memcmp(c_k, c_ref, (size_t)cols), 0, "%s %s row %zu: kernel codes differ",
                         nf_simd_level_name(level), what, (size_t)r);
            compared_rows++;
        } else {
            refused_rows++;
        }
    }
    free(c_ref);
    free(c_var);
    free(c_k);
    free(s_ref);
    free(s_var);
    return sr;
}

/* The same for every format. */
static void check_all_formats(nf_simd_level level, nf_src_type t, const uint8_t *data, uint64_t rows, uint64_t cols,
                              const char *what)
{
    for (int fi = 0; fi < 2; fi++) check_buf(level, fmts[fi], t, data, rows, cols, what);
}

static float random_value(double scale)
{
    uint32_t k = rng32() % 16;
    if (k == 0) return 0.0f;
    if (k == 1) return -0.0f;
    double v = (uniform() + uniform() + uniform()) * scale;
    if (k == 2) v *= 8.0;
    if (k == 3) v = ldexp(round(uniform() * 64.0) + 0.5, -6) * scale;
    return (float)v;
}

static const uint64_t odd_ks[] = {1,  2,  3,  7,  8,  9,  15,  16,  17,  31,  32,
                                  33, 47, 63, 64, 65, 95, 127, 128, 129, 200, 1000};
#define N_ODD_KS (sizeof odd_ks / sizeof odd_ks[0])

/* ------------------------------------------------------------------ the checks */

/* Random rows of every source type, odd K, misaligned buffers, scales from tiny to large. */
static void check_random(nf_simd_level level)
{
    static const double scales[] = {1.0, 1e-3, 300.0, 1e-6, 2e4, 1e-30};
    for (int ti = 0; ti < 3; ti++)
        for (size_t ki = 0; ki < N_ODD_KS; ki++) {
            uint64_t cols = odd_ks[ki], rows = 5;
            size_t es = esize_of(types[ti]);
            uint8_t *buf = malloc((size_t)(rows * cols) * es + 3);
            uint8_t *data = buf + (ki % 3); /* misaligned too */
            for (uint64_t r = 0; r < rows; r++) {
                double sc = scales[(r + ki) % 6];
                for (uint64_t c = 0; c < cols; c++)
                    put_value(data, types[ti], (size_t)(r * cols + c), random_value(sc));
            }
            check_all_formats(level, types[ti], data, rows, cols, "random");
            free(buf);
        }
}

/* Uniformly random words (every exponent, non-finite ones made rare so most rows pass). */
static void check_random_words(nf_simd_level level)
{
    for (int ti = 0; ti < 3; ti++)
        for (int rep = 0; rep < 40; rep++) {
            uint64_t cols = odd_ks[(size_t)rep % N_ODD_KS] + 64, rows = 3;
            uint8_t *data = malloc((size_t)(rows * cols) * 4);
            for (size_t i = 0; i < rows * cols; i++) {
                uint32_t u = rng32();
                if (types[ti] != NF_SRC_F32) u &= 0xFFFF;
                /* keep the exponent below the top one mostly; a rare non-finite row remains */
                if (rng32() % 512 != 0) {
                    if (types[ti] == NF_SRC_F32 && (u & 0x7F800000u) == 0x7F800000u) u &= 0xBFFFFFFFu;
                    if (types[ti] == NF_SRC_BF16 && (u & 0x7F80u) == 0x7F80u) u &= 0xBFFFu;
                    if (types[ti] == NF_SRC_F16 && (u & 0x7C00u) == 0x7C00u) u &= 0xBFFFu;
                }
                put_word(data, types[ti], i, u);
            }
            /* row by row so that one refused row does not hide the others */
            size_t es = esize_of(types[ti]);
            for (uint64_t r = 0; r < rows; r++)
                check_all_formats(level, types[ti], data + (size_t)(r * cols) * es, 1, cols, "random words");
            free(data);
        }
}

/* Every BF16 and binary16 word as an element: rows of 64 consecutive words (the non-finite ones
 * are refused identically), and each word beside a fixed row maximum (448, so the BF16 scale is 1
 * and the element is its own normalized value: every E4M3FN tie of a BF16 value; and other
 * maxima). */
static void check_all_words(nf_simd_level level)
{
    for (int ti = 1; ti < 3; ti++) {
        nf_src_type t = types[ti];
        uint8_t *data = malloc(65536 * 2);
        for (uint32_t w = 0; w < 65536; w++) put_word(data, t, w, w);
        for (uint32_t r = 0; r < 1024; r++) check_all_formats(level, t, data + (size_t)r * 128, 1, 64, "all words");
        free(data);
        static const float maxima[] = {448.0f, 1.0f, 65504.0f, 3.0e-5f};
        for (int mi = 0; mi < 4; mi++) {
            /* rows of 8: seven words and the maximum; words whose magnitude exceeds the maximum
             * (or is not finite) are replaced by the maximum's neighbours below */
            uint8_t *rows = malloc(65536 / 7 * 8 * 2 + 64);
            uint64_t nrows = 0;
            uint32_t w = 0;
            uint16_t mword = t == NF_SRC_F16 ? nf_f32_to_f16(maxima[mi]) : nf_f32_to_bf16(maxima[mi]);
            uint16_t mag_lim = mword & 0x7FFF;
            while (w < 65536) {
                size_t base = (size_t)nrows * 8;
                for (int j = 0; j < 7; j++, w++) {
                    uint16_t u = (uint16_t)(w < 65536 ? w : 0);
                    if ((u & 0x7FFF) > mag_lim) u = (uint16_t)((u & 0x8000) | (mag_lim - 1 - (u & 7)));
                    put_word(rows, t, base + (size_t)j, u);
                }
                put_word(rows, t, base + 7, mword);
                nrows++;
            }
            check_all_formats(level, t, rows, nrows, 8, "words beside a maximum");
            free(rows);
        }
    }
}

/* Binary32 sources: values at BF16 rounding ties and E4M3FN ties after the BF16 rounding. */
static void check_f32_ties(nf_simd_level level)
{
    uint64_t rows = 512, cols = 33;
    uint8_t *data = malloc((size_t)(rows * cols) * 4);
    for (uint64_t r = 0; r < rows; r++) {
        for (uint64_t c = 0; c + 1 < cols; c++) {
            uint32_t bf = (uint32_t)nf_f32_to_bf16((float)(uniform() * 448.0)) << 16;
            uint32_t low = (rng32() % 3 == 0) ? 0x8000u : (rng32() % 2 ? 0x7FFFu : 0x8001u);
            put_word(data, NF_SRC_F32, (size_t)(r * cols + c), bf | low);
        }
        put_word(data, NF_SRC_F32, (size_t)(r * cols + cols - 1), r % 2 ? 0x43E00000u : 0xC3E00000u); /* +-448 */
    }
    check_all_formats(level, NF_SRC_F32, data, rows, cols, "f32 ties");
    /* the BF16 rounding carrying into the maximum: 447.99 -> 448 after rounding */
    for (uint64_t r = 0; r < rows; r++)
        put_word(data, NF_SRC_F32, (size_t)(r * cols + cols - 1), 0x43DFFFFFu - (uint32_t)r);
    check_all_formats(level, NF_SRC_F32, data, rows, cols, "f32 ties, rounded maximum");
    free(data);
}

/* Zero rows (+0, -0, mixed), +-max finite, overflow of BF16 and of the binary16 scale, subnormal
 * rows (tiny scales whose reciprocal overflows), odd K. */
static void check_extremes(nf_simd_level level)
{
    static const uint32_t f32_specials[] = {0x00000000u, 0x80000000u, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F7F7FFFu,
                                            0x7F7F8000u, 0x7F7F0000u, 0x00000001u, 0x80000001u, 0x007FFFFFu,
                                            0x00800000u, 0x4C000000u, 0x4BFFFFFFu, 0x477FEFFFu, 0x3C800000u};
    static const uint16_t h_specials[] = {0x0000, 0x8000, 0x7F7F, 0xFF7F, 0x7BFF, 0xFBFF, 0x0001, 0x8001,
                                          0x03FF, 0x0400, 0x007F, 0x0080, 0x3C00, 0x4B00, 0x0002};
    for (int ti = 0; ti < 3; ti++) {
        nf_src_type t = types[ti];
        for (size_t ki = 0; ki < N_ODD_KS; ki++) {
            uint64_t cols = odd_ks[ki];
            uint8_t *data = malloc((size_t)cols * 4);
            /* zero rows */
            for (uint64_t c = 0; c < cols; c++) put_word(data, t, (size_t)c, 0);
            check_all_formats(level, t, data, 1, cols, "zeros");
            for (uint64_t c = 0; c < cols; c++) put_word(data, t, (size_t)c, t == NF_SRC_F32 ? 0x80000000u : 0x8000u);
            check_all_formats(level, t, data, 1, cols, "negative zeros");
            /* one special among small values, at every position class */
            for (int si = 0; si < 15; si++) {
                uint32_t sp = t == NF_SRC_F32 ? f32_specials[si] : h_specials[si];
                for (uint64_t c = 0; c < cols; c++) {
                    uint32_t u = t == NF_SRC_F32 ? (rng32() & 0x807FFFFFu) : (rng32() & 0x80FFu); /* subnormal-ish */
                    if (rng32() % 4 == 0) u = t == NF_SRC_F32 ? bits_of_f32((float)uniform()) : (rng32() & 0x83FFu);
                    put_word(data, t, (size_t)c, u);
                }
                put_word(data, t, (size_t)(rng32() % cols), sp);
                check_all_formats(level, t, data, 1, cols, "special");
                uint32_t neg = sp ^ (t == NF_SRC_F32 ? 0x80000000u : 0x8000u);
                for (uint64_t c = 0; c < cols; c++) put_word(data, t, (size_t)c, c % 2 ? sp : neg);
                check_all_formats(level, t, data, 1, cols, "+-special row");
            }
            free(data);
        }
    }
}

/* Non-finite values (NaN payloads, signalling ones, +-inf) at every position of odd rows, alone
 * and after a value that overflows: the same refusals and messages. */
static void check_nonfinite(nf_simd_level level)
{
    static const uint32_t f32_bad[] = {0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u, 0x7F800001u, 0x7FFFFFFFu};
    static const uint16_t bf_bad[] = {0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x7F81, 0x7FFF};
    static const uint16_t h_bad[] = {0x7C00, 0xFC00, 0x7E00, 0xFE01, 0x7C01, 0x7FFF};
    for (int ti = 0; ti < 3; ti++) {
        nf_src_type t = types[ti];
        for (size_t ki = 0; ki < N_ODD_KS; ki += 2) {
            uint64_t cols = odd_ks[ki], rows = 2;
            uint8_t *data = malloc((size_t)(rows * cols) * 4);
            for (int bi = 0; bi < 6; bi++)
                for (uint64_t pos = 0; pos < cols; pos += 1 + cols / 9) {
                    for (size_t i = 0; i < rows * cols; i++) put_value(data, t, i, (float)uniform());
                    uint32_t bad = t == NF_SRC_F32 ? f32_bad[bi] : t == NF_SRC_BF16 ? bf_bad[bi] : h_bad[bi];
                    put_word(data, t, (size_t)(cols + pos), bad);
                    cr_assert_eq(check_buf(level, fmts[bi % 2], t, data, rows, cols, "non-finite"), NF_ERR_INVALID);
                    if (t == NF_SRC_F32 && pos > 0) {
                        put_word(data, t, (size_t)(cols + pos - 1), 0x7F7FFFFFu); /* overflows BF16 first */
                        cr_assert_eq(check_buf(level, fmts[bi % 2], t, data, rows, cols, "overflow then non-finite"),
                                     NF_ERR_INVALID);
                    }
                }
            free(data);
        }
    }
}

/* A row reaching the end of a mapped region: the kernels must not read past the row. */
static void check_page_end(nf_simd_level level)
{
    long page = 4096;
    for (int ti = 0; ti < 3; ti++)
        for (size_t ki = 0; ki < N_ODD_KS; ki++) {
            uint64_t cols = odd_ks[ki];
            size_t bytes = (size_t)cols * esize_of(types[ti]);
            if (bytes > (size_t)page) continue;
            uint8_t *buf = malloc(2 * (size_t)page);
            uint8_t *data = buf + 2 * (size_t)page - bytes; /* ASan catches reads beyond the end */
            for (uint64_t c = 0; c < cols; c++) put_value(data, types[ti], (size_t)c, random_value(1.0));
            check_all_formats(level, types[ti], data, 1, cols, "buffer end");
            free(buf);
        }
}

/* ------------------------------------------------------------------ one suite per variant */

static void require(nf_simd_level level)
{
    if (!nf_simd_supported(level))
        cr_skip_test("the CPU lacks the %s variant (best here: %s): its fp8 kernel is NOT tested on this machine",
                     nf_simd_level_name(level), nf_simd_level_name(nf_simd_best()));
}

static void restore(void) { nf_simd_force(nf_simd_best()); }

#define VARIANT_TEST(suite, level, check)                                                                    \
    Test(suite, check, .fini = restore)                                                                      \
    {                                                                                                        \
        require(level);                                                                                      \
        check_##check(level);                                                                                \
        cr_log_info("%s %s: %lu rows identical, %lu refused identically", nf_simd_level_name(level), #check, \
                    compared_rows, refused_rows);                                                            \
        cr_assert(compared_rows > 0);                                                                        \
    }

#define VARIANT_SUITE(suite, level)          \
    VARIANT_TEST(suite, level, random)       \
    VARIANT_TEST(suite, level, random_words) \
    VARIANT_TEST(suite, level, all_words)    \
    VARIANT_TEST(suite, level, f32_ties)     \
    VARIANT_TEST(suite, level, extremes)     \
    VARIANT_TEST(suite, level, nonfinite)    \
    VARIANT_TEST(suite, level, page_end)

VARIANT_SUITE(fp8_scalar, NF_SIMD_SCALAR)
VARIANT_SUITE(fp8_avx2, NF_SIMD_AVX2)
VARIANT_SUITE(fp8_avx512, NF_SIMD_AVX512)
VARIANT_SUITE(fp8_neon, NF_SIMD_NEON)

/* The E4M3FN encoder of the kernels against nf_f32_to_e4m3fn for every binary32 magnitude class:
 * all words with the low 12 bits from a few patterns (every exponent, every tie position). */
Test(fp8_encoder, matches_nf_f32_to_e4m3fn)
{
    static const uint32_t lows[] = {0x000, 0x001, 0x7FF, 0x800, 0x801, 0xFFF};
    unsigned long n = 0;
    for (uint32_t hi = 0; hi < (1u << 20); hi++)
        for (int li = 0; li < 6; li++) {
            uint32_t u = hi << 12 | lows[li];
            if ((u & 0x7F800000u) == 0x7F800000u) continue; /* the kernels never see non-finite products */
            float f;
            memcpy(&f, &u, sizeof f);
            cr_assert_eq(nf_fp8_e4m3fn_of(u), nf_f32_to_e4m3fn(f), "word 0x%08x", u);
            n++;
        }
    cr_log_info("%lu binary32 words encode identically", n);
}
