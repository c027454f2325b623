/* The zip archive torch.save writes (torch_zip.h), read from PKWARE's APPNOTE layout: the end of
 * central directory record (and, when a field is saturated, the zip64 locator and record), the
 * central directory's entries (sizes and offsets from the zip64 extra field where saturated), and
 * each member's local header, which places its data.  Every offset and size is checked against
 * the file before it is used. */
#include "source/torch_zip.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "common/fail.h"
#include "source/inflate.h"

#define EOCD_MIN 22u
#define EOCD_SEARCH (EOCD_MIN + 65535u)
#define CDIR_MAX_BYTES ((uint64_t)512 << 20)

static uint64_t rd(const uint8_t *p, unsigned k)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < k; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static nf_status zbad(const src_file *f, uint64_t at, const char *what, nf_error *err)
{
    return nf_error_set(err, NF_ERR_INVALID, "%s: zip byte %llu: %s", f->path, (unsigned long long)at, what);
}

int nf_source_zip_cmp_member(const void *a, const void *b)
{
    return strcmp(((const nf_zip_member *)a)->name, ((const nf_zip_member *)b)->name);
}

static int cmp_local(const void *a, const void *b)
{
    const nf_zip_member *x = *(const nf_zip_member *const *)a, *y = *(const nf_zip_member *const *)b;
    return x->local < y->local ? -1 : x->local > y->local;
}

void nf_source_zip_free(nf_zip *z)
{
    if (!z) return;
    for (size_t i = 0; i < z->n; i++) free(z->m[i].name);
    free(z->m);
    z->m = NULL;
    z->n = 0;
}

const nf_zip_member *nf_source_zip_find(const nf_zip *z, const char *name)
{
    nf_zip_member key = {.name = (char *)name};
    return bsearch(&key, z->m, z->n, sizeof *z->m, nf_source_zip_cmp_member);
}

/* The central directory's place: *cd its offset, *cd_size its bytes, *count its entries, and
 * *end where it must end (the zip64 record or the end record). */
static nf_status find_directory(src_file *f, uint64_t *cd, uint64_t *cd_size, uint64_t *count, uint64_t *end,
                                nf_error *err)
{
    const uint64_t tail = f->size < EOCD_SEARCH ? f->size : EOCD_SEARCH;
    if (f->size < EOCD_MIN) return zbad(f, 0, "too short for a zip archive's end record", err);
    uint8_t *buf = malloc((size_t)tail);
    if (!buf) return nf_common_nomem_in(err, f->path);
    nf_status st = nf_source_file_read(f, f->size - tail, buf, (size_t)tail, err);
    size_t at = SIZE_MAX;
    for (size_t k = (size_t)tail - EOCD_MIN + 1; st == NF_OK && k-- > 0;)
        if (rd(buf + k, 4) == 0x06054b50 && k + EOCD_MIN + rd(buf + k + 20, 2) == tail) {
            at = k;
            break;
        }
    if (st == NF_OK && at == SIZE_MAX) st = zbad(f, f->size, "no end of central directory record", err);
    if (st != NF_OK) {
        free(buf);
        return st;
    }
    const uint8_t *e = buf + at;
    const uint64_t eocd = f->size - tail + at;
    *count = rd(e + 10, 2);
    *cd_size = rd(e + 12, 4);
    *cd = rd(e + 16, 4);
    *end = eocd;
    const bool zip64 = *count == 0xFFFF || *cd_size == 0xFFFFFFFF || *cd == 0xFFFFFFFF;
    if (rd(e + 4, 2) != 0 || rd(e + 6, 2) != 0 || rd(e + 8, 2) != rd(e + 10, 2))
        st = zbad(f, eocd, "a multi-disk archive", err);
    free(buf);
    if (st != NF_OK || !zip64) return st;
    /* zip64: the locator just before the end record names the zip64 end record */
    uint8_t loc[20], rec[56];
    if (eocd < 20) return zbad(f, eocd, "no zip64 locator before the end record", err);
    NF_TRY(nf_source_file_read(f, eocd - 20, loc, 20, err));
    if (rd(loc, 4) != 0x07064b50) return zbad(f, eocd - 20, "no zip64 locator before the end record", err);
    if (rd(loc + 4, 4) != 0 || rd(loc + 16, 4) != 1) return zbad(f, eocd - 20, "a multi-disk archive", err);
    const uint64_t r = rd(loc + 8, 8);
    if (r > eocd - 20 || eocd - 20 - r < 56) return zbad(f, eocd - 20, "the zip64 record lies outside the file", err);
    NF_TRY(nf_source_file_read(f, r, rec, 56, err));
    if (rd(rec, 4) != 0x06064b50) return zbad(f, r, "no zip64 end of central directory record", err);
    if (rd(rec + 16, 4) != 0 || rd(rec + 20, 4) != 0 || rd(rec + 24, 8) != rd(rec + 32, 8))
        return zbad(f, r, "a multi-disk archive", err);
    *count = rd(rec + 32, 8);
    *cd_size = rd(rec + 40, 8);
    *cd = rd(rec + 48, 8);
    *end = r;
    return NF_OK;
}

