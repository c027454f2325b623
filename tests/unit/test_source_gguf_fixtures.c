/* GGUF files written by ggml itself (tests/data/gguf, see MANIFEST.md there): the tensor table,
 * types, shapes, offsets, alignment and KVs parse as documented; float tensors read back equal
 * to the reference arrays; quantized tensors' bytes equal the .qbytes files and their values
 * ggml's own dequantization, bit for bit. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "common/io.h"
#include "support/source_writer.h"

#define GGUF_DIR NINFER_TEST_DATA "/gguf/"

static uint8_t *load(const char *name, size_t *len)
{
    char path[512];
    snprintf(path, sizeof path, GGUF_DIR "%s", name);
    uint8_t *p = sw_read_file(path, len);
    cr_assert_not_null(p, "cannot read %s", path);
    return p;
}

static float *load_f32(const char *name, size_t count)
{
    size_t len;
    uint8_t *p = load(name, &len);
    cr_assert_eq(len, count * 4, "%s: %zu bytes, expected %zu", name, len, count * 4);
    return (float *)p; /* the fixtures are little-endian, like the hosts this runs on */
}

static nf_source *open_fixture(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, GGUF_DIR "%s", name);
    nf_source *s = NULL;
    nf_error err = {0};
    nf_status st = nf_source_open(path, &s, &err);
    cr_assert_eq(st, NF_OK, "%s: %s", path, err.message);
    return s;
}

static void expect_values(nf_source *s, const char *tensor, const char *ref, uint64_t rows, uint64_t cols)
{
    const nf_source_tensor *t = nf_source_find(s, tensor);
    cr_assert_not_null(t, "no tensor %s", tensor);
    cr_assert(t->convertible);
    cr_assert_eq(t->rows, rows);
    cr_assert_eq(t->row_elements, cols);
    float *want = load_f32(ref, rows * cols);
    float *got = malloc(rows * cols * sizeof *got);
    nf_error err = {0};
    cr_assert_eq(nf_source_read_f32(s, t, 0, rows, got, rows * cols, &err), NF_OK, "%s", err.message);
    cr_assert(memcmp(got, want, rows * cols * 4) == 0, "%s differs from %s", tensor, ref);
    /* A row range in the middle reads the same values. */
    if (rows > 3) {
        memset(got, 0, rows * cols * sizeof *got);
        cr_assert_eq(nf_source_read_f32(s, t, 1, 3, got, 2 * cols, &err), NF_OK, "%s", err.message);
        cr_assert(memcmp(got, want + cols, 2 * cols * 4) == 0, "%s rows [1,3) differ", tensor);
    }
    /* Spans of a row (nf_source_read_f32_span): every block of every row, then the last two
     * blocks of a row as one span, read alone give ggml's values; a span starting inside a
     * block, or a too small buffer, is refused. */
    const uint64_t bv = t->block_values;
    for (uint64_t r = 0; r < rows; r++) {
        for (uint64_t c0 = 0; c0 < cols; c0 += bv) {
            cr_assert_eq(nf_source_read_f32_span(s, t, r, c0, bv, got, bv, &err), NF_OK, "%s", err.message);
            cr_assert(memcmp(got, want + r * cols + c0, bv * 4) == 0, "%s row %llu span %llu differs", tensor,
                      (unsigned long long)r, (unsigned long long)c0);
        }
    }
    if (cols >= 2 * bv) {
        cr_assert_eq(nf_source_read_f32_span(s, t, rows - 1, cols - 2 * bv, 2 * bv, got, 2 * bv, &err), NF_OK, "%s",
                     err.message);
        cr_assert(memcmp(got, want + rows * cols - 2 * bv, 2 * bv * 4) == 0, "%s last span differs", tensor);
        cr_assert_eq(nf_source_read_f32_span(s, t, 0, 0, 2 * bv, got, 2 * bv - 1, &err), NF_ERR_USAGE);
    }
    if (bv > 1) cr_assert_eq(nf_source_read_f32_span(s, t, 0, 1, bv, got, bv, &err), NF_ERR_USAGE);
    cr_assert_eq(nf_source_read_f32_span(s, t, rows, 0, bv, got, bv, &err), NF_ERR_USAGE);
    cr_assert_eq(nf_source_read_f32_span(s, t, 0, cols, 1, got, bv, &err), NF_ERR_USAGE);
    free(got);
    free(want);
}

