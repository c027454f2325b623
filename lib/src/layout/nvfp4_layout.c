/* block_scale_k16_m128x4_v1 (docs/layouts.md 5): row-major packed E2M1 codes (low nibble = smaller
 * k), zero bytes up to a 256-aligned scale plane of E4M3FN block scales swizzled in 512-byte
 * tiles of 128 rows x 4 groups, then `divisors` FP32 words.  A 128-row tile of the scale plane
 * is 128 * K/16 contiguous bytes, which is why encodes, row views and gathers work in multiples
 * of 128 rows. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "layout/kernels.h"
#include "layout/layout_impl.h"

/* Scale tiles (512 bytes each) read at once while decoding or checking. */
#define NVFP4_TILES_PER_READ 128u

static nf_status nvfp4_encode_rows(const nf_geometry *g, const nf_words *w, uint64_t r0, nf_write_fn write, void *ctx,
                                   nf_error *err)
{
    uint64_t k = g->cols, crow = k / 2, srow = k / 16;
    uint64_t tiles = nf_layout_chunk_rows(128 * (crow + srow), w->rows / 128);
    uint64_t chunk = tiles * 128;
    uint8_t *codes = nf_layout_malloc(chunk * crow, err);
    uint8_t *scales = codes ? nf_layout_malloc(chunk * srow, err) : NULL;
    if (!scales) {
        free(codes);
        return NF_ERR_NOMEM;
    }
    nf_status st = NF_OK;
    for (uint64_t r = 0; r < w->rows && st == NF_OK; r += chunk) {
        uint64_t n = w->rows - r < chunk ? w->rows - r : chunk;
        for (uint64_t i = 0; i < n && st == NF_OK; i++) {
            const uint8_t *c = w->codes8 + (r + i) * k;
            for (uint64_t j = 0; j < crow; j++) {
                if ((c[2 * j] | c[2 * j + 1]) > 15) {
                    uint64_t col = c[2 * j] > 15 ? 2 * j : 2 * j + 1;
                    st = nf_error_set(err, NF_ERR_INVALID,
                                      "row %" PRIu64 " col %" PRIu64 ": E2M1 word 0x%02x does not fit 4 bits",
                                      r0 + r + i, col, c[col]);
                    break;
                }
                codes[i * crow + j] = (uint8_t)(c[2 * j] | (c[2 * j + 1] << 4));
            }
            const uint8_t *s = w->scales8 + (r + i) * srow;
            /* Local row i of a chunk that starts on a tile boundary swizzles like row i. */
            for (uint64_t gi = 0; gi < srow; gi++) scales[nf_nvfp4_swizzle(i, gi, k)] = s[gi];
        }
        if (st != NF_OK) break;
        uint64_t rr = r0 + r;
        st = nf_layout_emit(write, ctx, g->planes[0].offset + rr * crow, codes, n * crow, err);
        if (st == NF_OK) st = nf_layout_emit(write, ctx, g->planes[1].offset + rr * srow, scales, n * srow, err);
    }
    free(codes);
    free(scales);
    return st;
}

static nf_status nvfp4_encode_tail(const nf_geometry *g, const nf_words *w, bool unchecked, nf_write_fn write,
                                   void *ctx, nf_error *err)
{
    if (!w || !w->divisors)
        return nf_error_set(err, NF_ERR_USAGE, "nvfp4 tail needs the %" PRIu64 " divisor words", g->divisors);
    uint8_t buf[4 * 64];
    for (uint64_t i = 0; i < g->divisors;) {
        uint64_t n = g->divisors - i < 64 ? g->divisors - i : 64;
        for (uint64_t j = 0; j < n; j++) {
            uint32_t d = w->divisors[i + j];
            if (!unchecked && !nf_nvfp4_divisor_valid(d))
                return nf_error_set(err, NF_ERR_INVALID,
                                    "divisor %" PRIu64 ": word 0x%08" PRIx32 " is not a finite binary32 > 0", i + j, d);
            nf_put_le32(buf + 4 * j, d);
        }
        NF_TRY(nf_layout_emit(write, ctx, g->planes[2].offset + 4 * i, buf, 4 * n, err));
        i += n;
    }
    return NF_OK;
}