/* A saturated 32-bit field's value from the zip64 extra field (id 1), which holds the saturated
 * ones in the order size, compressed size, offset. */
static nf_status zip64_fields(const src_file *f, uint64_t at, const uint8_t *x, size_t xlen, uint64_t *usize,
                              uint64_t *csize, uint64_t *offset, nf_error *err)
{
    uint64_t *want[3] = {usize, csize, offset};
    bool need = false;
    for (int k = 0; k < 3; k++) need = need || (want[k] && *want[k] == 0xFFFFFFFF);
    if (!need) return NF_OK;
    for (size_t p = 0; p + 4 <= xlen;) {
        const uint64_t id = rd(x + p, 2), len = rd(x + p + 2, 2);
        if (len > xlen - p - 4) break;
        if (id == 1) {
            size_t q = p + 4;
            for (int k = 0; k < 3; k++) {
                if (!want[k] || *want[k] != 0xFFFFFFFF) continue;
                if (q + 8 > p + 4 + len) return zbad(f, at, "a zip64 extra field too short for its sizes", err);
                *want[k] = rd(x + q, 8);
                q += 8;
            }
            return NF_OK;
        }
        p += 4 + len;
    }
    return zbad(f, at, "a saturated size or offset without its zip64 extra field", err);
}

static nf_status read_entries(src_file *f, nf_zip *z, const uint8_t *d, uint64_t dlen, uint64_t cd, uint64_t count,
                              nf_error *err)
{
    uint64_t p = 0;
    for (uint64_t i = 0; i < count; i++) {
        const uint64_t at = cd + p;
        if (dlen - p < 46 || rd(d + p, 4) != 0x02014b50)
            return zbad(f, at, "a central directory entry is missing or truncated", err);
        const uint8_t *e = d + p;
        const uint64_t flags = rd(e + 8, 2), method = rd(e + 10, 2), nlen = rd(e + 28, 2), xlen = rd(e + 30, 2),
                       clen = rd(e + 32, 2);
        uint64_t csize = rd(e + 20, 4), usize = rd(e + 24, 4), local = rd(e + 42, 4);
        if (dlen - p - 46 < nlen + xlen + clen) return zbad(f, at, "a central directory entry is truncated", err);
        if (flags & 1) return zbad(f, at, "an encrypted member", err);
        if (method != 0 && method != 8) return zbad(f, at, "a member neither stored nor deflated", err);
        NF_TRY(zip64_fields(f, at, e + 46 + nlen, (size_t)xlen, &usize, &csize, &local, err));
        if (nlen == 0 || nlen > NF_SOURCE_MAX_NAME_BYTES || memchr(e + 46, 0, (size_t)nlen))
            return zbad(f, at, "a member name empty, too long or holding a NUL byte", err);
        if (method == 0 && csize != usize) return zbad(f, at, "a stored member whose two sizes differ", err);
        /* the local header places the data: 30 bytes, its own name and extra field */
        uint8_t lh[30 + NF_SOURCE_MAX_NAME_BYTES];
        if (local > f->size || f->size - local < 30 + nlen) return zbad(f, at, "a local header outside the file", err);
        NF_TRY(nf_source_file_read(f, local, lh, 30 + (size_t)nlen, err));
        if (rd(lh, 4) != 0x04034b50) return zbad(f, local, "no local header where the directory says", err);
        if (rd(lh + 26, 2) != nlen || memcmp(lh + 30, e + 46, (size_t)nlen) != 0)
            return zbad(f, local, "the local header names another member than the directory does", err);
        const uint64_t data = local + 30 + rd(lh + 26, 2) + rd(lh + 28, 2);
        if (data > f->size || csize > f->size - data)
            return zbad(f, local, "a member's data runs past the end of the file", err);
        nf_zip_member *m = &z->m[z->n];
        if (!(m->name = strndup((const char *)e + 46, (size_t)nlen))) return nf_common_nomem_in(err, f->path);
        z->n++;
        m->local = local;
        m->data = data;
        m->csize = csize;
        m->size = usize;
        m->method = (unsigned)method;
        m->crc32 = (uint32_t)rd(e + 16, 4);
        p += 46 + nlen + xlen + clen;
    }
    return NF_OK;
}

