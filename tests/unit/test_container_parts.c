/* The reader's bounded cache of open parts (docs/security.md 7.1, F8: one descriptor per part made a valid
 * 341-part artifact fail under `ulimit -n 64`).  At most NF_OPEN_PARTS_MAX continuation parts
 * are open at once whatever the part count, the read mode or the number of reading threads; a
 * part closed by the cache is reopened on demand and checked again (magic, index, artifact id,
 * size, and that it is still the same file), so a part replaced while the artifact is open is
 * an error, never mixed data; and a part that is not a part at all is refused without showing
 * its bytes (M4: a symlink to /etc/passwd used to print "magic 726f6f743a783a30"). */
#include <dirent.h>
#include <pthread.h>
#include <sys/resource.h>

#include "test_container_util.h"

#define NPARTS 300u /* continuation parts: far more than the cache and the descriptor limit below */

typedef struct fixture {
    char *dir;
    tc_path entry;
    uint8_t *data;
    uint64_t total;
} fixture;

static fixture fx;

static size_t open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    cr_assert_not_null(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n - 1; /* the directory stream's own descriptor */
}

/* One resource over the payload of the entry and NPARTS parts of one page each. */
static void setup(void)
{
    fx.dir = tc_tmpdir();
    size_t nfiles = NPARTS + 1;
    fx.total = (uint64_t)nfiles * TC_PAGE;
    fx.data = malloc((size_t)fx.total);
    tc_rng r = {0x9E3779B97F4A7C15ull};
    for (uint64_t i = 0; i < fx.total; i++) fx.data[i] = (uint8_t)tc_next(&r);
    size_t cap = 256 + 64 * nfiles;
    char *json = malloc(cap);
    size_t o = (size_t)snprintf(
        json, cap,
        "{\"components\":{\"text\":{\"config\":{},\"resources\":{\"data\":\"data\"}}},"
        "\"objects\":[{\"id\":\"data\",\"encoding\":\"raw_bytes_v1\",\"offset\":0,\"bytes\":%llu,"
        "\"kind\":\"resource\"}],\"bindings\":{},\"uses\":[],\"metadata\":{},\"provenance\":{},"
        "\"files\":[{\"path\":null,\"payload_bytes\":4096}",
        (unsigned long long)fx.total);
    for (size_t i = 1; i < nfiles; i++)
        o += (size_t)snprintf(json + o, cap - o, ",{\"path\":\"m.ninfer.part-%04zu\",\"payload_bytes\":4096}", i);
    o += (size_t)snprintf(json + o, cap - o, "]}");
    uint64_t *segs = malloc(nfiles * sizeof *segs);
    for (size_t i = 0; i < nfiles; i++) segs[i] = TC_PAGE;
    uint8_t id[16] = {7, 7, 7};
    tc_frame(fx.dir, "m.ninfer", json, o, TC_PAD_SPACES, segs, nfiles, NULL, fx.data, id);
    fx.entry = tc_join(fx.dir, "m.ninfer");
    free(segs);
    free(json);
}

static void teardown(void)
{
    tc_rmtree(fx.dir);
    free(fx.dir);
    free(fx.data);
}

static nf_artifact *open_ok(nf_read_mode mode)
{
    nf_artifact *a = NULL;
    nf_error err;
    cr_assert_eq(nf_artifact_open(fx.entry.s, mode, &a, &err), NF_OK, "%s", err.message);
    return a;
}

/* Every page in a scattered order (so the cache keeps evicting), compared with the data. */
static void read_all_scattered(nf_artifact *a, size_t fd_limit)
{
    uint8_t buf[TC_PAGE + 100];
    size_t pages = NPARTS + 1;
    for (size_t k = 0; k < 3 * pages; k++) {
        uint64_t page = (uint64_t)(k * 7919 % pages);
        uint64_t off = page * TC_PAGE, len = page + 1 < pages ? TC_PAGE + 100 : TC_PAGE; /* crosses a part */
        nf_error err;
        cr_assert_eq(nf_artifact_read(a, off, buf, (size_t)len, &err), NF_OK, "page %llu: %s", (unsigned long long)page,
                     err.message);
        cr_assert_eq(memcmp(buf, fx.data + off, (size_t)len), 0, "page %llu", (unsigned long long)page);
        if (fd_limit) cr_assert_leq(open_fds(), fd_limit, "after page %llu", (unsigned long long)page);
    }
}

Test(container_parts, open_parts_stay_bounded, .init = setup, .fini = teardown)
{
    size_t before = open_fds();
    for (int m = 0; m < 2; m++) {
        nf_artifact *a = open_ok(m ? NF_READ_MMAP : NF_READ_PREAD);
        /* the entry, plus at most the cache's parts */
        read_all_scattered(a, before + 1 + NF_OPEN_PARTS_MAX);
        for (size_t i = 1; i <= NPARTS; i++) {
            nf_error err;
            cr_assert_eq(nf_artifact_open_part(a, i, &err), NF_OK, "part %zu: %s", i, err.message);
        }
        cr_assert_leq(open_fds(), before + 1 + NF_OPEN_PARTS_MAX);
        nf_artifact_close(a);
        cr_assert_eq(open_fds(), before, "close leaves nothing open");
    }
}

/* Any part count the caps allow under a small descriptor limit (the ulimit -n 64 of F8, and
 * less). */
