/* grouped_search fast path for AVX-512 F + BW + VL (search_simd.h): 16 groups side by side,
 * one per binary32 lane (two binary64 vectors of 8 where the reference's binary64 sums are
 * formed); the exact errors of the few candidates a group needs them for take the candidates
 * side by side instead, 8 per binary64 vector.
 *
 * One fused operation, which provably rounds as the reference's two: r = x - s * q as
 * VFNMADD (-(s * q) + x, one rounding).  s * q is exact in binary64 (s is a binary16 value: 11
 * significant bits, exponent >= -24; q an integer of magnitude <= 128: at most 19 significant
 * bits, magnitude < 2^23), so the reference's product rounds to itself and its subtraction is
 * the only rounding, as in the fused form.  The least-squares sums and everything else round
 * on their own.  The binary32 screening sums may fuse (search_algo.inc). */
#include "common/simd_target.h"
#include "method/method_impl.h"
#include "method/simd/recip_avx512.h"
#include "method/simd/search_simd.h"

#if NF_X86_KERNELS

#include <immintrin.h>

#define SEARCH_L 16u
/* The screening's residuals: codes rounded from the exact product where a clamp may act
 * (fcode16), the reference's codes with s f standing for the residual elsewhere
 * (screen_reduced); both within this of the reference's residuals (screen_n below). */
#define SEARCH_BETA 0x1.1p-22

#define SEARCH_HAVE_VECTOR_ROWS 1
#define SEARCH_HAVE_WX 1
#define SEARCH_KERNEL_INLINE NF_AVX512_INLINE
#include "method/simd/search_kernels.inc"

#define SEARCH_BATCH_FN search_batch_avx512
#define SEARCH_ATTR NF_AVX512_FN
#include "method/simd/search_algo.inc"

/* The low and high 8 lanes of a binary32 vector, widened exactly to binary64. */
NF_AVX512_INLINE __m512d lo8(__m512 v) { return _mm512_cvtps_pd(_mm512_castps512_ps256(v)); }
NF_AVX512_INLINE __m512d hi8(__m512 v)
{
    return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

/* VCVTPS2PH imm8 = 0: round to nearest even (the -O0 macro form of the intrinsic trips
 * -Wsign-conversion). */
NF_AVX512_INLINE __m256i to_half(__m512 f)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-conversion"
    return _mm512_cvtps_ph(f, 0);
#pragma GCC diagnostic pop
}

/* ---------------------------------------------------------------- batch layout */

/* 16 rows of 16 floats (r[l] = lane l's elements k0..k0+15) to 16 columns (out[k] = element
 * k0 + k of every lane): unpack pairs, then pairs of pairs, then 128-bit blocks. */
NF_AVX512_INLINE void transpose16(__m512 r[16], float *out /* 16 x 16, row k at out + 16 k */)
{
    __m512 t[16], u[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    /* t[2p] = rows 2p, 2p+1 interleaved at elements 0,1 | 4,5 | 8,9 | 12,13; t[2p+1] at 2,3 ... */
    for (int i = 0; i < 16; i += 4) {
        __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 2]);
        __m512d c = _mm512_castps_pd(t[i + 1]), d = _mm512_castps_pd(t[i + 3]);
        u[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));     /* rows i..i+3, elements 0,4,8,12 */
        u[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)); /* 1,5,9,13 */
        u[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(c, d)); /* 2,6,10,14 */
        u[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(c, d)); /* 3,7,11,15 */
    }
    /* u[4p + e]: rows 4p..4p+3 of elements e, e+4, e+8, e+12 in its four 128-bit blocks */
    for (int e = 0; e < 4; e++) {
        __m512 v0 = _mm512_shuffle_f32x4(u[e], u[4 + e], 0x44);
        __m512 v1 = _mm512_shuffle_f32x4(u[e], u[4 + e], 0xEE);
        __m512 v2 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0x44);
        __m512 v3 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0xEE);
        _mm512_store_ps(out + 16 * e, _mm512_shuffle_f32x4(v0, v2, 0x88));
        _mm512_store_ps(out + 16 * (e + 4), _mm512_shuffle_f32x4(v0, v2, 0xDD));
        _mm512_store_ps(out + 16 * (e + 8), _mm512_shuffle_f32x4(v1, v3, 0x88));
        _mm512_store_ps(out + 16 * (e + 12), _mm512_shuffle_f32x4(v1, v3, 0xDD));
    }
}

NF_AVX512_INLINE void transpose_rows(const float *const *src, size_t G, float (*dst)[SEARCH_L])
{
    size_t k = 0;
    for (; k + 16 <= G; k += 16) {
        __m512 r[16];
        for (int l = 0; l < 16; l++) r[l] = _mm512_loadu_ps(src[l] + k);
        transpose16(r, dst[k]);
    }
    for (; k < G; k++)
        for (size_t l = 0; l < 16; l++) dst[k][l] = src[l][k];
}

