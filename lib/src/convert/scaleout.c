/* One artifact converted as independent tasks (docs/scale-out.md): the plan file, the tasks'
 * receipts, and the checks that tie them to the sources, the plan and the parts.
 *
 *   plan      the writer laid out (nothing created): the file table, each file's objects, the
 *             tasks (contiguous runs of files of near-equal bytes), the layout's digest (the
 *             plan's fingerprint), every input file's fingerprint, and what rebuilds the
 *             conversion as data: the recipe as made (nf_recipe_origin) and the options that
 *             decide bytes -- never a command line (docs/scale-out.md, "What a plan can make a
 *             task do");
 *   rebuild   the recipe and the plan made again from that data, after every input is found
 *             under the allowed roots and unchanged;
 *   task      the rebuilt plan checked against the file; its files encoded and staged
 *             (execute.c), then one receipt per file, written last: a file with a receipt that
 *             matches the plan is done;
 *   assemble  every receipt checked against the plan and its file (size, header; with verify the
 *             file's digest), the checksums and statistics merged, the entry completed and
 *             published, the report written; the receipts and the staged entry removed.
 *
 * Plan files and receipts are read as untrusted JSON: size-capped, every member checked. */
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
#include "outputs/out_whole.h"

#define PLAN_VERSION 2 /* 1 recorded a command line (refused: make the plan again) */
#define PLAN_MAX_BYTES ((uint64_t)1 << 30)   /* a plan of 10^6 objects is ~300 MB */
#define RECEIPT_MAX_BYTES ((uint64_t)256 << 20)
#define FINGERPRINT_HEAD ((size_t)1 << 20)  /* each input's first MiB (its header, index or text) */
#define FINGERPRINT_TAIL ((size_t)64 << 10) /* and its last 64 KiB */
#define MP(path) nf_io_msg_path((path), (char[NF_IO_MSG_PATH + 1]){0})

/* A file's run of ids in nf_scaleout.ids: n of them from byte at. */
typedef struct id_run {
    size_t at, n;
} id_run;

struct nf_scaleout {
    char *path;
    json_t *root; /* the plan's members but "objects", and its files without their "objects" */
    const json_t *conversion; /* what rebuilds the conversion (checked by nf_scaleout_open) */
    char output[4096];
    char fingerprint[33];
    char inputs[33]; /* the digest of the plan's inputs (inputs_digest): what a receipt binds */
    uint8_t id[16];
    size_t nfiles, ntasks;
    size_t *task_first, *task_end; /* task t holds files [first, end) */
    /* files[i].objects, for nf_scaleout_task_objects: the ids NUL-terminated, file after file,
     * in one block (10^5 of them as JSON strings are several times their bytes) */
    char *ids;
    id_run *file_ids; /* file i's */
    /* nf_scaleout_rebuild's: the recipe and plan made from the conversion's data, and the
     * options of every task and of the assembler (the plan's, and the run's) */
    nf_recipe *recipe;
    nf_plan *plan;
    nf_convert_options opt;
};

/* ---------------------------------------------------------------- small helpers */
static nf_status nomem(nf_error *err) { return nf_error_set(err, NF_ERR_NOMEM, "out of memory"); }
static nf_status nomem_reading(const char *path, nf_error *err)
{
    return nf_error_set(err, NF_ERR_NOMEM, "%s: out of memory", MP(path));
}

static bool is_hex(const char *s, size_t n)
{
    return s && strlen(s) == n && strspn(s, "0123456789abcdef") == n;
}

/* A whole file of at most cap bytes, NUL-terminated. */
static nf_status slurp(const char *path, uint64_t cap, char **out, size_t *len, nf_error *err)
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
    if (st == NF_OK && !buf) st = nomem(err);
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
static const nf_json_caps scaleout_caps = {8, 4000000, 30000000};

static nf_status load_json(const char *path, uint64_t cap, json_t **out, nf_error *err)
{
    char *text = NULL;
    size_t len = 0;
    NF_TRY(slurp(path, cap, &text, &len, err));
    nf_status st = nf_json_prescan_check(MP(path), text, len, &scaleout_caps, "a plan or a receipt", "", err);
    if (st != NF_OK) {
        free(text);
        return st;
    }
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    free(text);
    if (!root) return nf_json_syntax_error(err, MP(path), &je);
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
static nf_status put_json(const char *path, const json_t *v, nf_error *err)
{
    size_t len = 0;
    char *text = compact_text(v, &len);
    if (!text) return nomem(err);
    nf_status st = nf_outputs_put_whole(path, text, len, err);
    free(text);
    return st;
}

/* A file's receipt beside the output (outputs/out_names.h): "<file>.receipt.json", the entry's
 * "<OUT>.entry.receipt.json". */
static char *receipt_path(const nf_writer_file *f, size_t index, const char *output)
{
    return nf_outputs_receipt_name(output, index == 0 ? NULL : f->path);
}

/* ---------------------------------------------------------------- fingerprints */
/* XXH3-128 of bytes [at, at + n) of the file (n clipped to what it holds). */
static nf_status digest_range(int fd, uint64_t at, size_t n, const char *path, char out[33], nf_error *err)
{
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) return nomem(err);
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
static nf_status fingerprint(const char *path, json_t **out, nf_error *err)
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
    return *out ? NF_OK : nomem(err);
}

static bool listed(const json_t *arr, const char *path)
{
    size_t i;
    const json_t *v;
    json_array_foreach(arr, i, v) if (strcmp(json_string_value(json_object_get(v, "path")), path) == 0) return true;
    return false;
}

static nf_status add_input(json_t *arr, const char *path, nf_error *err)
{
    struct stat sb;
    if (!path || stat(path, &sb) != 0 || !S_ISREG(sb.st_mode) || listed(arr, path)) return NF_OK;
    json_t *fp;
    NF_TRY(fingerprint(path, &fp, err));
    return json_array_append_new(arr, fp) == 0 ? NF_OK : nomem(err);
}

/* Every file the plan reads: the recipe, each source's files, index and companions, the
 * imatrix files, the resources. */
