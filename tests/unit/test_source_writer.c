/* tests/unit/support/source_writer.c: the helpers the unit tests build their scratch trees with. */
#define _DEFAULT_SOURCE
#include <criterion/criterion.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/source_writer.h"

/* a scratch tree of directories, files and a symbolic link is removed whole, and the link's
 * target, outside the tree, is left as it was */
Test(source_writer, rmtree_removes_nested_directories_not_link_targets)
{
    char *outside = sw_tempdir(), *dir = sw_tempdir();
    cr_assert(outside && dir);
    cr_assert_eq(sw_write_text(outside, "keep.txt", "kept"), 0);
    char *sub = sw_path(dir, "out"), *deep = sw_path(sub, "ck"), *link = sw_path(dir, "to-outside");
    cr_assert_eq(mkdir(sub, 0700), 0);
    cr_assert_eq(mkdir(deep, 0700), 0);
    cr_assert_eq(sw_write_text(deep, "model.safetensors", "x"), 0);
    cr_assert_eq(sw_write_text(dir, "top.txt", "y"), 0);
    cr_assert_eq(symlink(outside, link), 0);

    sw_rmtree(dir);
    struct stat st;
    cr_expect_neq(lstat(dir, &st), 0, "%s is still there", dir);
    char *kept = sw_path(outside, "keep.txt");
    cr_expect_eq(stat(kept, &st), 0, "the link's target lost %s", kept);

    sw_rmtree(outside);
    free(kept), free(link), free(deep), free(sub), free(dir), free(outside);
}
