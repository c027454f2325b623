/* bitsandbytes' values (ninfer/dialect.h, docs/dialects.md "bitsandbytes"), as its own
 * dequantization computes them:
 *   4-bit  w = RN_dtype(quant_map[code] * absmax[block]), one binary32 product rounded to the
 *          state's dtype (bitsandbytes' dequantize_4bit returns that dtype); under double
 *          quantization absmax[block] = RN32(RN32(nested_quant_map[u] * nested_absmax[block /
 *          nested_block]) + nested_offset), as dequantize_blockwise and `absmax += offset` do;
 *   int8   w = RN32(RN32(q * SCB[row]) * RN32(1/127)), int8_vectorwise_dequant's two products.
 * Elements are those of the row-major flattened weight, read in pieces of at most PIECE of them
 * (a 4-bit block may span rows), so memory stays bounded whatever the weight's size.  The build
 * evaluates binary32 without excess precision or contraction (qweight_values.c checks it). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/format.h>

#include "common/fail.h"
#include "dialect/dialect_internal.h"

#define PIECE ((uint64_t)1 << 18)

static float f32_at(const uint8_t *p)
{
    uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    return nf_f32_from_bits(u);
}

/* count F32 values of t from element first on, each finite, into out. */
static nf_status read_f32s(const nf_source *src, const nf_source_tensor *t, uint64_t first, size_t count, float *out,
                           nf_error *err)
{
    uint8_t *raw = malloc(count * 4 + 1);
    if (!raw) return nf_common_nomem(err);
    nf_status st = nf_source_read_bytes(src, t, first * 4, raw, count * 4, err);
    for (size_t i = 0; st == NF_OK && i < count; i++) {
        out[i] = f32_at(raw + 4 * i);
        if (!isfinite(out[i]))
            st = nf_dialect_fail(err, src, t, "element %" PRIu64 ": 0x%08" PRIX32 " is not finite", first + i,
                                 nf_f32_bits(out[i]));
    }
    free(raw);
    return st;
}

/* absmax of blocks [b0, b0 + nb) into out, each finite. */
static nf_status block_absmax(const nf_source *src, const nf_qweight *q, uint64_t b0, size_t nb, float *out,
                              const float *nested_map, nf_error *err)
{
    if (!q->nested_absmax) {
        NF_TRY(read_f32s(src, q->scale, b0, nb, out, err));
    } else {
        const uint64_t nbk = q->nested_block, n0 = b0 / nbk, nn = (b0 + nb - 1) / nbk - n0 + 1;
        uint8_t *u = malloc(nb + 1);
        float *na = malloc((size_t)nn * sizeof *na);
        nf_status st = u && na ? NF_OK : nf_common_nomem(err);
        if (st == NF_OK) st = nf_source_read_bytes(src, q->scale, b0, u, nb, err);
        if (st == NF_OK) st = read_f32s(src, q->nested_absmax, n0, (size_t)nn, na, err);
        const float offset = nf_f32_from_bits(q->nested_offset_bits);
        for (size_t i = 0; st == NF_OK && i < nb; i++) {
            float a = nested_map[u[i]] * na[(b0 + i) / nbk - n0];
            out[i] = a + offset;
        }
        free(u);
        free(na);
        NF_TRY(st);
    }
    for (size_t i = 0; i < nb; i++) /* any finite absmax is bitsandbytes' (double quantization may give < 0) */
        if (!isfinite(out[i]))
            return nf_dialect_fail(err, src, q->scale,
                                   "block %" PRIu64 " (elements %" PRIu64 "..%" PRIu64 " of the flattened weight): "
                                   "absmax %.9g is not finite",
                                   b0 + i, (b0 + i) * q->block_cols, (b0 + i + 1) * q->block_cols - 1, (double)out[i]);
    return NF_OK;
}

/* A binary32 value rounded to the state's dtype, back in binary32. */
static float to_dtype(int dtype, float v)
{
    if (dtype == NF_ST_BF16) return nf_bf16_to_f32(nf_f32_to_bf16(v));
    if (dtype == NF_ST_F16) return nf_f16_to_f32(nf_f32_to_f16(v));
    return v;
}

