/* The status of a failure survives the context added on the way out (docs/library.md, "Errors"):
 * a caller may pass err == NULL (ninfer/error.h allows it), and a function that adds context to
 * a callee's out-of-memory or I/O failure must still return that status, not "invalid input". */
#include <criterion/criterion.h>
#include <string.h>

#include <ninfer/ninfer.h>

Test(error_status, forward_keeps_the_status_with_and_without_err)
{
    nf_error err;
    nf_error_set(&err, NF_ERR_IO, "x.bin: cannot read");
    cr_assert_eq(nf_error_forward(&err, NF_ERR_IO, "object '%s'", "w"), NF_ERR_IO);
    cr_assert_str_eq(err.message, "object 'w': x.bin: cannot read");
    cr_assert_eq(err.status, NF_ERR_IO);
    for (nf_status st = NF_ERR_INVALID; st <= NF_ERR_NOMEM; st++)
        cr_assert_eq(nf_error_forward(NULL, st, "object '%s'", "w"), st);
    cr_assert_eq(nf_error_forward(NULL, NF_OK, "nothing"), NF_OK);
}

/* A library call that adds context to an I/O failure: a recipe whose source does not exist. */
Test(error_status, plan_build_reports_a_missing_source_as_io_without_err)
{
    const char *text = "recipe: 1\nsources:\n  base: /nonexistent/ninfer-test-source\ndefaults: {format: fp32}\n";
    nf_recipe *r = NULL;
    nf_error err;
    cr_assert_eq(nf_recipe_parse(text, strlen(text), "r.yaml", "/", &r, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_recipe_allow_path(r, "/", &err), NF_OK, "%s", err.message);
    nf_plan *plan = NULL;
    cr_assert_eq(nf_plan_build(r, &plan, &err), NF_ERR_IO, "%s", err.message);
    cr_assert_null(plan);
    cr_assert_eq(nf_plan_build(r, &plan, NULL), NF_ERR_IO, "the status is lost without an nf_error");
    nf_recipe_free(r);
}

/* The programs' exit statuses (docs/ninfer-convert.md, "Exit status": 0 done, 1 invalid input,
 * 2 usage error, 3 system error; out of memory is a system error) and the statuses' names; a
 * value outside the enum (a caller's cast) is a system error, named as unknown. */
Test(error_status, exit_codes_and_names_of_every_status)
{
    static const struct {
        nf_status st;
        int code;
        const char *name;
    } want[] = {
        {NF_OK, 0, "ok"},
        {NF_ERR_INVALID, 1, "invalid input"},
        {NF_ERR_USAGE, 2, "usage error"},
        {NF_ERR_IO, 3, "system error"},
        {NF_ERR_NOMEM, 3, "out of memory"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        cr_assert_eq(nf_status_exit_code(want[i].st), want[i].code, "status %d", (int)want[i].st);
        cr_assert_str_eq(nf_status_name(want[i].st), want[i].name);
    }
    nf_status odd = (nf_status)(NF_ERR_NOMEM + 7);
    cr_assert_eq(nf_status_exit_code(odd), 3);
    cr_assert_str_eq(nf_status_name(odd), "unknown status");
}
