/* Executing a plan: every tensor object is cut into bounded chunks of rows; worker threads
 * read a chunk from its source, encode it (method or import), compare the represented values
 * with the source for the report, and hand the bytes to a sink: the container writer, or a
 * comparison with an existing artifact (verify --against).  Each chunk owns disjoint output
 * bytes, so the result is the same for any thread count or chunk size; the report's statistics
 * are summed exactly across chunks (stats/stats.h), so they are the same too.
 *
 * This file is the top of the execution: a run (nf_plan_execute), a scale-out task and its
 * assembly, and the comparison with an artifact.  The jobs on the pool are in exec_jobs.c, the
 * conversion report in exec_report.c, the inputs and the writer in exec_outputs.c (exec_impl.h). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ninfer/ninfer.h>

#include "common/io.h"
#include "common/pool.h"
#include "convert/convert_impl.h"
#include "convert/exec_impl.h"
#include "outputs/out_names.h"
#include "outputs/out_publish.h"
#include "stats/stats.h"

/* A path as messages show it: shortened in the middle when long (common/io.h, docs/security.md 7.1, M8). */
#define MP(path) nf_io_msg_path((path), (char[NF_IO_MSG_PATH + 1]){0})


/* Every object w wants (all of them, or a task's: nf_writer_object_selected) encoded into the
 * begun writer: resources, tails, then the row chunks on the thread pool, measured when
 * opt->report.  r is the caller's (its statistics stay there); s lives as long as r runs. */
static nf_status encode_into(nf_plan *p, nf_writer *w, const nf_convert_options *opt, runner *r, sink *s, nf_error *err)
{
    NF_TRY(nf_convert_write_resources(p, w, err));
    NF_TRY(nf_convert_write_tails(p, w, err));
    r->plan = p;
    r->chunk_values = opt->chunk_values ? opt->chunk_values : DEFAULT_CHUNK_VALUES;
    NF_TRY(nf_convert_plan_jobs(r, err));
    for (size_t i = 0; i < p->nobjects; i++)
        r->objs[i].skip = !nf_writer_object_selected(w, p->objects[i].writer_index);
    r->sink = s;
    s->writer = w;
    r->stats = opt->report;
    r->kern = nf_stats_kernels_active();
    r->cancel = opt->cancel;
    pthread_mutex_init(&r->lock, NULL);
    nf_status st = nf_convert_run_jobs(r, nf_pool_threads(opt->threads), opt, err);
    pthread_mutex_destroy(&r->lock);
    if (st == NF_OK && opt->cancel && *opt->cancel) st = nf_error_set(err, NF_ERR_IO, "interrupted");
    return st;
}

/* The run's provenance, laid out with placeholders for its sources' digests (source_digests.c). */
static nf_status plan_digests(nf_plan *p, const nf_convert_options *opt, nf_convert_digests **d, nf_error *err)
{
    NF_TRY(nf_convert_digests_plan(p, !opt->no_source_digests, d, err));
    json_decref(p->provenance_laid);
    p->provenance_laid = nf_convert_digests_provenance(p, *d, false);
    if (!p->provenance_laid) return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    return NF_OK;
}

/* The digests known: the writer's placeholders filled, the report's provenance made. */
static nf_status finish_digests(nf_plan *p, nf_convert_digests *d, nf_writer *w, nf_error *err)
{
    NF_TRY(nf_convert_digests_finish(d, w, false, err));
    json_decref(p->provenance_final);
    p->provenance_final = nf_convert_digests_provenance(p, d, true);
    if (!p->provenance_final) return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    return NF_OK;
}

/* A file beside the artifact (the report, the statement) renamed into place once the artifact is
 * published: the one it replaces kept aside in *backup until the commit; *placed when a new file
 * now stands at path (a rollback removes it when nothing was kept aside). */
static nf_status publish_beside(const char *path, char **tmp, bool replace, char **backup, bool *placed, nf_error *err)
{
    nf_status st = nf_outputs_publish_report(path, *tmp, replace, backup, err);
    if (st == NF_OK && *tmp) {
        free(*tmp);
        *tmp = NULL; /* renamed into place */
        *placed = true;
    }
    return st;
}

/* The statement without --force: linked into place, so that a file that came to stand at its
 * name since the check (or the artifact's own name reached another way) is never replaced. */
