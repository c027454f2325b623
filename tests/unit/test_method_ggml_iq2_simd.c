/* ggml_quantize's IQ2 vector searches (method/simd/ggml_iq2_simd.h): at every level the CPU has
 * (the others are skipped, and say so), the bytes of IQ2_XXS, IQ2_XS and IQ2_S equal ggml's on
 * the vectors of tests/data/gguf and the scalar level's on generated rows of every kind -- random
 * scales over 16 decades, zeros, outliers, subnormals, a huge range, ties, constants, single
 * values, repeated extremes -- with and without an importance vector; and the trials kernel
 * itself gives the scalar's points, grid flags and sums for every trial of generated groups,
 * ties and NaN weights included, and the scalar's weights, magnitudes and sign bits.  The level is switched with nf_simd_force. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/method.h>

#include "common/cpu.h"
#include "method/ggml_grid.h"
#include "method/simd/ggml_iq2_simd.h"
#include "support/test_data.h"

#define ROWS 16
#define COLS 512

typedef struct qtype {
    nf_format_id id;
    const char *stem;
    unsigned bb;
    nf_ggml_grid8 grid;
    int npoint, ntrial;
} qtype;

static const qtype TYPES[] = {
    {NF_FMT_GGUF_IQ2_XXS, "iq2_xxs", 66, NF_GGML_GRID8_IQ2XXS, 4, 13},
    {NF_FMT_GGUF_IQ2_XS, "iq2_xs", 74, NF_GGML_GRID8_IQ2XS, 2, 19},
    {NF_FMT_GGUF_IQ2_S, "iq2_s", 82, NF_GGML_GRID8_IQ2S, 2, 19},
};
#define NTYPES (sizeof TYPES / sizeof TYPES[0])

static size_t row_bytes(const qtype *t, uint64_t cols) { return (size_t)(cols / 256 * t->bb); }

#define GGML_ROWS_SEED 0x9E3779B97F4A7C15u
#define GGML_ROWS_TIES 4
#define GGML_ROWS_ZERO_SUPER 0
#include "test_ggml_rows_util.h"

static void require(nf_simd_level level)
{
    if (!nf_simd_supported(level))
        cr_skip_test("the CPU lacks the %s level (best here: %s): its IQ2 searches are NOT tested here",
                     nf_simd_level_name(level), nf_simd_level_name(nf_simd_best()));
    cr_assert_eq(nf_simd_force(level), level, "could not force %s: %s", nf_simd_level_name(level), nf_simd_reason());
    cr_assert_str_eq(nf_iq2_kernels_active()->name, nf_simd_level_name(level));
}

static void ggml_vectors(nf_simd_level level)
{
    if (level != NF_SIMD_SCALAR) require(level);
    float *x = load_f32("source.f32", ROWS * COLS), *imp = load_f32("imatrix.f32", COLS);
    float *sp = load_f32("extra/special.f32", 6 * COLS);
    char file[96];
    for (size_t i = 0; i < NTYPES; i++) {
        const qtype *t = &TYPES[i];
        /* MANIFEST.md: written with imatrix.f32; ggml writes IQ2_XXS and IQ2_XS only with one */
        snprintf(file, sizeof file, "%s.qbytes", t->stem);
        expect_ggml(level, t, file, x, ROWS, imp);
        snprintf(file, sizeof file, "extra/%s.special.imatrix.qbytes", t->stem);
        expect_ggml(level, t, file, sp, 6, imp);
        if (t->id == NF_FMT_GGUF_IQ2_S) {
            expect_ggml(level, t, "extra/iq2_s.plain.qbytes", x, ROWS, NULL);
            expect_ggml(level, t, "extra/iq2_s.special.qbytes", sp, 6, NULL);
        }
    }
    free(sp);
    free(imp);
    free(x);
}

Test(ggml_iq2_simd, ggml_vectors_scalar) { ggml_vectors(NF_SIMD_SCALAR); }
Test(ggml_iq2_simd, ggml_vectors_avx2) { ggml_vectors(NF_SIMD_AVX2); }
Test(ggml_iq2_simd, ggml_vectors_avx512) { ggml_vectors(NF_SIMD_AVX512); }
Test(ggml_iq2_simd, ggml_vectors_neon) { ggml_vectors(NF_SIMD_NEON); }

/* ------------------------------------------------------------------ generated rows */

static void generated(nf_simd_level level)
{
    require(level);
    expect_rows_same_as_scalar(level, TYPES, NTYPES, 8, IMP_KINDS);
}

