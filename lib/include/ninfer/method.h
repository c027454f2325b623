/* ninfer/method.h - the built-in conversion methods (docs/methods.md): encoders that
 * turn floating-point (or integer) source rows into the logical words of a format, ready for
 * nf_layout_encode_rows (ninfer/layout.h).
 *
 *   cast_direct     bf16 / fp32 / int32: one word per element (docs/methods.md)
 *   grouped_absmax  q4 / q5 / q6 / q8: the canonical reference encoder of docs/formats.md
 *                   5.5, bit for bit (docs/methods.md, grouped_absmax)
 *   grouped_search  q4 / q5 / q6 / q8: absmax plus 68 candidate scales, importance-weighted
 *                   (docs/methods.md, grouped_search)
 *   fp8_row_maxabs  fp8_e4m3fn_row_bf16 / _fp16: BF16-rounded rows, one scale per row (5.5)
 *   ggml_quantize   gguf_q8_0 / q4_0 / q5_0 / q2_k ... q6_k / iq4_nl / iq4_xs: the bytes ggml's
 *                   quantizer writes
 *                   (docs/methods.md, ggml_quantize)
 *   nvfp4_quantize  nvfp4: NVIDIA ModelOpt's NVFP4 weight quantizer, one global scale per matrix
 *                   from its largest magnitude (docs/methods.md, nvfp4_quantize)
 *   nvfp4_search    nvfp4: the same, each group's scale word the least-error one near
 *                   nvfp4_quantize's, importance-weighted (docs/methods.md, nvfp4_search)
 *
 * Chunks.  A call encodes a chunk of consecutive rows [first_row, first_row + rows) of one
 * [N,K] matrix (a direct tensor is viewed as rows x last dimension, as layout.h does).  Every
 * row, and for grouped formats every group, is encoded on its own, so the words never depend on
 * how a tensor is cut into chunks.  Calls keep no state, allocate nothing and touch only their
 * arguments: chunks of one tensor may be encoded concurrently on several threads.
 *
 * Sources.  Elements are given as their raw little-endian bytes, row-major, at any alignment
 * (exactly what a safetensors or GGUF mapping holds).  BF16 and binary16 elements widen to
 * binary32 exactly; there is no floating-point source wider than binary32.
 *
 * Floating-point environment.  The arithmetic is the spec's binary32/binary64 round-to-nearest-
 * even arithmetic done by the host FPU, so the calling thread must run in the default
 * environment: rounding to nearest, no flush-to-zero or denormals-are-zero.  Scalar codecs
 * (binary16, bfloat16, E4M3FN) are the exact bit-level ones of ninfer/format.h.
 *
 * Errors.  NF_ERR_INVALID for input the method refuses (non-finite source value, a scale the
 * format cannot hold, an int32 out of range, a format the method does not target, bad
 * importance); messages name the tensor, the absolute row and the column or group, e.g.
 * "tensor 'w': row 3 col 17: source value NaN is not finite".  NF_ERR_USAGE for inconsistent
 * arguments (sizes that do not match, missing arrays).  On failure the output words are
 * unspecified.
 */
#ifndef NINFER_METHOD_H
#define NINFER_METHOD_H

#include <ninfer/export.h>
#include <ninfer/simd.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ninfer/error.h>
#include <ninfer/format.h>
#include <ninfer/layout.h>
#include <ninfer/stats.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- methods */
typedef enum nf_method_id {
    NF_METHOD_CAST_DIRECT,
    NF_METHOD_GROUPED_ABSMAX,
    NF_METHOD_GROUPED_SEARCH,
    NF_METHOD_FP8_ROW_MAXABS,
    NF_METHOD_IMPORT_ENCODED, /* named for recipes and target checks; copies words, so it has
                                 no row encoder here */
    NF_METHOD_GGML_QUANTIZE,  /* gguf_* blocks with ggml's own bytes (docs/methods.md) */
    NF_METHOD_NVFP4_QUANTIZE, /* nvfp4 from floats, one divisor per matrix (docs/methods.md) */
    NF_METHOD_NVFP4_SEARCH,   /* the same with a least-error scale per group (docs/methods.md) */
    NF_METHOD_COUNT
} nf_method_id;

