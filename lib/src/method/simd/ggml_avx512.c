/* ggml_quantize's searches for AVX-512 F/BW/VL (ggml_simd.h): one sub-block a lane, the lane
 * kernels of ggml_lanes.inc on 512-bit vectors (16 lanes, masks in mask registers) for a
 * super-block's 16 sub-blocks (Q2_K, Q3_K, Q6_K), and on 256-bit vectors for 8 (Q4_K, Q5_K),
 * which would leave half of a 512-bit vector idle. */
#include "common/simd_target.h"
#include "method/ggml_encoders.h"
#include "method/simd/ggml_simd.h"

#if NF_X86_KERNELS

#include <immintrin.h>
#include <string.h>

/* 16 lanes */
#define GQ(name) name##_z
#define GQ_FN NF_AVX512_FN
#define GQ_INLINE NF_AVX512_INLINE
#include "method/simd/ggml_ops_z.inc"
#include "method/simd/ggml_lanes.inc"
#include "method/simd/ggml_ops_undef.inc"

/* 8 lanes */
#define GQ(name) name##_y
#define GQ_FN NF_AVX512_FN
#define GQ_INLINE NF_AVX512_INLINE
#include "method/simd/ggml_ops_y.inc"
#include "method/simd/ggml_lanes.inc"
#include "method/simd/ggml_ops_undef.inc"

NF_AVX512_FN static void fit_min_avx512(int nsub, int n, int nmax, const float *x, const float *w, uint8_t *L,
                                        float *scales, float *mins, float rmin, float rdelta, int nstep, bool use_mad)
{
    for (int j = 0; j < nsub;) {
        int k = gq_min(16, nsub - j);
        if (k > 8)
            fit_min_lanes_z(k, n, nmax, x + j * n, w + j * n, L + j * n, scales + j, mins + j, rmin, rdelta, nstep,
                            use_mad);
        else
            fit_min_lanes_y(k, n, nmax, x + j * n, w + j * n, L + j * n, scales + j, mins + j, rmin, rdelta, nstep,
                            use_mad);
        j += k;
    }
}

NF_AVX512_FN static void fit_signed_avx512(int nsub, int n, int nmax, const float *x, const float *qw, int8_t *L,
                                           float *scales)
{
    for (int j = 0; j < nsub;) {
        int k = gq_min(16, nsub - j);
        const float *w = qw ? qw + j * n : NULL;
        if (k > 8) fit_signed_lanes_z(k, n, nmax, x + j * n, w, L + j * n, scales + j);
        else fit_signed_lanes_y(k, n, nmax, x + j * n, w, L + j * n, scales + j);
        j += k;
    }
}

NF_AVX512_FN static void fit_q3_avx512(int nsub, int n, int nmax, const float *x, int8_t *L, float *scales)
{
    /* two chains: 32 sub-blocks in two 512-bit vectors, 16 or fewer in two 256-bit ones */
    for (int j = 0; j < nsub;) {
        int k = gq_min(32, nsub - j);
        if (k > 16) fit_q3_lanes_z(k, n, nmax, x + j * n, L + j * n, scales + j);
        else fit_q3_lanes_y(k, n, nmax, x + j * n, L + j * n, scales + j);
        j += k;
    }
}

/* 8 sub-blocks (IQ4_XS) in one 256-bit vector */
NF_AVX512_FN static void iq4_scales_avx512(int nsub, const float *x, const float *w, const int8_t *values,
                                           float *scales)
{
    for (int j = 0; j < nsub;) {
        int k = gq_min(16, nsub - j);
        if (k > 8) iq4_scales_lanes_z(k, x + 32 * j, w + 32 * j, values, scales + j);
        else iq4_scales_lanes_y(k, x + 32 * j, w + 32 * j, values, scales + j);
        j += k;
    }
}

/* ---------------------------------------------------------------- Q4_0, Q5_0, Q8_0 without importance */

/* A block's 32 source words as two vectors of binary32 (every conversion exact). */
NF_AVX512_INLINE void load32(nf_gq_words words, const uint8_t *p, __m512 *lo, __m512 *hi)
{
    if (words == NF_GQ_WORDS_F32) {
        *lo = _mm512_loadu_ps(p);
        *hi = _mm512_loadu_ps(p + 64);
    } else if (words == NF_GQ_WORDS_F16) {
        *lo = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)p));
        *hi = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(p + 32)));
    } else {
        *lo = _mm512_castsi512_ps(
            _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)p)), 16));
        *hi = _mm512_castsi512_ps(
            _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(p + 32))), 16));
    }
}

/* VRNDSCALEPS toward zero, exceptions suppressed (the -O0 macro form of the intrinsic trips
 * -Wsign-conversion). */
