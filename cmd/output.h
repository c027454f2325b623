/* Program output streams: stdout or a file published atomically (a temp file beside the
 * destination, renamed over it when complete, removed on failure), optionally compressed with
 * zstd as it is written. */
#ifndef NINFER_CMD_OUTPUT_H
#define NINFER_CMD_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>

#include <ninfer/error.h>

typedef struct nf_out nf_out;

/* path NULL or "-": stdout.  zstd_level 0: no compression.  A file is created with a temporary
 * name and only appears at `path` on nf_out_commit. */
nf_status nf_out_open(const char *path, int zstd_level, nf_out **out, nf_error *err);
nf_status nf_out_write(nf_out *o, const void *data, size_t len, nf_error *err);
nf_status nf_out_printf(nf_out *o, nf_error *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Flush, finish the zstd frame, sync and publish.  Frees o whatever happens. */
nf_status nf_out_commit(nf_out *o, nf_error *err);
/* Drop everything written (the temp file is removed).  Frees o. */
void nf_out_abort(nf_out *o);
/* Would output go to a terminal? */
bool nf_out_is_terminal(const char *path);

#endif
