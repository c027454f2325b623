/* ggml_quantize's Q2_0 codes for AVX2 (ggml_simd.h, codes_q2_0): a block of 64 values in 8
 * vectors.  Each lane performs gq_q2_0_plain's operations (ggml_quant.c): the product x * (1 / d),
 * roundf as trunc plus the sign where the dropped fraction is at least 1/2 (exact: the fraction
 * of a binary32 is exact, and from 2^23 up there is none), VCVTTPS2DQ, which gives INT32_MIN for
 * NaN and out-of-range values as gq_trunc_i32 does, then + 1 and the clamp to [0, 3].  The
 * block's largest magnitude is exact in any order. */
#include "common/simd_target.h"
#include "method/ggml_encoders.h"
#include "method/simd/ggml_simd.h"

#if NF_X86_KERNELS

#include <immintrin.h>

/* roundf lane-wise (half away from zero). */
NF_AVX2_INLINE __m256 roundf_y(__m256 p)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256 t = _mm256_round_ps(p, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 away = _mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_sub_ps(p, t)), _mm256_set1_ps(0.5f), _CMP_GE_OQ);
    const __m256 one = _mm256_or_ps(_mm256_and_ps(p, sign), _mm256_set1_ps(1.0f));
    return _mm256_add_ps(t, _mm256_and_ps(away, one));
}

NF_AVX2_FN void nf_gq_codes_q2_0_avx2(unsigned nblk, const float *x, float *d, uint8_t *q)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256i shifts = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
    for (unsigned b = 0; b < nblk; b++) {
        const float *xb = x + 64 * b;
        __m256 v[8], m = _mm256_setzero_ps();
        for (int k = 0; k < 8; k++) {
            v[k] = _mm256_loadu_ps(xb + 8 * k);
            m = _mm256_max_ps(m, _mm256_andnot_ps(sign, v[k]));
        }
        __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        h = _mm_max_ps(h, _mm_movehl_ps(h, h));
        h = _mm_max_ss(h, _mm_shuffle_ps(h, h, 1));
        const float amax = _mm_cvtss_f32(h);
        const __m256 id = _mm256_set1_ps(amax > 0.0f ? 1.0f / amax : 0.0f);
        d[b] = amax;
        for (int k = 0; k < 8; k++) {
            __m256i c = _mm256_cvttps_epi32(roundf_y(_mm256_mul_ps(v[k], id)));
            c = _mm256_add_epi32(c, _mm256_set1_epi32(1));
            c = _mm256_max_epi32(_mm256_setzero_si256(), _mm256_min_epi32(_mm256_set1_epi32(3), c));
            /* the 4 codes of a byte into the low dword of lanes 0 and 4 */
            c = _mm256_sllv_epi32(c, shifts);
            c = _mm256_or_si256(c, _mm256_srli_epi64(c, 32));
            c = _mm256_or_si256(c, _mm256_shuffle_epi32(c, 0x4E));
            q[16 * b + 2 * (unsigned)k] = (uint8_t)_mm256_cvtsi256_si32(c);
            q[16 * b + 2 * (unsigned)k + 1] = (uint8_t)_mm256_extract_epi32(c, 4);
        }
    }
}

#endif
