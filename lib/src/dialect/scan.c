/* The scan (ninfer/dialect.h): every quantized weight of a safetensors checkpoint identified
 * with its dialect, its companions and the geometry of its scales (docs/dialects.md).
 *
 * Tensors are grouped by module: the name without its last component, for the components a
 * dialect uses (weight, weight_packed, weight_scale, weight_scale_inv, weight_scale_2,
 * weight_global_scale, weight_zero_point, weight_shape, input_scale, input_global_scale).  A
 * module's set of companions and their dtypes say which dialect it is; the declaration
 * (declare.c) must agree and supplies what the tensors cannot (bits, group and block sizes);
 * every shape is checked against the dialect before anything is read. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/escape.h>

#include "common/checked.h"
#include "common/fail.h"
#include "dialect/dialect_internal.h"

static const char *const dialect_names[NF_DIALECT_COUNT] = {
    "none",
    "deepseek_fp8",
    "compressed_tensors_fp8",
    "compressed_tensors_int",
    "compressed_tensors_nvfp4",
    "modelopt_fp8",
    "modelopt_nvfp4",
    "gptq",
    "awq",
    "mlx",
    "compressed_tensors_mxfp4",
    "gpt_oss_mxfp4",
    "fbgemm_fp8",
    "bitsandbytes_4bit",
    "bitsandbytes_int8",
};

const char *nf_dialect_name(nf_dialect_id id) { return (unsigned)id < NF_DIALECT_COUNT ? dialect_names[id] : NULL; }

/* ---------------------------------------------------------------- modules */
enum comp {
    C_WEIGHT,
    C_PACKED,
    C_SCALE,
    C_SCALE_INV,
    C_SCALE_2,
    C_GLOBAL,
    C_ZERO,
    C_SHAPE,
    C_IN_SCALE,
    C_IN_GLOBAL,
    C_COUNT
};
static const char *const comp_names[C_COUNT] = {
    "weight",         "weight_packed",       "weight_scale",      "weight_scale_inv",
    "weight_scale_2", "weight_global_scale", "weight_zero_point", "weight_shape",
    "input_scale",    "input_global_scale",
};

typedef struct entry {
    const char *name; /* the tensor's name */
    size_t stem;      /* bytes of the module name */
    int comp;
    size_t index; /* tensor index */
} entry;

static int cmp_entry(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    size_t n = x->stem < y->stem ? x->stem : y->stem;
    int c = memcmp(x->name, y->name, n);
    if (c) return c;
    if (x->stem != y->stem) return x->stem < y->stem ? -1 : 1;
    return x->comp - y->comp;
}

static bool same_stem(const entry *a, const entry *b)
{
    return a->stem == b->stem && memcmp(a->name, b->name, a->stem) == 0;
}

typedef struct module {
    char *name; /* the module ("model.layers.0.mlp.down_proj") */
    const nf_source_tensor *t[C_COUNT];
    size_t index[C_COUNT];
} module;

/* ---------------------------------------------------------------- messages */
static const char *file_of(const nf_source *src, const nf_source_tensor *t)
{
    return nf_source_file_path(src, t->file);
}

