/* Selector matchers whose cost is counted (docs/recipes.md, "How rules apply"; docs/security.md 7.1, F9).
 *
 * Resolution used fnmatch and the C library's regexec, whose cost nothing bounded: one selector
 * such as "re:.*a.{60}x" kept glibc's regexec busy for minutes on 20,000 names of 1,000 bytes
 * (its lazily built DFA grows a new state at almost every byte), and a recipe of 150,000 globs
 * against 20,000 tensors took 41 s.  Both matchers here do a known amount of work per name and
 * add it to a step counter, which the resolver caps:
 *
 *   - globs (fnmatch(3) with no flags, in the C locale: `*`, `?`, `[...]` with `!`/`^`, ranges
 *     and escapes, `\x`) are matched left to right, returning to the last `*` on a mismatch: at
 *     most (pattern length + 1) x (name length + 1) steps.  A glob holding a character class,
 *     equivalence class or collating symbol (`[:`, `[=`, `[.`) is handed to fnmatch itself and
 *     charged that worst case;
 *   - "re:" patterns are compiled here into a Thompson NFA (the POSIX ERE subset a tensor name
 *     needs: literals, `.`, bracket expressions with classes, groups, `|`, `*`, `+`, `?`,
 *     `{m,n}`, `^`, `$`, escaped punctuation) and simulated on the set of live states: at most
 *     (states) x (name length + 1) steps, whatever the pattern.  Matching is membership only
 *     (the selector must match the whole name), so no submatch rule of POSIX is involved and the
 *     NFA answers exactly what regexec would; tests/unit/test_recipe_match.c and the fuzz
 *     target recipe_resolve compare the two.
 *
 * Bytes are unsigned and compared by value, as the C locale does. */
#include <ctype.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "recipe/recipe_internal.h"

/* ---------------------------------------------------------------- byte sets */
typedef struct byteset {
    uint32_t w[8];
} byteset;

static void set_add(byteset *s, unsigned c) { s->w[c >> 5] |= 1u << (c & 31); }
static bool set_has(const byteset *s, unsigned c) { return (s->w[c >> 5] >> (c & 31)) & 1u; }

static void set_range(byteset *s, unsigned lo, unsigned hi)
{
    for (unsigned c = lo; c <= hi && c < 256; c++) set_add(s, c);
}

static void set_invert(byteset *s)
{
    for (int i = 0; i < 8; i++) s->w[i] = ~s->w[i];
    s->w[0] &= ~1u; /* NUL never occurs in a name */
}

/* The twelve POSIX classes, in the C locale; false for an unknown name. */
static bool set_class(byteset *s, const char *name, size_t len)
{
    static const char *const names[] = {"alnum", "alpha", "blank", "cntrl", "digit", "graph",
                                        "lower", "print", "punct", "space", "upper", "xdigit"};
    int k = -1;
    for (int i = 0; i < 12; i++)
        if (strlen(names[i]) == len && memcmp(names[i], name, len) == 0) k = i;
    if (k < 0) return false;
    for (unsigned c = 1; c < 128; c++) {
        int ci = (int)c;
        bool in = false;
        switch (k) {
        case 0: in = isalnum(ci); break;
        case 1: in = isalpha(ci); break;
        case 2: in = ci == ' ' || ci == '\t'; break;
        case 3: in = iscntrl(ci); break;
        case 4: in = isdigit(ci); break;
        case 5: in = isgraph(ci); break;
        case 6: in = islower(ci); break;
        case 7: in = isprint(ci); break;
        case 8: in = ispunct(ci); break;
        case 9: in = isspace(ci); break;
        case 10: in = isupper(ci); break;
        case 11: in = isxdigit(ci); break;
        }
        if (in) set_add(s, c);
    }
    return true;
}

/* ---------------------------------------------------------------- globs */
bool nf_recipe_glob_needs_fnmatch(const char *pattern)
{
    return strstr(pattern, "[:") || strstr(pattern, "[=") || strstr(pattern, "[.");
}

size_t nf_recipe_glob_prefix_len(const char *pattern) { return strcspn(pattern, "*?[\\"); }

