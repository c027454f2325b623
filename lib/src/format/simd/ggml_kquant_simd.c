/* ggml k-quant block dequantizers for AVX2 and AVX-512 (format/ggml.h): Q2_K, Q3_K, Q4_K, Q5_K
 * and Q6_K.  One body per format (DEFINE_KQUANTS), instantiated with 8-lane (AVX2) and 16-lane
 * (AVX-512) stores; Q2_K and Q3_K, whose sub-blocks have only 4 or 8 distinct values, instead
 * compute those values once per sub-block and look each element up by its code bits (their
 * own functions below, not DEFINE_KQUANTS).
 *
 * Each computes exactly what the scalar dequantizer of ggml_dequant.c computes, element for
 * element: the per-sub-block float factors are the same scalar expressions, the codes are
 * unpacked with byte shifts and masks into the same integers, converted to float on their own,
 * and every product and difference is a separate IEEE binary32 instruction in the scalar code's
 * operand order (nothing fused, -ffp-contract=off).  tests/unit/test_layout_simd.c compares them
 * with the scalar code bit for bit on random blocks. */
#include "common/simd_target.h"
#include "format/ggml.h"

#if NF_X86_KERNELS

#include <immintrin.h>
#include <stdint.h>

/* The functions of the AVX2 and AVX-512 instances of nf_ggml_kernels (format/ggml.h), which are
 * their only users. */
#define NF_GGML_KQUANT_DECL(sfx)                                  \
    void nf_ggml_deq_q2_k##sfx(const uint8_t *block, float *out); \
    void nf_ggml_deq_q3_k##sfx(const uint8_t *block, float *out); \
    void nf_ggml_deq_q4_k##sfx(const uint8_t *block, float *out); \
    void nf_ggml_deq_q5_k##sfx(const uint8_t *block, float *out); \
    void nf_ggml_deq_q6_k##sfx(const uint8_t *block, float *out);
NF_GGML_KQUANT_DECL(_avx2)
NF_GGML_KQUANT_DECL(_avx512)
/* the per-element bodies of Q4_K..Q6_K (Q2_K and Q3_K use table lookups instead) */
void nf_ggml_deq_q4_k_avx2_generic(const uint8_t *block, float *out);
void nf_ggml_deq_q5_k_avx2_generic(const uint8_t *block, float *out);
void nf_ggml_deq_q6_k_avx2_generic(const uint8_t *block, float *out);
void nf_ggml_deq_q4_k_avx512_generic(const uint8_t *block, float *out);
void nf_ggml_deq_q5_k_avx512_generic(const uint8_t *block, float *out);
void nf_ggml_deq_q6_k_avx512_generic(const uint8_t *block, float *out);


NF_AVX2_INLINE __m128i load16(const uint8_t *p) { return _mm_loadu_si128((const __m128i *)(const void *)p); }

/* (x >> shift) & mask in every byte. */
NF_AVX2_INLINE __m128i bits_at(__m128i x, unsigned shift, int mask)
{
    return _mm_and_si128(_mm_srl_epi16(x, _mm_cvtsi32_si128((int)shift)), _mm_set1_epi8((char)mask));
}

/* 16 signed byte integers -> two vectors of 8 binary32 (exact). */
NF_AVX2_INLINE void i8_f32(__m128i q, __m256 *lo, __m256 *hi)
{
    *lo = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q));
    *hi = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q, 8)));
}

/* y[0..16) = (a * F(q)) - m */
NF_AVX2_INLINE void store_am(float *y, __m128i q, float a, float m)
{
    const __m256 av = _mm256_set1_ps(a), mv = _mm256_set1_ps(m);
    __m256 lo, hi;
    i8_f32(q, &lo, &hi);
    _mm256_storeu_ps(y, _mm256_sub_ps(_mm256_mul_ps(av, lo), mv));
    _mm256_storeu_ps(y + 8, _mm256_sub_ps(_mm256_mul_ps(av, hi), mv));
}

/* y[0..16) = a * F(q) */
NF_AVX2_INLINE void store_a(float *y, __m128i q, float a)
{
    const __m256 av = _mm256_set1_ps(a);
    __m256 lo, hi;
    i8_f32(q, &lo, &hi);
    _mm256_storeu_ps(y, _mm256_mul_ps(av, lo));
    _mm256_storeu_ps(y + 8, _mm256_mul_ps(av, hi));
}


/* y[0..16) = (a * F(q)) - m, 16 lanes */
NF_AVX512_INLINE void store_am512(float *y, __m128i q, float a, float m)
{
    const __m512 v = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q));
    _mm512_storeu_ps(y, _mm512_sub_ps(_mm512_mul_ps(_mm512_set1_ps(a), v), _mm512_set1_ps(m)));
}

