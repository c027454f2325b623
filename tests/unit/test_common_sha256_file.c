/* nf_sha256_file (common/sha256_file.h): the digest sha256sum prints (known answers from FIPS
 * 180-4's examples, written as files), files longer than its read block, a file whose size is
 * not the one expected refused as changed, a FIFO and a directory refused, a cancel honoured. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
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

/* The planned file, unchanged: another file put at its name, or one written since, is refused;
 * the planned one is hashed and then taken from the digest cache (its identity unchanged). */
Test(sha256_file, cached_only_for_the_planned_file)
{
    char cache[300], hex[NF_SHA256_HEX + 1];
    snprintf(cache, sizeof cache, "%s/cache", dir);
    cr_assert_eq(setenv("XDG_CACHE_HOME", cache, 1), 0);
    cr_assert_eq(setenv("NINFER_DIGEST_CACHE", "1", 1), 0);
    uint64_t n = 0;
    bool hit = true;
    nf_error err;
    const char *p = put("abc", "abc", 3);
    struct stat planned;
    cr_assert_eq(stat(p, &planned), 0);
    cr_assert_eq(nf_sha256_file_cached(p, "abc", &planned, NULL, NULL, &n, hex, &hit, &err), NF_OK, "%s", err.message);
    cr_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    cr_assert_not(hit);
    cr_assert_eq(nf_sha256_file_cached(p, "abc", &planned, NULL, NULL, &n, hex, &hit, &err), NF_OK, "%s", err.message);
    cr_assert(hit, "the second time from the cache");
    cr_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    /* another file of the same size put in its place */
    char other[256];
    snprintf(other, sizeof other, "%s/other", dir);
    FILE *f = fopen(other, "wb");
    cr_assert_not_null(f);
    fwrite("abd", 1, 3, f);
    fclose(f);
    cr_assert_eq(rename(other, p), 0);
    cr_assert_eq(nf_sha256_file_cached(p, "abc", &planned, NULL, NULL, &n, hex, &hit, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "changed since the conversion was planned"), "%s", err.message);
    /* written in place since */
    cr_assert_eq(stat(p, &planned), 0);
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    f = fopen(p, "r+b");
    fwrite("x", 1, 1, f);
    fclose(f);
    cr_assert_eq(nf_sha256_file_cached(p, "abc", &planned, NULL, NULL, &n, hex, &hit, &err), NF_ERR_INVALID);
    unsetenv("XDG_CACHE_HOME");
    unsetenv("NINFER_DIGEST_CACHE");
}