/* The token at p (p < pe) against byte c: 1 matches, 0 does not, -1 never matches anything
 * (a trailing backslash, also inside a bracket: fnmatch answers FNM_NOMATCH).  *len gets the
 * token's length; *steps grows by the bytes examined. */
static int glob_token(const char *p, const char *pe, unsigned char c, size_t *len, uint64_t *steps)
{
    switch (*p) {
    case '?': *len = 1; return 1;
    case '\\':
        if (p + 1 == pe) return -1;
        *len = 2;
        return (unsigned char)p[1] == c;
    case '[': break;
    default: *len = 1; return (unsigned char)*p == c;
    }
    const char *q = p + 1;
    bool neg = q < pe && (*q == '!' || *q == '^');
    if (neg) q++;
    bool first = true, hit = false;
    for (;;) {
        if (q == pe) { /* unterminated: '[' is an ordinary character */
            *len = 1;
            *steps += (uint64_t)(q - p);
            return c == '[';
        }
        unsigned lo = (unsigned char)*q;
        if (lo == ']' && !first) {
            q++;
            break;
        }
        first = false;
        if (lo == '\\') {
            if (q + 1 == pe) return -1;
            lo = (unsigned char)q[1];
            q += 2;
        } else {
            q++;
        }
        unsigned hi = lo;
        if (q + 1 == pe && *q == '-') return -1; /* a range without its end: fnmatch's FNM_NOMATCH */
        if (q + 1 < pe && *q == '-' && q[1] != ']') {
            q++;
            hi = (unsigned char)*q;
            if (hi == '\\') {
                if (q + 1 == pe) return -1;
                hi = (unsigned char)q[1];
                q += 2;
            } else {
                q++;
            }
        }
        if (c >= lo && c <= hi) hit = true;
    }
    *len = (size_t)(q - p);
    *steps += *len;
    return hit != neg;
}

/* The last '*' of a glob that is a wildcard (not inside a bracket expression or escaped); NULL
 * when there is none or the pattern holds a token that never matches. */
static const char *glob_last_star(const char *p, const char *pe)
{
    const char *last = NULL;
    uint64_t ignored = 0;
    while (p < pe) {
        size_t len = 1;
        if (*p == '*') last = p;
        else if ((*p == '[' || *p == '\\') && glob_token(p, pe, 0, &len, &ignored) < 0) return NULL;
        p += len;
    }
    return last;
}

bool nf_recipe_glob_match(const char *pattern, const char *name, uint64_t *steps)
{
    size_t plen = strlen(pattern), n = strlen(name);
    if (nf_recipe_glob_needs_fnmatch(pattern)) {
        /* fnmatch walks the pattern once per name position at worst */
        *steps += ((uint64_t)plen + 1) * ((uint64_t)n + 1);
        return fnmatch(pattern, name, 0) == 0;
    }
    const char *p = pattern, *pe = pattern + plen, *s = name, *se = name + n;
    const char *star = NULL, *star_s = NULL;
    /* "A*TAIL" with a literal TAIL matches exactly the names that end with TAIL and whose rest
     * matches "A*": the tail is compared once instead of at every position ("*.weight"). */
    const char *last = glob_last_star(pattern, pe);
    if (last && !memchr(last, '?', (size_t)(pe - last)) && !memchr(last, '[', (size_t)(pe - last)) &&
        !memchr(last, '\\', (size_t)(pe - last))) {
        size_t tail = (size_t)(pe - last - 1);
        *steps += tail + 1;
        if (tail > n || memcmp(se - tail, last + 1, tail) != 0) return false;
        pe = last + 1;
        se -= tail;
    }
    while (s < se) {
        ++*steps;
        if (p < pe && *p == '*') {
            while (p < pe && *p == '*') p++;
            if (p == pe) return true;
            star = p;
            star_s = s;
            continue;
        }
        if (p < pe) {
            size_t len = 1;
            int r = glob_token(p, pe, (unsigned char)*s, &len, steps);
            if (r < 0) return false;
            if (r) {
                p += len;
                s++;
                continue;
            }
        }
        if (!star) return false;
        p = star;
        s = ++star_s;
    }
    while (p < pe && *p == '*') p++;
    return p == pe;
}

