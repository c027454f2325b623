/* Shared helpers of the layout tests (test_layout_*.c): lookups, a deterministic PRNG, random
 * legal words per format, a coverage-tracking writer, counting readers and word comparison.
 * Everything is static inline so each test executable takes what it uses. */
#ifndef TEST_LAYOUT_UTIL_H
#define TEST_LAYOUT_UTIL_H

#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/format.h>
#include <ninfer/layout.h>

/* ---------------------------------------------------------------- lookups */
static inline const nf_format *F(const char *name)
{
    const nf_format *f = nf_format_lookup(name);
    cr_assert_not_null(f, "format %s", name);
    return f;
}

static inline const nf_layout *L(const char *name)
{
    const nf_layout *l = nf_layout_lookup(name);
    cr_assert_not_null(l, "layout %s", name);
    return l;
}

/* Geometry of a matrix [n,k] in fmt's default layout; asserts success. */
static inline nf_geometry geo2(const char *fmt, uint64_t n, uint64_t k, uint64_t divisors)
{
    nf_geometry g;
    nf_error err = {0};
    uint64_t shape[2] = {n, k};
    const nf_format *f = F(fmt);
    nf_status st = nf_geometry_init(&g, nf_layout_default_for(f), f, 2, shape, divisors, &err);
    cr_assert_eq(st, NF_OK, "geometry %s [%" PRIu64 ",%" PRIu64 "]: %s", fmt, n, k, err.message);
    return g;
}

/* ---------------------------------------------------------------- PRNG (splitmix64) */
typedef struct rng {
    uint64_t s;
} rng;

static inline uint64_t rng_next(rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi]. */
static inline uint64_t rng_range(rng *r, uint64_t lo, uint64_t hi) { return lo + rng_next(r) % (hi - lo + 1); }

/* ---------------------------------------------------------------- random legal words */
static inline uint16_t random_grouped_scale(rng *r, const nf_format *f)
{
    /* Mix special words (zeros, subnormals, negatives) with random ones. */
    static const uint16_t specials[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x3C00, 0xBC00, 0x7BFF, 0xFBFF, 0x03FF};
    for (;;) {
        uint16_t s = (rng_next(r) & 3) == 0 ? specials[rng_next(r) % (sizeof specials / sizeof specials[0])]
                                            : (uint16_t)rng_next(r);
        if (nf_grouped_scale_valid(f, s)) return s;
    }
}

static inline int random_grouped_code(rng *r, const nf_format *f)
{
    return f->code_min + (int)rng_range(r, 0, (uint64_t)(f->code_max - f->code_min));
}

static inline uint16_t random_fp8_scale(rng *r, const nf_format *f)
{
    for (;;) {
        uint16_t s = (rng_next(r) & 7) == 0 ? 0 : (uint16_t)rng_next(r);
        if (nf_fp8_row_scale_valid(f, s)) return s;
    }
}

static inline uint8_t random_fp8_code(rng *r)
{
    for (;;) {
        uint8_t c = (uint8_t)rng_next(r);
        if (nf_fp8_code_valid(c)) return c;
    }
}

/* Make a random ggml block legal: its binary16 scale fields (docs/formats.md 8: d, dmin at
 * these byte offsets; IQ1_M's d in the top nibbles of its scale words at 48..55) lose the top
 * bit of their exponent, so none is NaN or infinite (docs/formats.md 8.1). */
static inline void legal_ggml_block(const nf_format *f, uint8_t *b)
{
    int d = 0, dmin = -1;
    switch (f->id) {
    case NF_FMT_GGUF_Q2_K:
        d = 80;
        dmin = 82;
        break;
    case NF_FMT_GGUF_Q4_K:
    case NF_FMT_GGUF_Q5_K: dmin = 2; break;
    case NF_FMT_GGUF_Q3_K: d = 108; break;
    case NF_FMT_GGUF_Q6_K: d = 208; break;
    case NF_FMT_GGUF_IQ1_M: b[55] &= (uint8_t)~0x40u; return; /* d bit 14 is bit 14 of the word at 54 */
    default: break;
    }
    b[d + 1] &= (uint8_t)~0x40u;
    if (dmin >= 0) b[dmin + 1] &= (uint8_t)~0x40u;
}

