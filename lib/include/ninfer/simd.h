/* ninfer/simd.h - which kernel variant the library runs. */
#ifndef NINFER_SIMD_H
#define NINFER_SIMD_H

#include <ninfer/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The kernel variant the encoders, decoders and checks run: "scalar", "avx2" or "avx512" on
 * x86-64, "scalar" or "neon" on aarch64 (every variant gives the same words and values bit for
 * bit).  Chosen once from the CPU's features; the environment variable NINFER_SIMD (scalar |
 * avx2 | avx512 | neon) asks for another, the best supported one standing in for a variant the
 * CPU lacks. */
NF_API const char *nf_simd_name(void);

#ifdef __cplusplus
}
#endif
#endif
