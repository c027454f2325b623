/* ggml block dequantizers for the 18 imported gguf_* formats (internal).  Each reproduces
 * ggml-quants.c's dequantize_row_* bit for bit (spec/ggml-blocks.md, spec/ggml-tables/). */
#ifndef NINFER_FORMAT_GGML_H
#define NINFER_FORMAT_GGML_H

#include <stdint.h>

#include <ninfer/error.h>
#include <ninfer/format.h>

/* Dequantize one row of k values (k a multiple of fmt->block_values) held in
 * k / block_values consecutive blocks. */
nf_status nf_ggml_dequant_row(const nf_format *fmt, const uint8_t *blocks, uint64_t k, float *out,
                              nf_error *err);

#endif
