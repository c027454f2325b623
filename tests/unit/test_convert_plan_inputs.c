/* What planning takes from its inputs and how it says so (the input side of docs/security.md 1.3,
 * "Trust boundaries"): an NVFP4 checkpoint holding both code tensors of one weight is refused
 * (M9); a plan re-encoding an already encoded source says so per object (M5); the content
 * digest that SOURCE_DATE_EPOCH ids are derived from binds the bytes the plan reads (F13).
 * Checkpoints are small safetensors files written by the test; recipes are parsed from text. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "support/plan_ckpt.h"
#include "support/source_writer.h"

TestSuite(plan_inputs, .init = pc_dir_make, .fini = pc_dir_remove);

static void add_one_f32(pc_ckpt *c, const char *name)
{
    pc_add(c, name, "F32", 0, 0, 0, 4);
    uint8_t *one = c->data[c->n - 1];
    one[0] = 0x00, one[1] = 0x00, one[2] = 0x80, one[3] = 0x3F; /* 1.0f */
}

/* ---------------------------------------------------------------- M9: both NVFP4 code tensors */
/* A checkpoint holding <p>.weight (ModelOpt) and <p>.weight_packed (compressed-tensors) for the
 * same weight would be imported twice, once per convention, without a word: refused, naming
 * both tensors, whichever of the two the rules select. */
static void nvfp4_both_forms(pc_ckpt *c)
{
    pc_add(c, "p.weight", "U8", 2, 128, 32, 1);
    pc_add(c, "p.weight_scale", "F8_E4M3", 2, 128, 4, 1);
    add_one_f32(c, "p.weight_scale_2");
    pc_add(c, "p.weight_packed", "U8", 2, 128, 32, 1);
    add_one_f32(c, "p.weight_global_scale");
    pc_add(c, "norm.weight", "BF16", 1, 64, 0, 2);
}

static void expect_both_forms_refused(const char *rules)
{
    pc_ckpt c = {0};
    nvfp4_both_forms(&c);
    char *src = pc_write(&c, pc_dir, "both.safetensors");
    nf_recipe *r = NULL;
    nf_plan *p = NULL;
    nf_error err;
    nf_status st = pc_build(pc_dir, src, rules, &r, &p, &err);
    cr_assert_eq(st, NF_ERR_INVALID, "%s", st == NF_OK ? "planned twice" : err.message);
    cr_assert_null(p);
    cr_assert(strstr(err.message, "'p.weight'"), "%s", err.message);
    cr_assert(strstr(err.message, "'p.weight_packed'"), "%s", err.message);
    cr_assert(strstr(err.message, "both"), "%s", err.message);
    nf_recipe_free(r);
    free(src);
}

Test(plan_inputs, nvfp4_weight_and_weight_packed_refused)
{
    expect_both_forms_refused("rules:\n  - match: [p.weight, p.weight_packed]\n    format: nvfp4\n");
}

Test(plan_inputs, nvfp4_weight_packed_alone_refused_when_weight_exists)
{
    expect_both_forms_refused("rules:\n  - match: p.weight_packed\n    format: nvfp4\n"
                              "  - match: p.weight\n    skip: true\n");
}

Test(plan_inputs, nvfp4_modelopt_alone_still_plans)
{
    pc_ckpt c = {0};
    pc_add(&c, "p.weight", "U8", 2, 128, 32, 1);
    pc_add(&c, "p.weight_scale", "F8_E4M3", 2, 128, 4, 1);
    add_one_f32(&c, "p.weight_scale_2");
    char *src = pc_write(&c, pc_dir, "one.safetensors");
    nf_recipe *r = NULL;
    nf_plan *p = NULL;
    nf_error err;
    cr_assert_eq(pc_build(pc_dir, src, "rules:\n  - match: p.weight\n    format: nvfp4\n", &r, &p, &err), NF_OK, "%s",
                 err.message);
    cr_assert_eq(nf_plan_object_count(p), 1);
    nf_plan_free(p);
    nf_recipe_free(r);
    free(src);
}

/* ---------------------------------------------------------------- M5: re-encoded sources */
/* The note of the plan's object `id` (NULL when it has none). */
static const char *note_of(json_t *d, const char *id)
{
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(d, "objects"), i, o)
    {
        if (strcmp(json_string_value(json_object_get(o, "id")), id) == 0)
            return json_string_value(json_object_get(o, "note"));
    }
    cr_assert_fail("no object %s", id);
    return NULL;
}

