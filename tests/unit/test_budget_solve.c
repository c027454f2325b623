/* The budget's allocation (lib/src/budget/solve.h, docs/recipes.md "Budgets"): against a brute
 * force over every allocation of small random instances, at every capacity of their range;
 * refusals; determinism; the node limit's fallback. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "budget/solve.h"
#include "support/test_rng.h"

TEST_RNG(0x9E3779B97F4A7C15ull)

static uint64_t rng64(void) { return (uint64_t)rng32() << 32 | rng32(); }

/* The least error of any allocation within cap (INFINITY: none fits), by enumeration. */
static double brute_force(const nf_budget_item *items, size_t n, uint64_t cap)
{
    size_t idx[8] = {0};
    double best = INFINITY;
    for (;;) {
        uint64_t b = 0;
        double e = 0;
        for (size_t i = 0; i < n; i++) {
            b += items[i].choices[idx[i]].bytes;
            e += items[i].choices[idx[i]].error;
        }
        if (b <= cap && e < best) best = e;
        size_t i = 0;
        while (i < n && ++idx[i] == items[i].nchoices) idx[i++] = 0;
        if (i == n) break;
    }
    return best;
}

typedef struct instance {
    nf_budget_choice c[8][8];
    nf_budget_item items[8];
    size_t n;
} instance;

/* Random curves: sometimes convex like quantization, sometimes (nearly) collinear with large
 * bytes (where rounding decides the hull), sometimes shifted by 2^42 bytes (where a bound's
 * lambda * bytes dwarfs the errors it must tell apart), sometimes anything (ties, duplicates, dominated
 * points). */
static void random_instance(instance *in)
{
    in->n = 1 + rng32() % 6;
    for (size_t i = 0; i < in->n; i++) {
        size_t m = 1 + rng32() % 8;
        unsigned shape = rng32() % 3;
        bool shaped = shape == 0;
        double scale = 1 + rng32() % 100;
        for (size_t k = 0; k < m; k++) {
            if (shape == 2) {
                uint64_t b = ((uint64_t)1 << 40) + (uint64_t)(k + 1) * (1000 + rng32() % 3) * 1000003u;
                in->c[i][k].bytes = b;
                in->c[i][k].error = scale * (1e4 - 1e-9 * (double)(b - ((uint64_t)1 << 40))) *
                                    (1 + (rng32() % 2 ? 1e-15 * uniform() : 0));
            } else if (shaped) {
                in->c[i][k].bytes = (k + 1) * (10 + rng32() % 50);
                in->c[i][k].error = scale * ldexp(1.0, -2 * (int)k) * (1 + 0.1 * uniform());
            } else {
                in->c[i][k].bytes = 1 + rng32() % (rng32() % 2 ? 1000 : 10);
                in->c[i][k].error = rng32() % 4 == 0 ? (double)(rng32() % 5) : 100 * (uniform() + 1);
            }
            if (k && rng32() % 8 == 0) in->c[i][k] = in->c[i][k - 1]; /* a duplicate */
        }
        if (rng32() % 8 == 0) /* a huge item: lambda * bytes dwarfs the errors */
            for (size_t k = 0; k < m; k++) in->c[i][k].bytes += (uint64_t)1 << 42;
        in->items[i] = (nf_budget_item){in->c[i], m};
    }
}

static double total_error(const instance *in, const nf_budget_solution *s, uint64_t *bytes)
{
    double e = 0;
    *bytes = 0;
    for (size_t i = 0; i < in->n; i++) {
        cr_assert_lt(s->pick[i], in->items[i].nchoices);
        e += in->items[i].choices[s->pick[i]].error;
        *bytes += in->items[i].choices[s->pick[i]].bytes;
    }
    return e;
}

