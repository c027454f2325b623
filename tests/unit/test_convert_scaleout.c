/* The scale-out plan file through the library (docs/scale-out.md, "What a plan holds"):
 *   - written: one compact JSON object, its members in the documented order, then a newline --
 *     the text jansson dumps of the whole tree -- or, when any I/O call or any allocation of
 *     jansson fails, nothing at all (no plan, no temp file) and an error; never a plan that
 *     differs from the clean run's;
 *   - read (nf_scaleout_open): the task objects as the file lists them, and the refusals of an
 *     untrusted file -- a duplicate member, a malformed or duplicate-keyed record anywhere,
 *     "objects" included, a cut text -- named with the byte, line and column jansson gives for
 *     the whole text; an unknown member, a plan of version 1 (a command line);
 *   - run (nf_scaleout_rebuild, nf_scaleout_task, nf_scaleout_assemble): the plan's conversion
 *     rebuilt from its data alone, its tasks and assembly library calls, the artifact byte for
 *     byte nf_plan_execute's; a recipe edited in the plan, a changed input, a rebuild outside
 *     the plan's directory refused. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ninfer/ninfer.h>

#include "common/io.h"
#include "common/json_prescan.h"
#include "support/plan_ckpt.h"

static const uint8_t ARTIFACT_ID[16] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
                                        0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff};

static char *g_ckpt, *g_out, *g_plan;
/* The recipe's body: q8 for the plans read here; bf16 for the plans run (the generated values
 * overflow q8's binary16 scales) */
#define BODY_Q8 "defaults: {format: q8_g32_fp16}\nrules:\n  - match: model.norm.weight\n    format: fp32\n"
#define BODY_BF16 "defaults: {format: bf16}\nrules:\n  - match: model.norm.weight\n    format: fp32\n"
static const char *g_body;

/* A checkpoint of a dozen small matrices and two vectors, in one file. */
static void setup(void)
{
    pc_dir_make();
    pc_ckpt c = {0};
    char name[64];
    for (int i = 0; i < 12; i++) {
        snprintf(name, sizeof name, "model.layers.%d.mlp.w%d.weight", i / 3, i % 3);
        pc_add_seeded(&c, name, "BF16", 2, 32, 128, 2, (unsigned)i);
    }
    pc_add(&c, "model.norm.weight", "BF16", 1, 64, 0, 2);
    pc_add(&c, "lm_head.weight", "BF16", 2, 8, 64, 2);
    g_ckpt = pc_write(&c, pc_dir, "model.safetensors");
    g_out = sw_path(pc_dir, "m.ninfer");
    g_plan = sw_path(pc_dir, "plan.json");
    g_body = BODY_Q8;
}

static void teardown(void)
{
    free(g_ckpt);
    free(g_out);
    free(g_plan);
    g_ckpt = g_out = g_plan = NULL;
    pc_dir_remove();
}

TestSuite(scaleout, .init = setup, .fini = teardown);

static nf_plan *build(nf_recipe **r)
{
    nf_plan *p = NULL;
    nf_error err;
    nf_status st = pc_build(pc_dir, g_ckpt, g_body, r, &p, &err);
    cr_assert_eq(st, NF_OK, "%s", err.message);
    return p;
}

/* nf_scaleout_plan of p: files of at most 16 KiB, 3 tasks (p and r freed). */
static nf_status plan_of(nf_plan *p, nf_recipe *r, size_t *ntasks, nf_error *err)
{
    nf_convert_options opt = {0};
    opt.output = g_out;
    opt.has_max_file_bytes = true;
    opt.max_file_bytes = 16384;
    opt.artifact_id = ARTIFACT_ID;
    nf_status st = nf_scaleout_plan(p, &opt, 3, g_plan, ntasks, err);
    nf_plan_free(p);
    nf_recipe_free(r);
    return st;
}

/* The plan of a fresh nf_plan. */
static nf_status make_plan(size_t *ntasks, nf_error *err)
{
    nf_recipe *r = NULL;
    nf_plan *p = build(&r);
    return plan_of(p, r, ntasks, err);
}

