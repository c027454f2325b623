/* What resolving a recipe may cost (docs/security.md 7.1, F9: a 209 KB recipe took 17 s against a 2 MB
 * checkpoint in --dry-run, 150,000 selectors x 20,000 tensors 41 s).  No timing: the resolver
 * reports its work (nf_recipe_resolve_ex), and the tests check that a big recipe of patterns with
 * literal prefixes costs a few candidate names per selector, and that recipes beyond the caps
 * are refused with a message naming the cap and the rule where it was crossed -- the pair cap
 * before any name is tried. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

/* 100 layers x 67 experts x 3 projections = 20,100 tensors, named like a MoE checkpoint. */
#define LAYERS 100
#define EXPERTS 67
#define NT (LAYERS * EXPERTS * 3)

static char names[NT][64];
static nf_recipe_tensor tensors[NT];
static nf_recipe_choice choices[NT];
static const uint64_t shape[2] = {8, 8};

static void make_tensors(void)
{
    static const char *const proj[3] = {"gate_proj", "up_proj", "down_proj"};
    size_t k = 0;
    for (int l = 0; l < LAYERS; l++)
        for (int e = 0; e < EXPERTS; e++)
            for (int p = 0; p < 3; p++, k++) {
                snprintf(names[k], sizeof names[k], "model.layers.%d.mlp.experts.%d.%s.weight", l, e, proj[p]);
                tensors[k] = (nf_recipe_tensor){names[k], "BF16", 2, shape, 64};
            }
}

/* A recipe of `rules` rules, each matching `per_rule` selectors made by sel(rule, i, buf). */
typedef void (*selector_fn)(size_t rule, size_t i, char *buf, size_t size);

static char *make_recipe(size_t rules, size_t per_rule, selector_fn sel, size_t *len)
{
    size_t cap = 64 + rules * (48 + per_rule * 72), used = 0;
    char *t = malloc(cap);
    cr_assert_not_null(t);
    used += (size_t)snprintf(t + used, cap - used, "recipe: 1\nrules:\n");
    for (size_t r = 0; r < rules; r++) {
        used += (size_t)snprintf(t + used, cap - used, "  - format: q8_g32_fp16\n    match:\n");
        for (size_t i = 0; i < per_rule; i++) {
            char buf[128];
            sel(r, i, buf, sizeof buf);
            used += (size_t)snprintf(t + used, cap - used, "      - \"%s\"\n", buf);
        }
    }
    *len = used;
    return t;
}

static nf_recipe *parse(const char *text, size_t len)
{
    nf_recipe *r = NULL;
    nf_error err;
    cr_assert_eq(nf_recipe_parse(text, len, "big.yaml", NULL, &r, &err), NF_OK, "%s", err.message);
    return r;
}

/* 150,000 selectors with a literal prefix naming one expert each ("...experts.E.*"): 3 candidate
 * names per selector instead of 20,100. */
static void expert_glob(size_t rule, size_t i, char *buf, size_t size)
{
    size_t k = (rule * 100 + i) % (LAYERS * EXPERTS);
    snprintf(buf, size, "model.layers.%zu.mlp.experts.%zu.*", k / EXPERTS, k % EXPERTS);
}

Test(recipe_resolve_cost, big_recipe_of_prefixed_globs_tries_few_names)
{
    make_tensors();
    size_t len = 0;
    char *text = make_recipe(1500, 100, expert_glob, &len);
    nf_recipe *r = parse(text, len);
    free(text);
    nf_recipe_resolve_work work;
    nf_error err;
    cr_assert_eq(nf_recipe_resolve_ex(r, tensors, NT, choices, NULL, &work, &err), NF_OK, "%s", err.message);
    for (size_t i = 0; i < NT; i++) cr_assert_str_eq(choices[i].format, "q8_g32_fp16");
    /* a naive resolution tries 150,000 x 20,100 = 3.0e9 pairs */
    cr_assert_eq(work.pairs, 150000u * 3u, "pairs: %llu", (unsigned long long)work.pairs);
    cr_assert_lt(work.steps, 150000u * 3u * 64u, "steps: %llu", (unsigned long long)work.steps);
    nf_recipe_free(r);
}

/* Patterns without a literal prefix are tried on every name: 7,000 of them against 20,100
 * tensors exceed the pair cap, refused before any name is tried. */
static void unprefixed_glob(size_t rule, size_t i, char *buf, size_t size)
{
    snprintf(buf, size, "*.experts.%zu.*", (rule * 100 + i) % EXPERTS);
}

