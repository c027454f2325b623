/* The writer's scale-out part (container/writer_stage.c; ninfer/container.h, "scale-out";
 * docs/scale-out.md): two tasks stage the parts and the entry of docs/vectors.md item 2's split
 * artifact, an assembler publishes it (its bytes read back, the object's checksum against XXH3
 * computed here with libxxhash directly); the calls out of order refused as usage errors; and
 * the assembler's refusals of what the tasks left when it is not what the plan says: a part
 * truncated or replaced by a directory, a staged entry truncated or missing, an output that is
 * a directory, a checksum that is not 32 lowercase hex digits.  After a refusal the assembly
 * succeeds once the task has run again. */
#include "test_container_util.h"

#include <ctype.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

static const uint8_t ID[16] = {0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe,
                               0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef};

#define OBJ_BYTES 27610 /* item 2: an entry and three parts of 4096 + 8192, 8192, 8192, 3034 bytes */

#define OK(expr)                                                         \
    do {                                                                 \
        nf_status s_ = (expr);                                           \
        cr_assert_eq(s_, NF_OK, "%s -> %d: %s", #expr, s_, err.message); \
    } while (0)

static char *g_dir;
static tc_path g_out, g_staged;
static uint8_t g_data[OBJ_BYTES];

static void setup(void)
{
    g_dir = tc_tmpdir();
    g_out = tc_join(g_dir, "large.ninfer");
    g_staged = tc_join(g_dir, "large.ninfer.staged");
    for (size_t i = 0; i < OBJ_BYTES; i++) g_data[i] = (uint8_t)(i * 7 + i / 251);
}

static void teardown(void)
{
    tc_rmtree(g_dir);
    free(g_dir);
}

TestSuite(container_stage, .init = setup, .fini = teardown);

/* The plan every party makes: one resource of item 2's size, files of at most 12288 bytes, a
 * fixed artifact id, checksums on; laid out. */
static nf_writer *plan(void)
{
    nf_writer_options opt = {12288, ID, false, true};
    nf_writer *w = NULL;
    nf_error err;
    OK(nf_writer_create(g_out.s, &opt, &w, &err));
    size_t idx;
    OK(nf_writer_add_resource(w, "data", OBJ_BYTES, &idx, &err));
    cr_assert_eq(idx, 0);
    OK(nf_writer_set_member(w, "components",
                            json_pack("{s:{s:{},s:{s:s}}}", "text", "config", "resources", "data", "data"), &err));
    OK(nf_writer_layout(w, &err));
    cr_assert_eq(nf_writer_file_count(w), 4);
    return w;
}

/* A task: the files flagged (entry, part 1, 2, 3), the object written whole, staged; its
 * checksum into sum when given. */
static void task(bool entry, bool parts, char sum[33])
{
    nf_writer *w = plan();
    nf_error err;
    bool files[4] = {entry, parts, parts, parts};
    OK(nf_writer_select_files(w, files, &err));
    OK(nf_writer_begin(w, &err));
    OK(nf_writer_write(w, 0, 0, g_data, OBJ_BYTES, &err));
    OK(nf_writer_stage(w, entry ? g_staged.s : NULL, &err));
    if (sum) cr_assert(nf_writer_object_checksum(w, 0, sum));
    nf_writer_free(w);
}

/* XXH3-128 of the object, canonical (high 64 bits first), from libxxhash. */
static void want_sum(char out[33])
{
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(g_data, OBJ_BYTES));
    for (int i = 0; i < 16; i++) snprintf(out + 2 * i, 3, "%02x", c.digest[i]);
}

/* Both tasks; the object's checksum. */
static void stage_all(char sum[33])
{
    task(false, true, NULL);
    task(true, false, sum);
}

/* The assembler: status, message in err. */
static nf_status assemble(const char *sum, nf_error *err)
{
    nf_writer *w = plan();
    const char *sums[1] = {sum};
    nf_status st = nf_writer_assemble(w, sums, g_staged.s, err);
    nf_writer_free(w);
    return st;
}

