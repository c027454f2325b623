/* The zip archive of a PyTorch checkpoint (torch_zip.c; docs/security.md 2.6): its members as the
 * central directory lists them (zip64 included), each checked against its local header, inside
 * the file (local header and name included) not overlapping another or reaching into the directory,
 * not encrypted. */
#ifndef NINFER_SOURCE_TORCH_ZIP_H
#define NINFER_SOURCE_TORCH_ZIP_H

#include <stddef.h>
#include <stdint.h>

#include "source/store.h"

#define NF_ZIP_MAX_MEMBERS (NF_SOURCE_MAX_TENSORS + 64u)

typedef struct nf_zip_member {
    char *name;
    uint64_t local;  /* file offset of its local header */
    uint64_t data;   /* file offset of its bytes */
    uint64_t csize;  /* stored bytes */
    uint64_t size;   /* bytes once inflated (csize when stored) */
    unsigned method; /* 0 stored, 8 deflated */
    uint32_t crc32;  /* the directory's CRC-32 of the inflated bytes */
} nf_zip_member;

typedef struct nf_zip {
    nf_zip_member *m; /* sorted by name */
    size_t n;
} nf_zip;

/* Reads the archive of file f (a file starting "PK\3\4"). */
nf_status nf_source_zip_open(src_file *f, nf_zip *z, nf_error *err);
const nf_zip_member *nf_source_zip_find(const nf_zip *z, const char *name);
/* The whole of member m (len == m->size) into buf. */
nf_status nf_source_zip_read(src_file *f, const nf_zip_member *m, void *buf, size_t len, nf_error *err);
void nf_source_zip_free(nf_zip *z);
/* qsort/bsearch order of members: by name. */
int nf_source_zip_cmp_member(const void *a, const void *b);

#endif
