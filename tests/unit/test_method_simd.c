/* The SIMD kernels of grouped_absmax (lib/src/method/simd) against the scalar reference, bit
 * for bit, and the dispatcher of common/cpu.h.
 *
 * Every check runs once per SIMD variant (suites simd_avx2 and simd_avx512): the variant is
 * forced with nf_simd_force, the same chunk is encoded with the variant and with the forced
 * scalar reference, and the status, every code and every scale word (or, on failure, the exact
 * error message) must be identical.  A variant the CPU lacks is skipped with a message naming it,
 * never passed silently. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <ninfer/ninfer.h>

#include "support/test_float.h"
#include "support/test_rng.h"

#include "common/cpu.h"
#include "method/grouped.h"
#include "method/method_impl.h"
#include "method/simd/absmax_simd.h"

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define HAVE_X86 1
#include <immintrin.h>
#else
#define HAVE_X86 0
#endif
#if defined(__aarch64__) && defined(__ARM_NEON) && defined(__GNUC__)
#define HAVE_NEON 1
#include <arm_neon.h>
#else
#define HAVE_NEON 0
#endif

/* ------------------------------------------------------------------ helpers */

TEST_RNG(0x9E3779B97F4A7C15ull)

static const nf_format_id grouped_ids[4] = {NF_FMT_Q4_G64_FP16, NF_FMT_Q5_G64_FP16, NF_FMT_Q6_G64_FP16,
                                            NF_FMT_Q8_G32_FP16};
static const nf_src_type float_types[3] = {NF_SRC_F32, NF_SRC_F16, NF_SRC_BF16};

static size_t esize_of(nf_src_type t) { return t == NF_SRC_F32 ? 4 : 2; }

/* Element i of a source buffer := the word of v in type t (F16/BF16 round to nearest even). */
static void put_value(uint8_t *data, nf_src_type t, size_t i, float v)
{
    if (t == NF_SRC_F32) {
        uint32_t u = bits_of_f32(v);
        for (int j = 0; j < 4; j++) data[4 * i + (size_t)j] = (uint8_t)(u >> (8 * j));
        return;
    }
    uint16_t w = t == NF_SRC_F16 ? nf_f32_to_f16(v) : nf_f32_to_bf16(v);
    data[2 * i] = (uint8_t)w;
    data[2 * i + 1] = (uint8_t)(w >> 8);
}

/* Element i := a raw word (low 16 bits for F16/BF16). */
static void put_word(uint8_t *data, nf_src_type t, size_t i, uint32_t u)
{
    size_t es = esize_of(t);
    for (size_t j = 0; j < es; j++) data[es * i + j] = (uint8_t)(u >> (8 * j));
}

/* The result of one encoding. */
typedef struct encoded {
    nf_status st;
    int8_t *codes;
    uint16_t *scales;
    uint64_t groups;
    char msg[NF_ERROR_MESSAGE_MAX];
} encoded;

static void encode_with(nf_simd_level level, const nf_format *f, const nf_src_rows *src, uint8_t fill, encoded *e)
{
    nf_simd_level got = nf_simd_force(level);
    cr_assert_eq(got, level, "could not force %s: %s", nf_simd_level_name(level), nf_simd_reason());
    cr_assert_str_eq(nf_simd_name(), nf_simd_level_name(level));
    e->groups = (src->cols + f->group_size - 1) / f->group_size;
    size_t ncodes = (size_t)(src->rows * src->cols), nscales = (size_t)(src->rows * e->groups);
    e->codes = malloc(ncodes + 1);
    e->scales = malloc(2 * nscales + 2);
    memset(e->codes, fill, ncodes + 1); /* bytes a kernel forgot to write show up */
    memset(e->scales, fill, 2 * nscales + 2);
    nf_words w = {.rows = src->rows, .cols = src->cols, .codes = e->codes, .scales = e->scales};
    nf_error err = {0};
    e->st = nf_grouped_absmax_rows(f, src, &w, &err);
    /* nothing written past the arrays (one guard byte / word each) */
    uint16_t guard;
    memset(&guard, fill, sizeof guard);
    cr_assert_eq((uint8_t)e->codes[ncodes], fill, "%s wrote past the codes", nf_simd_level_name(level));
    cr_assert_eq(e->scales[nscales], guard, "%s wrote past the scales", nf_simd_level_name(level));
    snprintf(e->msg, sizeof e->msg, "%s", e->st == NF_OK ? "" : err.message);
}

static void encoded_free(encoded *e)
{
    free(e->codes);
    free(e->scales);
}

static uint64_t compared_values, compared_errors, clamped_codes;

/* Encodes src with `level` and with the scalar reference; asserts identical results.  Returns
 * the status. */
static nf_status check_same(nf_simd_level level, nf_format_id id, const nf_src_rows *src, const char *what)
{
    const nf_format *f = nf_format_by_id(id);
    encoded ref, got;
    encode_with(NF_SIMD_SCALAR, f, src, 0xA5, &ref);
    encode_with(level, f, src, 0x5B, &got);
    const char *lv = nf_simd_level_name(level);
    cr_assert_eq(got.st, ref.st, "%s %s %s K=%lu: status %d (%s), scalar %d (%s)", lv, what, f->name,
                 (unsigned long)src->cols, got.st, got.msg, ref.st, ref.msg);
    if (ref.st != NF_OK) {
        cr_assert_str_eq(got.msg, ref.msg, "%s %s %s K=%lu: message differs", lv, what, f->name,
                         (unsigned long)src->cols);
        compared_errors++;
    } else {
        size_t k = (size_t)src->cols;
        for (size_t i = 0; i < (size_t)(src->rows * src->cols); i++) {
            cr_assert_eq(got.codes[i], ref.codes[i], "%s %s %s K=%lu: row %zu col %zu code %d, scalar %d", lv, what,
                         f->name, (unsigned long)src->cols, i / k, i % k, got.codes[i], ref.codes[i]);
            /* legal codes only: never -128 in q8 (its interval is [-127, 127]); the clamp does
             * bind when a binary16-subnormal scale rounds well below amax / qmax */
            cr_assert(ref.codes[i] >= f->code_min && ref.codes[i] <= f->code_max && ref.codes[i] != -128, "%s code %d",
                      f->name, ref.codes[i]);
            if (ref.codes[i] < -f->encoder_qmax || ref.codes[i] > f->encoder_qmax) clamped_codes++;
        }
        for (size_t i = 0; i < (size_t)(src->rows * ref.groups); i++)
            cr_assert_eq(got.scales[i], ref.scales[i], "%s %s %s K=%lu: row %zu group %zu scale 0x%04x, scalar 0x%04x",
                         lv, what, f->name, (unsigned long)src->cols, i / ref.groups, i % ref.groups, got.scales[i],
                         ref.scales[i]);
        compared_values += src->rows * src->cols;
    }
    nf_status st = ref.st;
    encoded_free(&ref);
    encoded_free(&got);
    return st;
}

/* The same for a buffer of rows x cols elements of type t. */
static nf_status check_buf(nf_simd_level level, nf_format_id id, nf_src_type t, const uint8_t *data, uint64_t rows,
                           uint64_t cols, const char *what)
{
    nf_src_rows src = {.name = "blk.0.w", .type = t, .data = data, .first_row = 7, .rows = rows, .cols = cols};
    return check_same(level, id, &src, what);
}

