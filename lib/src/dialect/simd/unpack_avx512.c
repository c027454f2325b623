/* Packed dialect kernels for AVX-512 F (unpack_simd.h): 16 lanes of binary32, the AVX2
 * kernels' steps (VPSRLVD, VCVTDQ2PS, one VMULPS, no FMA): two 4-bit words or one 2-bit word a
 * vector, AWQ's nibbles 16 words at a time.  Tails go to the scalar kernels. */
#include "common/simd_target.h"
#include "dialect/simd/unpack_simd.h"

#if NF_X86_KERNELS

#include <immintrin.h>

NF_AVX512_INLINE __m512 values16(__m512i codes, __m512i zv, __m512 sv)
{
    return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(codes, zv)), sv);
}

NF_AVX512_FN static void packed_run_avx512(const uint32_t *words, size_t stride, size_t nwords, unsigned bits,
                                           int32_t z, float s, float *out)
{
    const __m512i zv = _mm512_set1_epi32(z);
    const __m512 sv = _mm512_set1_ps(s);
    size_t w = 0;
    if (bits == 4) {
        const __m512i sh = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 4, 8, 12, 16, 20, 24, 28);
        const __m512i m = _mm512_set1_epi32(15);
        for (; w + 2 <= nwords; w += 2) {
            const __m512i b = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi32((int)words[w * stride])),
                                                 _mm256_set1_epi32((int)words[(w + 1) * stride]), 1);
            _mm512_storeu_ps(out + 8 * w, values16(_mm512_and_si512(_mm512_srlv_epi32(b, sh), m), zv, sv));
        }
    } else if (bits == 2) {
        const __m512i sh = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        const __m512i m = _mm512_set1_epi32(3);
        for (; w < nwords; w++) {
            const __m512i b = _mm512_set1_epi32((int)words[w * stride]);
            _mm512_storeu_ps(out + 16 * w, values16(_mm512_and_si512(_mm512_srlv_epi32(b, sh), m), zv, sv));
        }
    } else if (bits == 8) {
        const __m512i sh = _mm512_setr_epi32(0, 8, 16, 24, 0, 8, 16, 24, 0, 8, 16, 24, 0, 8, 16, 24);
        const __m512i idx = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
        const __m512i m = _mm512_set1_epi32(255);
        for (; w + 4 <= nwords; w += 4) {
            const __m128i four = _mm_setr_epi32((int)words[w * stride], (int)words[(w + 1) * stride],
                                                (int)words[(w + 2) * stride], (int)words[(w + 3) * stride]);
            const __m512i b = _mm512_permutexvar_epi32(idx, _mm512_castsi128_si512(four));
            _mm512_storeu_ps(out + 4 * w, values16(_mm512_and_si512(_mm512_srlv_epi32(b, sh), m), zv, sv));
        }
    }
    nf_dialect_unpack_packed_run_scalar(words + w * stride, stride, nwords - w, bits, z, s, out + w * (32 / bits));
}

NF_AVX512_FN static void nibble_run_avx512(const uint32_t *words, size_t n, unsigned shift, int32_t z, float s,
                                           float *out)
{
    const __m512i zv = _mm512_set1_epi32(z), m = _mm512_set1_epi32(15);
    const __m512 sv = _mm512_set1_ps(s);
    const __m128i sh = _mm_cvtsi32_si128((int)shift);
    size_t t = 0;
    for (; t + 16 <= n; t += 16) {
        __m512i c = _mm512_and_si512(_mm512_srl_epi32(_mm512_loadu_si512((const void *)(words + t)), sh), m);
        _mm512_storeu_ps(out + t, values16(c, zv, sv));
    }
    nf_dialect_unpack_nibble_run_scalar(words + t, n - t, shift, z, s, out + t);
}

/* Sixteen code bytes: each nibble's value from the 16-entry table (VPERMPS), times s, the low
 * and high nibbles interleaved back (VPERMT2PS). */
NF_AVX512_FN static void e2m1_run_avx512(const uint8_t *bytes, size_t nbytes, const float *table, float s, float *out)
{
    const __m512 t = _mm512_loadu_ps(table), sv = _mm512_set1_ps(s);
    const __m512i m = _mm512_set1_epi32(15);
    const __m512i first = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i second = _mm512_add_epi32(first, _mm512_set1_epi32(8));
    size_t i = 0;
    for (; i + 16 <= nbytes; i += 16) {
        const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(bytes + i)));
        const __m512 vl = _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_and_si512(b, m), t), sv);
        const __m512 vh = _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(b, 4), t), sv);
        _mm512_storeu_ps(out + 2 * i, _mm512_permutex2var_ps(vl, first, vh));
        _mm512_storeu_ps(out + 2 * i + 16, _mm512_permutex2var_ps(vl, second, vh));
    }
    nf_dialect_unpack_e2m1_run_scalar(bytes + i, nbytes - i, table, s, out + 2 * i);
}

const nf_dialect_unpack_kernels nf_dialect_unpack_kernels_avx512 = {
    .name = "avx512", .packed_run = packed_run_avx512, .nibble_run = nibble_run_avx512, .e2m1_run = e2m1_run_avx512};

#else
typedef int nf_dialect_unpack_avx512_unused; /* not an x86 GCC/Clang build: no AVX-512 kernel */
#endif