static void shape_str(const nf_source_tensor *t, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (uint32_t i = 0; i < t->rank && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%" PRIu64, i ? "," : "", t->shape[i]);
    if (used < size) snprintf(buf + used, size - used, "]");
}

static bool is_dtype(const nf_source_tensor *t, nf_st_dtype d) { return t && t->dtype == d; }
static bool is_f8(const nf_source_tensor *t) { return is_dtype(t, NF_ST_F8_E4M3) || is_dtype(t, NF_ST_F8_E5M2); }
static bool is_scale_dtype(const nf_source_tensor *t)
{
    return is_dtype(t, NF_ST_F32) || is_dtype(t, NF_ST_BF16) || is_dtype(t, NF_ST_F16);
}

static nf_status expect_dtype_scale(const nf_source *src, const nf_source_tensor *t, const char *what, nf_error *err)
{
    if (is_scale_dtype(t)) return NF_OK;
    return nf_dialect_fail(err, src, t, "dtype %s: %s must be F32, BF16 or F16", t->type_name, what);
}

/* A one-element F32 tensor's word (a global scale), which must be finite and > 0. */
static nf_status read_global(const nf_source *src, const nf_source_tensor *t, const char *what, uint32_t *out,
                             nf_error *err)
{
    char shape[96];
    shape_str(t, shape, sizeof shape);
    if (t->dtype != NF_ST_F32) return nf_dialect_fail(err, src, t, "dtype %s: %s must be F32", t->type_name, what);
    if (t->elements != 1) return nf_dialect_fail(err, src, t, "shape %s: %s is one value", shape, what);
    uint8_t b[4];
    NF_TRY(nf_source_read_bytes(src, t, 0, b, 4, err));
    uint32_t w = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    if ((w & 0x7F800000u) == 0x7F800000u || (w & 0x80000000u) || (w & 0x7FFFFFFFu) == 0) {
        const char *why = (w & 0x7F800000u) == 0x7F800000u ? ((w & 0x7FFFFFu) ? "NaN" : "infinite")
                          : (w & 0x7FFFFFFFu) == 0         ? "zero"
                                                           : "negative";
        return nf_dialect_fail(err, src, t, "%s 0x%08" PRIX32 " is %s: it must be finite and > 0", what, w, why);
    }
    *out = w;
    return NF_OK;
}

/* ---------------------------------------------------------------- the scheme of a module */
/* The compressed-tensors scheme of a module: the group whose targets match it best (an exact
 * name beats a regular expression, which beats a class name); NULL with an error when none or
 * several different ones do. */
static nf_status ct_scheme_of(const nf_dialects *d, const module *m, const nf_source_tensor *t, const ct_scheme **out,
                              nf_error *err)
{
    int best = 0;
    const ct_scheme *found = NULL;
    bool several = false;
    for (size_t i = 0; i < d->decl.nschemes; i++) {
        const ct_scheme *s = &d->decl.schemes[i];
        int level = nf_dialect_list_match(&s->targets, m->name);
        if (level == 0 || level < best) continue;
        if (level > best) {
            best = level;
            found = s;
            several = false;
        } else if (found && (found->is_float != s->is_float || found->num_bits != s->num_bits ||
                             strcmp(found->strategy, s->strategy) != 0 || found->group_size != s->group_size ||
                             found->symmetric != s->symmetric || memcmp(found->block, s->block, sizeof s->block))) {
            several = true;
        }
    }
    if (!found)
        return nf_dialect_fail(err, d->src, t, "quantized, but no group of %s's config_groups targets module '%s'",
                               d->decl.path, m->name);
    if (several)
        return nf_dialect_fail(err, d->src, t,
                               "groups of %s's config_groups with different schemes target module '%s' "
                               "equally: conflicting dialect markers",
                               d->decl.path, m->name);
    *out = found;
    return NF_OK;
}

/* The scale grid of a strategy over [N, K] into q; the scale tensor must have that shape. */
static nf_status set_grid(const nf_dialects *d, nf_qweight *q, const char *strategy, uint64_t br, uint64_t bc,
                          nf_error *err)
{
    uint64_t n = q->shape[0], k = q->shape[1];
    q->strategy = strategy;
    q->block_rows = br ? br : 1;
    q->block_cols = bc ? bc : 1;
    q->scale_rows = (n + q->block_rows - 1) / q->block_rows;
    q->scale_cols = (k + q->block_cols - 1) / q->block_cols;
    const nf_source_tensor *s = q->scale;
    bool ok;
    if (q->scale_rows == 1 && q->scale_cols == 1) ok = s->elements == 1;
    else if (q->scale_cols == 1 && s->rank == 1) ok = s->shape[0] == q->scale_rows;
    else ok = s->rank == 2 && s->shape[0] == q->scale_rows && s->shape[1] == q->scale_cols;
    if (ok) return NF_OK;
    char shape[96];
    shape_str(s, shape, sizeof shape);
    return nf_dialect_fail(err, d->src, s,
                           "shape %s is not the [%" PRIu64 ",%" PRIu64 "] scales of %s quantization (%" PRIu64
                           "x%" PRIu64 " values each) of the [%" PRIu64 ",%" PRIu64 "] weight '%s'",
                           shape, q->scale_rows, q->scale_cols, strategy, q->block_rows, q->block_cols, n, k,
                           q->codes->name);
}

/* A strategy from the scale's shape alone (no declaration says it): one value, one per row, a
 * group size that divides K, or the customary 128x128 blocks. */
static nf_status infer_grid(const nf_dialects *d, nf_qweight *q, nf_error *err)
{
    const nf_source_tensor *s = q->scale;
    uint64_t n = q->shape[0], k = q->shape[1];
    if (s->elements == 1) return set_grid(d, q, "tensor", n, k, err);
    if ((s->rank == 1 && s->shape[0] == n) || (s->rank == 2 && s->shape[0] == n && s->shape[1] == 1))
        return set_grid(d, q, "channel", 1, k, err);
    if (s->rank == 2 && s->shape[0] == n && s->shape[1] > 0 && k % s->shape[1] == 0)
        return set_grid(d, q, "group", 1, k / s->shape[1], err);
    if (s->rank == 2 && s->shape[0] == (n + 127) / 128 && s->shape[1] == (k + 127) / 128)
        return set_grid(d, q, "block", 128, 128, err);
    char shape[96];
    shape_str(s, shape, sizeof shape);
    return nf_dialect_fail(err, d->src, s,
                           "shape %s fits no scale layout of the [%" PRIu64 ",%" PRIu64
                           "] weight '%s' (one value, one per "
                           "row, groups that divide K, 128x128 blocks) and no declaration gives one",
                           shape, n, k, q->codes->name);
}

/* The grid a compressed-tensors scheme declares. */
static nf_status scheme_grid(const nf_dialects *d, nf_qweight *q, const ct_scheme *s, nf_error *err)
{
    uint64_t n = q->shape[0], k = q->shape[1];
    if (!strcmp(s->strategy, "tensor")) return set_grid(d, q, "tensor", n, k, err);
    if (!strcmp(s->strategy, "channel")) return set_grid(d, q, "channel", 1, k, err);
    if (!strcmp(s->strategy, "group") || !strcmp(s->strategy, "tensor_group"))
        return set_grid(d, q, "group", 1, s->group_size ? s->group_size : 16, err);
    if (!strcmp(s->strategy, "block")) return set_grid(d, q, "block", s->block[0], s->block[1], err);
    return infer_grid(d, q, err);
}

/* ---------------------------------------------------------------- dialects */
static nf_status matrix(const nf_dialects *d, const nf_source_tensor *t, const char *what, nf_error *err)
{
    if (t->rank == 2 && t->shape[0] > 0 && t->shape[1] > 0) return NF_OK;
    char shape[96];
    shape_str(t, shape, sizeof shape);
    return nf_dialect_fail(err, d->src, t, "shape %s: %s is a non-empty matrix", shape, what);
}

static nf_status unexpected(const nf_dialects *d, const module *m, nf_qweight *q, const int *comps, nf_error *err)
{
    for (const int *c = comps; *c >= 0; c++)
        if (m->t[*c])
            return nf_dialect_fail(err, d->src, m->t[*c], "a %s weight has no %s: conflicting dialect markers",
                                   nf_dialect_name(q->dialect), comp_names[*c]);
    return NF_OK;
}

static nf_status fp8_weight(nf_dialects *d, const module *m, nf_qweight *q, nf_error *err)
{
    const nf_source_tensor *c = q->codes;
    NF_TRY(matrix(d, c, "an FP8 weight", err));
    if (!is_f8(c))
        return nf_dialect_fail(err, d->src, c, "dtype %s: an FP8 weight holds F8_E4M3 or F8_E5M2 codes", c->type_name);
    q->codes_kind = c->dtype == NF_ST_F8_E5M2 ? NF_QCODES_E5M2 : NF_QCODES_E4M3;
    q->bits = 8;
    q->shape[0] = c->shape[0];
    q->shape[1] = c->shape[1];
    NF_TRY(expect_dtype_scale(d->src, q->scale, "an FP8 scale", err));
    static const int extra[] = {C_SCALE_2, C_GLOBAL, C_ZERO, C_SHAPE, -1};
    NF_TRY(unexpected(d, m, q, extra, err));
    if (q->dialect == NF_DIALECT_DEEPSEEK_FP8) {
        if (d->decl.kind == DECL_DEEPSEEK && d->decl.e5m2 != (q->codes_kind == NF_QCODES_E5M2)) {
            if (!d->decl.has_fmt)
                return nf_dialect_fail(err, d->src, c,
                                       "dtype %s, but %s declares no fmt: quant_method fp8 codes are e4m3 "
                                       "unless fmt says e5m2",
                                       c->type_name, d->decl.path);
            return nf_dialect_fail(err, d->src, c, "dtype %s, but %s declares fmt %s", c->type_name, d->decl.path,
                                   d->decl.e5m2 ? "e5m2" : "e4m3");
        }
        uint64_t br = d->decl.has_block ? d->decl.block[0] : 128, bc = d->decl.has_block ? d->decl.block[1] : 128;
        return set_grid(d, q, "block", br, bc, err);
    }
    if (d->decl.kind == DECL_CT) {
        const ct_scheme *s;
        NF_TRY(ct_scheme_of(d, m, c, &s, err));
        if (!s->is_float || s->num_bits != 8)
            return nf_dialect_fail(err, d->src, c, "FP8 codes, but group '%s' of %s declares %s %u-bit weights",
                                   s->name, d->decl.path, s->is_float ? "float" : "int", s->num_bits);
        return scheme_grid(d, q, s, err);
    }
    if (d->decl.kind == DECL_MODELOPT) {
        if (!strcmp(d->decl.algo, "FP8")) return set_grid(d, q, "tensor", q->shape[0], q->shape[1], err);
        if (!strcmp(d->decl.algo, "FP8_PER_CHANNEL_PER_TOKEN")) return set_grid(d, q, "channel", 1, q->shape[1], err);
        if (!strcmp(d->decl.algo, "FP8_PB_WO")) return set_grid(d, q, "block", 128, 128, err);
        return nf_dialect_fail(err, d->src, c, "FP8 codes, but %s declares ModelOpt %s: conflicting dialect markers",
                               d->decl.path, d->decl.algo);
    }
    if (d->decl.kind == DECL_FBGEMM) return set_grid(d, q, "channel", 1, q->shape[1], err);
    return infer_grid(d, q, err);
}

static nf_status read_weight_shape(const nf_dialects *d, const nf_source_tensor *t, uint64_t out[2], nf_error *err);

/* An FP4 weight's (NVFP4, MXFP4) compressed-tensors weight_shape, which must be the codes' [N, K]
 * (FP4 codes are never padded), and its config group, which must declare 4-bit floats in groups
 * of `group`. */
static nf_status fp4_shape_and_scheme(nf_dialects *d, const module *m, nf_qweight *q, const char *format,
                                      uint64_t group, nf_error *err)
{
    const nf_source_tensor *c = q->codes;
    if (m->t[C_SHAPE]) {
        uint64_t ws[2] = {0, 0};
        q->shape_tensor = m->t[C_SHAPE];
        NF_TRY(read_weight_shape(d, m->t[C_SHAPE], ws, err));
        if (ws[0] != q->shape[0] || ws[1] != q->shape[1])
            return nf_dialect_fail(err, d->src, m->t[C_SHAPE],
                                   "[%" PRIu64 ",%" PRIu64 "], but '%s' holds [%" PRIu64 ",%" PRIu64 "] %s values (two "
                                   "codes per byte)",
                                   ws[0], ws[1], c->name, q->shape[0], q->shape[1], format);
    }
    if (d->decl.kind != DECL_CT) return NF_OK;
    const ct_scheme *sc;
    NF_TRY(ct_scheme_of(d, m, c, &sc, err));
    if (!sc->is_float || sc->num_bits != 4 || (sc->group_size && sc->group_size != group))
        return nf_dialect_fail(err, d->src, c, "%s codes, but group '%s' of %s declares %s %u-bit weights%s%s", format,
                               sc->name, d->decl.path, sc->is_float ? "float" : "int", sc->num_bits,
                               sc->group_size && sc->group_size != group ? " in groups other than " : "",
                               sc->group_size && sc->group_size != group ? (group == 16 ? "16" : "32") : "");
    return NF_OK;
}

/* compressed-tensors mxfp4-pack-quantized: weight_packed U8 [N, K/2] (checked by the caller) and
 * weight_scale E8M0 [N, ceil(K/32)], nothing else: MXFP4 has no global scale. */
static nf_status mxfp4_weight(nf_dialects *d, const module *m, nf_qweight *q, nf_error *err)
{
    q->dialect = NF_DIALECT_CT_MXFP4;
    static const int extra[] = {C_SCALE_2, C_GLOBAL, C_ZERO, -1};
    NF_TRY(unexpected(d, m, q, extra, err));
    NF_TRY(fp4_shape_and_scheme(d, m, q, "MXFP4", 32, err));
    return set_grid(d, q, "group", 1, 32, err);
}

static nf_status nvfp4_weight(nf_dialects *d, const module *m, nf_qweight *q, nf_error *err)
{
    const nf_source_tensor *c = q->codes, *s = q->scale;
    bool modelopt = q->dialect == NF_DIALECT_MODELOPT_NVFP4;
    NF_TRY(matrix(d, c, "an NVFP4 weight", err));
    q->codes_kind = NF_QCODES_E2M1;
    q->bits = 4;
    q->shape[0] = c->shape[0];
    if (!nf_mul_u64(c->shape[1], 2, &q->shape[1])) return nf_dialect_fail(err, d->src, c, "K overflows");
    if (q->shape[1] % 16)
        return nf_dialect_fail(err, d->src, c,
                               "K = %" PRIu64 " (two codes per byte) is not a multiple of 16, the NVFP4 block",
                               q->shape[1]);
    if ((s->dtype == NF_ST_U8 || s->dtype == NF_ST_F8_E8M0) && s->rank == 2 && s->shape[0] == q->shape[0] &&
        s->shape[1] == (q->shape[1] + 31) / 32) {
        /* E8M0 scales per 32 values: MXFP4 (compressed-tensors mxfp4-pack-quantized) even when no
         * format says so, not a broken NVFP4 weight (docs/dialects.md "MXFP4") */
        if (!modelopt) return mxfp4_weight(d, m, q, err);
        char where[2048], how[256];
        snprintf(where, sizeof where, "%s: tensor '%s'", file_of(d->src, s), nf_esc(s->name).s);
        snprintf(how, sizeof how,
                 "E2M1 codes, two per U8 <p>.weight, with %s E8M0 scales per 32 values, recognised by the "
                 "tensors",
                 s->type_name);
        return nf_dialect_not_read(err, where, "MXFP4 (ModelOpt)", how);
    }
    if (s->dtype != NF_ST_F8_E4M3)
        return nf_dialect_fail(err, d->src, s, "dtype %s: NVFP4 block scales are F8_E4M3", s->type_name);
    const nf_source_tensor *g = modelopt ? m->t[C_SCALE_2] : m->t[C_GLOBAL];
    if (!g)
        return nf_dialect_fail(err, d->src, c, "its %s.%s is in no shard: a %s weight needs it", m->name,
                               modelopt ? "weight_scale_2" : "weight_global_scale", nf_dialect_name(q->dialect));
    q->global = g;
    q->global_op = modelopt ? NF_QGLOBAL_MUL : NF_QGLOBAL_DIV;
    NF_TRY(read_global(d->src, g, modelopt ? "weight_scale_2" : "weight_global_scale", &q->global_bits, err));
    static const int extra_mo[] = {C_GLOBAL, C_ZERO, C_SHAPE, -1};
    static const int extra_ct[] = {C_SCALE_2, C_ZERO, -1};
    NF_TRY(unexpected(d, m, q, modelopt ? extra_mo : extra_ct, err));
    NF_TRY(fp4_shape_and_scheme(d, m, q, "NVFP4", 16, err));
    if (d->decl.kind == DECL_MODELOPT && strcmp(d->decl.algo, "NVFP4") != 0)
        return nf_dialect_fail(err, d->src, c, "NVFP4 codes, but %s declares ModelOpt %s: conflicting dialect markers",
                               d->decl.path, d->decl.algo);
    return set_grid(d, q, "group", 1, 16, err);
}

/* weight_shape: [N, K] as two integers. */
static nf_status read_weight_shape(const nf_dialects *d, const nf_source_tensor *t, uint64_t out[2], nf_error *err)
{
    char shape[96];
    shape_str(t, shape, sizeof shape);
    if ((t->dtype != NF_ST_I64 && t->dtype != NF_ST_I32) || t->rank != 1 || t->shape[0] != 2)
        return nf_dialect_fail(err, d->src, t, "%s %s: a weight_shape is two integers (I64 or I32 [2])", t->type_name,
                               shape);
    uint8_t b[16];
    size_t es = t->dtype == NF_ST_I64 ? 8 : 4;
    NF_TRY(nf_source_read_bytes(d->src, t, 0, b, 2 * es, err));
    for (size_t i = 0; i < 2; i++) {
        int64_t v = 0;
        if (es == 8) {
            uint64_t u = 0;
            for (size_t k = 0; k < 8; k++) u |= (uint64_t)b[8 * i + k] << (8 * k);
            v = (int64_t)u;
        } else {
            uint32_t u = (uint32_t)b[4 * i] | (uint32_t)b[4 * i + 1] << 8 | (uint32_t)b[4 * i + 2] << 16 |
                         (uint32_t)b[4 * i + 3] << 24;
            v = (int32_t)u;
        }
        if (v < 1)
            return nf_dialect_fail(err, d->src, t, "dimension %zu is %" PRId64 ": a weight has rows and columns", i, v);
        out[i] = (uint64_t)v;
    }
    return NF_OK;
}

static nf_status int_weight(nf_dialects *d, const module *m, nf_qweight *q, nf_error *err)
{
    const nf_source_tensor *c = q->codes;
    bool packed = c->dtype == NF_ST_I32;
    NF_TRY(matrix(d, c, packed ? "a packed weight" : "an int8 weight", err));
    const ct_scheme *s = NULL;
    if (d->decl.kind == DECL_CT) {
        NF_TRY(ct_scheme_of(d, m, c, &s, err));
        if (s->is_float)
            return nf_dialect_fail(err, d->src, c, "integer codes, but group '%s' of %s declares float weights",
                                   s->name, d->decl.path);
    }
    uint64_t ws[2] = {0, 0};
    if (m->t[C_SHAPE]) {
        q->shape_tensor = m->t[C_SHAPE];
        NF_TRY(read_weight_shape(d, m->t[C_SHAPE], ws, err));
        if (ws[0] != c->shape[0])
            return nf_dialect_fail(err, d->src, m->t[C_SHAPE], "N = %" PRIu64 ", but '%s' has %" PRIu64 " rows", ws[0],
                                   c->name, c->shape[0]);
    }
    q->shape[0] = c->shape[0];
    if (packed) {
        q->codes_kind = NF_QCODES_INT_PACKED;
        unsigned bits = s ? s->num_bits : 0;
        if (!bits && ws[1]) {
            /* no declaration: the bits that make weight_shape's K fill the packed words */
            bool four = (ws[1] + 7) / 8 == c->shape[1], eight = (ws[1] + 3) / 4 == c->shape[1];
            bits = four && !eight ? 4 : eight && !four ? 8 : 0;
        }
        if (!bits)
            return nf_dialect_fail(err, d->src, c,
                                   "packed integer codes of unknown width: no declaration gives num_bits and "
                                   "weight_shape does not tell 4 from 8 bits");
        q->bits = bits;
        uint64_t per = 32 / bits, k = ws[1] ? ws[1] : c->shape[1] * per;
        if ((k + per - 1) / per != c->shape[1])
            return nf_dialect_fail(err, d->src, c,
                                   "%" PRIu64 " int32 words per row do not hold K = %" PRIu64 " %u-bit codes (%" PRIu64
                                   " per word)",
                                   c->shape[1], k, bits, per);
        q->shape[1] = k;
    } else {
        if (c->dtype != NF_ST_I8)
            return nf_dialect_fail(err, d->src, c, "dtype %s: integer codes are I32 words or I8", c->type_name);
        if (s && s->num_bits != 8)
            return nf_dialect_fail(err, d->src, c, "int8 codes, but group '%s' of %s declares %u-bit weights", s->name,
                                   d->decl.path, s->num_bits);
        if (ws[1] && ws[1] != c->shape[1])
            return nf_dialect_fail(err, d->src, m->t[C_SHAPE], "K = %" PRIu64 ", but '%s' has %" PRIu64 " columns",
                                   ws[1], c->name, c->shape[1]);
        q->codes_kind = NF_QCODES_INT8;
        q->bits = 8;
        q->shape[1] = c->shape[1];
    }
    NF_TRY(expect_dtype_scale(d->src, q->scale, "an integer weight's scale", err));
    static const int extra[] = {C_SCALE_2, C_GLOBAL, -1};
    NF_TRY(unexpected(d, m, q, extra, err));
    NF_TRY(s ? scheme_grid(d, q, s, err) : infer_grid(d, q, err));
    const nf_source_tensor *z = m->t[C_ZERO];
    if (s && s->symmetric == 0 && !z)
        return nf_dialect_fail(err, d->src, c,
                               "group '%s' of %s declares asymmetric weights, but %s.weight_zero_point is in no "
                               "shard",
                               s->name, d->decl.path, m->name);
    if (s && s->symmetric == 1 && z)
        return nf_dialect_fail(err, d->src, z,
                               "group '%s' of %s declares symmetric weights: a zero point contradicts it", s->name,
                               d->decl.path);
    if (z) {
        q->zero_point = z;
        uint64_t per = 32 / q->bits;
        char shape[96];
        shape_str(z, shape, sizeof shape);
        bool rank_ok = z->rank == 2 || (z->rank == 1 && q->scale_cols == 1);
        uint64_t zr = z->rank >= 1 ? z->shape[0] : 0, zc = z->rank == 2 ? z->shape[1] : 1;
        uint64_t packed_rows = (q->scale_rows + per - 1) / per;
        if (rank_ok && z->dtype == NF_ST_I8 && zr == q->scale_rows && zc == q->scale_cols) q->zero_point_packed = false;
        else if (rank_ok && z->dtype == NF_ST_I32 && zr == packed_rows && zc == q->scale_cols)
            q->zero_point_packed = true;
        else
            return nf_dialect_fail(err, d->src, z,
                                   "%s %s: zero points of the [%" PRIu64 ",%" PRIu64 "] scale grid are I8 [%" PRIu64
                                   ",%" PRIu64 "] or int32 words packed along the rows [%" PRIu64 ",%" PRIu64 "]",
                                   z->type_name, shape, q->scale_rows, q->scale_cols, q->scale_rows, q->scale_cols,
                                   packed_rows, q->scale_cols);
    }
    return NF_OK;
}

/* ---------------------------------------------------------------- one module */
static nf_status ignored_conflict(const nf_dialects *d, const module *m, const nf_source_tensor *t, nf_error *err)
{
    if (d->decl.kind == DECL_NONE || nf_dialect_list_match(&d->decl.ignore, m->name) < 2) return NF_OK;
    return nf_dialect_fail(err, d->src, t,
                           "module '%s' is left unquantized by %s's ignore list, but this tensor quantizes it: "
                           "conflicting dialect markers",
                           m->name, d->decl.path);
}

static nf_status check_decl_kind(const nf_dialects *d, const nf_qweight *q, nf_error *err)
{
    decl_kind want = q->dialect == NF_DIALECT_DEEPSEEK_FP8                                              ? DECL_DEEPSEEK
                     : q->dialect == NF_DIALECT_MODELOPT_FP8 || q->dialect == NF_DIALECT_MODELOPT_NVFP4 ? DECL_MODELOPT
                     : q->dialect == NF_DIALECT_FBGEMM_FP8                                              ? DECL_FBGEMM
                                                                                                        : DECL_CT;
    if (d->decl.kind == DECL_NONE || d->decl.kind == want) return NF_OK;
    return nf_dialect_fail(err, d->src, q->scale,
                           "the companions of a %s weight, but %s declares %s: conflicting dialect markers",
                           nf_dialect_name(q->dialect), d->decl.path, d->decl.what);
}

static nf_status resolve_module(nf_dialects *d, const module *m, nf_error *err)
{
    const nf_source_tensor *const *t = m->t;
    bool has_quant = t[C_SCALE] || t[C_SCALE_INV] || t[C_SCALE_2] || t[C_GLOBAL] || t[C_ZERO] || t[C_SHAPE];
    const nf_source_tensor *w = t[C_WEIGHT], *p = t[C_PACKED];
    if (!w && !p) {
        for (int c = C_SCALE; c <= C_SHAPE; c++) {
            if (!t[c]) continue;
            /* a <p>.weight of another dtype was no module entry: it is there, but not codes */
            char wname[2048];
            const nf_source_tensor *plain = NULL;
            if ((size_t)snprintf(wname, sizeof wname, "%s.weight", m->name) < sizeof wname)
                plain = nf_source_find(d->src, wname);
            if (plain)
                return nf_dialect_fail(err, d->src, t[c],
                                       "a companion of the weight '%s', which is %s: no dialect's codes are "
                                       "%s (F8_E4M3, F8_E5M2, U8, I8, or I32 weight_packed)",
                                       plain->name, plain->type_name, plain->type_name);
            return nf_dialect_fail(err, d->src, t[c],
                                   "a companion of the weight '%s.weight', which is in no shard of the "
                                   "checkpoint",
                                   m->name);
        }
        for (int c = C_IN_SCALE; c <= C_IN_GLOBAL; c++)
            if (t[c]) d->role[m->index[c]] = NF_QROLE_ACTIVATION;
        return NF_OK;
    }
    if (w && p)
        return nf_dialect_fail(
            err, d->src, w,
            "'%s' holds the codes of the same weight (ModelOpt names them <p>.weight, "
            "compressed-tensors <p>.weight_packed): the checkpoint is ambiguous; keep one of the two",
            p->name);
    if (!has_quant) {
        if (p) return nf_dialect_fail(err, d->src, p, "packed codes without %s.weight_scale", m->name);
        if (is_f8(w) && d->decl.kind != DECL_NONE && nf_dialect_list_match(&d->decl.ignore, m->name) < 2)
            return nf_dialect_fail(err, d->src, w,
                                   "%s codes without a scale: %s declares a quantized checkpoint (%s) and does "
                                   "not leave module '%s' unquantized, but %s.weight_scale%s is in no shard",
                                   w->type_name, d->decl.path, d->decl.what, m->name, m->name,
                                   d->decl.kind == DECL_DEEPSEEK ? "_inv" : "");
        for (int c = C_IN_SCALE; c <= C_IN_GLOBAL; c++)
            if (t[c]) d->role[m->index[c]] = NF_QROLE_ACTIVATION;
        return NF_OK;
    }
    const nf_source_tensor *codes = p ? p : w;
    NF_TRY(ignored_conflict(d, m, codes, err));
    nf_qweight q = {0};
    q.codes = codes;
    if (t[C_SCALE_INV]) {
        if (t[C_SCALE])
            return nf_dialect_fail(err, d->src, t[C_SCALE_INV],
                                   "'%s' scales the same weight: weight_scale_inv (DeepSeek) and "
                                   "weight_scale are conflicting dialect markers",
                                   t[C_SCALE]->name);
        if (p)
            return nf_dialect_fail(err, d->src, t[C_SCALE_INV], "a DeepSeek FP8 scale of packed codes '%s'", p->name);
        q.dialect = NF_DIALECT_DEEPSEEK_FP8;
        q.scale = t[C_SCALE_INV];
    } else {
        q.scale = t[C_SCALE];
        if (!q.scale)
            return nf_dialect_fail(err, d->src, codes, "its %s.weight_scale is in no shard of the checkpoint", m->name);
        if (p) q.dialect = p->dtype == NF_ST_U8 ? NF_DIALECT_CT_NVFP4 : NF_DIALECT_CT_INT;
        else if (w->dtype == NF_ST_U8) q.dialect = NF_DIALECT_MODELOPT_NVFP4;
        else if (is_f8(w))
            q.dialect = d->decl.kind == DECL_MODELOPT ? NF_DIALECT_MODELOPT_FP8
                        : d->decl.kind == DECL_FBGEMM ? NF_DIALECT_FBGEMM_FP8
                                                      : NF_DIALECT_CT_FP8;
        else if (w->dtype == NF_ST_I8) q.dialect = NF_DIALECT_CT_INT;
        else
            return nf_dialect_fail(err, d->src, w, "dtype %s with a weight_scale: no dialect stores %s codes",
                                   w->type_name, w->type_name);
        if (p && p->dtype != NF_ST_U8 && p->dtype != NF_ST_I32)
            return nf_dialect_fail(err, d->src, p, "dtype %s: packed codes are U8 (NVFP4) or I32 (integers)",
                                   p->type_name);
    }
    NF_TRY(check_decl_kind(d, &q, err));
    switch (q.dialect) {
    case NF_DIALECT_DEEPSEEK_FP8:
    case NF_DIALECT_CT_FP8:
    case NF_DIALECT_FBGEMM_FP8:
    case NF_DIALECT_MODELOPT_FP8: NF_TRY(fp8_weight(d, m, &q, err)); break;
    case NF_DIALECT_CT_NVFP4:
    case NF_DIALECT_MODELOPT_NVFP4: NF_TRY(nvfp4_weight(d, m, &q, err)); break;
    default: NF_TRY(int_weight(d, m, &q, err)); break;
    }
    q.activation[0] = t[C_IN_SCALE];
    q.activation[1] = t[C_IN_GLOBAL];
    uint32_t wi = (uint32_t)d->nweights;
    d->weights[d->nweights++] = q;
    for (int c = 0; c < C_COUNT; c++) {
        if (!t[c]) continue;
        d->role[m->index[c]] = t[c] == codes                         ? NF_QROLE_WEIGHT
                               : c == C_IN_SCALE || c == C_IN_GLOBAL ? NF_QROLE_ACTIVATION
                                                                     : NF_QROLE_COMPANION;
        d->owner[m->index[c]] = wi;
    }
    return NF_OK;
}

/* ---------------------------------------------------------------- layouts not read yet */
#define ANY_DTYPE (-1)
/* The tensor `prefix` + `last` (prefix: a name up to and including its last dot), of dtype
 * `dtype` unless it is ANY_DTYPE. */
static const nf_source_tensor *sibling(const nf_source *src, const char *prefix, size_t plen, const char *last,
                                       int dtype)
{
    char name[2048];
    if ((size_t)snprintf(name, sizeof name, "%.*s%s", (int)plen, prefix, last) >= sizeof name) return NULL;
    const nf_source_tensor *t = nf_source_find(src, name);
    return t && (dtype == ANY_DTYPE || (int)t->dtype == dtype) ? t : NULL;
}

/* The quantized format tensor t shows by its name, dtype and siblings, of a producer no dialect
 * reads (docs/dialects.md, "Quantized checkpoints not read yet"), with how it was recognised;
 * false for any other tensor.  A checkpoint needs no declaration to be one of these: the
 * packed codes would become int32 objects and the scales weights of their own. */
static bool foreign_layout(const nf_source *src, const nf_source_tensor *t, const char **format, char *how, size_t size)
{
    const char *name = t->name, *dot = strrchr(name, '.');
    const char *last = dot ? dot + 1 : name;
    size_t plen = dot ? (size_t)(dot + 1 - name) : 0;
    /* Each layout is recognised by its codes tensor together with a companion, never by a name
     * alone: an ordinary checkpoint may hold a tensor named like one companion (an attention
     * `q_scale` beside FP8 k/v scales, say), and must not be refused for it. */
    if (!strcmp(last, "q_weight") &&
        (sibling(src, name, plen, "q_scale", ANY_DTYPE) || sibling(src, name, plen, "q_invperm", ANY_DTYPE))) {
        *format = "EXL2";
        snprintf(how, size,
                 "exllamav2: q_weight, q_invperm, q_scale, q_scale_max and q_groups, recognised by the "
                 "tensor names (config.json says nothing unless converted with -cf)");
        return true;
    }
    if (!strcmp(last, "W_q") && sibling(src, name, plen, "zero", ANY_DTYPE)) {
        *format = "HQQ";
        snprintf(how, size, "W_q codes with zero and scale, recognised by the tensor names");
        return true;
    }
    return false;
}

/* The first tensor (in file order) of a quantized layout no dialect reads: refused. */
static nf_status refuse_foreign_layouts(const nf_source *src, nf_error *err)
{
    size_t n = nf_source_tensor_count(src);
    for (size_t i = 0; i < n; i++) {
        const nf_source_tensor *t = nf_source_tensor_at(src, i);
        const char *format = NULL;
        char how[1024], where[2048];
        if (!foreign_layout(src, t, &format, how, sizeof how)) continue;
        snprintf(where, sizeof where, "%s: tensor '%s'", file_of(src, t), nf_esc(t->name).s);
        return nf_dialect_not_read(err, where, format, how);
    }
    return NF_OK;
}

/* ---------------------------------------------------------------- scan */
static int comp_of(const char *last)
{
    for (int c = 0; c < C_COUNT; c++)
        if (!strcmp(last, comp_names[c])) return c;
    return -1;
}

nf_status nf_dialects_scan(const nf_source *src, nf_dialects **out, nf_error *err)
{
    if (!src || !out) return nf_error_set(err, NF_ERR_USAGE, "nf_dialects_scan: missing argument");
    *out = NULL;
    nf_dialects *d = calloc(1, sizeof *d);
    size_t n = nf_source_tensor_count(src);
    if (!d) return nf_common_nomem(err);
    d->src = src;
    d->role = calloc(n ? n : 1, 1);
    d->owner = malloc((n ? n : 1) * sizeof *d->owner);
    entry *es = malloc((n ? n : 1) * sizeof *es);
    nf_status st = NF_OK;
    if (!d->role || !d->owner || !es) st = nf_common_nomem(err);
    for (size_t i = 0; st == NF_OK && i < n; i++) d->owner[i] = UINT32_MAX;
    if (st == NF_OK && nf_source_kind_of(src) != NF_SOURCE_GGUF) st = nf_dialect_read_decl(src, &d->decl, err);
    if (st == NF_OK && nf_source_kind_of(src) != NF_SOURCE_GGUF) st = refuse_foreign_layouts(src, err);
    size_t ne = 0;
    for (size_t i = 0; st == NF_OK && nf_source_kind_of(src) != NF_SOURCE_GGUF && i < n; i++) {
        const nf_source_tensor *t = nf_source_tensor_at(src, i);
        const char *dot = strrchr(t->name, '.');
        if (!dot || dot == t->name) continue;
        int c = comp_of(dot + 1);
        if (c < 0) continue;
        /* a plain <p>.weight is a module only when it may be quantized codes */
        if (c == C_WEIGHT && !is_f8(t) && t->dtype != NF_ST_U8 && t->dtype != NF_ST_I8) continue;
        es[ne++] = (entry){t->name, (size_t)(dot - t->name), c, i};
    }
    if (st == NF_OK) qsort(es, ne, sizeof *es, cmp_entry);
    /* one module per run of entries with the same stem, at most one weight each */
    size_t nmod = 0;
    for (size_t i = 0; i < ne; i++) nmod += i == 0 || !same_stem(&es[i], &es[i - 1]);
    if (st == NF_OK && !(d->weights = calloc(nmod ? nmod : 1, sizeof *d->weights))) st = nf_common_nomem(err);
    for (size_t i = 0; st == NF_OK && i < ne;) {
        size_t j = i;
        module m = {0};
        while (j < ne && same_stem(&es[j], &es[i])) {
            m.t[es[j].comp] = nf_source_tensor_at(src, es[j].index);
            m.index[es[j].comp] = es[j].index;
            j++;
        }
        if (!(m.name = strndup(es[i].name, es[i].stem))) st = nf_common_nomem(err);
        if (st == NF_OK) st = resolve_module(d, &m, err);
        free(m.name);
        i = j;
    }
    free(es);
    if (st == NF_OK) st = nf_dialect_scan_packed(d, err);
    if (st == NF_OK) st = nf_dialect_scan_mxfp4(d, err);
    if (st == NF_OK) st = nf_dialect_scan_fbgemm_experts(d, err);
    if (st == NF_OK) st = nf_dialect_scan_bnb(d, err);
    if (st == NF_OK) {
        if (d->nweights && d->decl.kind != DECL_NONE) snprintf(d->declared, sizeof d->declared, "%s", d->decl.what);
        else if (d->nweights) snprintf(d->declared, sizeof d->declared, "companion tensor names");
        else if (d->decl.kind != DECL_NONE) snprintf(d->declared, sizeof d->declared, "%s", d->decl.what);
    }
    if (st != NF_OK) {
        nf_dialects_free(d);
        return st;
    }
    *out = d;
    return NF_OK;
}

void nf_dialects_free(nf_dialects *d)
{
    if (!d) return;
    nf_dialect_free_decl(&d->decl);
    free(d->weights);
    free(d->role);
    free(d->owner);
    free(d);
}

const char *nf_dialects_declared(const nf_dialects *d) { return d && d->declared[0] ? d->declared : NULL; }
size_t nf_dialects_weight_count(const nf_dialects *d) { return d ? d->nweights : 0; }
const nf_qweight *nf_dialects_weight_at(const nf_dialects *d, size_t index)
{
    return d && index < d->nweights ? &d->weights[index] : NULL;
}

nf_qrole nf_dialects_role(const nf_dialects *d, const nf_source_tensor *t, const nf_qweight **weight)
{
    if (weight) *weight = NULL;
    size_t i = d ? nf_source_tensor_index(d->src, t) : SIZE_MAX;
    if (i == SIZE_MAX) return NF_QROLE_PLAIN;
    if (weight && d->owner[i] != UINT32_MAX) *weight = &d->weights[d->owner[i]];
    return (nf_qrole)d->role[i];
}

void nf_qweight_describe(const nf_qweight *q, char *buf, size_t size)
{
    if (!q || !buf || !size) return;
    if (q->dialect == NF_DIALECT_BNB_4BIT) {
        size_t len = strlen(q->shape_tensor->name);
        snprintf(buf, size, "bitsandbytes_4bit: %s codes, absmax per %" PRIu64 " values%s",
                 len > 3 && !strcmp(q->shape_tensor->name + len - 3, "fp4") ? "FP4" : "NF4", q->block_cols,
                 q->nested_absmax ? ", double-quantized" : "");
        return;
    }
    char grid[64];
    if (!strcmp(q->strategy, "tensor")) snprintf(grid, sizeof grid, "one scale");
    else if (!strcmp(q->strategy, "channel")) snprintf(grid, sizeof grid, "per-row scales");
    else if (!strcmp(q->strategy, "group")) snprintf(grid, sizeof grid, "group %" PRIu64 " scales", q->block_cols);
    else snprintf(grid, sizeof grid, "block %" PRIu64 "x%" PRIu64 " scales", q->block_rows, q->block_cols);
    const char *codes = q->codes_kind == NF_QCODES_E4M3   ? "E4M3"
                        : q->codes_kind == NF_QCODES_E5M2 ? "E5M2"
                        : q->codes_kind == NF_QCODES_E2M1 ? "E2M1"
                                                          : NULL;
    char cbuf[24];
    if (!codes) {
        snprintf(cbuf, sizeof cbuf, "int%u", q->bits);
        codes = cbuf;
    }
    const bool e8m0 = q->codes_kind == NF_QCODES_E2M1 && q->scale->dtype == NF_ST_U8;
    snprintf(buf, size, "%s: %s codes, %s %s%s%s%s", nf_dialect_name(q->dialect), codes,
             e8m0 ? "E8M0" : q->scale->type_name, grid,
             q->zero_point ? ", zero points"
             : q->biases   ? ", biases"
                           : "",
             q->act_order ? ", act-order g_idx" : "",
             q->global_op == NF_QGLOBAL_MUL   ? ", x weight_scale_2"
             : q->global_op == NF_QGLOBAL_DIV ? ", / weight_global_scale"
                                              : "");
}
