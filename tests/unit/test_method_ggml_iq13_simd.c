/* ggml_quantize's vector kernels of IQ3_XXS, IQ3_S, IQ1_S, IQ1_M and Q2_0 (method/simd/ggml_simd.h):
 * at every level the CPU has (the others are skipped, and say so), the bytes of these encoders
 * equal ggml's on the vectors of tests/data/gguf and equal the scalar level's on generated rows of
 * every kind -- random scales over 16 decades, zeros (whole rows, whole groups, a single value),
 * outliers, subnormals, a huge dynamic range, ties (values on a half grid, constant groups,
 * repeated extremes of both signs) -- with and without an importance vector.  The level is
 * switched with nf_simd_force.  (test_method_ggml_quant_simd.c does the same for the other
 * types.) */
#include <criterion/criterion.h>

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/method.h>

#include "common/cpu.h"
#include "method/simd/ggml_simd.h"
#include "support/test_data.h"

#define ROWS 16
#define COLS 512

typedef struct qtype {
    nf_format_id id;
    const char *stem;
    unsigned qk, bb;
    bool iq; /* MANIFEST.md: the IQ fixtures were written with imatrix.f32 */
} qtype;

static const qtype TYPES[] = {
    {NF_FMT_GGUF_IQ3_XXS, "iq3_xxs", 256, 98, true}, {NF_FMT_GGUF_IQ3_S, "iq3_s", 256, 110, true},
    {NF_FMT_GGUF_IQ1_S, "iq1_s", 256, 50, true},     {NF_FMT_GGUF_IQ1_M, "iq1_m", 256, 56, true},
    {NF_FMT_GGUF_Q2_0, "q2_0", 64, 18, false},
};
#define NTYPES (sizeof TYPES / sizeof TYPES[0])

static size_t row_bytes(const qtype *t, uint64_t cols) { return (size_t)(cols / t->qk * t->bb); }

#define GGML_ROWS_SEED 0x2545F4914F6CDD1Du
#define GGML_ROWS_TIES 16
#define GGML_ROWS_ZERO_SUPER 1
#include "test_ggml_rows_util.h"

static void require(nf_simd_level level)
{
    if (!nf_simd_supported(level))
        cr_skip_test("the CPU lacks the %s level (best here: %s): its IQ3 / IQ1 / Q2_0 kernels are NOT tested here",
                     nf_simd_level_name(level), nf_simd_level_name(nf_simd_best()));
    cr_assert_eq(nf_simd_force(level), level, "could not force %s: %s", nf_simd_level_name(level), nf_simd_reason());
    cr_assert_str_eq(nf_gq_kernels_active()->name, nf_simd_level_name(level));
}

static void ggml_vectors(nf_simd_level level)
{
    if (level != NF_SIMD_SCALAR) require(level);
    float *x = load_f32("source.f32", ROWS * COLS), *imp = load_f32("imatrix.f32", COLS);
    float *sp = load_f32("extra/special.f32", 6 * COLS), *sp1 = load_f32("extra/iq1.special.f32", 6 * COLS);
    char file[96];
    for (size_t i = 0; i < NTYPES; i++) {
        const qtype *t = &TYPES[i];
        /* IQ1_S has no fixtures without importance: ggml requires one */
        const bool plain = t->id != NF_FMT_GGUF_IQ1_S;
        snprintf(file, sizeof file, "%s.qbytes", t->stem);
        expect_ggml(level, t, file, x, ROWS, t->iq ? imp : NULL);
        if (plain) {
            snprintf(file, sizeof file, "extra/%s.%s.qbytes", t->stem, t->iq ? "plain" : "imatrix");
            expect_ggml(level, t, file, x, ROWS, t->iq ? NULL : imp);
            snprintf(file, sizeof file, "extra/%s.special.qbytes", t->stem);
            expect_ggml(level, t, file, sp, 6, NULL);
        }
        snprintf(file, sizeof file, "extra/%s.special.imatrix.qbytes", t->stem);
        expect_ggml(level, t, file, sp, 6, imp);
        if (t->id == NF_FMT_GGUF_IQ1_S || t->id == NF_FMT_GGUF_IQ1_M) {
            snprintf(file, sizeof file, "extra/%s.iq1special.imatrix.qbytes", t->stem);
            expect_ggml(level, t, file, sp1, 6, imp);
        }
        if (t->id == NF_FMT_GGUF_IQ1_M) expect_ggml(level, t, "extra/iq1_m.iq1special.qbytes", sp1, 6, NULL);
    }
    free(sp1);
    free(sp);
    free(imp);
    free(x);
}

Test(ggml_iq13_simd, ggml_vectors_scalar) { ggml_vectors(NF_SIMD_SCALAR); }
Test(ggml_iq13_simd, ggml_vectors_avx2) { ggml_vectors(NF_SIMD_AVX2); }
Test(ggml_iq13_simd, ggml_vectors_avx512) { ggml_vectors(NF_SIMD_AVX512); }

/* ------------------------------------------------------------------ generated rows */

static void generated(nf_simd_level level)
{
    require(level);
    expect_rows_same_as_scalar(level, TYPES, NTYPES, 8, 4);
}

Test(ggml_iq13_simd, generated_rows_avx2) { generated(NF_SIMD_AVX2); }
Test(ggml_iq13_simd, generated_rows_avx512) { generated(NF_SIMD_AVX512); }

/* Every level's table has the entries these encoders call. */
Test(ggml_iq13_simd, tables_are_complete)
{
    for (int l = 0; l < NF_SIMD_LEVEL_COUNT; l++) {
        const nf_gq_kernels *k = nf_gq_kernels_for((nf_simd_level)l);
        cr_assert(k && k->iq3_trials && k->iq1s_split && k->iq1m_split && k->iq1_nearest && k->codes_q2_0 && k->iq1_order, "level %d", l);
    }
}
