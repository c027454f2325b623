/* A source's storage, below the format parsers (gguf_parse.c, safetensors.c) and the opener that
 * calls them (source.c): the arena of names and shapes, the table of tensors, and the files with
 * their bounded cache of open descriptors (docs/security.md 7.1, F8), through which every
 * read goes. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "common/checked.h"
#include "common/fail.h"
#include "common/io.h"
#include "source/store.h"

/* ---------------------------------------------------------------- arena */
struct src_chunk {
    src_chunk *next;
    size_t used, cap;
    /* data follows, 8-byte aligned (the header is 3 words) */
};

#define SRC_CHUNK_BYTES ((size_t)64 << 10)

void *nf_source_arena_alloc(src_arena *a, size_t n)
{
    size_t need = (n + 7u) & ~(size_t)7u;
    if (need < n) return NULL;
    src_chunk *c = a->head;
    if (!c || c->cap - c->used < need) {
        /* Big requests get a chunk of their own so small ones keep filling the current one. */
        size_t cap = need > SRC_CHUNK_BYTES / 4 ? need : SRC_CHUNK_BYTES;
        if (cap > SIZE_MAX - sizeof(src_chunk)) return NULL;
        src_chunk *nc = malloc(sizeof(src_chunk) + cap);
        if (!nc) return NULL;
        nc->used = 0;
        nc->cap = cap;
        if (cap == need && c) { /* keep filling the current chunk afterwards */
            nc->next = c->next;
            c->next = nc;
        } else {
            nc->next = c;
            a->head = nc;
        }
        c = nc;
    }
    void *p = (unsigned char *)(c + 1) + c->used;
    c->used += need;
    return p;
}

char *nf_source_arena_strndup(src_arena *a, const char *s, size_t n)
{
    if (n == SIZE_MAX) return NULL;
    char *p = nf_source_arena_alloc(a, n + 1);
    if (!p) return NULL;
    if (n) memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

void nf_source_arena_free(src_arena *a)
{
    src_chunk *c = a->head;
    while (c) {
        src_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
}

/* ---------------------------------------------------------------- files and tensors */
/* ---------------------------------------------------------------- fd cache (F8) */
/* How many descriptors one source keeps open: a quarter of the soft RLIMIT_NOFILE (the program
 * needs others: its output parts, other sources, stdio), at least 4 and at most 64. */
size_t nf_source_fd_cap_for_process(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 64;
    rlim_t q = rl.rlim_cur / 4;
    return q < 4 ? 4 : q > 64 ? 64 : (size_t)q;
}

static void fd_list_remove(nf_source *s, size_t at) { s->fd_open[at] = s->fd_open[--s->nfd_open]; }

/* Closes the least recently used open file that no read is using; false when there is none. */
static bool fd_evict_one(nf_source *s)
{
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < s->nfd_open; i++) {
        const src_file *f = &s->files[s->fd_open[i]];
        if (f->users == 0 && (best == SIZE_MAX || f->last_use < s->files[s->fd_open[best]].last_use)) best = i;
    }
    if (best == SIZE_MAX) return false;
    src_file *f = &s->files[s->fd_open[best]];
    nf_io_close(f->fd);
    f->fd = -1;
    fd_list_remove(s, best);
    return true;
}

/* Records file index k as open, closing others beyond the cap (the caller holds the lock). */
bool nf_source_file_track(nf_source *s, size_t k)
{
    if (s->nfd_open == s->fd_open_cap) {
        size_t cap = s->fd_open_cap ? s->fd_open_cap * 2 : 16;
        size_t *l = realloc(s->fd_open, cap * sizeof *l);
        if (!l) return false;
        s->fd_open = l;
        s->fd_open_cap = cap;
    }
    s->files[k].last_use = ++s->fd_clock;
    s->fd_open[s->nfd_open++] = k;
    while (s->nfd_open > s->fd_cap && fd_evict_one(s)) {}
    return true;
}

/* Whether a file other than f is being read: its descriptor will be released. */
static bool fd_other_in_use(const nf_source *s, const src_file *f)
{
    for (size_t i = 0; i < s->nfd_open; i++) {
        const src_file *o = &s->files[s->fd_open[i]];
        if (o != f && o->users > 0) return true;
    }
    return false;
}

/* Opens f again (the lock is held): it must still be the regular file of the first open -- same
 * device, inode and size -- or the reads would mix two files.  Out of descriptors (EMFILE,
 * ENFILE), it closes an unused cached one and tries again; when every cached one is in use by
 * other reads (threads reading as many shards at once as the process may open), it waits for
 * one of them to finish.  Only when no other read holds a descriptor does it give up. */
static nf_status fd_reopen(nf_source *s, src_file *f, nf_error *err)
{
    int fd = -1, e = 0;
    for (;;) {
        fd = nf_io_open(f->path, O_RDONLY | O_NONBLOCK, 0);
        e = fd < 0 ? errno : 0;
        if (fd >= 0 || (e != EMFILE && e != ENFILE)) break;
        if (fd_evict_one(s)) continue;
        if (!fd_other_in_use(s, f)) break;
        pthread_cond_wait(&s->fd_freed, &s->fd_lock);
        if (f->fd >= 0) return NF_OK; /* another read opened it meanwhile */
    }
    if (fd < 0) return nf_error_errno(err, e, "%s: cannot open again", f->path);
    struct stat st;
    e = nf_io_fstat(fd, &st);
    if (e) {
        nf_io_close(fd);
        return nf_error_errno(err, e, "%s: cannot stat", f->path);
    }
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_dev != f->dev || (uint64_t)st.st_ino != f->ino ||
        (uint64_t)st.st_size != f->size) {
        nf_io_close(fd);
        return nf_error_set(err, NF_ERR_IO,
                            "%s: not the file that was opened before (it was replaced or changed "
                            "size since the checkpoint was opened)",
                            f->path);
    }
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    f->fd = fd;
    size_t k = (size_t)(f - s->files);
    if (!nf_source_file_track(s, k)) {
        nf_io_close(fd);
        f->fd = -1;
        return nf_common_nomem_in(err, f->path);
    }
    return NF_OK;
}

