/* Reading a scale-out plan as untrusted JSON (nf_scaleout_open) and rebuilding the conversion
 * from its data after every input is found unchanged under the allowed roots
 * (nf_scaleout_rebuild; scaleout_impl.h). */
#define _XOPEN_SOURCE 700 /* realpath (XSI) */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ninfer/escape.h>

#include "common/buf.h"
#include "common/hex.h"
#include "common/io.h"
#include "common/json_prescan.h"
#include "common/json_walk.h"
#include "common/strset.h"
#include "container/container_module.h"
#include "convert/convert_impl.h"
#include "outputs/out_names.h"
#include "convert/scaleout_impl.h"
#include "outputs/out_whole.h"

/* ---------------------------------------------------------------- reading the plan
 * The plan's text is judged whole by jansson's rules a record at a time and then walked member
 * by member (common/json_walk.h), so that its largest member, "objects" (10^5 records with their
 * source ranges, most of the text), is never held as a tree: a task and the assembler rebuild
 * those records from the plan itself, and the records are for people and schedulers.  Each
 * file's list of object ids is kept as one block of text, not as JSON strings.  What is refused
 * is named as jansson names it for the whole text: byte, line, column and reason. */
#define PLAN_PIECE ((size_t)64 << 10) /* values of at most this many bytes are parsed whole */

typedef struct plan_reader {
    const char *text;
    size_t len;
    nf_buf ids, index;       /* the ids of files[].objects, and an id_run per file */
    size_t bad_file, bad_id; /* the first file without a list of ids, or with a non-id in it */
} plan_reader;

/* One file record: its ids into r->ids (the first problem noted), the record kept without them. */
static bool take_ids(plan_reader *r, json_t *file, size_t i)
{
    id_run run = {r->ids.len, 0};
    json_t *objs = json_object_get(file, "objects");
    if (!json_is_array(objs) && r->bad_file == SIZE_MAX) r->bad_file = i;
    for (size_t k = 0; json_is_array(objs) && k < json_array_size(objs); k++) {
        const char *id = json_string_value(json_array_get(objs, k));
        if (!id) {
            if (r->bad_file == SIZE_MAX) {
                r->bad_file = i;
                r->bad_id = k;
            }
            break;
        }
        if (!nf_buf_append(&r->ids, id, strlen(id) + 1)) return false;
        run.n++;
    }
    json_object_del(file, "objects");
    return nf_buf_append(&r->index, &run, sizeof run);
}

/* A value of the (valid) text as a tree: NULL only without memory. */
static json_t *value_of(const plan_reader *r, nf_jw_span v)
{
    json_error_t je;
    return nf_jw_parse(r->text, r->len, v, JSON_REJECT_DUPLICATES, &je);
}

/* "files": each record read on its own, its ids taken out (NULL: no memory). */
static json_t *read_files(plan_reader *r, nf_jw_span v)
{
    if (r->text[v.at] != '[') return value_of(r, v);
    json_t *files = json_array();
    nf_jw_items it;
    nf_jw_span key, value;
    nf_jw_items_open(&it, r->text, v.end, v.at);
    for (size_t i = 0; files && nf_jw_items_next(&it, &key, &value) == 1; i++) {
        json_t *file = value_of(r, value);
        if (!file || !take_ids(r, file, i) || json_array_append_new(files, file) != 0) {
            json_decref(files);
            files = NULL;
        }
    }
    return files;
}

