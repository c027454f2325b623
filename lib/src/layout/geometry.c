/* Geometry of every layout (docs/layouts.md 3-8): shape rules, checked encoded size and the plane
 * table; and the row spans of a row range.  Shapes come from untrusted directories, so every
 * size is computed with the checked U64 helpers and an overflow is an error. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "layout/layout_impl.h"

/* "[a,b,c]" for messages; truncated with "..." when long. */
static void shape_text(char *buf, size_t size, uint32_t rank, const uint64_t *shape)
{
    size_t used = 0;
    int n = snprintf(buf, size, "[");
    if (n > 0) used = (size_t)n;
    for (uint32_t i = 0; i < rank && used < size; i++) {
        n = snprintf(buf + used, size - used, "%s%" PRIu64, i ? "," : "", shape[i]);
        if (n < 0) break;
        used += (size_t)n;
    }
    if (used < size) snprintf(buf + used, size - used, "]");
}

static nf_status overflow(const nf_geometry *g, nf_error *err)
{
    char s[400];
    shape_text(s, sizeof s, g->rank, g->shape);
    return nf_error_set(err, NF_ERR_INVALID, "shape %s: encoded size of %s in layout '%s' overflows U64", s,
                        g->format ? g->format->name : "resource", g->layout->name);
}

static void add_plane(nf_geometry *g, const char *name, uint64_t offset, uint64_t bytes, uint64_t row_bytes)
{
    nf_plane *p = &g->planes[g->nplanes++];
    p->name = name;
    p->offset = offset;
    p->bytes = bytes;
    p->row_bytes = row_bytes;
}

static nf_status geometry_contiguous(nf_geometry *g, nf_error *err)
{
    uint64_t elements = 1, rows = 1;
    for (uint32_t i = 0; i < g->rank; i++) {
        if (g->shape[i] == 0) {
            char s[400];
            shape_text(s, sizeof s, g->rank, g->shape);
            return nf_error_set(err, NF_ERR_INVALID,
                                "shape %s: dimension %u is 0 (layout '%s' needs positive dimensions)", s, i,
                                g->layout->name);
        }
        if (!nf_mul_u64(elements, g->shape[i], &elements)) return overflow(g, err);
        /* rows is a prefix product of elements, so it cannot overflow once elements did not. */
        if (i + 1 < g->rank) rows *= g->shape[i];
    }
    g->elements = elements;
    g->rows = rows;
    g->cols = g->rank ? g->shape[g->rank - 1] : 1;
    uint64_t wb = g->format->word_bytes;
    if (!nf_mul_u64(elements, wb, &g->bytes)) return overflow(g, err);
    g->row_bytes = g->cols * wb; /* <= bytes */
    add_plane(g, "words", 0, g->bytes, g->row_bytes);
    return NF_OK;
}

static nf_status geometry_row_split(nf_geometry *g, nf_error *err)
{
    nf_rs_params p;
    if (!nf_rs_params_for(g->format, &p))
        return nf_error_set(err, NF_ERR_INVALID, "format '%s' has no row_split_k128_v1 parameters", g->format->name);
    uint64_t n = g->rows, k = g->cols;
    uint64_t k_pad, base_row, high_row, scale_row, base_bytes, high_bytes, scale_bytes;
    uint64_t high_off, high_span, scale_off, total;
    if (!nf_align_up_u64(k, 128, &k_pad)) return overflow(g, err);
    g->k_pad = k_pad;
    g->groups_per_row = k_pad / p.group;
    g->logical_groups = nf_ceil_div_u64(k, p.group);
    if (!nf_mul_u64(g->groups_per_row, p.base_bytes, &base_row) ||
        !nf_mul_u64(g->groups_per_row, p.high_bytes, &high_row) || !nf_mul_u64(g->groups_per_row, 2, &scale_row) ||
        !nf_mul_u64(n, base_row, &base_bytes) || !nf_mul_u64(n, high_row, &high_bytes) ||
        !nf_mul_u64(n, scale_row, &scale_bytes) || !nf_align_up_u64(base_bytes, 256, &high_off) ||
        !nf_align_up_u64(high_bytes, 256, &high_span) || !nf_add_u64(high_off, high_span, &scale_off) ||
        !nf_add_u64(scale_off, scale_bytes, &total))
        return overflow(g, err);
    g->bytes = total;
    add_plane(g, "codes", 0, base_bytes, base_row);
    if (p.high_bytes) add_plane(g, "high", high_off, high_bytes, high_row);
    add_plane(g, "scales", scale_off, scale_bytes, scale_row);
    return NF_OK;
}

