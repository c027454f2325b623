/* Error statistics for AVX-512 F/BW/VL (stats.h), through the lanes of lanes_avx512.h.  A block
 * is first summed as if every pair were compared; a block holding one that is not is summed
 * again by the reference, which skips it. */
#include "stats/stats.h"

#if NF_X86_KERNELS

#include "stats/simd/lanes_avx512.h"


NF_AVX512_INLINE __mmask16 tail16(size_t m) { return (__mmask16)((1u << m) - 1u); }

NF_AVX512_FN static void block_f32(const float *x, const float *y, size_t n, nf_errstats *st)
{
    nf_lanes512 l;
    nf_lanes512_zero(&l);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) nf_lanes512_step(&l, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i));
    /* the tail as zeros: x = y = 0 adds +0 to its lanes, which leaves them as they are */
    if (i < n)
        nf_lanes512_step(&l, _mm512_maskz_loadu_ps(tail16(n - i), x + i), _mm512_maskz_loadu_ps(tail16(n - i), y + i));
    if (!nf_lanes512_finish(&l, n, st)) nf_stats_block_scalar(x, y, n, st);
}


/* 16 source words from p (the first m of them when m < 16; the others read as +0). */
NF_AVX512_INLINE __m512 load_source(const uint8_t *p, nf_stats_source type, size_t m)
{
    if (m < 16) {
        __mmask16 k = tail16(m);
        if (type == NF_STATS_F32) return _mm512_maskz_loadu_ps(k, p);
        __m256i h = _mm256_maskz_loadu_epi16(k, p);
        if (type == NF_STATS_F16) return _mm512_cvtph_ps(h);
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
    if (type == NF_STATS_F32) return _mm512_loadu_ps(p);
    __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)p);
    if (type == NF_STATS_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* y = f16(scale) * q: the operations of nf_grouped_value (the scale's exact widening, one
 * binary32 product). */
NF_AVX512_INLINE __m512 grouped16(__m128i q, __m512 s)
{
    return _mm512_mul_ps(s, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)));
}

/* One block of grouped words (n <= NF_STATS_BLOCK, groups whole but the row's last); type is a
 * constant in each instance below, so the loads are chosen at compile time. */
NF_AVX512_INLINE void grouped_block(const uint8_t *p, nf_stats_source type, const int8_t *codes, const uint16_t *scales,
                                    size_t n, unsigned group, nf_errstats *st)
{
    const size_t es = type == NF_STATS_F32 ? 4 : 2;
    nf_lanes512 l;
    nf_lanes512_zero(&l);
    const uint16_t *sp = scales;
    for (size_t c0 = 0; c0 < n; c0 += group, sp++) {
        const __m512 s = _mm512_set1_ps(_cvtsh_ss(*sp));
        size_t c1 = n - c0 < group ? n : c0 + group, c = c0;
        for (; c + 16 <= c1; c += 16)
            nf_lanes512_step(&l, load_source(p + c * es, type, 16),
                             grouped16(_mm_loadu_si128((const __m128i *)(const void *)(codes + c)), s));
        if (c < c1) {
            size_t m = c1 - c;
            nf_lanes512_step(&l, load_source(p + c * es, type, m),
                             grouped16(_mm_maskz_loadu_epi8(tail16(m), codes + c), s));
        }
    }
    if (!nf_lanes512_finish(&l, n, st)) nf_stats_kernels_scalar.row_grouped(p, type, codes, scales, n, group, st);
}

#define STATS_FN NF_AVX512_FN
#define STATS_INLINE NF_AVX512_INLINE
#define STATS_KERNELS nf_stats_kernels_avx512
#define STATS_NAME "avx512"
#include "stats/simd/stats_rows.inc"

#endif