Test(budget_solve, equals_brute_force_on_small_instances)
{
    size_t inexact = 0;
    for (int t = 0; t < 3000; t++) {
        instance in;
        random_instance(&in);
        uint64_t lo, hi;
        cr_assert_eq(nf_budget_range(in.items, in.n, &lo, &hi, NULL), NF_OK);
        for (int j = 0; j < 6; j++) {
            uint64_t cap = j == 0 ? lo : j == 5 ? hi + 7 : lo + rng64() % (hi - lo + 1);
            nf_budget_solution s;
            nf_error e;
            cr_assert_eq(nf_budget_solve(in.items, in.n, cap, 0, &s, &e), NF_OK, "%s", e.message);
            uint64_t bytes;
            double err = total_error(&in, &s, &bytes);
            double opt = brute_force(in.items, in.n, cap);
            cr_assert_leq(bytes, cap);
            cr_assert_eq(bytes, s.bytes);
            cr_assert(fabs(err - s.error) <= 1e-12 * (1 + err));
            cr_assert(s.exact, "instance %d: not proven with the default node limit", t);
            cr_assert(err <= opt + 1e-9 * (1 + opt), "instance %d cap %llu: %.17g > brute force %.17g", t,
                      (unsigned long long)cap, err, opt);
            cr_assert(s.lower_bound <= err + 1e-9 * (1 + err));
            cr_assert(s.lower_bound <= opt + 1e-9 * (1 + opt));
            if (cap >= hi) /* everything fits: each item at its least error */
                for (size_t i = 0; i < in.n; i++)
                    for (size_t k = 0; k < in.items[i].nchoices; k++)
                        cr_assert_leq(in.items[i].choices[s.pick[i]].error, in.items[i].choices[k].error);
            nf_budget_solution again;
            cr_assert_eq(nf_budget_solve(in.items, in.n, cap, 0, &again, &e), NF_OK);
            cr_assert_eq(memcmp(s.pick, again.pick, in.n * sizeof *s.pick), 0, "instance %d: not deterministic", t);
            cr_assert_eq(memcmp(s.runner_up, again.runner_up, in.n * sizeof *s.runner_up), 0);
            nf_budget_solution_free(&again);
            for (size_t i = 0; i < in.n; i++)
                cr_assert(in.items[i].nchoices == 1
                              ? s.runner_up[i] == SIZE_MAX
                              : s.runner_up[i] < in.items[i].nchoices && s.runner_up[i] != s.pick[i]);
            nf_budget_solution_free(&s);
            /* stopped after one node: still an allocation that fits, and a true lower bound */
            cr_assert_eq(nf_budget_solve(in.items, in.n, cap, 1, &s, &e), NF_OK);
            err = total_error(&in, &s, &bytes);
            cr_assert_leq(bytes, cap);
            cr_assert_leq(s.nodes, 1);
            cr_assert(err >= opt - 1e-9 * (1 + opt));
            cr_assert(s.lower_bound <= err);
            cr_assert(s.lower_bound <= opt + 1e-9 * (1 + opt), "bound %.17g above the optimum %.17g", s.lower_bound,
                      opt);
            inexact += !s.exact;
            nf_budget_solution_free(&s);
        }
    }
    cr_assert_gt(inexact, 0, "the node limit never stopped a search: the fallback is untested");
}

Test(budget_solve, everything_fits_takes_the_least_error)
{
    nf_budget_choice a[3] = {{10, 5.0}, {20, 1.0}, {30, 2.0}}, b[2] = {{5, 1.0}, {6, 0.5}};
    nf_budget_item items[2] = {{a, 3}, {b, 2}};
    nf_budget_solution s;
    cr_assert_eq(nf_budget_solve(items, 2, 1000, 0, &s, NULL), NF_OK);
    cr_assert_eq(s.pick[0], 1);
    cr_assert_eq(s.pick[1], 1);
    cr_assert(s.exact);
    cr_assert_eq(s.error, 1.5);
    nf_budget_solution_free(&s);
}

