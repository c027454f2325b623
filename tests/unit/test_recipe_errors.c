/* Recipe errors: one case per class, each checked for its exact "recipe.yaml:LINE:COL: "
 * position (1-based) and for naming the key and what was expected. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

/* The variables these tests expand; a recipe expands only what the command line allows
 * (--allow-env, nf_recipe_options). */
static const char *const test_env[] = {"NF_RECIPE_TEST_ROOT",  "NF_RECIPE_TEST_REL",    "NF_RECIPE_TEST_EMPTY",
                                       "NF_RECIPE_TEST_UNSET", "NF_RECIPE_TEST_EMPTY2", "HOME"};
static const nf_recipe_options test_opt = {test_env, sizeof test_env / sizeof test_env[0]};

/* Parses text expecting NF_ERR_INVALID with a message that starts with "recipe.yaml:LINE:COL: "
 * and contains every fragment given. */
static void expect_error_at(const char *text, size_t len, int line, int col, const char *frag1, const char *frag2)
{
    nf_error e = {0};
    nf_recipe *r = NULL;
    nf_status st = nf_recipe_parse_ex(text, len, "recipe.yaml", "/rdir", &test_opt, &r, &e);
    cr_assert_eq(st, NF_ERR_INVALID, "status %d for:\n%s\nmessage: %s", st, text, e.message);
    cr_assert_null(r);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "recipe.yaml:%d:%d: ", line, col);
    cr_assert(strncmp(e.message, prefix, strlen(prefix)) == 0, "expected prefix '%s', got '%s'", prefix, e.message);
    if (frag1) cr_assert(strstr(e.message, frag1), "'%s' not in '%s'", frag1, e.message);
    if (frag2) cr_assert(strstr(e.message, frag2), "'%s' not in '%s'", frag2, e.message);
}

#define EXPECT(text, line, col, f1, f2) expect_error_at(text, strlen(text), line, col, f1, f2)

/* ---------------------------------------------------------------- unknown keys, every level */
Test(recipe_errors, unknown_top_level_key)
{
    EXPECT("recipe: 1\nrule: []\n", 2, 1, "unknown top-level key 'rule'", "expected one of: recipe, sources");
}

Test(recipe_errors, unknown_output_key)
{
    EXPECT("recipe: 1\noutput:\n  name: x\n  nmae: y\n", 4, 3, "output: unknown key 'nmae'",
           "expected one of: name, max_file_bytes");
}

Test(recipe_errors, unknown_defaults_key)
{
    EXPECT("recipe: 1\ndefaults: {format: bf16, metod: cast_direct}\n", 2, 26, "defaults: unknown key 'metod'",
           "format, method");
}

Test(recipe_errors, unknown_rule_key)
{
    EXPECT("recipe: 1\nrules:\n  - match: a\n    fromat: fp32\n", 4, 5, "rules[0]: unknown key 'fromat'",
           "match, when, format, layout, method, with, skip, optional");
}

Test(recipe_errors, unknown_when_key)
{
    EXPECT("recipe: 1\nrules:\n  - match: a\n    when: {rank: 2, ranks: 3}\n", 4, 21,
           "rules[0].when: unknown key 'ranks'", "rank, dtype, min_elements");
}

Test(recipe_errors, unknown_component_key)
{
    EXPECT("recipe: 1\ncomponents:\n  text:\n    conf: {}\n", 4, 5, "components.text: unknown key 'conf'",
           "config, resources");
}

Test(recipe_errors, unknown_group_key)
{
    EXPECT("recipe: 1\ngroups:\n  - id: g\n    members: [a]\n    shape: [1]\n", 5, 5, "groups[0]: unknown key 'shape'",
           "id, members");
}

Test(recipe_errors, unknown_method_parameter)
{
    EXPECT("recipe: 1\nrules:\n  - match: a\n    method: grouped_search\n    with: {imatrix: im, foo: 1}\n", 5, 25,
           "rules[0].with: unknown parameter 'foo' of grouped_search", "imatrix, negative_scales");
}

Test(recipe_errors, parameters_for_a_method_without_any)
{
    EXPECT("recipe: 1\nrules:\n  - match: a\n    with:\n      negative_scales: true\n    method: grouped_absmax\n", 5,
           7, "rules[0].with: method grouped_absmax takes no parameters, got 'negative_scales'", NULL);
}

