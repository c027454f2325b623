/* Scale-out's inputs (scaleout_impl.h): the small file and JSON helpers of plans and receipts,
 * every input's fingerprint and the check that none changed, and what a plan allows a task to
 * read (the roots of docs/scale-out.md, "What a plan can make a task do"). */
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

/* ---------------------------------------------------------------- small helpers */
nf_status nf_convert_scaleout_nomem(nf_error *err) { return nf_error_set(err, NF_ERR_NOMEM, "out of memory"); }
nf_status nf_convert_scaleout_nomem_reading(const char *path, nf_error *err)
{
    return nf_error_set(err, NF_ERR_NOMEM, "%s: out of memory", MP(path));
}

bool nf_convert_scaleout_is_hex(const char *s, size_t n)
{
    return s && strlen(s) == n && strspn(s, "0123456789abcdef") == n;
}

/* A whole file of at most cap bytes, NUL-terminated. */
nf_status nf_convert_scaleout_slurp(const char *path, uint64_t cap, char **out, size_t *len, nf_error *err)
{
    int fd = nf_io_open(path, O_RDONLY | O_NONBLOCK, 0);
    if (fd < 0) {
        if (errno == ENOENT) return nf_error_set(err, NF_ERR_IO, "%s: no such file", MP(path));
        return nf_error_errno(err, errno, "%s: cannot open", MP(path));
    }
    struct stat sb;
    int e = nf_io_fstat(fd, &sb);
    nf_status st = NF_OK;
    if (e) st = nf_error_errno(err, e, "%s: cannot stat", MP(path));
    else if (!S_ISREG(sb.st_mode)) st = nf_error_set(err, NF_ERR_INVALID, "%s: not a regular file", MP(path));
    else if ((uint64_t)sb.st_size > cap)
        st = nf_error_set(err, NF_ERR_INVALID, "%s: %llu bytes, more than the %llu this reader takes", MP(path),
                          (unsigned long long)sb.st_size, (unsigned long long)cap);
    char *buf = st == NF_OK ? malloc((size_t)sb.st_size + 1) : NULL;
    if (st == NF_OK && !buf) st = nf_convert_scaleout_nomem(err);
    if (st == NF_OK && (e = nf_io_pread_full(fd, buf, (size_t)sb.st_size, 0)) != 0)
        st = nf_error_errno(err, e, "%s: cannot read", MP(path));
    nf_io_close(fd);
    if (st != NF_OK) {
        free(buf);
        return st;
    }
    buf[sb.st_size] = '\0';
    *out = buf;
    *len = (size_t)sb.st_size;
    return NF_OK;
}

/* What jansson may build of a plan or a receipt (common/json_prescan.h: it spends hundreds of
 * bytes per container and value, so the byte cap alone would let a file cost gigabytes).  A plan
 * holds 3 containers and about 13 values per object, a receipt 2 and 10: these caps admit
 * 10^6 objects. */
const nf_json_caps nf_convert_scaleout_json_caps = {8, 4000000, 30000000};

nf_status nf_convert_scaleout_load_json(const char *path, uint64_t cap, json_t **out, nf_error *err)
{
    char *text = NULL;
    size_t len = 0;
    NF_TRY(nf_convert_scaleout_slurp(path, cap, &text, &len, err));
    json_t *root = NULL;
    nf_status st = nf_json_load_checked(MP(path), text, len, &nf_convert_scaleout_json_caps, "a plan or a receipt", "",
                                        &root, err);
    free(text);
    NF_TRY(st);
    if (!json_is_object(root)) {
        json_decref(root);
        return nf_error_set(err, NF_ERR_INVALID, "%s: not a JSON object", MP(path));
    }
    *out = root;
    return NF_OK;
}

/* JSON text of v, compact, members in order, and a newline (malloc'ed; *len its bytes; dumped
 * whole or not at all: common/json_walk.h). */
static char *compact_text(const json_t *v, size_t *len)
{
    char *text = nf_jw_dump(v, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17), 1, len);
    if (text) text[(*len)++] = '\n';
    return text;
}

