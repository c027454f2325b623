/* Names made and read back beside an output (lib/src/outputs/out_names.h): temp and set-aside
 * names ".<base>.<pid>@<host>.XXXXXX<suffix>" parsed by nf_outputs_owner (what the stale finder
 * and convert's input check read), and paths shortened for messages by the I/O shim's
 * nf_io_msg_path (lib/src/common/io.h; docs/security.md 7.1, M8: the message keeps its reason;
 * cuts fall on UTF-8 character boundaries). */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/io.h"
#include "outputs/out_names.h"

Test(io_names, beside_pid_reads_what_mkstemp_beside_makes)
{
    char *path = NULL;
    char tmpl[] = "/tmp/nf-io-names-XXXXXX";
    char *dir = mkdtemp(tmpl);
    cr_assert_not_null(dir);
    char dest[256];
    snprintf(dest, sizeof dest, "%s/m.ninfer", dir);
    int fd = nf_outputs_temp(dest, &path);
    cr_assert_geq(fd, 0);
    const char *tail = strrchr(path, '/') + 1 + strlen(".m.ninfer.");
    const char *suffix = NULL;
    bool local = false;
    cr_assert_eq(nf_outputs_owner(tail, &suffix, &local), (long)getpid(), "%s", path);
    cr_assert_str_eq(suffix, ".tmp");
    cr_assert(local, "%s: made on this host", path);
    char want[128];
    snprintf(want, sizeof want, "%ld@%s.", (long)getpid(), nf_outputs_host());
    cr_assert_eq(strncmp(tail, want, strlen(want)), 0, "%s carries pid@host", path);
    close(fd);
    unlink(path);
    free(path);
    rmdir(dir);
    cr_assert_eq(nf_outputs_owner("123.AbCd12.old", &suffix, &local), 123);
    cr_assert_str_eq(suffix, ".old");
    cr_assert(local, "the form without a host is this host's");
    char other[128];
    snprintf(other, sizeof other, "77@%s-not.AbCd12.tmp", nf_outputs_host());
    cr_assert_eq(nf_outputs_owner(other, &suffix, &local), 77);
    cr_assert(!local, "another host: %s", other);
    cr_assert_str_eq(suffix, ".tmp");
    snprintf(other, sizeof other, "77@%s.AbCd12.tmp", nf_outputs_host());
    cr_assert_eq(nf_outputs_owner(other, &suffix, &local), 77);
    cr_assert(local);
    cr_assert_eq(nf_outputs_owner("12@.AbCd12.tmp", &suffix, NULL), -1, "a host name after @");
    cr_assert_eq(nf_outputs_owner("12@a_b.AbCd12.tmp", &suffix, NULL), -1, "letters, digits and - only");
    cr_assert_eq(nf_outputs_owner("12a.AbCd12.tmp", &suffix, NULL), -1, "digits only");
    cr_assert_eq(nf_outputs_owner(".AbCd12.tmp", &suffix, NULL), -1, "a pid");
    cr_assert_eq(nf_outputs_owner("0.AbCd12.tmp", &suffix, NULL), -1, "pid > 0");
    cr_assert_eq(nf_outputs_owner("12.AbC-12.tmp", &suffix, NULL), -1, "six letters and digits");
    cr_assert_eq(nf_outputs_owner("12345678901.AbCd12.tmp", &suffix, NULL), -1, "at most 10 digits");
}

/* The host part: gethostname's characters kept where they are letters, digits or '-'. */
Test(io_names, host_tag)
{
    const char *h = nf_outputs_host();
    cr_assert(strlen(h) > 0 && strlen(h) <= NF_OUTPUTS_HOST_MAX);
    char name[256] = {0};
    cr_assert_eq(gethostname(name, sizeof name - 1), 0);
    for (size_t i = 0; h[i]; i++) {
        char c = name[i];
        bool kept = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
        cr_assert_eq(h[i], kept ? c : '-', "character %zu of %s (hostname %s)", i, h, name);
    }
}

Test(io_names, msg_path)
{
    char buf[NF_IO_MSG_PATH + 1];
    cr_assert_str_eq(nf_io_msg_path("/short/path", buf), "/short/path");
    char longp[2000];
    memset(longp, 'a', sizeof longp);
    memcpy(longp + sizeof longp - 12, "/m.ninfer.x", 12); /* ends with its NUL */
    const char *m = nf_io_msg_path(longp, buf);
    cr_assert_leq(strlen(m), NF_IO_MSG_PATH);
    cr_assert_not_null(strstr(m, "..."));
    cr_assert_eq(strncmp(m, "aaaa", 4), 0, "the start is kept");
    cr_assert_str_eq(m + strlen(m) - 11, "/m.ninfer.x", "the end (the file name) is kept");
    /* two-byte characters throughout: no cut inside one */
    char u[2001];
    for (size_t i = 0; i < 2000; i += 2) {
        u[i] = (char)0xc3;
        u[i + 1] = (char)0xa9;
    }
    u[2000] = '\0';
    m = nf_io_msg_path(u, buf);
    const char *dots = strstr(m, "...");
    cr_assert_not_null(dots);
    cr_assert_eq((size_t)(dots - m) % 2, 0, "the head ends on a character boundary");
    cr_assert_eq(strlen(dots + 3) % 2, 0, "the tail starts on a character boundary");
    cr_assert_eq((unsigned char)dots[3], 0xc3);
}
