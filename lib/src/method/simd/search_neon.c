/* grouped_search fast path for NEON (search_simd.h): 4 groups side by side, one per binary32
 * lane of a float32x4_t (two float64x2_t where the reference's binary64 sums are formed), the
 * batch schedule of search_algo.inc.  Every kernel here does the arithmetic of the portable
 * kernel (search_portable.c), operation for operation and in its order, lane-wise:
 *
 *   - codes: FMUL x * inv, FMAX / FMIN against qmin / qmax (the product is never NaN: x is
 *     finite and inv = 1 / s is finite and nonzero for a finite nonzero binary16 s, so the max
 *     and min are the reference's comparisons; a -0 kept by them rounds to +0 as in the
 *     reference), then + 1.5 * 2^23 and - 1.5 * 2^23 in binary32, as nf_grouped_code;
 *   - the screening: r = x - s q, (w r) r summed in binary32 k ascending, unfused, as the
 *     portable kernel (its residuals are the reference's codes' rounded once, so SEARCH_BETA is
 *     0 as there: search_algo.inc, search_rho counts that rounding);
 *   - the least-squares sums and the exact errors: binary64 products and sums, widened exactly
 *     from binary32 with FCVTL, k ascending, no FMA (-ffp-contract=off; no vfmaq anywhere);
 *   - search_prep: FCVTL from binary16 (exact, subnormals included, FPCR's flush-to-zero and
 *     alternative-half-precision bits being clear under Linux, as absmax_neon.c relies on) and
 *     one FDIV (nf_recip_f32 is one binary32 division; an infinite fit value gives 0 both ways).
 *
 * The candidates' rounding (search_round) and the row kernels are search_algo.inc's plain
 * versions, so the words are the reference's by construction; the groups' loading and extreme
 * are the portable table's own (search_portable.c).  The exact errors take 4 candidates side by
 * side (search_exact's slots are padded to a multiple of 32). */
#include "common/simd_target.h"
#include "method/common.h"
#include "method/method_impl.h"
#include "method/simd/search_simd.h"

#if NF_ARM_KERNELS

#include <arm_neon.h>

#define SEARCH_L 4u
#define SEARCH_BETA 0.0 /* the screening's codes and residuals are the reference's (as search_portable.c) */

#define SEARCH_KERNEL_INLINE static inline
#include "method/simd/search_kernels.inc"

#define SEARCH_BATCH_FN search_batch_neon
#define SEARCH_ATTR
#include "method/simd/search_algo.inc"

/* The reference's codes (nf_grouped_code) of 4 lanes, as floats. */
static inline float32x4_t code4(float32x4_t x, float32x4_t inv, float32x4_t qmin, float32x4_t qmax)
{
    const float32x4_t magic = vdupq_n_f32(12582912.0f); /* 1.5 * 2^23 */
    float32x4_t n = vminq_f32(vmaxq_f32(vmulq_f32(x, inv), qmin), qmax);
    return vsubq_f32(vaddq_f32(n, magic), magic);
}

/* 4 rows of 4 floats (element k .. k + 3 of each lane's group) to 4 columns. */
static inline void transpose4(const float *const *src, size_t k, float (*dst)[SEARCH_L])
{
    float32x4_t r0 = vld1q_f32(src[0] + k), r1 = vld1q_f32(src[1] + k);
    float32x4_t r2 = vld1q_f32(src[2] + k), r3 = vld1q_f32(src[3] + k);
    float64x2_t t0 = vreinterpretq_f64_f32(vtrn1q_f32(r0, r1)); /* a0 b0 a2 b2 */
    float64x2_t t1 = vreinterpretq_f64_f32(vtrn2q_f32(r0, r1)); /* a1 b1 a3 b3 */
    float64x2_t t2 = vreinterpretq_f64_f32(vtrn1q_f32(r2, r3)); /* c0 d0 c2 d2 */
    float64x2_t t3 = vreinterpretq_f64_f32(vtrn2q_f32(r2, r3)); /* c1 d1 c3 d3 */
    vst1q_f32(dst[k], vreinterpretq_f32_f64(vtrn1q_f64(t0, t2)));
    vst1q_f32(dst[k + 1], vreinterpretq_f32_f64(vtrn1q_f64(t1, t3)));
    vst1q_f32(dst[k + 2], vreinterpretq_f32_f64(vtrn2q_f64(t0, t2)));
    vst1q_f32(dst[k + 3], vreinterpretq_f32_f64(vtrn2q_f64(t1, t3)));
}

static inline void transpose_rows(const float *const *src, size_t G, float (*dst)[SEARCH_L])
{
    size_t k = 0;
    for (; k + 4 <= G; k += 4) transpose4(src, k, dst);
    for (; k < G; k++)
        for (size_t l = 0; l < SEARCH_L; l++) dst[k][l] = src[l][k];
}

