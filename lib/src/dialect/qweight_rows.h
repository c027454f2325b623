/* A band of a quantized weight's rows read once, its values taken a few rows at a time
 * (internal; the converter's chunks, exec_jobs.c).
 *
 * GPTQ's and AWQ GEMM's codes lie across the value rows (docs/dialects.md "GPTQ and AWQ"): a
 * read of r rows is K * b/32 (GPTQ) or K (AWQ) runs of r * 4 (r / 2) bytes, so a chunk reads
 * well only when r is large, while its binary32 values are best encoded a cache's worth at a
 * time.  nf_dialect_rows_open reads the band's words, scales and zero points (about b/8 bytes a
 * value; a band longer than nf_dialect_rows_most is not held); nf_dialect_rows_read turns rows of
 * it into values from memory.  Those values are nf_qweight_read_f32's, bit for bit.  For the
 * packed dialects (GPTQ, AWQ, MLX); weights and readings that are not whole words are read the
 * plain way, as nf_qweight_read_f32 reads them. */
#ifndef NINFER_DIALECT_QWEIGHT_ROWS_H
#define NINFER_DIALECT_QWEIGHT_ROWS_H

#include <ninfer/dialect.h>

typedef struct nf_dialect_rows nf_dialect_rows;

/* The most rows of q a band holds (about 32 MiB of words, scales and zero points, a multiple of
 * 8); 0 when q's words are not read by bands (not GPTQ or AWQ GEMM, act-order, 3 bits, groups
 * that split a word). */
uint64_t nf_dialect_rows_most(const nf_qweight *q);

/* Rows [r0, r1) of q, a GPTQ, AWQ or MLX weight (NF_ERR_USAGE for another); *out NULL on
 * failure. */
nf_status nf_dialect_rows_open(const nf_source *src, const nf_qweight *q, uint64_t r0, uint64_t r1,
                               nf_dialect_rows **out, nf_error *err);
/* Values of rows [a, b) (within the band) as nf_qweight_read_f32 gives them: (b - a) * K floats
 * into out (out_len at least that).  After an error the band's later rows are read the plain
 * way. */
nf_status nf_dialect_rows_read(nf_dialect_rows *c, uint64_t a, uint64_t b, float *out, size_t out_len, nf_error *err);
void nf_dialect_rows_close(nf_dialect_rows *c);

#endif
