/* The artifact writer's end (writer_state.h): coverage and checksums, publishing the parts
 * then the entry, setting aside what is replaced, the commit, and the rollback that puts every
 * replaced file back; and the output's lock held from begin to the commit or the rollback. */
#include "container/writer_io.h"
#include "container/writer_publish.h"
#include "container/writer_state.h"

/* ---------------------------------------------------------------- cleanup */
/* Put a set-aside file back at dest: dropped when it is a second link of the file still at dest
 * (set aside with the destination kept, nothing replaced it), renamed over dest otherwise (one
 * atomic step whether dest holds the new file or nothing).  Returns true when nothing of it is
 * left to do. */
static bool restore_backup(const char *dest, const char *backup)
{
    struct stat sd, sb;
    if (nf_io_lstat(dest, &sd) == 0 && nf_io_lstat(backup, &sb) == 0 && sd.st_dev == sb.st_dev &&
        sd.st_ino == sb.st_ino)
        return nf_io_unlink(backup) == 0;
    return nf_io_rename(backup, dest) == 0;
}

/* Undo everything this writer did, at any point up to a commit: the temps are removed, the new
 * files unpublished and the replaced ones put back.  For a split artifact the new entry goes
 * first (so that no reader finds an entry whose parts are being swapped), then every part (the
 * old one back over the new, or the new one removed), the old surplus parts back, the temps,
 * and the old entry last: at every instant the entry path holds the complete new artifact,
 * nothing, or the complete old one.  A single-file artifact is put back by one rename. */

static void abort_files(nf_writer *w)
{
    for (size_t i = 0; i < w->nfiles; i++) (void)nf_wr_fd_close(w, i);
    wfile *entry = w->nfiles ? &w->files[0] : NULL;
    if (entry && w->nfiles > 1 && entry->published && nf_io_unlink(entry->dest) == 0) entry->published = false;
    for (size_t k = 1; k <= w->nfiles; k++) {
        wfile *f = &w->files[k % w->nfiles];
        if (k == w->nfiles) { /* the entry, after the surplus parts and the temps */
            for (size_t i = 0; i < w->nsurplus; i++) {
                wsurplus *s = &w->surplus[i];
                if (s->backed_up && restore_backup(s->dest, s->backup)) s->backed_up = false;
            }
            for (size_t i = 0; i < w->nfiles; i++) {
                wfile *t = &w->files[i];
                if (t->temp_exists && nf_io_unlink(t->temp) == 0) t->temp_exists = false;
            }
        }
        if (f->backed_up) {
            if (restore_backup(f->dest, f->backup)) {
                f->backed_up = false;
                f->published = false;
            }
        } else if (f->published && nf_io_unlink(f->dest) == 0) {
            f->published = false;
        }
    }
    nf_wr_release_lock(w);
}

nf_status nf_wr_fail_and_abort(nf_writer *w, nf_status st)
{
    abort_files(w);
    w->state = W_FAILED;
    return st;
}

/* ---------------------------------------------------------------- the lock */
/* The output's lock file ".<entry name>.lock" beside the entry (outputs/out_lock.h): created and locked
 * without waiting, never through a symbolic link.  Another writer holding it is a system error
 * (exit 3: try again later); a lock file that is not a regular file is the caller's to remove.
 * Shared: a scale-out task's, held with the plan's other tasks, never with a publisher
 * (docs/scale-out.md, "The output's lock"). */
