/* Imports of GGUF block tensors (docs/methods.md, import_encoded, docs/layouts.md 8):
 *   any ggml block type -> the gguf_* format of the same type: whole rows copied;
 *   GSQ Q2_0 (42) -> q2_g64_fp16, Q8_0 (8) -> q8_g32_fp16, PQ2_0 (142) -> t2_g128_fp16: each
 *   block split into its scale word and its codes, both kept bit for bit.
 * The row-split layout then places the words; for Q2 that reproduces the block's bytes 2..17
 * as the group's base bytes, because Q2_0 and q2_g64_fp16 share the stored word u = q + 1 and
 * its quartet bit order. */
#include <string.h>

#include "format/ggml.h"
#include "import/checks.h"
#include "import/gguf_import.h"

/* The one source each non-gguf_* target takes. */
typedef struct block_source {
    nf_import_kind kind;
    int ggml_type;
    const char *name; /* ggml's name of the source type, for messages */
    unsigned values;  /* values per block */
    unsigned bytes;   /* bytes per block */
} block_source;

static const block_source Q2_0 = {NF_IMPORT_GSQ_Q2_0, NF_IMPORT_GGML_Q2_0, "Q2_0", 64, 18};
static const block_source Q8_0 = {NF_IMPORT_Q8_0, NF_IMPORT_GGML_Q8_0, "Q8_0", 32, 34};
static const block_source PQ2_0 = {NF_IMPORT_PQ2_0, NF_IMPORT_GGML_PQ2_0, "PQ2_0", 128, 34};
static const block_source Q8_1 = {NF_IMPORT_Q8_1, NF_IMPORT_GGML_Q8_1, "Q8_1", 32, 36};
static const block_source TQ1_0 = {NF_IMPORT_GGUF_TERNARY, NF_IMPORT_GGML_TQ1_0, "TQ1_0", 256, 54};
static const block_source TQ2_0 = {NF_IMPORT_GGUF_TERNARY, NF_IMPORT_GGML_TQ2_0, "TQ2_0", 256, 66};
static const block_source Q1_0 = {NF_IMPORT_GGUF_TERNARY, NF_IMPORT_GGML_Q1_0, "Q1_0", 128, 18};

/* The ternary-style sources (docs/formats.md 8.5), which both q2 and t2 take. */
static bool ternary_source(int ggml_type, block_source *src)
{
    switch (ggml_type) {
    case NF_IMPORT_GGML_TQ1_0: *src = TQ1_0; return true;
    case NF_IMPORT_GGML_TQ2_0: *src = TQ2_0; return true;
    case NF_IMPORT_GGML_Q1_0: *src = Q1_0; return true;
    default: return false;
    }
}

