/* ninfer/dialect.h - quantized checkpoints as sources (docs/dialects.md).
 *
 * The largest checkpoints ship quantized: DeepSeek-V3 block-scaled FP8, compressed-tensors
 * (llm-compressor) FP8, packed INT4/INT8, NVFP4 and MXFP4, NVIDIA ModelOpt FP8 and NVFP4, GPTQ,
 * AWQ, MLX and gpt-oss's MXFP4 experts.  Each stores one weight as a codes tensor and companions (scales, a global scale, zero
 * points, the unpadded shape, group indices, activation scales).  nf_dialects_scan() reads a safetensors checkpoint's
 * declarations -- config.json `quantization_config`, ModelOpt's hf_quant_config.json, the
 * companion names and their dtypes and shapes, found in any shard -- and identifies every
 * quantized weight with its dialect; nf_qweight_read_f32() gives the weight's represented
 * values in binary32, row by row with bounded memory.
 *
 * Values.  Every value is the dialect's exact real value rounded once to binary32 (nearest,
 * ties to even):
 *   FP8 (DeepSeek, compressed-tensors, ModelOpt,
 *        fbgemm)                                   w = code * s
 *   packed / int8 (compressed-tensors)              w = (q - z) * s     (z = 0 when symmetric)
 *   NVFP4 ModelOpt                                  w = e2m1 * s * weight_scale_2
 *   NVFP4 compressed-tensors                        w = e2m1 * s / weight_global_scale
 *   GPTQ, AWQ                                       w = (q - z) * s     (s, z of column k's group)
 *   MLX affine                                      w = s * q + b       (s, b of column k's group)
 *   MXFP4 (gpt-oss, compressed-tensors)             w = e2m1 * 2^(e - 127)  (e the block's E8M0)
 *   bitsandbytes 4-bit (NF4, FP4)                   w = RN_dtype(quant_map[code] * absmax)
 *   bitsandbytes int8 (LLM.int8)                    w = RN32(RN32(q * SCB) * RN32(1/127))
 * where s is the scale covering the value (by the strategy: one per tensor, per row, per group
 * of columns of a row, or per block of rows x columns; edge blocks are partial), read exactly
 * as binary32 from F32, BF16, F16 or E4M3 words.  Every code and scale is checked as it is
 * read: a NaN or infinite code, a scale that is not finite and > 0 (E8M0 255) is NF_ERR_INVALID naming the
 * tensor, the row and column (codes) or the block (scales).
 *
 * Who names what (docs/library.md): every message starts with the file holding the tensor at
 * fault and names the tensor: "ckpt/model-00002.safetensors: tensor 'x.weight_scale_inv': ...";
 * a problem of a declaration names its file and key ("ckpt/config.json: quantization_config.
 * weight_block_size: ...").
 *
 * A scan is immutable; reads may run concurrently from several threads.  The floating-point
 * environment must be the default one (round to nearest, no flush-to-zero). */
#ifndef NINFER_DIALECT_H
#define NINFER_DIALECT_H