nf_status nf_wr_take_lock(nf_writer *w, bool shared, nf_error *err)
{
    if (w->lock_fd >= 0) return NF_OK;
    int e = nf_outputs_lock(w->path, shared, &w->lock_fd, &w->lock_path);
    if (!e) return NF_OK;
    size_t need = strlen(w->prefix) + strlen(w->entry_name) + sizeof "..lock";
    char *lp = malloc(need);
    if (!lp) return nf_wr_nomem(err);
    snprintf(lp, need, "%s.%s.lock", w->prefix, w->entry_name);
    nf_status st;
    struct stat sb;
    long pid;
    char host[NF_OUTPUTS_HOST_MAX + 1], who[NF_OUTPUTS_HOST_MAX + 48] = "";
    if (e == EWOULDBLOCK && nf_outputs_lock_holder(lp, &pid, host))
        snprintf(who, sizeof who, ", process %ld on host %s", pid, host);
    if (e == EWOULDBLOCK)
        st = nf_error_set(err, NF_ERR_IO,
                          "%s: another process is writing this output (it holds the lock file %s%s); "
                          "try again when it has finished",
                          MP(w->path), MP(lp), who);
    else if ((e == ELOOP || e == EINVAL) && nf_io_lstat(lp, &sb) == 0 && !S_ISREG(sb.st_mode))
        st = nf_error_set(err, NF_ERR_USAGE, "%s: the lock file %s is %s, not a regular file: remove it", MP(w->path),
                          MP(lp), nf_io_kind_name(sb.st_mode));
    else st = nf_error_errno(err, e, "%s: cannot lock the output (lock file %s)", MP(w->path), MP(lp));
    free(lp);
    return st;
}

/* Let go of the lock (the lock file is removed first, see common/io.h). */
void nf_wr_release_lock(nf_writer *w)
{
    if (w->lock_kept) return;
    nf_outputs_unlock(w->lock_fd, w->lock_path);
    w->lock_fd = -1;
    free(w->lock_path);
    w->lock_path = NULL;
}

/* ---------------------------------------------------------------- finish */
nf_status nf_writer_hold_lock(nf_writer *w, bool shared, nf_error *err)
{
    NF_TRY(nf_wr_take_lock(w, shared, err));
    w->lock_kept = true;
    return NF_OK;
}

nf_status nf_wr_check_coverage(nf_writer *w, nf_error *err)
{
    for (size_t i = 0; i < w->nobjs; i++) {
        const wobj *o = &w->objs[i];
        if (o->complete || (w->objsel && !w->objsel[i])) continue;
        uint64_t a = 0, b = o->bytes;
        if (o->ncov > 0) {
            if (o->cov[0].a > 0) {
                b = o->cov[0].a;
            } else {
                a = o->cov[0].b;
                b = o->ncov > 1 ? o->cov[1].a : o->bytes;
            }
        }
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: object '%s': bytes [%llu, %llu) of %llu were never written "
                            "(missing output coverage)",
                            MP(w->path), o->id, (unsigned long long)a, (unsigned long long)b,
                            (unsigned long long)o->bytes);
    }
    return NF_OK;
}

/* docs/artifact.md 8: each object's digest from its bytes as written (streamed as they were written,
 * or, for an object whose stream was given up, read back from the temp files), then, with image,
 * the digests put into the directory and the directory digest over header + JSON with its own
 * digits still zero, written to the entry's temp file.  A task (w->objsel) digests only its
 * objects, and leaves the image to the assembler. */
nf_status nf_wr_fill_checksums(nf_writer *w, bool image, nf_error *err)
{
    uint8_t *buf = malloc(READBACK_CHUNK);
    if (!buf) return nf_wr_nomem(err);
    char hex[33];
    for (size_t i = 0; i < w->nobjs; i++) {
        const wobj *o = &w->objs[i];
        if (w->objsel && !w->objsel[i]) continue; /* a task's: only its objects */
        if (w->dig && w->dig[i].done) {           /* streamed while it was written */
            if (image) memcpy(w->image.data + NF_HEADER_BYTES + w->sum_pos[i], w->dig[i].hex, 32);
            continue;
        }
        nf_xxh3_stream *s = nf_xxh3_stream_new();
        if (!s) {
            free(buf);
            return nf_wr_nomem(err);
        }
        for (uint64_t pos = 0; pos < o->bytes;) {
            size_t n = o->bytes - pos < READBACK_CHUNK ? (size_t)(o->bytes - pos) : READBACK_CHUNK;
            size_t bad = 0;
            int e = nf_wr_route(w, o->offset + pos, buf, n, false, &bad);
            if (e) {
                nf_xxh3_stream_final(s, hex);
                free(buf);
                return nf_error_errno(err, e, "%s: object '%s': cannot read back %s for its checksum", MP(w->path),
                                      o->id, MP(w->files[bad].temp));
            }
            nf_xxh3_stream_update(s, buf, n);
            pos += n;
        }
        nf_xxh3_stream_final(s, hex);
        if (w->dig) {
            memcpy(w->dig[i].hex, hex, 33);
            w->dig[i].done = true;
        }
        if (image) memcpy(w->image.data + NF_HEADER_BYTES + w->sum_pos[i], hex, 32);
    }
    free(buf);
    if (!image) return NF_OK;
    nf_xxh3_128_hex(w->image.data, w->image.len, hex);
    memcpy(w->image.data + NF_HEADER_BYTES + w->dir_sum_pos, hex, 32);
    int fd = -1;
    int e = nf_wr_fd_acquire(w, 0, &fd);
    if (!e) {
        e = nf_io_pwrite_full(fd, w->image.data, w->image.len, 0);
        nf_wr_fd_release(w, 0);
    }
    if (e) return nf_error_errno(err, e, "%s: cannot write the checksums to %s", MP(w->path), MP(w->files[0].temp));
    return NF_OK;
}