NF_AVX512_INLINE void search_transpose(const nf_search_shape *sh, const nf_search_group *const *g, search_lanes *b)
{
    (void)sh;
    const float *src[16];
    for (int l = 0; l < 16; l++) src[l] = g[l]->x;
    transpose_rows(src, b->G, b->x);
    if (b->weighted) {
        for (int l = 0; l < 16; l++) src[l] = g[l]->wf;
        transpose_rows(src, b->G, b->w);
    }
    __m512 hi = _mm512_setzero_ps(), lo = hi, xx = hi;
    for (size_t k = 0; k < b->G; k++) {
        __m512 v = _mm512_load_ps(b->x[k]);
        hi = _mm512_max_ps(hi, v);
        lo = _mm512_min_ps(lo, v);
        xx = _mm512_fmadd_ps(b->weighted ? _mm512_mul_ps(_mm512_load_ps(b->w[k]), v) : v, v, xx);
        if (b->weighted) {
            __m512 w = _mm512_load_ps(b->w[k]);
            _mm512_store_pd(b->wx[k], _mm512_mul_pd(lo8(w), lo8(v)));
            _mm512_store_pd(b->wx[k] + 8, _mm512_mul_pd(hi8(w), hi8(v)));
        }
    }
    _mm512_store_ps(b->xmax, hi);
    _mm512_store_ps(b->xmin, lo);
    _mm512_store_ps(b->xx, xx);
}

/* round_candidate of 16 lanes: a NaN becomes +infinity (the reference's early exit gives it
 * the infinite word; only a least-squares quotient can be NaN, so the scaled rows skip this),
 * VCVTPD2PS and VCVTPS2PH imm8 = 0, then, where a zero magnitude appears, the fix-up of a
 * nonzero candidate that rounds to it: the sign is kept by the conversions, so it becomes h | 1. */
NF_AVX512_INLINE __m256i round16(__m512d c0, __m512d c1, bool may_nan)
{
    const __m512d inf = _mm512_set1_pd(INFINITY), zero = _mm512_setzero_pd();
    if (may_nan) {
        c0 = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(c0, c0, _CMP_UNORD_Q), c0, inf);
        c1 = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(c1, c1, _CMP_UNORD_Q), c1, inf);
    }
    /* (VINSERTF64X4: AVX-512 F; the binary32 form is DQ) */
    __m512 f = _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(_mm512_cvtpd_ps(c0))),
                                                   _mm256_castps_pd(_mm512_cvtpd_ps(c1)), 1));
    __m256i h = to_half(f);
    __mmask16 zm = _mm256_testn_epi16_mask(h, _mm256_set1_epi16(0x7FFF));
    if (zm) {
        __mmask16 nz = (__mmask16)(_mm512_cmp_pd_mask(c0, zero, _CMP_NEQ_UQ) |
                                   (unsigned)_mm512_cmp_pd_mask(c1, zero, _CMP_NEQ_UQ) << 8);
        h = _mm256_mask_blend_epi16((__mmask16)(zm & nz), h, _mm256_or_si256(h, _mm256_set1_epi16(1)));
    }
    return h;
}

NF_AVX512_INLINE void search_round(const double *c, uint16_t *w)
{
    _mm256_store_si256((__m256i *)(void *)w, round16(_mm512_load_pd(c), _mm512_load_pd(c + 8), true));
}

/* v: finite or infinite values (step 1-3 bases, the fit's value), r > 0: never NaN. */
NF_AVX512_INLINE void search_scaled_round(const double *v, double r, uint16_t *w)
{
    const __m512d rv = _mm512_set1_pd(r);
    __m256i h = round16(_mm512_mul_pd(_mm512_load_pd(v), rv), _mm512_mul_pd(_mm512_load_pd(v + 8), rv), false);
    _mm256_store_si256((__m256i *)(void *)w, h);
}

/* step_word: the magnitude m + n kept where m != 0 and m + n lies in [1, 0x7BFF], else 0 */
NF_AVX512_INLINE void search_step_row(const uint16_t *v, int n, uint16_t *w)
{
    __m256i x = _mm256_load_si256((const __m256i *)(const void *)v);
    __m256i mag = _mm256_and_si256(x, _mm256_set1_epi16(0x7FFF));
    __m256i m = _mm256_add_epi16(mag, _mm256_set1_epi16((short)n)); /* modulo 2^16 */
    __mmask16 ok = _mm256_test_epi16_mask(mag, mag) &
                   _mm256_cmple_epu16_mask(_mm256_sub_epi16(m, _mm256_set1_epi16(1)), _mm256_set1_epi16(0x7BFE));
    __m256i r = _mm256_or_si256(_mm256_and_si256(x, _mm256_set1_epi16((short)0x8000)), m);
    _mm256_store_si256((__m256i *)(void *)w, _mm256_maskz_mov_epi16(ok, r));
}

/* search_algo.inc's search_unlist: one comparison per first-round row */
NF_AVX512_INLINE void search_unlist(search_cands *C, size_t j, const uint16_t *canonical)
{
    __m256i w = _mm256_load_si256((const __m256i *)(const void *)C->word[j]);
    __mmask16 listed = 0;
    for (size_t k = 0; k < SC_FIRST; k++)
        listed |= _mm256_cmpeq_epi16_mask(_mm256_load_si256((const __m256i *)(const void *)C->word[k]), w);
    __mmask16 ok = (__mmask16)(_mm256_test_epi16_mask(_mm256_load_si256((const __m256i *)(const void *)C->ok[j]),
                                                      _mm256_set1_epi16(-1)) &
                               ~listed);
    _mm256_store_si256((__m256i *)(void *)C->ok[j], _mm256_maskz_mov_epi16(ok, _mm256_set1_epi16(-1)));
    __m256i cw = _mm256_load_si256((const __m256i *)(const void *)canonical);
    _mm256_store_si256((__m256i *)(void *)C->ew[j], _mm256_mask_blend_epi16(ok, cw, w));
    C->any[j] = ok != 0;
}

