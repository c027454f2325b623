/* import_encoded of GPTQ and AWQ integers (docs/methods.md import_encoded, docs/dialects.md
 * "GPTQ and AWQ"): the chunk's int16 q - z become the signed codes, each source group's binary32
 * scale (a binary16 value) the binary16 scale of every target group inside it; the targets and
 * geometries admitted, the refusals (an integer outside the codes, -128 for q8, a scale that is
 * no binary16 value), and chunk independence. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include <ninfer/ninfer.h>

static const uint64_t codes_shape[2] = {4, 256}, scales_shape[2] = {2, 4};
static const nf_import_tensor codes = {"m.qweight", "I32", -1, 2, codes_shape};
static const nf_import_tensor scales_t = {"m.scales", "F16", -1, 2, scales_shape};

/* rows 2 x K 256 in groups of 128: integers (r * 7 + k) % 31 - 15 in q5's [-15, 15], scales
 * 2^-(r + g + 1) */
static void fill(int16_t ints[2 * 256], float sc[2 * 2])
{
    for (int r = 0; r < 2; r++) {
        for (int k = 0; k < 256; k++) ints[r * 256 + k] = (int16_t)((r * 7 + k) % 31 - 15);
        for (int g = 0; g < 2; g++) sc[r * 2 + g] = 1.0f / (float)(2 << (r + g));
    }
}

static nf_status run(const nf_import *imp, const int16_t *ints, const float *sc, uint64_t r0, uint64_t rows,
                     nf_words *w, nf_error *err)
{
    nf_import_chunk c = {r0, rows, ints + r0 * 256, rows * 512, sc + r0 * 2, rows * 8, 0};
    return nf_import_rows(imp, &c, w, r0, err);
}

Test(import_int_groups, codes_and_scales_kept_exactly)
{
    nf_import imp;
    nf_error err;
    const nf_format *q5 = nf_format_lookup("q5_g64_fp16");
    cr_assert_eq(nf_import_init_int_groups(&imp, q5, &codes, &scales_t, 2, 256, 128, &err), NF_OK, "%s", err.message);
    cr_assert_eq(imp.kind, NF_IMPORT_INT_GROUPS);
    cr_assert_str_eq(nf_import_kind_name(imp.kind), "int_groups");
    cr_assert(imp.row_bytes == 512 && imp.scale_row_bytes == 8);
    int16_t ints[2 * 256];
    float sc[4];
    fill(ints, sc);
    nf_geometry g;
    cr_assert_eq(nf_import_geometry(&imp, &g, &err), NF_OK, "%s", err.message);
    nf_words w, one;
    cr_assert_eq(nf_words_alloc(&w, &g, 2, &err), NF_OK);
    cr_assert_eq(nf_words_alloc(&one, &g, 2, &err), NF_OK);
    cr_assert_eq(run(&imp, ints, sc, 0, 2, &w, &err), NF_OK, "%s", err.message);
    for (int r = 0; r < 2; r++) {
        for (int k = 0; k < 256; k++) cr_assert_eq(w.codes[r * 256 + k], ints[r * 256 + k]);
        /* four groups of 64 per row, two per source group; 2^-n as binary16: exponent 15 - n */
        for (int t = 0; t < 4; t++) {
            int n = r + t / 2 + 1;
            cr_assert_eq(w.scales[r * 4 + t], (uint16_t)((15 - n) << 10), "row %d group %d", r, t);
        }
    }
    /* row by row: the same words */
    cr_assert_eq(run(&imp, ints, sc, 1, 1, &one, &err), NF_OK, "%s", err.message);
    cr_assert_eq(run(&imp, ints, sc, 0, 1, &one, &err), NF_OK, "%s", err.message);
    cr_assert_eq(memcmp(one.codes, w.codes, 512), 0);
    cr_assert_eq(memcmp(one.scales, w.scales, 16), 0);
    nf_words_free(&w);
    nf_words_free(&one);
}

