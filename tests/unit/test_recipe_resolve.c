/* Rule resolution (docs/recipes.md, "Schema" and "How rules apply"): defaults, rules in order field by
 * field, exact names over globs, fnmatch and full-match "re:" selectors, when predicates, skip,
 * natural methods, unmatched selectors, method parameters checked against the final method. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

static nf_recipe *parse_ok(const char *text)
{
    nf_error e = {0};
    nf_recipe *r = NULL;
    nf_status st = nf_recipe_parse(text, strlen(text), "recipe.yaml", NULL, &r, &e);
    cr_assert_eq(st, NF_OK, "parse failed: %s", e.message);
    return r;
}

static const uint64_t shape2[] = {4, 70};
static const uint64_t shape1[] = {7};

#define T2(name, dtype, n, k)                       \
    {                                               \
        name, dtype, 2, shape2, (uint64_t)(n) * (k) \
    }
#define T1(name, dtype, n)        \
    {                             \
        name, dtype, 1, shape1, n \
    }

static void resolve_ok(const nf_recipe *r, const nf_recipe_tensor *t, size_t n, nf_recipe_choice *c)
{
    nf_error e = {0};
    nf_status st = nf_recipe_resolve(r, t, n, c, &e);
    cr_assert_eq(st, NF_OK, "resolve failed: %s", e.message);
    for (size_t i = 0; i < n; i++) cr_assert_not_null(c[i].method, "tensor %zu without a method", i);
}

static void expect_choice(const nf_recipe_choice *c, const char *format, const char *method, int rule)
{
    cr_assert_str_eq(c->format, format);
    cr_assert_str_eq(c->method, method);
    cr_assert_eq(c->rule, rule);
}

/* cases/convert.py _rules_setup, as its emitter writes it. */
Test(recipe_resolve, conformance_rule_semantics)
{
    nf_recipe *r = parse_ok("recipe: 1\n"
                            "sources:\n"
                            "  base: \"/abs/ckpt\"\n"
                            "defaults:\n"
                            "  format: \"bf16\"\n"
                            "rules:\n"
                            "  - match: \"*.weight\"\n"
                            "    when:\n"
                            "      rank: 2\n"
                            "    format: \"q8_g32_fp16\"\n"
                            "    method: \"grouped_absmax\"\n"
                            "  - match: \"x.weight\"\n"
                            "    format: \"q4_g64_fp16\"\n"
                            "  - match: \"*\"\n"
                            "    when:\n"
                            "      rank: 1\n"
                            "    format: \"fp32\"\n"
                            "  - match: \"model.norm.weight\"\n"
                            "    format: \"bf16\"\n"
                            "  - match: \"re:^model\\\\.layers\\\\.[0-9]+\\\\.mlp\\\\.w$\"\n"
                            "    format: \"q5_g64_fp16\"\n"
                            "    method: \"grouped_absmax\"\n");
    nf_recipe_tensor t[] = {T2("x.weight", "F32", 4, 70), T2("y.weight", "F32", 3, 40), T1("z.bias", "F32", 5),
                            T2("model.layers.1.mlp.w", "F32", 2, 33), T1("model.norm.weight", "F32", 7)};
    nf_recipe_choice c[5];
    resolve_ok(r, t, 5, c);
    /* x.weight: q4 from rule 1, grouped_absmax kept from rule 0 */
    expect_choice(&c[0], "q4_g64_fp16", "grouped_absmax", 1);
    expect_choice(&c[1], "q8_g32_fp16", "grouped_absmax", 0);
    expect_choice(&c[2], "fp32", "cast_direct", 2);
    expect_choice(&c[3], "q5_g64_fp16", "grouped_absmax", 4);
    /* rank-1 fp32 from rule 2, then bf16 by exact name in rule 3 */
    expect_choice(&c[4], "bf16", "cast_direct", 3);
    for (int i = 0; i < 5; i++) {
        cr_assert_not(c[i].skip);
        cr_assert_null(c[i].layout);
        cr_assert_null(c[i].with);
    }
    nf_recipe_free(r);
}

