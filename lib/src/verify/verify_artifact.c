/* Artifact verification (docs/ninfer-verify.md): structure, then words, then
 * checksums.  Each level reports every problem it finds; a level that cannot run because the
 * one before it failed badly (no directory, unreadable parts) is skipped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <xxhash.h>

#include <ninfer/container.h>
#include <ninfer/error.h>
#include <ninfer/escape.h>
#include <ninfer/layout.h>
#include <ninfer/verify.h>

#include "common/checked.h"
#include "common/fail.h"
#include "common/pool.h"
#include "container/container_module.h"

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

nf_status nf_verify_report_add(nf_verify_report *r, const char *object, const char *check, const char *fmt, ...)
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
/* Objects are checked on the pool (common/pool.h), each once, in any order; every task writes
 * only its own result slot and never fails the loop, and the callers merge the slots in task
 * order, so what they report does not depend on the thread count. */

/* One object's word check (or one checksum's hash): its result slot. */
typedef struct unit {
    nf_verify_report report; /* problems found, in the order one thread finds them */
    nf_status status;        /* system error (then err) */
    nf_error err;
    char digest[33]; /* checksums: the object's xxh3-128 */
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
    if (s->status == NF_OK) s->status = nf_verify_report_add(s->report, s->object, "words", "%s", message);
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
        return nf_verify_report_add(r, o->id, "structure", "%s", local.message);
    if (st != NF_OK) {
        if (err) *err = local;
        return st;
    }
    if (sink.status != NF_OK) return nf_error_set(err, sink.status, "out of memory");
    if (found > WORD_REPORTS_PER_OBJECT)
        return nf_verify_report_add(r, o->id, "words", "%llu more word problems not listed",
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
        if (st == NF_ERR_INVALID) return nf_verify_report_add(r, NULL, "structure", "%s", local.message);
        if (st != NF_OK) {
            if (err) *err = local;
            return st;
        }
        for (size_t i = 0; i < n; i++)
            if (buf[i] != 0)
                return nf_verify_report_add(r, NULL, "words",
                                            "payload byte %llu between objects is 0x%02x, expected 0x00",
                                            (unsigned long long)(from + i), buf[i]);
        from += n;
    }
    return NF_OK;
}

/* The bytes of the file set outside the header, the JSON text and the payload: the gap from
 * the end of the JSON to the entry's payload start (docs/artifact.md 2) and bytes [32, 4096) of
 * every continuation header (2.4).  The spec has the writer leave them zero and readers ignore
 * them (2.8 item 7), so, like the gaps between objects, they are checked at the words level:
 * this is what lets checksums over the objects and the directory cover every byte. */
static nf_status check_zero_bytes(nf_artifact *a, size_t file, uint64_t from, uint64_t to, nf_verify_report *r,
                                  nf_error *err)
{
    uint8_t buf[4096];
    while (from < to) {
        size_t n = (to - from) < sizeof buf ? (size_t)(to - from) : sizeof buf;
        nf_error local;
        nf_status st = nf_artifact_read_file(a, file, from, buf, n, &local);
        if (st == NF_ERR_INVALID) return nf_verify_report_add(r, NULL, "structure", "%s", local.message);
        if (st != NF_OK) {
            if (err) *err = local;
            return st;
        }
        for (size_t i = 0; i < n; i++) {
            if (buf[i] == 0) continue;
            if (file == 0)
                return nf_verify_report_add(
                    r, NULL, "words",
                    "entry file %s: byte %llu (between the JSON directory and the payload) is 0x%02x, "
                    "expected 0x00",
                    nf_esc(nf_artifact_path(a)).s, (unsigned long long)(from + i), buf[i]);
            return nf_verify_report_add(
                r, NULL, "words",
                "part file %s: byte %llu (continuation header bytes [32, 4096)) is 0x%02x, expected "
                "0x00",
                nf_esc(nf_artifact_file(a, file)->path).s, (unsigned long long)(from + i), buf[i]);
        }
        from += n;
    }
    return NF_OK;
}

static nf_status check_file_padding(nf_artifact *a, nf_verify_report *r, nf_error *err)
{
    NF_TRY(check_zero_bytes(a, 0, NF_HEADER_BYTES + nf_artifact_json_bytes(a), nf_artifact_entry_payload_start(a), r,
                            err));
    for (size_t i = 1; i < nf_artifact_file_count(a); i++)
        NF_TRY(check_zero_bytes(a, i, NF_HEADER_BYTES, NF_PAGE_BYTES, r, err));
    return NF_OK;
}

