/* GPTQ's, AWQ's and MLX's values (ninfer/dialect.h, docs/dialects.md "GPTQ and AWQ", "MLX"):
 * w[n][k] = (q - z) * s, q the unsigned b-bit code of row n, column k, and s and z the scale and
 * zero point of column k's group (g_idx[k], or k / group) in row n; MLX's w = s * q + b, its
 * group's scale and bias, the exact sum rounded once (fmaf).  The codes lie across the
 * rows of qweight (GPTQ packs along K, AWQ's GEMM layout along N), so a piece of rows is read as
 * the matching columns of every word row; memory is bounded by the piece, which is at most
 * PIECE_VALUES values (or one row, or the caller's span of one: docs/dialects.md "Values").
 *
 * Exactness: q - z is an integer of at most 9 bits and s a binary32 number (read exactly from
 * F16, BF16 or F32), so one binary32 multiplication rounds their exact product once, and it is
 * exact for F16 and BF16 scales (at most 11 + 9 significant bits). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "common/fail.h"
#include "dialect/dialect_internal.h"
#include "dialect/qweight_rows.h"
#include "dialect/simd/unpack_simd.h"

#define PIECE_VALUES ((uint64_t)1 << 22)

/* AWQ's GEMM words hold columns 0,2,4,6,1,3,5,7 of their eight in nibbles 0..7: column j's
 * nibble is awq_nibble[j]. */
static const unsigned awq_nibble[8] = {0, 4, 1, 5, 2, 6, 3, 7};
static const unsigned awq_column[8] = {0, 2, 4, 6, 1, 3, 5, 7}; /* its inverse: nibble i's column */

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static float f32_bits(uint32_t w)
{
    float f;
    memcpy(&f, &w, sizeof f);
    return f;
}

/* Field `bits` wide at bit `bit` of a little-endian bit stream of words, word w at
 * words[w * stride]: a 3-bit field may straddle two words. */
static uint32_t stream_field(const uint8_t *words, uint64_t stride, uint64_t bit, unsigned bits)
{
    uint64_t w = bit / 32;
    unsigned sh = (unsigned)(bit % 32);
    uint32_t v = le32(words + w * stride * 4) >> sh;
    if (sh + bits > 32) v |= le32(words + (w + 1) * stride * 4) << (32 - sh);
    return v & ((1u << bits) - 1);
}

/* The 32 / bits codes of each of n words (one word row of GPTQ's qweight, one word a row) into
 * out[r * stride + i]; inlined with a constant width, so the loop unrolls. */
static inline __attribute__((always_inline)) void unpack_words(const uint8_t *words, uint64_t n, uint8_t *out,
                                                               uint64_t stride, unsigned bits)
{
    for (uint64_t r = 0; r < n; r++) {
        const uint32_t word = le32(words + r * 4);
        for (unsigned i = 0; i < 32 / bits; i++)
            out[r * stride + i] = (uint8_t)((word >> (bits * i)) & ((1u << bits) - 1));
    }
}

/* The piece: rows [a, b) of the weight, columns [c0, c1), groups [g0, g1) of them. */
typedef struct piece {
    uint64_t a, b, c0, c1, g0, g1;
} piece;

/* ---------------------------------------------------------------- runs */
/* The most read_runs' window holds (a variable: the tests shrink it). */
size_t nf_dialect_runs_window = (size_t)1 << 20;

/* read_runs' window: grown to what a reading needs, up to nf_dialect_runs_window (a span of a
 * few values needs a few bytes: one buffer a piece, not a megabyte a span). */
typedef struct runs_window {
    uint8_t *buf;
    size_t len;
} runs_window;

/* `count` runs of `run` bytes of tensor t, the i-th at byte off + i * stride, one after the other
 * into out.  A read costs about as much as copying RUNS_GAP bytes, so runs whose gaps are shorter
 * are read together, a window of them at a time (at most nf_dialect_runs_window bytes, at least
 * stride + run), and copied out. */
#define RUNS_GAP ((uint64_t)8 << 10)
static nf_status read_runs(const nf_source *src, const nf_source_tensor *t, uint64_t off, uint64_t stride, uint64_t run,
                           uint64_t count, uint8_t *out, runs_window *w, nf_error *err)
{
    const uint64_t all = count ? (count - 1) * stride + run : 0; /* inside the tensor: its caller's piece */
    const uint64_t want = all < nf_dialect_runs_window ? all : nf_dialect_runs_window;
    if (count < 2 || stride - run > RUNS_GAP || want < stride + run) {
        for (uint64_t i = 0; i < count; i++)
            NF_TRY(nf_source_read_bytes(src, t, off + i * stride, out + i * run, (size_t)run, err));
        return NF_OK;
    }
    if (w->len < want) {
        uint8_t *b = realloc(w->buf, (size_t)want);
        if (!b) return nf_common_nomem(err);
        w->buf = b;
        w->len = (size_t)want;
    }
    const uint64_t per = (want - run) / stride + 1;
    for (uint64_t i = 0; i < count; i += per) {
        const uint64_t m = count - i < per ? count - i : per;
        NF_TRY(nf_source_read_bytes(src, t, off + i * stride, w->buf, (size_t)((m - 1) * stride + run), err));
        for (uint64_t j = 0; j < m; j++) memcpy(out + (i + j) * run, w->buf + j * stride, (size_t)run);
    }
    return NF_OK;
}

