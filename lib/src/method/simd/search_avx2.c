/* grouped_search fast path for AVX2 + F16C (search_simd.h): 8 groups side by side, one per
 * binary32 lane (two binary64 vectors of 4 where the reference's binary64 sums are formed); the
 * exact errors of the few candidates a group needs them for take the candidates side by side
 * instead, 4 per binary64 vector.  No FMA: every product and sum rounds on its own, as in the
 * reference. */
#include "common/simd_target.h"
#include "method/method_impl.h"
#include "method/simd/search_simd.h"

#if NF_X86_KERNELS

#include <immintrin.h>

#define SEARCH_L 8u
/* The screening's residuals are s (u - q) with u = f32(x * inv) (screen_n below). */
#define SEARCH_BETA 0x1.1p-23

#define SEARCH_HAVE_VECTOR_ROWS 1
#define SEARCH_KERNEL_INLINE NF_AVX2_INLINE
#include "method/simd/search_kernels.inc"

#define SEARCH_BATCH_FN search_batch_avx2
#define SEARCH_ATTR NF_AVX2_FN
#include "method/simd/search_algo.inc"

/* The low and high 4 lanes of a binary32 vector, widened exactly to binary64. */
NF_AVX2_INLINE __m256d lo4(__m256 v) { return _mm256_cvtps_pd(_mm256_castps256_ps128(v)); }
NF_AVX2_INLINE __m256d hi4(__m256 v) { return _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)); }

/* ---------------------------------------------------------------- batch layout */

/* 8 rows of 8 floats to 8 columns: unpack pairs, then pairs of pairs, then 128-bit halves. */
NF_AVX2_INLINE void transpose8(const __m256 r[8], float *out /* 8 x 8, row k at out + 8 k */)
{
    __m256 t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);         /* rows i..i+3, elements 0 | 4 */
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);     /* 1 | 5 */
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44); /* 2 | 6 */
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE); /* 3 | 7 */
    }
    for (int e = 0; e < 4; e++) {
        _mm256_store_ps(out + 8 * e, _mm256_permute2f128_ps(u[e], u[4 + e], 0x20));
        _mm256_store_ps(out + 8 * (e + 4), _mm256_permute2f128_ps(u[e], u[4 + e], 0x31));
    }
}

NF_AVX2_INLINE void transpose_rows(const float *const *src, size_t G, float (*dst)[SEARCH_L])
{
    size_t k = 0;
    for (; k + 8 <= G; k += 8) {
        __m256 r[8];
        for (int l = 0; l < 8; l++) r[l] = _mm256_loadu_ps(src[l] + k);
        transpose8(r, dst[k]);
    }
    for (; k < G; k++)
        for (size_t l = 0; l < 8; l++) dst[k][l] = src[l][k];
}

NF_AVX2_INLINE void search_transpose(const nf_search_shape *sh, const nf_search_group *const *g, search_lanes *b)
{
    (void)sh;
    const float *src[8];
    for (int l = 0; l < 8; l++) src[l] = g[l]->x;
    transpose_rows(src, b->G, b->x);
    if (b->weighted) {
        for (int l = 0; l < 8; l++) src[l] = g[l]->wf;
        transpose_rows(src, b->G, b->w);
    }
    __m256 hi = _mm256_setzero_ps(), lo = hi, xx = hi;
    for (size_t k = 0; k < b->G; k++) {
        __m256 v = _mm256_load_ps(b->x[k]);
        hi = _mm256_max_ps(hi, v);
        lo = _mm256_min_ps(lo, v);
        xx = _mm256_add_ps(xx, _mm256_mul_ps(b->weighted ? _mm256_mul_ps(_mm256_load_ps(b->w[k]), v) : v, v));
    }
    _mm256_store_ps(b->xmax, hi);
    _mm256_store_ps(b->xmin, lo);
    _mm256_store_ps(b->xx, xx);
}

/* round_candidate of 8 lanes: a NaN becomes +infinity (the reference's early exit gives it the
 * infinite word; only a least-squares quotient can be NaN, so the scaled rows skip this), VCVTPD2PS (round to nearest even; |c| beyond binary32 becomes infinity,
 * which binary16 keeps), VCVTPS2PH imm8 = 0, then, where a zero magnitude appears, the
 * reference's fix-up of a nonzero candidate rounding to zero (the sign is kept by the
 * conversions, so the word becomes h | 1). */
