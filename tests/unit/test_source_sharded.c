/* Sharded safetensors checkpoints (model.safetensors.index.json) and checkpoint directories:
 * every listed tensor must be in its shard, every shard tensor listed, no name in two shards,
 * shard names confined to the index's directory; directories pick the index, else their only
 * *.safetensors; companion files (config.json, tokenizer files) are reported.  Each test builds
 * its checkpoint in a fresh temporary directory. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "support/source_writer.h"

static char *g_dir;

static void setup(void) { g_dir = sw_tempdir(); }
static void teardown(void)
{
    if (g_dir) sw_rmtree(g_dir);
    free(g_dir);
    g_dir = NULL;
}

static const uint16_t w_a[4] = {0x3F80, 0x4000, 0x4040, 0x4080}; /* 1 2 3 4 */
static const uint16_t w_b[2] = {0xBF80, 0xC000};                 /* -1 -2 */
static const uint32_t w_c[3] = {0x3F800000, 0, 0x40A00000};      /* 1 0 5 */

/* shard 1: a, b; shard 2: c (and extra, when given). */
static void write_shards(const char *extra_in_2)
{
    sw_st_tensor s1[2] = {
        {"model.a.weight", "BF16", 2, {2, 2}, w_a, sizeof w_a},
        {"model.b.weight", "BF16", 1, {2}, w_b, sizeof w_b},
    };
    sw_st_tensor s2[2] = {
        {"model.c.weight", "F32", 1, {3}, w_c, sizeof w_c},
        {extra_in_2 ? extra_in_2 : "", "BF16", 1, {2}, w_b, sizeof w_b},
    };
    sw_buf b = {0};
    sw_st_file(&b, s1, 2, "{\"format\":\"pt\"}");
    char *p = sw_path(g_dir, "model-00001-of-00002.safetensors");
    cr_assert_eq(sw_write_file(p, b.data, b.len), 0);
    free(p);
    sw_free(&b);
    sw_st_file(&b, s2, extra_in_2 ? 2 : 1, NULL);
    p = sw_path(g_dir, "model-00002-of-00002.safetensors");
    cr_assert_eq(sw_write_file(p, b.data, b.len), 0);
    free(p);
    sw_free(&b);
}

#define SHARD1 "model-00001-of-00002.safetensors"
#define SHARD2 "model-00002-of-00002.safetensors"
#define GOOD_MAP "\"model.a.weight\":\"" SHARD1 "\",\"model.c.weight\":\"" SHARD2 "\",\"model.b.weight\":\"" SHARD1 "\""

static void write_index(const char *weight_map_members)
{
    char text[2048];
    snprintf(text, sizeof text, "{\"metadata\":{\"total_size\":20},\"weight_map\":{%s}}", weight_map_members);
    cr_assert_eq(sw_write_text(g_dir, "model.safetensors.index.json", text), 0);
}

static nf_status open_path(const char *name, nf_source **s, nf_error *err)
{
    char *p = name ? sw_path(g_dir, name) : strdup(g_dir);
    *s = NULL;
    nf_status st = nf_source_open(p, s, err);
    free(p);
    return st;
}

static void expect_bad(const char *name, const char *needle)
{
    nf_source *s;
    nf_error err = {0};
    nf_status st = open_path(name, &s, &err);
    cr_assert_eq(st, NF_ERR_INVALID, "expected a failure mentioning '%s'; got %d: %s", needle, st, err.message);
    cr_assert_null(s);
    cr_assert(strstr(err.message, needle), "message \"%s\" does not mention \"%s\"", err.message, needle);
}

static void check_checkpoint(nf_source *s)
{
    cr_assert_eq(nf_source_kind_of(s), NF_SOURCE_SAFETENSORS);
    cr_assert_eq(nf_source_file_count(s), 2);
    cr_assert(strstr(nf_source_file_path(s, 0), SHARD1));
    cr_assert(strstr(nf_source_file_path(s, 1), SHARD2));
    cr_assert_eq(nf_source_tensor_count(s), 3);
    const nf_source_tensor *c = nf_source_find(s, "model.c.weight");
    cr_assert_not_null(c);
    cr_assert_eq(c->file, 1);
    cr_assert_eq(c->offset + c->bytes, nf_source_file_size(s, 1));
    float v[4];
    nf_error err = {0};
    cr_assert_eq(nf_source_read_f32(s, c, 0, 1, v, 4, &err), NF_OK, "%s", err.message);
    cr_assert(v[0] == 1.0f && v[1] == 0.0f && v[2] == 5.0f);
    const nf_source_tensor *a = nf_source_find(s, "model.a.weight");
    cr_assert_eq(a->file, 0);
    cr_assert_eq(nf_source_read_f32(s, a, 1, 2, v, 4, &err), NF_OK, "%s", err.message);
    cr_assert(v[0] == 3.0f && v[1] == 4.0f);
    cr_assert_str_eq(nf_source_st_metadata(s, 0, "format"), "pt");
    cr_assert_eq(nf_source_st_metadata_count(s, 1), 0);
    cr_assert_not_null(nf_source_index_path(s));
    cr_assert(strstr(nf_source_index_path(s), "model.safetensors.index.json"));
}

