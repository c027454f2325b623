/* nf_ggml_values_row: the ggml block types read as values only (Q4_1, Q5_1, Q8_1, Q8_K, TQ1_0,
 * TQ2_0, MXFP4, NVFP4, Q1_0), bit for bit against ggml's own to_float output
 * (tests/data/gguf/more, its README.md): source.f32 quantized by ggml, random blocks, every MXFP4
 * exponent and NVFP4 scale byte, every TQ1_0 byte; argument checking; and no read past the
 * blocks given. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <criterion/criterion.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "format/ggml.h"
#include "support/test_data.h"
#include "support/test_float.h"

/* Geometry as ggml-common.h's block structs give it (independent of common/ggml_types.h). */
typedef struct values_case {
    const char *stem;
    int ggml_type;
    unsigned qk, bb;
} values_case;

static const values_case CASES[] = {
    {"q4_1", 3, 32, 20},    {"q5_1", 7, 32, 24},    {"q8_1", 9, 32, 36},
    {"q8_k", 15, 256, 292}, {"tq1_0", 34, 256, 54}, {"tq2_0", 35, 256, 66},
    {"mxfp4", 39, 32, 17},  {"nvfp4", 40, 64, 36},  {"q1_0", 41, 128, 18},
};
#define NCASES (sizeof CASES / sizeof CASES[0])

/* Equal bits, or both NaN (docs/formats.md 8.3: NaN signs are not part of the contract). */
static void expect_same(const values_case *c, const char *set, size_t i, float got, float want)
{
    if (isnan(want) && isnan(got)) return;
    cr_expect_eq(bits_of_f32(got), bits_of_f32(want), "%s %s value %zu: 0x%08X, ggml 0x%08X", c->stem, set, i,
                 bits_of_f32(got), bits_of_f32(want));
}

/* Decodes <stem>.<set>qbytes row by row (rows of `k` values) and compares with <set>dequant.f32. */
static size_t check_set(const values_case *c, const char *set, uint64_t k)
{
    size_t qlen, flen;
    uint8_t *q = nf_test_data(&qlen, "gguf/more/%s.%sqbytes", c->stem, set);
    uint8_t *ref = nf_test_data(&flen, "gguf/more/%s.%sdequant.f32", c->stem, set);
    const size_t row_bytes = (size_t)(k / c->qk) * c->bb;
    cr_assert(qlen % row_bytes == 0 && flen == qlen / row_bytes * k * 4, "%s %s: sizes %zu, %zu", c->stem, set, qlen,
              flen);
    const size_t rows = qlen / row_bytes;
    float *out = malloc((size_t)k * sizeof *out);
    cr_assert_not_null(out);
    for (size_t r = 0; r < rows; r++) {
        nf_error err = {0};
        cr_assert_eq(nf_ggml_values_row(c->ggml_type, q + r * row_bytes, k, out, &err), NF_OK, "%s: %s", c->stem,
                     err.message);
        for (uint64_t i = 0; i < k; i++) {
            float want;
            memcpy(&want, ref + 4 * (r * k + i), 4);
            expect_same(c, set, r * k + i, out[i], want);
        }
    }
    free(out);
    free(q);
    free(ref);
    return rows * k;
}

Test(ggml_values, source_quantized_by_ggml)
{
    for (size_t i = 0; i < NCASES; i++) {
        cr_assert(nf_ggml_values_type(CASES[i].ggml_type), "%s", CASES[i].stem);
        cr_expect_eq(check_set(&CASES[i], "", 512), 16u * 512u);
    }
}

Test(ggml_values, random_blocks)
{
    for (size_t i = 0; i < NCASES; i++)
        cr_expect_eq(check_set(&CASES[i], "rand.", 16u * CASES[i].qk), 64u * CASES[i].qk);
}

/* Every E8M0 exponent (MXFP4: block b has e = b, 2^-128 .. 2^127, the products up to 12 * 2^127
 * overflowing to infinity as in ggml), every NVFP4 scale byte (0x7F and 0x80 decode to 0, bit 7
 * is ignored otherwise) and every byte value in every TQ1_0 position class. */
Test(ggml_values, sweeps)
{
    cr_expect_eq(check_set(&CASES[6], "sweep.", 256u * 32u), 256u * 32u);
    cr_expect_eq(check_set(&CASES[7], "sweep.", 64u * 64u), 64u * 64u);
    cr_expect_eq(check_set(&CASES[4], "sweep.", 5u * 256u), 5u * 256u);
}

