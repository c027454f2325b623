/* The guard on "re:" selectors before the C library compiles them (recipe_internal.h,
 * nf_recipe_regex_too_complex): what glibc's regcomp would pay for a pattern, bounded by counts
 * the parser can check in one pass (findings R1, R1b and R1c of docs/security.md). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "recipe/recipe_internal.h"

/* Limits on "re:" selectors.  glibc's regcomp expands bounded repetitions by copying, so a
 * pattern like ((a{1,255}){1,255}){1,255} or a run of stacked operators makes it use gigabytes
 * and minutes: a recipe must not be able to do that.  Tensor-name patterns need none of it. */
#define RECIPE_RE_MAX_BYTES 256u
#define RECIPE_RE_MAX_OPERATORS 32u
#define RECIPE_RE_MAX_BOUND 64ul
#define RECIPE_RE_MAX_BOUNDED 2u

/* glibc's regcomp also copies the operand of '+' (X+ becomes X X*) and of {m,n} (m to n copies),
 * so nesting multiplies: ((((a)+)+)+)... with 24 groups passes every count above and still takes
 * gigabytes.  Estimate the size of the compiled tree instead -- one node per atom, a group is its
 * content plus one, '+' doubles its operand, {m,n} multiplies it by max(m,n) -- and refuse a
 * pattern above RECIPE_RE_MAX_NODES.  The estimate saturates, so it cannot overflow.
 *
 * A repeated operand that can match the empty string -- (()+)+, (a*)+, (a|)* -- makes regcomp's
 * epsilon-closure computation explode instead (a 60-byte pattern of nested ()+ ran for over 20 s
 * in calc_eclosure_iter: docs/security.md 7, R1c).  Tensor names never need one: refuse it. */
#define RECIPE_RE_MAX_NODES 4096ul

typedef struct {
    unsigned long total; /* nodes of this group level so far */
    unsigned long last;  /* nodes of the last operand (what a following operator repeats) */
    bool alt_null;       /* some finished alternative of this group matches the empty string */
    bool prefix_null;    /* the current alternative before its last operand matches "" */
    bool last_null;      /* the last operand matches "" */
} re_level;

static const re_level re_level_start = {0, 0, false, true, true};

static unsigned long re_sat_add(unsigned long a, unsigned long b)
{
    unsigned long s = a + b;
    return s > RECIPE_RE_MAX_NODES ? RECIPE_RE_MAX_NODES + 1 : s;
}

static unsigned long re_sat_mul(unsigned long a, unsigned long b)
{
    if (a != 0 && b > (RECIPE_RE_MAX_NODES + 1) / a) return RECIPE_RE_MAX_NODES + 1;
    return re_sat_add(a * b, 0);
}

/* Skips a bracket expression starting at '[': returns its closing ']' (or the last character). */
static const char *re_skip_bracket(const char *c)
{
    c++;
    if (*c == '^') c++;
    if (*c == ']') c++;
    while (*c && *c != ']') {
        if (*c == '[' && (c[1] == ':' || c[1] == '=' || c[1] == '.')) {
            char close = c[1];
            const char *e = c + 2;
            while (*e && !(e[0] == close && e[1] == ']')) e++;
            c = *e ? e + 2 : e;
            continue;
        }
        c++;
    }
    return *c ? c : c - 1;
}

/* A new operand of `nodes` nodes follows in level l. */
static void re_operand(re_level *l, unsigned long nodes, bool nullable)
{
    l->prefix_null = l->prefix_null && l->last_null;
    l->total = re_sat_add(l->total, nodes);
    l->last = nodes;
    l->last_null = nullable;
}

