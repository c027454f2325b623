/* nvfp4_quantize's (and nvfp4_search's) first pass (docs/methods.md, nvfp4_quantize): the
 * largest magnitude of each such object's whole matrix -- every member, every row -- and the
 * divisor word it gives, kept in the plan (plan_object.matrix_max and .divisors), so that every
 * chunk, span, scale-out task and re-derivation encodes with the same global scale.  The values
 * are read in pieces of at most PASS_VALUES (whole rows, or spans of a longer row): memory stays
 * bounded whatever the shape, and a maximum does not depend on the order it is taken in, so
 * neither --chunk-values nor the number of threads changes a word.  The budget's measuring pass
 * takes the same maximum of a tensor it may give nvfp4 (nf_convert_nvfp4_tensor_max), so that the
 * rows it samples are encoded under the global scale the conversion would use. */
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "convert/convert_impl.h"

#define PASS_VALUES ((uint64_t)1 << 16)

/* The values of rows [r0, r1) (whole rows) or of columns [c0, c0 + n) of row r0 of tensor t (through
 * q when it is quantized), as the encoding pass reads them (binary32, exact for F16 / BF16 words). */
static nf_status read_piece(const nf_source *src, const nf_source_tensor *t, const nf_qweight *q, uint64_t k,
                            uint64_t r0, uint64_t r1, uint64_t c0, uint64_t n, float *buf, nf_error *err)
{
    if (n == k) {
        size_t count = (size_t)((r1 - r0) * k);
        if (q) return nf_qweight_read_f32(src, q, r0, r1, buf, count, err);
        return nf_source_read_f32(src, t, r0, r1, buf, count, err);
    }
    if (q) return nf_qweight_read_f32_span(src, q, r0, c0, n, buf, (size_t)n, err);
    return nf_source_read_f32_span(src, t, r0, c0, n, buf, (size_t)n, err);
}

/* BF16 words read raw (whole rows): a value's binary32 word is the BF16 word << 16, so the largest
 * magnitude word is the largest (w & 0x7FFF) << 16 -- without widening every value first.  false
 * when a word is not finite (the binary32 path then names it). */
static bool bf16_max(const uint8_t *b, size_t count, uint32_t *mx)
{
    unsigned m = 0, over = 0;
    for (size_t i = 0; i < count; i++) {
        unsigned a = ((unsigned)b[2 * i] | (unsigned)b[2 * i + 1] << 8) & 0x7FFFu;
        m = a > m ? a : m;
        over |= a >= 0x7F80u; /* infinite or NaN */
    }
    if (over) return false;
    *mx = (uint32_t)m << 16 > *mx ? (uint32_t)m << 16 : *mx;
    return true;
}

static bool raw_bf16(const nf_source_tensor *t, const nf_qweight *q) { return !q && !strcmp(t->type_name, "BF16"); }

/* The largest magnitude word of the values of rows x k tensor t, joined into *mx; buf holds
 * PASS_VALUES values. */
static nf_status values_max(const nf_source *src, const nf_source_tensor *t, const nf_qweight *q, uint64_t rows,
                            uint64_t k, float *buf, uint32_t *mx, nf_error *err)
{
    const uint64_t span = k < PASS_VALUES ? k : PASS_VALUES, step = k <= PASS_VALUES ? PASS_VALUES / k : 1;
    for (uint64_t r0 = 0; r0 < rows; r0 += step) {
        uint64_t r1 = rows - r0 < step ? rows : r0 + step;
        if (span == k && raw_bf16(t, q)) { /* 2 bytes a value: the rows fit buf */
            size_t count = (size_t)((r1 - r0) * k);
            NF_TRY(nf_source_read_rows(src, t, r0, r1, buf, count * 2, err));
            if (bf16_max((const uint8_t *)buf, count, mx)) continue;
        }
        for (uint64_t c0 = 0; c0 < k; c0 += span) {
            uint64_t n = k - c0 < span ? k - c0 : span;
            NF_TRY(read_piece(src, t, q, k, r0, r1, c0, n, buf, err));
            nf_src_rows s = {.name = t->name,
                             .type = NF_SRC_F32,
                             .data = buf,
                             .first_row = r0,
                             .rows = r1 - r0,
                             .cols = n,
                             .first_col = c0,
                             .row_cols = n == k ? 0 : k};
            uint32_t w;
            NF_TRY(nf_nvfp4_quantize_max(&s, &w, err));
            *mx = w > *mx ? w : *mx;
        }
    }
    return NF_OK;
}

nf_status nf_convert_nvfp4_tensor_max(const nf_source *src, const nf_source_tensor *t, uint64_t rows, uint64_t cols,
                                      uint32_t *max_word, nf_error *err)
{
    float *buf = malloc(PASS_VALUES * sizeof *buf);
    if (!buf) return nf_common_nomem(err);
    *max_word = 0;
    nf_status st = values_max(src, t, NULL, rows, cols, buf, max_word, err);
    free(buf);
    return st;
}

/* Object o's maximum and divisor. */
static nf_status object_pass(plan_object *o, float *buf, nf_error *err)
{
    uint32_t mx = 0;
    for (size_t k = 0; k < o->nmembers; k++) {
        const plan_member *m = &o->members[k];
        NF_TRY(values_max(m->source->src, m->t, m->q, m->rows, o->g.cols, buf, &mx, err));
    }
    nf_src_rows named = {.name = o->members[0].t->name};
    if (!o->divisors && !(o->divisors = calloc(1, sizeof *o->divisors))) return nf_common_nomem(err);
    NF_TRY(nf_nvfp4_quantize_divisor(&named, mx, &o->divisors[0], err));
    o->matrix_max = mx;
    return NF_OK;
}

nf_status nf_convert_nvfp4_pass(nf_plan *p, nf_error *err)
{
    float *buf = NULL;
    nf_status st = NF_OK;
    for (size_t i = 0; st == NF_OK && i < p->nobjects; i++) {
        plan_object *o = &p->objects[i];
        /* a method program's nvfp4 tensor is given nvfp4_quantize's divisor (docs/method-programs.md 3.2) */
        bool nvfp4 = o->method == NF_METHOD_NVFP4_QUANTIZE || o->method == NF_METHOD_NVFP4_SEARCH ||
                     (o->program && o->g.format && o->g.format->category == NF_CAT_NVFP4);
        if (o->kind != NF_OBJECT_TENSOR || !nvfp4 || o->nmembers == 0) continue;
        if (!buf && !(buf = malloc(PASS_VALUES * sizeof *buf))) {
            st = nf_common_nomem(err);
            break;
        }
        st = object_pass(o, buf, err);
        if (st != NF_OK) nf_error_prefix(err, "object '%s'", o->id);
    }
    free(buf);
    return st;
}
