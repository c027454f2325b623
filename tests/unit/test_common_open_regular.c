/* Opening a regular file to read (lib/src/common/open_regular.h), today's policy: a regular file
 * and a symbolic link to one open; a FIFO (also behind a link) is refused at once with the
 * caller's status, never waited for; a directory is "Is a directory" (exit 3); a missing file
 * keeps errno for the caller's wording; every message names the file as the caller shows it.
 * Also the words the messages use for what a path is (nf_io_kind_name, common/io.h). */
#define _DEFAULT_SOURCE /* S_IFBLK */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/io.h"
#include "common/open_regular.h"

static char g_dir[] = "/tmp/nf_open_regular_XXXXXX";
static char *path_of(const char *name)
{
    static char buf[4][256];
    static int k;
    char *p = buf[k++ % 4];
    snprintf(p, 256, "%s/%s", g_dir, name);
    return p;
}

static void setup(void)
{
    cr_assert_not_null(mkdtemp(g_dir));
    FILE *f = fopen(path_of("plain"), "w");
    cr_assert_not_null(f);
    fputs("12345", f);
    fclose(f);
    cr_assert_eq(mkfifo(path_of("fifo"), 0600), 0);
    cr_assert_eq(mkdir(path_of("dir"), 0700), 0);
    cr_assert_eq(symlink(path_of("plain"), path_of("to_plain")), 0);
    cr_assert_eq(symlink(path_of("fifo"), path_of("to_fifo")), 0);
}

static void teardown(void)
{
    const char *names[] = {"plain", "fifo", "to_plain", "to_fifo"};
    for (size_t i = 0; i < 4; i++) unlink(path_of(names[i]));
    rmdir(path_of("dir"));
    rmdir(g_dir);
}

TestSuite(common_open_regular, .init = setup, .fini = teardown, .timeout = 20);

Test(common_open_regular, a_regular_file_and_a_link_to_one_open)
{
    const char *names[] = {"plain", "to_plain"};
    for (size_t i = 0; i < 2; i++) {
        int fd = -2;
        struct stat sb;
        nf_error err;
        cr_assert_eq(nf_common_open_regular(path_of(names[i]), "x", NF_ERR_INVALID, &fd, &sb, &err), NF_OK);
        cr_assert_geq(fd, 0);
        cr_assert_eq(sb.st_size, 5);
        char c;
        cr_assert_eq(read(fd, &c, 1), 1, "a blocking-safe read of a regular file");
        close(fd);
    }
}

Test(common_open_regular, a_fifo_is_refused_without_waiting_with_the_callers_status)
{
    const char *names[] = {"fifo", "to_fifo"};
    const nf_status statuses[] = {NF_ERR_INVALID, NF_ERR_IO};
    for (size_t i = 0; i < 2; i++)
        for (size_t k = 0; k < 2; k++) {
            int fd = -2;
            struct stat sb;
            nf_error err;
            cr_assert_eq(nf_common_open_regular(path_of(names[i]), "shown.bin", statuses[k], &fd, &sb, &err),
                         statuses[k]);
            cr_assert_eq(fd, -1);
            cr_assert_str_eq(err.message, "shown.bin: not a regular file");
            cr_assert_eq(nf_common_open_regular(path_of(names[i]), "shown.bin", statuses[k], &fd, &sb, NULL),
                         statuses[k], "err may be NULL");
        }
}

Test(common_open_regular, a_directory_and_a_missing_file)
{
    int fd = -2;
    struct stat sb;
    nf_error err;
    cr_assert_eq(nf_common_open_regular(path_of("dir"), "d", NF_ERR_INVALID, &fd, &sb, &err), NF_ERR_IO);
    cr_assert_eq(fd, -1);
    cr_assert_str_eq(err.message, "d: Is a directory");
    errno = 0;
    cr_assert_eq(nf_common_open_regular(path_of("none"), "none.json", NF_ERR_INVALID, &fd, &sb, &err), NF_ERR_IO);
    cr_assert_eq(errno, ENOENT, "errno kept for the caller");
    cr_assert_eq(fd, -1);
    cr_assert_str_eq(err.message, "none.json: cannot open: No such file or directory");
}

/* What a refusal says a path is ("X is a directory, not a regular file"), for every kind of file
 * lstat can meet: these are made here (a socket bound in the test's directory, /dev/null). */
Test(common_open_regular, every_kind_of_file_has_its_name)
{
    static const struct {
        const char *name, *kind;
    } want[] = {
        {"plain", "a regular file"}, {"to_plain", "a symbolic link"}, {"fifo", "a FIFO"}, {"dir", "a directory"},
        {"sock", "a socket"},
    };
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    cr_assert_geq(fd, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path_of("sock"));
    cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0, "%s", strerror(errno));
    struct stat sb;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        cr_assert_eq(lstat(path_of(want[i].name), &sb), 0);
        cr_assert_str_eq(nf_io_kind_name(sb.st_mode), want[i].kind, "%s", want[i].name);
    }
    close(fd);
    unlink(path_of("sock"));
    cr_assert_eq(stat("/dev/null", &sb), 0);
    cr_assert_str_eq(nf_io_kind_name(sb.st_mode), "a character device");
    cr_assert_str_eq(nf_io_kind_name(S_IFBLK | 0600), "a block device");
    cr_assert_str_eq(nf_io_kind_name(0), "a special file"); /* no file type bits */
}