TestSuite(source_sharded, .init = setup, .fini = teardown);

Test(source_sharded, index_and_directory_open)
{
    write_shards(NULL);
    write_index(GOOD_MAP);
    cr_assert_eq(sw_write_text(g_dir, "config.json", "{\"model_type\":\"test\"}"), 0);
    cr_assert_eq(sw_write_text(g_dir, "tokenizer.json", "{}"), 0);
    cr_assert_eq(sw_write_text(g_dir, "tokenizer_config.json", "{}"), 0);
    nf_source *s;
    nf_error err = {0};
    cr_assert_eq(open_path("model.safetensors.index.json", &s, &err), NF_OK, "%s", err.message);
    check_checkpoint(s);
    nf_source_close(s);
    cr_assert_eq(open_path(NULL, &s, &err), NF_OK, "%s", err.message);
    check_checkpoint(s);
    const char *cfg = nf_source_companion(s, "config.json");
    cr_assert_not_null(cfg);
    cr_assert(strstr(cfg, g_dir) && strstr(cfg, "/config.json"), "%s", cfg);
    cr_assert_not_null(nf_source_companion(s, "tokenizer.json"));
    cr_assert_null(nf_source_companion(s, "tokenizer.model"));
    cr_assert_null(nf_source_companion(s, "weights.bin"));
    cr_assert_eq(nf_source_companion_count(s), 3);
    const char *name;
    cr_assert_not_null(nf_source_companion_at(s, 0, &name));
    cr_assert_str_eq(name, "config.json");
    cr_assert_null(nf_source_companion_at(s, 3, &name));
    nf_source_close(s);
}

Test(source_sharded, missing_shard)
{
    write_shards(NULL);
    write_index("\"model.a.weight\":\"" SHARD1 "\",\"model.z.weight\":\"model-00003-of-00003.safetensors\"");
    expect_bad("model.safetensors.index.json", "shard");
    nf_source *s;
    nf_error err = {0};
    cr_assert_eq(open_path("model.safetensors.index.json", &s, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "model-00003-of-00003.safetensors is missing"), "%s", err.message);
}

Test(source_sharded, tensor_listed_in_the_wrong_shard)
{
    write_shards(NULL);
    write_index("\"model.a.weight\":\"" SHARD1 "\",\"model.c.weight\":\"" SHARD1 "\",\"model.b.weight\":\"" SHARD2
                "\"");
    expect_bad("model.safetensors.index.json",
               "is listed in weight_map under shard " SHARD2 " but is stored in " SHARD1);
}

Test(source_sharded, unlisted_tensor)
{
    write_shards(NULL);
    write_index("\"model.a.weight\":\"" SHARD1 "\",\"model.c.weight\":\"" SHARD2 "\"");
    expect_bad("model.safetensors.index.json",
               "tensor 'model.b.weight' of shard " SHARD1 " is not listed in weight_map");
}

Test(source_sharded, listed_tensor_in_no_shard)
{
    write_shards(NULL);
    write_index(GOOD_MAP ",\"model.ghost\":\"" SHARD2 "\"");
    expect_bad("model.safetensors.index.json",
               "tensor 'model.ghost' is listed in weight_map under shard " SHARD2 ", which does not hold it");
}

Test(source_sharded, duplicate_name_across_shards)
{
    write_shards("model.a.weight");
    write_index(GOOD_MAP);
    expect_bad("model.safetensors.index.json", "tensor 'model.a.weight' is in two shards");
}

