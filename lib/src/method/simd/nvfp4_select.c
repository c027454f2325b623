/* nvfp4_quantize kernels (nvfp4_simd.h): the scalar instance (the portable kernel) and the
 * selector. */
#include "method/simd/nvfp4_simd.h"

/* The E2M1 word of y (nvfp4_simd.h: boundaries passed, then the sign). */
static inline uint8_t code_of(float y)
{
    float a = fabsf(y);
    unsigned c = (unsigned)(a > 0.25f) + (unsigned)(a >= 0.75f) + (unsigned)(a > 1.25f) + (unsigned)(a >= 1.75f) +
                 (unsigned)(a > 2.5f) + (unsigned)(a >= 3.5f) + (unsigned)(a > 5.0f);
    return (uint8_t)(c | (y < 0.0f ? 8u : 0u));
}

static void nvfp4_groups_scalar(const float *x, size_t ngroups, const nf_nvfp4_global *g, uint8_t *codes,
                                uint8_t *scales)
{
    for (size_t j = 0; j < ngroups; j++, x += NF_NVFP4_GROUP, codes += NF_NVFP4_GROUP) {
        uint32_t bw = 0;
        for (unsigned i = 0; i < NF_NVFP4_GROUP; i++) {
            uint32_t b;
            memcpy(&b, &x[i], sizeof b);
            b &= 0x7FFFFFFFu;
            bw = b > bw ? b : bw;
        }
        float sv;
        scales[j] = nf_nvfp4_scale_of(bw, g, &sv);
        for (unsigned i = 0; i < NF_NVFP4_GROUP; i++) codes[i] = code_of(x[i] / sv);
    }
}

const nf_nvfp4_kernels nf_nvfp4_kernels_scalar = {.name = "scalar", .groups = nvfp4_groups_scalar};

NF_SIMD_SELECTOR(nf_nvfp4_kernels, nf_nvfp4_kernels, nf_nvfp4_kernels_scalar, nf_nvfp4_kernels_avx2,
                 nf_nvfp4_kernels_avx512)