NF_AVX2_INLINE __m128i round8(__m256d c0, __m256d c1, bool may_nan)
{
    const __m256d inf = _mm256_set1_pd(INFINITY), zero = _mm256_setzero_pd();
    if (may_nan) {
        c0 = _mm256_blendv_pd(c0, inf, _mm256_cmp_pd(c0, c0, _CMP_UNORD_Q));
        c1 = _mm256_blendv_pd(c1, inf, _mm256_cmp_pd(c1, c1, _CMP_UNORD_Q));
    }
    __m128i h = _mm256_cvtps_ph(_mm256_set_m128(_mm256_cvtpd_ps(c1), _mm256_cvtpd_ps(c0)), 0);
    __m128i z = _mm_cmpeq_epi16(_mm_and_si128(h, _mm_set1_epi16(0x7FFF)), _mm_setzero_si128());
    if (_mm_movemask_epi8(z)) {
        /* nonzero candidates as 16-bit lane masks: the low halves of the 64-bit compare masks */
        __m256i n0 = _mm256_castpd_si256(_mm256_cmp_pd(c0, zero, _CMP_NEQ_UQ));
        __m256i n1 = _mm256_castpd_si256(_mm256_cmp_pd(c1, zero, _CMP_NEQ_UQ));
        const __m256i pick = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
        __m128i a = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(n0, pick));
        __m128i b = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(n1, pick));
        __m128i nz = _mm_packs_epi32(a, b);
        h = _mm_or_si128(h, _mm_and_si128(_mm_and_si128(z, nz), _mm_set1_epi16(1)));
    }
    return h;
}

NF_AVX2_INLINE void search_round(const double *c, uint16_t *w)
{
    _mm_store_si128((__m128i *)(void *)w, round8(_mm256_load_pd(c), _mm256_load_pd(c + 4), true));
}

/* v: finite or infinite values (step 1-3 bases, the fit's value), r > 0: never NaN. */
NF_AVX2_INLINE void search_scaled_round(const double *v, double r, uint16_t *w)
{
    const __m256d rv = _mm256_set1_pd(r);
    __m128i h = round8(_mm256_mul_pd(_mm256_load_pd(v), rv), _mm256_mul_pd(_mm256_load_pd(v + 4), rv), false);
    _mm_store_si128((__m128i *)(void *)w, h);
}

/* step_word: the magnitude m + n kept where m != 0 and m + n lies in [1, 0x7BFF], else 0
 * (m + n - 1 <= 0x7BFE unsigned, as max_epu16 tests it) */
NF_AVX2_INLINE void search_step_row(const uint16_t *v, int n, uint16_t *w)
{
    __m128i x = _mm_load_si128((const __m128i *)(const void *)v);
    __m128i mag = _mm_and_si128(x, _mm_set1_epi16(0x7FFF));
    __m128i m = _mm_add_epi16(mag, _mm_set1_epi16((short)n));
    __m128i m1 = _mm_sub_epi16(m, _mm_set1_epi16(1));
    __m128i in = _mm_cmpeq_epi16(_mm_max_epu16(m1, _mm_set1_epi16(0x7BFE)), _mm_set1_epi16(0x7BFE));
    __m128i ok = _mm_andnot_si128(_mm_cmpeq_epi16(mag, _mm_setzero_si128()), in);
    __m128i r = _mm_or_si128(_mm_and_si128(x, _mm_set1_epi16((short)0x8000)), m);
    _mm_store_si128((__m128i *)(void *)w, _mm_and_si128(ok, r));
}

/* valid = nonzero magnitude, not infinite or NaN, positive unless negative scales */
NF_AVX2_INLINE void search_validate(search_cands *C, size_t j, const uint16_t *canonical, bool neg)
{
    __m128i w = _mm_load_si128((const __m128i *)(const void *)C->word[j]);
    __m128i bad = _mm_cmpeq_epi16(_mm_and_si128(w, _mm_set1_epi16(0x7FFF)), _mm_setzero_si128());
    const __m128i e = _mm_set1_epi16(0x7C00);
    bad = _mm_or_si128(bad, _mm_cmpeq_epi16(_mm_and_si128(w, e), e));
    if (!neg) bad = _mm_or_si128(bad, _mm_srai_epi16(w, 15));
    __m128i cw = _mm_load_si128((const __m128i *)(const void *)canonical);
    _mm_store_si128((__m128i *)(void *)C->ok[j], _mm_xor_si128(bad, _mm_set1_epi16(-1)));
    _mm_store_si128((__m128i *)(void *)C->ew[j], _mm_blendv_epi8(w, cw, bad));
    C->any[j] = _mm_movemask_epi8(bad) != 0xFFFF;
}

