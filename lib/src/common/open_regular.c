/* Opening a regular file to read (common/open_regular.h). */
#include "common/open_regular.h"

#include <errno.h>
#include <fcntl.h>

#include "common/io.h"

nf_status nf_common_open_regular(const char *path, const char *shown, nf_status not_regular, int *fd, struct stat *sb,
                                 nf_error *err)
{
    *fd = nf_io_open(path, O_RDONLY | O_NONBLOCK, 0);
    if (*fd < 0) {
        int e = errno;
        nf_status st = nf_error_errno(err, e, "%s: cannot open", shown);
        errno = e;
        return st;
    }
    nf_status st = NF_OK;
    int e = nf_io_fstat(*fd, sb);
    if (e) st = nf_error_errno(err, e, "%s: cannot stat", shown);
    else if (S_ISDIR(sb->st_mode)) st = nf_error_errno(err, EISDIR, "%s", shown);
    else if (!S_ISREG(sb->st_mode)) st = nf_error_set(err, not_regular, "%s: not a regular file", shown);
    if (st != NF_OK) {
        nf_io_close(*fd);
        *fd = -1;
        errno = 0; /* (not the open's failure: see the header) */
    }
    return st;
}
