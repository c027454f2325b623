/* The shared parts of ggml_quantize's block encoders (docs/methods.md "ggml_quantize"): ggml's
 * scalar primitives, which every encoder must use so that its bytes are ggml's, and the block
 * encoder type the row driver (ggml_quant.c) calls.  Block encoders of one family of types may
 * live in their own file (one family per file) and are declared here.
 *
 * Internal to the method module: included only by lib/src/method/ggml_quant.c, ggml_fit.c, the
 * files of a family's encoders (ggml_iq1.c, ggml_iq2.c, ggml_iq3.c, ggml_iq4.c) and their SIMD
 * kernels (method/simd/ggml_*). */
#ifndef NF_METHOD_GGML_ENCODERS_H
#define NF_METHOD_GGML_ENCODERS_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ninfer/format.h"

#define GQ_SUPER 256u      /* values of a k-quant super-block (ggml's QK_K) */
#define GQ_ZERO_EPS 1e-15f /* below this a group's largest magnitude counts as all zero */
#define GQ_SPAN 512u       /* values of the blocks a gq_blocks_fn encodes at once, at most */

/* ---------------------------------------------------------------- ggml's scalar primitives */

/* ggml's round-to-integer: add 1.5 * 2^23 and read the low mantissa bits.  For |f| < 2^22 it is
 * round to nearest, ties to even; beyond that it gives what the bits give, as ggml does (its
 * range assert is compiled out), so the bytes match for any input. */
static inline int gq_nearest(float f)
{
    float v = f + 12582912.0f;
    int32_t i;
    memcpy(&i, &v, sizeof i);
    return (i & 0x007FFFFF) - 0x00400000;
}

/* float -> int8 as x86-64 converts it (cvttss2si, then the low byte): truncation toward zero,
 * and 0 for NaN or a value outside int32 (the "integer indefinite" 0x80000000).  ggml's Q4_0 and
 * Q5_0 reference encoders convert with a plain cast; with a tiny scale the product can be
 * infinite, and the byte ggml then stores is this one. */
static inline int gq_trunc_i8(float f)
{
    int32_t i = (f > -2147483904.0f && f < 2147483648.0f) ? (int32_t)f : INT32_MIN;
    return (int8_t)(uint8_t)((uint32_t)i & 0xFFu);
}

static inline int gq_min(int a, int b) { return a < b ? a : b; }
static inline int gq_max(int a, int b) { return a > b ? a : b; }
static inline int gq_clamp(int v, int lo, int hi) { return gq_max(lo, gq_min(hi, v)); }

/* A binary16 field of a block, little-endian. */
static inline void gq_put_f16(uint8_t *p, float f)
{
    uint16_t h = nf_f32_to_f16(f);
    p[0] = (uint8_t)(h & 0xFFu);
    p[1] = (uint8_t)(h >> 8);
}

static inline float gq_get_f16(const uint8_t *p) { return nf_f16_to_f32((uint16_t)(p[0] | (unsigned)p[1] << 8)); }

static inline float gq_f(int v) { return (float)v; }

/* The point of list[0..n) nearest xval at scale by the weights w, for the i-quants' grid
 * searches: the least sum_i w_i (scale * (2 l_i + 1) - x_i)^2 over the dim levels l of a point
 * (levels + dim * index), the first one on a tie, as ggml's searches take it; its levels go to L.
 * -1 when no sum is below FLT_MAX (a NaN weight or an overflow: ggml aborts there). */
static inline int gq_grid_nearest(const uint8_t *levels, int dim, const uint16_t *list, unsigned n, const float *xval,
                                  const float *w, float scale, int8_t *L)
{
    float best_d2 = 3.40282347e38f;
    int best = -1;
    for (unsigned j = 0; j < n; j++) {
        const uint8_t *lv = levels + (size_t)dim * list[j];
        float d2 = 0.0f;
        for (int i = 0; i < dim; i++) {
            float q = gq_f(2 * lv[i] + 1);
            float diff = scale * q - xval[i];
            d2 += w[i] * diff * diff;
        }
        if (d2 < best_d2) {
            best_d2 = d2;
            best = list[j];
        }
    }
    if (best >= 0)
        for (int i = 0; i < dim; i++) L[i] = (int8_t)levels[(size_t)dim * (size_t)best + (size_t)i];
    return best;
}

/* One block encoder: encodes one block from x (its values), qw (its importance values, or NULL
 * for the path without an importance vector) and sigma2 (Q4_0 / Q5_0 with importance: the row's
 * mean square, which ggml computes over the whole row) into blk. */
typedef void (*gq_block_fn)(const float *x, const float *qw, float sigma2, uint8_t *blk);

/* What a block encoder that can fail reports. */
typedef enum gq_fail {
    GQ_OK,
    GQ_NO_MEMORY,     /* a table it needs (ggml_grid.h) could not be built */
    GQ_NEEDS_IMATRIX, /* the type is quantized only with an importance vector */
    GQ_GGML_ABORTS    /* ggml aborts on this block (its search ends off the grid or at a NaN scale) */
} gq_fail;

/* A block encoder that can fail, with the arguments of gq_block_fn. */
typedef gq_fail (*gq_block_try_fn)(const float *x, const float *qw, float sigma2, uint8_t *blk);

/* ---------------------------------------------------------------- shared searches (ggml_quant.c) */

