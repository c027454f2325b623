/* The artifact writer (docs/artifact.md 6, the upstream Python ArtifactWriter of P-5478).
 *
 * plan (add_*)  -> objects laid out in the given order, tensors 256-aligned, resources packed;
 * begin         -> directory JSON in upstream member order, compact, padded with spaces to the
 *                  reserve, file table per the split policy; destinations refused if they are
 *                  not regular files, or exist (unless overwriting); the output's lock taken
 *                  (".<name>.lock", held until the commit or the rollback: one writer per
 *                  output, docs/security.md 1.3); one temp file per destination in the destination
 *                  directory, truncated to its final size (gaps read as zero), headers and JSON
 *                  written;
 * write         -> positional writes routed across files; each object byte exactly once; with
 *                  checksums, each object's digest is streamed as its bytes arrive (pieces
 *                  that arrive ahead of the digest are copied aside within a bounded budget,
 *                  the rest read back once the object is complete, by the thread that
 *                  completes it);
 * publish       -> coverage complete, checksums patched in place, sizes checked, fdatasync,
 *                  publish parts then the entry (hard links, or renames when overwriting),
 *                  the old artifact's surplus parts set aside, temps unlinked, directory synced;
 *                  the replaced files are kept;
 * commit        -> the replaced files (and surplus parts) removed: the new set is final;
 * finish        -> publish + commit.
 * Any failure of begin or publish, and nf_writer_abort or nf_writer_free before a commit,
 * removes the temp files and everything published and puts every replaced file back: nothing
 * is left behind, and the old set is back byte for byte.  The caller can thus publish files of
 * its own beside the artifact (ninfer-convert: the conversion report) between publish and
 * commit, and undo the whole set if that fails.
 *
 * Overwriting (opt.overwrite) keeps the files it replaces until the new set is published and
 * the directory synced: each existing destination is first set aside as a second hard link
 * named like the temp files with suffix ".old" (".<name>.<pid>@<host>.XXXXXX.old"), so that a failure
 * puts the previous artifact back exactly as it was.  For a split artifact the old entry is set
 * aside first (its name removed before any part is replaced), so that at every instant the
 * entry path holds the complete old artifact, nothing, or the complete new one, never an entry
 * whose parts belong to another artifact; a single-file artifact is replaced by one atomic
 * rename.  Parts of the old artifact beyond the new one's last part are set aside the same way
 * once the new entry is in place.  The commit removes the set-aside files, the old entry's
 * first (the commit point); failing to remove one is no error of the conversion (the new
 * artifact is complete): the file stays, discoverable by its name (ninfer-convert reports it,
 * see docs/ninfer-convert.md). */
#include "common/hex.h"
#include "common/utf8.h"
#include "container/writer_directory.h"
#include "container/writer_io.h"
#include "container/writer_publish.h"
#include "container/writer_state.h"

static const char *const nf_wr_member_names[M_COUNT] = {"components", "bindings", "uses", "metadata", "provenance"};

/* ---------------------------------------------------------------- helpers */
static void put_u64le(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}


/* Permission bits for published files: mkstemp creates 0600, but an artifact is an ordinary
 * output file, so it gets 0666 minus the process umask.  The umask is read from /proc rather
 * than with umask(2), which would briefly change it for every thread of the process; it is read
 * once per process. */
static mode_t g_file_mode = 0644;
static pthread_once_t g_file_mode_once = PTHREAD_ONCE_INIT;

