/* A task's receipts (docs/scale-out.md): one per file, written last by the task, read back and
 * checked by the assembler (scaleout_impl.h). */
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
bool nf_convert_scaleout_stats_of(const json_t *j, bool budget, nf_errstats_summary *m)
{
    double w = 0;
    const json_t *wse = json_object_get(j, "wse");
    if ((wse || budget) && (!exact_value(wse, &w) || !isfinite(w) || w < 0 || (!budget && w != 0))) return false;
    m->wse = w;
    return json_is_object(j) && nf_convert_scaleout_u64_member(j, "count", &m->count) &&
           nf_convert_scaleout_u64_member(j, "skipped", &m->skipped) &&
           exact_value(json_object_get(j, "max_abs"), &m->max_abs) && exact_value(json_object_get(j, "sse"), &m->sse) &&
           exact_value(json_object_get(j, "ssx"), &m->ssx) && exact_value(json_object_get(j, "rmse"), &m->rmse) &&
           exact_value(json_object_get(j, "snr_db"), &m->snr_db);
}

/* XXH3-128 of bytes [from, end) of a file, streamed. */
nf_status nf_convert_scaleout_file_digest(const char *path, uint64_t from, char out[33], nf_error *err)
{
    int fd = nf_io_open(path, O_RDONLY | O_NONBLOCK, 0);
    if (fd < 0) return nf_error_errno(err, errno, "%s: cannot open", MP(path));
    struct stat sb;
    int e = nf_io_fstat(fd, &sb);
    size_t chunk = (size_t)1 << 20;
    uint8_t *buf = malloc(chunk);
    nf_xxh3_stream *x = nf_xxh3_stream_new();
    nf_status st = e          ? nf_error_errno(err, e, "%s: cannot stat", MP(path))
                   : buf && x ? NF_OK
                              : nf_convert_scaleout_nomem(err);
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
 * exec_outputs.c's nf_convert_plan_writer; nf_writer_file_objects gives a file's objects by
 * those indices.) */

nf_status nf_convert_scaleout_write_receipt(const nf_plan *p, const nf_scaleout *s, const nf_writer *w, size_t task,
                                            size_t i, const char *staged, const nf_errstats_summary *sums,
                                            char (*checksums)[33], nf_error *err)
{
    nf_writer_file f;
    nf_writer_file_info(w, i, &f);
    const char *file = i == 0 ? staged : f.path;
    char digest[33];
    /* the entry's file from its payload on: its directory gets the checksums at assembly */
    NF_TRY(nf_convert_scaleout_file_digest(file, f.size - f.payload_bytes, digest, err));
    json_t *objs = json_array();
    size_t first, end;
    nf_writer_file_objects(w, i, &first, &end);
    for (size_t k = first; objs && k < end; k++) {
        json_t *rec = json_pack("{s:s,s:s}", "object", p->objects[k].id, "checksum", checksums[k]);
        if (rec && p->objects[k].kind == NF_OBJECT_TENSOR) json_object_set_new(rec, "stats", stats_json(&sums[k]));
        json_array_append_new(objs, rec);
    }
    char *rp = nf_convert_scaleout_receipt_path(&f, i, s->output);
    json_t *r = json_pack("{s:i,s:s,s:s,s:I,s:I,s:s,s:I,s:s,s:o}", "ninfer_receipt", PLAN_VERSION, "plan",
                          s->fingerprint, "inputs", s->inputs, "task", (json_int_t)task, "file", (json_int_t)i, "path",
                          file, "bytes", (json_int_t)f.size, "digest", digest, "objects", objs);
    nf_status st = r && rp ? nf_convert_scaleout_put_json(rp, r, err) : nf_convert_scaleout_nomem(err);
    json_decref(r);
    free(rp);
    return st;
}

/* Receipt of file i, checked against the plan and the file's size (NULL root when there is
 * none: *why says what is wrong). */
nf_status nf_convert_scaleout_read_receipt(const nf_scaleout *s, const nf_writer *w, size_t i, bool published,
                                           json_t **out, char *why, size_t whylen, nf_error *err)
{
    *out = NULL;
    nf_writer_file f;
    nf_writer_file_info(w, i, &f);
    char *rp = nf_convert_scaleout_receipt_path(&f, i, s->output);
    if (!rp) return nf_convert_scaleout_nomem(err);
    struct stat sb;
    if (stat(rp, &sb) != 0) {
        snprintf(why, whylen, "%s: no receipt (%s)", MP(i == 0 ? s->output : f.path), MP(rp));
        free(rp);
        return NF_OK;
    }
    json_t *r = NULL;
    nf_error local;
    nf_status st = nf_convert_scaleout_load_json(rp, RECEIPT_MAX_BYTES, &r, &local);
    if (st == NF_ERR_NOMEM || st == NF_ERR_IO) {
        if (err) *err = local;
        free(rp);
        return st;
    }
    uint64_t file = 0, bytes = 0;
    if (st != NF_OK) {
        snprintf(why, whylen, "%s", local.message);
    } else if (!nf_convert_scaleout_str_member(r, "plan") ||
               strcmp(nf_convert_scaleout_str_member(r, "plan"), s->fingerprint) != 0 ||
               !nf_convert_scaleout_str_member(r, "inputs") ||
               strcmp(nf_convert_scaleout_str_member(r, "inputs"), s->inputs) != 0) {
        /* another layout, or the same from other inputs (a plan made again after a source
         * changed), or a receipt of a version that did not bind them */
        snprintf(why, whylen, "%s: made by another plan (another artifact, or other inputs)", MP(rp));
    } else if (!nf_convert_scaleout_u64_member(r, "file", &file) || file != i ||
               !nf_convert_scaleout_u64_member(r, "bytes", &bytes) || bytes != f.size ||
               !nf_convert_scaleout_is_hex(nf_convert_scaleout_str_member(r, "digest"), 32) ||
               !json_is_array(json_object_get(r, "objects"))) {
        snprintf(why, whylen, "%s: not the receipt of file %zu of %llu bytes", MP(rp), i, (unsigned long long)f.size);
    } else {
        const char *file_path = i == 0 ? NULL : f.path;
        /* the entry's file: staged, or once published the entry itself */
        char *staged = i == 0 && !published ? nf_outputs_staged_name(s->output) : NULL;
        const char *fpath = file_path ? file_path : staged ? staged : s->output;
        if (!fpath || stat(fpath, &sb) != 0)
            snprintf(why, whylen, "%s: missing (its receipt is there)", MP(fpath ? fpath : "?"));
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
