/* ggml_quantize's vector searches (method/simd/ggml_simd.h): at every level the CPU has (the
 * others are skipped, and say so), the bytes of every encoder equal ggml's on the vectors of
 * tests/data/gguf and equal the scalar level's on many generated rows -- random scales over 16
 * decades, zeros (whole rows, whole sub-blocks, a single value), outliers, subnormals, a huge
 * dynamic range, ties (constant sub-blocks, values on the half grid, repeated extremes of both
 * signs) -- with and without an importance vector.  The level is switched with nf_simd_force. */
#include <criterion/criterion.h>

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/method.h>

#include "common/cpu.h"
#include "format/ggml.h"
#include "method/ggml_encoders.h"
#include "method/simd/ggml_simd.h"
#include "support/test_data.h"

#define ROWS 16
#define COLS 512

typedef struct qtype {
    nf_format_id id;
    const char *stem;
    unsigned qk, bb;
} qtype;

/* in the order of issue 24's value: the k-quants first */
static const qtype TYPES[] = {
    {NF_FMT_GGUF_Q4_K, "q4_k", 256, 144},   {NF_FMT_GGUF_Q6_K, "q6_k", 256, 210},
    {NF_FMT_GGUF_Q5_K, "q5_k", 256, 176},   {NF_FMT_GGUF_Q3_K, "q3_k", 256, 110},
    {NF_FMT_GGUF_Q2_K, "q2_k", 256, 84},    {NF_FMT_GGUF_IQ4_XS, "iq4_xs", 256, 136},
    {NF_FMT_GGUF_IQ4_NL, "iq4_nl", 32, 18}, {NF_FMT_GGUF_Q4_0, "q4_0", 32, 18},
    {NF_FMT_GGUF_Q5_0, "q5_0", 32, 22},     {NF_FMT_GGUF_Q8_0, "q8_0", 32, 34},
};
#define NTYPES (sizeof TYPES / sizeof TYPES[0])

static size_t row_bytes(const qtype *t, uint64_t cols) { return (size_t)(cols / t->qk * t->bb); }

#define GGML_ROWS_SEED 0x9E3779B97F4A7C15u
#define GGML_ROWS_TIES 16
#define GGML_ROWS_ZERO_SUPER 0
#define GGML_ROWS_ZERO_NAME "zero sub-blocks"
#include "test_ggml_rows_util.h"

static void require(nf_simd_level level)
{
    if (!nf_simd_supported(level))
        cr_skip_test("the CPU lacks the %s level (best here: %s): its ggml_quantize searches are NOT tested here",
                     nf_simd_level_name(level), nf_simd_level_name(nf_simd_best()));
    cr_assert_eq(nf_simd_force(level), level, "could not force %s: %s", nf_simd_level_name(level), nf_simd_reason());
    cr_assert_str_eq(nf_gq_kernels_active()->name, nf_simd_level_name(level));
}

static void ggml_vectors(nf_simd_level level)
{
    require(level);
    float *x = load_f32("source.f32", ROWS * COLS), *imp = load_f32("imatrix.f32", COLS);
    float *sp = load_f32("extra/special.f32", 6 * COLS);
    char file[96];
    for (size_t i = 0; i < NTYPES; i++) {
        const qtype *t = &TYPES[i];
        bool iq = t->stem[0] == 'i'; /* MANIFEST.md: the IQ fixtures were written with imatrix.f32 */
        snprintf(file, sizeof file, "%s.qbytes", t->stem);
        expect_ggml(level, t, file, x, ROWS, iq ? imp : NULL);
        snprintf(file, sizeof file, "extra/%s.%s.qbytes", t->stem, iq ? "plain" : "imatrix");
        expect_ggml(level, t, file, x, ROWS, iq ? NULL : imp);
        snprintf(file, sizeof file, "extra/%s.special.qbytes", t->stem);
        expect_ggml(level, t, file, sp, 6, NULL);
        snprintf(file, sizeof file, "extra/%s.special.imatrix.qbytes", t->stem);
        expect_ggml(level, t, file, sp, 6, imp);
    }
    free(sp);
    free(imp);
    free(x);
}

