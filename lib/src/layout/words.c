/* Logical words (docs/layouts.md, introduction): allocation, word-level legality and reconstruction to binary32;
 * and the memory byte reader. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "format/ggml.h"
#include "layout/kernels.h"
#include "layout/layout_impl.h"

static nf_status alloc_array(void **out, uint64_t count, size_t elem, nf_error *err)
{
    uint64_t bytes;
    size_t n;
    if (!nf_mul_u64(count, elem, &bytes) || !nf_u64_to_size(count, &n))
        return nf_error_set(err, NF_ERR_NOMEM, "cannot allocate %" PRIu64 " words of %zu bytes", count, elem);
    /* calloc(0) may return NULL; one element keeps "allocated" distinguishable from "absent". */
    void *p = calloc(n ? n : 1, elem);
    if (!p) return nf_error_set(err, NF_ERR_NOMEM, "out of memory allocating %" PRIu64 " bytes of words", bytes);
    *out = p;
    return NF_OK;
}

nf_status nf_words_alloc(nf_words *w, const nf_geometry *g, uint64_t rows, nf_error *err)
{
    if (!w || !g || !g->layout) return nf_error_set(err, NF_ERR_USAGE, "nf_words_alloc: missing argument");
    memset(w, 0, sizeof *w);
    w->rows = rows;
    w->cols = g->cols;
    uint64_t cells;
    if (!nf_mul_u64(rows, g->cols, &cells))
        return nf_error_set(err, NF_ERR_NOMEM, "cannot allocate words for %" PRIu64 " rows of %" PRIu64 " columns",
                            rows, g->cols);
    nf_status st = NF_OK;
    void *p = NULL;
    if (g->layout->id == NF_LAYOUT_RAW_BYTES_V1 || g->layout->id == NF_LAYOUT_GGUF_BLOCKS_V1) {
        uint64_t bytes;
        if (!nf_mul_u64(rows, g->row_bytes, &bytes))
            return nf_error_set(err, NF_ERR_NOMEM, "cannot allocate %" PRIu64 " rows of blocks", rows);
        st = alloc_array(&p, bytes, 1, err);
        w->blocks = p;
        return st;
    }
    switch (g->format->category) {
    case NF_CAT_DIRECT:
        if (g->format->word_bytes == 2) {
            st = alloc_array(&p, cells, sizeof(uint16_t), err);
            w->w16 = p;
        } else {
            st = alloc_array(&p, cells, sizeof(uint32_t), err);
            w->w32 = p;
        }
        break;
    case NF_CAT_GROUPED: {
        uint64_t nscales;
        if (!nf_mul_u64(rows, g->logical_groups, &nscales))
            return nf_error_set(err, NF_ERR_NOMEM, "cannot allocate scales for %" PRIu64 " rows", rows);
        st = alloc_array(&p, cells, sizeof(int8_t), err);
        w->codes = p;
        if (st == NF_OK) {
            st = alloc_array(&p, nscales, sizeof(uint16_t), err);
            w->scales = p;
        }
        break;
    }
    case NF_CAT_NVFP4:
        st = alloc_array(&p, cells, 1, err);
        w->codes8 = p;
        if (st == NF_OK) {
            st = alloc_array(&p, cells / 16, 1, err);
            w->scales8 = p;
        }
        if (st == NF_OK) {
            st = alloc_array(&p, g->divisors, sizeof(uint32_t), err);
            w->divisors = p;
        }
        break;
    case NF_CAT_FP8_ROW:
        st = alloc_array(&p, cells, 1, err);
        w->codes8 = p;
        if (st == NF_OK) {
            st = alloc_array(&p, rows, sizeof(uint16_t), err);
            w->scales = p;
        }
        break;
    case NF_CAT_GGUF: break; /* handled above */
    }
    if (st != NF_OK) nf_words_free(w);
    return st;
}

void nf_words_free(nf_words *w)
{
    if (!w) return;
    free(w->w16);
    free(w->w32);
    free(w->codes);
    free(w->scales);
    free(w->codes8);
    free(w->scales8);
    free(w->divisors);
    free(w->blocks);
    memset(w, 0, sizeof *w);
}