Test(source_sharded, bad_index_documents)
{
    write_shards(NULL);
    static const struct {
        const char *text, *needle;
    } cases[] = {
        {"[1]", "not a JSON object"},
        {"{\"metadata\":{}}", "no \"weight_map\" member"},
        {"{\"weight_map\":[]}", "\"weight_map\" is not an object"},
        {"{\"weight_map\":{}}", "lists no tensors"},
        {"{\"weight_map\":{\"a\":1}}", "weight_map[\"a\"] is not a string"},
        {"{\"weight_map\":{\"a\":\"../x.safetensors\"}}", "is not a file name in the index's directory"},
        {"{\"weight_map\":{\"a\":\"/etc/passwd\"}}", "is not a file name"},
        {"{\"weight_map\":{\"a\":\"..\"}}", "is not a file name"},
        {"{\"weight_map\":{\"a\":\"" SHARD1 "\",\"a\":\"" SHARD1 "\"}}", "duplicate object key"},
        {"{\"weight_map\":{\"a\":\"" SHARD1 "\"", "byte"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert_eq(sw_write_text(g_dir, "model.safetensors.index.json", cases[i].text), 0);
        expect_bad("model.safetensors.index.json", cases[i].needle);
    }
}

Test(source_sharded, corrupt_shard_is_named)
{
    write_shards(NULL);
    write_index(GOOD_MAP);
    static const char bad[] = "\x10\0\0\0\0\0\0\0{\"x\":5}         ";
    char *p = sw_path(g_dir, SHARD2);
    cr_assert_eq(sw_write_file(p, bad, sizeof bad - 1), 0);
    free(p);
    nf_source *s;
    nf_error err = {0};
    cr_assert_eq(open_path(NULL, &s, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, SHARD2 ": header byte 9: tensor 'x'"), "%s", err.message);
}

Test(source_sharded, directory_with_one_file)
{
    sw_st_tensor t[1] = {{"w", "BF16", 1, {4}, w_a, sizeof w_a}};
    sw_buf b = {0};
    sw_st_file(&b, t, 1, NULL);
    char *p = sw_path(g_dir, "model.safetensors");
    cr_assert_eq(sw_write_file(p, b.data, b.len), 0);
    sw_free(&b);
    cr_assert_eq(sw_write_text(g_dir, "config.json", "{}"), 0);
    cr_assert_eq(sw_write_text(g_dir, "tokenizer.model", "x"), 0);
    cr_assert_eq(sw_write_text(g_dir, ".hidden.safetensors", "junk"), 0);
    nf_source *s;
    nf_error err = {0};
    cr_assert_eq(open_path(NULL, &s, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_source_tensor_count(s), 1);
    cr_assert_str_eq(nf_source_file_path(s, 0), p);
    cr_assert_null(nf_source_index_path(s));
    cr_assert_not_null(nf_source_companion(s, "config.json"));
    cr_assert_not_null(nf_source_companion(s, "tokenizer.model"));
    nf_source_close(s);
    /* The file itself, opened directly, reports the same companions. */
    cr_assert_eq(nf_source_open(p, &s, &err), NF_OK, "%s", err.message);
    cr_assert_not_null(nf_source_companion(s, "config.json"));
    nf_source_close(s);
    free(p);
}

Test(source_sharded, directory_without_a_checkpoint)
{
    expect_bad(NULL, "no *.safetensors file");
    cr_assert_eq(sw_write_text(g_dir, "a.safetensors", "x"), 0);
    cr_assert_eq(sw_write_text(g_dir, "b.safetensors", "x"), 0);
    expect_bad(NULL, "2 *.safetensors files");
}

Test(source_sharded, directory_prefers_the_index)
{
    write_shards(NULL);
    write_index(GOOD_MAP);
    /* A stray consolidated file next to the shards is not read. */
    cr_assert_eq(sw_write_text(g_dir, "consolidated.safetensors", "junk"), 0);
    nf_source *s;
    nf_error err = {0};
    cr_assert_eq(open_path(NULL, &s, &err), NF_OK, "%s", err.message);
    check_checkpoint(s);
    nf_source_close(s);
}

Test(source_sharded, missing_path_is_a_system_error)
{
    nf_source *s;
    nf_error err = {0};
    cr_assert_eq(open_path("nope.safetensors", &s, &err), NF_ERR_IO);
    cr_assert(strstr(err.message, "nope.safetensors"), "%s", err.message);
    cr_assert_eq(nf_source_open(NULL, &s, &err), NF_ERR_USAGE);
}
