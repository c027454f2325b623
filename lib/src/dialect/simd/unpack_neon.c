/* Packed dialect kernels for NEON (unpack_simd.h): 4 lanes of binary32.  A GPTQ word's codes
 * are variable shifts (USHL by negative counts) of the word broadcast, 4 codes a vector; AWQ's
 * nibbles one shift of 4 words.  MXFP4's codes are table lookups: the 16 binary32 values are
 * 64 table bytes, and TBL gathers the 4 bytes of each code's value.  The codes less z are exact
 * int32 numbers, converted exactly (SCVTF) and multiplied once by s (FMUL, no FMA): the scalar
 * bits.  Tails go to the scalar kernels. */
#include "common/simd_target.h"
#include "dialect/simd/unpack_simd.h"

#if NF_ARM_KERNELS

#include <arm_neon.h>

static inline float32x4_t values4(uint32x4_t codes, int32x4_t zv, float32x4_t sv)
{
    return vmulq_f32(vcvtq_f32_s32(vsubq_s32(vreinterpretq_s32_u32(codes), zv)), sv);
}

/* (word >> shift[i]) & mask, lane-wise (shift as negative left shifts) */
static inline uint32x4_t field4(uint32x4_t word, int32x4_t neg_shift, uint32x4_t mask)
{
    return vandq_u32(vshlq_u32(word, neg_shift), mask);
}

static void packed_run_neon(const uint32_t *words, size_t stride, size_t nwords, unsigned bits, int32_t z, float s,
                            float *out)
{
    const int32x4_t zv = vdupq_n_s32(z);
    const float32x4_t sv = vdupq_n_f32(s);
    static const int32_t step_w[4] = {0, -1, -2, -3};
    const int32x4_t step = vld1q_s32(step_w);
    const uint32x4_t mask = vdupq_n_u32((1u << bits) - 1u);
    size_t w = 0;
    if (bits == 2 || bits == 4 || bits == 8) {
        const unsigned per = 32 / bits, vecs = per / 4; /* codes and vectors of 4 a word */
        for (; w < nwords; w++) {
            const uint32x4_t b = vdupq_n_u32(words[w * stride]);
            for (unsigned v = 0; v < vecs; v++) {
                /* codes 4v .. 4v+3: shifts b*(4v) .. b*(4v+3) */
                int32x4_t sh = vmulq_n_s32(vaddq_s32(step, vdupq_n_s32(-(int32_t)(4 * v))), (int32_t)bits);
                vst1q_f32(out + per * w + 4 * v, values4(field4(b, sh, mask), zv, sv));
            }
        }
    }
    nf_dialect_unpack_packed_run_scalar(words + w * stride, stride, nwords - w, bits, z, s, out + w * (32 / bits));
}

static void nibble_run_neon(const uint32_t *words, size_t n, unsigned shift, int32_t z, float s, float *out)
{
    const int32x4_t zv = vdupq_n_s32(z), sh = vdupq_n_s32(-(int32_t)shift);
    const uint32x4_t m = vdupq_n_u32(15);
    const float32x4_t sv = vdupq_n_f32(s);
    size_t t = 0;
    for (; t + 4 <= n; t += 4) vst1q_f32(out + t, values4(field4(vld1q_u32(words + t), sh, m), zv, sv));
    nf_dialect_unpack_nibble_run_scalar(words + t, n - t, shift, z, s, out + t);
}

/* Eight code bytes: their 16 codes in output order (low nibble first), then for each group of 4
 * the byte indices 4 * code + 0..3 into the 64 table bytes, TBL, times s. */
static void e2m1_run_neon(const uint8_t *bytes, size_t nbytes, const float *table, float s, float *out)
{
    const uint8x16x4_t tb = vld1q_u8_x4((const uint8_t *)(const void *)table);
    const float32x4_t sv = vdupq_n_f32(s);
    static const uint8_t byte_of_b[16] = {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3};
    static const uint8_t lane_of_b[16] = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3};
    const uint8x16_t byte_of = vld1q_u8(byte_of_b), lane_of = vld1q_u8(lane_of_b);
    size_t i = 0;
    for (; i + 8 <= nbytes; i += 8) {
        const uint8x8_t b = vld1_u8(bytes + i);
        const uint8x8x2_t z = vzip_u8(vand_u8(b, vdup_n_u8(15)), vshr_n_u8(b, 4));
        const uint8x16_t codes = vcombine_u8(z.val[0], z.val[1]);
        for (unsigned j = 0; j < 4; j++) {
            /* lanes 4j .. 4j+3 of codes, each repeated 4 times */
            const uint8x16_t pick = vaddq_u8(vdupq_n_u8((uint8_t)(4 * j)), lane_of);
            const uint8x16_t idx = vaddq_u8(vshlq_n_u8(vqtbl1q_u8(codes, pick), 2), byte_of);
            const float32x4_t v = vreinterpretq_f32_u8(vqtbl4q_u8(tb, idx));
            vst1q_f32(out + 2 * i + 4 * j, vmulq_f32(v, sv));
        }
    }
    nf_dialect_unpack_e2m1_run_scalar(bytes + i, nbytes - i, table, s, out + 2 * i);
}

const nf_dialect_unpack_kernels nf_dialect_unpack_kernels_neon = {
    .name = "neon", .packed_run = packed_run_neon, .nibble_run = nibble_run_neon, .e2m1_run = e2m1_run_neon};

#else
typedef int nf_dialect_unpack_neon_unused; /* not an aarch64 GCC/Clang build: no NEON kernel */
#endif
