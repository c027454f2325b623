/* The artifact reader (docs/artifact.md 7): framing and the whole directory are checked at open;
 * continuation parts are opened lazily, on the first read that needs them, with their header,
 * index, artifact_id and size checked; range reads are routed across the file segments and go
 * through pread or a read-only mapping.  Per-object checks are deferred to
 * nf_artifact_check_object so that an artifact holding an unknown format still opens.
 *
 * Open parts are a bounded cache (common/fd_cache.h, at most NF_OPEN_PARTS_MAX, container_internal.h;
 * docs/security.md 7.1, F8): the entry stays open, at most that many continuation parts hold a
 * descriptor at once, the least recently used idle one is closed to open another, and a closed
 * part is reopened on demand and checked again like the first time, plus that it is still the
 * file first checked (same device and inode, the cache's check): a part replaced while the
 * artifact is open is an error, never mixed data.  A mapped part (NF_READ_MMAP, mapped at its
 * first open) keeps its mapping and no descriptor.  Reads hold a part only for the duration of
 * one pread; a reader that finds every cached part busy waits for one.
 *
 * Status classes (docs/decisions.md D18): the entry failing to open or read is NF_ERR_IO; every
 * contract violation, including a missing or foreign part, is NF_ERR_INVALID. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <ninfer/container.h>
#include <ninfer/escape.h>

#include "common/fail.h"
#include "common/fd_cache.h"
#include "common/open_regular.h"
#include "common/hex.h"
#include "common/checked.h"
#include "common/io.h"
#include "container/container_internal.h"

typedef struct part_state {
    int fd;             /* the entry's, always open; -1 for a continuation part (the cache holds it) */
    const uint8_t *map; /* whole file, NF_READ_MMAP only (NULL: use pread); no descriptor is kept */
    uint64_t size;      /* exact file size, set by the first successful check */
    bool checked;       /* opened and checked at least once (under the cache's lock) */
} part_state;

typedef struct object_ctx {
    nf_artifact *a;
    const nf_object *o;
} object_ctx;

struct nf_artifact {
    char *path;
    char *prefix; /* directory part of path including the final '/', or "" */
    const char *entry_name;
    nf_read_mode mode;
    uint8_t header[NF_HEADER_BYTES];
    uint64_t json_bytes;
    uint64_t entry_payload_start;
    uint8_t *json;
    json_t *root;
    nf_dir dir;
    part_state *parts;
    object_ctx *octx;
    nf_fd_cache *fds; /* the continuation parts' descriptors, shared by every reader thread */
};

static nf_fd_cache *parts_cache_new(nf_artifact *a);

static uint64_t rd_u64le(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static void unmap(part_state *p)
{
    if (p->map) munmap((void *)p->map, (size_t)p->size);
    p->map = NULL;
}

/* Map a whole file read-only; on failure the reader quietly uses pread (mapping is an
 * optimisation, never a requirement).  As with any mapping, a file truncated by someone else
 * while mapped raises SIGBUS on access; pread mode reports such a file as an I/O error. */
static void try_map(part_state *p)
{
    size_t len;
    if (p->size == 0 || !nf_u64_to_size(p->size, &len)) return;
    void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, p->fd, 0);
    if (m != MAP_FAILED) p->map = m;
}

void nf_artifact_close(nf_artifact *a)
{
    if (!a) return;
    nf_common_fd_cache_free(a->fds);
    if (a->parts) {
        for (size_t i = 0; i < a->dir.nfiles; i++) {
            unmap(&a->parts[i]);
            if (a->parts[i].fd >= 0) nf_io_close(a->parts[i].fd);
        }
    }
    free(a->parts);
    free(a->octx);
    nf_dir_free(&a->dir);
    json_decref(a->root);
    free(a->json);
    free(a->prefix);
    free(a->path);
    free(a);
}

