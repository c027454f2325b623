/* The resolver's own matchers (lib/src/recipe/match.c, docs/security.md 7.1, F9) answer exactly what the C
 * library would -- fnmatch(pattern, name, 0) for globs, regexec of "^(P)$" for "re:" patterns
 * -- and within the work they count: random patterns and names from small alphabets, compared
 * one by one, with the step counts checked against their bounds.  The regular expressions come
 * from a generator of the supported subset; a pattern glibc refuses is skipped. */
#include <criterion/criterion.h>
#include <fnmatch.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recipe/recipe_internal.h"
#include "support/test_rng.h"

TEST_RNG(0x9E3779B97F4A7C15ull)

static void random_string(char *out, size_t max, const char *alphabet)
{
    size_t n = rng32() % (max + 1), k = strlen(alphabet);
    for (size_t i = 0; i < n; i++) out[i] = alphabet[rng32() % k];
    out[n] = '\0';
}

static void check_glob(const char *pat, const char *name)
{
    uint64_t steps = 0;
    bool mine = nf_recipe_glob_match(pat, name, &steps);
    bool libc = fnmatch(pat, name, 0) == 0;
    cr_assert_eq(mine, libc, "glob '%s' on '%s': ours %d, fnmatch %d", pat, name, mine, libc);
    uint64_t bound = ((uint64_t)strlen(pat) + 1) * ((uint64_t)strlen(name) + 1) * 2;
    cr_assert_leq(steps, bound, "glob '%s' on '%s': %llu steps", pat, name, (unsigned long long)steps);
}

Test(recipe_match, globs_agree_with_fnmatch)
{
    /* no POSIXLY_CORRECT: with it, glibc stops reading '^' as a bracket negation */
    unsetenv("POSIXLY_CORRECT");
    static const char *fixed[][2] = {
        {"*.weight", "model.norm.weight"},
        {"model.layers.*.mlp.*", "model.layers.3.mlp.up"},
        {"[ab]*", "b"},
        {"[!ab]x", "cx"},
        {"[^a]x", "ax"},
        {"[]a]", "]"},
        {"[!]a]", "]"},
        {"[a-c]", "b"},
        {"[c-a]", "b"},
        {"[a-]", "-"},
        {"a[", "a["},
        {"a[b", "a[b"},
        {"a\\", "a\\"},
        {"a\\*", "a*"},
        {"[\\]]", "]"},
        {"[a\\", "a"},
        {"*a*a*a*b", "aaaaaaaaaaaaaaaa"},
        {"[[:alpha:]]x", "qx"},
        {"[[:digit:]-z]", "-"},
        {"[[:bogus:]]", "b"},
        {"*", ""},
        {"?", ""},
        {"[a-\\]]", "]"},
        {"[--0]", "/"},
        {"[*-", "[*-"},
        {"[a\\-", "a"},
        {"\\[a]", "[a]"},
        {"[*]", "*"},
        {"**x", "ax"},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) check_glob(fixed[i][0], fixed[i][1]);
    char pat[16], name[12];
    for (int i = 0; i < 300000; i++) {
        random_string(pat, 10, "ab*?[]!^-\\");
        random_string(name, 9, "ab-]![\\^*");
        check_glob(pat, name);
    }
    /* high bytes compare by value, as in the C locale */
    check_glob("[\x80-\xff]", "\xc3");
    check_glob("[!\x80-\xff]", "\xc3");
    check_glob("?\xe9*", "a\xe9z");
}

/* glibc's regcomp of the anchored pattern; false when glibc refuses it.  Compiled once per
 * pattern (regcomp costs far more than a match), then asked of every name. */
static bool libc_compile(const char *pat, regex_t *re)
{
    char anchored[600];
    snprintf(anchored, sizeof anchored, "^(%s)$", pat);
    return regcomp(re, anchored, REG_EXTENDED | REG_NOSUB) == 0;
}

static void check_regex(const char *pat, const char *const *names, size_t n)
{
    regex_t libc_re;
    if (!libc_compile(pat, &libc_re)) return; /* the parser refuses it with glibc's message first */
    recipe_regex *re = NULL;
    const char *why = nf_recipe_regex_compile(pat, &re);
    cr_assert_null(why, "'%s' compiles with glibc but ours says it %s", pat, why ? why : "");
    for (size_t i = 0; i < n; i++) {
        uint64_t steps = 0;
        bool mine = nf_recipe_regex_match(re, names[i], &steps);
        bool libc = regexec(&libc_re, names[i], 0, NULL, 0) == 0;
        cr_assert_eq(mine, libc, "regex '%s' on '%s': ours %d, regexec %d", pat, names[i], mine, libc);
        uint64_t bound = 2 * ((uint64_t)nf_recipe_regex_states(re) + 1) * ((uint64_t)strlen(names[i]) + 1);
        cr_assert_leq(steps, bound, "regex '%s' on '%s': %llu steps", pat, names[i], (unsigned long long)steps);
    }
    nf_recipe_regex_free(re);
    regfree(&libc_re);
}

