/* nf_escape (ninfer/escape.h): the one rule by which names from files are shown to people.
 * Each class of the rule on its own, cutting, the flags, and for random byte strings the
 * promises: no control byte and no invalid UTF-8 in the output, and the output never longer
 * than the buffer. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "support/test_rng.h"

TEST_RNG(0x5eed5eed1234ull)

static const char *esc(const char *s, size_t len, unsigned flags)
{
    static char buf[512];
    return nf_escape(s, len, flags, buf, sizeof buf);
}
#define ESC(lit) esc(lit, sizeof(lit) - 1, 0)

Test(escape, printable_utf8_is_kept)
{
    cr_assert_str_eq(ESC("model.layers.0.q_proj.weight"), "model.layers.0.q_proj.weight");
    cr_assert_str_eq(ESC("gamma \xce\xb3 \xe4\xb8\xad \xf0\x9f\x98\x80 'q' \"d\""),
                     "gamma \xce\xb3 \xe4\xb8\xad \xf0\x9f\x98\x80 'q' \"d\"");
    cr_assert_str_eq(ESC(""), "");
}

Test(escape, controls)
{
    cr_assert_str_eq(ESC("a\nb"), "a\\nb");
    cr_assert_str_eq(ESC("a\rb\tc"), "a\\rb\\tc");
    cr_assert_str_eq(ESC("\x1b[31mred\x1b]0;title\x07"), "\\x1b[31mred\\x1b]0;title\\x07");
    cr_assert_str_eq(ESC("\x7f\x01"), "\\x7f\\x01");
    cr_assert_str_eq(esc("a\0b", 3, 0), "a\\x00b");
}

Test(escape, backslash_is_doubled)
{
    cr_assert_str_eq(ESC("a\\x1b"), "a\\\\x1b");
    cr_assert_str_eq(esc("a\\n", 3, NF_ESCAPE_KEEP_BACKSLASH), "a\\n");
}

Test(escape, invalid_utf8_bytes)
{
    cr_assert_str_eq(ESC("\xff\xfe.ninfer"), "\\xff\\xfe.ninfer");
    cr_assert_str_eq(ESC("\xc0\xaf"), "\\xc0\\xaf");                   /* overlong '/' */
    cr_assert_str_eq(ESC("\xed\xa0\x80"), "\\xed\\xa0\\x80");          /* a surrogate */
    cr_assert_str_eq(ESC("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80"); /* above U+10FFFF */
    cr_assert_str_eq(ESC("ab\xe4\xb8"), "ab\\xe4\\xb8");               /* cut sequence */
}

Test(escape, c1_and_bidi_controls)
{
    cr_assert_str_eq(ESC("\xc2\x9b"
                         "31m"),
                     "\\u009b31m"); /* CSI */
    cr_assert_str_eq(ESC("\xc2\x85"), "\\u0085");
    cr_assert_str_eq(ESC("a\xe2\x80\xae"
                         "b"),
                     "a\\u202eb"); /* RIGHT-TO-LEFT OVERRIDE */
    cr_assert_str_eq(ESC("\xe2\x81\xa6\xe2\x80\xa8"), "\\u2066\\u2028");
    cr_assert_str_eq(ESC("\xc2\xa0"), "\xc2\xa0"); /* NO-BREAK SPACE is printable */
}

Test(escape, keep_newline) { cr_assert_str_eq(esc("a\nb\rc", 5, NF_ESCAPE_KEEP_NEWLINE), "a\nb\\rc"); }

Test(escape, cut_marks_the_cut)
{
    char buf[8];
    cr_assert_str_eq(nf_escape("abcdefghij", 10, 0, buf, sizeof buf), "abcd...");
    cr_assert_str_eq(nf_escape("abcdefg", 7, 0, buf, sizeof buf), "abcdefg");
    cr_assert_str_eq(nf_escape("\n\n\n\n", 4, 0, buf, sizeof buf), "\\n\\n...");
    /* a multi-byte character is never split */
    cr_assert_str_eq(nf_escape("abc\xe4\xb8\xadxyz", 9, 0, buf, sizeof buf), "abc...");
    char big[1000];
    memset(big, 'x', sizeof big);
    nf_escaped e = nf_esc((char[]){'a', 0});
    cr_assert_str_eq(e.s, "a");
    big[sizeof big - 1] = 0;
    e = nf_esc(big);
    cr_assert_lt(strlen(e.s), NF_ESCAPED_MAX);
    cr_assert_str_eq(e.s + strlen(e.s) - 3, "...");
    cr_assert_str_eq(nf_esc(NULL).s, "(null)");
}

/* Strict UTF-8 check written independently of the library (RFC 3629 table 4). */
static bool valid_utf8(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        size_t k;
        unsigned lo = 0x80, hi = 0xBF;
        if (c < 0x80) k = 0;
        else if (c >= 0xC2 && c <= 0xDF) k = 1;
        else if (c == 0xE0) k = 2, lo = 0xA0;
        else if (c >= 0xE1 && c <= 0xEC) k = 2;
        else if (c == 0xED) k = 2, hi = 0x9F;
        else if (c >= 0xEE && c <= 0xEF) k = 2;
        else if (c == 0xF0) k = 3, lo = 0x90;
        else if (c >= 0xF1 && c <= 0xF3) k = 3;
        else if (c == 0xF4) k = 3, hi = 0x8F;
        else return false;
        if (i + k >= n + (k == 0)) return false;
        if (k && (s[i + 1] < lo || s[i + 1] > hi)) return false;
        for (size_t j = 2; j <= k; j++)
            if ((s[i + j] & 0xC0) != 0x80) return false;
        i += k + 1;
    }
    return true;
}

Test(escape, random_bytes_never_reach_the_terminal)
{
    unsigned char in[64];
    char out[300];
    for (int iter = 0; iter < 20000; iter++) {
        size_t n = (size_t)(rng32() % sizeof in);
        for (size_t i = 0; i < n; i++) {
            uint32_t r = rng32();
            /* mostly ASCII with controls, some UTF-8 lead and continuation bytes */
            in[i] = (unsigned char)(r % 4 == 0 ? 0x80 + (r >> 8) % 0x80 : (r >> 8) % 0x80);
        }
        size_t size = 8 + (size_t)(rng32() % (sizeof out - 8));
        nf_escape((const char *)in, n, 0, out, size);
        size_t len = strlen(out);
        cr_assert_lt(len, size);
        for (size_t i = 0; i < len; i++) {
            unsigned char c = (unsigned char)out[i];
            cr_assert(c >= 0x20 && c != 0x7f, "control byte 0x%02x in the output", c);
        }
        cr_assert(valid_utf8((const unsigned char *)out, len), "invalid UTF-8 in the output");
        cr_assert_null(strstr(out, "\xc2\x9b"));
    }
}