static nf_status inputs_of(const nf_plan *p, json_t **out, nf_error *err)
{
    json_t *arr = json_array();
    if (!arr) return nomem(err);
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
static nf_status check_inputs(const nf_plan *p, const nf_scaleout *s, nf_error *err)
{
    json_t *now;
    NF_TRY(inputs_of(p, &now, err));
    const json_t *then = json_object_get(s->root, "inputs");
    nf_status st = NF_OK;
    size_t i;
    const json_t *v;
    json_array_foreach(now, i, v) {
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
            st = nf_error_set(err, NF_ERR_INVALID, "%s: %s changed since the plan was made (size or content); make the "
                              "plan again", MP(s->path), MP(path));
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
static nf_status conversion_of(const nf_plan *p, const nf_convert_options *opt, json_t **out, nf_error *err)
{
    json_t *recipe = NULL;
    NF_TRY(nf_recipe_origin(p->recipe, &recipe, err));
    json_t *options = json_pack("{s:o,s:b,s:b}", "max_file_bytes",
                                opt->has_max_file_bytes ? json_integer((json_int_t)opt->max_file_bytes) : json_null(),
                                "force", opt->force, "report", opt->report);
    *out = options ? json_pack("{s:o,s:o}", "recipe", recipe, "options", options) : NULL;
    if (!options) json_decref(recipe);
    return *out ? NF_OK : nomem(err);
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
static nf_status check_source_roots(const nf_recipe *r, const char *plan_path, nf_error *err)
{
    for (size_t i = 0; i < r->nsources; i++)
        if (r->sources[i].path && !in_roots(r, r->sources[i].path))
            return nf_error_set(err, NF_ERR_INVALID, "%s: conversion.recipe: source '%s' (%s): outside the plan's "
                                "allowed roots (the recipe's directory, the sources and the paths given to it); a "
                                "task reads nothing else", MP(plan_path), nf_esc(r->sources[i].name).s,
                                MP(r->sources[i].path));
    return NF_OK;
}

/* Every input under the allowed roots.  plan_path NULL: the plan being made (the input named by
 * its path); else the plan file's inputs[i]. */
static nf_status check_roots(const nf_recipe *r, const json_t *inputs, const char *plan_path, nf_error *err)
{
    for (size_t i = 0; i < json_array_size(inputs); i++) {
        const char *path = json_string_value(json_object_get(json_array_get(inputs, i), "path"));
        if (in_roots(r, path)) continue;
        if (plan_path)
            return nf_error_set(err, NF_ERR_INVALID, "%s: inputs[%zu] (%s): outside the plan's allowed roots (the "
                                "recipe's directory, the sources and the paths given to it); a task reads nothing "
                                "else", MP(plan_path), i, MP(path));
        return nf_error_set(err, NF_ERR_INVALID, "%s: the plan would read it, and it is outside its allowed roots (the "
                            "recipe's directory, the sources and the paths given to it): give it with --source or "
                            "--allow-path", MP(path));
    }
    return NF_OK;
}

/* ---------------------------------------------------------------- the plan */
/* Tasks: contiguous runs of files, min(n, files) of them, cut where the bytes so far pass the
 * next multiple of total / n (every task gets at least one file). */
static void group_tasks(const nf_writer *w, size_t n, size_t *first, size_t *end, size_t *ntasks)
{
    size_t nf = nf_writer_file_count(w);
    if (n == 0 || n > nf) n = nf;
    uint64_t total = 0;
    for (size_t i = 0; i < nf; i++) {
        nf_writer_file f;
        nf_writer_file_info(w, i, &f);
        total += f.size;
    }
    size_t t = 0, start = 0;
    uint64_t sum = 0;
    for (size_t i = 0; i < nf; i++) {
        nf_writer_file f;
        nf_writer_file_info(w, i, &f);
        sum += f.size;
        size_t left_files = nf - (i + 1), left_tasks = n - (t + 1);
        /* cut after file i when its share is reached, or when the files left are just enough */
        double share = (double)total * (double)(t + 1) / (double)n;
        if (t + 1 < n && ((double)sum >= share || left_files == left_tasks)) {
            first[t] = start;
            end[t] = i + 1;
            t++;
            start = i + 1;
        }
    }
    first[t] = start;
    end[t] = nf;
    *ntasks = t + 1;
}

/* The plan file on its way to its temp file: the text of one small tree at a time (a plan of
 * 10^5 objects is tens of MB of text, and as one tree hundreds of MiB), in 1 MiB writes through
 * the I/O shim.  The bytes are those json_dumps gives for the whole tree (compact, members in
 * order): each piece is dumped with the same flags, and what joins the pieces is written here. */
#define PLAN_BUFFER ((size_t)1 << 20)
#define PLAN_JSON_FLAGS (JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17) | JSON_ENCODE_ANY)

typedef struct plan_out {
    nf_io_out *out; /* its first write error in out->e */
    bool nomem;    /* a piece could not be built or dumped */
} plan_out;

static void out_put(plan_out *o, const char *s, size_t n)
{
    if (!o->nomem) nf_io_out_put(o->out, s, n);
}

static void out_str(plan_out *o, const char *s) { out_put(o, s, strlen(s)); }

/* v's text (v consumed; NULL: it could not be built).  without_close: the text without its
 * last byte (an object's '}', for members that follow it).  Dumped with json_dumpb into room of
 * the size it counts first, not with json_dumps: jansson does not check the writes of an
 * object's keys, so json_dumps out of memory can return a text with a key left out, while
 * writes into room that is there cannot fail. */
static void out_json(plan_out *o, json_t *v, bool without_close)
{
    nf_io_out *b = o->out;
    size_t n = v && !b->e && !o->nomem ? json_dumpb(v, NULL, 0, PLAN_JSON_FLAGS) : 0;
    if (n > b->cap - b->len) nf_io_out_flush(b);
    bool in_buf = n <= b->cap;
    char *at = n == 0 || b->e ? NULL : in_buf ? b->buf + b->len : malloc(n);
    if (at && json_dumpb(v, at, n, PLAN_JSON_FLAGS) == n) {
        size_t keep = n - (without_close ? 1 : 0);
        if (in_buf) b->len += keep;
        else b->e = nf_io_write_full(b->fd, at, keep);
    } else if (!b->e) {
        o->nomem = true;
    }
    if (!in_buf) free(at);
    json_decref(v);
}

/* A list whose every append is checked (NULL once one failed). */
static json_t *append(json_t *arr, json_t *v)
{
    if (arr && v && json_array_append_new(arr, v) == 0) return arr;
    if (!arr) json_decref(v);
    json_decref(arr);
    return NULL;
}

/* files[i]: its index, path, bytes, range of the logical payload and the ids of the objects with
 * bytes in it. */
static json_t *file_record(const nf_plan *p, const nf_writer *w, size_t i)
{
    nf_writer_file f;
    nf_writer_file_info(w, i, &f);
    json_t *objs = json_array();
    size_t ofirst, oend;
    nf_writer_file_objects(w, i, &ofirst, &oend);
    for (size_t k = ofirst; objs && k < oend; k++) objs = append(objs, json_string(p->objects[k].id));
    if (!objs) return NULL;
    return json_pack("{s:I,s:s,s:I,s:[I,I],s:o}", "file", (json_int_t)i, "path", f.path, "bytes", (json_int_t)f.size,
                     "payload", (json_int_t)f.logical_start, (json_int_t)(f.logical_start + f.payload_bytes),
                     "objects", objs);
}

/* tasks[t]: its files [first, end) and their bytes. */
static json_t *task_record(const nf_writer *w, size_t t, size_t first, size_t end)
{
    uint64_t bytes = 0;
    json_t *fl = json_array();
    for (size_t i = first; fl && i < end; i++) {
        nf_writer_file f;
        nf_writer_file_info(w, i, &f);
        bytes += f.size;
        fl = append(fl, json_integer((json_int_t)i));
    }
    if (!fl) return NULL;
    return json_pack("{s:I,s:o,s:I}", "task", (json_int_t)t, "files", fl, "bytes", (json_int_t)bytes);
}

/* objects[k]: its place in the payload and every byte range a task reads for it: the member's
 * tensor, and the companions a quantized weight's values are read with (docs/dialects.md). */
static json_t *object_record(const nf_plan *p, const nf_writer *w, size_t k)
{
    const plan_object *o = &p->objects[k];
    json_t *srcs = json_array();
    for (size_t m = 0; srcs && m < o->nmembers; m++) {
        const plan_member *mb = &o->members[m];
        const nf_source_tensor *read[1 + NF_QWEIGHT_MAX_READS] = {mb->t};
        size_t nread = 1 + (mb->q ? nf_qweight_companions(mb->q, read + 1) : 0);
        for (size_t r = 0; srcs && r < nread; r++)
            srcs = append(srcs, json_pack("{s:s,s:s,s:I,s:I}", "tensor", read[r]->name, "file",
                                          nf_source_file_path(mb->source->src, read[r]->file), "offset",
                                          (json_int_t)read[r]->offset, "bytes", (json_int_t)read[r]->bytes));
    }
    if (!srcs) return NULL;
    return json_pack("{s:s,s:I,s:I,s:o}", "object", o->id, "offset",
                     (json_int_t)nf_writer_object_offset(w, o->writer_index), "bytes",
                     (json_int_t)nf_writer_object_bytes(w, o->writer_index), "sources", srcs);
}

/* The plan's text: its head members as one small tree, then files, tasks and objects one record
 * at a time, then the closing brace and a newline. */
static void emit_plan(plan_out *o, const nf_plan *p, const nf_writer *w, const nf_convert_options *opt,
                      json_t *conversion, json_t *inputs, const size_t *first, const size_t *end, size_t nt)
{
    char fp[33], id[33];
    nf_writer_layout_digest(w, fp);
    nf_writer_id_hex(w, id); /* given, or the writer's random one: the plan fixes it for every task */
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) snprintf(cwd, sizeof cwd, ".");
    out_json(o, json_pack("{s:i,s:s,s:s,s:s,s:s,s:O,s:O}", "ninfer_plan", PLAN_VERSION, "output", opt->output,
                          "artifact_id", id, "fingerprint", fp, "cwd", cwd, "conversion", conversion, "inputs", inputs),
             true);
    size_t nf = nf_writer_file_count(w);
    out_str(o, ",\"files\":[");
    for (size_t i = 0; i < nf && !o->out->e && !o->nomem; i++) {
        if (i) out_str(o, ",");
        out_json(o, file_record(p, w, i), false);
    }
    out_str(o, "],\"tasks\":[");
    for (size_t t = 0; t < nt && !o->out->e && !o->nomem; t++) {
        if (t) out_str(o, ",");
        out_json(o, task_record(w, t, first[t], end[t]), false);
    }
    out_str(o, "],\"objects\":[");
    for (size_t k = 0; k < p->nobjects && !o->out->e && !o->nomem; k++) {
        if (k) out_str(o, ",");
        out_json(o, object_record(p, w, k), false);
    }
    out_str(o, "]");
    if (p->budget) { /* the measured figures: the tasks and the assembler solve, not measure */
        out_str(o, ",\"budget\":");
        out_json(o, nf_budget_figures(p->budget), false);
    }
    out_str(o, "}\n");
    nf_io_out_flush(o->out);
}

/* emit_plan's arguments, for nf_outputs_write_temp. */
typedef struct plan_emit {
    const nf_plan *p;
    const nf_writer *w;
    const nf_convert_options *opt;
    json_t *conversion, *inputs;
    const size_t *first, *end;
    size_t nt;
} plan_emit;

static bool fill_plan(void *ctx, nf_io_out *out)
{
    const plan_emit *e = ctx;
    plan_out o = {out, false};
    emit_plan(&o, e->p, e->w, e->opt, e->conversion, e->inputs, e->first, e->end, e->nt);
    return !o.nomem;
}

nf_status nf_scaleout_plan(nf_plan *p, const nf_convert_options *opt, size_t tasks, const char *plan_path,
                           size_t *ntasks, nf_error *err)
{
    NF_TRY(nf_convert_check_outputs(p, opt, err));
    json_t *conversion = NULL;
    NF_TRY(conversion_of(p, opt, &conversion, err));
    nf_writer *w = NULL;
    nf_status st = nf_convert_writer(p, opt, NULL, &w, err);
    size_t nf = st == NF_OK ? nf_writer_file_count(w) : 0;
    size_t *first = calloc(nf ? nf : 1, sizeof *first), *end = calloc(nf ? nf : 1, sizeof *end);
    json_t *inputs = NULL;
    if (st == NF_OK && (!first || !end)) st = nomem(err);
    size_t nt = 0;
    if (st == NF_OK) {
        group_tasks(w, tasks, first, end, &nt);
        st = inputs_of(p, &inputs, err);
    }
    /* what every task will refuse, refused now: an input outside the allowed roots */
    if (st == NF_OK) st = check_roots(p->recipe, inputs, NULL, err);
    /* written streaming to a temp file beside the plan, synced, renamed over it: complete, or
     * not there at all */
    char *tmp = NULL;
    plan_emit pe = {p, w, opt, conversion, inputs, first, end, nt};
    if (st == NF_OK) st = nf_outputs_write_temp(plan_path, PLAN_BUFFER, fill_plan, &pe, &tmp, err);
    /* the last moment a signal (opt->cancel) can still stop it: the temp file goes, nothing is put
     * in place (docs/security.md 7.1, F12) */
    if (st == NF_OK && opt->cancel && *opt->cancel) {
        st = nf_error_set(err, NF_ERR_IO, "%s: interrupted", MP(plan_path));
        nf_io_unlink(tmp);
        free(tmp);
    } else if (st == NF_OK) {
        st = nf_outputs_put_temp(plan_path, tmp, err);
    }
    if (st == NF_OK) *ntasks = nt;
    json_decref(inputs);
    json_decref(conversion);
    free(first);
    free(end);
    nf_writer_free(w);
    return st;
}

static const char *str_member(const json_t *o, const char *key) { return json_string_value(json_object_get(o, key)); }

static bool u64_member(const json_t *o, const char *key, uint64_t *out)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0) return false;
    *out = (uint64_t)json_integer_value(v);
    return true;
}

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
    NF_TRY(slurp(path, PLAN_MAX_BYTES, &text, &len, err));
    nf_status st = nf_json_prescan_check(MP(path), text, len, &scaleout_caps, "a plan or a receipt", "", err);
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
        st = json_error_code(&je) == json_error_out_of_memory ? nomem_reading(path, err)
                                                               : nf_json_syntax_error(err, MP(path), &je);
    }
    json_t *root = st == NF_OK ? json_object() : NULL;
    if (st == NF_OK && !root) st = nomem_reading(path, err);
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
        if (!v || json_object_set_new(root, name, v) != 0) st = nomem_reading(path, err);
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
    if (!text) return nomem_reading(path, err);
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
    json_object_foreach((json_t *)obj, key, v) {
        size_t i = 0;
        while (known[i] && strcmp(known[i], key) != 0) i++;
        if (!known[i])
            return nf_error_set(err, NF_ERR_INVALID, "%s: %s%s'%s': unknown member (a plan of another version, or "
                                "edited)", MP(path), where, *where ? "." : "", nf_esc(key).s);
    }
    return NF_OK;
}

