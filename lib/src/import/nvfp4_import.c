/* NVFP4 imports (docs/methods.md, import_encoded): ModelOpt and compressed-tensors
 * hold the same codes and block scales; they differ in the tensor-level scalar.  MXFP4 (gpt-oss,
 * compressed-tensors) holds the same codes too, with a power-of-two block scale per 32 values
 * that becomes two E4M3 powers of two under a power-of-two divisor (docs/dialects.md "MXFP4").  ModelOpt's
 * weight_scale_2 multiplies (w = e2m1 * e4m3 * m), compressed-tensors' weight_global_scale
 * divides (w = e2m1 * e4m3 / g), and nvfp4 stores a divisor d_w, so ModelOpt's is inverted. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "import/checks.h"
#include "import/nvfp4_import.h"

#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "the ModelOpt reciprocal needs binary32 evaluation without excess precision"
#endif

static bool is_nvfp4(nf_import_kind kind)
{
    return kind == NF_IMPORT_NVFP4_MODELOPT || kind == NF_IMPORT_NVFP4_COMPRESSED || kind == NF_IMPORT_MXFP4 ||
           kind == NF_IMPORT_GGUF_MXFP4 || kind == NF_IMPORT_GGUF_NVFP4;
}

/* d_w = RN32(1 / m): one binary32 division, which IEEE 754 defines as the exact quotient
 * rounded once to nearest, ties to even (no excess precision: checked above; no contraction:
 * the build passes -ffp-contract=off). */
static uint32_t reciprocal_bits(uint32_t m_bits)
{
    float d = 1.0f / nf_f32_from_bits(m_bits);
    return nf_f32_bits(d);
}

