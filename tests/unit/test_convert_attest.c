/* ninfer-convert --attest (docs/provenance.md, "The statement"): the artifact, its report and the
 * statement are published as one set -- every rename or link of the publication failed in turn
 * (fault injection) leaves the directory as it was (nothing new, the old set back), and a clean
 * run publishes all three, the statement's subject the artifact's SHA-256. */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/io.h"
#include "common/sha256_file.h"
#include "support/plan_ckpt.h"

static void setup(void) { pc_dir_make(); }
static void teardown(void) { pc_dir_remove(); }
TestSuite(attest, .init = setup, .fini = teardown);

static char *listing(void)
{
    static char buf[4096];
    char cmd[512];
    snprintf(cmd, sizeof cmd, "ls -A %s | tr '\\n' ' '", pc_dir);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(buf, 1, sizeof buf - 1, p);
    buf[n] = '\0';
    pclose(p);
    return buf;
}

static nf_status run(const char *out, const char *statement, bool force, nf_error *err)
{
    pc_ckpt c = {0};
    pc_add(&c, "a.weight", "BF16", 2, 8, 64, 2);
    char *ck = pc_write(&c, pc_dir, "m.safetensors");
    nf_recipe *r = NULL;
    nf_plan *p = NULL;
    nf_status st = pc_build(pc_dir, ck, "defaults: {format: bf16}\n", &r, &p, err);
    cr_assert_eq(st, NF_OK, "%s", err->message);
    nf_convert_options o;
    memset(&o, 0, sizeof o);
    o.output = out;
    o.threads = 1;
    o.report = true;
    o.force = force;
    o.attest = statement;
    st = nf_plan_execute(p, &o, err);
    nf_plan_free(p);
    nf_recipe_free(r);
    free(ck);
    return st;
}

Test(attest, the_set_is_published_whole_or_not_at_all)
{
    char out[512], statement[512];
    snprintf(out, sizeof out, "%s/m.ninfer", pc_dir);
    snprintf(statement, sizeof statement, "%s/m.intoto.json", pc_dir);
    nf_error err;
    cr_assert_eq(setenv("NINFER_DIGEST_CACHE", "0", 1), 0);
    /* a clean run first: how many renames and links publication takes */
    uint64_t before = nf_io_calls(NF_IO_LINK);
    cr_assert_eq(run(out, statement, false, &err), NF_OK, "%s", err.message);
    uint64_t calls = nf_io_calls(NF_IO_LINK) - before;
    cr_assert_geq(calls, 3, "the entry, the report and the statement");
    char clean[4096];
    snprintf(clean, sizeof clean, "%s", listing());
    cr_assert_str_eq(clean, "m.intoto.json m.ninfer m.ninfer.conversion.json m.safetensors ");
    json_error_t je;
    json_t *s = json_load_file(statement, 0, &je);
    cr_assert_not_null(s, "%s", je.text);
    char hex[65];
    uint64_t n = 0;
    cr_assert_eq(nf_sha256_file(out, "m.ninfer", UINT64_MAX, NULL, NULL, &n, hex, &err), NF_OK);
    cr_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(json_array_get(json_object_get(s, "subject"), 0), "digest"), "sha256")),
                     hex);
    json_decref(s);
    /* a new set over nothing: each publication step failing leaves nothing new */
    for (uint64_t k = 1; k <= calls; k++) {
        cr_assert_eq(unlink(out), 0);
        cr_assert_eq(unlink(statement), 0);
        char report[600];
        snprintf(report, sizeof report, "%s.conversion.json", out);
        cr_assert_eq(unlink(report), 0);
        nf_io_fault_arm(NF_IO_LINK, k, EIO);
        nf_status st = run(out, statement, false, &err);
        nf_io_fault_reset();
        cr_assert_neq(st, NF_OK, "publication step %llu of %llu failed, and the run succeeded", (unsigned long long)k,
                      (unsigned long long)calls);
        cr_assert_str_eq(listing(), "m.safetensors ", "step %llu failed (%s): left behind", (unsigned long long)k,
                         err.message);
        cr_assert_eq(run(out, statement, false, &err), NF_OK, "%s", err.message);
    }
    /* with --force over the old set: each failure puts the old set back */
    for (uint64_t k = 1; k <= calls + 3; k++) {
        nf_io_fault_arm(NF_IO_LINK, k, EIO);
        nf_status st = run(out, statement, true, &err);
        nf_io_fault_reset();
        cr_assert_str_eq(listing(), clean, "force, step %llu (%s): the set is not the old one", (unsigned long long)k,
                         st == NF_OK ? "succeeded" : err.message);
    }
}
