/* ggml_quantize's searches for AVX2 (ggml_simd.h): one sub-block a lane, 8 lanes of binary32,
 * the lane kernels of ggml_lanes.inc on 256-bit vectors.  A super-block's 8 sub-blocks (Q4_K,
 * Q5_K) fill one vector, its 16 (Q2_K, Q3_K, Q6_K) two. */
#include "common/simd_target.h"
#include "method/ggml_encoders.h"
#include "method/simd/ggml_simd.h"

#if NF_X86_KERNELS

#include <immintrin.h>
#include <string.h>

#define GQ(name) name##_y
#define GQ_FN NF_AVX2_FN
#define GQ_INLINE NF_AVX2_INLINE
#include "method/simd/ggml_ops_y.inc"
#include "method/simd/ggml_lanes.inc"
#include "method/simd/ggml_ops_undef.inc"

#define LANES 8

NF_AVX2_FN static void fit_min_avx2(int nsub, int n, int nmax, const float *x, const float *w, uint8_t *L,
                                    float *scales, float *mins, float rmin, float rdelta, int nstep, bool use_mad)
{
    for (int j = 0; j < nsub; j += LANES)
        fit_min_lanes_y(gq_min(LANES, nsub - j), n, nmax, x + j * n, w + j * n, L + j * n, scales + j, mins + j, rmin,
                        rdelta, nstep, use_mad);
}

NF_AVX2_FN static void fit_signed_avx2(int nsub, int n, int nmax, const float *x, const float *qw, int8_t *L,
                                       float *scales)
{
    for (int j = 0; j < nsub; j += LANES)
        fit_signed_lanes_y(gq_min(LANES, nsub - j), n, nmax, x + j * n, qw ? qw + j * n : NULL, L + j * n, scales + j);
}

NF_AVX2_FN static void fit_q3_avx2(int nsub, int n, int nmax, const float *x, int8_t *L, float *scales)
{
    for (int j = 0; j < nsub; j += 2 * LANES)
        fit_q3_lanes_y(gq_min(2 * LANES, nsub - j), n, nmax, x + j * n, L + j * n, scales + j);
}

NF_AVX2_FN static void iq4_scales_avx2(int nsub, const float *x, const float *w, const int8_t *values, float *scales)
{
    for (int j = 0; j < nsub; j += LANES)
        iq4_scales_lanes_y(gq_min(LANES, nsub - j), x + 32 * j, w + 32 * j, values, scales + j);
}

/* ---------------------------------------------------------------- Q4_0, Q5_0, Q8_0 without importance */

/* A block's 32 source words as four vectors of binary32 (every conversion exact). */
NF_AVX2_INLINE void load32(nf_gq_words words, const uint8_t *p, __m256 *v)
{
    for (int k = 0; k < 4; k++) {
        if (words == NF_GQ_WORDS_F32) v[k] = _mm256_loadu_ps((const float *)(const void *)(p + 32 * k));
        else if (words == NF_GQ_WORDS_F16)
            v[k] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p + 16 * k)));
        else
            v[k] = _mm256_castsi256_ps(_mm256_slli_epi32(
                _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(p + 16 * k))), 16));
    }
}

/* The largest of 8 unsigned lanes. */
NF_AVX2_INLINE uint32_t max_epu32(__m256i v)
{
    __m128i h = _mm_max_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    h = _mm_max_epu32(h, _mm_shuffle_epi32(h, 0x4E));
    h = _mm_max_epu32(h, _mm_shuffle_epi32(h, 0xB1));
    return (uint32_t)_mm_cvtsi128_si32(h);
}

/* 16 int32 codes (a: values 0..7, b: 8..15) to their low bytes, in order. */
NF_AVX2_INLINE __m128i low_bytes16(__m256i a, __m256i b)
{
    const __m256i low = _mm256_set1_epi32(0xFF);
    a = _mm256_and_si256(a, low);
    b = _mm256_and_si256(b, low);
    /* no saturation: every value is <= 255 */
    __m128i pa = _mm_packus_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    __m128i pb = _mm_packus_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
    return _mm_packus_epi16(pa, pb);
}

/* The binary16 word of a scale, as nf_f32_to_f16 rounds it (VCVTPS2PH, nearest even). */
NF_AVX2_INLINE uint16_t f16_word(float d) { return (uint16_t)_cvtss_sh(d, 0); }

/* A block's largest magnitude (Q8_0) or extreme (Q4_0, Q5_0) to *m, false when the block holds a
 * value to refuse: as ggml_avx512.c's block_max (the magnitudes compared as integers), on four
 * vectors. */