nf_status nf_import_init_nvfp4(nf_import *imp, nf_import_kind dialect, const nf_import_tensor *codes,
                               const nf_import_tensor *scales, const nf_import_tensor *scalar, const void *scalar_bytes,
                               size_t scalar_len, nf_error *err)
{
    if (!imp) return nf_error_set(err, NF_ERR_USAGE, "nf_import_init_nvfp4: missing argument");
    if (!is_nvfp4(dialect))
        return nf_error_set(err, NF_ERR_USAGE, "nf_import_init_nvfp4: import kind %d is not an NVFP4 dialect",
                            (int)dialect);
    NF_TRY(nf_import_check_decl(codes, "codes", err));
    NF_TRY(nf_import_check_decl(scales, "scales", err));
    NF_TRY(nf_import_check_decl(scalar, "divisor", err));
    memset(imp, 0, sizeof *imp);

    bool modelopt = dialect == NF_IMPORT_NVFP4_MODELOPT;
    const char *what = modelopt ? "a ModelOpt NVFP4" : "a compressed-tensors NVFP4";
    const char *codes_comp = modelopt ? "weight" : "weight_packed";
    const char *scalar_comp = modelopt ? "weight_scale_2" : "weight_global_scale";
    NF_TRY(nf_import_expect_member(codes, codes, codes_comp, what, err));
    NF_TRY(nf_import_expect_member(scales, codes, "weight_scale", what, err));
    NF_TRY(nf_import_expect_member(scalar, codes, scalar_comp, what, err));
    NF_TRY(nf_import_expect_dtype(codes, "U8",
                                  modelopt ? "a ModelOpt NVFP4 weight (two E2M1 codes per byte)"
                                           : "a compressed-tensors weight_packed (two E2M1 codes per byte)",
                                  err));
    NF_TRY(nf_import_expect_dtype(scales, "F8_E4M3", "an NVFP4 weight_scale (E4M3FN block scales)", err));
    NF_TRY(
        nf_import_expect_dtype(scalar, "F32", modelopt ? "a ModelOpt weight_scale_2" : "a weight_global_scale", err));

    char shape[256], want[96];
    if (codes->rank != 2 || codes->shape[0] == 0 || codes->shape[1] == 0)
        return nf_import_fail(err, NF_ERR_INVALID, codes->name, "shape %s is not a non-empty matrix [N, K/2]",
                              nf_import_shape_str(codes, shape, sizeof shape));
    uint64_t n = codes->shape[0], k;
    if (!nf_mul_u64(codes->shape[1], 2, &k))
        return nf_import_fail(err, NF_ERR_INVALID, codes->name, "shape %s overflows K",
                              nf_import_shape_str(codes, shape, sizeof shape));
    if (k % 16 != 0)
        return nf_import_fail(err, NF_ERR_INVALID, codes->name,
                              "K = %" PRIu64 " (%" PRIu64 " bytes of two codes per row) is not a multiple of 16, the "
                              "NVFP4 block size",
                              k, codes->shape[1]);
    if (scales->rank != 2 || scales->shape[0] != n || scales->shape[1] != k / 16) {
        snprintf(want, sizeof want, "[%" PRIu64 ",%" PRIu64 "]", n, k / 16);
        return nf_import_fail(err, NF_ERR_INVALID, scales->name,
                              "shape %s is not %s: one block scale per 16 values of the [%" PRIu64 ",%" PRIu64
                              "] weight",
                              nf_import_shape_str(scales, shape, sizeof shape), want, n, k);
    }
    uint64_t count;
    if (!nf_import_elements(scalar, &count) || count != 1)
        return nf_import_fail(err, NF_ERR_INVALID, scalar->name, "shape %s is not a scalar (one F32 value per tensor)",
                              nf_import_shape_str(scalar, shape, sizeof shape));
    if (!scalar_bytes || scalar_len != 4)
        return nf_import_fail(err, NF_ERR_USAGE, scalar->name, "import needs its 4 bytes, %zu given",
                              scalar_bytes ? scalar_len : 0);

    uint32_t word = nf_import_le32(scalar_bytes), divisor = word;
    const char *problem = nf_import_f32_problem(word);
    if (modelopt) {
        if (problem)
            return nf_import_fail(
                err, NF_ERR_INVALID, scalar->name,
                "weight_scale_2 0x%08X is %s: a ModelOpt global scale must be a finite multiplier > 0", word, problem);
        divisor = reciprocal_bits(word);
        if (!nf_nvfp4_divisor_valid(divisor))
            return nf_import_fail(err, NF_ERR_INVALID, scalar->name,
                                  "weight_scale_2 0x%08X (%.9g) is too small: its binary32 reciprocal 0x%08X is not a "
                                  "finite divisor",
                                  word, (double)nf_f32_from_bits(word), divisor);
    } else if (problem) {
        return nf_import_fail(err, NF_ERR_INVALID, scalar->name,
                              "weight_global_scale 0x%08X is %s: the NVFP4 divisor must be finite and > 0", word,
                              problem);
    }

    imp->kind = dialect;
    imp->target = nf_format_by_id(NF_FMT_NVFP4);
    imp->name = codes->name;
    imp->scale_name = scales->name;
    imp->rows = n;
    imp->cols = k;
    imp->row_bytes = k / 2;
    imp->scale_row_bytes = k / 16;
    imp->ggml_type = -1;
    imp->source_scalar = word;
    imp->divisor = divisor;
    return NF_OK;
}

/* ---------------------------------------------------------------- MXFP4 */
nf_status nf_import_init_mxfp4(nf_import *imp, const nf_import_tensor *codes, const nf_import_tensor *scales,
                               uint64_t rows, uint64_t cols, int32_t divisor_log2, nf_error *err)
{
    if (!imp) return nf_error_set(err, NF_ERR_USAGE, "nf_import_init_mxfp4: missing argument");
    NF_TRY(nf_import_check_decl(codes, "codes", err));
    NF_TRY(nf_import_check_decl(scales, "scales", err));
    memset(imp, 0, sizeof *imp);
    NF_TRY(nf_import_expect_dtype(codes, "U8", "MXFP4 codes (two E2M1 codes per byte)", err));
    if (strcmp(scales->dtype, "U8") != 0 && strcmp(scales->dtype, "F8_E8M0") != 0)
        return nf_import_fail(err, NF_ERR_INVALID, scales->name,
                              "dtype %s: MXFP4 block scales are E8M0 (U8 or F8_E8M0)", scales->dtype);
    if (rows == 0 || cols == 0 || cols % 32)
        return nf_import_fail(err, NF_ERR_INVALID, codes->name,
                              "[%" PRIu64 ", %" PRIu64 "]: MXFP4 blocks are 32 values of a row", rows, cols);
    if (divisor_log2 < -126 || divisor_log2 > 127)
        return nf_error_set(err, NF_ERR_USAGE, "nf_import_init_mxfp4: divisor 2^%d is not a normal binary32 number",
                            (int)divisor_log2);
    imp->kind = NF_IMPORT_MXFP4;
    imp->target = nf_format_by_id(NF_FMT_NVFP4);
    imp->name = codes->name;
    imp->scale_name = scales->name;
    imp->rows = rows;
    imp->cols = cols;
    imp->row_bytes = cols / 2;
    imp->scale_row_bytes = cols / 32;
    imp->ggml_type = -1;
    imp->divisor_log2 = divisor_log2;
    imp->divisor = (uint32_t)(divisor_log2 + 127) << 23;
    imp->source_scalar = imp->divisor;
    return NF_OK;
}

