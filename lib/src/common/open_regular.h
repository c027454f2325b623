/* Opening a file the library reads whole or by offset -- a checkpoint's file, its JSON index or
 * config, an artifact's entry, an imatrix, a sensitivity file -- and refusing what is not a
 * regular file, in one place (open_regular.c; issue 25, item 3).  The policy (docs/security.md):
 * O_NONBLOCK, so a FIFO is refused at once instead of blocking the open until a writer comes (the
 * flag changes nothing for a regular file's reads); symbolic links followed (Hugging Face
 * snapshots are links into blobs/); the check made on the descriptor (fstat), not on the name. */
#ifndef NINFER_COMMON_OPEN_REGULAR_H
#define NINFER_COMMON_OPEN_REGULAR_H

#include <sys/stat.h>

#include <ninfer/error.h>

/* Opens `path` read-only; `shown` is how messages name it (the path, escaped when it comes from
 * a file).  NF_OK with the descriptor in *fd and *sb filled, or the failure's status with *fd -1
 * and err set:
 *   "<shown>: cannot open: <why>"  (errno's status; errno is kept, so a caller may word a
 *                                   missing file its own way; after the other failures it is 0)
 *   "<shown>: cannot stat: <why>"
 *   "<shown>: Is a directory"      (NF_ERR_IO, as the system says it)
 *   "<shown>: not a regular file"  (status `not_regular`: the caller's input decides whether a
 *                                   FIFO or a device is invalid input or a system error) */
nf_status nf_common_open_regular(const char *path, const char *shown, nf_status not_regular, int *fd, struct stat *sb,
                                 nf_error *err);

#endif
