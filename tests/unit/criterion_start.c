/* Linked into every unit-test executable (tests/CMakeLists.txt; tests/README.md, "Sanitized runs
 * and the cost of a run").
 *
 * Criterion runs each test in a process of its own, and each of those processes calls
 * git_libgit2_init() from criterion_initialize().  Criterion needs libgit2 for one thing only:
 * the diff it prints when a string comparison fails (git_diff_buffers).  But libgit2's start
 * parses the system's whole CA bundle (/etc/ssl/certs/ca-certificates.crt, about 140
 * certificates, for TLS the suite never opens): 4 ms a process in the plain build, 25 ms under
 * ASan (its strstr interceptor measures the rest of the bundle at every certificate) and 44 ms
 * under qemu-user, over 1285 test processes.
 *
 * These definitions take the place of libgit2's for libcriterion (the executable comes first in
 * the dynamic linker's search): the start is put off until a diff is asked for, and then made
 * once, by the real functions.  Only the three functions libcriterion imports from libgit2 are
 * defined; their types are libgit2's (git2/diff.h, git2/common.h), with its structures left
 * incomplete since they only pass through.  A Criterion that does not use libgit2 never calls
 * them. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "criterion_start.h"

/* the next definition of NAME (libgit2's), as a function pointer of SIZE bytes at FN */
static void nf_git_next(const char *name, void *fn, size_t size)
{
    void *sym = dlsym(RTLD_NEXT, name);
    memcpy(fn, &sym, size < sizeof sym ? size : sizeof sym);
}

static pthread_once_t nf_git_once = PTHREAD_ONCE_INIT;
static int nf_git_started; /* libgit2's own start was made, and succeeded */

static void nf_git_start(void)
{
    nf_git_count_fn init = NULL;
    nf_git_next("git_libgit2_init", &init, sizeof init);
    nf_git_started = init && init() > 0;
}

/* Criterion's start: libgit2's is put off (libgit2 counts starts; one is what it would say) */
int git_libgit2_init(void) { return 1; }

int git_libgit2_shutdown(void)
{
    if (!nf_git_started) return 0;
    nf_git_count_fn down = NULL;
    nf_git_next("git_libgit2_shutdown", &down, sizeof down);
    return down ? down() : 0;
}

int git_diff_buffers(const void *old_buffer, size_t old_len, const char *old_as_path, const void *new_buffer,
                     size_t new_len, const char *new_as_path, const struct nf_git_diff_options *options,
                     nf_git_file_cb file_cb, nf_git_binary_cb binary_cb, nf_git_hunk_cb hunk_cb, nf_git_line_cb line_cb,
                     void *payload)
{
    (void)pthread_once(&nf_git_once, nf_git_start);
    nf_git_diff_buffers_fn diff = NULL;
    nf_git_next("git_diff_buffers", &diff, sizeof diff);
    if (!diff) return -1; /* GIT_ERROR: Criterion then prints the two values without a diff */
    return diff(old_buffer, old_len, old_as_path, new_buffer, new_len, new_as_path, options, file_cb, binary_cb,
                hunk_cb, line_cb, payload);
}