static char *read_text(const char *path, size_t *len)
{
    char *t = (char *)sw_read_file(path, len);
    cr_assert_not_null(t, "cannot read %s", path);
    return t;
}

static void write_text(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(text, 1, len, f), len);
    cr_assert_eq(fclose(f), 0);
}

/* The names in pc_dir, sorted, space separated (static buffer). */
static const char *listing(void)
{
    static char buf[4096];
    buf[0] = '\0';
    struct dirent **names = NULL;
    int n = scandir(pc_dir, &names, NULL, alphasort);
    cr_assert_geq(n, 0);
    for (int i = 0; i < n; i++) {
        if (strcmp(names[i]->d_name, ".") != 0 && strcmp(names[i]->d_name, "..") != 0) {
            strncat(buf, names[i]->d_name, sizeof buf - strlen(buf) - 2);
            strncat(buf, " ", sizeof buf - strlen(buf) - 1);
        }
        free(names[i]);
    }
    free(names);
    return buf;
}

/* ---------------------------------------------------------------- writing */
Test(scaleout, plan_text_is_the_compact_dump_of_the_whole_plan)
{
    size_t ntasks = 0, len = 0;
    nf_error err;
    cr_assert_eq(make_plan(&ntasks, &err), NF_OK, "%s", err.message);
    cr_assert_eq(ntasks, 3);
    char *text = read_text(g_plan, &len);
    cr_assert_gt(len, 1);
    cr_assert_eq(text[len - 1], '\n', "the plan ends with a newline");
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    cr_assert_not_null(root, "%s", je.text);
    const char *order[] = {"ninfer_plan", "output",     "artifact_id", "fingerprint", "cwd",    "conversion",
                           "inputs",      "provenance", "files",       "tasks",       "objects"};
    size_t i = 0;
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        cr_assert_lt(i, 11, "member %s beyond the documented ones", key);
        cr_assert_str_eq(key, order[i], "member %zu", i);
        i++;
    }
    cr_assert_eq(i, 11);
    char *dump = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    cr_assert_not_null(dump);
    cr_assert_eq(strlen(dump) + 1, len, "the plan is not the compact dump of its tree");
    cr_assert(memcmp(dump, text, len - 1) == 0, "the plan is not the compact dump of its tree");
    /* what it says: 14 objects with their sources, files of at most 16 KiB holding them, the
     * tasks covering the files in order */
    json_t *objects = json_object_get(root, "objects"), *files = json_object_get(root, "files");
    cr_assert_eq(json_array_size(objects), 14);
    cr_assert_gt(json_array_size(files), 3);
    json_array_foreach(objects, i, v)
    {
        cr_assert(json_is_string(json_object_get(v, "object")));
        cr_assert_eq(json_array_size(json_object_get(v, "sources")), 1);
    }
    size_t next = 0, t;
    json_array_foreach(json_object_get(root, "tasks"), t, v)
    {
        size_t k;
        json_t *f;
        json_array_foreach(json_object_get(v, "files"), k, f) cr_assert_eq(json_integer_value(f), (json_int_t)next++);
    }
    cr_assert_eq(next, json_array_size(files));
    free(dump);
    json_decref(root);
    free(text);
}

/* Every call of `op` in a clean run failed in turn: an error, and nothing left beside the
 * checkpoint (the sweep's first run counts the calls). */
