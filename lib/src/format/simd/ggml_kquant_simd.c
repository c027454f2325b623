/* ggml k-quant block dequantizers for AVX2 and AVX-512 (format/ggml.h): Q2_K, Q3_K, Q4_K, Q5_K
 * and Q6_K.  One body per format (DEFINE_KQUANTS), instantiated with 8-lane (AVX2) and 16-lane
 * (AVX-512) stores.
 *
 * Each computes exactly what the scalar dequantizer of ggml_dequant.c computes, element for
 * element: the per-sub-block float factors are the same scalar expressions, the codes are
 * unpacked with byte shifts and masks into the same integers, converted to float on their own,
 * and every product and difference is a separate IEEE binary32 instruction in the scalar code's
 * operand order (nothing fused, -ffp-contract=off).  tests/unit/test_layout_simd.c compares them
 * with the scalar code bit for bit on random blocks. */
#include "format/ggml.h"

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)

#include <immintrin.h>
#include <stdint.h>

#define AVX2_FN __attribute__((target("avx2,f16c")))
#define AVX2_INLINE static inline __attribute__((always_inline, target("avx2,f16c")))

static inline float half_at(const uint8_t *p) { return nf_f16_to_f32((uint16_t)(p[0] | (p[1] << 8))); }

AVX2_INLINE __m128i load16(const uint8_t *p) { return _mm_loadu_si128((const __m128i *)(const void *)p); }

/* (x >> shift) & mask in every byte. */
AVX2_INLINE __m128i bits_at(__m128i x, unsigned shift, int mask)
{
    return _mm_and_si128(_mm_srl_epi16(x, _mm_cvtsi32_si128((int)shift)), _mm_set1_epi8((char)mask));
}

/* 16 signed byte integers -> two vectors of 8 binary32 (exact). */
AVX2_INLINE void i8_f32(__m128i q, __m256 *lo, __m256 *hi)
{
    *lo = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q));
    *hi = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q, 8)));
}

/* y[0..16) = (a * F(q)) - m */
AVX2_INLINE void store_am(float *y, __m128i q, float a, float m)
{
    const __m256 av = _mm256_set1_ps(a), mv = _mm256_set1_ps(m);
    __m256 lo, hi;
    i8_f32(q, &lo, &hi);
    _mm256_storeu_ps(y, _mm256_sub_ps(_mm256_mul_ps(av, lo), mv));
    _mm256_storeu_ps(y + 8, _mm256_sub_ps(_mm256_mul_ps(av, hi), mv));
}

/* y[0..16) = a * F(q) */
AVX2_INLINE void store_a(float *y, __m128i q, float a)
{
    const __m256 av = _mm256_set1_ps(a);
    __m256 lo, hi;
    i8_f32(q, &lo, &hi);
    _mm256_storeu_ps(y, _mm256_mul_ps(av, lo));
    _mm256_storeu_ps(y + 8, _mm256_mul_ps(av, hi));
}

/* The "K4" packing of Q4_K/Q5_K: 8 unsigned 6-bit scales and mins in 12 bytes. */
static inline void k4_scale_min(const uint8_t *s, unsigned i, unsigned *sc, unsigned *m)
{
    if (i < 4) {
        *sc = s[i] & 63u;
        *m = s[i + 4] & 63u;
    } else {
        *sc = (s[i + 4] & 0xFu) | (((unsigned)s[i - 4] >> 6) << 4);
        *m = ((unsigned)s[i + 4] >> 4) | (((unsigned)s[i] >> 6) << 4);
    }
}


#define AVX512_INLINE static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vl,avx2,f16c")))
#define AVX512_FN __attribute__((target("avx512f,avx512bw,avx512vl,avx2,f16c")))

/* y[0..16) = (a * F(q)) - m, 16 lanes */
AVX512_INLINE void store_am512(float *y, __m128i q, float a, float m)
{
    const __m512 v = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q));
    _mm512_storeu_ps(y, _mm512_sub_ps(_mm512_mul_ps(_mm512_set1_ps(a), v), _mm512_set1_ps(m)));
}

/* y[0..16) = a * F(q), 16 lanes */
AVX512_INLINE void store_a512(float *y, __m128i q, float a)
{
    const __m512 v = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q));
    _mm512_storeu_ps(y, _mm512_mul_ps(_mm512_set1_ps(a), v));
}

#define DEFINE_KQUANTS(KQ_SUFFIX, KQ_FN, store_am, store_a)                                                    \
KQ_FN void nf_ggml_deq_q2_k##KQ_SUFFIX(const uint8_t *b, float *y)                                             \
{                                                                                                              \
    const float d = half_at(b + 80);                                                                           \
    const float dmin = half_at(b + 82);                                                                        \
    float dl[16], ml[16]; /* the same products as the scalar code, 16 at once */                               \
    for (unsigned i = 0; i < 16; i++) {                                                                        \
        dl[i] = d * (float)(int)(b[i] & 0xFu);                                                                 \
        ml[i] = dmin * (float)(int)(b[i] >> 4);                                                                \
    }                                                                                                          \
    for (unsigned n = 0; n < 256; n += 16) {                                                                   \
        const unsigned half = n / 128, shift = 2u * ((n / 32) % 4), t0 = n % 32;                               \
        store_am(y + n, bits_at(load16(b + 16 + 32 * half + t0), shift, 3), dl[n / 16], ml[n / 16]);           \
    }                                                                                                          \
}                                                                                                              \
                                                                                                               \