/* ---------------------------------------------------------------- regular expressions: syntax */
enum { RN_SET, RN_BOL, RN_EOL, RN_EMPTY, RN_CAT, RN_ALT, RN_REP };

typedef struct rnode {
    int kind;
    int set;         /* RN_SET */
    int child, next; /* first child (CAT, ALT, REP) and next sibling, -1 none */
    int min, max;    /* RN_REP; max -1: unbounded */
} rnode;

#define RE_MAX_AST 1024

typedef struct rparser {
    const char *p, *end, *start;
    rnode nodes[RE_MAX_AST];
    int nnodes;
    byteset *sets;
    int nsets, set_cap;
    const char *why;
} rparser;

static int rnew(rparser *ps, int kind)
{
    if (ps->nnodes == RE_MAX_AST) {
        ps->why = "is too long to compile";
        return -1;
    }
    rnode *nd = &ps->nodes[ps->nnodes];
    *nd = (rnode){kind, -1, -1, -1, 0, 0};
    return ps->nnodes++;
}

static int rnew_set(rparser *ps, byteset **out)
{
    if (ps->nsets == ps->set_cap) {
        int cap = ps->set_cap ? ps->set_cap * 2 : 16;
        byteset *s = realloc(ps->sets, (size_t)cap * sizeof *s);
        if (!s) {
            ps->why = "cannot be compiled: out of memory";
            return -1;
        }
        ps->sets = s;
        ps->set_cap = cap;
    }
    int id = rnew(ps, RN_SET);
    if (id < 0) return -1;
    ps->nodes[id].set = ps->nsets;
    *out = &ps->sets[ps->nsets++];
    memset(*out, 0, sizeof **out);
    return id;
}

/* A bracket expression after its '[' (ERE: a backslash is an ordinary character inside). */
static int rbracket(rparser *ps)
{
    byteset *s = NULL;
    int id = rnew_set(ps, &s);
    if (id < 0) return -1;
    bool neg = ps->p < ps->end && *ps->p == '^';
    if (neg) ps->p++;
    bool first = true;
    for (;;) {
        if (ps->p >= ps->end) {
            ps->why = "has an unterminated bracket expression";
            return -1;
        }
        unsigned lo = (unsigned char)*ps->p;
        if (lo == ']' && !first) {
            ps->p++;
            break;
        }
        first = false;
        if (lo == '[' && ps->p + 1 < ps->end && ps->p[1] == ':') {
            const char *name = ps->p + 2, *close = name;
            while (close + 1 < ps->end && !(close[0] == ':' && close[1] == ']')) close++;
            if (close + 1 >= ps->end || !set_class(s, name, (size_t)(close - name))) {
                ps->why = "has an unknown character class";
                return -1;
            }
            ps->p = close + 2;
            continue;
        }
        if (lo == '[' && ps->p + 1 < ps->end && (ps->p[1] == '=' || ps->p[1] == '.')) {
            ps->why = "uses an equivalence class or collating symbol ([= or [.), which selectors do not support";
            return -1;
        }
        ps->p++;
        unsigned hi = lo;
        if (ps->p + 1 < ps->end && *ps->p == '-' && ps->p[1] != ']') {
            hi = (unsigned char)ps->p[1];
            if (hi == '[') {
                ps->why = "has a range ending in a bracket item, which selectors do not support";
                return -1;
            }
            ps->p += 2;
            if (hi < lo) {
                ps->why = "has a range whose end is before its start";
                return -1;
            }
        }
        set_range(s, lo, hi);
    }
    if (neg) set_invert(s);
    return id;
}

static int ralt(rparser *ps, int depth);

