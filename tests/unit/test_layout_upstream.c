/* Objects written by upstream NInfer's own writer (tests/data/upstream, single-file artifacts):
 * for every tensor and resource, our geometry gives its size, decoding gives the sidecar's words,
 * re-encoding those words gives the object's bytes exactly, check() finds nothing, and the
 * values equal the sidecar's.  The object bytes are taken straight from the payload (at
 * payload_offset + offset), so this exercises the layouts only, not the container reader. */
#include <jansson.h>
#include <math.h>

#include "test_layout_util.h"
#include "support/test_data.h"

static uint64_t juint(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    cr_assert(json_is_integer(v), "member %s", key);
    return (uint64_t)json_integer_value(v);
}

static int64_t jint_at(const json_t *a, size_t i)
{
    json_t *v = json_array_get(a, i);
    cr_assert(json_is_integer(v), "array index %zu", i);
    return (int64_t)json_integer_value(v);
}

static void hex_decode(const char *hex, uint8_t *out, size_t n)
{
    cr_assert_eq(strlen(hex), 2 * n);
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        cr_assert_eq(sscanf(hex + 2 * i, "%2x", &v), 1);
        out[i] = (uint8_t)v;
    }
}

/* The sidecar's words as an nf_words for g. */
static nf_words expected_words(const nf_geometry *g, const json_t *o, const char *dir)
{
    nf_words w;
    cr_assert_eq(nf_words_alloc(&w, g, g->rows, NULL), NF_OK);
    const nf_format *f = g->format;
    uint64_t n = g->rows, k = g->cols;
    if (!f) { /* resource */
        hex_decode(json_string_value(json_object_get(o, "hex")), w.blocks, g->bytes);
        return w;
    }
    switch (f->category) {
    case NF_CAT_DIRECT: {
        json_t *a = json_object_get(o, "words");
        cr_assert_eq(json_array_size(a), g->elements);
        for (uint64_t i = 0; i < g->elements; i++) {
            int64_t v = jint_at(a, i);
            if (f->word_bytes == 2) w.w16[i] = (uint16_t)v;
            else w.w32[i] = (uint32_t)v;
        }
        break;
    }
    case NF_CAT_GROUPED: {
        json_t *codes = json_object_get(o, "codes"), *scales = json_object_get(o, "scale_words");
        cr_assert_eq(json_array_size(codes), n * g->k_pad);
        cr_assert_eq(json_array_size(scales), n * g->groups_per_row);
        for (uint64_t r = 0; r < n; r++) {
            for (uint64_t c = 0; c < g->k_pad; c++) {
                int64_t q = jint_at(codes, r * g->k_pad + c);
                if (c < k) w.codes[r * k + c] = (int8_t)q;
                else cr_assert_eq(q, 0, "sidecar padding lane row %" PRIu64 " col %" PRIu64, r, c);
            }
            for (uint64_t gi = 0; gi < g->groups_per_row; gi++) {
                int64_t s = jint_at(scales, r * g->groups_per_row + gi);
                if (gi < g->logical_groups) w.scales[r * g->logical_groups + gi] = (uint16_t)s;
                else cr_assert_eq(s, 0, "sidecar padding group scale");
            }
        }
        break;
    }
    case NF_CAT_NVFP4: {
        uint8_t *packed = malloc(n * k / 2);
        hex_decode(json_string_value(json_object_get(o, "packed_codes_hex")), packed, n * k / 2);
        for (uint64_t i = 0; i < n * k / 2; i++) {
            w.codes8[2 * i] = packed[i] & 15;
            w.codes8[2 * i + 1] = packed[i] >> 4;
        }
        free(packed);
        json_t *s = json_object_get(o, "scales_natural"), *d = json_object_get(o, "divisor_words");
        cr_assert_eq(json_array_size(s), n * k / 16);
        for (uint64_t i = 0; i < n * k / 16; i++) w.scales8[i] = (uint8_t)jint_at(s, i);
        cr_assert_eq(json_array_size(d), g->divisors);
        for (uint64_t i = 0; i < g->divisors; i++) w.divisors[i] = (uint32_t)jint_at(d, i);
        break;
    }
    case NF_CAT_FP8_ROW: {
        json_t *codes = json_object_get(o, "codes"), *scales = json_object_get(o, "scale_words");
        cr_assert_eq(json_array_size(codes), n * k);
        for (uint64_t i = 0; i < n * k; i++) w.codes8[i] = (uint8_t)jint_at(codes, i);
        for (uint64_t r = 0; r < n; r++) w.scales[r] = (uint16_t)jint_at(scales, r);
        break;
    }
    case NF_CAT_GGUF: {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, json_string_value(json_object_get(o, "source")));
        size_t size;
        uint8_t *blocks = nf_test_read_file(path, &size);
        cr_assert_eq(size, g->bytes);
        memcpy(w.blocks, blocks, size);
        free(blocks);
        break;
    }
    }
    return w;
}

