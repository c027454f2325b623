/* Error statistics for AVX-512 F/BW/VL (stats.h): the 16 lanes of the definition are two
 * vectors of 8 binary64 sums, columns c..c+7 of each 16 in the first and c+8..c+15 in the
 * second.  d = x - y is one binary32 subtraction of 16 values; d*d and x*x are exact in
 * binary64, so the fused multiply-add into a lane rounds exactly as the reference's multiply
 * then add.  A block is first summed as if every pair were compared; a block sum that is not
 * finite means some d was not (a finite d gives d*d < 2^256, and 4096 of them stay finite), and
 * that block is summed again by the reference, which skips those pairs. */
#include "stats/stats.h"

#if NF_STATS_HAVE_X86_KERNELS

#include <immintrin.h>
#include <math.h>

#define AVX512_FN __attribute__((target("avx512f,avx512bw,avx512vl,avx2,f16c,fma")))
#define AVX512_INLINE static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vl,avx2,f16c,fma")))

typedef struct lanes512 {
    __m512d se0, se1, sx0, sx1;
    __m512 mx;
} lanes512;

AVX512_INLINE void lanes_zero(lanes512 *l)
{
    l->se0 = l->se1 = l->sx0 = l->sx1 = _mm512_setzero_pd();
    l->mx = _mm512_setzero_ps();
}

AVX512_INLINE __m512d lo8(__m512 v) { return _mm512_cvtps_pd(_mm512_castps512_ps256(v)); }
AVX512_INLINE __m512d hi8(__m512 v) { return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))); }

/* Columns c..c+15 of a block, c a multiple of 16 (lanes 0..15). */
AVX512_INLINE void lanes_step(lanes512 *l, __m512 x, __m512 y)
{
    __m512 d = _mm512_sub_ps(x, y);
    /* max(|d|, mx) keeps mx for a NaN |d|: such a block is summed again anyway */
    l->mx = _mm512_max_ps(_mm512_abs_ps(d), l->mx);
    /* Through memory: VCVTPS2PD from a 256-bit memory operand needs no shuffle (a register
     * operand's upper half would cost an extract and the conversion's own lane crossing). */
    float buf[32] __attribute__((aligned(64)));
    _mm512_store_ps(buf, d);
    _mm512_store_ps(buf + 16, x);
    __asm__("" : "+m"(buf)); /* keep the round trip: GCC would fold it back into extracts */
    __m512d dl = _mm512_cvtps_pd(_mm256_load_ps(buf)), dh = _mm512_cvtps_pd(_mm256_load_ps(buf + 8));
    __m512d xl = _mm512_cvtps_pd(_mm256_load_ps(buf + 16)), xh = _mm512_cvtps_pd(_mm256_load_ps(buf + 24));
    l->se0 = _mm512_fmadd_pd(dl, dl, l->se0);
    l->se1 = _mm512_fmadd_pd(dh, dh, l->se1);
    l->sx0 = _mm512_fmadd_pd(xl, xl, l->sx0);
    l->sx1 = _mm512_fmadd_pd(xh, xh, l->sx1);
}

/* The pairwise reduction of stats.h: l + l+8 (the two vectors), l + l+4, l + l+2, l + l+1. */
AVX512_INLINE double reduce16(__m512d a, __m512d b)
{
    __m512d t = _mm512_add_pd(a, b);
    __m256d u = _mm256_add_pd(_mm512_castpd512_pd256(t), _mm512_extractf64x4_pd(t, 1));
    __m128d v = _mm_add_pd(_mm256_castpd256_pd128(u), _mm256_extractf128_pd(u, 1));
    return _mm_cvtsd_f64(_mm_add_sd(v, _mm_unpackhi_pd(v, v)));
}

/* Ends a block of n values: its sums when every pair was compared, else the reference again. */
AVX512_INLINE void lanes_finish(const lanes512 *l, const float *x, const float *y, size_t n, nf_errstats *st)
{
    double sse = reduce16(l->se0, l->se1), ssx = reduce16(l->sx0, l->sx1);
    if (isfinite(sse)) nf_stats_block_done(st, n, sse, ssx, _mm512_reduce_max_ps(l->mx));
    else nf_stats_block_scalar(x, y, n, st);
}

AVX512_INLINE __mmask16 tail16(size_t m) { return (__mmask16)((1u << m) - 1u); }

AVX512_FN static void block_f32(const float *x, const float *y, size_t n, nf_errstats *st)
{
    lanes512 l;
    lanes_zero(&l);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) lanes_step(&l, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i));
    /* the tail as zeros: x = y = 0 adds +0 to its lanes, which leaves them as they are */
    if (i < n) lanes_step(&l, _mm512_maskz_loadu_ps(tail16(n - i), x + i), _mm512_maskz_loadu_ps(tail16(n - i), y + i));
    lanes_finish(&l, x, y, n, st);
}

