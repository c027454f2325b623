/* Round trips: small valid safetensors and GGUF files written by the test writer, read back
 * through files and memory images; every tensor's bytes come back exactly and every convertible
 * tensor's values equal the documented conversion (bit patterns spelled out here, not computed
 * with the library's own codecs). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "support/source_writer.h"
#include "support/test_float.h"

/* Open the same bytes as a file (in dir) and as a memory image; run check on both. */
static void both_ways(const sw_buf *b, const char *dir, const char *name, void (*check)(nf_source *))
{
    char *p = sw_path(dir, name);
    cr_assert_eq(sw_write_file(p, b->data, b->len), 0);
    nf_source *s = NULL;
    nf_error err = {0};
    cr_assert_eq(nf_source_open(p, &s, &err), NF_OK, "%s", err.message);
    cr_assert_str_eq(nf_source_file_path(s, 0), p);
    check(s);
    nf_source_close(s);
    cr_assert_eq(nf_source_open_memory(b->data, b->len, NF_SOURCE_AUTO, name, &s, &err), NF_OK, "%s", err.message);
    check(s);
    nf_source_close(s);
    free(p);
}

static void expect_f32_bits(nf_source *s, const char *name, const uint32_t *want, size_t n)
{
    const nf_source_tensor *t = nf_source_find(s, name);
    cr_assert_not_null(t, "no tensor %s", name);
    cr_assert(t->convertible, "%s", name);
    cr_assert_eq(t->rows * t->row_elements, n, "%s", name);
    float *out = calloc(n, sizeof *out);
    nf_error err = {0};
    cr_assert_eq(nf_source_read_f32(s, t, 0, t->rows, out, n, &err), NF_OK, "%s", err.message);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(bits_of_f32(out[i]), want[i], "%s[%zu]: 0x%08x, expected 0x%08x", name, i, bits_of_f32(out[i]),
                     want[i]);
    /* Row by row gives the same values. */
    for (uint64_t r = 0; r < t->rows; r++) {
        float row[64];
        cr_assert_lt(t->row_elements, 65);
        cr_assert_eq(nf_source_read_f32(s, t, r, r + 1, row, 64, &err), NF_OK, "%s", err.message);
        cr_assert(memcmp(row, out + r * t->row_elements, t->row_elements * 4) == 0);
    }
    free(out);
}

static void expect_bytes(nf_source *s, const char *name, const void *want, size_t n)
{
    const nf_source_tensor *t = nf_source_find(s, name);
    cr_assert_not_null(t, "no tensor %s", name);
    cr_assert_eq(t->bytes, n, "%s: %llu bytes", name, (unsigned long long)t->bytes);
    uint8_t *got = malloc(n + 1);
    nf_error err = {0};
    cr_assert_eq(nf_source_read_bytes(s, t, 0, got, n, &err), NF_OK, "%s", err.message);
    cr_assert(memcmp(got, want, n) == 0, "%s bytes differ", name);
    if (t->row_bytes && t->rows * t->row_bytes == n) {
        memset(got, 0, n);
        cr_assert_eq(nf_source_read_rows(s, t, 0, t->rows, got, n, &err), NF_OK, "%s", err.message);
        cr_assert(memcmp(got, want, n) == 0, "%s rows differ", name);
    }
    free(got);
}