static void expect_quantized(nf_source *s, const char *tensor, const nf_format *f)
{
    const nf_source_tensor *t = nf_source_find(s, tensor);
    cr_assert_not_null(t, "no tensor %s", tensor);
    cr_assert_eq(t->ggml_type, f->ggml_type, "%s: type %d", tensor, t->ggml_type);
    cr_assert_eq(t->format, f);
    cr_assert_eq(t->block_values, f->block_values);
    cr_assert_eq(t->block_bytes, f->block_bytes);
    cr_assert_eq(t->rank, 2);
    cr_assert_eq(t->shape[0], 16);
    cr_assert_eq(t->shape[1], 512);
    cr_assert_eq(t->rows, 16);
    cr_assert_eq(t->row_bytes, 512 / f->block_values * f->block_bytes);
    cr_assert_eq(t->bytes, 16 * t->row_bytes);
    char name[64];
    snprintf(name, sizeof name, "%s.qbytes", f->short_name);
    size_t qlen;
    uint8_t *q = load(name, &qlen);
    cr_assert_eq(qlen, t->bytes);
    uint8_t *raw = malloc(qlen);
    nf_error err = {0};
    cr_assert_eq(nf_source_read_rows(s, t, 0, 16, raw, qlen, &err), NF_OK, "%s", err.message);
    cr_assert(memcmp(raw, q, qlen) == 0, "%s bytes differ from %s", tensor, name);
    /* Rows 5..9 are the same bytes as the slice of the whole. */
    cr_assert_eq(nf_source_read_rows(s, t, 5, 9, raw, qlen, &err), NF_OK, "%s", err.message);
    cr_assert(memcmp(raw, q + 5 * t->row_bytes, 4 * t->row_bytes) == 0);
    free(raw);
    free(q);
    snprintf(name, sizeof name, "%s.dequant.f32", f->short_name);
    expect_values(s, tensor, name, 16, 512);
}

Test(source_gguf_fixtures, all_types_table)
{
    nf_source *s = open_fixture("all_types.gguf");
    cr_assert_eq(nf_source_kind_of(s), NF_SOURCE_GGUF);
    cr_assert_eq(nf_source_gguf_version(s), 3);
    cr_assert_eq(nf_source_gguf_alignment(s), 32);
    cr_assert_eq(nf_source_gguf_data_offset(s), 1696);
    cr_assert_eq(nf_source_file_count(s), 1);
    cr_assert_eq(nf_source_file_size(s, 0), 139808);
    cr_assert_eq(nf_source_tensor_count(s), 22);
    cr_assert_eq(nf_source_companion_count(s), 0);
    static const struct {
        const char *name, *type;
        uint64_t offset, bytes;
    } want[] = {
        {"src.f32", "F32", 0, 32768},           {"src.f16", "F16", 32768, 16384},
        {"src.bf16", "BF16", 49152, 16384},     {"norm.f32", "F32", 65536, 2048},
        {"q.q8_0", "Q8_0", 67584, 8704},        {"q.q4_0", "Q4_0", 76288, 4608},
        {"q.q5_0", "Q5_0", 80896, 5632},        {"q.q2_k", "Q2_K", 86528, 2688},
        {"q.q3_k", "Q3_K", 89216, 3520},        {"q.q4_k", "Q4_K", 92736, 4608},
        {"q.q5_k", "Q5_K", 97344, 5632},        {"q.q6_k", "Q6_K", 102976, 6720},
        {"q.iq2_xxs", "IQ2_XXS", 109696, 2112}, {"q.iq2_xs", "IQ2_XS", 111808, 2368},
        {"q.iq3_xxs", "IQ3_XXS", 114176, 3136}, {"q.iq1_s", "IQ1_S", 117312, 1600},
        {"q.iq4_nl", "IQ4_NL", 118912, 4608},   {"q.iq3_s", "IQ3_S", 123520, 3520},
        {"q.iq2_s", "IQ2_S", 127040, 2624},     {"q.iq4_xs", "IQ4_XS", 129664, 4352},
        {"q.iq1_m", "IQ1_M", 134016, 1792},     {"q.q2_0", "Q2_0", 135808, 2304},
    };
    for (size_t i = 0; i < 22; i++) {
        const nf_source_tensor *t = nf_source_tensor_at(s, i);
        cr_assert_str_eq(t->name, want[i].name);
        cr_assert_str_eq(t->type_name, want[i].type, "%s: %s", t->name, t->type_name);
        cr_assert_eq(t->offset, 1696 + want[i].offset, "%s offset %llu", t->name, (unsigned long long)t->offset);
        cr_assert_eq(t->bytes, want[i].bytes, "%s bytes", t->name);
        cr_assert_eq(t->dtype, NF_ST_NONE);
        cr_assert_eq(t->file, 0);
        cr_assert(t->convertible, "%s", t->name);
        cr_assert_eq(nf_source_find(s, t->name), t);
        if (strcmp(t->name, "norm.f32") == 0) {
            cr_assert_eq(t->rank, 1);
            cr_assert_eq(t->shape[0], 512);
            cr_assert_eq(t->rows, 1);
            cr_assert_eq(t->row_elements, 512);
        } else {
            cr_assert_eq(t->rank, 2);
            cr_assert_eq(t->shape[0], 16); /* ne = [512, 16] -> [N=16, K=512] */
            cr_assert_eq(t->shape[1], 512);
            cr_assert_eq(t->elements, 8192);
        }
    }
    cr_assert_null(nf_source_find(s, "q.q4_1"));
    nf_source_close(s);
}

