/* fp8_row_maxabs (docs/methods.md, fp8_row_maxabs, docs/formats.md 7.3): E4M3FN
 * codes with one BF16 or binary16 multiplier per row.
 *
 * Upstream casts the source to BF16 first (torch `.to(bfloat16)`, nearest even) and quantizes
 * those values, so a binary32 or binary16 source is rounded to BF16 here too; a BF16 source is
 * used as is.  Each row is independent, so chunking cannot change a word.
 *
 * The loop here is the reference.  nf_fp8_row_maxabs_rows gives each row to the kernel of the
 * active SIMD level first (method/simd/fp8_simd.h: a portable fast kernel, AVX2+F16C and AVX-512
 * variants, all giving the reference's words bit for bit, tests/unit/test_method_fp8_simd.c);
 * a kernel declines exactly the rows the reference refuses, which then come here for the
 * message. */
#include <inttypes.h>

#include "method/common.h"
#include "method/method_impl.h"
#include "method/simd/fp8_simd.h"

#define E4M3_MAX 448.0f
#define NF_FP8_BLOCK 256 /* columns handled at a time: the scratch stays on the stack */

/* x[0..n) := BF16(x) with docs/methods.md, fp8_row_maxabs nearest-even formula (torch's rounding for finite
 * values).  Returns the largest magnitude word before rounding in *src_max and after it in the
 * result: a source word >= 0x7F800000 is a non-finite value, a rounded one an overflow of BF16.
 * (The formula is only applied for the result; on a NaN word it could wrap, which is why the
 * source maximum is taken separately.)  Two integer max reductions: the loop vectorizes. */
static uint32_t round_to_bf16(float *restrict x, size_t n, uint32_t *src_max)
{
    uint32_t ms = 0, mr = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t b;
        memcpy(&b, &x[i], sizeof b);
        uint32_t mag = b & 0x7FFFFFFFu;
        ms = mag > ms ? mag : ms;
        uint32_t r = (b + 0x7FFFu + ((b >> 16) & 1u)) & 0xFFFF0000u;
        uint32_t rmag = r & 0x7FFFFFFFu;
        mr = rmag > mr ? rmag : mr;
        memcpy(&x[i], &r, sizeof r);
    }
    *src_max = ms;
    return mr;
}

/* Columns [c0, c0 + n) of source row r widened to binary32 and rounded to BF16 (a BF16 source
 * is exact already); *max_w gets the largest magnitude word of the rounded values.  The first
 * offending column is reported: non-finite, or finite but beyond BF16's range (torch's cast
 * would make it infinite, which upstream then refuses). */
static nf_status load_bf16(const nf_src_rows *src, uint64_t r, size_t c0, size_t n, float *x, uint32_t *max_w,
                           nf_error *err)
{
    nf_method_load_f32_inline(src, r, c0, n, x);
    uint32_t src_max, m;
    if (src->type == NF_SRC_BF16) m = src_max = nf_method_amax_word(x, n);
    else m = round_to_bf16(x, n, &src_max);
    if (src_max >= 0x7F800000u || m >= 0x7F800000u) {
        /* Something is wrong in this block: reload the source values to name the first
         * offending column (the slow path runs once, on the way to an error). */
        nf_method_load_f32(src, r, c0, n, x);
        for (size_t i = 0; i < n; i++) {
            if (!isfinite(x[i]))
                return nf_method_row_error(err, NF_ERR_INVALID, src, r, " col %zu: source value %s is not finite",
                                           nf_method_col(src, c0 + i), nf_method_nonfinite_name(x[i]));
            if (!isfinite(nf_bf16_to_f32(nf_f32_to_bf16(x[i]))))
                return nf_method_row_error(err, NF_ERR_INVALID, src, r,
                                           " col %zu: source value %.9g overflows bfloat16", nf_method_col(src, c0 + i),
                                           (double)x[i]);
        }
    }
    *max_w = m;
    return NF_OK;
}

