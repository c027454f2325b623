/* GPTQ, AWQ and MLX weights in the scan (ninfer/dialect.h, docs/dialects.md "GPTQ and AWQ",
 * "MLX"): every
 * <p>.qweight I32 with its <p>.scales is one weight [N, K] of unsigned b-bit codes, read with
 * <p>.qzeros and, for GPTQ's act-order, <p>.g_idx.  The declaration (declare.c) says which
 * producer and gives bits and group size; without one, the shapes tell, and only when exactly
 * one layout fits them.  Every shape is checked here, and g_idx is read whole once: each entry
 * must name a group, and each group must hold as many columns as its size (g_idx is a
 * permutation of k / group), so no read can go astray.  MLX's <p>.weight U32 with <p>.scales
 * and <p>.biases is one weight of b-bit codes along its rows, bits and group size declared in
 * config.json (per module too) or told by the shapes.  gpt-oss's MXFP4 experts, <p>_blocks U8
 * [..., R, B, 16] with <p>_scales U8 [..., R, B] (or OpenAI's <p>.blocks and <p>.scales), are one
 * weight of E2M1 codes each: its rows the leading dimensions, 32 codes a block; fbgemm's stacked
 * FP8 experts <x> [E, H, C] with <x>_scale [E, 1, C] one weight [E * H, C]. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "common/fail.h"
#include "dialect/dialect_internal.h"

/* entries of g_idx read at a time while checking it */
#define GIDX_CHUNK 65536u

typedef struct packed_module {
    const char *prefix; /* "model.layers.0.mlp.down_proj." (up to and including the dot) */
    size_t plen;
    const nf_source_tensor *qweight, *scales, *qzeros, *g_idx; /* MLX: weight, scales, biases */
} packed_module;

static void dims(const nf_source_tensor *t, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "%s [", t->type_name);
    for (uint32_t i = 0; i < t->rank && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%" PRIu64, i ? "," : "", t->shape[i]);
    if (used < size) snprintf(buf + used, size - used, "]");
}

static const nf_source_tensor *sibling(const nf_source *src, const packed_module *m, const char *last)
{
    char name[2048];
    if ((size_t)snprintf(name, sizeof name, "%.*s%s", (int)m->plen, m->prefix, last) >= sizeof name) return NULL;
    return nf_source_find(src, name);
}

static bool is_matrix(const nf_source_tensor *t) { return t->rank == 2 && t->shape[0] > 0 && t->shape[1] > 0; }

static bool is_scale_dtype(const nf_source_tensor *t)
{
    return t->dtype == NF_ST_F16 || t->dtype == NF_ST_BF16 || t->dtype == NF_ST_F32;
}

static bool named(const nf_source_tensor *t, const char *last)
{
    const char *dot = strrchr(t->name, '.');
    return !strcmp(dot ? dot + 1 : t->name, last);
}

static uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

/* ---------------------------------------------------------------- the layouts */
/* What a layout makes of a module's shapes: the weight's [N, K], bits, group and groups, or
 * why it does not fit (why[0] != 0). */
typedef struct fit {
    uint64_t n, k, group, groups;
    unsigned bits;
    char why[400];
} fit;

/* The group size a declaration gives (-1: the whole row), or 0 when it gives none. */
static uint64_t declared_group(const decl *dc, uint64_t k)
{
    if (!dc->has_group) return 0;
    return dc->group < 0 ? k : (uint64_t)dc->group;
}

/* The groups of K columns: G scale rows of ceil(K / G) columns each when no declaration says. */
static bool set_groups(fit *f, uint64_t g_declared, uint64_t scale_groups)
{
    f->group = g_declared ? g_declared : ceil_div(f->k, scale_groups);
    f->groups = ceil_div(f->k, f->group);
    return f->groups == scale_groups;
}

