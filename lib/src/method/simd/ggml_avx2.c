/* ggml_quantize's searches for AVX2 (ggml_simd.h): one sub-block a lane, 8 lanes of binary32,
 * the lane kernels of ggml_lanes.inc on 256-bit vectors.  A super-block's 8 sub-blocks (Q4_K,
 * Q5_K) fill one vector, its 16 (Q2_K, Q3_K, Q6_K) two. */
#include "common/simd_target.h"
#include "method/ggml_quant.h"
#include "method/simd/ggml_simd.h"

#if NF_X86_KERNELS

#include <immintrin.h>

#define GQ(name) name##_y
#define GQ_FN NF_AVX2_FN
#define GQ_INLINE NF_AVX2_INLINE
#include "method/simd/ggml_ops_y.inc"
#include "method/simd/ggml_lanes.inc"
#include "method/simd/ggml_ops_undef.inc"

#define LANES 8

NF_AVX2_FN static void fit_min_avx2(int nsub, int n, int nmax, const float *x, const float *w, uint8_t *L,
                                    float *scales, float *mins, float rmin, float rdelta, int nstep, bool use_mad)
{
    for (int j = 0; j < nsub; j += LANES)
        fit_min_lanes_y(gq_min(LANES, nsub - j), n, nmax, x + j * n, w + j * n, L + j * n, scales + j, mins + j,
                        rmin, rdelta, nstep, use_mad);
}

NF_AVX2_FN static void fit_signed_avx2(int nsub, int n, int nmax, const float *x, const float *qw, int8_t *L,
                                       float *scales)
{
    for (int j = 0; j < nsub; j += LANES)
        fit_signed_lanes_y(gq_min(LANES, nsub - j), n, nmax, x + j * n, qw ? qw + j * n : NULL, L + j * n,
                           scales + j);
}

NF_AVX2_FN static void fit_q3_avx2(int nsub, int n, int nmax, const float *x, int8_t *L, float *scales)
{
    for (int j = 0; j < nsub; j += 2 * LANES)
        fit_q3_lanes_y(gq_min(2 * LANES, nsub - j), n, nmax, x + j * n, L + j * n, scales + j);
}

NF_AVX2_FN static void iq4_scales_avx2(int nsub, const float *x, const float *w, const int8_t *values, float *scales)
{
    for (int j = 0; j < nsub; j += LANES)
        iq4_scales_lanes_y(gq_min(LANES, nsub - j), x + 32 * j, w + 32 * j, values, scales + j);
}

const nf_gq_kernels nf_gq_kernels_avx2 = {.name = "avx2",
                                          .fit_min = fit_min_avx2,
                                          .fit_signed = fit_signed_avx2,
                                          .fit_q3 = fit_q3_avx2,
                                          .iq4_scales = iq4_scales_avx2};

#endif
