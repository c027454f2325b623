/* ninfer/layout.h - the 7 registered storage layouts (docs/layouts.md 1): format/shape
 * compatibility, checked encoded size, plane offsets, encode words -> bytes with canonical
 * padding, decode bytes -> words, word-level validation, row views and row gathers.
 *
 * Layouts only restore words (docs/layouts.md, introduction); nothing here re-encodes or rounds a value.
 * All size and offset arithmetic is checked for U64 overflow.
 *
 * Every tensor is viewed as a matrix of `rows` x `cols`: for the matrix layouts rows = N and
 * cols = K of the shape [N,K]; for contiguous_le_v1 cols is the last dimension (1 for a scalar)
 * and rows the product of the leading dimensions (1 for rank 0 and rank 1).
 */
#ifndef NINFER_LAYOUT_H
#define NINFER_LAYOUT_H

#include <ninfer/export.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ninfer/error.h>
#include <ninfer/format.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NF_MAX_RANK 16
#define NF_MAX_PLANES 3
#define NF_TENSOR_ALIGNMENT 256u

typedef enum nf_layout_id {
    NF_LAYOUT_CONTIGUOUS_LE_V1,
    NF_LAYOUT_ROW_SPLIT_K128_V1,
    NF_LAYOUT_BLOCK_SCALE_K16_M128X4_V1,
    NF_LAYOUT_ROW_SCALE_V1,
    NF_LAYOUT_ROW_INTERLEAVED_V1,
    NF_LAYOUT_GGUF_BLOCKS_V1,
    NF_LAYOUT_RAW_BYTES_V1, /* the resource encoding */
    NF_LAYOUT_COUNT
} nf_layout_id;

typedef struct nf_layout {
    nf_layout_id id;
    const char *name;
    uint64_t alignment;     /* object offset alignment: 256 for tensors, 1 for raw_bytes_v1 */
    bool resource_encoding; /* raw_bytes_v1 */
} nf_layout;

NF_API size_t nf_layout_count(void);
NF_API const nf_layout *nf_layout_at(size_t index);
NF_API const nf_layout *nf_layout_by_id(nf_layout_id id);
NF_API const nf_layout *nf_layout_lookup(const char *name); /* NULL when unknown */
NF_API bool nf_layout_accepts(const nf_layout *layout, const nf_format *fmt);
NF_API const nf_layout *nf_layout_default_for(const nf_format *fmt);

/* One plane of an encoded tensor, relative to the object's first byte. */
typedef struct nf_plane {
    const char *name; /* "words", "codes", "high", "scales", "divisors", "rows", "blocks" */
    uint64_t offset;
    uint64_t bytes;
    uint64_t row_bytes; /* bytes of one row in this plane; 0 if the plane is not row-major
                           (nvfp4 swizzled scales, divisors) */
} nf_plane;

/* Everything derived from (layout, format, shape, divisors). */
typedef struct nf_geometry {
    const nf_layout *layout;
    const nf_format *format;
    uint32_t rank;
    uint64_t shape[NF_MAX_RANK];
    uint64_t elements;
    uint64_t rows, cols;
    uint64_t divisors; /* nvfp4: number of divisor words; 1 otherwise */
    uint64_t bytes;    /* encoded size of the object */
    /* row_split_k128_v1 */
    uint64_t k_pad, groups_per_row, logical_groups;
    /* row_interleaved_v1 and gguf_blocks_v1: bytes of one row record; contiguous: cols*word */
    uint64_t row_bytes;
    uint32_t nplanes;
    nf_plane planes[NF_MAX_PLANES];
} nf_geometry;

/* Compute the geometry; fails (NF_ERR_INVALID, message says why) when the layout does not
 * accept the format ("layout 'x' does not accept format 'y'"), the shape is not one the layout
 * holds, divisors are not allowed, or a size overflows U64.  For raw_bytes_v1 use
 * nf_geometry_resource(). */
NF_API nf_status nf_geometry_init(nf_geometry *g, const nf_layout *layout, const nf_format *fmt, uint32_t rank,
                                  const uint64_t *shape, uint64_t divisors, nf_error *err);
/* raw_bytes_v1 of `bytes` bytes (>= 1). */
NF_API nf_status nf_geometry_resource(nf_geometry *g, uint64_t bytes, nf_error *err);

/* Logical words of `rows` consecutive rows (docs/layouts.md, introduction).  Only the arrays of the tensor's
 * category are used; all are row-major over the held rows and cover logical columns only
 * (padding is never represented). */
typedef struct nf_words {
    uint64_t rows, cols;
    uint16_t *w16;      /* direct bf16: [rows*cols] words */
    uint32_t *w32;      /* direct fp32 / int32: [rows*cols] words */
    int8_t *codes;      /* grouped: signed logical codes q [rows*cols] (q2: u - 1) */
    uint16_t *scales;   /* grouped: [rows*logical_groups] binary16 words; fp8 rows: [rows] */
    uint8_t *codes8;    /* nvfp4: E2M1 words (0..15); fp8: E4M3FN words; [rows*cols] */
    uint8_t *scales8;   /* nvfp4: natural order [rows*(cols/16)] E4M3FN words */
    uint32_t *divisors; /* nvfp4: all `divisors` words of the tensor (not per chunk) */
    uint8_t *blocks;    /* gguf: [rows*row_bytes] raw block bytes */
} nf_words;

