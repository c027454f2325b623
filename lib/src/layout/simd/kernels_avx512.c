/* Layout kernels for AVX-512 F/BW/VL (kernels.h): 16 binary32 lanes per instruction, partial
 * vectors through masked loads and stores (a masked-off lane is neither read nor written), the
 * nvfp4 table lookup as one 16-lane permute, and an int32 conversion with the rounding (to
 * nearest even) encoded in the instruction.  Code unpacking is shared with the AVX2 variant. */
#include "common/simd_target.h"
#include "layout/kernels.h"

#if NF_X86_KERNELS

#include <immintrin.h>


NF_AVX512_INLINE __mmask16 tail16(size_t m) { return (__mmask16)((1u << m) - 1u); }

NF_AVX512_FN static void bf16_f32_avx512(const uint16_t *w, size_t n, float *out)
{
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(w + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(w + i + 16));
        _mm512_storeu_si512(out + i, _mm512_slli_epi32(_mm512_cvtepu16_epi32(a), 16));
        _mm512_storeu_si512(out + i + 16, _mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16));
    }
    for (; i < n; i += 16) {
        size_t m = n - i < 16 ? n - i : 16;
        __m256i a = _mm256_maskz_loadu_epi16(tail16(m), w + i);
        _mm512_mask_storeu_epi32(out + i, tail16(m), _mm512_slli_epi32(_mm512_cvtepu16_epi32(a), 16));
    }
}

NF_AVX512_FN static void int32_f32_avx512(const uint32_t *w, size_t n, float *out)
{
    for (size_t i = 0; i < n; i += 16) {
        size_t m = n - i < 16 ? n - i : 16;
        __m512i x = _mm512_maskz_loadu_epi32(tail16(m), w + i);
        /* round to nearest even, whatever MXCSR says: nf_int32_value's rounding */
        __m512 v = _mm512_cvt_roundepi32_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm512_mask_storeu_ps(out + i, tail16(m), v);
    }
}

/* Output stores are kept on 64-byte boundaries (a store across two cache lines costs about two):
 * lanes = how many floats precede the first boundary at out (0..15). */
NF_AVX512_INLINE size_t lanes_to_line(const float *out)
{
    return (size_t)(((64u - ((uintptr_t)out & 63u)) & 63u) / 4u);
}

NF_AVX512_INLINE __m512 codes16_f32(__m128i b) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b)); }

/* One row, unaligned stores (an output already on a line boundary, or an odd group size). */
NF_AVX512_FN static void grouped_row_plain(const int8_t *codes, const uint16_t *scales, size_t k, unsigned gs,
                                           float *out)
{
    for (size_t c0 = 0, gi = 0; c0 < k; c0 += gs, gi++) {
        const __m512 sv = _mm512_set1_ps(nf_k_f16(scales[gi]));
        size_t c1 = k - c0 < gs ? k : c0 + gs, c = c0;
        for (; c + 32 <= c1; c += 32) {
            __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(codes + c));
            _mm512_storeu_ps(out + c, _mm512_mul_ps(sv, codes16_f32(_mm256_castsi256_si128(b))));
            _mm512_storeu_ps(out + c + 16, _mm512_mul_ps(sv, codes16_f32(_mm256_extracti128_si256(b, 1))));
        }
        for (; c < c1; c += 16) {
            size_t m = c1 - c < 16 ? c1 - c : 16;
            __m128i b = _mm_maskz_loadu_epi8(tail16(m), codes + c);
            _mm512_mask_storeu_ps(out + c, tail16(m), _mm512_mul_ps(sv, codes16_f32(b)));
        }
    }
}

/* With a = lanes_to_line(out) > 0, the blocks of 16 stored are [a + 16j, a + 16j + 16): each
 * group of gs (a multiple of 16) has gs/16 - 1 blocks of its own and one that ends in the next
 * group, whose lanes >= 16 - a take the next group's scale. */
