/* The one cache of open files (fd_cache.c; issue 25, item 3): a table of files known by index,
 * of which at most `cap` hold a descriptor at once, so that a checkpoint of 600 shards, an
 * artifact of hundreds of parts or a writer of as many temp files works under `ulimit -n 64`
 * (docs/security.md 7.1, F8, and 7.2).  Its users: a source's files (source/store.c), an
 * artifact's continuation parts (container/reader.c) and a writer's temp files
 * (container/writer_io.c).  Thread-safe: the conversion reads shards and writes parts from the
 * pool's threads, so every call takes the cache's lock.
 *
 * The policy, the same for every user:
 *   - a descriptor is held for one transfer (acquire ... release); an idle one stays open until
 *     the cache needs room, then the least recently used idle one is closed;
 *   - with `cap` descriptors open and every one in use, acquire waits for a release (a holder
 *     releases after its one pread or pwrite, so the wait ends; a thread never holds two);
 *   - a closed file is opened again by the user's `open`, which makes the user's own checks
 *     (regular file, size, header) and words their failures; then the cache checks that the
 *     descriptor is the very file first opened (same device and inode, and same birth time
 *     where the file system keeps one, for a file created after an unlink often gets the freed
 *     inode number; recorded at the first open or adopt): another file at that name -- a file
 *     replaced under us -- is refused
 *     through the user's `replaced`, which names the file, and never read or written;
 *   - an open that fails with EMFILE or ENFILE closes the least recently used idle descriptor
 *     and tries again; when none is idle but other files of the cache are in use, it waits for
 *     one to be released and tries again; only when no other file of the cache is in use does
 *     the open's failure stand. */
#ifndef NINFER_COMMON_FD_CACHE_H
#define NINFER_COMMON_FD_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include <ninfer/error.h>

typedef struct nf_fd_cache nf_fd_cache;

typedef struct nf_fd_cache_ops {
    /* Open file i again (the cache's lock held): NF_OK with the descriptor in *fd and its fstat
     * in *st, or a failure recorded in err with *sys_errno the errno value behind it (the
     * open's: EMFILE and ENFILE make the cache free a descriptor and call again; 0 for a failed
     * check of the user's own).  NF_OK with *fd -1 says the file needs no descriptor (a mapped
     * part): every later acquire of it gives -1 at once, without calling open. */
    nf_status (*open)(void *ctx, size_t i, int *fd, struct stat *st, int *sys_errno, nf_error *err);
    /* The failure of a reopen that found another file than the first one (the lock held): a
     * message naming file i in err; its status is what acquire returns (sys_errno ESTALE). */
    nf_status (*replaced)(void *ctx, size_t i, nf_error *err);
} nf_fd_cache_ops;

/* How many descriptors one cache keeps open by default: a quarter of the soft RLIMIT_NOFILE (the
 * program needs others: its outputs, other sources, stdio), at least 4 and at most 64. */
size_t nf_common_fd_cache_cap_for_process(void);

/* A cache of nfiles files (grown by nf_common_fd_cache_grow), none open, at most cap (>= 1)
 * descriptors open at once; ops and ctx are kept.  NULL when out of memory. */
nf_fd_cache *nf_common_fd_cache_new(size_t nfiles, size_t cap, const nf_fd_cache_ops *ops, void *ctx);
/* Closes every descriptor still open and frees the cache (NULL: nothing). */
void nf_common_fd_cache_free(nf_fd_cache *c);
/* At least nfiles files (the new ones closed, never opened); false when out of memory. */
bool nf_common_fd_cache_grow(nf_fd_cache *c, size_t nfiles);

/* Gives the cache file i's first descriptor (fd >= 0, opened and checked by the caller): its
 * device, inode and birth time are recorded as the file's, and fd is kept open when there is room (an idle
 * one closed to make it) or else closed at once (reopened when needed).  Never waits.  0, or
 * fstat's errno value (fd closed). */
int nf_common_fd_cache_adopt(nf_fd_cache *c, size_t i, int fd);

/* File i's descriptor for one transfer, opened again if it was closed (see the policy above):
 * NF_OK with *fd (-1 for a file that needs none), to be given back by
 * nf_common_fd_cache_release; or the failure in err (the user's `open` or `replaced` words it),
 * with *sys_errno its errno value (ESTALE for a replaced file; 0 when none). */
nf_status nf_common_fd_cache_acquire(nf_fd_cache *c, size_t i, int *fd, int *sys_errno, nf_error *err);
void nf_common_fd_cache_release(nf_fd_cache *c, size_t i);
/* Closes file i's descriptor now (not in use: after its last transfer): 0 or close's errno.  A
 * later acquire opens it again. */
int nf_common_fd_cache_close(nf_fd_cache *c, size_t i);

/* Descriptors open now (tests). */
size_t nf_common_fd_cache_open_count(nf_fd_cache *c);

#endif
