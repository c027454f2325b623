/* The conversion report's statistics end to end (docs/ninfer-convert.md, "The report"):
 *   - every figure of every object is the same, to the last bit, for any thread count, any
 *     chunk size and every SIMD variant the CPU has (the summation order of stats/stats.h);
 *   - the figures mean what the report says: values_compared, max_abs_error (exactly the largest
 *     |x - y| between the source values and the values ninfer-dequant would print), rmse
 *     within 1e-6 (relative) and snr_db within 1e-5 dB of a plain binary64 sum computed here
 *     (the report sums in binary32 runs of 8), values_not_compared for source values that are
 *     not finite.
 * The checkpoint has rows longer than a statistics block (4096), F32, F16 and BF16 sources,
 * q4/q5/q8 from grouped_absmax, q4 from grouped_search, fp8 rows, bf16 and fp32 casts. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ninfer/ninfer.h>

#include "common/cpu.h"
#include "support/source_writer.h"
#include "support/test_float.h"
#include "support/test_rng.h"

TEST_RNG(0x2B7E151628AED2A6ull)

typedef struct spec {
    const char *name, *dtype;
    uint64_t rows, cols;
} spec;

static const spec TENSORS[] = {
    {"a.q4", "F16", 3, 5000},   /* rows longer than a block, partial last group */
    {"b.q8", "BF16", 70, 4100}, /* q8 */
    {"c.q5", "F32", 9, 9000},   /* two blocks and a bit per row */
    {"d.search", "BF16", 33, 200}, {"e.fp8", "BF16", 40, 300}, {"f.cast", "F32", 17, 130}, /* bf16 from F32: rounded */
    {"g.nan", "F32", 5, 64},   /* fp32 from F32 with NaN and infinities: not compared */
    {"h.f16", "F16", 4, 4097}, /* fp32 from F16: exact */
};
#define NT (sizeof TENSORS / sizeof TENSORS[0])

static const char RECIPE[] = "recipe: 1\n"
                             "sources:\n"
                             "  base: %s\n"
                             "defaults: {format: bf16}\n"
                             "rules:\n"
                             "  - match: a.q4\n"
                             "    format: q4_g64_fp16\n"
                             "  - match: b.q8\n"
                             "    format: q8_g32_fp16\n"
                             "  - match: c.q5\n"
                             "    format: q5_g64_fp16\n"
                             "  - match: d.search\n"
                             "    format: q4_g64_fp16\n"
                             "    method: grouped_search\n"
                             "  - match: e.fp8\n"
                             "    format: fp8_e4m3fn_row_bf16\n"
                             "  - match: [g.nan, h.f16]\n"
                             "    format: fp32\n";

typedef struct fixture {
    char *root, *ckpt, *out;
    float *values[NT]; /* the source values, binary32 */
    nf_recipe *recipe;
    nf_plan *plan;
} fixture;

static fixture fx;

static void write_checkpoint(void)
{
    sw_st_tensor t[NT];
    void *bytes[NT];
    for (size_t i = 0; i < NT; i++) {
        const spec *s = &TENSORS[i];
        size_t n = (size_t)(s->rows * s->cols);
        size_t es = strcmp(s->dtype, "F32") == 0 ? 4 : 2;
        uint8_t *p = malloc(n * es);
        fx.values[i] = malloc(n * sizeof(float));
        cr_assert(p && fx.values[i]);
        for (size_t k = 0; k < n; k++) {
            float v = (float)uniform() * (float)(0.05 + (double)(k % 7));
            if (strcmp(s->name, "g.nan") == 0 && k % 9 == 4) v = k % 2 ? NAN : -INFINITY;
            uint32_t w;
            if (es == 4) {
                w = bits_of_f32(v);
            } else if (strcmp(s->dtype, "F16") == 0) {
                w = f16_round(v);
                v = (float)f16_value((uint16_t)w);
            } else {
                w = bits_of_f32(v) >> 16;
                v = f32_of_bits(w << 16);
            }
            fx.values[i][k] = v;
            for (size_t b = 0; b < es; b++) p[k * es + b] = (uint8_t)(w >> (8 * b));
        }
        t[i] = (sw_st_tensor){s->name, s->dtype, 2, {s->rows, s->cols}, p, n * es};
        bytes[i] = p;
    }
    sw_buf b = {0};
    sw_st_file(&b, t, NT, NULL);
    char *path = sw_path(fx.ckpt, "model.safetensors");
    cr_assert_eq(sw_write_file(path, b.data, b.len), 0);
    free(path);
    sw_free(&b);
    for (size_t i = 0; i < NT; i++) free(bytes[i]);
}

