/* nf_verify_artifact detects every single-byte change of a checksummed artifact (design.md 4:
 * "With both [checksums], ninfer-verify detects any change to any byte of the file set").
 *
 * A small split artifact (entry + one part: header, padded JSON directory with
 * metadata.checksums, a resource, a q8 tensor with padding lanes, a bf16 vector straddling the
 * file boundary, alignment gaps, the zeroed tail [32, 4096) of the part header) is written with
 * the library's writer; then every byte of every file is changed in place, one at a time, and
 * the verifier run in-process on the result; the byte is restored before the next.  Every
 * position is flipped with XOR 0x01 (lowest bit) and XOR 0x80 (highest bit), and with XOR 0xFF
 * at every 5th position (under AddressSanitizer, ten times slower: XOR 0x80 and 0xFF at every
 * 5th position only).  No byte is excluded.
 *
 * Each change is verified twice:
 * - with require_checksums (ninfer-verify --require-checksums, the CI gate): the report must
 *   be INVALID, for every byte;
 * - with the defaults: the report must be INVALID, or record fewer checksums than the untouched
 *   artifact, and the second case may only come from a change to the member name "checksums"
 *   itself.  metadata is an open object (container.md 2.6), so "chedksums" is an unknown
 *   metadata member that an upstream writer could have put there, and the artifact then simply
 *   records no checksums; verify says so (checksums_checked 0, "no checksums recorded") rather
 *   than INVALID.  Inside metadata.checksums the schema is closed, so a change to "directory",
 *   "objects" or "algorithm" is an unknown member: INVALID. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ninfer/ninfer.h>

static char dir[256];

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/ninfer-test-byteflip-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

#if defined(__SANITIZE_ADDRESS__)
#define SPARSE_STRIDE 5
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SPARSE_STRIDE 5
#endif
#endif
#ifndef SPARSE_STRIDE
#define SPARSE_STRIDE 1
#endif

TestSuite(byteflip, .init = make_dir, .fini = remove_dir);

/* resource "r" (5 bytes), q8 "w.q8" [2,40] (row_split_k128_v1: padding lanes), bf16 "w.bf16"
 * [3000]; split with at most 8192 bytes per file: the entry holds 4096 payload bytes, the part
 * the rest. */
