/* The one cache of open files (common/fd_cache.h) on its own, over plain files of a temp
 * directory: a file read again is a hit (no open), the bound holds (the least recently used idle
 * descriptor is closed), a file replaced at its name is refused on reopen through the user's
 * `replaced`, an open that finds the process out of descriptors (EMFILE, under a lowered
 * RLIMIT_NOFILE in this test's own process) frees an idle descriptor and succeeds, and threads
 * reading many files through a small cache all read the right bytes. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fd_cache.h"
#include "common/io.h"
#include "support/source_writer.h"

#define NFILES 12

static char *g_dir;
static char *g_path[NFILES];
static unsigned g_opens; /* opens made by the cache (under its lock) */

/* File i holds 64 bytes of value i + bias. */
static void write_file(size_t i, int bias)
{
    uint8_t b[64];
    memset(b, (int)i + bias, sizeof b);
    char *tmp = sw_path(g_dir, "tmp");
    cr_assert_eq(sw_write_file(tmp, b, sizeof b), 0);
    cr_assert_eq(rename(tmp, g_path[i]), 0); /* a new inode at the name */
    free(tmp);
}

static void setup(void)
{
    g_dir = sw_tempdir();
    for (size_t i = 0; i < NFILES; i++) {
        char name[32];
        snprintf(name, sizeof name, "f%02zu", i);
        g_path[i] = sw_path(g_dir, name);
        write_file(i, 0);
    }
    g_opens = 0;
}

static void teardown(void)
{
    for (size_t i = 0; i < NFILES; i++) free(g_path[i]);
    if (g_dir) sw_rmtree(g_dir);
    free(g_dir);
    g_dir = NULL;
}

TestSuite(common_fd_cache, .init = setup, .fini = teardown);

static nf_status t_open(void *ctx, size_t i, int *fd, struct stat *st, int *sys_errno, nf_error *err)
{
    (void)ctx;
    g_opens++;
    *fd = nf_io_open(g_path[i], O_RDONLY, 0);
    if (*fd < 0) {
        *sys_errno = errno;
        return nf_error_errno(err, *sys_errno, "%s: cannot open", g_path[i]);
    }
    cr_assert_eq(nf_io_fstat(*fd, st), 0);
    return NF_OK;
}

static nf_status t_replaced(void *ctx, size_t i, nf_error *err)
{
    (void)ctx;
    return nf_error_set(err, NF_ERR_IO, "%s: replaced", g_path[i]);
}

static const nf_fd_cache_ops ops = {t_open, t_replaced};

/* One byte of file i read through the cache; -1 on failure (err set). */
static int read_byte(nf_fd_cache *c, size_t i, nf_error *err, int *sys_errno)
{
    int fd, e;
    if (nf_common_fd_cache_acquire(c, i, &fd, sys_errno ? sys_errno : &e, err) != NF_OK) return -1;
    uint8_t b = 0;
    int r = nf_io_pread_full(fd, &b, 1, 17);
    nf_common_fd_cache_release(c, i);
    return r ? -1 : b;
}

Test(common_fd_cache, a_file_read_again_is_not_opened_again)
{
    nf_fd_cache *c = nf_common_fd_cache_new(NFILES, 4, &ops, NULL);
    cr_assert_not_null(c);
    nf_error err = {0};
    for (int round = 0; round < 5; round++) cr_assert_eq(read_byte(c, 3, &err, NULL), 3, "%s", err.message);
    cr_assert_eq(g_opens, 1u);
    cr_assert_eq(nf_common_fd_cache_open_count(c), 1u);
    nf_common_fd_cache_free(c);
}