/* GPTQ: qweight [ceil(K*b/32), N], scales [G, N], qzeros [G, ceil(N*b/32)], g_idx [K]. */
static void fit_gptq(const packed_module *m, const decl *dc, fit *f)
{
    const nf_source_tensor *qw = m->qweight, *sc = m->scales, *qz = m->qzeros;
    f->why[0] = '\0';
    f->n = qw->shape[1];
    if (sc->shape[1] != f->n || qz->shape[0] != sc->shape[0]) {
        snprintf(f->why, sizeof f->why, "GPTQ's scales are [G, N] and qzeros [G, N*b/32] with qweight's N = %" PRIu64,
                 f->n);
        return;
    }
    unsigned found = 0;
    static const unsigned widths[] = {2, 3, 4, 8};
    for (size_t i = 0; i < 4; i++) /* the widths whose zero points fill qzeros' words */
        if ((!dc->has_bits || dc->bits == widths[i]) && ceil_div(f->n * widths[i], 32) == qz->shape[1]) {
            f->bits = widths[i];
            found++;
        }
    if (found != 1) {
        snprintf(f->why, sizeof f->why,
                 found ? "qzeros' %" PRIu64 " words per group fit several code widths and no declaration gives bits"
                       : "qzeros' %" PRIu64 " words per group hold no %s zero points of N = %" PRIu64 " columns",
                 qz->shape[1], dc->has_bits ? "declared-width" : "2-, 3-, 4- or 8-bit", f->n);
        return;
    }
    if (m->g_idx) {
        if (m->g_idx->rank != 1 || (m->g_idx->dtype != NF_ST_I32 && m->g_idx->dtype != NF_ST_I64)) {
            snprintf(f->why, sizeof f->why, "g_idx is I32 or I64 [K], one group index per column");
            return;
        }
        f->k = m->g_idx->shape[0];
    } else if ((qw->shape[0] * 32) % f->bits == 0) {
        f->k = qw->shape[0] * 32 / f->bits;
    } else {
        snprintf(f->why, sizeof f->why, "qweight's %" PRIu64 " rows of words hold no whole number of %u-bit codes",
                 qw->shape[0], f->bits);
        return;
    }
    if (f->k == 0 || ceil_div(f->k * f->bits, 32) != qw->shape[0]) {
        snprintf(f->why, sizeof f->why,
                 "qweight's %" PRIu64 " rows of words do not hold K = %" PRIu64 " %u-bit codes (g_idx's length)",
                 qw->shape[0], f->k, f->bits);
        return;
    }
    if (!set_groups(f, declared_group(dc, f->k), sc->shape[0]))
        snprintf(f->why, sizeof f->why,
                 "scales' %" PRIu64 " rows are not the %" PRIu64 " groups of %" PRIu64 " columns of K = %" PRIu64,
                 sc->shape[0], f->groups, f->group, f->k);
}

/* AWQ GEMM: qweight [K, N/8], scales [G, N], qzeros [G, N/8]. */
static void fit_awq_gemm(const packed_module *m, const decl *dc, fit *f)
{
    const nf_source_tensor *qw = m->qweight, *sc = m->scales, *qz = m->qzeros;
    f->why[0] = '\0';
    f->bits = 4;
    f->k = qw->shape[0];
    f->n = qw->shape[1] * 8;
    if (sc->shape[1] != f->n || qz->shape[0] != sc->shape[0] || qz->shape[1] != qw->shape[1] || m->g_idx) {
        snprintf(f->why, sizeof f->why,
                 "AWQ GEMM's scales are [G, N] and qzeros [G, N/8] with qweight [K, N/8] (N = %" PRIu64
                 "), and it has no g_idx",
                 f->n);
        return;
    }
    if (!set_groups(f, declared_group(dc, f->k), sc->shape[0]))
        snprintf(f->why, sizeof f->why,
                 "scales' %" PRIu64 " rows are not the %" PRIu64 " groups of %" PRIu64 " columns of K = %" PRIu64,
                 sc->shape[0], f->groups, f->group, f->k);
}

