/* Shared CLI machinery (see cli.h). */
#include "cli.h"
#include "common/fail.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ninfer/ninfer.h>

#include "common/utf8.h"

static int on_help(nf_cli *cli, const nf_option *row, void *opts, const char *arg);
static int on_version(nf_cli *cli, const nf_option *row, void *opts, const char *arg);
static int on_verbose(nf_cli *cli, const nf_option *row, void *opts, const char *arg);

static const nf_opt_choice progress_modes[] = {
    {"auto", NF_PROGRESS_AUTO}, {"always", NF_PROGRESS_ALWAYS}, {"never", NF_PROGRESS_NEVER}, {NULL, 0}};

/* The common options every manual page lists (e.g. docs/ninfer-convert.md, "Options"); their
 * fields are nf_cli's. */
static const nf_option common_options[] = {
    NF_OPT_CALLBACK_ROW(on_help, NF_ARG_NONE, "help", 'h', NULL, "show this help and exit"),
    NF_OPT_CALLBACK_ROW(on_version, NF_ARG_NONE, "version", 'V', NULL, "show the version and exit"),
    NF_OPT_SET_ROW(nf_cli, verbosity, -1, "quiet", 'q', "print only errors"),
    NF_OPT_CALLBACK_ROW(on_verbose, NF_ARG_NONE, "verbose", 'v', NULL, "print more detail"),
    NF_OPT_FLAG_ROW(nf_cli, json, "json", 0, "machine-readable result on stdout"),
    NF_OPT_CHOICE_ROW(nf_cli, progress, progress_modes, "progress", 0, "auto|always|never",
                      "progress bars on stderr (default auto: only on a terminal)"),
    NF_OPT_END,
};

static size_t table_len(const nf_option *t)
{
    size_t n = 0;
    while (t && t[n].long_name) n++;
    return n;
}

static void print_option_rows(const nf_option *t)
{
    for (size_t i = 0; t && t[i].long_name; i++) {
        char left[96];
        const nf_option *o = &t[i];
        const char *arg = o->arg_name ? o->arg_name : "ARG";
        if (o->arg == NF_ARG_REQUIRED)
            snprintf(left, sizeof left, "%s%c%s--%s %s", o->short_name ? "-" : "   ",
                     o->short_name ? o->short_name : ' ', o->short_name ? ", " : "", o->long_name, arg);
        else if (o->arg == NF_ARG_OPTIONAL)
            snprintf(left, sizeof left, "%s%c%s--%s[=%s]", o->short_name ? "-" : "   ",
                     o->short_name ? o->short_name : ' ', o->short_name ? ", " : "", o->long_name, arg);
        else
            snprintf(left, sizeof left, "%s%c%s--%s", o->short_name ? "-" : "   ", o->short_name ? o->short_name : ' ',
                     o->short_name ? ", " : "", o->long_name);
        if (strlen(left) > 28) printf("  %s\n  %-28s %s\n", left, "", o->help);
        else printf("  %-28s %s\n", left, o->help);
    }
}

static void print_help(const nf_program *prog)
{
    printf("usage: %s\n\n%s\n\noptions:\n", prog->synopsis, prog->description);
    print_option_rows(prog->options);
    printf("\ncommon options:\n");
    print_option_rows(common_options);
    printf("\nexit status: %s\n",
           prog->exit_status ? prog->exit_status : "0 success, 1 invalid input, 2 usage error, 3 system error");
    if (prog->examples) printf("\nexamples:\n%s", prog->examples);
}

/* getopt_long's rows for every option row; a long option returns NF_CLI_ROW_CODE + its index in
 * rows[] (above every short option character), a short one its character. */
#define NF_CLI_ROW_CODE 256
static void add_getopt_row(struct option *lo, char *shorts, size_t *ns, const nf_option *row, size_t index)
{
    int has = row->arg == NF_ARG_NONE       ? no_argument
              : row->arg == NF_ARG_REQUIRED ? required_argument
                                            : optional_argument;
    *lo = (struct option){row->long_name, has, NULL, NF_CLI_ROW_CODE + (int)index};
    if (row->short_name) {
        shorts[(*ns)++] = row->short_name;
        if (row->arg != NF_ARG_NONE) shorts[(*ns)++] = ':';
        if (row->arg == NF_ARG_OPTIONAL) shorts[(*ns)++] = ':';
    }
}

