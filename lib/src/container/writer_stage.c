/* One artifact written as independent tasks (docs/scale-out.md), the writer's part: a task
 * writes the files selected for it (nf_writer_select_files) and stages them under their final
 * names -- the entry, whose directory still lacks the checksums, under a staging name -- and an
 * assembler, with the same plan laid out and every object's checksum, completes the staged
 * entry's directory and publishes it.  The bytes are those nf_writer_finish would write: the
 * same layout, the same image, the checksums of the same bytes.
 *
 * Below writer.c (which lays out and selects) and beside writer_publish.c (whose coverage,
 * checksum, lock and directory-sync steps it reuses). */
#include "container/writer_io.h"
#include "container/writer_publish.h"
#include "container/writer_state.h"

/* ---------------------------------------------------------------- the plan's identity */
void nf_writer_layout_digest(const nf_writer *w, char out[33])
{
    /* the entry's header and directory with the checksum digits zero: the artifact id, every
     * object's record and place, the file table, the members -- everything but the payload */
    if (!w->laid_out) {
        out[0] = '\0';
        return;
    }
    nf_xxh3_128_hex(w->image.data, w->image.len, out);
}

/* ---------------------------------------------------------------- a task */
nf_status nf_writer_stage(nf_writer *w, const char *entry_staged, nf_error *err)
{
    if (w->state != W_BEGUN || !w->selected)
        return nf_error_set(err, NF_ERR_USAGE, "%s: nf_writer_stage belongs to a writer begun with a selection",
                            MP(w->path));
    if (w->selected[0] && !entry_staged)
        return nf_error_set(err, NF_ERR_USAGE, "%s: the entry is selected: give its staging name", MP(w->path));
    nf_status st = nf_wr_check_coverage(w, err);
    if (st == NF_OK && w->opt.checksums) st = nf_wr_fill_checksums(w, false, err);
    /* (a touched file outside the selection is checked, not synced: it is removed below) */
    for (size_t i = 0; st == NF_OK && i < w->nfiles; i++)
        if (w->files[i].temp_exists) st = nf_wr_sync_file(w, i, err);
    /* each selected file renamed into place at once (a rerun's or a duplicate's rename replaces
     * the same bytes); the bytes of a touched file outside the selection were only there for
     * the checksums */
    for (size_t i = 0; st == NF_OK && i < w->nfiles; i++) {
        wfile *f = &w->files[i];
        if (!f->temp_exists) continue;
        int e = w->selected[i] ? nf_io_rename(f->temp, i == 0 ? entry_staged : f->dest) : nf_io_unlink(f->temp);
        if (e) {
            st = nf_error_errno(err, e, "%s: cannot %s %s", MP(i == 0 && w->selected[i] ? entry_staged : f->dest),
                                w->selected[i] ? "put in place" : "remove", MP(f->temp));
            break;
        }
        f->temp_exists = false;
    }
    if (st == NF_OK) st = nf_wr_sync_directory(w, err);
    if (st != NF_OK) return nf_wr_fail_and_abort(w, st);
    w->state = W_FINISHED;
    return NF_OK;
}

bool nf_writer_object_checksum(const nf_writer *w, size_t index, char out[33])
{
    if (!w->dig || index >= w->nobjs || !w->dig[index].done) return false;
    memcpy(out, w->dig[index].hex, 33);
    return true;
}