static nf_status open_entry(nf_artifact *a, part_state *entry, nf_error *err)
{
    const char *path = a->path;
    /* a device or FIFO is a system-level mistake, not an artifact: NF_ERR_IO */
    int fd, e;
    struct stat st;
    NF_TRY(nf_common_open_regular(path, nf_esc(path).s, NF_ERR_IO, &fd, &st, err));
    entry->fd = fd;
    uint64_t size = (uint64_t)st.st_size;
    entry->size = size;
    if (size < NF_HEADER_BYTES) {
        /* A file of /proc or /sys says it is regular and 0 bytes long, then reads fail
         * (/proc/self/mem) or return text: not a file of ours, and not an invalid artifact
         * either, so a system error like a device (docs/decisions.md, "Exit statuses": exit 3).  A file that
         * reads back exactly its size is a short artifact (invalid, exit 1). */
        uint8_t probe[NF_HEADER_BYTES + 1];
        size_t got = 0;
        if ((e = nf_io_pread_some(fd, probe, sizeof probe, 0, &got)) != 0)
            return nf_error_errno(err, e, "%s: cannot read", nf_esc(path).s);
        if (got != size)
            return nf_error_set(err, NF_ERR_IO,
                                "%s: not a regular file (it reports %llu bytes and reads %s%zu: a "
                                "pseudo-file such as /proc's)",
                                nf_esc(path).s, (unsigned long long)size, got == sizeof probe ? "at least " : "", got);
    }
    if (size < NF_HEADER_BYTES)
        return nf_error_set(err, NF_ERR_INVALID, "%s: the entry file is %llu bytes, shorter than its 32-byte header",
                            nf_esc(path).s, (unsigned long long)size);
    if ((e = nf_io_pread_full(fd, a->header, NF_HEADER_BYTES, 0)) != 0)
        return nf_error_errno(err, e, "%s: cannot read the header", nf_esc(path).s);
    if (memcmp(a->header, NF_MAGIC_ENTRY, NF_MAGIC_BYTES) != 0) {
        if (memcmp(a->header, NF_MAGIC_ENTRY_V2, NF_MAGIC_BYTES) == 0)
            return nf_error_set(err, NF_ERR_INVALID,
                                "%s: container v2 (magic NINFER\\0\\2): upgrade the artifact to "
                                "container v3",
                                nf_esc(path).s);
        if (memcmp(a->header, NF_MAGIC_ENTRY_V1, NF_MAGIC_BYTES) == 0)
            return nf_error_set(err, NF_ERR_INVALID,
                                "%s: container v1 (magic NINFER\\0\\1) is not supported; "
                                "upgrade the artifact to container v3",
                                nf_esc(path).s);
        /* M4: the bytes of a file that is not what it claims to be are not shown (it may be a
         * symlink to anything). */
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: not a .ninfer artifact (bad magic; expected 4e494e4645520003, "
                            "NINFER\\0\\3)",
                            nf_esc(path).s);
    }
    uint64_t jb = rd_u64le(a->header + 8);
    if (jb == 0 || jb > size - NF_HEADER_BYTES)
        return nf_error_set(err, NF_ERR_INVALID, "%s: json_bytes %llu outside (0, file size - 32 = %llu]",
                            nf_esc(path).s, (unsigned long long)jb, (unsigned long long)(size - NF_HEADER_BYTES));
    if (jb > NF_MAX_JSON_BYTES)
        return nf_error_set(err, NF_ERR_INVALID, "%s: json_bytes %llu exceeds the reader's limit of %llu",
                            nf_esc(path).s, (unsigned long long)jb, (unsigned long long)NF_MAX_JSON_BYTES);
    a->json_bytes = jb;
    a->json = malloc((size_t)jb + 1);
    if (!a->json) return nf_error_set(err, NF_ERR_NOMEM, "%s: out of memory for the directory", nf_esc(path).s);
    if ((e = nf_io_pread_full(fd, a->json, (size_t)jb, NF_HEADER_BYTES)) != 0)
        return nf_error_errno(err, e, "%s: cannot read the directory", nf_esc(path).s);
    a->json[jb] = 0;
    return NF_OK;
}

