/* ggml_quantize's IQ3 trial kernel for AVX-512 F/BW/VL/DQ (ggml_simd.h, iq3_trials): 16 trials a
 * vector, the lane kernel of ggml_iq3_lanes.inc on 512-bit vectors with masks in mask registers,
 * the grid lookups by VPGATHERDD. */
#include "common/simd_target.h"
#include "method/ggml_grid3.h"
#include "method/ggml_quant.h"
#include "method/simd/ggml_simd.h"

#if NF_X86_KERNELS

#include <immintrin.h>

/* The gathers, whose -O0 macro forms trip -Wsign-conversion (an all-ones mask), as functions. */
NF_AVX512_INLINE __m512i gather4_z(const void *p, __m512i i)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-conversion"
    return _mm512_i32gather_epi32(i, p, 4);
#pragma GCC diagnostic pop
}

NF_AVX512_INLINE __m512i gather2_z(const void *p, __m512i i)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-conversion"
    return _mm512_i32gather_epi32(i, p, 2);
#pragma GCC diagnostic pop
}

NF_AVX512_INLINE __m512 fgather4_z(const float *p, __m512i i)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-conversion"
    return _mm512_i32gather_ps(i, p, 4);
#pragma GCC diagnostic pop
}

#define GQ(name) name##_z
#define GQ_FN NF_AVX512_FN
#define GQ_INLINE NF_AVX512_INLINE
#define GQ_W 16
#define vf __m512
#define vi __m512i
#define vm __mmask16
#define F1(s) _mm512_set1_ps(s)
#define I1(s) _mm512_set1_epi32(s)
#define FADD(a, b) _mm512_add_ps(a, b)
#define FSUB(a, b) _mm512_sub_ps(a, b)
#define FMUL(a, b) _mm512_mul_ps(a, b)
#define FLT(a, b) _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ)
#define MAND(a, b) ((__mmask16)((a) & (b)))
#define MANY(m) ((m) != 0)
#define FSEL(m, a, b) _mm512_mask_blend_ps(m, b, a)
#define ISEL(m, a, b) _mm512_mask_blend_epi32(m, b, a)
#define NEAREST(f)                                                                                                \
    _mm512_sub_epi32(_mm512_and_si512(_mm512_castps_si512(_mm512_add_ps(f, _mm512_set1_ps(12582912.0f))),      \
                                      _mm512_set1_epi32(0x007FFFFF)),                                            \
                     _mm512_set1_epi32(0x00400000))
#define ICLAMP(v, lo, hi) _mm512_max_epi32(_mm512_set1_epi32(lo), _mm512_min_epi32(_mm512_set1_epi32(hi), v))
#define I2F(v) _mm512_cvtepi32_ps(v)
#define IADD(a, b) _mm512_add_epi32(a, b)
#define ISUB(a, b) _mm512_sub_epi32(a, b)
#define FLOAD(p) _mm512_loadu_ps(p)
#define FSTORE(p, v) _mm512_storeu_ps(p, v)
#define ISTORE(p, v) _mm512_storeu_si512((void *)(p), v)
#define ILOAD(p) _mm512_loadu_si512((const void *)(p))
#define IAND(a, b) _mm512_and_si512(a, b)
#define ISHL(v, n) _mm512_sll_epi32(v, _mm_cvtsi32_si128(n))
#define ISRL(v, n) _mm512_srl_epi32(v, _mm_cvtsi32_si128(n))
#define IGT(a, b) _mm512_cmpgt_epi32_mask(a, b)
#define BITS(m) ((unsigned)(m))
#define GATHER32(p, i) gather4_z(p, i)
#define GATHER16(p, i) _mm512_and_si512(gather2_z(p, i), I1(0xFFFF))

#define FGATHER(p, i) fgather4_z(p, i)
#define STORE_I8(p, v) _mm_storeu_si128((__m128i *)(void *)(p), _mm512_cvtepi32_epi8(v))

static const int32_t lane_index_z[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

/* Queues the lanes of off with compressing stores. */
NF_AVX512_INLINE int queue_z(unsigned off, __m512i p, __m512i b, int32_t *pair, int32_t *base, int nq)
{
    const __mmask16 m = (__mmask16)off;
    _mm512_mask_compressstoreu_epi32(pair + nq, m, _mm512_add_epi32(p, _mm512_loadu_si512(lane_index_z)));
    _mm512_mask_compressstoreu_epi32(base + nq, m, b);
    return nq + __builtin_popcount(off);
}

#include "method/simd/ggml_iq3_lanes.inc"

#undef ILOAD
#undef IAND
#undef ISHL
#undef ISRL
#undef IGT
#undef BITS
#undef GATHER32
#undef GATHER16
#undef FGATHER
#undef STORE_I8
#include "method/simd/ggml_ops_undef.inc"

bool nf_gq3_trials_avx512(const nf_gq3_grid *g, int nt, const float *id, const float *scale, const float *xval,
                          const float *waux, const float *w, int8_t *L, bool *on_grid, float *sumqx, float *sumq2)
{
    return iq3_trials_z(g, nt, id, scale, xval, waux, w, L, on_grid, sumqx, sumq2);
}

#endif
