/* ggml_quantize's searches for AVX-512 F/BW/VL (ggml_simd.h): one sub-block a lane, the lane
 * kernels of ggml_lanes.inc on 512-bit vectors (16 lanes, masks in mask registers) for a
 * super-block's 16 sub-blocks (Q2_K, Q3_K, Q6_K), and on 256-bit vectors for 8 (Q4_K, Q5_K),
 * which would leave half of a 512-bit vector idle. */
#include "common/simd_target.h"
#include "method/ggml_quant.h"
#include "method/simd/ggml_simd.h"

#if NF_X86_KERNELS

#include <immintrin.h>

/* 16 lanes */
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
#define FDIV(a, b) _mm512_div_ps(a, b)
#define FNEG(a) _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a), _mm512_set1_epi32(INT32_MIN)))
#define FABS(a) _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(INT32_MAX)))
#define FMIN(a, b) _mm512_min_ps(a, b)
#define FMAX(a, b) _mm512_max_ps(a, b)
#define FLT(a, b) _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ)
#define FGT(a, b) _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ)
#define FLE(a, b) _mm512_cmp_ps_mask(a, b, _CMP_LE_OQ)
#define FNE(a, b) _mm512_cmp_ps_mask(a, b, _CMP_NEQ_UQ)
#define INE(a, b) _mm512_cmpneq_epi32_mask(a, b)
#define MAND(a, b) ((__mmask16)((a) & (b)))
#define MOR(a, b) ((__mmask16)((a) | (b)))
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
#define TBL16(t, i) _mm512_permutexvar_ps(i, _mm512_loadu_ps(t))
#define FLOAD(p) _mm512_loadu_ps(p)
#define FSTORE(p, v) _mm512_storeu_ps(p, v)
#define ISTORE(p, v) _mm512_storeu_si512((void *)(p), v)
#include "method/simd/ggml_lanes.inc"
#include "method/simd/ggml_ops_undef.inc"

/* 8 lanes */
#define GQ(name) name##_y
#define GQ_FN NF_AVX512_FN
#define GQ_INLINE NF_AVX512_INLINE
#include "method/simd/ggml_ops_y.inc"
#include "method/simd/ggml_lanes.inc"
#include "method/simd/ggml_ops_undef.inc"

NF_AVX512_FN static void fit_min_avx512(int nsub, int n, int nmax, const float *x, const float *w, uint8_t *L,
                                        float *scales, float *mins, float rmin, float rdelta, int nstep,
                                        bool use_mad)
{
    for (int j = 0; j < nsub;) {
        int k = gq_min(16, nsub - j);
        if (k > 8)
            fit_min_lanes_z(k, n, nmax, x + j * n, w + j * n, L + j * n, scales + j, mins + j, rmin, rdelta, nstep,
                            use_mad);
        else
            fit_min_lanes_y(k, n, nmax, x + j * n, w + j * n, L + j * n, scales + j, mins + j, rmin, rdelta, nstep,
                            use_mad);
        j += k;
    }
}

NF_AVX512_FN static void fit_signed_avx512(int nsub, int n, int nmax, const float *x, const float *qw, int8_t *L,
                                           float *scales)
{
    for (int j = 0; j < nsub;) {
        int k = gq_min(16, nsub - j);
        const float *w = qw ? qw + j * n : NULL;
        if (k > 8) fit_signed_lanes_z(k, n, nmax, x + j * n, w, L + j * n, scales + j);
        else fit_signed_lanes_y(k, n, nmax, x + j * n, w, L + j * n, scales + j);
        j += k;
    }
}

NF_AVX512_FN static void fit_q3_avx512(int nsub, int n, int nmax, const float *x, int8_t *L, float *scales)
{
    /* two chains: 32 sub-blocks in two 512-bit vectors, 16 or fewer in two 256-bit ones */
    for (int j = 0; j < nsub;) {
        int k = gq_min(32, nsub - j);
        if (k > 16) fit_q3_lanes_z(k, n, nmax, x + j * n, L + j * n, scales + j);
        else fit_q3_lanes_y(k, n, nmax, x + j * n, L + j * n, scales + j);
        j += k;
    }
}

/* 8 sub-blocks (IQ4_XS) in one 256-bit vector */
NF_AVX512_FN static void iq4_scales_avx512(int nsub, const float *x, const float *w, const int8_t *values,
                                           float *scales)
{
    for (int j = 0; j < nsub;) {
        int k = gq_min(16, nsub - j);
        if (k > 8) iq4_scales_lanes_z(k, x + 32 * j, w + 32 * j, values, scales + j);
        else iq4_scales_lanes_y(k, x + 32 * j, w + 32 * j, values, scales + j);
        j += k;
    }
}

/* The signed value of largest magnitude of 32 values, the first on a tie, +0 if all are zero
 * (gq_extreme): the maximum magnitude (exact in any order), then the first lane holding it. */
