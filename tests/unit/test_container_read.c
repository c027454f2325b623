/* The reader: docs/vectors.md items 1, 2 and 15 read from upstream-written or hand-framed file
 * sets, every upstream artifact of tests/data/upstream against its sidecar (ids, sizes, file
 * table, sha256 of every object's bytes), lazy part opening, range-read bounds, both read
 * modes. */
#include "test_container_util.h"

#include "common/hex.h"
#include "common/sha256.h"

static const nf_read_mode MODES[] = {NF_READ_PREAD, NF_READ_MMAP};

static nf_artifact *open_ok(const char *path, nf_read_mode mode)
{
    nf_artifact *a = NULL;
    nf_error err;
    nf_error_clear(&err);
    nf_status st = nf_artifact_open(path, mode, &a, &err);
    cr_assert_eq(st, NF_OK, "%s: %s", path, err.message);
    return a;
}

static void read_ok(nf_artifact *a, uint64_t off, void *buf, size_t len)
{
    nf_error err;
    nf_status st = nf_artifact_read(a, off, buf, len, &err);
    cr_assert_eq(st, NF_OK, "read [%llu, +%zu): %s", (unsigned long long)off, len, err.message);
}

/* ---------------------------------------------------------------- docs/vectors.md item 1 */
Test(container_read, item1_upstream_single_file)
{
    for (size_t m = 0; m < 2; m++) {
        nf_artifact *a = open_ok(TC_UPSTREAM "container_small.ninfer", MODES[m]);
        cr_assert_eq(nf_artifact_entry_payload_start(a), 4096);
        cr_assert_eq(nf_artifact_file_count(a), 1);
        uint64_t total = nf_artifact_payload_bytes(a);
        cr_assert_eq(total, 265);
        uint8_t p[265];
        read_ok(a, 0, p, sizeof p);
        static const uint8_t words[8] = {0x00, 0x00, 0x00, 0x80, 0x80, 0x3F, 0xC1, 0x7F};
        cr_assert_eq(memcmp(p, words, 8), 0, "payload words of w");
        for (size_t i = 8; i < 256; i++) cr_assert_eq(p[i], 0, "gap byte %zu", i);
        static const uint8_t two[4] = {0x00, 0x00, 0x00, 0x40};
        cr_assert_eq(memcmp(p + 256, two, 4), 0, "fp32 2.0 at 256");
        cr_assert_eq(memcmp(p + 260, "hello", 5), 0, "resource at 260 (unaligned)");
        const nf_object *t = nf_artifact_find(a, "template");
        cr_assert_not_null(t);
        cr_assert_eq(t->kind, NF_OBJECT_RESOURCE);
        cr_assert_eq(t->offset, 260);
        /* the last five bytes of the file */
        size_t flen;
        uint8_t *file = tc_read(TC_UPSTREAM "container_small.ninfer", &flen);
        cr_assert_eq(flen, 4096 + 265);
        cr_assert_eq(memcmp(file + flen - 5, "hello", 5), 0);
        free(file);
        /* range reads at the end: zero-length is fine, one byte past is not */
        nf_error err;
        cr_assert_eq(nf_artifact_read(a, total, NULL, 0, &err), NF_OK);
        uint8_t b;
        cr_assert_eq(nf_artifact_read(a, total, &b, 1, &err), NF_ERR_INVALID);
        cr_assert_not_null(strstr(err.message, "outside the payload"), "%s", err.message);
        cr_assert_eq(nf_artifact_read(a, total - 1, &b, 1, &err), NF_OK);
        cr_assert_eq(b, 'o');
        cr_assert_eq(nf_artifact_read(a, UINT64_MAX, &b, 1, &err), NF_ERR_INVALID, "offset + len overflow");
        cr_assert_eq(nf_artifact_read(a, total + 1, NULL, 0, &err), NF_ERR_INVALID, "empty read past the end");
        nf_artifact_close(a);
    }
}

