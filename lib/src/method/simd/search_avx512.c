/* grouped_search fast path for AVX-512 F + BW + VL (search_simd.h): candidates side by side, 16
 * per binary32 vector for the codes and 8 per binary64 vector for the error, 32 per pass over
 * the group.
 *
 * One fused operation, which provably rounds as the reference's two: r = x - s * q as
 * VFNMADD (-(s * q) + x, one rounding).  s * q is exact in binary64 (s is a binary16 value: 11
 * significant bits, exponent >= -24; q an integer of magnitude <= 128: at most 19 significant
 * bits, magnitude < 2^23), so the reference's product rounds to itself and its subtraction is
 * the only rounding, as in the fused form.  Everything else rounds on its own. */
#include "method/method_impl.h"
#include "method/simd/search_simd.h"

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)

#include <immintrin.h>

#define TARGET "avx512f,avx512bw,avx512vl,avx2,f16c,fma"
#define AVX512_ATTR __attribute__((target(TARGET)))
#define AVX512_INLINE static inline __attribute__((always_inline, target(TARGET)))
#define SEARCH_LANES 96u

AVX512_INLINE void search_round(const double *c, size_t m, uint16_t *words);
AVX512_INLINE void search_prep(const uint16_t *words, size_t m, double *s, float *sf, float *inv);
AVX512_INLINE void search_screen(const nf_search_group *g, const float *sf, const float *inv, size_t m, double *a);
AVX512_INLINE void search_lsq_sums(const nf_search_group *g, const double *xd, const int8_t *q, double *num,
                                   double *den);
AVX512_INLINE void search_eval(const nf_search_group *g, const double *xd, const double *s, const float *inv,
                               size_t m, double *e);
AVX512_INLINE void search_codes(const nf_search_group *g, float inv, int8_t *q);

/* Does words[0..m) hold the valid (nonzero) word w?  The list is zero up to SEARCH_LANES. */
#define SEARCH_HAVE_SEEN 1
AVX512_INLINE bool search_seen(const uint16_t *words, size_t m, uint16_t w)
{
    __m512i v = _mm512_set1_epi16((short)w);
    __mmask32 f = 0;
    for (size_t i = 0; i < m; i += 32) f |= _mm512_cmpeq_epi16_mask(_mm512_loadu_si512(words + i), v);
    return f != 0;
}

#define SEARCH_FN nf_search_group_avx512
#define SEARCH_ATTR AVX512_ATTR
#include "method/simd/search_algo.inc"

/* round_candidate of 8 lanes at once (as search_avx2.c's, 8 wide). */
AVX512_INLINE void search_round(const double *c, size_t m, uint16_t *words)
{
    const __m128i mag = _mm_set1_epi16(0x7FFF);
    for (size_t i = 0; i < m; i += 8) {
        __mmask8 k = (__mmask8)(m - i >= 8 ? 0xFFu : (1u << (m - i)) - 1u);
        __m128i h = _mm256_cvtps_ph(_mm512_cvtpd_ps(_mm512_maskz_loadu_pd(k, c + i)), 0);
        _mm_mask_storeu_epi16(words + i, k, h);
        if (_mm_mask_testn_epi16_mask(k, h, mag)) /* a zero magnitude: the reference's fix-up */
            for (size_t j = i; j < i + 8 && j < m; j++)
                if ((words[j] & 0x7FFFu) == 0 && c[j] != 0.0) words[j] = (uint16_t)(c[j] < 0.0 ? 0x8001u : 0x0001u);
    }
}

/* s = f16 value, exactly in binary64; inv = f32(1 / value); padding lanes get the word of 1.0. */
AVX512_INLINE void search_prep(const uint16_t *words, size_t m, double *s, float *sf, float *inv)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    for (size_t i = 0; i < m; i += 16) {
        size_t left = m - i;
        __mmask16 k = (__mmask16)(left >= 16 ? 0xFFFFu : (1u << left) - 1u);
        __m256i h = _mm256_mask_loadu_epi16(_mm256_set1_epi16(0x3C00), k, words + i);
        __m512 v = _mm512_cvtph_ps(h);
        _mm512_storeu_ps(inv + i, _mm512_div_ps(one, v));
        _mm512_storeu_ps(sf + i, v);
        _mm512_storeu_pd(s + i, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
        _mm512_storeu_pd(s + i + 8, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
    }
}

/* The code of 16 lanes as floats (see search_avx2.c's code8; VRNDSCALEPS imm8 = 8 is round
 * to nearest even without exceptions). */
AVX512_INLINE __m512 code16(__m512 xb, __m512 inv, __m512 qmin, __m512 qmax)
{
    __m512 p = _mm512_mul_ps(xb, inv);
    p = _mm512_min_ps(_mm512_max_ps(p, qmin), qmax);
    /* the -O0 macro form of the intrinsic trips -Wsign-conversion */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-conversion"
    p = _mm512_roundscale_ps(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#pragma GCC diagnostic pop
    return p;
}

AVX512_INLINE __m512d lo8(__m512 q) { return _mm512_cvtps_pd(_mm512_castps512_ps256(q)); }
AVX512_INLINE __m512d hi8(__m512 q)
{
    return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(q), 1)));
}

