/* fp8_row_maxabs row kernel for AVX2 + F16C (fp8_simd.h): 8 lanes of binary32.
 *
 * Pass 1 is an unsigned max over the sign-cleared words (16 BF16/binary16 or 8 binary32 words a
 * vector); pass 2 encodes 32 elements an iteration: BF16 widened by a shift, binary16 by F16C's
 * VCVTPH2PS (exact for every finite value, subnormals included) then rounded to BF16 by the
 * reference's integer formula, binary32 rounded by the same formula; one VMULPS (no FMA) by the
 * row's reciprocal; then nf_fp8_e4m3fn_of lane-wise (VPMINUD clamp, the integer rebias and
 * round for normal values, VADDPS of 2^14 for subnormal ones — default rounding mode, as the
 * reference's arithmetic needs, see ninfer/method.h) and the sign bit ORed back.  The int32 codes
 * (<= 0xFE) narrow to bytes with unsigned saturating packs, which never saturate.  A partial
 * vector (the tail of a row) is read and written through zeroed stack copies, so nothing beyond
 * the row is touched. */
#include "common/simd_target.h"
#include "method/simd/fp8_simd.h"

#if NF_X86_KERNELS

#include <immintrin.h>

#define LANES 8u

/* LANES elements at p, widened exactly to binary32 and rounded to BF16 (as binary32 words). */
NF_AVX2_INLINE __m256i load_x(const uint8_t *p, nf_src_type type)
{
    __m256i b;
    if (type == NF_SRC_BF16)
        return _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)p)), 16);
    if (type == NF_SRC_F16) b = _mm256_castps_si256(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p)));
    else b = _mm256_loadu_si256((const __m256i *)(const void *)p);
    __m256i odd = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_add_epi32(_mm256_add_epi32(b, _mm256_set1_epi32(0x7FFF)), odd);
    return _mm256_and_si256(r, _mm256_set1_epi32((int)0xFFFF0000u));
}

/* nf_fp8_e4m3fn_of(x * inv) lane-wise, as int32 lanes. */
NF_AVX2_INLINE __m256i code_lanes(__m256i xb, __m256 inv)
{
    __m256i vb = _mm256_castps_si256(_mm256_mul_ps(_mm256_castsi256_ps(xb), inv));
    __m256i sign = _mm256_and_si256(_mm256_srli_epi32(vb, 24), _mm256_set1_epi32(0x80));
    __m256i a = _mm256_and_si256(vb, _mm256_set1_epi32(0x7FFFFFFF));
    a = _mm256_min_epu32(a, _mm256_set1_epi32((int)NF_FP8_E4M3_MAX_BITS));
    __m256i odd = _mm256_and_si256(_mm256_srli_epi32(a, 20), _mm256_set1_epi32(1));
    __m256i normal = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_add_epi32(a, _mm256_set1_epi32((int)(0x7FFFFu - (120u << 23)))), odd), 20);
    __m256i sub = _mm256_sub_epi32(
        _mm256_castps_si256(_mm256_add_ps(_mm256_castsi256_ps(a), _mm256_set1_ps(NF_FP8_SUB_MAGIC))),
        _mm256_set1_epi32((int)NF_FP8_SUB_MAGIC_BITS));
    __m256i small = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)NF_FP8_E4M3_NORMAL_BITS), a);
    return _mm256_or_si256(_mm256_blendv_epi8(normal, sub, small), sign);
}

NF_AVX2_INLINE __m128i narrow8(__m256i q)
{
    __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    return _mm_packus_epi16(w, w);
}

