/* Rule resolution (docs/recipes.md, "How rules apply"): defaults, then every rule in order, field by field.
 *
 * Cost (docs/security.md 7.1, F9: a 209 KB recipe took 17 s against a 2 MB checkpoint, 150k selectors x 20k
 * tensors 41 s, one "re:" selector minutes): an exact selector is one hash lookup (and "an exact
 * name beats a glob" with it); a glob or regular expression is tried only on the names that
 * start with its literal prefix (a binary search in the sorted names), by the counted matchers of
 * match.c.  Before any matching, the (selector, candidate name) pairs are counted and refused
 * beyond NF_RECIPE_MAX_MATCH_PAIRS; while matching, the matchers' steps (plus one per tensor a
 * rule applies to) are refused beyond NF_RECIPE_MAX_MATCH_STEPS.  Both caps name the rule where
 * they are crossed (docs/recipes.md, "How rules apply"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/format.h>
#include <ninfer/method.h>

#include "common/fail.h"
#include "common/strset.h"
#include "recipe/recipe_internal.h"

bool nf_recipe_is_regex(const char *selector)
{
    return strncmp(selector, RECIPE_RE_PREFIX, strlen(RECIPE_RE_PREFIX)) == 0;
}

bool nf_recipe_glob_has_meta(const char *selector) { return strpbrk(selector, "*?[\\") != NULL; }

const char *nf_recipe_default_method(const char *format)
{
    if (!format) return NULL;
    const nf_format *f = nf_format_lookup(format);
    if (!f) return NULL;
    switch (f->category) {
    case NF_CAT_DIRECT: return "cast_direct";
    case NF_CAT_GROUPED:
        /* q2 and t2 hold trained codes no built-in encoder reproduces (docs/methods.md) */
        return f->id == NF_FMT_Q2_G64_FP16 || f->id == NF_FMT_T2_G128_FP16 ? "import_encoded" : "grouped_absmax";
    case NF_CAT_FP8_ROW: return "fp8_row_maxabs";
    case NF_CAT_NVFP4:
    case NF_CAT_GGUF: return "import_encoded";
    }
    return NULL;
}

/* ---------------------------------------------------------------- method parameters */
static void describe_json(const json_t *v, char *out, size_t size)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: snprintf(out, size, "a mapping"); return;
    case JSON_ARRAY: snprintf(out, size, "a sequence"); return;
    case JSON_STRING: snprintf(out, size, "the string '%.60s'", json_string_value(v)); return;
    case JSON_INTEGER: snprintf(out, size, "the integer %lld", (long long)json_integer_value(v)); return;
    case JSON_REAL: snprintf(out, size, "the number %g", json_real_value(v)); return;
    case JSON_TRUE: snprintf(out, size, "the boolean true"); return;
    case JSON_FALSE: snprintf(out, size, "the boolean false"); return;
    case JSON_NULL: snprintf(out, size, "null (an empty value)"); return;
    }
    snprintf(out, size, "a value");
}

/* A method program's parameters are its own (passed on as JSON, docs/method-programs.md 3); only
 * `imatrix`, which the converter reads for it, must name a source. */
static bool check_program_with(const json_t *with, char *why, size_t why_size, size_t *bad_index, bool *bad_value)
{
    size_t i = 0;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)with, key, v)
    {
        *bad_index = i++;
        if (!strcmp(key, "imatrix") && (!json_is_string(v) || json_string_length(v) == 0)) {
            char got[96];
            describe_json(v, got, sizeof got);
            snprintf(why, why_size, "imatrix: expected a source name or a path, got %s", got);
            *bad_value = true;
            return false;
        }
    }
    return true;
}