nf_status nf_words_fit(const nf_geometry *g, const nf_words *w, uint64_t first_row, nf_error *err)
{
    if (!g || !g->layout || !w) return nf_error_set(err, NF_ERR_USAGE, "missing geometry or words");
    uint64_t end;
    if (w->cols != g->cols)
        return nf_error_set(err, NF_ERR_USAGE, "words hold %" PRIu64 " columns, the tensor has %" PRIu64, w->cols,
                            g->cols);
    if (!nf_add_u64(first_row, w->rows, &end) || end > g->rows)
        return nf_error_set(err, NF_ERR_USAGE,
                            "words rows [%" PRIu64 ",+%" PRIu64 ") are outside the tensor's %" PRIu64 " rows",
                            first_row, w->rows, g->rows);
    if (w->rows == 0) return NF_OK;
    bool ok = true;
    if (g->layout->id == NF_LAYOUT_RAW_BYTES_V1 || g->layout->id == NF_LAYOUT_GGUF_BLOCKS_V1) {
        ok = w->blocks != NULL;
    } else {
        switch (g->format->category) {
        case NF_CAT_DIRECT: ok = g->format->word_bytes == 2 ? w->w16 != NULL : w->w32 != NULL; break;
        case NF_CAT_GROUPED: ok = w->codes && w->scales; break;
        case NF_CAT_NVFP4: ok = w->codes8 && w->scales8; break;
        case NF_CAT_FP8_ROW: ok = w->codes8 && w->scales; break;
        case NF_CAT_GGUF: break;
        }
    }
    if (!ok)
        return nf_error_set(err, NF_ERR_USAGE, "words lack the arrays of a %s tensor",
                            g->format ? g->format->name : "resource");
    return NF_OK;
}

/* Short reason a binary16 word is refused as a scale, for messages. */
static const char *f16_kind(uint16_t h)
{
    if (h == 0x8000) return "-0";
    if ((h & 0x7C00) == 0x7C00) return (h & 0x03FF) ? "NaN" : "infinite";
    return (h & 0x8000) ? "negative" : "positive";
}

void nf_grouped_rules_for(const nf_format *f, nf_grouped_rules *r)
{
    r->code_min = f->code_min;
    r->code_max = f->code_max;
    /* the two words whose verdict differs between the grouped formats (format/validity.c) */
    r->neg_zero_ok = nf_grouped_scale_valid(f, 0x8000u);
    r->zero_scale_zero_codes = nf_grouped_scale_requires_zero_codes(f, 0x0000u);
}

bool nf_grouped_scales_clean(const nf_layout_kernels *kern, const nf_grouped_rules *r, const int8_t *codes,
                             const uint16_t *scales, uint64_t k, uint64_t lg, unsigned gs)
{
    unsigned s = kern->grouped_scales(r, scales, (size_t)lg);
    if (s & NF_SCALES_INVALID) return false;
    if (!(s & NF_SCALES_ZERO_RULE)) return true;
    /* rare: groups of zero values (absmax writes them with scale +0) */
    for (uint64_t gi = 0; gi < lg; gi++) {
        if (scales[gi] != 0x0000u) continue;
        uint64_t c0 = gi * gs, c1 = c0 + gs < k ? c0 + gs : k;
        if (!kern->codes_within(codes + c0, (size_t)(c1 - c0), 0, 0)) return false;
    }
    return true;
}

nf_status nf_grouped_row_check_exact(const nf_format *f, const int8_t *codes, const uint16_t *scales, uint64_t k,
                                     uint64_t lg, uint64_t row, nf_error *err)
{
    uint64_t gs = f->group_size;
    for (uint64_t gi = 0; gi < lg; gi++) {
        uint16_t s = scales[gi];
        if (!nf_grouped_scale_valid(f, s))
            return nf_error_set(err, NF_ERR_INVALID,
                                "row %" PRIu64 " group %" PRIu64 ": scale 0x%04x (%s) is not a valid %s scale", row, gi,
                                s, f16_kind(s), f->name);
        bool zero_only = nf_grouped_scale_requires_zero_codes(f, s);
        uint64_t c1 = (gi + 1) * gs < k ? (gi + 1) * gs : k;
        for (uint64_t c = gi * gs; c < c1; c++) {
            int q = codes[c];
            if (!nf_grouped_code_valid(f, q))
                return nf_error_set(err, NF_ERR_INVALID,
                                    "row %" PRIu64 " col %" PRIu64 ": code %d is not a legal %s code [%d,%d]", row, c,
                                    q, f->name, f->code_min, f->code_max);
            if (zero_only && q != 0)
                return nf_error_set(err, NF_ERR_INVALID,
                                    "row %" PRIu64 " col %" PRIu64 ": code %d under the +0 scale of group %" PRIu64
                                    " (%s requires zero codes there)",
                                    row, c, q, gi, f->name);
        }
    }
    return NF_OK;
}