/* The usage error of an option getopt refused, naming it as the user typed it.  getopt's optopt
 * is the short option character (1..255) for a short option, its code (NF_CLI_ROW_CODE and up)
 * for a long option given a value it does not take, and 0 for an unknown or ambiguous long option;
 * a long option has advanced optind past its argv element, a short one inside a cluster
 * ("-qZ") may not have, so a short option is named by its character alone. */
static int bad_option(const nf_cli *cli, bool missing_value, int argc, char **argv, const struct option *lo)
{
    const char *arg = optind >= 1 && optind <= argc ? argv[optind - 1] : "";
    int oc = optopt;
    if (oc < 0 && oc >= -128) oc += 256; /* a byte above 0x7f, stored through a signed char */
    if (oc > 0 && oc < 256) {
        char shown[8];
        nf_escape((const char[]){(char)(unsigned char)oc}, 1, 0, shown, sizeof shown);
        if (missing_value) return nf_cli_usage(cli, "option '-%s' needs a value", shown);
        return nf_cli_usage(cli, "unknown option '-%s'", shown);
    }
    if (missing_value) return nf_cli_usage(cli, "option '%s' needs a value", nf_cli_name(arg).s);
    if (oc != 0) return nf_cli_usage(cli, "option '%s' takes no value", nf_cli_name(arg).s);
    /* an unknown long option, or a prefix of several (getopt_long accepts a unique prefix) */
    if (strncmp(arg, "--", 2) == 0 && arg[2]) {
        size_t n = strcspn(arg + 2, "="), hits = 0;
        char names[256] = "";
        for (size_t i = 0; lo[i].name; i++)
            if (strncmp(lo[i].name, arg + 2, n) == 0) {
                size_t used = strlen(names);
                snprintf(names + used, sizeof names - used, "%s--%s", hits ? ", " : "", lo[i].name);
                hits++;
            }
        if (hits > 1) return nf_cli_usage(cli, "option '%s' is ambiguous (%s)", nf_cli_name(arg).s, names);
    }
    return nf_cli_usage(cli, "unknown option '%s'", nf_cli_name(arg).s);
}

static int on_help(nf_cli *cli, const nf_option *row, void *opts, const char *arg)
{
    (void)row, (void)opts, (void)arg;
    print_help(cli->program);
    cli->done = true;
    return NF_EXIT_OK;
}

static int on_version(nf_cli *cli, const nf_option *row, void *opts, const char *arg)
{
    (void)row, (void)opts, (void)arg;
    printf("%s (ninfer-tools) %s\n", cli->program->name, nf_version());
    cli->done = true;
    return NF_EXIT_OK;
}

static int on_verbose(nf_cli *cli, const nf_option *row, void *opts, const char *arg)
{
    (void)row, (void)opts, (void)arg;
    cli->verbosity++;
    return NF_EXIT_OK;
}

/* "--NAME takes WHAT[ from MIN to MAX], not 'ARG'": the range is shown unless MAX is the
 * field's largest value (then WHAT says what is accepted, e.g. "a positive count"). */
static int bad_number(const nf_cli *cli, const nf_option *row, const char *arg)
{
    uint64_t top = row->kind == NF_OPT_UINT ? UINT_MAX : UINT64_MAX;
    const char *what = row->what ? row->what : "a number";
    if (row->max < top)
        return nf_cli_usage(cli, "--%s takes %s from %" PRIu64 " to %" PRIu64 ", not '%s'", row->long_name, what,
                            row->min, row->max, arg);
    return nf_cli_usage(cli, "--%s takes %s, not '%s'", row->long_name, what, arg);
}

/* "--NAME takes a, b or c, not 'ARG'" */
static int bad_choice(const nf_cli *cli, const nf_option *row, const char *arg)
{
    char names[256] = "";
    size_t n = 0;
    while (row->choices[n].name) n++;
    for (size_t i = 0; i < n; i++) {
        size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, "%s%s",
                 i == 0       ? ""
                 : i + 1 == n ? " or "
                              : ", ",
                 row->choices[i].name);
    }
    return nf_cli_usage(cli, "--%s takes %s, not '%s'", row->long_name, names, arg);
}

static int check_text(const nf_cli *cli, const nf_option *row, const char *arg)
{
    if (row->check == NF_CHECK_NONEMPTY && !arg[0])
        return nf_cli_usage(cli, "--%s takes %s", row->long_name, row->what);
    if (row->check == NF_CHECK_KEY_VALUE && (!strchr(arg, '=') || arg[0] == '='))
        return nf_cli_usage(cli, "--%s takes %s, not '%s'", row->long_name, row->arg_name, arg);
    return NF_EXIT_OK;
}

