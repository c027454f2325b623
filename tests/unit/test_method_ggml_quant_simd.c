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
