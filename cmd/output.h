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

/* What an interrupted ninfer-convert (SIGKILL, power loss: nothing can clean up) may leave for
 * the artifact `dest`, in dest's directory (B: dest's base name):
 *  - NF_STALE_TEMP: temp files ".<B>.<pid>.XXXXXX.tmp", ".<B>.part-NNNN.<pid>.XXXXXX.tmp" and
 *    ".<B>.conversion.json.<pid>.XXXXXX.tmp" (the naming of common/io.c) whose process <pid>
 *    is no longer running on this host;
 *  - NF_STALE_BACKUP: ".<B>[.part-NNNN].<pid>.XXXXXX.old", a file of the previous artifact that
 *    an overwriting (--force) run set aside and could not put back or remove (process gone);
 *  - NF_STALE_ORPHAN_PART: part files "<B>.part-NNNN" while the entry <B> does not exist and
 *    no live process has a temp file for dest (parts are published before the entry) (pid 0).
 * Only regular files are listed; files of running processes never are. */
typedef enum nf_stale_kind { NF_STALE_TEMP, NF_STALE_BACKUP, NF_STALE_ORPHAN_PART } nf_stale_kind;

typedef struct nf_stale {
    char *path;
    long pid; /* the dead process that made the file; 0 for an orphan part */
    nf_stale_kind kind;
} nf_stale;

nf_status nf_stale_find(const char *dest, nf_stale **out, size_t *count, nf_error *err);
void nf_stale_free(nf_stale *s, size_t n);

#endif
