/* cast_direct (docs/methods.md): one direct word per source element.
 *
 * Upstream does `values.to(dtype)` in torch, so its conversions are torch's: FP32 -> BF16 rounds
 * to nearest even and turns every NaN into the canonical 0x7FC0; widening to FP32 is exact;
 * float -> int32 truncates toward zero; int32 refuses values outside [-2^31, 2^31 - 1].  A
 * source of the target's own type is copied word for word (docs/formats.md 4: "persistence
 * from the same source type is bitwise identity"), NaN payloads included.
 *
 * One departure from torch (docs/security.md 7.1, F4, docs/methods.md): a finite source value whose nearest
 * bfloat16 is an infinity (|x| at or above 0x7F7F8000, the midpoint past the largest finite
 * bf16) is refused, naming tensor, row and column, like a scale that overflows binary16 in the
 * grouped methods; torch would store +-inf silently and the artifact would still verify.  An
 * infinity or NaN of the source is not an overflow: it is stored as such (and the conversion
 * report counts it under values_not_compared).  There is no recipe parameter to allow the
 * overflow: a model that needs +-inf for FLT_MAX is better stored as fp32. */
#include <inttypes.h>

#include "method/common.h"
#include "method/method_impl.h"

#define BF16_CANONICAL_NAN 0x7FC0u

static bool is_float_type(nf_src_type t) { return t == NF_SRC_F32 || t == NF_SRC_F16 || t == NF_SRC_BF16; }

/* Raw binary32 word of a floating source element, exact (F16 NaN payloads move up). */
static uint32_t float_word(nf_src_type t, const uint8_t *p)
{
    switch (t) {
    case NF_SRC_F32: return nf_method_le32(p);
    case NF_SRC_BF16: return (uint32_t)nf_method_le16(p) << 16;
    default: return nf_f32_bits(nf_f16_to_f32(nf_method_le16(p)));
    }
}

static nf_status to_bf16(const nf_src_rows *src, size_t k, nf_words *out, nf_error *err)
{
    const uint8_t *base = src->data;
    size_t esize = nf_src_type_size(src->type);
    for (uint64_t r = 0; r < src->rows; r++) {
        const uint8_t *row = base + (size_t)r * k * esize;
        uint16_t *dst = out->w16 + (size_t)r * k;
        if (src->type == NF_SRC_BF16) {
            for (size_t c = 0; c < k; c++) dst[c] = nf_method_le16(row + 2 * c);
            continue;
        }
        for (size_t c = 0; c < k; c++) {
            uint32_t bits = float_word(src->type, row + c * esize), mag = bits & 0x7FFFFFFFu;
            if (mag > 0x7F800000u) {
                dst[c] = BF16_CANONICAL_NAN;
            } else if (mag >= 0x7F7F8000u && mag < 0x7F800000u) {
                /* only F32 sources come this far: F16 widens to at most 65504 */
                return nf_method_row_error(err, NF_ERR_INVALID, src, r,
                                           " col %zu: source value %.9g overflows bfloat16 (it rounds to %sinfinity; "
                                           "the largest finite bfloat16 is 3.38953139e+38)",
                                           nf_method_col(src, c), (double)nf_f32_from_bits(bits),
                                           bits >> 31 ? "-" : "+");
            } else {
                dst[c] = nf_f32_to_bf16(nf_f32_from_bits(bits));
            }
        }
    }
    return NF_OK;
}

static nf_status to_fp32(const nf_src_rows *src, size_t k, nf_words *out)
{
    const uint8_t *base = src->data;
    size_t esize = nf_src_type_size(src->type);
    for (uint64_t r = 0; r < src->rows; r++) {
        const uint8_t *row = base + (size_t)r * k * esize;
        uint32_t *dst = out->w32 + (size_t)r * k;
        for (size_t c = 0; c < k; c++) dst[c] = float_word(src->type, row + c * esize);
    }
    return NF_OK;
}

/* One integer element as a wide signed value; *above is set for U64 values beyond INT64_MAX
 * (out of int32 range in any case).  BOOL bytes other than 0 and 1 give *bad. */
