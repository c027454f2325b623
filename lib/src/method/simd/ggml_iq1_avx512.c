/* ggml_quantize's IQ1 split searches for AVX-512 F/BW/VL/DQ (ggml_simd.h, iq1s_split and
 * iq1m_split): 16 candidate splits a vector, the lane kernels of ggml_iq1_lanes.inc on 512-bit
 * vectors with masks in mask registers. */
#include <pthread.h>

#include "common/simd_target.h"
#include "method/ggml_quant.h"
#include "method/simd/ggml_simd.h"

#if NF_X86_KERNELS

#include <immintrin.h>

#define GQ(name) name##_z
#define GQ_FN NF_AVX512_FN
#define GQ_INLINE NF_AVX512_INLINE
#define GQ_W 16
#define vf __m512
#define vi __m512i
#define vm __mmask16
#define F1(s) _mm512_set1_ps(s)
#define I1(s) _mm512_set1_epi32(s)
#define FADD(a, b) _mm512_add_ps(a, b)
#define FSUB(a, b) _mm512_sub_ps(a, b)
#define FMUL(a, b) _mm512_mul_ps(a, b)
#define FGT(a, b) _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ)
#define MAND(a, b) ((__mmask16)((a) & (b)))
#define FSEL(m, a, b) _mm512_mask_blend_ps(m, b, a)
#define FLOAD(p) _mm512_loadu_ps(p)
#define FSTORE(p, v) _mm512_storeu_ps(p, v)
#define ILOAD(p) _mm512_loadu_si512((const void *)(p))
#define IGT(a, b) _mm512_cmpgt_epi32_mask(a, b)
#define BITS(m) ((unsigned)(m))
#include "method/simd/ggml_iq1_lanes.inc"
#undef ILOAD
#undef IGT
#undef BITS
#include "method/simd/ggml_ops_undef.inc"

bool nf_gq1s_split_avx512(const float *sumx, const float *sumw, float s0, int *b1, int *b2, int *shift,
                          float *scale)
{
    return iq1s_split_z(sumx, sumw, s0, b1, b2, shift, scale);
}

bool nf_gq1m_split_avx512(const float *x, const float *w, const int *idx, float s0, int *b1, int *b2, int *kind,
                          float *scale)
{
    return iq1m_split_z(x, w, idx, s0, b1, b2, kind, scale);
}

#endif
