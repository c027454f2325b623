/* The error statistics of the words an encoder wrote (nf_method_encode_rows_measured for every
 * method but grouped_absmax, which measures as it encodes): row by row, each source value
 * against the value its words represent, through the statistics kernels (stats/stats.h).
 * Grouped words are measured straight from the source words and the codes; the other formats'
 * rows are widened and reconstructed into two binary32 rows first. */
#include <stdlib.h>

#include "format/ggml.h"
#include "method/common.h"
#include "method/method_impl.h"
#include "method/measure.h"
#include "method/simd/absmax_simd.h"
#include "stats/stats.h"

static bool float_source(nf_src_type t) { return t == NF_SRC_F32 || t == NF_SRC_F16 || t == NF_SRC_BF16; }

/* The represented values of row r of the words (nf_words_to_f32's values for the formats the
 * methods write: the same binary32 operations on the same exact decodes). */
static void represented_row(const nf_format *f, const nf_words *w, size_t r, size_t k, float *y)
{
    switch (f->category) {
    case NF_CAT_DIRECT:
        for (size_t c = 0; c < k; c++) {
            if (f->id == NF_FMT_BF16) y[c] = nf_bf16_to_f32(w->w16[r * k + c]);
            else if (f->id == NF_FMT_FP32) y[c] = nf_f32_from_bits(w->w32[r * k + c]);
            else y[c] = nf_int32_value(w->w32[r * k + c]);
        }
        return;
    case NF_CAT_FP8_ROW: {
        /* nf_fp8_row_value is a function of (code, scale): one table per row */
        float table[256];
        for (unsigned c = 0; c < 256; c++) table[c] = nf_fp8_row_value(f, (uint8_t)c, w->scales[r]);
        for (size_t c = 0; c < k; c++) y[c] = table[w->codes8[r * k + c]];
        return;
    }
    case NF_CAT_GGUF: /* ggml_quantize: ggml's own dequantization of the row's blocks */
        if (nf_ggml_dequant_row(f, w->blocks + r * (k / f->block_values * f->block_bytes), k, y, NULL) == NF_OK) return;
        for (size_t c = 0; c < k; c++) y[c] = nf_f32_from_bits(0x7FC00000u);
        return;
    case NF_CAT_NVFP4: { /* nvfp4_quantize: (e2m1 * e4m3) / d, one table per group */
        uint32_t d = w->divisors ? w->divisors[0] : 0x7FC00000u;
        for (size_t g = 0; g < k / 16; g++) {
            float table[16];
            uint8_t s = w->scales8[(r * k) / 16 + g];
            for (unsigned c = 0; c < 16; c++) table[c] = nf_nvfp4_value((uint8_t)c, s, d);
            for (size_t c = 16 * g; c < 16 * g + 16; c++) y[c] = table[w->codes8[r * k + c] & 15u];
        }
        return;
    }
    default: /* no method writes other formats */
        for (size_t c = 0; c < k; c++) y[c] = nf_f32_from_bits(0x7FC00000u);
        return;
    }
}

nf_status nf_method_measure_words(const nf_format *fmt, const nf_src_rows *src, const nf_words *out, nf_errstats *st,
                                  nf_error *err)
{
    const nf_stats_kernels *sk = nf_stats_kernels_active();
    size_t k = (size_t)src->cols, rows = (size_t)src->rows, esize = nf_src_type_size(src->type);
    if (fmt->category == NF_CAT_GROUPED && float_source(src->type)) {
        size_t groups = (k + fmt->group_size - 1) / fmt->group_size;
        for (size_t r = 0; r < rows; r++)
            sk->row_grouped((const uint8_t *)src->data + r * k * esize, nf_absmax_stats_source(src->type),
                            out->codes + r * k, out->scales + r * groups, k, fmt->group_size, st);
        return NF_OK;
    }
    float *x = malloc((k ? k : 1) * sizeof *x), *y = malloc((k ? k : 1) * sizeof *y);
    if (!x || !y) {
        free(x);
        free(y);
        return nf_method_error(err, NF_ERR_NOMEM, src, "out of memory measuring the encoding");
    }
    for (size_t r = 0; r < rows; r++) {
        if (float_source(src->type)) nf_method_load_f32(src, r, 0, k, x);
        else
            for (size_t c = 0; c < k; c++) x[c] = nf_f32_from_bits(0x7FC00000u); /* integers: not compared */
        represented_row(fmt, out, r, k, y);
        sk->row_f32(x, y, k, st);
    }
    free(x);
    free(y);
    return NF_OK;
}
