/* CPU-feature dispatch (common/cpu.h). */
#include "common/simd_target.h"
#include "common/cpu.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/simd.h>

#if NF_X86_KERNELS
#define NF_CPU_X86 1
#include <cpuid.h>
#else
#define NF_CPU_X86 0
#endif

/* aarch64 Linux reports the CPU's features in the auxiliary vector's AT_HWCAP bits (the ID
 * registers themselves are the kernel's to read) */
#if NF_ARM_KERNELS && defined(__linux__)
#define NF_CPU_ARM_LINUX 1
#include <sys/auxv.h>
#else
#define NF_CPU_ARM_LINUX 0
#endif

static const char *const level_names[NF_SIMD_LEVEL_COUNT] = {"scalar", "avx2", "avx512", "neon"};

/* This machine's chain of levels, lowest first (common/cpu.h) */
#if NF_CPU_X86
static const nf_simd_level chain[] = {NF_SIMD_SCALAR, NF_SIMD_AVX2, NF_SIMD_AVX512};
#elif NF_ARM_KERNELS
static const nf_simd_level chain[] = {NF_SIMD_SCALAR, NF_SIMD_NEON};
#else
static const nf_simd_level chain[] = {NF_SIMD_SCALAR};
#endif
#define CHAIN_LEN (sizeof chain / sizeof chain[0])

int nf_simd_rank(nf_simd_level level)
{
    for (size_t i = 0; i < CHAIN_LEN; i++)
        if (chain[i] == level) return (int)i;
    return -1;
}

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static nf_simd_level cpu_level = NF_SIMD_SCALAR;  /* what the CPU (and OS) support */
static nf_simd_level best_level = NF_SIMD_SCALAR; /* cpu_level, or the lower NINFER_SIMD level */
static _Atomic int active_level = NF_SIMD_SCALAR;
static bool cpu_sha; /* the SHA-256 instructions (nf_simd_has_sha) */
static char reason[192];

#if NF_CPU_X86
/* F16C from CPUID leaf 1 (Clang's __builtin_cpu_supports does not know "f16c"); its register
 * state is the AVX state, which the avx2 test below has found saved by the OS. */
static bool has_f16c(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
#endif

/* x86: the SHA extensions and the SSSE3/SSE4.1 shuffles their kernel uses (their state is the
 * SSE state every x86-64 OS saves).  aarch64: the SHA-256 instructions, and AES, which GCC's
 * target for them includes (NF_TARGET_ARM_SHA2, common/simd_target.h): every feature the
 * kernel is compiled for, as on x86.  Elsewhere (an aarch64 OS other than Linux) none. */
static bool detect_sha(void)
{
#if NF_CPU_X86
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSSE3) || !(c & bit_SSE4_1)) return false;
    return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_SHA);
#elif NF_CPU_ARM_LINUX
    const unsigned long hw = getauxval(AT_HWCAP);
    return (hw & HWCAP_SHA2) && (hw & HWCAP_AES);
#else
    return false;
#endif
}

/* __builtin_cpu_supports also checks that the OS saves the AVX / AVX-512 register state. */
static nf_simd_level detect(void)
{
#if NF_CPU_X86
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !has_f16c()) return NF_SIMD_SCALAR;
    /* the features of NF_TARGET_AVX512 (common/simd_target.h), every one */
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("fma"))
        return NF_SIMD_AVX512;
    return NF_SIMD_AVX2;
#elif NF_ARM_KERNELS
    return NF_SIMD_NEON; /* Advanced SIMD is part of the aarch64 base architecture */
#else
    return NF_SIMD_SCALAR;
#endif
}

static const char *lacks(nf_simd_level level)
{
    int r = nf_simd_rank(level);
    if (r >= 0 && r <= nf_simd_rank(cpu_level)) return "NINFER_SIMD rules it out";
    switch (level) {
    case NF_SIMD_AVX2: return NF_CPU_X86 ? "the CPU lacks AVX2/F16C" : "the CPU lacks AVX2 (an x86-64 level)";
    case NF_SIMD_AVX512:
        return NF_CPU_X86 ? "the CPU lacks AVX-512 F/BW/VL (or FMA)" : "the CPU lacks AVX-512 (an x86-64 level)";
    case NF_SIMD_NEON: return "the CPU lacks NEON (an aarch64 level)";
    default: return "no such level";
    }
}

/* Called after (or inside) init: no pthread_once here. */
static bool supported(nf_simd_level level)
{
    int r = nf_simd_rank(level);
    return r >= 0 && r <= nf_simd_rank(best_level);
}

/* Resolves a request against the CPU; records the reason of a fallback. */
static nf_simd_level resolve(nf_simd_level want, const char *asked_by)
{
    if (supported(want)) {
        reason[0] = '\0';
        return want;
    }
    snprintf(reason, sizeof reason, "%s: %s; using %s", asked_by, lacks(want), level_names[best_level]);
    return best_level;
}

/* NINFER_SIMD=L makes the process behave as on a CPU whose best level is L (when the CPU has
 * L): the kernels run at L and every level above it counts as unsupported, so a run on an
 * AVX-512 machine checks exactly what an AVX2-only user gets, variant tests skipping included. */
static void init(void)
{
    cpu_level = detect();
    cpu_sha = detect_sha();
    best_level = cpu_level;
    nf_simd_level level = best_level;
    reason[0] = '\0';
    const char *env = getenv("NINFER_SIMD");
    if (env && *env) {
        int found = -1;
        for (int i = 0; i < NF_SIMD_LEVEL_COUNT; i++)
            if (strcmp(env, level_names[i]) == 0) found = i;
        if (found < 0) {
            snprintf(reason, sizeof reason, "NINFER_SIMD=%.40s is not scalar, avx2, avx512 or neon; using %s", env,
                     level_names[best_level]);
        } else if (nf_simd_rank((nf_simd_level)found) >= 0 &&
                   nf_simd_rank((nf_simd_level)found) <= nf_simd_rank(cpu_level)) {
            best_level = (nf_simd_level)found;
            level = best_level;
        } else {
            char asked[64];
            snprintf(asked, sizeof asked, "NINFER_SIMD=%s", level_names[found]);
            level = resolve((nf_simd_level)found, asked);
        }
    }
    atomic_store_explicit(&active_level, (int)level, memory_order_release);
}

bool nf_simd_has_sha(void)
{
    pthread_once(&init_once, init);
    return cpu_sha;
}

nf_simd_level nf_simd_active(void)
{
    pthread_once(&init_once, init);
    return (nf_simd_level)atomic_load_explicit(&active_level, memory_order_acquire);
}

nf_simd_level nf_simd_cpu_level(void)
{
    pthread_once(&init_once, init);
    return cpu_level;
}

nf_simd_level nf_simd_best(void)
{
    pthread_once(&init_once, init);
    return best_level;
}

bool nf_simd_supported(nf_simd_level level)
{
    pthread_once(&init_once, init);
    return supported(level);
}

nf_simd_level nf_simd_force(nf_simd_level level)
{
    pthread_once(&init_once, init);
    nf_simd_level got = resolve(level, "nf_simd_force");
    atomic_store_explicit(&active_level, (int)got, memory_order_release);
    return got;
}

const char *nf_simd_level_name(nf_simd_level level)
{
    return (int)level >= 0 && level < NF_SIMD_LEVEL_COUNT ? level_names[level] : NULL;
}

const char *nf_simd_reason(void)
{
    pthread_once(&init_once, init);
    return reason;
}

const char *nf_simd_name(void) { return level_names[nf_simd_active()]; }
