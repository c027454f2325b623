/* The report's fast represented values (nf_convert_words_values, used by exec_jobs.c) against
 * nf_words_to_f32, bit for bit but for NaN payloads, on random words of every format a method or
 * import writes (arbitrary words, NaN and infinite scales included: both compute the same
 * operations). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "convert/convert_impl.h"
#include "support/test_rng.h"

TEST_RNG(0x9E3779B97F4A7C15ull)


static void fill(void *p, size_t bytes)
{
    uint8_t *b = p;
    for (size_t i = 0; i < bytes; i++) b[i] = (uint8_t)rng32();
}

static void check_format(nf_format_id id, uint64_t cols)
{
    const nf_format *f = nf_format_by_id(id);
    cr_assert_not_null(f);
    const nf_layout *l = nf_layout_default_for(f);
    cr_assert_not_null(l, "%s has no default layout", f->name);
    uint64_t rows = f->category == NF_CAT_NVFP4 ? 128 : 7, shape[2] = {rows, cols};
    nf_geometry g;
    nf_error err = {0};
    cr_assert_eq(nf_geometry_init(&g, l, f, 2, shape, 1, &err), NF_OK, "%s: %s", f->name, err.message);
    for (int rep = 0; rep < 20; rep++) {
        nf_words w;
        cr_assert_eq(nf_words_alloc(&w, &g, rows, &err), NF_OK, "%s", err.message);
        size_t n = (size_t)(rows * cols);
        if (w.w16) fill(w.w16, n * 2);
        if (w.w32) fill(w.w32, n * 4);
        if (w.codes) fill(w.codes, n);
        if (w.codes8) fill(w.codes8, n);
        if (w.scales) fill(w.scales, (size_t)(f->category == NF_CAT_GROUPED ? rows * g.logical_groups : rows) * 2);
        if (w.scales8) fill(w.scales8, n / 16);
        if (w.codes8 && f->category == NF_CAT_NVFP4)
            for (size_t i = 0; i < n; i++) w.codes8[i] &= 15;
        if (w.divisors) w.divisors[0] = 0x3F800000u + (rng32() & 0xFFFFu);
        static const uint16_t specials[7] = {0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E01, 0x7F80, 0x0001};
        if (rep == 0 && w.scales) /* signed zeros, infinities and NaN scales */
            for (size_t r = 0; r < rows && r < 7; r++) w.scales[r] = specials[r];
        float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
        nf_error e1 = {0}, e2 = {0};
        nf_status s1 = nf_words_to_f32(&g, &w, 0, a, &e1);
        nf_status s2 = nf_convert_words_values(&g, &w, 0, b, &e2);
        cr_assert_eq(s2, s1, "%s: status %d vs %d (%s / %s)", f->name, (int)s2, (int)s1, e2.message, e1.message);
        if (s1 == NF_OK)
            for (size_t i = 0; i < n; i++) {
                uint32_t ua, ub;
                memcpy(&ua, &a[i], 4);
                memcpy(&ub, &b[i], 4);
                /* two NaNs are equal whatever their payloads (docs/decisions.md D14): when both factors
                 * of a product are NaN, which payload survives depends on the compiler's operand order
                 * and the machine (x86-64 and aarch64 differ) */
                if (isnan(a[i]) && isnan(b[i])) continue;
                cr_assert_eq(ub, ua, "%s cols %lu value %zu: 0x%08x vs nf_words_to_f32 0x%08x", f->name,
                             (unsigned long)cols, i, ub, ua);
            }
        free(a);
        free(b);
        nf_words_free(&w);
    }
}

Test(convert_stats_values, every_written_format)
{
    static const nf_format_id ids[] = {NF_FMT_BF16,
                                       NF_FMT_FP32,
                                       NF_FMT_INT32,
                                       NF_FMT_Q2_G64_FP16,
                                       NF_FMT_Q4_G64_FP16,
                                       NF_FMT_Q5_G64_FP16,
                                       NF_FMT_Q6_G64_FP16,
                                       NF_FMT_Q8_G32_FP16,
                                       NF_FMT_T2_G128_FP16,
                                       NF_FMT_FP8_E4M3FN_ROW_BF16,
                                       NF_FMT_FP8_E4M3FN_ROW_FP16,
                                       NF_FMT_NVFP4,
                                       NF_FMT_GGUF_Q8_0};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        check_format(ids[i], 256);
        const nf_format *f = nf_format_by_id(ids[i]);
        if (f->category != NF_CAT_NVFP4 && f->category != NF_CAT_GGUF) {
            check_format(ids[i], 200);
            check_format(ids[i], 33);
        }
    }
}
