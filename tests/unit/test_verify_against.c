/* nf_verify_against (ninfer/convert.h): an artifact converted by the test from a small
 * safetensors checkpoint, re-derived and compared bit for bit (docs/ninfer-verify.md,
 * "Re-deriving with --against"):
 *   - it verifies clean against its own checkpoint, from provenance.objects and with the recipe;
 *   - a source with one changed value gives one "against" problem naming that object;
 *   - a source missing a tensor: a problem naming the object that cannot be re-derived (with the
 *     recipe: the plan's problem, its rule matching nothing);
 *   - a recipe whose resource path needs ${VAR} is refused without allow_env, accepted with it;
 *   - an object the recipe does not produce;
 *   - usage: recipe options without a recipe, no source; an unreadable source;
 *   - the objects filter: only the ids asked for are compared (with and without the recipe). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "support/plan_ckpt.h"
#include "support/source_writer.h"

#define ENV_VAR "NINFER_TEST_AGAINST_DIR"

static const uint8_t ARTIFACT_ID[16] = {0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe,
                                        0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe};

/* The rules of every recipe here: q8 for a, q4 searched scales for b, the norm kept exact, and a
 * resource whose path is under ${ENV_VAR} (the test's directory). */
static const char *RULES = "defaults: {format: bf16}\n"
                           "rules:\n"
                           "  - match: a.weight\n"
                           "    format: q8_g32_fp16\n"
                           "  - match: b.weight\n"
                           "    format: q4_g64_fp16\n"
                           "    method: grouped_search\n"
                           "    with: {negative_scales: true}\n"
                           "  - match: n.weight\n"
                           "    format: fp32\n";

/* Overwrites the last tensor added with small values (pc_add's bytes read as F32 or BF16 are
 * too large for binary16 scales): (i * 7 + seed) mod 61 - 30, over 64. */
static void small_values(pc_ckpt *c, size_t count, bool bf16, unsigned seed)
{
    uint8_t *p = c->data[c->n - 1];
    for (size_t i = 0; i < count; i++) {
        float v = (float)((int)((i * 7 + seed) % 61) - 30) / 64.0f;
        uint32_t bits;
        memcpy(&bits, &v, 4);
        if (bf16) {
            uint16_t h = (uint16_t)(bits >> 16); /* exact: these values have 8 significant bits */
            memcpy(p + 2 * i, &h, 2);
        } else {
            memcpy(p + 4 * i, &bits, 4);
        }
    }
}

/* The checkpoint: change_b sets one value of b.weight to 0.5 (none of its own: they are at most
 * 30/64 in magnitude); with_b false leaves b.weight out. */
static char *write_ckpt(const char *name, bool change_b, bool with_b)
{
    pc_ckpt c = {0};
    pc_add(&c, "a.weight", "F32", 2, 8, 64, 4);
    small_values(&c, 8 * 64, false, 0);
    if (with_b) {
        pc_add(&c, "b.weight", "BF16", 2, 4, 64, 2);
        small_values(&c, 4 * 64, true, 0);
        if (change_b) {
            uint16_t half = 0x3F00; /* 0.5 in bfloat16 */
            memcpy((uint8_t *)c.data[c.n - 1] + 2 * 70, &half, 2);
        }
    }
    pc_add(&c, "n.weight", "F32", 1, 64, 0, 4);
    small_values(&c, 64, false, 3);
    return pc_write(&c, pc_dir, name);
}

/* Writes DIR/NAME (a recipe whose base is source; with_resource adds notes.txt through
 * ${ENV_VAR}) and returns its path. */
static char *write_recipe(const char *name, const char *source, bool with_resource)
{
    char text[4096];
    snprintf(text, sizeof text, "recipe: 1\nsources:\n  base: %s\n%s%s", source,
             with_resource ? "components:\n  text:\n    config: {}\n    resources: {notes.txt: \"${" ENV_VAR
                             "}/notes.txt\"}\n"
                           : "",
             RULES);
    char *path = sw_path(pc_dir, name);
    cr_assert_eq(sw_write_file(path, text, strlen(text)), 0);
    return path;
}

