/* The budget's allocation (docs/recipes.md, "Budgets"): a multiple-choice knapsack, solved in
 * four steps.
 *
 * 1. Each item's choices lose the dominated ones (another as small and as good, one of the two
 *    strictly); the rest, by bytes, fall in error.  Their lower convex hull is the item's curve
 *    of error versus bytes.
 * 2. The greedy on the hulls: every item starts at its smallest choice; the hull steps of every
 *    item, steepest error decrease per byte first, are taken while they fit.  The first step that
 *    does not fit fixes the Lagrange multiplier lambda (its decrease per byte) and the linear
 *    relaxation's optimum (the allocation so far plus that step's fitting fraction), a lower bound
 *    of every allocation within the capacity; later steps of other items are still taken when
 *    they fit.  The result is the incumbent.
 * 3. Reduction: with r = error + lambda * bytes, L = sum of each item's least r - lambda * C is a
 *    lower bound too, and one with item i at choice k is L + r(i,k) - min r(i).  (Each r is
 *    computed less lambda times its item's least bytes, and C less their sum: the same values,
 *    without a huge item's lambda * bytes cancelling against the capacity.)  A choice whose bound
 *    exceeds the incumbent's error cannot be in a better allocation: it is dropped.  The
 *    incumbent's own choices always stay (their bound is at most its error).
 * 4. Branch and bound, depth first with an explicit stack, over the items left with more than
 *    one choice (most choices first, then the widest spread of r), each item's choices by r: a
 *    node is cut when the bytes cannot fit (the rest at their least) or its Lagrangian bound (the
 *    fixed choices' r, the rest's least r, less lambda * C) cannot beat the best allocation found.
 *    A search that ends proves the best allocation optimal (up to 1e-12 of the bounds' magnitude,
 *    the errors plus lambda times the bytes above each item's least: allocations closer than that
 *    count as ties, so rounding neither drops a better allocation nor lets ties multiply the
 *    nodes); one stopped at the node limit keeps the best found, never worse than the greedy's,
 *    and reports the larger of the two lower bounds (the relaxation's and L), so the gap is known.
 * An item's runner-up is its other choice of least r (then fewer bytes, then lower index).
 * Only the inputs decide anything: no clock, no threads. */
#include "budget/solve.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "common/fail.h"

#define DEFAULT_NODE_LIMIT ((uint64_t)1 << 22)
/* Relative to the size of the terms a bound adds up (the errors and lambda * bytes): bounds and
 * errors are sums of doubles, so two allocations closer than this are ties, a choice is dropped
 * only when its bound exceeds the incumbent by more than this (rounding never drops a choice of
 * a better allocation), and a node is cut when it cannot improve by more than this. */
#define TIE 1e-12

typedef struct item_state {
    size_t *nd;    /* non-dominated choices, bytes ascending */
    uint64_t base; /* the least bytes of any choice (nd[0]'s) */
    size_t nnd;
    size_t *hull; /* positions in nd of the hull's points */
    size_t nhull;
    size_t *kept; /* after reduction, by reduced cost */
    size_t nkept;
    double minr;
    uint64_t minbytes; /* least bytes among kept */
} item_state;

typedef struct step {
    size_t item, h; /* hull point h -> h + 1 */
    double slope;   /* error change per byte (< 0) */
} step;

/* Sort keys (qsort has no context argument: each sort copies what it compares). */
typedef struct key {
    double a; /* error, or reduced cost */
    uint64_t bytes;
    size_t index;
} key;

static int cmp_bytes_first(const void *x, const void *y)
{
    const key *p = x, *q = y;
    if (p->bytes != q->bytes) return p->bytes < q->bytes ? -1 : 1;
    if (p->a != q->a) return p->a < q->a ? -1 : 1;
    return p->index < q->index ? -1 : p->index > q->index;
}

static int cmp_cost_first(const void *x, const void *y)
{
    const key *p = x, *q = y;
    if (p->a != q->a) return p->a < q->a ? -1 : 1;
    if (p->bytes != q->bytes) return p->bytes < q->bytes ? -1 : 1;
    return p->index < q->index ? -1 : p->index > q->index;
}

static int cmp_step(const void *a, const void *b)
{
    const step *x = a, *y = b;
    if (x->slope != y->slope) return x->slope < y->slope ? -1 : 1;
    if (x->item != y->item) return x->item < y->item ? -1 : 1;
    return x->h < y->h ? -1 : x->h > y->h;
}