Test(source_gguf_fixtures, all_types_kvs)
{
    nf_source *s = open_fixture("all_types.gguf");
    cr_assert_eq(nf_source_gguf_kv_count(s), 16);
    static const char *order[] = {
        "general.architecture",
        "general.name",
        "general.quantization_version",
        "fixture.rows",
        "fixture.cols",
        "fixture.source_std",
        "fixture.pi",
        "fixture.has_imatrix_types",
        "fixture.i32",
        "fixture.u8",
        "fixture.i16",
        "fixture.i64",
        "fixture.i32_array",
        "fixture.f32_array",
        "fixture.str_array",
        "fixture.n_quant_types",
    };
    for (size_t i = 0; i < 16; i++) cr_assert_str_eq(nf_source_gguf_kv_at(s, i)->key, order[i]);
    nf_error err = {0};
    const char *str;
    size_t len;
    uint64_t u;
    int64_t i64;
    double d;
    bool b;
    const nf_gguf_kv *kv = nf_source_gguf_kv_find(s, "general.architecture");
    cr_assert_eq(kv->type, NF_GGUF_STRING);
    cr_assert_eq(nf_gguf_kv_string(kv, 0, &str, &len, &err), NF_OK);
    cr_assert_str_eq(str, "fixture");
    cr_assert_eq(len, 7);
    cr_assert_eq(nf_gguf_kv_string(nf_source_gguf_kv_find(s, "general.name"), 0, &str, &len, &err), NF_OK);
    cr_assert_str_eq(str, "fixture-all-types");
    kv = nf_source_gguf_kv_find(s, "general.quantization_version");
    cr_assert_eq(kv->type, NF_GGUF_U32);
    cr_assert_eq(nf_gguf_kv_uint(kv, 0, &u, &err), NF_OK);
    cr_assert_eq(u, 2);
    cr_assert_eq(nf_gguf_kv_uint(nf_source_gguf_kv_find(s, "fixture.rows"), 0, &u, &err), NF_OK);
    cr_assert_eq(u, 16);
    kv = nf_source_gguf_kv_find(s, "fixture.cols");
    cr_assert_eq(kv->type, NF_GGUF_U64);
    cr_assert_eq(nf_gguf_kv_uint(kv, 0, &u, &err), NF_OK);
    cr_assert_eq(u, 512);
    kv = nf_source_gguf_kv_find(s, "fixture.source_std");
    cr_assert_eq(kv->type, NF_GGUF_F32);
    cr_assert_eq(nf_gguf_kv_float(kv, 0, &d, &err), NF_OK);
    cr_assert_eq(d, (double)0.02f);
    cr_assert_eq(nf_gguf_kv_float(nf_source_gguf_kv_find(s, "fixture.pi"), 0, &d, &err), NF_OK);
    cr_assert_eq(d, 3.141592653589793);
    cr_assert_eq(nf_gguf_kv_bool(nf_source_gguf_kv_find(s, "fixture.has_imatrix_types"), 0, &b, &err), NF_OK);
    cr_assert(b);
    kv = nf_source_gguf_kv_find(s, "fixture.i32");
    cr_assert_eq(nf_gguf_kv_int(kv, 0, &i64, &err), NF_OK);
    cr_assert_eq(i64, -123456);
    cr_assert_eq(nf_gguf_kv_uint(kv, 0, &u, &err), NF_ERR_INVALID, "a negative i32 read as unsigned");
    cr_assert(strstr(err.message, "fixture.i32"), "%s", err.message);
    kv = nf_source_gguf_kv_find(s, "fixture.u8");
    cr_assert_eq(kv->type, NF_GGUF_U8);
    cr_assert_eq(nf_gguf_kv_int(kv, 0, &i64, &err), NF_OK);
    cr_assert_eq(i64, 200);
    cr_assert_eq(nf_gguf_kv_int(nf_source_gguf_kv_find(s, "fixture.i16"), 0, &i64, &err), NF_OK);
    cr_assert_eq(i64, -300);
    cr_assert_eq(nf_gguf_kv_int(nf_source_gguf_kv_find(s, "fixture.i64"), 0, &i64, &err), NF_OK);
    cr_assert_eq(i64, -5000000000LL);
    kv = nf_source_gguf_kv_find(s, "fixture.i32_array");
    cr_assert_eq(kv->type, NF_GGUF_ARRAY);
    cr_assert_eq(kv->elem_type, NF_GGUF_I32);
    cr_assert_eq(kv->count, 5);
    static const int64_t ia[] = {1, -2, 3, -4, 2147483647};
    for (uint64_t k = 0; k < 5; k++) {
        cr_assert_eq(nf_gguf_kv_int(kv, k, &i64, &err), NF_OK);
        cr_assert_eq(i64, ia[k]);
    }
    cr_assert_eq(nf_gguf_kv_int(kv, 5, &i64, &err), NF_ERR_USAGE);
    cr_assert_eq(nf_gguf_kv_float(kv, 0, &d, &err), NF_ERR_INVALID, "an i32 array is not float");
    kv = nf_source_gguf_kv_find(s, "fixture.f32_array");
    cr_assert_eq(kv->count, 3);
    static const float fa[] = {0.5f, -1.25f, 0.001f};
    for (uint64_t k = 0; k < 3; k++) {
        cr_assert_eq(nf_gguf_kv_float(kv, k, &d, &err), NF_OK);
        cr_assert_eq(d, (double)fa[k]);
    }
    kv = nf_source_gguf_kv_find(s, "fixture.str_array");
    cr_assert_eq(kv->elem_type, NF_GGUF_STRING);
    cr_assert_eq(kv->count, 3);
    static const char *sa[] = {"alpha", "", "gamma \xce\xb3"};
    for (uint64_t k = 0; k < 3; k++) {
        cr_assert_eq(nf_gguf_kv_string(kv, k, &str, &len, &err), NF_OK);
        cr_assert_str_eq(str, sa[k]);
        cr_assert_eq(len, strlen(sa[k]));
    }
    cr_assert_eq(nf_gguf_kv_uint(nf_source_gguf_kv_find(s, "fixture.n_quant_types"), 0, &u, &err), NF_OK);
    cr_assert_eq(u, 18);
    cr_assert_null(nf_source_gguf_kv_find(s, "general.alignment"));
    cr_assert_null(nf_source_gguf_kv_find(s, "fixture"));
    nf_source_close(s);
}

