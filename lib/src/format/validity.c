/* Word-level validity of the quantized formats (docs/formats.md 5.4, 6.2, 7.2
 * and 9).  Every predicate is total: a NULL or wrong-category format
 * makes a word invalid rather than crashing, since formats come from untrusted artifacts. */
#include <ninfer/format.h>

#define F16_EXP_MASK 0x7C00u
#define BF16_EXP_MASK 0x7F80u
#define HALF_SIGN 0x8000u

static bool is_grouped(const nf_format *fmt) { return fmt && fmt->category == NF_CAT_GROUPED; }

static bool f16_finite(uint16_t w) { return (w & F16_EXP_MASK) != F16_EXP_MASK; }

bool nf_grouped_code_valid(const nf_format *fmt, int q)
{
    return is_grouped(fmt) && q >= fmt->code_min && q <= fmt->code_max;
}

bool nf_grouped_scale_valid(const nf_format *fmt, uint16_t scale)
{
    if (!is_grouped(fmt) || !f16_finite(scale)) return false;
    /* Q2 keeps imported GSQ scales as they are, -0 included; everyone else refuses -0 so that
     * "zero scale" has exactly one spelling whose code rule can be checked. */
    if (fmt->id == NF_FMT_Q2_G64_FP16) return true;
    return scale != HALF_SIGN;
}

bool nf_grouped_scale_requires_zero_codes(const nf_format *fmt, uint16_t scale)
{
    if (!is_grouped(fmt) || fmt->id == NF_FMT_Q2_G64_FP16) return false;
    return scale == 0x0000u;
}

bool nf_nvfp4_scale_valid(uint8_t scale) { return (scale & 0x80u) == 0 && scale != 0x7Fu; }

bool nf_nvfp4_divisor_valid(uint32_t bits)
{
    /* Sign clear, not +0, and an exponent below all-ones: finite and strictly positive
     * (positive subnormals included). */
    return (bits & 0x80000000u) == 0 && bits != 0 && (bits & 0x7F800000u) != 0x7F800000u;
}

bool nf_fp8_code_valid(uint8_t code) { return (code & 0x7Fu) != 0x7Fu; }

bool nf_fp8_row_scale_valid(const nf_format *fmt, uint16_t scale)
{
    if (!fmt || fmt->category != NF_CAT_FP8_ROW || (scale & HALF_SIGN)) return false;
    switch (fmt->scale_type) {
    case NF_SCALE_BF16: return (scale & BF16_EXP_MASK) != BF16_EXP_MASK;
    case NF_SCALE_FP16: return f16_finite(scale);
    case NF_SCALE_NONE:
    case NF_SCALE_E4M3FN:
    case NF_SCALE_GGML: break;
    }
    return false;
}

bool nf_fp8_row_scale_is_zero(uint16_t scale) { return scale == 0x0000u; }

bool nf_fp8_code_is_zero(uint8_t code) { return (code & 0x7Fu) == 0; }
