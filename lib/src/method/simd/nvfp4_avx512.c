/* nvfp4_quantize group kernel for AVX-512 F + BW + VL (nvfp4_simd.h): a group of 16 binary32
 * values is one vector.  The group's largest magnitude is a reduction of VPMAXUD over the
 * sign-cleared words, the scale word comes from nf_nvfp4_scale_of (scalar, once a group), each
 * code from one VDIVPS by the group's multiplier (exact IEEE division, as the reference's
 * x / sv) and seven ordered compares against the E2M1 boundaries, each adding one under its
 * mask; the sign is a compare y < 0.  VPMOVDB narrows the codes (<= 15) to bytes. */
#include "common/simd_target.h"
#include "method/simd/nvfp4_simd.h"

#if NF_X86_KERNELS

#include <immintrin.h>

NF_AVX512_INLINE __m512i passed(__m512i c, __m512 a, float bound, int pred)
{
    return _mm512_mask_add_epi32(c, _mm512_cmp_ps_mask(a, _mm512_set1_ps(bound), pred), c, _mm512_set1_epi32(1));
}

NF_AVX512_FN static void nvfp4_groups_avx512(const float *x, size_t ngroups, const nf_nvfp4_global *g,
                                             uint8_t *codes, uint8_t *scales)
{
    const __m512i mag = _mm512_set1_epi32(0x7FFFFFFF);
    for (size_t j = 0; j < ngroups; j++, x += NF_NVFP4_GROUP, codes += NF_NVFP4_GROUP) {
        __m512 v = _mm512_loadu_ps(x);
        float sv;
        scales[j] = nf_nvfp4_scale_of(
            (uint32_t)_mm512_reduce_max_epu32(_mm512_and_si512(_mm512_castps_si512(v), mag)), g, &sv);
        __m512 y = _mm512_div_ps(v, _mm512_set1_ps(sv));
        __m512 a = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(y), mag));
        __m512i c = _mm512_setzero_si512();
        c = passed(c, a, 0.25f, _CMP_GT_OQ);
        c = passed(c, a, 0.75f, _CMP_GE_OQ);
        c = passed(c, a, 1.25f, _CMP_GT_OQ);
        c = passed(c, a, 1.75f, _CMP_GE_OQ);
        c = passed(c, a, 2.5f, _CMP_GT_OQ);
        c = passed(c, a, 3.5f, _CMP_GE_OQ);
        c = passed(c, a, 5.0f, _CMP_GT_OQ);
        c = _mm512_mask_or_epi32(c, _mm512_cmp_ps_mask(y, _mm512_setzero_ps(), _CMP_LT_OQ), c,
                                 _mm512_set1_epi32(8));
        _mm_storeu_si128((__m128i *)(void *)codes, _mm512_cvtepi32_epi8(c));
    }
}

const nf_nvfp4_kernels nf_nvfp4_kernels_avx512 = {.name = "avx512", .groups = nvfp4_groups_avx512};

#else
typedef int nf_nvfp4_avx512_unused; /* not an x86 GCC/Clang build: no AVX-512 kernel */
#endif
