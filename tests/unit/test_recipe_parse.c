/* Recipe parsing (docs/recipes.md): every construct of the design's example, the shapes the
 * conformance suite's emitter writes (double-quoted strings, flow lists, block mappings,
 * comments), the JSON copy kept for provenance, ${VAR} expansion and path resolution. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

/* The variables these tests expand; a recipe expands only what the command line allows
 * (--allow-env, nf_recipe_options). */
static const char *const test_env[] = {"NF_RECIPE_TEST_ROOT",  "NF_RECIPE_TEST_REL",    "NF_RECIPE_TEST_EMPTY",
                                       "NF_RECIPE_TEST_UNSET", "NF_RECIPE_TEST_EMPTY2", "HOME"};
static const nf_recipe_options test_opt = {test_env, sizeof test_env / sizeof test_env[0]};

static nf_recipe *parse_ok(const char *text)
{
    nf_error e = {0};
    nf_recipe *r = NULL;
    nf_status st = nf_recipe_parse_ex(text, strlen(text), "recipe.yaml", "/rdir", &test_opt, &r, &e);
    cr_assert_eq(st, NF_OK, "parse failed: %s", e.message);
    cr_assert_not_null(r);
    return r;
}

static void assert_json(const json_t *v, const char *expected)
{
    char *s = json_dumps(v, JSON_COMPACT);
    cr_assert_not_null(s);
    cr_assert_str_eq(s, expected);
    free(s);
}

/* The example of docs/recipes.md, verbatim (comments included). */
static const char design_example[] =
    "recipe: 1                       # schema version\n"
    "sources:\n"
    "  base: ./Qwen3-0.6B            # dir with *.safetensors (+ index) and config.json, a file, or .gguf\n"
    "  imatrix: ./imatrix.gguf       # optional; llama.cpp imatrix GGUF\n"
    "output:\n"
    "  name: qwen3-0.6b-q4           # metadata.name\n"
    "  max_file_bytes: 0\n"
    "components:                     # defaults to {text: {config: <base config.json or {}>}}\n"
    "  text:\n"
    "    config: {from: base}\n"
    "    resources: {tokenizer.json: base/tokenizer.json}\n"
    "defaults: {format: bf16}        # tensors no rule matches keep this format (cast_direct)\n"
    "rules:                          # applied in order; a later rule overrides only the fields it sets\n"
    "  - match: \"*.weight\"           # glob (fnmatch, case-sensitive), a list, or \"re:<regex>\"\n"
    "    when: {rank: 2}             # optional predicates: rank, dtype, min_elements\n"
    "    format: q4_g64_fp16\n"
    "    method: grouped_search\n"
    "    with: {imatrix: imatrix, negative_scales: false}\n"
    "  - match: [\"*norm*\", \"*.bias\"]\n"
    "    format: fp32\n"
    "  - match: lm_head.weight\n"
    "    format: q8_g32_fp16\n"
    "    method: grouped_absmax\n"
    "  - match: \"*.rotary_emb.*\"\n"
    "    skip: true\n"
    "groups:                         # optional: stack tensors into one parent object, bound by parts\n"
    "  - id: layers.0.attn.qkv\n"
    "    members: [model.layers.0.self_attn.q_proj.weight, model.layers.0.self_attn.k_proj.weight,\n"
    "              model.layers.0.self_attn.v_proj.weight]\n";

