/* ninfer/import.h - import_encoded (docs/methods.md): moves words that a
 * checkpoint already holds in quantized form into the logical words of a target format
 * (nf_words of ninfer/layout.h), ready for nf_layout_encode_rows.  Nothing is requantized,
 * rounded or canonicalized, except the conversions the dialects define: a ModelOpt
 * multiplier becomes its binary32 reciprocal divisor, an F32 FP8 row scale is rounded to
 * BF16 once, and an MXFP4 block scale 2^(e - 127) becomes the E4M3 power of two 2^(e - 127 + p)
 * of both its 16-value halves under the matrix's divisor 2^p (exact: both are powers of two).
 *
 *   kind                         source tensors                                 target
 *   NF_IMPORT_GGUF_BLOCKS        GGUF blocks of ggml type T                     gguf_* of type T
 *   NF_IMPORT_GSQ_Q2_0           GGUF GSQ Q2_0 (type 42), 18-byte blocks         q2_g64_fp16
 *   NF_IMPORT_Q8_0               GGUF Q8_0 (type 8), 34-byte blocks              q8_g32_fp16
 *   NF_IMPORT_PQ2_0              GGUF PrismML PQ2_0 (type 142), 34-byte blocks   t2_g128_fp16
 *   NF_IMPORT_NVFP4_MODELOPT     <p>.weight U8 [N,K/2], <p>.weight_scale         nvfp4
 *                                F8_E4M3 [N,K/16], <p>.weight_scale_2 F32 scalar
 *   NF_IMPORT_NVFP4_COMPRESSED   <p>.weight_packed U8 [N,K/2], <p>.weight_scale  nvfp4
 *                                F8_E4M3 [N,K/16], <p>.weight_global_scale F32
 *   NF_IMPORT_FP8_COMPRESSED     <p>.weight F8_E4M3 [N,K], <p>.weight_scale      fp8_e4m3fn_row_bf16
 *                                BF16 or F32, [N], [N,1] or one value
 *   NF_IMPORT_INT_GROUPS         GPTQ / AWQ integers q - z and F16 group scales  q2_g64_fp16,
 *                                (nf_qweight_read_ints, ninfer/dialect.h)        q4_g64_fp16,
 *                                                                                q5_g64_fp16, q8_g32_fp16
 *   NF_IMPORT_MXFP4              MXFP4 E2M1 codes U8 [N,K/2] and E8M0 scales    nvfp4
 *                                U8 [N,K/32] (gpt-oss, compressed-tensors)
 *   NF_IMPORT_GGUF_TERNARY       GGUF TQ1_0 (34), TQ2_0 (35) or Q1_0 (41) blocks  t2_g128_fp16,
 *                                (codes of docs/formats.md 8.5, one scale d)     q2_g64_fp16
 *   NF_IMPORT_Q8_1               GGUF Q8_1 (type 9), 36-byte blocks              q8_g32_fp16
 *   NF_IMPORT_GGUF_MXFP4         GGUF MXFP4 (type 39), 17-byte blocks            nvfp4
 *   NF_IMPORT_GGUF_NVFP4         GGUF NVFP4 (type 40), 36-byte blocks            nvfp4
 *
 * Two steps.  An nf_import_init_*() function reads only what a checkpoint header declares
 * (names, dtypes, shapes) plus the tensor-level scalar (the NVFP4 divisor, a per-tensor FP8
 * scale), checks it against the dialect and the target, and fills an nf_import.  Then
 * nf_import_rows() converts chunks of consecutive source rows, given as the raw bytes the
 * caller read from the files.  Every row is converted on its own, so converting rows [r0, r1)
 * gives exactly the words the whole tensor would give for those rows, and any chunking (the
 * converter's bounded row chunks; for nvfp4 it is upstream's max(128, rows_per_chunk // 128 *
 * 128), restarted at each source boundary) produces the same words.  An nf_import is immutable
 * after init: chunks may be converted concurrently from several threads.
 *
 * Matrices.  A source is a matrix of N rows of K values: the last dimension is K, and for GGUF
 * tensors every leading dimension multiplies N (a rank-3 [E,N,K] bank is E*N rows; a rank-1
 * tensor is one row).  The safetensors dialects are rank 2.  Shapes are row-major, innermost
 * last: GGUF's ne is reversed, as nf_source_tensor holds it.
 *
 * Parents.  Words land at any row of the output words (out_row), so one parent may stack rows
 * of several sources, reordered or repeated (a llama.cpp row permutation, gate+up packing):
 * convert each run of consecutive source rows into its place.  An nvfp4 parent of several
 * sources also needs its divisor words: nf_import_nvfp4_stack() / nf_import_nvfp4_divisors().
 *
 * Errors.  NF_ERR_INVALID for a source that is not what the dialect says, or holds a word
 * outside the target's contract (docs/formats.md); the message names the tensor holding
 * the word (caller-supplied name), the absolute source row, the column or block and the word:
 *   "blk.0.ffn_up.weight: row 3 block 1: Q8_0 scale 0x8000 is -0, outside the native
 *    q8_g32_fp16 contract".
 * NF_ERR_USAGE for inconsistent arguments (missing pointers, a buffer shorter than the chunk,
 * rows outside the tensor or the output).  On failure the output words are unspecified.
 *
 * Floating-point environment: the ModelOpt reciprocal is one binary32 division, so the calling
 * thread must run with the default IEEE environment (round to nearest, no flush-to-zero), as
 * for ninfer/method.h.
 */
