/* Group kernels of nvfp4_quantize (docs/methods.md, nvfp4_quantize; docs/formats.md 6),
 * internal.
 *
 * A kernel encodes whole groups of 16 source elements (F32, F16 or BF16 little-endian bytes at
 * any alignment, widened exactly to binary32) into one E4M3FN scale word and 16 E2M1 words each,
 * and gives exactly the words of the reference in nvfp4_quantize.c (nf_nvfp4_quantize_rows_reference):
 *   - the group's largest magnitude is an integer max over the sign-cleared binary32 words
 *     (finite words order like their magnitudes; an infinity or NaN word is at least
 *     0x7F800000);
 *   - the scale word and the group's multiplier come from nf_nvfp4_scale_of below (the
 *     reference's steps, with fp8_simd.h's exact E4M3FN encoder);
 *   - each code is the E2M1 word of y = x / sv (one binary32 division, never a reciprocal
 *     multiply): its magnitude counts the E2M1 rounding boundaries y passes, > at the boundaries
 *     that round down to an even code (0.25, 1.25, 2.5, 5) and >= at those that round up to one
 *     (0.75, 1.75, 3.5), which is nearest with ties to even and saturates at 6; bit 3 is y < 0.
 * A kernel returns false, its words unspecified, when a group holds a non-finite element: the
 * caller then runs the reference, which refuses it with the reference's message. */
#ifndef NINFER_METHOD_NVFP4_SIMD_H
#define NINFER_METHOD_NVFP4_SIMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <ninfer/format.h>
#include <ninfer/method.h>

#include "common/cpu.h"
#include "common/simd_target.h"
#include "method/simd/fp8_simd.h"

#define NF_NVFP4_GROUP 16u
#define NF_NVFP4_SCALE_MIN 0x1p-9f /* ModelOpt's clamp: E4M3FN's smallest subnormal */

/* The matrix-wide numbers of nvfp4_quantize (docs/methods.md): gs = f32(m / 2688) (ModelOpt's
 * weight_scale_2), six_gs = f32(6 * gs), and the stored divisor word f32(1 / gs). */
typedef struct nf_nvfp4_global {
    float gs, six_gs;
    uint32_t divisor;
} nf_nvfp4_global;

/* The global numbers of a matrix whose largest magnitude word is mw (finite); false when the
 * divisor would not be a finite binary32 (m > 0 but gs underflows or 1 / gs overflows).  An
 * all-zero matrix has none in ModelOpt (its 0 / 0 is NaN): it takes gs = d = 1. */
static inline bool nf_nvfp4_global_of(uint32_t mw, nf_nvfp4_global *g)
{
    if (mw == 0) {
        *g = (nf_nvfp4_global){1.0f, 6.0f, 0x3F800000u};
        return true;
    }
    float m;
    memcpy(&m, &mw, sizeof m);
    float gs = m / 2688.0f; /* 6 * 448 */
    if (gs == 0.0f) return false;
    float d = 1.0f / gs;
    uint32_t db;
    memcpy(&db, &d, sizeof db);
    if (db >= 0x7F800000u) return false;
    *g = (nf_nvfp4_global){gs, 6.0f * gs, db};
    return true;
}

/* Scale word of a group whose largest magnitude word is bw, and its multiplier *sv =
 * f32(e4m3(word) * gs): s = f32(bmax / six_gs), 0 -> 1, at least 2^-9, E4M3FN nearest even
 * (nf_fp8_e4m3fn_of, which clamps to 448; s is positive). */
static inline uint8_t nf_nvfp4_scale_of(uint32_t bw, const nf_nvfp4_global *g, float *sv)
{
    float bmax;
    memcpy(&bmax, &bw, sizeof bmax);
    float s = bmax / g->six_gs;
    s = s == 0.0f ? 1.0f : s;
    s = s < NF_NVFP4_SCALE_MIN ? NF_NVFP4_SCALE_MIN : s;
    uint32_t sb;
    memcpy(&sb, &s, sizeof sb);
    uint8_t e = nf_fp8_e4m3fn_of(sb);
    /* e is 0x01..0x7E: a subnormal is e * 2^-9, a normal one rebiases its exponent (7 -> 127) */
    uint32_t vb = ((uint32_t)e << 20) + (120u << 23);
    float v;
    memcpy(&v, &vb, sizeof v);
    v = e < 8 ? (float)e * 0x1p-9f : v;
    *sv = v * g->gs;
    return e;
}

/* The E2M1 word of a quotient y: the boundaries it passes, then the sign (see above). */
static inline uint8_t nf_nvfp4_e2m1_of(float y)
{
    float a = fabsf(y);
    unsigned c = (unsigned)(a > 0.25f) + (unsigned)(a >= 0.75f) + (unsigned)(a > 1.25f) + (unsigned)(a >= 1.75f) +
                 (unsigned)(a > 2.5f) + (unsigned)(a >= 3.5f) + (unsigned)(a > 5.0f);
    return (uint8_t)(c | (y < 0.0f ? 8u : 0u));
}

