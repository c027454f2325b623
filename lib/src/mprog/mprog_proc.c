/* One running method program (mprog.h): spawned without a shell, in a process group of its own
 * (so that a shell the user wrote, and whatever it starts, is killed with it), driven through
 * non-blocking pipes by one poll loop that writes the request, reads the answer and passes its
 * standard error through at once: a program writing a large answer, or flooding stderr, never
 * blocks on us while we block on it (docs/method-programs.md 4). */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/fail.h"
#include "mprog/mprog_module.h"

extern char **environ;

/* What of a program's standard error is passed through: lines of at most LINE_MAX_BYTES (longer
 * ones are cut into pieces), at most STDERR_BUDGET bytes a program as they reach our stderr,
 * prefixes included; past that one line says the rest is dropped, and it is still read, so the
 * program never blocks on it. */
#define LINE_MAX_BYTES 1024u
#define STDERR_BUDGET ((uint64_t)1 << 20)

struct nf_mprog_proc {
    const nf_mprog_spec *spec;
    pid_t pid;
    int in, out, errfd; /* our ends: its stdin, stdout, stderr; -1 once closed */
    nf_mprog_stop_fn stop;
    void *stop_ctx;
    char line[LINE_MAX_BYTES];
    size_t line_len;
    uint64_t passed; /* stderr bytes passed through */
    bool muted;
    bool reaped;
    int status;    /* waitpid's, once reaped */
    int64_t until; /* the deadline of the exchanges since nf_mprog_proc_arm */
};


long nf_mprog_proc_pid(const nf_mprog_proc *p) { return (long)p->pid; }
const nf_mprog_spec *nf_mprog_proc_spec(const nf_mprog_proc *p) { return p->spec; }

static int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

void nf_mprog_proc_arm(nf_mprog_proc *p) { p->until = now_ms() + (int64_t)p->spec->timeout_ms; }

static void close_fd(int *fd)
{
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

/* ---------------------------------------------------------------- stderr */
static void write_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, s, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return; /* our own stderr is gone: nothing to tell */
        s += k;
        n -= (size_t)k;
    }
}

/* One line, prefixed, in one write: lines of two programs never interleave within a line. */
static void emit_line(nf_mprog_proc *p)
{
    if (p->muted) {
        p->line_len = 0;
        return;
    }
    char out[LINE_MAX_BYTES + 160];
    int k = snprintf(out, sizeof out, "%.64s[%ld]: %.*s\n", p->spec->name, (long)p->pid, (int)p->line_len, p->line);
    const size_t len = k <= 0 ? 0 : (size_t)k < sizeof out ? (size_t)k : sizeof out - 1;
    write_all(2, out, len);
    p->passed += len; /* what reaches our stderr, prefixes included */
    p->line_len = 0;
    if (p->passed >= STDERR_BUDGET) {
        k = snprintf(out, sizeof out, "%.64s[%ld]: (more than %llu bytes on standard error: the rest is dropped)\n",
                     p->spec->name, (long)p->pid, (unsigned long long)STDERR_BUDGET);
        if (k > 0) write_all(2, out, (size_t)k);
        p->muted = true;
    }
}

static void pass_stderr(nf_mprog_proc *p, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (b[i] == '\n') {
            emit_line(p);
            continue;
        }
        if (p->line_len == sizeof p->line) emit_line(p);
        p->line[p->line_len++] = b[i];
    }
}

/* Read what stderr holds now; at its end (EOF or error) the fd is closed and a partial last
 * line emitted. */
