/* Layout kernels for AVX2 + F16C (kernels.h): 8 binary32 lanes per instruction for values, 16 or
 * 32 byte lanes for code unpacking.
 *
 * Values are produced by the reference's own operations (binary32 multiply or divide of the same
 * exact operands, in the same operand order); words are unpacked by masks, shifts, byte
 * shuffles and unpacks.  Every loop does whole vectors inside the caller's bounds and leaves the
 * remaining elements to the scalar code, so nothing outside the given arrays is read or written. */
#include "common/simd_target.h"
#include "layout/kernels.h"

#if NF_X86_KERNELS

#include <immintrin.h>


NF_AVX2_FN static void bf16_f32_avx2(const uint16_t *w, size_t n, float *out)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(w + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(w + i + 8));
        _mm256_storeu_si256((__m256i *)(void *)(out + i), _mm256_slli_epi32(_mm256_cvtepu16_epi32(a), 16));
        _mm256_storeu_si256((__m256i *)(void *)(out + i + 8), _mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16));
    }
    for (; i < n; i++) out[i] = nf_k_f32((uint32_t)w[i] << 16);
}

/* nf_int32_value on 8 lanes: rounding to nearest even done on integers (AVX2 has no conversion
 * with its own rounding mode).  |v| <= 2^24 converts exactly; above, the leading bit position
 * comes from the exact conversion of |v| >> 8 (< 2^24), and the significand is rounded by hand. */
NF_AVX2_INLINE __m256 int32_lanes(__m256i x)
{
    const __m256i one = _mm256_set1_epi32(1);
    const __m256i mag = _mm256_abs_epi32(x); /* INT32_MIN stays 0x80000000 = 2^31 unsigned */
    const __m256i sign = _mm256_and_si256(x, _mm256_set1_epi32((int)0x80000000u));
    const __m256i lim = _mm256_set1_epi32(0x01000000);
    const __m256i exact = _mm256_cmpeq_epi32(_mm256_max_epu32(mag, lim), lim);
    const __m256i top = _mm256_sub_epi32(
        _mm256_srli_epi32(_mm256_castps_si256(_mm256_cvtepi32_ps(_mm256_srli_epi32(mag, 8))), 23),
        _mm256_set1_epi32(127 - 8));
    const __m256i drop = _mm256_sub_epi32(top, _mm256_set1_epi32(23)); /* 1..8 where used */
    __m256i sig = _mm256_srlv_epi32(mag, drop);
    const __m256i rest = _mm256_and_si256(mag, _mm256_sub_epi32(_mm256_sllv_epi32(one, drop), one));
    const __m256i half = _mm256_sllv_epi32(one, _mm256_sub_epi32(drop, one));
    const __m256i up = _mm256_cmpgt_epi32(_mm256_add_epi32(rest, _mm256_and_si256(sig, one)), half);
    sig = _mm256_sub_epi32(sig, up); /* up is -1 where rounding up */
    const __m256i bits = _mm256_add_epi32(_mm256_slli_epi32(_mm256_add_epi32(top, _mm256_set1_epi32(127)), 23),
                                          _mm256_sub_epi32(sig, _mm256_set1_epi32(0x00800000)));
    const __m256 rounded = _mm256_castsi256_ps(_mm256_or_si256(bits, sign));
    return _mm256_blendv_ps(rounded, _mm256_cvtepi32_ps(x), _mm256_castsi256_ps(exact));
}

NF_AVX2_FN static void int32_f32_avx2(const uint32_t *w, size_t n, float *out)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, int32_lanes(_mm256_loadu_si256((const __m256i *)(const void *)(w + i))));
    for (; i < n; i++) out[i] = nf_int32_value(w[i]);
}

NF_AVX2_INLINE __m256 codes8_f32(const int8_t *p)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p)));
}

NF_AVX2_FN static void grouped_row_plain(const int8_t *codes, const uint16_t *scales, size_t k, unsigned gs, float *out)
{
    for (size_t c0 = 0, gi = 0; c0 < k; c0 += gs, gi++) {
        const float s = nf_k_f16(scales[gi]);
        const __m256 sv = _mm256_set1_ps(s);
        size_t c1 = k - c0 < gs ? k : c0 + gs, c = c0;
        for (; c + 16 <= c1; c += 16) {
            _mm256_storeu_ps(out + c, _mm256_mul_ps(sv, codes8_f32(codes + c)));
            _mm256_storeu_ps(out + c + 8, _mm256_mul_ps(sv, codes8_f32(codes + c + 8)));
        }
        for (; c + 8 <= c1; c += 8) _mm256_storeu_ps(out + c, _mm256_mul_ps(sv, codes8_f32(codes + c)));
        for (; c < c1; c++) out[c] = s * (float)codes[c];
    }
}