/* valid = nonzero magnitude, not infinite or NaN, positive unless negative scales */
NF_AVX512_INLINE void search_validate(search_cands *C, size_t j, const uint16_t *canonical, bool neg)
{
    __m256i w = _mm256_load_si256((const __m256i *)(const void *)C->word[j]);
    __mmask16 good = _mm256_test_epi16_mask(w, _mm256_set1_epi16(0x7FFF));
    good &= _mm256_cmpneq_epi16_mask(_mm256_and_si256(w, _mm256_set1_epi16(0x7C00)), _mm256_set1_epi16(0x7C00));
    if (!neg) good &= _mm256_testn_epi16_mask(w, _mm256_set1_epi16((short)0x8000));
    _mm256_store_si256((__m256i *)(void *)C->ok[j], _mm256_maskz_mov_epi16(good, _mm256_set1_epi16(-1)));
    __m256i cw = _mm256_load_si256((const __m256i *)(const void *)canonical);
    _mm256_store_si256((__m256i *)(void *)C->ew[j], _mm256_mask_blend_epi16(good, cw, w));
    C->any[j] = good != 0;
}

/* search_algo.inc's search_amin and search_survivors, 16 lanes per operation. */
NF_AVX512_INLINE void search_amin(search_cands *C, const uint8_t *list, size_t m, float *amin)
{
    const __m512 inf = _mm512_set1_ps(INFINITY);
    __m512 lo = inf;
    for (size_t i = 0; i < m; i++) {
        size_t j = list[i];
        __mmask16 ok = _mm256_test_epi16_mask(_mm256_load_si256((const __m256i *)(const void *)C->ok[j]),
                                              _mm256_set1_epi16(-1));
        __m512 a = _mm512_mask_blend_ps(ok, inf, _mm512_load_ps(C->a[j]));
        _mm512_store_ps(C->a[j], a);
        lo = _mm512_min_ps(lo, a);
    }
    _mm512_store_ps(amin, lo);
}

NF_AVX512_INLINE void search_survivors(const search_cands *C, const uint8_t *list, size_t m, const float *thr,
                                       uint8_t *first, uint16_t *extra)
{
    const __m512 th = _mm512_load_ps(thr);
    __m256i fst = _mm256_set1_epi16(0xFF) /* none yet */, fw = _mm256_setzero_si256();
    __mmask16 more = 0, none = 0xFFFF;
    for (size_t i = 0; i < m; i++) {
        size_t j = list[i];
        __mmask16 sv = _mm512_cmp_ps_mask(_mm512_load_ps(C->a[j]), th, _CMP_LE_OQ);
        __m256i ew = _mm256_load_si256((const __m256i *)(const void *)C->ew[j]);
        more |= (__mmask16)(sv & ~none & _mm256_cmpneq_epi16_mask(ew, fw));
        __mmask16 now = sv & none;
        fst = _mm256_mask_mov_epi16(fst, now, _mm256_set1_epi16((short)j));
        fw = _mm256_mask_mov_epi16(fw, now, ew);
        none &= (__mmask16)~now;
    }
    _mm_store_si128((__m128i *)(void *)first, _mm256_cvtepi16_epi8(fst));
    _mm256_store_si256((__m256i *)(void *)extra, _mm256_maskz_mov_epi16(more, _mm256_set1_epi16(1)));
}

/* absmax_scale lane-wise: VDIVPS (correctly rounded, as the binary32 division), VCVTPS2PH
 * imm8 = 0 (nf_f32_to_f16 for these finite positive values), 0 made 0x0001. */
NF_AVX512_INLINE void search_canonical(const float *amax, float den, uint16_t *w)
{
    __m256i h = to_half(_mm512_div_ps(_mm512_load_ps(amax), _mm512_set1_ps(den)));
    h = _mm256_mask_mov_epi16(h, _mm256_testn_epi16_mask(h, h), _mm256_set1_epi16(1));
    _mm256_store_si256((__m256i *)(void *)w, h);
}

