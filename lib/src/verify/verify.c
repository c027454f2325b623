/* Artifact verification (design.md section 2, ninfer-verify): structure, then words, then
 * checksums.  Each level reports every problem it finds; a level that cannot run because the
 * one before it failed badly (no directory, unreadable parts) is skipped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

static nf_status check_checksums(nf_artifact *a, nf_verify_report *r, nf_error *err)
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
    const char *id;
    json_t *v;
    json_object_foreach(objs, id, v) {
        const nf_object *o = nf_artifact_find(a, id);
        if (!o) {
            NF_TRY(add_problem(r, id, "checksums", "metadata.checksums names an object that does not exist"));
            continue;
        }
        if (!json_is_string(v) || strlen(json_string_value(v)) != 32) {
            NF_TRY(add_problem(r, id, "checksums", "checksum is not a string of 32 hex digits"));
            continue;
        }
        char got[33];
        nf_error local;
        nf_status st = hash_object(a, o, got, &local);
        if (st == NF_ERR_INVALID) {
            NF_TRY(add_problem(r, id, "structure", "%s", local.message));
            continue;
        }
        if (st != NF_OK) {
            if (err) *err = local;
            return st;
        }
        r->checksums_checked++;
        if (strcasecmp(got, json_string_value(v)) != 0)
            NF_TRY(add_problem(r, id, "checksums", "xxh3-128 of the object is %s, metadata records %s", got,
                               json_string_value(v)));
    }
    json_t *dir = json_object_get(sums, "directory");
    if (dir) {
        if (!json_is_string(dir))
            return add_problem(r, NULL, "checksums", "metadata.checksums.directory is not a string");
        return check_directory_checksum(a, json_string_value(dir), r);
    }
    return NF_OK;
}

/* ---------------------------------------------------------------- driver */
static nf_status verify_open(nf_artifact *a, nf_verify_level level, nf_verify_report *r, nf_error *err)
{
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

    uint64_t prev_end = 0;
    for (size_t i = 0; i < n; i++) {
        const nf_object *o = nf_artifact_object(a, i);
        if ((st = check_gap(a, prev_end, o->offset, r, err)) != NF_OK) goto done;
        prev_end = o->offset + o->bytes; /* no overflow: the directory checks offset + bytes <= payload */
        if (ok[i] && o->kind == NF_OBJECT_TENSOR)
            if ((st = check_words(a, o, &geo[i], r, err)) != NF_OK) goto done;
    }
    if ((st = check_gap(a, prev_end, nf_artifact_payload_bytes(a), r, err)) != NF_OK) goto done;
    if (level >= NF_VERIFY_CHECKSUMS) st = check_checksums(a, r, err);
done:
    if (st == NF_ERR_NOMEM && err && err->status != NF_ERR_NOMEM) nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    free(geo);
    free(ok);
    return st;
}

nf_status nf_verify_artifact(const char *path, nf_verify_level level, nf_verify_report *report, nf_error *err)
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
    st = verify_open(a, level, report, err);
    nf_artifact_close(a);
    if (st != NF_OK) {
        nf_verify_report_free(report);
        return st;
    }
    return NF_OK;
}