Test(source_gguf_fixtures, all_types_float_tensors)
{
    nf_source *s = open_fixture("all_types.gguf");
    expect_values(s, "src.f32", "source.f32", 16, 512);
    expect_values(s, "src.f16", "source.f16.dequant.f32", 16, 512);
    expect_values(s, "src.bf16", "source.bf16.dequant.f32", 16, 512);
    expect_values(s, "norm.f32", "norm.f32", 1, 512);
    nf_source_close(s);
}

Test(source_gguf_fixtures, all_types_quantized_tensors)
{
    nf_source *s = open_fixture("all_types.gguf");
    size_t seen = 0;
    for (size_t i = 0; i < nf_format_count(); i++) {
        const nf_format *f = nf_format_at(i);
        if (f->category != NF_CAT_GGUF) continue;
        char name[64];
        snprintf(name, sizeof name, "q.%s", f->short_name);
        expect_quantized(s, name, f);
        /* The reader's own ggml table agrees with the format registry. */
        uint32_t bv, bb;
        cr_assert(nf_ggml_type_block(f->ggml_type, &bv, &bb));
        cr_assert_eq(bv, f->block_values);
        cr_assert_eq(bb, f->block_bytes);
        seen++;
    }
    cr_assert_eq(seen, 18);
    nf_source_close(s);
}

