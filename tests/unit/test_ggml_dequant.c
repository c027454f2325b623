/* nf_ggml_dequant_row: bit-exact against ggml's own to_float output for all 18 imported block
 * types (tests/data/gguf, see its MANIFEST.md), argument checking, row slicing, no access
 * outside the given blocks, the constant tables, and a few hand-built blocks for the
 * signed-zero / rounding / non-finite rules of docs/formats.md 8.3. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS for the guard-page test */
#include <criterion/criterion.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "format/ggml.h"
#include "format/ggml_tables.h"
#include "support/test_float.h"
#include "support/test_data.h"

#define ROWS 16
#define COLS 512
#define NVALUES (ROWS * COLS)

/* Geometry of each type as MANIFEST.md lists it, independent of the registry under test. */
typedef struct fixture_type {
    nf_format_id id;
    const char *stem;
    int ggml_type;
    unsigned qk, bb;
} fixture_type;

static const fixture_type TYPES[] = {
    {NF_FMT_GGUF_Q8_0, "q8_0", 8, 32, 34},        {NF_FMT_GGUF_Q4_0, "q4_0", 2, 32, 18},
    {NF_FMT_GGUF_Q5_0, "q5_0", 6, 32, 22},        {NF_FMT_GGUF_Q2_0, "q2_0", 42, 64, 18},
    {NF_FMT_GGUF_Q2_K, "q2_k", 10, 256, 84},      {NF_FMT_GGUF_Q3_K, "q3_k", 11, 256, 110},
    {NF_FMT_GGUF_Q4_K, "q4_k", 12, 256, 144},     {NF_FMT_GGUF_Q5_K, "q5_k", 13, 256, 176},
    {NF_FMT_GGUF_Q6_K, "q6_k", 14, 256, 210},     {NF_FMT_GGUF_IQ2_XXS, "iq2_xxs", 16, 256, 66},
    {NF_FMT_GGUF_IQ2_XS, "iq2_xs", 17, 256, 74},  {NF_FMT_GGUF_IQ3_XXS, "iq3_xxs", 18, 256, 98},
    {NF_FMT_GGUF_IQ1_S, "iq1_s", 19, 256, 50},    {NF_FMT_GGUF_IQ4_NL, "iq4_nl", 20, 32, 18},
    {NF_FMT_GGUF_IQ3_S, "iq3_s", 21, 256, 110},   {NF_FMT_GGUF_IQ2_S, "iq2_s", 22, 256, 82},
    {NF_FMT_GGUF_IQ4_XS, "iq4_xs", 23, 256, 136}, {NF_FMT_GGUF_IQ1_M, "iq1_m", 29, 256, 56},
};
#define NTYPES (sizeof TYPES / sizeof TYPES[0])

static const fixture_type *type_of(nf_format_id id)
{
    for (size_t i = 0; i < NTYPES; i++)
        if (TYPES[i].id == id) return &TYPES[i];
    cr_assert_fail("format id %d is not a gguf fixture type", (int)id);
    return NULL;
}

static const nf_format *gguf_format(const fixture_type *t)
{
    const nf_format *fmt = nf_format_by_id(t->id);
    cr_assert_not_null(fmt);
    cr_assert_eq(fmt->category, NF_CAT_GGUF);
    cr_assert_eq(fmt->ggml_type, t->ggml_type, "%s: ggml type", t->stem);
    cr_assert_eq(fmt->block_values, t->qk, "%s: block values", t->stem);
    cr_assert_eq(fmt->block_bytes, t->bb, "%s: block bytes", t->stem);
    cr_assert_not_null(fmt->short_name);
    cr_assert_str_eq(fmt->short_name, t->stem);
    return fmt;
}

typedef struct fixture {
    const nf_format *fmt;
    uint8_t *q;
    size_t row_bytes;
    float *ref;
} fixture;