Test(recipe_resolve_cost, unprefixed_patterns_beyond_the_pair_cap_refused)
{
    make_tensors();
    size_t len = 0;
    char *text = make_recipe(70, 100, unprefixed_glob, &len);
    nf_recipe *r = parse(text, len);
    free(text);
    nf_recipe_resolve_work work;
    nf_error err;
    cr_assert_eq(nf_recipe_resolve_ex(r, tensors, NT, choices, NULL, &work, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "more than 134217728 tensor names"), "%s", err.message);
    /* 134217728 / 20100 = 6677.5: the 6678th selector, the 78th of rules[66] (a rule is 102 lines) */
    cr_assert(strstr(err.message, "big.yaml:"), "%s", err.message);
    cr_assert(strstr(err.message, "rules[66].match"), "%s", err.message);
    cr_assert_eq(work.steps, 0, "no name was tried: %llu steps", (unsigned long long)work.steps);
    /* the same through the plain entry point */
    cr_assert_eq(nf_recipe_resolve(r, tensors, NT, choices, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "more than 134217728 tensor names"), "%s", err.message);
    nf_recipe_free(r);
}

/* The step cap names the rule whose matching crosses it. */
Test(recipe_resolve_cost, step_cap_names_the_rule)
{
    make_tensors();
    const char *text = "recipe: 1\nrules:\n  - match: \"model.layers.1.*\"\n    format: fp32\n"
                       "  - match: \"re:model\\\\.layers\\\\.[0-9]+\\\\.mlp\\\\..*\\\\.down_proj\\\\.weight\"\n"
                       "    format: q8_g32_fp16\n";
    nf_recipe *r = parse(text, strlen(text));
    nf_recipe_resolve_work work;
    nf_error err;
    cr_assert_eq(nf_recipe_resolve_ex(r, tensors, NT, choices, NULL, &work, &err), NF_OK, "%s", err.message);
    uint64_t needed = work.steps;
    cr_assert_gt(needed, 1000);
    nf_recipe_resolve_limits lim = {0, needed - 1};
    cr_assert_eq(nf_recipe_resolve_ex(r, tensors, NT, choices, &lim, &work, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "big.yaml:5:5: rules[1].match"), "%s", err.message);
    char want[64];
    snprintf(want, sizeof want, "more than %llu steps", (unsigned long long)(needed - 1));
    cr_assert(strstr(err.message, want), "%s", err.message);
    lim.max_steps = needed;
    cr_assert_eq(nf_recipe_resolve_ex(r, tensors, NT, choices, &lim, &work, &err), NF_OK, "%s", err.message);
    nf_recipe_free(r);
}

/* The parser bounds what the resolver will be given: at most 4096 "re:" selectors (each is
 * compiled by the matcher at parse and by the resolver), selectors of at most 4096 bytes (a tensor
 * name has at most 1024), and only the regular-expression features the resolver's matcher has. */
static void expect_parse_error(const char *text, size_t len, const char *needle)
{
    nf_recipe *r = NULL;
    nf_error err;
    nf_status st = nf_recipe_parse(text, len, "big.yaml", NULL, &r, &err);
    cr_assert_eq(st, NF_ERR_INVALID, "%s", st == NF_OK ? "parsed" : err.message);
    cr_assert(strstr(err.message, needle), "'%s' lacks '%s'", err.message, needle);
    cr_assert_null(r);
}

static void regex_selector(size_t rule, size_t i, char *buf, size_t size)
{
    snprintf(buf, size, "re:model\\\\.layers\\\\.%zu\\\\..*", rule * 100 + i);
}

Test(recipe_resolve_cost, parser_caps_regex_selectors_and_lengths)
{
    size_t len = 0;
    char *text = make_recipe(41, 100, regex_selector, &len);
    /* the 4097th: rules[40], its 97th selector, on line 3 + 40 * 102 + 2 + 96 */
    expect_parse_error(text, len, "big.yaml:4181:9: rules[40].match[96]: more than 4096 regular expression selectors");
    free(text);
    text = make_recipe(40, 100, regex_selector, &len);
    nf_recipe *r = parse(text, len);
    nf_recipe_free(r);
    free(text);

    char long_sel[5000] = "recipe: 1\nrules:\n  - match: \"";
    size_t at = strlen(long_sel);
    for (int i = 0; i < 4097; i++) long_sel[at++] = i % 2 ? '*' : 'a';
    memcpy(long_sel + at, "\"\n    format: bf16\n", 20);
    expect_parse_error(long_sel, strlen(long_sel), "big.yaml:3:12: rules[0].match: selector of 4097 bytes");

    const char *w = "recipe: 1\nrules:\n  - match: \"re:\\\\w+\\\\.weight\"\n    format: bf16\n";
    expect_parse_error(w, strlen(w),
                       "big.yaml:3:12: rules[0].match: regular expression '\\w+\\.weight' uses a "
                       "backslash before a letter");
    const char *a = "recipe: 1\nrules:\n  - match: \"re:(a|$b){0,2}\"\n    format: bf16\n";
    expect_parse_error(a, strlen(a), "'$' other than at its end");
}
