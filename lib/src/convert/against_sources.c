/* verify --against, first step (docs/provenance.md, "Checking a source"): the checkpoint given
 * is compared file by file with provenance.sources.base.files -- names, sizes, then SHA-256 --
 * so that a file that is not the one converted is named before any tensor is re-derived.
 *
 * Only the files SOURCE itself opens (its shards, its index, its companions) are read, and
 * they are matched with the records by name: a name recorded in the artifact is never opened
 * (docs/security.md 1.3).  The records are the artifact's data: each one is checked (a path,
 * bytes, a 64-digit SHA-256) before it is used. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ninfer/escape.h>
#include <ninfer/ninfer.h>

#include "common/io.h"
#include "common/sha256_file.h"
#include "common/strset.h"
#include "convert/convert_impl.h"

#define MP(path) nf_io_msg_path((path), (char[NF_IO_MSG_PATH + 1]){0})

typedef struct recorded_file {
    const char *name;
    uint64_t bytes;
    const char *sha256; /* NULL: sizes only (--no-source-digests) */
    bool seen;
} recorded_file;

static bool lower_hex64(const char *s)
{
    if (strlen(s) != NF_SHA256_HEX) return false;
    for (size_t i = 0; i < NF_SHA256_HEX; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
    return true;
}

/* Record i of files, checked: false (and a problem) for one that is not a file record. */
static bool take_record(const json_t *f, size_t i, recorded_file *out, nf_convert_problem_fn problem, void *ctx)
{
    const json_t *path = json_object_get(f, "path"), *bytes = json_object_get(f, "bytes"),
                 *sha = json_object_get(f, "sha256");
    bool ok = json_is_string(path) && json_string_length(path) > 0 && json_is_integer(bytes) &&
              json_integer_value(bytes) >= 0 && (!sha || (json_is_string(sha) && lower_hex64(json_string_value(sha))));
    if (!ok) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "provenance.sources.base.files[%zu] is not a file record (path, bytes and a SHA-256 of 64 "
                 "lowercase hex digits)",
                 i);
        problem(ctx, NULL, msg);
        return false;
    }
    *out = (recorded_file){json_string_value(path), (uint64_t)json_integer_value(bytes),
                           sha ? json_string_value(sha) : NULL, false};
    return true;
}

/* One of SOURCE's files against its record. */
static nf_status compare_file(recorded_file *rec, const char *path, volatile int *cancel, nf_convert_problem_fn problem,
                              void *ctx, bool *equal, nf_error *err)
{
    char msg[2 * NF_ERROR_MESSAGE_MAX]; /* cut to the report's size by the problem's sink */
    struct stat sb;
    *equal = false;
    if (stat(path, &sb) != 0) return nf_error_errno(err, errno, "%s", MP(path));
    if ((uint64_t)sb.st_size != rec->bytes) {
        snprintf(msg, sizeof msg, "source file %s: %llu bytes, the artifact was made from one of %llu bytes",
                 nf_esc(rec->name).s, (unsigned long long)sb.st_size, (unsigned long long)rec->bytes);
        problem(ctx, NULL, msg);
        return NF_OK;
    }
    if (!rec->sha256) return NF_OK;
    char hex[NF_SHA256_HEX + 1];
    uint64_t n = 0;
    NF_TRY(nf_sha256_file(path, MP(path), UINT64_MAX, NULL, cancel, &n, hex, err));
    if (strcmp(hex, rec->sha256) != 0) {
        snprintf(msg, sizeof msg,
                 "source file %s differs from the one the artifact was made from: SHA-256 %s, recorded %s",
                 nf_esc(rec->name).s, hex, rec->sha256);
        problem(ctx, NULL, msg);
        return NF_OK;
    }
    *equal = true;
    return NF_OK;
}

/* SOURCE's files as the conversion lists them (source_digests.c): shards, index, companions. */
static const char *source_file(const nf_source *s, size_t k)
{
    size_t nf = nf_source_file_count(s);
    if (k < nf) return nf_source_file_path(s, k);
    if (k == nf) return nf_source_index_path(s);
    const char *cname = NULL;
    return nf_source_companion_at(s, k - nf - 1, &cname);
}

nf_status nf_convert_against_files(nf_artifact *a, const char *source, volatile int *cancel,
                                   nf_convert_problem_fn problem, void *ctx, int *verdict, size_t *checked,
                                   size_t *unrecorded, nf_error *err)
{
    *verdict = -1;
    *checked = *unrecorded = 0;
    const json_t *prov = json_object_get(nf_artifact_directory(a), "provenance");
    const json_t *base = json_object_get(json_object_get(prov, "sources"), "base");
    const json_t *files = json_object_get(base, "files");
    if (!json_is_array(files)) return NF_OK; /* an artifact made before sizes were recorded */
    size_t n = json_array_size(files);
    recorded_file *rec = calloc(n ? n : 1, sizeof *rec);
    if (!rec) return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    nf_strset names = {0};
    bool digests = false, bad = false;
    nf_status st = NF_OK;
    for (size_t i = 0; st == NF_OK && i < n; i++) {
        if (!take_record(json_array_get(files, i), i, &rec[i], problem, ctx)) {
            bad = true;
            continue;
        }
        digests = digests || rec[i].sha256;
        int ins = nf_strset_insert(&names, rec[i].name, NULL, i, NULL);
        if (ins < 0) st = nf_error_set(err, NF_ERR_NOMEM, "out of memory");
        if (ins == 0) {
            problem(ctx, NULL, "provenance.sources.base.files names one file twice");
            bad = true;
        }
    }
    nf_source *s = NULL;
    char *root = NULL;
    /* a checkpoint that cannot be opened is the re-derivation's to report */
    if (st == NF_OK && !bad && nf_source_open(source, &s, NULL) == NF_OK) {
        root = nf_convert_digests_root(source);
        if (!root) st = nf_error_set(err, NF_ERR_NOMEM, "out of memory");
        size_t total = nf_source_file_count(s) + 1 + nf_source_companion_count(s);
        for (size_t k = 0; st == NF_OK && k < total; k++) {
            const char *path = source_file(s, k);
            if (!path) continue;
            char *name = nf_convert_digests_name(root, path);
            size_t i = 0;
            if (!name) st = nf_error_set(err, NF_ERR_NOMEM, "out of memory");
            else if (!nf_strset_find(&names, name, NULL, &i)) ++*unrecorded;
            else if (!rec[i].seen) {
                bool equal = false;
                rec[i].seen = true;
                st = compare_file(&rec[i], path, cancel, problem, ctx, &equal, err);
                if (equal) ++*checked;
                else bad = true;
            }
            free(name);
        }
        for (size_t i = 0; st == NF_OK && i < n; i++) {
            if (rec[i].seen) continue;
            char msg[2 * NF_ERROR_MESSAGE_MAX]; /* cut to the report's size by the problem's sink */
            snprintf(msg, sizeof msg, "source file %s: the artifact was made from it, %s has none",
                     nf_esc(rec[i].name).s, nf_esc(source).s);
            problem(ctx, NULL, msg);
            bad = true;
        }
        if (st == NF_OK && digests) *verdict = bad ? 0 : 1;
    } else if (st == NF_OK && bad && digests) {
        *verdict = 0;
    }
    free(root);
    nf_source_close(s);
    nf_strset_free(&names);
    free(rec);
    return st;
}
