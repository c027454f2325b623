/* Error recording: one message per failure, context prepended on the way out. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <ninfer/error.h>

nf_status nf_error_vset(nf_error *err, nf_status status, const char *fmt, va_list ap)
{
    if (err) {
        err->status = status;
        vsnprintf(err->message, sizeof err->message, fmt, ap);
    }
    return status;
}

nf_status nf_error_set(nf_error *err, nf_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    nf_error_vset(err, status, fmt, ap);
    va_end(ap);
    return status;
}

nf_status nf_error_errno(nf_error *err, int errnum, const char *fmt, ...)
{
    nf_status status = errnum == ENOMEM ? NF_ERR_NOMEM : NF_ERR_IO;
    if (!err) return status;
    char what[NF_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return nf_error_set(err, status, "%s: %s", what, strerror(errnum));
}

/* "<context>: <message>" in err, cut at the end when too long: the outer context is kept whole,
 * as it says where the failure was met. */
__attribute__((format(printf, 2, 0))) static void prefix_message(nf_error *err, const char *fmt, va_list ap)
{
    char out[NF_ERROR_MESSAGE_MAX];
    int n = vsnprintf(out, sizeof out, fmt, ap);
    size_t used = n < 0 ? 0 : (size_t)n >= sizeof out ? sizeof out - 1 : (size_t)n;
    size_t room = sizeof out - 1 - used;
    const char *sep = ": ";
    size_t sep_len = room < 2 ? room : 2;
    memcpy(out + used, sep, sep_len);
    used += sep_len;
    room -= sep_len;
    size_t old_len = strnlen(err->message, sizeof err->message);
    if (old_len > room) old_len = room;
    memcpy(out + used, err->message, old_len);
    out[used + old_len] = '\0';
    memcpy(err->message, out, sizeof out);
}

void nf_error_prefix(nf_error *err, const char *fmt, ...)
{
    if (!err) return;
    va_list ap;
    va_start(ap, fmt);
    prefix_message(err, fmt, ap);
    va_end(ap);
}

nf_status nf_error_forward(nf_error *err, nf_status status, const char *fmt, ...)
{
    if (!err || status == NF_OK) return status;
    va_list ap;
    va_start(ap, fmt);
    prefix_message(err, fmt, ap);
    va_end(ap);
    err->status = status;
    return status;
}

void nf_error_clear(nf_error *err)
{
    if (err) {
        err->status = NF_OK;
        err->message[0] = '\0';
    }
}

int nf_status_exit_code(nf_status status)
{
    switch (status) {
    case NF_OK: return 0;
    case NF_ERR_INVALID: return 1;
    case NF_ERR_USAGE: return 2;
    case NF_ERR_IO:
    case NF_ERR_NOMEM: return 3;
    }
    return 3;
}

const char *nf_status_name(nf_status status)
{
    switch (status) {
    case NF_OK: return "ok";
    case NF_ERR_INVALID: return "invalid input";
    case NF_ERR_USAGE: return "usage error";
    case NF_ERR_IO: return "system error";
    case NF_ERR_NOMEM: return "out of memory";
    }
    return "unknown status";
}