NF_AVX512_INLINE __m512 trunc_ps(__m512 v)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-conversion"
    return _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
#pragma GCC diagnostic pop
}

/* The binary16 words of 16 scales, as nf_f32_to_f16 rounds them (VCVTPS2PH, nearest even; the -O0
 * macro form of the intrinsic trips -Wsign-conversion). */
NF_AVX512_INLINE __m256i f16_words16(__m512 d)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-conversion"
    return _mm512_cvtps_ph(d, 0);
#pragma GCC diagnostic pop
}

/* The binary16 word of a scale, as nf_f32_to_f16 rounds it (VCVTPS2PH, nearest even). */
NF_AVX512_INLINE uint16_t f16_word(float d) { return (uint16_t)_cvtss_sh(d, 0); }

/* A block's largest magnitude (Q8_0) or extreme (Q4_0, Q5_0: gq_extreme, the first value of largest
 * magnitude) to *m, false when the block holds a value to refuse.  The magnitudes are compared as
 * integers (ordered as the values are, NaN above infinity), so one unsigned maximum gives both the
 * largest magnitude and gq_values_ok's test; the extreme's sign comes from the vector. */
NF_AVX512_INLINE bool block_max(nf_gq_plain type, __m512 lo, __m512 hi, float *m)
{
    const __m512i mag = _mm512_set1_epi32(INT32_MAX);
    __m512i alo = _mm512_and_si512(_mm512_castps_si512(lo), mag), ahi = _mm512_and_si512(_mm512_castps_si512(hi), mag);
    uint32_t abits = _mm512_reduce_max_epu32(_mm512_max_epu32(alo, ahi));
    if (abits >= 0x5F800000u) return false; /* NaN, infinite, or 2^64 and above */
    if (type == NF_GQ_PLAIN_Q8_0 || abits == 0) {
        memcpy(m, &abits, sizeof *m); /* +0 for an all-zero block, as gq_extreme */
        return true;
    }
    __m512i v = _mm512_set1_epi32((int)abits);
    uint32_t eq = (uint32_t)_mm512_cmpeq_epi32_mask(alo, v) | (uint32_t)_mm512_cmpeq_epi32_mask(ahi, v) << 16;
    *m = _mm512_cvtss_f32(_mm512_permutex2var_ps(lo, _mm512_set1_epi32(__builtin_ctz(eq)), hi));
    return true;
}

/* A block's codes from its inverse scale id, packed to b + 2 (ggml_simd.h plain_blocks). */
NF_AVX512_INLINE void block_codes(nf_gq_plain type, __m512 lo, __m512 hi, __m512 id, uint8_t *b)
{
    if (type == NF_GQ_PLAIN_Q8_0) {
        /* roundf: truncate, then away from zero when the dropped part is at least 1/2 */
        const __m512i sign = _mm512_set1_epi32(INT32_MIN);
        for (int k = 0; k < 2; k++) {
            __m512 v = _mm512_mul_ps(k ? hi : lo, id);
            __m512 t = trunc_ps(v);
            __m512 fr = _mm512_castsi512_ps(_mm512_andnot_si512(sign, _mm512_castps_si512(_mm512_sub_ps(v, t))));
            __mmask16 up = _mm512_cmp_ps_mask(fr, _mm512_set1_ps(0.5f), _CMP_GE_OQ);
            __m512 one = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(_mm512_set1_ps(1.0f)),
                                                             _mm512_and_si512(sign, _mm512_castps_si512(v))));
            __m512 r = _mm512_mask_add_ps(t, up, t, one);
            _mm_storeu_si128((__m128i *)(void *)(b + 2 + 16 * k), _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(r)));
        }
        return;
    }
    /* gq_x0_plain: x * id + (nmax + 0.5) truncated, at most 2 nmax - 1; then gq_pack_q4_0 /
     * gq_pack_q5_0 (values j and j + 16 in one byte, the low byte of the OR as ggml stores it).
     * As |x| <= |extreme|, a finite product gives a code in [0, 2 nmax]; an infinite or NaN one
     * (1 / d overflowed) converts to 0x80000000, whose low byte -- all the packing keeps -- is
     * gq_trunc_i8's 0, and the minimum keeps it, so the codes need no narrowing to int8 first. */
    const int nmax = type == NF_GQ_PLAIN_Q4_0 ? 8 : 16;
    const __m512 half = _mm512_set1_ps((float)nmax + 0.5f);
    const __m512i top = _mm512_set1_epi32(2 * nmax - 1);
    __m512i c[2];
    for (int k = 0; k < 2; k++) {
        c[k] = _mm512_cvttps_epi32(_mm512_add_ps(_mm512_mul_ps(k ? hi : lo, id), half));
        c[k] = _mm512_min_epi32(c[k], top);
    }
    if (type == NF_GQ_PLAIN_Q4_0) {
        __m512i q = _mm512_or_si512(c[0], _mm512_slli_epi32(c[1], 4));
        _mm_storeu_si128((__m128i *)(void *)(b + 2), _mm512_cvtepi32_epi8(q));
        return;
    }
    const __m512i low4 = _mm512_set1_epi32(0xF), bit4 = _mm512_set1_epi32(0x10);
    __m512i q = _mm512_or_si512(_mm512_and_si512(c[0], low4), _mm512_slli_epi32(_mm512_and_si512(c[1], low4), 4));
    uint32_t qh = (uint32_t)_mm512_test_epi32_mask(c[0], bit4) | (uint32_t)_mm512_test_epi32_mask(c[1], bit4) << 16;
    for (int i = 0; i < 4; i++) b[2 + i] = (uint8_t)(qh >> (8 * i));
    _mm_storeu_si128((__m128i *)(void *)(b + 6), _mm512_cvtepi32_epi8(q));
}

