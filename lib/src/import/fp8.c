/* compressed-tensors FP8 rows -> fp8_e4m3fn_row_bf16 (docs/methods.md, import_encoded):
 * E4M3FN codes copied as they are; the row multiplier is the checkpoint's BF16 word, or its F32
 * word rounded to BF16 once (nearest, ties to even); a per-tensor scale repeats on every row. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "import/checks.h"
#include "import/fp8.h"

static const char TARGET_HINT[] = "compressed-tensors FP8 rows import into fp8_e4m3fn_row_bf16 only";

/* The BF16 row-scale word of one source scale (2 bytes BF16 or 4 bytes F32 at p), or an error
 * naming the word; `where` is "row 3: " or "" (per-tensor scale). */
static nf_status row_scale(const nf_import *imp, const uint8_t *p, const char *where, uint16_t *out, nf_error *err)
{
    const char *contract = "a row scale must be finite with its sign clear";
    if (!imp->scale_f32) {
        uint16_t w = nf_import_le16(p);
        const char *why = NULL;
        if ((w & 0x7F80) == 0x7F80) why = (w & 0x007F) ? "NaN" : (w & 0x8000) ? "-infinity" : "+infinity";
        else if (w & 0x8000) why = w == 0x8000 ? "-0" : "negative";
        if (why)
            return nf_import_fail(err, NF_ERR_INVALID, imp->scale_name, "%sBF16 scale 0x%04X is %s: %s", where, w, why,
                                  contract);
        *out = w;
        return NF_OK;
    }
    uint32_t bits = nf_import_le32(p);
    const char *why = nf_import_f32_problem(bits);
    if (why && bits != 0) /* +0 is a valid row scale */
        return nf_import_fail(err, NF_ERR_INVALID, imp->scale_name, "%sF32 scale 0x%08X is %s: %s", where, bits, why,
                              contract);
    /* nf_f32_to_bf16 is the exact integer RNE; a carry out of the largest finite values gives
     * the infinity word, which no row scale may be. */
    uint16_t w = nf_f32_to_bf16(nf_f32_from_bits(bits));
    if ((w & 0x7F80) == 0x7F80)
        return nf_import_fail(err, NF_ERR_INVALID, imp->scale_name,
                              "%sF32 scale 0x%08X (%.9g) rounds to BF16 0x%04X, infinity: %s", where, bits,
                              (double)nf_f32_from_bits(bits), w, contract);
    *out = w;
    return NF_OK;
}

nf_status nf_import_init_fp8(nf_import *imp, const nf_format *target, const nf_import_tensor *codes,
                             const nf_import_tensor *scales, const void *tensor_scale_bytes, size_t tensor_scale_len,
                             nf_error *err)
{
    if (!imp || !target) return nf_error_set(err, NF_ERR_USAGE, "nf_import_init_fp8: missing argument");
    NF_TRY(nf_import_check_decl(codes, "codes", err));
    NF_TRY(nf_import_check_decl(scales, "scales", err));
    memset(imp, 0, sizeof *imp);
    if (target->id == NF_FMT_FP8_E4M3FN_ROW_FP16)
        return nf_import_fail(err, NF_ERR_INVALID, codes->name, "%s is not an import_encoded target (%s)", target->name,
                              TARGET_HINT);
    if (target->id != NF_FMT_FP8_E4M3FN_ROW_BF16)
        return nf_import_fail(err, NF_ERR_INVALID, codes->name, "cannot import into %s: %s", target->name, TARGET_HINT);

    const char *what = "a compressed-tensors FP8";
    NF_TRY(nf_import_expect_member(codes, codes, "weight", what, err));
    NF_TRY(nf_import_expect_member(scales, codes, "weight_scale", what, err));
    NF_TRY(nf_import_expect_dtype(codes, "F8_E4M3", "a compressed-tensors FP8 weight (E4M3FN codes)", err));
    bool f32 = scales->dtype && strcmp(scales->dtype, "F32") == 0;
    if (!f32) NF_TRY(nf_import_expect_dtype(scales, "BF16", "an FP8 weight_scale (BF16 or F32)", err));

    char shape[256];
    if (codes->rank != 2 || codes->shape[0] == 0 || codes->shape[1] == 0)
        return nf_import_fail(err, NF_ERR_INVALID, codes->name, "shape %s is not a non-empty matrix [N, K]",
                              nf_import_shape_str(codes, shape, sizeof shape));
    uint64_t n = codes->shape[0], k = codes->shape[1], count;
    bool per_tensor;
    if (!nf_import_elements(scales, &count))
        return nf_import_fail(err, NF_ERR_INVALID, scales->name, "shape %s overflows",
                              nf_import_shape_str(scales, shape, sizeof shape));
    if (count == 1) per_tensor = true; /* rank 0, [1], [1,1]: also the per-row scale of a one-row matrix */
    else if ((scales->rank == 1 && scales->shape[0] == n) ||
             (scales->rank == 2 && scales->shape[0] == n && scales->shape[1] == 1))
        per_tensor = false;
    else
        return nf_import_fail(err, NF_ERR_INVALID, scales->name,
                              "shape %s is neither one scale per row ([%" PRIu64 "] or [%" PRIu64 ",1]) nor one per "
                              "tensor: only row and tensor FP8 scales import into fp8_e4m3fn_row_bf16",
                              nf_import_shape_str(scales, shape, sizeof shape), n, n);

    size_t scale_bytes = f32 ? 4 : 2;
    imp->kind = NF_IMPORT_FP8_COMPRESSED;
    imp->target = target;
    imp->name = codes->name;
    imp->scale_name = scales->name;
    imp->rows = n;
    imp->cols = k;
    imp->row_bytes = k;
    imp->scale_row_bytes = per_tensor ? 0 : scale_bytes;
    imp->ggml_type = -1;
    imp->scale_f32 = f32;
    imp->scale_per_tensor = per_tensor;
    if (per_tensor) {
        if (!tensor_scale_bytes || tensor_scale_len != scale_bytes)
            return nf_import_fail(err, NF_ERR_USAGE, scales->name, "a per-tensor scale needs its %zu bytes, %zu given",
                                  scale_bytes, tensor_scale_bytes ? tensor_scale_len : 0);
        const uint8_t *p = tensor_scale_bytes;
        imp->source_scalar = f32 ? nf_import_le32(p) : nf_import_le16(p);
        NF_TRY(row_scale(imp, p, "", &imp->tensor_scale, err));
    }
    return NF_OK;
}

