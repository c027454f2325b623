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
#include "common/fail.h"
#include "dialect/dialect_internal.h"
#include "dialect/simd/unpack_simd.h"

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
    return t->dtype == NF_ST_F32                                                            ? 4
           : t->dtype == NF_ST_F8_E4M3 || t->dtype == NF_ST_U8 || t->dtype == NF_ST_F8_E8M0 ? 1
                                                                                            : 2;
}

/* Bytes of one row of a weight's codes: a row of the codes tensor, or of the [N, K] view of
 * gpt-oss's [..., R, B, 16] blocks (K / 2 bytes of E2M1 codes). */
static uint64_t codes_row_bytes(const nf_qweight *q)
{
    return q->codes_kind == NF_QCODES_E2M1 ? q->shape[1] / 2 : q->codes->row_bytes;
}

/* count scale words of the grid from block (br, bc) on, in row-major order (whole scale rows,
 * or a run of one row's columns: a span of a row, docs/dialects.md "Values"), as binary32, each
 * checked (finite and > 0). */
static nf_status read_scales(const nf_source *src, const nf_qweight *q, uint64_t br0, uint64_t bc0, size_t count,
                             uint8_t *raw, float *out, nf_error *err)
{
    const nf_source_tensor *t = q->scale;
    size_t es = scale_size(t);
    NF_TRY(nf_source_read_bytes(src, t, (br0 * q->scale_cols + bc0) * es, raw, count * es, err));
    for (size_t i = 0; i < count; i++) {
        const uint8_t *p = raw + i * es;
        uint32_t w = es == 4 ? le32(p) : es == 2 ? (uint32_t)(p[0] | p[1] << 8) : p[0];
        const char *why = nf_dialect_scale_value(t->dtype, w, &out[i]);
        if (why) {
            uint64_t br = br0 + (bc0 + i) / q->scale_cols, bc = (bc0 + i) % q->scale_cols;
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

/* Zero points of scale rows [sa, sb), columns [g0, g1) (every column, or one row's run: a span),
 * as integers (already minus the offset), row-major. */
static nf_status read_zero_points(const nf_source *src, const nf_qweight *q, uint64_t sa, uint64_t sb, uint64_t g0,
                                  uint64_t g1, uint8_t *raw, int32_t *out, nf_error *err)
{
    const nf_source_tensor *t = q->zero_point;
    uint64_t sc = q->scale_cols, gn = g1 - g0;
    if (!q->zero_point_packed) {
        /* a run of the I8 grid: whole rows, or columns of one row */
        size_t count = (size_t)((sb - sa) * gn);
        NF_TRY(nf_source_read_bytes(src, t, sa * sc + g0, raw, count, err));
        for (size_t i = 0; i < count; i++) out[i] = (int8_t)raw[i];
        return NF_OK;
    }
    /* int32 words packed along the rows: zero point (r, g) is word (r / per, g), bits
     * (r % per) * bits, offset-binary like the codes */
    unsigned bits = q->bits, per = 32 / bits;
    uint32_t mask = bits == 32 ? 0xFFFFFFFFu : (1u << bits) - 1;
    int32_t offset = 1 << (bits - 1);
    uint64_t wa = sa / per, wb = (sb - 1) / per + 1;
    for (uint64_t wr = wa; wr < wb; wr++) /* the words of columns [g0, g1) of each word row */
        NF_TRY(nf_source_read_bytes(src, t, (wr * sc + g0) * 4, raw + (wr - wa) * gn * 4, (size_t)(gn * 4), err));
    for (uint64_t r = sa; r < sb; r++)
        for (uint64_t g = 0; g < gn; g++) {
            uint32_t w = le32(raw + ((r / per - wa) * gn + g) * 4);
            out[(r - sa) * gn + g] = (int32_t)((w >> ((r % per) * bits)) & mask) - offset;
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

/* Packed integer codes [c0, c1) of a row into out[0..c1 - c0) (c counted from the first column
 * of `codes`, a multiple of per): code c is the bits-wide field
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
        for (; c < c1; c++) out[c - c0] = (float)((int32_t)codes[c] - base) * s;
        return;
    }
    if (bits == 4) {
        if (c < c1 && (c & 1)) {
            out[c - c0] = (float)((int32_t)(codes[c / 2] >> 4) - base) * s;
            c++;
        }
        const uint64_t pairs = (c1 - c) / 2;
        const uint8_t *p = codes + c / 2;
        float *o = out + (c - c0);
        for (uint64_t b = 0; b < pairs; b++) {
            o[2 * b] = (float)((int32_t)(p[b] & 15) - base) * s;
            o[2 * b + 1] = (float)((int32_t)(p[b] >> 4) - base) * s;
        }
        c += 2 * pairs;
        if (c < c1) out[c - c0] = (float)((int32_t)(codes[c / 2] & 15) - base) * s;
        return;
    }
    uint64_t wi = c0 / per;
    unsigned pos = (unsigned)(c0 % per);
    while (c < c1) {
        uint32_t w = le32(codes + wi * 4) >> (pos * bits);
        uint64_t m = per - pos < c1 - c ? per - pos : c1 - c;
        for (uint64_t i = 0; i < m; i++, w >>= bits) out[c - c0 + i] = (float)((int32_t)(w & mask) - base) * s;
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
                                const uint8_t *codes, uint64_t cbase, float s, int32_t z)
{
    const uint64_t rc = col - cbase; /* col's place in codes (cbase on a byte or word of them) */
    char code[64];
    switch (q->codes_kind) {
    case NF_QCODES_E4M3:
    case NF_QCODES_E5M2:
        snprintf(code, sizeof code, "%s code 0x%02X", q->codes_kind == NF_QCODES_E5M2 ? "E5M2" : "E4M3", codes[rc]);
        break;
    case NF_QCODES_E2M1:
        snprintf(code, sizeof code, "E2M1 code 0x%X", (unsigned)((col & 1) ? codes[rc / 2] >> 4 : codes[rc / 2] & 15));
        break;
    default: { /* the integer q - z: the code's field read again, as decode_packed does */
        int64_t v;
        if (q->codes_kind == NF_QCODES_INT8) {
            v = (int64_t)(int8_t)codes[rc] - z;
        } else {
            /* as decode_packed reads them: 8-bit codes by byte, 4-bit by nibble (cbase may sit on
             * any byte), other widths by little-endian word (cbase on a word) */
            uint32_t field;
            if (q->bits == 8) field = codes[rc];
            else if (q->bits == 4) field = (rc & 1) ? codes[rc / 2] >> 4 : codes[rc / 2] & 15u;
            else {
                unsigned per = 32 / q->bits;
                field = (le32(codes + (rc / per) * 4) >> ((rc % per) * q->bits)) & ((1u << q->bits) - 1);
            }
            v = (int64_t)field - (1 << (q->bits - 1)) - z;
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

/* Columns [ca, cb) of one row (the whole row, or a span of it) into out[0..cb - ca): codes holds
 * the row's codes from column cbase on (cbase <= ca, on a byte or word of the codes), scales and
 * zps the scale and zero-point row's blocks from ca / block_cols on. */
static nf_status decode_row(const nf_source *src, const nf_qweight *q, uint64_t row, const uint8_t *codes,
                            uint64_t cbase, uint64_t ca, uint64_t cb, const float *scales, const int32_t *zps,
                            const float *table, float *out, nf_error *err)
{
    const uint64_t bc = q->block_cols, ja = ca / bc;
    const float g = f32_of(q->global_bits);
    const nf_dialect_unpack_kernels *kern = nf_dialect_unpack_kernels_active();
    for (uint64_t j = ja, c0 = ca; c0 < cb; j++, c0 = j * bc) {
        const uint64_t c1 = (j + 1) * bc < cb ? (j + 1) * bc : cb;
        const float s = scales[j - ja];
        switch (q->codes_kind) {
        case NF_QCODES_E4M3:
        case NF_QCODES_E5M2: {
            const uint8_t nan_mask = q->codes_kind == NF_QCODES_E4M3 ? 0x7F : 0x7C;
            for (uint64_t c = c0; c < c1; c++) {
                uint8_t w = codes[c - cbase];
                if ((w & nan_mask) == nan_mask) return bad_code(err, src, q, row, c, w);
                out[c - ca] = table[w] * s;
            }
            break;
        }
        case NF_QCODES_E2M1:
            if (q->global_op == NF_QGLOBAL_NONE && !(c0 & 1) && !(c1 & 1)) { /* MXFP4: a byte a pair */
                kern->e2m1_run(codes + (c0 - cbase) / 2, (size_t)(c1 - c0) / 2, table, s, out + (c0 - ca));
                /* |E2M1| <= 6 < 2^3: a scale up to 2^125 cannot overflow */
                if (s <= 0x1p125f) continue;
                break;
            }
            for (uint64_t c = c0; c < c1; c++) {
                uint8_t b = codes[(c - cbase) / 2];               /* cbase even: c's nibble is c & 1 */
                float v = table[(c & 1) ? b >> 4 : b & 0x0F] * s; /* exact: see the top of the file */
                out[c - ca] = q->global_op == NF_QGLOBAL_MUL ? v * g : q->global_op == NF_QGLOBAL_DIV ? v / g : v;
            }
            break;
        case NF_QCODES_INT_PACKED: {
            decode_packed(codes, c0 - cbase, c1 - cbase, q->bits, zps ? zps[j - ja] : 0, s, out + (c0 - ca));
            break;
        }
        case NF_QCODES_INT8: {
            const int32_t z = zps ? zps[j - ja] : 0;
            for (uint64_t c = c0; c < c1; c++) out[c - ca] = (float)((int32_t)(int8_t)codes[c - cbase] - z) * s;
            break;
        }
        case NF_QCODES_UINT_PACKED:
        case NF_QCODES_BNB4: break; /* never here: qweight_packed.c and qweight_bnb.c read them */
        }
        /* codes and scales are finite (checked above and in read_scales); their product may
         * still overflow: one branch-free pass, then the value named */
        const bool any = nf_dialect_any_nonfinite(out + (c0 - ca), c1 - c0);
        for (uint64_t c = c0; any && c < c1; c++)
            if (!isfinite(out[c - ca]))
                return value_overflow(err, src, q, row, c, codes, cbase, s, zps ? zps[j - ja] : 0);
    }
    return NF_OK;
}

/* The binary32 value of each code byte (E4M3, E5M2) or nibble (E2M1); integer codes need none. */
static void code_table(const nf_qweight *q, float table[256])
{
    for (unsigned c = 0; c < 256; c++)
        table[c] = q->codes_kind == NF_QCODES_E4M3   ? nf_e4m3fn_to_f32((uint8_t)c)
                   : q->codes_kind == NF_QCODES_E5M2 ? nf_f16_to_f32((uint16_t)(c << 8))
                   : q->codes_kind == NF_QCODES_E2M1 ? nf_e2m1_to_f32((uint8_t)(c & 15))
                                                     : 0.0f;
}

nf_status nf_qweight_read_f32(const nf_source *src, const nf_qweight *q, uint64_t r0, uint64_t r1, float *out,
                              size_t out_len, nf_error *err)
{
    if (!src || !q || (!out && r1 > r0))
        return nf_error_set(err, NF_ERR_USAGE, "nf_qweight_read_f32: missing argument");
    const uint64_t n = q->shape[0], k = q->shape[1];
    uint64_t need;
    if (r0 > r1 || r1 > n)
        return nf_error_set(err, NF_ERR_USAGE,
                            "tensor '%s': rows [%" PRIu64 ", %" PRIu64 ") outside its %" PRIu64 " rows", q->codes->name,
                            r0, r1, n);
    if (!nf_mul_u64(r1 - r0, k, &need) || need > out_len)
        return nf_error_set(err, NF_ERR_USAGE, "tensor '%s': %" PRIu64 " rows of %" PRIu64 " values do not fit in %zu",
                            q->codes->name, r1 - r0, k, out_len);
    if (r0 == r1) return NF_OK;
    if (q->pack == NF_QPACK_BNB) return nf_dialect_bnb_read(src, q, r0 * k, r1 * k, out, err);
    if (q->pack != NF_QPACK_ROWS) return nf_dialect_packed_read(src, q, r0, r1, out, err);
    const uint64_t row_bytes = codes_row_bytes(q);
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
    if (!codes || !raw || !scales || (q->zero_point && !zps)) st = nf_common_nomem(err);
    float table[256];
    code_table(q, table);
    for (uint64_t a = r0; st == NF_OK && a < r1; a += piece) {
        uint64_t b = a + piece < r1 ? a + piece : r1;
        uint64_t sa = a / q->block_rows, sb = (b - 1) / q->block_rows + 1;
        st = nf_source_read_bytes(src, q->codes, a * row_bytes, codes, (size_t)((b - a) * row_bytes), err);
        if (st == NF_OK) st = read_scales(src, q, sa, 0, (size_t)((sb - sa) * sc), raw, scales, err);
        if (st == NF_OK && q->zero_point) st = read_zero_points(src, q, sa, sb, 0, sc, raw, zps, err);
        for (uint64_t r = a; st == NF_OK && r < b; r++) {
            uint64_t s = r / q->block_rows - sa;
            st = decode_row(src, q, r, codes + (r - a) * row_bytes, 0, 0, k, scales + s * sc, zps ? zps + s * sc : NULL,
                            table, out + (r - r0) * k, err);
        }
    }
    free(codes);
    free(raw);
    free(scales);
    free(zps);
    return st;
}

/* The codes of columns [c0, c1) of a row lie in bytes [*b0, *b1) of the row, from column *cbase
 * on: a byte per code, two per byte (E2M1), or 32 / bits per little-endian int32 word. */
static void code_bytes(const nf_qweight *q, uint64_t c0, uint64_t c1, uint64_t *cbase, uint64_t *b0, uint64_t *b1)
{
    if (q->codes_kind == NF_QCODES_E2M1) {
        *cbase = c0 & ~(uint64_t)1;
        *b0 = *cbase / 2;
        *b1 = (c1 + 1) / 2;
    } else if (q->codes_kind == NF_QCODES_INT_PACKED) {
        const uint64_t per = 32 / q->bits;
        *cbase = c0 / per * per;
        *b0 = c0 / per * 4;
        *b1 = (c1 + per - 1) / per * 4;
    } else {
        *cbase = c0;
        *b0 = c0;
        *b1 = c1;
    }
}

/* A span of a row (docs/layouts.md section 12, docs/dialects.md "Values"): only the span's codes
 * and the scale (zero-point) blocks that cover it are read, so memory is the span's, not the
 * row's; the values are those nf_qweight_read_f32 gives at those columns, bit for bit (the same
 * decode_row on the same codes and scales). */
nf_status nf_qweight_read_f32_span(const nf_source *src, const nf_qweight *q, uint64_t row, uint64_t c0, uint64_t n,
                                   float *out, size_t out_len, nf_error *err)
{
    if (!src || !q || (!out && n)) return nf_error_set(err, NF_ERR_USAGE, "nf_qweight_read_f32_span: missing argument");
    const uint64_t k = q->shape[1];
    uint64_t c1;
    if (row >= q->shape[0] || !nf_add_u64(c0, n, &c1) || c1 > k)
        return nf_error_set(err, NF_ERR_USAGE,
                            "tensor '%s': row %" PRIu64 " columns [%" PRIu64 ", +%" PRIu64 ") outside its [%" PRIu64
                            ", %" PRIu64 "]",
                            q->codes->name, row, c0, n, q->shape[0], k);
    if (n > out_len)
        return nf_error_set(err, NF_ERR_USAGE, "tensor '%s': %" PRIu64 " values do not fit in %zu", q->codes->name, n,
                            out_len);
    if (n == 0) return NF_OK;
    if (q->pack == NF_QPACK_BNB) return nf_dialect_bnb_read(src, q, row * k + c0, row * k + c1, out, err);
    if (q->pack != NF_QPACK_ROWS) return nf_dialect_packed_span(src, q, row, c0, n, out, err);
    uint64_t cbase, b0, b1;
    code_bytes(q, c0, c1, &cbase, &b0, &b1);
    /* the scale row of the row, and its blocks over the span */
    const uint64_t br = row / q->block_rows, ja = c0 / q->block_cols, jb = (c1 - 1) / q->block_cols + 1;
    size_t nb = (size_t)(jb - ja);
    uint8_t *codes = malloc((size_t)(b1 - b0) + 1);
    uint8_t *raw = malloc(nb * 4 + 4);
    float *scales = malloc(nb * sizeof *scales);
    int32_t *zps = q->zero_point ? malloc(nb * sizeof *zps) : NULL;
    nf_status st = NF_OK;
    if (!codes || !raw || !scales || (q->zero_point && !zps)) st = nf_common_nomem(err);
    float table[256];
    code_table(q, table);
    if (st == NF_OK)
        st = nf_source_read_bytes(src, q->codes, row * codes_row_bytes(q) + b0, codes, (size_t)(b1 - b0), err);
    if (st == NF_OK) st = read_scales(src, q, br, ja, nb, raw, scales, err);
    if (st == NF_OK && q->zero_point) st = read_zero_points(src, q, br, br + 1, ja, jb, raw, zps, err);
    if (st == NF_OK) st = decode_row(src, q, row, codes, cbase, c0, c1, scales, zps, table, out, err);
    free(codes);
    free(raw);
    free(scales);
    free(zps);
    return st;
}