/* The E4M3FN word of 2^t, t in [-9, 8]: normal 2^t has exponent field t + 7 and no mantissa;
 * below 2^-6 the subnormals m * 2^-9. */
static uint8_t e4m3_power_of_two(int t)
{
    unsigned word = t >= -6 ? (unsigned)(t + 7) << 3 : 1u << (t + 9);
    return (uint8_t)word;
}

/* The E4M3 scale both halves of an MXFP4 block get: exponent e over the 16 bytes of its 32 codes,
 * under the import's divisor 2^p.  nan_ff: E8M0 0xFF is NaN (the OCP spelling; ggml reads it as
 * 2^128 and leaves the overflow check to refuse what it cannot hold). */
static nf_status mxfp4_block_scale(const nf_import *imp, unsigned e, const uint8_t *bytes, bool nan_ff, uint64_t row,
                                   uint64_t col, uint8_t *scale, nf_error *err)
{
    const int t = (int)e - 127 + imp->divisor_log2;
    bool nonzero = false, big = false;
    for (unsigned i = 0; i < 16; i++) {
        uint8_t w = bytes[i];
        nonzero = nonzero || (w & 0x77);
        /* a value 2^128 or more (codes 2 and up past 2^126): not a binary32 number */
        big = big || ((int)e - 127 >= 126 && (isinf(ldexpf(nf_e2m1_to_f32(w & 15), (int)e - 127)) ||
                                              isinf(ldexpf(nf_e2m1_to_f32(w >> 4), (int)e - 127))));
    }
    if (nan_ff && e == 0xFF)
        return nf_import_fail(err, NF_ERR_INVALID, imp->scale_name,
                              "row %" PRIu64 " block %" PRIu64 " (cols %" PRIu64 "..%" PRIu64
                              "): E8M0 scale 0xFF is NaN",
                              row, col / 32, col, col + 31);
    if (big)
        return nf_import_fail(err, NF_ERR_INVALID, imp->name,
                              "row %" PRIu64 " block %" PRIu64 " (cols %" PRIu64 "..%" PRIu64
                              "): a code times 2^%d overflows binary32: an MXFP4 value must be finite",
                              row, col / 32, col, col + 31, (int)e - 127);
    if (nonzero && (t > 8 || t < -9))
        return nf_import_fail(err, NF_ERR_INVALID, imp->scale_name,
                              "row %" PRIu64 " block %" PRIu64 " (cols %" PRIu64 "..%" PRIu64
                              "): scale 2^%d is 2^%d under the divisor 2^%d, outside the E4M3 powers of two "
                              "2^-9..2^8 of nvfp4's block scales: requantize it",
                              row, col / 32, col, col + 31, (int)e - 127, t, (int)imp->divisor_log2);
    *scale = !nonzero ? 0x01 : e4m3_power_of_two(t); /* an all-zero block: any scale keeps it */
    return NF_OK;
}

