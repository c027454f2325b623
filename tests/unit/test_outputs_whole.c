/* A whole file put in place at once (lib/src/outputs/out_whole.h): the report, the scale-out plan
 * and the receipts.  Complete or not there: every failure (temp file, write, sync, rename)
 * leaves the old file as it was and no temp file beside it; a destination that is not a regular
 * file is never replaced. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ninfer/ninfer.h>

#include "common/io.h"
#include "outputs/out_whole.h"

#include "support/source_writer.h"

static char *dir;

static void setup(void)
{
    dir = sw_tempdir();
    nf_io_fault_reset();
}

static void teardown(void)
{
    nf_io_fault_reset();
    sw_rmtree(dir);
    free(dir);
}

TestSuite(whole, .init = setup, .fini = teardown);

static char *path_in(const char *name)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", dir, name);
    return buf;
}

static size_t entries(void)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static void put_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

static void expect_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s is missing", path);
    char buf[256] = {0};
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    cr_assert_eq(n, strlen(text));
    cr_assert_str_eq(buf, text);
}

Test(whole, writes_new_and_replaces_regular_with_mode_0644)
{
    char *p = strdup(path_in("receipt.json"));
    nf_error err = {0};
    cr_assert_eq(nf_outputs_put_whole(p, "{\"a\":1}\n", 8, &err), NF_OK, "%s", err.message);
    expect_file(p, "{\"a\":1}\n");
    cr_assert_eq(nf_outputs_put_whole(p, "{}\n", 3, &err), NF_OK, "%s", err.message);
    expect_file(p, "{}\n");
    struct stat sb;
    cr_assert_eq(stat(p, &sb), 0);
    cr_assert_eq(sb.st_mode & 0777, 0644);
    cr_assert_eq(entries(), 1, "a temp file was left beside it");
    free(p);
}

/* A fill that writes "piece0 piece1 ... piece{n-1}\n" in small puts. */
static bool fill_pieces(void *ctx, nf_io_out *out)
{
    int n = *(int *)ctx;
    char buf[32];
    for (int i = 0; i < n; i++) {
        int len = snprintf(buf, sizeof buf, "%spiece%d", i ? " " : "", i);
        nf_io_out_put(out, buf, (size_t)len);
    }
    nf_io_out_put(out, "\n", 1);
    return true;
}

static bool fill_nomem(void *ctx, nf_io_out *out)
{
    (void)ctx;
    nf_io_out_put(out, "half", 4);
    return false;
}

Test(whole, write_temp_streams_through_a_small_buffer_and_leaves_the_destination_alone)
{
    char *p = strdup(path_in("plan.json"));
    put_file(p, "old\n");
    int n = 3;
    char *tmp = NULL;
    nf_error err = {0};
    /* a buffer of 4 bytes: every piece but the shortest crosses it */
    cr_assert_eq(nf_outputs_write_temp(p, 4, fill_pieces, &n, &tmp, &err), NF_OK, "%s", err.message);
    cr_assert_not_null(tmp);
    expect_file(p, "old\n");
    expect_file(tmp, "piece0 piece1 piece2\n");
    cr_assert_eq(entries(), 2);
    cr_assert_eq(nf_outputs_put_temp(p, tmp, &err), NF_OK, "%s", err.message);
    expect_file(p, "piece0 piece1 piece2\n");
    cr_assert_eq(entries(), 1);
    free(p);
}

Test(whole, out_of_memory_in_the_fill_leaves_nothing)
{
    char *p = strdup(path_in("plan.json"));
    put_file(p, "old\n");
    char *tmp = (char *)"unchanged";
    nf_error err = {0};
    cr_assert_eq(nf_outputs_write_temp(p, 64, fill_nomem, NULL, &tmp, &err), NF_ERR_NOMEM);
    cr_assert_null(tmp);
    expect_file(p, "old\n");
    cr_assert_eq(entries(), 1);
    free(p);
}

Test(whole, refuses_a_destination_that_is_not_a_regular_file)
{
    char *d = strdup(path_in("a-directory"));
    cr_assert_eq(mkdir(d, 0755), 0);
    char *l = strdup(path_in("a-link"));
    char *target = strdup(path_in("target"));
    put_file(target, "target\n");
    cr_assert_eq(symlink(target, l), 0);
    char *f = strdup(path_in("a-fifo"));
    cr_assert_eq(mkfifo(f, 0644), 0);
    const char *const paths[] = {d, l, f};
    for (size_t i = 0; i < 3; i++) {
        nf_error err = {0};
        cr_assert_eq(nf_outputs_put_whole(paths[i], "x\n", 2, &err), NF_ERR_USAGE, "%s", paths[i]);
        cr_assert(strstr(err.message, "not a regular file"), "%s", err.message);
        struct stat sb;
        cr_assert_eq(lstat(paths[i], &sb), 0);
    }
    struct stat sb;
    cr_assert_eq(lstat(l, &sb), 0);
    cr_assert(S_ISLNK(sb.st_mode), "the link was replaced");
    expect_file(target, "target\n");
    cr_assert_eq(entries(), 4, "a temp file was left");
    free(d);
    free(l);
    free(target);
    free(f);
}

/* Each fault point of the write: the temp file's creation, a write, the sync, the rename. */
Test(whole, every_failure_keeps_the_old_file_and_leaves_no_temp)
{
    struct {
        nf_io_op op;
        int errnum;
        const char *says;
    } faults[] = {
        {NF_IO_OPEN, EACCES, "cannot create a temp file"},
        {NF_IO_WRITE, ENOSPC, "cannot write"},
        {NF_IO_WRITE, 0, "cannot write"}, /* a short write */
        {NF_IO_SYNC, EIO, "cannot write"},
        {NF_IO_LINK, EXDEV, "cannot put in place"},
    };
    char *p = strdup(path_in("receipt.json"));
    for (size_t i = 0; i < sizeof faults / sizeof *faults; i++) {
        put_file(p, "old\n");
        nf_io_fault_arm(faults[i].op, 1, faults[i].errnum);
        nf_error err = {0};
        nf_status st = nf_outputs_put_whole(p, "new text\n", 9, &err);
        nf_io_fault_reset();
        cr_assert_neq(st, NF_OK, "fault %zu: not reported", i);
        cr_assert(strstr(err.message, faults[i].says), "fault %zu: %s", i, err.message);
        cr_assert(strstr(err.message, "receipt.json"), "fault %zu: the file is not named: %s", i, err.message);
        expect_file(p, "old\n");
        cr_assert_eq(entries(), 1, "fault %zu: a temp file was left", i);
    }
    free(p);
}