#ifndef NINFER_IMPORT_H
#define NINFER_IMPORT_H

#include <ninfer/export.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ninfer/error.h>
#include <ninfer/format.h>
#include <ninfer/layout.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ggml type ids of the block sources (docs/layouts.md 8; PQ2_0 is PrismML's). */
#define NF_IMPORT_GGML_Q8_0 8
#define NF_IMPORT_GGML_Q2_0 42
#define NF_IMPORT_GGML_PQ2_0 142
#define NF_IMPORT_GGML_Q8_1 9
#define NF_IMPORT_GGML_TQ1_0 34
#define NF_IMPORT_GGML_TQ2_0 35
#define NF_IMPORT_GGML_MXFP4 39
#define NF_IMPORT_GGML_NVFP4 40
#define NF_IMPORT_GGML_Q1_0 41

typedef enum nf_import_kind {
    NF_IMPORT_GGUF_BLOCKS,      /* whole rows of ggml blocks copied byte for byte */
    NF_IMPORT_GSQ_Q2_0,         /* per block: bytes 2..17 = 64 stored words u (q = u - 1),
                                   bytes 0..1 = the binary16 scale (any finite word) */
    NF_IMPORT_Q8_0,             /* per block: binary16 scale, 32 int8 codes */
    NF_IMPORT_PQ2_0,            /* per block: binary16 scale, 128 codes 00=-1 01=0 10=+1 */
    NF_IMPORT_NVFP4_MODELOPT,   /* divisor = binary32 reciprocal of weight_scale_2 */
    NF_IMPORT_NVFP4_COMPRESSED, /* divisor = weight_global_scale as stored */
    NF_IMPORT_FP8_COMPRESSED,   /* E4M3FN codes + one BF16 multiplier per row */
    NF_IMPORT_INT_GROUPS,       /* integer codes q - z + one binary16 scale per source group */
    NF_IMPORT_MXFP4,            /* E2M1 codes + one E8M0 scale per 32 values, divisor 2^p */
    NF_IMPORT_GGUF_TERNARY,     /* per block: binary16 d, 256 or 128 codes in -1..2 */
    NF_IMPORT_Q8_1,             /* per block: binary16 d, binary16 s (not kept), 32 int8 codes */
    NF_IMPORT_GGUF_MXFP4,       /* per block: E8M0 e, 32 E2M1 codes (j low, j + 16 high) */
    NF_IMPORT_GGUF_NVFP4,       /* per block: 4 UE4M3 scales, 64 E2M1 codes */
    NF_IMPORT_KIND_COUNT
} nf_import_kind;

/* "gguf_blocks", "gsq_q2_0", "q8_0", "pq2_0", "nvfp4_modelopt", "nvfp4_compressed_tensors",
 * "fp8_compressed_tensors", "int_groups", "mxfp4", "gguf_ternary", "q8_1", "gguf_mxfp4",
 * "gguf_nvfp4"; NULL for an out-of-range kind. */
NF_API const char *nf_import_kind_name(nf_import_kind kind);

/* One source tensor as its checkpoint declares it (no data).  For an nf_source_tensor t:
 * {t->name, t->type_name, t->ggml_type, t->rank, t->shape}. */
