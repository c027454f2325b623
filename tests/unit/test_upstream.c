/* Every artifact written by upstream NInfer's own writer (tests/data/upstream, copied from
 * shared/fixtures/upstream) is read, verified clean, and its directory, words and values equal
 * the sidecar X.ninfer.expected.json written when the artifact was made. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#define UPSTREAM NINFER_TEST_DATA "/upstream/"

static json_t *load_sidecar(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, UPSTREAM "%s.expected.json", name);
    json_error_t je;
    json_t *doc = json_load_file(path, 0, &je);
    cr_assert_not_null(doc, "cannot load %s: %s", path, je.text);
    return doc;
}

static uint8_t *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)n);
    cr_assert(fread(buf, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return buf;
}

static int64_t int_at(const json_t *array, size_t i)
{
    const json_t *v = json_array_get(array, i);
    cr_assert(json_is_integer(v), "element %zu is not an integer", i);
    return (int64_t)json_integer_value(v);
}

static void check_value(const json_t *want, float got, const char *id, size_t i)
{
    if (json_is_string(want)) {
        cr_assert_str_eq(json_string_value(want), "nan");
        cr_assert(isnan(got), "%s value %zu: expected NaN, got %.9g", id, i, (double)got);
        return;
    }
    /* int32 values are listed as integers; their binary32 value is the nearest float (C's
     * double -> float conversion rounds to nearest even). */
    double w = json_is_integer(want) ? (double)(float)json_integer_value(want) : json_number_value(want);
    cr_assert((double)got == w && signbit((double)got) == signbit(w), "%s value %zu: expected %.17g, got %.17g", id, i,
              w, (double)got);
}

