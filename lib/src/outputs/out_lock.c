/* The output's lock (see out_lock.h). */
#include "outputs/out_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/io.h"

int nf_outputs_lock(const char *dest, bool shared, int *fd_out, char **path_out)
{
    *fd_out = -1;
    *path_out = NULL;
    char *p = nf_outputs_lock_name(dest);
    if (!p) return ENOMEM;
    /* A holder removes the lock file before it lets go of the lock (nf_outputs_unlock), so a file this
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
            /* A holder letting go makes its lock exclusive for an instant (nf_outputs_unlock: is it
             * the last?), so a lock taken shared by another scale-out task can be refused by a
             * task that is just leaving: look again for a moment (about 0.1 s in all) before
             * saying the output is busy.  A real holder costs a refused run that moment. */
            if (e == EWOULDBLOCK && busy < NF_OUTPUTS_LOCK_BUSY_TRIES) {
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
            char owner[24 + NF_OUTPUTS_HOST_MAX + 2], line[24 + NF_OUTPUTS_HOST_MAX + 3];
            snprintf(owner, sizeof owner, "%ld@%s", (long)getpid(), nf_outputs_host());
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

bool nf_outputs_lock_holder(const char *lock_path, long *pid, char host[NF_OUTPUTS_HOST_MAX + 1])
{
    int fd = nf_io_open(lock_path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
    if (fd < 0) return false;
    char buf[24 + NF_OUTPUTS_HOST_MAX + 4] = {0};
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
    long p = nf_outputs_owner(probe, &suffix, NULL);
    const char *at = strchr(buf, '@');
    if (p <= 0 || !at || *suffix) return false;
    *pid = p;
    snprintf(host, NF_OUTPUTS_HOST_MAX + 1, "%s", at + 1);
    return true;
}

void nf_outputs_unlock(int fd, const char *path)
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
