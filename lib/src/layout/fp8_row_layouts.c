/* The FP8 row layouts: row_scale_v1 (docs/layouts.md 6: code plane N*K, zeros up to a 256-aligned
 * plane of LE BF16 row scales) and row_interleaved_v1 (3.5: each row record is its K codes
 * followed immediately by its LE binary16 scale, no padding anywhere). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "layout/kernels.h"
#include "layout/layout_impl.h"

/* Does any of the n codes have the NaN pattern (code & 0x7F) == 0x7F?  Eight at a time: a byte
 * whose low 7 bits are all ones is the only one that carries into its top bit when 1 is added to
 * them. */
static bool fp8_any_nan(const uint8_t *codes, uint64_t n)
{
    const uint64_t low7 = 0x7F7F7F7F7F7F7F7Full, ones = 0x0101010101010101ull, top = 0x8080808080808080ull;
    uint64_t bad = 0, i = 0;
    for (; i + 32 <= n; i += 32) {
        uint64_t v[4];
        memcpy(v, codes + i, sizeof v);
        bad |= (((v[0] & low7) + ones) | ((v[1] & low7) + ones) | ((v[2] & low7) + ones) | ((v[3] & low7) + ones)) &
               top;
    }
    for (; i + 8 <= n; i += 8) {
        uint64_t v;
        memcpy(&v, codes + i, sizeof v);
        bad |= ((v & low7) + ones) & top;
    }
    for (; i < n; i++) bad |= (codes[i] & 0x7Fu) == 0x7Fu;
    return bad != 0;
}

/* Word rules of one row (docs/formats.md 7.2: E4M3FN codes not NaN, scale sign-clear and finite, a
 * +0 scale admits only signed-zero codes).  Every bad code is reported. */
static void fp8_check_row(const nf_geometry *g, uint64_t row, const uint8_t *codes, uint64_t code_at, uint16_t scale,
                          uint64_t scale_at, nf_problems *pr)
{
    const nf_format *f = g->format;
    bool scale_ok = nf_fp8_row_scale_valid(f, scale);
    if (nf_layout_check_fast && scale_ok && !nf_fp8_row_scale_is_zero(scale) && !fp8_any_nan(codes, g->cols)) return;
    if (!scale_ok)
        nf_problems_add(pr,
                        "row %" PRIu64 ": scale 0x%04x at byte offset %" PRIu64
                        " is not a valid %s row scale (negative, -0, "
                        "infinite or NaN)",
                        row, scale, scale_at, f->name);
    bool zero_only = scale_ok && nf_fp8_row_scale_is_zero(scale);
    for (uint64_t c = 0; c < g->cols; c++) {
        uint8_t v = codes[c];
        if (!nf_fp8_code_valid(v))
            nf_problems_add(pr,
                            "row %" PRIu64 " col %" PRIu64 ": code 0x%02x at byte offset %" PRIu64
                            " is NaN (not a valid E4M3FN weight code)",
                            row, c, v, code_at + c);
        else if (zero_only && !nf_fp8_code_is_zero(v))
            nf_problems_add(pr,
                            "row %" PRIu64 " col %" PRIu64 ": code 0x%02x at byte offset %" PRIu64
                            " under a +0 row scale (only 0x00/0x80 allowed)",
                            row, c, v, code_at + c);
    }
}

/* ---------------------------------------------------------------- row_scale_v1 */
static nf_status rsc_encode_rows(const nf_geometry *g, const nf_words *w, uint64_t r0, nf_write_fn write, void *ctx,
                                 nf_error *err)
{
    uint64_t k = g->cols;
    const nf_plane *cp = &g->planes[0], *sp = &g->planes[1];
    /* The code plane is the codes array itself: written straight from w in bounded pieces. */
    for (uint64_t r = 0; r < w->rows;) {
        uint64_t n = nf_layout_chunk_rows(k, w->rows - r);
        NF_TRY(nf_layout_emit(write, ctx, cp->offset + (r0 + r) * k, w->codes8 + r * k, n * k, err));
        r += n;
    }
    uint8_t buf[2 * 256];
    for (uint64_t r = 0; r < w->rows;) {
        uint64_t n = w->rows - r < 256 ? w->rows - r : 256;
        for (uint64_t i = 0; i < n; i++) nf_put_le16(buf + 2 * i, w->scales[r + i]);
        NF_TRY(nf_layout_emit(write, ctx, sp->offset + 2 * (r0 + r), buf, 2 * n, err));
        r += n;
    }
    return NF_OK;
}

