/* Planning a conversion: open the recipe's sources, resolve the rules against the checkpoint's
 * tensors, check every choice, and build the directory members.  Nothing is written here; every
 * problem found is collected so one run reports all of them.  One tensor's plan is in
 * plan_tensor.c, the budget's steps in plan_budget.c and the plan's content digest in
 * plan_digest.c (plan_impl.h). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ninfer/ninfer.h>

#include "common/checked.h"
#include "common/fail.h"
#include "common/json_walk.h"
#include "common/strset.h"
#include "convert/convert_impl.h"
#include "convert/plan_impl.h"
#include "ninfer_version.h"

/* Prefixes "FILE:LINE:COL: source 'NAME'" (a source added by --source has no line). */
static nf_status source_error(nf_error *err, nf_status st, const nf_recipe *r, const nf_recipe_source *rs)
{
    if (rs->pos.line > 0)
        return nf_error_forward(err, st, "%s:%d:%d: source '%s'", nf_plan_recipe_label(r), rs->pos.line, rs->pos.col,
                                rs->name);
    return nf_error_forward(err, st, "%s: source '%s' (given with --source)", nf_plan_recipe_label(r), rs->name);
}

/* A group's position, or its member k's when known. */
static nf_recipe_pos group_pos(const nf_recipe_group *g, size_t k)
{
    if (k < g->nmembers && g->member_pos && g->member_pos[k].line > 0) return g->member_pos[k];
    return g->pos;
}

/* ---------------------------------------------------------------- helpers */
static char *xstrdup(const char *s) { return s ? strdup(s) : NULL; }

size_t nf_plan_object_count(const nf_plan *p) { return p->nobjects; }

const struct nf_imatrix *nf_plan_imatrix_at(const nf_plan *p, size_t i, const char **name)
{
    if (name) *name = NULL;
    if (!p || i >= p->nsources || !p->imatrices || !p->imatrices[i]) return NULL;
    if (name) *name = p->sources[i].name;
    return p->imatrices[i];
}

void nf_plan_free(nf_plan *p)
{
    if (!p) return;
    for (size_t i = 0; i < p->nobjects; i++) {
        plan_object *o = &p->objects[i];
        free(o->id);
        free(o->source_dtype);
        free(o->members);
        free(o->divisors);
        free(o->note);
        free(o->dialect);
        free(o->path);
        free(o->data);
    }
    free(p->objects);
    free(p->companions);
    for (size_t i = 0; i < p->nprograms; i++) nf_mprog_spec_free(&p->programs[i]);
    free(p->programs);
    nf_budget_free(p->budget);
    for (size_t i = 0; i < p->nsources; i++) {
        nf_dialects_free(p->sources[i].dialects);
        nf_source_close(p->sources[i].src);
        nf_imatrix_close(p->imatrices ? p->imatrices[i] : NULL);
    }
    free(p->sources);
    free(p->imatrices);
    json_decref(p->components);
    json_decref(p->metadata);
    json_decref(p->provenance);
    json_decref(p->provenance_laid);
    json_decref(p->provenance_final);
    free(p);
}

static plan_object *new_object(nf_plan *p, size_t cap)
{
    if (p->nobjects == cap) return NULL;
    plan_object *o = &p->objects[p->nobjects++];
    memset(o, 0, sizeof *o);
    return o;
}

/* Is source `name` used as an imatrix by some rule's with? */
static bool used_as_imatrix(const nf_recipe *r, const char *name)
{
    if (r->budget.set && r->budget.imatrix && !strcmp(r->budget.imatrix, name)) return true;
    for (size_t i = 0; i < r->nrules; i++) {
        json_t *im = r->rules[i].with ? json_object_get(r->rules[i].with, "imatrix") : NULL;
        if (json_is_string(im) && strcmp(json_string_value(im), name) == 0) return true;
    }
    return false;
}

/* ---------------------------------------------------------------- what the recipe may read */
/* A source the recipe names is read wherever it is: a checkpoint or an imatrix is parsed by the
 * strict readers and only tensors become objects.  What the recipe publishes byte for byte -- a
 * resource -- must be inside what the command line allows (add_resource; docs/recipes.md, "What
 * a recipe may read"; docs/security.md 7.1, F2).  A source path that holds a variable the command line does
 * not allow is refused here, naming the variable, never its value. */
static nf_status check_source_variable(const nf_recipe *r, const nf_recipe_source *rs, nf_error *err)
{
    if (rs->command_line || (!rs->blocked && rs->path)) return NF_OK;
    return nf_error_set(err, NF_ERR_INVALID,
                        "%s:%d:%d: sources.%s: environment variable '%s' is not allowed by the command line (give "
                        "--allow-env %s to expand it, or --source %s=PATH)",
                        nf_plan_recipe_label(r), rs->pos.line, rs->pos.col, rs->name, rs->blocked ? rs->blocked : "?",
                        rs->blocked ? rs->blocked : "VAR", rs->name);
}

