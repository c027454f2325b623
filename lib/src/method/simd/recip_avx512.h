/* f32(1 / v) for 16 binary16 values widened to binary32, without VDIVPS (internal to
 * method/simd: search_avx512.c's search_prep, and its exhaustive test in
 * tests/unit/test_method_search_fast.c).
 *
 * Why: grouped_search forms a reciprocal for each of some 60 candidate rows of every batch, and
 * VDIVPS on 512 bits issues one every ~10 cycles; the estimate and two correction steps below
 * pipeline with the rest.  VRCP14PS is within 2^-14 (relative) of 1 / v; one step
 * y + y (1 - v y) (the residual formed by one fused operation) brings that within an ulp, and
 * the second step, from a faithful y whose residual the FMA forms exactly, rounds to the nearest
 * binary32 (Markstein's reciprocal iteration; v's significand has at most 11 bits, so the one
 * exception of an all-ones 24-bit significand cannot occur).  The test checks every binary16
 * word against the division.  Infinite v gives +-0, as the division does; v = 0 is not asked
 * for (the words are valid). */
#ifndef NINFER_METHOD_SIMD_RECIP_AVX512_H
#define NINFER_METHOD_SIMD_RECIP_AVX512_H

#include "common/simd_target.h"

#if NF_X86_KERNELS
#include <immintrin.h>
#include <math.h>

NF_AVX512_INLINE __m512 nf_recip16_avx512(__m512 v)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512 y0 = _mm512_rcp14_ps(v);
    __m512 y = _mm512_fmadd_ps(_mm512_fnmadd_ps(v, y0, one), y0, y0);
    y = _mm512_fmadd_ps(_mm512_fnmadd_ps(v, y, one), y, y);
    /* infinite v: VRCP14PS gives the exact +-0, which the steps would turn into NaN */
    __mmask16 inf = _mm512_cmp_ps_mask(_mm512_abs_ps(v), _mm512_set1_ps(INFINITY), _CMP_EQ_OQ);
    return _mm512_mask_blend_ps(inf, y, y0);
}
#endif

#endif
