/* The recipe's `defaults:` and `rules:` (docs/recipes.md): each rule's match, when and choice,
 * checked against the closed schema (parse_impl.h). */
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

/* A `keep` or `drop` value: *keep true for keep. */
static nf_status get_keep(parser *p, const ynode *v, const char *ctx, bool *keep)
{
    const char *s = NULL;
    NF_TRY(nf_recipe_get_string(p, v, ctx, "keep or drop", &s));
    if (strcmp(s, "keep") != 0 && strcmp(s, "drop") != 0)
        return nf_recipe_pfail(p, v->pos, "%s: '%s' is neither keep nor drop", ctx, s);
    *keep = strcmp(s, "keep") == 0;
    return NF_OK;
}

nf_status nf_recipe_parse_defaults(parser *p, const ynode *n)
{
    static const char *const keys[] = {"format", "method", "activation_scales", "gguf_metadata", NULL};
    NF_TRY(nf_recipe_want_map(p, n, "defaults"));
    for (size_t i = 0; i < n->n; i++) {
        const ynode *k = yn_key(n, i), *v = yn_val(n, i);
        if (!strcmp(k->text, "format")) {
            char *f = NULL;
            NF_TRY(nf_recipe_get_format(p, v, "defaults.format", &f));
            free(p->r->default_format);
            p->r->default_format = f;
            p->r->default_format_pos = v->pos;
        } else if (!strcmp(k->text, "method")) {
            NF_TRY(nf_recipe_get_method(p, v, "defaults.method", &p->r->default_method));
            p->r->default_method_pos = v->pos;
        } else if (!strcmp(k->text, "activation_scales")) {
            NF_TRY(get_keep(p, v, "defaults.activation_scales", &p->r->keep_activation_scales));
        } else if (!strcmp(k->text, "gguf_metadata")) {
            bool keep = true;
            NF_TRY(get_keep(p, v, "defaults.gguf_metadata", &keep));
            p->r->drop_gguf_metadata = !keep;
        } else {
            return nf_recipe_unknown_key(p, k, "defaults", keys);
        }
    }
    return NF_OK;
}

/* A selector: non-empty, at most RECIPE_MAX_SELECTOR_BYTES; "re:" ones must be POSIX extended
 * regular expressions (the syntax glibc's regcomp accepts, with its messages naming what is
 * wrong: regex_guard.c) that the resolver's own matcher compiles (lib/src/recipe/match.c: the
 * features a tensor name needs), and there are at most RECIPE_MAX_REGEX_SELECTORS of them: each
 * is compiled here and again by the resolver (docs/security.md 7.1, F9, docs/recipes.md). */
#define RECIPE_MAX_SELECTOR_BYTES 4096u
#define RECIPE_MAX_REGEX_SELECTORS 4096u

static nf_status add_selector(parser *p, nf_recipe_rule *rule, const ynode *n, const char *ctx)
{
    const char *s = NULL;
    NF_TRY(nf_recipe_get_string(p, n, ctx, "a tensor name, glob or re:REGEX", &s));
    if (n->len > RECIPE_MAX_SELECTOR_BYTES)
        return nf_recipe_pfail(p, n->pos,
                               "%s: selector of %zu bytes, more than the cap of %u (a tensor name has at most %u)", ctx,
                               n->len, RECIPE_MAX_SELECTOR_BYTES, NF_SOURCE_MAX_NAME_BYTES);
    if (nf_recipe_is_regex(s) && ++p->nregex > RECIPE_MAX_REGEX_SELECTORS)
        return nf_recipe_pfail(p, n->pos,
                               "%s: more than %u regular expression selectors (the cap; a glob or an exact name "
                               "costs less)",
                               ctx, RECIPE_MAX_REGEX_SELECTORS);
    if (nf_recipe_is_regex(s)) {
        const char *pattern = s + strlen(RECIPE_RE_PREFIX);
        if (!pattern[0]) return nf_recipe_pfail(p, n->pos, "%s: empty regular expression '%s'", ctx, s);
        const char *why_complex = nf_recipe_regex_too_complex(pattern);
        if (why_complex) return nf_recipe_pfail(p, n->pos, "%s: regular expression '%s' %s", ctx, pattern, why_complex);
        const char *bad_syntax = nf_recipe_regex_syntax_error(pattern);
        if (bad_syntax)
            return nf_recipe_pfail(p, n->pos, "%s: bad regular expression '%s': %s", ctx, pattern, bad_syntax);
        recipe_regex *mine = NULL;
        const char *why = nf_recipe_regex_compile(pattern, &mine);
        nf_recipe_regex_free(mine);
        if (why) return nf_recipe_pfail(p, n->pos, "%s: regular expression '%s' %s", ctx, pattern, why);
    }
    size_t count = rule->nmatch;
    NF_TRY(nf_recipe_grow_one(p, (void **)&rule->match, &count, sizeof *rule->match));
    rule->nmatch = count;
    return nf_recipe_dup_into(p, s, &rule->match[count - 1]);
}

