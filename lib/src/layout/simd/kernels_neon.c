/* Layout kernels for NEON (kernels.h): 4 binary32 lanes per instruction for values, 16 byte
 * lanes for codes.  Values are produced by the reference's own operations (binary32 multiply of
 * the same exact operands, in the same operand order); words are unpacked by masks, shifts, zips
 * and table lookups.  Every loop does whole vectors inside the caller's bounds and leaves the
 * remaining elements to the scalar code, so nothing outside the given arrays is read or written.
 * The row_split packer and the scale rules check words as the scalar kernels do (the same
 * verdict for every input); parameters no registered format has go to the scalar kernels whole. */
#include "common/simd_target.h"
#include "layout/kernels.h"

#if NF_ARM_KERNELS

#include <arm_neon.h>

static void bf16_f32_neon(const uint16_t *w, size_t n, float *out)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const uint16x8_t a = vld1q_u16(w + i);
        vst1q_u32((uint32_t *)(void *)(out + i), vshll_n_u16(vget_low_u16(a), 16));
        vst1q_u32((uint32_t *)(void *)(out + i + 4), vshll_high_n_u16(a, 16));
    }
    for (; i < n; i++) out[i] = nf_k_f32((uint32_t)w[i] << 16);
}

/* nf_int32_value: 4 words of magnitude at most 2^24 convert exactly whatever the rounding mode
 * (SCVTF); a vector holding a larger one is rounded by the reference. */
static void int32_f32_neon(const uint32_t *w, size_t n, float *out)
{
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const int32x4_t x = vreinterpretq_s32_u32(vld1q_u32(w + i));
        /* |INT32_MIN| stays 0x80000000: unsigned, above the limit */
        if (vmaxvq_u32(vreinterpretq_u32_s32(vabsq_s32(x))) <= 0x01000000u) vst1q_f32(out + i, vcvtq_f32_s32(x));
        else
            for (size_t k = i; k < i + 4; k++) out[k] = nf_int32_value(w[k]);
    }
    for (; i < n; i++) out[i] = nf_int32_value(w[i]);
}

/* 4 codes at p as binary32 (exact) */
static inline float32x4_t codes4_f32(const int8_t *p)
{
    uint32_t w;
    memcpy(&w, p, sizeof w); /* 4 codes at any alignment */
    int8x8_t b = vreinterpret_s8_u32(vdup_n_u32(w));
    return vcvtq_f32_s32(vmovl_s16(vget_low_s16(vmovl_s8(b))));
}

static void grouped_row_neon(const int8_t *codes, const uint16_t *scales, size_t k, unsigned gs, float *out)
{
    for (size_t c0 = 0, gi = 0; c0 < k; c0 += gs, gi++) {
        const float s = nf_k_f16(scales[gi]);
        const float32x4_t sv = vdupq_n_f32(s);
        size_t c1 = k - c0 < gs ? k : c0 + gs, c = c0;
        for (; c + 16 <= c1; c += 16) {
            const int8x16_t q = vld1q_s8(codes + c);
            const int16x8_t lo = vmovl_s8(vget_low_s8(q)), hi = vmovl_s8(vget_high_s8(q));
            vst1q_f32(out + c, vmulq_f32(sv, vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo)))));
            vst1q_f32(out + c + 4, vmulq_f32(sv, vcvtq_f32_s32(vmovl_high_s16(lo))));
            vst1q_f32(out + c + 8, vmulq_f32(sv, vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi)))));
            vst1q_f32(out + c + 12, vmulq_f32(sv, vcvtq_f32_s32(vmovl_high_s16(hi))));
        }
        for (; c + 4 <= c1; c += 4) vst1q_f32(out + c, vmulq_f32(sv, codes4_f32(codes + c)));
        for (; c < c1; c++) out[c] = s * (float)codes[c];
    }
}