/* Fill rows [0, w->rows) of w (absolute rows from first_row) with random legal words. */
static inline void random_words(rng *r, const nf_geometry *g, nf_words *w)
{
    const nf_format *f = g->format;
    uint64_t k = g->cols;
    if (g->layout->id == NF_LAYOUT_GGUF_BLOCKS_V1 || g->layout->id == NF_LAYOUT_RAW_BYTES_V1) {
        for (uint64_t i = 0; i < w->rows * g->row_bytes; i++) w->blocks[i] = (uint8_t)rng_next(r);
        if (f && f->category == NF_CAT_GGUF)
            for (uint64_t i = 0; i < w->rows * g->row_bytes; i += f->block_bytes) legal_ggml_block(f, w->blocks + i);
        return;
    }
    switch (f->category) {
    case NF_CAT_DIRECT:
        for (uint64_t i = 0; i < w->rows * k; i++) {
            if (f->word_bytes == 2) w->w16[i] = (uint16_t)rng_next(r);
            else w->w32[i] = (uint32_t)rng_next(r);
        }
        break;
    case NF_CAT_GROUPED:
        for (uint64_t row = 0; row < w->rows; row++)
            for (uint64_t gi = 0; gi < g->logical_groups; gi++) {
                uint16_t s = random_grouped_scale(r, f);
                w->scales[row * g->logical_groups + gi] = s;
                bool zero = nf_grouped_scale_requires_zero_codes(f, s);
                for (uint64_t c = gi * f->group_size; c < (gi + 1) * f->group_size && c < k; c++)
                    w->codes[row * k + c] = zero ? 0 : (int8_t)random_grouped_code(r, f);
            }
        break;
    case NF_CAT_NVFP4:
        for (uint64_t i = 0; i < w->rows * k; i++) w->codes8[i] = (uint8_t)(rng_next(r) & 15);
        for (uint64_t i = 0; i < w->rows * (k / 16); i++) {
            uint8_t s;
            do s = (uint8_t)(rng_next(r) & 0x7F);
            while (!nf_nvfp4_scale_valid(s));
            w->scales8[i] = s;
        }
        if (w->divisors)
            for (uint64_t i = 0; i < g->divisors; i++) {
                uint32_t d;
                do d = (uint32_t)(rng_next(r) & 0x7FFFFFFF);
                while (!nf_nvfp4_divisor_valid(d));
                w->divisors[i] = d;
            }
        break;
    case NF_CAT_FP8_ROW:
        for (uint64_t row = 0; row < w->rows; row++) {
            uint16_t s = random_fp8_scale(r, f);
            w->scales[row] = s;
            bool zero = nf_fp8_row_scale_is_zero(s);
            for (uint64_t c = 0; c < k; c++)
                w->codes8[row * k + c] = zero ? (uint8_t)(rng_next(r) & 0x80) : random_fp8_code(r);
        }
        break;
    case NF_CAT_GGUF: break;
    }
}

/* Random shape for fmt in its default layout. */
static inline nf_geometry random_geometry(rng *r, const nf_format *f)
{
    nf_geometry g;
    nf_error err = {0};
    const nf_layout *l = nf_layout_default_for(f);
    uint64_t shape[NF_MAX_RANK], divisors = 1;
    uint32_t rank = 2;
    switch (f->category) {
    case NF_CAT_DIRECT:
        rank = (uint32_t)rng_range(r, 0, 4);
        for (uint32_t i = 0; i < rank; i++) shape[i] = rng_range(r, 1, 6);
        break;
    case NF_CAT_GROUPED:
        shape[0] = rng_range(r, 1, 6);
        /* odd K, partial groups, wholly-padding groups, several padded widths */
        shape[1] = (rng_next(r) & 1) ? rng_range(r, 1, 140) : rng_range(r, 1, 400);
        break;
    case NF_CAT_NVFP4: {
        uint64_t tiles = rng_range(r, 1, 4);
        shape[0] = 128 * tiles;
        shape[1] = 64 * rng_range(r, 1, 4);
        do divisors = rng_range(r, 1, tiles);
        while (tiles % divisors != 0);
        break;
    }
    case NF_CAT_FP8_ROW:
        shape[0] = rng_range(r, 1, 7);
        shape[1] = rng_range(r, 1, 300);
        break;
    case NF_CAT_GGUF:
        shape[0] = rng_range(r, 1, 4);
        shape[1] = f->block_values * rng_range(r, 1, 3);
        break;
    }
    nf_status st = nf_geometry_init(&g, l, f, rank, shape, divisors, &err);
    cr_assert_eq(st, NF_OK, "%s: %s", f->name, err.message);
    return g;
}

/* A view of rows [r, r+n) of a words struct holding all rows (pointers into the same arrays). */
static inline nf_words words_view(const nf_geometry *g, const nf_words *w, uint64_t r, uint64_t n)
{
    nf_words v = *w;
    uint64_t k = g->cols;
    v.rows = n;
    if (v.w16) v.w16 += r * k;
    if (v.w32) v.w32 += r * k;
    if (v.codes) v.codes += r * k;
    if (v.codes8) v.codes8 += r * k;
    if (v.scales) v.scales += r * (g->format && g->format->category == NF_CAT_GROUPED ? g->logical_groups : 1);
    if (v.scales8) v.scales8 += r * (k / 16);
    if (v.blocks) v.blocks += r * g->row_bytes;
    return v;
}

/* Do rows [0, n) of a equal rows [0, n) of b (all arrays of the category; divisors too when
 * with_divisors)? */
