/* "re:" selectors that would make regcomp explode (found by fuzzing the recipe parser) are
 * refused with a position; ordinary tensor-name patterns still work. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include <ninfer/ninfer.h>

static nf_status parse_selector(const char *selector, nf_error *err)
{
    char text[2048];
    snprintf(text, sizeof text, "recipe: 1\nsources:\n  base: /nowhere\nrules:\n  - match: \"%s\"\n    format: fp32\n",
             selector);
    nf_recipe *r = NULL;
    nf_status st = nf_recipe_parse(text, strlen(text), "limits.yaml", NULL, &r, err);
    nf_recipe_free(r);
    return st;
}

Test(recipe_regex, explosive_patterns_are_refused)
{
    static const char *bad[] = {
        "re:((a{1,255}){1,255}){1,255}", /* nested bounds: gigabytes inside regcomp */
        "re:a++++++++++++++++++++++++",  /* stacked operators */
        "re:a{1,65}",                    /* a bound above the cap */
        "re:(a{2})(b{2})(c{2})",         /* more than two bounded repetitions */
        "re:(a)\\\\1",                   /* back-references: anchoring renumbers groups */
        /* '+' copies its operand: 24 nested groups double 24 times (docs/security.md 7, R1b) */
        "re:((((((((((((((((((((((((a)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+",
        "re:(((((((((((((x[ab]+)+)+)+)+)+)+)+)+)+)+)+)+)+",
        "re:((((((((a{1,64})+)+)+)+)+)+)+)", /* a bound, then doubled seven times */
        /* a repeated operand that matches "": epsilon closures explode (docs/security.md 7, R1c) */
        "re:(((((((()+)+)+)+)+)+)#e with fast+)+)+)+)+)+)+)+)+)+)+)-+",
        "re:(a*)+",
        "re:(a|)*",
        "re:x(()+)+",
        "re:(b(a?)?)*",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        nf_error err;
        cr_assert_eq(parse_selector(bad[i], &err), NF_ERR_INVALID, "%s accepted", bad[i]);
        cr_assert(strstr(err.message, "limits.yaml:5:"), "%s", err.message);
    }
    char longpat[400] = "re:";
    memset(longpat + 3, 'a', 300);
    longpat[303] = '\0';
    nf_error err;
    cr_assert_eq(parse_selector(longpat, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "256 bytes"), "%s", err.message);
}

Test(recipe_regex, ordinary_patterns_still_parse)
{
    static const char *good[] = {
        "re:model\\\\.layers\\\\.[0-9]+\\\\.mlp\\\\.w",
        "re:.*\\\\.(q|k|v|o)_proj\\\\.weight",
        "re:blk\\\\.[0-9]{1,3}\\\\.attn_(q|k)\\\\.weight",
        "re:a\\\\+\\\\+", /* escaped operators are literal characters */
        "re:((a|b)+c)+",  /* a little nesting is fine */
        "re:(blk|layers)\\\\.([0-9]+)\\\\.(attn|ffn)_(gate|up|down)(_exps)?\\\\.weight",
        "re:[(+]+x",                         /* operators inside a bracket expression are literal */
        "re:(a|b)*c",                        /* repeated groups that cannot match "" are fine */
        "re:layers\\\\.([0-9]*)\\\\.weight", /* a starred operand inside an unrepeated group too */
        "re:(.*)\\\\.(bias|weight)",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        nf_error err;
        cr_assert_eq(parse_selector(good[i], &err), NF_OK, "%s: %s", good[i], err.message);
    }
}