static void plan_fault_sweep(nf_io_op op, int errnum)
{
    size_t ntasks;
    nf_error err;
    nf_recipe *r = NULL;
    nf_plan *p = build(&r);
    uint64_t before = nf_io_calls(op);
    cr_assert_eq(plan_of(p, r, &ntasks, &err), NF_OK, "%s", err.message);
    uint64_t calls = nf_io_calls(op) - before;
    cr_assert_eq(unlink(g_plan), 0);
    cr_assert_gt(calls, 0);
    for (uint64_t n = 1; n <= calls; n++) {
        p = build(&r);
        nf_io_fault_arm(op, n, errnum);
        nf_status st = plan_of(p, r, &ntasks, &err);
        nf_io_fault_reset();
        cr_assert_neq(st, NF_OK, "call %llu of %llu failed, and the plan was written", (unsigned long long)n,
                      (unsigned long long)calls);
        cr_assert(strstr(err.message, pc_dir), "call %llu: the error names no path: %s", (unsigned long long)n,
                  err.message);
        cr_assert_str_eq(listing(), "model.safetensors ", "call %llu failed (%s): left behind", (unsigned long long)n,
                         err.message);
    }
}

Test(scaleout, plan_fault_every_open) { plan_fault_sweep(NF_IO_OPEN, EIO); }
Test(scaleout, plan_fault_every_read) { plan_fault_sweep(NF_IO_READ, EIO); }
Test(scaleout, plan_fault_every_write) { plan_fault_sweep(NF_IO_WRITE, EIO); }
Test(scaleout, plan_fault_every_write_enospc) { plan_fault_sweep(NF_IO_WRITE, ENOSPC); }
Test(scaleout, plan_fault_every_short_write) { plan_fault_sweep(NF_IO_WRITE, 0); }
Test(scaleout, plan_fault_every_sync) { plan_fault_sweep(NF_IO_SYNC, EIO); }
Test(scaleout, plan_fault_every_rename) { plan_fault_sweep(NF_IO_LINK, EIO); }

/* jansson out of memory at its N-th allocation while the plan is written (the plan built
 * before, with every allocation): an error and nothing left, or the very plan of a clean run --
 * never a plan with a record missing. */
static size_t g_allocs, g_fail_at;
/* From the N-th allocation on, every one fails: memory that is gone stays gone.  (A single
 * failure followed by successes is not an out-of-memory jansson 2.14 survives: its lexer drops
 * the character its buffer could not grow for, and when the next allocation succeeds it decodes
 * the token past its end (docs/security.md 1.2).  The writer's check parses the directory it
 * lays out with jansson, a record at a time.) */
static void *failing_malloc(size_t n)
{
    if (++g_allocs >= g_fail_at) return NULL;
    return malloc(n);
}

Test(scaleout, plan_out_of_memory_leaves_nothing_or_the_same_plan)
{
    size_t ntasks, len = 0, clean_len = 0;
    nf_error err;
    cr_assert_eq(make_plan(&ntasks, &err), NF_OK, "%s", err.message);
    char *clean = read_text(g_plan, &clean_len);
    cr_assert_eq(unlink(g_plan), 0);
    size_t failures = 0;
    for (g_fail_at = 1;; g_fail_at++) {
        cr_assert_lt(g_fail_at, 1000000);
        nf_recipe *r = NULL;
        nf_plan *p = build(&r);
        g_allocs = 0;
        json_set_alloc_funcs(failing_malloc, free);
        nf_status st = plan_of(p, r, &ntasks, &err);
        json_set_alloc_funcs(malloc, free);
        bool failed_one = g_allocs >= g_fail_at;
        if (st == NF_OK) {
            char *text = read_text(g_plan, &len);
            cr_assert(len == clean_len && memcmp(text, clean, len) == 0,
                      "allocation %zu failed, and another plan was written", g_fail_at);
            free(text);
            cr_assert_eq(unlink(g_plan), 0);
            if (!failed_one) break; /* every allocation of the run done: the sweep is over */
        } else {
            failures++;
            cr_assert(failed_one, "a failure (%s) without a failed allocation", err.message);
            cr_assert_str_eq(listing(), "model.safetensors ", "allocation %zu failed (%s): left behind", g_fail_at,
                             err.message);
        }
    }
    cr_assert_gt(failures, 0);
    free(clean);
}