Test(budget_solve, refusals)
{
    nf_budget_choice a[2] = {{10, 5.0}, {20, 1.0}};
    nf_budget_item items[2] = {{a, 2}, {a, 2}};
    nf_budget_solution s;
    nf_error e;
    cr_assert_eq(nf_budget_solve(items, 2, 19, 0, &s, &e), NF_ERR_INVALID);
    cr_assert(strstr(e.message, "20 to 40 bytes"), "%s", e.message);
    nf_budget_choice big[1] = {{UINT64_MAX - 5, 1.0}};
    nf_budget_item over[2] = {{big, 1}, {big, 1}};
    cr_assert_eq(nf_budget_solve(over, 2, UINT64_MAX, 0, &s, &e), NF_ERR_INVALID);
    cr_assert(strstr(e.message, "2^64"), "%s", e.message);
    nf_budget_choice bad[1] = {{1, NAN}}, neg[1] = {{1, -1.0}};
    nf_budget_item nan_item[1] = {{bad, 1}}, neg_item[1] = {{neg, 1}}, none[1] = {{a, 0}};
    cr_assert_eq(nf_budget_solve(nan_item, 1, 10, 0, &s, &e), NF_ERR_INVALID);
    cr_assert(strstr(e.message, "item 0 choice 0"), "%s", e.message);
    nf_budget_choice later[2] = {{1, 1.0}, {2, -0.5}};
    nf_budget_item neg_later[2] = {{a, 2}, {later, 2}};
    cr_assert_eq(nf_budget_solve(neg_later, 2, 100, 0, &s, &e), NF_ERR_INVALID);
    cr_assert(strstr(e.message, "item 1 choice 1"), "%s", e.message);
    nf_budget_choice inf[1] = {{1, INFINITY}};
    nf_budget_item inf_item[1] = {{inf, 1}};
    cr_assert_eq(nf_budget_solve(inf_item, 1, 10, 0, &s, &e), NF_ERR_INVALID);
    cr_assert_eq(nf_budget_solve(neg_item, 1, 10, 0, &s, &e), NF_ERR_INVALID);
    cr_assert_eq(nf_budget_solve(none, 1, 10, 0, &s, &e), NF_ERR_INVALID);
    cr_assert(strstr(e.message, "item 0"), "%s", e.message);
    cr_assert_eq(nf_budget_solve(NULL, 3, 10, 0, &s, &e), NF_ERR_INVALID);
    uint64_t lo, hi;
    nf_budget_choice wide[2] = {{1, 1.0}, {UINT64_MAX - 5, 0.0}};
    nf_budget_item wide_items[2] = {{wide, 2}, {wide, 2}};
    cr_assert_eq(nf_budget_range(wide_items, 2, &lo, &hi, &e), NF_ERR_INVALID, "the maximum's sum overflows");
    cr_assert(strstr(e.message, "2^64"), "%s", e.message);
    cr_assert_eq(nf_budget_solve(wide_items, 2, 10, 0, &s, &e), NF_ERR_INVALID);
    cr_assert_eq(nf_budget_solve(NULL, 0, 0, 0, &s, &e), NF_OK); /* nothing to allocate */
    cr_assert(s.exact);
    nf_budget_solution_free(&s);
}

/* Stopped after one node on an instance too large for a brute force: the allocation fits, is no
 * better than the proven optimum and no worse than the relaxation's bound plus one item's whole
 * range of error (the greedy stops short of the relaxation by part of one step only). */