/* Scale word of a nonzero row maximum m, or false when a binary16 scale overflows. */
static bool row_scale(const nf_format *fmt, float m, uint16_t *word)
{
    /* f32(m / 448): the same number as float32(float64(m) / 448), see nf_recip_f32. */
    float raw = m / E4M3_MAX;
    uint16_t w;
    if (fmt->scale_type == NF_SCALE_BF16) {
        /* raw is finite and positive: nearest-even BF16 is upstream's
         * (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16, and cannot overflow here. */
        w = nf_f32_to_bf16(raw);
    } else {
        w = nf_f32_to_f16(raw);
        if ((w & 0x7C00u) == 0x7C00u) return false;
    }
    if (w == 0) w = 0x0001; /* smallest positive subnormal of either scale type */
    *word = w;
    return true;
}

/* Checks shared by the entry points; *k gets K. */
static nf_status check_args(const nf_format *fmt, const nf_src_rows *src, nf_words *out, size_t *k, nf_error *err)
{
    NF_TRY(nf_method_check_target(NF_METHOD_FP8_ROW_MAXABS, fmt, err));
    NF_TRY(nf_method_check_rows(src, out, k, err));
    if (src->type != NF_SRC_F32 && src->type != NF_SRC_F16 && src->type != NF_SRC_BF16)
        return nf_method_error(err, NF_ERR_INVALID, src, "fp8_row_maxabs needs a floating-point source, not %s",
                               nf_src_type_name(src->type));
    if (!out->codes8 || !out->scales)
        return nf_method_error(err, NF_ERR_USAGE, src, "output words lack the codes8/scales arrays of %s", fmt->name);
    return NF_OK;
}

/* Is src a span of a longer row (ninfer/method.h)? */
static bool span(const nf_src_rows *src) { return src->row_cols > src->cols; }

/* The first pass of the reference over row r: the largest magnitude word of its BF16 values. */
static nf_status row_max(const nf_src_rows *src, uint64_t r, size_t k, uint32_t *max_w, nf_error *err)
{
    float x[NF_FP8_BLOCK];
    uint32_t mw = 0;
    for (size_t c0 = 0; c0 < k; c0 += NF_FP8_BLOCK) {
        size_t n = k - c0 < NF_FP8_BLOCK ? k - c0 : NF_FP8_BLOCK;
        uint32_t bm;
        NF_TRY(load_bf16(src, r, c0, n, x, &bm, err));
        mw = bm > mw ? bm : mw;
    }
    *max_w = mw;
    return NF_OK;
}

/* Row r of the chunk by the reference loop.  A row is handled in column blocks so the scratch
 * stays on the stack whatever K is: one pass finds the row maximum, a second one (reloading the
 * block) selects the codes. */
static nf_status reference_row(const nf_format *fmt, const nf_src_rows *src, uint64_t r, size_t k, nf_words *out,
                               nf_error *err)
{
    float x[NF_FP8_BLOCK];
    uint8_t *codes = out->codes8 + (size_t)r * k;
    uint32_t mw = 0;
    if (span(src)) {
        mw = src->row_max; /* the whole row's, from nf_fp8_row_maxabs_max over its spans */
    } else {
        NF_TRY(row_max(src, r, k, &mw, err));
    }
    float m = nf_f32_from_bits(mw);
    if (m == 0.0f) { /* zero row: positive-zero codes (even for -0 inputs) and scale */
        memset(codes, 0x00, k);
        out->scales[r] = 0x0000;
        return NF_OK;
    }
    uint16_t word;
    if (!row_scale(fmt, m, &word))
        return nf_method_row_error(err, NF_ERR_INVALID, src, r, ": row scale %.9g / 448 = %.9g overflows binary16",
                                   (double)m, (double)(m / E4M3_MAX));
    float scale = fmt->scale_type == NF_SCALE_BF16 ? nf_bf16_to_f32(word) : nf_f16_to_f32(word);
    float inv = nf_recip_f32(scale);
    for (size_t c0 = 0; c0 < k; c0 += NF_FP8_BLOCK) {
        size_t n = k - c0 < NF_FP8_BLOCK ? k - c0 : NF_FP8_BLOCK;
        uint32_t bm;
        NF_TRY(load_bf16(src, r, c0, n, x, &bm, err));
        /* Normalize in place (each product its own binary32 rounding); one integer max
         * over the magnitudes detects a non-finite product, so this loop vectorizes. */
        uint32_t vm = 0;
        for (size_t i = 0; i < n; i++) {
            float v = x[i] * inv;
            uint32_t b;
            memcpy(&b, &v, sizeof b);
            b &= 0x7FFFFFFFu;
            vm = b > vm ? b : vm;
            x[i] = v;
        }
        if (vm >= 0x7F800000u) {
            size_t bad = nf_method_first_nonfinite(x, n);
            NF_TRY(load_bf16(src, r, c0, n, x, &bm, err)); /* the value again, for the message */
            return nf_method_row_error(err, NF_ERR_INVALID, src, r,
                                       " col %zu: normalized value %.9g * %.9g is not finite (row scale "
                                       "0x%04x is too small for its reciprocal)",
                                       nf_method_col(src, c0 + bad), (double)x[bad], (double)inv, word);
        }
        /* Clamp to +-448, nearest E4M3FN with ties to the even code, sign from v's sign bit
         * (so -0 and tiny negatives give 0x80): exactly nf_f32_to_e4m3fn. */
        for (size_t i = 0; i < n; i++) codes[c0 + i] = nf_f32_to_e4m3fn(x[i]);
    }
    out->scales[r] = word;
    return NF_OK;
}

