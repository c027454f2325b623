/* row_split_k128_v1 (docs/layouts.md 4): grouped signed codes in a base plane (and, for Q5/Q6, a
 * high-bit plane) plus one binary16 scale per physical group, rows padded to K_pad =
 * align_up(K,128).  Padding lanes hold logical code 0 (Q2: stored word 01), wholly physical
 * groups hold scale 0x0000 and codes 0. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "layout/kernels.h"
#include "layout/layout_impl.h"

#define RS_MAX_GROUP 128

/* Signed logical code of a stored word: Q2 is offset binary (q = u - 1), the rest two's
 * complement of width b. */
static int rs_code(const nf_rs_params *p, unsigned u)
{
    if (p->bias) return (int)u - p->bias;
    int sign = 1 << (p->bits - 1);
    return (int)(u ^ (unsigned)sign) - sign;
}

/* Stored word of a logical code; false when it does not fit the stored width at all (even an
 * unchecked encode cannot represent it). */
static bool rs_stored(const nf_rs_params *p, int q, uint8_t *u)
{
    int v, width = 1 << p->bits;
    if (p->bias) {
        v = q + p->bias;
    } else {
        if (q < -(width / 2) || q >= width / 2) return false;
        v = q < 0 ? q + width : q;
    }
    if (v < 0 || v >= width) return false;
    *u = (uint8_t)v;
    return true;
}

/* The codes that have a stored word (rs_stored): [lo, hi]. */
static void rs_stored_range(const nf_rs_params *p, int *lo, int *hi)
{
    int width = 1 << p->bits;
    *lo = p->bias ? -p->bias : -(width / 2);
    *hi = p->bias ? width - 1 - p->bias : width / 2 - 1;
}

static void rs_unpack(const nf_rs_params *p, const uint8_t *base, const uint8_t *high, uint8_t *u)
{
    unsigned G = p->group;
    switch (p->bits) {
    case 8: memcpy(u, base, G); return;
    case 2:
        for (unsigned i = 0; i < G; i++) u[i] = (uint8_t)(((unsigned)base[i >> 2] >> (2 * (i & 3))) & 3u);
        return;
    default:
        for (unsigned i = 0; i < G; i++) u[i] = (uint8_t)(((unsigned)base[i >> 1] >> (4 * (i & 1))) & 0xFu);
        if (p->high_bytes) {
            unsigned hb = p->bits - 4;
            for (unsigned i = 0; i < G; i++)
                for (unsigned b = 0; b < hb; b++) {
                    unsigned t = i * hb + b;
                    if (((unsigned)high[t >> 3] >> (t & 7)) & 1u) u[i] = (uint8_t)(u[i] | (1u << (4 + b)));
                }
        }
        return;
    }
}

/* Per-plane scratch for a chunk of rows. */
typedef struct rs_chunk {
    uint8_t *base, *high, *scales;
    uint64_t rows;
} rs_chunk;

static nf_status rs_chunk_alloc(const nf_geometry *g, const nf_rs_params *p, uint64_t rows_total, rs_chunk *c,
                                nf_error *err)
{
    uint64_t gpr = g->groups_per_row;
    uint64_t per_row = gpr * (p->base_bytes + p->high_bytes + 2u); /* <= g->bytes / N */
    memset(c, 0, sizeof *c);
    c->rows = nf_layout_chunk_rows(per_row, rows_total);
    c->base = nf_layout_malloc(c->rows * gpr * p->base_bytes, err);
    c->high = c->base ? nf_layout_malloc(c->rows * gpr * p->high_bytes, err) : NULL;
    c->scales = c->high ? nf_layout_malloc(c->rows * gpr * 2, err) : NULL;
    if (!c->scales) {
        free(c->base);
        free(c->high);
        return NF_ERR_NOMEM;
    }
    return NF_OK;
}

static void rs_chunk_free(rs_chunk *c)
{
    free(c->base);
    free(c->high);
    free(c->scales);
}

static const nf_plane *scale_plane(const nf_geometry *g) { return &g->planes[g->nplanes - 1]; }