NF_AVX512_FN static void grouped_row_avx512(const int8_t *codes, const uint16_t *scales, size_t k, unsigned gs,
                                            float *out)
{
    const size_t a = lanes_to_line(out);
    if (a == 0 || gs % 16 != 0 || k < 16 || ((uintptr_t)out & 3u)) {
        grouped_row_plain(codes, scales, k, gs, out);
        return;
    }
    const size_t lg = (k + gs - 1) / gs, per = gs / 16;
    const __mmask16 next = (__mmask16)(0xFFFFu << (16 - a));
    float s = nf_k_f16(scales[0]);
    /* head: columns [0, a), all in group 0 */
    _mm512_mask_storeu_ps(out, tail16(a),
                          _mm512_mul_ps(_mm512_set1_ps(s), codes16_f32(_mm_maskz_loadu_epi8(tail16(a), codes))));
    for (size_t gi = 0; gi < lg; gi++) {
        const float s_next = gi + 1 < lg ? nf_k_f16(scales[gi + 1]) : 0.0f; /* lanes past k are not stored */
        const __m512 sv = _mm512_set1_ps(s);
        const __m512 sx = _mm512_mask_blend_ps(next, sv, _mm512_set1_ps(s_next));
        size_t c = gi * gs + a;
        for (size_t j = 0; j < per && c < k; j++, c += 16) {
            const __m512 scale = j + 1 == per ? sx : sv;
            if (c + 16 <= k) {
                __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(codes + c));
                _mm512_store_ps(out + c, _mm512_mul_ps(scale, codes16_f32(b)));
            } else {
                __m128i b = _mm_maskz_loadu_epi8(tail16(k - c), codes + c);
                _mm512_mask_storeu_ps(out + c, tail16(k - c), _mm512_mul_ps(scale, codes16_f32(b)));
            }
        }
        s = s_next;
    }
}

/* E4M3FN words (in 32-bit lanes) -> binary32, as nf_e4m3fn_bits. */
NF_AVX512_INLINE __m512 e4m3_f32(__m512i x)
{
    const __m512i mag = _mm512_and_si512(x, _mm512_set1_epi32(0x7F));
    const __m512i sign = _mm512_slli_epi32(_mm512_and_si512(x, _mm512_set1_epi32(0x80)), 24);
    __m512i bits = _mm512_add_epi32(_mm512_slli_epi32(mag, 20), _mm512_set1_epi32(120 << 23));
    const __m512 sub = _mm512_mul_ps(_mm512_cvtepi32_ps(mag), _mm512_set1_ps(0x1p-9f));
    bits = _mm512_mask_blend_epi32(_mm512_cmplt_epu32_mask(mag, _mm512_set1_epi32(8)), bits, _mm512_castps_si512(sub));
    bits = _mm512_mask_blend_epi32(_mm512_cmpeq_epu32_mask(mag, _mm512_set1_epi32(0x7F)), bits,
                                   _mm512_set1_epi32(0x7FC00000));
    return _mm512_castsi512_ps(_mm512_or_si512(bits, sign));
}

/* e4m3(x) * s, where a NaN code gives its own NaN whatever s (nf_fp8_row_value): the multiply
 * alone would leave the choice between two NaNs to the operand order the compiler picks. */
NF_AVX512_INLINE __m512 fp8_value(__m512i x, __m512 s)
{
    const __m512 v = e4m3_f32(x);
    const __m512i low7 = _mm512_set1_epi32(0x7F);
    const __mmask16 is_nan = _mm512_cmpeq_epu32_mask(_mm512_and_si512(x, low7), low7);
    return _mm512_mask_blend_ps(is_nan, _mm512_mul_ps(v, s), v);
}

