/* Writing a scale-out plan (docs/scale-out.md): the writer laid out, its files grouped into
 * tasks, and the plan file streamed record by record (scaleout_impl.h). */
#define _XOPEN_SOURCE 700 /* realpath (XSI) */
#include <errno.h>
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
#include "common/pool.h"
#include "common/strset.h"
#include "container/container_module.h"
#include "convert/convert_impl.h"
#include "outputs/out_names.h"
#include "convert/scaleout_impl.h"
#include "outputs/out_whole.h"

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
    bool nomem;     /* a piece could not be built or dumped */
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
                     "payload", (json_int_t)f.logical_start, (json_int_t)(f.logical_start + f.payload_bytes), "objects",
                     objs);
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
    /* what the directory's provenance adds to the plan's: the sources' files, sizes, SHA-256 and
     * hub, and the recipe's SHA-256 (the tasks cannot take them again: docs/provenance.md) */
    json_t *prov = json_object();
    const json_t *laid = p->provenance_laid ? p->provenance_laid : p->provenance;
    if (prov && json_object_get(laid, "recipe_sha256"))
        json_object_set(prov, "recipe_sha256", json_object_get(laid, "recipe_sha256"));
    if (prov) json_object_set(prov, "sources", json_object_get(laid, "sources"));
    out_json(o,
             json_pack("{s:i,s:s,s:s,s:s,s:s,s:O,s:O,s:o}", "ninfer_plan", PLAN_VERSION, "output", opt->output,
                       "artifact_id", id, "fingerprint", fp, "cwd", cwd, "conversion", conversion, "inputs", inputs,
                       "provenance", prov),
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

static nf_status plan_provenance(nf_plan *p, const nf_convert_options *opt, nf_error *err)
{
    nf_convert_digests *d = NULL;
    NF_TRY(nf_convert_digests_plan(p, !opt->no_source_digests, &d, err));
    nf_status st = nf_convert_digests_hash_all(d, nf_pool_threads(opt->threads), opt->cancel, err);
    if (st == NF_OK) {
        json_decref(p->provenance_laid);
        json_decref(p->provenance_final);
        p->provenance_laid = nf_convert_digests_provenance(p, d, true);
        p->provenance_final = json_incref(p->provenance_laid);
        if (!p->provenance_laid) st = nf_convert_scaleout_nomem(err);
    }
    nf_convert_digests_free(d);
    return st;
}

nf_status nf_scaleout_plan(nf_plan *p, const nf_convert_options *opt, size_t tasks, const char *plan_path,
                           size_t *ntasks, nf_error *err)
{
    NF_TRY(nf_convert_check_outputs(p, opt, err));
    json_t *conversion = NULL;
    NF_TRY(nf_convert_scaleout_conversion_of(p, opt, &conversion, err));
    /* the sources' digests are the plan's maker's to take (its tasks run anywhere): every file
     * hashed now, on the run's threads, and recorded in the plan (docs/provenance.md) */
    nf_status st = plan_provenance(p, opt, err);
    nf_writer *w = NULL;
    if (st == NF_OK) st = nf_convert_writer(p, opt, NULL, &w, err);
    size_t nf = st == NF_OK ? nf_writer_file_count(w) : 0;
    size_t *first = calloc(nf ? nf : 1, sizeof *first), *end = calloc(nf ? nf : 1, sizeof *end);
    json_t *inputs = NULL;
    if (st == NF_OK && (!first || !end)) st = nf_convert_scaleout_nomem(err);
    size_t nt = 0;
    if (st == NF_OK) {
        group_tasks(w, tasks, first, end, &nt);
        st = nf_convert_scaleout_inputs_of(p, &inputs, err);
    }
    /* what every task will refuse, refused now: an input outside the allowed roots */
    if (st == NF_OK) st = nf_convert_scaleout_check_roots(p->recipe, inputs, NULL, err);
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