static void read_file_mode(void)
{
    /* Plain open/pread, not the I/O shim: this read of process metadata falls back to 0644 on
     * any failure, so it is no fault point of the artifact's write sequence (a fault injected
     * here could not fail the conversion, and the first conversion of a process would count
     * two more calls than the next). */
    int fd;
    do {
        fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) return;
    char buf[8192];
    size_t got = 0;
    while (got < sizeof buf - 1) {
        ssize_t n = pread(fd, buf + got, sizeof buf - 1 - got, (off_t)got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    const char *u = strstr(buf, "Umask:");
    if (u) g_file_mode = 0666 & ~((mode_t)strtoul(u + 6, NULL, 8) & 0777);
}

static mode_t default_file_mode(void)
{
    pthread_once(&g_file_mode_once, read_file_mode);
    return g_file_mode;
}

/* A fresh random UUIDv4 (Python uuid4().bytes): version nibble 4, variant bits 10. */
static nf_status random_id(uint8_t id[NF_ARTIFACT_ID_BYTES], nf_error *err)
{
    size_t got = 0;
    while (got < NF_ARTIFACT_ID_BYTES) {
        ssize_t n = getrandom(id + got, NF_ARTIFACT_ID_BYTES - got, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            break;
        }
        got += (size_t)n;
    }
    if (got < NF_ARTIFACT_ID_BYTES) {
        int fd = nf_io_open("/dev/urandom", O_RDONLY, 0);
        if (fd < 0) return nf_error_errno(err, errno, "cannot open /dev/urandom for a random artifact_id");
        int e = nf_io_pread_full(fd, id, NF_ARTIFACT_ID_BYTES, 0);
        nf_io_close(fd);
        if (e) return nf_error_errno(err, e, "cannot read /dev/urandom for a random artifact_id");
    }
    id[6] = (uint8_t)((id[6] & 0x0F) | 0x40);
    id[8] = (uint8_t)((id[8] & 0x3F) | 0x80);
    return NF_OK;
}

/* ---------------------------------------------------------------- create / plan */
nf_status nf_writer_create(const char *path, const nf_writer_options *opt, nf_writer **out, nf_error *err)
{
    if (!path || !out) return nf_error_set(err, NF_ERR_USAGE, "nf_writer_create: NULL argument");
    *out = NULL;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        return nf_error_set(err, NF_ERR_USAGE, "%s: the output path must name a file", path);
    nf_writer *w = calloc(1, sizeof *w);
    if (!w) return nf_wr_nomem(err);
    pthread_mutex_init(&w->lock, NULL);
    for (unsigned i = 0; i < DIGEST_LOCKS; i++) pthread_mutex_init(&w->dig_lock[i], NULL);
    w->state = W_PLANNING;
    w->lock_fd = -1;
    if (opt) w->opt = *opt;
    w->opt.artifact_id = NULL; /* copied below; the caller's buffer need not outlive create */
    w->path = strdup(path);
    size_t plen = (size_t)(base - path);
    w->prefix = malloc(plen + 1);
    if (!w->path || !w->prefix) {
        nf_writer_free(w);
        return nf_wr_nomem(err);
    }
    memcpy(w->prefix, path, plen);
    w->prefix[plen] = '\0';
    w->entry_name = w->path + plen;
    if (opt && opt->artifact_id) {
        memcpy(w->id, opt->artifact_id, NF_ARTIFACT_ID_BYTES);
    } else {
        nf_status st = random_id(w->id, err);
        if (st != NF_OK) {
            nf_writer_free(w);
            return st;
        }
    }
    w->file_mode = default_file_mode();
    *out = w;
    return NF_OK;
}

void nf_writer_id_hex(const nf_writer *w, char out[33]) { nf_hex_bytes(w->id, NF_ARTIFACT_ID_BYTES, out); }

uint64_t nf_writer_object_offset(const nf_writer *w, size_t index)
{
    return index < w->nobjs ? w->objs[index].offset : 0;
}

static nf_status check_planning(nf_writer *w, const char *what, nf_error *err)
{
    if (w->state != W_PLANNING || w->laid_out)
        return nf_error_set(err, NF_ERR_USAGE, "%s: %s after %s", MP(w->path), what,
                            w->laid_out && w->state == W_PLANNING ? "nf_writer_layout" : "nf_writer_begin");
    return NF_OK;
}

/* Common part of add_tensor/add_resource: ID rules, uniqueness, placement. */
static nf_status add_object(nf_writer *w, const char *id, bool tensor, uint64_t bytes, uint64_t align,
                            const nf_geometry *g, size_t *index, nf_error *err)
{
    NF_TRY(check_planning(w, "adding an object", err));
    if (!id || !*id)
        return nf_error_set(err, NF_ERR_INVALID, "%s: an object id must be a non-empty string", MP(w->path));
    size_t bad;
    if (!nf_utf8_valid((const uint8_t *)id, strlen(id), &bad))
        return nf_error_set(err, NF_ERR_INVALID, "%s: object id is not valid UTF-8 (byte %zu)", MP(w->path), bad);
    if (bytes == 0) return nf_error_set(err, NF_ERR_INVALID, "%s: object '%s' has no bytes", MP(w->path), id);
    if (nf_strset_find(&w->ids, id, NULL, NULL))
        return nf_error_set(err, NF_ERR_INVALID, "%s: duplicate object id '%s'", MP(w->path), id);
    uint64_t offset, end;
    if (!nf_align_up_u64(w->payload_end, align, &offset) || !nf_add_u64(offset, bytes, &end) || end > JSON_INT_MAX)
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: object '%s' (%llu bytes) does not fit: the payload would exceed "
                            "2^63-1 bytes",
                            MP(w->path), id, (unsigned long long)bytes);
    if (w->nobjs == w->capobjs) {
        size_t cap = w->capobjs ? w->capobjs * 2 : 16;
        wobj *objs = realloc(w->objs, cap * sizeof *objs);
        if (!objs) return nf_wr_nomem(err);
        w->objs = objs;
        w->capobjs = cap;
    }
    wobj *o = &w->objs[w->nobjs];
    memset(o, 0, sizeof *o);
    o->id = strdup(id);
    if (g && g->rank) o->shape = malloc(g->rank * sizeof *o->shape);
    if (!o->id || (g && g->rank && !o->shape) || nf_strset_insert(&w->ids, o->id, NULL, w->nobjs, NULL) < 0) {
        free(o->id);
        free(o->shape);
        return nf_wr_nomem(err);
    }
    o->tensor = tensor;
    if (g) {
        o->rank = g->rank;
        o->layout = g->layout;
        o->format = g->format;
        o->divisors = g->divisors;
        if (g->rank) memcpy(o->shape, g->shape, g->rank * sizeof *o->shape);
    }
    o->offset = offset;
    o->bytes = bytes;
    if (index) *index = w->nobjs;
    w->nobjs++;
    w->payload_end = end;
    return NF_OK;
}

nf_status nf_writer_add_tensor(nf_writer *w, const char *id, const nf_geometry *g, size_t *index, nf_error *err)
{
    if (!g || !g->layout || !g->format)
        return nf_error_set(err, NF_ERR_USAGE, "%s: object '%s': no geometry", MP(w->path), id ? id : "");
    if (g->layout->resource_encoding)
        return nf_error_set(err, NF_ERR_USAGE,
                            "%s: object '%s': %s is a resource encoding; use "
                            "nf_writer_add_resource",
                            MP(w->path), id ? id : "", g->layout->name);
    /* Recompute the geometry: the plan must hold what a reader will accept, whatever the
     * caller filled in by hand. */
    nf_geometry chk;
    nf_status st = nf_geometry_init(&chk, g->layout, g->format, g->rank, g->shape, g->divisors, err);
    if (st != NF_OK) return nf_error_forward(err, st, "%s: object '%s'", MP(w->path), id ? id : "");
    if (chk.bytes != g->bytes)
        return nf_error_set(err, NF_ERR_INVALID, "%s: object '%s': geometry says %llu bytes, encoded size is %llu",
                            MP(w->path), id ? id : "", (unsigned long long)g->bytes, (unsigned long long)chk.bytes);
    for (uint32_t k = 0; k < chk.rank; k++)
        if (chk.shape[k] > JSON_INT_MAX)
            return nf_error_set(err, NF_ERR_INVALID, "%s: object '%s': shape[%u] exceeds 2^63-1", MP(w->path), id, k);
    if (chk.divisors > JSON_INT_MAX)
        return nf_error_set(err, NF_ERR_INVALID, "%s: object '%s': divisors exceed 2^63-1", MP(w->path), id);
    uint64_t align = chk.layout->alignment ? chk.layout->alignment : NF_TENSOR_ALIGNMENT;
    return add_object(w, id, true, chk.bytes, align, &chk, index, err);
}

nf_status nf_writer_add_resource(nf_writer *w, const char *id, uint64_t bytes, size_t *index, nf_error *err)
{
    return add_object(w, id, false, bytes, 1, NULL, index, err);
}

/* The index of a settable member, or -1 (NF_ERR_USAGE in *st). */
static int member_index(nf_writer *w, const char *member, nf_status *st, nf_error *err)
{
    *st = check_planning(w, "setting a directory member", err);
    int m = -1;
    for (int i = 0; i < M_COUNT && *st == NF_OK; i++)
        if (member && strcmp(member, nf_wr_member_names[i]) == 0) m = i;
    if (*st == NF_OK && m < 0)
        *st = nf_error_set(err, NF_ERR_USAGE,
                           "%s: '%s' is not a settable directory member (components, bindings, "
                           "uses, metadata, provenance)",
                           MP(w->path), member ? member : "(null)");
    return *st == NF_OK ? m : -1;
}

static void clear_records(nf_writer *w, int m)
{
    free(w->records[m].key);
    w->records[m].key = NULL;
    w->records[m].next = NULL;
    w->records[m].ctx = NULL;
}

nf_status nf_writer_set_member(nf_writer *w, const char *member, struct json_t *value, nf_error *err)
{
    nf_status st;
    int m = member_index(w, member, &st, err);
    if (st == NF_OK && !value) st = nf_error_set(err, NF_ERR_USAGE, "%s: %s: no value", MP(w->path), member);
    if (st == NF_OK) {
        bool ok = m == M_USES ? json_is_array(value) : json_is_object(value);
        if (!ok)
            st = nf_error_set(err, NF_ERR_INVALID, "%s: %s must be an %s", MP(w->path), member,
                              m == M_USES ? "array" : "object");
    }
    if (st != NF_OK) {
        json_decref(value);
        return st;
    }
    json_decref(w->members[m]);
    w->members[m] = value;
    clear_records(w, m);
    return NF_OK;
}

nf_status nf_writer_set_member_records(nf_writer *w, const char *member, struct json_t *head, const char *records_key,
                                       nf_writer_records_fn next, void *ctx, nf_error *err)
{
    nf_status st;
    int m = member_index(w, member, &st, err);
    if (st == NF_OK && (m == M_USES || m == M_METADATA))
        st = nf_error_set(err, NF_ERR_USAGE,
                          "%s: %s cannot be set a record at a time (components, bindings, "
                          "provenance can)",
                          MP(w->path), member);
    if (st == NF_OK && !next) st = nf_error_set(err, NF_ERR_USAGE, "%s: %s: no records function", MP(w->path), member);
    if (st == NF_OK && !head && !(head = json_object())) st = nf_wr_nomem(err);
    if (st == NF_OK && !json_is_object(head))
        st = nf_error_set(err, NF_ERR_INVALID, "%s: %s must be an object", MP(w->path), member);
    if (st == NF_OK && records_key && json_object_get(head, records_key))
        st = nf_error_set(err, NF_ERR_USAGE, "%s: %s: the head has a member '%s' already", MP(w->path), member,
                          records_key);
    char *key = NULL;
    if (st == NF_OK && records_key && !(key = strdup(records_key))) st = nf_wr_nomem(err);
    if (st != NF_OK) {
        json_decref(head);
        return st;
    }
    json_decref(w->members[m]);
    w->members[m] = head;
    clear_records(w, m);
    w->records[m].next = next;
    w->records[m].ctx = ctx;
    w->records[m].key = key;
    return NF_OK;
}

/* ---------------------------------------------------------------- begin */
/* The file table: each file's destination, size and payload range (nothing is created). */
static nf_status plan_files(nf_writer *w, const uint64_t *segs, size_t n, nf_error *err)
{
    w->files = calloc(n, sizeof *w->files);
    if (!w->files) return nf_wr_nomem(err);
    w->nfiles = n;
    uint64_t start = 0;
    for (size_t i = 0; i < n; i++) {
        wfile *f = &w->files[i];
        f->payload_bytes = segs[i];
        f->logical_start = start;
        start += segs[i];
        uint64_t head = i ? NF_PAGE_BYTES : w->entry_payload_start;
        if (!nf_add_u64(head, segs[i], &f->size) || f->size > JSON_INT_MAX)
            return nf_error_set(err, NF_ERR_INVALID, "%s: file %zu would exceed 2^63-1 bytes", MP(w->path), i);
        if (i == 0) {
            f->dest = strdup(w->path);
        } else {
            char *name = nf_outputs_part_name(w->entry_name, i);
            size_t need = strlen(w->prefix) + (name ? strlen(name) : 0) + 1;
            f->dest = name ? malloc(need) : NULL;
            if (f->dest) snprintf(f->dest, need, "%s%s", w->prefix, name);
            free(name);
        }
        if (!f->dest) return nf_wr_nomem(err);
    }
    return nf_wr_fd_init(w, err);
}

static nf_status open_task_files(nf_writer *w, nf_error *err);
static nf_status create_temps(nf_writer *w, nf_error *err);

/* The destinations checked, the lock taken and the temp files created -- for a task
 * (w->selected), only those of the files it touches, with the output's lock shared (tasks of one
 * artifact run at once; each file has one writer per task, and duplicates of a task write the
 * same bytes: docs/scale-out.md). */
static nf_status open_files(nf_writer *w, nf_error *err)
{
    size_t n = w->nfiles;
    /* 2.7 step 5: refuse existing destinations before creating anything.  One that is not a
     * regular file is never replaced, overwrite or not (docs/security.md 1.3): publishing renames a file
     * over the name, which would replace a FIFO, a device node or a symbolic link (not write
     * into it or through it); an artifact cannot be streamed. */
    for (size_t i = 0; i < n; i++) {
        struct stat sb;
        int e = nf_io_lstat(w->files[i].dest, &sb);
        if (e == 0 && !S_ISREG(sb.st_mode))
            return nf_error_set(err, NF_ERR_USAGE,
                                "%s is %s, not a regular file: an artifact is published by "
                                "renaming its files into place, which would replace it; give another output name",
                                MP(w->files[i].dest), nf_io_kind_name(sb.st_mode));
        if (e != 0 && e != ENOENT) return nf_error_errno(err, e, "%s", MP(w->files[i].dest));
    }
    if (w->selected) return open_task_files(w, err);
    /* From here on another writer of this output is refused until this one commits or rolls
     * back, and what the destinations are cannot change under it through another writer. */
    NF_TRY(nf_wr_take_lock(w, false, err));
    for (size_t i = 0; i < n && !w->opt.overwrite; i++) {
        struct stat sb;
        int e = nf_io_lstat(w->files[i].dest, &sb);
        if (e == 0) return nf_error_errno(err, EEXIST, "%s: refusing to overwrite", MP(w->files[i].dest));
        if (e != ENOENT) return nf_error_errno(err, e, "%s", MP(w->files[i].dest));
    }
    return create_temps(w, err);
}

/* A task: its destinations may exist (a rerun replaces what it finds: docs/scale-out.md), the
 * entry's only as the artifact of another run, which a task never touches.  The output's lock
 * is held shared (with the plan's other tasks) from here until nf_writer_free: no run or
 * assembler publishes the entry while a task may still rename its parts (docs/scale-out.md,
 * "The output's lock"), so the look at the entry below holds until then. */
static nf_status open_task_files(nf_writer *w, nf_error *err)
{
    NF_TRY(nf_wr_take_lock(w, true, err));
    /* parts replaced under an existing entry would change that artifact */
    struct stat sb;
    if (nf_io_lstat(w->files[0].dest, &sb) == 0)
        return nf_error_errno(err, EEXIST,
                              "%s: the artifact exists; the tasks of a plan write an output that does "
                              "not exist yet (remove it first)",
                              MP(w->files[0].dest));
    return create_temps(w, err);
}

/* One temp file per destination (a task: per file it touches), sized, its header written, its
 * descriptor given to the cache (writer_io.c), which may close it until it is written. */
static nf_status create_temps(nf_writer *w, nf_error *err)
{
    for (size_t i = 0; i < w->nfiles; i++) {
        wfile *f = &w->files[i];
        if (w->touched && !w->touched[i]) continue;
        int fd = nf_outputs_temp(f->dest, &f->temp);
        if (fd < 0) return nf_error_errno(err, errno, "%s: cannot create a temp file", MP(f->dest));
        f->temp_exists = true;
        int e = nf_io_fchmod(fd, w->file_mode);
        if (!e) e = nf_io_allocate(fd, f->size);
        if (e) {
            nf_io_close(fd);
            return nf_error_errno(err, e, "%s: cannot size the temp file %s", MP(f->dest), MP(f->temp));
        }
        if (i == 0) {
            e = nf_io_pwrite_full(fd, w->image.data, w->image.len, 0);
        } else {
            uint8_t hdr[NF_HEADER_BYTES];
            nf_wr_part_header(w, i, hdr);
            e = nf_io_pwrite_full(fd, hdr, sizeof hdr, 0);
        }
        if (e) {
            nf_io_close(fd);
            return nf_error_errno(err, e, "%s: cannot write the header to %s", MP(f->dest), MP(f->temp));
        }
        if ((e = nf_wr_fd_adopt(w, i, fd)) != 0)
            return nf_error_errno(err, e, "%s: cannot stat the temp file %s", MP(f->dest), MP(f->temp));
    }
    return NF_OK;
}

/* Freeze the plan: the directory text (checked by our own reader, unless its image has the
 * digest `known`: one an earlier layout of the same plan checked), the entry image and the file
 * table.  Nothing is created. */
static nf_status lay_out(nf_writer *w, const char *known, nf_error *err)
{
    if (w->nobjs == 0) return nf_error_set(err, NF_ERR_INVALID, "%s: objects must not be empty", MP(w->path));
    if (w->opt.checksums) {
        w->sum_pos = calloc(w->nobjs, sizeof *w->sum_pos);
        w->dig = calloc(w->nobjs, sizeof *w->dig);
        if (!w->sum_pos || !w->dig) return nf_wr_nomem(err);
    }
    nf_buf text = {0};
    uint64_t *segs = NULL;
    size_t n = 0;
    nf_status st = nf_wr_layout_directory(w, &text, &segs, &n, err);
    /* the members are in the text now: their trees (10^5 provenance records) are not needed */
    for (int m = 0; m < M_COUNT; m++) {
        json_decref(w->members[m]);
        w->members[m] = NULL;
        clear_records(w, m);
    }
    size_t text_len = text.len;
    if (st == NF_OK) {
        /* The entry image: header, then the JSON padded with spaces to json_bytes (2.7 step 4),
         * made in the text's own buffer (one copy of a directory of 10^5 objects is tens of MB:
         * docs/scale-out.md, the coordinator's memory). */
        size_t pad = (size_t)w->json_bytes - text_len;
        bool ok = true;
        for (size_t i = 0; ok && i < NF_HEADER_BYTES + pad; i++) ok = nf_buf_putc(&text, ' ');
        if (ok) {
            memmove(text.data + NF_HEADER_BYTES, text.data, text_len);
            memset(text.data + NF_HEADER_BYTES + text_len, ' ', pad);
            memcpy(text.data, NF_MAGIC_ENTRY, NF_MAGIC_BYTES);
            put_u64le((uint8_t *)text.data + 8, w->json_bytes);
            memcpy(text.data + 16, w->id, NF_ARTIFACT_ID_BYTES);
            char *exact = realloc(text.data, text.len); /* (the growth's spare capacity back) */
            if (exact) {
                text.data = exact;
                text.cap = text.len;
            }
            nf_buf_free(&w->image);
            w->image = text;
            text = (nf_buf){0};
        } else {
            st = nf_wr_nomem(err);
        }
    }
    nf_buf_free(&text);
    const char *json_text = st == NF_OK ? w->image.data + NF_HEADER_BYTES : NULL;
    char digest[33] = "";
    if (st == NF_OK && known) nf_xxh3_128_hex(w->image.data, w->image.len, digest);
    if (st == NF_OK && !(known && strcmp(digest, known) == 0)) {
        /* Never write what our own reader would refuse (references, proposal, names, ...): its
         * verdict, a record at a time (a tree of the whole directory is 5x its text). */
        st = nf_dir_check((const uint8_t *)json_text, text_len, w->entry_name, 0, err);
        if (st != NF_OK) nf_error_prefix(err, "%s: the directory to write is invalid", MP(w->path));
    }
    if (st == NF_OK) st = plan_files(w, segs, n, err);
    free(segs);
    if (st == NF_OK) w->laid_out = true;
    return st;
}

nf_status nf_writer_layout(nf_writer *w, nf_error *err) { return nf_writer_layout_known(w, NULL, err); }

nf_status nf_writer_layout_known(nf_writer *w, const char *fingerprint, nf_error *err)
{
    NF_TRY(check_planning(w, "nf_writer_layout", err));
    nf_status st = lay_out(w, fingerprint, err);
    return st == NF_OK ? st : nf_wr_fail_and_abort(w, st);
}

nf_status nf_writer_begin(nf_writer *w, nf_error *err)
{
    if (!w->laid_out) {
        NF_TRY(check_planning(w, "nf_writer_begin", err));
        nf_status st = lay_out(w, NULL, err);
        if (st != NF_OK) return nf_wr_fail_and_abort(w, st);
    } else if (w->state != W_PLANNING) {
        return nf_error_set(err, NF_ERR_USAGE, "%s: nf_writer_begin twice", MP(w->path));
    }
    nf_status st = open_files(w, err);
    if (st != NF_OK) {
        /* A failed begin is final: whatever was created is removed and the writer is dead
         * (only nf_writer_free remains). */
        return nf_wr_fail_and_abort(w, st);
    }
    w->state = W_BEGUN;
    return NF_OK;
}

/* The placeholder is found, not remembered: the caller laid it out inside a member it built
 * (the provenance), whose text position only the emitter knows.  Exactly one occurrence, so a
 * recipe or a name that happens to hold it is refused, never patched. */
nf_status nf_writer_patch_text(nf_writer *w, const char *placeholder, const char *value, nf_error *err)
{
    size_t n = strlen(placeholder);
    if (w->state != W_BEGUN)
        return nf_error_set(err, NF_ERR_USAGE, "%s: nf_writer_patch_text belongs between begin and publish",
                            MP(w->path));
    if (n < 32 || strlen(value) != n || strpbrk(value, "\"\\"))
        return nf_error_set(err, NF_ERR_USAGE, "%s: a late text replaces a placeholder of its length (32 or more)",
                            MP(w->path));
    const char *text = w->image.data + NF_HEADER_BYTES, *end = w->image.data + w->image.len, *found = NULL;
    for (const char *at = text; (size_t)(end - at) >= n; at++) {
        at = memchr(at, placeholder[0], (size_t)(end - at) - n + 1);
        if (!at) break;
        if (memcmp(at, placeholder, n) != 0) continue;
        if (found) return nf_error_set(err, NF_ERR_USAGE, "%s: a placeholder occurs twice", MP(w->path));
        found = at;
    }
    if (!found) return nf_error_set(err, NF_ERR_USAGE, "%s: a placeholder is not in the directory", MP(w->path));
    size_t pos = (size_t)(found - w->image.data);
    memcpy(w->image.data + pos, value, n);
    /* the temp entry holds the laid-out image already; without checksums nothing rewrites it */
    int fd = -1;
    int e = nf_wr_fd_acquire(w, 0, &fd);
    if (!e) {
        e = nf_io_pwrite_full(fd, w->image.data + pos, n, pos);
        nf_wr_fd_release(w, 0);
    }
    if (e) return nf_error_errno(err, e, "%s: cannot write to %s", MP(w->path), MP(w->files[0].temp));
    return NF_OK;
}

size_t nf_writer_file_count(const nf_writer *w) { return w->laid_out ? w->nfiles : 0; }

void nf_writer_file_info(const nf_writer *w, size_t index, nf_writer_file *out)
{
    memset(out, 0, sizeof *out);
    if (!w->laid_out || index >= w->nfiles) return;
    const wfile *f = &w->files[index];
    out->path = f->dest;
    out->size = f->size;
    out->logical_start = f->logical_start;
    out->payload_bytes = f->payload_bytes;
}

uint64_t nf_writer_object_bytes(const nf_writer *w, size_t index)
{
    return index < w->nobjs ? w->objs[index].bytes : 0;
}

/* The first object whose bytes end after logical byte x: objects are laid out in order, each
 * after the one before, so their ends ascend. */
static size_t first_object_ending_after(const nf_writer *w, uint64_t x)
{
    size_t lo = 0, hi = w->nobjs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w->objs[mid].offset + w->objs[mid].bytes > x) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

/* The file holding logical byte x (x below the payload's end). */
static size_t file_holding(const nf_writer *w, uint64_t x)
{
    size_t lo = 0, hi = w->nfiles;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (w->files[mid].logical_start <= x) lo = mid;
        else hi = mid;
    }
    return lo;
}