/* Store the value of one option given (arg NULL when it has none) in its field of base. */
static int apply_row(nf_cli *cli, const nf_option *row, void *base, const char *arg)
{
    char *field = (char *)base + row->offset;
    int rc;
    switch (row->kind) {
    case NF_OPT_FLAG: *(bool *)field = true; break;
    case NF_OPT_SET: *(int *)field = row->value; break;
    case NF_OPT_STRING:
        if ((rc = check_text(cli, row, arg)) != NF_EXIT_OK) return rc;
        *(const char **)field = arg;
        break;
    case NF_OPT_UINT:
    case NF_OPT_U64: {
        uint64_t v = row->def;
        if (arg && (!nf_cli_parse_u64(arg, &v) || v < row->min || v > row->max)) return bad_number(cli, row, arg);
        if (row->kind == NF_OPT_UINT) *(unsigned *)field = (unsigned)v;
        else *(uint64_t *)field = v;
        break;
    }
    case NF_OPT_LIST: {
        if ((rc = check_text(cli, row, arg)) != NF_EXIT_OK) return rc;
        size_t *count = (size_t *)(void *)((char *)base + row->count_offset);
        (*(const char ***)field)[(*count)++] = arg;
        break;
    }
    case NF_OPT_CHOICE: {
        const nf_opt_choice *c = row->choices;
        while (c->name && strcmp(c->name, arg) != 0) c++;
        if (!c->name) return bad_choice(cli, row, arg);
        *(int *)field = c->value;
        break;
    }
    case NF_OPT_SPAN: {
        nf_cli_span *s = (nf_cli_span *)(void *)field;
        if (!nf_cli_parse_range(arg, &s->a, &s->b, &s->has_a, &s->has_b))
            return nf_cli_usage(cli, "--%s takes %s, not '%s'", row->long_name, row->arg_name, arg);
        s->given = true;
        break;
    }
    case NF_OPT_CALLBACK: return row->callback(cli, row, base, arg);
    }
    return NF_EXIT_OK;
}

int nf_cli_parse(nf_cli *cli, const nf_program *prog, int argc, char **argv, void *opts, bool *done)
{
    memset(cli, 0, sizeof *cli);
    cli->prog = prog->name;
    cli->program = prog;
    *done = false;
    size_t ncommon = table_len(common_options), nopts = ncommon + table_len(prog->options);
    const nf_option **rows = calloc(nopts + 1, sizeof *rows);
    struct option *lo = calloc(nopts + 1, sizeof *lo);
    char *shorts = calloc(3 * nopts + 3, 1);
    cli->positional = calloc((size_t)argc + 1, sizeof *cli->positional);
    cli->given = calloc((size_t)argc + 1, sizeof *cli->given);
    if (!rows || !lo || !shorts || !cli->positional || !cli->given) {
        free(rows);
        free(lo);
        free(shorts);
        return nf_cli_error(cli, NF_ERR_NOMEM, "out of memory");
    }
    size_t ns = 0;
    shorts[ns++] = '-'; /* return non-options in order, as code 1 */
    shorts[ns++] = ':'; /* report a missing argument as ':' */
    for (size_t i = 0; i < nopts; i++) {
        rows[i] = i < ncommon ? &common_options[i] : &prog->options[i - ncommon];
        add_getopt_row(&lo[i], shorts, &ns, rows[i], i);
    }
    int status = NF_EXIT_OK;
    opterr = 0;
    optind = 1;
    for (;;) {
        int c = getopt_long(argc, argv, shorts, lo, NULL);
        if (c == -1) break;
        if (c == 1) {
            cli->positional[cli->npositional++] = optarg;
            continue;
        }
        if (c == '?' || c == ':') {
            status = bad_option(cli, c == ':', argc, argv, lo);
            break;
        }
        size_t i = 0;
        if (c >= NF_CLI_ROW_CODE) i = (size_t)(c - NF_CLI_ROW_CODE);
        else /* a short option character */
            while (i < nopts && rows[i]->short_name != c) i++;
        if (i >= nopts) {
            status = nf_cli_usage(cli, "unexpected option");
            break;
        }
        if (i >= ncommon) cli->given[cli->ngiven++] = rows[i];
        status = apply_row(cli, rows[i], i < ncommon ? (void *)cli : opts, optarg);
        if (status != NF_EXIT_OK || cli->done) break;
    }
    *done = cli->done;
    /* Anything after "--" is positional. */
    if (status == NF_EXIT_OK && !*done)
        for (int i = optind; i < argc; i++) cli->positional[cli->npositional++] = argv[i];
    free(rows);
    free(lo);
    free(shorts);
    return status;
}

