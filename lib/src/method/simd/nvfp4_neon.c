/* nvfp4_quantize and nvfp4_search kernels for NEON (nvfp4_simd.h), the steps of nvfp4_avx2.c on
 * 4 lanes of binary32: a group of 16 elements is four vectors (BF16 widened by a shift, binary16
 * by FCVTL, exact for every value); the group's largest magnitude is a UMAX/UMAXV of the
 * sign-cleared words, the scale word comes from nf_nvfp4_scale_of (scalar, once a group), each
 * code from one FDIV by the group's multiplier (exact IEEE division, as the reference's x / sv)
 * and seven ordered compares against the E2M1 boundaries, whose all-ones masks are subtracted to
 * count them; the sign is a compare y < 0.  The codes (<= 15) narrow to bytes with XTN. */
#include "common/simd_target.h"
#include "method/simd/nvfp4_simd.h"

#if NF_ARM_KERNELS

#include <arm_neon.h>

/* 4 elements at p as binary32. */
static inline float32x4_t load4(const uint8_t *p, nf_src_type type)
{
    if (type == NF_SRC_F32) return vld1q_f32((const float *)(const void *)p);
    uint16x4_t h = vld1_u16((const uint16_t *)(const void *)p);
    if (type == NF_SRC_F16) return vcvt_f32_f16(vreinterpret_f16_u16(h));
    return vreinterpretq_f32_u32(vshll_n_u16(h, 16));
}

/* The E2M1 words of y, as 32-bit lanes (nf_nvfp4_e2m1_of). */
static inline uint32x4_t code_lanes(float32x4_t y)
{
    float32x4_t a = vabsq_f32(y);
    uint32x4_t c = vdupq_n_u32(0);
    c = vsubq_u32(c, vcgtq_f32(a, vdupq_n_f32(0.25f)));
    c = vsubq_u32(c, vcgeq_f32(a, vdupq_n_f32(0.75f)));
    c = vsubq_u32(c, vcgtq_f32(a, vdupq_n_f32(1.25f)));
    c = vsubq_u32(c, vcgeq_f32(a, vdupq_n_f32(1.75f)));
    c = vsubq_u32(c, vcgtq_f32(a, vdupq_n_f32(2.5f)));
    c = vsubq_u32(c, vcgeq_f32(a, vdupq_n_f32(3.5f)));
    c = vsubq_u32(c, vcgtq_f32(a, vdupq_n_f32(5.0f)));
    uint32x4_t neg = vcltq_f32(y, vdupq_n_f32(0.0f));
    return vorrq_u32(c, vandq_u32(neg, vdupq_n_u32(8)));
}

static inline bool encode(const uint8_t *src, nf_src_type type, size_t esize, size_t ngroups, const nf_nvfp4_global *g,
                          uint8_t *codes, uint8_t *scales)
{
    const uint32x4_t mag = vdupq_n_u32(0x7FFFFFFF);
    for (size_t j = 0; j < ngroups; j++, src += NF_NVFP4_GROUP * esize, codes += NF_NVFP4_GROUP) {
        float32x4_t v[4];
        uint32x4_t m = vdupq_n_u32(0);
        for (unsigned q = 0; q < 4; q++) {
            v[q] = load4(src + 4 * q * esize, type);
            m = vmaxq_u32(m, vandq_u32(vreinterpretq_u32_f32(v[q]), mag));
        }
        uint32_t bw = vmaxvq_u32(m);
        if (bw >= 0x7F800000u) return false;
        float sv;
        scales[j] = nf_nvfp4_scale_of(bw, g, &sv);
        const float32x4_t vs = vdupq_n_f32(sv);
        uint16x8_t lo = vcombine_u16(vmovn_u32(code_lanes(vdivq_f32(v[0], vs))),
                                     vmovn_u32(code_lanes(vdivq_f32(v[1], vs))));
        uint16x8_t hi = vcombine_u16(vmovn_u32(code_lanes(vdivq_f32(v[2], vs))),
                                     vmovn_u32(code_lanes(vdivq_f32(v[3], vs))));
        vst1q_u8(codes, vcombine_u8(vmovn_u16(lo), vmovn_u16(hi)));
    }
    return true;
}

static bool nvfp4_groups_neon(const uint8_t *src, nf_src_type type, size_t ngroups, const nf_nvfp4_global *g,
                              uint8_t *codes, uint8_t *scales)
{
    switch (type) {
    case NF_SRC_F32: return encode(src, NF_SRC_F32, 4, ngroups, g, codes, scales);
    case NF_SRC_F16: return encode(src, NF_SRC_F16, 2, ngroups, g, codes, scales);
    case NF_SRC_BF16: return encode(src, NF_SRC_BF16, 2, ngroups, g, codes, scales);
    default: return false;
    }
}

/* The candidates of 4 lanes (words e, valid or w0's): their E4M3FN values s (subnormals e * 2^-9,
 * normals rebiased) and multipliers sv = f32(s * gs). */
static inline void candidates(int32x4_t e, float gs, float32x4_t *s, float32x4_t *sv)
{
    uint32x4_t eu = vreinterpretq_u32_s32(e);
    float32x4_t sn = vreinterpretq_f32_u32(vaddq_u32(vshlq_n_u32(eu, 20), vdupq_n_u32(120u << 23)));
    float32x4_t ss = vmulq_f32(vcvtq_f32_s32(e), vdupq_n_f32(0x1p-9f));
    *s = vbslq_f32(vcltq_s32(e, vdupq_n_s32(8)), ss, sn);
    *sv = vmulq_f32(*s, vdupq_n_f32(gs));
}

