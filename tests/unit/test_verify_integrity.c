/* The integrity side of nf_verify_artifact: the bytes outside header, JSON and payload (the gap
 * after the JSON directory, docs/artifact.md 2; bytes [32, 4096) of continuation headers, 2.4)
 * must be zero at the words level; metadata.checksums is a closed schema (docs/artifact.md 8) whose
 * every defect is a problem naming the member; require_checksums (ninfer-verify
 * --require-checksums) wants a digest for every object and for the directory; and a problem
 * names its object once (the object field), not again at the start of the message. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ninfer/ninfer.h>

#include "support/test_artifact.h"

static char dir[256];

static void make_dir(void) { test_dir_make(dir, sizeof dir, "verify-integrity"); }

static void remove_dir(void) { test_dir_remove(dir); }

TestSuite(integrity, .init = make_dir, .fini = remove_dir);

/* resource "r", q8 "w.q8" [2,40], bf16 "w.bf16" [3000] (support/test_artifact.h) */
static void write_sample(const char *path, uint64_t max_file_bytes, bool checksums)
{
    test_write_small_artifact(path, max_file_bytes, checksums);
}

static void poke(const char *path, uint64_t offset, uint8_t value)
{
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f);
    cr_assert_eq(fseek(f, (long)offset, SEEK_SET), 0);
    cr_assert_eq(fputc(value, f), value);
    fclose(f);
}

static void write_at(const char *path, uint64_t offset, const void *data, size_t len)
{
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f);
    cr_assert_eq(fseek(f, (long)offset, SEEK_SET), 0);
    cr_assert_eq(fwrite(data, 1, len, f), len);
    fclose(f);
}

static uint64_t json_bytes_of(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    uint8_t h[32];
    cr_assert_eq(fread(h, 1, 32, f), 32);
    fclose(f);
    uint64_t v = 0;
    for (int i = 15; i >= 8; i--) v = (v << 8) | h[i];
    return v;
}

/* Replace the JSON directory by `root` (compact, member order kept), padded with spaces to the
 * old json_bytes so that nothing else moves. */
static void put_directory(const char *path, json_t *root)
{
    uint64_t jb = json_bytes_of(path);
    char *text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    cr_assert_not_null(text);
    size_t n = strlen(text);
    cr_assert_leq(n, jb, "the edited directory (%zu bytes) does not fit the old one (%llu)", n, (unsigned long long)jb);
    char *padded = malloc(jb);
    cr_assert_not_null(padded);
    memset(padded, ' ', jb);
    memcpy(padded, text, n);
    write_at(path, 32, padded, jb);
    free(padded);
    free(text);
}

static json_t *get_directory(const char *path)
{
    uint64_t jb = json_bytes_of(path);
    char *text = malloc(jb);
    cr_assert_not_null(text);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    cr_assert_eq(fseek(f, 32, SEEK_SET), 0);
    cr_assert_eq(fread(text, 1, jb, f), jb);
    fclose(f);
    json_error_t je;
    json_t *root = json_loadb(text, jb, 0, &je);
    cr_assert_not_null(root, "%s", je.text);
    free(text);
    return root;
}

static nf_verify_report run_with(const char *path, nf_verify_level level, bool require)
{
    nf_verify_report r;
    nf_error err;
    nf_verify_options o = {level, 1, require};
    cr_assert_eq(nf_verify_artifact_with(path, &o, &r, &err), NF_OK, "%s", err.message);
    return r;
}

/* ---------------------------------------------------------------- zero bytes outside the payload */
Test(integrity, nonzero_byte_in_a_continuation_header_tail)
{
    char path[300], part[320];
    snprintf(path, sizeof path, "%s/s.ninfer", dir);
    snprintf(part, sizeof part, "%s.part-0001", path);
    write_sample(path, 8192, true);
    cr_assert_eq(access(part, F_OK), 0, "the sample must be split");
    nf_verify_report ok = run_with(path, NF_VERIFY_CHECKSUMS, true);
    test_dump_problems(&ok);
    cr_assert(ok.valid);
    nf_verify_report_free(&ok);

    poke(part, 4095, 0x10);
    poke(part, 100, 0x5a); /* the first nonzero byte is the one named */
    nf_verify_report quick = run_with(path, NF_VERIFY_STRUCTURE, false);
    cr_assert(quick.valid, "readers do not check these bytes (docs/artifact.md 7 item 7): not a structure problem");
    nf_verify_report_free(&quick);
    nf_verify_report r = run_with(path, NF_VERIFY_WORDS, false);
    test_dump_problems(&r);
    cr_assert_not(r.valid);
    cr_assert_eq(r.count, 1);
    cr_assert(test_has_problem(&r, NULL, "words",
                               "part file s.ninfer.part-0001: byte 100 (continuation header bytes [32, 4096)) is 0x5a, "
                               "expected 0x00"));
    nf_verify_report_free(&r);
}