/* AutoAWQ's GEMV width of zero points per row: ceil(G / 8) words, rounded up to a multiple of
 * 2 (group 64) or 4 (group 32); the scales hold 8 per word, the ones past G zero. */
static uint64_t gemv_zero_words(uint64_t k, uint64_t group)
{
    uint64_t mult = group >= 128 ? 1 : group == 64 ? 2 : 4;
    return ceil_div(ceil_div(k / group, 8), mult) * mult;
}

/* AWQ GEMV: qweight [N, K/8], scales [N, 8W], qzeros [N, W]; the group size is declared. */
static void fit_awq_gemv(const packed_module *m, const decl *dc, fit *f)
{
    const nf_source_tensor *qw = m->qweight, *sc = m->scales, *qz = m->qzeros;
    f->why[0] = '\0';
    f->bits = 4;
    f->n = qw->shape[0];
    f->k = qw->shape[1] * 8;
    f->group = declared_group(dc, f->k);
    if (sc->shape[0] != f->n || qz->shape[0] != f->n || m->g_idx) {
        snprintf(f->why, sizeof f->why,
                 "AWQ GEMV's scales and qzeros have qweight's N = %" PRIu64 " rows, and it has no g_idx", f->n);
        return;
    }
    if (!f->group || (f->group < 128 && f->group != 64 && f->group != 32) || f->k % f->group) {
        snprintf(f->why, sizeof f->why,
                 "AWQ GEMV needs a declared group size of 32, 64 or >= 128 that divides K = %" PRIu64
                 " (its padded scales do not tell it)",
                 f->k);
        return;
    }
    f->groups = f->k / f->group;
    uint64_t w = gemv_zero_words(f->k, f->group);
    if (qz->shape[1] != w || sc->shape[1] != 8 * w)
        snprintf(f->why, sizeof f->why,
                 "group %" PRIu64 " of K = %" PRIu64 " has qzeros [N, %" PRIu64 "] and scales [N, %" PRIu64
                 "] in AutoAWQ's GEMV layout",
                 f->group, f->k, w, 8 * w);
}

/* ---------------------------------------------------------------- g_idx */
/* Every entry of g_idx names a group below G, and group j holds min(group, K - j*group)
 * columns: the act-order permutation of k / group that GPTQ writes.  q->act_order says whether
 * it is another permutation than k / group itself. */
static nf_status check_g_idx(const nf_source *src, nf_qweight *q, nf_error *err)
{
    const nf_source_tensor *t = q->g_idx;
    const uint64_t k = q->shape[1], g = q->groups, es = t->dtype == NF_ST_I64 ? 8 : 4;
    uint64_t *count = calloc((size_t)g, sizeof *count);
    uint8_t *buf = malloc(GIDX_CHUNK * 8);
    nf_status st = count && buf ? NF_OK : nf_common_nomem(err);
    for (uint64_t a = 0; st == NF_OK && a < k; a += GIDX_CHUNK) {
        uint64_t n = k - a < GIDX_CHUNK ? k - a : GIDX_CHUNK;
        st = nf_source_read_bytes(src, t, a * es, buf, (size_t)(n * es), err);
        for (uint64_t i = 0; st == NF_OK && i < n; i++) {
            int64_t v = nf_dialect_g_idx_entry(buf, i, (unsigned)es);
            if (v < 0 || (uint64_t)v >= g)
                st = nf_dialect_fail(err, src, t,
                                     "entry %" PRIu64 " is %" PRId64 ": a group index of the %" PRIu64
                                     " groups (0..%" PRIu64 ")",
                                     a + i, v, g, g - 1);
            else count[v]++;
            if (st == NF_OK && (uint64_t)v != (a + i) / q->block_cols) q->act_order = true; /* not k / group */
        }
    }
    for (uint64_t j = 0; st == NF_OK && j < g; j++) {
        uint64_t want = k - j * q->block_cols < q->block_cols ? k - j * q->block_cols : q->block_cols;
        if (count[j] != want)
            st = nf_dialect_fail(err, src, t,
                                 "group %" PRIu64 " holds %" PRIu64 " columns, not %" PRIu64
                                 ": g_idx is not a permutation of the groups of %" PRIu64 " columns (k / group)",
                                 j, count[j], want, q->block_cols);
    }
    free(count);
    free(buf);
    return st;
}

