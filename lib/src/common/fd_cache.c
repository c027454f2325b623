/* The one cache of open files (common/fd_cache.h, where the policy is). */
#define _GNU_SOURCE /* statx */
#include "common/fd_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "common/io.h"

typedef struct fdc_slot {
    int fd;     /* -1 while closed */
    bool known; /* the identity of the file first opened recorded */
    bool no_fd; /* open said the file needs no descriptor (mapped) */
    bool born;  /* birth time recorded (the file system keeps one) */
    dev_t dev;
    ino_t ino;
    int64_t birth_s; /* birth time: tells a new file from the first one at a reused inode number */
    uint32_t birth_ns;
    unsigned users; /* transfers holding fd now: never closed meanwhile */
    uint64_t stamp; /* last use, for the least recently used choice */
} fdc_slot;

struct nf_fd_cache {
    pthread_mutex_t lock;
    pthread_cond_t idle; /* broadcast when a descriptor has no user left */
    nf_fd_cache_ops ops;
    void *ctx;
    fdc_slot *slots;
    size_t nslots;
    size_t *open; /* the files holding a descriptor, at most cap */
    size_t nopen, cap;
    uint64_t clock;
};

size_t nf_common_fd_cache_cap_for_process(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 64;
    rlim_t q = rl.rlim_cur / 4;
    return q < 4 ? 4 : q > 64 ? 64 : (size_t)q;
}

nf_fd_cache *nf_common_fd_cache_new(size_t nfiles, size_t cap, const nf_fd_cache_ops *ops, void *ctx)
{
    nf_fd_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->cap = cap ? cap : 1;
    c->ops = *ops;
    c->ctx = ctx;
    c->open = calloc(c->cap, sizeof *c->open);
    if (!c->open || pthread_mutex_init(&c->lock, NULL) != 0) {
        free(c->open);
        free(c);
        return NULL;
    }
    if (pthread_cond_init(&c->idle, NULL) != 0) {
        pthread_mutex_destroy(&c->lock);
        free(c->open);
        free(c);
        return NULL;
    }
    if (!nf_common_fd_cache_grow(c, nfiles)) {
        nf_common_fd_cache_free(c);
        return NULL;
    }
    return c;
}

void nf_common_fd_cache_free(nf_fd_cache *c)
{
    if (!c) return;
    for (size_t k = 0; k < c->nopen; k++) nf_io_close(c->slots[c->open[k]].fd);
    pthread_cond_destroy(&c->idle);
    pthread_mutex_destroy(&c->lock);
    free(c->slots);
    free(c->open);
    free(c);
}

bool nf_common_fd_cache_grow(nf_fd_cache *c, size_t nfiles)
{
    pthread_mutex_lock(&c->lock);
    bool ok = true;
    if (nfiles > c->nslots) {
        fdc_slot *s = nfiles <= SIZE_MAX / sizeof *s ? realloc(c->slots, nfiles * sizeof *s) : NULL;
        if (s) {
            for (size_t i = c->nslots; i < nfiles; i++) s[i] = (fdc_slot){.fd = -1};
            c->slots = s;
            c->nslots = nfiles;
        }
        ok = s != NULL;
    }
    pthread_mutex_unlock(&c->lock);
    return ok;
}

/* A file's identity: device, inode and, where the file system keeps one, birth time (an inode
 * number freed by an unlink is often given to the next file created, same device and inode). */
typedef struct fdc_id {
    dev_t dev;
    ino_t ino;
    bool born;
    int64_t birth_s;
    uint32_t birth_ns;
} fdc_id;

static fdc_id id_of(int fd, const struct stat *sb)
{
    fdc_id id = {.dev = sb->st_dev, .ino = sb->st_ino};
#ifdef STATX_BTIME
    struct statx sx;
    if (statx(fd, "", AT_EMPTY_PATH, STATX_BTIME, &sx) == 0 && (sx.stx_mask & STATX_BTIME)) {
        id.born = true;
        id.birth_s = sx.stx_btime.tv_sec;
        id.birth_ns = sx.stx_btime.tv_nsec;
    }
#else
    (void)fd;
#endif
    return id;
}

static void record(fdc_slot *s, const fdc_id *id)
{
    s->dev = id->dev;
    s->ino = id->ino;
    s->born = id->born;
    s->birth_s = id->birth_s;
    s->birth_ns = id->birth_ns;
    s->known = true;
}

/* Whether id is the file first recorded (a birth time is compared when both have one). */
static bool same_file(const fdc_slot *s, const fdc_id *id)
{
    if (id->dev != s->dev || id->ino != s->ino) return false;
    return !s->born || !id->born || (id->birth_s == s->birth_s && id->birth_ns == s->birth_ns);
}

/* Closes the least recently used descriptor no transfer is using (the lock held); false when
 * every one is in use. */
