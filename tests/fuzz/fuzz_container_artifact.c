/* Fuzz target: a whole .ninfer file set through the reader and the verifier.
 *
 * Input format: the entry file's bytes, optionally followed by continuation parts, each
 * introduced by the 8-byte marker "\xff" "NFPART:" then the part's file name and a newline:
 *
 *     <entry bytes> [ \xff NFPART: <name> \n <part bytes> ]...
 *
 * The entry is written as "fuzz.ninfer" and each part under its own name in a private
 * temporary directory (fuzz_tmpdir.h),
 * so a directory's files[i].path finds the bytes the fuzzer gave it.  A name that is not a
 * plain file name ([A-Za-z0-9._+-], 1..128 bytes, not "." or "..", not the entry's own name,
 * not seen before in this input) drops its part: the harness never writes outside its
 * directory.  At most 16 parts are written.
 *
 * Then: nf_verify_artifact at full level (structure, words, checksums); and, when
 * nf_artifact_open accepts the entry, for the first objects: nf_artifact_check_object, and
 * for those whose bytes can all be present in the file set, nf_layout_decode_rows (first rows
 * and the last row, divisors included), nf_words_to_f32, nf_layout_row_spans and
 * nf_layout_gather_rows.  Everything is freed and every file removed before returning. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "fuzz_target.h"
#include "fuzz_tmpdir.h"

#define ENTRY_NAME "fuzz.ninfer"
#define MARKER \
    "\xff"     \
    "NFPART:"
#define MARKER_LEN 8u
#define MAX_PARTS 16u
#define MAX_NAME FZ_MAX_NAME
#define MAX_OBJECTS 12u /* objects decoded per input */
#define HEAD_ROWS 3u    /* rows decoded from the top of each tensor */

static bool plain_name(const uint8_t *p, size_t n)
{
    if (n == 0 || n > MAX_NAME) return false;
    if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.')) return false;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = p[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                  c == '-' || c == '+';
        if (!ok) return false;
    }
    return !(n == strlen(ENTRY_NAME) && memcmp(p, ENTRY_NAME, n) == 0);
}

static const uint8_t *find_marker(const uint8_t *p, const uint8_t *end)
{
    while ((size_t)(end - p) >= MARKER_LEN) {
        const uint8_t *m = memchr(p, 0xff, (size_t)(end - p) - (MARKER_LEN - 1));
        if (!m) return NULL;
        if (memcmp(m, MARKER, MARKER_LEN) == 0) return m;
        p = m + 1;
    }
    return NULL;
}

/* ---------------------------------------------------------------- object exercise */
static void decode_rows(const nf_geometry *g, const nf_byte_reader *rd, uint64_t r0, uint64_t r1, bool divisors)
{
    nf_words w;
    nf_error err;
    if (nf_words_alloc(&w, g, r1 - r0, &err) != NF_OK) return;
    if (!divisors && w.divisors) {
        free(w.divisors);
        w.divisors = NULL;
    }
    if (nf_layout_decode_rows(g, rd, r0, r1, &w, &err) == NF_OK) {
        uint64_t cells = (r1 - r0) * g->cols;
        float *out = malloc((size_t)(cells ? cells : 1) * sizeof *out);
        if (out) {
            if (nf_words_to_f32(g, &w, r0, out, &err) == NF_OK) fz_consume(out, (size_t)cells * sizeof *out);
            free(out);
        }
    }
    nf_words_free(&w);
}