/* A member (its local header, name, extra field and data) may not overlap another, and every
 * member lies before the central directory, which the zip64 records and the end record follow. */
static nf_status check_overlaps(src_file *f, nf_zip *z, uint64_t cd, nf_error *err)
{
    const nf_zip_member **by = malloc((z->n ? z->n : 1) * sizeof *by);
    if (!by) return nf_common_nomem_in(err, f->path);
    for (size_t i = 0; i < z->n; i++) by[i] = &z->m[i];
    qsort(by, z->n, sizeof *by, cmp_local);
    nf_status st = NF_OK;
    char what[NF_ERROR_MESSAGE_MAX / 2];
    for (size_t i = 0; st == NF_OK && i < z->n; i++) {
        const uint64_t end = by[i]->data + by[i]->csize; /* <= the file's size, checked when read */
        if (i + 1 < z->n && end > by[i + 1]->local) {
            snprintf(what, sizeof what, "members '%.200s' and '%.200s' overlap", by[i]->name, by[i + 1]->name);
            st = zbad(f, by[i + 1]->local, what, err);
        } else if (end > cd) {
            snprintf(what, sizeof what, "member '%.200s' reaches into the central directory", by[i]->name);
            st = zbad(f, cd, what, err);
        }
    }
    for (size_t i = 0; st == NF_OK && i + 1 < z->n; i++)
        if (strcmp(z->m[i].name, z->m[i + 1].name) == 0) {
            snprintf(what, sizeof what, "member '%.200s' appears twice", z->m[i].name);
            st = zbad(f, cd, what, err);
        }
    free(by);
    return st;
}

nf_status nf_source_zip_open(src_file *f, nf_zip *z, nf_error *err)
{
    memset(z, 0, sizeof *z);
    uint64_t cd = 0, cd_size = 0, count = 0, end = 0;
    NF_TRY(find_directory(f, &cd, &cd_size, &count, &end, err));
    if (cd > end || cd_size > end - cd) return zbad(f, cd, "the central directory lies outside the file", err);
    if (cd_size > CDIR_MAX_BYTES || count > NF_ZIP_MAX_MEMBERS || count > cd_size / 46)
        return zbad(f, cd, "a central directory larger than its entries or than the reader's cap", err);
    uint8_t *d = malloc(cd_size ? (size_t)cd_size : 1);
    z->m = calloc(count ? (size_t)count : 1, sizeof *z->m);
    nf_status st = d && z->m ? NF_OK : nf_common_nomem_in(err, f->path);
    if (st == NF_OK) st = nf_source_file_read(f, cd, d, (size_t)cd_size, err);
    if (st == NF_OK) st = read_entries(f, z, d, cd_size, cd, count, err);
    free(d);
    if (st == NF_OK) {
        qsort(z->m, z->n, sizeof *z->m, nf_source_zip_cmp_member);
        st = check_overlaps(f, z, cd, err);
    }
    if (st != NF_OK) nf_source_zip_free(z);
    return st;
}

nf_status nf_source_zip_read(src_file *f, const nf_zip_member *m, void *buf, size_t len, nf_error *err)
{
    if (len != m->size)
        return nf_error_set(err, NF_ERR_USAGE, "%s: member %s read with a wrong length", f->path, m->name);
    if (m->method == 0) return nf_source_file_read(f, m->data, buf, len, err);
    const nf_inflate_member im = {m->name, m->data, m->csize, m->size, m->crc32};
    nf_inflate_pool *p = nf_source_inflate_new();
    if (!p) return nf_common_nomem_in(err, f->path);
    nf_status st = nf_source_inflate_read(p, f, &im, 0, buf, len, err);
    nf_source_inflate_free(p);
    return st;
}
