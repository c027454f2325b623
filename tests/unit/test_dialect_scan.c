/* ninfer/dialect.h: roles of every tensor, the weight's geometry, declarations deciding what the
 * names alone cannot, the checks of scales and codes as rows are read, and the bounds of a read
 * (docs/dialects.md).  The values themselves are checked against an independent oracle by
 * tests/cli/test_dialects.sh. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "support/source_writer.h"

static char *dir;
static void make_dir(void) { dir = sw_tempdir(); }
static void remove_dir(void)
{
    sw_rmtree(dir);
    free(dir);
}
TestSuite(dialect, .init = make_dir, .fini = remove_dir);

/* A checkpoint directory: model.safetensors of the tensors and, when given, config.json. */
static nf_source *open_ckpt(const sw_st_tensor *t, size_t n, const char *config)
{
    sw_buf b = {0};
    sw_st_file(&b, t, n, NULL);
    char *path = sw_path(dir, "model.safetensors");
    cr_assert_eq(sw_write_file(path, b.data, b.len), 0);
    free(path);
    sw_free(&b);
    char *cfg = sw_path(dir, "config.json");
    remove(cfg);
    free(cfg);
    if (config) cr_assert_eq(sw_write_text(dir, "config.json", config), 0);
    nf_source *s = NULL;
    nf_error err;
    cr_assert_eq(nf_source_open(dir, &s, &err), NF_OK, "%s", err.message);
    return s;
}

static const float half = 0.5f;

