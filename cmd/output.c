/* Program output streams (see output.h). */
#define _GNU_SOURCE /* mkostemps */
#include "output.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
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
    /* the naming scheme of the library's temp files (common/io.c): ".<base>.<pid>.XXXXXX.tmp" */
    char pid[24];
    snprintf(pid, sizeof pid, "%ld", (long)getpid());
    size_t need = strlen(path) + strlen(pid) + sizeof "...XXXXXX.tmp";
    o->tmp = malloc(need);
    if (!o->path || !o->tmp) goto nomem;
    snprintf(o->tmp, need, "%.*s.%s.%s.XXXXXX.tmp", (int)dir_len, path, slash ? slash + 1 : path, pid);
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

/* ---------------------------------------------------------------- stale files of killed runs */
static bool all_digits(const char *s, size_t n)
{
    if (n == 0) return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9') return false;
    return true;
}

/* Length of a ".part-NNNN" (4 or more digits) prefix of s, or 0. */
static size_t part_suffix(const char *s)
{
    if (strncmp(s, ".part-", 6) != 0) return 0;
    size_t n = 0;
    while (s[6 + n] >= '0' && s[6 + n] <= '9') n++;
    return n >= 4 ? 6 + n : 0;
}

/* rest = "[.part-NNNN | .conversion.json].<pid>.XXXXXX.tmp" (or ".old" for a file set aside):
 * the pid, or -1; *backup tells the suffix. */
static long temp_pid(const char *rest, bool *backup)
{
    size_t skip = part_suffix(rest);
    if (!skip && strncmp(rest, ".conversion.json.", 17) == 0) skip = 16;
    rest += skip;
    if (*rest != '.') return -1;
    rest++;
    const char *dot = strchr(rest, '.');
    if (!dot || dot - rest > 10 || !all_digits(rest, (size_t)(dot - rest))) return -1;
    const char *x = dot + 1;
    for (int i = 0; i < 6; i++) {
        char c = x[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) return -1;
    }
    *backup = strcmp(x + 6, ".old") == 0;
    if (strcmp(x + 6, ".tmp") != 0 && !*backup) return -1;
    long pid = strtol(rest, NULL, 10);
    return pid > 0 ? pid : -1;
}

/* Is process pid running on this host?  EPERM: it exists but belongs to someone else. */
static bool process_alive(long pid)
{
    if (pid == (long)getpid()) return true;
    return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

static bool push_stale(nf_stale **v, size_t *n, size_t *cap, const char *dir, const char *name, long pid,
                       nf_stale_kind kind)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 4;
        nf_stale *nv = realloc(*v, c * sizeof *nv);
        if (!nv) return false;
        *v = nv;
        *cap = c;
    }
    size_t need = strlen(dir) + strlen(name) + 1;
    char *path = malloc(need);
    if (!path) return false;
    snprintf(path, need, "%s%s", dir, name);
    (*v)[*n].path = path;
    (*v)[*n].pid = pid;
    (*v)[*n].kind = kind;
    (*n)++;
    return true;
}

nf_status nf_stale_find(const char *dest, nf_stale **out, size_t *count, nf_error *err)
{
    *out = NULL;
    *count = 0;
    const char *slash = strrchr(dest, '/');
    const char *base = slash ? slash + 1 : dest;
    size_t blen = strlen(base);
    char *dir = slash ? strndup(dest, (size_t)(slash - dest) + 1) : strdup("");
    if (!dir) return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    DIR *d = opendir(*dir ? dir : ".");
    if (!d) {
        nf_status st = errno == ENOENT ? NF_OK : nf_error_errno(err, errno, "cannot list %s", *dir ? dir : ".");
        free(dir);
        return st;
    }
    struct stat sb;
    bool entry_exists = lstat(dest, &sb) == 0;
    nf_stale *v = NULL, *parts = NULL;
    size_t n = 0, cap = 0, nparts = 0, capparts = 0;
    bool live_temp = false, ok = true;
    struct dirent *e;
    while (ok && (e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        if (name[0] == '.' && strncmp(name + 1, base, blen) == 0) {
            bool backup = false;
            long pid = temp_pid(name + 1 + blen, &backup);
            if (pid < 0) continue;
            if (process_alive(pid)) {
                live_temp = true;
                continue;
            }
            char *full = NULL;
            size_t need = strlen(dir) + strlen(name) + 1;
            if ((full = malloc(need)) == NULL) {
                ok = false;
                break;
            }
            snprintf(full, need, "%s%s", dir, name);
            bool regular = lstat(full, &sb) == 0 && S_ISREG(sb.st_mode);
            free(full);
            if (regular) ok = push_stale(&v, &n, &cap, dir, name, pid, backup ? NF_STALE_BACKUP : NF_STALE_TEMP);
        } else if (!entry_exists && strncmp(name, base, blen) == 0) {
            size_t k = part_suffix(name + blen);
            if (k && name[blen + k] == '\0')
                ok = push_stale(&parts, &nparts, &capparts, dir, name, 0, NF_STALE_ORPHAN_PART);
        }
    }
    closedir(d);
    free(dir);
    /* Parts without their entry: an interrupted publication (parts are published first), unless
     * a live process is publishing right now. */
    for (size_t i = 0; ok && i < nparts; i++) {
        if (live_temp) {
            free(parts[i].path);
            continue;
        }
        ok = push_stale(&v, &n, &cap, "", parts[i].path, 0, NF_STALE_ORPHAN_PART);
        free(parts[i].path);
    }
    free(parts);
    if (!ok) {
        nf_stale_free(v, n);
        return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    }
    *out = v;
    *count = n;
    return NF_OK;
}

void nf_stale_free(nf_stale *s, size_t n)
{
    for (size_t i = 0; i < n; i++) free(s[i].path);
    free(s);
}