static nf_status rsc_decode_rows(const nf_geometry *g, const nf_byte_reader *src, uint64_t r0, uint64_t r1, nf_words *w,
                                 nf_error *err)
{
    uint64_t k = g->cols, rows = r1 - r0;
    const nf_plane *cp = &g->planes[0], *sp = &g->planes[1];
    for (uint64_t r = 0; r < rows;) {
        uint64_t n = nf_layout_chunk_rows(k, rows - r);
        NF_TRY(nf_layout_read(src, cp->offset + (r0 + r) * k, w->codes8 + r * k, n * k, err));
        r += n;
    }
    uint8_t buf[2 * 256];
    for (uint64_t r = 0; r < rows;) {
        uint64_t n = rows - r < 256 ? rows - r : 256;
        NF_TRY(nf_layout_read(src, sp->offset + 2 * (r0 + r), buf, 2 * n, err));
        for (uint64_t i = 0; i < n; i++) w->scales[r + i] = nf_get_le16(buf + 2 * i);
        r += n;
    }
    return NF_OK;
}

/* rsc_decode_rows + nf_words_to_f32, a bounded chunk of rows at a time: the chunk's codes, then
 * its scales (the split path reads every code before the first scale). */
static nf_status rsc_decode_f32(const nf_geometry *g, const nf_byte_reader *src, uint64_t r0, uint64_t r1, float *out,
                                nf_error *err)
{
    uint64_t k = g->cols, rows = r1 - r0;
    const nf_plane *cp = &g->planes[0], *sp = &g->planes[1];
    const nf_layout_kernels *kern = nf_layout_kernels_active();
    uint64_t chunk = nf_layout_chunk_rows(k, rows);
    uint8_t *codes = nf_layout_malloc(chunk * k, err);
    if (!codes) return NF_ERR_NOMEM;
    uint8_t buf[2 * 256];
    nf_status st = NF_OK;
    for (uint64_t r = 0; r < rows && st == NF_OK; r += chunk) {
        uint64_t n = rows - r < chunk ? rows - r : chunk;
        st = nf_layout_read(src, cp->offset + (r0 + r) * k, codes, n * k, err);
        for (uint64_t i = 0; i < n && st == NF_OK;) {
            uint64_t m = n - i < 256 ? n - i : 256;
            st = nf_layout_read(src, sp->offset + 2 * (r0 + r + i), buf, 2 * m, err);
            for (uint64_t j = 0; j < m && st == NF_OK; j++)
                nf_fp8_row_f32(kern, g->format, codes + (i + j) * k, (size_t)k, nf_get_le16(buf + 2 * j),
                               out + (r + i + j) * k);
            i += m;
        }
    }
    free(codes);
    return st;
}

static nf_status rsc_check(const nf_geometry *g, const nf_byte_reader *src, nf_problems *pr, nf_error *err)
{
    uint64_t k = g->cols;
    const nf_plane *cp = &g->planes[0], *sp = &g->planes[1];
    uint64_t chunk = nf_layout_chunk_rows(k + 2, g->rows);
    uint8_t *codes = nf_layout_malloc(chunk * k, err);
    uint8_t *scales = codes ? nf_layout_malloc(chunk * 2, err) : NULL;
    if (!scales) {
        free(codes);
        return NF_ERR_NOMEM;
    }
    nf_status st = NF_OK;
    for (uint64_t r = 0; r < g->rows; r += chunk) {
        uint64_t n = g->rows - r < chunk ? g->rows - r : chunk;
        st = nf_layout_read(src, cp->offset + r * k, codes, n * k, err);
        if (st == NF_OK) st = nf_layout_read(src, sp->offset + 2 * r, scales, 2 * n, err);
        if (st != NF_OK) break;
        for (uint64_t i = 0; i < n; i++)
            fp8_check_row(g, r + i, codes + i * k, cp->offset + (r + i) * k, nf_get_le16(scales + 2 * i),
                          sp->offset + 2 * (r + i), pr);
    }
    free(codes);
    free(scales);
    return st;
}

const nf_layout_ops nf_layout_ops_row_scale = {
    .encode_rows = rsc_encode_rows,
    .decode_rows = rsc_decode_rows,
    .decode_f32 = rsc_decode_f32,
    .check = rsc_check,
};

