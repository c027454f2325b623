/* Internal interface of the method module: argument checks, source element loading, error
 * messages that name the tensor, and the two rounding primitives every encoder shares.
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
    return !p || (!p->importance && p->importance_len == 0 && !p->negative_scales);
}

/* Records "tensor 'name': row R <rest>" (or "row R <rest>" without a name) and returns status.
 * rest starts with the separator it needs (" col 3: ...", " group 1: ..."). */
nf_status nf_method_row_error(nf_error *err, nf_status status, const nf_src_rows *src, uint64_t row,
                              const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Column c of a chunk as the tensor's column, for messages (a span starts at src->first_col). */
static inline size_t nf_method_col(const nf_src_rows *src, size_t c) { return (size_t)src->first_col + c; }

/* Same without a row: "tensor 'name': <message>". */
nf_status nf_method_error(nf_error *err, nf_status status, const nf_src_rows *src, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Checks src (pointer, type, size fits in memory) and that out matches it in rows/cols; out's
 * arrays are checked by each encoder.  *row_elems receives cols as size_t. */
nf_status nf_method_check_rows(const nf_src_rows *src, const nf_words *out, size_t *row_elems,
                               nf_error *err);

/* "NaN", "+inf" or "-inf" for a non-finite binary32, for messages. */
const char *nf_method_nonfinite_name(float v);

/* grouped_absmax measuring as it encodes (the SIMD kernels measure in registers; grouped.c). */
nf_status nf_grouped_absmax_rows_measured(const nf_format *fmt, const nf_src_rows *src, nf_words *out,
                                          nf_errstats *st, nf_error *err);
/* The error statistics of words an encoder wrote for src (measure.c): every value of src
 * against the value its words represent. */
nf_status nf_method_measure_words(const nf_format *fmt, const nf_src_rows *src, const nf_words *out, nf_errstats *st,
                                  nf_error *err);

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

/* Row `row` (chunk-relative) of src, columns [c0, c0 + n), widened exactly to binary32 into out.
 * Only for F32/F16/BF16 sources (the caller checked). */
void nf_method_load_f32(const nf_src_rows *src, uint64_t row, size_t c0, size_t n, float *out);

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

/* Same as nf_method_load_f32, inline: on little-endian hosts F32 and BF16 elements are converted
 * here (with a constant n the loops vectorize); everything else goes to nf_method_load_f32. */
NF_METHOD_INLINE void nf_method_load_f32_inline(const nf_src_rows *src, uint64_t row, size_t c0, size_t n,
                                               float *out)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (src->type == NF_SRC_F32 || src->type == NF_SRC_BF16) {
        size_t esize = src->type == NF_SRC_F32 ? 4 : 2;
        const uint8_t *p = (const uint8_t *)src->data + ((size_t)row * (size_t)src->cols + c0) * esize;
        if (esize == 4) memcpy(out, p, n * sizeof(float));
        else nf_method_bf16_words_to_f32(p, n, out);
        return;
    }
#endif
    nf_method_load_f32(src, row, c0, n, out);
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

#endif
