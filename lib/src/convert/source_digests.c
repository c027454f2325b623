/* The provenance a third party can check (docs/provenance.md): every source file's name, size
 * and SHA-256, the Hugging Face repository and revision of a hub-cache snapshot, and the recipe
 * file's SHA-256.
 *
 * The plan's provenance (planner.c) is part of the plan's digest, which scale-out tasks compare,
 * so the digests never enter it: the writer is given a copy whose "sha256" strings are random
 * placeholders of the digest's length (the directory's layout does not depend on them), a
 * thread hashes the files while the conversion runs (each file read once more, overlapping the
 * encoders' reads), and the placeholders are patched before the directory's checksum is taken
 * (nf_writer_patch_text).  A scale-out plan's maker hashes before it lays out (scaleout_plan.c). */
#define _XOPEN_SOURCE 700 /* realpath (XSI) */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ninfer/ninfer.h>

#include "common/hex.h"
#include "common/io.h"
#include "common/sha256_file.h"
#include "convert/convert_impl.h"

#define MP(path) nf_io_msg_path((path), (char[NF_IO_MSG_PATH + 1]){0})

typedef struct digest_file {
    size_t source;                /* index in p->sources */
    const char *path;             /* as the source opened it (borrowed from the plan) */
    char *name;                   /* relative to the source's directory */
    uint64_t bytes;               /* when planned */
    struct stat planned;          /* the file then: the one hashed must be it, unchanged */
    bool laid;                    /* its record (and placeholder) is in the directory */
    char blob[NF_SHA256_HEX + 1]; /* a hub snapshot's LFS blob name (its SHA-256), or "" */
    char token[NF_SHA256_HEX + 1];
    char hex[NF_SHA256_HEX + 1];
} digest_file;

/* at most this many workers hash while a conversion runs */
#define NF_DIGEST_THREADS 64

typedef struct digest_hub {
    char *repo, *revision, *path; /* path: the source's folder inside the snapshot, or NULL */
} digest_hub;

struct nf_convert_digests {
    digest_file *files;
    size_t n;
    digest_hub *hubs; /* one per source */
    size_t nsources;
    bool hash;                           /* digests wanted (not --no-source-digests, not scale-out) */
    char recipe_hex[NF_SHA256_HEX + 1];  /* "" without a recipe file */
    pthread_t thread[NF_DIGEST_THREADS]; /* the workers hashing while the conversion runs */
    size_t started;
    volatile int stop; /* the conversion or a file failed: give up */
    volatile int *cancel;
    atomic_size_t next;   /* the next file a worker takes */
    pthread_mutex_t lock; /* status and err: the first failure */
    nf_status status;
    nf_error err;
};

void nf_convert_digests_free(nf_convert_digests *d)
{
    if (!d) return;
    d->stop = 1;
    for (size_t i = 0; i < d->started; i++) pthread_join(d->thread[i], NULL);
    pthread_mutex_destroy(&d->lock);
    for (size_t i = 0; i < d->n; i++) free(d->files[i].name);
    for (size_t i = 0; i < d->nsources; i++) {
        free(d->hubs[i].repo);
        free(d->hubs[i].revision);
        free(d->hubs[i].path);
    }
    free(d->files);
    free(d->hubs);
    free(d);
}

static bool all_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
    return s[n] == '\0';
}

/* A hub cache snapshot: <cache>/models--ORG--NAME/snapshots/<40-hex revision>[/folder...].
 * The directory is resolved (realpath: snapshots/REV is a real directory; its files are links
 * into ../../blobs), and the components are read from the end. */
static bool find_hub(const char *dir, digest_hub *h)
{
    char *real = realpath(dir, NULL);
    if (!real) return false;
    bool ok = false;
    for (char *s = strstr(real, "/models--"); s; s = strstr(s + 1, "/models--")) {
        char *repo = s + 9, *slash = strchr(repo, '/');
        if (!slash || strncmp(slash, "/snapshots/", 11) != 0) continue;
        char *rev = slash + 11, *after = strchr(rev, '/');
        size_t rl = after ? (size_t)(after - rev) : strlen(rev);
        if (rl != 40) continue;
        char revision[41];
        memcpy(revision, rev, 40);
        revision[40] = '\0';
        if (!all_hex(revision, 40) || slash == repo) continue;
        /* models--ORG--NAME: the first "--" separates the owner (owners hold no "--"); a
         * repository without owner (models--gpt2) is its name alone */
        size_t len = (size_t)(slash - repo);
        h->repo = strndup(repo, len);
        h->revision = strdup(revision);
        h->path = after && after[1] ? strdup(after + 1) : NULL;
        if (!h->repo || !h->revision || (after && after[1] && !h->path)) break;
        char *sep = strstr(h->repo, "--");
        if (sep) {
            sep[0] = '/';
            memmove(sep + 1, sep + 2, strlen(sep + 2) + 1);
        }
        ok = true;
        break;
    }
    free(real);
    if (!ok) {
        free(h->repo);
        free(h->revision);
        free(h->path);
        memset(h, 0, sizeof *h);
    }
    return ok;
}

