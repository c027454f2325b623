/* writer_io.c, for the writer's files above it: routing across the files, and the objects'
 * streaming digests. */
#ifndef NINFER_CONTAINER_WRITER_IO_H
#define NINFER_CONTAINER_WRITER_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "container/writer_state.h"

int nf_wr_cover(wobj *o, uint64_t a, uint64_t b, interval *clash);
nf_status nf_wr_digest_piece(nf_writer *w, size_t index, uint64_t offset, const void *data, size_t len,
                             nf_error *err);
void nf_wr_digest_free(nf_writer *w);
int nf_wr_route(nf_writer *w, uint64_t pos, void *buf, size_t len, bool writing, size_t *failed_file);

#endif