/* y[0..16) = a * F(q), 16 lanes */
NF_AVX512_INLINE void store_a512(float *y, __m128i q, float a)
{
    const __m512 v = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q));
    _mm512_storeu_ps(y, _mm512_mul_ps(_mm512_set1_ps(a), v));
}

#define DEFINE_KQUANTS(KQ_SUFFIX, KQ_FN, store_am, store_a)                                                          \
    KQ_FN void nf_ggml_deq_q4_k##KQ_SUFFIX(const uint8_t *b, float *y)                                               \
    {                                                                                                                \
        const float d = nf_ggml_half_at(b);                                                                          \
        const float dmin = nf_ggml_half_at(b + 2);                                                                   \
        for (unsigned s = 0; s < 8; s++) {                                                                           \
            unsigned sc, m;                                                                                          \
            nf_ggml_k4_scale_min(b + 4, s, &sc, &m);                                                                 \
            const float d1 = d * (float)sc;                                                                          \
            const float m1 = dmin * (float)m;                                                                        \
            const uint8_t *qs = b + 16 + 32 * (s / 2);                                                               \
            const unsigned shift = 4u * (s % 2);                                                                     \
            store_am(y + 32 * s, bits_at(load16(qs), shift, 15), d1, m1);                                            \
            store_am(y + 32 * s + 16, bits_at(load16(qs + 16), shift, 15), d1, m1);                                  \
        }                                                                                                            \
    }                                                                                                                \
                                                                                                                     \
    KQ_FN void nf_ggml_deq_q5_k##KQ_SUFFIX(const uint8_t *b, float *y)                                               \
    {                                                                                                                \
        const float d = nf_ggml_half_at(b);                                                                          \
        const float dmin = nf_ggml_half_at(b + 2);                                                                   \
        const uint8_t *qh = b + 16;                                                                                  \
        for (unsigned s = 0; s < 8; s++) {                                                                           \
            unsigned sc, m;                                                                                          \
            nf_ggml_k4_scale_min(b + 4, s, &sc, &m);                                                                 \
            const float d1 = d * (float)sc;                                                                          \
            const float m1 = dmin * (float)m;                                                                        \
            const uint8_t *qs = b + 48 + 32 * (s / 2);                                                               \
            const unsigned shift = 4u * (s % 2);                                                                     \
            for (unsigned h = 0; h < 32; h += 16) {                                                                  \
                const __m128i low = bits_at(load16(qs + h), shift, 15);                                              \
                const __m128i hbit = bits_at(load16(qh + h), s, 1);                                                  \
                store_am(y + 32 * s + h, _mm_or_si128(low, _mm_slli_epi16(hbit, 4)), d1, m1);                        \
            }                                                                                                        \
        }                                                                                                            \
    }                                                                                                                \
                                                                                                                     \
    KQ_FN void nf_ggml_deq_q6_k##KQ_SUFFIX(const uint8_t *b, float *y)                                               \
    {                                                                                                                \
        const float d = nf_ggml_half_at(b + 208);                                                                    \
        for (unsigned h = 0; h < 2; h++)                                                                             \
            for (unsigned g = 0; g < 4; g++)                                                                         \
                for (unsigned t0 = 0; t0 < 32; t0 += 16) {                                                           \
                    const unsigned n0 = 128 * h + 32 * g + t0;                                                       \
                    const unsigned sbyte = b[192 + n0 / 16];                                                         \
                    const int sc = (int)sbyte - (sbyte >= 128 ? 256 : 0);                                            \
                    const float dl = d * (float)sc;                                                                  \
                    const __m128i low4 = bits_at(load16(b + 64 * h + 32 * (g % 2) + t0), g < 2 ? 0u : 4u, 15);       \
                    const __m128i high2 = bits_at(load16(b + 128 + 32 * h + t0), 2u * g, 3);                         \
                    const __m128i q = _mm_sub_epi8(_mm_or_si128(low4, _mm_slli_epi16(high2, 4)), _mm_set1_epi8(32)); \
                    store_a(y + n0, q, dl);                                                                          \
                }                                                                                                    \
    }

DEFINE_KQUANTS(_avx2_generic, NF_AVX2_FN, store_am, store_a)
DEFINE_KQUANTS(_avx512_generic, NF_AVX512_FN, store_am512, store_a512)

/* AVX2 Q2_K and Q3_K by table lookup, as the AVX-512 ones below: an 8-entry table per sub-block
 * (period 4 for Q2_K, the 8 codes -4..3 for Q3_K), indexed by the low 3 bits of each lane. */
