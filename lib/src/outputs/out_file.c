#define _GNU_SOURCE
/* Program output streams (see out_file.h). */
#include "outputs/out_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "common/io.h"
#include "outputs/out_names.h"
#include "outputs/out_signals.h"

#define BUFFER_BYTES ((size_t)1 << 18)

/* How the bytes reach the destination (docs/ninfer-dequant.md, "Outputs"). */
typedef enum out_kind {
    OUT_STDOUT, /* standard output: "-", no -o, or a path naming the file standard output is */
    OUT_ATOMIC, /* a regular file (new or replaced): a temp file beside it, renamed over it */
    OUT_DIRECT  /* a FIFO or a device node: opened and written into, never replaced */
} out_kind;

struct nf_out {
    int fd;
    out_kind kind;
    char *path;   /* the destination as named (messages: shortened, see common/io.h) */
    char *target; /* OUT_ATOMIC: the file replaced (path, or the end of its symbolic links) */
    char *tmp;    /* OUT_ATOMIC: the temp file beside target */
    ZSTD_CCtx *zc;
    unsigned char *buf; /* pending plain bytes */
    size_t used;
    unsigned char *zbuf;
    size_t zcap;
};

/* ---------------------------------------------------------------- interruption
 * The program's signal policy (out_signals.h): a write stops with "interrupted" once a signal came. */
static nf_status interrupted(nf_error *err) { return nf_error_set(err, NF_ERR_IO, "interrupted"); }

/* ---------------------------------------------------------------- streams */
bool nf_out_terminal(const nf_out *o) { return o && o->fd >= 0 && isatty(o->fd); }

static const char *out_name(const nf_out *o, char *buf)
{
    return o->kind == OUT_STDOUT && !o->path ? "standard output" : nf_io_msg_path(o->path, buf);
}

static nf_status write_fd(nf_out *o, const void *data, size_t len, nf_error *err)
{
    const unsigned char *p = data;
    while (len > 0) {
        if (nf_sig_cancelled()) return interrupted(err);
        ssize_t n = write(o->fd, p, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            char m[NF_IO_MSG_PATH + 1];
            return nf_error_errno(err, errno, "cannot write %s", out_name(o, m));
        }
        p += n;
        len -= (size_t)n;
    }
    return NF_OK;
}

/* Compress (or pass through) the pending bytes; `end` finishes the zstd frame. */
static nf_status drain(nf_out *o, bool end, nf_error *err)
{
    if (!o->zc) {
        nf_status st = write_fd(o, o->buf, o->used, err);
        o->used = 0;
        return st;
    }
    ZSTD_inBuffer in = {o->buf, o->used, 0};
    for (;;) {
        ZSTD_outBuffer zout = {o->zbuf, o->zcap, 0};
        size_t left = ZSTD_compressStream2(o->zc, &zout, &in, end ? ZSTD_e_end : ZSTD_e_continue);
        if (ZSTD_isError(left))
            return nf_error_set(err, NF_ERR_IO, "zstd compression failed: %s", ZSTD_getErrorName(left));
        if (zout.pos) NF_TRY(write_fd(o, o->zbuf, zout.pos, err));
        if (end ? left == 0 : in.pos == in.size) break;
    }
    o->used = 0;
    return NF_OK;
}

static void release(nf_out *o)
{
    if (!o) return;
    if (o->kind != OUT_STDOUT && o->fd >= 0) close(o->fd);
    ZSTD_freeCCtx(o->zc);
    free(o->buf);
    free(o->zbuf);
    free(o->path);
    free(o->target);
    free(o->tmp);
    free(o);
}

