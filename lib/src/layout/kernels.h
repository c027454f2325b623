/* Bulk kernels of the layout module (internal): stored bytes -> logical words (decode),
 * logical words -> binary32 values (nf_words_to_f32), and the encode side of grouped words: the
 * word-level legality scans of nf_words_check and the row_split packer.
 *
 * Three variants with one contract: the portable scalar kernels (kernels_scalar.c) and the
 * AVX2 + F16C and AVX-512 F/BW/VL ones (simd/), chosen at run time from the active SIMD level of
 * common/cpu.h.  Every variant gives the words and value bits of the per-element reference
 * functions of <ninfer/format.h> (nf_grouped_value, nf_fp8_row_value, nf_nvfp4_value,
 * nf_bf16_to_f32, nf_int32_value): the values are the same single IEEE binary32 operations on
 * the same exact operands, only done many at a time (no FMA: -ffp-contract=off, and the SIMD
 * kernels use separate multiply/divide instructions).  tests/unit/test_layout_simd.c checks each
 * variant bit for bit against those references.  On the encode side every variant gives the
 * scalar packer's bytes and the scans' verdicts, which tests/unit/test_layout_pack_simd.c checks
 * byte for byte against the scalar kernels and a packer written from docs/layouts.md 4.3-4.5. */
#ifndef NINFER_LAYOUT_KERNELS_H
#define NINFER_LAYOUT_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <ninfer/format.h>

#include "common/cpu.h"
#include "common/simd_target.h"
#include "layout/layout_impl.h"

/* The nvfp4 value table: entry [s * 16 + c] = (e2m1(c) * e4m3fn(s)) / divisor, for every scale
 * word s (0..255) and code c (0..15), computed exactly as nf_nvfp4_value does. */
#define NF_NVFP4_TABLE_SIZE 4096u

/* The word rules of a grouped format (docs/formats.md 5.4; format/validity.c) in the form the scan
 * kernels take them (nf_grouped_rules_for): a code q is legal when code_min <= q <= code_max; a
 * binary16 scale word is valid when it is finite (exponent field not all ones) and is not -0
 * unless neg_zero_ok (Q2 keeps imported -0 scales); a +0 scale requires every code of its group
 * to be 0 when zero_scale_zero_codes (all but Q2).  tests/unit/test_layout_pack_simd.c checks
 * this reading against nf_grouped_scale_valid / nf_grouped_scale_requires_zero_codes for every
 * scale word of every grouped format. */
typedef struct nf_grouped_rules {
    int code_min, code_max;
    bool neg_zero_ok;
    bool zero_scale_zero_codes;
} nf_grouped_rules;

/* Bits of the grouped_scales kernel's answer. */
#define NF_SCALES_INVALID 1u   /* some word is not a valid scale */
#define NF_SCALES_ZERO_RULE 2u /* some word is a scale whose group must hold zero codes */

