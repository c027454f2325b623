/* measure.c: the measuring of words already written, for the dispatcher (dispatch.c). */
#ifndef NINFER_METHOD_MEASURE_H
#define NINFER_METHOD_MEASURE_H

#include <stddef.h>
#include <stdint.h>

#include <ninfer/method.h>

/* The error statistics of words an encoder wrote for src (measure.c): every value of src
 * against the value its words represent. */
nf_status nf_method_measure_words(const nf_format *fmt, const nf_src_rows *src, const nf_words *out, nf_errstats *st,
                                  nf_error *err);

#endif