Test(recipe_parse, design_example_every_construct)
{
    nf_recipe *r = parse_ok(design_example);
    cr_assert_str_eq(r->path, "recipe.yaml");
    cr_assert_str_eq(r->dir, "/rdir");
    cr_assert_eq(r->version, 1);

    cr_assert_eq(r->nsources, 2);
    cr_assert_str_eq(r->sources[0].name, "base");
    cr_assert_str_eq(r->sources[0].path, "/rdir/Qwen3-0.6B");
    cr_assert_eq(r->sources[0].pos.line, 3);
    cr_assert_eq(r->sources[0].pos.col, 3);
    cr_assert_str_eq(r->sources[1].name, "imatrix");
    cr_assert_str_eq(r->sources[1].path, "/rdir/imatrix.gguf");
    cr_assert_eq(nf_recipe_find_source(r, "imatrix"), &r->sources[1]);
    cr_assert_null(nf_recipe_find_source(r, "nope"));

    cr_assert_str_eq(r->output_name, "qwen3-0.6b-q4");
    cr_assert_eq(r->max_file_bytes, 0);

    cr_assert_eq(r->ncomponents, 1);
    nf_recipe_component *c = &r->components[0];
    cr_assert_str_eq(c->name, "text");
    cr_assert_str_eq(c->config_from, "base");
    cr_assert_null(c->config);
    cr_assert_eq(c->nresources, 1);
    cr_assert_str_eq(c->resources[0].role, "tokenizer.json");
    cr_assert_str_eq(c->resources[0].source, "base");
    /* the source does not exist here, so it counts as a directory */
    cr_assert_str_eq(c->resources[0].path, "/rdir/Qwen3-0.6B/tokenizer.json");
    cr_assert_eq(c->resources[0].pos.line, 11);
    cr_assert_eq(c->resources[0].pos.col, 17);

    cr_assert_str_eq(r->default_format, "bf16");
    cr_assert_null(r->default_method);

    cr_assert_eq(r->nrules, 4);
    nf_recipe_rule *q = &r->rules[0];
    cr_assert_eq(q->nmatch, 1);
    cr_assert_str_eq(q->match[0], "*.weight");
    cr_assert_eq(q->when_rank, 2);
    cr_assert_null(q->when_dtype);
    cr_assert_eq(q->when_min_elements, 0);
    cr_assert_str_eq(q->format, "q4_g64_fp16");
    cr_assert_null(q->layout);
    cr_assert_str_eq(q->method, "grouped_search");
    assert_json(q->with, "{\"imatrix\":\"imatrix\",\"negative_scales\":false}");
    cr_assert_eq(q->skip, -1);
    cr_assert_eq(q->optional, false);
    cr_assert_eq(q->pos.line, 14);
    cr_assert_eq(q->pos.col, 5);

    nf_recipe_rule *n = &r->rules[1];
    cr_assert_eq(n->nmatch, 2);
    cr_assert_str_eq(n->match[0], "*norm*");
    cr_assert_str_eq(n->match[1], "*.bias");
    cr_assert_eq(n->when_rank, -1);
    cr_assert_str_eq(n->format, "fp32");
    cr_assert_null(n->method);
    cr_assert_null(n->with);

    cr_assert_str_eq(r->rules[2].match[0], "lm_head.weight");
    cr_assert_str_eq(r->rules[2].method, "grouped_absmax");
    cr_assert_eq(r->rules[3].skip, 1);
    cr_assert_null(r->rules[3].format);

    cr_assert_eq(r->ngroups, 1);
    cr_assert_str_eq(r->groups[0].id, "layers.0.attn.qkv");
    cr_assert_eq(r->groups[0].nmembers, 3);
    cr_assert_str_eq(r->groups[0].members[2], "model.layers.0.self_attn.v_proj.weight");
    cr_assert_eq(r->groups[0].pos.line, 27);
    nf_recipe_free(r);
}

Test(recipe_parse, design_example_json_copy)
{
    nf_recipe *r = parse_ok(design_example);
    /* as written (paths unexpanded), keys in document order, integers and booleans typed */
    assert_json(r->json,
                "{\"recipe\":1,\"sources\":{\"base\":\"./Qwen3-0.6B\",\"imatrix\":\"./imatrix.gguf\"},"
                "\"output\":{\"name\":\"qwen3-0.6b-q4\",\"max_file_bytes\":0},"
                "\"components\":{\"text\":{\"config\":{\"from\":\"base\"},"
                "\"resources\":{\"tokenizer.json\":\"base/tokenizer.json\"}}},"
                "\"defaults\":{\"format\":\"bf16\"},"
                "\"rules\":[{\"match\":\"*.weight\",\"when\":{\"rank\":2},\"format\":\"q4_g64_fp16\","
                "\"method\":\"grouped_search\",\"with\":{\"imatrix\":\"imatrix\",\"negative_scales\":false}},"
                "{\"match\":[\"*norm*\",\"*.bias\"],\"format\":\"fp32\"},"
                "{\"match\":\"lm_head.weight\",\"format\":\"q8_g32_fp16\",\"method\":\"grouped_absmax\"},"
                "{\"match\":\"*.rotary_emb.*\",\"skip\":true}],"
                "\"groups\":[{\"id\":\"layers.0.attn.qkv\",\"members\":[\"model.layers.0.self_attn.q_proj.weight\","
                "\"model.layers.0.self_attn.k_proj.weight\",\"model.layers.0.self_attn.v_proj.weight\"]}]}");
    nf_recipe_free(r);
}

