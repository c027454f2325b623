/* CPU-feature dispatch of the SIMD kernels (internal).
 *
 * Three kernel levels, every one giving the same words bit for bit (the scalar reference is
 * always built and always available):
 *   NF_SIMD_SCALAR  portable C, the reference
 *   NF_SIMD_AVX2    AVX2 + F16C (x86-64)
 *   NF_SIMD_AVX512  AVX-512 F + BW + VL (x86-64)
 *
 * The level is chosen once, on first use: the best one the CPU (and OS) supports, unless the
 * environment variable NINFER_SIMD names another (`scalar`, `avx2` or `avx512`).  A requested
 * level the CPU lacks, or an unknown name, falls back to the best available level and the
 * reason is kept (nf_simd_reason).  Reading the level is cheap and thread-safe.
 *
 * nf_simd_force is a test hook that switches the level in-process; it must not race with
 * encoders running on other threads. */
#ifndef NINFER_COMMON_CPU_H
#define NINFER_COMMON_CPU_H

#include <stdbool.h>

typedef enum nf_simd_level {
    NF_SIMD_SCALAR = 0,
    NF_SIMD_AVX2 = 1,
    NF_SIMD_AVX512 = 2,
    NF_SIMD_LEVEL_COUNT
} nf_simd_level;

/* The level the kernels use now (resolved on the first call). */
nf_simd_level nf_simd_active(void);
/* The best level this CPU supports (scalar off x86-64 or without compiler support). */
nf_simd_level nf_simd_best(void);
/* Does the CPU support this level? */
bool nf_simd_supported(nf_simd_level level);
/* Switches the active level to `level`, or to the best supported one when the CPU lacks it (the
 * reason is then kept); returns the level now active.  An out-of-range level counts as lacking. */
nf_simd_level nf_simd_force(nf_simd_level level);
/* "scalar", "avx2", "avx512"; NULL for an out-of-range level. */
const char *nf_simd_level_name(nf_simd_level level);
/* Why the active level differs from the one asked for (NINFER_SIMD or nf_simd_force), e.g.
 * "NINFER_SIMD=avx512: the CPU lacks AVX-512 F/BW/VL; using avx2"; "" when it does not. */
const char *nf_simd_reason(void);

#endif