NF_AVX512_INLINE float extreme32(const float *x, __m512 *abs_lo, __m512 *abs_hi)
{
    const __m512i mag = _mm512_set1_epi32(INT32_MAX);
    __m512 a = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(x)), mag));
    __m512 b = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(x + 16)), mag));
    *abs_lo = a;
    *abs_hi = b;
    float amax = _mm512_reduce_max_ps(_mm512_max_ps(a, b));
    if (amax == 0.0f) return 0.0f;
    __m512 m = _mm512_set1_ps(amax);
    uint32_t eq = (uint32_t)_mm512_cmpeq_ps_mask(a, m) | (uint32_t)_mm512_cmpeq_ps_mask(b, m) << 16;
    return x[__builtin_ctz(eq)];
}

/* The low bytes of 16 int32 codes to q. */
NF_AVX512_INLINE void store_low_bytes(uint8_t *q, __m512i v) { _mm_storeu_si128((__m128i *)(void *)q, _mm512_cvtepi32_epi8(v)); }

NF_AVX512_FN static void codes_x0_avx512(unsigned nblk, int nmax, const float *x, float *d, uint8_t *L)
{
    const __m512 half = _mm512_set1_ps((float)nmax + 0.5f);
    const __m512i top = _mm512_set1_epi32(2 * nmax - 1);
    for (unsigned i = 0; i < nblk; i++, x += 32, L += 32) {
        __m512 a, b;
        float di = extreme32(x, &a, &b) / -(float)nmax;
        float id = di != 0.0f ? 1.0f / di : 0.0f;
        d[i] = di;
        for (int h = 0; h < 2; h++) {
            /* x * id + (nmax + 0.5), truncated (0x80000000 out of range, as gq_trunc_i8), its low
             * byte as int8, at most 2 nmax - 1 */
            __m512i c = _mm512_cvttps_epi32(_mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(x + 16 * h), _mm512_set1_ps(id)), half));
            c = _mm512_min_epi32(_mm512_srai_epi32(_mm512_slli_epi32(c, 24), 24), top);
            store_low_bytes(L + 16 * h, c);
        }
    }
}

/* VRNDSCALEPS toward zero, exceptions suppressed (the -O0 macro form of the intrinsic trips
 * -Wsign-conversion). */
NF_AVX512_INLINE __m512 trunc_ps(__m512 v)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-conversion"
    return _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
#pragma GCC diagnostic pop
}

NF_AVX512_FN static void codes_q8_0_avx512(unsigned nblk, const float *x, float *d, uint8_t *q)
{
    const __m512i sign = _mm512_set1_epi32(INT32_MIN);
    for (unsigned i = 0; i < nblk; i++, x += 32, q += 32) {
        __m512 a, b;
        (void)extreme32(x, &a, &b);
        float amax = _mm512_reduce_max_ps(_mm512_max_ps(a, b));
        float di = amax / 127.0f;
        float id = di != 0.0f ? 1.0f / di : 0.0f;
        d[i] = di;
        for (int h = 0; h < 2; h++) {
            /* roundf: truncate, then away from zero when the dropped part is at least 1/2 */
            __m512 v = _mm512_mul_ps(_mm512_loadu_ps(x + 16 * h), _mm512_set1_ps(id));
            __m512 t = trunc_ps(v);
            __m512 fr = _mm512_castsi512_ps(_mm512_andnot_si512(sign, _mm512_castps_si512(_mm512_sub_ps(v, t))));
            __mmask16 up = _mm512_cmp_ps_mask(fr, _mm512_set1_ps(0.5f), _CMP_GE_OQ);
            __m512 one = _mm512_castsi512_ps(
                _mm512_or_si512(_mm512_castps_si512(_mm512_set1_ps(1.0f)), _mm512_and_si512(sign, _mm512_castps_si512(v))));
            __m512 r = _mm512_mask_add_ps(t, up, t, one);
            store_low_bytes(q + 16 * h, _mm512_cvttps_epi32(r));
        }
    }
}

NF_AVX512_FN static void requant_avx512(int n, const float *x, float d, bool with_min, float dm, int lo, int hi,
                                        int offset, uint8_t *L)
{
    if (n % 16) requant_y(n, x, d, with_min, dm, lo, hi, offset, L);
    else requant_z(n, x, d, with_min, dm, lo, hi, offset, L);
}

const nf_gq_kernels nf_gq_kernels_avx512 = {.name = "avx512",
                                            .fit_min = fit_min_avx512,
                                            .fit_signed = fit_signed_avx512,
                                            .fit_q3 = fit_q3_avx512,
                                            .iq4_scales = iq4_scales_avx512,
                                            .codes_x0 = codes_x0_avx512,
                                            .codes_q8_0 = codes_q8_0_avx512,
                                            .requant = requant_avx512,
                                            .iq3_trials = nf_gq3_trials_avx512,
                                            .iq1s_split = nf_gq1s_split_avx512,
                                            .iq1m_split = nf_gq1m_split_avx512,
                                            .iq1_nearest = nf_gq1_nearest_avx512,
                                            .codes_q2_0 = nf_gq_codes_q2_0_avx512,
                                            .iq1_order = nf_gq1_order_avx512};

#endif
