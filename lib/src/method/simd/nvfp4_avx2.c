/* nvfp4_quantize group kernel for AVX2 (nvfp4_simd.h): a group of 16 binary32 values is two
 * vectors of 8 lanes.  The group's largest magnitude is a VPMAXUD of the sign-cleared words, the
 * scale word comes from nf_nvfp4_scale_of (scalar, once a group), each code from one VDIVPS by the
 * group's multiplier (exact IEEE division, as the reference's x / sv) and seven ordered compares
 * against the E2M1 boundaries, whose all-ones masks are subtracted to count them; the sign is a
 * compare y < 0.  The int32 codes (<= 15) narrow to bytes with unsigned saturating packs, which
 * never saturate. */
#include "common/simd_target.h"
#include "method/simd/nvfp4_simd.h"

#if NF_X86_KERNELS

#include <immintrin.h>

NF_AVX2_INLINE __m256i passed(__m256i c, __m256 a, float bound, int pred)
{
    return _mm256_sub_epi32(c, _mm256_castps_si256(_mm256_cmp_ps(a, _mm256_set1_ps(bound), pred)));
}

/* The E2M1 words of y, as int32 lanes. */
NF_AVX2_INLINE __m256i code_lanes(__m256 y)
{
    __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), y);
    __m256i c = _mm256_setzero_si256();
    c = passed(c, a, 0.25f, _CMP_GT_OQ);
    c = passed(c, a, 0.75f, _CMP_GE_OQ);
    c = passed(c, a, 1.25f, _CMP_GT_OQ);
    c = passed(c, a, 1.75f, _CMP_GE_OQ);
    c = passed(c, a, 2.5f, _CMP_GT_OQ);
    c = passed(c, a, 3.5f, _CMP_GE_OQ);
    c = passed(c, a, 5.0f, _CMP_GT_OQ);
    __m256i neg = _mm256_castps_si256(_mm256_cmp_ps(y, _mm256_setzero_ps(), _CMP_LT_OQ));
    return _mm256_or_si256(c, _mm256_and_si256(neg, _mm256_set1_epi32(8)));
}

NF_AVX2_INLINE __m128i narrow8(__m256i q)
{
    __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    return _mm_packus_epi16(w, w);
}

NF_AVX2_INLINE uint32_t hmax_u32(__m256i v)
{
    __m128i a = _mm_max_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    a = _mm_max_epu32(a, _mm_shuffle_epi32(a, _MM_SHUFFLE(1, 0, 3, 2)));
    a = _mm_max_epu32(a, _mm_shuffle_epi32(a, _MM_SHUFFLE(2, 3, 0, 1)));
    return (uint32_t)_mm_cvtsi128_si32(a);
}

NF_AVX2_FN static void nvfp4_groups_avx2(const float *x, size_t ngroups, const nf_nvfp4_global *g, uint8_t *codes,
                                         uint8_t *scales)
{
    const __m256i mag = _mm256_set1_epi32(0x7FFFFFFF);
    for (size_t j = 0; j < ngroups; j++, x += NF_NVFP4_GROUP, codes += NF_NVFP4_GROUP) {
        __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
        __m256i m = _mm256_max_epu32(_mm256_and_si256(_mm256_castps_si256(v0), mag),
                                     _mm256_and_si256(_mm256_castps_si256(v1), mag));
        float sv;
        scales[j] = nf_nvfp4_scale_of(hmax_u32(m), g, &sv);
        const __m256 vs = _mm256_set1_ps(sv);
        _mm_storel_epi64((__m128i *)(void *)codes, narrow8(code_lanes(_mm256_div_ps(v0, vs))));
        _mm_storel_epi64((__m128i *)(void *)(codes + 8), narrow8(code_lanes(_mm256_div_ps(v1, vs))));
    }
}

const nf_nvfp4_kernels nf_nvfp4_kernels_avx2 = {.name = "avx2", .groups = nvfp4_groups_avx2};

#else
typedef int nf_nvfp4_avx2_unused; /* not an x86 GCC/Clang build: no AVX2 kernel */
#endif