/* search_algo.inc's search_unlist: one comparison per first-round row */
NF_AVX2_INLINE void search_unlist(search_cands *C, size_t j, const uint16_t *canonical)
{
    __m128i w = _mm_load_si128((const __m128i *)(const void *)C->word[j]), listed = _mm_setzero_si128();
    for (size_t k = 0; k < SC_FIRST; k++)
        listed = _mm_or_si128(listed, _mm_cmpeq_epi16(_mm_load_si128((const __m128i *)(const void *)C->word[k]), w));
    __m128i ok = _mm_andnot_si128(listed, _mm_load_si128((const __m128i *)(const void *)C->ok[j]));
    __m128i cw = _mm_load_si128((const __m128i *)(const void *)canonical);
    _mm_store_si128((__m128i *)(void *)C->ok[j], ok);
    _mm_store_si128((__m128i *)(void *)C->ew[j], _mm_blendv_epi8(cw, w, ok));
    C->any[j] = _mm_movemask_epi8(ok) != 0;
}

/* search_algo.inc's search_amin and search_survivors, 8 lanes per operation (words widened
 * to 32-bit lanes). */
NF_AVX2_INLINE void search_amin(search_cands *C, const uint8_t *list, size_t m, float *amin)
{
    const __m256 inf = _mm256_set1_ps(INFINITY);
    __m256 lo = inf;
    for (size_t i = 0; i < m; i++) {
        size_t j = list[i];
        __m256 ok = _mm256_castsi256_ps(_mm256_cvtepi16_epi32(_mm_load_si128((const __m128i *)(const void *)C->ok[j])));
        __m256 a = _mm256_blendv_ps(inf, _mm256_load_ps(C->a[j]), ok);
        _mm256_store_ps(C->a[j], a);
        lo = _mm256_min_ps(lo, a);
    }
    _mm256_store_ps(amin, lo);
}

NF_AVX2_INLINE void search_survivors(const search_cands *C, const uint8_t *list, size_t m, const float *thr,
                                     uint8_t *first, uint16_t *extra)
{
    const __m256 th = _mm256_load_ps(thr);
    __m256i fst = _mm256_set1_epi32(0xFF), fw = _mm256_setzero_si256(), more = fw, none = _mm256_set1_epi32(-1);
    for (size_t i = 0; i < m; i++) {
        size_t j = list[i];
        __m256i sv = _mm256_castps_si256(_mm256_cmp_ps(_mm256_load_ps(C->a[j]), th, _CMP_LE_OQ));
        __m256i ew = _mm256_cvtepu16_epi32(_mm_load_si128((const __m128i *)(const void *)C->ew[j]));
        __m256i diff = _mm256_xor_si256(_mm256_cmpeq_epi32(ew, fw), _mm256_set1_epi32(-1));
        more = _mm256_or_si256(more, _mm256_andnot_si256(none, _mm256_and_si256(sv, diff)));
        __m256i now = _mm256_and_si256(sv, none);
        fst = _mm256_blendv_epi8(fst, _mm256_set1_epi32((int)j), now);
        fw = _mm256_blendv_epi8(fw, ew, now);
        none = _mm256_andnot_si256(now, none);
    }
    _Alignas(32) int32_t f[8], e[8];
    _mm256_store_si256((__m256i *)(void *)f, fst);
    _mm256_store_si256((__m256i *)(void *)e, more);
    for (size_t l = 0; l < 8; l++) {
        first[l] = (uint8_t)f[l];
        extra[l] = (uint16_t)(e[l] != 0);
    }
}

/* absmax_scale lane-wise: VDIVPS (correctly rounded, as the binary32 division), VCVTPS2PH
 * imm8 = 0 (nf_f32_to_f16 for these finite positive values), 0 made 0x0001. */
NF_AVX2_INLINE void search_canonical(const float *amax, float den, uint16_t *w)
{
    __m128i h = _mm256_cvtps_ph(_mm256_div_ps(_mm256_load_ps(amax), _mm256_set1_ps(den)), 0);
    __m128i z = _mm_cmpeq_epi16(h, _mm_setzero_si128());
    _mm_store_si128((__m128i *)(void *)w, _mm_or_si128(h, _mm_and_si128(z, _mm_set1_epi16(1))));
}

/* search_algo.inc's search_same_codes, the same binary64 operations 4 lanes at a time. */
NF_AVX2_INLINE __m256d abs4(__m256d v) { return _mm256_andnot_pd(_mm256_set1_pd(-0.0), v); }

