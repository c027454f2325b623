/* ninfer/outputs.h - the files a run writes beside its output: what killed runs left there.
 *
 * Every name a run writes beside an output OUT (the entry, its parts, the report, the lock, the
 * temp files and the set-aside ".old" links) is formed and recognised by the library's outputs
 * module (docs/library.md, "Modules"); this header is the part of it that programs and library
 * users call. */
#ifndef NINFER_OUTPUTS_H
#define NINFER_OUTPUTS_H

#include <ninfer/export.h>

#include <stdbool.h>
#include <stddef.h>

#include <ninfer/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- files of killed runs */
/* What an interrupted conversion (SIGKILL, power loss: nothing can clean up) may leave for
 * the artifact `dest`, in dest's directory (B: dest's base name; H: a host name as
 * docs/ninfer-convert.md "Files of killed runs" describes):
 *  - NF_STALE_TEMP: temp files ".<B>.<pid>@<H>.XXXXXX.tmp", ".<B>.part-NNNN.<pid>@<H>.XXXXXX.tmp"
 *    and ".<B>.conversion.json.<pid>@<H>.XXXXXX.tmp" (the outputs module's naming) whose
 *    process <pid> is no longer running on this host, H being this host;
 *  - NF_STALE_BACKUP: ".<B>[.part-NNNN].<pid>@<H>.XXXXXX.old", a file of the previous artifact
 *    that an overwriting (--force) run set aside and could not put back or remove (process gone);
 *  - NF_STALE_ORPHAN_PART: part files "<B>.part-NNNN" while the entry <B> does not exist and
 *    no live process has a temp file for dest (parts are published before the entry) (pid 0).
 * Only regular files are listed; files of running processes never are, nor files of another
 * host sharing the filesystem (whose processes cannot be asked from here: they count as live).
 * Names without "@<H>" (earlier versions) are taken for this host's. */
typedef enum nf_stale_kind { NF_STALE_TEMP, NF_STALE_BACKUP, NF_STALE_ORPHAN_PART } nf_stale_kind;

typedef struct nf_stale {
    char *path;
    long pid; /* the dead process that made the file; 0 for an orphan part */
    nf_stale_kind kind;
    char *original; /* NF_STALE_BACKUP: the path the file was set aside from (dest, one of its
                       parts or its report); NULL otherwise */
    bool entry;     /* NF_STALE_BACKUP of dest itself: a set-aside entry (removed first when a
                       --force run commits, so the other backups of its pid restore that set) */
} nf_stale;

/* artifact false: only the temp files of dest itself (".<B>.<pid>@<H>.XXXXXX.tmp", what a killed
 * ninfer-dequant leaves), no part, report, set-aside or orphan-part files. */
NF_API nf_status nf_stale_find(const char *dest, bool artifact, nf_stale **out, size_t *count, nf_error *err);
NF_API void nf_stale_free(nf_stale *s, size_t n);

#ifdef __cplusplus
}
#endif
#endif