/* ---------------------------------------------------------------- wrong types and values */
Test(recipe_errors, string_where_mapping_expected)
{
    EXPECT("recipe: 1\noutput: \"x\"\n", 2, 9, "output: expected a mapping, got the string 'x'", NULL);
    EXPECT("recipe: 1\nsources: [a]\n", 2, 10, "sources: expected a mapping, got a sequence", NULL);
    EXPECT("recipe: 1\nrules:\n  - match: a\n    with: none\n", 4, 11, "rules[0].with: expected a mapping", NULL);
}

Test(recipe_errors, list_where_scalar_expected)
{
    EXPECT("recipe: 1\ndefaults: {format: [bf16]}\n", 2, 20, "defaults.format: expected a format name",
           "got a sequence");
    EXPECT("recipe: 1\noutput: {name: [a]}\n", 2, 16, "output.name: expected a string, got a sequence", NULL);
}

Test(recipe_errors, float_where_integer_expected)
{
    EXPECT("recipe: 1\noutput: {max_file_bytes: 1.5}\n", 2, 26,
           "output.max_file_bytes: expected a non-negative integer, got the number '1.5'", NULL);
    EXPECT("recipe: 1\nrules:\n  - match: a\n    when: {min_elements: 1e3}\n", 4, 26,
           "rules[0].when.min_elements: expected a non-negative integer", "1e3");
}

Test(recipe_errors, negative_integers)
{
    EXPECT("recipe: 1\noutput: {max_file_bytes: -1}\n", 2, 26,
           "output.max_file_bytes: expected a non-negative integer, got the integer -1", NULL);
    EXPECT("recipe: 1\nrules:\n  - match: a\n    when: {rank: -1}\n", 4, 18,
           "rules[0].when.rank: expected a non-negative integer, got the integer -1", NULL);
}

Test(recipe_errors, integers_out_of_range)
{
    EXPECT("recipe: 1\noutput: {max_file_bytes: 9223372036854775808}\n", 2, 26, "out of range", NULL);
    EXPECT("recipe: 1\noutput: {max_file_bytes: 99999999999999999999999}\n", 2, 26, "out of range", NULL);
    EXPECT("recipe: 1\nrules:\n  - match: a\n    when: {rank: 4294967296}\n", 4, 18, "rank 4294967296 is out of range",
           NULL);
    EXPECT("recipe: 1\ncomponents: {text: {config: {x: 123456789012345678901234}}}\n", 2, 33, "integer out of range",
           NULL);
    EXPECT("recipe: 1\ncomponents: {text: {config: {x: .inf}}}\n", 2, 33, "cannot be represented in JSON", NULL);
    EXPECT("recipe: 1\ncomponents: {text: {config: {x: -.Inf}}}\n", 2, 33, "the number '-.Inf'", NULL);
    EXPECT("recipe: 1\ncomponents: {text: {config: {x: .NaN}}}\n", 2, 33, "not finite", NULL);
    EXPECT("recipe: 1\ncomponents: {text: {config: {x: 1e999}}}\n", 2, 33, "not finite", NULL);
}

Test(recipe_errors, recipe_version)
{
    EXPECT("recipe: 2\n", 1, 9, "recipe: unsupported schema version 2", "version 1");
    EXPECT("recipe: \"1\"\n", 1, 9, "recipe: expected the schema version 1, got the string '1'", NULL);
    EXPECT("recipe: 1.0\n", 1, 9, "recipe: expected the schema version 1, got the number '1.0'", NULL);
    EXPECT("sources: {}\n", 1, 1, "missing key 'recipe'", NULL);
    /* the version is checked before anything else */
    EXPECT("future: x\nrecipe: 3\n", 2, 9, "unsupported schema version 3", NULL);
}

