/* Module interface of outputs: the one signal policy of every ninfer-* program (docs/security.md
 * 7.1, F12), and its only handler installer: SIGINT, SIGTERM and
 * SIGHUP set a flag instead of killing a program that writes files, so that it stops, removes its
 * temp files and publishes nothing (exit 3, "interrupted"); a signal that was ignored when the
 * program started stays ignored (nohup, a shell's background job: whoever ignored it meant it).
 * Programs that write no file (ninfer-inspect, ninfer-verify, ninfer-diff) install nothing and
 * keep the default actions, which respect an ignored signal the same way. */
#ifndef NINFER_OUTPUTS_OUT_SIGNALS_H
#define NINFER_OUTPUTS_OUT_SIGNALS_H

#include <signal.h>
#include <stdbool.h>

/* Install the handler for SIGINT, SIGTERM and SIGHUP, except over an ignored one.  No
 * SA_RESTART: a write or an open blocked on a FIFO or a pipe returns EINTR, and the loops that
 * made it see the flag. */
void nf_sig_catch(void);
/* Has one of them arrived since nf_sig_catch? */
bool nf_sig_cancelled(void);
/* The flag itself, for the library's nf_convert_options.cancel (set non-zero by the handler). */
volatile int *nf_sig_flag(void);
/* Threads a program starts between these two calls have the three signals blocked, so that they
 * reach the thread that writes (whose blocked write then returns EINTR) rather than a worker. */
void nf_sig_block(sigset_t *saved);
void nf_sig_restore(const sigset_t *saved);

#endif
