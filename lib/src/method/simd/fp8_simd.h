/* Row kernels of fp8_row_maxabs (docs/methods.md, fp8_row_maxabs, docs/formats.md 7.3
 * producer"), internal.
 *
 * A kernel encodes one whole source row of K elements (F32, F16 or BF16 little-endian bytes at
 * any alignment) into K E4M3FN codes and the row's scale word, and gives exactly the words of the
 * reference in fp8_row_maxabs.c (nf_fp8_row_reference):
 *   - pass 1 is an integer max over the sign-cleared source words in their own width (BF16 and
 *     binary16 words order like their magnitudes, binary32 too).  A word at or above the
 *     infinity word means a non-finite element.  Rounding to BF16 is monotonic, so the row
 *     maximum of the rounded values is the rounded maximum: one rounding per row, and a rounded
 *     maximum at the infinity word is the reference's "overflows bfloat16";
 *   - the scale word and reciprocal come from nf_fp8_row_setup below (the reference's steps);
 *   - pass 2 rounds each element to BF16 (binary32 sources: the reference's formula
 *     (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000, binary16 widened exactly first), takes
 *     the lone binary32 product v = x * inv (no FMA), and encodes v with nf_fp8_e4m3fn_of below,
 *     which is nf_f32_to_e4m3fn for every finite v.  No product can be non-finite once
 *     f32(m * inv) is finite: |x| <= m and rounding is monotonic.
 * A kernel returns false, leaving the row's words unspecified, when the row holds a non-finite
 * element, a value that overflows BF16, a binary16 scale that overflows or a reciprocal too
 * large for its row: the caller then runs the reference on that row, which refuses it with the
 * reference's message. */
#ifndef NINFER_METHOD_FP8_SIMD_H
#define NINFER_METHOD_FP8_SIMD_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <ninfer/format.h>
#include <ninfer/method.h>

#include "common/cpu.h"
#include "common/simd_target.h"

/* row: K elements of type F32, F16 or BF16; codes: K bytes; *scale: the row's word.  fp16_scale
 * selects fp8_e4m3fn_row_fp16's binary16 scale (else BF16). */
typedef bool (*nf_fp8_row_fn)(const uint8_t *row, nf_src_type type, size_t k, bool fp16_scale, uint8_t *codes,
                              uint16_t *scale);

/* The kernels table of fp8_row_maxabs (common/cpu.h: one dispatch structure).  The scalar
 * level's row is the portable fast kernel (fp8_select.c); on a big-endian host it declines every
 * row, and the reference encodes them. */
typedef struct nf_fp8_kernels {
    const char *name;
    nf_fp8_row_fn row;
} nf_fp8_kernels;

extern const nf_fp8_kernels nf_fp8_kernels_scalar;
#if NF_X86_KERNELS
extern const nf_fp8_kernels nf_fp8_kernels_avx2;
extern const nf_fp8_kernels nf_fp8_kernels_avx512;
#endif
#if NF_ARM_KERNELS
extern const nf_fp8_kernels nf_fp8_kernels_neon;
#endif

/* The kernels of a level and of the active one (common/cpu.h); never NULL. */
const nf_fp8_kernels *nf_fp8_kernels_for(nf_simd_level level);
const nf_fp8_kernels *nf_fp8_kernels_active(void);

/* The reference (today's fp8_row_maxabs.c loop, kept for the tests and for every row a kernel
 * declines): the same contract as nf_fp8_row_maxabs_rows, without kernels. */
nf_status nf_fp8_row_maxabs_rows_reference(const nf_format *fmt, const nf_src_rows *src, nf_words *out, nf_error *err);

#define NF_FP8_E4M3_MAX_BITS 0x43E00000u    /* 448.0f */
#define NF_FP8_E4M3_NORMAL_BITS 0x3C800000u /* 2^-6, the smallest normal E4M3FN value */
#define NF_FP8_SUB_MAGIC 16384.0f           /* 2^14: its binary32 spacing is 2^-9, E4M3FN's subnormal step */
#define NF_FP8_SUB_MAGIC_BITS 0x46800000u

