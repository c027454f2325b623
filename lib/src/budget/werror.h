/* The budget's error (docs/recipes.md, "Budgets"): the importance-weighted squared error of
 * represented values y against source values x,
 *     sum over rows r, columns k of  w[k] * (x[r,k] - y[r,k])^2      (w[k] = 1 without an imatrix)
 * summed so that no cut of the work changes a bit: each row is cut into blocks of
 * NF_BUDGET_BLOCK columns from its first column; a block's terms are added in column order in
 * binary64 from +0 (x - y is exact in binary64, each product and sum rounded once); the blocks'
 * sums are added exactly (nf_xsum) and rounded once.  The measuring pass and the report use it
 * alike, so a tensor measured on every row has the same figure in both. */
#ifndef NINFER_BUDGET_WERROR_H
#define NINFER_BUDGET_WERROR_H

#include <stdint.h>

#include "stats/stats.h"

#define NF_BUDGET_BLOCK 4096u /* = NF_COLSPAN_ALIGN: a span of a row starts a block */

/* Adds rows x cols values (row-major; their first column is first_col, a multiple of
 * NF_BUDGET_BLOCK) to acc.  weights: the row's full importance vector (indexed by absolute
 * column), or NULL for 1.  A term that is not finite (a non-finite x or y) makes acc infinite. */
void nf_budget_werror_rows(const float *x, const float *y, uint64_t rows, uint64_t cols, uint64_t first_col,
                           const float *weights, nf_xsum *acc);

#endif
