#define _GNU_SOURCE /* fallocate */
/* File-I/O shim with a fault-injection hook (see io.h). */
#include "common/io.h"
#include "common/utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct {
    uint64_t calls[NF_IO_OP_COUNT];
    uint64_t fail_at[NF_IO_OP_COUNT];
    int errnum[NF_IO_OP_COUNT];
} g_fault;

/* The counters are shared by every thread doing I/O (the converter writes from a pool), so they
 * are updated atomically; arming and resetting are test-only and single-threaded. */
void nf_io_fault_arm(nf_io_op op, uint64_t n, int errnum)
{
    __atomic_store_n(&g_fault.calls[op], 0, __ATOMIC_RELAXED);
    __atomic_store_n(&g_fault.errnum[op], errnum, __ATOMIC_RELAXED);
    __atomic_store_n(&g_fault.fail_at[op], n, __ATOMIC_RELAXED);
}

void nf_io_fault_reset(void)
{
    for (int op = 0; op < NF_IO_OP_COUNT; op++) nf_io_fault_arm((nf_io_op)op, 0, 0);
}

uint64_t nf_io_calls(nf_io_op op) { return __atomic_load_n(&g_fault.calls[op], __ATOMIC_RELAXED); }

int nf_io_fault_point(nf_io_op op)
{
    uint64_t n = __atomic_add_fetch(&g_fault.calls[op], 1, __ATOMIC_RELAXED);
    uint64_t at = __atomic_load_n(&g_fault.fail_at[op], __ATOMIC_RELAXED);
    if (at != 0 && n == at) {
        int e = __atomic_load_n(&g_fault.errnum[op], __ATOMIC_RELAXED);
        if (e == NF_IO_FAULT_KILL) raise(SIGKILL); /* a crash at exactly this point */
        if (e == NF_IO_FAULT_STOP) {               /* a pause at exactly this point */
            raise(SIGSTOP);
            return 0;
        }
        return e ? e : -1;
    }
    return 0;
}

int nf_io_open(const char *path, int flags, mode_t mode)
{
    int e = nf_io_fault_point(NF_IO_OPEN);
    if (e) {
        errno = e > 0 ? e : EIO;
        return -1;
    }
    int fd;
    do {
        fd = open(path, flags | O_CLOEXEC, mode);
    } while (fd < 0 && errno == EINTR);
    return fd;
}

const char *nf_io_msg_path(const char *path, char *buf)
{
    size_t n = strlen(path);
    if (n <= NF_IO_MSG_PATH) return path;
    /* more of the end than of the start: the file name is what tells outputs apart */
    size_t head = (NF_IO_MSG_PATH - 3) / 3, tail = NF_IO_MSG_PATH - 3 - head;
    while (head > 0 && nf_utf8_continues((uint8_t)path[head])) head--;
    size_t t0 = n - tail;
    while (t0 < n && nf_utf8_continues((uint8_t)path[t0])) t0++;
    memcpy(buf, path, head);
    memcpy(buf + head, "...", 3);
    memcpy(buf + head + 3, path + t0, n - t0);
    buf[head + 3 + (n - t0)] = '\0';
    return buf;
}

char *nf_io_msg_path_dup(const char *path)
{
    char buf[NF_IO_MSG_PATH + 1];
    return strdup(nf_io_msg_path(path, buf));
}

const char *nf_io_kind_name(mode_t mode)
{
    if (S_ISREG(mode)) return "a regular file";
    if (S_ISLNK(mode)) return "a symbolic link";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISSOCK(mode)) return "a socket";
    return "a special file";
}

int nf_io_close(int fd) { return close(fd); }

int nf_io_pread_full(int fd, void *buf, size_t len, uint64_t offset)
{
    int e = nf_io_fault_point(NF_IO_READ);
    if (e) return e > 0 ? e : EIO;
    unsigned char *p = buf;
    while (len > 0) {
        ssize_t n = pread(fd, p, len, (off_t)offset);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (n == 0) return EIO; /* unexpected end of file */
        p += n;
        len -= (size_t)n;
        offset += (uint64_t)n;
    }
    return 0;
}

