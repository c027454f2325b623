/* Planning errors of the conversion pipeline (nf_plan_build): every offending tensor of a kind
 * listed in one NF_ERR_INVALID error, each named, and nothing planned.  Checkpoints are small
 * safetensors files written by the test; recipes are parsed from text. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "support/source_writer.h"

static char *tmp;

static void make_tmp(void)
{
    tmp = sw_tempdir();
    cr_assert_not_null(tmp);
}

static void remove_tmp(void)
{
    if (tmp) sw_rmtree(tmp);
    free(tmp);
    tmp = NULL;
}

TestSuite(convert_plan, .init = make_tmp, .fini = remove_tmp);

/* ---------------------------------------------------------------- checkpoints */
#define MAX_TENSORS 32

typedef struct ckpt {
    sw_st_tensor t[MAX_TENSORS];
    size_t n;
    void *data[MAX_TENSORS];
} ckpt;

static void add(ckpt *c, const char *name, const char *dtype, uint32_t rank, uint64_t d0, uint64_t d1, size_t word)
{
    cr_assert_lt(c->n, MAX_TENSORS);
    uint64_t elements = rank == 0 ? 1 : rank == 1 ? d0 : d0 * d1;
    size_t bytes = (size_t)elements * word;
    uint8_t *p = malloc(bytes ? bytes : 1);
    cr_assert_not_null(p);
    for (size_t i = 0; i < bytes; i++) p[i] = (uint8_t)(0x31 + i * 7 % 61); /* small finite values */
    c->t[c->n] = (sw_st_tensor){name, dtype, rank, {d0, d1}, p, bytes};
    c->data[c->n++] = p;
}

/* A ModelOpt NVFP4 weight: <p>.weight U8 [n, k/2], <p>.weight_scale F8_E4M3 [n, k/16],
 * <p>.weight_scale_2 F32 scalar (1.0). */
static void add_nvfp4(ckpt *c, const char *prefix, uint64_t n, uint64_t k)
{
    static char names[MAX_TENSORS][3][128];
    static size_t used;
    char(*nm)[128] = names[used++ % MAX_TENSORS];
    snprintf(nm[0], 128, "%s.weight", prefix);
    snprintf(nm[1], 128, "%s.weight_scale", prefix);
    snprintf(nm[2], 128, "%s.weight_scale_2", prefix);
    add(c, nm[0], "U8", 2, n, k / 2, 1);
    add(c, nm[1], "F8_E4M3", 2, n, k / 16, 1);
    add(c, nm[2], "F32", 0, 0, 0, 4);
    uint8_t *one = c->data[c->n - 1];
    one[0] = 0x00, one[1] = 0x00, one[2] = 0x80, one[3] = 0x3F; /* 1.0f */
}

/* Writes the checkpoint as tmp/NAME and frees its data; returns the path (malloc'ed). */
static char *write_ckpt(ckpt *c, const char *name)
{
    sw_buf b = {0};
    sw_st_file(&b, c->t, c->n, NULL);
    char *path = sw_path(tmp, name);
    cr_assert_eq(sw_write_file(path, b.data, b.len), 0);
    sw_free(&b);
    for (size_t i = 0; i < c->n; i++) free(c->data[i]);
    c->n = 0;
    return path;
}

/* Parses "recipe: 1\nsources:\n  base: PATH\n" + body and builds the plan; returns its status
 * (the plan, when built, in *out; else NULL). */
static nf_status build(const char *source, const char *body, nf_recipe **recipe, nf_plan **out, nf_error *err)
{
    char text[4096];
    snprintf(text, sizeof text, "recipe: 1\nsources:\n  base: %s\n%s", source, body);
    cr_assert_eq(nf_recipe_parse(text, strlen(text), "plan.yaml", tmp, recipe, err), NF_OK, "%s", err->message);
    *out = NULL;
    return nf_plan_build(*recipe, out, err);
}