static void exercise_object(nf_artifact *a, const nf_object *o, uint64_t budget)
{
    nf_geometry g;
    nf_error err;
    if (nf_artifact_check_object(a, o, &g, &err) != NF_OK) {
        fz_note("nf_artifact_check_object", 0, err.message);
        return;
    }
    /* Decode only what the file set can hold: the words of an object are a small multiple of
     * its bytes, and objects whose bytes are not there fail on their first read anyway. */
    if (o->kind != NF_OBJECT_TENSOR || g.bytes > budget || g.rows == 0) return;
    nf_byte_reader rd;
    nf_artifact_object_reader(a, o, &rd);
    uint64_t head = fz_min_u64(g.rows, HEAD_ROWS);
    decode_rows(&g, &rd, 0, head, true);
    if (g.rows > head) decode_rows(&g, &rd, g.rows - 1, g.rows, false);

    nf_span spans[NF_MAX_PLANES];
    uint32_t nspans = 0;
    bool nvfp4 = g.format && g.format->category == NF_CAT_NVFP4;
    uint64_t span_end = nvfp4 ? (g.rows >= 128 ? 128 : 0) : head;
    if (span_end && nf_layout_row_spans(&g, 0, span_end, spans, &nspans, &err) == NF_OK)
        fz_consume(spans, nspans * sizeof spans[0]);

    /* A gather of first, last and first again (nvfp4: a whole tile of 128 rows). */
    uint64_t count = nvfp4 ? 128 : 3;
    uint64_t rows[128];
    for (uint64_t i = 0; i < count; i++) rows[i] = (i % 3 == 1) ? g.rows - 1 : 0;
    nf_geometry og;
    if (nf_layout_gather_rows(&g, &rd, rows, count, &og, NULL, &err) != NF_OK) return;
    if (og.bytes > budget + (uint64_t)count * 4096u) return;
    uint8_t *out = malloc((size_t)(og.bytes ? og.bytes : 1));
    if (!out) return;
    if (nf_layout_gather_rows(&g, &rd, rows, count, &og, out, &err) == NF_OK) fz_consume(out, (size_t)og.bytes);
    free(out);
}

/* ---------------------------------------------------------------- entry point */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *end = data + size;
    const uint8_t *cut = find_marker(data, end);
    const uint8_t *entry_end = cut ? cut : end;
    char names[MAX_PARTS][MAX_NAME + 1];
    size_t nparts = 0;
    fz_write_file(ENTRY_NAME, data, (size_t)(entry_end - data));
    while (cut) {
        const uint8_t *name = cut + MARKER_LEN;
        const uint8_t *nl = memchr(name, '\n', (size_t)(end - name));
        if (!nl) break;
        const uint8_t *body = nl + 1;
        cut = find_marker(body, end);
        const uint8_t *body_end = cut ? cut : end;
        size_t nlen = (size_t)(nl - name);
        if (nparts == MAX_PARTS || !plain_name(name, nlen)) continue;
        char nm[MAX_NAME + 1];
        memcpy(nm, name, nlen);
        nm[nlen] = '\0';
        bool seen = false;
        for (size_t i = 0; i < nparts; i++) seen = seen || strcmp(names[i], nm) == 0;
        if (seen) continue;
        memcpy(names[nparts], nm, nlen + 1);
        nparts++;
        fz_write_file(nm, body, (size_t)(body_end - body));
    }

    char path[FZ_PATH_BYTES];
    fz_path(ENTRY_NAME, path);

    nf_verify_report report = {0};
    nf_error err;
    nf_status vst = nf_verify_artifact(path, NF_VERIFY_CHECKSUMS, &report, &err);
    fz_note("nf_verify_artifact", vst == NF_OK, err.message);
    if (vst == NF_OK) {
        fz_note("verdict", report.valid, report.count ? report.problems[0].message : "invalid");
        for (size_t i = 0; i < report.count; i++) {
            fz_consume_str(report.problems[i].object);
            fz_consume_str(report.problems[i].check);
            fz_consume_str(report.problems[i].message);
        }
    }
    nf_verify_report_free(&report);

    nf_artifact *a = NULL;
    nf_read_mode mode = (size & 1) ? NF_READ_MMAP : NF_READ_PREAD;
    nf_status ost = nf_artifact_open(path, mode, &a, &err);
    fz_note("nf_artifact_open", ost == NF_OK, err.message);
    if (ost == NF_OK) {
        char id[33];
        nf_artifact_id_hex(a, id);
        fz_consume(id, sizeof id);
        fz_consume(nf_artifact_json_text(a), (size_t)nf_artifact_json_bytes(a));
        for (size_t i = 0; i < nf_artifact_file_count(a); i++) fz_consume_str(nf_artifact_file(a, i)->path);
        size_t n = nf_artifact_object_count(a);
        for (size_t i = 0; i < n && i < MAX_OBJECTS; i++) {
            const nf_object *o = nf_artifact_object(a, i);
            if (nf_artifact_find(a, o->id) != o) abort(); /* the id table must find every object */
            exercise_object(a, o, (uint64_t)size);
        }
        nf_artifact_close(a);
    }

    fz_remove_file(ENTRY_NAME);
    for (size_t i = 0; i < nparts; i++) fz_remove_file(names[i]);
    return 0;
}