/* As the AVX-512 kernel: with a = floats before the first 32-byte boundary of out (1..7), the
 * stored blocks are [a + 8j, a + 8j + 8); the last block of each group (gs a multiple of 8)
 * takes the next group's scale in its lanes >= 8 - a.  Head and tail are done one by one. */
NF_AVX2_FN static void grouped_row_avx2(const int8_t *codes, const uint16_t *scales, size_t k, unsigned gs, float *out)
{
    const size_t a = (size_t)(((32u - ((uintptr_t)out & 31u)) & 31u) / 4u);
    if (a == 0 || gs % 8 != 0 || k < 8 || ((uintptr_t)out & 3u)) {
        grouped_row_plain(codes, scales, k, gs, out);
        return;
    }
    const size_t lg = (k + gs - 1) / gs, per = gs / 8;
    const __m256 next = _mm256_castsi256_ps(
        _mm256_cmpgt_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32((int)(7 - a))));
    float s = nf_k_f16(scales[0]);
    for (size_t c = 0; c < a; c++) out[c] = s * (float)codes[c];
    for (size_t gi = 0; gi < lg; gi++) {
        const float s_next = gi + 1 < lg ? nf_k_f16(scales[gi + 1]) : 0.0f;
        const __m256 sv = _mm256_set1_ps(s);
        const __m256 sx = _mm256_blendv_ps(sv, _mm256_set1_ps(s_next), next);
        size_t c = gi * gs + a;
        for (size_t j = 0; j < per && c + 8 <= k; j++, c += 8)
            _mm256_store_ps(out + c, _mm256_mul_ps(j + 1 == per ? sx : sv, codes8_f32(codes + c)));
        if (c < k && c < (gi + 1) * gs + a) /* the row's tail: fewer than 8 columns left */
            for (; c < k; c++) out[c] = (c < (gi + 1) * gs ? s : s_next) * (float)codes[c];
        s = s_next;
    }
}

/* E4M3FN words (in 32-bit lanes) -> binary32 words, as nf_e4m3fn_bits. */
NF_AVX2_INLINE __m256 e4m3_f32(__m256i x)
{
    const __m256i mag = _mm256_and_si256(x, _mm256_set1_epi32(0x7F));
    const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x80)), 24);
    /* normal: exponent rebiased by 120, fraction moved up by 20 */
    __m256i bits = _mm256_add_epi32(_mm256_slli_epi32(mag, 20), _mm256_set1_epi32(120 << 23));
    /* subnormal (exponent field 0): fraction * 2^-9, exact */
    const __m256 sub = _mm256_mul_ps(_mm256_cvtepi32_ps(mag), _mm256_set1_ps(0x1p-9f));
    const __m256i is_sub = _mm256_cmpgt_epi32(_mm256_set1_epi32(8), mag);
    bits = _mm256_blendv_epi8(bits, _mm256_castps_si256(sub), is_sub);
    const __m256i is_nan = _mm256_cmpeq_epi32(mag, _mm256_set1_epi32(0x7F));
    bits = _mm256_blendv_epi8(bits, _mm256_set1_epi32(0x7FC00000), is_nan);
    return _mm256_castsi256_ps(_mm256_or_si256(bits, sign));
}

/* e4m3(x) * s, where a NaN code gives its own NaN whatever s (nf_fp8_row_value): the multiply
 * alone would leave the choice between two NaNs to the operand order the compiler picks. */
NF_AVX2_INLINE __m256 fp8_value(__m256i x, __m256 s)
{
    const __m256 v = e4m3_f32(x);
    const __m256 is_nan = _mm256_castsi256_ps(
        _mm256_cmpeq_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7F)), _mm256_set1_epi32(0x7F)));
    return _mm256_blendv_ps(_mm256_mul_ps(v, s), v, is_nan);
}