Test(source_gguf_fixtures, per_type_files)
{
    for (size_t i = 0; i < nf_format_count(); i++) {
        const nf_format *f = nf_format_at(i);
        if (f->category != NF_CAT_GGUF) continue;
        char name[64];
        snprintf(name, sizeof name, "%s.gguf", f->short_name);
        nf_source *s = open_fixture(name);
        cr_assert_eq(nf_source_gguf_data_offset(s), 960, "%s", name);
        cr_assert_eq(nf_source_gguf_kv_count(s), 17);
        cr_assert_eq(nf_source_tensor_count(s), 4);
        nf_error err = {0};
        uint64_t u;
        cr_assert_eq(nf_gguf_kv_uint(nf_source_gguf_kv_find(s, "fixture.ggml_type"), 0, &u, &err), NF_OK);
        cr_assert_eq(u, (uint64_t)f->ggml_type);
        const nf_source_tensor *q = nf_source_tensor_at(s, 0);
        cr_assert_str_eq(q->name, "blk.0.attn_q.weight");
        uint64_t qpad = (q->bytes + 31) / 32 * 32;
        cr_assert_eq(nf_source_tensor_at(s, 1)->offset, 960 + qpad);
        cr_assert_eq(nf_source_tensor_at(s, 2)->offset, 960 + qpad + 2048);
        cr_assert_eq(nf_source_tensor_at(s, 3)->offset, 960 + qpad + 2048 + 4096);
        cr_assert_eq(nf_source_file_size(s, 0), 960 + qpad + 2048 + 4096 + 4096);
        expect_quantized(s, "blk.0.attn_q.weight", f);
        expect_values(s, "blk.0.attn_norm.weight", "norm.f32", 1, 512);
        expect_values(s, "blk.0.ffn_gate.weight", "f16.dequant.f32", 4, 512);
        expect_values(s, "blk.0.ffn_up.weight", "bf16.dequant.f32", 4, 512);
        nf_source_close(s);
    }
}