NF_AVX2_INLINE bool block_max(nf_gq_plain type, const __m256 *v, float *m)
{
    const __m256i mag = _mm256_set1_epi32(INT32_MAX);
    __m256i a[4];
    for (int k = 0; k < 4; k++) a[k] = _mm256_and_si256(_mm256_castps_si256(v[k]), mag);
    uint32_t abits = max_epu32(_mm256_max_epu32(_mm256_max_epu32(a[0], a[1]), _mm256_max_epu32(a[2], a[3])));
    if (abits >= 0x5F800000u) return false; /* NaN, infinite, or 2^64 and above */
    if (type == NF_GQ_PLAIN_Q8_0 || abits == 0) {
        memcpy(m, &abits, sizeof *m); /* +0 for an all-zero block, as gq_extreme */
        return true;
    }
    __m256i e = _mm256_set1_epi32((int)abits);
    uint32_t eq = 0;
    for (int k = 0; k < 4; k++)
        eq |= (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(a[k], e))) << (8 * k);
    int at = __builtin_ctz(eq);
    *m = _mm256_cvtss_f32(_mm256_permutevar8x32_ps(v[at >> 3], _mm256_set1_epi32(at & 7)));
    return true;
}

/* A block's codes from its inverse scale id, packed to b + 2 (ggml_simd.h plain_blocks). */
NF_AVX2_INLINE void block_codes(nf_gq_plain type, const __m256 *v, __m256 id, uint8_t *b)
{
    __m256i c[4];
    if (type == NF_GQ_PLAIN_Q8_0) {
        const __m256 sign = _mm256_set1_ps(-0.0f);
        for (int k = 0; k < 4; k++) {
            /* roundf: truncate, then away from zero when the dropped part is at least 1/2 */
            __m256 x = _mm256_mul_ps(v[k], id);
            __m256 t = _mm256_round_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
            __m256 up = _mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_sub_ps(x, t)), _mm256_set1_ps(0.5f), _CMP_GE_OQ);
            __m256 one = _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_and_ps(sign, x));
            c[k] = _mm256_cvttps_epi32(_mm256_add_ps(t, _mm256_and_ps(up, one)));
        }
        _mm_storeu_si128((__m128i *)(void *)(b + 2), low_bytes16(c[0], c[1]));
        _mm_storeu_si128((__m128i *)(void *)(b + 18), low_bytes16(c[2], c[3]));
        return;
    }
    /* as ggml_avx512.c's block_codes */
    const int nmax = type == NF_GQ_PLAIN_Q4_0 ? 8 : 16;
    const __m256 half = _mm256_set1_ps((float)nmax + 0.5f);
    const __m256i top = _mm256_set1_epi32(2 * nmax - 1);
    for (int k = 0; k < 4; k++) {
        c[k] = _mm256_cvttps_epi32(_mm256_add_ps(_mm256_mul_ps(v[k], id), half));
        c[k] = _mm256_min_epi32(c[k], top);
    }
    if (type == NF_GQ_PLAIN_Q4_0) {
        __m256i q0 = _mm256_or_si256(c[0], _mm256_slli_epi32(c[2], 4));
        __m256i q1 = _mm256_or_si256(c[1], _mm256_slli_epi32(c[3], 4));
        _mm_storeu_si128((__m128i *)(void *)(b + 2), low_bytes16(q0, q1));
        return;
    }
    const __m256i low4 = _mm256_set1_epi32(0xF);
    uint32_t qh = 0;
    for (int k = 0; k < 4; k++) /* bit 4 of each code to the sign, one bit a value */
        qh |= (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_slli_epi32(c[k], 27))) << (8 * k);
    __m256i q0 = _mm256_or_si256(_mm256_and_si256(c[0], low4), _mm256_slli_epi32(_mm256_and_si256(c[2], low4), 4));
    __m256i q1 = _mm256_or_si256(_mm256_and_si256(c[1], low4), _mm256_slli_epi32(_mm256_and_si256(c[3], low4), 4));
    for (int i = 0; i < 4; i++) b[2 + i] = (uint8_t)(qh >> (8 * i));
    _mm_storeu_si128((__m128i *)(void *)(b + 6), low_bytes16(q0, q1));
}

/* The divisor of a block's scale: d = m / 127 (Q8_0), m / -nmax (Q4_0, Q5_0). */
NF_AVX2_INLINE float scale_div(nf_gq_plain type)
{
    return type == NF_GQ_PLAIN_Q8_0 ? 127.0f : type == NF_GQ_PLAIN_Q4_0 ? -8.0f : -16.0f;
}