/* The reduced cost error + lambda * bytes, less lambda times the item's least bytes (base): the
 * same within an item up to a constant, but the bounds then add up lambda times the bytes above
 * each item's least and subtract lambda times the capacity above the range's least, so a huge
 * item does not cancel catastrophically against the capacity and drown the small ones' errors. */
static double reduced(const nf_budget_choice *c, uint64_t base, double lambda)
{
    return c->error + lambda * (double)(c->bytes - base);
}

/* Error change per byte from a to b (b has more bytes: the non-dominated choices are strictly
 * increasing in bytes). */
static double slope(const nf_budget_choice *a, const nf_budget_choice *b)
{
    return (b->error - a->error) / (double)(b->bytes - a->bytes);
}

/* malloc of count elements, NULL when count * size overflows (as when out of memory). */
static void *alloc_array(size_t count, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(count ? count : 1, size, &total)) return NULL;
    return malloc(total);
}

/* ---------------------------------------------------------------- checks */
static nf_status check_items(const nf_budget_item *items, size_t n, nf_error *err)
{
    for (size_t i = 0; i < n; i++) {
        if (items[i].nchoices == 0 || !items[i].choices)
            return nf_error_set(err, NF_ERR_INVALID, "budget: item %zu has no choice", i);
        for (size_t k = 0; k < items[i].nchoices; k++) {
            double e = items[i].choices[k].error;
            if (!isfinite(e) || e < 0)
                return nf_error_set(err, NF_ERR_INVALID,
                                    "budget: item %zu choice %zu: error %g is not a finite "
                                    "number >= 0",
                                    i, k, e);
        }
    }
    return NF_OK;
}

nf_status nf_budget_range(const nf_budget_item *items, size_t n, uint64_t *min_bytes, uint64_t *max_bytes,
                          nf_error *err)
{
    uint64_t lo = 0, hi = 0;
    for (size_t i = 0; i < n; i++) {
        if (items[i].nchoices == 0 || !items[i].choices)
            return nf_error_set(err, NF_ERR_INVALID, "budget: item %zu has no choice", i);
        uint64_t a = UINT64_MAX, b = 0;
        for (size_t k = 0; k < items[i].nchoices; k++) {
            uint64_t v = items[i].choices[k].bytes;
            a = v < a ? v : a;
            b = v > b ? v : b;
        }
        if (!nf_add_u64(lo, a, &lo) || !nf_add_u64(hi, b, &hi))
            return nf_error_set(err, NF_ERR_INVALID, "budget: the choices' bytes add up to more than 2^64");
    }
    *min_bytes = lo;
    *max_bytes = hi;
    return NF_OK;
}

/* ---------------------------------------------------------------- steps 1 and 2 */
/* The non-dominated choices and their lower convex hull. */
static bool curve(const nf_budget_item *it, item_state *s)
{
    size_t n = it->nchoices;
    key *order = alloc_array(n, sizeof *order);
    s->nd = alloc_array(n, sizeof *s->nd);
    s->hull = alloc_array(n, sizeof *s->hull);
    s->kept = alloc_array(n, sizeof *s->kept);
    if (!order || !s->nd || !s->hull || !s->kept) {
        free(order);
        return false;
    }
    for (size_t k = 0; k < n; k++) order[k] = (key){it->choices[k].error, it->choices[k].bytes, k};
    qsort(order, n, sizeof *order, cmp_bytes_first);
    for (size_t k = 0; k < n; k++) {
        /* by bytes, then error: a choice is kept only when it is better than every smaller one */
        if (s->nnd == 0 || order[k].a < it->choices[s->nd[s->nnd - 1]].error) s->nd[s->nnd++] = order[k].index;
    }
    free(order);
    s->base = it->choices[s->nd[0]].bytes;
    const nf_budget_choice *c = it->choices;
    for (size_t k = 0; k < s->nnd; k++) {
        /* Drop the last point while the step into the new one is not strictly less steep than the
         * step into the last one (the last lies on or above the chord).  The test compares the very
         * slopes the greedy sorts by, so an item's steps come out of the sort in hull order even
         * when rounding makes nearly collinear points disagree with exact arithmetic: a step taken
         * out of order would be lost and the relaxation's bound would no longer be a bound. */
        while (s->nhull >= 2) {
            const nf_budget_choice *a = &c[s->nd[s->hull[s->nhull - 2]]], *b = &c[s->nd[s->hull[s->nhull - 1]]],
                                   *p = &c[s->nd[k]];
            if (slope(a, b) < slope(b, p)) break;
            s->nhull--;
        }
        s->hull[s->nhull++] = k;
    }
    return true;
}

