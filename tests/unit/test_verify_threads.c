/* nf_verify_artifact_with's threads: the report (verdict, counters, every problem in order) is
 * the same as nf_verify_artifact's (one thread) for every thread count, on the upstream
 * artifacts and on damaged copies with problems in several objects. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ninfer/ninfer.h>

static const char *const artifacts[] = {"container_small.ninfer", "direct.ninfer", "fp8_row.ninfer",   "gguf.ninfer",
                                        "model.ninfer",           "nvfp4.ninfer",  "row_split.ninfer", "split.ninfer",
                                        "wide_directory.ninfer"};

static void same_report(const nf_verify_report *a, const nf_verify_report *b, const char *what)
{
    cr_assert_eq(a->valid, b->valid, "%s: verdict", what);
    cr_assert_eq(a->objects_checked, b->objects_checked, "%s", what);
    cr_assert_eq(a->checksums_checked, b->checksums_checked, "%s", what);
    cr_assert_eq(a->count, b->count, "%s: %zu problems vs %zu", what, a->count, b->count);
    for (size_t i = 0; i < a->count; i++) {
        const nf_problem *p = &a->problems[i], *q = &b->problems[i];
        cr_assert((p->object == NULL) == (q->object == NULL), "%s: problem %zu object", what, i);
        if (p->object) cr_assert_str_eq(p->object, q->object, "%s: problem %zu", what, i);
        cr_assert_str_eq(p->check, q->check, "%s: problem %zu", what, i);
        cr_assert_str_eq(p->message, q->message, "%s: problem %zu", what, i);
    }
}

static size_t check_all_counts(const char *path, nf_verify_level level)
{
    nf_verify_report ref;
    nf_error err = {0};
    cr_assert_eq(nf_verify_artifact(path, level, &ref, &err), NF_OK, "%s: %s", path, err.message);
    static const unsigned counts[] = {1, 2, 3, 4, 7, 0};
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
        nf_verify_options opt = {level, counts[k]};
        nf_verify_report r;
        cr_assert_eq(nf_verify_artifact_with(path, &opt, &r, &err), NF_OK, "%s: %s", path, err.message);
        char what[600];
        snprintf(what, sizeof what, "%s level %d threads %u", path, (int)level, counts[k]);
        same_report(&ref, &r, what);
        nf_verify_report_free(&r);
    }
    size_t problems = ref.count;
    nf_verify_report_free(&ref);
    return problems;
}

Test(verify_threads, upstream_artifacts)
{
    for (size_t i = 0; i < sizeof artifacts / sizeof artifacts[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/upstream/%s", NINFER_TEST_DATA, artifacts[i]);
        for (int level = NF_VERIFY_STRUCTURE; level <= NF_VERIFY_CHECKSUMS; level++)
            check_all_counts(path, (nf_verify_level)level);
    }
}

Test(verify_threads, defaults)
{
    char path[512];
    snprintf(path, sizeof path, "%s/upstream/model.ninfer", NINFER_TEST_DATA);
    nf_verify_report a, b;
    nf_error err = {0};
    cr_assert_eq(nf_verify_artifact(path, NF_VERIFY_CHECKSUMS, &a, &err), NF_OK);
    cr_assert_eq(nf_verify_artifact_with(path, NULL, &b, &err), NF_OK);
    same_report(&a, &b, "NULL options");
    cr_assert(a.valid);
    nf_verify_report_free(&a);
    nf_verify_report_free(&b);
}

/* Damaged copies: payload bytes overwritten at several places. */
Test(verify_threads, damaged_copies)
{
    const char *names[] = {"model.ninfer", "row_split.ninfer", "fp8_row.ninfer", "nvfp4.ninfer"};
    for (size_t n = 0; n < 4; n++) {
        char src[512], dst[] = "/tmp/ninfer_verify_threads_XXXXXX";
        snprintf(src, sizeof src, "%s/upstream/%s", NINFER_TEST_DATA, names[n]);
        FILE *in = fopen(src, "rb");
        cr_assert_not_null(in);
        fseek(in, 0, SEEK_END);
        long size = ftell(in);
        fseek(in, 0, SEEK_SET);
        unsigned char *data = malloc((size_t)size);
        cr_assert_eq(fread(data, 1, (size_t)size, in), (size_t)size);
        fclose(in);
        /* the payload starts after the header and JSON directory: damage its second half, in
         * several places */
        for (int k = 0; k < 12; k++) {
            long at = size / 2 + (size / 2) * k / 12;
            for (int b = 0; b < 16 && at + b < size; b++) data[at + b] ^= (unsigned char)(0xA5 + k);
        }
        int fd = mkstemp(dst);
        cr_assert(fd >= 0);
        cr_assert_eq(write(fd, data, (size_t)size), size);
        close(fd);
        free(data);
        size_t problems = check_all_counts(dst, NF_VERIFY_CHECKSUMS);
        check_all_counts(dst, NF_VERIFY_WORDS);
        cr_log_info("%s damaged: %zu problems, identical for every thread count", names[n], problems);
        cr_assert(problems > 0, "%s: the damage went unnoticed", names[n]);
        unlink(dst);
    }
}
