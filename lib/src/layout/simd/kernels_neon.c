/* Layout kernels for NEON (kernels.h): 4 binary32 lanes per instruction for values, 16 byte
 * lanes for codes.  Values are produced by the reference's own operations (binary32 multiply of
 * the same exact operands, in the same operand order); words are unpacked by masks, shifts, zips
 * and table lookups.  Every loop does whole vectors inside the caller's bounds and leaves the
 * remaining elements to the scalar code, so nothing outside the given arrays is read or written.
 * The row_split packing and unpacking, the scale rules and the nvfp4 value table run the scalar
 * kernels (their NEON versions are still to be written: docs/portability.md). */
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

/* The entries whose NEON versions are still to be written: the scalar ones. */
static void rs_unpack_row_neon(const nf_rs_params *p, const uint8_t *base, const uint8_t *high, size_t k, int8_t *codes)
{
    nf_layout_kernels_scalar.rs_unpack_row(p, base, high, k, codes);
}

static bool rs_row_f32_neon(const nf_rs_params *p, const uint8_t *base, const uint8_t *high, const uint8_t *scales_le,
                            size_t k, float *out)
{
    return nf_layout_kernels_scalar.rs_row_f32(p, base, high, scales_le, k, out);
}

static bool rs_pack_row_neon(const nf_rs_params *p, const int8_t *codes, size_t k, size_t lanes, int lo, int hi,
                             uint8_t *base, uint8_t *high)
{
    return nf_layout_kernels_scalar.rs_pack_row(p, codes, k, lanes, lo, hi, base, high);
}

const nf_layout_kernels nf_layout_kernels_neon = {
    .name = "neon",
    .bf16_f32 = bf16_f32_neon,
    .int32_f32 = int32_f32_neon,
    .grouped_row = grouped_row_neon,
    .fp8_row = fp8_row_neon,
    .nvfp4_table = nf_nvfp4_table_scalar,
    .nvfp4_row = nvfp4_row_neon,
    .rs_unpack_row = rs_unpack_row_neon,
    .nibbles = nibbles_neon,
    .rs_row_f32 = rs_row_f32_neon,
    .codes_within = codes_within_neon,
    .grouped_scales = nf_grouped_scales_scalar,
    .rs_pack_row = rs_pack_row_neon,
};

#else
typedef int nf_layout_kernels_neon_unused; /* not an aarch64 GCC/Clang build: no NEON kernels */
#endif