/* Known answers worked by hand from docs/formats.md 8.5 (independent of ggml's files). */
Test(ggml_values, known_answers)
{
    nf_error err = {0};
    float y[256];
    /* Q4_1: d = 0.5 (0x3800), m = -1 (0xBC00); byte 0 = 0x3F: element 0 code 15 -> 6.5,
     * element 16 code 3 -> 0.5; other bytes 0: -1 */
    uint8_t q41[20] = {0x00, 0x38, 0x00, 0xBC, 0x3F};
    cr_assert_eq(nf_ggml_values_row(3, q41, 32, y, &err), NF_OK);
    cr_expect_eq(y[0], 6.5f);
    cr_expect_eq(y[16], 0.5f);
    cr_expect_eq(y[1], -1.0f);
    /* Q4_1 signed zero: d = -0, m = -0, code 0: (0 * -0) + -0 = -0; m = +0: +0 */
    uint8_t q41z[20] = {0x00, 0x80, 0x00, 0x80};
    cr_assert_eq(nf_ggml_values_row(3, q41z, 32, y, &err), NF_OK);
    cr_expect_eq(bits_of_f32(y[0]), 0x80000000u);
    q41z[3] = 0x00;
    cr_assert_eq(nf_ggml_values_row(3, q41z, 32, y, &err), NF_OK);
    cr_expect_eq(bits_of_f32(y[0]), 0u);
    /* Q5_1: fifth bit of element 17 is bit 17 of the u32 at 4; d = 1, m = 0 */
    uint8_t q51[24] = {0x00, 0x3C, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00};
    q51[8 + 1] = 0x20; /* element 1 low nibble 0, element 17 high nibble 2 */
    cr_assert_eq(nf_ggml_values_row(7, q51, 32, y, &err), NF_OK);
    cr_expect_eq(y[17], 18.0f);
    cr_expect_eq(y[1], 0.0f);
    /* Q1_0 under d = +0: set bits give +0, clear bits -0 */
    uint8_t q10[18] = {0x00, 0x00, 0x01};
    cr_assert_eq(nf_ggml_values_row(41, q10, 128, y, &err), NF_OK);
    cr_expect_eq(bits_of_f32(y[0]), 0u);
    cr_expect_eq(bits_of_f32(y[1]), 0x80000000u);
    /* Q1_0 under a NaN d (0x7E00): ggml negates it for a clear bit, flipping the NaN's sign */
    uint8_t q10n[18] = {0x00, 0x7E, 0x01};
    cr_assert_eq(nf_ggml_values_row(41, q10n, 128, y, &err), NF_OK);
    cr_expect_eq(bits_of_f32(y[0]), 0x7FC00000u);
    cr_expect_eq(bits_of_f32(y[1]), 0xFFC00000u);
    /* TQ2_0: element 128 + 32*3 + 5 is bits 6..7 of byte 32 + 5; code 3 is +2d */
    uint8_t tq2[66] = {0};
    tq2[37] = 0xC0;
    tq2[65] = 0x3C; /* d = 1 */
    cr_assert_eq(nf_ggml_values_row(35, tq2, 256, y, &err), NF_OK);
    cr_expect_eq(y[128 + 96 + 5], 2.0f);
    cr_expect_eq(y[0], -1.0f);
    /* TQ1_0: byte 0 = 0xA0 (160): digits ((160 * 3^n) mod 256) * 3 >> 8 = 1, 2, 1 for n = 0..2
     * (elements 0, 32, 64); byte 1 = 0: digit 0 */
    uint8_t tq1[54] = {0xA0};
    tq1[53] = 0x3C;
    cr_assert_eq(nf_ggml_values_row(34, tq1, 256, y, &err), NF_OK);
    cr_expect_eq(y[0], 0.0f);
    cr_expect_eq(y[32], 1.0f);
    cr_expect_eq(y[64], 0.0f);
    cr_expect_eq(y[1], -1.0f);
    /* NVFP4: scale 0x38 = E4M3 1.0; code 0x7 (6.0) -> 6, code 0x8 -> +0 (ggml's table holds 0) */
    uint8_t nv[36] = {0x38, 0x38, 0x38, 0x38, 0x87};
    cr_assert_eq(nf_ggml_values_row(40, nv, 64, y, &err), NF_OK);
    cr_expect_eq(y[0], 6.0f);
    cr_expect_eq(bits_of_f32(y[8]), 0u);
    /* MXFP4: e = 127 halves to 0.5; code 0xF (table -12, E2M1 -6.0) in the high nibble of byte 1
     * is element 16 */
    uint8_t mx[17] = {127, 0xF0};
    cr_assert_eq(nf_ggml_values_row(39, mx, 32, y, &err), NF_OK);
    cr_expect_eq(y[16], -6.0f);
    /* Q8_K: binary32 d = 1 + 2^-23 times 3 rounds once (3 + 3*2^-23 -> 3 + 2^-21) */
    uint8_t q8k[292] = {0x01, 0x00, 0x80, 0x3F, 0x03};
    cr_assert_eq(nf_ggml_values_row(15, q8k, 256, y, &err), NF_OK);
    cr_expect_eq(y[0], 3.0f + 0x1p-21f);
}

Test(ggml_values, arguments)
{
    nf_error err = {0};
    float y[64];
    uint8_t b[64] = {0};
    cr_expect(!nf_ggml_values_type(2), "Q4_0 has a gguf_* format");
    cr_expect(!nf_ggml_values_type(4), "Q4_2 was removed");
    cr_expect(!nf_ggml_values_type(0));
    cr_expect_eq(nf_ggml_values_row(2, b, 32, y, &err), NF_ERR_USAGE);
    cr_expect_eq(nf_ggml_values_row(3, b, 33, y, &err), NF_ERR_USAGE);
    cr_expect_eq(nf_ggml_values_row(3, NULL, 32, y, &err), NF_ERR_USAGE);
    cr_expect_eq(nf_ggml_values_row(3, b, 0, NULL, &err), NF_OK);
}

/* Each row's blocks end against an unmapped page: a decoder reading a byte past its blocks faults. */
Test(ggml_values, reads_only_its_blocks)
{
    const long page = sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < NCASES; i++) {
        uint8_t *map = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        cr_assert_neq(map, MAP_FAILED);
        cr_assert_eq(mprotect(map + page, (size_t)page, PROT_NONE), 0);
        const unsigned nb = 3;
        uint8_t *blocks = map + page - nb * CASES[i].bb;
        memset(blocks, 0x5A, nb * CASES[i].bb);
        float out[3 * 256];
        nf_error err = {0};
        cr_expect_eq(nf_ggml_values_row(CASES[i].ggml_type, blocks, nb * CASES[i].qk, out, &err), NF_OK);
        munmap(map, (size_t)page * 2);
    }
}