NF_AVX2_FN void nf_ggml_deq_q2_k_avx2(const uint8_t *b, float *y)
{
    const float d = nf_ggml_half_at(b + 80);
    const float dmin = nf_ggml_half_at(b + 82);
    float dls[16], mls[16];
    for (unsigned i = 0; i < 16; i++) {
        dls[i] = d * (float)(int)(b[i] & 0xFu);
        mls[i] = dmin * (float)(int)(b[i] >> 4);
    }
    const __m256 cv = _mm256_setr_ps(0, 1, 2, 3, 0, 1, 2, 3);
    for (unsigned half = 0; half < 2; half++)
        for (unsigned t0 = 0; t0 < 32; t0 += 16) {
            const uint8_t *q = b + 16 + 32 * half + t0;
            const __m256i x0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)q));
            const __m256i x1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(q + 8)));
            for (unsigned j = 0; j < 4; j++) {
                const unsigned n = 128 * half + 32 * j + t0, i = n / 16;
                const __m256 t = _mm256_sub_ps(_mm256_mul_ps(_mm256_set1_ps(dls[i]), cv), _mm256_set1_ps(mls[i]));
                const __m128i sh = _mm_cvtsi32_si128((int)(2 * j));
                _mm256_storeu_ps(y + n, _mm256_permutevar8x32_ps(t, _mm256_srl_epi32(x0, sh)));
                _mm256_storeu_ps(y + n + 8, _mm256_permutevar8x32_ps(t, _mm256_srl_epi32(x1, sh)));
            }
        }
}

NF_AVX2_FN void nf_ggml_deq_q3_k_avx2(const uint8_t *b, float *y)
{
    const float d = nf_ggml_half_at(b + 108);
    const uint8_t *hmask = b, *qs = b + 32, *sc = b + 96;
    float dls[16];
    for (unsigned s = 0; s < 16; s++) {
        const unsigned low4 = s < 8 ? (sc[s] & 0xFu) : ((unsigned)sc[s - 8] >> 4);
        const unsigned high2 = ((unsigned)sc[8 + s % 4] >> (2u * (s / 4))) & 3u;
        dls[s] = d * (float)((int)(low4 | (high2 << 4)) - 32);
    }
    const __m256 cv = _mm256_setr_ps(-4, -3, -2, -1, 0, 1, 2, 3);
    for (unsigned half = 0; half < 2; half++)
        for (unsigned t0 = 0; t0 < 32; t0 += 16) {
            const __m128i q = load16(qs + 32 * half + t0), h = load16(hmask + t0);
            for (unsigned j = 0; j < 4; j++) {
                const unsigned n0 = 128 * half + 32 * j + t0, s = n0 / 16;
                /* index low2 + 4 hbit, the table entry of q = low2 - 4 + 4 hbit */
                const __m128i idx = _mm_or_si128(bits_at(q, 2 * j, 3), _mm_slli_epi16(bits_at(h, 4 * half + j, 1), 2));
                const __m256 t = _mm256_mul_ps(_mm256_set1_ps(dls[s]), cv);
                _mm256_storeu_ps(y + n0, _mm256_permutevar8x32_ps(t, _mm256_cvtepu8_epi32(idx)));
                _mm256_storeu_ps(y + n0 + 8, _mm256_permutevar8x32_ps(t, _mm256_cvtepu8_epi32(_mm_srli_si128(idx, 8))));
            }
        }
}

NF_AVX2_FN void nf_ggml_deq_q4_k_avx2(const uint8_t *b, float *y) { nf_ggml_deq_q4_k_avx2_generic(b, y); }
NF_AVX2_FN void nf_ggml_deq_q5_k_avx2(const uint8_t *b, float *y) { nf_ggml_deq_q5_k_avx2_generic(b, y); }
NF_AVX2_FN void nf_ggml_deq_q6_k_avx2(const uint8_t *b, float *y) { nf_ggml_deq_q6_k_avx2_generic(b, y); }

/* AVX-512 Q2_K and Q3_K by table lookup: a sub-block of 16 has only 4 (Q2_K) or 8 (Q3_K)
 * possible codes, so its values are computed once per sub-block, with the scalar code's own
 * operations on the same operands ((dl * F(q)) - ml, and dl * F(q)), into a 16-entry table
 * (period 4 or 8), and each element is one permute of that table by its code bits.  The permute
 * uses the low 4 bits of an index lane; bits above the code's width select the same entry. */