/* Read (or write) rows [r, r+n) of every plane between the chunk buffers and the object. */
static nf_status rs_read_chunk(const nf_geometry *g, const nf_byte_reader *src, uint64_t r, uint64_t n, rs_chunk *c,
                               nf_error *err)
{
    const nf_plane *base = &g->planes[0], *sc = scale_plane(g);
    NF_TRY(nf_layout_read(src, base->offset + r * base->row_bytes, c->base, n * base->row_bytes, err));
    if (g->nplanes == 3) {
        const nf_plane *hi = &g->planes[1];
        NF_TRY(nf_layout_read(src, hi->offset + r * hi->row_bytes, c->high, n * hi->row_bytes, err));
    }
    return nf_layout_read(src, sc->offset + r * sc->row_bytes, c->scales, n * sc->row_bytes, err);
}

/* A row the packer refused (some code outside [lo, hi]) or whose scales failed the word rules:
 * the exact path.  With check, nf_words_check's group-by-group message for the row's first
 * problem; then the first code without a stored word is named; a row with neither (which the
 * packer would not have refused) is packed by the scalar reference. */
static nf_status rs_encode_row_exact(const nf_geometry *g, const nf_rs_params *p, const int8_t *codes,
                                     const uint16_t *scales, uint64_t row, bool check, uint8_t *base, uint8_t *high,
                                     nf_error *err)
{
    uint64_t k = g->cols;
    if (check) NF_TRY(nf_grouped_row_check_exact(g->format, codes, scales, k, g->logical_groups, row, err));
    for (uint64_t c = 0; c < k; c++) {
        uint8_t u;
        if (!rs_stored(p, codes[c], &u))
            return nf_error_set(err, NF_ERR_INVALID,
                                "row %" PRIu64 " col %" PRIu64 ": code %d does not fit the %u-bit stored word of %s",
                                row, c, codes[c], p->bits, g->format->name);
    }
    int lo, hi;
    rs_stored_range(p, &lo, &hi);
    if (!nf_layout_kernels_scalar.rs_pack_row(p, codes, (size_t)k, (size_t)g->k_pad, lo, hi, base, high))
        return nf_error_set(err, NF_ERR_INVALID, "row %" PRIu64 ": the %s packer refused codes that fit", row,
                            g->format->name);
    return NF_OK;
}

/* Rows [r0, r0 + w->rows) chunk by chunk: each row packed and range-checked in one pass by the
 * active kernels (kernels.h rs_pack_row), its scales copied; rows that fail go down the exact
 * path.  With check the codes are held to the format's legal range and the scales to the word
 * rules as they are packed (nf_words_check's rules, the same first message), and nothing is
 * written for a refused call: words that span more than one chunk are checked before the first
 * chunk is written instead. */
static nf_status rs_encode(const nf_geometry *g, const nf_words *w, uint64_t r0, bool check, nf_write_fn write,
                           void *ctx, nf_error *err)
{
    nf_rs_params p;
    if (!nf_rs_params_for(g->format, &p)) return nf_error_set(err, NF_ERR_USAGE, "not a grouped format");
    rs_chunk c;
    NF_TRY(rs_chunk_alloc(g, &p, w->rows, &c, err));
    nf_status st = NF_OK;
    if (check && c.rows < w->rows) {
        st = nf_words_check(g, w, r0, err);
        check = false;
    }
    const nf_layout_kernels *kern = nf_layout_kernels_active();
    nf_grouped_rules rules;
    nf_grouped_rules_for(g->format, &rules);
    int lo, hi;
    rs_stored_range(&p, &lo, &hi);
    if (check) { /* the legal codes, inside the stored ones */
        lo = rules.code_min > lo ? rules.code_min : lo;
        hi = rules.code_max < hi ? rules.code_max : hi;
    }
    uint64_t k = g->cols, gpr = g->groups_per_row, lg = g->logical_groups;
    const nf_plane *base = &g->planes[0], *sc = scale_plane(g);
    for (uint64_t r = 0; r < w->rows && st == NF_OK; r += c.rows) {
        uint64_t n = w->rows - r < c.rows ? w->rows - r : c.rows;
        for (uint64_t i = 0; i < n && st == NF_OK; i++) {
            const int8_t *codes = w->codes + (r + i) * k;
            const uint16_t *scales = w->scales + (r + i) * lg;
            uint8_t *rb = c.base + i * gpr * p.base_bytes, *rh = c.high + i * gpr * p.high_bytes;
            uint8_t *rs = c.scales + 2 * i * gpr;
            bool ok = kern->rs_pack_row(&p, codes, (size_t)k, (size_t)g->k_pad, lo, hi, rb, rh);
            if (ok && check) ok = nf_grouped_scales_clean(kern, &rules, codes, scales, k, lg, p.group);
            if (!ok && (st = rs_encode_row_exact(g, &p, codes, scales, r0 + r + i, check, rb, rh, err)) != NF_OK) break;
            /* logical groups' scales, then +0 for the padding groups */
            if (nf_host_le()) memcpy(rs, scales, (size_t)lg * 2);
            else
                for (uint64_t gi = 0; gi < lg; gi++) nf_put_le16(rs + 2 * gi, scales[gi]);
            memset(rs + 2 * lg, 0, (size_t)(gpr - lg) * 2);
        }
        if (st != NF_OK) break;
        uint64_t rr = r0 + r;
        st = nf_layout_emit(write, ctx, base->offset + rr * base->row_bytes, c.base, n * base->row_bytes, err);
        if (st == NF_OK && g->nplanes == 3) {
            const nf_plane *hi_plane = &g->planes[1];
            st = nf_layout_emit(write, ctx, hi_plane->offset + rr * hi_plane->row_bytes, c.high,
                                n * hi_plane->row_bytes, err);
        }
        if (st == NF_OK)
            st = nf_layout_emit(write, ctx, sc->offset + rr * sc->row_bytes, c.scales, n * sc->row_bytes, err);
    }
    rs_chunk_free(&c);
    return st;
}

