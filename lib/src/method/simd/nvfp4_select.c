/* nvfp4_quantize kernels (nvfp4_simd.h): the scalar instance (the portable kernel) and the
 * selector. */
#include "method/method_impl.h"
#include "method/simd/nvfp4_simd.h"

/* One group's 16 elements widened to binary32 (little-endian bytes). */
static inline void load16(const uint8_t *p, nf_src_type type, float *x)
{
    for (unsigned i = 0; i < NF_NVFP4_GROUP; i++) {
        if (type == NF_SRC_F32) {
            uint32_t w = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 | (uint32_t)p[4 * i + 2] << 16 |
                         (uint32_t)p[4 * i + 3] << 24;
            memcpy(&x[i], &w, sizeof w);
        } else {
            uint16_t h = (uint16_t)(p[2 * i] | (unsigned)p[2 * i + 1] << 8);
            if (type == NF_SRC_F16) {
                x[i] = nf_f16_to_f32(h);
            } else {
                uint32_t w = (uint32_t)h << 16;
                memcpy(&x[i], &w, sizeof w);
            }
        }
    }
}

static bool nvfp4_groups_scalar(const uint8_t *src, nf_src_type type, size_t ngroups, const nf_nvfp4_global *g,
                                uint8_t *codes, uint8_t *scales)
{
    const size_t esize = type == NF_SRC_F32 ? 4 : 2;
    for (size_t j = 0; j < ngroups; j++, src += NF_NVFP4_GROUP * esize, codes += NF_NVFP4_GROUP) {
        float x[NF_NVFP4_GROUP];
        load16(src, type, x);
        uint32_t bw = nf_method_amax_word(x, NF_NVFP4_GROUP);
        if (bw >= 0x7F800000u) return false;
        float sv;
        scales[j] = nf_nvfp4_scale_of(bw, g, &sv);
        for (unsigned i = 0; i < NF_NVFP4_GROUP; i++) codes[i] = nf_nvfp4_e2m1_of(x[i] / sv);
    }
    return true;
}

/* nvfp4_search of one group: nvfp4_quantize's word, then each candidate in turn. */
static uint8_t nvfp4_search_scalar(const float *x, const float *w, const nf_nvfp4_global *g, uint8_t *codes)
{
    uint32_t bw = nf_method_amax_word(x, NF_NVFP4_GROUP);
    float sv;
    uint8_t best = nf_nvfp4_scale_of(bw, g, &sv);
    double best_err = nf_nvfp4_group_error(x, w, best, g, codes);
    const int w0 = best;
    for (unsigned j = 0; j < 2 * NF_NVFP4_SEARCH_RADIUS; j++) {
        int e = w0 + nf_nvfp4_search_offsets[j];
        if (e < 0x01 || e > 0x7E) continue;
        uint8_t trial[NF_NVFP4_GROUP];
        double err = nf_nvfp4_group_error(x, w, (uint8_t)e, g, trial);
        if (err < best_err) {
            best_err = err;
            best = (uint8_t)e;
            memcpy(codes, trial, sizeof trial);
        }
    }
    return best;
}

const nf_nvfp4_kernels nf_nvfp4_kernels_scalar = {
    .name = "scalar", .groups = nvfp4_groups_scalar, .search = nvfp4_search_scalar};

NF_SIMD_SELECTOR(nf_nvfp4_kernels, nf_nvfp4_kernels, nf_nvfp4_kernels_scalar, nf_nvfp4_kernels_avx2,
                 nf_nvfp4_kernels_avx512, nf_nvfp4_kernels_neon)
