/* SIMD row kernels of grouped_absmax (docs/formats.md 5.5, docs/methods.md, grouped_absmax), internal.
 *
 * A kernel encodes one whole source row of K elements (F32, F16 or BF16 little-endian bytes at
 * any alignment) into K codes and ceil(K/G) scale words, and gives exactly the words of the
 * scalar reference in grouped.c:
 *   - the elements widen exactly to binary32 (BF16 by a shift, binary16 by F16C's VCVTPH2PS,
 *     which is exact for every finite value, subnormals included);
 *   - amax is the largest |x| word, an integer max over the sign-cleared binary32 words (so -0
 *     counts as 0, and a word >= 0x7F800000 means a non-finite element);
 *   - the scale words and reciprocals of 8 or 16 groups are computed at once, lane-wise, by
 *     the reference's operations (nf_absmax_simd_scale below spells them out in scalar code):
 *     VDIVPS is the correctly rounded binary32 quotient, VCVTPS2PH with imm8 = 0 the binary16
 *     rounding to nearest even (subnormals and the overflow to infinity included, as
 *     nf_f32_to_f16), VCVTPH2PS exact (the divisions, like the reference's, need the default
 *     floating-point environment of ninfer/method.h: no flush-to-zero, no denormals-are-zero);
 *   - code = clamp(x * inv) then round to nearest even: a lone binary32 multiply (no FMA),
 *     max/min against qmin/qmax (the product is never NaN: x and inv are finite), and the
 *     rounding: VROUNDPS with imm8 = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC (AVX2), which
 *     is IEEE roundToIntegralTiesToEven whatever MXCSR says, or the reference's own addition of
 *     1.5 * 2^23 (AVX-512, see absmax_avx512.c: the sum's word holds the code in its low byte).
 *     The clamped value lies in [-128, 127], so its integral value converts to int32 and
 *     narrows to int8 exactly.
 *     Clamping before rounding gives the reference's integer (rounding is monotonic and keeps
 *     the integers qmin and qmax fixed), and the reference clamps first too.
 *
 * A kernel returns false, leaving the row's words unspecified, when the row holds a non-finite
 * element or a group whose scale overflows binary16: the caller then runs the scalar reference on
 * that row, which refuses it with the reference's message. */
#ifndef NINFER_METHOD_ABSMAX_SIMD_H
#define NINFER_METHOD_ABSMAX_SIMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <ninfer/format.h>
#include <ninfer/method.h>

#include "common/cpu.h"
#include "common/simd_target.h"
#include "stats/stats.h"

/* What a kernel needs to know of the format. */
typedef struct nf_absmax_shape {
    size_t group;      /* G, 1..NF_METHOD_MAX_GROUP */
    float qmin, qmax;  /* clamp interval */
    float denominator; /* encoder qmax: 7 / 15 / 31 / 127 */
} nf_absmax_shape;

/* row: K elements of type F32, F16 or BF16; codes: K bytes; scales: ceil(K/G) words.
 *
 * With st != NULL the kernel also measures what it encodes (stats/stats.h: each value against
 * f16(scale) * code, the value its words represent) while the values and their codes are in
 * registers, and adds the figures of whole statistics blocks to st as it finishes them:
 * *measured receives the columns [0, *measured) whose figures it added (a multiple of
 * NF_STATS_BLOCK, or K when the row is done; 0 when it cannot measure this shape).  A kernel
 * that declines a row has added the blocks before the declined part only, so the caller can
 * measure the rest of the row from column *measured with the stats kernels, in the same
 * blocks. */
typedef bool (*nf_absmax_row_fn)(const uint8_t *row, nf_src_type type, size_t k, const nf_absmax_shape *shape,
                                 int8_t *codes, uint16_t *scales, nf_errstats *st, size_t *measured);

/* The kernels table of grouped_absmax (common/cpu.h: one dispatch structure).  The scalar
 * level's row declines every row (*measured = 0): grouped.c's loop, the reference, then encodes
 * and measures it, as it does for the rows a vector kernel declines. */
typedef struct nf_absmax_kernels {
    const char *name;
    nf_absmax_row_fn row;
} nf_absmax_kernels;

extern const nf_absmax_kernels nf_absmax_kernels_scalar;
#if NF_X86_KERNELS
extern const nf_absmax_kernels nf_absmax_kernels_avx2;
extern const nf_absmax_kernels nf_absmax_kernels_avx512;
#endif
#if NF_ARM_KERNELS
extern const nf_absmax_kernels nf_absmax_kernels_neon;
#endif

/* The kernels of a level and of the active one (common/cpu.h); never NULL. */
const nf_absmax_kernels *nf_absmax_kernels_for(nf_simd_level level);
const nf_absmax_kernels *nf_absmax_kernels_active(void);

/* The statistics' name of a floating-point source type. */
static inline nf_stats_source nf_absmax_stats_source(nf_src_type t)
{
    return t == NF_SRC_F32 ? NF_STATS_F32 : t == NF_SRC_F16 ? NF_STATS_F16 : NF_STATS_BF16;
}

/* The scale of a group whose amax word m satisfies 0 < m < 0x7F800000, exactly as grouped.c's
 * absmax_scale and select_codes compute it (the kernels' lane-wise steps, in scalar form; the
 * tests use it as the kernels' reference): word = f16(f32(amax / qmax)), 0x0001 when that is 0;
 * false when it is infinite; inv = f32(1 / f32(word)). */
static inline bool nf_absmax_simd_scale(uint32_t m, float denominator, uint16_t *word, float *inv)
{
    float amax;
    memcpy(&amax, &m, sizeof amax);
    float raw = amax / denominator;
    uint16_t w = nf_f32_to_f16(raw);
    if (w == 0) w = 0x0001u;
    if ((w & 0x7C00u) == 0x7C00u) return false;
    *word = w;
    *inv = 1.0f / nf_f16_to_f32(w);
    return true;
}

#endif