void nf_cli_free(nf_cli *cli)
{
    free(cli->positional);
    cli->positional = NULL;
    free(cli->given);
    cli->given = NULL;
    cli->ngiven = 0;
}

/* Every message goes through nf_escape once more before it reaches the terminal
 * (ninfer/escape.h): names are escaped where they are put into a message (then the only
 * control bytes left are our own line breaks between the items of a list), and this pass
 * turns any control byte a caller left in (an unescaped name) into an escape.  Backslashes
 * are kept: they are the escapes already made.  A line break is kept, but the line after it is
 * indented (lists already are), so that no text in a message can start a line of its own. */
__attribute__((format(printf, 3, 0))) static void vmessage(const nf_cli *cli, const char *level, const char *fmt,
                                                           va_list ap)
{
    char raw[4 * NF_ERROR_MESSAGE_MAX], shown[4 * 4 * NF_ERROR_MESSAGE_MAX];
    int n = vsnprintf(raw, sizeof raw, fmt, ap);
    size_t len = n < 0 ? 0 : (size_t)n >= sizeof raw ? sizeof raw - 1 : (size_t)n;
    nf_escape(raw, len, NF_ESCAPE_KEEP_BACKSLASH | NF_ESCAPE_KEEP_NEWLINE, shown, sizeof shown);
    fprintf(stderr, "%s: %s: ", cli->prog, level);
    for (const char *p = shown; *p; p++) {
        fputc(*p, stderr);
        if (*p == '\n' && strncmp(p + 1, "  ", 2) != 0) fputs("  ", stderr);
    }
    fputc('\n', stderr);
}

int nf_cli_error(const nf_cli *cli, nf_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(cli, "error", fmt, ap);
    va_end(ap);
    return nf_status_exit_code(status);
}

int nf_cli_report(const nf_cli *cli, const nf_error *err) { return nf_cli_error(cli, err->status, "%s", err->message); }

int nf_cli_usage(const nf_cli *cli, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(cli, "error", fmt, ap);
    va_end(ap);
    fprintf(stderr, "Try '%s --help' for more information.\n", cli->prog);
    return NF_EXIT_USAGE;
}

void nf_cli_warn(const nf_cli *cli, const char *fmt, ...)
{
    if (cli->verbosity < 0) return;
    va_list ap;
    va_start(ap, fmt);
    vmessage(cli, "warning", fmt, ap);
    va_end(ap);
}

void nf_cli_info(const nf_cli *cli, const char *fmt, ...)
{
    if (cli->verbosity < 1) return;
    va_list ap;
    va_start(ap, fmt);
    vmessage(cli, "info", fmt, ap);
    va_end(ap);
}

nf_cli_text nf_cli_name(const char *s)
{
    nf_cli_text t;
    nf_escape(s, s ? strlen(s) : 0, 0, t.s, sizeof t.s);
    return t;
}

nf_cli_text nf_cli_line(const char *s)
{
    nf_cli_text t;
    nf_escape(s, s ? strlen(s) : 0, NF_ESCAPE_KEEP_BACKSLASH, t.s, sizeof t.s);
    return t;
}

char *nf_cli_utf8_clean(const char *s, size_t len, size_t *out_len)
{
    if (len > (SIZE_MAX - 1) / 3) return NULL;
    char *buf = malloc(len * 3 + 1);
    if (!buf) return NULL;
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t k = nf_utf8_decode(p + i, len - i, NULL);
        if (k) {
            memcpy(buf + o, p + i, k);
            o += k;
            i += k;
        } else {
            memcpy(buf + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        }
    }
    buf[o] = '\0';
    if (out_len) *out_len = o;
    return buf;
}

json_t *nf_cli_json_text(const char *s, size_t len)
{
    json_t *j = json_stringn(s, len);
    if (j) return j;
    size_t n = 0;
    char *c = nf_cli_utf8_clean(s, len, &n);
    j = c ? json_stringn(c, n) : NULL;
    free(c);
    return j ? j : json_null();
}

json_t *nf_cli_json_cstr(const char *s) { return s ? nf_cli_json_text(s, strlen(s)) : json_null(); }

bool nf_cli_parse_u64(const char *text, uint64_t *out)
{
    if (!text || !*text || *text == '-' || *text == '+') return false;
    for (const char *p = text; *p; p++)
        if (*p < '0' || *p > '9') return false;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0') return false;
    *out = (uint64_t)v;
    return true;
}

