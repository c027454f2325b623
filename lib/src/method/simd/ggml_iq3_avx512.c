/* ggml_quantize's IQ3 trial kernel for AVX-512 F/BW/VL/DQ (ggml_simd.h, iq3_trials): 16 trials a
 * vector, the lane kernel of ggml_iq3_lanes.inc on 512-bit vectors with masks in mask registers,
 * the grid lookups by VPGATHERDD. */
#include "common/simd_target.h"
#include "method/ggml_grid3.h"
#include "method/ggml_encoders.h"
#include "method/simd/ggml_simd.h"

#if NF_X86_KERNELS

#include <immintrin.h>

#define GQ(name) name##_z
#define GQ_FN NF_AVX512_FN
#define GQ_INLINE NF_AVX512_INLINE
#include "method/simd/ggml_ops_z.inc"
#define ILOAD(p) _mm512_loadu_si512((const void *)(p))
#define IAND(a, b) _mm512_and_si512(a, b)
#define ISHL(v, n) _mm512_sll_epi32(v, _mm_cvtsi32_si128(n))
#define ISRL(v, n) _mm512_srl_epi32(v, _mm_cvtsi32_si128(n))
#define IGT(a, b) _mm512_cmpgt_epi32_mask(a, b)
#define BITS(m) ((unsigned)(m))
#define GATHER32(p, i) gather4_z(p, i)
#define BLOAD(p) _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(p)))
#define FEQ(a, b) _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ)
#define FMIN_OF(m, v) _mm512_mask_reduce_min_ps(m, v)
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
#include "method/simd/ggml_ops_undef.inc"

bool nf_gq3_trials_avx512(const nf_gq3_grid *g, int nt, const float *id, const float *scale, const float *xval,
                          const float *waux, const float *w, int8_t *L, uint32_t *on_grid, float *sumqx, float *sumq2)
{
    return iq3_trials_z(g, nt, id, scale, xval, waux, w, L, on_grid, sumqx, sumq2);
}

#endif
