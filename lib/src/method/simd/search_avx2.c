/* grouped_search fast path for AVX2 + F16C (search_simd.h): candidates side by side, 8 per
 * binary32 vector for the codes and 4 per binary64 vector for the error, 16 per pass over the
 * group.  No FMA: every product and sum rounds on its own, as in the reference. */
#include "method/method_impl.h"
#include "method/simd/search_simd.h"

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)

#include <immintrin.h>

#define AVX2_ATTR __attribute__((target("avx2,f16c")))
#define AVX2_INLINE static inline __attribute__((always_inline, target("avx2,f16c")))
#define SEARCH_LANES 96u

AVX2_INLINE void search_round(const double *c, size_t m, uint16_t *words);
AVX2_INLINE void search_prep(const uint16_t *words, size_t m, double *s, float *sf, float *inv);
AVX2_INLINE void search_screen(const nf_search_group *g, const float *sf, const float *inv, size_t m, double *a);
AVX2_INLINE void search_lsq_sums(const nf_search_group *g, const double *xd, const int8_t *q, double *num,
                                 double *den);
AVX2_INLINE void search_eval(const nf_search_group *g, const double *xd, const double *s, const float *inv, size_t m,
                             double *e);
AVX2_INLINE void search_codes(const nf_search_group *g, float inv, int8_t *q);

/* Does words[0..m) hold the valid (nonzero) word w?  The list is zero up to SEARCH_LANES. */
#define SEARCH_HAVE_SEEN 1
AVX2_INLINE bool search_seen(const uint16_t *words, size_t m, uint16_t w)
{
    __m256i v = _mm256_set1_epi16((short)w), f = _mm256_setzero_si256();
    for (size_t i = 0; i < m; i += 16)
        f = _mm256_or_si256(f, _mm256_cmpeq_epi16(_mm256_loadu_si256((const __m256i *)(const void *)(words + i)), v));
    return _mm256_movemask_epi8(f) != 0;
}

#define SEARCH_FN nf_search_group_avx2
#define SEARCH_ATTR AVX2_ATTR
#include "method/simd/search_algo.inc"

/* round_candidate of 4 lanes at once: VCVTPD2PS (round to nearest even; |c| beyond binary32
 * becomes infinity, which binary16 keeps, as the reference's early exit for |c| >= 65536 does),
 * VCVTPS2PH imm8 = 0, then the reference's fix-up of a nonzero candidate rounding to zero. */
AVX2_INLINE void search_round(const double *c, size_t m, uint16_t *words)
{
    size_t i = 0;
    for (; i + 4 <= m; i += 4) {
        __m128i h = _mm_cvtps_ph(_mm256_cvtpd_ps(_mm256_loadu_pd(c + i)), 0);
        _mm_storel_epi64((__m128i *)(void *)(words + i), h);
    }
    if (i < m) {
        double buf[4] = {0};
        uint16_t wb[4];
        memcpy(buf, c + i, (m - i) * sizeof *buf);
        __m128i h = _mm_cvtps_ph(_mm256_cvtpd_ps(_mm256_loadu_pd(buf)), 0);
        _mm_storel_epi64((__m128i *)(void *)wb, h);
        memcpy(words + i, wb, (m - i) * sizeof *wb);
    }
    /* the reference's fix-up of a nonzero candidate rounding to zero, where there is a zero
     * magnitude among the words */
    const __m128i mag = _mm_set1_epi16(0x7FFF), zero = _mm_setzero_si128();
    for (i = 0; i < m; i += 8) {
        uint16_t wb[8] = {0xFFFFu, 0xFFFFu, 0xFFFFu, 0xFFFFu, 0xFFFFu, 0xFFFFu, 0xFFFFu, 0xFFFFu};
        memcpy(wb, words + i, (m - i < 8 ? m - i : 8) * sizeof *wb);
        __m128i z = _mm_cmpeq_epi16(_mm_and_si128(_mm_loadu_si128((const __m128i *)(const void *)wb), mag), zero);
        if (_mm_movemask_epi8(z))
            for (size_t j = i; j < i + 8 && j < m; j++)
                if ((words[j] & 0x7FFFu) == 0 && c[j] != 0.0) words[j] = (uint16_t)(c[j] < 0.0 ? 0x8001u : 0x0001u);
    }
}