/* The same for float values converted to type t. */
static nf_status check_values(nf_simd_level level, nf_format_id id, nf_src_type t, const float *v, uint64_t rows,
                              uint64_t cols, const char *what)
{
    size_t n = (size_t)(rows * cols);
    uint8_t *data = malloc(n * esize_of(t) + 1);
    for (size_t i = 0; i < n; i++) put_value(data, t, i, v[i]);
    nf_status st = check_buf(level, id, t, data, rows, cols, what);
    free(data);
    return st;
}

static void require(nf_simd_level level)
{
    if (!nf_simd_supported(level))
        cr_skip_test("the CPU lacks the %s variant (best here: %s): its kernel is NOT tested on this machine",
                     nf_simd_level_name(level), nf_simd_level_name(nf_simd_best()));
}

static void report(const char *check, nf_simd_level level)
{
    cr_log_info("%s %s: %lu values (%lu codes beyond +-qmax, clamped) and %lu refusals identical to scalar",
                nf_simd_level_name(level), check, (unsigned long)compared_values, (unsigned long)clamped_codes,
                (unsigned long)compared_errors);
    cr_assert(compared_values + compared_errors > 0);
}

/* A value of varied kind around scale: zeros of both signs, sums of uniforms, outliers, half
 * steps. */
static float random_value(double scale)
{
    uint32_t k = rng32() % 16;
    if (k == 0) return 0.0f;
    if (k == 1) return -0.0f;
    double v = (uniform() + uniform() + uniform()) * scale;
    if (k == 2) v *= 8.0;
    if (k == 3) v = ldexp(round(uniform() * 16.0) + 0.5, -4) * scale;
    return (float)v;
}

static const uint64_t odd_ks[] = {1,  2,  3,  7,  8,  9,  15,  16,  17,  31,  32,
                                  33, 47, 63, 64, 65, 95, 127, 128, 129, 200, 1000};
#define N_ODD_KS (sizeof odd_ks / sizeof odd_ks[0])

/* ------------------------------------------------------------------ the checks */

/* Random matrices of every source type and format, odd K, several rows, some misaligned. */
static void check_random(nf_simd_level level)
{
    for (int ti = 0; ti < 3; ti++)
        for (int fi = 0; fi < 4; fi++)
            for (size_t ki = 0; ki < N_ODD_KS; ki++) {
                uint64_t cols = odd_ks[ki], rows = 1 + rng32() % 4;
                nf_src_type t = float_types[ti];
                float *v = malloc(sizeof(float) * rows * cols);
                for (uint64_t r = 0; r < rows; r++) {
                    /* log-uniform row scales: 2^-40..2^12 (F16: 2^-20..2^8, within its range) */
                    int e = t == NF_SRC_F16 ? (int)(rng32() % 29) - 20 : (int)(rng32() % 53) - 40;
                    double sc = ldexp(1.0 + fabs(uniform()), e);
                    for (uint64_t c = 0; c < cols; c++) v[r * cols + c] = random_value(sc);
                }
                size_t es = esize_of(t), n = (size_t)(rows * cols);
                /* misaligned by 1 byte every other time */
                size_t off = ki % 2;
                uint8_t *data = malloc(n * es + 2);
                for (size_t i = 0; i < n; i++) put_value(data + off, t, i, v[i]);
                cr_assert_eq(check_buf(level, grouped_ids[fi], t, data + off, rows, cols, "random"), NF_OK);
                free(data);
                free(v);
            }
    /* a larger matrix, K = 4096 */
    for (int ti = 0; ti < 3; ti++) {
        uint64_t rows = 8, cols = 4096;
        float *v = malloc(sizeof(float) * rows * cols);
        for (size_t i = 0; i < rows * cols; i++) v[i] = random_value(0.02);
        for (int fi = 0; fi < 4; fi++)
            cr_assert_eq(check_values(level, grouped_ids[fi], float_types[ti], v, rows, cols, "random 8x4096"), NF_OK);
        free(v);
    }
}

/* Uniformly random finite words (every exponent): each row by its own call, so that the rows
 * whose scale overflows (refused identically) do not hide the others. */
static void check_random_words(nf_simd_level level)
{
    for (int ti = 0; ti < 3; ti++) {
        nf_src_type t = float_types[ti];
        for (int rep = 0; rep < 300; rep++) {
            uint64_t cols = 1 + rng32() % 150;
            uint8_t *data = malloc((size_t)cols * 4 + 1);
            for (size_t i = 0; i < cols; i++) {
                uint32_t u;
                if (t == NF_SRC_F32) {
                    do u = rng32();
                    while ((u & 0x7F800000u) == 0x7F800000u);
                    if (rep % 3 == 0) u &= 0x87FFFFFFu; /* small exponents: subnormal-ish scales */
                } else {
                    uint32_t exp_mask = t == NF_SRC_F16 ? 0x7C00u : 0x7F80u;
                    do u = rng32() & 0xFFFFu;
                    while ((u & exp_mask) == exp_mask);
                    if (t == NF_SRC_BF16 && rep % 2 == 0) u &= 0xBFFFu; /* mostly no overflow */
                }
                put_word(data, t, i, u);
            }
            check_buf(level, grouped_ids[rep % 4], t, data, 1, cols, "random words");
            free(data);
        }
    }
}

/* Exact ties x * inv = n + 1/2 (scale 2^j, so inv = 2^-j and the products are exact), both signs,
 * even and odd n, with their binary32 neighbours. */
static void check_ties(nf_simd_level level)
{
    static const int exps[] = {-20, -9, -1, 0, 3, 7};
    for (int fi = 0; fi < 4; fi++) {
        const nf_format *f = nf_format_by_id(grouped_ids[fi]);
        int qmax = f->encoder_qmax;
        for (size_t ei = 0; ei < sizeof exps / sizeof exps[0]; ei++) {
            int j = exps[ei];
            float v[1024];
            size_t n = 0;
            v[n++] = (float)ldexp(qmax, j); /* amax: scale word exactly 2^j */
            for (int m = -qmax; m < qmax; m++) {
                float tie = (float)ldexp(m + 0.5, j);
                v[n++] = tie;
                v[n++] = f32_of_bits(bits_of_f32(tie) + 1);
                v[n++] = f32_of_bits(bits_of_f32(tie) - 1);
            }
            for (int ti = 0; ti < 3; ti++) {
                nf_src_type t = float_types[ti];
                if (t == NF_SRC_F16 && (j < -9 || ldexp(qmax, j) > 65504.0)) continue;
                /* each group of a row carries the amax so every group keeps scale 2^j */
                uint64_t g = f->group_size;
                uint64_t cols = 0;
                float row[4096];
                for (size_t i = 1; i < n; i++) {
                    if (cols % g == 0) row[cols++] = (i % 2) ? v[0] : -v[0];
                    row[cols++] = v[i];
                }
                cr_assert_eq(check_values(level, f->id, t, row, 1, cols, "ties"), NF_OK);
            }
        }
        /* the reference rounds exact ties to even (a self-check of what is being matched) */
        float w[8] = {(float)qmax, 2.5f, 3.5f, -2.5f, -3.5f, 0.5f, -0.5f, 1.5f};
        static const int8_t want[8] = {0, 2, 4, -2, -4, 0, 0, 2};
        nf_src_rows src = {.type = NF_SRC_F32, .data = w, .rows = 1, .cols = 8};
        for (nf_simd_level l = NF_SIMD_SCALAR; l <= level; l = (nf_simd_level)(l + 1)) {
            if (!nf_simd_supported(l)) continue;
            nf_simd_force(l);
            int8_t codes[8];
            uint16_t scales[1];
            nf_words out = {.rows = 1, .cols = 8, .codes = codes, .scales = scales};
            nf_error err = {0};
            cr_assert_eq(nf_grouped_absmax_rows(f, &src, &out, &err), NF_OK, "%s", err.message);
            cr_assert_eq(scales[0], 0x3C00);
            for (int i = 1; i < 8; i++)
                cr_assert_eq(codes[i], want[i], "%s %s: tie %g -> %d", nf_simd_level_name(l), f->name, (double)w[i],
                             codes[i]);
        }
    }
}