static nf_status open_sources(nf_plan *p, nf_error *err)
{
    const nf_recipe *r = p->recipe;
    p->sources = calloc(r->nsources ? r->nsources : 1, sizeof *p->sources);
    p->imatrices = calloc(r->nsources ? r->nsources : 1, sizeof *p->imatrices);
    if (!p->sources || !p->imatrices) return nf_common_nomem(err);
    for (size_t i = 0; i < r->nsources; i++) {
        plan_source *s = &p->sources[i];
        s->name = r->sources[i].name;
        s->path = r->sources[i].path;
        p->nsources++;
        const nf_recipe_source *rs = &r->sources[i];
        nf_status st = check_source_variable(r, rs, err);
        if (st != NF_OK) return st; /* names the recipe line itself */
        if (r->budget.set && r->budget.sensitivity && !strcmp(r->budget.sensitivity, s->name)) {
            continue; /* the budget's sensitivity file: read by nf_plan_budget_candidates */
        } else if (used_as_imatrix(r, s->name)) {
            st = nf_imatrix_open(s->path, &p->imatrices[i], err);
            struct stat sb;
            if (st == NF_OK && stat(s->path, &sb) == 0) s->bytes = (uint64_t)sb.st_size;
        } else {
            st = nf_source_open(s->path, &s->src, err);
            if (st == NF_OK)
                for (size_t f = 0; f < nf_source_file_count(s->src); f++) s->bytes += nf_source_file_size(s->src, f);
            if (st == NF_OK) st = nf_gguf_check_names(s->src, err); /* (object ids are UTF-8) */
            /* its quantized weights and their companions (docs/dialects.md); a problem names the
             * checkpoint's file and tensor or key */
            if (st == NF_OK) st = nf_dialects_scan(s->src, &s->dialects, err);
        }
        if (st != NF_OK) return source_error(err, st, r, &r->sources[i]);
    }
    if (!nf_plan_base_source(p))
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: no checkpoint to convert: name it `base` under sources (or give one source)", r->path);
    return NF_OK;
}

/* ---------------------------------------------------------------- re-encoded sources */
/* What an object does to a source tensor that is already encoded, when it does not import it
 * (docs/security.md 7.1, M5: quick mode turned GGUF block tensors into bf16 without a word).  A
 * GGUF block tensor is read through ggml's dequantization and encoded again: lossy unless the
 * format is fp32, and import_encoded into its gguf_* format keeps the blocks exactly.  An F8
 * tensor without a scale (an F8 weight with one is a quantized weight, whose note set_note
 * writes) widens exactly to bf16 and fp32; any other format quantizes its codes again.  Writes
 * the note into buf and returns true when there is one. */
static bool reencode_note(const nf_source_tensor *t, const nf_format *fmt, nf_method_id method, char *buf, size_t size)
{
    if (method == NF_METHOD_IMPORT_ENCODED) return false;
    bool exact_fp32 = fmt->id == NF_FMT_FP32;
    if (t->ggml_type >= 0 && t->block_values > 1) {
        int k = snprintf(buf, size, "%s from %s: ggml's dequantized values encoded again as %s",
                         exact_fp32 ? "dequantized" : "requantized", t->type_name, fmt->name);
        if (t->format && k > 0 && (size_t)k < size)
            snprintf(buf + k, size - (size_t)k, " (import_encoded into %s keeps the blocks exactly)", t->format->name);
        return true;
    }
    if ((t->dtype == NF_ST_F8_E4M3 || t->dtype == NF_ST_F8_E5M2) && !exact_fp32 && fmt->id != NF_FMT_BF16) {
        snprintf(buf, size, "requantized from %s codes", t->type_name);
        return true;
    }
    return false;
}

static void set_note(plan_object *o, const nf_source_tensor *t, const nf_qweight *q, problems *probs)
{
    char note[NF_ERROR_MESSAGE_MAX / 2];
    if (q) {
        /* a quantized weight: imported word for word, or requantized from its values -- which a
         * rule asked for (nf_plan_tensor) */
        char what[NF_ERROR_MESSAGE_MAX / 4];
        nf_qweight_describe(q, what, sizeof what);
        o->requantized = o->method != NF_METHOD_IMPORT_ENCODED;
        snprintf(note, sizeof note, "%s; %s", what,
                 o->requantized ? "requantized from its values" : "imported as it is");
        if (!(o->dialect = strdup(what)) || !(o->note = strdup(note))) probs->nomem = true;
        return;
    }
    if (nf_plan_gguf_blocks(t) && o->method == NF_METHOD_IMPORT_ENCODED) {
        /* --dry-run and the plan say so (issue: quick mode imports GGUF blocks by default) */
        snprintf(note, sizeof note, "GGUF %s blocks imported as they are", t->type_name);
    } else if (nf_plan_gguf_quantized(t) && o->method == NF_METHOD_IMPORT_ENCODED) {
        /* a values-only type: its codes and scales re-spelled in the target (docs/formats.md 8.5) */
        snprintf(note, sizeof note, "GGUF %s blocks imported value for value", t->type_name);
    } else if (!reencode_note(t, o->g.format, o->method, note, sizeof note)) {
        return;
    }
    if (!(o->note = strdup(note))) probs->nomem = true;
}

/* ---------------------------------------------------------------- directory members */
static nf_status load_config(const plan_source *s, json_t **cfg, nf_error *err)
{
    *cfg = NULL;
    const char *path = s->src ? nf_source_companion(s->src, "config.json") : NULL;
    if (!path) return nf_error_set(err, NF_ERR_INVALID, "source '%s' (%s) has no config.json", s->name, s->path);
    /* Capped and pre-scanned before it is parsed (docs/security.md 2.2): it becomes the config of
     * a component of the artifact. */
    return nf_source_read_config(path, cfg, err);
}

