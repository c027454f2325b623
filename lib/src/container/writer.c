/* The artifact writer (container.md 2.7, the upstream Python ArtifactWriter of P-5478).
 *
 * plan (add_*)  -> objects laid out in the given order, tensors 256-aligned, resources packed;
 * begin         -> directory JSON in upstream member order, compact, padded with spaces to the
 *                  reserve, file table per the split policy; destinations refused if they are
 *                  not regular files, or exist (unless overwriting); the output's lock taken
 *                  (".<name>.lock", held until the commit or the rollback: one writer per
 *                  output, design.md 7); one temp file per destination in the destination
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
 * named like the temp files with suffix ".old" (".<name>.<pid>.XXXXXX.old"), so that a failure
 * puts the previous artifact back exactly as it was.  For a split artifact the old entry is set
 * aside first (its name removed before any part is replaced), so that at every instant the
 * entry path holds the complete old artifact, nothing, or the complete new one, never an entry
 * whose parts belong to another artifact; a single-file artifact is replaced by one atomic
 * rename.  Parts of the old artifact beyond the new one's last part are set aside the same way
 * once the new entry is in place.  The commit removes the set-aside files, the old entry's
 * first (the commit point); failing to remove one is no error of the conversion (the new
 * artifact is complete): the file stays, discoverable by its name (ninfer-convert reports it,
 * see docs/ninfer-convert.md). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ninfer/container.h>

#include "common/checked.h"
#include "common/io.h"
#include "container/container_internal.h"

#define JSON_INT_MAX ((uint64_t)INT64_MAX) /* jansson integers are signed 64-bit */
#define READBACK_CHUNK ((size_t)1 << 20)
/* Copies of pieces written ahead of their object's digest, for the whole writer: beyond this,
 * pieces are read back from the temp files when their object is complete. */
#define PARK_BUDGET ((uint64_t)8 << 20)
#define DIGEST_LOCKS 64u
#define CHECKSUM_ZEROS "00000000000000000000000000000000"
/* A path as messages show it (common/io.h, nf_io_msg_path): a long one is shortened in the
 * middle, so the message keeps its reason (finding M8).  The buffer is a compound literal: it
 * lives until the end of the enclosing block, past the nf_error_* call it is an argument of. */
#define MP(path) nf_io_msg_path((path), (char[NF_IO_MSG_PATH + 1]){0})

typedef struct interval {
    uint64_t a, b;
} interval;

/* One planned object: what its directory record needs (not its whole nf_geometry: a writer of
 * hundreds of thousands of objects keeps this per object), and which of its bytes are written. */
typedef struct wobj {
    char *id;
    bool tensor;
    bool complete;   /* every byte written (cov freed) */
    uint32_t rank;
    const nf_layout *layout;
    const nf_format *format;
    uint64_t *shape; /* rank entries (NULL for rank 0) */
    uint64_t divisors;
    uint64_t offset, bytes;
    interval *cov; /* sorted, disjoint, non-adjacent intervals written so far */
    size_t ncov, capcov;
} wobj;

typedef struct wfile {
    char *dest;
    char *temp;
    int fd;
    bool temp_exists;
    bool published;
    char *backup;     /* overwrite: where the replaced destination was set aside */
    bool backed_up;
    uint64_t payload_bytes, logical_start, size;
} wfile;

/* Overwrite: a part of the replaced artifact beyond the new one's last part (the old artifact
 * had more parts).  Set aside like a replaced file once the new entry is published; removed on
 * commit, put back on rollback. */
typedef struct wsurplus {
    char *dest;
    char *backup;
    bool backed_up;
} wsurplus;

/* A copy of a piece written beyond its object's digest so far. */
typedef struct parked {
    struct parked *next;
    uint64_t offset;
    size_t len;
    uint8_t data[];
} parked;

/* The streaming digest of one object (checksums on): bytes [0, hashed) are in s. */
typedef struct wdigest {
    nf_xxh3_stream *s;  /* created by the first piece at the digest's position */
    uint64_t hashed;
    uint64_t written;   /* bytes written; the write that completes the object finishes it */
    parked *park;       /* sorted by offset */
    bool done;          /* hex holds the digest */
    bool failed;        /* no stream (out of memory): fill_checksums reads the object back */
    char hex[33];
} wdigest;

/* PUBLISHED: the new set is in place and synced, the replaced files are still kept (".old"):
 * nf_writer_commit drops them, nf_writer_abort/nf_writer_free put them back. */
enum { W_PLANNING, W_BEGUN, W_PUBLISHED, W_FINISHED, W_FAILED };

enum { M_COMPONENTS, M_BINDINGS, M_USES, M_METADATA, M_PROVENANCE, M_COUNT };
static const char *const MEMBER_NAMES[M_COUNT] = {"components", "bindings", "uses", "metadata", "provenance"};

struct nf_writer {
    char *path;
    char *prefix; /* directory of path including '/', or "" */
    const char *entry_name;
    nf_writer_options opt;
    uint8_t id[NF_ARTIFACT_ID_BYTES];
    mode_t file_mode;
    wobj *objs;
    size_t nobjs, capobjs;
    nf_strset ids;
    uint64_t payload_end;
    json_t *members[M_COUNT];
    _Atomic int state;
    nf_error failure; /* the first write error, returned again to every later write (under lock) */
    wfile *files;
    size_t nfiles;
    wsurplus *surplus;
    size_t nsurplus;
    uint64_t json_bytes;
    uint64_t entry_payload_start;
    nf_buf image; /* header + padded JSON: the entry's first 32 + json_bytes bytes */
    /* where the checksum placeholders (32 zeros) of each object and of the directory are in
     * the JSON text */
    size_t *sum_pos;
    size_t dir_sum_pos;
    /* the output's lock (common/io.h, nf_io_lock_beside): held from before the first temp file
     * until the commit or the rollback, so that two writers of one output never publish a
     * mixed set (design.md 7) */
    int lock_fd;
    char *lock_path;
    pthread_mutex_t lock; /* coverage bookkeeping: writes may come from several threads */
    wdigest *dig;         /* checksums: one per object (from begin) */
    pthread_mutex_t dig_lock[DIGEST_LOCKS]; /* object i's digest under dig_lock[i % DIGEST_LOCKS] */
    _Atomic uint64_t parked_bytes;
};