typedef struct nf_layout_kernels {
    const char *name;
    /* out[i] = nf_bf16_to_f32(w[i]) */
    void (*bf16_f32)(const uint16_t *w, size_t n, float *out);
    /* out[i] = nf_int32_value(w[i]) */
    void (*int32_f32)(const uint32_t *w, size_t n, float *out);
    /* One row of a grouped tensor: out[c] = nf_grouped_value(scales[c / gs], codes[c]), c < k. */
    void (*grouped_row)(const int8_t *codes, const uint16_t *scales, size_t k, unsigned gs, float *out);
    /* One FP8 row: out[c] = e4m3fn(codes[c]) * s32, c < k (the operand order of nf_fp8_row_value). */
    void (*fp8_row)(const uint8_t *codes, size_t k, float s32, float *out);
    /* Fill the nvfp4 value table for one divisor word. */
    void (*nvfp4_table)(uint32_t divisor_bits, float *table);
    /* One nvfp4 row (k a multiple of 16): out[c] = table[scales[c / 16] * 16 + codes[c]]; codes are
     * 0..15 (decoded words). */
    void (*nvfp4_row)(const uint8_t *codes, const uint8_t *scales, size_t k, const float *table, float *out);
    /* Unpack the first k codes of one row_split row (base bytes and, for Q5/Q6, high bytes of the
     * row, lane-major across the row's groups) to signed logical codes. */
    void (*rs_unpack_row)(const nf_rs_params *p, const uint8_t *base, const uint8_t *high, size_t k, int8_t *codes);
    /* nvfp4 code plane: out[2j] = in[j] & 15, out[2j+1] = in[j] >> 4, j < nbytes. */
    void (*nibbles)(const uint8_t *in, size_t nbytes, uint8_t *out);
    /* One row_split row straight from its stored bytes to values (nf_layout_decode_rows_f32):
     * out[c] = nf_grouped_value(scale c / G, code c), c < k, from the row's base and high bytes
     * and its little-endian binary16 scale words.  Returns false, having written nothing, for the
     * formats it does not handle (the scalar entry: every format); those are done by nf_rs_row_f32,
     * which unpacks blocks of the row into an L1-resident buffer with rs_unpack_row and converts
     * them with grouped_row. */
    bool (*rs_row_f32)(const nf_rs_params *p, const uint8_t *base, const uint8_t *high, const uint8_t *scales_le,
                       size_t k, float *out);

    /* ---- encode side (grouped words) */
    /* Do all n codes lie in [lo, hi] (-128 <= lo <= hi <= 127)?  The code rule of nf_words_check. */
    bool (*codes_within)(const int8_t *codes, size_t n, int lo, int hi);
    /* The n scale words against r: NF_SCALES_INVALID when some word is not a valid scale, plus
     * NF_SCALES_ZERO_RULE when some word requires zero codes in its group; 0 when neither. */
    unsigned (*grouped_scales)(const nf_grouped_rules *r, const uint16_t *scales, size_t n);
    /* Pack one row_split row (docs/layouts.md 4.3-4.5): codes [0, k) and lanes - k padding lanes of
     * code 0 (lanes a multiple of 128, >= k: the row's physical lanes, padding groups included)
     * into the row's base bytes (lanes * b' / 8, b' = 2, 4 or 8 stored bits per lane) and, for
     * Q5/Q6, its high bytes (lanes * (b - 4) / 8; the row's groups are contiguous in both planes,
     * so lane c of the row is at base bit c * b' and high bit c * (b - 4)).  The range check is
     * fused with the packing: false when some code lies outside [lo, hi], and the bytes written
     * are then unspecified.  [lo, hi] must hold 0 and lie inside the stored width's range (Q2:
     * -1..2; others -2^(b-1)..2^(b-1)-1), so every accepted code has its stored word.  Reads
     * exactly codes [0, k), writes exactly the row's bytes of both planes. */
    bool (*rs_pack_row)(const nf_rs_params *p, const int8_t *codes, size_t k, size_t lanes, int lo, int hi,
                        uint8_t *base, uint8_t *high);
} nf_layout_kernels;

/* The instances of the levels (common/cpu.h: one dispatch structure). */
extern const nf_layout_kernels nf_layout_kernels_scalar;
#if NF_X86_KERNELS
extern const nf_layout_kernels nf_layout_kernels_avx2;
extern const nf_layout_kernels nf_layout_kernels_avx512;
#endif
#if NF_ARM_KERNELS
extern const nf_layout_kernels nf_layout_kernels_neon;
#endif

/* The kernels of a level and of the active one (common/cpu.h); never NULL. */
const nf_layout_kernels *nf_layout_kernels_for(nf_simd_level level);
const nf_layout_kernels *nf_layout_kernels_active(void);

/* ---------------------------------------------------------------- row -> values, shared by
 * nf_words_to_f32 (words.c) and the fused nf_layout_decode_rows_f32 (the layouts' decode_f32) */

/* Columns of one block of a row converted at a time by the fused decoders: the codes of a block
 * (1 byte each) stay in L1 between unpacking and conversion.  A multiple of every group size
 * (32, 64, 128) and of the nvfp4 k-tile (64 columns). */
#define NF_FUSED_COLS 4096u

/* One row_split row to values (kern->rs_row_f32, or unpack + grouped_row block by block). */
void nf_rs_row_f32(const nf_layout_kernels *kern, const nf_rs_params *p, const uint8_t *base, const uint8_t *high,
                   const uint8_t *scales_le, size_t k, float *out);
