/* Exact scalar codecs between the stored word formats and binary32.
 *
 * Everything is integer bit manipulation on the binary32 encoding: the result must not depend on
 * the compiler's _Float16 support, the FPU rounding mode, flush-to-zero, or x87 excess precision,
 * and a NaN must come out with exactly the bits the contract names. */
#include <string.h>

#include <ninfer/format.h>

#define F32_SIGN 0x80000000u
#define F32_EXP_MASK 0x7F800000u
#define F32_FRAC_MASK 0x007FFFFFu
#define F32_QUIET 0x00400000u
#define F32_IMPLICIT 0x00800000u

float nf_f32_from_bits(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

uint32_t nf_f32_bits(float value)
{
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

/* Rounds (value >> shift) to nearest, ties to even, where shift is 1..31.  Used for every
 * narrowing below so there is exactly one rounding rule in this file. */
static uint32_t shift_right_rne(uint32_t value, unsigned shift)
{
    uint32_t kept = value >> shift;
    uint32_t rest = value & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (kept & 1u))) kept++;
    return kept;
}

/* Binary32 word of m * 2^exp for a nonzero m < 2^24 whose value lies in binary32's normal range;
 * exact, since m has at most 24 significant bits. */
static uint32_t f32_bits_of_small(uint32_t m, int exp)
{
    int top = 0; /* index of m's leading bit */
    while ((m >> (top + 1)) != 0) top++;
    uint32_t frac = (m << (23 - top)) & F32_FRAC_MASK;
    return (uint32_t)(exp + top + 127) << 23 | frac;
}

/* ---------------------------------------------------------------- binary16 */

float nf_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t frac = h & 0x3FFu;
    if (exp == 0x1F) /* infinity, or NaN with its 10-bit payload (quiet bit included) on top */
        return nf_f32_from_bits(sign | F32_EXP_MASK | frac << 13);
    if (exp == 0) {
        if (frac == 0) return nf_f32_from_bits(sign);
        return nf_f32_from_bits(sign | f32_bits_of_small(frac, -24));
    }
    return nf_f32_from_bits(sign | (exp + 112u) << 23 | frac << 13);
}

uint16_t nf_f32_to_f16(float f)
{
    uint32_t bits = nf_f32_bits(f);
    uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
    uint32_t mag = bits & ~F32_SIGN;
    if (mag > F32_EXP_MASK) /* NaN: forcing the quiet bit keeps a payload that truncates to
                               zero from turning into infinity */
        return (uint16_t)(sign | 0x7E00u | ((mag >> 13) & 0x3FFu));
    /* 65520 is the midpoint between 65504 (odd significand) and 2^16: ties and above overflow. */
    if (mag >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u);
    uint32_t exp = mag >> 23;
    if (exp >= 113) { /* binary16 normal range, |f| >= 2^-14 */
        /* Rebias, then round away 13 fraction bits; a carry out of the fraction bumps the
         * exponent, which is the correctly rounded word (up to 0x7BFF below 65520). */
        uint32_t rebiased = (exp - 112u) << 23 | (mag & F32_FRAC_MASK);
        return (uint16_t)(sign | shift_right_rne(rebiased, 13));
    }
    /* Subnormal result in units of 2^-24: the significand m * 2^(exp-150) becomes
     * m >> (126 - exp).  Below exp 102 even a full significand is under half a unit. */
    if (exp < 102) return sign;
    uint32_t m = (mag & F32_FRAC_MASK) | F32_IMPLICIT;
    return (uint16_t)(sign | shift_right_rne(m, 126u - exp));
}

/* ---------------------------------------------------------------- bfloat16 */

float nf_bf16_to_f32(uint16_t b) { return nf_f32_from_bits((uint32_t)b << 16); }

uint16_t nf_f32_to_bf16(float f)
{
    uint32_t bits = nf_f32_bits(f);
    if ((bits & ~F32_SIGN) > F32_EXP_MASK) /* NaN: keep sign and top payload, force quiet */
        return (uint16_t)((bits | F32_QUIET) >> 16);
    /* Rounding the whole word lets a carry run into the exponent: the largest finite values
     * round up to the infinity word, as RNE requires. */
    return (uint16_t)shift_right_rne(bits, 16);
}

/* ---------------------------------------------------------------- E4M3FN */

float nf_e4m3fn_to_f32(uint8_t w)
{
    uint32_t sign = (uint32_t)(w & 0x80u) << 24;
    uint32_t exp = (w >> 3) & 0xFu;
    uint32_t frac = w & 7u;
    if (exp == 15 && frac == 7) return nf_f32_from_bits(sign | 0x7FC00000u);
    if (exp == 0) {
        if (frac == 0) return nf_f32_from_bits(sign);
        return nf_f32_from_bits(sign | f32_bits_of_small(frac, -9));
    }
    return nf_f32_from_bits(sign | (exp + 120u) << 23 | frac << 20);
}

uint8_t nf_f32_to_e4m3fn(float f)
{
    uint32_t bits = nf_f32_bits(f);
    uint8_t sign = (uint8_t)((bits >> 24) & 0x80u);
    uint32_t mag = bits & ~F32_SIGN;
    if (mag > F32_EXP_MASK) return (uint8_t)(sign | 0x7Fu);
    /* Clamp first: every magnitude >= 448 (infinity included) is the largest finite word. */
    if (mag >= 0x43E00000u) return (uint8_t)(sign | 0x7Eu);
    uint32_t exp = mag >> 23;
    if (exp >= 121) { /* E4M3 normal range, |f| >= 2^-6 */
        /* Below 448 a round-up reaches at most 0x7E, never the NaN word 0x7F. */
        uint32_t rebiased = (exp - 120u) << 23 | (mag & F32_FRAC_MASK);
        return (uint8_t)(sign | shift_right_rne(rebiased, 20));
    }
    /* Subnormal codes are multiples of 2^-9, and code 8 (2^-6) continues the same grid, so the
     * code is round(|f| * 2^9): the significand m * 2^(exp-150) becomes m >> (141 - exp). */
    if (exp < 117) return sign; /* under 2^-10, half of the smallest step */
    uint32_t m = (mag & F32_FRAC_MASK) | F32_IMPLICIT;
    return (uint8_t)(sign | shift_right_rne(m, 141u - exp));
}

/* ---------------------------------------------------------------- E2M1 */

float nf_e2m1_to_f32(uint8_t w)
{
    uint32_t sign = (uint32_t)(w & 0x8u) << 28;
    uint32_t exp = (w >> 1) & 3u;
    uint32_t frac = w & 1u;
    if (exp == 0) /* 0 or the single subnormal 0.5 */
        return nf_f32_from_bits(sign | (frac ? 0x3F000000u : 0u));
    return nf_f32_from_bits(sign | (exp + 126u) << 23 | frac << 22);
}