static nf_status parse_match(parser *p, nf_recipe_rule *rule, const ynode *n, const char *rctx)
{
    char ctx[CTX_MAX + 16];
    snprintf(ctx, sizeof ctx, "%s.match", rctx);
    if (n->kind == YN_SCALAR) return add_selector(p, rule, n, ctx);
    if (n->kind != YN_SEQ) return nf_recipe_pexpected(p, n, ctx, "a selector or a list of selectors");
    if (n->n == 0) return nf_recipe_pfail(p, n->pos, "%s: empty list: expected at least one selector", ctx);
    for (size_t i = 0; i < n->n; i++) {
        char ictx[CTX_MAX + 48];
        snprintf(ictx, sizeof ictx, "%s[%zu]", ctx, i);
        NF_TRY(add_selector(p, rule, n->items[i], ictx));
    }
    return NF_OK;
}

static nf_status parse_when(parser *p, nf_recipe_rule *rule, const ynode *n, const char *rctx)
{
    static const char *const keys[] = {"rank", "dtype", "min_elements", "quantized", NULL};
    char ctx[CTX_MAX + 16];
    snprintf(ctx, sizeof ctx, "%s.when", rctx);
    NF_TRY(nf_recipe_want_map(p, n, ctx));
    for (size_t i = 0; i < n->n; i++) {
        const ynode *k = yn_key(n, i), *v = yn_val(n, i);
        char kctx[CTX_MAX + 48];
        snprintf(kctx, sizeof kctx, "%s.%s", ctx, k->text);
        if (!strcmp(k->text, "rank")) {
            uint64_t rank = 0;
            NF_TRY(nf_recipe_get_u64(p, v, kctx, &rank));
            if (rank > (uint64_t)INT_MAX)
                return nf_recipe_pfail(p, v->pos, "%s: rank %s is out of range", kctx, v->text);
            rule->when_rank = (int)rank;
        } else if (!strcmp(k->text, "dtype")) {
            const char *s = NULL;
            NF_TRY(nf_recipe_get_string(p, v, kctx, "a source dtype (e.g. BF16, F32, Q4_K)", &s));
            NF_TRY(nf_recipe_dup_into(p, s, &rule->when_dtype));
        } else if (!strcmp(k->text, "min_elements")) {
            NF_TRY(nf_recipe_get_u64(p, v, kctx, &rule->when_min_elements));
        } else if (!strcmp(k->text, "quantized")) {
            bool b = false;
            NF_TRY(nf_recipe_get_bool(p, v, kctx, &b));
            rule->when_quantized = b ? 1 : 0;
        } else {
            return nf_recipe_unknown_key(p, k, ctx, keys);
        }
    }
    return NF_OK;
}

/* Method parameters checked where the rule names its method, pointing at the offending key
 * (unknown parameter) or value (wrong type). */
