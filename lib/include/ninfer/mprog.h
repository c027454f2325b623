/* ninfer/mprog.h - method programs, methods of the user's own (docs/method-programs.md): a program the
 * command line names, started once per encoding thread, that encodes the rows of the tensors a
 * recipe gives it over a small binary protocol on its standard input and output.
 *
 * Trust (docs/security.md 1.3): only the command line starts a program.  A recipe may name a
 * method program in `method:` only when the caller gave it (nf_recipe_options.programs); a
 * recipe, an artifact or a plan alone never makes the library start anything.  Every answer is
 * checked against the format's contract as imported words are (nf_words_check). */
#ifndef NINFER_MPROG_H
#define NINFER_MPROG_H

#include <stddef.h>

#include <ninfer/error.h>
#include <ninfer/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The protocol version a hello carries (docs/method-programs.md 3). */
#define NF_METHOD_PROGRAM_PROTOCOL 1u
/* Seconds a program may take to answer its hello or one chunk, unless the caller says otherwise
 * (--method-timeout; docs/method-programs.md 4). */
#define NF_METHOD_PROGRAM_TIMEOUT 300u

typedef struct nf_method_program {
    const char *name;    /* the method name recipes use: [A-Za-z0-9_.-]+, not a built-in method's */
    const char *command; /* COMMAND: split into words as docs/method-programs.md 2 says; no shell */
    unsigned timeout;    /* seconds per answer; 0: NF_METHOD_PROGRAM_TIMEOUT */
} nf_method_program;

/* Is name usable as a method program's name?  NF_ERR_USAGE saying why not (empty, a character
 * outside [A-Za-z0-9_.-], a built-in method's name). */
NF_API nf_status nf_method_program_check_name(const char *name, nf_error *err);

#ifdef __cplusplus
}
#endif
#endif