/* E4M3FN words (in 32-bit lanes) -> binary32 words, as nf_e4m3fn_bits. */
static inline float32x4_t e4m3_f32(uint32x4_t x)
{
    const uint32x4_t mag = vandq_u32(x, vdupq_n_u32(0x7F));
    const uint32x4_t sign = vshlq_n_u32(vandq_u32(x, vdupq_n_u32(0x80)), 24);
    /* normal: exponent rebiased by 120, fraction moved up by 20 */
    uint32x4_t bits = vaddq_u32(vshlq_n_u32(mag, 20), vdupq_n_u32(120u << 23));
    /* subnormal (exponent field 0): fraction * 2^-9, exact */
    const float32x4_t sub = vmulq_f32(vcvtq_f32_u32(mag), vdupq_n_f32(0x1p-9f));
    bits = vbslq_u32(vcltq_u32(mag, vdupq_n_u32(8)), vreinterpretq_u32_f32(sub), bits);
    bits = vbslq_u32(vceqq_u32(mag, vdupq_n_u32(0x7F)), vdupq_n_u32(0x7FC00000u), bits);
    return vreinterpretq_f32_u32(vorrq_u32(bits, sign));
}

/* e4m3(x) * s, where a NaN code gives its own NaN whatever s (nf_fp8_row_value). */
static inline float32x4_t fp8_value(uint32x4_t x, float32x4_t s)
{
    const float32x4_t v = e4m3_f32(x);
    const uint32x4_t is_nan = vceqq_u32(vandq_u32(x, vdupq_n_u32(0x7F)), vdupq_n_u32(0x7F));
    return vbslq_f32(is_nan, v, vmulq_f32(v, s));
}

static void fp8_row_neon(const uint8_t *codes, size_t k, float s32, float *out)
{
    const float32x4_t sv = vdupq_n_f32(s32);
    size_t c = 0;
    for (; c + 16 <= k; c += 16) {
        const uint8x16_t b = vld1q_u8(codes + c);
        const uint16x8_t lo = vmovl_u8(vget_low_u8(b)), hi = vmovl_high_u8(b);
        vst1q_f32(out + c, fp8_value(vmovl_u16(vget_low_u16(lo)), sv));
        vst1q_f32(out + c + 4, fp8_value(vmovl_high_u16(lo), sv));
        vst1q_f32(out + c + 8, fp8_value(vmovl_u16(vget_low_u16(hi)), sv));
        vst1q_f32(out + c + 12, fp8_value(vmovl_high_u16(hi), sv));
    }
    for (; c < k; c++) {
        const float v = nf_k_f32(nf_e4m3fn_bits[codes[c]]);
        out[c] = (codes[c] & 0x7Fu) == 0x7Fu ? v : v * s32;
    }
}

/* One group's 16 table entries (64 bytes) gathered by the low 4 bits of its 16 codes: TBL with
 * the byte indices 4 * code + 0..3 of each value. */
static void nvfp4_row_neon(const uint8_t *codes, const uint8_t *scales, size_t k, const float *table, float *out)
{
    static const uint8_t byte_of_b[16] = {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3};
    static const uint8_t lane_of_b[16] = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3};
    const uint8x16_t byte_of = vld1q_u8(byte_of_b), lane_of = vld1q_u8(lane_of_b);
    for (size_t g = 0; g < k / 16; g++) {
        const uint8x16x4_t tb = vld1q_u8_x4((const uint8_t *)(const void *)(table + (size_t)scales[g] * 16));
        const uint8x16_t q = vandq_u8(vld1q_u8(codes + 16 * g), vdupq_n_u8(15));
        for (unsigned j = 0; j < 4; j++) {
            const uint8x16_t pick = vaddq_u8(vdupq_n_u8((uint8_t)(4 * j)), lane_of);
            const uint8x16_t idx = vaddq_u8(vshlq_n_u8(vqtbl1q_u8(q, pick), 2), byte_of);
            vst1q_u8((uint8_t *)(void *)(out + 16 * g + 4 * j), vqtbl4q_u8(tb, idx));
        }
    }
}

static void nibbles_neon(const uint8_t *in, size_t nbytes, uint8_t *out)
{
    size_t j = 0;
    for (; j + 16 <= nbytes; j += 16) {
        const uint8x16_t b = vld1q_u8(in + j);
        uint8x16x2_t z = {{vandq_u8(b, vdupq_n_u8(15)), vshrq_n_u8(b, 4)}};
        vst2q_u8(out + 2 * j, z); /* interleaved: low nibble, high nibble, ... */
    }
    for (; j < nbytes; j++) {
        out[2 * j] = in[j] & 15u;
        out[2 * j + 1] = in[j] >> 4;
    }
}