static nf_status rs_encode_rows(const nf_geometry *g, const nf_words *w, uint64_t r0, nf_write_fn write, void *ctx,
                                nf_error *err)
{
    return rs_encode(g, w, r0, false, write, ctx, err);
}

static nf_status rs_encode_rows_checked(const nf_geometry *g, const nf_words *w, uint64_t r0, nf_write_fn write,
                                        void *ctx, nf_error *err)
{
    return rs_encode(g, w, r0, true, write, ctx, err);
}

static nf_status rs_decode_rows(const nf_geometry *g, const nf_byte_reader *src, uint64_t r0, uint64_t r1, nf_words *w,
                                nf_error *err)
{
    nf_rs_params p;
    if (!nf_rs_params_for(g->format, &p)) return nf_error_set(err, NF_ERR_USAGE, "not a grouped format");
    rs_chunk c;
    uint64_t rows = r1 - r0;
    NF_TRY(rs_chunk_alloc(g, &p, rows, &c, err));
    uint64_t k = g->cols, gpr = g->groups_per_row, lg = g->logical_groups;
    const nf_layout_kernels *kern = nf_layout_kernels_active();
    nf_status st = NF_OK;
    for (uint64_t r = 0; r < rows; r += c.rows) {
        uint64_t n = rows - r < c.rows ? rows - r : c.rows;
        st = rs_read_chunk(g, src, r0 + r, n, &c, err);
        if (st != NF_OK) break;
        for (uint64_t i = 0; i < n; i++) {
            /* The row's groups are contiguous in every plane, so its first k lanes are one run;
             * padding lanes and padding groups are dropped. */
            kern->rs_unpack_row(&p, c.base + i * gpr * p.base_bytes, c.high + i * gpr * p.high_bytes, (size_t)k,
                                w->codes + (r + i) * k);
            uint16_t *scales = w->scales + (r + i) * lg;
            const uint8_t *sb = c.scales + 2 * i * gpr;
            for (uint64_t gi = 0; gi < lg; gi++) scales[gi] = nf_get_le16(sb + 2 * gi);
        }
    }
    rs_chunk_free(&c);
    return st;
}