/* The plan's members, each of its type, with nothing else beside them ("objects" was judged and
 * left out by load_plan; files and tasks are checked where they are read). */
static nf_status check_members(const json_t *r, const char *path, nf_error *err)
{
    static const char *const top[] = {"ninfer_plan", "output", "artifact_id", "fingerprint", "cwd", "conversion",
                                      "inputs", "files", "tasks", "budget", NULL};
    static const char *const conversion[] = {"recipe", "options", NULL};
    static const char *const options[] = {"max_file_bytes", "force", "report", NULL};
    static const char *const input[] = {"path", "bytes", "head", "tail", NULL};
    NF_TRY(only_known(r, "", top, path, err));
    const json_t *c = json_object_get(r, "conversion"), *o = json_object_get(c, "options");
    NF_TRY(only_known(c, "conversion", conversion, path, err));
    if (!json_is_object(json_object_get(c, "recipe")))
        return nf_error_set(err, NF_ERR_INVALID, "%s: conversion.recipe: not an object", MP(path));
    if (!json_is_object(o)) return nf_error_set(err, NF_ERR_INVALID, "%s: conversion.options: not an object", MP(path));
    NF_TRY(only_known(o, "conversion.options", options, path, err));
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
        if (!json_is_object(in) || !str_member(in, "path") || !*str_member(in, "path") ||
            !u64_member(in, "bytes", &bytes) || !is_hex(str_member(in, "head"), 32) ||
            !is_hex(str_member(in, "tail"), 32))
            return nf_error_set(err, NF_ERR_INVALID, "%s: %s: not {\"path\", \"bytes\", \"head\", \"tail\"} (a path, a "
                                "byte count and two digests of 32 hex digits)", MP(path), where);
        NF_TRY(only_known(in, where, input, path, err));
    }
    return NF_OK;
}

