/* The one thread pool (lib/src/common/pool.h): every index runs exactly once whatever the
 * thread count, the failure of the lowest index is the one returned (so 1 and N threads give the
 * same result), each thread's scratch slot is freed once, workers all run, and the default
 * thread count is one per online CPU within 1..NF_POOL_MAX_THREADS. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/pool.h"

static const unsigned COUNTS[] = {1, 2, 3, 8, 64};
#define N 2000

typedef struct loop_ctx {
    atomic_uint runs[N];
    uint64_t out[N];          /* each index's own result slot */
    size_t fail_at[2];        /* indexes that fail (SIZE_MAX: none) */
    atomic_int locals, freed; /* scratch slots made and freed */
} loop_ctx;

static nf_status task(void *ctx, size_t i, void **local, nf_error *err)
{
    loop_ctx *c = ctx;
    if (!*local) {
        *local = malloc(1);
        atomic_fetch_add(&c->locals, 1);
    }
    atomic_fetch_add(&c->runs[i], 1);
    c->out[i] = (uint64_t)i * 2654435761u ^ (i >> 3);
    if (i == c->fail_at[0] || i == c->fail_at[1])
        return nf_error_set(err, i == c->fail_at[0] ? NF_ERR_INVALID : NF_ERR_IO, "item %zu failed", i);
    return NF_OK;
}

static void done(void *ctx, void *local)
{
    loop_ctx *c = ctx;
    if (local) atomic_fetch_add(&c->freed, 1);
    free(local);
}

static loop_ctx *new_ctx(size_t f0, size_t f1)
{
    loop_ctx *c = calloc(1, sizeof *c);
    cr_assert(c);
    c->fail_at[0] = f0;
    c->fail_at[1] = f1;
    return c;
}

Test(common_pool, every_index_runs_once_and_results_match_one_thread)
{
    loop_ctx *one = new_ctx(SIZE_MAX, SIZE_MAX);
    cr_assert_eq(nf_pool_for(1, N, task, done, one, NULL), NF_OK);
    for (size_t k = 0; k < sizeof COUNTS / sizeof *COUNTS; k++) {
        loop_ctx *c = new_ctx(SIZE_MAX, SIZE_MAX);
        nf_error err;
        cr_assert_eq(nf_pool_for(COUNTS[k], N, task, done, c, &err), NF_OK);
        for (size_t i = 0; i < N; i++)
            cr_assert_eq(atomic_load(&c->runs[i]), 1u, "threads %u: index %zu", COUNTS[k], i);
        cr_assert_eq(memcmp(c->out, one->out, sizeof c->out), 0, "threads %u", COUNTS[k]);
        cr_assert_eq(atomic_load(&c->locals), atomic_load(&c->freed));
        cr_assert(atomic_load(&c->locals) >= 1 && atomic_load(&c->locals) <= (int)COUNTS[k]);
        free(c);
    }
    free(one);
}

Test(common_pool, no_index_and_fewer_indexes_than_threads)
{
    loop_ctx *c = new_ctx(SIZE_MAX, SIZE_MAX);
    cr_assert_eq(nf_pool_for(8, 0, task, done, c, NULL), NF_OK);
    cr_assert_eq(atomic_load(&c->locals), 0);
    cr_assert_eq(nf_pool_for(64, 3, task, NULL, c, NULL), NF_OK);
    for (size_t i = 0; i < 3; i++) cr_assert_eq(atomic_load(&c->runs[i]), 1u);
    cr_assert_eq(atomic_load(&c->runs[3]), 0u);
    free(c);
}

Test(common_pool, the_lowest_failure_is_returned_on_any_thread_count)
{
    for (size_t k = 0; k < sizeof COUNTS / sizeof *COUNTS; k++) {
        /* the later failure is I/O, the earlier invalid input: the earlier one wins */
        loop_ctx *c = new_ctx(700, 1500);
        nf_error err;
        memset(&err, 0, sizeof err);
        cr_assert_eq(nf_pool_for(COUNTS[k], N, task, done, c, &err), NF_ERR_INVALID, "threads %u", COUNTS[k]);
        cr_assert_str_eq(err.message, "item 700 failed", "threads %u", COUNTS[k]);
        for (size_t i = 0; i <= 700; i++)
            cr_assert_eq(atomic_load(&c->runs[i]), 1u, "threads %u: index %zu", COUNTS[k], i);
        for (size_t i = 701; i < N; i++) cr_assert_leq(atomic_load(&c->runs[i]), 1u);
        cr_assert_eq(atomic_load(&c->locals), atomic_load(&c->freed));
        /* err may be NULL: the status is the same */
        loop_ctx *d = new_ctx(5, SIZE_MAX);
        cr_assert_eq(nf_pool_for(COUNTS[k], N, task, done, d, NULL), NF_ERR_INVALID);
        free(c);
        free(d);
    }
}

static void *count_worker(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
    return NULL;
}

Test(common_pool, workers_all_run_and_join)
{
    atomic_int ran = 0;
    nf_pool_workers w;
    size_t started = nf_pool_start(&w, 5, count_worker, &ran);
    cr_assert_eq(started, 5);
    nf_pool_join(&w);
    cr_assert_eq(atomic_load(&ran), 5);
    cr_assert_eq(w.started, 0);
    cr_assert_eq(nf_pool_start(&w, 0, count_worker, &ran), 0);
    cr_assert_null(w.tids, "nothing started: nothing held");
    nf_pool_join(&w);
    nf_pool_workers zeroed = {0};
    nf_pool_join(&zeroed);
    cr_assert_eq(atomic_load(&ran), 5);
}

Test(common_pool, default_thread_count)
{
    cr_assert_eq(nf_pool_threads(1), 1u);
    cr_assert_eq(nf_pool_threads(7), 7u);
    cr_assert_eq(nf_pool_threads(NF_POOL_MAX_THREADS), NF_POOL_MAX_THREADS);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned want = online < 1 ? 1u : online > (long)NF_POOL_MAX_THREADS ? NF_POOL_MAX_THREADS : (unsigned)online;
    cr_assert_eq(nf_pool_threads(0), want);
}