/* s = f16 value (VCVTPH2PS is exact, then exactly to binary64), inv = f32(1 / value). */
AVX2_INLINE void search_prep(const uint16_t *words, size_t m, double *s, float *sf, float *inv)
{
    uint16_t wb[SEARCH_LANES];
    memcpy(wb, words, m * sizeof *wb);
    size_t end = (m + 31) & ~(size_t)31;
    for (size_t i = m; i < end; i++) wb[i] = 0x3C00u; /* 1.0: finite padding lanes */
    const __m256 one = _mm256_set1_ps(1.0f);
    for (size_t i = 0; i < end; i += 8) {
        __m256 v = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(wb + i)));
        _mm256_storeu_ps(inv + i, _mm256_div_ps(one, v));
        _mm256_storeu_ps(sf + i, v);
        _mm256_storeu_pd(s + i, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
        _mm256_storeu_pd(s + i + 4, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    }
}

/* The code of 8 lanes as floats: clamp(x * inv) rounded to nearest even (VROUNDPS ignores
 * MXCSR with these flags), the reference's code (method_impl.h: clamping first gives the same
 * integer; x * inv is never NaN). */
AVX2_INLINE __m256 code8(__m256 xb, __m256 inv, __m256 qmin, __m256 qmax)
{
    __m256 p = _mm256_mul_ps(xb, inv);
    p = _mm256_min_ps(_mm256_max_ps(p, qmin), qmax);
    return _mm256_round_ps(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

/* e += (w * r) * r, or r * r, with r = x - s * q (s * q is exact, then one rounding) */
AVX2_INLINE __m256d term(__m256d e, __m256d xdb, __m256d wb, __m256d s, __m256d q, bool weighted)
{
    __m256d r = _mm256_sub_pd(xdb, _mm256_mul_pd(s, q));
    __m256d wr = weighted ? _mm256_mul_pd(wb, r) : r;
    return _mm256_add_pd(e, _mm256_mul_pd(wr, r));
}

/* 16 lanes (two blocks of 8) over the whole group. */
AVX2_INLINE void eval16(const nf_search_group *g, const double *xd, const double *s, const float *inv, double *e,
                        bool weighted)
{
    const __m256 qmin = _mm256_set1_ps(g->qmin), qmax = _mm256_set1_ps(g->qmax);
    __m256 ia = _mm256_loadu_ps(inv), ib = _mm256_loadu_ps(inv + 8);
    __m256d s0 = _mm256_loadu_pd(s), s1 = _mm256_loadu_pd(s + 4), s2 = _mm256_loadu_pd(s + 8),
            s3 = _mm256_loadu_pd(s + 12);
    __m256d e0 = _mm256_setzero_pd(), e1 = e0, e2 = e0, e3 = e0;
    const float *x = g->x;
    const double *w = g->w;
    for (size_t k = 0; k < g->n; k++) {
        __m256 xb = _mm256_broadcast_ss(x + k);
        __m256d xdb = _mm256_broadcast_sd(xd + k);
        __m256d wb = weighted ? _mm256_broadcast_sd(w + k) : xdb;
        __m256 qa = code8(xb, ia, qmin, qmax), qb = code8(xb, ib, qmin, qmax);
        e0 = term(e0, xdb, wb, s0, _mm256_cvtps_pd(_mm256_castps256_ps128(qa)), weighted);
        e1 = term(e1, xdb, wb, s1, _mm256_cvtps_pd(_mm256_extractf128_ps(qa, 1)), weighted);
        e2 = term(e2, xdb, wb, s2, _mm256_cvtps_pd(_mm256_castps256_ps128(qb)), weighted);
        e3 = term(e3, xdb, wb, s3, _mm256_cvtps_pd(_mm256_extractf128_ps(qb, 1)), weighted);
    }
    _mm256_storeu_pd(e, e0);
    _mm256_storeu_pd(e + 4, e1);
    _mm256_storeu_pd(e + 8, e2);
    _mm256_storeu_pd(e + 12, e3);
}

/* 8 lanes over the whole group. */
AVX2_INLINE void eval8(const nf_search_group *g, const double *xd, const double *s, const float *inv, double *e,
                       bool weighted)
{
    const __m256 qmin = _mm256_set1_ps(g->qmin), qmax = _mm256_set1_ps(g->qmax);
    __m256 ia = _mm256_loadu_ps(inv);
    __m256d s0 = _mm256_loadu_pd(s), s1 = _mm256_loadu_pd(s + 4);
    __m256d e0 = _mm256_setzero_pd(), e1 = e0;
    const float *x = g->x;
    const double *w = g->w;
    for (size_t k = 0; k < g->n; k++) {
        __m256 xb = _mm256_broadcast_ss(x + k);
        __m256d xdb = _mm256_broadcast_sd(xd + k);
        __m256d wb = weighted ? _mm256_broadcast_sd(w + k) : xdb;
        __m256 qa = code8(xb, ia, qmin, qmax);
        e0 = term(e0, xdb, wb, s0, _mm256_cvtps_pd(_mm256_castps256_ps128(qa)), weighted);
        e1 = term(e1, xdb, wb, s1, _mm256_cvtps_pd(_mm256_extractf128_ps(qa, 1)), weighted);
    }
    _mm256_storeu_pd(e, e0);
    _mm256_storeu_pd(e + 4, e1);
}

AVX2_INLINE void eval_all(const nf_search_group *g, const double *xd, const double *s, const float *inv, size_t m,
                               double *e, bool weighted)
{
    size_t j = 0;
    for (; j + 8 < m; j += 16) eval16(g, xd, s + j, inv + j, e + j, weighted);
    if (j < m) eval8(g, xd, s + j, inv + j, e + j, weighted);
}

static __attribute__((noinline)) AVX2_ATTR void eval_weighted(const nf_search_group *g, const double *xd, const double *s,
                                                         const float *inv, size_t m, double *e)
{
    eval_all(g, xd, s, inv, m, e, true);
}

static __attribute__((noinline)) AVX2_ATTR void eval_plain(const nf_search_group *g, const double *xd, const double *s,
                                                      const float *inv, size_t m, double *e)
{
    eval_all(g, xd, s, inv, m, e, false);
}

AVX2_INLINE void search_eval(const nf_search_group *g, const double *xd, const double *s, const float *inv, size_t m,
                             double *e)
{
    if (g->w) eval_weighted(g, xd, s, inv, m, e);
    else eval_plain(g, xd, s, inv, m, e);
}

/* Screening sums (search_algo.inc): binary32, unfused, two accumulators per vector (even and
 * odd k), 8 lanes per vector; the codes are the reference's. */
AVX2_INLINE __m256 sterm(__m256 acc, __m256 xb, __m256 wb, __m256 s, __m256 inv, __m256 qmin, __m256 qmax,
                         bool weighted)
{
    __m256 q = code8(xb, inv, qmin, qmax);
    __m256 r = _mm256_sub_ps(xb, _mm256_mul_ps(s, q));
    __m256 wr = weighted ? _mm256_mul_ps(wb, r) : r;
    return _mm256_add_ps(acc, _mm256_mul_ps(wr, r));
}

AVX2_INLINE void screen_blocks(const nf_search_group *g, const float *sf, const float *inv, double *a, size_t nb,
                               bool weighted)
{
    const __m256 qmin = _mm256_set1_ps(g->qmin), qmax = _mm256_set1_ps(g->qmax);
    __m256 s[4], iv[4], acc0[4], acc1[4];
#pragma GCC unroll 4
    for (size_t b = 0; b < nb; b++) {
        s[b] = _mm256_loadu_ps(sf + 8 * b);
        iv[b] = _mm256_loadu_ps(inv + 8 * b);
        acc0[b] = acc1[b] = _mm256_setzero_ps();
    }
    const float *x = g->x, *w = g->wf;
    size_t n = g->n, k = 0;
    for (; k + 2 <= n; k += 2) {
        __m256 x0 = _mm256_broadcast_ss(x + k), x1 = _mm256_broadcast_ss(x + k + 1);
        __m256 w0 = weighted ? _mm256_broadcast_ss(w + k) : x0, w1 = weighted ? _mm256_broadcast_ss(w + k + 1) : x1;
#pragma GCC unroll 4
        for (size_t b = 0; b < nb; b++) {
            acc0[b] = sterm(acc0[b], x0, w0, s[b], iv[b], qmin, qmax, weighted);
            acc1[b] = sterm(acc1[b], x1, w1, s[b], iv[b], qmin, qmax, weighted);
        }
    }
    if (k < n) {
        __m256 x0 = _mm256_broadcast_ss(x + k);
        __m256 w0 = weighted ? _mm256_broadcast_ss(w + k) : x0;
#pragma GCC unroll 4
        for (size_t b = 0; b < nb; b++) acc0[b] = sterm(acc0[b], x0, w0, s[b], iv[b], qmin, qmax, weighted);
    }
#pragma GCC unroll 4
    for (size_t b = 0; b < nb; b++) {
        __m256 t = _mm256_add_ps(acc0[b], acc1[b]);
        _mm256_storeu_pd(a + 8 * b, _mm256_cvtps_pd(_mm256_castps256_ps128(t)));
        _mm256_storeu_pd(a + 8 * b + 4, _mm256_cvtps_pd(_mm256_extractf128_ps(t, 1)));
    }
}

AVX2_INLINE void screen_all(const nf_search_group *g, const float *sf, const float *inv, size_t m, double *a,
                                 bool weighted)
{
    size_t j = 0;
    for (; j + 16 < m; j += 32) screen_blocks(g, sf + j, inv + j, a + j, 4, weighted);
    for (; j < m; j += 8) screen_blocks(g, sf + j, inv + j, a + j, 1, weighted);
}

/* One instance each with and without importance, so that the flag folds away. */
static __attribute__((noinline)) AVX2_ATTR void screen_weighted(const nf_search_group *g, const float *sf,
                                                           const float *inv, size_t m, double *a)
{
    screen_all(g, sf, inv, m, a, true);
}

static __attribute__((noinline)) AVX2_ATTR void screen_plain(const nf_search_group *g, const float *sf, const float *inv,
                                                        size_t m, double *a)
{
    screen_all(g, sf, inv, m, a, false);
}

/* A few candidates (the second round's): the group's elements side by side instead, 8 per
 * vector (a zero-padded copy for the tail), one candidate after another, then a horizontal sum
 * (any order is fine, see search_algo.inc); zero lanes add 0. */
static AVX2_ATTR void screen_few(const nf_search_group *g, const float *sf, const float *inv, size_t m, double *a)
{
    const __m256 qmin = _mm256_set1_ps(g->qmin), qmax = _mm256_set1_ps(g->qmax);
    size_t n = g->n, full = n & ~(size_t)7;
    float xt[8] = {0}, wt[8] = {0};
    memcpy(xt, g->x + full, (n - full) * sizeof *xt);
    if (g->wf) memcpy(wt, g->wf + full, (n - full) * sizeof *wt);
    for (size_t j = 0; j < m; j++) {
        __m256 s = _mm256_set1_ps(sf[j]), iv = _mm256_set1_ps(inv[j]);
        __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0;
        size_t i = 0;
        for (; i + 16 <= full; i += 16) {
            __m256 x0 = _mm256_loadu_ps(g->x + i), x1 = _mm256_loadu_ps(g->x + i + 8);
            __m256 w0 = g->wf ? _mm256_loadu_ps(g->wf + i) : x0, w1 = g->wf ? _mm256_loadu_ps(g->wf + i + 8) : x1;
            acc0 = sterm(acc0, x0, w0, s, iv, qmin, qmax, g->wf != NULL);
            acc1 = sterm(acc1, x1, w1, s, iv, qmin, qmax, g->wf != NULL);
        }
        if (i < full) {
            __m256 x0 = _mm256_loadu_ps(g->x + i);
            __m256 w0 = g->wf ? _mm256_loadu_ps(g->wf + i) : x0;
            acc0 = sterm(acc0, x0, w0, s, iv, qmin, qmax, g->wf != NULL);
        }
        if (full < n) {
            __m256 x0 = _mm256_loadu_ps(xt);
            __m256 w0 = g->wf ? _mm256_loadu_ps(wt) : x0;
            acc1 = sterm(acc1, x0, w0, s, iv, qmin, qmax, g->wf != NULL);
        }
        float t[8];
        _mm256_storeu_ps(t, _mm256_add_ps(acc0, acc1));
        a[j] = (double)(((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7])));
    }
}

AVX2_INLINE void search_screen(const nf_search_group *g, const float *sf, const float *inv, size_t m, double *a)
{
    if (m <= 4) screen_few(g, sf, inv, m, a);
    else if (g->wf) screen_weighted(g, sf, inv, m, a);
    else screen_plain(g, sf, inv, m, a);
}

/* The least-squares sums, 4 lanes, a horizontal sum, the tail (search_algo.inc: any order). */
AVX2_INLINE void search_lsq_sums(const nf_search_group *g, const double *xd, const int8_t *q, double *num,
                                 double *den)
{
    __m256d nv = _mm256_setzero_pd(), dv = nv;
    size_t i = 0;
    for (; i + 4 <= g->n; i += 4) {
        int32_t q4;
        memcpy(&q4, q + i, sizeof q4);
        __m256d x = _mm256_loadu_pd(xd + i);
        __m256d c = _mm256_cvtepi32_pd(_mm_cvtepi8_epi32(_mm_cvtsi32_si128(q4)));
        if (g->w) {
            __m256d w = _mm256_loadu_pd(g->w + i);
            nv = _mm256_add_pd(nv, _mm256_mul_pd(_mm256_mul_pd(w, x), c));
            dv = _mm256_add_pd(dv, _mm256_mul_pd(_mm256_mul_pd(w, c), c));
        } else {
            nv = _mm256_add_pd(nv, _mm256_mul_pd(x, c));
            dv = _mm256_add_pd(dv, _mm256_mul_pd(c, c));
        }
    }
    double nb[4], db[4];
    _mm256_storeu_pd(nb, nv);
    _mm256_storeu_pd(db, dv);
    double sn = (nb[0] + nb[1]) + (nb[2] + nb[3]), sd = (db[0] + db[1]) + (db[2] + db[3]);
    for (; i < g->n; i++) {
        double w = g->w ? g->w[i] : 1.0, c = (double)q[i];
        sn += (w * xd[i]) * c;
        sd += (w * c) * c;
    }
    *num = sn;
    *den = sd;
}

AVX2_INLINE void search_codes(const nf_search_group *g, float inv, int8_t *q)
{
    const __m256 qmin = _mm256_set1_ps(g->qmin), qmax = _mm256_set1_ps(g->qmax), vi = _mm256_set1_ps(inv);
    size_t i = 0;
    for (; i + 8 <= g->n; i += 8) {
        __m256i c = _mm256_cvtps_epi32(code8(_mm256_loadu_ps(g->x + i), vi, qmin, qmax));
        __m128i h = _mm_packs_epi32(_mm256_castsi256_si128(c), _mm256_extracti128_si256(c, 1));
        _mm_storel_epi64((__m128i *)(void *)(q + i), _mm_packs_epi16(h, h));
    }
    for (; i < g->n; i++) q[i] = nf_grouped_code(g->x[i], inv, g->qmin, g->qmax);
}

#endif