/* ---------------------------------------------------------------- safetensors */
static const uint64_t f64_in[6] = {
    0x3FB999999999999Aull, /* 0.1 -> 0x3DCCCCCD */
    0xC7EFFFFFEFFFFFFFull, /* just below -(FLT_MAX + half an ulp) -> -FLT_MAX (beyond: refused) */
    0x358DEE7A4AD4B81Full, /* 1e-50 -> +0 */
    0x3FF0000010000000ull, /* 1 + 2^-24: tie -> 1.0 (even) */
    0x3FF0000030000000ull, /* 1 + 3*2^-24: tie -> 1 + 2^-22 (even) */
    0x7FF8000000000000ull, /* NaN */
};
static const uint32_t f64_out[6] = {0x3DCCCCCD, 0xFF7FFFFF, 0x00000000, 0x3F800000, 0x3F800002, 0x7FC00000};
static const uint32_t f32_in[4] = {0x3F800000, 0x7FC12345, 0x80000000, 0x00000001};
static const uint16_t f16_in[4] = {0x3C00, 0x0001, 0xFC00, 0x7BFF};
static const uint32_t f16_out[4] = {0x3F800000, 0x33800000, 0xFF800000, 0x477FE000};
static const uint16_t bf16_in[4] = {0x3F80, 0xC2F7, 0x0001, 0x7F80};
static const uint32_t bf16_out[4] = {0x3F800000, 0xC2F70000, 0x00010000, 0x7F800000};
static const uint8_t e4m3_in[4] = {0x38, 0x7E, 0x01, 0xFE};
static const uint32_t e4m3_out[4] = {0x3F800000, 0x43E00000, 0x3B000000, 0xC3E00000};
static const uint8_t e5m2_in[4] = {0x3C, 0x7B, 0x01, 0xFC};
static const uint32_t e5m2_out[4] = {0x3F800000, 0x47600000, 0x37800000, 0xFF800000};
static const uint8_t i8_in[4] = {0x80, 0x7F, 0xFF, 0x00};
static const uint32_t i8_out[4] = {0xC3000000, 0x42FE0000, 0xBF800000, 0x00000000};
static const uint8_t u8_in[4] = {255, 0, 1, 128};
static const uint32_t u8_out[4] = {0x437F0000, 0x00000000, 0x3F800000, 0x43000000};
static const uint16_t i16_in[2] = {0x8000, 0x7FFF};
static const uint32_t i16_out[2] = {0xC7000000, 0x46FFFE00};
static const uint32_t i32_in[4] = {16777217u, 16777219u, 0x80000000u, 0xFFFFFFFFu};
static const uint32_t i32_out[4] = {0x4B800000, 0x4B800002, 0xCF000000, 0xBF800000};
static const uint64_t i64_in[4] = {(1ull << 53) + 1, 0x8000000000000000ull, 0x7FFFFFFFFFFFFFFFull, 16777217ull};
static const uint32_t i64_out[4] = {0x5A000000, 0xDF000000, 0x5F000000, 0x4B800000};
static const uint8_t bool_in[2] = {0, 1};
static const uint32_t bool_out[2] = {0x00000000, 0x3F800000};
static const uint8_t raw16[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

static const sw_st_tensor st_tensors[] = {
    {"t.f64", "F64", 2, {2, 3}, f64_in, sizeof f64_in},
    {"t.f32", "F32", 2, {2, 2}, f32_in, sizeof f32_in},
    {"t.f16", "F16", 1, {4}, f16_in, sizeof f16_in},
    {"t.bf16", "BF16", 2, {4, 1}, bf16_in, sizeof bf16_in},
    {"t.e4m3", "F8_E4M3", 2, {2, 2}, e4m3_in, 4},
    {"t.e5m2", "F8_E5M2", 1, {4}, e5m2_in, 4},
    {"t.i8", "I8", 3, {1, 2, 2}, i8_in, 4},
    {"t.u8", "U8", 1, {4}, u8_in, 4},
    {"t.i16", "I16", 1, {2}, i16_in, sizeof i16_in},
    {"t.i32", "I32", 1, {4}, i32_in, sizeof i32_in},
    {"t.i64", "I64", 2, {4, 1}, i64_in, sizeof i64_in},
    {"t.bool", "BOOL", 1, {2}, bool_in, 2},
    {"t.u16", "U16", 1, {2}, raw16, 4},
    {"t.u32", "U32", 1, {2}, raw16, 8},
    {"t.u64", "U64", 1, {2}, raw16, 16},
    {"t.c64", "C64", 1, {2}, raw16, 16},
    {"t.e8m0", "F8_E8M0", 1, {3}, raw16, 3},
    {"t.e4m3fnuz", "F8_E4M3FNUZ", 1, {1}, raw16, 1},
    {"t.e5m2fnuz", "F8_E5M2FNUZ", 1, {1}, raw16, 1},
    {"t.f4", "F4", 2, {2, 4}, raw16, 4},
    {"t.f6a", "F6_E2M3", 1, {4}, raw16, 3},
    {"t.f6b", "F6_E3M2", 2, {2, 4}, raw16, 6},
    {"t.scalar", "F32", 0, {0}, f32_in, 4},
    {"t.empty", "BF16", 2, {0, 7}, raw16, 0},
};
#define N_ST (sizeof st_tensors / sizeof st_tensors[0])

static void check_st(nf_source *s)
{
    cr_assert_eq(nf_source_kind_of(s), NF_SOURCE_SAFETENSORS);
    cr_assert_eq(nf_source_tensor_count(s), N_ST);
    for (size_t i = 0; i < N_ST; i++) {
        const nf_source_tensor *t = nf_source_tensor_at(s, i);
        /* File order = written order (offsets increase); the empty tensor sits at its offset. */
        if (st_tensors[i].bytes) cr_assert_str_eq(t->name, st_tensors[i].name);
        const nf_source_tensor *f = nf_source_find(s, st_tensors[i].name);
        cr_assert_not_null(f);
        cr_assert_str_eq(f->type_name, st_tensors[i].dtype);
        cr_assert_eq(f->rank, st_tensors[i].rank);
        for (uint32_t d = 0; d < f->rank; d++) cr_assert_eq(f->shape[d], st_tensors[i].shape[d]);
        cr_assert_eq(f->ggml_type, -1);
        cr_assert_null(f->format);
        expect_bytes(s, st_tensors[i].name, st_tensors[i].data, st_tensors[i].bytes);
    }
    expect_f32_bits(s, "t.f64", f64_out, 6);
    expect_f32_bits(s, "t.f32", f32_in, 4);
    expect_f32_bits(s, "t.f16", f16_out, 4);
    expect_f32_bits(s, "t.bf16", bf16_out, 4);
    expect_f32_bits(s, "t.e4m3", e4m3_out, 4);
    expect_f32_bits(s, "t.e5m2", e5m2_out, 4);
    expect_f32_bits(s, "t.i8", i8_out, 4);
    expect_f32_bits(s, "t.u8", u8_out, 4);
    expect_f32_bits(s, "t.i16", i16_out, 2);
    expect_f32_bits(s, "t.i32", i32_out, 4);
    expect_f32_bits(s, "t.i64", i64_out, 4);
    expect_f32_bits(s, "t.bool", bool_out, 2);
    expect_f32_bits(s, "t.scalar", f32_in, 1);
    const nf_source_tensor *i8 = nf_source_find(s, "t.i8");
    cr_assert_eq(i8->rows, 2);
    cr_assert_eq(i8->row_elements, 2);
    cr_assert_eq(nf_source_find(s, "t.f6b")->row_bytes, 3);
    cr_assert_eq(nf_source_find(s, "t.empty")->rows, 0);
    cr_assert_eq(nf_source_st_metadata_count(s, 0), 1);
    cr_assert_str_eq(nf_source_st_metadata(s, 0, "format"), "pt");
}

Test(source_roundtrip, safetensors_every_dtype)
{
    char *dir = sw_tempdir();
    sw_buf b = {0};
    sw_st_file(&b, st_tensors, N_ST, "{\"format\":\"pt\"}");
    both_ways(&b, dir, "all.safetensors", check_st);
    sw_free(&b);
    sw_rmtree(dir);
    free(dir);
}

Test(source_roundtrip, safetensors_bad_bool_named_on_read)
{
    static const uint8_t v[3] = {0, 1, 2};
    sw_st_tensor t[1] = {{"mask", "BOOL", 2, {1, 3}, v, 3}};
    sw_buf b = {0};
    sw_st_file(&b, t, 1, NULL);
    nf_source *s = NULL;
    nf_error err = {0};
    cr_assert_eq(nf_source_open_memory(b.data, b.len, NF_SOURCE_AUTO, "m", &s, &err), NF_OK, "%s", err.message);
    float out[3];
    cr_assert_eq(nf_source_read_f32(s, nf_source_tensor_at(s, 0), 0, 1, out, 3, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "tensor 'mask': row 0 column 2"), "%s", err.message);
    nf_source_close(s);
    sw_free(&b);
}

/* A tensor larger than the conversion chunk converts in pieces with the same result. */
/* A finite F64 beyond binary32's range is refused by the reader, naming the value as stored (not
 * the +-inf it would round to, which is what the encoders used to report: docs/security.md 7.1, M6). */
static void expect_f64_refused(uint64_t bits, const char *needle)
{
    uint64_t v[3] = {0x3FF0000000000000ull, 0x4000000000000000ull, bits}; /* 1, 2, bits */
    sw_st_tensor t[1] = {{"w64", "F64", 2, {1, 3}, v, sizeof v}};
    sw_buf b = {0};
    sw_st_file(&b, t, 1, NULL);
    nf_source *s = NULL;
    nf_error err = {0};
    cr_assert_eq(nf_source_open_memory(b.data, b.len, NF_SOURCE_AUTO, "m", &s, &err), NF_OK, "%s", err.message);
    float out[3];
    cr_assert_eq(nf_source_read_f32(s, nf_source_tensor_at(s, 0), 0, 1, out, 3, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "tensor 'w64': row 0 column 2"), "%s", err.message);
    cr_assert(strstr(err.message, needle), "'%s' lacks '%s'", err.message, needle);
    cr_assert_null(strstr(err.message, "inf"), "%s", err.message);
    nf_source_close(s);
    sw_free(&b);
}

Test(source_roundtrip, f64_beyond_binary32_named_on_read)
{
    expect_f64_refused(0x7E37E43C8800759Cull, "source value 1e+300 (F64) overflows binary32");
    expect_f64_refused(0xFE37E43C8800759Cull, "source value -1e+300 (F64) overflows binary32");
    /* FLT_MAX + half an ulp: the tie rounds to even, which is infinity */
    expect_f64_refused(0x47EFFFFFF0000000ull, "source value 3.4028235677973366e+38 (F64) overflows binary32");
}

Test(source_roundtrip, safetensors_large_tensor_in_chunks)
{
    size_t n = 300000; /* 2.4 MB of F64: three chunks */
    uint64_t *v = malloc(n * 8);
    for (size_t i = 0; i < n; i++) {
        double d = (double)i + 0.5;
        memcpy(&v[i], &d, 8);
    }
    sw_st_tensor t[1] = {{"big", "F64", 2, {3, 100000}, v, n * 8}};
    sw_buf b = {0};
    sw_st_file(&b, t, 1, NULL);
    nf_source *s = NULL;
    nf_error err = {0};
    cr_assert_eq(nf_source_open_memory(b.data, b.len, NF_SOURCE_AUTO, "m", &s, &err), NF_OK, "%s", err.message);
    float *out = malloc(n * sizeof *out);
    cr_assert_eq(nf_source_read_f32(s, nf_source_tensor_at(s, 0), 0, 3, out, n, &err), NF_OK, "%s", err.message);
    for (size_t i = 0; i < n; i++) cr_assert_eq(out[i], (float)((double)i + 0.5), "value %zu", i);
    cr_assert_eq(nf_source_read_f32(s, nf_source_tensor_at(s, 0), 2, 3, out, n, &err), NF_OK, "%s", err.message);
    cr_assert_eq(out[0], (float)(200000.5));
    nf_source_close(s);
    sw_free(&b);
    free(out);
    free(v);
}

/* ---------------------------------------------------------------- GGUF */
static float g_f32[12];
static uint16_t g_f16[8] = {0x3C00, 0xBC00, 0x0001, 0x7C00, 0x3800, 0x4000, 0x4200, 0x4400};
static uint16_t g_bf16[4] = {0x3F80, 0xC000, 0x0000, 0x8000};
static uint8_t g_i8[4] = {0x80, 0x01, 0xFF, 0x7F};
static uint16_t g_i16[2] = {0xFFFF, 0x0100};
static uint32_t g_i32[2] = {0x7FFFFFFFu, 16777219u};
static uint64_t g_i64[2] = {0xFFFFFFFFFFFFFFFFull, 1ull << 40};
static uint64_t g_f64[2] = {0x3FB999999999999Aull, 0x4000000000000000ull};
static uint8_t g_q8[2 * 34];
static uint8_t g_pq2[34];
static uint8_t g_q4_1[20 * 2];
static float g_3d[24];

static const sw_gguf_tensor gg_tensors[] = {
    {"f32", 0, 2, {4, 3}, g_f32, sizeof g_f32},
    {"f16", 1, 2, {4, 2}, g_f16, sizeof g_f16},
    {"bf16", 30, 1, {4}, g_bf16, sizeof g_bf16},
    {"i8", 24, 1, {4}, g_i8, 4},
    {"i16", 25, 1, {2}, g_i16, 4},
    {"i32", 26, 1, {2}, g_i32, 8},
    {"i64", 27, 1, {2}, g_i64, 16},
    {"f64", 28, 1, {2}, g_f64, 16},
    {"q8_0", 8, 2, {32, 2}, g_q8, sizeof g_q8},
    {"pq2_0", 142, 1, {128}, g_pq2, sizeof g_pq2},
    {"q4_1", 3, 2, {32, 2}, g_q4_1, sizeof g_q4_1},
    {"cube", 0, 3, {4, 3, 2}, g_3d, sizeof g_3d},
};
#define N_GG (sizeof gg_tensors / sizeof gg_tensors[0])

static void fill_gguf_data(void)
{
    for (int i = 0; i < 12; i++) g_f32[i] = (float)i * 0.25f - 1.0f;
    for (int i = 0; i < 24; i++) g_3d[i] = (float)i;
    for (int r = 0; r < 2; r++) {
        uint8_t *blk = g_q8 + 34 * r;
        blk[0] = 0x00;
        blk[1] = r ? 0x38 : 0x3C; /* d = 1.0, then 0.5 */
        for (int j = 0; j < 32; j++) blk[2 + j] = (uint8_t)(j - 16);
    }
    g_pq2[0] = 0x00;
    g_pq2[1] = 0x40; /* d = 2.0 */
    for (int j = 0; j < 128; j++) g_pq2[2 + j / 4] |= (uint8_t)((j % 3) << (2 * (j % 4)));
    for (int i = 0; i < 40; i++) g_q4_1[i] = (uint8_t)i;
}

static void check_gguf(nf_source *s)
{
    cr_assert_eq(nf_source_kind_of(s), NF_SOURCE_GGUF);
    cr_assert_eq(nf_source_tensor_count(s), N_GG);
    cr_assert_eq(nf_source_gguf_alignment(s), 64);
    const nf_gguf_kv *arch = nf_source_gguf_kv_find(s, "general.architecture");
    const char *str;
    nf_error err = {0};
    cr_assert_eq(nf_gguf_kv_string(arch, 0, &str, NULL, &err), NF_OK);
    cr_assert_str_eq(str, "test");
    for (size_t i = 0; i < N_GG; i++) {
        const nf_source_tensor *t = nf_source_tensor_at(s, i);
        cr_assert_str_eq(t->name, gg_tensors[i].name);
        cr_assert_eq(t->ggml_type, (int)gg_tensors[i].type);
        cr_assert_eq(t->dtype, NF_ST_NONE);
        cr_assert_eq(t->rank, gg_tensors[i].n_dims);
        for (uint32_t d = 0; d < t->rank; d++) cr_assert_eq(t->shape[d], gg_tensors[i].ne[t->rank - 1 - d]);
        cr_assert_eq(t->offset % 64, 0);
        expect_bytes(s, t->name, gg_tensors[i].data, gg_tensors[i].bytes);
    }
    uint32_t want[64];
    for (int i = 0; i < 12; i++) want[i] = bits_of_f32(g_f32[i]);
    expect_f32_bits(s, "f32", want, 12);
    static const uint32_t f16w[8] = {0x3F800000, 0xBF800000, 0x33800000, 0x7F800000,
                                     0x3F000000, 0x40000000, 0x40400000, 0x40800000};
    expect_f32_bits(s, "f16", f16w, 8);
    static const uint32_t bf16w[4] = {0x3F800000, 0xC0000000, 0x00000000, 0x80000000};
    expect_f32_bits(s, "bf16", bf16w, 4);
    static const uint32_t i8w[4] = {0xC3000000, 0x3F800000, 0xBF800000, 0x42FE0000};
    expect_f32_bits(s, "i8", i8w, 4);
    static const uint32_t i16w[2] = {0xBF800000, 0x43800000};
    expect_f32_bits(s, "i16", i16w, 2);
    static const uint32_t i32w[2] = {0x4F000000, 0x4B800002};
    expect_f32_bits(s, "i32", i32w, 2);
    static const uint32_t i64w[2] = {0xBF800000, 0x53800000};
    expect_f32_bits(s, "i64", i64w, 2);
    static const uint32_t f64w[2] = {0x3DCCCCCD, 0x40000000};
    expect_f32_bits(s, "f64", f64w, 2);
    for (int r = 0; r < 2; r++)
        for (int j = 0; j < 32; j++) want[32 * r + j] = bits_of_f32((float)(j - 16) * (r ? 0.5f : 1.0f));
    expect_f32_bits(s, "q8_0", want, 64);
    const nf_source_tensor *q8 = nf_source_find(s, "q8_0");
    cr_assert_not_null(q8->format);
    cr_assert_str_eq(q8->format->name, "gguf_q8_0");
    cr_assert_eq(q8->row_bytes, 34);
    /* PQ2_0: codes 0,1,2 -> -d, 0 (times d: +0), +d. */
    const nf_source_tensor *pq = nf_source_find(s, "pq2_0");
    cr_assert_str_eq(pq->type_name, "PQ2_0");
    cr_assert_null(pq->format);
    cr_assert(pq->convertible);
    float pv[128];
    cr_assert_eq(nf_source_read_f32(s, pq, 0, 1, pv, 128, &err), NF_OK, "%s", err.message);
    for (int j = 0; j < 128; j++) cr_assert_eq(bits_of_f32(pv[j]), bits_of_f32((float)(j % 3 - 1) * 2.0f), "pq2 %d", j);
    /* Q4_1 (read as values only, docs/formats.md 8.5), bytes 0..39: value (nibble * d) + m, the
     * product exact and the sum rounded once, as the binary64 sum rounded to binary32 is */
    const nf_source_tensor *q41 = nf_source_find(s, "q4_1");
    cr_assert(q41->convertible);
    cr_assert_null(q41->format);
    float qv[64];
    cr_assert_eq(nf_source_read_f32(s, q41, 0, 2, qv, 64, &err), NF_OK, "%s", err.message);
    for (int r = 0; r < 2; r++) {
        const uint8_t *blk = g_q4_1 + 20 * r;
        const double d = f16_value((uint16_t)(blk[0] | blk[1] << 8)), m = f16_value((uint16_t)(blk[2] | blk[3] << 8));
        for (int j = 0; j < 32; j++) {
            const int nib = j < 16 ? blk[4 + j] & 15 : blk[4 + j - 16] >> 4;
            cr_assert_eq(bits_of_f32(qv[32 * r + j]), bits_of_f32((float)(nib * d + m)), "q4_1 %d %d", r, j);
        }
    }
    const nf_source_tensor *cube = nf_source_find(s, "cube");
    cr_assert_eq(cube->shape[0], 2);
    cr_assert_eq(cube->shape[1], 3);
    cr_assert_eq(cube->shape[2], 4);
    cr_assert_eq(cube->rows, 6);
    cr_assert_eq(cube->row_elements, 4);
    for (int i = 0; i < 24; i++) want[i] = bits_of_f32((float)i);
    expect_f32_bits(s, "cube", want, 24);
}

Test(source_roundtrip, gguf_every_supported_type)
{
    fill_gguf_data();
    char *dir = sw_tempdir();
    sw_buf b = {0};
    sw_gguf_file(&b, 64, gg_tensors, N_GG);
    both_ways(&b, dir, "all.gguf", check_gguf);
    sw_free(&b);
    sw_rmtree(dir);
    free(dir);
}

Test(source_roundtrip, gguf_pq2_0_code_3_refused)
{
    uint8_t blk[34] = {0x00, 0x3C};
    blk[2 + 10] = 0x30; /* element 42 = 4*10 + 2: code 3 */
    sw_gguf_tensor t[1] = {{"w", 142, 1, {128}, blk, 34}};
    sw_buf b = {0};
    sw_gguf_file(&b, 0, t, 1);
    nf_source *s = NULL;
    nf_error err = {0};
    cr_assert_eq(nf_source_open_memory(b.data, b.len, NF_SOURCE_AUTO, "p.gguf", &s, &err), NF_OK, "%s", err.message);
    float out[128];
    cr_assert_eq(nf_source_read_f32(s, nf_source_tensor_at(s, 0), 0, 1, out, 128, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "p.gguf: tensor 'w': row 0 column 42: PQ2_0 code 3"), "%s", err.message);
    nf_source_close(s);
    sw_free(&b);
}

/* A header much larger than the parser's read window (a tokenizer-sized string array): the
 * windowed file reader and the memory reader agree. */
static void check_vocab(nf_source *s)
{
    const nf_gguf_kv *kv = nf_source_gguf_kv_find(s, "tokenizer.ggml.tokens");
    cr_assert_not_null(kv);
    cr_assert_eq(kv->count, 20000);
    nf_error err = {0};
    for (uint64_t i = 0; i < kv->count; i += 997) {
        const char *str;
        size_t len;
        char want[48];
        snprintf(want, sizeof want, "token-%llu-%s", (unsigned long long)i, i % 2 ? "odd" : "even-longer");
        cr_assert_eq(nf_gguf_kv_string(kv, i, &str, &len, &err), NF_OK);
        cr_assert_str_eq(str, want);
        cr_assert_eq(len, strlen(want));
    }
    const nf_gguf_kv *sc = nf_source_gguf_kv_find(s, "tokenizer.ggml.scores");
    double d;
    cr_assert_eq(nf_gguf_kv_float(sc, 12345, &d, &err), NF_OK);
    cr_assert_eq(d, -12345.0);
    const nf_source_tensor *t = nf_source_find(s, "w");
    float v[4];
    cr_assert_eq(nf_source_read_f32(s, t, 0, 1, v, 4, &err), NF_OK, "%s", err.message);
    cr_assert(v[0] == 1.0f && v[3] == 4.0f);
}

Test(source_roundtrip, gguf_large_header_through_the_window)
{
    char *dir = sw_tempdir();
    sw_buf b = {0};
    sw_gguf_header(&b, 3, 1, 2);
    sw_gguf_key(&b, "tokenizer.ggml.tokens", SW_GGUF_ARRAY);
    sw_u32(&b, SW_GGUF_STRING);
    sw_u64(&b, 20000);
    for (unsigned i = 0; i < 20000; i++) {
        char tok[48];
        snprintf(tok, sizeof tok, "token-%u-%s", i, i % 2 ? "odd" : "even-longer");
        sw_gguf_str(&b, tok);
    }
    sw_gguf_key(&b, "tokenizer.ggml.scores", SW_GGUF_ARRAY);
    sw_u32(&b, SW_GGUF_F32);
    sw_u64(&b, 20000);
    for (unsigned i = 0; i < 20000; i++) {
        float f = -(float)i;
        uint32_t u;
        memcpy(&u, &f, 4);
        sw_u32(&b, u);
    }
    cr_assert_gt(b.len, 300000);
    uint64_t ne[1] = {4};
    sw_gguf_tensor_info(&b, "w", 1, ne, 0, 0);
    sw_pad(&b, 32);
    static const uint32_t w[4] = {0x3F800000, 0x40000000, 0x40400000, 0x40800000};
    for (int i = 0; i < 4; i++) sw_u32(&b, w[i]);
    both_ways(&b, dir, "vocab.gguf", check_vocab);
    /* Truncated copies read through the window fail cleanly wherever the cut falls. */
    size_t cuts[] = {b.len - 1, b.len - 17, b.len / 2, 65536, 65537, 65535 + 24, 100};
    char *p = sw_path(dir, "cut.gguf");
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        cr_assert_eq(sw_write_file(p, b.data, cuts[i]), 0);
        nf_source *s = NULL;
        nf_error err = {0};
        cr_assert_eq(nf_source_open(p, &s, &err), NF_ERR_INVALID, "cut at %zu opened", cuts[i]);
        cr_assert(strstr(err.message, "truncated"), "%s", err.message);
    }
    free(p);
    sw_free(&b);
    sw_rmtree(dir);
    free(dir);
}
