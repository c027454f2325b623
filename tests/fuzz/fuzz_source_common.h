/* tests/fuzz/fuzz_source_common.h - what the safetensors and GGUF targets do with a source
 * that opened: list it, find every tensor by name, read raw bytes, raw rows and binary32 rows
 * of the first tensors, through a tensor byte reader too.  Reads are sized from the tensor's
 * own fields, which the reader promises are backed by bytes of the file: a read that goes
 * wrong here is the library's fault. */
#ifndef NINFER_FUZZ_SOURCE_COMMON_H
#define NINFER_FUZZ_SOURCE_COMMON_H

#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "fuzz_target.h"
#include "fuzz_tmpdir.h"

#define FZ_SOURCE_TENSORS 16u  /* tensors read per input */
#define FZ_SOURCE_ROWS 4u      /* rows read from the top of each */
#define FZ_SOURCE_RAW 512u     /* raw bytes read from the start and the end of each */
#define FZ_SOURCE_METADATA 64u /* __metadata__ entries listed and looked up */

static inline void fz_read_tensor(const nf_source *s, const nf_source_tensor *t)
{
    nf_error err;
    fz_consume_str(t->name);
    fz_consume_str(t->type_name);
    fz_consume(t->shape, (t->rank ? t->rank : 1) * sizeof *t->shape);
    if (nf_source_find(s, t->name) != t) abort(); /* names are unique: the lookup finds this very tensor */
    /* The reader's promise: every tensor lies inside its file, and whole rows inside the tensor
     * (a PyTorch tensor in a deflated member or a strided view is not one byte range of its file:
     * its offset is inside it). */
    uint64_t fsize = nf_source_file_size(s, t->file);
    if (nf_source_kind_of(s) == NF_SOURCE_TORCH ? t->offset > fsize : t->bytes > fsize || t->offset > fsize - t->bytes)
        abort();
    if (t->row_bytes && t->rows && t->row_bytes > t->bytes / t->rows) abort();

    /* Raw bytes at both ends. */
    uint8_t raw[FZ_SOURCE_RAW];
    size_t n = (size_t)fz_min_u64(t->bytes, FZ_SOURCE_RAW);
    if (nf_source_read_bytes(s, t, 0, raw, n, &err) == NF_OK) fz_consume(raw, n);
    if (nf_source_read_bytes(s, t, t->bytes - n, raw, n, &err) == NF_OK) fz_consume(raw, n);
    /* Through the byte reader the layout gatherers use. */
    nf_byte_reader rd;
    nf_source_tensor_reader(s, t, &rd);
    if (rd.read(rd.ctx, t->bytes - n, raw, n, &err) == NF_OK) fz_consume(raw, n);

    uint64_t rows = fz_min_u64(t->rows, FZ_SOURCE_ROWS);
    /* Raw rows (whole blocks only). */
    if (t->row_bytes > 0 && rows * t->row_bytes <= t->bytes) {
        size_t len = (size_t)(rows * t->row_bytes);
        uint8_t *buf = malloc(len ? len : 1);
        if (buf) {
            if (nf_source_read_rows(s, t, 0, rows, buf, len, &err) == NF_OK) fz_consume(buf, len);
            free(buf);
        }
    }
    /* Values.  A row of whole blocks holds at most 256 values per block, so this stays a small
     * multiple of the bytes present. */
    if (t->convertible && t->row_elements > 0) {
        uint64_t values = rows * t->row_elements;
        if (values / t->row_elements != rows || values > (uint64_t)1 << 26) return;
        float *out = malloc((size_t)values * sizeof *out);
        if (!out) return;
        if (nf_source_read_f32(s, t, 0, rows, out, (size_t)values, &err) == NF_OK)
            fz_consume(out, (size_t)values * sizeof *out);
        /* The last row too (a different offset into the file). */
        if (t->rows > rows && nf_source_read_f32(s, t, t->rows - 1, t->rows, out, (size_t)values, &err) == NF_OK)
            fz_consume(out, (size_t)t->row_elements * sizeof *out);
        free(out);
    }
}

static inline void fz_exercise_source(const nf_source *s)
{
    fz_consume_str(nf_source_path(s));
    size_t nfiles = nf_source_file_count(s);
    for (size_t f = 0; f < nfiles; f++) {
        fz_consume_str(nf_source_file_path(s, f));
        size_t nm = nf_source_st_metadata_count(s, f);
        for (size_t i = 0; i < nm && i < FZ_SOURCE_METADATA; i++) { /* lookups are linear scans */
            const char *k = NULL, *v = NULL;
            if (nf_source_st_metadata_at(s, f, i, &k, &v)) {
                fz_consume_str(k);
                fz_consume_str(v);
                if (nf_source_st_metadata(s, f, k) == NULL) abort(); /* a listed key is found */
            }
        }
    }
    size_t n = nf_source_tensor_count(s);
    for (size_t i = 0; i < n; i++) {
        const nf_source_tensor *t = nf_source_tensor_at(s, i);
        if (!t) abort();
        if (i < FZ_SOURCE_TENSORS) fz_read_tensor(s, t);
        else fz_consume_str(t->name);
    }
    if (nf_source_tensor_at(s, n) != NULL) abort();
    if (nf_source_find(s, "") != NULL) abort(); /* empty names are refused at open */
}

/* The same bytes through the file reader (nf_source_open: pread through a window for GGUF, a
 * malloc'ed header for safetensors) must give the same verdict and the same tensors as the
 * memory reader: a differential check of the two code paths.  `fname` picks the reader by its
 * suffix (.gguf or not). */
static inline void fz_compare_file_mode(const uint8_t *data, size_t size, const char *fname, const nf_source *mem,
                                        nf_status mem_status)
{
    fz_write_file(fname, data, size);
    char path[FZ_PATH_BYTES];
    fz_path(fname, path);
    nf_source *f = NULL;
    nf_error err;
    nf_status st = nf_source_open(path, &f, &err);
    fz_note("nf_source_open (file)", st == NF_OK, err.message);
    if (st != mem_status) {
        fprintf(stderr, "file and memory readers disagree: file %s (%s), memory %s\n", nf_status_name(st),
                st == NF_OK ? "ok" : err.message, nf_status_name(mem_status));
        abort();
    }
    if (st == NF_OK) {
        size_t n = nf_source_tensor_count(f);
        if (n != nf_source_tensor_count(mem) || nf_source_gguf_kv_count(f) != nf_source_gguf_kv_count(mem) ||
            nf_source_gguf_data_offset(f) != nf_source_gguf_data_offset(mem))
            abort();
        for (size_t i = 0; i < n; i++) {
            const nf_source_tensor *a = nf_source_tensor_at(f, i), *b = nf_source_tensor_at(mem, i);
            if (strcmp(a->name, b->name) != 0 || a->offset != b->offset || a->bytes != b->bytes || a->rows != b->rows ||
                a->row_elements != b->row_elements || a->ggml_type != b->ggml_type || a->dtype != b->dtype ||
                a->convertible != b->convertible || a->rank != b->rank)
                abort();
        }
        fz_exercise_source(f);
        nf_source_close(f);
    }
    fz_remove_file(fname);
}

#endif
