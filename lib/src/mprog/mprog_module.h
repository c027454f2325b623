/* Method programs (docs/method-programs.md): the internal interface of lib/src/mprog/.
 *   mprog_spec.c     a --method-program as the plan holds it: COMMAND split into words, the file
 *                    it runs found in PATH, the digests of its files, the provenance record
 *   mprog_proc.c     one running program: started without a shell in a process group of its own,
 *                    its pipes driven by one poll loop (the request written, the answer read, its
 *                    stderr passed through prefixed) under a deadline; killed and reaped
 *   mprog_protocol.c the frames of docs/method-programs.md 3 on top of a running program
 * The executor (convert/exec_jobs.c) starts one program per worker thread the first time that
 * worker meets a tensor of the method, and sends it every row of the tensor in order. */
#ifndef NINFER_MPROG_MODULE_H
#define NINFER_MPROG_MODULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/uio.h>

#include <jansson.h>

#include <ninfer/format.h>
#include <ninfer/layout.h>
#include <ninfer/mprog.h>

/* The most values of a program's smallest chunk (one whole row; nvfp4: a band of 128 rows): 2^26,
 * 256 MiB of binary32; a tensor whose rows need more is refused at plan time (docs/method-programs.md
 * 3.3). */
#define NF_MPROG_MAX_ROW_VALUES ((uint64_t)1 << 26)

/* ---------------------------------------------------------------- mprog_spec.c */
typedef struct nf_mprog_file {
    char *path;      /* as the record shows it: argv[0] resolved, other arguments as written */
    char sha256[65]; /* of its bytes, hex */
} nf_mprog_file;

typedef struct nf_mprog_spec {
    char *name;
    char *command; /* as given */
    char **argv;   /* the words, NULL-terminated */
    size_t argc;
    char *exe;            /* the file argv[0] names, found in PATH when it has no '/': what is executed */
    nf_mprog_file *files; /* exe, then every later word that names a regular file */
    size_t nfiles;
    char digest[65]; /* SHA-256 of the words (each as its u64 LE length and bytes), then of the lines
                        "SHA256  PATH\n" of files, in order (docs/method-programs.md 5) */
    unsigned timeout_ms;
} nf_mprog_spec;

/* Split COMMAND into words (docs/method-programs.md 2): blanks separate words; '...' keeps its
 * text as is; "..." too, where \" and \\ stand for " and \; a backslash elsewhere keeps the next
 * character.  Nothing else is special: no variable, glob or redirection.  NF_ERR_USAGE for an
 * unterminated quote or no word.  *argv is NULL-terminated; free each word and the array. */
nf_status nf_mprog_split(const char *command, char ***argv, size_t *argc, nf_error *err);
/* The program of m, ready to start: split, its executable found, its files digested.  A command
 * that cannot be split or whose executable is not found: NF_ERR_USAGE; a file that cannot be
 * read: NF_ERR_IO.  Messages begin "--method-program NAME: ". */
nf_status nf_mprog_spec_init(nf_mprog_spec *s, const nf_method_program *m, nf_error *err);
void nf_mprog_spec_free(nf_mprog_spec *s);
/* {"name", "command": [words], "files": [{"path", "sha256"}], "digest"}: provenance and --dry-run. */
json_t *nf_mprog_spec_describe(const nf_mprog_spec *s);

/* ---------------------------------------------------------------- mprog_proc.c */
typedef struct nf_mprog_proc nf_mprog_proc;
/* Polled every 100 ms while waiting on the program: true stops the wait (interrupted, or another
 * worker failed); the exchange then fails with NF_ERR_IO "interrupted". */
typedef bool (*nf_mprog_stop_fn)(void *ctx);

/* Start s (posix_spawn of s->exe with s->argv, the environment inherited, stdin and stdout pipes
 * to us, stderr a pipe that is passed through line by line to fd 2 as "NAME[PID]: line"). */
nf_status nf_mprog_proc_start(const nf_mprog_spec *s, nf_mprog_stop_fn stop, void *stop_ctx, nf_mprog_proc **out,
                              nf_error *err);
