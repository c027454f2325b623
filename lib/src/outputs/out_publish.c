/* The report's publication beside the artifact, and the names a run to OUT touches (see
 * out_publish.h).  Through the I/O shim like every other file the library writes. */
#include "outputs/out_publish.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/io.h"
#include "outputs/out_names.h"

/* A path as messages show it: shortened in the middle when long (common/io.h, docs/security.md 7.1, M8). */
#define MP(path) nf_io_msg_path((path), (char[NF_IO_MSG_PATH + 1]){0})

void nf_outputs_restore(const char *dest, const char *backup)
{
    struct stat sd, sb;
    if (nf_io_lstat(dest, &sd) == 0 && nf_io_lstat(backup, &sb) == 0 && sd.st_dev == sb.st_dev &&
        sd.st_ino == sb.st_ino)
        nf_io_unlink(backup);
    else nf_io_rename(backup, dest);
}

nf_status nf_outputs_publish_report(const char *path, const char *tmp, bool force, char **backup, nf_error *err)
{
    *backup = NULL;
    struct stat sb;
    int e = nf_io_lstat(path, &sb);
    if (e && e != ENOENT) return nf_error_errno(err, e, "%s", MP(path));
    bool exists = e == 0 && !S_ISDIR(sb.st_mode);
    if (!tmp && !(exists && force)) return NF_OK;
    if (exists && force && (e = nf_outputs_link_aside(path, ".old", backup)) != 0)
        return nf_error_errno(err, e, "%s: cannot set the old report aside", MP(path));
    if (tmp && (e = nf_io_rename(tmp, path)) != 0) return nf_error_errno(err, e, "cannot publish %s", MP(path));
    if (!tmp && (e = nf_io_unlink(path)) != 0)
        return nf_error_errno(err, e, "%s: cannot remove the report of the artifact being replaced", MP(path));
    return NF_OK;
}

const char *nf_outputs_role(const char *name, const char *base, bool report)
{
    nf_outputs_name n;
    switch (nf_outputs_recognise(name, base, &n)) {
    case NF_OUTPUTS_ENTRY: return "the artifact";
    case NF_OUTPUTS_REPORT: return report ? "the report" : NULL;
    case NF_OUTPUTS_PART: return "a part name";
    case NF_OUTPUTS_LOCK: return "the lock file";
    case NF_OUTPUTS_TEMP:
    case NF_OUTPUTS_ASIDE:
        /* a conversion's own: the scale-out receipts and staged entry are its tasks' */
        if (n.of == NF_OUTPUTS_OF_ENTRY || n.of == NF_OUTPUTS_OF_PART || n.of == NF_OUTPUTS_OF_REPORT)
            return "a temp or set-aside file name";
        return NULL;
    default: return NULL;
    }
}

nf_status nf_outputs_each_role(const char *output, bool report, nf_outputs_visit visit, void *ctx, nf_error *err)
{
    const char *slash = strrchr(output, '/');
    const char *base = slash ? slash + 1 : output;
    size_t dl = slash ? (size_t)(slash - output) + 1 : 0;
    char *dir = dl ? strndup(output, dl) : strdup("./");
    if (!dir) return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    DIR *d = opendir(dir);
    nf_status st = NF_OK;
    if (!d) {
        if (errno != ENOENT && errno != ENOTDIR) st = nf_error_errno(err, errno, "cannot list %s", MP(dir));
        free(dir);
        return st; /* no directory: nothing in it to replace (creating the files fails later) */
    }
    struct dirent *e;
    while (st == NF_OK && (e = readdir(d)) != NULL) {
        const char *role = nf_outputs_role(e->d_name, base, report);
        if (!role) continue;
        size_t need = strlen(dir) + strlen(e->d_name) + 1;
        char *path = malloc(need);
        if (!path) {
            st = nf_error_set(err, NF_ERR_NOMEM, "out of memory");
            break;
        }
        snprintf(path, need, "%s%s", dl ? dir : "", e->d_name);
        st = visit(ctx, path, role, err);
        free(path);
    }
    closedir(d);
    free(dir);
    return st;
}