/* A quick pass with the layout kernels (every code in range, every scale valid, zero codes
 * under a zero-only scale) over all the words at once, then row by row; a row that fails it
 * goes through the exact group-by-group checks, which name the first problem. */
static nf_status check_grouped(const nf_geometry *g, const nf_words *w, uint64_t first_row, nf_error *err)
{
    const nf_format *f = g->format;
    const nf_layout_kernels *kern = nf_layout_kernels_active();
    nf_grouped_rules rules;
    nf_grouped_rules_for(f, &rules);
    uint64_t k = g->cols, lg = g->logical_groups, gs = f->group_size, ncodes, nscales;
    size_t nc, ns;
    /* the words are in memory, so their counts fit a size_t; checked all the same */
    if (nf_mul_u64(w->rows, k, &ncodes) && nf_mul_u64(w->rows, lg, &nscales) && nf_u64_to_size(ncodes, &nc) &&
        nf_u64_to_size(nscales, &ns) && kern->codes_within(w->codes, nc, f->code_min, f->code_max) &&
        kern->grouped_scales(&rules, w->scales, ns) == 0)
        return NF_OK;
    for (uint64_t r = 0; r < w->rows; r++) {
        const int8_t *codes = w->codes + r * k;
        const uint16_t *scales = w->scales + r * lg;
        if (kern->codes_within(codes, (size_t)k, f->code_min, f->code_max) &&
            nf_grouped_scales_clean(kern, &rules, codes, scales, k, lg, (unsigned)gs))
            continue;
        NF_TRY(nf_grouped_row_check_exact(f, codes, scales, k, lg, first_row + r, err));
    }
    return NF_OK;
}

static nf_status check_nvfp4(const nf_geometry *g, const nf_words *w, uint64_t first_row, nf_error *err)
{
    uint64_t k = g->cols, spr = k / 16;
    for (uint64_t r = 0; r < w->rows; r++) {
        for (uint64_t c = 0; c < k; c++) {
            uint8_t v = w->codes8[r * k + c];
            if (v > 15)
                return nf_error_set(err, NF_ERR_INVALID,
                                    "row %" PRIu64 " col %" PRIu64 ": E2M1 word 0x%02x does not fit 4 bits",
                                    first_row + r, c, v);
        }
        for (uint64_t gi = 0; gi < spr; gi++) {
            uint8_t s = w->scales8[r * spr + gi];
            if (!nf_nvfp4_scale_valid(s))
                return nf_error_set(err, NF_ERR_INVALID,
                                    "row %" PRIu64 " group %" PRIu64 " (cols %" PRIu64 "..%" PRIu64
                                    "): scale 0x%02x is not a valid nvfp4 scale (%s)",
                                    first_row + r, gi, gi * 16, gi * 16 + 15, s, (s & 0x80) ? "sign set" : "NaN");
        }
    }
    if (w->divisors) {
        for (uint64_t i = 0; i < g->divisors; i++)
            if (!nf_nvfp4_divisor_valid(w->divisors[i]))
                return nf_error_set(err, NF_ERR_INVALID,
                                    "divisor %" PRIu64 ": word 0x%08" PRIx32 " is not a finite binary32 > 0", i,
                                    w->divisors[i]);
    }
    return NF_OK;
}

