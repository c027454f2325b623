/* What a recipe may name (docs/security.md 7.1, F2; docs/recipes.md, "What a recipe may read"): what the
 * conversion publishes byte for byte -- a resource -- must resolve, symbolic links followed,
 * inside the recipe's directory, a source the command line gave (--source) or a directory the
 * command line allows (--allow-path); anything else is refused naming the key, line and column.
 * The checkpoints and imatrix files it names are read wherever they are, by the strict readers.  `${VAR}`
 * expands only variables the command line allows (--allow-env), and no message carries a value.
 * Every test works in its own temporary directory: tmp/r holds the recipe, tmp/out is outside it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ninfer/ninfer.h>

#include "support/source_writer.h"

static char *tmp, *rdir, *outside;

static void setup(void)
{
    tmp = sw_tempdir();
    rdir = sw_path(tmp, "r");
    outside = sw_path(tmp, "out");
    cr_assert_eq(mkdir(rdir, 0700), 0);
    cr_assert_eq(mkdir(outside, 0700), 0);
}

static void teardown(void)
{
    if (tmp) sw_rmtree(tmp);
    free(tmp);
    free(rdir);
    free(outside);
    tmp = rdir = outside = NULL;
}

TestSuite(recipe_paths, .init = setup, .fini = teardown);

static const uint16_t w[4] = {0x3F80, 0x4000, 0x4040, 0x4080};

/* A one-tensor checkpoint directory DIR/NAME with a config.json and a tokenizer.json. */
static char *make_ckpt(const char *dir, const char *name)
{
    char *ck = sw_path(dir, name);
    cr_assert_eq(mkdir(ck, 0700), 0);
    sw_st_tensor t[1] = {{"norm.weight", "BF16", 1, {4}, w, sizeof w}};
    sw_buf b = {0};
    sw_st_file(&b, t, 1, NULL);
    char *p = sw_path(ck, "model.safetensors");
    cr_assert_eq(sw_write_file(p, b.data, b.len), 0);
    free(p);
    sw_free(&b);
    cr_assert_eq(sw_write_text(ck, "config.json", "{\"hidden_size\": 4}"), 0);
    cr_assert_eq(sw_write_text(ck, "tokenizer.json", "{\"model\": {}}"), 0);
    return ck;
}

static void write_secret(void) { cr_assert_eq(sw_write_text(outside, "secret.txt", "the secret"), 0); }

/* Parses TEXT as rdir/r.yaml (allowing env[0..nenv)), applies the --source overrides and
 * --allow-path directories (NULL-terminated lists), then plans. */
static nf_status plan_with(const char *text, const char *const *sources, const char *const *allow,
                           const char *const *env, size_t nenv, nf_error *err)
{
    char *name = sw_path(rdir, "r.yaml");
    nf_recipe_options opt = {.allow_env = env, .nallow_env = nenv};
    nf_recipe *r = NULL;
    nf_status st = nf_recipe_parse_ex(text, strlen(text), name, rdir, &opt, &r, err);
    free(name);
    for (size_t i = 0; st == NF_OK && sources && sources[i]; i += 2)
        st = nf_recipe_set_source(r, sources[i], sources[i + 1], err);
    for (size_t i = 0; st == NF_OK && allow && allow[i]; i++) st = nf_recipe_allow_path(r, allow[i], err);
    nf_plan *p = NULL;
    if (st == NF_OK) st = nf_plan_build(r, &p, err);
    nf_plan_free(p);
    nf_recipe_free(r);
    return st;
}

static void expect_refused(nf_status st, const nf_error *err, const char *where, const char *resolved)
{
    cr_assert_eq(st, NF_ERR_INVALID, "%s", st == NF_OK ? "planned" : err->message);
    cr_assert(strstr(err->message, where), "'%s' lacks '%s'", err->message, where);
    cr_assert(strstr(err->message, "outside"), "%s", err->message);
    if (resolved) cr_assert(strstr(err->message, resolved), "'%s' lacks '%s'", err->message, resolved);
    cr_assert(strstr(err->message, "--allow-path"), "the message says how to allow it: %s", err->message);
}

#define HEAD "recipe: 1\nsources:\n  base: ./ck\n"

Test(recipe_paths, resource_climbing_out_with_dotdot_refused)
{
    free(make_ckpt(rdir, "ck"));
    write_secret();
    nf_error err;
    nf_status st = plan_with(HEAD "components:\n  text:\n    resources: {s: base/../../out/secret.txt}\n", NULL, NULL,
                             NULL, 0, &err);
    expect_refused(st, &err, "r.yaml:6:17: components.text.resources.s: 'base/../../out/secret.txt'",
                   "/out/secret.txt");
    /* the reported case: as many '..' as it takes to reach the root */
    st = plan_with(HEAD "components:\n  text:\n    resources: {s: base/../../../../../../../../etc/passwd}\n", NULL,
                   NULL, NULL, 0, &err);
    expect_refused(st, &err, "components.text.resources.s", "/etc/passwd");
}