NF_AVX2_INLINE void search_same_lanes(const float *si, const double *sc, const double *num, const double *den,
                                      const double *sum_up, int8_t *d)
{
    const __m256 sv = _mm256_load_ps(si);
    const __m256d two = _mm256_set1_pd(2.0), c43 = _mm256_set1_pd(0x1p-43), c51 = _mm256_set1_pd(0x1p-51),
                  c44 = _mm256_set1_pd(0x1p-44), tiny = _mm256_set1_pd(0x1p-999), zero = _mm256_setzero_pd();
    for (int h = 0; h < 2; h++) {
        __m256d a = h ? hi4(sv) : lo4(sv), c = _mm256_load_pd(sc + 4 * h);
        __m256d n = _mm256_load_pd(num + 4 * h), dn = _mm256_load_pd(den + 4 * h);
        __m256d sigma = _mm256_add_pd(a, c), delta = _mm256_sub_pd(a, c);
        __m256d R = _mm256_sub_pd(_mm256_mul_pd(sigma, dn), _mm256_mul_pd(two, n)), D = _mm256_mul_pd(delta, R);
        __m256d err = _mm256_mul_pd(
            abs4(delta),
            _mm256_add_pd(
                _mm256_mul_pd(_mm256_add_pd(_mm256_mul_pd(abs4(sigma), dn), _mm256_mul_pd(two, abs4(n))), c43),
                _mm256_mul_pd(abs4(R), c51)));
        __m256d K = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(_mm256_load_pd(sum_up + 4 * h), c44), err), tiny);
        int better = _mm256_movemask_pd(_mm256_cmp_pd(D, _mm256_sub_pd(zero, K), _CMP_LT_OQ));
        int worse = _mm256_movemask_pd(_mm256_cmp_pd(D, K, _CMP_GE_OQ));
        for (int l = 0; l < 4; l++) d[4 * h + l] = (int8_t)((better >> l) & 1 ? 1 : (worse >> l) & 1 ? 0 : -1);
    }
}

/* sf = the binary16 value (VCVTPH2PS is exact), inv = f32(1 / sf). */
NF_AVX2_INLINE void search_prep(const uint16_t *w, float *sf, float *inv)
{
    __m256 v = _mm256_cvtph_ps(_mm_load_si128((const __m128i *)(const void *)w));
    _mm256_store_ps(sf, v);
    _mm256_store_ps(inv, _mm256_div_ps(_mm256_set1_ps(1.0f), v));
}

/* ---------------------------------------------------------------- codes */

/* clamp(x * inv) rounded to nearest even (the reference's nf_grouped_code): the clamps that
 * can matter (CLAMP_LO, CLAMP_HI; search_simd.h), then + 1.5 * 2^23 - 1.5 * 2^23. */
#define CLAMP_LO 1
#define CLAMP_HI 2
NF_AVX2_INLINE __m256 code8(__m256 x, __m256 inv, __m256 qmin, __m256 qmax, int clamp)
{
    const __m256 magic = _mm256_set1_ps(12582912.0f);
    __m256 n = _mm256_mul_ps(x, inv);
    if (clamp & CLAMP_LO) n = _mm256_max_ps(n, qmin);
    if (clamp & CLAMP_HI) n = _mm256_min_ps(n, qmax);
    return _mm256_sub_ps(_mm256_add_ps(n, magic), magic);
}


/* ---------------------------------------------------------------- screening */

/* nc (1..4) candidates over all 8 lanes: binary32, unfused; the codes are the reference's.
 * Scaled (the usual form): with u = f32(x * inv) and its code q, the sum of w (u - q)^2 times
 * s^2 (exact: 22 significant bits).  s (u - q) is within |x| 2^-23 (1 + 2^-25) < SEARCH_BETA |x|
 * of the reference's residual x - s q (u is x / s within two roundings of a relative 2^-24:
 * inv's and the product's); u - q rounds at most once, and so does the final scaling, within
 * the n + 5 roundings search_algo.inc allows.  Used only where every |u| < 2^20
 * (nf_search_scaled_limit; search_screen checks), so that no sum overflows: |u - q| < 2^21 + 1,
 * w (u - q)^2 < 2^72, the sum of at most 128 terms times s^2 < 2^32 below 2^111.  Otherwise
 * r = x - s q (s q exact) as the reference. */
NF_AVX2_INLINE void screen_n(const nf_search_shape *sh, const search_lanes *b, search_cands *C, const uint8_t *js,
                             int nc, int clamp, bool scaled, bool weighted)
{
    const __m256 qmin = _mm256_set1_ps(sh->qmin), qmax = _mm256_set1_ps(sh->qmax);
    const __m256 magic = _mm256_set1_ps(12582912.0f);
    __m256 acc[4];
    const float *s[4], *iv[4];
    for (int c = 0; c < nc; c++) {
        s[c] = C->sf[js[c]];
        iv[c] = C->inv[js[c]];
        acc[c] = _mm256_setzero_ps();
    }
    for (size_t k = 0; k < b->G; k++) {
        __m256 x = _mm256_load_ps(b->x[k]);
        __m256 w = weighted ? _mm256_load_ps(b->w[k]) : x;
        for (int c = 0; c < nc; c++) {
            __m256 u = _mm256_mul_ps(x, _mm256_load_ps(iv[c]));
            __m256 n = u;
            if (clamp & CLAMP_LO) n = _mm256_max_ps(n, qmin);
            if (clamp & CLAMP_HI) n = _mm256_min_ps(n, qmax);
            __m256 q = _mm256_sub_ps(_mm256_add_ps(n, magic), magic);
            __m256 r = scaled ? _mm256_sub_ps(u, q) : _mm256_sub_ps(x, _mm256_mul_ps(_mm256_load_ps(s[c]), q));
            acc[c] = _mm256_add_ps(acc[c], _mm256_mul_ps(weighted ? _mm256_mul_ps(w, r) : r, r));
        }
    }
    for (int c = 0; c < nc; c++) {
        __m256 a = acc[c];
        if (scaled) {
            __m256 sv = _mm256_load_ps(s[c]);
            a = _mm256_mul_ps(a, _mm256_mul_ps(sv, sv));
        }
        _mm256_store_ps(C->a[js[c]], a);
    }
}