/* ---------------------------------------------------------------- one module */
static nf_status packed_weight(nf_dialects *d, const packed_module *m, nf_qweight *q, nf_error *err)
{
    const decl *dc = &d->decl;
    const nf_source_tensor *qw = m->qweight;
    char a[128], b[128], c[128];
    if (!m->qzeros)
        return nf_dialect_fail(err, d->src, qw, "its %.*sqzeros is in no shard: GPTQ and AWQ weights have zero points",
                               (int)m->plen, m->prefix);
    if (!is_matrix(qw) || !is_matrix(m->scales) || !is_matrix(m->qzeros) || m->qzeros->dtype != NF_ST_I32) {
        dims(qw, a, sizeof a);
        dims(m->scales, b, sizeof b);
        dims(m->qzeros, c, sizeof c);
        return nf_dialect_fail(err, d->src, qw,
                               "%s with scales %s and qzeros %s: GPTQ and AWQ store I32 matrices of codes "
                               "and zero points and a matrix of scales",
                               a, b, c);
    }
    if (!is_scale_dtype(m->scales))
        return nf_dialect_fail(err, d->src, m->scales, "dtype %s: GPTQ and AWQ scales are F16, BF16 or F32",
                               m->scales->type_name);
    /* which layouts fit: the declared producer's, or every one when none is declared */
    fit fits[3];
    const nf_qpack packs[3] = {NF_QPACK_GPTQ, NF_QPACK_AWQ_GEMM, NF_QPACK_AWQ_GEMV};
    bool tried[3] = {dc->kind != DECL_AWQ, dc->kind != DECL_GPTQ && strcmp(dc->awq_version, "gemv") != 0,
                     dc->kind != DECL_GPTQ && strcmp(dc->awq_version, "gemm") != 0};
    NF_TRY(nf_dialect_check_marker(d, DECL_GPTQ, DECL_AWQ, qw, "GPTQ or AWQ codes", err));
    int chosen = -1, nfit = 0;
    for (int i = 0; i < 3; i++) {
        if (!tried[i]) continue;
        (i == 0 ? fit_gptq : i == 1 ? fit_awq_gemm : fit_awq_gemv)(m, dc, &fits[i]);
        if (!fits[i].why[0]) {
            chosen = chosen < 0 ? i : chosen;
            nfit++;
        }
    }
    dims(qw, a, sizeof a);
    dims(m->scales, b, sizeof b);
    dims(m->qzeros, c, sizeof c);
    if (nfit != 1) {
        int first = tried[0] ? 0 : tried[1] ? 1 : 2;
        if (nfit > 1)
            return nf_dialect_fail(err, d->src, qw,
                                   "%s with scales %s and qzeros %s fits several of GPTQ's and AWQ's layouts "
                                   "and no declaration says which",
                                   a, b, c);
        return nf_dialect_fail(err, d->src, qw, "%s with scales %s and qzeros %s%s: %s", a, b, c,
                               m->g_idx ? " and g_idx" : "", fits[first].why);
    }
    const fit *f = &fits[chosen];
    if (chosen > 0 && f->n % 8)
        return nf_dialect_fail(err, d->src, qw, "N = %" PRIu64 " is not a multiple of AWQ's 8 codes per word", f->n);
    q->dialect = chosen == 0 ? NF_DIALECT_GPTQ : NF_DIALECT_AWQ;
    q->pack = packs[chosen];
    q->codes = qw;
    q->scale = m->scales;
    q->zero_point = m->qzeros;
    q->g_idx = m->g_idx;
    q->codes_kind = NF_QCODES_UINT_PACKED;
    q->bits = f->bits;
    q->shape[0] = f->n;
    q->shape[1] = f->k;
    q->groups = f->groups;
    q->strategy = f->groups == 1 ? "channel" : "group";
    q->block_rows = 1;
    q->block_cols = f->group;
    q->scale_rows = f->n;
    q->scale_cols = f->groups;
    q->zero_add = chosen == 0 && !dc->gptq_v2 ? 1 : 0;
    q->symmetric = dc->kind == DECL_GPTQ && dc->has_sym ? dc->sym : -1;
    if (q->g_idx) NF_TRY(check_g_idx(d->src, q, err));
    return NF_OK;
}