nf_status nf_artifact_open(const char *path, nf_read_mode mode, nf_artifact **out, nf_error *err)
{
    if (!path || !out) return nf_error_set(err, NF_ERR_USAGE, "nf_artifact_open: NULL argument");
    *out = NULL;
    nf_artifact *a = calloc(1, sizeof *a);
    if (!a) return nf_common_nomem_in(err, nf_esc(path).s);
    a->mode = mode;
    a->path = strdup(path);
    const char *slash = strrchr(path, '/');
    size_t plen = slash ? (size_t)(slash - path) + 1 : 0;
    a->prefix = malloc(plen + 1);
    if (!a->path || !a->prefix) {
        nf_artifact_close(a);
        return nf_common_nomem_in(err, nf_esc(path).s);
    }
    memcpy(a->prefix, path, plen);
    a->prefix[plen] = '\0';
    a->entry_name = a->path + plen;

    part_state entry = {.fd = -1};
    nf_status st = open_entry(a, &entry, err);
    if (st == NF_OK) {
        st = nf_dir_parse(a->json, (size_t)a->json_bytes, a->entry_name, &a->root, &a->dir, err);
        if (st != NF_OK) nf_error_prefix(err, "%s", nf_esc(path).s);
    }
    if (st == NF_OK) {
        uint64_t expect;
        if (!nf_align_up_u64(NF_HEADER_BYTES + a->json_bytes, NF_PAGE_BYTES, &a->entry_payload_start) ||
            !nf_add_u64(a->entry_payload_start, a->dir.files[0].payload_bytes, &expect)) {
            st = nf_error_set(err, NF_ERR_INVALID, "%s: the entry file size overflows U64", nf_esc(path).s);
        } else if (expect != entry.size) {
            st = nf_error_set(err, NF_ERR_INVALID,
                              "%s: the entry file is %llu bytes, expected %llu (payload start %llu + "
                              "files[0].payload_bytes %llu)",
                              nf_esc(path).s, (unsigned long long)entry.size, (unsigned long long)expect,
                              (unsigned long long)a->entry_payload_start,
                              (unsigned long long)a->dir.files[0].payload_bytes);
        }
    }
    if (st == NF_OK) {
        a->parts = calloc(a->dir.nfiles, sizeof *a->parts);
        a->octx = calloc(a->dir.nobjects, sizeof *a->octx);
        for (size_t i = 0; a->parts && i < a->dir.nfiles; i++) a->parts[i].fd = -1;
        if (a->parts && a->octx) a->fds = parts_cache_new(a);
        if (!a->parts || !a->octx || !a->fds) st = nf_common_nomem_in(err, nf_esc(path).s);
    }
    if (st != NF_OK) {
        if (entry.fd >= 0) nf_io_close(entry.fd);
        nf_artifact_close(a);
        return st;
    }
    a->parts[0] = entry;
    a->parts[0].checked = true;
    if (mode == NF_READ_MMAP) try_map(&a->parts[0]);
    for (size_t i = 0; i < a->dir.nobjects; i++) {
        a->octx[i].a = a;
        a->octx[i].o = &a->dir.objects[i];
    }
    *out = a;
    return NF_OK;
}

/* ---------------------------------------------------------------- accessors */
const char *nf_artifact_path(const nf_artifact *a) { return a->path; }
const uint8_t *nf_artifact_id(const nf_artifact *a) { return a->header + 16; }
void nf_artifact_id_hex(const nf_artifact *a, char out[33]) { nf_hex_bytes(a->header + 16, NF_ARTIFACT_ID_BYTES, out); }
uint64_t nf_artifact_json_bytes(const nf_artifact *a) { return a->json_bytes; }
uint64_t nf_artifact_payload_bytes(const nf_artifact *a) { return a->dir.total_payload; }
uint64_t nf_artifact_entry_payload_start(const nf_artifact *a) { return a->entry_payload_start; }
const uint8_t *nf_artifact_json_text(const nf_artifact *a) { return a->json; }
const uint8_t *nf_artifact_header(const nf_artifact *a) { return a->header; }
const struct json_t *nf_artifact_directory(const nf_artifact *a) { return a->root; }
size_t nf_artifact_object_count(const nf_artifact *a) { return a->dir.nobjects; }