/* rs_decode_rows + nf_words_to_f32: the same chunk reads, then each row straight to values. */
static nf_status rs_decode_f32(const nf_geometry *g, const nf_byte_reader *src, uint64_t r0, uint64_t r1, float *out,
                               nf_error *err)
{
    nf_rs_params p;
    if (!nf_rs_params_for(g->format, &p)) return nf_error_set(err, NF_ERR_USAGE, "not a grouped format");
    rs_chunk c;
    uint64_t rows = r1 - r0;
    NF_TRY(rs_chunk_alloc(g, &p, rows, &c, err));
    uint64_t k = g->cols, gpr = g->groups_per_row;
    const nf_layout_kernels *kern = nf_layout_kernels_active();
    nf_status st = NF_OK;
    for (uint64_t r = 0; r < rows; r += c.rows) {
        uint64_t n = rows - r < c.rows ? rows - r : c.rows;
        st = rs_read_chunk(g, src, r0 + r, n, &c, err);
        if (st != NF_OK) break;
        for (uint64_t i = 0; i < n; i++)
            nf_rs_row_f32(kern, &p, c.base + i * gpr * p.base_bytes, c.high + i * gpr * p.high_bytes,
                          c.scales + 2 * i * gpr, (size_t)k, out + (r + i) * k);
    }
    rs_chunk_free(&c);
    return st;
}

static void rs_check_group(const nf_geometry *g, const nf_rs_params *p, uint64_t row, uint64_t gi, const uint8_t *u,
                           uint16_t scale, uint64_t scale_at, nf_problems *pr)
{
    const nf_format *f = g->format;
    uint64_t k = g->cols, c0 = gi * p->group;
    if (gi >= g->logical_groups) { /* wholly physical group: scale +0 and codes 0 */
        if (scale != 0)
            nf_problems_add(pr,
                            "row %" PRIu64 " group %" PRIu64 ": padding group scale 0x%04x at byte offset %" PRIu64
                            ", expected 0x0000",
                            row, gi, scale, scale_at);
        for (unsigned l = 0; l < p->group; l++)
            if (u[l] != p->zero_u)
                nf_problems_add(pr,
                                "row %" PRIu64 " col %" PRIu64 " (padding group %" PRIu64
                                "): stored word 0x%02x (code %d), "
                                "expected 0x%02x (code 0)",
                                row, c0 + l, gi, u[l], rs_code(p, u[l]), p->zero_u);
        return;
    }
    bool scale_ok = nf_grouped_scale_valid(f, scale);
    if (!scale_ok)
        nf_problems_add(
            pr, "row %" PRIu64 " group %" PRIu64 ": scale 0x%04x at byte offset %" PRIu64 " is not a valid %s scale",
            row, gi, scale, scale_at, f->name);
    bool zero_only = scale_ok && nf_grouped_scale_requires_zero_codes(f, scale);
    for (unsigned l = 0; l < p->group; l++) {
        uint64_t col = c0 + l;
        int q = rs_code(p, u[l]);
        if (col >= k) {
            if (u[l] != p->zero_u)
                nf_problems_add(pr,
                                "row %" PRIu64 " col %" PRIu64
                                ": padding lane holds stored word 0x%02x (code %d), expected "
                                "0x%02x (code 0)",
                                row, col, u[l], q, p->zero_u);
        } else if (!nf_grouped_code_valid(f, q)) {
            nf_problems_add(pr, "row %" PRIu64 " col %" PRIu64 ": code %d is not a legal %s code", row, col, q,
                            f->name);
        } else if (zero_only && q != 0) {
            nf_problems_add(pr, "row %" PRIu64 " col %" PRIu64 ": code %d under the +0 scale of group %" PRIu64, row,
                            col, q, gi);
        }
    }
}

/* Which stored words of a full logical group can hold an illegal code, so that the fast scan
 * of rs_check knows what to look for. */
typedef enum rs_scan {
    RS_SCAN_NONE,   /* every stored word is a legal code (Q2, Q4, Q5, Q6) */
    RS_SCAN_BYTE80, /* Q8: the byte 0x80 (code -128) */
    RS_SCAN_LANE10, /* T2: the 2-bit lane 0b10 (code -2) */
    RS_SCAN_SLOW,   /* anything else: always take the per-lane path */
} rs_scan;

static rs_scan rs_scan_of(const nf_format *f, const nf_rs_params *p)
{
    int lo = p->bias ? -p->bias : -(1 << (p->bits - 1));
    int hi = p->bias ? (1 << p->bits) - 1 - p->bias : (1 << (p->bits - 1)) - 1;
    if (f->code_min <= lo && f->code_max >= hi) return RS_SCAN_NONE;
    if (p->bits == 8 && !p->bias && f->code_min == -127 && f->code_max == 127) return RS_SCAN_BYTE80;
    if (p->bits == 2 && !p->bias && f->code_min == -1 && f->code_max == 1) return RS_SCAN_LANE10;
    return RS_SCAN_SLOW;
}

