/* import_encoded of MXFP4 into nvfp4 (docs/dialects.md "MXFP4", ninfer/import.h): every E8M0
 * exponent against every E2M1 code under several divisors 2^p -- the nvfp4 value decoded from the
 * imported words is the MXFP4 value FP4[code] * 2^(e - 127) bit for bit when 2^(e - 127 + p) is an
 * E4M3 power of two (2^-9..2^8), and the row is refused otherwise, unless the block holds only
 * zeros; E8M0 255 and values past binary32 are refused by row and block. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <ninfer/ninfer.h>

static const uint64_t codes_shape[4] = {1, 128, 2, 16}, scales_shape[3] = {1, 128, 2};
static const nf_import_tensor codes_t = {"m.down_proj_blocks", "U8", -1, 4, codes_shape};
static const nf_import_tensor scales_t = {"m.down_proj_scales", "U8", -1, 3, scales_shape};

/* The E2M1 values, from the OCP MX specification's table (sign bit 3). */
static double fp4(unsigned c)
{
    static const double mag[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
    return (c & 8) ? -mag[c & 7] : mag[c & 7];
}

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* One row [64]: block 0 holds codes 0..15 twice (byte i: codes 2i % 16, 2i + 1 % 16, low nibble
 * first), block 1 codes `fill`; both blocks exponent e. */
static nf_status one_row(const nf_import *imp, int e, uint8_t fill, nf_words *w, nf_error *err)
{
    uint8_t codes[32], scales[2] = {(uint8_t)e, (uint8_t)e};
    for (int i = 0; i < 16; i++) codes[i] = (uint8_t)(((2 * i) % 16) | ((2 * i + 1) % 16) << 4);
    memset(codes + 16, fill, 16);
    nf_import_chunk c = {3, 1, codes, sizeof codes, scales, sizeof scales, 0};
    return nf_import_rows(imp, &c, w, 0, err);
}

Test(import_mxfp4, every_exponent_and_code)
{
    static const int32_t ps[] = {-119, -20, 0, 5, 60, 127};
    for (size_t pi = 0; pi < sizeof ps / sizeof ps[0]; pi++) {
        nf_import imp;
        nf_error err;
        cr_assert_eq(nf_import_init_mxfp4(&imp, &codes_t, &scales_t, 128, 64, ps[pi], &err), NF_OK, "%s", err.message);
        cr_assert_str_eq(nf_import_kind_name(imp.kind), "mxfp4");
        cr_assert_eq(imp.divisor, (uint32_t)(ps[pi] + 127) << 23);
        nf_geometry g;
        cr_assert_eq(nf_import_geometry(&imp, &g, &err), NF_OK, "%s", err.message);
        cr_assert(g.format && !strcmp(g.format->name, "nvfp4") && g.divisors == 1);
        nf_words w;
        cr_assert_eq(nf_words_alloc(&w, &g, 1, &err), NF_OK);
        for (int e = 0; e < 255; e++) {
            const int t = e - 127 + ps[pi];
            bool overflow = false;
            for (unsigned c = 0; c < 16; c++) overflow = overflow || isinf((float)ldexp(fp4(c), e - 127));
            nf_status st = one_row(&imp, e, 0x00, &w, &err);
            if (overflow) {
                cr_assert_eq(st, NF_ERR_INVALID, "p %d e %d", ps[pi], e);
                cr_assert(strstr(err.message, "row 3 block 0 (cols 0..31)") && strstr(err.message, "overflows"), "%s",
                          err.message);
                continue;
            }
            if (t < -9 || t > 8) {
                cr_assert_eq(st, NF_ERR_INVALID, "p %d e %d", ps[pi], e);
                cr_assert(strstr(err.message, "m.down_proj_scales") && strstr(err.message, "row 3 block 0") &&
                              strstr(err.message, "requantize"),
                          "%s", err.message);
                continue;
            }
            cr_assert_eq(st, NF_OK, "p %d e %d: %s", ps[pi], e, err.message);
            for (unsigned col = 0; col < 64; col++) {
                const unsigned code = col < 32 ? col % 16 : 0;
                cr_assert_eq(w.codes8[col], code);
                float got = nf_nvfp4_value(w.codes8[col], w.scales8[col / 16], imp.divisor);
                float want = (float)ldexp(fp4(code), e - 127); /* exact: at most 2 significant bits */
                cr_assert_eq(bits_of(got), bits_of(want), "p %d e %d col %u: %a, not %a", ps[pi], e, col, (double)got,
                             (double)want);
            }
        }
        nf_words_free(&w);
    }
}

Test(import_mxfp4, zero_blocks_below_the_range_kept)
{
    nf_import imp;
    nf_error err;
    cr_assert_eq(nf_import_init_mxfp4(&imp, &codes_t, &scales_t, 128, 64, 5, &err), NF_OK, "%s", err.message);
    nf_geometry g;
    cr_assert_eq(nf_import_geometry(&imp, &g, &err), NF_OK, "%s", err.message);
    nf_words w;
    cr_assert_eq(nf_words_alloc(&w, &g, 1, &err), NF_OK);
    /* exponent 0 (2^-127, 2^-122 under 2^5): block 0 has nonzero codes, refused; all-zero (+-0) kept */
    uint8_t codes[32] = {0}, scales[2] = {130, 0};
    for (int i = 16; i < 32; i++) codes[i] = i % 2 ? 0x88 : 0x08; /* -0 and +0 */
    nf_import_chunk c = {0, 1, codes, sizeof codes, scales, sizeof scales, 0};
    cr_assert_eq(nf_import_rows(&imp, &c, &w, 0, &err), NF_OK, "%s", err.message);
    for (unsigned col = 32; col < 64; col++) {
        float v = nf_nvfp4_value(w.codes8[col], w.scales8[col / 16], imp.divisor);
        cr_assert(v == 0.0f && (signbit(v) != 0) == (((codes[col / 2] >> (4 * (col % 2))) & 15) == 8), "col %u", col);
    }
    codes[20] = 0x10; /* a 0.5 in block 1 */
    cr_assert_eq(nf_import_rows(&imp, &c, &w, 0, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "row 0 block 1 (cols 32..63): scale 2^-127 is 2^-122 under the divisor 2^5"), "%s",
              err.message);
    scales[1] = 0xFF;
    cr_assert_eq(nf_import_rows(&imp, &c, &w, 0, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "row 0 block 1 (cols 32..63): E8M0 scale 0xFF is NaN"), "%s", err.message);
    nf_words_free(&w);
}

Test(import_mxfp4, refused_declarations)
{
    nf_import imp;
    nf_error err;
    const nf_import_tensor f16 = {"m.down_proj_scales", "F16", -1, 3, scales_shape};
    cr_assert_eq(nf_import_init_mxfp4(&imp, &codes_t, &f16, 128, 64, 0, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "E8M0"), "%s", err.message);
    cr_assert_eq(nf_import_init_mxfp4(&imp, &codes_t, &scales_t, 128, 48, 0, &err), NF_ERR_INVALID);
    cr_assert_eq(nf_import_init_mxfp4(&imp, &codes_t, &scales_t, 128, 64, 128, &err), NF_ERR_USAGE);
    cr_assert_eq(nf_import_init_mxfp4(&imp, &codes_t, &scales_t, 128, 64, -127, &err), NF_ERR_USAGE);
    /* 100 rows: nvfp4's tiles need a multiple of 128 */
    cr_assert_eq(nf_import_init_mxfp4(&imp, &codes_t, &scales_t, 100, 64, 0, &err), NF_OK, "%s", err.message);
    nf_geometry g;
    cr_assert_neq(nf_import_geometry(&imp, &g, &err), NF_OK);
}
