/* The one thread pool of the library and the programs (pool.c): the default thread count every
 * --threads option and every `threads` field share, the parallel loop over indexes whose result
 * does not depend on the thread count, and plain workers for a pass whose calling thread has a
 * job of its own (convert's progress, dequant's writer).  Issue 25, item 3: five hand-written
 * pools decided "0 = every core" under three different caps before. */
#ifndef NINFER_COMMON_POOL_H
#define NINFER_COMMON_POOL_H

#include <pthread.h>
#include <stddef.h>

#include <ninfer/error.h>

/* The most threads a pass takes: the bound of every program's --threads (1..1024, documented
 * in docs/ninfer-*.md) and the cap of the default count. */
#define NF_POOL_MAX_THREADS 1024u

/* The threads of a pass asked for `requested`: `requested` itself, or for 0 one per online CPU
 * (docs: "default: every core"), at most NF_POOL_MAX_THREADS and at least 1. */
unsigned nf_pool_threads(unsigned requested);

/* One index of nf_pool_for.  `local` is the running thread's own slot (NULL at first), for
 * scratch memory kept from one index to the next; a failure returns its status with `err` set. */
typedef nf_status (*nf_pool_task_fn)(void *ctx, size_t index, void **local, nf_error *err);

/* Runs task(ctx, i, ...) once for each i in 0..n-1 on up to `threads` threads, the calling one
 * included (so a thread that cannot start costs only speed), indexes taken in increasing order.
 * When tasks fail, the failure of the lowest index is returned (its error in *err): every index
 * below it has run and none above it starts afterwards, so the result is the same for any
 * thread count.  `done(ctx, local)` (may be NULL) frees each thread's slot when it stops. */
nf_status nf_pool_for(unsigned threads, size_t n, nf_pool_task_fn task, void (*done)(void *ctx, void *local), void *ctx,
                      nf_error *err);

/* Workers: fn(ctx) on up to `count` new threads while the caller goes on. */
typedef struct nf_pool_workers {
    pthread_t *tids;
    size_t started;
} nf_pool_workers;

/* Starts them; returns how many started (0 when none could: the caller then does the work
 * itself or fails, and holds nothing to free).  nf_pool_join waits for every one and frees what
 * start took; it does nothing on a zeroed or empty nf_pool_workers. */
size_t nf_pool_start(nf_pool_workers *w, size_t count, void *(*fn)(void *), void *ctx);
void nf_pool_join(nf_pool_workers *w);

#endif
