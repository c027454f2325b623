/* What an "re:" selector must be before the resolver's matcher compiles it (recipe_internal.h):
 * within the bounds nf_recipe_regex_too_complex counts in one pass (findings R1, R1b and R1c of
 * docs/security.md: set when glibc's regcomp compiled every selector, and kept, so that a recipe
 * is accepted or refused as it was), and a POSIX extended regular expression as glibc reads one
 * (nf_recipe_regex_syntax_error, below), so that the C library compiles no selector at all. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "recipe/recipe_internal.h"

/* Limits on "re:" selectors.  glibc's regcomp expands bounded repetitions by copying, so a
 * pattern like ((a{1,255}){1,255}){1,255} or a run of stacked operators made it use gigabytes
 * and minutes when it compiled selectors: a recipe must not be able to do that.  Tensor-name
 * patterns need none of it, and the limits stay what a recipe may hold. */
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

/* ---------------------------------------------------------------- POSIX syntax
 * Which patterns are not POSIX extended regular expressions, decided as the C library's regcomp
 * (glibc, REG_EXTENDED, the C locale) decides it and worded as its regerror words it: the parser
 * refused these with glibc's message when it had glibc compile every selector as a check, and
 * refuses the same patterns with the same messages now that the resolver's own matcher
 * (match.c) is the only compiler (docs/recipes.md, "How rules apply").  Every pattern reaches
 * this after nf_recipe_regex_too_complex, so back-references and bounds above 64 are already
 * refused.  The grammar, as glibc reads an ERE:
 *
 *   - outside brackets, '\' makes the next byte literal, except \1-\9 (back-references) and
 *     GNU's \< \> \b \B \` \' (anchors) and \w \W \s \S (classes); a '\' at the end is an error;
 *   - '^' and '$' are anchors anywhere, and nothing may repeat an anchor;
 *   - '*', '+', '?' and '{' repeat the expression before them; with none before (the start, after
 *     '(' or '|', after an anchor) they are an error;
 *   - an unmatched ')' and every '}' are literals; an unmatched '(' is an error;
 *   - {m}, {m,}, {,n}, {m,n}: decimal bounds, m <= n; a bound the text ends in is "unmatched";
 *   - brackets: a first ']' is literal, '\' is literal, [:class:], [=x=] and [.x.] take one
 *     character (or a class name) of at most 31 bytes, ranges go up by byte value, may not start
 *     or end in a class, and a '-' is a range's or the last character. */
#define RE_DUP_MAX_GLIBC 0x7fff /* (RE_DUP_MAX of <regex.h>) */

static const char *const SYN_BADPAT = "Invalid regular expression";
static const char *const SYN_ECOLLATE = "Invalid collation character";
static const char *const SYN_ECTYPE = "Invalid character class name";
static const char *const SYN_EESCAPE = "Trailing backslash";
static const char *const SYN_ESUBREG = "Invalid back reference";
static const char *const SYN_EBRACK = "Unmatched [, [^, [:, [., or [=";
static const char *const SYN_EPAREN = "Unmatched ( or \\(";
static const char *const SYN_EBRACE = "Unmatched \\{";
static const char *const SYN_BADBR = "Invalid content of \\{\\}";
static const char *const SYN_ERANGE = "Invalid range end";
static const char *const SYN_ESIZE = "Regular expression too big";
static const char *const SYN_BADRPT = "Invalid preceding regular expression";

enum {
    T_END,
    T_CHAR,
    T_ALT,
    T_REPEAT,
    T_LBRACE,
    T_RBRACE,
    T_LPAREN,
    T_RPAREN,
    T_BRACKET,
    T_ANCHOR,
    T_BACKREF,
    T_BACKSLASH
};

/* The pattern and its current token: [p, p + len), of kind tok, standing for byte c. */
typedef struct syn {
    const char *p, *end;
    int tok;
    unsigned char c;
    size_t len;
} syn;

static void syn_peek(syn *s)
{
    s->len = 1;
    if (s->p >= s->end) {
        s->tok = T_END;
        s->len = 0;
        return;
    }
    unsigned char c = (unsigned char)*s->p;
    s->c = c;
    if (c == '\\') {
        if (s->p + 1 >= s->end) {
            s->tok = T_BACKSLASH;
            return;
        }
        c = (unsigned char)s->p[1];
        s->c = c;
        s->len = 2;
        s->tok = c >= '1' && c <= '9' ? T_BACKREF : memchr("<>bB`'", c, 6) ? T_ANCHOR : T_CHAR;
        return;
    }
    switch (c) {
    case '|': s->tok = T_ALT; break;
    case '*':
    case '+':
    case '?': s->tok = T_REPEAT; break;
    case '{': s->tok = T_LBRACE; break;
    case '}': s->tok = T_RBRACE; break;
    case '(': s->tok = T_LPAREN; break;
    case ')': s->tok = T_RPAREN; break;
    case '[': s->tok = T_BRACKET; break;
    case '^':
    case '$': s->tok = T_ANCHOR; break;
    default: s->tok = T_CHAR; break;
    }
}