static nf_status check_with_now(parser *p, const nf_recipe_rule *rule, const ynode *with_node, const char *rctx)
{
    char why[256];
    size_t bad = 0;
    bool bad_value = false;
    if (nf_recipe_check_with(rule->method, rule->with, why, sizeof why, &bad, &bad_value)) return NF_OK;
    nf_recipe_pos pos = with_node->pos;
    if (bad < with_node->n) pos = bad_value ? yn_val(with_node, bad)->pos : yn_key(with_node, bad)->pos;
    return nf_recipe_pfail(p, pos, "%s.with: %s", rctx, why);
}

static nf_status parse_rule(parser *p, nf_recipe_rule *rule, const ynode *n, size_t index)
{
    static const char *const keys[] = {"match", "when", "format", "layout", "method", "with", "skip", "optional", NULL};
    char ctx[CTX_MAX];
    snprintf(ctx, sizeof ctx, "rules[%zu]", index);
    rule->when_rank = -1;
    rule->when_quantized = -1;
    rule->skip = -1;
    rule->pos = n->pos;
    NF_TRY(nf_recipe_want_map(p, n, ctx));
    const ynode *with_node = NULL;
    bool has_match = false;
    for (size_t i = 0; i < n->n; i++) {
        const ynode *k = yn_key(n, i), *v = yn_val(n, i);
        char kctx[CTX_MAX + 32];
        snprintf(kctx, sizeof kctx, "%s.%s", ctx, k->text);
        if (!strcmp(k->text, "match")) {
            NF_TRY(parse_match(p, rule, v, ctx));
            has_match = true;
        } else if (!strcmp(k->text, "when")) {
            NF_TRY(parse_when(p, rule, v, ctx));
        } else if (!strcmp(k->text, "format")) {
            NF_TRY(nf_recipe_get_rule_format(p, v, kctx, &rule->format));
            rule->format_pos = v->pos;
        } else if (!strcmp(k->text, "layout")) {
            NF_TRY(nf_recipe_get_layout(p, v, kctx, &rule->layout));
            rule->layout_pos = v->pos;
        } else if (!strcmp(k->text, "method")) {
            NF_TRY(nf_recipe_get_method(p, v, kctx, &rule->method));
            rule->method_pos = v->pos;
        } else if (!strcmp(k->text, "with")) {
            NF_TRY(nf_recipe_want_map(p, v, kctx));
            NF_TRY(nf_recipe_yn_to_json(v, p->name, &rule->with, p->err));
            rule->with_pos = v->pos;
            with_node = v;
        } else if (!strcmp(k->text, "skip")) {
            bool b = false;
            NF_TRY(nf_recipe_get_bool(p, v, kctx, &b));
            rule->skip = b ? 1 : 0;
        } else if (!strcmp(k->text, "optional")) {
            NF_TRY(nf_recipe_get_bool(p, v, kctx, &rule->optional));
        } else {
            return nf_recipe_unknown_key(p, k, ctx, keys);
        }
    }
    if (!has_match)
        return nf_recipe_pfail(p, n->pos, "%s: missing key 'match' (a selector or a list of selectors)", ctx);
    /* With the method in the same rule the parameters are known to be for it; otherwise the
     * method comes from another rule or the defaults, and nf_recipe_resolve checks them. */
    if (with_node && rule->method) NF_TRY(check_with_now(p, rule, with_node, ctx));
    return NF_OK;
}

nf_status nf_recipe_parse_rules(parser *p, const ynode *n)
{
    NF_TRY(nf_recipe_want_seq(p, n, "rules"));
    nf_recipe *r = p->r;
    if (n->n == 0) return NF_OK;
    r->rules = calloc(n->n, sizeof *r->rules);
    if (!r->rules) return nf_recipe_pnomem(p);
    for (size_t i = 0; i < n->n; i++) {
        r->nrules = i + 1; /* counted before parsing so a failure frees the partial rule */
        NF_TRY(parse_rule(p, &r->rules[i], n->items[i], i));
    }
    return NF_OK;
}