static nf_status publish_new(const char *path, char **tmp, bool *placed, nf_error *err)
{
    int e = nf_io_link(*tmp, path);
    if (e) return nf_error_errno(err, e, "cannot publish %s", MP(path));
    *placed = true;
    nf_io_unlink(*tmp);
    free(*tmp);
    *tmp = NULL;
    return NF_OK;
}

/* A failed publication of the set: what was kept aside put back, what is new removed. */
static void unpublish(const char *path, char *backup, bool placed)
{
    if (backup) nf_outputs_restore(path, backup);
    else if (placed) nf_io_unlink(path);
}

static void drop_temp(char **tmp)
{
    if (*tmp) nf_io_unlink(*tmp);
    free(*tmp);
    *tmp = NULL;
}

nf_status nf_plan_execute(nf_plan *p, const nf_convert_options *opt, nf_error *err)
{
    char *report_path = nf_outputs_report_name(opt->output);
    if (!report_path) return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    input_set in = {0};
    nf_status st = nf_convert_collect_inputs(p, &in, err);
    if (st == NF_OK) st = nf_convert_prepare_outputs(&in, opt, report_path, err);
    /* --force --no-report removes the report of the artifact it replaces, unless that is an input
     * or not a regular file (never replaced, docs/security.md 1.3). */
    struct stat rsb;
    bool report_regular = nf_io_lstat(report_path, &rsb) != 0 || S_ISREG(rsb.st_mode);
    bool replace_report = opt->force && report_regular && (opt->report || !nf_convert_input_of(&in, report_path));
    free(in.v);
    nf_convert_digests *d = NULL;
    if (st == NF_OK) st = plan_digests(p, opt, &d, err);
    nf_writer *w = NULL;
    if (st == NF_OK) st = nf_convert_plan_writer(p, opt, &w, err);
    if (st != NF_OK) {
        nf_convert_digests_free(d);
        free(report_path);
        return st;
    }
    runner r = {0};
    sink s = {0};
    char *report_tmp = NULL, *statement_tmp = NULL;
    st = nf_writer_begin(w, err);
    /* the sources hashed while they are converted: each file read once more, overlapping */
    if (st == NF_OK) st = nf_convert_digests_start(d, nf_pool_threads(opt->threads), opt->cancel, err);
    if (st == NF_OK) st = encode_into(p, w, opt, &r, &s, err);
    if (st == NF_OK) st = finish_digests(p, d, w, err);
    else nf_convert_digests_finish(d, w, true, NULL);
    if (st == NF_OK && opt->report) {
        char id[33];
        nf_writer_id_hex(w, id);
        nf_errstats_summary *sums = nf_convert_summaries(p, &r);
        st = sums ? nf_convert_report_temp(p, opt, id, sums, report_path, &report_tmp, err)
                  : nf_error_set(err, NF_ERR_NOMEM, "out of memory");
        free(sums);
    }
    /* Publication of the set (artifact, report, statement) as one: the artifact is published
     * with the files it replaces kept aside, then the report and the statement (the ones they
     * replace kept aside too), and only then are the kept files dropped (the writer's commit
     * first: its old entry is the commit point).  Any failure before puts the whole old set back. */
    if (st == NF_OK) st = nf_writer_publish(w, err);
    if (st == NF_OK && opt->attest)
        st = nf_convert_attest_temp(p, w, p->provenance_final, opt->attest, opt->cancel, &statement_tmp, err);
    char *report_backup = NULL, *statement_backup = NULL;
    bool report_placed = false, statement_placed = false;
    if (st == NF_OK) st = publish_beside(report_path, &report_tmp, replace_report, &report_backup, &report_placed, err);
    if (st == NF_OK && statement_tmp)
        st = opt->force ? publish_beside(opt->attest, &statement_tmp, true, &statement_backup, &statement_placed, err)
                        : publish_new(opt->attest, &statement_tmp, &statement_placed, err);
    if (st == NF_OK) {
        nf_writer_commit(w, NULL);
        if (report_backup) nf_io_unlink(report_backup); /* best effort, like the writer's */
        if (statement_backup) nf_io_unlink(statement_backup);
    } else {
        if (opt->attest) unpublish(opt->attest, statement_backup, statement_placed);
        unpublish(report_path, report_backup, report_placed);
        nf_writer_abort(w);
    }
    free(report_backup);
    free(statement_backup);
    drop_temp(&report_tmp);
    drop_temp(&statement_tmp);
    nf_convert_runner_free(&r);
    nf_writer_free(w);
    nf_convert_digests_free(d);
    free(report_path);
    return st;
}