Test(dialect, roles_geometry_and_values_of_a_deepseek_weight)
{
    /* [3, 130]: K crosses a 128-column block; codes 0x38 = 1.0 */
    uint8_t codes[3 * 130];
    memset(codes, 0x38, sizeof codes);
    codes[129] = 0x40; /* 2.0 in the second block */
    float scales[2] = {0.5f, 4.0f};
    uint16_t norm[4] = {0x3F80, 0x3F80, 0x3F80, 0x3F80};
    sw_st_tensor t[] = {
        {"m.w.weight", "F8_E4M3", 2, {3, 130}, codes, sizeof codes},
        {"m.w.weight_scale_inv", "F32", 2, {1, 2}, scales, sizeof scales},
        {"m.norm", "BF16", 1, {4}, norm, sizeof norm},
    };
    nf_source *s = open_ckpt(t, 3,
                             "{\"quantization_config\": {\"quant_method\": \"fp8\", \"fmt\": \"e4m3\", "
                             "\"weight_block_size\": [128, 128]}}");
    nf_dialects *d = NULL;
    nf_error err;
    cr_assert_eq(nf_dialects_scan(s, &d, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_dialects_weight_count(d), 1);
    cr_assert(strstr(nf_dialects_declared(d), "fp8"), "%s", nf_dialects_declared(d));
    const nf_qweight *q = nf_dialects_weight_at(d, 0), *owner = NULL;
    cr_assert_eq(q->dialect, NF_DIALECT_DEEPSEEK_FP8);
    cr_assert_str_eq(q->strategy, "block");
    cr_assert(q->shape[0] == 3 && q->shape[1] == 130 && q->scale_rows == 1 && q->scale_cols == 2);
    cr_assert_eq(nf_dialects_role(d, nf_source_find(s, "m.w.weight"), &owner), NF_QROLE_WEIGHT);
    cr_assert_eq(owner, q);
    cr_assert_eq(nf_dialects_role(d, nf_source_find(s, "m.w.weight_scale_inv"), &owner), NF_QROLE_COMPANION);
    cr_assert_eq(owner, q);
    cr_assert_eq(nf_dialects_role(d, nf_source_find(s, "m.norm"), &owner), NF_QROLE_PLAIN);
    cr_assert_null(owner);
    char what[160];
    nf_qweight_describe(q, what, sizeof what);
    cr_assert_str_eq(what, "deepseek_fp8: E4M3 codes, F32 block 128x128 scales");
    float v[3 * 130];
    cr_assert_eq(nf_qweight_read_f32(s, q, 0, 3, v, 3 * 130, &err), NF_OK, "%s", err.message);
    cr_assert(v[0] == half && v[127] == half && v[128] == 4.0f && v[129] == 8.0f && v[130] == half);
    /* rows past the end and a short buffer are the caller's mistakes */
    cr_assert_eq(nf_qweight_read_f32(s, q, 2, 4, v, 3 * 130, &err), NF_ERR_USAGE);
    cr_assert_eq(nf_qweight_read_f32(s, q, 0, 3, v, 10, &err), NF_ERR_USAGE);
    nf_dialects_free(d);
    nf_source_close(s);
}

Test(dialect, a_zero_block_scale_and_a_nan_code_are_named)
{
    uint8_t codes[2 * 16];
    memset(codes, 0x38, sizeof codes);
    float scales[2] = {1.0f, 0.0f}; /* channel: row 1's scale is zero */
    sw_st_tensor t[] = {
        {"a.weight", "F8_E4M3", 2, {2, 16}, codes, sizeof codes},
        {"a.weight_scale", "F32", 2, {2, 1}, scales, sizeof scales},
    };
    nf_source *s = open_ckpt(t, 2, NULL);
    nf_dialects *d = NULL;
    nf_error err;
    cr_assert_eq(nf_dialects_scan(s, &d, &err), NF_OK, "%s", err.message);
    cr_assert_str_eq(nf_dialects_declared(d), "companion tensor names");
    const nf_qweight *q = nf_dialects_weight_at(d, 0);
    cr_assert_eq(q->dialect, NF_DIALECT_CT_FP8);
    cr_assert_str_eq(q->strategy, "channel");
    float v[32];
    cr_assert_eq(nf_qweight_read_f32(s, q, 0, 1, v, 32, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_qweight_read_f32(s, q, 0, 2, v, 32, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "model.safetensors: tensor 'a.weight_scale': block (1, 0) (rows 1..1, cols 0..15)") &&
                  strstr(err.message, "is zero"),
              "%s", err.message);
    nf_dialects_free(d);
    nf_source_close(s);

    codes[5] = 0x7F;
    scales[1] = 1.0f;
    s = open_ckpt(t, 2, NULL);
    cr_assert_eq(nf_dialects_scan(s, &d, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_qweight_read_f32(s, nf_dialects_weight_at(d, 0), 0, 2, v, 32, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "tensor 'a.weight': row 0 col 5: E4M3 code 0x7F is NaN"), "%s", err.message);
    nf_dialects_free(d);
    nf_source_close(s);
}

Test(dialect, the_declaration_decides_what_names_cannot)
{
    /* [4, 64] with scales [4, 2]: a group size of 32 by the shape; the declaration says 64
     * columns per group would need [4, 1] -- a conflict named by the scale tensor */
    uint8_t codes[4 * 64];
    memset(codes, 0x38, sizeof codes);
    float scales[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    sw_st_tensor t[] = {
        {"x.weight", "F8_E4M3", 2, {4, 64}, codes, sizeof codes},
        {"x.weight_scale", "F32", 2, {4, 2}, scales, sizeof scales},
    };
    nf_source *s = open_ckpt(t, 2, NULL);
    nf_dialects *d = NULL;
    nf_error err;
    cr_assert_eq(nf_dialects_scan(s, &d, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_dialects_weight_at(d, 0)->block_cols, 32);
    nf_dialects_free(d);
    nf_source_close(s);
    s = open_ckpt(t, 2,
                  "{\"quantization_config\": {\"quant_method\": \"compressed-tensors\", \"config_groups\": {\"g\": "
                  "{\"targets\": [\"Linear\"], \"weights\": {\"num_bits\": 8, \"type\": \"float\", \"strategy\": "
                  "\"group\", \"group_size\": 64}}}}}");
    cr_assert_eq(nf_dialects_scan(s, &d, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "tensor 'x.weight_scale': shape [4,2] is not the [4,1] scales of group"), "%s",
              err.message);
    nf_source_close(s);
    /* the same weight in a checkpoint that says GPTQ: conflicting markers, not plain tensors */
    s = open_ckpt(t, 2, "{\"quantization_config\": {\"quant_method\": \"gptq\"}}");
    cr_assert_eq(nf_dialects_scan(s, &d, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "weight, but ") &&
                  strstr(err.message, "config.json declares config.json quantization_config (GPTQ, v1): "
                                      "conflicting dialect markers"),
              "%s", err.message);
    nf_source_close(s);
}

Test(dialect, gguf_and_plain_checkpoints_scan_empty)
{
    uint16_t w[4] = {0x3F80, 0, 0, 0};
    sw_st_tensor t[] = {{"p.weight", "BF16", 2, {2, 2}, w, sizeof w}};
    nf_source *s = open_ckpt(t, 1, "{\"model_type\": \"llama\"}");
    nf_dialects *d = NULL;
    nf_error err;
    cr_assert_eq(nf_dialects_scan(s, &d, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_dialects_weight_count(d), 0);
    cr_assert_null(nf_dialects_declared(d));
    cr_assert_eq(nf_dialects_role(d, nf_source_find(s, "p.weight"), NULL), NF_QROLE_PLAIN);
    nf_dialects_free(d);
    nf_source_close(s);
}

/* Issue 23 item 9: a code and a scale both finite whose product overflows binary32 is refused
 * naming the row, column, code and scale (docs/dialects.md "Bad input"), never read as +inf. */
Test(dialect, a_value_that_overflows_binary32_is_refused)
{
    uint8_t codes[2 * 16];
    memset(codes, 0x38, sizeof codes); /* 1.0 */
    codes[16 + 3] = 0x7E;              /* 448 in row 1 */
    float scales[2] = {3e38f, 3e38f};  /* channel: 1.0 x 3e38 fits, 448 x 3e38 does not */
    sw_st_tensor t[] = {
        {"a.weight", "F8_E4M3", 2, {2, 16}, codes, sizeof codes},
        {"a.weight_scale", "F32", 2, {2, 1}, scales, sizeof scales},
    };
    nf_source *s = open_ckpt(t, 2, NULL);
    nf_dialects *d = NULL;
    nf_error err;
    cr_assert_eq(nf_dialects_scan(s, &d, &err), NF_OK, "%s", err.message);
    float v[32];
    cr_assert_eq(nf_qweight_read_f32(s, nf_dialects_weight_at(d, 0), 0, 1, v, 32, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_qweight_read_f32(s, nf_dialects_weight_at(d, 0), 0, 2, v, 32, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message,
                     "model.safetensors: tensor 'a.weight': row 1 col 3: E4M3 code 0x7E x scale 3.00000001e+38 "
                     "(0x7F61B1E6) overflows binary32"),
              "%s", err.message);
    nf_dialects_free(d);
    nf_source_close(s);

    /* int8 codes (compressed-tensors): (q - z) x scale likewise */
    int8_t q8[2 * 4] = {1, 2, 3, 4, 5, 6, -128, 7};
    float s8[2] = {1e37f, 1e37f};
    sw_st_tensor t8[] = {
        {"b.weight", "I8", 2, {2, 4}, q8, sizeof q8},
        {"b.weight_scale", "F32", 2, {2, 1}, s8, sizeof s8},
    };
    s = open_ckpt(t8, 2, NULL);
    cr_assert_eq(nf_dialects_scan(s, &d, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_qweight_read_f32(s, nf_dialects_weight_at(d, 0), 0, 2, v, 32, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "tensor 'b.weight': row 1 col 2: integer code -128 (q - z) x scale 9.99999993e+36"),
              "%s", err.message);
    nf_dialects_free(d);
    nf_source_close(s);
}

/* Issue 23: quantized checkpoints of producers no dialect reads are refused by the scan itself,
 * declared or recognised by their tensors (docs/dialects.md, "Quantized checkpoints not read
 * yet"); a dense sparsity_config changes nothing. */
Test(dialect, checkpoints_no_dialect_reads_are_refused_by_the_scan)
{
    /* MLX, [2, 64] of 4-bit codes in one group per row: nibble i of each word holds i, so codes
     * run 0..7 eight times; scale 2 and bias -1 (BF16) make every value 2q - 1 */
    uint32_t packed[2 * 8];
    for (int i = 0; i < 16; i++) packed[i] = 0x76543210u;
    uint16_t two[2] = {0x4000, 0x4000}, minus_one[2] = {0xBF80, 0xBF80};
    sw_st_tensor mlx[] = {
        {"p.weight", "U32", 2, {2, 8}, packed, sizeof packed},
        {"p.scales", "BF16", 2, {2, 1}, two, sizeof two},
        {"p.biases", "BF16", 2, {2, 1}, minus_one, sizeof minus_one},
    };
    nf_dialects *d = NULL;
    nf_error err;
    /* current mlx-lm: quantization_config without quant_method is MLX, read (not "quant_method:
     * missing"); old mlx-lm's quantization alone alike */
    const char *decls[2] = {"{\"quantization_config\": {\"group_size\": 64, \"bits\": 4}}",
                            "{\"quantization\": {\"group_size\": 64, \"bits\": 4}}"};
    nf_source *s;
    for (int i = 0; i < 2; i++) {
        s = open_ckpt(mlx, 3, decls[i]);
        cr_assert_eq(nf_dialects_scan(s, &d, &err), NF_OK, "%s", err.message);
        const nf_qweight *q = nf_dialects_weight_at(d, 0);
        cr_assert(q && q->dialect == NF_DIALECT_MLX && q->shape[0] == 2 && q->shape[1] == 64 && q->bits == 4);
        float v[128];
        cr_assert_eq(nf_qweight_read_f32(s, q, 0, 2, v, 128, &err), NF_OK, "%s", err.message);
        for (int k = 0; k < 128; k++) cr_assert_eq(v[k], (float)(2 * (k % 8) - 1), "value %d", k);
        nf_dialects_free(d);
        nf_source_close(s);
    }
    /* no declaration: 8 words and one group per row are 4-bit codes in a group of 64, 2-bit in
     * 128 or 8-bit in 32: refused as ambiguous, never guessed */
    s = open_ckpt(mlx, 3, NULL);
    cr_assert_eq(nf_dialects_scan(s, &d, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "tensor 'p.weight': U32 [2,8] with scales BF16 [2,1]: fits several of MLX's code "
                                  "widths and group sizes, and no declaration says which"),
              "%s", err.message);
    nf_source_close(s);
    /* MLX's other modes are not read */
    s = open_ckpt(mlx, 3, "{\"quantization_config\": {\"group_size\": 32, \"bits\": 4, \"mode\": \"mxfp4\"}}");
    cr_assert_eq(nf_dialects_scan(s, &d, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "config.json: quantization_config.mode: MLX mxfp4 (mlx-lm, 4-bit, group 32, declared "
                                  "in config.json quantization_config): not read yet"),
              "%s", err.message);
    nf_source_close(s);
    /* GPTQ's qweight with its scales but no zero points: read by its dialect, which needs them */
    int32_t qw[2 * 4] = {0};
    uint16_t sc[4] = {0x3C00, 0x3C00, 0x3C00, 0x3C00};
    sw_st_tensor gptq[] = {
        {"q.qweight", "I32", 2, {2, 4}, qw, sizeof qw},
        {"q.scales", "F16", 2, {1, 4}, sc, sizeof sc},
    };
    s = open_ckpt(gptq, 2, NULL);
    cr_assert_eq(nf_dialects_scan(s, &d, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "tensor 'q.qweight': its q.qzeros is in no shard"), "%s", err.message);
    nf_source_close(s);
    /* a dense sparsity_config stores the weights as they are: a plain checkpoint */
    uint16_t w[4] = {0x3F80, 0, 0, 0};
    sw_st_tensor plain[] = {{"p.weight", "BF16", 2, {2, 2}, w, sizeof w}};
    s = open_ckpt(plain, 1, "{\"sparsity_config\": {\"format\": \"dense\"}}");
    cr_assert_eq(nf_dialects_scan(s, &d, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_dialects_weight_count(d), 0);
    nf_dialects_free(d);
    nf_source_close(s);
    s = open_ckpt(plain, 1, "{\"sparsity_config\": {\"format\": \"sparse-24-bitmask\"}}");
    cr_assert_eq(nf_dialects_scan(s, &d, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "config.json: sparsity_config: 2:4 sparse (compressed-tensors sparse-24-bitmask"),
              "%s", err.message);
    nf_source_close(s);
}

/* GPTQ 3-bit codes straddle words: K = 32 codes of one column fill three words, code 10 has its
 * low two bits at the top of word 0 and its high bit at the bottom of word 1, code 21 one bit at
 * the top of word 1 and two at the bottom of word 2 (AutoGPTQ's packing, docs/dialects.md).  The
 * known answer: codes k % 8 for column 0 and 7 - k % 8 for column 1, zero points 4 (stored 3, the
 * v1 format), scales 0.5 and 0.25; g_idx trivial over groups of 16. */
Test(dialect, gptq_three_bit_codes_straddle_words)
{
    enum { K = 32, N = 2 };
    uint32_t qw[3 * N] = {0};
    for (unsigned n = 0; n < N; n++)
        for (unsigned k = 0; k < K; k++) {
            uint32_t q = n == 0 ? k % 8 : 7 - k % 8;
            unsigned bit = 3 * k; /* one bit at a time: the stream, as the producer lays it */
            for (unsigned b = 0; b < 3; b++, bit++)
                if (q >> b & 1) qw[(bit / 32) * N + n] |= 1u << (bit % 32);
        }
    uint32_t qz[2] = {3u | 3u << 3, 3u | 3u << 3};         /* [G 2, ceil(2 * 3 / 32) = 1]: z - 1 = 3 */
    uint16_t sc[2 * N] = {0x3800, 0x3400, 0x3800, 0x3400}; /* [G, N]: 0.5 (column 0), 0.25 (column 1) */
    int32_t gi[K];
    for (int k = 0; k < K; k++) gi[k] = k / 16;
    sw_st_tensor t[] = {
        {"m.qweight", "I32", 2, {3, N}, qw, sizeof qw},
        {"m.qzeros", "I32", 2, {2, 1}, qz, sizeof qz},
        {"m.scales", "F16", 2, {2, N}, sc, sizeof sc},
        {"m.g_idx", "I32", 1, {K}, gi, sizeof gi},
    };
    nf_source *s = open_ckpt(t, 4,
                             "{\"quantization_config\": {\"quant_method\": \"gptq\", \"bits\": 3, "
                             "\"group_size\": 16, \"desc_act\": false}}");
    nf_dialects *d = NULL;
    nf_error err;
    cr_assert_eq(nf_dialects_scan(s, &d, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_dialects_weight_count(d), 1);
    const nf_qweight *q = nf_dialects_weight_at(d, 0);
    cr_assert_eq(q->dialect, NF_DIALECT_GPTQ);
    cr_assert(q->shape[0] == N && q->shape[1] == K && q->bits == 3 && q->groups == 2);
    const nf_source_tensor *comp[NF_QWEIGHT_MAX_READS];
    cr_assert_eq(nf_qweight_companions(q, comp), 3); /* scales, qzeros, g_idx */
    for (size_t i = 0; i < 4; i++)
        cr_assert_eq(nf_dialects_role(d, nf_source_find(s, t[i].name), NULL),
                     i == 0 ? NF_QROLE_WEIGHT : NF_QROLE_COMPANION);
    char what[160];
    nf_qweight_describe(q, what, sizeof what);
    cr_assert_str_eq(what, "gptq: int3 codes, F16 group 16 scales, zero points"); /* g_idx is k / group */
    cr_assert(!q->act_order);
    float v[N * K], span[5];
    cr_assert_eq(nf_qweight_read_f32(s, q, 0, N, v, N * K, &err), NF_OK, "%s", err.message);
    for (unsigned n = 0; n < N; n++)
        for (unsigned k = 0; k < K; k++) {
            int code = n == 0 ? (int)(k % 8) : 7 - (int)(k % 8);
            cr_assert_eq(v[n * K + k], (float)(code - 4) * (n == 0 ? 0.5f : 0.25f), "row %u col %u", n, k);
        }
    /* a span across the straddling code 21 gives the same values */
    cr_assert_eq(nf_qweight_read_f32_span(s, q, 1, 19, 5, span, 5, &err), NF_OK, "%s", err.message);
    cr_assert_eq(memcmp(span, v + K + 19, sizeof span), 0);
    nf_dialects_free(d);
    nf_source_close(s);
}

/* AWQ GEMM: word j of qweight row k holds columns 8j + 0,2,4,6,1,3,5,7 in nibbles 0..7.  Nibble
 * i holding the value i makes column c's code the nibble that holds it: 0,4,1,5,2,6,3,7. */
Test(dialect, awq_gemm_nibble_order)
{
    uint32_t qw[2] = {0x76543210u, 0x76543210u}; /* K 2, N 8 */
    uint32_t qz[1] = {0};                        /* zero points 0 */
    uint16_t sc[8];
    for (int i = 0; i < 8; i++) sc[i] = 0x3C00; /* 1.0 */
    sw_st_tensor t[] = {
        {"m.qweight", "I32", 2, {2, 1}, qw, sizeof qw},
        {"m.qzeros", "I32", 2, {1, 1}, qz, sizeof qz},
        {"m.scales", "F16", 2, {1, 8}, sc, sizeof sc},
    };
    nf_source *s = open_ckpt(t, 3,
                             "{\"quantization_config\": {\"quant_method\": \"awq\", \"bits\": 4, "
                             "\"group_size\": 2, \"version\": \"gemm\"}}");
    nf_dialects *d = NULL;
    nf_error err;
    cr_assert_eq(nf_dialects_scan(s, &d, &err), NF_OK, "%s", err.message);
    const nf_qweight *q = nf_dialects_weight_at(d, 0);
    cr_assert(q->dialect == NF_DIALECT_AWQ && q->shape[0] == 8 && q->shape[1] == 2);
    float v[16];
    cr_assert_eq(nf_qweight_read_f32(s, q, 0, 8, v, 16, &err), NF_OK, "%s", err.message);
    static const float want[8] = {0, 4, 1, 5, 2, 6, 3, 7};
    for (int n = 0; n < 8; n++) cr_assert(v[2 * n] == want[n] && v[2 * n + 1] == want[n], "row %d", n);
    nf_dialects_free(d);
    nf_source_close(s);
}

/* MXFP4 (docs/dialects.md "MXFP4"): gpt-oss's stacked experts [E, R, B, 16] read as [E * R, 32 * B]
 * rows, OpenAI's original/ names alike, compressed-tensors' weight_packed; every E8M0 exponent
 * 0..254 gives FP4[code] * 2^(e - 127) exactly (or is refused past binary32), 255 is NaN. */
Test(dialect, mxfp4_every_exponent)
{
    static uint8_t blocks[255 * 16], scales[255];
    for (int e = 0; e < 255; e++) {
        scales[e] = (uint8_t)e;
        for (int i = 0; i < 16; i++) blocks[e * 16 + i] = (uint8_t)(((2 * i) % 16) | ((2 * i + 1) % 16) << 4);
    }
    static const double mag[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
    const char *names[3][2] = {
        {"model.layers.0.mlp.experts.down_proj_blocks", "model.layers.0.mlp.experts.down_proj_scales"},
        {"block.0.mlp.mlp2_weight.blocks", "block.0.mlp.mlp2_weight.scales"},
        {"m.weight_packed", "m.weight_scale"}};
    for (int layout = 0; layout < 3; layout++) {
        /* 255 rows of one block (gpt-oss: 5 experts x 51 rows) */
        sw_st_tensor oss[] = {
            {names[layout][0], "U8", 4, {5, 51, 1, 16}, blocks, sizeof blocks},
            {names[layout][1], "U8", 3, {5, 51, 1}, scales, sizeof scales},
        };
        sw_st_tensor ct[] = {
            {names[2][0], "U8", 2, {255, 16}, blocks, sizeof blocks},
            {names[2][1], "U8", 2, {255, 1}, scales, sizeof scales},
        };
        nf_source *s = open_ckpt(layout < 2 ? oss : ct, 2,
                                 layout == 0 ? "{\"quantization_config\": {\"quant_method\": \"mxfp4\"}}" : NULL);
        nf_dialects *d = NULL;
        nf_error err;
        cr_assert_eq(nf_dialects_scan(s, &d, &err), NF_OK, "%s", err.message);
        cr_assert_eq(nf_dialects_weight_count(d), 1);
        const nf_qweight *q = nf_dialects_weight_at(d, 0);
        cr_assert_eq(q->dialect, layout < 2 ? NF_DIALECT_GPT_OSS_MXFP4 : NF_DIALECT_CT_MXFP4);
        cr_assert(q->shape[0] == 255 && q->shape[1] == 32 && q->codes_kind == NF_QCODES_E2M1 && q->block_cols == 32);
        const nf_source_tensor *t = nf_source_find(s, names[layout][1]);
        cr_assert_eq(nf_dialects_role(d, t, NULL), NF_QROLE_COMPANION);
        float v[32];
        for (int e = 0; e < 255; e++) {
            bool over = false;
            for (int c = 0; c < 16; c++) over = over || isinf((float)ldexp(mag[c & 7], e - 127));
            nf_status st = nf_qweight_read_f32(s, q, (uint64_t)e, (uint64_t)e + 1, v, 32, &err);
            if (over) {
                cr_assert_eq(st, NF_ERR_INVALID, "e %d", e);
                cr_assert(strstr(err.message, "overflows binary32"), "%s", err.message);
                continue;
            }
            cr_assert_eq(st, NF_OK, "e %d: %s", e, err.message);
            for (int k = 0; k < 32; k++) {
                int c = k % 16;
                float want = (float)ldexp((c & 8) ? -mag[c & 7] : mag[c & 7], e - 127);
                cr_assert(memcmp(&v[k], &want, 4) == 0, "e %d col %d: %a, not %a", e, k, (double)v[k], (double)want);
            }
        }
        nf_dialects_free(d);
        nf_source_close(s);
    }
    /* E8M0 255 is NaN, named by its block */
    scales[3] = 0xFF;
    sw_st_tensor bad[] = {
        {names[2][0], "U8", 2, {255, 16}, blocks, sizeof blocks},
        {names[2][1], "U8", 2, {255, 1}, scales, sizeof scales},
    };
    nf_source *s = open_ckpt(bad, 2, NULL);
    nf_dialects *d = NULL;
    nf_error err;
    float v[32 * 4];
    cr_assert_eq(nf_dialects_scan(s, &d, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_qweight_read_f32(s, nf_dialects_weight_at(d, 0), 0, 4, v, 128, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "tensor 'm.weight_scale': block (3, 0) (rows 3..3, cols 0..31): scale 0xFF is NaN"),
              "%s", err.message);
    nf_dialects_free(d);
    nf_source_close(s);
}

/* bitsandbytes (docs/dialects.md "bitsandbytes"): the first element of a byte in its HIGH nibble,
 * blocks of the flattened weight across rows, double quantization's absmax (map[u] * nested +
 * offset), the state's dtype rounding; LLM.int8's two binary32 products. */
Test(dialect, bitsandbytes_known_answers)
{
    /* [2, 3]: 6 codes in 3 bytes; one block of 64 (it spans both rows); the table t[i] = i - 8 */
    uint8_t w[3] = {0xF0, 0x79, 0x8A};
    float map[16], nmap[256] = {0}, nested = 4.0f;
    for (int i = 0; i < 16; i++) map[i] = (float)(i - 8);
    nmap[3] = 0.5f; /* absmax = 0.5 * 4 + 0.25 = 2.25 */
    uint8_t u = 3;
    const char *js = "{\"quant_type\": \"nf4\", \"blocksize\": 64, \"dtype\": \"float16\", \"shape\": [2, 3], "
                     "\"nested_blocksize\": 256, \"nested_dtype\": \"float32\", \"nested_offset\": 0.25}";
    sw_st_tensor t[] = {
        {"m.weight", "U8", 2, {3, 1}, w, sizeof w},
        {"m.weight.absmax", "U8", 1, {1}, &u, 1},
        {"m.weight.nested_absmax", "F32", 1, {1}, &nested, 4},
        {"m.weight.nested_quant_map", "F32", 1, {256}, nmap, sizeof nmap},
        {"m.weight.quant_map", "F32", 1, {16}, map, sizeof map},
        {"m.weight.quant_state.bitsandbytes__nf4", "U8", 1, {strlen(js)}, js, strlen(js)},
    };
    nf_source *s = open_ckpt(t, 6, NULL);
    nf_dialects *d = NULL;
    nf_error err;
    cr_assert_eq(nf_dialects_scan(s, &d, &err), NF_OK, "%s", err.message);
    const nf_qweight *q = nf_dialects_weight_at(d, 0);
    cr_assert(q && q->dialect == NF_DIALECT_BNB_4BIT && q->shape[0] == 2 && q->shape[1] == 3);
    for (size_t i = 1; i < 6; i++)
        cr_assert_eq(nf_dialects_role(d, nf_source_find(s, t[i].name), NULL), NF_QROLE_COMPANION, "%s", t[i].name);
    float v[6];
    cr_assert_eq(nf_qweight_read_f32(s, q, 0, 2, v, 6, &err), NF_OK, "%s", err.message);
    /* codes F, 0, 7, 9, 8, A: t = 7, -8, -1, 1, 0, 2, times 2.25 */
    const float want[6] = {15.75f, -18.0f, -2.25f, 2.25f, 0.0f, 4.5f};
    for (int i = 0; i < 6; i++) cr_assert_eq(v[i], want[i], "element %d: %g", i, (double)v[i]);
    cr_assert_eq(nf_qweight_read_f32_span(s, q, 1, 1, 2, v, 2, &err), NF_OK, "%s", err.message);
    cr_assert(v[0] == 0.0f && v[1] == 4.5f);
    nf_dialects_free(d);
    nf_source_close(s);

    /* int8: (q * SCB) * RN32(1/127): 127 x 1 gives 1, -5 x 3 gives 0xBDF1E3C8 */
    int8_t q8[2] = {127, -5};
    float scb[2] = {1.0f, 3.0f};
    sw_st_tensor t8[] = {{"n.weight", "I8", 2, {2, 1}, q8, 2}, {"n.SCB", "F32", 1, {2}, scb, 8}};
    s = open_ckpt(t8, 2, NULL);
    cr_assert_eq(nf_dialects_scan(s, &d, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_dialects_weight_at(d, 0)->dialect, NF_DIALECT_BNB_INT8);
    cr_assert_eq(nf_qweight_read_f32(s, nf_dialects_weight_at(d, 0), 0, 2, v, 2, &err), NF_OK, "%s", err.message);
    uint32_t bits;
    memcpy(&bits, &v[1], 4);
    cr_assert(v[0] == 1.0f && bits == 0xBDF1E3C8u, "%a %08x", (double)v[0], bits);
    nf_dialects_free(d);
    nf_source_close(s);
}