static nf_status overflow(nf_error *err, const nf_source *src, const nf_qweight *q, uint64_t e)
{
    return nf_dialect_fail(err, src, q->codes,
                           "row %" PRIu64 " col %" PRIu64 ": the value overflows %s: a %s value must be finite",
                           e / q->shape[1], e % q->shape[1],
                           q->value_dtype == NF_ST_BF16  ? "bfloat16"
                           : q->value_dtype == NF_ST_F16 ? "float16"
                                                         : "binary32",
                           nf_dialect_name(q->dialect));
}

/* 4-bit: elements [a, b) (b - a <= PIECE). */
static nf_status bnb4_piece(const nf_source *src, const nf_qweight *q, uint64_t a, uint64_t b, float *out,
                            const float table[16], const float *nested_map, nf_error *err)
{
    const uint64_t bk = q->block_cols, c0 = a / 2, c1 = (b + 1) / 2, b0 = a / bk, nb = (b - 1) / bk - b0 + 1;
    uint8_t *codes = malloc((size_t)(c1 - c0) + 1);
    float *absmax = malloc((size_t)nb * sizeof *absmax);
    nf_status st = codes && absmax ? NF_OK : nf_common_nomem(err);
    if (st == NF_OK) st = nf_source_read_bytes(src, q->codes, c0, codes, (size_t)(c1 - c0), err);
    if (st == NF_OK) st = block_absmax(src, q, b0, (size_t)nb, absmax, nested_map, err);
    for (uint64_t e = a; st == NF_OK && e < b; e++) {
        uint8_t byte = codes[e / 2 - c0];
        unsigned code = (e & 1) ? byte & 15u : byte >> 4; /* the first element in the high nibble */
        float v = to_dtype(q->value_dtype, table[code] * absmax[e / bk - b0]);
        if (!isfinite(v)) st = overflow(err, src, q, e);
        out[e - a] = v;
    }
    free(codes);
    free(absmax);
    return st;
}

/* int8: elements [a, b). */
static nf_status bnb8_piece(const nf_source *src, const nf_qweight *q, uint64_t a, uint64_t b, float *out,
                            nf_error *err)
{
    const uint64_t k = q->shape[1], r0 = a / k, nr = (b - 1) / k - r0 + 1;
    const float inv127 = (float)(1.0 / 127.0); /* bitsandbytes' 7.874015718698502e-3 as binary32 */
    int8_t *codes = malloc((size_t)(b - a) + 1);
    float *scb = malloc((size_t)nr * sizeof *scb);
    nf_status st = codes && scb ? NF_OK : nf_common_nomem(err);
    if (st == NF_OK) st = nf_source_read_bytes(src, q->codes, a, codes, (size_t)(b - a), err);
    if (st == NF_OK) st = read_f32s(src, q->scale, r0, (size_t)nr, scb, err);
    for (uint64_t e = a; st == NF_OK && e < b; e++) {
        float p = (float)codes[e - a] * scb[e / k - r0];
        out[e - a] = p * inv127;
        if (!isfinite(out[e - a])) st = overflow(err, src, q, e);
    }
    free(codes);
    free(scb);
    return st;
}

/* (dialect_internal.h) */
nf_status nf_dialect_bnb_read(const nf_source *src, const nf_qweight *q, uint64_t a, uint64_t b, float *out,
                              nf_error *err)
{
    float table[16], nested_map[256];
    if (q->codes_kind == NF_QCODES_BNB4) {
        NF_TRY(read_f32s(src, q->quant_map, 0, 16, table, err));
        if (q->nested_quant_map) NF_TRY(read_f32s(src, q->nested_quant_map, 0, 256, nested_map, err));
    }
    for (uint64_t p = a; p < b; p += PIECE) {
        uint64_t e = b - p < PIECE ? b : p + PIECE;
        if (q->codes_kind == NF_QCODES_BNB4) NF_TRY(bnb4_piece(src, q, p, e, out + (p - a), table, nested_map, err));
        else NF_TRY(bnb8_piece(src, q, p, e, out + (p - a), err));
    }
    return NF_OK;
}
