/* Planning errors of the conversion pipeline (nf_plan_build): every offending tensor of a kind
 * listed in one NF_ERR_INVALID error, each named, and nothing planned.  Checkpoints are small
 * safetensors files written by the test; recipes are parsed from text. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "support/plan_ckpt.h"
#include "support/source_writer.h"

TestSuite(convert_plan, .init = pc_dir_make, .fini = pc_dir_remove);

/* A ModelOpt NVFP4 weight: <p>.weight U8 [n, k/2], <p>.weight_scale F8_E4M3 [n, k/16],
 * <p>.weight_scale_2 F32 scalar (1.0). */
static void add_nvfp4(pc_ckpt *c, const char *prefix, uint64_t n, uint64_t k)
{
    static char names[PC_MAX_TENSORS][3][128];
    static size_t used;
    char(*nm)[128] = names[used++ % PC_MAX_TENSORS];
    snprintf(nm[0], 128, "%s.weight", prefix);
    snprintf(nm[1], 128, "%s.weight_scale", prefix);
    snprintf(nm[2], 128, "%s.weight_scale_2", prefix);
    pc_add(c, nm[0], "U8", 2, n, k / 2, 1);
    pc_add(c, nm[1], "F8_E4M3", 2, n, k / 16, 1);
    pc_add(c, nm[2], "F32", 0, 0, 0, 4);
    uint8_t *one = c->data[c->n - 1];
    one[0] = 0x00, one[1] = 0x00, one[2] = 0x80, one[3] = 0x3F; /* 1.0f */
}

static void expect_error(const char *source, const char *body, nf_status status, const char *const *needles,
                         size_t nneedles, size_t problems)
{
    nf_recipe *r = NULL;
    nf_plan *p = NULL;
    nf_error err;
    nf_status st = pc_build(pc_dir, source, body, &r, &p, &err);
    cr_assert_eq(st, status, "status %s, expected %s: %s", nf_status_name(st), nf_status_name(status),
                 st == NF_OK ? "(planned)" : err.message);
    cr_assert_null(p, "no plan on failure");
    for (size_t i = 0; i < nneedles; i++)
        cr_assert_not_null(strstr(err.message, needles[i]), "the error lacks '%s': %s", needles[i], err.message);
    if (problems) {
        char want[64];
        snprintf(want, sizeof want, ": %zu problem%s:", problems, problems == 1 ? "" : "s");
        cr_assert_not_null(strstr(err.message, want), "expected '%s' in: %s", want, err.message);
    }
    nf_recipe_free(r);
}

/* ---------------------------------------------------------------- nvfp4 shapes */
/* Control: an NVFP4 weight with N % 128 == 0 plans, its companions consumed. */
Test(convert_plan, nvfp4_with_whole_tiles_plans)
{
    pc_ckpt c = {0};
    add_nvfp4(&c, "c", 128, 64);
    pc_add(&c, "norm.weight", "BF16", 1, 64, 0, 2);
    char *src = pc_write(&c, pc_dir, "ok.safetensors");
    nf_recipe *r = NULL;
    nf_plan *p = NULL;
    nf_error err;
    cr_assert_eq(pc_build(pc_dir, src, "rules:\n  - match: c.weight\n    format: nvfp4\n", &r, &p, &err), NF_OK, "%s",
                 err.message);
    json_t *d = nf_plan_describe(p);
    json_t *objs = json_object_get(d, "objects");
    cr_assert_eq(json_array_size(objs), 2, "c.weight and norm.weight; the companions are consumed");
    json_t *o = json_array_get(objs, 0);
    cr_assert_str_eq(json_string_value(json_object_get(o, "id")), "c.weight");
    cr_assert_str_eq(json_string_value(json_object_get(o, "format")), "nvfp4");
    cr_assert_str_eq(json_string_value(json_object_get(o, "method")), "import_encoded");
    json_decref(d);
    nf_plan_free(p);
    nf_recipe_free(r);
    free(src);
}

