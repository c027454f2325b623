/* Shared CLI machinery (see cli.h). */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ninfer/ninfer.h>

static const nf_option common_options[] = {
    {"help", 'h', NF_ARG_NONE, NF_OPT_HELP, NULL, "show this help and exit"},
    {"version", 'V', NF_ARG_NONE, NF_OPT_VERSION, NULL, "show the version and exit"},
    {"quiet", 'q', NF_ARG_NONE, NF_OPT_QUIET, NULL, "print only errors"},
    {"verbose", 'v', NF_ARG_NONE, NF_OPT_VERBOSE, NULL, "print more detail"},
    {"json", 0, NF_ARG_NONE, NF_OPT_JSON, NULL, "machine-readable result on stdout"},
    {"progress", 0, NF_ARG_REQUIRED, NF_OPT_PROGRESS, "auto|always|never",
     "progress bars on stderr (default auto: only on a terminal)"},
    {NULL, 0, NF_ARG_NONE, 0, NULL, NULL},
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
            snprintf(left, sizeof left, "%s%c%s--%s", o->short_name ? "-" : "   ",
                     o->short_name ? o->short_name : ' ', o->short_name ? ", " : "", o->long_name);
        if (strlen(left) > 28)
            printf("  %s\n  %-28s %s\n", left, "", o->help);
        else
            printf("  %-28s %s\n", left, o->help);
    }
}

static void print_help(const nf_program *prog)
{
    printf("usage: %s\n\n%s\n\noptions:\n", prog->synopsis, prog->description);
    print_option_rows(prog->options);
    printf("\ncommon options:\n");
    print_option_rows(common_options);
    printf("\nexit status: 0 success, 1 invalid input, 2 usage error, 3 system error\n");
    if (prog->examples) printf("\nexamples:\n%s", prog->examples);
}

static bool add_getopt_rows(struct option *lo, size_t *n, char *shorts, size_t *ns, const nf_option *t)
{
    for (size_t i = 0; t && t[i].long_name; i++) {
        int has = t[i].arg == NF_ARG_NONE ? no_argument
                  : t[i].arg == NF_ARG_REQUIRED ? required_argument : optional_argument;
        lo[*n] = (struct option){t[i].long_name, has, NULL, t[i].id};
        (*n)++;
        if (t[i].short_name) {
            shorts[(*ns)++] = t[i].short_name;
            if (t[i].arg == NF_ARG_REQUIRED) shorts[(*ns)++] = ':';
            if (t[i].arg == NF_ARG_OPTIONAL) {
                shorts[(*ns)++] = ':';
                shorts[(*ns)++] = ':';
            }
        }
    }
    return true;
}

static int short_to_id(const nf_option *t, int c)
{
    for (size_t i = 0; t && t[i].long_name; i++)
        if (t[i].short_name == c) return t[i].id;
    return -1;
}

/* The usage error of an option getopt refused, naming it as the user typed it.  getopt's optopt
 * is the short option character (1..255) for a short option, the option's id (>= 1000) for a
 * long option given a value it does not take, and 0 for an unknown or ambiguous long option;
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

int nf_cli_parse(nf_cli *cli, const nf_program *prog, int argc, char **argv, nf_option_handler handler,
                 void *ctx, bool *done)
{
    memset(cli, 0, sizeof *cli);
    cli->prog = prog->name;
    *done = false;
    size_t nopts = table_len(prog->options) + table_len(common_options);
    struct option *lo = calloc(nopts + 1, sizeof *lo);
    char *shorts = calloc(3 * nopts + 3, 1);
    cli->positional = calloc((size_t)argc + 1, sizeof *cli->positional);
    if (!lo || !shorts || !cli->positional) {
        free(lo);
        free(shorts);
        return nf_cli_error(cli, NF_ERR_NOMEM, "out of memory");
    }
    size_t n = 0, ns = 0;
    shorts[ns++] = '-'; /* return non-options in order, as code 1 */
    shorts[ns++] = ':'; /* report a missing argument as ':' */
    add_getopt_rows(lo, &n, shorts, &ns, common_options);
    add_getopt_rows(lo, &n, shorts, &ns, prog->options);
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
        int id = c;
        if (c < 256) { /* a short option character */
            int mapped = short_to_id(common_options, c);
            if (mapped < 0) mapped = short_to_id(prog->options, c);
            id = mapped;
        }
        switch (id) {
        case NF_OPT_HELP:
            print_help(prog);
            *done = true;
            break;
        case NF_OPT_VERSION:
            printf("%s (ninfer-tools) %s\n", prog->name, nf_version());
            *done = true;
            break;
        case NF_OPT_QUIET: cli->verbosity = -1; break;
        case NF_OPT_VERBOSE: cli->verbosity++; break;
        case NF_OPT_JSON: cli->json = true; break;
        case NF_OPT_PROGRESS:
            if (strcmp(optarg, "auto") == 0) cli->progress = NF_PROGRESS_AUTO;
            else if (strcmp(optarg, "always") == 0) cli->progress = NF_PROGRESS_ALWAYS;
            else if (strcmp(optarg, "never") == 0) cli->progress = NF_PROGRESS_NEVER;
            else status = nf_cli_usage(cli, "--progress takes auto, always or never, not '%s'", optarg);
            break;
        default:
            status = handler ? handler(ctx, cli, id, optarg) : nf_cli_usage(cli, "unexpected option");
            break;
        }
        if (status != NF_EXIT_OK || *done) break;
    }
    /* Anything after "--" is positional. */
    if (status == NF_EXIT_OK && !*done)
        for (int i = optind; i < argc; i++) cli->positional[cli->npositional++] = argv[i];
    free(lo);
    free(shorts);
    return status;
}