const nf_object *nf_artifact_object(const nf_artifact *a, size_t index)
{
    return index < a->dir.nobjects ? &a->dir.objects[index] : NULL;
}

const nf_object *nf_artifact_find(const nf_artifact *a, const char *id)
{
    size_t index;
    if (!id || !nf_strset_find(&a->dir.ids, id, NULL, &index)) return NULL;
    return &a->dir.objects[index];
}

size_t nf_artifact_file_count(const nf_artifact *a) { return a->dir.nfiles; }

const nf_file_entry *nf_artifact_file(const nf_artifact *a, size_t index)
{
    return index < a->dir.nfiles ? &a->dir.files[index] : NULL;
}

/* ---------------------------------------------------------------- parts (2.8 step 4) */
/* prefix + files[i].path, malloc'ed (NULL without memory). */
static char *part_path(const nf_artifact *a, size_t i)
{
    size_t need = strlen(a->prefix) + strlen(a->dir.files[i].path) + 1;
    char *path = malloc(need);
    if (path) snprintf(path, need, "%s%s", a->prefix, a->dir.files[i].path);
    return path;
}

/* Open part i and check it, for the cache (its lock held): magic, index, artifact id, exact
 * size; the cache then checks on a reopen that it is the file the first check found.  At its
 * first open in NF_READ_MMAP mode a part is mapped and keeps no descriptor (*fd -1). */
static nf_status open_part_locked(void *ctx, size_t i, int *fdp, struct stat *sbp, int *sys_errno, nf_error *err)
{
    nf_artifact *a = ctx;
    part_state *p = &a->parts[i];
    const nf_file_entry *f = &a->dir.files[i];
    char *path = part_path(a, i);
    if (!path) return nf_common_nomem(err);
    nf_escaped shown = nf_esc(path);
    nf_status st = NF_OK;
    int fd = nf_io_open(path, O_RDONLY | O_NONBLOCK, 0); /* a FIFO must not block the open */
    free(path);
    if (fd < 0) {
        int e = errno;
        *sys_errno = e;
        if (e == ENOENT || e == ENOTDIR)
            return nf_error_set(err, NF_ERR_INVALID, "missing part file %s (files[%zu])", shown.s, i);
        return nf_error_errno(err, e, "cannot open part file %s", shown.s);
    }
    struct stat sb;
    uint8_t hdr[NF_HEADER_BYTES];
    uint64_t expect = NF_PAGE_BYTES + f->payload_bytes; /* payload_bytes <= total - 1: no overflow */
    int e = nf_io_fstat(fd, &sb);
    if (e) {
        st = nf_error_errno(err, e, "cannot stat part file %s", shown.s);
    } else if (!S_ISREG(sb.st_mode)) {
        st = nf_error_set(err, NF_ERR_INVALID, "part %s (files[%zu]) is not a regular file", shown.s, i);
    } else if ((uint64_t)sb.st_size < NF_HEADER_BYTES) {
        st = nf_error_set(err, NF_ERR_INVALID, "part %s is %llu bytes, shorter than its 32-byte header", shown.s,
                          (unsigned long long)sb.st_size);
    } else if ((e = nf_io_pread_full(fd, hdr, sizeof hdr, 0)) != 0) {
        st = nf_error_errno(err, e, "cannot read the header of part %s", shown.s);
    } else if (memcmp(hdr, NF_MAGIC_PART, NF_MAGIC_BYTES) != 0) {
        /* M4: a file that is not a part is not shown, not even its first bytes (a part name
         * may be a symlink to anything). */
        st = nf_error_set(err, NF_ERR_INVALID,
                          "%s: not a .ninfer part (bad magic): its continuation header does "
                          "not belong to this entry (expected the magic NINPRT\\0\\3)",
                          shown.s);
    } else if (rd_u64le(hdr + 8) != i) {
        st = nf_error_set(err, NF_ERR_INVALID,
                          "continuation header of %s does not belong to this entry: "
                          "part_index %llu, expected %zu",
                          shown.s, (unsigned long long)rd_u64le(hdr + 8), i);
    } else if (memcmp(hdr + 16, a->header + 16, NF_ARTIFACT_ID_BYTES) != 0) {
        char got[33], want[33];
        nf_hex_bytes(hdr + 16, NF_ARTIFACT_ID_BYTES, got);
        nf_hex_bytes(a->header + 16, NF_ARTIFACT_ID_BYTES, want);
        st = nf_error_set(err, NF_ERR_INVALID,
                          "continuation header of %s does not belong to this entry: "
                          "artifact_id %s, the entry's is %s",
                          shown.s, got, want);
    } else if ((uint64_t)sb.st_size != expect) {
        st = nf_error_set(err, NF_ERR_INVALID, "part %s is %llu bytes, expected %llu (4096 + payload_bytes %llu)",
                          shown.s, (unsigned long long)sb.st_size, (unsigned long long)expect,
                          (unsigned long long)f->payload_bytes);
    }
    if (st != NF_OK) {
        nf_io_close(fd);
        return st;
    }
    *sbp = sb;
    *fdp = fd;
    if (!p->checked) {
        p->size = expect;
        p->checked = true;
        if (a->mode == NF_READ_MMAP) {
            p->fd = fd;
            try_map(p);
            p->fd = -1;
        }
        if (p->map) { /* the mapping keeps the file; the descriptor is not needed */
            nf_io_close(fd);
            *fdp = -1;
        }
    }
    return NF_OK;
}

