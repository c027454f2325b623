/* nf_sha256_file (common/sha256_file.h): the digest sha256sum prints (known answers from FIPS
 * 180-4's examples, written as files), files longer than its read block, a file whose size is
 * not the one expected refused as changed, a FIFO and a directory refused, a cancel honoured. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/sha256_file.h"

static char dir[] = "/tmp/nf_sha256_file.XXXXXX";

static void setup(void) { cr_assert_not_null(mkdtemp(dir)); }
static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

static const char *put(const char *name, const void *data, size_t len)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(data, 1, len, f), len);
    fclose(f);
    return path;
}

TestSuite(sha256_file, .init = setup, .fini = teardown);

Test(sha256_file, known_answers)
{
    char hex[NF_SHA256_HEX + 1];
    uint64_t n = 0;
    nf_error err;
    cr_assert_eq(nf_sha256_file(put("abc", "abc", 3), "abc", 3, NULL, NULL, &n, hex, &err), NF_OK);
    cr_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    cr_assert_eq(n, 3);
    cr_assert_eq(nf_sha256_file(put("empty", "", 0), "empty", UINT64_MAX, NULL, NULL, &n, hex, &err), NF_OK);
    cr_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    /* one million 'a': several read blocks */
    size_t len = 1000000;
    char *m = malloc(len);
    memset(m, 'a', len);
    cr_assert_eq(nf_sha256_file(put("million", m, len), "million", len, NULL, NULL, &n, hex, &err), NF_OK);
    cr_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    cr_assert_eq(n, len);
    free(m);
}

Test(sha256_file, refusals)
{
    char hex[NF_SHA256_HEX + 1];
    uint64_t n = 0;
    nf_error err;
    const char *p = put("abc", "abc", 3);
    cr_assert_eq(nf_sha256_file(p, "abc", 4, NULL, NULL, &n, hex, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "it changed"), "%s", err.message);
    cr_assert_str_eq(hex, "");
    volatile int stop = 1;
    cr_assert_eq(nf_sha256_file(p, "abc", 3, &stop, NULL, &n, hex, &err), NF_ERR_IO);
    cr_assert(strstr(err.message, "interrupted"), "%s", err.message);
    stop = 0;
    volatile int cancel = 1;
    cr_assert_eq(nf_sha256_file(p, "abc", 3, &stop, &cancel, &n, hex, &err), NF_ERR_IO);
    char fifo[256];
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    cr_assert_eq(nf_sha256_file(fifo, "fifo", UINT64_MAX, NULL, NULL, &n, hex, &err), NF_ERR_INVALID);
    cr_assert_neq(nf_sha256_file(dir, "dir", UINT64_MAX, NULL, NULL, &n, hex, &err), NF_OK);
    snprintf(fifo, sizeof fifo, "%s/missing", dir);
    cr_assert_neq(nf_sha256_file(fifo, "missing", UINT64_MAX, NULL, NULL, &n, hex, &err), NF_OK);
}
