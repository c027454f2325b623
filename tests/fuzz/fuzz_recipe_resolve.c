/* Fuzz target: a recipe's rules resolved against a tensor list the input also chooses (docs/security.md 7.1, F9:
 * what resolution may cost), with the resolver's own matchers held against the C library's.
 *
 * Input: a first line that spells the tensor list, then the recipe's YAML text.  The first line
 * is split at spaces into templates NAME[*COUNT]; each '#' of NAME becomes the template's index
 * (0 to COUNT-1, COUNT at most 64, 1 when absent); at most 512 tensors of at most 128 bytes in
 * all, each with a dtype and rank drawn from its name.  E.g.
 *     model.layers.#.mlp.up_proj.weight*8 lm_head.weight blk.#.attn_q.weight*3
 *
 * The recipe is parsed (MODEL_DIR and MODEL_GGUF allowed, as the shipped recipes use them) and
 * resolved with the default caps and, again, with caps small enough to be crossed.  Invariants
 * (abort() on failure):
 *   - every glob selector matches exactly the names fnmatch(3) does, and every "re:" selector the
 *     names regexec(3) of "^(P)$" does (names of at most 64 bytes, so that glibc itself stays
 *     fast), with no more work than the matchers' bounds;
 *   - resolution is deterministic (twice, the same choices) and reports at most selectors x
 *     tensors pairs; a resolution refused by a small cap names the cap;
 *   - an accepted resolution gives every tensor a method and, unless skipped, a format. */
#include <fnmatch.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "fuzz_target.h"
#include "recipe/recipe_internal.h"

#define MAX_TENSORS 512
#define MAX_NAME 128

static char names[MAX_TENSORS][MAX_NAME + 1];
static nf_recipe_tensor tensors[MAX_TENSORS];
static nf_recipe_choice choices[MAX_TENSORS], again[MAX_TENSORS];
static const uint64_t shapes[3][3] = {{64}, {8, 64}, {2, 8, 64}};
static const char *const dtypes[] = {"BF16", "F32", "F16", "Q4_K", "F8_E4M3", "I32", "U8"};

/* The tensor list of the first line; returns how many bytes it took (up to and including '\n'). */
static size_t make_tensors(const uint8_t *data, size_t size, size_t *n)
{
    size_t end = 0;
    while (end < size && data[end] != '\n') end++;
    *n = 0;
    for (size_t i = 0; i < end && *n < MAX_TENSORS;) {
        while (i < end && data[i] == ' ') i++;
        size_t t0 = i;
        while (i < end && data[i] != ' ') i++;
        size_t t1 = i, star = t1;
        for (size_t k = t0; k < t1; k++)
            if (data[k] == '*') star = k;
        unsigned count = 1;
        if (star < t1) {
            count = 0;
            for (size_t k = star + 1; k < t1 && count <= 64; k++)
                if (data[k] >= '0' && data[k] <= '9') count = count * 10 + (unsigned)(data[k] - '0');
            if (count == 0) count = 1;
            if (count > 64) count = 64;
        }
        if (star == t0) continue;
        for (unsigned c = 0; c < count && *n < MAX_TENSORS; c++) {
            char *nm = names[*n];
            size_t len = 0;
            for (size_t k = t0; k < star && len < MAX_NAME; k++) {
                if (data[k] == '#') len += (size_t)snprintf(nm + len, MAX_NAME + 1 - len, "%u", c);
                else if (data[k] != '\0') nm[len++] = (char)data[k];
                if (len > MAX_NAME) len = MAX_NAME;
            }
            nm[len] = '\0';
            if (len == 0) continue;
            /* names are unique in a checkpoint */
            bool dup = false;
            for (size_t j = 0; j < *n && !dup; j++) dup = strcmp(names[j], nm) == 0;
            if (dup) continue;
            unsigned h = 0;
            for (size_t k = 0; k < len; k++) h = h * 31u + (unsigned char)nm[k];
            uint32_t rank = 1 + h % 3;
            uint64_t elements = 1;
            for (uint32_t d = 0; d < rank; d++) elements *= shapes[rank - 1][d];
            tensors[*n] = (nf_recipe_tensor){nm, dtypes[(h / 3) % 7], rank, shapes[rank - 1], elements, false};
            (*n)++;
        }
    }
    return end < size ? end + 1 : end;
}

static bool libc_regex(const char *pattern, const char *name)
{
    size_t n = strlen(pattern);
    char *anchored = malloc(n + 5);
    if (!anchored) abort();
    memcpy(anchored, "^(", 2);
    memcpy(anchored + 2, pattern, n);
    memcpy(anchored + 2 + n, ")$", 3);
    regex_t re;
    /* the parser compiled the pattern alone; anchored, it must compile too */
    if (regcomp(&re, anchored, REG_EXTENDED | REG_NOSUB) != 0) abort();
    free(anchored);
    bool m = regexec(&re, name, 0, NULL, 0) == 0;
    regfree(&re);
    return m;
}