Test(ggml_quant_simd, ggml_vectors_avx2) { ggml_vectors(NF_SIMD_AVX2); }
Test(ggml_quant_simd, ggml_vectors_avx512) { ggml_vectors(NF_SIMD_AVX512); }
Test(ggml_quant_simd, ggml_vectors_neon) { ggml_vectors(NF_SIMD_NEON); }

/* ------------------------------------------------------------------ generated rows */

static void generated(nf_simd_level level)
{
    require(level);
    expect_rows_same_as_scalar(level, TYPES, NTYPES, 12, 4);
}

Test(ggml_quant_simd, generated_rows_avx2) { generated(NF_SIMD_AVX2); }
Test(ggml_quant_simd, generated_rows_avx512) { generated(NF_SIMD_AVX512); }
Test(ggml_quant_simd, generated_rows_neon) { generated(NF_SIMD_NEON); }

/* Rows of one and of three super-blocks (a pair and a single one: the searches see 16 sub-blocks
 * as well as 32) equal the scalar level's too. */
static void odd_rows(nf_simd_level level)
{
    require(level);
    enum { R = 6 };
    static float x[R * 768];
    static const uint64_t widths[] = {256, 768};
    for (int k = 0; k < K_COUNT; k++)
        for (size_t wi = 0; wi < 2; wi++) {
            const uint64_t cols = widths[wi];
            for (int r = 0; r < R; r++) {
                float row[COLS];
                for (uint64_t c = 0; c < cols; c++) {
                    if (c % COLS == 0) fill(k, row, COLS);
                    x[r * cols + c] = row[c % COLS];
                }
            }
            for (size_t i = 0; i < NTYPES; i++) {
                const qtype *t = &TYPES[i];
                result ref, got;
                encode(NF_SIMD_SCALAR, t, x, R, cols, NULL, &ref);
                encode(level, t, x, R, cols, NULL, &got);
                cr_assert_eq(got.st, ref.st, "%s %s %s cols %" PRIu64, nf_simd_level_name(level), t->stem,
                             KIND_NAMES[k], cols);
                if (ref.st == NF_OK)
                    cr_assert(!memcmp(got.bytes, ref.bytes, R * (size_t)(cols / t->qk * t->bb)),
                              "%s %s %s cols %" PRIu64, nf_simd_level_name(level), t->stem, KIND_NAMES[k], cols);
                free(ref.bytes);
                free(got.bytes);
            }
        }
}

Test(ggml_quant_simd, odd_rows_avx2) { odd_rows(NF_SIMD_AVX2); }
Test(ggml_quant_simd, odd_rows_avx512) { odd_rows(NF_SIMD_AVX512); }
Test(ggml_quant_simd, odd_rows_neon) { odd_rows(NF_SIMD_NEON); }

/* ------------------------------------------------------------------ the plain row path */

/* Q4_0, Q5_0 and Q8_0 without importance go from source words to packed blocks in one kernel
 * (plain_blocks); its bytes and its refusals are the scalar reference's for binary32, binary16
 * and bfloat16 words: every kind of generated row, the words of each kind as binary16 and
 * bfloat16 round them, raw 16-bit words (NaN, infinities, subnormals), and blocks to refuse at
 * every position (a non-finite value, one of 2^64, a scale that overflows binary16). */
static const struct {
    nf_gq_plain type;
    const char *stem;
    size_t bb;
} PLAIN[] = {{NF_GQ_PLAIN_Q4_0, "q4_0", 18}, {NF_GQ_PLAIN_Q5_0, "q5_0", 22}, {NF_GQ_PLAIN_Q8_0, "q8_0", 34}};
static const char *const WORDS[] = {"f32", "f16", "bf16"};

/* COLS values as source words of kind w (little-endian, as this host stores them). */
static void to_words(nf_gq_words w, const float *x, uint8_t *p)
{
    for (int i = 0; i < COLS; i++) {
        uint16_t h = w == NF_GQ_WORDS_F16 ? nf_f32_to_f16(x[i]) : nf_f32_to_bf16(x[i]);
        if (w == NF_GQ_WORDS_F32) memcpy(p + 4 * i, &x[i], 4);
        else memcpy(p + 2 * i, &h, 2);
    }
}