/* The plan file's root object (without "objects"), s->ids and s->file_ids. */
static nf_status load_plan(nf_scaleout *s, const char *path, nf_error *err)
{
    char *text = NULL;
    size_t len = 0;
    NF_TRY(nf_convert_scaleout_slurp(path, PLAN_MAX_BYTES, &text, &len, err));
    nf_status st = nf_json_prescan_check(MP(path), text, len, &nf_convert_scaleout_json_caps, "a plan or a receipt", "",
                                         err);
    plan_reader r = {.text = text, .len = len, .bad_file = SIZE_MAX, .bad_id = SIZE_MAX};
    size_t at = nf_jw_space(text, len, 0);
    json_error_t je;
    if (st == NF_OK && (at == len || text[at] != '{')) {
        /* not an object: what jansson says of the whole text (a syntax error, or another value) */
        json_t *v = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
        st = v ? nf_error_set(err, NF_ERR_INVALID, "%s: not a JSON object", MP(path))
               : nf_json_syntax_error(err, MP(path), &je);
        json_decref(v);
    } else if (st == NF_OK && !nf_jw_validate(text, len, JSON_REJECT_DUPLICATES, PLAN_PIECE, &je)) {
        st = json_error_code(&je) == json_error_out_of_memory ? nf_convert_scaleout_nomem_reading(path, err)
                                                              : nf_json_syntax_error(err, MP(path), &je);
    }
    json_t *root = st == NF_OK ? json_object() : NULL;
    if (st == NF_OK && !root) st = nf_convert_scaleout_nomem_reading(path, err);
    nf_jw_items it;
    nf_jw_span key, value;
    if (st == NF_OK) nf_jw_items_open(&it, text, len, at);
    while (st == NF_OK && nf_jw_items_next(&it, &key, &value) == 1) {
        json_t *k = value_of(&r, key), *v = NULL;
        const char *name = json_string_value(k);
        if (name && strcmp(name, "objects") == 0) { /* (judged above; not kept) */
            json_decref(k);
            continue;
        }
        if (name) v = strcmp(name, "files") == 0 ? read_files(&r, value) : value_of(&r, value);
        if (!v || json_object_set_new(root, name, v) != 0) st = nf_convert_scaleout_nomem_reading(path, err);
        json_decref(k);
    }
    if (st == NF_OK && r.bad_file != SIZE_MAX)
        st = r.bad_id == SIZE_MAX
                 ? nf_error_set(err, NF_ERR_INVALID, "%s: files[%zu] has no list of objects", MP(path), r.bad_file)
                 : nf_error_set(err, NF_ERR_INVALID, "%s: files[%zu].objects[%zu] is not an object id", MP(path),
                                r.bad_file, r.bad_id);
    free(text);
    if (st != NF_OK) {
        json_decref(root);
        nf_buf_free(&r.ids);
        nf_buf_free(&r.index);
        return st;
    }
    s->root = root;
    /* (the block grew by doubling: its last half may be unused) */
    s->ids = r.ids.len ? realloc(r.ids.data, r.ids.len) : NULL;
    if (!s->ids) s->ids = r.ids.data;
    s->file_ids = (id_run *)r.index.data;
    return NF_OK;
}

/* The XXH3-128 of the plan's "inputs" as compact JSON with sorted keys (one text for one list,
 * however the file lays it out): with the fingerprint, what a receipt is bound to -- the plan made
 * again after a source changed has the same fingerprint and other inputs (docs/scale-out.md,
 * "What a receipt binds"). */
static nf_status inputs_digest(const json_t *inputs, const char *path, char out[33], nf_error *err)
{
    size_t len = 0;
    char *text = nf_jw_dump(inputs, JSON_COMPACT | JSON_SORT_KEYS, 0, &len);
    if (!text) return nf_convert_scaleout_nomem_reading(path, err);
    nf_xxh3_128_hex(text, len, out);
    free(text);
    return NF_OK;
}

/* An unknown member of obj (whose place in the plan is `where`) named, or NF_OK: a plan is
 * untrusted data, and a member this version does not write is a plan of another version or an
 * edited one, never ignored. */
static nf_status only_known(const json_t *obj, const char *where, const char *const *known, const char *path,
                            nf_error *err)
{
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        size_t i = 0;
        while (known[i] && strcmp(known[i], key) != 0) i++;
        if (!known[i])
            return nf_error_set(err, NF_ERR_INVALID,
                                "%s: %s%s'%s': unknown member (a plan of another version, or "
                                "edited)",
                                MP(path), where, *where ? "." : "", nf_esc(key).s);
    }
    return NF_OK;
}

/* The plan's members, each of its type, with nothing else beside them ("objects" was judged and
 * left out by load_plan; files and tasks are checked where they are read). */