static inline void search_transpose(const nf_search_shape *sh, const nf_search_group *const *g, search_lanes *b)
{
    (void)sh;
    const float *src[SEARCH_L];
    for (size_t l = 0; l < SEARCH_L; l++) src[l] = g[l]->x;
    transpose_rows(src, b->G, b->x);
    if (b->weighted) {
        for (size_t l = 0; l < SEARCH_L; l++) src[l] = g[l]->wf;
        transpose_rows(src, b->G, b->w);
    }
    /* bounds with 0 included, by the portable kernel's comparisons (FMIN would order a -0 below
     * the +0 start); xx: the binary32 sum of w x^2 (any order is allowed) */
    float32x4_t hi = vdupq_n_f32(0.0f), lo = hi, xx = hi;
    for (size_t k = 0; k < b->G; k++) {
        float32x4_t v = vld1q_f32(b->x[k]);
        hi = vbslq_f32(vcgtq_f32(v, hi), v, hi);
        lo = vbslq_f32(vcltq_f32(v, lo), v, lo);
        xx = vaddq_f32(xx, vmulq_f32(b->weighted ? vmulq_f32(vld1q_f32(b->w[k]), v) : v, v));
    }
    vst1q_f32(b->xmax, hi);
    vst1q_f32(b->xmin, lo);
    vst1q_f32(b->xx, xx);
}

static inline void search_round(const double *c, uint16_t *w)
{
    for (size_t l = 0; l < SEARCH_L; l++) w[l] = search_round_one(c[l]);
}

static inline void search_prep(const uint16_t *w, float *sf, float *inv)
{
    float32x4_t v = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(w)));
    vst1q_f32(sf, v);
    vst1q_f32(inv, vdivq_f32(vdupq_n_f32(1.0f), v));
}

/* Screening sum of one candidate over the 4 lanes: binary32, unfused, k ascending. */
static inline float32x4_t screen_one(const nf_search_shape *sh, const search_lanes *b, const float *sfp,
                                     const float *invp, bool weighted)
{
    const float32x4_t qmin = vdupq_n_f32(sh->qmin), qmax = vdupq_n_f32(sh->qmax);
    const float32x4_t sf = vld1q_f32(sfp), inv = vld1q_f32(invp);
    float32x4_t acc = vdupq_n_f32(0.0f);
    for (size_t k = 0; k < b->G; k++) {
        float32x4_t x = vld1q_f32(b->x[k]);
        float32x4_t r = vsubq_f32(x, vmulq_f32(sf, code4(x, inv, qmin, qmax)));
        float32x4_t wr = weighted ? vmulq_f32(vld1q_f32(b->w[k]), r) : r;
        acc = vaddq_f32(acc, vmulq_f32(wr, r));
    }
    return acc;
}

static void search_screen(const nf_search_shape *sh, const search_lanes *b, search_cands *C, const uint8_t *list,
                          size_t m)
{
    for (size_t i = 0; i < m; i++) {
        size_t j = list[i];
        float32x4_t a = b->weighted ? screen_one(sh, b, C->sf[j], C->inv[j], true)
                                    : screen_one(sh, b, C->sf[j], C->inv[j], false);
        vst1q_f32(C->a[j], a);
    }
}

static void search_refit_screen(const nf_search_shape *sh, const search_lanes *b, search_cands *C,
                                const float (*qb)[SEARCH_L], const uint8_t *list, size_t m, uint16_t (*same)[SEARCH_L])
{
    search_screen(sh, b, C, list, m);
    const float32x4_t qmin = vdupq_n_f32(sh->qmin), qmax = vdupq_n_f32(sh->qmax);
    for (size_t i = 0; i < m; i++) {
        const float32x4_t inv = vld1q_f32(C->inv[list[i]]);
        uint32x4_t eq = vdupq_n_u32(0xFFFFFFFFu);
        for (size_t k = 0; k < b->G; k++)
            eq = vandq_u32(eq, vceqq_f32(code4(vld1q_f32(b->x[k]), inv, qmin, qmax), vld1q_f32(qb[k])));
        /* 1 where every code agreed, 0 elsewhere */
        vst1_u16(same[list[i] - SC_REFIT], vmovn_u32(vshrq_n_u32(eq, 31)));
    }
}