nf_status nf_import_mxfp4_rows(const nf_import *imp, const nf_import_chunk *c, nf_words *out, uint64_t out_row,
                               nf_error *err)
{
    const uint64_t k = imp->cols, half = k / 2, blocks = k / 32;
    const uint8_t *codes = c->data, *scales = c->scales;
    for (uint64_t r = 0; r < c->rows; r++) {
        const uint8_t *src_c = codes + r * half, *src_s = scales + r * blocks;
        uint8_t *dst_c = out->codes8 + (out_row + r) * k, *dst_s = out->scales8 + (out_row + r) * (k / 16);
        for (uint64_t b = 0; b < blocks; b++) {
            uint8_t s;
            NF_TRY(mxfp4_block_scale(imp, src_s[b], src_c + b * 16, true, c->first_row + r, c->first_col + b * 32, &s,
                                     err));
            dst_s[2 * b] = dst_s[2 * b + 1] = s;
        }
        for (uint64_t i = 0; i < half; i++) {
            uint8_t w = src_c[i];
            dst_c[2 * i] = (uint8_t)(w & 0x0F);
            dst_c[2 * i + 1] = (uint8_t)(w >> 4);
        }
    }
    return NF_OK;
}

/* ---------------------------------------------------------------- GGUF MXFP4 and NVFP4 */
nf_status nf_import_init_gguf_fp4(nf_import *imp, const nf_import_tensor *t, int32_t divisor_log2, nf_error *err)
{
    if (!imp) return nf_error_set(err, NF_ERR_USAGE, "nf_import_init_gguf_fp4: missing argument");
    NF_TRY(nf_import_check_decl(t, "blocks", err));
    memset(imp, 0, sizeof *imp);
    const bool mx = t->ggml_type == NF_IMPORT_GGML_MXFP4;
    if (!mx && t->ggml_type != NF_IMPORT_GGML_NVFP4)
        return nf_import_fail(err, NF_ERR_INVALID, t->name,
                              "ggml type %d (%s) is not MXFP4 (39) or NVFP4 (40): nvfp4 imports only those GGUF "
                              "blocks",
                              t->ggml_type, nf_import_ggml_name(t->ggml_type));
    char shape[256];
    uint64_t rows = 1, k = t->rank ? t->shape[t->rank - 1] : 0;
    for (uint32_t i = 0; i + 1 < t->rank; i++)
        if (!nf_mul_u64(rows, t->shape[i], &rows))
            return nf_import_fail(err, NF_ERR_INVALID, t->name, "shape %s overflows the row count",
                                  nf_import_shape_str(t, shape, sizeof shape));
    const unsigned values = mx ? 32 : 64, bytes = mx ? 17 : 36;
    if (rows == 0 || k == 0 || k % values)
        return nf_import_fail(err, NF_ERR_INVALID, t->name, "shape %s is not rows of whole %s blocks of %u values",
                              nf_import_shape_str(t, shape, sizeof shape), mx ? "MXFP4" : "NVFP4", values);
    if (divisor_log2 < -126 || divisor_log2 > 127 || (!mx && divisor_log2 != 0))
        return nf_error_set(err, NF_ERR_USAGE, "nf_import_init_gguf_fp4: divisor 2^%d does not fit %s",
                            (int)divisor_log2, mx ? "MXFP4" : "NVFP4 (divisor 1)");
    imp->kind = mx ? NF_IMPORT_GGUF_MXFP4 : NF_IMPORT_GGUF_NVFP4;
    imp->target = nf_format_by_id(NF_FMT_NVFP4);
    imp->name = t->name;
    imp->scale_name = t->name;
    imp->rows = rows;
    imp->cols = k;
    imp->row_bytes = k / values * bytes;
    imp->scale_row_bytes = 0;
    imp->ggml_type = t->ggml_type;
    imp->divisor_log2 = divisor_log2;
    imp->divisor = (uint32_t)(divisor_log2 + 127) << 23;
    imp->source_scalar = imp->divisor;
    return NF_OK;
}

/* ggml's E2M1 table gives code 8 the integer 0 (+0): code 0 keeps that value, code 8 (-0) would
 * not. */
static inline uint8_t ggml_fp4_code(unsigned c) { return (uint8_t)(c == 8 ? 0 : c); }