static nf_status check_members(const json_t *r, const char *path, nf_error *err)
{
    static const char *const top[] = {"ninfer_plan", "output", "artifact_id", "fingerprint", "cwd",        "conversion",
                                      "inputs",      "files",  "tasks",       "budget",      "provenance", NULL};
    static const char *const conversion[] = {"recipe", "options", "method_programs", NULL};
    static const char *const options[] = {"max_file_bytes", "force", "report", NULL};
    static const char *const input[] = {"path", "bytes", "head", "tail", NULL};
    NF_TRY(only_known(r, "", top, path, err));
    const json_t *c = json_object_get(r, "conversion"), *o = json_object_get(c, "options");
    NF_TRY(only_known(c, "conversion", conversion, path, err));
    if (!json_is_object(json_object_get(c, "recipe")))
        return nf_error_set(err, NF_ERR_INVALID, "%s: conversion.recipe: not an object", MP(path));
    if (!json_is_object(o)) return nf_error_set(err, NF_ERR_INVALID, "%s: conversion.options: not an object", MP(path));
    NF_TRY(only_known(o, "conversion.options", options, path, err));
    const json_t *mp = json_object_get(c, "method_programs");
    for (size_t i = 0; mp && i < json_array_size(mp) + !json_is_array(mp); i++) {
        const json_t *e = json_array_get(mp, i);
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *digest = json_string_value(json_object_get(e, "digest"));
        if (!json_is_array(mp) || json_object_size(e) != 2 || !name || !digest || strlen(digest) != 64 ||
            nf_method_program_check_name(name, NULL) != NF_OK)
            return nf_error_set(err, NF_ERR_INVALID,
                                "%s: conversion.method_programs: not a list of {\"name\": a method program's name, "
                                "\"digest\": 64 hex digits}",
                                MP(path));
    }
    const json_t *mfb = json_object_get(o, "max_file_bytes");
    if (!json_is_null(mfb) && !(json_is_integer(mfb) && json_integer_value(mfb) >= 0))
        return nf_error_set(err, NF_ERR_INVALID, "%s: conversion.options.max_file_bytes: neither a byte count nor null",
                            MP(path));
    if (!json_is_boolean(json_object_get(o, "force")) || !json_is_boolean(json_object_get(o, "report")))
        return nf_error_set(err, NF_ERR_INVALID, "%s: conversion.options: force and report must be true or false",
                            MP(path));
    const json_t *inputs = json_object_get(r, "inputs");
    for (size_t i = 0; i < json_array_size(inputs); i++) {
        const json_t *in = json_array_get(inputs, i);
        uint64_t bytes;
        char where[48];
        snprintf(where, sizeof where, "inputs[%zu]", i);
        if (!json_is_object(in) || !nf_convert_scaleout_str_member(in, "path") ||
            !*nf_convert_scaleout_str_member(in, "path") || !nf_convert_scaleout_u64_member(in, "bytes", &bytes) ||
            !nf_convert_scaleout_is_hex(nf_convert_scaleout_str_member(in, "head"), 32) ||
            !nf_convert_scaleout_is_hex(nf_convert_scaleout_str_member(in, "tail"), 32))
            return nf_error_set(err, NF_ERR_INVALID,
                                "%s: %s: not {\"path\", \"bytes\", \"head\", \"tail\"} (a path, a "
                                "byte count and two digests of 32 hex digits)",
                                MP(path), where);
        NF_TRY(only_known(in, where, input, path, err));
    }
    return NF_OK;
}