/* The divisor of a block's scale: d = m / 127 (Q8_0), m / -nmax (Q4_0, Q5_0). */
NF_AVX512_INLINE float scale_div(nf_gq_plain type)
{
    return type == NF_GQ_PLAIN_Q8_0 ? 127.0f : type == NF_GQ_PLAIN_Q4_0 ? -8.0f : -16.0f;
}

/* One block, false when it is refused. */
NF_AVX512_INLINE bool plain_block(nf_gq_plain type, nf_gq_words words, const uint8_t *p, uint8_t *b)
{
    __m512 lo, hi;
    float m;
    load32(words, p, &lo, &hi);
    if (!block_max(type, lo, hi, &m)) return false;
    float d = m / scale_div(type);
    uint16_t h = f16_word(d);
    if ((h & 0x7C00u) == 0x7C00u) return false; /* the scale overflows binary16 */
    b[0] = (uint8_t)(h & 0xFFu);
    b[1] = (uint8_t)(h >> 8);
    block_codes(type, lo, hi, _mm512_set1_ps(d != 0.0f ? 1.0f / d : 0.0f), b);
    return true;
}

/* The largest lane of each of 16 vectors, in one vector: lane 4 (g % 4) + g / 4 holds that of
 * a[g] (a tree of 128-bit, 64-bit and 32-bit exchanges, 45 operations for the 16). */
NF_AVX512_INLINE __m512i max16(const __m512i *a)
{
    __m512i b[8], c[4], d[2];
    for (int k = 0; k < 8; k++) /* chunks 0-1: a[2k], 2-3: a[2k + 1] */
        b[k] = _mm512_max_epu32(_mm512_shuffle_i32x4(a[2 * k], a[2 * k + 1], 0x44),
                                _mm512_shuffle_i32x4(a[2 * k], a[2 * k + 1], 0xEE));
    for (int k = 0; k < 4; k++) /* chunk q: a[4k + q] */
        c[k] = _mm512_max_epu32(_mm512_shuffle_i32x4(b[2 * k], b[2 * k + 1], 0x88),
                                _mm512_shuffle_i32x4(b[2 * k], b[2 * k + 1], 0xDD));
    for (int k = 0; k < 2; k++) /* chunk q, lanes 0 and 2: a[8k + q], 1 and 3: a[8k + 4 + q] */
        d[k] = _mm512_max_epu32(_mm512_unpacklo_epi32(c[2 * k], c[2 * k + 1]),
                                _mm512_unpackhi_epi32(c[2 * k], c[2 * k + 1]));
    return _mm512_max_epu32(_mm512_unpacklo_epi64(d[0], d[1]), _mm512_unpackhi_epi64(d[0], d[1]));
}

/* 16 blocks, false when one of them is refused: their largest magnitudes in one vector (max16)
 * and, for Q4_0 / Q5_0, the sign of each block's first value of that magnitude (gq_extreme);
 * then the 16 scales, inverse scales and binary16 words in one vector each (the same binary32
 * operations per block, and no block waits on another's divisions); then the codes.  Block g's
 * scale is in lane 4 (g % 4) + g / 4. */