/* search_algo.inc's search_same_codes, the same binary64 operations 8 lanes at a time. */
NF_AVX512_INLINE void search_same_lanes(const float *si, const double *sc, const double *num, const double *den,
                                        const double *sum_up, int8_t *d)
{
    const __m512 sv = _mm512_load_ps(si);
    const __m512d two = _mm512_set1_pd(2.0), c43 = _mm512_set1_pd(0x1p-43), c51 = _mm512_set1_pd(0x1p-51),
                  c44 = _mm512_set1_pd(0x1p-44), tiny = _mm512_set1_pd(0x1p-999), zero = _mm512_setzero_pd();
    __mmask16 better = 0, worse = 0;
    for (int h = 0; h < 2; h++) {
        __m512d a = h ? hi8(sv) : lo8(sv), c = _mm512_load_pd(sc + 8 * h);
        __m512d n = _mm512_load_pd(num + 8 * h), dn = _mm512_load_pd(den + 8 * h);
        __m512d sigma = _mm512_add_pd(a, c), delta = _mm512_sub_pd(a, c);
        __m512d R = _mm512_sub_pd(_mm512_mul_pd(sigma, dn), _mm512_mul_pd(two, n)), D = _mm512_mul_pd(delta, R);
        __m512d err = _mm512_mul_pd(_mm512_abs_pd(delta),
                                    _mm512_add_pd(_mm512_mul_pd(_mm512_add_pd(_mm512_mul_pd(_mm512_abs_pd(sigma), dn),
                                                                              _mm512_mul_pd(two, _mm512_abs_pd(n))),
                                                                c43),
                                                  _mm512_mul_pd(_mm512_abs_pd(R), c51)));
        __m512d K = _mm512_add_pd(_mm512_add_pd(_mm512_mul_pd(_mm512_load_pd(sum_up + 8 * h), c44), err), tiny);
        better |= (__mmask16)(_mm512_cmp_pd_mask(D, _mm512_sub_pd(zero, K), _CMP_LT_OQ) << (8 * h));
        worse |= (__mmask16)(_mm512_cmp_pd_mask(D, K, _CMP_GE_OQ) << (8 * h));
    }
    __m128i r = _mm_mask_mov_epi8(_mm_set1_epi8(-1), worse, _mm_setzero_si128());
    _mm_store_si128((__m128i *)(void *)d, _mm_mask_mov_epi8(r, better, _mm_set1_epi8(1)));
}

/* sf = the binary16 value (VCVTPH2PS is exact), inv = f32(1 / sf) (recip_avx512.h). */
NF_AVX512_INLINE void search_prep(const uint16_t *w, float *sf, float *inv)
{
    __m512 v = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(const void *)w));
    _mm512_store_ps(sf, v);
    _mm512_store_ps(inv, nf_recip16_avx512(v));
}

/* ---------------------------------------------------------------- codes */

/* clamp(x * inv) rounded to nearest even (the reference's nf_grouped_code): the clamps that
 * can matter (CLAMP_LO, CLAMP_HI; search_simd.h), then + 1.5 * 2^23 - 1.5 * 2^23. */
#define CLAMP_LO 1
#define CLAMP_HI 2
NF_AVX512_INLINE __m512 code16(__m512 x, __m512 inv, __m512 qmin, __m512 qmax, int clamp)
{
    const __m512 magic = _mm512_set1_ps(12582912.0f);
    __m512 n = _mm512_mul_ps(x, inv);
    if (clamp & CLAMP_LO) n = _mm512_max_ps(n, qmin);
    if (clamp & CLAMP_HI) n = _mm512_min_ps(n, qmax);
    return _mm512_sub_ps(_mm512_add_ps(n, magic), magic);
}


/* ---------------------------------------------------------------- screening */

/* nc (1..4) candidates over all 16 lanes: binary32, r = x - s q fused (s q is exact), the
 * square added fused.  The codes q' are rounded from the exact product: t = x * inv + 1.5 * 2^23
 * in one rounding (VFMADD; the sum lies in (2^23, 2^24) where the spacing is 1, so t - 1.5 * 2^23
 * is x * inv rounded to nearest even; the clamps act on t, at 1.5 * 2^23 + qmin or + qmax).  q'
 * differs from the reference's q = clamp(rne(f32(x * inv))) only where the rounding of x * inv to
 * binary32 reaches or crosses a point k + 1/2, |p - (k + 1/2)| <= |p| 2^-24 for p = x * inv;
 * with y = x / s, |y - p| <= |y| 2^-24 (inv is within 2^-24 of 1 / s), so y is within
 * 2.0001 |y| 2^-24 of k + 1/2 and | |x - s q'| - |x - s q| | = 2 s |y - (k + 1/2)| <=
 * 2.0001 |x| 2^-23 < SEARCH_BETA |x| (search_algo.inc's bound).  Both clamped codes are q's
 * neighbours k, k + 1 then, or equal. */
NF_AVX512_INLINE __m512 fcode16(__m512 x, __m512 inv, __m512 lo, __m512 hi, int clamp)
{
    const __m512 magic = _mm512_set1_ps(12582912.0f);
    __m512 t = _mm512_fmadd_ps(x, inv, magic);
    if (clamp & CLAMP_LO) t = _mm512_max_ps(t, lo);
    if (clamp & CLAMP_HI) t = _mm512_min_ps(t, hi);
    return _mm512_sub_ps(t, magic);
}