/* Subnormal inputs of every type, scales that are binary16 subnormals, and the 0x0001 rescue
 * (with codes that are not all zero: amax just under qmax * 2^-25). */
static void check_subnormals(nf_simd_level level)
{
    for (int fi = 0; fi < 4; fi++) {
        const nf_format *f = nf_format_by_id(grouped_ids[fi]);
        double qmax = f->encoder_qmax;
        float v[3 * 129];
        /* rows: binary32 subnormals; rescue with nonzero codes; the exact tie qmax * 2^-25
         * (raw = 2^-25 rounds to +0: rescued); binary16-subnormal scales */
        for (int kind = 0; kind < 7; kind++) {
            for (size_t i = 0; i < 3 * 129; i++) {
                double x;
                switch (kind) {
                case 0: x = ldexp(uniform(), -128); break;
                case 1: x = ldexp(uniform() * qmax, -25) * 0.999; break;
                case 2: x = i % 7 == 0 ? ldexp(qmax, -25) : ldexp(uniform() * qmax, -25); break;
                case 3: x = ldexp(uniform() * qmax, -20); break;
                case 4: x = ldexp(uniform(), -149) * (double)(rng32() % 8); break;
                case 5: x = (i % 3 ? 1.0 : -1.0) * ldexp(qmax, -25) * (1.0 + ldexp(1.0, -20)); break;
                default: x = uniform() * ldexp(qmax * 1.49, -24); break; /* scale 2^-24 << amax / qmax: clamps */
                }
                v[i] = (float)x;
            }
            for (int ti = 0; ti < 3; ti++)
                cr_assert_eq(check_values(level, f->id, float_types[ti], v, 3, 129, "subnormals"), NF_OK);
        }
        /* binary16 subnormal source words, one row per pattern */
        uint8_t data[2 * 100];
        for (int rep = 0; rep < 50; rep++) {
            for (size_t i = 0; i < 100; i++) {
                uint32_t w = rng32() & (rep % 2 ? 0x83FFu : 0x8003u);
                put_word(data, NF_SRC_F16, i, w);
            }
            cr_assert_eq(check_buf(level, f->id, NF_SRC_F16, data, 1, 100, "f16 subnormal words"), NF_OK);
            for (size_t i = 0; i < 100; i++) put_word(data, NF_SRC_BF16, i, rng32() & 0x807Fu);
            cr_assert_eq(check_buf(level, f->id, NF_SRC_BF16, data, 1, 100, "bf16 subnormal words"), NF_OK);
        }
    }
}

/* Zero groups (+0, -0, mixed), a lone -0 beside values, partial last groups of every length and
 * rows shorter than a vector. */
static void check_zero_and_partial(nf_simd_level level)
{
    for (int fi = 0; fi < 4; fi++) {
        const nf_format *f = nf_format_by_id(grouped_ids[fi]);
        uint64_t g = f->group_size;
        for (uint64_t cols = 1; cols <= 2 * g + 20; cols++) {
            float *v = malloc(sizeof(float) * 4 * cols);
            for (uint64_t r = 0; r < 4; r++)
                for (uint64_t c = 0; c < cols; c++) {
                    float x;
                    switch (r) {
                    case 0: x = 0.0f; break;                   /* all +0 */
                    case 1: x = (c % 2) ? -0.0f : 0.0f; break; /* +0 and -0 */
                    case 2: x = -0.0f; break;                  /* all -0 */
                    default: x = (c / g) % 2 ? (c % 3 ? -0.0f : random_value(1.0)) : 0.0f; break;
                    }
                    v[r * cols + c] = x;
                }
            for (int ti = 0; ti < 3; ti++)
                cr_assert_eq(check_values(level, f->id, float_types[ti], v, 4, cols, "zero/partial"), NF_OK);
            /* random rows at this K too */
            for (uint64_t i = 0; i < 4 * cols; i++) v[i] = random_value(0.5);
            for (int ti = 0; ti < 3; ti++)
                cr_assert_eq(check_values(level, f->id, float_types[ti], v, 4, cols, "partial"), NF_OK);
            free(v);
        }
    }
}

/* Largest finite values (refused or not, identically), the binary16 overflow boundary of the
 * scale, the smallest subnormal, and values around the ends of the code interval. */
static void check_extremes(nf_simd_level level)
{
    for (int fi = 0; fi < 4; fi++) {
        const nf_format *f = nf_format_by_id(grouped_ids[fi]);
        float qmax = (float)f->encoder_qmax;
        const float specials[] = {
            FLT_MAX,         -FLT_MAX,         65504.0f,        -65504.0f,        3.3895314e38f /* BF16 max */,
            65519.0f * qmax, -65519.0f * qmax, 65520.0f * qmax, -65520.0f * qmax, nextafterf(65520.0f * qmax, 0.0f),
            FLT_TRUE_MIN,    -FLT_TRUE_MIN,    FLT_MIN};
        for (size_t si = 0; si < sizeof specials / sizeof specials[0]; si++)
            for (int ti = 0; ti < 3; ti++)
                for (uint64_t cols = 1; cols <= 140; cols += 23) {
                    float v[2 * 140];
                    for (uint64_t i = 0; i < 2 * cols; i++) v[i] = random_value(1.0);
                    v[(rng32() % cols)] = specials[si];  /* row 0 */
                    v[cols + (cols - 1)] = specials[si]; /* row 1, last column */
                    check_values(level, f->id, float_types[ti], v, 2, cols, "extremes");
                }
        /* codes near the ends: x * inv just around qmax - 1/2, -(qmax - 1/2) and +-qmax, with
         * amax values whose scale rounds up and down */
        for (int rep = 0; rep < 200; rep++) {
            float amax = (float)ldexp(qmax * (1.0 + uniform() * ldexp(1.0, -10)), (int)(rng32() % 30) - 20);
            float row[128];
            uint64_t cols = f->group_size;
            row[0] = rep % 2 ? amax : -amax;
            uint16_t word = 0;
            float inv = 0;
            cr_assert(nf_absmax_simd_scale(bits_of_f32(amax), qmax, &word, &inv));
            float s = nf_f16_to_f32(word);
            for (uint64_t c = 1; c < cols; c++) {
                float target = (c % 2 ? 1.0f : -1.0f) * (qmax - 0.5f);
                float x = target * s;
                int d = (int)(rng32() % 5) - 2;
                x = f32_of_bits(bits_of_f32(x) + (uint32_t)d);
                row[c] = fabsf(x) <= amax ? x : (c % 2 ? amax : -amax);
            }
            for (int ti = 0; ti < 3; ti++)
                cr_assert_eq(check_values(level, f->id, float_types[ti], row, 1, cols, "code ends"), NF_OK);
        }
    }
}