static bool codes_within_neon(const int8_t *codes, size_t n, int lo, int hi)
{
    int8x16_t mn = vdupq_n_s8(0), mx = vdupq_n_s8(0);
    size_t i = 0;
    if (n >= 16) mn = mx = vld1q_s8(codes);
    for (; i + 16 <= n; i += 16) {
        const int8x16_t q = vld1q_s8(codes + i);
        mn = vminq_s8(mn, q);
        mx = vmaxq_s8(mx, q);
    }
    if (n >= 16 && (vminvq_s8(mn) < lo || vmaxvq_s8(mx) > hi)) return false;
    return nf_codes_within_scalar(codes + i, n - i, lo, hi);
}

/* The nvfp4 value table: per scale word, the 16 products e2m1(c) * e4m3fn(s) then the division
 * by the divisor, in the operand order of the scalar kernel (which decides the payload of a NaN
 * divisor or product). */
static void nvfp4_table_neon(uint32_t divisor_bits, float *table)
{
    float e2m1[16], e4m3[256];
    nf_k_opaque_f32(nf_e2m1_bits, e2m1, 16);
    nf_k_opaque_f32(nf_e4m3fn_bits, e4m3, 256);
    const float32x4_t d = vdupq_n_f32(nf_k_f32(divisor_bits));
    const float32x4_t e0 = vld1q_f32(e2m1), e1 = vld1q_f32(e2m1 + 4), e2 = vld1q_f32(e2m1 + 8),
                      e3 = vld1q_f32(e2m1 + 12);
    for (unsigned s = 0; s < 256; s++) {
        const float32x4_t sv = vdupq_n_f32(e4m3[s]);
        float *t = table + 16 * s;
        vst1q_f32(t, vdivq_f32(vmulq_f32(e0, sv), d));
        vst1q_f32(t + 4, vdivq_f32(vmulq_f32(e1, sv), d));
        vst1q_f32(t + 8, vdivq_f32(vmulq_f32(e2, sv), d));
        vst1q_f32(t + 12, vdivq_f32(vmulq_f32(e3, sv), d));
    }
}

/* ---------------------------------------------------------------- row_split codes
 * Lane c of a row lives at base bit c * b' (b' = 2, 4 or 8) and, for Q5/Q6, high bit c * (b - 4)
 * (docs/layouts.md 4: a row's groups are contiguous in both planes). */

/* Parameters the vector paths take: stored widths 2, 4, 5, 6, 8, and a bias only with 2 bits
 * (Q2).  Anything else (no registered format) goes to the scalar kernels whole, so that it gives
 * their answer whatever it is. */
static bool rs_vector_ok(const nf_rs_params *p)
{
    switch (p->bits) {
    case 2: return true;
    case 4:
    case 5:
    case 6:
    case 8: return p->bias == 0;
    default: return false;
    }
}

/* The code of each 2-bit stored word u = 0..3 (bytes 4..15 unused). */
static inline int8x16_t lut2(const nf_rs_params *p)
{
    int8_t l[16] = {0};
    for (int u = 0; u < 4; u++) l[u] = (int8_t)(p->bias ? u - p->bias : (u ^ 2) - 2);
    return vld1q_s8(l);
}

/* 16 bytes of 2-bit words -> 64 codes: val[i][j] is lane 4j + i (bits 2i of byte j). */
static inline int8x16x4_t quads64(const uint8_t *b, int8x16_t lut)
{
    const uint8x16_t x = vld1q_u8(b), m = vdupq_n_u8(3);
    int8x16x4_t q;
    q.val[0] = vqtbl1q_s8(lut, vandq_u8(x, m));
    q.val[1] = vqtbl1q_s8(lut, vandq_u8(vshrq_n_u8(x, 2), m));
    q.val[2] = vqtbl1q_s8(lut, vandq_u8(vshrq_n_u8(x, 4), m));
    q.val[3] = vqtbl1q_s8(lut, vshrq_n_u8(x, 6));
    return q;
}

/* 32 lanes of Q4, Q5 or Q6 (bits, a constant at every call) from 16 base bytes and, for Q5, 4
 * high bytes, for Q6, 8: val[0] holds lanes 0, 2, .., 30 (the low nibbles), val[1] lanes 1, 3,
 * .., 31, as two's complement codes (the stored word's top bit spread upwards by an arithmetic
 * shift). */