/* cases/convert.py main_recipe: exact names, then globs and a list. */
Test(recipe_resolve, conformance_main_recipe)
{
    nf_recipe *r = parse_ok("recipe: 1\n"
                            "defaults:\n"
                            "  format: \"bf16\"\n"
                            "rules:\n"
                            "  - match: \"model.embed_tokens.weight\"\n"
                            "    format: \"fp8_e4m3fn_row_bf16\"\n"
                            "    method: \"fp8_row_maxabs\"\n"
                            "  - match: \"model.layers.0.mlp.up_proj.weight\"\n"
                            "    format: \"q4_g64_fp16\"\n"
                            "    method: \"grouped_search\"\n"
                            "    with:\n"
                            "      negative_scales: true\n"
                            "  - match: \"*.mlp.down_proj.*\"\n"
                            "    format: \"bf16\"\n"
                            "    method: \"cast_direct\"\n"
                            "  - match: [\"model.norm.weight\", \"lm_head.*\"]\n"
                            "    format: \"fp32\"\n"
                            "    method: \"cast_direct\"\n");
    nf_recipe_tensor t[] = {T2("model.embed_tokens.weight", "BF16", 32, 150),
                            T2("model.layers.0.mlp.up_proj.weight", "BF16", 8, 80),
                            T2("model.layers.0.mlp.down_proj.weight", "F32", 24, 300),
                            T1("model.layers.0.input_layernorm.weight", "F32", 50),
                            T1("model.norm.weight", "BF16", 50),
                            T1("lm_head.bias", "F32", 8)};
    nf_recipe_choice c[6];
    resolve_ok(r, t, 6, c);
    expect_choice(&c[0], "fp8_e4m3fn_row_bf16", "fp8_row_maxabs", 0);
    expect_choice(&c[1], "q4_g64_fp16", "grouped_search", 1);
    cr_assert(json_is_true(json_object_get(c[1].with, "negative_scales")));
    expect_choice(&c[2], "bf16", "cast_direct", 2);
    expect_choice(&c[3], "bf16", "cast_direct", -1); /* via defaults */
    expect_choice(&c[4], "fp32", "cast_direct", 3);
    expect_choice(&c[5], "fp32", "cast_direct", 3);
    nf_recipe_free(r);
}

Test(recipe_resolve, exact_name_beats_glob)
{
    nf_recipe *r = parse_ok(
        "recipe: 1\nrules:\n  - {match: \"a*\", format: fp32}\n  - {match: \"?b\", format: int32}\n");
    nf_recipe_tensor t[] = {T1("a*", "F32", 7), T1("ab", "F32", 7), T1("ac", "F32", 7), T1("b", "F32", 7)};
    nf_recipe_choice c[4];
    resolve_ok(r, t, 4, c);
    /* "a*" names the tensor literally called a*: the glob does not reach ab, ac */
    expect_choice(&c[0], "fp32", "cast_direct", 0);
    expect_choice(&c[1], "int32", "cast_direct", 1); /* no tensor is called "?b": a glob */
    expect_choice(&c[2], "bf16", "cast_direct", -1);
    expect_choice(&c[3], "bf16", "cast_direct", -1);
    nf_recipe_free(r);
}

Test(recipe_resolve, globs_cross_dots_and_are_case_sensitive)
{
    nf_recipe *r = parse_ok("recipe: 1\nrules:\n"
                            "  - {match: \"model.*.weight\", format: q8_g32_fp16}\n"
                            "  - {match: \"*.Weight\", format: fp32, optional: true}\n"
                            "  - {match: \"*proj?weight\", format: q6_g64_fp16}\n");
    nf_recipe_tensor t[] = {T2("model.layers.0.self_attn.q_proj.weight", "BF16", 4, 64),
                            T2("model.embed.weight", "BF16", 4, 64), T2("MODEL.x.weight", "BF16", 4, 64)};
    nf_recipe_choice c[3];
    resolve_ok(r, t, 3, c);
    expect_choice(&c[0], "q6_g64_fp16", "grouped_absmax", 2);
    expect_choice(&c[1], "q8_g32_fp16", "grouped_absmax", 0);
    expect_choice(&c[2], "bf16", "cast_direct", -1);
    nf_recipe_free(r);
}

