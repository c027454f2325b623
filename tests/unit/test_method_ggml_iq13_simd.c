/* ggml_quantize's vector kernels of IQ3_XXS, IQ3_S, IQ1_S, IQ1_M and Q2_0 (method/simd/ggml_simd.h):
 * at every level the CPU has (the others are skipped, and say so), the bytes of these encoders
 * equal ggml's on the vectors of tests/data/gguf and equal the scalar level's on generated rows of
 * every kind -- random scales over 16 decades, zeros (whole rows, whole groups, a single value),
 * outliers, subnormals, a huge dynamic range, ties (values on a half grid, constant groups,
 * repeated extremes of both signs) -- with and without an importance vector; and the IQ3 trial
 * kernel (iq3_trials) of every level gives the scalar reference's levels, on-grid bits and sums on
 * groups of every kind, on the longest neighbour lists, on ties, zero and huge groups.  The level is
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
#include "method/ggml_grid3.h"
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
Test(ggml_iq13_simd, ggml_vectors_neon) { ggml_vectors(NF_SIMD_NEON); }

/* ------------------------------------------------------------------ generated rows */

static void generated(nf_simd_level level)
{
    require(level);
    expect_rows_same_as_scalar(level, TYPES, NTYPES, 8, 4);
}

Test(ggml_iq13_simd, generated_rows_avx2) { generated(NF_SIMD_AVX2); }
Test(ggml_iq13_simd, generated_rows_avx512) { generated(NF_SIMD_AVX512); }
Test(ggml_iq13_simd, generated_rows_neon) { generated(NF_SIMD_NEON); }

/* ------------------------------------------------------------------ the IQ3 trial kernel */

/* What iq3_trials writes for a group, and whether it succeeded (the rest is unspecified then). */
typedef struct iq3_out {
    bool ok;
    int8_t L[NF_GQ3_TRIAL_STRIDE * 32];
    uint32_t on_grid[8];
    float qx[NF_GQ3_MAX_TRIALS], q2[NF_GQ3_MAX_TRIALS];
} iq3_out;

/* One group's trials: id, scale, xval, waux and w as the encoder passes them. */
typedef struct iq3_case {
    int nt;
    float id[NF_GQ3_MAX_TRIALS], scale[NF_GQ3_MAX_TRIALS], xval[32], waux[32], w[32];
} iq3_case;

static bool same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* The trials of c at `level` equal the scalar reference's (nf_gq3_trials_ref): the same success
 * and, on success, every level, on-grid flag and sum bit for bit. */
static void expect_iq3_trials(nf_simd_level level, const nf_gq3_grid *g, const iq3_case *c, const char *what, int rep)
{
    static iq3_out a, b;
    memset(&a, 0x5A, sizeof a);
    memset(&b, 0x5A, sizeof b);
    a.ok = nf_gq3_trials_ref(g, c->nt, c->id, c->scale, c->xval, c->waux, c->w, a.L, a.on_grid, a.qx, a.q2);
    b.ok = nf_gq_kernels_for(level)->iq3_trials(g, c->nt, c->id, c->scale, c->xval, c->waux, c->w, b.L, b.on_grid, b.qx,
                                                b.q2);
    const char *lv = nf_simd_level_name(level);
    cr_assert_eq(b.ok, a.ok, "%s, %u-point grid, %s %d: success %d, scalar %d", lv, g->size, what, rep, b.ok, a.ok);
    if (!a.ok) return;
    for (int k = 0; k < 8; k++)
        cr_assert_eq(b.on_grid[k] >> c->nt, 0, "%s, %u-point grid, %s %d point %d: on-grid bits past the trials", lv,
                     g->size, what, rep, k);
    for (int t = 0; t < c->nt; t++) {
        cr_assert(same_bits(b.qx[t], a.qx[t]) && same_bits(b.q2[t], a.q2[t]),
                  "%s, %u-point grid, %s %d trial %d: sums %a %a, scalar %a %a", lv, g->size, what, rep, t, b.qx[t],
                  b.q2[t], a.qx[t], a.q2[t]);
        for (int k = 0; k < 8; k++)
            cr_assert_eq(b.on_grid[k] >> t & 1u, a.on_grid[k] >> t & 1u,
                         "%s, %u-point grid, %s %d trial %d point %d: on grid", lv, g->size, what, rep, t, k);
        for (int i = 0; i < 32; i++)
            cr_assert_eq(b.L[NF_GQ3_TRIAL_STRIDE * i + t], a.L[NF_GQ3_TRIAL_STRIDE * i + t],
                         "%s, %u-point grid, %s %d trial %d value %d: level %d, scalar %d", lv, g->size, what, rep, t,
                         i, b.L[NF_GQ3_TRIAL_STRIDE * i + t], a.L[NF_GQ3_TRIAL_STRIDE * i + t]);
    }
}