nf_status nf_fp8_row_maxabs_rows_reference(const nf_format *fmt, const nf_src_rows *src, nf_words *out, nf_error *err)
{
    size_t k;
    NF_TRY(check_args(fmt, src, out, &k, err));
    for (uint64_t r = 0; r < src->rows; r++) NF_TRY(reference_row(fmt, src, r, k, out, err));
    return NF_OK;
}

nf_status nf_fp8_row_maxabs_rows(const nf_format *fmt, const nf_src_rows *src, nf_words *out, nf_error *err)
{
    size_t k;
    NF_TRY(check_args(fmt, src, out, &k, err));
    /* The active kernel (method/simd/fp8_simd.h) encodes a row to the reference's words or
     * declines it (a row the reference refuses), and the reference then names the error. */
    /* a span of a longer row takes its scale from the whole row: the reference, given row_max */
    bool whole_rows = !span(src);
    nf_fp8_row_fn kernel = nf_fp8_kernels_active()->row;
    bool fp16_scale = fmt->scale_type != NF_SCALE_BF16;
    size_t row_bytes = k * nf_src_type_size(src->type);
    for (uint64_t r = 0; r < src->rows; r++) {
        if (whole_rows && kernel((const uint8_t *)src->data + (size_t)r * row_bytes, src->type, k, fp16_scale,
                                 out->codes8 + (size_t)r * k, &out->scales[r]))
            continue;
        NF_TRY(reference_row(fmt, src, r, k, out, err));
    }
    return NF_OK;
}

nf_status nf_fp8_row_maxabs_max(const nf_format *fmt, const nf_src_rows *src, uint32_t *max_word, nf_error *err)
{
    NF_TRY(nf_method_check_target(NF_METHOD_FP8_ROW_MAXABS, fmt, err));
    if (!src || !max_word) return nf_error_set(err, NF_ERR_USAGE, "nf_fp8_row_maxabs_max: missing argument");
    if (src->type != NF_SRC_F32 && src->type != NF_SRC_F16 && src->type != NF_SRC_BF16)
        return nf_method_error(err, NF_ERR_INVALID, src, "fp8_row_maxabs needs a floating-point source, not %s",
                               nf_src_type_name(src->type));
    size_t k;
    if (!nf_u64_to_size(src->cols, &k) || (src->rows && !src->data))
        return nf_method_error(err, NF_ERR_USAGE, src, "no source data");
    uint32_t m = 0;
    for (uint64_t r = 0; r < src->rows; r++) {
        uint32_t rm;
        NF_TRY(row_max(src, r, k, &rm, err));
        m = rm > m ? rm : m;
    }
    *max_word = m;
    return NF_OK;
}