/* What cases/recipe.py's emitter writes for cases/convert.py's _rules_setup. */
static const char conformance_rules[] = "# rules apply in order, field by field; when predicates; re: selectors\n"
                                        "recipe: 1\n"
                                        "sources:\n"
                                        "  base: \"/abs/ckpt\"\n"
                                        "output:\n"
                                        "  name: \"rules\"\n"
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
                                        "    method: \"grouped_absmax\"\n";

Test(recipe_parse, conformance_rules_shape)
{
    nf_recipe *r = parse_ok(conformance_rules);
    cr_assert_str_eq(r->sources[0].path, "/abs/ckpt");
    cr_assert_str_eq(r->output_name, "rules");
    cr_assert_eq(r->nrules, 5);
    cr_assert_eq(r->rules[0].when_rank, 2);
    cr_assert_eq(r->rules[2].when_rank, 1);
    /* the YAML escapes \\. become one backslash each */
    cr_assert_str_eq(r->rules[4].match[0], "re:^model\\.layers\\.[0-9]+\\.mlp\\.w$");
    cr_assert_eq(r->rules[4].pos.line, 23);
    cr_assert_eq(r->rules[4].pos.col, 5);
    nf_recipe_free(r);
}

static const char conformance_main[] = "# main\n"
                                       "recipe: 1\n"
                                       "sources:\n"
                                       "  base: \"/abs/ckpt\"\n"
                                       "output:\n"
                                       "  name: \"conformance-7\"\n"
                                       "  max_file_bytes: 0\n"
                                       "defaults:\n"
                                       "  format: \"bf16\"\n"
                                       "rules:\n"
                                       "  - match: \"model.layers.0.mlp.up_proj.weight\"\n"
                                       "    format: \"q4_g64_fp16\"\n"
                                       "    method: \"grouped_search\"\n"
                                       "    with:\n"
                                       "      negative_scales: true\n"
                                       "  - match: [\"model.norm.weight\", \"lm_head.*\"]\n"
                                       "    format: \"fp32\"\n"
                                       "    method: \"cast_direct\"\n";

Test(recipe_parse, conformance_main_shape)
{
    nf_recipe *r = parse_ok(conformance_main);
    cr_assert_eq(r->nrules, 2);
    assert_json(r->rules[0].with, "{\"negative_scales\":true}");
    cr_assert_eq(r->rules[1].nmatch, 2);
    cr_assert_str_eq(r->rules[1].match[1], "lm_head.*");
    cr_assert_str_eq(r->rules[1].method, "cast_direct");
    nf_recipe_free(r);
}

static const char conformance_resources[] = "# components with a resource file\n"
                                            "recipe: 1\n"
                                            "sources:\n"
                                            "  base: \"/abs/ckpt\"\n"
                                            "output:\n"
                                            "  name: \"resources\"\n"
                                            "components:\n"
                                            "  text:\n"
                                            "    config:\n"
                                            "      from: \"base\"\n"
                                            "    resources:\n"
                                            "      tokenizer.json: \"base/tokenizer.json\"\n"
                                            "defaults:\n"
                                            "  format: \"fp32\"\n"
                                            "rules: []\n";

Test(recipe_parse, conformance_resources_shape)
{
    nf_recipe *r = parse_ok(conformance_resources);
    cr_assert_eq(r->nrules, 0);
    cr_assert_str_eq(r->default_format, "fp32");
    cr_assert_eq(r->ncomponents, 1);
    cr_assert_str_eq(r->components[0].config_from, "base");
    cr_assert_str_eq(r->components[0].resources[0].source, "base");
    cr_assert_str_eq(r->components[0].resources[0].path, "/abs/ckpt/tokenizer.json");
    nf_recipe_free(r);
}

Test(recipe_parse, minimal_recipe_has_defaults)
{
    nf_recipe *r = parse_ok("recipe: 1\n");
    cr_assert_eq(r->version, 1);
    cr_assert_eq(r->nsources, 0);
    cr_assert_null(r->output_name);
    cr_assert_eq(r->max_file_bytes, 0);
    cr_assert_eq(r->ncomponents, 0);
    cr_assert_null(r->components);
    cr_assert_str_eq(r->default_format, "bf16");
    cr_assert_null(r->default_method);
    cr_assert_eq(r->nrules, 0);
    cr_assert_eq(r->ngroups, 0);
    assert_json(r->json, "{\"recipe\":1}");
    nf_recipe_free(r);
}

