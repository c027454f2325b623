/* nvfp4_quantize (docs/methods.md, nvfp4_quantize; docs/formats.md 6): nvfp4 words from
 * floating-point weights, as NVIDIA's TensorRT-Model-Optimizer quantizes a weight for export
 * (NVFP4QTensor, its dynamic path), so that the words are those an import_encoded of ModelOpt's
 * checkpoint of the same values would store.
 *
 * One global scale per matrix comes from its largest magnitude, which a first pass over every
 * chunk finds (nf_nvfp4_quantize_max, carried in nf_src_rows.matrix_max); every group of 16 is
 * then encoded on its own, so neither chunks nor spans change a word.
 *
 * The loop here is the reference, written from docs/methods.md step by step.
 * nf_nvfp4_quantize_rows gives each row to the kernel of the active SIMD level
 * (method/simd/nvfp4_simd.h: a portable kernel, AVX2 and AVX-512 variants, all giving the
 * reference's words bit for bit, tests/unit/test_method_nvfp4.c); a kernel declines exactly the
 * rows the reference refuses, which then come here for the message. */
#include <inttypes.h>

#include "method/common.h"
#include "method/method_impl.h"
#include "method/simd/nvfp4_simd.h"

#define NF_NVFP4_BLOCK 256u /* columns loaded at a time: the scratch stays on the stack */

/* Checks shared by the entry points of method id; *k gets K. */
static nf_status check_args(nf_method_id id, const nf_format *fmt, const nf_method_params *params,
                            const nf_src_rows *src, nf_words *out, size_t *k, nf_error *err)
{
    NF_TRY(nf_method_check_target(id, fmt, err));
    if (id == NF_METHOD_NVFP4_QUANTIZE && !nf_method_params_empty(params))
        return nf_method_error(err, NF_ERR_INVALID, src, "nvfp4_quantize takes no parameters");
    NF_TRY(nf_method_check_rows(src, out, k, err));
    if (id == NF_METHOD_NVFP4_SEARCH) {
        nf_status st = nf_method_check_params(id, params, src->cols, err);
        if (st != NF_OK) return src->name ? nf_error_forward(err, st, "tensor '%s'", src->name) : st;
    }
    if (src->type != NF_SRC_F32 && src->type != NF_SRC_F16 && src->type != NF_SRC_BF16)
        return nf_method_error(err, NF_ERR_INVALID, src, "%s needs a floating-point source, not %s", nf_method_name(id),
                               nf_src_type_name(src->type));
    if (*k % NF_NVFP4_GROUP)
        return nf_method_error(err, NF_ERR_INVALID, src, "a row of %zu values is not a multiple of nvfp4's group of 16",
                               *k);
    if (!out->codes8 || !out->scales8)
        return nf_method_error(err, NF_ERR_USAGE, src, "output words lack the codes8/scales8 arrays of %s", fmt->name);
    return NF_OK;
}

/* Columns [c0, c0 + n) of row r as binary32 into x, refusing the first non-finite one.  A whole
 * block is loaded and scanned with a constant length, so that those loops vectorize. */
static nf_status load_finite(const nf_src_rows *src, uint64_t r, size_t c0, size_t n, float *x, nf_error *err)
{
    uint32_t mw;
    if (n == NF_NVFP4_BLOCK) {
        nf_method_load_f32_inline(src, r, c0, NF_NVFP4_BLOCK, x);
        mw = nf_method_amax_word(x, NF_NVFP4_BLOCK);
    } else {
        nf_method_load_f32_inline(src, r, c0, n, x);
        mw = nf_method_amax_word(x, n);
    }
    if (mw < 0x7F800000u) return NF_OK;
    size_t bad = nf_method_first_nonfinite(x, n);
    return nf_method_row_error(err, NF_ERR_INVALID, src, r, " col %zu: source value %s is not finite",
                               nf_method_col(src, c0 + bad), nf_method_nonfinite_name(x[bad]));
}