/* Temp file i checked (its size) and synced, its descriptor closed for good (reopened from the
 * cache if it was closed: the data of a file is synced through any descriptor of it). */
nf_status nf_wr_sync_file(nf_writer *w, size_t i, nf_error *err)
{
    wfile *f = &w->files[i];
    int fd = -1;
    int e = nf_wr_fd_acquire(w, i, &fd);
    if (e) return nf_error_errno(err, e, "%s: cannot reopen %s", MP(f->dest), MP(f->temp));
    struct stat sb;
    nf_status st = NF_OK;
    if ((e = nf_io_fstat(fd, &sb)) != 0) st = nf_error_errno(err, e, "%s: cannot stat %s", MP(f->dest), MP(f->temp));
    else if ((uint64_t)sb.st_size != f->size)
        st = nf_error_set(err, NF_ERR_IO, "%s: temp file %s is %llu bytes, expected %llu", MP(f->dest), MP(f->temp),
                          (unsigned long long)sb.st_size, (unsigned long long)f->size);
    else if ((!w->selected || w->selected[i]) && (e = nf_io_fdatasync(fd)) != 0)
        st = nf_error_errno(err, e, "%s: cannot sync %s", MP(f->dest), MP(f->temp));
    nf_wr_fd_release(w, i);
    e = nf_wr_fd_close(w, i);
    if (st == NF_OK && e) st = nf_error_errno(err, e, "%s: cannot close %s", MP(f->dest), MP(f->temp));
    return st;
}

nf_status nf_wr_sync_directory(nf_writer *w, nf_error *err)
{
    const char *dir = *w->prefix ? w->prefix : ".";
    int fd = nf_io_open(dir, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0) return nf_error_errno(err, errno, "%s: cannot open the directory to sync it", MP(dir));
    int e = nf_io_fdatasync(fd);
    nf_io_close(fd);
    /* Some file systems cannot sync a directory; the files themselves are synced. */
    if (e && e != EINVAL && e != ENOTSUP) return nf_error_errno(err, e, "%s: cannot sync the directory", MP(dir));
    return NF_OK;
}

/* Overwrite: keep an existing destination as a second hard link ".<name>.<pid>@<host>.XXXXXX.old"
 * (such a name only ever exists with the complete old file behind it); unless keep, then remove
 * the destination name (for the entry of a split artifact, before any part is replaced).  keep:
 * the rename of the new file over the destination stays one atomic step. */
static nf_status set_aside(wfile *f, bool keep, nf_error *err)
{
    struct stat sb;
    int e = nf_io_lstat(f->dest, &sb);
    /* nothing to keep (a directory: the rename of the new file fails) */
    if (e == ENOENT || (e == 0 && S_ISDIR(sb.st_mode))) return NF_OK;
    if (e) return nf_error_errno(err, e, "%s", MP(f->dest));
    e = nf_outputs_link_aside(f->dest, ".old", &f->backup);
    if (e) return nf_error_errno(err, e, "%s: cannot set the old file aside", MP(f->dest));
    f->backed_up = true;
    if (!keep && (e = nf_io_unlink(f->dest)) != 0)
        return nf_error_errno(err, e, "%s: cannot set the old file aside (kept as %s)", MP(f->dest), MP(f->backup));
    return NF_OK;
}