/* ---------------------------------------------------------------- codes */
/* The codes of the piece as bytes, codes[(n - a) * (c1 - c0) + k - c0]; raw holds the words. */
static nf_status fetch_codes(const nf_source *src, const nf_qweight *q, const piece *p, uint8_t *codes, uint8_t *raw,
                             runs_window *window, nf_error *err)
{
    const nf_source_tensor *t = q->codes;
    const uint64_t rows = p->b - p->a, cols = p->c1 - p->c0, n_all = q->shape[0];
    const unsigned bits = q->bits;
    if (q->pack == NF_QPACK_GPTQ) { /* word rows [w0, w1) of columns [a, b): a bit stream down each column */
        const uint64_t w0 = p->c0 * bits / 32, w1 = nf_ceil_div_u64(p->c1 * bits, 32);
        NF_TRY(read_runs(src, t, (w0 * n_all + p->a) * 4, n_all * 4, rows * 4, w1 - w0, raw, window, err));
        if (32 % bits == 0) { /* 2, 4, 8 bits: whole codes per word, word w holding codes w*per.. */
            const uint64_t per = 32 / bits;
            for (uint64_t w = w0; w < w1; w++) {
                const uint64_t k0 = w * per, lo = p->c0 > k0 ? p->c0 - k0 : 0;
                const uint64_t hi = p->c1 - k0 < per ? p->c1 - k0 : per;
                const uint8_t *words = raw + (w - w0) * rows * 4;
                uint8_t *o = codes + k0 - p->c0;
                if (lo == 0 && hi == per && bits == 4) unpack_words(words, rows, o, cols, 4);
                else if (lo == 0 && hi == per && bits == 2) unpack_words(words, rows, o, cols, 2);
                else if (lo == 0 && hi == per && bits == 8) unpack_words(words, rows, o, cols, 8);
                else
                    for (uint64_t n = 0; n < rows; n++) {
                        const uint32_t word = le32(words + n * 4);
                        for (uint64_t i = lo; i < hi; i++)
                            o[n * cols + i] = (uint8_t)((word >> (bits * i)) & ((1u << bits) - 1));
                    }
            }
            return NF_OK;
        }
        for (uint64_t n = 0; n < rows; n++)
            for (uint64_t k = 0; k < cols; k++)
                codes[n * cols + k] = (uint8_t)stream_field(raw + n * 4, rows, (p->c0 + k) * bits - w0 * 32, bits);
        return NF_OK;
    }
    if (q->pack == NF_QPACK_AWQ_GEMM) { /* rows [c0, c1) of qweight, its words [a / 8, ceil(b / 8)) */
        const uint64_t j0 = p->a / 8, nw = nf_ceil_div_u64(p->b, 8) - j0, row_words = n_all / 8;
        NF_TRY(read_runs(src, t, (p->c0 * row_words + j0) * 4, row_words * 4, nw * 4, cols, raw, window, err));
        /* word j's nibble i holds column 8 (j0 + j) + awq_column[i] */
        for (uint64_t j = 0; j < nw; j++) { /* word column j: eight rows written along k */
            uint8_t *row[8];
            for (unsigned i = 0; i < 8; i++) {
                const uint64_t col = 8 * (j0 + j) + awq_column[i];
                row[i] = col >= p->a && col < p->b ? codes + (col - p->a) * cols : NULL;
            }
            if (row[0] && row[1] && row[2] && row[3] && row[4] && row[5] && row[6] && row[7]) {
                for (uint64_t k = 0; k < cols; k++) {
                    const uint32_t word = le32(raw + (k * nw + j) * 4);
                    for (unsigned i = 0; i < 8; i++) row[i][k] = (uint8_t)((word >> (4 * i)) & 15);
                }
                continue;
            }
            for (uint64_t k = 0; k < cols; k++) { /* the piece's first or last word: some of its rows */
                const uint32_t word = le32(raw + (k * nw + j) * 4);
                for (unsigned i = 0; i < 8; i++)
                    if (row[i]) row[i][k] = (uint8_t)((word >> (4 * i)) & 15);
            }
        }
        return NF_OK;
    }
    if (q->pack == NF_QPACK_MLX) { /* row n: a bit stream along K, words [w0, w1) of it */
        const uint64_t w0 = p->c0 * bits / 32, nw = nf_ceil_div_u64(p->c1 * bits, 32) - w0;
        const uint64_t row_words = t->shape[t->rank - 1];
        for (uint64_t n = 0; n < rows; n++) {
            NF_TRY(nf_source_read_bytes(src, t, ((p->a + n) * row_words + w0) * 4, raw, (size_t)(nw * 4), err));
            for (uint64_t k = 0; k < cols; k++)
                codes[n * cols + k] = (uint8_t)stream_field(raw, 1, (p->c0 + k) * bits - w0 * 32, bits);
        }
        return NF_OK;
    }
    /* AWQ GEMV: rows [a, b) of qweight, their words [c0 / 8, ceil(c1 / 8)), natural order */
    const uint64_t j0 = p->c0 / 8, nw = nf_ceil_div_u64(p->c1, 8) - j0, row_words = q->shape[1] / 8;
    for (uint64_t n = 0; n < rows; n++) {
        NF_TRY(nf_source_read_bytes(src, t, ((p->a + n) * row_words + j0) * 4, raw, (size_t)(nw * 4), err));
        for (uint64_t k = 0; k < cols; k++) {
            const uint64_t c = p->c0 + k;
            codes[n * cols + k] = (uint8_t)((le32(raw + (c / 8 - j0) * 4) >> (4 * (c % 8))) & 15);
        }
    }
    return NF_OK;
}