Test(container_parts, works_under_a_small_descriptor_limit, .init = setup, .fini = teardown)
{
    struct rlimit rl;
    cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    rl.rlim_cur = 40;
    cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
    cr_assert_lt(open_fds() + 1 + NF_OPEN_PARTS_MAX, 40u, "the test needs a few free descriptors");
    nf_artifact *a = open_ok(NF_READ_PREAD);
    read_all_scattered(a, 0);
    uint8_t *all = malloc((size_t)fx.total);
    nf_error err;
    cr_assert_eq(nf_artifact_read(a, 0, all, (size_t)fx.total, &err), NF_OK, "%s", err.message);
    cr_assert_eq(memcmp(all, fx.data, (size_t)fx.total), 0);
    free(all);
    nf_artifact_close(a);
}

typedef struct reader_arg {
    nf_artifact *a;
    unsigned seed;
    int failures;
} reader_arg;

static void *reader(void *p)
{
    reader_arg *ra = p;
    uint8_t buf[3 * TC_PAGE];
    unsigned s = ra->seed;
    for (int k = 0; k < 2000; k++) {
        s = s * 1103515245u + 12345u;
        uint64_t off = (uint64_t)(s >> 4) % (fx.total - sizeof buf);
        nf_error err;
        if (nf_artifact_read(ra->a, off, buf, sizeof buf, &err) != NF_OK || memcmp(buf, fx.data + off, sizeof buf) != 0)
            ra->failures++;
    }
    return NULL;
}

/* More threads than cached parts: readers wait for a free slot, none reads through a
 * descriptor another thread closed. */
Test(container_parts, many_threads_share_the_cache, .init = setup, .fini = teardown)
{
    size_t before = open_fds();
    nf_artifact *a = open_ok(NF_READ_PREAD);
    enum { T = 3 * NF_OPEN_PARTS_MAX };
    pthread_t t[T];
    reader_arg args[T];
    for (unsigned i = 0; i < T; i++) {
        args[i] = (reader_arg){a, 17 + i, 0};
        cr_assert_eq(pthread_create(&t[i], NULL, reader, &args[i]), 0);
    }
    for (unsigned i = 0; i < T; i++) {
        pthread_join(t[i], NULL);
        cr_assert_eq(args[i].failures, 0, "thread %u", i);
    }
    cr_assert_leq(open_fds(), before + 1 + NF_OPEN_PARTS_MAX);
    nf_artifact_close(a);
}

/* Replace part 1 by the same part of another artifact (same size, same index) once the cache
 * has closed it: the reopened part is checked again. */
Test(container_parts, a_reopened_part_is_checked_again, .init = setup, .fini = teardown)
{
    nf_artifact *a = open_ok(NF_READ_PREAD);
    uint8_t buf[16];
    nf_error err;
    cr_assert_eq(nf_artifact_read(a, TC_PAGE, buf, sizeof buf, &err), NF_OK, "%s", err.message);
    tc_path part = tc_join(fx.dir, "m.ninfer.part-0001"), keep = tc_join(fx.dir, "kept");
    /* the first file stays linked, so that no new file can take its inode number */
    cr_assert_eq(link(part.s, keep.s), 0);
    size_t len;
    uint8_t *bytes = tc_read(part.s, &len);
    bytes[16] ^= 0xFF; /* another artifact id */
    tc_path tmp = tc_join(fx.dir, "other");
    tc_write(tmp.s, bytes, len);
    cr_assert_eq(rename(tmp.s, part.s), 0);
    /* evict part 1: read every other part */
    for (uint64_t p = 2; p <= NPARTS; p++) cr_assert_eq(nf_artifact_read(a, p * TC_PAGE, buf, 1, &err), NF_OK);
    cr_assert_eq(nf_artifact_read(a, TC_PAGE, buf, sizeof buf, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "m.ninfer.part-0001"), "%s", err.message);
    cr_assert_not_null(strstr(err.message, "does not belong to this entry"), "%s", err.message);
    /* the same bytes again, but a new file: replaced while the artifact was open */
    bytes[16] ^= 0xFF;
    tc_write(tmp.s, bytes, len);
    cr_assert_eq(rename(tmp.s, part.s), 0);
    for (uint64_t p = 2; p <= NPARTS; p++) cr_assert_eq(nf_artifact_read(a, p * TC_PAGE, buf, 1, &err), NF_OK);
    cr_assert_eq(nf_artifact_read(a, TC_PAGE, buf, sizeof buf, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "replaced"), "%s", err.message);
    free(bytes);
    nf_artifact_close(a);
}

/* M4: a part that is a symlink to some other file: "not a .ninfer part (bad magic)", and no
 * byte of that file in the message. */
Test(container_parts, a_foreign_file_is_not_shown, .init = setup, .fini = teardown)
{
    tc_path secret = tc_join(fx.dir, "secret");
    const char text[] = "root:x:0:0:root:/root:/bin/bash\n";
    char big[2 * TC_PAGE];
    for (size_t i = 0; i < sizeof big; i++) big[i] = text[i % (sizeof text - 1)];
    tc_write(secret.s, big, sizeof big); /* the size of a part, so only the magic can tell */
    tc_path part = tc_join(fx.dir, "m.ninfer.part-0002");
    cr_assert_eq(unlink(part.s), 0);
    cr_assert_eq(symlink(secret.s, part.s), 0);
    nf_artifact *a = open_ok(NF_READ_PREAD);
    nf_error err;
    cr_assert_eq(nf_artifact_open_part(a, 2, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "m.ninfer.part-0002: not a .ninfer part (bad magic)"), "%s", err.message);
    cr_assert_null(strstr(err.message, "726f6f74"), "%s", err.message);
    cr_assert_null(strstr(err.message, "root"), "%s", err.message);
    nf_artifact_close(a);
}
