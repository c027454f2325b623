/* nf_writer_patch_text (docs/library.md, "Writing"): a placeholder laid out in a member is
 * replaced by a string of its length between begin and publish; the directory's layout is the
 * same and its checksum is taken after, so the artifact verifies and holds the value; a
 * placeholder found twice or not at all, a value of another length, one holding '"' or '\\',
 * and any state but begun are refused, and nothing is patched. */
#include <jansson.h>
#include <ninfer/ninfer.h>

#include "test_container_util.h"

#define OK(expr)                                                         \
    do {                                                                 \
        nf_status s_ = (expr);                                           \
        cr_assert_eq(s_, NF_OK, "%s -> %d: %s", #expr, s_, err.message); \
    } while (0)

#define PH "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define VAL "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

/* A writer over dir/m.ninfer with one resource and a provenance holding `prov`, begun and written. */
static nf_writer *begun(const char *dir, json_t *prov, nf_error *err)
{
    tc_path p = tc_join(dir, "m.ninfer");
    nf_writer_options opt = {0, NULL, true, true};
    nf_writer *w = NULL;
    size_t idx = 0;
    cr_assert_eq(nf_writer_create(p.s, &opt, &w, err), NF_OK);
    cr_assert_eq(nf_writer_add_resource(w, "data", 5, &idx, err), NF_OK);
    cr_assert_eq(nf_writer_set_member(w, "provenance", prov, err), NF_OK);
    cr_assert_eq(nf_writer_begin(w, err), NF_OK);
    cr_assert_eq(nf_writer_write(w, idx, 0, "hello", 5, err), NF_OK);
    return w;
}

static const char *provenance_value(nf_artifact *a, const char *key)
{
    return json_string_value(json_object_get(json_object_get(nf_artifact_directory(a), "provenance"), key));
}

Test(writer_patch, replaces_the_placeholder_before_the_checksums)
{
    char *dir = tc_tmpdir();
    nf_error err = {0};
    nf_writer *w = begun(dir, json_pack("{s:s,s:s}", "a", PH, "b", "kept"), &err);
    OK(nf_writer_patch_text(w, PH, VAL, &err));
    OK(nf_writer_finish(w, &err));
    nf_writer_free(w);
    tc_path p = tc_join(dir, "m.ninfer");
    nf_verify_report r = {0};
    OK(nf_verify_artifact(p.s, NF_VERIFY_CHECKSUMS, &r, &err));
    cr_assert(r.valid, "the patched artifact verifies: %s", r.count ? r.problems[0].message : "");
    cr_assert_gt(r.checksums_checked, 0);
    nf_verify_report_free(&r);
    nf_artifact *a = NULL;
    OK(nf_artifact_open(p.s, NF_READ_PREAD, &a, &err));
    cr_assert_str_eq(provenance_value(a, "a"), VAL);
    cr_assert_str_eq(provenance_value(a, "b"), "kept");
    nf_artifact_close(a);
    tc_rmtree(dir);
    free(dir);
}

Test(writer_patch, without_checksums_the_entry_is_patched_too)
{
    char *dir = tc_tmpdir();
    nf_error err = {0};
    tc_path p = tc_join(dir, "m.ninfer");
    nf_writer_options opt = {0, NULL, false, false};
    nf_writer *w = NULL;
    size_t idx = 0;
    OK(nf_writer_create(p.s, &opt, &w, &err));
    OK(nf_writer_add_resource(w, "data", 5, &idx, &err));
    OK(nf_writer_set_member(w, "provenance", json_pack("{s:s}", "a", PH), &err));
    OK(nf_writer_begin(w, &err));
    OK(nf_writer_write(w, idx, 0, "hello", 5, &err));
    OK(nf_writer_patch_text(w, PH, VAL, &err));
    OK(nf_writer_finish(w, &err));
    nf_writer_free(w);
    nf_artifact *a = NULL;
    OK(nf_artifact_open(p.s, NF_READ_PREAD, &a, &err));
    cr_assert_str_eq(provenance_value(a, "a"), VAL);
    nf_artifact_close(a);
    tc_rmtree(dir);
    free(dir);
}

Test(writer_patch, refuses_what_it_cannot_patch_exactly)
{
    char *dir = tc_tmpdir();
    nf_error err = {0};
    nf_writer *w = begun(dir, json_pack("{s:s,s:s}", "a", PH, "b", PH), &err);
    cr_assert_eq(nf_writer_patch_text(w, PH, VAL, &err), NF_ERR_USAGE, "twice");
    cr_assert(strstr(err.message, "twice"), "%s", err.message);
    cr_assert_eq(nf_writer_patch_text(w, VAL, PH, &err), NF_ERR_USAGE, "absent");
    cr_assert_eq(nf_writer_patch_text(w, PH, "short", &err), NF_ERR_USAGE, "another length");
    cr_assert_eq(nf_writer_patch_text(w, "0123456789abcdef", "fedcba9876543210", &err), NF_ERR_USAGE, "too short");
    char quote[65];
    memcpy(quote, VAL, sizeof quote);
    quote[3] = '"';
    cr_assert_eq(nf_writer_patch_text(w, PH, quote, &err), NF_ERR_USAGE, "a quote");
    quote[3] = '\\';
    cr_assert_eq(nf_writer_patch_text(w, PH, quote, &err), NF_ERR_USAGE, "a backslash");
    nf_writer_free(w);
    tc_assert_dir_empty(dir);

    /* before begin and after publish */
    tc_path p = tc_join(dir, "m.ninfer");
    nf_writer_options opt = {0, NULL, true, true};
    size_t idx = 0;
    OK(nf_writer_create(p.s, &opt, &w, &err));
    OK(nf_writer_add_resource(w, "data", 5, &idx, &err));
    OK(nf_writer_set_member(w, "provenance", json_pack("{s:s}", "a", PH), &err));
    cr_assert_eq(nf_writer_patch_text(w, PH, VAL, &err), NF_ERR_USAGE, "before begin");
    OK(nf_writer_begin(w, &err));
    OK(nf_writer_write(w, idx, 0, "hello", 5, &err));
    OK(nf_writer_publish(w, &err));
    cr_assert_eq(nf_writer_patch_text(w, PH, VAL, &err), NF_ERR_USAGE, "after publish");
    OK(nf_writer_commit(w, &err));
    nf_writer_free(w);
    nf_verify_report r = {0};
    OK(nf_verify_artifact(p.s, NF_VERIFY_CHECKSUMS, &r, &err));
    cr_assert(r.valid);
    nf_verify_report_free(&r);
    tc_rmtree(dir);
    free(dir);
}
