/* The SHA-256 of a whole file (sha256_file.h). */
#include "common/sha256_file.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/hex.h"
#include "common/io.h"
#include "common/open_regular.h"
#include "common/sha256.h"
#include "common/sha256_cache.h"

/* A block large enough that the hash, not the system call, sets the pace; small enough to stay
 * in cache between read and hash. */
#define SHA256_FILE_BLOCK ((size_t)1 << 20)

/* The file open as fd (sb its fstat) hashed from its first byte; closes fd. */
static nf_status hash_fd(int fd, const struct stat *sb, const char *shown, uint64_t expect, volatile int *stop,
                         volatile int *cancel, uint64_t *bytes, char hex[NF_SHA256_HEX + 1], nf_error *err)
{
    if (expect != UINT64_MAX && (uint64_t)sb->st_size != expect) {
        nf_io_close(fd);
        return nf_error_set(err, NF_ERR_INVALID, "%s: %llu bytes, %llu when the conversion was planned: it changed",
                            shown, (unsigned long long)sb->st_size, (unsigned long long)expect);
    }
    uint8_t *buf = malloc(SHA256_FILE_BLOCK);
    if (!buf) {
        nf_io_close(fd);
        return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    }
    nf_sha256 s;
    nf_sha256_init(&s);
    nf_status st = NF_OK;
    uint64_t at = 0;
    for (;;) {
        if ((stop && *stop) || (cancel && *cancel)) {
            st = nf_error_set(err, NF_ERR_IO, "interrupted");
            break;
        }
        ssize_t n = pread(fd, buf, SHA256_FILE_BLOCK, (off_t)at);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            st = nf_error_errno(err, errno, "%s: cannot read", shown);
            break;
        }
        if (n == 0) break;
        nf_sha256_update(&s, buf, (size_t)n);
        at += (uint64_t)n;
    }
    free(buf);
    nf_io_close(fd);
    uint8_t d[32];
    nf_sha256_final(&s, d);
    if (st != NF_OK) return st;
    if (expect != UINT64_MAX && at != expect)
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: %llu bytes read, %llu when the conversion was planned: it changed", shown,
                            (unsigned long long)at, (unsigned long long)expect);
    nf_hex_bytes(d, sizeof d, hex);
    *bytes = at;
    return NF_OK;
}

nf_status nf_sha256_file(const char *path, const char *shown, uint64_t expect, volatile int *stop, volatile int *cancel,
                         uint64_t *bytes, char hex[NF_SHA256_HEX + 1], nf_error *err)
{
    int fd = -1;
    struct stat sb;
    hex[0] = '\0';
    *bytes = 0;
    NF_TRY(nf_common_open_regular(path, shown, NF_ERR_INVALID, &fd, &sb, err));
    return hash_fd(fd, &sb, shown, expect, stop, cancel, bytes, hex, err);
}

/* The same file, unchanged: device, inode, size, modification and change times. */
static bool same_identity(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
           a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static nf_status changed(const char *shown, nf_error *err)
{
    return nf_error_set(err, NF_ERR_INVALID,
                        "%s: changed since the conversion was planned (written, or another file put in its place): "
                        "its digest would not be of the bytes converted",
                        shown);
}

nf_status nf_sha256_file_cached(const char *path, const char *shown, const struct stat *planned, volatile int *stop,
                                volatile int *cancel, uint64_t *bytes, char hex[NF_SHA256_HEX + 1], bool *hit,
                                nf_error *err)
{
    int fd = -1;
    struct stat sb, after;
    hex[0] = '\0';
    *bytes = 0;
    *hit = false;
    NF_TRY(nf_common_open_regular(path, shown, NF_ERR_INVALID, &fd, &sb, err));
    if (!same_identity(&sb, planned)) {
        nf_io_close(fd);
        return changed(shown, err);
    }
    if (nf_sha256_cache_get(&sb, hex)) {
        nf_io_close(fd);
        *bytes = (uint64_t)sb.st_size;
        *hit = true;
        return NF_OK;
    }
    int again = dup(fd); /* for the fstat after the read (hash_fd closes fd) */
    nf_status st = again < 0 ? nf_error_errno(err, errno, "%s", shown)
                             : hash_fd(fd, &sb, shown, (uint64_t)planned->st_size, stop, cancel, bytes, hex, err);
    if (again < 0) nf_io_close(fd);
    /* not written while it was read: else its digest is of no one state of the file */
    if (st == NF_OK && (fstat(again, &after) != 0 || !same_identity(&after, &sb))) st = changed(shown, err);
    if (st == NF_OK) nf_sha256_cache_put(&sb, hex);
    if (again >= 0) nf_io_close(again);
    return st;
}