/* ---------------------------------------------------------------- docs/vectors.md item 2 */
/* Split 27,610-byte resource, max_file_bytes 12288: hand-framed exactly as the spec lays it
 * out, then read [8120, 25420) in 503-byte chunks. */
static uint8_t *item2_data(void)
{
    uint8_t *d = malloc(27610);
    for (size_t i = 0; i < 27610; i++) d[i] = (uint8_t)(i % 251);
    return d;
}

Test(container_read, item2_split_reads_in_chunks)
{
    char *dir = tc_tmpdir();
    uint8_t *data = item2_data();
    const char *json =
        "{\"components\":{\"text\":{\"config\":{},\"resources\":{\"data\":\"data\"}}},\"objects\":[{\"id\":\"data\","
        "\"encoding\":\"raw_bytes_v1\",\"offset\":0,\"bytes\":27610,\"kind\":\"resource\"}],\"bindings\":{},\"uses\":"
        "[],\"metadata\":{},\"provenance\":{},\"files\":[{\"path\":null,\"payload_bytes\":8192},{\"path\":"
        "\"large.ninfer.part-0001\",\"payload_bytes\":8192},{\"path\":\"large.ninfer.part-0002\",\"payload_bytes\":"
        "8192},{\"path\":\"large.ninfer.part-0003\",\"payload_bytes\":3034}]}";
    uint64_t segs[4] = {8192, 8192, 8192, 3034};
    uint8_t id[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    tc_frame(dir, "large.ninfer", json, strlen(json), TC_PAD_SPACES, segs, 4, NULL, data, id);
    tc_path entry = tc_join(dir, "large.ninfer");
    for (size_t m = 0; m < 2; m++) {
        nf_artifact *a = open_ok(entry.s, MODES[m]);
        cr_assert_eq(nf_artifact_file_count(a), 4);
        for (size_t i = 0; i < 4; i++) {
            const nf_file_entry *f = nf_artifact_file(a, i);
            cr_assert_eq(f->payload_bytes, segs[i]);
            cr_assert_eq(f->logical_start, 8192 * i);
            char want[64];
            tc_sprintf(want, sizeof want, "large.ninfer.part-%04zu", i);
            if (i == 0) cr_assert_null(f->path);
            else cr_assert_str_eq(f->path, want);
        }
        uint8_t buf[503];
        for (uint64_t off = 8120; off < 25420; off += 503) {
            size_t n = off + 503 <= 25420 ? 503 : (size_t)(25420 - off);
            read_ok(a, off, buf, n);
            cr_assert_eq(memcmp(buf, data + off, n), 0, "chunk at %llu", (unsigned long long)off);
        }
        nf_artifact_close(a);
    }
    free(data);
    tc_rmtree(dir);
    free(dir);
}

/* Readers use files[i].path, not the naming rule (2.2: a part renamed to user-chosen-part). */
Test(container_read, part_names_are_taken_from_the_file_table)
{
    char *dir = tc_tmpdir();
    uint8_t *data = item2_data();
    const char *json =
        "{\"components\":{\"text\":{\"config\":{}}},\"objects\":[{\"id\":\"data\",\"encoding\":\"raw_bytes_v1\","
        "\"offset\":0,\"bytes\":27610,\"kind\":\"resource\"}],\"bindings\":{},\"uses\":[],\"files\":[{\"path\":null,"
        "\"payload_bytes\":8192},{\"path\":\"user-chosen-part\",\"payload_bytes\":19418}]}";
    uint64_t segs[2] = {8192, 19418};
    const char *names[2] = {NULL, "user-chosen-part"};
    uint8_t id[16] = {0};
    tc_frame(dir, "a.ninfer", json, strlen(json), TC_PAD_SPACES, segs, 2, names, data, id);
    tc_path entry = tc_join(dir, "a.ninfer");
    nf_artifact *a = open_ok(entry.s, NF_READ_PREAD);
    uint8_t *all = malloc(27610);
    read_ok(a, 0, all, 27610);
    cr_assert_eq(memcmp(all, data, 27610), 0);
    nf_artifact_close(a);
    free(all);
    free(data);
    tc_rmtree(dir);
    free(dir);
}

/* A missing part only fails when a read needs it (2.8 step 4), and then as an invalid artifact
 * (docs/decisions.md D18), naming the part. */
Test(container_read, missing_part_fails_lazily)
{
    char *dir = tc_tmpdir();
    uint8_t *data = item2_data();
    const char *json =
        "{\"components\":{\"text\":{\"config\":{}}},\"objects\":[{\"id\":\"data\",\"encoding\":\"raw_bytes_v1\","
        "\"offset\":0,\"bytes\":27610,\"kind\":\"resource\"}],\"bindings\":{},\"uses\":[],\"files\":[{\"path\":null,"
        "\"payload_bytes\":8192},{\"path\":\"a.ninfer.part-0001\",\"payload_bytes\":8192},{\"path\":"
        "\"a.ninfer.part-0002\",\"payload_bytes\":11226}]}";
    uint64_t segs[3] = {8192, 8192, 11226};
    uint8_t id[16] = {9};
    tc_frame(dir, "a.ninfer", json, strlen(json), TC_PAD_SPACES, segs, 3, NULL, data, id);
    tc_path part2 = tc_join(dir, "a.ninfer.part-0002");
    cr_assert_eq(unlink(part2.s), 0);
    tc_path entry = tc_join(dir, "a.ninfer");
    nf_artifact *a = open_ok(entry.s, NF_READ_PREAD);
    uint8_t buf[16384];
    read_ok(a, 0, buf, 16384); /* entry + part 1 */
    cr_assert_eq(memcmp(buf, data, 16384), 0);
    nf_error err;
    cr_assert_eq(nf_artifact_read(a, 16380, buf, 8, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "missing part"), "%s", err.message);
    cr_assert_not_null(strstr(err.message, "a.ninfer.part-0002"), "%s", err.message);
    cr_assert_eq(nf_artifact_open_part(a, 2, &err), NF_ERR_INVALID);
    cr_assert_eq(nf_artifact_open_part(a, 1, &err), NF_OK);
    cr_assert_eq(nf_artifact_open_part(a, 3, &err), NF_ERR_USAGE);
    nf_artifact_close(a);
    free(data);
    tc_rmtree(dir);
    free(dir);
}

Test(container_read, entry_io_errors_are_system_errors)
{
    nf_artifact *a = NULL;
    nf_error err;
    cr_assert_eq(nf_artifact_open("/nonexistent/dir/x.ninfer", NF_READ_PREAD, &a, &err), NF_ERR_IO);
    cr_assert_null(a);
    cr_assert_eq(nf_artifact_open(NINFER_TEST_DATA, NF_READ_PREAD, &a, &err), NF_ERR_IO, "a directory");
    /* an injected read failure on the entry is a system error too */
    nf_io_fault_arm(NF_IO_READ, 1, EIO);
    cr_assert_eq(nf_artifact_open(TC_UPSTREAM "container_small.ninfer", NF_READ_PREAD, &a, &err), NF_ERR_IO);
    nf_io_fault_reset();
    cr_assert_null(a);
}

/* ---------------------------------------------------------------- docs/vectors.md item 15 */
/* The C++ reader fixture (fixture.h @ Z-b76e): unaligned segments 500/780/64, JSON followed by
 * a zero gap (json_bytes = the JSON's length), q5 straddling entry and part 1, an unknown
 * format at the end. */
static const char FIXTURE_JSON[] =
    "{\"components\":{\"text\":{\"config\":{},\"resources\":{\"asset\":\"asset\"}}},"
    "\"objects\":[{\"id\":\"asset\",\"encoding\":\"raw_bytes_v1\",\"offset\":0,\"bytes\":5,\"kind\":\"resource\"},"
    "{\"id\":\"q5\",\"shape\":[2,130],\"format\":\"q5_g64_fp16\",\"layout\":\"row_split_k128_v1\",\"offset\":256,"
    "\"bytes\":528,\"kind\":\"tensor\"},"
    "{\"id\":\"scale\",\"shape\":[2],\"format\":\"fp32\",\"layout\":\"contiguous_le_v1\",\"offset\":1024,\"bytes\":8,"
    "\"kind\":\"tensor\"},"
    "{\"id\":\"future\",\"shape\":[64],\"format\":\"future_format\",\"layout\":\"contiguous_le_v1\",\"offset\":1280,"
    "\"bytes\":64,\"kind\":\"tensor\"}],"
    "\"bindings\":{\"w\":{\"parts\":[{\"object\":\"q5\",\"range\":[0,130]},{\"object\":\"q5\",\"range\":[130,260]}]},"
    "\"s\":{\"object\":\"scale\"}},"
    "\"uses\":[{\"parameter\":\"w\",\"input\":\"x\",\"activation_policy\":\"AllowA8\"}],"
    "\"files\":[{\"path\":null,\"payload_bytes\":500},{\"path\":\"fixture.ninfer.part-0001\",\"payload_bytes\":780},"
    "{\"path\":\"fixture.ninfer.part-0002\",\"payload_bytes\":64}]}";

static const uint8_t FIXTURE_ID[16] = {0xfe, 0xed, 0xfa, 0xce, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};

static void fixture_payload(uint8_t p[1344])
{
    memset(p, 0, 1344);
    memcpy(p, "hello", 5);
    p[256 + 128] = 0x52;
    static const uint8_t scales[16] = {0x00, 0x38, 0x00, 0x3C, 0x00, 0x3C, 0x00, 0x00,
                                       0x00, 0x40, 0x00, 0x3C, 0x00, 0x3C, 0x00, 0x00};
    memcpy(p + 768, scales, 16);
    static const uint8_t fp32[8] = {0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x40, 0x40};
    memcpy(p + 1024, fp32, 8);
    for (int i = 0; i < 64; i++) p[1280 + i] = (uint8_t)i;
}

/* Frame the fixture with `json` (possibly mutated) into dir; returns the entry path. */
static tc_path fixture_emit(const char *dir, const char *json, tc_pad pad)
{
    uint8_t p[1344];
    fixture_payload(p);
    uint64_t segs[3] = {500, 780, 64};
    tc_frame(dir, "fixture.ninfer", json, strlen(json), pad, segs, 3, NULL, p, FIXTURE_ID);
    return tc_join(dir, "fixture.ninfer");
}

Test(container_read, item15_cpp_fixture_zero_gap_and_spaces)
{
    const tc_pad pads[2] = {TC_PAD_ZERO_GAP, TC_PAD_SPACES};
    for (size_t k = 0; k < 2; k++) {
        char *dir = tc_tmpdir();
        tc_path entry = fixture_emit(dir, FIXTURE_JSON, pads[k]);
        size_t flen;
        uint8_t *file = tc_read(entry.s, &flen);
        uint64_t jb = tc_get_u64le(file + 8);
        cr_assert_eq(jb, pads[k] == TC_PAD_ZERO_GAP ? strlen(FIXTURE_JSON) : 4064);
        cr_assert_eq(flen, 4096 + 500);
        free(file);
        for (size_t m = 0; m < 2; m++) {
            nf_artifact *a = open_ok(entry.s, MODES[m]);
            cr_assert_eq(nf_artifact_json_bytes(a), jb);
            cr_assert_eq(nf_artifact_entry_payload_start(a), 4096);
            cr_assert_eq(nf_artifact_payload_bytes(a), 1344);
            uint8_t p[1344], want[1344];
            fixture_payload(want);
            read_ok(a, 0, p, 1344);
            cr_assert_eq(memcmp(p, want, 1344), 0);
            nf_error err;
            nf_geometry g;
            const nf_object *q5 = nf_artifact_find(a, "q5");
            cr_assert_eq(nf_artifact_check_object(a, q5, &g, &err), NF_OK, "%s", err.message);
            cr_assert_eq(g.bytes, 528);
            /* q5 through its object reader: crosses the entry/part-1 boundary at 500 */
            nf_byte_reader r;
            nf_artifact_object_reader(a, q5, &r);
            uint8_t q[528];
            cr_assert_eq(r.read(r.ctx, 0, q, 528, &err), NF_OK, "%s", err.message);
            cr_assert_eq(q[128], 0x52);
            cr_assert_eq(memcmp(q + 512, want + 768, 16), 0, "q5 scale words at 768");
            cr_assert_eq(r.read(r.ctx, 1, q, 528, &err), NF_ERR_INVALID, "object reader bound");
            cr_assert_eq(nf_artifact_check_object(a, nf_artifact_find(a, "scale"), NULL, &err), NF_OK);
            cr_assert_eq(nf_artifact_check_object(a, nf_artifact_find(a, "asset"), NULL, &err), NF_OK);
            /* the unknown format opens but its check names it */
            const nf_object *fut = nf_artifact_find(a, "future");
            cr_assert_not_null(fut);
            cr_assert_null(fut->format);
            cr_assert_eq(nf_artifact_check_object(a, fut, NULL, &err), NF_ERR_INVALID);
            cr_assert_not_null(strstr(err.message, "future_format"), "%s", err.message);
            nf_artifact_close(a);
        }
        tc_rmtree(dir);
        free(dir);
    }
}

typedef struct fixture_mutation {
    const char *name, *from, *to, *needle;
} fixture_mutation;

static const fixture_mutation FIXTURE_TEXT_MUTATIONS[] = {
    {"part range {129,261}", "\"range\":[130,260]", "\"range\":[129,261]", "range [129, 261]"},
    {"duplicated use", "\"uses\":[{\"parameter\":\"w\",\"input\":\"x\",\"activation_policy\":\"AllowA8\"}]",
     "\"uses\":[{\"parameter\":\"w\",\"input\":\"x\",\"activation_policy\":\"AllowA8\"},{\"parameter\":\"w\","
     "\"input\":\"x\"}]",
     "duplicate (parameter, input)"},
    {"object offset 4 (overlap)", "\"offset\":256", "\"offset\":4", "offset 4 overlaps the previous object"},
    {"duplicate id", "{\"id\":\"scale\"", "{\"id\":\"q5\"", "duplicate object id"},
    {"path ../other", "\"fixture.ninfer.part-0001\"", "\"../other\"", "not a plain sibling file name"},
    {"payload_bytes 1.5", "\"payload_bytes\":500", "\"payload_bytes\":1.5", "payload_bytes must be a PositiveU64"},
    {"resource role to a tensor", "\"asset\":\"asset\"", "\"asset\":\"q5\"", "is a tensor, not a resource"},
    {"empty components", "{\"text\":{\"config\":{},\"resources\":{\"asset\":\"asset\"}}}", "{}",
     "components must be a non-empty object"},
};

Test(container_read, item15_mutations_are_rejected)
{
    for (size_t i = 0; i < sizeof FIXTURE_TEXT_MUTATIONS / sizeof FIXTURE_TEXT_MUTATIONS[0]; i++) {
        const fixture_mutation *m = &FIXTURE_TEXT_MUTATIONS[i];
        tc_text t = {strdup(FIXTURE_JSON), strlen(FIXTURE_JSON)};
        tc_text_replace(&t, m->from, m->to);
        char *dir = tc_tmpdir();
        tc_path entry = fixture_emit(dir, t.s, TC_PAD_ZERO_GAP);
        nf_error err;
        nf_status st = tc_structure(entry.s, &err);
        cr_assert_eq(st, NF_ERR_INVALID, "%s: accepted (status %d)", m->name, st);
        cr_assert_not_null(strstr(err.message, m->needle), "%s: message '%s' lacks '%s'", m->name, err.message,
                           m->needle);
        free(t.s);
        tc_rmtree(dir);
        free(dir);
    }
}

Test(container_read, item15_file_mutations_are_rejected)
{
    char *dir = tc_tmpdir();
    /* magic byte 7 = 2 */
    tc_path entry = fixture_emit(dir, FIXTURE_JSON, TC_PAD_ZERO_GAP);
    size_t n;
    uint8_t *f = tc_read(entry.s, &n);
    f[7] = 2;
    tc_write(entry.s, f, n);
    tc_expect_invalid(entry.s, "container v2");
    /* truncated entry */
    f[7] = 3;
    tc_write(entry.s, f, n - 1);
    tc_expect_invalid(entry.s, "expected 4596");
    tc_write(entry.s, f, n);
    free(f);
    nf_artifact_close(open_ok(entry.s, NF_READ_PREAD)); /* restored */
    /* foreign part header: another artifact's part 2 */
    tc_path part = tc_join(dir, "fixture.ninfer.part-0002");
    uint8_t *p = tc_read(part.s, &n);
    p[16] ^= 0xFF;
    tc_write(part.s, p, n);
    free(p);
    nf_artifact *a = open_ok(entry.s, NF_READ_PREAD); /* lazily: the entry still opens */
    uint8_t buf[64];
    nf_error err;
    read_ok(a, 0, buf, 64);
    cr_assert_eq(nf_artifact_read(a, 1280, buf, 64, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "does not belong to this entry"), "%s", err.message);
    cr_assert_not_null(strstr(err.message, "artifact_id"), "%s", err.message);
    nf_artifact_close(a);
    tc_rmtree(dir);
    free(dir);
}

/* ---------------------------------------------------------------- upstream artifacts */
static const char *const UPSTREAM_NAMES[] = {"container_small", "direct",    "fp8_row", "gguf",          "model",
                                             "nvfp4",           "row_split", "split",   "wide_directory"};

/* The library's SHA-256 (common/sha256.h) in hex: the sidecars' digests are known answers for it. */
static void sha256_hex(const void *data, size_t n, char hex[65])
{
    nf_sha256 h;
    nf_sha256_init(&h);
    nf_sha256_update(&h, data, n);
    uint8_t d[32];
    nf_sha256_final(&h, d);
    nf_hex_bytes(d, 32, hex);
}

static void check_upstream(const char *name, nf_read_mode mode)
{
    char path[512], side_path[512];
    tc_sprintf(path, sizeof path, TC_UPSTREAM "%s.ninfer", name);
    tc_sprintf(side_path, sizeof side_path, TC_UPSTREAM "%s.ninfer.expected.json", name);
    json_error_t je;
    json_t *side = json_load_file(side_path, 0, &je);
    cr_assert_not_null(side, "%s: %s", side_path, je.text);
    nf_artifact *a = open_ok(path, mode);
    char id[33];
    nf_artifact_id_hex(a, id);
    cr_assert_str_eq(id, json_string_value(json_object_get(side, "artifact_id")), "%s artifact_id", name);
    cr_assert_eq(memcmp(nf_artifact_id(a), nf_artifact_header(a) + 16, 16), 0);
    cr_assert_eq(nf_artifact_json_bytes(a), (uint64_t)json_integer_value(json_object_get(side, "json_bytes")));
    cr_assert_eq(nf_artifact_entry_payload_start(a),
                 (uint64_t)json_integer_value(json_object_get(side, "payload_offset")), "%s payload start", name);
    /* upstream pads with spaces: json_bytes = payload start - 32 */
    cr_assert_eq(nf_artifact_json_bytes(a) + 32, nf_artifact_entry_payload_start(a));
    const json_t *files = json_object_get(side, "files");
    cr_assert_eq(nf_artifact_file_count(a), json_array_size(files), "%s file count", name);
    uint64_t total = 0;
    for (size_t i = 0; i < json_array_size(files); i++) {
        const json_t *f = json_array_get(files, i);
        const nf_file_entry *e = nf_artifact_file(a, i);
        const json_t *p = json_object_get(f, "path");
        if (json_is_null(p)) cr_assert_null(e->path);
        else cr_assert_str_eq(e->path, json_string_value(p));
        cr_assert_eq(e->payload_bytes, (uint64_t)json_integer_value(json_object_get(f, "payload_bytes")));
        cr_assert_eq(e->logical_start, total);
        total += e->payload_bytes;
        char fp[512];
        tc_sprintf(fp, sizeof fp, TC_UPSTREAM "%s", i ? e->path : "");
        if (!i) tc_sprintf(fp, sizeof fp, "%s", path);
        struct stat st;
        cr_assert_eq(stat(fp, &st), 0, "%s", fp);
        cr_assert_eq((uint64_t)st.st_size, (uint64_t)json_integer_value(json_object_get(f, "file_bytes")), "%s", fp);
    }
    cr_assert_eq(nf_artifact_payload_bytes(a), total);
    const json_t *objs = json_object_get(side, "objects");
    cr_assert_eq(nf_artifact_object_count(a), json_object_size(objs), "%s object count", name);
    const char *oid;
    json_t *exp;
    json_object_foreach((json_t *)objs, oid, exp)
    {
        const nf_object *o = nf_artifact_find(a, oid);
        cr_assert_not_null(o, "%s: object %s", name, oid);
        cr_assert_eq(o->offset, (uint64_t)json_integer_value(json_object_get(exp, "offset")));
        cr_assert_eq(o->bytes, (uint64_t)json_integer_value(json_object_get(exp, "bytes")));
        const char *kind = json_string_value(json_object_get(exp, "kind"));
        cr_assert_eq(o->kind, strcmp(kind, "tensor") == 0 ? NF_OBJECT_TENSOR : NF_OBJECT_RESOURCE);
        nf_error err;
        cr_assert_eq(nf_artifact_check_object(a, o, NULL, &err), NF_OK, "%s: %s", name, err.message);
        uint8_t *buf = malloc((size_t)o->bytes);
        nf_byte_reader r;
        nf_artifact_object_reader(a, o, &r);
        cr_assert_eq(r.read(r.ctx, 0, buf, (size_t)o->bytes, &err), NF_OK, "%s", err.message);
        char hex[65];
        sha256_hex(buf, (size_t)o->bytes, hex);
        cr_assert_str_eq(hex, json_string_value(json_object_get(exp, "sha256")), "%s: sha256 of %s", name, oid);
        free(buf);
    }
    nf_artifact_close(a);
    json_decref(side);
}

Test(container_read, upstream_artifacts_match_their_sidecars)
{
    char hex[65];
    sha256_hex("abc", 3, hex); /* FIPS 180-4 example (tests/unit/test_mprog.c has the others) */
    cr_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    for (size_t i = 0; i < sizeof UPSTREAM_NAMES / sizeof UPSTREAM_NAMES[0]; i++)
        for (size_t m = 0; m < 2; m++) check_upstream(UPSTREAM_NAMES[i], MODES[m]);
}

/* nf_directory_parse is the fuzz entry point: it must agree with open on the upstream texts. */
Test(container_read, directory_parse_accepts_upstream_texts)
{
    for (size_t i = 0; i < sizeof UPSTREAM_NAMES / sizeof UPSTREAM_NAMES[0]; i++) {
        char path[512];
        tc_sprintf(path, sizeof path, TC_UPSTREAM "%s.ninfer", UPSTREAM_NAMES[i]);
        nf_artifact *a = open_ok(path, NF_READ_PREAD);
        json_t *root = NULL;
        nf_error err;
        char entry[256];
        tc_sprintf(entry, sizeof entry, "%s.ninfer", UPSTREAM_NAMES[i]);
        cr_assert_eq(
            nf_directory_parse(nf_artifact_json_text(a), (size_t)nf_artifact_json_bytes(a), entry, &root, &err), NF_OK,
            "%s", err.message);
        cr_assert(json_equal(root, (json_t *)nf_artifact_directory(a)));
        json_decref(root);
        nf_artifact_close(a);
    }
}
