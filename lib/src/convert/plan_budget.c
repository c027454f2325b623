/* The planner's budget glue (docs/recipes.md, "Budgets"), beside budget.c: a tensor a rule gives
 * `format: budget` is planned first with a stand-in (its first candidate), so that every other
 * check and its object's place happen as for any tensor; once every object is known, budget.c
 * measures the candidates and solves the allocation, and each such object is planned again with
 * its pick.  planner.c (nf_plan_build_ex) calls these steps in that order (plan_impl.h). */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "common/checked.h"
#include "common/fail.h"
#include "common/strset.h"
#include "convert/convert_impl.h"
#include "convert/plan_impl.h"

/* Did the rule leave the tensor to the budget (`format: budget`)? */
bool nf_plan_is_budget(const nf_recipe_choice *c) { return c->format && !strcmp(c->format, NF_RECIPE_BUDGET); }

/* Does the method take an importance vector (grouped_search, ggml_quantize, ...)?  Asked of the
 * method registry, so that a method that learns to take one gets the budget's imatrix. */
static bool takes_importance(nf_method_id m)
{
    static const float one = 1.0f;
    nf_method_params probe = {.importance = &one, .importance_len = 1};
    return nf_method_check_params(m, &probe, 1, NULL) == NF_OK;
}

/* May the budget list (format, method) as a candidate?  A method on a format the registry says it
 * targets (nf_method_check_target), in the format's default layout; never import_encoded (it
 * copies words: it has no encoder), and cast_direct only when budget.methods names it (by default
 * the candidates are the methods that quantize). */
static bool budget_pair(const nf_format *f, nf_method_id m, bool listed)
{
    if (m == NF_METHOD_IMPORT_ENCODED || (m == NF_METHOD_CAST_DIRECT && !listed)) return false;
    return nf_method_check_target(m, f, NULL) == NF_OK && nf_layout_default_for(f) != NULL;
}

/* The candidates: every (format, method) pair of the lists that the method can produce, formats
 * first (q4 absmax, q4 search, q5 absmax, ...).  A list not given is every format of the registry
 * (nf_format_at), or every method (nf_method_name), in registry order: so the default candidates
 * are every format any method can quantize into, and a format or method added to the registry
 * joins them (docs/recipes.md, "Budgets"). */
nf_status nf_plan_budget_candidates(nf_plan *p, nf_error *err)
{
    const nf_recipe_budget *rb = &p->recipe->budget;
    size_t nf = rb->nformats ? rb->nformats : nf_format_count(), nm = rb->nmethods ? rb->nmethods : NF_METHOD_COUNT;
    plan_budget *b = p->budget = calloc(1, sizeof *p->budget);
    if (!b || !(b->cands = calloc(nf * nm, sizeof *b->cands))) return nf_common_nomem(err);
    b->imatrix = rb->imatrix;
    for (size_t i = 0; i < nf; i++)
        for (size_t j = 0; j < nm; j++) {
            plan_candidate c = {.method = (nf_method_id)j};
            if (rb->nformats ? nf_format_find(rb->formats[i], &c.fmt, NULL) != NF_OK : !(c.fmt = nf_format_at(i)))
                continue;
            if (rb->nmethods && nf_method_find(rb->methods[j], &c.method, NULL) != NF_OK) continue;
            if (!budget_pair(c.fmt, c.method, rb->nmethods != 0)) continue;
            c.layout = nf_layout_default_for(c.fmt);
            if (rb->imatrix && takes_importance(c.method) && !(c.with = json_pack("{s:s}", "imatrix", rb->imatrix)))
                return nf_common_nomem(err);
            b->cands[b->ncands++] = c;
        }
    if (b->ncands == 0)
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s:%d:%d: budget: no method of budget.methods produces a format of budget.formats (e.g. "
                            "grouped_absmax produces q4_g64_fp16 ... q8_g32_fp16, ggml_quantize gguf_q2_k ... "
                            "gguf_q8_0)",
                            nf_plan_recipe_label(p->recipe), rb->pos.line, rb->pos.col);
    if (rb->imatrix) {
        size_t i = nf_plan_source_index(p, rb->imatrix);
        if (i == SIZE_MAX || !p->imatrices[i])
            return nf_error_set(err, NF_ERR_INVALID, "%s:%d:%d: budget.imatrix: '%s' is not a source of the recipe",
                                nf_plan_recipe_label(p->recipe), rb->imatrix_pos.line, rb->imatrix_pos.col,
                                rb->imatrix);
    }
    if (rb->sensitivity) {
        size_t i = nf_plan_source_index(p, rb->sensitivity);
        if (i == SIZE_MAX)
            return nf_error_set(err, NF_ERR_INVALID, "%s:%d:%d: budget.sensitivity: '%s' is not a source of the recipe",
                                nf_plan_recipe_label(p->recipe), rb->sensitivity_pos.line, rb->sensitivity_pos.col,
                                rb->sensitivity);
        NF_TRY(nf_sensitivity_read(p->sources[i].path, &b->sens, err));
    }
    return NF_OK;
}

