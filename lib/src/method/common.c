/* The methods' shared ground, below the dispatcher (dispatch.c) and the methods that it calls
 * (cast_direct.c, grouped.c, fp8_row_maxabs.c, measure.c): method names and targets, source element
 * types and their loading as binary32, messages that name the tensor, row and column, and the
 * checks of rows and parameters every method makes. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "common/cpu.h"

#include "method/common.h"
#include "method/method_impl.h"
#include "method/simd/f16_simd.h"

/* ---------------------------------------------------------------- methods */

static const char *const method_names[NF_METHOD_COUNT] = {
    [NF_METHOD_CAST_DIRECT] = "cast_direct",       [NF_METHOD_GROUPED_ABSMAX] = "grouped_absmax",
    [NF_METHOD_GROUPED_SEARCH] = "grouped_search", [NF_METHOD_FP8_ROW_MAXABS] = "fp8_row_maxabs",
    [NF_METHOD_IMPORT_ENCODED] = "import_encoded", [NF_METHOD_GGML_QUANTIZE] = "ggml_quantize",
    [NF_METHOD_NVFP4_QUANTIZE] = "nvfp4_quantize", [NF_METHOD_NVFP4_SEARCH] = "nvfp4_search",
};

const char *nf_method_name(nf_method_id id)
{
    if ((unsigned)id >= NF_METHOD_COUNT) return NULL;
    return method_names[id];
}

nf_status nf_method_find(const char *name, nf_method_id *out, nf_error *err)
{
    if (!name || !out) return nf_error_set(err, NF_ERR_USAGE, "nf_method_find: missing argument");
    for (unsigned i = 0; i < NF_METHOD_COUNT; i++) {
        if (strcmp(name, method_names[i]) == 0) {
            *out = (nf_method_id)i;
            return NF_OK;
        }
    }
    return nf_error_set(err, NF_ERR_INVALID, "unknown method '%s'", name);
}

static nf_status cannot_target(nf_method_id id, const nf_format *fmt, const char *why, nf_error *err)
{
    return nf_error_set(err, NF_ERR_INVALID, "%s cannot target %s: %s", method_names[id], fmt->name, why);
}

nf_status nf_method_check_target(nf_method_id id, const nf_format *fmt, nf_error *err)
{
    if (!fmt) return nf_error_set(err, NF_ERR_USAGE, "no format given");
    if ((unsigned)id >= NF_METHOD_COUNT)
        return nf_error_set(err, NF_ERR_USAGE, "method id %d is out of range", (int)id);
    switch (id) {
    case NF_METHOD_CAST_DIRECT:
        if (fmt->category != NF_CAT_DIRECT) return cannot_target(id, fmt, "it targets bf16, fp32 and int32", err);
        return NF_OK;
    case NF_METHOD_GROUPED_ABSMAX:
    case NF_METHOD_GROUPED_SEARCH:
        if (fmt->category != NF_CAT_GROUPED)
            return cannot_target(id, fmt, "it targets the grouped integer formats q4, q5, q6 and q8", err);
        /* docs/methods.md (q2) and docs/decisions.md D5 (t2): both formats hold trained or
         * ternary checkpoints whose codes are imported, never requantized. */
        if (fmt->id == NF_FMT_Q2_G64_FP16)
            return cannot_target(id, fmt, "it requires import_encoded (trained GSQ Q2_0 codes)", err);
        if (fmt->id == NF_FMT_T2_G128_FP16)
            return cannot_target(id, fmt, "it requires import_encoded (ternary checkpoint codes)", err);
        return NF_OK;
    case NF_METHOD_FP8_ROW_MAXABS:
        if (fmt->category != NF_CAT_FP8_ROW)
            return cannot_target(id, fmt, "it targets fp8_e4m3fn_row_bf16 and fp8_e4m3fn_row_fp16", err);
        return NF_OK;
    case NF_METHOD_IMPORT_ENCODED:
        switch (fmt->id) {
        case NF_FMT_NVFP4:
        case NF_FMT_FP8_E4M3FN_ROW_BF16:
        case NF_FMT_T2_G128_FP16:
        case NF_FMT_Q2_G64_FP16:
        case NF_FMT_Q4_G64_FP16: /* GPTQ, AWQ (docs/dialects.md "GPTQ and AWQ") */
        case NF_FMT_Q5_G64_FP16:
        case NF_FMT_Q8_G32_FP16: return NF_OK;
        default:
            if (fmt->category == NF_CAT_GGUF) return NF_OK;
            return cannot_target(id, fmt,
                                 "it targets nvfp4, fp8_e4m3fn_row_bf16, t2_g128_fp16, q2_g64_fp16, q4_g64_fp16, "
                                 "q5_g64_fp16, q8_g32_fp16 and the gguf_* formats",
                                 err);
        }
    case NF_METHOD_GGML_QUANTIZE:
        /* every gguf_* block type: each has an encoder reproducing ggml's bytes (docs/methods.md,
         * ggml_quantize) */
        if (fmt->category == NF_CAT_GGUF) return NF_OK;
        return cannot_target(id, fmt, "it targets the gguf_* formats", err);
    case NF_METHOD_NVFP4_QUANTIZE:
    case NF_METHOD_NVFP4_SEARCH:
        if (fmt->category != NF_CAT_NVFP4) return cannot_target(id, fmt, "it targets nvfp4", err);
        return NF_OK;
    case NF_METHOD_COUNT: break;
    }
    return nf_error_set(err, NF_ERR_USAGE, "method id %d is out of range", (int)id);
}

