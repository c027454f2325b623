/* The conversion report, OUT.conversion.json (docs/ninfer-convert.md, "The report"): the plan's
 * objects with their error statistics, written to a temp file beside it that the caller
 * publishes with the artifact (exec_impl.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ninfer/ninfer.h>

#include "common/io.h"
#include "common/json_walk.h"
#include "common/pool.h"
#include "convert/convert_impl.h"
#include "convert/exec_impl.h"
#include "outputs/out_whole.h"
#include "budget/werror.h"
#include "stats/stats.h"

/* A path as messages show it: shortened in the middle when long (common/io.h, docs/security.md 7.1, M8). */
#define MP(path) nf_io_msg_path((path), (char[NF_IO_MSG_PATH + 1]){0})

/* ---------------------------------------------------------------- report */
/* A figure of the report: a finite binary64, or null (no finite value). */
static json_t *figure(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static json_t *object_report(const nf_plan *p, const nf_errstats_summary *st, size_t i)
{
    const plan_object *o = &p->objects[i];
    json_t *shape = json_array();
    for (uint32_t d = 0; d < o->g.rank; d++) json_array_append_new(shape, json_integer((json_int_t)o->g.shape[d]));
    json_t *srcs = json_array();
    for (size_t k = 0; k < o->nmembers; k++) json_array_append_new(srcs, json_string(o->members[k].t->name));
    json_t *rec = json_pack("{s:s,s:o,s:s,s:s,s:s,s:o,s:o,s:I}", "object", o->id, "sources", srcs, "method",
                            nf_plan_method_name(o->method, o->program), "format", o->g.format->name, "layout",
                            o->g.layout->name, "method_parameters", o->with ? json_deep_copy(o->with) : json_object(),
                            "shape", shape, "bytes", (json_int_t)o->g.bytes);
    json_object_set_new(rec, "values_compared", json_integer((json_int_t)st->count));
    if (st->skipped) json_object_set_new(rec, "values_not_compared", json_integer((json_int_t)st->skipped));
    if (st->count) {
        json_object_set_new(rec, "max_abs_error", figure(st->max_abs));
        json_object_set_new(rec, "rmse", figure(st->rmse));
        /* SNR in dB; an exact object has no finite SNR: null */
        json_object_set_new(rec, "snr_db", figure(st->snr_db));
    }
    if (o->budget) { /* chosen by the budget: the error it estimated, and the one measured */
        const plan_budget_item *it = o->budget;
        json_object_set_new(rec, "budget",
                            json_pack("{s:f,s:o,s:I,s:s}", "estimated_error", it->opts[it->pick].error,
                                      "weighted_error", figure(st->wse), "rows_measured",
                                      (json_int_t)it->opts[it->pick].sampled, "weights",
                                      it->weights ? "imatrix" : "uniform"));
    }
    return rec;
}

/* The report's members before "objects": output, name, recipe, and the provenance without its
 * per-object records (each object's record below carries its method, parameters and sources, the
 * same as the artifact's provenance.objects: the report need not hold them twice). */
static json_t *report_head(const nf_plan *p, const nf_convert_options *opt)
{
    json_t *prov = json_copy(p->provenance_final ? p->provenance_final : p->provenance); /* shallow */
    if (!prov) return NULL;
    json_object_del(prov, "objects");
    return json_pack("{s:i,s:s,s:o,s:o,s:o}", "report_version", NF_REPORT_VERSION, "output", opt->output, "name",
                     p->recipe->output_name ? json_string(p->recipe->output_name) : json_null(), "recipe",
                     p->recipe->path ? json_string(p->recipe->path) : json_null(), "provenance", prov);
}

#define REPORT_BUFFER ((size_t)1 << 20) /* the report goes out in writes of 1 MiB */

/* JSON text of v as the report writes it: compact, members in order, binary64 figures exact. */
static char *report_text(const json_t *v)
{
    return nf_jw_dump(v, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17) | JSON_ENCODE_ANY, 0, NULL);
}