NF_AVX2_FN static void fp8_row_avx2(const uint8_t *codes, size_t k, float s32, float *out)
{
    const __m256 sv = _mm256_set1_ps(s32);
    size_t c = 0;
    for (; c + 16 <= k; c += 16) {
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(codes + c));
        _mm256_storeu_ps(out + c, fp8_value(_mm256_cvtepu8_epi32(b), sv));
        _mm256_storeu_ps(out + c + 8, fp8_value(_mm256_cvtepu8_epi32(_mm_srli_si128(b, 8)), sv));
    }
    for (; c < k; c++) {
        const float v = nf_k_f32(nf_e4m3fn_bits[codes[c]]);
        out[c] = (codes[c] & 0x7Fu) == 0x7Fu ? v : v * s32;
    }
}

NF_AVX2_FN static void nvfp4_table_avx2(uint32_t divisor_bits, float *table)
{
    float e2m1[16], e4m3[256];
    nf_k_opaque_f32(nf_e2m1_bits, e2m1, 16);
    nf_k_opaque_f32(nf_e4m3fn_bits, e4m3, 256);
    const __m256 d = _mm256_set1_ps(nf_k_f32(divisor_bits));
    const __m256 lo = _mm256_loadu_ps(e2m1), hi = _mm256_loadu_ps(e2m1 + 8);
    for (unsigned s = 0; s < 256; s++) {
        const __m256 sv = _mm256_set1_ps(e4m3[s]);
        _mm256_storeu_ps(table + 16 * s, _mm256_div_ps(_mm256_mul_ps(lo, sv), d));
        _mm256_storeu_ps(table + 16 * s + 8, _mm256_div_ps(_mm256_mul_ps(hi, sv), d));
    }
}

/* Eight table entries selected by the low 4 bits of eight code bytes. */
NF_AVX2_INLINE __m256 lookup16(__m256 lo, __m256 hi, __m128i codes8)
{
    const __m256i idx = _mm256_cvtepu8_epi32(codes8);
    const __m256 a = _mm256_permutevar8x32_ps(lo, idx), b = _mm256_permutevar8x32_ps(hi, idx);
    return _mm256_blendv_ps(a, b, _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28))); /* bit 3 */
}

NF_AVX2_FN static void nvfp4_row_avx2(const uint8_t *codes, const uint8_t *scales, size_t k, const float *table,
                                      float *out)
{
    for (size_t g = 0; g < k / 16; g++) {
        const float *t = table + (size_t)scales[g] * 16;
        const __m256 lo = _mm256_loadu_ps(t), hi = _mm256_loadu_ps(t + 8);
        const __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(codes + 16 * g));
        _mm256_storeu_ps(out + 16 * g, lookup16(lo, hi, b));
        _mm256_storeu_ps(out + 16 * g + 8, lookup16(lo, hi, _mm_srli_si128(b, 8)));
    }
}

/* 16 bytes -> their 32 nibbles in order (low nibble first), each mapped through lut. */
NF_AVX2_INLINE __m256i nibbles32(__m128i b, __m128i lut)
{
    const __m128i m = _mm_set1_epi8(0x0F);
    const __m128i lo = _mm_shuffle_epi8(lut, _mm_and_si128(b, m));
    const __m128i hi = _mm_shuffle_epi8(lut, _mm_and_si128(_mm_srli_epi16(b, 4), m));
    return _mm256_set_m128i(_mm_unpackhi_epi8(lo, hi), _mm_unpacklo_epi8(lo, hi));
}

/* 16 bytes -> their 64 2-bit fields in order (lowest bits first), each mapped through lut;
 * out[0..3] hold fields 0-15, 16-31, 32-47, 48-63. */
NF_AVX2_INLINE void quarters64(__m128i b, __m128i lut, __m128i out[4])
{
    const __m128i m = _mm_set1_epi8(0x03);
    const __m128i p0 = _mm_shuffle_epi8(lut, _mm_and_si128(b, m));
    const __m128i p1 = _mm_shuffle_epi8(lut, _mm_and_si128(_mm_srli_epi16(b, 2), m));
    const __m128i p2 = _mm_shuffle_epi8(lut, _mm_and_si128(_mm_srli_epi16(b, 4), m));
    const __m128i p3 = _mm_shuffle_epi8(lut, _mm_and_si128(_mm_srli_epi16(b, 6), m));
    const __m128i a = _mm_unpacklo_epi8(p0, p1), bb = _mm_unpackhi_epi8(p0, p1);
    const __m128i c = _mm_unpacklo_epi8(p2, p3), d = _mm_unpackhi_epi8(p2, p3);
    out[0] = _mm_unpacklo_epi16(a, c);
    out[1] = _mm_unpackhi_epi16(a, c);
    out[2] = _mm_unpacklo_epi16(bb, d);
    out[3] = _mm_unpackhi_epi16(bb, d);
}