/* ---------------------------------------------------------------- helpers */
static void put_u64le(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void hex_bytes(const uint8_t *p, size_t n, char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex[p[i] >> 4];
        out[2 * i + 1] = hex[p[i] & 15];
    }
    out[2 * n] = '\0';
}

static nf_status nomem(nf_error *err) { return nf_error_set(err, NF_ERR_NOMEM, "out of memory"); }

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
    if (!w) return nomem(err);
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
        return nomem(err);
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

void nf_writer_id_hex(const nf_writer *w, char out[33]) { hex_bytes(w->id, NF_ARTIFACT_ID_BYTES, out); }

uint64_t nf_writer_object_offset(const nf_writer *w, size_t index)
{
    return index < w->nobjs ? w->objs[index].offset : 0;
}

static nf_status check_planning(nf_writer *w, const char *what, nf_error *err)
{
    if (w->state != W_PLANNING)
        return nf_error_set(err, NF_ERR_USAGE, "%s: %s after nf_writer_begin", MP(w->path), what);
    return NF_OK;
}

/* Common part of add_tensor/add_resource: ID rules, uniqueness, placement. */
static nf_status add_object(nf_writer *w, const char *id, bool tensor, uint64_t bytes, uint64_t align,
                            const nf_geometry *g, size_t *index, nf_error *err)
{
    NF_TRY(check_planning(w, "adding an object", err));
    if (!id || !*id) return nf_error_set(err, NF_ERR_INVALID, "%s: an object id must be a non-empty string", MP(w->path));
    size_t bad;
    if (!nf_utf8_valid((const uint8_t *)id, strlen(id), &bad))
        return nf_error_set(err, NF_ERR_INVALID, "%s: object id is not valid UTF-8 (byte %zu)", MP(w->path), bad);
    if (bytes == 0) return nf_error_set(err, NF_ERR_INVALID, "%s: object '%s' has no bytes", MP(w->path), id);
    if (nf_strset_find(&w->ids, id, NULL, NULL))
        return nf_error_set(err, NF_ERR_INVALID, "%s: duplicate object id '%s'", MP(w->path), id);
    uint64_t offset, end;
    if (!nf_align_up_u64(w->payload_end, align, &offset) || !nf_add_u64(offset, bytes, &end) || end > JSON_INT_MAX)
        return nf_error_set(err, NF_ERR_INVALID, "%s: object '%s' (%llu bytes) does not fit: the payload would exceed "
                            "2^63-1 bytes", MP(w->path), id, (unsigned long long)bytes);
    if (w->nobjs == w->capobjs) {
        size_t cap = w->capobjs ? w->capobjs * 2 : 16;
        wobj *objs = realloc(w->objs, cap * sizeof *objs);
        if (!objs) return nomem(err);
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
        return nomem(err);
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
        return nf_error_set(err, NF_ERR_USAGE, "%s: object '%s': %s is a resource encoding; use "
                            "nf_writer_add_resource", MP(w->path), id ? id : "", g->layout->name);
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

nf_status nf_writer_set_member(nf_writer *w, const char *member, struct json_t *value, nf_error *err)
{
    nf_status st = check_planning(w, "setting a directory member", err);
    int m = -1;
    for (int i = 0; i < M_COUNT && st == NF_OK; i++)
        if (member && strcmp(member, MEMBER_NAMES[i]) == 0) m = i;
    if (st == NF_OK && m < 0)
        st = nf_error_set(err, NF_ERR_USAGE, "%s: '%s' is not a settable directory member (components, bindings, "
                          "uses, metadata, provenance)", MP(w->path), member ? member : "(null)");
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
    return NF_OK;
}

/* ---------------------------------------------------------------- directory */
/* The directory is emitted member by member, an object record at a time (never one JSON tree of
 * every object, nor a checksum map of every ID: those cost about 1 KB of memory per object), in
 * upstream member order (2.7 step 2): components, objects, bindings, uses, metadata, provenance,
 * files.  Python's compact json.dumps of the whole root is exactly the concatenation of the
 * members' own compact texts, so the bytes are the same as one nf_json_emit of the root. */
static json_t *object_json(const wobj *o)
{
    json_t *d = json_object();
    if (!d) return NULL;
    int bad = json_object_set_new(d, "id", json_string(o->id));
    if (o->tensor) {
        json_t *shape = json_array();
        for (uint32_t k = 0; shape && k < o->rank; k++)
            bad |= json_array_append_new(shape, json_integer((json_int_t)o->shape[k]));
        bad |= json_object_set_new(d, "shape", shape);
        bad |= json_object_set_new(d, "format", json_string(o->format->name));
        bad |= json_object_set_new(d, "layout", json_string(o->layout->name));
        bad |= json_object_set_new(d, "offset", json_integer((json_int_t)o->offset));
        bad |= json_object_set_new(d, "bytes", json_integer((json_int_t)o->bytes));
        if (o->divisors != 1) bad |= json_object_set_new(d, "divisors", json_integer((json_int_t)o->divisors));
        bad |= json_object_set_new(d, "kind", json_string("tensor"));
    } else {
        bad |= json_object_set_new(d, "encoding", json_string("raw_bytes_v1"));
        bad |= json_object_set_new(d, "offset", json_integer((json_int_t)o->offset));
        bad |= json_object_set_new(d, "bytes", json_integer((json_int_t)o->bytes));
        bad |= json_object_set_new(d, "kind", json_string("resource"));
    }
    if (bad) {
        json_decref(d);
        return NULL;
    }
    return d;
}

static json_t *files_json(const nf_writer *w, const uint64_t *segs, size_t n)
{
    json_t *files = json_array();
    for (size_t i = 0; files && i < n; i++) {
        json_t *f = json_object();
        char *name = i ? nf_part_name(w->entry_name, i) : NULL;
        int bad = !f || (i && !name);
        if (!bad) {
            bad |= json_object_set_new(f, "path", i ? json_string(name) : json_null());
            bad |= json_object_set_new(f, "payload_bytes", json_integer((json_int_t)segs[i]));
        }
        free(name);
        if (bad || json_array_append_new(files, f)) {
            json_decref(files);
            return NULL;
        }
    }
    return files;
}

/* The reader refuses more than NF_MAX_JSON_BYTES of directory (reader.c): so does the writer,
 * before anything is created (design.md 7: every cap a reader enforces is checked by the writer
 * before publishing; finding F11). */
static nf_status too_big(uint64_t bytes, bool more, nf_error *err)
{
    return nf_error_set(err, NF_ERR_INVALID, "%s%llu bytes of JSON, beyond the reader's cap of %llu bytes "
                        "(NF_MAX_JSON_BYTES, 64 MiB): write fewer objects, or less metadata, provenance or "
                        "component config", more ? "more than " : "", (unsigned long long)bytes,
                        (unsigned long long)NF_MAX_JSON_BYTES);
}

static nf_status put_text(nf_buf *t, const char *s, nf_error *err)
{
    return nf_buf_append(t, s, strlen(s)) ? NF_OK : nomem(err);
}

/* A member name or object ID as a JSON string, Python's way (the emitter's escapes). */
static nf_status put_key(nf_buf *t, const char *key, nf_error *err)
{
    json_t *k = json_string(key);
    if (!k) {
        size_t bad = 0;
        nf_utf8_valid((const uint8_t *)key, strlen(key), &bad);
        return nf_error_set(err, NF_ERR_INVALID, "JSON member name is not valid UTF-8 (byte %zu)", bad);
    }
    nf_status st = nf_json_emit(k, t, NULL, NULL, err);
    json_decref(k);
    return st;
}

/* A 32-digit checksum placeholder; *pos gets the offset of its first digit. */
static nf_status put_placeholder(nf_buf *t, size_t *pos, nf_error *err)
{
    NF_TRY(put_text(t, "\"", err));
    *pos = t->len;
    return put_text(t, CHECKSUM_ZEROS "\"", err);
}

/* metadata.checksums: {"algorithm":"xxh3-128","objects":{"<id>":"<zeros>",...},"directory":"<zeros>"}. */
static nf_status put_checksums(nf_writer *w, nf_buf *t, nf_error *err)
{
    NF_TRY(put_text(t, "{\"algorithm\":\"xxh3-128\",\"objects\":{", err));
    for (size_t i = 0; i < w->nobjs; i++) {
        if (i) NF_TRY(put_text(t, ",", err));
        NF_TRY(put_key(t, w->objs[i].id, err));
        NF_TRY(put_text(t, ":", err));
        NF_TRY(put_placeholder(t, &w->sum_pos[i], err));
        if (t->len > NF_MAX_JSON_BYTES) return too_big(t->len, true, err);
    }
    NF_TRY(put_text(t, "},\"directory\":", err));
    NF_TRY(put_placeholder(t, &w->dir_sum_pos, err));
    return put_text(t, "}", err);
}

/* The caller's metadata with "checksums" added (last) or, when the caller has one, replacing it
 * where it stands (as jansson's json_object_set would). */
static nf_status put_metadata(nf_writer *w, nf_buf *t, nf_error *err)
{
    NF_TRY(put_text(t, "{", err));
    const char *key;
    json_t *val;
    bool first = true, seen = false;
    json_object_foreach(w->members[M_METADATA], key, val) {
        if (!first) NF_TRY(put_text(t, ",", err));
        first = false;
        NF_TRY(put_key(t, key, err));
        NF_TRY(put_text(t, ":", err));
        if (w->opt.checksums && strcmp(key, "checksums") == 0) {
            seen = true;
            NF_TRY(put_checksums(w, t, err));
        } else {
            NF_TRY(nf_json_emit(val, t, NULL, NULL, err));
        }
    }
    if (w->opt.checksums && !seen) {
        NF_TRY(put_text(t, first ? "\"checksums\":" : ",\"checksums\":", err));
        NF_TRY(put_checksums(w, t, err));
    }
    return put_text(t, "}", err);
}

/* Everything before the file table: "{" and the members before "files", with their commas. */
static nf_status emit_prefix(nf_writer *w, nf_buf *t, nf_error *err)
{
    for (int m = 0; m < M_COUNT; m++) {
        if (w->members[m]) continue;
        if (m == M_COMPONENTS)
            w->members[m] = json_pack("{s:{s:{}}}", "text", "config");
        else
            w->members[m] = m == M_USES ? json_array() : json_object();
        if (!w->members[m]) return nomem(err);
    }
    NF_TRY(put_text(t, "{\"components\":", err));
    NF_TRY(nf_json_emit(w->members[M_COMPONENTS], t, NULL, NULL, err));
    NF_TRY(put_text(t, ",\"objects\":[", err));
    for (size_t i = 0; i < w->nobjs; i++) {
        if (i) NF_TRY(put_text(t, ",", err));
        json_t *o = object_json(&w->objs[i]);
        if (!o) return nomem(err);
        nf_status st = nf_json_emit(o, t, NULL, NULL, err);
        json_decref(o);
        NF_TRY(st);
        /* stop growing as soon as the text is beyond what a reader takes */
        if (t->len > NF_MAX_JSON_BYTES) return too_big(t->len, true, err);
    }
    NF_TRY(put_text(t, "],\"bindings\":", err));
    NF_TRY(nf_json_emit(w->members[M_BINDINGS], t, NULL, NULL, err));
    NF_TRY(put_text(t, ",\"uses\":", err));
    NF_TRY(nf_json_emit(w->members[M_USES], t, NULL, NULL, err));
    NF_TRY(put_text(t, ",\"metadata\":", err));
    NF_TRY(put_metadata(w, t, err));
    NF_TRY(put_text(t, ",\"provenance\":", err));
    NF_TRY(nf_json_emit(w->members[M_PROVENANCE], t, NULL, NULL, err));
    if (t->len > NF_MAX_JSON_BYTES) return too_big(t->len, true, err);
    return NF_OK;
}

/* The text: the prefix (t->len = prefix bytes) followed by the given file table and "}". */
static nf_status emit_with_files(nf_writer *w, nf_buf *t, size_t prefix, const uint64_t *segs, size_t n,
                                 nf_error *err)
{
    t->len = prefix;
    json_t *files = files_json(w, segs, n);
    if (!files) return nomem(err);
    nf_status st = put_text(t, ",\"files\":", err);
    if (st == NF_OK) st = nf_json_emit(files, t, NULL, NULL, err);
    json_decref(files);
    if (st == NF_OK) st = put_text(t, "}", err);
    return st;
}

/* 2.7 step 4: reserve = align_up(32 + len(single-file JSON), 4096) - 32, then grow until the
 * JSON with its real file table fits.  Leaves the final text in *text and the file table in
 * segs and n.  A directory beyond the reader's cap is refused here. */
static nf_status layout_directory(nf_writer *w, nf_buf *text, uint64_t **segs, size_t *n, nf_error *err)
{
    nf_status st = emit_prefix(w, text, err);
    if (st != NF_OK) return nf_error_forward(err, st, "%s: directory", MP(w->path));
    size_t prefix = text->len;
    uint64_t single = w->payload_end;
    NF_TRY(emit_with_files(w, text, prefix, &single, 1, err));
    uint64_t reserve;
    if (!nf_align_up_u64(NF_HEADER_BYTES + (uint64_t)text->len, NF_PAGE_BYTES, &reserve))
        return nf_error_set(err, NF_ERR_INVALID, "%s: directory too large", MP(w->path));
    reserve -= NF_HEADER_BYTES;
    for (int round = 0; round < 64; round++) {
        if (reserve > NF_MAX_JSON_BYTES) {
            return nf_error_forward(err, too_big(reserve, false, err), "%s: directory", MP(w->path));
        }
        free(*segs);
        *segs = NULL;
        st = nf_split_plan(w->payload_end, NF_HEADER_BYTES + reserve, w->opt.max_file_bytes, segs, n, err);
        if (st != NF_OK) return nf_error_forward(err, st, "%s", MP(w->path));
        NF_TRY(emit_with_files(w, text, prefix, *segs, *n, err));
        if ((uint64_t)text->len <= reserve) {
            w->json_bytes = reserve;
            w->entry_payload_start = NF_HEADER_BYTES + reserve;
            return NF_OK;
        }
        if (!nf_align_up_u64(NF_HEADER_BYTES + (uint64_t)text->len, NF_PAGE_BYTES, &reserve))
            return nf_error_set(err, NF_ERR_INVALID, "%s: directory too large", MP(w->path));
        reserve -= NF_HEADER_BYTES;
    }
    return nf_error_set(err, NF_ERR_INVALID, "%s: the directory reserve does not converge", MP(w->path));
}

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
static void release_lock(nf_writer *w);

static void abort_files(nf_writer *w)
{
    for (size_t i = 0; i < w->nfiles; i++) {
        wfile *f = &w->files[i];
        if (f->fd >= 0) {
            nf_io_close(f->fd);
            f->fd = -1;
        }
    }
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
    release_lock(w);
}

static nf_status fail_and_abort(nf_writer *w, nf_status st)
{
    abort_files(w);
    w->state = W_FAILED;
    return st;
}

/* ---------------------------------------------------------------- the lock */
/* The output's lock file ".<entry name>.lock" beside the entry (common/io.h): created and locked
 * without waiting, never through a symbolic link.  Another writer holding it is a system error
 * (exit 3: try again later); a lock file that is not a regular file is the caller's to remove. */
static nf_status take_lock(nf_writer *w, nf_error *err)
{
    int e = nf_io_lock_beside(w->path, &w->lock_fd, &w->lock_path);
    if (!e) return NF_OK;
    size_t need = strlen(w->prefix) + strlen(w->entry_name) + sizeof "..lock";
    char *lp = malloc(need);
    if (!lp) return nomem(err);
    snprintf(lp, need, "%s.%s.lock", w->prefix, w->entry_name);
    nf_status st;
    struct stat sb;
    if (e == EWOULDBLOCK)
        st = nf_error_set(err, NF_ERR_IO, "%s: another process is writing this output (it holds the lock file %s); "
                          "try again when it has finished", MP(w->path), MP(lp));
    else if ((e == ELOOP || e == EINVAL) && nf_io_lstat(lp, &sb) == 0 && !S_ISREG(sb.st_mode))
        st = nf_error_set(err, NF_ERR_USAGE, "%s: the lock file %s is %s, not a regular file: remove it", MP(w->path),
                          MP(lp), nf_io_kind_name(sb.st_mode));
    else
        st = nf_error_errno(err, e, "%s: cannot lock the output (lock file %s)", MP(w->path), MP(lp));
    free(lp);
    return st;
}

/* Let go of the lock (the lock file is removed first, see common/io.h). */
static void release_lock(nf_writer *w)
{
    nf_io_unlock(w->lock_fd, w->lock_path);
    w->lock_fd = -1;
    free(w->lock_path);
    w->lock_path = NULL;
}

/* ---------------------------------------------------------------- begin */
static nf_status create_files(nf_writer *w, const uint64_t *segs, size_t n, nf_error *err)
{
    w->files = calloc(n, sizeof *w->files);
    if (!w->files) return nomem(err);
    w->nfiles = n;
    uint64_t start = 0;
    for (size_t i = 0; i < n; i++) {
        wfile *f = &w->files[i];
        f->fd = -1;
        f->payload_bytes = segs[i];
        f->logical_start = start;
        start += segs[i];
        uint64_t head = i ? NF_PAGE_BYTES : w->entry_payload_start;
        if (!nf_add_u64(head, segs[i], &f->size) || f->size > JSON_INT_MAX)
            return nf_error_set(err, NF_ERR_INVALID, "%s: file %zu would exceed 2^63-1 bytes", MP(w->path), i);
        if (i == 0) {
            f->dest = strdup(w->path);
        } else {
            char *name = nf_part_name(w->entry_name, i);
            size_t need = strlen(w->prefix) + (name ? strlen(name) : 0) + 1;
            f->dest = name ? malloc(need) : NULL;
            if (f->dest) snprintf(f->dest, need, "%s%s", w->prefix, name);
            free(name);
        }
        if (!f->dest) return nomem(err);
    }
    /* 2.7 step 5: refuse existing destinations before creating anything.  One that is not a
     * regular file is never replaced, overwrite or not (design.md 7): publishing renames a file
     * over the name, which would replace a FIFO, a device node or a symbolic link (not write
     * into it or through it); an artifact cannot be streamed. */
    for (size_t i = 0; i < n; i++) {
        struct stat sb;
        int e = nf_io_lstat(w->files[i].dest, &sb);
        if (e == 0 && !S_ISREG(sb.st_mode))
            return nf_error_set(err, NF_ERR_USAGE, "%s is %s, not a regular file: an artifact is published by "
                                "renaming its files into place, which would replace it; give another output name",
                                MP(w->files[i].dest), nf_io_kind_name(sb.st_mode));
        if (e != 0 && e != ENOENT) return nf_error_errno(err, e, "%s", MP(w->files[i].dest));
    }
    /* From here on another writer of this output is refused until this one commits or rolls
     * back, and what the destinations are cannot change under it through another writer. */
    NF_TRY(take_lock(w, err));
    for (size_t i = 0; i < n && !w->opt.overwrite; i++) {
        struct stat sb;
        int e = nf_io_lstat(w->files[i].dest, &sb);
        if (e == 0) return nf_error_errno(err, EEXIST, "%s: refusing to overwrite", MP(w->files[i].dest));
        if (e != ENOENT) return nf_error_errno(err, e, "%s", MP(w->files[i].dest));
    }
    for (size_t i = 0; i < n; i++) {
        wfile *f = &w->files[i];
        f->fd = nf_io_mkstemp_beside(f->dest, &f->temp);
        if (f->fd < 0) return nf_error_errno(err, errno, "%s: cannot create a temp file", MP(f->dest));
        f->temp_exists = true;
        int e = nf_io_fchmod(f->fd, w->file_mode);
        if (!e) e = nf_io_allocate(f->fd, f->size);
        if (e) return nf_error_errno(err, e, "%s: cannot size the temp file %s", MP(f->dest), MP(f->temp));
        if (i == 0) {
            e = nf_io_pwrite_full(f->fd, w->image.data, w->image.len, 0);
        } else {
            uint8_t hdr[NF_HEADER_BYTES];
            memcpy(hdr, NF_MAGIC_PART, NF_MAGIC_BYTES);
            put_u64le(hdr + 8, (uint64_t)i);
            memcpy(hdr + 16, w->id, NF_ARTIFACT_ID_BYTES);
            e = nf_io_pwrite_full(f->fd, hdr, sizeof hdr, 0);
        }
        if (e) return nf_error_errno(err, e, "%s: cannot write the header to %s", MP(f->dest), MP(f->temp));
    }
    return NF_OK;
}

nf_status nf_writer_begin(nf_writer *w, nf_error *err)
{
    NF_TRY(check_planning(w, "nf_writer_begin", err));
    if (w->nobjs == 0) return nf_error_set(err, NF_ERR_INVALID, "%s: objects must not be empty", MP(w->path));
    if (w->opt.checksums) {
        w->sum_pos = calloc(w->nobjs, sizeof *w->sum_pos);
        w->dig = calloc(w->nobjs, sizeof *w->dig);
        if (!w->sum_pos || !w->dig) return nomem(err);
    }
    nf_buf text = {0};
    uint64_t *segs = NULL;
    size_t n = 0;
    nf_status st = layout_directory(w, &text, &segs, &n, err);
    if (st == NF_OK) {
        /* Never write what our own reader would refuse (references, proposal, names, ...). */
        json_t *check = NULL;
        nf_dir dir;
        st = nf_dir_parse((const uint8_t *)text.data, text.len, w->entry_name, &check, &dir, err);
        if (st == NF_OK) {
            nf_dir_free(&dir);
            json_decref(check);
        } else {
            nf_error_prefix(err, "%s: the directory to write is invalid", MP(w->path));
        }
    }
    if (st == NF_OK) {
        /* The entry image: header, then the JSON padded with spaces to json_bytes (2.7 step 4). */
        uint8_t hdr[NF_HEADER_BYTES];
        memcpy(hdr, NF_MAGIC_ENTRY, NF_MAGIC_BYTES);
        put_u64le(hdr + 8, w->json_bytes);
        memcpy(hdr + 16, w->id, NF_ARTIFACT_ID_BYTES);
        size_t pad = (size_t)w->json_bytes - text.len;
        bool ok = nf_buf_append(&w->image, hdr, sizeof hdr) && nf_buf_append(&w->image, text.data, text.len);
        for (size_t i = 0; ok && i < pad; i++) ok = nf_buf_putc(&w->image, ' ');
        if (!ok) st = nomem(err);
    }
    nf_buf_free(&text);
    if (st == NF_OK) st = create_files(w, segs, n, err);
    free(segs);
    if (st != NF_OK) {
        /* A failed begin is final: whatever was created is removed and the writer is dead
         * (only nf_writer_free remains). */
        return fail_and_abort(w, st);
    }
    w->state = W_BEGUN;
    return NF_OK;
}

/* ---------------------------------------------------------------- write */
/* Record [a, b) as written; 1 if any byte of it was written before, -1 on ENOMEM. */
static int cover(wobj *o, uint64_t a, uint64_t b, interval *clash)
{
    if (o->complete) {
        *clash = (interval){0, o->bytes};
        return 1;
    }
    size_t lo = 0, hi = o->ncov;
    while (lo < hi) { /* first interval ending after a */
        size_t mid = lo + (hi - lo) / 2;
        if (o->cov[mid].b <= a) lo = mid + 1;
        else hi = mid;
    }
    size_t i = lo;
    if (i < o->ncov && o->cov[i].a < b) {
        *clash = o->cov[i];
        return 1;
    }
    bool left = i > 0 && o->cov[i - 1].b == a;
    bool right = i < o->ncov && o->cov[i].a == b;
    if (left && right) {
        o->cov[i - 1].b = o->cov[i].b;
        memmove(&o->cov[i], &o->cov[i + 1], (o->ncov - i - 1) * sizeof *o->cov);
        o->ncov--;
    } else if (left) {
        o->cov[i - 1].b = b;
    } else if (right) {
        o->cov[i].a = a;
    } else {
        if (o->ncov == o->capcov) {
            size_t cap = o->capcov ? o->capcov * 2 : 4;
            interval *c = realloc(o->cov, cap * sizeof *c);
            if (!c) return -1;
            o->cov = c;
            o->capcov = cap;
        }
        memmove(&o->cov[i + 1], &o->cov[i], (o->ncov - i) * sizeof *o->cov);
        o->cov[i].a = a;
        o->cov[i].b = b;
        o->ncov++;
    }
    if (o->ncov == 1 && o->cov[0].a == 0 && o->cov[0].b == o->bytes) { /* done: no list to keep */
        free(o->cov);
        o->cov = NULL;
        o->ncov = o->capcov = 0;
        o->complete = true;
    }
    return 0;
}

static size_t file_of(const nf_writer *w, uint64_t x)
{
    size_t lo = 0, hi = w->nfiles;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (w->files[mid].logical_start <= x) lo = mid;
        else hi = mid;
    }
    return lo;
}

/* Positional transfer of logical payload bytes [pos, pos + len) to or from the temp files. */
static int route(nf_writer *w, uint64_t pos, void *buf, size_t len, bool writing, size_t *failed_file)
{
    uint8_t *p = buf;
    uint64_t end = pos + (uint64_t)len;
    size_t i = file_of(w, pos);
    while (pos < end) {
        const wfile *f = &w->files[i];
        uint64_t seg_end = f->logical_start + f->payload_bytes;
        uint64_t hi = end < seg_end ? end : seg_end;
        size_t n = (size_t)(hi - pos);
        uint64_t at = (i == 0 ? w->entry_payload_start : NF_PAGE_BYTES) + (pos - f->logical_start);
        int e = writing ? nf_io_pwrite_full(f->fd, p, n, at) : nf_io_pread_full(f->fd, p, n, at);
        if (e) {
            *failed_file = i;
            return e;
        }
        p += n;
        pos = hi;
        i++;
    }
    return 0;
}

/* ---------------------------------------------------------------- streaming digests */
static void digest_hash(wdigest *d, const void *data, size_t len)
{
    nf_xxh3_stream_update(d->s, data, len);
    d->hashed += len;
}

/* Hash the parked copies that now continue the digest. */
static void digest_drain(nf_writer *w, wdigest *d)
{
    while (d->park && d->park->offset == d->hashed) {
        parked *p = d->park;
        d->park = p->next;
        digest_hash(d, p->data, p->len);
        atomic_fetch_sub(&w->parked_bytes, (uint64_t)p->len);
        free(p);
    }
}

/* Keep a copy of a piece ahead of the digest, if the budget allows (else it is read back). */
static void digest_park(nf_writer *w, wdigest *d, uint64_t offset, const void *data, size_t len)
{
    if (atomic_fetch_add(&w->parked_bytes, (uint64_t)len) + len > PARK_BUDGET) {
        atomic_fetch_sub(&w->parked_bytes, (uint64_t)len);
        return;
    }
    parked *p = malloc(sizeof *p + len);
    if (!p) {
        atomic_fetch_sub(&w->parked_bytes, (uint64_t)len);
        return;
    }
    p->offset = offset;
    p->len = len;
    memcpy(p->data, data, len);
    parked **at = &d->park;
    while (*at && (*at)->offset < offset) at = &(*at)->next;
    p->next = *at;
    *at = p;
}

/* The streamed digest of an object is given up (out of memory): its parked copies are dropped
 * and fill_checksums reads the whole object back instead. */
static void digest_give_up(nf_writer *w, wdigest *d)
{
    d->failed = true;
    while (d->park) {
        parked *p = d->park;
        d->park = p->next;
        atomic_fetch_sub(&w->parked_bytes, (uint64_t)p->len);
        free(p);
    }
}

/* The object is complete: the rest of its bytes, from the parked copies or read back. */
static nf_status digest_finish(nf_writer *w, size_t index, nf_error *err)
{
    wobj *o = &w->objs[index];
    wdigest *d = &w->dig[index];
    if (!d->s && !(d->s = nf_xxh3_stream_new())) {
        digest_give_up(w, d);
        return NF_OK;
    }
    uint8_t *buf = NULL;
    digest_drain(w, d);
    while (d->hashed < o->bytes) {
        uint64_t end = d->park ? d->park->offset : o->bytes;
        if (!buf && !(buf = malloc(READBACK_CHUNK))) {
            digest_give_up(w, d);
            break;
        }
        size_t n = end - d->hashed < READBACK_CHUNK ? (size_t)(end - d->hashed) : READBACK_CHUNK;
        size_t bad = 0;
        int e = route(w, o->offset + d->hashed, buf, n, false, &bad);
        if (e) {
            free(buf);
            return nf_error_errno(err, e, "%s: object '%s': cannot read back %s for its checksum", MP(w->path), o->id,
                                  MP(w->files[bad].temp));
        }
        digest_hash(d, buf, n);
        digest_drain(w, d);
    }
    free(buf);
    if (d->failed) return NF_OK;
    nf_xxh3_stream_final(d->s, d->hex);
    d->s = NULL;
    d->done = true;
    return NF_OK;
}

/* A piece of object `index` has been written: into its digest, or parked; the piece that
 * completes the object finishes the digest. */
static nf_status digest_piece(nf_writer *w, size_t index, uint64_t offset, const void *data, size_t len,
                              nf_error *err)
{
    wdigest *d = &w->dig[index];
    pthread_mutex_t *lock = &w->dig_lock[index % DIGEST_LOCKS];
    nf_status st = NF_OK;
    pthread_mutex_lock(lock);
    if (!d->failed && offset == d->hashed) {
        if (!d->s && !(d->s = nf_xxh3_stream_new())) {
            digest_give_up(w, d);
        } else {
            digest_hash(d, data, len);
            digest_drain(w, d);
        }
    } else if (!d->failed) {
        digest_park(w, d, offset, data, len);
    }
    d->written += len;
    if (d->written == w->objs[index].bytes && !d->failed) st = digest_finish(w, index, err);
    pthread_mutex_unlock(lock);
    return st;
}

static void digest_free(nf_writer *w)
{
    for (size_t i = 0; w->dig && i < w->nobjs; i++) {
        wdigest *d = &w->dig[i];
        while (d->park) {
            parked *p = d->park;
            d->park = p->next;
            free(p);
        }
        if (d->s) {
            char hex[33];
            nf_xxh3_stream_final(d->s, hex); /* frees it */
        }
    }
    free(w->dig);
    w->dig = NULL;
}

/* A write (or its digest's read-back) failed: other threads may still be writing, so the writer
 * is only marked dead (nf_writer_free removes the files), and every later write returns this
 * error. */
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
    wobj *o = &w->objs[index];
    uint64_t end;
    if (!nf_add_u64(offset, (uint64_t)len, &end) || end > o->bytes)
        return nf_error_set(err, NF_ERR_INVALID, "%s: object '%s': write of %zu bytes at %llu beyond its %llu bytes",
                            MP(w->path), o->id, len, (unsigned long long)offset, (unsigned long long)o->bytes);
    if (len == 0) return NF_OK;
    pthread_mutex_lock(&w->lock);
    interval clash;
    int c = cover(o, offset, end, &clash);
    pthread_mutex_unlock(&w->lock);
    if (c < 0) return nomem(err);
    if (c > 0) {
        uint64_t lo = offset > clash.a ? offset : clash.a, hi = end < clash.b ? end : clash.b;
        return nf_error_set(err, NF_ERR_INVALID, "%s: object '%s': bytes [%llu, %llu) written twice (duplicate output "
                            "coverage)", MP(w->path), o->id, (unsigned long long)lo, (unsigned long long)hi);
    }
    size_t bad = 0;
    int e = route(w, o->offset + offset, (void *)(uintptr_t)data, len, true, &bad);
    nf_error local;
    if (e) return write_failed(w, nf_error_errno(&local, e, "%s: object '%s': cannot write %zu bytes to %s",
                                                 MP(w->path), o->id, len, MP(w->files[bad].temp)),
                               &local, err);
    if (w->dig) {
        nf_status st = digest_piece(w, index, offset, data, len, &local);
        if (st != NF_OK) return write_failed(w, st, &local, err);
    }
    return NF_OK;
}

