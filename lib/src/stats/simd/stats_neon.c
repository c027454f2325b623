/* Error statistics for NEON (stats.h), through the lanes of lanes_neon.h, in the blocks of
 * stats_blocks16.inc, as stats_avx2.c. */
#include "common/simd_target.h"
#include "stats/stats.h"

#if NF_ARM_KERNELS

#include <string.h>

#include <ninfer/format.h>

#include "stats/simd/lanes_neon.h"

static void step16(nf_lanes_neon *l, const float *x, const float *y)
{
    for (int q = 0; q < 4; q++) nf_lanes_neon_step4(l, q, vld1q_f32(x + 4 * q), vld1q_f32(y + 4 * q));
}

/* 4 source words at p as binary32 (exact widenings; a binary16 signaling NaN comes out quiet, as
 * with F16C, and makes its block the reference's). */
static inline float32x4_t load_source4(const uint8_t *p, nf_stats_source type)
{
    if (type == NF_STATS_F32) return vld1q_f32((const float *)(const void *)p);
    uint16x4_t h = vld1_u16((const uint16_t *)(const void *)p);
    if (type == NF_STATS_F16) return vcvt_f32_f16(vreinterpret_f16_u16(h));
    return vreinterpretq_f32_u32(vshll_n_u16(h, 16));
}

/* y = f16(scale) * q for 16 codes at q (nf_grouped_value), in four vectors */
static inline void grouped16(const int8_t *q, float32x4_t s, float32x4_t y[4])
{
    int8x16_t b = vld1q_s8(q);
    int16x8_t lo = vmovl_s8(vget_low_s8(b)), hi = vmovl_s8(vget_high_s8(b));
    y[0] = vmulq_f32(s, vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo))));
    y[1] = vmulq_f32(s, vcvtq_f32_s32(vmovl_s16(vget_high_s16(lo))));
    y[2] = vmulq_f32(s, vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi))));
    y[3] = vmulq_f32(s, vcvtq_f32_s32(vmovl_s16(vget_high_s16(hi))));
}

static inline void grouped_step16(nf_lanes_neon *l, const uint8_t *p, size_t es, nf_stats_source type, const int8_t *q,
                                  float32x4_t s)
{
    float32x4_t y[4];
    grouped16(q, s, y);
    for (int k = 0; k < 4; k++) nf_lanes_neon_step4(l, k, load_source4(p + 4 * (size_t)k * es, type), y[k]);
}

#define STATS_FN
#define STATS_INLINE static inline
#define BLOCKS_LANES nf_lanes_neon
#define BLOCKS_ZERO nf_lanes_neon_zero
#define BLOCKS_FINISH nf_lanes_neon_finish
#define BLOCKS_STEP16 step16
#define BLOCKS_SCALE float32x4_t
#define BLOCKS_SCALE_OF(w) vdupq_n_f32(nf_f16_to_f32(w))
#define BLOCKS_GROUPED16 grouped_step16
#include "stats/simd/stats_blocks16.inc"

#define STATS_KERNELS nf_stats_kernels_neon
#define STATS_NAME "neon"
#include "stats/simd/stats_rows.inc"

#endif
