/* Shared helpers of the ggml_quantize vector tests (test_method_ggml_quant_simd.c,
 * test_method_ggml_iq2_simd.c, test_method_ggml_iq13_simd.c): the binary32 vectors of
 * tests/data/gguf (MANIFEST.md) and the generated rows of every kind that the vector levels must
 * encode as the scalar one does.  Everything is static inline, as in test_layout_util.h, so each
 * test executable takes what it uses; each test keeps its own seed (and its variant of the
 * kinds, below), so its rows are the values it always checked.
 *
 * The includer defines, before including:
 *   GGML_ROWS_SEED        the xorshift64 state the sequence starts from
 *   GGML_ROWS_TIES        K_TIES draws the values k / 2 for k in [-GGML_ROWS_TIES, GGML_ROWS_TIES]
 *   GGML_ROWS_ZERO_SUPER  1: K_ZERO_SUBS zeroes every third super-block (256 values) as well
 *   GGML_ROWS_ZERO_NAME   the name of K_ZERO_SUBS in messages (default "zero groups")
 * and has declared COLS (the row length of the fixtures and of the generated rows), its qtype
 * (with id, the format; stem, the fixtures' name; bb, the bytes of a block) and
 * row_bytes(t, cols), which the encoders below take. */
#ifndef TEST_GGML_ROWS_UTIL_H
#define TEST_GGML_ROWS_UTIL_H

#include <criterion/criterion.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/method.h>

#include "common/cpu.h"
#include "support/test_data.h"

#ifndef GGML_ROWS_ZERO_NAME
#define GGML_ROWS_ZERO_NAME "zero groups"
#endif

/* n binary32 values of tests/data/gguf/`file`. */
static inline float *load_f32(const char *file, size_t n)
{
    size_t len;
    float *x = (float *)nf_test_data(&len, "gguf/%s", file);
    cr_assert_eq(len, sizeof(float) * n, "%s", file);
    return x;
}

/* ---------------------------------------------------------------- encoding at a level */

typedef struct result {
    nf_status st;
    char msg[sizeof((nf_error *)0)->message];
    uint8_t *bytes;
} result;

/* rows x cols values x encoded as t at `level` into r->bytes (the caller frees them), with a guard
 * byte past the rows that must stay untouched. */
static inline void encode(nf_simd_level level, const qtype *t, const float *x, uint64_t rows, uint64_t cols,
                          const float *imp, result *r)
{
    cr_assert_eq(nf_simd_force(level), level);
    size_t len = rows * row_bytes(t, cols);
    r->bytes = malloc(len + 1);
    memset(r->bytes, 0xA5, len + 1);
    nf_src_rows src = {.name = "w", .type = NF_SRC_F32, .data = x, .rows = rows, .cols = cols};
    nf_words w = {.rows = rows, .cols = cols, .blocks = r->bytes};
    nf_method_params p = {.importance = imp, .importance_len = imp ? cols : 0};
    nf_error err = {0};
    r->st = nf_method_encode_rows(NF_METHOD_GGML_QUANTIZE, nf_format_by_id(t->id), imp ? &p : NULL, &src, &w, &err);
    snprintf(r->msg, sizeof r->msg, "%s", r->st == NF_OK ? "" : err.message);
    cr_assert_eq(r->bytes[len], 0xA5, "%s wrote past its rows", t->stem);
}

/* The bytes of `level` equal the scalar level's (or both refuse the rows alike). */
static inline void expect_same_as_scalar(nf_simd_level level, const qtype *t, const float *x, uint64_t rows,
                                         const float *imp, const char *what)
{
    result ref, got;
    encode(NF_SIMD_SCALAR, t, x, rows, COLS, imp, &ref);
    encode(level, t, x, rows, COLS, imp, &got);
    const char *lv = nf_simd_level_name(level), *ip = imp ? "importance" : "no importance";
    cr_assert_eq(got.st, ref.st, "%s %s %s %s: status %d (%s), scalar %d (%s)", lv, t->stem, what, ip, got.st, got.msg,
                 ref.st, ref.msg);
    if (ref.st != NF_OK) cr_assert_str_eq(got.msg, ref.msg, "%s %s %s %s", lv, t->stem, what, ip);
    else {
        size_t len = rows * row_bytes(t, COLS);
        for (size_t b = 0; b < len; b++)
            if (got.bytes[b] != ref.bytes[b])
                cr_assert_fail("%s %s %s %s: byte %zu (row %zu, block %zu, byte %zu) 0x%02x, scalar 0x%02x", lv,
                               t->stem, what, ip, b, b / row_bytes(t, COLS), b % row_bytes(t, COLS) / t->bb, b % t->bb,
                               got.bytes[b], ref.bytes[b]);
    }
    free(ref.bytes);
    free(got.bytes);
}

