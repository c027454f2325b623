/* Fast paths of ggml_quantize's scale searches (docs/methods.md "ggml_quantize"), internal.
 *
 * ggml_fit.c keeps the scalar reference of every search (nf_gq_fit_min, nf_gq_fit_signed,
 * nf_gq_fit_q3).  A k-quant super-block runs one search per sub-block, and the sub-blocks are
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
 * encoder reaches the table of the running call through nf_gq_kernels_current (ggml_encoders.h). */
#ifndef NF_METHOD_SIMD_GGML_SIMD_H
#define NF_METHOD_SIMD_GGML_SIMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cpu.h"

struct nf_gq3_grid;

/* The largest sub-block a search takes (ggml's k-quant and Q4_0 / Q5_0 blocks hold <= 32). */
#define NF_GQ_MAX_N 32

/* The types of the plain row path (plain_blocks) and the source words it reads. */
typedef enum nf_gq_plain { NF_GQ_PLAIN_Q4_0, NF_GQ_PLAIN_Q5_0, NF_GQ_PLAIN_Q8_0 } nf_gq_plain;
typedef enum nf_gq_words { NF_GQ_WORDS_F32, NF_GQ_WORDS_F16, NF_GQ_WORDS_BF16 } nf_gq_words;

typedef struct nf_gq_kernels {
    const char *name;
    /* gq_fit_min on nsub sub-blocks of n values each (x, w and L at stride n): scales[j] and
     * mins[j] (the minimum as gq_fit_min returns it, negated). */
    void (*fit_min)(int nsub, int n, int nmax, const float *x, const float *w, uint8_t *L, float *scales, float *mins,
                    float rmin, float rdelta, int nstep, bool use_mad);
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
    void (*requant)(int n, const float *x, float d, bool with_min, float dm, int lo, int hi, int offset, uint8_t *L);
    /* IQ3_XXS / IQ3_S (ggml_iq3.c): the nt (<= NF_GQ3_MAX_TRIALS) trials of one group of 32
     * magnitudes xval, one trial a lane.  Trial t rounds the values at inverse scale id[t] to
     * levels, moves each 4-value point off grid g to its nearest neighbour at scale[t] (weights
     * waux), and writes the level of value i to L[NF_GQ3_TRIAL_STRIDE i + t] (a value's trials
     * side by side, as the lanes hold them), whether point k (of 8) was on the grid to bit t
     * of on_grid[k] (a word a point, as the lanes' masks give it; the bits from nt up are 0),
     * and sum w x (2L + 1) and sum w (2L + 1)^2 to sumqx[t], sumq2[t].  False when a neighbour
     * search finds no point (ggml aborts). */
    bool (*iq3_trials)(const struct nf_gq3_grid *g, int nt, const float *id, const float *scale, const float *xval,
                       const float *waux, const float *w, int8_t *L, uint32_t *on_grid, float *sumqx, float *sumq2);
    /* IQ1_S (ggml_iq1.c): ggml's search of a group of 32 sorted values over every split i1 <= i2
     * into codes 0 / 1 / 2 and both delta signs (shift +1, then -1, for each split), by the prefix
     * sums sumx, sumw (33 each) of w x and w in sorted order: the kept split, its shift and
     * scale (s0, the group's largest magnitude, if none is kept).  False when none is. */
    bool (*iq1s_split)(const float *sumx, const float *sumw, float s0, int *b1, int *b2, int *shift, float *scale);
    /* IQ1_M (ggml_iq1.c): ggml's search of a group of 16 (x, w; idx their ascending order) over
     * every split i1 <= i2 and the 4 kinds (the delta sign of each half), each candidate's sums
     * taken afresh in sorted order: the kept split, kind and scale (s0 if none).  False when none
     * is kept. */
    bool (*iq1m_split)(const float *x, const float *w, const int *idx, float s0, int *b1, int *b2, int *kind,
                       float *scale);
    /* IQ1_S / IQ1_M (ggml_iq1.c): the point of list[0..n) (8 levels in {0, 1, 2} each, point p's
     * at levels + 8 p) of least sum_i w_i (scale xx[l_i] - x_i)^2, the first on a tie; -1 when no
     * sum is below FLT_MAX. */
    int (*iq1_nearest)(const uint8_t *levels, const uint16_t *list, unsigned n, const float *x, const float *w,
                       float scale, const float *xx);
    /* Q4_0, Q5_0 or Q8_0 without importance (gq_plain_blocks) straight from source words: nblk
     * blocks of 32 values at src (little-endian binary32, binary16 or bfloat16 words, any
     * alignment) to nblk packed blocks at out.  Returns the first block holding a value
     * gq_values_ok refuses or whose scale is not finite in binary16, nblk if none; the bytes of
     * that block and of those after it are unspecified. */
    size_t (*plain_blocks)(nf_gq_plain type, nf_gq_words words, size_t nblk, const void *src, uint8_t *out);
    /* ggml's importance weights of n values (a multiple of 32): w[j] = qw[j] * sqrt(s2 + x[j]^2),
     * each binary32 operation correctly rounded in that order (Q4_0 / Q5_0, gq_codes_x0_imp). */
    void (*sqrt_weights)(size_t n, const float *x, const float *qw, float s2, float *w);
    /* Q2_0 (gq_q2_0_plain, ggml_quant.c) for nblk blocks of 64: d[i] = the block's largest
     * magnitude and its 16 code bytes (clamp(trunc(roundf(x * (1 / d))) + 1, 0, 3), 4 a byte) to
     * q + 16 i. */
    void (*codes_q2_0)(unsigned nblk, const float *x, float *d, uint8_t *q);
    /* IQ1_S / IQ1_M (ggml_iq1.c): the order of n (16 or 32) values ascending, equal values in
     * column order, to idx. */
    void (*iq1_order)(const float *x, int n, int *idx);
} nf_gq_kernels;