NF_AVX2_INLINE uint32_t hmax_u16(__m256i v)
{
    __m128i a = _mm_max_epu16(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    a = _mm_max_epu16(a, _mm_shuffle_epi32(a, _MM_SHUFFLE(1, 0, 3, 2)));
    a = _mm_max_epu16(a, _mm_shuffle_epi32(a, _MM_SHUFFLE(2, 3, 0, 1)));
    a = _mm_max_epu16(a, _mm_srli_epi32(a, 16));
    return (uint32_t)_mm_cvtsi128_si32(a) & 0xFFFFu;
}

NF_AVX2_INLINE uint32_t hmax_u32(__m256i v)
{
    __m128i a = _mm_max_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    a = _mm_max_epu32(a, _mm_shuffle_epi32(a, _MM_SHUFFLE(1, 0, 3, 2)));
    a = _mm_max_epu32(a, _mm_shuffle_epi32(a, _MM_SHUFFLE(2, 3, 0, 1)));
    return (uint32_t)_mm_cvtsi128_si32(a);
}

NF_AVX2_INLINE uint32_t row_max(const uint8_t *row, nf_src_type type, size_t k)
{
    size_t i = 0;
    if (type == NF_SRC_F32) {
        const __m256i mag = _mm256_set1_epi32(0x7FFFFFFF);
        __m256i m0 = _mm256_setzero_si256(), m1 = m0;
        for (; i + 16 <= k; i += 16) {
            const __m256i *p = (const __m256i *)(const void *)(row + 4 * i);
            m0 = _mm256_max_epu32(m0, _mm256_and_si256(_mm256_loadu_si256(p), mag));
            m1 = _mm256_max_epu32(m1, _mm256_and_si256(_mm256_loadu_si256(p + 1), mag));
        }
        uint32_t m = hmax_u32(_mm256_max_epu32(m0, m1));
        for (; i < k; i++) {
            uint32_t w;
            memcpy(&w, row + 4 * i, sizeof w);
            w &= 0x7FFFFFFFu;
            m = w > m ? w : m;
        }
        return m;
    }
    const __m256i mag = _mm256_set1_epi16(0x7FFF);
    __m256i m0 = _mm256_setzero_si256(), m1 = m0;
    for (; i + 32 <= k; i += 32) {
        const __m256i *p = (const __m256i *)(const void *)(row + 2 * i);
        m0 = _mm256_max_epu16(m0, _mm256_and_si256(_mm256_loadu_si256(p), mag));
        m1 = _mm256_max_epu16(m1, _mm256_and_si256(_mm256_loadu_si256(p + 1), mag));
    }
    uint32_t m = hmax_u16(_mm256_max_epu16(m0, m1));
    for (; i < k; i++) {
        uint16_t w;
        memcpy(&w, row + 2 * i, sizeof w);
        w &= 0x7FFFu;
        m = w > m ? w : m;
    }
    return m;
}

NF_AVX2_INLINE void encode(const uint8_t *row, nf_src_type type, size_t esize, size_t k, float inv, uint8_t *codes)
{
    const __m256 vinv = _mm256_set1_ps(inv);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    size_t i = 0;
    for (; i + 4 * LANES <= k; i += 4 * LANES) {
        const uint8_t *p = row + i * esize;
        __m256i q0 = code_lanes(load_x(p, type), vinv);
        __m256i q1 = code_lanes(load_x(p + LANES * esize, type), vinv);
        __m256i q2 = code_lanes(load_x(p + 2 * LANES * esize, type), vinv);
        __m256i q3 = code_lanes(load_x(p + 3 * LANES * esize, type), vinv);
        /* packs work within 128-bit halves: dwords come out as q0lo q1lo q2lo q3lo | q0hi ... */
        __m256i b = _mm256_packus_epi16(_mm256_packus_epi32(q0, q1), _mm256_packus_epi32(q2, q3));
        _mm256_storeu_si256((__m256i *)(void *)(codes + i), _mm256_permutevar8x32_epi32(b, order));
    }
    for (; i + LANES <= k; i += LANES)
        _mm_storel_epi64((__m128i *)(void *)(codes + i), narrow8(code_lanes(load_x(row + i * esize, type), vinv)));
    if (i < k) {
        uint8_t in[LANES * 4] = {0}, out[16];
        memcpy(in, row + i * esize, (k - i) * esize);
        _mm_storeu_si128((__m128i *)(void *)out, narrow8(code_lanes(load_x(in, type), vinv)));
        memcpy(codes + i, out, k - i);
    }
}

#define FP8_INLINE NF_AVX2_INLINE
#define FP8_FN NF_AVX2_FN
#define FP8_ROW_FN fp8_row_avx2
#include "method/simd/fp8_row.inc"

const nf_fp8_kernels nf_fp8_kernels_avx2 = {.name = "avx2", .row = fp8_row_avx2};

#else
typedef int nf_fp8_avx2_unused; /* not an x86 GCC/Clang build: no AVX2 kernel */
#endif
