/* Every structural mutation class of the conformance suite's reject cases (framing, JSON text,
 * closed schema at every level, objects, references, file table), applied to a base artifact
 * with the same objects as the suite's (a resource and twelve tensors of eleven formats, a
 * component with resources, bindings with parts, uses with a policy).  Each mutant must be
 * refused with NF_ERR_INVALID and a message naming the problem.  The base artifacts are framed
 * by the test helpers (jansson's dumper, hand-written headers), not by the library's writer.
 * Further in-memory cases drive nf_directory_parse (the fuzz entry point) directly. */
#include "test_container_util.h"

#define SPLIT 8192u

static void base(tc_art *a)
{
    tc_art_init(a);
    uint8_t res[37];
    for (int i = 0; i < 37; i++) res[i] = (uint8_t)(i * 7 + 3);
    tc_art_resource(a, "res.bin", res, sizeof res);
    tc_art_tensor(a, "w.q4", "q4_g64_fp16", (uint64_t[]){3, 40}, 2, 1, NULL);
    tc_art_tensor(a, "w.q5", "q5_g64_fp16", (uint64_t[]){2, 65}, 2, 1, NULL);
    tc_art_tensor(a, "w.q6", "q6_g64_fp16", (uint64_t[]){2, 100}, 2, 1, NULL);
    tc_art_tensor(a, "w.q8", "q8_g32_fp16", (uint64_t[]){2, 40}, 2, 1, NULL);
    tc_art_tensor(a, "w.t2", "t2_g128_fp16", (uint64_t[]){2, 130}, 2, 1, NULL);
    tc_art_tensor(a, "w.q2", "q2_g64_fp16", (uint64_t[]){2, 65}, 2, 1, NULL);
    tc_art_tensor(a, "w.nvfp4", "nvfp4", (uint64_t[]){128, 64}, 2, 1, NULL);
    tc_art_tensor(a, "w.fp8b", "fp8_e4m3fn_row_bf16", (uint64_t[]){3, 5}, 2, 1, NULL);
    tc_art_tensor(a, "w.fp8h", "fp8_e4m3fn_row_fp16", (uint64_t[]){2, 5}, 2, 1, NULL);
    tc_art_tensor(a, "w.bf16", "bf16", (uint64_t[]){40, 100}, 2, 1, NULL);
    tc_art_tensor(a, "w.fp32", "fp32", (uint64_t[]){3}, 1, 1, NULL);
    json_object_set_new(
        a->root, "components",
        json_pack("{s:{s:{s:i},s:{s:s}}}", "text", "config", "seed", 1, "resources", "blob", "res.bin"));
    json_object_set_new(a->root, "bindings",
                        json_pack("{s:{s:s},s:{s:s},s:{s:s},s:{s:[{s:s,s:[i,i]},{s:s,s:[i,i]}]}}", "w.q4", "object",
                                  "w.q4", "w.q8", "object", "w.q8", "w.fp32", "object", "w.fp32", "stack", "parts",
                                  "object", "w.q5", "range", 0, 65, "object", "w.q6", "range", 100, 200));
    json_object_set_new(a->root, "uses",
                        json_pack("[{s:s,s:s,s:s},{s:s,s:s}]", "parameter", "w.q4", "input", "x", "activation_policy",
                                  "AllowA8", "parameter", "stack", "input", "x"));
    json_object_set_new(a->root, "metadata", json_pack("{s:s}", "name", "reject-base"));
    json_object_set_new(a->root, "provenance", json_pack("{s:s}", "converter", "conformance-oracle"));
}

typedef struct fixture {
    tc_art a;
    char *dir;
    tc_path entry;
} fixture;

static void setup(fixture *f)
{
    base(&f->a);
    f->dir = tc_tmpdir();
}

static void teardown(fixture *f)
{
    tc_art_free(&f->a);
    tc_rmtree(f->dir);
    free(f->dir);
}

static tc_path emit(fixture *f, uint64_t split, tc_text_fn text_fn, tc_files_fn files_fn)
{
    f->entry = tc_art_emit(&f->a, f->dir, "a.ninfer", split, text_fn, files_fn);
    return f->entry;
}

/* Mutate the directory tree (variable r), emit, expect rejection. */
#define ROOT_MUT(name, needle, ...)           \
    Test(container_reject, name)              \
    {                                         \
        fixture f;                            \
        setup(&f);                            \
        json_t *r = f.a.root;                 \
        (void)r;                              \
        __VA_ARGS__;                          \
        emit(&f, 0, NULL, NULL);              \
        tc_expect_invalid(f.entry.s, needle); \
        teardown(&f);                         \
    }