/* The trials of IQ3_XXS (31), the most of either IQ3 type, and the stride of iq3_trials's levels
 * (room for 32: a vector store of the last lanes stays in the row). */
#define NF_GQ3_MAX_TRIALS 31
#define NF_GQ3_TRIAL_STRIDE 32u

/* The scalar references of the entries whose encoders live in their own files. */
bool nf_gq3_trials_ref(const struct nf_gq3_grid *g, int nt, const float *id, const float *scale, const float *xval,
                       const float *waux, const float *w, int8_t *L, uint32_t *on_grid, float *sumqx, float *sumq2);
bool nf_gq1s_split_ref(const float *sumx, const float *sumw, float s0, int *b1, int *b2, int *shift, float *scale);
bool nf_gq1m_split_ref(const float *x, const float *w, const int *idx, float s0, int *b1, int *b2, int *kind,
                       float *scale);
int nf_gq1_nearest_ref(const uint8_t *levels, const uint16_t *list, unsigned n, const float *x, const float *w,
                       float scale, const float *xx);
void nf_gq1_order_ref(const float *x, int n, int *idx);
/* The vector kernels of those entries (simd/ggml_iq*_avx2.c, _avx512.c; _neon.c below). */
#if NF_X86_KERNELS
bool nf_gq3_trials_avx2(const struct nf_gq3_grid *g, int nt, const float *id, const float *scale, const float *xval,
                        const float *waux, const float *w, int8_t *L, uint32_t *on_grid, float *sumqx, float *sumq2);
bool nf_gq3_trials_avx512(const struct nf_gq3_grid *g, int nt, const float *id, const float *scale, const float *xval,
                          const float *waux, const float *w, int8_t *L, uint32_t *on_grid, float *sumqx, float *sumq2);
bool nf_gq1s_split_avx2(const float *sumx, const float *sumw, float s0, int *b1, int *b2, int *shift, float *scale);
bool nf_gq1s_split_avx512(const float *sumx, const float *sumw, float s0, int *b1, int *b2, int *shift, float *scale);
bool nf_gq1m_split_avx2(const float *x, const float *w, const int *idx, float s0, int *b1, int *b2, int *kind,
                        float *scale);
bool nf_gq1m_split_avx512(const float *x, const float *w, const int *idx, float s0, int *b1, int *b2, int *kind,
                          float *scale);
int nf_gq1_nearest_avx2(const uint8_t *levels, const uint16_t *list, unsigned n, const float *x, const float *w,
                        float scale, const float *xx);
void nf_gq1_order_avx2(const float *x, int n, int *idx);
void nf_gq1_order_avx512(const float *x, int n, int *idx);
void nf_gq_codes_q2_0_avx2(unsigned nblk, const float *x, float *d, uint8_t *q);
void nf_gq_codes_q2_0_avx512(unsigned nblk, const float *x, float *d, uint8_t *q);
int nf_gq1_nearest_avx512(const uint8_t *levels, const uint16_t *list, unsigned n, const float *x, const float *w,
                          float scale, const float *xx);
#endif

extern const nf_gq_kernels nf_gq_kernels_scalar;
#if NF_X86_KERNELS
extern const nf_gq_kernels nf_gq_kernels_avx2;
extern const nf_gq_kernels nf_gq_kernels_avx512;
#endif
#if NF_ARM_KERNELS
extern const nf_gq_kernels nf_gq_kernels_neon; /* simd/ggml_neon.c */
bool nf_gq3_trials_neon(const struct nf_gq3_grid *g, int nt, const float *id, const float *scale, const float *xval,
                        const float *waux, const float *w, int8_t *L, uint32_t *on_grid, float *sumqx, float *sumq2);
bool nf_gq1s_split_neon(const float *sumx, const float *sumw, float s0, int *b1, int *b2, int *shift, float *scale);
bool nf_gq1m_split_neon(const float *x, const float *w, const int *idx, float s0, int *b1, int *b2, int *kind,
                        float *scale);
int nf_gq1_nearest_neon(const uint8_t *levels, const uint16_t *list, unsigned n, const float *x, const float *w,
                        float scale, const float *xx);
void nf_gq1_order_neon(const float *x, int n, int *idx);
#endif

const nf_gq_kernels *nf_gq_kernels_for(nf_simd_level level);
const nf_gq_kernels *nf_gq_kernels_active(void);

#endif