nf_status nf_import_init_gguf(nf_import *imp, const nf_format *target, const nf_import_tensor *t, nf_error *err)
{
    if (!imp || !target) return nf_error_set(err, NF_ERR_USAGE, "nf_import_init_gguf: missing argument");
    NF_TRY(nf_import_check_decl(t, "blocks", err));
    memset(imp, 0, sizeof *imp);

    block_source src;
    switch (target->id) {
    case NF_FMT_Q2_G64_FP16:
        if (!ternary_source(t->ggml_type, &src)) src = Q2_0;
        break;
    case NF_FMT_Q8_G32_FP16: src = t->ggml_type == NF_IMPORT_GGML_Q8_1 ? Q8_1 : Q8_0; break;
    case NF_FMT_T2_G128_FP16:
        if (!ternary_source(t->ggml_type, &src)) src = PQ2_0;
        break;
    default:
        if (target->category != NF_CAT_GGUF) {
            if (target->id == NF_FMT_FP8_E4M3FN_ROW_FP16)
                return nf_import_fail(err, NF_ERR_INVALID, t->name, "%s is not an import_encoded target", target->name);
            return nf_import_fail(err, NF_ERR_INVALID, t->name,
                                  "GGUF blocks import only into gguf_*, q2_g64_fp16 (from Q2_0, TQ1_0, TQ2_0, "
                                  "Q1_0), q8_g32_fp16 (from Q8_0, Q8_1), t2_g128_fp16 (from PQ2_0, TQ1_0, TQ2_0, "
                                  "Q1_0) and nvfp4 (from MXFP4, NVFP4), not %s",
                                  target->name);
        }
        src.kind = NF_IMPORT_GGUF_BLOCKS;
        src.ggml_type = target->ggml_type;
        src.name = nf_import_ggml_name(target->ggml_type);
        src.values = target->block_values;
        src.bytes = target->block_bytes;
        break;
    }

    if (t->ggml_type < 0)
        return nf_import_fail(err, NF_ERR_INVALID, t->name,
                              "is a safetensors tensor (dtype %s), not GGUF %s blocks: %s imports a source of "
                              "ggml type %d only",
                              t->dtype ? t->dtype : "(none)", src.name, target->name, src.ggml_type);
    if (t->ggml_type != src.ggml_type) {
        if (src.kind == NF_IMPORT_GGUF_BLOCKS)
            return nf_import_fail(err, NF_ERR_INVALID, t->name,
                                  "ggml type %d (%s) is not the type of %s (ggml type %d, %s): blocks are copied, "
                                  "never converted",
                                  t->ggml_type, nf_import_ggml_name(t->ggml_type), target->name, src.ggml_type,
                                  src.name);
        {
            const char *takes = target->id == NF_FMT_Q8_G32_FP16   ? "Q8_0 (8) or Q8_1 (9)"
                                : target->id == NF_FMT_Q2_G64_FP16 ? "Q2_0 (42), TQ1_0 (34), TQ2_0 (35) or Q1_0 (41)"
                                                                   : "PQ2_0 (142), TQ1_0 (34), TQ2_0 (35) or Q1_0 (41)";
            return nf_import_fail(err, NF_ERR_INVALID, t->name, "ggml type %d (%s): %s imports only %s blocks",
                                  t->ggml_type, nf_import_ggml_name(t->ggml_type), target->name, takes);
        }
    }

    char shape[256];
    if (t->rank == 0)
        return nf_import_fail(err, NF_ERR_INVALID, t->name, "a rank-0 tensor is not a matrix of %s blocks", src.name);
    uint64_t rows = 1, k = t->shape[t->rank - 1];
    for (uint32_t i = 0; i < t->rank; i++) {
        if (t->shape[i] == 0)
            return nf_import_fail(err, NF_ERR_INVALID, t->name, "shape %s has an empty dimension",
                                  nf_import_shape_str(t, shape, sizeof shape));
        if (i + 1 < t->rank && !nf_mul_u64(rows, t->shape[i], &rows))
            return nf_import_fail(err, NF_ERR_INVALID, t->name, "shape %s overflows the row count",
                                  nf_import_shape_str(t, shape, sizeof shape));
    }
    if (src.values == 0 || k % src.values != 0)
        return nf_import_fail(err, NF_ERR_INVALID, t->name,
                              "K = %" PRIu64 " is not a multiple of %u, the %s block size", k, src.values, src.name);
    uint64_t row_bytes;
    if (!nf_mul_u64(k / src.values, src.bytes, &row_bytes))
        return nf_import_fail(err, NF_ERR_INVALID, t->name, "K = %" PRIu64 " overflows the row size", k);

    imp->kind = src.kind;
    imp->target = target;
    imp->name = t->name;
    imp->scale_name = t->name;
    imp->rows = rows;
    imp->cols = k;
    imp->row_bytes = row_bytes;
    imp->scale_row_bytes = 0;
    imp->ggml_type = t->ggml_type;
    return NF_OK;
}

/* ---------------------------------------------------------------- rows */

