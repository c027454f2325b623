/* Rows longer than a chunk (lib/src/convert/exec_jobs.c run_span_job, docs/ninfer-convert.md): each
 * row is encoded in spans of whole NF_COLSPAN_ALIGN-column blocks, so a job's memory is bounded
 * by the chunk, not the row.  Checked here:
 *   - the artifact's bytes and the report's figures are those of whole-row jobs (a chunk larger
 *     than the rows), for every method and the layouts they write (q4/q5/q6/q8 grouped_absmax,
 *     q4 grouped_search with importance, fp8 rows in both layouts, bf16 and fp32 casts), on one
 *     and three threads;
 *   - verify --against (nf_plan_compare) re-derives spanned objects too, and finds a flipped
 *     byte in the second span of a row;
 *   - a bad value deep in a row is named by its column in the tensor, not in its span. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ninfer/ninfer.h>

#include "support/source_writer.h"
#include "support/test_float.h"
#include "support/test_rng.h"

TEST_RNG(0x3C6EF372FE94F82Bull)

#define K (2 * 4096 + 4096 / 2 + 37) /* two full spans and a partial one */

typedef struct spec {
    const char *name, *dtype;
    uint64_t rows;
} spec;

static const spec TENSORS[] = {
    {"a.q4", "BF16", 3},  {"b.q5", "F16", 2},   {"c.q6", "F32", 2},   {"d.q8", "BF16", 2},  {"e.search", "BF16", 2},
    {"f.fp8", "BF16", 3}, {"g.fp8h", "F32", 2}, {"h.bf16", "F32", 2}, {"i.fp32", "F16", 2},
};
#define NT (sizeof TENSORS / sizeof TENSORS[0])

static const char RECIPE[] = "recipe: 1\n"
                             "sources:\n"
                             "  base: %s\n"
                             "defaults: {format: bf16}\n"
                             "rules:\n"
                             "  - {match: a.q4, format: q4_g64_fp16}\n"
                             "  - {match: b.q5, format: q5_g64_fp16}\n"
                             "  - {match: c.q6, format: q6_g64_fp16}\n"
                             "  - {match: d.q8, format: q8_g32_fp16}\n"
                             "  - {match: e.search, format: q4_g64_fp16, method: grouped_search}\n"
                             "  - {match: f.fp8, format: fp8_e4m3fn_row_bf16}\n"
                             "  - {match: g.fp8h, format: fp8_e4m3fn_row_fp16}\n"
                             "  - {match: i.fp32, format: fp32}\n";

static char *root, *ckpt, *out;
static nf_recipe *recipe;
static nf_plan *plan;

static void write_checkpoint(uint64_t nan_at)
{
    sw_st_tensor t[NT];
    void *bytes[NT];
    for (size_t i = 0; i < NT; i++) {
        const spec *s = &TENSORS[i];
        size_t n = (size_t)(s->rows * K), es = strcmp(s->dtype, "F32") == 0 ? 4 : 2;
        uint8_t *p = malloc(n * es);
        cr_assert_not_null(p);
        for (size_t k = 0; k < n; k++) {
            float v = (float)uniform() * (float)(0.02 + (double)(k % 5) * 0.01);
            if (k == nan_at && i == 0) v = NAN;
            uint32_t w = es == 4 ? bits_of_f32(v) : strcmp(s->dtype, "F16") == 0 ? f16_round(v) : bits_of_f32(v) >> 16;
            for (size_t b = 0; b < es; b++) p[k * es + b] = (uint8_t)(w >> (8 * b));
        }
        t[i] = (sw_st_tensor){s->name, s->dtype, 2, {s->rows, K}, p, n * es};
        bytes[i] = p;
    }
    sw_buf b = {0};
    sw_st_file(&b, t, NT, NULL);
    char *path = sw_path(ckpt, "model.safetensors");
    cr_assert_eq(sw_write_file(path, b.data, b.len), 0);
    free(path);
    sw_free(&b);
    for (size_t i = 0; i < NT; i++) free(bytes[i]);
}

/* The plan of RECIPE over the checkpoint (with an imatrix-free importance: none is needed for
 * the span check of grouped_search; its importance slicing is covered by the method tests). */
static void setup_with(uint64_t nan_at)
{
    root = sw_tempdir();
    ckpt = sw_path(root, "ckpt");
    out = sw_path(root, "out");
    cr_assert_eq(mkdir(ckpt, 0700), 0);
    cr_assert_eq(mkdir(out, 0700), 0);
    write_checkpoint(nan_at);
    char text[4096];
    snprintf(text, sizeof text, RECIPE, ckpt);
    nf_error err;
    cr_assert_eq(nf_recipe_parse(text, strlen(text), "recipe.yaml", root, &recipe, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_plan_build(recipe, &plan, &err), NF_OK, "%s", err.message);
}

static void setup(void) { setup_with(UINT64_MAX); }

static void teardown(void)
{
    nf_plan_free(plan);
    nf_recipe_free(recipe);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    cr_assert_eq(system(cmd), 0);
    free(root);
    free(ckpt);
    free(out);
}

static const uint8_t ID[16] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6};