/* ---------------------------------------------------------------- scales and zero points */
static nf_status bad_scale(nf_error *err, const nf_source *src, const nf_qweight *q, uint64_t srow, uint64_t scol,
                           uint64_t n, uint64_t g, uint32_t w, const char *why)
{
    const nf_source_tensor *t = q->scale;
    return nf_error_set(err, NF_ERR_INVALID,
                        "%s: tensor '%s': row %" PRIu64 " col %" PRIu64 " (group %" PRIu64
                        " of the weight's row %" PRIu64 "): scale 0x%0*" PRIX32
                        " is %s: a %s scale must be finite and > 0",
                        nf_source_file_path(src, t->file), t->name, srow, scol, g, n, t->dtype == NF_ST_F32 ? 8 : 4, w,
                        why, nf_dialect_name(q->dialect));
}

/* The scales and zero points of the piece's rows and groups, s[(n - a) * (g1 - g0) + g - g0]
 * and z alike (the stored zero point plus q->zero_add); each scale checked. */
/* MLX's scales and biases [N, G] of the piece, s and bias[(n - a) * (g1 - g0) + g - g0]: any
 * finite values (MLX writes negative scales where a group's edge is its minimum). */
static nf_status fetch_affine(const nf_source *src, const nf_qweight *q, const piece *p, float *s, float *bias,
                              uint8_t *raw, nf_error *err)
{
    const uint64_t rows = p->b - p->a, ng = p->g1 - p->g0, gall = q->groups;
    const nf_source_tensor *ts[2] = {q->scale, q->biases};
    float *outs[2] = {s, bias};
    for (int which = 0; which < 2; which++) {
        const nf_source_tensor *t = ts[which];
        const size_t es = t->dtype == NF_ST_F32 ? 4 : 2;
        for (uint64_t n = 0; n < rows; n++) {
            NF_TRY(nf_source_read_bytes(src, t, ((p->a + n) * gall + p->g0) * es, raw, (size_t)(ng * es), err));
            for (uint64_t g = 0; g < ng; g++) {
                const uint8_t *b = raw + g * es;
                uint32_t w = es == 4 ? le32(b) : (uint32_t)(b[0] | b[1] << 8);
                float v = es == 4                  ? f32_bits(w)
                          : t->dtype == NF_ST_BF16 ? nf_bf16_to_f32((uint16_t)w)
                                                   : nf_f16_to_f32((uint16_t)w);
                if (!isfinite(v))
                    return nf_error_set(err, NF_ERR_INVALID,
                                        "%s: tensor '%s': row %" PRIu64 " col %" PRIu64 ": %s 0x%0*" PRIX32
                                        " is %s: an mlx %s must be finite",
                                        nf_source_file_path(src, t->file), t->name, p->a + n, p->g0 + g,
                                        which ? "bias" : "scale", (int)(2 * es), w, isnan(v) ? "NaN" : "infinite",
                                        which ? "bias" : "scale");
                outs[which][n * ng + g] = v;
            }
        }
    }
    return NF_OK;
}

static nf_status fetch_groups(const nf_source *src, const nf_qweight *q, const piece *p, float *s, int32_t *z,
                              uint8_t *raw, runs_window *window, nf_error *err)
{
    const nf_source_tensor *st = q->scale, *zt = q->zero_point;
    const uint64_t rows = p->b - p->a, ng = p->g1 - p->g0;
    const size_t es = st->dtype == NF_ST_F32 ? 4 : 2;
    const bool gemv = q->pack == NF_QPACK_AWQ_GEMV;
    /* scales: [G, N] (GPTQ, AWQ GEMM) a run a group, or [N, 8W] (GEMV) a run a row; all the
     * piece's runs into raw (rows * groups words: alloc_buffers) */
    const uint64_t outer = gemv ? rows : ng, inner = gemv ? ng : rows, width = st->shape[1];
    const uint64_t r0 = gemv ? p->a : p->g0, c = gemv ? p->g0 : p->a;
    NF_TRY(read_runs(src, st, (r0 * width + c) * es, width * es, inner * es, outer, raw, window, err));
    for (uint64_t o = 0; o < outer; o++) {
        const uint64_t r = r0 + o;
        for (uint64_t i = 0; i < inner; i++) {
            const uint8_t *b = raw + (o * inner + i) * es;
            uint32_t w = es == 4 ? le32(b) : (uint32_t)(b[0] | b[1] << 8);
            uint64_t n = gemv ? o : i, g = gemv ? i : o;
            const char *why = nf_dialect_scale_value(st->dtype, w, &s[n * ng + g]);
            if (why) return bad_scale(err, src, q, r, c + i, p->a + n, p->g0 + g, w, why);
        }
    }
    /* zero points: GPTQ [G, N*b/32] a bit stream along N; AWQ GEMM [G, N/8] in its nibble order;
     * GEMV [N, W] along the groups, natural order */
    const unsigned bits = q->bits;
    const uint64_t zw = zt->shape[1];
    if (q->pack == NF_QPACK_GPTQ) {
        const uint64_t w0 = p->a * bits / 32, nw = nf_ceil_div_u64(p->b * bits, 32) - w0;
        NF_TRY(read_runs(src, zt, (p->g0 * zw + w0) * 4, zw * 4, nw * 4, ng, raw, window, err));
        for (uint64_t g = 0; g < ng; g++)
            for (uint64_t n = 0; n < rows; n++)
                z[n * ng + g] = (int32_t)stream_field(raw + g * nw * 4, 1, (p->a + n) * bits - w0 * 32, bits) +
                                q->zero_add;
    } else if (q->pack == NF_QPACK_AWQ_GEMM) {
        const uint64_t j0 = p->a / 8, nw = nf_ceil_div_u64(p->b, 8) - j0;
        NF_TRY(read_runs(src, zt, (p->g0 * zw + j0) * 4, zw * 4, nw * 4, ng, raw, window, err));
        for (uint64_t g = 0; g < ng; g++)
            for (uint64_t n = 0; n < rows; n++) {
                const uint64_t col = p->a + n;
                z[n * ng + g] = (int32_t)((le32(raw + (g * nw + col / 8 - j0) * 4) >> (4 * awq_nibble[col % 8])) & 15);
            }
    } else {
        const uint64_t j0 = p->g0 / 8, nw = nf_ceil_div_u64(p->g1, 8) - j0;
        NF_TRY(read_runs(src, zt, (p->a * zw + j0) * 4, zw * 4, nw * 4, rows, raw, window, err));
        for (uint64_t n = 0; n < rows; n++)
            for (uint64_t g = 0; g < ng; g++) {
                const uint64_t gg = p->g0 + g;
                z[n * ng + g] = (int32_t)((le32(raw + (n * nw + gg / 8 - j0) * 4) >> (4 * (gg % 8))) & 15);
            }
    }
    return NF_OK;
}