Test(recipe_errors, bad_booleans)
{
    EXPECT("recipe: 1\nrules:\n  - match: a\n    skip: yes\n", 4, 11,
           "rules[0].skip: expected true or false, got the string 'yes'", NULL);
    EXPECT("recipe: 1\nrules:\n  - match: a\n    optional: 1\n", 4, 15,
           "rules[0].optional: expected true or false, got the integer 1", NULL);
    EXPECT("recipe: 1\nrules:\n  - match: a\n    skip: True\n", 4, 11, "got the string 'True'", NULL);
    EXPECT("recipe: 1\nrules:\n  - match: a\n    skip: \"true\"\n", 4, 11, "got the string 'true'", NULL);
}

Test(recipe_errors, non_bool_negative_scales)
{
    EXPECT("recipe: 1\nrules:\n  - match: a\n    method: grouped_search\n    with: {negative_scales: \"true\"}\n", 5,
           29, "rules[0].with: negative_scales: expected true or false, got the string 'true'", NULL);
    EXPECT("recipe: 1\nrules:\n  - match: a\n    method: grouped_search\n    with: {negative_scales: 0}\n", 5, 29,
           "got the integer 0", NULL);
    EXPECT("recipe: 1\nrules:\n  - match: a\n    method: grouped_search\n    with: {imatrix: 3}\n", 5, 21,
           "imatrix: expected a source name or a path, got the integer 3", NULL);
}

Test(recipe_errors, null_values)
{
    EXPECT("recipe: 1\noutput:\n  name:\n", 3, 8, "output.name: expected a string, got null", NULL);
    EXPECT("recipe: 1\nrules:\n", 2, 7, "rules: expected a list, got null", NULL);
}

Test(recipe_errors, non_string_where_string_expected)
{
    EXPECT("recipe: 1\nrules:\n  - match: 123\n", 3, 12, "rules[0].match: expected a tensor name", "the integer 123");
    EXPECT("recipe: 1\nsources: {base: 7}\n", 2, 17, "sources.base: expected a path, got the integer 7", NULL);
    EXPECT("recipe: 1\noutput: {name: \"\"}\n", 2, 16, "output.name: expected a string, got an empty string", NULL);
}

Test(recipe_errors, unknown_registry_names)
{
    EXPECT("recipe: 1\ndefaults: {format: q4}\n", 2, 20, "defaults.format: unknown format 'q4'", NULL);
    EXPECT("recipe: 1\ndefaults: {method: absmax}\n", 2, 20, "defaults.method: unknown method 'absmax'",
           "cast_direct, grouped_absmax, grouped_search, fp8_row_maxabs, import_encoded");
    EXPECT("recipe: 1\nrules:\n  - {match: a, layout: rows}\n", 3, 24, "rules[0].layout: unknown tensor layout 'rows'",
           NULL);
    EXPECT("recipe: 1\nrules:\n  - {match: a, layout: raw_bytes_v1}\n", 3, 24, "unknown tensor layout", NULL);
}

/* ---------------------------------------------------------------- match */
Test(recipe_errors, missing_match)
{
    EXPECT("recipe: 1\nrules:\n  - match: a\n  - format: fp32\n    skip: true\n", 4, 5, "rules[1]: missing key 'match'",
           NULL);
}

Test(recipe_errors, empty_match_list_and_selectors)
{
    EXPECT("recipe: 1\nrules:\n  - match: []\n", 3, 12, "rules[0].match: empty list: expected at least one selector",
           NULL);
    EXPECT("recipe: 1\nrules:\n  - match: [a, \"\"]\n", 3, 16, "rules[0].match[1]: expected a tensor name",
           "empty string");
    EXPECT("recipe: 1\nrules:\n  - match: {a: b}\n", 3, 12, "expected a selector or a list of selectors", NULL);
    EXPECT("recipe: 1\nrules:\n  - match: [a, [b]]\n", 3, 16, "rules[0].match[1]", "got a sequence");
    EXPECT("recipe: 1\nrules:\n  - a\n", 3, 5, "rules[0]: expected a mapping, got the string 'a'", NULL);
}

Test(recipe_errors, bad_regex)
{
    EXPECT("recipe: 1\nrules:\n  - match: [x, \"re:model.(layers\"]\n", 3, 16,
           "rules[0].match[1]: bad regular expression 'model.(layers'", NULL);
    EXPECT("recipe: 1\nrules:\n  - match: \"re:a)(b\"\n", 3, 12, "bad regular expression 'a)(b'", NULL);
    EXPECT("recipe: 1\nrules:\n  - match: \"re:\"\n", 3, 12, "empty regular expression", NULL);
}