/* The blob a hub snapshot's file links to, when its name is a SHA-256 (an LFS file; a small
 * file's blob is named by its git SHA-1 and has no figure to compare). */
static void blob_of(const char *path, char out[NF_SHA256_HEX + 1])
{
    out[0] = '\0';
    char target[PATH_MAX];
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n <= 0) return;
    target[n] = '\0';
    const char *base = strrchr(target, '/');
    base = base ? base + 1 : target;
    if (strlen(base) == NF_SHA256_HEX && all_hex(base, NF_SHA256_HEX)) memcpy(out, base, NF_SHA256_HEX + 1);
}

static char *name_under(const char *root, const char *path)
{
    size_t rl = strlen(root);
    while (rl > 1 && root[rl - 1] == '/') rl--;
    if (rl && strncmp(path, root, rl) == 0 && path[rl] == '/') {
        const char *rest = path + rl;
        while (*rest == '/') rest++;
        if (*rest) return strdup(rest);
    }
    const char *base = strrchr(path, '/');
    return strdup(base ? base + 1 : path);
}

char *nf_convert_digests_root(const char *source_path)
{
    struct stat sb;
    if (stat(source_path, &sb) == 0 && S_ISDIR(sb.st_mode)) return strdup(source_path);
    const char *slash = strrchr(source_path, '/');
    if (!slash) return strdup(".");
    if (slash == source_path) return strdup("/");
    return strndup(source_path, (size_t)(slash - source_path));
}

char *nf_convert_digests_name(const char *root, const char *path) { return name_under(root, path); }

static nf_status add_file(nf_convert_digests *d, size_t *cap, size_t source, const char *root, const char *path,
                          nf_error *err)
{
    if (!path) return NF_OK; /* (a source's shards, index and companions are distinct files) */
    if (d->n == *cap) {
        size_t nc = *cap ? 2 * *cap : 16;
        digest_file *v = realloc(d->files, nc * sizeof *v);
        if (!v) return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
        d->files = v;
        *cap = nc;
    }
    digest_file *f = &d->files[d->n];
    memset(f, 0, sizeof *f);
    f->source = source;
    f->path = path;
    f->name = name_under(root, path);
    if (!f->name) return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    d->n++;
    if (stat(path, &f->planned) != 0) return nf_error_errno(err, errno, "%s", MP(path));
    f->bytes = (uint64_t)f->planned.st_size;
    if (d->hubs[source].repo) blob_of(path, f->blob);
    if (d->hash) {
        uint8_t r[32];
        if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
            return nf_error_errno(err, errno ? errno : EIO, "cannot draw a placeholder");
        nf_hex_bytes(r, sizeof r, f->token);
    }
    return NF_OK;
}

nf_status nf_convert_digests_plan(const nf_plan *p, bool hash, nf_convert_digests **out, nf_error *err)
{
    *out = NULL;
    nf_convert_digests *d = calloc(1, sizeof *d);
    if (!d) return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    d->hash = hash;
    pthread_mutex_init(&d->lock, NULL);
    d->nsources = p->nsources;
    d->hubs = calloc(p->nsources ? p->nsources : 1, sizeof *d->hubs);
    nf_status st = d->hubs ? NF_OK : nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    size_t cap = 0;
    for (size_t i = 0; st == NF_OK && i < p->nsources; i++) {
        const plan_source *ps = &p->sources[i];
        char *root = nf_convert_digests_root(ps->path);
        if (!root) {
            st = nf_error_set(err, NF_ERR_NOMEM, "out of memory");
            break;
        }
        find_hub(root, &d->hubs[i]);
        const nf_source *s = ps->src;
        if (!s) st = add_file(d, &cap, i, root, ps->path, err);
        for (size_t f = 0; st == NF_OK && s && f < nf_source_file_count(s); f++)
            st = add_file(d, &cap, i, root, nf_source_file_path(s, f), err);
        if (st == NF_OK && s) st = add_file(d, &cap, i, root, nf_source_index_path(s), err);
        for (size_t c = 0; st == NF_OK && s && c < nf_source_companion_count(s); c++) {
            const char *cname = NULL;
            st = add_file(d, &cap, i, root, nf_source_companion_at(s, c, &cname), err);
        }
        free(root);
    }
    nf_recipe_text_sha256(p->recipe, d->recipe_hex);
    if (st != NF_OK) {
        nf_convert_digests_free(d);
        return st;
    }
    *out = d;
    return NF_OK;
}

/* provenance with, per source, "files" (name, bytes, sha256: the placeholder or the digest) and
 * "hub", and "recipe_sha256": a new tree sharing the plan's recipe. */
