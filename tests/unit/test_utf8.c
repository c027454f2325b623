/* The one UTF-8 decoder (common/utf8.h): each class of malformed sequence on its own (overlong
 * forms, surrogates, beyond U+10FFFF, cut short, stray bytes), every byte string of up to three
 * bytes and a large set of four against the definition (a sequence is valid exactly when it is
 * the encoding of a Unicode scalar value), and the three decoders it replaced -- nf_utf8_valid's
 * loop, nf_escape's and the programs' -- kept below as they were, agreeing on every one of them;
 * and the one encoder (nf_utf8_encode) on every value up to U+10FFFF and beyond. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "common/utf8.h"

/* ---------------------------------------------------------------- the definition */
/* The encoding of code point cp (RFC 3629, section 3), its length. */
static size_t encode(uint32_t cp, uint8_t o[4])
{
    if (cp < 0x80) {
        o[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (uint8_t)(0xC0 | (cp >> 6));
        o[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (uint8_t)(0xE0 | (cp >> 12));
        o[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (uint8_t)(0xF0 | (cp >> 18));
    o[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

static bool scalar_value(uint32_t cp) { return cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF); }

/* What the decoder must say of p[0..n): the length of the one scalar value whose encoding is a
 * prefix of it, else 0.  Found by trying the candidate value the bits spell, so an overlong form
 * (whose bits spell a value that encodes shorter) does not match. */
static size_t expected(const uint8_t *p, size_t n, uint32_t *cp)
{
    for (size_t len = 1; len <= 4 && len <= n; len++) {
        uint32_t v = len == 1 ? p[0] : (uint32_t)(p[0] & (0x7F >> len));
        for (size_t i = 1; i < len; i++) v = (v << 6) | (p[i] & 0x3Fu);
        uint8_t e[4];
        if (scalar_value(v) && encode(v, e) == len && memcmp(e, p, len) == 0) {
            *cp = v;
            return len;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- the replaced decoders */
/* nf_utf8_valid as it was (common/utf8.c): the value checked after the bytes. */
static bool old_valid(const uint8_t *s, size_t len, size_t *bad)
{
    size_t i = 0;
    while (i < len) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t n;
        uint32_t cp, min;
        if (c >= 0xC2 && c <= 0xDF) {
            n = 1;
            cp = c & 0x1Fu;
            min = 0x80;
        } else if (c >= 0xE0 && c <= 0xEF) {
            n = 2;
            cp = c & 0x0Fu;
            min = 0x800;
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 3;
            cp = c & 0x07u;
            min = 0x10000;
        } else {
            *bad = i;
            return false;
        }
        if (len - i - 1 < n) {
            *bad = i;
            return false;
        }
        for (size_t k = 1; k <= n; k++) {
            uint8_t t = s[i + k];
            if ((t & 0xC0) != 0x80) {
                *bad = i;
                return false;
            }
            cp = (cp << 6) | (t & 0x3Fu);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            *bad = i;
            return false;
        }
        i += n + 1;
    }
    return true;
}

/* nf_escape's utf8_seq and the programs' nf_cli_utf8_seq as they were (the same code, one with
 * the code point): the second byte's range decides overlong forms, surrogates and the top. */
static size_t old_seq(const uint8_t *p, size_t n, uint32_t *cp)
{
    uint8_t c = p[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t need;
    uint8_t lo = 0x80, hi = 0xBF;
    uint32_t v;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
        v = c & 0x1Fu;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        v = c & 0x0Fu;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        v = c & 0x07u;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return 0;
    }
    if (n <= need || p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 1; i <= need; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (p[i] & 0x3Fu);
    }
    *cp = v;
    return need + 1;
}

/* One byte string: the decoder against the definition and the old decoders; valid against the
 * old loop, offset included. */
static void check(const uint8_t *p, size_t n)
{
    uint32_t cp = 0xFFFFFFFF, want_cp = 0, old_cp = 0;
    size_t k = nf_utf8_decode(p, n, &cp);
    size_t want = expected(p, n, &want_cp);
    if (k != want || (k && cp != want_cp))
        cr_assert_fail("%02x %02x %02x %02x (n %zu): decode %zu U+%04X, expected %zu U+%04X", p[0], n > 1 ? p[1] : 0,
                       n > 2 ? p[2] : 0, n > 3 ? p[3] : 0, n, k, cp, want, want_cp);
    size_t ok = old_seq(p, n, &old_cp);
    if (ok != k || (k && old_cp != cp))
        cr_assert_fail("%02x %02x (n %zu): the old sequence decoder differs", p[0], p[1], n);
    if (nf_utf8_decode(p, n, NULL) != k) cr_assert_fail("decode without a code point differs");
    size_t bad = 7777, old_bad = 8888;
    bool v = nf_utf8_valid(p, n, &bad), ov = old_valid(p, n, &old_bad);
    if (v != ov || (!v && bad != old_bad))
        cr_assert_fail("%02x %02x (n %zu): the old validation differs", p[0], p[1], n);
}

static size_t dec(const char *s, size_t n, uint32_t *cp) { return nf_utf8_decode((const uint8_t *)s, n, cp); }
#define DEC(lit, cp) dec(lit, sizeof(lit) - 1, cp)

Test(utf8, each_length_and_its_bounds)
{
    uint32_t cp = 0;
    cr_assert_eq(DEC("\x00", &cp), 1);
    cr_assert_eq(cp, 0);
    cr_assert_eq(DEC("\x7f", &cp), 1);
    cr_assert_eq(DEC("\xc2\x80", &cp), 2);
    cr_assert_eq(cp, 0x80);
    cr_assert_eq(DEC("\xdf\xbf", &cp), 2);
    cr_assert_eq(cp, 0x7FF);
    cr_assert_eq(DEC("\xe0\xa0\x80", &cp), 3);
    cr_assert_eq(cp, 0x800);
    cr_assert_eq(DEC("\xed\x9f\xbf", &cp), 3);
    cr_assert_eq(cp, 0xD7FF);
    cr_assert_eq(DEC("\xee\x80\x80", &cp), 3);
    cr_assert_eq(cp, 0xE000);
    cr_assert_eq(DEC("\xef\xbf\xbf", &cp), 3);
    cr_assert_eq(cp, 0xFFFF);
    cr_assert_eq(DEC("\xf0\x90\x80\x80", &cp), 4);
    cr_assert_eq(cp, 0x10000);
    cr_assert_eq(DEC("\xf4\x8f\xbf\xbf", &cp), 4);
    cr_assert_eq(cp, 0x10FFFF);
    cr_assert_eq(DEC("a\xff", &cp), 1, "only the first character is decoded");
}

Test(utf8, overlong_forms)
{
    uint32_t cp;
    cr_assert_eq(DEC("\xc0\x80", &cp), 0);     /* U+0000 in two bytes */
    cr_assert_eq(DEC("\xc1\xbf", &cp), 0);     /* U+007F */
    cr_assert_eq(DEC("\xe0\x80\x80", &cp), 0); /* U+0000 in three */
    cr_assert_eq(DEC("\xe0\x9f\xbf", &cp), 0); /* U+07FF */
    cr_assert_eq(DEC("\xf0\x80\x80\x80", &cp), 0);
    cr_assert_eq(DEC("\xf0\x8f\xbf\xbf", &cp), 0); /* U+FFFF in four */
}

Test(utf8, surrogates)
{
    uint32_t cp;
    cr_assert_eq(DEC("\xed\xa0\x80", &cp), 0); /* U+D800 */
    cr_assert_eq(DEC("\xed\xaf\xbf", &cp), 0); /* U+DBFF */
    cr_assert_eq(DEC("\xed\xb0\x80", &cp), 0); /* U+DC00 */
    cr_assert_eq(DEC("\xed\xbf\xbf", &cp), 0); /* U+DFFF */
    cr_assert_eq(DEC("\xed\xa0\xbd\xed\xb8\x80", &cp), 0, "a pair encoded as two surrogates (CESU-8)");
}

Test(utf8, beyond_the_last_code_point)
{
    uint32_t cp;
    cr_assert_eq(DEC("\xf4\x90\x80\x80", &cp), 0); /* U+110000 */
    cr_assert_eq(DEC("\xf7\xbf\xbf\xbf", &cp), 0);
    cr_assert_eq(DEC("\xf5\x80\x80\x80", &cp), 0);
    cr_assert_eq(DEC("\xf8\x88\x80\x80\x80", &cp), 0); /* the old five-byte form */
    cr_assert_eq(DEC("\xfc\x84\x80\x80\x80\x80", &cp), 0);
    cr_assert_eq(DEC("\xfe", &cp), 0);
    cr_assert_eq(DEC("\xff", &cp), 0);
}

Test(utf8, cut_short_and_stray_bytes)
{
    uint32_t cp;
    cr_assert_eq(DEC("\xc3", &cp), 0);
    cr_assert_eq(DEC("\xe4\xb8", &cp), 0);
    cr_assert_eq(DEC("\xf0\x9f\x98", &cp), 0);
    cr_assert_eq(dec("\xf0\x9f\x98\x80", 3, &cp), 0, "n bounds the sequence, not the NUL");
    cr_assert_eq(DEC("\xc3(", &cp), 0);
    cr_assert_eq(DEC("\xe4\xb8(", &cp), 0);
    cr_assert_eq(DEC("\xf0\x9f\x98(", &cp), 0);
    cr_assert_eq(DEC("\x80", &cp), 0);
    cr_assert_eq(DEC("\xbf", &cp), 0);
}

Test(utf8, valid_names_the_first_bad_sequence)
{
    size_t bad = 99;
    cr_assert(nf_utf8_valid((const uint8_t *)"", 0, &bad));
    cr_assert(nf_utf8_valid((const uint8_t *)"q \xce\xb3 \xf0\x9f\x98\x80", 9, &bad));
    cr_assert_not(nf_utf8_valid((const uint8_t *)"ab\xe4\xb8xy", 6, &bad));
    cr_assert_eq(bad, 2);
    cr_assert_not(nf_utf8_valid((const uint8_t *)"\xce\xb3\xed\xa0\x80", 5, &bad));
    cr_assert_eq(bad, 2);
    cr_assert_not(nf_utf8_valid((const uint8_t *)"abc\xf0\x9f", 5, NULL), "bad may be NULL");
}

Test(utf8, continuation_bytes)
{
    for (unsigned c = 0; c < 256; c++) cr_assert_eq(nf_utf8_continues((uint8_t)c), c >= 0x80 && c <= 0xBF, "%02x", c);
}

/* Every string of one to three bytes, whole and cut at each length. */
Test(utf8, every_short_string, .timeout = 60)
{
    uint8_t p[3];
    for (unsigned a = 0; a < 256; a++) {
        p[0] = (uint8_t)a;
        check(p, 1);
        for (unsigned b = 0; b < 256; b++) {
            p[1] = (uint8_t)b;
            check(p, 2);
            for (unsigned c = 0; c < 256; c++) {
                p[2] = (uint8_t)c;
                check(p, 3);
            }
        }
    }
}

/* Four bytes: every lead and second byte, with third and fourth bytes from both ends of each
 * class (ASCII, continuation, lead, never valid). */
Test(utf8, four_byte_strings, .timeout = 60)
{
    static const uint8_t tail[] = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0,
                                   0xC2, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF};
    uint8_t p[4];
    for (unsigned a = 0; a < 256; a++)
        for (unsigned b = 0; b < 256; b++)
            for (size_t c = 0; c < sizeof tail; c++)
                for (size_t d = 0; d < sizeof tail; d++) {
                    p[0] = (uint8_t)a;
                    p[1] = (uint8_t)b;
                    p[2] = tail[c];
                    p[3] = tail[d];
                    check(p, 4);
                }
}

/* Every scalar value round-trips through its encoding. */
Test(utf8, every_code_point)
{
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
        uint8_t e[4];
        size_t n = encode(cp, e);
        uint32_t got = 0xFFFFFFFF;
        size_t k = nf_utf8_decode(e, n, &got);
        if (scalar_value(cp) ? k != n || got != cp : k != 0) cr_assert_fail("U+%04X: %zu U+%04X", cp, k, got);
    }
}

/* ---------------------------------------------------------------- the encoder */
/* nf_utf8_encode, on every value 0..0x10FFFF: a scalar value's bytes are the definition's (encode
 * above) and decode back to it, each length used exactly for its range; a surrogate has none and
 * leaves the output untouched. */
Test(utf8, encoder_every_code_point)
{
    size_t per_length[5] = {0};
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
        uint8_t want[4], got[4] = {0xAA, 0xAA, 0xAA, 0xAA};
        size_t n = nf_utf8_encode(cp, got);
        if (!scalar_value(cp)) {
            if (n != 0 || got[0] != 0xAA) cr_assert_fail("U+%04X (a surrogate): encoded to %zu bytes", cp, n);
            continue;
        }
        size_t wn = encode(cp, want);
        uint32_t back = 0xFFFFFFFF;
        if (n != wn || memcmp(got, want, n) != 0 || nf_utf8_decode(got, n, &back) != n || back != cp)
            cr_assert_fail("U+%04X: %zu bytes, decoded back as U+%04X", cp, n, back);
        per_length[n]++;
    }
    cr_assert_eq(per_length[1], 0x80u);
    cr_assert_eq(per_length[2], 0x800u - 0x80u);
    cr_assert_eq(per_length[3], 0x10000u - 0x800u - 0x800u); /* less the 2048 surrogates */
    cr_assert_eq(per_length[4], 0x110000u - 0x10000u);
}

/* Above U+10FFFF nothing is encoded: the first values past it, the 21-bit and 32-bit ends. */
Test(utf8, encoder_refuses_beyond_the_last_code_point)
{
    static const uint32_t beyond[] = {0x110000, 0x110001, 0x1FFFFF, 0x200000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF};
    for (size_t i = 0; i < sizeof beyond / sizeof beyond[0]; i++) {
        uint8_t o[4] = {0xAA, 0xAA, 0xAA, 0xAA};
        cr_assert_eq(nf_utf8_encode(beyond[i], o), 0, "U+%X", beyond[i]);
        cr_assert_eq(o[0], 0xAA);
    }
}