nf_status nf_writer_sink_write(void *sink, uint64_t offset, const void *buf, size_t len, nf_error *err)
{
    nf_writer_sink *s = sink;
    return nf_writer_write(s->writer, s->index, offset, buf, len, err);
}

/* ---------------------------------------------------------------- finish */
static nf_status check_coverage(nf_writer *w, nf_error *err)
{
    for (size_t i = 0; i < w->nobjs; i++) {
        const wobj *o = &w->objs[i];
        if (o->complete) continue;
        uint64_t a = 0, b = o->bytes;
        if (o->ncov > 0) {
            if (o->cov[0].a > 0) {
                b = o->cov[0].a;
            } else {
                a = o->cov[0].b;
                b = o->ncov > 1 ? o->cov[1].a : o->bytes;
            }
        }
        return nf_error_set(err, NF_ERR_INVALID, "%s: object '%s': bytes [%llu, %llu) of %llu were never written "
                            "(missing output coverage)", MP(w->path), o->id, (unsigned long long)a, (unsigned long long)b,
                            (unsigned long long)o->bytes);
    }
    return NF_OK;
}

/* design.md 4: each object's digest from its bytes as written (streamed as they were written,
 * or, for an object whose stream was given up, read back from the temp files), then the
 * directory digest over header + JSON with its own digits still zero. */