/* ---------------------------------------------------------------- row_interleaved_v1 */
static nf_status ril_encode_rows(const nf_geometry *g, const nf_words *w, uint64_t r0, nf_write_fn write, void *ctx,
                                 nf_error *err)
{
    uint64_t k = g->cols, rb = g->row_bytes;
    uint64_t chunk = nf_layout_chunk_rows(rb, w->rows);
    uint8_t *buf = nf_layout_malloc(chunk * rb, err);
    if (!buf) return NF_ERR_NOMEM;
    nf_status st = NF_OK;
    for (uint64_t r = 0; r < w->rows && st == NF_OK; r += chunk) {
        uint64_t n = w->rows - r < chunk ? w->rows - r : chunk;
        for (uint64_t i = 0; i < n; i++) {
            memcpy(buf + i * rb, w->codes8 + (r + i) * k, (size_t)k);
            nf_put_le16(buf + i * rb + k, w->scales[r + i]);
        }
        st = nf_layout_emit(write, ctx, (r0 + r) * rb, buf, n * rb, err);
    }
    free(buf);
    return st;
}

static nf_status ril_decode_rows(const nf_geometry *g, const nf_byte_reader *src, uint64_t r0, uint64_t r1, nf_words *w,
                                 nf_error *err)
{
    uint64_t k = g->cols, rb = g->row_bytes, rows = r1 - r0;
    uint64_t chunk = nf_layout_chunk_rows(rb, rows);
    uint8_t *buf = nf_layout_malloc(chunk * rb, err);
    if (!buf) return NF_ERR_NOMEM;
    nf_status st = NF_OK;
    for (uint64_t r = 0; r < rows; r += chunk) {
        uint64_t n = rows - r < chunk ? rows - r : chunk;
        st = nf_layout_read(src, (r0 + r) * rb, buf, n * rb, err);
        if (st != NF_OK) break;
        for (uint64_t i = 0; i < n; i++) {
            memcpy(w->codes8 + (r + i) * k, buf + i * rb, (size_t)k);
            w->scales[r + i] = nf_get_le16(buf + i * rb + k);
        }
    }
    free(buf);
    return st;
}

/* ril_decode_rows + nf_words_to_f32: the same chunk reads, each row straight to values. */
static nf_status ril_decode_f32(const nf_geometry *g, const nf_byte_reader *src, uint64_t r0, uint64_t r1, float *out,
                                nf_error *err)
{
    uint64_t k = g->cols, rb = g->row_bytes, rows = r1 - r0;
    const nf_layout_kernels *kern = nf_layout_kernels_active();
    uint64_t chunk = nf_layout_chunk_rows(rb, rows);
    uint8_t *buf = nf_layout_malloc(chunk * rb, err);
    if (!buf) return NF_ERR_NOMEM;
    nf_status st = NF_OK;
    for (uint64_t r = 0; r < rows; r += chunk) {
        uint64_t n = rows - r < chunk ? rows - r : chunk;
        st = nf_layout_read(src, (r0 + r) * rb, buf, n * rb, err);
        if (st != NF_OK) break;
        for (uint64_t i = 0; i < n; i++)
            nf_fp8_row_f32(kern, g->format, buf + i * rb, (size_t)k, nf_get_le16(buf + i * rb + k), out + (r + i) * k);
    }
    free(buf);
    return st;
}

static nf_status ril_check(const nf_geometry *g, const nf_byte_reader *src, nf_problems *pr, nf_error *err)
{
    uint64_t k = g->cols, rb = g->row_bytes;
    uint64_t chunk = nf_layout_chunk_rows(rb, g->rows);
    uint8_t *buf = nf_layout_malloc(chunk * rb, err);
    if (!buf) return NF_ERR_NOMEM;
    nf_status st = NF_OK;
    for (uint64_t r = 0; r < g->rows; r += chunk) {
        uint64_t n = g->rows - r < chunk ? g->rows - r : chunk;
        st = nf_layout_read(src, r * rb, buf, n * rb, err);
        if (st != NF_OK) break;
        for (uint64_t i = 0; i < n; i++)
            fp8_check_row(g, r + i, buf + i * rb, (r + i) * rb, nf_get_le16(buf + i * rb + k), (r + i) * rb + k, pr);
    }
    free(buf);
    return st;
}

const nf_layout_ops nf_layout_ops_row_interleaved = {
    .encode_rows = ril_encode_rows,
    .decode_rows = ril_decode_rows,
    .decode_f32 = ril_decode_f32,
    .check = ril_check,
};
