/* tests/unit/criterion_start.c: libgit2's start is put off from Criterion's start to the first
 * diff, and a diff still works. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

#include "criterion_start.h"

static nf_git_count_fn libgit2_fn(const char *name)
{
    void *sym = dlsym(RTLD_NEXT, name); /* past the executable: libgit2's own */
    nf_git_count_fn fn = NULL;
    memcpy(&fn, &sym, sizeof fn);
    cr_assert_not_null(fn, "%s is not in libgit2", name);
    return fn;
}

/* libgit2 counts its starts: a real start made by Criterion's would make this one the second */
Test(criterion_start, libgit2_not_started_by_criterion)
{
    nf_git_count_fn init = libgit2_fn("git_libgit2_init"), shutdown = libgit2_fn("git_libgit2_shutdown");
    int starts = init();
    cr_expect_eq(starts, 1, "libgit2 was started %d times: Criterion's start was not put off", starts - 1);
    (void)shutdown();
}

/* the line's origin is git_diff_line's first member (git2/diff.h): ' ', '-' or '+' */
static int count_line(const struct nf_git_diff_delta *delta, const struct nf_git_diff_hunk *hunk,
                      const struct nf_git_diff_line *line, void *payload)
{
    (void)delta, (void)hunk;
    int *counts = payload;
    char origin = *(const char *)line;
    counts[origin == '-' ? 0 : origin == '+' ? 1 : 2]++;
    return 0;
}

Test(criterion_start, diff_after_the_late_start)
{
    const char *a = "alpha\nbeta\ngamma\n", *b = "alpha\nBETA\ngamma\n";
    int counts[3] = {0};
    int rc = git_diff_buffers(a, strlen(a), "a", b, strlen(b), "b", NULL, NULL, NULL, NULL, count_line, counts);
    cr_assert_eq(rc, 0);
    cr_expect_eq(counts[0], 1, "removed lines: %d", counts[0]);
    cr_expect_eq(counts[1], 1, "added lines: %d", counts[1]);
    cr_expect_eq(counts[2], 2, "context lines: %d", counts[2]);
}