static nf_status check_fp8(const nf_geometry *g, const nf_words *w, uint64_t first_row, nf_error *err)
{
    const nf_format *f = g->format;
    uint64_t k = g->cols;
    for (uint64_t r = 0; r < w->rows; r++) {
        uint16_t s = w->scales[r];
        if (!nf_fp8_row_scale_valid(f, s))
            return nf_error_set(err, NF_ERR_INVALID,
                                "row %" PRIu64 ": scale 0x%04x is not a valid %s row scale (negative, -0, "
                                "infinite or NaN)",
                                first_row + r, s, f->name);
        bool zero_only = nf_fp8_row_scale_is_zero(s);
        for (uint64_t c = 0; c < k; c++) {
            uint8_t v = w->codes8[r * k + c];
            if (!nf_fp8_code_valid(v))
                return nf_error_set(err, NF_ERR_INVALID,
                                    "row %" PRIu64 " col %" PRIu64
                                    ": code 0x%02x is NaN (not a valid E4M3FN weight code)",
                                    first_row + r, c, v);
            if (zero_only && !nf_fp8_code_is_zero(v))
                return nf_error_set(err, NF_ERR_INVALID,
                                    "row %" PRIu64 " col %" PRIu64
                                    ": code 0x%02x under a +0 row scale (only 0x00/0x80 allowed)",
                                    first_row + r, c, v);
        }
    }
    return NF_OK;
}

nf_status nf_words_check(const nf_geometry *g, const nf_words *w, uint64_t first_row, nf_error *err)
{
    NF_TRY(nf_words_fit(g, w, first_row, err));
    if (!g->format) return NF_OK; /* resource bytes */
    switch (g->format->category) {
    case NF_CAT_GROUPED: return w->rows ? check_grouped(g, w, first_row, err) : NF_OK;
    case NF_CAT_NVFP4:
        if (w->rows == 0 && !w->divisors) return NF_OK;
        return check_nvfp4(g, w, first_row, err);
    case NF_CAT_FP8_ROW: return w->rows ? check_fp8(g, w, first_row, err) : NF_OK;
    case NF_CAT_DIRECT: /* every direct word is valid (docs/formats.md 4: all 2^16 / 2^32 words) */ break;
    case NF_CAT_GGUF: { /* ggml's blocks, kept byte for byte, but no NaN or infinite scale (docs/formats.md 8.1) */
        uint64_t per_row = g->cols / g->format->block_values;
        nf_ggml_bad_scale bad;
        if (nf_ggml_find_nonfinite_scale(g->format, w->blocks, 0, w->rows * per_row, &bad))
            return nf_error_set(err, NF_ERR_INVALID,
                                "row %" PRIu64 " block %" PRIu64 ": %s scale %s 0x%04x is %s, not "
                                "finite (ggml's ggml_validate_row_data refuses the block)",
                                first_row + bad.block / per_row, bad.block % per_row, nf_ggml_block_name(g->format),
                                bad.field, bad.word, nf_ggml_f16_nonfinite_name(bad.word));
        break;
    }
    }
    return NF_OK;
}

/* The nvfp4 value table of the last divisor word used by this thread (kernels.h), rebuilt when
 * the divisor or the kernel variant changes. */
typedef struct nvfp4_table_cache {
    const nf_layout_kernels *kern;
    uint32_t divisor;
    float table[NF_NVFP4_TABLE_SIZE];
} nvfp4_table_cache;

static _Thread_local nvfp4_table_cache nvfp4_cache;

const float *nf_nvfp4_table_cached(const nf_layout_kernels *kern, uint32_t divisor)
{
    nvfp4_table_cache *c = &nvfp4_cache;
    if (c->kern != kern || c->divisor != divisor) {
        kern->nvfp4_table(divisor, c->table);
        c->kern = kern;
        c->divisor = divisor;
    }
    return c->table;
}

void nf_fp8_row_f32(const nf_layout_kernels *kern, const nf_format *f, const uint8_t *codes, size_t k, uint16_t scale,
                    float *out)
{
    /* nf_fp8_row_value with the row's scale expanded once */
    float s32;
    if (f->scale_type == NF_SCALE_BF16) s32 = nf_bf16_to_f32(scale);
    else if (f->scale_type == NF_SCALE_FP16) s32 = nf_f16_to_f32(scale);
    else {
        for (size_t c = 0; c < k; c++) out[c] = nf_fp8_row_value(f, codes[c], scale);
        return;
    }
    kern->fp8_row(codes, k, s32, out);
}