static void syn_next(syn *s)
{
    s->p += s->len;
    syn_peek(s);
}

/* One bound of {m,n}: the number before the next '}' or ',' (-1: none; -2: not a number, or the
 * text ends first -- then s->tok is T_END). */
static long syn_number(syn *s)
{
    long num = -1;
    for (;;) {
        syn_next(s);
        if (s->tok == T_END) return -2;
        if (s->tok == T_RBRACE || s->c == ',') return num;
        if (s->tok != T_CHAR || s->c < '0' || s->c > '9' || num == -2) {
            num = -2;
        } else {
            num = (num < 0 ? 0 : num * 10) + (s->c - '0');
            if (num > RE_DUP_MAX_GLIBC) num = RE_DUP_MAX_GLIBC + 1; /* (saturates: no overflow) */
        }
    }
}

/* A bound whose '{' is the current token; leaves its '}' current. */
static const char *syn_bound(syn *s)
{
    long lo = syn_number(s), hi = 0;
    if (lo == -1) {
        if (s->tok != T_CHAR || s->c != ',') return SYN_BADBR; /* {} */
        lo = 0;                                                /* {,n} */
    }
    if (lo != -2) hi = s->tok == T_RBRACE ? lo : s->tok == T_CHAR && s->c == ',' ? syn_number(s) : -2;
    if (lo == -2 || hi == -2) return s->tok == T_END ? SYN_EBRACE : SYN_BADBR;
    if ((hi != -1 && lo > hi) || s->tok != T_RBRACE) return SYN_BADBR;
    if ((hi == -1 ? lo : hi) > RE_DUP_MAX_GLIBC) return SYN_ESIZE;
    return NULL;
}

/* ---- bracket expressions */
enum { B_END, B_CHAR, B_RANGE, B_CLOSE, B_NOT, B_COLL, B_EQUIV, B_CLASS };

typedef struct btok {
    int type;
    unsigned char c; /* the byte; for [. [= [: the delimiter */
    size_t len;
} btok;

static btok syn_bpeek(const char *q, const char *end)
{
    if (q >= end) return (btok){B_END, 0, 0};
    unsigned char c = (unsigned char)*q;
    if (c == '[' && q + 1 < end && (q[1] == '.' || q[1] == '=' || q[1] == ':'))
        return (btok){q[1] == '.' ? B_COLL : q[1] == '=' ? B_EQUIV : B_CLASS, (unsigned char)q[1], 2};
    return (btok){c == '-' ? B_RANGE : c == ']' ? B_CLOSE : c == '^' ? B_NOT : B_CHAR, c, 1};
}

#define SYN_NAME_MAX 32 /* the name of [:class:], [=x=], [.x.], its NUL included */

typedef struct belem {
    int type; /* B_CHAR, B_COLL, B_EQUIV or B_CLASS */
    unsigned char c;
    char name[SYN_NAME_MAX];
} belem;

/* The element that token t (at *q) begins; *q moves past it.  A '-' that is neither a range's
 * first character (first) nor the last before ']' is an error. */
static const char *syn_belem(const char **q, const char *end, btok t, bool first, belem *e)
{
    *q += t.len;
    if (t.type == B_COLL || t.type == B_EQUIV || t.type == B_CLASS) {
        if (*q >= end) return SYN_EBRACK;
        for (size_t i = 0;; i++) {
            if (i >= SYN_NAME_MAX) return SYN_EBRACK;
            char ch = *(*q)++;
            if (*q >= end) return SYN_EBRACK;
            if ((unsigned char)ch == t.c && **q == ']') {
                e->name[i] = '\0';
                break;
            }
            e->name[i] = ch;
        }
        ++*q;
        e->type = t.type;
        return NULL;
    }
    if (t.type == B_RANGE && !first && syn_bpeek(*q, end).type != B_CLOSE) return SYN_ERANGE;
    e->type = B_CHAR;
    e->c = t.c;
    return NULL;
}

/* An element's place in the collating order of the C locale (its byte), -1 when it has none. */
static int syn_collseq(const belem *e)
{
    if (e->type == B_CHAR) return e->c;
    if (e->type == B_COLL && strlen(e->name) == 1) return (unsigned char)e->name[0];
    return -1;
}