/* ggml's make_qp_quants: non-negative codes in [0, nmax] into L and their scale. */
float nf_method_gq_fit_positive(int n, int nmax, const float *x, uint8_t *L, const float *qw);

/* ---------------------------------------------------------------- families in their own files */

/* ggml_iq3.c: IQ3_XXS (98 bytes) and IQ3_S (110 bytes); GQ_GGML_ABORTS when the weighted
 * distances of ggml's grid search overflow binary32 (ggml's iq3_find_best_neighbour finds no
 * point) or a group's scale is NaN. */
gq_fail nf_ggml_enc_iq3_xxs(const float *x, const float *qw, float sigma2, uint8_t *blk);
gq_fail nf_ggml_enc_iq3_s(const float *x, const float *qw, float sigma2, uint8_t *blk);

/* ggml_iq1.c: IQ1_S (importance vector required) and IQ1_M; GQ_GGML_ABORTS where ggml aborts
 * (an assertion, a grid search finding no point). */
gq_fail nf_ggml_enc_iq1_s(const float *x, const float *qw, float sigma2, uint8_t *blk);
gq_fail nf_ggml_enc_iq1_m(const float *x, const float *qw, float sigma2, uint8_t *blk);

/* ggml_iq2.c: IQ2_XXS, IQ2_XS (importance vector required) and IQ2_S. */
gq_fail nf_ggml_enc_iq2_xxs(const float *x, const float *qw, float sigma2, uint8_t *blk);
gq_fail nf_ggml_enc_iq2_xs(const float *x, const float *qw, float sigma2, uint8_t *blk);
gq_fail nf_ggml_enc_iq2_s(const float *x, const float *qw, float sigma2, uint8_t *blk);

/* Several blocks at once (optional, for a type whose searches run a block per vector lane): the
 * nblk consecutive blocks of x (and qw) into out, the same bytes as gq_block_fn on each. */
typedef void (*gq_blocks_fn)(const float *x, const float *qw, float sigma2, unsigned nblk, uint8_t *out);

/* The search kernels (method/simd/ggml_simd.h) of the nf_ggml_quantize_rows call running on this
 * thread, for a block encoder in another file that runs its searches a sub-block per lane; the
 * scalar table outside a call. */
struct nf_gq_kernels;
const struct nf_gq_kernels *nf_gq_kernels_current(void);

/* ---------------------------------------------------------------- ggml_fit.c */
/* The signed value of largest magnitude, the first one on a tie (every search starts from it). */
float nf_gq_extreme(const float *x, int n);
/* Codes l in [0, nmax] with a scale and a minimum, x ~ scale * l - the_min (ggml's
 * make_qkx2_quants; its make_qkx3_quants is the same computation for the non-NULL weights every
 * caller here passes): the codes of the full range, then nstep + 1 trial inverse scales
 * (rmin + rdelta * is + nmax) / (max - min), each refitted by weighted least squares and kept
 * when its error (absolute with use_mad, else squared) is strictly smaller.  n <= 32. */
float nf_gq_fit_min(int n, int nmax, const float *x, const float *w, uint8_t *L, float *the_min, float rmin,
                    float rdelta, int nstep, bool use_mad);
/* Q3_K's codes without an importance vector (ggml's make_q3_quants with do_rmse): the codes of
 * -nmax / max, then up to 5 sweeps that move single codes while the x^2-weighted fit improves.
 * L receives l + nmax, except that an all-zero group leaves L = 0 (as ggml does). */
float nf_gq_fit_q3(int n, int nmax, const float *x, int8_t *L);
/* Symmetric codes l in [-nmax, nmax) for n values, weighted least squares over 18 trial inverse
 * scales around -nmax / max (ggml's make_qx_quants, rmse_type 1).  L receives l + nmax; the
 * return is the scale.  Weights qw, or x^2 when NULL.  An all-zero group gives L = 0, scale 0. */
float nf_gq_fit_signed(int n, int nmax, const float *x, int8_t *L, const float *qw);

/* ---------------------------------------------------------------- ggml_iq4.c */
/* IQ4_NL, one block: d and 16 bytes of 4-bit indices. */
void nf_gq_enc_iq4_nl(const float *x, const float *qw, float sigma2, uint8_t *b);
/* IQ4_NL, several blocks: their scale searches through the kernels table, a block a lane. */
void nf_gq_enc_iq4_nl_blocks(const float *x, const float *qw, float sigma2, unsigned nblk, uint8_t *out);
/* IQ4_XS, 136 bytes: d, scales_h (u16: the high 2 bits of eight 6-bit scales), scales_l[4]
 * (their low nibbles), 128 bytes of indices.  d = -(the scale of largest magnitude) / 32; each
 * sub-block's scale is rounded to l in [-32, 31] and its indices chosen again from 1 / (d * l). */
void nf_gq_enc_iq4_xs(const float *x, const float *qw, float sigma2, uint8_t *b);
/* The scale of one 32-value sub-block (ggml's quantize_row_iq4_nl_impl, ntry 7, which
 * ggml_quantize_chunk uses with and without importance): indices of -max / -127, their weighted
 * least-squares scale, and 15 more trial inverse scales (t - 127) / max kept when the fit
 * improves.  L receives the first trial's indices; 0 for an all-zero sub-block (L untouched). */
float nf_gq_iq4_scale(const float *x, const float *w, uint8_t *L);

#endif