/* The memory path parses the same bytes to the same table, and raw access agrees. */
Test(source_gguf_fixtures, memory_image_matches_file)
{
    size_t len;
    uint8_t *img = load("all_types.gguf", &len);
    nf_source *m = NULL, *f = open_fixture("all_types.gguf");
    nf_error err = {0};
    cr_assert_eq(nf_source_open_memory(img, len, NF_SOURCE_AUTO, "all_types", &m, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_source_kind_of(m), NF_SOURCE_GGUF);
    cr_assert_eq(nf_source_tensor_count(m), nf_source_tensor_count(f));
    for (size_t i = 0; i < nf_source_tensor_count(m); i++) {
        const nf_source_tensor *a = nf_source_tensor_at(m, i), *b = nf_source_tensor_at(f, i);
        cr_assert_str_eq(a->name, b->name);
        cr_assert_eq(a->offset, b->offset);
        cr_assert_eq(a->bytes, b->bytes);
        uint8_t x[64], y[64];
        nf_byte_reader r;
        nf_source_tensor_reader(m, a, &r);
        cr_assert_eq(r.read(r.ctx, 0, x, sizeof x, &err), NF_OK, "%s", err.message);
        cr_assert_eq(nf_source_read_bytes(f, b, 0, y, sizeof y, &err), NF_OK, "%s", err.message);
        cr_assert(memcmp(x, y, sizeof x) == 0);
        cr_assert(memcmp(x, img + a->offset, sizeof x) == 0);
    }
    /* A tensor of one source is refused by the other. */
    cr_assert_eq(nf_source_read_bytes(m, nf_source_tensor_at(f, 0), 0, NULL, 0, &err), NF_ERR_USAGE);
    nf_source_close(m);
    nf_source_close(f);
    free(img);
}

Test(source_gguf_fixtures, range_checks)
{
    nf_source *s = open_fixture("q4_k.gguf");
    const nf_source_tensor *t = nf_source_find(s, "blk.0.attn_q.weight");
    nf_error err = {0};
    uint8_t buf[4096];
    float out[512];
    cr_assert_eq(nf_source_read_rows(s, t, 15, 17, buf, sizeof buf, &err), NF_ERR_USAGE);
    cr_assert_eq(nf_source_read_rows(s, t, 3, 2, buf, sizeof buf, &err), NF_ERR_USAGE);
    cr_assert_eq(nf_source_read_rows(s, t, 0, 16, buf, 100, &err), NF_ERR_USAGE, "buffer too small");
    cr_assert_eq(nf_source_read_f32(s, t, 0, 2, out, 512, &err), NF_ERR_USAGE, "1024 values into 512");
    cr_assert_eq(nf_source_read_bytes(s, t, t->bytes - 1, buf, 2, &err), NF_ERR_USAGE);
    cr_assert_eq(nf_source_read_bytes(s, t, UINT64_MAX, buf, 2, &err), NF_ERR_USAGE);
    cr_assert_eq(nf_source_read_rows(s, t, 4, 4, NULL, 0, &err), NF_OK, "an empty range is fine");
    nf_source_close(s);
}

/* A failing read while parsing is a system error, and nothing leaks (ASan runs check that). */
Test(source_gguf_fixtures, io_failure_is_a_system_error)
{
    for (uint64_t n = 1; n <= 3; n++) {
        nf_io_fault_reset();
        nf_io_fault_arm(NF_IO_READ, n, EIO);
        nf_source *s = NULL;
        nf_error err = {0};
        nf_status st = nf_source_open(GGUF_DIR "q8_0.gguf", &s, &err);
        nf_io_fault_reset();
        if (st == NF_OK) {
            /* The header took fewer reads than n: the fault hits a data read instead. */
            cr_assert_geq(n, 2);
            nf_io_fault_arm(NF_IO_READ, 1, EIO);
            float out[512];
            st = nf_source_read_f32(s, nf_source_tensor_at(s, 1), 0, 1, out, 512, &err);
            nf_io_fault_reset();
            nf_source_close(s);
        }
        cr_assert_eq(st, NF_ERR_IO, "fault %llu: %s", (unsigned long long)n, err.message);
        cr_assert(strstr(err.message, "q8_0.gguf"), "%s", err.message);
    }
    nf_io_fault_arm(NF_IO_OPEN, 1, EACCES);
    nf_source *s = NULL;
    nf_error err = {0};
    cr_assert_eq(nf_source_open(GGUF_DIR "q8_0.gguf", &s, &err), NF_ERR_IO);
    nf_io_fault_reset();
    cr_assert_eq(nf_source_open(GGUF_DIR "no-such-file.gguf", &s, &err), NF_ERR_IO);
}
