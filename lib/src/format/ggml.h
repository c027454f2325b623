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

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
/* SIMD block dequantizers (simd/ggml_kquant_simd.c) of the AVX2 and AVX-512 levels
 * (common/cpu.h); bit-identical to the scalar ones. */
#define NF_GGML_KQUANT_DECL(sfx)                                                                    \
    void nf_ggml_deq_q2_k##sfx(const uint8_t *block, float *out);                                   \
    void nf_ggml_deq_q3_k##sfx(const uint8_t *block, float *out);                                   \
    void nf_ggml_deq_q4_k##sfx(const uint8_t *block, float *out);                                   \
    void nf_ggml_deq_q5_k##sfx(const uint8_t *block, float *out);                                   \
    void nf_ggml_deq_q6_k##sfx(const uint8_t *block, float *out);
NF_GGML_KQUANT_DECL(_avx2)
NF_GGML_KQUANT_DECL(_avx512)
/* the per-element bodies of Q4_K..Q6_K (Q2_K and Q3_K use table lookups instead) */
void nf_ggml_deq_q4_k_avx2_generic(const uint8_t *block, float *out);
void nf_ggml_deq_q5_k_avx2_generic(const uint8_t *block, float *out);
void nf_ggml_deq_q6_k_avx2_generic(const uint8_t *block, float *out);
void nf_ggml_deq_q4_k_avx512_generic(const uint8_t *block, float *out);
void nf_ggml_deq_q5_k_avx512_generic(const uint8_t *block, float *out);
void nf_ggml_deq_q6_k_avx512_generic(const uint8_t *block, float *out);
#endif

#endif