/* Non-finite values (NaN payloads of both signs, signalling ones, +-inf) anywhere: the same
 * status and message as the reference (tensor, absolute row, column).  The first refusal in row
 * order wins, an overflowing scale before a later non-finite value included. */
static void check_nonfinite(nf_simd_level level)
{
    static const uint32_t bad32[] = {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0x7FBFFFFFu, 0x7F800000u, 0xFF800000u};
    static const uint32_t bad16[] = {0x7E00u, 0xFE00u, 0x7C01u, 0x7DFFu, 0x7C00u, 0xFC00u};
    static const uint32_t bad_bf[] = {0x7FC0u, 0xFFC0u, 0x7F81u, 0x7FBFu, 0x7F80u, 0xFF80u};
    static const uint64_t ks[] = {1, 5, 17, 33, 64, 70, 200};
    for (int ti = 0; ti < 3; ti++) {
        nf_src_type t = float_types[ti];
        const uint32_t *bad = t == NF_SRC_F32 ? bad32 : t == NF_SRC_F16 ? bad16 : bad_bf;
        for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
            uint64_t cols = ks[ki], rows = 3;
            size_t n = (size_t)(rows * cols);
            uint8_t *data = malloc(n * 4 + 1);
            for (int b = 0; b < 6; b++)
                for (int pos = 0; pos < 4; pos++) {
                    for (size_t i = 0; i < n; i++) put_value(data, t, i, random_value(0.1));
                    uint64_t r = pos == 0 ? 0 : 2, c = pos == 0 ? 0 : pos == 1 ? cols / 2 : cols - 1;
                    put_word(data, t, (size_t)(r * cols + c), bad[b]);
                    if (pos == 3) put_word(data, t, (size_t)(r * cols), bad[(b + 1) % 6]); /* two in a row */
                    for (int fi = 0; fi < 4; fi++) {
                        nf_src_rows src = {.name = pos % 2 ? "blk.3.ffn_up.weight" : NULL,
                                           .type = t,
                                           .data = data,
                                           .first_row = 40,
                                           .rows = rows,
                                           .cols = cols};
                        cr_assert_eq(check_same(level, grouped_ids[fi], &src, "non-finite"), NF_ERR_INVALID);
                    }
                }
            /* an overflowing group before the non-finite value, and after it */
            if (t != NF_SRC_F16 && cols >= 65) {
                for (int order = 0; order < 2; order++) {
                    for (size_t i = 0; i < n; i++) put_value(data, t, i, random_value(0.1));
                    put_value(data, t, (size_t)(cols + (order ? 64 : 0)), 1e30f);
                    put_word(data, t, (size_t)(cols + (order ? 0 : 64)), bad[order]);
                    for (int fi = 0; fi < 4; fi++)
                        cr_assert_eq(check_buf(level, grouped_ids[fi], t, data, rows, cols, "overflow vs non-finite"),
                                     NF_ERR_INVALID);
                }
            }
            free(data);
        }
    }
    /* the message itself, for the record */
    float v[70] = {0};
    v[66] = NAN;
    nf_simd_force(level);
    const nf_format *f = nf_format_by_id(NF_FMT_Q6_G64_FP16);
    int8_t codes[70];
    uint16_t scales[2];
    nf_words out = {.rows = 1, .cols = 70, .codes = codes, .scales = scales};
    nf_src_rows src = {.name = "blk.w", .type = NF_SRC_F32, .data = v, .first_row = 42, .rows = 1, .cols = 70};
    nf_error err = {0};
    cr_assert_eq(nf_grouped_absmax_rows(f, &src, &out, &err), NF_ERR_INVALID);
    cr_assert_str_eq(err.message, "tensor 'blk.w': row 42 col 66: source value NaN is not finite");
}

/* Rows ending exactly at an inaccessible page: a kernel reading one byte past the row would
 * crash.  Every K up to 140, every type, aligned and not. */
static void check_page_end(nf_simd_level level)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *mem = NULL;
    cr_assert_eq(posix_memalign(&mem, page, 2 * page), 0);
    uint8_t *map = mem;
    cr_assert_eq(mprotect(map + page, page, PROT_NONE), 0);
    for (int ti = 0; ti < 3; ti++) {
        nf_src_type t = float_types[ti];
        for (uint64_t cols = 1; cols <= 140; cols++) {
            uint64_t rows = 1 + cols % 3;
            size_t bytes = (size_t)(rows * cols) * esize_of(t);
            uint8_t *data = map + page - bytes;
            for (size_t i = 0; i < (size_t)(rows * cols); i++) put_value(data, t, i, random_value(1.0));
            cr_assert_eq(check_buf(level, grouped_ids[cols % 4], t, data, rows, cols, "page end"), NF_OK);
            /* a non-finite value in the last element too */
            put_word(data, t, (size_t)(rows * cols - 1),
                     t == NF_SRC_F32   ? 0x7F800000u
                     : t == NF_SRC_F16 ? 0x7C00u
                                       : 0x7F80u);
            cr_assert_eq(check_buf(level, grouped_ids[cols % 4], t, data, rows, cols, "page end"), NF_ERR_INVALID);
        }
    }
    cr_assert_eq(mprotect(map + page, page, PROT_READ | PROT_WRITE), 0);
    free(mem);
}

/* docs/vectors.md, derived vectors and the reciprocal-multiply trap of test_method_absmax.c, under the variant:
 * known answers, not only agreement with scalar. */