/* x (stored words of b bits in bytes) -> two's complement codes: (x ^ sign) - sign. */
NF_AVX2_INLINE __m256i sext(__m256i x, int sign)
{
    const __m256i s = _mm256_set1_epi8((char)sign);
    return _mm256_sub_epi8(_mm256_xor_si256(x, s), s);
}

/* Bit 4 for lane j of 32 lanes from bit j of the 32-bit word h (Q5 high plane). */
NF_AVX2_INLINE __m256i q5_high(uint32_t h)
{
    const __m256i rep = _mm256_shuffle_epi8(_mm256_set1_epi32((int)h),
                                            _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2,
                                                             2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(rep, bit), bit);
    return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

/* Bits 4-5 for lane j of 32 lanes from bits 2j, 2j+1 of the 64-bit word h (Q6 high plane). */
NF_AVX2_INLINE __m256i q6_high(uint64_t h)
{
    const __m256i rep = _mm256_shuffle_epi8(_mm256_set1_epi64x((long long)h),
                                            _mm256_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4,
                                                             5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7));
    /* lane j % 4 == p takes bits 2p, 2p+1 of its byte to bits 4, 5 */
    const __m256i m0 = _mm256_set1_epi32(0x00000030), m1 = _mm256_set1_epi32(0x00003000);
    const __m256i m2 = _mm256_set1_epi32(0x00300000), m3 = _mm256_set1_epi32(0x30000000);
    __m256i r = _mm256_and_si256(_mm256_slli_epi16(rep, 4), m0);
    r = _mm256_or_si256(r, _mm256_and_si256(_mm256_slli_epi16(rep, 2), m1));
    r = _mm256_or_si256(r, _mm256_and_si256(rep, m2));
    return _mm256_or_si256(r, _mm256_and_si256(_mm256_srli_epi16(rep, 2), m3));
}

NF_AVX2_FN void nf_rs_unpack_row_avx2(const nf_rs_params *p, const uint8_t *base, const uint8_t *high, size_t k,
                                      int8_t *codes)
{
    size_t c = 0;
    switch (p->bits) {
    case 8:
        if (k) memcpy(codes, base, k);
        return;
    case 2: {
        int8_t l[4];
        for (int u = 0; u < 4; u++) l[u] = (int8_t)(p->bias ? u - p->bias : (u ^ 2) - 2);
        const __m128i lut = _mm_setr_epi8(l[0], l[1], l[2], l[3], 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
        for (; c + 64 <= k; c += 64) {
            __m128i o[4];
            quarters64(_mm_loadu_si128((const __m128i *)(const void *)(base + c / 4)), lut, o);
            for (int j = 0; j < 4; j++) _mm_storeu_si128((__m128i *)(void *)(codes + c + 16 * j), o[j]);
        }
        break;
    }
    case 4: {
        const __m128i lut = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1);
        for (; c + 32 <= k; c += 32)
            _mm256_storeu_si256((__m256i *)(void *)(codes + c),
                                nibbles32(_mm_loadu_si128((const __m128i *)(const void *)(base + c / 2)), lut));
        break;
    }
    case 5: {
        const __m128i lut = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        for (; c + 32 <= k; c += 32) {
            uint32_t h;
            memcpy(&h, high + c / 8, sizeof h);
            __m256i x = nibbles32(_mm_loadu_si128((const __m128i *)(const void *)(base + c / 2)), lut);
            _mm256_storeu_si256((__m256i *)(void *)(codes + c), sext(_mm256_or_si256(x, q5_high(h)), 16));
        }
        break;
    }
    case 6: {
        const __m128i lut = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        for (; c + 32 <= k; c += 32) {
            uint64_t h;
            memcpy(&h, high + c / 4, sizeof h);
            __m256i x = nibbles32(_mm_loadu_si128((const __m128i *)(const void *)(base + c / 2)), lut);
            _mm256_storeu_si256((__m256i *)(void *)(codes + c), sext(_mm256_or_si256(x, q6_high(h)), 32));
        }
        break;
    }
    default: break;
    }
    nf_rs_unpack_scalar(p, base, high, c, k, codes);
}

