/* Error statistics for AVX2 + F16C (stats.h): the 16 lanes of the definition are four vectors
 * of 4 binary64 sums (columns c..c+3, c+4..c+7, c+8..c+11, c+12..c+15 of each 16).  No FMA (the
 * AVX2 level does not promise it): d*d and x*x are exact in binary64, then added, as the
 * reference does.  Tails are copied into zeroed 16-value buffers (x = y = 0 adds +0, which
 * leaves a lane as it is); a block whose sum is not finite holds a pair that is not compared
 * and is summed again by the reference (see stats_avx512.c). */
#include "stats/stats.h"

#if NF_STATS_HAVE_X86_KERNELS

#include <immintrin.h>
#include <math.h>
#include <string.h>

#define AVX2_FN __attribute__((target("avx2,f16c")))
#define AVX2_INLINE static inline __attribute__((always_inline, target("avx2,f16c")))

typedef struct lanes256 {
    __m256d se[4], sx[4];
    __m256 mx;
} lanes256;

AVX2_INLINE void lanes_zero(lanes256 *l)
{
    for (int i = 0; i < 4; i++) l->se[i] = l->sx[i] = _mm256_setzero_pd();
    l->mx = _mm256_setzero_ps();
}

AVX2_INLINE __m256d lo4(__m256 v) { return _mm256_cvtps_pd(_mm256_castps256_ps128(v)); }
AVX2_INLINE __m256d hi4(__m256 v) { return _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)); }

AVX2_INLINE __m256d sq_add(__m256d acc, __m256d v) { return _mm256_add_pd(acc, _mm256_mul_pd(v, v)); }

/* 8 columns: half = 0 for c..c+7 of a 16, 1 for c+8..c+15. */
AVX2_INLINE void lanes_step8(lanes256 *l, int half, __m256 x, __m256 y)
{
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    __m256 d = _mm256_sub_ps(x, y);
    l->mx = _mm256_max_ps(_mm256_and_ps(d, abs_mask), l->mx);
    l->se[2 * half] = sq_add(l->se[2 * half], lo4(d));
    l->se[2 * half + 1] = sq_add(l->se[2 * half + 1], hi4(d));
    l->sx[2 * half] = sq_add(l->sx[2 * half], lo4(x));
    l->sx[2 * half + 1] = sq_add(l->sx[2 * half + 1], hi4(x));
}

/* l + l+8, l + l+4, l + l+2, l + l+1 (stats.h): lanes 0-3 + 8-11 and 4-7 + 12-15 first. */
AVX2_INLINE double reduce16(const __m256d *v)
{
    __m256d a = _mm256_add_pd(v[0], v[2]), b = _mm256_add_pd(v[1], v[3]);
    __m256d u = _mm256_add_pd(a, b);
    __m128d w = _mm_add_pd(_mm256_castpd256_pd128(u), _mm256_extractf128_pd(u, 1));
    return _mm_cvtsd_f64(_mm_add_sd(w, _mm_unpackhi_pd(w, w)));
}

AVX2_INLINE float reduce_max8(__m256 v)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
}

/* True when every pair was compared; then the block's sums are in st. */
AVX2_INLINE bool lanes_done(const lanes256 *l, size_t n, nf_errstats *st)
{
    double sse = reduce16(l->se), ssx = reduce16(l->sx);
    if (!isfinite(sse)) return false;
    nf_stats_block_done(st, n, sse, ssx, reduce_max8(l->mx));
    return true;
}

AVX2_FN static void block_f32(const float *x, const float *y, size_t n, nf_errstats *st)
{
    lanes256 l;
    lanes_zero(&l);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        lanes_step8(&l, 0, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i));
        lanes_step8(&l, 1, _mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8));
    }
    if (i < n) {
        float xt[16] = {0}, yt[16] = {0};
        memcpy(xt, x + i, (n - i) * sizeof *xt);
        memcpy(yt, y + i, (n - i) * sizeof *yt);
        lanes_step8(&l, 0, _mm256_loadu_ps(xt), _mm256_loadu_ps(yt));
        lanes_step8(&l, 1, _mm256_loadu_ps(xt + 8), _mm256_loadu_ps(yt + 8));
    }
    if (!lanes_done(&l, n, st)) nf_stats_block_scalar(x, y, n, st);
}

AVX2_FN static void row_f32_avx2(const float *x, const float *y, size_t n, nf_errstats *st)
{
    for (size_t c = 0; c < n; c += NF_STATS_BLOCK)
        block_f32(x + c, y + c, n - c < NF_STATS_BLOCK ? n - c : NF_STATS_BLOCK, st);
}

/* 8 source words at p as binary32 (exact widenings). */
AVX2_INLINE __m256 load_source8(const uint8_t *p, nf_src_type type)
{
    switch (type) {
    case NF_SRC_F32: return _mm256_loadu_ps((const float *)(const void *)p);
    case NF_SRC_F16: return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p));
    default:
        return _mm256_castsi256_ps(
            _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)p)), 16));
    }
}

/* y = f16(scale) * q for 8 codes at q (nf_grouped_value). */
AVX2_INLINE __m256 grouped8(const int8_t *q, __m256 s)
{
    __m128i b = _mm_loadl_epi64((const __m128i *)(const void *)q);
    return _mm256_mul_ps(s, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)));
}

AVX2_INLINE void grouped_step16(lanes256 *l, const uint8_t *p, size_t es, nf_src_type type, const int8_t *q, __m256 s)
{
    lanes_step8(l, 0, load_source8(p, type), grouped8(q, s));
    lanes_step8(l, 1, load_source8(p + 8 * es, type), grouped8(q + 8, s));
}

AVX2_FN static void grouped_block(const uint8_t *p, nf_src_type type, const int8_t *codes, const uint16_t *scales,
                                  size_t n, unsigned group, nf_errstats *st)
{
    const size_t es = nf_src_type_size(type);
    lanes256 l;
    lanes_zero(&l);
    for (size_t c0 = 0; c0 < n; c0 += group) {
        const __m256 s = _mm256_set1_ps(_cvtsh_ss(scales[c0 / group]));
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
    if (!lanes_done(&l, n, st)) nf_stats_kernels_scalar.row_grouped(p, type, codes, scales, n, group, st);
}

AVX2_FN static void row_grouped_avx2(const void *src, nf_src_type type, const int8_t *codes, const uint16_t *scales,
                                     size_t n, unsigned group, nf_errstats *st)
{
    const uint8_t *p = src;
    const size_t es = nf_src_type_size(type);
    if (group == 0 || group % 16 != 0 || NF_STATS_BLOCK % group != 0 ||
        (type != NF_SRC_F32 && type != NF_SRC_F16 && type != NF_SRC_BF16)) {
        nf_stats_kernels_scalar.row_grouped(src, type, codes, scales, n, group, st);
        return;
    }
    for (size_t c = 0; c < n; c += NF_STATS_BLOCK)
        grouped_block(p + c * es, type, codes + c, scales + c / group, n - c < NF_STATS_BLOCK ? n - c : NF_STATS_BLOCK,
                      group, st);
}

const nf_stats_kernels nf_stats_kernels_avx2 = {
    .name = "avx2",
    .row_f32 = row_f32_avx2,
    .row_grouped = row_grouped_avx2,
};

#endif