static nf_status fill_checksums(nf_writer *w, nf_error *err)
{
    uint8_t *buf = malloc(READBACK_CHUNK);
    if (!buf) return nomem(err);
    char hex[33];
    for (size_t i = 0; i < w->nobjs; i++) {
        const wobj *o = &w->objs[i];
        if (w->dig && w->dig[i].done) { /* streamed while it was written */
            memcpy(w->image.data + NF_HEADER_BYTES + w->sum_pos[i], w->dig[i].hex, 32);
            continue;
        }
        nf_xxh3_stream *s = nf_xxh3_stream_new();
        if (!s) {
            free(buf);
            return nomem(err);
        }
        for (uint64_t pos = 0; pos < o->bytes;) {
            size_t n = o->bytes - pos < READBACK_CHUNK ? (size_t)(o->bytes - pos) : READBACK_CHUNK;
            size_t bad = 0;
            int e = route(w, o->offset + pos, buf, n, false, &bad);
            if (e) {
                nf_xxh3_stream_final(s, hex);
                free(buf);
                return nf_error_errno(err, e, "%s: object '%s': cannot read back %s for its checksum", MP(w->path), o->id,
                                      MP(w->files[bad].temp));
            }
            nf_xxh3_stream_update(s, buf, n);
            pos += n;
        }
        nf_xxh3_stream_final(s, hex);
        memcpy(w->image.data + NF_HEADER_BYTES + w->sum_pos[i], hex, 32);
    }
    free(buf);
    nf_xxh3_128_hex(w->image.data, w->image.len, hex);
    memcpy(w->image.data + NF_HEADER_BYTES + w->dir_sum_pos, hex, 32);
    int e = nf_io_pwrite_full(w->files[0].fd, w->image.data, w->image.len, 0);
    if (e) return nf_error_errno(err, e, "%s: cannot write the checksums to %s", MP(w->path), MP(w->files[0].temp));
    return NF_OK;
}

