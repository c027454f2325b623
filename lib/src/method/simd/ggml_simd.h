/* Fast paths of ggml_quantize's scale searches (docs/methods.md "ggml_quantize"), internal.
 *
 * ggml_quant.c keeps the scalar reference of every search (gq_fit_min, gq_fit_signed,
 * gq_fit_q3).  A k-quant super-block runs one search per sub-block, and the sub-blocks are
 * independent, so the vector kernels give each sub-block a lane: the lanes are transposed
 * (element i of every sub-block in one vector) and every lane performs exactly the scalar
 * sequence of its sub-block -- the same binary32 operations in the same order (sums in element
 * order, never reassociated; divisions as written; no FMA, the build has -ffp-contract=off;
 * ggml's rounding by 1.5 * 2^23), with the scalar branches as per-lane selects.  So every lane
 * ends with the reference's codes, scale and minimum bit for bit, whatever the input;
 * tests/unit/test_method_ggml_quant_simd.c compares the bytes of every level with the scalar
 * ones.
 *
 * The table also holds the loops around the searches that are worth a vector: the whole row path of
 * Q4_0, Q5_0 and Q8_0 without importance (no search: source words to packed blocks in one pass)
 * and the final codes of the k-quants from their stored scales.
 *
 * The table follows common/cpu.h: a search with no vector kernel (a type's encoder that does
 * not call these entries, such as an encoder added in its own file) simply runs scalar; such an
 * encoder reaches the table of the running call through nf_gq_kernels_current (ggml_quant.h). */
#ifndef NF_METHOD_SIMD_GGML_SIMD_H
#define NF_METHOD_SIMD_GGML_SIMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cpu.h"

/* The largest sub-block a search takes (ggml's k-quant and Q4_0 / Q5_0 blocks hold <= 32). */
#define NF_GQ_MAX_N 32

/* The types of the plain row path (plain_blocks) and the source words it reads. */
typedef enum nf_gq_plain { NF_GQ_PLAIN_Q4_0, NF_GQ_PLAIN_Q5_0, NF_GQ_PLAIN_Q8_0 } nf_gq_plain;
typedef enum nf_gq_words { NF_GQ_WORDS_F32, NF_GQ_WORDS_F16, NF_GQ_WORDS_BF16 } nf_gq_words;

typedef struct nf_gq_kernels {
    const char *name;
    /* gq_fit_min on nsub sub-blocks of n values each (x, w and L at stride n): scales[j] and
     * mins[j] (the minimum as gq_fit_min returns it, negated). */
    void (*fit_min)(int nsub, int n, int nmax, const float *x, const float *w, uint8_t *L, float *scales,
                    float *mins, float rmin, float rdelta, int nstep, bool use_mad);
    /* gq_fit_signed on nsub sub-blocks of n values (qw NULL: weights x^2). */
    void (*fit_signed)(int nsub, int n, int nmax, const float *x, const float *qw, int8_t *L, float *scales);
    /* gq_fit_q3 on nsub sub-blocks of n values. */
    void (*fit_q3)(int nsub, int n, int nmax, const float *x, int8_t *L, float *scales);
    /* gq_iq4_scale's scale of nsub sub-blocks of 32 values (x and w at stride 32) over the
     * ascending table of 16 values. */
    void (*iq4_scales)(int nsub, const float *x, const float *w, const int8_t *values, float *scales);
    /* The final codes of n values (a multiple of 16) from their stored scale: without a minimum
     * (signed) L[i] = clamp(nearest(x[i] / d), lo, hi) + offset, with one (dm, Q2_K / Q4_K /
     * Q5_K) L[i] = clamp(nearest((x[i] + dm) / d), lo, hi) + offset. */
    void (*requant)(int n, const float *x, float d, bool with_min, float dm, int lo, int hi, int offset,
                    uint8_t *L);
    /* Q4_0, Q5_0 or Q8_0 without importance (gq_plain_blocks) straight from source words: nblk
     * blocks of 32 values at src (little-endian binary32, binary16 or bfloat16 words, any
     * alignment) to nblk packed blocks at out.  Returns the first block holding a value
     * gq_values_ok refuses or whose scale is not finite in binary16, nblk if none; the bytes of
     * that block and of those after it are unspecified. */
    size_t (*plain_blocks)(nf_gq_plain type, nf_gq_words words, size_t nblk, const void *src, uint8_t *out);
    /* ggml's importance weights of n values (a multiple of 32): w[j] = qw[j] * sqrt(s2 + x[j]^2),
     * each binary32 operation correctly rounded in that order (Q4_0 / Q5_0, gq_codes_x0_imp). */
    void (*sqrt_weights)(size_t n, const float *x, const float *qw, float s2, float *w);
} nf_gq_kernels;

extern const nf_gq_kernels nf_gq_kernels_scalar;
#if NF_X86_KERNELS
extern const nf_gq_kernels nf_gq_kernels_avx2;
extern const nf_gq_kernels nf_gq_kernels_avx512;
#endif

const nf_gq_kernels *nf_gq_kernels_for(nf_simd_level level);
const nf_gq_kernels *nf_gq_kernels_active(void);

#endif
