/* nf_stale_find (ninfer/outputs.h): what killed runs left beside an output, found by the names
 * the writer gives its files -- temp files of the entry, its parts and its report, files set
 * aside by an overwriting run, parts whose entry was never published -- and never a file of a
 * live process, a name of another output, or something that is not a regular file. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ninfer/ninfer.h>

#include "outputs/out_names.h"

#include "support/source_writer.h"

static char *dir;

static void setup(void) { dir = sw_tempdir(); }

static void teardown(void)
{
    sw_rmtree(dir);
    free(dir);
}

TestSuite(stale, .init = setup, .fini = teardown);

/* A pid that was a process of this host and is gone. */
static long dead_pid(void)
{
    pid_t p = fork();
    cr_assert_geq(p, 0);
    if (p == 0) _exit(0);
    int status;
    cr_assert_eq(waitpid(p, &status, 0), p);
    return (long)p;
}

static void touch(const char *name)
{
    char *path = sw_path(dir, name);
    cr_assert_eq(sw_write_file(path, "x", 1), 0, "%s", path);
    free(path);
}

/* The kind of the listed file whose name is `name`, or -1. */
static int kind_of(const nf_stale *s, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        const char *slash = strrchr(s[i].path, '/');
        if (strcmp(slash ? slash + 1 : s[i].path, name) == 0) return (int)s[i].kind;
    }
    return -1;
}

Test(stale, finds_what_a_killed_conversion_left)
{
    long pid = dead_pid();
    char tmp[128], part_tmp[128], report_tmp[128], old[128], dirlike[128];
    snprintf(tmp, sizeof tmp, ".m.ninfer.%ld@%s.abcDEF.tmp", pid, nf_outputs_host());
    snprintf(part_tmp, sizeof part_tmp, ".m.ninfer.part-0001.%ld.a1b2c3.tmp", pid);
    snprintf(report_tmp, sizeof report_tmp, ".m.ninfer.conversion.json.%ld.Zz09aa.tmp", pid);
    snprintf(old, sizeof old, ".m.ninfer.part-0002.%ld@%s.qwerty.old", pid, nf_outputs_host());
    snprintf(dirlike, sizeof dirlike, ".m.ninfer.%ld.dirdir.tmp", pid);
    touch(tmp);
    touch(part_tmp);
    touch(report_tmp);
    touch(old);
    touch("m.ninfer.part-0003");         /* a part without its entry */
    touch(".other.ninfer.1.abcdef.tmp"); /* another output's */
    touch(".m.ninfer.12x.abcdef.tmp");   /* not a pid */
    char receipt_tmp[160], entry_receipt_tmp[160], staged_link[160];
    snprintf(receipt_tmp, sizeof receipt_tmp, ".m.ninfer.part-0004.receipt.json.%ld@%s.Rc0001.tmp", pid,
             nf_outputs_host());
    snprintf(entry_receipt_tmp, sizeof entry_receipt_tmp, ".m.ninfer.entry.receipt.json.%ld@%s.Rc0002.tmp", pid,
             nf_outputs_host());
    snprintf(staged_link, sizeof staged_link, ".m.ninfer.entry-staged.%ld@%s.StG001.tmp", pid, nf_outputs_host());
    touch(receipt_tmp); /* a scale-out task's receipts (docs/scale-out.md) */
    touch(entry_receipt_tmp);
    touch(staged_link); /* an assembler's own link of the staged entry (docs/scale-out.md) */
    char *d = sw_path(dir, dirlike);
    cr_assert_eq(mkdir(d, 0700), 0); /* named like a temp file, but a directory */
    free(d);
    char *dest = sw_path(dir, "m.ninfer");
    nf_stale *s = NULL;
    size_t n = 0;
    nf_error err;
    cr_assert_eq(nf_stale_find(dest, true, &s, &n, &err), NF_OK, "%s", err.message);
    cr_assert_eq(n, 8, "%zu files listed", n);
    cr_assert_eq(kind_of(s, n, staged_link), NF_STALE_TEMP);
    cr_assert_eq(kind_of(s, n, tmp), NF_STALE_TEMP);
    cr_assert_eq(kind_of(s, n, receipt_tmp), NF_STALE_TEMP);
    cr_assert_eq(kind_of(s, n, entry_receipt_tmp), NF_STALE_TEMP);
    cr_assert_eq(kind_of(s, n, part_tmp), NF_STALE_TEMP);
    cr_assert_eq(kind_of(s, n, report_tmp), NF_STALE_TEMP);
    cr_assert_eq(kind_of(s, n, old), NF_STALE_BACKUP);
    cr_assert_eq(kind_of(s, n, "m.ninfer.part-0003"), NF_STALE_ORPHAN_PART);
    for (size_t i = 0; i < n; i++) {
        if (s[i].kind != NF_STALE_ORPHAN_PART) cr_assert_eq(s[i].pid, pid);
        if (s[i].kind != NF_STALE_BACKUP) {
            cr_assert_null(s[i].original);
            continue;
        }
        /* set aside from the part, not the entry */
        char *want = sw_path(dir, "m.ninfer.part-0002");
        cr_assert_str_eq(s[i].original, want);
        cr_assert(!s[i].entry);
        free(want);
    }
    nf_stale_free(s, n);
    /* a set-aside entry: its original is dest */
    char entry_old[160];
    snprintf(entry_old, sizeof entry_old, ".m.ninfer.%ld@%s.EnTrY1.old", pid, nf_outputs_host());
    touch(entry_old);
    cr_assert_eq(nf_stale_find(dest, true, &s, &n, &err), NF_OK, "%s", err.message);
    bool seen = false;
    for (size_t i = 0; i < n; i++)
        if (s[i].kind == NF_STALE_BACKUP && s[i].entry) {
            cr_assert_str_eq(s[i].original, dest);
            seen = true;
        }
    cr_assert(seen, "the set-aside entry is listed as one");
    nf_stale_free(s, n);
    char *eo = sw_path(dir, entry_old);
    unlink(eo);
    free(eo);
    /* a single-file output: only its own temp files */
    cr_assert_eq(nf_stale_find(dest, false, &s, &n, &err), NF_OK, "%s", err.message);
    cr_assert_eq(n, 1);
    cr_assert_eq(kind_of(s, n, tmp), NF_STALE_TEMP);
    nf_stale_free(s, n);
    free(dest);
}

