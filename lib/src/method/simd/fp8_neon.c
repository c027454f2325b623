/* fp8_row_maxabs row kernel for NEON (fp8_simd.h): 4 lanes of binary32, the steps of
 * fp8_avx2.c.  Pass 1 is an unsigned max over the sign-cleared words (8 BF16/binary16 or 4
 * binary32 words a vector, UMAXV across); pass 2 encodes 16 elements an iteration: BF16 widened by
 * a shift, binary16 by FCVTL (exact for every finite value; pass 1 has refused a row with any
 * other) then rounded to BF16 by the reference's integer formula, binary32 rounded by the same
 * formula; one FMUL (no fused multiply-add: -ffp-contract=off) by the row's reciprocal; then
 * nf_fp8_e4m3fn_of lane-wise (UMIN clamp, the integer rebias and round for normal values, FADD of
 * 2^14 for subnormal ones -- round to nearest, and subnormals kept: Linux starts a process with
 * FPCR's rounding mode and flush-to-zero bits clear) and the sign bit ORed back.  The codes
 * (<= 0xFE) narrow to bytes with XTN.  A partial vector (the tail of a row) is read and written
 * through zeroed stack copies, so nothing beyond the row is touched. */
#include "common/simd_target.h"
#include "method/simd/fp8_simd.h"

#if NF_ARM_KERNELS

#include <arm_neon.h>

#define LANES 4u

/* LANES elements at p, widened exactly to binary32 and rounded to BF16 (as binary32 words). */
static inline uint32x4_t load_x(const uint8_t *p, nf_src_type type)
{
    uint32x4_t b;
    if (type == NF_SRC_BF16) return vshll_n_u16(vld1_u16((const uint16_t *)(const void *)p), 16);
    if (type == NF_SRC_F16)
        b = vreinterpretq_u32_f32(vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)(const void *)p))));
    else b = vld1q_u32((const uint32_t *)(const void *)p);
    uint32x4_t odd = vandq_u32(vshrq_n_u32(b, 16), vdupq_n_u32(1));
    uint32x4_t r = vaddq_u32(vaddq_u32(b, vdupq_n_u32(0x7FFF)), odd);
    return vandq_u32(r, vdupq_n_u32(0xFFFF0000u));
}

/* nf_fp8_e4m3fn_of(x * inv) lane-wise, as 32-bit lanes. */
static inline uint32x4_t code_lanes(uint32x4_t xb, float32x4_t inv)
{
    uint32x4_t vb = vreinterpretq_u32_f32(vmulq_f32(vreinterpretq_f32_u32(xb), inv));
    uint32x4_t sign = vandq_u32(vshrq_n_u32(vb, 24), vdupq_n_u32(0x80));
    uint32x4_t a = vandq_u32(vb, vdupq_n_u32(0x7FFFFFFF));
    a = vminq_u32(a, vdupq_n_u32(NF_FP8_E4M3_MAX_BITS));
    uint32x4_t odd = vandq_u32(vshrq_n_u32(a, 20), vdupq_n_u32(1));
    uint32x4_t normal = vshrq_n_u32(vaddq_u32(vaddq_u32(a, vdupq_n_u32(0x7FFFFu - (120u << 23))), odd), 20);
    uint32x4_t sub = vsubq_u32(
        vreinterpretq_u32_f32(vaddq_f32(vreinterpretq_f32_u32(a), vdupq_n_f32(NF_FP8_SUB_MAGIC))),
        vdupq_n_u32(NF_FP8_SUB_MAGIC_BITS));
    uint32x4_t small = vcltq_u32(a, vdupq_n_u32(NF_FP8_E4M3_NORMAL_BITS));
    return vorrq_u32(vbslq_u32(small, sub, normal), sign);
}

/* 8 codes (two vectors of 4) as bytes. */
static inline uint8x8_t narrow8(uint32x4_t lo, uint32x4_t hi)
{
    return vmovn_u16(vcombine_u16(vmovn_u32(lo), vmovn_u32(hi)));
}