Test(convert_plan, nvfp4_rows_not_multiple_of_128_lists_every_tensor)
{
    pc_ckpt c = {0};
    add_nvfp4(&c, "a", 100, 64);
    add_nvfp4(&c, "b", 60, 128);
    add_nvfp4(&c, "c", 128, 64); /* fine */
    pc_add(&c, "norm.weight", "BF16", 1, 64, 0, 2);
    char *src = pc_write(&c, pc_dir, "nv.safetensors");
    static const char *const needles[] = {"a.weight", "b.weight", "128", "plan.yaml"};
    expect_error(src, "rules:\n  - match: [a.weight, b.weight, c.weight]\n    format: nvfp4\n", NF_ERR_INVALID, needles,
                 4, 2);
    /* c.weight is not among the problems */
    nf_recipe *r = NULL;
    nf_plan *p = NULL;
    nf_error err;
    pc_build(pc_dir, src, "rules:\n  - match: [a.weight, b.weight, c.weight]\n    format: nvfp4\n", &r, &p, &err);
    cr_assert_null(strstr(err.message, "c.weight"), "%s", err.message);
    nf_recipe_free(r);
    free(src);
}

/* ---------------------------------------------------------------- grouped formats */
Test(convert_plan, q4_on_a_rank1_tensor_names_it)
{
    pc_ckpt c = {0};
    pc_add(&c, "w.weight", "BF16", 2, 4, 128, 2);
    pc_add(&c, "ln.weight", "BF16", 1, 128, 0, 2);
    char *src = pc_write(&c, pc_dir, "r1.safetensors");
    static const char *const needles[] = {"ln.weight", "rank-2"};
    expect_error(src, "rules:\n  - match: \"*\"\n    format: q4_g64_fp16\n", NF_ERR_INVALID, needles, 2, 1);
    free(src);
}

Test(convert_plan, q4_on_every_rank1_tensor_lists_them_all)
{
    pc_ckpt c = {0};
    pc_add(&c, "w.weight", "BF16", 2, 4, 128, 2);
    pc_add(&c, "ln1.weight", "BF16", 1, 128, 0, 2);
    pc_add(&c, "ln2.weight", "F32", 1, 70, 0, 4);
    pc_add(&c, "ln3.bias", "BF16", 1, 5, 0, 2);
    char *src = pc_write(&c, pc_dir, "r1s.safetensors");
    static const char *const needles[] = {"ln1.weight", "ln2.weight", "ln3.bias"};
    expect_error(src, "defaults: {format: q4_g64_fp16}\n", NF_ERR_INVALID, needles, 3, 3);
    free(src);
}

Test(convert_plan, grouped_absmax_on_q2_requires_import_encoded)
{
    pc_ckpt c = {0};
    pc_add(&c, "w.weight", "BF16", 2, 4, 128, 2);
    pc_add(&c, "v.weight", "BF16", 2, 8, 64, 2);
    char *src = pc_write(&c, pc_dir, "q2.safetensors");
    static const char *const needles[] = {"w.weight", "grouped_absmax", "q2_g64_fp16", "import_encoded"};
    expect_error(src, "rules:\n  - match: w.weight\n    format: q2_g64_fp16\n    method: grouped_absmax\n",
                 NF_ERR_INVALID, needles, 4, 1);
    /* both tensors, by defaults */
    static const char *const both[] = {"w.weight", "v.weight", "import_encoded"};
    expect_error(src, "defaults: {format: q2_g64_fp16, method: grouped_absmax}\n", NF_ERR_INVALID, both, 3, 2);
    /* grouped_search too */
    static const char *const search[] = {"grouped_search", "import_encoded"};
    expect_error(src, "rules:\n  - match: w.weight\n    format: q2_g64_fp16\n    method: grouped_search\n",
                 NF_ERR_INVALID, search, 2, 1);
    free(src);
}

/* Several kinds of choice problems (method/format mismatches, an import without its companion
 * tensors) in one run, all listed. */
Test(convert_plan, every_choice_problem_listed_together)
{
    pc_ckpt c = {0};
    pc_add(&c, "a.weight", "BF16", 2, 4, 128, 2);
    pc_add(&c, "b.weight", "BF16", 2, 4, 128, 2);
    pc_add(&c, "c.weight", "BF16", 2, 4, 128, 2);
    pc_add(&c, "d.weight", "BF16", 2, 128, 64, 2);
    char *src = pc_write(&c, pc_dir, "mix.safetensors");
    static const char *const needles[] = {"a.weight", "q2_g64_fp16",    "b.weight", "cast_direct",
                                          "c.weight", "fp8_row_maxabs", "d.weight", "companions"};
    expect_error(src,
                 "rules:\n"
                 "  - match: a.weight\n    format: q2_g64_fp16\n    method: grouped_absmax\n"
                 "  - match: b.weight\n    format: q8_g32_fp16\n    method: cast_direct\n"
                 "  - match: c.weight\n    format: q4_g64_fp16\n    method: fp8_row_maxabs\n"
                 "  - match: d.weight\n    format: nvfp4\n",
                 NF_ERR_INVALID, needles, 8, 4);
    free(src);
}