/* The least-squares sums of the reference, lane by lane in its order (k ascending), binary64. */
static inline void lsq_lanes(const nf_search_shape *sh, const search_lanes *b, const float *invp, double *num,
                             double *den, float (*qout)[SEARCH_L], bool weighted)
{
    const float32x4_t qmin = vdupq_n_f32(sh->qmin), qmax = vdupq_n_f32(sh->qmax);
    const float32x4_t inv = vld1q_f32(invp);
    float64x2_t n0 = vdupq_n_f64(0.0), n1 = n0, d0 = n0, d1 = n0;
    for (size_t k = 0; k < b->G; k++) {
        float32x4_t xf = vld1q_f32(b->x[k]);
        float32x4_t qf = code4(xf, inv, qmin, qmax);
        if (qout) vst1q_f32(qout[k], qf);
        float64x2_t x0 = vcvt_f64_f32(vget_low_f32(xf)), x1 = vcvt_high_f64_f32(xf);
        float64x2_t q0 = vcvt_f64_f32(vget_low_f32(qf)), q1 = vcvt_high_f64_f32(qf);
        if (weighted) {
            float32x4_t wf = vld1q_f32(b->w[k]);
            float64x2_t w0 = vcvt_f64_f32(vget_low_f32(wf)), w1 = vcvt_high_f64_f32(wf);
            n0 = vaddq_f64(n0, vmulq_f64(vmulq_f64(w0, x0), q0));
            n1 = vaddq_f64(n1, vmulq_f64(vmulq_f64(w1, x1), q1));
            d0 = vaddq_f64(d0, vmulq_f64(vmulq_f64(w0, q0), q0));
            d1 = vaddq_f64(d1, vmulq_f64(vmulq_f64(w1, q1), q1));
        } else {
            n0 = vaddq_f64(n0, vmulq_f64(x0, q0));
            n1 = vaddq_f64(n1, vmulq_f64(x1, q1));
            d0 = vaddq_f64(d0, vmulq_f64(q0, q0));
            d1 = vaddq_f64(d1, vmulq_f64(q1, q1));
        }
    }
    vst1q_f64(num, n0);
    vst1q_f64(num + 2, n1);
    vst1q_f64(den, d0);
    vst1q_f64(den + 2, d1);
}

static void search_lsq(const nf_search_shape *sh, const search_lanes *b, const float *inv, double *num, double *den,
                       float (*q)[SEARCH_L])
{
    if (b->weighted) lsq_lanes(sh, b, inv, num, den, q, true);
    else lsq_lanes(sh, b, inv, num, den, q, false);
}

/* The reference's group_error of 4 candidates side by side: for each element k ascending,
 * r = x - s q and e += (w r) r (r r without importance) in binary64, unfused. */
static inline void exact_block(const nf_search_shape *sh, const nf_search_group *g, const double *s, const float *invp,
                               double *e, bool weighted)
{
    const float32x4_t qmin = vdupq_n_f32(sh->qmin), qmax = vdupq_n_f32(sh->qmax);
    const float32x4_t inv = vld1q_f32(invp);
    const float64x2_t s0 = vld1q_f64(s), s1 = vld1q_f64(s + 2);
    float64x2_t e0 = vdupq_n_f64(0.0), e1 = e0;
    for (size_t k = 0; k < g->n; k++) {
        float xk = g->x[k];
        float64x2_t xd = vdupq_n_f64((double)xk);
        float32x4_t qf = code4(vdupq_n_f32(xk), inv, qmin, qmax);
        float64x2_t r0 = vsubq_f64(xd, vmulq_f64(s0, vcvt_f64_f32(vget_low_f32(qf))));
        float64x2_t r1 = vsubq_f64(xd, vmulq_f64(s1, vcvt_high_f64_f32(qf)));
        float64x2_t wr0 = r0, wr1 = r1;
        if (weighted) {
            float64x2_t wk = vdupq_n_f64((double)g->wf[k]);
            wr0 = vmulq_f64(wk, r0);
            wr1 = vmulq_f64(wk, r1);
        }
        e0 = vaddq_f64(e0, vmulq_f64(wr0, r0));
        e1 = vaddq_f64(e1, vmulq_f64(wr1, r1));
    }
    vst1q_f64(e, e0);
    vst1q_f64(e + 2, e1);
}

static void search_exact(const nf_search_shape *sh, const nf_search_group *g, const double *s, const float *inv,
                         size_t m, double *e)
{
    for (size_t j = 0; j < m; j += 4) {
        if (g->wf) exact_block(sh, g, s + j, inv + j, e + j, true);
        else exact_block(sh, g, s + j, inv + j, e + j, false);
    }
}

/* The reference's select_codes: 8 codes at a time (integral floats converted exactly by FCVTZS,
 * then narrowed: every code lies in [qmin, qmax] within int8), the tail one by one. */
static inline void search_codes(const nf_search_shape *sh, const nf_search_group *g, float invs, int8_t *q)
{
    const float32x4_t qmin = vdupq_n_f32(sh->qmin), qmax = vdupq_n_f32(sh->qmax);
    const float32x4_t inv = vdupq_n_f32(invs);
    size_t i = 0;
    for (; i + 8 <= g->n; i += 8) {
        int32x4_t c0 = vcvtq_s32_f32(code4(vld1q_f32(g->x + i), inv, qmin, qmax));
        int32x4_t c1 = vcvtq_s32_f32(code4(vld1q_f32(g->x + i + 4), inv, qmin, qmax));
        vst1_s8(q + i, vmovn_s16(vcombine_s16(vmovn_s32(c0), vmovn_s32(c1))));
    }
    for (; i < g->n; i++) q[i] = nf_grouped_code(g->x[i], invs, sh->qmin, sh->qmax);
}

const nf_search_kernels nf_search_kernels_neon = {.name = "neon",
                                                  .batch = search_batch_neon,
                                                  .extreme = nf_search_extreme_portable,
                                                  .load = nf_search_load_portable,
                                                  .lanes = SEARCH_L};

#else
typedef int nf_search_neon_unused; /* not an aarch64 GCC/Clang build: no NEON kernel */
#endif
