/* The represented values of encoded words, fast (convert_impl.h): for the report's statistics
 * (exec_jobs.c) and the budget's measuring pass (budget.c). */
#include <string.h>

#include <ninfer/format.h>
#include <ninfer/layout.h>

#include "convert/convert_impl.h"

/* The represented values of a chunk's words, as nf_words_to_f32 computes them (the same binary32
 * operations on the same exact decodes, so the same bits), in tight loops for the formats the
 * built-in methods write: grouped (f16(scale) * q, one multiply per value), FP8 rows
 * (e4m3fn(code) * scale32 through a 256-entry table of the exact code values), direct bf16 and
 * fp32 words.  Everything else (int32, nvfp4, gguf) goes through nf_words_to_f32. */
nf_status nf_convert_words_values(const nf_geometry *g, const nf_words *w, uint64_t first_row, float *restrict out,
                                  nf_error *err)
{
    const nf_format *f = g->format;
    uint64_t k = g->cols, rows = w->rows;
    if (!f || rows == 0) return nf_words_to_f32(g, w, first_row, out, err);
    switch (f->category) {
    case NF_CAT_GROUPED: {
        if (!w->codes || !w->scales) break;
        uint64_t lg = g->logical_groups, gs = f->group_size;
        for (uint64_t r = 0; r < rows; r++) {
            const int8_t *restrict q = w->codes + r * k;
            float *restrict o = out + r * k;
            for (uint64_t gi = 0; gi < lg; gi++) {
                uint64_t c0 = gi * gs, c1 = c0 + gs < k ? c0 + gs : k;
                if (c0 >= k) break;
                float s = nf_f16_to_f32(w->scales[r * lg + gi]);
                for (uint64_t c = c0; c < c1; c++) o[c] = s * (float)q[c];
            }
        }
        return NF_OK;
    }
    case NF_CAT_FP8_ROW: {
        if (!w->codes8 || !w->scales) break;
        if (f->scale_type != NF_SCALE_BF16 && f->scale_type != NF_SCALE_FP16) break;
        float table[256];
        for (unsigned c = 0; c < 256; c++) table[c] = nf_e4m3fn_to_f32((uint8_t)c);
        for (uint64_t r = 0; r < rows; r++) {
            uint16_t sw = w->scales[r];
            float s = f->scale_type == NF_SCALE_BF16 ? nf_bf16_to_f32(sw) : nf_f16_to_f32(sw);
            const uint8_t *restrict q = w->codes8 + r * k;
            float *restrict o = out + r * k;
            for (uint64_t c = 0; c < k; c++) o[c] = table[q[c]] * s;
        }
        return NF_OK;
    }
    case NF_CAT_DIRECT:
        if (f->id == NF_FMT_BF16 && w->w16) {
            for (uint64_t i = 0; i < rows * k; i++) {
                uint32_t b = (uint32_t)w->w16[i] << 16;
                memcpy(&out[i], &b, sizeof b);
            }
            return NF_OK;
        }
        if (f->id == NF_FMT_FP32 && w->w32) {
            memcpy(out, w->w32, (size_t)(rows * k) * sizeof *out);
            return NF_OK;
        }
        break;
    default: break;
    }
    return nf_words_to_f32(g, w, first_row, out, err);
}