static void expect_plain(const nf_gq_kernels *k, nf_gq_words w, int ti, const uint8_t *p, size_t nblk, const char *what)
{
    const nf_gq_kernels *ref = &nf_gq_kernels_scalar;
    uint8_t got[COLS / 32 * 34 + 1], want[COLS / 32 * 34 + 1];
    memset(got, 0xA5, sizeof got);
    memset(want, 0x5A, sizeof want);
    size_t n = k->plain_blocks(PLAIN[ti].type, w, nblk, p, got);
    size_t nr = ref->plain_blocks(PLAIN[ti].type, w, nblk, p, want);
    cr_assert_eq(n, nr, "%s %s %s %s (%zu blocks): stops at block %zu, scalar at %zu", k->name, PLAIN[ti].stem,
                 WORDS[w], what, nblk, n, nr);
    cr_assert_eq(got[nblk * PLAIN[ti].bb], 0xA5, "%s %s wrote past its blocks", k->name, PLAIN[ti].stem);
    for (size_t b = 0; b < n * PLAIN[ti].bb; b++)
        if (got[b] != want[b])
            cr_assert_fail("%s %s %s %s: block %zu byte %zu 0x%02x, scalar 0x%02x", k->name, PLAIN[ti].stem, WORDS[w],
                           what, b / PLAIN[ti].bb, b % PLAIN[ti].bb, got[b], want[b]);
}

static void plain_path(nf_simd_level level)
{
    require(level);
    const nf_gq_kernels *k = nf_gq_kernels_for(level);
    static float x[COLS];
    static uint8_t p[4 * COLS];
    for (int kind = 0; kind < K_COUNT; kind++)
        for (int rep = 0; rep < 24; rep++) {
            fill(kind, x, COLS);
            for (int w = 0; w < 3; w++) {
                to_words((nf_gq_words)w, x, p);
                for (int ti = 0; ti < 3; ti++)
                    expect_plain(k, (nf_gq_words)w, ti, p, (size_t)(rep % 3 ? COLS / 32 : 1 + rep % 16),
                                 KIND_NAMES[kind]);
            }
        }
    for (int rep = 0; rep < 64; rep++) { /* raw 16-bit words: any binary16 or bfloat16 value */
        for (int i = 0; i < COLS; i++) {
            uint16_t h = (uint16_t)next_u64();
            if (rep % 2) h = (uint16_t)(h & 0x83FFu) | (uint16_t)((next_u64() % 31) << 10); /* finite f16 */
            memcpy(p + 2 * i, &h, 2);
        }
        for (int w = 1; w < 3; w++)
            for (int ti = 0; ti < 3; ti++) expect_plain(k, (nf_gq_words)w, ti, p, COLS / 32, "raw words");
    }
    static const float bad[] = {NAN, -INFINITY, INFINITY, 0x1p64f, -0x1p64f, 0x1.fffffep63f, 1e6f, -6e4f, 1e12f};
    for (size_t v = 0; v < sizeof bad / sizeof bad[0]; v++)
        for (int at = 0; at < COLS; at += 37) {
            fill(K_NORMAL, x, COLS);
            x[at] = bad[v];
            char what[64];
            snprintf(what, sizeof what, "%g at %d", (double)bad[v], at);
            for (int w = 0; w < 3; w++) {
                to_words((nf_gq_words)w, x, p);
                for (int ti = 0; ti < 3; ti++) expect_plain(k, (nf_gq_words)w, ti, p, COLS / 32, what);
            }
        }
}

Test(ggml_quant_simd, plain_path_avx2) { plain_path(NF_SIMD_AVX2); }
Test(ggml_quant_simd, plain_path_avx512) { plain_path(NF_SIMD_AVX512); }
Test(ggml_quant_simd, plain_path_neon) { plain_path(NF_SIMD_NEON); }

/* The same through nf_method_encode_rows from binary16 and bfloat16 sources: the bytes of every
 * level equal the scalar level's, and a row that holds a refused value is refused alike. */
