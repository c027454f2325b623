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
 *   GGML_ROWS_ZERO_NAME   the name of K_ZERO_SUBS in messages (default "zero groups") */
#ifndef TEST_GGML_ROWS_UTIL_H
#define TEST_GGML_ROWS_UTIL_H

#include <criterion/criterion.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

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

#endif
