/* grouped.c's call for the dispatcher (dispatch.c) beside the public encoders. */
#ifndef NINFER_METHOD_GROUPED_H
#define NINFER_METHOD_GROUPED_H

#include <stddef.h>
#include <stdint.h>

#include <ninfer/method.h>

/* grouped_absmax measuring as it encodes (the SIMD kernels measure in registers; grouped.c). */
nf_status nf_grouped_absmax_rows_measured(const nf_format *fmt, const nf_src_rows *src, nf_words *out, nf_errstats *st,
                                          nf_error *err);

#endif
