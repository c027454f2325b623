/* The 512-bit gathers of the AVX-512 ggml_quantize kernels (ggml_iq3_avx512.c,
 * ggml_iq1_avx512.c) as functions: the -O0 macro forms of _mm512_i32gather_epi32 and
 * _mm512_i32gather_ps pass an all-ones mask with a sign change, which the build's
 * -Wsign-conversion refuses (the sanitizer build is Debug).  One function per scale, since the
 * scale must be an immediate.  Included by ggml_ops_z.inc; static inline, so an includer that
 * gathers nothing takes nothing. */
#ifndef NF_METHOD_SIMD_GGML_GATHER_Z_H
#define NF_METHOD_SIMD_GGML_GATHER_Z_H

#include "common/simd_target.h"

#if NF_X86_KERNELS
#include <immintrin.h>

NF_AVX512_INLINE __m512i gather1_z(const void *p, __m512i i)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-conversion"
    return _mm512_i32gather_epi32(i, p, 1);
#pragma GCC diagnostic pop
}

NF_AVX512_INLINE __m512i gather2_z(const void *p, __m512i i)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-conversion"
    return _mm512_i32gather_epi32(i, p, 2);
#pragma GCC diagnostic pop
}

NF_AVX512_INLINE __m512i gather4_z(const void *p, __m512i i)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-conversion"
    return _mm512_i32gather_epi32(i, p, 4);
#pragma GCC diagnostic pop
}

NF_AVX512_INLINE __m512 fgather4_z(const float *p, __m512i i)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-conversion"
    return _mm512_i32gather_ps(i, p, 4);
#pragma GCC diagnostic pop
}

#endif

#endif