#include <ninfer/export.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ninfer/error.h>
#include <ninfer/source.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nf_dialect_id {
    NF_DIALECT_NONE = 0,
    NF_DIALECT_DEEPSEEK_FP8,   /* "deepseek_fp8": <p>.weight F8 + <p>.weight_scale_inv F32 blocks */
    NF_DIALECT_CT_FP8,         /* "compressed_tensors_fp8": <p>.weight F8 + <p>.weight_scale */
    NF_DIALECT_CT_INT,         /* "compressed_tensors_int": <p>.weight_packed I32 (or <p>.weight I8)
                                     + <p>.weight_scale [+ <p>.weight_zero_point, <p>.weight_shape] */
    NF_DIALECT_CT_NVFP4,       /* "compressed_tensors_nvfp4": <p>.weight_packed U8 + weight_scale
                                     F8_E4M3 + weight_global_scale (a divisor) */
    NF_DIALECT_MODELOPT_FP8,   /* "modelopt_fp8": <p>.weight F8 + <p>.weight_scale */
    NF_DIALECT_MODELOPT_NVFP4, /* "modelopt_nvfp4": <p>.weight U8 + weight_scale F8_E4M3 +
                                     weight_scale_2 (a multiplier) */
    NF_DIALECT_GPTQ,           /* "gptq": <p>.qweight I32 [K*b/32, N] + scales [G, N] + qzeros
                                     [G, N*b/32] (+ g_idx [K]) */
    NF_DIALECT_AWQ,            /* "awq": <p>.qweight I32 [K, N/8] (GEMM) or [N, K/8] (GEMV) +
                                     scales + qzeros */
    NF_DIALECT_MLX,            /* "mlx": <p>.weight U32 [N, K*b/32] + scales + biases [N, K/g] */
    NF_DIALECT_CT_MXFP4,       /* "compressed_tensors_mxfp4": <p>.weight_packed U8 [N, K/2] +
                                     weight_scale U8 E8M0 [N, K/32] */
    NF_DIALECT_GPT_OSS_MXFP4,  /* "gpt_oss_mxfp4": <p>_blocks U8 [..., R, K/32, 16] + <p>_scales U8
                                     E8M0 [..., R, K/32] (Hugging Face), or <p>.blocks + <p>.scales
                                     (OpenAI's original/) */
    NF_DIALECT_FBGEMM_FP8,     /* "fbgemm_fp8": <p>.weight F8_E4M3 [N, K] + weight_scale F32 [N, 1];
                                     stacked experts <x> F8_E4M3 [E, H, C] + <x>_scale F32 [E, 1, C] */
    NF_DIALECT_BNB_4BIT,       /* "bitsandbytes_4bit": <p>.weight U8 [ceil(N*K/2), 1] + weight.absmax +
                                     weight.quant_map [+ nested_absmax, nested_quant_map] +
                                     weight.quant_state.bitsandbytes__nf4|fp4 (JSON) */
    NF_DIALECT_BNB_INT8,       /* "bitsandbytes_int8": <p>.weight I8 [N, K] + <p>.SCB F32 [N] */
    NF_DIALECT_COUNT
} nf_dialect_id;

/* "deepseek_fp8", ...; "none" for NF_DIALECT_NONE; NULL out of range. */
NF_API const char *nf_dialect_name(nf_dialect_id id);

typedef enum nf_qcodes {
    NF_QCODES_E4M3,        /* one E4M3FN byte per value */
    NF_QCODES_E5M2,        /* one E5M2 byte per value */
    NF_QCODES_E2M1,        /* two E2M1 codes per byte, the lower column in the low nibble (scales
                             F8_E4M3, or E8M0 in U8 / F8_E8M0 for MXFP4: 2^(e - 127), 255 NaN) */
    NF_QCODES_INT_PACKED,  /* 32/bits offset-binary codes per little-endian int32, lowest first */
    NF_QCODES_INT8,        /* one int8 per value */
    NF_QCODES_UINT_PACKED, /* unsigned b-bit codes q with zero points z (GPTQ, AWQ) or biases (MLX): laid
                             out by nf_qpack */
    NF_QCODES_BNB4         /* bitsandbytes: two 4-bit indices into quant_map per byte of the flattened
                             weight, the first in the HIGH nibble */
} nf_qcodes;

/* Where a weight's codes and zero points lie (docs/dialects.md, "GPTQ and AWQ"). */
typedef enum nf_qpack {
    NF_QPACK_ROWS = 0, /* row n's codes in row n of the codes tensor (every dialect but these) */
    NF_QPACK_GPTQ,     /* qweight [K*b/32, N]: column n holds row n's codes, an LSB-first bit
                           stream along K (3-bit codes straddle words); qzeros [G, N*b/32] a bit
                           stream along N */
    NF_QPACK_AWQ_GEMM, /* qweight [K, N/8]: column k of the weight in row k, each word's nibbles
                           holding columns 0,2,4,6,1,3,5,7 of its eight; qzeros [G, N/8] alike */
    NF_QPACK_AWQ_GEMV, /* qweight [N, K/8]: natural order; qzeros [N, W] packed along the groups,
                           scales [N, 8W], both padded past the G groups */
    NF_QPACK_MLX,      /* weight [N, K*b/32]: row n's codes an LSB-first bit stream along K (3-,
                          5- and 6-bit codes straddle bytes); scales, biases [N, G] */
    NF_QPACK_BNB       /* bitsandbytes: blocks of block_cols values of the row-major flattened
                          weight (a block may span rows); int8: rows with a scale each */
} nf_qpack;