/* ---------------------------------------------------------------- checksums level */
static nf_status hash_object(nf_artifact *a, const nf_object *o, char out[33], nf_error *err)
{
    XXH3_state_t *state = XXH3_createState();
    /* no bigger than the object: most objects are far smaller than a chunk, and a chunk-sized
     * block per object costs an mmap and its shadow under ASan (test_verify_byteflip) */
    size_t cap = o->bytes < HASH_CHUNK ? (size_t)o->bytes : HASH_CHUNK;
    uint8_t *buf = malloc(cap ? cap : 1);
    nf_status st = NF_OK;
    if (!state || !buf) {
        st = nf_common_nomem(err);
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

/* docs/artifact.md 8: xxh3-128 of the entry's first 32 + json_bytes bytes with the 32 digits of the
 * directory checksum replaced by '0'; the digits are found as the only occurrence of the quoted
 * value in the JSON text. */
static nf_status check_directory_checksum(nf_artifact *a, const char *want, nf_verify_report *r)
{
    size_t json_len = (size_t)nf_artifact_json_bytes(a);
    const uint8_t *json = nf_artifact_json_text(a);
    char needle[35];
    snprintf(needle, sizeof needle, "\"%s\"", want);
    size_t hits = 0, at = 0;
    for (size_t i = 0; i + 34 <= json_len; i++)
        if (json[i] == '"' && memcmp(json + i, needle, 34) == 0) {
            hits++;
            at = i + 1;
        }
    if (hits != 1)
        return nf_verify_report_add(r, NULL, "checksums",
                                    "the directory checksum %s occurs %zu times in the JSON text, expected once", want,
                                    hits);
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
        return nf_verify_report_add(r, NULL, "checksums", "directory checksum is %s, metadata records %s", got, want);
    return NF_OK;
}

/* One recorded object checksum: the object (NULL when it does not exist) and the recorded value. */
typedef struct sum_entry {
    const char *id;
    json_t *value;
    const nf_object *o;
    bool hash; /* the object exists and the value is a canonical digest: hashed by a task */
} sum_entry;

typedef struct sums_ctx {
    nf_artifact *a;
    const sum_entry *entries;
    unit *units;
} sums_ctx;

static nf_status sum_task(void *ctx, size_t i, void **local, nf_error *err)
{
    (void)local;
    (void)err;
    sums_ctx *c = ctx;
    unit *u = &c->units[i];
    if (c->entries[i].hash) u->status = hash_object(c->a, c->entries[i].o, u->digest, &u->err);
    return NF_OK;
}

static const char *json_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

/* docs/decisions.md D17: the canonical form is 32 lowercase hex digits. */
static bool is_digest(const json_t *v)
{
    if (!json_is_string(v) || json_string_length(v) != 32) return false;
    const char *s = json_string_value(v);
    for (size_t i = 0; i < 32; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
    return true;
}

/* A digest as it may be quoted in a message: at most 40 printable ASCII characters. */
static void quote_digest(const json_t *v, char out[48])
{
    const char *s = json_string_value(v);
    size_t n = json_string_length(v), k = 0;
    for (size_t i = 0; i < n && k < 40; i++) out[k++] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
    if (n > 40) out[k++] = '.', out[k++] = '.', out[k++] = '.';
    out[k] = '\0';
}

/* metadata.checksums is our own record (docs/artifact.md 8), so its schema is closed even though
 * metadata itself is open: {"algorithm": "xxh3-128", "objects": {ID: DIGEST}, "directory":
 * DIGEST}, DIGEST = 32 lowercase hex digits; objects and directory each optional unless
 * `require` (--require-checksums), which also wants a digest for every object.  A one-byte change
 * to a member name thus turns into an unknown member, not into a silently skipped checksum. */
static nf_status check_checksums(nf_artifact *a, unsigned threads, bool require, nf_verify_report *r, nf_error *err)
{
    const json_t *root = nf_artifact_directory(a);
    json_t *meta = json_object_get(root, "metadata");
    json_t *sums = meta ? json_object_get(meta, "checksums") : NULL;
    if (!sums) {
        if (!require) return NF_OK;
        return nf_verify_report_add(r, NULL, "checksums",
                                    "metadata.checksums is absent: the artifact records no checksums (required by "
                                    "--require-checksums)");
    }
    if (!json_is_object(sums))
        return nf_verify_report_add(r, NULL, "checksums",
                                    "metadata.checksums is %s, expected an object {\"algorithm\": \"xxh3-128\", "
                                    "\"objects\": {...}, \"directory\": \"...\"}",
                                    json_type_name(sums));
    const char *key;
    json_t *v;
    json_object_foreach(sums, key, v)
    {
        if (strcmp(key, "algorithm") != 0 && strcmp(key, "objects") != 0 && strcmp(key, "directory") != 0)
            NF_TRY(nf_verify_report_add(
                r, NULL, "checksums",
                "metadata.checksums has an unknown member '%s' (its members are algorithm, objects "
                "and directory)",
                nf_esc(key).s));
    }
    json_t *alg = json_object_get(sums, "algorithm");
    json_t *objs = json_object_get(sums, "objects");
    json_t *dir = json_object_get(sums, "directory");
    bool alg_ok = false;
    if (!alg)
        NF_TRY(nf_verify_report_add(r, NULL, "checksums",
                                    "metadata.checksums.algorithm is missing (expected \"xxh3-128\")"));
    else if (!json_is_string(alg))
        NF_TRY(nf_verify_report_add(r, NULL, "checksums",
                                    "metadata.checksums.algorithm is %s, expected the string \"xxh3-128\"",
                                    json_type_name(alg)));
    else if (strcmp(json_string_value(alg), "xxh3-128") != 0)
        NF_TRY(nf_verify_report_add(r, NULL, "checksums",
                                    "metadata.checksums.algorithm '%s' is not supported (only xxh3-128)",
                                    nf_esc(json_string_value(alg)).s));
    else alg_ok = true;
    if (objs && !json_is_object(objs)) {
        NF_TRY(nf_verify_report_add(r, NULL, "checksums",
                                    "metadata.checksums.objects is %s, expected an object {ID: digest}",
                                    json_type_name(objs)));
        objs = NULL;
    } else if (!objs && require) {
        NF_TRY(nf_verify_report_add(r, NULL, "checksums",
                                    "metadata.checksums.objects is absent: no object's bytes are covered (required by "
                                    "--require-checksums)"));
    }

    /* The objects are hashed as parallel tasks; the verdicts are then taken in the JSON's
     * order, as one thread would. */
    size_t count = objs ? json_object_size(objs) : 0, k = 0;
    sum_entry *entries = calloc(count ? count : 1, sizeof *entries);
    unit *units = calloc(count ? count : 1, sizeof *units);
    if (!entries || !units) {
        free(entries);
        free(units);
        return nf_common_nomem(err);
    }
    const char *id;
    if (objs) {
        json_object_foreach(objs, id, v)
        {
            if (k == count) break;
            const nf_object *o = nf_artifact_find(a, id);
            entries[k] = (sum_entry){id, v, o, alg_ok && o && is_digest(v)};
            k++;
        }
    }
    sums_ctx sc = {a, entries, units};
    (void)nf_pool_for(threads, k, sum_task, NULL, &sc, NULL);
    nf_status st = NF_OK;
    for (size_t i = 0; st == NF_OK && i < k; i++) {
        const sum_entry *e = &entries[i];
        char q[48];
        if (!e->o) {
            st = nf_verify_report_add(r, NULL, "checksums",
                                      "metadata.checksums.objects names '%s', which is not an object of the artifact",
                                      nf_esc(e->id).s);
            continue;
        }
        if (!json_is_string(e->value)) {
            st = nf_verify_report_add(r, e->id, "checksums",
                                      "its digest in metadata.checksums.objects is %s, expected a string "
                                      "of 32 lowercase hex digits",
                                      json_type_name(e->value));
            continue;
        }
        if (!is_digest(e->value)) {
            quote_digest(e->value, q);
            st = nf_verify_report_add(r, e->id, "checksums",
                                      "its digest '%s' in metadata.checksums.objects is not 32 lowercase hex digits",
                                      q);
            continue;
        }
        if (!e->hash) continue; /* the algorithm is unknown: already reported */
        if (units[i].status == NF_ERR_INVALID) {
            st = nf_verify_report_add(r, e->id, "structure", "%s", units[i].err.message);
            continue;
        }
        if (units[i].status != NF_OK) {
            if (err) *err = units[i].err;
            st = units[i].status;
            break;
        }
        r->checksums_checked++;
        if (strcmp(units[i].digest, json_string_value(e->value)) != 0)
            st = nf_verify_report_add(r, e->id, "checksums", "xxh3-128 of the object is %s, metadata records %s",
                                      units[i].digest, json_string_value(e->value));
    }
    free(entries);
    free(units);
    if (st != NF_OK) return st;
    if (objs && require)
        for (size_t i = 0; i < nf_artifact_object_count(a); i++) {
            const nf_object *o = nf_artifact_object(a, i);
            if (!json_object_get(objs, o->id))
                NF_TRY(
                    nf_verify_report_add(r, o->id, "checksums",
                                         "no digest in metadata.checksums.objects: the object's bytes are not covered "
                                         "(required by --require-checksums)"));
        }
    if (!dir) {
        if (!require) return NF_OK;
        return nf_verify_report_add(
            r, NULL, "checksums",
            "metadata.checksums.directory is absent: the header and JSON directory are not covered "
            "(required by --require-checksums)");
    }
    if (!json_is_string(dir))
        return nf_verify_report_add(r, NULL, "checksums",
                                    "metadata.checksums.directory is %s, expected a string of 32 "
                                    "lowercase hex digits",
                                    json_type_name(dir));
    if (!is_digest(dir)) {
        char q[48];
        quote_digest(dir, q);
        return nf_verify_report_add(r, NULL, "checksums",
                                    "metadata.checksums.directory '%s' is not 32 lowercase hex digits", q);
    }
    return alg_ok ? check_directory_checksum(a, json_string_value(dir), r) : NF_OK;
}

/* ---------------------------------------------------------------- parallel units */
typedef struct words_ctx {
    nf_artifact *a;
    const nf_geometry *geo;
    const bool *ok;
    unit *units;
} words_ctx;

static nf_status words_task(void *ctx, size_t i, void **local, nf_error *err)
{
    (void)local;
    (void)err;
    words_ctx *c = ctx;
    unit *u = &c->units[i];
    u->report.valid = true;
    const nf_object *o = nf_artifact_object(c->a, i);
    if (c->ok[i] && o->kind == NF_OBJECT_TENSOR) u->status = check_words(c->a, o, &c->geo[i], &u->report, &u->err);
    return NF_OK;
}

/* ---------------------------------------------------------------- driver */
typedef struct run_opts {
    nf_verify_level level;
    unsigned threads;
    bool require_checksums;
} run_opts;

static nf_status verify_open(nf_artifact *a, const run_opts *ro, nf_verify_report *r, nf_error *err)
{
    nf_verify_level level = ro->level;
    unsigned threads = ro->threads;
    unit *units = NULL;
    /* Structure: every part, then every object. */
    bool parts_ok = true;
    for (size_t i = 1; i < nf_artifact_file_count(a); i++) {
        nf_error local;
        nf_status st = nf_artifact_open_part(a, i, &local);
        if (st == NF_ERR_INVALID) {
            NF_TRY(nf_verify_report_add(r, NULL, "structure", "%s", local.message));
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
        st = nf_common_nomem(err);
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        const nf_object *o = nf_artifact_object(a, i);
        nf_error local;
        r->objects_checked++;
        if (nf_artifact_check_object(a, o, &geo[i], &local) != NF_OK) {
            if ((st = nf_verify_report_add(r, o->id, "structure", "%s", local.message)) != NF_OK) goto done;
        } else {
            ok[i] = true;
        }
    }
    if (level < NF_VERIFY_WORDS || !parts_ok) goto done;

    /* The word checks of the tensors run as parallel tasks, each into its own report; the
     * gaps are checked here, and everything is merged in object order, as one thread would. */
    if ((st = check_file_padding(a, r, err)) != NF_OK) goto done;
    units = calloc(n ? n : 1, sizeof *units);
    if (!units) {
        st = nf_common_nomem(err);
        goto done;
    }
    words_ctx wc = {a, geo, ok, units};
    (void)nf_pool_for(threads, n, words_task, NULL, &wc, NULL);
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
    if (level >= NF_VERIFY_CHECKSUMS) st = check_checksums(a, threads, ro->require_checksums, r, err);
done:
    if (st == NF_ERR_NOMEM && err && err->status != NF_ERR_NOMEM) nf_common_nomem(err);
    for (size_t i = 0; units && i < n; i++) nf_verify_report_free(&units[i].report);
    free(units);
    free(geo);
    free(ok);
    return st;
}

static nf_status verify_path(const char *path, const run_opts *ro, nf_verify_report *report, nf_error *err)
{
    memset(report, 0, sizeof *report);
    report->valid = true;
    if (ro->require_checksums && ro->level < NF_VERIFY_CHECKSUMS)
        return nf_error_set(err, NF_ERR_USAGE, "require_checksums needs the checksums level (not --quick)");
    nf_artifact *a = NULL;
    nf_error local;
    nf_status st = nf_artifact_open(path, NF_READ_PREAD, &a, &local);
    if (st == NF_ERR_INVALID) {
        st = nf_verify_report_add(report, NULL, "structure", "%s", local.message);
        return st == NF_OK ? NF_OK : nf_error_set(err, st, "out of memory");
    }
    if (st != NF_OK) {
        if (err) *err = local;
        return st;
    }
    st = verify_open(a, ro, report, err);
    nf_artifact_close(a);
    if (st != NF_OK) {
        nf_verify_report_free(report);
        return st;
    }
    return NF_OK;
}

nf_status nf_verify_artifact(const char *path, nf_verify_level level, nf_verify_report *report, nf_error *err)
{
    run_opts ro = {level, 1, false};
    return verify_path(path, &ro, report, err);
}

nf_status nf_verify_artifact_with(const char *path, const nf_verify_options *opt, nf_verify_report *report,
                                  nf_error *err)
{
    run_opts ro = {opt && opt->level ? opt->level : NF_VERIFY_CHECKSUMS, nf_pool_threads(opt ? opt->threads : 0),
                   opt ? opt->require_checksums : false};
    return verify_path(path, &ro, report, err);
}
