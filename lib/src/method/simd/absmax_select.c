/* Kernel selection of grouped_absmax (absmax_simd.h) from the active SIMD level. */
#include "common/simd_target.h"
#include "method/simd/absmax_simd.h"

#include "common/cpu.h"

nf_absmax_row_fn nf_absmax_row_kernel(void)
{
#if NF_X86_KERNELS
    switch (nf_simd_active()) {
    case NF_SIMD_AVX512: return nf_absmax_row_avx512;
    case NF_SIMD_AVX2: return nf_absmax_row_avx2;
    default: break;
    }
#endif
    return NULL;
}
