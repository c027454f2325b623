/* import_encoded: the kind table, single-matrix geometry and the row dispatcher, which checks
 * the chunk and the output words and hands the rows to the dialect's file (gguf_import.c, nvfp4_import.c,
 * fp8.c, int_groups.c).  The checks and messages those files share are in checks.c, below all three. */
#include <stdio.h>
#include <string.h>

#include "import/checks.h"
#include "import/fp8.h"
#include "import/gguf_import.h"
#include "import/int_groups.h"
#include "import/nvfp4_import.h"

static const char *const kind_names[NF_IMPORT_KIND_COUNT] = {
    "gguf_blocks",
    "gsq_q2_0",
    "q8_0",
    "pq2_0",
    "nvfp4_modelopt",
    "nvfp4_compressed_tensors",
    "fp8_compressed_tensors",
    "int_groups",
    "mxfp4",
    "gguf_ternary",
    "q8_1",
    "gguf_mxfp4",
    "gguf_nvfp4",
};

const char *nf_import_kind_name(nf_import_kind kind)
{
    if ((unsigned)kind >= NF_IMPORT_KIND_COUNT) return NULL;
    return kind_names[kind];
}

/* ---------------------------------------------------------------- geometry */

nf_status nf_import_geometry(const nf_import *imp, nf_geometry *g, nf_error *err)
{
    if (!imp || !g || !imp->target) return nf_error_set(err, NF_ERR_USAGE, "nf_import_geometry: missing argument");
    if (imp->target->category == NF_CAT_NVFP4) return nf_import_nvfp4_stack(imp, 1, g, err);
    uint64_t shape[2] = {imp->rows, imp->cols};
    nf_status st = nf_geometry_init(g, nf_layout_default_for(imp->target), imp->target, 2, shape, 1, err);
    if (st != NF_OK) nf_error_prefix(err, "%s", imp->name ? nf_esc(imp->name).s : "(unnamed tensor)");
    return st;
}

/* ---------------------------------------------------------------- rows */

/* Does out hold the arrays the kind writes? */
static bool out_arrays_present(const nf_import *imp, const nf_words *out)
{
    switch (imp->kind) {
    case NF_IMPORT_GGUF_BLOCKS: return out->blocks != NULL;
    case NF_IMPORT_GSQ_Q2_0:
    case NF_IMPORT_Q8_0:
    case NF_IMPORT_PQ2_0:
    case NF_IMPORT_GGUF_TERNARY:
    case NF_IMPORT_Q8_1: return out->codes && out->scales;
    case NF_IMPORT_NVFP4_MODELOPT:
    case NF_IMPORT_NVFP4_COMPRESSED:
    case NF_IMPORT_MXFP4:
    case NF_IMPORT_GGUF_MXFP4:
    case NF_IMPORT_GGUF_NVFP4: return out->codes8 && out->scales8;
    case NF_IMPORT_FP8_COMPRESSED: return out->codes8 && out->scales;
    case NF_IMPORT_INT_GROUPS: return out->codes && out->scales;
    case NF_IMPORT_KIND_COUNT: break;
    }
    return false;
}

nf_status nf_import_rows(const nf_import *imp, const nf_import_chunk *chunk, nf_words *out, uint64_t out_row,
                         nf_error *err)
{
    if (!imp || !chunk || !out) return nf_error_set(err, NF_ERR_USAGE, "nf_import_rows: missing argument");
    if ((unsigned)imp->kind >= NF_IMPORT_KIND_COUNT || !imp->target)
        return nf_error_set(err, NF_ERR_USAGE, "nf_import_rows: the import was not initialised");
    const char *name = imp->name;
    if (chunk->rows == 0) return NF_OK;
    uint64_t end, out_end, need, scale_need;
    if (!nf_add_u64(chunk->first_row, chunk->rows, &end) || end > imp->rows)
        return nf_import_fail(err, NF_ERR_USAGE, name,
                              "chunk rows [%" PRIu64 ",+%" PRIu64 ") are outside the tensor's %" PRIu64 " rows",
                              chunk->first_row, chunk->rows, imp->rows);
    if (out->cols != imp->cols)
        return nf_import_fail(err, NF_ERR_USAGE, name, "output words hold %" PRIu64 " columns, the source has %" PRIu64,
                              out->cols, imp->cols);
    if (!nf_add_u64(out_row, chunk->rows, &out_end) || out_end > out->rows)
        return nf_import_fail(err, NF_ERR_USAGE, name,
                              "output rows [%" PRIu64 ",+%" PRIu64 ") are outside the %" PRIu64
                              " rows of the output words",
                              out_row, chunk->rows, out->rows);
    if (!out_arrays_present(imp, out))
        return nf_import_fail(err, NF_ERR_USAGE, name, "output words lack the arrays of a %s tensor",
                              imp->target->name);
    if (!nf_mul_u64(chunk->rows, imp->row_bytes, &need) || !chunk->data || need > chunk->data_len)
        return nf_import_fail(err, NF_ERR_USAGE, name,
                              "chunk of %" PRIu64 " rows needs %" PRIu64 " bytes per row, %zu given in all",
                              chunk->rows, imp->row_bytes, chunk->data ? chunk->data_len : 0);
    if (imp->scale_row_bytes) {
        if (!nf_mul_u64(chunk->rows, imp->scale_row_bytes, &scale_need) || !chunk->scales ||
            scale_need > chunk->scales_len)
            return nf_import_fail(err, NF_ERR_USAGE, imp->scale_name,
                                  "chunk of %" PRIu64 " rows needs %" PRIu64 " scale bytes per row, %zu given in all",
                                  chunk->rows, imp->scale_row_bytes, chunk->scales ? chunk->scales_len : 0);
    }
    switch (imp->kind) {
    case NF_IMPORT_GGUF_BLOCKS:
    case NF_IMPORT_GSQ_Q2_0:
    case NF_IMPORT_Q8_0:
    case NF_IMPORT_PQ2_0:
    case NF_IMPORT_GGUF_TERNARY:
    case NF_IMPORT_Q8_1: return nf_import_gguf_rows(imp, chunk, out, out_row, err);
    case NF_IMPORT_GGUF_MXFP4:
    case NF_IMPORT_GGUF_NVFP4: return nf_import_gguf_fp4_rows(imp, chunk, out, out_row, err);
    case NF_IMPORT_NVFP4_MODELOPT:
    case NF_IMPORT_NVFP4_COMPRESSED: return nf_import_nvfp4_rows(imp, chunk, out, out_row, err);
    case NF_IMPORT_FP8_COMPRESSED: return nf_import_fp8_rows(imp, chunk, out, out_row, err);
    case NF_IMPORT_INT_GROUPS: return nf_import_int_groups_rows(imp, chunk, out, out_row, err);
    case NF_IMPORT_MXFP4: return nf_import_mxfp4_rows(imp, chunk, out, out_row, err);
    case NF_IMPORT_KIND_COUNT: break;
    }
    return nf_error_set(err, NF_ERR_USAGE, "nf_import_rows: the import was not initialised");
}