NF_AVX512_FN static void fp8_row_avx512(const uint8_t *codes, size_t k, float s32, float *out)
{
    const __m512 sv = _mm512_set1_ps(s32);
    size_t c = lanes_to_line(out);
    if (c > k || ((uintptr_t)out & 3u)) c = 0;
    if (c) {
        const __m128i head = _mm_maskz_loadu_epi8(tail16(c), codes);
        _mm512_mask_storeu_ps(out, tail16(c), fp8_value(_mm512_cvtepu8_epi32(head), sv));
    }
    for (; c + 32 <= k; c += 32) {
        __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(codes + c));
        _mm512_storeu_ps(out + c, fp8_value(_mm512_cvtepu8_epi32(_mm256_castsi256_si128(b)), sv));
        _mm512_storeu_ps(out + c + 16, fp8_value(_mm512_cvtepu8_epi32(_mm256_extracti128_si256(b, 1)), sv));
    }
    for (; c < k; c += 16) {
        size_t m = k - c < 16 ? k - c : 16;
        __m128i b = _mm_maskz_loadu_epi8(tail16(m), codes + c);
        _mm512_mask_storeu_ps(out + c, tail16(m), fp8_value(_mm512_cvtepu8_epi32(b), sv));
    }
}

NF_AVX512_FN static void nvfp4_table_avx512(uint32_t divisor_bits, float *table)
{
    float e2m1[16], e4m3[256];
    nf_k_opaque_f32(nf_e2m1_bits, e2m1, 16);
    nf_k_opaque_f32(nf_e4m3fn_bits, e4m3, 256);
    const __m512 d = _mm512_set1_ps(nf_k_f32(divisor_bits));
    const __m512 e = _mm512_loadu_ps(e2m1);
    for (unsigned s = 0; s < 256; s++) {
        const __m512 sv = _mm512_set1_ps(e4m3[s]);
        _mm512_storeu_ps(table + 16 * s, _mm512_div_ps(_mm512_mul_ps(e, sv), d));
    }
}

/* With a = lanes_to_line(out) > 0, block j stores [16j + a, 16j + a + 16): lanes < 16 - a from
 * group j's table, the others from group j+1's, in one two-table permute (index bit 4 picks the
 * second table). */
NF_AVX512_FN static void nvfp4_row_avx512(const uint8_t *codes, const uint8_t *scales, size_t k, const float *table,
                                          float *out)
{
    const size_t ng = k / 16, a = lanes_to_line(out);
    if (a == 0 || ((uintptr_t)out & 3u)) {
        size_t g = 0;
        for (; g + 2 <= ng; g += 2) {
            const __m512 t0 = _mm512_loadu_ps(table + (size_t)scales[g] * 16);
            const __m512 t1 = _mm512_loadu_ps(table + (size_t)scales[g + 1] * 16);
            __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(codes + 16 * g));
            /* the permute uses the low 4 bits of each index: code & 15 */
            _mm512_storeu_ps(out + 16 * g, _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(_mm256_castsi256_si128(b)), t0));
            _mm512_storeu_ps(out + 16 * g + 16,
                             _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(_mm256_extracti128_si256(b, 1)), t1));
        }
        for (; g < ng; g++) {
            const __m512 t = _mm512_loadu_ps(table + (size_t)scales[g] * 16);
            __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(codes + 16 * g));
            _mm512_storeu_ps(out + 16 * g, _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(b), t));
        }
        return;
    }
    if (ng == 0) return;
    const __mmask16 next = (__mmask16)(0xFFFFu << (16 - a));
    const __m512i low4 = _mm512_set1_epi32(15), pick = _mm512_maskz_mov_epi32(next, _mm512_set1_epi32(16));
    __m512 t = _mm512_loadu_ps(table + (size_t)scales[0] * 16);
    _mm512_mask_storeu_ps(out, tail16(a),
                          _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(tail16(a), codes)), t));
    for (size_t g = 0; g + 1 < ng; g++) {
        const __m512 tn = _mm512_loadu_ps(table + (size_t)scales[g + 1] * 16);
        const size_t c = 16 * g + a;
        __m512i idx = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(codes + c)));
        idx = _mm512_or_si512(_mm512_and_si512(idx, low4), pick);
        _mm512_store_ps(out + c, _mm512_permutex2var_ps(t, idx, tn));
        t = tn;
    }
    /* the last group's remaining 16 - a lanes */
    const size_t c = 16 * (ng - 1) + a;
    __m512i idx = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(tail16(16 - a), codes + c));
    _mm512_mask_storeu_ps(out + c, tail16(16 - a), _mm512_permutexvar_ps(idx, t));
}

