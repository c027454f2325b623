/* The one place that says how a SIMD kernel is compiled (internal; common/cpu.h chooses which
 * level runs).  A kernel file is built without -march: its functions carry the target attribute
 * of their level, so one binary holds every level and the dispatcher picks at run time.
 *
 *   NF_X86_KERNELS       1 where the x86 kernels are compiled (GCC or Clang on x86), else 0
 *   NF_ARM_KERNELS       1 where the NEON kernels are compiled (GCC or Clang on aarch64), else 0
 *   NF_TARGET_AVX2       the features of the avx2 level: AVX2 and F16C
 *   NF_TARGET_AVX512     those of the avx512 level: AVX-512 F/BW/VL/DQ, with AVX2, F16C and FMA
 *                        (common/cpu.c checks each of them before it chooses the level)
 *   NF_TARGET_SHANI      the SHA extensions (SHA-NI) with the SSSE3/SSE4.1 shuffles they need:
 *                        a feature of its own, not of a level (AVX2 machines without it exist),
 *                        checked by nf_simd_has_sha (common/cpu.h)
 *   NF_TARGET_ARM_SHA2   the ARMv8 SHA-256 instructions (FEAT_SHA256) on aarch64: likewise a
 *                        feature of its own beside the neon level, checked by nf_simd_has_sha
 *   NF_ARM_SHA2_FN       a function compiled for it (common/simd/sha256_armv8.c)
 *   NF_AVX2_FN / NF_AVX512_FN           a function compiled for the level
 *   NF_AVX2_INLINE / NF_AVX512_INLINE   a helper inlined into such functions */
#ifndef NINFER_COMMON_SIMD_TARGET_H
#define NINFER_COMMON_SIMD_TARGET_H

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define NF_X86_KERNELS 1
#else
#define NF_X86_KERNELS 0
#endif

/* The NEON kernels: aarch64, where Advanced SIMD is part of the base architecture (no target
 * attribute, no run-time check: every aarch64 CPU has it) and little-endian (CMakeLists.txt
 * refuses other targets). */
#if defined(__aarch64__) && defined(__ARM_NEON) && defined(__GNUC__)
#define NF_ARM_KERNELS 1
#else
#define NF_ARM_KERNELS 0
#endif

#define NF_TARGET_AVX2 "avx2,f16c"
#define NF_TARGET_AVX512 "avx512f,avx512bw,avx512vl,avx512dq,avx2,f16c,fma"

#define NF_TARGET_SHANI "sha,sse4.1,ssse3"

#define NF_SHANI_FN __attribute__((target(NF_TARGET_SHANI)))

/* The compilers spell it differently: GCC 12's arm_neon.h declares the SHA-256 intrinsics under
 * "+nothing+crypto", so a function calling them must have at least that (GCC rejects "+sha2"
 * alone as a target mismatch), and crypto is AES with SHA2: nf_simd_has_sha checks both.  Clang
 * 14 takes feature names without the "+" ("+sha2" is ignored with a warning, then code
 * generation fails) and needs only sha2. */
#if defined(__clang__)
#define NF_TARGET_ARM_SHA2 "sha2"
#else
#define NF_TARGET_ARM_SHA2 "+crypto"
#endif
#define NF_ARM_SHA2_FN __attribute__((target(NF_TARGET_ARM_SHA2)))
#define NF_AVX2_FN __attribute__((target(NF_TARGET_AVX2)))
#define NF_AVX2_INLINE static inline __attribute__((always_inline, target(NF_TARGET_AVX2)))
#define NF_AVX512_FN __attribute__((target(NF_TARGET_AVX512)))
#define NF_AVX512_INLINE static inline __attribute__((always_inline, target(NF_TARGET_AVX512)))

#endif