/* ---------------------------------------------------------------- structure */
Test(recipe_errors, duplicate_keys)
{
    EXPECT("recipe: 1\noutput:\n  name: a\n  name: b\n", 4, 3, "duplicate key 'name' (first at 3:3)", NULL);
    EXPECT("recipe: 1\nrecipe: 1\n", 2, 1, "duplicate key 'recipe' (first at 1:1)", NULL);
    EXPECT("recipe: 1\nsources: {a: x, b: y, a: z}\n", 2, 23, "duplicate key 'a' (first at 2:11)", NULL);
    EXPECT("recipe: 1\nrules:\n  - match: a\n    with: {imatrix: x, imatrix: y}\n", 4, 24, "duplicate key 'imatrix'",
           NULL);
}

Test(recipe_errors, non_scalar_key)
{
    EXPECT("recipe: 1\ncomponents: {text: {config: {[a]: b}}}\n", 2, 30, "a mapping key must be a scalar", NULL);
}

Test(recipe_errors, top_level_not_a_mapping)
{
    EXPECT("- recipe: 1\n", 1, 1, "recipe file: expected a mapping starting with 'recipe: 1', got a sequence", NULL);
    EXPECT("hello\n", 1, 1, "got the string 'hello'", NULL);
}

Test(recipe_errors, empty_files)
{
    EXPECT("", 1, 1, "empty recipe", NULL);
    EXPECT("# only a comment\n\n", 1, 1, "empty recipe", NULL);
    EXPECT("---\n", 1, 1, "empty recipe", NULL);
    expect_error_at(NULL, 0, 1, 1, "empty recipe", NULL);
}

Test(recipe_errors, second_document) { EXPECT("recipe: 1\n---\nrecipe: 1\n", 2, 1, "a second YAML document", NULL); }

/* ---------------------------------------------------------------- sources, paths, resources */
Test(recipe_errors, unset_environment_variable)
{
    unsetenv("NF_RECIPE_TEST_UNSET");
    EXPECT("recipe: 1\nsources:\n  base: ${NF_RECIPE_TEST_UNSET}/model\n", 3, 9,
           "sources.base: environment variable 'NF_RECIPE_TEST_UNSET' is not set", NULL);
    EXPECT("recipe: 1\ncomponents: {text: {resources: {tok: \"${NF_RECIPE_TEST_UNSET}/t.json\"}}}\n", 2, 38,
           "components.text.resources.tok: environment variable 'NF_RECIPE_TEST_UNSET' is not set", NULL);
    EXPECT("recipe: 1\nsources:\n  base: ${HOME\n", 3, 9, "unterminated '${'", NULL);
    EXPECT("recipe: 1\nsources:\n  base: ${1X}/m\n", 3, 9, "bad variable name '${1X}'", NULL);
    setenv("NF_RECIPE_TEST_EMPTY2", "", 1);
    EXPECT("recipe: 1\nsources:\n  base: ${NF_RECIPE_TEST_EMPTY2}\n", 3, 9, "expands to an empty path", NULL);
}

Test(recipe_errors, bad_source_names)
{
    EXPECT("recipe: 1\nsources:\n  a/b: /x\n", 3, 3, "source name 'a/b' must not contain '/'", NULL);
    EXPECT("recipe: 1\nsources:\n  \"\": /x\n", 3, 3, "a source name must not be empty", NULL);
}

Test(recipe_errors, resource_from_unknown_source)
{
    EXPECT("recipe: 1\n"
           "sources: {base: /m}\n"
           "components:\n"
           "  text:\n"
           "    resources:\n"
           "      tokenizer.json: bsae/tokenizer.json\n",
           6, 23, "components.text.resources.tokenizer.json: unknown source 'bsae' in 'bsae/tokenizer.json'",
           "sources: base");
    EXPECT("recipe: 1\nsources: {base: /m}\ncomponents: {text: {resources: {t: base/}}}\n", 3, 36,
           "no file named after 'base/'", NULL);
}