nf_status nf_convert_task(nf_plan *p, nf_writer *w, const nf_convert_options *opt, const char *entry_staged,
                          nf_errstats_summary *sums, char (*checksums)[33], nf_error *err)
{
    input_set in = {0};
    nf_status st = nf_convert_collect_inputs(p, &in, err);
    if (st == NF_OK) st = nf_convert_refuse_inputs(&in, opt->output, false, err);
    free(in.v);
    NF_TRY(st);
    runner r = {0};
    sink s = {0};
    st = nf_writer_begin(w, err);
    if (st == NF_OK) st = encode_into(p, w, opt, &r, &s, err);
    if (st == NF_OK) st = nf_writer_stage(w, entry_staged, err);
    for (size_t i = 0; st == NF_OK && i < p->nobjects; i++) {
        size_t k = p->objects[i].writer_index;
        sums[i] = r.objs[i].sum;
        checksums[i][0] = '\0';
        if (nf_writer_object_selected(w, k) && !nf_writer_object_checksum(w, k, checksums[i]))
            st = nf_error_set(err, NF_ERR_IO, "object '%s': no checksum was formed", p->objects[i].id);
    }
    nf_convert_runner_free(&r);
    return st;
}

nf_status nf_convert_assemble(nf_plan *p, nf_writer *w, const nf_convert_options *opt, const char *entry_staged,
                              const nf_errstats_summary *sums, const char *const *checksums, bool published,
                              nf_error *err)
{
    char *report_path = nf_outputs_report_name(opt->output);
    if (!report_path) return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    /* the report's place as a run checks it (never an input, never a non-regular file, an
     * existing one only with --force) -- except the report an interrupted assembly of this very
     * artifact may have put there */
    nf_convert_options ro = *opt;
    if (published) ro.force = true;
    input_set in = {0};
    nf_status st = nf_convert_collect_inputs(p, &in, err);
    if (st == NF_OK) st = nf_convert_prepare_outputs(&in, &ro, report_path, err);
    free(in.v);
    char *report_tmp = NULL;
    if (st == NF_OK && opt->report) {
        char id[33];
        nf_writer_id_hex(w, id);
        st = nf_convert_report_temp(p, opt, id, sums, report_path, &report_tmp, err);
    }
    const char **by_writer = calloc(p->nobjects ? p->nobjects : 1, sizeof *by_writer);
    if (st == NF_OK && !by_writer) st = nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    for (size_t i = 0; st == NF_OK && i < p->nobjects; i++) by_writer[p->objects[i].writer_index] = checksums[i];
    if (st == NF_OK && !published) st = nf_writer_assemble(w, by_writer, entry_staged, err);
    /* published (by a run that failed after its commit point): the staged name is a second link
     * of the entry, no longer needed */
    if (st == NF_OK && published) (void)nf_io_unlink(entry_staged);
    free(by_writer);
    /* the entry is the commit point; the report follows it (a failure here leaves the complete
     * artifact without its report, said so) */
    if (st == NF_OK && report_tmp) {
        int e = nf_io_rename(report_tmp, report_path);
        if (e)
            st = nf_error_errno(err, e,
                                "%s: the artifact is complete, but its report could not be put in place "
                                "from %s",
                                MP(report_path), MP(report_tmp));
        else {
            free(report_tmp);
            report_tmp = NULL;
        }
    }
    if (report_tmp) {
        if (st != NF_OK) nf_io_unlink(report_tmp);
        free(report_tmp);
    }
    free(report_path);
    return st;
}

nf_status nf_plan_compare(nf_plan *p, nf_artifact *a, unsigned threads, nf_compare_fn report, void *ctx,
                          size_t *differing, nf_error *err)
{
    return nf_convert_compare_some(p, a, threads, NULL, report, ctx, differing, err);
}