Test(common_fd_cache, the_bound_holds_and_the_least_recently_used_goes)
{
    nf_fd_cache *c = nf_common_fd_cache_new(NFILES, 4, &ops, NULL);
    nf_error err = {0};
    for (size_t i = 0; i < 4; i++) cr_assert_eq(read_byte(c, i, &err, NULL), (int)i);
    cr_assert_eq(g_opens, 4u);
    cr_assert_eq(read_byte(c, 0, &err, NULL), 0); /* 0 used last: 1 is now the least recent */
    cr_assert_eq(read_byte(c, 7, &err, NULL), 7); /* opening a fifth closes 1 */
    cr_assert_eq(nf_common_fd_cache_open_count(c), 4u);
    cr_assert_eq(g_opens, 5u);
    cr_assert_eq(read_byte(c, 0, &err, NULL), 0); /* still open: a hit */
    cr_assert_eq(g_opens, 5u);
    cr_assert_eq(read_byte(c, 1, &err, NULL), 1); /* closed: opened again */
    cr_assert_eq(g_opens, 6u);
    for (size_t i = 0; i < NFILES; i++) cr_assert_eq(read_byte(c, i, &err, NULL), (int)i);
    cr_assert_leq(nf_common_fd_cache_open_count(c), 4u);
    /* closed for good, then opened again on demand */
    cr_assert_eq(nf_common_fd_cache_close(c, NFILES - 1), 0);
    cr_assert_eq(nf_common_fd_cache_open_count(c), 3u);
    nf_common_fd_cache_free(c);
}

Test(common_fd_cache, adopt_records_the_file_and_respects_the_bound)
{
    nf_fd_cache *c = nf_common_fd_cache_new(NFILES, 2, &ops, NULL);
    nf_error err = {0};
    for (size_t i = 0; i < 3; i++) {
        int fd = open(g_path[i], O_RDONLY);
        cr_assert_geq(fd, 0);
        cr_assert_eq(nf_common_fd_cache_adopt(c, i, fd), 0);
    }
    cr_assert_eq(nf_common_fd_cache_open_count(c), 2u);
    write_file(0, 100); /* closed by the third adopt; replaced since */
    int e = 0;
    cr_assert_eq(read_byte(c, 0, &err, &e), -1);
    cr_assert_eq(e, ESTALE);
    cr_assert_eq(read_byte(c, 2, &err, NULL), 2); /* adopted, still open */
    cr_assert_eq(g_opens, 1u);
    nf_common_fd_cache_free(c);
}

Test(common_fd_cache, a_replaced_file_is_refused_on_reopen)
{
    nf_fd_cache *c = nf_common_fd_cache_new(NFILES, 2, &ops, NULL);
    nf_error err = {0};
    cr_assert_eq(read_byte(c, 0, &err, NULL), 0);
    cr_assert_eq(read_byte(c, 1, &err, NULL), 1);
    cr_assert_eq(read_byte(c, 2, &err, NULL), 2); /* 0 closed */
    write_file(0, 100);                           /* another file at its name, same size */
    int e = 0;
    cr_assert_eq(read_byte(c, 0, &err, &e), -1);
    cr_assert_eq(err.status, NF_ERR_IO);
    cr_assert(strstr(err.message, g_path[0]) && strstr(err.message, "replaced"), "%s", err.message);
    cr_assert_eq(e, ESTALE);
    cr_assert_eq(read_byte(c, 0, &err, &e), -1, "refused every time, never read");
    cr_assert_eq(read_byte(c, 1, &err, NULL), 1); /* the others still read */
    cr_assert_leq(nf_common_fd_cache_open_count(c), 2u);
    nf_common_fd_cache_free(c);
}

/* A file deleted and created again at its name while the cache had it closed: on ext4 the new
 * file often gets the freed inode's number, so device and inode alone would take it for the
 * first file (same size too); the cache must still refuse it. */
Test(common_fd_cache, a_file_recreated_with_the_same_inode_number_is_refused)
{
    uint8_t b[64];
    for (int attempt = 0; attempt < 50; attempt++) {
        nf_fd_cache *c = nf_common_fd_cache_new(NFILES, 1, &ops, NULL);
        nf_error err = {0};
        cr_assert_neq(read_byte(c, 0, &err, NULL), -1, "%s", err.message); /* file 0 recorded */
        cr_assert_eq(read_byte(c, 1, &err, NULL), 1);                      /* 0 closed: its inode freed by the unlink */
        struct stat first, now;
        cr_assert_eq(stat(g_path[0], &first), 0);
        cr_assert_eq(unlink(g_path[0]), 0);
        memset(b, 100 + attempt, sizeof b);
        cr_assert_eq(sw_write_file(g_path[0], b, sizeof b), 0);
        cr_assert_eq(stat(g_path[0], &now), 0);
        if (now.st_dev != first.st_dev || now.st_ino != first.st_ino) { /* try again from this file */
            nf_common_fd_cache_free(c);
            continue;
        }
        int e = 0;
        cr_assert_eq(read_byte(c, 0, &err, &e), -1, "another file, read as the first one");
        cr_assert_eq(e, ESTALE);
        cr_assert(strstr(err.message, "replaced"), "%s", err.message);
        nf_common_fd_cache_free(c);
        return;
    }
    cr_skip_test("the file system gave no freed inode number back (50 tries)");
}