static nf_status bad_scale(const nf_import *imp, uint64_t row, uint64_t block, const char *src, uint16_t d,
                           const char *why, nf_error *err)
{
    return nf_import_fail(err, NF_ERR_INVALID, imp->name,
                          "row %" PRIu64 " block %" PRIu64 ": %s scale 0x%04X is %s, outside the native %s contract",
                          row, block, src, d, why, imp->target->name);
}

/* Q2_0 -> q2: docs/decisions.md D11 lets Q2 keep every finite scale word (both zeros and
 * subnormals included) and every code under any scale, so only non-finite scales are refused. */
static nf_status q2_row(const nf_import *imp, const uint8_t *src, uint64_t row, int8_t *codes, uint16_t *scales,
                        nf_error *err)
{
    uint64_t nb = imp->cols / 64;
    for (uint64_t b = 0; b < nb; b++, src += 18) {
        uint16_t d = nf_import_le16(src);
        if ((d & 0x7C00) == 0x7C00) {
            const char *why = (d & 0x03FF)   ? "NaN, not finite"
                              : (d & 0x8000) ? "-infinity, not finite"
                                             : "+infinity, not finite";
            return bad_scale(imp, row, b, "Q2_0", d, why, err);
        }
        scales[b] = d;
        int8_t *q = codes + b * 64;
        for (unsigned j = 0; j < 64; j++) q[j] = (int8_t)(((src[2 + j / 4] >> (2 * (j % 4))) & 3) - 1);
    }
    return NF_OK;
}

/* One code of a 34-byte block (d its scale, data its code bytes): the value in *q, or the code's
 * failure in err. */
typedef nf_status (*block_code_fn)(const nf_import *imp, const uint8_t *data, unsigned j, uint64_t row, uint64_t b,
                                   uint16_t d, int8_t *q, nf_error *err);

/* A row of blocks of `group` codes at byte `at` under one binary16 scale at byte 0 (Q8_0, Q8_1,
 * PQ2_0): each scale by the general grouped rules, each code by its format's `code`. */
static inline nf_status grouped_row(const nf_import *imp, const uint8_t *src, uint64_t row, int8_t *codes,
                                    uint16_t *scales, const char *fmt, unsigned group, unsigned bytes, unsigned at,
                                    block_code_fn code, nf_error *err)
{
    uint64_t nb = imp->cols / group;
    for (uint64_t b = 0; b < nb; b++, src += bytes) {
        uint16_t d = nf_import_le16(src);
        const char *why = nf_import_f16_problem(d);
        if (why) return bad_scale(imp, row, b, fmt, d, why, err);
        scales[b] = d;
        int8_t *q = codes + b * group;
        for (unsigned j = 0; j < group; j++) NF_TRY(code(imp, src + at, j, row, b, d, &q[j], err));
    }
    return NF_OK;
}

/* Q8_0 and Q8_1 -> q8: the general grouped rules hold (docs/decisions.md D11): no -0 or
 * non-finite scale, no -128, and a +0 scale only over zero codes. */
static nf_status q8_code(const nf_import *imp, const uint8_t *data, unsigned j, uint64_t row, uint64_t b, uint16_t d,
                         int8_t *q, nf_error *err)
{
    const char *src = imp->kind == NF_IMPORT_Q8_1 ? "Q8_1" : "Q8_0";
    uint8_t c = data[j];
    if (c == 0x80)
        return nf_import_fail(err, NF_ERR_INVALID, imp->name,
                              "row %" PRIu64 " col %" PRIu64 " (block %" PRIu64
                              "): %s code 0x80 is -128, outside the native %s contract",
                              row, b * 32 + j, b, src, imp->target->name);
    if (d == 0 && c != 0)
        return nf_import_fail(err, NF_ERR_INVALID, imp->name,
                              "row %" PRIu64 " block %" PRIu64 ": %s scale 0x0000 (+0) over the nonzero code "
                              "0x%02X at col %" PRIu64 ", outside the native %s contract",
                              row, b, src, c, b * 32 + j, imp->target->name);
    *q = (int8_t)(c >= 0x80 ? (int)c - 256 : (int)c);
    return NF_OK;
}