/* Adds a resource object for a file (once per path). */
/* *positioned: the error already names the recipe line. */
static nf_status add_resource(nf_plan *p, size_t cap, const nf_recipe_resource *res, const char *component,
                              const char **id_out, bool *positioned, nf_error *err)
{
    *positioned = true;
    const char *role = res->role, *path = res->path;
    const nf_recipe *r = p->recipe;
    char key[600];
    snprintf(key, sizeof key, "components.%s.resources.%s", component, role);
    /* Resource bytes are published in the artifact: the file must be one the recipe may read. */
    if (res->blocked || !path)
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s:%d:%d: %s: environment variable '%s' is not allowed by the command line (give "
                            "--allow-env %s to expand it)",
                            nf_plan_recipe_label(r), res->pos.line, res->pos.col, key,
                            res->blocked ? res->blocked : "?", res->blocked ? res->blocked : "VAR");
    NF_TRY(nf_recipe_check_path(r, path, key, res->pos, res->written, err));
    *positioned = false;
    for (size_t i = 0; i < p->nobjects; i++)
        if (p->objects[i].kind == NF_OBJECT_RESOURCE && strcmp(p->objects[i].path, path) == 0) {
            *id_out = p->objects[i].id;
            return NF_OK;
        }
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
        return nf_error_set(err, NF_ERR_INVALID, "resource '%s' of component '%s': cannot read %s", role, component,
                            path);
    if (sb.st_size == 0)
        return nf_error_set(err, NF_ERR_INVALID, "resource '%s' of component '%s': %s is empty", role, component, path);
    char id[1024];
    snprintf(id, sizeof id, "%s", role);
    for (size_t i = 0; i < p->nobjects; i++)
        if (strcmp(p->objects[i].id, id) == 0) snprintf(id, sizeof id, "%s/%s", component, role);
    plan_object *o = new_object(p, cap);
    if (!o) return nf_error_set(err, NF_ERR_NOMEM, "too many objects");
    o->kind = NF_OBJECT_RESOURCE;
    o->id = xstrdup(id);
    o->path = xstrdup(path);
    o->bytes = (uint64_t)sb.st_size;
    if (!o->id || !o->path) return nf_common_nomem(err);
    *id_out = o->id;
    return NF_OK;
}

/* A GGUF source without a recipe's components: its hyperparameters as the text config (beside
 * what config.json says, which wins) and its key/value pairs as the resource gguf_metadata.json. */
static nf_status keep_gguf_metadata(nf_plan *p, size_t cap, const plan_source *b, json_t *text, nf_error *err)
{
    json_t *hp = nf_gguf_hparams_config(b->src), *cfg = json_object_get(text, "config");
    if (!hp) return nf_common_nomem(err);
    const char *k;
    json_t *v;
    json_object_foreach(hp, k, v) if (!json_object_get(cfg, k)) json_object_set(cfg, k, v);
    json_decref(hp);
    uint8_t *data = NULL;
    size_t len = 0;
    NF_TRY(nf_gguf_metadata_text(b->src, &data, &len, err));
    plan_object *o = new_object(p, cap);
    char what[4200];
    snprintf(what, sizeof what, "(the metadata of %s)", b->path);
    if (o) {
        o->kind = NF_OBJECT_RESOURCE;
        o->id = xstrdup("gguf_metadata.json");
        o->path = xstrdup(what);
        o->bytes = len;
        o->data = data;
    }
    if (!o || !o->id || !o->path) {
        if (!o) free(data);
        return nf_common_nomem(err);
    }
    json_t *res = json_pack("{s:s}", "gguf_metadata.json", o->id);
    if (!res || json_object_set_new(text, "resources", res) != 0) return nf_common_nomem(err);
    return NF_OK;
}

