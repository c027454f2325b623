/* The signal policy of every program (see out_signals.h). */
#include "outputs/out_signals.h"

#include <pthread.h>
#include <string.h>

static const int caught[] = {SIGINT, SIGTERM, SIGHUP};
#define NCAUGHT (sizeof caught / sizeof caught[0])

/* (an int: the type of nf_convert_options.cancel; sig_atomic_t is int where we build) */
static volatile int g_cancel;

static void on_signal(int sig)
{
    (void)sig;
    g_cancel = 1;
}

void nf_sig_catch(void)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < NCAUGHT; i++)
        if (sigaction(caught[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN) sigaction(caught[i], &sa, NULL);
}

bool nf_sig_cancelled(void) { return g_cancel != 0; }

volatile int *nf_sig_flag(void) { return &g_cancel; }

void nf_sig_block(sigset_t *saved)
{
    sigset_t block;
    sigemptyset(&block);
    for (size_t i = 0; i < NCAUGHT; i++) sigaddset(&block, caught[i]);
    pthread_sigmask(SIG_BLOCK, &block, saved);
}

void nf_sig_restore(const sigset_t *saved) { pthread_sigmask(SIG_SETMASK, saved, NULL); }
