/* Deflated archive members, inflated in chunks (inflate.h).  Written from zlib's documented API
 * (raw deflate, windowBits -15, as zip stores it: APPNOTE 4.4.5 method 8). */
#include "source/inflate.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/fail.h"

typedef struct cursor {
    const nf_inflate_member *m; /* NULL: unused */
    const src_file *f;
    z_stream z;
    bool live;     /* z initialised */
    uint64_t pos;  /* uncompressed bytes produced */
    uint64_t cpos; /* compressed bytes fed */
    uint32_t crc;  /* of the pos bytes produced */
    bool ended;    /* the deflate stream's end was seen */
    uint64_t used; /* last use, for the least recently used */
    uint8_t in[NF_INFLATE_CHUNK];
} cursor;

/* A whole inflated member, for strided views (which read a member in no useful order). */
typedef struct whole {
    const nf_inflate_member *m; /* NULL: empty */
    const src_file *f;
    uint8_t *bytes;
    uint64_t used;
} whole;

struct nf_inflate_pool {
    pthread_mutex_t lock;
    uint64_t clock;
    uint8_t skip[NF_INFLATE_CHUNK]; /* where bytes before a read's offset go */
    cursor c[NF_INFLATE_CURSORS];
    whole w[NF_INFLATE_WHOLE_SLOTS];
};

nf_inflate_pool *nf_source_inflate_new(void)
{
    nf_inflate_pool *p = calloc(1, sizeof *p);
    if (p && pthread_mutex_init(&p->lock, NULL) != 0) {
        free(p);
        return NULL;
    }
    return p;
}

