/* CPU-feature dispatch of the SIMD kernels (internal).
 *
 * Kernel levels, every one giving the same words bit for bit (the scalar reference is always
 * built and always available):
 *   NF_SIMD_SCALAR  portable C, the reference
 *   NF_SIMD_AVX2    AVX2 + F16C (x86-64)
 *   NF_SIMD_AVX512  AVX-512 F + BW + VL (x86-64)
 *   NF_SIMD_NEON    Advanced SIMD (aarch64, where every CPU has it)
 * A machine's levels form a chain, each above the one before: scalar < avx2 < avx512 on x86-64,
 * scalar < neon on aarch64 (nf_simd_rank); the other machine's levels are never supported.
 *
 * The level is chosen once, on first use: the best one the CPU (and OS) supports, unless the
 * environment variable NINFER_SIMD names another (`scalar`, `avx2`, `avx512` or `neon`).  A
 * level the CPU has becomes the process's ceiling: it runs as on a CPU whose best level is that one
 * (nf_simd_best and nf_simd_supported say so), which is how CI runs the whole suite on the
 * paths an AVX2-only or scalar user gets.  A requested level the CPU lacks, or an unknown
 * name, falls back to the best available level and the reason is kept (nf_simd_reason).
 * Reading the level is cheap and thread-safe.
 *
 * nf_simd_force is a test hook that switches the level in-process; it must not race with
 * encoders running on other threads.
 *
 * One dispatch structure for every module that has kernels (stats, layout, format/ggml, the
 * packed-integer dialects' values, and the grouped_absmax, grouped_search and fp8_row_maxabs
 * methods, and ggml_quantize's searches):
 *   - a kernels table type nf_X_kernels, a struct of function pointers (with its name), in the
 *     module's header;
 *   - one const instance per level: nf_X_kernels_scalar (portable C, every entry set: callers
 *     never test an entry for NULL), nf_X_kernels_avx2 and nf_X_kernels_avx512, declared once in
 *     the header under `#if NF_X86_KERNELS` and defined in the module's simd/ files, whose
 *     functions take their target attributes from common/simd_target.h only, and
 *     nf_X_kernels_neon the same way under `#if NF_ARM_KERNELS` (a module without NEON kernels
 *     names its scalar instance in their place);
 *   - one selector pair, defined by NF_SIMD_SELECTOR below next to the scalar instance:
 *     nf_X_kernels_for(level) and nf_X_kernels_active(), never NULL (a level the build lacks
 *     falls back to scalar).  Callers take the table once per call (or plan) and keep the
 *     pointer, so a row loop neither reads the level nor switches on it, while nf_simd_force
 *     takes effect at the next call.
 * Adding a kernel: add its entry to the module's table, set it in all three instances (the
 * scalar one first: it is the reference the tests compare the others with bit for bit), and
 * tests/unit/test_simd_tables.c checks that every entry of every level is set. */
#ifndef NINFER_COMMON_CPU_H
#define NINFER_COMMON_CPU_H

#include <stdbool.h>

#include "common/simd_target.h"

typedef enum nf_simd_level {
    NF_SIMD_SCALAR = 0,
    NF_SIMD_AVX2 = 1,
    NF_SIMD_AVX512 = 2,
    NF_SIMD_NEON = 3,
    NF_SIMD_LEVEL_COUNT
} nf_simd_level;

/* The level's place in this machine's chain (0 for scalar), or -1 for a level of another
 * machine or out of range: a level is at most another when its rank is not above. */
int nf_simd_rank(nf_simd_level level);

/* The level the kernels use now (resolved on the first call). */
nf_simd_level nf_simd_active(void);
/* The best level this process may use: the CPU's, or the lower one NINFER_SIMD named (neon on
 * aarch64; scalar on other machines or without compiler support). */
nf_simd_level nf_simd_best(void);
/* The best level the CPU (and OS) support, whatever NINFER_SIMD says. */
nf_simd_level nf_simd_cpu_level(void);
/* May this process use this level (the CPU has it and NINFER_SIMD does not rule it out)? */
bool nf_simd_supported(nf_simd_level level);
/* Switches the active level to `level`, or to the best supported one when the CPU lacks it (the
 * reason is then kept); returns the level now active.  An out-of-range level counts as lacking. */
nf_simd_level nf_simd_force(nf_simd_level level);
/* Whether the CPU has the SHA-256 instructions, whatever the level: x86's SHA extensions (SHA-NI,
 * with SSSE3 and SSE4.1), common/sha256.c's kernel for the avx2 and avx512 levels when it does;
 * aarch64's (FEAT_SHA256, with AES: HWCAP_SHA2 and HWCAP_AES on Linux), its kernel for the neon
 * level.  A feature of its own, not of a level: NINFER_SIMD=scalar still selects the portable
 * SHA-256, by its level. */
bool nf_simd_has_sha(void);
/* "scalar", "avx2", "avx512", "neon"; NULL for an out-of-range level. */
const char *nf_simd_level_name(nf_simd_level level);
/* Why the active level differs from the one asked for (NINFER_SIMD or nf_simd_force), e.g.
 * "NINFER_SIMD=avx512: the CPU lacks AVX-512 F/BW/VL; using avx2"; "" when it does not. */
const char *nf_simd_reason(void);

/* The table of `level` among the four instances (scalar for a level out of range); the levels
 * of the machine the build is not for have the scalar one (their instances are not built). */
#if NF_X86_KERNELS
#define NF_SIMD_TABLES(scalar, avx2, avx512, neon) \
    {                                              \
        &(scalar), &(avx2), &(avx512), &(scalar)   \
    }
#elif NF_ARM_KERNELS
#define NF_SIMD_TABLES(scalar, avx2, avx512, neon) \
    {                                              \
        &(scalar), &(scalar), &(scalar), &(neon)   \
    }
#else
#define NF_SIMD_TABLES(scalar, avx2, avx512, neon) \
    {                                              \
        &(scalar), &(scalar), &(scalar), &(scalar) \
    }
#endif
#define NF_SIMD_SELECTOR(type, prefix, scalar, avx2, avx512, neon)                                         \
    const type *prefix##_for(nf_simd_level level)                                                          \
    {                                                                                                      \
        static const type *const tables[NF_SIMD_LEVEL_COUNT] = NF_SIMD_TABLES(scalar, avx2, avx512, neon); \
        return (unsigned)level < NF_SIMD_LEVEL_COUNT ? tables[level] : tables[NF_SIMD_SCALAR];             \
    }                                                                                                      \
    const type *prefix##_active(void) { return prefix##_for(nf_simd_active()); }

#endif
