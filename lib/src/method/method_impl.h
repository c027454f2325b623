/* The method module's shared inline primitives: element loading (little-endian words, BF16),
 * and the two rounding primitives every encoder shares.  It declares no function of a file of
 * the module: common.c's checks and messages are in common.h, the dispatcher's calls into
 * grouped.c and measure.c in grouped.h and measure.h.
 *
 * The encoders lean on the host FPU for binary32/binary64 arithmetic, so this header refuses
 * to build where that arithmetic is not exact IEEE (excess precision).  FMA contraction is
 * excluded by the build (-ffp-contract=off): x * inv must round on its own. */
#ifndef NINFER_METHOD_IMPL_H
#define NINFER_METHOD_IMPL_H

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <ninfer/method.h>

#include "common/checked.h"

#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "the method encoders need binary32/binary64 evaluation without excess precision"
#endif

/* Inline even at -O2, so that a call with a constant length gets a known trip count and its
 * loop vectorizes under -O2's cost model. */
#define NF_METHOD_INLINE static inline __attribute__((always_inline))

/* Largest group size of a grouped format (t2's 128): per-group scratch lives on the stack. */
#define NF_METHOD_MAX_GROUP 128u

/* No parameters given: what every method but grouped_search requires (common.c, dispatch.c). */
static inline bool nf_method_params_empty(const nf_method_params *p)
{
    return !p || (!p->importance && p->importance_len == 0 && !p->negative_scales && p->importance_rows == 0);
}

/* Column c of a chunk as the tensor's column, for messages (a span starts at src->first_col). */
static inline size_t nf_method_col(const nf_src_rows *src, size_t c) { return (size_t)src->first_col + c; }

/* ---------------------------------------------------------------- element loading */
static inline uint16_t nf_method_le16(const uint8_t *p) { return (uint16_t)(p[0] | (unsigned)p[1] << 8); }

static inline uint32_t nf_method_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t nf_method_le64(const uint8_t *p)
{
    return (uint64_t)nf_method_le32(p) | (uint64_t)nf_method_le32(p + 4) << 32;
}

/* BF16 words (host order, any alignment) -> binary32; restrict lets the loop vectorize. */
NF_METHOD_INLINE void nf_method_bf16_words_to_f32(const uint8_t *restrict p, size_t n, float *restrict out)
{
    for (size_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, p + 2 * i, sizeof h);
        uint32_t bits = (uint32_t)h << 16;
        memcpy(&out[i], &bits, sizeof bits);
    }
}

/* Index of the first non-finite value of v[0..n), or n. */
static inline size_t nf_method_first_nonfinite(const float *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i])) return i;
    return n;
}

/* ---------------------------------------------------------------- rounding */
/* code = clamp(round_half_even(f32(x * inv)), qmin, qmax) (docs/formats.md 5.5).  The product
 * is its own binary32 rounding: the spec's reciprocal multiply, never x / scale.
 *
 * The clamp is applied before the integral rounding, which gives the same integer: rounding is
 * monotonic and leaves the integers qmin and qmax fixed.  Clamping first bounds the value to
 * [-128, 127] (an infinite product included), where adding and subtracting 1.5 * 2^23 rounds
 * it to an integer, ties to even, without a branch: the sum lies in [2^23, 2^24), where the
 * binary32 spacing is exactly 1.  So the whole loop over a group vectorizes. */
NF_METHOD_INLINE int8_t nf_grouped_code(float x, float inv, float qmin, float qmax)
{
    const float magic = 12582912.0f; /* 1.5 * 2^23 */
    float n = x * inv;
    n = n < qmin ? qmin : n;
    n = n > qmax ? qmax : n;
    float r = (n + magic) - magic;
    return (int8_t)(int)r;
}

/* f32(1 / s) for a finite nonzero scale.  docs/methods.md writes binary32(1 / scale) and docs/formats.md
 * 5.5 says the same; they are the same number, since a binary64
 * quotient of binary32 operands rounded again to binary32 is the correctly rounded binary32
 * quotient (53 >= 2*24 + 2).  So one binary32 division it is. */
static inline float nf_recip_f32(float s) { return 1.0f / s; }

/* max |x| as a binary32 word: with the sign cleared, the words of non-NaN values order like
 * their magnitudes, and every infinity or NaN word is >= 0x7F800000, so one integer max both
 * finds amax and tells whether the values are finite (grouped.c, fp8_row_maxabs.c and the portable
 * search kernel share it). */
NF_METHOD_INLINE uint32_t nf_method_amax_word(const float *x, size_t n)
{
    uint32_t m = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t b;
        memcpy(&b, &x[i], sizeof b);
        b &= 0x7FFFFFFFu;
        m = b > m ? b : m;
    }
    return m;
}

#endif