AVX512_FN static void row_f32_avx512(const float *x, const float *y, size_t n, nf_errstats *st)
{
    for (size_t c = 0; c < n; c += NF_STATS_BLOCK)
        block_f32(x + c, y + c, n - c < NF_STATS_BLOCK ? n - c : NF_STATS_BLOCK, st);
}

/* 16 source words from p (the first m of them when m < 16; the others read as +0). */
AVX512_INLINE __m512 load_source(const uint8_t *p, nf_src_type type, size_t m)
{
    if (m < 16) {
        __mmask16 k = tail16(m);
        if (type == NF_SRC_F32) return _mm512_maskz_loadu_ps(k, p);
        __m256i h = _mm256_maskz_loadu_epi16(k, p);
        if (type == NF_SRC_F16) return _mm512_cvtph_ps(h);
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
    if (type == NF_SRC_F32) return _mm512_loadu_ps(p);
    __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)p);
    if (type == NF_SRC_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* y = f16(scale) * q: the operations of nf_grouped_value (the scale's exact widening, one
 * binary32 product). */
AVX512_INLINE __m512 grouped16(__m128i q, __m512 s) { return _mm512_mul_ps(s, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q))); }

/* One block of grouped words (n <= NF_STATS_BLOCK, groups whole but the row's last); type is a
 * constant in each instance below, so the loads are chosen at compile time. */
AVX512_INLINE void grouped_block(const uint8_t *p, nf_src_type type, const int8_t *codes, const uint16_t *scales,
                                 size_t n, unsigned group, nf_errstats *st)
{
    const size_t es = type == NF_SRC_F32 ? 4 : 2;
    lanes512 l;
    lanes_zero(&l);
    const uint16_t *sp = scales;
    for (size_t c0 = 0; c0 < n; c0 += group, sp++) {
        const __m512 s = _mm512_set1_ps(_cvtsh_ss(*sp));
        size_t c1 = n - c0 < group ? n : c0 + group, c = c0;
        for (; c + 16 <= c1; c += 16)
            lanes_step(&l, load_source(p + c * es, type, 16),
                       grouped16(_mm_loadu_si128((const __m128i *)(const void *)(codes + c)), s));
        if (c < c1) {
            size_t m = c1 - c;
            lanes_step(&l, load_source(p + c * es, type, m), grouped16(_mm_maskz_loadu_epi8(tail16(m), codes + c), s));
        }
    }
    double sse = reduce16(l.se0, l.se1), ssx = reduce16(l.sx0, l.sx1);
    if (isfinite(sse)) nf_stats_block_done(st, n, sse, ssx, _mm512_reduce_max_ps(l.mx));
    else nf_stats_kernels_scalar.row_grouped(p, type, codes, scales, n, group, st);
}

AVX512_INLINE void grouped_row(const uint8_t *p, nf_src_type type, const int8_t *codes, const uint16_t *scales,
                               size_t n, unsigned group, nf_errstats *st)
{
    const size_t es = type == NF_SRC_F32 ? 4 : 2;
    for (size_t c = 0; c < n; c += NF_STATS_BLOCK)
        grouped_block(p + c * es, type, codes + c, scales + c / group, n - c < NF_STATS_BLOCK ? n - c : NF_STATS_BLOCK,
                      group, st);
}

AVX512_FN static void grouped_f32(const uint8_t *p, const int8_t *q, const uint16_t *s, size_t n, unsigned g,
                                  nf_errstats *st)
{
    grouped_row(p, NF_SRC_F32, q, s, n, g, st);
}

AVX512_FN static void grouped_f16(const uint8_t *p, const int8_t *q, const uint16_t *s, size_t n, unsigned g,
                                  nf_errstats *st)
{
    grouped_row(p, NF_SRC_F16, q, s, n, g, st);
}

AVX512_FN static void grouped_bf16(const uint8_t *p, const int8_t *q, const uint16_t *s, size_t n, unsigned g,
                                   nf_errstats *st)
{
    grouped_row(p, NF_SRC_BF16, q, s, n, g, st);
}

static void row_grouped_avx512(const void *src, nf_src_type type, const int8_t *codes, const uint16_t *scales, size_t n,
                               unsigned group, nf_errstats *st)
{
    /* blocks hold whole groups, and 16 lanes never straddle two groups */
    bool shaped = group != 0 && group % 16 == 0 && NF_STATS_BLOCK % group == 0;
    if (shaped && type == NF_SRC_F32) grouped_f32(src, codes, scales, n, group, st);
    else if (shaped && type == NF_SRC_F16) grouped_f16(src, codes, scales, n, group, st);
    else if (shaped && type == NF_SRC_BF16) grouped_bf16(src, codes, scales, n, group, st);
    else nf_stats_kernels_scalar.row_grouped(src, type, codes, scales, n, group, st);
}

const nf_stats_kernels nf_stats_kernels_avx512 = {
    .name = "avx512",
    .row_f32 = row_f32_avx512,
    .row_grouped = row_grouped_avx512,
};

#endif
