/* gguf_blocks_v1 (layouts.md 3.6) and the raw_bytes_v1 resource encoding: rows of opaque bytes
 * copied verbatim.  ggml blocks carry their own scales, which are ggml's business, so there are
 * no word rules; a resource is a single row of `bytes` bytes. */

#include "layout/layout_impl.h"

static nf_status blocks_encode_rows(const nf_geometry *g, const nf_words *w, uint64_t r0,
                                    nf_write_fn write, void *ctx, nf_error *err)
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

static nf_status blocks_decode_rows(const nf_geometry *g, const nf_byte_reader *src, uint64_t r0,
                                    uint64_t r1, nf_words *w, nf_error *err)
{
    uint64_t rb = g->row_bytes;
    for (uint64_t r = r0; r < r1;) {
        uint64_t n = nf_layout_chunk_rows(rb, r1 - r);
        NF_TRY(nf_layout_read(src, r * rb, w->blocks + (r - r0) * rb, n * rb, err));
        r += n;
    }
    return NF_OK;
}

const nf_layout_ops nf_layout_ops_gguf = {
    .encode_rows = blocks_encode_rows,
    .decode_rows = blocks_decode_rows,
};

const nf_layout_ops nf_layout_ops_raw = {
    .encode_rows = blocks_encode_rows,
    .decode_rows = blocks_decode_rows,
};