json_t *nf_convert_digests_provenance(const nf_plan *p, nf_convert_digests *d, bool final)
{
    json_t *prov = json_copy(p->provenance);
    json_t *sources = json_deep_copy(json_object_get(p->provenance, "sources"));
    if (!prov || !sources) {
        json_decref(prov);
        json_decref(sources);
        return NULL;
    }
    if (d->recipe_hex[0]) json_object_set_new(prov, "recipe_sha256", json_string(d->recipe_hex));
    for (size_t i = 0; i < p->nsources; i++) {
        json_t *src = json_object_get(sources, p->sources[i].name);
        if (!src) continue;
        json_t *files = json_array();
        for (size_t k = 0; k < d->n; k++) {
            digest_file *f = &d->files[k];
            if (f->source != i) continue;
            /* (a name that is not UTF-8 has no JSON text: its record is left out, and so is its
             * placeholder from the patching) */
            json_t *rec = json_pack("{s:s,s:I}", "path", f->name, "bytes", (json_int_t)f->bytes);
            if (rec && d->hash) json_object_set_new(rec, "sha256", json_string(final ? f->hex : f->token));
            bool laid = rec && json_array_append_new(files, rec) == 0;
            if (!final) f->laid = laid;
        }
        json_object_set_new(src, "files", files);
        const digest_hub *h = &d->hubs[i];
        if (h->repo) {
            json_t *hub = json_pack("{s:s,s:s}", "repo", h->repo, "revision", h->revision);
            if (hub && h->path) json_object_set_new(hub, "path", json_string(h->path));
            json_object_set_new(src, "hub", hub);
        }
    }
    json_object_set_new(prov, "sources", sources);
    return prov;
}

/* File i hashed (and checked against its hub blob's name); the first failure is kept. */
static void hash_one(nf_convert_digests *d, size_t i)
{
    digest_file *f = &d->files[i];
    nf_error e;
    uint64_t n = 0;
    bool hit = false;
    nf_status st = nf_sha256_file_cached(f->path, MP(f->path), &f->planned, &d->stop, d->cancel, &n, f->hex, &hit, &e);
    if (st == NF_OK && f->blob[0] && strcmp(f->blob, f->hex) != 0)
        st = nf_error_set(&e, NF_ERR_INVALID,
                          "%s: its SHA-256 is %s, but the hub cache stores it as blob %s: the download is "
                          "damaged; download it again",
                          MP(f->path), f->hex, f->blob);
    if (st == NF_OK) return;
    pthread_mutex_lock(&d->lock);
    if (d->status == NF_OK) {
        d->status = st;
        d->err = e;
    }
    pthread_mutex_unlock(&d->lock);
    d->stop = 1;
}

/* A worker: the next file not taken, until none is left or one failed. */
static void *hash_files(void *arg)
{
    nf_convert_digests *d = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&d->next, 1);
        if (i >= d->n || d->stop) break;
        hash_one(d, i);
    }
    return NULL;
}

nf_status nf_convert_digests_hash_all(nf_convert_digests *d, unsigned threads, volatile int *cancel, nf_error *err)
{
    if (!d->hash || !d->n) return NF_OK;
    d->cancel = cancel;
    size_t nt = threads < 1 ? 1 : threads;
    if (nt > d->n) nt = d->n;
    pthread_t *t = calloc(nt, sizeof *t);
    if (!t) return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    size_t started = 0;
    for (; started + 1 < nt; started++)
        if (pthread_create(&t[started], NULL, hash_files, d) != 0) break;
    hash_files(d); /* this thread is a worker too */
    for (size_t i = 0; i < started; i++) pthread_join(t[i], NULL);
    free(t);
    if (d->status != NF_OK) {
        if (err) *err = d->err;
        return d->status;
    }
    return NF_OK;
}

nf_status nf_convert_digests_start(nf_convert_digests *d, unsigned threads, volatile int *cancel, nf_error *err)
{
    if (!d->hash || !d->n) return NF_OK;
    d->cancel = cancel;
    /* SHA-NI hashes about 2 GB/s a core, a q4 encoder about 0.8: two workers for every five
     * encoding threads keep up with the conversion (across files; a file is one worker's) */
    size_t nt = ((size_t)threads * 2 + 4) / 5;
    if (nt < 1) nt = 1;
    if (nt > NF_DIGEST_THREADS) nt = NF_DIGEST_THREADS;
    if (nt > d->n) nt = d->n;
    for (; d->started < nt; d->started++) {
        int e = pthread_create(&d->thread[d->started], NULL, hash_files, d);
        if (e && d->started == 0) return nf_error_errno(err, e, "cannot start the thread that hashes the sources");
        if (e) break; /* fewer workers: slower, the same digests */
    }
    return NF_OK;
}

nf_status nf_convert_digests_finish(nf_convert_digests *d, nf_writer *w, bool give_up, nf_error *err)
{
    if (!d->hash) return NF_OK;
    if (give_up) d->stop = 1;
    if (d->started) {
        for (size_t i = 0; i < d->started; i++) pthread_join(d->thread[i], NULL);
        d->started = 0;
    } else if (!give_up && d->n) {
        atomic_store(&d->next, 0);
        hash_files(d);
    }
    if (give_up) return NF_OK;
    if (d->status != NF_OK) {
        if (err) *err = d->err;
        return d->status;
    }
    for (size_t i = 0; i < d->n; i++)
        if (d->files[i].laid) NF_TRY(nf_writer_patch_text(w, d->files[i].token, d->files[i].hex, err));
    return NF_OK;
}