/* Allocate the arrays needed for `rows` rows of g's tensor (zero-filled). */
NF_API nf_status nf_words_alloc(nf_words *w, const nf_geometry *g, uint64_t rows, nf_error *err);
NF_API void nf_words_free(nf_words *w);

/* Random access to an object's bytes (offsets relative to the object's first byte). */
typedef nf_status (*nf_read_fn)(void *ctx, uint64_t offset, void *buf, size_t len, nf_error *err);
typedef struct nf_byte_reader {
    nf_read_fn read;
    void *ctx;
} nf_byte_reader;
/* A reader over a memory buffer; `mem` must outlive the reader. */
typedef struct nf_memory_source {
    const uint8_t *data;
    uint64_t size;
} nf_memory_source;
NF_API void nf_byte_reader_memory(nf_byte_reader *r, nf_memory_source *mem, const void *data, uint64_t size);

/* Sink for encoded bytes (offsets relative to the object's first byte). */
typedef nf_status (*nf_write_fn)(void *ctx, uint64_t offset, const void *buf, size_t len, nf_error *err);

/* ---------------------------------------------------------------- encode */
/* Check that every word of rows [0, w->rows) is legal for the format (codes in range, scale
 * validity, zero-scale rules, divisors).  The first problem is reported with row/column. */
NF_API nf_status nf_words_check(const nf_geometry *g, const nf_words *w, uint64_t first_row, nf_error *err);

/* Encode rows [r0, r0 + w->rows) held in w and write every byte those rows own in every plane
 * (including their padding lanes and padding groups).  nvfp4: r0 and w->rows must be multiples
 * of 128.  Words are checked first unless `unchecked` (tests build invalid artifacts that way). */
NF_API nf_status nf_layout_encode_rows(const nf_geometry *g, const nf_words *w, uint64_t r0, bool unchecked,
                                       nf_write_fn write, void *ctx, nf_error *err);
/* Write the bytes no row owns: zero gaps between and after planes, and nvfp4's divisor words
 * (taken from w->divisors).  Together with encode_rows over all rows, every byte of the object
 * is written exactly once. */
NF_API nf_status nf_layout_encode_tail(const nf_geometry *g, const nf_words *w, bool unchecked, nf_write_fn write,
                                       void *ctx, nf_error *err);
/* Whole tensor into out[g->bytes]. */
NF_API nf_status nf_layout_encode(const nf_geometry *g, const nf_words *w, uint8_t *out, nf_error *err);

/* ---------------------------------------------------------------- decode */
/* Decode rows [r0, r1) into w (allocated for at least r1 - r0 rows); w->divisors, when non-NULL,
 * receives all divisor words.  Does not validate words (see nf_layout_check). */
NF_API nf_status nf_layout_decode_rows(const nf_geometry *g, const nf_byte_reader *src, uint64_t r0, uint64_t r1,
                                       nf_words *w, nf_error *err);

/* ---------------------------------------------------------------- validation */
/* One problem found by nf_layout_check: message like "row 3 col 17: code -128 is not a legal
 * q8_g32_fp16 code" or "plane gap byte at offset 261 is 0x01, expected 0x00". */
typedef void (*nf_problem_fn)(void *ctx, const char *message);
/* Check every word of the object (codes, scales, divisors, zero-scale rules) and the canonical
 * contents of padding lanes, padding groups and plane gaps.  Each problem is passed to report;
 * *problems receives the count (reports stop after max_reports but counting goes on).  Returns
 * NF_OK when the object could be read, whatever it holds. */
NF_API nf_status nf_layout_check(const nf_geometry *g, const nf_byte_reader *src, nf_problem_fn report,
                                 void *report_ctx, uint64_t max_reports, uint64_t *problems, nf_error *err);

/* ---------------------------------------------------------------- row views and gathers */
typedef struct nf_span {
    uint32_t plane;  /* index into g->planes */
    uint64_t offset; /* relative to the object */
    uint64_t bytes;
} nf_span;
/* The byte spans holding consecutive rows [r0, r1): one per row-major plane (not one contiguous
 * range).  nvfp4: r0 and r1 must be multiples of 128 (its scale plane is tiled by 128 rows);
 * the divisor plane is not part of a row view. */
NF_API nf_status nf_layout_row_spans(const nf_geometry *g, uint64_t r0, uint64_t r1, nf_span *spans, uint32_t *nspans,
                                     nf_error *err);
/* The encoded bytes of a standalone tensor holding rows[0..count) of src, in that order (rows
 * may repeat), without re-encoding: *out_g gets its geometry (same format/layout, N = count)
 * and out must hold out_g->bytes (call with out == NULL to get the geometry only).  nvfp4
 * needs count % 128 == 0; its result has one divisor, so all gathered rows must share the same
 * divisor word (scales are un-swizzled and re-swizzled as bytes, nothing is re-encoded). */
