/* The selector of grouped_search's kernels table (search_simd.h). */
#include "method/simd/search_simd.h"

NF_SIMD_SELECTOR(nf_search_kernels, nf_search_kernels, nf_search_kernels_scalar, nf_search_kernels_avx2,
                 nf_search_kernels_avx512, nf_search_kernels_neon)

float nf_search_scaled_limit = 0x1p20f;

static _Thread_local nf_search_stats stats;

nf_search_stats *nf_search_stats_local(void) { return &stats; }
