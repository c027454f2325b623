/* grouped_absmax row kernel for AVX-512 F + BW + VL (absmax_simd.h): 16 lanes of binary32.
 *
 * The same steps as the AVX2 kernel (16 groups' scales at a time), with masked loads and stores
 * for a partial vector (AVX-512 masked memory accesses never touch, nor fault on, the masked-off
 * elements) and VPMOVDB to narrow int32 lanes to bytes (truncating, which is exact: codes lie in
 * [-128, 127]). */
#include "common/simd_target.h"
#include "method/simd/absmax_simd.h"

#if NF_X86_KERNELS

#include <immintrin.h>

#include "stats/simd/lanes_avx512.h"

#define LANES 16u
#define ALL16 ((__mmask16)0xFFFFu)

NF_AVX512_INLINE __m512 widen(__m256i h, nf_src_type type)
{
    if (type == NF_SRC_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* LANES elements at p widened exactly to binary32. */
NF_AVX512_INLINE __m512 load_full(const uint8_t *p, nf_src_type type)
{
    if (type == NF_SRC_F32) return _mm512_loadu_ps(p);
    return widen(_mm256_loadu_si256((const __m256i *)(const void *)p), type);
}

/* The elements of mask k at p, the other lanes +0. */
NF_AVX512_INLINE __m512 load_part(const uint8_t *p, __mmask16 k, nf_src_type type)
{
    if (type == NF_SRC_F32) return _mm512_maskz_loadu_ps(k, p);
    return widen(_mm256_maskz_loadu_epi16(k, p), type);
}

/* clamp(f32(x * inv), qmin, qmax) + 1.5 * 2^23: a plain multiply, rounded to binary32 before the
 * clamp as the reference's is, then the reference's own rounding (method_impl.h,
 * nf_grouped_code): the clamped value lies in [-128, 127], so the sum lies in [2^23, 2^24) where
 * binary32's spacing is 1, and it is the code rounded to nearest even plus 1.5 * 2^23, exactly.
 * Its word is 0x4B400000 + code, so the code is the word's low byte (two's complement) and the
 * code's binary32 value is the sum minus 1.5 * 2^23 (exact). */
#define CODE_MAGIC 12582912.0f

NF_AVX512_INLINE __m512 code_biased(__m512 x, __m512 inv, __m512 qmin, __m512 qmax)
{
    __m512 t = _mm512_mul_ps(x, inv);
    t = _mm512_max_ps(t, qmin);
    t = _mm512_min_ps(t, qmax);
    return _mm512_add_ps(t, _mm512_set1_ps(CODE_MAGIC));
}

/* The 16 codes of a biased sum as bytes (VPMOVDB truncates to the low byte). */
NF_AVX512_INLINE __m128i code_bytes(__m512 biased) { return _mm512_cvtepi32_epi8(_mm512_castps_si512(biased)); }

/* The codes' binary32 values. */
NF_AVX512_INLINE __m512 code_values(__m512 biased) { return _mm512_sub_ps(biased, _mm512_set1_ps(CODE_MAGIC)); }

/* The largest |x| word of the n values at p (n a constant at the hot call sites). */
NF_AVX512_INLINE uint32_t group_amax(const uint8_t *p, size_t n, nf_src_type type, size_t esize)
{
    const __m512i mag = _mm512_set1_epi32(0x7FFFFFFF);
    size_t full = n / LANES, rest = n % LANES;
    __m512i mx = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (size_t v = 0; v < full; v++)
        mx = _mm512_max_epu32(mx, _mm512_and_si512(_mm512_castps_si512(load_full(p + v * LANES * esize, type)), mag));
    if (rest) {
        __mmask16 tail = (__mmask16)((1u << rest) - 1u);
        mx = _mm512_max_epu32(
            mx, _mm512_and_si512(_mm512_castps_si512(load_part(p + full * LANES * esize, tail, type)), mag));
    }
    return (uint32_t)_mm512_reduce_max_epu32(mx);
}

/* The statistics lanes (lanes_avx512.h) for absmax_row.inc. */
typedef nf_lanes512 STAT_LANES;
NF_AVX512_INLINE void stat_zero(STAT_LANES *l) { nf_lanes512_zero(l); }
NF_AVX512_INLINE bool stat_finish(STAT_LANES *l, size_t n, nf_errstats *st) { return nf_lanes512_finish(l, n, st); }
NF_AVX512_INLINE void stat_skip16(STAT_LANES *l) { nf_lanes512_skip16(l); }

/* The codes of the n values at p for the reciprocal inv (n a constant at the hot call sites);
 * with lanes, each value against sval * code, what its words represent (nf_grouped_value: the
 * code is the integral binary32 t, the product one rounding).  Masked-off lanes of a partial
 * vector hold x = 0, hence code 0 and y = 0: they add nothing. */
NF_AVX512_INLINE void group_codes(const uint8_t *p, size_t n, nf_src_type type, size_t esize, float inv, float sval,
                                  const nf_absmax_shape *s, int8_t *q, STAT_LANES *lanes)
{
    const __m512 vinv = _mm512_set1_ps(inv), qmin = _mm512_set1_ps(s->qmin), qmax = _mm512_set1_ps(s->qmax);
    const __m512 vs = _mm512_set1_ps(sval);
    size_t full = n / LANES, rest = n % LANES;
    /* the lanes in registers for the group: the int8 code stores may alias anything reached
     * through a pointer, which would send them to memory after every store */
    STAT_LANES l;
    if (lanes) l = *lanes;
#pragma GCC unroll 8
    for (size_t v = 0; v < full; v++) {
        __m512 x = load_full(p + v * LANES * esize, type);
        __m512 b = code_biased(x, vinv, qmin, qmax);
        _mm_storeu_si128((__m128i *)(void *)(q + v * LANES), code_bytes(b));
        if (lanes) nf_lanes512_step(&l, x, _mm512_mul_ps(vs, code_values(b)));
    }
    if (rest) {
        __mmask16 tail = (__mmask16)((1u << rest) - 1u);
        __m512 x = load_part(p + full * LANES * esize, tail, type);
        __m512 b = code_biased(x, vinv, qmin, qmax);
        _mm_mask_storeu_epi8(q + full * LANES, tail, code_bytes(b));
        if (lanes) nf_lanes512_step(&l, x, _mm512_mul_ps(vs, code_values(b)));
    }
    if (lanes) *lanes = l;
}

/* The scale words and reciprocals of LANES groups at once (absmax_simd.h's steps, lane-wise):
 * raw = amax / qmax (VDIVPS: the correctly rounded binary32 quotient), the binary16 word by
 * VCVTPS2PH with imm8 = 0 (round to nearest even, whatever MXCSR says: subnormal words and the
 * overflow to infinity at 65520 included), 0 -> 0x0001, inv = 1 / f32(word) (VCVTPH2PS is exact,
 * VDIVPS correctly rounded).  Lanes with amax == 0 get word 0 (their inv is unused).  false when
 * a lane's word is infinite. */
NF_AVX512_INLINE bool block_scales(const uint32_t *amax, float denominator, uint16_t *words, float *inv, float *sval)
{
    __m512i m = _mm512_loadu_si512(amax);
    __m512 raw = _mm512_div_ps(_mm512_castsi512_ps(m), _mm512_set1_ps(denominator));
    __m256i h = _mm512_maskz_cvtps_ph(ALL16, raw, _MM_FROUND_TO_NEAREST_INT); /* maskz: as above */
    h = _mm256_mask_mov_epi16(h, _mm256_cmpeq_epi16_mask(h, _mm256_setzero_si256()), _mm256_set1_epi16(1));
    __m256i exp = _mm256_and_si256(h, _mm256_set1_epi16(0x7C00));
    if (_mm256_cmpeq_epi16_mask(exp, _mm256_set1_epi16(0x7C00))) return false;
    h = _mm256_maskz_mov_epi16(_mm512_test_epi32_mask(m, m), h);
    _mm256_storeu_si256((__m256i *)(void *)words, h);
    __m512 v = _mm512_cvtph_ps(h);
    _mm512_storeu_ps(sval, v);
    _mm512_storeu_ps(inv, _mm512_div_ps(_mm512_set1_ps(1.0f), v));
    return true;
}

#define ABSMAX_INLINE NF_AVX512_INLINE
#include "method/simd/absmax_row.inc"

NF_AVX512_FN static bool absmax_row_avx512(const uint8_t *row, nf_src_type type, size_t k, const nf_absmax_shape *shape,
                                           int8_t *codes, uint16_t *scales, nf_errstats *st, size_t *measured)
{
    return absmax_row(row, type, k, shape, codes, scales, st, measured);
}

const nf_absmax_kernels nf_absmax_kernels_avx512 = {.name = "avx512", .row = absmax_row_avx512};

#else
typedef int nf_absmax_avx512_unused; /* not an x86 GCC/Clang build: no AVX-512 kernel */
#endif