static inline int8x16x2_t nib32(unsigned bits, const uint8_t *b, const uint8_t *h)
{
    const uint8x16_t x = vld1q_u8(b);
    uint8x16_t ev = vandq_u8(x, vdupq_n_u8(15)), od = vshrq_n_u8(x, 4);
    int8x16x2_t out;
    if (bits == 5) {
        /* lanes 2j and 2j+1 have bits 2(j%4) and 2(j%4)+1 of high byte j/4: each lane gets its
         * byte, shifted so that its bit lands on bit 4 (a negative count shifts right) */
        static const uint8_t rep_b[16] = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3};
        static const int8_t sev_b[16] = {4, 2, 0, -2, 4, 2, 0, -2, 4, 2, 0, -2, 4, 2, 0, -2};
        static const int8_t sod_b[16] = {3, 1, -1, -3, 3, 1, -1, -3, 3, 1, -1, -3, 3, 1, -1, -3};
        uint32_t w;
        memcpy(&w, h, sizeof w);
        const uint8x16_t rep = vqtbl1q_u8(vreinterpretq_u8_u32(vdupq_n_u32(w)), vld1q_u8(rep_b));
        const uint8x16_t bit4 = vdupq_n_u8(0x10);
        ev = vorrq_u8(ev, vandq_u8(vshlq_u8(rep, vld1q_s8(sev_b)), bit4));
        od = vorrq_u8(od, vandq_u8(vshlq_u8(rep, vld1q_s8(sod_b)), bit4));
        out.val[0] = vshrq_n_s8(vshlq_n_s8(vreinterpretq_s8_u8(ev), 3), 3);
        out.val[1] = vshrq_n_s8(vshlq_n_s8(vreinterpretq_s8_u8(od), 3), 3);
    } else if (bits == 6) {
        /* lanes 2j and 2j+1 have bits 4(j%2), 4(j%2)+1 and 4(j%2)+2, 4(j%2)+3 of high byte j/2,
         * moved to bits 4-5 */
        static const uint8_t rep_b[16] = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7};
        static const int8_t sev_b[16] = {4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0};
        static const int8_t sod_b[16] = {2, -2, 2, -2, 2, -2, 2, -2, 2, -2, 2, -2, 2, -2, 2, -2};
        uint64_t w;
        memcpy(&w, h, sizeof w);
        const uint8x16_t rep = vqtbl1q_u8(vreinterpretq_u8_u64(vdupq_n_u64(w)), vld1q_u8(rep_b));
        const uint8x16_t bits45 = vdupq_n_u8(0x30);
        ev = vorrq_u8(ev, vandq_u8(vshlq_u8(rep, vld1q_s8(sev_b)), bits45));
        od = vorrq_u8(od, vandq_u8(vshlq_u8(rep, vld1q_s8(sod_b)), bits45));
        out.val[0] = vshrq_n_s8(vshlq_n_s8(vreinterpretq_s8_u8(ev), 2), 2);
        out.val[1] = vshrq_n_s8(vshlq_n_s8(vreinterpretq_s8_u8(od), 2), 2);
    } else {
        out.val[0] = vshrq_n_s8(vshlq_n_s8(vreinterpretq_s8_u8(ev), 4), 4);
        out.val[1] = vshrq_n_s8(vreinterpretq_s8_u8(x), 4);
    }
    return out;
}

/* Whole vectors of lanes inside k (64 for 2 bits, 32 for Q4-Q6), the rest by the scalar kernel
 * from the next multiple of 8 on. */
static void rs_unpack_row_neon(const nf_rs_params *p, const uint8_t *base, const uint8_t *high, size_t k, int8_t *codes)
{
    if (!rs_vector_ok(p)) {
        nf_layout_kernels_scalar.rs_unpack_row(p, base, high, k, codes);
        return;
    }
    size_t c = 0;
    switch (p->bits) {
    case 8:
        if (k) memcpy(codes, base, k);
        return;
    case 2: {
        const int8x16_t lut = lut2(p);
        for (; c + 64 <= k; c += 64) vst4q_s8(codes + c, quads64(base + c / 4, lut)); /* lane 4j + i */
        break;
    }
    case 4:
        for (; c + 32 <= k; c += 32) vst2q_s8(codes + c, nib32(4, base + c / 2, NULL)); /* lane 2j + i */
        break;
    case 5:
        for (; c + 32 <= k; c += 32) vst2q_s8(codes + c, nib32(5, base + c / 2, high + c / 8));
        break;
    case 6:
        for (; c + 32 <= k; c += 32) vst2q_s8(codes + c, nib32(6, base + c / 2, high + c / 4));
        break;
    default: break;
    }
    nf_rs_unpack_scalar(p, base, high, c, k, codes);
}

