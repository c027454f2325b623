/* Artifact verification (design.md section 2, ninfer-verify): structure, then words, then
 * checksums.  Each level reports every problem it finds; a level that cannot run because the
 * one before it failed badly (no directory, unreadable parts) is skipped. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <jansson.h>
#include <xxhash.h>

#include <ninfer/ninfer.h>

#include "common/checked.h"

#define WORD_REPORTS_PER_OBJECT 20u
#define HASH_CHUNK ((size_t)1 << 20)

static char *dup_or_null(const char *s)
{
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

static nf_status add_problem(nf_verify_report *r, const char *object, const char *check, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static nf_status add_problem(nf_verify_report *r, const char *object, const char *check, const char *fmt, ...)
{
    if (r->count == r->capacity) {
        size_t cap = r->capacity ? r->capacity * 2 : 16;
        nf_problem *p = realloc(r->problems, cap * sizeof *p);
        if (!p) return NF_ERR_NOMEM;
        r->problems = p;
        r->capacity = cap;
    }
    char msg[NF_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    nf_problem *p = &r->problems[r->count];
    p->object = dup_or_null(object);
    p->check = dup_or_null(check);
    p->message = dup_or_null(msg);
    if ((object && !p->object) || !p->check || !p->message) {
        free(p->object);
        free(p->check);
        free(p->message);
        return NF_ERR_NOMEM;
    }
    r->count++;
    r->valid = false;
    return NF_OK;
}

void nf_verify_report_free(nf_verify_report *report)
{
    if (!report) return;
    for (size_t i = 0; i < report->count; i++) {
        free(report->problems[i].object);
        free(report->problems[i].check);
        free(report->problems[i].message);
    }
    free(report->problems);
    memset(report, 0, sizeof *report);
}

/* Moves every problem of `from` to the end of `to` (in order); `from` is freed. */
static nf_status merge_report(nf_verify_report *to, nf_verify_report *from)
{
    if (from->count) {
        if (to->count + from->count > to->capacity) {
            size_t cap = to->capacity ? to->capacity : 16;
            while (cap < to->count + from->count) cap *= 2;
            nf_problem *p = realloc(to->problems, cap * sizeof *p);
            if (!p) return NF_ERR_NOMEM;
            to->problems = p;
            to->capacity = cap;
        }
        memcpy(to->problems + to->count, from->problems, from->count * sizeof *from->problems);
        to->count += from->count;
        to->valid = false;
        from->count = 0;
    }
    nf_verify_report_free(from);
    return NF_OK;
}

/* ---------------------------------------------------------------- parallel tasks */
/* Tasks 0..n-1 run on up to `threads` threads (the calling one included), each task once, in
 * any order; every task writes only its own result slot, and the callers merge the slots in
 * task order, so what they report does not depend on the thread count. */
typedef void (*task_fn)(void *ctx, size_t index);

typedef struct task_pool {
    task_fn fn;
    void *ctx;
    size_t n;
    atomic_size_t next;
} task_pool;

static void *task_worker(void *arg)
{
    task_pool *p = arg;
    for (size_t i; (i = atomic_fetch_add(&p->next, 1)) < p->n;) p->fn(p->ctx, i);
    return NULL;
}

static unsigned resolve_threads(unsigned threads)
{
    if (threads) return threads;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1u;
}

static void run_tasks(unsigned threads, size_t n, task_fn fn, void *ctx)
{
    task_pool pool = {fn, ctx, n, 0};
    size_t extra = threads > 1 ? threads - 1 : 0;
    if (extra > n) extra = n ? n - 1 : 0;
    pthread_t *tids = extra ? calloc(extra, sizeof *tids) : NULL;
    size_t started = 0;
    if (tids)
        for (; started < extra; started++)
            if (pthread_create(&tids[started], NULL, task_worker, &pool) != 0) break;
    task_worker(&pool); /* the calling thread works too (and alone when no thread started) */
    for (size_t i = 0; i < started; i++) pthread_join(tids[i], NULL);
    free(tids);
}

/* One object's word check (or one checksum's hash): its result slot. */
typedef struct unit {
    nf_verify_report report; /* problems found, in the order one thread finds them */
    nf_status status;        /* system error (then err) */
    nf_error err;
    char digest[33];         /* checksums: the object's xxh3-128 */
} unit;

/* ---------------------------------------------------------------- words level */
typedef struct word_sink {
    nf_verify_report *report;
    const char *object;
    nf_status status;
} word_sink;