/* Overwrite: the parts of the artifact being replaced beyond the new one's last part.  Read from
 * the old entry's file table; only names of this entry's part pattern count (a part the old
 * entry names otherwise is not ours to remove).  No entry, or one that is no valid artifact:
 * nothing to remove (an unreadable one is an error: its parts cannot be told). */
static nf_status find_surplus(nf_writer *w, nf_error *err)
{
    struct stat sb;
    int e = nf_io_lstat(w->path, &sb);
    if (e == ENOENT || (e == 0 && !S_ISREG(sb.st_mode))) return NF_OK;
    if (e) return nf_error_errno(err, e, "%s", MP(w->path));
    nf_artifact *a = NULL;
    nf_error local;
    nf_status st = nf_artifact_open(w->path, NF_READ_PREAD, &a, &local);
    if (st == NF_ERR_IO || st == NF_ERR_NOMEM) {
        if (err) *err = local;
        return nf_error_forward(err, st, "%s: cannot read the artifact being replaced", MP(w->path));
    }
    if (st != NF_OK) return NF_OK;
    size_t n = nf_artifact_file_count(a);
    if (n > w->nfiles) {
        w->surplus = calloc(n - w->nfiles, sizeof *w->surplus);
        if (!w->surplus) st = nf_wr_nomem(err);
    }
    for (size_t i = w->nfiles; st == NF_OK && i < n; i++) {
        const char *path = nf_artifact_file(a, i)->path;
        char *name = nf_outputs_part_name(w->entry_name, i);
        if (!name) {
            st = nf_wr_nomem(err);
            break;
        }
        bool ours = path && strcmp(path, name) == 0;
        free(name);
        if (!ours) continue;
        size_t need = strlen(w->prefix) + strlen(path) + 1;
        char *dest = malloc(need);
        if (!dest) {
            st = nf_wr_nomem(err);
            break;
        }
        snprintf(dest, need, "%s%s", w->prefix, path);
        w->surplus[w->nsurplus++].dest = dest;
    }
    nf_artifact_close(a);
    return st;
}

static nf_status publish_files(nf_writer *w, nf_error *err)
{
    NF_TRY(nf_wr_check_coverage(w, err));
    if (w->opt.checksums) NF_TRY(nf_wr_fill_checksums(w, true, err));
    for (size_t i = 0; i < w->nfiles; i++) NF_TRY(nf_wr_sync_file(w, i, err));
    if (w->opt.overwrite) NF_TRY(find_surplus(w, err));
    /* Overwriting a split artifact: the old entry goes out of the way before any part is
     * replaced (see the top of this file). */
    if (w->opt.overwrite && w->nfiles > 1) NF_TRY(set_aside(&w->files[0], false, err));
    /* Parts first, then the entry: a reader that finds the entry finds every part. */
    for (size_t k = 1; k <= w->nfiles; k++) {
        wfile *f = &w->files[k % w->nfiles];
        if (w->opt.overwrite) {
            if (!f->backed_up) NF_TRY(set_aside(f, w->nfiles == 1, err));
            int e = nf_io_rename(f->temp, f->dest);
            if (e) return nf_error_errno(err, e, "%s: cannot publish %s", MP(f->dest), MP(f->temp));
            f->temp_exists = false;
            f->published = true;
        } else {
            int e = nf_io_link(f->temp, f->dest);
            if (e) return nf_error_errno(err, e, "%s: cannot publish %s", MP(f->dest), MP(f->temp));
            f->published = true;
        }
    }
    /* The old artifact's surplus parts: set aside once no entry refers to them (the new entry
     * is in place), put back by a rollback, removed by the commit. */
    for (size_t i = 0; i < w->nsurplus; i++) {
        wsurplus *s = &w->surplus[i];
        struct stat sb;
        int e = nf_io_lstat(s->dest, &sb);
        if (e == ENOENT || (e == 0 && !S_ISREG(sb.st_mode))) continue;
        if (e) return nf_error_errno(err, e, "%s", MP(s->dest));
        if ((e = nf_outputs_link_aside(s->dest, ".old", &s->backup)) != 0)
            return nf_error_errno(err, e, "%s: cannot set the old part aside", MP(s->dest));
        s->backed_up = true;
        if ((e = nf_io_unlink(s->dest)) != 0)
            return nf_error_errno(err, e, "%s: cannot remove the old part (kept as %s)", MP(s->dest), MP(s->backup));
    }
    for (size_t i = 0; i < w->nfiles; i++) {
        wfile *f = &w->files[i];
        if (!f->temp_exists) continue;
        int e = nf_io_unlink(f->temp);
        if (e) return nf_error_errno(err, e, "%s: cannot remove the temp file %s", MP(f->dest), MP(f->temp));
        f->temp_exists = false;
    }
    return nf_wr_sync_directory(w, err);
}