/* Converts recipe (loaded with ENV_VAR allowed) into DIR/m.ninfer; returns the entry's path. */
static char *convert(const char *recipe_path)
{
    const char *allow[] = {ENV_VAR};
    nf_recipe_options ro = {.allow_env = allow, .nallow_env = 1};
    nf_recipe *r = NULL;
    nf_plan *p = NULL;
    nf_error err;
    cr_assert_eq(nf_recipe_load_ex(recipe_path, &ro, &r, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_plan_build(r, &p, &err), NF_OK, "%s", err.message);
    char *out = sw_path(pc_dir, "m.ninfer");
    nf_convert_options o;
    memset(&o, 0, sizeof o);
    o.output = out;
    o.threads = 1;
    o.artifact_id = ARTIFACT_ID;
    cr_assert_eq(nf_plan_execute(p, &o, &err), NF_OK, "%s", err.message);
    nf_plan_free(p);
    nf_recipe_free(r);
    return out;
}

typedef struct fixture {
    char *ckpt, *recipe, *artifact;
    nf_artifact *a;
} fixture;

static fixture fx;

/* The artifact made with the resource (ENV_VAR set and allowed), and verified valid first as
 * ninfer-verify does. */
static void setup(void)
{
    pc_dir_make();
    cr_assert_eq(setenv(ENV_VAR, pc_dir, 1), 0);
    char *notes = sw_path(pc_dir, "notes.txt");
    cr_assert_eq(sw_write_file(notes, "notes\n", 6), 0);
    free(notes);
    fx.ckpt = write_ckpt("m.safetensors", false, true);
    fx.recipe = write_recipe("r.yaml", fx.ckpt, true);
    fx.artifact = convert(fx.recipe);
    nf_verify_report r;
    nf_error err;
    cr_assert_eq(nf_verify_artifact(fx.artifact, NF_VERIFY_CHECKSUMS, &r, &err), NF_OK, "%s", err.message);
    cr_assert(r.valid, "the converted artifact is valid");
    nf_verify_report_free(&r);
    cr_assert_eq(nf_artifact_open(fx.artifact, NF_READ_PREAD, &fx.a, &err), NF_OK, "%s", err.message);
}

static void teardown(void)
{
    nf_artifact_close(fx.a);
    free(fx.ckpt);
    free(fx.recipe);
    free(fx.artifact);
    memset(&fx, 0, sizeof fx);
    pc_dir_remove();
}

TestSuite(verify_against, .init = setup, .fini = teardown);

/* Runs nf_verify_against on a fresh report; the status must be NF_OK (a verdict). */
static void against(const nf_verify_against_opts *o, nf_verify_report *r, nf_verify_against_result *res)
{
    memset(r, 0, sizeof *r);
    r->valid = true;
    nf_error err;
    nf_status st = nf_verify_against(fx.a, o, r, res, &err);
    cr_assert_eq(st, NF_OK, "status %s: %s", nf_status_name(st), err.message);
}

static void expect_clean(const nf_verify_report *r)
{
    for (size_t i = 0; i < r->count; i++)
        cr_log_error("problem: %s: %s: %s", r->problems[i].object ? r->problems[i].object : "-", r->problems[i].check,
                     r->problems[i].message);
    cr_assert(r->valid);
    cr_assert_eq(r->count, 0);
}

/* The problems about the source's files (docs/provenance.md, "Checking a source"): they come
 * first, before any re-derived object's. */
static size_t source_file_problems(const nf_verify_report *r)
{
    size_t n = 0;
    while (n < r->count && strncmp(r->problems[n].message, "source file ", 12) == 0) n++;
    return n;
}

/* The one problem of r besides the source files' (files the source has with other bytes than
 * the artifact records: `files` of them), of check "against", about object (NULL: the artifact),
 * whose message holds needle. */
static void expect_one_after(const nf_verify_report *r, size_t files, const char *object, const char *needle)
{
    cr_assert_not(r->valid);
    cr_assert_eq(source_file_problems(r), files, "%zu problems about the source's files, got %zu (the first: %s)",
                 files, source_file_problems(r), r->count ? r->problems[0].message : "none");
    cr_assert_eq(r->count, files + 1, "one problem, got %zu (the first: %s: %s)", r->count - files,
                 r->count > files && r->problems[files].object ? r->problems[files].object : "-",
                 r->count > files ? r->problems[files].message : "none");
    const nf_problem *p = &r->problems[files];
    cr_assert_str_eq(p->check, "against");
    if (object)
        cr_assert(p->object && strcmp(p->object, object) == 0, "the problem names %s, not %s: %s", object,
                  p->object ? p->object : "no object", p->message);
    else cr_assert_null(p->object, "a problem of the artifact as a whole, not of %s: %s", p->object, p->message);
    cr_assert_not_null(strstr(p->message, needle), "'%s' not in: %s", needle, p->message);
}

static void expect_one(const nf_verify_report *r, const char *object, const char *needle)
{
    expect_one_after(r, 0, object, needle);
}

Test(verify_against, clean_from_provenance)
{
    nf_verify_against_opts o = {.source = fx.ckpt, .threads = 2};
    nf_verify_report r;
    nf_verify_against_result res;
    against(&o, &r, &res);
    expect_clean(&r);
    cr_assert_eq(res.objects_rederived, 3, "every tensor re-derived");
    cr_assert_eq(res.recipe_matches_provenance, -1);
    cr_assert_eq(res.source_digests, 1, "the source's one file has the recorded SHA-256");
    cr_assert_eq(res.source_files_checked, 1);
    cr_assert_eq(res.source_files_unrecorded, 0);
    cr_assert_eq(res.nresources_not_compared, 1, "the resource is not compared without a recipe");
    cr_assert_str_eq(res.resources_not_compared[0], "notes.txt");
    nf_verify_against_result_free(&res);
    nf_verify_report_free(&r);
}

Test(verify_against, clean_with_recipe)
{
    const char *allow[] = {ENV_VAR};
    nf_verify_against_opts o = {.source = fx.ckpt, .recipe = fx.recipe, .allow_env = allow, .nallow_env = 1};
    nf_verify_report r;
    nf_verify_against_result res;
    against(&o, &r, &res);
    expect_clean(&r);
    cr_assert_eq(res.objects_rederived, 4, "the tensors and the resource");
    cr_assert_eq(res.nresources_not_compared, 0);
    cr_assert_eq(res.recipe_matches_provenance, 1, "the recipe the artifact was made with");
    nf_verify_against_result_free(&res);
    nf_verify_report_free(&r);
}

/* The same verdict for a NULL result and a NULL err. */
Test(verify_against, clean_without_result_or_err)
{
    nf_verify_against_opts o = {.source = fx.ckpt};
    nf_verify_report r = {.valid = true};
    cr_assert_eq(nf_verify_against(fx.a, &o, &r, NULL, NULL), NF_OK);
    expect_clean(&r);
    nf_verify_report_free(&r);
}

Test(verify_against, changed_value_names_the_object)
{
    char *changed = write_ckpt("changed.safetensors", true, true);
    nf_verify_against_opts o = {.source = changed};
    nf_verify_report r;
    nf_verify_against_result res;
    against(&o, &r, &res);
    /* a file of another name: the one recorded is not there (a problem, first), this one not recorded */
    expect_one_after(&r, 1, "b.weight", "re-derived bytes differ from the artifact's, first at object byte");
    cr_assert_not_null(strstr(r.problems[0].message, "m.safetensors: the artifact was made from it"));
    cr_assert_eq(res.source_digests, 0);
    cr_assert_eq(res.source_files_unrecorded, 1);
    cr_assert_eq(res.objects_rederived, 3);
    nf_verify_against_result_free(&res);
    nf_verify_report_free(&r);
    free(changed);
}

Test(verify_against, source_missing_a_tensor)
{
    char *partial = write_ckpt("partial.safetensors", false, false);
    nf_verify_against_opts o = {.source = partial};
    nf_verify_report r;
    nf_verify_against_result res;
    against(&o, &r, &res);
    expect_one_after(&r, 1, "b.weight", "is not a tensor of");
    cr_assert_eq(res.objects_rederived, 2, "the others are still compared");
    nf_verify_against_result_free(&res);
    nf_verify_report_free(&r);
    /* with the recipe: its rule for b.weight matches nothing, a problem of the plan */
    const char *allow[] = {ENV_VAR};
    nf_verify_against_opts ro = {.source = partial, .recipe = fx.recipe, .allow_env = allow, .nallow_env = 1};
    against(&ro, &r, &res);
    expect_one_after(&r, 1, NULL, "selector 'b.weight' (rules[1]) matches no tensor");
    nf_verify_against_result_free(&res);
    nf_verify_report_free(&r);
    free(partial);
}

Test(verify_against, recipe_needing_allow_env_refused_without_it)
{
    nf_verify_against_opts o = {.source = fx.ckpt, .recipe = fx.recipe};
    nf_verify_report r;
    nf_verify_against_result res;
    against(&o, &r, &res);
    expect_one(&r, NULL, "environment variable '" ENV_VAR "' is not allowed by the command line");
    char *expanded = sw_path(pc_dir, "notes.txt");
    cr_assert_null(strstr(r.problems[0].message, expanded), "the variable's value is never echoed: %s",
                   r.problems[0].message);
    free(expanded);
    cr_assert_eq(res.objects_rederived, 0, "nothing planned");
    nf_verify_against_result_free(&res);
    nf_verify_report_free(&r);
}

Test(verify_against, recipe_options_without_recipe_are_usage_errors)
{
    const char *allow[] = {ENV_VAR};
    nf_verify_against_opts o = {.source = fx.ckpt, .allow_env = allow, .nallow_env = 1};
    nf_verify_report r = {.valid = true};
    nf_error err;
    cr_assert_eq(nf_verify_against(fx.a, &o, &r, NULL, &err), NF_ERR_USAGE);
    cr_assert_eq(r.count, 0);
    nf_verify_against_opts none = {0};
    cr_assert_eq(nf_verify_against(fx.a, &none, &r, NULL, &err), NF_ERR_USAGE);
    cr_assert_eq(nf_verify_against(fx.a, NULL, &r, NULL, NULL), NF_ERR_USAGE);
    cr_assert(r.valid);
}

/* A source that does not exist is a system error, not a verdict. */
Test(verify_against, unreadable_source_is_an_error)
{
    char *missing = sw_path(pc_dir, "no-such.safetensors");
    nf_verify_against_opts o = {.source = missing};
    nf_verify_report r = {.valid = true};
    nf_verify_against_result res;
    nf_error err;
    nf_status st = nf_verify_against(fx.a, &o, &r, &res, &err);
    cr_assert_eq(st, NF_ERR_IO, "status %s: %s", nf_status_name(st), err.message);
    cr_assert_eq(res.nresources_not_compared, 0);
    cr_assert_null(res.resources_not_compared);
    nf_verify_report_free(&r);
    free(missing);
}

/* A recipe without the resource: the artifact's resource is an object it does not produce, and
 * the recipe differs from provenance.recipe. */
Test(verify_against, object_the_recipe_does_not_produce)
{
    char *plain = write_recipe("plain.yaml", fx.ckpt, false);
    nf_verify_against_opts o = {.source = fx.ckpt, .recipe = plain};
    nf_verify_report r;
    nf_verify_against_result res;
    against(&o, &r, &res);
    expect_one(&r, "notes.txt", "not produced by the recipe");
    cr_assert_eq(res.objects_rederived, 3);
    cr_assert_eq(res.recipe_matches_provenance, 0);
    nf_verify_against_result_free(&res);
    nf_verify_report_free(&r);
    free(plain);
}

/* opts.objects (ninfer-verify --plan --task): only the ids listed are re-derived and compared; a
 * changed b.weight is reported when b.weight is asked for, not otherwise; an id the artifact has
 * not is a problem; an empty list compares nothing. */
Test(verify_against, objects_filter_from_provenance)
{
    char *changed = write_ckpt("changed.safetensors", true, true);
    const char *ab[] = {"a.weight", "b.weight", "a.weight"}, *an[] = {"a.weight", "n.weight", "notes.txt"};
    nf_verify_report r;
    nf_verify_against_result res;
    nf_verify_against_opts o = {.source = changed, .objects = ab, .nobjects = 3};
    against(&o, &r, &res);
    expect_one(&r, "b.weight", "re-derived bytes differ from the artifact's");
    cr_assert_eq(res.objects_rederived, 2, "each id once");
    cr_assert_eq(res.nresources_not_compared, 0, "the resource was not asked for");
    nf_verify_against_result_free(&res);
    nf_verify_report_free(&r);

    o = (nf_verify_against_opts){.source = changed, .objects = an, .nobjects = 3};
    against(&o, &r, &res);
    expect_clean(&r);
    cr_assert_eq(res.objects_rederived, 2);
    cr_assert_eq(res.nresources_not_compared, 1, "notes.txt asked for, not compared");
    nf_verify_against_result_free(&res);
    nf_verify_report_free(&r);

    o = (nf_verify_against_opts){.source = changed, .objects = an, .nobjects = 0};
    against(&o, &r, &res);
    expect_clean(&r);
    cr_assert_eq(res.objects_rederived, 0, "an empty list: nothing");
    nf_verify_against_result_free(&res);
    nf_verify_report_free(&r);

    const char *missing[] = {"a.weight", "z.weight"};
    o = (nf_verify_against_opts){.source = fx.ckpt, .objects = missing, .nobjects = 2};
    against(&o, &r, &res);
    expect_one(&r, "z.weight", "the artifact has no such object");
    cr_assert_eq(res.objects_rederived, 1);
    nf_verify_against_result_free(&res);
    nf_verify_report_free(&r);
    free(changed);
}

Test(verify_against, objects_filter_with_recipe)
{
    char *changed = write_ckpt("changed.safetensors", true, true);
    const char *allow[] = {ENV_VAR};
    const char *a[] = {"a.weight", "notes.txt"}, *b[] = {"b.weight"};
    nf_verify_report r;
    nf_verify_against_result res;
    nf_verify_against_opts o =
        {.source = changed, .recipe = fx.recipe, .allow_env = allow, .nallow_env = 1, .objects = a, .nobjects = 2};
    against(&o, &r, &res);
    expect_clean(&r);
    cr_assert_eq(res.objects_rederived, 2, "a tensor and the resource");
    nf_verify_against_result_free(&res);
    nf_verify_report_free(&r);

    o.objects = b;
    o.nobjects = 1;
    against(&o, &r, &res);
    expect_one(&r, "b.weight", "re-derived bytes differ from the artifact's");
    cr_assert_eq(res.objects_rederived, 1);
    nf_verify_against_result_free(&res);
    nf_verify_report_free(&r);
    free(changed);
}