Test(recipe_parse, memory_name_and_current_directory)
{
    nf_error e = {0};
    nf_recipe *r = NULL;
    const char *t = "recipe: 1\nsources: {base: model, abs: /m/x.gguf, up: ../up}\n";
    cr_assert_eq(nf_recipe_parse(t, strlen(t), NULL, NULL, &r, &e), NF_OK, "%s", e.message);
    cr_assert_str_eq(r->path, "<memory>");
    cr_assert_str_eq(r->dir, ".");
    /* relative to the current directory: kept as written */
    cr_assert_str_eq(r->sources[0].path, "model");
    cr_assert_str_eq(r->sources[1].path, "/m/x.gguf");
    cr_assert_str_eq(r->sources[2].path, "../up");
    nf_recipe_free(r);
}

Test(recipe_parse, literal_config_and_scalar_types)
{
    nf_recipe *r = parse_ok("recipe: 1\n"
                            "components:\n"
                            "  text:\n"
                            "    config:\n"
                            "      architectures: [ConformanceForCausalLM]\n"
                            "      hidden_size: 64\n"
                            "      rope_theta: 1000000.0\n"
                            "      tie_word_embeddings: false\n"
                            "      quoted_int: \"64\"\n"
                            "      single: 'it''s'\n"
                            "      nothing: null\n"
                            "      tilde: ~\n"
                            "      neg: -3\n"
                            "      yes_is_a_string: yes\n"
                            "      \"name_\\u00fc\": \"\\u00fcn\\u00efc\\u00f6d\\u00e9\"\n"
                            "      nested: {a: [1, {b: true}]}\n"
                            "  vision:\n"
                            "    config: {}\n");
    cr_assert_eq(r->ncomponents, 2);
    cr_assert_null(r->components[0].config_from);
    assert_json(r->components[0].config,
                "{\"architectures\":[\"ConformanceForCausalLM\"],\"hidden_size\":64,\"rope_theta\":1000000.0,"
                "\"tie_word_embeddings\":false,\"quoted_int\":\"64\",\"single\":\"it's\",\"nothing\":null,"
                "\"tilde\":null,\"neg\":-3,\"yes_is_a_string\":\"yes\","
                "\"name_\xc3\xbc\":\"\xc3\xbcn\xc3\xaf"
                "c\xc3\xb6"
                "d\xc3\xa9\",\"nested\":{\"a\":[1,{\"b\":true}]}}");
    cr_assert_str_eq(r->components[1].name, "vision");
    assert_json(r->components[1].config, "{}");
    cr_assert_eq(r->components[1].nresources, 0);
    nf_recipe_free(r);
}

Test(recipe_parse, config_with_from_and_more_keys_is_literal)
{
    nf_recipe *r = parse_ok("recipe: 1\ncomponents: {text: {config: {from: x, model_type: y}}}\n");
    cr_assert_null(r->components[0].config_from);
    assert_json(r->components[0].config, "{\"from\":\"x\",\"model_type\":\"y\"}");
    nf_recipe_free(r);
}

Test(recipe_parse, rule_fields)
{
    nf_recipe *r = parse_ok("recipe: 1\n"
                            "defaults: {format: fp32, method: cast_direct}\n"
                            "rules:\n"
                            "  - match: a\n"
                            "    when: {dtype: BF16, min_elements: 4096, rank: 0}\n"
                            "    layout: row_split_k128_v1\n"
                            "    optional: true\n"
                            "    skip: false\n"
                            "  - {match: [b, \"re:c.*\"], layout: auto, with: {}}\n");
    cr_assert_str_eq(r->default_format, "fp32");
    cr_assert_str_eq(r->default_method, "cast_direct");
    nf_recipe_rule *a = &r->rules[0];
    cr_assert_str_eq(a->when_dtype, "BF16");
    cr_assert_eq(a->when_min_elements, 4096);
    cr_assert_eq(a->when_rank, 0);
    cr_assert_str_eq(a->layout, "row_split_k128_v1");
    cr_assert(a->optional);
    cr_assert_eq(a->skip, 0);
    nf_recipe_rule *b = &r->rules[1];
    cr_assert_eq(b->pos.line, 9);
    cr_assert_eq(b->pos.col, 5);
    cr_assert_str_eq(b->layout, "auto");
    assert_json(b->with, "{}");
    cr_assert_str_eq(b->match[1], "re:c.*");
    nf_recipe_free(r);
}

