/* tests/fuzz/fuzz_tmpdir.h - a private temporary directory for targets that need real files
 * (the container reader opens parts by name; the source readers have a file mode beside the
 * memory mode).
 *
 * The directory is created on first use under $NINFER_FUZZ_TMPDIR, else /dev/shm, else $TMPDIR,
 * else /tmp, and removed at exit; targets remove the files they write before returning.  Names
 * written here are at most FZ_MAX_NAME bytes and never contain '/'. */
#ifndef NINFER_FUZZ_TMPDIR_H
#define NINFER_FUZZ_TMPDIR_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FZ_MAX_NAME 128u

static char fz_dir[4096];
static bool fz_dir_ready;
/* Files that live as long as the process (fz_keep_file), removed at exit with the directory. */
static char fz_kept[8][FZ_MAX_NAME + 1];
static size_t fz_nkept;

static inline void fz_path(const char *name, char *path);

static inline void fz_remove_dir(void)
{
    if (!fz_dir_ready) return;
    for (size_t i = 0; i < fz_nkept; i++) {
        char path[sizeof fz_dir + FZ_MAX_NAME + 2];
        fz_path(fz_kept[i], path);
        unlink(path);
    }
    rmdir(fz_dir);
}

/* Creates the directory once; a failure is a harness problem, not a finding: abort loudly. */
static inline void fz_make_dir(void)
{
    if (fz_dir_ready) return;
    const char *bases[4] = {getenv("NINFER_FUZZ_TMPDIR"), "/dev/shm", getenv("TMPDIR"), "/tmp"};
    for (size_t i = 0; i < 4; i++) {
        const char *b = bases[i];
        struct stat st;
        if (!b || !b[0] || strlen(b) > sizeof fz_dir - 32 || stat(b, &st) != 0 || !S_ISDIR(st.st_mode) ||
            access(b, W_OK) != 0)
            continue;
        snprintf(fz_dir, sizeof fz_dir, "%s/ninfer-fuzz-XXXXXX", b);
        if (mkdtemp(fz_dir)) {
            fz_dir_ready = true;
            atexit(fz_remove_dir);
            return;
        }
    }
    fprintf(stderr, "fuzz: cannot create a temporary directory\n");
    abort();
}

#define FZ_PATH_BYTES (sizeof fz_dir + FZ_MAX_NAME + 2)

/* fz_dir + "/" + name (at most FZ_MAX_NAME bytes of it). */
static inline void fz_path(const char *name, char *path)
{
    size_t d = strlen(fz_dir), n = strlen(name);
    if (n > FZ_MAX_NAME) n = FZ_MAX_NAME;
    memcpy(path, fz_dir, d);
    path[d] = '/';
    memcpy(path + d + 1, name, n);
    path[d + 1 + n] = '\0';
}

static inline void fz_write_file(const char *name, const uint8_t *p, size_t n)
{
    fz_make_dir();
    char path[FZ_PATH_BYTES];
    fz_path(name, path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    while (fd >= 0 && n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        p += k;
        n -= (size_t)k;
    }
    if (fd < 0 || n != 0) {
        fprintf(stderr, "fuzz: cannot write %s\n", path);
        abort();
    }
    close(fd);
}

/* Write a file that stays until the process exits (fixtures shared by every input). */
static inline void fz_keep_file(const char *name, const uint8_t *p, size_t n)
{
    if (fz_nkept == sizeof fz_kept / sizeof fz_kept[0] || strlen(name) > FZ_MAX_NAME) abort();
    fz_write_file(name, p, n);
    memcpy(fz_kept[fz_nkept++], name, strlen(name) + 1);
}

static inline void fz_remove_file(const char *name)
{
    char path[FZ_PATH_BYTES];
    fz_path(name, path);
    unlink(path);
}

#endif