/* ---------------------------------------------------------------- values */
/* The piece's groups: those of its columns' g_idx entries (gidx[k - c0]), or c0 / group ..
 * (c1 - 1) / group. */
static void piece_groups(const nf_qweight *q, piece *p, const int64_t *gidx)
{
    if (!gidx) {
        p->g0 = p->c0 / q->block_cols;
        p->g1 = (p->c1 - 1) / q->block_cols + 1;
        return;
    }
    int64_t lo = INT64_MAX, hi = -1;
    for (uint64_t k = 0; k < p->c1 - p->c0; k++) {
        lo = gidx[k] < lo ? gidx[k] : lo;
        hi = gidx[k] > hi ? gidx[k] : hi;
    }
    p->g0 = (uint64_t)lo;
    p->g1 = (uint64_t)hi + 1;
}

/* out[(n - a) * (c1 - c0) + k - c0] = (q - z) * s for the piece. */
static void piece_values(const nf_qweight *q, const piece *p, const uint8_t *codes, const float *s, const int32_t *z,
                         const float *bias, const int64_t *gidx, float *out)
{
    const uint64_t rows = p->b - p->a, cols = p->c1 - p->c0, ng = p->g1 - p->g0, group = q->block_cols;
    for (uint64_t n = 0; n < rows; n++) {
        const uint8_t *c = codes + n * cols;
        const float *sn = s + n * ng;
        const int32_t *zn = z + n * ng;
        float *o = out + n * cols;
        if (gidx) { /* GPTQ alone has a g_idx */
            for (uint64_t k = 0; k < cols; k++) {
                uint64_t g = (uint64_t)gidx[k] - p->g0;
                o[k] = (float)((int32_t)c[k] - zn[g]) * sn[g];
            }
            continue;
        }
        for (uint64_t k0 = 0; k0 < cols;) { /* a run of columns of one group */
            const uint64_t g = (p->c0 + k0) / group, end = (g + 1) * group - p->c0;
            const uint64_t k1 = end < cols ? end : cols;
            const float sv = sn[g - p->g0];
            if (bias) { /* MLX: s * q + b exactly, rounded once (fmaf: correctly rounded everywhere) */
                const float bv = bias[n * ng + g - p->g0];
                for (uint64_t k = k0; k < k1; k++) o[k] = fmaf(sv, (float)c[k], bv);
            } else {
                const int32_t zv = zn[g - p->g0];
                for (uint64_t k = k0; k < k1; k++) o[k] = (float)((int32_t)c[k] - zv) * sv;
            }
            k0 = k1;
        }
    }
}

/* g_idx entries [c0, c1) (checked when scanned: each a group below G).  Read only for act-order:
 * a g_idx equal to k / group throughout (the scan tells) is the plain grouping. */
static nf_status fetch_g_idx(const nf_source *src, const nf_qweight *q, uint64_t c0, uint64_t c1, int64_t *out,
                             uint8_t *raw, nf_error *err)
{
    const unsigned es = q->g_idx->dtype == NF_ST_I64 ? 8 : 4;
    NF_TRY(nf_source_read_bytes(src, q->g_idx, c0 * es, raw, (size_t)((c1 - c0) * es), err));
    for (uint64_t k = 0; k < c1 - c0; k++) out[k] = nf_dialect_g_idx_entry(raw, k, es);
    return NF_OK;
}

/* One piece into out: codes, groups, values.  buffers sized by packed_read's caller for pieces
 * of `rows` rows of `cols` columns; codes (the plain reading), read_runs' window and tr (the
 * bands) are allocated when first needed. */
typedef struct packed_buffers {
    uint64_t rows, cols;
    uint8_t *codes, *raw;
    runs_window window;
    uint32_t *tr;    /* a band of rows of GPTQ's or AWQ's qweight as read (load_words) */
    float *s, *bias; /* bias: MLX */
    int32_t *z;
    int64_t *gidx;
} packed_buffers;

/* The codes of a piece, a byte each (fetch_codes). */
static nf_status need_codes(packed_buffers *bf, nf_error *err)
{
    if (!bf->codes) bf->codes = malloc((size_t)(bf->rows * bf->cols) + 1);
    return bf->codes ? NF_OK : nf_common_nomem(err);
}

/* A value that is not finite although its code and scale are (an F32 or BF16 scale near
 * binary32's largest times q - z): refused naming the row, column, integer and scale, as every
 * dialect's (docs/dialects.md "Bad input"), rather than read as +-inf.  An F16 scale (at most
 * 65504) times |q - z| (at most 2^8) cannot overflow, so GPTQ's and AWQ's usual scales skip the
 * pass.  bands: the piece was read by bands, its codes are read again for the message. */