nf_status nf_scaleout_open(const char *plan_path, nf_scaleout **out, nf_error *err)
{
    nf_scaleout *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(plan_path))) {
        free(s);
        return nomem(err);
    }
    nf_status st = load_plan(s, plan_path, err);
    const json_t *r = s->root;
    uint64_t version = 0;
    const char *output = st == NF_OK ? str_member(r, "output") : NULL, *id = output ? str_member(r, "artifact_id") : NULL;
    const char *fp = id ? str_member(r, "fingerprint") : NULL;
    if (st == NF_OK && u64_member(r, "ninfer_plan", &version) && version == 1)
        st = nf_error_set(err, NF_ERR_INVALID, "%s: a plan of version 1, which recorded a command line; plans are data "
                          "since version 2 (docs/scale-out.md): make the plan again with this ninfer-convert",
                          MP(plan_path));
    else if (st == NF_OK && (!u64_member(r, "ninfer_plan", &version) || version != PLAN_VERSION))
        st = nf_error_set(err, NF_ERR_INVALID, "%s: not a plan of this version (ninfer_plan must be %d)", MP(plan_path),
                          PLAN_VERSION);
    if (st == NF_OK && (!output || !*output || strlen(output) >= sizeof s->output || !is_hex(id, 32) || !is_hex(fp, 32) ||
                        !json_is_string(json_object_get(r, "cwd")) ||
                        !json_is_object(json_object_get(r, "conversion")) ||
                        !json_is_array(json_object_get(r, "inputs")) ||
                        !json_is_array(json_object_get(r, "files")) || !json_is_array(json_object_get(r, "tasks"))))
        st = nf_error_set(err, NF_ERR_INVALID, "%s: a plan needs output, artifact_id (32 hex digits), fingerprint, "
                          "cwd, conversion, inputs, files and tasks", MP(plan_path));
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
        if (!s->task_first || !s->task_end) st = nomem_reading(plan_path, err);
        if (st == NF_OK && (s->ntasks == 0 || s->nfiles == 0))
            st = nf_error_set(err, NF_ERR_INVALID, "%s: a plan has files and tasks", MP(plan_path));
    }
    /* the tasks: contiguous runs of files covering each file once, in order */
    size_t next = 0;
    for (size_t t = 0; st == NF_OK && t < s->ntasks; t++) {
        const json_t *task = json_array_get(json_object_get(r, "tasks"), t);
        const json_t *files = json_object_get(task, "files");
        uint64_t tid = 0;
        if (!u64_member(task, "task", &tid) || tid != t || !json_is_array(files) || json_array_size(files) == 0) {
            st = nf_error_set(err, NF_ERR_INVALID, "%s: tasks[%zu] must be task %zu with a list of files", MP(plan_path), t, t);
            break;
        }
        s->task_first[t] = next;
        for (size_t k = 0; k < json_array_size(files); k++) {
            const json_t *v = json_array_get(files, k);
            if (!json_is_integer(v) || json_integer_value(v) != (json_int_t)next) {
                st = nf_error_set(err, NF_ERR_INVALID, "%s: tasks[%zu].files[%zu] must be file %zu (tasks cover the "
                                  "files in order)", MP(plan_path), t, k, next);
                break;
            }
            next++;
        }
        s->task_end[t] = next;
    }
    if (st == NF_OK && next != s->nfiles)
        st = nf_error_set(err, NF_ERR_INVALID, "%s: the tasks cover %zu of the %zu files", MP(plan_path), next, s->nfiles);
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
const char *nf_scaleout_directory(const nf_scaleout *s) { return str_member(s->root, "cwd"); }
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
    const char *cwd = str_member(s->root, "cwd");
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
        const char *path = str_member(then, "path");
        json_t *now = NULL;
        nf_error local;
        nf_status st = fingerprint(path, &now, &local);
        if (st == NF_ERR_NOMEM) return nomem_reading(s->path, err);
        bool same = st == NF_OK && json_equal(now, (json_t *)then);
        json_decref(now);
        if (!same)
            return nf_error_set(err, NF_ERR_INVALID, "%s: inputs[%zu] (%s): %s since the plan was made%s; make the "
                                "plan again", MP(s->path), i, MP(path), st == NF_OK ? "changed" : "cannot be read",
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
                                  run ? run->cancel : NULL};
}