/* Every descriptor of the process taken (the soft limit lowered to 32 in this test's process):
 * the cache's open fails with EMFILE, closes its idle descriptor and succeeds; with none of its
 * own to give back, the EMFILE stands. */
Test(common_fd_cache, out_of_descriptors_frees_an_idle_one_and_retries)
{
    struct rlimit rl;
    cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    rl.rlim_cur = 32;
    cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
    nf_fd_cache *c = nf_common_fd_cache_new(NFILES, 8, &ops, NULL);
    nf_error err = {0};
    cr_assert_eq(read_byte(c, 0, &err, NULL), 0);
    cr_assert_eq(read_byte(c, 1, &err, NULL), 1);
    int taken[64], n = 0;
    for (int fd; n < 64 && (fd = dup(0)) >= 0;) taken[n++] = fd;
    cr_assert_eq(errno, EMFILE);
    cr_assert_lt(n, 64);
    unsigned before = g_opens;
    int e = -1;
    cr_assert_eq(read_byte(c, 5, &err, &e), 5, "%s", err.message);
    cr_assert_eq(e, 0, "a success leaves no errno value (the EMFILE was overcome)");
    cr_assert_eq(g_opens, before + 2, "one open failed with EMFILE, one after an idle file was closed");
    cr_assert_eq(nf_common_fd_cache_open_count(c), 2u);
    /* the last descriptor of the cache given back too: nothing idle to close, nothing in use */
    cr_assert_eq(nf_common_fd_cache_close(c, 5), 0);
    cr_assert_eq(nf_common_fd_cache_close(c, 0), 0);
    cr_assert_eq(nf_common_fd_cache_close(c, 1), 0);
    for (int fd; n < 64 && (fd = dup(0)) >= 0;) taken[n++] = fd;
    e = 0;
    cr_assert_eq(read_byte(c, 6, &err, &e), -1);
    cr_assert_eq(e, EMFILE, "%s", err.message);
    for (int k = 0; k < n; k++) close(taken[k]);
    cr_assert_eq(read_byte(c, 6, &err, NULL), 6);
    nf_common_fd_cache_free(c);
}

/* ---------------------------------------------------------------- threads */
#define NTHREADS 8

typedef struct worker {
    nf_fd_cache *c;
    unsigned seed;
    int bad;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    nf_error err = {0};
    for (int k = 0; k < 2000; k++) {
        size_t i = (size_t)(rand_r(&w->seed) % NFILES);
        if (read_byte(w->c, i, &err, NULL) != (int)i) w->bad++;
    }
    return NULL;
}

/* More threads than descriptors, over more files than descriptors: every read finds its own
 * file's bytes and the bound holds throughout (threads wait for a descriptor in use). */
Test(common_fd_cache, threads_share_a_small_cache)
{
    nf_fd_cache *c = nf_common_fd_cache_new(NFILES, 3, &ops, NULL);
    pthread_t th[NTHREADS];
    worker w[NTHREADS];
    for (unsigned t = 0; t < NTHREADS; t++) {
        w[t] = (worker){c, t + 1, 0};
        cr_assert_eq(pthread_create(&th[t], NULL, work, &w[t]), 0);
    }
    for (unsigned t = 0; t < NTHREADS; t++) {
        pthread_join(th[t], NULL);
        cr_assert_eq(w[t].bad, 0, "thread %u", t);
    }
    cr_assert_leq(nf_common_fd_cache_open_count(c), 3u);
    nf_common_fd_cache_free(c);
}