static nf_status build_components(nf_plan *p, size_t cap, nf_error *err)
{
    const nf_recipe *r = p->recipe;
    p->components = json_object();
    if (r->ncomponents == 0) {
        const plan_source *b = nf_plan_base_source(p);
        const char *path = b->src ? nf_source_companion(b->src, "config.json") : NULL;
        json_t *cfg = NULL;
        nf_status st = NF_OK;
        if (path) st = load_config(b, &cfg, err);
        else if (!(cfg = json_object())) st = nf_common_nomem(err);
        if (st != NF_OK) {
            /* the config of the base source: point at the source */
            const nf_recipe_source *rs = nf_recipe_find_source(r, b->name);
            if (rs) source_error(err, st, r, rs);
        }
        NF_TRY(st);
        json_t *text = json_pack("{s:o}", "config", cfg);
        if (!text || json_object_set_new(p->components, "text", text) != 0) return nf_common_nomem(err);
        if (b->src && nf_source_kind_of(b->src) == NF_SOURCE_GGUF && !r->drop_gguf_metadata)
            NF_TRY(keep_gguf_metadata(p, cap, b, text, err));
        return NF_OK;
    }
    for (size_t i = 0; i < r->ncomponents; i++) {
        const nf_recipe_component *c = &r->components[i];
        json_t *cfg;
        if (c->config_from) {
            size_t si = nf_plan_source_index(p, c->config_from);
            if (si == SIZE_MAX)
                return nf_error_set(err, NF_ERR_INVALID, "%s:%d:%d: component '%s': unknown source '%s'", r->path,
                                    c->pos.line, c->pos.col, c->name, c->config_from);
            nf_status st = load_config(&p->sources[si], &cfg, err);
            if (st != NF_OK)
                return nf_error_forward(err, st, "%s:%d:%d: component '%s': config: {from: %s}",
                                        nf_plan_recipe_label(r), c->pos.line, c->pos.col, c->name, c->config_from);
        } else {
            cfg = c->config ? json_deep_copy(c->config) : json_object();
        }
        json_t *comp = json_pack("{s:o}", "config", cfg);
        if (c->nresources) {
            json_t *res = json_object();
            for (size_t k = 0; k < c->nresources; k++) {
                const char *id = NULL;
                bool positioned = false;
                nf_status st = add_resource(p, cap, &c->resources[k], c->name, &id, &positioned, err);
                if (st != NF_OK) {
                    json_decref(res);
                    json_decref(comp);
                    if (positioned) return st;
                    return nf_error_forward(err, st, "%s:%d:%d", r->path, c->resources[k].pos.line,
                                            c->resources[k].pos.col);
                }
                json_object_set_new(res, c->resources[k].role, json_string(id));
            }
            json_object_set_new(comp, "resources", res);
        }
        json_object_set_new(p->components, c->name, comp);
    }
    return NF_OK;
}

/* provenance: the converter, the recipe and the sources; its "objects" (a record per tensor,
 * nf_plan_provenance_record) are added a record at a time by whoever writes it. */
static void build_provenance(nf_plan *p)
{
    const nf_recipe *r = p->recipe;
    json_t *sources = json_object();
    for (size_t i = 0; i < p->nsources; i++)
        json_object_set_new(
            sources, p->sources[i].name,
            json_pack("{s:s,s:I}", "path", p->sources[i].path, "bytes", (json_int_t)p->sources[i].bytes));
    p->provenance = json_pack("{s:s,s:O,s:o}", "converter", "ninfer-tools " NINFER_VERSION_STRING, "recipe",
                              r->json ? r->json : json_null(), "sources", sources);
    p->metadata = json_object();
    if (r->output_name) json_object_set_new(p->metadata, "name", json_string(r->output_name));
}

nf_status nf_plan_provenance_record(void *records, size_t i, const char **key, json_t **value, nf_error *err)
{
    nf_plan_records *c = records;
    const nf_plan *p = c->p;
    if (i == 0) c->object = 0;
    *value = NULL;
    while (c->object < p->nobjects && p->objects[c->object].kind != NF_OBJECT_TENSOR) c->object++;
    if (c->object == p->nobjects) return NF_OK;
    const plan_object *o = &p->objects[c->object++];
    json_t *srcs = json_array();
    for (size_t k = 0; srcs && k < o->nmembers; k++)
        if (json_array_append_new(srcs, json_string(o->members[k].t->name)) != 0) {
            json_decref(srcs);
            srcs = NULL;
        }
    json_t *with = o->with ? json_deep_copy(o->with) : json_object();
    if (!srcs || !with) {
        json_decref(srcs);
        json_decref(with);
        return nf_common_nomem(err);
    }
    *key = o->id;
    *value = json_pack("{s:s,s:o,s:o}", "method", nf_plan_method_name(o->method, o->program), "with", with, "sources",
                       srcs);
    /* a method program's command and the digests of its files (docs/method-programs.md 5) */
    if (*value && o->program && json_object_set_new(*value, "program", nf_mprog_spec_describe(o->program)) != 0) {
        json_decref(*value);
        *value = NULL;
    }
    return *value ? NF_OK : nf_common_nomem(err);
}

/* ---------------------------------------------------------------- build */
static int compare_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (const void *const *)a, y = (uintptr_t) * (const void *const *)b;
    return x < y ? -1 : x > y;
}

