/* GPTQ and AWQ into the grouped formats (ninfer/import.h NF_IMPORT_INT_GROUPS, docs/dialects.md
 * "GPTQ and AWQ"): a row's integers q - z become the signed codes and each source group's
 * binary16 scale the scale of every target group inside it, so every value (q - z) * s is kept
 * exactly, no word rounded, negated or canonicalized.  The chunk carries what the dialect read
 * (nf_qweight_read_ints): int16 integers [rows, K] and binary32 scales [rows, G], exact
 * binary16 values (the import is planned only for F16 scales). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <ninfer/format.h>

#include "import/checks.h"
#include "import/int_groups.h"

nf_status nf_import_init_int_groups(nf_import *imp, const nf_format *target, const nf_import_tensor *codes,
                                    const nf_import_tensor *scales, uint64_t rows, uint64_t cols, uint64_t group,
                                    nf_error *err)
{
    if (!imp || !target || !codes || !scales)
        return nf_error_set(err, NF_ERR_USAGE, "nf_import_init_int_groups: missing argument");
    memset(imp, 0, sizeof *imp);
    const char *name = codes->name;
    if (target->id != NF_FMT_Q2_G64_FP16 && target->id != NF_FMT_Q4_G64_FP16 && target->id != NF_FMT_Q5_G64_FP16 &&
        target->id != NF_FMT_Q8_G32_FP16)
        return nf_import_fail(err, NF_ERR_INVALID, name,
                              "GPTQ and AWQ import only into q2_g64_fp16, q4_g64_fp16, q5_g64_fp16 and q8_g32_fp16, "
                              "not %s",
                              target->name);
    const uint64_t tg = target->group_size;
    if (rows == 0 || cols == 0 || group == 0 || cols % tg || (group < cols && group % tg))
        return nf_import_fail(err, NF_ERR_INVALID, name,
                              "[%" PRIu64 ",%" PRIu64 "] in groups of %" PRIu64 ": %s needs K a multiple of %" PRIu64
                              " and groups made of whole %" PRIu64 "-column groups",
                              rows, cols, group, target->name, tg, tg);
    if (group > cols) group = cols;
    imp->kind = NF_IMPORT_INT_GROUPS;
    imp->target = target;
    imp->name = name;
    imp->scale_name = scales->name;
    imp->rows = rows;
    imp->cols = cols;
    imp->row_bytes = cols * sizeof(int16_t);
    imp->scale_row_bytes = (cols + group - 1) / group * sizeof(float);
    imp->ggml_type = -1;
    imp->group = group;
    return NF_OK;
}

nf_status nf_import_int_groups_rows(const nf_import *imp, const nf_import_chunk *c, nf_words *out, uint64_t out_row,
                                    nf_error *err)
{
    const uint64_t k = imp->cols, tg = imp->target->group_size, tgroups = k / tg;
    const int lo = imp->target->code_min, hi = imp->target->code_max;
    for (uint64_t r = 0; r < c->rows; r++) {
        const uint8_t *ints = (const uint8_t *)c->data + r * imp->row_bytes;
        const uint8_t *sc = (const uint8_t *)c->scales + r * imp->scale_row_bytes;
        int8_t *codes = out->codes + (out_row + r) * k;
        uint16_t *scales = out->scales + (out_row + r) * tgroups;
        const uint64_t row = c->first_row + r;
        for (uint64_t t = 0; t < tgroups; t++) {
            const uint64_t sg = t * tg / imp->group;
            uint32_t bits = nf_import_le32(sc + sg * 4);
            float s;
            memcpy(&s, &bits, sizeof s);
            const uint16_t h = nf_f32_to_f16(s);
            if (!isfinite(s) || s == 0.0f || nf_f16_to_f32(h) != s)
                return nf_import_fail(err, NF_ERR_INVALID, imp->scale_name,
                                      "row %" PRIu64 " group %" PRIu64 ": scale %.9g is not a finite nonzero binary16 "
                                      "value, which %s keeps exactly",
                                      row, sg, (double)s, imp->target->name);
            scales[t] = h;
            for (uint64_t j = t * tg; j < (t + 1) * tg; j++) {
                int v = (int16_t)nf_import_le16(ints + j * 2);
                if (v < lo || v > hi)
                    return nf_import_fail(err, NF_ERR_INVALID, imp->name,
                                          "row %" PRIu64 " col %" PRIu64
                                          ": the integer q - z = %d is outside %s's codes "
                                          "[%d, %d], so import_encoded cannot keep it; requantize it (--requantize, or "
                                          "a rule naming the method)",
                                          row, j, v, imp->target->name, lo, hi);
                codes[j] = (int8_t)v;
            }
        }
    }
    return NF_OK;
}