static nf_status read_divisors(const nf_geometry *g, const nf_byte_reader *src, uint32_t *out, nf_error *err)
{
    uint8_t buf[4 * 64];
    for (uint64_t i = 0; i < g->divisors;) {
        uint64_t n = g->divisors - i < 64 ? g->divisors - i : 64;
        NF_TRY(nf_layout_read(src, g->planes[2].offset + 4 * i, buf, 4 * n, err));
        for (uint64_t j = 0; j < n; j++) out[i + j] = nf_get_le32(buf + 4 * j);
        i += n;
    }
    return NF_OK;
}

static nf_status decode_codes(const nf_geometry *g, const nf_byte_reader *src, uint64_t r0, uint64_t r1, nf_words *w,
                              nf_error *err)
{
    uint64_t k = g->cols, crow = k / 2, rows = r1 - r0;
    uint64_t chunk = nf_layout_chunk_rows(crow, rows);
    const nf_layout_kernels *kern = nf_layout_kernels_active();
    uint8_t *buf = nf_layout_malloc(chunk * crow, err);
    if (!buf) return NF_ERR_NOMEM;
    nf_status st = NF_OK;
    for (uint64_t r = 0; r < rows; r += chunk) {
        uint64_t n = rows - r < chunk ? rows - r : chunk;
        st = nf_layout_read(src, g->planes[0].offset + (r0 + r) * crow, buf, n * crow, err);
        if (st != NF_OK) break;
        kern->nibbles(buf, (size_t)(n * crow), w->codes8 + r * k);
    }
    free(buf);
    return st;
}

/* Un-swizzle the scales of rows [r0, r1), reading only the 512-byte tiles of the row tiles
 * those rows live in, a bounded run of tiles at a time. */
static nf_status decode_scales(const nf_geometry *g, const nf_byte_reader *src, uint64_t r0, uint64_t r1, nf_words *w,
                               nf_error *err)
{
    uint64_t k = g->cols, spr = k / 16, k_tiles = k / 64;
    uint64_t per_read = k_tiles < NVFP4_TILES_PER_READ ? k_tiles : NVFP4_TILES_PER_READ;
    uint8_t *buf = nf_layout_malloc(per_read * 512, err);
    if (!buf) return NF_ERR_NOMEM;
    nf_status st = NF_OK;
    for (uint64_t t = r0 / 128; t <= (r1 - 1) / 128 && st == NF_OK; t++) {
        uint64_t a = t * 128 > r0 ? t * 128 : r0, b = t * 128 + 128 < r1 ? t * 128 + 128 : r1;
        for (uint64_t s0 = 0; s0 < k_tiles; s0 += per_read) {
            uint64_t ns = k_tiles - s0 < per_read ? k_tiles - s0 : per_read;
            st = nf_layout_read(src, g->planes[1].offset + (t * k_tiles + s0) * 512, buf, ns * 512, err);
            if (st != NF_OK) break;
            for (uint64_t row = a; row < b; row++) {
                uint64_t ri = row % 128;
                uint8_t *dst = w->scales8 + (row - r0) * spr + s0 * 4;
                for (uint64_t s = 0; s < ns; s++)
                    memcpy(dst + 4 * s, buf + s * 512 + (ri % 32) * 16 + (ri / 32) * 4, 4);
            }
        }
    }
    free(buf);
    return st;
}

static nf_status nvfp4_decode_rows(const nf_geometry *g, const nf_byte_reader *src, uint64_t r0, uint64_t r1,
                                   nf_words *w, nf_error *err)
{
    if (r1 > r0) {
        NF_TRY(decode_codes(g, src, r0, r1, w, err));
        NF_TRY(decode_scales(g, src, r0, r1, w, err));
    }
    if (w->divisors) NF_TRY(read_divisors(g, src, w->divisors, err));
    return NF_OK;
}

/* nvfp4_decode_rows + nf_words_to_f32: the divisor words first (the value tables need them),
 * then one 128-row tile at a time: its scale tiles (read as decode_scales reads them), its rows'
 * codes in bounded chunks, and each row a block of columns at a time (codes unpacked and scales
 * un-swizzled into small buffers, then looked up in the row's divisor table). */