static void add_group(nf_plan *p, size_t cap, const nf_recipe_group *grp, tensor_plan *tps, const name_index *ix,
                      problems *probs)
{
    const char *path = nf_plan_recipe_label(p->recipe);
    size_t gi = (size_t)(grp - p->recipe->groups);
    nf_recipe_pos gp = grp->pos, mp;
    /* members in the group's order */
    tensor_plan **mem = calloc(grp->nmembers, sizeof *mem);
    if (!mem) {
        probs->nomem = true;
        return;
    }
    bool ok = true;
    for (size_t k = 0; k < grp->nmembers; k++) {
        size_t ti = 0;
        if (nf_strset_find(&ix->tensors, grp->members[k], NULL, &ti)) mem[k] = &tps[ti];
        mp = group_pos(grp, k);
        if (!mem[k]) {
            nf_plan_add_problem(probs,
                                "%s:%d:%d: groups[%zu].members[%zu]: group '%s': member '%s' is not a tensor of the "
                                "checkpoint",
                                path, mp.line, mp.col, gi, k, grp->id, grp->members[k]);
            ok = false;
        } else if (mem[k]->consumed) {
            /* (checked first: a companion is skipped too) */
            nf_plan_add_problem(probs,
                                "%s:%d:%d: groups[%zu].members[%zu]: group '%s': member '%s' is a companion of a "
                                "quantized weight (a scale), not a tensor of its own",
                                path, mp.line, mp.col, gi, k, grp->id, grp->members[k]);
            ok = false;
        } else if (mem[k]->c->skip) {
            /* (checked before ok: a skipped tensor is never planned, so it is not ok either) */
            char where[NF_ERROR_MESSAGE_MAX / 4];
            nf_plan_choice_origin(p->recipe, mem[k]->c, FIELD_RULE, where, sizeof where);
            nf_plan_add_problem(probs,
                                "%s:%d:%d: groups[%zu].members[%zu]: group '%s': member '%s' is skipped by the rules "
                                "(last matched by %s)",
                                path, mp.line, mp.col, gi, k, grp->id, grp->members[k], where);
            ok = false;
        } else if (!mem[k]->ok) {
            ok = false; /* its own problem is already listed */
        }
    }
    if (!ok) goto done;
    tensor_plan *first = mem[0];
    uint64_t rows = 0;
    for (size_t k = 0; k < grp->nmembers; k++) {
        tensor_plan *m = mem[k];
        mp = group_pos(grp, k);
        if (m->fmt != first->fmt || m->layout != first->layout || m->method != first->method ||
            m->program != first->program ||
            !json_equal((json_t *)(m->c->with ? m->c->with : json_null()),
                        (json_t *)(first->c->with ? first->c->with : json_null()))) {
            nf_plan_add_problem(probs,
                                "%s:%d:%d: groups[%zu].members[%zu]: group '%s': member '%s' has a different "
                                "format, layout, method or with than '%s' (%s %s %s vs %s %s %s)",
                                path, mp.line, mp.col, gi, k, grp->id, m->t->name, first->t->name, m->fmt->name,
                                m->layout->name, nf_plan_method_name(m->method, m->program), first->fmt->name,
                                first->layout->name, nf_plan_method_name(first->method, first->program));
            ok = false;
        }
        if (m->cols != first->cols) {
            nf_plan_add_problem(probs,
                                "%s:%d:%d: groups[%zu].members[%zu]: group '%s': member '%s' has %llu columns, '%s' "
                                "has %llu: rows stack only with equal K",
                                path, mp.line, mp.col, gi, k, grp->id, m->t->name, (unsigned long long)m->cols,
                                first->t->name, (unsigned long long)first->cols);
            ok = false;
        }
        if (m->fmt->category != NF_CAT_DIRECT && m->t->rank != 2 && m->method != NF_METHOD_IMPORT_ENCODED) {
            nf_plan_add_problem(probs, "%s:%d:%d: groups[%zu].members[%zu]: group '%s': member '%s' is not a matrix",
                                path, mp.line, mp.col, gi, k, grp->id, m->t->name);
            ok = false;
        }
        m->member.parent_row0 = rows;
        if (!nf_add_u64(rows, m->rows, &rows)) ok = false;
    }
    if (!ok) goto done;
    plan_object *o = new_object(p, cap);
    if (!o) {
        probs->nomem = true;
        goto done;
    }
    o->kind = NF_OBJECT_TENSOR;
    o->id = xstrdup(grp->id);
    o->method = first->method;
    o->program = first->program;
    o->params = first->params;
    o->with = first->c->with;
    o->source_dtype = xstrdup(first->t->type_name);
    o->members = calloc(grp->nmembers, sizeof *o->members);
    o->nmembers = grp->nmembers;
    if (!o->id || !o->members || !o->source_dtype) {
        probs->nomem = true;
        goto done;
    }
    for (size_t k = 0; k < grp->nmembers; k++) o->members[k] = mem[k]->member;
    nf_error e;
    nf_status st;
    if (first->fmt->category == NF_CAT_NVFP4 && first->method == NF_METHOD_IMPORT_ENCODED) {
        nf_import *imps = calloc(grp->nmembers, sizeof *imps);
        if (!imps) {
            probs->nomem = true;
            goto done;
        }
        for (size_t k = 0; k < grp->nmembers; k++) imps[k] = mem[k]->member.imp;
        st = nf_import_nvfp4_stack(imps, grp->nmembers, &o->g, &e);
        if (st == NF_OK) {
            o->divisors = calloc(o->g.divisors, sizeof *o->divisors);
            st = o->divisors ? nf_import_nvfp4_divisors(imps, grp->nmembers, &o->g, o->divisors, &e)
                             : nf_common_nomem(&e);
        }
        free(imps);
    } else {
        uint64_t shape[2] = {rows, first->cols};
        st = nf_geometry_init(&o->g, first->layout, first->fmt, 2, shape, 1, &e);
    }
    if (st != NF_OK)
        nf_plan_add_problem(probs, "%s:%d:%d: groups[%zu]: group '%s': %s", path, gp.line, gp.col, gi, grp->id,
                            e.message);
    else set_note(o, first->t, first->q, probs);
done:
    free(mem);
}