nf_status nf_scaleout_rebuild(nf_scaleout *s, const nf_scaleout_run *run, nf_error *err)
{
    if (s->plan) return NF_OK;
    NF_TRY(check_directory(s, err));
    char where[NF_IO_MSG_PATH + 32];
    snprintf(where, sizeof where, "%s: conversion.recipe", MP(s->path));
    NF_TRY(nf_recipe_from_origin(json_object_get(s->conversion, "recipe"), where, &s->recipe, err));
    /* nothing is opened outside the roots, nor read changed: then the recipe's sources */
    nf_status st = check_source_roots(s->recipe, s->path, err);
    if (st == NF_OK) st = check_roots(s->recipe, json_object_get(s->root, "inputs"), s->path, err);
    if (st == NF_OK) st = check_recorded(s, err);
    nf_plan_build_options bo = {run ? run->threads : 0, json_object_get(s->root, "budget")};
    if (st == NF_OK) st = nf_plan_build_ex(s->recipe, &bo, &s->plan, err);
    /* and it reads exactly the files recorded */
    if (st == NF_OK) st = check_inputs(s->plan, s, err);
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
static nf_status check_layout(const nf_scaleout *s, const nf_writer *w, nf_error *err)
{
    char fp[33];
    nf_writer_layout_digest(w, fp);
    if (strcmp(fp, s->fingerprint) != 0 || nf_writer_file_count(w) != s->nfiles)
        return nf_error_set(err, NF_ERR_INVALID, "%s: the recipe, sources or options now give another artifact than "
                            "the plan's (fingerprint %s, the plan's %s); make the plan again", MP(s->path), fp,
                            s->fingerprint);
    return NF_OK;
}

/* ---------------------------------------------------------------- receipts */
/* A binary64 exactly, infinities and NaN included (C99 %a). */
static json_t *exact(double v)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%a", v);
    return json_string(buf);
}

static bool exact_value(const json_t *v, double *out)
{
    const char *s = json_string_value(v);
    if (!s || strlen(s) > 40) return false;
    char *end;
    *out = strtod(s, &end);
    return end != s && *end == '\0';
}

static json_t *stats_json(const nf_errstats_summary *m)
{
    json_t *j = json_pack("{s:I,s:I,s:o,s:o,s:o,s:o,s:o}", "count", (json_int_t)m->count, "skipped",
                          (json_int_t)m->skipped, "max_abs", exact(m->max_abs), "sse", exact(m->sse), "ssx",
                          exact(m->ssx), "rmse", exact(m->rmse), "snr_db", exact(m->snr_db));
    /* the weighted error of an object a budget chose (docs/recipes.md, "Budgets"), 0 for others */
    if (j) json_object_set_new(j, "wse", exact(m->wse));
    return j;
}

/* A receipt's figures of one object; budget: a budget chose it, so its weighted error is a
 * finite number >= 0 (else it is 0 or absent: the figure is the budget's only). */
static bool stats_of(const json_t *j, bool budget, nf_errstats_summary *m)
{
    double w = 0;
    const json_t *wse = json_object_get(j, "wse");
    if ((wse || budget) && (!exact_value(wse, &w) || !isfinite(w) || w < 0 || (!budget && w != 0))) return false;
    m->wse = w;
    return json_is_object(j) && u64_member(j, "count", &m->count) && u64_member(j, "skipped", &m->skipped) &&
           exact_value(json_object_get(j, "max_abs"), &m->max_abs) && exact_value(json_object_get(j, "sse"), &m->sse) &&
           exact_value(json_object_get(j, "ssx"), &m->ssx) && exact_value(json_object_get(j, "rmse"), &m->rmse) &&
           exact_value(json_object_get(j, "snr_db"), &m->snr_db);
}

/* XXH3-128 of bytes [from, end) of a file, streamed. */
static nf_status file_digest(const char *path, uint64_t from, char out[33], nf_error *err)
{
    int fd = nf_io_open(path, O_RDONLY | O_NONBLOCK, 0);
    if (fd < 0) return nf_error_errno(err, errno, "%s: cannot open", MP(path));
    struct stat sb;
    int e = nf_io_fstat(fd, &sb);
    size_t chunk = (size_t)1 << 20;
    uint8_t *buf = malloc(chunk);
    nf_xxh3_stream *x = nf_xxh3_stream_new();
    nf_status st = e ? nf_error_errno(err, e, "%s: cannot stat", MP(path)) : buf && x ? NF_OK : nomem(err);
    for (uint64_t pos = from; st == NF_OK && pos < (uint64_t)sb.st_size;) {
        size_t n = (uint64_t)sb.st_size - pos < chunk ? (size_t)((uint64_t)sb.st_size - pos) : chunk;
        if ((e = nf_io_pread_full(fd, buf, n, pos)) != 0) st = nf_error_errno(err, e, "%s: cannot read", MP(path));
        else nf_xxh3_stream_update(x, buf, n);
        pos += n;
    }
    nf_io_close(fd);
    if (x) nf_xxh3_stream_final(x, out);
    free(buf);
    return st;
}

