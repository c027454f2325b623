/* The scalar instance of grouped_absmax's kernels table (absmax_simd.h) and its selector. */
#include "method/simd/absmax_simd.h"

static bool absmax_row_scalar(const uint8_t *row, nf_src_type type, size_t k, const nf_absmax_shape *shape,
                              int8_t *codes, uint16_t *scales, nf_errstats *st, size_t *measured)
{
    (void)row, (void)type, (void)k, (void)shape, (void)codes, (void)scales, (void)st;
    *measured = 0;
    return false;
}

const nf_absmax_kernels nf_absmax_kernels_scalar = {.name = "scalar", .row = absmax_row_scalar};

NF_SIMD_SELECTOR(nf_absmax_kernels, nf_absmax_kernels, nf_absmax_kernels_scalar, nf_absmax_kernels_avx2,
                 nf_absmax_kernels_avx512, nf_absmax_kernels_neon)