static nf_status check_finite(const nf_source *src, const nf_qweight *q, const piece *p, packed_buffers *bf,
                              const float *out, bool bands, nf_error *err)
{
    if (!bf->bias && q->scale->dtype == NF_ST_F16) return NF_OK;
    const uint64_t cols = p->c1 - p->c0, ng = p->g1 - p->g0, count = (p->b - p->a) * cols;
    const bool any = nf_dialect_any_nonfinite(out, count);
    if (any && bands) { /* the message names the code: read again (over the words in raw) */
        NF_TRY(need_codes(bf, err));
        NF_TRY(fetch_codes(src, q, p, bf->codes, bf->raw, &bf->window, err));
    }
    for (uint64_t i = 0; any && i < count; i++) {
        if (isfinite(out[i])) continue;
        const uint64_t n = i / cols, k = i % cols;
        const uint64_t g = (bf->gidx ? (uint64_t)bf->gidx[k] : (p->c0 + k) / q->block_cols) - p->g0;
        if (bf->bias)
            return nf_error_set(err, NF_ERR_INVALID,
                                "%s: tensor '%s': row %" PRIu64 " col %" PRIu64 ": scale %.9g x code %u + bias %.9g "
                                "overflows binary32: an mlx value must be finite",
                                nf_source_file_path(src, q->codes->file), q->codes->name, p->a + n, p->c0 + k,
                                (double)bf->s[n * ng + g], (unsigned)bf->codes[i], (double)bf->bias[n * ng + g]);
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: tensor '%s': row %" PRIu64 " col %" PRIu64 ": integer code %" PRId32
                            " (q - z) x scale %.9g overflows binary32: a %s value must be finite",
                            nf_source_file_path(src, q->codes->file), q->codes->name, p->a + n, p->c0 + k,
                            (int32_t)bf->codes[i] - bf->z[n * ng + g], (double)bf->s[n * ng + g],
                            nf_dialect_name(q->dialect));
    }
    return NF_OK;
}

/* ---------------------------------------------------------------- bands */
/* GPTQ's and AWQ GEMM's codes lie across the value rows, so fetch_codes transposes them into a
 * byte per code and piece_values reads those again, two passes over the piece with writes
 * stride-apart.  The usual pieces (whole words, plain groups: piece_bands) have their words read
 * (load_words: GPTQ's put by row, AWQ's by word column, a band of rows at a time while in
 * cache) and turned into values row by row (decode_rows), each run of one group's values one
 * kernel call (simd/unpack_simd.h), the same binary32 operations as piece_values: the same bits
 * (tests/unit/test_dialect_unpack_simd.c checks both readings against the definition). */
#define GPTQ_BAND 16 /* word rows of GPTQ's qweight read at a time, at least */
#define AWQ_BAND 64  /* rows of AWQ's qweight (columns of the weight) read at a time, at least */
/* A band holds up to this many words when its rows are narrow (a piece of few rows, a span of
 * one): a long row is then a few reads, not one a band of 16 words */
#define BAND_WORDS ((uint64_t)16 << 10)

/* Rows of the packed tensor a band, for runs of `run_words` words each. */
static uint64_t band_rows(uint64_t least, uint64_t run_words)
{
    const uint64_t wide = run_words ? BAND_WORDS / run_words : BAND_WORDS;
    return wide > least ? wide : least;
}

/* GPTQ, b = 2, 4 or 8: rows [x, y) of a piece whose words load_words read by row (t[n * nw + w]:
 * word w holds columns w * 32/b .. of row n): each row's run of words of one group one kernel
 * call. */
static void gptq_values(const nf_dialect_unpack_kernels *kern, const nf_qweight *q, const piece *p, const uint32_t *t,
                        uint64_t x, uint64_t y, const float *s, const int32_t *z, float *out)
{
    const uint64_t cols = p->c1 - p->c0, ng = p->g1 - p->g0, per = 32 / q->bits;
    const uint64_t nw = cols / per, wpg = q->block_cols / per, first = p->c0 / per; /* words a group, first word */
    for (uint64_t n = x; n < y; n++)
        for (uint64_t w = 0; w < nw;) {
            const uint64_t g = (first + w) / wpg, end = (g + 1) * wpg - first, e = end < nw ? end : nw;
            kern->packed_run(t + n * nw + w, 1, (size_t)(e - w), q->bits, z[n * ng + g - p->g0], s[n * ng + g - p->g0],
                             out + (n - x) * cols + w * per);
            w = e;
        }
}

/* AWQ GEMM: rows [x, y) (multiples of 8) of a piece whose words load_words read by word column
 * (t[j * cols + k]: column k's word j holds rows 8 (a/8 + j) + awq_column[i] in nibble i): each
 * nibble's run of one group's columns a run of its row, one kernel call. */
static void awq_values(const nf_dialect_unpack_kernels *kern, const nf_qweight *q, const piece *p, const uint32_t *t,
                       uint64_t x, uint64_t y, const float *s, const int32_t *z, float *out)
{
    const uint64_t cols = p->c1 - p->c0, ng = p->g1 - p->g0;
    for (uint64_t j = x / 8; j < y / 8; j++)
        for (unsigned i = 0; i < 8; i++) {
            const uint64_t n = 8 * j + awq_column[i];
            for (uint64_t k = 0; k < cols;) { /* columns [k, e): one group's */
                const uint64_t g = (p->c0 + k) / q->block_cols, end = (g + 1) * q->block_cols - p->c0;
                const uint64_t e = end < cols ? end : cols;
                kern->nibble_run(t + j * cols + k, (size_t)(e - k), 4 * i, z[n * ng + g - p->g0], s[n * ng + g - p->g0],
                                 out + (n - x) * cols + k);
                k = e;
            }
        }
}

/* Can the piece go by bands?  Whole words (GPTQ 2/4/8 bits: columns a multiple of 32/b, groups
 * too; AWQ GEMM: rows a multiple of 8) and plain groups, on a little-endian host (the kernels
 * take the words as the host's). */