static bool same_inode(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Where `path` leads (docs/security.md 1.3: an output path that exists and is not a regular file is
 * written into or refused, never replaced):
 *  - absent: a new regular file (OUT_ATOMIC at path);
 *  - the file that standard output is (e.g. a link to /proc/self/fd/1, /dev/stdout): standard
 *    output itself, as "-" (the shell's open file, its offset and O_APPEND, are kept);
 *  - a regular file, or a symbolic link (chain) ending at one: that file is replaced atomically
 *    (OUT_ATOMIC at the link's final target, the links stay), as cp and dd write through links;
 *  - a FIFO or a device node (also through links): OUT_DIRECT;
 *  - a directory, a socket, a dangling link: refused, NF_ERR_USAGE naming path. */
static nf_status resolve(const char *path, out_kind *kind, char **target, struct stat *st, nf_error *err)
{
    char m[NF_IO_MSG_PATH + 1];
    const char *mp = nf_io_msg_path(path, m);
    *target = NULL;
    struct stat lst;
    if (lstat(path, &lst) != 0) {
        if (errno != ENOENT) return nf_error_errno(err, errno, "%s", mp);
        *kind = OUT_ATOMIC;
        *target = strdup(path);
        memset(st, 0, sizeof *st);
        return *target ? NF_OK : nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    }
    if (stat(path, st) != 0) {
        if (errno == ENOENT && S_ISLNK(lst.st_mode))
            return nf_error_set(err, NF_ERR_USAGE,
                                "%s is a symbolic link to a file that does not exist: not "
                                "writing through it (name the target itself, or remove the link)",
                                mp);
        return nf_error_errno(err, errno, "%s", mp);
    }
    struct stat so;
    if (fstat(STDOUT_FILENO, &so) == 0 && same_inode(st, &so)) {
        *kind = OUT_STDOUT;
        return NF_OK;
    }
    if (S_ISDIR(st->st_mode)) return nf_error_set(err, NF_ERR_USAGE, "%s is a directory: give a file name", mp);
    if (S_ISSOCK(st->st_mode)) return nf_error_set(err, NF_ERR_USAGE, "%s is a socket: not written", mp);
    if (!S_ISREG(st->st_mode)) {
        *kind = OUT_DIRECT;
        return NF_OK;
    }
    *kind = OUT_ATOMIC;
    *target = S_ISLNK(lst.st_mode) ? realpath(path, NULL) : strdup(path);
    if (!*target) return nf_error_errno(err, errno, "%s: cannot resolve the symbolic link", mp);
    return NF_OK;
}

char *nf_out_atomic_target(const char *path)
{
    if (!path || !*path || strcmp(path, "-") == 0) return NULL;
    out_kind kind;
    char *target = NULL;
    struct stat st;
    if (resolve(path, &kind, &target, &st, NULL) != NF_OK || kind != OUT_ATOMIC) {
        free(target);
        return NULL;
    }
    return target;
}

/* A FIFO or device node, opened for writing (a FIFO: once it has a reader, as `>` in a shell).
 * O_NOCTTY: a terminal named by -o never becomes the controlling terminal. */
static nf_status open_direct(nf_out *o, const struct stat *seen, nf_error *err)
{
    char m[NF_IO_MSG_PATH + 1];
    const char *mp = nf_io_msg_path(o->path, m);
    for (;;) {
        if (nf_sig_cancelled()) return interrupted(err);
        o->fd = open(o->path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
        if (o->fd >= 0) break;
        if (errno != EINTR) return nf_error_errno(err, errno, "cannot open %s", mp);
    }
    struct stat st;
    if (fstat(o->fd, &st) != 0) return nf_error_errno(err, errno, "cannot stat %s", mp);
    /* replaced between the look and the open: never write into a regular file in place */
    if (!same_inode(&st, seen) || S_ISREG(st.st_mode))
        return nf_error_set(err, NF_ERR_IO, "%s changed while it was opened", mp);
    return NF_OK;
}

/* A temp file beside the target (out_names.h's naming, which nf_stale_find reads back),
 * with the mode the target has, or 0666 less the umask for a new file (as cp does). */
static nf_status open_atomic(nf_out *o, const struct stat *seen, nf_error *err)
{
    char m[NF_IO_MSG_PATH + 1];
    o->fd = nf_outputs_temp(o->target, &o->tmp);
    if (o->fd < 0) return nf_error_errno(err, errno, "cannot create %s", nf_io_msg_path(o->path, m));
    mode_t mode;
    if (seen->st_mode) {
        mode = seen->st_mode & 0777;
    } else {
        mode_t mask = umask(0);
        umask(mask);
        mode = 0666 & ~mask;
    }
    (void)fchmod(o->fd, mode);
    return NF_OK;
}

nf_status nf_out_open(const char *path, int zstd_level, nf_out **out, nf_error *err)
{
    *out = NULL;
    if (path && !*path)
        return nf_error_set(err, NF_ERR_USAGE, "-o needs a file name (or - for standard output), not ''");
    nf_out *o = calloc(1, sizeof *o);
    if (!o) return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    o->fd = -1;
    o->buf = malloc(BUFFER_BYTES);
    if (!o->buf) goto nomem;
    if (zstd_level != 0) {
        o->zc = ZSTD_createCCtx();
        o->zcap = ZSTD_CStreamOutSize();
        o->zbuf = malloc(o->zcap);
        if (!o->zc || !o->zbuf) goto nomem;
        size_t r = ZSTD_CCtx_setParameter(o->zc, ZSTD_c_compressionLevel, zstd_level);
        if (ZSTD_isError(r)) {
            release(o);
            return nf_error_set(err, NF_ERR_USAGE, "zstd level %d: %s", zstd_level, ZSTD_getErrorName(r));
        }
    }
    struct stat seen;
    nf_status st = NF_OK;
    if (!path || strcmp(path, "-") == 0) {
        o->kind = OUT_STDOUT;
    } else if (!(o->path = strdup(path))) {
        goto nomem;
    } else {
        st = resolve(path, &o->kind, &o->target, &seen, err);
        if (st == NF_OK && o->kind == OUT_DIRECT) st = open_direct(o, &seen, err);
        if (st == NF_OK && o->kind == OUT_ATOMIC) st = open_atomic(o, &seen, err);
    }
    if (st != NF_OK) {
        release(o);
        return st;
    }
    if (o->kind == OUT_STDOUT) o->fd = STDOUT_FILENO;
    *out = o;
    return NF_OK;
nomem:
    release(o);
    return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
}

nf_status nf_out_write(nf_out *o, const void *data, size_t len, nf_error *err)
{
    const unsigned char *p = data;
    /* Big uncompressed pieces (ninfer-dequant's row chunks) go straight to the file, after what
     * is pending: one write, no copy into the buffer. */
    if (!o->zc && len >= BUFFER_BYTES) {
        if (o->used) NF_TRY(drain(o, false, err));
        return write_fd(o, p, len, err);
    }
    while (len > 0) {
        size_t n = BUFFER_BYTES - o->used < len ? BUFFER_BYTES - o->used : len;
        memcpy(o->buf + o->used, p, n);
        o->used += n;
        p += n;
        len -= n;
        if (o->used == BUFFER_BYTES) NF_TRY(drain(o, false, err));
    }
    return NF_OK;
}

nf_status nf_out_printf(nf_out *o, nf_error *err, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return nf_error_set(err, NF_ERR_IO, "formatting failed");
    return nf_out_write(o, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1, err);
}

nf_status nf_out_commit(nf_out *o, nf_error *err)
{
    char m[NF_IO_MSG_PATH + 1];
    nf_status st = drain(o, true, err);
    if (o->kind == OUT_ATOMIC) {
        const char *mp = nf_io_msg_path(o->path, m);
        if (st == NF_OK && fsync(o->fd) != 0) st = nf_error_errno(err, errno, "cannot sync %s", mp);
        if (close(o->fd) != 0 && st == NF_OK) st = nf_error_errno(err, errno, "cannot write %s", mp);
        o->fd = -1;
        /* the last moment a signal can still stop the publication */
        if (st == NF_OK && nf_sig_cancelled()) st = interrupted(err);
        if (st == NF_OK && rename(o->tmp, o->target) != 0) st = nf_error_errno(err, errno, "cannot publish %s", mp);
        if (st != NF_OK) unlink(o->tmp);
    } else if (o->kind == OUT_DIRECT) {
        const char *mp = nf_io_msg_path(o->path, m);
        /* a device's data reaches it; a FIFO or terminal cannot be synced (EINVAL) */
        if (st == NF_OK && fsync(o->fd) != 0 && errno != EINVAL && errno != EROFS && errno != ENOTSUP)
            st = nf_error_errno(err, errno, "cannot sync %s", mp);
        if (close(o->fd) != 0 && st == NF_OK) st = nf_error_errno(err, errno, "cannot write %s", mp);
        o->fd = -1;
    }
    release(o);
    return st;
}

void nf_out_abort(nf_out *o)
{
    if (!o) return;
    if (o->kind == OUT_ATOMIC) {
        if (o->fd >= 0) close(o->fd);
        o->fd = -1;
        unlink(o->tmp);
    }
    /* a stream (standard output, a FIFO, a device) cannot take back what it was given */
    release(o);
}
