/* nf_verify_artifact detects every single-byte change of a checksummed artifact (design.md 4:
 * "With both [checksums], ninfer-verify detects any change to any byte of the file set").
 *
 * A small split artifact (entry + one part: header, padded JSON directory with
 * metadata.checksums, a resource, a q8 tensor with padding lanes, a bf16 vector straddling the
 * file boundary, alignment gaps, the zeroed tail of the part header) is written with the
 * library's writer; then every byte of every file is changed in place, one at a time, and the
 * verifier run in-process on the result must report it invalid; the byte is restored before
 * the next.  Every position is flipped with XOR 0x01 (lowest bit) and XOR 0x80 (highest bit),
 * and with XOR 0xFF at every 5th position (under AddressSanitizer, ten times slower: XOR 0x80
 * and 0xFF at every 5th position only).
 *
 * "Detected" means: the report is invalid, or fewer checksums were checked than on the
 * untouched artifact.  The second case is the one way a single byte can escape the INVALID
 * verdict: metadata is an open object (container.md 2.6), so a change to the member name
 * "checksums" (e.g. "chedksums") leaves an artifact that records no checksums at all, and one
 * to "directory" inside it leaves only the object digests; verify then says so
 * (checksums_checked, "no checksums recorded") rather than INVALID.  A gate that needs the
 * integrity guarantee must therefore require every checksum to have been checked.
 *
 * Excluded: bytes [32, 4096) of a continuation part.  container.md 2.4 says the writer leaves
 * them zero but 2.8 item 7 says readers do not check zero bytes, and nf_verify_artifact does
 * not check these yet (it checks payload gaps only); set CHECK_PART_HEADER_TAIL to 1 once it
 * does. */
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

#define CHECK_PART_HEADER_TAIL 0

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

/* 1 valid with `checksums` digests checked (or more), 0 invalid or fewer checked, -1
 * verification could not run.  *checked (optional) receives the count. */
static int verdict(const char *path, uint64_t checksums, uint64_t *checked)
{
    nf_verify_report r;
    nf_error err;
    if (nf_verify_artifact(path, NF_VERIFY_CHECKSUMS, &r, &err) != NF_OK) return -1;
    int v = r.valid && r.checksums_checked >= checksums ? 1 : 0;
    if (checked) *checked = r.checksums_checked;
    nf_verify_report_free(&r);
    return v;
}

static uint8_t byte_at(int fd, off_t pos)
{
    uint8_t b;
    cr_assert_eq(pread(fd, &b, 1, pos), 1);
    return b;
}

static void set_byte(int fd, off_t pos, uint8_t b) { cr_assert_eq(pwrite(fd, &b, 1, pos), 1); }

Test(byteflip, every_byte_of_every_file_is_covered, .timeout = 300)
{
    char entry[300], part[320];
    snprintf(entry, sizeof entry, "%s/a.ninfer", dir);
    snprintf(part, sizeof part, "%s.part-0001", entry);
    write_sample(entry);
    struct stat sb;
    cr_assert_eq(stat(part, &sb), 0, "the sample is not split: no %s", part);
    uint64_t sums = 0;
    cr_assert_eq(verdict(entry, 0, &sums), 1, "the untouched artifact does not verify");
    cr_assert_eq(sums, 4, "expected 4 checksums (3 objects and the directory), got %llu",
                 (unsigned long long)sums);

    const char *files[2] = {entry, part};
    static const uint8_t masks[3] = {0x01, 0x80, 0xFF};
    size_t flips = 0, missed = 0;
    for (int f = 0; f < 2; f++) {
        int fd = open(files[f], O_RDWR);
        cr_assert_geq(fd, 0);
        cr_assert_eq(fstat(fd, &sb), 0);
        for (off_t pos = 0; pos < sb.st_size; pos++) {
            if (!CHECK_PART_HEADER_TAIL && f == 1 && pos >= 32 && pos < 4096) continue;
            uint8_t orig = byte_at(fd, pos);
            for (int m = 0; m < 3; m++) {
                if (m == 1 && pos % SPARSE_STRIDE != 0) continue;
                if (m == 2 && pos % 5 != 0) continue;
                set_byte(fd, pos, (uint8_t)(orig ^ masks[m]));
                int v = verdict(entry, sums, NULL);
                set_byte(fd, pos, orig);
                flips++;
                if (v != 0) {
                    missed++;
                    if (missed <= 20)
                        cr_log_error("%s byte %lld: 0x%02x -> 0x%02x %s", files[f], (long long)pos, orig,
                                     orig ^ masks[m], v < 0 ? "made verification fail to run" : "not detected");
                }
            }
        }
        close(fd);
    }
    cr_log_info("%zu single-byte changes, %zu undetected", flips, missed);
    cr_assert_eq(missed, 0, "%zu of %zu single-byte changes were not reported as invalid", missed, flips);
    cr_assert_eq(verdict(entry, sums, NULL), 1, "the restored artifact does not verify");
}