NF_AVX2_FN void nf_nibbles_avx2(const uint8_t *in, size_t nbytes, uint8_t *out)
{
    const __m128i lut = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    size_t j = 0;
    for (; j + 16 <= nbytes; j += 16)
        _mm256_storeu_si256((__m256i *)(void *)(out + 2 * j),
                            nibbles32(_mm_loadu_si128((const __m128i *)(const void *)(in + j)), lut));
    for (; j < nbytes; j++) {
        out[2 * j] = in[j] & 15u;
        out[2 * j + 1] = (uint8_t)(in[j] >> 4);
    }
}

/* 2-bit row_split rows (Q2, T2) straight to values, as the AVX-512 kernel: per group an
 * 8-entry table with period 4 of s * F(q); 8 lanes are one broadcast 16-bit word shifted by 2j in
 * lane j, whose low 3 bits index the table. */
NF_AVX2_FN static bool rs_row_f32_avx2(const nf_rs_params *p, const uint8_t *base, const uint8_t *high,
                                       const uint8_t *scales_le, size_t k, float *out)
{
    (void)high;
    if (p->bits != 2) return false;
    float q[4];
    for (int u = 0; u < 4; u++) q[u] = (float)(p->bias ? u - p->bias : (u ^ 2) - 2);
    const __m256 cv = _mm256_setr_ps(q[0], q[1], q[2], q[3], q[0], q[1], q[2], q[3]);
    const __m256i shifts = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    const size_t G = p->group;
    for (size_t c0 = 0, gi = 0; c0 < k; c0 += G, gi++) {
        const float s = nf_k_f16(nf_get_le16(scales_le + 2 * gi));
        const __m256 t = _mm256_mul_ps(_mm256_set1_ps(s), cv);
        const uint8_t *gb = base + gi * p->base_bytes;
        const size_t c1 = k - c0 < G ? k : c0 + G;
        size_t c = c0;
        for (; c + 16 <= c1; c += 16) {
            uint32_t w;
            memcpy(&w, gb + (c - c0) / 4, 4);
            const __m256i x = _mm256_set1_epi32((int)w);
            _mm256_storeu_ps(out + c, _mm256_permutevar8x32_ps(t, _mm256_srlv_epi32(x, shifts)));
            _mm256_storeu_ps(out + c + 8,
                             _mm256_permutevar8x32_ps(t, _mm256_srlv_epi32(_mm256_srli_epi32(x, 16), shifts)));
        }
        for (; c < c1; c++) {
            const unsigned u = ((unsigned)gb[(c - c0) >> 2] >> (2u * ((c - c0) & 3u))) & 3u;
            out[c] = s * q[u];
        }
    }
    return true;
}

/* ---------------------------------------------------------------- encode side */
NF_AVX2_FN static bool codes_within_avx2(const int8_t *codes, size_t n, int lo, int hi)
{
    __m256i mn = _mm256_set1_epi8(INT8_MAX), mx = _mm256_set1_epi8(INT8_MIN);
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        const __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(codes + i));
        const __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(codes + i + 32));
        mn = _mm256_min_epi8(mn, _mm256_min_epi8(a, b));
        mx = _mm256_max_epi8(mx, _mm256_max_epi8(a, b));
    }
    for (; i + 32 <= n; i += 32) {
        const __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(codes + i));
        mn = _mm256_min_epi8(mn, a);
        mx = _mm256_max_epi8(mx, a);
    }
    const __m256i out = _mm256_or_si256(_mm256_cmpgt_epi8(_mm256_set1_epi8(nf_k_clamp8(lo)), mn),
                                        _mm256_cmpgt_epi8(mx, _mm256_set1_epi8(nf_k_clamp8(hi))));
    /* (with no whole vector, mn and mx still hold INT8_MAX and INT8_MIN, inside any bounds) */
    if (!_mm256_testz_si256(out, out)) return false;
    return nf_codes_within_scalar(codes + i, n - i, lo, hi);
}