/* ---------------------------------------------------------------- the assembler */
/* Part i as a task left it: a regular file of its size whose header is this artifact's part i. */
static nf_status check_part(const nf_writer *w, size_t i, nf_error *err)
{
    const wfile *f = &w->files[i];
    struct stat sb;
    int e = nf_io_lstat(f->dest, &sb);
    if (e == ENOENT) return nf_error_set(err, NF_ERR_INVALID, "%s: missing (part %zu)", MP(f->dest), i);
    if (e) return nf_error_errno(err, e, "%s", MP(f->dest));
    if (!S_ISREG(sb.st_mode))
        return nf_error_set(err, NF_ERR_INVALID, "%s is %s, not a regular file", MP(f->dest),
                            nf_io_kind_name(sb.st_mode));
    if ((uint64_t)sb.st_size != f->size)
        return nf_error_set(err, NF_ERR_INVALID, "%s: %llu bytes, the plan says %llu", MP(f->dest),
                            (unsigned long long)sb.st_size, (unsigned long long)f->size);
    uint8_t want[NF_HEADER_BYTES], got[NF_HEADER_BYTES];
    nf_wr_part_header(w, i, want);
    int fd = nf_io_open(f->dest, O_RDONLY | O_NOFOLLOW, 0);
    if (fd < 0) return nf_error_errno(err, errno, "%s: cannot open", MP(f->dest));
    e = nf_io_pread_full(fd, got, sizeof got, 0);
    nf_io_close(fd);
    if (e) return nf_error_errno(err, e, "%s: cannot read its header", MP(f->dest));
    if (memcmp(got, want, sizeof want) != 0)
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: its header is not part %zu of this artifact (another plan's, "
                            "or another artifact id)",
                            MP(f->dest), i);
    return NF_OK;
}

/* Whether the file's first image.len bytes are the image's, read ASSEMBLE_CHUNK bytes at a time
 * into chunk (a directory of 10^5 objects is tens of MB: no second copy of it); *e: a read error. */
#define ASSEMBLE_CHUNK ((size_t)1 << 20)

static bool head_is_image(int fd, const nf_buf *image, uint8_t *chunk, int *e)
{
    *e = 0;
    for (size_t at = 0; at < image->len; at += ASSEMBLE_CHUNK) {
        size_t n = image->len - at < ASSEMBLE_CHUNK ? image->len - at : ASSEMBLE_CHUNK;
        if ((*e = nf_io_pread_full(fd, chunk, n, at)) != 0) return false;
        if (memcmp(chunk, image->data + at, n) != 0) return false;
    }
    return true;
}

/* The staged entry's head checked against the image (this plan's, its checksum digits zero as
 * a task left them, or already these checksums, as an assembly that failed after writing them
 * left them: a retry resumes it) and completed with the checksums; fd is open on it.  Compared
 * with the image as laid out, then with the checksums filled in when that differs: the image is
 * held once. */
static nf_status complete_staged(nf_writer *w, int fd, const char *name, const char *const *checksums, nf_error *err)
{
    const wfile *entry = &w->files[0];
    uint8_t *chunk = malloc(ASSEMBLE_CHUNK);
    if (!chunk) return nf_wr_nomem(err);
    nf_status st = NF_OK;
    struct stat fsb;
    int e = nf_io_fstat(fd, &fsb);
    if (e) st = nf_error_errno(err, e, "%s: cannot stat", MP(name));
    if (st == NF_OK && (!S_ISREG(fsb.st_mode) || (uint64_t)fsb.st_size != entry->size))
        st = nf_error_set(err, NF_ERR_INVALID, "%s: %llu bytes, the plan says %llu", MP(name),
                          (unsigned long long)fsb.st_size, (unsigned long long)entry->size);
    bool as_laid_out = st == NF_OK && head_is_image(fd, &w->image, chunk, &e);
    if (st == NF_OK && e) st = nf_error_errno(err, e, "%s: cannot read its directory", MP(name));
    if (st == NF_OK && w->opt.checksums) {
        for (size_t i = 0; i < w->nobjs; i++) memcpy(w->image.data + NF_HEADER_BYTES + w->sum_pos[i], checksums[i], 32);
        char hex[33];
        nf_xxh3_128_hex(w->image.data, w->image.len, hex);
        memcpy(w->image.data + NF_HEADER_BYTES + w->dir_sum_pos, hex, 32);
    }
    bool filled = st == NF_OK && !as_laid_out && w->opt.checksums && head_is_image(fd, &w->image, chunk, &e);
    if (st == NF_OK && e) st = nf_error_errno(err, e, "%s: cannot read its directory", MP(name));
    if (st == NF_OK && !as_laid_out && !filled)
        st = nf_error_set(err, NF_ERR_INVALID, "%s: its header and directory are not this plan's", MP(name));
    free(chunk);
    if (st == NF_OK && w->opt.checksums && (e = nf_io_pwrite_full(fd, w->image.data, w->image.len, 0)) != 0)
        st = nf_error_errno(err, e, "%s: cannot write the checksums", MP(name));
    if (st == NF_OK && (e = nf_io_fdatasync(fd)) != 0) st = nf_error_errno(err, e, "%s: cannot sync", MP(name));
    return st;
}

