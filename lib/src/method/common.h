/* What common.c gives the encoders of the method module besides the public calls: argument
 * checks, source element loading and error messages that name the tensor.  The inline
 * primitives every encoder shares are in method_impl.h, which common.c uses as well. */
#ifndef NINFER_METHOD_COMMON_H
#define NINFER_METHOD_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include <ninfer/method.h>

#include "method/method_impl.h"

/* Checks src (pointer, type, size fits in memory) and that out matches it in rows/cols; out's
 * arrays are checked by each encoder.  *row_elems receives cols as size_t. */
nf_status nf_method_check_rows(const nf_src_rows *src, const nf_words *out, size_t *row_elems, nf_error *err);

/* Records "tensor 'name': row R <rest>" (or "row R <rest>" without a name) and returns status.
 * rest starts with the separator it needs (" col 3: ...", " group 1: ..."). */
nf_status nf_method_row_error(nf_error *err, nf_status status, const nf_src_rows *src, uint64_t row, const char *fmt,
                              ...) __attribute__((format(printf, 5, 6)));
/* Same without a row: "tensor 'name': <message>". */
nf_status nf_method_error(nf_error *err, nf_status status, const nf_src_rows *src, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* "NaN", "+inf" or "-inf" for a non-finite binary32, for messages. */
const char *nf_method_nonfinite_name(float v);

/* Row `row` (chunk-relative) of src, columns [c0, c0 + n), widened exactly to binary32 into out.
 * Only for F32/F16/BF16 sources (the caller checked). */
void nf_method_load_f32(const nf_src_rows *src, uint64_t row, size_t c0, size_t n, float *out);

/* Same as nf_method_load_f32, inline: on little-endian hosts F32 and BF16 elements are converted
 * here (with a constant n the loops vectorize); everything else goes to nf_method_load_f32. */
NF_METHOD_INLINE void nf_method_load_f32_inline(const nf_src_rows *src, uint64_t row, size_t c0, size_t n, float *out)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (src->type == NF_SRC_F32 || src->type == NF_SRC_BF16) {
        size_t esize = src->type == NF_SRC_F32 ? 4 : 2;
        const uint8_t *p = (const uint8_t *)src->data + ((size_t)row * (size_t)src->cols + c0) * esize;
        if (esize == 4) memcpy(out, p, n * sizeof(float));
        else nf_method_bf16_words_to_f32(p, n, out);
        return;
    }
#endif
    nf_method_load_f32(src, row, c0, n, out);
}

#endif
