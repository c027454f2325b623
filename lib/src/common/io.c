#define _GNU_SOURCE /* mkostemps */
/* File-I/O shim with a fault-injection hook (see io.h). */
#include "common/io.h"
#include "common/utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <time.h>
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

/* Counts the call; returns the errno to inject (or 0).  -1 means "short write". */
static int fault(nf_io_op op)
{
    uint64_t n = __atomic_add_fetch(&g_fault.calls[op], 1, __ATOMIC_RELAXED);
    uint64_t at = __atomic_load_n(&g_fault.fail_at[op], __ATOMIC_RELAXED);
    if (at != 0 && n == at) {
        int e = __atomic_load_n(&g_fault.errnum[op], __ATOMIC_RELAXED);
        if (e == NF_IO_FAULT_KILL) raise(SIGKILL); /* a crash at exactly this point */
        if (e == NF_IO_FAULT_STOP) {                /* a pause at exactly this point */
            raise(SIGSTOP);
            return 0;
        }
        return e ? e : -1;
    }
    return 0;
}

int nf_io_open(const char *path, int flags, mode_t mode)
{
    int e = fault(NF_IO_OPEN);
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

/* This host's name as it appears in temp names: letters, digits and '-' (anything else, the
 * dots of a domain included, becomes '-'), at most NF_IO_HOST_MAX characters; "unknown" when
 * the name cannot be read.  Read once per process. */
static char g_host[NF_IO_HOST_MAX + 1];
static pthread_once_t g_host_once = PTHREAD_ONCE_INIT;

static void read_host(void)
{
    char name[256] = {0};
    if (gethostname(name, sizeof name - 1) != 0 || !name[0]) snprintf(name, sizeof name, "unknown");
    size_t n = 0;
    for (; name[n] && n < NF_IO_HOST_MAX; n++) {
        char c = name[n];
        g_host[n] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ? c : '-';
    }
    g_host[n] = '\0';
}

const char *nf_io_host(void)
{
    pthread_once(&g_host_once, read_host);
    return g_host;
}

/* "<pid>@<host>" of this process, the owner part of the names below. */
static void owner_tag(char out[24 + NF_IO_HOST_MAX + 2])
{
    snprintf(out, 24 + NF_IO_HOST_MAX + 2, "%ld@%s", (long)getpid(), nf_io_host());
}

int nf_io_mkstemp_beside(const char *dest, char **path_out) { return nf_io_mkstemp_beside_as(dest, ".tmp", path_out); }

int nf_io_mkstemp_beside_as(const char *dest, const char *suffix, char **path_out)
{
    *path_out = NULL;
    int e = fault(NF_IO_OPEN);
    if (e) {
        errno = e > 0 ? e : EIO;
        return -1;
    }
    const char *slash = strrchr(dest, '/');
    size_t dir_len = slash ? (size_t)(slash - dest) + 1 : 0;
    const char *base = slash ? slash + 1 : dest;
    /* ".<base>.<pid>@<host>.XXXXXX.tmp": the pid and the host let a later run tell the temp files
     * of a killed process (which cannot clean up after SIGKILL) from those of one still running,
     * on a filesystem several hosts share (a process of another host is never judged from here). */
    char pid[24 + NF_IO_HOST_MAX + 2];
    owner_tag(pid);
    size_t need = dir_len + 1 + strlen(base) + 1 + strlen(pid) + sizeof ".XXXXXX" + strlen(suffix);
    char *p = malloc(need);
    if (!p) {
        errno = ENOMEM;
        return -1;
    }
    snprintf(p, need, "%.*s.%s.%s.XXXXXX%s", (int)dir_len, dest, base, pid, suffix);
    int fd = mkostemps(p, (int)strlen(suffix), O_CLOEXEC);
    if (fd < 0) {
        int saved = errno;
        free(p);
        errno = saved;
        return -1;
    }
    *path_out = p;
    return fd;
}

int nf_io_link_beside(const char *target, const char *suffix, char **path_out)
{
    *path_out = NULL;
    int e = fault(NF_IO_LINK);
    if (e) return e > 0 ? e : EIO;
    const char *slash = strrchr(target, '/');
    size_t dir_len = slash ? (size_t)(slash - target) + 1 : 0;
    const char *base = slash ? slash + 1 : target;
    char pid[24 + NF_IO_HOST_MAX + 2];
    owner_tag(pid);
    size_t need = dir_len + 1 + strlen(base) + 1 + strlen(pid) + sizeof ".XXXXXX" + strlen(suffix);
    char *p = malloc(need);
    if (!p) return ENOMEM;
    static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    for (int attempt = 0; attempt < 100; attempt++) {
        unsigned char r[6];
        if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
            uint64_t x = (uint64_t)(uint32_t)getpid();
            x = x * UINT64_C(0x9E3779B97F4A7C15) + (uint64_t)(uint32_t)attempt;
            x = x * UINT64_C(0xBF58476D1CE4E5B9) + (uint64_t)(uintptr_t)p;
            for (int i = 0; i < 6; i++) r[i] = (unsigned char)(x >> (8 * i));
        }
        char x[7];
        for (int i = 0; i < 6; i++) x[i] = letters[r[i] % (sizeof letters - 1)];
        x[6] = '\0';
        snprintf(p, need, "%.*s.%s.%s.%s%s", (int)dir_len, target, base, pid, x, suffix);
        if (link(target, p) == 0) {
            *path_out = p;
            return 0;
        }
        if (errno != EEXIST) {
            int saved = errno;
            free(p);
            return saved;
        }
    }
    free(p);
    return EEXIST;
}