static void setup(void)
{
    memset(&fx, 0, sizeof fx);
    fx.root = sw_tempdir();
    fx.ckpt = sw_path(fx.root, "ckpt");
    fx.out = sw_path(fx.root, "out");
    cr_assert_eq(mkdir(fx.ckpt, 0700), 0);
    cr_assert_eq(mkdir(fx.out, 0700), 0);
    write_checkpoint();
    char text[2048];
    snprintf(text, sizeof text, RECIPE, fx.ckpt);
    nf_error err;
    cr_assert_eq(nf_recipe_parse(text, strlen(text), "recipe.yaml", fx.root, &fx.recipe, &err), NF_OK, "%s",
                 err.message);
    cr_assert_eq(nf_plan_build(fx.recipe, &fx.plan, &err), NF_OK, "%s", err.message);
}

static void teardown(void)
{
    nf_simd_force(nf_simd_best());
    nf_plan_free(fx.plan);
    nf_recipe_free(fx.recipe);
    for (size_t i = 0; i < NT; i++) free(fx.values[i]);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx.root);
    cr_assert_eq(system(cmd), 0);
    free(fx.root);
    free(fx.ckpt);
    free(fx.out);
}

/* Converts with the given settings and returns the report's "objects" (the artifact is kept in
 * fx.out/m.ninfer). */
static json_t *convert(unsigned threads, uint64_t chunk_values)
{
    char *entry = sw_path(fx.out, "m.ninfer");
    static const uint8_t id[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    nf_convert_options o = {.output = entry,
                            .threads = threads,
                            .force = true,
                            .report = true,
                            .artifact_id = id,
                            .chunk_values = chunk_values};
    nf_error err;
    cr_assert_eq(nf_plan_execute(fx.plan, &o, &err), NF_OK, "%s", err.message);
    char *rp = sw_path(fx.out, "m.ninfer.conversion.json");
    json_error_t je;
    json_t *doc = json_load_file(rp, 0, &je);
    cr_assert_not_null(doc, "%s", je.text);
    json_t *objs = json_incref(json_object_get(doc, "objects"));
    json_decref(doc);
    free(rp);
    free(entry);
    return objs;
}

Test(report, figures_do_not_depend_on_threads_chunks_or_simd, .init = setup, .fini = teardown, .timeout = 300)
{
    static const unsigned threads[] = {1, 2, 3};
    static const uint64_t chunks[] = {0, 1, 7, 4096, 100000};
    json_t *first = NULL;
    size_t runs = 0;
    for (int lv = 0; lv < NF_SIMD_LEVEL_COUNT; lv++) {
        if (!nf_simd_supported((nf_simd_level)lv)) {
            cr_log_info("report: the CPU lacks %s", nf_simd_level_name((nf_simd_level)lv));
            continue;
        }
        cr_assert_eq(nf_simd_force((nf_simd_level)lv), (nf_simd_level)lv);
        for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++)
            for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
                json_t *objs = convert(threads[t], chunks[c]);
                runs++;
                if (!first) {
                    first = objs;
                    continue;
                }
                if (!json_equal(first, objs)) {
                    char *a = json_dumps(first, JSON_COMPACT | JSON_REAL_PRECISION(17));
                    char *b = json_dumps(objs, JSON_COMPACT | JSON_REAL_PRECISION(17));
                    cr_assert_fail(
                        "%s, %u threads, chunk %llu: the report's objects differ from the first run's:\n%.3000s\n"
                        "vs\n%.3000s",
                        nf_simd_level_name((nf_simd_level)lv), threads[t], (unsigned long long)chunks[c], a, b);
                }
                json_decref(objs);
            }
    }
    cr_log_info("report: %zu runs, the same figures", runs);
    json_decref(first);
}