void nf_source_inflate_free(nf_inflate_pool *p)
{
    if (!p) return;
    for (unsigned i = 0; i < NF_INFLATE_CURSORS; i++)
        if (p->c[i].live) inflateEnd(&p->c[i].z);
    for (unsigned i = 0; i < NF_INFLATE_WHOLE_SLOTS; i++) free(p->w[i].bytes);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

static nf_status corrupt(const src_file *f, const cursor *c, const char *what, nf_error *err)
{
    return nf_error_set(err, NF_ERR_INVALID, "%s: member %s: %s (at inflated byte %llu, compressed byte %llu)", f->path,
                        c->m->name, what, (unsigned long long)c->pos, (unsigned long long)c->cpos);
}

/* Cursor c at the start of member m. */
static nf_status restart(cursor *c, const src_file *f, const nf_inflate_member *m, nf_error *err)
{
    if (c->live) inflateEnd(&c->z);
    c->live = false;
    memset(&c->z, 0, sizeof c->z);
    c->m = NULL;
    if (inflateInit2(&c->z, -15) != Z_OK) return nf_common_nomem_in(err, f->path);
    c->live = true;
    c->m = m;
    c->f = f;
    c->pos = c->cpos = 0;
    c->ended = false;
    c->crc = (uint32_t)crc32(0L, Z_NULL, 0);
    return NF_OK;
}

/* One inflate() call into out[0..len): *made bytes.  Input is fed while there is some; with none
 * left zlib may still hold output (the rest of a match whose bits it has read), so it is called
 * anyway, and only a call that makes nothing then is the stream ending early. */
static nf_status step(cursor *c, uint8_t *out, size_t len, size_t *made, nf_error *err)
{
    const nf_inflate_member *m = c->m;
    if (c->z.avail_in == 0 && c->cpos < m->csize) {
        const size_t k = m->csize - c->cpos < sizeof c->in ? (size_t)(m->csize - c->cpos) : sizeof c->in;
        NF_TRY(nf_source_file_read(c->f, m->data + c->cpos, c->in, k, err));
        c->cpos += k;
        c->z.next_in = c->in;
        c->z.avail_in = (uInt)k;
    }
    c->z.next_out = out;
    c->z.avail_out = (uInt)len;
    const int rc = inflate(&c->z, Z_NO_FLUSH);
    *made = len - c->z.avail_out;
    if (rc == Z_MEM_ERROR) return nf_common_nomem_in(err, c->f->path);
    if (rc == Z_STREAM_END) c->ended = true;
    else if (rc == Z_BUF_ERROR && *made == 0) return corrupt(c->f, c, "the compressed bytes end early", err);
    else if (rc != Z_OK && rc != Z_BUF_ERROR) return corrupt(c->f, c, "corrupt deflate data", err);
    return NF_OK;
}

/* The next len bytes of c's member into out.  At the member's end the stream must end too (a
 * stream inflating to more than the directory says is refused) and the CRC-32 must be the
 * directory's; a read that stops short of the end checks neither. */
static nf_status produce(cursor *c, uint8_t *out, size_t len, nf_error *err)
{
    const nf_inflate_member *m = c->m;
    if (len > m->usize - c->pos) return corrupt(c->f, c, "a read past the member's inflated size", err);
    for (size_t done = 0; done < len;) {
        if (c->ended) return corrupt(c->f, c, "the deflate stream ends early", err);
        size_t made = 0;
        NF_TRY(step(c, out + done, len - done, &made, err));
        c->crc = (uint32_t)crc32(c->crc, out + done, (uInt)made);
        c->pos += made;
        done += made;
    }
    if (c->pos == m->usize && len > 0) {
        uint8_t more;
        size_t made = 0;
        while (!c->ended && made == 0) NF_TRY(step(c, &more, 1, &made, err));
        if (made) return corrupt(c->f, c, "the deflate stream inflates to more than the directory's size", err);
        if (c->crc != m->crc32) return corrupt(c->f, c, "CRC-32 differs from the directory's", err);
    }
    return NF_OK;
}

/* The cursor to serve a read of m at `at`: the one on m furthest along but not past it, else the
 * least recently used, restarted. */
static nf_status pick(nf_inflate_pool *p, const src_file *f, const nf_inflate_member *m, uint64_t at, cursor **out,
                      nf_error *err)
{
    cursor *best = NULL, *lru = &p->c[0];
    for (unsigned i = 0; i < NF_INFLATE_CURSORS; i++) {
        cursor *c = &p->c[i];
        if (c->m == m && c->f == f && c->pos <= at && (!best || c->pos > best->pos)) best = c;
        if (c->used < lru->used) lru = c;
    }
    if (!best) {
        best = lru;
        NF_TRY(restart(best, f, m, err));
    }
    best->used = ++p->clock;
    *out = best;
    return NF_OK;
}

/* Member m whole, in a slot of the pool (the least recently used one replaced), inflated by a
 * cursor of its own: the CRC and size checks of a read to the end hold. */
static nf_status whole_of(nf_inflate_pool *p, const src_file *f, const nf_inflate_member *m, whole **out, nf_error *err)
{
    whole *lru = &p->w[0];
    for (unsigned i = 0; i < NF_INFLATE_WHOLE_SLOTS; i++) {
        whole *w = &p->w[i];
        if (w->m == m && w->f == f) {
            w->used = ++p->clock;
            *out = w;
            return NF_OK;
        }
        if (w->used < lru->used) lru = w;
    }
    free(lru->bytes);
    lru->m = NULL;
    lru->bytes = malloc(m->usize ? (size_t)m->usize : 1);
    if (!lru->bytes) return nf_common_nomem_in(err, f->path);
    cursor *c = &p->c[0];
    for (unsigned i = 1; i < NF_INFLATE_CURSORS; i++)
        if (p->c[i].used < c->used) c = &p->c[i];
    NF_TRY(restart(c, f, m, err));
    c->used = ++p->clock;
    nf_status st = NF_OK;
    for (uint64_t done = 0; st == NF_OK && done < m->usize;) {
        const size_t k = m->usize - done < ((uint64_t)1 << 30) ? (size_t)(m->usize - done) : (size_t)1 << 30;
        st = produce(c, lru->bytes + done, k, err);
        done += k;
    }
    if (st != NF_OK) {
        c->m = NULL;
        return st;
    }
    lru->m = m;
    lru->f = f;
    lru->used = ++p->clock;
    *out = lru;
    return NF_OK;
}

nf_status nf_source_inflate_read_whole(nf_inflate_pool *p, const src_file *f, const nf_inflate_member *m, uint64_t at,
                                       void *buf, size_t len, nf_error *err)
{
    if (m->usize > NF_INFLATE_WHOLE_MAX || at > m->usize || len > m->usize - at)
        return nf_error_set(err, NF_ERR_USAGE, "%s: member %s: bytes [%llu, +%zu) of %llu, whole", f->path, m->name,
                            (unsigned long long)at, len, (unsigned long long)m->usize);
    pthread_mutex_lock(&p->lock);
    whole *w = NULL;
    nf_status st = whole_of(p, f, m, &w, err);
    if (st == NF_OK) memcpy(buf, w->bytes + at, len);
    pthread_mutex_unlock(&p->lock);
    return st;
}

nf_status nf_source_inflate_read(nf_inflate_pool *p, const src_file *f, const nf_inflate_member *m, uint64_t at,
                                 void *buf, size_t len, nf_error *err)
{
    if (at > m->usize || len > m->usize - at)
        return nf_error_set(err, NF_ERR_USAGE, "%s: member %s: bytes [%llu, +%zu) outside its %llu", f->path, m->name,
                            (unsigned long long)at, len, (unsigned long long)m->usize);
    pthread_mutex_lock(&p->lock);
    cursor *c = NULL;
    nf_status st = pick(p, f, m, at, &c, err);
    while (st == NF_OK && c->pos < at) {
        const size_t k = at - c->pos < sizeof p->skip ? (size_t)(at - c->pos) : sizeof p->skip;
        st = produce(c, p->skip, k, err);
    }
    for (size_t done = 0; st == NF_OK && done < len;) { /* avail_out is 32-bit */
        const size_t k = len - done < ((size_t)1 << 30) ? len - done : (size_t)1 << 30;
        st = produce(c, (uint8_t *)buf + done, k, err);
        done += k;
    }
    if (st != NF_OK && c) c->m = NULL; /* a cursor that failed is not continued */
    pthread_mutex_unlock(&p->lock);
    return st;
}
