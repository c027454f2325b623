/* writer_publish.c, for writer.c: the output's lock; a failure of begin rolls everything
 * back. */
#ifndef NINFER_CONTAINER_WRITER_PUBLISH_H
#define NINFER_CONTAINER_WRITER_PUBLISH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "container/writer_state.h"

nf_status nf_wr_fail_and_abort(nf_writer *w, nf_status st);
/* The output's lock, exclusive or shared (a scale-out task's); nothing to do when this writer
 * holds it already. */
nf_status nf_wr_take_lock(nf_writer *w, bool shared, nf_error *err);
/* Let go of the lock, unless nf_writer_hold_lock keeps it until nf_writer_free. */
void nf_wr_release_lock(nf_writer *w);
/* Every byte of each object (of a task's objects) written, or the first gap named. */
nf_status nf_wr_check_coverage(nf_writer *w, nf_error *err);
/* The objects' digests (docs/artifact.md 8); with image, into the entry image and its temp file. */
nf_status nf_wr_fill_checksums(nf_writer *w, bool image, nf_error *err);
/* Temp file i's size checked, its data synced (a task: only a selected file's), its descriptor
 * closed. */
nf_status nf_wr_sync_file(nf_writer *w, size_t i, nf_error *err);
/* fdatasync of the output's directory (where the file system can). */
nf_status nf_wr_sync_directory(nf_writer *w, nf_error *err);

#endif