Test(recipe_resolve, regex_must_match_the_whole_name)
{
    nf_recipe *r = parse_ok("recipe: 1\nrules:\n"
                            "  - {match: \"re:.*layers\\\\.[0-9]+\\\\..*\", format: q8_g32_fp16}\n"
                            "  - {match: \"re:layers\\\\.[0-9]+\", format: fp32, optional: true}\n"
                            "  - {match: \"re:a|ab\", format: q4_g64_fp16}\n");
    nf_recipe_tensor t[] = {T2("model.layers.12.w", "F32", 4, 64), T2("ab", "F32", 4, 64), T2("abc", "F32", 4, 64),
                            T2("layers.3", "F32", 4, 64)};
    nf_recipe_choice c[4];
    resolve_ok(r, t, 4, c);
    expect_choice(&c[0], "q8_g32_fp16", "grouped_absmax", 0); /* rule 1 is only a partial match */
    expect_choice(&c[1], "q4_g64_fp16", "grouped_absmax", 2); /* a|ab matches all of "ab" */
    expect_choice(&c[2], "bf16", "cast_direct", -1);
    expect_choice(&c[3], "fp32", "cast_direct", 1);
    nf_recipe_free(r);

    /* a partial match alone is no match at all */
    r = parse_ok("recipe: 1\nrules:\n  - {match: \"re:layers\", format: fp32}\n");
    nf_error e = {0};
    cr_assert_eq(nf_recipe_resolve(r, t, 4, c, &e), NF_ERR_INVALID);
    cr_assert_str_eq(e.message, "recipe.yaml:3:5: selector 're:layers' (rules[0]) matches no tensor");
    nf_recipe_free(r);
}

Test(recipe_resolve, when_predicates)
{
    nf_recipe *r = parse_ok("recipe: 1\nrules:\n"
                            "  - {match: \"*\", when: {rank: 2}, format: q8_g32_fp16}\n"
                            "  - {match: \"*\", when: {dtype: BF16}, method: grouped_search}\n"
                            "  - {match: \"*\", when: {min_elements: 1000}, format: q4_g64_fp16}\n"
                            "  - {match: \"*\", when: {rank: 1, dtype: F32, min_elements: 6}, format: fp32}\n"
                            "  - {match: \"*\", when: {rank: 0}, format: int32}\n");
    static const uint64_t big[] = {100, 100};
    nf_recipe_tensor t[] = {
        T2("small", "F32", 4, 70),       /* 280 elements */
        T2("small_bf16", "BF16", 4, 70), /* gets grouped_search */
        {"big", "F32", 2, big, 10000},   T1("vec", "F32", 7),
        T1("vec_short", "F32", 5),       T1("vec_bf16", "bf16", 7), /* dtype compares case-sensitively */
        {"scalar", "I32", 0, NULL, 1},
    };
    nf_recipe_choice c[7];
    resolve_ok(r, t, 7, c);
    expect_choice(&c[0], "q8_g32_fp16", "grouped_absmax", 0);
    expect_choice(&c[1], "q8_g32_fp16", "grouped_search", 1);
    expect_choice(&c[2], "q4_g64_fp16", "grouped_absmax", 2);
    expect_choice(&c[3], "fp32", "cast_direct", 3);
    expect_choice(&c[4], "bf16", "cast_direct", -1);
    expect_choice(&c[5], "bf16", "cast_direct", -1);
    expect_choice(&c[6], "int32", "cast_direct", 4);
    nf_recipe_free(r);
}

Test(recipe_resolve, when_does_not_make_a_selector_unmatched)
{
    /* the selector names the tensor; the predicate then leaves it out: not an error */
    nf_recipe *r = parse_ok("recipe: 1\nrules:\n  - {match: w, when: {rank: 3}, format: fp32}\n");
    nf_recipe_tensor t[] = {T2("w", "F32", 4, 70)};
    nf_recipe_choice c[1];
    resolve_ok(r, t, 1, c);
    expect_choice(&c[0], "bf16", "cast_direct", -1);
    nf_recipe_free(r);
}

Test(recipe_resolve, skip_and_later_unskip)
{
    nf_recipe *r = parse_ok("recipe: 1\nrules:\n"
                            "  - {match: \"*.rotary_emb.*\", skip: true}\n"
                            "  - {match: \"keep.rotary_emb.inv_freq\", skip: false}\n"
                            "  - {match: \"*\", format: fp32}\n");
    nf_recipe_tensor t[] = {T1("a.rotary_emb.inv_freq", "F32", 7), T1("keep.rotary_emb.inv_freq", "F32", 7),
                            T1("w", "F32", 7)};
    nf_recipe_choice c[3];
    resolve_ok(r, t, 3, c);
    cr_assert(c[0].skip);
    cr_assert_not(c[1].skip);
    cr_assert_not(c[2].skip);
    /* skip is a field like the others: the later format rule keeps it */
    expect_choice(&c[0], "fp32", "cast_direct", 2);
    nf_recipe_free(r);
}

