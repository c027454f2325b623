/* The names beside an output, formed and recognised by one module (lib/src/outputs/out_names.h):
 * every name a forming function makes is recognised as exactly its kind (and, for a temp or a
 * set-aside link, as the temp of exactly the file it was made for), names of another output are
 * not recognised, and hostile names that merely look like ours are recognised as nothing. */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outputs/out_names.h"
#include "outputs/out_publish.h"

static char g_dir[64];
static char g_dest[128];

static void setup(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/nf-outputs-names-XXXXXX");
    cr_assert_not_null(mkdtemp(g_dir));
    snprintf(g_dest, sizeof g_dest, "%s/m.ninfer", g_dir);
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(outputs_names, .init = setup, .fini = teardown);

static const char *base_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static void touch(const char *path)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fclose(f);
}

/* path's base name is recognised for m.ninfer as kind (of, for a temp or set-aside name), and as
 * nothing for outputs whose names are near m.ninfer's. */
static void expect(const char *path, nf_outputs_kind kind, nf_outputs_of of)
{
    const char *name = base_of(path);
    nf_outputs_name n;
    cr_assert_eq(nf_outputs_recognise(name, "m.ninfer", &n), kind, "%s: kind %d, want %d", name,
                 (int)nf_outputs_recognise(name, "m.ninfer", NULL), (int)kind);
    cr_assert_eq(n.kind, kind, "%s", name);
    if (kind == NF_OUTPUTS_TEMP || kind == NF_OUTPUTS_ASIDE) {
        cr_assert_eq(n.of, of, "%s: of %d, want %d", name, (int)n.of, (int)of);
        cr_assert_eq(n.pid, (long)getpid(), "%s", name);
        cr_assert(n.local, "%s: made on this host", name);
    } else {
        cr_assert_eq(n.pid, 0, "%s", name);
    }
    static const char *const others[] = {"m.ninfe", "m.ninferx", "n.ninfer", "m", "x.m.ninfer"};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        cr_assert_eq(nf_outputs_recognise(name, others[i], NULL), NF_OUTPUTS_OTHER, "%s is %s's", name, others[i]);
}

/* A temp file and a set-aside link of path (which is created), both recognised as of `of`. */
static void expect_temp_and_aside(const char *path, nf_outputs_of of)
{
    char *tmp = NULL, *old = NULL;
    int fd = nf_outputs_temp(path, &tmp);
    cr_assert_geq(fd, 0, "%s", path);
    close(fd);
    expect(tmp, NF_OUTPUTS_TEMP, of);
    touch(path);
    cr_assert_eq(nf_outputs_link_aside(path, ".old", &old), 0, "%s", path);
    expect(old, NF_OUTPUTS_ASIDE, of);
    free(tmp);
    free(old);
    /* the staging link of a task (writer_stage.c) is a temp made by link */
    cr_assert_eq(nf_outputs_link_aside(path, ".tmp", &tmp), 0, "%s", path);
    expect(tmp, NF_OUTPUTS_TEMP, of);
    free(tmp);
}