static void on_word_problem(void *ctx, const char *message)
{
    word_sink *s = ctx;
    if (s->status == NF_OK) s->status = add_problem(s->report, s->object, "words", "%s", message);
}

static nf_status check_words(nf_artifact *a, const nf_object *o, const nf_geometry *g, nf_verify_report *r,
                             nf_error *err)
{
    nf_byte_reader reader;
    nf_artifact_object_reader(a, o, &reader);
    word_sink sink = {r, o->id, NF_OK};
    uint64_t found = 0;
    nf_error local;
    nf_status st = nf_layout_check(g, &reader, on_word_problem, &sink, WORD_REPORTS_PER_OBJECT, &found, &local);
    if (st == NF_ERR_INVALID) /* unreadable object bytes (e.g. a part went missing) */
        return add_problem(r, o->id, "structure", "%s", local.message);
    if (st != NF_OK) {
        if (err) *err = local;
        return st;
    }
    if (sink.status != NF_OK) return nf_error_set(err, sink.status, "out of memory");
    if (found > WORD_REPORTS_PER_OBJECT)
        return add_problem(r, o->id, "words", "%llu more word problems not listed",
                           (unsigned long long)(found - WORD_REPORTS_PER_OBJECT));
    return NF_OK;
}

/* Bytes that belong to no object (alignment gaps, and the tail after the last object) carry no
 * meaning; the writer leaves them zero, and checking that they are makes a checksummed artifact
 * detect a change to any byte of its payload. */
static nf_status check_gap(nf_artifact *a, uint64_t from, uint64_t to, nf_verify_report *r, nf_error *err)
{
    uint8_t buf[4096];
    while (from < to) {
        size_t n = (to - from) < sizeof buf ? (size_t)(to - from) : sizeof buf;
        nf_error local;
        nf_status st = nf_artifact_read(a, from, buf, n, &local);
        if (st == NF_ERR_INVALID) return add_problem(r, NULL, "structure", "%s", local.message);
        if (st != NF_OK) {
            if (err) *err = local;
            return st;
        }
        for (size_t i = 0; i < n; i++)
            if (buf[i] != 0)
                return add_problem(r, NULL, "words",
                                   "payload byte %llu between objects is 0x%02x, expected 0x00",
                                   (unsigned long long)(from + i), buf[i]);
        from += n;
    }
    return NF_OK;
}

/* ---------------------------------------------------------------- checksums level */
static nf_status hash_object(nf_artifact *a, const nf_object *o, char out[33], nf_error *err)
{
    XXH3_state_t *state = XXH3_createState();
    uint8_t *buf = malloc(HASH_CHUNK);
    nf_status st = NF_OK;
    if (!state || !buf) {
        st = nf_error_set(err, NF_ERR_NOMEM, "out of memory");
        goto done;
    }
    XXH3_128bits_reset(state);
    for (uint64_t pos = 0; pos < o->bytes;) {
        size_t n = (o->bytes - pos) < HASH_CHUNK ? (size_t)(o->bytes - pos) : HASH_CHUNK;
        st = nf_artifact_read(a, o->offset + pos, buf, n, err);
        if (st != NF_OK) goto done;
        XXH3_128bits_update(state, buf, n);
        pos += n;
    }
    XXH128_hash_t h = XXH3_128bits_digest(state);
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)h.high64, (unsigned long long)h.low64);
done:
    XXH3_freeState(state);
    free(buf);
    return st;
}

/* design.md 4: xxh3-128 of the entry's first 32 + json_bytes bytes with the 32 digits of the
 * directory checksum replaced by '0'; the digits are found as the only occurrence of the quoted
 * value in the JSON text. */
static nf_status check_directory_checksum(nf_artifact *a, const char *want, nf_verify_report *r)
{
    size_t json_len = (size_t)nf_artifact_json_bytes(a);
    const uint8_t *json = nf_artifact_json_text(a);
    if (strlen(want) != 32)
        return add_problem(r, NULL, "checksums", "metadata.checksums.directory is not 32 hex digits");
    char needle[35];
    snprintf(needle, sizeof needle, "\"%s\"", want);
    size_t hits = 0, at = 0;
    for (size_t i = 0; i + 34 <= json_len; i++)
        if (json[i] == '"' && memcmp(json + i, needle, 34) == 0) {
            hits++;
            at = i + 1;
        }
    if (hits != 1)
        return add_problem(r, NULL, "checksums",
                           "the directory checksum %s occurs %zu times in the JSON text, expected once", want, hits);
    size_t total = NF_HEADER_BYTES + json_len;
    uint8_t *copy = malloc(total);
    if (!copy) return NF_ERR_NOMEM;
    memcpy(copy, nf_artifact_header(a), NF_HEADER_BYTES);
    memcpy(copy + NF_HEADER_BYTES, json, json_len);
    memset(copy + NF_HEADER_BYTES + at, '0', 32);
    char got[33];
    nf_xxh3_128_hex(copy, total, got);
    free(copy);
    r->checksums_checked++;
    if (strcmp(got, want) != 0)
        return add_problem(r, NULL, "checksums", "directory checksum is %s, metadata records %s", got, want);
    return NF_OK;
}