/* A random expression of the supported subset, groups nested at most three deep; returns
 * whether it can match the empty string.  A group that can is never repeated (the parser refuses
 * that, and glibc's regcomp can spend minutes on it: docs/security.md 7, R1c). */
static bool gen_regex(char *out, size_t size, int depth)
{
    static const char *const atoms[] = {"a", "b",           ".",    "[ab]", "[^a]", "[a-c]", "\\.",
                                        "x", "[[:digit:]]", "[]a]", "-",    "}",    "[.-]"};
    static const char *const ops[] = {"", "", "", "*", "+", "?", "{2}", "{0,2}", "{1,}", "{,2}"};
    static const bool op_nullable[] = {false, false, false, true, false, true, false, true, false, true};
    size_t len = strlen(out);
    bool nullable = true;
    int parts = 1 + (int)(rng32() % 3);
    for (int i = 0; i < parts && len + 40 < size; i++) {
        bool part_nullable = false, group = false;
        if (depth < 3 && rng32() % 4 == 0) {
            group = true;
            strcat(out, "(");
            part_nullable = gen_regex(out, size, depth + 1);
            if (rng32() % 3 == 0) {
                strcat(out, "|");
                part_nullable = gen_regex(out, size, depth + 1) || part_nullable;
            }
            strcat(out, ")");
        } else {
            strcat(out, atoms[rng32() % (sizeof atoms / sizeof atoms[0])]);
        }
        size_t op = rng32() % (sizeof ops / sizeof ops[0]);
        if (group && part_nullable) op = 0;
        strcat(out, ops[op]);
        part_nullable = part_nullable || op_nullable[op];
        nullable = nullable && part_nullable;
        len = strlen(out);
    }
    return nullable;
}

Test(recipe_match, regexes_agree_with_regexec)
{
    static const char *const fixed[] = {
        "blk\\.[0-9]+\\.ffn_(gate|up)(_exps)?\\.weight",
        ".*\\.(q|k|v|o)_proj\\.weight",
        "(a|b)*c",
        "a{2,3}",
        "a|",
        "(|a)b",
        "[[:alpha:]_]+",
        "^a",
        "a$",
        "^a|b$",
        "x(y|z){0,2}",
        "[^.]*",
        "a{0}",
        "(a|ab)(c|bcd)",
    };
    static const char *const names[] = {"",
                                        "a",
                                        "b",
                                        "ab",
                                        "aab",
                                        "abc",
                                        "c",
                                        "ac",
                                        "bc",
                                        "aa",
                                        "aaa",
                                        "a.b",
                                        "x",
                                        "xy",
                                        "xyz",
                                        "xzz",
                                        "a$",
                                        "_z",
                                        "abcd",
                                        ".",
                                        "blk.12.ffn_up_exps.weight",
                                        "blk.1.ffn_gate.weight",
                                        "m.q_proj.weight"};
    size_t nn = sizeof names / sizeof names[0];
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) check_regex(fixed[i], names, nn);
    char pat[512];
    char rnames[24][12];
    const char *rp[24];
    for (int k = 0; k < 24; k++) rp[k] = rnames[k];
    for (int i = 0; i < 20000; i++) {
        pat[0] = '\0';
        if (rng32() % 8 == 0) strcat(pat, "^");
        (void)gen_regex(pat, sizeof pat, 0);
        if (rng32() % 8 == 0) strcat(pat, "$");
        for (int k = 0; k < 24; k++) random_string(rnames[k], 8, "ab.x-}3");
        check_regex(pat, rp, 24);
    }
}

/* What the matcher refuses and glibc would take: features a tensor name does not need, whose
 * meaning the NFA does not reproduce. */
