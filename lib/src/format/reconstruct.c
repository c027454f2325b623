/* Represented values of the quantized and integer formats as binary32: the conformance oracle
 * (docs/formats.md 5.3, 6.1, 7.1; docs/decisions.md D14-D16).
 *
 * The grouped, FP8 and NVFP4 equations are single binary32 operations whose operands are exact
 * decodes, so plain float arithmetic under IEEE round-to-nearest-even is the specification
 * itself; signed zeros come out of the IEEE sign rules (code 0 under a negative scale is -0). */
#include <ninfer/format.h>

#define F32_QUIET_NAN 0x7FC00000u

float nf_grouped_value(uint16_t scale, int q)
{
    /* Exact for every legal code: an 11-bit significand times |q| <= 127 fits in 24 bits, and
     * the product's range stays inside binary32's normal range. */
    return nf_f16_to_f32(scale) * (float)q;
}

float nf_fp8_row_value(const nf_format *fmt, uint8_t code, uint16_t scale)
{
    if (!fmt || fmt->category != NF_CAT_FP8_ROW) return nf_f32_from_bits(F32_QUIET_NAN);
    float s32;
    if (fmt->scale_type == NF_SCALE_BF16) s32 = nf_bf16_to_f32(scale);
    else if (fmt->scale_type == NF_SCALE_FP16) s32 = nf_f16_to_f32(scale);
    else return nf_f32_from_bits(F32_QUIET_NAN);
    /* Usually exact; a huge or tiny BF16 multiplier can overflow or lose bits in the subnormal
     * range, and then this one multiply is the single rounding the spec prescribes.  A NaN code
     * (0x7F/0xFF) gives its own NaN even when the scale word is a NaN too: written out, because
     * which of two NaN operands a multiply returns depends on the operand order the compiler
     * picks. */
    float c32 = nf_e4m3fn_to_f32(code);
    if ((code & 0x7Fu) == 0x7Fu) return c32;
    return c32 * s32;
}

float nf_nvfp4_value(uint8_t code, uint8_t scale, uint32_t divisor_bits)
{
    /* The product has at most 6 significant bits and lies in [2^-10, 2688]: exact.  Dividing
     * (not multiplying by a rounded 1/d) keeps the result to one rounding. */
    float product = nf_e2m1_to_f32(code) * nf_e4m3fn_to_f32(scale);
    return product / nf_f32_from_bits(divisor_bits);
}

float nf_int32_value(uint32_t word)
{
    /* Two's complement by the spec's definition (u - 2^32 for u >= 2^31) rather than a cast,
     * and the rounding done on integers so the result does not depend on the FPU mode. */
    uint32_t sign = word & 0x80000000u;
    uint32_t mag = sign ? 0u - word : word; /* |value|; INT32_MIN gives 2^31 */
    if (mag == 0) return nf_f32_from_bits(0);
#if defined(__GNUC__)
    int top = 31 - __builtin_clz(mag);
#else
    int top = 31;
    while (!(mag >> top)) top--;
#endif
    uint32_t sig; /* 24-bit significand, implicit bit included */
    int exp = top;
    if (top <= 23) {
        sig = mag << (23 - top);
    } else {
        unsigned drop = (unsigned)(top - 23);
        sig = mag >> drop;
        uint32_t rest = mag & ((1u << drop) - 1u);
        uint32_t half = 1u << (drop - 1u);
        if (rest > half || (rest == half && (sig & 1u))) sig++;
        if (sig == 0x01000000u) { /* rounded up to the next power of two */
            sig >>= 1;
            exp++;
        }
    }
    return nf_f32_from_bits(sign | (uint32_t)(exp + 127) << 23 | (sig & 0x007FFFFFu));
}
