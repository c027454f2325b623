/* A source's storage, below the format parsers (gguf_parse.c, safetensors.c) and the opener that
 * calls them (source.c): the arena of names and shapes, the table of tensors, and the files with
 * their bounded cache of open descriptors (common/fd_cache.h; docs/security.md 7.1, F8), through
 * which every read goes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
/* The one message of a file that is not the one first opened (common/fd_cache.h: the cache
 * found another inode, or the reopen below another type or size). */
static nf_status not_the_file(const src_file *f, nf_error *err)
{
    return nf_error_set(err, NF_ERR_IO,
                        "%s: not the file that was opened before (it was replaced or changed "
                        "size since the checkpoint was opened)",
                        f->path);
}

/* Opens file i again for the cache (its lock held): still a regular file of the first open's
 * size; the cache checks the device and inode. */
static nf_status file_reopen(void *ctx, size_t i, int *fd, struct stat *st, int *sys_errno, nf_error *err)
{
    const src_file *f = &((nf_source *)ctx)->files[i];
    *fd = nf_io_open(f->path, O_RDONLY | O_NONBLOCK, 0);
    if (*fd < 0) {
        *sys_errno = errno;
        return nf_error_errno(err, *sys_errno, "%s: cannot open again", f->path);
    }
    int e = nf_io_fstat(*fd, st);
    nf_status rc = NF_OK;
    if (e) {
        *sys_errno = e;
        rc = nf_error_errno(err, e, "%s: cannot stat", f->path);
    } else if (!S_ISREG(st->st_mode) || (uint64_t)st->st_size != f->size) {
        rc = not_the_file(f, err);
    }
    if (rc != NF_OK) {
        nf_io_close(*fd);
        *fd = -1;
        return rc;
    }
    (void)posix_fadvise(*fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    return NF_OK;
}

static nf_status file_replaced(void *ctx, size_t i, nf_error *err)
{
    return not_the_file(&((nf_source *)ctx)->files[i], err);
}

nf_fd_cache *nf_source_fd_cache_new(nf_source *s)
{
    static const nf_fd_cache_ops ops = {file_reopen, file_replaced};
    return nf_common_fd_cache_new(0, nf_common_fd_cache_cap_for_process(), &ops, s);
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
    nf_source *s = cf->owner;
    size_t k = (size_t)(cf - s->files);
    int fd, e;
    NF_TRY(nf_common_fd_cache_acquire(s->fds, k, &fd, &e, err));
    e = nf_io_pread_full(fd, buf, len, off);
    nf_common_fd_cache_release(s->fds, k);
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
