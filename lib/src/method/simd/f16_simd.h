/* Binary16 words to binary32, the loads of F16 sources (nf_method_load_f32, method/common.c),
 * internal.  p holds n words in host order at any alignment; out[i] gets exactly the bits of
 * nf_f16_to_f32 for word i, whichever kernel runs. */
#ifndef NINFER_METHOD_F16_SIMD_H
#define NINFER_METHOD_F16_SIMD_H

#include <stddef.h>
#include <stdint.h>

#include "common/simd_target.h"

/* The dispatcher (f16_select.c): the level's kernel, else the portable loop. */
void nf_method_f16_words_to_f32(const uint8_t *p, size_t n, float *out);

#if NF_X86_KERNELS
/* f16_x86.c: SSE2, x86-64's baseline (every level, the scalar one too); F16C (the avx2 level). */
#if defined(__SSE2__)
#define NF_METHOD_F16_SSE2 1
void nf_method_f16_words_sse2(const uint8_t *p, size_t n, float *out);
#endif
void nf_method_f16_words_f16c(const uint8_t *p, size_t n, float *out);
#endif
#if NF_ARM_KERNELS
/* f16_neon.c: the neon level */
void nf_method_f16_words_neon(const uint8_t *p, size_t n, float *out);
#endif

#endif