/* Q8_0: d at 0, codes at 2; Q8_1: d at 0, s at 2 (d times the codes' sum, not part of a value),
 * codes at 4. */
static nf_status q8_row(const nf_import *imp, const uint8_t *src, uint64_t row, int8_t *codes, uint16_t *scales,
                        nf_error *err)
{
    if (imp->kind == NF_IMPORT_Q8_1) return grouped_row(imp, src, row, codes, scales, "Q8_1", 32, 36, 4, q8_code, err);
    return grouped_row(imp, src, row, codes, scales, "Q8_0", 32, 34, 2, q8_code, err);
}

/* PQ2_0 -> t2: stored 00/01/10 mean -1/0/+1, i.e. q = u - 1; T2 re-packs q as two's complement,
 * so the bits are remapped by the layout, not copied.  Scales follow the general grouped rules. */
static nf_status pq2_code(const nf_import *imp, const uint8_t *data, unsigned j, uint64_t row, uint64_t b, uint16_t d,
                          int8_t *q, nf_error *err)
{
    uint8_t byte = data[j / 4];
    unsigned u = (unsigned)(byte >> (2 * (j % 4))) & 3u;
    if (u == 3)
        return nf_import_fail(err, NF_ERR_INVALID, imp->name,
                              "row %" PRIu64 " col %" PRIu64 " (block %" PRIu64
                              "): PQ2_0 code 11 (byte 0x%02X) is not a ternary code",
                              row, b * 128 + j, b, byte);
    if (d == 0 && u != 1)
        return nf_import_fail(err, NF_ERR_INVALID, imp->name,
                              "row %" PRIu64 " block %" PRIu64 ": PQ2_0 scale 0x0000 (+0) over the nonzero code "
                              "%d at col %" PRIu64 ", outside the native %s contract",
                              row, b, (int)u - 1, b * 128 + j, imp->target->name);
    *q = (int8_t)((int)u - 1);
    return NF_OK;
}

static nf_status pq2_row(const nf_import *imp, const uint8_t *src, uint64_t row, int8_t *codes, uint16_t *scales,
                         nf_error *err)
{
    return grouped_row(imp, src, row, codes, scales, "PQ2_0", 128, 34, 2, pq2_code, err);
}

/* TQ1_0, TQ2_0, Q1_0 -> q2 or t2: ggml's value F(q) * d (docs/formats.md 8.5) is q2's (u - 1) * s
 * with u = q + 1 for every finite d, codes -1..2 and zero scales of either sign included (q2's
 * rules, docs/formats.md 5.4); t2 holds it when every q is in -1..1 and d is a valid T2 scale
 * (not -0; +0 only over zero codes).  Each block's d goes to each of its groups. */
static nf_status ternary_row(const nf_import *imp, const uint8_t *src, uint64_t row, int8_t *codes, uint16_t *scales,
                             nf_error *err)
{
    block_source bs;
    if (!ternary_source(imp->ggml_type, &bs))
        return nf_import_fail(err, NF_ERR_USAGE, imp->name, "ggml type %d is not a ternary source", imp->ggml_type);
    const char *name = bs.name;
    const unsigned values = bs.values, bytes = bs.bytes;
    const bool t2 = imp->target->id == NF_FMT_T2_G128_FP16;
    const unsigned group = imp->target->group_size, per_block = values / group;
    const uint64_t nb = imp->cols / values;
    int8_t q[256];
    for (uint64_t b = 0; b < nb; b++, src += bytes) {
        unsigned at = 0;
        (void)nf_ggml_block_codes(imp->ggml_type, src, q, &at); /* a ternary source: true */
        const uint16_t d = nf_import_le16(src + at);
        const char *why = (d & 0x7C00) == 0x7C00 ? ((d & 0x03FF)   ? "NaN, not finite"
                                                    : (d & 0x8000) ? "-infinity, not finite"
                                                                   : "+infinity, not finite")
                          : t2 && d == 0x8000    ? "-0"
                                                 : NULL;
        if (why) return bad_scale(imp, row, b, name, d, why, err);
        for (unsigned j = 0; j < values; j++) {
            if (t2 && (q[j] > 1 || (d == 0 && q[j] != 0)))
                return nf_import_fail(err, NF_ERR_INVALID, imp->name,
                                      "row %" PRIu64 " col %" PRIu64 " (block %" PRIu64 "): %s code %d under scale "
                                      "0x%04X is outside the native %s contract (ternary codes, a +0 scale only "
                                      "over zeros)",
                                      row, b * values + j, b, name, q[j], d, imp->target->name);
            codes[b * values + j] = q[j];
        }
        for (unsigned g = 0; g < per_block; g++) scales[b * per_block + g] = d;
    }
    return NF_OK;
}