bool nf_recipe_check_with(const char *method, const json_t *with, char *why, size_t why_size, size_t *bad_index,
                          bool *bad_value)
{
    *bad_index = 0;
    *bad_value = false;
    if (!with) return true;
    if (!json_is_object(with)) {
        snprintf(why, why_size, "expected a mapping of method parameters");
        *bad_index = SIZE_MAX;
        return false;
    }
    if (json_object_size(with) == 0 || !method) return true;
    nf_method_id id;
    if (strcmp(method, NF_RECIPE_BUDGET) != 0 && nf_method_find(method, &id, NULL) != NF_OK)
        return check_program_with(with, why, why_size, bad_index, bad_value);
    /* a tensor left to the budget: its with is for its grouped_search candidates */
    bool search = !strcmp(method, "grouped_search") || !strcmp(method, NF_RECIPE_BUDGET);
    /* ggml_quantize and nvfp4_search take only an importance matrix (docs/methods.md) */
    bool ggml = !strcmp(method, "ggml_quantize") || !strcmp(method, "nvfp4_search");
    size_t i = 0;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)with, key, v)
    {
        *bad_index = i++;
        char got[96];
        if (!search && !(ggml && !strcmp(key, "imatrix"))) {
            if (ggml) snprintf(why, why_size, "unknown parameter '%s' of %s (expected imatrix)", key, method);
            else snprintf(why, why_size, "method %s takes no parameters, got '%s'", method, key);
            return false;
        }
        if (!strcmp(key, "imatrix")) {
            if (!json_is_string(v) || json_string_length(v) == 0) {
                describe_json(v, got, sizeof got);
                snprintf(why, why_size, "imatrix: expected a source name or a path, got %s", got);
                *bad_value = true;
                return false;
            }
        } else if (!strcmp(key, "negative_scales")) {
            if (!json_is_boolean(v)) {
                describe_json(v, got, sizeof got);
                snprintf(why, why_size, "negative_scales: expected true or false, got %s", got);
                *bad_value = true;
                return false;
            }
        } else {
            snprintf(why, why_size, "unknown parameter '%s' of grouped_search (expected imatrix, negative_scales)",
                     key);
            return false;
        }
    }
    return true;
}

/* ---------------------------------------------------------------- resolution */
typedef struct sorted_name {
    const char *name;
    size_t index;
} sorted_name;

typedef struct resolver {
    const nf_recipe *r;
    const nf_recipe_tensor *t;
    size_t n;
    nf_strset names;     /* tensor name -> index */
    sorted_name *sorted; /* the names in strcmp order, for literal prefixes */
    nf_recipe_resolve_limits lim;
    nf_recipe_resolve_work work;
    uint32_t *stamp; /* last rule (1-based) that collected each tensor */
    size_t *hits;    /* tensors collected by the current rule */
    size_t nhits;
    int *with_rule; /* rule whose `with` a tensor ended with, -1 none */
    nf_error *err;
    /* the unmatched-selector message, built entry by entry */
    char msg[NF_ERROR_MESSAGE_MAX];
    size_t msg_len, unmatched, left_out;
} resolver;

static const char *label(const nf_recipe *r) { return r->path ? r->path : "<recipe>"; }

static void collect(resolver *rs, size_t idx, uint32_t rule_stamp)
{
    if (rs->stamp[idx] == rule_stamp) return;
    rs->stamp[idx] = rule_stamp;
    rs->hits[rs->nhits++] = idx;
}

static void note_unmatched(resolver *rs, const nf_recipe_rule *rule, size_t ri, const char *selector)
{
    char entry[400];
    int k = rule->label
                ? snprintf(entry, sizeof entry, "%s%s: selector '%s' matches no tensor", rs->unmatched ? "; " : "",
                           rule->label, selector)
                : snprintf(entry, sizeof entry, "%s%s:%d:%d: selector '%s' (rules[%zu]) matches no tensor",
                           rs->unmatched ? "; " : "", label(rs->r), rule->pos.line, rule->pos.col, selector, ri);
    rs->unmatched++;
    size_t len = k < 0 ? 0 : (size_t)k >= sizeof entry ? sizeof entry - 1 : (size_t)k;
    /* keep room for the "; and N more" tail */
    if (rs->left_out == 0 && rs->msg_len + len + 40 < sizeof rs->msg) {
        memcpy(rs->msg + rs->msg_len, entry, len + 1);
        rs->msg_len += len;
    } else {
        rs->left_out++;
    }
}

/* [*lo, *hi): the positions in rs->sorted of the names that start with prefix[0, plen).  Names
 * sorted by strcmp are sorted by their first plen bytes too, so both ends are binary searches. */
