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