static nf_status assemble(nf_writer *w, const char *const *checksums, const char *entry_staged, nf_error *err)
{
    for (size_t i = 1; i < w->nfiles; i++) NF_TRY(check_part(w, i, err));
    const wfile *entry = &w->files[0];
    struct stat sb;
    int e = nf_io_lstat(entry->dest, &sb);
    if (e == 0 && !S_ISREG(sb.st_mode))
        return nf_error_set(err, NF_ERR_USAGE, "%s is %s, not a regular file: give another output name",
                            MP(entry->dest), nf_io_kind_name(sb.st_mode));
    if (e == 0 && !w->opt.overwrite) return nf_error_errno(err, EEXIST, "%s: refusing to overwrite", MP(entry->dest));
    if (e != 0 && e != ENOENT) return nf_error_errno(err, e, "%s", MP(entry->dest));
    /* The staged entry under a name of this process's own, a second link of it
     * (".<staged name>.<pid>@<host>.XXXXXX.tmp"): the file checked, completed and published is
     * that one, whatever a duplicate task renames over the staged name meanwhile -- never a
     * fresh staged entry without checksums (docs/scale-out.md, "What assemble does"). */
    char *mine = NULL;
    e = nf_outputs_link_aside(entry_staged, ".tmp", &mine);
    if (e == ENOENT) return nf_error_set(err, NF_ERR_INVALID, "%s: missing (the entry's payload)", MP(entry_staged));
    if (e) return nf_error_errno(err, e, "%s: cannot link it to a name of this process", MP(entry_staged));
    nf_status st = NF_OK;
    int fd = nf_io_open(mine, O_RDWR | O_NOFOLLOW, 0);
    if (fd < 0) st = nf_error_errno(err, errno, "%s: cannot open", MP(mine));
    if (st == NF_OK) st = complete_staged(w, fd, entry_staged, checksums, err);
    struct stat done;
    if (st == NF_OK && (e = nf_io_fstat(fd, &done)) != 0) st = nf_error_errno(err, e, "%s: cannot stat", MP(mine));
    if (fd >= 0 && nf_io_close(fd) != 0 && st == NF_OK) st = nf_error_errno(err, errno, "%s: cannot close", MP(mine));
    /* the commit point: the entry appears complete, every part already in place */
    if (st == NF_OK && (e = w->opt.overwrite ? nf_io_rename(mine, entry->dest) : nf_io_link(mine, entry->dest)) != 0)
        st = nf_error_errno(err, e, "%s: cannot publish %s", MP(entry->dest), MP(mine));
    /* this process's name goes (renamed, or a second link; a failure leaves the staged name) and
     * so does the staged name when it is still the published file (a duplicate task's fresh one
     * stays: the published state's run removes it) */
    if (st != NF_OK || !w->opt.overwrite) (void)nf_io_unlink(mine);
    free(mine);
    if (st != NF_OK) return st;
    if (nf_io_lstat(entry_staged, &sb) == 0 && sb.st_dev == done.st_dev && sb.st_ino == done.st_ino)
        (void)nf_io_unlink(entry_staged);
    return nf_wr_sync_directory(w, err);
}

/* Whether bytes [at, at + n) of a head (in chunk) hold a checksum field [pos, pos + 32) in hex
 * digits; those bytes copied to keep (if not NULL, at their place in the field) and replaced by
 * with's (the whole head's). */
static bool take_field(uint8_t *chunk, uint64_t at, size_t n, uint64_t pos, const char *with, char *keep)
{
    uint64_t a = pos > at ? pos : at, b = pos + 32 < at + n ? pos + 32 : at + n;
    bool hex = true;
    for (uint64_t k = a; k < b; k++) {
        uint8_t c = chunk[k - at];
        hex = hex && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
        if (keep) keep[k - pos] = (char)c;
        chunk[k - at] = (uint8_t)with[k];
    }
    return hex;
}

/* Whether fd's head is the image but for the checksum digits (hex digits there), with a
 * directory checksum of its own: read ASSEMBLE_CHUNK bytes at a time (the directory's checksum
 * over the head with the objects' checksums as the file has them and its own digits zero,
 * docs/artifact.md 8). */
