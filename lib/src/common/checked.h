/* Checked U64 arithmetic: every size and offset computed from untrusted input goes through
 * these, so an overflow becomes an error instead of a wrapped value. */
#ifndef NINFER_COMMON_CHECKED_H
#define NINFER_COMMON_CHECKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Each returns false on overflow (and leaves *out unspecified). */
static inline bool nf_add_u64(uint64_t a, uint64_t b, uint64_t *out) { return !__builtin_add_overflow(a, b, out); }

static inline bool nf_mul_u64(uint64_t a, uint64_t b, uint64_t *out) { return !__builtin_mul_overflow(a, b, out); }

/* align_up(x, a) for a power of two or any positive a; false on overflow or a == 0. */
static inline bool nf_align_up_u64(uint64_t x, uint64_t a, uint64_t *out)
{
    if (a == 0) return false;
    uint64_t rem = x % a;
    if (rem == 0) {
        *out = x;
        return true;
    }
    return nf_add_u64(x, a - rem, out);
}

static inline uint64_t nf_ceil_div_u64(uint64_t x, uint64_t d) { return x / d + (x % d != 0); }

/* U64 -> size_t, false when it does not fit (32-bit hosts). */
static inline bool nf_u64_to_size(uint64_t v, size_t *out)
{
    if (v > (uint64_t)SIZE_MAX) return false;
    *out = (size_t)v;
    return true;
}

#endif