/* (The writer holds the plan's objects in the plan's order: writer index k is plan object k,
 * exec_outputs.c's nf_convert_plan_writer; nf_writer_file_objects gives a file's objects by those indices.) */

static nf_status write_receipt(const nf_plan *p, const nf_scaleout *s, const nf_writer *w, size_t task, size_t i,
                               const char *staged, const nf_errstats_summary *sums, char (*checksums)[33],
                               nf_error *err)
{
    nf_writer_file f;
    nf_writer_file_info(w, i, &f);
    const char *file = i == 0 ? staged : f.path;
    char digest[33];
    /* the entry's file from its payload on: its directory gets the checksums at assembly */
    NF_TRY(file_digest(file, f.size - f.payload_bytes, digest, err));
    json_t *objs = json_array();
    size_t first, end;
    nf_writer_file_objects(w, i, &first, &end);
    for (size_t k = first; objs && k < end; k++) {
        json_t *rec = json_pack("{s:s,s:s}", "object", p->objects[k].id, "checksum", checksums[k]);
        if (rec && p->objects[k].kind == NF_OBJECT_TENSOR) json_object_set_new(rec, "stats", stats_json(&sums[k]));
        json_array_append_new(objs, rec);
    }
    char *rp = receipt_path(&f, i, s->output);
    json_t *r = json_pack("{s:i,s:s,s:s,s:I,s:I,s:s,s:I,s:s,s:o}", "ninfer_receipt", PLAN_VERSION, "plan",
                          s->fingerprint, "inputs", s->inputs, "task", (json_int_t)task, "file", (json_int_t)i, "path", file, "bytes", (json_int_t)f.size,
                          "digest", digest, "objects", objs);
    nf_status st = r && rp ? put_json(rp, r, err) : nomem(err);
    json_decref(r);
    free(rp);
    return st;
}

/* Receipt of file i, checked against the plan and the file's size (NULL root when there is
 * none: *why says what is wrong). */
static nf_status read_receipt(const nf_scaleout *s, const nf_writer *w, size_t i, bool published, json_t **out,
                              char *why, size_t whylen, nf_error *err)
{
    *out = NULL;
    nf_writer_file f;
    nf_writer_file_info(w, i, &f);
    char *rp = receipt_path(&f, i, s->output);
    if (!rp) return nomem(err);
    struct stat sb;
    if (stat(rp, &sb) != 0) {
        snprintf(why, whylen, "%s: no receipt (%s)", MP(i == 0 ? s->output : f.path), MP(rp));
        free(rp);
        return NF_OK;
    }
    json_t *r = NULL;
    nf_error local;
    nf_status st = load_json(rp, RECEIPT_MAX_BYTES, &r, &local);
    if (st == NF_ERR_NOMEM || st == NF_ERR_IO) {
        if (err) *err = local;
        free(rp);
        return st;
    }
    uint64_t file = 0, bytes = 0;
    if (st != NF_OK) {
        snprintf(why, whylen, "%s", local.message);
    } else if (!str_member(r, "plan") || strcmp(str_member(r, "plan"), s->fingerprint) != 0 ||
               !str_member(r, "inputs") || strcmp(str_member(r, "inputs"), s->inputs) != 0) {
        /* another layout, or the same from other inputs (a plan made again after a source
         * changed), or a receipt of a version that did not bind them */
        snprintf(why, whylen, "%s: made by another plan (another artifact, or other inputs)", MP(rp));
    } else if (!u64_member(r, "file", &file) || file != i || !u64_member(r, "bytes", &bytes) || bytes != f.size ||
               !is_hex(str_member(r, "digest"), 32) || !json_is_array(json_object_get(r, "objects"))) {
        snprintf(why, whylen, "%s: not the receipt of file %zu of %llu bytes", MP(rp), i, (unsigned long long)f.size);
    } else {
        const char *file_path = i == 0 ? NULL : f.path;
        /* the entry's file: staged, or once published the entry itself */
        char *staged = i == 0 && !published ? nf_outputs_staged_name(s->output) : NULL;
        const char *fpath = file_path ? file_path : staged ? staged : s->output;
        if (!fpath || stat(fpath, &sb) != 0) snprintf(why, whylen, "%s: missing (its receipt is there)", MP(fpath ? fpath : "?"));
        else if ((uint64_t)sb.st_size != f.size)
            snprintf(why, whylen, "%s: %llu bytes, its receipt and the plan say %llu", MP(fpath),
                     (unsigned long long)sb.st_size, (unsigned long long)f.size);
        else {
            *out = r;
            r = NULL;
        }
        free(staged);
    }
    json_decref(r);
    free(rp);
    return NF_OK;
}

/* ---------------------------------------------------------------- a task */
/* What is at the output's entry, under the output's lock (the tasks' shared, the assembler's
 * exclusive: docs/scale-out.md, "The output's lock").  This plan's artifact is its complete entry
 * (nf_writer_entry_complete: the layout, every checksum filled in and the directory's own), never
 * a file that only carries the plan's artifact id -- a staged entry put there, or a publication
 * cut short. */
typedef enum out_state { OUT_NONE, OUT_OURS, OUT_OTHER } out_state;

static nf_status output_state(const nf_scaleout *s, const nf_writer *w, out_state *state, nf_error *err)
{
    *state = OUT_NONE;
    struct stat sb;
    if (nf_io_lstat(s->output, &sb) != 0) return NF_OK;
    bool complete = false;
    NF_TRY(nf_writer_entry_complete(w, s->output, &complete, err));
    *state = complete ? OUT_OURS : OUT_OTHER;
    return NF_OK;
}

/* An output's entry that is not this plan's complete artifact: refused, said whether it carries
 * this plan's id (a staged entry or a mixed publication, not an artifact) or not. */