static bool head_is_completed_image(const nf_writer *w, int fd, uint8_t *chunk, int *e)
{
    *e = 0;
    nf_xxh3_stream *x = nf_xxh3_stream_new();
    if (!x) {
        *e = ENOMEM;
        return false;
    }
    char dir_sum[33] = {0}, hex[33];
    bool same = true;
    const nf_buf *image = &w->image;
    for (size_t at = 0; same && at < image->len; at += ASSEMBLE_CHUNK) {
        size_t n = image->len - at < ASSEMBLE_CHUNK ? image->len - at : ASSEMBLE_CHUNK;
        if ((*e = nf_io_pread_full(fd, chunk, n, at)) != 0) break;
        /* the directory's own digits first (zero for its checksum), then the objects' (zero to
         * compare with the image); the fields that start or end in this chunk */
        uint64_t d = NF_HEADER_BYTES + w->dir_sum_pos;
        if (d < at + n && d + 32 > at) same = take_field(chunk, at, n, d, image->data, dir_sum);
        nf_xxh3_stream_update(x, chunk, n);
        for (size_t i = 0; same && i < w->nobjs; i++) {
            uint64_t p = NF_HEADER_BYTES + w->sum_pos[i];
            if (p < at + n && p + 32 > at) same = take_field(chunk, at, n, p, image->data, NULL);
        }
        same = same && memcmp(chunk, image->data + at, n) == 0;
    }
    nf_xxh3_stream_final(x, hex);
    return !*e && same && strcmp(dir_sum, hex) == 0;
}

nf_status nf_writer_entry_complete(const nf_writer *w, const char *path, bool *complete, nf_error *err)
{
    *complete = false;
    if (!w->laid_out || w->state != W_PLANNING)
        return nf_error_set(err, NF_ERR_USAGE,
                            "%s: nf_writer_entry_complete belongs to a laid-out writer before "
                            "assembly",
                            MP(w->path));
    int fd = nf_io_open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
    if (fd < 0)
        return errno == ENOENT || errno == ELOOP ? NF_OK : nf_error_errno(err, errno, "%s: cannot open", MP(path));
    struct stat sb;
    int e = nf_io_fstat(fd, &sb);
    nf_status st = e ? nf_error_errno(err, e, "%s: cannot stat", MP(path)) : NF_OK;
    bool fits = st == NF_OK && S_ISREG(sb.st_mode) && (uint64_t)sb.st_size == w->files[0].size;
    uint8_t *chunk = fits ? malloc(ASSEMBLE_CHUNK) : NULL;
    if (fits && !chunk) st = nf_wr_nomem(err);
    if (chunk) {
        /* without checksums the complete entry is the image itself */
        *complete = w->opt.checksums ? head_is_completed_image(w, fd, chunk, &e)
                                     : head_is_image(fd, &w->image, chunk, &e);
        if (e == ENOMEM) st = nf_wr_nomem(err);
        else if (e) st = nf_error_errno(err, e, "%s: cannot read its directory", MP(path));
    }
    free(chunk);
    nf_io_close(fd);
    return st;
}

nf_status nf_writer_assemble(nf_writer *w, const char *const *checksums, const char *entry_staged, nf_error *err)
{
    if (!w->laid_out || w->state != W_PLANNING || w->selected || !entry_staged)
        return nf_error_set(err, NF_ERR_USAGE,
                            "%s: nf_writer_assemble belongs to a writer laid out without a "
                            "selection, with the staged entry's name",
                            MP(w->path));
    for (size_t i = 0; w->opt.checksums && i < w->nobjs; i++)
        if (!checksums || !checksums[i] || strlen(checksums[i]) != 32 || strspn(checksums[i], "0123456789abcdef") != 32)
            return nf_error_set(err, NF_ERR_INVALID, "%s: object '%s': no checksum of 32 hex digits", MP(w->path),
                                w->objs[i].id);
    NF_TRY(nf_wr_take_lock(w, false, err));
    nf_status st = assemble(w, checksums, entry_staged, err);
    nf_wr_release_lock(w);
    w->state = st == NF_OK ? W_FINISHED : W_FAILED;
    return st;
}