static bool piece_bands(const nf_qweight *q, const piece *p)
{
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
    return false;
#endif
    if (q->act_order || q->biases) return false;
    if (q->pack == NF_QPACK_GPTQ) {
        const unsigned per = 32 % q->bits == 0 ? 32 / q->bits : 0;
        return per && p->c0 % per == 0 && p->c1 % per == 0 && q->block_cols % per == 0;
    }
    return q->pack == NF_QPACK_AWQ_GEMM && p->a % 8 == 0 && p->b % 8 == 0;
}

/* What the bands need besides raw: a band of rows of qweight as read (GPTQ: band_rows word rows
 * of the piece's rows; AWQ: band_rows rows of its rows / 8 words). */
static nf_status need_bands(const nf_qweight *q, packed_buffers *bf, nf_error *err)
{
    if (!bf->tr) {
        const uint64_t nw = bf->cols / (32 / q->bits), gb = band_rows(GPTQ_BAND, bf->rows);
        const uint64_t ab = band_rows(AWQ_BAND, bf->rows / 8);
        const uint64_t words = q->pack == NF_QPACK_GPTQ ? bf->rows * (nw < gb ? nw : gb)
                                                        : (bf->cols < ab ? bf->cols : ab) * (bf->rows / 8);
        bf->tr = malloc((size_t)words * sizeof *bf->tr + 4);
    }
    return bf->tr ? NF_OK : nf_common_nomem(err);
}

/* The piece's words, each run one read (or a window of runs, read_runs), a band of rows of the
 * packed tensor at a time into tr, then put in the order of the value rows while in cache so
 * that a run of a row's words is one load: GPTQ's word rows [c0 * b/32, c1 * b/32), columns [a,
 * b) of each, by row (raw[n * nw + w]); AWQ GEMM's rows [c0, c1), words [a/8, b/8) of each, by
 * word column (raw[j * cols + k]). */
static nf_status load_words(const nf_source *src, const nf_qweight *q, const piece *p, packed_buffers *bf,
                            nf_error *err)
{
    const uint64_t rows = p->b - p->a, n_all = q->shape[0], cols = p->c1 - p->c0;
    uint32_t *t = (uint32_t *)(void *)bf->raw;
    const uint8_t *band = (const uint8_t *)bf->tr;
    if (q->pack == NF_QPACK_GPTQ) {
        const uint64_t per = 32 / q->bits, nw = cols / per, first = p->c0 / per, nb = band_rows(GPTQ_BAND, rows);
        for (uint64_t w0 = 0; w0 < nw; w0 += nb) {
            const uint64_t w1 = nw - w0 < nb ? nw : w0 + nb;
            NF_TRY(read_runs(src, q->codes, ((first + w0) * n_all + p->a) * 4, n_all * 4, rows * 4, w1 - w0,
                             (uint8_t *)bf->tr, &bf->window, err));
            for (uint64_t n = 0; n < rows; n++)
                for (uint64_t w = w0; w < w1; w++) t[n * nw + w] = le32(band + ((w - w0) * rows + n) * 4);
        }
        return NF_OK;
    }
    const uint64_t nw = rows / 8, row_words = n_all / 8, nb = band_rows(AWQ_BAND, nw);
    for (uint64_t k0 = 0; k0 < cols; k0 += nb) {
        const uint64_t k1 = cols - k0 < nb ? cols : k0 + nb;
        NF_TRY(read_runs(src, q->codes, ((p->c0 + k0) * row_words + p->a / 8) * 4, row_words * 4, nw * 4, k1 - k0,
                         (uint8_t *)bf->tr, &bf->window, err));
        for (uint64_t j = 0; j < nw; j++)
            for (uint64_t k = k0; k < k1; k++) t[j * cols + k] = le32(band + ((k - k0) * nw + j) * 4);
    }
    return NF_OK;
}

/* Rows [a + x, a + y) of a piece whose words load_words read (x, y multiples of 8 for AWQ, or y
 * the piece's end) into out. */
static void decode_rows(const nf_qweight *q, const piece *p, const packed_buffers *bf, uint64_t x, uint64_t y,
                        float *out)
{
    const nf_dialect_unpack_kernels *kern = nf_dialect_unpack_kernels_active();
    if (q->pack == NF_QPACK_GPTQ)
        gptq_values(kern, q, p, (const uint32_t *)(const void *)bf->raw, x, y, bf->s, bf->z, out);
    else awq_values(kern, q, p, (const uint32_t *)(const void *)bf->raw, x, y, bf->s, bf->z, out);
}

static nf_status read_piece(const nf_source *src, const nf_qweight *q, piece *p, packed_buffers *bf, float *out,
                            nf_error *err)
{
    piece_groups(q, p, bf->gidx);
    if (piece_bands(q, p)) { /* the groups first: fetch_groups uses raw as scratch */
        NF_TRY(need_bands(q, bf, err));
        NF_TRY(fetch_groups(src, q, p, bf->s, bf->z, bf->raw, &bf->window, err));
        NF_TRY(load_words(src, q, p, bf, err));
        decode_rows(q, p, bf, 0, p->b - p->a, out);
        return check_finite(src, q, p, bf, out, true, err);
    }
    NF_TRY(need_codes(bf, err));
    NF_TRY(fetch_codes(src, q, p, bf->codes, bf->raw, &bf->window, err));
    if (q->biases) NF_TRY(fetch_affine(src, q, p, bf->s, bf->bias, bf->raw, err));
    else NF_TRY(fetch_groups(src, q, p, bf->s, bf->z, bf->raw, &bf->window, err));
    piece_values(q, p, bf->codes, bf->s, bf->z, bf->bias, bf->gidx, out);
    return check_finite(src, q, p, bf, out, false, err);
}

