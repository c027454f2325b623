/* Error statistics for AVX2 + F16C (stats.h), through the lanes of lanes_avx2.h.  Tails are
 * copied into zeroed 16-value buffers (x = y = 0 adds +0, which leaves a lane as it is); a block
 * holding a pair that is not compared is summed again by the reference (see stats_avx512.c). */
#include "common/simd_target.h"
#include "stats/stats.h"

#if NF_X86_KERNELS

#include <string.h>

#include "stats/simd/lanes_avx2.h"


NF_AVX2_FN static void block_f32(const float *x, const float *y, size_t n, nf_errstats *st)
{
    nf_lanes256 l;
    nf_lanes256_zero(&l);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        nf_lanes256_step8(&l, 0, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i));
        nf_lanes256_step8(&l, 1, _mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8));
    }
    if (i < n) {
        float xt[16] = {0}, yt[16] = {0};
        memcpy(xt, x + i, (n - i) * sizeof *xt);
        memcpy(yt, y + i, (n - i) * sizeof *yt);
        nf_lanes256_step8(&l, 0, _mm256_loadu_ps(xt), _mm256_loadu_ps(yt));
        nf_lanes256_step8(&l, 1, _mm256_loadu_ps(xt + 8), _mm256_loadu_ps(yt + 8));
    }
    if (!nf_lanes256_finish(&l, n, st)) nf_stats_block_scalar(x, y, n, st);
}


/* 8 source words at p as binary32 (exact widenings). */
NF_AVX2_INLINE __m256 load_source8(const uint8_t *p, nf_stats_source type)
{
    if (type == NF_STATS_F32) return _mm256_loadu_ps((const float *)(const void *)p);
    __m128i h = _mm_loadu_si128((const __m128i *)(const void *)p);
    if (type == NF_STATS_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* y = f16(scale) * q for 8 codes at q (nf_grouped_value). */
NF_AVX2_INLINE __m256 grouped8(const int8_t *q, __m256 s)
{
    __m128i b = _mm_loadl_epi64((const __m128i *)(const void *)q);
    return _mm256_mul_ps(s, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)));
}

NF_AVX2_INLINE void grouped_step16(nf_lanes256 *l, const uint8_t *p, size_t es, nf_stats_source type, const int8_t *q,
                                   __m256 s)
{
    nf_lanes256_step8(l, 0, load_source8(p, type), grouped8(q, s));
    nf_lanes256_step8(l, 1, load_source8(p + 8 * es, type), grouped8(q + 8, s));
}

NF_AVX2_INLINE void grouped_block(const uint8_t *p, nf_stats_source type, const int8_t *codes, const uint16_t *scales,
                                  size_t n, unsigned group, nf_errstats *st)
{
    const size_t es = type == NF_STATS_F32 ? 4 : 2;
    nf_lanes256 l;
    nf_lanes256_zero(&l);
    const uint16_t *sp = scales;
    for (size_t c0 = 0; c0 < n; c0 += group, sp++) {
        const __m256 s = _mm256_set1_ps(_cvtsh_ss(*sp));
        size_t c1 = n - c0 < group ? n : c0 + group, c = c0;
        for (; c + 16 <= c1; c += 16) grouped_step16(&l, p + c * es, es, type, codes + c, s);
        if (c < c1) {
            /* zero words (+0 in every source type) and zero codes past the end */
            uint8_t pt[16 * 4] = {0};
            int8_t qt[16] = {0};
            memcpy(pt, p + c * es, (c1 - c) * es);
            memcpy(qt, codes + c, c1 - c);
            grouped_step16(&l, pt, es, type, qt, s);
        }
    }
    if (!nf_lanes256_finish(&l, n, st)) nf_stats_kernels_scalar.row_grouped(p, type, codes, scales, n, group, st);
}

#define STATS_FN NF_AVX2_FN
#define STATS_INLINE NF_AVX2_INLINE
#define STATS_KERNELS nf_stats_kernels_avx2
#define STATS_NAME "avx2"
#include "stats/simd/stats_rows.inc"

#endif