/* 2-bit row_split rows (Q2, T2) straight to values: per group, the 4 possible values s * F(q)
 * (the products grouped_row computes) fill a 16-entry table with period 4; 16 lanes of 2-bit
 * words are then one broadcast 32-bit word shifted by 2j in lane j, whose low 4 bits index the
 * table (bits 2 and 3 belong to the next lane and select the same entry). */
NF_AVX512_FN static bool rs_row_f32_avx512(const nf_rs_params *p, const uint8_t *base, const uint8_t *high,
                                           const uint8_t *scales_le, size_t k, float *out)
{
    (void)high;
    if (p->bits != 2) return false;
    float q[4];
    for (int u = 0; u < 4; u++) q[u] = (float)(p->bias ? u - p->bias : (u ^ 2) - 2);
    const __m512 cv = _mm512_setr_ps(q[0], q[1], q[2], q[3], q[0], q[1], q[2], q[3], q[0], q[1], q[2], q[3], q[0], q[1],
                                     q[2], q[3]);
    const __m512i shifts = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const size_t G = p->group;
    for (size_t c0 = 0, gi = 0; c0 < k; c0 += G, gi++) {
        const float s = nf_k_f16(nf_get_le16(scales_le + 2 * gi));
        const __m512 t = _mm512_mul_ps(_mm512_set1_ps(s), cv);
        const uint8_t *gb = base + gi * p->base_bytes;
        const size_t c1 = k - c0 < G ? k : c0 + G;
        size_t c = c0;
        for (; c + 32 <= c1; c += 32) {
            uint32_t w0, w1;
            memcpy(&w0, gb + (c - c0) / 4, 4);
            memcpy(&w1, gb + (c - c0) / 4 + 4, 4);
            _mm512_storeu_ps(out + c, _mm512_permutexvar_ps(_mm512_srlv_epi32(_mm512_set1_epi32((int)w0), shifts), t));
            _mm512_storeu_ps(out + c + 16,
                             _mm512_permutexvar_ps(_mm512_srlv_epi32(_mm512_set1_epi32((int)w1), shifts), t));
        }
        for (; c < c1; c += 16) {
            uint32_t w;
            memcpy(&w, gb + (c - c0) / 4, 4); /* inside the physical group: padded to 128 lanes */
            const size_t m = c1 - c < 16 ? c1 - c : 16;
            _mm512_mask_storeu_ps(out + c, tail16(m),
                                  _mm512_permutexvar_ps(_mm512_srlv_epi32(_mm512_set1_epi32((int)w), shifts), t));
        }
    }
    return true;
}

/* ---------------------------------------------------------------- encode side */
/* Lanes [0, m) of a 64-lane mask (m <= 64). */
NF_AVX512_INLINE __mmask64 tail64(size_t m) { return m >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << m) - 1u); }

NF_AVX512_FN static bool codes_within_avx512(const int8_t *codes, size_t n, int lo, int hi)
{
    const __m512i lo8 = _mm512_set1_epi8(nf_k_clamp8(lo)), hi8 = _mm512_set1_epi8(nf_k_clamp8(hi));
    __m512i mn = _mm512_set1_epi8(INT8_MAX), mx = _mm512_set1_epi8(INT8_MIN);
    size_t i = 0;
    for (; i + 128 <= n; i += 128) {
        const __m512i a = _mm512_loadu_si512(codes + i), b = _mm512_loadu_si512(codes + i + 64);
        mn = _mm512_min_epi8(mn, _mm512_min_epi8(a, b));
        mx = _mm512_max_epi8(mx, _mm512_max_epi8(a, b));
    }
    for (; i < n; i += 64) { /* masked-off lanes are not read and take lo, which is in range */
        const __m512i a = _mm512_mask_loadu_epi8(lo8, tail64(n - i), codes + i);
        mn = _mm512_min_epi8(mn, a);
        mx = _mm512_max_epi8(mx, a);
    }
    return (_mm512_cmplt_epi8_mask(mn, lo8) | _mm512_cmpgt_epi8_mask(mx, hi8)) == 0;
}