typedef struct nf_import_tensor {
    const char *name;  /* full tensor name: used in messages; the safetensors dialects also
                              check its last dot-separated component ("weight_scale_2") and that
                              all companions share the same prefix */
    const char *dtype; /* safetensors dtype spelling ("U8", "F8_E4M3", "BF16", "F32");
                              ignored for a GGUF tensor */
    int ggml_type;     /* a GGUF tensor's ggml type id; -1 for a safetensors tensor */
    uint32_t rank;
    const uint64_t *shape; /* rank dimensions, row-major, innermost last */
} nf_import_tensor;

/* A prepared import of one source matrix.  Filled by nf_import_init_*(); read-only after. */
typedef struct nf_import {
    nf_import_kind kind;
    const nf_format *target;
    const char *name;         /* codes/blocks tensor name (borrowed: must outlive the import) */
    const char *scale_name;   /* scale tensor name (nvfp4, fp8), else == name */
    uint64_t rows, cols;      /* the matrix [N, K] */
    uint64_t row_bytes;       /* bytes of one source row of the codes/blocks tensor: its rows
                                 [r0, r1) are bytes [r0 * row_bytes, r1 * row_bytes) */
    uint64_t scale_row_bytes; /* bytes of one row of the scale tensor a chunk carries: nvfp4
                                 K/16; fp8 per-row 2 (BF16) or 4 (F32); 0 when chunks carry no
                                 scales (GGUF sources, fp8 per-tensor scale) */
    int ggml_type;            /* GGUF sources: the blocks' ggml type; -1 otherwise */
    bool scale_f32;           /* fp8: the scale tensor is F32 (rounded to BF16 once, RNE) */
    bool scale_per_tensor;    /* fp8: one scale for every row */
    uint16_t tensor_scale;    /* fp8 per-tensor: the BF16 row-scale word every row gets */
    uint32_t source_scalar;   /* the stored tensor-level word: nvfp4 weight_scale_2 /
                                 weight_global_scale (F32); fp8 per-tensor scale (BF16 or F32) */
    uint32_t divisor;         /* nvfp4: this matrix's divisor word d_w */
    uint64_t group;           /* int_groups: the source's group of columns (K for one per row) */
    int32_t divisor_log2;     /* mxfp4: p, the divisor being 2^p */
} nf_import;

/* ---------------------------------------------------------------- init */
/* A GGUF block tensor into `target`, which picks the import:
 *   gguf_*        the tensor's ggml type must be the target's (both are named otherwise);
 *   q2_g64_fp16   type 42 (GSQ Q2_0), or TQ1_0 (34), TQ2_0 (35), Q1_0 (41): each block's codes q
 *                 (docs/formats.md 8.5) as q2's stored u = q + 1 under its d, in every 64-group;
 *   q8_g32_fp16   type 8 (Q8_0) or 9 (Q8_1, its s not kept), K % 32 == 0;
 *   t2_g128_fp16  type 142 (PQ2_0), or TQ1_0, TQ2_0, Q1_0: their codes under d in each 128-group,
 *                 when every code is in -1..1 and d is a valid T2 scale (docs/formats.md 5.4).
 * The words are value-exact: ggml's to_float of a block equals the target's value of its words
 * (a block that cannot be held so is refused, naming its row and block).  Any other target (and a
 * safetensors tensor) is refused; GGUF MXFP4 and NVFP4 go through nf_import_init_gguf_fp4. */
NF_API nf_status nf_import_init_gguf(nf_import *imp, const nf_format *target, const nf_import_tensor *blocks,
                                     nf_error *err);

/* An NVFP4 matrix of either dialect (NF_IMPORT_NVFP4_MODELOPT or _COMPRESSED):
 *   codes   "<p>.weight" (ModelOpt) / "<p>.weight_packed" (compressed-tensors), U8 [N, K/2], two
 *           E2M1 codes per byte, the lower k in the low nibble; K = 2 * shape[1] must be a
 *           multiple of 16;
 *   scales  "<p>.weight_scale", F8_E4M3 [N, K/16], natural row-major order;
 *   scalar  "<p>.weight_scale_2" / "<p>.weight_global_scale", F32 with one element (rank 0 or
 *           every dimension 1); scalar_bytes holds its 4 little-endian bytes (scalar_len == 4).
 * Divisor word d_w (docs/formats.md 6.1: W = e2m1 * e4m3fn / d_w):
 *   compressed-tensors: the stored word itself (its global scale is already a divisor);
 *   ModelOpt: weight_scale_2 m is a multiplier, so d_w = RN32(1 / m), the exact quotient 1 / m
 *   rounded once to binary32, nearest with ties to even (one IEEE binary32 division; equal to
 *   rounding the binary64 quotient to binary32, since 53 >= 2*24 + 2 bits make that double
 *   rounding innocuous).  m must be finite and > 0, and its reciprocal finite (m below about
 *   2^-128 overflows).
 * d_w must be finite and > 0; the words are otherwise copied as they are. */