/* A GGUF block tensor converted by anything but import_encoded is dequantized by ggml's code and
 * encoded again: the plan says so per object, as it says when the blocks are imported. */
Test(plan_inputs, gguf_block_tensor_reencoded_has_a_note)
{
    static uint8_t q8[2 * 34];
    static float f[32];
    sw_gguf_tensor t[3] = {
        {"blk.0.w", 8 /* Q8_0 */, 2, {32, 2, 0, 0}, q8, sizeof q8},
        {"blk.1.w", 8, 2, {32, 2, 0, 0}, q8, sizeof q8},
        {"norm", 0 /* F32 */, 1, {32, 0, 0, 0}, f, sizeof f},
    };
    sw_buf b = {0};
    sw_gguf_file(&b, 32, t, 3);
    char *path = sw_path(pc_dir, "m.gguf");
    cr_assert_eq(sw_write_file(path, b.data, b.len), 0);
    sw_free(&b);
    nf_recipe *r = NULL;
    nf_plan *p = NULL;
    nf_error err;
    cr_assert_eq(pc_build(pc_dir, path,
                          "rules:\n  - match: blk.1.w\n    format: gguf_q8_0\n  - match: norm\n    format: fp32\n", &r,
                          &p, &err),
                 NF_OK, "%s", err.message);
    json_t *d = nf_plan_describe(p);
    const char *n0 = note_of(d, "blk.0.w");
    cr_assert_not_null(n0, "bf16 from Q8_0 without a note");
    cr_assert(strstr(n0, "requantized from Q8_0") && strstr(n0, "bf16"), "%s", n0);
    cr_assert(strstr(n0, "gguf_q8_0"), "the note names the exact import: %s", n0);
    const char *n1 = note_of(d, "blk.1.w");
    cr_assert(n1 && !strcmp(n1, "GGUF Q8_0 blocks imported as they are"), "imported exactly: %s", n1 ? n1 : "no note");
    cr_assert_null(note_of(d, "norm"), "F32 to fp32: no note");
    json_decref(d);
    nf_plan_free(p);
    nf_recipe_free(r);
    free(path);
}

/* An F8_E4M3 weight with a weight_scale is a quantized weight (docs/dialects.md): turning it into
 * another format requantizes its values, which only a rule naming the method may ask for; an F8
 * tensor without a scale is a tensor of its own, whose codes a q8 format quantizes again. */
Test(plan_inputs, fp8_weight_requantized_only_when_a_rule_names_the_method)
{
    pc_ckpt c = {0};
    pc_add(&c, "x.weight", "F8_E4M3", 2, 4, 64, 1);
    pc_add(&c, "x.weight_scale", "F32", 2, 4, 1, 4);
    pc_add(&c, "y.weight", "F8_E4M3", 2, 4, 64, 1);
    pc_add(&c, "z.weight", "BF16", 2, 4, 64, 2);
    char *src = pc_write(&c, pc_dir, "fp8.safetensors");
    nf_recipe *r = NULL;
    nf_plan *p = NULL;
    nf_error err;
    /* the defaults' bf16 with the natural cast_direct: refused, naming the tensor and both ways */
    cr_assert_eq(
        pc_build(pc_dir, src, "rules:\n  - match: [y.weight, z.weight]\n    format: q8_g32_fp16\n", &r, &p, &err),
        NF_ERR_INVALID);
    cr_assert(strstr(err.message, "'x.weight'") && strstr(err.message, "compressed_tensors_fp8") &&
                  strstr(err.message, "import_encoded") && strstr(err.message, "--requantize"),
              "%s", err.message);
    nf_recipe_free(r);
    r = NULL;
    cr_assert_eq(pc_build(pc_dir, src,
                          "rules:\n  - match: [y.weight, z.weight]\n    format: q8_g32_fp16\n"
                          "  - match: x.weight\n    format: bf16\n    method: cast_direct\n",
                          &r, &p, &err),
                 NF_OK, "%s", err.message);
    json_t *d = nf_plan_describe(p);
    const char *nx = note_of(d, "x.weight");
    cr_assert(nx && strstr(nx, "compressed_tensors_fp8") && strstr(nx, "requantized from its values"), "%s",
              nx ? nx : "(none)");
    const char *ny = note_of(d, "y.weight");
    cr_assert(ny && strstr(ny, "requantized from F8_E4M3"), "%s", ny ? ny : "(none)");
    cr_assert_null(note_of(d, "z.weight"), "BF16 to q8 is the conversion asked for: no note");
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(d, "objects"), i, o)
    {
        const char *id = json_string_value(json_object_get(o, "id"));
        cr_assert(strcmp(id, "x.weight_scale") != 0, "a companion is never an object");
        if (!strcmp(id, "x.weight")) cr_assert_str_eq(json_string_value(json_object_get(o, "handling")), "requantized");
    }
    json_decref(d);
    nf_plan_free(p);
    nf_recipe_free(r);
    free(src);
}