/* One recorded object checksum: the object (NULL when it does not exist) and the recorded value. */
typedef struct sum_entry {
    const char *id;
    json_t *value;
    const nf_object *o;
    bool hash; /* the object exists and the value is 32 characters: hashed by a task */
} sum_entry;

typedef struct sums_ctx {
    nf_artifact *a;
    const sum_entry *entries;
    unit *units;
} sums_ctx;

static void sum_task(void *ctx, size_t i)
{
    sums_ctx *c = ctx;
    unit *u = &c->units[i];
    if (c->entries[i].hash) u->status = hash_object(c->a, c->entries[i].o, u->digest, &u->err);
}

static nf_status check_checksums(nf_artifact *a, unsigned threads, nf_verify_report *r, nf_error *err)
{
    const json_t *root = nf_artifact_directory(a);
    json_t *meta = json_object_get(root, "metadata");
    json_t *sums = meta ? json_object_get(meta, "checksums") : NULL;
    if (!sums) return NF_OK;
    json_t *alg = json_object_get(sums, "algorithm");
    json_t *objs = json_object_get(sums, "objects");
    if (!json_is_object(sums) || !json_is_string(alg) || strcmp(json_string_value(alg), "xxh3-128") != 0 ||
        !json_is_object(objs))
        return add_problem(r, NULL, "checksums",
                           "metadata.checksums must be {\"algorithm\": \"xxh3-128\", \"objects\": {...}}");
    /* The objects are hashed as parallel tasks; the verdicts are then taken in the JSON's
     * order, as one thread would. */
    size_t count = json_object_size(objs), k = 0;
    sum_entry *entries = calloc(count ? count : 1, sizeof *entries);
    unit *units = calloc(count ? count : 1, sizeof *units);
    if (!entries || !units) {
        free(entries);
        free(units);
        return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    }
    const char *id;
    json_t *v;
    json_object_foreach(objs, id, v) {
        if (k == count) break;
        const nf_object *o = nf_artifact_find(a, id);
        entries[k] = (sum_entry){id, v, o, o && json_is_string(v) && strlen(json_string_value(v)) == 32};
        k++;
    }
    sums_ctx sc = {a, entries, units};
    run_tasks(threads, k, sum_task, &sc);
    nf_status st = NF_OK;
    for (size_t i = 0; st == NF_OK && i < k; i++) {
        const sum_entry *e = &entries[i];
        if (!e->o) {
            st = add_problem(r, e->id, "checksums", "metadata.checksums names an object that does not exist");
            continue;
        }
        if (!e->hash) {
            st = add_problem(r, e->id, "checksums", "checksum is not a string of 32 hex digits");
            continue;
        }
        if (units[i].status == NF_ERR_INVALID) {
            st = add_problem(r, e->id, "structure", "%s", units[i].err.message);
            continue;
        }
        if (units[i].status != NF_OK) {
            if (err) *err = units[i].err;
            st = units[i].status;
            break;
        }
        r->checksums_checked++;
        if (strcasecmp(units[i].digest, json_string_value(e->value)) != 0)
            st = add_problem(r, e->id, "checksums", "xxh3-128 of the object is %s, metadata records %s",
                             units[i].digest, json_string_value(e->value));
    }
    free(entries);
    free(units);
    if (st != NF_OK) return st;
    json_t *dir = json_object_get(sums, "directory");
    if (dir) {
        if (!json_is_string(dir))
            return add_problem(r, NULL, "checksums", "metadata.checksums.directory is not a string");
        return check_directory_checksum(a, json_string_value(dir), r);
    }
    return NF_OK;
}

/* ---------------------------------------------------------------- parallel units */
typedef struct words_ctx {
    nf_artifact *a;
    const nf_geometry *geo;
    const bool *ok;
    unit *units;
} words_ctx;

