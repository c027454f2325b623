/* Public encode/decode/check/gather entry points: argument validation once, then dispatch to
 * the layout's operations (layout_impl.h).  Also the shared bounded-I/O and problem helpers and
 * the parts every layout has in common: zero gaps between planes and row-major plane copies. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout/layout_impl.h"

bool nf_layout_check_fast = true;

/* ---------------------------------------------------------------- helpers */
void nf_problems_add(nf_problems *p, const char *fmt, ...)
{
    if (p->count < p->max_reports && p->report) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        p->report(p->ctx, msg);
    }
    p->count++;
}

nf_status nf_layout_read(const nf_byte_reader *src, uint64_t offset, void *buf, uint64_t len, nf_error *err)
{
    size_t n;
    if (len == 0) return NF_OK;
    if (!nf_u64_to_size(len, &n))
        return nf_error_set(err, NF_ERR_NOMEM, "read of %" PRIu64 " bytes does not fit in memory", len);
    return src->read(src->ctx, offset, buf, n, err);
}

nf_status nf_layout_emit(nf_write_fn write, void *ctx, uint64_t offset, const void *buf, uint64_t len, nf_error *err)
{
    size_t n;
    if (len == 0) return NF_OK;
    if (!nf_u64_to_size(len, &n))
        return nf_error_set(err, NF_ERR_NOMEM, "write of %" PRIu64 " bytes does not fit in memory", len);
    return write(ctx, offset, buf, n, err);
}

void *nf_layout_malloc(uint64_t bytes, nf_error *err)
{
    size_t n;
    void *p = NULL;
    if (nf_u64_to_size(bytes, &n)) p = malloc(n ? n : 1);
    if (!p) nf_error_set(err, NF_ERR_NOMEM, "out of memory allocating %" PRIu64 " bytes", bytes);
    return p;
}

uint64_t nf_layout_chunk_rows(uint64_t row_bytes, uint64_t rows_left)
{
    uint64_t n = row_bytes == 0 || row_bytes >= NF_LAYOUT_CHUNK_BYTES ? 1 : NF_LAYOUT_CHUNK_BYTES / row_bytes;
    return n < rows_left ? n : rows_left;
}

static bool is_nvfp4(const nf_geometry *g) { return g->layout->id == NF_LAYOUT_BLOCK_SCALE_K16_M128X4_V1; }

static nf_status check_geometry(const nf_geometry *g, nf_error *err)
{
    if (!g || !g->layout || !nf_layout_ops_of(g) || g->nplanes == 0 || g->nplanes > NF_MAX_PLANES)
        return nf_error_set(err, NF_ERR_USAGE, "missing or uninitialized geometry");
    return NF_OK;
}

/* Gaps: bytes between the end of one plane and the start of the next, and after the last plane
 * up to the object's end.  Canonical content is zero in every layout. */
typedef struct gap {
    uint64_t start, end;
} gap;

static uint32_t plane_gaps(const nf_geometry *g, gap *gaps)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < g->nplanes; i++) {
        uint64_t end = g->planes[i].offset + g->planes[i].bytes;
        uint64_t next = i + 1 < g->nplanes ? g->planes[i + 1].offset : g->bytes;
        if (next > end) gaps[n++] = (gap){end, next};
    }
    return n;
}

/* ---------------------------------------------------------------- encode */
nf_status nf_layout_encode_rows(const nf_geometry *g, const nf_words *w, uint64_t r0, bool unchecked, nf_write_fn write,
                                void *ctx, nf_error *err)
{
    NF_TRY(check_geometry(g, err));
    if (!write) return nf_error_set(err, NF_ERR_USAGE, "nf_layout_encode_rows: missing writer");
    NF_TRY(nf_words_fit(g, w, r0, err));
    if (is_nvfp4(g) && (r0 % 128 != 0 || w->rows % 128 != 0))
        return nf_error_set(err, NF_ERR_USAGE,
                            "nvfp4 encodes whole 128-row tiles: first row %" PRIu64 " and %" PRIu64
                            " rows must be multiples of 128",
                            r0, w->rows);
    const nf_layout_ops *ops = nf_layout_ops_of(g);
    /* a layout that checks as it encodes saves a pass over the words (row_split: the packer's
     * range check is the code rule) */
    if (!unchecked && w->rows > 0 && ops->encode_rows_checked)
        return ops->encode_rows_checked(g, w, r0, write, ctx, err);
    if (!unchecked) NF_TRY(nf_words_check(g, w, r0, err));
    if (w->rows == 0) return NF_OK;
    return ops->encode_rows(g, w, r0, write, ctx, err);
}

