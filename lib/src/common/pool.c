/* The thread pool (common/pool.h): the default thread count, the ordered parallel loop and
 * plain workers, the only place the library and the programs call pthread_create. */
#include "common/pool.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

unsigned nf_pool_threads(unsigned requested)
{
    if (requested) return requested;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) return 1;
    return n > (long)NF_POOL_MAX_THREADS ? NF_POOL_MAX_THREADS : (unsigned)n;
}

size_t nf_pool_start(nf_pool_workers *w, size_t count, void *(*fn)(void *), void *ctx)
{
    w->started = 0;
    w->tids = count ? calloc(count, sizeof *w->tids) : NULL;
    if (!w->tids) return 0;
    while (w->started < count && pthread_create(&w->tids[w->started], NULL, fn, ctx) == 0) w->started++;
    if (w->started == 0) { /* nothing to join: the caller need not call nf_pool_join */
        free(w->tids);
        w->tids = NULL;
    }
    return w->started;
}

void nf_pool_join(nf_pool_workers *w)
{
    for (size_t i = 0; i < w->started; i++) pthread_join(w->tids[i], NULL);
    free(w->tids);
    w->tids = NULL;
    w->started = 0;
}

/* ---------------------------------------------------------------- the ordered loop */
typedef struct pool_loop {
    nf_pool_task_fn task;
    void (*done)(void *ctx, void *local);
    void *ctx;
    size_t n;
    atomic_size_t next;
    pthread_mutex_t lock;
    size_t failed; /* the lowest failing index, SIZE_MAX while none */
    nf_status status;
    nf_error error;
} pool_loop;

static void *loop_worker(void *arg)
{
    pool_loop *l = arg;
    void *local = NULL;
    for (;;) {
        size_t i = atomic_fetch_add(&l->next, 1);
        if (i >= l->n) break;
        pthread_mutex_lock(&l->lock);
        bool past = i > l->failed;
        pthread_mutex_unlock(&l->lock);
        if (past) break; /* indexes are taken in order: every later one is past the failure too */
        nf_error e;
        nf_status st = l->task(l->ctx, i, &local, &e);
        if (st != NF_OK) {
            pthread_mutex_lock(&l->lock);
            if (i < l->failed) {
                l->failed = i;
                l->status = st;
                l->error = e;
            }
            pthread_mutex_unlock(&l->lock);
        }
    }
    if (l->done) l->done(l->ctx, local);
    return NULL;
}

nf_status nf_pool_for(unsigned threads, size_t n, nf_pool_task_fn task, void (*done)(void *ctx, void *local), void *ctx,
                      nf_error *err)
{
    pool_loop l = {.task = task, .done = done, .ctx = ctx, .n = n, .failed = SIZE_MAX};
    atomic_init(&l.next, 0);
    pthread_mutex_init(&l.lock, NULL);
    size_t extra = threads > 1 ? threads - 1 : 0;
    if (extra >= n) extra = n ? n - 1 : 0;
    nf_pool_workers w;
    nf_pool_start(&w, extra, loop_worker, &l);
    loop_worker(&l); /* the calling thread works too (and alone when no thread started) */
    nf_pool_join(&w);
    pthread_mutex_destroy(&l.lock);
    if (l.failed == SIZE_MAX) return NF_OK;
    if (err) *err = l.error;
    return l.status;
}