/* ---------------------------------------------------------------- MLX */
/* MLX's (bits, group) for W words and G groups per row: the declared ones, which must fit, or
 * without a declaration the one pair of bits 2, 3, 4, 5, 6, 8 and group 32, 64, 128 that does. */
static bool mlx_fit(uint64_t w, uint64_t g, unsigned bits, uint64_t group)
{
    return (w * 32) % bits == 0 && w * 32 / bits == g * group;
}

/* An MLX weight: <p>.weight U32 [..., N, W], <p>.scales and <p>.biases [..., N, G] (F16, BF16,
 * F32); leading dimensions (stacked experts) multiply N. */
static nf_status mlx_weight(nf_dialects *d, const packed_module *m, nf_qweight *q, nf_error *err)
{
    const nf_source_tensor *w = m->qweight, *s = m->scales, *b = m->qzeros;
    const decl *dc = &d->decl;
    char a[128], bs[128], cs[128];
    dims(w, a, sizeof a);
    dims(s, bs, sizeof bs);
    dims(b, cs, sizeof cs);
    NF_TRY(nf_dialect_check_marker(d, DECL_MLX, -1, w, "MLX codes", err));
    bool same = w->rank >= 2 && s->rank == w->rank && b->rank == w->rank;
    for (uint32_t i = 0; same && i + 1 < w->rank; i++) same = s->shape[i] == w->shape[i] && b->shape[i] == w->shape[i];
    if (!same || s->shape[w->rank - 1] != b->shape[w->rank - 1] || w->elements == 0 || s->elements == 0)
        return nf_dialect_fail(err, d->src, w,
                               "%s with scales %s and biases %s: MLX stores [..., N, W] words and [..., N, G] "
                               "scales and biases",
                               a, bs, cs);
    if (!is_scale_dtype(s) || !is_scale_dtype(b))
        return nf_dialect_fail(err, d->src, is_scale_dtype(s) ? b : s,
                               "dtype %s: MLX scales and biases are F16, BF16 or F32",
                               (is_scale_dtype(s) ? b : s)->type_name);
    const uint64_t words = w->shape[w->rank - 1], groups = s->shape[w->rank - 1];
    unsigned bits = 0;
    uint64_t group = 0;
    if (dc->kind == DECL_MLX) {
        if (!nf_dialect_mlx_module(dc, m->prefix, m->plen - 1, &bits, &group))
            return nf_dialect_fail(err, d->src, w,
                                   "quantized, but %s leaves module '%.*s' unquantized: conflicting dialect "
                                   "markers",
                                   dc->path, (int)(m->plen - 1), m->prefix);
        if (!mlx_fit(words, groups, bits, group))
            return nf_dialect_fail(err, d->src, w,
                                   "%s with scales %s: not %u-bit codes in groups of %" PRIu64 ", which %s "
                                   "declares for module '%.*s'",
                                   a, bs, bits, group, dc->path, (int)(m->plen - 1), m->prefix);
    } else {
        static const unsigned widths[] = {2, 3, 4, 5, 6, 8};
        static const uint64_t sizes[] = {32, 64, 128};
        unsigned found = 0;
        for (size_t i = 0; i < 6; i++)
            for (size_t j = 0; j < 3; j++)
                if (mlx_fit(words, groups, widths[i], sizes[j])) {
                    bits = widths[i];
                    group = sizes[j];
                    found++;
                }
        if (found != 1)
            return nf_dialect_fail(err, d->src, w,
                                   "%s with scales %s: %s MLX's code widths and group sizes, and no declaration "
                                   "says which",
                                   a, bs, found ? "fits several of" : "fits none of");
    }
    q->dialect = NF_DIALECT_MLX;
    q->pack = NF_QPACK_MLX;
    q->codes = w;
    q->scale = s;
    q->biases = b;
    q->codes_kind = NF_QCODES_UINT_PACKED;
    q->bits = bits;
    q->shape[0] = w->elements / words;
    q->shape[1] = words * 32 / bits;
    q->groups = groups;
    q->strategy = groups == 1 ? "channel" : "group";
    q->block_rows = 1;
    q->block_cols = group;
    q->scale_rows = q->shape[0];
    q->scale_cols = groups;
    q->symmetric = -1;
    return NF_OK;
}