static nf_status gguf_mxfp4_row(const nf_import *imp, const uint8_t *src, uint64_t row, uint8_t *codes, uint8_t *scales,
                                nf_error *err)
{
    for (uint64_t b = 0; b < imp->cols / 32; b++, src += 17) {
        NF_TRY(mxfp4_block_scale(imp, src[0], src + 1, false, row, b * 32, &scales[2 * b], err));
        scales[2 * b + 1] = scales[2 * b];
        for (unsigned j = 0; j < 16; j++) {
            codes[32 * b + j] = ggml_fp4_code(src[1 + j] & 0x0Fu);
            codes[32 * b + 16 + j] = ggml_fp4_code(src[1 + j] >> 4);
        }
    }
    return NF_OK;
}

/* ggml reads a UE4M3 byte x as E4M3 x & 0x7F, except 0x7F (0); 0xFF (240) has no E4M3 word. */
static nf_status gguf_nvfp4_row(const nf_import *imp, const uint8_t *src, uint64_t row, uint8_t *codes, uint8_t *scales,
                                nf_error *err)
{
    for (uint64_t b = 0; b < imp->cols / 64; b++, src += 36)
        for (unsigned s = 0; s < 4; s++) {
            const unsigned x = src[s];
            if (x == 0xFF)
                return nf_import_fail(err, NF_ERR_INVALID, imp->name,
                                      "row %" PRIu64 " block %" PRIu64 " sub-block %u (cols %" PRIu64 "..%" PRIu64
                                      "): UE4M3 scale 0xFF, which ggml reads as 240, has no E4M3 word: no format "
                                      "holds it exactly; requantize it",
                                      row, b, s, b * 64 + 16 * s, b * 64 + 16 * s + 15);
            scales[4 * b + s] = (uint8_t)(x == 0x7F ? 0 : x & 0x7F);
            for (unsigned j = 0; j < 8; j++) {
                const unsigned w = src[4 + 8 * s + j];
                codes[64 * b + 16 * s + j] = ggml_fp4_code(w & 0x0Fu);
                codes[64 * b + 16 * s + 8 + j] = ggml_fp4_code(w >> 4);
            }
        }
    return NF_OK;
}

nf_status nf_import_gguf_fp4_rows(const nf_import *imp, const nf_import_chunk *c, nf_words *out, uint64_t out_row,
                                  nf_error *err)
{
    const uint64_t k = imp->cols;
    for (uint64_t r = 0; r < c->rows; r++) {
        const uint8_t *src = (const uint8_t *)c->data + r * imp->row_bytes;
        uint8_t *codes = out->codes8 + (out_row + r) * k, *scales = out->scales8 + (out_row + r) * (k / 16);
        if (imp->kind == NF_IMPORT_GGUF_MXFP4) NF_TRY(gguf_mxfp4_row(imp, src, c->first_row + r, codes, scales, err));
        else NF_TRY(gguf_nvfp4_row(imp, src, c->first_row + r, codes, scales, err));
    }
    return NF_OK;
}

/* ---------------------------------------------------------------- stacking */

/* Checks the sources of a parent; *differ: are their divisor words not all the same? */
static nf_status check_stack(const nf_import *src, size_t count, uint64_t *rows, bool *differ, nf_error *err)
{
    if (!src || count == 0) return nf_error_set(err, NF_ERR_USAGE, "nvfp4 parent: no sources given");
    uint64_t total = 0;
    *differ = false;
    for (size_t i = 0; i < count; i++) {
        if (!is_nvfp4(src[i].kind) || !src[i].name)
            return nf_error_set(err, NF_ERR_USAGE, "nvfp4 parent: source %zu is not an initialised NVFP4 import", i);
        if (src[i].cols != src[0].cols)
            return nf_import_fail(err, NF_ERR_INVALID, src[i].name,
                                  "K = %" PRIu64 " differs from K = %" PRIu64 " of '%s': stacked rows need one K",
                                  src[i].cols, src[0].cols, nf_esc(src[0].name).s);
        if (!nf_add_u64(total, src[i].rows, &total))
            return nf_error_set(err, NF_ERR_INVALID, "nvfp4 parent: the row count overflows");
        if (src[i].divisor != src[0].divisor) *differ = true;
    }
    if (*differ) {
        /* One divisor word per source, each covering N / divisors rows (docs/layouts.md 5). */
        for (size_t i = 0; i < count; i++) {
            if (src[i].rows != src[0].rows || src[i].rows % 128 != 0)
                return nf_import_fail(err, NF_ERR_INVALID, src[i].name,
                                      "has %" PRIu64
                                      " rows: an nvfp4 parent of sources with different divisors (0x%08X "
                                      "here, 0x%08X in '%s') needs every source to have the same row count, a multiple "
                                      "of 128 (%" PRIu64 " rows in '%s')",
                                      src[i].rows, src[i].divisor, src[0].divisor, nf_esc(src[0].name).s, src[0].rows,
                                      nf_esc(src[0].name).s);
        }
    }
    *rows = total;
    return NF_OK;
}