nf_status nf_source_file_read(const src_file *cf, uint64_t off, void *buf, size_t len, nf_error *err)
{
    uint64_t end;
    if (!nf_add_u64(off, len, &end) || end > cf->size)
        return nf_error_set(err, NF_ERR_IO,
                            "%s: read of bytes [%llu, +%zu) past the end of the file (%llu bytes); "
                            "was it truncated after open?",
                            cf->path, (unsigned long long)off, len, (unsigned long long)cf->size);
    if (len == 0) return NF_OK;
    if (cf->mem) {
        memcpy(buf, cf->mem + off, len);
        return NF_OK;
    }
    /* The cache state lives in the source, which is heap-allocated and never const itself: the
     * public read functions take a const source because reading does not change what it is. */
    src_file *f = (src_file *)(uintptr_t)cf;
    nf_source *s = f->owner;
    pthread_mutex_lock(&s->fd_lock);
    /* in use first: reopening may close others beyond the cap, never this one */
    f->users++;
    nf_status st = f->fd >= 0 ? NF_OK : fd_reopen(s, f, err);
    int fd = f->fd;
    if (st == NF_OK) f->last_use = ++s->fd_clock;
    else f->users--;
    pthread_mutex_unlock(&s->fd_lock);
    if (st != NF_OK) return st;
    int e = nf_io_pread_full(fd, buf, len, off);
    pthread_mutex_lock(&s->fd_lock);
    if (--f->users == 0) pthread_cond_broadcast(&s->fd_freed); /* a read waiting in fd_reopen */
    pthread_mutex_unlock(&s->fd_lock);
    if (e)
        return nf_error_errno(err, e, "%s: cannot read bytes [%llu, %llu)", cf->path, (unsigned long long)off,
                              (unsigned long long)end);
    return NF_OK;
}

nf_status nf_source_add_tensor(nf_source *s, const char *file_name, src_tensor **out, nf_error *err)
{
    *out = NULL;
    if (s->ntensors >= NF_SOURCE_MAX_TENSORS)
        return nf_error_set(err, NF_ERR_INVALID, "%s: more than %u tensors in the checkpoint (the reader's cap)",
                            file_name, NF_SOURCE_MAX_TENSORS);
    if (s->ntensors == s->tensor_cap) {
        size_t cap = s->tensor_cap ? s->tensor_cap * 2 : 64;
        src_tensor *t = realloc(s->tensors, cap * sizeof *t);
        if (!t) return nf_error_set(err, NF_ERR_NOMEM, "%s: out of memory for the tensor table", file_name);
        s->tensors = t;
        s->tensor_cap = cap;
    }
    src_tensor *t = &s->tensors[s->ntensors++];
    memset(t, 0, sizeof *t);
    t->owner = s;
    t->pub.dtype = NF_ST_NONE;
    t->pub.ggml_type = -1;
    *out = t;
    return NF_OK;
}

static int cmp_tensor_name(const void *a, const void *b)
{
    const src_tensor *x = *(const src_tensor *const *)a, *y = *(const src_tensor *const *)b;
    return strcmp(x->pub.name, y->pub.name);
}

nf_status nf_source_index_names(nf_source *s, nf_error *err)
{
    free(s->by_name);
    s->by_name = NULL;
    if (s->ntensors == 0) return NF_OK;
    s->by_name = malloc(s->ntensors * sizeof *s->by_name);
    if (!s->by_name) return nf_common_nomem_in(err, s->path);
    for (size_t i = 0; i < s->ntensors; i++) s->by_name[i] = &s->tensors[i];
    qsort(s->by_name, s->ntensors, sizeof *s->by_name, cmp_tensor_name);
    for (size_t i = 1; i < s->ntensors; i++) {
        const nf_source_tensor *a = &s->by_name[i - 1]->pub, *b = &s->by_name[i]->pub;
        if (strcmp(a->name, b->name) == 0) {
            if (a->file != b->file)
                return nf_error_set(err, NF_ERR_INVALID, "%s: tensor '%s' is in two shards: %s and %s", s->path,
                                    a->name, s->files[a->file].path, s->files[b->file].path);
            return nf_error_set(err, NF_ERR_INVALID, "%s: duplicate tensor name '%s'", s->files[a->file].path, a->name);
        }
    }
    return NF_OK;
}