nf_status nf_nvfp4_quantize_max(const nf_src_rows *src, uint32_t *max_word, nf_error *err)
{
    if (!src || !max_word) return nf_error_set(err, NF_ERR_USAGE, "nf_nvfp4_quantize_max: missing argument");
    if (src->type != NF_SRC_F32 && src->type != NF_SRC_F16 && src->type != NF_SRC_BF16)
        return nf_method_error(err, NF_ERR_INVALID, src, "nvfp4_quantize needs a floating-point source, not %s",
                               nf_src_type_name(src->type));
    size_t k;
    if (!nf_u64_to_size(src->cols, &k) || (src->rows && !src->data))
        return nf_method_error(err, NF_ERR_USAGE, src, "no source data");
    float x[NF_NVFP4_BLOCK];
    uint32_t m = 0;
    for (uint64_t r = 0; r < src->rows; r++) {
        for (size_t c0 = 0; c0 < k; c0 += NF_NVFP4_BLOCK) {
            size_t n = k - c0 < NF_NVFP4_BLOCK ? k - c0 : NF_NVFP4_BLOCK;
            NF_TRY(load_finite(src, r, c0, n, x, err));
            uint32_t bm = nf_method_amax_word(x, n);
            m = bm > m ? bm : m;
        }
    }
    *max_word = m;
    return NF_OK;
}

/* The global numbers of the matrix (nvfp4_simd.h), or the refusal of a divisor that is not a
 * finite binary32. */
static nf_status global_of(const nf_src_rows *src, uint32_t mw, nf_nvfp4_global *g, nf_error *err)
{
    if (mw >= 0x7F800000u)
        return nf_method_error(err, NF_ERR_USAGE, src, "matrix maximum word 0x%08" PRIX32 " is not finite", mw);
    if (nf_nvfp4_global_of(mw, g)) return NF_OK;
    float m = nf_f32_from_bits(mw);
    return nf_method_error(err, NF_ERR_INVALID, src,
                           "largest magnitude %.9g is too small for nvfp4: the global scale %.9g / 2688 = %.9g has "
                           "no finite binary32 reciprocal to store as the divisor",
                           (double)m, (double)m, (double)(m / 2688.0f));
}

nf_status nf_nvfp4_quantize_divisor(const nf_src_rows *src, uint32_t max_word, uint32_t *divisor, nf_error *err)
{
    if (!divisor) return nf_error_set(err, NF_ERR_USAGE, "nf_nvfp4_quantize_divisor: missing argument");
    nf_nvfp4_global g = {0.0f, 0.0f, 0};
    NF_TRY(global_of(src, max_word, &g, err));
    *divisor = g.divisor;
    return NF_OK;
}

/* ---------------------------------------------------------------- the reference */

/* The E2M1 word nearest to y, ties to the even word, saturating at 6 (ModelOpt's cast: bounds
 * 0.25, 0.75, ..., 5 with the ties at 0.75, 1.75 and 3.5 going up); bit 3 when y < 0 (so a -0
 * quotient gives +0's word).  Plain nearest search over the eight magnitudes; the distances are
 * taken in binary64, where the ties (midpoints of two E2M1 values) are exact. */
