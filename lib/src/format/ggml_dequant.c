/* Placeholder until the ggml dequantizers land. */
#include "format/ggml.h"

nf_status nf_ggml_dequant_row(const nf_format *fmt, const uint8_t *blocks, uint64_t k, float *out,
                              nf_error *err)
{
    (void)blocks;
    (void)k;
    (void)out;
    return nf_error_set(err, NF_ERR_INVALID, "dequantization of %s is not implemented yet",
                        fmt ? fmt->name : "(null)");
}