/* E4M3FN code of a finite binary32 word vb, exactly nf_f32_to_e4m3fn: clamp the magnitude to 448
 * (an integer min: the words of non-negative floats order like their values); at or above 2^-6
 * rebias the exponent (by 120) and round 20 fraction bits away to nearest even; below it the code
 * is round(|v| * 2^9) to nearest even, which adding 2^14 does (the sum's spacing is 2^-9, the
 * default rounding mode is nearest even) — codes 0..8, and 8 continues the normal grid.  The sign
 * is v's. */
static inline uint8_t nf_fp8_e4m3fn_of(uint32_t vb)
{
    uint32_t a = vb & 0x7FFFFFFFu;
    a = a < NF_FP8_E4M3_MAX_BITS ? a : NF_FP8_E4M3_MAX_BITS;
    uint32_t normal = (a - (120u << 23) + 0x7FFFFu + ((a >> 20) & 1u)) >> 20;
    float af, sum;
    memcpy(&af, &a, sizeof af);
    sum = af + NF_FP8_SUB_MAGIC;
    uint32_t sb;
    memcpy(&sb, &sum, sizeof sb);
    uint32_t sub = sb - NF_FP8_SUB_MAGIC_BITS;
    /* all ones below 2^-6: a mask rather than a branch, so that loops over it vectorize */
    uint32_t small = 0u - (uint32_t)(a < NF_FP8_E4M3_NORMAL_BITS);
    uint32_t code = (sub & small) | (normal & ~small);
    return (uint8_t)(code | ((vb >> 24) & 0x80u));
}

/* BF16 rounding of a binary32 word (docs/methods.md, fp8_row_maxabs formula; for finite values
 * nf_f32_to_bf16 << 16). */
static inline uint32_t nf_fp8_round_bf16_bits(uint32_t b) { return (b + 0x7FFFu + ((b >> 16) & 1u)) & 0xFFFF0000u; }

/* The row's scale from mw, the largest magnitude word of the BF16-rounded row (a finite binary32
 * word): 0 for a zero row (*word 0x0000), 1 when *word and *inv are set, -1 when the reference
 * would refuse the row (binary16 scale overflow, or f32(m * inv) not finite). */
static inline int nf_fp8_row_setup(uint32_t mw, bool fp16_scale, uint16_t *word, float *inv)
{
    if (mw == 0) {
        *word = 0;
        return 0;
    }
    float m;
    memcpy(&m, &mw, sizeof m);
    float raw = m / 448.0f;
    uint16_t w;
    float s;
    if (fp16_scale) {
        w = nf_f32_to_f16(raw);
        if ((w & 0x7C00u) == 0x7C00u) return -1;
        if (w == 0) w = 0x0001;
        s = nf_f16_to_f32(w);
    } else {
        w = nf_f32_to_bf16(raw);
        if (w == 0) w = 0x0001;
        s = nf_bf16_to_f32(w);
    }
    float r = 1.0f / s;
    if (!isfinite(m * r)) return -1;
    *word = w;
    *inv = r;
    return 1;
}

/* mw of a row from its largest sign-cleared source word (pass 1), or false when the row holds a
 * non-finite element or a value that overflows BF16. */
static inline bool nf_fp8_row_max(nf_src_type type, uint32_t max_word, uint32_t *mw)
{
    uint32_t m;
    if (type == NF_SRC_BF16) {
        if (max_word >= 0x7F80u) return false;
        m = max_word << 16;
    } else if (type == NF_SRC_F16) {
        if (max_word >= 0x7C00u) return false;
        float f = nf_f16_to_f32((uint16_t)max_word);
        uint32_t b;
        memcpy(&b, &f, sizeof b);
        m = nf_fp8_round_bf16_bits(b);
    } else {
        if (max_word >= 0x7F800000u) return false;
        m = nf_fp8_round_bf16_bits(max_word);
        if (m >= 0x7F800000u) return false;
    }
    *mw = m;
    return true;
}

#endif