Test(recipe_resolve, defaults_and_natural_methods)
{
    nf_recipe *r = parse_ok("recipe: 1\ndefaults: {format: q8_g32_fp16}\nrules:\n"
                            "  - {match: a, format: q4_g64_fp16}\n"
                            "  - {match: a, format: fp32}\n"
                            "  - {match: b, format: fp8_e4m3fn_row_fp16}\n"
                            "  - {match: c, format: nvfp4}\n"
                            "  - {match: d, format: gguf_q6_k}\n"
                            "  - {match: e, format: q2_g64_fp16}\n");
    nf_recipe_tensor t[] = {T2("a", "F32", 4, 70),  T2("b", "F32", 4, 70), T2("c", "U8", 4, 70),
                            T2("d", "Q6_K", 4, 70), T2("e", "F32", 4, 70), T2("f", "F32", 4, 70)};
    nf_recipe_choice c[6];
    resolve_ok(r, t, 6, c);
    /* the natural method follows the final format */
    expect_choice(&c[0], "fp32", "cast_direct", 1);
    expect_choice(&c[1], "fp8_e4m3fn_row_fp16", "fp8_row_maxabs", 2);
    expect_choice(&c[2], "nvfp4", "import_encoded", 3);
    expect_choice(&c[3], "gguf_q6_k", "import_encoded", 4);
    expect_choice(&c[4], "q2_g64_fp16", "import_encoded", 5);
    expect_choice(&c[5], "q8_g32_fp16", "grouped_absmax", -1);
    nf_recipe_free(r);
}

Test(recipe_resolve, defaults_method_until_a_rule_sets_one)
{
    nf_recipe *r = parse_ok("recipe: 1\ndefaults: {format: q4_g64_fp16, method: grouped_search}\nrules:\n"
                            "  - {match: a, format: q6_g64_fp16}\n"
                            "  - {match: b, method: grouped_absmax}\n");
    nf_recipe_tensor t[] = {T2("a", "F32", 4, 70), T2("b", "F32", 4, 70), T2("c", "F32", 4, 70)};
    nf_recipe_choice c[3];
    resolve_ok(r, t, 3, c);
    expect_choice(&c[0], "q6_g64_fp16", "grouped_search", 0);
    expect_choice(&c[1], "q4_g64_fp16", "grouped_absmax", 1);
    expect_choice(&c[2], "q4_g64_fp16", "grouped_search", -1);
    nf_recipe_free(r);
}

Test(recipe_resolve, field_by_field_layout_and_with)
{
    nf_recipe *r = parse_ok(
        "recipe: 1\nrules:\n"
        "  - {match: \"*\", format: q4_g64_fp16, layout: row_interleaved_v1, method: grouped_search,"
        " with: {negative_scales: true}}\n"
        "  - {match: b, format: q5_g64_fp16}\n"
        "  - {match: c, layout: auto, with: {}}\n"
        "  - {match: d, with: {imatrix: imatrix}}\n");
    nf_recipe_tensor t[] = {T2("a", "F32", 4, 70), T2("b", "F32", 4, 70), T2("c", "F32", 4, 70), T2("d", "F32", 4, 70)};
    nf_recipe_choice c[4];
    resolve_ok(r, t, 4, c);
    expect_choice(&c[0], "q4_g64_fp16", "grouped_search", 0);
    cr_assert_str_eq(c[0].layout, "row_interleaved_v1");
    cr_assert_eq(c[0].with, r->rules[0].with);
    expect_choice(&c[1], "q5_g64_fp16", "grouped_search", 1);
    cr_assert_str_eq(c[1].layout, "row_interleaved_v1");
    cr_assert_eq(c[1].with, r->rules[0].with);
    cr_assert_null(c[2].layout); /* auto: the format's default */
    cr_assert_eq(json_object_size(c[2].with), 0);
    cr_assert_str_eq(json_string_value(json_object_get(c[3].with, "imatrix")), "imatrix");
    nf_recipe_free(r);
}