/* Every name of the sensitivity file is a tensor of the checkpoint (a misspelt name would weigh
 * nothing, silently): the first that is not is refused where the file has it. */
static nf_status budget_sensitivity_names(const nf_plan *p, nf_error *err)
{
    const nf_sensitivity *sv = &p->budget->sens;
    const plan_source *base = nf_plan_base_source(p);
    const char *path = p->sources[nf_plan_source_index(p, p->recipe->budget.sensitivity)].path;
    for (size_t i = 0; i < sv->n; i++)
        if (!nf_source_find(base->src, sv->names[i]))
            return nf_error_set(err, NF_ERR_INVALID,
                                "%s:%llu:%llu (byte %llu): tensor '%s': not a tensor of the checkpoint (%s)", path,
                                (unsigned long long)sv->line[i], (unsigned long long)sv->col[i],
                                (unsigned long long)sv->byte[i], nf_esc(sv->names[i]).s, nf_source_path(base->src));
    return NF_OK;
}

/* May candidate k serve the tensor of choice c?  A rule naming a method narrows them to it. */
static bool budget_allows(const nf_plan *p, const nf_recipe_choice *c, size_t k)
{
    nf_method_id m;
    if (c->method_rule < 0) return true;
    return nf_method_find(c->method, &m, NULL) == NF_OK && m == p->budget->cands[k].method;
}

/* What the budget may choose for: a tensor of floating-point values with rank >= 2 (a matrix
 * view), not stored quantized; NULL when it may, else why not. */
static const char *budget_unfit(const tensor_plan *tp)
{
    static const char *const floats[] = {"F32", "F16", "BF16", "F64"};
    if (tp->q || nf_plan_gguf_blocks(tp->t))
        return "is stored quantized: the budget chooses only for tensors of floating-point values (import it, or "
               "give it a format)";
    /* (a GGUF block type no format holds, docs/formats.md 8.5, is read as ggml's values) */
    bool f = nf_plan_gguf_quantized(tp->t);
    for (size_t i = 0; i < sizeof floats / sizeof floats[0]; i++) f = f || !strcmp(tp->t->type_name, floats[i]);
    if (!f || !tp->t->convertible) return "is not of floating-point values: the budget cannot choose for it";
    /* a stack of matrices [E, R, K] is the matrix [E*R, K] (nf_plan_object_geometry) */
    if (tp->t->rank < 2 || tp->t->elements == 0)
        return "is not a matrix (rank 2 or more): the budget's formats need one (give it a format, e.g. fp32)";
    return NULL;
}

/* Does candidate k's layout hold the tensor (the gguf_* formats need whole blocks per row, nvfp4
 * whole tiles)?  false with geometry's message in e otherwise. */
static bool budget_holds(const nf_plan *p, const tensor_plan *tp, size_t k, nf_geometry *g, nf_error *e)
{
    const plan_candidate *cd = &p->budget->cands[k];
    return nf_plan_tensor_geometry(cd->layout, cd->fmt, tp->t, g, e) == NF_OK;
}

/* Before planning: each tensor left to the budget gets its first allowed candidate that holds it
 * as a stand-in (its rule's with kept, else the candidate's). */