NF_AVX2_FN static unsigned grouped_scales_avx2(const nf_grouped_rules *r, const uint16_t *scales, size_t n)
{
    const __m256i exp = _mm256_set1_epi16(0x7C00), negz = _mm256_set1_epi16((short)0x8000);
    const __m256i zero = _mm256_setzero_si256();
    __m256i nonfinite = zero, neg_zero = zero, zeros = zero;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(scales + i));
        nonfinite = _mm256_or_si256(nonfinite, _mm256_cmpeq_epi16(_mm256_and_si256(v, exp), exp));
        neg_zero = _mm256_or_si256(neg_zero, _mm256_cmpeq_epi16(v, negz));
        zeros = _mm256_or_si256(zeros, _mm256_cmpeq_epi16(v, zero));
    }
    unsigned out = nf_grouped_scales_scalar(r, scales + i, n - i);
    if (!_mm256_testz_si256(nonfinite, nonfinite) || (!r->neg_zero_ok && !_mm256_testz_si256(neg_zero, neg_zero)))
        out |= NF_SCALES_INVALID;
    if (r->zero_scale_zero_codes && !_mm256_testz_si256(zeros, zeros)) out |= NF_SCALES_ZERO_RULE;
    return out;
}

/* Four 2-bit fields per 32-bit lane -> one byte: bytes x0..x3 (each < 4) of every dword become
 * x0 | x1 << 2 | x2 << 4 | x3 << 6 in its low 16 bits (multiply-adds by 1, 4, 16, 64). */
NF_AVX2_INLINE __m256i quartets32(__m256i x)
{
    const __m256i t = _mm256_maddubs_epi16(x, _mm256_set1_epi32(0x40100401));
    return _mm256_madd_epi16(t, _mm256_set1_epi16(1));
}