static void check_values(const nf_geometry *g, const nf_words *w, const json_t *o, const char *id)
{
    json_t *vals = json_object_get(o, "values");
    if (!json_is_array(vals)) return;
    cr_assert_eq(json_array_size(vals), g->elements, "%s", id);
    float *v = malloc(sizeof(float) * (g->elements ? g->elements : 1));
    nf_error err = {0};
    cr_assert_eq(nf_words_to_f32(g, w, 0, v, &err), NF_OK, "%s: %s", id, err.message);
    for (uint64_t i = 0; i < g->elements; i++) {
        json_t *e = json_array_get(vals, i);
        if (json_is_string(e)) {
            cr_assert_str_eq(json_string_value(e), "nan");
            cr_assert(isnan(v[i]), "%s value %" PRIu64, id, i);
            continue;
        }
        float want = (float)json_number_value(e);
        cr_assert_eq(nf_f32_bits(v[i]), nf_f32_bits(want), "%s value %" PRIu64 ": %a vs %a", id, i, (double)v[i],
                     (double)want);
    }
    free(v);
}

static int artifact(const char *name)
{
    char path[2048], side[2048], dir[1024];
    snprintf(dir, sizeof dir, "%s/upstream", NINFER_TEST_DATA);
    snprintf(path, sizeof path, "%s/%s.ninfer", dir, name);
    snprintf(side, sizeof side, "%s/%s.ninfer.expected.json", dir, name);
    size_t fsize;
    uint8_t *file = nf_test_read_file(path, &fsize);
    json_error_t jerr;
    json_t *root = json_load_file(side, 0, &jerr);
    cr_assert_not_null(root, "%s: %s", side, jerr.text);
    uint64_t payload = juint(root, "payload_offset");
    json_t *objects = json_object_get(root, "objects");
    const char *id;
    json_t *o;
    int seen = 0;
    json_object_foreach(objects, id, o)
    {
        nf_geometry g;
        nf_error err = {0};
        const char *kind = json_string_value(json_object_get(o, "kind"));
        if (strcmp(kind, "resource") == 0) {
            cr_assert_eq(nf_geometry_resource(&g, juint(o, "bytes"), &err), NF_OK);
        } else {
            json_t *shape = json_object_get(o, "shape");
            uint64_t s[NF_MAX_RANK];
            uint32_t rank = (uint32_t)json_array_size(shape);
            for (uint32_t i = 0; i < rank; i++) s[i] = (uint64_t)jint_at(shape, i);
            json_t *dv = json_object_get(o, "divisors");
            uint64_t divisors = dv ? (uint64_t)json_integer_value(dv) : 1;
            const nf_format *f = F(json_string_value(json_object_get(o, "format")));
            const nf_layout *l = L(json_string_value(json_object_get(o, "layout")));
            cr_assert_eq(nf_geometry_init(&g, l, f, rank, s, divisors, &err), NF_OK, "%s: %s", id, err.message);
        }
        uint64_t off = payload + juint(o, "offset");
        cr_assert_eq(g.bytes, juint(o, "bytes"), "%s/%s: size %" PRIu64, name, id, g.bytes);
        cr_assert_leq(off + g.bytes, fsize);
        const uint8_t *obj = file + off;

        nf_words want = expected_words(&g, o, dir), got;
        cr_assert_eq(nf_words_alloc(&got, &g, g.rows, NULL), NF_OK);
        nf_memory_source mem;
        nf_byte_reader rd;
        nf_byte_reader_memory(&rd, &mem, obj, g.bytes);
        cr_assert_eq(nf_layout_decode_rows(&g, &rd, 0, g.rows, &got, &err), NF_OK, "%s: %s", id, err.message);
        if (g.format) cr_assert(words_equal(&g, &want, &got, g.rows, true), "%s/%s: decoded words differ", name, id);
        else cr_assert_eq(memcmp(want.blocks, got.blocks, g.bytes), 0);

        uint8_t *enc = encode_all(&g, &want);
        for (uint64_t i = 0; i < g.bytes; i++)
            cr_assert_eq(enc[i], obj[i], "%s/%s: byte %" PRIu64 " is 0x%02x, upstream wrote 0x%02x", name, id, i,
                         enc[i], obj[i]);
        free(enc);
        problems p;
        uint64_t np = check_bytes(&g, obj, &p);
        if (np) problems_dump(&p);
        cr_assert_eq(np, 0, "%s/%s", name, id);
        if (g.format && g.format->category != NF_CAT_GGUF) check_values(&g, &got, o, id);
        nf_words_free(&want);
        nf_words_free(&got);
        seen++;
    }
    json_decref(root);
    free(file);
    return seen;
}