/* The E2M1 magnitudes of codes c (0..7) by TBL from the 32 table bytes. */
static inline float32x4_t magnitudes(uint8x16x2_t tb, uint32x4_t c)
{
    uint32x4_t idx = vaddq_u32(vmulq_n_u32(c, 0x04040404u), vdupq_n_u32(0x03020100u));
    return vreinterpretq_f32_u8(vqtbl2q_u8(tb, vreinterpretq_u8_u32(idx)));
}

/* Terms of one value x for 4 candidates: v = (e2m1 * s) / d, signed as y, and (wt * diff) * diff
 * added to the two binary64 sums of the lanes, as nf_nvfp4_group_error does. */
static inline void add_terms(float x, double wt, float32x4_t s, float32x4_t sv, float32x4_t d, uint8x16x2_t tb,
                             float64x2_t *err)
{
    float32x4_t y = vdivq_f32(vdupq_n_f32(x), sv);
    uint32x4_t c = code_lanes(y);
    float32x4_t v = vdivq_f32(vmulq_f32(magnitudes(tb, vandq_u32(c, vdupq_n_u32(7))), s), d);
    v = vreinterpretq_f32_u32(
        veorq_u32(vreinterpretq_u32_f32(v), vandq_u32(vcltq_f32(y, vdupq_n_f32(0.0f)), vdupq_n_u32(0x80000000u))));
    const float64x2_t xd = vdupq_n_f64((double)x), wd = vdupq_n_f64(wt);
    float64x2_t dlo = vsubq_f64(xd, vcvt_f64_f32(vget_low_f32(v)));
    float64x2_t dhi = vsubq_f64(xd, vcvt_high_f64_f32(v));
    err[0] = vaddq_f64(err[0], vmulq_f64(vmulq_f64(wd, dlo), dlo));
    err[1] = vaddq_f64(err[1], vmulq_f64(vmulq_f64(wd, dhi), dhi));
}

/* nvfp4_search of one group: the eight candidates side by side in two vectors of 4 binary32
 * lanes, their errors in four vectors of two binary64 lanes, each lane summing its terms in
 * column order as nf_nvfp4_group_error does; then the candidates compete in their order. */
static uint8_t nvfp4_search_neon(const float *x, const float *w, const nf_nvfp4_global *g, uint8_t *codes)
{
    const uint32x4_t mag = vdupq_n_u32(0x7FFFFFFF);
    uint32x4_t m = vdupq_n_u32(0);
    for (unsigned q = 0; q < 4; q++)
        m = vmaxq_u32(m, vandq_u32(vld1q_u32((const uint32_t *)(const void *)(x + 4 * q)), mag));
    float sv0;
    uint8_t best = nf_nvfp4_scale_of(vmaxvq_u32(m), g, &sv0);
    double best_err = nf_nvfp4_group_error(x, w, best, g, codes);
    const int w0 = best;
    static const float table[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    const uint8x16x2_t tb = vld1q_u8_x2((const uint8_t *)(const void *)table);
    float df;
    memcpy(&df, &g->divisor, sizeof df);
    const float32x4_t d = vdupq_n_f32(df);
    int32x4_t e[2];
    uint32x4_t valid[2];
    float32x4_t s[2], sv[2];
    for (unsigned h = 0; h < 2; h++) {
        int32x4_t ee = vaddq_s32(vdupq_n_s32(w0), vld1q_s32(nf_nvfp4_search_offsets + 4 * h));
        valid[h] = vandq_u32(vcgeq_s32(ee, vdupq_n_s32(1)), vcleq_s32(ee, vdupq_n_s32(0x7E)));
        e[h] = vbslq_s32(valid[h], ee, vdupq_n_s32(w0));
        candidates(e[h], g->gs, &s[h], &sv[h]);
    }
    float64x2_t err[4] = {vdupq_n_f64(0.0), vdupq_n_f64(0.0), vdupq_n_f64(0.0), vdupq_n_f64(0.0)};
    for (unsigned i = 0; i < NF_NVFP4_GROUP; i++) {
        double wt = w ? (double)w[i] : 1.0;
        add_terms(x[i], wt, s[0], sv[0], d, tb, err);
        add_terms(x[i], wt, s[1], sv[1], d, tb, err + 2);
    }
    double lanes[8];
    int words[8];
    uint32_t ok[8];
    for (unsigned k = 0; k < 4; k++) vst1q_f64(lanes + 2 * k, err[k]);
    vst1q_s32(words, e[0]);
    vst1q_s32(words + 4, e[1]);
    vst1q_u32(ok, valid[0]);
    vst1q_u32(ok + 4, valid[1]);
    unsigned bits = 0;
    for (unsigned j = 0; j < 8; j++) bits |= (ok[j] & 1u) << j;
    return nf_nvfp4_compete(lanes, words, bits, w0, best_err, x, w, g, codes);
}

const nf_nvfp4_kernels nf_nvfp4_kernels_neon = {
    .name = "neon", .groups = nvfp4_groups_neon, .search = nvfp4_search_neon};

#else
typedef int nf_nvfp4_neon_unused; /* not an aarch64 GCC/Clang build: no NEON kernel */
#endif