Test(recipe_resolve, with_checked_against_the_final_method)
{
    /* parameters set for grouped_search, then the method changes for one tensor */
    nf_recipe *r = parse_ok("recipe: 1\nrules:\n"
                            "  - {match: \"*\", format: q4_g64_fp16, method: grouped_search}\n"
                            "  - {match: \"*\", with: {negative_scales: true}}\n"
                            "  - {match: b, method: grouped_absmax}\n");
    nf_recipe_tensor t[] = {T2("a", "F32", 4, 70), T2("b", "F32", 4, 70)};
    nf_recipe_choice c[2];
    nf_error e = {0};
    cr_assert_eq(nf_recipe_resolve(r, t, 2, c, &e), NF_ERR_INVALID);
    cr_assert_str_eq(e.message, "recipe.yaml:4:5: rules[1].with: method grouped_absmax takes no parameters, got "
                                "'negative_scales' (tensor 'b' uses method grouped_absmax)");
    nf_recipe_free(r);

    /* with from a rule without a method, method from the defaults */
    r = parse_ok("recipe: 1\ndefaults: {format: q4_g64_fp16, method: grouped_search}\nrules:\n"
                 "  - {match: a, with: {negative_scales: 1}}\n");
    cr_assert_eq(nf_recipe_resolve(r, t, 2, c, &e), NF_ERR_INVALID);
    cr_assert_str_eq(e.message, "recipe.yaml:4:5: rules[0].with: negative_scales: expected true or false, got the "
                                "integer 1 (tensor 'a' uses method grouped_search)");
    nf_recipe_free(r);

    /* the natural method of the format takes no parameters */
    r = parse_ok("recipe: 1\nrules:\n  - {match: a, format: q8_g32_fp16, with: {imatrix: im}}\n");
    cr_assert_eq(nf_recipe_resolve(r, t, 2, c, &e), NF_ERR_INVALID);
    cr_assert(strstr(e.message, "method grouped_absmax takes no parameters, got 'imatrix'"), "%s", e.message);
    nf_recipe_free(r);

    /* unknown parameter caught at resolve time */
    r = parse_ok("recipe: 1\nrules:\n  - {match: a, with: {imatrix: im, iters: 3}}\n"
                 "  - {match: a, method: grouped_search, format: q4_g64_fp16}\n");
    cr_assert_eq(nf_recipe_resolve(r, t, 2, c, &e), NF_ERR_INVALID);
    cr_assert(strstr(e.message, "recipe.yaml:3:5: rules[0].with: unknown parameter 'iters' of grouped_search"), "%s",
              e.message);
    nf_recipe_free(r);
}

Test(recipe_resolve, unmatched_selectors_all_listed)
{
    nf_recipe *r = parse_ok("recipe: 1\nrules:\n"
                            "  - match: a\n"
                            "    format: fp32\n"
                            "  - match: [\"model.layers.99.*.weight\", b, missing]\n"
                            "    format: q8_g32_fp16\n"
                            "  - match: \"re:nothing.*\"\n"
                            "    format: fp32\n"
                            "  - match: maybe\n"
                            "    optional: true\n"
                            "  - match: [\"x.*\", perhaps]\n"
                            "    format: fp32\n"
                            "    optional: true\n");
    nf_recipe_tensor t[] = {T2("a", "F32", 4, 70), T2("b", "F32", 4, 70)};
    nf_recipe_choice c[2];
    nf_error e = {0};
    cr_assert_eq(nf_recipe_resolve(r, t, 2, c, &e), NF_ERR_INVALID);
    cr_assert_str_eq(e.message, "recipe.yaml:5:5: selector 'model.layers.99.*.weight' (rules[1]) matches no tensor; "
                                "recipe.yaml:5:5: selector 'missing' (rules[1]) matches no tensor; "
                                "recipe.yaml:7:5: selector 're:nothing.*' (rules[2]) matches no tensor");
    nf_recipe_free(r);
}

Test(recipe_resolve, many_unmatched_selectors_are_counted)
{
    char text[8192];
    size_t len = (size_t)snprintf(text, sizeof text, "recipe: 1\nrules:\n");
    for (int i = 0; i < 40; i++)
        len += (size_t)snprintf(text + len, sizeof text - len, "  - {match: \"none.%d.*\", format: fp32}\n", i);
    nf_recipe *r = parse_ok(text);
    nf_recipe_tensor t[] = {T2("a", "F32", 4, 70)};
    nf_recipe_choice c[1];
    nf_error e = {0};
    cr_assert_eq(nf_recipe_resolve(r, t, 1, c, &e), NF_ERR_INVALID);
    cr_assert(strstr(e.message, "recipe.yaml:3:5: selector 'none.0.*' (rules[0]) matches no tensor; "), "%s",
              e.message);
    cr_assert(strstr(e.message, " more unmatched selectors"), "%s", e.message);
    nf_recipe_free(r);
}