static void expect_error(const char *source, const char *body, nf_status status, const char *const *needles,
                         size_t nneedles, size_t problems)
{
    nf_recipe *r = NULL;
    nf_plan *p = NULL;
    nf_error err;
    nf_status st = build(source, body, &r, &p, &err);
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
    ckpt c = {0};
    add_nvfp4(&c, "c", 128, 64);
    add(&c, "norm.weight", "BF16", 1, 64, 0, 2);
    char *src = write_ckpt(&c, "ok.safetensors");
    nf_recipe *r = NULL;
    nf_plan *p = NULL;
    nf_error err;
    cr_assert_eq(build(src, "rules:\n  - match: c.weight\n    format: nvfp4\n", &r, &p, &err), NF_OK, "%s",
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
    ckpt c = {0};
    add_nvfp4(&c, "a", 100, 64);
    add_nvfp4(&c, "b", 60, 128);
    add_nvfp4(&c, "c", 128, 64); /* fine */
    add(&c, "norm.weight", "BF16", 1, 64, 0, 2);
    char *src = write_ckpt(&c, "nv.safetensors");
    static const char *const needles[] = {"a.weight", "b.weight", "128", "plan.yaml"};
    expect_error(src, "rules:\n  - match: [a.weight, b.weight, c.weight]\n    format: nvfp4\n", NF_ERR_INVALID,
                 needles, 4, 2);
    /* c.weight is not among the problems */
    nf_recipe *r = NULL;
    nf_plan *p = NULL;
    nf_error err;
    build(src, "rules:\n  - match: [a.weight, b.weight, c.weight]\n    format: nvfp4\n", &r, &p, &err);
    cr_assert_null(strstr(err.message, "c.weight"), "%s", err.message);
    nf_recipe_free(r);
    free(src);
}

/* ---------------------------------------------------------------- grouped formats */
Test(convert_plan, q4_on_a_rank1_tensor_names_it)
{
    ckpt c = {0};
    add(&c, "w.weight", "BF16", 2, 4, 128, 2);
    add(&c, "ln.weight", "BF16", 1, 128, 0, 2);
    char *src = write_ckpt(&c, "r1.safetensors");
    static const char *const needles[] = {"ln.weight", "rank-2"};
    expect_error(src, "rules:\n  - match: \"*\"\n    format: q4_g64_fp16\n", NF_ERR_INVALID, needles, 2, 1);
    free(src);
}

Test(convert_plan, q4_on_every_rank1_tensor_lists_them_all)
{
    ckpt c = {0};
    add(&c, "w.weight", "BF16", 2, 4, 128, 2);
    add(&c, "ln1.weight", "BF16", 1, 128, 0, 2);
    add(&c, "ln2.weight", "F32", 1, 70, 0, 4);
    add(&c, "ln3.bias", "BF16", 1, 5, 0, 2);
    char *src = write_ckpt(&c, "r1s.safetensors");
    static const char *const needles[] = {"ln1.weight", "ln2.weight", "ln3.bias"};
    expect_error(src, "defaults: {format: q4_g64_fp16}\n", NF_ERR_INVALID, needles, 3, 3);
    free(src);
}

Test(convert_plan, grouped_absmax_on_q2_requires_import_encoded)
{
    ckpt c = {0};
    add(&c, "w.weight", "BF16", 2, 4, 128, 2);
    add(&c, "v.weight", "BF16", 2, 8, 64, 2);
    char *src = write_ckpt(&c, "q2.safetensors");
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
    ckpt c = {0};
    add(&c, "a.weight", "BF16", 2, 4, 128, 2);
    add(&c, "b.weight", "BF16", 2, 4, 128, 2);
    add(&c, "c.weight", "BF16", 2, 4, 128, 2);
    add(&c, "d.weight", "BF16", 2, 128, 64, 2);
    char *src = write_ckpt(&c, "mix.safetensors");
    static const char *const needles[] = {"a.weight", "q2_g64_fp16", "b.weight", "cast_direct", "c.weight",
                                          "fp8_row_maxabs", "d.weight", "companions"};
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
    ckpt c = {0};
    add(&c, "w.weight", "BF16", 2, 9, 130, 2);
    add(&c, "ln.weight", "F32", 1, 130, 0, 4);
    char *src = write_ckpt(&c, "ok2.safetensors");
    nf_recipe *r = NULL;
    nf_plan *p = NULL;
    nf_error err;
    cr_assert_eq(build(src,
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
