/* ninfer/format.h - the closed registry of the 30 numeric formats (docs/formats.md),
 * exact scalar codecs, word validity and reconstruction to binary32.
 *
 * Everything here is a plain scalar reference: bit manipulation only, no dependence on the
 * host's floating-point environment beyond IEEE binary32 round-to-nearest-even arithmetic.
 */
#ifndef NINFER_FORMAT_H
#define NINFER_FORMAT_H

#include <ninfer/export.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ninfer/error.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nf_category {
    NF_CAT_DIRECT,  /* bf16, fp32, int32: one logical word per element */
    NF_CAT_GROUPED, /* q2, q4, q5, q6, q8, t2: signed codes + one binary16 scale per group */
    NF_CAT_NVFP4,   /* E2M1 codes + E4M3FN scale per 16 + FP32 divisor(s) */
    NF_CAT_FP8_ROW, /* E4M3FN codes + one BF16 or binary16 multiplier per row */
    NF_CAT_GGUF     /* ggml blocks kept byte for byte */
} nf_category;

typedef enum nf_scale_type {
    NF_SCALE_NONE,
    NF_SCALE_FP16, /* IEEE binary16 */
    NF_SCALE_BF16,
    NF_SCALE_E4M3FN,
    NF_SCALE_GGML /* scales live inside ggml blocks */
} nf_scale_type;

typedef enum nf_format_id {
    NF_FMT_BF16,
    NF_FMT_FP32,
    NF_FMT_INT32,
    NF_FMT_Q2_G64_FP16,
    NF_FMT_Q4_G64_FP16,
    NF_FMT_Q5_G64_FP16,
    NF_FMT_Q6_G64_FP16,
    NF_FMT_Q8_G32_FP16,
    NF_FMT_T2_G128_FP16,
    NF_FMT_NVFP4,
    NF_FMT_FP8_E4M3FN_ROW_BF16,
    NF_FMT_FP8_E4M3FN_ROW_FP16,
    NF_FMT_GGUF_Q8_0,
    NF_FMT_GGUF_Q4_0,
    NF_FMT_GGUF_Q5_0,
    NF_FMT_GGUF_Q2_0,
    NF_FMT_GGUF_Q2_K,
    NF_FMT_GGUF_Q3_K,
    NF_FMT_GGUF_Q4_K,
    NF_FMT_GGUF_Q5_K,
    NF_FMT_GGUF_Q6_K,
    NF_FMT_GGUF_IQ2_XXS,
    NF_FMT_GGUF_IQ2_XS,
    NF_FMT_GGUF_IQ3_XXS,
    NF_FMT_GGUF_IQ1_S,
    NF_FMT_GGUF_IQ4_NL,
    NF_FMT_GGUF_IQ3_S,
    NF_FMT_GGUF_IQ2_S,
    NF_FMT_GGUF_IQ4_XS,
    NF_FMT_GGUF_IQ1_M,
    NF_FMT_COUNT
} nf_format_id;

/* Every property of one registered format.  Fields that do not apply are 0 / NULL. */
typedef struct nf_format {
    nf_format_id id;
    const char *name; /* canonical name, e.g. "q4_g64_fp16" */
    nf_category category;
    unsigned code_bits;     /* logical code/word width: 16/32 direct, 2..8 grouped, 4 nvfp4,
                                   8 fp8; 0 for gguf */
    unsigned group_size;    /* grouped: 64/32/128; nvfp4: 16; fp8 rows / gguf: 0 */
    int code_min, code_max; /* legal signed code interval (grouped: q; q2: [-1,2]) */
    int code_bias;          /* stored word = q + code_bias (1 for q2, else 0) */
    int encoder_qmax;       /* qmax used as the reference encoder's denominator (grouped) */
    nf_scale_type scale_type;
    unsigned word_bytes;        /* direct: 2 or 4 bytes per element */
    unsigned block_values;      /* gguf: values per ggml block */
    unsigned block_bytes;       /* gguf: bytes per ggml block */
    int ggml_type;              /* gguf: ggml type id; -1 otherwise */
    double bits_per_weight;     /* full-group logical bits/weight as in the spec's tables */
    const char *default_layout; /* layout a recipe picks by default */
    const char *short_name;     /* gguf: "q4_k" (fixture file stem); NULL otherwise */
} nf_format;

