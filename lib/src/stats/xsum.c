/* Exact sums of nonnegative binary64 values (stats.h): a fixed-point integer in units of
 * 2^-1074.  A finite double is m * 2^(p - 1074) with an integer m < 2^53 and p >= 0, so adding
 * it is adding m shifted left by p bits: no rounding ever happens, and any order of additions
 * and merges gives the same integer.  Only nf_xsum_value rounds, once. */
#include <math.h>
#include <string.h>

#include "stats/stats.h"

void nf_xsum_init(nf_xsum *s) { memset(s, 0, sizeof *s); }

/* w[i..] += v, carrying upwards (a carry out of the top word cannot happen within 2^142
 * additions of doubles, see NF_XSUM_WORDS). */
static void add_at(nf_xsum *s, unsigned i, uint64_t v)
{
    while (v && i < NF_XSUM_WORDS) {
        uint64_t old = s->w[i];
        s->w[i] = old + v;
        v = s->w[i] < old; /* the carry */
        i++;
    }
}

void nf_xsum_add(nf_xsum *s, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    bits &= 0x7FFFFFFFFFFFFFFFull; /* -0 is +0; callers add nothing negative */
    unsigned e = (unsigned)(bits >> 52);
    if (e == 0x7FF) {
        s->inf = true;
        return;
    }
    uint64_t m = bits & 0x000FFFFFFFFFFFFFull;
    unsigned p = 0; /* v = m * 2^(p - 1074) */
    if (e) {
        m |= 0x0010000000000000ull;
        p = e - 1;
    }
    if (!m) return;
    unsigned word = p / 64, sh = p % 64;
    add_at(s, word, m << sh);
    if (sh) add_at(s, word + 1, m >> (64 - sh));
}

void nf_xsum_merge(nf_xsum *dst, const nf_xsum *src)
{
    uint64_t carry = 0;
    for (unsigned i = 0; i < NF_XSUM_WORDS; i++) {
        uint64_t a = dst->w[i], b = src->w[i];
        uint64_t t = a + b;
        uint64_t c1 = t < a;
        uint64_t u = t + carry;
        uint64_t c2 = u < t;
        dst->w[i] = u;
        carry = c1 | c2;
    }
    dst->inf = dst->inf || src->inf;
}

/* Bits [q, q + 64) of the integer (bits below 0 read as zero). */
static uint64_t bits_at(const nf_xsum *s, long q)
{
    if (q < 0) return bits_at(s, 0) << (unsigned)(-q);
    unsigned word = (unsigned)(q / 64), sh = (unsigned)(q % 64);
    uint64_t lo = word < NF_XSUM_WORDS ? s->w[word] : 0;
    uint64_t hi = word + 1 < NF_XSUM_WORDS ? s->w[word + 1] : 0;
    return sh ? lo >> sh | hi << (64 - sh) : lo;
}

/* Is any bit below q set? */
static bool any_below(const nf_xsum *s, long q)
{
    if (q <= 0) return false;
    unsigned word = (unsigned)(q / 64), sh = (unsigned)(q % 64);
    for (unsigned i = 0; i < word && i < NF_XSUM_WORDS; i++)
        if (s->w[i]) return true;
    return sh && word < NF_XSUM_WORDS && (s->w[word] & ((1ull << sh) - 1)) != 0;
}

double nf_xsum_value(const nf_xsum *s)
{
    if (s->inf) return INFINITY;
    int top = (int)NF_XSUM_WORDS - 1;
    while (top >= 0 && s->w[top] == 0) top--;
    if (top < 0) return 0.0;
    long msb = 64L * top + 63 - __builtin_clzll(s->w[top]); /* the highest set bit */
    if (msb < 53) return ldexp((double)s->w[0], -1074);     /* below 2^53 units: exact */
    /* the 53 bits from msb down, the rest rounded to nearest, ties to even */
    uint64_t top64 = bits_at(s, msb - 63);
    uint64_t m = top64 >> 11, rest = top64 & 0x7FFu;
    bool sticky = any_below(s, msb - 63);
    if (rest > 0x400u || (rest == 0x400u && (sticky || (m & 1u)))) m++;
    /* m <= 2^53, an exact double; the scaling is exact too (or overflows to +inf, as rounding
     * to nearest does beyond the largest double) */
    return ldexp((double)m, (int)(msb - 52 - 1074));
}
