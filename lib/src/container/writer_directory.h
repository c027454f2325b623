/* writer_directory.c, for writer.c: the directory text and the file table of the whole
 * artifact. */
#ifndef NINFER_CONTAINER_WRITER_DIRECTORY_H
#define NINFER_CONTAINER_WRITER_DIRECTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "container/writer_state.h"

nf_status nf_wr_layout_directory(nf_writer *w, nf_buf *text, uint64_t **segs, size_t *n, nf_error *err);

#endif