nf_status nf_scaleout_open(const char *plan_path, nf_scaleout **out, nf_error *err)
{
    nf_scaleout *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(plan_path))) {
        free(s);
        return nf_convert_scaleout_nomem(err);
    }
    nf_status st = load_plan(s, plan_path, err);
    const json_t *r = s->root;
    uint64_t version = 0;
    const char *output = st == NF_OK ? nf_convert_scaleout_str_member(r, "output") : NULL,
               *id = output ? nf_convert_scaleout_str_member(r, "artifact_id") : NULL;
    const char *fp = id ? nf_convert_scaleout_str_member(r, "fingerprint") : NULL;
    if (st == NF_OK && nf_convert_scaleout_u64_member(r, "ninfer_plan", &version) && version == 1)
        st = nf_error_set(err, NF_ERR_INVALID,
                          "%s: a plan of version 1, which recorded a command line; plans are data "
                          "since version 2 (docs/scale-out.md): make the plan again with this ninfer-convert",
                          MP(plan_path));
    else if (st == NF_OK && (!nf_convert_scaleout_u64_member(r, "ninfer_plan", &version) || version != PLAN_VERSION))
        st = nf_error_set(err, NF_ERR_INVALID, "%s: not a plan of this version (ninfer_plan must be %d)", MP(plan_path),
                          PLAN_VERSION);
    if (st == NF_OK &&
        (!output || !*output || strlen(output) >= sizeof s->output || !nf_convert_scaleout_is_hex(id, 32) ||
         !nf_convert_scaleout_is_hex(fp, 32) || !json_is_string(json_object_get(r, "cwd")) ||
         !json_is_object(json_object_get(r, "conversion")) || !json_is_array(json_object_get(r, "inputs")) ||
         !json_is_array(json_object_get(r, "files")) || !json_is_array(json_object_get(r, "tasks"))))
        st = nf_error_set(err, NF_ERR_INVALID,
                          "%s: a plan needs output, artifact_id (32 hex digits), fingerprint, "
                          "cwd, conversion, inputs, files and tasks",
                          MP(plan_path));
    if (st == NF_OK) st = check_members(r, plan_path, err);
    if (st == NF_OK) {
        snprintf(s->output, sizeof s->output, "%s", output);
        snprintf(s->fingerprint, sizeof s->fingerprint, "%s", fp);
        nf_hex_parse(id, s->id, 16); /* (is_hex above) */
        st = inputs_digest(json_object_get(r, "inputs"), plan_path, s->inputs, err);
        s->conversion = json_object_get(r, "conversion");
        s->nfiles = json_array_size(json_object_get(r, "files"));
        s->ntasks = json_array_size(json_object_get(r, "tasks"));
        s->task_first = calloc(s->ntasks ? s->ntasks : 1, sizeof *s->task_first);
        s->task_end = calloc(s->ntasks ? s->ntasks : 1, sizeof *s->task_end);
        if (!s->task_first || !s->task_end) st = nf_convert_scaleout_nomem_reading(plan_path, err);
        if (st == NF_OK && (s->ntasks == 0 || s->nfiles == 0))
            st = nf_error_set(err, NF_ERR_INVALID, "%s: a plan has files and tasks", MP(plan_path));
    }
    /* the tasks: contiguous runs of files covering each file once, in order */
    size_t next = 0;
    for (size_t t = 0; st == NF_OK && t < s->ntasks; t++) {
        const json_t *task = json_array_get(json_object_get(r, "tasks"), t);
        const json_t *files = json_object_get(task, "files");
        uint64_t tid = 0;
        if (!nf_convert_scaleout_u64_member(task, "task", &tid) || tid != t || !json_is_array(files) ||
            json_array_size(files) == 0) {
            st = nf_error_set(err, NF_ERR_INVALID, "%s: tasks[%zu] must be task %zu with a list of files",
                              MP(plan_path), t, t);
            break;
        }
        s->task_first[t] = next;
        for (size_t k = 0; k < json_array_size(files); k++) {
            const json_t *v = json_array_get(files, k);
            if (!json_is_integer(v) || json_integer_value(v) != (json_int_t)next) {
                st = nf_error_set(err, NF_ERR_INVALID,
                                  "%s: tasks[%zu].files[%zu] must be file %zu (tasks cover the "
                                  "files in order)",
                                  MP(plan_path), t, k, next);
                break;
            }
            next++;
        }
        s->task_end[t] = next;
    }
    if (st == NF_OK && next != s->nfiles)
        st = nf_error_set(err, NF_ERR_INVALID, "%s: the tasks cover %zu of the %zu files", MP(plan_path), next,
                          s->nfiles);
    if (st != NF_OK) {
        nf_scaleout_free(s);
        return st;
    }
    *out = s;
    return NF_OK;
}

nf_plan *nf_scaleout_conversion(const nf_scaleout *s) { return s->plan; }
size_t nf_scaleout_task_count(const nf_scaleout *s) { return s->ntasks; }
const char *nf_scaleout_output(const nf_scaleout *s) { return s->output; }
const char *nf_scaleout_directory(const nf_scaleout *s) { return nf_convert_scaleout_str_member(s->root, "cwd"); }
void nf_scaleout_artifact_id(const nf_scaleout *s, uint8_t out[16]) { memcpy(out, s->id, 16); }

void nf_scaleout_free(nf_scaleout *s)
{
    if (!s) return;
    nf_plan_free(s->plan);
    nf_recipe_free(s->recipe);
    json_decref(s->root);
    free(s->ids);
    free(s->file_ids);
    free(s->path);
    free(s->task_first);
    free(s->task_end);
    free(s);
}

/* ---------------------------------------------------------------- rebuilding
 * The plan's relative paths are its `cwd`'s: the caller runs in that directory (the library
 * never changes the process's directory; ninfer-convert changes to it first). */
static nf_status check_directory(const nf_scaleout *s, nf_error *err)
{
    const char *cwd = nf_convert_scaleout_str_member(s->root, "cwd");
    struct stat here, there;
    if (stat(".", &here) == 0 && stat(cwd, &there) == 0 && here.st_dev == there.st_dev && here.st_ino == there.st_ino)
        return NF_OK;
    return nf_error_set(err, NF_ERR_USAGE, "%s: its relative paths are those of its directory %s: run it from there",
                        MP(s->path), MP(cwd));
}

