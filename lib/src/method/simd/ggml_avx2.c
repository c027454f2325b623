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

/* The four 8-lane magnitudes of 32 values, and the largest (exact in any order). */
NF_AVX2_INLINE float amax32(const float *x, __m256 *m)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int k = 0; k < 4; k++) m[k] = _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * k));
    __m256 v = _mm256_max_ps(_mm256_max_ps(m[0], m[1]), _mm256_max_ps(m[2], m[3]));
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_shuffle_ps(h, h, 1));
    return _mm_cvtss_f32(h);
}

/* gq_extreme of 32 values: the first lane holding the largest magnitude, +0 if all are zero. */
NF_AVX2_INLINE float extreme32(const float *x)
{
    __m256 m[4];
    float amax = amax32(x, m);
    if (amax == 0.0f) return 0.0f;
    __m256 a = _mm256_set1_ps(amax);
    uint32_t eq = 0;
    for (int k = 0; k < 4; k++) eq |= (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(m[k], a, _CMP_EQ_OQ)) << (8 * k);
    return x[__builtin_ctz(eq)];
}

/* The low bytes of 32 int32 codes (c[0..3], 8 each) to q, in order. */
NF_AVX2_INLINE void store_low_bytes32(uint8_t *q, const __m256i *c)
{
    const __m256i low = _mm256_set1_epi32(0xFF);
    __m256i p1 = _mm256_packus_epi32(_mm256_and_si256(c[0], low), _mm256_and_si256(c[1], low));
    __m256i p2 = _mm256_packus_epi32(_mm256_and_si256(c[2], low), _mm256_and_si256(c[3], low));
    __m256i p = _mm256_packus_epi16(p1, p2); /* no saturation: every value is <= 255 */
    p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)(void *)q, p);
}

NF_AVX2_FN static void codes_x0_avx2(unsigned nblk, int nmax, const float *x, float *d, uint8_t *L)
{
    const __m256 half = _mm256_set1_ps((float)nmax + 0.5f);
    const __m256i top = _mm256_set1_epi32(2 * nmax - 1);
    for (unsigned i = 0; i < nblk; i++, x += 32, L += 32) {
        float di = extreme32(x) / -(float)nmax;
        float id = di != 0.0f ? 1.0f / di : 0.0f;
        d[i] = di;
        __m256i c[4];
        for (int k = 0; k < 4; k++) {
            /* as codes_x0_avx512 */
            c[k] = _mm256_cvttps_epi32(_mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), _mm256_set1_ps(id)), half));
            c[k] = _mm256_min_epi32(_mm256_srai_epi32(_mm256_slli_epi32(c[k], 24), 24), top);
        }
        store_low_bytes32(L, c);
    }
}

NF_AVX2_FN static void codes_q8_0_avx2(unsigned nblk, const float *x, float *d, uint8_t *q)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (unsigned i = 0; i < nblk; i++, x += 32, q += 32) {
        __m256 m[4];
        float di = amax32(x, m) / 127.0f;
        float id = di != 0.0f ? 1.0f / di : 0.0f;
        d[i] = di;
        __m256i c[4];
        for (int k = 0; k < 4; k++) {
            /* roundf: truncate, then away from zero when the dropped part is at least 1/2 */
            __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), _mm256_set1_ps(id));
            __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
            __m256 up = _mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_sub_ps(v, t)), _mm256_set1_ps(0.5f), _CMP_GE_OQ);
            __m256 one = _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_and_ps(sign, v));
            c[k] = _mm256_cvttps_epi32(_mm256_add_ps(t, _mm256_and_ps(up, one)));
        }
        store_low_bytes32(q, c);
    }
}

NF_AVX2_FN static void requant_avx2(int n, const float *x, float d, bool with_min, float dm, int lo, int hi,
                                    int offset, uint8_t *L)
{
    requant_y(n, x, d, with_min, dm, lo, hi, offset, L);
}

const nf_gq_kernels nf_gq_kernels_avx2 = {.name = "avx2",
                                          .fit_min = fit_min_avx2,
                                          .fit_signed = fit_signed_avx2,
                                          .fit_q3 = fit_q3_avx2,
                                          .iq4_scales = iq4_scales_avx2,
                                          .codes_x0 = codes_x0_avx2,
                                          .codes_q8_0 = codes_q8_0_avx2,
                                          .requant = requant_avx2,
                                          .iq3_trials = nf_gq3_trials_avx2,
                                          .iq1s_split = nf_gq1s_split_avx2,
                                          .iq1m_split = nf_gq1m_split_avx2,
                                          .iq1_nearest = nf_gq1_nearest_avx2,
                                          .codes_q2_0 = nf_gq_codes_q2_0_avx2,
                                          .iq1_order = nf_gq1_order_avx2};

#endif
