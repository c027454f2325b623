/* SHA-256 block compression with the ARMv8 SHA-256 instructions (common/sha256.h), bit for bit
 * the scalar reference's (FIPS 180-4 6.2.2).  The state lives in two registers in FIPS order,
 * lane 0 first: ABCD = h[0..3] and EFGH = h[4..7], so it loads and stores as it is.  Per the Arm
 * ARM's pseudocode (SHA256hash):
 *   SHA256H  Qd=ABCD, Qn=EFGH, Vm=W+K   four rounds, giving the new ABCD;
 *   SHA256H2 Qd=EFGH, Qn=ABCD, Vm=W+K   the same four rounds from the same (old) ABCD and EFGH,
 *                                       giving the new EFGH;
 * so each group of four message words is one of each, the second fed the ABCD from before the
 * first.  The schedule, W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16] (6.2.2 step 1), is
 * made four words at a time in place of the oldest four:
 *   SHA256SU0 Vd=W[t-16..t-13], Vn=W[t-12..t-9]     W[t-16+i] + s0(W[t-15+i]);
 *   SHA256SU1 Vd=that, Vn=W[t-8..t-5], Vm=W[t-4..t-1]   adds W[t-7+i] and s1(W[t-2+i]), the
 *             last two lanes' s1 taken from the first two lanes it has just made.
 * The message bytes are big-endian words (FIPS 180-4 3.1): REV32 on the bytes of the
 * little-endian lanes (CMakeLists.txt refuses big-endian aarch64).  Compiled with the target
 * attribute of the instructions only (common/simd_target.h); common/sha256.c selects it for the
 * neon level when nf_simd_has_sha says the CPU has them. */
#include "common/simd_target.h"
#include "common/sha256.h"

#if NF_ARM_KERNELS

/* Clang before 16 declares the SHA-256 intrinsics only when the whole compilation targets them
 * (__ARM_FEATURE_SHA2), not for a function with the target attribute, which is how the kernels
 * are built (docs/portability.md, "Kernels on aarch64": one binary for every CPU).  The macro is
 * defined for the header alone; a call still needs NF_ARM_SHA2_FN, or code generation fails. */
#if defined(__clang__) && !defined(__ARM_FEATURE_SHA2)
#define __ARM_FEATURE_SHA2 1
#include <arm_neon.h>
#undef __ARM_FEATURE_SHA2
#else
#include <arm_neon.h>
#endif

static NF_ARM_SHA2_FN void blocks_armv8(uint32_t h[8], const uint8_t *p, size_t n)
{
    uint32x4_t abcd = vld1q_u32(h), efgh = vld1q_u32(h + 4);
    for (size_t b = 0; b < n; b++, p += 64) {
        const uint32x4_t abcd0 = abcd, efgh0 = efgh;
        uint32x4_t w[4];
        for (int j = 0; j < 4; j++) w[j] = vreinterpretq_u32_u8(vrev32q_u8(vld1q_u8(p + 16 * j)));
#pragma GCC unroll 16
        for (int g = 0; g < 16; g++) { /* unrolled, so w[] stays in registers (Clang keeps the loop) */
            const uint32x4_t wk = vaddq_u32(w[g & 3], vld1q_u32(nf_sha256_k + 4 * g));
            if (g < 12) /* W[4g+16 .. 4g+19] in place of W[4g .. 4g+3] */
                w[g & 3] = vsha256su1q_u32(vsha256su0q_u32(w[g & 3], w[(g + 1) & 3]), w[(g + 2) & 3], w[(g + 3) & 3]);
            const uint32x4_t abcd_in = abcd;
            abcd = vsha256hq_u32(abcd, efgh, wk);
            efgh = vsha256h2q_u32(efgh, abcd_in, wk);
        }
        abcd = vaddq_u32(abcd, abcd0);
        efgh = vaddq_u32(efgh, efgh0);
    }
    vst1q_u32(h, abcd);
    vst1q_u32(h + 4, efgh);
}

const nf_sha256_kernels nf_sha256_kernels_armv8 = {"armv8-sha2", blocks_armv8};
#endif