Test(recipe_errors, config_from_unknown_source)
{
    EXPECT("recipe: 1\ncomponents:\n  text:\n    config: {from: base}\n", 4, 20,
           "components.text.config.from: unknown source 'base' (sources: none defined)", NULL);
    EXPECT("recipe: 1\ncomponents:\n  text:\n    config: base\n", 4, 13,
           "components.text.config: expected {from: SOURCE} or a config mapping", NULL);
}

/* ---------------------------------------------------------------- groups */
Test(recipe_errors, group_errors)
{
    EXPECT("recipe: 1\ngroups:\n  - members: [a]\n", 3, 5, "groups[0]: missing key 'id'", NULL);
    EXPECT("recipe: 1\ngroups:\n  - id: g\n", 3, 5, "groups[0]: missing key 'members'", NULL);
    EXPECT("recipe: 1\ngroups:\n  - {id: g, members: []}\n", 3, 22, "groups[0].members: empty list", NULL);
    EXPECT("recipe: 1\ngroups:\n  - {id: g, members: [a]}\n  - {id: g, members: [b]}\n", 4, 10,
           "groups[1].id: duplicate group id 'g' (groups[0] at 3:5)", NULL);
    EXPECT("recipe: 1\ngroups:\n  - {id: g, members: [a, b]}\n  - {id: h, members: [c, b]}\n", 4, 26,
           "groups[1].members[1]: tensor 'b' is already a member of group 'g'", NULL);
}

/* ---------------------------------------------------------------- hostile YAML */
Test(recipe_errors, nesting_deeper_than_the_cap)
{
    /* root (1), components (2), text (3), config (4), then {a: {a: ...}}: level 33 is the
     * 30th brace after config's */
    char t[1024];
    size_t len = (size_t)snprintf(t, sizeof t, "recipe: 1\ncomponents:\n  text:\n    config: ");
    for (int i = 0; i < 40; i++) len += (size_t)snprintf(t + len, sizeof t - len, "{a: ");
    len += (size_t)snprintf(t + len, sizeof t - len, "1");
    for (int i = 0; i < 40; i++) len += (size_t)snprintf(t + len, sizeof t - len, "}");
    len += (size_t)snprintf(t + len, sizeof t - len, "\n");
    expect_error_at(t, len, 4, 13 + 4 * 29, "nesting deeper than 32 levels", NULL);

    /* exactly at the cap is fine */
    len = (size_t)snprintf(t, sizeof t, "recipe: 1\ncomponents:\n  text:\n    config: ");
    for (int i = 0; i < 29; i++) len += (size_t)snprintf(t + len, sizeof t - len, "{a: ");
    len += (size_t)snprintf(t + len, sizeof t - len, "1");
    for (int i = 0; i < 29; i++) len += (size_t)snprintf(t + len, sizeof t - len, "}");
    nf_error e = {0};
    nf_recipe *r = NULL;
    cr_assert_eq(nf_recipe_parse(t, len, "recipe.yaml", NULL, &r, &e), NF_OK, "%s", e.message);
    nf_recipe_free(r);
}

Test(recipe_errors, deep_flow_sequences)
{
    /* a long line of '[': refused at level 33 without reading the rest */
    size_t n = 100000;
    char *t = malloc(n + 32);
    size_t len = (size_t)snprintf(t, 32, "recipe: 1\nrules: ");
    memset(t + len, '[', n);
    len += n;
    expect_error_at(t, len, 2, 8 + 31, "nesting deeper than 32 levels", NULL);
    free(t);
}

Test(recipe_errors, anchors_and_aliases)
{
    EXPECT("recipe: 1\nsources: &s {base: /m}\n", 2, 10, "anchor '&s'", "not allowed");
    EXPECT("recipe: 1\nsources:\n  base: &b /m\n", 3, 9, "anchor '&b'", NULL);
    EXPECT("recipe: 1\nrules:\n  - match: [a, *x]\n", 3, 16, "alias '*x'", "not allowed");
}

Test(recipe_errors, billion_laughs)
{
    EXPECT("recipe: 1\n"
           "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
           "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
           "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
           "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
           "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
           "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
           "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
           "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
           "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n",
           2, 4, "anchor '&a'", NULL);
}

