/* The one file-I/O shim of libninfer.  Every open, read, write, sync, link and unlink of the
 * library goes through here, so tests can fail the N-th call of a kind (fault injection) and
 * check that nothing is published and no temp file is left.
 *
 * The *_full functions loop over short transfers and EINTR; they return 0 or an errno value
 * (EIO for an unexpected end of file on read). */
#ifndef NINFER_COMMON_IO_H
#define NINFER_COMMON_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

typedef enum nf_io_op {
    NF_IO_OPEN,
    NF_IO_READ,
    NF_IO_WRITE,
    NF_IO_SYNC,
    NF_IO_LINK, /* link and rename */
    NF_IO_UNLINK,
    NF_IO_OP_COUNT
} nf_io_op;

/* Returns a file descriptor, or -1 with errno set. */
int nf_io_open(const char *path, int flags, mode_t mode);
/* A path as error messages show it: the path itself when it has at most NF_IO_MSG_PATH bytes,
 * else its first and last bytes around "...", cut at UTF-8 character boundaries, so that a
 * message naming a few long paths keeps its reason within NF_ERROR_MESSAGE_MAX (docs/security.md 7.1, M8).
 * Returns path or buf (which must hold NF_IO_MSG_PATH + 1 bytes). */
#define NF_IO_MSG_PATH 240
const char *nf_io_msg_path(const char *path, char *buf);
/* The same, malloc'ed (NULL on ENOMEM). */
char *nf_io_msg_path_dup(const char *path);

/* "a FIFO", "a symbolic link", "a directory", ... for a message about a file of that st_mode. */
const char *nf_io_kind_name(mode_t mode);

int nf_io_close(int fd);
int nf_io_pread_full(int fd, void *buf, size_t len, uint64_t offset);
/* One pread (EINTR retried): *got receives the byte count, 0 at end of file. */
int nf_io_pread_some(int fd, void *buf, size_t len, uint64_t offset, size_t *got);
int nf_io_pwrite_full(int fd, const void *buf, size_t len, uint64_t offset);
int nf_io_write_full(int fd, const void *buf, size_t len);
int nf_io_fdatasync(int fd);
int nf_io_ftruncate(int fd, uint64_t size);
/* The file's blocks for [0, size) allocated now, its size set (so that a full disk fails here,
 * before any payload is written, not halfway); a plain ftruncate where the filesystem cannot
 * allocate ahead.  A write fault point. */
int nf_io_allocate(int fd, uint64_t size);
int nf_io_fstat(int fd, struct stat *st);
int nf_io_link(const char *from, const char *to);
int nf_io_rename(const char *from, const char *to);
int nf_io_unlink(const char *path);
/* Not fault points: metadata only.  Return 0 or an errno value. */
int nf_io_lstat(const char *path, struct stat *st);
int nf_io_fchmod(int fd, mode_t mode);

/* Bytes on their way to a file descriptor, in writes of up to `cap` bytes through the shim (the
 * report and the scale-out plan, a record at a time): the first write error is kept in e, and
 * every put after it is dropped. */
typedef struct nf_io_out {
    int fd;
    int e; /* the first write error (an errno value), or 0 */
    char *buf;
    size_t len, cap;
} nf_io_out;

bool nf_io_out_init(nf_io_out *o, int fd, size_t cap); /* false without memory */
void nf_io_out_put(nf_io_out *o, const void *s, size_t n);
void nf_io_out_flush(nf_io_out *o);
void nf_io_out_free(nf_io_out *o);

/* Fault injection (tests only; the installed programs never arm it, see
 * tests/cli/fault_hook.c): make the n-th call (1-based, counted from now) of `op` fail
 * with errnum; n = 0 disarms.  NF_IO_WRITE with errnum 0 simulates a short write (ENOSPC on
 * the remainder); errnum NF_IO_FAULT_KILL makes the process kill itself with SIGKILL at that call
 * instead (crash-point tests: what a crash at each step leaves behind); NF_IO_FAULT_STOP makes it
 * stop itself with SIGSTOP there and, once continued, make the call normally (a test runs another
 * process at exactly that step, e.g. a second writer of the same output). */
#define NF_IO_FAULT_KILL (-9)
#define NF_IO_FAULT_STOP (-19)
void nf_io_fault_arm(nf_io_op op, uint64_t n, int errnum);
/* Counts a call of `op` and returns the errno value to inject into it (0: none; -1: a short
 * write): for the calls made outside this file that are fault points all the same (the temp and
 * set-aside names of lib/src/outputs/out_names.c). */
int nf_io_fault_point(nf_io_op op);
void nf_io_fault_reset(void);
uint64_t nf_io_calls(nf_io_op op);

#endif
