/* The artifact writer's routed writes and streaming digests (writer_state.h), below the
 * writer's entry points (writer.c) and its publish (writer_publish.c): a logical payload range
 * routed across the files, each object byte covered exactly once, and each object's digest
 * streamed as its bytes arrive (pieces ahead of the digest parked within a budget, the rest read
 * back once the object is complete). */
#include "container/writer_io.h"
#include "container/writer_state.h"

/* ---------------------------------------------------------------- write */
/* Record [a, b) as written; 1 if any byte of it was written before, -1 on ENOMEM. */
int nf_wr_cover(wobj *o, uint64_t a, uint64_t b, interval *clash)
{
    if (o->complete) {
        *clash = (interval){0, o->bytes};
        return 1;
    }
    size_t lo = 0, hi = o->ncov;
    while (lo < hi) { /* first interval ending after a */
        size_t mid = lo + (hi - lo) / 2;
        if (o->cov[mid].b <= a) lo = mid + 1;
        else hi = mid;
    }
    size_t i = lo;
    if (i < o->ncov && o->cov[i].a < b) {
        *clash = o->cov[i];
        return 1;
    }
    bool left = i > 0 && o->cov[i - 1].b == a;
    bool right = i < o->ncov && o->cov[i].a == b;
    if (left && right) {
        o->cov[i - 1].b = o->cov[i].b;
        memmove(&o->cov[i], &o->cov[i + 1], (o->ncov - i - 1) * sizeof *o->cov);
        o->ncov--;
    } else if (left) {
        o->cov[i - 1].b = b;
    } else if (right) {
        o->cov[i].a = a;
    } else {
        if (o->ncov == o->capcov) {
            size_t cap = o->capcov ? o->capcov * 2 : 4;
            interval *c = realloc(o->cov, cap * sizeof *c);
            if (!c) return -1;
            o->cov = c;
            o->capcov = cap;
        }
        memmove(&o->cov[i + 1], &o->cov[i], (o->ncov - i) * sizeof *o->cov);
        o->cov[i].a = a;
        o->cov[i].b = b;
        o->ncov++;
    }
    if (o->ncov == 1 && o->cov[0].a == 0 && o->cov[0].b == o->bytes) { /* done: no list to keep */
        free(o->cov);
        o->cov = NULL;
        o->ncov = o->capcov = 0;
        o->complete = true;
    }
    return 0;
}

static size_t file_of(const nf_writer *w, uint64_t x)
{
    size_t lo = 0, hi = w->nfiles;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (w->files[mid].logical_start <= x) lo = mid;
        else hi = mid;
    }
    return lo;
}

/* ---------------------------------------------------------------- the descriptor cache */
/* One descriptor per temp file failed with EMFILE beyond the soft RLIMIT_NOFILE (341 parts under
 * `ulimit -n 64`, a 1 TB model at --max-file-bytes 1G under the default 1024: docs/security.md
 * 7.2).  The temp files' descriptors are a common/fd_cache.h cache of at most a quarter of the
 * soft limit (4 to 64; as the sources', for the program needs others) and no more than the
 * files: a closed one is reopened on demand by its temp name -- never through a symbolic link,
 * and only if it is still the file created (same device and inode), else ESTALE: a temp file
 * replaced behind the writer's back is never written through. */

/* Reopen temp file i for the cache (its lock held): the errno value in *sys_errno. */
static nf_status temp_reopen(void *ctx, size_t i, int *fd, struct stat *sb, int *sys_errno, nf_error *err)
{
    const wfile *f = &((nf_writer *)ctx)->files[i];
    *fd = nf_io_open(f->temp, O_RDWR | O_NOFOLLOW, 0);
    int e = *fd < 0 ? errno : nf_io_fstat(*fd, sb);
    if (!e && !S_ISREG(sb->st_mode)) e = ESTALE;
    if (!e) return NF_OK;
    if (*fd >= 0) nf_io_close(*fd);
    *fd = -1;
    *sys_errno = e;
    return nf_error_errno(err, e, "%s", f->temp);
}

static nf_status temp_replaced(void *ctx, size_t i, nf_error *err)
{
    return nf_error_errno(err, ESTALE, "%s", ((nf_writer *)ctx)->files[i].temp);
}

nf_status nf_wr_fd_init(nf_writer *w, nf_error *err)
{
    static const nf_fd_cache_ops ops = {temp_reopen, temp_replaced};
    size_t cap = nf_common_fd_cache_cap_for_process();
    nf_common_fd_cache_free(w->fds);
    w->fds = nf_common_fd_cache_new(w->nfiles, cap < w->nfiles ? cap : (w->nfiles ? w->nfiles : 1), &ops, w);
    return w->fds ? NF_OK : nf_wr_nomem(err);
}

int nf_wr_fd_adopt(nf_writer *w, size_t i, int fd) { return nf_common_fd_cache_adopt(w->fds, i, fd); }

int nf_wr_fd_acquire(nf_writer *w, size_t i, int *fd)
{
    nf_error err = {0};
    int e = 0;
    if (nf_common_fd_cache_acquire(w->fds, i, fd, &e, &err) != NF_OK) return e ? e : EIO;
    return 0;
}

void nf_wr_fd_release(nf_writer *w, size_t i) { nf_common_fd_cache_release(w->fds, i); }

int nf_wr_fd_close(nf_writer *w, size_t i) { return w->fds ? nf_common_fd_cache_close(w->fds, i) : 0; }

