/* The closed registry of the 30 numeric formats (docs/formats.md 1,
 * docs/layouts.md 1 and docs/formats.md 1).
 *
 * The table is the single source of every per-format constant; nothing else in the library
 * should spell a group size or a ggml type id.  Its order must match nf_format_id so that
 * nf_format_by_id is an index (checked by the registry tests, not at run time). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <ninfer/format.h>

#include "common/ggml_types.h"

#define LAYOUT_DIRECT "contiguous_le_v1"
#define LAYOUT_ROW_SPLIT "row_split_k128_v1"
#define LAYOUT_NVFP4 "block_scale_k16_m128x4_v1"
#define LAYOUT_FP8_BF16 "row_scale_v1"
#define LAYOUT_FP8_FP16 "row_interleaved_v1"
#define LAYOUT_GGUF "gguf_blocks_v1"

#define DIRECT(id_, name_, bits_, bytes_)                                                                            \
    {                                                                                                                \
        .id = (id_), .name = (name_), .category = NF_CAT_DIRECT, .code_bits = (bits_), .scale_type = NF_SCALE_NONE,  \
        .word_bytes = (bytes_), .ggml_type = -1, .bits_per_weight = (double)(bits_), .default_layout = LAYOUT_DIRECT \
    }

/* bits_per_weight is the spec's literal table value; it equals b + 16/G (tested). */
#define GROUPED(id_, name_, bits_, group_, qmin_, qmax_, bias_, encqmax_, bpw_)                                     \
    {                                                                                                               \
        .id = (id_), .name = (name_), .category = NF_CAT_GROUPED, .code_bits = (bits_), .group_size = (group_),     \
        .code_min = (qmin_), .code_max = (qmax_), .code_bias = (bias_), .encoder_qmax = (encqmax_),                 \
        .scale_type = NF_SCALE_FP16, .ggml_type = -1, .bits_per_weight = (bpw_), .default_layout = LAYOUT_ROW_SPLIT \
    }

#define FP8_ROW(id_, name_, scale_, layout_)                                                              \
    {                                                                                                     \
        .id = (id_), .name = (name_), .category = NF_CAT_FP8_ROW, .code_bits = 8, .scale_type = (scale_), \
        .ggml_type = -1, .bits_per_weight = 8.0, .default_layout = (layout_)                              \
    }

/* bits_per_weight is the spec's literal table value; it equals 8 * bytes / values (tested). */
/* type_: ggml's NAME of the block type; its id and geometry come from common/ggml_types.h */
#define GGUF(id_, short_, type_, bpw_)                                                                                 \
    {                                                                                                                  \
        .id = (id_), .name = "gguf_" short_, .category = NF_CAT_GGUF, .scale_type = NF_SCALE_GGML,                     \
        .block_values = NF_GGML_##type_##_VALUES, .block_bytes = NF_GGML_##type_##_BYTES,                              \
        .ggml_type = NF_GGML_##type_, .bits_per_weight = (bpw_), .default_layout = LAYOUT_GGUF, .short_name = (short_) \
    }

