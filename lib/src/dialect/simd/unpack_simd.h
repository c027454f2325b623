/* Kernels of the packed dialects' values (qweight_packed.c, qweight_values.c; docs/dialects.md
 * "GPTQ and AWQ", "MXFP4"), internal.  GPTQ's and AWQ's write binary32 values (q - z) * s of
 * unsigned codes q taken from little-endian 32-bit words, with z a zero point and s a scale
 * shared by the run: the integer q - z converted exactly (|q - z| <= 2^8) and one binary32
 * multiplication (no FMA); MXFP4's a table value times the block's scale, one multiplication.
 * So every level gives the scalar reference's bits (tests/unit/test_dialect_unpack_simd.c checks
 * every code, zero point and a spread of scales at each level the CPU has).
 *   packed_run  GPTQ along a row: word w (words[w * stride]: GPTQ's word rows lie across the
 *               value rows) holds the 32/b codes of values w * 32/b .. (w + 1) * 32/b - 1, code
 *               i at bits b*i .. b*i + b - 1 (b = 2, 4 or 8):
 *               out[w * 32/b + i] = ((words[w * stride] >> b*i) & (2^b - 1)) - z) * s, w < nwords;
 *   nibble_run  AWQ GEMM's nibble `shift / 4` of n consecutive words:
 *               out[t] = (((words[t] >> shift) & 15) - z) * s, t < n;
 *   e2m1_run    MXFP4's code bytes, the low nibble first (docs/dialects.md "MXFP4"), each code's
 *               value from table (16 binary32 values) times the block's scale s, one binary32
 *               multiplication: out[2i] = table[bytes[i] & 15] * s, out[2i + 1] =
 *               table[bytes[i] >> 4] * s, i < nbytes. */
#ifndef NINFER_DIALECT_UNPACK_SIMD_H
#define NINFER_DIALECT_UNPACK_SIMD_H

#include <stddef.h>
#include <stdint.h>

#include "common/cpu.h"
#include "common/simd_target.h"

typedef struct nf_dialect_unpack_kernels {
    const char *name;
    void (*packed_run)(const uint32_t *words, size_t stride, size_t nwords, unsigned bits, int32_t z, float s,
                       float *out);
    void (*nibble_run)(const uint32_t *words, size_t n, unsigned shift, int32_t z, float s, float *out);
    void (*e2m1_run)(const uint8_t *bytes, size_t nbytes, const float *table, float s, float *out);
} nf_dialect_unpack_kernels;

extern const nf_dialect_unpack_kernels nf_dialect_unpack_kernels_scalar;
#if NF_X86_KERNELS
extern const nf_dialect_unpack_kernels nf_dialect_unpack_kernels_avx2;
extern const nf_dialect_unpack_kernels nf_dialect_unpack_kernels_avx512;
#endif
#if NF_ARM_KERNELS
extern const nf_dialect_unpack_kernels nf_dialect_unpack_kernels_neon;
#endif

/* The kernels of a level and of the active one (common/cpu.h); never NULL. */
const nf_dialect_unpack_kernels *nf_dialect_unpack_kernels_for(nf_simd_level level);
const nf_dialect_unpack_kernels *nf_dialect_unpack_kernels_active(void);

/* The scalar kernels, also the SIMD ones' tails. */
void nf_dialect_unpack_packed_run_scalar(const uint32_t *words, size_t stride, size_t nwords, unsigned bits, int32_t z,
                                         float s, float *out);
void nf_dialect_unpack_nibble_run_scalar(const uint32_t *words, size_t n, unsigned shift, int32_t z, float s,
                                         float *out);
void nf_dialect_unpack_e2m1_run_scalar(const uint8_t *bytes, size_t nbytes, const float *table, float s, float *out);

#endif
