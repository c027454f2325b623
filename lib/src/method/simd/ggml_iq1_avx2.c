/* ggml_quantize's IQ1 split searches for AVX2 (ggml_simd.h, iq1s_split and iq1m_split): 8
 * candidate splits a vector, the lane kernels of ggml_iq1_lanes.inc on 256-bit vectors. */
#include <pthread.h>

#include "common/simd_target.h"
#include "method/ggml_quant.h"
#include "method/simd/ggml_simd.h"

#if NF_X86_KERNELS

#include <immintrin.h>

#define GQ(name) name##_y
#define GQ_FN NF_AVX2_FN
#define GQ_INLINE NF_AVX2_INLINE
#include "method/simd/ggml_ops_y.inc"
#define ILOAD(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define IGT(a, b) _mm256_castsi256_ps(_mm256_cmpgt_epi32(a, b))
#define BITS(m) ((unsigned)_mm256_movemask_ps(m))
#include "method/simd/ggml_iq1_lanes.inc"
#undef ILOAD
#undef IGT
#undef BITS
#include "method/simd/ggml_ops_undef.inc"

bool nf_gq1s_split_avx2(const float *sumx, const float *sumw, float s0, int *b1, int *b2, int *shift, float *scale)
{
    return iq1s_split_y(sumx, sumw, s0, b1, b2, shift, scale);
}

bool nf_gq1m_split_avx2(const float *x, const float *w, const int *idx, float s0, int *b1, int *b2, int *kind,
                        float *scale)
{
    return iq1m_split_y(x, w, idx, s0, b1, b2, kind, scale);
}

#endif