/* The encoder's trials of the group xval (ggml_iq3.c): (15 + 0.2 is) / max, is in [-ntry, ntry]. */
static void encoder_trials(iq3_case *c, int ntry)
{
    float max = 0.0f;
    for (int i = 0; i < 32; i++) max = max > c->xval[i] ? max : c->xval[i];
    if (max == 0.0f) max = 1.0f;
    c->nt = 2 * ntry + 1;
    for (int t = 0; t < c->nt; t++) {
        c->id[t] = (15.0f + (float)(t - ntry) * 0.2f) / max;
        c->scale[t] = 1 / c->id[t];
    }
}

/* Weights of kind m: random, equal, zero, random with zeros, or one huge enough that the farther
 * candidates' distances overflow while the nearer ones stay finite. */
static void iq3_weights(iq3_case *c, int m)
{
    for (int i = 0; i < 32; i++) {
        float v = m == 1 ? 1.0f : m == 2 ? 0.0f : (float)(unif() * 4.0);
        if (m == 3 && next_u64() % 3 == 0) v = 0.0f;
        c->w[i] = v;
        c->waux[i] = sqrtf(v);
    }
    if (m == 4) c->waux[next_u64() % 32] = 1.5e19f;
}

/* The off-grid keys of g with the longest neighbour lists, nkeys of them, longest first. */
static void longest_lists(const nf_gq3_grid *g, unsigned *keys, int nkeys)
{
    for (int j = 0; j < nkeys; j++) keys[j] = 0;
    unsigned len[16] = {0};
    for (unsigned key = 0; key < NF_GQ3_KEYS; key++) {
        if (g->map[key] >= 0) continue;
        unsigned n;
        (void)nf_gq3_neighbours(g, key, &n);
        for (int j = 0; j < nkeys; j++)
            if (n > len[j]) {
                for (int m = nkeys - 1; m > j; m--) {
                    len[m] = len[m - 1];
                    keys[m] = keys[m - 1];
                }
                len[j] = n;
                keys[j] = key;
                break;
            }
    }
}

/* The trial kernel of `level` against the scalar reference on both grids: groups of every kind
 * at the encoders' trial scales (31 and 19, and a part of a vector, down to the one trial of the
 * encoders' second pass); the 8 points of a group on
 * the keys with the longest neighbour lists, at scales around the one that rounds onto them;
 * ties (values midway between grid values at scale 1, equal or zero weights, where the first
 * nearest must win); zero groups; huge values and weights whose distances overflow for some or
 * every candidate (a search with none below FLT_MAX fails, as ggml's assertion does). */