/* Candidates that need no clamp in any lane (search_screen's bucket 0: every y = f32(x * inv)
 * of the batch lies in (qmin - 1/2, qmax + 1/2), rounding being monotone) screen on the
 * reference's own codes q = rne(y): VREDUCEPS gives f = y - q exactly, and rho = s f stands for
 * the residual.  rho - r = s y - x = x ((1 + d1)(1 + d2) - 1) with |d1|, |d2| <= 2^-24 (the
 * rounding of y, and inv within 2^-24 of 1 / s), so | |rho| - |r| | <= 1.0001 * 2^-23 |x|, within
 * SEARCH_BETA |x|.  The sum is formed as s^2 * sum (w f) f: s^2 is exact (s a binary16 value:
 * 11 significant bits), so each term meets w f, the fused product-and-add, the n additions and
 * the final scaling -- n + 2 roundings of search_algo.inc's n + 5; underflow, amplified by
 * s^2 < 2^32, stays below 128 * 2^-149 * 2^32 = 2^-110, inside its 2^-109.  Three operations per
 * value and candidate (four with importance) instead of four (five). */
NF_AVX512_INLINE void screen_reduced(const search_lanes *b, search_cands *C, const uint8_t *js, int nc, bool weighted)
{
    __m512 s2[4], iv[4], acc[4];
    for (int c = 0; c < nc; c++) {
        __m512 s = _mm512_load_ps(C->sf[js[c]]);
        s2[c] = _mm512_mul_ps(s, s);
        iv[c] = _mm512_load_ps(C->inv[js[c]]);
        acc[c] = _mm512_setzero_ps();
    }
    for (size_t k = 0; k < b->G; k++) {
        __m512 x = _mm512_load_ps(b->x[k]);
        __m512 w = weighted ? _mm512_load_ps(b->w[k]) : x;
        for (int c = 0; c < nc; c++) {
            /* imm8 0: no fraction bits kept, round to nearest even */
            __m512 f = _mm512_reduce_ps(_mm512_mul_ps(x, iv[c]), 0);
            acc[c] = _mm512_fmadd_ps(weighted ? _mm512_mul_ps(w, f) : f, f, acc[c]);
        }
    }
    for (int c = 0; c < nc; c++) _mm512_store_ps(C->a[js[c]], _mm512_mul_ps(acc[c], s2[c]));
}

NF_AVX512_INLINE void screen_n(const nf_search_shape *sh, const search_lanes *b, search_cands *C, const uint8_t *js,
                               int nc, int clamp, bool weighted)
{
    if (clamp == 0) {
        screen_reduced(b, C, js, nc, weighted);
        return;
    }
    /* 1.5 * 2^23 + qmin and + qmax: exact integers */
    const __m512 qmin = _mm512_set1_ps(12582912.0f + sh->qmin), qmax = _mm512_set1_ps(12582912.0f + sh->qmax);
    __m512 s[4], iv[4], acc[4];
    for (int c = 0; c < nc; c++) {
        s[c] = _mm512_load_ps(C->sf[js[c]]);
        iv[c] = _mm512_load_ps(C->inv[js[c]]);
        acc[c] = _mm512_setzero_ps();
    }
    for (size_t k = 0; k < b->G; k++) {
        __m512 x = _mm512_load_ps(b->x[k]);
        __m512 w = weighted ? _mm512_load_ps(b->w[k]) : x;
        for (int c = 0; c < nc; c++) {
            __m512 q = fcode16(x, iv[c], qmin, qmax, clamp);
            __m512 r = _mm512_fnmadd_ps(s[c], q, x);
            acc[c] = _mm512_fmadd_ps(weighted ? _mm512_mul_ps(w, r) : r, r, acc[c]);
        }
    }
    for (int c = 0; c < nc; c++) _mm512_store_ps(C->a[js[c]], acc[c]);
}

#define SCREEN_DEF(name, clamp, weighted)                                                                     \
    static __attribute__((noinline)) NF_AVX512_FN void name(const nf_search_shape *sh, const search_lanes *b, \
                                                            search_cands *C, const uint8_t *js, int nc)       \
    {                                                                                                         \
        switch (nc) {                                                                                         \
        case 1: screen_n(sh, b, C, js, 1, clamp, weighted); break;                                            \
        case 2: screen_n(sh, b, C, js, 2, clamp, weighted); break;                                            \
        case 3: screen_n(sh, b, C, js, 3, clamp, weighted); break;                                            \
        default: screen_n(sh, b, C, js, 4, clamp, weighted); break;                                           \
        }                                                                                                     \
    }
SCREEN_DEF(screen_p0, 0, false)
SCREEN_DEF(screen_p1, 1, false)
SCREEN_DEF(screen_p2, 2, false)
SCREEN_DEF(screen_p3, 3, false)
SCREEN_DEF(screen_w0, 0, true)
SCREEN_DEF(screen_w1, 1, true)
SCREEN_DEF(screen_w2, 2, true)
SCREEN_DEF(screen_w3, 3, true)

typedef void (*screen_fn)(const nf_search_shape *, const search_lanes *, search_cands *, const uint8_t *, int);

/* The candidates sorted by the clamps they need in some lane (search_simd.h: every code lies
 * between those of xmin and xmax), then 4 at a time. */
