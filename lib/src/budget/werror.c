/* The budget's weighted squared error, summed as werror.h defines it. */
#include "budget/werror.h"

#include <math.h>

void nf_budget_werror_rows(const float *x, const float *y, uint64_t rows, uint64_t cols, uint64_t first_col,
                           const float *weights, nf_xsum *acc)
{
    for (uint64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols, *yr = y + r * cols;
        for (uint64_t c0 = 0; c0 < cols; c0 += NF_BUDGET_BLOCK) {
            uint64_t c1 = cols - c0 > NF_BUDGET_BLOCK ? c0 + NF_BUDGET_BLOCK : cols;
            double sum = 0.0;
            for (uint64_t c = c0; c < c1; c++) {
                double d = (double)xr[c] - (double)yr[c];
                double w = weights ? (double)weights[first_col + c] : 1.0;
                sum += w * d * d;
            }
            /* NaN and inf alike mark the sum infinite (nf_xsum_add) */
            nf_xsum_add(acc, isfinite(sum) ? sum : INFINITY);
        }
    }
}
