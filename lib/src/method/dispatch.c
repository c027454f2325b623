/* The method dispatcher: nf_method_encode_rows and nf_method_encode_rows_measured hand the rows
 * to the method's own file; everything the methods share lives below, in common.c. */
#include <inttypes.h>

#include "method/common.h"
#include "method/method_impl.h"
#include "method/grouped.h"
#include "method/measure.h"

static nf_status encode_one(nf_method_id id, const nf_format *fmt, const nf_method_params *params,
                            const nf_src_rows *src, nf_words *out, nf_error *err);

/* Rows [r, r + n) of a chunk's words (the arrays of fmt's category, rows of out->cols columns). */
static nf_words words_rows(const nf_format *fmt, const nf_words *out, uint64_t r, uint64_t n)
{
    nf_words v = *out;
    const uint64_t k = out->cols;
    v.rows = n;
    switch (fmt->category) {
    case NF_CAT_DIRECT:
        if (v.w16) v.w16 += r * k;
        if (v.w32) v.w32 += r * k;
        break;
    case NF_CAT_GROUPED:
        v.codes += r * k;
        v.scales += r * ((k + fmt->group_size - 1) / fmt->group_size);
        break;
    case NF_CAT_FP8_ROW:
        v.codes8 += r * k;
        v.scales += r;
        break;
    case NF_CAT_NVFP4:
        v.codes8 += r * k;
        v.scales8 += r * (k / 16);
        break;
    case NF_CAT_GGUF: v.blocks += r * (k / fmt->block_values * fmt->block_bytes); break;
    }
    return v;
}

/* A stack's chunk (params->importance_rows): cut at its matrices' boundaries, each piece encoded
 * with its matrix's vector, so a chunk encodes as its matrices would one by one. */
static nf_status encode_stack(nf_method_id id, const nf_format *fmt, const nf_method_params *params,
                              const nf_src_rows *src, nf_words *out, nf_error *err)
{
    const uint64_t per = params->importance_rows, esize = nf_src_type_size(src->type);
    if (out->rows != src->rows || out->cols != src->cols)
        return nf_method_error(err, NF_ERR_USAGE, src, "output words do not match the chunk");
    /* nvfp4's divisor comes from the matrix's largest magnitude: a chunk without it is the
     * matrix, so every piece is given the whole chunk's, not its own */
    nf_src_rows whole = *src;
    if ((id == NF_METHOD_NVFP4_QUANTIZE || id == NF_METHOD_NVFP4_SEARCH) && !src->has_matrix_max) {
        NF_TRY(nf_nvfp4_quantize_max(src, &whole.matrix_max, err));
        whole.has_matrix_max = true;
    }
    for (uint64_t done = 0; done < src->rows;) {
        const uint64_t row = src->first_row + done, m = row / per;
        const uint64_t n = src->rows - done < per - row % per ? src->rows - done : per - row % per;
        if (m >= params->importance_mats)
            return nf_method_error(err, NF_ERR_USAGE, src,
                                   "row %" PRIu64 " is in matrix %" PRIu64 " of a stack of %" PRIu64 " (%" PRIu64
                                   " rows each)",
                                   row, m, params->importance_mats, per);
        nf_src_rows piece = whole;
        piece.data = (const uint8_t *)src->data + done * src->cols * esize;
        piece.first_row = row;
        piece.rows = n;
        nf_method_params p = *params;
        p.importance = params->importance + m * params->importance_stride;
        p.importance_rows = p.importance_mats = p.importance_stride = 0;
        nf_words view = words_rows(fmt, out, done, n);
        NF_TRY(encode_one(id, fmt, &p, &piece, &view, err));
        done += n;
    }
    return NF_OK;
}

nf_status nf_method_encode_rows(nf_method_id id, const nf_format *fmt, const nf_method_params *params,
                                const nf_src_rows *src, nf_words *out, nf_error *err)
{
    if (params && params->importance && params->importance_rows && src && out && fmt && src->rows)
        return encode_stack(id, fmt, params, src, out, err);
    return encode_one(id, fmt, params, src, out, err);
}

static nf_status encode_one(nf_method_id id, const nf_format *fmt, const nf_method_params *params,
                            const nf_src_rows *src, nf_words *out, nf_error *err)
{
    switch (id) {
    case NF_METHOD_CAST_DIRECT:
    case NF_METHOD_GROUPED_ABSMAX:
    case NF_METHOD_FP8_ROW_MAXABS:
        if (!nf_method_params_empty(params))
            return nf_method_error(err, NF_ERR_INVALID, src, "%s takes no parameters", nf_method_name(id));
        if (id == NF_METHOD_CAST_DIRECT) return nf_cast_direct_rows(fmt, src, out, err);
        if (id == NF_METHOD_GROUPED_ABSMAX) return nf_grouped_absmax_rows(fmt, src, out, err);
        return nf_fp8_row_maxabs_rows(fmt, src, out, err);
    case NF_METHOD_GROUPED_SEARCH: return nf_grouped_search_rows(fmt, params, src, out, err);
    case NF_METHOD_GGML_QUANTIZE: return nf_ggml_quantize_rows(fmt, params, src, out, err);
    case NF_METHOD_NVFP4_QUANTIZE: return nf_nvfp4_quantize_rows(fmt, params, src, out, err);
    case NF_METHOD_NVFP4_SEARCH: return nf_nvfp4_search_rows(fmt, params, src, out, err);
    case NF_METHOD_IMPORT_ENCODED:
        return nf_error_set(err, NF_ERR_USAGE, "import_encoded copies encoded words; it has no row encoder");
    case NF_METHOD_COUNT: break;
    }
    return nf_error_set(err, NF_ERR_USAGE, "method id %d is out of range", (int)id);
}

nf_status nf_method_encode_rows_measured(nf_method_id id, const nf_format *fmt, const nf_method_params *params,
                                         const nf_src_rows *src, nf_words *out, nf_errstats *stats, nf_error *err)
{
    if (!stats) return nf_method_encode_rows(id, fmt, params, src, out, err);
    if (id == NF_METHOD_GROUPED_ABSMAX) {
        if (!nf_method_params_empty(params))
            return nf_method_error(err, NF_ERR_INVALID, src, "%s takes no parameters", nf_method_name(id));
        return nf_grouped_absmax_rows_measured(fmt, src, out, stats, err);
    }
    /* nvfp4's values need the divisor its encoder writes: give it one when out has none */
    uint32_t divisor = 0;
    nf_words view = *out;
    if (!view.divisors) view.divisors = &divisor;
    NF_TRY(nf_method_encode_rows(id, fmt, params, src, &view, err));
    return nf_method_measure_words(fmt, src, &view, stats, err);
}
