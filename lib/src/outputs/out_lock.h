/* Module interface of outputs: one lock per output (docs/security.md 1.3, "One lock per
 * output").  The lock file of `dest` is ".<base>.lock" in dest's directory (out_names.h);
 * nf_outputs_lock creates it if needed (0666 less the umask; never through a symbolic link) and
 * takes an flock(2) on it without waiting (but for a moment when it is found busy,
 * NF_OUTPUTS_LOCK_BUSY_TRIES): exclusive (a writer that publishes), or shared (the tasks of a
 * scale-out plan, which run at once and only keep the publishers out, docs/scale-out.md, "The
 * output's lock"). */
#ifndef NINFER_OUTPUTS_OUT_LOCK_H
#define NINFER_OUTPUTS_OUT_LOCK_H

#include <stdbool.h>

#include "outputs/out_names.h"

/* Returns 0 with *fd and *path_out (malloc'ed) set, or an errno value: EWOULDBLOCK when another
 * open file (another process, or another writer of this one) holds the lock, ELOOP when the lock
 * file is a symbolic link, EINVAL when it is not a regular file, else what open/flock said.  An
 * open fault point.  The lock file exists only while it is held: nf_outputs_unlock removes it
 * (while holding the lock exclusively: the last of shared holders) and closes it; a run killed
 * with SIGKILL leaves it behind, unlocked (the kernel drops a dead process's locks), and the next
 * writer of dest takes it over.  A locker that opened a lock file just removed by its holder sees
 * the name gone (or naming another file) once it holds the lock, and starts again. */
int nf_outputs_lock(const char *dest, bool shared, int *fd, char **path_out);
/* A lock found busy is looked at again this many times, 2 ms apart, before EWOULDBLOCK: a
 * holder's nf_outputs_unlock holds it exclusively for an instant. */
#define NF_OUTPUTS_LOCK_BUSY_TRIES 50
/* The holder a lock file records ("<pid>@<host>", written by nf_outputs_lock once it holds the
 * lock): false when the file is gone or records nothing readable. */
bool nf_outputs_lock_holder(const char *lock_path, long *pid, char host[NF_OUTPUTS_HOST_MAX + 1]);
/* Removes the lock file (if it is still the one fd holds, and no other holder shares it: the
 * lock is made exclusive first, without waiting) and closes fd.  Not a fault point: failing to
 * remove it is harmless (the next writer takes it over).  fd < 0: nothing. */
void nf_outputs_unlock(int fd, const char *path);

#endif
