/* Packed dialect kernels for AVX2 (unpack_simd.h): 8 lanes of binary32.  A GPTQ word's
 * codes are one variable shift (VPSRLVD) of the word broadcast, so a 4-bit word is one vector
 * and a 2-bit word two; an 8-bit pair of words one.  MXFP4's codes are table lookups (VPERMPS).  The codes less z are exact int32 numbers,
 * converted exactly (VCVTDQ2PS) and multiplied once by s (VMULPS, no FMA): the scalar bits.
 * Tails go to the scalar kernels. */
#include "common/simd_target.h"
#include "dialect/simd/unpack_simd.h"

#if NF_X86_KERNELS

#include <immintrin.h>

NF_AVX2_INLINE __m256 values8(__m256i codes, __m256i zv, __m256 sv)
{
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(codes, zv)), sv);
}

NF_AVX2_FN static void packed_run_avx2(const uint32_t *words, size_t stride, size_t nwords, unsigned bits, int32_t z,
                                       float s, float *out)
{
    const __m256i zv = _mm256_set1_epi32(z);
    const __m256 sv = _mm256_set1_ps(s);
    size_t w = 0;
    if (bits == 4) {
        const __m256i sh = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28), m = _mm256_set1_epi32(15);
        for (; w < nwords; w++) {
            __m256i c = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)words[w * stride]), sh), m);
            _mm256_storeu_ps(out + 8 * w, values8(c, zv, sv));
        }
    } else if (bits == 2) {
        const __m256i lo = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14),
                      hi = _mm256_add_epi32(lo, _mm256_set1_epi32(16));
        const __m256i m = _mm256_set1_epi32(3);
        for (; w < nwords; w++) {
            const __m256i b = _mm256_set1_epi32((int)words[w * stride]);
            _mm256_storeu_ps(out + 16 * w, values8(_mm256_and_si256(_mm256_srlv_epi32(b, lo), m), zv, sv));
            _mm256_storeu_ps(out + 16 * w + 8, values8(_mm256_and_si256(_mm256_srlv_epi32(b, hi), m), zv, sv));
        }
    } else if (bits == 8) {
        const __m256i sh = _mm256_setr_epi32(0, 8, 16, 24, 0, 8, 16, 24), m = _mm256_set1_epi32(255);
        for (; w + 2 <= nwords; w += 2) {
            const __m256i b = _mm256_setr_epi32((int)words[w * stride], (int)words[w * stride], (int)words[w * stride],
                                                (int)words[w * stride], (int)words[(w + 1) * stride],
                                                (int)words[(w + 1) * stride], (int)words[(w + 1) * stride],
                                                (int)words[(w + 1) * stride]);
            _mm256_storeu_ps(out + 4 * w, values8(_mm256_and_si256(_mm256_srlv_epi32(b, sh), m), zv, sv));
        }
    }
    nf_dialect_unpack_packed_run_scalar(words + w * stride, stride, nwords - w, bits, z, s, out + w * (32 / bits));
}

NF_AVX2_FN static void nibble_run_avx2(const uint32_t *words, size_t n, unsigned shift, int32_t z, float s, float *out)
{
    const __m256i zv = _mm256_set1_epi32(z), m = _mm256_set1_epi32(15);
    const __m256 sv = _mm256_set1_ps(s);
    const __m128i sh = _mm_cvtsi32_si128((int)shift);
    size_t t = 0;
    for (; t + 8 <= n; t += 8) {
        __m256i c = _mm256_and_si256(_mm256_srl_epi32(_mm256_loadu_si256((const __m256i *)(words + t)), sh), m);
        _mm256_storeu_ps(out + t, values8(c, zv, sv));
    }
    nf_dialect_unpack_nibble_run_scalar(words + t, n - t, shift, z, s, out + t);
}

/* Eight code bytes: each nibble's value from the 16-entry table in two halves (VPERMPS of each,
 * chosen by the index's bit 3), times s, the low and high nibbles interleaved back. */
NF_AVX2_FN static void e2m1_run_avx2(const uint8_t *bytes, size_t nbytes, const float *table, float s, float *out)
{
    const __m256 t0 = _mm256_loadu_ps(table), t1 = _mm256_loadu_ps(table + 8), sv = _mm256_set1_ps(s);
    const __m256i m = _mm256_set1_epi32(15);
    size_t i = 0;
    for (; i + 8 <= nbytes; i += 8) {
        const __m256i b = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(bytes + i)));
        const __m256i lo = _mm256_and_si256(b, m), hi = _mm256_srli_epi32(b, 4);
        const __m256 vl = _mm256_mul_ps(_mm256_blendv_ps(_mm256_permutevar8x32_ps(t0, lo),
                                                         _mm256_permutevar8x32_ps(t1, lo),
                                                         _mm256_castsi256_ps(_mm256_slli_epi32(lo, 28))),
                                        sv);
        const __m256 vh = _mm256_mul_ps(_mm256_blendv_ps(_mm256_permutevar8x32_ps(t0, hi),
                                                         _mm256_permutevar8x32_ps(t1, hi),
                                                         _mm256_castsi256_ps(_mm256_slli_epi32(hi, 28))),
                                        sv);
        const __m256 a = _mm256_unpacklo_ps(vl, vh), c = _mm256_unpackhi_ps(vl, vh);
        _mm256_storeu_ps(out + 2 * i, _mm256_permute2f128_ps(a, c, 0x20));
        _mm256_storeu_ps(out + 2 * i + 8, _mm256_permute2f128_ps(a, c, 0x31));
    }
    nf_dialect_unpack_e2m1_run_scalar(bytes + i, nbytes - i, table, s, out + 2 * i);
}

const nf_dialect_unpack_kernels nf_dialect_unpack_kernels_avx2 = {
    .name = "avx2", .packed_run = packed_run_avx2, .nibble_run = nibble_run_avx2, .e2m1_run = e2m1_run_avx2};

#else
typedef int nf_dialect_unpack_avx2_unused; /* not an x86 GCC/Clang build: no AVX2 kernel */
#endif