Test(recipe_errors, tags)
{
    EXPECT("recipe: 1\noutput: !!map {name: x}\n", 2, 9, "tag 'tag:yaml.org,2002:map'", "not allowed");
    EXPECT("recipe: !!int 1\n", 1, 9, "tags are not allowed", NULL);
}

Test(recipe_errors, yaml_syntax_errors)
{
    /* libyaml's own problem and position */
    EXPECT("recipe: 1\nrules: [a, b\n", 3, 1, "YAML syntax error: did not find expected ',' or ']'",
           "while parsing a flow sequence at 2:8");
    EXPECT("recipe: 1\n  output: x\n", 2, 9, "YAML syntax error: mapping values are not allowed in this context", NULL);
    EXPECT("recipe: 1\noutput: {name: \"x}\n", 3, 1, "YAML syntax error: found unexpected end of stream",
           "while scanning a quoted scalar at 2:16");
    EXPECT("recipe: 1\n\tsources: {}\n", 2, 1, "YAML syntax error", NULL);
}

Test(recipe_errors, invalid_utf8_and_nul)
{
    EXPECT("recipe: 1\noutput: {name: \"a\xff\"}\n", 2, 18, "YAML syntax error: invalid leading UTF-8 octet", NULL);
    EXPECT("recipe: 1\noutput: {name: \"a\\0b\"}\n", 2, 16, "a NUL character in a scalar is not allowed", NULL);
    expect_error_at("recipe: 1\n\0", 11, 2, 1, "YAML syntax error: control characters are not allowed", NULL);
}

Test(recipe_errors, size_and_node_caps)
{
    size_t big = NF_RECIPE_MAX_BYTES + 1u;
    char *t = malloc(big);
    memset(t, '#', big);
    nf_error e = {0};
    nf_recipe *r = NULL;
    cr_assert_eq(nf_recipe_parse(t, big, "recipe.yaml", NULL, &r, &e), NF_ERR_INVALID);
    cr_assert(strstr(e.message, "recipe.yaml: recipe of 16777217 bytes is larger than the 16777216-byte cap"), "%s",
              e.message);
    free(t);

    /* [a,a,a,...] with more than 200,000 scalars: refused at the node cap */
    size_t n = 250000;
    t = malloc(2 * n + 64);
    size_t len = (size_t)snprintf(t, 64, "recipe: 1\nrules: [");
    for (size_t i = 0; i < n; i++) {
        t[len++] = 'a';
        t[len++] = ',';
    }
    t[len++] = ']';
    cr_assert_eq(nf_recipe_parse(t, len, "recipe.yaml", NULL, &r, &e), NF_ERR_INVALID);
    cr_assert(strstr(e.message, "more than 200000 YAML nodes"), "%s", e.message);
    cr_assert(!strncmp(e.message, "recipe.yaml:2:", 14), "%s", e.message);
    free(t);
}

Test(recipe_errors, errors_name_the_file)
{
    nf_error e = {0};
    nf_recipe *r = NULL;
    const char *t = "recipe: 1\nbogus: 1\n";
    cr_assert_eq(nf_recipe_parse(t, strlen(t), "conf/my recipe.yaml", NULL, &r, &e), NF_ERR_INVALID);
    cr_assert_str_eq(e.message, "conf/my recipe.yaml:2:1: unknown top-level key 'bogus' (expected one of: recipe, "
                                "sources, output, components, defaults, rules, groups, budget)");
    cr_assert_eq(nf_recipe_parse(t, strlen(t), NULL, NULL, &r, &e), NF_ERR_INVALID);
    cr_assert(!strncmp(e.message, "<memory>:2:1: ", 14), "%s", e.message);
}

Test(recipe_errors, usage_errors)
{
    nf_error e = {0};
    cr_assert_eq(nf_recipe_parse("recipe: 1", 9, "x", NULL, NULL, &e), NF_ERR_USAGE);
    nf_recipe *r = NULL;
    cr_assert_eq(nf_recipe_parse(NULL, 3, "x", NULL, &r, &e), NF_ERR_USAGE);
    cr_assert_eq(nf_recipe_load(NULL, &r, &e), NF_ERR_USAGE);
    nf_recipe_free(NULL);
}