#define SCREEN_DEF(name, clamp, scaled, weighted)                                                           \
    static __attribute__((noinline)) NF_AVX2_FN void name(const nf_search_shape *sh, const search_lanes *b, \
                                                          search_cands *C, const uint8_t *js, int nc)       \
    {                                                                                                       \
        switch (nc) {                                                                                       \
        case 1: screen_n(sh, b, C, js, 1, clamp, scaled, weighted); break;                                  \
        case 2: screen_n(sh, b, C, js, 2, clamp, scaled, weighted); break;                                  \
        case 3: screen_n(sh, b, C, js, 3, clamp, scaled, weighted); break;                                  \
        default: screen_n(sh, b, C, js, 4, clamp, scaled, weighted); break;                                 \
        }                                                                                                   \
    }
SCREEN_DEF(screen_p0, 0, true, false)
SCREEN_DEF(screen_p1, 1, true, false)
SCREEN_DEF(screen_p2, 2, true, false)
SCREEN_DEF(screen_p3, 3, true, false)
SCREEN_DEF(screen_w0, 0, true, true)
SCREEN_DEF(screen_w1, 1, true, true)
SCREEN_DEF(screen_w2, 2, true, true)
SCREEN_DEF(screen_w3, 3, true, true)
SCREEN_DEF(screen_pr, 3, false, false)
SCREEN_DEF(screen_wr, 3, false, true)

typedef void (*screen_fn)(const nf_search_shape *, const search_lanes *, search_cands *, const uint8_t *, int);

/* The candidates sorted by the clamps they need in some lane (search_simd.h: every code lies
 * between those of xmin and xmax; the same bounds give the largest |u|), then 4 at a time. */
static NF_AVX2_FN void search_screen(const nf_search_shape *sh, const search_lanes *b, search_cands *C,
                                     const uint8_t *list, size_t m)
{
    /* the clamps each candidate needs in some lane, or (bucket 4) the unscaled form */
    static const screen_fn fns[2][5] = {{screen_p0, screen_p1, screen_p2, screen_p3, screen_pr},
                                        {screen_w0, screen_w1, screen_w2, screen_w3, screen_wr}};
    const __m256 xmax = _mm256_load_ps(b->xmax), xmin = _mm256_load_ps(b->xmin);
    const __m256 hi_lim = _mm256_set1_ps(sh->qmax + 0.5f), lo_lim = _mm256_set1_ps(sh->qmin - 0.5f);
    const __m256 big = _mm256_set1_ps(nf_search_scaled_limit), mag = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    uint8_t bucket[5][SC_ALL];
    size_t nb[5] = {0, 0, 0, 0, 0};
    for (size_t i = 0; i < m; i++) {
        __m256 iv = _mm256_load_ps(C->inv[list[i]]);
        __m256 p = _mm256_mul_ps(xmax, iv), q = _mm256_mul_ps(xmin, iv);
        __m256 hi = _mm256_max_ps(p, q), lo = _mm256_min_ps(p, q);
        int clamp = (_mm256_movemask_ps(_mm256_cmp_ps(lo, lo_lim, _CMP_LE_OQ)) ? CLAMP_LO : 0) |
                    (_mm256_movemask_ps(_mm256_cmp_ps(hi, hi_lim, _CMP_GE_OQ)) ? CLAMP_HI : 0);
        __m256 far = _mm256_max_ps(_mm256_and_ps(hi, mag), _mm256_and_ps(lo, mag));
        if (_mm256_movemask_ps(_mm256_cmp_ps(far, big, _CMP_GE_OQ))) clamp = 4;
        bucket[clamp][nb[clamp]++] = list[i];
    }
    const screen_fn *f = fns[b->weighted];
    for (int c = 0; c < 5; c++)
        for (size_t i = 0; i < nb[c]; i += 4) f[c](sh, b, C, bucket[c] + i, (int)(nb[c] - i < 4 ? nb[c] - i : 4));
}

/* The refit rows (nc of them): screen_n's sums, and whether each row's codes are qb (the first
 * round's best's) in every element. */
