/* Module interface of outputs: a whole file the library writes beside its destination and puts
 * in place at once -- the conversion report, the scale-out plan and the receipts
 * (docs/security.md 1.3: complete or not there at all; a destination that exists and is not a
 * regular file is never replaced).  The programs' single-file output with its streams and
 * links is out_file.h's. */
#ifndef NINFER_OUTPUTS_OUT_WHOLE_H
#define NINFER_OUTPUTS_OUT_WHOLE_H

#include <stdbool.h>
#include <stddef.h>

#include <ninfer/error.h>

#include "common/io.h"

/* Writes the file's bytes into out (write errors stay in out->e and are reported by the
 * caller); returns false when it ran out of memory. */
typedef bool (*nf_outputs_fill_fn)(void *ctx, nf_io_out *out);

/* The file's bytes written by fill into a temp file beside path (out_names.h's naming, so that
 * a killed run's is found stale), in writes of `buffer` bytes through the I/O shim, mode 0644,
 * synced: *tmp (malloc'ed) names it for the caller to rename over path or to publish with other
 * files.  A path that exists and is not a regular file is refused first (NF_ERR_USAGE).  On
 * failure nothing is left behind and *tmp is NULL. */
nf_status nf_outputs_write_temp(const char *path, size_t buffer, nf_outputs_fill_fn fill, void *ctx, char **tmp,
                                nf_error *err);

/* tmp (from nf_outputs_write_temp) renamed over path; on failure tmp is removed.  Frees tmp. */
nf_status nf_outputs_put_temp(const char *path, char *tmp, nf_error *err);

/* len bytes as the whole file path: nf_outputs_write_temp, then nf_outputs_put_temp. */
nf_status nf_outputs_put_whole(const char *path, const void *bytes, size_t len, nf_error *err);

#endif
