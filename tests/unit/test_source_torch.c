/* PyTorch checkpoints through the reader's public calls (docs/security.md 2.6): files torch.save
 * wrote itself (tests/data/torch, README there), read byte range by byte range and row range by row
 * range -- exhaustively, the tensors being small -- against the values torch gives: a transposed
 * view gathered down its columns, along a row, or element by element (a partial element at either
 * end of a byte range included), and a deflated member read forwards, backwards and interleaved
 * with another tensor (the inflate cursors' restarts). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include <ninfer/ninfer.h>

#define TORCH_DIR NINFER_TEST_DATA "/torch/"

static nf_source *open_torch(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, TORCH_DIR "%s", name);
    nf_source *s = NULL;
    nf_error err = {0};
    cr_assert_eq(nf_source_open(path, &s, &err), NF_OK, "%s: %s", path, err.message);
    cr_assert_eq(nf_source_kind_of(s), NF_SOURCE_TORCH);
    return s;
}

/* Every byte range and every row range of tensor `name` equals want (row-major binary32). */
static void expect_every_range(nf_source *s, const char *name, const float *want, uint64_t rows, uint64_t cols)
{
    const nf_source_tensor *t = nf_source_find(s, name);
    cr_assert_not_null(t, "no tensor %s", name);
    cr_assert_eq(t->rows, rows);
    cr_assert_eq(t->row_elements, cols);
    const size_t bytes = (size_t)(rows * cols * 4);
    const uint8_t *w = (const uint8_t *)want;
    uint8_t got[256];
    nf_error err = {0};
    nf_byte_reader rd;
    nf_source_tensor_reader(s, t, &rd);
    for (size_t off = 0; off <= bytes; off++)
        for (size_t len = 0; off + len <= bytes; len++) {
            memset(got, 0xAA, sizeof got);
            cr_assert_eq(nf_source_read_bytes(s, t, off, got, len, &err), NF_OK, "%s", err.message);
            cr_assert(memcmp(got, w + off, len) == 0, "%s: bytes [%zu, +%zu)", name, off, len);
            memset(got, 0xAA, sizeof got);
            cr_assert_eq(rd.read(rd.ctx, off, got, len, &err), NF_OK, "%s", err.message);
            cr_assert(memcmp(got, w + off, len) == 0, "%s: reader bytes [%zu, +%zu)", name, off, len);
        }
    float f[64];
    for (uint64_t r0 = 0; r0 <= rows; r0++)
        for (uint64_t r1 = r0; r1 <= rows; r1++) {
            cr_assert_eq(nf_source_read_f32(s, t, r0, r1, f, 64, &err), NF_OK, "%s", err.message);
            cr_assert(memcmp(f, want + r0 * cols, (size_t)((r1 - r0) * cols * 4)) == 0, "%s: rows [%llu, %llu)", name,
                      (unsigned long long)r0, (unsigned long long)r1);
            cr_assert_eq(nf_source_read_rows(s, t, r0, r1, got, sizeof got, &err), NF_OK, "%s", err.message);
            cr_assert(memcmp(got, want + r0 * cols, (size_t)((r1 - r0) * cols * 4)) == 0);
        }
}

static void real_file(const char *name)
{
    nf_source *s = open_torch(name);
    const float a[6] = {0, 1, 2, 3, 4, 5}, t[6] = {0, 3, 1, 4, 2, 5};
    expect_every_range(s, "a", a, 2, 3);
    expect_every_range(s, "tied", a, 2, 3);
    expect_every_range(s, "t", t, 3, 2);
    cr_assert_eq(nf_source_find(s, "a")->offset, nf_source_find(s, "tied")->offset);
    const nf_source_tensor *i = nf_source_find(s, "i");
    cr_assert_eq(i->dtype, NF_ST_I64);
    int64_t iv[4];
    nf_error err = {0};
    cr_assert_eq(nf_source_read_bytes(s, i, 0, iv, sizeof iv, &err), NF_OK, "%s", err.message);
    for (int k = 0; k < 4; k++) cr_assert_eq(iv[k], k);
    float h[3];
    cr_assert_eq(nf_source_find(s, "h")->dtype, NF_ST_F16);
    cr_assert_eq(nf_source_read_f32(s, nf_source_find(s, "h"), 0, 1, h, 3, &err), NF_OK, "%s", err.message);
    cr_assert(h[0] == 1.0f && h[1] == 1.0f && h[2] == 1.0f);
    nf_source_close(s);
}

Test(source_torch, zip_written_by_torch) { real_file("real_zip.bin"); }
Test(source_torch, legacy_stream_written_by_torch) { real_file("real_legacy.bin"); }

Test(source_torch, deflated_member_any_order)
{
    nf_source *s = open_torch("deflated.bin");
    float v[64], got[32];
    for (int i = 0; i < 64; i++) v[i] = (float)(i % 7 - 3) / 4.0f;
    expect_every_range(s, "b.weight", v + 16, 4, 8);
    expect_every_range(s, "a.weight", v, 2, 8);
    /* backwards, and interleaved with another tensor of the same member */
    const nf_source_tensor *b = nf_source_find(s, "b.weight"), *a = nf_source_find(s, "a.weight");
    nf_error err = {0};
    for (uint64_t r = 4; r-- > 0;) {
        cr_assert_eq(nf_source_read_f32(s, b, r, r + 1, got, 32, &err), NF_OK, "%s", err.message);
        cr_assert(memcmp(got, v + 16 + r * 8, 32) == 0, "row %llu", (unsigned long long)r);
        cr_assert_eq(nf_source_read_f32(s, a, 1, 2, got, 32, &err), NF_OK, "%s", err.message);
        cr_assert(memcmp(got, v + 8, 32) == 0);
    }
    nf_source_close(s);
}
