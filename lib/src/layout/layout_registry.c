/* The closed registry of the 7 storage layouts (docs/layouts.md 1) and the
 * format/layout compatibility table. */
#include <string.h>

#include "layout/layout_impl.h"

static const nf_layout layouts[NF_LAYOUT_COUNT] = {
    {NF_LAYOUT_CONTIGUOUS_LE_V1, "contiguous_le_v1", NF_TENSOR_ALIGNMENT, false},
    {NF_LAYOUT_ROW_SPLIT_K128_V1, "row_split_k128_v1", NF_TENSOR_ALIGNMENT, false},
    {NF_LAYOUT_BLOCK_SCALE_K16_M128X4_V1, "block_scale_k16_m128x4_v1", NF_TENSOR_ALIGNMENT, false},
    {NF_LAYOUT_ROW_SCALE_V1, "row_scale_v1", NF_TENSOR_ALIGNMENT, false},
    {NF_LAYOUT_ROW_INTERLEAVED_V1, "row_interleaved_v1", NF_TENSOR_ALIGNMENT, false},
    {NF_LAYOUT_GGUF_BLOCKS_V1, "gguf_blocks_v1", NF_TENSOR_ALIGNMENT, false},
    {NF_LAYOUT_RAW_BYTES_V1, "raw_bytes_v1", 1, true},
};

size_t nf_layout_count(void) { return NF_LAYOUT_COUNT; }

const nf_layout *nf_layout_at(size_t index) { return index < NF_LAYOUT_COUNT ? &layouts[index] : NULL; }

const nf_layout *nf_layout_by_id(nf_layout_id id)
{
    if ((unsigned)id >= (unsigned)NF_LAYOUT_COUNT) return NULL;
    return &layouts[id];
}

const nf_layout *nf_layout_lookup(const char *name)
{
    if (!name) return NULL;
    for (size_t i = 0; i < NF_LAYOUT_COUNT; i++)
        if (strcmp(layouts[i].name, name) == 0) return &layouts[i];
    return NULL;
}

/* The table is keyed on the format's category, except for the two FP8 row formats, each of
 * which has exactly one layout (row_scale_v1 + fp16 and row_interleaved_v1 + bf16 are refused). */
bool nf_layout_accepts(const nf_layout *layout, const nf_format *fmt)
{
    if (!layout || !fmt) return false;
    switch (layout->id) {
    case NF_LAYOUT_CONTIGUOUS_LE_V1: return fmt->category == NF_CAT_DIRECT;
    case NF_LAYOUT_ROW_SPLIT_K128_V1: return fmt->category == NF_CAT_GROUPED;
    case NF_LAYOUT_BLOCK_SCALE_K16_M128X4_V1: return fmt->category == NF_CAT_NVFP4;
    case NF_LAYOUT_ROW_SCALE_V1: return fmt->id == NF_FMT_FP8_E4M3FN_ROW_BF16;
    case NF_LAYOUT_ROW_INTERLEAVED_V1: return fmt->id == NF_FMT_FP8_E4M3FN_ROW_FP16;
    case NF_LAYOUT_GGUF_BLOCKS_V1: return fmt->category == NF_CAT_GGUF;
    case NF_LAYOUT_RAW_BYTES_V1: /* the resource encoding holds no numeric format */
    case NF_LAYOUT_COUNT: break;
    }
    return false;
}

const nf_layout *nf_layout_default_for(const nf_format *fmt)
{
    if (!fmt) return NULL;
    switch (fmt->category) {
    case NF_CAT_DIRECT: return &layouts[NF_LAYOUT_CONTIGUOUS_LE_V1];
    case NF_CAT_GROUPED: return &layouts[NF_LAYOUT_ROW_SPLIT_K128_V1];
    case NF_CAT_NVFP4: return &layouts[NF_LAYOUT_BLOCK_SCALE_K16_M128X4_V1];
    case NF_CAT_FP8_ROW:
        return fmt->id == NF_FMT_FP8_E4M3FN_ROW_FP16 ? &layouts[NF_LAYOUT_ROW_INTERLEAVED_V1]
                                                     : &layouts[NF_LAYOUT_ROW_SCALE_V1];
    case NF_CAT_GGUF: return &layouts[NF_LAYOUT_GGUF_BLOCKS_V1];
    }
    return NULL;
}

const nf_layout_ops *nf_layout_ops_of(const nf_geometry *g)
{
    if (!g || !g->layout) return NULL;
    switch (g->layout->id) {
    case NF_LAYOUT_CONTIGUOUS_LE_V1: return &nf_layout_ops_contiguous;
    case NF_LAYOUT_ROW_SPLIT_K128_V1: return &nf_layout_ops_row_split;
    case NF_LAYOUT_BLOCK_SCALE_K16_M128X4_V1: return &nf_layout_ops_nvfp4;
    case NF_LAYOUT_ROW_SCALE_V1: return &nf_layout_ops_row_scale;
    case NF_LAYOUT_ROW_INTERLEAVED_V1: return &nf_layout_ops_row_interleaved;
    case NF_LAYOUT_GGUF_BLOCKS_V1: return &nf_layout_ops_gguf;
    case NF_LAYOUT_RAW_BYTES_V1: return &nf_layout_ops_raw;
    case NF_LAYOUT_COUNT: break;
    }
    return NULL;
}

/* row_split_k128_v1 per-format constants (docs/layouts.md 4.1), derived from the format's
 * code width and group size: base packing holds 8 bits per lane for Q8, 2 for Q2/T2 and the
 * low nibble for Q4/Q5/Q6, whose bits above bit 3 go to the high plane. */
bool nf_rs_params_for(const nf_format *fmt, nf_rs_params *p)
{
    if (!fmt || fmt->category != NF_CAT_GROUPED) return false;
    unsigned b = fmt->code_bits, lane_bits;
    switch (b) {
    case 2: lane_bits = 2; break;
    case 4:
    case 5:
    case 6: lane_bits = 4; break;
    case 8: lane_bits = 8; break;
    default: return false;
    }
    if (fmt->group_size == 0 || fmt->group_size > 128 || 128 % fmt->group_size != 0) return false;
    p->bits = b;
    p->group = fmt->group_size;
    p->base_bytes = fmt->group_size * lane_bits / 8;
    p->high_bytes = b > 4 && b < 8 ? fmt->group_size * (b - 4) / 8 : 0;
    p->bias = fmt->code_bias;
    p->zero_u = (uint8_t)fmt->code_bias;
    return true;
}