static NF_AVX512_FN void search_screen(const nf_search_shape *sh, const search_lanes *b, search_cands *C,
                                       const uint8_t *list, size_t m)
{
    static const screen_fn fns[2][4] = {{screen_p0, screen_p1, screen_p2, screen_p3},
                                        {screen_w0, screen_w1, screen_w2, screen_w3}};
    const __m512 xmax = _mm512_load_ps(b->xmax), xmin = _mm512_load_ps(b->xmin);
    const __m512 hi_lim = _mm512_set1_ps(sh->qmax + 0.5f), lo_lim = _mm512_set1_ps(sh->qmin - 0.5f);
    uint8_t bucket[4][SC_ALL];
    size_t nb[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < m; i++) {
        __m512 iv = _mm512_load_ps(C->inv[list[i]]);
        __m512 p = _mm512_mul_ps(xmax, iv), q = _mm512_mul_ps(xmin, iv);
        __m512 hi = _mm512_max_ps(p, q), lo = _mm512_min_ps(p, q);
        int clamp = (_mm512_cmp_ps_mask(lo, lo_lim, _CMP_LE_OQ) ? CLAMP_LO : 0) |
                    (_mm512_cmp_ps_mask(hi, hi_lim, _CMP_GE_OQ) ? CLAMP_HI : 0);
        bucket[clamp][nb[clamp]++] = list[i];
    }
    const screen_fn *f = fns[b->weighted];
    for (int c = 0; c < 4; c++)
        for (size_t i = 0; i < nb[c]; i += 4) f[c](sh, b, C, bucket[c] + i, (int)(nb[c] - i < 4 ? nb[c] - i : 4));
}

/* The refit rows (nc of them): screen_n's sums, and whether each row's codes are qb (the first
 * round's best's) in every element. */
NF_AVX512_INLINE void refit_n(const nf_search_shape *sh, const search_lanes *b, search_cands *C,
                              const float (*qb)[SEARCH_L], const uint8_t *js, int nc, uint16_t (*same)[SEARCH_L],
                              bool weighted)
{
    const __m512 qmin = _mm512_set1_ps(sh->qmin), qmax = _mm512_set1_ps(sh->qmax);
    __m512 s[3], iv[3], acc[3];
    __mmask16 diff[3];
    for (int c = 0; c < nc; c++) {
        s[c] = _mm512_load_ps(C->sf[js[c]]);
        iv[c] = _mm512_load_ps(C->inv[js[c]]);
        acc[c] = _mm512_setzero_ps();
        diff[c] = 0;
    }
    for (size_t k = 0; k < b->G; k++) {
        __m512 x = _mm512_load_ps(b->x[k]);
        __m512 w = weighted ? _mm512_load_ps(b->w[k]) : x;
        __m512 qk = _mm512_load_ps(qb[k]);
        for (int c = 0; c < nc; c++) {
            __m512 q = code16(x, iv[c], qmin, qmax, CLAMP_LO | CLAMP_HI);
            __m512 r = _mm512_fnmadd_ps(s[c], q, x);
            acc[c] = _mm512_fmadd_ps(weighted ? _mm512_mul_ps(w, r) : r, r, acc[c]);
            diff[c] |= _mm512_cmp_ps_mask(q, qk, _CMP_NEQ_UQ);
        }
    }
    for (int c = 0; c < nc; c++) {
        _mm512_store_ps(C->a[js[c]], acc[c]);
        _mm256_store_si256((__m256i *)(void *)same[js[c] - SC_REFIT],
                           _mm256_maskz_mov_epi16((__mmask16)~diff[c], _mm256_set1_epi16(1)));
    }
}

#define REFIT_DEF(name, weighted)                                                                                    \
    static __attribute__((noinline)) NF_AVX512_FN void name(const nf_search_shape *sh, const search_lanes *b,        \
                                                            search_cands *C, const float(*qb)[SEARCH_L],             \
                                                            const uint8_t *js, size_t nc, uint16_t(*same)[SEARCH_L]) \
    {                                                                                                                \
        switch (nc) {                                                                                                \
        case 1: refit_n(sh, b, C, qb, js, 1, same, weighted); break;                                                 \
        case 2: refit_n(sh, b, C, qb, js, 2, same, weighted); break;                                                 \
        default: refit_n(sh, b, C, qb, js, 3, same, weighted); break;                                                \
        }                                                                                                            \
    }
REFIT_DEF(refit_plain, false)
REFIT_DEF(refit_weighted, true)

static NF_AVX512_FN void search_refit_screen(const nf_search_shape *sh, const search_lanes *b, search_cands *C,
                                             const float (*qb)[SEARCH_L], const uint8_t *list, size_t m,
                                             uint16_t (*same)[SEARCH_L])
{
    if (!m) return;
    if (b->weighted) refit_weighted(sh, b, C, qb, list, m, same);
    else refit_plain(sh, b, C, qb, list, m, same);
}

/* ---------------------------------------------------------------- least squares */

/* The reference's sums lane by lane, k ascending, in binary64 without FMA: two vectors of 8
 * (w x, exact, from b->wx).
 * Without importance the reference's denominator sums q * q, integers below 2^14 with sums
 * below 2^21: exact in any order, in binary32 too (FMA or not), so it is formed there. */