static inline bool words_equal(const nf_geometry *g, const nf_words *a, const nf_words *b, uint64_t n,
                               bool with_divisors)
{
    uint64_t k = g->cols;
    if (a->blocks) return memcmp(a->blocks, b->blocks, n * g->row_bytes) == 0;
    switch (g->format->category) {
    case NF_CAT_DIRECT:
        return g->format->word_bytes == 2 ? memcmp(a->w16, b->w16, n * k * 2) == 0
                                          : memcmp(a->w32, b->w32, n * k * 4) == 0;
    case NF_CAT_GROUPED:
        return memcmp(a->codes, b->codes, n * k) == 0 && memcmp(a->scales, b->scales, n * g->logical_groups * 2) == 0;
    case NF_CAT_NVFP4:
        return memcmp(a->codes8, b->codes8, n * k) == 0 && memcmp(a->scales8, b->scales8, n * k / 16) == 0 &&
               (!with_divisors || memcmp(a->divisors, b->divisors, g->divisors * 4) == 0);
    case NF_CAT_FP8_ROW: return memcmp(a->codes8, b->codes8, n * k) == 0 && memcmp(a->scales, b->scales, n * 2) == 0;
    case NF_CAT_GGUF: break;
    }
    return false;
}

/* ---------------------------------------------------------------- writers and readers */
/* Records every byte written and how many times. */
typedef struct cover_sink {
    uint8_t *bytes;
    uint8_t *count;
    uint64_t size;
    uint64_t bad; /* writes past the end */
} cover_sink;

static inline void cover_init(cover_sink *c, uint64_t size)
{
    c->bytes = calloc(size ? size : 1, 1);
    c->count = calloc(size ? size : 1, 1);
    c->size = size;
    c->bad = 0;
}

static inline void cover_free(cover_sink *c)
{
    free(c->bytes);
    free(c->count);
}

static inline nf_status cover_write(void *ctx, uint64_t offset, const void *buf, size_t len, nf_error *err)
{
    (void)err;
    cover_sink *c = ctx;
    if (offset > c->size || len > c->size - offset) {
        c->bad++;
        return nf_error_set(err, NF_ERR_IO, "write past the end");
    }
    memcpy(c->bytes + offset, buf, len);
    for (size_t i = 0; i < len; i++)
        if (c->count[offset + i] < 255) c->count[offset + i]++;
    return NF_OK;
}

/* Index of the first byte not written exactly once, or UINT64_MAX. */
static inline uint64_t cover_first_bad(const cover_sink *c)
{
    for (uint64_t i = 0; i < c->size; i++)
        if (c->count[i] != 1) return i;
    return UINT64_MAX;
}

/* A memory reader that counts what is read. */
typedef struct counting_source {
    nf_memory_source mem;
    nf_byte_reader inner;
    uint64_t reads, bytes, max_read;
} counting_source;

static inline nf_status counting_read(void *ctx, uint64_t offset, void *buf, size_t len, nf_error *err)
{
    counting_source *c = ctx;
    c->reads++;
    c->bytes += len;
    if (len > c->max_read) c->max_read = len;
    return c->inner.read(c->inner.ctx, offset, buf, len, err);
}

static inline void counting_reader(nf_byte_reader *r, counting_source *c, const void *data, uint64_t size)
{
    memset(c, 0, sizeof *c);
    nf_byte_reader_memory(&c->inner, &c->mem, data, size);
    r->read = counting_read;
    r->ctx = c;
}

/* Encode all of w into a fresh buffer of g->bytes (asserts success). */
static inline uint8_t *encode_all(const nf_geometry *g, const nf_words *w)
{
    nf_error err = {0};
    uint8_t *out = malloc(g->bytes ? g->bytes : 1);
    memset(out, 0xA5, g->bytes); /* anything left unwritten would show */
    nf_status st = nf_layout_encode(g, w, out, &err);
    cr_assert_eq(st, NF_OK, "encode: %s", err.message);
    return out;
}

/* ---------------------------------------------------------------- problem collector */
typedef struct problems {
    char msgs[64][512];
    int n;
} problems;

static inline void collect_problem(void *ctx, const char *msg)
{
    problems *p = ctx;
    if (p->n < 64) snprintf(p->msgs[p->n++], sizeof p->msgs[0], "%s", msg);
}

/* Run nf_layout_check over bytes; returns the problem count, messages in *p. */
static inline uint64_t check_bytes(const nf_geometry *g, const uint8_t *bytes, problems *p)
{
    nf_memory_source mem;
    nf_byte_reader rd;
    nf_error err = {0};
    uint64_t count = 0;
    memset(p, 0, sizeof *p);
    nf_byte_reader_memory(&rd, &mem, bytes, g->bytes);
    nf_status st = nf_layout_check(g, &rd, collect_problem, p, 64, &count, &err);
    cr_assert_eq(st, NF_OK, "check: %s", err.message);
    return count;
}

/* Does some collected message contain every given substring? */
static inline bool problems_have(const problems *p, const char *a, const char *b)
{
    for (int i = 0; i < p->n; i++)
        if (strstr(p->msgs[i], a) && (!b || strstr(p->msgs[i], b))) return true;
    return false;
}

static inline void problems_dump(const problems *p)
{
    for (int i = 0; i < p->n; i++) fprintf(stderr, "  problem: %s\n", p->msgs[i]);
}

#endif