static void drain_stderr(nf_mprog_proc *p)
{
    char b[1 << 14];
    for (;;) {
        ssize_t n = read(p->errfd, b, sizeof b);
        if (n > 0) {
            pass_stderr(p, b, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        if (p->line_len) emit_line(p);
        close_fd(&p->errfd);
        return;
    }
}

/* ---------------------------------------------------------------- start */
static bool nonblocking(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

/* The program gets descriptors 0, 1 and 2 only: the library's own are close-on-exec, and this
 * closes whatever the converter's parent left open without the flag (glibc 2.34 and later). */
static bool close_others(posix_spawn_file_actions_t *fa)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    return posix_spawn_file_actions_addclosefrom_np(fa, 3) == 0;
#else
    (void)fa;
    return true;
#endif
}

nf_status nf_mprog_proc_start(const nf_mprog_spec *s, nf_mprog_stop_fn stop, void *stop_ctx, nf_mprog_proc **out,
                              nf_error *err)
{
    *out = NULL;
    nf_mprog_proc *p = calloc(1, sizeof *p);
    if (!p) return nf_common_nomem(err);
    p->spec = s;
    p->stop = stop;
    p->stop_ctx = stop_ctx;
    p->in = p->out = p->errfd = -1;
    int pin[2] = {-1, -1}, pout[2] = {-1, -1}, perr[2] = {-1, -1};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    bool fa_ok = false, at_ok = false;
    nf_status st = NF_OK;
    if (pipe2(pin, O_CLOEXEC) != 0 || pipe2(pout, O_CLOEXEC) != 0 || pipe2(perr, O_CLOEXEC) != 0) {
        st = nf_error_errno(err, errno, "method program '%s': cannot make its pipes", s->name);
        goto done;
    }
    fa_ok = posix_spawn_file_actions_init(&fa) == 0;
    at_ok = posix_spawnattr_init(&at) == 0;
    sigset_t none, deflt;
    sigemptyset(&none);
    sigemptyset(&deflt);
    sigaddset(&deflt, SIGPIPE);
    sigaddset(&deflt, SIGINT);
    sigaddset(&deflt, SIGTERM);
    sigaddset(&deflt, SIGHUP);
    sigaddset(&deflt, SIGQUIT);
    if (!fa_ok || !at_ok || posix_spawn_file_actions_adddup2(&fa, pin[0], 0) != 0 ||
        posix_spawn_file_actions_adddup2(&fa, pout[1], 1) != 0 ||
        posix_spawn_file_actions_adddup2(&fa, perr[1], 2) != 0 ||
        posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF) != 0 ||
        posix_spawnattr_setpgroup(&at, 0) != 0 || posix_spawnattr_setsigmask(&at, &none) != 0 ||
        posix_spawnattr_setsigdefault(&at, &deflt) != 0 || !close_others(&fa)) {
        st = nf_error_set(err, NF_ERR_NOMEM, "method program '%s': cannot prepare its start", s->name);
        goto done;
    }
    int e = posix_spawn(&p->pid, s->exe, &fa, &at, s->argv, environ);
    if (e != 0) {
        st = nf_error_errno(err, e, "method program '%s': cannot run %s", s->name, s->exe);
        p->pid = 0;
        goto done;
    }
#ifdef F_SETPIPE_SZ
    /* Linux: 1 MiB pipes (the default maximum) carry a chunk in a few writes, not 16 of 64 KiB
     * each with a wake-up of the other side; refused (a per-user limit), the default stays */
    fcntl(pin[1], F_SETPIPE_SZ, 1 << 20);
    fcntl(pout[0], F_SETPIPE_SZ, 1 << 20);
#endif
    p->in = pin[1], pin[1] = -1;
    p->out = pout[0], pout[0] = -1;
    p->errfd = perr[0], perr[0] = -1;
    if (!nonblocking(p->in) || !nonblocking(p->out) || !nonblocking(p->errfd))
        st = nf_error_errno(err, errno, "method program '%s': its pipes", s->name);
done:
    if (fa_ok) posix_spawn_file_actions_destroy(&fa);
    if (at_ok) posix_spawnattr_destroy(&at);
    for (int i = 0; i < 2; i++) {
        close_fd(&pin[i]);
        close_fd(&pout[i]);
        close_fd(&perr[i]);
    }
    if (st != NF_OK) {
        nf_mprog_proc_kill(p);
        return st;
    }
    *out = p;
    return NF_OK;
}

/* ---------------------------------------------------------------- end */
/* Reap it if it has exited (wait: up to ms milliseconds, still reading its stderr). */
static bool reap(nf_mprog_proc *p, int64_t ms)
{
    const int64_t until = now_ms() + ms;
    while (!p->reaped && p->pid > 0) {
        pid_t r = waitpid(p->pid, &p->status, WNOHANG);
        if (r == p->pid || (r < 0 && errno == ECHILD)) {
            p->reaped = true;
            break;
        }
        if (now_ms() >= until) break;
        if (p->errfd >= 0) {
            struct pollfd f = {p->errfd, POLLIN, 0};
            if (poll(&f, 1, 10) > 0) drain_stderr(p);
        } else {
            struct timespec t = {0, 10 * 1000 * 1000};
            nanosleep(&t, NULL);
        }
    }
    return p->reaped;
}

/* "exited with status N" / "was killed by signal N (NAME)" of a reaped program. */
static const char *how_it_ended(const nf_mprog_proc *p, char *buf, size_t size)
{
    if (!p->reaped) snprintf(buf, size, "is still running (it is killed)");
    else if (WIFEXITED(p->status)) snprintf(buf, size, "exited with status %d", WEXITSTATUS(p->status));
    else if (WIFSIGNALED(p->status))
        snprintf(buf, size, "was killed by signal %d (%s)", WTERMSIG(p->status), strsignal(WTERMSIG(p->status)));
    else snprintf(buf, size, "ended");
    return buf;
}

void nf_mprog_proc_kill(nf_mprog_proc *p)
{
    if (!p) return;
    if (p->pid > 0 && !p->reaped) {
        /* its group while the leader is not reaped (so the id cannot name another group) */
        kill(-p->pid, SIGKILL);
        kill(p->pid, SIGKILL);
        while (waitpid(p->pid, &p->status, 0) < 0 && errno == EINTR) {}
        p->reaped = true;
    }
    if (p->errfd >= 0) drain_stderr(p);
    close_fd(&p->in);
    close_fd(&p->out);
    close_fd(&p->errfd);
    free(p);
}

/* Has the program exited?  Seen without reaping it (WNOWAIT): until it is reaped its pid still
 * names its process group, which can then be killed without hitting another's. */
static bool exited(const nf_mprog_proc *p)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    return p->reaped || (waitid(P_PID, (id_t)p->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == p->pid);
}

nf_status nf_mprog_proc_finish(nf_mprog_proc *p, nf_error *err)
{
    close_fd(&p->in);
    nf_status st = NF_OK;
    const int64_t until = now_ms() + (int64_t)p->spec->timeout_ms;
    /* Wait for it to exit, reading its stdout, which must hold nothing more.  Its exit ends the
     * wait even when a child of its own still holds the pipe open (killed below). */
    for (;;) {
        const bool done = exited(p); /* (before the read: bytes written before the exit are seen) */
        if (p->errfd >= 0) drain_stderr(p);
        char extra;
        ssize_t n = p->out >= 0 ? read(p->out, &extra, 1) : -1;
        if (n > 0) {
            st = nf_error_set(err, NF_ERR_INVALID,
                              "method program '%s' (pid %ld): wrote byte 0x%02x on its standard output after its last "
                              "answer, out of protocol (docs/method-programs.md 3)",
                              p->spec->name, (long)p->pid, (unsigned)(unsigned char)extra);
            break;
        }
        if (n == 0) close_fd(&p->out);
        if (done) break;
        if (p->stop && p->stop(p->stop_ctx)) { /* interrupted, or another worker failed: no more waiting */
            st = nf_error_set(err, NF_ERR_IO, "interrupted");
            break;
        }
        int64_t left = until - now_ms();
        if (left <= 0) {
            st = nf_error_set(err, NF_ERR_INVALID,
                              "method program '%s' (pid %ld): did not exit within %u s of the end of its input",
                              p->spec->name, (long)p->pid, p->spec->timeout_ms / 1000);
            break;
        }
        struct pollfd f[2];
        nfds_t nf = 0;
        if (p->out >= 0) f[nf++] = (struct pollfd){p->out, POLLIN, 0};
        if (p->errfd >= 0) f[nf++] = (struct pollfd){p->errfd, POLLIN, 0};
        if (nf) poll(f, nf, left < 50 ? (int)left : 50);
        else nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    }
    if (st == NF_OK) {
        /* what its process group still runs goes with it, then it is reaped */
        kill(-p->pid, SIGKILL);
        while (waitpid(p->pid, &p->status, 0) < 0 && errno == EINTR) {}
        p->reaped = true;
        if (!(WIFEXITED(p->status) && WEXITSTATUS(p->status) == 0)) {
            char how[96];
            st = nf_error_set(err, NF_ERR_INVALID, "method program '%s' (pid %ld): %s at the end of its input",
                              p->spec->name, (long)p->pid, how_it_ended(p, how, sizeof how));
        }
    }
    nf_mprog_proc_kill(p);
    return st;
}

/* ---------------------------------------------------------------- exchange */
/* A program that stopped talking: reaped (briefly waited for) and described. */
static nf_status gone(nf_mprog_proc *p, const char *what, const char *event, nf_error *err)
{
    reap(p, 2000);
    if (p->errfd >= 0) drain_stderr(p);
    char how[96];
    return nf_error_set(err, NF_ERR_INVALID, "method program '%s' (pid %ld) %s before %s: it %s", p->spec->name,
                        (long)p->pid, event, what, how_it_ended(p, how, sizeof how));
}

/* write() to its stdin with SIGPIPE held back for this thread: a program that has exited gives
 * EPIPE here instead of killing us (the pending signal is taken back at once). */
static ssize_t write_nosig(int fd, const void *b, size_t n)
{
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    ssize_t k = write(fd, b, n);
    int e = errno;
    if (k < 0 && e == EPIPE) {
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR) {}
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return k;
}

/* The next segment of v[0..n) with bytes left from i on, or n: where one side stands. */
static int next_segment(const struct iovec *v, int n, int i)
{
    while (i < n && v[i].iov_len == 0) i++;
    return i;
}

/* k bytes of segment i moved; the side's new position. */
static int advance(struct iovec *v, int n, int i, size_t k)
{
    v[i].iov_base = (uint8_t *)v[i].iov_base + k;
    v[i].iov_len -= k;
    return next_segment(v, n, i);
}

nf_status nf_mprog_proc_io(nf_mprog_proc *p, nf_mprog_io *io, const char *what, nf_error *err)
{
    int oi = next_segment(io->out, io->nout, 0), ii = next_segment(io->in, io->nin, 0);
    bool head_done = !io->on_head;
    const int64_t until = p->until;
    for (;;) {
        /* the answer's first segment (its frame header) is in: the rest of the answer is known */
        if (!head_done && (ii > 0 || ii == io->nin)) {
            head_done = true;
            NF_TRY(io->on_head(io->ctx, io, err));
            ii = next_segment(io->in, io->nin, ii);
        }
        const bool writing = oi < io->nout && !io->stop_writing, reading = ii < io->nin;
        if (!writing && !reading) break;
        if (writing && p->in < 0 && !reading) return gone(p, what, "stopped reading its standard input", err);
        if (p->stop && p->stop(p->stop_ctx)) return nf_error_set(err, NF_ERR_IO, "interrupted");
        int64_t left = until - now_ms();
        if (left <= 0)
            return nf_error_set(err, NF_ERR_INVALID,
                                "method program '%s' (pid %ld): %s did not come within %u s (--method-timeout)",
                                p->spec->name, (long)p->pid, what, p->spec->timeout_ms / 1000);
        struct pollfd f[3];
        nfds_t nf = 0;
        int iw = -1, ir = -1, ie = -1;
        if (writing && p->in >= 0) {
            iw = (int)nf;
            f[nf++] = (struct pollfd){p->in, POLLOUT, 0};
        }
        if (reading) {
            if (p->out < 0) return gone(p, what, "closed its standard output", err);
            ir = (int)nf;
            f[nf++] = (struct pollfd){p->out, POLLIN, 0};
        }
        if (p->errfd >= 0) {
            ie = (int)nf;
            f[nf++] = (struct pollfd){p->errfd, POLLIN, 0};
        }
        int k = poll(f, nf, left < 100 ? (int)left : 100);
        if (k < 0 && errno != EINTR) return nf_error_errno(err, errno, "method program '%s': poll", p->spec->name);
        if (k <= 0) continue;
        if (ie >= 0 && f[ie].revents) drain_stderr(p);
        if (iw >= 0 && f[iw].revents) {
            ssize_t n = write_nosig(p->in, io->out[oi].iov_base, io->out[oi].iov_len);
            if (n > 0) {
                oi = advance(io->out, io->nout, oi, (size_t)n);
            } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
                /* it stopped reading: what it has answered (a refusal) may still explain why */
                close_fd(&p->in);
            }
        }
        if (ir >= 0 && f[ir].revents) {
            ssize_t n = read(p->out, io->in[ii].iov_base, io->in[ii].iov_len);
            if (n > 0) {
                ii = advance(io->in, io->nin, ii, (size_t)n);
            } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
                close_fd(&p->out);
                return gone(p, what, "closed its standard output", err);
            }
        }
    }
    return NF_OK;
}

nf_status nf_mprog_proc_exchange(nf_mprog_proc *p, const void *outb, size_t nout, void *inb, size_t nin,
                                 const char *what, nf_error *err)
{
    nf_mprog_io io = {.nout = 1, .nin = 1};
    io.out[0] = (struct iovec){(void *)outb, nout};
    io.in[0] = (struct iovec){inb, nin};
    return nf_mprog_proc_io(p, &io, what, err);
}
