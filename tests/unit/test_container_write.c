/* The writer: upstream byte images (every upstream artifact rewritten through our writer is
 * identical byte for byte; a directory with non-ASCII IDs and floats against text written out
 * by hand), docs/vectors.md items 1-3, the JSON reserve across a page boundary, pieces written in
 * any order, coverage errors, refusal of existing destinations, fault injection at every
 * write/sync/link/open/read/unlink of a split write (nothing left behind), random round trips
 * across parts, and metadata.checksums against XXH3 computed here with libxxhash directly. */
#include "test_container_util.h"
#include "outputs/out_names.h"

#include <pthread.h>
#include <xxhash.h>

static const uint8_t ID[16] = {0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe,
                               0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef};

static nf_geometry geo(const char *format, const uint64_t *shape, uint32_t rank)
{
    const nf_format *f = nf_format_lookup(format);
    cr_assert_not_null(f);
    const nf_layout *l = nf_layout_lookup(f->default_layout);
    nf_geometry g;
    nf_error err;
    cr_assert_eq(nf_geometry_init(&g, l, f, rank, shape, 1, &err), NF_OK, "%s", err.message);
    return g;
}

/* Expects NF_OK; `err` is the caller's nf_error the expression filled in. */
#define OK(expr)                                                         \
    do {                                                                 \
        nf_status s_ = (expr);                                           \
        cr_assert_eq(s_, NF_OK, "%s -> %d: %s", #expr, s_, err.message); \
    } while (0)

static nf_writer *create(const char *path, uint64_t max_file_bytes, bool checksums, const uint8_t *id)
{
    nf_writer_options opt = {max_file_bytes, id, false, checksums};
    nf_writer *w = NULL;
    nf_error err;
    OK(nf_writer_create(path, &opt, &w, &err));
    return w;
}

static void write_obj(nf_writer *w, size_t index, const void *data, size_t len)
{
    nf_error err;
    OK(nf_writer_write(w, index, 0, data, len, &err));
}

/* ---------------------------------------------------------------- upstream byte images */
/* Members given a record at a time (nf_writer_set_member_records): the members of an object,
 * from a cursor that starts again at i = 0. */
typedef struct records_of {
    const json_t *object;
    void *iter;
} records_of;

static nf_status next_record(void *ctx, size_t i, const char **key, json_t **value, nf_error *err)
{
    (void)err;
    records_of *r = ctx;
    r->iter = i == 0 ? json_object_iter((json_t *)r->object) : json_object_iter_next((json_t *)r->object, r->iter);
    *value = r->iter ? json_incref(json_object_iter_value(r->iter)) : NULL;
    *key = r->iter ? json_object_iter_key(r->iter) : NULL;
    return NF_OK;
}

/* mode 0: each member as one tree; 1: components, bindings and provenance as records only;
 * 2: as a head of every member but the last and, when the last is an object, its members as
 * records under its name. */
static void set_members(nf_writer *w, const json_t *root, int mode, records_of *rec)
{
    nf_error err;
    static const char *const members[] = {"components", "bindings", "uses", "metadata", "provenance"};
    for (size_t m = 0; m < 5; m++) {
        json_t *v = json_object_get(root, members[m]);
        if (!v) continue;
        bool by_records = mode && (m == 0 || m == 1 || m == 4);
        if (!by_records) {
            OK(nf_writer_set_member(w, members[m], json_deep_copy(v), &err));
            continue;
        }
        json_t *head = json_object();
        const char *last = NULL, *k;
        json_t *x;
        json_object_foreach(v, k, x) last = k;
        rec[m].object = v;
        if (mode == 2 && last && json_is_object(json_object_get(v, last))) {
            json_object_foreach(v, k, x) if (strcmp(k, last) != 0) json_object_set(head, k, x);
            rec[m].object = json_object_get(v, last);
        } else {
            last = NULL;
        }
        OK(nf_writer_set_member_records(w, members[m], head, last, next_record, &rec[m], &err));
    }
}

static void rewrite_upstream(const char *name, int mode)
{
    char src[512];
    tc_sprintf(src, sizeof src, TC_UPSTREAM "%s.ninfer", name);
    nf_artifact *a;
    nf_error err;
    OK(nf_artifact_open(src, NF_READ_PREAD, &a, &err));
    uint64_t max_file = 0;
    size_t nfiles = nf_artifact_file_count(a);
    if (nfiles > 1) { /* the limit upstream was given: the largest file it wrote */
        size_t len;
        free(tc_read(src, &len));
        max_file = len;
    }
    char *dir = tc_tmpdir();
    char entry_name[256];
    tc_sprintf(entry_name, sizeof entry_name, "%s.ninfer", name);
    tc_path out = tc_join(dir, entry_name);
    nf_writer *w = create(out.s, max_file, false, nf_artifact_id(a));
    for (size_t i = 0; i < nf_artifact_object_count(a); i++) {
        const nf_object *o = nf_artifact_object(a, i);
        size_t index;
        if (o->kind == NF_OBJECT_TENSOR) {
            nf_geometry g;
            OK(nf_geometry_init(&g, o->layout, o->format, o->rank, o->shape, o->divisors, &err));
            OK(nf_writer_add_tensor(w, o->id, &g, &index, &err));
        } else {
            OK(nf_writer_add_resource(w, o->id, o->bytes, &index, &err));
        }
        cr_assert_eq(index, i);
        cr_assert_eq(nf_writer_object_offset(w, i), o->offset, "%s: planned offset of %s", name, o->id);
    }
    records_of rec[5] = {{0}};
    set_members(w, nf_artifact_directory(a), mode, rec);
    OK(nf_writer_begin(w, &err));
    for (size_t i = 0; i < nf_artifact_object_count(a); i++) {
        const nf_object *o = nf_artifact_object(a, i);
        uint8_t *buf = malloc((size_t)o->bytes);
        OK(nf_artifact_read(a, o->offset, buf, (size_t)o->bytes, &err));
        size_t half = (size_t)o->bytes / 2; /* second half first */
        OK(nf_writer_write(w, i, half, buf + half, (size_t)o->bytes - half, &err));
        OK(nf_writer_write(w, i, 0, buf, half, &err));
        free(buf);
    }
    OK(nf_writer_finish(w, &err));
    nf_writer_free(w);
    for (size_t i = 0; i < nfiles; i++) {
        const nf_file_entry *f = nf_artifact_file(a, i);
        char theirs[512];
        tc_sprintf(theirs, sizeof theirs, TC_UPSTREAM "%s", i ? f->path : entry_name);
        tc_path ours = tc_join(dir, i ? f->path : entry_name);
        size_t n1, n2;
        uint8_t *d1 = tc_read(theirs, &n1), *d2 = tc_read(ours.s, &n2);
        cr_assert_eq(n2, n1, "%s: %zu bytes, upstream %zu", ours.s, n2, n1);
        size_t k = 0;
        while (k < n1 && d1[k] == d2[k]) k++;
        cr_assert_eq(k, n1, "%s differs from upstream's at byte %zu (0x%02x vs 0x%02x)", ours.s, k, d2[k], d1[k]);
        free(d1);
        free(d2);
    }
    size_t count;
    tc_listing(dir, &count);
    cr_assert_eq(count, nfiles, "only the artifact's files are left: %s", tc_listing(dir, &count));
    nf_artifact_close(a);
    tc_rmtree(dir);
    free(dir);
}

Test(container_write, upstream_artifacts_rewritten_byte_for_byte)
{
    static const char *const names[] = {"container_small", "direct",    "fp8_row", "gguf",          "model",
                                        "nvfp4",           "row_split", "split",   "wide_directory"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) rewrite_upstream(names[i], 0);
}

/* The same bytes when the members come a record at a time (the scale-out coordinator's way). */
Test(container_write, upstream_artifacts_rewritten_with_members_as_records)
{
    static const char *const names[] = {"container_small", "direct",    "fp8_row", "gguf",          "model",
                                        "nvfp4",           "row_split", "split",   "wide_directory"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        rewrite_upstream(names[i], 1);
        rewrite_upstream(names[i], 2);
    }
}

Test(container_write, member_records_usage)
{
    char *dir = tc_tmpdir();
    tc_path out = tc_join(dir, "a.ninfer");
    nf_writer *w = create(out.s, 0, false, ID);
    nf_error err;
    json_t *empty = json_object();
    records_of rec = {empty, NULL};
    cr_assert_eq(nf_writer_set_member_records(w, "uses", NULL, NULL, next_record, &rec, &err), NF_ERR_USAGE);
    cr_assert_eq(nf_writer_set_member_records(w, "metadata", NULL, NULL, next_record, &rec, &err), NF_ERR_USAGE);
    cr_assert_eq(nf_writer_set_member_records(w, "bindings", NULL, NULL, NULL, &rec, &err), NF_ERR_USAGE);
    cr_assert_eq(nf_writer_set_member_records(w, "provenance", json_pack("{s:{}}", "objects"), "objects", next_record,
                                              &rec, &err),
                 NF_ERR_USAGE);
    cr_assert_not_null(strstr(err.message, "the head has a member 'objects' already"), "%s", err.message);
    cr_assert_eq(nf_writer_set_member_records(w, "provenance", json_array(), NULL, next_record, &rec, &err),
                 NF_ERR_INVALID);
    /* a record name that repeats a head member: refused by the directory check, nothing created */
    json_t *dup = json_pack("{s:{s:s}}", "w", "object", "w");
    rec.object = dup;
    uint64_t shape[1] = {4};
    nf_geometry g = geo("fp32", shape, 1);
    size_t index;
    OK(nf_writer_add_tensor(w, "w", &g, &index, &err));
    OK(nf_writer_set_member_records(w, "bindings", json_pack("{s:{s:s}}", "w", "object", "w"), NULL, next_record, &rec,
                                    &err));
    cr_assert_eq(nf_writer_begin(w, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "duplicate JSON member"), "%s", err.message);
    nf_writer_free(w);
    size_t count;
    tc_listing(dir, &count);
    cr_assert_eq(count, 0, "nothing left: %s", tc_listing(dir, &count));
    json_decref(dup);
    json_decref(empty);
    tc_rmtree(dir);
    free(dir);
}

/* A directory with non-ASCII IDs, escapes and floats in config: the text the upstream writer
 * would store (json.dumps of the same dict, written out here by hand). */
Test(container_write, exact_json_text_non_ascii_and_floats)
{
    static const char expected[] =
        "{\"components\":{\"text\":{\"config\":{\"rope_theta\":1000000.0,\"eps\":1e-06,\"name\":\"Qwen \\\"3\\\"\\n\","
        "\"big\":1e+16,\"list\":[0.5,-0.0]}}},\"objects\":[{\"id\":\"gewicht/\xc3\xbc\",\"shape\":[3],\"format\":"
        "\"bf16\",\"layout\":\"contiguous_le_v1\",\"offset\":0,\"bytes\":6,\"kind\":\"tensor\"},{\"id\":"
        "\"\xe9\x87\x8d\xe3\x81\xbf\",\"shape\":[2,2],\"format\":\"fp32\",\"layout\":\"contiguous_le_v1\",\"offset\":"
        "256,\"bytes\":16,\"kind\":\"tensor\"},{\"id\":\"tok\xe2\x82\xacn\",\"encoding\":\"raw_bytes_v1\",\"offset\":"
        "272,\"bytes\":3,\"kind\":\"resource\"}],\"bindings\":{\"w\":{\"object\":\"\xe9\x87\x8d\xe3\x81\xbf\"}},"
        "\"uses\":[{\"parameter\":\"w\",\"input\":\"x\",\"activation_policy\":\"A16Only\"}],\"metadata\":{\"name\":"
        "\"\xc3\xbc\"},\"provenance\":{\"converter\":\"ninfer-tools 0.1.0\"},\"files\":[{\"path\":null,"
        "\"payload_bytes\":275}]}";
    cr_assert_eq(strlen(expected), 669, "the hand-written text itself (Python: 669 bytes)");
    char *dir = tc_tmpdir();
    tc_path out = tc_join(dir, "u.ninfer");
    nf_writer *w = create(out.s, 0, false, ID);
    nf_error err;
    size_t i0, i1, i2;
    nf_geometry g0 = geo("bf16", (uint64_t[]){3}, 1), g1 = geo("fp32", (uint64_t[]){2, 2}, 2);
    OK(nf_writer_add_tensor(w, "gewicht/\xc3\xbc", &g0, &i0, &err));
    OK(nf_writer_add_tensor(w, "\xe9\x87\x8d\xe3\x81\xbf", &g1, &i1, &err));
    OK(nf_writer_add_resource(w, "tok\xe2\x82\xacn", 3, &i2, &err));
    json_t *config = json_object();
    json_object_set_new(config, "rope_theta", json_real(1000000.0));
    json_object_set_new(config, "eps", json_real(1e-06));
    json_object_set_new(config, "name", json_string("Qwen \"3\"\n"));
    json_object_set_new(config, "big", json_real(1e16));
    json_object_set_new(config, "list", json_pack("[f,f]", 0.5, -0.0));
    OK(nf_writer_set_member(w, "components", json_pack("{s:{s:o}}", "text", "config", config), &err));
    OK(nf_writer_set_member(w, "bindings", json_pack("{s:{s:s}}", "w", "object", "\xe9\x87\x8d\xe3\x81\xbf"), &err));
    OK(nf_writer_set_member(
        w, "uses", json_pack("[{s:s,s:s,s:s}]", "parameter", "w", "input", "x", "activation_policy", "A16Only"), &err));
    OK(nf_writer_set_member(w, "metadata", json_pack("{s:s}", "name", "\xc3\xbc"), &err));
    OK(nf_writer_set_member(w, "provenance", json_pack("{s:s}", "converter", "ninfer-tools 0.1.0"), &err));
    OK(nf_writer_begin(w, &err));
    uint8_t p[16] = {0};
    write_obj(w, i0, p, 6);
    write_obj(w, i1, p, 16);
    write_obj(w, i2, "abc", 3);
    OK(nf_writer_finish(w, &err));
    nf_writer_free(w);
    size_t n;
    uint8_t *file = tc_read(out.s, &n);
    cr_assert_eq(n, 4096 + 275);
    cr_assert_eq(memcmp(file, "NINFER\0\3", 8), 0);
    cr_assert_eq(tc_get_u64le(file + 8), 4064, "json_bytes = align_up(32 + 669, 4096) - 32");
    cr_assert_eq(memcmp(file + 16, ID, 16), 0);
    cr_assert_eq(memcmp(file + 32, expected, 669), 0, "JSON text: %.*s", 669, (const char *)file + 32);
    for (size_t k = 32 + 669; k < 4096; k++) cr_assert_eq(file[k], ' ', "padding byte %zu", k);
    cr_assert_eq(memcmp(file + 4096 + 272, "abc", 3), 0);
    free(file);
    tc_rmtree(dir);
    free(dir);
}

/* ---------------------------------------------------------------- docs/vectors.md items 1 and 2 */
Test(container_write, item1_single_file)
{
    char *dir = tc_tmpdir();
    tc_path out = tc_join(dir, "small.ninfer");
    nf_writer *w = create(out.s, 0, false, ID);
    nf_error err;
    size_t iw, is, it;
    nf_geometry gw = geo("bf16", (uint64_t[]){2, 2}, 2), gs = geo("fp32", NULL, 0);
    OK(nf_writer_add_tensor(w, "w", &gw, &iw, &err));
    OK(nf_writer_add_tensor(w, "scale", &gs, &is, &err));
    OK(nf_writer_add_resource(w, "template", 5, &it, &err));
    cr_assert_eq(nf_writer_object_offset(w, iw), 0);
    cr_assert_eq(nf_writer_object_offset(w, is), 256);
    cr_assert_eq(nf_writer_object_offset(w, it), 260, "resources are not aligned");
    OK(nf_writer_begin(w, &err));
    static const uint8_t words[8] = {0x00, 0x00, 0x00, 0x80, 0x80, 0x3F, 0xC1, 0x7F};
    static const uint8_t two[4] = {0x00, 0x00, 0x00, 0x40};
    nf_writer_sink sink = {w, iw};
    OK(nf_writer_sink_write(&sink, 0, words, 8, &err));
    write_obj(w, is, two, 4);
    write_obj(w, it, "hello", 5);
    OK(nf_writer_finish(w, &err));
    nf_writer_free(w);
    size_t n;
    uint8_t *file = tc_read(out.s, &n);
    cr_assert_eq(n, 4096 + 265);
    const uint8_t *p = file + 4096;
    cr_assert_eq(memcmp(p, words, 8), 0);
    for (size_t i = 8; i < 256; i++) cr_assert_eq(p[i], 0);
    cr_assert_eq(memcmp(p + 256, two, 4), 0);
    cr_assert_eq(memcmp(file + n - 5, "hello", 5), 0);
    free(file);
    nf_artifact *a;
    OK(nf_artifact_open(out.s, NF_READ_PREAD, &a, &err));
    uint8_t b;
    cr_assert_eq(nf_artifact_read(a, 265, &b, 0, &err), NF_OK);
    cr_assert_eq(nf_artifact_read(a, 265, &b, 1, &err), NF_ERR_INVALID);
    nf_artifact_close(a);
    tc_rmtree(dir);
    free(dir);
}

static uint8_t *item2_data(void)
{
    uint8_t *d = malloc(27610);
    for (size_t i = 0; i < 27610; i++) d[i] = (uint8_t)(i % 251);
    return d;
}

Test(container_write, item2_split)
{
    char *dir = tc_tmpdir();
    tc_path out = tc_join(dir, "large.ninfer");
    nf_writer *w = create(out.s, 12288, false, NULL);
    nf_error err;
    size_t idx;
    OK(nf_writer_add_resource(w, "data", 27610, &idx, &err));
    OK(nf_writer_set_member(w, "components",
                            json_pack("{s:{s:{},s:{s:s}}}", "text", "config", "resources", "data", "data"), &err));
    OK(nf_writer_begin(w, &err));
    uint8_t *data = item2_data();
    write_obj(w, idx, data, 27610);
    OK(nf_writer_finish(w, &err));
    char idhex[33];
    nf_writer_id_hex(w, idhex);
    nf_writer_free(w);
    static const uint64_t segs[4] = {8192, 8192, 8192, 3034};
    static const char *const names[4] = {"large.ninfer", "large.ninfer.part-0001", "large.ninfer.part-0002",
                                         "large.ninfer.part-0003"};
    size_t count;
    tc_listing(dir, &count);
    cr_assert_eq(count, 4, "%s", tc_listing(dir, &count));
    uint8_t id[16];
    for (size_t i = 0; i < 4; i++) {
        tc_path p = tc_join(dir, names[i]);
        size_t n;
        uint8_t *f = tc_read(p.s, &n);
        cr_assert_leq(n, 12288);
        cr_assert_eq(n, 4096 + segs[i], "%s", names[i]);
        if (i == 0) {
            memcpy(id, f + 16, 16);
        } else {
            cr_assert_eq(memcmp(f, "NINPRT\0\3", 8), 0);
            cr_assert_eq(tc_get_u64le(f + 8), i);
            cr_assert_eq(memcmp(f + 16, id, 16), 0);
            for (size_t k = 32; k < 4096; k++) cr_assert_eq(f[k], 0);
        }
        cr_assert_eq(memcmp(f + 4096, data + 8192 * i, (size_t)segs[i]), 0);
        free(f);
    }
    /* a fresh UUIDv4 */
    cr_assert_eq(id[6] >> 4, 4);
    cr_assert_eq(id[8] >> 6, 2);
    nf_artifact *a;
    OK(nf_artifact_open(out.s, NF_READ_MMAP, &a, &err));
    char rid[33];
    nf_artifact_id_hex(a, rid);
    cr_assert_str_eq(rid, idhex);
    const nf_file_entry *f1 = nf_artifact_file(a, 1);
    cr_assert_str_eq(f1->path, "large.ninfer.part-0001");
    uint8_t buf[503];
    for (uint64_t off = 8120; off < 25420; off += 503) {
        size_t n = off + 503 <= 25420 ? 503 : (size_t)(25420 - off);
        OK(nf_artifact_read(a, off, buf, n, &err));
        cr_assert_eq(memcmp(buf, data + off, n), 0);
    }
    nf_artifact_close(a);
    free(data);
    tc_rmtree(dir);
    free(dir);
}

/* ---------------------------------------------------------------- docs/vectors.md item 3: planner */
Test(container_write, item3_split_planner_limits)
{
    uint64_t *s = NULL;
    size_t n = 0;
    nf_error err;
    OK(nf_split_plan(32000000000ull, 4096, 0, &s, &n, &err));
    cr_assert_eq(n, 1, "no limit: one file");
    cr_assert_eq(s[0], 32000000000ull);
    free(s);
    OK(nf_split_plan(32000000000ull, 4096, 32000000000ull, &s, &n, &err));
    cr_assert_eq(n, 2, "limit 32e9: two files");
    cr_assert_eq(s[0], 31999995904ull);
    cr_assert_eq(s[1], 4096);
    cr_assert_leq(4096 + s[0], 32000000000ull);
    free(s);
    OK(nf_split_plan(32000000000ull - 4096, 4096, 32000000000ull, &s, &n, &err));
    cr_assert_eq(n, 1, "payload = limit - entry start: one file");
    free(s);
    /* the doc example: entry_payload_start 65536 */
    OK(nf_split_plan(31999934464ull + 4096, 65536, 32000000000ull, &s, &n, &err));
    cr_assert_eq(n, 2);
    cr_assert_eq(s[0], 31999934464ull, "entry file exactly 32,000,000,000 bytes");
    cr_assert_eq(65536 + s[0], 32000000000ull);
    cr_assert_eq(s[1], 4096, "part file 8192 bytes");
    free(s);
    /* docs/vectors.md item 2 */
    OK(nf_split_plan(27610, 4096, 12288, &s, &n, &err));
    cr_assert_eq(n, 4);
    cr_assert(s[0] == 8192 && s[1] == 8192 && s[2] == 8192 && s[3] == 3034);
    free(s);
    /* errors: nothing to write, the entry file size overflowing U64, limits too small */
    cr_assert_eq(nf_split_plan(0, 4096, 0, &s, &n, &err), NF_ERR_INVALID);
    cr_assert_eq(nf_split_plan(UINT64_MAX, 4096, 0, &s, &n, &err), NF_ERR_INVALID, "2^64 - 1 + 4096 > U64");
    cr_assert_not_null(strstr(err.message, "overflows"), "%s", err.message);
    cr_assert_eq(nf_split_plan(UINT64_MAX, 4096, 32000000000ull, &s, &n, &err), NF_ERR_INVALID, "too many files");
    cr_assert_eq(nf_split_plan(100000, 4096, 4096, &s, &n, &err), NF_ERR_INVALID, "entry start >= limit");
    cr_assert_eq(nf_split_plan(100000, 4096, 8191, &s, &n, &err), NF_ERR_INVALID, "no whole payload page");
    cr_assert_not_null(strstr(err.message, "too small"), "%s", err.message);
    cr_assert_eq(nf_split_plan(100000, 8192, 12287, &s, &n, &err), NF_ERR_INVALID);
    cr_assert_null(s);
    /* every segment starts 4096-aligned and no file exceeds the limit */
    tc_rng r = {5};
    for (int i = 0; i < 2000; i++) {
        uint64_t eps = 4096 * (1 + tc_below(&r, 4));
        uint64_t limit = eps + 4096 + tc_below(&r, 100000);
        uint64_t payload = 1 + tc_below(&r, 1000000);
        if (nf_split_plan(payload, eps, limit, &s, &n, &err) != NF_OK) {
            cr_assert((limit - eps) / 4096 == 0 || (limit - 4096) / 4096 == 0 || n > 0 || strstr(err.message, "files"),
                      "%s", err.message);
            continue;
        }
        uint64_t sum = 0;
        for (size_t k = 0; k < n; k++) {
            cr_assert_gt(s[k], 0);
            cr_assert_leq((k ? 4096 : eps) + s[k], limit);
            if (k + 1 < n) cr_assert_eq(s[k] % 4096, 0);
            sum += s[k];
        }
        cr_assert_eq(sum, payload);
        free(s);
    }
}

/* "payload 2^64 -> error": objects whose total reaches 2^64 cannot be planned. */
Test(container_write, item3_payload_beyond_u64)
{
    char *dir = tc_tmpdir();
    tc_path out = tc_join(dir, "huge.ninfer");
    nf_writer *w = create(out.s, 0, false, ID);
    nf_error err;
    OK(nf_writer_add_resource(w, "a", (uint64_t)1 << 62, NULL, &err));
    cr_assert_eq(nf_writer_add_resource(w, "b", (uint64_t)1 << 63, NULL, &err), NF_ERR_INVALID);
    cr_assert_eq(nf_writer_add_resource(w, "c", UINT64_MAX, NULL, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "does not fit"), "%s", err.message);
    nf_writer_free(w);
    tc_assert_dir_empty(dir);
    tc_rmtree(dir);
    free(dir);
}

Test(container_write, part_names_have_at_least_four_digits)
{
    char *s = nf_outputs_part_name("x.ninfer", 1);
    cr_assert_str_eq(s, "x.ninfer.part-0001");
    free(s);
    s = nf_outputs_part_name("x.ninfer", 12345);
    cr_assert_str_eq(s, "x.ninfer.part-12345");
    free(s);
}

/* ---------------------------------------------------------------- JSON reserve */
static size_t reserve_text(char *buf, size_t cap, size_t pad, const char *files)
{
    char *padding = malloc(pad + 1);
    memset(padding, 'x', pad);
    padding[pad] = '\0';
    int n = snprintf(
        buf, cap,
        "{\"components\":{\"text\":{\"config\":{}}},\"objects\":[{\"id\":\"r\",\"encoding\":\"raw_bytes_v1\","
        "\"offset\":0,\"bytes\":20000,\"kind\":\"resource\"}],\"bindings\":{},\"uses\":[],\"metadata\":"
        "{\"pad\":\"%s\"},\"provenance\":{},\"files\":%s}",
        padding, files);
    free(padding);
    return (size_t)n;
}

static void reserve_case(size_t pad, uint64_t limit, uint64_t want_json_bytes, const char *want_files)
{
    static char expected[16384];
    size_t len = reserve_text(expected, sizeof expected, pad, want_files);
    char *dir = tc_tmpdir();
    tc_path out = tc_join(dir, "g.ninfer");
    nf_writer *w = create(out.s, limit, false, ID);
    nf_error err;
    size_t idx;
    OK(nf_writer_add_resource(w, "r", 20000, &idx, &err));
    char *padding = malloc(pad + 1);
    memset(padding, 'x', pad);
    padding[pad] = '\0';
    OK(nf_writer_set_member(w, "metadata", json_pack("{s:s}", "pad", padding), &err));
    free(padding);
    OK(nf_writer_begin(w, &err));
    uint8_t *data = calloc(1, 20000);
    write_obj(w, idx, data, 20000);
    free(data);
    OK(nf_writer_finish(w, &err));
    nf_writer_free(w);
    size_t n;
    uint8_t *file = tc_read(out.s, &n);
    cr_assert_eq(tc_get_u64le(file + 8), want_json_bytes, "pad %zu: json_bytes %llu, want %llu", pad,
                 (unsigned long long)tc_get_u64le(file + 8), (unsigned long long)want_json_bytes);
    cr_assert_eq(memcmp(file + 32, expected, len), 0, "pad %zu: JSON text differs", pad);
    for (size_t k = 32 + len; k < 32 + want_json_bytes; k++) cr_assert_eq(file[k], ' ');
    free(file);
    tc_rmtree(dir);
    free(dir);
}

Test(container_write, json_reserve_and_growth_across_a_page)
{
    char buf[16384];
    size_t base = reserve_text(buf, sizeof buf, 0, "[{\"path\":null,\"payload_bytes\":20000}]");
    size_t fill = 4064 - base; /* single-file JSON exactly 4064 bytes: no padding, payload at 4096 */
    reserve_case(fill, 0, 4064, "[{\"path\":null,\"payload_bytes\":20000}]");
    reserve_case(fill + 1, 0, 8160, "[{\"path\":null,\"payload_bytes\":20000}]");
    /* Split with limit 16384: the single-file JSON fits the first page, but the two-file table
     * does not, so the reserve grows to 8160 and the entry capacity shrinks to 8192. */
    reserve_case(fill, 16384, 8160,
                 "[{\"path\":null,\"payload_bytes\":8192},{\"path\":\"g.ninfer.part-0001\",\"payload_bytes\":11808}]");
    /* With room to spare the first reserve holds and the entry keeps 12288 bytes. */
    reserve_case(fill - 200, 16384, 4064,
                 "[{\"path\":null,\"payload_bytes\":12288},{\"path\":\"g.ninfer.part-0001\",\"payload_bytes\":7712}]");
}

/* ---------------------------------------------------------------- coverage */
typedef struct piece {
    size_t obj;
    uint64_t off, len;
} piece;

/* Objects: a 10,000-byte resource, a bf16 [64,64] and an fp32 [777] tensor, split at 12288 so
 * that objects straddle parts; pieces of 1..700 bytes written in the given order. */
static void pieces_case(int order)
{
    char *dir = tc_tmpdir();
    tc_path out = tc_join(dir, "p.ninfer");
    nf_writer *w = create(out.s, 12288, false, ID);
    nf_error err;
    nf_geometry g1 = geo("bf16", (uint64_t[]){64, 64}, 2), g2 = geo("fp32", (uint64_t[]){777}, 1);
    size_t idx[3];
    OK(nf_writer_add_resource(w, "res", 10000, &idx[0], &err));
    OK(nf_writer_add_tensor(w, "m", &g1, &idx[1], &err));
    OK(nf_writer_add_tensor(w, "v", &g2, &idx[2], &err));
    OK(nf_writer_begin(w, &err));
    uint64_t sizes[3] = {10000, g1.bytes, g2.bytes};
    tc_rng r = {(uint64_t)order + 77};
    uint8_t *data[3];
    piece *ps = malloc(sizeof *ps * 20000);
    size_t np = 0;
    for (size_t o = 0; o < 3; o++) {
        data[o] = malloc((size_t)sizes[o]);
        for (uint64_t k = 0; k < sizes[o]; k++) data[o][k] = (uint8_t)tc_next(&r);
        for (uint64_t off = 0; off < sizes[o];) {
            uint64_t len = 1 + tc_below(&r, 700);
            if (off + len > sizes[o]) len = sizes[o] - off;
            ps[np++] = (piece){o, off, len};
            off += len;
        }
    }
    if (order == 0) { /* shuffle */
        for (size_t i = np; i > 1; i--) {
            size_t j = (size_t)tc_below(&r, i);
            piece t = ps[i - 1];
            ps[i - 1] = ps[j];
            ps[j] = t;
        }
    } else { /* reversed */
        for (size_t i = 0; i < np / 2; i++) {
            piece t = ps[i];
            ps[i] = ps[np - 1 - i];
            ps[np - 1 - i] = t;
        }
    }
    for (size_t i = 0; i < np; i++)
        OK(nf_writer_write(w, idx[ps[i].obj], ps[i].off, data[ps[i].obj] + ps[i].off, (size_t)ps[i].len, &err));
    OK(nf_writer_finish(w, &err));
    nf_writer_free(w);
    nf_artifact *a;
    OK(nf_artifact_open(out.s, NF_READ_PREAD, &a, &err));
    cr_assert_geq(nf_artifact_file_count(a), 3);
    for (size_t o = 0; o < 3; o++) {
        const nf_object *ob = nf_artifact_object(a, o);
        uint8_t *buf = malloc((size_t)sizes[o]);
        OK(nf_artifact_read(a, ob->offset, buf, (size_t)sizes[o], &err));
        cr_assert_eq(memcmp(buf, data[o], (size_t)sizes[o]), 0, "object %zu", o);
        free(buf);
        free(data[o]);
    }
    nf_artifact_close(a);
    free(ps);
    tc_rmtree(dir);
    free(dir);
}

Test(container_write, pieces_in_random_order) { pieces_case(0); }
Test(container_write, pieces_in_reversed_order) { pieces_case(1); }

Test(container_write, duplicate_and_missing_coverage)
{
    char *dir = tc_tmpdir();
    tc_path out = tc_join(dir, "c.ninfer");
    nf_writer *w = create(out.s, 0, false, ID);
    nf_error err;
    size_t a, b;
    OK(nf_writer_add_resource(w, "a", 300, &a, &err));
    OK(nf_writer_add_resource(w, "b", 50, &b, &err));
    OK(nf_writer_begin(w, &err));
    uint8_t buf[300];
    memset(buf, 0x11, sizeof buf);
    OK(nf_writer_write(w, a, 0, buf, 100, &err));
    OK(nf_writer_write(w, a, 200, buf, 100, &err));
    cr_assert_eq(nf_writer_write(w, a, 50, buf, 100, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "duplicate output coverage"), "%s", err.message);
    cr_assert_not_null(strstr(err.message, "[50, 100)"), "%s", err.message);
    cr_assert_eq(nf_writer_write(w, a, 150, buf, 51, &err), NF_ERR_INVALID, "touches [200, 201)");
    cr_assert_eq(nf_writer_write(w, a, 99, buf, 1, &err), NF_ERR_INVALID);
    cr_assert_eq(nf_writer_write(w, a, 250, buf, 51, &err), NF_ERR_INVALID, "beyond the object");
    cr_assert_not_null(strstr(err.message, "beyond"), "%s", err.message);
    cr_assert_eq(nf_writer_write(w, 7, 0, buf, 1, &err), NF_ERR_USAGE, "no such object");
    OK(nf_writer_write(w, a, 100, buf, 0, &err)); /* empty writes cover nothing */
    memset(buf, 0x22, sizeof buf);
    OK(nf_writer_write(w, a, 100, buf, 100, &err)); /* rejected writes left no coverage behind */
    OK(nf_writer_write(w, b, 0, buf, 10, &err));
    OK(nf_writer_write(w, b, 20, buf, 30, &err));
    /* b's [10, 20) is missing */
    cr_assert_eq(nf_writer_finish(w, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "object 'b': bytes [10, 20) of 50 were never written"), "%s", err.message);
    tc_assert_dir_empty(dir);
    cr_assert_eq(nf_writer_finish(w, &err), NF_ERR_USAGE, "a failed writer stays failed");
    nf_writer_free(w);
    tc_assert_dir_empty(dir);
    tc_rmtree(dir);
    free(dir);
}

/* Nothing written to an object at all, and the first bytes missing. */
Test(container_write, missing_coverage_messages)
{
    char *dir = tc_tmpdir();
    tc_path out = tc_join(dir, "c.ninfer");
    for (int k = 0; k < 2; k++) {
        nf_writer *w = create(out.s, 0, false, ID);
        nf_error err;
        size_t a;
        OK(nf_writer_add_resource(w, "a", 30, &a, &err));
        OK(nf_writer_begin(w, &err));
        uint8_t buf[30] = {0};
        if (k == 1) OK(nf_writer_write(w, a, 5, buf, 25, &err));
        cr_assert_eq(nf_writer_finish(w, &err), NF_ERR_INVALID);
        cr_assert_not_null(strstr(err.message, k ? "bytes [0, 5) of 30" : "bytes [0, 30) of 30"), "%s", err.message);
        nf_writer_free(w);
        tc_assert_dir_empty(dir);
    }
    tc_rmtree(dir);
    free(dir);
}

/* ---------------------------------------------------------------- destinations */
static nf_status split_write(const char *path, bool overwrite, bool checksums, nf_error *err)
{
    nf_writer_options opt = {12288, ID, overwrite, checksums};
    nf_writer *w = NULL;
    nf_status st = nf_writer_create(path, &opt, &w, err);
    if (st != NF_OK) return st;
    size_t d, m;
    nf_geometry g = geo("bf16", (uint64_t[]){64, 64}, 2);
    uint8_t *data = item2_data();
    if (st == NF_OK) st = nf_writer_add_resource(w, "data", 27610, &d, err);
    if (st == NF_OK) st = nf_writer_add_tensor(w, "m", &g, &m, err);
    if (st == NF_OK) st = nf_writer_begin(w, err);
    if (st == NF_OK) st = nf_writer_write(w, d, 10000, data + 10000, 17610, err);
    if (st == NF_OK) st = nf_writer_write(w, d, 0, data, 10000, err);
    if (st == NF_OK) st = nf_writer_write(w, m, 0, data, (size_t)g.bytes, err);
    if (st == NF_OK) st = nf_writer_finish(w, err);
    nf_writer_free(w);
    free(data);
    return st;
}

static void expect_split_artifact(const char *path)
{
    nf_error err;
    nf_artifact *a;
    OK(nf_artifact_open(path, NF_READ_PREAD, &a, &err));
    /* 27,610 + gap + 8,192 = 35,840 bytes: 8192 in the entry, then 8192 x 3 + 3072 */
    cr_assert_eq(nf_artifact_file_count(a), 5);
    uint8_t *data = item2_data(), *buf = malloc(27610);
    OK(nf_artifact_read(a, 0, buf, 27610, &err));
    cr_assert_eq(memcmp(buf, data, 27610), 0);
    OK(nf_artifact_read(a, 27648, buf, 8192, &err));
    cr_assert_eq(memcmp(buf, data, 8192), 0);
    for (size_t i = 1; i < 5; i++) OK(nf_artifact_open_part(a, i, &err));
    free(buf);
    free(data);
    nf_artifact_close(a);
}

Test(container_write, refuses_existing_entry_and_part)
{
    char *dir = tc_tmpdir();
    tc_path out = tc_join(dir, "s.ninfer");
    static const char *const existing[] = {"s.ninfer", "s.ninfer.part-0002"};
    for (size_t k = 0; k < 2; k++) {
        tc_path p = tc_join(dir, existing[k]);
        tc_write(p.s, "keep me", 7);
        nf_error err;
        cr_assert_eq(split_write(out.s, false, false, &err), NF_ERR_IO, "%s exists", existing[k]);
        cr_assert_not_null(strstr(err.message, "refusing to overwrite"), "%s", err.message);
        cr_assert_not_null(strstr(err.message, existing[k]), "%s", err.message);
        size_t n;
        char *names = tc_listing(dir, &n);
        cr_assert_eq(n, 1, "only the existing file remains: %s", names);
        uint8_t *d = tc_read(p.s, &n);
        cr_assert(n == 7 && memcmp(d, "keep me", 7) == 0, "the existing file is untouched");
        free(d);
        /* overwrite replaces it */
        OK(split_write(out.s, true, false, &err));
        expect_split_artifact(out.s);
        tc_listing(dir, &n);
        cr_assert_eq(n, 5, "%s", tc_listing(dir, &n));
        tc_rmtree(dir);
        cr_assert_eq(mkdir(dir, 0700), 0);
    }
    tc_rmtree(dir);
    free(dir);
}

Test(container_write, published_files_follow_the_umask)
{
    char *dir = tc_tmpdir();
    tc_path out = tc_join(dir, "s.ninfer");
    nf_error err;
    OK(split_write(out.s, false, false, &err));
    mode_t mask = umask(022);
    umask(mask);
    struct stat st;
    cr_assert_eq(stat(out.s, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0666 & ~mask);
    tc_rmtree(dir);
    free(dir);
}

/* ---------------------------------------------------------------- streamed digests */
/* A 9 MiB resource and a small tensor, the resource's bytes written in the order given by
 * `order`: 0 in order, 1 in 4 KiB pieces from the end (every piece but the last parked, then
 * the budget runs out and the rest is read back), 2 its last 8.5 MiB first (too big to park:
 * read back when the first piece completes the object).  Parts of 4 MiB. */
#define BIG_BYTES ((size_t)9 << 20)
static nf_status big_write(const char *path, int order, nf_error *err)
{
    nf_writer_options opt = {(uint64_t)4 << 20, ID, true, true};
    nf_writer *w = NULL;
    nf_status st = nf_writer_create(path, &opt, &w, err);
    if (st != NF_OK) return st;
    size_t d, m;
    nf_geometry g = geo("bf16", (uint64_t[]){64, 64}, 2);
    uint8_t *data = malloc(BIG_BYTES);
    cr_assert_not_null(data);
    for (size_t i = 0; i < BIG_BYTES; i++) data[i] = (uint8_t)(i * 2654435761u >> 13);
    if (st == NF_OK) st = nf_writer_add_resource(w, "big", BIG_BYTES, &d, err);
    if (st == NF_OK) st = nf_writer_add_tensor(w, "m", &g, &m, err);
    if (st == NF_OK) st = nf_writer_begin(w, err);
    if (st == NF_OK) st = nf_writer_write(w, m, 0, data, (size_t)g.bytes, err);
    if (order == 0) {
        for (size_t off = 0; st == NF_OK && off < BIG_BYTES; off += 1 << 20)
            st = nf_writer_write(w, d, off, data + off, 1 << 20, err);
    } else if (order == 1) {
        for (size_t off = BIG_BYTES; st == NF_OK && off > 0; off -= 4096)
            st = nf_writer_write(w, d, off - 4096, data + off - 4096, 4096, err);
    } else {
        size_t head = (size_t)1 << 19;
        if (st == NF_OK) st = nf_writer_write(w, d, head, data + head, BIG_BYTES - head, err);
        if (st == NF_OK) st = nf_writer_write(w, d, 0, data, head, err);
    }
    if (st == NF_OK) st = nf_writer_finish(w, err);
    nf_writer_free(w);
    free(data);
    return st;
}

/* The digest streamed as the bytes arrive is the digest of the bytes: the same file set
 * whatever the order of the writes, and ninfer-verify's checksum level passes. */
Test(container_write, streamed_digests_do_not_depend_on_the_write_order)
{
    char *dir = tc_tmpdir();
    tc_path out = tc_join(dir, "b.ninfer");
    nf_error err;
    uint8_t *first = NULL;
    size_t first_len = 0;
    for (int order = 0; order < 3; order++) {
        OK(big_write(out.s, order, &err));
        size_t len;
        uint8_t *entry = tc_read(out.s, &len);
        if (!first) {
            first = entry;
            first_len = len;
        } else {
            cr_assert(len == first_len && memcmp(entry, first, len) == 0, "order %d: another entry file", order);
            free(entry);
        }
        nf_verify_options vo = {.level = NF_VERIFY_CHECKSUMS, .require_checksums = true};
        nf_verify_report rep = {0};
        OK(nf_verify_artifact_with(out.s, &vo, &rep, &err));
        cr_assert(rep.valid && rep.checksums_checked == 3, "order %d: the artifact does not verify (%zu problems: %s)",
                  order, rep.count, rep.count ? rep.problems[0].message : "");
        nf_verify_report_free(&rep);
    }
    free(first);
    tc_rmtree(dir);
    free(dir);
}

/* ---------------------------------------------------------------- fault injection */
/* Fail the n-th call of op for every n until the split write no longer reaches it: each
 * failure must be a system error and leave the directory empty. */
static nf_status sweep_write(const char *path, bool checksums, bool big, nf_error *err)
{
    return big ? big_write(path, 2, err) : split_write(path, false, checksums, err);
}

static void fault_sweep_of(nf_io_op op, int errnum, bool checksums, bool big)
{
    char *dir = tc_tmpdir();
    tc_path out = tc_join(dir, "f.ninfer");
    nf_error err;
    /* warm-up: process-wide one-time work (the umask read) happens outside the sweep */
    nf_io_fault_reset();
    OK(sweep_write(out.s, checksums, big, &err));
    tc_rmtree(dir);
    cr_assert_eq(mkdir(dir, 0700), 0);
    uint64_t n;
    for (n = 1; n < 10000; n++) {
        nf_io_fault_reset();
        nf_io_fault_arm(op, n, errnum);
        nf_status st = sweep_write(out.s, checksums, big, &err);
        uint64_t calls = nf_io_calls(op);
        nf_io_fault_reset();
        if (st == NF_OK) {
            cr_assert_lt(calls, n, "op %d: call %llu was to fail but the write succeeded", op, (unsigned long long)n);
            if (!big) expect_split_artifact(out.s);
            break;
        }
        cr_assert_eq(st, NF_ERR_IO, "op %d n %llu: status %d (%s)", op, (unsigned long long)n, st, err.message);
        size_t count;
        char *names = tc_listing(dir, &count);
        cr_assert_eq(count, 0, "op %d n %llu (%s): left behind: %s", op, (unsigned long long)n, err.message, names);
    }
    cr_assert_gt(n, 1, "op %d was never called", op);
    tc_rmtree(dir);
    free(dir);
}

static void fault_sweep(nf_io_op op, int errnum, bool checksums) { fault_sweep_of(op, errnum, checksums, false); }

Test(container_write, fault_every_write) { fault_sweep(NF_IO_WRITE, EIO, false); }
Test(container_write, fault_every_short_write) { fault_sweep(NF_IO_WRITE, 0, false); }
Test(container_write, fault_every_write_with_checksums) { fault_sweep(NF_IO_WRITE, ENOSPC, true); }
Test(container_write, fault_every_sync) { fault_sweep(NF_IO_SYNC, EIO, false); }
Test(container_write, fault_every_link) { fault_sweep(NF_IO_LINK, EIO, false); }
Test(container_write, fault_every_open) { fault_sweep(NF_IO_OPEN, EMFILE, false); }
/* Reading back for a checksum happens for pieces that could not be kept aside (big_write). */
Test(container_write, fault_every_read_back) { fault_sweep_of(NF_IO_READ, EIO, true, true); }
Test(container_write, fault_every_unlink) { fault_sweep(NF_IO_UNLINK, EIO, false); }

/* ---------------------------------------------------------------- API misuse */
Test(container_write, misuse_and_invalid_plans)
{
    char *dir = tc_tmpdir();
    tc_path out = tc_join(dir, "m.ninfer");
    nf_error err;
    nf_writer *w = create(out.s, 0, false, ID);
    uint8_t b = 0;
    cr_assert_eq(nf_writer_write(w, 0, 0, &b, 1, &err), NF_ERR_USAGE, "write before begin");
    cr_assert_eq(nf_writer_finish(w, &err), NF_ERR_USAGE, "finish before begin");
    cr_assert_eq(nf_writer_begin(w, &err), NF_ERR_INVALID, "no objects");
    nf_writer_free(w);

    w = create(out.s, 0, false, ID);
    size_t i;
    cr_assert_eq(nf_writer_add_resource(w, "", 5, &i, &err), NF_ERR_INVALID, "empty id");
    cr_assert_eq(nf_writer_add_resource(w, "a\xff", 5, &i, &err), NF_ERR_INVALID, "bad UTF-8");
    cr_assert_eq(nf_writer_add_resource(w, "z", 0, &i, &err), NF_ERR_INVALID, "no bytes");
    OK(nf_writer_add_resource(w, "r", 5, &i, &err));
    cr_assert_eq(nf_writer_add_resource(w, "r", 5, &i, &err), NF_ERR_INVALID, "duplicate id");
    cr_assert_not_null(strstr(err.message, "duplicate object id 'r'"), "%s", err.message);
    nf_geometry g = geo("bf16", (uint64_t[]){4}, 1);
    g.bytes = 9;
    cr_assert_eq(nf_writer_add_tensor(w, "t", &g, &i, &err), NF_ERR_INVALID, "geometry bytes lie");
    cr_assert_eq(nf_writer_add_tensor(w, "t", NULL, &i, &err), NF_ERR_USAGE);
    cr_assert_eq(nf_writer_set_member(w, "objects", json_array(), &err), NF_ERR_USAGE);
    cr_assert_eq(nf_writer_set_member(w, "files", json_array(), &err), NF_ERR_USAGE);
    cr_assert_eq(nf_writer_set_member(w, "uses", json_object(), &err), NF_ERR_INVALID);
    cr_assert_eq(nf_writer_set_member(w, "bindings", json_array(), &err), NF_ERR_INVALID);
    /* a reference to a missing object: refused at begin, nothing created */
    OK(nf_writer_set_member(w, "bindings", json_pack("{s:{s:s}}", "x", "object", "ghost"), &err));
    cr_assert_eq(nf_writer_begin(w, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "'ghost' names no object"), "%s", err.message);
    tc_assert_dir_empty(dir);
    cr_assert_eq(nf_writer_add_resource(w, "late", 5, &i, &err), NF_ERR_USAGE);
    nf_writer_free(w);

    /* free before finish removes the temp files */
    w = create(out.s, 0, false, ID);
    OK(nf_writer_add_resource(w, "r", 5, &i, &err));
    OK(nf_writer_begin(w, &err));
    size_t count;
    tc_listing(dir, &count);
    cr_assert_eq(count, 2, "one temp file and the output's lock file while writing");
    cr_assert(tc_exists(tc_join(dir, ".m.ninfer.lock").s), "the lock file: %s", tc_listing(dir, &count));
    cr_assert(!tc_exists(out.s), "nothing published before finish");
    cr_assert_eq(nf_writer_add_resource(w, "late", 5, &i, &err), NF_ERR_USAGE, "plan frozen");
    cr_assert_eq(nf_writer_begin(w, &err), NF_ERR_USAGE);
    nf_writer_free(w);
    tc_assert_dir_empty(dir);

    /* finish twice */
    w = create(out.s, 0, false, ID);
    OK(nf_writer_add_resource(w, "r", 5, &i, &err));
    OK(nf_writer_begin(w, &err));
    write_obj(w, i, "abcde", 5);
    OK(nf_writer_finish(w, &err));
    cr_assert_eq(nf_writer_finish(w, &err), NF_ERR_USAGE);
    cr_assert_eq(nf_writer_write(w, i, 0, "a", 1, &err), NF_ERR_USAGE);
    nf_writer_free(w);
    cr_assert(tc_exists(out.s), "free after finish keeps the artifact");

    /* a limit too small for any payload page */
    unlink(out.s);
    w = create(out.s, 4096, false, ID);
    OK(nf_writer_add_resource(w, "r", 50000, &i, &err));
    cr_assert_eq(nf_writer_begin(w, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "too small"), "%s", err.message);
    nf_writer_free(w);
    tc_assert_dir_empty(dir);
    tc_rmtree(dir);
    free(dir);
}

Test(container_write, random_artifact_ids_are_uuid4)
{
    char *dir = tc_tmpdir();
    tc_path out = tc_join(dir, "r.ninfer");
    nf_writer *w1 = create(out.s, 0, false, NULL), *w2 = create(out.s, 0, false, NULL);
    char h1[33], h2[33];
    nf_writer_id_hex(w1, h1);
    nf_writer_id_hex(w2, h2);
    cr_assert_str_neq(h1, h2);
    cr_assert_eq(h1[12], '4');
    cr_assert(strchr("89ab", h1[16]) != NULL, "variant bits 10: %s", h1);
    nf_writer_free(w1);
    nf_writer_free(w2);
    nf_writer *w3 = create(out.s, 0, false, ID);
    nf_writer_id_hex(w3, h1);
    cr_assert_str_eq(h1, "1032547698badcfe0123456789abcdef");
    nf_writer_free(w3);
    tc_rmtree(dir);
    free(dir);
}

/* ---------------------------------------------------------------- round trips */
Test(container_write, random_round_trips_across_parts)
{
    tc_rng r = {2024};
    size_t straddling = 0;
    for (int iter = 0; iter < 150; iter++) {
        char *dir = tc_tmpdir();
        tc_path out = tc_join(dir, "rt.ninfer");
        uint64_t limit = 0;
        switch (tc_below(&r, 3)) {
        case 0: limit = 0; break;
        case 1: limit = 8192 + 4096 * tc_below(&r, 6); break;
        default: limit = 8192 + tc_below(&r, 40000); break;
        }
        bool checksums = tc_below(&r, 2);
        nf_writer *w = create(out.s, limit, checksums, NULL);
        nf_error err;
        size_t nobj = 1 + (size_t)tc_below(&r, 8);
        uint8_t *data[8];
        uint64_t size[8];
        for (size_t o = 0; o < nobj; o++) {
            char id[32];
            tc_sprintf(id, sizeof id, "obj/%zu", o);
            size_t idx;
            switch (tc_below(&r, 3)) {
            case 0: {
                nf_geometry g = geo("bf16", (uint64_t[]){1 + tc_below(&r, 60), 1 + tc_below(&r, 60)}, 2);
                OK(nf_writer_add_tensor(w, id, &g, &idx, &err));
                size[o] = g.bytes;
                break;
            }
            case 1: {
                nf_geometry g = geo("fp32", (uint64_t[]){1 + tc_below(&r, 3000)}, 1);
                OK(nf_writer_add_tensor(w, id, &g, &idx, &err));
                size[o] = g.bytes;
                break;
            }
            default: size[o] = 1 + tc_below(&r, 9000); OK(nf_writer_add_resource(w, id, size[o], &idx, &err));
            }
            cr_assert_eq(idx, o);
            data[o] = malloc((size_t)size[o]);
            for (uint64_t k = 0; k < size[o]; k++) data[o][k] = (uint8_t)tc_next(&r);
        }
        OK(nf_writer_begin(w, &err));
        /* write every object in two or three pieces, objects in random order */
        size_t order[8];
        for (size_t o = 0; o < nobj; o++) order[o] = o;
        for (size_t o = nobj; o > 1; o--) {
            size_t j = (size_t)tc_below(&r, o), t = order[o - 1];
            order[o - 1] = order[j];
            order[j] = t;
        }
        for (size_t k = 0; k < nobj; k++) {
            size_t o = order[k];
            uint64_t cut = tc_below(&r, size[o] + 1);
            OK(nf_writer_write(w, o, cut, data[o] + cut, (size_t)(size[o] - cut), &err));
            OK(nf_writer_write(w, o, 0, data[o], (size_t)cut, &err));
        }
        OK(nf_writer_finish(w, &err));
        nf_writer_free(w);
        nf_read_mode mode = tc_below(&r, 2) ? NF_READ_MMAP : NF_READ_PREAD;
        nf_artifact *a;
        OK(nf_artifact_open(out.s, mode, &a, &err));
        uint64_t total = nf_artifact_payload_bytes(a);
        uint64_t segs[64];
        size_t nf = tc_split(total, nf_artifact_entry_payload_start(a), limit, segs, 64);
        cr_assert_eq(nf_artifact_file_count(a), nf, "iter %d: file count", iter);
        size_t count;
        tc_listing(dir, &count);
        cr_assert_eq(count, nf, "iter %d: files on disk: %s", iter, tc_listing(dir, &count));
        /* the expected logical payload: objects at their offsets, zeros elsewhere */
        uint8_t *want = calloc(1, (size_t)total);
        for (size_t o = 0; o < nobj; o++) {
            const nf_object *ob = nf_artifact_object(a, o);
            cr_assert_eq(ob->bytes, size[o]);
            memcpy(want + ob->offset, data[o], (size_t)size[o]);
            OK(nf_artifact_check_object(a, ob, NULL, &err));
            uint8_t *buf = malloc((size_t)size[o]);
            nf_byte_reader rd;
            nf_artifact_object_reader(a, ob, &rd);
            OK(rd.read(rd.ctx, 0, buf, (size_t)size[o], &err));
            cr_assert_eq(memcmp(buf, data[o], (size_t)size[o]), 0, "iter %d object %zu", iter, o);
            free(buf);
            for (size_t f = 0; f + 1 < nf; f++) {
                uint64_t boundary = nf_artifact_file(a, f + 1)->logical_start;
                if (ob->offset < boundary && ob->offset + ob->bytes > boundary) straddling++;
            }
        }
        cr_assert_eq(nf_artifact_object(a, nobj - 1)->offset + size[nobj - 1], total,
                     "the payload ends with the last object");
        uint8_t *all = malloc((size_t)total);
        OK(nf_artifact_read(a, 0, all, (size_t)total, &err));
        cr_assert_eq(memcmp(all, want, (size_t)total), 0, "iter %d: whole payload", iter);
        for (int k = 0; k < 50; k++) {
            uint64_t off = tc_below(&r, total + 1), len = tc_below(&r, total - off + 1);
            OK(nf_artifact_read(a, off, all, (size_t)len, &err));
            cr_assert_eq(memcmp(all, want + off, (size_t)len), 0, "iter %d: range [%llu, +%llu)", iter,
                         (unsigned long long)off, (unsigned long long)len);
        }
        free(all);
        free(want);
        nf_artifact_close(a);
        for (size_t o = 0; o < nobj; o++) free(data[o]);
        tc_rmtree(dir);
        free(dir);
    }
    cr_assert_gt(straddling, 20, "objects straddled part boundaries only %zu times", straddling);
}

/* ---------------------------------------------------------------- checksums */
static void xxh3_hex(const void *data, size_t len, char out[33])
{
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(data, len));
    for (int i = 0; i < 16; i++) sprintf(out + 2 * i, "%02x", c.digest[i]);
}

Test(container_write, xxh3_128_canonical_hex)
{
    char hex[33];
    nf_xxh3_128_hex("", 0, hex);
    cr_assert_str_eq(hex, "99aa06d3014798d86001c324468d497f", "xxhsum -H2 of empty input");
    nf_xxh3_128_hex("abc", 3, hex);
    cr_assert_str_eq(hex, "06b05ab6733a618578af5f94892f3950", "xxhsum -H2 of 'abc'");
    uint8_t big[5000];
    for (size_t i = 0; i < sizeof big; i++) big[i] = (uint8_t)(i * 31);
    char want[33];
    xxh3_hex(big, sizeof big, want);
    nf_xxh3_128_hex(big, sizeof big, hex);
    cr_assert_str_eq(hex, want);
}

Test(container_write, checksums_equal_an_independent_computation)
{
    for (int split = 0; split < 2; split++) {
        char *dir = tc_tmpdir();
        tc_path out = tc_join(dir, "k.ninfer");
        nf_writer *w = create(out.s, split ? 12288 : 0, true, ID);
        nf_error err;
        size_t d, m, s;
        nf_geometry g = geo("bf16", (uint64_t[]){64, 64}, 2), gs = geo("fp32", NULL, 0);
        OK(nf_writer_add_resource(w, "data", 27610, &d, &err));
        OK(nf_writer_add_tensor(w, "m\xc3\xbc", &g, &m, &err));
        OK(nf_writer_add_tensor(w, "s", &gs, &s, &err));
        OK(nf_writer_set_member(w, "metadata", json_pack("{s:s,s:i}", "name", "sums", "n", 1), &err));
        OK(nf_writer_begin(w, &err));
        uint8_t *data = item2_data();
        write_obj(w, d, data, 27610);
        write_obj(w, m, data + 1000, (size_t)g.bytes);
        write_obj(w, s, data + 7, 4);
        OK(nf_writer_finish(w, &err));
        nf_writer_free(w);
        nf_artifact *a;
        OK(nf_artifact_open(out.s, NF_READ_PREAD, &a, &err));
        const json_t *meta = json_object_get(nf_artifact_directory(a), "metadata");
        /* user members first, checksums appended */
        const char *keys[3];
        size_t nk = 0;
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)meta, key, val)
        {
            if (nk < 3) keys[nk] = key;
            nk++;
        }
        cr_assert_eq(nk, 3);
        cr_assert_str_eq(keys[0], "name");
        cr_assert_str_eq(keys[2], "checksums");
        const json_t *sums = json_object_get(meta, "checksums");
        cr_assert_str_eq(json_string_value(json_object_get(sums, "algorithm")), "xxh3-128");
        const json_t *objs = json_object_get(sums, "objects");
        cr_assert_eq(json_object_size(objs), 3);
        char want[33];
        xxh3_hex(data, 27610, want);
        cr_assert_str_eq(json_string_value(json_object_get(objs, "data")), want);
        xxh3_hex(data + 1000, (size_t)g.bytes, want);
        cr_assert_str_eq(json_string_value(json_object_get(objs, "m\xc3\xbc")), want);
        xxh3_hex(data + 7, 4, want);
        cr_assert_str_eq(json_string_value(json_object_get(objs, "s")), want);
        /* directory: header + JSON (with its padding) with the directory digits zeroed */
        const char *dig = json_string_value(json_object_get(sums, "directory"));
        cr_assert_eq(strlen(dig), 32);
        size_t jb = (size_t)nf_artifact_json_bytes(a);
        uint8_t *img = malloc(32 + jb);
        memcpy(img, nf_artifact_header(a), 32);
        memcpy(img + 32, nf_artifact_json_text(a), jb);
        char quoted[40];
        tc_sprintf(quoted, sizeof quoted, "\"%s\"", dig);
        char *at = tc_memmem((char *)img + 32, jb, quoted, 34);
        cr_assert_not_null(at);
        cr_assert_null(tc_memmem(at + 1, jb - (size_t)(at + 1 - (char *)img - 32), quoted, 34), "exactly once");
        memset(at + 1, '0', 32);
        xxh3_hex(img, 32 + jb, want);
        cr_assert_str_eq(dig, want, "directory checksum");
        /* the compact text of the checksums member, in place */
        char member[512];
        tc_sprintf(member, sizeof member, "\"checksums\":{\"algorithm\":\"xxh3-128\",\"objects\":{\"data\":\"%s\",",
                   json_string_value(json_object_get(objs, "data")));
        cr_assert_not_null(tc_memmem((char *)nf_artifact_json_text(a), jb, member, strlen(member)));
        free(img);
        free(data);
        nf_artifact_close(a);
        tc_rmtree(dir);
        free(dir);
    }
}