/* One FP8 row to values: nf_fp8_row_value(f, codes[c], scale) for c < k. */
void nf_fp8_row_f32(const nf_layout_kernels *kern, const nf_format *f, const uint8_t *codes, size_t k, uint16_t scale,
                    float *out);
/* The nvfp4 value table of one divisor word, cached per thread (rebuilt when the divisor or the
 * kernel variant changes). */
const float *nf_nvfp4_table_cached(const nf_layout_kernels *kern, uint32_t divisor);

/* ---------------------------------------------------------------- grouped words, encode side:
 * shared by nf_words_check (words.c) and the row_split encoder */

/* The rules of grouped format f (nf_grouped_rules above). */
void nf_grouped_rules_for(const nf_format *f, nf_grouped_rules *r);
/* One row of k codes and lg scale words (groups of gs columns): are the scales valid and do the
 * groups under a zero-only scale hold only zero codes?  (The codes' range is not looked at.) */
bool nf_grouped_scales_clean(const nf_layout_kernels *kern, const nf_grouped_rules *r, const int8_t *codes,
                             const uint16_t *scales, uint64_t k, uint64_t lg, unsigned gs);
/* The exact, group-by-group check of one row (row = its index in the tensor, for messages): the
 * first problem with nf_words_check's message, NF_OK when there is none. */
nf_status nf_grouped_row_check_exact(const nf_format *f, const int8_t *codes, const uint16_t *scales, uint64_t k,
                                     uint64_t lg, uint64_t row, nf_error *err);

/* Scalar pieces shared by the SIMD variants (their tails and their non-vector parts). */
void nf_rs_unpack_scalar(const nf_rs_params *p, const uint8_t *base, const uint8_t *high, size_t c0, size_t c1,
                         int8_t *codes);
void nf_nvfp4_table_scalar(uint32_t divisor_bits, float *table);
bool nf_codes_within_scalar(const int8_t *codes, size_t n, int lo, int hi);
unsigned nf_grouped_scales_scalar(const nf_grouped_rules *r, const uint16_t *scales, size_t n);

#if NF_X86_KERNELS
/* The AVX2 code unpackers, shared by the AVX-512 variant. */
void nf_rs_unpack_row_avx2(const nf_rs_params *p, const uint8_t *base, const uint8_t *high, size_t k, int8_t *codes);
void nf_nibbles_avx2(const uint8_t *in, size_t nbytes, uint8_t *out);
#endif

/* E4M3FN word -> binary32 word (nf_e4m3fn_to_f32), all 256 words. */
extern const uint32_t nf_e4m3fn_bits[256];
/* E2M1 word -> binary32 word (nf_e2m1_to_f32), all 16 words. */
extern const uint32_t nf_e2m1_bits[16];

/* Are the host's words little-endian (stored words can then be used in place)? */
static inline bool nf_host_le(void)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return true;
#else
    return false;
#endif
}

static inline float nf_k_f32(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* dst[i] = binary32 of src[i], read so that the compiler cannot see the values: a table build
 * must do its multiplications and divisions on the hardware, as the reference does, not fold or
 * rewrite them from known constants (GCC turns x*(-c) into -(x*c), which flips a NaN's sign). */
static inline void nf_k_opaque_f32(const uint32_t *src, float *dst, unsigned n)
{
    const volatile uint32_t *v = src;
    for (unsigned i = 0; i < n; i++) dst[i] = nf_k_f32(v[i]);
}

/* A code bound of the encode-side kernels as an int8 (their contract keeps bounds inside
 * -128..127; this only makes the conversion explicit). */
static inline int8_t nf_k_clamp8(int v) { return (int8_t)(v < INT8_MIN ? INT8_MIN : v > INT8_MAX ? INT8_MAX : v); }

/* nf_f16_to_f32, with the normal range inline. */
static inline float nf_k_f16(uint16_t h)
{
    uint32_t e = (uint32_t)(h >> 10) & 0x1Fu;
    if (e - 1u < 30u) return nf_k_f32((uint32_t)(h & 0x8000u) << 16 | (((uint32_t)h & 0x7FFFu) + 0x1C000u) << 13);
    return nf_f16_to_f32(h);
}

#endif