static void add_single(nf_plan *p, size_t cap, tensor_plan *tp, problems *probs)
{
    nf_error e;
    plan_object *o = new_object(p, cap);
    if (!o) {
        probs->nomem = true;
        return;
    }
    o->kind = NF_OBJECT_TENSOR;
    o->id = xstrdup(tp->t->name);
    o->method = tp->method;
    o->program = tp->program;
    o->params = tp->params;
    o->with = tp->c->with;
    o->source_dtype = xstrdup(tp->t->type_name);
    o->members = calloc(1, sizeof *o->members);
    o->nmembers = 1;
    if (!o->id || !o->source_dtype || !o->members) {
        probs->nomem = true;
        return;
    }
    o->members[0] = tp->member;
    tp->object = p->nobjects - 1;
    if (nf_plan_object_geometry(tp, &o->g, &e) != NF_OK) {
        nf_plan_tensor_problem(probs, p->recipe, tp->c, FIELD_FORMAT, tp->t, e.message);
        return;
    }
    set_note(o, tp->t, tp->q, probs);
    if (o->g.format->category == NF_CAT_NVFP4) {
        o->divisors = calloc(1, sizeof *o->divisors);
        if (!o->divisors) probs->nomem = true;
        else o->divisors[0] = tp->member.imp.divisor;
    }
}

/* bindings: each tensor object bound under its id, or its members (a fused object's, or one
 * renamed) each under its source name as a part of the object's elements. */
nf_status nf_plan_binding_record(void *records, size_t i, const char **key, json_t **value, nf_error *err)
{
    nf_plan_records *c = records;
    const nf_plan *p = c->p;
    if (i == 0) c->object = c->member = 0;
    *value = NULL;
    while (c->object < p->nobjects && p->objects[c->object].kind != NF_OBJECT_TENSOR) c->object++;
    if (c->object == p->nobjects) return NF_OK;
    const plan_object *o = &p->objects[c->object];
    if (o->nmembers == 1 && strcmp(o->members[0].t->name, o->id) == 0) {
        c->object++;
        *key = o->id;
        *value = json_pack("{s:s}", "object", o->id);
    } else {
        const plan_member *m = &o->members[c->member];
        if (++c->member == o->nmembers) {
            c->member = 0;
            c->object++;
        }
        json_int_t a = (json_int_t)(m->parent_row0 * o->g.cols),
                   b = (json_int_t)((m->parent_row0 + m->rows) * o->g.cols);
        *key = m->t->name;
        *value = json_pack("{s:[{s:s,s:[I,I]}]}", "parts", "object", o->id, "range", a, b);
    }
    return *value ? NF_OK : nf_common_nomem(err);
}

/* The method programs the command line gave, ready to start: split, found, digested
 * (docs/method-programs.md 2). */
static nf_status load_programs(nf_plan *p, nf_error *err)
{
    const nf_recipe *r = p->recipe;
    if (!r->nprograms) return NF_OK;
    if (!(p->programs = calloc(r->nprograms, sizeof *p->programs))) return nf_common_nomem(err);
    for (size_t i = 0; i < r->nprograms; i++) {
        p->nprograms++; /* (freed by nf_plan_free, whatever the init got to) */
        NF_TRY(nf_mprog_spec_init(&p->programs[i], &r->programs[i], err));
    }
    return NF_OK;
}

nf_status nf_plan_build(const nf_recipe *recipe, nf_plan **out, nf_error *err)
{
    return nf_plan_build_ex(recipe, NULL, out, err);
}