/* Buffers for pieces of `rows` rows of `cols` columns: the words the codes come from (a code's
 * bits, plus a word per word row or row of either layout), the groups' scales and zero points
 * (and their raw words), g_idx; the codes and the bands' buffers come when needed. */
static nf_status alloc_buffers(const nf_qweight *q, uint64_t rows, uint64_t cols, packed_buffers *bf, nf_error *err)
{
    const uint64_t values = rows * cols, groups = q->act_order ? q->groups : nf_ceil_div_u64(cols, q->block_cols) + 1;
    const uint64_t words = values * q->bits / 32 + 2 * (rows + cols) + 2 * groups + 8;
    memset(bf, 0, sizeof *bf);
    bf->rows = rows;
    bf->cols = cols;
    bf->raw = malloc((size_t)(words * 4 + (q->g_idx ? cols * 8 : 0) + rows * groups * 4));
    bf->s = malloc((size_t)(rows * groups) * sizeof *bf->s);
    bf->z = malloc((size_t)(rows * groups) * sizeof *bf->z);
    if (q->act_order) bf->gidx = malloc((size_t)cols * sizeof *bf->gidx);
    if (q->biases) bf->bias = malloc((size_t)(rows * groups) * sizeof *bf->bias);
    if (bf->raw && bf->s && bf->z && (!q->act_order || bf->gidx) && (!q->biases || bf->bias)) return NF_OK;
    return nf_common_nomem(err);
}

static void free_buffers(packed_buffers *bf)
{
    free(bf->codes);
    free(bf->raw);
    free(bf->window.buf);
    free(bf->tr);
    free(bf->s);
    free(bf->z);
    free(bf->gidx);
    free(bf->bias);
}

/* Rows a piece: as many as PIECE_VALUES holds, a multiple of 32 when that is more than 32 so
 * that pieces after an aligned first one keep AWQ's words whole (piece_bands). */
static uint64_t piece_rows(uint64_t k, uint64_t rows)
{
    uint64_t per = PIECE_VALUES / k;
    per = per >= 32 ? per / 32 * 32 : per ? per : 1;
    return per < rows ? per : rows;
}

nf_status nf_dialect_packed_read(const nf_source *src, const nf_qweight *q, uint64_t r0, uint64_t r1, float *out,
                                 nf_error *err)
{
    const uint64_t k = q->shape[1];
    const uint64_t per = piece_rows(k, r1 - r0);
    packed_buffers bf;
    nf_status st = alloc_buffers(q, per, k, &bf, err);
    if (st == NF_OK && q->act_order) st = fetch_g_idx(src, q, 0, k, bf.gidx, bf.raw, err);
    for (uint64_t a = r0; st == NF_OK && a < r1; a += per) {
        piece p = {a, a + per < r1 ? a + per : r1, 0, k, 0, 0};
        st = read_piece(src, q, &p, &bf, out + (a - r0) * k, err);
    }
    free_buffers(&bf);
    return st;
}

nf_status nf_dialect_packed_span(const nf_source *src, const nf_qweight *q, uint64_t row, uint64_t c0, uint64_t n,
                                 float *out, nf_error *err)
{
    packed_buffers bf;
    nf_status st = alloc_buffers(q, 1, n, &bf, err);
    piece p = {row, row + 1, c0, c0 + n, 0, 0};
    if (st == NF_OK && q->act_order) st = fetch_g_idx(src, q, c0, c0 + n, bf.gidx, bf.raw, err);
    if (st == NF_OK) st = read_piece(src, q, &p, &bf, out, err);
    free_buffers(&bf);
    return st;
}

nf_status nf_qweight_read_ints(const nf_source *src, const nf_qweight *q, uint64_t r0, uint64_t r1, int16_t *ints,
                               size_t ints_len, float *scales, size_t scales_len, nf_error *err)
{
    if (!src || !q || (r1 > r0 && (!ints || !scales)))
        return nf_error_set(err, NF_ERR_USAGE, "nf_qweight_read_ints: missing argument");
    if (q->codes_kind != NF_QCODES_UINT_PACKED || q->act_order || q->biases)
        return nf_error_set(err, NF_ERR_USAGE, "tensor '%s': nf_qweight_read_ints reads GPTQ and AWQ without act-order",
                            q->codes->name);
    const uint64_t k = q->shape[1], g = q->groups;
    if (r0 > r1 || r1 > q->shape[0] || (r1 - r0) * k > ints_len || (r1 - r0) * g > scales_len)
        return nf_error_set(err, NF_ERR_USAGE,
                            "tensor '%s': rows [%" PRIu64 ", %" PRIu64 ") outside its %" PRIu64
                            " rows or the buffers given",
                            q->codes->name, r0, r1, q->shape[0]);
    if (r0 == r1) return NF_OK;
    const uint64_t per = piece_rows(k, r1 - r0);
    packed_buffers bf;
    nf_status st = alloc_buffers(q, per, k, &bf, err);
    for (uint64_t a = r0; st == NF_OK && a < r1; a += per) {
        piece p = {a, a + per < r1 ? a + per : r1, 0, k, 0, g};
        st = need_codes(&bf, err);
        if (st == NF_OK) st = fetch_codes(src, q, &p, bf.codes, bf.raw, &bf.window, err);
        if (st == NF_OK) st = fetch_groups(src, q, &p, bf.s, bf.z, bf.raw, &bf.window, err);
        for (uint64_t n = 0; st == NF_OK && n < p.b - p.a; n++) {
            int16_t *o = ints + (a - r0 + n) * k;
            const uint8_t *cn = bf.codes + n * k;
            for (uint64_t j = 0; j < g; j++) { /* group j: columns [j * block_cols, ...) */
                const uint64_t c1 = (j + 1) * q->block_cols < k ? (j + 1) * q->block_cols : k;
                const int32_t z = bf.z[n * g + j];
                for (uint64_t c = j * q->block_cols; c < c1; c++) o[c] = (int16_t)((int32_t)cn[c] - z);
            }
            memcpy(scales + (a - r0 + n) * g, bf.s + n * g, (size_t)g * sizeof *scales);
        }
    }
    free_buffers(&bf);
    return st;
}