nf_status nf_layout_encode_tail(const nf_geometry *g, const nf_words *w, bool unchecked, nf_write_fn write, void *ctx,
                                nf_error *err)
{
    static const uint8_t zeros[256];
    NF_TRY(check_geometry(g, err));
    if (!write) return nf_error_set(err, NF_ERR_USAGE, "nf_layout_encode_tail: missing writer");
    gap gaps[NF_MAX_PLANES];
    uint32_t ngaps = plane_gaps(g, gaps);
    for (uint32_t i = 0; i < ngaps; i++) {
        for (uint64_t off = gaps[i].start; off < gaps[i].end;) {
            uint64_t len = gaps[i].end - off < sizeof zeros ? gaps[i].end - off : sizeof zeros;
            NF_TRY(nf_layout_emit(write, ctx, off, zeros, len, err));
            off += len;
        }
    }
    const nf_layout_ops *ops = nf_layout_ops_of(g);
    if (ops->encode_tail) return ops->encode_tail(g, w, unchecked, write, ctx, err);
    return NF_OK;
}

typedef struct memory_sink {
    uint8_t *out;
    uint64_t size;
} memory_sink;

static nf_status memory_write(void *ctx, uint64_t offset, const void *buf, size_t len, nf_error *err)
{
    memory_sink *m = ctx;
    if (offset > m->size || len > m->size - offset)
        return nf_error_set(err, NF_ERR_USAGE, "write of %zu bytes at offset %" PRIu64 " is past the end (%" PRIu64 ")",
                            len, offset, m->size);
    memcpy(m->out + offset, buf, len);
    return NF_OK;
}

nf_status nf_layout_encode(const nf_geometry *g, const nf_words *w, uint8_t *out, nf_error *err)
{
    NF_TRY(check_geometry(g, err));
    if (!w || !out) return nf_error_set(err, NF_ERR_USAGE, "nf_layout_encode: missing words or output");
    if (w->rows != g->rows)
        return nf_error_set(err, NF_ERR_USAGE, "nf_layout_encode needs all %" PRIu64 " rows, words hold %" PRIu64,
                            g->rows, w->rows);
    memory_sink sink = {out, g->bytes};
    NF_TRY(nf_layout_encode_rows(g, w, 0, false, memory_write, &sink, err));
    return nf_layout_encode_tail(g, w, false, memory_write, &sink, err);
}

/* ---------------------------------------------------------------- decode */
nf_status nf_layout_decode_rows(const nf_geometry *g, const nf_byte_reader *src, uint64_t r0, uint64_t r1, nf_words *w,
                                nf_error *err)
{
    NF_TRY(check_geometry(g, err));
    if (!src || !src->read || !w) return nf_error_set(err, NF_ERR_USAGE, "nf_layout_decode_rows: missing argument");
    if (r0 > r1 || r1 > g->rows)
        return nf_error_set(err, NF_ERR_USAGE,
                            "rows [%" PRIu64 ",%" PRIu64 ") are outside the tensor's %" PRIu64 " rows", r0, r1,
                            g->rows);
    if (w->rows < r1 - r0)
        return nf_error_set(err, NF_ERR_USAGE, "words hold %" PRIu64 " rows, %" PRIu64 " requested", w->rows, r1 - r0);
    /* Fit the requested rows only: the words may have room for more. */
    nf_words view = *w;
    view.rows = r1 - r0;
    NF_TRY(nf_words_fit(g, &view, r0, err));
    if (r0 == r1 && !(is_nvfp4(g) && w->divisors)) return NF_OK;
    return nf_layout_ops_of(g)->decode_rows(g, src, r0, r1, &view, err);
}

nf_status nf_layout_decode_rows_f32(const nf_geometry *g, const nf_byte_reader *src, uint64_t r0, uint64_t r1,
                                    float *out, nf_error *err)
{
    NF_TRY(check_geometry(g, err));
    if (!src || !src->read) return nf_error_set(err, NF_ERR_USAGE, "nf_layout_decode_rows_f32: missing argument");
    if (r0 > r1 || r1 > g->rows)
        return nf_error_set(err, NF_ERR_USAGE,
                            "rows [%" PRIu64 ",%" PRIu64 ") are outside the tensor's %" PRIu64 " rows", r0, r1,
                            g->rows);
    /* nf_words_to_f32's refusals */
    if (!out && r1 > r0) return nf_error_set(err, NF_ERR_USAGE, "nf_layout_decode_rows_f32: missing output");
    if (!g->format || !nf_layout_ops_of(g)->decode_f32)
        return nf_error_set(err, NF_ERR_USAGE, "a resource has no values");
    /* nvfp4 reads its divisor words even for no rows, as decode_rows into allocated words does */
    if (r0 == r1 && !is_nvfp4(g)) return NF_OK;
    return nf_layout_ops_of(g)->decode_f32(g, src, r0, r1, out, err);
}