static void plain_sources(nf_simd_level level)
{
    require(level);
    enum { R = 8 };
    static float x[R * COLS];
    static uint16_t h[R * COLS];
    for (int kind = 0; kind < K_COUNT; kind++)
        for (int st = 0; st < 2; st++) {
            for (int r = 0; r < R; r++) fill(kind, x + r * COLS, COLS);
            for (int i = 0; i < R * COLS; i++) h[i] = st ? nf_f32_to_bf16(x[i]) : nf_f32_to_f16(x[i]);
            if (kind == K_OUTLIERS) h[3 * COLS + 77] = st ? 0x7FC1 : 0x7C00; /* NaN, infinity */
            for (int ti = 0; ti < 3; ti++) {
                const qtype *t = NULL;
                for (size_t i = 0; i < NTYPES; i++)
                    if (!strcmp(TYPES[i].stem, PLAIN[ti].stem)) t = &TYPES[i];
                result res[2];
                for (int l = 0; l < 2; l++) {
                    nf_simd_level lv = l ? level : NF_SIMD_SCALAR;
                    cr_assert_eq(nf_simd_force(lv), lv);
                    size_t len = R * row_bytes(t, COLS);
                    res[l].bytes = calloc(1, len);
                    nf_src_rows src = {.name = "w",
                                       .type = st ? NF_SRC_BF16 : NF_SRC_F16,
                                       .data = h,
                                       .rows = R,
                                       .cols = COLS};
                    nf_words wd = {.rows = R, .cols = COLS, .blocks = res[l].bytes};
                    nf_error err = {0};
                    res[l].st = nf_method_encode_rows(NF_METHOD_GGML_QUANTIZE, nf_format_by_id(t->id), NULL, &src, &wd,
                                                      &err);
                    snprintf(res[l].msg, sizeof res[l].msg, "%s", res[l].st == NF_OK ? "" : err.message);
                }
                cr_assert_eq(res[1].st, res[0].st, "%s %s %s: %s / scalar %s", nf_simd_level_name(level), t->stem,
                             KIND_NAMES[kind], res[1].msg, res[0].msg);
                cr_assert_str_eq(res[1].msg, res[0].msg);
                if (kind == K_OUTLIERS) cr_assert_eq(res[0].st, NF_ERR_INVALID, "%s", t->stem);
                else
                    cr_assert(!memcmp(res[1].bytes, res[0].bytes, R * row_bytes(t, COLS)), "%s %s %s %s",
                              nf_simd_level_name(level), t->stem, st ? "bf16" : "f16", KIND_NAMES[kind]);
                free(res[0].bytes);
                free(res[1].bytes);
            }
        }
}

Test(ggml_quant_simd, plain_sources_avx2) { plain_sources(NF_SIMD_AVX2); }
Test(ggml_quant_simd, plain_sources_avx512) { plain_sources(NF_SIMD_AVX512); }
Test(ggml_quant_simd, plain_sources_neon) { plain_sources(NF_SIMD_NEON); }

/* ------------------------------------------------------------------ the entries, one by one */

/* The entries called directly against the scalar table, every output compared bit for bit (a
 * search's scales and minima as words, so a -0 for a +0 fails): every kind of generated values
 * plus signed zeros (+0 first, then -0: MINPS's rule keeps the first) and values near 2^64 with
 * tiny ones, every count of sub-blocks from 1 to 16 (a vector's tail at every level), with and
 * without weights (random, with zeros, all zero, all one). */
enum { KD_SIGNED_ZEROS = K_COUNT, KD_HUGE, KD_COUNT };

static void kfill(int kind, float *x, int n)
{
    if (kind < K_COUNT) {
        fill(kind, x, n);
        return;
    }
    for (int i = 0; i < n; i++) {
        if (kind == KD_SIGNED_ZEROS) x[i] = i == 0 ? 0.0f : (next_u64() % 8 == 0 ? 0.0f : -0.0f);
        else x[i] = (next_u64() % 3 == 0) ? (float)(gauss() * 1e18) : (float)(gauss() * 1e-30);
    }
    if (kind == KD_SIGNED_ZEROS && next_u64() % 4 == 0) x[next_u64() % (unsigned)n] = (float)gauss();
}

static void expect_words(const void *got, const void *want, size_t bytes, const char *lv, const char *entry, int kind,
                         int nsub, int rep)
{
    if (memcmp(got, want, bytes) != 0)
        cr_assert_fail("%s %s: kind %d, %d sub-blocks, case %d: differs from the scalar table", lv, entry, kind, nsub,
                       rep);
}

