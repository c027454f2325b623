/* ggml block dequantizers for the 18 imported gguf_* formats (internal).  Each reproduces
 * ggml-quants.c's dequantize_row_* bit for bit (docs/formats.md 8.3). */
#ifndef NINFER_FORMAT_GGML_H
#define NINFER_FORMAT_GGML_H

#include "common/cpu.h"
#include "common/simd_target.h"
#include <stdbool.h>
#include <stdint.h>

#include <ninfer/error.h>
#include <ninfer/format.h>

/* Dequantize one row of k values (k a multiple of fmt->block_values) held in
 * k / block_values consecutive blocks. */
nf_status nf_ggml_dequant_row(const nf_format *fmt, const uint8_t *blocks, uint64_t k, float *out, nf_error *err);

/* The ggml block types read as values only, with no gguf_* format (Q4_1, Q5_1, Q8_1, Q8_K,
 * TQ1_0, TQ2_0, MXFP4, NVFP4, Q1_0; ggml_values.c, docs/formats.md 8.5): whether ggml_type is one,
 * and one row of k values of it (k a multiple of the type's block values), bit-exact with
 * ggml's to_float. */
bool nf_ggml_values_type(int ggml_type);
nf_status nf_ggml_values_row(int ggml_type, const uint8_t *blocks, uint64_t k, float *out, nf_error *err);
/* The integer codes q of one block of a ternary-style type, whose value is F(q) * d: TQ1_0 and
 * TQ2_0 (256 codes, -1..1; TQ2_0's stored 3 is +2) and Q1_0 (128 codes, -1 or +1), with the byte
 * offset of the block's binary16 d in *d_offset; false for another type. */
bool nf_ggml_block_codes(int ggml_type, const uint8_t *block, int8_t *q, unsigned *d_offset);

/* A binary16 scale field of a gguf_* block that is NaN or infinite (ggml_validate.c; ggml's
 * ggml_validate_row_data refuses such a block). */
typedef struct nf_ggml_bad_scale {
    uint64_t block;    /* index of the block among those scanned */
    const char *field; /* "d" or "dmin" */
    unsigned offset;   /* byte offset of the field in the block (IQ1_M: 48, its first scale word) */
    uint16_t word;     /* the binary16 pattern (IQ1_M: gathered from the four nibbles) */
} nf_ggml_bad_scale;

/* The first block of blocks[from, n) (consecutive blocks of fmt) with a non-finite scale
 * field: true and *bad filled, or false when there is none (or fmt is not gguf_*). */
bool nf_ggml_find_nonfinite_scale(const nf_format *fmt, const uint8_t *blocks, uint64_t from, uint64_t n,
                                  nf_ggml_bad_scale *bad);
/* ggml's name of a gguf_* format's block type ("Q4_K"); "?" for another format. */
const char *nf_ggml_block_name(const nf_format *fmt);
/* "NaN", "+infinity", "-infinity" for a non-finite binary16 pattern, NULL otherwise. */
const char *nf_ggml_f16_nonfinite_name(uint16_t h);
/* The grid of 4-value points of IQ3_XXS (NF_FMT_GGUF_IQ3_XXS, 256 entries) or IQ3_S
 * (NF_FMT_GGUF_IQ3_S, 512 entries) that the dequantizers read (value j of an entry is its byte
 * j, docs/formats.md 8.3), with its entry count in *n; NULL for any other format.  The encoders
 * of method/ggml_grid3.c build their index from it, so the grids exist once. */
const uint32_t *nf_ggml_grid4_of(nf_format_id id, unsigned *n);
/* Test hook: when false, nf_ggml_find_nonfinite_scale skips its branch-free prescan of runs of
 * blocks and examines every block the exact way.  Default true; tests compare the two. */
extern bool nf_ggml_scan_fast;

/* ggml's grids of 8-value points, as the spec's tables list them (ggml_tables.c, docs/formats.md
 * 8.3): the points the i-quant encoders search (method/ggml_grid.h).  IQ1_S and IQ1_M share one. */
typedef enum nf_ggml_grid8 {
    NF_GGML_GRID8_IQ2XXS, /* 256 points, bytes 0x08 0x19 0x2b */
    NF_GGML_GRID8_IQ2XS,  /* 512 points, the same bytes */
    NF_GGML_GRID8_IQ2S,   /* 1024 points, the same bytes */
    NF_GGML_GRID8_IQ1S,   /* 2048 points, signed bytes -1 0 +1 */
    NF_GGML_GRID8_COUNT
} nf_ggml_grid8;

/* The entries of grid g (value j of an entry: (entry >> 8j) & 0xFF) and their number in *size;
 * NULL (and *size 0) for a g out of range. */
const uint64_t *nf_ggml_grid8_points(nf_ggml_grid8 g, unsigned *size);

/* ---------------------------------------------------------------- shared by the dequantizers */
/* The binary16 field at p (little-endian), expanded exactly (spec 2.3). */
static inline float nf_ggml_half_at(const uint8_t *p) { return nf_f16_to_f32((uint16_t)(p[0] | (unsigned)p[1] << 8)); }

/* The "K4" packing of Q4_K/Q5_K: sub-block i's unsigned 6-bit scale and min among 12 bytes. */
static inline void nf_ggml_k4_scale_min(const uint8_t *s, unsigned i, unsigned *sc, unsigned *m)
{
    if (i < 4) {
        *sc = s[i] & 63u;
        *m = s[i + 4] & 63u;
    } else {
        *sc = (s[i + 4] & 0xFu) | (((unsigned)s[i - 4] >> 6) << 4);
        *m = ((unsigned)s[i + 4] >> 4) | (((unsigned)s[i] >> 6) << 4);
    }
}

/* The kernels table of the block dequantizers (common/cpu.h: one dispatch structure): the
 * k-quants, which have vector versions; the other block types have only their scalar function
 * (ggml_dequant.c).  The scalar instance holds ggml_dequant.c's dequantizers, the AVX2 and
 * AVX-512 ones (simd/ggml_kquant_simd.c) are bit-identical to them. */
typedef void (*nf_ggml_block_fn)(const uint8_t *block, float *out);
typedef struct nf_ggml_kernels {
    const char *name;
    nf_ggml_block_fn q2_k, q3_k, q4_k, q5_k, q6_k;
} nf_ggml_kernels;

extern const nf_ggml_kernels nf_ggml_kernels_scalar;
#if NF_X86_KERNELS
extern const nf_ggml_kernels nf_ggml_kernels_avx2;
extern const nf_ggml_kernels nf_ggml_kernels_avx512;
#endif
#if NF_ARM_KERNELS
extern const nf_ggml_kernels nf_ggml_kernels_neon;
#endif

/* The kernels of a level and of the active one (common/cpu.h); never NULL. */
const nf_ggml_kernels *nf_ggml_kernels_for(nf_simd_level level);
const nf_ggml_kernels *nf_ggml_kernels_active(void);

#endif