static int ratom(rparser *ps, int depth)
{
    char c = *ps->p++;
    byteset *s = NULL;
    int id;
    switch (c) {
    case '(': {
        if (ps->p < ps->end && *ps->p == ')') {
            ps->p++;
            return rnew(ps, RN_EMPTY);
        }
        id = ralt(ps, depth + 1);
        if (id < 0) return -1;
        if (ps->p >= ps->end || *ps->p != ')') {
            ps->why = "has an unmatched '('";
            return -1;
        }
        ps->p++;
        return id;
    }
    case '[': return rbracket(ps);
    case '.':
        if ((id = rnew_set(ps, &s)) < 0) return -1;
        set_range(s, 1, 255);
        return id;
    /* An anchor anywhere else says nothing a whole-name match needs, and glibc's regexec gets
     * one inside a repetition wrong ("(a|$b){0,2}" matches "ab"): refused. */
    case '^':
        if (ps->p - 1 != ps->start) {
            ps->why = "uses '^' other than at its start";
            return -1;
        }
        return rnew(ps, RN_BOL);
    case '$':
        if (ps->p != ps->end) {
            ps->why = "uses '$' other than at its end";
            return -1;
        }
        return rnew(ps, RN_EOL);
    case '\\':
        if (ps->p >= ps->end) {
            ps->why = "ends with a backslash";
            return -1;
        }
        c = *ps->p++;
        if (isalnum((unsigned char)c)) {
            ps->why = "uses a backslash before a letter or digit (\\w, \\1, ...), which selectors do not support";
            return -1;
        }
        /* glibc reads these four as anchors (word and buffer boundaries), not as the character:
         * found by fuzz_recipe_resolve (tests/fuzz/regressions/recipe_resolve) */
        if (strchr("<>`'", c)) {
            ps->why = "uses a GNU anchor (\\<, \\>, \\` or \\'), which selectors do not support";
            return -1;
        }
        break;
    case ')': ps->why = "has an unmatched ')'"; return -1;
    case '*':
    case '+':
    case '?':
    case '{': ps->why = "has a repetition operator with nothing to repeat"; return -1;
    default: break;
    }
    if ((id = rnew_set(ps, &s)) < 0) return -1;
    set_add(s, (unsigned char)c);
    return id;
}

/* {m}, {m,}, {m,n}, {,n} after the '{'; bounds are small (the parser caps them at 64). */
static bool rbound(rparser *ps, int *min, int *max)
{
    long v[2] = {-1, -1};
    int k = 0;
    while (ps->p < ps->end && *ps->p != '}') {
        char c = *ps->p++;
        if (c == ',' && k == 0) {
            k = 1;
        } else if (c >= '0' && c <= '9') {
            if (v[k] < 0) v[k] = 0;
            v[k] = v[k] * 10 + (c - '0');
            if (v[k] > 4096) return false;
        } else {
            return false;
        }
    }
    if (ps->p >= ps->end) return false;
    ps->p++;
    if (k == 0) {
        if (v[0] < 0) return false;
        *min = *max = (int)v[0];
    } else {
        *min = v[0] < 0 ? 0 : (int)v[0];
        *max = v[1] < 0 ? -1 : (int)v[1];
        if (*max >= 0 && *max < *min) return false;
    }
    return true;
}

static int rrepeat(rparser *ps, int depth)
{
    int id = ratom(ps, depth);
    while (id >= 0 && ps->p < ps->end && strchr("*+?{", *ps->p)) {
        char op = *ps->p++;
        int min = 0, max = -1;
        if (op == '+') min = 1;
        else if (op == '?') max = 1;
        else if (op == '{' && !rbound(ps, &min, &max)) {
            ps->why = "has a malformed bound {m,n}";
            return -1;
        }
        int r = rnew(ps, RN_REP);
        if (r < 0) return -1;
        ps->nodes[r].child = id;
        ps->nodes[r].min = min;
        ps->nodes[r].max = max;
        id = r;
    }
    return id;
}

static int rconcat(rparser *ps, int depth)
{
    int cat = rnew(ps, RN_CAT), last = -1;
    if (cat < 0) return -1;
    while (ps->p < ps->end && *ps->p != '|' && *ps->p != ')') {
        int id = rrepeat(ps, depth);
        if (id < 0) return -1;
        if (last < 0) ps->nodes[cat].child = id;
        else ps->nodes[last].next = id;
        last = id;
    }
    return cat;
}

