/* One selector outside a recipe (ninfer/recipe.h, nf_recipe_selector): an exact name, a glob
 * or "re:" and a regular expression, matched by the resolver's own matchers (match.c), so that
 * lists written in the same syntax elsewhere -- a quantized checkpoint's ignore list
 * (docs/dialects.md) -- cost what a recipe's selectors cost and no more. */
#include <stdlib.h>
#include <string.h>

#include "recipe/recipe_internal.h"

#define SELECTOR_MAX_BYTES 4096u

struct nf_recipe_selector {
    char *text;       /* the glob or the exact name */
    recipe_regex *re; /* "re:" selectors */
};

nf_status nf_recipe_selector_compile(const char *selector, nf_recipe_selector **out, nf_error *err)
{
    if (!selector || !out) return nf_error_set(err, NF_ERR_USAGE, "nf_recipe_selector_compile: missing argument");
    *out = NULL;
    size_t n = strlen(selector);
    if (n == 0) return nf_error_set(err, NF_ERR_INVALID, "empty selector");
    if (n > SELECTOR_MAX_BYTES)
        return nf_error_set(err, NF_ERR_INVALID, "selector of %zu bytes, more than the cap of %u", n,
                            SELECTOR_MAX_BYTES);
    nf_recipe_selector *s = calloc(1, sizeof *s);
    if (!s) return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    if (nf_recipe_is_regex(selector)) {
        const char *pattern = selector + strlen(RECIPE_RE_PREFIX);
        const char *why = pattern[0] ? nf_recipe_regex_too_complex(pattern) : "is empty";
        if (!why) why = nf_recipe_regex_compile(pattern, &s->re);
        if (why) {
            free(s);
            return nf_error_set(err, NF_ERR_INVALID, "regular expression '%.200s' %s", pattern, why);
        }
    } else if (!(s->text = strdup(selector))) {
        free(s);
        return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    }
    *out = s;
    return NF_OK;
}

bool nf_recipe_selector_match(nf_recipe_selector *sel, const char *name)
{
    if (!sel || !name) return false;
    uint64_t steps = 0;
    if (sel->re) return nf_recipe_regex_match(sel->re, name, &steps);
    if (strcmp(sel->text, name) == 0) return true;
    return nf_recipe_glob_has_meta(sel->text) && nf_recipe_glob_match(sel->text, name, &steps);
}

void nf_recipe_selector_free(nf_recipe_selector *sel)
{
    if (!sel) return;
    nf_recipe_regex_free(sel->re);
    free(sel->text);
    free(sel);
}