NF_AVX512_INLINE bool plain_group(nf_gq_plain type, nf_gq_words words, size_t wb, size_t bb, const uint8_t *p,
                                  uint8_t *out)
{
    const __m512i mag = _mm512_set1_epi32(INT32_MAX);
    float inv[16];
    uint16_t hw[16];
    __m512i a[16];
    __m512 lo, hi;
    for (int g = 0; g < 16; g++) {
        load32(words, p + wb * (size_t)g, &lo, &hi);
        a[g] = _mm512_max_epu32(_mm512_and_si512(_mm512_castps_si512(lo), mag),
                                _mm512_and_si512(_mm512_castps_si512(hi), mag));
    }
    __m512i am = max16(a);
    /* NaN, infinite, or 2^64 and above (gq_values_ok) */
    if (_mm512_cmpge_epu32_mask(am, _mm512_set1_epi32(0x5F800000))) return false;
    __m512 m = _mm512_castsi512_ps(am);
    if (type != NF_GQ_PLAIN_Q8_0) {
        uint32_t amb[16];
        __mmask16 neg = 0;
        _mm512_storeu_si512((void *)amb, am);
        for (int g = 0; g < 16; g++) {
            const int lane = 4 * (g % 4) + g / 4;
            if (!amb[lane]) continue; /* an all-zero block's extreme is +0 */
            load32(words, p + wb * (size_t)g, &lo, &hi);
            __m512i v = _mm512_set1_epi32((int)amb[lane]);
            uint32_t eq = (uint32_t)_mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(lo), mag), v) |
                          (uint32_t)_mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(hi), mag), v) << 16;
            uint32_t sg = (uint32_t)_mm512_movepi32_mask(_mm512_castps_si512(lo)) |
                          (uint32_t)_mm512_movepi32_mask(_mm512_castps_si512(hi)) << 16;
            if (sg & eq & (0u - eq)) neg = (__mmask16)(neg | 1u << lane);
        }
        m = _mm512_mask_sub_ps(m, neg, _mm512_setzero_ps(), m); /* -amax, exactly the value */
    }
    __m512 d = _mm512_div_ps(m, _mm512_set1_ps(scale_div(type)));
    __m256i h = f16_words16(d);
    const __m256i e = _mm256_set1_epi16(0x7C00);
    if (_mm256_movemask_epi8(_mm256_cmpeq_epi16(_mm256_and_si256(h, e), e))) return false;
    _mm256_storeu_si256((__m256i *)(void *)hw, h);
    _mm512_storeu_ps(
        inv, _mm512_maskz_div_ps(_mm512_cmp_ps_mask(d, _mm512_setzero_ps(), _CMP_NEQ_UQ), _mm512_set1_ps(1.0f), d));
    for (int g = 0; g < 16; g++) {
        const int lane = 4 * (g % 4) + g / 4;
        uint8_t *b = out + bb * (size_t)g;
        b[0] = (uint8_t)(hw[lane] & 0xFFu);
        b[1] = (uint8_t)(hw[lane] >> 8);
        load32(words, p + wb * (size_t)g, &lo, &hi);
        block_codes(type, lo, hi, _mm512_set1_ps(inv[lane]), b);
    }
    return true;
}

#define PLAIN_W 16
#define PLAIN_FN NF_AVX512_FN
#define PLAIN_INLINE NF_AVX512_INLINE
#define PLAIN_BLOCKS plain_blocks_avx512
#include "method/simd/ggml_plain_runs.inc"

NF_AVX512_FN static void requant_avx512(int n, const float *x, float d, bool with_min, float dm, int lo, int hi,
                                        int offset, uint8_t *L)
{
    if (n % 16) requant_y(n, x, d, with_min, dm, lo, hi, offset, L);
    else requant_z(n, x, d, with_min, dm, lo, hi, offset, L);
}

/* VSQRTPS is correctly rounded, as sqrtf */
NF_AVX512_FN static void sqrt_weights_avx512(size_t n, const float *x, const float *qw, float s2, float *w)
{
    const __m512 s = _mm512_set1_ps(s2);
    for (size_t j = 0; j < n; j += 16) {
        __m512 v = _mm512_loadu_ps(x + j);
        _mm512_storeu_ps(w + j,
                         _mm512_mul_ps(_mm512_loadu_ps(qw + j), _mm512_sqrt_ps(_mm512_add_ps(s, _mm512_mul_ps(v, v)))));
    }
}

const nf_gq_kernels nf_gq_kernels_avx512 = {.name = "avx512",
                                            .fit_min = fit_min_avx512,
                                            .fit_signed = fit_signed_avx512,
                                            .fit_q3 = fit_q3_avx512,
                                            .iq4_scales = iq4_scales_avx512,
                                            .requant = requant_avx512,
                                            .iq3_trials = nf_gq3_trials_avx512,
                                            .iq1s_split = nf_gq1s_split_avx512,
                                            .iq1m_split = nf_gq1m_split_avx512,
                                            .iq1_nearest = nf_gq1_nearest_avx512,
                                            .plain_blocks = plain_blocks_avx512,
                                            .sqrt_weights = sqrt_weights_avx512,
                                            .codes_q2_0 = nf_gq_codes_q2_0_avx512,
                                            .iq1_order = nf_gq1_order_avx512};

#endif
