/* Small artifacts, scratch directories and report queries for the verify tests.  Header-only (Criterion asserts
 * inside static inline functions). */
#ifndef NINFER_TEST_ARTIFACT_H
#define NINFER_TEST_ARTIFACT_H

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

/* A fresh directory /tmp/ninfer-test-TAG-XXXXXX in dir[size]. */
static inline void test_dir_make(char *dir, size_t size, const char *tag)
{
    snprintf(dir, size, "/tmp/ninfer-test-%s-XXXXXX", tag);
    cr_assert_not_null(mkdtemp(dir));
}

static inline void test_dir_remove(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* Writes an artifact of three objects: resource "r" ("hello"), q8 "w.q8" [2,40]
 * (row_split_k128_v1, so with padding lanes) and bf16 "w.bf16" [3000], all words legal; split
 * at max_file_bytes (0: one file); checksums as asked. */
static inline void test_write_small_artifact(const char *path, uint64_t max_file_bytes, bool checksums)
{
    nf_error err;
    nf_writer *w = NULL;
    nf_writer_options o = {max_file_bytes, NULL, false, checksums};
    cr_assert_eq(nf_writer_create(path, &o, &w, &err), NF_OK, "%s", err.message);
    size_t ir, i8, ib;
    cr_assert_eq(nf_writer_add_resource(w, "r", 5, &ir, &err), NF_OK, "%s", err.message);
    nf_geometry g8, gb;
    uint64_t s8[2] = {2, 40}, sb[1] = {3000};
    cr_assert_eq(
        nf_geometry_init(&g8, nf_layout_lookup("row_split_k128_v1"), nf_format_lookup("q8_g32_fp16"), 2, s8, 1, &err),
        NF_OK, "%s", err.message);
    cr_assert_eq(nf_geometry_init(&gb, nf_layout_lookup("contiguous_le_v1"), nf_format_lookup("bf16"), 1, sb, 1, &err),
                 NF_OK, "%s", err.message);
    cr_assert_eq(nf_writer_add_tensor(w, "w.q8", &g8, &i8, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_writer_add_tensor(w, "w.bf16", &gb, &ib, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_writer_begin(w, &err), NF_OK, "%s", err.message);
    nf_words w8, wb;
    cr_assert_eq(nf_words_alloc(&w8, &g8, 2, &err), NF_OK);
    cr_assert_eq(nf_words_alloc(&wb, &gb, 1, &err), NF_OK);
    for (int i = 0; i < 3000; i++) wb.w16[i] = (uint16_t)(0x3F80 + i % 64);
    for (int i = 0; i < 80; i++) w8.codes[i] = (int8_t)(i % 50 - 25);
    for (int i = 0; i < 4; i++) w8.scales[i] = 0x3C00;
    cr_assert_eq(nf_writer_write(w, ir, 0, "hello", 5, &err), NF_OK, "%s", err.message);
    nf_words *ws[2] = {&w8, &wb};
    nf_geometry *gs[2] = {&g8, &gb};
    size_t idx[2] = {i8, ib};
    for (int k = 0; k < 2; k++) {
        nf_writer_sink sink = {w, idx[k]};
        cr_assert_eq(nf_layout_encode_rows(gs[k], ws[k], 0, false, nf_writer_sink_write, &sink, &err), NF_OK, "%s",
                     err.message);
        cr_assert_eq(nf_layout_encode_tail(gs[k], ws[k], false, nf_writer_sink_write, &sink, &err), NF_OK);
        nf_words_free(ws[k]);
    }
    cr_assert_eq(nf_writer_finish(w, &err), NF_OK, "%s", err.message);
    nf_writer_free(w);
}

/* Does the report hold a problem of `check` about `object` (NULL: an artifact-level one) whose
 * message contains `fragment` (NULL: any)? */
static inline bool test_has_problem(const nf_verify_report *r, const char *object, const char *check,
                                    const char *fragment)
{
    for (size_t i = 0; i < r->count; i++) {
        const nf_problem *p = &r->problems[i];
        bool obj_ok = object ? (p->object && strcmp(p->object, object) == 0) : p->object == NULL;
        if (obj_ok && strcmp(p->check, check) == 0 && (!fragment || strstr(p->message, fragment))) return true;
    }
    return false;
}

/* Every problem of the report in the test log (for a failing assertion's context). */
static inline void test_dump_problems(const nf_verify_report *r)
{
    for (size_t i = 0; i < r->count; i++)
        cr_log_info("%s / %s / %s", r->problems[i].object ? r->problems[i].object : "-", r->problems[i].check,
                    r->problems[i].message);
}

#endif
