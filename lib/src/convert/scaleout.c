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
 * Plan files and receipts are read as untrusted JSON: size-capped, every member checked.
 *
 * This file runs a task and the assembly; the plan is written in scaleout_plan.c, read and the
 * conversion rebuilt in scaleout_open.c, the receipts are scaleout_receipt.c's and the inputs'
 * fingerprints and roots scaleout_inputs.c's (scaleout_impl.h). */
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
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: carries this plan's artifact id but is not this plan's complete "
                            "artifact (its directory lacks the checksums: a staged entry, or a publication cut short); "
                            "remove it, rerun the tasks that lack a receipt, and --assemble again",
                            MP(s->output));
    return nf_error_set(err, NF_ERR_INVALID,
                        "%s: another artifact (or another file) is there; the tasks of a plan "
                        "write an output that does not exist yet (remove it first)",
                        MP(s->output));
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
    if (st == NF_OK) st = nf_convert_scaleout_check_layout(s, w, err);
    if (st == NF_OK) st = nf_convert_scaleout_check_inputs(p, s, err);
    if (st == NF_OK && out == OUT_OTHER) st = other_output(s, err);
    /* done already: every file of the task has a receipt of this plan (its fingerprint and
     * inputs) and its size */
    bool done = true;
    for (size_t i = s->task_first[task]; st == NF_OK && done && i < s->task_end[task]; i++) {
        json_t *r = NULL;
        char why[1024];
        st = nf_convert_scaleout_read_receipt(s, w, i, false, &r, why, sizeof why, err);
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
    if (st == NF_OK && (!sel || !sums || !checksums || !staged)) st = nf_convert_scaleout_nomem(err);
    for (size_t i = s->task_first[task]; st == NF_OK && i < s->task_end[task]; i++) sel[i] = true;
    if (st == NF_OK) st = nf_writer_select_files(w, sel, err);
    if (st == NF_OK) st = nf_convert_task(p, w, opt, staged, sums, checksums, err);
    /* the receipts last: a file with one is done */
    for (size_t i = s->task_first[task]; st == NF_OK && i < s->task_end[task]; i++)
        st = nf_convert_scaleout_write_receipt(p, s, w, task, i, staged, sums, checksums, err);
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
    if (st == NF_OK) st = nf_convert_scaleout_check_layout(s, w, err);
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
    if (st == NF_OK && (!sums || !sum_hex || !checksums || !have || !staged)) st = nf_convert_scaleout_nomem(err);
    nf_strset ids = {0}; /* object id -> plan index: receipts name objects by id */
    for (size_t k = 0; st == NF_OK && k < n; k++)
        if (nf_strset_insert(&ids, p->objects[k].id, NULL, k, NULL) < 0) st = nf_convert_scaleout_nomem(err);
    for (size_t i = 0; st == NF_OK && i < s->nfiles; i++) {
        json_t *r = NULL;
        char why[1024] = "";
        st = nf_convert_scaleout_read_receipt(s, w, i, published, &r, why, sizeof why, err);
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
            st = nf_convert_scaleout_file_digest(i == 0 && !published ? staged : f.path, f.size - f.payload_bytes, d,
                                                 err);
            if (st == NF_OK && strcmp(d, nf_convert_scaleout_str_member(r, "digest")) != 0)
                st = nf_error_set(err, NF_ERR_INVALID,
                                  "%s: its bytes are not those its receipt records; rerun task %zu",
                                  MP(i == 0 ? staged : f.path), task_of(s, i));
        }
        /* every object's checksum and statistics: from each receipt that lists it, all agreeing;
         * a receipt lists exactly the objects with bytes in its file */
        const json_t *objs = r ? json_object_get(r, "objects") : NULL;
        size_t held_first, held_end;
        nf_writer_file_objects(w, i, &held_first, &held_end);
        size_t held = held_end - held_first;
        if (st == NF_OK && r && json_array_size(objs) != held)
            st = nf_error_set(err, NF_ERR_INVALID,
                              "receipt of file %zu lists %zu objects, the file holds %zu; rerun "
                              "task %zu",
                              i, json_array_size(objs), held, task_of(s, i));
        for (size_t k = 0; st == NF_OK && k < json_array_size(objs); k++) {
            const json_t *o = json_array_get(objs, k);
            const char *id = nf_convert_scaleout_str_member(o, "object"),
                       *sum = nf_convert_scaleout_str_member(o, "checksum");
            size_t idx = n;
            if (!id || !nf_strset_find(&ids, id, NULL, &idx)) idx = n;
            nf_errstats_summary m = {0};
            bool tensor = idx < n && p->objects[idx].kind == NF_OBJECT_TENSOR;
            if (idx == n || idx < held_first || idx >= held_end || !nf_convert_scaleout_is_hex(sum, 32) ||
                (tensor &&
                 !nf_convert_scaleout_stats_of(json_object_get(o, "stats"), p->objects[idx].budget != NULL, &m))) {
                st = nf_error_set(err, NF_ERR_INVALID,
                                  "receipt of file %zu: objects[%zu] is not an object of the plan "
                                  "in that file with a checksum%s; rerun task %zu",
                                  i, k, tensor ? " and statistics" : "", task_of(s, i));
                break;
            }
            if (have[idx] && (strcmp(sum_hex[idx], sum) != 0 || memcmp(&sums[idx], &m, sizeof m) != 0)) {
                st = nf_error_set(err, NF_ERR_INVALID,
                                  "object '%s': the receipts of two files disagree on it; rerun task "
                                  "%zu",
                                  id, task_of(s, i));
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
        char *rp = nf_convert_scaleout_receipt_path(&f, i, s->output);
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
    if (!out) return nf_convert_scaleout_nomem(err);
    nf_strset seen = {0}; /* an object spanning two files is listed by both */
    size_t n = 0;
    for (size_t i = s->task_first[task]; i < s->task_end[task]; i++) {
        const char *id = s->ids + s->file_ids[i].at;
        for (size_t k = 0; k < s->file_ids[i].n; k++, id += strlen(id) + 1) {
            int added = nf_strset_insert(&seen, id, NULL, 0, NULL);
            if (added < 0) {
                nf_strset_free(&seen);
                free(out);
                return nf_convert_scaleout_nomem(err);
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