/* Every input the plan records is there as recorded, checked before the rebuilt recipe opens
 * any source: the first that is not is named by its place in the plan. */
static nf_status check_recorded(const nf_scaleout *s, nf_error *err)
{
    const json_t *inputs = json_object_get(s->root, "inputs");
    for (size_t i = 0; i < json_array_size(inputs); i++) {
        const json_t *then = json_array_get(inputs, i);
        const char *path = nf_convert_scaleout_str_member(then, "path");
        json_t *now = NULL;
        nf_error local;
        nf_status st = nf_convert_scaleout_fingerprint(path, &now, &local);
        if (st == NF_ERR_NOMEM) return nf_convert_scaleout_nomem_reading(s->path, err);
        bool same = st == NF_OK && json_equal(now, (json_t *)then);
        json_decref(now);
        if (!same)
            return nf_error_set(err, NF_ERR_INVALID,
                                "%s: inputs[%zu] (%s): %s since the plan was made%s; make the "
                                "plan again",
                                MP(s->path), i, MP(path), st == NF_OK ? "changed" : "cannot be read",
                                st == NF_OK ? " (size or content)" : "");
    }
    return NF_OK;
}

/* The options of every task and of the assembler: the plan's (output, artifact id, the options
 * that decide bytes) and the run's (threads, chunk size, progress, cancel). */
static void task_options(nf_scaleout *s, const nf_scaleout_run *run)
{
    const json_t *o = json_object_get(s->conversion, "options"), *mfb = json_object_get(o, "max_file_bytes");
    s->opt = (nf_convert_options){s->output,
                                  run ? run->threads : 0,
                                  json_is_integer(mfb),
                                  json_is_integer(mfb) ? (uint64_t)json_integer_value(mfb) : 0,
                                  json_is_true(json_object_get(o, "force")),
                                  json_is_true(json_object_get(o, "report")),
                                  s->id,
                                  run ? run->chunk_values : 0,
                                  run ? run->progress : NULL,
                                  run ? run->progress_ctx : NULL,
                                  run ? run->cancel : NULL,
                                  true, /* a scale-out artifact records its sources' sizes only */
                                  NULL};
}

/* Every method program the plan's conversion was made with is given again by the task's command
 * line (a plan never starts one), and only those (docs/method-programs.md 5). */
static nf_status check_programs(const nf_scaleout *s, const json_t *recorded, const nf_scaleout_run *run, nf_error *err)
{
    const size_t given = run ? run->nprograms : 0;
    for (size_t i = 0; i < json_array_size(recorded); i++) {
        const char *name = json_string_value(json_object_get(json_array_get(recorded, i), "name"));
        bool found = false;
        for (size_t k = 0; k < given && !found; k++) found = !strcmp(run->programs[k].name, name);
        if (!found)
            return nf_error_set(err, NF_ERR_USAGE,
                                "%s: the plan was made with method program '%s': give --method-program %s=COMMAND, "
                                "the command the plan's maker gave (its digest must be %s)",
                                MP(s->path), name, name,
                                json_string_value(json_object_get(json_array_get(recorded, i), "digest")));
    }
    for (size_t k = 0; k < given; k++) {
        bool found = false;
        for (size_t i = 0; i < json_array_size(recorded) && !found; i++)
            found = !strcmp(run->programs[k].name,
                            json_string_value(json_object_get(json_array_get(recorded, i), "name")));
        if (!found)
            return nf_error_set(err, NF_ERR_USAGE, "%s: --method-program %s: the plan's conversion has no such program",
                                MP(s->path), run->programs[k].name);
    }
    return NF_OK;
}

/* ... and each command given has the digest recorded: the same words, the same files. */
static nf_status check_program_digests(const nf_scaleout *s, const json_t *recorded, nf_error *err)
{
    for (size_t i = 0; i < s->plan->nprograms; i++) {
        const nf_mprog_spec *p = &s->plan->programs[i];
        for (size_t k = 0; k < json_array_size(recorded); k++) {
            const json_t *e = json_array_get(recorded, k);
            const char *digest = json_string_value(json_object_get(e, "digest"));
            if (strcmp(json_string_value(json_object_get(e, "name")), p->name) != 0 || !strcmp(digest, p->digest))
                continue;
            return nf_error_set(err, NF_ERR_INVALID,
                                "%s: method program '%s': the command given (its words and files) has digest %s, the "
                                "plan records %s: not the program the plan was made with (docs/method-programs.md 5)",
                                MP(s->path), p->name, p->digest, digest);
        }
    }
    return NF_OK;
}

