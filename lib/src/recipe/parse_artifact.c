/* The recipe's sections that shape the artifact beside its rules (docs/recipes.md): `components:`
 * with their resources and config, `groups:` and `budget:` (parse_impl.h). */
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ninfer/format.h>
#include <ninfer/layout.h>
#include <ninfer/method.h>
#include <ninfer/source.h>

#include "common/buf.h"
#include "common/fail.h"
#include "common/strset.h"
#include "recipe/recipe_internal.h"
#include "recipe/parse_impl.h"

/* "SOURCE/file" names a file of a source; "/abs", "./rel", "../rel", "${VAR}/..." and a name
 * without '/' are plain paths, relative to the recipe's directory. */
static bool plain_resource_path(const char *raw)
{
    return raw[0] == '/' || !strncmp(raw, "./", 2) || !strncmp(raw, "../", 3) || !strncmp(raw, "${", 2) ||
           !strchr(raw, '/');
}

static nf_status parse_resource(parser *p, nf_recipe_resource *res, char **file_out, const ynode *k, const ynode *v,
                                const char *cctx)
{
    char ctx[CTX_MAX + 40];
    snprintf(ctx, sizeof ctx, "%s.resources.%s", cctx, k->text);
    res->pos = k->pos;
    if (k->len == 0) return nf_recipe_pfail(p, k->pos, "%s.resources: a resource role must not be empty", cctx);
    NF_TRY(nf_recipe_dup_into(p, k->text, &res->role));
    const char *raw = NULL;
    NF_TRY(nf_recipe_get_string(p, v, ctx, "SOURCE/file or a path", &raw));
    NF_TRY(nf_recipe_dup_into(p, raw, &res->written));
    if (plain_resource_path(raw)) {
        char *expanded = NULL;
        NF_TRY(nf_recipe_expand_vars(p, v, ctx, raw, &expanded, &res->blocked));
        if (res->blocked) return NF_OK;
        res->path = nf_recipe_join_path(p->dir, expanded);
        free(expanded);
        return res->path ? NF_OK : nf_recipe_pnomem(p);
    }
    const char *slash = strchr(raw, '/');
    size_t name_len = (size_t)(slash - raw);
    char name[256];
    if (name_len >= sizeof name) return nf_recipe_pfail(p, v->pos, "%s: source name too long in '%s'", ctx, raw);
    memcpy(name, raw, name_len);
    name[name_len] = '\0';
    const nf_recipe_source *src = nf_recipe_source_by_name(p->r, name);
    if (!src) {
        char list[200];
        nf_recipe_source_list(p->r, list, sizeof list);
        return nf_recipe_pfail(
            p, v->pos, "%s: unknown source '%s' in '%s' (sources: %s; a plain path starts with /, ./, ../ or ${VAR})",
            ctx, name, raw, list);
    }
    const char *file_raw = slash + 1;
    while (*file_raw == '/') file_raw++;
    if (!*file_raw) return nf_recipe_pfail(p, v->pos, "%s: no file named after '%s/'", ctx, name);
    NF_TRY(nf_recipe_dup_into(p, name, &res->source));
    NF_TRY(nf_recipe_expand_vars(p, v, ctx, file_raw, file_out, &res->blocked));
    if (res->blocked || !src->path) return NF_OK; /* (a blocked source: --source may give it) */
    char *dir = nf_recipe_source_dir(src->path);
    if (!dir) return nf_recipe_pnomem(p);
    res->path = nf_recipe_join_path(dir, *file_out);
    free(dir);
    return res->path ? NF_OK : nf_recipe_pnomem(p);
}