nf_status nf_writer_publish(nf_writer *w, nf_error *err)
{
    if (w->state != W_BEGUN)
        return nf_error_set(err, NF_ERR_USAGE, "%s: nf_writer_publish %s", MP(w->path),
                            w->state == W_PLANNING ? "before nf_writer_begin" : "after the writer published or failed");
    nf_status st = publish_files(w, err);
    if (st != NF_OK) return nf_wr_fail_and_abort(w, st);
    w->state = W_PUBLISHED;
    return NF_OK;
}

/* Drop what the new set replaced.  The old entry's set-aside link goes first: that removal is
 * the commit point (before it, renaming every ".old" file of this process back restores the
 * old set; after it, the other ".old" files of this process belong to no artifact), then the
 * old parts, then the old surplus parts.  Failing to remove one is no error (the new artifact
 * is complete): the file stays, discoverable by its name. */
nf_status nf_writer_commit(nf_writer *w, nf_error *err)
{
    if (w->state != W_PUBLISHED)
        return nf_error_set(err, NF_ERR_USAGE, "%s: nf_writer_commit %s", MP(w->path),
                            w->state == W_FINISHED ? "twice" : "before a successful nf_writer_publish");
    for (size_t i = 0; i < w->nfiles; i++) {
        wfile *f = &w->files[i];
        if (f->backed_up && nf_io_unlink(f->backup) == 0) f->backed_up = false;
    }
    for (size_t i = 0; i < w->nsurplus; i++) {
        wsurplus *s = &w->surplus[i];
        if (s->backed_up && nf_io_unlink(s->backup) == 0) s->backed_up = false;
    }
    nf_wr_release_lock(w);
    w->state = W_FINISHED;
    return NF_OK;
}

void nf_writer_abort(nf_writer *w)
{
    if (!w || w->state == W_FINISHED) return;
    abort_files(w);
    w->state = W_FAILED;
}

nf_status nf_writer_finish(nf_writer *w, nf_error *err)
{
    if (w->state != W_BEGUN)
        return nf_error_set(err, NF_ERR_USAGE, "%s: nf_writer_finish %s", MP(w->path),
                            w->state == W_PLANNING ? "before nf_writer_begin" : "after the writer finished or failed");
    NF_TRY(nf_writer_publish(w, err));
    return nf_writer_commit(w, err);
}

void nf_writer_free(nf_writer *w)
{
    if (!w) return;
    if (w->state != W_FINISHED) abort_files(w);
    w->lock_kept = false;
    nf_wr_release_lock(w);
    for (size_t i = 0; i < w->nfiles; i++) {
        free(w->files[i].dest);
        free(w->files[i].temp);
        free(w->files[i].backup);
    }
    free(w->files);
    for (size_t i = 0; i < w->nsurplus; i++) {
        free(w->surplus[i].dest);
        free(w->surplus[i].backup);
    }
    free(w->surplus);
    for (size_t i = 0; i < w->nobjs; i++) {
        free(w->objs[i].id);
        free(w->objs[i].shape);
        free(w->objs[i].cov);
    }
    free(w->objs);
    nf_strset_free(&w->ids);
    for (int m = 0; m < M_COUNT; m++) {
        json_decref(w->members[m]);
        free(w->records[m].key);
    }
    free(w->sum_pos);
    free(w->selected);
    free(w->touched);
    free(w->objsel);
    nf_wr_digest_free(w);
    nf_buf_free(&w->image);
    nf_common_fd_cache_free(w->fds);
    pthread_mutex_destroy(&w->lock);
    for (unsigned i = 0; i < DIGEST_LOCKS; i++) pthread_mutex_destroy(&w->dig_lock[i]);
    free(w->prefix);
    free(w->path);
    free(w);
}