/* Why the compiled form of pattern would be too costly (see above), or NULL. */
static const char *regex_compile_cost(const char *pattern)
{
    static const char *const nullable_repeat = "repeats a group that can match the empty string";
    re_level st[RECIPE_RE_MAX_BYTES + 2];
    size_t depth = 0;
    st[0] = re_level_start;
    bool have_operand = false; /* an operator here applies to a real operand */
    for (const char *c = pattern; *c; c++) {
        re_level *l = &st[depth];
        switch (*c) {
        case '\\':
            if (c[1]) c++;
            re_operand(l, 1, false);
            have_operand = true;
            continue;
        case '[':
            c = re_skip_bracket(c);
            re_operand(l, 1, false);
            have_operand = true;
            continue;
        case '(':
            if (depth + 1 < sizeof st / sizeof st[0]) {
                st[++depth] = re_level_start;
                have_operand = false;
                continue;
            }
            re_operand(l, 1, false);
            have_operand = true;
            continue;
        case ')':
            if (depth > 0) {
                const re_level *in = &st[depth];
                bool null = in->alt_null || (in->prefix_null && in->last_null);
                unsigned long nodes = re_sat_add(in->total, 1);
                depth--;
                re_operand(&st[depth], nodes, null);
            } else {
                re_operand(l, 1, false); /* an unmatched ')' is a literal */
            }
            have_operand = true;
            continue;
        case '|':
            l->alt_null = l->alt_null || (l->prefix_null && l->last_null);
            l->total = re_sat_add(l->total, 1);
            l->last = 0;
            l->prefix_null = true;
            l->last_null = true;
            have_operand = false;
            continue;
        case '*':
        case '?':
        case '+':
        case '{': {
            if (have_operand && l->last_null) return nullable_repeat;
            unsigned long k = 2; /* '+': the operand twice */
            bool zero_min = *c != '+';
            if (*c == '{') {
                k = 1;
                const char *q = c + 1;
                bool first = true;
                while (*q && *q != '}') {
                    if (*q >= '0' && *q <= '9') {
                        char *end;
                        unsigned long v = strtoul(q, &end, 10);
                        if (v > RECIPE_RE_MAX_NODES) v = RECIPE_RE_MAX_NODES;
                        if (first && v > 0) zero_min = false;
                        if (v + 1 > k) k = v + 1; /* {m,} is m copies and a star */
                        first = false;
                        q = end;
                    } else {
                        q++;
                    }
                }
                c = *q ? q : q - 1;
            } else if (*c != '+') {
                k = 1;
            }
            unsigned long grown = re_sat_mul(l->last, k);
            l->total = re_sat_add(l->total, re_sat_add(grown - (grown >= l->last ? l->last : 0), 1));
            l->last = re_sat_add(grown, 1);
            if (zero_min) l->last_null = true;
            continue;
        }
        default:
            re_operand(l, 1, false);
            have_operand = true;
            continue;
        }
    }
    unsigned long nodes = 0;
    for (size_t i = 0; i <= depth; i++) nodes = re_sat_add(nodes, st[i].total);
    if (nodes > RECIPE_RE_MAX_NODES) return "would compile too large (nested '+' or {n,m} repetitions)";
    return NULL;
}

const char *nf_recipe_regex_too_complex(const char *pattern)
{
    if (strlen(pattern) > RECIPE_RE_MAX_BYTES) return "longer than 256 bytes";
    unsigned operators = 0, bounded = 0;
    bool after_operator = false;
    for (const char *c = pattern; *c; c++) {
        if (*c == '\\' && c[1]) {
            /* the resolver anchors a pattern as ^(PATTERN)$, which renumbers groups */
            if (c[1] >= '1' && c[1] <= '9') return "uses a back-reference";
            c++;
            after_operator = false;
            continue;
        }
        bool op = *c == '*' || *c == '+' || *c == '?' || *c == '{';
        if (op && after_operator) return "has stacked repetition operators";
        if (op && ++operators > RECIPE_RE_MAX_OPERATORS) return "has more than 32 repetition operators";
        if (*c == '{') {
            if (++bounded > RECIPE_RE_MAX_BOUNDED) return "has more than 2 bounded repetitions {n,m}";
            const char *q = c + 1;
            while (*q && *q != '}') {
                if (*q >= '0' && *q <= '9') {
                    char *end;
                    unsigned long v = strtoul(q, &end, 10);
                    if (v > RECIPE_RE_MAX_BOUND) return "has a repetition bound above 64";
                    q = end;
                } else {
                    q++;
                }
            }
            c = *q ? q : q - 1;
        }
        after_operator = op;
    }
    return regex_compile_cost(pattern);
}
