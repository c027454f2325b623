/* Fuzz target: quantized-checkpoint dialect detection and values (docs/dialects.md) through
 * nf_source_open, nf_dialects_scan and nf_qweight_read_f32.
 *
 * Input framing (the two markers hold a 0xFF byte, which no JSON text or name in valid UTF-8
 * has, so they cannot be met inside the texts):
 *
 *     CONFIG [ "\xff" "HF\n" HF_QUANT_CONFIG ] "\xff" "ST\n" SAFETENSORS
 *
 * - everything after the first "\xffST\n" is the safetensors file image, written as
 *   "model.safetensors" in a private directory (fuzz_tmpdir.h);
 * - before it, everything up to the first "\xffHF\n" is config.json and the rest
 *   hf_quant_config.json; either file is left out when its text is empty, hf_quant_config.json
 *   also when there is no "\xffHF\n";
 * - an input without "\xffST\n" is config.json alone beside an empty checkpoint
 *   (a safetensors header "{}").
 *
 * The file opens as a checkpoint (its companions beside it), the scan runs, and for every
 * quantized weight of at most FZ_DIALECT_MAX_VALUES values (a larger declared shape is skipped,
 * so a tiny input cannot make the harness allocate much) all rows are read in one call, then
 * the second half again on its own, and a span of the last row: all must give the same bits.  Any input gives NF_OK or
 * NF_ERR_INVALID (NF_ERR_NOMEM tolerated) from each call, never another status; the roles of a
 * weight's tensors must name that weight. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "fuzz_target.h"
#include "fuzz_tmpdir.h"

#define FZ_DIALECT_MAX_VALUES ((uint64_t)1 << 18) /* values of one weight read (1 MiB of floats) */
#define FZ_DIALECT_MAX_WEIGHTS 64u                /* weights read per input */

static const uint8_t *find(const uint8_t *p, size_t n, const char *marker)
{
    size_t m = strlen(marker);
    for (size_t i = 0; n >= m && i <= n - m; i++)
        if (p[i] == (uint8_t)marker[0] && memcmp(p + i, marker, m) == 0) return p + i;
    return NULL;
}

static void put(const char *name, const uint8_t *p, size_t n)
{
    if (n) fz_write_file(name, p, n);
    else fz_remove_file(name);
}

static bool allowed(nf_status st) { return st == NF_OK || st == NF_ERR_INVALID || st == NF_ERR_NOMEM; }

static void check_roles(const nf_dialects *d, const nf_qweight *q)
{
    const nf_qweight *owner = NULL;
    if (nf_dialects_role(d, q->codes, &owner) != NF_QROLE_WEIGHT || owner != q) abort();
    const nf_source_tensor *comp[NF_QWEIGHT_MAX_READS];
    size_t nc = nf_qweight_companions(q, comp);
    for (size_t i = 0; i < nc; i++) {
        if (nf_dialects_role(d, comp[i], &owner) != NF_QROLE_COMPANION || owner != q) abort();
    }
    for (size_t i = 0; i < 2; i++) {
        if (!q->activation[i]) continue;
        if (nf_dialects_role(d, q->activation[i], &owner) != NF_QROLE_ACTIVATION || owner != q) abort();
    }
}