/* One block, false when it is refused. */
NF_AVX2_INLINE bool plain_block(nf_gq_plain type, nf_gq_words words, const uint8_t *p, uint8_t *b)
{
    __m256 v[4];
    float m;
    load32(words, p, v);
    if (!block_max(type, v, &m)) return false;
    float d = m / scale_div(type);
    uint16_t h = f16_word(d);
    if ((h & 0x7C00u) == 0x7C00u) return false; /* the scale overflows binary16 */
    b[0] = (uint8_t)(h & 0xFFu);
    b[1] = (uint8_t)(h >> 8);
    block_codes(type, v, _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f), b);
    return true;
}

/* 8 blocks, false when one of them is refused: as ggml_avx512.c's plain_group, the 8 scales in
 * one vector. */
NF_AVX2_INLINE bool plain_group(nf_gq_plain type, nf_gq_words words, size_t wb, size_t bb, const uint8_t *p,
                                uint8_t *out)
{
    float m[8], inv[8];
    uint16_t hw[8];
    __m256 v[4];
    for (int g = 0; g < 8; g++) {
        load32(words, p + wb * (size_t)g, v);
        if (!block_max(type, v, &m[g])) return false;
    }
    __m256 d = _mm256_div_ps(_mm256_loadu_ps(m), _mm256_set1_ps(scale_div(type)));
    __m128i h = _mm256_cvtps_ph(d, 0);
    const __m128i e = _mm_set1_epi16(0x7C00);
    if (_mm_movemask_epi8(_mm_cmpeq_epi16(_mm_and_si128(h, e), e))) return false;
    _mm_storeu_si128((__m128i *)(void *)hw, h);
    __m256 nz = _mm256_cmp_ps(d, _mm256_setzero_ps(), _CMP_NEQ_UQ);
    _mm256_storeu_ps(inv, _mm256_and_ps(nz, _mm256_div_ps(_mm256_set1_ps(1.0f), d)));
    for (int g = 0; g < 8; g++) {
        uint8_t *b = out + bb * (size_t)g;
        b[0] = (uint8_t)(hw[g] & 0xFFu);
        b[1] = (uint8_t)(hw[g] >> 8);
        load32(words, p + wb * (size_t)g, v);
        block_codes(type, v, _mm256_set1_ps(inv[g]), b);
    }
    return true;
}

#define PLAIN_W 8
#define PLAIN_FN NF_AVX2_FN
#define PLAIN_INLINE NF_AVX2_INLINE
#define PLAIN_BLOCKS plain_blocks_avx2
#include "method/simd/ggml_plain_runs.inc"

NF_AVX2_FN static void requant_avx2(int n, const float *x, float d, bool with_min, float dm, int lo, int hi, int offset,
                                    uint8_t *L)
{
    requant_y(n, x, d, with_min, dm, lo, hi, offset, L);
}

/* VSQRTPS is correctly rounded, as sqrtf */
NF_AVX2_FN static void sqrt_weights_avx2(size_t n, const float *x, const float *qw, float s2, float *w)
{
    const __m256 s = _mm256_set1_ps(s2);
    for (size_t j = 0; j < n; j += 8) {
        __m256 v = _mm256_loadu_ps(x + j);
        _mm256_storeu_ps(w + j,
                         _mm256_mul_ps(_mm256_loadu_ps(qw + j), _mm256_sqrt_ps(_mm256_add_ps(s, _mm256_mul_ps(v, v)))));
    }
}

const nf_gq_kernels nf_gq_kernels_avx2 = {.name = "avx2",
                                          .fit_min = fit_min_avx2,
                                          .fit_signed = fit_signed_avx2,
                                          .fit_q3 = fit_q3_avx2,
                                          .iq4_scales = iq4_scales_avx2,
                                          .requant = requant_avx2,
                                          .iq3_trials = nf_gq3_trials_avx2,
                                          .iq1s_split = nf_gq1s_split_avx2,
                                          .iq1m_split = nf_gq1m_split_avx2,
                                          .iq1_nearest = nf_gq1_nearest_avx2,
                                          .plain_blocks = plain_blocks_avx2,
                                          .sqrt_weights = sqrt_weights_avx2,
                                          .codes_q2_0 = nf_gq_codes_q2_0_avx2,
                                          .iq1_order = nf_gq1_order_avx2};

#endif