NF_API nf_status nf_import_init_nvfp4(nf_import *imp, nf_import_kind dialect, const nf_import_tensor *codes,
                                      const nf_import_tensor *scales, const nf_import_tensor *scalar,
                                      const void *scalar_bytes, size_t scalar_len, nf_error *err);

/* A compressed-tensors FP8 matrix into `target`, which must be fp8_e4m3fn_row_bf16
 * (fp8_e4m3fn_row_fp16 is not an import_encoded target):
 *   codes   "<p>.weight", F8_E4M3 [N, K];
 *   scales  "<p>.weight_scale", BF16 or F32, either per row ([N] or [N,1]) or one value for the
 *           tensor (one element: rank 0, [1], [1,1]), then replicated over the rows.
 * A per-tensor scale is read here: tensor_scale_bytes holds its 2 (BF16) or 4 (F32) bytes;
 * per-row scales come with each chunk (tensor_scale_bytes is then ignored and may be NULL).
 * An F32 scale is rounded to BF16 once, nearest with ties to even.  A row scale must be a valid
 * BF16 row scale: sign clear (negative values and -0 are refused, also before rounding) and
 * finite (an F32 scale whose rounding overflows to infinity is refused); +0 is allowed but then
 * every code of the row must be 0x00 or 0x80. */
NF_API nf_status nf_import_init_fp8(nf_import *imp, const nf_format *target, const nf_import_tensor *codes,
                                    const nf_import_tensor *scales, const void *tensor_scale_bytes,
                                    size_t tensor_scale_len, nf_error *err);

/* A GPTQ or AWQ matrix [rows, cols] without act-order into `target` (q2_g64_fp16, q4_g64_fp16,
 * q5_g64_fp16 or q8_g32_fp16), its groups of `group` columns (cols or more: one per row) made of whole
 * target groups.  A chunk carries rows of nf_qweight_read_ints: row_bytes = 2 * cols (int16
 * q - z) and scale_row_bytes = 4 * G (binary32 scales).  Each scale must be a finite nonzero
 * binary16 value, each integer inside the target's codes (q8: -128 is not), else the row and
 * column are named and the message says to requantize. */
NF_API nf_status nf_import_init_int_groups(nf_import *imp, const nf_format *target, const nf_import_tensor *codes,
                                           const nf_import_tensor *scales, uint64_t rows, uint64_t cols, uint64_t group,
                                           nf_error *err);

/* An MXFP4 matrix [rows, cols] into nvfp4 (docs/dialects.md "MXFP4"): codes U8, two E2M1 codes per
 * byte, the lower column in the low nibble (row_bytes cols / 2); scales E8M0 (U8 or F8_E8M0), one
 * per 32 values (scale_row_bytes cols / 32); cols a multiple of 32.  The divisor is 2^p, p =
 * divisor_log2 in [-126, 127]: block exponent e gives both halves the E4M3 scale 2^(e - 127 + p),
 * which must lie in [2^-9, 2^8]; a block below that range is kept only when all its codes are
 * zero (scale 2^-9), above it never.  The caller chooses p from the scales (p = min(135 - max e,
 * 127) keeps every block within 17 octaves of the largest).  E8M0 255 (NaN) and a value past
 * binary32 are refused, naming the row and block. */
NF_API nf_status nf_import_init_mxfp4(nf_import *imp, const nf_import_tensor *codes, const nf_import_tensor *scales,
                                      uint64_t rows, uint64_t cols, int32_t divisor_log2, nf_error *err);

/* A GGUF MXFP4 (type 39) or NVFP4 (type 40) block tensor into nvfp4 (docs/formats.md 8.5), value-
 * exact with ggml's to_float.  MXFP4: as nf_import_init_mxfp4 with the divisor 2^divisor_log2,
 * the codes of element j and j + 16 in the low and high nibble of byte 1 + j, and E8M0 255 read as
 * ggml reads it (2^128, so only a block of codes 0 and +-0.5 survives).  NVFP4: divisor 1
 * (divisor_log2 must be 0), each sub-block's UE4M3 byte x as the E4M3 scale x & 0x7F (0x7F reads
 * 0: scale 0x00; 0xFF, which ggml reads as 240, has no E4M3 word and is refused).  ggml's table
 * gives code 8 the integer 0, so code 8 becomes code 0 (+0, not -0). */