NF_AVX512_FN static unsigned grouped_scales_avx512(const nf_grouped_rules *r, const uint16_t *scales, size_t n)
{
    const __m512i exp = _mm512_set1_epi16(0x7C00), negz = _mm512_set1_epi16((short)0x8000);
    const __m512i one = _mm512_set1_epi16(0x3C00); /* 1.0: valid and not zero, for masked-off lanes */
    __mmask32 nonfinite = 0, neg_zero = 0, zeros = 0;
    for (size_t i = 0; i < n; i += 32) {
        const size_t m = n - i < 32 ? n - i : 32;
        const __mmask32 in = m == 32 ? ~(__mmask32)0 : (__mmask32)((1u << m) - 1u);
        const __m512i v = _mm512_mask_loadu_epi16(one, in, scales + i);
        nonfinite |= _mm512_cmpeq_epi16_mask(_mm512_and_si512(v, exp), exp);
        neg_zero |= _mm512_cmpeq_epi16_mask(v, negz);
        zeros |= _mm512_testn_epi16_mask(v, v);
    }
    unsigned out = 0;
    if (nonfinite || (neg_zero && !r->neg_zero_ok)) out |= NF_SCALES_INVALID;
    if (zeros && r->zero_scale_zero_codes) out |= NF_SCALES_ZERO_RULE;
    return out;
}

/* 64 lanes of 2-bit fields (bytes < 4) -> their 16 packed bytes, lowest lane in the lowest bits:
 * multiply-adds by 1, 4, 16, 64 put the byte of four lanes in the low bits of their dword. */
NF_AVX512_INLINE __m128i quartets64(__m512i x)
{
    const __m512i t = _mm512_maddubs_epi16(x, _mm512_set1_epi32(0x40100401));
    return _mm512_cvtepi32_epi8(_mm512_madd_epi16(t, _mm512_set1_epi16(1)));
}

/* 64 lanes -> 32 base bytes: the low nibbles of lane pairs, the even lane low. */
NF_AVX512_INLINE __m256i nibble_pairs64(__m512i v)
{
    const __m512i w = _mm512_maddubs_epi16(_mm512_and_si512(v, _mm512_set1_epi8(0x0F)), _mm512_set1_epi16(0x1001));
    return _mm512_cvtepi16_epi8(w);
}

/* One block of 128 lanes (lanes 0-63 at q0, 64-127 at q1) into base (and high), widening the
 * running minimum and maximum; a partial block (full false) reads only the lanes of masks m0 and
 * m1 and takes code 0 in the others.  `bits` and `full` are constants at every call, so each
 * format gets its own loop. */
NF_AVX512_INLINE void pack128_avx512(unsigned bits, bool full, const int8_t *q0, const int8_t *q1, __mmask64 m0,
                                     __mmask64 m1, __m512i add, uint8_t *base, uint8_t *high, __m512i *mn, __m512i *mx)
{
    __m512i v[2];
    v[0] = full ? _mm512_loadu_si512(q0) : _mm512_maskz_loadu_epi8(m0, q0);
    v[1] = full ? _mm512_loadu_si512(q1) : _mm512_maskz_loadu_epi8(m1, q1);
    for (int j = 0; j < 2; j++) {
        *mn = _mm512_min_epi8(*mn, v[j]);
        *mx = _mm512_max_epi8(*mx, v[j]);
    }
    switch (bits) {
    case 8:
        _mm512_storeu_si512(base, v[0]);
        _mm512_storeu_si512(base + 64, v[1]);
        return;
    case 2: {
        const __m512i m = _mm512_set1_epi8(3);
        for (int j = 0; j < 2; j++) {
            const __m512i u = _mm512_and_si512(_mm512_add_epi8(v[j], add), m);
            _mm_storeu_si128((__m128i *)(void *)(base + 16 * j), quartets64(u));
        }
        return;
    }
    default: break;
    }
    for (int j = 0; j < 2; j++) _mm256_storeu_si256((__m256i *)(void *)(base + 32 * j), nibble_pairs64(v[j]));
    if (bits == 5) /* bit 4 of lane i is bit i of the stream */
        for (int j = 0; j < 2; j++) {
            const uint64_t h = _mm512_test_epi8_mask(v[j], _mm512_set1_epi8(0x10));
            memcpy(high + 8 * j, &h, sizeof h);
        }
    if (bits == 6) { /* bits 4-5 of each lane, as 2-bit fields */
        const __m512i m = _mm512_set1_epi8(3);
        for (int j = 0; j < 2; j++) {
            const __m512i h = _mm512_and_si512(_mm512_srli_epi16(v[j], 4), m);
            _mm_storeu_si128((__m128i *)(void *)(high + 16 * j), quartets64(h));
        }
    }
}