static void iq3_kernel_matches(nf_simd_level level)
{
    require(level);
    const nf_format_id grids[2] = {NF_FMT_GGUF_IQ3_XXS, NF_FMT_GGUF_IQ3_S};
    static iq3_case c;
    for (int gi = 0; gi < 2; gi++) {
        const nf_gq3_grid *g = nf_gq3_grid_of(grids[gi]);
        cr_assert(g != NULL);
        const int ntry = gi == 0 ? 15 : 9;
        /* groups of every kind, with the encoder's trials */
        for (int rep = 0; rep < 900; rep++) {
            fill(rep % K_COUNT, c.xval, 32);
            for (int i = 0; i < 32; i++) c.xval[i] = fabsf(c.xval[i]);
            iq3_weights(&c, rep / K_COUNT % 5);
            encoder_trials(&c, rep % 7 == 3 ? 2 : rep % 7 == 5 ? 0 : ntry); /* 5 and 1 trials: parts of a vector */
            expect_iq3_trials(level, g, &c, KIND_NAMES[rep % K_COUNT], rep);
        }
        /* the longest lists: point k on key[k] at scale s0, the trials around it */
        unsigned keys[8];
        longest_lists(g, keys, 8);
        unsigned n0;
        (void)nf_gq3_neighbours(g, keys[0], &n0);
        cr_assert(n0 > 16, "%u-point grid: its longest list has %u entries, not more than a vector", g->size, n0);
        for (int rep = 0; rep < 200; rep++) {
            const float s0 = (float)pow(10.0, -6.0 + 12.0 * unif());
            for (int k = 0; k < 8; k++)
                for (int i = 0; i < 4; i++) {
                    const unsigned l = keys[(k + rep) % 8] >> (3 * i) & 7u;
                    c.xval[4 * k + i] = (float)(2 * l + 1) * s0 * (float)(1.0 + 0.3 * (unif() - 0.5));
                }
            iq3_weights(&c, rep % 5);
            c.nt = rep % 3 == 0 ? 5 : 2 * ntry + 1;
            for (int t = 0; t < c.nt; t++) {
                c.id[t] = (1.0f + (float)(t - c.nt / 2) * 0.01f) / s0;
                c.scale[t] = 1 / c.id[t];
            }
            expect_iq3_trials(level, g, &c, "longest lists", rep);
        }
        /* ties: values on the even integers at scale 1 are midway between two grid values */
        for (int rep = 0; rep < 300; rep++) {
            for (int i = 0; i < 32; i++) c.xval[i] = (float)(rep % 2 ? 2 * (next_u64() % 9) : next_u64() % 17);
            iq3_weights(&c, rep % 3 == 2 ? 2 : 1);
            c.nt = 2 * ntry + 1;
            for (int t = 0; t < c.nt; t++) c.id[t] = c.scale[t] = t % 2 ? 1.0f : (t % 4 ? 0.5f : 2.0f);
            expect_iq3_trials(level, g, &c, "ties", rep);
        }
        /* zero groups, and huge values whose every distance overflows */
        for (int rep = 0; rep < 40; rep++) {
            for (int i = 0; i < 32; i++) c.xval[i] = rep % 2 ? 0.0f : 3.0e38f * (float)unif();
            iq3_weights(&c, rep / 2 % 5);
            encoder_trials(&c, ntry);
            if (rep % 4 == 2)
                for (int t = 0; t < c.nt; t++) c.scale[t] = 3.0e38f; /* every off-grid distance is infinite */
            expect_iq3_trials(level, g, &c, rep % 2 ? "zero group" : "huge group", rep);
        }
    }
}

Test(ggml_iq13_simd, iq3_kernel_avx2) { iq3_kernel_matches(NF_SIMD_AVX2); }
Test(ggml_iq13_simd, iq3_kernel_avx512) { iq3_kernel_matches(NF_SIMD_AVX512); }
Test(ggml_iq13_simd, iq3_kernel_neon) { iq3_kernel_matches(NF_SIMD_NEON); }

/* Every level's table has the entries these encoders call. */
Test(ggml_iq13_simd, tables_are_complete)
{
    for (int l = 0; l < NF_SIMD_LEVEL_COUNT; l++) {
        const nf_gq_kernels *k = nf_gq_kernels_for((nf_simd_level)l);
        cr_assert(k && k->iq3_trials && k->iq1s_split && k->iq1m_split && k->iq1_nearest && k->codes_q2_0 &&
                      k->iq1_order,
                  "level %d", l);
    }
}