Test(recipe_parse, block_sequences_and_block_scalars)
{
    nf_recipe *r = parse_ok("recipe: 1\n"
                            "rules:\n"
                            "- match:\n"
                            "  - x.weight\n"
                            "  - 'y.*'\n"
                            "  format: >-\n"
                            "    q8_g32_fp16\n"
                            "groups:\n"
                            "- id: g\n"
                            "  members:\n"
                            "  - a\n"
                            "  - b\n");
    cr_assert_eq(r->rules[0].nmatch, 2);
    cr_assert_str_eq(r->rules[0].match[1], "y.*");
    cr_assert_str_eq(r->rules[0].format, "q8_g32_fp16");
    cr_assert_eq(r->groups[0].nmembers, 2);
    nf_recipe_free(r);
}

Test(recipe_parse, max_file_bytes_range)
{
    nf_recipe *r = parse_ok("recipe: 1\noutput: {max_file_bytes: 9223372036854775807}\n");
    cr_assert_eq(r->max_file_bytes, 9223372036854775807ull);
    nf_recipe_free(r);
    r = parse_ok("recipe: 1\noutput: {max_file_bytes: +4096}\n");
    cr_assert_eq(r->max_file_bytes, 4096);
    assert_json(r->json, "{\"recipe\":1,\"output\":{\"max_file_bytes\":4096}}");
    nf_recipe_free(r);
}

Test(recipe_parse, env_expansion_in_sources_and_resources)
{
    setenv("NF_RECIPE_TEST_ROOT", "/models", 1);
    setenv("NF_RECIPE_TEST_REL", "sub/dir", 1);
    setenv("NF_RECIPE_TEST_EMPTY", "", 1);
    nf_recipe *r = parse_ok("recipe: 1\n"
                            "sources:\n"
                            "  base: ${NF_RECIPE_TEST_ROOT}/qwen\n"
                            "  rel: \"${NF_RECIPE_TEST_REL}/m.gguf\"\n"
                            "  dollar: a$b${NF_RECIPE_TEST_EMPTY}\n"
                            "components:\n"
                            "  text:\n"
                            "    resources:\n"
                            "      tok: base/${NF_RECIPE_TEST_REL}/tokenizer.json\n"
                            "      abs: ${NF_RECIPE_TEST_ROOT}/vocab.txt\n"
                            "      plain: ./extra/merges.txt\n"
                            "      bare: chat_template.jinja\n");
    cr_assert_str_eq(r->sources[0].path, "/models/qwen");
    cr_assert_str_eq(r->sources[1].path, "/rdir/sub/dir/m.gguf");
    cr_assert_str_eq(r->sources[2].path, "/rdir/a$b");
    nf_recipe_resource *res = r->components[0].resources;
    cr_assert_eq(r->components[0].nresources, 4);
    cr_assert_str_eq(res[0].source, "base");
    cr_assert_str_eq(res[0].path, "/models/qwen/sub/dir/tokenizer.json");
    cr_assert_null(res[1].source);
    cr_assert_str_eq(res[1].path, "/models/vocab.txt");
    cr_assert_null(res[2].source);
    cr_assert_str_eq(res[2].path, "/rdir/extra/merges.txt");
    cr_assert_null(res[3].source);
    cr_assert_str_eq(res[3].path, "/rdir/chat_template.jinja");
    /* provenance keeps what was written */
    json_t *src = json_object_get(r->json, "sources");
    cr_assert_str_eq(json_string_value(json_object_get(src, "base")), "${NF_RECIPE_TEST_ROOT}/qwen");
    nf_recipe_free(r);
}