/* The row driver: whole blocks, then the block holding k through masked loads (code 0 in its
 * padding lanes), then any block past it as all padding. */
NF_AVX512_INLINE bool pack_row_avx512(unsigned bits, const nf_rs_params *p, const int8_t *codes, size_t k, size_t lanes,
                                      int lo, int hi, uint8_t *base, uint8_t *high)
{
    const size_t lb = bits == 2 ? 2 : bits == 8 ? 8 : 4, hb = bits == 5 ? 1 : bits == 6 ? 2 : 0;
    const __m512i add = _mm512_set1_epi8((char)p->bias);
    __m512i mn = _mm512_set1_epi8(INT8_MAX), mx = _mm512_set1_epi8(INT8_MIN);
    size_t c = 0;
    for (; c + 128 <= k; c += 128)
        pack128_avx512(bits, true, codes + c, codes + c + 64, 0, 0, add, base + c * lb / 8, high + c * hb / 8, &mn,
                       &mx);
    for (; c < lanes; c += 128) {
        /* pointers stay inside the codes (a lane that is not read needs no address of its own) */
        const size_t left = k > c ? k - c : 0;
        const int8_t *q0 = left ? codes + c : codes, *q1 = left > 64 ? codes + c + 64 : codes;
        pack128_avx512(bits, false, q0, q1, tail64(left), left > 64 ? tail64(left - 64) : 0, add, base + c * lb / 8,
                       high + c * hb / 8, &mn, &mx);
    }
    return (_mm512_cmplt_epi8_mask(mn, _mm512_set1_epi8(nf_k_clamp8(lo))) |
            _mm512_cmpgt_epi8_mask(mx, _mm512_set1_epi8(nf_k_clamp8(hi)))) == 0;
}

NF_AVX512_FN static bool rs_pack_row_avx512(const nf_rs_params *p, const int8_t *codes, size_t k, size_t lanes, int lo,
                                            int hi, uint8_t *base, uint8_t *high)
{
    switch (p->bits) {
    case 2: return pack_row_avx512(2, p, codes, k, lanes, lo, hi, base, high);
    case 4: return pack_row_avx512(4, p, codes, k, lanes, lo, hi, base, high);
    case 5: return pack_row_avx512(5, p, codes, k, lanes, lo, hi, base, high);
    case 6: return pack_row_avx512(6, p, codes, k, lanes, lo, hi, base, high);
    case 8: return pack_row_avx512(8, p, codes, k, lanes, lo, hi, base, high);
    default: return nf_layout_kernels_scalar.rs_pack_row(p, codes, k, lanes, lo, hi, base, high);
    }
}

const nf_layout_kernels nf_layout_kernels_avx512 = {
    .name = "avx512",
    .bf16_f32 = bf16_f32_avx512,
    .int32_f32 = int32_f32_avx512,
    .grouped_row = grouped_row_avx512,
    .fp8_row = fp8_row_avx512,
    .nvfp4_table = nvfp4_table_avx512,
    .nvfp4_row = nvfp4_row_avx512,
    .rs_unpack_row = nf_rs_unpack_row_avx2,
    .nibbles = nf_nibbles_avx2,
    .rs_row_f32 = rs_row_f32_avx512,
    .codes_within = codes_within_avx512,
    .grouped_scales = grouped_scales_avx512,
    .rs_pack_row = rs_pack_row_avx512,
};

#endif