/* A plan that is fine builds and describes what it will write. */
Test(convert_plan, valid_plan_describes_every_object)
{
    pc_ckpt c = {0};
    pc_add(&c, "w.weight", "BF16", 2, 9, 130, 2);
    pc_add(&c, "ln.weight", "F32", 1, 130, 0, 4);
    char *src = pc_write(&c, pc_dir, "ok2.safetensors");
    nf_recipe *r = NULL;
    nf_plan *p = NULL;
    nf_error err;
    cr_assert_eq(pc_build(pc_dir, src,
                          "rules:\n  - match: w.weight\n    format: q4_g64_fp16\n"
                          "  - match: ln.weight\n    format: fp32\n",
                          &r, &p, &err),
                 NF_OK, "%s", err.message);
    cr_assert_eq(nf_plan_object_count(p), 2);
    json_t *d = nf_plan_describe(p);
    json_t *w = json_array_get(json_object_get(d, "objects"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(w, "method")), "grouped_absmax", "q4's natural method");
    cr_assert_str_eq(json_string_value(json_object_get(w, "layout")), "row_split_k128_v1");
    cr_assert_str_eq(json_string_value(json_object_get(w, "source_dtype")), "BF16");
    json_t *ln = json_array_get(json_object_get(d, "objects"), 1);
    cr_assert_str_eq(json_string_value(json_object_get(ln, "method")), "cast_direct");
    cr_assert_eq(json_integer_value(json_object_get(ln, "bytes")), 130 * 4);
    json_decref(d);
    nf_plan_free(p);
    nf_recipe_free(r);
    free(src);
}

/* ---------------------------------------------------------------- where each problem stems from */
/* Every problem names the recipe file and the line:column of the rule field, defaults entry,
 * group or group member it stems from, and the tensor with its dtype; recipes below start with
 * "recipe: 1\nsources:\n  base: PATH\n" (lines 1-3), so the body's first line is line 4. */

/* The needle must appear in the message as one problem line. */
static void expect_line(const char *source, const char *body, const char *needle)
{
    expect_error(source, body, NF_ERR_INVALID, &needle, 1, 0);
}

Test(convert_plan, rule_format_problem_names_rule_position_and_tensor)
{
    pc_ckpt c = {0};
    pc_add(&c, "w.weight", "BF16", 2, 4, 128, 2);
    pc_add(&c, "ln.weight", "BF16", 1, 128, 0, 2);
    char *src = pc_write(&c, pc_dir, "pos1.safetensors");
    expect_line(src, "rules:\n  - match: \"*\"\n    format: q4_g64_fp16\n",
                "\n  plan.yaml:6:13: rules[0].format: tensor 'ln.weight' (BF16): ");
    /* the same from the defaults */
    expect_line(src, "defaults: {format: q4_g64_fp16}\n",
                "\n  plan.yaml:4:20: defaults.format: tensor 'ln.weight' (BF16): ");
    free(src);
}

Test(convert_plan, method_format_mismatch_names_both_lines)
{
    pc_ckpt c = {0};
    pc_add(&c, "w.weight", "BF16", 2, 4, 128, 2);
    char *src = pc_write(&c, pc_dir, "pos2.safetensors");
    expect_line(src,
                "rules:\n  - match: \"*\"\n    format: q2_g64_fp16\n  - match: w.weight\n    method: grouped_absmax\n",
                "\n  plan.yaml:8:13: rules[1].method: tensor 'w.weight' (BF16): ");
    expect_line(src,
                "rules:\n  - match: \"*\"\n    format: q2_g64_fp16\n  - match: w.weight\n    method: grouped_absmax\n",
                "(format q2_g64_fp16 from plan.yaml:6:13: rules[0].format)");
    /* a method from the defaults */
    expect_line(src, "defaults: {method: grouped_absmax}\nrules:\n  - match: w.weight\n    format: q2_g64_fp16\n",
                "\n  plan.yaml:4:20: defaults.method: tensor 'w.weight' (BF16): ");
    free(src);
}