int nf_io_pread_some(int fd, void *buf, size_t len, uint64_t offset, size_t *got)
{
    *got = 0;
    int e = nf_io_fault_point(NF_IO_READ);
    if (e) return e > 0 ? e : EIO;
    ssize_t n;
    do {
        n = pread(fd, buf, len, (off_t)offset);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return errno;
    *got = (size_t)n;
    return 0;
}

int nf_io_pwrite_full(int fd, const void *buf, size_t len, uint64_t offset)
{
    int e = nf_io_fault_point(NF_IO_WRITE);
    if (e > 0) return e;
    if (e < 0) { /* short write: half the bytes land, then the disk is full */
        size_t half = len / 2;
        if (half > 0 && pwrite(fd, buf, half, (off_t)offset) < 0) return errno;
        return ENOSPC;
    }
    const unsigned char *p = buf;
    while (len > 0) {
        ssize_t n = pwrite(fd, p, len, (off_t)offset);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (n == 0) return ENOSPC;
        p += n;
        len -= (size_t)n;
        offset += (uint64_t)n;
    }
    return 0;
}

int nf_io_write_full(int fd, const void *buf, size_t len)
{
    int e = nf_io_fault_point(NF_IO_WRITE);
    if (e > 0) return e;
    if (e < 0) return ENOSPC;
    const unsigned char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (n == 0) return ENOSPC;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int nf_io_fdatasync(int fd)
{
    int e = nf_io_fault_point(NF_IO_SYNC);
    if (e) return e > 0 ? e : EIO;
    return fdatasync(fd) == 0 ? 0 : errno;
}

int nf_io_ftruncate(int fd, uint64_t size)
{
    int e = nf_io_fault_point(NF_IO_WRITE);
    if (e) return e > 0 ? e : ENOSPC;
    return ftruncate(fd, (off_t)size) == 0 ? 0 : errno;
}

int nf_io_allocate(int fd, uint64_t size)
{
    int e = nf_io_fault_point(NF_IO_WRITE);
    if (e) return e > 0 ? e : ENOSPC;
    /* Linux's fallocate, not posix_fallocate: where the filesystem cannot allocate ahead
     * (EOPNOTSUPP; ENOSYS; EINVAL on some), glibc's posix_fallocate would write every block
     * instead, and a plain size is what is wanted */
    if (size == 0 || fallocate(fd, 0, 0, (off_t)size) == 0) return ftruncate(fd, (off_t)size) == 0 ? 0 : errno;
    e = errno;
    if (e == EOPNOTSUPP || e == EINVAL || e == ENOSYS) return ftruncate(fd, (off_t)size) == 0 ? 0 : errno;
    return e;
}

int nf_io_fstat(int fd, struct stat *st) { return fstat(fd, st) == 0 ? 0 : errno; }

int nf_io_link(const char *from, const char *to)
{
    int e = nf_io_fault_point(NF_IO_LINK);
    if (e) return e > 0 ? e : EIO;
    return link(from, to) == 0 ? 0 : errno;
}

int nf_io_rename(const char *from, const char *to)
{
    int e = nf_io_fault_point(NF_IO_LINK);
    if (e) return e > 0 ? e : EIO;
    return rename(from, to) == 0 ? 0 : errno;
}

int nf_io_lstat(const char *path, struct stat *st) { return lstat(path, st) == 0 ? 0 : errno; }

int nf_io_fchmod(int fd, mode_t mode) { return fchmod(fd, mode) == 0 ? 0 : errno; }

int nf_io_unlink(const char *path)
{
    int e = nf_io_fault_point(NF_IO_UNLINK);
    if (e) return e > 0 ? e : EIO;
    return unlink(path) == 0 ? 0 : errno;
}

/* ---------------------------------------------------------------- buffered output */
bool nf_io_out_init(nf_io_out *o, int fd, size_t cap)
{
    *o = (nf_io_out){fd, 0, malloc(cap ? cap : 1), 0, cap};
    return o->buf != NULL;
}

void nf_io_out_flush(nf_io_out *o)
{
    if (!o->e && o->len) o->e = nf_io_write_full(o->fd, o->buf, o->len);
    o->len = 0;
}

void nf_io_out_put(nf_io_out *o, const void *s, size_t n)
{
    if (o->e) return;
    if (n > o->cap - o->len) nf_io_out_flush(o);
    if (n > o->cap) { /* (larger than the buffer: written as it is) */
        if (!o->e) o->e = nf_io_write_full(o->fd, s, n);
        return;
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
}

void nf_io_out_free(nf_io_out *o)
{
    free(o->buf);
    o->buf = NULL;
    o->len = o->cap = 0;
}