static void words_task(void *ctx, size_t i)
{
    words_ctx *c = ctx;
    unit *u = &c->units[i];
    u->report.valid = true;
    const nf_object *o = nf_artifact_object(c->a, i);
    if (c->ok[i] && o->kind == NF_OBJECT_TENSOR) u->status = check_words(c->a, o, &c->geo[i], &u->report, &u->err);
}

/* ---------------------------------------------------------------- driver */
static nf_status verify_open(nf_artifact *a, nf_verify_level level, unsigned threads, nf_verify_report *r,
                             nf_error *err)
{
    unit *units = NULL;
    /* Structure: every part, then every object. */
    bool parts_ok = true;
    for (size_t i = 1; i < nf_artifact_file_count(a); i++) {
        nf_error local;
        nf_status st = nf_artifact_open_part(a, i, &local);
        if (st == NF_ERR_INVALID) {
            NF_TRY(add_problem(r, NULL, "structure", "%s", local.message));
            parts_ok = false;
        } else if (st != NF_OK) {
            if (err) *err = local;
            return st;
        }
    }
    size_t n = nf_artifact_object_count(a);
    nf_geometry *geo = calloc(n ? n : 1, sizeof *geo);
    bool *ok = calloc(n ? n : 1, sizeof *ok);
    nf_status st = NF_OK;
    if (!geo || !ok) {
        st = nf_error_set(err, NF_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        const nf_object *o = nf_artifact_object(a, i);
        nf_error local;
        r->objects_checked++;
        if (nf_artifact_check_object(a, o, &geo[i], &local) != NF_OK) {
            if ((st = add_problem(r, o->id, "structure", "%s", local.message)) != NF_OK) goto done;
        } else {
            ok[i] = true;
        }
    }
    if (level < NF_VERIFY_WORDS || !parts_ok) goto done;

    /* The word checks of the tensors run as parallel tasks, each into its own report; the
     * gaps are checked here, and everything is merged in object order, as one thread would. */
    units = calloc(n ? n : 1, sizeof *units);
    if (!units) {
        st = nf_error_set(err, NF_ERR_NOMEM, "out of memory");
        goto done;
    }
    words_ctx wc = {a, geo, ok, units};
    run_tasks(threads, n, words_task, &wc);
    uint64_t prev_end = 0;
    for (size_t i = 0; i < n; i++) {
        const nf_object *o = nf_artifact_object(a, i);
        if ((st = check_gap(a, prev_end, o->offset, r, err)) != NF_OK) goto done;
        prev_end = o->offset + o->bytes; /* no overflow: the directory checks offset + bytes <= payload */
        if ((st = merge_report(r, &units[i].report)) != NF_OK) goto done;
        if ((st = units[i].status) != NF_OK) {
            if (err) *err = units[i].err;
            goto done;
        }
    }
    if ((st = check_gap(a, prev_end, nf_artifact_payload_bytes(a), r, err)) != NF_OK) goto done;
    if (level >= NF_VERIFY_CHECKSUMS) st = check_checksums(a, threads, r, err);
done:
    if (st == NF_ERR_NOMEM && err && err->status != NF_ERR_NOMEM) nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    for (size_t i = 0; units && i < n; i++) nf_verify_report_free(&units[i].report);
    free(units);
    free(geo);
    free(ok);
    return st;
}

static nf_status verify_path(const char *path, nf_verify_level level, unsigned threads, nf_verify_report *report,
                             nf_error *err)
{
    memset(report, 0, sizeof *report);
    report->valid = true;
    nf_artifact *a = NULL;
    nf_error local;
    nf_status st = nf_artifact_open(path, NF_READ_PREAD, &a, &local);
    if (st == NF_ERR_INVALID) {
        st = add_problem(report, NULL, "structure", "%s", local.message);
        return st == NF_OK ? NF_OK : nf_error_set(err, st, "out of memory");
    }
    if (st != NF_OK) {
        if (err) *err = local;
        return st;
    }
    st = verify_open(a, level, threads, report, err);
    nf_artifact_close(a);
    if (st != NF_OK) {
        nf_verify_report_free(report);
        return st;
    }
    return NF_OK;
}

nf_status nf_verify_artifact(const char *path, nf_verify_level level, nf_verify_report *report, nf_error *err)
{
    return verify_path(path, level, 1, report, err);
}

nf_status nf_verify_artifact_with(const char *path, const nf_verify_options *opt, nf_verify_report *report,
                                  nf_error *err)
{
    nf_verify_level level = opt && opt->level ? opt->level : NF_VERIFY_CHECKSUMS;
    return verify_path(path, level, resolve_threads(opt ? opt->threads : 0), report, err);
}