static uint8_t ref_code(float y)
{
    static const double mag[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
    double a = fabs((double)y);
    unsigned best = 7;
    if (a < 6.0) {
        best = 0;
        for (unsigned c = 1; c < 8; c++) {
            double d = fabs(a - mag[c]), db = fabs(a - mag[best]);
            if (d < db || (d == db && c % 2 == 0)) best = c;
        }
    }
    return (uint8_t)(best | (y < 0.0f ? 8u : 0u));
}

/* One group of 16 finite values: its scale word and codes. */
static void ref_group(const float *x, const nf_nvfp4_global *g, uint8_t *codes, uint8_t *scale)
{
    float bmax = 0.0f;
    for (unsigned i = 0; i < NF_NVFP4_GROUP; i++) bmax = fabsf(x[i]) > bmax ? fabsf(x[i]) : bmax;
    float s = bmax / g->six_gs;                         /* f32(bmax / f32(6 * gs)) */
    if (s == 0.0f) s = 1.0f;                            /* ModelOpt: a zero block scale becomes 1 */
    if (s < NF_NVFP4_SCALE_MIN) s = NF_NVFP4_SCALE_MIN; /* ... and none underflows E4M3FN */
    uint8_t e = nf_f32_to_e4m3fn(s);                    /* nearest even; s < 464 here, so at most 448 */
    float sv = nf_e4m3fn_to_f32(e) * g->gs;             /* f32(e4m3 * gs), positive */
    for (unsigned i = 0; i < NF_NVFP4_GROUP; i++) codes[i] = ref_code(x[i] / sv);
    *scale = e;
}

/* A chunk's global numbers: the matrix's, or the chunk's own maximum. */
static nf_status chunk_global(const nf_src_rows *src, nf_nvfp4_global *g, nf_error *err)
{
    uint32_t mw = src->matrix_max;
    if (!src->has_matrix_max) NF_TRY(nf_nvfp4_quantize_max(src, &mw, err));
    return global_of(src, mw, g, err);
}

nf_status nf_nvfp4_quantize_rows_reference(const nf_format *fmt, const nf_method_params *params, const nf_src_rows *src,
                                           nf_words *out, nf_error *err)
{
    size_t k;
    NF_TRY(check_args(NF_METHOD_NVFP4_QUANTIZE, fmt, params, src, out, &k, err));
    nf_nvfp4_global g = {0.0f, 0.0f, 0};
    NF_TRY(chunk_global(src, &g, err));
    float x[NF_NVFP4_BLOCK];
    for (uint64_t r = 0; r < src->rows; r++) {
        for (size_t c0 = 0; c0 < k; c0 += NF_NVFP4_BLOCK) {
            size_t n = k - c0 < NF_NVFP4_BLOCK ? k - c0 : NF_NVFP4_BLOCK;
            NF_TRY(load_finite(src, r, c0, n, x, err));
            for (size_t j = 0; j < n; j += NF_NVFP4_GROUP)
                ref_group(x + j, &g, out->codes8 + (size_t)r * k + c0 + j,
                          out->scales8 + ((size_t)r * k + c0 + j) / NF_NVFP4_GROUP);
        }
    }
    if (out->divisors) out->divisors[0] = g.divisor;
    return NF_OK;
}

nf_status nf_nvfp4_quantize_rows(const nf_format *fmt, const nf_method_params *params, const nf_src_rows *src,
                                 nf_words *out, nf_error *err)
{
    size_t k;
    NF_TRY(check_args(NF_METHOD_NVFP4_QUANTIZE, fmt, params, src, out, &k, err));
    nf_nvfp4_global g = {0.0f, 0.0f, 0};
    NF_TRY(chunk_global(src, &g, err));
    /* The active kernel (method/simd/nvfp4_simd.h) encodes a row from its source bytes to the
     * reference's words, or declines a row holding a non-finite value, which the reference then
     * refuses with its message. */
    nf_nvfp4_groups_fn kernel = nf_nvfp4_kernels_active()->groups;
    const size_t row_bytes = k * nf_src_type_size(src->type);
    for (uint64_t r = 0; r < src->rows; r++) {
        size_t at = (size_t)r * k;
        if (kernel((const uint8_t *)src->data + (size_t)r * row_bytes, src->type, k / NF_NVFP4_GROUP, &g,
                   out->codes8 + at, out->scales8 + at / NF_NVFP4_GROUP))
            continue;
        nf_src_rows one = *src;
        one.data = (const uint8_t *)src->data + (size_t)r * row_bytes;
        one.first_row = src->first_row + r;
        one.rows = 1;
        nf_words view = *out;
        view.rows = 1;
        view.codes8 = out->codes8 + at;
        view.scales8 = out->scales8 + at / NF_NVFP4_GROUP;
        view.divisors = NULL;
        NF_TRY(nf_nvfp4_quantize_rows_reference(fmt, params, &one, &view, err));
    }
    if (out->divisors) out->divisors[0] = g.divisor;
    return NF_OK;
}

/* ---------------------------------------------------------------- nvfp4_search */

/* The codes of a group of 16 finite values under scale word e (the reference's rule, ref_code)
 * into codes, and their error sum_k w[k] * (x[k] - v[k])^2 in binary64, column order, v the
 * values the words represent (docs/formats.md 6.1: (e2m1 * e4m3) / d, one rounding). */
static double ref_group_error(const float *x, const float *w, uint8_t e, const nf_nvfp4_global *g, uint8_t *codes)
{
    const float s = nf_e4m3fn_to_f32(e), sv = s * g->gs, d = nf_f32_from_bits(g->divisor);
    double err = 0.0;
    for (unsigned i = 0; i < NF_NVFP4_GROUP; i++) {
        uint8_t c = ref_code(x[i] / sv);
        codes[i] = c;
        float v = (nf_e2m1_to_f32(c) * s) / d;
        double diff = (double)x[i] - (double)v;
        err += (w ? (double)w[i] : 1.0) * diff * diff;
    }
    return err;
}

/* One group: nvfp4_quantize's word and codes, replaced by the first candidate (w0 -1, +1, ...,
 * -4, +4) whose error is strictly smaller than the best so far. */
static void ref_search_group(const float *x, const float *w, const nf_nvfp4_global *g, uint8_t *codes, uint8_t *scale)
{
    uint8_t best;
    ref_group(x, g, codes, &best);
    double best_err = ref_group_error(x, w, best, g, codes);
    const int w0 = best;
    for (int r = 1; r <= NF_NVFP4_SEARCH_RADIUS; r++) {
        for (int sign = -1; sign <= 1; sign += 2) {
            int e = w0 + sign * r;
            if (e < 0x01 || e > 0x7E) continue;
            uint8_t trial[NF_NVFP4_GROUP];
            double err = ref_group_error(x, w, (uint8_t)e, g, trial);
            if (err < best_err) {
                best_err = err;
                best = (uint8_t)e;
                memcpy(codes, trial, sizeof trial);
            }
        }
    }
    *scale = best;
}

/* nvfp4_search's rows, each group by search (the reference's or a kernel's). */
static nf_status search_rows(const nf_format *fmt, const nf_method_params *params, const nf_src_rows *src,
                             nf_words *out, bool reference, nf_error *err)
{
    size_t k;
    NF_TRY(check_args(NF_METHOD_NVFP4_SEARCH, fmt, params, src, out, &k, err));
    nf_nvfp4_global g = {0.0f, 0.0f, 0};
    NF_TRY(chunk_global(src, &g, err));
    const float *imp = params ? params->importance : NULL;
    nf_nvfp4_search_fn kernel = nf_nvfp4_kernels_active()->search;
    float x[NF_NVFP4_BLOCK];
    for (uint64_t r = 0; r < src->rows; r++) {
        for (size_t c0 = 0; c0 < k; c0 += NF_NVFP4_BLOCK) {
            size_t n = k - c0 < NF_NVFP4_BLOCK ? k - c0 : NF_NVFP4_BLOCK;
            NF_TRY(load_finite(src, r, c0, n, x, err));
            for (size_t j = 0; j < n; j += NF_NVFP4_GROUP) {
                const float *w = imp ? imp + c0 + j : NULL;
                uint8_t *codes = out->codes8 + (size_t)r * k + c0 + j;
                uint8_t *scale = out->scales8 + ((size_t)r * k + c0 + j) / NF_NVFP4_GROUP;
                if (reference) ref_search_group(x + j, w, &g, codes, scale);
                else *scale = kernel(x + j, w, &g, codes);
            }
        }
    }
    if (out->divisors) out->divisors[0] = g.divisor;
    return NF_OK;
}

nf_status nf_nvfp4_search_rows_reference(const nf_format *fmt, const nf_method_params *params, const nf_src_rows *src,
                                         nf_words *out, nf_error *err)
{
    return search_rows(fmt, params, src, out, true, err);
}

nf_status nf_nvfp4_search_rows(const nf_format *fmt, const nf_method_params *params, const nf_src_rows *src,
                               nf_words *out, nf_error *err)
{
    return search_rows(fmt, params, src, out, false, err);
}