NF_AVX512_INLINE void lsq_lanes(const nf_search_shape *sh, const search_lanes *b, const float *inv, double *num,
                                double *den, float (*q)[SEARCH_L], bool weighted)
{
    const __m512 qmin = _mm512_set1_ps(sh->qmin), qmax = _mm512_set1_ps(sh->qmax);
    const __m512 iv = _mm512_load_ps(inv);
    __m512d n0 = _mm512_setzero_pd(), n1 = n0, d0 = n0, d1 = n0;
    __m512 df = _mm512_setzero_ps();
    for (size_t k = 0; k < b->G; k++) {
        __m512 xf = _mm512_load_ps(b->x[k]);
        __m512 qf = code16(xf, iv, qmin, qmax, CLAMP_LO | CLAMP_HI);
        if (q) _mm512_store_ps(q[k], qf);
        __m512d q0 = lo8(qf), q1 = hi8(qf);
        if (weighted) {
            __m512 wf = _mm512_load_ps(b->w[k]);
            __m512d w0 = lo8(wf), w1 = hi8(wf);
            n0 = _mm512_add_pd(n0, _mm512_mul_pd(_mm512_load_pd(b->wx[k]), q0));
            n1 = _mm512_add_pd(n1, _mm512_mul_pd(_mm512_load_pd(b->wx[k] + 8), q1));
            d0 = _mm512_add_pd(d0, _mm512_mul_pd(_mm512_mul_pd(w0, q0), q0));
            d1 = _mm512_add_pd(d1, _mm512_mul_pd(_mm512_mul_pd(w1, q1), q1));
        } else {
            n0 = _mm512_add_pd(n0, _mm512_mul_pd(lo8(xf), q0));
            n1 = _mm512_add_pd(n1, _mm512_mul_pd(hi8(xf), q1));
            df = _mm512_fmadd_ps(qf, qf, df);
        }
    }
    if (!weighted) {
        d0 = lo8(df);
        d1 = hi8(df);
    }
    _mm512_store_pd(num, n0);
    _mm512_store_pd(num + 8, n1);
    _mm512_store_pd(den, d0);
    _mm512_store_pd(den + 8, d1);
}

static NF_AVX512_FN void search_lsq(const nf_search_shape *sh, const search_lanes *b, const float *inv, double *num,
                                    double *den, float (*q)[SEARCH_L])
{
    if (b->weighted) lsq_lanes(sh, b, inv, num, den, q, true);
    else lsq_lanes(sh, b, inv, num, den, q, false);
}

/* ---------------------------------------------------------------- exact errors of one group */

/* e += (w * r) * r, or r * r, with r = x - s * q (exact product: one rounding, fused or not) */
NF_AVX512_INLINE __m512d term(__m512d e, __m512d xd, __m512d wd, __m512d s, __m512d q, bool weighted)
{
    __m512d r = _mm512_fnmadd_pd(s, q, xd);
    __m512d wr = weighted ? _mm512_mul_pd(wd, r) : r;
    return _mm512_add_pd(e, _mm512_mul_pd(wr, r));
}

/* 32 candidates (4 vectors of 8) over the group's n elements, k ascending. */
NF_AVX512_INLINE void exact32(const nf_search_shape *sh, const nf_search_group *g, const double *s, const float *inv,
                              double *e, int nv, bool weighted)
{
    const __m512 qmin = _mm512_set1_ps(sh->qmin), qmax = _mm512_set1_ps(sh->qmax);
    __m512 ia = _mm512_loadu_ps(inv), ib = _mm512_loadu_ps(inv + 16);
    __m512d sv[4], ev[4];
    for (int v = 0; v < nv; v++) {
        sv[v] = _mm512_loadu_pd(s + 8 * v);
        ev[v] = _mm512_setzero_pd();
    }
    for (size_t k = 0; k < g->n; k++) {
        __m512 xb = _mm512_set1_ps(g->x[k]);
        __m512d xd = _mm512_set1_pd((double)g->x[k]);
        __m512d wd = weighted ? _mm512_set1_pd((double)g->wf[k]) : xd;
        __m512 qa = code16(xb, ia, qmin, qmax, CLAMP_LO | CLAMP_HI);
        ev[0] = term(ev[0], xd, wd, sv[0], lo8(qa), weighted);
        if (nv > 1) ev[1] = term(ev[1], xd, wd, sv[1], hi8(qa), weighted);
        if (nv > 2) {
            __m512 qb = code16(xb, ib, qmin, qmax, CLAMP_LO | CLAMP_HI);
            ev[2] = term(ev[2], xd, wd, sv[2], lo8(qb), weighted);
            if (nv > 3) ev[3] = term(ev[3], xd, wd, sv[3], hi8(qb), weighted);
        }
    }
    for (int v = 0; v < nv; v++) _mm512_storeu_pd(e + 8 * v, ev[v]);
}

NF_AVX512_INLINE void exact_all(const nf_search_shape *sh, const nf_search_group *g, const double *s, const float *inv,
                                size_t m, double *e, bool weighted)
{
    for (size_t j = 0; j < m; j += 32) {
        size_t left = m - j;
        if (left > 24) exact32(sh, g, s + j, inv + j, e + j, 4, weighted);
        else if (left > 16) exact32(sh, g, s + j, inv + j, e + j, 3, weighted);
        else if (left > 8) exact32(sh, g, s + j, inv + j, e + j, 2, weighted);
        else exact32(sh, g, s + j, inv + j, e + j, 1, weighted);
    }
}

static NF_AVX512_FN void search_exact(const nf_search_shape *sh, const nf_search_group *g, const double *s,
                                      const float *inv, size_t m, double *e)
{
    if (g->wf) exact_all(sh, g, s, inv, m, e, true);
    else exact_all(sh, g, s, inv, m, e, false);
}