Test(stale, files_of_a_live_process_are_never_listed)
{
    char live[128];
    snprintf(live, sizeof live, ".m.ninfer.%ld.abcdef.tmp", (long)getpid());
    touch(live);
    touch("m.ninfer.part-0001"); /* a live run is publishing: not an orphan */
    char *dest = sw_path(dir, "m.ninfer");
    nf_stale *s = NULL;
    size_t n = 0;
    nf_error err;
    cr_assert_eq(nf_stale_find(dest, true, &s, &n, &err), NF_OK, "%s", err.message);
    cr_assert_eq(n, 0, "%zu files listed", n);
    nf_stale_free(s, n);
    free(dest);
}

/* A filesystem several hosts share: the files of another host's processes are never listed,
 * whatever their pid means here, and keep the parts of its publication from being orphans. */
Test(stale, files_of_another_host_are_never_listed)
{
    long pid = dead_pid();
    char foreign[192], mine[192];
    snprintf(foreign, sizeof foreign, ".m.ninfer.part-0001.%ld@%s-x.abcdef.tmp", pid, nf_outputs_host());
    snprintf(mine, sizeof mine, ".m.ninfer.%ld@%s.abcdef.tmp", pid, nf_outputs_host());
    touch(foreign);
    touch("m.ninfer.part-0002"); /* another host may be publishing: not an orphan */
    char *dest = sw_path(dir, "m.ninfer");
    nf_stale *s = NULL;
    size_t n = 0;
    nf_error err;
    cr_assert_eq(nf_stale_find(dest, true, &s, &n, &err), NF_OK, "%s", err.message);
    cr_assert_eq(n, 0, "%zu files listed", n);
    nf_stale_free(s, n);
    /* the same dead pid on this host: stale (the other host's file still is not) */
    touch(mine);
    cr_assert_eq(nf_stale_find(dest, true, &s, &n, &err), NF_OK, "%s", err.message);
    cr_assert_eq(n, 1, "%zu files listed", n);
    cr_assert_eq(kind_of(s, n, mine), NF_STALE_TEMP);
    nf_stale_free(s, n);
    free(dest);
}