static int ralt(rparser *ps, int depth)
{
    if (depth > 128) {
        ps->why = "nests groups too deeply";
        return -1;
    }
    int alt = rnew(ps, RN_ALT), last = -1;
    if (alt < 0) return -1;
    for (;;) {
        int id = rconcat(ps, depth);
        if (id < 0) return -1;
        if (last < 0) ps->nodes[alt].child = id;
        else ps->nodes[last].next = id;
        last = id;
        if (ps->p >= ps->end || *ps->p != '|') break;
        ps->p++;
    }
    return alt;
}

/* ---------------------------------------------------------------- regular expressions: NFA */
enum { NS_SET, NS_SPLIT, NS_BOL, NS_EOL, NS_MATCH };

typedef struct nstate {
    uint8_t kind;
    int out, out1;
    int set;
} nstate;

struct recipe_regex {
    char suffix[RECIPE_RE_PREFIX_MAX]; /* literal text every match ends with (a cheap first test) */
    size_t suffix_len;
    nstate *st;
    int nstates, cap;
    byteset *sets;
    int start;
    /* simulation scratch: two state lists, a closure stack, generation marks */
    int *cur, *nxt, *stack;
    uint32_t *mark;
    uint32_t gen;
};

/* States of one compiled selector: far more than the parser's size estimate admits (4096
 * nodes), so the cap only guards a nf_recipe built by hand. */
#define RE_MAX_STATES 16384

static int nadd(recipe_regex *re, int kind, int out, int out1, int set, const char **why)
{
    if (re->nstates == RE_MAX_STATES) {
        *why = "would compile too large";
        return -1;
    }
    if (re->nstates == re->cap) {
        int cap = re->cap ? re->cap * 2 : 64;
        nstate *s = realloc(re->st, (size_t)cap * sizeof *s);
        if (!s) {
            *why = "cannot be compiled: out of memory";
            return -1;
        }
        re->st = s;
        re->cap = cap;
    }
    re->st[re->nstates] = (nstate){(uint8_t)kind, out, out1, set};
    return re->nstates++;
}

static int gen(recipe_regex *re, const rparser *ps, int id, int next, const char **why);
static size_t regex_suffix(const char *pattern, char *buf, size_t size);

/* The siblings from c on, in order, then next (a concatenation). */
static int gen_list(recipe_regex *re, const rparser *ps, int c, int next, const char **why)
{
    if (c < 0) return next;
    int rest = gen_list(re, ps, ps->nodes[c].next, next, why);
    return rest < 0 ? -1 : gen(re, ps, c, rest, why);
}

/* Code for node id that continues at state next; returns its entry state.  Built back to front,
 * so no list of dangling arrows is needed. */
static int gen(recipe_regex *re, const rparser *ps, int id, int next, const char **why)
{
    const rnode *nd = &ps->nodes[id];
    switch (nd->kind) {
    case RN_SET: return nadd(re, NS_SET, next, -1, nd->set, why);
    case RN_BOL: return nadd(re, NS_BOL, next, -1, -1, why);
    case RN_EOL: return nadd(re, NS_EOL, next, -1, -1, why);
    case RN_EMPTY: return next;
    case RN_CAT: return gen_list(re, ps, nd->child, next, why);
    case RN_ALT: {
        int entry = -1;
        for (int c = nd->child; c >= 0; c = ps->nodes[c].next) {
            int e = gen(re, ps, c, next, why);
            if (e < 0) return -1;
            entry = entry < 0 ? e : nadd(re, NS_SPLIT, entry, e, -1, why);
            if (entry < 0) return -1;
        }
        return entry;
    }
    case RN_REP: {
        int t = next;
        if (nd->max < 0) { /* X* as a loop; X{m,} is m - 1 copies and X+ */
            int loop = nadd(re, NS_SPLIT, -1, next, -1, why);
            if (loop < 0) return -1;
            int body = gen(re, ps, nd->child, loop, why);
            if (body < 0) return -1;
            re->st[loop].out = body;
            if (nd->min == 0) return loop;
            t = body;
            for (int i = 1; i < nd->min && t >= 0; i++) t = gen(re, ps, nd->child, t, why);
            return t;
        }
        /* X{m,n}: m copies, then n - m nested optional ones */
        for (int i = 0; i < nd->max - nd->min && t >= 0; i++) {
            int e = gen(re, ps, nd->child, t, why);
            t = e < 0 ? -1 : nadd(re, NS_SPLIT, e, next, -1, why);
        }
        for (int i = 0; i < nd->min && t >= 0; i++) t = gen(re, ps, nd->child, t, why);
        return t;
    }
    }
    return -1;
}