NF_AVX2_INLINE void refit_n(const nf_search_shape *sh, const search_lanes *b, search_cands *C,
                            const float (*qb)[SEARCH_L], const uint8_t *js, int nc, uint16_t (*same)[SEARCH_L],
                            bool weighted)
{
    const __m256 qmin = _mm256_set1_ps(sh->qmin), qmax = _mm256_set1_ps(sh->qmax);
    __m256 acc[3], diff[3];
    const float *s[3], *iv[3];
    for (int c = 0; c < nc; c++) {
        s[c] = C->sf[js[c]];
        iv[c] = C->inv[js[c]];
        acc[c] = diff[c] = _mm256_setzero_ps();
    }
    for (size_t k = 0; k < b->G; k++) {
        __m256 x = _mm256_load_ps(b->x[k]);
        __m256 w = weighted ? _mm256_load_ps(b->w[k]) : x;
        __m256 qk = _mm256_load_ps(qb[k]);
        for (int c = 0; c < nc; c++) {
            __m256 q = code8(x, _mm256_load_ps(iv[c]), qmin, qmax, CLAMP_LO | CLAMP_HI);
            __m256 r = _mm256_sub_ps(x, _mm256_mul_ps(_mm256_load_ps(s[c]), q));
            acc[c] = _mm256_add_ps(acc[c], _mm256_mul_ps(weighted ? _mm256_mul_ps(w, r) : r, r));
            diff[c] = _mm256_or_ps(diff[c], _mm256_cmp_ps(q, qk, _CMP_NEQ_UQ));
        }
    }
    for (int c = 0; c < nc; c++) {
        _mm256_store_ps(C->a[js[c]], acc[c]);
        int d = _mm256_movemask_ps(diff[c]);
        for (size_t l = 0; l < 8; l++) same[js[c] - SC_REFIT][l] = (uint16_t) !((d >> l) & 1);
    }
}

#define REFIT_DEF(name, weighted)                                                                                  \
    static __attribute__((noinline)) NF_AVX2_FN void name(const nf_search_shape *sh, const search_lanes *b,        \
                                                          search_cands *C, const float(*qb)[SEARCH_L],             \
                                                          const uint8_t *js, size_t nc, uint16_t(*same)[SEARCH_L]) \
    {                                                                                                              \
        switch (nc) {                                                                                              \
        case 1: refit_n(sh, b, C, qb, js, 1, same, weighted); break;                                               \
        case 2: refit_n(sh, b, C, qb, js, 2, same, weighted); break;                                               \
        default: refit_n(sh, b, C, qb, js, 3, same, weighted); break;                                              \
        }                                                                                                          \
    }
REFIT_DEF(refit_plain, false)
REFIT_DEF(refit_weighted, true)

static NF_AVX2_FN void search_refit_screen(const nf_search_shape *sh, const search_lanes *b, search_cands *C,
                                           const float (*qb)[SEARCH_L], const uint8_t *list, size_t m,
                                           uint16_t (*same)[SEARCH_L])
{
    if (!m) return;
    if (b->weighted) refit_weighted(sh, b, C, qb, list, m, same);
    else refit_plain(sh, b, C, qb, list, m, same);
}

/* ---------------------------------------------------------------- least squares */

/* The reference's sums lane by lane, k ascending, in binary64: two vectors of 4.  Without
 * importance the reference's denominator sums q * q, integers below 2^14 with sums below 2^21:
 * exact in any order, in binary32 too, so it is formed there. */
NF_AVX2_INLINE void lsq_lanes(const nf_search_shape *sh, const search_lanes *b, const float *inv, double *num,
                              double *den, float (*q)[SEARCH_L], bool weighted)
{
    const __m256 qmin = _mm256_set1_ps(sh->qmin), qmax = _mm256_set1_ps(sh->qmax);
    const __m256 iv = _mm256_load_ps(inv);
    __m256d n0 = _mm256_setzero_pd(), n1 = n0, d0 = n0, d1 = n0;
    __m256 df = _mm256_setzero_ps();
    for (size_t k = 0; k < b->G; k++) {
        __m256 xf = _mm256_load_ps(b->x[k]);
        __m256 qf = code8(xf, iv, qmin, qmax, CLAMP_LO | CLAMP_HI);
        if (q) _mm256_store_ps(q[k], qf);
        __m256d x0 = lo4(xf), x1 = hi4(xf), q0 = lo4(qf), q1 = hi4(qf);
        if (weighted) {
            __m256 wf = _mm256_load_ps(b->w[k]);
            __m256d w0 = lo4(wf), w1 = hi4(wf);
            n0 = _mm256_add_pd(n0, _mm256_mul_pd(_mm256_mul_pd(w0, x0), q0));
            n1 = _mm256_add_pd(n1, _mm256_mul_pd(_mm256_mul_pd(w1, x1), q1));
            d0 = _mm256_add_pd(d0, _mm256_mul_pd(_mm256_mul_pd(w0, q0), q0));
            d1 = _mm256_add_pd(d1, _mm256_mul_pd(_mm256_mul_pd(w1, q1), q1));
        } else {
            n0 = _mm256_add_pd(n0, _mm256_mul_pd(x0, q0));
            n1 = _mm256_add_pd(n1, _mm256_mul_pd(x1, q1));
            df = _mm256_add_ps(df, _mm256_mul_ps(qf, qf));
        }
    }
    if (!weighted) {
        d0 = lo4(df);
        d1 = hi4(df);
    }
    _mm256_store_pd(num, n0);
    _mm256_store_pd(num + 4, n1);
    _mm256_store_pd(den, d0);
    _mm256_store_pd(den + 4, d1);
}

