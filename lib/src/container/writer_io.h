/* writer_io.c, for the writer's files above it: routing across the files, and the objects'
 * streaming digests. */
#ifndef NINFER_CONTAINER_WRITER_IO_H
#define NINFER_CONTAINER_WRITER_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "container/writer_state.h"

int nf_wr_cover(wobj *o, uint64_t a, uint64_t b, interval *clash);
nf_status nf_wr_digest_piece(nf_writer *w, size_t index, uint64_t offset, const void *data, size_t len, nf_error *err);
void nf_wr_digest_free(nf_writer *w);
/* The temp files' descriptor cache (w->fds, common/fd_cache.h): sized by nf_wr_fd_init once the
 * file table is planned; nf_wr_fd_adopt takes a temp file's first descriptor (recording the
 * file it must stay), nf_wr_fd_acquire / nf_wr_fd_release hold one for a transfer (reopening
 * it if it was closed; ESTALE when the name holds another file now), nf_wr_fd_close closes it
 * for good.  The int results are 0 or an errno value. */
nf_status nf_wr_fd_init(nf_writer *w, nf_error *err);
int nf_wr_fd_adopt(nf_writer *w, size_t i, int fd);
int nf_wr_fd_acquire(nf_writer *w, size_t i, int *fd);
void nf_wr_fd_release(nf_writer *w, size_t i);
int nf_wr_fd_close(nf_writer *w, size_t i);
int nf_wr_route(nf_writer *w, uint64_t pos, void *buf, size_t len, bool writing, size_t *failed_file);

#endif