static nf_status part_replaced(void *ctx, size_t i, nf_error *err)
{
    char *path = part_path(ctx, i);
    if (!path) return nf_common_nomem(err);
    nf_status st = nf_error_set(err, NF_ERR_INVALID,
                                "part %s (files[%zu]) was replaced while the artifact was open "
                                "(another file than the one checked first)",
                                nf_esc(path).s, i);
    free(path);
    return st;
}

static nf_fd_cache *parts_cache_new(nf_artifact *a)
{
    static const nf_fd_cache_ops ops = {open_part_locked, part_replaced};
    return nf_common_fd_cache_new(a->dir.nfiles, NF_OPEN_PARTS_MAX, &ops, a);
}

/* A part ready for one read: *map (a mapping) or *fd (a descriptor held until part_release).
 * The entry is always open. */
static nf_status part_acquire(nf_artifact *a, size_t i, int *fd, const uint8_t **map, nf_error *err)
{
    *fd = -1;
    *map = NULL;
    if (i == 0) {
        *fd = a->parts[0].fd;
        *map = a->parts[0].map;
        return NF_OK;
    }
    int e;
    NF_TRY(nf_common_fd_cache_acquire(a->fds, i, fd, &e, err));
    if (*fd < 0) *map = a->parts[i].map; /* (set under the cache's lock, before it said so) */
    return NF_OK;
}

static void part_release(nf_artifact *a, size_t i, int fd)
{
    if (i == 0 || fd < 0) return;
    nf_common_fd_cache_release(a->fds, i);
}

/* A file index the caller asks for must be one of the directory's files. */
static nf_status check_file_index(const nf_artifact *a, size_t index, nf_error *err)
{
    if (index < a->dir.nfiles) return NF_OK;
    return nf_error_set(err, NF_ERR_USAGE, "no file %zu (the artifact has %zu)", index, a->dir.nfiles);
}

/* The functions below the public entry points word their messages without the artifact's
 * path: each public function that takes only the artifact adds it once on the way out, and a
 * read through an object reader leaves it, with the object, to whoever chose the object
 * (docs/library.md, "Who names what"). */
static nf_status named(const nf_artifact *a, nf_error *err, nf_status st)
{
    return st == NF_OK ? st : nf_error_forward(err, st, "%s", nf_esc(a->path).s);
}

static nf_status open_part(nf_artifact *a, size_t index, nf_error *err)
{
    NF_TRY(check_file_index(a, index, err));
    int fd;
    const uint8_t *map;
    NF_TRY(part_acquire(a, index, &fd, &map, err));
    part_release(a, index, fd);
    return NF_OK;
}

