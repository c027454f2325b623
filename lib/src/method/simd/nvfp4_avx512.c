/* nvfp4_quantize group kernel for AVX-512 F + BW + VL (nvfp4_simd.h): a group of 16 elements is
 * one vector of binary32 lanes (BF16 widened by a shift, binary16 by VCVTPH2PS, exact for every
 * value).  The group's largest magnitude is a reduction of VPMAXUD over the sign-cleared words,
 * the scale word comes from nf_nvfp4_scale_of (scalar, once a group), each code from one VDIVPS
 * by the group's multiplier (exact IEEE division, as the reference's x / sv) and seven ordered
 * compares against the E2M1 boundaries, each adding one under its mask; the sign is a compare
 * y < 0.  VPMOVDB narrows the codes (<= 15) to bytes. */
#include "common/simd_target.h"
#include "method/simd/nvfp4_simd.h"

#if NF_X86_KERNELS

#include <immintrin.h>

/* 16 elements at p as binary32. */
NF_AVX512_INLINE __m512 load16(const uint8_t *p, nf_src_type type)
{
    if (type == NF_SRC_F32) return _mm512_loadu_ps(p);
    __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)p);
    if (type == NF_SRC_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* c + 1 where a > bound (passed_gt) or a >= bound (passed_ge): one function per predicate,
 * whose immediate must be a constant even at -O0 (the sanitizer build). */
NF_AVX512_INLINE __m512i passed_gt(__m512i c, __m512 a, float bound)
{
    return _mm512_mask_add_epi32(c, _mm512_cmp_ps_mask(a, _mm512_set1_ps(bound), _CMP_GT_OQ), c, _mm512_set1_epi32(1));
}

NF_AVX512_INLINE __m512i passed_ge(__m512i c, __m512 a, float bound)
{
    return _mm512_mask_add_epi32(c, _mm512_cmp_ps_mask(a, _mm512_set1_ps(bound), _CMP_GE_OQ), c, _mm512_set1_epi32(1));
}

/* The E2M1 words of v / sv into 16 bytes at codes. */
NF_AVX512_INLINE void codes16(__m512 v, float sv, uint8_t *codes)
{
    const __m512i mag = _mm512_set1_epi32(0x7FFFFFFF);
    __m512 y = _mm512_div_ps(v, _mm512_set1_ps(sv));
    __m512 a = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(y), mag));
    __m512i c = _mm512_setzero_si512();
    c = passed_gt(c, a, 0.25f);
    c = passed_ge(c, a, 0.75f);
    c = passed_gt(c, a, 1.25f);
    c = passed_ge(c, a, 1.75f);
    c = passed_gt(c, a, 2.5f);
    c = passed_ge(c, a, 3.5f);
    c = passed_gt(c, a, 5.0f);
    c = _mm512_mask_or_epi32(c, _mm512_cmp_ps_mask(y, _mm512_setzero_ps(), _CMP_LT_OQ), c, _mm512_set1_epi32(8));
    _mm_storeu_si128((__m128i *)(void *)codes, _mm512_cvtepi32_epi8(c));
}

/* Groups four at a time, each step for all four before the next (the groups are independent:
 * their scale chains overlap), then one at a time. */
NF_AVX512_INLINE bool encode(const uint8_t *src, nf_src_type type, size_t esize, size_t ngroups,
                             const nf_nvfp4_global *g, uint8_t *codes, uint8_t *scales)
{
    const __m512i mag = _mm512_set1_epi32(0x7FFFFFFF);
    const size_t step = NF_NVFP4_GROUP * esize;
    size_t j = 0;
    for (; j + 4 <= ngroups; j += 4) {
        __m512 v[4];
        uint32_t bw[4];
        float sv[4];
        for (int i = 0; i < 4; i++) {
            v[i] = load16(src + (j + (size_t)i) * step, type);
            bw[i] = (uint32_t)_mm512_reduce_max_epu32(_mm512_and_si512(_mm512_castps_si512(v[i]), mag));
        }
        uint32_t m01 = bw[0] > bw[1] ? bw[0] : bw[1], m23 = bw[2] > bw[3] ? bw[2] : bw[3];
        if ((m01 > m23 ? m01 : m23) >= 0x7F800000u) return false;
        for (int i = 0; i < 4; i++) scales[j + (size_t)i] = nf_nvfp4_scale_of(bw[i], g, &sv[i]);
        for (int i = 0; i < 4; i++) codes16(v[i], sv[i], codes + (j + (size_t)i) * NF_NVFP4_GROUP);
    }
    for (; j < ngroups; j++) {
        __m512 v = load16(src + j * step, type);
        uint32_t bw = (uint32_t)_mm512_reduce_max_epu32(_mm512_and_si512(_mm512_castps_si512(v), mag));
        if (bw >= 0x7F800000u) return false;
        float sv;
        scales[j] = nf_nvfp4_scale_of(bw, g, &sv);
        codes16(v, sv, codes + j * NF_NVFP4_GROUP);
    }
    return true;
}

NF_AVX512_FN static bool nvfp4_groups_avx512(const uint8_t *src, nf_src_type type, size_t ngroups,
                                             const nf_nvfp4_global *g, uint8_t *codes, uint8_t *scales)
{
    switch (type) {
    case NF_SRC_F32: return encode(src, NF_SRC_F32, 4, ngroups, g, codes, scales);
    case NF_SRC_F16: return encode(src, NF_SRC_F16, 2, ngroups, g, codes, scales);
    case NF_SRC_BF16: return encode(src, NF_SRC_BF16, 2, ngroups, g, codes, scales);
    default: return false;
    }
}

