/* The conversion pipeline end to end through the library (nf_plan_build, nf_plan_execute,
 * nf_plan_compare) on a small safetensors checkpoint written by the test:
 *   - atomic publish under failure: every open, read, write, sync, link and unlink of a run
 *     failed in turn (and ENOSPC and short writes): a system error naming a path, and nothing
 *     at all left in the output directory;
 *   - determinism: the same file set for any thread count and chunk size (fixed artifact_id);
 *   - the conversion report: one record per tensor object with its error statistics;
 *   - refusals: an existing output or report, an input as the output, cancellation;
 *   - nf_plan_compare against the produced artifact and against a copy with one byte flipped. */
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
#include "support/source_writer.h"
#include "support/test_float.h"

/* ---------------------------------------------------------------- small helpers */
static const uint8_t ARTIFACT_ID[16] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
                                        0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef};

static char *join(const char *dir, const char *name) { return sw_path(dir, name); }

static bool exists(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0;
}

/* Recursive removal (the support library's sw_rmtree is one level deep). */
static void rmtree(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
            char *p = join(dir, de->d_name);
            struct stat sb;
            if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode)) rmtree(p);
            else unlink(p);
            free(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* Names in dir, sorted, space separated (static buffer); *count receives how many. */
static const char *listing(const char *dir, size_t *count)
{
    static char buf[8192];
    buf[0] = '\0';
    *count = 0;
    struct dirent **names = NULL;
    int n = scandir(dir, &names, NULL, alphasort);
    cr_assert_geq(n, 0, "cannot list %s", dir);
    for (int i = 0; i < n; i++) {
        if (strcmp(names[i]->d_name, ".") != 0 && strcmp(names[i]->d_name, "..") != 0) {
            (*count)++;
            strncat(buf, names[i]->d_name, sizeof buf - strlen(buf) - 2);
            strncat(buf, " ", sizeof buf - strlen(buf) - 1);
        }
        free(names[i]);
    }
    free(names);
    return buf;
}

static void expect_empty_dir(const char *dir, const char *why)
{
    size_t n;
    const char *names = listing(dir, &n);
    cr_assert_eq(n, 0, "%s: left behind in %s: %s", why, dir, names);
}

/* Empties dir (keeps the directory itself). */
static void clear_dir(const char *dir)
{
    rmtree(dir);
    cr_assert_eq(mkdir(dir, 0700), 0, "mkdir %s", dir);
}

/* ---------------------------------------------------------------- the checkpoint */
/* Deterministic pseudo-random values in [-2, 2) (xorshift). */
static uint32_t rng_state;
static float next_value(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return (float)(rng_state >> 8) / (float)(1u << 24) * 4.0f - 2.0f;
}

typedef struct tensor_spec {
    const char *name;
    const char *dtype; /* "BF16" or "F32" */
    uint32_t rank;
    uint64_t shape[2];
} tensor_spec;

/* Odd shapes: partial groups, K not a multiple of 128, rank 1 tensors. */
static const tensor_spec TENSORS[] = {
    {"embed.weight", "BF16", 2, {50, 130}},        /* fp8 rows */
    {"blk.0.attn_q.weight", "BF16", 2, {9, 130}},  /* q4 */
    {"blk.0.attn_norm.weight", "F32", 1, {33, 0}}, /* fp32 from F32: exact */
    {"blk.0.ffn_up.weight", "BF16", 2, {40, 300}}, /* q8 */
    {"blk.0.ffn_down.weight", "BF16", 2, {5, 70}}, /* q8 */
    {"blk.0.bias", "BF16", 1, {33, 0}},            /* bf16 from BF16: exact */
    {"output_norm.weight", "BF16", 1, {130, 0}},   /* fp32 from BF16: exact */
    {"out.weight", "F32", 2, {20, 200}},           /* bf16 from F32: rounded */
};
#define NTENSORS (sizeof TENSORS / sizeof TENSORS[0])

typedef struct fixture {
    char *root;  /* the temp directory holding everything */
    char *ckpt;  /* root/ckpt: model.safetensors, config.json, tokenizer.json */
    char *out;   /* root/out: the output directory */
    char *entry; /* root/out/m.ninfer */
    char *recipe_path;
    nf_recipe *recipe;
    nf_plan *plan;
} fixture;

static fixture fx;

static void write_checkpoint(const char *dir)
{
    rng_state = 0x9E3779B9u;
    sw_st_tensor t[NTENSORS];
    void *data[NTENSORS];
    for (size_t i = 0; i < NTENSORS; i++) {
        const tensor_spec *s = &TENSORS[i];
        uint64_t n = s->shape[0] * (s->rank == 2 ? s->shape[1] : 1);
        bool f32 = strcmp(s->dtype, "F32") == 0;
        size_t bytes = (size_t)n * (f32 ? 4 : 2);
        uint8_t *p = malloc(bytes);
        cr_assert_not_null(p);
        for (uint64_t k = 0; k < n; k++) {
            uint32_t w = bits_of_f32(next_value());
            if (f32) {
                for (int b = 0; b < 4; b++) p[4 * k + (uint64_t)b] = (uint8_t)(w >> (8 * b));
            } else {
                uint16_t h = (uint16_t)(w >> 16); /* truncation: any bf16 word will do */
                p[2 * k] = (uint8_t)h;
                p[2 * k + 1] = (uint8_t)(h >> 8);
            }
        }
        t[i] = (sw_st_tensor){s->name, s->dtype, s->rank, {s->shape[0], s->shape[1]}, p, bytes};
        data[i] = p;
    }
    sw_buf b = {0};
    sw_st_file(&b, t, NTENSORS, "{\"format\":\"pt\"}");
    char *path = join(dir, "model.safetensors");
    cr_assert_eq(sw_write_file(path, b.data, b.len), 0);
    free(path);
    sw_free(&b);
    for (size_t i = 0; i < NTENSORS; i++) free(data[i]);
    cr_assert_eq(sw_write_text(dir, "config.json", "{\"architectures\": [\"TestForCausalLM\"], \"hidden_size\": 130}"),
                 0);
    cr_assert_eq(sw_write_text(dir, "tokenizer.json", "{\"version\": \"1.0\", \"model\": {\"type\": \"BPE\"}}"), 0);
}

/* q4 / q8 / fp8 / bf16 / fp32 rules; max_file_bytes 12288 splits the ~45 KB payload into an
 * entry and several parts. */
static char *recipe_text(const char *ckpt)
{
    static const char fmt[] = "recipe: 1\n"
                              "sources:\n"
                              "  base: %s\n"
                              "output:\n"
                              "  name: convert-test\n"
                              "  max_file_bytes: 12288\n"
                              "components:\n"
                              "  text:\n"
                              "    config: {from: base}\n"
                              "    resources: {tokenizer.json: base/tokenizer.json}\n"
                              "defaults: {format: bf16}\n"
                              "rules:\n"
                              "  - match: \"blk.*.attn_q.weight\"\n"
                              "    format: q4_g64_fp16\n"
                              "    method: grouped_absmax\n"
                              "  - match: [blk.0.ffn_up.weight, blk.0.ffn_down.weight]\n"
                              "    format: q8_g32_fp16\n"
                              "  - match: embed.weight\n"
                              "    format: fp8_e4m3fn_row_bf16\n"
                              "  - match: \"*norm*\"\n"
                              "    when: {rank: 1}\n"
                              "    format: fp32\n"
                              "  - match: out.weight\n"
                              "    format: bf16\n";
    size_t need = sizeof fmt + strlen(ckpt);
    char *s = malloc(need);
    cr_assert_not_null(s);
    snprintf(s, need, fmt, ckpt);
    return s;
}

static void fx_init(void)
{
    memset(&fx, 0, sizeof fx);
    nf_io_fault_reset();
    fx.root = sw_tempdir();
    cr_assert_not_null(fx.root);
    fx.ckpt = join(fx.root, "ckpt");
    fx.out = join(fx.root, "out");
    cr_assert_eq(mkdir(fx.ckpt, 0700), 0);
    cr_assert_eq(mkdir(fx.out, 0700), 0);
    fx.entry = join(fx.out, "m.ninfer");
    write_checkpoint(fx.ckpt);
    char *text = recipe_text(fx.ckpt);
    fx.recipe_path = join(fx.root, "recipe.yaml");
    cr_assert_eq(sw_write_text(fx.root, "recipe.yaml", text), 0);
    nf_error err;
    cr_assert_eq(nf_recipe_parse(text, strlen(text), fx.recipe_path, fx.root, &fx.recipe, &err), NF_OK, "%s",
                 err.message);
    free(text);
    cr_assert_eq(nf_plan_build(fx.recipe, &fx.plan, &err), NF_OK, "%s", err.message);
}

static void fx_fini(void)
{
    nf_io_fault_reset();
    nf_plan_free(fx.plan);
    nf_recipe_free(fx.recipe);
    if (fx.root) rmtree(fx.root);
    free(fx.root);
    free(fx.ckpt);
    free(fx.out);
    free(fx.entry);
    free(fx.recipe_path);
    memset(&fx, 0, sizeof fx);
}

static nf_convert_options options(const char *output)
{
    nf_convert_options o;
    memset(&o, 0, sizeof o);
    o.output = output;
    o.threads = 1;
    o.report = true;
    o.artifact_id = ARTIFACT_ID;
    return o;
}

static size_t tensor_objects(void)
{
    json_t *d = nf_plan_describe(fx.plan);
    size_t n = 0, i;
    json_t *o;
    json_array_foreach(json_object_get(d, "objects"), i, o)
        n += strcmp(json_string_value(json_object_get(o, "kind")), "tensor") == 0;
    json_decref(d);
    return n;
}

/* Every file of the artifact at entry (entry first), as listed by its directory. */
static size_t artifact_files(const char *entry, char ***paths)
{
    nf_artifact *a = NULL;
    nf_error err;
    cr_assert_eq(nf_artifact_open(entry, NF_READ_PREAD, &a, &err), NF_OK, "%s", err.message);
    size_t n = nf_artifact_file_count(a);
    *paths = calloc(n, sizeof **paths);
    const char *slash = strrchr(entry, '/');
    for (size_t i = 0; i < n; i++) {
        if (i == 0) {
            (*paths)[i] = strdup(entry);
        } else {
            char *dir = strndup(entry, (size_t)(slash - entry));
            (*paths)[i] = join(dir, nf_artifact_file(a, i)->path);
            free(dir);
        }
    }
    nf_artifact_close(a);
    return n;
}

static void free_paths(char **paths, size_t n)
{
    for (size_t i = 0; i < n; i++) free(paths[i]);
    free(paths);
}

TestSuite(convert, .init = fx_init, .fini = fx_fini, .timeout = 120);

/* ---------------------------------------------------------------- a clean run */
Test(convert, clean_run_is_a_valid_split_artifact)
{
    nf_convert_options o = options(fx.entry);
    nf_error err;
    cr_assert_eq(nf_plan_execute(fx.plan, &o, &err), NF_OK, "%s", err.message);
    char **paths;
    size_t n = artifact_files(fx.entry, &paths);
    cr_assert_geq(n, 4, "max_file_bytes 12288 must give an entry and at least 3 parts, got %zu files", n);
    size_t count;
    const char *names = listing(fx.out, &count);
    cr_assert_eq(count, n + 1, "the files and the report, nothing else: %s", names);
    free_paths(paths, n);
    nf_artifact *a = NULL;
    cr_assert_eq(nf_artifact_open(fx.entry, NF_READ_PREAD, &a, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_artifact_object_count(a), NTENSORS + 1, "every tensor and the tokenizer resource");
    const nf_object *q4 = nf_artifact_find(a, "blk.0.attn_q.weight");
    cr_assert_not_null(q4);
    cr_assert_str_eq(q4->format_name, "q4_g64_fp16");
    cr_assert_str_eq(nf_artifact_find(a, "embed.weight")->format_name, "fp8_e4m3fn_row_bf16");
    cr_assert_str_eq(nf_artifact_find(a, "blk.0.ffn_up.weight")->format_name, "q8_g32_fp16");
    cr_assert_str_eq(nf_artifact_find(a, "blk.0.attn_norm.weight")->format_name, "fp32");
    cr_assert_str_eq(nf_artifact_find(a, "out.weight")->format_name, "bf16");
    cr_assert_eq(memcmp(nf_artifact_id(a), ARTIFACT_ID, 16), 0);
    nf_artifact_close(a);
}

/* ---------------------------------------------------------------- fault injection */
static const char *const OP_NAMES[NF_IO_OP_COUNT] = {"open", "read", "write", "sync", "link", "unlink"};

/* Runs one clean conversion (counting calls per op) and returns the counts; the output
 * directory is emptied afterwards. */
static void clean_counts(const nf_convert_options *o, uint64_t counts[NF_IO_OP_COUNT])
{
    nf_error err;
    nf_io_fault_reset();
    cr_assert_eq(nf_plan_execute(fx.plan, o, &err), NF_OK, "%s", err.message);
    for (int op = 0; op < NF_IO_OP_COUNT; op++) counts[op] = nf_io_calls((nf_io_op)op);
    nf_io_fault_reset();
    clear_dir(fx.out);
}

/* Fails call n of op for n = 1 .. the clean run's count: each run must fail with a system error
 * naming a path and leave the output directory empty. */
static void sweep(nf_io_op op, int errnum, unsigned threads, uint64_t chunk_values)
{
    nf_convert_options o = options(fx.entry);
    o.threads = threads;
    o.chunk_values = chunk_values;
    /* warm-up: process-wide one-time work (the umask read of the writer) stays out of the counts */
    uint64_t counts[NF_IO_OP_COUNT];
    clean_counts(&o, counts);
    clean_counts(&o, counts);
    cr_assert_gt(counts[op], 0, "a conversion makes no %s call", OP_NAMES[op]);
    nf_status want = errnum == ENOMEM ? NF_ERR_NOMEM : NF_ERR_IO;
    for (uint64_t n = 1; n <= counts[op]; n++) {
        nf_error err;
        memset(&err, 0, sizeof err);
        nf_io_fault_reset();
        nf_io_fault_arm(op, n, errnum);
        nf_status st = nf_plan_execute(fx.plan, &o, &err);
        uint64_t calls = nf_io_calls(op);
        nf_io_fault_reset();
        cr_assert_geq(calls, n, "%s %llu/%llu: the fault was never reached (%llu calls)", OP_NAMES[op],
                      (unsigned long long)n, (unsigned long long)counts[op], (unsigned long long)calls);
        cr_assert_neq(st, NF_OK, "%s %llu/%llu (errno %d): the conversion succeeded", OP_NAMES[op],
                      (unsigned long long)n, (unsigned long long)counts[op], errnum);
        cr_assert_eq(st, want, "%s %llu/%llu (errno %d, %u threads): status %s, expected %s: %s", OP_NAMES[op],
                     (unsigned long long)n, (unsigned long long)counts[op], errnum, threads, nf_status_name(st),
                     nf_status_name(want), err.message);
        cr_assert_not_null(strstr(err.message, fx.root), "%s %llu: the message names no path: %s", OP_NAMES[op],
                           (unsigned long long)n, err.message);
        size_t left;
        const char *names = listing(fx.out, &left);
        cr_assert_eq(left, 0, "%s %llu/%llu (errno %d, %u threads; %s): left behind: %s", OP_NAMES[op],
                     (unsigned long long)n, (unsigned long long)counts[op], errnum, threads, err.message, names);
    }
    /* and the plan still converts cleanly afterwards */
    nf_error err;
    cr_assert_eq(nf_plan_execute(fx.plan, &o, &err), NF_OK, "%s", err.message);
}

Test(convert, fault_every_open) { sweep(NF_IO_OPEN, EMFILE, 1, 0); }
Test(convert, fault_every_read) { sweep(NF_IO_READ, EIO, 1, 0); }
Test(convert, fault_every_write) { sweep(NF_IO_WRITE, EIO, 1, 0); }
Test(convert, fault_every_write_enospc) { sweep(NF_IO_WRITE, ENOSPC, 1, 0); }
Test(convert, fault_every_short_write) { sweep(NF_IO_WRITE, 0, 1, 0); }
Test(convert, fault_every_sync) { sweep(NF_IO_SYNC, EIO, 1, 0); }
Test(convert, fault_every_link) { sweep(NF_IO_LINK, EIO, 1, 0); }
Test(convert, fault_every_unlink) { sweep(NF_IO_UNLINK, EIO, 1, 0); }
Test(convert, fault_every_read_enomem) { sweep(NF_IO_READ, ENOMEM, 1, 0); }
/* Many small chunks on several threads: a failing write must still be reported as the disk
 * error it is, whichever worker sees the writer fail first. */
Test(convert, fault_every_write_threads) { sweep(NF_IO_WRITE, ENOSPC, 4, 500); }
Test(convert, fault_every_read_threads) { sweep(NF_IO_READ, EIO, 4, 500); }

/* docs/security.md 1.3: file I/O behind one shim so that tests can fail the N-th write, fsync or rename.
 * The report is a published file too: writing it must add shim calls (its temp file, its
 * write, its sync, its rename), or its failure paths can never be injected. */
Test(convert, report_publication_goes_through_the_io_shim)
{
    nf_convert_options with = options(fx.entry), without = options(fx.entry);
    without.report = false;
    uint64_t on[NF_IO_OP_COUNT], off[NF_IO_OP_COUNT];
    clean_counts(&with, on); /* warm-up */
    clean_counts(&with, on);
    clean_counts(&without, off);
    cr_assert_gt(on[NF_IO_OPEN], off[NF_IO_OPEN], "the report's temp file is not created through the shim");
    cr_assert_gt(on[NF_IO_WRITE], off[NF_IO_WRITE], "the report is not written through the shim");
    cr_assert_gt(on[NF_IO_SYNC], off[NF_IO_SYNC], "the report is not synced through the shim");
    cr_assert_gt(on[NF_IO_LINK], off[NF_IO_LINK], "the report is not renamed through the shim");
}

/* With force (publication by rename instead of link): every failure still leaves nothing. */
Test(convert, fault_with_force_leaves_nothing)
{
    nf_convert_options o = options(fx.entry);
    o.force = true;
    uint64_t counts[NF_IO_OP_COUNT];
    clean_counts(&o, counts);
    clean_counts(&o, counts);
    for (int op = 0; op < NF_IO_OP_COUNT; op++) {
        for (uint64_t n = 1; n <= counts[op]; n++) {
            nf_error err;
            nf_io_fault_reset();
            nf_io_fault_arm((nf_io_op)op, n, EIO);
            nf_status st = nf_plan_execute(fx.plan, &o, &err);
            nf_io_fault_reset();
            cr_assert_eq(st, NF_ERR_IO, "%s %llu: %s", OP_NAMES[op], (unsigned long long)n, err.message);
            expect_empty_dir(fx.out, OP_NAMES[op]);
        }
    }
}

/* Every file in dir, name and bytes, concatenated (for "byte for byte the same set"). */
static char *dir_image(const char *dir, size_t *len)
{
    size_t n;
    char *names = strdup(listing(dir, &n));
    size_t cap = strlen(names) + 1, used = 0;
    char *img = malloc(cap);
    memcpy(img, names, cap);
    used = cap;
    for (char *save = NULL, *t = strtok_r(names, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        char *p = join(dir, t);
        size_t flen = 0;
        uint8_t *d = sw_read_file(p, &flen);
        cr_assert_not_null(d, "%s", p);
        img = realloc(img, used + flen);
        memcpy(img + used, d, flen);
        used += flen;
        free(d);
        free(p);
    }
    free(names);
    *len = used;
    return img;
}

/* With force over an existing artifact and its report (the known hole: a failure after the
 * artifact is published, renaming the report): every failure puts the whole old set back byte
 * for byte, report included, with nothing else left; only a failed removal of a kept file in
 * the commit succeeds, leaving that ".old" file beside the complete new set.  Also with fewer
 * parts (the old surplus parts go on success, come back on failure) and without a report (the
 * old report goes with the old artifact). */
Test(convert, fault_with_force_over_an_existing_set_restores_it)
{
    static const uint8_t OTHER_ID[16] = {0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10,
                                         0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10};
    for (int variant = 0; variant < 3; variant++) {
        nf_convert_options old = options(fx.entry), o = options(fx.entry);
        o.force = true;
        o.artifact_id = OTHER_ID;
        if (variant == 1) { /* fewer parts */
            o.has_max_file_bytes = true;
            o.max_file_bytes = 0;
        }
        if (variant == 2) o.report = false;
        nf_error err;
        clear_dir(fx.out);
        cr_assert_eq(nf_plan_execute(fx.plan, &old, &err), NF_OK, "%s", err.message);
        size_t old_len;
        char *old_img = dir_image(fx.out, &old_len);
        uint64_t counts[NF_IO_OP_COUNT];
        clean_counts(&o, counts); /* warm-up (the directory is emptied) */
        cr_assert_eq(nf_plan_execute(fx.plan, &old, &err), NF_OK, "%s", err.message);
        nf_io_fault_reset();
        cr_assert_eq(nf_plan_execute(fx.plan, &o, &err), NF_OK, "%s", err.message);
        for (int op = 0; op < NF_IO_OP_COUNT; op++) counts[op] = nf_io_calls((nf_io_op)op);
        size_t n;
        const char *names = listing(fx.out, &n);
        char **paths;
        size_t files = artifact_files(fx.entry, &paths);
        free_paths(paths, files);
        cr_assert_eq(n, files + (variant != 2), "variant %d: a clean replacement left %s", variant, names);
        for (int op = 0; op < NF_IO_OP_COUNT; op++) {
            uint64_t step = op == NF_IO_READ || op == NF_IO_WRITE ? 7 : 1;
            for (uint64_t k = 1; k <= counts[op]; k += (k + 8 < counts[op] ? step : 1)) {
                clear_dir(fx.out);
                cr_assert_eq(nf_plan_execute(fx.plan, &old, &err), NF_OK, "%s", err.message);
                nf_io_fault_reset();
                nf_io_fault_arm((nf_io_op)op, k, EIO);
                nf_status st = nf_plan_execute(fx.plan, &o, &err);
                nf_io_fault_reset();
                names = listing(fx.out, &n);
                if (st == NF_OK) {
                    cr_assert_eq(op, NF_IO_UNLINK, "variant %d %s %llu: succeeded", variant, OP_NAMES[op],
                                 (unsigned long long)k);
                    cr_assert_not_null(strstr(names, ".old "), "variant %d unlink %llu: %s", variant,
                                       (unsigned long long)k, names);
                    continue;
                }
                cr_assert_eq(st, NF_ERR_IO, "variant %d %s %llu: %s", variant, OP_NAMES[op], (unsigned long long)k,
                             err.message);
                size_t len;
                char *img = dir_image(fx.out, &len);
                cr_assert(len == old_len && memcmp(img, old_img, len) == 0,
                          "variant %d %s %llu/%llu (%s): the old set is not back as it was: %s", variant, OP_NAMES[op],
                          (unsigned long long)k, (unsigned long long)counts[op], err.message, names);
                free(img);
            }
        }
        free(old_img);
    }
}

/* ---------------------------------------------------------------- determinism */
Test(convert, same_bytes_for_any_threads_and_chunk_size)
{
    static const unsigned threads[] = {1, 2, 3, 8};
    static const uint64_t chunks[] = {1, 7, 1000, 1u << 20};
    nf_error err;
    nf_convert_options o = options(fx.entry);
    o.report = false;
    cr_assert_eq(nf_plan_execute(fx.plan, &o, &err), NF_OK, "%s", err.message);
    char **ref_paths;
    size_t nref = artifact_files(fx.entry, &ref_paths);
    cr_assert_geq(nref, 4);
    uint8_t **ref = calloc(nref, sizeof *ref);
    size_t *ref_len = calloc(nref, sizeof *ref_len);
    for (size_t i = 0; i < nref; i++) cr_assert_not_null(ref[i] = sw_read_file(ref_paths[i], &ref_len[i]));
    clear_dir(fx.out);
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++)
        for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
            o.threads = threads[t];
            o.chunk_values = chunks[c];
            cr_assert_eq(nf_plan_execute(fx.plan, &o, &err), NF_OK, "threads %u chunk %llu: %s", threads[t],
                         (unsigned long long)chunks[c], err.message);
            size_t count;
            const char *names = listing(fx.out, &count);
            cr_assert_eq(count, nref, "threads %u chunk %llu: %s", threads[t], (unsigned long long)chunks[c], names);
            for (size_t i = 0; i < nref; i++) {
                size_t len;
                uint8_t *got = sw_read_file(ref_paths[i], &len);
                cr_assert_not_null(got, "%s missing", ref_paths[i]);
                cr_assert(len == ref_len[i] && memcmp(got, ref[i], len) == 0, "threads %u chunk %llu: %s differs",
                          threads[t], (unsigned long long)chunks[c], ref_paths[i]);
                free(got);
            }
            clear_dir(fx.out);
        }
    for (size_t i = 0; i < nref; i++) free(ref[i]);
    free(ref);
    free(ref_len);
    free_paths(ref_paths, nref);
}

/* ---------------------------------------------------------------- the report */
static json_t *find_record(json_t *objects, const char *id)
{
    size_t i;
    json_t *o;
    json_array_foreach(objects, i, o) if (strcmp(json_string_value(json_object_get(o, "object")), id) == 0) return o;
    return NULL;
}

Test(convert, report_holds_error_statistics_per_tensor)
{
    nf_error err;
    nf_convert_options o = options(fx.entry);
    cr_assert_eq(nf_plan_execute(fx.plan, &o, &err), NF_OK, "%s", err.message);
    char *rp = join(fx.out, "m.ninfer.conversion.json");
    json_error_t je;
    json_t *doc = json_load_file(rp, JSON_REJECT_DUPLICATES, &je);
    cr_assert_not_null(doc, "%s: %s", rp, je.text);
    json_t *objects = json_object_get(doc, "objects");
    cr_assert(json_is_array(objects));
    cr_assert_eq(json_array_size(objects), tensor_objects(), "one record per tensor object");
    cr_assert_eq(json_array_size(objects), NTENSORS);
    for (size_t i = 0; i < NTENSORS; i++) {
        json_t *r = find_record(objects, TENSORS[i].name);
        cr_assert_not_null(r, "no record for %s", TENSORS[i].name);
        cr_assert(json_is_number(json_object_get(r, "max_abs_error")), "%s: max_abs_error", TENSORS[i].name);
        cr_assert(json_is_number(json_object_get(r, "rmse")), "%s: rmse", TENSORS[i].name);
        json_t *snr = json_object_get(r, "snr_db");
        cr_assert(json_is_number(snr) || json_is_null(snr), "%s: snr_db", TENSORS[i].name);
        cr_assert_gt(json_integer_value(json_object_get(r, "values_compared")), 0);
    }
    /* exact objects: fp32 from F32, fp32 from BF16, bf16 from BF16 */
    static const char *const exact[] = {"blk.0.attn_norm.weight", "output_norm.weight", "blk.0.bias"};
    for (size_t i = 0; i < 3; i++) {
        json_t *r = find_record(objects, exact[i]);
        cr_assert_eq(json_number_value(json_object_get(r, "max_abs_error")), 0.0, "%s", exact[i]);
        cr_assert_eq(json_number_value(json_object_get(r, "rmse")), 0.0, "%s", exact[i]);
        cr_assert(json_is_null(json_object_get(r, "snr_db")), "%s: an exact object has snr_db null", exact[i]);
    }
    /* lossy objects: a finite SNR, and q8 beats q4 */
    json_t *q4 = find_record(objects, "blk.0.attn_q.weight"), *q8 = find_record(objects, "blk.0.ffn_up.weight");
    cr_assert_str_eq(json_string_value(json_object_get(q4, "format")), "q4_g64_fp16");
    cr_assert_str_eq(json_string_value(json_object_get(q4, "method")), "grouped_absmax");
    cr_assert_gt(json_number_value(json_object_get(q4, "max_abs_error")), 0.0);
    cr_assert(json_is_real(json_object_get(q4, "snr_db")));
    cr_assert_gt(json_number_value(json_object_get(q8, "snr_db")), json_number_value(json_object_get(q4, "snr_db")));
    json_t *fp8 = find_record(objects, "embed.weight"), *bf = find_record(objects, "out.weight");
    cr_assert(json_is_real(json_object_get(fp8, "snr_db")));
    cr_assert(json_is_real(json_object_get(bf, "snr_db")), "bf16 from F32 rounds");
    cr_assert_str_eq(json_string_value(json_object_get(doc, "artifact_id")), "0123456789abcdef0123456789abcdef");
    json_decref(doc);
    free(rp);
}

/* The error statistics are the same for any thread count (test_convert_report.c also varies the
 * chunk size and the SIMD variant). */
Test(convert, report_figures_do_not_depend_on_threads)
{
    static const unsigned threads[] = {1, 3, 8};
    char *rp = join(fx.out, "m.ninfer.conversion.json");
    json_t *first = NULL;
    for (size_t t = 0; t < 3; t++) {
        nf_error err;
        nf_convert_options o = options(fx.entry);
        o.threads = threads[t];
        o.chunk_values = 7;
        cr_assert_eq(nf_plan_execute(fx.plan, &o, &err), NF_OK, "%s", err.message);
        json_error_t je;
        json_t *doc = json_load_file(rp, 0, &je);
        cr_assert_not_null(doc, "%s", je.text);
        json_t *objs = json_incref(json_object_get(doc, "objects"));
        json_decref(doc);
        if (!first) first = objs;
        else {
            cr_assert(json_equal(first, objs), "threads %u: the report's objects differ from 1 thread's", threads[t]);
            json_decref(objs);
        }
        clear_dir(fx.out);
    }
    json_decref(first);
    free(rp);
}

Test(convert, no_report_when_disabled)
{
    nf_error err;
    nf_convert_options o = options(fx.entry);
    o.report = false;
    cr_assert_eq(nf_plan_execute(fx.plan, &o, &err), NF_OK, "%s", err.message);
    char *rp = join(fx.out, "m.ninfer.conversion.json");
    cr_assert(!exists(rp), "no report file");
    cr_assert(exists(fx.entry));
    free(rp);
}

Test(convert, existing_report_without_force_is_refused)
{
    nf_error err;
    cr_assert_eq(sw_write_text(fx.out, "m.ninfer.conversion.json", "old report"), 0);
    nf_convert_options o = options(fx.entry);
    cr_assert_neq(nf_plan_execute(fx.plan, &o, &err), NF_OK);
    cr_assert_not_null(strstr(err.message, "m.ninfer.conversion.json"), "%s", err.message);
    size_t count;
    const char *names = listing(fx.out, &count);
    cr_assert_eq(count, 1, "nothing written beside the old report: %s", names);
    char *rp = join(fx.out, "m.ninfer.conversion.json");
    size_t len;
    uint8_t *d = sw_read_file(rp, &len);
    cr_assert(len == 10 && memcmp(d, "old report", 10) == 0, "the old report is untouched");
    free(d);
    /* with force both are written */
    o.force = true;
    cr_assert_eq(nf_plan_execute(fx.plan, &o, &err), NF_OK, "%s", err.message);
    d = sw_read_file(rp, &len);
    cr_assert(len > 10 && d[0] == '{', "the report was replaced");
    free(d);
    free(rp);
}

/* ---------------------------------------------------------------- refusals */
Test(convert, existing_output_without_force_is_refused)
{
    nf_error err;
    cr_assert_eq(sw_write_text(fx.out, "m.ninfer", "keep me"), 0);
    nf_convert_options o = options(fx.entry);
    nf_status st = nf_plan_execute(fx.plan, &o, &err);
    cr_assert_neq(st, NF_OK);
    cr_assert_not_null(strstr(err.message, fx.entry), "%s", err.message);
    size_t count;
    const char *names = listing(fx.out, &count);
    cr_assert_eq(count, 1, "only the existing file remains: %s", names);
    size_t len;
    uint8_t *d = sw_read_file(fx.entry, &len);
    cr_assert(len == 7 && memcmp(d, "keep me", 7) == 0, "the existing output is untouched");
    free(d);
    /* an existing part is an existing output too */
    cr_assert_eq(unlink(fx.entry), 0);
    cr_assert_eq(sw_write_text(fx.out, "m.ninfer.part-0002", "old part"), 0);
    cr_assert_neq(nf_plan_execute(fx.plan, &o, &err), NF_OK);
    names = listing(fx.out, &count);
    cr_assert_eq(count, 1, "%s", names);
    /* force replaces */
    o.force = true;
    cr_assert_eq(sw_write_text(fx.out, "m.ninfer", "keep me"), 0);
    cr_assert_eq(nf_plan_execute(fx.plan, &o, &err), NF_OK, "%s", err.message);
    nf_artifact *a = NULL;
    cr_assert_eq(nf_artifact_open(fx.entry, NF_READ_PREAD, &a, &err), NF_OK, "%s", err.message);
    nf_artifact_close(a);
}

/* The output (or its report) is never an input, --force or not; nothing is written. */
static void expect_input_refused(const char *output, bool report)
{
    size_t before_len;
    uint8_t *before = sw_read_file(output, &before_len);
    cr_assert_not_null(before);
    nf_error err;
    memset(&err, 0, sizeof err);
    nf_convert_options o = options(output);
    o.force = true;
    o.report = report;
    nf_status st = nf_plan_execute(fx.plan, &o, &err);
    cr_assert_eq(st, NF_ERR_USAGE, "%s as the output: %s (%s)", output, nf_status_name(st),
                 st == NF_OK ? "it was overwritten" : err.message);
    size_t len;
    uint8_t *after = sw_read_file(output, &len);
    cr_assert(after && len == before_len && memcmp(before, after, len) == 0, "%s was modified", output);
    free(before);
    free(after);
    size_t count;
    const char *names = listing(fx.ckpt, &count);
    cr_assert_eq(count, 3, "nothing new beside the inputs: %s", names);
    expect_empty_dir(fx.out, "refused");
}

Test(convert, checkpoint_file_as_output_is_refused)
{
    char *st = join(fx.ckpt, "model.safetensors");
    expect_input_refused(st, true);
    expect_input_refused(st, false);
    free(st);
}

Test(convert, resource_as_output_is_refused)
{
    char *tok = join(fx.ckpt, "tokenizer.json");
    expect_input_refused(tok, false);
    free(tok);
}

Test(convert, recipe_as_output_is_refused)
{
    nf_error err;
    nf_convert_options o = options(fx.recipe_path);
    o.force = true;
    o.report = false;
    cr_assert_eq(nf_plan_execute(fx.plan, &o, &err), NF_ERR_USAGE, "%s", err.message);
}

/* config.json is read by the plan (the component's config): it is an input of the conversion. */
Test(convert, checkpoint_config_as_output_is_refused)
{
    char *cfg = join(fx.ckpt, "config.json");
    expect_input_refused(cfg, false);
    free(cfg);
}

/* A sharded checkpoint named by its directory: the index (read to find the shards) and every
 * shard are inputs. */
Test(convert, sharded_checkpoint_index_as_output_is_refused)
{
    char *dir = join(fx.root, "sharded");
    cr_assert_eq(mkdir(dir, 0700), 0);
    static const uint16_t a[4] = {0x3F80, 0x4000, 0x4040, 0x4080};
    static const uint32_t c[3] = {0x3F800000, 0, 0x40A00000};
    sw_st_tensor s1[1] = {{"model.a.weight", "BF16", 2, {2, 2}, a, sizeof a}};
    sw_st_tensor s2[1] = {{"model.c.weight", "F32", 1, {3}, c, sizeof c}};
    sw_buf b = {0};
    char *p1 = join(dir, "model-00001-of-00002.safetensors"), *p2 = join(dir, "model-00002-of-00002.safetensors");
    sw_st_file(&b, s1, 1, NULL);
    cr_assert_eq(sw_write_file(p1, b.data, b.len), 0);
    b.len = 0;
    sw_st_file(&b, s2, 1, NULL);
    cr_assert_eq(sw_write_file(p2, b.data, b.len), 0);
    sw_free(&b);
    cr_assert_eq(sw_write_text(dir, "model.safetensors.index.json",
                               "{\"metadata\":{\"total_size\":20},\"weight_map\":{\"model.a.weight\":"
                               "\"model-00001-of-00002.safetensors\",\"model.c.weight\":"
                               "\"model-00002-of-00002.safetensors\"}}"),
                 0);
    char text[1024];
    snprintf(text, sizeof text, "recipe: 1\nsources:\n  base: %s\ndefaults: {format: fp32}\n", dir);
    nf_recipe *r = NULL;
    nf_plan *p = NULL;
    nf_error err;
    cr_assert_eq(nf_recipe_parse(text, strlen(text), "<memory>", fx.root, &r, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_plan_build(r, &p, &err), NF_OK, "%s", err.message);
    const char *const inputs[] = {p2, "model.safetensors.index.json"};
    for (size_t i = 0; i < 2; i++) {
        char *out = i ? join(dir, inputs[i]) : strdup(inputs[i]);
        size_t before_len, len;
        uint8_t *before = sw_read_file(out, &before_len);
        nf_convert_options o = options(out);
        o.force = true;
        o.report = false;
        nf_status st = nf_plan_execute(p, &o, &err);
        uint8_t *after = sw_read_file(out, &len);
        cr_assert_eq(st, NF_ERR_USAGE, "%s as the output: %s", out, nf_status_name(st));
        cr_assert(after && len == before_len && memcmp(before, after, len) == 0, "%s was overwritten", out);
        free(before);
        free(after);
        free(out);
    }
    nf_plan_free(p);
    nf_recipe_free(r);
    free(p1);
    free(p2);
    free(dir);
}

Test(convert, cancel_before_execute_publishes_nothing)
{
    nf_error err;
    volatile int cancel = 1;
    nf_convert_options o = options(fx.entry);
    o.cancel = &cancel;
    nf_status st = nf_plan_execute(fx.plan, &o, &err);
    cr_assert_neq(st, NF_OK, "a cancelled conversion must fail");
    expect_empty_dir(fx.out, "cancelled");
    o.report = false;
    st = nf_plan_execute(fx.plan, &o, &err);
    cr_assert_neq(st, NF_OK);
    expect_empty_dir(fx.out, "cancelled, no report");
}

static void cancel_on_progress(void *ctx, const nf_convert_progress *p)
{
    (void)p;
    *(volatile int *)ctx = 1;
}

Test(convert, cancel_during_execute_publishes_nothing)
{
    nf_error err;
    volatile int cancel = 0;
    nf_convert_options o = options(fx.entry);
    o.threads = 2;
    o.chunk_values = 1;
    o.cancel = &cancel;
    o.progress = cancel_on_progress;
    o.progress_ctx = (void *)&cancel;
    nf_status st = nf_plan_execute(fx.plan, &o, &err);
    cr_assert_neq(st, NF_OK, "a cancelled conversion must fail");
    expect_empty_dir(fx.out, "cancelled while running");
}

/* ---------------------------------------------------------------- compare */
typedef struct diffs {
    size_t n;
    char ids[8][256];
    char msgs[8][512];
} diffs;

static void collect(void *ctx, const char *object, const char *message)
{
    diffs *d = ctx;
    if (d->n < 8) {
        snprintf(d->ids[d->n], sizeof d->ids[0], "%s", object);
        snprintf(d->msgs[d->n], sizeof d->msgs[0], "%s", message);
    }
    d->n++;
}

static size_t compare_with(const char *entry, diffs *d)
{
    nf_error err;
    nf_artifact *a = NULL;
    cr_assert_eq(nf_artifact_open(entry, NF_READ_PREAD, &a, &err), NF_OK, "%s", err.message);
    size_t differing = 99;
    memset(d, 0, sizeof *d);
    cr_assert_eq(nf_plan_compare(fx.plan, a, 3, collect, d, &differing, &err), NF_OK, "%s", err.message);
    nf_artifact_close(a);
    cr_assert_eq(differing, d->n, "the count matches the reports");
    return differing;
}

/* Flips byte `at` of object id in the artifact at entry (whichever file holds it). */
static void flip_object_byte(const char *entry, const char *id, uint64_t at)
{
    nf_error err;
    nf_artifact *a = NULL;
    cr_assert_eq(nf_artifact_open(entry, NF_READ_PREAD, &a, &err), NF_OK, "%s", err.message);
    const nf_object *o = nf_artifact_find(a, id);
    cr_assert_not_null(o);
    cr_assert_lt(at, o->bytes);
    uint64_t logical = o->offset + at;
    size_t fi = 0;
    for (size_t i = 0; i < nf_artifact_file_count(a); i++) {
        const nf_file_entry *f = nf_artifact_file(a, i);
        if (logical >= f->logical_start && logical < f->logical_start + f->payload_bytes) fi = i;
    }
    const nf_file_entry *f = nf_artifact_file(a, fi);
    uint64_t file_off = (fi == 0 ? nf_artifact_entry_payload_start(a) : NF_PAGE_BYTES) + (logical - f->logical_start);
    char *path;
    if (fi == 0) {
        path = strdup(entry);
    } else {
        char *dir = strndup(entry, (size_t)(strrchr(entry, '/') - entry));
        path = join(dir, f->path);
        free(dir);
    }
    nf_artifact_close(a);
    size_t len;
    uint8_t *d = sw_read_file(path, &len);
    cr_assert_not_null(d);
    cr_assert_lt(file_off, len);
    d[file_off] ^= 0x10;
    cr_assert_eq(sw_write_file(path, d, len), 0);
    free(d);
    free(path);
}

Test(convert, compare_finds_exactly_the_changed_object)
{
    nf_error err;
    nf_convert_options o = options(fx.entry);
    o.report = false;
    cr_assert_eq(nf_plan_execute(fx.plan, &o, &err), NF_OK, "%s", err.message);
    diffs d;
    cr_assert_eq(compare_with(fx.entry, &d), 0, "the artifact just written: %s %s", d.ids[0], d.msgs[0]);

    /* a copy of the file set with one payload byte of one object flipped */
    char *copy = join(fx.root, "copy");
    cr_assert_eq(mkdir(copy, 0700), 0);
    char **paths;
    size_t n = artifact_files(fx.entry, &paths);
    for (size_t i = 0; i < n; i++) {
        size_t len;
        uint8_t *data = sw_read_file(paths[i], &len);
        cr_assert_not_null(data);
        char *dst = join(copy, strrchr(paths[i], '/') + 1);
        cr_assert_eq(sw_write_file(dst, data, len), 0);
        free(dst);
        free(data);
    }
    free_paths(paths, n);
    char *copy_entry = join(copy, "m.ninfer");
    cr_assert_eq(compare_with(copy_entry, &d), 0, "an exact copy");

    static const struct {
        const char *id;
        uint64_t at;
    } flips[] = {{"out.weight", 4321}, {"blk.0.attn_q.weight", 3}, {"embed.weight", 17}};
    for (size_t k = 0; k < sizeof flips / sizeof flips[0]; k++) {
        flip_object_byte(copy_entry, flips[k].id, flips[k].at);
        cr_assert_eq(compare_with(copy_entry, &d), 1, "one flipped byte in %s: %zu objects reported (%s)", flips[k].id,
                     d.n, d.ids[0]);
        cr_assert_str_eq(d.ids[0], flips[k].id);
        char want[64];
        snprintf(want, sizeof want, "first at object byte %llu", (unsigned long long)flips[k].at);
        cr_assert_not_null(strstr(d.msgs[0], want), "%s", d.msgs[0]);
        flip_object_byte(copy_entry, flips[k].id, flips[k].at); /* restore */
        cr_assert_eq(compare_with(copy_entry, &d), 0);
    }
    free(copy_entry);
    free(copy);
}