nf_status nf_artifact_open_part(nf_artifact *a, size_t index, nf_error *err)
{
    return named(a, err, open_part(a, index, err));
}

/* ---------------------------------------------------------------- range reads (2.8 step 5) */
/* Index of the file holding logical byte x (x < total payload). */
static size_t file_of(const nf_artifact *a, uint64_t x)
{
    size_t lo = 0, hi = a->dir.nfiles; /* invariant: files[lo].logical_start <= x */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->dir.files[mid].logical_start <= x) lo = mid;
        else hi = mid;
    }
    return lo;
}

static nf_status payload_read(nf_artifact *a, uint64_t offset, void *buf, size_t len, nf_error *err)
{
    uint64_t end;
    if (!nf_add_u64(offset, (uint64_t)len, &end) || end > a->dir.total_payload)
        return nf_error_set(err, NF_ERR_INVALID, "range [%llu, %llu%s) outside the payload (%llu bytes)",
                            (unsigned long long)offset, (unsigned long long)(offset + (uint64_t)len),
                            end < offset ? " + 2^64" : "", (unsigned long long)a->dir.total_payload);
    uint8_t *dst = buf;
    uint64_t pos = offset;
    size_t i = len ? file_of(a, offset) : 0;
    while (pos < end) {
        const nf_file_entry *f = &a->dir.files[i];
        uint64_t seg_end = f->logical_start + f->payload_bytes;
        uint64_t hi = end < seg_end ? end : seg_end;
        size_t n = (size_t)(hi - pos); /* <= len */
        int fd;
        const uint8_t *map;
        NF_TRY(part_acquire(a, i, &fd, &map, err));
        uint64_t at = (i == 0 ? a->entry_payload_start : NF_PAGE_BYTES) + (pos - f->logical_start);
        if (map) {
            memcpy(dst, map + at, n);
        } else {
            int e = nf_io_pread_full(fd, dst, n, at);
            part_release(a, i, fd);
            if (e) {
                return nf_error_errno(err, e, "cannot read %zu bytes at offset %llu of %s", n, (unsigned long long)at,
                                      i == 0 ? nf_esc(a->path).s : nf_esc(f->path).s);
            }
        }
        dst += n;
        pos = hi;
        i++;
    }
    return NF_OK;
}

nf_status nf_artifact_read(nf_artifact *a, uint64_t offset, void *buf, size_t len, nf_error *err)
{
    return named(a, err, payload_read(a, offset, buf, len, err));
}

/* Raw bytes [offset, offset + len) of file `index` itself (0: the entry), not of the logical
 * payload: what verify needs for the bytes that belong to no payload (the zero gap after the
 * entry's JSON, the zero tail [32, 4096) of a continuation header).  Opens a part first. */
static nf_status file_read(nf_artifact *a, size_t index, uint64_t offset, void *buf, size_t len, nf_error *err)
{
    NF_TRY(check_file_index(a, index, err));
    int fd;
    const uint8_t *map;
    NF_TRY(part_acquire(a, index, &fd, &map, err));
    uint64_t size = a->parts[index].size; /* set by the part's first check, never changed */
    const char *name = index == 0 ? a->path : a->dir.files[index].path;
    uint64_t end;
    if (!nf_add_u64(offset, (uint64_t)len, &end) || end > size) {
        part_release(a, index, fd);
        return nf_error_set(err, NF_ERR_INVALID, "range [%llu, %llu) outside %s (%llu bytes)",
                            (unsigned long long)offset, (unsigned long long)(offset + (uint64_t)len), nf_esc(name).s,
                            (unsigned long long)size);
    }
    if (map) {
        memcpy(buf, map + offset, len);
        return NF_OK;
    }
    int e = nf_io_pread_full(fd, buf, len, offset);
    part_release(a, index, fd);
    if (e)
        return nf_error_errno(err, e, "cannot read %zu bytes at offset %llu of %s", len, (unsigned long long)offset,
                              nf_esc(name).s);
    return NF_OK;
}

