/* Fault injection for the program-level fault loop (tests/cli/test_faults.sh).
 *
 * Linked only into the test copy of ninfer-convert (build/tests/bin/ninfer-convert-faults,
 * built when NINFER_TESTS=ON, never installed): the installed programs, and build/bin, carry no
 * environment-triggered hook a user could trip by accident.  At start-up, before main:
 *
 *   NINFER_IO_FAULT=OP:N:ERR   fail the N-th call (1-based, from process start) of OP with ERR;
 *                              OP: open, read, write, sync, link (link and rename), unlink;
 *                              ERR: EIO, ENOSPC, EMFILE, ENOMEM, EACCES, short (a short write:
 *                              half the bytes land, then ENOSPC), SIGKILL (the process
 *                              kills itself at that call: a crash point), SIGSTOP (it stops
 *                              itself there and goes on normally once continued: a test runs
 *                              another process at exactly that point) or a decimal errno.
 *   NINFER_IO_COUNTS=FILE      at exit, write the calls made per OP to FILE, one "OP N" a line.
 *
 * A malformed NINFER_IO_FAULT aborts the program (status 125) so a typo cannot make a test pass
 * without injecting anything. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/io.h"

static const char *const OP_NAMES[NF_IO_OP_COUNT] = {"open", "read", "write", "sync", "link", "unlink"};
static const char *g_counts_path;

static void write_counts(void)
{
    FILE *f = fopen(g_counts_path, "w");
    if (!f) return;
    for (int op = 0; op < NF_IO_OP_COUNT; op++)
        fprintf(f, "%s %llu\n", OP_NAMES[op], (unsigned long long)nf_io_calls((nf_io_op)op));
    fclose(f);
}

static int parse_errno(const char *s)
{
    static const struct {
        const char *name;
        int value;
    } names[] = {{"EIO", EIO},
                 {"ENOSPC", ENOSPC},
                 {"EMFILE", EMFILE},
                 {"ENOMEM", ENOMEM},
                 {"EACCES", EACCES},
                 {"short", 0},
                 {"SIGKILL", NF_IO_FAULT_KILL},
                 {"SIGSTOP", NF_IO_FAULT_STOP}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(s, names[i].name) == 0) return names[i].value;
    char *end;
    long v = strtol(s, &end, 10);
    return *s && !*end && v > 0 && v < 4096 ? (int)v : INT_MIN;
}

static void bad_spec(const char *spec)
{
    fprintf(stderr, "fault_hook: NINFER_IO_FAULT='%s' is not OP:N:ERR\n", spec);
    exit(125);
}

__attribute__((constructor)) static void fault_hook_init(void)
{
    nf_io_fault_reset();
    const char *spec = getenv("NINFER_IO_FAULT");
    if (spec && *spec) {
        char buf[128];
        snprintf(buf, sizeof buf, "%s", spec);
        char *op = buf, *n = strchr(op, ':'), *err = n ? strchr(n + 1, ':') : NULL;
        if (!n || !err) bad_spec(spec);
        *n++ = '\0';
        *err++ = '\0';
        int which = -1;
        for (int i = 0; i < NF_IO_OP_COUNT; i++)
            if (strcmp(op, OP_NAMES[i]) == 0) which = i;
        char *end;
        unsigned long long at = strtoull(n, &end, 10);
        int e = parse_errno(err);
        if (which < 0 || !*n || *end || at == 0 || e == INT_MIN || (e == 0 && which != NF_IO_WRITE)) bad_spec(spec);
        nf_io_fault_arm((nf_io_op)which, at, e);
    }
    g_counts_path = getenv("NINFER_IO_COUNTS");
    if (g_counts_path && *g_counts_path) atexit(write_counts);
}