static bool evict_idle(nf_fd_cache *c)
{
    size_t best = SIZE_MAX;
    for (size_t k = 0; k < c->nopen; k++) {
        const fdc_slot *s = &c->slots[c->open[k]];
        if (s->users == 0 && (best == SIZE_MAX || s->stamp < c->slots[c->open[best]].stamp)) best = k;
    }
    if (best == SIZE_MAX) return false;
    fdc_slot *s = &c->slots[c->open[best]];
    /* (a close error of a file still written is seen again: the writer syncs each file through
     * a descriptor opened later before publishing it) */
    nf_io_close(s->fd);
    s->fd = -1;
    c->open[best] = c->open[--c->nopen];
    return true;
}

/* Whether a descriptor of the cache is in use: its release will let a waiting open go on. */
static bool any_in_use(const nf_fd_cache *c)
{
    for (size_t k = 0; k < c->nopen; k++)
        if (c->slots[c->open[k]].users > 0) return true;
    return false;
}

/* fd kept as file i's (the lock held, room in the open list). */
static void keep(nf_fd_cache *c, size_t i, int fd)
{
    c->slots[i].fd = fd;
    c->slots[i].stamp = ++c->clock;
    c->open[c->nopen++] = i;
}

int nf_common_fd_cache_adopt(nf_fd_cache *c, size_t i, int fd)
{
    struct stat sb;
    int e = nf_io_fstat(fd, &sb);
    fdc_id id = {0};
    if (!e) id = id_of(fd, &sb);
    pthread_mutex_lock(&c->lock);
    fdc_slot *s = &c->slots[i];
    if (!e) {
        record(s, &id);
        if (s->fd < 0 && (c->nopen < c->cap || evict_idle(c))) {
            keep(c, i, fd);
            fd = -1;
        }
    }
    pthread_mutex_unlock(&c->lock);
    if (fd >= 0) nf_io_close(fd); /* (no room: every cached one in use; reopened when needed) */
    return e;
}

nf_status nf_common_fd_cache_acquire(nf_fd_cache *c, size_t i, int *fd, int *sys_errno, nf_error *err)
{
    *fd = -1;
    *sys_errno = 0;
    nf_status st = NF_OK;
    pthread_mutex_lock(&c->lock);
    for (;;) {
        fdc_slot *s = &c->slots[i]; /* (again after a wait) */
        if (s->no_fd) break;
        if (s->fd >= 0) {
            s->users++;
            s->stamp = ++c->clock;
            *fd = s->fd;
            break;
        }
        if (c->nopen >= c->cap && !evict_idle(c)) {
            pthread_cond_wait(&c->idle, &c->lock); /* every one in use: one is released after its transfer */
            continue;
        }
        int nfd = -1, e = 0;
        struct stat sb;
        st = c->ops.open(c->ctx, i, &nfd, &sb, &e, err);
        if (st != NF_OK) {
            *sys_errno = e;
            if (e != EMFILE && e != ENFILE) break;
            /* out of descriptors: free one of ours, or wait for one in use to be released */
            if (evict_idle(c)) continue;
            if (!any_in_use(c)) break;
            pthread_cond_wait(&c->idle, &c->lock);
            *sys_errno = 0;
            st = NF_OK;
            continue;
        }
        *sys_errno = 0; /* (an EMFILE overcome on the way is no failure) */
        if (nfd < 0) {
            s->no_fd = true;
            break;
        }
        fdc_id id = id_of(nfd, &sb);
        if (s->known && !same_file(s, &id)) {
            nf_io_close(nfd);
            st = c->ops.replaced(c->ctx, i, err);
            *sys_errno = ESTALE;
            break;
        }
        record(s, &id);
        keep(c, i, nfd);
    }
    pthread_mutex_unlock(&c->lock);
    return st;
}

void nf_common_fd_cache_release(nf_fd_cache *c, size_t i)
{
    pthread_mutex_lock(&c->lock);
    fdc_slot *s = &c->slots[i];
    if (s->users && --s->users == 0) pthread_cond_broadcast(&c->idle);
    pthread_mutex_unlock(&c->lock);
}

int nf_common_fd_cache_close(nf_fd_cache *c, size_t i)
{
    pthread_mutex_lock(&c->lock);
    fdc_slot *s = &c->slots[i];
    int fd = s->fd;
    s->fd = -1;
    for (size_t k = 0; fd >= 0 && k < c->nopen; k++)
        if (c->open[k] == i) {
            c->open[k] = c->open[--c->nopen];
            break;
        }
    pthread_mutex_unlock(&c->lock);
    return fd < 0 || nf_io_close(fd) == 0 ? 0 : errno;
}

size_t nf_common_fd_cache_open_count(nf_fd_cache *c)
{
    pthread_mutex_lock(&c->lock);
    size_t n = c->nopen;
    pthread_mutex_unlock(&c->lock);
    return n;
}
