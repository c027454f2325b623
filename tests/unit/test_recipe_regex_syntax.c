/* The POSIX syntax check of "re:" selectors (recipe_internal.h, nf_recipe_regex_syntax_error)
 * against the C library itself: on every pattern of up to three bytes over the bytes that
 * matter, on random patterns of up to twelve, and on random strings of bracket items, bounds and
 * escapes, it must refuse exactly what glibc's regcomp (REG_EXTENDED, the C locale) refuses and
 * say what glibc's regerror says -- the check the parser made with glibc before, so a recipe
 * is accepted or refused as it was, with the same message.  Patterns the size guard refuses
 * (nf_recipe_regex_too_complex) never reach the check and are skipped. */
#include <criterion/criterion.h>
#include <regex.h>
#include <stdio.h>
#include <string.h>

#include "recipe/recipe_internal.h"
#include "support/test_rng.h"

TEST_RNG(0x7265676578737978ull)

static unsigned long compared;

static void same_as_glibc(const char *pattern)
{
    if (nf_recipe_regex_too_complex(pattern)) return;
    compared++;
    regex_t re;
    int rc = regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB);
    char libc[160] = "";
    if (rc != 0) regerror(rc, &re, libc, sizeof libc);
    else regfree(&re);
    const char *mine = nf_recipe_regex_syntax_error(pattern);
    if ((rc == 0) != (mine == NULL) || (rc != 0 && strcmp(libc, mine) != 0))
        cr_assert_fail("'%s': glibc says '%s', the check '%s'", pattern, rc ? libc : "(valid)",
                       mine ? mine : "(valid)");
}

Test(recipe_regex_syntax, each_error)
{
    static const char *const cases[][2] = {
        {"a(b", "Unmatched ( or \\("},
        {"a)b", NULL},
        {"[ab", "Unmatched [, [^, [:, [., or [="},
        {"[", "Invalid regular expression"},
        {"a\\", "Trailing backslash"},
        {"*a", "Invalid preceding regular expression"},
        {"a|+b", "Invalid preceding regular expression"},
        {"^*", "Invalid preceding regular expression"},
        {"a{", "Unmatched \\{"},
        {"a{x}", "Invalid content of \\{\\}"},
        {"a{2,1}", "Invalid content of \\{\\}"},
        {"a{}", "Invalid content of \\{\\}"},
        {"a{,2}", NULL},
        {"[z-a]", "Invalid range end"},
        {"[[:alpha:]-z]", "Invalid range end"},
        {"[[:bogus:]]", "Invalid character class name"},
        {"[[.ab.]]", "Invalid collation character"},
        {"[[=a=]]", NULL},
        {"a^b$c", NULL},
        {"\\w+\\<", NULL},
        {"blk\\.[0-9]+\\.ffn_(gate|up)(_exps)?\\.weight", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *got = nf_recipe_regex_syntax_error(cases[i][0]);
        if (cases[i][1])
            cr_assert(got && strcmp(got, cases[i][1]) == 0, "'%s': '%s'", cases[i][0], got ? got : "(valid)");
        else cr_assert_null(got, "'%s': '%s'", cases[i][0], got);
        same_as_glibc(cases[i][0]);
    }
}

Test(recipe_regex_syntax, every_short_pattern, .timeout = 120)
{
    static const char alphabet[] = "a().[]{}|*+?^$\\-,1:=w";
    size_t n = sizeof alphabet - 1;
    char p[4] = {0};
    for (size_t a = 0; a < n; a++) {
        p[0] = alphabet[a];
        p[1] = '\0';
        same_as_glibc(p);
        for (size_t b = 0; b < n; b++) {
            p[1] = alphabet[b];
            p[2] = '\0';
            same_as_glibc(p);
            for (size_t c = 0; c < n; c++) {
                p[2] = alphabet[c];
                same_as_glibc(p);
            }
        }
    }
    cr_assert_gt(compared, 5000);
}

Test(recipe_regex_syntax, random_patterns, .timeout = 120)
{
    static const char alphabet[] = "ab()[]{}|*+?^$\\-,0129:.=<w`'zA";
    char p[16];
    for (int k = 0; k < 300000; k++) {
        size_t len = 1 + rng32() % 12;
        for (size_t i = 0; i < len; i++) p[i] = alphabet[rng32() % (sizeof alphabet - 1)];
        p[len] = '\0';
        same_as_glibc(p);
    }
}

/* Pieces of bracket expressions, bounds and escapes, high bytes included (compared by value in
 * the C locale), strung together. */
Test(recipe_regex_syntax, random_pieces, .timeout = 120)
{
    static const char *const pieces[] = {"[",         "]",
                                         "[:",        ":]",
                                         "[.",        ".]",
                                         "[=",        "=]",
                                         "alpha",     "digit",
                                         "bogus",     "upper",
                                         "xdigit",    "a",
                                         "z",         "-",
                                         "^",         "\\",
                                         "\xe9",      "\x80",
                                         "\xff",      "\x01",
                                         "(",         ")",
                                         "{",         "}",
                                         ",",         "1",
                                         "9",         "*",
                                         "|",         "$",
                                         ".",         "abcdefghijklmnopqrstuvwxyz0123456789",
                                         "ab",        "[[:alpha:]]",
                                         "[a-z]",     "[z-a]",
                                         "[[.a.]-z]", "[[.-.]-z]",
                                         "\\w",       "\\<",
                                         "{2,1}",     "{1,2}",
                                         "{,3}",      "{3}",
                                         "\\,",       "\\}",
                                         "\\{"};
    char p[600];
    for (int k = 0; k < 300000; k++) {
        p[0] = '\0';
        size_t n = 1 + rng32() % 8;
        for (size_t i = 0; i < n; i++) strcat(p, pieces[rng32() % (sizeof pieces / sizeof pieces[0])]);
        same_as_glibc(p);
    }
}
