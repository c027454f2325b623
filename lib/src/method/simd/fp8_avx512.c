/* fp8_row_maxabs row kernel for AVX-512 F + BW + VL (fp8_simd.h): 16 lanes of binary32.
 *
 * The steps of fp8_avx2.c on 16 lanes (VCVTPH2PS for binary16 is AVX-512F's, exact for every
 * finite value); the lane select of nf_fp8_e4m3fn_of is a mask blend and the int32 codes narrow to
 * bytes with VPMOVDB (truncation; the codes are <= 0xFE).  A partial vector uses masked loads and
 * stores (BW/VL), which touch nothing beyond the row. */
#include "common/simd_target.h"
#include "method/simd/fp8_simd.h"

#if NF_X86_KERNELS

#include <immintrin.h>

#define LANES 16u

/* Round binary32 words to BF16 by the reference's formula. */
NF_AVX512_INLINE __m512i round_bf16(__m512i b)
{
    __m512i odd = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(_mm512_add_epi32(b, _mm512_set1_epi32(0x7FFF)), odd);
    return _mm512_and_si512(r, _mm512_set1_epi32((int)0xFFFF0000u));
}

/* The m <= LANES elements at p (m == LANES: a plain load; the other lanes +0), widened and
 * rounded to BF16. */
NF_AVX512_INLINE __m512i load_x(const uint8_t *p, nf_src_type type, __mmask16 m)
{
    if (type == NF_SRC_F32) return round_bf16(_mm512_castps_si512(_mm512_maskz_loadu_ps(m, p)));
    __m256i h = _mm256_maskz_loadu_epi16(m, p);
    if (type == NF_SRC_F16) return round_bf16(_mm512_castps_si512(_mm512_cvtph_ps(h)));
    return _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16);
}

NF_AVX512_INLINE __m128i code_bytes(__m512i xb, __m512 inv)
{
    __m512i vb = _mm512_castps_si512(_mm512_mul_ps(_mm512_castsi512_ps(xb), inv));
    __m512i sign = _mm512_and_si512(_mm512_srli_epi32(vb, 24), _mm512_set1_epi32(0x80));
    __m512i a = _mm512_and_si512(vb, _mm512_set1_epi32(0x7FFFFFFF));
    a = _mm512_min_epu32(a, _mm512_set1_epi32((int)NF_FP8_E4M3_MAX_BITS));
    __m512i odd = _mm512_and_si512(_mm512_srli_epi32(a, 20), _mm512_set1_epi32(1));
    __m512i normal = _mm512_srli_epi32(
        _mm512_add_epi32(_mm512_add_epi32(a, _mm512_set1_epi32((int)(0x7FFFFu - (120u << 23)))), odd), 20);
    __m512i sub = _mm512_sub_epi32(
        _mm512_castps_si512(_mm512_add_ps(_mm512_castsi512_ps(a), _mm512_set1_ps(NF_FP8_SUB_MAGIC))),
        _mm512_set1_epi32((int)NF_FP8_SUB_MAGIC_BITS));
    __mmask16 small = _mm512_cmplt_epu32_mask(a, _mm512_set1_epi32((int)NF_FP8_E4M3_NORMAL_BITS));
    __m512i code = _mm512_or_si512(_mm512_mask_blend_epi32(small, normal, sub), sign);
    return _mm512_cvtepi32_epi8(code);
}

NF_AVX512_INLINE uint32_t row_max(const uint8_t *row, nf_src_type type, size_t k)
{
    size_t i = 0;
    if (type == NF_SRC_F32) {
        const __m512i mag = _mm512_set1_epi32(0x7FFFFFFF);
        __m512i m0 = _mm512_setzero_si512(), m1 = m0;
        for (; i + 32 <= k; i += 32) {
            m0 = _mm512_max_epu32(m0, _mm512_and_si512(_mm512_loadu_si512(row + 4 * i), mag));
            m1 = _mm512_max_epu32(m1, _mm512_and_si512(_mm512_loadu_si512(row + 4 * i + 64), mag));
        }
        for (; i < k; i += 16) {
            __mmask16 m = (__mmask16)(k - i >= 16 ? 0xFFFFu : (1u << (k - i)) - 1u);
            m0 = _mm512_max_epu32(m0, _mm512_and_si512(_mm512_maskz_loadu_epi32(m, row + 4 * i), mag));
        }
        return _mm512_reduce_max_epu32(_mm512_max_epu32(m0, m1));
    }
    const __m512i mag = _mm512_set1_epi16(0x7FFF);
    __m512i m0 = _mm512_setzero_si512(), m1 = m0;
    for (; i + 64 <= k; i += 64) {
        m0 = _mm512_max_epu16(m0, _mm512_and_si512(_mm512_loadu_si512(row + 2 * i), mag));
        m1 = _mm512_max_epu16(m1, _mm512_and_si512(_mm512_loadu_si512(row + 2 * i + 64), mag));
    }
    for (; i < k; i += 32) {
        __mmask32 m = (__mmask32)(k - i >= 32 ? 0xFFFFFFFFu : (1u << (k - i)) - 1u);
        m0 = _mm512_max_epu16(m0, _mm512_and_si512(_mm512_maskz_loadu_epi16(m, row + 2 * i), mag));
    }
    __m512i v = _mm512_max_epu16(m0, m1);
    /* widen the two halves of each dword and reduce as 32-bit lanes */
    __m512i lo = _mm512_and_si512(v, _mm512_set1_epi32(0xFFFF));
    __m512i hi = _mm512_srli_epi32(v, 16);
    return _mm512_reduce_max_epu32(_mm512_max_epu32(lo, hi));
}

NF_AVX512_INLINE void encode(const uint8_t *row, nf_src_type type, size_t esize, size_t k, float inv, uint8_t *codes)
{
    const __m512 vinv = _mm512_set1_ps(inv);
    size_t i = 0;
    for (; i + 2 * LANES <= k; i += 2 * LANES) {
        const uint8_t *p = row + i * esize;
        __m128i c0 = code_bytes(load_x(p, type, 0xFFFF), vinv);
        __m128i c1 = code_bytes(load_x(p + LANES * esize, type, 0xFFFF), vinv);
        _mm256_storeu_si256((__m256i *)(void *)(codes + i), _mm256_set_m128i(c1, c0));
    }
    for (; i < k; i += LANES) {
        __mmask16 m = (__mmask16)(k - i >= LANES ? 0xFFFFu : (1u << (k - i)) - 1u);
        _mm_mask_storeu_epi8(codes + i, m, code_bytes(load_x(row + i * esize, type, m), vinv));
    }
}

#define FP8_INLINE NF_AVX512_INLINE
#define FP8_FN NF_AVX512_FN
#define FP8_ROW_FN fp8_row_avx512
#include "method/simd/fp8_row.inc"

const nf_fp8_kernels nf_fp8_kernels_avx512 = {.name = "avx512", .row = fp8_row_avx512};

#else
typedef int nf_fp8_avx512_unused; /* not an x86 GCC/Clang build: no AVX-512 kernel */
#endif