void nf_plan_budget_stand_in(nf_plan *p, tensor_plan *tp, nf_recipe_choice *c, problems *probs)
{
    const char *why = budget_unfit(tp);
    if (why) {
        nf_plan_tensor_problem(probs, p->recipe, c, FIELD_FORMAT, tp->t, why);
        return;
    }
    bool allowed = false;
    for (size_t k = 0; k < p->budget->ncands; k++) {
        if (!budget_allows(p, c, k)) continue;
        allowed = true;
        nf_geometry g;
        nf_error e;
        if (!budget_holds(p, tp, k, &g, &e)) continue;
        const plan_candidate *cd = &p->budget->cands[k];
        c->format = cd->fmt->name;
        c->method = nf_method_name(cd->method);
        /* a rule's with is for the grouped_search candidates (budget_options) */
        if (c->with_rule < 0 || cd->method != NF_METHOD_GROUPED_SEARCH) c->with = cd->with;
        tp->budget = true;
        return;
    }
    nf_plan_tensor_problem(
        probs, p->recipe, c, allowed ? FIELD_FORMAT : FIELD_METHOD, tp->t,
        allowed ? "no candidate format of the budget holds its shape"
                : "left to the budget, with a method that is none of the budget's candidates (budget.methods)");
}

/* Notes that candidate k is not one for the item, and why (--dry-run says it, after the
 * candidate's name: a reason that starts by naming the format, as geometry's do, drops that). */
static void budget_exclude(plan_budget_item *it, size_t k, const nf_format *f, const char *why, problems *probs)
{
    plan_exclusion *x = &it->excluded[it->nexcluded];
    size_t n = strlen(f->name);
    if (!strncmp(why, "format '", 8) && !strncmp(why + 8, f->name, n) && !strncmp(why + 8 + n, "' ", 2)) why += 10 + n;
    if (!(x->why = strdup(why))) {
        probs->nomem = true;
        return;
    }
    x->cand = k;
    it->nexcluded++;
}

/* One item's options: each allowed candidate whose layout holds the tensor, with its bytes and
 * its method's parameters; the others, with the reason, in it->excluded. */
static void budget_options(nf_plan *p, const tensor_plan *tp, plan_budget_item *it, problems *probs)
{
    plan_budget *b = p->budget;
    nf_error e;
    if (!(it->opts = calloc(b->ncands, sizeof *it->opts)) ||
        !(it->excluded = calloc(b->ncands, sizeof *it->excluded))) {
        probs->nomem = true;
        return;
    }
    for (size_t k = 0; k < b->ncands; k++) {
        if (!budget_allows(p, tp->c, k)) continue;
        const plan_candidate *cd = &b->cands[k];
        plan_option *op = &it->opts[it->nopts];
        nf_geometry g;
        if (!budget_holds(p, tp, k, &g, &e)) {
            budget_exclude(it, k, cd->fmt, e.message, probs);
            continue;
        }
        nf_recipe_choice c = *tp->c;
        /* the rule's with (the stand-in's choice may have dropped it, nf_plan_budget_stand_in) */
        const json_t *rule_with = tp->c->with_rule >= 0 ? p->recipe->rules[tp->c->with_rule].with : NULL;
        c.with = rule_with && cd->method == NF_METHOD_GROUPED_SEARCH ? rule_with : cd->with;
        if (nf_plan_method_params(p, &c, tp->t, tp->cols, &op->params, &e) != NF_OK ||
            nf_method_check_params(cd->method, &op->params, tp->cols, &e) != NF_OK) {
            nf_plan_tensor_problem(probs, p->recipe, tp->c, c.with ? FIELD_WITH : FIELD_METHOD, tp->t, e.message);
            return;
        }
        /* the gguf types ggml quantizes only with an importance vector (nf_method_check_choice):
         * candidates only for a tensor that has one (docs/recipes.md, "Budgets") */
        if (nf_method_check_choice(cd->method, cd->fmt, &op->params, NULL) != NF_OK) {
            budget_exclude(it, k, cd->fmt,
                           b->imatrix ? "ggml quantizes it only with an importance matrix, and the budget's imatrix "
                                        "has no vector for this tensor"
                                      : "ggml quantizes it only with an importance matrix (give the budget one: "
                                        "budget.imatrix)",
                           probs);
            continue;
        }
        op->cand = k;
        op->with = c.with;
        op->bytes = g.bytes;
        it->nopts++;
    }
    if (it->nopts == 0)
        nf_plan_tensor_problem(probs, p->recipe, tp->c, FIELD_FORMAT, tp->t,
                               "no candidate format of the budget holds its shape");
}