nf_status nf_import_gguf_rows(const nf_import *imp, const nf_import_chunk *c, nf_words *out, uint64_t out_row,
                              nf_error *err)
{
    const uint8_t *src = c->data;
    uint64_t k = imp->cols;
    if (imp->kind == NF_IMPORT_GGUF_BLOCKS) {
        /* ggml's blocks are the target's words, copied as they are; only a NaN or infinite
         * binary16 scale (d, dmin) is refused, as ggml's ggml_validate_row_data does: such a
         * block decodes to NaN or infinities, the usual way a broken quantized checkpoint
         * shows (docs/formats.md 8.1). */
        uint64_t per_row = imp->cols / imp->target->block_values;
        nf_ggml_bad_scale bad;
        if (nf_ggml_find_nonfinite_scale(imp->target, src, 0, c->rows * per_row, &bad))
            return nf_import_fail(err, NF_ERR_INVALID, imp->name,
                                  "row %" PRIu64 " block %" PRIu64 ": %s scale %s 0x%04X is %s, not finite: ggml's "
                                  "ggml_validate_row_data refuses such a block (its values would be NaN or infinite)",
                                  c->first_row + bad.block / per_row, bad.block % per_row,
                                  nf_ggml_block_name(imp->target), bad.field, bad.word,
                                  nf_ggml_f16_nonfinite_name(bad.word));
        memcpy(out->blocks + out_row * imp->row_bytes, src, (size_t)(c->rows * imp->row_bytes));
        return NF_OK;
    }
    unsigned group = imp->target->group_size;
    if (group == 0 || k % group != 0)
        return nf_import_fail(err, NF_ERR_USAGE, imp->name, "import does not match its target %s", imp->target->name);
    uint64_t groups = k / group;
    for (uint64_t r = 0; r < c->rows; r++) {
        const uint8_t *row = src + r * imp->row_bytes;
        int8_t *codes = out->codes + (out_row + r) * k;
        uint16_t *scales = out->scales + (out_row + r) * groups;
        uint64_t abs_row = c->first_row + r;
        nf_status st;
        switch (imp->kind) {
        case NF_IMPORT_GSQ_Q2_0: st = q2_row(imp, row, abs_row, codes, scales, err); break;
        case NF_IMPORT_Q8_0: st = q8_row(imp, row, abs_row, codes, scales, err); break;
        case NF_IMPORT_PQ2_0: st = pq2_row(imp, row, abs_row, codes, scales, err); break;
        case NF_IMPORT_Q8_1: st = q8_row(imp, row, abs_row, codes, scales, err); break;
        case NF_IMPORT_GGUF_TERNARY: st = ternary_row(imp, row, abs_row, codes, scales, err); break;
        default: return nf_import_fail(err, NF_ERR_USAGE, imp->name, "not a GGUF block import");
        }
        if (st != NF_OK) return st;
    }
    return NF_OK;
}
