/* The binary16 loads' dispatcher (f16_simd.h): the kernel of the active level (common/cpu.h). */
#include "method/simd/f16_simd.h"

#include <ninfer/format.h>

#include "common/cpu.h"
#include "method/method_impl.h"

void nf_method_f16_words_to_f32(const uint8_t *p, size_t n, float *out)
{
#if NF_X86_KERNELS
    if (nf_simd_active() != NF_SIMD_SCALAR) {
        nf_method_f16_words_f16c(p, n, out);
        return;
    }
#endif
#if NF_ARM_KERNELS
    if (nf_simd_active() == NF_SIMD_NEON) {
        nf_method_f16_words_neon(p, n, out);
        return;
    }
#endif
#if defined(NF_METHOD_F16_SSE2)
    nf_method_f16_words_sse2(p, n, out);
#else
    for (size_t i = 0; i < n; i++) out[i] = nf_f16_to_f32(nf_method_le16(p + 2 * i));
#endif
}