static void check_known_answers(nf_simd_level level)
{
    nf_simd_force(level);
    nf_error err = {0};
    {
        float v[65] = {0.9f, -0.35f, 0.1f, 0.0f, -0.9f, 0.45f, 0.15f, 0.05f};
        v[64] = -0.2f;
        int8_t codes[65];
        uint16_t scales[2];
        nf_words out = {.rows = 1, .cols = 65, .codes = codes, .scales = scales};
        nf_src_rows src = {.type = NF_SRC_F32, .data = v, .rows = 1, .cols = 65};
        cr_assert_eq(nf_grouped_absmax_rows(nf_format_by_id(NF_FMT_Q4_G64_FP16), &src, &out, &err), NF_OK);
        cr_assert_eq(scales[0], 0x301D);
        cr_assert_eq(scales[1], 0x2750);
        static const int8_t want[8] = {7, -3, 1, 0, -7, 4, 1, 0};
        for (int i = 0; i < 8; i++) cr_assert_eq(codes[i], want[i], "code %d is %d", i, codes[i]);
        for (int i = 8; i < 64; i++) cr_assert_eq(codes[i], 0);
        cr_assert_eq(codes[64], -7);
    }
    {
        float v[32] = {1, -1, 0.5f, 0.25f, -0.125f};
        int8_t codes[32];
        uint16_t scales[1];
        nf_words out = {.rows = 1, .cols = 32, .codes = codes, .scales = scales};
        nf_src_rows src = {.type = NF_SRC_F32, .data = v, .rows = 1, .cols = 32};
        cr_assert_eq(nf_grouped_absmax_rows(nf_format_by_id(NF_FMT_Q8_G32_FP16), &src, &out, &err), NF_OK);
        cr_assert_eq(scales[0], 0x2008);
        static const int8_t want[6] = {127, -127, 64, 32, -16, 0};
        for (int i = 0; i < 6; i++) cr_assert_eq(codes[i], want[i]);
    }
    {
        float v[64] = {ldexpf(1.0f, -30)};
        int8_t codes[64];
        uint16_t scales[1];
        nf_words out = {.rows = 1, .cols = 64, .codes = codes, .scales = scales};
        nf_src_rows src = {.type = NF_SRC_F32, .data = v, .rows = 1, .cols = 64};
        cr_assert_eq(nf_grouped_absmax_rows(nf_format_by_id(NF_FMT_Q4_G64_FP16), &src, &out, &err), NF_OK);
        cr_assert_eq(scales[0], 0x0001);
        for (int i = 0; i < 64; i++) cr_assert_eq(codes[i], 0);
    }
    /* reciprocal multiply, not division: x with round(x / s) != round(x * f32(1 / s)) */
    int found = 0;
    for (uint32_t w = 0x2000; w < 0x5000 && found < 100; w += 7) {
        float s = nf_f16_to_f32((uint16_t)w), inv = 1.0f / s;
        for (int j = 0; j < 126 && found < 100; j++) {
            float mid = (float)((j + 0.5) * (double)s);
            for (int d = -3; d <= 3; d++) {
                float x = f32_of_bits(bits_of_f32(mid) + (uint32_t)d);
                float by_div = rintf(x / s), by_mul = rintf(x * inv);
                if (by_div == by_mul) continue;
                float v[2] = {127.0f * s, x};
                int8_t codes[2];
                uint16_t scales[1];
                nf_words out = {.rows = 1, .cols = 2, .codes = codes, .scales = scales};
                nf_src_rows src = {.type = NF_SRC_F32, .data = v, .rows = 1, .cols = 2};
                cr_assert_eq(nf_grouped_absmax_rows(nf_format_by_id(NF_FMT_Q8_G32_FP16), &src, &out, &err), NF_OK);
                cr_assert_eq(scales[0], w);
                cr_assert_eq(codes[1], (int)by_mul, "s=0x%04x x=%a: %d, reciprocal %d", w, (double)x, codes[1],
                             (int)by_mul);
                found++;
            }
        }
    }
    cr_assert(found >= 10);
    compared_values += 1;
}

/* The row kernel of a vector level (the tests call it directly). */
static nf_absmax_row_fn kernel_of(nf_simd_level level)
{
    nf_absmax_row_fn kernel = nf_absmax_kernels_for(level)->row;
    cr_assert(kernel != NULL);
    return kernel;
}

/* The kernel itself with shapes no registered format has (qmax far below the denominator), so
 * that the clamp binds on both sides and x * inv reaches 2^23 and beyond; checked against a
 * row reference built from the scalar primitives (nf_grouped_code, nf_absmax_simd_scale). */
static void check_kernel_clamp(nf_simd_level level)
{
    nf_absmax_row_fn kernel = kernel_of(level);
    uint64_t huge = 0, clamped = 0;
    static const nf_absmax_shape shapes[] = {{64, -8.0f, 7.0f, 1000.0f}, {32, -127.0f, 127.0f, 3.0e7f},
                                             {32, -2.0f, 1.0f, 1.0e9f},  {64, -32.0f, 31.0f, 31.0f},
                                             {16, -8.0f, 7.0f, 7.0f},    {128, -8.0f, 7.0f, 1.0e6f},
                                             {8, -16.0f, 15.0f, 17.5f},  {1, -8.0f, 7.0f, 1.0e7f}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const nf_absmax_shape *sh = &shapes[si];
        for (int rep = 0; rep < 60; rep++) {
            size_t k = 1 + rng32() % 300;
            nf_src_type t = float_types[rep % 3];
            float v[300];
            uint8_t data[300 * 4];
            double sc = ldexp(1.0, (int)(rng32() % 20) - 10);
            for (size_t i = 0; i < k; i++) {
                put_value(data, t, i, random_value(sc));
                v[i] = t == NF_SRC_F32   ? f32_of_bits(nf_method_le32(data + 4 * i))
                       : t == NF_SRC_F16 ? nf_f16_to_f32(nf_method_le16(data + 2 * i))
                                         : f32_of_bits((uint32_t)nf_method_le16(data + 2 * i) << 16);
            }
            size_t groups = (k + sh->group - 1) / sh->group;
            int8_t want_q[300], got_q[300];
            uint16_t want_s[300], got_s[300];
            bool want_ok = true;
            for (size_t gi = 0; gi < groups && want_ok; gi++) {
                size_t c0 = gi * sh->group, n = k - c0 < sh->group ? k - c0 : sh->group;
                uint32_t m = 0;
                for (size_t i = 0; i < n; i++) {
                    uint32_t b = bits_of_f32(v[c0 + i]) & 0x7FFFFFFFu;
                    m = b > m ? b : m;
                }
                if (m == 0) {
                    want_s[gi] = 0;
                    memset(want_q + c0, 0, n);
                    continue;
                }
                float inv;
                if (!nf_absmax_simd_scale(m, sh->denominator, &want_s[gi], &inv)) {
                    want_ok = false;
                    break;
                }
                for (size_t i = 0; i < n; i++) {
                    want_q[c0 + i] = nf_grouped_code(v[c0 + i], inv, sh->qmin, sh->qmax);
                    huge += fabsf(v[c0 + i] * inv) >= 8388608.0f; /* >= 2^23 before the clamp */
                    clamped += v[c0 + i] * inv > sh->qmax + 0.5f || v[c0 + i] * inv < sh->qmin - 0.5f;
                }
            }
            size_t measured = 0;
            bool ok = kernel(data, t, k, sh, got_q, got_s, NULL, &measured);
            cr_assert_eq(ok, want_ok, "shape %zu K=%zu", si, k);
            if (!ok) continue;
            for (size_t i = 0; i < k; i++)
                cr_assert_eq(got_q[i], want_q[i], "%s shape %zu K=%zu col %zu: %d, reference %d",
                             nf_simd_level_name(level), si, k, i, got_q[i], want_q[i]);
            for (size_t gi = 0; gi < groups; gi++) cr_assert_eq(got_s[gi], want_s[gi]);
            compared_values += k;
        }
    }
    cr_log_info("kernel_clamp: %lu values clamped, %lu of them at or beyond 2^23", (unsigned long)clamped,
                (unsigned long)huge);
    cr_assert(clamped > 1000 && huge > 100);
}

/* The rounding instruction the kernels use, against rint (nearest even in the default
 * environment) on ties, values >= 2^23, signed zeros and random values. */