static json_t *object_named(json_t *objs, const char *id)
{
    for (size_t i = 0; i < json_array_size(objs); i++) {
        json_t *o = json_array_get(objs, i);
        if (strcmp(json_string_value(json_object_get(o, "object")), id) == 0) return o;
    }
    cr_assert_fail("no object %s in the report", id);
    return NULL;
}

Test(report, figures_mean_what_they_say, .init = setup, .fini = teardown)
{
    json_t *objs = convert(2, 0);
    char *entry = sw_path(fx.out, "m.ninfer");
    nf_artifact *a;
    nf_error err;
    cr_assert_eq(nf_artifact_open(entry, NF_READ_PREAD, &a, &err), NF_OK, "%s", err.message);
    for (size_t i = 0; i < NT; i++) {
        const spec *s = &TENSORS[i];
        const nf_object *t = nf_artifact_find(a, s->name);
        cr_assert_not_null(t, "%s", s->name);
        nf_geometry g;
        cr_assert_eq(nf_artifact_check_object(a, t, &g, &err), NF_OK, "%s", err.message);
        size_t n = (size_t)(s->rows * s->cols);
        float *y = malloc(n * sizeof *y);
        nf_byte_reader reader;
        nf_artifact_object_reader(a, t, &reader);
        cr_assert_eq(nf_layout_decode_rows_f32(&g, &reader, 0, s->rows, y, &err), NF_OK, "%s", err.message);
        uint64_t count = 0, skipped = 0;
        double maxe = 0.0, sse = 0.0, ssx = 0.0;
        for (size_t k = 0; k < n; k++) {
            float x = fx.values[i][k], d = x - y[k];
            if (!isfinite(d)) {
                skipped++;
                continue;
            }
            count++;
            if (fabsf(d) > maxe) maxe = fabsf(d);
            sse += (double)d * d;
            ssx += (double)x * x;
        }
        free(y);
        json_t *r = object_named(objs, s->name);
        cr_assert_eq(json_integer_value(json_object_get(r, "values_compared")), (json_int_t)count, "%s", s->name);
        json_t *nc = json_object_get(r, "values_not_compared");
        cr_assert_eq(nc ? json_integer_value(nc) : 0, (json_int_t)skipped, "%s", s->name);
        cr_assert_eq(json_real_value(json_object_get(r, "max_abs_error")), maxe, "%s: max %.17g vs %.17g", s->name,
                     json_real_value(json_object_get(r, "max_abs_error")), maxe);
        /* the report sums in binary32 runs of 8 (docs/ninfer-convert.md, "How the statistics are
         * summed"): its sums are within 1e-6 of these binary64 ones, relative; its rmse within
         * half that, its SNR within 10 / ln 10 * 2e-6 dB */
        double rmse = sqrt(sse / (double)count);
        cr_assert(fabs(json_real_value(json_object_get(r, "rmse")) - rmse) <= 1e-6 * rmse, "%s: rmse %.17g vs %.17g",
                  s->name, json_real_value(json_object_get(r, "rmse")), rmse);
        json_t *snr = json_object_get(r, "snr_db");
        if (sse == 0.0) {
            cr_assert(json_is_null(snr), "%s: an exact object has snr_db null", s->name);
        } else {
            double want = 10.0 * log10(ssx / sse);
            cr_assert(fabs(json_real_value(snr) - want) <= 1e-5, "%s: snr %.17g vs %.17g", s->name,
                      json_real_value(snr), want);
        }
    }
    cr_assert_gt(json_integer_value(json_object_get(object_named(objs, "g.nan"), "values_not_compared")), 0);
    nf_artifact_close(a);
    json_decref(objs);
    free(entry);
}