static const nf_format registry[NF_FMT_COUNT] = {
    DIRECT(NF_FMT_BF16, "bf16", 16, 2),
    DIRECT(NF_FMT_FP32, "fp32", 32, 4),
    DIRECT(NF_FMT_INT32, "int32", 32, 4),

    /* Q2 is import-only (grouped_absmax refuses it); its encoder_qmax is still the top of its
     * interval so that the field means the same thing for every grouped format. */
    GROUPED(NF_FMT_Q2_G64_FP16, "q2_g64_fp16", 2, 64, -1, 2, 1, 2, 2.25),
    GROUPED(NF_FMT_Q4_G64_FP16, "q4_g64_fp16", 4, 64, -8, 7, 0, 7, 4.25),
    GROUPED(NF_FMT_Q5_G64_FP16, "q5_g64_fp16", 5, 64, -16, 15, 0, 15, 5.25),
    GROUPED(NF_FMT_Q6_G64_FP16, "q6_g64_fp16", 6, 64, -32, 31, 0, 31, 6.25),
    GROUPED(NF_FMT_Q8_G32_FP16, "q8_g32_fp16", 8, 32, -127, 127, 0, 127, 8.50),
    GROUPED(NF_FMT_T2_G128_FP16, "t2_g128_fp16", 2, 128, -1, 1, 0, 1, 2.125),

    /* Full-group logical cost, counted like the grouped formats' b + 16/G: a 4-bit code plus
     * one 8-bit E4M3FN scale per 16 values (the per-matrix divisor is not a per-group cost). */
    {.id = NF_FMT_NVFP4,
     .name = "nvfp4",
     .category = NF_CAT_NVFP4,
     .code_bits = 4,
     .group_size = 16,
     .scale_type = NF_SCALE_E4M3FN,
     .ggml_type = -1,
     .bits_per_weight = 4.5,
     .default_layout = LAYOUT_NVFP4},

    /* The row multiplier's cost depends on K, so only the code width counts. */
    FP8_ROW(NF_FMT_FP8_E4M3FN_ROW_BF16, "fp8_e4m3fn_row_bf16", NF_SCALE_BF16, LAYOUT_FP8_BF16),
    FP8_ROW(NF_FMT_FP8_E4M3FN_ROW_FP16, "fp8_e4m3fn_row_fp16", NF_SCALE_FP16, LAYOUT_FP8_FP16),

    GGUF(NF_FMT_GGUF_Q8_0, "q8_0", Q8_0, 8.50),
    GGUF(NF_FMT_GGUF_Q4_0, "q4_0", Q4_0, 4.50),
    GGUF(NF_FMT_GGUF_Q5_0, "q5_0", Q5_0, 5.50),
    GGUF(NF_FMT_GGUF_Q2_0, "q2_0", Q2_0, 2.25),
    GGUF(NF_FMT_GGUF_Q2_K, "q2_k", Q2_K, 2.625),
    GGUF(NF_FMT_GGUF_Q3_K, "q3_k", Q3_K, 3.4375),
    GGUF(NF_FMT_GGUF_Q4_K, "q4_k", Q4_K, 4.50),
    GGUF(NF_FMT_GGUF_Q5_K, "q5_k", Q5_K, 5.50),
    GGUF(NF_FMT_GGUF_Q6_K, "q6_k", Q6_K, 6.5625),
    GGUF(NF_FMT_GGUF_IQ2_XXS, "iq2_xxs", IQ2_XXS, 2.0625),
    GGUF(NF_FMT_GGUF_IQ2_XS, "iq2_xs", IQ2_XS, 2.3125),
    GGUF(NF_FMT_GGUF_IQ3_XXS, "iq3_xxs", IQ3_XXS, 3.0625),
    GGUF(NF_FMT_GGUF_IQ1_S, "iq1_s", IQ1_S, 1.5625),
    GGUF(NF_FMT_GGUF_IQ4_NL, "iq4_nl", IQ4_NL, 4.50),
    GGUF(NF_FMT_GGUF_IQ3_S, "iq3_s", IQ3_S, 3.4375),
    GGUF(NF_FMT_GGUF_IQ2_S, "iq2_s", IQ2_S, 2.5625),
    GGUF(NF_FMT_GGUF_IQ4_XS, "iq4_xs", IQ4_XS, 4.25),
    GGUF(NF_FMT_GGUF_IQ1_M, "iq1_m", IQ1_M, 1.75),
};

size_t nf_format_count(void) { return sizeof registry / sizeof registry[0]; }

const nf_format *nf_format_at(size_t index) { return index < nf_format_count() ? &registry[index] : NULL; }

const nf_format *nf_format_by_id(nf_format_id id)
{
    /* An enum may hold any int: reject negatives before treating it as an index. */
    if ((int)id < 0) return NULL;
    return nf_format_at((size_t)id);
}

const nf_format *nf_format_lookup(const char *name)
{
    if (!name) return NULL;
    for (size_t i = 0; i < nf_format_count(); i++)
        if (strcmp(registry[i].name, name) == 0) return &registry[i];
    return NULL;
}

/* The unknown name comes from a recipe, a CLI flag or an artifact's JSON: make it safe to print
 * on a terminal and bounded, so the message stays one readable line. */
static void quote_name(const char *name, char *out, size_t out_size)
{
    static const char hex[] = "0123456789abcdef";
    const size_t limit = 96; /* name characters shown before "..." */
    size_t used = 0;
    size_t shown = 0;
    const unsigned char *p = (const unsigned char *)name;
    for (; *p && shown < limit; p++, shown++) {
        if (out_size - used < 5) break;
        if (*p >= 0x20 && *p < 0x7F && *p != '\\') {
            out[used++] = (char)*p;
        } else {
            out[used++] = '\\';
            out[used++] = 'x';
            out[used++] = hex[*p >> 4];
            out[used++] = hex[*p & 0xF];
        }
    }
    if (*p && out_size - used >= 4) {
        memcpy(out + used, "...", 3);
        used += 3;
    }
    out[used] = '\0';
}

nf_status nf_format_find(const char *name, const nf_format **out, nf_error *err)
{
    if (!out) return nf_error_set(err, NF_ERR_USAGE, "nf_format_find: no output pointer");
    *out = NULL;
    if (!name) return nf_error_set(err, NF_ERR_INVALID, "no format name given");
    const nf_format *fmt = nf_format_lookup(name);
    if (!fmt) {
        char shown[512];
        quote_name(name, shown, sizeof shown);
        return nf_error_set(err, NF_ERR_INVALID, "unknown format '%s'", shown);
    }
    *out = fmt;
    return NF_OK;
}

const nf_format *nf_format_by_ggml_type(int ggml_type)
{
    for (size_t i = 0; i < nf_format_count(); i++)
        if (registry[i].category == NF_CAT_GGUF && registry[i].ggml_type == ggml_type) return &registry[i];
    return NULL;
}