/* 128 lanes of 2-bit fields (a..d: 32 bytes each, each < 4) -> their 32 packed bytes in order. */
NF_AVX2_INLINE __m256i quartets128(__m256i a, __m256i b, __m256i c, __m256i d)
{
    /* the packs work within 128-bit halves: bytes come out as dwords a.lo b.lo c.lo d.lo | a.hi ... */
    const __m256i ab = _mm256_packs_epi32(quartets32(a), quartets32(b));
    const __m256i cd = _mm256_packs_epi32(quartets32(c), quartets32(d));
    return _mm256_permutevar8x32_epi32(_mm256_packus_epi16(ab, cd), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* 64 lanes (a, b) -> 32 base bytes: the low nibbles of lane pairs, the even lane low. */
NF_AVX2_INLINE __m256i nibble_pairs64(__m256i a, __m256i b)
{
    const __m256i m = _mm256_set1_epi8(0x0F), w = _mm256_set1_epi16(0x1001);
    const __m256i wa = _mm256_maddubs_epi16(_mm256_and_si256(a, m), w); /* u0 + 16 u1 per 16-bit lane */
    const __m256i wb = _mm256_maddubs_epi16(_mm256_and_si256(b, m), w);
    return _mm256_permute4x64_epi64(_mm256_packus_epi16(wa, wb), 0xD8);
}

/* One block of 128 lanes (codes q; add = the Q2 bias) into base (and high), widening the running
 * minimum and maximum.  `bits` is a constant at every call, so each format gets its own loop. */
NF_AVX2_INLINE void pack128_avx2(unsigned bits, const int8_t *q, __m256i add, uint8_t *base, uint8_t *high, __m256i *mn,
                                 __m256i *mx)
{
    __m256i v[4];
    for (int j = 0; j < 4; j++) {
        v[j] = _mm256_loadu_si256((const __m256i *)(const void *)(q + 32 * j));
        *mn = _mm256_min_epi8(*mn, v[j]);
        *mx = _mm256_max_epi8(*mx, v[j]);
    }
    switch (bits) {
    case 8:
        for (int j = 0; j < 4; j++) _mm256_storeu_si256((__m256i *)(void *)(base + 32 * j), v[j]);
        return;
    case 2: {
        const __m256i m = _mm256_set1_epi8(3);
        __m256i u[4];
        for (int j = 0; j < 4; j++) u[j] = _mm256_and_si256(_mm256_add_epi8(v[j], add), m);
        _mm256_storeu_si256((__m256i *)(void *)base, quartets128(u[0], u[1], u[2], u[3]));
        return;
    }
    default: break;
    }
    _mm256_storeu_si256((__m256i *)(void *)base, nibble_pairs64(v[0], v[1]));
    _mm256_storeu_si256((__m256i *)(void *)(base + 32), nibble_pairs64(v[2], v[3]));
    if (bits == 5) /* bit 4 of each lane, moved to bit 7 of its byte for movemask */
        for (int j = 0; j < 4; j++) {
            const uint32_t h = (uint32_t)_mm256_movemask_epi8(_mm256_slli_epi16(v[j], 3));
            memcpy(high + 4 * j, &h, sizeof h);
        }
    if (bits == 6) { /* bits 4-5 of each lane, as 2-bit fields */
        const __m256i m = _mm256_set1_epi8(3);
        __m256i h[4];
        for (int j = 0; j < 4; j++) h[j] = _mm256_and_si256(_mm256_srli_epi16(v[j], 4), m);
        _mm256_storeu_si256((__m256i *)(void *)high, quartets128(h[0], h[1], h[2], h[3]));
    }
}

/* The row driver: whole blocks straight from the codes; the block holding k (and any block past
 * it) from a copy padded with code 0, so nothing past codes[k) is read. */
NF_AVX2_INLINE bool pack_row_avx2(unsigned bits, const nf_rs_params *p, const int8_t *codes, size_t k, size_t lanes,
                                  int lo, int hi, uint8_t *base, uint8_t *high)
{
    const size_t lb = bits == 2 ? 2 : bits == 8 ? 8 : 4, hb = bits == 5 ? 1 : bits == 6 ? 2 : 0;
    const __m256i add = _mm256_set1_epi8((char)p->bias);
    __m256i mn = _mm256_set1_epi8(INT8_MAX), mx = _mm256_set1_epi8(INT8_MIN);
    size_t c = 0;
    for (; c + 128 <= k; c += 128) pack128_avx2(bits, codes + c, add, base + c * lb / 8, high + c * hb / 8, &mn, &mx);
    if (c < lanes) {
        int8_t pad[128] = {0};
        memcpy(pad, codes + c, k - c);
        pack128_avx2(bits, pad, add, base + c * lb / 8, high + c * hb / 8, &mn, &mx);
        memset(pad, 0, sizeof pad);
        for (c += 128; c < lanes; c += 128)
            pack128_avx2(bits, pad, add, base + c * lb / 8, high + c * hb / 8, &mn, &mx);
    }
    const __m256i out = _mm256_or_si256(_mm256_cmpgt_epi8(_mm256_set1_epi8(nf_k_clamp8(lo)), mn),
                                        _mm256_cmpgt_epi8(mx, _mm256_set1_epi8(nf_k_clamp8(hi))));
    return _mm256_testz_si256(out, out) != 0;
}

NF_AVX2_FN static bool rs_pack_row_avx2(const nf_rs_params *p, const int8_t *codes, size_t k, size_t lanes, int lo,
                                        int hi, uint8_t *base, uint8_t *high)
{
    switch (p->bits) {
    case 2: return pack_row_avx2(2, p, codes, k, lanes, lo, hi, base, high);
    case 4: return pack_row_avx2(4, p, codes, k, lanes, lo, hi, base, high);
    case 5: return pack_row_avx2(5, p, codes, k, lanes, lo, hi, base, high);
    case 6: return pack_row_avx2(6, p, codes, k, lanes, lo, hi, base, high);
    case 8: return pack_row_avx2(8, p, codes, k, lanes, lo, hi, base, high);
    default: return nf_layout_kernels_scalar.rs_pack_row(p, codes, k, lanes, lo, hi, base, high);
    }
}

const nf_layout_kernels nf_layout_kernels_avx2 = {
    .name = "avx2",
    .bf16_f32 = bf16_f32_avx2,
    .int32_f32 = int32_f32_avx2,
    .grouped_row = grouped_row_avx2,
    .fp8_row = fp8_row_avx2,
    .nvfp4_table = nvfp4_table_avx2,
    .nvfp4_row = nvfp4_row_avx2,
    .rs_unpack_row = nf_rs_unpack_row_avx2,
    .nibbles = nf_nibbles_avx2,
    .rs_row_f32 = rs_row_f32_avx2,
    .codes_within = codes_within_avx2,
    .grouped_scales = grouped_scales_avx2,
    .rs_pack_row = rs_pack_row_avx2,
};

#endif