/* The sources' files and digests the plan's maker took (docs/provenance.md): put in the rebuilt
 * plan's provenance as recorded.  Only their shape is checked here -- the names of the plan's
 * sources, a 64-digit recipe SHA-256 -- since what they make is bound by the plan's fingerprint:
 * a directory that differs in one byte from the maker's is refused by the layout check. */
static nf_status take_provenance(nf_scaleout *s, nf_error *err)
{
    const json_t *prov = json_object_get(s->root, "provenance");
    if (!prov) return NF_OK; /* a plan of a maker that recorded none */
    static const char *const known[] = {"recipe_sha256", "sources", NULL};
    NF_TRY(only_known(prov, "provenance", known, s->path, err));
    nf_plan *p = s->plan;
    const json_t *rsha = json_object_get(prov, "recipe_sha256"), *srcs = json_object_get(prov, "sources");
    bool ok = json_is_object(srcs) && json_object_size(srcs) == p->nsources &&
              (!rsha || nf_convert_scaleout_is_hex(json_string_value(rsha), 64));
    for (size_t i = 0; ok && i < p->nsources; i++) ok = json_is_object(json_object_get(srcs, p->sources[i].name));
    if (!ok)
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: provenance: not {\"sources\": {one object per source of the recipe}, "
                            "\"recipe_sha256\": 64 hex digits}",
                            MP(s->path));
    json_t *laid = json_copy(p->provenance);
    if (!laid || json_object_set_new(laid, "sources", json_deep_copy(srcs)) != 0 ||
        (rsha && json_object_set(laid, "recipe_sha256", (json_t *)rsha) != 0)) {
        json_decref(laid);
        return nf_convert_scaleout_nomem(err);
    }
    /* the member order of the maker's: converter, recipe, sources, recipe_sha256 as laid out
     * there (nf_convert_digests_provenance) */
    json_decref(p->provenance_laid);
    json_decref(p->provenance_final);
    p->provenance_laid = laid;
    p->provenance_final = json_incref(laid);
    return NF_OK;
}

nf_status nf_scaleout_rebuild(nf_scaleout *s, const nf_scaleout_run *run, nf_error *err)
{
    if (s->plan) return NF_OK;
    NF_TRY(check_directory(s, err));
    char where[NF_IO_MSG_PATH + 32];
    snprintf(where, sizeof where, "%s: conversion.recipe", MP(s->path));
    const json_t *recorded = json_object_get(s->conversion, "method_programs");
    NF_TRY(check_programs(s, recorded, run, err));
    NF_TRY(nf_recipe_from_origin_ex(json_object_get(s->conversion, "recipe"), where, run ? run->programs : NULL,
                                    run ? run->nprograms : 0, &s->recipe, err));
    /* nothing is opened outside the roots, nor read changed: then the recipe's sources */
    nf_status st = nf_convert_scaleout_check_source_roots(s->recipe, s->path, err);
    if (st == NF_OK) st = nf_convert_scaleout_check_roots(s->recipe, json_object_get(s->root, "inputs"), s->path, err);
    if (st == NF_OK) st = check_recorded(s, err);
    nf_plan_build_options bo = {run ? run->threads : 0, json_object_get(s->root, "budget")};
    if (st == NF_OK) st = nf_plan_build_ex(s->recipe, &bo, &s->plan, err);
    if (st == NF_OK) st = check_program_digests(s, recorded, err);
    /* and it reads exactly the files recorded */
    if (st == NF_OK) st = nf_convert_scaleout_check_inputs(s->plan, s, err);
    if (st == NF_OK) st = take_provenance(s, err);
    if (st != NF_OK) {
        nf_plan_free(s->plan);
        nf_recipe_free(s->recipe);
        s->plan = NULL;
        s->recipe = NULL;
        return st;
    }
    task_options(s, run);
    return NF_OK;
}

/* The plan rebuilt by this run lays out what the file says: same fingerprint, same files. */
nf_status nf_convert_scaleout_check_layout(const nf_scaleout *s, const nf_writer *w, nf_error *err)
{
    char fp[33];
    nf_writer_layout_digest(w, fp);
    if (strcmp(fp, s->fingerprint) != 0 || nf_writer_file_count(w) != s->nfiles)
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: the recipe, sources or options now give another artifact than "
                            "the plan's (fingerprint %s, the plan's %s); make the plan again",
                            MP(s->path), fp, s->fingerprint);
    return NF_OK;
}