Test(ggml_iq2_simd, generated_rows_avx2) { generated(NF_SIMD_AVX2); }
Test(ggml_iq2_simd, generated_rows_avx512) { generated(NF_SIMD_AVX512); }
Test(ggml_iq2_simd, generated_rows_neon) { generated(NF_SIMD_NEON); }

/* ------------------------------------------------------------------ the kernel itself */

typedef struct trial_out {
    bool ok;
    uint16_t code[NF_IQ2_MAX_POINTS * NF_IQ2_TRIAL_ROOM];
    bool on[NF_IQ2_MAX_POINTS * NF_IQ2_TRIAL_ROOM];
    float sumqx[NF_IQ2_TRIAL_ROOM], sumq2[NF_IQ2_TRIAL_ROOM];
} trial_out;

static void run_trials(const nf_iq2_kernels *k, const nf_ggml_grid *g, const qtype *t, const float *id,
                       const float *scale, const float *xval, const float *w, const float *waux, trial_out *o)
{
    memset(o, 0, sizeof *o);
    o->ok = k->trials(g, t->npoint, t->ntrial, id, scale, xval, w, waux, o->code, o->on, o->sumqx, o->sumq2);
}

static bool same_float(float a, float b) { return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b)); }

/* Every trial's outputs of `level` are the scalar's for groups of every kind, the inverse scales
 * spread as the encoders spread them (and some at random), weights random, equal, zero or NaN. */
static void kernel_matches(nf_simd_level level)
{
    require(level);
    const nf_iq2_kernels *vk = nf_iq2_kernels_for(level), *sk = nf_iq2_kernels_for(NF_SIMD_SCALAR);
    for (size_t ti = 0; ti < NTYPES; ti++) {
        const qtype *t = &TYPES[ti];
        const nf_ggml_grid *g = nf_ggml_grid_get(t->grid);
        cr_assert(g != NULL);
        int n = 8 * t->npoint, fails = 0;
        for (int rep = 0; rep < 3000; rep++) {
            float x[32], xval[32], w[32], waux[32], id[NF_IQ2_TRIAL_ROOM], scale[NF_IQ2_TRIAL_ROOM];
            fill(rep % K_COUNT, x, n);
            float max = 0.0f;
            for (int i = 0; i < n; i++) {
                xval[i] = fabsf(x[i]);
                max = max > xval[i] ? max : xval[i];
            }
            int wk = rep / K_COUNT % 4;
            for (int i = 0; i < n; i++) {
                w[i] = wk == 0 ? (float)(unif() * 4.0) : wk == 1 ? 1.0f : wk == 2 ? 0.0f : (i == 3 ? NAN : 1.0f);
                waux[i] = sqrtf(w[i]);
            }
            bool spread = rep % 5 != 0;
            for (int j = 0; j < NF_IQ2_TRIAL_ROOM; j++) {
                id[j] = spread ? (5.0f + (float)(j - t->ntrial / 2) * 0.1f) / (max > 0 ? max : 1.0f)
                               : (float)(unif() * 8.0) / (max > 0 ? max : 1.0f);
                scale[j] = 1 / id[j];
            }
            /* the nearest entry on a random off-grid code */
            uint32_t c = (uint32_t)(next_u64() % NF_GGML_GRID_CODES);
            while (g->map[c] >= 0) c = (c + 1) % NF_GGML_GRID_CODES;
            int32_t na = sk->nearest(g, g->map[c], xval, waux, scale[0]),
                    nb = vk->nearest(g, g->map[c], xval, waux, scale[0]);
            cr_assert_eq(nb, na, "%s %s rep %d code %u: nearest %d, scalar %d", vk->name, t->stem, rep, c, nb, na);
            trial_out a, b;
            run_trials(sk, g, t, id, scale, xval, w, waux, &a);
            run_trials(vk, g, t, id, scale, xval, w, waux, &b);
            cr_assert_eq(b.ok, a.ok, "%s %s rep %d: ok %d, scalar %d", vk->name, t->stem, rep, b.ok, a.ok);
            if (!a.ok) {
                fails++;
                continue;
            }
            for (int tr = 0; tr < t->ntrial; tr++) {
                cr_assert(same_float(b.sumqx[tr], a.sumqx[tr]) && same_float(b.sumq2[tr], a.sumq2[tr]),
                          "%s %s rep %d trial %d: sums %a %a, scalar %a %a", vk->name, t->stem, rep, tr, b.sumqx[tr],
                          b.sumq2[tr], a.sumqx[tr], a.sumq2[tr]);
                for (int k = 0; k < t->npoint; k++) {
                    int at = k * NF_IQ2_TRIAL_ROOM + tr;
                    cr_assert(b.code[at] == a.code[at] && b.on[at] == a.on[at],
                              "%s %s rep %d trial %d point %d: code %u on %d, scalar %u %d", vk->name, t->stem, rep, tr,
                              k, b.code[at], b.on[at], a.code[at], a.on[at]);
                }
            }
        }
        cr_assert(fails < 3000, "%s: every group refused", t->stem);
    }
}

