/* The x86 kernels of the binary16 loads (f16_simd.h). */
#include "method/simd/f16_simd.h"

#if NF_X86_KERNELS
#include <immintrin.h>

#include <ninfer/format.h>

#include "method/method_impl.h"

#if defined(__SSE2__)
/* F16 words (host order, any alignment) -> binary32, the bits of nf_f16_to_f32 for every word.
 * A binary16 source is widened for every value the conversion report reads, so x86-64 takes 8
 * words at a time in SSE2 (its baseline), without a branch: exponent and fraction shifted into
 * place and rebiased (by 112 for a normal word, 224 for infinity and NaN, whose payload stays on
 * top), a subnormal word's value frac * 2^-24 as (1 + frac / 1024) 2^-14 - 2^-14, an exact
 * difference; the sign last. */
void nf_method_f16_words_sse2(const uint8_t *p, size_t n, float *out)
{
    size_t i = 0;
    const __m128i zero = _mm_setzero_si128(), mag = _mm_set1_epi32(0x7FFF), sign = _mm_set1_epi32(0x8000);
    const __m128i emask = _mm_set1_epi32(0x0F800000), normal = _mm_set1_epi32(0x38000000);
    const __m128i special = _mm_set1_epi32(0x70000000), small = _mm_set1_epi32(0x38800000);
    const __m128 two_m14 = _mm_set1_ps(0x1p-14f);
    for (; i + 8 <= n; i += 8) {
        __m128i w = _mm_loadu_si128((const __m128i *)(const void *)(p + 2 * i));
        for (int half = 0; half < 2; half++) {
            __m128i h = half ? _mm_unpackhi_epi16(w, zero) : _mm_unpacklo_epi16(w, zero);
            __m128i m = _mm_slli_epi32(_mm_and_si128(h, mag), 13);
            __m128i e = _mm_and_si128(m, emask);
            __m128i is_special = _mm_cmpeq_epi32(e, emask), is_small = _mm_cmpeq_epi32(e, zero);
            __m128i sub = _mm_castps_si128(_mm_sub_ps(_mm_castsi128_ps(_mm_add_epi32(m, small)), two_m14));
            __m128i bits = _mm_add_epi32(m, normal);
            bits = _mm_or_si128(_mm_andnot_si128(is_special, bits),
                                _mm_and_si128(is_special, _mm_add_epi32(m, special)));
            bits = _mm_or_si128(_mm_andnot_si128(is_small, bits), _mm_and_si128(is_small, sub));
            bits = _mm_or_si128(bits, _mm_slli_epi32(_mm_and_si128(h, sign), 16));
            _mm_storeu_si128((__m128i *)(void *)(out + i + 4 * (size_t)half), bits);
        }
    }
    for (; i < n; i++) out[i] = nf_f16_to_f32(nf_method_le16(p + 2 * i));
}
#endif

/* The same with F16C (the avx2 level, common/cpu.h): VCVTPH2PS, exact, except that it sets the
 * quiet bit of a signaling NaN, so 8 words holding a NaN are widened by nf_f16_to_f32 instead. */
NF_AVX2_FN void nf_method_f16_words_f16c(const uint8_t *p, size_t n, float *out)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p + 2 * i)));
        if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)))
            for (size_t k = i; k < i + 8; k++) out[k] = nf_f16_to_f32(nf_method_le16(p + 2 * k));
        else _mm256_storeu_ps(out + i, v);
    }
    for (; i < n; i++) out[i] = nf_f16_to_f32(nf_method_le16(p + 2 * i));
}
#endif