nf_status nf_plan_build_ex(const nf_recipe *recipe, const nf_plan_build_options *opt, nf_plan **out, nf_error *err)
{
    *out = NULL;
    nf_plan *p = calloc(1, sizeof *p);
    if (!p) return nf_common_nomem(err);
    p->recipe = recipe;
    nf_status st = load_programs(p, err);
    if (st == NF_OK) st = open_sources(p, err);
    if (st != NF_OK) goto fail;
    const plan_source *base = nf_plan_base_source(p);
    size_t n = nf_source_tensor_count(base->src);
    nf_recipe_tensor *rt = calloc(n ? n : 1, sizeof *rt);
    nf_recipe_choice *choices = calloc(2 * (n ? n : 1), sizeof *choices); /* [n, 2n): the visible ones' */
    size_t *visible = calloc(n ? n : 1, sizeof *visible);
    tensor_plan *tps = calloc(n ? n : 1, sizeof *tps);
    /* NF_QWEIGHT_MAX_READS per tensor */
    const nf_source_tensor **consumed = calloc(NF_QWEIGHT_MAX_READS * (n ? n : 1), sizeof *consumed);
    size_t cap = n + 64 + 16;
    for (size_t i = 0; i < recipe->ncomponents; i++) cap += recipe->components[i].nresources;
    p->objects = calloc(cap, sizeof *p->objects);
    problems probs = {0};
    name_index ix = {{0}, {0}};
    if (!rt || !choices || !visible || !tps || !consumed || !p->objects) {
        st = nf_common_nomem(err);
        goto done;
    }
    /* The tensors the rules see (docs/dialects.md): a quantized weight as one tensor [N, K] under
     * its codes tensor's name, never its companions, and activation scales only when the recipe
     * keeps them. */
    size_t nv = 0;
    for (size_t i = 0; i < n; i++) {
        const nf_source_tensor *t = nf_source_tensor_at(base->src, i);
        const nf_qweight *q = NULL;
        nf_qrole role = nf_dialects_role(base->dialects, t, &q);
        tps[i].t = t;
        tps[i].object = SIZE_MAX;
        if (role == NF_QROLE_COMPANION || (role == NF_QROLE_ACTIVATION && !recipe->keep_activation_scales)) {
            tps[i].consumed = true;
            continue;
        }
        if (role == NF_QROLE_WEIGHT) {
            tps[i].q = q;
            rt[nv] = (nf_recipe_tensor){t->name, t->type_name, 2, q->shape, q->shape[0] * q->shape[1], true};
        } else {
            /* (a GGUF block tensor is stored quantized too: `when: {quantized: true}` sees it) */
            rt[nv] = (nf_recipe_tensor){t->name,  t->type_name, t->rank,
                                        t->shape, t->elements,  nf_plan_gguf_quantized(t)};
        }
        visible[nv++] = i;
    }
    if ((st = nf_recipe_resolve(recipe, rt, nv, choices + n, err)) != NF_OK) goto done;
    for (size_t i = 0; i < n; i++) choices[i] = (nf_recipe_choice){.skip = true, .rule = -1};
    for (size_t j = 0; j < nv; j++) choices[visible[j]] = choices[n + j];

    if (recipe->budget.set && (st = nf_plan_budget_candidates(p, err)) != NF_OK) goto done;
    for (size_t i = 0; i < n; i++) {
        tps[i].c = &choices[i];
        if (choices[i].skip || tps[i].consumed) continue;
        if (nf_plan_is_budget(&choices[i])) {
            if (!p->budget) {
                nf_plan_tensor_problem(&probs, recipe, &choices[i], FIELD_FORMAT, tps[i].t,
                                       "format 'budget' needs a `budget:` section (bits_per_weight or bytes)");
                continue;
            }
            nf_plan_budget_stand_in(p, &tps[i], &choices[i], &probs);
            if (!tps[i].budget) continue;
        }
        nf_plan_tensor(p, base, &tps[i], &probs, consumed + NF_QWEIGHT_MAX_READS * i);
    }
    if (probs.count || probs.nomem) {
        st = nf_plan_problems_error(&probs, recipe->path, err);
        goto done;
    }
    /* the companions the quantized weights are read with, once each, for the content digest */
    qsort(consumed, NF_QWEIGHT_MAX_READS * n, sizeof *consumed, compare_ptr);
    p->companions = malloc(NF_QWEIGHT_MAX_READS * (n ? n : 1) * sizeof *p->companions);
    if (!p->companions) {
        st = nf_common_nomem(err);
        goto done;
    }
    for (size_t i = 0; i < NF_QWEIGHT_MAX_READS * n; i++)
        if (consumed[i] && (p->ncompanions == 0 || p->companions[p->ncompanions - 1] != consumed[i]))
            p->companions[p->ncompanions++] = consumed[i];

    if ((st = build_components(p, cap, err)) != NF_OK) goto done;
    /* Tensor objects in checkpoint order; a group sits where its first member is. */
    bool *group_done = calloc(recipe->ngroups ? recipe->ngroups : 1, sizeof *group_done);
    bool ix_ok = group_done != NULL;
    for (size_t g = 0; ix_ok && g < recipe->ngroups; g++)
        for (size_t k = 0; ix_ok && k < recipe->groups[g].nmembers; k++)
            ix_ok = nf_strset_insert(&ix.members, recipe->groups[g].members[k], NULL, g, NULL) >= 0;
    for (size_t i = 0; ix_ok && recipe->ngroups && i < n; i++)
        ix_ok = nf_strset_insert(&ix.tensors, tps[i].t->name, NULL, i, NULL) >= 0;
    if (!ix_ok) {
        free(group_done);
        st = nf_common_nomem(err);
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        if (choices[i].skip || tps[i].consumed) continue;
        int g = nf_plan_group_of(&ix, tps[i].t->name);
        if (g >= 0) {
            if (!group_done[g]) add_group(p, cap, &recipe->groups[g], tps, &ix, &probs);
            group_done[g] = true;
            continue;
        }
        if (tps[i].ok) add_single(p, cap, &tps[i], &probs);
    }
    for (size_t g = 0; g < recipe->ngroups; g++)
        if (!group_done[g]) {
            const nf_recipe_group *grp = &recipe->groups[g];
            nf_plan_add_problem(&probs,
                                "%s:%d:%d: groups[%zu]: group '%s' has no member in the checkpoint (members: %s%s)",
                                nf_plan_recipe_label(recipe), grp->pos.line, grp->pos.col, g, grp->id,
                                grp->nmembers ? grp->members[0] : "", grp->nmembers > 1 ? ", ..." : "");
        }
    free(group_done);
    if (probs.count || probs.nomem) {
        st = nf_plan_problems_error(&probs, recipe->path, err);
        goto done;
    }
    if (p->budget) {
        if ((st = nf_plan_budget_items(p, tps, n, &ix, &probs, err)) != NF_OK) goto done;
        if (probs.count || probs.nomem) {
            st = nf_plan_problems_error(&probs, recipe->path, err);
            goto done;
        }
        if ((st = nf_plan_budget_capacity(p, err)) != NF_OK ||
            (st = nf_budget_allocate(p->budget, &recipe->budget, opt ? opt->threads : 0,
                                     opt ? opt->budget_figures : NULL, err)) != NF_OK)
            goto done;
        nf_plan_budget_patch(p, tps, n, &probs);
        if (probs.count || probs.nomem) {
            st = nf_plan_problems_error(&probs, recipe->path, err);
            goto done;
        }
    }
    bool any_tensor = false;
    for (size_t i = 0; i < p->nobjects; i++) any_tensor = any_tensor || p->objects[i].kind == NF_OBJECT_TENSOR;
    if (!any_tensor) {
        st = nf_error_set(err, NF_ERR_INVALID, "%s: the rules leave no tensor to convert", recipe->path);
        goto done;
    }
    if ((st = nf_convert_nvfp4_pass(p, err)) != NF_OK) goto done;
    build_provenance(p);
done:
    nf_strset_free(&ix.members);
    nf_strset_free(&ix.tensors);
    free(probs.text);
    free(rt);
    free(choices);
    free(visible);
    free(tps);
    free(consumed);
    if (st != NF_OK) goto fail;
    *out = p;
    return NF_OK;
fail:
    nf_plan_free(p);
    return st;
}

