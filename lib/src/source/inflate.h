/* Deflated members of a PyTorch archive (inflate.c; docs/security.md 2.6): read with zlib in
 * chunks, never whole.  A source with deflated members owns one pool of inflate cursors, shared by
 * every reading thread under one lock; a read continues the cursor that stands at or before its
 * offset in that member, or restarts the least recently used one from the member's start, so
 * reading a tensor's rows in order inflates its member once.  Memory: NF_INFLATE_CURSORS cursors
 * of a zlib stream and NF_INFLATE_CHUNK bytes each, whatever the member's size, and the whole
 * members of strided views below. */
#ifndef NINFER_SOURCE_INFLATE_H
#define NINFER_SOURCE_INFLATE_H

#include <stddef.h>
#include <stdint.h>

#include "source/store.h"

#define NF_INFLATE_CURSORS 8u
#define NF_INFLATE_CHUNK ((size_t)64 << 10)
/* A strided view (a transposed weight) reads its member in no useful order: such a member is
 * inflated whole, once, into one of NF_INFLATE_WHOLE_SLOTS slots of the pool, which bounds it at
 * NF_INFLATE_WHOLE_MAX bytes (the reader refuses a strided view of a larger deflated member). */
#define NF_INFLATE_WHOLE_SLOTS 4u
#define NF_INFLATE_WHOLE_MAX ((uint64_t)64 << 20)

/* One deflated member: where its compressed bytes are, how many, what they inflate to. */
typedef struct nf_inflate_member {
    const char *name; /* for messages */
    uint64_t data;    /* file offset of the compressed bytes */
    uint64_t csize;
    uint64_t usize; /* the directory's uncompressed size: inflating to more or less is an error */
    uint32_t crc32; /* the directory's CRC-32, checked when a cursor reaches the member's end */
} nf_inflate_member;

typedef struct nf_inflate_pool nf_inflate_pool;

/* A new pool (NULL when out of memory); freed with nf_source_inflate_free. */
nf_inflate_pool *nf_source_inflate_new(void);
void nf_source_inflate_free(nf_inflate_pool *p);

/* Bytes [at, at + len) of member m of file f, inflated. */
nf_status nf_source_inflate_read(nf_inflate_pool *p, const src_file *f, const nf_inflate_member *m, uint64_t at,
                                 void *buf, size_t len, nf_error *err);
/* The same from the member inflated whole (m->usize <= NF_INFLATE_WHOLE_MAX), for strided views. */
nf_status nf_source_inflate_read_whole(nf_inflate_pool *p, const src_file *f, const nf_inflate_member *m, uint64_t at,
                                       void *buf, size_t len, nf_error *err);

#endif