void nf_cli_free(nf_cli *cli)
{
    free(cli->positional);
    cli->positional = NULL;
}

/* Every message goes through nf_escape once more before it reaches the terminal
 * (ninfer/escape.h): names are escaped where they are put into a message (then the only
 * control bytes left are our own line breaks between the items of a list), and this pass
 * turns any control byte a caller left in (an unescaped name) into an escape.  Backslashes
 * are kept: they are the escapes already made.  A line break is kept, but the line after it is
 * indented (lists already are), so that no text in a message can start a line of its own. */
static void vmessage(const nf_cli *cli, const char *level, const char *fmt, va_list ap)
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

int nf_cli_report(const nf_cli *cli, const nf_error *err)
{
    return nf_cli_error(cli, err->status, "%s", err->message);
}

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

size_t nf_cli_utf8_seq(const unsigned char *p, size_t n)
{
    unsigned char c = p[0];
    if (c < 0x80) return 1;
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        if (c == 0xE0) lo = 0xA0; /* overlong */
        if (c == 0xED) hi = 0x9F; /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        if (c == 0xF0) lo = 0x90; /* overlong */
        if (c == 0xF4) hi = 0x8F; /* beyond U+10FFFF */
    } else {
        return 0;
    }
    if (n <= need || p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 2; i <= need; i++)
        if ((p[i] & 0xC0) != 0x80) return 0;
    return need + 1;
}

char *nf_cli_utf8_clean(const char *s, size_t len, size_t *out_len)
{
    if (len > (SIZE_MAX - 1) / 3) return NULL;
    char *buf = malloc(len * 3 + 1);
    if (!buf) return NULL;
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t k = nf_cli_utf8_seq(p + i, len - i);
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

int nf_cli_parse_threads(const nf_cli *cli, const char *arg, unsigned *threads)
{
    uint64_t v;
    if (!nf_cli_parse_u64(arg, &v) || v == 0 || v > NF_CLI_MAX_THREADS)
        return nf_cli_usage(cli, "--threads takes a number from 1 to %u, not '%s'", NF_CLI_MAX_THREADS, arg);
    *threads = (unsigned)v;
    return NF_EXIT_OK;
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
    return a->sources && a->allow_paths && a->allow_env;
}

void nf_cli_recipe_args_free(nf_cli_recipe_args *a)
{
    free(a->sources);
    free(a->allow_paths);
    free(a->allow_env);
    memset(a, 0, sizeof *a);
}

nf_status nf_cli_recipe_apply(nf_recipe *r, const nf_cli_recipe_args *a, nf_error *err)
{
    for (size_t i = 0; i < a->nsources; i++) {
        const char *eq = strchr(a->sources[i], '=');
        char *name = strndup(a->sources[i], (size_t)(eq - a->sources[i]));
        if (!name) return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
        nf_status st = nf_recipe_set_source(r, name, eq + 1, err);
        free(name);
        NF_TRY(st);
    }
    for (size_t i = 0; i < a->nallow_paths; i++) NF_TRY(nf_recipe_allow_path(r, a->allow_paths[i], err));
    return NF_OK;
}