static nf_status parse_config(parser *p, nf_recipe_component *c, const ynode *n, const char *cctx)
{
    char ctx[CTX_MAX + 8];
    snprintf(ctx, sizeof ctx, "%s.config", cctx);
    if (n->kind != YN_MAP) return nf_recipe_pexpected(p, n, ctx, "{from: SOURCE} or a config mapping");
    const ynode *key = NULL;
    const ynode *from = nf_recipe_find_key(n, "from", &key);
    if (from && n->n == 1) {
        char fctx[CTX_MAX + 16];
        snprintf(fctx, sizeof fctx, "%s.from", ctx);
        const char *s = NULL;
        NF_TRY(nf_recipe_get_string(p, from, fctx, "a source name", &s));
        if (!nf_recipe_source_by_name(p->r, s)) {
            char list[200];
            nf_recipe_source_list(p->r, list, sizeof list);
            return nf_recipe_pfail(p, from->pos, "%s: unknown source '%s' (sources: %s)", fctx, s, list);
        }
        return nf_recipe_dup_into(p, s, &c->config_from);
    }
    return nf_recipe_yn_to_json(n, p->name, &c->config, p->err);
}

static nf_status parse_component(parser *p, size_t ci, const ynode *k, const ynode *v)
{
    static const char *const keys[] = {"config", "resources", NULL};
    nf_recipe_component *c = &p->r->components[ci];
    char ctx[CTX_MAX];
    snprintf(ctx, sizeof ctx, "components.%s", k->text);
    c->pos = k->pos;
    if (k->len == 0) return nf_recipe_pfail(p, k->pos, "components: a component name must not be empty");
    NF_TRY(nf_recipe_dup_into(p, k->text, &c->name));
    NF_TRY(nf_recipe_want_map(p, v, ctx));
    for (size_t i = 0; i < v->n; i++) {
        const ynode *ck = yn_key(v, i), *cv = yn_val(v, i);
        if (!strcmp(ck->text, "config")) {
            NF_TRY(parse_config(p, c, cv, ctx));
        } else if (!strcmp(ck->text, "resources")) {
            char rctx[CTX_MAX + 16];
            snprintf(rctx, sizeof rctx, "%s.resources", ctx);
            NF_TRY(nf_recipe_want_map(p, cv, rctx));
            if (cv->n == 0) continue;
            c->resources = calloc(cv->n, sizeof *c->resources);
            p->impl->res_file[ci] = calloc(cv->n, sizeof(char *));
            if (!c->resources || !p->impl->res_file[ci]) return nf_recipe_pnomem(p);
            for (size_t j = 0; j < cv->n; j++) {
                c->nresources = j + 1;
                NF_TRY(
                    parse_resource(p, &c->resources[j], &p->impl->res_file[ci][j], yn_key(cv, j), yn_val(cv, j), ctx));
            }
        } else {
            return nf_recipe_unknown_key(p, ck, ctx, keys);
        }
    }
    return NF_OK;
}

nf_status nf_recipe_parse_components(parser *p, const ynode *n)
{
    NF_TRY(nf_recipe_want_map(p, n, "components"));
    if (n->n == 0) return NF_OK;
    nf_recipe *r = p->r;
    r->components = calloc(n->n, sizeof *r->components);
    p->impl->res_file = calloc(n->n, sizeof *p->impl->res_file);
    if (!r->components || !p->impl->res_file) return nf_recipe_pnomem(p);
    for (size_t i = 0; i < n->n; i++) {
        r->ncomponents = i + 1;
        NF_TRY(parse_component(p, i, yn_key(n, i), yn_val(n, i)));
    }
    return NF_OK;
}

