/* The library verifier (nf_verify_artifact): levels, every problem reported with its object and
 * check, checksums of objects and of the directory, zero gaps, missing files, and that opening
 * and inspecting an artifact reads no payload. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ninfer/ninfer.h>

#include "support/test_artifact.h"

#include "common/io.h"

static char dir[256];

static void make_dir(void) { test_dir_make(dir, sizeof dir, "verify"); }

static void remove_dir(void) { test_dir_remove(dir); }

TestSuite(verify, .init = make_dir, .fini = remove_dir);

/* Writes a.ninfer: resource "r" (5 bytes), q8 "w.q8" [2,40] with legal words, q4 "w.q4" [1,64],
 * bf16 "w.bf16" [3000]; max_file_bytes as given; checksums as asked. */
static void write_sample(const char *path, uint64_t max_file_bytes, bool checksums)
{
    nf_error err;
    nf_writer *w = NULL;
    nf_writer_options o = {max_file_bytes, NULL, false, checksums};
    cr_assert_eq(nf_writer_create(path, &o, &w, &err), NF_OK, "%s", err.message);
    size_t ir, i8, i4, ib;
    cr_assert_eq(nf_writer_add_resource(w, "r", 5, &ir, &err), NF_OK, "%s", err.message);
    nf_geometry g8, g4, gb;
    uint64_t s8[2] = {2, 40}, s4[2] = {1, 64}, sb[1] = {3000};
    cr_assert_eq(
        nf_geometry_init(&g8, nf_layout_lookup("row_split_k128_v1"), nf_format_lookup("q8_g32_fp16"), 2, s8, 1, &err),
        NF_OK, "%s", err.message);
    cr_assert_eq(
        nf_geometry_init(&g4, nf_layout_lookup("row_split_k128_v1"), nf_format_lookup("q4_g64_fp16"), 2, s4, 1, &err),
        NF_OK);
    cr_assert_eq(nf_geometry_init(&gb, nf_layout_lookup("contiguous_le_v1"), nf_format_lookup("bf16"), 1, sb, 1, &err),
                 NF_OK);
    cr_assert_eq(nf_writer_add_tensor(w, "w.q8", &g8, &i8, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_writer_add_tensor(w, "w.q4", &g4, &i4, &err), NF_OK);
    cr_assert_eq(nf_writer_add_tensor(w, "w.bf16", &gb, &ib, &err), NF_OK);
    cr_assert_eq(nf_writer_begin(w, &err), NF_OK, "%s", err.message);

    nf_words w8, w4, wb;
    cr_assert_eq(nf_words_alloc(&w8, &g8, 2, &err), NF_OK);
    cr_assert_eq(nf_words_alloc(&w4, &g4, 1, &err), NF_OK);
    cr_assert_eq(nf_words_alloc(&wb, &gb, 1, &err), NF_OK);
    for (int i = 0; i < 3000; i++) wb.w16[i] = (uint16_t)(0x3F80 + i % 64);
    for (int i = 0; i < 80; i++) w8.codes[i] = (int8_t)(i % 50 - 25);
    for (int i = 0; i < 4; i++) w8.scales[i] = 0x3C00;
    for (int i = 0; i < 64; i++) w4.codes[i] = (int8_t)(i % 16 - 8);
    w4.scales[0] = 0xB800;
    wb.w16[1] = 0x8000, wb.w16[2] = 0x7FC1; /* -0 and a NaN payload are legal words */
    cr_assert_eq(nf_writer_write(w, ir, 0, "hello", 5, &err), NF_OK, "%s", err.message);
    nf_words *ws[3] = {&w8, &w4, &wb};
    nf_geometry *gs[3] = {&g8, &g4, &gb};
    size_t idx[3] = {i8, i4, ib};
    for (int k = 0; k < 3; k++) {
        nf_writer_sink sink = {w, idx[k]};
        cr_assert_eq(nf_layout_encode_rows(gs[k], ws[k], 0, false, nf_writer_sink_write, &sink, &err), NF_OK, "%s",
                     err.message);
        cr_assert_eq(nf_layout_encode_tail(gs[k], ws[k], false, nf_writer_sink_write, &sink, &err), NF_OK);
        nf_words_free(ws[k]);
    }
    cr_assert_eq(nf_writer_finish(w, &err), NF_OK, "%s", err.message);
    nf_writer_free(w);
}

static uint64_t object_file_offset(const char *path, const char *id)
{
    nf_artifact *a;
    nf_error err;
    cr_assert_eq(nf_artifact_open(path, NF_READ_PREAD, &a, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_artifact_file_count(a), 1);
    uint64_t off = nf_artifact_entry_payload_start(a) + nf_artifact_find(a, id)->offset;
    nf_artifact_close(a);
    return off;
}

static void poke(const char *path, uint64_t offset, uint8_t value)
{
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f);
    cr_assert_eq(fseek(f, (long)offset, SEEK_SET), 0);
    cr_assert_eq(fputc(value, f), value);
    fclose(f);
}

static uint8_t peek(const char *path, uint64_t offset)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    cr_assert_eq(fseek(f, (long)offset, SEEK_SET), 0);
    int c = fgetc(f);
    fclose(f);
    return (uint8_t)c;
}