static void prefix_range(const resolver *rs, const char *prefix, size_t plen, size_t *lo, size_t *hi)
{
    size_t a = 0, b = rs->n;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (strncmp(rs->sorted[m].name, prefix, plen) < 0) a = m + 1;
        else b = m;
    }
    *lo = a;
    b = rs->n;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (strncmp(rs->sorted[m].name, prefix, plen) <= 0) a = m + 1;
        else b = m;
    }
    *hi = a;
}

/* The names a pattern selector is tried on; false for a selector that is not a pattern (no glob
 * metacharacter: only an identical name, which the exact lookup decides). */
static bool candidates(const resolver *rs, const char *selector, size_t *lo, size_t *hi)
{
    if (nf_recipe_is_regex(selector)) {
        char prefix[RECIPE_RE_PREFIX_MAX];
        size_t plen = nf_recipe_regex_prefix(selector + strlen(RECIPE_RE_PREFIX), prefix, sizeof prefix);
        prefix_range(rs, prefix, plen, lo, hi);
        return true;
    }
    if (!nf_recipe_glob_has_meta(selector)) return false;
    prefix_range(rs, selector, nf_recipe_glob_prefix_len(selector), lo, hi);
    return true;
}

static nf_status too_many_steps(resolver *rs, const nf_recipe_rule *rule, size_t ri)
{
    return nf_error_set(rs->err, NF_ERR_INVALID,
                        "%s:%d:%d: rules[%zu].match: matching the selectors takes more than %llu steps against %zu "
                        "tensors (the cap that keeps resolution to seconds; exact names cost one lookup, and a "
                        "pattern is only tried on the names that start with its literal prefix: docs/recipes.md)",
                        label(rs->r), rule->pos.line, rule->pos.col, ri, (unsigned long long)rs->lim.max_steps, rs->n);
}

/* Tensors named by one selector, added to the rule's hit list; *any tells whether it named at
 * least one tensor (when predicates do not count: they narrow, they do not name). */
static nf_status select_tensors(resolver *rs, const nf_recipe_rule *rule, size_t ri, const char *selector,
                                uint32_t rule_stamp, bool *any)
{
    *any = false;
    size_t idx = 0, lo = 0, hi = 0;
    rs->work.steps++;
    if (nf_strset_find(&rs->names, selector, NULL, &idx)) {
        collect(rs, idx, rule_stamp);
        *any = true;
        return NF_OK;
    }
    if (!candidates(rs, selector, &lo, &hi)) return NF_OK;
    recipe_regex *re = NULL;
    if (nf_recipe_is_regex(selector)) {
        const char *pattern = selector + strlen(RECIPE_RE_PREFIX);
        const char *why = nf_recipe_regex_compile(pattern, &re);
        if (why)
            return nf_error_set(rs->err, NF_ERR_INVALID, "%s:%d:%d: rules[%zu].match: regular expression '%s' %s",
                                label(rs->r), rule->pos.line, rule->pos.col, ri, pattern, why);
        rs->work.steps += nf_recipe_regex_states(re);
    }
    nf_status st = NF_OK;
    for (size_t k = lo; k < hi; k++) {
        size_t i = rs->sorted[k].index;
        bool hit = re ? nf_recipe_regex_match(re, rs->t[i].name, &rs->work.steps)
                      : nf_recipe_glob_match(selector, rs->t[i].name, &rs->work.steps);
        if (hit) {
            collect(rs, i, rule_stamp);
            *any = true;
        }
        if (rs->work.steps > rs->lim.max_steps) {
            st = too_many_steps(rs, rule, ri);
            break;
        }
    }
    nf_recipe_regex_free(re);
    return st;
}

/* Every pattern's candidate names counted before any is tried: a recipe whose patterns would be
 * tried on more names than the cap is refused at once, naming the rule where the count crosses
 * it. */