static void kernel_entries(nf_simd_level level)
{
    require(level);
    const nf_gq_kernels *k = nf_gq_kernels_for(level), *r = &nf_gq_kernels_scalar;
    const char *lv = nf_simd_level_name(level);
    static const int8_t iq4[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    enum { MAXV = 16 * 32 };
    static float x[MAXV], w[MAXV], s1[MAXV], s2[MAXV], m1[16], m2[16];
    static uint8_t u1[MAXV], u2[MAXV];
    static int8_t i1[MAXV], i2[MAXV];
    int rep = 0;
    for (int kind = 0; kind < KD_COUNT; kind++)
        for (int nsub = 1; nsub <= 16; nsub++)
            for (int c = 0; c < 6; c++, rep++) {
                const int n = c % 2 ? 16 : 32, nv = nsub * n;
                for (int j = 0; j < nsub; j++) kfill(kind, x + j * n, n);
                const float *qw = importance(c % IMP_KINDS, w, nv);
                if (!qw) {
                    for (int i = 0; i < nv; i++) w[i] = x[i] * x[i];
                    qw = w;
                }
                /* fit_min as Q2_K (nmax 3, absolute errors) and Q4_K / Q5_K (15, 31: squares) */
                static const struct {
                    int nmax;
                    float rmin, rdelta;
                    int nstep;
                    bool mad;
                } FM[3] = {{3, -0.5f, 0.1f, 15, true}, {15, -1.0f, 0.1f, 20, false}, {31, -0.5f, 0.1f, 15, false}};
                const int f = c % 3;
                memset(u1, 0xA5, sizeof u1);
                memset(u2, 0xA5, sizeof u2);
                k->fit_min(nsub, n, FM[f].nmax, x, qw, u1, s1, m1, FM[f].rmin, FM[f].rdelta, FM[f].nstep, FM[f].mad);
                r->fit_min(nsub, n, FM[f].nmax, x, qw, u2, s2, m2, FM[f].rmin, FM[f].rdelta, FM[f].nstep, FM[f].mad);
                expect_words(u1, u2, sizeof u1, lv, "fit_min codes", kind, nsub, rep);
                expect_words(s1, s2, (size_t)nsub * 4, lv, "fit_min scales", kind, nsub, rep);
                expect_words(m1, m2, (size_t)nsub * 4, lv, "fit_min minima", kind, nsub, rep);
                /* fit_signed as Q3_K (4), Q4_0 (8), Q5_0 (16), Q6_K (32), with and without weights */
                static const int FS[4] = {4, 8, 16, 32};
                for (int wi = 0; wi < 2; wi++) {
                    memset(i1, 0x5A, sizeof i1);
                    memset(i2, 0x5A, sizeof i2);
                    k->fit_signed(nsub, n, FS[(c + wi) % 4], x, wi ? qw : NULL, i1, s1);
                    r->fit_signed(nsub, n, FS[(c + wi) % 4], x, wi ? qw : NULL, i2, s2);
                    expect_words(i1, i2, sizeof i1, lv, "fit_signed codes", kind, nsub, rep);
                    expect_words(s1, s2, (size_t)nsub * 4, lv, "fit_signed scales", kind, nsub, rep);
                }
                if (n == 16) { /* Q3_K's sub-blocks */
                    k->fit_q3(nsub, n, 4, x, i1, s1);
                    r->fit_q3(nsub, n, 4, x, i2, s2);
                    expect_words(i1, i2, sizeof i1, lv, "fit_q3 codes", kind, nsub, rep);
                    expect_words(s1, s2, (size_t)nsub * 4, lv, "fit_q3 scales", kind, nsub, rep);
                } else {
                    k->iq4_scales(nsub, x, qw, iq4, s1);
                    r->iq4_scales(nsub, x, qw, iq4, s2);
                    expect_words(s1, s2, (size_t)nsub * 4, lv, "iq4_scales", kind, nsub, rep);
                    const float ms = c == 2 ? 0.0f : (float)unif() * x[0] * x[0];
                    k->sqrt_weights((size_t)nv, x, qw, ms, s1);
                    r->sqrt_weights((size_t)nv, x, qw, ms, s2);
                    expect_words(s1, s2, (size_t)nv * 4, lv, "sqrt_weights", kind, nsub, rep);
                }
                if (nv >= 64) { /* Q2_0's blocks of 64 */
                    const unsigned nb = (unsigned)nv / 64;
                    k->codes_q2_0(nb, x, s1, u1);
                    r->codes_q2_0(nb, x, s2, u2);
                    expect_words(s1, s2, nb * 4, lv, "codes_q2_0 scales", kind, nsub, rep);
                    expect_words(u1, u2, nb * 16, lv, "codes_q2_0 codes", kind, nsub, rep);
                }
                /* requant from a scale near the values' own (and a tiny one), with and without a
                 * minimum */
                const float d = (c == 4 ? 1e-38f : 1.0f) * (fabsf(x[0]) + 1e-20f) / (float)(1 + c);
                for (int wm = 0; wm < 2; wm++) {
                    const int lo = wm ? 0 : -32, hi = wm ? 15 : 31, off = wm ? 0 : 32;
                    k->requant(nv, x, d, wm, wm ? fabsf(x[1]) : 0.0f, lo, hi, off, u1);
                    r->requant(nv, x, d, wm, wm ? fabsf(x[1]) : 0.0f, lo, hi, off, u2);
                    expect_words(u1, u2, (size_t)nv, lv, "requant", kind, nsub, rep);
                }
            }
}

Test(ggml_quant_simd, kernel_entries_avx2) { kernel_entries(NF_SIMD_AVX2); }
Test(ggml_quant_simd, kernel_entries_avx512) { kernel_entries(NF_SIMD_AVX512); }
Test(ggml_quant_simd, kernel_entries_neon) { kernel_entries(NF_SIMD_NEON); }

/* Every level's table is complete (the tables test checks every module's; this one names the
 * entries the encoders call). */
Test(ggml_quant_simd, tables_are_complete)
{
    /* outside a call of nf_ggml_quantize_rows an encoder in another file gets the scalar table */
    cr_assert_eq(nf_gq_kernels_current(), &nf_gq_kernels_scalar);
    for (int l = 0; l < NF_SIMD_LEVEL_COUNT; l++) {
        const nf_gq_kernels *k = nf_gq_kernels_for((nf_simd_level)l);
        cr_assert(k && k->name && k->fit_min && k->fit_signed && k->fit_q3 && k->iq4_scales && k->requant &&
                      k->plain_blocks && k->sqrt_weights,
                  "level %d", l);
    }
}

/* Types that encode a span of blocks at once (q4_0, q5_0, iq4_nl) still refuse in block order:
 * a block whose scale overflows binary16 before a later block's non-finite value, and a too large
 * value before a later block's scale, at every level. */
Test(ggml_quant_simd, refusals_keep_block_order)
{
    static float x[COLS], imp[COLS];
    for (int i = 0; i < COLS; i++) imp[i] = 1.0f;
    for (int l = 0; l < NF_SIMD_LEVEL_COUNT; l++) {
        if (!nf_simd_supported((nf_simd_level)l)) continue;
        for (size_t ti = 0; ti < NTYPES; ti++) {
            const qtype *t = &TYPES[ti];
            if (t->qk != 32) continue;
            for (int order = 0; order < 2; order++)
                for (int with = 0; with < 2; with++) {
                    /* q4_0 / q5_0 with importance read the whole row first for its mean square,
                     * which meets every value before any block is encoded */
                    if (with && t->id != NF_FMT_GGUF_IQ4_NL) continue;
                    for (int i = 0; i < COLS; i++) x[i] = 0.01f * (float)(i % 7 - 3);
                    int big = order ? 7 : 2, bad = order ? 2 : 5; /* blocks */
                    for (int i = 0; i < 32; i++) x[32 * big + i] = 1e10f * (float)(i % 3 + 1);
                    x[32 * bad + 9] = order ? 3e19f : NAN;
                    result r;
                    encode((nf_simd_level)l, t, x, 1, COLS, with ? imp : NULL, &r);
                    cr_assert_eq(r.st, NF_ERR_INVALID, "%s", t->stem);
                    char want[96];
                    if (order) snprintf(want, sizeof want, "col %d: source value 3e+19 is too large", 32 * bad + 9);
                    else snprintf(want, sizeof want, "block %d (cols %d..%d)", big, 32 * big, 32 * big + 31);
                    cr_expect(strstr(r.msg, want), "%s %s: %s (want '%s')", nf_simd_level_name((nf_simd_level)l),
                              t->stem, r.msg, want);
                    free(r.bytes);
                }
        }
    }
}