/* "grouped_absmax" etc.; NULL for an out-of-range id. */
NF_API const char *nf_method_name(nf_method_id id);
/* Exact, case-sensitive name -> id; NF_ERR_INVALID "unknown method 'x'" otherwise. */
NF_API nf_status nf_method_find(const char *name, nf_method_id *out, nf_error *err);
/* Does the method target this format (docs/methods.md and docs/decisions.md D5)?
 * NF_ERR_INVALID with the reason otherwise, e.g. "grouped_absmax cannot target q2_g64_fp16:
 * it requires import_encoded (trained GSQ Q2_0 codes)". */
NF_API nf_status nf_method_check_target(nf_method_id id, const nf_format *fmt, nf_error *err);

/* ---------------------------------------------------------------- source rows */
/* Source element types, spelled as safetensors dtypes.  Floating types feed every method;
 * integer types feed cast_direct to int32 only. */
typedef enum nf_src_type {
    NF_SRC_F32,
    NF_SRC_F16,
    NF_SRC_BF16,
    NF_SRC_I8,
    NF_SRC_I16,
    NF_SRC_I32,
    NF_SRC_I64,
    NF_SRC_U8,
    NF_SRC_U16,
    NF_SRC_U32,
    NF_SRC_U64,
    NF_SRC_BOOL, /* one byte, 0 or 1 (other bytes are refused) */
    NF_SRC_COUNT
} nf_src_type;

/* Bytes per element (0 for an out-of-range type). */
NF_API size_t nf_src_type_size(nf_src_type type);
/* "F32", "BF16", "BOOL", ...; NULL for an out-of-range type. */
NF_API const char *nf_src_type_name(nf_src_type type);
/* Safetensors dtype spelling -> type; false when not one of the above (e.g. "F64"). */
NF_API bool nf_src_type_lookup(const char *name, nf_src_type *out);

/* One chunk of source rows, or of columns of them.  A chunk of whole rows leaves the last three
 * members zero.  A span of a row too long for memory (docs/layouts.md "Spans of a row") sets
 * first_col to its first column (a multiple of NF_COLSPAN_ALIGN) and row_cols to the row's full
 * length: every method encodes columns independently of each other except fp8_row_maxabs, whose
 * row scale comes from the whole row, so its spans also carry row_max (nf_fp8_row_maxabs_max of
 * all the row's spans), and ggml_quantize into gguf_q4_0 / gguf_q5_0 with an importance vector,
 * whose weights use the mean square of the whole row, so its spans carry row_sum2
 * (nf_ggml_quantize_row_sum2 of all the row's spans, in column order).  nvfp4_quantize's global
 * scale comes from the whole matrix (nvfp4_search's too): every chunk of it carries matrix_max
 * (nf_nvfp4_quantize_max of all the matrix's rows). */
typedef struct nf_src_rows {
    const char *name; /* tensor name for error messages; NULL for none */
    nf_src_type type;
    const void *data;   /* rows * cols elements, row-major, little-endian, any alignment */
    uint64_t first_row; /* absolute index of data's first row (messages; a stack's importance,
                           nf_method_params.importance_rows, picks each row's matrix by it) */
    uint64_t rows;      /* rows in this chunk (0 is a no-op) */
    uint64_t cols;      /* K, or the span's columns */
    uint64_t first_col; /* absolute index of data's first column (messages; a span's importance is the caller's) */
    uint64_t row_cols;  /* a span: the row's length; 0: the rows are whole */
    uint32_t row_max;   /* a span, fp8_row_maxabs: the largest magnitude word of the whole row */
    float row_sum2;     /* a span, ggml_quantize (has_row_sum2 set): the whole row's sum of x^2 */
    bool has_row_sum2;
    uint32_t matrix_max; /* nvfp4_quantize (has_matrix_max set): the largest magnitude word of the
                              whole matrix; without it the chunk is taken as the whole matrix */
    bool has_matrix_max;
} nf_src_rows;