static double hull_slope(const nf_budget_item *it, const item_state *s, size_t h)
{
    return slope(&it->choices[s->nd[s->hull[h]]], &it->choices[s->nd[s->hull[h + 1]]]);
}

/* The greedy: pick[i] (a choice index), lambda and the relaxation's bound. */
static bool greedy(const nf_budget_item *items, size_t n, item_state *st, uint64_t cap, size_t *pick, double *lambda,
                   double *lp, bool *all_fit)
{
    size_t nsteps = 0;
    for (size_t i = 0; i < n; i++) nsteps += st[i].nhull - 1;
    step *steps = alloc_array(nsteps, sizeof *steps);
    bool *blocked = calloc(n ? n : 1, sizeof *blocked);
    size_t *at = calloc(n ? n : 1, sizeof *at);
    if (!steps || !blocked || !at) {
        free(steps);
        free(blocked);
        free(at);
        return false;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t h = 0; h + 1 < st[i].nhull; h++) steps[m++] = (step){i, h, hull_slope(&items[i], &st[i], h)};
    qsort(steps, m, sizeof *steps, cmp_step);
    uint64_t bytes = 0;
    double error = 0;
    for (size_t i = 0; i < n; i++) {
        const nf_budget_choice *c = &items[i].choices[st[i].nd[st[i].hull[0]]];
        bytes += c->bytes; /* <= cap: checked by the caller */
        error += c->error;
    }
    *all_fit = true;
    *lambda = 0;
    for (size_t k = 0; k < m; k++) {
        const step *sp = &steps[k];
        if (blocked[sp->item] || at[sp->item] != sp->h) continue;
        const nf_budget_item *it = &items[sp->item];
        const nf_budget_choice *a = &it->choices[st[sp->item].nd[st[sp->item].hull[sp->h]]];
        const nf_budget_choice *b = &it->choices[st[sp->item].nd[st[sp->item].hull[sp->h + 1]]];
        uint64_t db = b->bytes - a->bytes;
        if (cap - bytes >= db) {
            bytes += db;
            error += b->error - a->error;
            at[sp->item]++;
            continue;
        }
        if (*all_fit) { /* the first that does not fit: the relaxation's optimum takes part of it */
            *all_fit = false;
            *lambda = -sp->slope;
            *lp = error + (b->error - a->error) * ((double)(cap - bytes) / (double)db);
        }
        blocked[sp->item] = true;
    }
    if (*all_fit) *lp = error;
    for (size_t i = 0; i < n; i++) pick[i] = st[i].nd[st[i].hull[at[i]]];
    free(steps);
    free(blocked);
    free(at);
    return true;
}

/* ---------------------------------------------------------------- steps 3 and 4 */
typedef struct search {
    const nf_budget_item *items;
    item_state *st;
    size_t *core; /* items with more than one kept choice, in search order */
    size_t ncore;
    uint64_t *suf_bytes; /* [ncore + 1]: least bytes of core[d..] */
    double *suf_r;       /* [ncore + 1]: least reduced cost of core[d..] */
    double lambda;
    double lambda_spare; /* lambda * (C - the range's least): what a bound subtracts */
    double scale;        /* lambda_spare + the items' least reduced costs: the bounds' magnitude */
    uint64_t cap;
    size_t *best, *cur; /* per item */
    double best_error;
    uint64_t nodes, limit;
} search;

/* The kept choices by reduced cost (the search tries the most promising first). */
static bool sort_kept(const nf_budget_item *it, item_state *is, double lambda)
{
    key *k = alloc_array(is->nkept, sizeof *k);
    if (!k) return false;
    for (size_t j = 0; j < is->nkept; j++)
        k[j] = (key){reduced(&it->choices[is->kept[j]], is->base, lambda), it->choices[is->kept[j]].bytes, is->kept[j]};
    qsort(k, is->nkept, sizeof *k, cmp_cost_first);
    for (size_t j = 0; j < is->nkept; j++) is->kept[j] = k[j].index;
    free(k);
    return true;
}

typedef struct core_key {
    size_t nkept;
    double spread; /* greatest minus least reduced cost among the kept */
    size_t index;
} core_key;

static int cmp_core(const void *x, const void *y)
{
    const core_key *p = x, *q = y;
    if (p->nkept != q->nkept) return p->nkept > q->nkept ? -1 : 1;
    if (p->spread != q->spread) return p->spread > q->spread ? -1 : 1;
    return p->index < q->index ? -1 : p->index > q->index;
}

