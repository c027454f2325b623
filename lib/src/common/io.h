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
/* The longest host name kept in temp names (nf_io_host). */
#define NF_IO_HOST_MAX 63
/* This host's name as temp names carry it: gethostname's, each character that is not a letter,
 * digit or '-' made '-', at most NF_IO_HOST_MAX characters ("unknown" when unreadable). */
const char *nf_io_host(void);
/* mkstemp in the directory of `dest`, named ".<base>.<pid>@<host>.XXXXXX.tmp" (pid: the creating
 * process, in decimal; host: nf_io_host(); XXXXXX: mkstemp's six letters and digits); path_out
 * gets the name (malloc'ed).  Returns fd or -1 with errno set.  nf_stale_find (convert/stale.c)
 * finds the temp files of killed runs through nf_io_beside_pid, the inverse of this naming. */
int nf_io_mkstemp_beside(const char *dest, char **path_out);
/* The same with another suffix than ".tmp". */
int nf_io_mkstemp_beside_as(const char *dest, const char *suffix, char **path_out);
/* A second hard link of `target` beside it, named ".<base>.<pid>@<host>.XXXXXX<suffix>" (XXXXXX
 * random, retried while the name exists); path_out gets the name (malloc'ed).  Returns 0 or an
 * errno value.  A link fault point.  The writer sets replaced files aside this way (suffix
 * ".old"): such a name never exists without the complete old file behind it. */
int nf_io_link_beside(const char *target, const char *suffix, char **path_out);
/* The inverse of the naming above, for finding the files of killed runs: `tail` is what follows
 * ".<base>." in a directory entry, "<pid>@<host>.XXXXXX<suffix>" (or "<pid>.XXXXXX<suffix>", the
 * names of earlier versions, taken for this host's).  Returns the pid (> 0), points *suffix at
 * what follows the six random characters and sets *local (if not NULL) to whether the host is
 * this one; returns -1 when tail is not of that form.  nf_stale_find (convert/stale.c) reads
 * names through this, so the writer and the finder cannot drift apart. */
long nf_io_beside_pid(const char *tail, const char **suffix, bool *local);

/* One lock per output (docs/security.md 1.3, "One lock per output").  The lock file of `dest` is
 * ".<base>.lock" in dest's directory; nf_io_lock_beside creates it if needed (0666 less the
 * umask; never through a symbolic link) and takes an flock(2) on it without waiting (but for a
 * moment when it is found busy, NF_IO_LOCK_BUSY_TRIES): exclusive
 * (a writer that publishes), or shared (the tasks of a scale-out plan, which run at once and
 * only keep the publishers out, docs/scale-out.md, "The output's lock").
 * Returns 0 with *fd and *path_out (malloc'ed) set, or an errno value: EWOULDBLOCK when another
 * open file (another process, or another writer of this one) holds the lock, ELOOP when the lock
 * file is a symbolic link, EINVAL when it is not a regular file, else what open/flock said.  An
 * open fault point.  The lock file exists only while it is held: nf_io_unlock removes it (while
 * holding the lock exclusively: the last of shared holders) and closes it; a run killed with
 * SIGKILL leaves it behind, unlocked
 * (the kernel drops a dead process's locks), and the next writer of dest takes it over.  A
 * locker that opened a lock file just removed by its holder sees the name gone (or naming
 * another file) once it holds the lock, and starts again. */
int nf_io_lock_beside(const char *dest, bool shared, int *fd, char **path_out);
/* A lock found busy is looked at again this many times, 2 ms apart, before EWOULDBLOCK: a
 * holder's nf_io_unlock holds it exclusively for an instant. */
#define NF_IO_LOCK_BUSY_TRIES 50
/* The holder a lock file records ("<pid>@<host>", written by nf_io_lock_beside once it holds the
 * lock): false when the file is gone or records nothing readable. */
bool nf_io_lock_holder(const char *lock_path, long *pid, char host[NF_IO_HOST_MAX + 1]);
/* Removes the lock file (if it is still the one fd holds, and no other holder shares it: the
 * lock is made exclusive first, without waiting) and closes fd.  Not a fault point: failing to
 * remove it is harmless (the next writer takes it over).  fd < 0: nothing. */
void nf_io_unlock(int fd, const char *path);

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
void nf_io_fault_reset(void);
uint64_t nf_io_calls(nf_io_op op);

#endif
