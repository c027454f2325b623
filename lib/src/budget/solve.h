/* The budget's allocation (docs/recipes.md, "Budgets"): a multiple-choice knapsack.  Each item
 * (a tensor the budget chooses for) has a few choices (a candidate format and method), each with
 * its size in bytes and its measured error; pick one choice per item so that the bytes fit the
 * capacity and the total error is least.
 *
 * The solver is exact whenever it reports `exact`: a Lagrangian bound (the greedy on each item's
 * lower convex hull of error versus bytes) removes the choices that cannot be in an optimum, and
 * a depth-first branch and bound over what remains proves the best allocation.  When the search
 * would exceed its node limit it stops with the best allocation found, never worse than the
 * greedy's, and reports the proven lower bound, so the gap is known.  Single-threaded and free of
 * any dependence on time: the same items give the same answer. */
#ifndef NINFER_BUDGET_SOLVE_H
#define NINFER_BUDGET_SOLVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ninfer/error.h>

typedef struct nf_budget_choice {
    uint64_t bytes;
    double error; /* >= 0, finite */
} nf_budget_choice;

typedef struct nf_budget_item {
    const nf_budget_choice *choices;
    size_t nchoices; /* >= 1 */
} nf_budget_item;

typedef struct nf_budget_solution {
    size_t *pick;       /* [n]: the chosen choice of each item */
    size_t *runner_up;  /* [n]: the choice that would replace it (the least Lagrangian
                                    cost among the others), SIZE_MAX for an item of one choice */
    uint64_t bytes;     /* of the allocation */
    double error;       /* of the allocation */
    double lower_bound; /* no allocation within the capacity has less error */
    bool exact;         /* the allocation is proven optimal */
    uint64_t nodes;     /* branch-and-bound nodes visited */
} nf_budget_solution;

/* The least and the greatest bytes an allocation can have (each item's smallest, or largest,
 * choice), with overflow refused (NF_ERR_INVALID). */
nf_status nf_budget_range(const nf_budget_item *items, size_t n, uint64_t *min_bytes, uint64_t *max_bytes,
                          nf_error *err);

/* Solves; out's arrays are allocated (nf_budget_solution_free).  A capacity below the range's
 * minimum is NF_ERR_INVALID; node_limit 0 means the default (2^22). */
nf_status nf_budget_solve(const nf_budget_item *items, size_t n, uint64_t capacity, uint64_t node_limit,
                          nf_budget_solution *out, nf_error *err);
void nf_budget_solution_free(nf_budget_solution *s);

/* The measuring pass's effort (docs/recipes.md, "Budgets", *Sampling*): n options of one tensor,
 * option k costing cost[k] (> 0, in any unit) a row, share the allowance (in the same unit) of
 * measuring s sampled rows.  rows[k] is s when every option's s rows fit the allowance;
 * otherwise the costliest options measure fewer: rows[k] = min(s, max(low, floor(L / cost[k])))
 * with low = min(s, floor_rows) and L the largest level whose rows fit (L = 0, every costly
 * option at low, when not even that does).  Integer arithmetic only: the same inputs give the
 * same rows. */
void nf_budget_sample_rows(const uint64_t *cost, size_t n, uint64_t s, uint64_t floor_rows, uint64_t allowance,
                           uint64_t *rows);

#endif