/* The core's order: the items with the most choices first, then the widest spread of reduced
 * cost (they split the search most, and their choice moves the bound most, so cuts come early);
 * the item index settles ties, so the order depends on nothing but the items. */
static bool sort_core(const nf_budget_item *items, const item_state *st, search *s)
{
    core_key *k = alloc_array(s->ncore, sizeof *k);
    if (!k) return false;
    for (size_t j = 0; j < s->ncore; j++) {
        const item_state *is = &st[s->core[j]];
        /* kept is by reduced cost: its first and last are the least and the greatest */
        double lo = reduced(&items[s->core[j]].choices[is->kept[0]], is->base, s->lambda);
        double hi = reduced(&items[s->core[j]].choices[is->kept[is->nkept - 1]], is->base, s->lambda);
        k[j] = (core_key){is->nkept, hi - lo, s->core[j]};
    }
    qsort(k, s->ncore, sizeof *k, cmp_core);
    for (size_t j = 0; j < s->ncore; j++) s->core[j] = k[j].index;
    free(k);
    return true;
}

/* How much less than the best an allocation must have to count as better (see TIE). */
static double tie(const search *s) { return TIE * (s->best_error + s->scale); }

/* Depth first over the core items with an explicit stack (depth d holds core[d]'s next choice);
 * *done when it ran to the end rather than to the node limit.  False when out of memory. */
static bool branch(search *s, uint64_t fixed_bytes, double fixed_error, double fixed_r, bool *done)
{
    size_t d = 0;
    size_t *ptr = calloc(s->ncore + 1, sizeof *ptr); /* the next kept choice to try, per depth */
    uint64_t *bytes = calloc(s->ncore + 1, sizeof *bytes);
    double *error = calloc(s->ncore + 1, sizeof *error), *rsum = calloc(s->ncore + 1, sizeof *rsum);
    if (!ptr || !bytes || !error || !rsum) {
        free(ptr);
        free(bytes);
        free(error);
        free(rsum);
        return false;
    }
    bytes[0] = fixed_bytes;
    error[0] = fixed_error;
    rsum[0] = fixed_r;
    *done = true;
    for (;;) {
        if (d == s->ncore) { /* a full allocation that fits */
            if (error[d] < s->best_error - tie(s)) {
                s->best_error = error[d];
                for (size_t k = 0; k < s->ncore; k++) s->best[s->core[k]] = s->cur[s->core[k]];
            }
            if (d == 0) break;
            d--;
            continue;
        }
        size_t i = s->core[d];
        const item_state *is = &s->st[i];
        if (ptr[d] == is->nkept) { /* every choice of this item tried */
            ptr[d] = 0;
            if (d == 0) break;
            d--;
            continue;
        }
        if (++s->nodes > s->limit) {
            s->nodes--; /* the node not visited */
            *done = false;
            break;
        }
        size_t k = is->kept[ptr[d]++];
        const nf_budget_choice *c = &s->items[i].choices[k];
        uint64_t nb;
        if (!nf_add_u64(bytes[d], c->bytes, &nb) || nb > s->cap || s->cap - nb < s->suf_bytes[d + 1]) continue;
        double r = rsum[d] + reduced(c, is->base, s->lambda);
        double bound = r + s->suf_r[d + 1] - s->lambda_spare;
        if (bound >= s->best_error - tie(s)) {
            /* the kept choices are by reduced cost: the later ones cannot do better */
            ptr[d] = is->nkept;
            continue;
        }
        s->cur[i] = k;
        bytes[d + 1] = nb;
        error[d + 1] = error[d] + c->error;
        rsum[d + 1] = r;
        d++;
    }
    free(ptr);
    free(bytes);
    free(error);
    free(rsum);
    return true;
}

static size_t runner_up(const nf_budget_item *it, uint64_t base, size_t pick, double lambda)
{
    size_t best = SIZE_MAX;
    for (size_t k = 0; k < it->nchoices; k++) {
        if (k == pick) continue;
        if (best == SIZE_MAX) {
            best = k;
            continue;
        }
        double rk = reduced(&it->choices[k], base, lambda), rb = reduced(&it->choices[best], base, lambda);
        if (rk < rb || (rk == rb && it->choices[k].bytes < it->choices[best].bytes)) best = k;
    }
    return best;
}

/* ---------------------------------------------------------------- the solver */
void nf_budget_solution_free(nf_budget_solution *s)
{
    if (!s) return;
    free(s->pick);
    free(s->runner_up);
    memset(s, 0, sizeof *s);
}