/* Mutate the JSON text. */
#define TEXT_MUT(name, needle, from, to)                                  \
    static void name##_text(tc_text *t) { tc_text_replace(t, from, to); } \
    Test(container_reject, name)                                          \
    {                                                                     \
        fixture f;                                                        \
        setup(&f);                                                        \
        emit(&f, 0, name##_text, NULL);                                   \
        tc_expect_invalid(f.entry.s, needle);                             \
        teardown(&f);                                                     \
    }

/* Edit the files table shown in the JSON (variable files), not the files written. */
#define FILES_MUT(name, needle, split, ...)                  \
    static void name##_files(json_t *files) { __VA_ARGS__; } \
    Test(container_reject, name)                             \
    {                                                        \
        fixture f;                                           \
        setup(&f);                                           \
        emit(&f, split, NULL, name##_files);                 \
        tc_expect_invalid(f.entry.s, needle);                \
        teardown(&f);                                        \
    }

static json_t *obj(json_t *root, const char *id)
{
    json_t *objs = json_object_get(root, "objects");
    for (size_t i = 0; i < json_array_size(objs); i++) {
        json_t *o = json_array_get(objs, i);
        if (strcmp(json_string_value(json_object_get(o, "id")), id) == 0) return o;
    }
    cr_assert_fail("no object %s", id);
    return NULL;
}

static size_t obj_index(json_t *root, const char *id)
{
    json_t *objs = json_object_get(root, "objects");
    for (size_t i = 0; i < json_array_size(objs); i++)
        if (strcmp(json_string_value(json_object_get(json_array_get(objs, i), "id")), id) == 0) return i;
    cr_assert_fail("no object %s", id);
    return 0;
}

static uint64_t geti(json_t *o, const char *k) { return (uint64_t)json_integer_value(json_object_get(o, k)); }

/* ---------------------------------------------------------------- the bases are valid */
Test(container_reject, base_is_valid)
{
    fixture f;
    setup(&f);
    emit(&f, 0, NULL, NULL);
    nf_error err;
    cr_assert_eq(tc_structure(f.entry.s, &err), NF_OK, "%s", err.message);
    teardown(&f);
}

Test(container_reject, base_split_is_valid)
{
    fixture f;
    setup(&f);
    emit(&f, SPLIT, NULL, NULL);
    nf_error err;
    cr_assert_eq(tc_structure(f.entry.s, &err), NF_OK, "%s", err.message);
    nf_artifact *a;
    cr_assert_eq(nf_artifact_open(f.entry.s, NF_READ_PREAD, &a, &err), NF_OK);
    cr_assert_geq(nf_artifact_file_count(a), 3, "the split base needs at least 3 files");
    uint8_t *all = malloc(f.a.len);
    cr_assert_eq(nf_artifact_read(a, 0, all, f.a.len, &err), NF_OK, "%s", err.message);
    cr_assert_eq(memcmp(all, f.a.payload, f.a.len), 0);
    free(all);
    nf_artifact_close(a);
    teardown(&f);
}

/* ---------------------------------------------------------------- framing (2.3, 2.4, 2.8 1-4) */
static void rewrite(const char *path, size_t pos, const void *bytes, size_t n, long delta)
{
    size_t len;
    uint8_t *d = tc_read(path, &len);
    if (bytes) memcpy(d + pos, bytes, n);
    size_t out = (size_t)((long)len + delta);
    if (delta > 0) {
        d = realloc(d, out);
        memset(d + len, 0, (size_t)delta);
    }
    tc_write(path, d, out);
    free(d);
}

#define FILE_MUT(name, needle, split, ...)                                                                  \
    Test(container_reject, name)                                                                            \
    {                                                                                                       \
        fixture f;                                                                                          \
        setup(&f);                                                                                          \
        emit(&f, split, NULL, NULL);                                                                        \
        const char *p = f.entry.s;                                                                          \
        tc_path part1 = tc_join(f.dir, "a.ninfer.part-0001"), part2 = tc_join(f.dir, "a.ninfer.part-0002"); \
        (void)p;                                                                                            \
        (void)part1;                                                                                        \
        (void)part2;                                                                                        \
        __VA_ARGS__;                                                                                        \
        tc_expect_invalid(f.entry.s, needle);                                                               \
        teardown(&f);                                                                                       \
    }

FILE_MUT(bad_magic, "bad magic", 0, rewrite(p, 0, "XINFER", 6, 0))
FILE_MUT(version_byte_2, "container v2", 0, rewrite(p, 7, "\x02", 1, 0))
FILE_MUT(version_byte_1, "container v1", 0, rewrite(p, 7, "\x01", 1, 0))
FILE_MUT(json_bytes_beyond_file, "json_bytes", 0, {
    size_t n;
    free(tc_read(p, &n));
    uint8_t le[8];
    tc_put_u64le(le, n);
    rewrite(p, 8, le, 8, 0);
})
FILE_MUT(json_bytes_zero, "json_bytes 0 outside", 0, rewrite(p, 8, "\0\0\0\0\0\0\0\0", 8, 0))
FILE_MUT(entry_size_mismatch, "the entry file is", 0, rewrite(p, 0, NULL, 0, 1))
FILE_MUT(truncated_entry, "the entry file is", 0, rewrite(p, 0, NULL, 0, -1))
FILE_MUT(entry_shorter_than_header, "shorter than its 32-byte header", 0, {
    size_t n;
    free(tc_read(p, &n));
    rewrite(p, 0, NULL, 0, -(long)n + 20);
})
FILE_MUT(wrong_part_index, "part_index 2, expected 1", SPLIT, rewrite(part1.s, 8, "\x02\0\0\0\0\0\0\0", 8, 0))
FILE_MUT(part_bad_magic, "not a .ninfer part (bad magic)", SPLIT, rewrite(part1.s, 0, "NINFER", 6, 0))
FILE_MUT(truncated_part, "a.ninfer.part-0002 is", SPLIT, rewrite(part2.s, 0, NULL, 0, -1))
FILE_MUT(missing_part, "missing part file", SPLIT, cr_assert_eq(unlink(part2.s), 0))

Test(container_reject, part_from_another_artifact)
{
    fixture f;
    setup(&f);
    emit(&f, SPLIT, NULL, NULL);
    /* the same artifact written again with another id, in a subdirectory; its part 2 replaces
     * ours */
    tc_path other = tc_join(f.dir, "other");
    cr_assert_eq(mkdir(other.s, 0700), 0);
    for (int i = 0; i < 16; i++) f.a.id[i] = (uint8_t)~f.a.id[i];
    tc_art_emit(&f.a, other.s, "a.ninfer", SPLIT, NULL, NULL);
    tc_path theirs = tc_join(other.s, "a.ninfer.part-0002"), ours = tc_join(f.dir, "a.ninfer.part-0002");
    cr_assert_eq(rename(theirs.s, ours.s), 0);
    tc_expect_invalid(f.entry.s, "artifact_id");
    tc_expect_invalid(f.entry.s, "does not belong to this entry");
    teardown(&f);
}

/* ---------------------------------------------------------------- JSON text (2.6) */
TEXT_MUT(duplicate_json_member_root, "duplicate JSON member", "{\"components\":", "{\"uses\":[],\"components\":")
TEXT_MUT(duplicate_json_member_object, "duplicate JSON member", "\"id\":\"w.q8\",", "\"id\":\"w.q8\",\"id\":\"w.q8\",")
TEXT_MUT(duplicate_json_member_escaped, "duplicate JSON member", "\"id\":\"w.q8\",",
         "\"id\":\"w.q8\",\"\\u0069d\":\"w.q8\",")
TEXT_MUT(nan_literal, "NaN", "\"metadata\":{", "\"metadata\":{\"x\":NaN,")
TEXT_MUT(infinity_literal, "Infinity", "\"metadata\":{", "\"metadata\":{\"x\":-Infinity,")
TEXT_MUT(invalid_utf8, "not UTF-8", "\"name\":\"reject-base\"", "\"name\":\"reject-\xff\"")
TEXT_MUT(overlong_utf8, "not UTF-8", "\"name\":\"reject-base\"", "\"name\":\"reject-\xc0\xaf\"")
TEXT_MUT(surrogate_utf8, "not UTF-8", "\"name\":\"reject-base\"", "\"name\":\"reject-\xed\xa0\x80\"")

/* files[0].payload_bytes N -> N.0: the same value, but not a JSON integer. */
static void float_payload_text(tc_text *t)
{
    char *at = tc_memmem(t->s, t->len, "\"payload_bytes\":", 16);
    cr_assert_not_null(at);
    at += 16;
    while (*at >= '0' && *at <= '9') at++;
    size_t pre = (size_t)(at - t->s);
    char *n = malloc(t->len + 3);
    memcpy(n, t->s, pre);
    memcpy(n + pre, ".0", 2);
    memcpy(n + pre + 2, at, t->len - pre + 1);
    free(t->s);
    t->s = n;
    t->len += 2;
}

Test(container_reject, payload_bytes_not_integer)
{
    fixture f;
    setup(&f);
    emit(&f, 0, float_payload_text, NULL);
    tc_expect_invalid(f.entry.s, "files[0].payload_bytes must be a PositiveU64 (got ");
    teardown(&f);
}
TEXT_MUT(offset_not_integer, "offset must be a U64", "\"offset\":0,", "\"offset\":0.0,")
TEXT_MUT(bytes_boolean, "bytes must be a PositiveU64", "\"bytes\":37,", "\"bytes\":true,")
TEXT_MUT(integer_beyond_int64, "out of range", "\"offset\":0,", "\"offset\":18446744073709551616,")
TEXT_MUT(not_json, "not valid JSON", "{\"components\":", "{components:")

static void trailing_text(tc_text *t)
{
    t->s = realloc(t->s, t->len + 3);
    memcpy(t->s + t->len, " x", 3);
    t->len += 2;
}

Test(container_reject, trailing_garbage)
{
    fixture f;
    setup(&f);
    emit(&f, 0, trailing_text, NULL);
    tc_expect_invalid(f.entry.s, "trailing data");
    teardown(&f);
}

/* ---------------------------------------------------------------- closed schema (2.6) */
ROOT_MUT(unknown_root_member, "root: unknown member 'version'", json_object_set_new(r, "version", json_integer(3)))
ROOT_MUT(unknown_member_in_object, "objects[1] ('w.q4'): unknown member 'extra'",
         json_object_set_new(obj(r, "w.q4"), "extra", json_integer(1)))
ROOT_MUT(unknown_member_in_resource, "objects[0] ('res.bin'): unknown member 'divisors'",
         json_object_set_new(obj(r, "res.bin"), "divisors", json_integer(1)))
ROOT_MUT(unknown_member_in_component, "components['text']: unknown member 'extra'",
         json_object_set_new(json_object_get(json_object_get(r, "components"), "text"), "extra", json_object()))
ROOT_MUT(unknown_member_in_binding, "bindings['w.q4']: unknown member 'range'",
         json_object_set_new(json_object_get(json_object_get(r, "bindings"), "w.q4"), "range",
                             json_pack("[i,i]", 0, 1)))
ROOT_MUT(unknown_member_in_part, "bindings['stack'].parts[0]: unknown member 'x'",
         json_object_set_new(
             json_array_get(json_object_get(json_object_get(json_object_get(r, "bindings"), "stack"), "parts"), 0), "x",
             json_null()))
ROOT_MUT(unknown_member_in_use, "uses[0]: unknown member 'extra'",
         json_object_set_new(json_array_get(json_object_get(r, "uses"), 0), "extra", json_true()))
ROOT_MUT(missing_bindings, "root: missing member 'bindings'", json_object_del(r, "bindings"))
ROOT_MUT(missing_uses, "root: missing member 'uses'", json_object_del(r, "uses"))
ROOT_MUT(missing_object_member, "objects[3] ('w.q6'): missing member 'layout'",
         json_object_del(obj(r, "w.q6"), "layout"))
ROOT_MUT(missing_use_input, "uses[1]: missing member 'input'",
         json_object_del(json_array_get(json_object_get(r, "uses"), 1), "input"))
ROOT_MUT(empty_objects, "objects must be a non-empty array", json_object_set_new(r, "objects", json_array()))
ROOT_MUT(objects_not_array, "objects must be a non-empty array", json_object_set_new(r, "objects", json_object()))
ROOT_MUT(object_not_object, "objects[12] must be an object",
         json_array_append_new(json_object_get(r, "objects"), json_integer(5)))
ROOT_MUT(empty_components, "components must be a non-empty object", json_object_set_new(r, "components", json_object()))
ROOT_MUT(component_without_config, "components['text']: missing member 'config'",
         json_object_del(json_object_get(json_object_get(r, "components"), "text"), "config"))
ROOT_MUT(component_config_not_object, "components['text'].config must be an object",
         json_object_set_new(json_object_get(json_object_get(r, "components"), "text"), "config", json_array()))
ROOT_MUT(proposal_on_non_text, "proposal is only allowed on component 'text'",
         json_object_set_new(json_object_get(r, "components"), "other",
                             json_pack("{s:{},s:{s:s}}", "config", "proposal", "domain", "full")))
ROOT_MUT(proposal_full_with_rows, "components['text'].proposal: unknown member 'rows'",
         json_object_set_new(json_object_get(json_object_get(r, "components"), "text"), "proposal",
                             json_pack("{s:s,s:i}", "domain", "full", "rows", 3)))
ROOT_MUT(proposal_indexed_zero_rows, "proposal.rows must be a PositiveU64",
         json_object_set_new(json_object_get(json_object_get(r, "components"), "text"), "proposal",
                             json_pack("{s:s,s:i}", "domain", "indexed", "rows", 0)))
ROOT_MUT(proposal_unknown_domain, "proposal.domain must be",
         json_object_set_new(json_object_get(json_object_get(r, "components"), "text"), "proposal",
                             json_pack("{s:s,s:i}", "domain", "sparse", "rows", 2)))
ROOT_MUT(component_target_missing, "target 'nowhere' must name another component",
         json_object_set_new(json_object_get(json_object_get(r, "components"), "text"), "target",
                             json_string("nowhere")))
ROOT_MUT(component_target_self, "target 'text' must name another component",
         json_object_set_new(json_object_get(json_object_get(r, "components"), "text"), "target", json_string("text")))
ROOT_MUT(component_name_empty, "component name must be an ID",
         json_object_set_new(json_object_get(r, "components"), "", json_pack("{s:{}}", "config")))
ROOT_MUT(resource_role_to_tensor, "components['text'].resources['blob']: 'w.q4' is a tensor, not a resource",
         json_object_set_new(json_object_get(json_object_get(json_object_get(r, "components"), "text"), "resources"),
                             "blob", json_string("w.q4")))
ROOT_MUT(resource_role_to_missing, "'nothing' names no object",
         json_object_set_new(json_object_get(json_object_get(json_object_get(r, "components"), "text"), "resources"),
                             "blob", json_string("nothing")))
ROOT_MUT(metadata_name_empty, "metadata.name must be an ID",
         json_object_set_new(json_object_get(r, "metadata"), "name", json_string("")))
ROOT_MUT(metadata_not_object, "metadata must be an object", json_object_set_new(r, "metadata", json_array()))
ROOT_MUT(provenance_not_object, "provenance must be an object", json_object_set_new(r, "provenance", json_string("x")))
ROOT_MUT(kind_unknown, "objects[2] ('w.q5'): kind must be \"tensor\" or \"resource\"",
         json_object_set_new(json_array_get(json_object_get(r, "objects"), 2), "kind", json_string("blob")))
ROOT_MUT(kind_missing, "kind must be", json_object_del(obj(r, "w.q5"), "kind"))
ROOT_MUT(id_with_nul, "id must be an ID", json_object_set_new(obj(r, "w.q8"), "id", json_stringn("w\0q8", 4)))
ROOT_MUT(format_not_id, "format must be an ID", json_object_set_new(obj(r, "w.q8"), "format", json_string("")))

/* ---------------------------------------------------------------- objects (2.6, 2.8 step 6) */
Test(container_reject, duplicate_object_id)
{
    fixture f;
    setup(&f);
    json_object_set_new(obj(f.a.root, "w.q6"), "id", json_string("w.q5"));
    json_t *p1 = json_array_get(
        json_object_get(json_object_get(json_object_get(f.a.root, "bindings"), "stack"), "parts"), 1);
    json_object_set_new(p1, "object", json_string("w.q5"));
    json_object_set_new(p1, "range", json_pack("[i,i]", 0, 65));
    emit(&f, 0, NULL, NULL);
    tc_expect_invalid(f.entry.s, "objects[3] ('w.q5'): duplicate object id (objects[2] has it too)");
    teardown(&f);
}

ROOT_MUT(overlapping_objects, "objects[3] ('w.q6'): offset 768 overlaps the previous object", {
    size_t i = obj_index(r, "w.q6");
    json_t *objs = json_object_get(r, "objects");
    json_object_set_new(json_array_get(objs, i), "offset",
                        json_integer((json_int_t)geti(json_array_get(objs, i - 1), "offset")));
})
ROOT_MUT(objects_out_of_order, "overlaps the previous object", {
    size_t i = obj_index(r, "w.q6");
    json_t *objs = json_object_get(r, "objects");
    json_t *prev = json_incref(json_array_get(objs, i - 1));
    json_array_remove(objs, i - 1);
    json_array_insert_new(objs, i, prev);
})
ROOT_MUT(object_beyond_payload, "('w.fp32'): ends at", {
    json_t *last = json_array_get(json_object_get(r, "objects"), json_array_size(json_object_get(r, "objects")) - 1);
    json_object_set_new(last, "offset", json_integer((json_int_t)geti(last, "offset") + 256));
})
ROOT_MUT(offset_and_bytes_huge, "beyond the payload", {
    json_t *last = json_array_get(json_object_get(r, "objects"), json_array_size(json_object_get(r, "objects")) - 1);
    json_object_set_new(last, "offset", json_integer(INT64_MAX));
    json_object_set_new(last, "bytes", json_integer(INT64_MAX));
})
ROOT_MUT(misaligned_tensor_offset, "object 'w.q5': offset 640 is not 256-aligned",
         json_object_set_new(obj(r, "w.q5"), "offset", json_integer((json_int_t)geti(obj(r, "w.q5"), "offset") - 128)))

Test(container_reject, bytes_not_encoded_size)
{
    fixture f;
    setup(&f);
    json_t *last = obj(f.a.root, "w.fp32");
    json_object_set_new(last, "bytes", json_integer((json_int_t)geti(last, "bytes") + 4));
    tc_art_grow(&f.a, f.a.len + 4);
    emit(&f, 0, NULL, NULL);
    tc_expect_invalid(f.entry.s, "object 'w.fp32': bytes 16 != encoded size 12");
    teardown(&f);
}

ROOT_MUT(shape_changed, "object 'w.q8': bytes", json_object_set_new(obj(r, "w.q8"), "shape", json_pack("[i,i]", 3, 40)))
ROOT_MUT(shape_zero_dim, "objects[11] ('w.fp32'): shape[0] must be a positive integer",
         json_object_set_new(obj(r, "w.fp32"), "shape", json_pack("[i,i]", 0, 3)))
ROOT_MUT(shape_too_many_dims, "shape must be an array of at most 16 dimensions",
         json_object_set_new(obj(r, "w.fp32"), "shape",
                             json_pack("[i,i,i,i,i,i,i,i,i,i,i,i,i,i,i,i,i]", 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                       1, 1, 3)))
ROOT_MUT(shape_elements_overflow, "element count of the shape overflows U64",
         json_object_set_new(obj(r, "w.fp32"), "shape",
                             json_pack("[I,I,i]", (json_int_t)1 << 32, (json_int_t)1 << 32, 3)))
ROOT_MUT(offset_negative, "objects[0] ('res.bin'): offset must be a U64",
         json_object_set_new(obj(r, "res.bin"), "offset", json_integer(-1)))
ROOT_MUT(bytes_zero, "objects[0] ('res.bin'): bytes must be a PositiveU64",
         json_object_set_new(obj(r, "res.bin"), "bytes", json_integer(0)))
ROOT_MUT(unknown_layout, "object 'w.q8': unknown layout 'row_split_k256_v9'",
         json_object_set_new(obj(r, "w.q8"), "layout", json_string("row_split_k256_v9")))
ROOT_MUT(format_layout_mismatch, "does not accept",
         json_object_set_new(obj(r, "w.q8"), "layout", json_string("contiguous_le_v1")))
ROOT_MUT(tensor_with_resource_encoding, "object 'w.q8'",
         json_object_set_new(obj(r, "w.q8"), "layout", json_string("raw_bytes_v1")))
ROOT_MUT(divisors_on_q4, "object 'w.q4'", json_object_set_new(obj(r, "w.q4"), "divisors", json_integer(2)))
ROOT_MUT(divisors_zero, "divisors must be a PositiveU64",
         json_object_set_new(obj(r, "w.nvfp4"), "divisors", json_integer(0)))
ROOT_MUT(resource_encoding_unknown, "object 'res.bin': unknown resource encoding 'raw_bytes_v2'",
         json_object_set_new(obj(r, "res.bin"), "encoding", json_string("raw_bytes_v2")))
ROOT_MUT(resource_encoding_is_a_layout, "unknown resource encoding 'contiguous_le_v1'",
         json_object_set_new(obj(r, "res.bin"), "encoding", json_string("contiguous_le_v1")))

/* An unknown format: the artifact opens and every other object reads; only that object's check
 * fails (2.8 step 6). */
Test(container_reject, unknown_format)
{
    fixture f;
    setup(&f);
    size_t off = (size_t)tc_align(f.a.len, 256);
    tc_art_grow(&f.a, off + 64);
    for (int i = 0; i < 64; i++) f.a.payload[off + (size_t)i] = (uint8_t)i;
    json_array_append_new(json_object_get(f.a.root, "objects"),
                          json_pack("{s:s,s:[i],s:s,s:s,s:I,s:i,s:s}", "id", "w.future", "shape", 64, "format",
                                    "future_format", "layout", "contiguous_le_v1", "offset", (json_int_t)off, "bytes",
                                    64, "kind", "tensor"));
    emit(&f, 0, NULL, NULL);
    tc_expect_invalid(f.entry.s, "object 'w.future': unknown format 'future_format'");
    nf_artifact *a;
    nf_error err;
    cr_assert_eq(nf_artifact_open(f.entry.s, NF_READ_PREAD, &a, &err), NF_OK, "%s", err.message);
    /* the check names neither the artifact nor the object: its caller does, once */
    cr_assert_eq(nf_artifact_check_object(a, nf_artifact_find(a, "w.future"), NULL, &err), NF_ERR_INVALID);
    cr_assert_str_eq(err.message, "unknown format 'future_format'");
    for (size_t i = 0; i + 1 < nf_artifact_object_count(a); i++)
        cr_assert_eq(nf_artifact_check_object(a, nf_artifact_object(a, i), NULL, &err), NF_OK, "%s", err.message);
    uint8_t buf[64];
    const nf_object *fut = nf_artifact_find(a, "w.future");
    cr_assert_eq(nf_artifact_read(a, fut->offset, buf, 64, &err), NF_OK);
    cr_assert_eq(buf[63], 63);
    nf_artifact_close(a);
    teardown(&f);
}

/* ---------------------------------------------------------------- references (2.6) */
#define BINDINGS json_object_get(r, "bindings")
#define STACK_PART(i) json_array_get(json_object_get(json_object_get(BINDINGS, "stack"), "parts"), i)
ROOT_MUT(binding_to_missing_object, "bindings['ghost']: 'w.ghost' names no object",
         json_object_set_new(BINDINGS, "ghost", json_pack("{s:s}", "object", "w.ghost")))
ROOT_MUT(binding_to_resource, "bindings['ghost']: 'res.bin' is a resource, not a tensor object",
         json_object_set_new(BINDINGS, "ghost", json_pack("{s:s}", "object", "res.bin")))
ROOT_MUT(binding_object_not_string, "names no object",
         json_object_set_new(BINDINGS, "ghost", json_pack("{s:i}", "object", 3)))
ROOT_MUT(binding_object_and_parts, "bindings['w.q4']: unknown member 'parts'",
         json_object_set_new(json_object_get(BINDINGS, "w.q4"), "parts", json_array()))
ROOT_MUT(binding_neither_form, "bindings['ghost']: missing member 'parts'",
         json_object_set_new(BINDINGS, "ghost", json_object()))
ROOT_MUT(binding_name_empty, "binding name must be an ID",
         json_object_set_new(BINDINGS, "", json_pack("{s:s}", "object", "w.q4")))
ROOT_MUT(part_range_beyond_elements, "bindings['stack'].parts[0].range [0, 131] is empty or outside the 130 elements",
         json_object_set_new(STACK_PART(0), "range", json_pack("[i,i]", 0, 131)))
ROOT_MUT(part_range_empty, "parts[1].range [7, 7]",
         json_object_set_new(STACK_PART(1), "range", json_pack("[i,i]", 7, 7)))
ROOT_MUT(part_range_three_elements, "range must be [begin, end]",
         json_object_set_new(STACK_PART(1), "range", json_pack("[i,i,i]", 1, 2, 3)))
ROOT_MUT(part_range_negative, "range must be [begin, end]",
         json_object_set_new(STACK_PART(1), "range", json_pack("[i,i]", -1, 2)))
ROOT_MUT(part_to_resource, "parts[0]: 'res.bin' is a resource",
         json_object_set_new(STACK_PART(0), "object", json_string("res.bin")))
ROOT_MUT(parts_empty, "bindings['stack'].parts must be a non-empty array",
         json_object_set_new(json_object_get(BINDINGS, "stack"), "parts", json_array()))
ROOT_MUT(use_unknown_parameter, "uses[2]: parameter 'w.ghost' is not bound",
         json_array_append_new(json_object_get(r, "uses"),
                               json_pack("{s:s,s:s}", "parameter", "w.ghost", "input", "x")))
ROOT_MUT(use_input_empty, "uses[1]: input must be an ID",
         json_object_set_new(json_array_get(json_object_get(r, "uses"), 1), "input", json_string("")))
ROOT_MUT(bad_activation_policy, "uses[0]: activation_policy 'AllowA2' is not one of",
         json_object_set_new(json_array_get(json_object_get(r, "uses"), 0), "activation_policy",
                             json_string("AllowA2")))
ROOT_MUT(duplicate_use, "uses[2]: duplicate (parameter, input) pair ('stack', 'x'), also uses[1]",
         json_array_append(json_object_get(r, "uses"), json_array_get(json_object_get(r, "uses"), 1)))
ROOT_MUT(uses_not_array, "uses must be an array", json_object_set_new(r, "uses", json_object()))
ROOT_MUT(auxiliary_to_missing_object, "uses[0].auxiliaries['activation_input_divisor']: 'w.ghost' names no object",
         json_object_set_new(json_array_get(json_object_get(r, "uses"), 0), "auxiliaries",
                             json_pack("{s:{s:s}}", "activation_input_divisor", "object", "w.ghost")))
ROOT_MUT(auxiliaries_not_object, "uses[0].auxiliaries must be an object",
         json_object_set_new(json_array_get(json_object_get(r, "uses"), 0), "auxiliaries", json_array()))

/* ---------------------------------------------------------------- file table (2.6 File) */
FILES_MUT(files0_path_not_null, "files[0].path must be null", 0,
          json_object_set_new(json_array_get(files, 0), "path", json_string("a.ninfer")))
FILES_MUT(part_path_duplicate, "files[2].path 'a.ninfer.part-0001' repeats files[1].path", SPLIT,
          json_object_set(json_array_get(files, 2), "path", json_object_get(json_array_get(files, 1), "path")))
FILES_MUT(part_path_is_entry, "names the entry file itself", SPLIT,
          json_object_set_new(json_array_get(files, 1), "path", json_string("a.ninfer")))
FILES_MUT(part_path_dot, "not a plain sibling file name", SPLIT,
          json_object_set_new(json_array_get(files, 1), "path", json_string(".")))
FILES_MUT(part_path_backslash, "not a plain sibling file name", SPLIT,
          json_object_set_new(json_array_get(files, 1), "path", json_string("a\\b")))
FILES_MUT(part_path_empty, "not a plain sibling file name", SPLIT,
          json_object_set_new(json_array_get(files, 1), "path", json_string("")))
FILES_MUT(part_path_null, "not a plain sibling file name", SPLIT,
          json_object_set_new(json_array_get(files, 1), "path", json_null()))
FILES_MUT(file_unknown_member, "files[0]: unknown member 'sha'", 0,
          json_object_set_new(json_array_get(files, 0), "sha", json_null()))
FILES_MUT(file_missing_payload_bytes, "files[0]: missing member 'payload_bytes'", 0,
          json_object_del(json_array_get(files, 0), "payload_bytes"))
FILES_MUT(payload_bytes_mismatch, "the entry file is", 0, {
    json_t *f0 = json_array_get(files, 0);
    json_object_set_new(f0, "payload_bytes", json_integer((json_int_t)geti(f0, "payload_bytes") + 4096));
})
FILES_MUT(payload_bytes_zero, "files[1].payload_bytes must be a PositiveU64", SPLIT,
          json_object_set_new(json_array_get(files, 1), "payload_bytes", json_integer(0)))
FILES_MUT(files_empty, "files must be a non-empty array", 0, json_array_clear(files))
FILES_MUT(payload_total_overflow, "overflows U64", SPLIT, {
    json_object_set_new(json_array_get(files, 1), "payload_bytes", json_integer(INT64_MAX));
    json_object_set_new(json_array_get(files, 2), "payload_bytes", json_integer(INT64_MAX));
})

/* The part path really exists at ../x: only the name rule makes the artifact invalid. */
static void dotdot_files(json_t *files) { json_object_set_new(json_array_get(files, 1), "path", json_string("../x")); }

Test(container_reject, part_path_dotdot)
{
    fixture f;
    setup(&f);
    tc_path sub = tc_join(f.dir, "sub");
    cr_assert_eq(mkdir(sub.s, 0700), 0);
    tc_path entry = tc_art_emit(&f.a, sub.s, "a.ninfer", SPLIT, NULL, dotdot_files);
    tc_path part = tc_join(sub.s, "a.ninfer.part-0001"), x = tc_join(f.dir, "x");
    cr_assert_eq(link(part.s, x.s), 0);
    tc_expect_invalid(entry.s, "files[1].path '../x' is not a plain sibling file name");
    teardown(&f);
}

/* ---------------------------------------------------------------- nf_directory_parse directly */
static nf_status parse(const char *text, nf_error *err)
{
    json_t *root = NULL;
    nf_status st = nf_directory_parse((const uint8_t *)text, strlen(text), "a.ninfer", &root, err);
    json_decref(root);
    return st;
}

#define MINI_OBJECTS "[{\"id\":\"r\",\"encoding\":\"raw_bytes_v1\",\"offset\":0,\"bytes\":5,\"kind\":\"resource\"}]"
#define MINI_FILES "[{\"path\":null,\"payload_bytes\":5}]"
#define MINI(components, objects, bindings, uses, files, extra)                                             \
    "{\"components\":" components ",\"objects\":" objects ",\"bindings\":" bindings ",\"uses\":" uses extra \
    ",\"files\":" files "}"

Test(container_reject, directory_parse_minimal_and_edge_cases)
{
    nf_error err;
    cr_assert_eq(parse(MINI("{\"text\":{\"config\":{}}}", MINI_OBJECTS, "{}", "[]", MINI_FILES, ""), &err), NF_OK, "%s",
                 err.message);
    /* whitespace (incl. the writer's padding) around the value is fine; -0 is the integer 0 */
    cr_assert_eq(parse(" \n" MINI("{\"ngram\":{\"config\":{\"x\":[1.5,null,\"\\u0000\"]}}}",
                                  "[{\"id\":\"r\",\"encoding\":\"raw_bytes_v1\",\"offset\":-0,\"bytes\":5,\"kind\":"
                                  "\"resource\"}]",
                                  "{}", "[]", MINI_FILES, ",\"metadata\":{\"name\":\"\xc3\xbc\"}") "\t\r\n   ",
                       &err),
                 NF_OK, "%s", err.message);
    static const struct {
        const char *text, *needle;
    } bad[] = {
        {"[]", "root must be an object"},
        {"5", "root must be an object"},
        {"", "not valid JSON"},
        {"\xef\xbb\xbf{}", "not valid JSON"},
        {MINI("{\"text\":{\"config\":{}}}", MINI_OBJECTS, "{}", "[]", MINI_FILES, "") "\0", "trailing data"},
        {MINI("{\"text\":{\"config\":{}}}", MINI_OBJECTS, "{}", "[]", MINI_FILES, ",\"x\":Infinity"), "Infinity"},
        {MINI("{\"text\":{\"config\":{\"a\":1,\"a\":2}}}", MINI_OBJECTS, "{}", "[]", MINI_FILES, ""),
         "duplicate JSON member"},
        {MINI("{\"text\":{\"config\":{}}}",
              "[{\"id\":\"r\",\"encoding\":\"raw_bytes_v1\",\"offset\":0,\"bytes\":5e0,\"kind\":\"resource\"}]", "{}",
              "[]", MINI_FILES, ""),
         "bytes must be a PositiveU64"},
        {MINI("{\"text\":{\"config\":{}}}", MINI_OBJECTS, "{}", "[]",
              "[{\"path\":null,\"payload_bytes\":5},{\"path\":\"a\\u0000b\",\"payload_bytes\":5}]", ""),
         "not a plain sibling file name"},
        {MINI("{\"text\":{\"config\":{}}}", MINI_OBJECTS, "{}", "[]", "[{\"path\":null,\"payload_bytes\":4}]", ""),
         "beyond the payload (4 bytes)"},
        {MINI("{\"text\":{\"config\":{}}}", MINI_OBJECTS, "{}", "[]", MINI_FILES, ",\"metadata\":{\"name\":5}"),
         "metadata.name must be an ID"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t len = strlen(bad[i].text);
        if (i == 4) len += 1; /* the NUL after the value */
        json_t *root = NULL;
        nf_status st = nf_directory_parse((const uint8_t *)bad[i].text, len, "a.ninfer", &root, &err);
        cr_assert_eq(st, NF_ERR_INVALID, "case %zu accepted", i);
        cr_assert_null(root);
        cr_assert_not_null(strstr(err.message, bad[i].needle), "case %zu: '%s' lacks '%s'", i, err.message,
                           bad[i].needle);
    }
}

Test(container_reject, directory_parse_deep_nesting_is_refused)
{
    size_t depth = 100000;
    char *text = malloc(2 * depth + 1);
    memset(text, '[', depth);
    memset(text + depth, ']', depth);
    text[2 * depth] = '\0';
    nf_error err;
    cr_assert_eq(parse(text, &err), NF_ERR_INVALID);
    free(text);
}

/* Finding C2 of docs/security.md: the pre-scan refuses what would make jansson build a huge tree
 * (64 MiB of "[{},{},...]" cost 5 GB) before jansson sees the text; brackets and commas inside
 * strings do not count, and a directory just under the caps is parsed. */
static char *metadata_array(const char *item, size_t n)
{
    const char *head = "{\"components\":{\"text\":{\"config\":{}}},\"objects\":" MINI_OBJECTS
                       ",\"bindings\":{},\"uses\":[],\"files\":" MINI_FILES ",\"metadata\":{\"x\":[";
    size_t il = strlen(item), hl = strlen(head);
    char *t = malloc(hl + n * (il + 1) + 8);
    cr_assert_not_null(t);
    memcpy(t, head, hl);
    size_t o = hl;
    for (size_t i = 0; i < n; i++) {
        if (i) t[o++] = ',';
        memcpy(t + o, item, il);
        o += il;
    }
    strcpy(t + o, "]}}");
    return t;
}

Test(container_reject, directory_prescan_caps_containers_values_and_depth)
{
    nf_error err;
    char *t = metadata_array("{}", 2000001);
    cr_assert_eq(parse(t, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "more than 2000000 objects and arrays"), "%s", err.message);
    free(t);
    t = metadata_array("0", 8000001);
    cr_assert_eq(parse(t, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "more than 8000000 values"), "%s", err.message);
    free(t);
    /* 899 levels inside metadata.x, plus the root, metadata and x: 902 > 900 */
    size_t depth = 899;
    char *deep = malloc(2 * depth + 1);
    memset(deep, '[', depth);
    memset(deep + depth, ']', depth);
    deep[2 * depth] = '\0';
    t = metadata_array(deep, 1);
    cr_assert_eq(parse(t, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "nesting deeper than 900 levels"), "%s", err.message);
    free(t);
    free(deep);
    /* commas and brackets inside strings are text, not values */
    t = metadata_array("\"[{,,,}]\\\"[\"", 100000);
    cr_assert_eq(parse(t, &err), NF_OK, "%s", err.message);
    free(t);
    t = metadata_array("{}", 100000);
    cr_assert_eq(parse(t, &err), NF_OK, "%s", err.message);
    free(t);
}

/* Arbitrary bytes must never crash the parser (a small in-process fuzz pass). */
Test(container_reject, directory_parse_survives_random_mutations)
{
    const char *seed = MINI("{\"text\":{\"config\":{},\"resources\":{\"a\":\"r\"}}}", MINI_OBJECTS, "{}", "[]",
                            MINI_FILES, ",\"metadata\":{},\"provenance\":{}");
    size_t n = strlen(seed);
    tc_rng rng = {99};
    uint8_t *buf = malloc(n + 8);
    for (int iter = 0; iter < 20000; iter++) {
        memcpy(buf, seed, n);
        size_t len = n;
        int edits = 1 + (int)tc_below(&rng, 4);
        for (int e = 0; e < edits; e++) {
            size_t at = (size_t)tc_below(&rng, len);
            switch (tc_below(&rng, 3)) {
            case 0: buf[at] = (uint8_t)tc_next(&rng); break;
            case 1:
                memmove(buf + at, buf + at + 1, len - at - 1);
                len--;
                break;
            default: buf[at] = "{}[]\":,0-9eE.\\u"[tc_below(&rng, 16)]; break;
            }
        }
        json_t *root = NULL;
        nf_error err;
        nf_status st = nf_directory_parse(buf, len, "a.ninfer", &root, &err);
        cr_assert(st == NF_OK || st == NF_ERR_INVALID);
        json_decref(root);
    }
    free(buf);
}