bool nf_cli_parse_range(const char *text, uint64_t *a, uint64_t *b, bool *has_a, bool *has_b)
{
    const char *colon = strchr(text, ':');
    if (!colon || strchr(colon + 1, ':')) return false;
    char left[32];
    size_t llen = (size_t)(colon - text);
    if (llen >= sizeof left) return false;
    memcpy(left, text, llen);
    left[llen] = '\0';
    *has_a = llen > 0;
    *has_b = colon[1] != '\0';
    *a = 0;
    *b = 0;
    if (*has_a && !nf_cli_parse_u64(left, a)) return false;
    if (*has_b && !nf_cli_parse_u64(colon + 1, b)) return false;
    return true;
}

int nf_cli_print_json(const nf_cli *cli, json_t *value)
{
    /* JSON_PRESERVE_ORDER is implied by jansson >= 2.8; keep directory member order. */
    if (json_dumpf(value, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17)) != 0)
        return nf_cli_error(cli, NF_ERR_IO, "cannot write JSON to stdout");
    fputc('\n', stdout);
    if (fflush(stdout) != 0) return nf_cli_error(cli, NF_ERR_IO, "cannot write to stdout: %s", strerror(errno));
    return NF_EXIT_OK;
}

int nf_cli_stale_temp(const nf_cli *cli, const char *path, long pid, bool remove, const char *keep_hint)
{
    if (!remove) {
        nf_cli_warn(cli, "%s: temp file of an interrupted run (process %ld is gone); %s", nf_cli_name(path).s, pid,
                    keep_hint);
        return NF_EXIT_OK;
    }
    if (unlink(path) == 0 || errno == ENOENT) {
        if (cli->verbosity >= 0)
            fprintf(stderr, "%s: removed stale temp file %s (process %ld is gone)\n", cli->prog, nf_cli_name(path).s,
                    pid);
        return NF_EXIT_OK;
    }
    return nf_cli_error(cli, NF_ERR_IO, "%s: cannot remove the stale temp file: %s", nf_cli_name(path).s,
                        strerror(errno));
}

bool nf_cli_recipe_args_init(nf_cli_recipe_args *a, int argc)
{
    memset(a, 0, sizeof *a);
    size_t n = (size_t)(argc > 0 ? argc : 0) + 1;
    a->sources = calloc(n, sizeof *a->sources);
    a->allow_paths = calloc(n, sizeof *a->allow_paths);
    a->allow_env = calloc(n, sizeof *a->allow_env);
    a->method_programs = calloc(n, sizeof *a->method_programs);
    a->programs = calloc(n, sizeof *a->programs);
    return a->sources && a->allow_paths && a->allow_env && a->method_programs && a->programs;
}

nf_status nf_cli_method_programs(nf_cli_recipe_args *a, nf_error *err)
{
    for (size_t i = 0; i < a->nmethod_programs; i++) {
        const char *arg = a->method_programs[i], *eq = strchr(arg, '=');
        char *name = strndup(arg, (size_t)(eq - arg));
        if (!name) return nf_common_nomem(err);
        a->programs[a->nprograms++] = (nf_method_program){name, eq + 1, a->method_timeout};
        NF_TRY(nf_method_program_check_name(name, err));
        for (size_t k = 0; k + 1 < a->nprograms; k++)
            if (!strcmp(a->programs[k].name, name))
                return nf_error_set(err, NF_ERR_USAGE, "--method-program %s: given twice", name);
    }
    return NF_OK;
}

void nf_cli_recipe_args_free(nf_cli_recipe_args *a)
{
    free(a->sources);
    free(a->allow_paths);
    free(a->allow_env);
    free(a->method_programs);
    for (size_t i = 0; i < a->nprograms; i++) free((char *)a->programs[i].name);
    free(a->programs);
    memset(a, 0, sizeof *a);
}

nf_status nf_cli_recipe_apply(nf_recipe *r, const nf_cli_recipe_args *a, nf_error *err)
{
    for (size_t i = 0; i < a->nsources; i++) {
        const char *eq = strchr(a->sources[i], '=');
        char *name = strndup(a->sources[i], (size_t)(eq - a->sources[i]));
        if (!name) return nf_common_nomem(err);
        nf_status st = nf_recipe_set_source(r, name, eq + 1, err);
        free(name);
        NF_TRY(st);
    }
    for (size_t i = 0; i < a->nallow_paths; i++) NF_TRY(nf_recipe_allow_path(r, a->allow_paths[i], err));
    return NF_OK;
}
