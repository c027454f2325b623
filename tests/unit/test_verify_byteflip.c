/* nf_verify_artifact detects every single-byte change of a checksummed artifact (docs/artifact.md 8:
 * "With both [checksums], ninfer-verify detects any change to any byte of the file set").
 *
 * A small split artifact (entry + one part: header, padded JSON directory with
 * metadata.checksums, a resource, a q8 tensor with padding lanes, a bf16 vector straddling the
 * file boundary, alignment gaps, the zeroed tail [32, 4096) of the part header) is written with
 * the library's writer; then every byte of every file is changed in place, one at a time, and
 * the verifier run in-process on the result; the byte is restored before the next.  Every
 * position is flipped with XOR 0x01 (lowest bit) and XOR 0x80 (highest bit), and with XOR 0xFF
 * at every 5th position.  Under AddressSanitizer (ten times slower; the plain run covers every
 * byte) one position in SPARSE_STRIDE is flipped, with 0x01, 0x80 or 0xFF in turn, so the run
 * still reaches every region of both files.  No byte is excluded from the plain run.
 *
 * Each change is verified twice:
 * - with require_checksums (ninfer-verify --require-checksums, the CI gate): the report must
 *   be INVALID, for every byte;
 * - with the defaults: the report must be INVALID, or record fewer checksums than the untouched
 *   artifact, and the second case may only come from a change to the member name "checksums"
 *   itself.  metadata is an open object (docs/artifact.md 5), so "chedksums" is an unknown
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

#include "support/test_artifact.h"

static char dir[256];

static void make_dir(void) { test_dir_make(dir, sizeof dir, "byteflip"); }

static void remove_dir(void) { test_dir_remove(dir); }

#if defined(__SANITIZE_ADDRESS__)
#define SPARSE_STRIDE 3
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SPARSE_STRIDE 3
#endif
#endif
#ifndef SPARSE_STRIDE
#define SPARSE_STRIDE 1
#endif

TestSuite(byteflip, .init = make_dir, .fini = remove_dir);

/* resource "r" (5 bytes), q8 "w.q8" [2,40] (row_split_k128_v1: padding lanes), bf16 "w.bf16"
 * [3000] (support/test_artifact.h); split with at most 8192 bytes per file: the entry holds 4096
 * payload bytes, the part the rest. */
static void write_sample(const char *path) { test_write_small_artifact(path, 8192, true); }

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
    cr_assert_eq(sums, 4, "expected 4 checksums (3 objects and the directory), got %llu", (unsigned long long)sums);
    cr_assert_eq(verdict(entry, true, &strict_sums), 1,
                 "the untouched artifact does not verify with require_checksums");
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
                if (SPARSE_STRIDE > 1) {
                    if (pos % SPARSE_STRIDE != 0 || (pos / SPARSE_STRIDE) % 3 != m) continue;
                } else if (m == 2 && pos % 5 != 0) {
                    continue;
                }
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
                                     lenient < 0      ? "made verification fail to run"
                                     : checked < sums ? "only fewer checksums checked"
                                                      : "not detected");
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