/* An MLX module: <p>.weight U32 with <p>.scales and <p>.biases beside it (in qweight, scales,
 * qzeros); false for any other tensor. */
static bool mlx_module_of(const nf_source *src, const nf_source_tensor *t, packed_module *m)
{
    const char *dot = strrchr(t->name, '.');
    if (t->dtype != NF_ST_U32 || !dot || !named(t, "weight")) return false;
    *m = (packed_module){t->name, (size_t)(dot + 1 - t->name), t, NULL, NULL, NULL};
    m->scales = sibling(src, m, "scales");
    m->qzeros = sibling(src, m, "biases");
    return m->scales && m->qzeros;
}

/* A module's packed tensors: its qweight I32 with scales, qzeros and g_idx beside it; false
 * when t is no qweight with scales (a qweight alone is a tensor like any other). */
static bool module_of(const nf_source *src, const nf_source_tensor *t, packed_module *m)
{
    const char *dot = strrchr(t->name, '.');
    if (t->dtype != NF_ST_I32 || !named(t, "qweight")) return false;
    *m = (packed_module){t->name, dot ? (size_t)(dot + 1 - t->name) : 0, t, NULL, NULL, NULL};
    m->scales = sibling(src, m, "scales");
    m->qzeros = sibling(src, m, "qzeros");
    m->g_idx = sibling(src, m, "g_idx");
    return m->scales != NULL;
}

nf_status nf_dialect_scan_packed(nf_dialects *d, nf_error *err)
{
    const nf_source *src = d->src;
    const bool declared = d->decl.kind == DECL_GPTQ || d->decl.kind == DECL_AWQ;
    size_t n = nf_source_tensor_count(src), count = 0;
    packed_module m;
    for (size_t i = 0; i < n; i++) {
        const nf_source_tensor *t = nf_source_tensor_at(src, i);
        if (module_of(src, t, &m) || mlx_module_of(src, t, &m)) count++;
        else if (declared && t->dtype == NF_ST_I32 && named(t, "qweight"))
            return nf_dialect_fail(err, src, t, "its %.*sscales is in no shard: %s declares %s", (int)m.plen, m.prefix,
                                   d->decl.path, d->decl.what);
        else if (d->decl.kind == DECL_MLX && t->dtype == NF_ST_U32 && named(t, "weight"))
            return nf_dialect_fail(err, src, t, "U32 codes without %s beside them: %s declares %s",
                                   m.scales ? "biases" : "scales", d->decl.path, d->decl.what);
    }
    NF_TRY(nf_dialect_grow(d, count, err));
    for (size_t i = 0; i < n; i++) {
        const nf_source_tensor *t = nf_source_tensor_at(src, i);
        nf_qweight q = {0};
        if (module_of(src, t, &m)) NF_TRY(packed_weight(d, &m, &q, err));
        else if (mlx_module_of(src, t, &m)) NF_TRY(mlx_weight(d, &m, &q, err));
        else continue;
        nf_dialect_add(d, &q);
    }
    /* in a GPTQ or AWQ checkpoint, zero points and group indices belong to a qweight: alone they
     * would become int32 objects (elsewhere such names are the model's own tensors) */
    for (size_t i = 0; declared && i < n; i++) {
        const nf_source_tensor *t = nf_source_tensor_at(src, i);
        if ((named(t, "qzeros") || named(t, "g_idx")) && d->role[i] == NF_QROLE_PLAIN)
            return nf_dialect_fail(err, src, t,
                                   "a GPTQ or AWQ companion, but no qweight with scales beside it quantizes a "
                                   "weight of this module");
    }
    return NF_OK;
}