nf_status nf_import_nvfp4_stack(const nf_import *src, size_t count, nf_geometry *g, nf_error *err)
{
    if (!g) return nf_error_set(err, NF_ERR_USAGE, "nf_import_nvfp4_stack: missing geometry");
    uint64_t rows;
    bool differ;
    NF_TRY(check_stack(src, count, &rows, &differ, err));
    uint64_t shape[2] = {rows, src[0].cols};
    const nf_format *fmt = nf_format_by_id(NF_FMT_NVFP4);
    nf_status st = nf_geometry_init(g, nf_layout_default_for(fmt), fmt, 2, shape, differ ? (uint64_t)count : 1, err);
    if (st != NF_OK) {
        if (count == 1) nf_error_prefix(err, "%s", nf_esc(src[0].name).s);
        else nf_error_prefix(err, "nvfp4 parent of %zu sources ('%s' first)", count, nf_esc(src[0].name).s);
    }
    return st;
}

nf_status nf_import_nvfp4_divisors(const nf_import *src, size_t count, const nf_geometry *g, uint32_t *divisors,
                                   nf_error *err)
{
    if (!g || !divisors) return nf_error_set(err, NF_ERR_USAGE, "nf_import_nvfp4_divisors: missing argument");
    uint64_t rows;
    bool differ;
    NF_TRY(check_stack(src, count, &rows, &differ, err));
    uint64_t want = differ ? (uint64_t)count : 1;
    if (!g->format || g->format->id != NF_FMT_NVFP4 || g->divisors != want || g->rows != rows || g->cols != src[0].cols)
        return nf_error_set(err, NF_ERR_USAGE,
                            "nf_import_nvfp4_divisors: the geometry is not the parent of these %zu sources", count);
    for (uint64_t i = 0; i < want; i++) divisors[i] = src[i].divisor;
    return NF_OK;
}

/* ---------------------------------------------------------------- rows */

nf_status nf_import_nvfp4_rows(const nf_import *imp, const nf_import_chunk *c, nf_words *out, uint64_t out_row,
                               nf_error *err)
{
    uint64_t k = imp->cols, half = k / 2, groups = k / 16;
    const uint8_t *codes = c->data, *scales = c->scales;
    for (uint64_t r = 0; r < c->rows; r++) {
        const uint8_t *src_c = codes + r * half, *src_s = scales + r * groups;
        uint8_t *dst_c = out->codes8 + (out_row + r) * k, *dst_s = out->scales8 + (out_row + r) * groups;
        for (uint64_t g = 0; g < groups; g++) {
            uint8_t s = src_s[g];
            if (!nf_nvfp4_scale_valid(s))
                return nf_import_fail(err, NF_ERR_INVALID, imp->scale_name,
                                      "row %" PRIu64 " group %" PRIu64 " (cols %" PRIu64 "..%" PRIu64
                                      "): NVFP4 scale 0x%02X is %s, outside the nvfp4 contract (sign clear, not 0x7F)",
                                      c->first_row + r, c->first_col / 16 + g, c->first_col + g * 16,
                                      c->first_col + g * 16 + 15, s,
                                      (s & 0x7F) == 0x7F ? "NaN"
                                      : s == 0x80        ? "-0"
                                                         : "negative");
            dst_s[g] = s;
        }
        /* All 16 E2M1 words are valid; the lower k sits in the low nibble. */
        for (uint64_t i = 0; i < half; i++) {
            uint8_t b = src_c[i];
            dst_c[2 * i] = (uint8_t)(b & 0x0F);
            dst_c[2 * i + 1] = (uint8_t)(b >> 4);
        }
    }
    return NF_OK;
}