static void check_published(void)
{
    nf_error err;
    nf_artifact *a = NULL;
    OK(nf_artifact_open(g_out.s, NF_READ_MMAP, &a, &err));
    uint8_t *buf = malloc(OBJ_BYTES);
    OK(nf_artifact_read(a, 0, buf, OBJ_BYTES, &err));
    cr_assert_eq(memcmp(buf, g_data, OBJ_BYTES), 0);
    free(buf);
    nf_artifact_close(a);
    struct stat sb;
    cr_assert_eq(lstat(g_staged.s, &sb), -1, "the staged entry is left after the assembly");
}

static void part_path(int i, tc_path *p)
{
    char name[64];
    snprintf(name, sizeof name, "large.ninfer.part-%04d", i);
    *p = tc_join(g_dir, name);
}

/* ---------------------------------------------------------------- the way through */
Test(container_stage, two_tasks_and_the_assembler_publish_the_artifact)
{
    char sum[33], want[33];
    stage_all(sum);
    want_sum(want);
    cr_assert_str_eq(sum, want);
    for (int i = 1; i <= 3; i++) {
        tc_path p;
        part_path(i, &p);
        struct stat sb;
        cr_assert_eq(stat(p.s, &sb), 0, "part %d is in place after its task", i);
        cr_assert_eq(sb.st_size, i < 3 ? 12288 : 4096 + 3034);
    }
    nf_error err;
    OK(assemble(sum, &err));
    check_published();
}

Test(container_stage, the_layout_digest_is_the_plans)
{
    char a[33], b[33], none[33] = "x";
    nf_writer_options opt = {12288, ID, false, true};
    nf_writer *w = NULL;
    nf_error err;
    OK(nf_writer_create(g_out.s, &opt, &w, &err));
    nf_writer_layout_digest(w, none); /* not laid out: no digest */
    cr_assert_str_eq(none, "");
    nf_writer_free(w);
    w = plan();
    nf_writer_layout_digest(w, a);
    nf_writer_free(w);
    w = plan();
    nf_writer_layout_digest(w, b);
    nf_writer_free(w);
    cr_assert_eq(strlen(a), 32);
    cr_assert_eq(strspn(a, "0123456789abcdef"), 32);
    cr_assert_str_eq(a, b);
}

/* ---------------------------------------------------------------- calls out of order */
Test(container_stage, stage_without_a_selection_or_without_the_staging_name_is_a_usage_error)
{
    char want[4200];
    nf_error err;
    nf_writer *w = plan();
    OK(nf_writer_begin(w, &err));
    OK(nf_writer_write(w, 0, 0, g_data, OBJ_BYTES, &err));
    cr_assert_eq(nf_writer_stage(w, g_staged.s, &err), NF_ERR_USAGE);
    snprintf(want, sizeof want, "%s: nf_writer_stage belongs to a writer begun with a selection", g_out.s);
    cr_assert_str_eq(err.message, want);
    nf_writer_free(w);

    w = plan();
    bool files[4] = {true, false, false, false};
    OK(nf_writer_select_files(w, files, &err));
    OK(nf_writer_begin(w, &err));
    OK(nf_writer_write(w, 0, 0, g_data, OBJ_BYTES, &err));
    cr_assert_eq(nf_writer_stage(w, NULL, &err), NF_ERR_USAGE);
    snprintf(want, sizeof want, "%s: the entry is selected: give its staging name", g_out.s);
    cr_assert_str_eq(err.message, want);
    nf_writer_free(w);
}

Test(container_stage, assemble_with_a_selection_or_without_the_staging_name_is_a_usage_error)
{
    char want[4200], sum[33];
    want_sum(sum);
    const char *sums[1] = {sum};
    snprintf(want, sizeof want,
             "%s: nf_writer_assemble belongs to a writer laid out without a selection, with "
             "the staged entry's name",
             g_out.s);
    nf_error err;
    nf_writer *w = plan();
    cr_assert_eq(nf_writer_assemble(w, sums, NULL, &err), NF_ERR_USAGE);
    cr_assert_str_eq(err.message, want);
    nf_writer_free(w);

    w = plan();
    bool files[4] = {false, true, false, false};
    OK(nf_writer_select_files(w, files, &err));
    cr_assert_eq(nf_writer_assemble(w, sums, g_staged.s, &err), NF_ERR_USAGE);
    cr_assert_str_eq(err.message, want);
    nf_writer_free(w);
}

