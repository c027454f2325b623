/* contiguous_le_v1 (docs/layouts.md 3): C-order little-endian words, no padding.  Words are copied
 * bit for bit (NaN payloads, -0, subnormals); there are no word rules to check. */
#include <stdlib.h>

#include <string.h>

#include "layout/kernels.h"
#include "layout/layout_impl.h"

static nf_status contiguous_encode_rows(const nf_geometry *g, const nf_words *w, uint64_t r0, nf_write_fn write,
                                        void *ctx, nf_error *err)
{
    uint64_t rb = g->row_bytes, cols = g->cols;
    unsigned wb = g->format->word_bytes;
    uint64_t chunk = nf_layout_chunk_rows(rb, w->rows);
    uint8_t *buf = nf_layout_malloc(chunk * rb, err);
    if (!buf) return NF_ERR_NOMEM;
    nf_status st = NF_OK;
    for (uint64_t r = 0; r < w->rows && st == NF_OK; r += chunk) {
        uint64_t n = w->rows - r < chunk ? w->rows - r : chunk;
        uint64_t first = r * cols, count = n * cols;
        for (uint64_t i = 0; i < count; i++) {
            if (wb == 2) nf_put_le16(buf + 2 * i, w->w16[first + i]);
            else nf_put_le32(buf + 4 * i, w->w32[first + i]);
        }
        st = nf_layout_emit(write, ctx, (r0 + r) * rb, buf, n * rb, err);
    }
    free(buf);
    return st;
}

static nf_status contiguous_decode_rows(const nf_geometry *g, const nf_byte_reader *src, uint64_t r0, uint64_t r1,
                                        nf_words *w, nf_error *err)
{
    uint64_t rb = g->row_bytes, cols = g->cols, rows = r1 - r0;
    unsigned wb = g->format->word_bytes;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* The little-endian words are the host's: read them straight into the words array. */
    {
        uint8_t *dst = wb == 2 ? (uint8_t *)w->w16 : (uint8_t *)w->w32;
        for (uint64_t r = 0; r < rows;) {
            uint64_t n = nf_layout_chunk_rows(rb, rows - r);
            NF_TRY(nf_layout_read(src, (r0 + r) * rb, dst + r * rb, n * rb, err));
            r += n;
        }
        (void)cols;
        return NF_OK;
    }
#endif
    uint64_t chunk = nf_layout_chunk_rows(rb, rows);
    uint8_t *buf = nf_layout_malloc(chunk * rb, err);
    if (!buf) return NF_ERR_NOMEM;
    nf_status st = NF_OK;
    for (uint64_t r = 0; r < rows && st == NF_OK; r += chunk) {
        uint64_t n = rows - r < chunk ? rows - r : chunk;
        st = nf_layout_read(src, (r0 + r) * rb, buf, n * rb, err);
        if (st != NF_OK) break;
        uint64_t first = r * cols, count = n * cols;
        for (uint64_t i = 0; i < count; i++) {
            if (wb == 2) w->w16[first + i] = nf_get_le16(buf + 2 * i);
            else w->w32[first + i] = nf_get_le32(buf + 4 * i);
        }
    }
    free(buf);
    return st;
}

/* contiguous_decode_rows + nf_words_to_f32: the same chunk reads (binary32 words straight into
 * out on a little-endian host), each chunk converted while it is in cache. */
static nf_status contiguous_decode_f32(const nf_geometry *g, const nf_byte_reader *src, uint64_t r0, uint64_t r1,
                                       float *out, nf_error *err)
{
    uint64_t rb = g->row_bytes, cols = g->cols, rows = r1 - r0;
    const nf_format *f = g->format;
    const nf_layout_kernels *kern = nf_layout_kernels_active();
    const bool le = nf_host_le();
    if (le && f->id != NF_FMT_BF16 && f->id != NF_FMT_INT32) { /* the binary32 words themselves */
        for (uint64_t r = 0; r < rows;) {
            uint64_t n = nf_layout_chunk_rows(rb, rows - r);
            NF_TRY(nf_layout_read(src, (r0 + r) * rb, out + r * cols, n * rb, err));
            r += n;
        }
        return NF_OK;
    }
    uint64_t chunk = nf_layout_chunk_rows(rb, rows);
    uint8_t *buf = nf_layout_malloc(chunk * rb, err);
    if (!buf) return NF_ERR_NOMEM;
    nf_status st = NF_OK;
    for (uint64_t r = 0; r < rows; r += chunk) {
        uint64_t n = rows - r < chunk ? rows - r : chunk;
        st = nf_layout_read(src, (r0 + r) * rb, buf, n * rb, err);
        if (st != NF_OK) break;
        size_t count = (size_t)(n * cols);
        float *o = out + r * cols;
        if (le && f->id == NF_FMT_BF16) kern->bf16_f32((const uint16_t *)(const void *)buf, count, o);
        else if (le) kern->int32_f32((const uint32_t *)(const void *)buf, count, o);
        else
            for (size_t i = 0; i < count; i++)
                o[i] = f->id == NF_FMT_BF16    ? nf_bf16_to_f32(nf_get_le16(buf + 2 * i))
                       : f->id == NF_FMT_INT32 ? nf_int32_value(nf_get_le32(buf + 4 * i))
                                               : nf_k_f32(nf_get_le32(buf + 4 * i));
    }
    free(buf);
    return st;
}

const nf_layout_ops nf_layout_ops_contiguous = {
    .encode_rows = contiguous_encode_rows,
    .decode_rows = contiguous_decode_rows,
    .decode_f32 = contiguous_decode_f32,
};