static inline uint32_t row_max(const uint8_t *row, nf_src_type type, size_t k)
{
    size_t i = 0;
    if (type == NF_SRC_F32) {
        const uint32x4_t mag = vdupq_n_u32(0x7FFFFFFF);
        uint32x4_t m0 = vdupq_n_u32(0), m1 = m0;
        for (; i + 8 <= k; i += 8) {
            const uint32_t *p = (const uint32_t *)(const void *)(row + 4 * i);
            m0 = vmaxq_u32(m0, vandq_u32(vld1q_u32(p), mag));
            m1 = vmaxq_u32(m1, vandq_u32(vld1q_u32(p + 4), mag));
        }
        uint32_t m = vmaxvq_u32(vmaxq_u32(m0, m1));
        for (; i < k; i++) {
            uint32_t w;
            memcpy(&w, row + 4 * i, sizeof w);
            w &= 0x7FFFFFFFu;
            m = w > m ? w : m;
        }
        return m;
    }
    const uint16x8_t mag = vdupq_n_u16(0x7FFF);
    uint16x8_t m0 = vdupq_n_u16(0), m1 = m0;
    for (; i + 16 <= k; i += 16) {
        const uint16_t *p = (const uint16_t *)(const void *)(row + 2 * i);
        m0 = vmaxq_u16(m0, vandq_u16(vld1q_u16(p), mag));
        m1 = vmaxq_u16(m1, vandq_u16(vld1q_u16(p + 8), mag));
    }
    uint32_t m = vmaxvq_u16(vmaxq_u16(m0, m1));
    for (; i < k; i++) {
        uint16_t w;
        memcpy(&w, row + 2 * i, sizeof w);
        w &= 0x7FFFu;
        m = w > m ? w : m;
    }
    return m;
}

static inline void encode(const uint8_t *row, nf_src_type type, size_t esize, size_t k, float inv, uint8_t *codes)
{
    const float32x4_t vinv = vdupq_n_f32(inv);
    size_t i = 0;
    for (; i + 4 * LANES <= k; i += 4 * LANES) {
        const uint8_t *p = row + i * esize;
        uint32x4_t q0 = code_lanes(load_x(p, type), vinv);
        uint32x4_t q1 = code_lanes(load_x(p + LANES * esize, type), vinv);
        uint32x4_t q2 = code_lanes(load_x(p + 2 * LANES * esize, type), vinv);
        uint32x4_t q3 = code_lanes(load_x(p + 3 * LANES * esize, type), vinv);
        vst1q_u8(codes + i, vcombine_u8(narrow8(q0, q1), narrow8(q2, q3)));
    }
    if (i < k) {
        /* up to 15 elements: through zeroed copies of 16 */
        uint8_t in[4 * LANES * 4] = {0}, out[4 * LANES];
        memcpy(in, row + i * esize, (k - i) * esize);
        uint32x4_t q0 = code_lanes(load_x(in, type), vinv);
        uint32x4_t q1 = code_lanes(load_x(in + LANES * esize, type), vinv);
        uint32x4_t q2 = code_lanes(load_x(in + 2 * LANES * esize, type), vinv);
        uint32x4_t q3 = code_lanes(load_x(in + 3 * LANES * esize, type), vinv);
        vst1q_u8(out, vcombine_u8(narrow8(q0, q1), narrow8(q2, q3)));
        memcpy(codes + i, out, k - i);
    }
}

#define FP8_INLINE static inline
#define FP8_FN
#define FP8_ROW_FN fp8_row_neon
#include "method/simd/fp8_row.inc"

const nf_fp8_kernels nf_fp8_kernels_neon = {.name = "neon", .row = fp8_row_neon};

#else
typedef int nf_fp8_neon_unused; /* not an aarch64 GCC/Clang build: no NEON kernel */
#endif