static nf_verify_report run(const char *path, nf_verify_level level)
{
    nf_verify_report r;
    nf_error err;
    cr_assert_eq(nf_verify_artifact(path, level, &r, &err), NF_OK, "%s", err.message);
    return r;
}

Test(verify, clean_artifact_with_checksums)
{
    char path[300];
    snprintf(path, sizeof path, "%s/a.ninfer", dir);
    write_sample(path, 0, true);
    nf_verify_report r = run(path, NF_VERIFY_CHECKSUMS);
    test_dump_problems(&r);
    cr_assert(r.valid);
    cr_assert_eq(r.count, 0);
    cr_assert_eq(r.objects_checked, 4);
    cr_assert_eq(r.checksums_checked, 5, "4 objects + the directory");
    nf_verify_report_free(&r);
}

Test(verify, levels_and_every_problem)
{
    char path[300];
    snprintf(path, sizeof path, "%s/a.ninfer", dir);
    write_sample(path, 0, false);
    uint64_t q8 = object_file_offset(path, "w.q8"), q4 = object_file_offset(path, "w.q4");
    poke(path, q8 + 3, 0x80);       /* row 0 col 3: -128 */
    poke(path, q4 + 256 + 1, 0x80); /* q4 scale of row 0 group 0: 0x8000 = -0 */
    nf_verify_report quick = run(path, NF_VERIFY_STRUCTURE);
    cr_assert(quick.valid, "the structure is intact");
    nf_verify_report_free(&quick);
    nf_verify_report r = run(path, NF_VERIFY_WORDS);
    test_dump_problems(&r);
    cr_assert_not(r.valid);
    cr_assert(test_has_problem(&r, "w.q8", "words", "row 0 col 3"));
    cr_assert(test_has_problem(&r, "w.q4", "words", NULL));
    nf_verify_report_free(&r);
}

Test(verify, object_checksum_mismatch_names_the_object)
{
    char path[300];
    snprintf(path, sizeof path, "%s/a.ninfer", dir);
    write_sample(path, 0, true);
    uint64_t b = object_file_offset(path, "w.bf16");
    poke(path, b + 1, 0xBF); /* 0x3F80 -> 0xBF80: still a legal bf16 word */
    nf_verify_report r = run(path, NF_VERIFY_CHECKSUMS);
    test_dump_problems(&r);
    cr_assert_not(r.valid);
    cr_assert(test_has_problem(&r, "w.bf16", "checksums", NULL));
    cr_assert_eq(r.count, 1);
    nf_verify_report r2 = run(path, NF_VERIFY_WORDS);
    cr_assert(r2.valid, "words are legal: only the checksum level sees the change");
    nf_verify_report_free(&r);
    nf_verify_report_free(&r2);
}