static nf_status count_pairs(resolver *rs)
{
    const nf_recipe *r = rs->r;
    for (size_t ri = 0; ri < r->nrules; ri++) {
        const nf_recipe_rule *rule = &r->rules[ri];
        for (size_t k = 0; k < rule->nmatch; k++) {
            size_t lo = 0, hi = 0;
            if (nf_strset_find(&rs->names, rule->match[k], NULL, NULL) || !candidates(rs, rule->match[k], &lo, &hi))
                continue;
            rs->work.pairs += hi - lo;
            if (rs->work.pairs > rs->lim.max_pairs)
                return nf_error_set(rs->err, NF_ERR_INVALID,
                                    "%s:%d:%d: rules[%zu].match: the rules' patterns would be tried on more than %llu "
                                    "tensor names (%zu tensors; the cap that keeps resolution to seconds: exact names "
                                    "cost one lookup, and a pattern is only tried on the names that start with its "
                                    "literal prefix, docs/recipes.md)",
                                    label(r), rule->pos.line, rule->pos.col, ri, (unsigned long long)rs->lim.max_pairs,
                                    rs->n);
        }
    }
    return NF_OK;
}

static bool when_holds(const nf_recipe_rule *rule, const nf_recipe_tensor *t)
{
    if (rule->when_rank >= 0 && t->rank != (uint32_t)rule->when_rank) return false;
    if (rule->when_dtype && (!t->dtype || strcmp(t->dtype, rule->when_dtype) != 0)) return false;
    if (rule->when_min_elements && t->elements < rule->when_min_elements) return false;
    if (rule->when_quantized >= 0 && t->quantized != (rule->when_quantized == 1)) return false;
    return true;
}

static void apply(resolver *rs, const nf_recipe_rule *rule, size_t ri, size_t idx, nf_recipe_choice *c)
{
    if (rule->format) {
        c->format = rule->format;
        c->format_rule = (int)ri;
    }
    if (rule->layout) {
        c->layout = strcmp(rule->layout, "auto") != 0 ? rule->layout : NULL;
        c->layout_rule = (int)ri;
    }
    if (rule->method) {
        c->method = rule->method;
        c->method_rule = (int)ri;
    }
    if (rule->with) {
        c->with = rule->with;
        c->with_rule = (int)ri;
        rs->with_rule[idx] = (int)ri;
    }
    if (rule->skip >= 0) c->skip = rule->skip != 0;
    c->rule = (int)ri;
}

static int cmp_sorted(const void *a, const void *b)
{
    return strcmp(((const sorted_name *)a)->name, ((const sorted_name *)b)->name);
}