/* ---------------------------------------------------------------- a band of rows read once */
#define HOLD_BYTES ((uint64_t)32 << 20) /* the most a band holds */

uint64_t nf_dialect_rows_most(const nf_qweight *q)
{
    if (!q || (q->pack != NF_QPACK_GPTQ && q->pack != NF_QPACK_AWQ_GEMM) || q->shape[1] == 0) return 0;
    const uint64_t k = q->shape[1];
    const piece whole = {0, 8, 0, k, 0, 0};
    if (!piece_bands(q, &whole)) return 0;
    /* a row's words, its groups' scales and zero points with their scratch (alloc_buffers), and
     * its share of the band read at a time (need_bands; a band of few rows holds BAND_WORDS, 64
     * KiB, beside the bound, as the window does) */
    const uint64_t groups = nf_ceil_div_u64(k, q->block_cols) + 1;
    const uint64_t row = k * q->bits / 8 + 12 * groups + 8 + 4 * GPTQ_BAND;
    const uint64_t most = HOLD_BYTES / row / 8 * 8;
    return most;
}

struct nf_dialect_rows {
    const nf_source *src;
    const nf_qweight *q;
    uint64_t r0, r1;
    bool held; /* GPTQ/AWQ by bands: the words, scales and zero points of [r0, r1) are in bf */
    piece p;
    packed_buffers bf;
};

nf_status nf_dialect_rows_open(const nf_source *src, const nf_qweight *q, uint64_t r0, uint64_t r1,
                               nf_dialect_rows **out, nf_error *err)
{
    if (!out) return nf_error_set(err, NF_ERR_USAGE, "nf_dialect_rows_open: missing argument");
    *out = NULL;
    if (!src || !q || r0 > r1 || r1 > q->shape[0] || q->pack == NF_QPACK_ROWS || q->pack == NF_QPACK_BNB)
        return nf_error_set(err, NF_ERR_USAGE, "nf_dialect_rows_open: rows [%" PRIu64 ", %" PRIu64 ") of %s", r0, r1,
                            q ? q->codes->name : "(none)");
    nf_dialect_rows *c = calloc(1, sizeof *c);
    if (!c) return nf_common_nomem(err);
    const uint64_t k = q->shape[1];
    *c = (nf_dialect_rows){src, q, r0, r1, false, {r0, r1, 0, k, 0, 0}, {0}};
    if (r1 > r0 && r1 - r0 <= nf_dialect_rows_most(q) && piece_bands(q, &c->p)) {
        nf_status st = alloc_buffers(q, r1 - r0, k, &c->bf, err);
        if (st == NF_OK) st = need_bands(q, &c->bf, err);
        if (st == NF_OK) {
            piece_groups(q, &c->p, NULL);
            st = fetch_groups(src, q, &c->p, c->bf.s, c->bf.z, c->bf.raw, &c->bf.window, err);
        }
        if (st == NF_OK) st = load_words(src, q, &c->p, &c->bf, err);
        if (st != NF_OK) {
            nf_dialect_rows_close(c);
            return st;
        }
        c->held = true;
    }
    *out = c;
    return NF_OK;
}

nf_status nf_dialect_rows_read(nf_dialect_rows *c, uint64_t a, uint64_t b, float *out, size_t out_len, nf_error *err)
{
    if (!c) return nf_error_set(err, NF_ERR_USAGE, "nf_dialect_rows_read: missing argument");
    const nf_qweight *q = c->q;
    const uint64_t k = q->shape[1];
    if (a > b || a < c->r0 || b > c->r1 || b - a > out_len / (k ? k : 1))
        return nf_error_set(err, NF_ERR_USAGE,
                            "tensor '%s': rows [%" PRIu64 ", %" PRIu64 ") outside the band [%" PRIu64 ", %" PRIu64
                            ") or the buffer given",
                            q->codes->name, a, b, c->r0, c->r1);
    /* AWQ's words hold 8 rows: a reading that cuts one goes the plain way */
    const bool whole = q->pack != NF_QPACK_AWQ_GEMM || (a % 8 == 0 && b % 8 == 0);
    if (a == b) return NF_OK;
    if (!c->held || !whole) return nf_dialect_packed_read(c->src, q, a, b, out, err);
    decode_rows(q, &c->p, &c->bf, a - c->r0, b - c->r0, out);
    const uint64_t ng = c->p.g1 - c->p.g0;
    piece sub = {a, b, c->p.c0, c->p.c1, c->p.g0, c->p.g1};
    packed_buffers at = c->bf; /* the rows' scales and zero points, for check_finite's message */
    at.s += (a - c->r0) * ng;
    at.z += (a - c->r0) * ng;
    at.rows = b - a;
    nf_status st = check_finite(c->src, q, &sub, &at, out, true, err);
    if (at.codes != c->bf.codes) free(at.codes);
    if (st != NF_OK) c->held = false; /* its message read codes over the words: later rows go the plain way */
    return st;
}

void nf_dialect_rows_close(nf_dialect_rows *c)
{
    if (!c) return;
    free_buffers(&c->bf);
    free(c);
}