/* ---------------------------------------------------------------- reading */
Test(scaleout, open_gives_each_task_the_objects_its_files_list)
{
    size_t ntasks = 0, len = 0;
    nf_error err;
    cr_assert_eq(make_plan(&ntasks, &err), NF_OK, "%s", err.message);
    nf_scaleout *s = NULL;
    cr_assert_eq(nf_scaleout_open(g_plan, &s, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_scaleout_task_count(s), 3);
    cr_assert_str_eq(nf_scaleout_output(s), g_out);
    uint8_t id[16];
    nf_scaleout_artifact_id(s, id);
    cr_assert(memcmp(id, ARTIFACT_ID, 16) == 0);
    cr_assert_null(nf_scaleout_conversion(s), "rebuilt only by nf_scaleout_rebuild");
    cr_assert_not_null(nf_scaleout_directory(s));
    char *text = read_text(g_plan, &len);
    json_t *root = json_loadb(text, len, 0, NULL);
    cr_assert_not_null(root);
    json_t *files = json_object_get(root, "files");
    size_t total = 0;
    for (size_t t = 0; t < 3; t++) {
        const char **ids = NULL;
        size_t n = 0;
        cr_assert_eq(nf_scaleout_task_objects(s, t, &ids, &n, &err), NF_OK, "%s", err.message);
        /* the union of the task's files' lists, each id once, in order */
        json_t *want = json_array();
        size_t i;
        json_t *f;
        json_array_foreach(json_object_get(json_array_get(json_object_get(root, "tasks"), t), "files"), i, f)
        {
            size_t k;
            json_t *o;
            json_array_foreach(json_object_get(json_array_get(files, (size_t)json_integer_value(f)), "objects"), k, o)
            {
                size_t m;
                json_t *w;
                bool there = false;
                json_array_foreach(want, m, w) there = there || json_equal(w, o);
                if (!there) json_array_append(want, o);
            }
        }
        cr_assert_eq(n, json_array_size(want), "task %zu: %zu ids, the plan lists %zu", t, n, json_array_size(want));
        for (size_t k = 0; k < n; k++)
            cr_assert_str_eq(ids[k], json_string_value(json_array_get(want, k)), "task %zu, id %zu", t, k);
        total += n;
        json_decref(want);
        free(ids);
    }
    cr_assert_geq(total, 14);
    const char **ids = NULL;
    size_t n = 0;
    cr_assert_eq(nf_scaleout_task_objects(s, 3, &ids, &n, &err), NF_ERR_INVALID);
    nf_scaleout_free(s);
    json_decref(root);
    free(text);
}

/* The plan's text with `from` (its first occurrence) replaced by `to`, written as the plan. */
static char *edited(const char *from, const char *to, size_t *out_len)
{
    size_t len = 0;
    nf_error err;
    size_t ntasks;
    cr_assert_eq(make_plan(&ntasks, &err), NF_OK, "%s", err.message);
    char *text = read_text(g_plan, &len);
    text = realloc(text, len + 1);
    text[len] = '\0';
    char *at = strstr(text, from);
    cr_assert_not_null(at, "no %s in the plan", from);
    size_t head = (size_t)(at - text), nf = strlen(from), nt = strlen(to);
    char *out = malloc(len - nf + nt + 1);
    memcpy(out, text, head);
    memcpy(out + head, to, nt);
    memcpy(out + head + nt, at + nf, len - head - nf);
    *out_len = len - nf + nt;
    out[*out_len] = '\0';
    write_text(g_plan, out, *out_len);
    free(text);
    return out;
}

/* nf_scaleout_open refuses the plan with what jansson says of the whole text, the plan named. */
static void refused_as_jansson_refuses(const char *text, size_t len)
{
    json_error_t je;
    json_t *whole = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    cr_assert_null(whole, "the edited plan is valid JSON");
    nf_error want;
    nf_json_syntax_error(&want, g_plan, &je);
    nf_scaleout *s = NULL;
    nf_error err;
    cr_assert_eq(nf_scaleout_open(g_plan, &s, &err), NF_ERR_INVALID, "opened");
    cr_assert_null(s);
    cr_assert_str_eq(err.message, want.message);
}

Test(scaleout, open_refuses_a_second_objects_member)
{
    size_t len;
    char *t = edited("]}\n", "],\"objects\":[]}\n", &len);
    refused_as_jansson_refuses(t, len);
    free(t);
}

Test(scaleout, open_refuses_a_second_member_before_objects)
{
    size_t len;
    char *t = edited(",\"objects\":[{", ",\"cwd\":\".\",\"objects\":[{", &len);
    refused_as_jansson_refuses(t, len);
    free(t);
}

Test(scaleout, open_refuses_a_duplicate_key_inside_an_object_record)
{
    size_t len;
    char *t = edited("\"objects\":[{\"object\":", "\"objects\":[{\"object\":\"x\",\"object\":", &len);
    refused_as_jansson_refuses(t, len);
    free(t);
}

Test(scaleout, open_refuses_a_malformed_object_record)
{
    size_t len;
    char *t = edited("\"offset\":", "\"offset\"::", &len);
    refused_as_jansson_refuses(t, len);
    free(t);
}

Test(scaleout, open_refuses_a_malformed_record_late_in_objects)
{
    size_t len;
    /* the last record's sources cut short */
    char *t = edited("}]}]}\n", "}]]}\n", &len);
    refused_as_jansson_refuses(t, len);
    free(t);
}

Test(scaleout, open_refuses_a_duplicate_key_inside_a_file_record)
{
    size_t len;
    char *t = edited("{\"file\":0,", "{\"file\":0,\"file\":0,", &len);
    refused_as_jansson_refuses(t, len);
    free(t);
}

Test(scaleout, open_refuses_a_cut_plan)
{
    size_t len;
    char *t = edited("]}\n", "]", &len);
    refused_as_jansson_refuses(t, len);
    free(t);
}

Test(scaleout, open_refuses_text_after_the_plan)
{
    size_t len;
    char *t = edited("]}\n", "]}\n}", &len);
    refused_as_jansson_refuses(t, len);
    free(t);
}

Test(scaleout, open_names_lines_and_columns_of_an_indented_plan)
{
    size_t ntasks, len = 0;
    nf_error err;
    cr_assert_eq(make_plan(&ntasks, &err), NF_OK, "%s", err.message);
    char *text = read_text(g_plan, &len);
    json_t *root = json_loadb(text, len, 0, NULL);
    free(text);
    /* an indented plan opens as well ... */
    char *pretty = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    write_text(g_plan, pretty, strlen(pretty));
    nf_scaleout *s = NULL;
    cr_assert_eq(nf_scaleout_open(g_plan, &s, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_scaleout_task_count(s), 3);
    nf_scaleout_free(s);
    /* ... and a record broken on its 40th line from the end is placed there */
    size_t n = strlen(pretty), lines = 0, at = n;
    while (at > 0 && lines < 40)
        if (pretty[--at] == '\n') lines++;
    char *colon = strchr(pretty + at, ':');
    cr_assert_not_null(colon);
    *colon = ';';
    write_text(g_plan, pretty, n);
    refused_as_jansson_refuses(pretty, n);
    free(pretty);
    json_decref(root);
}

Test(scaleout, open_takes_any_object_records_and_refuses_unknown_members)
{
    size_t len;
    nf_error err;
    nf_scaleout *s = NULL;
    /* the records are for people and schedulers: a plan with anything in them is read as before */
    char *t = edited(",\"objects\":[{", ",\"objects\":[5,{", &len);
    cr_assert_eq(nf_scaleout_open(g_plan, &s, &err), NF_OK, "%s", err.message);
    nf_scaleout_free(s);
    free(t);
    /* a member this version does not write is a plan of another version, or an edited one */
    t = edited(",\"objects\":[{", ",\"x\":5,\"objects\":[{", &len);
    cr_assert_eq(nf_scaleout_open(g_plan, &s, &err), NF_ERR_INVALID, "opened");
    cr_assert(strstr(err.message, "'x': unknown member") && strstr(err.message, g_plan), "%s", err.message);
    free(t);
    t = edited("\"options\":{", "\"options\":{\"threads\":4,", &len);
    cr_assert_eq(nf_scaleout_open(g_plan, &s, &err), NF_ERR_INVALID, "opened");
    cr_assert(strstr(err.message, "conversion.options.'threads': unknown member"), "%s", err.message);
    free(t);
}

Test(scaleout, open_refuses_what_is_not_a_plan)
{
    nf_error err;
    nf_scaleout *s = NULL;
    write_text(g_plan, "[1,2]", 5);
    cr_assert_eq(nf_scaleout_open(g_plan, &s, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "not a JSON object"), "%s", err.message);
    write_text(g_plan, "not json", 8);
    refused_as_jansson_refuses("not json", 8);
    write_text(g_plan, "{\"ninfer_plan\":2}", 17);
    cr_assert_eq(nf_scaleout_open(g_plan, &s, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "a plan needs output"), "%s", err.message);
    /* a plan of version 1 recorded a command line: made again, never run */
    write_text(g_plan, "{\"ninfer_plan\":1}", 17);
    cr_assert_eq(nf_scaleout_open(g_plan, &s, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "version 1, which recorded a command line"), "%s", err.message);
    cr_assert(strstr(err.message, "make the plan again"), "%s", err.message);
    /* files without their lists of objects */
    size_t len;
    char *t = edited("\"objects\":[\"", "\"objectz\":[\"", &len);
    cr_assert_eq(nf_scaleout_open(g_plan, &s, &err), NF_ERR_INVALID, "opened");
    cr_assert(strstr(err.message, "files[0] has no list of objects"), "%s", err.message);
    free(t);
}

Test(scaleout, open_refuses_a_file_listing_what_is_not_an_id)
{
    size_t len;
    nf_error err;
    nf_scaleout *s = NULL;
    char *t = edited("\"objects\":[\"", "\"objects\":[7,\"", &len);
    cr_assert_eq(nf_scaleout_open(g_plan, &s, &err), NF_ERR_INVALID, "opened");
    cr_assert(strstr(err.message, "files[0].objects[0] is not an object id"), "%s", err.message);
    cr_assert(strstr(err.message, g_plan), "%s", err.message);
    free(t);
    /* a syntax error later in the text is named first, as when the whole text was parsed */
    t = edited("\"objects\":[\"", "\"objects\":[7,\"", &len);
    t[len - 2] = ',';
    write_text(g_plan, t, len);
    refused_as_jansson_refuses(t, len);
    free(t);
}

/* ---------------------------------------------------------------- running a plan
 * Every task and the assembly as library calls on the plan alone (no command line, no program):
 * the files are byte for byte those nf_plan_execute writes of the same plan and options. */
static void compare_files(const char *a, const char *b)
{
    size_t la = 0, lb = 0;
    uint8_t *x = sw_read_file(a, &la), *y = sw_read_file(b, &lb);
    cr_assert(x && y, "%s or %s missing", a, b);
    cr_assert(la == lb && memcmp(x, y, la) == 0, "%s differs from %s", a, b);
    free(x);
    free(y);
}

Test(scaleout, a_task_is_a_library_call)
{
    size_t ntasks = 0;
    nf_error err;
    g_body = BODY_BF16;
    cr_assert_eq(make_plan(&ntasks, &err), NF_OK, "%s", err.message);
    nf_scaleout *s = NULL;
    cr_assert_eq(nf_scaleout_open(g_plan, &s, &err), NF_OK, "%s", err.message);
    bool skipped = false;
    cr_assert_eq(nf_scaleout_task(s, 0, &skipped, &err), NF_ERR_USAGE, "a task before the rebuild");
    nf_scaleout_run run = {1, 1000, NULL, NULL, NULL}; /* a host's choices: the bytes never depend on them */
    cr_assert_eq(nf_scaleout_rebuild(s, &run, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_plan_object_count(nf_scaleout_conversion(s)), 14);
    for (size_t t = ntasks; t-- > 0;) {
        cr_assert_eq(nf_scaleout_task(s, t, &skipped, &err), NF_OK, "task %zu: %s", t, err.message);
        cr_assert(!skipped);
    }
    cr_assert_eq(nf_scaleout_assemble(s, true, &err), NF_OK, "%s", err.message);
    nf_scaleout_free(s);
    /* the same plan and options, one run, in a directory of its own */
    char *refdir = sw_path(pc_dir, "ref"), *ref = sw_path(refdir, "m.ninfer");
    cr_assert_eq(mkdir(refdir, 0755), 0);
    nf_recipe *r = NULL;
    nf_plan *p = build(&r);
    nf_convert_options opt = {0};
    opt.output = ref;
    opt.has_max_file_bytes = true;
    opt.max_file_bytes = 16384;
    opt.artifact_id = ARTIFACT_ID;
    cr_assert_eq(nf_plan_execute(p, &opt, &err), NF_OK, "%s", err.message);
    nf_plan_free(p);
    nf_recipe_free(r);
    size_t parts = 0;
    for (;; parts++) {
        char name[64];
        snprintf(name, sizeof name, parts ? "m.ninfer.part-%04zu" : "m.ninfer", parts);
        char *a = sw_path(refdir, name), *b = sw_path(pc_dir, name);
        bool there = access(a, F_OK) == 0;
        if (there) compare_files(a, b);
        else cr_assert_neq(access(b, F_OK), 0, "%s: a file the one run has not", b);
        free(a);
        free(b);
        if (!there) break;
    }
    cr_assert_gt(parts, 3);
    free(ref);
    free(refdir);
}

/* The plan's relative paths are its directory's: a rebuild elsewhere is a caller's mistake. */
Test(scaleout, rebuild_only_in_the_plans_directory)
{
    size_t ntasks = 0;
    nf_error err;
    cr_assert_eq(make_plan(&ntasks, &err), NF_OK, "%s", err.message);
    nf_scaleout *s = NULL;
    cr_assert_eq(nf_scaleout_open(g_plan, &s, &err), NF_OK, "%s", err.message);
    char *here = getcwd(NULL, 0);
    cr_assert_not_null(here);
    cr_assert_eq(chdir(pc_dir), 0);
    nf_status st = nf_scaleout_rebuild(s, NULL, &err);
    cr_assert_eq(chdir(here), 0);
    cr_assert_eq(st, NF_ERR_USAGE);
    cr_assert(strstr(err.message, "run it from there"), "%s", err.message);
    cr_assert_null(nf_scaleout_conversion(s));
    free(here);
    nf_scaleout_free(s);
}

/* A recipe edited in the plan is rebuilt as edited, and its task refused by the fingerprint; an
 * input's recorded digest that the file does not have is refused before any source is opened. */
Test(scaleout, rebuild_refuses_what_the_plan_no_longer_fits)
{
    size_t len;
    nf_error err;
    nf_scaleout *s = NULL;
    bool skipped;
    char *t = edited("format: q8_g32_fp16", "format: bf16", &len);
    cr_assert_eq(nf_scaleout_open(g_plan, &s, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_scaleout_rebuild(s, NULL, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_scaleout_task(s, 0, &skipped, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "now give another artifact than the plan's"), "%s", err.message);
    nf_scaleout_free(s);
    free(t);
    t = edited("\"inputs\":[", "\"inputs\":[", &len);
    char *digit = strstr(t, "\"head\":\"") + 8; /* inputs[0]'s first digit, another one */
    *digit = *digit == '0' ? '1' : '0';
    write_text(g_plan, t, len);
    cr_assert_eq(nf_scaleout_open(g_plan, &s, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_scaleout_rebuild(s, NULL, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "inputs[0]") && strstr(err.message, "changed since the plan was made"), "%s",
              err.message);
    nf_scaleout_free(s);
    free(t);
}
