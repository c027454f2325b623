/* nvfp4_quantize group kernel for AVX2 + F16C (nvfp4_simd.h): a group of 16 elements is two
 * vectors of 8 binary32 lanes (BF16 widened by a shift, binary16 by F16C's VCVTPH2PS, exact for
 * every value).  The group's largest magnitude is a VPMAXUD of the sign-cleared words, the scale
 * word comes from nf_nvfp4_scale_of (scalar, once a group), each code from one VDIVPS by the
 * group's multiplier (exact IEEE division, as the reference's x / sv) and seven ordered compares
 * against the E2M1 boundaries, whose all-ones masks are subtracted to count them; the sign is a
 * compare y < 0.  The int32 codes (<= 15) narrow to bytes with unsigned saturating packs, which
 * never saturate. */
#include "common/simd_target.h"
#include "method/simd/nvfp4_simd.h"

#if NF_X86_KERNELS

#include <immintrin.h>

/* 8 elements at p as binary32. */
NF_AVX2_INLINE __m256 load8(const uint8_t *p, nf_src_type type)
{
    if (type == NF_SRC_F32) return _mm256_loadu_ps((const float *)(const void *)p);
    __m128i h = _mm_loadu_si128((const __m128i *)(const void *)p);
    if (type == NF_SRC_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* c + 1 where a > bound (passed_gt) or a >= bound (passed_ge): one function per predicate,
 * whose immediate must be a constant even at -O0 (the sanitizer build). */
NF_AVX2_INLINE __m256i passed_gt(__m256i c, __m256 a, float bound)
{
    return _mm256_sub_epi32(c, _mm256_castps_si256(_mm256_cmp_ps(a, _mm256_set1_ps(bound), _CMP_GT_OQ)));
}

NF_AVX2_INLINE __m256i passed_ge(__m256i c, __m256 a, float bound)
{
    return _mm256_sub_epi32(c, _mm256_castps_si256(_mm256_cmp_ps(a, _mm256_set1_ps(bound), _CMP_GE_OQ)));
}

/* The E2M1 words of y, as int32 lanes. */
NF_AVX2_INLINE __m256i code_lanes(__m256 y)
{
    __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), y);
    __m256i c = _mm256_setzero_si256();
    c = passed_gt(c, a, 0.25f);
    c = passed_ge(c, a, 0.75f);
    c = passed_gt(c, a, 1.25f);
    c = passed_ge(c, a, 1.75f);
    c = passed_gt(c, a, 2.5f);
    c = passed_ge(c, a, 3.5f);
    c = passed_gt(c, a, 5.0f);
    __m256i neg = _mm256_castps_si256(_mm256_cmp_ps(y, _mm256_setzero_ps(), _CMP_LT_OQ));
    return _mm256_or_si256(c, _mm256_and_si256(neg, _mm256_set1_epi32(8)));
}

NF_AVX2_INLINE uint32_t hmax_u32(__m256i v)
{
    __m128i a = _mm_max_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    a = _mm_max_epu32(a, _mm_shuffle_epi32(a, _MM_SHUFFLE(1, 0, 3, 2)));
    a = _mm_max_epu32(a, _mm_shuffle_epi32(a, _MM_SHUFFLE(2, 3, 0, 1)));
    return (uint32_t)_mm_cvtsi128_si32(a);
}

NF_AVX2_INLINE bool encode(const uint8_t *src, nf_src_type type, size_t esize, size_t ngroups, const nf_nvfp4_global *g,
                           uint8_t *codes, uint8_t *scales)
{
    const __m256i mag = _mm256_set1_epi32(0x7FFFFFFF);
    for (size_t j = 0; j < ngroups; j++, src += NF_NVFP4_GROUP * esize, codes += NF_NVFP4_GROUP) {
        __m256 v0 = load8(src, type), v1 = load8(src + 8 * esize, type);
        __m256i m = _mm256_max_epu32(_mm256_and_si256(_mm256_castps_si256(v0), mag),
                                     _mm256_and_si256(_mm256_castps_si256(v1), mag));
        uint32_t bw = hmax_u32(m);
        if (bw >= 0x7F800000u) return false;
        float sv;
        scales[j] = nf_nvfp4_scale_of(bw, g, &sv);
        const __m256 vs = _mm256_set1_ps(sv);
        __m256i q0 = code_lanes(_mm256_div_ps(v0, vs)), q1 = code_lanes(_mm256_div_ps(v1, vs));
        /* packs work within 128-bit halves: words q0lo q1lo | q0hi q1hi, bytes likewise */
        __m256i w = _mm256_packus_epi32(q0, q1);
        __m128i b = _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
        _mm_storeu_si128((__m128i *)(void *)codes, _mm_shuffle_epi32(b, _MM_SHUFFLE(3, 1, 2, 0)));
    }
    return true;
}