/* Each pattern selector against each name, ours and the C library's. */
static void check_matchers(const nf_recipe *r, size_t n)
{
    for (size_t ri = 0; ri < r->nrules; ri++)
        for (size_t k = 0; k < r->rules[ri].nmatch; k++) {
            const char *sel = r->rules[ri].match[k];
            if (nf_recipe_is_regex(sel)) {
                const char *pattern = sel + 3;
                recipe_regex *re = NULL;
                if (nf_recipe_regex_compile(pattern, &re) != NULL) abort(); /* the parser accepted it */
                for (size_t i = 0; i < n; i++) {
                    size_t len = strlen(names[i]);
                    uint64_t steps = 0;
                    bool mine = nf_recipe_regex_match(re, names[i], &steps);
                    if (steps > 2 * ((uint64_t)nf_recipe_regex_states(re) + 1) * (len + 1) + 64) abort();
                    if (len <= 64 && mine != libc_regex(pattern, names[i])) abort();
                }
                nf_recipe_regex_free(re);
            } else if (nf_recipe_glob_has_meta(sel)) {
                for (size_t i = 0; i < n; i++) {
                    uint64_t steps = 0;
                    bool mine = nf_recipe_glob_match(sel, names[i], &steps);
                    if (steps > 2 * ((uint64_t)strlen(sel) + 1) * (strlen(names[i]) + 1) + 64) abort();
                    if (mine != (fnmatch(sel, names[i], 0) == 0)) abort();
                }
            }
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int env_done;
    if (!env_done) {
        env_done = 1;
        setenv("MODEL_DIR", "/nonexistent/ninfer-fuzz/model", 1);
        setenv("MODEL_GGUF", "/nonexistent/ninfer-fuzz/model.gguf", 1);
        unsetenv("POSIXLY_CORRECT"); /* glibc's fnmatch reads '[^' differently with it */
    }
    size_t n = 0;
    size_t used = make_tensors(data, size, &n);
    static const char *const env[] = {"MODEL_DIR", "MODEL_GGUF"};
    nf_recipe_options opt = {.allow_env = env, .nallow_env = 2};
    nf_recipe *r = NULL;
    nf_error err;
    nf_error_clear(&err);
    nf_status st = nf_recipe_parse_ex((const char *)data + used, size - used, "fuzz.yaml", "/nonexistent/ninfer-fuzz",
                                      &opt, &r, &err);
    fz_note("nf_recipe_parse_ex", st == NF_OK, err.message);
    if (st != NF_OK) {
        fz_consume_str(err.message);
        return 0;
    }
    check_matchers(r, n);
    size_t nsel = 0;
    for (size_t i = 0; i < r->nrules; i++) nsel += r->rules[i].nmatch;

    nf_recipe_resolve_work work;
    st = nf_recipe_resolve_ex(r, tensors, n, choices, NULL, &work, &err);
    fz_note("nf_recipe_resolve_ex", st == NF_OK, err.message);
    if (work.pairs > (uint64_t)nsel * n) abort();
    if (st == NF_OK) {
        for (size_t i = 0; i < n; i++) {
            if (!choices[i].method || (!choices[i].skip && !choices[i].format)) abort();
            fz_consume_str(choices[i].format);
            fz_consume_str(choices[i].method);
        }
        nf_recipe_resolve_work w2;
        if (nf_recipe_resolve_ex(r, tensors, n, again, NULL, &w2, &err) != NF_OK) abort();
        if (w2.steps != work.steps || w2.pairs != work.pairs) abort();
        for (size_t i = 0; i < n; i++)
            if (again[i].format != choices[i].format || again[i].method != choices[i].method ||
                again[i].skip != choices[i].skip || again[i].rule != choices[i].rule)
                abort();
        /* a cap just below the work done is crossed, and says so */
        if (work.steps > 1) {
            nf_recipe_resolve_limits lim = {0, work.steps - 1};
            if (nf_recipe_resolve_ex(r, tensors, n, again, &lim, &w2, &err) != NF_ERR_INVALID) abort();
            if (!strstr(err.message, "steps")) abort();
        }
        if (work.pairs > 1) {
            nf_recipe_resolve_limits lim = {work.pairs - 1, 0};
            if (nf_recipe_resolve_ex(r, tensors, n, again, &lim, &w2, &err) != NF_ERR_INVALID) abort();
            if (!strstr(err.message, "tensor names") || w2.steps != 0) abort();
        }
    } else {
        fz_consume_str(err.message);
    }
    nf_recipe_free(r);
    return 0;
}