Test(verify, directory_checksum_covers_the_json_text)
{
    char path[300];
    snprintf(path, sizeof path, "%s/a.ninfer", dir);
    write_sample(path, 0, true);
    nf_artifact *a;
    nf_error err;
    /* A padding space turned into a newline: still valid JSON with the same meaning, so only
     * the directory digest can notice. */
    cr_assert_eq(nf_artifact_open(path, NF_READ_PREAD, &a, &err), NF_OK);
    uint64_t last = 32 + nf_artifact_json_bytes(a) - 1;
    nf_artifact_close(a);
    cr_assert_eq(peek(path, last), ' ');
    poke(path, last, '\n');
    nf_verify_report r = run(path, NF_VERIFY_CHECKSUMS);
    test_dump_problems(&r);
    cr_assert_not(r.valid);
    cr_assert(test_has_problem(&r, NULL, "checksums", "directory"));
    nf_verify_report_free(&r);
}

Test(verify, nonzero_gap_between_objects)
{
    char path[300];
    snprintf(path, sizeof path, "%s/a.ninfer", dir);
    write_sample(path, 0, false);
    uint64_t q8 = object_file_offset(path, "w.q8");
    poke(path, q8 - 1, 0x01); /* the alignment gap after the 5-byte resource */
    nf_verify_report r = run(path, NF_VERIFY_WORDS);
    test_dump_problems(&r);
    cr_assert_not(r.valid);
    cr_assert(test_has_problem(&r, NULL, "words", "between objects"));
    nf_verify_report_free(&r);
}

Test(verify, missing_part_is_invalid_and_missing_entry_is_a_system_error)
{
    char path[300], part[320];
    snprintf(path, sizeof path, "%s/s.ninfer", dir);
    write_sample(path, 4096 * 2, true);
    snprintf(part, sizeof part, "%s.part-0001", path);
    cr_assert_eq(access(part, F_OK), 0, "the sample must be split");
    nf_verify_report ok = run(path, NF_VERIFY_CHECKSUMS);
    test_dump_problems(&ok);
    cr_assert(ok.valid);
    nf_verify_report_free(&ok);
    cr_assert_eq(unlink(part), 0);
    nf_verify_report r = run(path, NF_VERIFY_STRUCTURE);
    cr_assert_not(r.valid);
    cr_assert(test_has_problem(&r, NULL, "structure", "part-0001"));
    nf_verify_report_free(&r);

    nf_verify_report none;
    nf_error err;
    char missing[320];
    snprintf(missing, sizeof missing, "%s/nope.ninfer", dir);
    cr_assert_eq(nf_verify_artifact(missing, NF_VERIFY_CHECKSUMS, &none, &err), NF_ERR_IO);
    cr_assert(strstr(err.message, "nope.ninfer"), "%s", err.message);
}

Test(verify, opening_and_listing_reads_no_payload)
{
    char path[300];
    snprintf(path, sizeof path, "%s/s.ninfer", dir);
    write_sample(path, 4096 * 2, true);
    nf_io_fault_reset();
    nf_artifact *a;
    nf_error err;
    cr_assert_eq(nf_artifact_open(path, NF_READ_PREAD, &a, &err), NF_OK);
    uint64_t reads = nf_io_calls(NF_IO_READ), opens = nf_io_calls(NF_IO_OPEN);
    cr_assert_leq(reads, 2, "header and JSON only, got %llu reads", (unsigned long long)reads);
    for (size_t i = 0; i < nf_artifact_object_count(a); i++) {
        const nf_object *o = nf_artifact_object(a, i);
        nf_geometry g;
        cr_assert_eq(nf_artifact_check_object(a, o, &g, &err), NF_OK, "%s", err.message);
    }
    cr_assert_not_null(nf_artifact_directory(a));
    cr_assert_eq(nf_io_calls(NF_IO_READ), reads, "listing objects read payload");
    cr_assert_eq(nf_io_calls(NF_IO_OPEN), opens, "listing objects opened a part");
    nf_artifact_close(a);
}
