/* The shared failure messages (common/fail.h). */
#include "common/fail.h"

#include <stdarg.h>
#include <stdio.h>

nf_status nf_common_nomem(nf_error *err) { return nf_error_set(err, NF_ERR_NOMEM, "out of memory"); }

nf_status nf_common_nomem_in(nf_error *err, const char *where)
{
    return nf_error_set(err, NF_ERR_NOMEM, "%s: out of memory", where);
}

nf_status nf_common_fail_atv(nf_error *err, const char *name, int line, int column, const char *fmt, va_list ap)
{
    if (!err) return NF_ERR_INVALID;
    char what[NF_ERROR_MESSAGE_MAX];
    vsnprintf(what, sizeof what, fmt, ap);
    return nf_error_set(err, NF_ERR_INVALID, "%s:%d:%d: %s", name, line, column, what);
}

nf_status nf_common_fail_at(nf_error *err, const char *name, int line, int column, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    nf_status st = nf_common_fail_atv(err, name, line, column, fmt, ap);
    va_end(ap);
    return st;
}
