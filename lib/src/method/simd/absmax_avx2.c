/* grouped_absmax row kernel for AVX2 + F16C (absmax_simd.h): 8 lanes of binary32.
 *
 * A row goes in blocks of 8 groups: each group's amax (an unsigned integer max over the
 * sign-cleared words, one horizontal reduction per group), then the 8 scale words and
 * reciprocals at once, then each group's codes, 32 at a time, narrowed with saturating packs
 * (which never saturate: codes lie in [-128, 127]).  The codes pass reads the source again (it
 * is in L1).  A partial vector (the tail of a row whose K is not a multiple of 8) is read
 * through a zeroed stack copy, so nothing beyond the row is touched, and its codes are written
 * through one too; zero lanes add nothing to amax and their codes are never stored. */
#include "common/simd_target.h"
#include "method/simd/absmax_simd.h"

#if NF_X86_KERNELS

#include <immintrin.h>

#include "stats/simd/lanes_avx2.h"

#define LANES 8u

/* LANES elements at p widened exactly to binary32. */
NF_AVX2_INLINE __m256 load_full(const uint8_t *p, nf_src_type type)
{
    if (type == NF_SRC_F32) return _mm256_loadu_ps((const float *)(const void *)p);
    __m128i h = _mm_loadu_si128((const __m128i *)(const void *)p);
    if (type == NF_SRC_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* m < LANES elements at p, the other lanes +0. */
NF_AVX2_INLINE __m256 load_part(const uint8_t *p, size_t m, nf_src_type type, size_t esize)
{
    uint8_t buf[LANES * 4] = {0};
    memcpy(buf, p, m * esize);
    return load_full(buf, type);
}

NF_AVX2_INLINE uint32_t hmax_u32(__m256i v)
{
    __m128i a = _mm_max_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    a = _mm_max_epu32(a, _mm_shuffle_epi32(a, _MM_SHUFFLE(1, 0, 3, 2)));
    a = _mm_max_epu32(a, _mm_shuffle_epi32(a, _MM_SHUFFLE(2, 3, 0, 1)));
    return (uint32_t)_mm_cvtsi128_si32(a);
}

/* clamp(f32(x * inv), qmin, qmax) rounded to nearest even, as int32 lanes.  A plain multiply:
 * the product is rounded to binary32 before the clamp, as the reference's is. */
NF_AVX2_INLINE __m256 code_float(__m256 x, __m256 inv, __m256 qmin, __m256 qmax)
{
    __m256 t = _mm256_mul_ps(x, inv);
    t = _mm256_max_ps(t, qmin);
    t = _mm256_min_ps(t, qmax);
    return _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

/* Eight int32 lanes in [-128, 127] -> eight bytes in the low half. */
NF_AVX2_INLINE __m128i narrow8(__m256i q)
{
    __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    return _mm_packs_epi16(w, w);
}

/* The largest |x| word of the n values at p (n a constant at the hot call sites). */
NF_AVX2_INLINE uint32_t group_amax(const uint8_t *p, size_t n, nf_src_type type, size_t esize)
{
    const __m256i mag = _mm256_set1_epi32(0x7FFFFFFF);
    size_t full = n / LANES, rest = n % LANES;
    __m256i mx = _mm256_setzero_si256();
#pragma GCC unroll 16
    for (size_t v = 0; v < full; v++)
        mx = _mm256_max_epu32(mx, _mm256_and_si256(_mm256_castps_si256(load_full(p + v * LANES * esize, type)), mag));
    if (rest)
        mx = _mm256_max_epu32(
            mx, _mm256_and_si256(_mm256_castps_si256(load_part(p + full * LANES * esize, rest, type, esize)), mag));
    return hmax_u32(mx);
}

/* The statistics lanes (lanes_avx2.h) for absmax_row.inc. */
typedef nf_lanes256 STAT_LANES;
NF_AVX2_INLINE void stat_zero(STAT_LANES *l) { nf_lanes256_zero(l); }
NF_AVX2_INLINE bool stat_finish(STAT_LANES *l, size_t n, nf_errstats *st) { return nf_lanes256_finish(l, n, st); }
NF_AVX2_INLINE void stat_skip16(STAT_LANES *l) { nf_lanes256_skip16(l); }

/* Codes of 8 values, and with lanes their statistics: vector v of a group (groups start at
 * multiples of 16 columns, so v's parity is its half of the 16 statistics lanes). */
NF_AVX2_INLINE __m256i codes8(__m256 x, __m256 vinv, __m256 qmin, __m256 qmax, __m256 vs, size_t v, STAT_LANES *lanes)
{
    __m256 t = code_float(x, vinv, qmin, qmax);
    if (lanes) nf_lanes256_step8(lanes, (int)(v & 1), x, _mm256_mul_ps(vs, t));
    return _mm256_cvttps_epi32(t);
}

/* The codes of the n values at p for the reciprocal inv (n a constant at the hot call sites);
 * with lanes, each value against sval * code (nf_grouped_value).  A partial vector's zero lanes
 * have code 0 and y = 0: they add nothing. */
NF_AVX2_INLINE void group_codes(const uint8_t *p, size_t n, nf_src_type type, size_t esize, float inv, float sval,
                                const nf_absmax_shape *s, int8_t *q, STAT_LANES *lanes)
{
    const __m256 vinv = _mm256_set1_ps(inv), qmin = _mm256_set1_ps(s->qmin), qmax = _mm256_set1_ps(s->qmax);
    const __m256 vs = _mm256_set1_ps(sval);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    size_t full = n / LANES, rest = n % LANES;
    size_t v = 0;
#pragma GCC unroll 4
    for (; v + 4 <= full; v += 4) {
        const uint8_t *pv = p + v * LANES * esize;
        __m256i q0 = codes8(load_full(pv, type), vinv, qmin, qmax, vs, v, lanes);
        __m256i q1 = codes8(load_full(pv + LANES * esize, type), vinv, qmin, qmax, vs, v + 1, lanes);
        __m256i q2 = codes8(load_full(pv + 2 * LANES * esize, type), vinv, qmin, qmax, vs, v + 2, lanes);
        __m256i q3 = codes8(load_full(pv + 3 * LANES * esize, type), vinv, qmin, qmax, vs, v + 3, lanes);
        /* packs work within 128-bit halves: dwords come out as q0lo q1lo q2lo q3lo | q0hi ... */
        __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(q0, q1), _mm256_packs_epi32(q2, q3));
        _mm256_storeu_si256((__m256i *)(void *)(q + v * LANES), _mm256_permutevar8x32_epi32(b, order));
    }
    for (; v < full; v++)
        _mm_storel_epi64((__m128i *)(void *)(q + v * LANES),
                         narrow8(codes8(load_full(p + v * LANES * esize, type), vinv, qmin, qmax, vs, v, lanes)));
    if (rest) {
        uint8_t buf[16];
        __m256 x = load_part(p + full * LANES * esize, rest, type, esize);
        _mm_storeu_si128((__m128i *)(void *)buf, narrow8(codes8(x, vinv, qmin, qmax, vs, full, lanes)));
        memcpy(q + full * LANES, buf, rest);
    }
}

/* The scale words and reciprocals of LANES groups at once (absmax_simd.h's steps, lane-wise):
 * raw = amax / qmax (VDIVPS: the correctly rounded binary32 quotient), the binary16 word by
 * VCVTPS2PH with imm8 = 0 (round to nearest even, whatever MXCSR says: subnormal words and the
 * overflow to infinity at 65520 included), 0 -> 0x0001, inv = 1 / f32(word) (VCVTPH2PS is exact,
 * VDIVPS correctly rounded).  Lanes with amax == 0 get word 0 (their inv is unused).  false when
 * a lane's word is infinite. */
NF_AVX2_INLINE bool block_scales(const uint32_t *amax, float denominator, uint16_t *words, float *inv, float *sval)
{
    __m256i m = _mm256_loadu_si256((const __m256i *)(const void *)amax);
    __m256 raw = _mm256_div_ps(_mm256_castsi256_ps(m), _mm256_set1_ps(denominator));
    __m128i h = _mm256_cvtps_ph(raw, _MM_FROUND_TO_NEAREST_INT);
    __m128i zero16 = _mm_setzero_si128();
    h = _mm_or_si128(h, _mm_and_si128(_mm_cmpeq_epi16(h, zero16), _mm_set1_epi16(1)));
    __m128i exp = _mm_and_si128(h, _mm_set1_epi16(0x7C00));
    if (_mm_movemask_epi8(_mm_cmpeq_epi16(exp, _mm_set1_epi16(0x7C00)))) return false;
    __m256i zero_m = _mm256_cmpeq_epi32(m, _mm256_setzero_si256());
    __m128i zero_w = _mm_packs_epi32(_mm256_castsi256_si128(zero_m), _mm256_extracti128_si256(zero_m, 1));
    h = _mm_andnot_si128(zero_w, h);
    _mm_storeu_si128((__m128i *)(void *)words, h);
    __m256 v = _mm256_cvtph_ps(h);
    _mm256_storeu_ps(sval, v);
    _mm256_storeu_ps(inv, _mm256_div_ps(_mm256_set1_ps(1.0f), v));
    return true;
}

#define ABSMAX_INLINE NF_AVX2_INLINE
#include "method/simd/absmax_row.inc"

NF_AVX2_FN static bool absmax_row_avx2(const uint8_t *row, nf_src_type type, size_t k, const nf_absmax_shape *shape,
                                       int8_t *codes, uint16_t *scales, nf_errstats *st, size_t *measured)
{
    return absmax_row(row, type, k, shape, codes, scales, st, measured);
}

const nf_absmax_kernels nf_absmax_kernels_avx2 = {.name = "avx2", .row = absmax_row_avx2};

#else
typedef int nf_absmax_avx2_unused; /* not an x86 GCC/Clang build: no AVX2 kernel */
#endif