/* ---------------------------------------------------------------- concurrency */
/* Several threads write interleaved pieces of the same objects (the converter encodes chunks on
 * a thread pool); coverage bookkeeping must stay exact. */

typedef struct thread_job {
    nf_writer *w;
    const uint8_t *data;
    size_t index, size, piece, stride, first;
    nf_status st;
} thread_job;

static void *thread_writer(void *arg)
{
    thread_job *j = arg;
    nf_error err;
    j->st = NF_OK;
    for (size_t off = j->first * j->piece; off < j->size && j->st == NF_OK; off += j->stride * j->piece) {
        size_t n = off + j->piece <= j->size ? j->piece : j->size - off;
        j->st = nf_writer_write(j->w, j->index, off, j->data + off, n, &err);
    }
    return NULL;
}

Test(container_write, concurrent_writers)
{
    char *dir = tc_tmpdir();
    tc_path out = tc_join(dir, "t.ninfer");
    nf_writer *w = create(out.s, 16384, true, ID);
    nf_error err;
    size_t idx;
    size_t size = 200000;
    OK(nf_writer_add_resource(w, "big", size, &idx, &err));
    OK(nf_writer_begin(w, &err));
    uint8_t *data = malloc(size);
    tc_rng r = {8};
    for (size_t i = 0; i < size; i++) data[i] = (uint8_t)tc_next(&r);
    enum { T = 4 };
    pthread_t th[T];
    thread_job jobs[T];
    for (size_t t = 0; t < T; t++) {
        jobs[t] = (thread_job){w, data, idx, size, 333, T, t, NF_OK};
        cr_assert_eq(pthread_create(&th[t], NULL, thread_writer, &jobs[t]), 0);
    }
    for (size_t t = 0; t < T; t++) {
        pthread_join(th[t], NULL);
        cr_assert_eq(jobs[t].st, NF_OK);
    }
    OK(nf_writer_finish(w, &err));
    nf_writer_free(w);
    nf_artifact *a;
    OK(nf_artifact_open(out.s, NF_READ_MMAP, &a, &err));
    uint8_t *buf = malloc(size);
    OK(nf_artifact_read(a, 0, buf, size, &err));
    cr_assert_eq(memcmp(buf, data, size), 0);
    free(buf);
    free(data);
    nf_artifact_close(a);
    tc_rmtree(dir);
    free(dir);
}

Test(container_write, missing_destination_directory_is_a_system_error)
{
    nf_writer *w = create("/nonexistent-dir-for-ninfer-tests/x.ninfer", 0, false, ID);
    nf_error err;
    size_t i;
    OK(nf_writer_add_resource(w, "r", 5, &i, &err));
    cr_assert_eq(nf_writer_begin(w, &err), NF_ERR_IO);
    nf_writer_free(w);
    nf_writer *w2 = NULL;
    cr_assert_eq(nf_writer_create("/tmp/", NULL, &w2, &err), NF_ERR_USAGE, "a directory is not an output file");
    cr_assert_null(w2);
}