/* JSON text to path, atomically (nf_outputs_put_whole). */
nf_status nf_convert_scaleout_put_json(const char *path, const json_t *v, nf_error *err)
{
    size_t len = 0;
    char *text = compact_text(v, &len);
    if (!text) return nf_convert_scaleout_nomem(err);
    nf_status st = nf_outputs_put_whole(path, text, len, err);
    free(text);
    return st;
}

/* A file's receipt beside the output (outputs/out_names.h): "<file>.receipt.json", the entry's
 * "<OUT>.entry.receipt.json". */
char *nf_convert_scaleout_receipt_path(const nf_writer_file *f, size_t index, const char *output)
{
    return nf_outputs_receipt_name(output, index == 0 ? NULL : f->path);
}

/* ---------------------------------------------------------------- fingerprints */
/* XXH3-128 of bytes [at, at + n) of the file (n clipped to what it holds). */
static nf_status digest_range(int fd, uint64_t at, size_t n, const char *path, char out[33], nf_error *err)
{
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) return nf_convert_scaleout_nomem(err);
    int e = nf_io_pread_full(fd, buf, n, at);
    if (e) {
        free(buf);
        return nf_error_errno(err, e, "%s: cannot read", MP(path));
    }
    nf_xxh3_128_hex(buf, n, out);
    free(buf);
    return NF_OK;
}

/* An input's fingerprint: its size and the digests of its first MiB and last 64 KiB -- what
 * changes when a checkpoint is rewritten (its header holds every tensor's offsets and dtype),
 * read in two small pieces (docs/scale-out.md, "What a plan checks"). */
nf_status nf_convert_scaleout_fingerprint(const char *path, json_t **out, nf_error *err)
{
    int fd = nf_io_open(path, O_RDONLY | O_NONBLOCK, 0);
    if (fd < 0) return nf_error_errno(err, errno, "%s: cannot open", MP(path));
    struct stat sb;
    int e = nf_io_fstat(fd, &sb);
    nf_status st = e ? nf_error_errno(err, e, "%s: cannot stat", MP(path)) : NF_OK;
    char head[33], tail[33];
    uint64_t size = st == NF_OK ? (uint64_t)sb.st_size : 0;
    size_t hn = size < FINGERPRINT_HEAD ? (size_t)size : FINGERPRINT_HEAD;
    size_t tn = size < FINGERPRINT_TAIL ? (size_t)size : FINGERPRINT_TAIL;
    if (st == NF_OK) st = digest_range(fd, 0, hn, path, head, err);
    if (st == NF_OK) st = digest_range(fd, size - tn, tn, path, tail, err);
    nf_io_close(fd);
    if (st != NF_OK) return st;
    *out = json_pack("{s:s,s:I,s:s,s:s}", "path", path, "bytes", (json_int_t)size, "head", head, "tail", tail);
    return *out ? NF_OK : nf_convert_scaleout_nomem(err);
}

bool nf_convert_scaleout_listed(const json_t *arr, const char *path)
{
    size_t i;
    const json_t *v;
    json_array_foreach(arr, i, v) if (strcmp(json_string_value(json_object_get(v, "path")), path) == 0) return true;
    return false;
}

static nf_status add_input(json_t *arr, const char *path, nf_error *err)
{
    struct stat sb;
    if (!path || stat(path, &sb) != 0 || !S_ISREG(sb.st_mode) || nf_convert_scaleout_listed(arr, path)) return NF_OK;
    json_t *fp;
    NF_TRY(nf_convert_scaleout_fingerprint(path, &fp, err));
    return json_array_append_new(arr, fp) == 0 ? NF_OK : nf_convert_scaleout_nomem(err);
}

/* Every file the plan reads: the recipe, each source's files, index and companions, the
 * imatrix files, the resources. */
