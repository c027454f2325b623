/* Module interface of outputs: the single-file output of the programs (ninfer-dequant's -o):
 * stdout, a FIFO or device written into, or a file published atomically (a temp file beside the destination, renamed over it when complete, removed on
 * failure), optionally compressed with zstd as it is written. */
#ifndef NINFER_OUTPUTS_OUT_FILE_H
#define NINFER_OUTPUTS_OUT_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include <ninfer/error.h>

typedef struct nf_out nf_out;

/* OUT for a program that writes one stream (ninfer-dequant); docs/ninfer-dequant.md "Outputs",
 * docs/security.md 1.3: an output path that exists and is not a regular file is written into or refused,
 * never replaced.
 *  - NULL or "-": standard output; so is a path that names the file standard output already is
 *    (a link to /proc/self/fd/1, /dev/stdout);
 *  - a new name, or a regular file: a temp file beside it (out_names.h's naming), renamed over
 *    it by nf_out_commit, removed by nf_out_abort: nothing partial is ever seen at path;
 *  - a symbolic link (chain) to a regular file: the same at the link's final target (the links
 *    stay), like cp and dd writing through a link;
 *  - a FIFO or a device node, directly or through links: opened (a FIFO: once it has a reader)
 *    and written into; nothing to take back on failure;
 *  - "", a directory, a socket or a dangling link: NF_ERR_USAGE naming the path.
 * zstd_level 0: no compression. */
nf_status nf_out_open(const char *path, int zstd_level, nf_out **out, nf_error *err);
nf_status nf_out_write(nf_out *o, const void *data, size_t len, nf_error *err);
nf_status nf_out_printf(nf_out *o, nf_error *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Flush, finish the zstd frame, sync and publish.  Frees o whatever happens. */
nf_status nf_out_commit(nf_out *o, nf_error *err);
/* Drop everything written (the temp file is removed; a stream keeps what it got).  Frees o. */
void nf_out_abort(nf_out *o);
/* Does the opened output go to a terminal (standard output, or a terminal device named by -o)? */
bool nf_out_terminal(const nf_out *o);
/* The regular file nf_out_open would replace through a temp file beside it (path, or the end of
 * its links), malloc'ed; NULL when path is a stream or is refused.  Stale temp files of path are
 * beside it. */
char *nf_out_atomic_target(const char *path);

/* Interruption is the program's signal policy (out_signals.h): once nf_sig_catch has run, a signal
 * makes the writes of an nf_out stop with "interrupted" (NF_ERR_IO, exit 3), and nf_out_commit
 * does not publish. */

#endif