void nf_writer_file_objects(const nf_writer *w, size_t index, size_t *first, size_t *end)
{
    *first = *end = 0;
    if (!w->laid_out || index >= w->nfiles) return;
    const wfile *f = &w->files[index];
    uint64_t fa = f->logical_start, fb = f->logical_start + f->payload_bytes;
    size_t k = first_object_ending_after(w, fa), e = k;
    while (e < w->nobjs && w->objs[e].offset < fb) e++;
    *first = k;
    *end = e;
}

nf_status nf_writer_select_files(nf_writer *w, const bool *files, nf_error *err)
{
    if (!w->laid_out || w->state != W_PLANNING || w->selected)
        return nf_error_set(err, NF_ERR_USAGE,
                            "%s: nf_writer_select_files belongs between nf_writer_layout and "
                            "nf_writer_begin, once",
                            MP(w->path));
    w->selected = calloc(w->nfiles, sizeof *w->selected);
    w->touched = calloc(w->nfiles, sizeof *w->touched);
    w->objsel = calloc(w->nobjs ? w->nobjs : 1, sizeof *w->objsel);
    if (!w->selected || !w->touched || !w->objsel) return nf_wr_nomem(err);
    memcpy(w->selected, files, w->nfiles * sizeof *files);
    /* a selected object is written whole (its checksum needs every byte): the files it spans
     * are touched, their temp files hold its bytes outside the selection until the stage */
    for (size_t f = 0; f < w->nfiles; f++) {
        if (!w->selected[f]) continue;
        w->touched[f] = true;
        size_t first, end;
        nf_writer_file_objects(w, f, &first, &end);
        for (size_t i = first; i < end; i++) {
            if (w->objsel[i]) continue;
            w->objsel[i] = true;
            const wobj *o = &w->objs[i];
            size_t last = file_holding(w, o->offset + o->bytes - 1);
            for (size_t g = file_holding(w, o->offset); g <= last; g++) w->touched[g] = true;
        }
    }
    return NF_OK;
}