static void free_states(item_state *st, size_t n)
{
    for (size_t i = 0; st && i < n; i++) {
        free(st[i].nd);
        free(st[i].hull);
        free(st[i].kept);
    }
    free(st);
}

/* The bytes and error of an allocation. */
static void totals(const nf_budget_item *items, size_t n, const size_t *pick, uint64_t *bytes, double *error)
{
    *bytes = 0; /* no overflow: at most the range's maximum, checked */
    *error = 0;
    for (size_t i = 0; i < n; i++) {
        *bytes += items[i].choices[pick[i]].bytes;
        *error += items[i].choices[pick[i]].error;
    }
}

/* Step 3: each item's kept choices (by reduced cost), those whose Lagrangian bound does not
 * exceed the incumbent's error; sets L (the Lagrangian bound) and s->scale. */
static bool reduce(const nf_budget_item *items, size_t n, item_state *st, const size_t *pick, double error, search *s,
                   double *L)
{
    double sum_minr = 0;
    uint64_t least = 0; /* the range's least: no overflow, checked */
    for (size_t i = 0; i < n; i++) {
        least += st[i].base;
        st[i].minr = INFINITY;
        for (size_t k = 0; k < st[i].nnd; k++) {
            double r = reduced(&items[i].choices[st[i].nd[k]], st[i].base, s->lambda);
            st[i].minr = r < st[i].minr ? r : st[i].minr;
        }
        sum_minr += st[i].minr;
    }
    s->lambda_spare = s->lambda * (double)(s->cap - least); /* cap >= least: checked by the caller */
    *L = sum_minr - s->lambda_spare;
    s->scale = sum_minr + s->lambda_spare;
    double slack = TIE * (error + s->scale); /* conservative: rounding never drops a better choice */
    for (size_t i = 0; i < n; i++) {
        st[i].minbytes = UINT64_MAX;
        for (size_t k = 0; k < st[i].nnd; k++) {
            size_t c = st[i].nd[k];
            double bound = *L + (reduced(&items[i].choices[c], st[i].base, s->lambda) - st[i].minr);
            bool keep = c == pick[i] || bound <= error + slack;
            if (!keep) continue;
            st[i].kept[st[i].nkept++] = c;
            if (items[i].choices[c].bytes < st[i].minbytes) st[i].minbytes = items[i].choices[c].bytes;
        }
        if (!sort_kept(&items[i], &st[i], s->lambda)) return false;
    }
    return true;
}

static void free_search(search *s)
{
    free(s->core);
    free(s->suf_bytes);
    free(s->suf_r);
    free(s->best);
    free(s->cur);
}

/* Step 4: the items of one kept choice are fixed, the others searched; pick becomes the best
 * allocation found.  False when out of memory. */
static bool search_core(const nf_budget_item *items, size_t n, search *s, size_t *pick, double error, bool *done)
{
    const item_state *st = s->st;
    s->core = alloc_array(n, sizeof *s->core);
    s->suf_bytes = calloc(n + 1, sizeof *s->suf_bytes);
    s->suf_r = calloc(n + 1, sizeof *s->suf_r);
    s->best = alloc_array(n, sizeof *s->best);
    s->cur = alloc_array(n, sizeof *s->cur);
    if (!s->core || !s->suf_bytes || !s->suf_r || !s->best || !s->cur) return false;
    uint64_t fixed_bytes = 0;
    double fixed_error = 0, fixed_r = 0;
    for (size_t i = 0; i < n; i++) {
        s->best[i] = s->cur[i] = pick[i];
        if (st[i].nkept > 1) {
            s->core[s->ncore++] = i;
            continue;
        }
        /* the one kept choice is the incumbent's (reduce keeps it), so the sums cannot overflow */
        fixed_bytes += items[i].choices[pick[i]].bytes;
        fixed_error += items[i].choices[pick[i]].error;
        fixed_r += reduced(&items[i].choices[pick[i]], st[i].base, s->lambda);
    }
    if (!sort_core(items, st, s)) return false;
    for (size_t d = s->ncore; d-- > 0;) {
        const item_state *is = &st[s->core[d]];
        s->suf_bytes[d] = s->suf_bytes[d + 1] + is->minbytes;
        s->suf_r[d] = s->suf_r[d + 1] + reduced(&items[s->core[d]].choices[is->kept[0]], is->base, s->lambda);
    }
    s->best_error = error;
    if (!branch(s, fixed_bytes, fixed_error, fixed_r, done)) return false;
    memcpy(pick, s->best, n * sizeof *pick);
    return true;
}