Test(budget_solve, node_limit_one_on_a_larger_instance)
{
    enum { N = 60, M = 8 };
    static nf_budget_choice c[N][M];
    nf_budget_item items[N];
    double widest = 0;
    for (size_t i = 0; i < N; i++) {
        double lo = INFINITY, hi = 0;
        for (size_t k = 0; k < M; k++) {
            c[i][k].bytes = 1 + rng32() % 1000;
            c[i][k].error = 1000 * (1 + uniform()) / (double)(1 + c[i][k].bytes % 97);
            lo = fmin(lo, c[i][k].error);
            hi = fmax(hi, c[i][k].error);
        }
        widest = fmax(widest, hi - lo);
        items[i] = (nf_budget_item){c[i], M};
    }
    uint64_t lo, hi;
    cr_assert_eq(nf_budget_range(items, N, &lo, &hi, NULL), NF_OK);
    size_t inexact = 0;
    for (int j = 1; j < 10; j++) {
        uint64_t cap = lo + (hi - lo) * (uint64_t)j / 10;
        nf_budget_solution one, full;
        cr_assert_eq(nf_budget_solve(items, N, cap, 1, &one, NULL), NF_OK);
        cr_assert_eq(nf_budget_solve(items, N, cap, 0, &full, NULL), NF_OK);
        cr_assert(full.exact, "cap %llu: not proven in %llu nodes", (unsigned long long)cap,
                  (unsigned long long)full.nodes);
        cr_assert_leq(one.bytes, cap);
        cr_assert_leq(one.nodes, 1);
        cr_assert(one.lower_bound <= one.error);
        cr_assert(one.lower_bound <= full.error * (1 + 1e-12), "bound %.17g above the optimum %.17g", one.lower_bound,
                  full.error);
        cr_assert(one.error >= full.error * (1 - 1e-12));
        cr_assert(one.error - one.lower_bound <= widest * (1 + 1e-9), "gap %.17g wider than one item's range %.17g",
                  one.error - one.lower_bound, widest);
        inexact += !one.exact;
        nf_budget_solution_free(&one);
        nf_budget_solution_free(&full);
    }
    cr_assert_gt(inexact, 0, "one node always sufficed: the fallback is untested");
}

/* A model-shaped instance: 500 tensors, 8 candidates each (bytes ~ bits, error ~ 4^-bits with
 * noise, the two methods a few percent apart): the allocation fits, its figures are its picks',
 * it is the same twice, and it is no worse than any uniform choice that fits. */
Test(budget_solve, model_sized_and_deterministic)
{
    enum { N = 500, M = 8 };
    static nf_budget_choice c[N][M];
    nf_budget_item items[N];
    const double bits[4] = {4.25, 5.25, 6.25, 8.5};
    double widest = 0;
    for (size_t i = 0; i < N; i++) {
        uint64_t elems = (uint64_t)(1 + rng32() % 8) << 20;
        double scale = ldexp(1.0 + uniform(), (int)(rng32() % 8));
        for (size_t k = 0; k < M; k++) {
            double b = bits[k / 2];
            c[i][k].bytes = (uint64_t)(b * (double)elems / 8);
            c[i][k].error = scale * (double)elems * pow(4.0, -b) * (1 + 0.05 * uniform()) *
                            (k % 2 ? 0.93 + 0.02 * uniform() : 1.0);
            widest = fmax(widest, c[i][k].error); /* an item's range of error is at most its largest */
        }
        items[i] = (nf_budget_item){c[i], M};
    }
    uint64_t lo, hi;
    cr_assert_eq(nf_budget_range(items, N, &lo, &hi, NULL), NF_OK);
    for (int j = 1; j < 8; j++) {
        uint64_t cap = lo + (hi - lo) * (uint64_t)j / 8;
        nf_budget_solution s, again;
        cr_assert_eq(nf_budget_solve(items, N, cap, 0, &s, NULL), NF_OK);
        cr_assert_eq(nf_budget_solve(items, N, cap, 0, &again, NULL), NF_OK);
        cr_assert_leq(s.bytes, cap);
        cr_assert_eq(memcmp(s.pick, again.pick, N * sizeof *s.pick), 0);
        cr_assert(s.lower_bound <= s.error);
        /* proven or not (the search's bound is L's, weaker than a node's own relaxation, and some
         * capacities take a million nodes), the gap is at most part of one step of one item */
        cr_assert(s.exact || s.error - s.lower_bound <= widest * (1 + 1e-9), "gap %.17g", s.error - s.lower_bound);
        uint64_t bytes = 0;
        double error = 0;
        for (size_t i = 0; i < N; i++) {
            cr_assert_lt(s.pick[i], M);
            bytes += c[i][s.pick[i]].bytes;
            error += c[i][s.pick[i]].error;
        }
        cr_assert_eq(bytes, s.bytes);
        cr_assert(fabs(error - s.error) <= 1e-9 * error);
        for (size_t k = 0; k < M; k++) {
            uint64_t ub = 0;
            double ue = 0;
            for (size_t i = 0; i < N; i++) {
                ub += c[i][k].bytes;
                ue += c[i][k].error;
            }
            if (ub <= cap) cr_assert(s.error <= ue, "uniform candidate %zu beats the allocation", k);
        }
        nf_budget_solution_free(&s);
        nf_budget_solution_free(&again);
    }
}

