/* Spans of long rows (ninfer/layout.h, docs/layouts.md "Spans of a row"): where a [1, w] piece
 * of a row lies in the whole object, layout by layout.  Every layout but nvfp4 stores a row's
 * columns in order within each plane, at a fixed number of bytes per column unit (a column, a
 * group of row_split, a ggml block), so a span is one run per plane: the same bytes the whole
 * row would have there, padding included (a span ends at the row's end or on a multiple of
 * NF_COLSPAN_ALIGN, which every group and block size divides).  nvfp4's spans are [128, w]
 * pieces of a 128-row tile band: a run of codes per row, one run of scale tiles (a band's tiles
 * of 64 columns are 512 contiguous bytes each) and the band's divisor word. */
#include <inttypes.h>

#include "layout/layout_impl.h"

bool nf_layout_has_colspans(const nf_geometry *g)
{
    if (!g || !g->layout || !g->format) return false;
    switch (g->layout->id) {
    case NF_LAYOUT_CONTIGUOUS_LE_V1:
    case NF_LAYOUT_ROW_SPLIT_K128_V1:
    case NF_LAYOUT_ROW_SCALE_V1:
    case NF_LAYOUT_ROW_INTERLEAVED_V1:
    case NF_LAYOUT_GGUF_BLOCKS_V1: return true;
    default: return false;
    }
}

uint64_t nf_layout_colspan_rows(const nf_geometry *g)
{
    if (nf_layout_has_colspans(g)) return 1;
    return g && g->layout && g->format && g->layout->id == NF_LAYOUT_BLOCK_SCALE_K16_M128X4_V1 ? 128 : 0;
}

nf_status nf_colspan_init(nf_colspan *s, const nf_geometry *whole, uint64_t row, uint64_t c0, uint64_t w, nf_error *err)
{
    if (!s || !whole) return nf_error_set(err, NF_ERR_USAGE, "nf_colspan_init: missing argument");
    const uint64_t band = nf_layout_colspan_rows(whole);
    if (!band)
        return nf_error_set(err, NF_ERR_USAGE, "layout %s has no spans of rows",
                            whole->layout ? whole->layout->name : "(none)");
    uint64_t end;
    if (row >= whole->rows || row % band != 0 || w == 0 || !nf_add_u64(c0, w, &end) || end > whole->cols ||
        c0 % NF_COLSPAN_ALIGN != 0 || (end != whole->cols && w % NF_COLSPAN_ALIGN != 0))
        return nf_error_set(err, NF_ERR_USAGE,
                            "span of row %" PRIu64 " cols [%" PRIu64 ", +%" PRIu64 ") does not fit a [%" PRIu64
                            ", %" PRIu64 "] tensor in multiples of %u columns",
                            row, c0, w, whole->rows, whole->cols, NF_COLSPAN_ALIGN);
    const uint64_t shape[2] = {band, w};
    NF_TRY(nf_geometry_init(&s->g, whole->layout, whole->format, 2, shape, 1, err));
    s->whole = whole;
    s->row = row;
    s->c0 = c0;
    return NF_OK;
}

/* The plane of g holding byte off, or -1. */
static int plane_of(const nf_geometry *g, uint64_t off)
{
    for (uint32_t p = 0; p < g->nplanes; p++)
        if (off >= g->planes[p].offset && off - g->planes[p].offset < g->planes[p].bytes) return (int)p;
    return -1;
}

bool nf_colspan_map(const nf_colspan *s, uint64_t off, uint64_t len, uint64_t *whole_off, uint64_t *run, bool *shared)
{
    const nf_geometry *g = &s->g, *wg = s->whole;
    int p = plane_of(g, off);
    if (p < 0 || len == 0) return false;
    const nf_plane *ps = &g->planes[p], *pw = &wg->planes[p];
    uint64_t rel = off - ps->offset, left = ps->bytes - rel;
    uint64_t row_start = pw->offset + s->row * pw->row_bytes;
    *shared = false;
    switch (g->layout->id) {
    case NF_LAYOUT_ROW_SPLIT_K128_V1:
        /* plane bytes are linear in groups: c0 / G whole groups come first in the row */
        *whole_off = row_start + s->c0 / g->format->group_size * (pw->row_bytes / wg->groups_per_row) + rel;
        break;
    case NF_LAYOUT_ROW_SCALE_V1:
        if (p == 0) {
            *whole_off = row_start + s->c0 + rel; /* one code byte per column */
        } else {
            *whole_off = row_start + rel; /* the row's scale */
            *shared = true;
        }
        break;
    case NF_LAYOUT_ROW_INTERLEAVED_V1:
        /* a record is K codes then the 2-byte scale: the span's record is w codes then it */
        if (rel < g->cols) {
            *whole_off = row_start + s->c0 + rel;
            left = g->cols - rel;
        } else {
            *whole_off = row_start + wg->cols + (rel - g->cols);
            *shared = true;
        }
        break;
    case NF_LAYOUT_GGUF_BLOCKS_V1:
        *whole_off = row_start + s->c0 / g->format->block_values * g->format->block_bytes + rel;
        break;
    case NF_LAYOUT_BLOCK_SCALE_K16_M128X4_V1:
        if (p == 0) { /* codes: row i of the band, w / 2 bytes from column c0 on */
            uint64_t rb = g->cols / 2, i = rel / rb, j = rel % rb;
            *whole_off = pw->offset + (s->row + i) * (wg->cols / 2) + s->c0 / 2 + j;
            left = rb - j;
        } else if (p == 1) { /* scales: the band's tiles from column c0 on (docs/layouts.md 5.2) */
            *whole_off = pw->offset + (s->row / 128 * (wg->cols / 64) + s->c0 / 64) * 512 + rel;
        } else { /* the band's divisor word (a divisor covers whole bands), shared */
            *whole_off = pw->offset + s->row / (wg->rows / wg->divisors) * 4 + rel;
            *shared = true;
        }
        break;
    default: /* contiguous: a fixed number of bytes per column */
        *whole_off = row_start + s->c0 * (pw->row_bytes / wg->cols) + rel;
        break;
    }
    *run = len < left ? len : left;
    return true;
}

nf_status nf_colspan_write(void *sink, uint64_t offset, const void *buf, size_t len, nf_error *err)
{
    const nf_colspan_sink *k = sink;
    const uint8_t *p = buf;
    while (len > 0) {
        uint64_t at, run;
        bool shared;
        if (!nf_colspan_map(k->span, offset, len, &at, &run, &shared))
            return nf_error_set(err, NF_ERR_USAGE, "span write at byte %" PRIu64 " is in no plane", offset);
        if (!shared || k->span->c0 == 0) NF_TRY(k->write(k->ctx, at, p, (size_t)run, err));
        p += run;
        offset += run;
        len -= (size_t)run;
    }
    return NF_OK;
}

static nf_status span_read(void *ctx, uint64_t offset, void *buf, size_t len, nf_error *err)
{
    const nf_colspan_source *s = ctx;
    uint8_t *p = buf;
    while (len > 0) {
        uint64_t at, run;
        bool shared;
        if (!nf_colspan_map(s->span, offset, len, &at, &run, &shared))
            return nf_error_set(err, NF_ERR_USAGE, "span read at byte %" PRIu64 " is in no plane", offset);
        NF_TRY(s->whole->read(s->whole->ctx, at, p, (size_t)run, err));
        p += run;
        offset += run;
        len -= (size_t)run;
    }
    return NF_OK;
}

void nf_colspan_reader(nf_colspan_source *src, nf_byte_reader *out)
{
    out->read = span_read;
    out->ctx = src;
}
