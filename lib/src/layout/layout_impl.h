/* Internal interface of the layout module: per-layout dispatch, bounded I/O helpers, problem
 * reporting and the little-endian word helpers shared by the layout codecs.
 *
 * Every layout implements the same few operations on row ranges; the public entry points in
 * codec.c validate arguments once and dispatch through nf_layout_ops, so the per-layout files
 * only deal with bytes. */
#ifndef NINFER_LAYOUT_IMPL_H
#define NINFER_LAYOUT_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include <ninfer/layout.h>

#include "common/checked.h"

/* Upper bound of the scratch buffer one bounded read or write works with.  A chunk always holds
 * at least one row, so a single row larger than this is still handled (in one piece). */
#define NF_LAYOUT_CHUNK_BYTES ((uint64_t)1 << 20)

/* ---------------------------------------------------------------- problem reporting */
typedef struct nf_problems {
    nf_problem_fn report;
    void *ctx;
    uint64_t max_reports;
    uint64_t count;
} nf_problems;

/* Count one problem; format and pass it on only while under max_reports. */
void nf_problems_add(nf_problems *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Test hook: when false, nf_layout_check skips its word-at-a-time prescans (which only let
 * clean groups, rows and scale words skip the per-word checks) and examines every word the
 * reference way.  Default true; tests compare the two.  Not for use while checks run. */
extern bool nf_layout_check_fast;

/* ---------------------------------------------------------------- bounded I/O */
/* Read len bytes at offset through src; len 0 is a no-op.  NF_ERR_NOMEM-free: buf is given. */
nf_status nf_layout_read(const nf_byte_reader *src, uint64_t offset, void *buf, uint64_t len, nf_error *err);
/* Write len bytes at offset through write; len 0 is a no-op. */
nf_status nf_layout_emit(nf_write_fn write, void *ctx, uint64_t offset, const void *buf, uint64_t len, nf_error *err);
/* malloc of a byte count computed in U64 (at least 1 byte); NULL with NF_ERR_NOMEM set. */
void *nf_layout_malloc(uint64_t bytes, nf_error *err);
/* How many rows of row_bytes each fit one chunk (at least 1, at most rows_left). */
uint64_t nf_layout_chunk_rows(uint64_t row_bytes, uint64_t rows_left);

/* ---------------------------------------------------------------- little endian */
static inline uint16_t nf_get_le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static inline uint32_t nf_get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline void nf_put_le16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v & 0xFFu);
    p[1] = (uint8_t)(v >> 8);
}

static inline void nf_put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v & 0xFFu);
    p[1] = (uint8_t)((v >> 8) & 0xFFu);
    p[2] = (uint8_t)((v >> 16) & 0xFFu);
    p[3] = (uint8_t)(v >> 24);
}

/* ---------------------------------------------------------------- words */
/* Does w fit g (same cols, rows [first_row, first_row + w->rows) inside the tensor, the arrays
 * of the category present)?  NF_ERR_USAGE otherwise: a caller bug, not bad data. */
nf_status nf_words_fit(const nf_geometry *g, const nf_words *w, uint64_t first_row, nf_error *err);

/* ---------------------------------------------------------------- row_split parameters */
typedef struct nf_rs_params {
    unsigned bits;       /* b */
    unsigned group;      /* G */
    unsigned base_bytes; /* B: base-plane bytes per group */
    unsigned high_bytes; /* H: high-plane bytes per group (Q5/Q6) */
    int bias;            /* stored u = q + bias for Q2; two's complement otherwise */
    uint8_t zero_u;      /* stored word of logical code 0 (padding lanes) */
} nf_rs_params;

/* false when fmt is not a grouped format. */
bool nf_rs_params_for(const nf_format *fmt, nf_rs_params *p);

/* ---------------------------------------------------------------- per-layout dispatch */
typedef struct nf_layout_ops {
    /* Encode rows [r0, r0 + w->rows) (w already fitted and, unless unchecked, checked; w->rows
     * > 0).  Must still refuse codes that do not fit the stored width. */
    nf_status (*encode_rows)(const nf_geometry *g, const nf_words *w, uint64_t r0, nf_write_fn write, void *ctx,
                             nf_error *err);
    /* encode_rows that also checks the words as it encodes them, with nf_words_check's rules and
     * its first message, writing nothing when it refuses them (w fitted, w->rows > 0); NULL when
     * the layout has none, and the words are then checked first. */
    nf_status (*encode_rows_checked)(const nf_geometry *g, const nf_words *w, uint64_t r0, nf_write_fn write, void *ctx,
                                     nf_error *err);
    /* Planes no row owns other than zero gaps (nvfp4 divisors); NULL when none. */
    nf_status (*encode_tail)(const nf_geometry *g, const nf_words *w, bool unchecked, nf_write_fn write, void *ctx,
                             nf_error *err);
    /* Decode rows [r0, r1) (r0 < r1, w fitted) plus, for nvfp4, divisors when w->divisors. */
    nf_status (*decode_rows)(const nf_geometry *g, const nf_byte_reader *src, uint64_t r0, uint64_t r1, nf_words *w,
                             nf_error *err);
    /* Values of rows [r0, r1) into out (nf_layout_decode_rows_f32; out and a format present, r0
     * < r1 except for nvfp4, which reads its divisors even for no rows): the values decode_rows
     * followed by nf_words_to_f32 give, bit for bit, with the same errors, row by row from the
     * encoded bytes (no words arrays).  NULL for raw_bytes_v1. */
    nf_status (*decode_f32)(const nf_geometry *g, const nf_byte_reader *src, uint64_t r0, uint64_t r1, float *out,
                            nf_error *err);
    /* Word-level checks of the whole object except plane gaps (checked generically); NULL when
     * the layout has no word rules. */
    nf_status (*check)(const nf_geometry *g, const nf_byte_reader *src, nf_problems *p, nf_error *err);
    /* Gather of the planes that are not row-major (nvfp4 scales and divisor); row-major planes
     * are copied generically.  NULL when every plane is row-major. */
    nf_status (*gather_extra)(const nf_geometry *g, const nf_byte_reader *src, const uint64_t *rows, uint64_t count,
                              const nf_geometry *out_g, uint8_t *out, nf_error *err);
} nf_layout_ops;

extern const nf_layout_ops nf_layout_ops_contiguous;
extern const nf_layout_ops nf_layout_ops_row_split;
extern const nf_layout_ops nf_layout_ops_nvfp4;
extern const nf_layout_ops nf_layout_ops_row_scale;
extern const nf_layout_ops nf_layout_ops_row_interleaved;
extern const nf_layout_ops nf_layout_ops_gguf;
extern const nf_layout_ops nf_layout_ops_raw;

/* The operations of g's layout (NULL for a geometry without a layout). */
const nf_layout_ops *nf_layout_ops_of(const nf_geometry *g);

/* nvfp4 scale plane: offset of natural scale [row, group] inside the plane (docs/layouts.md 5). */
static inline uint64_t nf_nvfp4_swizzle(uint64_t row, uint64_t group, uint64_t k)
{
    uint64_t k_tiles = k / 64, row_tile = row / 128, row_inner = row % 128;
    return (row_tile * k_tiles + group / 4) * 512 + (row_inner % 32) * 16 + (row_inner / 32) * 4 + group % 4;
}

#endif
