/* Program output streams (see output.h). */
#define _GNU_SOURCE /* mkostemps */
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#define BUFFER_BYTES ((size_t)1 << 18)

struct nf_out {
    int fd;
    bool is_stdout;
    char *path;     /* destination */
    char *tmp;      /* temp file beside it */
    ZSTD_CCtx *zc;
    unsigned char *buf; /* pending plain bytes */
    size_t used;
    unsigned char *zbuf;
    size_t zcap;
};

bool nf_out_is_terminal(const char *path)
{
    return (!path || strcmp(path, "-") == 0) && isatty(STDOUT_FILENO);
}

static nf_status write_fd(nf_out *o, const void *data, size_t len, nf_error *err)
{
    const unsigned char *p = data;
    while (len > 0) {
        ssize_t n = write(o->fd, p, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            return nf_error_errno(err, errno, "cannot write %s", o->is_stdout ? "standard output" : o->path);
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
    if (!o->is_stdout && o->fd >= 0) close(o->fd);
    ZSTD_freeCCtx(o->zc);
    free(o->buf);
    free(o->zbuf);
    free(o->path);
    free(o->tmp);
    free(o);
}

nf_status nf_out_open(const char *path, int zstd_level, nf_out **out, nf_error *err)
{
    *out = NULL;
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
    if (!path || strcmp(path, "-") == 0) {
        o->is_stdout = true;
        o->fd = STDOUT_FILENO;
        *out = o;
        return NF_OK;
    }
    o->path = strdup(path);
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    size_t need = strlen(path) + sizeof "..XXXXXX.tmp";
    o->tmp = malloc(need);
    if (!o->path || !o->tmp) goto nomem;
    snprintf(o->tmp, need, "%.*s.%s.XXXXXX.tmp", (int)dir_len, path, slash ? slash + 1 : path);
    o->fd = mkostemps(o->tmp, 4, O_CLOEXEC);
    if (o->fd < 0) {
        nf_status st = nf_error_errno(err, errno, "cannot create %s", path);
        free(o->tmp);
        o->tmp = NULL;
        release(o);
        return st;
    }
    /* Like any new file: 0666 less the umask (mkstemp makes it 0600). */
    mode_t mask = umask(0);
    umask(mask);
    (void)fchmod(o->fd, 0666 & ~mask);
    *out = o;
    return NF_OK;
nomem:
    release(o);
    return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
}

nf_status nf_out_write(nf_out *o, const void *data, size_t len, nf_error *err)
{
    const unsigned char *p = data;
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
    nf_status st = drain(o, true, err);
    if (st == NF_OK && !o->is_stdout) {
        if (fsync(o->fd) != 0) st = nf_error_errno(err, errno, "cannot sync %s", o->path);
        if (close(o->fd) != 0 && st == NF_OK) st = nf_error_errno(err, errno, "cannot write %s", o->path);
        o->fd = -1;
        if (st == NF_OK && rename(o->tmp, o->path) != 0)
            st = nf_error_errno(err, errno, "cannot publish %s", o->path);
        if (st != NF_OK) unlink(o->tmp);
    }
    release(o);
    return st;
}

void nf_out_abort(nf_out *o)
{
    if (!o) return;
    if (!o->is_stdout) {
        if (o->fd >= 0) close(o->fd);
        o->fd = -1;
        unlink(o->tmp);
    }
    release(o);
}