/* ---------------------------------------------------------------- gpt-oss MXFP4 */
/* The scales tensor of a gpt-oss codes tensor t: "<x>_blocks" beside "<x>_scales" (Hugging Face)
 * or "<p>.blocks" beside "<p>.scales" (OpenAI's original/); NULL when t is neither, or has no
 * scales.  *hf says which naming. */
static const nf_source_tensor *gpt_oss_scales(const nf_source *src, const nf_source_tensor *t, bool *hf)
{
    const char *dot = strrchr(t->name, '.'), *last = dot ? dot + 1 : t->name;
    size_t len = strlen(t->name), llen = strlen(last);
    char name[2048];
    *hf = false;
    if (t->dtype != NF_ST_U8) return NULL;
    *hf = llen > 7 && !strcmp(last + llen - 7, "_blocks");
    if (!*hf && strcmp(last, "blocks") != 0) return NULL;
    if ((size_t)snprintf(name, sizeof name, "%.*sscales", (int)(len - 6), t->name) >= sizeof name) return NULL;
    return nf_source_find(src, name);
}

/* One gpt-oss MXFP4 weight: codes [..., R, B, 16], scales U8 (or F8_E8M0) [..., R, B]. */
static nf_status gpt_oss_weight(nf_dialects *d, const nf_source_tensor *c, const nf_source_tensor *s, nf_qweight *q,
                                nf_error *err)
{
    char a[128], b[128];
    dims(c, a, sizeof a);
    dims(s, b, sizeof b);
    NF_TRY(nf_dialect_check_marker(d, DECL_MXFP4, -1, c, "MXFP4 codes", err));
    if (s->dtype != NF_ST_U8 && s->dtype != NF_ST_F8_E8M0)
        return nf_dialect_fail(err, d->src, s, "dtype %s: MXFP4 block scales are E8M0 (U8 or F8_E8M0)", s->type_name);
    bool same = c->rank >= 3 && s->rank == c->rank - 1 && c->shape[c->rank - 1] == 16 && c->elements > 0;
    for (uint32_t i = 0; same && i < s->rank; i++) same = s->shape[i] == c->shape[i];
    if (!same)
        return nf_dialect_fail(
            err, d->src, c,
            "%s with scales %s: gpt-oss stores MXFP4 as [..., R, B, 16] bytes (32 codes a block) and "
            "[..., R, B] E8M0 scales",
            a, b);
    const uint64_t blocks = c->shape[c->rank - 2];
    q->dialect = NF_DIALECT_GPT_OSS_MXFP4;
    q->pack = NF_QPACK_ROWS;
    q->codes = c;
    q->scale = s;
    q->codes_kind = NF_QCODES_E2M1;
    q->bits = 4;
    q->shape[0] = s->elements / blocks;
    if (!nf_mul_u64(blocks, 32, &q->shape[1])) return nf_dialect_fail(err, d->src, c, "%s: K overflows", a);
    q->strategy = "group";
    q->block_rows = 1;
    q->block_cols = 32;
    q->scale_rows = q->shape[0];
    q->scale_cols = blocks;
    q->groups = blocks;
    q->symmetric = -1;
    return NF_OK;
}