NF_AVX2_FN static bool nvfp4_groups_avx2(const uint8_t *src, nf_src_type type, size_t ngroups, const nf_nvfp4_global *g,
                                         uint8_t *codes, uint8_t *scales)
{
    switch (type) {
    case NF_SRC_F32: return encode(src, NF_SRC_F32, 4, ngroups, g, codes, scales);
    case NF_SRC_F16: return encode(src, NF_SRC_F16, 2, ngroups, g, codes, scales);
    case NF_SRC_BF16: return encode(src, NF_SRC_BF16, 2, ngroups, g, codes, scales);
    default: return false;
    }
}

/* nvfp4_search of one group: the eight candidates side by side, one per binary32 lane, their
 * errors in two vectors of four binary64 lanes, each lane summing its terms in column order as
 * nf_nvfp4_group_error does; then the candidates compete in their order. */
NF_AVX2_FN static uint8_t nvfp4_search_avx2(const float *x, const float *w, const nf_nvfp4_global *g, uint8_t *codes)
{
    const __m256i mag = _mm256_set1_epi32(0x7FFFFFFF);
    __m256i m = _mm256_max_epu32(_mm256_and_si256(_mm256_castps_si256(_mm256_loadu_ps(x)), mag),
                                 _mm256_and_si256(_mm256_castps_si256(_mm256_loadu_ps(x + 8)), mag));
    float sv0;
    uint8_t best = nf_nvfp4_scale_of(hmax_u32(m), g, &sv0);
    double best_err = nf_nvfp4_group_error(x, w, best, g, codes);
    const int w0 = best;
    const __m256i offsets = _mm256_loadu_si256((const __m256i *)(const void *)nf_nvfp4_search_offsets);
    __m256i e = _mm256_add_epi32(_mm256_set1_epi32(w0), offsets);
    __m256i valid = _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(1), e),
                                        _mm256_cmpgt_epi32(_mm256_set1_epi32(0x7F), e));
    e = _mm256_blendv_epi8(_mm256_set1_epi32(w0), e, valid);
    /* E4M3FN values of the words 0x01..0x7E: subnormals e * 2^-9, normals rebiased */
    __m256 sn = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_slli_epi32(e, 20), _mm256_set1_epi32(120 << 23)));
    __m256 ss = _mm256_mul_ps(_mm256_cvtepi32_ps(e), _mm256_set1_ps(0x1p-9f));
    __m256 s = _mm256_blendv_ps(sn, ss, _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(8), e)));
    __m256 sv = _mm256_mul_ps(s, _mm256_set1_ps(g->gs));
    float df;
    memcpy(&df, &g->divisor, sizeof df);
    const __m256 d = _mm256_set1_ps(df);
    const __m256 table = _mm256_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f);
    __m256d err_lo = _mm256_setzero_pd(), err_hi = _mm256_setzero_pd();
    for (unsigned i = 0; i < NF_NVFP4_GROUP; i++) {
        __m256 xi = _mm256_set1_ps(x[i]);
        __m256 y = _mm256_div_ps(xi, sv);
        __m256i c = _mm256_and_si256(code_lanes(y), _mm256_set1_epi32(7));
        __m256 v = _mm256_div_ps(_mm256_mul_ps(_mm256_permutevar8x32_ps(table, c), s), d);
        __m256 neg = _mm256_cmp_ps(y, _mm256_setzero_ps(), _CMP_LT_OQ);
        v = _mm256_xor_ps(v, _mm256_and_ps(neg, _mm256_set1_ps(-0.0f)));
        __m256d xd = _mm256_set1_pd((double)x[i]), wt = _mm256_set1_pd(w ? (double)w[i] : 1.0);
        __m256d dlo = _mm256_sub_pd(xd, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
        __m256d dhi = _mm256_sub_pd(xd, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
        err_lo = _mm256_add_pd(err_lo, _mm256_mul_pd(_mm256_mul_pd(wt, dlo), dlo));
        err_hi = _mm256_add_pd(err_hi, _mm256_mul_pd(_mm256_mul_pd(wt, dhi), dhi));
    }
    double lanes[8];
    int words[8];
    _mm256_storeu_pd(lanes, err_lo);
    _mm256_storeu_pd(lanes + 4, err_hi);
    _mm256_storeu_si256((__m256i *)(void *)words, e);
    return nf_nvfp4_compete(lanes, words, (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(valid)), w0, best_err, x, w,
                            g, codes);
}

const nf_nvfp4_kernels nf_nvfp4_kernels_avx2 = {
    .name = "avx2", .groups = nvfp4_groups_avx2, .search = nvfp4_search_avx2};

#else
typedef int nf_nvfp4_avx2_unused; /* not an x86 GCC/Clang build: no AVX2 kernel */
#endif
