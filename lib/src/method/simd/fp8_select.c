/* fp8_row_maxabs kernels (fp8_simd.h): the scalar instance (the portable fast kernel) and the
 * selector. */
#include "method/simd/fp8_simd.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__

/* Pass 1: the largest sign-cleared word of the row, in the elements' own width. */
static uint32_t max16(const uint8_t *restrict row, size_t k, uint16_t mask)
{
    uint16_t m = 0;
    for (size_t i = 0; i < k; i++) {
        uint16_t w;
        memcpy(&w, row + 2 * i, sizeof w);
        w &= mask;
        m = w > m ? w : m;
    }
    return m;
}

static uint32_t max32(const uint8_t *restrict row, size_t k)
{
    uint32_t m = 0;
    for (size_t i = 0; i < k; i++) {
        uint32_t w;
        memcpy(&w, row + 4 * i, sizeof w);
        w &= 0x7FFFFFFFu;
        m = w > m ? w : m;
    }
    return m;
}

static inline uint8_t code_of(uint32_t xb, float inv)
{
    float x, v;
    memcpy(&x, &xb, sizeof x);
    v = x * inv;
    uint32_t vb;
    memcpy(&vb, &v, sizeof vb);
    return nf_fp8_e4m3fn_of(vb);
}

static bool fp8_row_scalar(const uint8_t *row, nf_src_type type, size_t k, bool fp16_scale, uint8_t *codes,
                           uint16_t *scale)
{
    uint32_t mx;
    if (type == NF_SRC_BF16 || type == NF_SRC_F16) mx = max16(row, k, 0x7FFFu);
    else if (type == NF_SRC_F32) mx = max32(row, k);
    else return false;
    uint32_t mw;
    if (!nf_fp8_row_max(type, mx, &mw)) return false;
    float inv = 0.0f;
    int st = nf_fp8_row_setup(mw, fp16_scale, scale, &inv);
    if (st < 0) return false;
    if (st == 0) {
        memset(codes, 0, k);
        return true;
    }
    if (type == NF_SRC_BF16) {
        for (size_t i = 0; i < k; i++) {
            uint16_t w;
            memcpy(&w, row + 2 * i, sizeof w);
            codes[i] = code_of((uint32_t)w << 16, inv);
        }
    } else if (type == NF_SRC_F32) {
        for (size_t i = 0; i < k; i++) {
            uint32_t w;
            memcpy(&w, row + 4 * i, sizeof w);
            codes[i] = code_of(nf_fp8_round_bf16_bits(w), inv);
        }
    } else {
        for (size_t i = 0; i < k; i++) {
            uint16_t w;
            memcpy(&w, row + 2 * i, sizeof w);
            codes[i] = code_of(nf_fp8_round_bf16_bits(nf_f32_bits(nf_f16_to_f32(w))), inv);
        }
    }
    return true;
}

#else /* big-endian host: the reference encodes every row */

static bool fp8_row_scalar(const uint8_t *row, nf_src_type type, size_t k, bool fp16_scale, uint8_t *codes,
                           uint16_t *scale)
{
    (void)row, (void)type, (void)k, (void)fp16_scale, (void)codes, (void)scale;
    return false;
}

#endif

const nf_fp8_kernels nf_fp8_kernels_scalar = {.name = "scalar", .row = fp8_row_scalar};

NF_SIMD_SELECTOR(nf_fp8_kernels, nf_fp8_kernels, nf_fp8_kernels_scalar, nf_fp8_kernels_avx2, nf_fp8_kernels_avx512,
                 nf_fp8_kernels_neon)
