/* The one signal policy of every program (lib/src/outputs/out_signals.h, docs/security.md 7.1
 * F12): the installer catches SIGINT, SIGTERM and SIGHUP, but a signal that was ignored when it
 * runs stays ignored (nohup, a shell's background job) -- the disagreement of two catchers over
 * this was the nohup bug.  Criterion runs each test in its own process, so each starts with the
 * default dispositions and a clear flag. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>

#include "outputs/out_signals.h"

static void (*disposition(int sig))(int)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    cr_assert_eq(sigaction(sig, NULL, &sa), 0);
    return sa.sa_handler;
}

static void set(int sig, void (*h)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h;
    sigemptyset(&sa.sa_mask);
    cr_assert_eq(sigaction(sig, &sa, NULL), 0);
}

Test(outputs_sigpolicy, an_ignored_signal_stays_ignored)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t ignored = 0; ignored < 3; ignored++) {
        for (size_t i = 0; i < 3; i++) set(sigs[i], i == ignored ? SIG_IGN : SIG_DFL);
        nf_sig_catch();
        for (size_t i = 0; i < 3; i++) {
            void (*h)(int) = disposition(sigs[i]);
            if (i == ignored) cr_assert_eq(h, SIG_IGN, "signal %d was ignored and must stay so", sigs[i]);
            else cr_assert(h != SIG_IGN && h != SIG_DFL, "signal %d is caught", sigs[i]);
        }
        /* installing again (ninfer-convert installs once per mode) keeps the ignored one */
        nf_sig_catch();
        cr_assert_eq(disposition(sigs[ignored]), SIG_IGN, "signal %d after a second installer", sigs[ignored]);
    }
}

Test(outputs_sigpolicy, an_ignored_signal_that_arrives_cancels_nothing)
{
    set(SIGHUP, SIG_IGN);
    nf_sig_catch();
    cr_assert_eq(raise(SIGHUP), 0);
    cr_assert(!nf_sig_cancelled(), "an ignored SIGHUP stopped the run");
    cr_assert_eq(*nf_sig_flag(), 0);
}

Test(outputs_sigpolicy, a_caught_signal_sets_the_cancel_flag)
{
    nf_sig_catch();
    cr_assert(!nf_sig_cancelled());
    cr_assert_eq(raise(SIGTERM), 0); /* the process lives on: the handler only sets the flag */
    cr_assert(nf_sig_cancelled());
    cr_assert_neq(*nf_sig_flag(), 0, "the flag the library's nf_convert_options.cancel reads");
}

Test(outputs_sigpolicy, workers_have_the_three_signals_blocked)
{
    sigset_t saved, now;
    nf_sig_block(&saved);
    cr_assert_eq(pthread_sigmask(SIG_BLOCK, NULL, &now), 0);
    cr_assert(sigismember(&now, SIGINT) && sigismember(&now, SIGTERM) && sigismember(&now, SIGHUP));
    nf_sig_restore(&saved);
    cr_assert_eq(pthread_sigmask(SIG_BLOCK, NULL, &now), 0);
    cr_assert(!sigismember(&now, SIGINT) && !sigismember(&now, SIGTERM) && !sigismember(&now, SIGHUP));
}