/* ---------------------------------------------------------------- codes of one group */

NF_AVX512_INLINE void search_codes(const nf_search_shape *sh, const nf_search_group *g, float inv, int8_t *q)
{
    const __m512 qmin = _mm512_set1_ps(sh->qmin), qmax = _mm512_set1_ps(sh->qmax), vi = _mm512_set1_ps(inv);
    for (size_t i = 0; i < g->n; i += 16) {
        size_t left = g->n - i;
        __mmask16 k = (__mmask16)(left >= 16 ? 0xFFFFu : (1u << left) - 1u);
        __m512 c = code16(_mm512_maskz_loadu_ps(k, g->x + i), vi, qmin, qmax, CLAMP_LO | CLAMP_HI);
        _mm_mask_storeu_epi8(q + i, k, _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(c)));
    }
}

/* The first |x[k]| = amax, 16 lanes at a time (a masked load for the tail). */
static NF_AVX512_FN float extreme_avx512(const float *x, size_t n, float amax)
{
    const __m512 a = _mm512_set1_ps(amax);
    for (size_t i = 0; i < n; i += 16) {
        size_t left = n - i;
        __mmask16 k = (__mmask16)(left >= 16 ? 0xFFFFu : (1u << left) - 1u);
        __m512 v = _mm512_maskz_loadu_ps(k, x + i);
        __mmask16 hit = _mm512_mask_cmp_ps_mask(k, _mm512_abs_ps(v), a, _CMP_EQ_OQ);
        if (hit) return x[i + (size_t)__builtin_ctz(hit)];
    }
    return x[0]; /* not reached: some lane holds amax */
}

/* ---------------------------------------------------------------- loading */

/* 16 values widened exactly (VCVTPH2PS is exact for every finite binary16, BF16 is a shift);
 * masked-off lanes read nothing and come out +0. */
NF_AVX512_INLINE __m512 widen16(const uint8_t *p, __mmask16 k, nf_src_type type)
{
    if (type == NF_SRC_F32) return _mm512_maskz_loadu_ps(k, p);
    __m256i h = _mm256_maskz_loadu_epi16(k, p);
    if (type == NF_SRC_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* The values widened and stored, amax, and the first value of magnitude amax: with n a constant
 * up to 128 every vector stays in a register for the second look. */
NF_AVX512_INLINE uint32_t load_n(const uint8_t *p, nf_src_type type, size_t esize, size_t n, float *x, float *extreme)
{
    const __m512i mag = _mm512_set1_epi32(0x7FFFFFFF);
    __m512i mx = _mm512_setzero_si512();
    __m512i v[NF_METHOD_MAX_GROUP / 16];
    size_t nv = (n + 15) / 16;
    for (size_t i = 0; i < nv; i++) {
        size_t left = n - 16 * i;
        __mmask16 k = (__mmask16)(left >= 16 ? 0xFFFFu : (1u << left) - 1u);
        __m512 f = widen16(p + 16 * i * esize, k, type);
        _mm512_mask_storeu_ps(x + 16 * i, k, f);
        v[i] = _mm512_and_si512(_mm512_castps_si512(f), mag);
        mx = _mm512_max_epu32(mx, v[i]);
    }
    uint32_t m = (uint32_t)_mm512_reduce_max_epu32(mx);
    if (m - 1u < 0x7F7FFFFFu) { /* finite and nonzero */
        /* every lane's hit in one bit mask (no branch per vector: the first hit's place varies) */
        const __m512i a = _mm512_set1_epi32((int)m);
        uint64_t hits[NF_METHOD_MAX_GROUP / 64] = {0};
        for (size_t i = 0; i < nv; i++) hits[i / 4] |= (uint64_t)_mm512_cmpeq_epi32_mask(v[i], a) << (16 * (i % 4));
        size_t at = 0;
        while (!hits[at / 64]) at += 64;
        *extreme = x[at + (size_t)__builtin_ctzll(hits[at / 64])];
    }
    return m;
}

/* The layouts' group sizes as constants, so that the loops unroll. */
NF_AVX512_INLINE uint32_t load_type(const uint8_t *p, nf_src_type type, size_t esize, size_t n, float *x,
                                    float *extreme)
{
    if (n == 64) return load_n(p, type, esize, 64, x, extreme);
    if (n == 32) return load_n(p, type, esize, 32, x, extreme);
    return load_n(p, type, esize, n, x, extreme);
}

static NF_AVX512_FN uint32_t load_avx512(const uint8_t *p, nf_src_type type, size_t n, float *x, float *extreme)
{
    switch (type) {
    case NF_SRC_F32: return load_type(p, NF_SRC_F32, 4, n, x, extreme);
    case NF_SRC_F16: return load_type(p, NF_SRC_F16, 2, n, x, extreme);
    default: return load_type(p, NF_SRC_BF16, 2, n, x, extreme);
    }
}

const nf_search_kernels nf_search_kernels_avx512 = {
    .name = "avx512", .batch = search_batch_avx512, .extreme = extreme_avx512, .load = load_avx512, .lanes = SEARCH_L};

#endif