/* Positional transfer of logical payload bytes [pos, pos + len) to or from the temp files. */
int nf_wr_route(nf_writer *w, uint64_t pos, void *buf, size_t len, bool writing, size_t *failed_file)
{
    uint8_t *p = buf;
    uint64_t end = pos + (uint64_t)len;
    size_t i = file_of(w, pos);
    while (pos < end) {
        const wfile *f = &w->files[i];
        uint64_t seg_end = f->logical_start + f->payload_bytes;
        uint64_t hi = end < seg_end ? end : seg_end;
        size_t n = (size_t)(hi - pos);
        uint64_t at = (i == 0 ? w->entry_payload_start : NF_PAGE_BYTES) + (pos - f->logical_start);
        int fd = -1;
        int e = nf_wr_fd_acquire(w, i, &fd);
        if (!e) {
            e = writing ? nf_io_pwrite_full(fd, p, n, at) : nf_io_pread_full(fd, p, n, at);
            nf_wr_fd_release(w, i);
        }
        if (e) {
            *failed_file = i;
            return e;
        }
        p += n;
        pos = hi;
        i++;
    }
    return 0;
}

/* ---------------------------------------------------------------- streaming digests */
static void digest_hash(wdigest *d, const void *data, size_t len)
{
    nf_xxh3_stream_update(d->s, data, len);
    d->hashed += len;
}

/* Hash the parked copies that now continue the digest. */
static void digest_drain(nf_writer *w, wdigest *d)
{
    while (d->park && d->park->offset == d->hashed) {
        parked *p = d->park;
        d->park = p->next;
        digest_hash(d, p->data, p->len);
        atomic_fetch_sub(&w->parked_bytes, (uint64_t)p->len);
        free(p);
    }
}

/* Keep a copy of a piece ahead of the digest, if the budget allows (else it is read back). */
static void digest_park(nf_writer *w, wdigest *d, uint64_t offset, const void *data, size_t len)
{
    if (atomic_fetch_add(&w->parked_bytes, (uint64_t)len) + len > PARK_BUDGET) {
        atomic_fetch_sub(&w->parked_bytes, (uint64_t)len);
        return;
    }
    parked *p = malloc(sizeof *p + len);
    if (!p) {
        atomic_fetch_sub(&w->parked_bytes, (uint64_t)len);
        return;
    }
    p->offset = offset;
    p->len = len;
    memcpy(p->data, data, len);
    parked **at = &d->park;
    while (*at && (*at)->offset < offset) at = &(*at)->next;
    p->next = *at;
    *at = p;
}

/* The streamed digest of an object is given up (out of memory): its parked copies are dropped
 * and fill_checksums reads the whole object back instead. */
static void digest_give_up(nf_writer *w, wdigest *d)
{
    d->failed = true;
    while (d->park) {
        parked *p = d->park;
        d->park = p->next;
        atomic_fetch_sub(&w->parked_bytes, (uint64_t)p->len);
        free(p);
    }
}

/* The object is complete: the rest of its bytes, from the parked copies or read back. */
static nf_status digest_finish(nf_writer *w, size_t index, nf_error *err)
{
    wobj *o = &w->objs[index];
    wdigest *d = &w->dig[index];
    if (!d->s && !(d->s = nf_xxh3_stream_new())) {
        digest_give_up(w, d);
        return NF_OK;
    }
    uint8_t *buf = NULL;
    digest_drain(w, d);
    while (d->hashed < o->bytes) {
        uint64_t end = d->park ? d->park->offset : o->bytes;
        if (!buf && !(buf = malloc(READBACK_CHUNK))) {
            digest_give_up(w, d);
            break;
        }
        size_t n = end - d->hashed < READBACK_CHUNK ? (size_t)(end - d->hashed) : READBACK_CHUNK;
        size_t bad = 0;
        int e = nf_wr_route(w, o->offset + d->hashed, buf, n, false, &bad);
        if (e) {
            free(buf);
            return nf_error_errno(err, e, "%s: object '%s': cannot read back %s for its checksum", MP(w->path), o->id,
                                  MP(w->files[bad].temp));
        }
        digest_hash(d, buf, n);
        digest_drain(w, d);
    }
    free(buf);
    if (d->failed) return NF_OK;
    nf_xxh3_stream_final(d->s, d->hex);
    d->s = NULL;
    d->done = true;
    return NF_OK;
}

/* A piece of object `index` has been written: into its digest, or parked; the piece that
 * completes the object finishes the digest. */
nf_status nf_wr_digest_piece(nf_writer *w, size_t index, uint64_t offset, const void *data, size_t len, nf_error *err)
{
    wdigest *d = &w->dig[index];
    pthread_mutex_t *lock = &w->dig_lock[index % DIGEST_LOCKS];
    nf_status st = NF_OK;
    pthread_mutex_lock(lock);
    if (!d->failed && offset == d->hashed) {
        if (!d->s && !(d->s = nf_xxh3_stream_new())) {
            digest_give_up(w, d);
        } else {
            digest_hash(d, data, len);
            digest_drain(w, d);
        }
    } else if (!d->failed) {
        digest_park(w, d, offset, data, len);
    }
    d->written += len;
    if (d->written == w->objs[index].bytes && !d->failed) st = digest_finish(w, index, err);
    pthread_mutex_unlock(lock);
    return st;
}

void nf_wr_digest_free(nf_writer *w)
{
    for (size_t i = 0; w->dig && i < w->nobjs; i++) {
        wdigest *d = &w->dig[i];
        while (d->park) {
            parked *p = d->park;
            d->park = p->next;
            free(p);
        }
        if (d->s) {
            char hex[33];
            nf_xxh3_stream_final(d->s, hex); /* frees it */
        }
    }
    free(w->dig);
    w->dig = NULL;
}

/* A write (or its digest's read-back) failed: other threads may still be writing, so the writer
 * is only marked dead (nf_writer_free removes the files), and every later write returns this
 * error. */
