/* The source's bounded cache of open shards (docs/security.md 7.1, F8: one descriptor per shard, so a
 * 600-shard checkpoint failed under `ulimit -n 64`).  With the soft limit lowered in the test
 * process the cache keeps 4 descriptors: a checkpoint of 40 shards opens, every tensor reads back
 * in any order, from several threads, and a shard replaced by another file after the open is
 * refused when it is opened again, never read. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <fcntl.h>
#include <unistd.h>

#include <ninfer/ninfer.h>

#include "support/source_writer.h"

#define NSHARDS 40

static char *g_dir;

static void setup(void)
{
    g_dir = sw_tempdir();
    /* cap = soft limit / 4 = 4 (common/fd_cache.c, nf_common_fd_cache_cap_for_process) */
    struct rlimit rl;
    cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    rl.rlim_cur = 16;
    cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
}

static void teardown(void)
{
    if (g_dir) sw_rmtree(g_dir);
    free(g_dir);
    g_dir = NULL;
}

TestSuite(source_fdcache, .init = setup, .fini = teardown);

static uint16_t values[NSHARDS][8];

static void write_shard(int i, uint16_t bias)
{
    char name[64], file[64];
    snprintf(name, sizeof name, "t.%d.weight", i);
    snprintf(file, sizeof file, "model-%05d-of-%05d.safetensors", i + 1, NSHARDS);
    for (int k = 0; k < 8; k++) values[i][k] = (uint16_t)(0x3F80 + i * 8 + k + bias);
    sw_st_tensor t[1] = {{name, "BF16", 1, {8}, values[i], sizeof values[i]}};
    sw_buf b = {0};
    sw_st_file(&b, t, 1, NULL);
    char *p = sw_path(g_dir, file);
    /* write beside and rename: a replaced shard is another inode at the same name */
    char *tmp = sw_path(g_dir, "tmp.part");
    cr_assert_eq(sw_write_file(tmp, b.data, b.len), 0);
    cr_assert_eq(rename(tmp, p), 0);
    free(tmp);
    free(p);
    sw_free(&b);
}

static nf_source *open_checkpoint(void)
{
    char index[NSHARDS * 80 + 64];
    size_t at = (size_t)snprintf(index, sizeof index, "{\"weight_map\":{");
    for (int i = 0; i < NSHARDS; i++) {
        write_shard(i, 0);
        at += (size_t)snprintf(index + at, sizeof index - at, "%s\"t.%d.weight\":\"model-%05d-of-%05d.safetensors\"",
                               i ? "," : "", i, i + 1, NSHARDS);
    }
    snprintf(index + at, sizeof index - at, "}}");
    cr_assert_eq(sw_write_text(g_dir, "model.safetensors.index.json", index), 0);
    nf_source *s = NULL;
    nf_error err = {0};
    cr_assert_eq(nf_source_open(g_dir, &s, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_source_file_count(s), NSHARDS);
    return s;
}

static void expect_tensor(nf_source *s, int i)
{
    char name[64];
    snprintf(name, sizeof name, "t.%d.weight", i);
    const nf_source_tensor *t = nf_source_find(s, name);
    cr_assert_not_null(t);
    uint16_t got[8];
    nf_error err = {0};
    cr_assert_eq(nf_source_read_bytes(s, t, 0, got, sizeof got, &err), NF_OK, "%s", err.message);
    cr_assert_arr_eq(got, values[i], sizeof got, "%s", name);
}

/* How many descriptors this process has open (0, 1, 2 and the rest). */
static int open_fds(void)
{
    int n = 0;
    for (int fd = 0; fd < 64; fd++)
        if (fcntl(fd, F_GETFD) != -1) n++;
    return n;
}

Test(source_fdcache, many_shards_read_back_with_few_descriptors)
{
    int before = open_fds();
    nf_source *s = open_checkpoint();
    cr_assert_leq(open_fds() - before, 4, "%d descriptors held", open_fds() - before);
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < NSHARDS; i++) expect_tensor(s, (i * 7 + round) % NSHARDS);
    cr_assert_leq(open_fds() - before, 4);
    nf_source_close(s);
    cr_assert_eq(open_fds(), before);
}

static void *reader(void *arg)
{
    nf_source *s = arg;
    for (int round = 0; round < 20; round++)
        for (int i = 0; i < NSHARDS; i++) {
            char name[64];
            snprintf(name, sizeof name, "t.%d.weight", (i * 13 + round) % NSHARDS);
            const nf_source_tensor *t = nf_source_find(s, name);
            uint16_t got[8];
            nf_error err = {0};
            if (!t || nf_source_read_bytes(s, t, 0, got, sizeof got, &err) != NF_OK) {
                fprintf(stderr, "reader: %s\n", err.message);
                return (void *)1;
            }
        }
    return NULL;
}

Test(source_fdcache, concurrent_reads_share_the_cache)
{
    nf_source *s = open_checkpoint();
    pthread_t th[6];
    for (int k = 0; k < 6; k++) cr_assert_eq(pthread_create(&th[k], NULL, reader, s), 0);
    for (int k = 0; k < 6; k++) {
        void *r = NULL;
        pthread_join(th[k], &r);
        cr_assert_null(r, "a reader failed");
    }
    nf_source_close(s);
}

/* The process has no descriptor to spare beyond the cache's: sixteen readers of 40 shards share the
 * four the cache holds, closing an unused one or waiting for a busy one, and none fails. */
Test(source_fdcache, readers_wait_for_a_descriptor_when_none_is_left)
{
    nf_source *s = open_checkpoint();
    int top = 0;
    for (int fd = 0; fd < 64; fd++)
        if (fcntl(fd, F_GETFD) != -1) top = fd;
    struct rlimit rl;
    cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    rl.rlim_cur = (rlim_t)top + 1; /* no descriptor number above the ones in use */
    cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
    pthread_t th[16];
    for (int k = 0; k < 16; k++) cr_assert_eq(pthread_create(&th[k], NULL, reader, s), 0);
    for (int k = 0; k < 16; k++) {
        void *r = NULL;
        pthread_join(th[k], &r);
        cr_assert_null(r, "a reader failed");
    }
    nf_source_close(s);
}

Test(source_fdcache, replaced_shard_is_refused_on_reopen)
{
    nf_source *s = open_checkpoint();
    /* shard 0 was closed long ago (39 opened after it); replace it by a file of the same size */
    write_shard(0, 1);
    const nf_source_tensor *t = nf_source_find(s, "t.0.weight");
    uint16_t got[8];
    nf_error err = {0};
    cr_assert_eq(nf_source_read_bytes(s, t, 0, got, sizeof got, &err), NF_ERR_IO);
    cr_assert(strstr(err.message, "model-00001-of-00040.safetensors") && strstr(err.message, "not the file"), "%s",
              err.message);
    /* the others still read */
    expect_tensor(s, 1);
    nf_source_close(s);
}