static void check_tensor(nf_artifact *a, const nf_object *o, const json_t *exp)
{
    nf_geometry g;
    nf_error err;
    cr_assert_eq(nf_artifact_check_object(a, o, &g, &err), NF_OK, "%s: %s", o->id, err.message);
    nf_byte_reader reader;
    nf_artifact_object_reader(a, o, &reader);
    nf_words w;
    cr_assert_eq(nf_words_alloc(&w, &g, g.rows, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_layout_decode_rows(&g, &reader, 0, g.rows, &w, &err), NF_OK, "%s: %s", o->id, err.message);
    const uint64_t n = g.rows, k = g.cols;
    switch (g.format->category) {
    case NF_CAT_DIRECT: {
        const json_t *words = json_object_get(exp, "words");
        cr_assert_eq(json_array_size(words), n * k, "%s: word count", o->id);
        for (size_t i = 0; i < n * k; i++) {
            uint32_t want = (uint32_t)int_at(words, i);
            uint32_t got = g.format->word_bytes == 2 ? w.w16[i] : w.w32[i];
            cr_assert_eq(got, want, "%s word %zu: 0x%x != 0x%x", o->id, i, got, want);
        }
        break;
    }
    case NF_CAT_GROUPED: {
        const json_t *codes = json_object_get(exp, "codes"), *scales = json_object_get(exp, "scale_words");
        cr_assert_eq(json_array_size(codes), n * g.k_pad);
        cr_assert_eq(json_array_size(scales), n * g.groups_per_row);
        for (uint64_t r = 0; r < n; r++) {
            for (uint64_t c = 0; c < g.k_pad; c++) {
                int64_t want = int_at(codes, r * g.k_pad + c);
                if (c < k)
                    cr_assert_eq(w.codes[r * k + c], want, "%s code [%lu,%lu]", o->id, (unsigned long)r,
                                 (unsigned long)c);
                else cr_assert_eq(want, 0, "sidecar padding lane is not 0");
            }
            for (uint64_t s = 0; s < g.groups_per_row; s++) {
                int64_t want = int_at(scales, r * g.groups_per_row + s);
                if (s < g.logical_groups)
                    cr_assert_eq(w.scales[r * g.logical_groups + s], want, "%s scale [%lu,%lu]", o->id,
                                 (unsigned long)r, (unsigned long)s);
                else cr_assert_eq(want, 0);
            }
        }
        break;
    }
    case NF_CAT_NVFP4: {
        const char *hex = json_string_value(json_object_get(exp, "packed_codes_hex"));
        const json_t *scales = json_object_get(exp, "scales_natural"), *divs = json_object_get(exp, "divisor_words");
        cr_assert_eq(strlen(hex), n * k);
        for (uint64_t i = 0; i < n * k / 2; i++) {
            unsigned byte;
            cr_assert_eq(sscanf(hex + 2 * i, "%2x", &byte), 1);
            cr_assert_eq(w.codes8[2 * i], byte & 15u, "%s code %lu", o->id, (unsigned long)(2 * i));
            cr_assert_eq(w.codes8[2 * i + 1], byte >> 4, "%s code %lu", o->id, (unsigned long)(2 * i + 1));
        }
        cr_assert_eq(json_array_size(scales), n * k / 16);
        for (size_t i = 0; i < n * k / 16; i++) cr_assert_eq(w.scales8[i], int_at(scales, i), "%s scale %zu", o->id, i);
        cr_assert_eq(json_array_size(divs), g.divisors);
        for (size_t i = 0; i < g.divisors; i++) cr_assert_eq(w.divisors[i], (uint32_t)int_at(divs, i));
        break;
    }
    case NF_CAT_FP8_ROW: {
        const json_t *codes = json_object_get(exp, "codes"), *scales = json_object_get(exp, "scale_words");
        for (size_t i = 0; i < n * k; i++) cr_assert_eq(w.codes8[i], int_at(codes, i), "%s code %zu", o->id, i);
        for (size_t i = 0; i < n; i++) cr_assert_eq(w.scales[i], int_at(scales, i), "%s scale %zu", o->id, i);
        break;
    }
    case NF_CAT_GGUF: {
        /* "../gguf/q4_k.qbytes": the fixture lives in tests/data/gguf. */
        const char *src = json_string_value(json_object_get(exp, "source"));
        char path[512];
        snprintf(path, sizeof path, NINFER_TEST_DATA "/gguf/%s", strrchr(src, '/') + 1);
        size_t size;
        uint8_t *want = read_all(path, &size);
        cr_assert_eq(size, n * g.row_bytes);
        cr_assert(memcmp(w.blocks, want, size) == 0, "%s: blocks differ from %s", o->id, path);
        free(want);
        break;
    }
    }
    const json_t *values = json_object_get(exp, "values");
    if (json_is_array(values) && g.format->category != NF_CAT_GGUF) {
        float *got = malloc((size_t)(n * k) * sizeof *got);
        cr_assert_eq(nf_words_to_f32(&g, &w, 0, got, &err), NF_OK, "%s", err.message);
        cr_assert_eq(json_array_size(values), n * k);
        for (size_t i = 0; i < n * k; i++) check_value(json_array_get(values, i), got[i], o->id, i);
        free(got);
    }
    nf_words_free(&w);
}

static void check_artifact(const char *name)
{
    json_t *side = load_sidecar(name);
    char path[512];
    snprintf(path, sizeof path, UPSTREAM "%s", name);
    nf_artifact *a = NULL;
    nf_error err;
    cr_assert_eq(nf_artifact_open(path, NF_READ_PREAD, &a, &err), NF_OK, "%s: %s", name, err.message);

    char id[33];
    nf_artifact_id_hex(a, id);
    cr_assert_str_eq(id, json_string_value(json_object_get(side, "artifact_id")));
    cr_assert_eq(nf_artifact_json_bytes(a), (uint64_t)json_integer_value(json_object_get(side, "json_bytes")));
    cr_assert_eq(nf_artifact_entry_payload_start(a),
                 (uint64_t)json_integer_value(json_object_get(side, "payload_offset")));
    const json_t *files = json_object_get(side, "files");
    cr_assert_eq(nf_artifact_file_count(a), json_array_size(files));
    for (size_t i = 0; i < json_array_size(files); i++) {
        const json_t *f = json_array_get(files, i);
        const nf_file_entry *e = nf_artifact_file(a, i);
        cr_assert_eq(e->payload_bytes, (uint64_t)json_integer_value(json_object_get(f, "payload_bytes")));
        if (i == 0) cr_assert_null(e->path);
        else cr_assert_str_eq(e->path, json_string_value(json_object_get(f, "path")));
    }
    cr_assert(json_equal((json_t *)nf_artifact_directory(a), json_object_get(side, "directory")),
              "%s: parsed directory differs from the sidecar's", name);

    const json_t *objs = json_object_get(side, "objects");
    size_t count = json_is_array(objs) ? json_array_size(objs) : json_object_size(objs);
    cr_assert_eq(count, nf_artifact_object_count(a));
    for (size_t i = 0; i < count; i++) {
        const nf_object *o = nf_artifact_object(a, i);
        const json_t *exp = json_is_array(objs) ? json_array_get(objs, i) : json_object_get(objs, o->id);
        cr_assert_not_null(exp, "%s: no sidecar entry for %s", name, o->id);
        cr_assert_str_eq(o->id, json_string_value(json_object_get(exp, "id")));
        if (o->kind == NF_OBJECT_RESOURCE) {
            const json_t *hex = json_object_get(exp, "hex");
            if (json_is_string(hex)) {
                uint8_t *buf = malloc(o->bytes);
                cr_assert_eq(nf_artifact_read(a, o->offset, buf, o->bytes, &err), NF_OK, "%s", err.message);
                for (uint64_t j = 0; j < o->bytes; j++) {
                    unsigned b;
                    cr_assert_eq(sscanf(json_string_value(hex) + 2 * j, "%2x", &b), 1);
                    cr_assert_eq(buf[j], b, "%s byte %lu", o->id, (unsigned long)j);
                }
                free(buf);
            }
            continue;
        }
        check_tensor(a, o, exp);
    }
    nf_artifact_close(a);

    nf_verify_report report;
    cr_assert_eq(nf_verify_artifact(path, NF_VERIFY_CHECKSUMS, &report, &err), NF_OK, "%s", err.message);
    for (size_t i = 0; i < report.count; i++)
        cr_log_error("%s: %s %s: %s", name, report.problems[i].object ? report.problems[i].object : "-",
                     report.problems[i].check, report.problems[i].message);
    cr_assert(report.valid, "%s does not verify", name);
    cr_assert_eq(report.objects_checked, count);
    nf_verify_report_free(&report);
    json_decref(side);
}

Test(upstream, container_small) { check_artifact("container_small.ninfer"); }
Test(upstream, direct) { check_artifact("direct.ninfer"); }
Test(upstream, row_split) { check_artifact("row_split.ninfer"); }
Test(upstream, nvfp4) { check_artifact("nvfp4.ninfer"); }
Test(upstream, fp8_row) { check_artifact("fp8_row.ninfer"); }
Test(upstream, gguf) { check_artifact("gguf.ninfer"); }
Test(upstream, model) { check_artifact("model.ninfer"); }
Test(upstream, split) { check_artifact("split.ninfer"); }
Test(upstream, wide_directory) { check_artifact("wide_directory.ninfer"); }