nf_status nf_dialect_scan_mxfp4(nf_dialects *d, nf_error *err)
{
    const nf_source *src = d->src;
    size_t n = nf_source_tensor_count(src), count = 0;
    bool hf;
    for (size_t i = 0; i < n; i++) {
        const nf_source_tensor *t = nf_source_tensor_at(src, i);
        if (gpt_oss_scales(src, t, &hf)) count++;
        else if (d->decl.kind == DECL_MXFP4 && t->dtype == NF_ST_U8 && hf)
            return nf_dialect_fail(err, src, t, "MXFP4 codes without their _scales beside them: %s declares %s",
                                   d->decl.path, d->decl.what);
    }
    NF_TRY(nf_dialect_grow(d, count, err));
    for (size_t i = 0; i < n; i++) {
        const nf_source_tensor *t = nf_source_tensor_at(src, i), *s = gpt_oss_scales(src, t, &hf);
        if (!s) continue;
        nf_qweight q = {0};
        NF_TRY(gpt_oss_weight(d, t, s, &q, err));
        nf_dialect_add(d, &q);
    }
    return NF_OK;
}

/* ---------------------------------------------------------------- fbgemm FP8 experts */
/* The scale of a stacked FP8 expert tensor t: "<x>_scale" beside "<x>"; NULL for any other. */
static const nf_source_tensor *fbgemm_scale(const nf_source *src, const nf_source_tensor *t)
{
    char name[2048];
    if ((t->dtype != NF_ST_F8_E4M3 && t->dtype != NF_ST_F8_E5M2) || t->rank != 3) return NULL;
    if ((size_t)snprintf(name, sizeof name, "%s_scale", t->name) >= sizeof name) return NULL;
    return nf_source_find(src, name);
}

/* One stacked expert tensor [E, H, C] with its scale F32 [E, 1, C]: w = code * scale[e][c]. */
static nf_status fbgemm_expert(nf_dialects *d, const nf_source_tensor *c, const nf_source_tensor *s, nf_qweight *q,
                               nf_error *err)
{
    char a[128], b[128];
    dims(c, a, sizeof a);
    dims(s, b, sizeof b);
    NF_TRY(nf_dialect_check_marker(d, DECL_FBGEMM, -1, c, "FP8 experts with a _scale", err));
    if (s->dtype != NF_ST_F32 && s->dtype != NF_ST_BF16)
        return nf_dialect_fail(err, d->src, s, "dtype %s: fbgemm's expert scales are F32", s->type_name);
    if (s->rank != 3 || s->shape[0] != c->shape[0] || s->shape[1] != 1 || s->shape[2] != c->shape[2] ||
        c->elements == 0)
        return nf_dialect_fail(err, d->src, s,
                               "%s for experts %s: fbgemm stores one scale per expert and column, [E, 1, C]", b, a);
    q->dialect = NF_DIALECT_FBGEMM_FP8;
    q->pack = NF_QPACK_ROWS;
    q->codes = c;
    q->scale = s;
    q->codes_kind = c->dtype == NF_ST_F8_E5M2 ? NF_QCODES_E5M2 : NF_QCODES_E4M3;
    q->bits = 8;
    q->shape[0] = c->shape[0] * c->shape[1];
    q->shape[1] = c->shape[2];
    q->strategy = "block";
    q->block_rows = c->shape[1];
    q->block_cols = 1;
    q->scale_rows = c->shape[0];
    q->scale_cols = c->shape[2];
    q->symmetric = -1;
    return NF_OK;
}

nf_status nf_dialect_scan_fbgemm_experts(nf_dialects *d, nf_error *err)
{
    const nf_source *src = d->src;
    size_t n = nf_source_tensor_count(src), count = 0;
    for (size_t i = 0; i < n; i++)
        if (fbgemm_scale(src, nf_source_tensor_at(src, i))) count++;
    NF_TRY(nf_dialect_grow(d, count, err));
    for (size_t i = 0; i < n; i++) {
        const nf_source_tensor *t = nf_source_tensor_at(src, i), *s = fbgemm_scale(src, t);
        if (!s) continue;
        nf_qweight q = {0};
        NF_TRY(fbgemm_expert(d, t, s, &q, err));
        nf_dialect_add(d, &q);
    }
    return NF_OK;
}