KQ_FN void nf_ggml_deq_q3_k##KQ_SUFFIX(const uint8_t *b, float *y)                                             \
{                                                                                                              \
    const float d = half_at(b + 108);                                                                          \
    const uint8_t *hmask = b, *qs = b + 32, *sc = b + 96;                                                      \
    int scale[16];                                                                                             \
    float dls[16];                                                                                             \
    for (unsigned s = 0; s < 16; s++) {                                                                        \
        const unsigned low4 = s < 8 ? (sc[s] & 0xFu) : ((unsigned)sc[s - 8] >> 4);                             \
        const unsigned high2 = ((unsigned)sc[8 + s % 4] >> (2u * (s / 4))) & 3u;                               \
        scale[s] = (int)(low4 | (high2 << 4)) - 32;                                                            \
    }                                                                                                          \
    for (unsigned s = 0; s < 16; s++) dls[s] = d * (float)scale[s];                                            \
    for (unsigned s = 0; s < 16; s++) {                                                                        \
        const float dl = dls[s];                                                                               \
        const unsigned n0 = 16 * s, half = n0 / 128, shift = 2u * ((n0 / 32) % 4), hshift = n0 / 32, t0 = n0 % 32;\
        const __m128i low2 = bits_at(load16(qs + 32 * half + t0), shift, 3);                                   \
        const __m128i hbit = bits_at(load16(hmask + t0), hshift, 1);                                           \
        /* low2 - 4 + 4 * hbit, in [-4, 3] */                                                                  \
        const __m128i q = _mm_sub_epi8(_mm_add_epi8(low2, _mm_slli_epi16(hbit, 2)), _mm_set1_epi8(4));         \
        store_a(y + n0, q, dl);                                                                                \
    }                                                                                                          \
}                                                                                                              \
                                                                                                               \
KQ_FN void nf_ggml_deq_q4_k##KQ_SUFFIX(const uint8_t *b, float *y)                                             \
{                                                                                                              \
    const float d = half_at(b);                                                                                \
    const float dmin = half_at(b + 2);                                                                         \
    for (unsigned s = 0; s < 8; s++) {                                                                         \
        unsigned sc, m;                                                                                        \
        k4_scale_min(b + 4, s, &sc, &m);                                                                       \
        const float d1 = d * (float)sc;                                                                        \
        const float m1 = dmin * (float)m;                                                                      \
        const uint8_t *qs = b + 16 + 32 * (s / 2);                                                             \
        const unsigned shift = 4u * (s % 2);                                                                   \
        store_am(y + 32 * s, bits_at(load16(qs), shift, 15), d1, m1);                                          \
        store_am(y + 32 * s + 16, bits_at(load16(qs + 16), shift, 15), d1, m1);                                \
    }                                                                                                          \
}                                                                                                              \
                                                                                                               \
KQ_FN void nf_ggml_deq_q5_k##KQ_SUFFIX(const uint8_t *b, float *y)                                             \
{                                                                                                              \
    const float d = half_at(b);                                                                                \
    const float dmin = half_at(b + 2);                                                                         \
    const uint8_t *qh = b + 16;                                                                                \
    for (unsigned s = 0; s < 8; s++) {                                                                         \
        unsigned sc, m;                                                                                        \
        k4_scale_min(b + 4, s, &sc, &m);                                                                       \
        const float d1 = d * (float)sc;                                                                        \
        const float m1 = dmin * (float)m;                                                                      \
        const uint8_t *qs = b + 48 + 32 * (s / 2);                                                             \
        const unsigned shift = 4u * (s % 2);                                                                   \
        for (unsigned h = 0; h < 32; h += 16) {                                                                \
            const __m128i low = bits_at(load16(qs + h), shift, 15);                                            \
            const __m128i hbit = bits_at(load16(qh + h), s, 1);                                                \
            store_am(y + 32 * s + h, _mm_or_si128(low, _mm_slli_epi16(hbit, 4)), d1, m1);                      \
        }                                                                                                      \
    }                                                                                                          \
}                                                                                                              \
                                                                                                               \
KQ_FN void nf_ggml_deq_q6_k##KQ_SUFFIX(const uint8_t *b, float *y)                                             \
{                                                                                                              \
    const float d = half_at(b + 208);                                                                          \
    for (unsigned h = 0; h < 2; h++)                                                                           \
        for (unsigned g = 0; g < 4; g++)                                                                       \
            for (unsigned t0 = 0; t0 < 32; t0 += 16) {                                                         \
                const unsigned n0 = 128 * h + 32 * g + t0;                                                     \
                const unsigned sbyte = b[192 + n0 / 16];                                                       \
                const int sc = (int)sbyte - (sbyte >= 128 ? 256 : 0);                                          \
                const float dl = d * (float)sc;                                                                \
                const __m128i low4 = bits_at(load16(b + 64 * h + 32 * (g % 2) + t0), g < 2 ? 0u : 4u, 15);     \
                const __m128i high2 = bits_at(load16(b + 128 + 32 * h + t0), 2u * g, 3);                       \
                const __m128i q = _mm_sub_epi8(_mm_or_si128(low4, _mm_slli_epi16(high2, 4)), _mm_set1_epi8(32));\
                store_a(y + n0, q, dl);                                                                        \
            }                                                                                                  \
}

DEFINE_KQUANTS(_avx2, AVX2_FN, store_am, store_a)
DEFINE_KQUANTS(_avx512, AVX512_FN, store_am512, store_a512)

#endif