nf_status nf_import_fp8_rows(const nf_import *imp, const nf_import_chunk *c, nf_words *out, uint64_t out_row,
                             nf_error *err)
{
    uint64_t k = imp->cols;
    const uint8_t *codes = c->data, *scales = c->scales;
    for (uint64_t r = 0; r < c->rows; r++) {
        uint64_t row = c->first_row + r;
        uint16_t s = imp->tensor_scale;
        if (!imp->scale_per_tensor) {
            char where[40];
            snprintf(where, sizeof where, "row %" PRIu64 ": ", row);
            NF_TRY(row_scale(imp, scales + r * imp->scale_row_bytes, where, &s, err));
        }
        out->scales[out_row + r] = s;
        const uint8_t *src = codes + r * k;
        uint8_t *dst = out->codes8 + (out_row + r) * k;
        /* A row whose multiplier times 448 (the largest code) is not finite may hold values that
         * overflow binary32: the dialect defines none, so such a value is refused as reading the
         * weight's values refuses it (docs/dialects.md "Bad input"). */
        const float sf = nf_bf16_to_f32(s);
        const bool may_overflow = !isfinite(448.0f * sf);
        for (uint64_t j = 0; j < k; j++) {
            uint8_t w = src[j];
            if ((w & 0x7F) == 0x7F)
                return nf_import_fail(err, NF_ERR_INVALID, imp->name,
                                      "row %" PRIu64 " col %" PRIu64
                                      ": E4M3FN code 0x%02X is NaN, outside the %s contract",
                                      row, j, w, imp->target->name);
            if (may_overflow && !isfinite(nf_e4m3fn_to_f32(w) * sf))
                return nf_import_fail(err, NF_ERR_INVALID, imp->name,
                                      "row %" PRIu64 " col %" PRIu64 ": E4M3 code 0x%02X x row scale BF16 0x%04X "
                                      "(%.9g) overflows binary32: a value must be finite",
                                      row, j, w, s, (double)sf);
            /* A +0 row scale admits only signed-zero codes (docs/formats.md 7.2): a nonzero code
             * there would claim a value the format cannot represent. */
            if (s == 0 && (w & 0x7F) != 0) {
                /* Name the source word too: an F32 scale may have been a tiny positive value
                 * that only became +0 by the rounding to BF16. */
                char source[32] = "BF16 0x0000";
                if (imp->scale_f32)
                    snprintf(source, sizeof source, "F32 0x%08X",
                             imp->scale_per_tensor ? imp->source_scalar : nf_import_le32(scales + r * 4));
                return nf_import_fail(err, NF_ERR_INVALID, imp->name,
                                      "row %" PRIu64 " col %" PRIu64
                                      ": code 0x%02X is nonzero under the row's +0 scale "
                                      "(%s in %s), outside the %s contract",
                                      row, j, w, source, imp->scale_name, imp->target->name);
            }
            dst[j] = w;
        }
    }
    return NF_OK;
}