Test(outputs_names, every_formed_name_is_recognised_as_its_kind)
{
    expect(g_dest, NF_OUTPUTS_ENTRY, NF_OUTPUTS_OF_ENTRY);
    expect_temp_and_aside(g_dest, NF_OUTPUTS_OF_ENTRY);

    char *part = nf_outputs_part_name(g_dest, 1);
    cr_assert_str_eq(base_of(part), "m.ninfer.part-0001");
    expect(part, NF_OUTPUTS_PART, NF_OUTPUTS_OF_ENTRY);
    expect_temp_and_aside(part, NF_OUTPUTS_OF_PART);
    char *big = nf_outputs_part_name(g_dest, 12345);
    cr_assert_str_eq(base_of(big), "m.ninfer.part-12345");
    expect(big, NF_OUTPUTS_PART, NF_OUTPUTS_OF_ENTRY);

    char *report = nf_outputs_report_name(g_dest);
    cr_assert_str_eq(base_of(report), "m.ninfer.conversion.json");
    expect(report, NF_OUTPUTS_REPORT, NF_OUTPUTS_OF_ENTRY);
    expect_temp_and_aside(report, NF_OUTPUTS_OF_REPORT);

    char *staged = nf_outputs_staged_name(g_dest);
    cr_assert_str_eq(base_of(staged), "m.ninfer.entry-staged");
    expect(staged, NF_OUTPUTS_STAGED, NF_OUTPUTS_OF_ENTRY);
    expect_temp_and_aside(staged, NF_OUTPUTS_OF_STAGED);

    char *entry_receipt = nf_outputs_receipt_name(g_dest, NULL);
    cr_assert_str_eq(base_of(entry_receipt), "m.ninfer.entry.receipt.json");
    expect(entry_receipt, NF_OUTPUTS_RECEIPT, NF_OUTPUTS_OF_ENTRY);
    expect_temp_and_aside(entry_receipt, NF_OUTPUTS_OF_ENTRY_RECEIPT);

    char *part_receipt = nf_outputs_receipt_name(g_dest, part);
    cr_assert_str_eq(base_of(part_receipt), "m.ninfer.part-0001.receipt.json");
    expect(part_receipt, NF_OUTPUTS_RECEIPT, NF_OUTPUTS_OF_ENTRY);
    expect_temp_and_aside(part_receipt, NF_OUTPUTS_OF_PART_RECEIPT);

    char *lock = nf_outputs_lock_name(g_dest);
    cr_assert_str_eq(base_of(lock), ".m.ninfer.lock");
    expect(lock, NF_OUTPUTS_LOCK, NF_OUTPUTS_OF_ENTRY);

    free(part);
    free(big);
    free(report);
    free(staged);
    free(entry_receipt);
    free(part_receipt);
    free(lock);
}

Test(outputs_names, another_hosts_names_are_recognised_as_not_local)
{
    char name[160], host[NF_OUTPUTS_HOST_MAX + 1];
    snprintf(host, sizeof host, "%s", nf_outputs_host());
    host[0] = host[0] == 'z' ? 'y' : 'z'; /* a name that is not this host's */
    snprintf(name, sizeof name, ".m.ninfer.part-0002.4242@%s.Ab12Cd.old", host);
    nf_outputs_name n;
    cr_assert_eq(nf_outputs_recognise(name, "m.ninfer", &n), NF_OUTPUTS_ASIDE, "%s", name);
    cr_assert_eq(n.of, NF_OUTPUTS_OF_PART);
    cr_assert_eq(n.pid, 4242);
    cr_assert(!n.local, "%s is another host's", name);
    /* the form of earlier versions, without a host, is this host's */
    cr_assert_eq(nf_outputs_recognise(".m.ninfer.4242.Ab12Cd.tmp", "m.ninfer", &n), NF_OUTPUTS_TEMP);
    cr_assert(n.local);
}