/* ---------------------------------------------------------------- parameters */
/* Parameters of grouped_search and (importance only) ggml_quantize and nvfp4_search; the other methods take none
 * (zero-initialised or NULL). */
typedef struct nf_method_params {
    /* One weight per input channel (column), K binary32 values, finite and >= 0 (the
     * importance-matrix vector of the tensor).  NULL: every channel weighs 1. */
    const float *importance;
    uint64_t importance_len;
    bool negative_scales; /* let negative candidate scales compete */
    /* A stack of matrices with a vector each (an experts tensor [E, R, K] and its imatrix entry of
     * E rows, docs/methods.md "Importance"): importance_rows R > 0 rows per matrix, importance_mats
     * E, and matrix m's vector at importance + m * importance_stride (the tensor's K; importance
     * itself is matrix 0's, at a span's first column when the chunk is a span).  The dispatcher
     * cuts a chunk at its matrices' boundaries and gives each piece its vector (absolute rows:
     * nf_src_rows.first_row).  0: one vector for every row. */
    uint64_t importance_rows, importance_mats, importance_stride;
} nf_method_params;

/* Check params against a method and the tensor's K once, before encoding chunks (the row
 * encoders check them too).  NULL params means none. */
NF_API nf_status nf_method_check_params(nf_method_id id, const nf_method_params *params, uint64_t cols, nf_error *err);
/* Check that the method with params can encode into fmt, once the two calls above accept them:
 * ggml_quantize into gguf_iq2_xxs and gguf_iq2_xs needs an importance vector, as ggml's
 * quantizer does (ggml_quantize_requires_imatrix; docs/methods.md "ggml_quantize").
 * NF_ERR_USAGE naming the format otherwise. */
NF_API nf_status nf_method_check_choice(nf_method_id id, const nf_format *fmt, const nf_method_params *params,
                                        nf_error *err);

/* ---------------------------------------------------------------- row encoders */
/* Each writes the words of src's rows into out, whose rows/cols must equal src's and which must
 * hold the arrays of fmt's category (nf_words_alloc for src->rows rows does that): w16 / w32
 * for direct formats, codes + scales (ceil(K/G) per row) for grouped ones, codes8 + scales (one
 * per row) for fp8 rows. */

/* cast_direct.  bf16: F32/F16 sources round to nearest even; NaN becomes the canonical quiet
 *   NaN 0x7FC0 whatever its sign and payload (torch's conversion, docs/methods.md); a BF16
 *   source is copied word for word (NaN payloads included).  fp32: F32 words are copied, F16
 *   and BF16 widen exactly (NaN payloads move to the high fraction bits).  int32: integer
 *   sources must lie in [-2^31, 2^31-1]; floating sources truncate toward zero and must be
 *   finite with the truncated value in range.  Integer sources to bf16/fp32 are refused. */
NF_API nf_status nf_cast_direct_rows(const nf_format *fmt, const nf_src_rows *src, nf_words *out, nf_error *err);

/* grouped_absmax (q4/q5/q6/q8; q2 and t2 are refused): per group of G logical values (the last
 * group of a row holds K mod G of them when G does not divide K):
 *   amax = max |x|; amax == 0 -> scale +0, codes 0;
 *   scale16 = f16(f32(amax / qmax)), 0 -> 0x0001, infinite -> refused;
 *   inv = f32(1 / scale32); code = clamp(round_half_even(f32(x * inv)), qmin, qmax).
 * Non-finite source values are refused. */
NF_API nf_status nf_grouped_absmax_rows(const nf_format *fmt, const nf_src_rows *src, nf_words *out, nf_error *err);