#if HAVE_X86
__attribute__((target("avx2"))) static void round8(const float *in, float *out)
{
    _mm256_storeu_ps(out, _mm256_round_ps(_mm256_loadu_ps(in), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

__attribute__((target("avx512f"))) static void round16(const float *in, float *out)
{
    _mm512_storeu_ps(out, _mm512_roundscale_ps(_mm512_loadu_ps(in), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
#endif

#if HAVE_NEON
static void round4(const float *in, float *out) { vst1q_f32(out, vrndnq_f32(vld1q_f32(in))); }
#endif

static void check_rounding_instruction(nf_simd_level level)
{
#if HAVE_X86 || HAVE_NEON
    enum { N = 4096 };
    static float in[N], out[N];
    size_t n = 0;
    for (int m = -300; m < 300; m++) in[n++] = (float)m + 0.5f; /* ties, even and odd, both signs */
    for (int e = 22; e <= 30; e++) { /* 2^22 + 0.5 ties, then already-integral values >= 2^23 */
        float b = ldexpf(1.0f, e);
        in[n++] = b + 0.5f;
        in[n++] = -(b + 0.5f);
        in[n++] = b + 1.0f;
        in[n++] = -b - 3.0f;
    }
    in[n++] = 0.0f;
    in[n++] = -0.0f;
    in[n++] = -0.4f;
    in[n++] = 0.49999997f;
    in[n++] = -0.50000006f;
    in[n++] = 16777215.0f;
    in[n++] = FLT_MAX;
    in[n++] = -FLT_TRUE_MIN;
    while (n < N) in[n++] = (float)(uniform() * ldexp(1.0, (int)(rng32() % 30)));
    for (size_t i = 0; i < N; i += 16) {
#if HAVE_X86
        if (level == NF_SIMD_AVX512) round16(in + i, out + i);
        else {
            round8(in + i, out + i);
            round8(in + i + 8, out + i + 8);
        }
#else
        for (size_t j = 0; j < 16; j += 4) round4(in + i + j, out + i + j);
#endif
    }
    for (size_t i = 0; i < N; i++) {
        float want = rintf(in[i]);
        cr_assert_eq(bits_of_f32(out[i]), bits_of_f32(want), "%s round(%a) = %a, rint %a", nf_simd_level_name(level),
                     (double)in[i], (double)out[i], (double)want);
    }
    compared_values += N;
#else
    (void)level;
#endif
}

/* The kernels compute a block's scale words with VCVTPS2PH (imm8 = 0: nearest even).  Checked
 * against nf_f32_to_f16 on every binary16 word, every rounding midpoint (ties of both parities,
 * the subnormal ones and the overflow threshold 65520) and their binary32 neighbours; then
 * through the whole encoder with amax = midpoint * qmax, so raw = amax / qmax is exactly a tie. */
#if HAVE_X86
__attribute__((target("avx2,f16c"))) static void to_f16_x8(const float *in, uint16_t *out)
{
    _mm_storeu_si128((__m128i *)(void *)out, _mm256_cvtps_ph(_mm256_loadu_ps(in), _MM_FROUND_TO_NEAREST_INT));
}

__attribute__((target("avx512f"))) static void to_f16_x16(const float *in, uint16_t *out)
{
    _mm256_storeu_si256((__m256i *)(void *)out, _mm512_cvtps_ph(_mm512_loadu_ps(in), _MM_FROUND_TO_NEAREST_INT));
}
#endif

#if HAVE_NEON
static void to_f16_x4(const float *in, uint16_t *out)
{
    vst1_u16(out, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(in))));
}
#endif

static void check_scale_rounding(nf_simd_level level)
{
#if HAVE_X86 || HAVE_NEON
    enum { PER = 5 };
    size_t n = 0x7C00u * PER;
    float *in = malloc(sizeof(float) * (n + 16));
    uint16_t *out = malloc(sizeof(uint16_t) * (n + 16));
    for (uint32_t w = 0; w < 0x7C00u; w++) {
        float v = nf_f16_to_f32((uint16_t)w);
        /* the midpoint to the next word: 12 significant bits, exact in binary32 (65520 for 0x7BFF) */
        float mid = (float)(((double)v + (w == 0x7BFFu ? 65536.0 : (double)nf_f16_to_f32((uint16_t)(w + 1)))) / 2.0);
        float *o = in + (size_t)w * PER;
        o[0] = v;
        o[1] = mid;
        o[2] = f32_of_bits(bits_of_f32(mid) + 1);
        o[3] = mid > 0.0f ? f32_of_bits(bits_of_f32(mid) - 1) : 0.0f;
        o[4] = f32_of_bits(bits_of_f32(v) + 1);
    }
    for (size_t i = n; i < n + 16; i++) in[i] = 0.0f;
    for (size_t i = 0; i < n; i += 16) {
#if HAVE_X86
        if (level == NF_SIMD_AVX512) to_f16_x16(in + i, out + i);
        else {
            to_f16_x8(in + i, out + i);
            to_f16_x8(in + i + 8, out + i + 8);
        }
#else
        for (size_t j = 0; j < 16; j += 4) to_f16_x4(in + i + j, out + i + j);
#endif
    }
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(out[i], nf_f32_to_f16(in[i]), "%s VCVTPS2PH(%a) = 0x%04x, reference 0x%04x",
                     nf_simd_level_name(level), (double)in[i], out[i], nf_f32_to_f16(in[i]));
    compared_values += n;
    /* through the encoder: one group per (word, variant), amax = value * qmax exactly */
    for (int fi = 0; fi < 4; fi++) {
        const nf_format *f = nf_format_by_id(grouped_ids[fi]);
        uint64_t g = f->group_size, per_row = 64, cols = per_row * g;
        size_t groups = 0;
        for (size_t i = 0; i < n; i++)
            if (in[i] > 0.0f && in[i] < 65520.0f) groups++; /* overflow: check_extremes */
        uint64_t rows = (groups + per_row - 1) / per_row;
        float *v = calloc((size_t)(rows * cols), sizeof(float));
        size_t gi = 0;
        for (size_t i = 0; i < n; i++) {
            if (!(in[i] > 0.0f && in[i] < 65520.0f)) continue;
            double a = (double)in[i] * f->encoder_qmax;
            float *grp = v + gi * g;
            grp[0] = (float)(gi % 2 ? -a : a);
            if (i % PER < 2) /* words and midpoints: raw = amax / qmax is exactly them */
                cr_assert_eq((double)fabsf(grp[0]), a, "amax %a not exact", a);
            for (uint64_t c = 1; c < g; c += 5) grp[c] = (float)(uniform() * a);
            gi++;
        }
        cr_assert_eq(check_values(level, f->id, NF_SRC_F32, v, rows, cols, "scale ties"), NF_OK);
        free(v);
    }
    free(in);
    free(out);
#else
    (void)level;
#endif
}

/* The kernel measuring as it encodes (absmax_simd.h): the figures it adds are those of the
 * statistics reference over the words it wrote, bit for bit, for the four formats, the three
 * source types and rows of one to several statistics blocks with partial groups; a row the
 * kernel declines (a non-finite value in a later block) has the blocks before the declined one
 * measured, no more, and nf_grouped_absmax_rows_measured's figures equal the reference's. */
#include "stats/stats.h"

static void same_stats(const nf_errstats *a, const nf_errstats *b, const char *what)
{
    cr_assert_eq(a->count, b->count, "%s: count %llu vs %llu", what, (unsigned long long)a->count,
                 (unsigned long long)b->count);
    cr_assert_eq(a->skipped, b->skipped, "%s: skipped", what);
    cr_assert_eq(bits_of_f32(a->max_abs), bits_of_f32(b->max_abs), "%s: max", what);
    cr_assert_eq(memcmp(a->sse.w, b->sse.w, sizeof a->sse.w), 0, "%s: sse %a vs %a", what, nf_xsum_value(&a->sse),
                 nf_xsum_value(&b->sse));
    cr_assert_eq(memcmp(a->ssx.w, b->ssx.w, sizeof a->ssx.w), 0, "%s: ssx", what);
}

/* nf_grouped_absmax_rows_measured over rows x k random values: the figures of the scalar
 * reference over the words it wrote. */
static void check_measured_rows(const nf_format *f, size_t rows, size_t k, const char *what)
{
    float *v = malloc(rows * k * sizeof *v);
    int8_t *q = malloc(rows * k);
    uint16_t *sc = malloc(rows * k * 2);
    cr_assert(v && q && sc);
    for (size_t i = 0; i < rows * k; i++) v[i] = random_value(0.1);
    nf_words out = {.rows = rows, .cols = k, .codes = q, .scales = sc};
    nf_src_rows src = {.type = NF_SRC_F32, .data = v, .rows = rows, .cols = k};
    nf_errstats got, want;
    nf_errstats_init(&got);
    nf_errstats_init(&want);
    nf_error err;
    cr_assert_eq(nf_grouped_absmax_rows_measured(f, &src, &out, &got, &err), NF_OK, "%s", err.message);
    size_t groups = (k + f->group_size - 1) / f->group_size;
    for (size_t r = 0; r < rows; r++)
        nf_stats_kernels_scalar.row_grouped(v + r * k, NF_STATS_F32, q + r * k, sc + r * groups, k, f->group_size,
                                            &want);
    same_stats(&got, &want, what);
    free(v);
    free(q);
    free(sc);
}

static void check_measured(nf_simd_level level)
{
    nf_absmax_row_fn kernel = kernel_of(level);
    static const size_t ks[] = {1, 17, 64, 200, 4095, 4096, 4097, 8192, 3 * 4096 + 70};
    enum { MAXK = 3 * 4096 + 70 };
    uint8_t *data = malloc(MAXK * 4);
    int8_t *codes = malloc(MAXK);
    uint16_t *scales = malloc(MAXK * 2);
    cr_assert(data && codes && scales);
    for (int fi = 0; fi < 4; fi++)
        for (int ti = 0; ti < 3; ti++)
            for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
                const nf_format *f = nf_format_by_id(grouped_ids[fi]);
                nf_src_type t = float_types[ti];
                size_t k = ks[ki];
                nf_absmax_shape sh = {f->group_size, (float)f->code_min, (float)f->code_max, (float)f->encoder_qmax};
                for (size_t i = 0; i < k; i++) put_value(data, t, i, random_value(ldexp(1.0, (int)(i % 5) - 3)));
                nf_errstats got, want;
                nf_errstats_init(&got);
                nf_errstats_init(&want);
                size_t measured = 99;
                cr_assert(kernel(data, t, k, &sh, codes, scales, &got, &measured));
                cr_assert_eq(measured, k, "%s K=%zu: measured %zu", f->name, k, measured);
                nf_stats_kernels_scalar.row_grouped(data, nf_absmax_stats_source(t), codes, scales, k, f->group_size,
                                                    &want);
                char what[96];
                snprintf(what, sizeof what, "%s %s %s K=%zu", nf_simd_level_name(level), f->name, nf_src_type_name(t),
                         k);
                same_stats(&got, &want, what);
                if (k >= 8 * f->group_size) {
                    /* groups of zeros (pruned or padded weights): encoded without arithmetic, and
                     * still as many steps of the statistics' runs as the reference counts */
                    static const size_t zero_groups[] = {1, 2, 5};
                    for (size_t z = 0; z < 3; z++)
                        for (size_t c = zero_groups[z] * f->group_size; c < (zero_groups[z] + 1) * f->group_size; c++)
                            put_word(data, t, c, (c & 1) ? (t == NF_SRC_F32 ? 0x80000000u : 0x8000u) : 0u);
                    nf_errstats gz, wz;
                    nf_errstats_init(&gz);
                    nf_errstats_init(&wz);
                    cr_assert(kernel(data, t, k, &sh, codes, scales, &gz, &measured));
                    nf_stats_kernels_scalar.row_grouped(data, nf_absmax_stats_source(t), codes, scales, k,
                                                        f->group_size, &wz);
                    char wzs[128];
                    snprintf(wzs, sizeof wzs, "%s, groups 1, 2 and 5 zero", what);
                    same_stats(&gz, &wz, wzs);
                }
                if (k > 4096 + 64) {
                    /* a NaN in the second block: the first is measured, the rest is not */
                    put_word(data, t, 4096 + 33, t == NF_SRC_F32 ? 0x7FC00000u : 0x7FC0u);
                    nf_errstats part, first;
                    nf_errstats_init(&part);
                    nf_errstats_init(&first);
                    measured = 99;
                    cr_assert(!kernel(data, t, k, &sh, codes, scales, &part, &measured), "%s: a NaN declines", what);
                    cr_assert_eq(measured, 4096, "%s: measured %zu after a NaN in the second block", what, measured);
                    nf_stats_kernels_scalar.row_grouped(data, nf_absmax_stats_source(t), codes, scales, 4096,
                                                        f->group_size, &first);
                    same_stats(&part, &first, what);
                }
                compared_values += k;
            }
    /* group sizes no registered format has (a copied format): the kernel measures only the ones
     * its lanes fit (multiples of 16), the caller the others; either way the reference's figures */
    static const unsigned odd_groups[] = {1, 2, 4, 8, 16, 128};
    for (size_t gi = 0; gi < sizeof odd_groups / sizeof odd_groups[0]; gi++) {
        nf_format f = *nf_format_by_id(NF_FMT_Q8_G32_FP16);
        f.group_size = odd_groups[gi];
        char what[64];
        snprintf(what, sizeof what, "%s group %u", nf_simd_level_name(level), f.group_size);
        check_measured_rows(&f, 2, 5000, what);
    }
    /* the method's measured rows: the figures of the reference over its words, any row count */
    for (int fi = 0; fi < 4; fi++) {
        const nf_format *f = nf_format_by_id(grouped_ids[fi]);
        check_measured_rows(f, 3, 5000, f->name);
    }
    free(data);
    free(codes);
    free(scales);
}

/* ------------------------------------------------------------------ one suite per variant */

static void restore(void) { nf_simd_force(nf_simd_best()); }

#define VARIANT_TEST(suite, level, check) \
    Test(suite, check, .fini = restore)   \
    {                                     \
        require(level);                   \
        check_##check(level);             \
        report(#check, level);            \
    }

#define VARIANT_SUITE(suite, level)                  \
    VARIANT_TEST(suite, level, random)               \
    VARIANT_TEST(suite, level, random_words)         \
    VARIANT_TEST(suite, level, ties)                 \
    VARIANT_TEST(suite, level, subnormals)           \
    VARIANT_TEST(suite, level, zero_and_partial)     \
    VARIANT_TEST(suite, level, extremes)             \
    VARIANT_TEST(suite, level, nonfinite)            \
    VARIANT_TEST(suite, level, page_end)             \
    VARIANT_TEST(suite, level, known_answers)        \
    VARIANT_TEST(suite, level, kernel_clamp)         \
    VARIANT_TEST(suite, level, rounding_instruction) \
    VARIANT_TEST(suite, level, scale_rounding)       \
    VARIANT_TEST(suite, level, measured)

VARIANT_SUITE(simd_avx2, NF_SIMD_AVX2)
VARIANT_SUITE(simd_avx512, NF_SIMD_AVX512)
VARIANT_SUITE(simd_neon, NF_SIMD_NEON)

/* ------------------------------------------------------------------ the dispatcher */

/* Criterion runs each test in a fresh process, so the environment is read here for the first
 * time. */
Test(simd_dispatch, environment_scalar)
{
    setenv("NINFER_SIMD", "scalar", 1);
    cr_assert_str_eq(nf_simd_name(), "scalar");
    cr_assert_eq(nf_simd_active(), NF_SIMD_SCALAR);
    cr_assert_str_eq(nf_simd_reason(), "");
}

Test(simd_dispatch, environment_best_and_fallback)
{
    setenv("NINFER_SIMD", "avx512", 1);
    nf_simd_level best = nf_simd_best();
    cr_assert_eq(nf_simd_active(), best);
    if (best == NF_SIMD_AVX512) cr_assert_str_eq(nf_simd_reason(), "");
    else cr_assert(strstr(nf_simd_reason(), "lacks") != NULL, "%s", nf_simd_reason());
}

Test(simd_dispatch, environment_unknown_name)
{
    setenv("NINFER_SIMD", "sse9", 1);
    cr_assert_eq(nf_simd_active(), nf_simd_best());
    cr_assert(strstr(nf_simd_reason(), "NINFER_SIMD=sse9") != NULL, "%s", nf_simd_reason());
}

Test(simd_dispatch, default_is_best)
{
    unsetenv("NINFER_SIMD");
    cr_assert_eq(nf_simd_active(), nf_simd_best());
    cr_assert_str_eq(nf_simd_name(), nf_simd_level_name(nf_simd_best()));
    cr_assert_eq(nf_simd_best(), nf_simd_cpu_level());
    /* a CPU without AVX-512 is no failure: the variant suites skip its kernels by name (a
     * warning would make Criterion 2.4 exit 1, and the verdict would depend on the CPU) */
    cr_log_info("kernel variant on this CPU: %s", nf_simd_name());
}

/* NINFER_SIMD=L on a CPU that has L: the process runs as on a CPU whose best level is L. */
static void check_ceiling(nf_simd_level cap)
{
    if (nf_simd_rank(cap) < 0 || nf_simd_rank(nf_simd_cpu_level()) < nf_simd_rank(cap))
        cr_skip_test("the CPU lacks %s: the ceiling cannot be checked here", nf_simd_level_name(cap));
    cr_assert_eq(nf_simd_active(), cap);
    cr_assert_eq(nf_simd_best(), cap);
    cr_assert_str_eq(nf_simd_reason(), "");
    int above = -1; /* the level above cap in this machine's chain (common/cpu.h), if any */
    for (int l = 0; l < NF_SIMD_LEVEL_COUNT; l++) {
        int r = nf_simd_rank((nf_simd_level)l);
        cr_assert_eq(nf_simd_supported((nf_simd_level)l), r >= 0 && r <= nf_simd_rank(cap), "level %s",
                     nf_simd_level_name((nf_simd_level)l));
        if (r == nf_simd_rank(cap) + 1) above = l;
    }
    if (above >= 0) {
        /* the level above is refused: for NINFER_SIMD's sake on a CPU that has it, else (an
         * AVX2-only CPU under NINFER_SIMD=avx2) for the CPU's */
        cr_assert_eq(nf_simd_force((nf_simd_level)above), cap);
        const char *why = nf_simd_rank(nf_simd_cpu_level()) > nf_simd_rank(cap) ? "NINFER_SIMD rules it out"
                                                                                : "the CPU lacks";
        cr_assert(strstr(nf_simd_reason(), why) != NULL, "%s", nf_simd_reason());
    }
}

Test(simd_dispatch, environment_ceiling_avx2)
{
    setenv("NINFER_SIMD", "avx2", 1);
    check_ceiling(NF_SIMD_AVX2);
}

Test(simd_dispatch, environment_ceiling_scalar)
{
    setenv("NINFER_SIMD", "scalar", 1);
    check_ceiling(NF_SIMD_SCALAR);
}

Test(simd_dispatch, environment_ceiling_neon)
{
    setenv("NINFER_SIMD", "neon", 1);
    check_ceiling(NF_SIMD_NEON);
}

/* Each machine's levels form a chain from scalar; the other machine's levels have no rank. */
Test(simd_dispatch, chains)
{
    cr_assert_eq(nf_simd_rank(NF_SIMD_SCALAR), 0);
    cr_assert_eq(nf_simd_rank(NF_SIMD_LEVEL_COUNT), -1);
#if NF_X86_KERNELS
    cr_assert_eq(nf_simd_rank(NF_SIMD_AVX2), 1);
    cr_assert_eq(nf_simd_rank(NF_SIMD_AVX512), 2);
    cr_assert_eq(nf_simd_rank(NF_SIMD_NEON), -1);
    cr_assert(!nf_simd_supported(NF_SIMD_NEON));
#elif NF_ARM_KERNELS
    cr_assert_eq(nf_simd_rank(NF_SIMD_NEON), 1);
    cr_assert_eq(nf_simd_rank(NF_SIMD_AVX2), -1);
    cr_assert_eq(nf_simd_rank(NF_SIMD_AVX512), -1);
    cr_assert(!nf_simd_supported(NF_SIMD_AVX2));
    cr_assert_eq(nf_simd_cpu_level(), NF_SIMD_NEON); /* every aarch64 CPU has it */
#endif
    cr_assert_str_eq(nf_simd_level_name(NF_SIMD_NEON), "neon");
}

Test(simd_dispatch, force_and_fallback)
{
    cr_assert_eq(nf_simd_force(NF_SIMD_SCALAR), NF_SIMD_SCALAR);
    cr_assert_str_eq(nf_simd_name(), "scalar");
    cr_assert_str_eq(nf_simd_reason(), "");
    for (int l = 0; l < NF_SIMD_LEVEL_COUNT; l++) {
        nf_simd_level got = nf_simd_force((nf_simd_level)l);
        if (nf_simd_supported((nf_simd_level)l)) {
            cr_assert_eq(got, (nf_simd_level)l);
            cr_assert_str_eq(nf_simd_reason(), "");
        } else {
            /* the CPU lacks it, or the NINFER_SIMD ceiling of this run rules it out */
            cr_assert_eq(got, nf_simd_best());
            cr_assert(strstr(nf_simd_reason(), "lacks") != NULL || strstr(nf_simd_reason(), "rules it out") != NULL,
                      "%s", nf_simd_reason());
        }
    }
    cr_assert_eq(nf_simd_force(NF_SIMD_LEVEL_COUNT), nf_simd_best());
    cr_assert(strstr(nf_simd_reason(), "nf_simd_force") != NULL, "%s", nf_simd_reason());
    cr_assert_null(nf_simd_level_name(NF_SIMD_LEVEL_COUNT));
    cr_assert_str_eq(nf_simd_level_name(NF_SIMD_AVX2), "avx2");
    cr_assert(nf_simd_supported(NF_SIMD_SCALAR));
    cr_assert(!nf_simd_supported(NF_SIMD_LEVEL_COUNT));
}
