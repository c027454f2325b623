/* The messages every module writes the same way (fail.c): running out of memory and a failure at
 * a position of a text file.  One helper each, so that the wording (docs/library.md, "The error
 * contract") is decided once (issue 25, item 3). */
#ifndef NINFER_COMMON_FAIL_H
#define NINFER_COMMON_FAIL_H

#include <stdarg.h>

#include <ninfer/error.h>

/* "out of memory", status NF_ERR_NOMEM (exit 3 however many callers add context). */
nf_status nf_common_nomem(nf_error *err);

/* "<where>: out of memory" (a file, a member, a table ...), status NF_ERR_NOMEM. */
nf_status nf_common_nomem_in(nf_error *err, const char *where);

/* "<name>:<line>:<column>: <message>", status NF_ERR_INVALID: what a recipe's or another text
 * file's parser says about the place it found wrong (line and column from 1). */
nf_status nf_common_fail_at(nf_error *err, const char *name, int line, int column, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
nf_status nf_common_fail_atv(nf_error *err, const char *name, int line, int column, const char *fmt, va_list ap)
    __attribute__((format(printf, 5, 0)));

#endif