static inline uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

#define ONES8 0x0101010101010101ull
#define HIGH8 0x8080808080808080ull

static bool all_zero(const uint8_t *p, unsigned n)
{
    uint64_t acc = 0;
    unsigned i = 0;
    for (; i + 8 <= n; i += 8) acc |= rd64(p + i);
    for (; i < n; i++) acc |= p[i];
    return acc == 0;
}

/* Would rs_check_group report nothing for this full logical group (every lane a column < K)?
 * A false answer only sends the group down the exact per-lane path. */
static bool rs_group_clean(const nf_format *f, const nf_rs_params *p, rs_scan scan, uint16_t scale, const uint8_t *base,
                           const uint8_t *high)
{
    if (!nf_grouped_scale_valid(f, scale)) return false;
    if (nf_grouped_scale_requires_zero_codes(f, scale))
        /* zero codes are the stored words 0 in both planes (two's complement) */
        return !p->bias && all_zero(base, p->base_bytes) && all_zero(high, p->high_bytes);
    switch (scan) {
    case RS_SCAN_NONE: return true;
    case RS_SCAN_BYTE80: {
        uint64_t bad = 0;
        for (unsigned i = 0; i < p->base_bytes; i += 8) {
            uint64_t v = rd64(base + i) ^ HIGH8; /* a 0x80 byte becomes 0x00 */
            bad |= (v - ONES8) & ~v & HIGH8;
        }
        return bad == 0;
    }
    case RS_SCAN_LANE10: {
        uint64_t bad = 0;
        for (unsigned i = 0; i < p->base_bytes; i += 8) {
            uint64_t v = rd64(base + i);
            bad |= v & ~(v << 1) & 0xAAAAAAAAAAAAAAAAull; /* high bit set, low bit clear */
        }
        return bad == 0;
    }
    case RS_SCAN_SLOW: break;
    }
    return false;
}

static nf_status rs_check(const nf_geometry *g, const nf_byte_reader *src, nf_problems *pr, nf_error *err)
{
    nf_rs_params p;
    if (!nf_rs_params_for(g->format, &p)) return nf_error_set(err, NF_ERR_USAGE, "not a grouped format");
    rs_chunk c;
    NF_TRY(rs_chunk_alloc(g, &p, g->rows, &c, err));
    uint64_t gpr = g->groups_per_row, full = g->cols / p.group;
    uint64_t scale_off = scale_plane(g)->offset;
    rs_scan scan = rs_scan_of(g->format, &p);
    /* The fast scan reads whole 8-byte words of a group. */
    if (p.base_bytes % 8 != 0 || !nf_layout_check_fast) scan = RS_SCAN_SLOW;
    nf_status st = NF_OK;
    for (uint64_t r = 0; r < g->rows; r += c.rows) {
        uint64_t n = g->rows - r < c.rows ? g->rows - r : c.rows;
        st = rs_read_chunk(g, src, r, n, &c, err);
        if (st != NF_OK) break;
        for (uint64_t i = 0; i < n; i++)
            for (uint64_t gi = 0; gi < gpr; gi++) {
                uint8_t u[RS_MAX_GROUP];
                uint64_t slot = i * gpr + gi;
                const uint8_t *gb = c.base + slot * p.base_bytes, *gh = c.high + slot * p.high_bytes;
                uint16_t scale = nf_get_le16(c.scales + 2 * slot);
                if (gi < full && scan != RS_SCAN_SLOW && rs_group_clean(g->format, &p, scan, scale, gb, gh)) continue;
                rs_unpack(&p, gb, gh, u);
                rs_check_group(g, &p, r + i, gi, u, scale, scale_off + 2 * ((r + i) * gpr + gi), pr);
            }
    }
    rs_chunk_free(&c);
    return st;
}

const nf_layout_ops nf_layout_ops_row_split = {
    .encode_rows = rs_encode_rows,
    .encode_rows_checked = rs_encode_rows_checked,
    .decode_rows = rs_decode_rows,
    .decode_f32 = rs_decode_f32,
    .check = rs_check,
};