/* grouped_search (q4/q5/q6/q8): the absmax result unless one of 68 further candidate scales, in
 * docs/methods.md, grouped_search fixed order, has a strictly smaller error
 *   sum_k imp[k] * (x[k] - s * q[k])^2     (binary64, lanes summed in k order)
 * over the group's logical lanes.  Candidates round float64 -> float32 -> binary16, a nonzero
 * candidate that underflows becomes +-2^-24, an overflowing one is dropped, negative ones
 * compete only with params->negative_scales.  The extreme of the full-range candidates is the
 * first lane holding the largest magnitude (docs/decisions.md D13); the fit x2^-1 / x2^1
 * candidates scale the binary16-rounded fit, as upstream's implementation does.  A group whose
 * importance is all zero keeps the absmax result.  params may be NULL (no importance,
 * positive scales only). */
NF_API nf_status nf_grouped_search_rows(const nf_format *fmt, const nf_method_params *params, const nf_src_rows *src,
                                        nf_words *out, nf_error *err);

/* fp8_row_maxabs (fp8_e4m3fn_row_bf16 / _fp16): every value is first rounded to BF16 (nearest
 * even; a non-finite value, or one that overflows BF16, is refused), then per row:
 *   m = max |x|; m == 0 -> every code 0x00, scale +0;
 *   raw = f32(m / 448); scale = bf16(raw) or f16(raw) (nearest even), 0 -> 0x0001, an
 *   infinite binary16 scale is refused;
 *   inv = f32(1 / scale32); code = E4M3FN(clamp(f32(x * inv), +-448)), nearest with ties to the
 *   even code, sign from x's sign bit (-0 gives 0x80); a non-finite x * inv is refused (a BF16
 *   scale below about 2^-128 has an infinite reciprocal). */
NF_API nf_status nf_fp8_row_maxabs_rows(const nf_format *fmt, const nf_src_rows *src, nf_words *out, nf_error *err);

/* ggml_quantize (gguf_q8_0, gguf_q4_0, gguf_q5_0, gguf_q2_k, gguf_q3_k, gguf_q4_k, gguf_q5_k,
 *   gguf_q6_k, gguf_iq4_nl, gguf_iq4_xs, gguf_iq1_s, gguf_iq1_m): the blocks ggml_quantize_chunk writes for the same binary32 values, byte for
 *   byte (docs/methods.md names the ggml version).  out->blocks receives rows * (cols / block
 *   values) blocks.  params->importance, when given, takes ggml's importance path (Q8_0 ignores
 *   it, as ggml does); negative_scales is refused; gguf_iq1_s without importance is refused
 *   (NF_ERR_USAGE), as ggml refuses it.  A row length (or span) that is not a
 *   multiple of the block's values, a non-finite source value, a block whose d or dmin would
 *   overflow binary16, and a block ggml itself aborts on (IQ1) are refused with the tensor, row
 *   and column or block.  Q4_0 and Q5_0 with
 *   importance weigh by the whole row, so they refuse a span of a row (NF_ERR_USAGE). */
NF_API nf_status nf_ggml_quantize_rows(const nf_format *fmt, const nf_method_params *params, const nf_src_rows *src,
                                       nf_words *out, nf_error *err);
/* The first pass of ggml_quantize over a span of one row (src->rows 1): adds the span's x^2 to
 * *sum2 in column order, as ggml sums the whole row, for the row_sum2 of the row's spans (the
 * spans given in column order).  Nothing for the formats whose weights do not use it. */
NF_API nf_status nf_ggml_quantize_row_sum2(const nf_format *fmt, const nf_src_rows *src, float *sum2, nf_error *err);