Test(recipe_parse, set_source_replaces_and_adds)
{
    nf_recipe *r = parse_ok("recipe: 1\n"
                            "sources: {base: ./ckpt}\n"
                            "components: {text: {resources: {tokenizer.json: base/tok/tokenizer.json, x: ./x}}}\n");
    nf_error e = {0};
    cr_assert_eq(nf_recipe_set_source(r, "base", "/elsewhere/model", &e), NF_OK, "%s", e.message);
    cr_assert_eq(r->nsources, 1);
    cr_assert_str_eq(nf_recipe_find_source(r, "base")->path, "/elsewhere/model");
    /* SOURCE/file resources follow the source; plain paths stay */
    cr_assert_str_eq(r->components[0].resources[0].path, "/elsewhere/model/tok/tokenizer.json");
    cr_assert_str_eq(r->components[0].resources[1].path, "/rdir/x");
    cr_assert_eq(nf_recipe_set_source(r, "imatrix", "rel/imatrix.gguf", &e), NF_OK, "%s", e.message);
    cr_assert_eq(r->nsources, 2);
    cr_assert_str_eq(nf_recipe_find_source(r, "imatrix")->path, "rel/imatrix.gguf");
    cr_assert_eq(nf_recipe_find_source(r, "imatrix")->pos.line, 0);
    cr_assert_eq(nf_recipe_set_source(r, "", "x", &e), NF_ERR_USAGE);
    cr_assert_eq(nf_recipe_set_source(r, "a/b", "x", &e), NF_ERR_USAGE);
    cr_assert_eq(nf_recipe_set_source(r, "a", "", &e), NF_ERR_USAGE);
    nf_recipe_free(r);
}

Test(recipe_parse, large_mappings_stay_linear_and_unique)
{
    /* 20,000 sources: the duplicate-key check switches to hashing past a few keys */
    size_t n = 20000;
    size_t cap = n * 40 + 64;
    char *t = malloc(cap);
    size_t len = (size_t)snprintf(t, cap, "recipe: 1\nsources:\n");
    for (size_t i = 0; i < n; i++) len += (size_t)snprintf(t + len, cap - len, "  s%zu: /m/%zu\n", i, i);
    nf_error e = {0};
    nf_recipe *r = NULL;
    cr_assert_eq(nf_recipe_parse(t, len, "big.yaml", NULL, &r, &e), NF_OK, "%s", e.message);
    cr_assert_eq(r->nsources, n);
    cr_assert_str_eq(r->sources[n - 1].path, "/m/19999");
    nf_recipe_free(r);
    /* the same with one duplicate near the end */
    len += (size_t)snprintf(t + len, cap - len, "  s123: /again\n");
    cr_assert_eq(nf_recipe_parse(t, len, "big.yaml", NULL, &r, &e), NF_ERR_INVALID);
    cr_assert_str_eq(e.message, "big.yaml:20003:3: duplicate key 's123' (first at 126:3)");
    free(t);
}

Test(recipe_parse, default_method_per_format)
{
    cr_assert_str_eq(nf_recipe_default_method("bf16"), "cast_direct");
    cr_assert_str_eq(nf_recipe_default_method("fp32"), "cast_direct");
    cr_assert_str_eq(nf_recipe_default_method("int32"), "cast_direct");
    cr_assert_str_eq(nf_recipe_default_method("q4_g64_fp16"), "grouped_absmax");
    cr_assert_str_eq(nf_recipe_default_method("q5_g64_fp16"), "grouped_absmax");
    cr_assert_str_eq(nf_recipe_default_method("q6_g64_fp16"), "grouped_absmax");
    cr_assert_str_eq(nf_recipe_default_method("q8_g32_fp16"), "grouped_absmax");
    cr_assert_str_eq(nf_recipe_default_method("q2_g64_fp16"), "import_encoded");
    cr_assert_str_eq(nf_recipe_default_method("t2_g128_fp16"), "import_encoded");
    cr_assert_str_eq(nf_recipe_default_method("nvfp4"), "import_encoded");
    cr_assert_str_eq(nf_recipe_default_method("fp8_e4m3fn_row_bf16"), "fp8_row_maxabs");
    cr_assert_str_eq(nf_recipe_default_method("fp8_e4m3fn_row_fp16"), "fp8_row_maxabs");
    cr_assert_str_eq(nf_recipe_default_method("gguf_q4_k"), "import_encoded");
    cr_assert_str_eq(nf_recipe_default_method("gguf_iq1_m"), "import_encoded");
    cr_assert_null(nf_recipe_default_method("q4"));
    cr_assert_null(nf_recipe_default_method(NULL));
}