Test(recipe_match, unsupported_features_refused)
{
    static const char *const bad[][2] = {
        {"\\w+", "backslash before a letter"},
        {".*\\>x?", "GNU anchor"},
        {"\\<a", "GNU anchor"},
        {"a\\'", "GNU anchor"},
        {"\\`a", "GNU anchor"},
        {"[[=a=]]", "equivalence class"},
        {"[[.a.]]", "collating"},
        {"a(b", "unmatched '('"},
        {"a^b", "'^' other than at its start"},
        {"(a|$b){0,2}", "'$' other than"},
        {"a)", "unmatched ')'"},
        {"*a", "nothing to repeat"},
        {"a{2", "malformed bound"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        recipe_regex *re = NULL;
        const char *why = nf_recipe_regex_compile(bad[i][0], &re);
        cr_assert_not_null(why, "'%s' compiled", bad[i][0]);
        cr_assert(strstr(why, bad[i][1]), "'%s': %s", bad[i][0], why);
        cr_assert_null(re);
    }
}

/* The cost that used to be unbounded is now linear in the states: glibc's regexec took more
 * than two minutes for this selector on 20,000 names of 1,000 bytes. */
Test(recipe_match, dfa_blowup_pattern_costs_states_times_length)
{
    recipe_regex *re = NULL;
    cr_assert_null(nf_recipe_regex_compile(".*a.{60}x", &re));
    char name[1001];
    uint64_t state = 7;
    for (int i = 0; i < 1000; i++) name[i] = test_rng32(&state) & 1 ? 'a' : 'b';
    name[1000] = '\0';
    uint64_t steps = 0;
    cr_assert_not(nf_recipe_regex_match(re, name, &steps));
    cr_assert_leq(steps, 2 * (nf_recipe_regex_states(re) + 1) * 1001);
    nf_recipe_regex_free(re);
}

Test(recipe_match, literal_prefixes)
{
    char buf[64];
    cr_assert_eq(nf_recipe_regex_prefix("blk\\.[0-9]+", buf, sizeof buf), 4);
    cr_assert_str_eq(buf, "blk.");
    cr_assert_eq(nf_recipe_regex_prefix("model\\.layers\\.1?x", buf, sizeof buf), 13);
    cr_assert_str_eq(buf, "model.layers.");
    cr_assert_eq(nf_recipe_regex_prefix("ab*", buf, sizeof buf), 1);
    cr_assert_eq(nf_recipe_regex_prefix("a|b", buf, sizeof buf), 0);
    cr_assert_eq(nf_recipe_regex_prefix("[|]x", buf, sizeof buf), 0);
    cr_assert_eq(nf_recipe_regex_prefix("abc{2}", buf, sizeof buf), 2);
    cr_assert_eq(nf_recipe_glob_prefix_len("model.layers.*"), 13);
    cr_assert_eq(nf_recipe_glob_prefix_len("a\\*b"), 1);
}

/* A literal tail is compared once: a name that does not end with it costs its length, however
 * long the name ("*.weight", "re:.*\.(q|k|v)_proj\.weight" against the other tensors). */
Test(recipe_match, literal_tails_are_compared_once)
{
    uint64_t steps = 0;
    cr_assert_not(nf_recipe_glob_match("*.weight", "model.layers.0.mlp.up_proj.bias", &steps));
    cr_assert_leq(steps, 8, "%llu", (unsigned long long)steps);
    steps = 0;
    cr_assert(nf_recipe_glob_match("model.*.weight", "model.layers.0.mlp.up_proj.weight", &steps));
    cr_assert_leq(steps, 16, "%llu", (unsigned long long)steps);
    recipe_regex *re = NULL;
    cr_assert_null(nf_recipe_regex_compile(".*\\.(q|k|v)_proj\\.weight", &re));
    steps = 0;
    cr_assert_not(nf_recipe_regex_match(re, "model.layers.0.self_attn.q_proj.bias", &steps));
    cr_assert_leq(steps, 12, "%llu", (unsigned long long)steps);
    cr_assert(nf_recipe_regex_match(re, "model.layers.0.self_attn.k_proj.weight", &steps));
    nf_recipe_regex_free(re);
    /* a repeated or grouped last literal is no tail: "ab+" matches "abb" */
    cr_assert_null(nf_recipe_regex_compile("ab+", &re));
    cr_assert(nf_recipe_regex_match(re, "abb", &steps));
    nf_recipe_regex_free(re);
    cr_assert_null(nf_recipe_regex_compile("a(bc)", &re));
    cr_assert(nf_recipe_regex_match(re, "abc", &steps));
    nf_recipe_regex_free(re);
    cr_assert_null(nf_recipe_regex_compile("x|ab", &re));
    cr_assert(nf_recipe_regex_match(re, "x", &steps));
    nf_recipe_regex_free(re);
    cr_assert_null(nf_recipe_regex_compile("a\\.b$", &re));
    cr_assert(nf_recipe_regex_match(re, "a.b", &steps));
    nf_recipe_regex_free(re);
}