typedef enum nf_qglobal {
    NF_QGLOBAL_NONE,
    NF_QGLOBAL_MUL, /* ModelOpt weight_scale_2 */
    NF_QGLOBAL_DIV  /* compressed-tensors weight_global_scale */
} nf_qglobal;

/* One quantized weight.  Tensors are the source's (valid while it is open). */
typedef struct nf_qweight {
    nf_dialect_id dialect;
    const char *strategy;                  /* "tensor", "channel", "group" or "block" */
    const nf_source_tensor *codes;         /* <p>.weight or <p>.weight_packed: the weight's name */
    const nf_source_tensor *scale;         /* <p>.weight_scale or <p>.weight_scale_inv */
    const nf_source_tensor *global;        /* weight_scale_2 / weight_global_scale, or NULL */
    const nf_source_tensor *zero_point;    /* or NULL (symmetric) */
    const nf_source_tensor *shape_tensor;  /* <p>.weight_shape, or NULL */
    const nf_source_tensor *activation[2]; /* <p>.input_scale, <p>.input_global_scale (or NULL) */
    nf_qcodes codes_kind;
    unsigned bits;                   /* bits per code: 8, 4 (packed: 4 or 8) */
    uint64_t shape[2];               /* the weight [N, K] */
    uint64_t block_rows, block_cols; /* values one scale covers (edge blocks: fewer) */
    uint64_t scale_rows, scale_cols; /* the scale grid, ceil(N / block_rows) x ceil(K / block_cols);
                                        bitsandbytes 4-bit: 1 x ceil(N*K / block_cols), its blocks
                                        running along the flattened weight */
    bool zero_point_packed;          /* zero points in int32 words packed along the rows */
    nf_qglobal global_op;
    uint32_t global_bits; /* the global scale's binary32 word */
    /* GPTQ and AWQ (NF_QCODES_UINT_PACKED): w = (q - z) * s, s and z those of column k's group */
    nf_qpack pack;
    const nf_source_tensor *g_idx;  /* GPTQ: the group of each column k (act-order), or NULL: k / group */
    int32_t zero_add;               /* added to each stored zero point: 1 for GPTQ's v1 format, else 0 */
    uint64_t groups;                /* G: the groups of a row */
    bool act_order;                 /* g_idx is not k / group: a row's groups are not runs of columns */
    const nf_source_tensor *biases; /* MLX: w = s * q + b, b of the group; NULL for the others */
    int symmetric;                  /* declared sym (z = 2^(b-1)): 1, asymmetric 0, not declared -1 */
    /* bitsandbytes 4-bit: scale is weight.absmax (F32, or U8 codes of double quantization, whose
     * value is nested_quant_map[u] * nested_absmax[block / nested_block] + nested_offset);
     * shape_tensor is the JSON quant_state (int8: weight_format, or NULL) */
    const nf_source_tensor *quant_map, *nested_absmax, *nested_quant_map;
    uint64_t nested_block;
    uint32_t nested_offset_bits; /* binary32 */
    int value_dtype;             /* nf_st_dtype the state's dtype rounds values to (BF16, F16, F32) */
} nf_qweight;

/* What a tensor of the checkpoint is. */
typedef enum nf_qrole {
    NF_QROLE_PLAIN,     /* a tensor of its own */
    NF_QROLE_WEIGHT,    /* the codes tensor of a quantized weight: the weight itself */
    NF_QROLE_COMPANION, /* a weight's scale, global scale, zero points or shape: part of it */
    NF_QROLE_ACTIVATION /* an activation scale (input_scale, input_global_scale) of a module */
} nf_qrole;

typedef struct nf_dialects nf_dialects;