/* ---------------------------------------------------------------- validation */
nf_status nf_layout_check(const nf_geometry *g, const nf_byte_reader *src, nf_problem_fn report, void *report_ctx,
                          uint64_t max_reports, uint64_t *problems, nf_error *err)
{
    NF_TRY(check_geometry(g, err));
    if (!src || !src->read) return nf_error_set(err, NF_ERR_USAGE, "nf_layout_check: missing reader");
    nf_problems p = {report, report_ctx, max_reports, 0};
    if (problems) *problems = 0;
    const nf_layout_ops *ops = nf_layout_ops_of(g);
    if (ops->check) NF_TRY(ops->check(g, src, &p, err));
    gap gaps[NF_MAX_PLANES];
    uint32_t ngaps = plane_gaps(g, gaps);
    for (uint32_t i = 0; i < ngaps; i++) {
        uint8_t buf[256];
        for (uint64_t off = gaps[i].start; off < gaps[i].end;) {
            uint64_t len = gaps[i].end - off < sizeof buf ? gaps[i].end - off : sizeof buf;
            NF_TRY(nf_layout_read(src, off, buf, len, err));
            for (uint64_t j = 0; j < len; j++)
                if (buf[j])
                    nf_problems_add(&p, "plane gap byte at offset %" PRIu64 " is 0x%02x, expected 0x00", off + j,
                                    buf[j]);
            off += len;
        }
    }
    if (problems) *problems = p.count;
    return NF_OK;
}

/* ---------------------------------------------------------------- gathers */
nf_status nf_layout_gather_rows(const nf_geometry *g, const nf_byte_reader *src, const uint64_t *rows, uint64_t count,
                                nf_geometry *out_g, uint8_t *out, nf_error *err)
{
    NF_TRY(check_geometry(g, err));
    if (!out_g || (count && !rows)) return nf_error_set(err, NF_ERR_USAGE, "nf_layout_gather_rows: missing argument");
    if (g->layout->resource_encoding || !g->format)
        return nf_error_set(err, NF_ERR_USAGE, "a resource has no rows to gather");
    if (count == 0) return nf_error_set(err, NF_ERR_INVALID, "a gather needs at least one row");
    for (uint64_t i = 0; i < count; i++)
        if (rows[i] >= g->rows)
            return nf_error_set(err, NF_ERR_INVALID,
                                "gather index %" PRIu64 ": row %" PRIu64 " is outside the tensor's %" PRIu64 " rows", i,
                                rows[i], g->rows);
    if (is_nvfp4(g) && count % 128 != 0)
        return nf_error_set(err, NF_ERR_INVALID,
                            "an nvfp4 gather needs a multiple of 128 rows (whole scale tiles), got %" PRIu64, count);
    /* The result is a matrix [count, cols]; for contiguous_le_v1 the leading dimensions are
     * flattened into rows. */
    uint64_t shape[2] = {count, g->cols};
    NF_TRY(nf_geometry_init(out_g, g->layout, g->format, 2, shape, 1, err));
    if (!out) return NF_OK;
    if (!src || !src->read) return nf_error_set(err, NF_ERR_USAGE, "nf_layout_gather_rows: missing reader");
    size_t total;
    if (!nf_u64_to_size(out_g->bytes, &total))
        return nf_error_set(err, NF_ERR_NOMEM, "gathered tensor of %" PRIu64 " bytes does not fit in memory",
                            out_g->bytes);
    /* Gaps (and anything gather_extra fills) start as the canonical zero. */
    memset(out, 0, total);
    for (uint32_t pi = 0; pi < g->nplanes; pi++) {
        const nf_plane *sp = &g->planes[pi], *dp = &out_g->planes[pi];
        uint64_t rb = sp->row_bytes;
        if (rb == 0) continue;
        /* Runs of consecutive source rows are read in one piece (up to a chunk). */
        for (uint64_t i = 0; i < count;) {
            uint64_t j = i + 1;
            while (j < count && rows[j] == rows[j - 1] + 1 && (j - i + 1) * rb <= NF_LAYOUT_CHUNK_BYTES) j++;
            NF_TRY(nf_layout_read(src, sp->offset + rows[i] * rb, out + dp->offset + i * rb, (j - i) * rb, err));
            i = j;
        }
    }
    const nf_layout_ops *ops = nf_layout_ops_of(g);
    if (ops->gather_extra) return ops->gather_extra(g, src, rows, count, out_g, out, err);
    return NF_OK;
}