static fixture load_fixture(nf_format_id id)
{
    const fixture_type *t = type_of(id);
    fixture fx = {.fmt = gguf_format(t), .row_bytes = (size_t)(COLS / t->qk) * t->bb};
    char name[64];
    size_t n;
    snprintf(name, sizeof name, "%s.qbytes", t->stem);
    fx.q = nf_test_data(&n, "gguf/%s", name);
    cr_assert_eq(n, ROWS * fx.row_bytes, "%s: %zu bytes, expected %zu", name, n, ROWS * fx.row_bytes);
    snprintf(name, sizeof name, "%s.dequant.f32", t->stem);
    uint8_t *raw = nf_test_data(&n, "gguf/%s", name);
    cr_assert_eq(n, (size_t)NVALUES * 4, "%s: %zu bytes", name, n);
    fx.ref = malloc(sizeof(float) * NVALUES);
    cr_assert_not_null(fx.ref);
    for (size_t i = 0; i < NVALUES; i++) {
        const uint8_t *p = raw + 4 * i; /* the file is little-endian whatever the host is */
        fx.ref[i] = f32_of_bits((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
    }
    free(raw);
    return fx;
}

static void free_fixture(fixture *fx)
{
    free(fx->q);
    free(fx->ref);
}

/* Compare binary32 words; report the first difference with both values. */
static void assert_same_bits(const char *what, const float *got, const float *want, size_t n, size_t base)
{
    size_t ndiff = 0, first = 0;
    for (size_t i = 0; i < n; i++) {
        if (bits_of_f32(got[i]) != bits_of_f32(want[i])) {
            if (ndiff++ == 0) first = i;
        }
    }
    cr_assert_eq(ndiff, 0,
                 "%s: %zu of %zu values differ; first at index %zu (row %zu col %zu): "
                 "got 0x%08x (%.9g), ggml 0x%08x (%.9g)",
                 what, ndiff, n, base + first, (base + first) / COLS, (base + first) % COLS,
                 (unsigned)bits_of_f32(got[first]), (double)got[first], (unsigned)bits_of_f32(want[first]),
                 (double)want[first]);
}

/* Every row of <type>.qbytes, one call per row, against ggml's output. */
static void check_fixture(nf_format_id id)
{
    fixture fx = load_fixture(id);
    float *out = malloc(sizeof(float) * NVALUES);
    cr_assert_not_null(out);
    for (size_t r = 0; r < ROWS; r++) {
        nf_error err = {0};
        nf_status st = nf_ggml_dequant_row(fx.fmt, fx.q + r * fx.row_bytes, COLS, out + r * COLS, &err);
        cr_assert_eq(st, NF_OK, "%s row %zu: %s", fx.fmt->name, r, err.message);
    }
    assert_same_bits(fx.fmt->name, out, fx.ref, NVALUES, 0);
    free(out);
    free_fixture(&fx);
}

#define FIXTURE_TEST(stem, id) \
    Test(ggml_dequant_fixture, stem) { check_fixture(id); }

FIXTURE_TEST(q8_0, NF_FMT_GGUF_Q8_0)
FIXTURE_TEST(q4_0, NF_FMT_GGUF_Q4_0)
FIXTURE_TEST(q5_0, NF_FMT_GGUF_Q5_0)
FIXTURE_TEST(q2_0, NF_FMT_GGUF_Q2_0)
FIXTURE_TEST(q2_k, NF_FMT_GGUF_Q2_K)
FIXTURE_TEST(q3_k, NF_FMT_GGUF_Q3_K)
FIXTURE_TEST(q4_k, NF_FMT_GGUF_Q4_K)
FIXTURE_TEST(q5_k, NF_FMT_GGUF_Q5_K)
FIXTURE_TEST(q6_k, NF_FMT_GGUF_Q6_K)
FIXTURE_TEST(iq2_xxs, NF_FMT_GGUF_IQ2_XXS)
FIXTURE_TEST(iq2_xs, NF_FMT_GGUF_IQ2_XS)
FIXTURE_TEST(iq3_xxs, NF_FMT_GGUF_IQ3_XXS)
FIXTURE_TEST(iq1_s, NF_FMT_GGUF_IQ1_S)
FIXTURE_TEST(iq4_nl, NF_FMT_GGUF_IQ4_NL)
FIXTURE_TEST(iq3_s, NF_FMT_GGUF_IQ3_S)
FIXTURE_TEST(iq2_s, NF_FMT_GGUF_IQ2_S)
FIXTURE_TEST(iq4_xs, NF_FMT_GGUF_IQ4_XS)
FIXTURE_TEST(iq1_m, NF_FMT_GGUF_IQ1_M)

/* The registry's 18 gguf formats are exactly the fixture types (none is left untested). */
Test(ggml_dequant, registry_gguf_formats_all_covered)
{
    size_t ngguf = 0;
    for (size_t i = 0; i < nf_format_count(); i++) {
        const nf_format *fmt = nf_format_at(i);
        if (fmt->category != NF_CAT_GGUF) continue;
        ngguf++;
        (void)type_of(fmt->id);
    }
    cr_assert_eq(ngguf, NTYPES);
}

/* ---------------------------------------------------------------- slicing */
/* The 16 rows are consecutive blocks, so one call over all 8192 values is a valid row too; a
 * single row, and a single block anywhere, must equal the matching slice of it. */
Test(ggml_dequant, slices_equal_whole)
{
    for (size_t ti = 0; ti < NTYPES; ti++) {
        fixture fx = load_fixture(TYPES[ti].id);
        const unsigned qk = TYPES[ti].qk, bb = TYPES[ti].bb;
        float *whole = malloc(sizeof(float) * NVALUES);
        float part[COLS];
        nf_error err = {0};
        cr_assert_eq(nf_ggml_dequant_row(fx.fmt, fx.q, NVALUES, whole, &err), NF_OK, "%s: %s", fx.fmt->name,
                     err.message);
        assert_same_bits(fx.fmt->name, whole, fx.ref, NVALUES, 0);
        for (size_t r = 0; r < ROWS; r += 5) {
            cr_assert_eq(nf_ggml_dequant_row(fx.fmt, fx.q + r * fx.row_bytes, COLS, part, &err), NF_OK);
            assert_same_bits(fx.fmt->name, part, whole + r * COLS, COLS, r * COLS);
        }
        const size_t nblocks = NVALUES / qk;
        const size_t picks[] = {0, 1, nblocks / 2 + 1, nblocks - 1};
        for (size_t p = 0; p < sizeof picks / sizeof picks[0]; p++) {
            const size_t b = picks[p];
            cr_assert_eq(nf_ggml_dequant_row(fx.fmt, fx.q + b * bb, qk, part, &err), NF_OK);
            assert_same_bits(fx.fmt->name, part, whole + b * qk, qk, b * qk);
        }
        free(whole);
        free_fixture(&fx);
    }
}

/* ---------------------------------------------------------------- bounds */
/* Blocks placed against a PROT_NONE page on either side, and sentinels around the output: an
 * access outside the k / block_values blocks faults, a stray write shows. */
typedef struct guarded {
    uint8_t *map;
    size_t map_len, page, data_len;
} guarded;

static guarded guarded_alloc(size_t data_len)
{
    guarded g = {.page = (size_t)sysconf(_SC_PAGESIZE), .data_len = data_len};
    const size_t data_pages = (data_len + g.page - 1) / g.page;
    g.map_len = (data_pages + 2) * g.page;
    g.map = mmap(NULL, g.map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(g.map, MAP_FAILED);
    cr_assert_eq(mprotect(g.map, g.page, PROT_NONE), 0);
    cr_assert_eq(mprotect(g.map + g.map_len - g.page, g.page, PROT_NONE), 0);
    return g;
}

Test(ggml_dequant, reads_only_its_blocks)
{
    for (size_t ti = 0; ti < NTYPES; ti++) {
        fixture fx = load_fixture(TYPES[ti].id);
        const unsigned qk = TYPES[ti].qk, bb = TYPES[ti].bb;
        const size_t counts[] = {1, 3, NVALUES / qk};
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
            const size_t nblocks = counts[c], len = nblocks * bb, k = nblocks * qk;
            guarded g = guarded_alloc(len);
            uint8_t *starts[2] = {g.map + g.page, g.map + g.map_len - g.page - len};
            float *out = malloc(sizeof(float) * (k + 2));
            for (int s = 0; s < 2; s++) {
                memcpy(starts[s], fx.q, len);
                out[0] = out[k + 1] = 12345.0f;
                nf_error err = {0};
                cr_assert_eq(nf_ggml_dequant_row(fx.fmt, starts[s], k, out + 1, &err), NF_OK);
                cr_assert_eq(bits_of_f32(out[0]), bits_of_f32(12345.0f), "%s wrote before out", fx.fmt->name);
                cr_assert_eq(bits_of_f32(out[k + 1]), bits_of_f32(12345.0f), "%s wrote past out[k]", fx.fmt->name);
                assert_same_bits(fx.fmt->name, out + 1, fx.ref, k, 0);
            }
            free(out);
            munmap(g.map, g.map_len);
        }
        free_fixture(&fx);
    }
}

/* ---------------------------------------------------------------- argument checks */
static void expect_refused(const nf_format *fmt, const uint8_t *blocks, uint64_t k, float *out, nf_status want,
                           const char *needle)
{
    nf_error err = {0};
    float before = out ? out[0] : 0.0f;
    nf_status st = nf_ggml_dequant_row(fmt, blocks, k, out, &err);
    cr_assert_eq(st, want, "status %d, expected %d (%s)", (int)st, (int)want, err.message);
    cr_assert_eq(err.status, want);
    cr_assert_neq(err.message[0], '\0', "no message");
    if (needle) cr_assert_not_null(strstr(err.message, needle), "message '%s' lacks '%s'", err.message, needle);
    if (out) cr_assert_eq(bits_of_f32(out[0]), bits_of_f32(before), "output written on error");
    /* A NULL nf_error is allowed and gives the same status. */
    cr_assert_eq(nf_ggml_dequant_row(fmt, blocks, k, out, NULL), want);
}

Test(ggml_dequant, wrong_format_refused)
{
    uint8_t blocks[512] = {0};
    float out[512];
    out[0] = 7.0f;
    expect_refused(NULL, blocks, 32, out, NF_ERR_USAGE, "format");
    const nf_format_id non_gguf[] = {NF_FMT_BF16,        NF_FMT_FP32,  NF_FMT_Q4_G64_FP16,
                                     NF_FMT_Q8_G32_FP16, NF_FMT_NVFP4, NF_FMT_FP8_E4M3FN_ROW_BF16};
    for (size_t i = 0; i < sizeof non_gguf / sizeof non_gguf[0]; i++) {
        const nf_format *fmt = nf_format_by_id(non_gguf[i]);
        cr_assert_not_null(fmt);
        expect_refused(fmt, blocks, 64, out, NF_ERR_USAGE, fmt->name);
    }
    /* A gguf entry whose geometry disagrees with the dequantizer's is refused, not trusted. */
    nf_format bent = *nf_format_by_id(NF_FMT_GGUF_Q4_K);
    bent.block_bytes = 100;
    expect_refused(&bent, blocks, 256, out, NF_ERR_INVALID, "gguf_q4_k");
    bent = *nf_format_by_id(NF_FMT_GGUF_Q8_0);
    bent.block_values = 16;
    expect_refused(&bent, blocks, 32, out, NF_ERR_INVALID, NULL);
}

Test(ggml_dequant, bad_k_refused)
{
    uint8_t blocks[512] = {0};
    float out[512];
    out[0] = 7.0f;
    for (size_t ti = 0; ti < NTYPES; ti++) {
        const nf_format *fmt = gguf_format(&TYPES[ti]);
        const unsigned qk = TYPES[ti].qk;
        expect_refused(fmt, blocks, 0, out, NF_ERR_USAGE, "multiple");
        expect_refused(fmt, blocks, 1, out, NF_ERR_USAGE, "multiple");
        expect_refused(fmt, blocks, qk - 1, out, NF_ERR_USAGE, "multiple");
        expect_refused(fmt, blocks, qk + 16, out, NF_ERR_USAGE, fmt->name);
        expect_refused(fmt, blocks, UINT64_MAX, out, NF_ERR_USAGE, NULL);
    }
    /* k far beyond memory must be refused rather than wrap (needs no buffer: it never reads). */
    const nf_format *q8 = nf_format_by_id(NF_FMT_GGUF_Q8_0);
    expect_refused(q8, blocks, (UINT64_MAX / 32) * 32, out, NF_ERR_USAGE, "too large");
}

Test(ggml_dequant, null_buffers_refused)
{
    uint8_t blocks[34] = {0};
    float out[32];
    out[0] = 7.0f;
    const nf_format *q8 = nf_format_by_id(NF_FMT_GGUF_Q8_0);
    expect_refused(q8, NULL, 32, out, NF_ERR_USAGE, "NULL");
    expect_refused(q8, blocks, 32, NULL, NF_ERR_USAGE, "NULL");
}

/* ---------------------------------------------------------------- tables */
static unsigned popcount7(unsigned v)
{
    unsigned n = 0;
    for (; v; v >>= 1) n += v & 1u;
    return n;
}

Test(ggml_tables, sizes_match_spec)
{
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
    cr_assert_eq(COUNT(nf_ggml_kmask_iq2xs), 8);
    cr_assert_eq(COUNT(nf_ggml_ksigns_iq2xs), 128);
    cr_assert_eq(COUNT(nf_ggml_kvalues_iq4nl), 16);
    cr_assert_eq(COUNT(nf_ggml_iq2xxs_grid), 256);
    cr_assert_eq(COUNT(nf_ggml_iq2xs_grid), 512);
    cr_assert_eq(COUNT(nf_ggml_iq2s_grid), 1024);
    cr_assert_eq(COUNT(nf_ggml_iq3xxs_grid), 256);
    cr_assert_eq(COUNT(nf_ggml_iq3s_grid), 512);
    cr_assert_eq(COUNT(nf_ggml_iq1s_grid), 2048);
    cr_assert_eq(sizeof nf_ggml_iq2xxs_grid[0], 8);
    cr_assert_eq(sizeof nf_ggml_iq3xxs_grid[0], 4);
    cr_assert_eq(sizeof nf_ggml_iq1s_grid[0], 8);
#undef COUNT
}

/* Properties docs/formats.md 8.3, "Tables" states for each table. */
Test(ggml_tables, contents_match_spec)
{
    for (unsigned j = 0; j < 8; j++) cr_assert_eq(nf_ggml_kmask_iq2xs[j], 1u << j);
    for (unsigned i = 0; i < 128; i++)
        cr_assert_eq(nf_ggml_ksigns_iq2xs[i], i + 128u * (popcount7(i) & 1u), "ksigns[%u]", i);
    cr_assert_eq(nf_ggml_ksigns_iq2xs[21], 0x95);
    cr_assert_eq(nf_ggml_ksigns_iq2xs[55], 0xb7);
    static const int kv[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    for (unsigned i = 0; i < 16; i++) cr_assert_eq(nf_ggml_kvalues_iq4nl[i], kv[i]);

    const struct {
        const uint64_t *t;
        size_t n;
    } iq2[] = {{nf_ggml_iq2xxs_grid, 256}, {nf_ggml_iq2xs_grid, 512}, {nf_ggml_iq2s_grid, 1024}};
    for (size_t g = 0; g < 3; g++)
        for (size_t i = 0; i < iq2[g].n; i++)
            for (unsigned j = 0; j < 8; j++) {
                unsigned v = (unsigned)(iq2[g].t[i] >> (8 * j)) & 0xFFu;
                cr_assert(v == 8 || v == 25 || v == 43, "iq2 grid %zu entry %zu byte %u = %u", g, i, j, v);
            }
    cr_assert_eq(nf_ggml_iq2xxs_grid[1], UINT64_C(0x080808080808082b));
    cr_assert_eq(nf_ggml_iq2xxs_grid[58], UINT64_C(0x08082b0808080808));
    cr_assert_eq(nf_ggml_iq2xxs_grid[145], UINT64_C(0x1908081908080808));
    cr_assert_eq(nf_ggml_iq2xs_grid[106], UINT64_C(0x08082b0808080808));
    cr_assert_eq(nf_ggml_iq2xs_grid[190], UINT64_C(0x0819192b08080808));
    cr_assert_eq(nf_ggml_iq2s_grid[158], UINT64_C(0x08082b0808080808));
    cr_assert_eq(nf_ggml_iq2s_grid[308], UINT64_C(0x0819191908080819));
    /* Distinct tables: neither larger grid begins with the smaller one. */
    cr_assert_neq(memcmp(nf_ggml_iq2xs_grid, nf_ggml_iq2xxs_grid, sizeof nf_ggml_iq2xxs_grid), 0);
    cr_assert_neq(memcmp(nf_ggml_iq2s_grid, nf_ggml_iq2xs_grid, sizeof nf_ggml_iq2xs_grid), 0);

    for (size_t i = 0; i < 256; i++)
        for (unsigned j = 0; j < 4; j++) {
            unsigned v = (nf_ggml_iq3xxs_grid[i] >> (8 * j)) & 0xFFu;
            cr_assert(v == 4 || v == 12 || v == 20 || v == 28 || v == 36 || v == 44 || v == 52 || v == 62,
                      "iq3xxs_grid[%zu] byte %u = %u", i, j, v);
        }
    cr_assert_eq(nf_ggml_iq3xxs_grid[12], 0x040c040cu);
    cr_assert_eq(nf_ggml_iq3xxs_grid[115], 0x140c3e04u);
    for (size_t i = 0; i < 512; i++)
        for (unsigned j = 0; j < 4; j++) {
            unsigned v = (nf_ggml_iq3s_grid[i] >> (8 * j)) & 0xFFu;
            cr_assert(v % 2 == 1 && v <= 15, "iq3s_grid[%zu] byte %u = %u", i, j, v);
        }
    cr_assert_eq(nf_ggml_iq3s_grid[30], 0x01030303u);
    cr_assert_eq(nf_ggml_iq3s_grid[216], 0x05010f01u);
    cr_assert_eq(nf_ggml_iq3s_grid[301], 0x07030507u);
    for (size_t i = 0; i < 2048; i++)
        for (unsigned j = 0; j < 8; j++) {
            unsigned v = (unsigned)(nf_ggml_iq1s_grid[i] >> (8 * j)) & 0xFFu;
            cr_assert(v == 0x00 || v == 0x01 || v == 0xff, "iq1s_grid[%zu] byte %u = %u", i, j, v);
        }
    cr_assert_eq(nf_ggml_iq1s_grid[0], UINT64_C(0xffffffffffffffff));
    cr_assert_eq(nf_ggml_iq1s_grid[635], UINT64_C(0x00ffffff00000000));
    cr_assert_eq(nf_ggml_iq1s_grid[755], UINT64_C(0x00ff000001000100));
    cr_assert_eq(nf_ggml_iq1s_grid[1029], 0);
    cr_assert_eq(nf_ggml_iq1s_grid[1161], UINT64_C(0x0000010000000000));
}

/* ---------------------------------------------------------------- hand-built blocks */
static void dequant_ok(nf_format_id id, const uint8_t *block, float *out)
{
    const fixture_type *t = type_of(id);
    nf_error err = {0};
    cr_assert_eq(nf_ggml_dequant_row(gguf_format(t), block, t->qk, out, &err), NF_OK, "%s", err.message);
}

/* Signed zero (spec 2.6): the sign is the XOR of all float factors; integer 0 is +0. */
Test(ggml_dequant_rules, signed_zero_from_negative_zero_scale)
{
    uint8_t b[18] = {0x00, 0x80}; /* Q4_0, d = -0 */
    b[2] = 0x79;                  /* element 0: code 9 (+1), element 16: code 7 (-1) */
    b[3] = 0x88;                  /* elements 1, 17: code 8 (0) */
    float y[32];
    dequant_ok(NF_FMT_GGUF_Q4_0, b, y);
    cr_assert_eq(bits_of_f32(y[0]), 0x80000000u);  /* (+1) * (-0) */
    cr_assert_eq(bits_of_f32(y[16]), 0x00000000u); /* (-1) * (-0) */
    cr_assert_eq(bits_of_f32(y[1]), 0x80000000u);  /* (+0) * (-0) */
    cr_assert_eq(bits_of_f32(y[17]), 0x80000000u);
}

Test(ggml_dequant_rules, q6_k_scale_before_code)
{
    /* d = 1.0, sc_0 = -128, code 32 (q = 0) everywhere in sub-block 0: (1 * -128) * (+0) = -0,
     * where d * F(sc * q) would give +0. */
    uint8_t b[210] = {0};
    b[208] = 0x00;
    b[209] = 0x3c;
    b[192] = 0x80;
    for (unsigned t = 0; t < 32; t++) b[128 + t] = 0x02; /* high2 = 2 for elements t: q = 0 */
    float y[256];
    dequant_ok(NF_FMT_GGUF_Q6_K, b, y);
    for (unsigned n = 0; n < 16; n++) cr_assert_eq(bits_of_f32(y[n]), 0x80000000u, "y[%u]", n);
    /* Sub-block 1 has scale 0 and q = 0 (qh bits set above for t = 16..31): +0 * +0 = +0. */
    cr_assert_eq(bits_of_f32(y[16]), 0x00000000u);
    /* Sub-block 2 has scale 0 and q = -32 (all code bits clear): (1 * +0) * (-32) = -0. */
    cr_assert_eq(bits_of_f32(y[32]), 0x80000000u);
}

/* Q4_K's final subtraction is the one rounding step (spec 2.5): one binary32 subtraction of
 * the two rounded (here exact) products. */
Test(ggml_dequant_rules, q4_k_subtraction_rounds_once)
{
    uint8_t b[144] = {0};
    b[0] = 0x01;
    b[1] = 0x3c; /* d = 1.0009765625 (0x3c01) */
    b[2] = 0x01;
    b[3] = 0x00; /* dmin = 2^-24 (smallest subnormal half) */
    b[4] = 63;   /* sc_0 = 63 */
    b[8] = 1;    /* m_0 = 1 */
    for (unsigned t = 0; t < 32; t++) b[16 + t] = (uint8_t)(t % 16);
    float y[256];
    dequant_ok(NF_FMT_GGUF_Q4_K, b, y);
    const double d = 1.0009765625, dmin = 0x1p-24;
    for (unsigned t = 0; t < 32; t++) {
        const float want = (float)((d * 63.0) * (double)(t % 16) - dmin * 1.0);
        cr_assert_eq(bits_of_f32(y[t]), bits_of_f32(want), "y[%u] = %a, want %a", t, (double)y[t], (double)want);
    }
    /* q = 0: (+0) - 2^-24. */
    cr_assert_eq(bits_of_f32(y[0]), bits_of_f32(-0x1p-24f));
}

/* Non-finite scales follow IEEE rules through the same operation sequence (spec 2.7). */
Test(ggml_dequant_rules, infinite_scale)
{
    uint8_t b[34] = {0x00, 0x7c}; /* Q8_0, d = +inf */
    b[2] = 0x00;                  /* q = 0 -> NaN */
    b[3] = 0x01;                  /* q = 1 -> +inf */
    b[4] = 0xff;                  /* q = -1 -> -inf */
    float y[32];
    dequant_ok(NF_FMT_GGUF_Q8_0, b, y);
    cr_assert(isnan(y[0]));
    cr_assert(isinf(y[1]) && y[1] > 0);
    cr_assert(isinf(y[2]) && y[2] < 0);
}

/* IQ1_M takes its binary16 scale from the top nibbles of the four scale words. */
Test(ggml_dequant_rules, iq1_m_scattered_scale)
{
    uint8_t b[56] = {0};
    /* h = 0x3c00 (1.0): nibbles 0, 0, 0xc, 0x3 in words 0..3; sub-scales k1 = k2 = 0. */
    b[48 + 5] = 0xc0;
    b[48 + 7] = 0x30;
    /* All grid indices 0 -> all -1; delta +0.125 -> value 1 * (-1 + 0.125) = -0.875. */
    float y[256];
    dequant_ok(NF_FMT_GGUF_IQ1_M, b, y);
    for (unsigned n = 0; n < 256; n++) cr_assert_eq(bits_of_f32(y[n]), bits_of_f32(-0.875f), "y[%u]", n);
}