/* Where a budget's message points: the recipe line, or what the command line said (quick mode). */
static void budget_where(const nf_recipe *r, nf_recipe_pos pos, char *buf, size_t size)
{
    if (r->budget.label) snprintf(buf, size, "%s", r->budget.label);
    else snprintf(buf, size, "%s:%d:%d: budget", nf_plan_recipe_label(r), pos.line, pos.col);
}

/* After the objects: the items, what they may take, and the capacity. */
nf_status nf_plan_budget_items(nf_plan *p, tensor_plan *tps, size_t n, const name_index *ix, problems *probs,
                               nf_error *err)
{
    plan_budget *b = p->budget;
    const nf_recipe *r = p->recipe;
    const nf_recipe_budget *rb = &r->budget;
    size_t count = 0;
    for (size_t i = 0; i < n; i++) count += tps[i].budget && tps[i].ok;
    if (count == 0) {
        char where[NF_ERROR_MESSAGE_MAX / 4];
        budget_where(r, rb->pos, where, sizeof where);
        return nf_error_set(err, NF_ERR_INVALID, "%s: no tensor is left to it (%s)", where,
                            rb->label ? "no rank-2 floating-point tensor that a --rule does not pin"
                                      : "give the tensors it chooses for `format: budget` in a rule");
    }
    if (r->budget.sensitivity) NF_TRY(budget_sensitivity_names(p, err));
    if (!(b->items = calloc(count, sizeof *b->items))) return nf_common_nomem(err);
    size_t imi = rb->imatrix ? nf_plan_source_index(p, rb->imatrix) : SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        tensor_plan *tp = &tps[i];
        if (!tp->budget || !tp->ok) continue;
        if (nf_plan_group_of(ix, tp->t->name) >= 0 || tp->object == SIZE_MAX) {
            nf_plan_tensor_problem(
                probs, r, tp->c, FIELD_FORMAT, tp->t,
                "is a member of a group: the budget chooses for single tensors (give the group a format)");
            continue;
        }
        plan_budget_item *it = &b->items[b->nitems++];
        it->source = tp->member.source;
        it->t = tp->t;
        it->object = tp->object;
        it->rows = tp->rows;
        it->cols = tp->cols;
        it->runner_up = SIZE_MAX;
        size_t si = nf_sensitivity_find(&b->sens, tp->t->name);
        it->factor = si == SIZE_MAX ? 1.0 : b->sens.factors[si];
        if (imi != SIZE_MAX) {
            nf_error e;
            uint64_t mats, per, len = 0;
            nf_plan_stack_of(tp->t, &mats, &per);
            if (nf_imatrix_lookup_stack(p->imatrices[imi], tp->t->name, mats, tp->cols, &it->weights, &len, NULL, &e) !=
                NF_OK) {
                nf_plan_tensor_problem(probs, r, tp->c, FIELD_FORMAT, tp->t, e.message);
                continue;
            }
            if (len > tp->cols) { /* a stack: matrix m's rows weigh by its own vector */
                it->weights_rows = per;
                it->weights_stride = tp->cols;
            }
        }
        if (!nf_add_u64(b->elements, tp->t->elements, &b->elements))
            return nf_error_set(err, NF_ERR_INVALID, "budget: the tensors left to it hold more than 2^64 values");
        budget_options(p, tp, it, probs);
    }
    if (probs->count || probs->nomem) return NF_OK;
    uint64_t all = 0, items = 0;
    for (size_t i = 0; i < p->nobjects; i++)
        if (p->objects[i].kind == NF_OBJECT_TENSOR && !nf_add_u64(all, p->objects[i].g.bytes, &all))
            return nf_error_set(err, NF_ERR_INVALID, "budget: the tensor objects hold more than 2^64 bytes");
    for (size_t k = 0; k < b->nitems; k++) items += p->objects[b->items[k].object].g.bytes; /* <= all */
    b->fixed_bytes = all - items;
    return NF_OK;
}

/* The figure a budget is given in: bits per weight over the items, or bytes of every tensor. */
static double budget_figure(const plan_budget *b, const nf_recipe_budget *rb, uint64_t item_bytes)
{
    if (rb->bytes) return (double)b->fixed_bytes + (double)item_bytes;
    return 8.0 * (double)item_bytes / (double)b->elements;
}