/* ---------------------------------------------------------------- source types */

static const struct {
    const char *name;
    size_t size;
} src_types[NF_SRC_COUNT] = {
    [NF_SRC_F32] = {"F32", 4}, [NF_SRC_F16] = {"F16", 2}, [NF_SRC_BF16] = {"BF16", 2}, [NF_SRC_I8] = {"I8", 1},
    [NF_SRC_I16] = {"I16", 2}, [NF_SRC_I32] = {"I32", 4}, [NF_SRC_I64] = {"I64", 8},   [NF_SRC_U8] = {"U8", 1},
    [NF_SRC_U16] = {"U16", 2}, [NF_SRC_U32] = {"U32", 4}, [NF_SRC_U64] = {"U64", 8},   [NF_SRC_BOOL] = {"BOOL", 1},
};

size_t nf_src_type_size(nf_src_type type)
{
    if ((unsigned)type >= NF_SRC_COUNT) return 0;
    return src_types[type].size;
}

const char *nf_src_type_name(nf_src_type type)
{
    if ((unsigned)type >= NF_SRC_COUNT) return NULL;
    return src_types[type].name;
}

bool nf_src_type_lookup(const char *name, nf_src_type *out)
{
    if (!name || !out) return false;
    for (unsigned i = 0; i < NF_SRC_COUNT; i++) {
        if (strcmp(name, src_types[i].name) == 0) {
            *out = (nf_src_type)i;
            return true;
        }
    }
    return false;
}

void nf_method_load_f32(const nf_src_rows *src, uint64_t row, size_t c0, size_t n, float *out)
{
    /* Offsets fit size_t: nf_method_check_rows proved rows * cols * size does. */
    size_t esize = src_types[src->type].size;
    const uint8_t *p = (const uint8_t *)src->data + ((size_t)row * (size_t)src->cols + c0) * esize;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* Little-endian host: the bytes already are host words; memcpy also covers any alignment.
     * These loops vectorize, unlike the byte-assembling ones below. */
    if (src->type == NF_SRC_F32) {
        memcpy(out, p, n * sizeof(float));
        return;
    }
    if (src->type == NF_SRC_BF16) {
        nf_method_bf16_words_to_f32(p, n, out);
        return;
    }
    if (src->type == NF_SRC_F16) {
        nf_method_f16_words_to_f32(p, n, out);
        return;
    }
#endif
    switch (src->type) {
    case NF_SRC_F32:
        for (size_t i = 0; i < n; i++) out[i] = nf_f32_from_bits(nf_method_le32(p + 4 * i));
        break;
    case NF_SRC_BF16:
        for (size_t i = 0; i < n; i++) out[i] = nf_f32_from_bits((uint32_t)nf_method_le16(p + 2 * i) << 16);
        break;
    case NF_SRC_F16:
        for (size_t i = 0; i < n; i++) out[i] = nf_f16_to_f32(nf_method_le16(p + 2 * i));
        break;
    default: /* integer types never reach a floating-point encoder */
        for (size_t i = 0; i < n; i++) out[i] = 0.0f;
        break;
    }
}

/* ---------------------------------------------------------------- messages and checks */

const char *nf_method_nonfinite_name(float v)
{
    if (isnan(v)) return "NaN";
    return signbit(v) ? "-inf" : "+inf";
}

/* The message of fmt, ap, then "tensor 'NAME': " (when the rows have a name) and lead before it. */
__attribute__((format(printf, 5, 0))) static nf_status
method_verror(nf_error *err, nf_status status, const nf_src_rows *src, const char *lead, const char *fmt, va_list ap)
{
    if (!err) return status;
    char rest[NF_ERROR_MESSAGE_MAX];
    vsnprintf(rest, sizeof rest, fmt, ap);
    if (src && src->name) return nf_error_set(err, status, "tensor '%s': %s%s", src->name, lead, rest);
    return nf_error_set(err, status, "%s%s", lead, rest);
}

nf_status nf_method_row_error(nf_error *err, nf_status status, const nf_src_rows *src, uint64_t row, const char *fmt,
                              ...)
{
    char lead[32];
    snprintf(lead, sizeof lead, "row %" PRIu64, src ? src->first_row + row : row);
    va_list ap;
    va_start(ap, fmt);
    nf_status st = method_verror(err, status, src, lead, fmt, ap);
    va_end(ap);
    return st;
}

nf_status nf_method_error(nf_error *err, nf_status status, const nf_src_rows *src, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    nf_status st = method_verror(err, status, src, "", fmt, ap);
    va_end(ap);
    return st;
}