/* Start the clock: the exchanges from now on must end within the program's timeout (one answer's
 * exchanges share it). */
void nf_mprog_proc_arm(nf_mprog_proc *p);
/* Write out[0..nout) and read exactly nin bytes into in, together (neither side can block the
 * other), before the deadline nf_mprog_proc_arm set.  A program that exits, closes a pipe, or does not finish
 * in time: NF_ERR_INVALID saying which (with its exit status or signal); `what` names the
 * exchange in that message ("its answer to rows 0..31 of tensor 'x'"). */
nf_status nf_mprog_proc_exchange(nf_mprog_proc *p, const void *out, size_t nout, void *in, size_t nin, const char *what,
                                 nf_error *err);
/* One exchange of several pieces each way: out[] written in order while in[] is read in order.
 * When in[0] is full (an answer's frame header), on_head (if set) is called once: it may add the
 * rest of the answer to in[] (nin grows, at most NF_MPROG_IO_MAX), or set stop_writing (a refusal:
 * what is left of out[] is never sent), or fail, which ends the exchange with its status.  A
 * program that stops reading its input is not an error while what it answers can still be read. */
#define NF_MPROG_IO_MAX 4
typedef struct nf_mprog_io {
    struct iovec out[NF_MPROG_IO_MAX], in[NF_MPROG_IO_MAX];
    int nout, nin;
    nf_status (*on_head)(void *ctx, struct nf_mprog_io *io, nf_error *err);
    void *ctx;
    bool stop_writing;
} nf_mprog_io;
nf_status nf_mprog_proc_io(nf_mprog_proc *p, nf_mprog_io *io, const char *what, nf_error *err);
/* The program's pid and spec, for messages. */
long nf_mprog_proc_pid(const nf_mprog_proc *p);
const nf_mprog_spec *nf_mprog_proc_spec(const nf_mprog_proc *p);
/* Close its stdin and wait (the timeout) for it to exit with status 0 writing nothing more on its
 * stdout; otherwise NF_ERR_INVALID saying what it did.  The process is reaped and p freed in
 * every case (killed if it has not exited). */
nf_status nf_mprog_proc_finish(nf_mprog_proc *p, nf_error *err);
/* SIGKILL to its process group, reaped, p freed (NULL: nothing). */
void nf_mprog_proc_kill(nf_mprog_proc *p);

/* ---------------------------------------------------------------- mprog_protocol.c */
/* A started program that answered the hello (docs/method-programs.md 3.1). */
nf_status nf_mprog_start(const nf_mprog_spec *s, nf_mprog_stop_fn stop, void *stop_ctx, nf_mprog_proc **out,
                         nf_error *err);

typedef struct nf_mprog_tensor {
    const char *name; /* the source tensor's */
    const nf_format *fmt;
    uint64_t rows, cols;  /* the whole tensor (a matrix view) */
    const json_t *params; /* the rule's `with`, or NULL: {} */
    uint32_t divisor;     /* nvfp4: the tensor's divisor word (docs/formats.md), else 0 */
} nf_mprog_tensor;

/* The tensor message that starts a tensor's rows (3.2). */
nf_status nf_mprog_begin_tensor(nf_mprog_proc *p, const nf_mprog_tensor *t, nf_error *err);
/* Rows [first_row, first_row + rows) of the tensor begun last, as binary32 values (rows x cols),
 * with the importance vector (cols values) or NULL; the answer's words into out's arrays for
 * those rows (out->rows == rows), checked for length here, for legality by the caller. */
nf_status nf_mprog_encode(nf_mprog_proc *p, const nf_mprog_tensor *t, uint64_t first_row, uint64_t rows,
                          const float *values, const float *importance, nf_words *out, nf_error *err);
/* Bytes of the words of `rows` rows of cols columns of fmt in an answer (0 with *ok false on
 * overflow). */
uint64_t nf_mprog_words_bytes(const nf_format *fmt, uint64_t rows, uint64_t cols, bool *ok);

#endif