nf_status nf_convert_scaleout_inputs_of(const nf_plan *p, json_t **out, nf_error *err)
{
    json_t *arr = json_array();
    if (!arr) return nf_convert_scaleout_nomem(err);
    nf_status st = add_input(arr, p->recipe->path, err);
    for (size_t i = 0; st == NF_OK && i < p->nsources; i++) {
        const nf_source *s = p->sources[i].src;
        st = add_input(arr, p->sources[i].path, err);
        for (size_t f = 0; st == NF_OK && s && f < nf_source_file_count(s); f++)
            st = add_input(arr, nf_source_file_path(s, f), err);
        if (st == NF_OK && s) st = add_input(arr, nf_source_index_path(s), err);
        for (size_t c = 0; st == NF_OK && s && c < nf_source_companion_count(s); c++)
            st = add_input(arr, nf_source_companion_at(s, c, NULL), err);
    }
    for (size_t i = 0; st == NF_OK && i < p->nobjects; i++)
        if (p->objects[i].kind == NF_OBJECT_RESOURCE) st = add_input(arr, p->objects[i].path, err);
    if (st != NF_OK) {
        json_decref(arr);
        return st;
    }
    *out = arr;
    return NF_OK;
}

/* The inputs as the plan recorded them, unchanged: the first that differs is named. */
nf_status nf_convert_scaleout_check_inputs(const nf_plan *p, const nf_scaleout *s, nf_error *err)
{
    json_t *now;
    NF_TRY(nf_convert_scaleout_inputs_of(p, &now, err));
    const json_t *then = json_object_get(s->root, "inputs");
    nf_status st = NF_OK;
    size_t i;
    const json_t *v;
    json_array_foreach(now, i, v)
    {
        const char *path = json_string_value(json_object_get(v, "path"));
        const json_t *w = NULL;
        size_t k;
        const json_t *c;
        json_array_foreach(then, k, c) if (json_is_string(json_object_get(c, "path")) &&
                                           strcmp(json_string_value(json_object_get(c, "path")), path) == 0) w = c;
        if (!w) {
            st = nf_error_set(err, NF_ERR_INVALID, "%s: %s is read by the plan now, not when it was made", MP(s->path),
                              MP(path));
            break;
        }
        if (!json_equal((json_t *)v, (json_t *)w)) {
            st = nf_error_set(err, NF_ERR_INVALID,
                              "%s: %s changed since the plan was made (size or content); make the "
                              "plan again",
                              MP(s->path), MP(path));
            break;
        }
    }
    if (st == NF_OK && json_array_size(now) != json_array_size(then))
        st = nf_error_set(err, NF_ERR_INVALID, "%s: the plan read %zu input files, it reads %zu now", MP(s->path),
                          json_array_size(then), json_array_size(now));
    json_decref(now);
    return st;
}

/* ---------------------------------------------------------------- what a plan allows
 * A plan is data (docs/scale-out.md, "What a plan can make a task do"): it can make a task read
 * only the files it records with their fingerprints under its allowed roots, and write only
 * beside its output. */

/* The conversion as data: the recipe as made (nf_recipe_origin: its text, name and directory,
 * the variables it expanded, the sources and paths given to it) and the options that decide the
 * artifact's bytes.  What a task's host chooses (threads, chunk size, progress) is not in it. */
nf_status nf_convert_scaleout_conversion_of(const nf_plan *p, const nf_convert_options *opt, json_t **out,
                                            nf_error *err)
{
    json_t *recipe = NULL;
    NF_TRY(nf_recipe_origin(p->recipe, &recipe, err));
    json_t *options = json_pack("{s:o,s:b,s:b}", "max_file_bytes",
                                opt->has_max_file_bytes ? json_integer((json_int_t)opt->max_file_bytes) : json_null(),
                                "force", opt->force, "report", opt->report);
    *out = options ? json_pack("{s:o,s:o}", "recipe", recipe, "options", options) : NULL;
    if (!options) json_decref(recipe);
    /* the method programs given: their names and digests, which a task's must match (its host
     * names the command again: a plan never starts a program, docs/method-programs.md 5) */
    json_t *progs = p->nprograms ? json_array() : NULL;
    for (size_t i = 0; progs && i < p->nprograms; i++)
        json_array_append_new(progs,
                              json_pack("{s:s,s:s}", "name", p->programs[i].name, "digest", p->programs[i].digest));
    if (*out && progs && json_object_set_new(*out, "method_programs", progs) != 0) {
        json_decref(*out);
        *out = NULL;
    } else if (!*out) {
        json_decref(progs);
    }
    return *out ? NF_OK : nf_convert_scaleout_nomem(err);
}