static nf_status sync_directory(nf_writer *w, nf_error *err)
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

/* Overwrite: keep an existing destination as a second hard link ".<name>.<pid>.XXXXXX.old"
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
    e = nf_io_link_beside(f->dest, ".old", &f->backup);
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
        if (!w->surplus) st = nomem(err);
    }
    for (size_t i = w->nfiles; st == NF_OK && i < n; i++) {
        const char *path = nf_artifact_file(a, i)->path;
        char *name = nf_part_name(w->entry_name, i);
        if (!name) {
            st = nomem(err);
            break;
        }
        bool ours = path && strcmp(path, name) == 0;
        free(name);
        if (!ours) continue;
        size_t need = strlen(w->prefix) + strlen(path) + 1;
        char *dest = malloc(need);
        if (!dest) {
            st = nomem(err);
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
    NF_TRY(check_coverage(w, err));
    if (w->opt.checksums) NF_TRY(fill_checksums(w, err));
    for (size_t i = 0; i < w->nfiles; i++) {
        wfile *f = &w->files[i];
        struct stat sb;
        int e = nf_io_fstat(f->fd, &sb);
        if (e) return nf_error_errno(err, e, "%s: cannot stat %s", MP(f->dest), MP(f->temp));
        if ((uint64_t)sb.st_size != f->size)
            return nf_error_set(err, NF_ERR_IO, "%s: temp file %s is %llu bytes, expected %llu", MP(f->dest), MP(f->temp),
                                (unsigned long long)sb.st_size, (unsigned long long)f->size);
        if ((e = nf_io_fdatasync(f->fd)) != 0) return nf_error_errno(err, e, "%s: cannot sync %s", MP(f->dest), MP(f->temp));
        e = nf_io_close(f->fd) == 0 ? 0 : errno;
        f->fd = -1;
        if (e) return nf_error_errno(err, e, "%s: cannot close %s", MP(f->dest), MP(f->temp));
    }
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
        if ((e = nf_io_link_beside(s->dest, ".old", &s->backup)) != 0)
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
    return sync_directory(w, err);
}

nf_status nf_writer_publish(nf_writer *w, nf_error *err)
{
    if (w->state != W_BEGUN)
        return nf_error_set(err, NF_ERR_USAGE, "%s: nf_writer_publish %s", MP(w->path),
                            w->state == W_PLANNING ? "before nf_writer_begin" : "after the writer published or failed");
    nf_status st = publish_files(w, err);
    if (st != NF_OK) return fail_and_abort(w, st);
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
    release_lock(w);
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
    release_lock(w);
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
    for (int m = 0; m < M_COUNT; m++) json_decref(w->members[m]);
    free(w->sum_pos);
    digest_free(w);
    nf_buf_free(&w->image);
    pthread_mutex_destroy(&w->lock);
    for (unsigned i = 0; i < DIGEST_LOCKS; i++) pthread_mutex_destroy(&w->dig_lock[i]);
    free(w->prefix);
    free(w->path);
    free(w);
}