/* ---------------------------------------------------------------- describe (--dry-run) */
json_t *nf_plan_describe_object(const nf_plan *p, size_t i)
{
    if (!p || i >= p->nobjects) return NULL;
    const plan_object *o = &p->objects[i];
    if (o->kind == NF_OBJECT_RESOURCE)
        return json_pack("{s:s,s:s,s:s,s:I}", "id", o->id, "kind", "resource", "path", o->path, "bytes",
                         (json_int_t)o->bytes);
    json_t *shape = json_array();
    for (uint32_t d = 0; d < o->g.rank; d++) json_array_append_new(shape, json_integer((json_int_t)o->g.shape[d]));
    json_t *srcs = json_array();
    for (size_t k = 0; k < o->nmembers; k++) json_array_append_new(srcs, json_string(o->members[k].t->name));
    double bpw = (double)o->g.bytes * 8.0 / (double)o->g.elements;
    json_t *obj = json_pack("{s:s,s:s,s:o,s:o,s:s,s:s,s:s,s:s,s:o,s:I,s:f}", "id", o->id, "kind", "tensor", "sources",
                            srcs, "shape", shape, "source_dtype", o->source_dtype, "format", o->g.format->name,
                            "layout", o->g.layout->name, "method", nf_plan_method_name(o->method, o->program), "with",
                            o->with ? json_deep_copy(o->with) : json_object(), "bytes", (json_int_t)o->g.bytes,
                            "bits_per_weight", bpw);
    if (obj && o->note) json_object_set_new(obj, "note", json_string(o->note));
    if (obj && o->budget) json_object_set_new(obj, "budget", json_true()); /* chosen by it: "budget" has the rest */
    if (obj && o->dialect) {
        json_object_set_new(obj, "dialect", json_string(o->dialect));
        json_object_set_new(obj, "handling", json_string(o->requantized ? "requantized" : "imported"));
    }
    return obj;
}

json_t *nf_plan_describe(const nf_plan *p)
{
    json_t *objs = json_array();
    uint64_t total_bytes = 0, total_elements = 0;
    json_t *per_format = json_object();
    for (size_t i = 0; i < p->nobjects; i++) {
        const plan_object *o = &p->objects[i];
        total_bytes += o->kind == NF_OBJECT_TENSOR ? o->g.bytes : o->bytes;
        json_array_append_new(objs, nf_plan_describe_object(p, i));
        if (o->kind == NF_OBJECT_RESOURCE) continue;
        total_elements += o->g.elements;
        json_t *f = json_object_get(per_format, o->g.format->name);
        if (!f) {
            f = json_pack("{s:i,s:I,s:I}", "objects", 0, "elements", (json_int_t)0, "bytes", (json_int_t)0);
            json_object_set_new(per_format, o->g.format->name, f);
        }
        json_object_set_new(f, "objects", json_integer(json_integer_value(json_object_get(f, "objects")) + 1));
        json_object_set_new(
            f, "elements",
            json_integer(json_integer_value(json_object_get(f, "elements")) + (json_int_t)o->g.elements));
        json_object_set_new(f, "bytes",
                            json_integer(json_integer_value(json_object_get(f, "bytes")) + (json_int_t)o->g.bytes));
    }
    json_t *d = json_pack("{s:o,s:{s:I,s:I,s:I,s:o}}", "objects", objs, "totals", "objects", (json_int_t)p->nobjects,
                          "elements", (json_int_t)total_elements, "bytes", (json_int_t)total_bytes, "formats",
                          per_format);
    if (d && p->budget) json_object_set_new(d, "budget", nf_budget_describe(p->budget, &p->recipe->budget));
    /* the method programs the plan starts: each command and its files' digests (what the
     * provenance records, docs/method-programs.md 5) */
    json_t *progs = p->nprograms ? json_array() : NULL;
    for (size_t i = 0; progs && i < p->nprograms; i++) {
        bool used = false;
        for (size_t k = 0; k < p->nobjects && !used; k++) used = p->objects[k].program == &p->programs[i];
        if (used) json_array_append_new(progs, nf_mprog_spec_describe(&p->programs[i]));
    }
    if (d && progs) json_object_set_new(d, "method_programs", progs);
    else json_decref(progs);
    return d;
}
