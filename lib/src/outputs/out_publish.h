/* Module interface of outputs: the files a conversion publishes beside its artifact under the
 * writer's all-or-nothing step (docs/library.md, "Writing": nf_writer_publish, then these, then
 * nf_writer_commit or nf_writer_abort), and the names a run to OUT would touch. */
#ifndef NINFER_OUTPUTS_OUT_PUBLISH_H
#define NINFER_OUTPUTS_OUT_PUBLISH_H

#include <stdbool.h>

#include <ninfer/error.h>

/* Put back a file set aside as `backup` (a second link, nf_outputs_link_aside): dropped when dest
 * is still that file, renamed over dest otherwise (the rollback of nf_outputs_publish_report). */
void nf_outputs_restore(const char *dest, const char *backup);

/* The report's part of the publication, once the artifact is published (not committed): tmp
 * (NULL under --no-report) renamed to path.  With force, an existing report is first kept as a
 * second link ".<name>.<pid>@<host>.XXXXXX.old" (*backup), the writer's naming, so that the caller
 * can put it back (nf_outputs_restore) or drop it with the artifact's; under --no-report it is
 * then removed (it describes the artifact being replaced).  On failure *backup may be set: the
 * caller restores. */
nf_status nf_outputs_publish_report(const char *path, const char *tmp, bool force, char **backup, nf_error *err);

/* What `name` (an entry of OUT's directory) is to a conversion to OUT whose base name is base, for
 * messages, or NULL when the run never creates, replaces or removes that name: the entry ("the
 * artifact"), the report (when one is written), a part ("<base>.part-" and 4 or more digits: this
 * run's, or one of the artifact being replaced that --force removes), the lock file, and the temp
 * and set-aside names of the entry, its parts and its report (--remove-stale removes stale ones). */
const char *nf_outputs_role(const char *name, const char *base, bool report);

/* visit(ctx, path, role, err) for every entry of OUT's directory that nf_outputs_role knows (path:
 * the entry in OUT's directory); stops at the first status visit returns that is not NF_OK and
 * returns it.  No directory: nothing to visit (creating the files fails later). */
typedef nf_status (*nf_outputs_visit)(void *ctx, const char *path, const char *role, nf_error *err);
nf_status nf_outputs_each_role(const char *output, bool report, nf_outputs_visit visit, void *ctx, nf_error *err);

#endif