/* out[i] = s * (float)q[i], i < 16: grouped_row's operation on the same operands. */
static inline void scale16(float32x4_t sv, int8x16_t q, float *out)
{
    const int16x8_t lo = vmovl_s8(vget_low_s8(q)), hi = vmovl_high_s8(q);
    vst1q_f32(out, vmulq_f32(sv, vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo)))));
    vst1q_f32(out + 4, vmulq_f32(sv, vcvtq_f32_s32(vmovl_high_s16(lo))));
    vst1q_f32(out + 8, vmulq_f32(sv, vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi)))));
    vst1q_f32(out + 12, vmulq_f32(sv, vcvtq_f32_s32(vmovl_high_s16(hi))));
}

/* One row_split row straight to values: per group, whole vectors of codes unpacked in registers
 * and multiplied by the group's scale (the values nf_rs_row_f32's unpack + grouped_row give);
 * the row's last lanes that fill no vector are unpacked by the scalar kernel.  A group size that
 * is not a whole number of vectors (no registered format) is declined. */
static bool rs_row_f32_neon(const nf_rs_params *p, const uint8_t *base, const uint8_t *high, const uint8_t *scales_le,
                            size_t k, float *out)
{
    if (!rs_vector_ok(p)) return false;
    const unsigned bits = p->bits;
    const size_t step = bits == 2 ? 64 : bits == 8 ? 16 : 32, G = p->group;
    if (G == 0 || G % step != 0) return false;
    const size_t lb = bits == 2 ? 2 : bits == 8 ? 8 : 4, hb = bits == 5 ? 1 : bits == 6 ? 2 : 0;
    const int8x16_t lut = lut2(p);
    for (size_t c0 = 0, gi = 0; c0 < k; c0 += G, gi++) {
        const float s = nf_k_f16(nf_get_le16(scales_le + 2 * gi));
        const float32x4_t sv = vdupq_n_f32(s);
        const size_t c1 = k - c0 < G ? k : c0 + G;
        size_t c = c0;
        switch (bits) {
        case 2:
            for (; c + 64 <= c1; c += 64) {
                const int8x16x4_t q = quads64(base + c / 4, lut);
                /* lanes 4j + i back in order: pairs (4j, 4j+1) and (4j+2, 4j+3), then pairs of pairs */
                const int16x8_t a = vreinterpretq_s16_s8(vzip1q_s8(q.val[0], q.val[1]));
                const int16x8_t b = vreinterpretq_s16_s8(vzip2q_s8(q.val[0], q.val[1]));
                const int16x8_t e = vreinterpretq_s16_s8(vzip1q_s8(q.val[2], q.val[3]));
                const int16x8_t f = vreinterpretq_s16_s8(vzip2q_s8(q.val[2], q.val[3]));
                scale16(sv, vreinterpretq_s8_s16(vzip1q_s16(a, e)), out + c);
                scale16(sv, vreinterpretq_s8_s16(vzip2q_s16(a, e)), out + c + 16);
                scale16(sv, vreinterpretq_s8_s16(vzip1q_s16(b, f)), out + c + 32);
                scale16(sv, vreinterpretq_s8_s16(vzip2q_s16(b, f)), out + c + 48);
            }
            break;
        case 8:
            for (; c + 16 <= c1; c += 16) scale16(sv, vreinterpretq_s8_u8(vld1q_u8(base + c)), out + c);
            break;
        default:
            for (; c + 32 <= c1; c += 32) {
                const int8x16x2_t q = nib32(bits, base + c / 2, bits == 4 ? NULL : high + c * hb / 8);
                scale16(sv, vzip1q_s8(q.val[0], q.val[1]), out + c);
                scale16(sv, vzip2q_s8(q.val[0], q.val[1]), out + c + 16);
            }
            break;
        }
        if (c < c1) { /* the row's last lanes (c is a multiple of 16, so a byte boundary of both planes) */
            int8_t t[64];
            nf_rs_unpack_scalar(p, base + c * lb / 8, hb ? high + c * hb / 8 : high, 0, c1 - c, t);
            for (size_t i = 0; i < c1 - c; i++) out[c + i] = s * (float)t[i];
        }
    }
    return true;
}