static void write_sample(const char *path)
{
    nf_error err;
    nf_writer *w = NULL;
    nf_writer_options o = {8192, NULL, false, true};
    cr_assert_eq(nf_writer_create(path, &o, &w, &err), NF_OK, "%s", err.message);
    size_t ir, i8, ib;
    cr_assert_eq(nf_writer_add_resource(w, "r", 5, &ir, &err), NF_OK, "%s", err.message);
    nf_geometry g8, gb;
    uint64_t s8[2] = {2, 40}, sb[1] = {3000};
    cr_assert_eq(nf_geometry_init(&g8, nf_layout_lookup("row_split_k128_v1"), nf_format_lookup("q8_g32_fp16"), 2,
                                  s8, 1, &err),
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

/* One verification: 1 valid, 0 invalid, -1 verification could not run.  *checked (optional)
 * receives the number of checksums compared. */
static int verdict(const char *path, bool require, uint64_t *checked)
{
    nf_verify_report r;
    nf_error err;
    nf_verify_options o = {NF_VERIFY_CHECKSUMS, 1, require};
    if (nf_verify_artifact_with(path, &o, &r, &err) != NF_OK) return -1;
    int v = r.valid ? 1 : 0;
    if (checked) *checked = r.checksums_checked;
    nf_verify_report_free(&r);
    return v;
}

/* Offset in the entry file of the member name "checksums" (its 9 letters). */
static off_t checksums_name_at(const char *entry)
{
    FILE *f = fopen(entry, "rb");
    cr_assert_not_null(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    static const char key[] = "\"checksums\":";
    off_t at = -1;
    for (size_t i = 0; i + sizeof key - 1 <= n; i++)
        if (memcmp(buf + i, key, sizeof key - 1) == 0) {
            cr_assert_eq(at, -1, "\"checksums\" occurs twice in the entry file");
            at = (off_t)i + 1;
        }
    cr_assert_geq(at, 0, "no \"checksums\" member in the entry file");
    return at;
}

static uint8_t byte_at(int fd, off_t pos)
{
    uint8_t b;
    cr_assert_eq(pread(fd, &b, 1, pos), 1);
    return b;
}

static void set_byte(int fd, off_t pos, uint8_t b) { cr_assert_eq(pwrite(fd, &b, 1, pos), 1); }

Test(byteflip, every_byte_of_every_file_is_covered, .timeout = 600)
{
    char entry[300], part[320];
    snprintf(entry, sizeof entry, "%s/a.ninfer", dir);
    snprintf(part, sizeof part, "%s.part-0001", entry);
    write_sample(entry);
    struct stat sb;
    cr_assert_eq(stat(part, &sb), 0, "the sample is not split: no %s", part);
    uint64_t sums = 0, strict_sums = 0;
    cr_assert_eq(verdict(entry, false, &sums), 1, "the untouched artifact does not verify");
    cr_assert_eq(sums, 4, "expected 4 checksums (3 objects and the directory), got %llu",
                 (unsigned long long)sums);
    cr_assert_eq(verdict(entry, true, &strict_sums), 1, "the untouched artifact does not verify with require_checksums");
    cr_assert_eq(strict_sums, 4);
    off_t name_at = checksums_name_at(entry);

    const char *files[2] = {entry, part};
    static const uint8_t masks[3] = {0x01, 0x80, 0xFF};
    size_t flips = 0, strict_missed = 0, missed = 0, fewer = 0, tail_flips = 0;
    for (int f = 0; f < 2; f++) {
        int fd = open(files[f], O_RDWR);
        cr_assert_geq(fd, 0);
        cr_assert_eq(fstat(fd, &sb), 0);
        for (off_t pos = 0; pos < sb.st_size; pos++) {
            uint8_t orig = byte_at(fd, pos);
            for (int m = 0; m < 3; m++) {
                if (m == 1 && pos % SPARSE_STRIDE != 0) continue;
                if (m == 2 && pos % 5 != 0) continue;
                set_byte(fd, pos, (uint8_t)(orig ^ masks[m]));
                int strict = verdict(entry, true, NULL);
                uint64_t checked = 0;
                int lenient = verdict(entry, false, &checked);
                set_byte(fd, pos, orig);
                flips++;
                if (f == 1 && pos >= 32 && pos < 4096) tail_flips++;
                if (strict != 0) {
                    strict_missed++;
                    if (strict_missed <= 20)
                        cr_log_error("require_checksums: %s byte %lld: 0x%02x -> 0x%02x %s", files[f], (long long)pos,
                                     orig, orig ^ masks[m],
                                     strict < 0 ? "made verification fail to run" : "not detected");
                }
                bool in_name = f == 0 && pos >= name_at && pos < name_at + 9;
                if (lenient == 1 && checked < sums && in_name) {
                    fewer++;
                } else if (lenient != 0) {
                    missed++;
                    if (missed <= 20)
                        cr_log_error("defaults: %s byte %lld: 0x%02x -> 0x%02x %s", files[f], (long long)pos, orig,
                                     orig ^ masks[m],
                                     lenient < 0 ? "made verification fail to run"
                                                 : checked < sums ? "only fewer checksums checked" : "not detected");
                }
            }
        }
        close(fd);
    }
    cr_log_info("%zu single-byte changes (%zu in the part header tail): %zu undetected with require_checksums; "
                "with the defaults %zu undetected, %zu seen only as fewer checksums (the name \"checksums\")",
                flips, tail_flips, strict_missed, missed, fewer);
    cr_assert_gt(tail_flips, 0);
    cr_assert_eq(strict_missed, 0, "%zu of %zu single-byte changes were not reported as invalid with require_checksums",
                 strict_missed, flips);
    cr_assert_eq(missed, 0, "%zu of %zu single-byte changes were not detected with the defaults", missed, flips);
    cr_assert_eq(verdict(entry, true, NULL), 1, "the restored artifact does not verify");
}
