/* The method dispatcher: nf_method_encode_rows and nf_method_encode_rows_measured hand the rows
 * to the method's own file; everything the methods share lives below, in common.c. */
#include "method/common.h"
#include "method/method_impl.h"
#include "method/grouped.h"
#include "method/measure.h"

nf_status nf_method_encode_rows(nf_method_id id, const nf_format *fmt, const nf_method_params *params,
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