static int64_t int_value(nf_src_type t, const uint8_t *p, bool *above, bool *bad)
{
    *above = false;
    *bad = false;
    switch (t) {
    /* Two's complement decoded arithmetically: no implementation-defined narrowing casts. */
    case NF_SRC_I8: return (int64_t)(p[0] ^ 0x80u) - 0x80;
    case NF_SRC_I16: return (int64_t)(nf_method_le16(p) ^ 0x8000u) - 0x8000;
    case NF_SRC_I32: return (int64_t)(nf_method_le32(p) ^ 0x80000000u) - 0x80000000ll;
    case NF_SRC_I64: {
        uint64_t u = nf_method_le64(p);
        return u >> 63 ? -(int64_t)~u - 1 : (int64_t)u;
    }
    case NF_SRC_U8: return p[0];
    case NF_SRC_U16: return nf_method_le16(p);
    case NF_SRC_U32: return nf_method_le32(p);
    case NF_SRC_U64: {
        uint64_t u = nf_method_le64(p);
        if (u > (uint64_t)INT64_MAX) {
            *above = true;
            return INT64_MAX;
        }
        return (int64_t)u;
    }
    case NF_SRC_BOOL: *bad = p[0] > 1; return p[0];
    default: return 0;
    }
}

static nf_status to_int32(const nf_src_rows *src, size_t k, nf_words *out, nf_error *err)
{
    const uint8_t *base = src->data;
    size_t esize = nf_src_type_size(src->type);
    bool flt = is_float_type(src->type);
    for (uint64_t r = 0; r < src->rows; r++) {
        const uint8_t *row = base + (size_t)r * k * esize;
        uint32_t *dst = out->w32 + (size_t)r * k;
        for (size_t c = 0; c < k; c++) {
            const uint8_t *p = row + c * esize;
            int64_t v;
            if (flt) {
                float f = nf_f32_from_bits(float_word(src->type, p));
                if (!isfinite(f))
                    return nf_method_row_error(err, NF_ERR_INVALID, src, r,
                                               " col %zu: source value %s cannot become int32", nf_method_col(src, c),
                                               nf_method_nonfinite_name(f));
                /* Truncation toward zero is exact in binary64; the range test is done there,
                 * before any conversion to an integer type could overflow. */
                double t = trunc((double)f);
                if (t < -2147483648.0 || t > 2147483647.0)
                    return nf_method_row_error(err, NF_ERR_INVALID, src, r,
                                               " col %zu: source value %.9g is outside the int32 range",
                                               nf_method_col(src, c), (double)f);
                v = (int64_t)t;
            } else {
                bool above, bad;
                v = int_value(src->type, p, &above, &bad);
                if (bad)
                    return nf_method_row_error(err, NF_ERR_INVALID, src, r,
                                               " col %zu: BOOL byte 0x%02x is neither 0 nor 1", nf_method_col(src, c),
                                               p[0]);
                if (above || v < INT32_MIN || v > INT32_MAX) {
                    if (src->type == NF_SRC_U64)
                        return nf_method_row_error(err, NF_ERR_INVALID, src, r,
                                                   " col %zu: source value %" PRIu64 " is outside the int32 range",
                                                   nf_method_col(src, c), nf_method_le64(p));
                    return nf_method_row_error(err, NF_ERR_INVALID, src, r,
                                               " col %zu: source value %" PRId64 " is outside the int32 range",
                                               nf_method_col(src, c), v);
                }
            }
            /* Two's complement word of v (docs/formats.md 4: u = v mod 2^32). */
            dst[c] = (uint32_t)(int32_t)v;
        }
    }
    return NF_OK;
}

nf_status nf_cast_direct_rows(const nf_format *fmt, const nf_src_rows *src, nf_words *out, nf_error *err)
{
    NF_TRY(nf_method_check_target(NF_METHOD_CAST_DIRECT, fmt, err));
    size_t k;
    NF_TRY(nf_method_check_rows(src, out, &k, err));
    bool w16 = fmt->id == NF_FMT_BF16;
    if (w16 ? !out->w16 : !out->w32)
        return nf_method_error(err, NF_ERR_USAGE, src, "output words lack the %s array of %s", w16 ? "w16" : "w32",
                               fmt->name);
    if (fmt->id == NF_FMT_INT32) return to_int32(src, k, out, err);
    if (!is_float_type(src->type))
        return nf_method_error(err, NF_ERR_INVALID, src,
                               "cast_direct does not convert an integer source (%s) to %s; use int32",
                               nf_src_type_name(src->type), fmt->name);
    if (fmt->id == NF_FMT_BF16) return to_bf16(src, k, out, err);
    return to_fp32(src, k, out);
}
