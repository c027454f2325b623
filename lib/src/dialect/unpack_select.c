/* Packed dialect kernels (simd/unpack_simd.h): the scalar instance, the reference the
 * SIMD levels are tested against, written from docs/dialects.md "GPTQ and AWQ" and "MXFP4", and
 * the selector. */
#include "dialect/simd/unpack_simd.h"

void nf_dialect_unpack_packed_run_scalar(const uint32_t *words, size_t stride, size_t nwords, unsigned bits, int32_t z,
                                         float s, float *out)
{
    const unsigned per = 32 / bits;
    const uint32_t mask = (1u << bits) - 1;
    for (size_t w = 0; w < nwords; w++)
        for (unsigned i = 0; i < per; i++)
            out[w * per + i] = (float)((int32_t)((words[w * stride] >> (bits * i)) & mask) - z) * s;
}

void nf_dialect_unpack_nibble_run_scalar(const uint32_t *words, size_t n, unsigned shift, int32_t z, float s,
                                         float *out)
{
    for (size_t t = 0; t < n; t++) out[t] = (float)((int32_t)((words[t] >> shift) & 15) - z) * s;
}

void nf_dialect_unpack_e2m1_run_scalar(const uint8_t *bytes, size_t nbytes, const float *table, float s, float *out)
{
    for (size_t i = 0; i < nbytes; i++) {
        out[2 * i] = table[bytes[i] & 15] * s;
        out[2 * i + 1] = table[bytes[i] >> 4] * s;
    }
}

const nf_dialect_unpack_kernels nf_dialect_unpack_kernels_scalar = {.name = "scalar",
                                                                    .packed_run = nf_dialect_unpack_packed_run_scalar,
                                                                    .nibble_run = nf_dialect_unpack_nibble_run_scalar,
                                                                    .e2m1_run = nf_dialect_unpack_e2m1_run_scalar};

NF_SIMD_SELECTOR(nf_dialect_unpack_kernels, nf_dialect_unpack_kernels, nf_dialect_unpack_kernels_scalar,
                 nf_dialect_unpack_kernels_avx2, nf_dialect_unpack_kernels_avx512, nf_dialect_unpack_kernels_neon)