/* The registry, in nf_format_id order. */
NF_API size_t nf_format_count(void);
NF_API const nf_format *nf_format_at(size_t index);
NF_API const nf_format *nf_format_by_id(nf_format_id id);
/* Lookup by exact canonical name (no aliases, case-sensitive); NULL when unknown. */
NF_API const nf_format *nf_format_lookup(const char *name);
/* Same, as an error naming the unknown format: "unknown format 'q4'". */
NF_API nf_status nf_format_find(const char *name, const nf_format **out, nf_error *err);
/* ggml type id -> gguf_* format, NULL if not one of the 18 imported block types. */
NF_API const nf_format *nf_format_by_ggml_type(int ggml_type);

/* ---------------------------------------------------------------- exact scalar codecs */
/* bits <-> binary32 */
NF_API float nf_f32_from_bits(uint32_t bits);
NF_API uint32_t nf_f32_bits(float value);

/* binary16 -> binary32: exact (subnormals, signed zeros, infinities; NaN keeps sign and payload,
 * shifted into the binary32 payload's high bits). */
NF_API float nf_f16_to_f32(uint16_t h);
/* binary32 -> binary16, round to nearest, ties to even; overflow gives infinity; NaN stays NaN
 * (sign kept, payload truncated, quiet bit set). */
NF_API uint16_t nf_f32_to_f16(float f);
/* bfloat16 -> binary32: the word in the high 16 bits, exact. */
NF_API float nf_bf16_to_f32(uint16_t b);
/* binary32 -> bfloat16, round to nearest, ties to even; NaN stays NaN (sign and high payload
 * bits kept, quiet bit set). */
NF_API uint16_t nf_f32_to_bf16(float f);
/* E4M3FN -> binary32, exact; 0x7F/0xFF give NaN. */
NF_API float nf_e4m3fn_to_f32(uint8_t w);
/* binary32 -> E4M3FN: clamp to [-448, 448], round to nearest with ties to the even code word,
 * sign from the input's sign bit (so -0 and tiny negatives give 0x80).  NaN gives 0x7F|sign. */
NF_API uint8_t nf_f32_to_e4m3fn(float f);
/* E2M1 (4-bit word, bit 3 = sign) -> binary32, exact. */
NF_API float nf_e2m1_to_f32(uint8_t w);

/* ---------------------------------------------------------------- word validity */
/* Grouped formats: is the signed logical code q legal?  (Q8 -128 and T2 -2 are not.) */
NF_API bool nf_grouped_code_valid(const nf_format *fmt, int q);
/* Grouped formats: is the binary16 scale word legal?  Q2: any finite word (incl. -0).  Others:
 * +0 or finite nonzero of either sign; -0, infinities and NaN are not. */
NF_API bool nf_grouped_scale_valid(const nf_format *fmt, uint16_t scale);
/* Does this scale require every code of its group to be zero?  (+0 for all grouped formats but
 * Q2, where any code is legal under a zero scale.) */
NF_API bool nf_grouped_scale_requires_zero_codes(const nf_format *fmt, uint16_t scale);
/* NVFP4 block scale: sign clear and not NaN (0x7F); 0x00 allowed. */
NF_API bool nf_nvfp4_scale_valid(uint8_t scale);
/* NVFP4 divisor: binary32 finite and > 0. */
NF_API bool nf_nvfp4_divisor_valid(uint32_t bits);
/* FP8 weight code: not NaN (0x7F, 0xFF). */
NF_API bool nf_fp8_code_valid(uint8_t code);
/* FP8 row scale for fmt (BF16 or FP16 per format): sign clear and finite (+0, subnormals ok). */
NF_API bool nf_fp8_row_scale_valid(const nf_format *fmt, uint16_t scale);
/* Is a positive-zero row scale (then only codes 0x00/0x80 are legal)? */
NF_API bool nf_fp8_row_scale_is_zero(uint16_t scale);
/* Signed zero E4M3FN code (0x00 or 0x80)? */
NF_API bool nf_fp8_code_is_zero(uint8_t code);

/* ---------------------------------------------------------------- reconstruction (oracle) */
/* Grouped: binary32(f16(scale) * q); q is the signed logical code (for q2: u - 1). */
NF_API float nf_grouped_value(uint16_t scale, int q);
/* FP8 rows: binary32(e4m3fn(code) * scale32) with the scale decoded per the format. */
NF_API float nf_fp8_row_value(const nf_format *fmt, uint8_t code, uint16_t scale);
/* NVFP4: (e2m1(code) * e4m3fn(scale)) / divisor, one rounding (the product is exact). */
NF_API float nf_nvfp4_value(uint8_t code, uint8_t scale, uint32_t divisor_bits);
/* int32 word as the nearest binary32 (ties to even). */
NF_API float nf_int32_value(uint32_t word);

#ifdef __cplusplus
}
#endif
#endif