static nf_status other_output(const nf_scaleout *s, nf_error *err)
{
    uint8_t hdr[32] = {0};
    int fd = nf_io_open(s->output, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
    bool our_id = fd >= 0 && nf_io_pread_full(fd, hdr, sizeof hdr, 0) == 0 &&
                  memcmp(hdr, NF_MAGIC_ENTRY, NF_MAGIC_BYTES) == 0 && memcmp(hdr + 16, s->id, 16) == 0;
    if (fd >= 0) nf_io_close(fd);
    if (our_id)
        return nf_error_set(err, NF_ERR_INVALID, "%s: carries this plan's artifact id but is not this plan's complete "
                            "artifact (its directory lacks the checksums: a staged entry, or a publication cut short); "
                            "remove it, rerun the tasks that lack a receipt, and --assemble again", MP(s->output));
    return nf_error_set(err, NF_ERR_INVALID, "%s: another artifact (or another file) is there; the tasks of a plan "
                        "write an output that does not exist yet (remove it first)", MP(s->output));
}

static nf_status run_task(const nf_scaleout *s, size_t task, bool *skipped, nf_error *err)
{
    nf_plan *p = s->plan;
    const nf_convert_options *opt = &s->opt;
    *skipped = false;
    nf_writer *w = NULL;
    NF_TRY(nf_convert_writer(p, opt, s->fingerprint, &w, err));
    /* shared with the other tasks until the last receipt is written: no run or assembler
     * publishes the output meanwhile, so no part of a published artifact is ever replaced */
    out_state out = OUT_NONE;
    nf_status st = nf_writer_hold_lock(w, true, err);
    if (st == NF_OK) st = output_state(s, w, &out, err);
    if (st == NF_OK && out == OUT_OURS) { /* assembled: every task is done */
        *skipped = true;
        nf_writer_free(w);
        return NF_OK;
    }
    if (st == NF_OK) st = check_layout(s, w, err);
    if (st == NF_OK) st = check_inputs(p, s, err);
    if (st == NF_OK && out == OUT_OTHER) st = other_output(s, err);
    /* done already: every file of the task has a receipt of this plan (its fingerprint and
     * inputs) and its size */
    bool done = true;
    for (size_t i = s->task_first[task]; st == NF_OK && done && i < s->task_end[task]; i++) {
        json_t *r = NULL;
        char why[1024];
        st = read_receipt(s, w, i, false, &r, why, sizeof why, err);
        done = r != NULL;
        json_decref(r);
    }
    if (st == NF_OK && done) {
        *skipped = true;
        nf_writer_free(w);
        return NF_OK;
    }
    size_t nf = nf_writer_file_count(w);
    bool *sel = calloc(nf, sizeof *sel);
    nf_errstats_summary *sums = calloc(p->nobjects ? p->nobjects : 1, sizeof *sums);
    char(*checksums)[33] = calloc(p->nobjects ? p->nobjects : 1, sizeof *checksums);
    char *staged = nf_outputs_staged_name(s->output);
    if (st == NF_OK && (!sel || !sums || !checksums || !staged)) st = nomem(err);
    for (size_t i = s->task_first[task]; st == NF_OK && i < s->task_end[task]; i++) sel[i] = true;
    if (st == NF_OK) st = nf_writer_select_files(w, sel, err);
    if (st == NF_OK) st = nf_convert_task(p, w, opt, staged, sums, checksums, err);
    /* the receipts last: a file with one is done */
    for (size_t i = s->task_first[task]; st == NF_OK && i < s->task_end[task]; i++)
        st = write_receipt(p, s, w, task, i, staged, sums, checksums, err);
    free(sel);
    free(sums);
    free(checksums);
    free(staged);
    nf_writer_free(w);
    return st;
}

/* The calls that need the rebuilt plan, called before nf_scaleout_rebuild. */
static nf_status not_rebuilt(const nf_scaleout *s, nf_error *err)
{
    return nf_error_set(err, NF_ERR_USAGE, "%s: nf_scaleout_rebuild first", MP(s->path));
}

nf_status nf_scaleout_task(const nf_scaleout *s, size_t task, bool *skipped, nf_error *err)
{
    *skipped = false;
    if (!s->plan) return not_rebuilt(s, err);
    if (task >= s->ntasks)
        return nf_error_set(err, NF_ERR_INVALID, "%s: no task %zu (the plan has tasks 0 to %zu)", MP(s->path), task,
                            s->ntasks - 1);
    nf_status st = run_task(s, task, skipped, err);
    return st == NF_OK ? st : nf_error_forward(err, st, "task %zu", task);
}

/* ---------------------------------------------------------------- assemble */
/* The task that writes file i. */
static size_t task_of(const nf_scaleout *s, size_t i)
{
    for (size_t t = 0; t < s->ntasks; t++)
        if (i >= s->task_first[t] && i < s->task_end[t]) return t;
    return 0;
}

nf_status nf_scaleout_assemble(const nf_scaleout *s, bool verify, nf_error *err)
{
    if (!s->plan) return not_rebuilt(s, err);
    nf_plan *p = s->plan;
    const nf_convert_options *opt = &s->opt;
    nf_writer *w = NULL;
    NF_TRY(nf_convert_writer(p, opt, s->fingerprint, &w, err));
    /* exclusive, from the first look at the output to the last receipt removed: no task renames
     * a part, and no other run publishes, meanwhile */
    out_state out = OUT_NONE;
    nf_status st = nf_writer_hold_lock(w, false, err);
    if (st == NF_OK) st = output_state(s, w, &out, err);
    if (st == NF_OK) st = check_layout(s, w, err);
    if (st == NF_OK && out == OUT_OTHER) st = other_output(s, err);
    /* assembled already (this plan's complete entry in place): a run after one whose last steps
     * failed finishes them from the receipts left; one after a complete run has nothing to do */
    bool published = out == OUT_OURS;
    size_t n = p->nobjects;
    nf_errstats_summary *sums = calloc(n ? n : 1, sizeof *sums);
    char(*sum_hex)[33] = calloc(n ? n : 1, sizeof *sum_hex);
    const char **checksums = calloc(n ? n : 1, sizeof *checksums);
    bool *have = calloc(n ? n : 1, sizeof *have);
    char *staged = nf_outputs_staged_name(s->output);
    if (st == NF_OK && (!sums || !sum_hex || !checksums || !have || !staged)) st = nomem(err);
    nf_strset ids = {0}; /* object id -> plan index: receipts name objects by id */
    for (size_t k = 0; st == NF_OK && k < n; k++)
        if (nf_strset_insert(&ids, p->objects[k].id, NULL, k, NULL) < 0) st = nomem(err);
    for (size_t i = 0; st == NF_OK && i < s->nfiles; i++) {
        json_t *r = NULL;
        char why[1024] = "";
        st = read_receipt(s, w, i, published, &r, why, sizeof why, err);
        if (st == NF_OK && !r && published) { /* a complete earlier run removed them */
            nf_strset_free(&ids);
            free(sums);
            free(sum_hex);
            free(checksums);
            free(have);
            free(staged);
            nf_writer_free(w);
            return NF_OK;
        }
        if (st == NF_OK && !r) {
            st = nf_error_set(err, NF_ERR_INVALID, "%s; rerun task %zu", why, task_of(s, i));
            break;
        }
        if (st == NF_OK && verify) {
            nf_writer_file f;
            nf_writer_file_info(w, i, &f);
            char d[33];
            st = file_digest(i == 0 && !published ? staged : f.path, f.size - f.payload_bytes, d, err);
            if (st == NF_OK && strcmp(d, str_member(r, "digest")) != 0)
                st = nf_error_set(err, NF_ERR_INVALID, "%s: its bytes are not those its receipt records; rerun task %zu",
                                  MP(i == 0 ? staged : f.path), task_of(s, i));
        }
        /* every object's checksum and statistics: from each receipt that lists it, all agreeing;
         * a receipt lists exactly the objects with bytes in its file */
        const json_t *objs = r ? json_object_get(r, "objects") : NULL;
        size_t held_first, held_end;
        nf_writer_file_objects(w, i, &held_first, &held_end);
        size_t held = held_end - held_first;
        if (st == NF_OK && r && json_array_size(objs) != held)
            st = nf_error_set(err, NF_ERR_INVALID, "receipt of file %zu lists %zu objects, the file holds %zu; rerun "
                              "task %zu", i, json_array_size(objs), held, task_of(s, i));
        for (size_t k = 0; st == NF_OK && k < json_array_size(objs); k++) {
            const json_t *o = json_array_get(objs, k);
            const char *id = str_member(o, "object"), *sum = str_member(o, "checksum");
            size_t idx = n;
            if (!id || !nf_strset_find(&ids, id, NULL, &idx)) idx = n;
            nf_errstats_summary m = {0};
            bool tensor = idx < n && p->objects[idx].kind == NF_OBJECT_TENSOR;
            if (idx == n || idx < held_first || idx >= held_end || !is_hex(sum, 32) ||
                (tensor && !stats_of(json_object_get(o, "stats"), p->objects[idx].budget != NULL, &m))) {
                st = nf_error_set(err, NF_ERR_INVALID, "receipt of file %zu: objects[%zu] is not an object of the plan "
                                  "in that file with a checksum%s; rerun task %zu", i, k, tensor ? " and statistics" : "", task_of(s, i));
                break;
            }
            if (have[idx] && (strcmp(sum_hex[idx], sum) != 0 || memcmp(&sums[idx], &m, sizeof m) != 0)) {
                st = nf_error_set(err, NF_ERR_INVALID, "object '%s': the receipts of two files disagree on it; rerun task "
                                  "%zu", id, task_of(s, i));
                break;
            }
            memcpy(sum_hex[idx], sum, 33);
            sums[idx] = m;
            have[idx] = true;
        }
        json_decref(r);
    }
    for (size_t k = 0; st == NF_OK && k < n; k++) {
        if (!have[k]) st = nf_error_set(err, NF_ERR_INVALID, "object '%s': no receipt lists it", p->objects[k].id);
        checksums[k] = sum_hex[k];
    }
    if (st == NF_OK) st = nf_convert_assemble(p, w, opt, staged, sums, checksums, published, err);
    /* published: the receipts have done their work (best effort) */
    for (size_t i = 0; st == NF_OK && i < s->nfiles; i++) {
        nf_writer_file f;
        nf_writer_file_info(w, i, &f);
        char *rp = receipt_path(&f, i, s->output);
        if (rp) nf_io_unlink(rp);
        free(rp);
    }
    nf_strset_free(&ids);
    free(sums);
    free(sum_hex);
    free(checksums);
    free(have);
    free(staged);
    nf_writer_free(w);
    return st;
}

/* ---------------------------------------------------------------- a task's objects
 * The ids with bytes in task `task`'s files (the union of their "objects", each once, in the
 * plan's order), for ninfer-verify --plan --task (docs/ninfer-verify.md, "One task of a plan"). */
nf_status nf_scaleout_task_objects(const nf_scaleout *s, size_t task, const char ***ids, size_t *nids, nf_error *err)
{
    *ids = NULL;
    *nids = 0;
    if (task >= s->ntasks)
        return nf_error_set(err, NF_ERR_INVALID, "%s: no task %zu (the plan has tasks 0 to %zu)", MP(s->path), task,
                            s->ntasks - 1);
    size_t cap = 0;
    for (size_t i = s->task_first[task]; i < s->task_end[task]; i++) cap += s->file_ids[i].n; /* (< the text's bytes) */
    const char **out = calloc(cap ? cap : 1, sizeof *out);
    if (!out) return nomem(err);
    nf_strset seen = {0}; /* an object spanning two files is listed by both */
    size_t n = 0;
    for (size_t i = s->task_first[task]; i < s->task_end[task]; i++) {
        const char *id = s->ids + s->file_ids[i].at;
        for (size_t k = 0; k < s->file_ids[i].n; k++, id += strlen(id) + 1) {
            int added = nf_strset_insert(&seen, id, NULL, 0, NULL);
            if (added < 0) {
                nf_strset_free(&seen);
                free(out);
                return nomem(err);
            }
            if (added) out[n++] = id;
        }
    }
    nf_strset_free(&seen);
    *ids = out;
    *nids = n;
    return NF_OK;
}

/* A task's files (nf_scaleout_open checked that the tasks cover every file once, in order). */
nf_status nf_scaleout_task_files(const nf_scaleout *s, size_t task, size_t *first, size_t *end, nf_error *err)
{
    *first = *end = 0;
    if (task >= s->ntasks)
        return nf_error_set(err, NF_ERR_INVALID, "%s: no task %zu (the plan has tasks 0 to %zu)", MP(s->path), task,
                            s->ntasks - 1);
    *first = s->task_first[task];
    *end = s->task_end[task];
    return NF_OK;
}