/* The measuring pass's effort (nf_budget_sample_rows): every option measures s rows when they fit
 * the allowance; otherwise the rows cost at most the allowance (the floors aside), cheap options
 * keep s rows while costly ones give way, no option is under the floor, and the level is the
 * largest that fits (one more unit would not). */
static uint64_t effort(const uint64_t *cost, const uint64_t *rows, size_t n)
{
    uint64_t e = 0;
    for (size_t k = 0; k < n; k++) e += cost[k] * rows[k];
    return e;
}

Test(budget_solve, sample_rows_share_the_allowance)
{
    const uint64_t cost[5] = {1, 1, 4, 40, 40};
    uint64_t rows[5];
    nf_budget_sample_rows(cost, 5, 128, 16, 1000000, rows);
    for (size_t k = 0; k < 5; k++) cr_assert_eq(rows[k], 128);
    /* 2 x 128 + 4 x 128 = 768 for the cheap ones; 8192 in all leaves the two costly ones 92 rows each */
    nf_budget_sample_rows(cost, 5, 128, 16, 8192, rows);
    cr_assert(rows[0] == 128 && rows[1] == 128 && rows[2] == 128, "%llu %llu %llu", (unsigned long long)rows[0],
              (unsigned long long)rows[1], (unsigned long long)rows[2]);
    cr_assert(rows[3] == 92 && rows[4] == 92, "%llu %llu", (unsigned long long)rows[3], (unsigned long long)rows[4]);
    cr_assert_leq(effort(cost, rows, 5), 8192);
    /* too little for even the floors: every costly option at the floor, the cheap ones too */
    nf_budget_sample_rows(cost, 5, 128, 16, 100, rows);
    for (size_t k = 0; k < 5; k++) cr_assert_eq(rows[k], 16);
    /* a floor above s is s; no cost is free of the allowance but a zero cost (every row) */
    nf_budget_sample_rows(cost, 5, 8, 16, 0, rows);
    for (size_t k = 0; k < 5; k++) cr_assert_eq(rows[k], 8);
    const uint64_t zero[2] = {0, 0};
    nf_budget_sample_rows(zero, 2, 4096, 16, 0, rows);
    cr_assert(rows[0] == 4096 && rows[1] == 4096);
    /* random instances: within the allowance when the floors fit it, and the largest level */
    for (int t = 0; t < 2000; t++) {
        uint64_t c[6], r[6], r2[6];
        size_t n = 1 + rng32() % 6;
        uint64_t s = 1 + rng32() % 300, fl = rng32() % 40, allow = rng64() % 20000;
        for (size_t k = 0; k < n; k++) c[k] = 1 + rng32() % 60;
        nf_budget_sample_rows(c, n, s, fl, allow, r);
        uint64_t low = fl < s ? fl : s, floors = 0;
        for (size_t k = 0; k < n; k++) {
            cr_assert(r[k] >= low && r[k] <= s);
            floors += c[k] * low;
        }
        if (floors <= allow) cr_assert_leq(effort(c, r, n), allow);
        for (size_t k = 0; k < n; k++) /* a cheaper option never measures fewer rows */
            for (size_t j = 0; j < n; j++)
                if (c[j] <= c[k]) cr_assert_geq(r[j], r[k]);
        nf_budget_sample_rows(c, n, s, fl, allow + 1000000, r2); /* more allowance: never fewer rows */
        for (size_t k = 0; k < n; k++) cr_assert_geq(r2[k], r[k]);
    }
}