static nf_status geometry_nvfp4(nf_geometry *g, uint64_t divisors, nf_error *err)
{
    uint64_t n = g->rows, k = g->cols;
    if (n % 128 != 0 || k % 64 != 0)
        return nf_error_set(err, NF_ERR_INVALID,
                            "nvfp4 needs N %% 128 == 0 and K %% 64 == 0, got [%" PRIu64 ",%" PRIu64 "]", n, k);
    if (divisors == 0 || n % divisors != 0 || (divisors > 1 && (n / divisors) % 128 != 0))
        return nf_error_set(err, NF_ERR_INVALID,
                            "nvfp4 divisors=%" PRIu64 " does not split N=%" PRIu64
                            " into whole 128-row tiles (divisors must be >= 1 and divide N into "
                            "multiples of 128 rows)",
                            divisors, n);
    uint64_t code_bytes, scale_off, scale_bytes, div_off, div_bytes, total;
    if (!nf_mul_u64(n, k / 2, &code_bytes) || !nf_align_up_u64(code_bytes, 256, &scale_off) ||
        !nf_mul_u64(n, k / 16, &scale_bytes) || !nf_add_u64(scale_off, scale_bytes, &div_off) ||
        !nf_mul_u64(divisors, 4, &div_bytes) || !nf_add_u64(div_off, div_bytes, &total))
        return overflow(g, err);
    g->divisors = divisors;
    g->bytes = total;
    add_plane(g, "codes", 0, code_bytes, k / 2);
    add_plane(g, "scales", scale_off, scale_bytes, 0);
    add_plane(g, "divisors", div_off, div_bytes, 0);
    return NF_OK;
}

static nf_status geometry_row_scale(nf_geometry *g, nf_error *err)
{
    uint64_t n = g->rows, k = g->cols, code_bytes, scale_off, scale_bytes, total;
    if (!nf_mul_u64(n, k, &code_bytes) || !nf_align_up_u64(code_bytes, 256, &scale_off) ||
        !nf_mul_u64(n, 2, &scale_bytes) || !nf_add_u64(scale_off, scale_bytes, &total))
        return overflow(g, err);
    g->bytes = total;
    add_plane(g, "codes", 0, code_bytes, k);
    add_plane(g, "scales", scale_off, scale_bytes, 2);
    return NF_OK;
}

static nf_status geometry_row_interleaved(nf_geometry *g, nf_error *err)
{
    uint64_t row, total;
    if (!nf_add_u64(g->cols, 2, &row) || !nf_mul_u64(g->rows, row, &total)) return overflow(g, err);
    g->row_bytes = row;
    g->bytes = total;
    add_plane(g, "rows", 0, total, row);
    return NF_OK;
}

static nf_status geometry_gguf(nf_geometry *g, nf_error *err)
{
    const nf_format *f = g->format;
    if (f->block_values == 0 || f->block_bytes == 0)
        return nf_error_set(err, NF_ERR_INVALID, "format '%s' has no ggml block size", f->name);
    if (g->cols % f->block_values != 0)
        return nf_error_set(err, NF_ERR_INVALID,
                            "format '%s' needs K %% %u == 0 (whole ggml blocks per row), got K=%" PRIu64, f->name,
                            f->block_values, g->cols);
    uint64_t row, total;
    if (!nf_mul_u64(g->cols / f->block_values, f->block_bytes, &row) || !nf_mul_u64(g->rows, row, &total))
        return overflow(g, err);
    g->row_bytes = row;
    g->bytes = total;
    add_plane(g, "blocks", 0, total, row);
    return NF_OK;
}