nf_status nf_method_check_rows(const nf_src_rows *src, const nf_words *out, size_t *row_elems, nf_error *err)
{
    if (!src || !out) return nf_error_set(err, NF_ERR_USAGE, "missing source rows or output words");
    if ((unsigned)src->type >= NF_SRC_COUNT)
        return nf_method_error(err, NF_ERR_USAGE, src, "source type %d is out of range", (int)src->type);
    if (src->cols == 0) return nf_method_error(err, NF_ERR_USAGE, src, "rows have no columns");
    if (out->rows != src->rows || out->cols != src->cols)
        return nf_method_error(err, NF_ERR_USAGE, src,
                               "output words hold %" PRIu64 " x %" PRIu64 ", the chunk is %" PRIu64 " x %" PRIu64,
                               out->rows, out->cols, src->rows, src->cols);
    uint64_t cells, bytes, last;
    if (!nf_mul_u64(src->rows, src->cols, &cells) || !nf_mul_u64(cells, src_types[src->type].size, &bytes) ||
        bytes > (uint64_t)SIZE_MAX || !nf_u64_to_size(src->cols, row_elems))
        return nf_method_error(err, NF_ERR_USAGE, src, "a chunk of %" PRIu64 " x %" PRIu64 " does not fit in memory",
                               src->rows, src->cols);
    if (!nf_add_u64(src->first_row, src->rows, &last))
        return nf_method_error(err, NF_ERR_USAGE, src, "chunk rows overflow");
    if (src->rows > 0 && !src->data) return nf_method_error(err, NF_ERR_USAGE, src, "no source data");
    return NF_OK;
}

/* ---------------------------------------------------------------- parameters */

nf_status nf_method_check_params(nf_method_id id, const nf_method_params *params, uint64_t cols, nf_error *err)
{
    if ((unsigned)id >= NF_METHOD_COUNT)
        return nf_error_set(err, NF_ERR_USAGE, "method id %d is out of range", (int)id);
    if (id != NF_METHOD_GROUPED_SEARCH && id != NF_METHOD_GGML_QUANTIZE && id != NF_METHOD_NVFP4_SEARCH) {
        if (!nf_method_params_empty(params))
            return nf_error_set(err, NF_ERR_INVALID, "%s takes no parameters", method_names[id]);
        return NF_OK;
    }
    if (id != NF_METHOD_GROUPED_SEARCH && params && params->negative_scales)
        return nf_error_set(err, NF_ERR_INVALID, "%s takes only imatrix, not negative_scales", method_names[id]);
    if (!params || !params->importance) {
        if (params && params->importance_len != 0)
            return nf_error_set(err, NF_ERR_USAGE, "importance length %" PRIu64 " given without values",
                                params->importance_len);
        return NF_OK;
    }
    if (params->importance_len != cols)
        return nf_error_set(err, NF_ERR_INVALID,
                            "importance must have one value per input channel (%" PRIu64 "), it has %" PRIu64, cols,
                            params->importance_len);
    uint64_t total = cols; /* a stack's vectors: every matrix's */
    if (params->importance_rows && (params->importance_mats == 0 || params->importance_stride < cols ||
                                    !nf_mul_u64(params->importance_mats - 1, params->importance_stride, &total) ||
                                    !nf_add_u64(total, cols, &total)))
        return nf_error_set(err, NF_ERR_USAGE,
                            "a stack's importance: %" PRIu64 " matrices of vectors %" PRIu64 " apart, %" PRIu64
                            " columns each",
                            params->importance_mats, params->importance_stride, cols);
    for (uint64_t k = 0; k < total; k++) {
        float v = params->importance[k];
        if (!isfinite(v))
            return nf_error_set(err, NF_ERR_INVALID, "importance of channel %" PRIu64 " is %s: it must be finite", k,
                                nf_method_nonfinite_name(v));
        if (v < 0.0f)
            return nf_error_set(err, NF_ERR_INVALID, "importance of channel %" PRIu64 " is %g: it must be >= 0", k,
                                (double)v);
    }
    return NF_OK;
}

nf_status nf_method_check_choice(nf_method_id id, const nf_format *fmt, const nf_method_params *params, nf_error *err)
{
    if (!fmt) return nf_error_set(err, NF_ERR_USAGE, "no format given");
    if (id != NF_METHOD_GGML_QUANTIZE || (params && params->importance)) return NF_OK;
    /* ggml_quantize_requires_imatrix: ggml quantizes these types only with an importance vector
     * (docs/methods.md "ggml_quantize") */
    switch (fmt->id) {
    case NF_FMT_GGUF_IQ2_XXS:
    case NF_FMT_GGUF_IQ2_XS:
    case NF_FMT_GGUF_IQ1_S:
        return nf_error_set(err, NF_ERR_USAGE,
                            "ggml_quantize into %s needs an importance vector (with: {imatrix: NAME}, and the "
                            "imatrix must hold the tensor): ggml quantizes %s only with one",
                            fmt->name, fmt->name);
    default: return NF_OK;
    }
}