NF_API nf_status nf_layout_gather_rows(const nf_geometry *g, const nf_byte_reader *src, const uint64_t *rows,
                                       uint64_t count, nf_geometry *out_g, uint8_t *out, nf_error *err);

/* Rows per bounded chunk of about max_values values, for streaming a tensor: at least 1, at
 * most g->rows, and for nvfp4 a multiple of 128 (its scale plane is tiled by 128 rows). */
NF_API uint64_t nf_geometry_chunk_rows(const nf_geometry *g, uint64_t max_values);

/* ---------------------------------------------------------------- values */
/* Represented values of the rows held in w (whose first row is absolute row `first_row`) as
 * binary32, row-major, logical columns only.  Direct int32 rounds to nearest even.  gguf_*
 * formats are handled by ggml-exact block dequantizers when available (else NF_ERR_INVALID). */
NF_API nf_status nf_words_to_f32(const nf_geometry *g, const nf_words *w, uint64_t first_row, float *out,
                                 nf_error *err);

/* Represented values of rows [r0, r1) straight from the encoded bytes into out[(r1 - r0) *
 * cols]: exactly nf_layout_decode_rows followed by nf_words_to_f32 (the same binary32 bits, NaN
 * payloads included, whatever the words; the same refusals), without words arrays.  Rows are
 * read in the same bounded chunks and unpacked a block of columns at a time into a small buffer
 * that stays in L1 while it is converted, so quantized formats cost one pass over the values
 * instead of two.  A failing reader fails the call as it fails nf_layout_decode_rows; for nvfp4
 * and row_scale_v1, whose planes are read in another order, its message may name another read. */
NF_API nf_status nf_layout_decode_rows_f32(const nf_geometry *g, const nf_byte_reader *src, uint64_t r0, uint64_t r1,
                                           float *out, nf_error *err);

/* ---------------------------------------------------------------- spans of long rows */
/* Columns [c0, c0 + w) of one row of a tensor, as a [1, w] tensor of its own (same format and
 * layout), so that a row too long for memory can be encoded or decoded piece by piece with the
 * calls above and the same results (docs/layouts.md, "Spans of a row").  Every layout keeps a
 * row's columns in order within each of its planes, so a span's bytes are runs of the whole
 * object's bytes; the row's scale of the FP8 row layouts is shared by all spans of the row.
 * c0 is a multiple of NF_COLSPAN_ALIGN, and so is w unless the span ends the row.  nvfp4 (tiles of
 * 128 rows) has spans of a band: columns [c0, c0 + w) of rows [row, row + 128), row a multiple of
 * 128, as a [128, w] tensor with one divisor (the band's, shared by its spans); decoding row i of
 * it gives row `row + i`'s values there.  Resources have no spans. */
#define NF_COLSPAN_ALIGN 4096u

typedef struct nf_colspan {
    nf_geometry g;            /* the span as a [1, w] tensor ([128, w]: nvfp4) */
    const nf_geometry *whole; /* must outlive the span */
    uint64_t row, c0;
} nf_colspan;

/* Does g's layout cut rows into spans of one row? */
NF_API bool nf_layout_has_colspans(const nf_geometry *g);
/* The rows a span of g holds: 1 (nf_layout_has_colspans), 128 (nvfp4's bands), 0 (no spans). */
NF_API uint64_t nf_layout_colspan_rows(const nf_geometry *g);
NF_API nf_status nf_colspan_init(nf_colspan *s, const nf_geometry *whole, uint64_t row, uint64_t c0, uint64_t w,
                                 nf_error *err);

/* Bytes [off, off + len) of the span object: the first *run of them (the longest run that stays
 * contiguous, at least 1 when len > 0) are the whole object's bytes at *whole_off; *shared when
 * they are bytes of the row that every span of it holds (a row scale).  false for a byte no
 * plane of the span holds (a gap between planes). */
NF_API bool nf_colspan_map(const nf_colspan *s, uint64_t off, uint64_t len, uint64_t *whole_off, uint64_t *run,
                           bool *shared);

/* Writing a span into the whole object through another writer (nf_colspan_write, ctx an
 * nf_colspan_sink): each run goes to its place; the shared bytes only from the row's first span
 * (c0 = 0).  Reading a span from a reader of the whole object: nf_colspan_reader. */
typedef struct nf_colspan_sink {
    const nf_colspan *span;
    nf_write_fn write;
    void *ctx;
} nf_colspan_sink;
NF_API nf_status nf_colspan_write(void *sink, uint64_t offset, const void *buf, size_t len, nf_error *err);

typedef struct nf_colspan_source {
    const nf_colspan *span;
    const nf_byte_reader *whole;
} nf_colspan_source;
NF_API void nf_colspan_reader(nf_colspan_source *src, nf_byte_reader *out);

#ifdef __cplusplus
}
#endif
#endif