nf_status nf_geometry_init(nf_geometry *g, const nf_layout *layout, const nf_format *fmt, uint32_t rank,
                           const uint64_t *shape, uint64_t divisors, nf_error *err)
{
    if (!g || !layout || !fmt || (rank > 0 && !shape))
        return nf_error_set(err, NF_ERR_USAGE, "nf_geometry_init: missing geometry, layout, format or shape");
    memset(g, 0, sizeof *g);
    if (!nf_layout_accepts(layout, fmt))
        return nf_error_set(err, NF_ERR_INVALID, "layout '%s' does not accept format '%s'", layout->name, fmt->name);
    if (rank > NF_MAX_RANK)
        return nf_error_set(err, NF_ERR_INVALID, "rank %u exceeds the maximum rank %d", rank, NF_MAX_RANK);
    g->layout = layout;
    g->format = fmt;
    g->rank = rank;
    for (uint32_t i = 0; i < rank; i++) g->shape[i] = shape[i];
    g->divisors = 1;
    if (layout->id != NF_LAYOUT_BLOCK_SCALE_K16_M128X4_V1 && divisors != 1)
        return nf_error_set(err, NF_ERR_INVALID,
                            "divisors=%" PRIu64 " is only allowed for nvfp4 (layout '%s' has no divisors)", divisors,
                            layout->name);
    if (layout->id == NF_LAYOUT_CONTIGUOUS_LE_V1) return geometry_contiguous(g, err);

    /* Every other tensor layout holds a positive matrix [N,K]. */
    if (rank != 2 || shape[0] == 0 || shape[1] == 0) {
        char s[400];
        shape_text(s, sizeof s, rank, shape);
        return nf_error_set(err, NF_ERR_INVALID, "layout '%s' needs a rank-2 shape [N,K] with N,K > 0, got %s",
                            layout->name, s);
    }
    g->rows = shape[0];
    g->cols = shape[1];
    if (!nf_mul_u64(g->rows, g->cols, &g->elements)) return overflow(g, err);
    switch (layout->id) {
    case NF_LAYOUT_ROW_SPLIT_K128_V1: return geometry_row_split(g, err);
    case NF_LAYOUT_BLOCK_SCALE_K16_M128X4_V1: return geometry_nvfp4(g, divisors, err);
    case NF_LAYOUT_ROW_SCALE_V1: return geometry_row_scale(g, err);
    case NF_LAYOUT_ROW_INTERLEAVED_V1: return geometry_row_interleaved(g, err);
    case NF_LAYOUT_GGUF_BLOCKS_V1: return geometry_gguf(g, err);
    case NF_LAYOUT_CONTIGUOUS_LE_V1:
    case NF_LAYOUT_RAW_BYTES_V1:
    case NF_LAYOUT_COUNT: break;
    }
    return nf_error_set(err, NF_ERR_INVALID, "layout '%s' has no geometry", layout->name);
}

/* A resource is one row of `bytes` raw bytes, so row-based code (decode, spans) needs no case
 * of its own. */
nf_status nf_geometry_resource(nf_geometry *g, uint64_t bytes, nf_error *err)
{
    if (!g) return nf_error_set(err, NF_ERR_USAGE, "nf_geometry_resource: missing geometry");
    memset(g, 0, sizeof *g);
    if (bytes == 0) return nf_error_set(err, NF_ERR_INVALID, "a raw_bytes_v1 resource needs at least 1 byte");
    g->layout = nf_layout_by_id(NF_LAYOUT_RAW_BYTES_V1);
    g->format = NULL;
    g->rank = 1;
    g->shape[0] = bytes;
    g->elements = bytes;
    g->rows = 1;
    g->cols = bytes;
    g->divisors = 1;
    g->bytes = bytes;
    g->row_bytes = bytes;
    add_plane(g, "bytes", 0, bytes, bytes);
    return NF_OK;
}

nf_status nf_layout_row_spans(const nf_geometry *g, uint64_t r0, uint64_t r1, nf_span *spans, uint32_t *nspans,
                              nf_error *err)
{
    if (!g || !g->layout || !spans || !nspans)
        return nf_error_set(err, NF_ERR_USAGE, "nf_layout_row_spans: missing argument");
    *nspans = 0;
    if (r0 > r1 || r1 > g->rows)
        return nf_error_set(err, NF_ERR_INVALID,
                            "rows [%" PRIu64 ",%" PRIu64 ") are outside the tensor's %" PRIu64 " rows", r0, r1,
                            g->rows);
    bool nvfp4 = g->layout->id == NF_LAYOUT_BLOCK_SCALE_K16_M128X4_V1;
    if (nvfp4 && (r0 % 128 != 0 || r1 % 128 != 0))
        return nf_error_set(err, NF_ERR_INVALID,
                            "nvfp4 row views need multiples of 128 rows (its scale plane is tiled), got [%" PRIu64
                            ",%" PRIu64 ")",
                            r0, r1);
    uint32_t n = 0;
    for (uint32_t i = 0; i < g->nplanes; i++) {
        const nf_plane *p = &g->planes[i];
        uint64_t unit = p->row_bytes;
        /* A 128-row tile of the swizzled scale plane is 128 * K/16 contiguous bytes, so a
         * tile-aligned row range maps to K/16 bytes per row. */
        if (nvfp4 && i == 1) unit = g->cols / 16;
        if (unit == 0) continue; /* divisors: not part of a row view */
        spans[n].plane = i;
        spans[n].offset = p->offset + r0 * unit; /* within the plane, so below g->bytes */
        spans[n].bytes = (r1 - r0) * unit;
        n++;
    }
    *nspans = n;
    return NF_OK;
}

uint64_t nf_geometry_chunk_rows(const nf_geometry *g, uint64_t max_values)
{
    uint64_t rows = g->cols ? max_values / g->cols : max_values;
    if (rows == 0) rows = 1;
    if (g->format && g->format->category == NF_CAT_NVFP4) rows = (rows + 127) / 128 * 128;
    return rows < g->rows ? rows : (g->rows ? g->rows : 1);
}