Test(convert_plan, import_problem_names_the_format_line_once)
{
    pc_ckpt c = {0};
    pc_add(&c, "d.weight", "BF16", 2, 128, 64, 2);
    char *src = pc_write(&c, pc_dir, "pos3.safetensors");
    /* import_encoded is nvfp4's natural method: the format's line is responsible */
    static const char *const needles[] = {"\n  plan.yaml:6:13: rules[0].format: tensor 'd.weight' (BF16): ",
                                          "companions"};
    expect_error(src, "rules:\n  - match: d.weight\n    format: nvfp4\n", NF_ERR_INVALID, needles, 2, 1);
    nf_recipe *r = NULL;
    nf_plan *p = NULL;
    nf_error err;
    pc_build(pc_dir, src, "rules:\n  - match: d.weight\n    format: nvfp4\n", &r, &p, &err);
    const char *first = strstr(err.message, "d.weight");
    cr_assert_not_null(first);
    cr_assert_null(strstr(first + 1, "d.weight"), "the tensor is named once: %s", err.message);
    nf_recipe_free(r);
    free(src);
}

Test(convert_plan, group_problems_name_group_and_member_positions)
{
    pc_ckpt c = {0};
    pc_add(&c, "a.weight", "BF16", 2, 4, 128, 2);
    pc_add(&c, "b.weight", "BF16", 2, 4, 128, 2);
    pc_add(&c, "d.weight", "BF16", 2, 4, 64, 2);
    char *src = pc_write(&c, pc_dir, "pos4.safetensors");
    expect_line(src, "groups:\n  - id: g\n    members: [a.weight, nope]\n",
                "\n  plan.yaml:6:25: groups[0].members[1]: group 'g': member 'nope' is not a tensor of the "
                "checkpoint");
    expect_line(src, "groups:\n  - id: g\n    members: [a.weight]\n  - id: h\n    members: [x, y]\n",
                "\n  plan.yaml:7:5: groups[1]: group 'h' has no member in the checkpoint (members: x, ...)");
    expect_line(src, "groups:\n  - id: g\n    members:\n      - a.weight\n      - d.weight\n",
                "\n  plan.yaml:8:9: groups[0].members[1]: group 'g': member 'd.weight' has 64 columns, 'a.weight' "
                "has 128");
    expect_line(src,
                "rules:\n  - match: b.weight\n    skip: true\n"
                "groups:\n  - id: g\n    members: [a.weight, b.weight]\n",
                "\n  plan.yaml:9:25: groups[0].members[1]: group 'g': member 'b.weight' is skipped by the rules "
                "(last matched by plan.yaml:5:5: rules[0])");
    expect_line(src,
                "rules:\n  - match: b.weight\n    format: fp32\n"
                "groups:\n  - id: g\n    members: [a.weight, b.weight]\n",
                "\n  plan.yaml:9:25: groups[0].members[1]: group 'g': member 'b.weight' has a different format");
    free(src);
}

Test(convert_plan, imatrix_problem_names_with_line_tensor_and_file)
{
    pc_ckpt c = {0};
    pc_add(&c, "w.weight", "BF16", 2, 4, 128, 2);
    char *src = pc_write(&c, pc_dir, "pos5.safetensors");
    float sum[32], one = 1.0f;
    for (size_t i = 0; i < 32; i++) sum[i] = 1.0f;
    sw_gguf_tensor t[2] = {{"w.weight.in_sum2", 0, 1, {32, 1, 1, 1}, sum, sizeof sum},
                           {"w.weight.counts", 0, 1, {1, 1, 1, 1}, &one, sizeof one}};
    sw_buf b = {0};
    sw_gguf_file(&b, 0, t, 2);
    char *im = sw_path(pc_dir, "short.imatrix.gguf");
    cr_assert_eq(sw_write_file(im, b.data, b.len), 0);
    sw_free(&b);
    char body[1024], file_needle[1024];
    snprintf(body, sizeof body,
             "  imatrix: %s\nrules:\n  - match: w.weight\n    format: q4_g64_fp16\n    method: grouped_search\n"
             "    with: {imatrix: imatrix}\n",
             im);
    snprintf(file_needle, sizeof file_needle,
             "%s: imatrix entry 'w.weight' has 32 values but tensor 'w.weight' has 128 input columns", im);
    static const char *const line = "\n  plan.yaml:9:11: rules[0].with: tensor 'w.weight' (BF16): ";
    const char *needles[] = {line, file_needle};
    expect_error(src, body, NF_ERR_INVALID, needles, 2, 1);
    free(im);
    free(src);
}

