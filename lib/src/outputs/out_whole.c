/* A whole file written beside its destination and put in place at once (out_whole.h). */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "common/io.h"
#include "outputs/out_names.h"
#include "outputs/out_whole.h"

#define MP(path) nf_io_msg_path((path), (char[NF_IO_MSG_PATH + 1]){0})

nf_status nf_outputs_write_temp(const char *path, size_t buffer, nf_outputs_fill_fn fill, void *ctx, char **tmp,
                                nf_error *err)
{
    *tmp = NULL;
    struct stat sb;
    if (nf_io_lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return nf_error_set(err, NF_ERR_USAGE, "%s: not a regular file: never replaced", MP(path));
    nf_io_out o;
    if (!nf_io_out_init(&o, -1, buffer ? buffer : 1)) return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    char *name = NULL;
    o.fd = nf_outputs_temp(path, &name);
    if (o.fd < 0) {
        int e = errno;
        nf_io_out_free(&o);
        return nf_error_errno(err, e, "%s: cannot create a temp file", MP(path));
    }
    nf_status st = NF_OK;
    bool filled = fill(ctx, &o);
    if (filled) nf_io_out_flush(&o);
    int e = o.e;
    if (filled && !e && (e = nf_io_fchmod(o.fd, 0644)) == 0) e = nf_io_fdatasync(o.fd);
    if (!filled && !e) st = nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    else if (e) st = nf_error_errno(err, e, "%s: cannot write %s", MP(path), MP(name));
    nf_io_close(o.fd);
    nf_io_out_free(&o);
    if (st != NF_OK) {
        nf_io_unlink(name);
        free(name);
        return st;
    }
    *tmp = name;
    return NF_OK;
}

nf_status nf_outputs_put_temp(const char *path, char *tmp, nf_error *err)
{
    int e = nf_io_rename(tmp, path);
    nf_status st = e ? nf_error_errno(err, e, "%s: cannot put in place", MP(path)) : NF_OK;
    if (e) nf_io_unlink(tmp);
    free(tmp);
    return st;
}

typedef struct bytes {
    const void *p;
    size_t n;
} bytes;

static bool put_bytes(void *ctx, nf_io_out *out)
{
    const bytes *b = ctx;
    nf_io_out_put(out, b->p, b->n);
    return true;
}

nf_status nf_outputs_put_whole(const char *path, const void *data, size_t len, nf_error *err)
{
    bytes b = {data, len};
    char *tmp = NULL;
    /* a buffer of 1: the bytes are larger, so they are written as they are, not copied */
    NF_TRY(nf_outputs_write_temp(path, 1, put_bytes, &b, &tmp, err));
    return nf_outputs_put_temp(path, tmp, err);
}