nf_status nf_artifact_read_file(nf_artifact *a, size_t index, uint64_t offset, void *buf, size_t len, nf_error *err)
{
    return named(a, err, file_read(a, index, offset, buf, len, err));
}

/* ---------------------------------------------------------------- objects (2.8 step 6) */
nf_status nf_artifact_check_object(const nf_artifact *a, const nf_object *o, nf_geometry *g, nf_error *err)
{
    /* the messages say what is wrong inside the object; the caller names the artifact and the
     * object (docs/library.md, "Who names what") */
    (void)a;
    nf_geometry local;
    if (!g) g = &local;
    nf_escaped layout = nf_esc(o->layout_name), format = nf_esc(o->format_name);
    if (o->kind == NF_OBJECT_RESOURCE) {
        if (!o->layout || !o->layout->resource_encoding)
            return nf_error_set(err, NF_ERR_INVALID,
                                "unknown resource encoding '%s' (only raw_bytes_v1 is interpretable)", layout.s);
        return nf_geometry_resource(g, o->bytes, err);
    }
    if (!o->format) return nf_error_set(err, NF_ERR_INVALID, "unknown format '%s'", format.s);
    if (!o->layout) return nf_error_set(err, NF_ERR_INVALID, "unknown layout '%s'", layout.s);
    if (o->layout->resource_encoding)
        return nf_error_set(err, NF_ERR_INVALID, "'%s' is a resource encoding, not a tensor layout", layout.s);
    if (!nf_layout_accepts(o->layout, o->format))
        return nf_error_set(err, NF_ERR_INVALID, "layout '%s' does not accept format '%s'", layout.s, format.s);
    if (o->divisors > 1 && o->format->category != NF_CAT_NVFP4)
        return nf_error_set(err, NF_ERR_INVALID, "divisors %llu: only nvfp4 stores more than one divisor",
                            (unsigned long long)o->divisors);
    NF_TRY(nf_geometry_init(g, o->layout, o->format, o->rank, o->shape, o->divisors, err));
    if (g->bytes != o->bytes)
        return nf_error_set(err, NF_ERR_INVALID, "bytes %llu != encoded size %llu of %s %s",
                            (unsigned long long)o->bytes, (unsigned long long)g->bytes, format.s, layout.s);
    uint64_t align = o->layout->alignment ? o->layout->alignment : NF_TENSOR_ALIGNMENT;
    if (o->offset % align != 0)
        return nf_error_set(err, NF_ERR_INVALID, "offset %llu is not %llu-aligned", (unsigned long long)o->offset,
                            (unsigned long long)align);
    return NF_OK;
}

static nf_status object_read(void *ctx, uint64_t offset, void *buf, size_t len, nf_error *err)
{
    object_ctx *c = ctx;
    uint64_t end;
    if (!c) return nf_error_set(err, NF_ERR_USAGE, "object reader: the object is not part of this artifact");
    if (!nf_add_u64(offset, (uint64_t)len, &end) || end > c->o->bytes)
        return nf_error_set(err, NF_ERR_INVALID, "read of %zu bytes at %llu beyond the object's %llu bytes", len,
                            (unsigned long long)offset, (unsigned long long)c->o->bytes);
    return payload_read(c->a, c->o->offset + offset, buf, len, err);
}

void nf_artifact_object_reader(nf_artifact *a, const nf_object *o, nf_byte_reader *r)
{
    r->read = object_read;
    r->ctx = NULL;
    /* Compare addresses as integers: relational operators on pointers into different arrays
     * are undefined. */
    uintptr_t base = (uintptr_t)a->dir.objects, p = (uintptr_t)o;
    if (o && p >= base && p < base + a->dir.nobjects * sizeof *a->dir.objects &&
        (p - base) % sizeof *a->dir.objects == 0) {
        r->ctx = &a->octx[(p - base) / sizeof *a->dir.objects];
    } else if (o && o->id) {
        /* A copy of a descriptor: find the artifact's own one by id. */
        size_t index;
        if (nf_strset_find(&a->dir.ids, o->id, NULL, &index)) r->ctx = &a->octx[index];
    }
}