/* nvfp4_search of one group: the eight candidates side by side, one per lane (binary32 lanes
 * of 256 bits, their errors in binary64 lanes of 512), each lane summing its terms in column
 * order as nf_nvfp4_group_error does; then the candidates compete in their order. */
NF_AVX512_FN static uint8_t nvfp4_search_avx512(const float *x, const float *w, const nf_nvfp4_global *g,
                                                uint8_t *codes)
{
    const __m512i mag = _mm512_set1_epi32(0x7FFFFFFF);
    uint32_t bw = (uint32_t)_mm512_reduce_max_epu32(_mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(x)), mag));
    float sv0;
    uint8_t best = nf_nvfp4_scale_of(bw, g, &sv0);
    double best_err = nf_nvfp4_group_error(x, w, best, g, codes);
    const int w0 = best;
    const __m256i offsets = _mm256_loadu_si256((const __m256i *)(const void *)nf_nvfp4_search_offsets);
    __m256i e = _mm256_add_epi32(_mm256_set1_epi32(w0), offsets);
    __mmask8 valid = (__mmask8)(_mm256_cmpge_epi32_mask(e, _mm256_set1_epi32(1)) &
                                _mm256_cmple_epi32_mask(e, _mm256_set1_epi32(0x7E)));
    e = _mm256_mask_blend_epi32(valid, _mm256_set1_epi32(w0), e);
    /* E4M3FN values of the words 0x01..0x7E: subnormals e * 2^-9, normals rebiased */
    __m256 sn = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_slli_epi32(e, 20), _mm256_set1_epi32(120 << 23)));
    __m256 ss = _mm256_mul_ps(_mm256_cvtepi32_ps(e), _mm256_set1_ps(0x1p-9f));
    __m256 s = _mm256_mask_blend_ps(_mm256_cmplt_epi32_mask(e, _mm256_set1_epi32(8)), sn, ss);
    __m256 sv = _mm256_mul_ps(s, _mm256_set1_ps(g->gs));
    float df;
    memcpy(&df, &g->divisor, sizeof df);
    const __m256 d = _mm256_set1_ps(df), absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    const __m256 table = _mm256_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f);
    const __m256i one = _mm256_set1_epi32(1);
    __m512d err = _mm512_setzero_pd();
    for (unsigned i = 0; i < NF_NVFP4_GROUP; i++) {
        __m256 xi = _mm256_set1_ps(x[i]);
        __m256 y = _mm256_div_ps(xi, sv);
        __m256 a = _mm256_and_ps(y, absm);
        __m256i c = _mm256_setzero_si256();
        c = _mm256_mask_add_epi32(c, _mm256_cmp_ps_mask(a, _mm256_set1_ps(0.25f), _CMP_GT_OQ), c, one);
        c = _mm256_mask_add_epi32(c, _mm256_cmp_ps_mask(a, _mm256_set1_ps(0.75f), _CMP_GE_OQ), c, one);
        c = _mm256_mask_add_epi32(c, _mm256_cmp_ps_mask(a, _mm256_set1_ps(1.25f), _CMP_GT_OQ), c, one);
        c = _mm256_mask_add_epi32(c, _mm256_cmp_ps_mask(a, _mm256_set1_ps(1.75f), _CMP_GE_OQ), c, one);
        c = _mm256_mask_add_epi32(c, _mm256_cmp_ps_mask(a, _mm256_set1_ps(2.5f), _CMP_GT_OQ), c, one);
        c = _mm256_mask_add_epi32(c, _mm256_cmp_ps_mask(a, _mm256_set1_ps(3.5f), _CMP_GE_OQ), c, one);
        c = _mm256_mask_add_epi32(c, _mm256_cmp_ps_mask(a, _mm256_set1_ps(5.0f), _CMP_GT_OQ), c, one);
        __m256 v = _mm256_div_ps(_mm256_mul_ps(_mm256_permutevar8x32_ps(table, c), s), d);
        v = _mm256_mask_xor_ps(v, _mm256_cmp_ps_mask(y, _mm256_setzero_ps(), _CMP_LT_OQ), v, _mm256_set1_ps(-0.0f));
        __m512d diff = _mm512_sub_pd(_mm512_cvtps_pd(xi), _mm512_cvtps_pd(v));
        __m512d wt = _mm512_set1_pd(w ? (double)w[i] : 1.0);
        err = _mm512_add_pd(err, _mm512_mul_pd(_mm512_mul_pd(wt, diff), diff));
    }
    double lanes[8];
    int words[8];
    _mm512_storeu_pd(lanes, err);
    _mm256_storeu_si256((__m256i *)(void *)words, e);
    return nf_nvfp4_compete(lanes, words, (unsigned)valid, w0, best_err, x, w, g, codes);
}

const nf_nvfp4_kernels nf_nvfp4_kernels_avx512 = {
    .name = "avx512", .groups = nvfp4_groups_avx512, .search = nvfp4_search_avx512};

#else
typedef int nf_nvfp4_avx512_unused; /* not an x86 GCC/Clang build: no AVX-512 kernel */
#endif
