/* The NEON kernel of the binary16 loads (f16_simd.h): FCVTL widens 4 words exactly, except that
 * it sets the quiet bit of a signaling NaN, so 4 words holding a NaN are widened by
 * nf_f16_to_f32 instead (as the F16C kernel, f16_x86.c). */
#include "method/simd/f16_simd.h"

#if NF_ARM_KERNELS
#include <arm_neon.h>

#include <ninfer/format.h>

#include "method/method_impl.h"

void nf_method_f16_words_neon(const uint8_t *p, size_t n, float *out)
{
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        float32x4_t v = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)(const void *)(p + 2 * i))));
        if (vminvq_u32(vceqq_f32(v, v)) == 0) /* a NaN lane: unequal to itself */
            for (size_t k = i; k < i + 4; k++) out[k] = nf_f16_to_f32(nf_method_le16(p + 2 * k));
        else vst1q_f32(out + i, v);
    }
    for (; i < n; i++) out[i] = nf_f16_to_f32(nf_method_le16(p + 2 * i));
}
#endif