static NF_AVX2_FN void search_lsq(const nf_search_shape *sh, const search_lanes *b, const float *inv, double *num,
                                  double *den, float (*q)[SEARCH_L])
{
    if (b->weighted) lsq_lanes(sh, b, inv, num, den, q, true);
    else lsq_lanes(sh, b, inv, num, den, q, false);
}

/* ---------------------------------------------------------------- exact errors of one group */

/* e += (w * r) * r, or r * r, with r = x - s * q (s * q is exact, then one rounding) */
NF_AVX2_INLINE __m256d term(__m256d e, __m256d xd, __m256d wd, __m256d s, __m256d q, bool weighted)
{
    __m256d r = _mm256_sub_pd(xd, _mm256_mul_pd(s, q));
    __m256d wr = weighted ? _mm256_mul_pd(wd, r) : r;
    return _mm256_add_pd(e, _mm256_mul_pd(wr, r));
}

/* 16 candidates (4 vectors of 4) over the group's n elements, k ascending. */
NF_AVX2_INLINE void exact16(const nf_search_shape *sh, const nf_search_group *g, const double *s, const float *inv,
                            double *e, int nv, bool weighted)
{
    const __m256 qmin = _mm256_set1_ps(sh->qmin), qmax = _mm256_set1_ps(sh->qmax);
    __m256 ia = _mm256_loadu_ps(inv), ib = _mm256_loadu_ps(inv + 8);
    __m256d sv[4], ev[4];
    for (int v = 0; v < nv; v++) {
        sv[v] = _mm256_loadu_pd(s + 4 * v);
        ev[v] = _mm256_setzero_pd();
    }
    for (size_t k = 0; k < g->n; k++) {
        __m256 xb = _mm256_set1_ps(g->x[k]);
        __m256d xd = _mm256_set1_pd((double)g->x[k]);
        __m256d wd = weighted ? _mm256_set1_pd((double)g->wf[k]) : xd;
        __m256 qa = code8(xb, ia, qmin, qmax, CLAMP_LO | CLAMP_HI);
        ev[0] = term(ev[0], xd, wd, sv[0], lo4(qa), weighted);
        if (nv > 1) ev[1] = term(ev[1], xd, wd, sv[1], hi4(qa), weighted);
        if (nv > 2) {
            __m256 qb = code8(xb, ib, qmin, qmax, CLAMP_LO | CLAMP_HI);
            ev[2] = term(ev[2], xd, wd, sv[2], lo4(qb), weighted);
            if (nv > 3) ev[3] = term(ev[3], xd, wd, sv[3], hi4(qb), weighted);
        }
    }
    for (int v = 0; v < nv; v++) _mm256_storeu_pd(e + 4 * v, ev[v]);
}

NF_AVX2_INLINE void exact_all(const nf_search_shape *sh, const nf_search_group *g, const double *s, const float *inv,
                              size_t m, double *e, bool weighted)
{
    for (size_t j = 0; j < m; j += 16) {
        size_t left = m - j;
        if (left > 12) exact16(sh, g, s + j, inv + j, e + j, 4, weighted);
        else if (left > 8) exact16(sh, g, s + j, inv + j, e + j, 3, weighted);
        else if (left > 4) exact16(sh, g, s + j, inv + j, e + j, 2, weighted);
        else exact16(sh, g, s + j, inv + j, e + j, 1, weighted);
    }
}

static NF_AVX2_FN void search_exact(const nf_search_shape *sh, const nf_search_group *g, const double *s,
                                    const float *inv, size_t m, double *e)
{
    if (g->wf) exact_all(sh, g, s, inv, m, e, true);
    else exact_all(sh, g, s, inv, m, e, false);
}

/* ---------------------------------------------------------------- codes of one group */