/* Scan an open source.  A GGUF source, or a safetensors checkpoint with no quantization
 * declaration and no companion tensor, gives an empty scan.  NF_ERR_INVALID for a declaration or
 * a weight that is not what a dialect says (missing or misshapen companions, wrong dtypes, a
 * global scale that is not finite and > 0, conflicting markers, a companion without its
 * weight), naming the file, the tensor or key; every weight's problems are checked, the first
 * is reported.  NF_ERR_INVALID too for a quantized checkpoint of a producer no dialect reads
 * (EXL2, HQQ, compressed-tensors sparse, GPTQ and AWQ
 * repacked for a kernel, MLX modes other than affine: docs/dialects.md, "Quantized checkpoints not read yet"), declared --
 * config.json quantization_config, quantization or sparsity_config, quantize_config.json,
 * quant_config.json -- or recognised by its tensors' names and dtypes: "FILE: KEY or tensor 'NAME': FORMAT (HOW):
 * not read yet, ...; convert from the BF16 release of the model". */
NF_API nf_status nf_dialects_scan(const nf_source *src, nf_dialects **out, nf_error *err);
NF_API void nf_dialects_free(nf_dialects *d);

/* What declared the quantization: "config.json quantization_config (compressed-tensors)",
 * "hf_quant_config.json (ModelOpt NVFP4)", ..., or "companion tensor names" when nothing but
 * the names did; NULL for an empty scan. */
NF_API const char *nf_dialects_declared(const nf_dialects *d);
NF_API size_t nf_dialects_weight_count(const nf_dialects *d);
NF_API const nf_qweight *nf_dialects_weight_at(const nf_dialects *d, size_t index);
/* The role of one of the source's tensors; *weight (may be NULL) gets the weight it belongs to
 * (WEIGHT, COMPANION; ACTIVATION when its module's weight is quantized, else NULL). */
NF_API nf_qrole nf_dialects_role(const nf_dialects *d, const nf_source_tensor *t, const nf_qweight **weight);

/* The companions a weight's values (and, for the dialects import_encoded takes, its words) are
 * read with -- scale, global scale, zero points, weight_shape (or bitsandbytes' JSON state), g_idx,
 * biases, quant_map, nested_absmax, nested_quant_map, those it has -- into out; their
 * count (at most NF_QWEIGHT_MAX_READS).  Activation scales are not among them. */
#define NF_QWEIGHT_MAX_READS 9
NF_API size_t nf_qweight_companions(const nf_qweight *q, const nf_source_tensor *out[NF_QWEIGHT_MAX_READS]);

/* "deepseek_fp8, block 128x128 F32 scales", "modelopt_nvfp4, group 16 F8_E4M3 scales x
 * weight_scale_2" -- for plans and messages. */
NF_API void nf_qweight_describe(const nf_qweight *q, char *buf, size_t size);

/* Values of rows [r0, r1) as binary32, (r1 - r0) * K floats into out (out_len at least that). */
NF_API nf_status nf_qweight_read_f32(const nf_source *src, const nf_qweight *q, uint64_t r0, uint64_t r1, float *out,
                                     size_t out_len, nf_error *err);
/* Values of columns [c0, c0 + n) of one row, n floats into out (out_len at least n): the values
 * nf_qweight_read_f32 gives there, bit for bit, reading only those columns' codes and the scales
 * that cover them, so a row longer than memory is read span by span (docs/dialects.md "Values"). */
NF_API nf_status nf_qweight_read_f32_span(const nf_source *src, const nf_qweight *q, uint64_t row, uint64_t c0,
                                          uint64_t n, float *out, size_t out_len, nf_error *err);

/* GPTQ and AWQ (NF_QCODES_UINT_PACKED) without act-order: rows [r0, r1) as their integers
 * q - z, (r1 - r0) * K int16 into ints, and their groups' scales as binary32 (exact), (r1 - r0)
 * * G floats into scales -- the words import_encoded keeps (docs/dialects.md "GPTQ and AWQ").
 * Scales are checked as nf_qweight_read_f32 checks them; NF_ERR_USAGE for another dialect. */
NF_API nf_status nf_qweight_read_ints(const nf_source *src, const nf_qweight *q, uint64_t r0, uint64_t r1,
                                      int16_t *ints, size_t ints_len, float *scales, size_t scales_len, nf_error *err);

#ifdef __cplusplus
}
#endif
#endif