/* The bytes the items may have, or the refusal naming the range the budget can reach. */
nf_status nf_plan_budget_capacity(nf_plan *p, nf_error *err)
{
    plan_budget *b = p->budget;
    const nf_recipe *r = p->recipe;
    const nf_recipe_budget *rb = &r->budget;
    NF_TRY(nf_budget_reach(b, err));
    bool low, high;
    if (rb->bytes) {
        low = rb->bytes < b->fixed_bytes || rb->bytes - b->fixed_bytes < b->min_bytes;
        high = !low && rb->bytes - b->fixed_bytes > b->max_bytes;
        b->capacity = low ? 0 : rb->bytes - b->fixed_bytes;
    } else {
        double cap = floor(rb->bits_per_weight * (double)b->elements / 8.0);
        low = cap < (double)b->min_bytes;
        high = cap > (double)b->max_bytes;
        b->capacity = low || high ? 0 : (uint64_t)cap;
    }
    if (!low && !high) return NF_OK;
    const char *unit = rb->bytes ? "bytes" : "bits per weight";
    char lo[64], hi[64], given[64];
    if (rb->bytes) {
        snprintf(lo, sizeof lo, "%.0f", budget_figure(b, rb, b->min_bytes));
        snprintf(hi, sizeof hi, "%.0f", budget_figure(b, rb, b->max_bytes));
        snprintf(given, sizeof given, "%" PRIu64, rb->bytes);
    } else {
        /* the bounds rounded outwards, so that a figure inside them is reachable */
        double l = ceil(budget_figure(b, rb, b->min_bytes) * 1e4) / 1e4;
        double h = floor(budget_figure(b, rb, b->max_bytes) * 1e4) / 1e4;
        if (h < l) h = l; /* one size only: its figure, rounded up */
        snprintf(lo, sizeof lo, "%.4f", l);
        snprintf(hi, sizeof hi, "%.4f", h);
        snprintf(given, sizeof given, "%g", rb->bits_per_weight);
    }
    char fixed[96] = "";
    if (rb->bytes) snprintf(fixed, sizeof fixed, " (the other tensor objects take %" PRIu64 ")", b->fixed_bytes);
    char where[NF_ERROR_MESSAGE_MAX / 4];
    budget_where(r, rb->limit_pos, where, sizeof where);
    return nf_error_set(err, NF_ERR_INVALID,
                        "%s: %s %s is %s what the candidates reach with the %zu tensor%s left to the budget: %s to %s "
                        "%s%s",
                        where, given, unit, low ? "below" : "above", b->nitems, b->nitems == 1 ? "" : "s", lo, hi, unit,
                        fixed);
}

/* After the allocation: each item's object planned again with its pick. */
void nf_plan_budget_patch(nf_plan *p, tensor_plan *tps, size_t n, problems *probs)
{
    plan_budget *b = p->budget;
    size_t k = 0;
    for (size_t i = 0; i < n && k < b->nitems; i++) {
        if (!tps[i].budget || tps[i].t != b->items[k].t) continue;
        plan_budget_item *it = &b->items[k++];
        const plan_option *op = &it->opts[it->pick];
        const plan_candidate *cd = &b->cands[op->cand];
        nf_recipe_choice c = *tps[i].c;
        c.format = cd->fmt->name;
        c.method = nf_method_name(cd->method);
        c.with = op->with;
        tensor_plan tp = tps[i];
        tp.c = &c;
        tp.ok = false;
        memset(&tp.member, 0, sizeof tp.member);
        const nf_source_tensor *companions[NF_QWEIGHT_MAX_READS] = {0};
        nf_plan_tensor(p, it->source, &tp, probs, companions);
        if (!tp.ok) continue;
        plan_object *o = &p->objects[it->object];
        nf_error e;
        o->method = tp.method;
        o->params = tp.params;
        o->with = c.with;
        o->members[0] = tp.member;
        o->budget = it;
        if (nf_plan_object_geometry(&tp, &o->g, &e) != NF_OK)
            nf_plan_tensor_problem(probs, p->recipe, &c, FIELD_FORMAT, tp.t, e.message);
    }
}