NF_AVX2_INLINE void search_codes(const nf_search_shape *sh, const nf_search_group *g, float inv, int8_t *q)
{
    const __m256 qmin = _mm256_set1_ps(sh->qmin), qmax = _mm256_set1_ps(sh->qmax), vi = _mm256_set1_ps(inv);
    size_t i = 0;
    for (; i + 8 <= g->n; i += 8) {
        __m256i c = _mm256_cvtps_epi32(code8(_mm256_loadu_ps(g->x + i), vi, qmin, qmax, CLAMP_LO | CLAMP_HI));
        __m128i h = _mm_packs_epi32(_mm256_castsi256_si128(c), _mm256_extracti128_si256(c, 1));
        _mm_storel_epi64((__m128i *)(void *)(q + i), _mm_packs_epi16(h, h));
    }
    for (; i < g->n; i++) q[i] = nf_grouped_code(g->x[i], inv, sh->qmin, sh->qmax);
}

/* The first |x[k]| = amax, 8 lanes at a time, then the tail. */
static NF_AVX2_FN float extreme_avx2(const float *x, size_t n, float amax)
{
    const __m256 a = _mm256_set1_ps(amax), mag = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        int hit = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_and_ps(_mm256_loadu_ps(x + i), mag), a, _CMP_EQ_OQ));
        if (hit) return x[i + (size_t)__builtin_ctz((unsigned)hit)];
    }
    while (i + 1 < n && fabsf(x[i]) != amax) i++;
    return x[i];
}

/* ---------------------------------------------------------------- loading */

/* 8 values widened exactly (VCVTPH2PS is exact for every finite binary16, BF16 is a shift). */
NF_AVX2_INLINE __m256 widen8(const uint8_t *p, nf_src_type type)
{
    if (type == NF_SRC_F32) return _mm256_loadu_ps((const float *)(const void *)p);
    __m128i h = _mm_loadu_si128((const __m128i *)(const void *)p);
    if (type == NF_SRC_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* The last n % 8 values one at a time (the reference's conversions), and their largest |x| word. */
static __attribute__((noinline)) uint32_t load_tail(const uint8_t *p, nf_src_type type, size_t n, float *x)
{
    uint32_t best = 0;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *q = p + i * (type == NF_SRC_F32 ? 4 : 2);
        uint32_t b;
        if (type == NF_SRC_F32) memcpy(&b, q, sizeof b);
        else if (type == NF_SRC_BF16) b = (uint32_t)(q[0] | q[1] << 8) << 16;
        else {
            float f = nf_f16_to_f32((uint16_t)(q[0] | q[1] << 8));
            memcpy(&b, &f, sizeof b);
        }
        memcpy(&x[i], &b, sizeof b);
        b &= 0x7FFFFFFFu;
        best = b > best ? b : best;
    }
    return best;
}

NF_AVX2_INLINE uint32_t load_n(const uint8_t *p, nf_src_type type, size_t esize, size_t n, float *x, float *extreme)
{
    const __m256i mag = _mm256_set1_epi32(0x7FFFFFFF);
    __m256i mx = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = widen8(p + i * esize, type);
        _mm256_storeu_ps(x + i, v);
        mx = _mm256_max_epu32(mx, _mm256_and_si256(_mm256_castps_si256(v), mag));
    }
    _Alignas(32) uint32_t m[8];
    _mm256_store_si256((__m256i *)(void *)m, mx);
    uint32_t best = 0;
    for (size_t l = 0; l < 8; l++) best = m[l] > best ? m[l] : best;
    if (i < n) {
        uint32_t t = load_tail(p + i * esize, type, n - i, x + i);
        best = t > best ? t : best;
    }
    if (best - 1u < 0x7F7FFFFFu) { /* finite and nonzero */
        float a;
        memcpy(&a, &best, sizeof a);
        *extreme = extreme_avx2(x, n, a);
    }
    return best;
}

/* The layouts' group sizes as constants, so that the loops unroll. */
NF_AVX2_INLINE uint32_t load_type(const uint8_t *p, nf_src_type type, size_t esize, size_t n, float *x, float *extreme)
{
    if (n == 64) return load_n(p, type, esize, 64, x, extreme);
    if (n == 32) return load_n(p, type, esize, 32, x, extreme);
    return load_n(p, type, esize, n, x, extreme);
}

static NF_AVX2_FN uint32_t load_avx2(const uint8_t *p, nf_src_type type, size_t n, float *x, float *extreme)
{
    switch (type) {
    case NF_SRC_F32: return load_type(p, NF_SRC_F32, 4, n, x, extreme);
    case NF_SRC_F16: return load_type(p, NF_SRC_F16, 2, n, x, extreme);
    default: return load_type(p, NF_SRC_BF16, 2, n, x, extreme);
    }
}

const nf_search_kernels nf_search_kernels_avx2 = {
    .name = "avx2", .batch = search_batch_avx2, .extreme = extreme_avx2, .load = load_avx2, .lanes = SEARCH_L};

#endif