/* ---------------------------------------------------------------- encode side: scale rules */
static unsigned grouped_scales_neon(const nf_grouped_rules *r, const uint16_t *scales, size_t n)
{
    const uint16x8_t exp = vdupq_n_u16(0x7C00), negz = vdupq_n_u16(0x8000);
    uint16x8_t nonfinite = vdupq_n_u16(0), neg_zero = nonfinite, zeros = nonfinite;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const uint16x8_t v = vld1q_u16(scales + i);
        nonfinite = vorrq_u16(nonfinite, vceqq_u16(vandq_u16(v, exp), exp));
        neg_zero = vorrq_u16(neg_zero, vceqq_u16(v, negz));
        zeros = vorrq_u16(zeros, vceqzq_u16(v));
    }
    /* the words seen so far and the last ones: the union of the verdicts */
    unsigned out = nf_grouped_scales_scalar(r, scales + i, n - i);
    if (vmaxvq_u16(nonfinite) || (!r->neg_zero_ok && vmaxvq_u16(neg_zero))) out |= NF_SCALES_INVALID;
    if (r->zero_scale_zero_codes && vmaxvq_u16(zeros)) out |= NF_SCALES_ZERO_RULE;
    return out;
}

/* ---------------------------------------------------------------- encode side: the packer */
/* 64 lanes q (docs/layouts.md 4.3-4.5) -> 16 base bytes (2 bits) or 32 (Q4-Q6) and Q5's 8 or
 * Q6's 16 high bytes; bits is a constant at every call.  The structure load gives val[i][j] =
 * lane 4j + i, so the four lanes of a 2-bit byte (and of a Q6 high byte) sit in one lane of each
 * vector and are joined by shift-and-inserts; mn and mx take the lanes' minimum and maximum. */
static inline void pack64(unsigned bits, const int8_t *q, uint8x16_t add, uint8_t *base, uint8_t *high, int8x16_t *mn,
                          int8x16_t *mx)
{
    const uint8x16x4_t v = vld4q_u8((const uint8_t *)(const void *)q);
    for (int i = 0; i < 4; i++) {
        *mn = vminq_s8(*mn, vreinterpretq_s8_u8(v.val[i]));
        *mx = vmaxq_s8(*mx, vreinterpretq_s8_u8(v.val[i]));
    }
    if (bits == 2) { /* u = (q + bias) mod 4; byte j = u(4j) | u(4j+1) << 2 | u(4j+2) << 4 | u(4j+3) << 6 */
        const uint8x16_t m = vdupq_n_u8(3);
        uint8x16_t u[4];
        for (int i = 0; i < 4; i++) u[i] = vandq_u8(vaddq_u8(v.val[i], add), m);
        vst1q_u8(base, vsliq_n_u8(vsliq_n_u8(vsliq_n_u8(u[0], u[1], 2), u[2], 4), u[3], 6));
        return;
    }
    /* base byte 2j = lane 4j | lane 4j+1 << 4, byte 2j+1 = lane 4j+2 | lane 4j+3 << 4 (low nibbles) */
    const uint8x16x2_t b = {{vsliq_n_u8(v.val[0], v.val[1], 4), vsliq_n_u8(v.val[2], v.val[3], 4)}};
    vst2q_u8(base, b);
    if (bits == 5) {
        /* bit 4 of lane 4j + i to bit i of t[j]; high byte m = t[2m] | t[2m+1] << 4 */
        const uint8x16_t one = vdupq_n_u8(1);
        uint8x16_t h[4];
        for (int i = 0; i < 4; i++) h[i] = vandq_u8(vshrq_n_u8(v.val[i], 4), one);
        const uint8x16_t t = vsliq_n_u8(vsliq_n_u8(vsliq_n_u8(h[0], h[1], 1), h[2], 2), h[3], 3);
        vst1_u8(high, vget_low_u8(vsliq_n_u8(vuzp1q_u8(t, t), vuzp2q_u8(t, t), 4)));
    } else if (bits == 6) { /* bits 4-5 of the lanes as 2-bit fields, four to a byte */
        const uint8x16_t m = vdupq_n_u8(3);
        uint8x16_t h[4];
        for (int i = 0; i < 4; i++) h[i] = vandq_u8(vshrq_n_u8(v.val[i], 4), m);
        vst1q_u8(high, vsliq_n_u8(vsliq_n_u8(vsliq_n_u8(h[0], h[1], 2), h[2], 4), h[3], 6));
    }
}

