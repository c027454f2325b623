/* A quantized weight's represented values (ninfer/dialect.h, docs/dialects.md "Values"): rows
 * of codes decoded and multiplied by the scale that covers them, in pieces of at most
 * PIECE_BYTES of codes, so memory stays bounded whatever the weight's size.
 *
 * Exactness: a code's value (E4M3, E5M2, E2M1, an integer q - z) and a scale's (F32, BF16, F16,
 * E4M3) are binary32 numbers, so one binary32 multiplication (or division) rounds their exact
 * product (quotient) once.  NVFP4's two scales: e2m1 * e4m3 has at most 2 + 4 significant bits
 * and an exponent well inside binary32's range, so it is exact, and only the global scale's
 * operation rounds.  The build evaluates binary32 without excess precision and without
 * contraction (-ffp-contract=off), checked below. */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/format.h>

#include "common/checked.h"
#include "dialect/dialect_internal.h"

#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "dequantization needs binary32 evaluation without excess precision"
#endif

#define PIECE_BYTES ((size_t)1 << 20)

static float f32_of(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static nf_status fail_at(nf_error *err, const nf_source *src, const nf_source_tensor *t, const char *what)
{
    return nf_error_set(err, NF_ERR_INVALID, "%s: tensor '%s': %s", nf_source_file_path(src, t->file), t->name, what);
}

/* ---------------------------------------------------------------- scales */
static size_t scale_size(const nf_source_tensor *t)
{
    return t->dtype == NF_ST_F32 ? 4 : t->dtype == NF_ST_F8_E4M3 ? 1 : 2;
}

/* The bit fields of a scale word: its sign, its exponent (all ones: not finite, except for
 * E4M3FN, whose only such words are NaN) and its mantissa. */
typedef struct scale_bits {
    uint32_t sign, exponent, mantissa;
    bool has_infinity;
} scale_bits;

/* The scale word w of the scale tensor's dtype as binary32, or NULL's why it is refused. */
static const char *scale_value(nf_st_dtype dtype, uint32_t w, float *out)
{
    static const scale_bits f32 = {0x80000000u, 0x7F800000u, 0x007FFFFFu, true},
                            bf16 = {0x8000u, 0x7F80u, 0x007Fu, true}, f16 = {0x8000u, 0x7C00u, 0x03FFu, true},
                            e4m3 = {0x80u, 0x7Fu, 0u, false}; /* E4M3FN: 0x7F / 0xFF are its NaNs */
    const scale_bits *b = dtype == NF_ST_F32 ? &f32 : dtype == NF_ST_BF16 ? &bf16 : dtype == NF_ST_F16 ? &f16 : &e4m3;
    *out = dtype == NF_ST_F32    ? f32_of(w)
           : dtype == NF_ST_BF16 ? nf_bf16_to_f32((uint16_t)w)
           : dtype == NF_ST_F16  ? nf_f16_to_f32((uint16_t)w)
                                 : nf_e4m3fn_to_f32((uint8_t)w);
    if ((w & b->exponent) == b->exponent) return b->has_infinity && !(w & b->mantissa) ? "infinite" : "NaN";
    if ((w & (b->exponent | b->mantissa)) == 0) return w & b->sign ? "-0" : "zero";
    if (w & b->sign) return "negative";
    return NULL;
}

/* Scale rows [sa, sb) of the grid as binary32, each checked (finite and > 0). */
static nf_status read_scales(const nf_source *src, const nf_qweight *q, uint64_t sa, uint64_t sb, uint8_t *raw,
                             float *out, nf_error *err)
{
    const nf_source_tensor *t = q->scale;
    size_t es = scale_size(t), count = (size_t)((sb - sa) * q->scale_cols);
    NF_TRY(nf_source_read_bytes(src, t, sa * q->scale_cols * es, raw, count * es, err));
    for (size_t i = 0; i < count; i++) {
        const uint8_t *p = raw + i * es;
        uint32_t w = es == 4 ? le32(p) : es == 2 ? (uint32_t)(p[0] | p[1] << 8) : p[0];
        const char *why = scale_value(t->dtype, w, &out[i]);
        if (why) {
            uint64_t br = sa + i / q->scale_cols, bc = i % q->scale_cols;
            uint64_t r1 = (br + 1) * q->block_rows, c1 = (bc + 1) * q->block_cols;
            char msg[NF_ERROR_MESSAGE_MAX / 2];
            snprintf(msg, sizeof msg,
                     "block (%" PRIu64 ", %" PRIu64 ") (rows %" PRIu64 "..%" PRIu64 ", cols %" PRIu64 "..%" PRIu64
                     "): scale 0x%0*" PRIX32 " is %s: a %s scale must be finite and > 0",
                     br, bc, br * q->block_rows, (r1 < q->shape[0] ? r1 : q->shape[0]) - 1, bc * q->block_cols,
                     (c1 < q->shape[1] ? c1 : q->shape[1]) - 1, (int)(2 * es), w, why, nf_dialect_name(q->dialect));
            return fail_at(err, src, t, msg);
        }
    }
    return NF_OK;
}

/* Zero points of scale rows [sa, sb) as integers (already minus the offset). */
static nf_status read_zero_points(const nf_source *src, const nf_qweight *q, uint64_t sa, uint64_t sb, uint8_t *raw,
                                  int32_t *out, nf_error *err)
{
    const nf_source_tensor *t = q->zero_point;
    uint64_t sc = q->scale_cols;
    if (!q->zero_point_packed) {
        size_t count = (size_t)((sb - sa) * sc);
        NF_TRY(nf_source_read_bytes(src, t, sa * sc, raw, count, err));
        for (size_t i = 0; i < count; i++) out[i] = (int8_t)raw[i];
        return NF_OK;
    }
    /* int32 words packed along the rows: zero point (r, g) is word (r / per, g), bits
     * (r % per) * bits, offset-binary like the codes */
    unsigned bits = q->bits, per = 32 / bits;
    uint32_t mask = bits == 32 ? 0xFFFFFFFFu : (1u << bits) - 1;
    int32_t offset = 1 << (bits - 1);
    uint64_t wa = sa / per, wb = (sb - 1) / per + 1;
    NF_TRY(nf_source_read_bytes(src, t, wa * sc * 4, raw, (size_t)((wb - wa) * sc * 4), err));
    for (uint64_t r = sa; r < sb; r++)
        for (uint64_t g = 0; g < sc; g++) {
            uint32_t w = le32(raw + ((r / per - wa) * sc + g) * 4);
            out[(r - sa) * sc + g] = (int32_t)((w >> ((r % per) * bits)) & mask) - offset;
        }
    return NF_OK;
}

/* ---------------------------------------------------------------- codes */
static nf_status bad_code(nf_error *err, const nf_source *src, const nf_qweight *q, uint64_t row, uint64_t col,
                          unsigned code)
{
    char msg[160];
    snprintf(msg, sizeof msg, "row %" PRIu64 " col %" PRIu64 ": %s code 0x%02X is %s", row, col,
             q->codes_kind == NF_QCODES_E5M2 ? "E5M2" : "E4M3", code,
             q->codes_kind == NF_QCODES_E5M2 && (code & 0x03) == 0 ? "infinite" : "NaN");
    return fail_at(err, src, q->codes, msg);
}

/* Packed integer codes [c0, c1) of a row into out[c0..c1): code c is the bits-wide field
 * (c % per) * bits of little-endian word c / per, offset-binary; its value (code - offset - z)
 * * s, the integer exact, then one binary32 multiplication.  Never a division per value (a
 * 64-bit c / per and c % per per value was most of the time of reading int4 checkpoints):
 * 8-bit fields of little-endian words are the bytes in column order, 4-bit fields the bytes'
 * nibbles, low nibble first (loops the compiler vectorizes); other widths load each word once
 * and shift along it. */
static inline void decode_packed(const uint8_t *codes, uint64_t c0, uint64_t c1, unsigned bits, int32_t z, float s,
                                 float *out)
{
    const unsigned per = 32 / bits;
    const uint32_t mask = (1u << bits) - 1;
    const int32_t offset = 1 << (bits - 1), base = offset + z;
    uint64_t c = c0;
    if (bits == 8) {
        for (; c < c1; c++) out[c] = (float)((int32_t)codes[c] - base) * s;
        return;
    }
    if (bits == 4) {
        if (c < c1 && (c & 1)) {
            out[c] = (float)((int32_t)(codes[c / 2] >> 4) - base) * s;
            c++;
        }
        const uint64_t pairs = (c1 - c) / 2;
        const uint8_t *p = codes + c / 2;
        float *o = out + c;
        for (uint64_t b = 0; b < pairs; b++) {
            o[2 * b] = (float)((int32_t)(p[b] & 15) - base) * s;
            o[2 * b + 1] = (float)((int32_t)(p[b] >> 4) - base) * s;
        }
        c += 2 * pairs;
        if (c < c1) out[c] = (float)((int32_t)(codes[c / 2] & 15) - base) * s;
        return;
    }
    uint64_t wi = c0 / per;
    unsigned pos = (unsigned)(c0 % per);
    while (c < c1) {
        uint32_t w = le32(codes + wi * 4) >> (pos * bits);
        uint64_t m = per - pos < c1 - c ? per - pos : c1 - c;
        for (uint64_t i = 0; i < m; i++, w >>= bits) out[c + i] = (float)((int32_t)(w & mask) - base) * s;
        c += m;
        wi++;
        pos = 0;
    }
}

/* A value of a block that is not finite although its code and scale are: the exact product
 * (quotient) exceeds binary32, e.g. E4M3 448 x scale 3e38.  Refused like an F64 source value
 * that overflows binary32 (ninfer/source.h), naming the row, column, code and scale
 * (docs/dialects.md "Bad input"), rather than read as +-inf. */
static nf_status value_overflow(nf_error *err, const nf_source *src, const nf_qweight *q, uint64_t row, uint64_t col,
                                const uint8_t *codes, float s, int32_t z)
{
    char code[64];
    switch (q->codes_kind) {
    case NF_QCODES_E4M3:
    case NF_QCODES_E5M2:
        snprintf(code, sizeof code, "%s code 0x%02X", q->codes_kind == NF_QCODES_E5M2 ? "E5M2" : "E4M3", codes[col]);
        break;
    case NF_QCODES_E2M1:
        snprintf(code, sizeof code, "E2M1 code 0x%X", (unsigned)((col & 1) ? codes[col / 2] >> 4 : codes[col / 2] & 15));
        break;
    default: { /* the integer q - z: the code's field read again, as decode_packed does */
        int64_t v;
        if (q->codes_kind == NF_QCODES_INT8) {
            v = (int64_t)(int8_t)codes[col] - z;
        } else {
            unsigned per = 32 / q->bits;
            uint32_t w = le32(codes + (col / per) * 4) >> ((col % per) * q->bits);
            v = (int64_t)(w & ((1u << q->bits) - 1)) - (1 << (q->bits - 1)) - z;
        }
        snprintf(code, sizeof code, "integer code %" PRId64 " (q - z)", v);
        break;
    }
    }
    uint32_t sw, gw = q->global_bits;
    memcpy(&sw, &s, sizeof sw);
    char global[96] = "";
    if (q->global_op != NF_QGLOBAL_NONE)
        snprintf(global, sizeof global, " %s %s %.9g (0x%08" PRIX32 ")", q->global_op == NF_QGLOBAL_MUL ? "x" : "/",
                 q->global_op == NF_QGLOBAL_MUL ? "weight_scale_2" : "weight_global_scale", (double)f32_of(gw), gw);
    char msg[NF_ERROR_MESSAGE_MAX / 2];
    snprintf(msg, sizeof msg,
             "row %" PRIu64 " col %" PRIu64 ": %s x scale %.9g (0x%08" PRIX32 ")%s overflows binary32: a %s value "
             "must be finite",
             row, col, code, (double)s, sw, global, nf_dialect_name(q->dialect));
    return fail_at(err, src, q->codes, msg);
}

/* One row: codes (the row's bytes), its scale row and zero-point row, into out[0..K). */
static nf_status decode_row(const nf_source *src, const nf_qweight *q, uint64_t row, const uint8_t *codes,
                            const float *scales, const int32_t *zps, const float *table, float *out, nf_error *err)
{
    const uint64_t k = q->shape[1], bc = q->block_cols;
    const float g = f32_of(q->global_bits);
    for (uint64_t j = 0, c0 = 0; c0 < k; j++, c0 += bc) {
        const uint64_t c1 = c0 + bc < k ? c0 + bc : k;
        const float s = scales[j];
        switch (q->codes_kind) {
        case NF_QCODES_E4M3:
        case NF_QCODES_E5M2: {
            const uint8_t nan_mask = q->codes_kind == NF_QCODES_E4M3 ? 0x7F : 0x7C;
            for (uint64_t c = c0; c < c1; c++) {
                uint8_t w = codes[c];
                if ((w & nan_mask) == nan_mask) return bad_code(err, src, q, row, c, w);
                out[c] = table[w] * s;
            }
            break;
        }
        case NF_QCODES_E2M1:
            for (uint64_t c = c0; c < c1; c++) {
                uint8_t b = codes[c / 2];
                float v = table[(c & 1) ? b >> 4 : b & 0x0F] * s; /* exact: see the top of the file */
                out[c] = q->global_op == NF_QGLOBAL_MUL ? v * g : q->global_op == NF_QGLOBAL_DIV ? v / g : v;
            }
            break;
        case NF_QCODES_INT_PACKED: {
            decode_packed(codes, c0, c1, q->bits, zps ? zps[j] : 0, s, out);
            break;
        }
        case NF_QCODES_INT8: {
            const int32_t z = zps ? zps[j] : 0;
            for (uint64_t c = c0; c < c1; c++) out[c] = (float)((int32_t)(int8_t)codes[c] - z) * s;
            break;
        }
        }
        /* codes and scales are finite (checked above and in read_scales); their product may
         * still overflow */
        for (uint64_t c = c0; c < c1; c++)
            if (!isfinite(out[c])) return value_overflow(err, src, q, row, c, codes, s, zps ? zps[j] : 0);
    }
    return NF_OK;
}

nf_status nf_qweight_read_f32(const nf_source *src, const nf_qweight *q, uint64_t r0, uint64_t r1, float *out,
                              size_t out_len, nf_error *err)
{
    if (!src || !q || (!out && r1 > r0)) return nf_error_set(err, NF_ERR_USAGE, "nf_qweight_read_f32: missing argument");
    const uint64_t n = q->shape[0], k = q->shape[1];
    uint64_t need;
    if (r0 > r1 || r1 > n)
        return nf_error_set(err, NF_ERR_USAGE, "tensor '%s': rows [%" PRIu64 ", %" PRIu64 ") outside its %" PRIu64 " rows",
                            q->codes->name, r0, r1, n);
    if (!nf_mul_u64(r1 - r0, k, &need) || need > out_len)
        return nf_error_set(err, NF_ERR_USAGE, "tensor '%s': %" PRIu64 " rows of %" PRIu64 " values do not fit in %zu",
                            q->codes->name, r1 - r0, k, out_len);
    if (r0 == r1) return NF_OK;
    const uint64_t row_bytes = q->codes->row_bytes;
    uint64_t piece = row_bytes ? PIECE_BYTES / row_bytes : 1;
    if (piece == 0) piece = 1;
    if (piece > r1 - r0) piece = r1 - r0;
    /* the scale (and zero-point) rows a piece can span */
    const uint64_t srows = (piece + q->block_rows - 1) / q->block_rows + 1, sc = q->scale_cols;
    const size_t per = q->zero_point_packed ? 32 / q->bits : 1;
    uint8_t *codes = malloc((size_t)(piece * row_bytes) + 1);
    uint8_t *raw = malloc((size_t)((srows + per) * sc * 4) + 4);
    float *scales = malloc((size_t)(srows * sc) * sizeof *scales);
    int32_t *zps = q->zero_point ? malloc((size_t)(srows * sc) * sizeof *zps) : NULL;
    nf_status st = NF_OK;
    if (!codes || !raw || !scales || (q->zero_point && !zps)) st = nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    float table[256];
    for (unsigned c = 0; c < 256; c++)
        table[c] = q->codes_kind == NF_QCODES_E4M3   ? nf_e4m3fn_to_f32((uint8_t)c)
                   : q->codes_kind == NF_QCODES_E5M2 ? nf_f16_to_f32((uint16_t)(c << 8))
                   : q->codes_kind == NF_QCODES_E2M1 ? nf_e2m1_to_f32((uint8_t)(c & 15))
                                                     : 0.0f;
    for (uint64_t a = r0; st == NF_OK && a < r1; a += piece) {
        uint64_t b = a + piece < r1 ? a + piece : r1;
        uint64_t sa = a / q->block_rows, sb = (b - 1) / q->block_rows + 1;
        st = nf_source_read_rows(src, q->codes, a, b, codes, (size_t)(piece * row_bytes), err);
        if (st == NF_OK) st = read_scales(src, q, sa, sb, raw, scales, err);
        if (st == NF_OK && q->zero_point) st = read_zero_points(src, q, sa, sb, raw, zps, err);
        for (uint64_t r = a; st == NF_OK && r < b; r++) {
            uint64_t s = r / q->block_rows - sa;
            st = decode_row(src, q, r, codes + (r - a) * row_bytes, scales + s * sc, zps ? zps + s * sc : NULL, table,
                            out + (r - r0) * k, err);
        }
    }
    free(codes);
    free(raw);
    free(scales);
    free(zps);
    return st;
}