static nf_status run(resolver *rs, nf_recipe_choice *choices)
{
    const nf_recipe *r = rs->r;
    const char *default_format = r->default_format ? r->default_format : "bf16";
    for (size_t i = 0; i < rs->n; i++) {
        if (!rs->t[i].name) return nf_error_set(rs->err, NF_ERR_USAGE, "nf_recipe_resolve: tensor %zu has no name", i);
        int rc = nf_strset_insert(&rs->names, rs->t[i].name, NULL, i, NULL);
        if (rc < 0) return nf_common_nomem(rs->err);
        if (rc == 0)
            return nf_error_set(rs->err, NF_ERR_INVALID, "the checkpoint holds two tensors named '%s'", rs->t[i].name);
        choices[i] = (nf_recipe_choice){.format = default_format,
                                        .rule = -1,
                                        .format_rule = -1,
                                        .layout_rule = -1,
                                        .method_rule = -1,
                                        .with_rule = -1};
        rs->with_rule[i] = -1;
    }
    for (size_t i = 0; i < rs->n; i++) rs->sorted[i] = (sorted_name){rs->t[i].name, i};
    if (rs->n > 1) qsort(rs->sorted, rs->n, sizeof *rs->sorted, cmp_sorted);
    NF_TRY(count_pairs(rs));
    for (size_t ri = 0; ri < r->nrules; ri++) {
        const nf_recipe_rule *rule = &r->rules[ri];
        uint32_t rule_stamp = (uint32_t)(ri + 1);
        rs->nhits = 0;
        for (size_t s = 0; s < rule->nmatch; s++) {
            bool any = false;
            NF_TRY(select_tensors(rs, rule, ri, rule->match[s], rule_stamp, &any));
            if (!any && !rule->optional) note_unmatched(rs, rule, ri, rule->match[s]);
        }
        rs->work.steps += rs->nhits;
        if (rs->work.steps > rs->lim.max_steps) return too_many_steps(rs, rule, ri);
        for (size_t h = 0; h < rs->nhits; h++) {
            size_t idx = rs->hits[h];
            if (when_holds(rule, &rs->t[idx])) apply(rs, rule, ri, idx, &choices[idx]);
        }
    }
    if (rs->unmatched) {
        if (rs->left_out)
            snprintf(rs->msg + rs->msg_len, sizeof rs->msg - rs->msg_len, "; and %zu more unmatched selectors",
                     rs->left_out);
        return nf_error_set(rs->err, NF_ERR_INVALID, "%s", rs->msg);
    }
    for (size_t i = 0; i < rs->n; i++) {
        nf_recipe_choice *c = &choices[i];
        /* a tensor left to the budget gets its method from it too, unless the rule that left it
         * or a later one names a method (which narrows the candidates to it, docs/recipes.md
         * "Budgets") */
        if (!strcmp(c->format, NF_RECIPE_BUDGET) && c->method_rule < c->format_rule) {
            c->method = NF_RECIPE_BUDGET;
            c->method_rule = -1;
        }
        if (!c->method) c->method = r->default_method ? r->default_method : nf_recipe_default_method(c->format);
        if (!c->method)
            return nf_error_set(rs->err, NF_ERR_INVALID, "%s: tensor '%s': unknown format '%s' has no method", label(r),
                                rs->t[i].name, c->format);
        int wr = rs->with_rule[i];
        if (wr < 0) continue;
        char why[256];
        size_t bad = 0;
        bool bad_value = false;
        if (!nf_recipe_check_with(c->method, c->with, why, sizeof why, &bad, &bad_value)) {
            const nf_recipe_rule *rule = &r->rules[wr];
            return nf_error_set(rs->err, NF_ERR_INVALID, "%s:%d:%d: rules[%d].with: %s (tensor '%s' uses method %s)",
                                label(r), rule->pos.line, rule->pos.col, wr, why, rs->t[i].name, c->method);
        }
    }
    return NF_OK;
}

nf_status nf_recipe_resolve_ex(const nf_recipe *r, const nf_recipe_tensor *tensors, size_t n, nf_recipe_choice *choices,
                               const nf_recipe_resolve_limits *limits, nf_recipe_resolve_work *work, nf_error *err)
{
    if (work) *work = (nf_recipe_resolve_work){0, 0};
    if (!r || (n && (!tensors || !choices)))
        return nf_error_set(err, NF_ERR_USAGE, "nf_recipe_resolve: missing argument");
    if (r->nrules >= UINT32_MAX) return nf_error_set(err, NF_ERR_USAGE, "nf_recipe_resolve: too many rules");
    resolver rs = {.r = r, .t = tensors, .n = n, .err = err};
    rs.lim = (nf_recipe_resolve_limits){NF_RECIPE_MAX_MATCH_PAIRS, NF_RECIPE_MAX_MATCH_STEPS};
    if (limits && limits->max_pairs) rs.lim.max_pairs = limits->max_pairs;
    if (limits && limits->max_steps) rs.lim.max_steps = limits->max_steps;
    size_t cells = n ? n : 1;
    rs.stamp = calloc(cells, sizeof *rs.stamp);
    rs.hits = malloc(cells * sizeof *rs.hits);
    rs.with_rule = malloc(cells * sizeof *rs.with_rule);
    rs.sorted = malloc(cells * sizeof *rs.sorted);
    nf_status st = rs.stamp && rs.hits && rs.with_rule && rs.sorted ? run(&rs, choices) : nf_common_nomem(err);
    if (work) *work = rs.work;
    nf_strset_free(&rs.names);
    free(rs.stamp);
    free(rs.hits);
    free(rs.with_rule);
    free(rs.sorted);
    return st;
}

nf_status nf_recipe_resolve(const nf_recipe *r, const nf_recipe_tensor *tensors, size_t n, nf_recipe_choice *choices,
                            nf_error *err)
{
    return nf_recipe_resolve_ex(r, tensors, n, choices, NULL, NULL, err);
}