/* The row driver: 64-lane blocks straight from the codes while they lie inside k, their range
 * check fused; the block holding k from a copy padded with code 0 (so nothing past codes[k) is
 * read), whose codes are range-checked by the scalar loop; blocks past it from zeros.  The
 * verdict is the scalar one: every code of [0, k) inside [lo, hi]. */
static inline bool pack_row_neon(unsigned bits, const nf_rs_params *p, const int8_t *codes, size_t k, size_t lanes,
                                 int lo, int hi, uint8_t *base, uint8_t *high)
{
    const size_t lb = bits == 2 ? 2 : 4, hb = bits == 5 ? 1 : bits == 6 ? 2 : 0;
    const uint8x16_t add = vdupq_n_u8((uint8_t)p->bias);
    int8x16_t mn = vdupq_n_s8(INT8_MAX), mx = vdupq_n_s8(INT8_MIN);
    size_t c = 0;
    /* (high is only written for Q5/Q6; the other formats may pass no high plane) */
    for (; c + 64 <= k; c += 64)
        pack64(bits, codes + c, add, base + c * lb / 8, hb ? high + c * hb / 8 : high, &mn, &mx);
    const bool ok = (c == 0 || (vminvq_s8(mn) >= lo && vmaxvq_s8(mx) <= hi)) &&
                    nf_codes_within_scalar(codes + c, k - c, lo, hi);
    if (c < lanes) {
        int8_t pad[64] = {0};
        int8x16_t pmn = mn, pmx = mx; /* not looked at: the lanes are checked above */
        if (c < k) memcpy(pad, codes + c, k - c);
        pack64(bits, pad, add, base + c * lb / 8, hb ? high + c * hb / 8 : high, &pmn, &pmx);
        memset(pad, 0, sizeof pad);
        for (c += 64; c < lanes; c += 64)
            pack64(bits, pad, add, base + c * lb / 8, hb ? high + c * hb / 8 : high, &pmn, &pmx);
    }
    return ok;
}

static bool rs_pack_row_neon(const nf_rs_params *p, const int8_t *codes, size_t k, size_t lanes, int lo, int hi,
                             uint8_t *base, uint8_t *high)
{
    /* outside the contract (lanes a multiple of 128, >= k) or an unusual format: the scalar
     * packer, whatever it does */
    if (!rs_vector_ok(p) || lanes % 64 != 0 || k > lanes)
        return nf_layout_kernels_scalar.rs_pack_row(p, codes, k, lanes, lo, hi, base, high);
    switch (p->bits) {
    case 2: return pack_row_neon(2, p, codes, k, lanes, lo, hi, base, high);
    case 4: return pack_row_neon(4, p, codes, k, lanes, lo, hi, base, high);
    case 5: return pack_row_neon(5, p, codes, k, lanes, lo, hi, base, high);
    case 6: return pack_row_neon(6, p, codes, k, lanes, lo, hi, base, high);
    default: { /* 8 bits: u = q mod 256, the code bytes themselves */
        const bool ok = codes_within_neon(codes, k, lo, hi);
        if (k) memcpy(base, codes, k);
        memset(base + k, 0, lanes - k);
        return ok;
    }
    }
}

const nf_layout_kernels nf_layout_kernels_neon = {
    .name = "neon",
    .bf16_f32 = bf16_f32_neon,
    .int32_f32 = int32_f32_neon,
    .grouped_row = grouped_row_neon,
    .fp8_row = fp8_row_neon,
    .nvfp4_table = nvfp4_table_neon,
    .nvfp4_row = nvfp4_row_neon,
    .rs_unpack_row = rs_unpack_row_neon,
    .nibbles = nibbles_neon,
    .rs_row_f32 = rs_row_f32_neon,
    .codes_within = codes_within_neon,
    .grouped_scales = grouped_scales_neon,
    .rs_pack_row = rs_pack_row_neon,
};

#else
typedef int nf_layout_kernels_neon_unused; /* not an aarch64 GCC/Clang build: no NEON kernels */
#endif
