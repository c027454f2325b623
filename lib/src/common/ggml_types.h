/* ggml's tensor types, one table for the whole library (internal): the id of ggml.h's enum
 * ggml_type, its name as gguf-py's GGMLQuantizationType spells it, and the block geometry of
 * ggml-common.h's block_* structs (values per block, bytes per block; 0, 0 for a type removed
 * from ggml), plus PrismML's PQ2_0 (docs/formats.md section 8).  The GGUF reader names and sizes
 * tensors from it, the registry's gguf_* formats and the block decoders take their geometry from
 * it, so the three cannot disagree.
 *
 * NF_GGML_TYPES(X) calls X(id, NAME, block_values, block_bytes) per type; the enum below gives
 * NF_GGML_<NAME> (the id), NF_GGML_<NAME>_VALUES and NF_GGML_<NAME>_BYTES. */
#ifndef NINFER_COMMON_GGML_TYPES_H
#define NINFER_COMMON_GGML_TYPES_H

/* The table as written: clang-format 14 folds it differently on each pass. */
/* clang-format off */
#define NF_GGML_TYPES(X)                                                                         \
    X(0, F32, 1, 4) X(1, F16, 1, 2) X(2, Q4_0, 32, 18) X(3, Q4_1, 32, 20) X(4, Q4_2, 0, 0)      \
    X(5, Q4_3, 0, 0) X(6, Q5_0, 32, 22) X(7, Q5_1, 32, 24) X(8, Q8_0, 32, 34) X(9, Q8_1, 32, 36) \
    X(10, Q2_K, 256, 84) X(11, Q3_K, 256, 110) X(12, Q4_K, 256, 144) X(13, Q5_K, 256, 176)      \
    X(14, Q6_K, 256, 210) X(15, Q8_K, 256, 292) X(16, IQ2_XXS, 256, 66) X(17, IQ2_XS, 256, 74)  \
    X(18, IQ3_XXS, 256, 98) X(19, IQ1_S, 256, 50) X(20, IQ4_NL, 32, 18) X(21, IQ3_S, 256, 110)  \
    X(22, IQ2_S, 256, 82) X(23, IQ4_XS, 256, 136) X(24, I8, 1, 1) X(25, I16, 1, 2)              \
    X(26, I32, 1, 4) X(27, I64, 1, 8) X(28, F64, 1, 8) X(29, IQ1_M, 256, 56) X(30, BF16, 1, 2)  \
    X(31, Q4_0_4_4, 0, 0) X(32, Q4_0_4_8, 0, 0) X(33, Q4_0_8_8, 0, 0) X(34, TQ1_0, 256, 54)     \
    X(35, TQ2_0, 256, 66) X(36, IQ4_NL_4_4, 0, 0) X(37, IQ4_NL_4_8, 0, 0)                       \
    X(38, IQ4_NL_8_8, 0, 0) X(39, MXFP4, 32, 17) X(40, NVFP4, 64, 36) X(41, Q1_0, 128, 18)      \
    X(42, Q2_0, 64, 18) X(142, PQ2_0, 128, 34)
/* clang-format on */

#define NF_GGML_ENUM_(id, name, values, bytes) \
    NF_GGML_##name = (id), NF_GGML_##name##_VALUES = (values), NF_GGML_##name##_BYTES = (bytes),
enum { NF_GGML_TYPES(NF_GGML_ENUM_) };
#undef NF_GGML_ENUM_

#endif