/* The weights entry gives the scalar's bits, with and without an importance vector. */
static void weights_match(nf_simd_level level)
{
    require(level);
    const nf_iq2_kernels *vk = nf_iq2_kernels_for(level), *sk = nf_iq2_kernels_for(NF_SIMD_SCALAR);
    float x[256], qw[256], wa[256], wb[256], aa[256], ab[256];
    for (int rep = 0; rep < 200; rep++) {
        fill(rep % K_COUNT, x, 256);
        for (int i = 0; i < 256; i++) qw[i] = rep % 3 == 2 && i % 7 == 0 ? 0.0f : (float)(unif() * 4.0);
        float s2 = (float)(unif() * pow(10.0, -10.0 + 20.0 * unif()));
        const float *q = rep % 2 ? qw : NULL;
        sk->weights(256, x, q, s2, wa, aa);
        vk->weights(256, x, q, s2, wb, ab);
        for (int i = 0; i < 256; i++)
            cr_assert(same_float(wb[i], wa[i]) && same_float(ab[i], aa[i]), "%s rep %d value %d: %a %a, scalar %a %a",
                      vk->name, rep, i, wb[i], ab[i], wa[i], aa[i]);
    }
}

/* The signs entry gives the scalar's magnitudes and sign bytes, with and without parity: values
 * of every kind, NaN values and products, ties of the least product, -0.0. */
static void signs_match(nf_simd_level level)
{
    require(level);
    const nf_iq2_kernels *vk = nf_iq2_kernels_for(level), *sk = nf_iq2_kernels_for(NF_SIMD_SCALAR);
    float x[32], w[32], xa[32], xb[32];
    uint8_t sa[4], sb[4];
    for (int rep = 0; rep < 4000; rep++) {
        fill(rep % K_COUNT, x, 32);
        for (int i = 0; i < 32; i++) w[i] = rep % 4 == 1 ? 1.0f : (float)(unif() * 4.0);
        if (rep % 7 == 3) x[next_u64() % 32] = NAN;
        if (rep % 11 == 5) w[next_u64() % 32] = NAN;
        if (rep % 13 == 6) x[next_u64() % 32] = -0.0f;
        for (int parity = 0; parity < 2; parity++) {
            sk->signs(32, x, w, parity, xa, sa);
            vk->signs(32, x, w, parity, xb, sb);
            for (int i = 0; i < 32; i++)
                cr_assert(memcmp(&xa[i], &xb[i], sizeof xa[i]) == 0, "%s rep %d parity %d value %d: %a, scalar %a",
                          vk->name, rep, parity, i, xb[i], xa[i]);
            cr_assert(memcmp(sa, sb, sizeof sa) == 0, "%s rep %d parity %d: sign bytes differ", vk->name, rep, parity);
        }
    }
}

Test(ggml_iq2_simd, signs_avx2) { signs_match(NF_SIMD_AVX2); }
Test(ggml_iq2_simd, signs_avx512) { signs_match(NF_SIMD_AVX512); }
Test(ggml_iq2_simd, signs_neon) { signs_match(NF_SIMD_NEON); }

Test(ggml_iq2_simd, weights_avx2) { weights_match(NF_SIMD_AVX2); }
Test(ggml_iq2_simd, weights_avx512) { weights_match(NF_SIMD_AVX512); }
Test(ggml_iq2_simd, weights_neon) { weights_match(NF_SIMD_NEON); }

Test(ggml_iq2_simd, kernel_avx2) { kernel_matches(NF_SIMD_AVX2); }
Test(ggml_iq2_simd, kernel_avx512) { kernel_matches(NF_SIMD_AVX512); }
Test(ggml_iq2_simd, kernel_neon) { kernel_matches(NF_SIMD_NEON); }

Test(ggml_iq2_simd, tables_are_complete)
{
    for (int l = 0; l < NF_SIMD_LEVEL_COUNT; l++) {
        const nf_iq2_kernels *k = nf_iq2_kernels_for((nf_simd_level)l);
        cr_assert(k && k->name && k->trials && k->nearest && k->weights && k->signs, "level %d", l);
    }
}