const char *nf_recipe_regex_compile(const char *pattern, recipe_regex **out)
{
    *out = NULL;
    rparser *ps = calloc(1, sizeof *ps);
    recipe_regex *re = calloc(1, sizeof *re);
    const char *why = NULL;
    if (!ps || !re) {
        free(ps);
        free(re);
        return "cannot be compiled: out of memory";
    }
    ps->p = ps->start = pattern;
    ps->end = pattern + strlen(pattern);
    int root = ralt(ps, 0);
    if (root >= 0 && ps->p < ps->end) ps->why = "has an unmatched ')'";
    why = ps->why;
    if (!why) {
        int match = nadd(re, NS_MATCH, -1, -1, -1, &why);
        if (match >= 0) re->start = gen(re, ps, root, match, &why);
    }
    if (!why) {
        size_t m = (size_t)re->nstates;
        re->sets = ps->sets;
        ps->sets = NULL;
        re->cur = malloc(m * sizeof *re->cur);
        re->nxt = malloc(m * sizeof *re->nxt);
        re->stack = malloc(m * sizeof *re->stack);
        re->mark = calloc(m, sizeof *re->mark);
        if (!re->cur || !re->nxt || !re->stack || !re->mark) why = "cannot be compiled: out of memory";
    }
    free(ps->sets);
    free(ps);
    if (why) {
        nf_recipe_regex_free(re);
        return why;
    }
    re->suffix_len = regex_suffix(pattern, re->suffix, sizeof re->suffix);
    *out = re;
    return NULL;
}

void nf_recipe_regex_free(recipe_regex *re)
{
    if (!re) return;
    free(re->st);
    free(re->sets);
    free(re->cur);
    free(re->nxt);
    free(re->stack);
    free(re->mark);
    free(re);
}

size_t nf_recipe_regex_states(const recipe_regex *re) { return (size_t)re->nstates; }

/* Adds state s and what it reaches without consuming a byte at position pos of n; each state is
 * entered at most once per position (its mark), so a closure costs at most the state count. */
static void closure(recipe_regex *re, int *list, int *count, int s, size_t pos, size_t n, uint64_t *steps)
{
    int top = 0;
    if (re->mark[s] == re->gen) return;
    re->mark[s] = re->gen;
    re->stack[top++] = s;
    while (top > 0) {
        int x = re->stack[--top];
        ++*steps;
        const nstate *st = &re->st[x];
        int follow[2] = {-1, -1};
        switch (st->kind) {
        case NS_SPLIT: follow[0] = st->out, follow[1] = st->out1; break;
        case NS_BOL:
            if (pos == 0) follow[0] = st->out;
            break;
        case NS_EOL:
            if (pos == n) follow[0] = st->out;
            break;
        default: list[(*count)++] = x; break;
        }
        for (int k = 0; k < 2; k++) {
            int y = follow[k];
            if (y < 0 || re->mark[y] == re->gen) continue;
            re->mark[y] = re->gen;
            re->stack[top++] = y;
        }
    }
}

static void next_gen(recipe_regex *re)
{
    if (++re->gen == 0) { /* wrapped: old marks could collide */
        memset(re->mark, 0, (size_t)re->nstates * sizeof *re->mark);
        re->gen = 1;
    }
}

