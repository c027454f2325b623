/* ggml_quantize's Q2_0 codes for AVX-512 F/BW/VL/DQ (ggml_simd.h, codes_q2_0): a block of 64
 * values in 4 vectors.  Each lane performs gq_q2_0_plain's operations (ggml_quant.c): the product
 * x * (1 / d), roundf as trunc plus the sign where the dropped fraction is at least 1/2 (exact:
 * the fraction of a binary32 is exact, and from 2^23 up there is none), VCVTTPS2DQ, which gives
 * INT32_MIN for NaN and out-of-range values as gq_trunc_i32 does, then + 1 and the clamp to
 * [0, 3].  The block's largest magnitude is exact in any order. */
#include "common/simd_target.h"
#include "method/ggml_encoders.h"
#include "method/simd/ggml_simd.h"

#if NF_X86_KERNELS

#include <immintrin.h>

/* roundf lane-wise (half away from zero). */
NF_AVX512_INLINE __m512 roundf_z(__m512 p)
{
    const __m512i sign = _mm512_set1_epi32(INT32_MIN);
    /* VRNDSCALEPS toward zero (its -O0 macro form trips -Wsign-conversion) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-conversion"
    const __m512 t = _mm512_roundscale_ps(p, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
#pragma GCC diagnostic pop
    const __m512 frac = _mm512_castsi512_ps(_mm512_andnot_si512(sign, _mm512_castps_si512(_mm512_sub_ps(p, t))));
    const __mmask16 away = _mm512_cmp_ps_mask(frac, _mm512_set1_ps(0.5f), _CMP_GE_OQ);
    const __m512 one = _mm512_castsi512_ps(
        _mm512_or_si512(_mm512_and_si512(_mm512_castps_si512(p), sign), _mm512_castps_si512(_mm512_set1_ps(1.0f))));
    return _mm512_mask_add_ps(t, away, t, one);
}

NF_AVX512_FN void nf_gq_codes_q2_0_avx512(unsigned nblk, const float *x, float *d, uint8_t *q)
{
    const __m512i shifts = _mm512_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6);
    for (unsigned b = 0; b < nblk; b++) {
        const float *xb = x + 64 * b;
        __m512 v[4], m = _mm512_setzero_ps();
        for (int k = 0; k < 4; k++) {
            v[k] = _mm512_loadu_ps(xb + 16 * k);
            m = _mm512_max_ps(m, _mm512_abs_ps(v[k]));
        }
        const float amax = _mm512_reduce_max_ps(m);
        const __m512 id = _mm512_set1_ps(amax > 0.0f ? 1.0f / amax : 0.0f);
        d[b] = amax;
        __m512i bytes = _mm512_setzero_si512();
        for (int k = 0; k < 4; k++) {
            __m512i c = _mm512_cvttps_epi32(roundf_z(_mm512_mul_ps(v[k], id)));
            c = _mm512_add_epi32(c, _mm512_set1_epi32(1));
            c = _mm512_max_epi32(_mm512_setzero_si512(), _mm512_min_epi32(_mm512_set1_epi32(3), c));
            /* value j's shifted code as byte j of the block's 64 */
            const __m128i b16 = _mm512_cvtepi32_epi8(_mm512_sllv_epi32(c, shifts));
            bytes = _mm512_mask_blend_epi32((__mmask16)(0xFu << (4 * k)), bytes, _mm512_broadcast_i32x4(b16));
        }
        /* each dword holds the 4 codes of an output byte in its 4 bytes: OR them */
        bytes = _mm512_or_si512(bytes, _mm512_srl_epi32(bytes, _mm_cvtsi32_si128(8)));
        bytes = _mm512_or_si512(bytes, _mm512_srl_epi32(bytes, _mm_cvtsi32_si128(16)));
        _mm_storeu_si128((__m128i *)(void *)(q + 16 * b), _mm512_cvtepi32_epi8(bytes));
    }
}

#endif
