/* A scale word as binary32, and what makes it no scale (nf_dialect_scale_value,
 * dialect_internal.h): below both value readers (qweight_values.c, qweight_packed.c), which
 * check every scale they read with it (docs/dialects.md "Bad input"). */
#include <stdbool.h>
#include <string.h>

#include <ninfer/format.h>

#include "dialect/dialect_internal.h"

static float f32_of(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* The bit fields of a scale word: its sign, its exponent (all ones: not finite, except for
 * E4M3FN, whose only such words are NaN) and its mantissa. */
typedef struct scale_bits {
    uint32_t sign, exponent, mantissa;
    bool has_infinity;
} scale_bits;

/* (dialect_internal.h) */
const char *nf_dialect_scale_value(nf_st_dtype dtype, uint32_t w, float *out)
{
    static const scale_bits f32 = {0x80000000u, 0x7F800000u, 0x007FFFFFu, true},
                            bf16 = {0x8000u, 0x7F80u, 0x007Fu, true}, f16 = {0x8000u, 0x7C00u, 0x03FFu, true},
                            e4m3 = {0x80u, 0x7Fu, 0u, false}; /* E4M3FN: 0x7F / 0xFF are its NaNs */
    if (dtype == NF_ST_U8 || dtype == NF_ST_F8_E8M0) {        /* E8M0 (MXFP4): 2^(w - 127), 255 its NaN */
        const uint32_t e = w & 0xFF; /* binary32 bits of 2^(e - 127): exponent field e, or 2^-127's */
        *out = f32_of(e ? e << 23 : 0x00400000u);
        return (w & 0xFF) == 0xFF ? "NaN (E8M0 0xFF)" : NULL;
    }
    const scale_bits *b = dtype == NF_ST_F32 ? &f32 : dtype == NF_ST_BF16 ? &bf16 : dtype == NF_ST_F16 ? &f16 : &e4m3;
    *out = dtype == NF_ST_F32    ? f32_of(w)
           : dtype == NF_ST_BF16 ? nf_bf16_to_f32((uint16_t)w)
           : dtype == NF_ST_F16  ? nf_f16_to_f32((uint16_t)w)
                                 : nf_e4m3fn_to_f32((uint8_t)w);
    if ((w & b->exponent) == b->exponent) return b->has_infinity && !(w & b->mantissa) ? "infinite" : "NaN";
    if ((w & (b->exponent | b->mantissa)) == 0) return w & b->sign ? "-0" : "zero";
    if (w & b->sign) return "negative";
    return NULL;
}