Test(import_int_groups, what_a_format_cannot_hold_is_refused)
{
    nf_import imp;
    nf_error err;
    int16_t ints[2 * 256];
    float sc[4];
    const nf_format *q4 = nf_format_lookup("q4_g64_fp16"), *q8 = nf_format_lookup("q8_g32_fp16");
    /* targets and geometry */
    cr_assert_eq(nf_import_init_int_groups(&imp, nf_format_lookup("q6_g64_fp16"), &codes, &scales_t, 2, 256, 128, &err),
                 NF_ERR_INVALID);
    cr_assert(strstr(err.message, "import only into q2_g64_fp16, q4_g64_fp16, q5_g64_fp16 and q8_g32_fp16, not "
                                  "q6_g64_fp16"),
              "%s", err.message);
    cr_assert_eq(nf_import_init_int_groups(&imp, q4, &codes, &scales_t, 2, 256, 32, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "groups made of whole 64-column groups"), "%s", err.message);
    cr_assert_eq(nf_import_init_int_groups(&imp, q4, &codes, &scales_t, 2, 96, 96, &err), NF_ERR_INVALID);
    cr_assert_eq(nf_import_init_int_groups(&imp, q8, &codes, &scales_t, 2, 256, 32, &err), NF_OK, "%s", err.message);
    /* an integer outside q4's [-8, 7]: named with its row and column */
    cr_assert_eq(nf_import_init_int_groups(&imp, q4, &codes, &scales_t, 2, 256, 128, &err), NF_OK, "%s", err.message);
    nf_geometry g;
    nf_words w;
    cr_assert_eq(nf_import_geometry(&imp, &g, &err), NF_OK);
    cr_assert_eq(nf_words_alloc(&w, &g, 2, &err), NF_OK);
    fill(ints, sc);
    for (int i = 0; i < 512; i++) ints[i] = (int16_t)(ints[i] / 2); /* [-7, 7] */
    cr_assert_eq(run(&imp, ints, sc, 0, 2, &w, &err), NF_OK, "%s", err.message);
    ints[256 + 77] = 8;
    cr_assert_eq(run(&imp, ints, sc, 0, 2, &w, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "m.qweight: row 1 col 77: the integer q - z = 8 is outside q4_g64_fp16's codes "
                                  "[-8, 7]") &&
                  strstr(err.message, "requantize it"),
              "%s", err.message);
    ints[256 + 77] = 0;
    /* a scale that is no binary16 value: 1/3 needs more than 11 significant bits */
    sc[3] = 1.0f / 3.0f;
    cr_assert_eq(run(&imp, ints, sc, 0, 2, &w, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "m.scales: row 1 group 1: scale 0.333333343 is not a finite nonzero binary16 value"),
              "%s", err.message);
    nf_words_free(&w);
    /* q8: -128 is outside its codes */
    cr_assert_eq(nf_import_init_int_groups(&imp, q8, &codes, &scales_t, 2, 256, 128, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_import_geometry(&imp, &g, &err), NF_OK);
    cr_assert_eq(nf_words_alloc(&w, &g, 2, &err), NF_OK);
    fill(ints, sc);
    ints[5] = -128;
    cr_assert_eq(run(&imp, ints, sc, 0, 2, &w, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "row 0 col 5: the integer q - z = -128 is outside q8_g32_fp16's codes [-127, 127]"),
              "%s", err.message);
    nf_words_free(&w);
    /* q2: [-1, 2] only, never negated: -2 is refused, not kept as a negated group */
    const nf_format *q2 = nf_format_lookup("q2_g64_fp16");
    cr_assert_eq(nf_import_init_int_groups(&imp, q2, &codes, &scales_t, 2, 256, 128, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_import_geometry(&imp, &g, &err), NF_OK);
    cr_assert_eq(nf_words_alloc(&w, &g, 2, &err), NF_OK);
    fill(ints, sc);
    for (int i = 0; i < 512; i++) ints[i] = (int16_t)(i % 4 - 1); /* -1, 0, 1, 2 */
    cr_assert_eq(run(&imp, ints, sc, 0, 2, &w, &err), NF_OK, "%s", err.message);
    for (int i = 0; i < 512; i++) cr_assert_eq(w.codes[i], i % 4 - 1, "value %d", i);
    cr_assert_eq(w.scales[4], (uint16_t)(13 << 10)); /* row 1 group 0: 2^-2 */
    ints[300] = -2;
    cr_assert_eq(run(&imp, ints, sc, 0, 2, &w, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "row 1 col 44: the integer q - z = -2 is outside q2_g64_fp16's codes [-1, 2]"), "%s",
              err.message);
    nf_words_free(&w);
}