Test(container_stage, a_checksum_that_is_not_32_lowercase_hex_digits_is_refused)
{
    char sum[33], want[4200];
    stage_all(sum);
    snprintf(want, sizeof want, "%s: object 'data': no checksum of 32 hex digits", g_out.s);
    char upper[33];
    for (int i = 0; i < 33; i++) upper[i] = (char)toupper((unsigned char)sum[i]);
    const char *bad[] = {NULL, "", "0123", upper};
    nf_error err;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (strcmp(upper, sum) == 0 && i == 3) continue; /* (a checksum of digits only) */
        cr_assert_eq(assemble(bad[i], &err), NF_ERR_INVALID, "case %zu", i);
        cr_assert_str_eq(err.message, want, "case %zu", i);
    }
    struct stat sb;
    cr_assert_eq(lstat(g_out.s, &sb), -1, "nothing published");
    OK(assemble(sum, &err));
    check_published();
}

/* ---------------------------------------------------------------- what the tasks left */
Test(container_stage, a_truncated_part_is_refused_until_its_task_runs_again)
{
    char sum[33], want[4200];
    stage_all(sum);
    tc_path p;
    part_path(2, &p);
    cr_assert_eq(truncate(p.s, 12287), 0);
    nf_error err;
    cr_assert_eq(assemble(sum, &err), NF_ERR_INVALID);
    snprintf(want, sizeof want, "%s: 12287 bytes, the plan says 12288", p.s);
    cr_assert_str_eq(err.message, want);
    struct stat sb;
    cr_assert_eq(lstat(g_out.s, &sb), -1, "nothing published");
    task(false, true, NULL);
    OK(assemble(sum, &err));
    check_published();
}

Test(container_stage, a_part_that_is_a_directory_is_refused)
{
    char sum[33], want[4200];
    stage_all(sum);
    tc_path p;
    part_path(3, &p);
    cr_assert_eq(unlink(p.s), 0);
    cr_assert_eq(mkdir(p.s, 0755), 0);
    nf_error err;
    cr_assert_eq(assemble(sum, &err), NF_ERR_INVALID);
    snprintf(want, sizeof want, "%s is a directory, not a regular file", p.s);
    cr_assert_str_eq(err.message, want);
}

Test(container_stage, a_truncated_or_missing_staged_entry_is_refused_until_its_task_runs_again)
{
    char sum[33], want[4200];
    stage_all(sum);
    cr_assert_eq(truncate(g_staged.s, 4096), 0);
    nf_error err;
    cr_assert_eq(assemble(sum, &err), NF_ERR_INVALID);
    snprintf(want, sizeof want, "%s: 4096 bytes, the plan says 12288", g_staged.s);
    cr_assert_str_eq(err.message, want);

    cr_assert_eq(unlink(g_staged.s), 0);
    cr_assert_eq(assemble(sum, &err), NF_ERR_INVALID);
    snprintf(want, sizeof want, "%s: missing (the entry's payload)", g_staged.s);
    cr_assert_str_eq(err.message, want);

    struct stat sb;
    cr_assert_eq(lstat(g_out.s, &sb), -1, "nothing published");
    task(true, false, NULL);
    OK(assemble(sum, &err));
    check_published();
}

Test(container_stage, an_output_that_is_a_directory_is_a_usage_error)
{
    char sum[33], want[4200];
    stage_all(sum);
    cr_assert_eq(mkdir(g_out.s, 0755), 0);
    nf_error err;
    cr_assert_eq(assemble(sum, &err), NF_ERR_USAGE);
    snprintf(want, sizeof want, "%s is a directory, not a regular file: give another output name", g_out.s);
    cr_assert_str_eq(err.message, want);
}