Test(outputs_names, look_alikes_are_nothing)
{
    static const char *const hostile[] = {
        "m.ninfer.part-001",                          /* 3 digits */
        "m.ninfer.part-",                             /* no digits */
        "m.ninfer.part-0001x",                        /* trailing text */
        "m.ninfer.part-0001.receipt.jsonx",           /* trailing text after a receipt */
        "m.ninfer.conversion.json.bak",               /* a copy of the report */
        "m.ninfer.entry-stagedx",                     /* near the staged name */
        "m.ninferx",                                  /* another output */
        "xm.ninfer",                                  /* another output */
        "m.ninfer.lock",                              /* the lock without its dot */
        ".m.ninfer.lockx",                            /* near the lock */
        ".m.ninfer.lock.1@h.abcdef.tmp",              /* the lock's "temp": never made */
        ".m.ninfer",                                  /* dotted, nothing after */
        ".m.ninfer.123@host.abcde.tmp",               /* five random characters */
        ".m.ninfer.123@host.abcdefg.tmp",             /* seven */
        ".m.ninfer.123@host.abc-ef.tmp",              /* '-' among them */
        ".m.ninfer.123@host.abcdef",                  /* no suffix */
        ".m.ninfer.123@host.abcdef.tmpx",             /* another suffix */
        ".m.ninfer.123@host.abcdef.tmp.old",          /* two suffixes */
        ".m.ninfer.123@host.abcdef.TMP",              /* case matters */
        ".m.ninfer.0@host.abcdef.tmp",                /* pid 0 */
        ".m.ninfer.-5@host.abcdef.tmp",               /* a sign */
        ".m.ninfer.12345678901@host.abcdef.tmp",      /* 11 digits */
        ".m.ninfer.123@.abcdef.tmp",                  /* an empty host */
        ".m.ninfer.123@ho.st.abcdef.tmp",             /* a dot in the host */
        ".m.ninfer.123@h_st.abcdef.tmp",              /* '_' in the host */
        ".m.ninfer.@host.abcdef.tmp",                 /* no pid */
        ".m.ninfer.conversion.json",                  /* a dotted report, no owner */
        ".m.ninfer.part-0001.receipt.json",           /* a dotted receipt, no owner */
        ".m.ninfer.part-01.123@host.abcdef.tmp",      /* a part of 2 digits */
        ".m.ninfer.receipt.json.123@host.abcdef.tmp", /* a receipt of no part */
        ".m.ninfer.entry-staged",                     /* dotted, no owner */
        ".m.ninfer2.123@host.abcdef.tmp",             /* another output's temp */
        "..m.ninfer.123@host.abcdef.tmp",             /* two dots */
        "m.ninfer.123@host.abcdef.tmp",               /* a temp without its dot */
    };
    for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
        nf_outputs_name n;
        cr_assert_eq(nf_outputs_recognise(hostile[i], "m.ninfer", &n), NF_OUTPUTS_OTHER, "'%s' recognised as %d",
                     hostile[i], (int)n.kind);
        cr_assert_eq(n.pid, 0, "%s", hostile[i]);
    }
    /* a host name longer than NF_OUTPUTS_HOST_MAX is none that names carry */
    char name[200];
    int k = snprintf(name, sizeof name, ".m.ninfer.123@");
    for (int i = 0; i <= NF_OUTPUTS_HOST_MAX; i++) name[k++] = 'h';
    snprintf(name + k, sizeof name - (size_t)k, ".abcdef.tmp");
    cr_assert_eq(nf_outputs_recognise(name, "m.ninfer", NULL), NF_OUTPUTS_OTHER, "%s", name);
}

/* What a conversion to OUT touches (the input check, convert/exec_outputs.c): its own entry, parts,
 * report, lock and temps; a scale-out task's receipts and staged entry are not a run's. */
Test(outputs_names, roles_of_a_conversion)
{
    cr_assert_str_eq(nf_outputs_role("m.ninfer", "m.ninfer", false), "the artifact");
    cr_assert_str_eq(nf_outputs_role("m.ninfer.part-0003", "m.ninfer", false), "a part name");
    cr_assert_str_eq(nf_outputs_role("m.ninfer.conversion.json", "m.ninfer", true), "the report");
    cr_assert_null(nf_outputs_role("m.ninfer.conversion.json", "m.ninfer", false));
    cr_assert_str_eq(nf_outputs_role(".m.ninfer.lock", "m.ninfer", false), "the lock file");
    static const char *const temps[] = {".m.ninfer.9@h.abcdef.tmp", ".m.ninfer.part-0001.9@h.abcdef.old",
                                        ".m.ninfer.conversion.json.9@h.abcdef.tmp"};
    for (size_t i = 0; i < sizeof temps / sizeof temps[0]; i++)
        cr_assert_str_eq(nf_outputs_role(temps[i], "m.ninfer", false), "a temp or set-aside file name", "%s", temps[i]);
    static const char *const not_a_runs[] = {"m.ninfer.entry-staged",
                                             "m.ninfer.entry.receipt.json",
                                             ".m.ninfer.entry-staged.9@h.abcdef.tmp",
                                             ".m.ninfer.part-0001.receipt.json.9@h.abcdef.tmp",
                                             ".m.ninfer.entry.receipt.json.9@h.abcdef.tmp",
                                             "m.ninfer.part-001"};
    for (size_t i = 0; i < sizeof not_a_runs / sizeof not_a_runs[0]; i++)
        cr_assert_null(nf_outputs_role(not_a_runs[i], "m.ninfer", true), "%s", not_a_runs[i]);
}