long nf_io_beside_pid(const char *tail, const char **suffix, bool *local)
{
    size_t digits = 0;
    while (tail[digits] >= '0' && tail[digits] <= '9') digits++;
    if (digits == 0 || digits > 10) return -1;
    const char *x = tail + digits;
    bool here = true; /* the form without a host (earlier versions) is taken for this host's */
    if (*x == '@') {
        size_t n = 0;
        const char *h = x + 1;
        while ((h[n] >= 'a' && h[n] <= 'z') || (h[n] >= 'A' && h[n] <= 'Z') || (h[n] >= '0' && h[n] <= '9') ||
               h[n] == '-')
            n++;
        if (n == 0 || n > NF_IO_HOST_MAX) return -1;
        const char *me = nf_io_host();
        here = strlen(me) == n && memcmp(me, h, n) == 0;
        x = h + n;
    }
    if (*x != '.') return -1;
    x++;
    for (int i = 0; i < 6; i++) {
        char c = x[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) return -1;
    }
    long pid = strtol(tail, NULL, 10);
    if (pid <= 0) return -1;
    *suffix = x + 6;
    if (local) *local = here;
    return pid;
}

int nf_io_lock_beside(const char *dest, bool shared, int *fd_out, char **path_out)
{
    *fd_out = -1;
    *path_out = NULL;
    const char *slash = strrchr(dest, '/');
    size_t dir_len = slash ? (size_t)(slash - dest) + 1 : 0;
    const char *base = slash ? slash + 1 : dest;
    size_t need = dir_len + 1 + strlen(base) + sizeof ".lock";
    char *p = malloc(need);
    if (!p) return ENOMEM;
    snprintf(p, need, "%.*s.%s.lock", (int)dir_len, dest, base);
    /* A holder removes the lock file before it lets go of the lock (nf_io_unlock), so a file this
     * process opened can be one that is no longer the lock once it is ours: then again. */
    int busy = 0;
    for (int attempt = 0; attempt < 1000; attempt++) {
        struct stat a, b;
        /* nothing but a regular file is ever opened as the lock (a device node could do
         * something on open) */
        if (lstat(p, &a) == 0 && !S_ISREG(a.st_mode)) {
            free(p);
            return S_ISLNK(a.st_mode) ? ELOOP : EINVAL;
        }
        /* read-write to record the holder; a lock file of another user that this one may only
         * read still locks (flock needs no write access), without the record */
        int fd = nf_io_open(p, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK, 0666);
        if (fd < 0 && errno == EACCES) fd = nf_io_open(p, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
        if (fd < 0) {
            int e = errno;
            free(p);
            return e;
        }
        if (fstat(fd, &a) != 0 || !S_ISREG(a.st_mode)) {
            int e = S_ISREG(a.st_mode) ? errno : EINVAL;
            close(fd);
            free(p);
            return e;
        }
        int r;
        do {
            r = flock(fd, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB);
        } while (r != 0 && errno == EINTR);
        if (r != 0) {
            int e = errno == EAGAIN ? EWOULDBLOCK : errno;
            close(fd);
            /* A holder letting go makes its lock exclusive for an instant (nf_io_unlock: is it
             * the last?), so a lock taken shared by another scale-out task can be refused by a
             * task that is just leaving: look again for a moment (about 0.1 s in all) before
             * saying the output is busy.  A real holder costs a refused run that moment. */
            if (e == EWOULDBLOCK && busy < NF_IO_LOCK_BUSY_TRIES) {
                busy++;
                nanosleep(&(struct timespec){0, 2000000}, NULL);
                continue;
            }
            free(p);
            return e;
        }
        if (lstat(p, &b) == 0 && b.st_dev == a.st_dev && b.st_ino == a.st_ino) {
            /* "<pid>@<host>\n": who holds it, for the message of a writer refused (best effort:
             * the lock is the flock, not the text) */
            char owner[24 + NF_IO_HOST_MAX + 2], line[24 + NF_IO_HOST_MAX + 3];
            owner_tag(owner);
            int len = snprintf(line, sizeof line, "%s\n", owner);
            if (ftruncate(fd, 0) == 0 && len > 0) (void)!pwrite(fd, line, (size_t)len, 0);
            *fd_out = fd;
            *path_out = p;
            return 0;
        }
        close(fd);
    }
    free(p);
    return EWOULDBLOCK;
}

bool nf_io_lock_holder(const char *lock_path, long *pid, char host[NF_IO_HOST_MAX + 1])
{
    int fd = nf_io_open(lock_path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
    if (fd < 0) return false;
    char buf[24 + NF_IO_HOST_MAX + 4] = {0};
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    close(fd);
    if (n <= 0) return false;
    char *nl = memchr(buf, '\n', (size_t)n);
    if (!nl) return false;
    *nl = '\0';
    /* the form temp names carry, read by the same parser: "<pid>@<host>" then ".XXXXXX" */
    char probe[sizeof buf + 16];
    snprintf(probe, sizeof probe, "%s.AAAAAA", buf);
    const char *suffix;
    long p = nf_io_beside_pid(probe, &suffix, NULL);
    const char *at = strchr(buf, '@');
    if (p <= 0 || !at || *suffix) return false;
    *pid = p;
    snprintf(host, NF_IO_HOST_MAX + 1, "%s", at + 1);
    return true;
}

void nf_io_unlock(int fd, const char *path)
{
    if (fd < 0) return;
    struct stat a, b;
    /* only the file this lock is (another may have replaced the name by hand), and only when no
     * other holder shares it: the lock made exclusive (a shared holder's is given up in the
     * attempt, which is what this call does anyway); a locker waiting for it finds the name
     * gone and starts again */
    int r;
    do {
        r = flock(fd, LOCK_EX | LOCK_NB);
    } while (r != 0 && errno == EINTR);
    if (r == 0 && path && fstat(fd, &a) == 0 && lstat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
        (void)unlink(path);
    close(fd);
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
    int e = fault(NF_IO_READ);
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
    int e = fault(NF_IO_READ);
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
    int e = fault(NF_IO_WRITE);
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
    int e = fault(NF_IO_WRITE);
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
    int e = fault(NF_IO_SYNC);
    if (e) return e > 0 ? e : EIO;
    return fdatasync(fd) == 0 ? 0 : errno;
}

int nf_io_ftruncate(int fd, uint64_t size)
{
    int e = fault(NF_IO_WRITE);
    if (e) return e > 0 ? e : ENOSPC;
    return ftruncate(fd, (off_t)size) == 0 ? 0 : errno;
}

int nf_io_allocate(int fd, uint64_t size)
{
    int e = fault(NF_IO_WRITE);
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
    int e = fault(NF_IO_LINK);
    if (e) return e > 0 ? e : EIO;
    return link(from, to) == 0 ? 0 : errno;
}

int nf_io_rename(const char *from, const char *to)
{
    int e = fault(NF_IO_LINK);
    if (e) return e > 0 ? e : EIO;
    return rename(from, to) == 0 ? 0 : errno;
}

int nf_io_lstat(const char *path, struct stat *st) { return lstat(path, st) == 0 ? 0 : errno; }

int nf_io_fchmod(int fd, mode_t mode) { return fchmod(fd, mode) == 0 ? 0 : errno; }

int nf_io_unlink(const char *path)
{
    int e = fault(NF_IO_UNLINK);
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