nf_status nf_convert_compare_some(nf_plan *p, nf_artifact *a, unsigned threads, const bool *only, nf_compare_fn report,
                                  void *ctx, size_t *differing, nf_error *err)
{
    *differing = 0;
    sink s = {0};
    s.artifact = a;
    s.targets = calloc(p->nobjects ? p->nobjects : 1, sizeof *s.targets);
    s.differs = calloc(p->nobjects ? p->nobjects : 1, sizeof *s.differs);
    s.first_diff = calloc(p->nobjects ? p->nobjects : 1, sizeof *s.first_diff);
    if (!s.targets || !s.differs || !s.first_diff) {
        free(s.targets);
        free(s.differs);
        free(s.first_diff);
        return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    }
    pthread_mutex_init(&s.lock, NULL);
    nf_status st = NF_OK;
    /* Objects the plan re-derives must exist with the same geometry. */
    bool *usable = calloc(p->nobjects ? p->nobjects : 1, sizeof *usable);
    if (!usable) st = nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    for (size_t i = 0; st == NF_OK && i < p->nobjects; i++) {
        if (only && !only[i]) continue; /* not asked for: neither re-derived nor reported */
        const plan_object *o = &p->objects[i];
        const nf_object *t = nf_artifact_find(a, o->id);
        char msg[512];
        if (!t) {
            snprintf(msg, sizeof msg, "the artifact has no object '%s'", o->id);
        } else if (o->kind == NF_OBJECT_RESOURCE) {
            if (t->kind == NF_OBJECT_RESOURCE && t->bytes == o->bytes) continue;
            snprintf(msg, sizeof msg, "resource differs in kind or size from %s", o->path);
        } else if (t->kind != NF_OBJECT_TENSOR || t->format != o->g.format || t->layout != o->g.layout ||
                   t->bytes != o->g.bytes || t->rank != o->g.rank ||
                   memcmp(t->shape, o->g.shape, o->g.rank * sizeof *t->shape) != 0) {
            snprintf(msg, sizeof msg, "the recipe gives %s %s of %llu bytes; the artifact holds something else",
                     o->g.format->name, o->g.layout->name, (unsigned long long)o->g.bytes);
        } else {
            s.targets[i] = t;
            usable[i] = true;
            continue;
        }
        report(ctx, o->id, msg);
        (*differing)++;
    }
    runner r = {0};
    r.plan = p;
    r.chunk_values = DEFAULT_CHUNK_VALUES;
    if (st == NF_OK) st = nf_convert_plan_jobs(&r, err);
    if (st == NF_OK) {
        /* the jobs of objects that cannot be compared are skipped */
        for (size_t i = 0; i < p->nobjects; i++) r.objs[i].skip = !usable[i];
        r.sink = &s;
        r.kern = nf_stats_kernels_active();
        pthread_mutex_init(&r.lock, NULL);
        st = nf_convert_run_jobs(&r, nf_pool_threads(threads), NULL, err);
        pthread_mutex_destroy(&r.lock);
    }
    nf_convert_runner_free(&r);
    /* tails (gaps, divisors) compared on the calling thread */
    compare_ctx cmp = {&s, 0, malloc(1 << 16), 1 << 16};
    if (st == NF_OK && !cmp.buf) st = nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    for (size_t i = 0; st == NF_OK && i < p->nobjects; i++) {
        const plan_object *o = &p->objects[i];
        if (!usable[i] || o->kind != NF_OBJECT_TENSOR) continue;
        nf_words words;
        if ((st = nf_words_alloc(&words, &o->g, 0, err)) != NF_OK) break;
        if (o->divisors && words.divisors)
            memcpy(words.divisors, o->divisors, (size_t)o->g.divisors * sizeof *o->divisors);
        cmp.object = i;
        st = nf_layout_encode_tail(&o->g, &words, false, nf_convert_compare_write, &cmp, err);
        nf_words_free(&words);
    }
    free(cmp.buf);
    for (size_t i = 0; st == NF_OK && i < p->nobjects; i++) {
        if (!usable[i] || !atomic_load(&s.differs[i])) continue;
        char msg[256];
        snprintf(msg, sizeof msg, "re-derived bytes differ from the artifact's, first at object byte %llu",
                 (unsigned long long)s.first_diff[i]);
        report(ctx, p->objects[i].id, msg);
        (*differing)++;
    }
    pthread_mutex_destroy(&s.lock);
    free(usable);
    free(s.targets);
    free(s.differs);
    free(s.first_diff);
    return st;
}