NF_AVX512_FN void nf_ggml_deq_q2_k_avx512(const uint8_t *b, float *y)
{
    const float d = nf_ggml_half_at(b + 80);
    const float dmin = nf_ggml_half_at(b + 82);
    /* dl[i] = d * F(sc & 15), ml[i] = dmin * F(sc >> 4), 16 lanes at once */
    const __m512i sc = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)b));
    const __m512 dl = _mm512_mul_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(_mm512_and_si512(sc, _mm512_set1_epi32(15))));
    const __m512 ml = _mm512_mul_ps(_mm512_set1_ps(dmin), _mm512_cvtepi32_ps(_mm512_srli_epi32(sc, 4)));
    float dls[16], mls[16];
    _mm512_storeu_ps(dls, dl);
    _mm512_storeu_ps(mls, ml);
    const __m512 cv = _mm512_setr_ps(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3);
    for (unsigned half = 0; half < 2; half++)
        for (unsigned t0 = 0; t0 < 32; t0 += 16) {
            /* 16 bytes hold the codes of sub-blocks (128 half + 32 j + t0) / 16, j = 0..3, at bits 2j */
            const __m512i x = _mm512_cvtepu8_epi32(
                _mm_loadu_si128((const __m128i *)(const void *)(b + 16 + 32 * half + t0)));
            for (unsigned j = 0; j < 4; j++) {
                const unsigned n = 128 * half + 32 * j + t0, i = n / 16;
                const __m512 t = _mm512_sub_ps(_mm512_mul_ps(_mm512_set1_ps(dls[i]), cv), _mm512_set1_ps(mls[i]));
                _mm512_storeu_ps(y + n, _mm512_permutexvar_ps(_mm512_srli_epi32(x, 2 * j), t));
            }
        }
}

NF_AVX512_FN void nf_ggml_deq_q3_k_avx512(const uint8_t *b, float *y)
{
    const float d = nf_ggml_half_at(b + 108);
    const uint8_t *hmask = b, *qs = b + 32;
    /* the 16 signed 6-bit scales: low4 from byte s (s < 8) or the high nibble of byte s - 8, high2
     * from bits 2 (s / 4) of byte 8 + s % 4 (the 12 scale bytes read with a mask: nothing past the
     * block) */
    const __m128i v = _mm_maskz_loadu_epi8((__mmask16)0x0FFF, b + 96);
    const __m512i lo = _mm512_cvtepu8_epi32(
        _mm_shuffle_epi8(v, _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7)));
    const __m512i hi = _mm512_cvtepu8_epi32(
        _mm_shuffle_epi8(v, _mm_setr_epi8(8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11)));
    const __m512i low4 = _mm512_and_si512(
        _mm512_srlv_epi32(lo, _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4, 4)),
        _mm512_set1_epi32(15));
    const __m512i high2 = _mm512_and_si512(
        _mm512_srlv_epi32(hi, _mm512_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 4, 4, 6, 6, 6, 6)), _mm512_set1_epi32(3));
    const __m512i scale = _mm512_sub_epi32(_mm512_or_si512(low4, _mm512_slli_epi32(high2, 4)), _mm512_set1_epi32(32));
    float dls[16];
    _mm512_storeu_ps(dls, _mm512_mul_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(scale)));
    const __m512 cv = _mm512_setr_ps(-4, -3, -2, -1, 0, 1, 2, 3, -4, -3, -2, -1, 0, 1, 2, 3);
    for (unsigned half = 0; half < 2; half++)
        for (unsigned t0 = 0; t0 < 32; t0 += 16) {
            const __m128i q = load16(qs + 32 * half + t0), h = load16(hmask + t0);
            for (unsigned j = 0; j < 4; j++) {
                const unsigned n0 = 128 * half + 32 * j + t0, s = n0 / 16;
                /* index low2 + 4 hbit, the table entry of q = low2 - 4 + 4 hbit */
                const __m128i idx = _mm_or_si128(bits_at(q, 2 * j, 3), _mm_slli_epi16(bits_at(h, 4 * half + j, 1), 2));
                const __m512 t = _mm512_mul_ps(_mm512_set1_ps(dls[s]), cv);
                _mm512_storeu_ps(y + n0, _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(idx), t));
            }
        }
}

/* The other AVX-512 k-quants are the generic bodies. */
NF_AVX512_FN void nf_ggml_deq_q4_k_avx512(const uint8_t *b, float *y) { nf_ggml_deq_q4_k_avx512_generic(b, y); }
NF_AVX512_FN void nf_ggml_deq_q5_k_avx512(const uint8_t *b, float *y) { nf_ggml_deq_q5_k_avx512_generic(b, y); }
NF_AVX512_FN void nf_ggml_deq_q6_k_avx512(const uint8_t *b, float *y) { nf_ggml_deq_q6_k_avx512_generic(b, y); }

#define KQUANT_KERNELS(sfx)                                                                                           \
    {                                                                                                                 \
        .name = #sfx, .q2_k = nf_ggml_deq_q2_k_##sfx, .q3_k = nf_ggml_deq_q3_k_##sfx, .q4_k = nf_ggml_deq_q4_k_##sfx, \
        .q5_k = nf_ggml_deq_q5_k_##sfx, .q6_k = nf_ggml_deq_q6_k_##sfx,                                               \
    }
const nf_ggml_kernels nf_ggml_kernels_avx2 = KQUANT_KERNELS(avx2);
const nf_ggml_kernels nf_ggml_kernels_avx512 = KQUANT_KERNELS(avx512);

#endif
