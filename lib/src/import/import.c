/* import_encoded: the kind table, the checks shared by every dialect (source declarations,
 * chunks, output words), message helpers, single-matrix geometry and the row dispatcher. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "import/import_impl.h"

static const char *const kind_names[NF_IMPORT_KIND_COUNT] = {
    "gguf_blocks",    "gsq_q2_0",         "q8_0", "pq2_0", "nvfp4_modelopt", "nvfp4_compressed_tensors",
    "fp8_compressed_tensors",
};

const char *nf_import_kind_name(nf_import_kind kind)
{
    if ((unsigned)kind >= NF_IMPORT_KIND_COUNT) return NULL;
    return kind_names[kind];
}

nf_status nf_import_fail(nf_error *err, nf_status status, const char *name, const char *fmt, ...)
{
    if (!err) return status;
    char what[NF_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    /* the name comes from the checkpoint: escaped (ninfer/escape.h) */
    return nf_error_set(err, status, "%s: %s", name ? nf_esc(name).s : "(unnamed tensor)", what);
}

const char *nf_import_f16_problem(uint16_t h)
{
    if (h == 0x8000) return "-0";
    if ((h & 0x7C00) != 0x7C00) return NULL;
    if (h & 0x03FF) return "NaN";
    return (h & 0x8000) ? "-infinity" : "+infinity";
}

const char *nf_import_f32_problem(uint32_t bits)
{
    if (bits == 0x80000000u) return "-0";
    if ((bits & 0x7F800000u) == 0x7F800000u) {
        if (bits & 0x007FFFFFu) return "NaN";
        return (bits & 0x80000000u) ? "-infinity" : "+infinity";
    }
    if (bits & 0x80000000u) return "negative";
    if (bits == 0) return "+0";
    return NULL;
}

const char *nf_import_ggml_name(int ggml_type)
{
    /* Upper-case names of the 18 registered block types, plus the float types and PQ2_0 that
     * messages about refused sources are likely to meet. */
    static const struct {
        int type;
        const char *name;
    } names[] = {
        {0, "F32"},      {1, "F16"},       {2, "Q4_0"},    {3, "Q4_1"},    {6, "Q5_0"},    {7, "Q5_1"},
        {8, "Q8_0"},     {9, "Q8_1"},      {10, "Q2_K"},   {11, "Q3_K"},   {12, "Q4_K"},   {13, "Q5_K"},
        {14, "Q6_K"},    {15, "Q8_K"},     {16, "IQ2_XXS"}, {17, "IQ2_XS"}, {18, "IQ3_XXS"}, {19, "IQ1_S"},
        {20, "IQ4_NL"},  {21, "IQ3_S"},    {22, "IQ2_S"},  {23, "IQ4_XS"}, {24, "I8"},     {25, "I16"},
        {26, "I32"},     {27, "I64"},      {28, "F64"},    {29, "IQ1_M"},  {30, "BF16"},   {34, "TQ1_0"},
        {35, "TQ2_0"},   {39, "MXFP4"},    {40, "NVFP4"},  {41, "Q1_0"},   {42, "Q2_0"},   {142, "PQ2_0"},
        {143, "PTQ1_0"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].type == ggml_type) return names[i].name;
    return "unknown";
}

const char *nf_import_shape_str(const nf_import_tensor *t, char *buf, size_t size)
{
    size_t used = 0;
    if (size == 0) return buf;
    buf[0] = '\0';
    int n = snprintf(buf, size, "[");
    used = n > 0 ? (size_t)n : 0;
    for (uint32_t i = 0; i < t->rank && used < size; i++) {
        n = snprintf(buf + used, size - used, "%s%" PRIu64, i ? "," : "", t->shape[i]);
        if (n < 0) break;
        used += (size_t)n;
    }
    if (used < size) snprintf(buf + used, size - used, "]");
    return buf;
}

nf_status nf_import_check_decl(const nf_import_tensor *t, const char *role, nf_error *err)
{
    if (!t) return nf_error_set(err, NF_ERR_USAGE, "import: no %s tensor given", role);
    if (!t->name) return nf_error_set(err, NF_ERR_USAGE, "import: the %s tensor has no name", role);
    if (t->rank > NF_MAX_RANK)
        return nf_import_fail(err, NF_ERR_INVALID, t->name, "rank %" PRIu32 " exceeds %d", t->rank, NF_MAX_RANK);
    if (t->rank > 0 && !t->shape)
        return nf_import_fail(err, NF_ERR_USAGE, t->name, "import: rank %" PRIu32 " without a shape", t->rank);
    return NF_OK;
}