Test(convert_plan, problem_without_rule_names_the_recipe_and_tensor)
{
    pc_ckpt c = {0};
    pc_add(&c, "w.weight", "BF16", 2, 4, 128, 2);
    pc_add(&c, "e.weight", "BF16", 2, 0, 4, 2);
    char *src = pc_write(&c, pc_dir, "pos6.safetensors");
    expect_line(src, "", "\n  plan.yaml: (no rule matches the tensor): tensor 'e.weight' (BF16): empty tensors");
    expect_line(src, "rules:\n  - match: e.weight\n    layout: auto\n",
                "\n  plan.yaml:5:5: rules[0]: tensor 'e.weight' (BF16): empty tensors");
    free(src);
}

/* The positions the messages above rely on: each rule field, defaults entry and group member is
 * parsed with its position, and resolution says which rule set each field of a choice. */
Test(convert_plan, recipe_keeps_field_positions_and_choice_origins)
{
    static const char text[] = "recipe: 1\n"
                               "sources: {base: ./x}\n"
                               "defaults: {format: q8_g32_fp16, method: grouped_absmax}\n"
                               "rules:\n"
                               "  - match: \"*\"\n"
                               "    format: q4_g64_fp16\n"
                               "    layout: auto\n"
                               "  - match: b\n"
                               "    method: grouped_search\n"
                               "    with: {negative_scales: true}\n"
                               "groups:\n"
                               "  - id: g\n"
                               "    members: [a, b]\n";
    nf_recipe *r = NULL;
    nf_error err;
    cr_assert_eq(nf_recipe_parse(text, strlen(text), "p.yaml", pc_dir, &r, &err), NF_OK, "%s", err.message);
    cr_assert_eq(r->default_format_pos.line, 3);
    cr_assert_eq(r->default_format_pos.col, 20);
    cr_assert_eq(r->default_method_pos.line, 3);
    cr_assert_eq(r->default_method_pos.col, 41);
    cr_assert_eq(r->rules[0].format_pos.line, 6);
    cr_assert_eq(r->rules[0].format_pos.col, 13);
    cr_assert_eq(r->rules[0].layout_pos.line, 7);
    cr_assert_eq(r->rules[0].method_pos.line, 0, "not set by the rule");
    cr_assert_eq(r->rules[0].with_pos.line, 0, "not set by the rule");
    cr_assert_eq(r->rules[1].method_pos.line, 9);
    cr_assert_eq(r->rules[1].with_pos.line, 10);
    cr_assert_eq(r->rules[1].with_pos.col, 11);
    cr_assert_not_null(r->groups[0].member_pos);
    cr_assert_eq(r->groups[0].member_pos[0].line, 13);
    cr_assert_eq(r->groups[0].member_pos[0].col, 15);
    cr_assert_eq(r->groups[0].member_pos[1].col, 18);

    uint64_t shape[2] = {4, 128};
    nf_recipe_tensor t[2] = {{"a", "BF16", 2, shape, 512}, {"b", "BF16", 2, shape, 512}};
    nf_recipe_choice c[2];
    cr_assert_eq(nf_recipe_resolve(r, t, 2, c, &err), NF_OK, "%s", err.message);
    cr_assert_eq(c[0].rule, 0);
    cr_assert_eq(c[0].format_rule, 0);
    cr_assert_eq(c[0].layout_rule, 0);
    cr_assert_eq(c[0].method_rule, -1, "a's method is the default's");
    cr_assert_eq(c[0].with_rule, -1);
    cr_assert_eq(c[1].rule, 1);
    cr_assert_eq(c[1].format_rule, 0);
    cr_assert_eq(c[1].method_rule, 1);
    cr_assert_eq(c[1].with_rule, 1);
    nf_recipe_free(r);
}
