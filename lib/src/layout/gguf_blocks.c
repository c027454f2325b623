/* gguf_blocks_v1 (docs/layouts.md 8) and the raw_bytes_v1 resource encoding: rows of opaque bytes
 * copied verbatim; a resource is a single row of `bytes` bytes.  ggml blocks carry their own
 * scales, which are ggml's business, with one word rule: no binary16 scale field (d, dmin) is
 * NaN or infinite, as ggml's ggml_validate_row_data has it (docs/formats.md 8.1); the fields
 * are found by format/ggml_validate.c. */

#include <inttypes.h>
#include <stdlib.h>

#include "format/ggml.h"
#include "layout/layout_impl.h"

static nf_status blocks_encode_rows(const nf_geometry *g, const nf_words *w, uint64_t r0, nf_write_fn write, void *ctx,
                                    nf_error *err)
{
    /* The words already are the bytes: write them in bounded pieces straight from w. */
    uint64_t rb = g->row_bytes;
    for (uint64_t r = 0; r < w->rows;) {
        uint64_t n = nf_layout_chunk_rows(rb, w->rows - r);
        NF_TRY(nf_layout_emit(write, ctx, (r0 + r) * rb, w->blocks + r * rb, n * rb, err));
        r += n;
    }
    return NF_OK;
}

static nf_status blocks_decode_rows(const nf_geometry *g, const nf_byte_reader *src, uint64_t r0, uint64_t r1,
                                    nf_words *w, nf_error *err)
{
    uint64_t rb = g->row_bytes;
    for (uint64_t r = r0; r < r1;) {
        uint64_t n = nf_layout_chunk_rows(rb, r1 - r);
        NF_TRY(nf_layout_read(src, r * rb, w->blocks + (r - r0) * rb, n * rb, err));
        r += n;
    }
    return NF_OK;
}

/* blocks_decode_rows + nf_words_to_f32: the same chunk reads, each chunk's rows dequantized by
 * ggml's block functions while the blocks are in cache. */
static nf_status blocks_decode_f32(const nf_geometry *g, const nf_byte_reader *src, uint64_t r0, uint64_t r1,
                                   float *out, nf_error *err)
{
    uint64_t rb = g->row_bytes, k = g->cols, rows = r1 - r0;
    uint64_t chunk = nf_layout_chunk_rows(rb, rows);
    uint8_t *buf = nf_layout_malloc(chunk * rb, err);
    if (!buf) return NF_ERR_NOMEM;
    nf_status st = NF_OK;
    for (uint64_t r = 0; r < rows && st == NF_OK; r += chunk) {
        uint64_t n = rows - r < chunk ? rows - r : chunk;
        st = nf_layout_read(src, (r0 + r) * rb, buf, n * rb, err);
        for (uint64_t i = 0; i < n && st == NF_OK; i++) {
            st = nf_ggml_dequant_row(g->format, buf + i * rb, k, out + (r + i) * k, err);
            if (st != NF_OK) nf_error_prefix(err, "row %" PRIu64, r0 + r + i);
        }
    }
    free(buf);
    return st;
}

/* Word check of a whole gguf_* object (ninfer-verify's words level): the rows are read in
 * bounded chunks, each chunk scanned for non-finite scale fields by the branch-free prescan of
 * nf_ggml_find_nonfinite_scale (a chunk without one costs a load and a few operations per
 * block), and every bad block is reported with its row, block, field and byte offset. */
static nf_status blocks_check(const nf_geometry *g, const nf_byte_reader *src, nf_problems *p, nf_error *err)
{
    uint64_t rb = g->row_bytes, per_row = g->cols / g->format->block_values;
    uint64_t chunk = nf_layout_chunk_rows(rb, g->rows);
    uint8_t *buf = nf_layout_malloc(chunk * rb, err);
    if (!buf) return NF_ERR_NOMEM;
    nf_status st = NF_OK;
    for (uint64_t r = 0; r < g->rows && st == NF_OK; r += chunk) {
        uint64_t n = g->rows - r < chunk ? g->rows - r : chunk;
        st = nf_layout_read(src, r * rb, buf, n * rb, err);
        nf_ggml_bad_scale bad;
        for (uint64_t from = 0; st == NF_OK && nf_ggml_find_nonfinite_scale(g->format, buf, from, n * per_row, &bad);
             from = bad.block + 1) {
            uint64_t row = r + bad.block / per_row;
            nf_problems_add(p,
                            "row %" PRIu64 " block %" PRIu64 ": %s scale %s 0x%04x at byte offset %" PRIu64
                            " is %s, not finite (ggml's ggml_validate_row_data refuses the block)",
                            row, bad.block % per_row, nf_ggml_block_name(g->format), bad.field, bad.word,
                            r * rb + bad.block * g->format->block_bytes + bad.offset,
                            nf_ggml_f16_nonfinite_name(bad.word));
        }
    }
    free(buf);
    return st;
}

const nf_layout_ops nf_layout_ops_gguf = {
    .encode_rows = blocks_encode_rows,
    .decode_rows = blocks_decode_rows,
    .decode_f32 = blocks_decode_f32,
    .check = blocks_check,
};

const nf_layout_ops nf_layout_ops_raw = {
    .encode_rows = blocks_encode_rows,
    .decode_rows = blocks_decode_rows,
};