static nf_status nvfp4_decode_f32(const nf_geometry *g, const nf_byte_reader *src, uint64_t r0, uint64_t r1, float *out,
                                  nf_error *err)
{
    uint64_t k = g->cols, crow = k / 2, k_tiles = k / 64, per = g->rows / g->divisors;
    uint64_t per_read = k_tiles < NVFP4_TILES_PER_READ ? k_tiles : NVFP4_TILES_PER_READ;
    const nf_layout_kernels *kern = nf_layout_kernels_active();
    uint32_t *divisors = nf_layout_malloc(g->divisors * sizeof *divisors, err);
    if (!divisors) return NF_ERR_NOMEM;
    nf_status st = read_divisors(g, src, divisors, err);
    if (st != NF_OK || r0 == r1) {
        free(divisors);
        return st;
    }
    uint64_t rows_max = r1 - r0 < 128 ? r1 - r0 : 128;
    uint64_t chunk = nf_layout_chunk_rows(crow, rows_max);
    uint8_t *tile = nf_layout_malloc(k_tiles * 512, err);
    uint8_t *cbuf = tile ? nf_layout_malloc(chunk * crow, err) : NULL;
    if (!cbuf) {
        free(divisors);
        free(tile);
        return NF_ERR_NOMEM;
    }
    uint8_t codes[NF_FUSED_COLS], scales[NF_FUSED_COLS / 16];
    for (uint64_t t = r0 / 128; t <= (r1 - 1) / 128 && st == NF_OK; t++) {
        uint64_t a = t * 128 > r0 ? t * 128 : r0, b = t * 128 + 128 < r1 ? t * 128 + 128 : r1;
        for (uint64_t s0 = 0; s0 < k_tiles && st == NF_OK; s0 += per_read) {
            uint64_t ns = k_tiles - s0 < per_read ? k_tiles - s0 : per_read;
            st = nf_layout_read(src, g->planes[1].offset + (t * k_tiles + s0) * 512, tile + s0 * 512, ns * 512, err);
        }
        for (uint64_t r = a; r < b && st == NF_OK; r += chunk) {
            uint64_t n = b - r < chunk ? b - r : chunk;
            st = nf_layout_read(src, g->planes[0].offset + r * crow, cbuf, n * crow, err);
            for (uint64_t i = 0; i < n && st == NF_OK; i++) {
                uint64_t row = r + i, ri = row % 128;
                const float *table = nf_nvfp4_table_cached(kern, divisors[row / per]);
                float *o = out + (row - r0) * k;
                for (uint64_t c0 = 0; c0 < k; c0 += NF_FUSED_COLS) {
                    uint64_t nc = k - c0 < NF_FUSED_COLS ? k - c0 : NF_FUSED_COLS;
                    for (uint64_t s = 0; s < nc / 64; s++)
                        memcpy(scales + 4 * s, tile + (c0 / 64 + s) * 512 + (ri % 32) * 16 + (ri / 32) * 4, 4);
                    kern->nibbles(cbuf + i * crow + c0 / 2, (size_t)(nc / 2), codes);
                    kern->nvfp4_row(codes, scales, (size_t)nc, table, o + c0);
                }
            }
        }
    }
    free(divisors);
    free(tile);
    free(cbuf);
    return st;
}