/* e += (w * r) * r, or r * r, with r = x - s * q (exact product: one rounding, fused or not) */
AVX512_INLINE __m512d term(__m512d e, __m512d xdb, __m512d wb, __m512d s, __m512d q, bool weighted)
{
    __m512d r = _mm512_fnmadd_pd(s, q, xdb);
    __m512d wr = weighted ? _mm512_mul_pd(wb, r) : r;
    return _mm512_add_pd(e, _mm512_mul_pd(wr, r));
}

/* 32 lanes over the whole group. */
AVX512_INLINE void eval32(const nf_search_group *g, const double *xd, const double *s, const float *inv, double *e,
                          bool weighted)
{
    const __m512 qmin = _mm512_set1_ps(g->qmin), qmax = _mm512_set1_ps(g->qmax);
    __m512 ia = _mm512_loadu_ps(inv), ib = _mm512_loadu_ps(inv + 16);
    __m512d s0 = _mm512_loadu_pd(s), s1 = _mm512_loadu_pd(s + 8), s2 = _mm512_loadu_pd(s + 16),
            s3 = _mm512_loadu_pd(s + 24);
    __m512d e0 = _mm512_setzero_pd(), e1 = e0, e2 = e0, e3 = e0;
    const float *x = g->x;
    const double *w = g->w;
    for (size_t k = 0; k < g->n; k++) {
        __m512 xb = _mm512_set1_ps(x[k]);
        __m512d xdb = _mm512_set1_pd(xd[k]);
        __m512d wb = weighted ? _mm512_set1_pd(w[k]) : xdb;
        __m512 qa = code16(xb, ia, qmin, qmax), qb = code16(xb, ib, qmin, qmax);
        e0 = term(e0, xdb, wb, s0, lo8(qa), weighted);
        e1 = term(e1, xdb, wb, s1, hi8(qa), weighted);
        e2 = term(e2, xdb, wb, s2, lo8(qb), weighted);
        e3 = term(e3, xdb, wb, s3, hi8(qb), weighted);
    }
    _mm512_storeu_pd(e, e0);
    _mm512_storeu_pd(e + 8, e1);
    _mm512_storeu_pd(e + 16, e2);
    _mm512_storeu_pd(e + 24, e3);
}

/* 16 lanes over the whole group. */
AVX512_INLINE void eval16(const nf_search_group *g, const double *xd, const double *s, const float *inv, double *e,
                          bool weighted)
{
    const __m512 qmin = _mm512_set1_ps(g->qmin), qmax = _mm512_set1_ps(g->qmax);
    __m512 ia = _mm512_loadu_ps(inv);
    __m512d s0 = _mm512_loadu_pd(s), s1 = _mm512_loadu_pd(s + 8);
    __m512d e0 = _mm512_setzero_pd(), e1 = e0;
    const float *x = g->x;
    const double *w = g->w;
    for (size_t k = 0; k < g->n; k++) {
        __m512 xb = _mm512_set1_ps(x[k]);
        __m512d xdb = _mm512_set1_pd(xd[k]);
        __m512d wb = weighted ? _mm512_set1_pd(w[k]) : xdb;
        __m512 qa = code16(xb, ia, qmin, qmax);
        e0 = term(e0, xdb, wb, s0, lo8(qa), weighted);
        e1 = term(e1, xdb, wb, s1, hi8(qa), weighted);
    }
    _mm512_storeu_pd(e, e0);
    _mm512_storeu_pd(e + 8, e1);
}