void nf_rs_row_f32(const nf_layout_kernels *kern, const nf_rs_params *p, const uint8_t *base, const uint8_t *high,
                   const uint8_t *scales_le, size_t k, float *out)
{
    if (kern->rs_row_f32(p, base, high, scales_le, k, out)) return;
    /* Blocks of whole groups: a block starts on a group boundary, which is a byte boundary in
     * both planes (groups are contiguous there). */
    int8_t codes[NF_FUSED_COLS];
    uint16_t scales[NF_FUSED_COLS / 32];
    const size_t G = p->group, per = NF_FUSED_COLS / G * G;
    for (size_t c0 = 0; c0 < k; c0 += per) {
        const size_t n = k - c0 < per ? k - c0 : per, gi0 = c0 / G, ng = (n + G - 1) / G;
        kern->rs_unpack_row(p, base + gi0 * p->base_bytes, high + gi0 * p->high_bytes, n, codes);
        for (size_t gi = 0; gi < ng; gi++) scales[gi] = nf_get_le16(scales_le + 2 * (gi0 + gi));
        kern->grouped_row(codes, scales, n, p->group, out + c0);
    }
}

nf_status nf_words_to_f32(const nf_geometry *g, const nf_words *w, uint64_t first_row, float *out, nf_error *err)
{
    NF_TRY(nf_words_fit(g, w, first_row, err));
    if (!out && w->rows) return nf_error_set(err, NF_ERR_USAGE, "nf_words_to_f32: missing output");
    if (!g->format) return nf_error_set(err, NF_ERR_USAGE, "a resource has no values");
    const nf_format *f = g->format;
    const nf_layout_kernels *kern = nf_layout_kernels_active();
    /* The words are in memory, so rows * cols values fit a size_t. */
    size_t k = (size_t)g->cols, rows = (size_t)w->rows;
    switch (f->category) {
    case NF_CAT_DIRECT:
        if (f->id == NF_FMT_BF16) kern->bf16_f32(w->w16, rows * k, out);
        else if (f->id == NF_FMT_INT32) kern->int32_f32(w->w32, rows * k, out);
        else if (rows) memcpy(out, w->w32, rows * k * sizeof *out); /* the binary32 words themselves */
        return NF_OK;
    case NF_CAT_GROUPED: {
        size_t lg = (size_t)g->logical_groups;
        for (size_t r = 0; r < rows; r++)
            kern->grouped_row(w->codes + r * k, w->scales + r * lg, k, f->group_size, out + r * k);
        return NF_OK;
    }
    case NF_CAT_NVFP4: {
        if (!w->divisors && w->rows) return nf_error_set(err, NF_ERR_USAGE, "nvfp4 values need the divisor words");
        uint64_t per = g->rows / g->divisors;
        size_t spr = k / 16;
        for (size_t r = 0; r < rows; r++) {
            /* The divisor of the row's own source matrix (docs/layouts.md 5). */
            const float *table = nf_nvfp4_table_cached(kern, w->divisors[(first_row + r) / per]);
            kern->nvfp4_row(w->codes8 + r * k, w->scales8 + r * spr, k, table, out + r * k);
        }
        return NF_OK;
    }
    case NF_CAT_FP8_ROW:
        for (size_t r = 0; r < rows; r++) nf_fp8_row_f32(kern, f, w->codes8 + r * k, k, w->scales[r], out + r * k);
        return NF_OK;
    case NF_CAT_GGUF:
        for (uint64_t r = 0; r < w->rows; r++) {
            nf_status st = nf_ggml_dequant_row(f, w->blocks + r * g->row_bytes, g->cols, out + r * k, err);
            if (st != NF_OK) return nf_error_forward(err, st, "row %" PRIu64, first_row + r);
        }
        return NF_OK;
    }
    return nf_error_set(err, NF_ERR_INVALID, "format '%s' has no values", f->name);
}

static nf_status memory_read(void *ctx, uint64_t offset, void *buf, size_t len, nf_error *err)
{
    const nf_memory_source *m = ctx;
    if (offset > m->size || len > m->size - offset)
        return nf_error_set(err, NF_ERR_INVALID,
                            "read of %zu bytes at offset %" PRIu64 " is past the end of the %" PRIu64 "-byte object",
                            len, offset, m->size);
    if (len) memcpy(buf, m->data + offset, len);
    return NF_OK;
}

void nf_byte_reader_memory(nf_byte_reader *r, nf_memory_source *mem, const void *data, uint64_t size)
{
    mem->data = data;
    mem->size = size;
    r->read = memory_read;
    r->ctx = mem;
}