nf_status nf_recipe_parse_groups(parser *p, const ynode *n)
{
    static const char *const keys[] = {"id", "members", NULL};
    NF_TRY(nf_recipe_want_seq(p, n, "groups"));
    if (n->n == 0) return NF_OK;
    nf_recipe *r = p->r;
    r->groups = calloc(n->n, sizeof *r->groups);
    if (!r->groups) return nf_recipe_pnomem(p);
    /* ids and members are checked for uniqueness with hash sets: groups are disjoint. */
    nf_strset ids = {0}, members = {0};
    nf_status st = NF_OK;
    for (size_t i = 0; i < n->n && st == NF_OK; i++) {
        nf_recipe_group *g = &r->groups[i];
        r->ngroups = i + 1;
        const ynode *gn = n->items[i];
        char ctx[64];
        snprintf(ctx, sizeof ctx, "groups[%zu]", i);
        g->pos = gn->pos;
        if ((st = nf_recipe_want_map(p, gn, ctx)) != NF_OK) break;
        const ynode *mem = NULL;
        for (size_t j = 0; j < gn->n && st == NF_OK; j++) {
            const ynode *k = yn_key(gn, j), *v = yn_val(gn, j);
            char kctx[96];
            snprintf(kctx, sizeof kctx, "%s.%s", ctx, k->text);
            if (!strcmp(k->text, "id")) {
                const char *s = NULL;
                if ((st = nf_recipe_get_string(p, v, kctx, "an object id", &s)) != NF_OK) break;
                size_t first = 0;
                int rc = nf_strset_insert(&ids, v->text, NULL, i, &first);
                if (rc < 0) st = nf_recipe_pnomem(p);
                else if (rc == 0)
                    st = nf_recipe_pfail(p, v->pos, "%s: duplicate group id '%s' (groups[%zu] at %d:%d)", kctx, s,
                                         first, r->groups[first].pos.line, r->groups[first].pos.col);
                else st = nf_recipe_dup_into(p, s, &g->id);
            } else if (!strcmp(k->text, "members")) {
                if ((st = nf_recipe_want_seq(p, v, kctx)) != NF_OK) break;
                if (v->n == 0) {
                    st = nf_recipe_pfail(p, v->pos, "%s: empty list: expected at least one tensor name", kctx);
                    break;
                }
                mem = v;
            } else {
                st = nf_recipe_unknown_key(p, k, ctx, keys);
            }
        }
        if (st != NF_OK) break;
        if (!g->id) {
            st = nf_recipe_pfail(p, gn->pos, "%s: missing key 'id' (the parent object id)", ctx);
            break;
        }
        if (!mem) {
            st = nf_recipe_pfail(p, gn->pos, "%s: missing key 'members' (the tensors to stack)", ctx);
            break;
        }
        g->members = calloc(mem->n, sizeof *g->members);
        g->member_pos = calloc(mem->n, sizeof *g->member_pos);
        if (!g->members || !g->member_pos) {
            st = nf_recipe_pnomem(p);
            break;
        }
        for (size_t j = 0; j < mem->n && st == NF_OK; j++) {
            const ynode *m = mem->items[j];
            char mctx[128];
            snprintf(mctx, sizeof mctx, "%s.members[%zu]", ctx, j);
            const char *s = NULL;
            if ((st = nf_recipe_get_string(p, m, mctx, "a tensor name", &s)) != NF_OK) break;
            size_t first = 0;
            int rc = nf_strset_insert(&members, m->text, NULL, i, &first);
            if (rc < 0) st = nf_recipe_pnomem(p);
            else if (rc == 0)
                st = nf_recipe_pfail(p, m->pos, "%s: tensor '%s' is already a member of group '%s'", mctx, s,
                                     r->groups[first].id);
            else if ((st = nf_recipe_dup_into(p, s, &g->members[j])) == NF_OK) {
                g->member_pos[j] = m->pos;
                g->nmembers = j + 1;
            }
        }
    }
    nf_strset_free(&ids);
    nf_strset_free(&members);
    return st;
}

/* ---------------------------------------------------------------- budget */
/* A list of names, each checked by get (a format or a method), into a fresh array. */
static nf_status get_name_list(parser *p, const ynode *n, const char *ctx,
                               nf_status (*get)(parser *, const ynode *, const char *, char **), char ***out,
                               size_t *count)
{
    NF_TRY(nf_recipe_want_seq(p, n, ctx));
    if (n->n == 0) return nf_recipe_pfail(p, n->pos, "%s: expected at least one name, got an empty list", ctx);
    *out = calloc(n->n, sizeof **out);
    if (!*out) return nf_recipe_pnomem(p);
    for (size_t i = 0; i < n->n; i++) {
        char ictx[CTX_MAX + 32];
        snprintf(ictx, sizeof ictx, "%s[%zu]", ctx, i);
        NF_TRY(get(p, n->items[i], ictx, &(*out)[i]));
        *count = i + 1;
        for (size_t j = 0; j < i; j++)
            if (!strcmp((*out)[j], (*out)[i]))
                return nf_recipe_pfail(p, n->items[i]->pos, "%s: '%s' is listed twice", ictx, (*out)[i]);
    }
    return NF_OK;
}