/* ggml's own bytes (tests/data/gguf, MANIFEST.md and README.md) at `level`. */
static inline void expect_ggml(nf_simd_level level, const qtype *t, const char *file, const float *x, uint64_t rows,
                               const float *imp)
{
    size_t len;
    uint8_t *want = nf_test_data(&len, "gguf/%s", file);
    cr_assert_eq(len, rows * row_bytes(t, COLS), "%s", file);
    result got;
    encode(level, t, x, rows, COLS, imp, &got);
    cr_assert_eq(got.st, NF_OK, "%s %s: %s", nf_simd_level_name(level), file, got.msg);
    for (size_t b = 0; b < len; b++)
        if (got.bytes[b] != want[b])
            cr_assert_fail("%s %s: byte %zu (row %zu, block %zu) 0x%02x, ggml 0x%02x", nf_simd_level_name(level), file,
                           b, b / row_bytes(t, COLS), b % row_bytes(t, COLS) / t->bb, got.bytes[b], want[b]);
    free(got.bytes);
    free(want);
}

/* ---------------------------------------------------------------- generated rows */

static uint64_t rng = GGML_ROWS_SEED;
static inline uint64_t next_u64(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static inline double unif(void) { return (double)(next_u64() >> 11) * 0x1p-53; }
static inline float gauss(void)
{
    double u = unif(), v = unif();
    return (float)(sqrt(-2.0 * log(u + 1e-300)) * cos(6.283185307179586 * v));
}

enum { K_NORMAL, K_OUTLIERS, K_ZERO_SUBS, K_SUBNORMAL, K_WIDE, K_TIES, K_CONSTANT, K_SINGLE, K_EXTREMES, K_COUNT };
static const char *const KIND_NAMES[K_COUNT] = {"normal", "outliers", GGML_ROWS_ZERO_NAME, "subnormal", "wide",
                                                "ties",   "constant", "single value",      "extremes"};

/* n values of kind k: random scales over 16 decades, outliers, zeros (groups of 16 and 32, and
 * super-blocks where asked), subnormals, a huge range, values on the half grid, constant groups,
 * a single value, repeated extremes of both signs. */
static inline void fill(int k, float *x, int n)
{
    float scale = (float)pow(10.0, -8.0 + 16.0 * unif()); /* random scales, 16 decades */
    for (int i = 0; i < n; i++) {
        float v = gauss() * scale;
        switch (k) {
        case K_OUTLIERS: v = (next_u64() % 97 == 0) ? v * 300.0f : v; break;
        case K_ZERO_SUBS:
            v = ((i / 16) % 3 == 0 || (i / 32) % 5 == 1 || (GGML_ROWS_ZERO_SUPER && (i / 256) % 3 == 2)) ? 0.0f : v;
            break;
        case K_SUBNORMAL: v = gauss() * 0x1p-140f * (float)(1 + next_u64() % 64); break;
        case K_WIDE: v = gauss() * (float)pow(10.0, -20.0 + 25.0 * unif()); break;
        case K_TIES: v = 0.5f * (float)((int)(next_u64() % (2u * GGML_ROWS_TIES + 1u)) - GGML_ROWS_TIES); break;
        case K_CONSTANT: v = ((i / 16) % 2 ? -1.0f : 0.75f) * ((i / 64) % 2 ? 3.0f : 1.0f); break;
        case K_SINGLE: v = (i % 37 == 5) ? scale : (i % 3 == 0 ? -0.0f : 0.0f); break;
        case K_EXTREMES: v = (next_u64() % 4 == 0) ? ((next_u64() & 1) ? scale : -scale) : v * 0.01f; break;
        default: break;
        }
        x[i] = v;
    }
}

/* n importances of kind m: none (NULL), random, random with zeros, all zero, all one (equal
 * weights: ties between neighbours).  A test takes the first 4 kinds or all IMP_KINDS. */
#define IMP_KINDS 5
static inline const float *importance(int m, float *imp, int n)
{
    if (m == 0) return NULL;
    for (int i = 0; i < n; i++) {
        float v = (float)(unif() * 4.0 + 1e-3);
        if (m == 2 && next_u64() % 5 == 0) v = 0.0f;
        if (m == 3) v = 0.0f;
        if (m == 4) v = 1.0f;
        imp[i] = v;
    }
    return imp;
}

/* per_kind rows of every kind, with each of the first imp_kinds importance kinds in turn: the
 * bytes of `level` equal the scalar level's for each of the ntypes types. */
static inline void expect_rows_same_as_scalar(nf_simd_level level, const qtype *types, size_t ntypes, int per_kind,
                                              int imp_kinds)
{
    float *x = malloc(sizeof(float) * (size_t)per_kind * COLS), imp[COLS];
    for (int k = 0; k < K_COUNT; k++)
        for (int m = 0; m < imp_kinds; m++) {
            for (int r = 0; r < per_kind; r++) fill(k, x + r * COLS, COLS);
            const float *ip = importance(m, imp, COLS);
            for (size_t i = 0; i < ntypes; i++)
                expect_same_as_scalar(level, &types[i], x, (uint64_t)per_kind, ip, KIND_NAMES[k]);
        }
    free(x);
}

#endif