Test(recipe_paths, absolute_resource_refused_unless_allowed)
{
    free(make_ckpt(rdir, "ck"));
    write_secret();
    char text[1024];
    snprintf(text, sizeof text, HEAD "components:\n  text:\n    resources: {s: %s/secret.txt}\n", outside);
    nf_error err;
    expect_refused(plan_with(text, NULL, NULL, NULL, 0, &err), &err, "r.yaml:6:17: components.text.resources.s", NULL);
    const char *allow[] = {outside, NULL};
    cr_assert_eq(plan_with(text, NULL, allow, NULL, 0, &err), NF_OK, "%s", err.message);
}

Test(recipe_paths, symlink_out_of_the_recipe_directory_refused)
{
    free(make_ckpt(rdir, "ck"));
    write_secret();
    char *target = sw_path(outside, "secret.txt"), *link = sw_path(rdir, "innocent.txt");
    cr_assert_eq(symlink(target, link), 0);
    nf_error err;
    nf_status st = plan_with(HEAD "components:\n  text:\n    resources: {s: ./innocent.txt}\n", NULL, NULL, NULL, 0,
                             &err);
    expect_refused(st, &err, "components.text.resources.s: './innocent.txt'", "/out/secret.txt");
    free(target);
    free(link);
}

Test(recipe_paths, inside_the_recipe_directory_is_fine)
{
    free(make_ckpt(rdir, "ck"));
    cr_assert_eq(sw_write_text(rdir, "chat.jinja", "{{ x }}"), 0);
    nf_error err;
    /* a path through a directory that does not exist is judged as written: inside, so the
     * missing file is reported as it always was, not as a refusal */
    nf_status st = plan_with(HEAD "components:\n  text:\n    config: {from: base}\n"
                                  "    resources: {tokenizer.json: base/tokenizer.json, chat: ./sub/../chat.jinja}\n",
                             NULL, NULL, NULL, 0, &err);
    cr_assert_neq(st, NF_OK);
    cr_assert(strstr(err.message, "cannot read") && !strstr(err.message, "outside"), "%s", err.message);
    cr_assert_eq(plan_with(HEAD "components:\n  text:\n    config: {from: base}\n"
                                "    resources: {tokenizer.json: base/tokenizer.json, chat: chat.jinja}\n",
                           NULL, NULL, NULL, 0, &err),
                 NF_OK, "%s", err.message);
}

/* A checkpoint the recipe names is read wherever it is (the strict readers accept only a
 * checkpoint, and only its tensors become objects: the acceptance suite's recipes name GGUF
 * fixtures by absolute path); naming it does not widen what the recipe may publish byte for
 * byte: a resource inside it is refused unless the command line gives the checkpoint. */
Test(recipe_paths, source_outside_is_read_but_does_not_widen_resources)
{
    char *ck = make_ckpt(outside, "ck");
    nf_error err;
    cr_assert_eq(plan_with("recipe: 1\nsources:\n  base: ../out/ck\n", NULL, NULL, NULL, 0, &err), NF_OK, "%s",
                 err.message);
    char text[1024];
    snprintf(text, sizeof text, "recipe: 1\nsources:\n  base: %s\n", ck);
    cr_assert_eq(plan_with(text, NULL, NULL, NULL, 0, &err), NF_OK, "%s", err.message);
    const char *res = "recipe: 1\nsources:\n  base: ../out/ck\ncomponents:\n  text:\n    config: {from: base}\n"
                      "    resources: {tokenizer.json: base/tokenizer.json}\n";
    expect_refused(plan_with(res, NULL, NULL, NULL, 0, &err), &err,
                   "r.yaml:7:17: components.text.resources.tokenizer.json: 'base/tokenizer.json'", NULL);
    /* --source: the command line names it, and resources inside it follow */
    const char *src[] = {"base", ck, NULL};
    cr_assert_eq(plan_with(res, src, NULL, NULL, 0, &err), NF_OK, "%s", err.message);
    /* but a resource climbing out of that source is still refused */
    write_secret();
    nf_status st = plan_with("recipe: 1\nsources:\n  base: ../out/ck\ncomponents:\n  text:\n"
                             "    resources: {s: base/../secret.txt}\n",
                             src, NULL, NULL, 0, &err);
    expect_refused(st, &err, "r.yaml:6:17: components.text.resources.s", "/out/secret.txt");
    free(ck);
}