/* nvfp4_quantize (nvfp4; docs/methods.md, nvfp4_quantize, gives every rounding): from the
 * matrix's largest magnitude m (src->matrix_max, or the chunk's own when has_matrix_max is false)
 * the global scale gs = f32(m / 2688) and the divisor d = f32(1 / gs) (d = 1, gs = 1 for an
 * all-zero matrix); per group of 16: s = f32(bmax / f32(6 * gs)), 0 -> 1, at least 2^-9, to E4M3FN
 * (nearest even, at most 448); each code is E2M1 of f32(x / f32(e4m3(s) * gs)), nearest with ties
 * to even, saturating at 6, negative when the quotient is.  out->codes8 and out->scales8 get the
 * words and out->divisors[0] (when given) d.  K must be a multiple of 16 (the layout asks 64);
 * non-finite values, and a nonzero m whose divisor is not a finite binary32 (m below about
 * 7.9e-36), are refused.  params must be empty. */
NF_API nf_status nf_nvfp4_quantize_rows(const nf_format *fmt, const nf_method_params *params, const nf_src_rows *src,
                                        nf_words *out, nf_error *err);
/* The first pass of nvfp4_quantize over src (rows, or a span of one row): the largest magnitude
 * word of its values, for matrix_max (the maximum of the words of every chunk of the matrix).
 * Refuses a non-finite value naming its row and column. */
NF_API nf_status nf_nvfp4_quantize_max(const nf_src_rows *src, uint32_t *max_word, nf_error *err);
/* nvfp4_search (nvfp4): nvfp4_quantize's global scale, divisor and code rule, and per group the
 * scale word among nvfp4_quantize's word w0 and w0 -1, +1, -2, +2, -3, +3, -4, +4 (those in
 * 0x01..0x7E, in that order) whose codes give the least
 *   sum_k imp[k] * (x[k] - v[k])^2     (binary64, in column order; v the represented value)
 * a candidate replacing the best so far only when strictly smaller, so the result is never worse
 * than nvfp4_quantize's on that sum.  params->importance (K weights, finite, >= 0) or NULL
 * (every column 1); negative_scales is refused. */
NF_API nf_status nf_nvfp4_search_rows(const nf_format *fmt, const nf_method_params *params, const nf_src_rows *src,
                                      nf_words *out, nf_error *err);
/* The divisor word nvfp4_quantize stores for a matrix whose largest magnitude word is max_word;
 * NF_ERR_INVALID (naming src's tensor, when given) when it is not a finite binary32. */
NF_API nf_status nf_nvfp4_quantize_divisor(const nf_src_rows *src, uint32_t max_word, uint32_t *divisor, nf_error *err);

/* Dispatch to one of the encoders above (import_encoded -> NF_ERR_USAGE).  params is only read by
 * grouped_search, ggml_quantize and nvfp4_search; the others refuse non-empty parameters. */
NF_API nf_status nf_method_encode_rows(nf_method_id id, const nf_format *fmt, const nf_method_params *params,
                                       const nf_src_rows *src, nf_words *out, nf_error *err);

/* The first pass of fp8_row_maxabs over src (every row of it, or a span of one row): the largest
 * magnitude word of its values rounded to BF16, for the row_max of the row's spans.  Refuses a
 * non-finite value or one beyond BF16's range, naming it (the method's own messages). */
NF_API nf_status nf_fp8_row_maxabs_max(const nf_format *fmt, const nf_src_rows *src, uint32_t *max_word, nf_error *err);

/* nf_method_encode_rows, and the error statistics of the rows it encodes added to *stats
 * (ninfer/stats.h): each source value (widened exactly to binary32; integer sources have none,
 * their pairs are skipped) against the value its words represent.  grouped_absmax measures in
 * the same pass as it encodes; the others measure the words they wrote.  stats NULL: exactly
 * nf_method_encode_rows.  The figures do not depend on how rows are cut into calls.  On failure
 * *stats may hold part of the chunk's figures: discard it (convert measures each chunk into an
 * accumulator of its own and merges it only when the chunk succeeds). */
NF_API nf_status nf_method_encode_rows_measured(nf_method_id id, const nf_format *fmt, const nf_method_params *params,
                                                const nf_src_rows *src, nf_words *out, nf_errstats *stats,
                                                nf_error *err);


#ifdef __cplusplus
}
#endif
#endif
