/* The three libgit2 functions tests/unit/criterion_start.c defines for libcriterion, with
 * libgit2's types (git2/diff.h, git2/common.h; its structures left incomplete). */
#ifndef NINFER_TEST_CRITERION_START_H
#define NINFER_TEST_CRITERION_START_H
#include <stddef.h>

struct nf_git_diff_options;
struct nf_git_diff_delta;
struct nf_git_diff_binary;
struct nf_git_diff_hunk;
struct nf_git_diff_line;
typedef int (*nf_git_file_cb)(const struct nf_git_diff_delta *, float, void *);
typedef int (*nf_git_binary_cb)(const struct nf_git_diff_delta *, const struct nf_git_diff_binary *, void *);
typedef int (*nf_git_hunk_cb)(const struct nf_git_diff_delta *, const struct nf_git_diff_hunk *, void *);
typedef int (*nf_git_line_cb)(const struct nf_git_diff_delta *, const struct nf_git_diff_hunk *,
                              const struct nf_git_diff_line *, void *);
typedef int (*nf_git_diff_buffers_fn)(const void *, size_t, const char *, const void *, size_t, const char *,
                                      const struct nf_git_diff_options *, nf_git_file_cb, nf_git_binary_cb,
                                      nf_git_hunk_cb, nf_git_line_cb, void *);
typedef int (*nf_git_count_fn)(void);

int git_libgit2_init(void);
int git_libgit2_shutdown(void);
int git_diff_buffers(const void *old_buffer, size_t old_len, const char *old_as_path, const void *new_buffer,
                     size_t new_len, const char *new_as_path, const struct nf_git_diff_options *options,
                     nf_git_file_cb file_cb, nf_git_binary_cb binary_cb, nf_git_hunk_cb hunk_cb, nf_git_line_cb line_cb,
                     void *payload);

#endif
