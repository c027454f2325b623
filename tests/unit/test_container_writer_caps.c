/* Every cap a reader enforces is checked by the writer before publishing (docs/security.md 1.3; finding
 * F11): a directory the reader would refuse (more than NF_MAX_JSON_BYTES = 64 MiB of JSON,
 * nesting deeper than NF_MAX_JSON_DEPTH, more files than NF_MAX_FILES) fails nf_writer_begin with
 * NF_ERR_INVALID naming the cap, before any file (temp, lock) is created; a directory just under
 * the byte cap is written and opens again. */
#include "test_container_util.h"

#define OK(expr)                                                         \
    do {                                                                 \
        nf_status s_ = (expr);                                           \
        cr_assert_eq(s_, NF_OK, "%s -> %d: %s", #expr, s_, err.message); \
    } while (0)

/* A writer of one 100-byte resource whose metadata holds a string of `len` bytes. */
static nf_writer *with_string(const char *path, size_t len, uint64_t max_file_bytes)
{
    nf_writer_options opt = {max_file_bytes, NULL, false, true};
    nf_writer *w = NULL;
    nf_error err;
    OK(nf_writer_create(path, &opt, &w, &err));
    size_t idx;
    OK(nf_writer_add_resource(w, "r", 100, &idx, &err));
    char *s = malloc(len + 1);
    cr_assert_not_null(s);
    memset(s, 'a', len);
    s[len] = '\0';
    OK(nf_writer_set_member(w, "metadata", json_pack("{s:s}", "big", s), &err));
    free(s);
    return w;
}

Test(writer_caps, directory_bytes)
{
    char *dir = tc_tmpdir();
    tc_path out = tc_join(dir, "m.ninfer");
    nf_error err;
    /* 70,000,000 bytes of JSON: more than the reader's 67,108,864 */
    nf_writer *w = with_string(out.s, 70000000, 0);
    cr_assert_eq(nf_writer_begin(w, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "67108864"), "the message names the cap: %s", err.message);
    cr_assert_not_null(strstr(err.message, "directory"), "%s", err.message);
    tc_assert_dir_empty(dir); /* nothing created: no temp file, no lock */
    nf_writer_free(w);
    tc_assert_dir_empty(dir);
    /* the same split into parts: still one directory, still refused */
    w = with_string(out.s, 70000000, 1 << 20);
    cr_assert_eq(nf_writer_begin(w, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "67108864"), "%s", err.message);
    nf_writer_free(w);
    tc_assert_dir_empty(dir);
    /* just under the cap: written, and the reader opens it */
    w = with_string(out.s, (64u << 20) - 8192, 0);
    OK(nf_writer_begin(w, &err));
    uint8_t data[100] = {0};
    OK(nf_writer_write(w, 0, 0, data, sizeof data, &err));
    OK(nf_writer_finish(w, &err));
    nf_writer_free(w);
    nf_artifact *a = NULL;
    OK(nf_artifact_open(out.s, NF_READ_PREAD, &a, &err));
    nf_artifact_close(a);
    tc_rmtree(dir);
    free(dir);
}

Test(writer_caps, directory_depth)
{
    char *dir = tc_tmpdir();
    tc_path out = tc_join(dir, "m.ninfer");
    nf_error err;
    nf_writer_options opt = {0, NULL, false, true};
    nf_writer *w = NULL;
    OK(nf_writer_create(out.s, &opt, &w, &err));
    size_t idx;
    OK(nf_writer_add_resource(w, "r", 100, &idx, &err));
    json_t *v = json_object();
    for (int i = 0; i < 950; i++) v = json_pack("{s:o}", "k", v);
    OK(nf_writer_set_member(w, "metadata", v, &err));
    cr_assert_eq(nf_writer_begin(w, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "900"), "the message names the cap: %s", err.message);
    nf_writer_free(w);
    tc_assert_dir_empty(dir);
    tc_rmtree(dir);
    free(dir);
}