/* The report's last members: tail's, and with a budget its summary (docs/recipes.md, "Budgets"):
 * the allocation's figures, the estimate and the measured weighted error in total (each
 * object's record has its own). */
static json_t *report_tail(const nf_plan *p, const nf_errstats_summary *sums, const json_t *tail)
{
    json_t *end = json_copy((json_t *)tail);
    if (!end || !p->budget) return end;
    json_t *b = nf_budget_describe(p->budget, &p->recipe->budget);
    double measured = 0;
    for (size_t k = 0; k < p->budget->nitems; k++) measured += sums[p->budget->items[k].object].wse;
    if (!b || json_object_del(b, "allocation") != 0 ||
        json_object_set_new(b, "weighted_error", json_real(measured)) != 0 || json_object_set_new(end, "budget", b)) {
        json_decref(end);
        return NULL;
    }
    return end;
}

/* The report, streamed to a temp file beside its destination (nf_outputs_write_temp; renamed
 * once the artifact is published): head's members, then "objects" with one compact record per
 * line, built one at a time (memory does not grow with the number of objects), then tail's
 * members:
 *   {"output":...,"name":...,"recipe":...,"provenance":{...},"objects":[
 *   {"object":...},
 *   ...
 *   ],"artifact_id":...,"threads":...,"chunk_values":...} */
typedef struct report_parts {
    const nf_plan *p;
    const nf_errstats_summary *sums;
    const json_t *head, *tail;
} report_parts;

static bool fill_report(void *ctx, nf_io_out *o)
{
    const report_parts *r = ctx;
    char *text = report_text(r->head);
    if (!text) return false;
    nf_io_out_put(o, text, strlen(text) - 1); /* without its closing brace */
    nf_io_out_put(o, ",\"objects\":[\n", 13);
    free(text);
    bool first = true;
    for (size_t i = 0; i < r->p->nobjects; i++) {
        if (r->p->objects[i].kind != NF_OBJECT_TENSOR) continue;
        json_t *rec = object_report(r->p, &r->sums[i], i);
        text = rec ? report_text(rec) : NULL;
        json_decref(rec);
        if (!text) return false;
        if (!first) nf_io_out_put(o, ",\n", 2);
        first = false;
        nf_io_out_put(o, text, strlen(text));
        free(text);
    }
    json_t *end = report_tail(r->p, r->sums, r->tail);
    text = end ? report_text(end) : NULL;
    json_decref(end);
    if (!text) return false;
    nf_io_out_put(o, first ? "]," : "\n],", first ? 2 : 3);
    nf_io_out_put(o, text + 1, strlen(text) - 1); /* without its opening brace */
    nf_io_out_put(o, "\n", 1);
    free(text);
    return true;
}

/* The objects' statistics in one array (the report's input). */
nf_errstats_summary *nf_convert_summaries(const nf_plan *p, const runner *r)
{
    nf_errstats_summary *v = calloc(p->nobjects ? p->nobjects : 1, sizeof *v);
    for (size_t i = 0; v && i < p->nobjects; i++) v[i] = r->objs[i].sum;
    return v;
}

/* The report's temp file beside path: its head from the plan and the options, its tail the
 * artifact id and how the run was made (threads, chunk_values). */
nf_status nf_convert_report_temp(nf_plan *p, const nf_convert_options *opt, const char *id_hex,
                                 const nf_errstats_summary *sums, const char *path, char **tmp, nf_error *err)
{
    uint64_t chunk_values = opt->chunk_values ? opt->chunk_values : DEFAULT_CHUNK_VALUES;
    json_t *head = report_head(p, opt);
    json_t *tail = json_pack("{s:s,s:I,s:I}", "artifact_id", id_hex, "threads",
                             (json_int_t)nf_pool_threads(opt->threads), "chunk_values", (json_int_t)chunk_values);
    report_parts parts = {p, sums, head, tail};
    nf_status st = head && tail ? nf_outputs_write_temp(path, REPORT_BUFFER, fill_report, &parts, tmp, err)
                                : nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    json_decref(head);
    json_decref(tail);
    return st;
}