/* Is path (an existing file, by its real path) inside the directory of a source the caller gave
 * the recipe (nf_recipe_set_source: a checkpoint file's config and tokenizer lie beside it)? */
static bool beside_given_source(const nf_recipe *r, const char *real)
{
    for (size_t i = 0; i < r->nsources; i++) {
        if (!r->sources[i].command_line || !r->sources[i].path) continue;
        char *src = realpath(r->sources[i].path, NULL);
        char *slash = src ? strrchr(src, '/') : NULL;
        struct stat sb;
        if (slash && stat(src, &sb) == 0 && !S_ISDIR(sb.st_mode)) *slash = '\0';
        size_t n = src ? strlen(src) : 0;
        bool in = src && (n <= 1 || (strncmp(real, src, n) == 0 && (real[n] == '/' || real[n] == '\0')));
        free(src);
        if (in) return true;
    }
    return false;
}

/* Is path under the allowed roots: what the recipe may read (its own directory, the sources and
 * the paths given to it: nf_recipe_check_path), or beside a source given to it? */
static bool in_roots(const nf_recipe *r, const char *path)
{
    nf_error local;
    if (nf_recipe_check_path(r, path, "a file the plan reads", (nf_recipe_pos){0, 0}, NULL, &local) == NF_OK)
        return true;
    char *real = realpath(path, NULL);
    bool beside = real && beside_given_source(r, real);
    free(real);
    return beside;
}

/* The sources the rebuilt recipe names, under the allowed roots before any is opened (a source
 * the plan's text adds elsewhere is refused, named by the plan). */
nf_status nf_convert_scaleout_check_source_roots(const nf_recipe *r, const char *plan_path, nf_error *err)
{
    for (size_t i = 0; i < r->nsources; i++)
        if (r->sources[i].path && !in_roots(r, r->sources[i].path))
            return nf_error_set(err, NF_ERR_INVALID,
                                "%s: conversion.recipe: source '%s' (%s): outside the plan's "
                                "allowed roots (the recipe's directory, the sources and the paths given to it); a "
                                "task reads nothing else",
                                MP(plan_path), nf_esc(r->sources[i].name).s, MP(r->sources[i].path));
    return NF_OK;
}

/* Every input under the allowed roots.  plan_path NULL: the plan being made (the input named by
 * its path); else the plan file's inputs[i]. */
nf_status nf_convert_scaleout_check_roots(const nf_recipe *r, const json_t *inputs, const char *plan_path,
                                          nf_error *err)
{
    for (size_t i = 0; i < json_array_size(inputs); i++) {
        const char *path = json_string_value(json_object_get(json_array_get(inputs, i), "path"));
        if (in_roots(r, path)) continue;
        if (plan_path)
            return nf_error_set(err, NF_ERR_INVALID,
                                "%s: inputs[%zu] (%s): outside the plan's allowed roots (the "
                                "recipe's directory, the sources and the paths given to it); a task reads nothing "
                                "else",
                                MP(plan_path), i, MP(path));
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: the plan would read it, and it is outside its allowed roots (the "
                            "recipe's directory, the sources and the paths given to it): give it with --source or "
                            "--allow-path",
                            MP(path));
    }
    return NF_OK;
}

const char *nf_convert_scaleout_str_member(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

bool nf_convert_scaleout_u64_member(const json_t *o, const char *key, uint64_t *out)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0) return false;
    *out = (uint64_t)json_integer_value(v);
    return true;
}
