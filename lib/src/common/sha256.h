/* SHA-256 (FIPS 180-4), for the digests of method programs' files (docs/method-programs.md 5)
 * and of the sources' files (docs/provenance.md): the figure `sha256sum` prints, so a user can
 * check what the provenance records.  The compression of whole blocks goes through one kernels
 * table per SIMD level (common/cpu.h): portable C, the reference, x86's SHA extensions and
 * aarch64's SHA-256 instructions where the CPU has them, the same digests bit for bit. */
#ifndef NINFER_COMMON_SHA256_H
#define NINFER_COMMON_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "common/cpu.h"

typedef struct nf_sha256 {
    uint32_t h[8];
    uint64_t bytes;    /* hashed so far */
    uint8_t block[64]; /* the partial block */
    size_t used;
} nf_sha256;

/* FIPS 180-4 4.2.2's round constants (every kernel's). */
extern const uint32_t nf_sha256_k[64];

/* Compresses n consecutive 64-byte blocks of p into the state h. */
typedef struct nf_sha256_kernels {
    const char *name;
    void (*blocks)(uint32_t h[8], const uint8_t *p, size_t n);
} nf_sha256_kernels;

extern const nf_sha256_kernels nf_sha256_kernels_scalar;
#if NF_X86_KERNELS
extern const nf_sha256_kernels nf_sha256_kernels_shani; /* common/sha256_shani.c */
#endif
#if NF_ARM_KERNELS
extern const nf_sha256_kernels nf_sha256_kernels_armv8; /* common/simd/sha256_armv8.c */
#endif
/* The table of a level: scalar for NF_SIMD_SCALAR; for avx2 and avx512 SHA-NI ("sha-ni"), for
 * neon the ARMv8 instructions ("armv8-sha2"), when the CPU has them (nf_simd_has_sha), scalar
 * otherwise.  Never NULL. */
const nf_sha256_kernels *nf_sha256_kernels_for(nf_simd_level level);
const nf_sha256_kernels *nf_sha256_kernels_active(void);

void nf_sha256_init(nf_sha256 *s);
void nf_sha256_update(nf_sha256 *s, const void *data, size_t len);
void nf_sha256_final(nf_sha256 *s, uint8_t out[32]);

#endif