/* bits_per_weight: a number > 0 (an integer is one too). */
static nf_status get_positive_number(parser *p, const ynode *n, const char *ctx, double *out)
{
    if (n->kind == YN_SCALAR && n->type == YS_INT && !n->int_overflow) {
        *out = (double)n->ival;
    } else if (n->kind == YN_SCALAR && n->type == YS_FLOAT) {
        char *end = NULL;
        *out = strtod(n->text, &end);
        if (!end || *end) return nf_recipe_pexpected(p, n, ctx, "a positive number");
    } else {
        return nf_recipe_pexpected(p, n, ctx, "a positive number");
    }
    if (!(*out > 0) || !isfinite(*out))
        return nf_recipe_pfail(p, n->pos, "%s: %s is not a positive number", ctx, n->text);
    return NF_OK;
}

nf_status nf_recipe_parse_budget(parser *p, const ynode *n)
{
    static const char *const keys[] = {"bits_per_weight", "bytes",       "formats",     "methods",
                                       "imatrix",         "sample_rows", "sensitivity", NULL};
    nf_recipe_budget *b = &p->r->budget;
    NF_TRY(nf_recipe_want_map(p, n, "budget"));
    b->set = true;
    b->pos = n->pos;
    b->sample_rows = NF_RECIPE_BUDGET_SAMPLE_ROWS;
    const ynode *limit = NULL;
    for (size_t i = 0; i < n->n; i++) {
        const ynode *k = yn_key(n, i), *v = yn_val(n, i);
        char kctx[CTX_MAX];
        snprintf(kctx, sizeof kctx, "budget.%s", k->text);
        if (!strcmp(k->text, "bits_per_weight") || !strcmp(k->text, "bytes")) {
            if (limit)
                return nf_recipe_pfail(p, k->pos,
                                       "budget: both bits_per_weight and bytes are given (line %d): the budget is one "
                                       "of them",
                                       limit->pos.line);
            limit = k;
            b->limit_pos = v->pos;
            if (!strcmp(k->text, "bytes")) {
                NF_TRY(nf_recipe_get_u64(p, v, kctx, &b->bytes));
                if (b->bytes == 0)
                    return nf_recipe_pfail(p, v->pos, "%s: expected a positive number of bytes, got 0", kctx);
            } else {
                NF_TRY(get_positive_number(p, v, kctx, &b->bits_per_weight));
            }
        } else if (!strcmp(k->text, "formats")) {
            NF_TRY(get_name_list(p, v, kctx, nf_recipe_get_format, &b->formats, &b->nformats));
        } else if (!strcmp(k->text, "methods")) {
            NF_TRY(get_name_list(p, v, kctx, nf_recipe_get_method, &b->methods, &b->nmethods));
        } else if (!strcmp(k->text, "imatrix")) {
            const char *s = NULL;
            NF_TRY(
                nf_recipe_get_string(p, v, kctx, "a source name", &s)); /* (--source may add it: the planner checks) */
            NF_TRY(nf_recipe_dup_into(p, s, &b->imatrix));
            b->imatrix_pos = v->pos;
        } else if (!strcmp(k->text, "sample_rows")) {
            NF_TRY(nf_recipe_get_u64(p, v, kctx, &b->sample_rows));
        } else if (!strcmp(k->text, "sensitivity")) {
            const char *s = NULL;
            NF_TRY(nf_recipe_get_string(p, v, kctx, "a source name",
                                        &s)); /* (--sensitivity may add it: the planner checks) */
            NF_TRY(nf_recipe_dup_into(p, s, &b->sensitivity));
            b->sensitivity_pos = v->pos;
        } else {
            return nf_recipe_unknown_key(p, k, "budget", keys);
        }
    }
    if (!limit)
        return nf_recipe_pfail(p, n->pos,
                               "budget: missing the budget: bits_per_weight (e.g. 4.5) or bytes (e.g. 4000000000)");
    return NF_OK;
}