/* 8 lanes over the whole group (the codes in a 256-bit vector). */
AVX512_INLINE void eval8(const nf_search_group *g, const double *xd, const double *s, const float *inv, double *e,
                         bool weighted)
{
    const __m256 qmin = _mm256_set1_ps(g->qmin), qmax = _mm256_set1_ps(g->qmax);
    __m256 ia = _mm256_loadu_ps(inv);
    __m512d s0 = _mm512_loadu_pd(s);
    __m512d e0 = _mm512_setzero_pd();
    const float *x = g->x;
    const double *w = g->w;
    for (size_t k = 0; k < g->n; k++) {
        __m256 p = _mm256_mul_ps(_mm256_set1_ps(x[k]), ia);
        p = _mm256_min_ps(_mm256_max_ps(p, qmin), qmax);
        p = _mm256_round_ps(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __m512d xdb = _mm512_set1_pd(xd[k]);
        __m512d wb = weighted ? _mm512_set1_pd(w[k]) : xdb;
        e0 = term(e0, xdb, wb, s0, _mm512_cvtps_pd(p), weighted);
    }
    _mm512_storeu_pd(e, e0);
}

AVX512_INLINE void eval_all(const nf_search_group *g, const double *xd, const double *s, const float *inv,
                                 size_t m, double *e, bool weighted)
{
    size_t j = 0;
    for (; j + 16 < m; j += 32) eval32(g, xd, s + j, inv + j, e + j, weighted);
    if (j + 8 < m) eval16(g, xd, s + j, inv + j, e + j, weighted);
    else if (j < m) eval8(g, xd, s + j, inv + j, e + j, weighted);
}

static __attribute__((noinline)) AVX512_ATTR void eval_weighted(const nf_search_group *g, const double *xd, const double *s,
                                                         const float *inv, size_t m, double *e)
{
    eval_all(g, xd, s, inv, m, e, true);
}

static __attribute__((noinline)) AVX512_ATTR void eval_plain(const nf_search_group *g, const double *xd, const double *s,
                                                      const float *inv, size_t m, double *e)
{
    eval_all(g, xd, s, inv, m, e, false);
}

AVX512_INLINE void search_eval(const nf_search_group *g, const double *xd, const double *s, const float *inv,
                               size_t m, double *e)
{
    if (g->w) eval_weighted(g, xd, s, inv, m, e);
    else eval_plain(g, xd, s, inv, m, e);
}

/* Screening sums (search_algo.inc): binary32, fused, two accumulators per vector (even and odd
 * k), 16 lanes per vector; the codes are the reference's. */
AVX512_INLINE __m512 sterm(__m512 acc, __m512 xb, __m512 wb, __m512 s, __m512 inv, __m512 qmin, __m512 qmax,
                           bool weighted)
{
    __m512 q = code16(xb, inv, qmin, qmax);
    __m512 r = _mm512_fnmadd_ps(s, q, xb);
    __m512 wr = weighted ? _mm512_mul_ps(wb, r) : r;
    return _mm512_fmadd_ps(wr, r, acc);
}

AVX512_INLINE void screen_blocks(const nf_search_group *g, const float *sf, const float *inv, double *a, size_t nb,
                                 bool weighted)
{
    const __m512 qmin = _mm512_set1_ps(g->qmin), qmax = _mm512_set1_ps(g->qmax);
    __m512 s[4], iv[4], acc0[4], acc1[4];
#pragma GCC unroll 4
    for (size_t b = 0; b < nb; b++) {
        s[b] = _mm512_loadu_ps(sf + 16 * b);
        iv[b] = _mm512_loadu_ps(inv + 16 * b);
        acc0[b] = acc1[b] = _mm512_setzero_ps();
    }
    const float *x = g->x, *w = g->wf;
    size_t n = g->n, k = 0;
    for (; k + 2 <= n; k += 2) {
        __m512 x0 = _mm512_set1_ps(x[k]), x1 = _mm512_set1_ps(x[k + 1]);
        __m512 w0 = weighted ? _mm512_set1_ps(w[k]) : x0, w1 = weighted ? _mm512_set1_ps(w[k + 1]) : x1;
#pragma GCC unroll 4
        for (size_t b = 0; b < nb; b++) {
            acc0[b] = sterm(acc0[b], x0, w0, s[b], iv[b], qmin, qmax, weighted);
            acc1[b] = sterm(acc1[b], x1, w1, s[b], iv[b], qmin, qmax, weighted);
        }
    }
    if (k < n) {
        __m512 x0 = _mm512_set1_ps(x[k]);
        __m512 w0 = weighted ? _mm512_set1_ps(w[k]) : x0;
#pragma GCC unroll 4
        for (size_t b = 0; b < nb; b++) acc0[b] = sterm(acc0[b], x0, w0, s[b], iv[b], qmin, qmax, weighted);
    }
#pragma GCC unroll 4
    for (size_t b = 0; b < nb; b++) {
        __m512 t = _mm512_add_ps(acc0[b], acc1[b]);
        _mm512_storeu_pd(a + 16 * b, lo8(t));
        _mm512_storeu_pd(a + 16 * b + 8, hi8(t));
    }
}

AVX512_INLINE void screen_all(const nf_search_group *g, const float *sf, const float *inv, size_t m, double *a,
                                   bool weighted)
{
    /* up to 4 blocks of 16 per pass over the group (the lists hold at most 66 candidates) */
    for (size_t j = 0; j < m; j += 64) {
        switch ((m - j + 15) / 16) {
        case 1: screen_blocks(g, sf + j, inv + j, a + j, 1, weighted); break;
        case 2: screen_blocks(g, sf + j, inv + j, a + j, 2, weighted); break;
        case 3: screen_blocks(g, sf + j, inv + j, a + j, 3, weighted); break;
        default: screen_blocks(g, sf + j, inv + j, a + j, 4, weighted); break;
        }
    }
}

/* One instance each with and without importance, so that the flag folds away. */
static __attribute__((noinline)) AVX512_ATTR void screen_weighted(const nf_search_group *g, const float *sf,
                                                           const float *inv, size_t m, double *a)
{
    screen_all(g, sf, inv, m, a, true);
}

static __attribute__((noinline)) AVX512_ATTR void screen_plain(const nf_search_group *g, const float *sf, const float *inv,
                                                        size_t m, double *a)
{
    screen_all(g, sf, inv, m, a, false);
}

/* A few candidates (the second round's): the group's elements side by side instead, 16 per
 * vector, one candidate after another, then a horizontal sum (any order is fine, see
 * search_algo.inc); lanes past n load as 0 and add 0. */
static AVX512_ATTR void screen_few(const nf_search_group *g, const float *sf, const float *inv, size_t m, double *a)
{
    const __m512 qmin = _mm512_set1_ps(g->qmin), qmax = _mm512_set1_ps(g->qmax);
    const float *x = g->x, *w = g->wf;
    size_t n = g->n;
    for (size_t j = 0; j < m; j++) {
        __m512 s = _mm512_set1_ps(sf[j]), iv = _mm512_set1_ps(inv[j]), acc = _mm512_setzero_ps();
        for (size_t i = 0; i < n; i += 16) {
            size_t left = n - i;
            __mmask16 k = (__mmask16)(left >= 16 ? 0xFFFFu : (1u << left) - 1u);
            __m512 xv = _mm512_maskz_loadu_ps(k, x + i);
            __m512 wv = w ? _mm512_maskz_loadu_ps(k, w + i) : xv;
            acc = sterm(acc, xv, wv, s, iv, qmin, qmax, w != NULL);
        }
        a[j] = (double)_mm512_reduce_add_ps(acc);
    }
}

AVX512_INLINE void search_screen(const nf_search_group *g, const float *sf, const float *inv, size_t m, double *a)
{
    if (m <= 4) screen_few(g, sf, inv, m, a);
    else if (g->wf) screen_weighted(g, sf, inv, m, a);
    else screen_plain(g, sf, inv, m, a);
}

/* The least-squares sums, 8 lanes, then a horizontal sum (search_algo.inc: any order). */
AVX512_INLINE void search_lsq_sums(const nf_search_group *g, const double *xd, const int8_t *q, double *num,
                                   double *den)
{
    __m512d nv = _mm512_setzero_pd(), dv = nv;
    for (size_t i = 0; i < g->n; i += 8) {
        size_t left = g->n - i;
        __mmask8 k = (__mmask8)(left >= 8 ? 0xFFu : (1u << left) - 1u);
        __m512d x = _mm512_maskz_loadu_pd(k, xd + i);
        __m512d c = _mm512_cvtepi32_pd(_mm256_cvtepi8_epi32(_mm_maskz_loadu_epi8(k, q + i)));
        if (g->w) {
            __m512d w = _mm512_maskz_loadu_pd(k, g->w + i);
            nv = _mm512_add_pd(nv, _mm512_mul_pd(_mm512_mul_pd(w, x), c));
            dv = _mm512_add_pd(dv, _mm512_mul_pd(_mm512_mul_pd(w, c), c));
        } else {
            nv = _mm512_add_pd(nv, _mm512_mul_pd(x, c));
            dv = _mm512_add_pd(dv, _mm512_mul_pd(c, c));
        }
    }
    *num = _mm512_reduce_add_pd(nv);
    *den = _mm512_reduce_add_pd(dv);
}

AVX512_INLINE void search_codes(const nf_search_group *g, float inv, int8_t *q)
{
    const __m512 qmin = _mm512_set1_ps(g->qmin), qmax = _mm512_set1_ps(g->qmax), vi = _mm512_set1_ps(inv);
    for (size_t i = 0; i < g->n; i += 16) {
        size_t left = g->n - i;
        __mmask16 k = (__mmask16)(left >= 16 ? 0xFFFFu : (1u << left) - 1u);
        __m512 c = code16(_mm512_maskz_loadu_ps(k, g->x + i), vi, qmin, qmax);
        _mm_mask_storeu_epi8(q + i, k, _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(c)));
    }
}

#endif