bool nf_import_elements(const nf_import_tensor *t, uint64_t *out)
{
    uint64_t n = 1;
    for (uint32_t i = 0; i < t->rank; i++)
        if (!nf_mul_u64(n, t->shape[i], &n)) return false;
    *out = n;
    return true;
}

/* The last dot-separated component of a name; *prefix_len gets the length before its dot (0
 * when there is none). */
static const char *last_component(const char *name, size_t *prefix_len)
{
    const char *dot = strrchr(name, '.');
    if (!dot) {
        *prefix_len = 0;
        return name;
    }
    *prefix_len = (size_t)(dot - name);
    return dot + 1;
}

nf_status nf_import_expect_member(const nf_import_tensor *t, const nf_import_tensor *codes,
                                  const char *component, const char *what, nf_error *err)
{
    if (t->ggml_type >= 0)
        return nf_import_fail(err, NF_ERR_INVALID, t->name,
                              "is a GGUF tensor (ggml type %d, %s), not the safetensors %s of %s checkpoint",
                              t->ggml_type, nf_import_ggml_name(t->ggml_type), component, what);
    size_t plen, codes_plen;
    const char *comp = last_component(t->name, &plen);
    /* A dialect is recognised by its companion names: a weight_global_scale given as a ModelOpt
     * weight_scale_2 would silently invert the divisor, so names are not taken on trust. */
    if (strcmp(comp, component) != 0)
        return nf_import_fail(err, NF_ERR_INVALID, t->name, "is not a '%s' tensor: %s checkpoint names it '<prefix>.%s'",
                              component, what, component);
    last_component(codes->name, &codes_plen);
    if (t != codes && (plen != codes_plen || strncmp(t->name, codes->name, plen) != 0))
        return nf_import_fail(err, NF_ERR_INVALID, t->name, "does not belong to the same layer as '%s'", codes->name);
    return NF_OK;
}

nf_status nf_import_expect_dtype(const nf_import_tensor *t, const char *dtype, const char *what, nf_error *err)
{
    if (!t->dtype || strcmp(t->dtype, dtype) != 0)
        return nf_import_fail(err, NF_ERR_INVALID, t->name, "dtype %s is not %s, as %s requires",
                              t->dtype ? t->dtype : "(none)", dtype, what);
    return NF_OK;
}

/* ---------------------------------------------------------------- geometry */

nf_status nf_import_geometry(const nf_import *imp, nf_geometry *g, nf_error *err)
{
    if (!imp || !g || !imp->target) return nf_error_set(err, NF_ERR_USAGE, "nf_import_geometry: missing argument");
    if (imp->kind == NF_IMPORT_NVFP4_MODELOPT || imp->kind == NF_IMPORT_NVFP4_COMPRESSED)
        return nf_import_nvfp4_stack(imp, 1, g, err);
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
    case NF_IMPORT_PQ2_0: return out->codes && out->scales;
    case NF_IMPORT_NVFP4_MODELOPT:
    case NF_IMPORT_NVFP4_COMPRESSED: return out->codes8 && out->scales8;
    case NF_IMPORT_FP8_COMPRESSED: return out->codes8 && out->scales;
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
        return nf_import_fail(err, NF_ERR_USAGE, name,
                              "output words hold %" PRIu64 " columns, the source has %" PRIu64, out->cols, imp->cols);
    if (!nf_add_u64(out_row, chunk->rows, &out_end) || out_end > out->rows)
        return nf_import_fail(err, NF_ERR_USAGE, name,
                              "output rows [%" PRIu64 ",+%" PRIu64 ") are outside the %" PRIu64 " rows of the output words",
                              out_row, chunk->rows, out->rows);
    if (!out_arrays_present(imp, out))
        return nf_import_fail(err, NF_ERR_USAGE, name, "output words lack the arrays of a %s tensor", imp->target->name);
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
    case NF_IMPORT_PQ2_0: return nf_import_gguf_rows(imp, chunk, out, out_row, err);
    case NF_IMPORT_NVFP4_MODELOPT:
    case NF_IMPORT_NVFP4_COMPRESSED: return nf_import_nvfp4_rows(imp, chunk, out, out_row, err);
    case NF_IMPORT_FP8_COMPRESSED: return nf_import_fp8_rows(imp, chunk, out, out_row, err);
    case NF_IMPORT_KIND_COUNT: break;
    }
    return nf_error_set(err, NF_ERR_USAGE, "nf_import_rows: the import was not initialised");
}