static void read_weight(const nf_source *src, const nf_qweight *q)
{
    uint64_t n = q->shape[0], k = q->shape[1], values;
    if (n == 0 || k == 0 || q->block_rows == 0 || q->block_cols == 0) abort();
    /* (bitsandbytes' blocks run along the flattened weight: scale_cols of them in one row) */
    if (q->pack != NF_QPACK_BNB && (q->scale_rows != (n + q->block_rows - 1) / q->block_rows ||
                                    q->scale_cols != (k + q->block_cols - 1) / q->block_cols))
        abort();
    if (__builtin_mul_overflow(n, k, &values) || values > FZ_DIALECT_MAX_VALUES) return;
    float *all = malloc((size_t)values * sizeof *all);
    if (!all) return;
    nf_error err;
    nf_error_clear(&err);
    nf_status st = nf_qweight_read_f32(src, q, 0, n, all, (size_t)values, &err);
    fz_note("nf_qweight_read_f32", st == NF_OK, err.message);
    if (!allowed(st)) {
        fprintf(stderr, "nf_qweight_read_f32: %s: %s\n", nf_status_name(st), err.message);
        abort();
    }
    if (st == NF_OK) fz_consume(all, (size_t)values * sizeof *all);
    else fz_consume_str(err.message);
    /* rows [n/2, n) alone: other pieces, other scale rows; the same values when both succeed,
     * and they must succeed when the whole did */
    uint64_t h = n / 2;
    size_t rest = (size_t)((n - h) * k);
    float *part = malloc(rest * sizeof *part);
    if (part) {
        nf_status st2 = nf_qweight_read_f32(src, q, h, n, part, rest, &err);
        if (!allowed(st2)) {
            fprintf(stderr, "nf_qweight_read_f32 (rows %llu..): %s: %s\n", (unsigned long long)h, nf_status_name(st2),
                    err.message);
            abort();
        }
        if (st == NF_OK && st2 != NF_OK) {
            fprintf(stderr, "rows [%llu, %llu) fail alone after reading every row: %s\n", (unsigned long long)h,
                    (unsigned long long)n, err.message);
            abort();
        }
        if (st == NF_OK && memcmp(part, all + h * k, rest * sizeof *part) != 0) {
            fprintf(stderr, "rows [%llu, %llu) read alone differ from the whole read\n", (unsigned long long)h,
                    (unsigned long long)n);
            abort();
        }
        free(part);
    }
    /* a span of the last row, columns [k/3, 2k/3 + 1): the same values as the whole read */
    uint64_t c0 = k / 3, cn = k - c0 < k / 3 + 1 ? k - c0 : k / 3 + 1;
    float *span = malloc((size_t)cn * sizeof *span);
    if (span) {
        nf_status st3 = nf_qweight_read_f32_span(src, q, n - 1, c0, cn, span, (size_t)cn, &err);
        if (!allowed(st3)) {
            fprintf(stderr, "nf_qweight_read_f32_span: %s: %s\n", nf_status_name(st3), err.message);
            abort();
        }
        if (st == NF_OK && (st3 != NF_OK || memcmp(span, all + (n - 1) * k + c0, (size_t)cn * sizeof *span) != 0)) {
            fprintf(stderr, "a span of row %llu differs from (or fails after) the whole read\n",
                    (unsigned long long)(n - 1));
            abort();
        }
        free(span);
    }
    free(all);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint8_t empty_st[10] = {2, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
    fz_make_dir(); /* before any fz_remove_file: its paths are inside the directory */
    const uint8_t *st_mark = find(data, size, "\xffST\n");
    size_t head = st_mark ? (size_t)(st_mark - data) : size;
    const uint8_t *hf_mark = find(data, head, "\xffHF\n");
    size_t cfg_len = hf_mark ? (size_t)(hf_mark - data) : head;
    put("config.json", data, cfg_len);
    if (hf_mark) put("hf_quant_config.json", hf_mark + 4, head - cfg_len - 4);
    else fz_remove_file("hf_quant_config.json");
    if (st_mark) fz_write_file("model.safetensors", st_mark + 4, size - head - 4);
    else fz_write_file("model.safetensors", empty_st, sizeof empty_st);

    char path[FZ_PATH_BYTES];
    fz_path("model.safetensors", path);
    nf_source *src = NULL;
    nf_error err;
    nf_error_clear(&err);
    nf_status st = nf_source_open(path, &src, &err);
    fz_note("nf_source_open", st == NF_OK, err.message);
    if (st != NF_OK) {
        if (!allowed(st) || src) {
            fprintf(stderr, "nf_source_open: %s: %s\n", nf_status_name(st), err.message);
            abort();
        }
        fz_consume_str(err.message);
        goto done;
    }
    nf_dialects *d = NULL;
    st = nf_dialects_scan(src, &d, &err);
    fz_note("nf_dialects_scan", st == NF_OK, err.message);
    if (st != NF_OK) {
        if (!allowed(st) || d) {
            fprintf(stderr, "nf_dialects_scan: %s: %s\n", nf_status_name(st), err.message);
            abort();
        }
        fz_consume_str(err.message);
        nf_source_close(src);
        goto done;
    }
    fz_consume_str(nf_dialects_declared(d));
    size_t nw = nf_dialects_weight_count(d);
    if (nf_dialects_weight_at(d, nw) != NULL) abort();
    if (nw && !nf_dialects_declared(d)) abort();
    for (size_t i = 0; i < nf_source_tensor_count(src); i++) {
        const nf_qweight *owner = NULL;
        nf_qrole role = nf_dialects_role(d, nf_source_tensor_at(src, i), &owner);
        if ((role == NF_QROLE_WEIGHT || role == NF_QROLE_COMPANION) && !owner) abort();
        if (role == NF_QROLE_PLAIN && owner) abort();
    }
    for (size_t i = 0; i < nw; i++) {
        const nf_qweight *q = nf_dialects_weight_at(d, i);
        if (!q || !q->codes || !q->scale || !q->strategy) abort();
        const char *name = nf_dialect_name(q->dialect);
        if (!name || q->dialect == NF_DIALECT_NONE) abort();
        char desc[256];
        nf_qweight_describe(q, desc, sizeof desc);
        fz_consume_str(desc);
        check_roles(d, q);
        if (i < FZ_DIALECT_MAX_WEIGHTS) read_weight(src, q);
    }
    nf_dialects_free(d);
    nf_source_close(src);
done:
    fz_remove_file("model.safetensors");
    fz_remove_file("config.json");
    fz_remove_file("hf_quant_config.json");
    return 0;
}