/* Converts to out/NAME and returns the entry's bytes (*len) and the report's objects. */
static uint8_t *convert(const char *name, unsigned threads, uint64_t chunk, size_t *len, json_t **objs)
{
    char *entry = sw_path(out, name);
    nf_convert_options o =
        {.output = entry, .threads = threads, .force = true, .report = true, .artifact_id = ID, .chunk_values = chunk};
    nf_error err;
    cr_assert_eq(nf_plan_execute(plan, &o, &err), NF_OK, "%s", err.message);
    uint8_t *bytes = sw_read_file(entry, len);
    cr_assert_not_null(bytes);
    char rp[4200];
    snprintf(rp, sizeof rp, "%s.conversion.json", entry);
    json_error_t je;
    json_t *doc = json_load_file(rp, 0, &je);
    cr_assert_not_null(doc, "%s", je.text);
    *objs = json_incref(json_object_get(doc, "objects"));
    json_decref(doc);
    free(entry);
    return bytes;
}

Test(spans, the_same_artifact_and_figures_as_whole_rows, .init = setup, .fini = teardown)
{
    size_t wlen;
    json_t *wobjs;
    /* a chunk above every row: whole rows; the others cut every row into spans */
    uint8_t *whole = convert("whole.ninfer", 1, (uint64_t)1 << 20, &wlen, &wobjs);
    static const struct {
        unsigned threads;
        uint64_t chunk;
    } runs[] = {{1, 1}, {3, 1}, {1, 4096}, {2, 3 * 4096}, {3, 5000}};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        size_t len;
        json_t *objs;
        uint8_t *bytes = convert("span.ninfer", runs[i].threads, runs[i].chunk, &len, &objs);
        cr_assert(len == wlen && memcmp(bytes, whole, len) == 0, "%u threads, chunk %llu: another artifact",
                  runs[i].threads, (unsigned long long)runs[i].chunk);
        cr_assert(json_equal(objs, wobjs), "%u threads, chunk %llu: other report figures", runs[i].threads,
                  (unsigned long long)runs[i].chunk);
        free(bytes);
        json_decref(objs);
    }
    free(whole);
    json_decref(wobjs);
}

static void count_problem(void *ctx, const char *object, const char *message)
{
    (void)object;
    (void)message;
    (*(size_t *)ctx)++;
}

Test(spans, verify_against_rederives_spanned_rows, .init = setup, .fini = teardown)
{
    size_t len;
    json_t *objs;
    free(convert("m.ninfer", 2, 4096, &len, &objs));
    json_decref(objs);
    char *entry = sw_path(out, "m.ninfer");
    nf_error err;
    nf_artifact *a;
    cr_assert_eq(nf_artifact_open(entry, NF_READ_PREAD, &a, &err), NF_OK, "%s", err.message);
    size_t problems = 0, differing = 0;
    cr_assert_eq(nf_plan_compare(plan, a, 2, count_problem, &problems, &differing, &err), NF_OK, "%s", err.message);
    cr_assert_eq(differing, 0, "%zu objects differ", differing);
    /* a byte of the second span of q4's row 1 flipped: q4 codes hold two columns a byte */
    const nf_object *q4 = nf_artifact_find(a, "a.q4");
    cr_assert_not_null(q4);
    uint64_t at = q4->offset + (K + 127) / 128 * 64 + 4096 / 2 + 7; /* row 1, column 4096 + 14 */
    nf_artifact_close(a);
    size_t flen;
    uint8_t *bytes = sw_read_file(entry, &flen);
    /* the entry holds the payload after its header and directory: find the object's byte */
    nf_artifact *b;
    cr_assert_eq(nf_artifact_open(entry, NF_READ_PREAD, &b, &err), NF_OK, "%s", err.message);
    uint64_t payload_start = nf_artifact_entry_payload_start(b);
    nf_artifact_close(b);
    bytes[payload_start + at] ^= 0x11;
    cr_assert_eq(sw_write_file(entry, bytes, flen), 0);
    free(bytes);
    cr_assert_eq(nf_artifact_open(entry, NF_READ_PREAD, &a, &err), NF_OK, "%s", err.message);
    problems = differing = 0;
    cr_assert_eq(nf_plan_compare(plan, a, 2, count_problem, &problems, &differing, &err), NF_OK, "%s", err.message);
    cr_assert_eq(differing, 1, "the flipped byte must be found, %zu objects differ", differing);
    nf_artifact_close(a);
    free(entry);
}

static void setup_nan(void) { setup_with((uint64_t)K + 4096 + 100); } /* row 1, column 4196 of a.q4 */

Test(spans, a_bad_value_is_named_by_its_column, .init = setup_nan, .fini = teardown)
{
    char *entry = sw_path(out, "bad.ninfer");
    nf_convert_options o =
        {.output = entry, .threads = 1, .force = true, .report = true, .artifact_id = ID, .chunk_values = 4096};
    nf_error err;
    cr_assert_eq(nf_plan_execute(plan, &o, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "row 1 col 4196"), "%s", err.message);
    free(entry);
}