bool nf_writer_object_selected(const nf_writer *w, size_t index)
{
    return index < w->nobjs && (!w->objsel || w->objsel[index]);
}

/* ---------------------------------------------------------------- write */
static nf_status write_failed(nf_writer *w, nf_status st, const nf_error *local, nf_error *err)
{
    pthread_mutex_lock(&w->lock);
    if (w->failure.status == NF_OK) w->failure = *local;
    w->state = W_FAILED;
    pthread_mutex_unlock(&w->lock);
    if (err) *err = *local;
    return st;
}

nf_status nf_writer_write(nf_writer *w, size_t index, uint64_t offset, const void *data, size_t len, nf_error *err)
{
    if (w->state == W_FAILED) {
        /* Another thread's write failed: every writer of this artifact sees that error, not a
         * usage error about a dead writer. */
        pthread_mutex_lock(&w->lock);
        nf_status st = w->failure.status;
        if (st != NF_OK && err) *err = w->failure;
        pthread_mutex_unlock(&w->lock);
        if (st != NF_OK) return st;
    }
    if (w->state != W_BEGUN)
        return nf_error_set(err, NF_ERR_USAGE, "%s: nf_writer_write %s", MP(w->path),
                            w->state == W_PLANNING ? "before nf_writer_begin" : "after the writer finished or failed");
    if (index >= w->nobjs) return nf_error_set(err, NF_ERR_USAGE, "%s: no object %zu", MP(w->path), index);
    if (w->objsel && !w->objsel[index])
        return nf_error_set(err, NF_ERR_USAGE, "%s: object %zu has no bytes in this task's files", MP(w->path), index);
    wobj *o = &w->objs[index];
    uint64_t end;
    if (!nf_add_u64(offset, (uint64_t)len, &end) || end > o->bytes)
        return nf_error_set(err, NF_ERR_INVALID, "%s: object '%s': write of %zu bytes at %llu beyond its %llu bytes",
                            MP(w->path), o->id, len, (unsigned long long)offset, (unsigned long long)o->bytes);
    if (len == 0) return NF_OK;
    pthread_mutex_lock(&w->lock);
    interval clash;
    int c = nf_wr_cover(o, offset, end, &clash);
    pthread_mutex_unlock(&w->lock);
    if (c < 0) return nf_wr_nomem(err);
    if (c > 0) {
        uint64_t lo = offset > clash.a ? offset : clash.a, hi = end < clash.b ? end : clash.b;
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: object '%s': bytes [%llu, %llu) written twice (duplicate output "
                            "coverage)",
                            MP(w->path), o->id, (unsigned long long)lo, (unsigned long long)hi);
    }
    size_t bad = 0;
    int e = nf_wr_route(w, o->offset + offset, (void *)(uintptr_t)data, len, true, &bad);
    nf_error local;
    if (e)
        return write_failed(w,
                            nf_error_errno(&local, e, "%s: object '%s': cannot write %zu bytes to %s", MP(w->path),
                                           o->id, len, MP(w->files[bad].temp)),
                            &local, err);
    if (w->dig) {
        nf_status st = nf_wr_digest_piece(w, index, offset, data, len, &local);
        if (st != NF_OK) return write_failed(w, st, &local, err);
    }
    return NF_OK;
}

nf_status nf_writer_sink_write(void *sink, uint64_t offset, const void *buf, size_t len, nf_error *err)
{
    nf_writer_sink *s = sink;
    return nf_writer_write(s->writer, s->index, offset, buf, len, err);
}