nf_status nf_budget_solve(const nf_budget_item *items, size_t n, uint64_t capacity, uint64_t node_limit,
                          nf_budget_solution *out, nf_error *err)
{
    memset(out, 0, sizeof *out);
    if (n && !items) return nf_error_set(err, NF_ERR_INVALID, "budget: %zu items given as none", n);
    uint64_t lo = 0, hi = 0;
    NF_TRY(check_items(items, n, err));
    NF_TRY(nf_budget_range(items, n, &lo, &hi, err));
    if (capacity < lo)
        return nf_error_set(err, NF_ERR_INVALID,
                            "budget: %llu bytes are below the least allocation (%llu to %llu bytes)",
                            (unsigned long long)capacity, (unsigned long long)lo, (unsigned long long)hi);
    item_state *st = calloc(n ? n : 1, sizeof *st);
    out->pick = calloc(n ? n : 1, sizeof *out->pick);
    out->runner_up = calloc(n ? n : 1, sizeof *out->runner_up);
    search s = {.items = items, .st = st, .cap = capacity, .limit = node_limit ? node_limit : DEFAULT_NODE_LIMIT};
    bool ok = st && out->pick && out->runner_up;
    for (size_t i = 0; ok && i < n; i++) ok = curve(&items[i], &st[i]);
    double lp = 0;
    bool all_fit = true;
    if (ok) ok = greedy(items, n, st, capacity, out->pick, &s.lambda, &lp, &all_fit);
    if (!ok) goto nomem;
    uint64_t bytes;
    double error;
    totals(items, n, out->pick, &bytes, &error);
    out->exact = true;
    /* Everything fits: each item at its least error (its hull's last point) is optimal, and the
     * multiplier stays 0. */
    if (!all_fit) {
        double L;
        ok = reduce(items, n, st, out->pick, error, &s, &L) && search_core(items, n, &s, out->pick, error, &out->exact);
        free_search(&s);
        if (!ok) goto nomem;
        out->nodes = s.nodes;
        totals(items, n, out->pick, &bytes, &error);
        if (L > lp) lp = L; /* both are lower bounds: the larger says more */
    }
    out->bytes = bytes;
    out->error = error;
    out->lower_bound = out->exact ? error : (lp < error ? lp : error);
    for (size_t i = 0; i < n; i++) out->runner_up[i] = runner_up(&items[i], st[i].base, out->pick[i], s.lambda);
    free_states(st, n);
    return NF_OK;
nomem:
    free_states(st, n);
    nf_budget_solution_free(out);
    return nf_common_nomem(err);
}

/* ---------------------------------------------------------------- the measuring pass's effort */
__extension__ typedef unsigned __int128 u128;

/* The rows of option k at level L (a row costs cost > 0). */
static uint64_t rows_at(uint64_t cost, uint64_t s, uint64_t low, u128 level)
{
    if (cost == 0) return s; /* free: every sampled row */
    u128 r = level / cost;
    return r >= s ? s : r <= low ? low : (uint64_t)r;
}

/* What the options' rows cost at level L (at most n * s * max cost: 128 bits hold it). */
static u128 effort_at(const uint64_t *cost, size_t n, uint64_t s, uint64_t low, u128 level)
{
    u128 sum = 0;
    for (size_t k = 0; k < n; k++) sum += (u128)rows_at(cost[k], s, low, level) * cost[k];
    return sum;
}

void nf_budget_sample_rows(const uint64_t *cost, size_t n, uint64_t s, uint64_t floor_rows, uint64_t allowance,
                           uint64_t *rows)
{
    const uint64_t low = floor_rows < s ? floor_rows : s;
    u128 hi = 0; /* the level at which every option measures s rows */
    for (size_t k = 0; k < n; k++)
        if ((u128)s * cost[k] > hi) hi = (u128)s * cost[k];
    u128 lo = 0; /* the largest level that fits lies in [lo, hi] (lo = 0 when none does) */
    if (effort_at(cost, n, s, low, hi) <= allowance) lo = hi;
    while (lo < hi) { /* effort_at grows with the level */
        u128 mid = lo + (hi - lo + 1) / 2;
        if (effort_at(cost, n, s, low, mid) <= allowance) lo = mid;
        else hi = mid - 1;
    }
    for (size_t k = 0; k < n; k++) rows[k] = rows_at(cost[k], s, low, lo);
}