Test(layout_upstream, container_small) { cr_assert_eq(artifact("container_small"), 3); }
Test(layout_upstream, direct) { cr_assert_eq(artifact("direct"), 5); }
Test(layout_upstream, row_split) { cr_assert_eq(artifact("row_split"), 12); }
Test(layout_upstream, nvfp4) { cr_assert_eq(artifact("nvfp4"), 2); }
Test(layout_upstream, fp8_row) { cr_assert_eq(artifact("fp8_row"), 4); }
Test(layout_upstream, gguf) { cr_assert_eq(artifact("gguf"), 3); }
Test(layout_upstream, model) { cr_assert_eq(artifact("model"), 6); }
Test(layout_upstream, wide_directory) { cr_assert_eq(artifact("wide_directory"), 96); }

/* gguf_blocks_v1 over ggml's own fixtures: rows decode to the block bytes and their values, taken
 * in row chunks (first_row != 0), equal ggml's dequantization bit for bit. */
Test(layout_upstream, gguf_fixture_values)
{
    for (size_t fi = 0; fi < nf_format_count(); fi++) {
        const nf_format *f = nf_format_at(fi);
        if (f->category != NF_CAT_GGUF) continue;
        char path[2048];
        size_t qn, dn;
        snprintf(path, sizeof path, "%s/gguf/%s.qbytes", NINFER_TEST_DATA, f->short_name);
        uint8_t *q = nf_test_read_file(path, &qn);
        snprintf(path, sizeof path, "%s/gguf/%s.dequant.f32", NINFER_TEST_DATA, f->short_name);
        uint8_t *deq = nf_test_read_file(path, &dn);
        nf_geometry g = geo2(f->name, 16, 512, 1);
        cr_assert_eq(g.bytes, qn, "%s", f->name);
        cr_assert_eq(dn, 16 * 512 * 4);
        problems p;
        cr_assert_eq(check_bytes(&g, q, &p), 0);
        nf_memory_source mem;
        nf_byte_reader rd;
        nf_byte_reader_memory(&rd, &mem, q, qn);
        nf_words w;
        cr_assert_eq(nf_words_alloc(&w, &g, 5, NULL), NF_OK);
        float v[5 * 512];
        for (uint64_t r0 = 0; r0 < 16; r0 += 5) {
            uint64_t n = 16 - r0 < 5 ? 16 - r0 : 5;
            nf_error err = {0};
            cr_assert_eq(nf_layout_decode_rows(&g, &rd, r0, r0 + n, &w, &err), NF_OK, "%s", err.message);
            cr_assert_eq(memcmp(w.blocks, q + r0 * g.row_bytes, n * g.row_bytes), 0);
            nf_words view = w;
            view.rows = n;
            cr_assert_eq(nf_words_to_f32(&g, &view, r0, v, &err), NF_OK, "%s: %s", f->name, err.message);
            for (uint64_t i = 0; i < n * 512; i++) {
                uint32_t want;
                memcpy(&want, deq + (r0 * 512 + i) * 4, 4);
                float wf = nf_f32_from_bits(want);
                cr_assert(nf_f32_bits(v[i]) == want || (isnan(v[i]) && isnan(wf)),
                          "%s row %" PRIu64 " col %" PRIu64 ": 0x%08x vs 0x%08x", f->name, r0 + i / 512, i % 512,
                          nf_f32_bits(v[i]), want);
            }
        }
        nf_words_free(&w);
        free(q);
        free(deq);
    }
}