NF_API nf_status nf_import_init_gguf_fp4(nf_import *imp, const nf_import_tensor *blocks, int32_t divisor_log2,
                                         nf_error *err);

/* ---------------------------------------------------------------- geometry */
/* Geometry of the object holding this one matrix: the target's default layout, shape
 * [rows, cols], one divisor (fails, naming the tensor, when the layout cannot hold the shape,
 * e.g. nvfp4 with N % 128 != 0 or K % 64 != 0). */
NF_API nf_status nf_import_geometry(const nf_import *imp, nf_geometry *g, nf_error *err);

/* An nvfp4 parent stacking the rows of sources[0..count) in that order (docs/recipes.md, "How rules apply"
 * parent_divisors): shape [sum of N, K] (every K equal); divisors = count when the sources'
 * divisor words are not all identical, which needs every source to have the same N, a multiple
 * of 128 (each divisor covers whole 128-row tiles); else divisors = 1. */
NF_API nf_status nf_import_nvfp4_stack(const nf_import *sources, size_t count, nf_geometry *g, nf_error *err);
/* The g->divisors divisor words of that parent (g from nf_import_nvfp4_stack for the same
 * sources) into divisors[0..g->divisors), e.g. an nf_words' divisors array. */
NF_API nf_status nf_import_nvfp4_divisors(const nf_import *sources, size_t count, const nf_geometry *g,
                                          uint32_t *divisors, nf_error *err);

/* ---------------------------------------------------------------- rows */
/* One chunk of consecutive source rows [first_row, first_row + rows). */
typedef struct nf_import_chunk {
    uint64_t first_row; /* absolute source row of the chunk's first row */
    uint64_t rows;      /* 0 is a no-op */
    const void *data;   /* codes/blocks tensor bytes of these rows: rows * row_bytes bytes,
                            any alignment */
    size_t data_len;    /* at least rows * row_bytes */
    const void *scales; /* scale tensor bytes of these rows: rows * scale_row_bytes bytes
                            (NULL when scale_row_bytes == 0) */
    size_t scales_len;  /* at least rows * scale_row_bytes */
    uint64_t first_col; /* nvfp4: the absolute column of the chunk's first column when it is a
                            span of the rows (an import of that span's columns: cols, row_bytes
                            and scale_row_bytes the span's; docs/layouts.md section 12), for
                            messages; 0 for whole rows */
} nf_import_chunk;

/* Convert the chunk's rows into rows [out_row, out_row + chunk->rows) of out, whose cols must be
 * imp->cols and which must hold the arrays of the target's category (nf_words_alloc does that):
 *   gguf_*  blocks: the row bytes;
 *   q2/q8/t2  codes (signed q; q2 q = u - 1) and scales (K / G binary16 words per row);
 *   nvfp4   codes8 (E2M1 words 0..15) and scales8 (natural [rows, K/16]); the divisors array
 *           is not touched (nf_import_nvfp4_divisors);
 *   fp8     codes8 (E4M3FN words) and scales (one BF16 word per row).
 * Words outside the target's contract are refused (see each kind above and docs/formats.md 9):
 *   Q2_0   a non-finite scale (+-inf, NaN); every code and finite scale, +-0 included, is kept;
 *   Q8_0   a -0 (0x8000) or non-finite scale, code 0x80 (-128), a +0 scale over a nonzero code;
 *   PQ2_0  code 11, a -0 or non-finite scale, a +0 scale over a nonzero code;
 *   nvfp4  a scale with its sign set or 0x7F (NaN); every E2M1 code is valid;
 *   mxfp4  E8M0 255 (NaN), a block outside the divisor's range (see nf_import_init_mxfp4);
 *   fp8    codes 0x7F / 0xFF (NaN), an invalid row scale, a +0 scale over a nonzero code. */
NF_API nf_status nf_import_rows(const nf_import *imp, const nf_import_chunk *chunk, nf_words *out, uint64_t out_row,
                                nf_error *err);

#ifdef __cplusplus
}
#endif
#endif
