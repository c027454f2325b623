/* Constant tables of ggml's i-quant block formats (internal).  Defined in ggml_tables.c, which
 * scripts/gen_ggml_tables.py generates from the spec's ggml-tables/ files (how each
 * is indexed: docs/formats.md 8.3).
 *
 * Grid entries are kept as the integers the spec lists; value j of an entry is
 * (entry >> 8j) & 0xFF, read by shifting so the host's byte order never matters. */
#ifndef NINFER_FORMAT_GGML_TABLES_H
#define NINFER_FORMAT_GGML_TABLES_H

#include <stdint.h>

#define NF_GGML_KMASK_IQ2XS_SIZE 8
#define NF_GGML_KSIGNS_IQ2XS_SIZE 128
#define NF_GGML_KVALUES_IQ4NL_SIZE 16
#define NF_GGML_IQ2XXS_GRID_SIZE 256
#define NF_GGML_IQ2XS_GRID_SIZE 512
#define NF_GGML_IQ2S_GRID_SIZE 1024
#define NF_GGML_IQ3XXS_GRID_SIZE 256
#define NF_GGML_IQ3S_GRID_SIZE 512
#define NF_GGML_IQ1S_GRID_SIZE 2048

/* kmask_iq2xs[j] = 1 << j: the mask of sign bit j of a sign byte. */
extern const uint8_t nf_ggml_kmask_iq2xs[NF_GGML_KMASK_IQ2XS_SIZE];
/* 7 stored sign bits -> full sign byte (bit 7 = parity, so every 8 have an even count). */
extern const uint8_t nf_ggml_ksigns_iq2xs[NF_GGML_KSIGNS_IQ2XS_SIZE];
/* IQ4_NL / IQ4_XS non-linear code values. */
extern const int8_t nf_ggml_kvalues_iq4nl[NF_GGML_KVALUES_IQ4NL_SIZE];
/* 8 unsigned magnitudes per entry. */
extern const uint64_t nf_ggml_iq2xxs_grid[NF_GGML_IQ2XXS_GRID_SIZE];
extern const uint64_t nf_ggml_iq2xs_grid[NF_GGML_IQ2XS_GRID_SIZE];
extern const uint64_t nf_ggml_iq2s_grid[NF_GGML_IQ2S_GRID_SIZE];
/* 4 unsigned magnitudes per entry. */
extern const uint32_t nf_ggml_iq3xxs_grid[NF_GGML_IQ3XXS_GRID_SIZE];
extern const uint32_t nf_ggml_iq3s_grid[NF_GGML_IQ3S_GRID_SIZE];
/* 8 signed bytes (two's complement: 0xff = -1) per entry. */
extern const uint64_t nf_ggml_iq1s_grid[NF_GGML_IQ1S_GRID_SIZE];

#endif