Test(integrity, nonzero_byte_between_the_directory_and_the_payload)
{
    char path[300];
    snprintf(path, sizeof path, "%s/a.ninfer", dir);
    write_sample(path, 0, false);
    /* Our writer pads the JSON with spaces up to the payload; an upstream writer may instead
     * stop json_bytes at the JSON and leave zero bytes up to the page boundary.  Make that
     * artifact: shorten json_bytes to the text plus 2 spaces and zero the rest. */
    uint64_t jb = json_bytes_of(path);
    json_t *root = get_directory(path);
    char *text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    uint64_t short_jb = strlen(text) + 2;
    free(text);
    cr_assert_lt(short_jb + 16, jb);
    uint8_t le[8];
    for (int i = 0; i < 8; i++) le[i] = (uint8_t)(short_jb >> (8 * i));
    write_at(path, 8, le, 8);
    size_t zn = (size_t)(jb - short_jb);
    uint8_t *zeros = calloc(1, zn);
    write_at(path, 32 + short_jb, zeros, zn);
    free(zeros);
    nf_verify_report ok = run_with(path, NF_VERIFY_CHECKSUMS, false);
    test_dump_problems(&ok);
    cr_assert(ok.valid, "zero bytes after the JSON are the format's own padding");
    nf_verify_report_free(&ok);

    uint64_t at = 32 + short_jb + 7;
    poke(path, at, 0x01);
    nf_verify_report quick = run_with(path, NF_VERIFY_STRUCTURE, false);
    cr_assert(quick.valid);
    nf_verify_report_free(&quick);
    nf_verify_report r = run_with(path, NF_VERIFY_WORDS, false);
    test_dump_problems(&r);
    cr_assert_not(r.valid);
    cr_assert_eq(r.count, 1);
    char want[128];
    snprintf(want, sizeof want, "byte %llu (between the JSON directory and the payload) is 0x01",
             (unsigned long long)at);
    cr_assert(test_has_problem(&r, NULL, "words", want));
    cr_assert(test_has_problem(&r, NULL, "words", "a.ninfer"));
    nf_verify_report_free(&r);
}

/* ---------------------------------------------------------------- metadata.checksums schema */
typedef void (*edit_fn)(json_t *sums);

/* A fresh checksummed artifact with metadata.checksums edited by `edit`, verified at the
 * checksums level (defaults). */
static nf_verify_report edited(const char *name, edit_fn edit)
{
    char path[300];
    snprintf(path, sizeof path, "%s/%s.ninfer", dir, name);
    write_sample(path, 0, true);
    json_t *root = get_directory(path);
    json_t *sums = json_object_get(json_object_get(root, "metadata"), "checksums");
    cr_assert(json_is_object(sums));
    edit(sums);
    put_directory(path, root);
    json_decref(root);
    nf_verify_report r = run_with(path, NF_VERIFY_CHECKSUMS, false);
    test_dump_problems(&r);
    return r;
}

static void rename_member(json_t *o, const char *from, const char *to)
{
    /* keep the member order: rebuild the object */
    json_t *copy = json_object();
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) json_object_set(copy, strcmp(k, from) == 0 ? to : k, v);
    json_object_clear(o);
    json_object_foreach(copy, k, v) json_object_set(o, k, v);
    json_decref(copy);
}