static nf_status nvfp4_check(const nf_geometry *g, const nf_byte_reader *src, nf_problems *pr, nf_error *err)
{
    /* Every E2M1 nibble is a valid code, so only scales and divisors have rules. */
    uint64_t k = g->cols, k_tiles = k / 64;
    const nf_plane *sp = &g->planes[1];
    uint64_t chunk = (uint64_t)NVFP4_TILES_PER_READ * 512;
    uint8_t *buf = nf_layout_malloc(chunk, err);
    if (!buf) return NF_ERR_NOMEM;
    nf_status st = NF_OK;
    for (uint64_t off = 0; off < sp->bytes; off += chunk) {
        uint64_t n = sp->bytes - off < chunk ? sp->bytes - off : chunk;
        st = nf_layout_read(src, sp->offset + off, buf, n, err);
        if (st != NF_OK) break;
        for (uint64_t j = 0; j < n; j++) {
            /* Eight scale words at a time: a byte is bad when its sign is set or its low 7 bits
             * are all ones (only those carry into the top bit when 1 is added). */
            if (nf_layout_check_fast && j % 8 == 0 && n - j >= 8) {
                uint64_t v;
                memcpy(&v, buf + j, sizeof v);
                if (((v | ((v & 0x7F7F7F7F7F7F7F7Full) + 0x0101010101010101ull)) & 0x8080808080808080ull) == 0) {
                    j += 7;
                    continue;
                }
            }
            if (nf_nvfp4_scale_valid(buf[j])) continue;
            /* Invert the swizzle to name the natural position. */
            uint64_t pos = off + j, tile = pos / 512, within = pos % 512;
            uint64_t row = (tile / k_tiles) * 128 + ((within % 16) / 4) * 32 + within / 16;
            uint64_t group = (tile % k_tiles) * 4 + within % 4;
            nf_problems_add(pr,
                            "row %" PRIu64 " group %" PRIu64 " (cols %" PRIu64 "..%" PRIu64
                            "): scale 0x%02x at byte offset %" PRIu64 " is not a valid nvfp4 scale (%s)",
                            row, group, group * 16, group * 16 + 15, buf[j], sp->offset + pos,
                            (buf[j] & 0x80) ? "sign set" : "NaN");
        }
    }
    free(buf);
    if (st != NF_OK) return st;
    uint64_t per = g->rows / g->divisors;
    uint8_t dbuf[4 * 64];
    for (uint64_t i = 0; i < g->divisors;) {
        uint64_t n = g->divisors - i < 64 ? g->divisors - i : 64;
        NF_TRY(nf_layout_read(src, g->planes[2].offset + 4 * i, dbuf, 4 * n, err));
        for (uint64_t j = 0; j < n; j++) {
            uint32_t d = nf_get_le32(dbuf + 4 * j);
            if (!nf_nvfp4_divisor_valid(d))
                nf_problems_add(pr,
                                "divisor %" PRIu64 " (rows %" PRIu64 "..%" PRIu64 ") at byte offset %" PRIu64
                                ": word 0x%08" PRIx32 " is not a finite binary32 > 0",
                                i + j, (i + j) * per, (i + j + 1) * per - 1, g->planes[2].offset + 4 * (i + j), d);
        }
        i += n;
    }
    return NF_OK;
}

static nf_status nvfp4_gather_extra(const nf_geometry *g, const nf_byte_reader *src, const uint64_t *rows,
                                    uint64_t count, const nf_geometry *out_g, uint8_t *out, nf_error *err)
{
    uint64_t per = g->rows / g->divisors, k = g->cols, k_tiles = k / 64;
    /* One divisor in the result: every gathered row must come with the same divisor word. */
    uint64_t cached_idx = UINT64_MAX, first_row = rows[0];
    uint32_t first = 0, cur = 0;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t idx = rows[i] / per;
        if (idx != cached_idx) {
            uint8_t b[4];
            NF_TRY(nf_layout_read(src, g->planes[2].offset + 4 * idx, b, 4, err));
            cur = nf_get_le32(b);
            cached_idx = idx;
        }
        if (i == 0) first = cur;
        else if (cur != first)
            return nf_error_set(err, NF_ERR_INVALID,
                                "gathered rows %" PRIu64 " and %" PRIu64 " have different nvfp4 divisors (0x%08" PRIx32
                                " and 0x%08" PRIx32 "); the result holds one",
                                first_row, rows[i], first, cur);
    }
    nf_put_le32(out + out_g->planes[2].offset, first);

    /* Scales: move each row's 4-byte pieces from its source tile slot to its new slot; the
     * source row tile is cached since gathers tend to take neighbouring rows. */
    uint64_t block_bytes = k_tiles * 512;
    uint8_t *block = nf_layout_malloc(block_bytes, err);
    if (!block) return NF_ERR_NOMEM;
    uint64_t cached_tile = UINT64_MAX;
    uint8_t *dst_plane = out + out_g->planes[1].offset;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t t = rows[i] / 128, ri = rows[i] % 128, ot = i / 128, oi = i % 128;
        if (t != cached_tile) {
            nf_status st = nf_layout_read(src, g->planes[1].offset + t * block_bytes, block, block_bytes, err);
            if (st != NF_OK) {
                free(block);
                return st;
            }
            cached_tile = t;
        }
        for (uint64_t s = 0; s < k_tiles; s++)
            memcpy(dst_plane + (ot * k_tiles + s) * 512 + (oi % 32) * 16 + (oi / 32) * 4,
                   block + s * 512 + (ri % 32) * 16 + (ri / 32) * 4, 4);
    }
    free(block);
    return NF_OK;
}

const nf_layout_ops nf_layout_ops_nvfp4 = {
    .encode_rows = nvfp4_encode_rows,
    .encode_tail = nvfp4_encode_tail,
    .decode_rows = nvfp4_decode_rows,
    .decode_f32 = nvfp4_decode_f32,
    .check = nvfp4_check,
    .gather_extra = nvfp4_gather_extra,
};
