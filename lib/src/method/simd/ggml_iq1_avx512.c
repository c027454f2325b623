/* ggml_quantize's IQ1 split searches for AVX-512 F/BW/VL/DQ (ggml_simd.h, iq1s_split and
 * iq1m_split): 16 candidate splits a vector, the lane kernels of ggml_iq1_lanes.inc on 512-bit
 * vectors with masks in mask registers. */
#include <pthread.h>

#include "common/simd_target.h"
#include "method/ggml_encoders.h"
#include "method/simd/ggml_simd.h"

#if NF_X86_KERNELS

#include <immintrin.h>

#define GQ(name) name##_z
#define GQ_FN NF_AVX512_FN
#define GQ_INLINE NF_AVX512_INLINE
#include "method/simd/ggml_ops_z.inc"
#define ILOAD(p) _mm512_loadu_si512((const void *)(p))
#define IGT(a, b) _mm512_cmpgt_epi32_mask(a, b)
#define BITS(m) ((unsigned)(m))
#include "method/simd/ggml_iq1_lanes.inc"
#include "method/simd/ggml_ops_undef.inc"

bool nf_gq1s_split_avx512(const float *sumx, const float *sumw, float s0, int *b1, int *b2, int *shift, float *scale)
{
    return iq1s_split_z(sumx, sumw, s0, b1, b2, shift, scale);
}

bool nf_gq1m_split_avx512(const float *x, const float *w, const int *idx, float s0, int *b1, int *b2, int *kind,
                          float *scale)
{
    return iq1m_split_z(x, w, idx, s0, b1, b2, kind, scale);
}

/* nf_gq1_nearest_ref (ggml_iq1.c) with GQ_W candidates of the list at a time: lane j computes the
 * reference's error of point list[j0 + j] with the same operations in the same order (diff =
 * scale xx[l] - x, d2 += w diff diff, value by value), and of the lanes below the running best (an
 * ordered "<", as the reference's: NaN and values from FLT_MAX up never win) the least error wins,
 * the first lane on a tie -- the reference's choice, since a later candidate replaces the best
 * only when strictly less.  A point's 8 levels are read as two 32-bit words. */
NF_AVX512_FN int nf_gq1_nearest_avx512(const uint8_t *levels, const uint16_t *list, unsigned n, const float *x,
                                       const float *w, float scale, const float *xx)
{
    float best = 3.40282347e38f;
    int pick = -1;
    for (unsigned j0 = 0; j0 < n; j0 += 16) {
        const unsigned nl = n - j0 < 16 ? n - j0 : 16;
        const __mmask16 live = (__mmask16)((1u << nl) - 1u);
        /* a masked load: nothing past the list's end is read */
        const __m512i idx = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(live, list + j0));
        const __m512i off = _mm512_sll_epi32(idx, _mm_cvtsi32_si128(3));
        const __m512i lo = gather1_z(levels, off);
        const __m512i hi = gather1_z(levels + 4, off);
        __m512 d2 = _mm512_setzero_ps();
        for (int i = 0; i < 8; i++) {
            const __m512i l = _mm512_and_si512(_mm512_srl_epi32(i < 4 ? lo : hi, _mm_cvtsi32_si128(8 * (i % 4))),
                                               _mm512_set1_epi32(0xFF));
            __m512 q = _mm512_set1_ps(xx[2]);
            q = _mm512_mask_blend_ps(_mm512_cmpeq_epi32_mask(l, _mm512_set1_epi32(1)), q, _mm512_set1_ps(xx[1]));
            q = _mm512_mask_blend_ps(_mm512_cmpeq_epi32_mask(l, _mm512_setzero_si512()), q, _mm512_set1_ps(xx[0]));
            const __m512 diff = _mm512_sub_ps(_mm512_mul_ps(_mm512_set1_ps(scale), q), _mm512_set1_ps(x[i]));
            d2 = _mm512_add_ps(d2, _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(w[i]), diff), diff));
        }
        const __mmask16 cand = _mm512_mask_cmp_ps_mask(live, d2, _mm512_set1_ps(best), _CMP_LT_OQ);
        if (!cand) continue;
        const float m = _mm512_mask_reduce_min_ps(cand, d2);
        const unsigned first = (unsigned)_mm512_mask_cmp_ps_mask(cand, d2, _mm512_set1_ps(m), _CMP_EQ_OQ);
        best = m;
        pick = list[j0 + (unsigned)__builtin_ctz(first)];
    }
    return pick;
}

/* nf_gq1_order_ref (ggml_iq1.c) by ranks: value j goes to the place of the values below it plus
 * the equal ones before it, which is where the stable sort puts it (the values are finite: the row
 * driver refuses others; with a NaN, whose comparisons all fail, the reference runs instead). */
NF_AVX512_FN void nf_gq1_order_avx512(const float *x, int n, int *idx)
{
    __m512 v[2];
    unsigned nan = 0;
    for (int k = 0; k < n / 16; k++) {
        v[k] = _mm512_loadu_ps(x + 16 * k);
        nan |= _mm512_cmp_ps_mask(v[k], v[k], _CMP_UNORD_Q);
    }
    if (nan) {
        nf_gq1_order_ref(x, n, idx);
        return;
    }
    for (int j = 0; j < n; j++) {
        const __m512 xj = _mm512_set1_ps(x[j]);
        uint32_t lt = 0, eq = 0;
        for (int k = 0; k < n / 16; k++) {
            lt |= (uint32_t)_mm512_cmp_ps_mask(v[k], xj, _CMP_LT_OQ) << (16 * k);
            eq |= (uint32_t)_mm512_cmp_ps_mask(v[k], xj, _CMP_EQ_OQ) << (16 * k);
        }
        idx[__builtin_popcount(lt) + __builtin_popcount(eq & ((1u << j) - 1u))] = j;
    }
}

#endif
