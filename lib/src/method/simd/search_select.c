/* Kernel selection of grouped_search (search_simd.h) from the active SIMD level. */
#include "common/simd_target.h"
#include "method/simd/search_simd.h"

#include "common/cpu.h"

const nf_search_kernel *nf_search_kernel_active(void)
{
#if NF_X86_KERNELS
    switch (nf_simd_active()) {
    case NF_SIMD_AVX512: return &nf_search_avx512;
    case NF_SIMD_AVX2: return &nf_search_avx2;
    default: break;
    }
#endif
    return &nf_search_portable;
}

float nf_search_scaled_limit = 0x1p20f;

static _Thread_local nf_search_stats stats;

nf_search_stats *nf_search_stats_local(void) { return &stats; }