Test(recipe_resolve, no_tensors_and_no_rules)
{
    nf_recipe *r = parse_ok("recipe: 1\n");
    nf_error e = {0};
    cr_assert_eq(nf_recipe_resolve(r, NULL, 0, NULL, &e), NF_OK, "%s", e.message);
    nf_recipe_tensor t[] = {T1("n", "F32", 7)};
    nf_recipe_choice c[1];
    resolve_ok(r, t, 1, c);
    expect_choice(&c[0], "bf16", "cast_direct", -1);
    nf_recipe_free(r);
    r = parse_ok("recipe: 1\nrules: [{match: \"*\", format: fp32}]\n");
    cr_assert_eq(nf_recipe_resolve(r, NULL, 0, NULL, &e), NF_ERR_INVALID);
    cr_assert(strstr(e.message, "selector '*' (rules[0]) matches no tensor"), "%s", e.message);
    nf_recipe_free(r);
}

Test(recipe_resolve, bad_arguments_and_duplicate_tensors)
{
    nf_recipe *r = parse_ok("recipe: 1\n");
    nf_recipe_tensor t[] = {T1("n", "F32", 7), T1("n", "F32", 7)};
    nf_recipe_choice c[2];
    nf_error e = {0};
    cr_assert_eq(nf_recipe_resolve(NULL, t, 2, c, &e), NF_ERR_USAGE);
    cr_assert_eq(nf_recipe_resolve(r, t, 2, NULL, &e), NF_ERR_USAGE);
    cr_assert_eq(nf_recipe_resolve(r, t, 2, c, &e), NF_ERR_INVALID);
    cr_assert(strstr(e.message, "two tensors named 'n'"), "%s", e.message);
    nf_recipe_free(r);
}

/* A 100,000-tensor checkpoint with a realistic recipe (globs, a regex, a list of 2,000 exact
 * names): exact selectors are hash lookups, so this stays instant. */
Test(recipe_resolve, large_checkpoint)
{
    size_t layers = 10000, per = 10, n = layers * per;
    static const char *const kinds[] = {
        "self_attn.q_proj.weight",      "self_attn.k_proj.weight", "self_attn.v_proj.weight",
        "self_attn.o_proj.weight",      "mlp.gate_proj.weight",    "mlp.up_proj.weight",
        "mlp.down_proj.weight",         "input_layernorm.weight",  "post_attention_layernorm.weight",
        "self_attn.rotary_emb.inv_freq"};
    char(*names)[64] = malloc(n * sizeof *names);
    nf_recipe_tensor *t = malloc(n * sizeof *t);
    nf_recipe_choice *c = malloc(n * sizeof *c);
    for (size_t i = 0; i < n; i++) {
        size_t k = i % per;
        snprintf(names[i], sizeof names[i], "model.layers.%zu.%s", i / per, kinds[k]);
        bool vec = k >= 7;
        t[i] = (nf_recipe_tensor){names[i], vec ? "F32" : "BF16", vec ? 1u : 2u, vec ? shape1 : shape2,
                                  vec ? 7u : 280u};
    }
    size_t cap = 2000 * 48 + 1024;
    char *text = malloc(cap);
    size_t len = (size_t)snprintf(text, cap,
                                  "recipe: 1\nrules:\n"
                                  "  - {match: \"*.weight\", when: {rank: 2}, format: q4_g64_fp16}\n"
                                  "  - {match: [\"*norm*\", \"*.bias\"], format: fp32, optional: true}\n"
                                  "  - {match: \"re:.*\\\\.mlp\\\\.down_proj\\\\.weight\", format: q6_g64_fp16}\n"
                                  "  - {match: \"*.rotary_emb.*\", skip: true}\n"
                                  "  - format: q8_g32_fp16\n    match: [");
    for (size_t l = 0; l < 2000; l++)
        len += (size_t)snprintf(text + len, cap - len, "%s\"model.layers.%zu.self_attn.v_proj.weight\"", l ? ", " : "",
                                l * 5);
    len += (size_t)snprintf(text + len, cap - len, "]\n");
    nf_recipe *r = parse_ok(text);
    resolve_ok(r, t, n, c);
    for (size_t i = 0; i < n; i++) {
        size_t k = i % per, layer = i / per;
        const char *want = k == 6                                      ? "q6_g64_fp16"
                           : k == 2 && layer % 5 == 0 && layer < 10000 ? "q8_g32_fp16"
                           : k < 7                                     ? "q4_g64_fp16"
                           : k < 9                                     ? "fp32"
                                                                       : "bf16";
        cr_assert_str_eq(c[i].format, want, "tensor %s", names[i]);
        cr_assert_eq(c[i].skip, k == 9);
    }
    nf_recipe_free(r);
    free(text);
    free(names);
    free(t);
    free(c);
}