bool nf_recipe_regex_match(recipe_regex *re, const char *name, uint64_t *steps)
{
    size_t n = strlen(name);
    if (re->suffix_len) {
        *steps += re->suffix_len;
        if (re->suffix_len > n || memcmp(name + n - re->suffix_len, re->suffix, re->suffix_len) != 0) return false;
    }
    int ncur = 0;
    next_gen(re);
    closure(re, re->cur, &ncur, re->start, 0, n, steps);
    for (size_t pos = 0; pos < n; pos++) {
        if (ncur == 0) return false;
        unsigned c = (unsigned char)name[pos];
        int nnext = 0;
        next_gen(re);
        for (int i = 0; i < ncur; i++) {
            const nstate *st = &re->st[re->cur[i]];
            ++*steps;
            if (st->kind == NS_SET && set_has(&re->sets[st->set], c))
                closure(re, re->nxt, &nnext, st->out, pos + 1, n, steps);
        }
        int *t = re->cur;
        re->cur = re->nxt;
        re->nxt = t;
        ncur = nnext;
    }
    for (int i = 0; i < ncur; i++)
        if (re->st[re->cur[i]].kind == NS_MATCH) return true;
    return false;
}

/* One token of a pattern at c: its end (after any operator is not included), whether it is one
 * literal byte (*lit) and whether it is an alternation at depth 0 (tracked in *depth). */
static const char *regex_token(const char *c, char *lit, bool *literal, int *depth)
{
    *literal = false;
    if (*c == '\\' && c[1]) {
        *literal = !isalnum((unsigned char)c[1]);
        *lit = c[1];
        return c + 2;
    }
    if (*c == '[') {
        const char *q = c + 1;
        if (*q == '^') q++;
        if (*q == ']') q++;
        while (*q && *q != ']') {
            if (q[0] == '[' && q[1] == ':') {
                const char *e = strstr(q + 2, ":]");
                q = e ? e + 2 : q + 1;
                continue;
            }
            q++;
        }
        return *q ? q + 1 : q;
    }
    if (*c == '(') ++*depth;
    else if (*c == ')') --*depth;
    else if (!strchr(".*+?{}|^$", *c)) {
        *literal = true;
        *lit = *c;
    }
    if (*c == '{') { /* a bound is one operator token */
        const char *q = strchr(c, '}');
        return q ? q + 1 : c + 1;
    }
    return c + 1;
}

static bool top_level_alternation(const char *pattern)
{
    int depth = 0;
    for (const char *c = pattern; *c;) {
        char lit;
        bool literal;
        if (*c == '|' && depth == 0) return true;
        c = regex_token(c, &lit, &literal, &depth);
    }
    return false;
}

static bool is_operator(char c) { return c == '*' || c == '+' || c == '?' || c == '{'; }

size_t nf_recipe_regex_prefix(const char *pattern, char *buf, size_t size)
{
    /* With an alternation at the top, no prefix is certain (a|b); stop at the first token that
     * is not a literal byte, and drop the last literal when an operator that may skip it follows. */
    size_t k = 0;
    if (size == 0) return 0;
    buf[0] = '\0';
    if (top_level_alternation(pattern)) return 0;
    int depth = 0;
    for (const char *c = pattern; *c && k + 1 < size;) {
        char lit = 0;
        bool literal;
        const char *after = regex_token(c, &lit, &literal, &depth);
        if (!literal || *after == '*' || *after == '?' || *after == '{') break;
        buf[k++] = lit;
        c = after;
    }
    buf[k] = '\0';
    return k;
}

/* The literal bytes every match ends with: the run of literal tokens at depth 0 that ends the
 * pattern (before a final '$'), none of them under an operator. */
static size_t regex_suffix(const char *pattern, char *buf, size_t size)
{
    size_t k = 0;
    buf[0] = '\0';
    if (top_level_alternation(pattern)) return 0;
    int depth = 0;
    for (const char *c = pattern; *c;) {
        char lit = 0;
        bool literal;
        int before = depth;
        const char *after = regex_token(c, &lit, &literal, &depth);
        if (literal && before == 0 && depth == 0 && !is_operator(*after)) {
            if (k + 1 < size) buf[k++] = lit;
            else k = 0;
        } else if (!(*c == '$' && !after[0])) {
            k = 0; /* a group, a class, an operator (and what it repeats), an anchor */
        }
        c = after;
    }
    buf[k] = '\0';
    return k;
}