static void ed_directory_name(json_t *s) { rename_member(s, "directory", "directorz"); }
static void ed_objects_name(json_t *s) { rename_member(s, "objects", "objectz"); }
static void ed_algorithm_name(json_t *s) { rename_member(s, "algorithm", "algorithn"); }
static void ed_algorithm_value(json_t *s) { json_object_set_new(s, "algorithm", json_string("xxh3-64")); }
static void ed_algorithm_type(json_t *s) { json_object_set_new(s, "algorithm", json_integer(128)); }
static void ed_objects_type(json_t *s) { json_object_set_new(s, "objects", json_array()); }
static void ed_directory_type(json_t *s) { json_object_set_new(s, "directory", json_null()); }
static void ed_directory_digest(json_t *s) { json_object_set_new(s, "directory", json_string("0123")); }
static void ed_object_missing(json_t *s)
{
    json_object_set_new(json_object_get(s, "objects"), "w.nope", json_string("00000000000000000000000000000000"));
}
static void ed_object_upper(json_t *s)
{
    json_t *objs = json_object_get(s, "objects");
    char d[33];
    snprintf(d, sizeof d, "%s", json_string_value(json_object_get(objs, "w.q8")));
    for (int i = 0; i < 32; i++)
        if (d[i] >= 'a' && d[i] <= 'f') d[i] = (char)(d[i] - 'a' + 'A');
    json_object_set_new(objs, "w.q8", json_string(d));
}
static void ed_object_short(json_t *s)
{
    json_t *objs = json_object_get(s, "objects");
    char d[33];
    snprintf(d, sizeof d, "%s", json_string_value(json_object_get(objs, "w.q8")));
    d[31] = '\0';
    json_object_set_new(objs, "w.q8", json_string(d));
}
static void ed_object_type(json_t *s) { json_object_set_new(json_object_get(s, "objects"), "r", json_integer(7)); }

Test(integrity, checksums_member_names_are_closed)
{
    nf_verify_report r = edited("dn", ed_directory_name);
    cr_assert_not(r.valid);
    cr_assert(test_has_problem(&r, NULL, "checksums", "metadata.checksums has an unknown member 'directorz'"));
    cr_assert_eq(r.checksums_checked, 3, "the object digests are still checked");
    nf_verify_report_free(&r);

    r = edited("on", ed_objects_name);
    cr_assert_not(r.valid);
    cr_assert(test_has_problem(&r, NULL, "checksums", "unknown member 'objectz'"));
    cr_assert(test_has_problem(&r, NULL, "checksums", "directory checksum is"),
              "the directory digest is still checked");
    nf_verify_report_free(&r);

    r = edited("an", ed_algorithm_name);
    cr_assert_not(r.valid);
    cr_assert(test_has_problem(&r, NULL, "checksums", "unknown member 'algorithn'"));
    cr_assert(test_has_problem(&r, NULL, "checksums", "metadata.checksums.algorithm is missing"));
    cr_assert_eq(r.checksums_checked, 0, "no digest can be compared without the algorithm");
    nf_verify_report_free(&r);
}

Test(integrity, checksums_member_values)
{
    nf_verify_report r = edited("av", ed_algorithm_value);
    cr_assert(test_has_problem(&r, NULL, "checksums", "metadata.checksums.algorithm 'xxh3-64' is not supported"));
    nf_verify_report_free(&r);

    r = edited("at", ed_algorithm_type);
    cr_assert(test_has_problem(&r, NULL, "checksums", "metadata.checksums.algorithm is an integer"));
    nf_verify_report_free(&r);

    r = edited("ot", ed_objects_type);
    cr_assert(test_has_problem(&r, NULL, "checksums", "metadata.checksums.objects is an array"));
    nf_verify_report_free(&r);

    r = edited("dt", ed_directory_type);
    cr_assert(test_has_problem(&r, NULL, "checksums", "metadata.checksums.directory is null"));
    nf_verify_report_free(&r);

    r = edited("dd", ed_directory_digest);
    cr_assert(
        test_has_problem(&r, NULL, "checksums", "metadata.checksums.directory '0123' is not 32 lowercase hex digits"));
    nf_verify_report_free(&r);

    r = edited("om", ed_object_missing);
    cr_assert(test_has_problem(&r, NULL, "checksums",
                               "metadata.checksums.objects names 'w.nope', which is not an object of the artifact"));
    nf_verify_report_free(&r);

    r = edited("ou", ed_object_upper);
    cr_assert(
        test_has_problem(&r, "w.q8", "checksums", "in metadata.checksums.objects is not 32 lowercase hex digits"));
    nf_verify_report_free(&r);

    r = edited("os", ed_object_short);
    cr_assert(
        test_has_problem(&r, "w.q8", "checksums", "in metadata.checksums.objects is not 32 lowercase hex digits"));
    nf_verify_report_free(&r);

    r = edited("oy", ed_object_type);
    cr_assert(test_has_problem(&r, "r", "checksums", "its digest in metadata.checksums.objects is an integer"));
    nf_verify_report_free(&r);
}