/* src: ngroups * 16 elements of type (F32, F16 or BF16); codes: one E2M1 word per element;
 * scales: one word per group.  False when an element is not finite. */
typedef bool (*nf_nvfp4_groups_fn)(const uint8_t *src, nf_src_type type, size_t ngroups, const nf_nvfp4_global *g,
                                   uint8_t *codes, uint8_t *scales);

/* nvfp4_search's candidates around nvfp4_quantize's word w0, in the order they compete
 * (ninfer/method.h, nf_nvfp4_search_rows). */
#define NF_NVFP4_SEARCH_RADIUS 4
static const int nf_nvfp4_search_offsets[2 * NF_NVFP4_SEARCH_RADIUS] = {-1, 1, -2, 2, -3, 3, -4, 4};

/* nvfp4_search's error of one group of 16 finite values x under scale word e (codes by
 * nf_nvfp4_e2m1_of into codes): sum_k w[k] * (x[k] - v[k])^2 in binary64, in column order,
 * v = (e2m1 * e4m3) / d rounded once; w NULL weighs 1.  Every kernel sums each candidate's
 * terms in this order, with these roundings. */
static inline double nf_nvfp4_group_error(const float *x, const float *w, uint8_t e, const nf_nvfp4_global *g,
                                          uint8_t *codes)
{
    const float s = nf_e4m3fn_to_f32(e), sv = s * g->gs;
    float d;
    memcpy(&d, &g->divisor, sizeof d);
    static const float mag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    double err = 0.0;
    for (unsigned i = 0; i < NF_NVFP4_GROUP; i++) {
        uint8_t c = nf_nvfp4_e2m1_of(x[i] / sv);
        codes[i] = c;
        float v = (mag[c & 7] * s) / d;
        v = c & 8 ? -v : v;
        double diff = (double)x[i] - (double)v;
        err += (w ? (double)w[i] : 1.0) * diff * diff;
    }
    return err;
}

/* The vector kernels' last step of nvfp4_search: the candidates compete in their order
 * (nf_nvfp4_search_offsets): candidate j (word words[j], error err[j]) wins when bit j of valid
 * is set and its error is below the best so far, from w0's best_err; the winner's codes are
 * written into codes again (w0's are there). */
static inline uint8_t nf_nvfp4_compete(const double *err, const int *words, unsigned valid, int w0, double best_err,
                                       const float *x, const float *w, const nf_nvfp4_global *g, uint8_t *codes)
{
    uint8_t best = (uint8_t)w0;
    for (unsigned j = 0; j < 2 * NF_NVFP4_SEARCH_RADIUS; j++)
        if ((valid >> j & 1u) && err[j] < best_err) {
            best_err = err[j];
            best = (uint8_t)words[j];
        }
    if (best != w0) (void)nf_nvfp4_group_error(x, w, best, g, codes); /* the winner's codes */
    return best;
}

/* nvfp4_search of one group of 16 finite values x (w: their importance, or NULL): its codes
 * into codes, its scale word returned. */
typedef uint8_t (*nf_nvfp4_search_fn)(const float *x, const float *w, const nf_nvfp4_global *g, uint8_t *codes);

/* The kernels table of nvfp4_quantize and nvfp4_search (common/cpu.h: one dispatch structure).
 * The scalar level's kernels are the portable ones (nvfp4_select.c). */
typedef struct nf_nvfp4_kernels {
    const char *name;
    nf_nvfp4_groups_fn groups;
    nf_nvfp4_search_fn search;
} nf_nvfp4_kernels;

extern const nf_nvfp4_kernels nf_nvfp4_kernels_scalar;
#if NF_X86_KERNELS
extern const nf_nvfp4_kernels nf_nvfp4_kernels_avx2;
extern const nf_nvfp4_kernels nf_nvfp4_kernels_avx512;
#endif
#if NF_ARM_KERNELS
extern const nf_nvfp4_kernels nf_nvfp4_kernels_neon;
#endif

/* The kernels of a level and of the active one (common/cpu.h); never NULL. */
const nf_nvfp4_kernels *nf_nvfp4_kernels_for(nf_simd_level level);
const nf_nvfp4_kernels *nf_nvfp4_kernels_active(void);

/* The references (nvfp4_quantize.c's plain loops, kept for the tests): the same contracts as
 * nf_nvfp4_quantize_rows and nf_nvfp4_search_rows, without kernels. */
nf_status nf_nvfp4_quantize_rows_reference(const nf_format *fmt, const nf_method_params *params, const nf_src_rows *src,
                                           nf_words *out, nf_error *err);
nf_status nf_nvfp4_search_rows_reference(const nf_format *fmt, const nf_method_params *params, const nf_src_rows *src,
                                         nf_words *out, nf_error *err);

#endif