/* A source that is not a checkpoint is refused by the reader, and its bytes never reach the
 * message or the artifact. */
Test(recipe_paths, a_file_that_is_not_a_checkpoint_is_refused_without_its_bytes)
{
    write_secret();
    nf_error err;
    nf_status st = plan_with("recipe: 1\nsources:\n  base: ../out/secret.txt\n", NULL, NULL, NULL, 0, &err);
    cr_assert_eq(st, NF_ERR_INVALID, "%s", st == NF_OK ? "planned" : err.message);
    cr_assert(strstr(err.message, "r.yaml:3:3: source 'base'"), "%s", err.message);
    cr_assert_null(strstr(err.message, "the secret"), "%s", err.message);
}

/* ${VAR}: only the variables the command line allows; a value is never part of a message. */
Test(recipe_paths, environment_variables_only_when_allowed_and_never_echoed)
{
    free(make_ckpt(rdir, "ck"));
    cr_assert_eq(setenv("NINFER_TEST_SECRET", "s3cr3t-t0ken", 1), 0);
    cr_assert_eq(setenv("NINFER_TEST_CK", "ck", 1), 0);
    nf_error err;
    const char *text = "recipe: 1\nsources:\n  base: ./${NINFER_TEST_SECRET}/x\n";
    nf_status st = plan_with(text, NULL, NULL, NULL, 0, &err);
    cr_assert_eq(st, NF_ERR_INVALID, "%s", st == NF_OK ? "planned" : err.message);
    cr_assert(strstr(err.message, "r.yaml:3:3: sources.base"), "%s", err.message);
    cr_assert(strstr(err.message, "'NINFER_TEST_SECRET' is not allowed"), "%s", err.message);
    cr_assert(strstr(err.message, "--allow-env NINFER_TEST_SECRET"), "%s", err.message);
    cr_assert_null(strstr(err.message, "s3cr3t"), "%s", err.message);
    /* allowed: expanded; the missing file is named by the I/O error, as any path is */
    const char *env[] = {"NINFER_TEST_SECRET"};
    st = plan_with(text, NULL, NULL, env, 1, &err);
    cr_assert_eq(st, NF_ERR_IO, "%s", err.message);
    /* parse errors quote the text as written, not as expanded */
    const char *bad = "recipe: 1\nsources:\n  base: ./${NINFER_TEST_SECRET}/${NINFER_UNSET_VAR_X}\n";
    const char *env2[] = {"NINFER_TEST_SECRET", "NINFER_UNSET_VAR_X"};
    unsetenv("NINFER_UNSET_VAR_X");
    st = plan_with(bad, NULL, NULL, env2, 2, &err);
    cr_assert_eq(st, NF_ERR_INVALID);
    cr_assert(strstr(err.message, "'NINFER_UNSET_VAR_X' is not set"), "%s", err.message);
    cr_assert_null(strstr(err.message, "s3cr3t"), "%s", err.message);
    /* an allowed variable that names a directory inside: fine */
    const char *env3[] = {"NINFER_TEST_CK"};
    cr_assert_eq(plan_with("recipe: 1\nsources:\n  base: ./${NINFER_TEST_CK}\n", NULL, NULL, env3, 1, &err), NF_OK,
                 "%s", err.message);
}

/* A variable nobody allowed in a source the command line replaces is never expanded, so the
 * shipped recipes' `base: ${MODEL_DIR}` work with --source base=PATH alone. */
Test(recipe_paths, disallowed_variable_of_a_replaced_source_is_not_an_error)
{
    char *ck = make_ckpt(outside, "ck");
    const char *src[] = {"base", ck, NULL};
    nf_error err;
    cr_assert_eq(plan_with("recipe: 1\nsources:\n  base: ${NINFER_NOT_ALLOWED}\n", src, NULL, NULL, 0, &err), NF_OK,
                 "%s", err.message);
    free(ck);
}

Test(recipe_paths, allow_path_must_exist)
{
    nf_recipe *r = NULL;
    nf_error err;
    cr_assert_eq(nf_recipe_parse("recipe: 1\n", 10, "r.yaml", rdir, &r, &err), NF_OK, "%s", err.message);
    char *nope = sw_path(tmp, "nope");
    cr_assert_eq(nf_recipe_allow_path(r, nope, &err), NF_ERR_USAGE);
    cr_assert(strstr(err.message, "--allow-path") && strstr(err.message, nope), "%s", err.message);
    cr_assert_eq(nf_recipe_allow_path(r, outside, &err), NF_OK, "%s", err.message);
    free(nope);
    nf_recipe_free(r);
}