/* ---------------------------------------------------------------- F13: the content digest */
/* With SOURCE_DATE_EPOCH the artifact id is derived from nf_plan_content_digest: it must change
 * with the weights (two checkpoints with the same names, shapes and dtypes used to get the same
 * id, so an entry of one passed `verify --quick` with the parts of the other), with a companion
 * an import reads, with a resource's bytes and with the config, and stay the same for the same
 * inputs. */
static void digest_of(unsigned seed, unsigned scale_seed, const char *tok, const char *cfg, uint8_t out[16])
{
    pc_ckpt c = {0};
    pc_add_seeded(&c, "w.weight", "BF16", 2, 4, 64, 2, seed);
    pc_add(&c, "p.weight", "U8", 2, 128, 32, 1);
    pc_add_seeded(&c, "p.weight_scale", "F8_E4M3", 2, 128, 4, 1, scale_seed);
    add_one_f32(&c, "p.weight_scale_2");
    char *src = pc_write(&c, pc_dir, "d.safetensors");
    cr_assert_eq(sw_write_text(pc_dir, "tok.json", tok), 0);
    cr_assert_eq(sw_write_text(pc_dir, "config.json", cfg), 0);
    nf_recipe *r = NULL;
    nf_plan *p = NULL;
    nf_error err;
    cr_assert_eq(
        pc_build(pc_dir, src,
                 "components:\n  text:\n    config: {from: base}\n    resources: {tok: ./tok.json}\n"
                 "rules:\n  - match: w.weight\n    format: q8_g32_fp16\n  - match: p.weight\n    format: nvfp4\n",
                 &r, &p, &err),
        NF_OK, "%s", err.message);
    cr_assert_eq(nf_plan_content_digest(p, out, &err), NF_OK, "%s", err.message);
    nf_plan_free(p);
    nf_recipe_free(r);
    free(src);
}

Test(plan_inputs, content_digest_binds_the_bytes_read)
{
    uint8_t a[16], b[16], weights[16], scales[16], res[16], cfg[16];
    digest_of(0, 0, "{}", "{\"h\": 1}", a);
    digest_of(0, 0, "{}", "{\"h\": 1}", b);
    cr_assert_arr_eq(a, b, 16, "the same inputs, the same digest");
    digest_of(1, 0, "{}", "{\"h\": 1}", weights);
    cr_assert_arr_neq(a, weights, 16, "other weights, same names and shapes");
    digest_of(0, 1, "{}", "{\"h\": 1}", scales);
    cr_assert_arr_neq(a, scales, 16, "another companion scale tensor");
    digest_of(0, 0, "{\"x\": 1}", "{\"h\": 1}", res);
    cr_assert_arr_neq(a, res, 16, "another resource");
    digest_of(0, 0, "{}", "{\"h\": 2}", cfg);
    cr_assert_arr_neq(a, cfg, 16, "another config");
}

/* A requantized quantized weight reads its companions when it is encoded (docs/dialects.md):
 * the digest binds them too. */
static void fp8_digest_of(unsigned scale_seed, uint8_t out[16])
{
    pc_ckpt c = {0};
    pc_add(&c, "q.weight", "F8_E4M3", 2, 4, 64, 1);
    pc_add_seeded(&c, "q.weight_scale_inv", "F32", 2, 1, 1, 4, scale_seed);
    char *src = pc_write(&c, pc_dir, "ds.safetensors");
    nf_recipe *r = NULL;
    nf_plan *p = NULL;
    nf_error err;
    cr_assert_eq(pc_build(pc_dir, src,
                          "rules:\n  - match: q.weight\n    format: q8_g32_fp16\n    method: grouped_absmax\n", &r, &p,
                          &err),
                 NF_OK, "%s", err.message);
    cr_assert_eq(nf_plan_content_digest(p, out, &err), NF_OK, "%s", err.message);
    nf_plan_free(p);
    nf_recipe_free(r);
    free(src);
}

Test(plan_inputs, content_digest_binds_a_requantized_weights_scales)
{
    uint8_t a[16], b[16];
    fp8_digest_of(0, a);
    fp8_digest_of(1, b);
    cr_assert_arr_neq(a, b, 16, "another weight_scale_inv");
}