static const char *syn_range(const belem *a, const belem *b)
{
    if (a->type == B_EQUIV || a->type == B_CLASS || b->type == B_EQUIV || b->type == B_CLASS) return SYN_ERANGE;
    int lo = syn_collseq(a), hi = syn_collseq(b);
    if (lo < 0 || hi < 0) return SYN_ECOLLATE;
    return lo > hi ? SYN_ERANGE : NULL;
}

static const char *syn_single(const belem *e)
{
    static const char *const classes[] = {"alpha", "upper", "lower", "alnum", "cntrl",  "space",
                                          "digit", "print", "punct", "graph", "xdigit", "blank"};
    if (e->type == B_COLL || e->type == B_EQUIV) return strlen(e->name) == 1 ? NULL : SYN_ECOLLATE;
    if (e->type != B_CLASS) return NULL;
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
        if (strcmp(e->name, classes[i]) == 0) return NULL;
    return SYN_ECTYPE;
}

/* A bracket expression whose '[' is the current token; leaves s just past its ']' (no token). */
static const char *syn_bracket(syn *s)
{
    const char *q = s->p + 1, *end = s->end, *why;
    btok t = syn_bpeek(q, end);
    if (t.type == B_NOT) {
        q += t.len;
        t = syn_bpeek(q, end);
    }
    if (t.type == B_END) return SYN_BADPAT;
    if (t.type == B_CLOSE) t.type = B_CHAR; /* a first ']' is literal */
    for (bool first = true;; first = false) {
        belem a, b;
        if ((why = syn_belem(&q, end, t, first, &a))) return why;
        t = syn_bpeek(q, end);
        btok t2 = {B_END, 0, 0};
        bool range = false;
        if (a.type != B_CLASS && a.type != B_EQUIV) {
            if (t.type == B_END) return SYN_EBRACK;
            if (t.type == B_RANGE) {
                t2 = syn_bpeek(q + t.len, end);
                if (t2.type == B_END) return SYN_EBRACK;
                if (t2.type == B_CLOSE) {
                    t.type = B_CHAR; /* a '-' before the ']' is literal */
                } else {
                    q += t.len;
                    range = true;
                }
            }
        }
        if (range) {
            if ((why = syn_belem(&q, end, t2, true, &b))) return why;
            t = syn_bpeek(q, end);
            why = syn_range(&a, &b);
        } else {
            why = syn_single(&a);
        }
        if (why) return why;
        if (t.type == B_END) return SYN_EBRACK;
        if (t.type == B_CLOSE) break;
    }
    s->p = q + 1;
    s->len = 0;
    return NULL;
}

/* ---- expressions */
static const char *syn_alt(syn *s, int nest);

/* A group whose '(' is the current token; leaves its ')' current. */
static const char *syn_group(syn *s, int nest)
{
    syn_next(s);
    if (s->tok == T_RPAREN) return NULL;
    const char *why = syn_alt(s, nest);
    if (!why && s->tok != T_RPAREN) why = SYN_EPAREN;
    return why;
}

/* One expression and the repetitions after it. */
static const char *syn_expr(syn *s, int nest)
{
    const char *why = NULL;
    switch (s->tok) {
    case T_LPAREN: why = syn_group(s, nest + 1); break;
    case T_BRACKET: why = syn_bracket(s); break;
    case T_ANCHOR: syn_next(s); return NULL; /* nothing repeats an anchor */
    case T_REPEAT:
    case T_LBRACE: return SYN_BADRPT;
    case T_ALT:
    case T_END: return NULL;
    case T_BACKSLASH: return SYN_EESCAPE;
    case T_BACKREF: return SYN_ESUBREG; /* (nf_recipe_regex_too_complex refuses them first) */
    default: break;                     /* a character, '.', '}', an unmatched ')' */
    }
    if (why) return why;
    syn_next(s);
    while (s->tok == T_REPEAT || s->tok == T_LBRACE) {
        if (s->tok == T_LBRACE && (why = syn_bound(s))) return why;
        syn_next(s);
    }
    return NULL;
}

static bool syn_branch_goes_on(const syn *s, int nest)
{
    return s->tok != T_ALT && s->tok != T_END && (nest == 0 || s->tok != T_RPAREN);
}

static const char *syn_branch(syn *s, int nest)
{
    const char *why = syn_expr(s, nest);
    while (!why && syn_branch_goes_on(s, nest)) why = syn_expr(s, nest);
    return why;
}

static const char *syn_alt(syn *s, int nest)
{
    const char *why = syn_branch(s, nest);
    while (!why && s->tok == T_ALT) {
        syn_next(s);
        if (syn_branch_goes_on(s, nest)) why = syn_branch(s, nest);
    }
    return why;
}

const char *nf_recipe_regex_syntax_error(const char *pattern)
{
    syn s = {pattern, pattern + strlen(pattern), T_END, 0, 0};
    syn_peek(&s);
    return syn_alt(&s, 0);
}
