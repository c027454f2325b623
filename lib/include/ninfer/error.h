/* ninfer/error.h - status codes and error messages of libninfer.
 *
 * Every fallible function returns an nf_status and, when given a non-NULL nf_error, records one
 * human-readable message saying what went wrong and where (file, object, row, column, byte
 * offset).  Callers add context on the way out with nf_error_prefix(), so a message reads from
 * the outermost context inwards: "a.ninfer: object 'w.q8': row 3 group 1: scale 0x8000 is -0".
 *
 * Statuses map one to one onto the programs' exit codes (docs/decisions.md, "Exit statuses").
 */
#ifndef NINFER_ERROR_H
#define NINFER_ERROR_H

#include <ninfer/export.h>

#include <stdarg.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nf_status {
    NF_OK = 0,
    NF_ERR_INVALID = 1, /* the input is invalid: corrupt, unsupported, out of contract (exit 1) */
    NF_ERR_USAGE = 2,   /* the caller asked for something meaningless (exit 2) */
    NF_ERR_IO = 3,      /* system error: I/O, permission, missing file (exit 3) */
    NF_ERR_NOMEM = 4    /* out of memory (exit 3) */
} nf_status;

#define NF_ERROR_MESSAGE_MAX 1024

typedef struct nf_error {
    nf_status status;
    char message[NF_ERROR_MESSAGE_MAX];
} nf_error;

/* Records status and a printf-style message in err (if non-NULL); returns status. */
NF_API nf_status nf_error_set(nf_error *err, nf_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
NF_API nf_status nf_error_vset(nf_error *err, nf_status status, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
/* Records an errno-based system error: "<what>: <strerror(errnum)>", status NF_ERR_IO
 * (NF_ERR_NOMEM for ENOMEM). */
NF_API nf_status nf_error_errno(nf_error *err, int errnum, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Adds a caller's context to a callee's failure: prepends "<context>: " to the message recorded
 * in err (if non-NULL) and returns status, the callee's status, unchanged -- so that
 *     if (st != NF_OK) return nf_error_forward(err, st, "object '%s'", id);
 * keeps an I/O or out-of-memory failure what it is even when the caller passed err == NULL. */
NF_API nf_status nf_error_forward(nf_error *err, nf_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prepends "<context>: " to the recorded message (nothing when err is NULL).  It returns nothing:
 * with err NULL there is no status to return; use nf_error_forward to return one. */
NF_API void nf_error_prefix(nf_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
NF_API void nf_error_clear(nf_error *err);

/* Exit status of a program for a status: 0, 1, 2 or 3. */
NF_API int nf_status_exit_code(nf_status status);
NF_API const char *nf_status_name(nf_status status);

/* Propagate a failing status unchanged. */
#define NF_TRY(expr)                                        \
    do {                                                    \
        nf_status nf_try_status_ = (expr);                  \
        if (nf_try_status_ != NF_OK) return nf_try_status_; \
    } while (0)

/* Propagate a failing status unchanged, with the caller's context before the callee's message:
 *     NF_TRY_CTX(read_row(s, r, buf, err), err, "row %zu", r); */
#define NF_TRY_CTX(expr, err, ...)                                                                \
    do {                                                                                          \
        nf_status nf_try_status_ = (expr);                                                        \
        if (nf_try_status_ != NF_OK) return nf_error_forward((err), nf_try_status_, __VA_ARGS__); \
    } while (0)

#ifdef __cplusplus
}
#endif
#endif