Test(integrity, checksums_not_an_object)
{
    char path[300];
    snprintf(path, sizeof path, "%s/x.ninfer", dir);
    write_sample(path, 0, true);
    json_t *root = get_directory(path);
    json_object_set_new(json_object_get(root, "metadata"), "checksums", json_string("xxh3-128"));
    put_directory(path, root);
    json_decref(root);
    nf_verify_report r = run_with(path, NF_VERIFY_CHECKSUMS, false);
    test_dump_problems(&r);
    cr_assert_not(r.valid);
    cr_assert(test_has_problem(&r, NULL, "checksums", "metadata.checksums is a string, expected an object"));
    nf_verify_report_free(&r);
}

/* ---------------------------------------------------------------- require_checksums */
static void ed_drop_directory_and_r(json_t *s)
{
    json_object_del(s, "directory");
    json_object_del(json_object_get(s, "objects"), "r");
}

Test(integrity, require_checksums)
{
    char path[300];
    snprintf(path, sizeof path, "%s/full.ninfer", dir);
    write_sample(path, 0, true);
    nf_verify_report r = run_with(path, NF_VERIFY_CHECKSUMS, true);
    cr_assert(r.valid);
    cr_assert_eq(r.checksums_checked, 4);
    nf_verify_report_free(&r);

    snprintf(path, sizeof path, "%s/none.ninfer", dir);
    write_sample(path, 0, false);
    r = run_with(path, NF_VERIFY_CHECKSUMS, false);
    cr_assert(r.valid, "without require_checksums an artifact need not record checksums");
    nf_verify_report_free(&r);
    r = run_with(path, NF_VERIFY_CHECKSUMS, true);
    test_dump_problems(&r);
    cr_assert_not(r.valid);
    cr_assert_eq(r.count, 1);
    cr_assert(test_has_problem(&r, NULL, "checksums", "metadata.checksums is absent"));
    nf_verify_report_free(&r);

    /* objects and directory partly recorded: valid by default (each present digest matches),
     * a problem per missing digest with require_checksums */
    r = edited("part", ed_drop_directory_and_r);
    cr_assert(r.valid);
    cr_assert_eq(r.checksums_checked, 2);
    nf_verify_report_free(&r);
    snprintf(path, sizeof path, "%s/part.ninfer", dir);
    r = run_with(path, NF_VERIFY_CHECKSUMS, true);
    test_dump_problems(&r);
    cr_assert_not(r.valid);
    cr_assert_eq(r.count, 2);
    cr_assert(test_has_problem(&r, "r", "checksums", "no digest in metadata.checksums.objects"));
    cr_assert(test_has_problem(&r, NULL, "checksums", "metadata.checksums.directory is absent"));
    nf_verify_report_free(&r);

    /* below the checksums level the option cannot be honoured */
    nf_verify_report q;
    nf_error err;
    nf_verify_options o = {NF_VERIFY_STRUCTURE, 1, true};
    cr_assert_eq(nf_verify_artifact_with(path, &o, &q, &err), NF_ERR_USAGE);
    cr_assert(strstr(err.message, "require_checksums"), "%s", err.message);
    cr_assert_eq(q.count, 0);
}

/* ---------------------------------------------------------------- one name per problem */
Test(integrity, a_problem_names_its_object_once)
{
    char path[300];
    snprintf(path, sizeof path, "%s/f.ninfer", dir);
    write_sample(path, 0, false);
    json_t *root = get_directory(path);
    json_t *objs = json_object_get(root, "objects");
    for (size_t i = 0; i < json_array_size(objs); i++) {
        json_t *o = json_array_get(objs, i);
        if (strcmp(json_string_value(json_object_get(o, "id")), "w.q8") == 0)
            json_object_set_new(o, "format", json_string("q9_g32_fp16"));
    }
    put_directory(path, root);
    json_decref(root);
    nf_verify_report r = run_with(path, NF_VERIFY_STRUCTURE, false);
    test_dump_problems(&r);
    cr_assert_not(r.valid);
    cr_assert_eq(r.count, 1);
    cr_assert_str_eq(r.problems[0].object, "w.q8");
    cr_assert_str_eq(r.problems[0].message, "unknown format 'q9_g32_fp16'");
    nf_verify_report_free(&r);
}
