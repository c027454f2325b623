/* The option rows of cmd/cli/cli.h: for each kind, the field a row binds is set (and nothing else),
 * values out of range, non-numbers and missing values are usage errors (exit 2) with the
 * messages the programs print, list options append in command-line order, and the common
 * options set the fields of nf_cli. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

typedef enum shade { SHADE_RED, SHADE_GREEN, SHADE_BLUE } shade;

typedef struct t_opts {
    bool flag;
    shade mode;  /* NF_OPT_SET */
    shade color; /* NF_OPT_CHOICE */
    const char *name;
    const char *id;
    unsigned threads, level;
    uint64_t count;
    const char **items, **pairs;
    size_t nitems, npairs;
    nf_cli_span span;
    const char *seen; /* the callback's argument */
    int calls;
} t_opts;

static const nf_opt_choice shades[] = {{"red", SHADE_RED}, {"green", SHADE_GREEN}, {"blue", SHADE_BLUE}, {NULL, 0}};

static int on_check(nf_cli *cli, const nf_option *row, void *opts, const char *arg)
{
    t_opts *o = opts;
    o->calls++;
    o->seen = arg;
    if (strcmp(arg, "bad") == 0) return nf_cli_usage(cli, "--%s refuses '%s'", row->long_name, arg);
    return NF_EXIT_OK;
}

static const nf_option rows[] = {
    NF_OPT_FLAG_ROW(t_opts, flag, "flag", 'f', "a flag"),
    NF_OPT_SET_ROW(t_opts, mode, SHADE_BLUE, "blue", 0, "mode blue"),
    NF_OPT_STRING_ROW(t_opts, name, "name", 'n', "NAME", "a name"),
    NF_OPT_STRING_ROW(t_opts, id, "id", 0, "ID", "an id"),
    NF_OPT_UINT_ROW(t_opts, threads, 1, NF_CLI_MAX_THREADS, NULL, "threads", 'j', "N", "threads"),
    NF_OPT_UINT_OPTARG_ROW(t_opts, level, 1, 22, 3, "a level", "zstd", 0, "LEVEL", "a level"),
    NF_OPT_U64_ROW(t_opts, count, 1, UINT64_MAX, "a positive count", "count", 0, "N", "a count"),
    NF_OPT_LIST_ROW(t_opts, items, nitems, NF_CHECK_NONEMPTY, "a directory", "item", 'i', "DIR", "items"),
    NF_OPT_LIST_ROW(t_opts, pairs, npairs, NF_CHECK_KEY_VALUE, NULL, "pair", 0, "NAME=PATH", "pairs"),
    NF_OPT_CHOICE_ROW(t_opts, color, shades, "color", 0, "red|green|blue", "a color"),
    NF_OPT_SPAN_ROW(t_opts, span, "rows", 0, "A:B", "a span"),
    NF_OPT_CALLBACK_ROW(on_check, NF_ARG_REQUIRED, "check", 0, "X", "a callback"),
    NF_OPT_END,
};

static const nf_program prog = {"ninfer-test", "ninfer-test [OPTIONS] ARG...", "A test program.", rows, NULL, NULL};

static char err_text[4096], out_text[8192];
static t_opts o;
static const char *items[16], *pairs[16];

/* fd into a temp file until capture_end copies it to buf. */
static FILE *capture_begin(int fd, int *saved)
{
    FILE *tmp = tmpfile();
    cr_assert_not_null(tmp);
    *saved = dup(fd);
    dup2(fileno(tmp), fd);
    return tmp;
}

static void capture_end(FILE *tmp, int fd, int saved, char *buf, size_t size)
{
    dup2(saved, fd);
    close(saved);
    rewind(tmp);
    size_t n = fread(buf, 1, size - 1, tmp);
    buf[n] = '\0';
    fclose(tmp);
}

/* Parse the NULL-terminated arguments into o (a fresh one); stderr goes to err_text, stdout to
 * out_text. */
static int parse_args(nf_cli *cli, bool *done, const char *const *args)
{
    static char *argv[32];
    int argc = 0;
    argv[argc++] = (char *)"ninfer-test";
    while (*args) argv[argc++] = (char *)*args++;
    argv[argc] = NULL;
    memset(&o, 0, sizeof o);
    o.items = items;
    o.pairs = pairs;
    fflush(stdout);
    fflush(stderr);
    int saved_out, saved_err;
    FILE *out = capture_begin(1, &saved_out), *err = capture_begin(2, &saved_err);
    int rc = nf_cli_parse(cli, &prog, argc, argv, &o, done);
    fflush(stdout);
    fflush(stderr);
    capture_end(out, 1, saved_out, out_text, sizeof out_text);
    capture_end(err, 2, saved_err, err_text, sizeof err_text);
    return rc;
}

#define PARSE(...) parse_args(&cli, &done, (const char *const[]){__VA_ARGS__, NULL})
#define DECLARE \
    nf_cli cli; \
    bool done = false
/* A usage error: exit 2, the message on the first line of stderr, "Try ... --help" after it. */
#define ASSERT_USAGE(rc, msg)                                                                                        \
    do {                                                                                                             \
        cr_assert_eq((rc), NF_EXIT_USAGE);                                                                           \
        cr_assert_str_eq(err_text, "ninfer-test: error: " msg "\nTry 'ninfer-test --help' for more information.\n"); \
        nf_cli_free(&cli);                                                                                           \
    } while (0)

Test(cli_options, nothing_given_leaves_every_field)
{
    DECLARE;
    cr_assert_eq(PARSE("a", "b"), NF_EXIT_OK);
    cr_assert(!o.flag && o.mode == SHADE_RED && !o.name && o.threads == 0 && o.level == 0 && o.count == 0);
    cr_assert(o.nitems == 0 && o.npairs == 0 && !o.span.given && o.calls == 0);
    cr_assert_eq(cli.npositional, 2);
    cr_assert_str_eq(cli.positional[0], "a");
    cr_assert_str_eq(cli.positional[1], "b");
    cr_assert(!done);
    nf_cli_free(&cli);
}

Test(cli_options, flag_and_set)
{
    DECLARE;
    cr_assert_eq(PARSE("--flag", "--blue"), NF_EXIT_OK);
    cr_assert(o.flag);
    cr_assert_eq(o.mode, SHADE_BLUE);
    nf_cli_free(&cli);
    cr_assert_eq(PARSE("-f"), NF_EXIT_OK);
    cr_assert(o.flag);
    cr_assert_eq(o.mode, SHADE_RED);
    nf_cli_free(&cli);
    ASSERT_USAGE(PARSE("--flag=1"), "option '--flag=1' takes no value");
}

Test(cli_options, string)
{
    DECLARE;
    cr_assert_eq(PARSE("--name", "x y", "--id=7"), NF_EXIT_OK);
    cr_assert_str_eq(o.name, "x y");
    cr_assert_str_eq(o.id, "7");
    nf_cli_free(&cli);
    cr_assert_eq(PARSE("-n", "a", "-nb"), NF_EXIT_OK); /* the last one wins */
    cr_assert_str_eq(o.name, "b");
    nf_cli_free(&cli);
    cr_assert_eq(PARSE("--name="), NF_EXIT_OK);
    cr_assert_str_eq(o.name, "");
    nf_cli_free(&cli);
    ASSERT_USAGE(PARSE("--name"), "option '--name' needs a value");
    ASSERT_USAGE(PARSE("-n"), "option '-n' needs a value");
}

Test(cli_options, uint_range)
{
    DECLARE;
    cr_assert_eq(PARSE("--threads", "1"), NF_EXIT_OK);
    cr_assert_eq(o.threads, 1);
    nf_cli_free(&cli);
    cr_assert_eq(PARSE("-j", "1024"), NF_EXIT_OK);
    cr_assert_eq(o.threads, 1024);
    nf_cli_free(&cli);
    cr_assert_eq(PARSE("--threads=0007"), NF_EXIT_OK);
    cr_assert_eq(o.threads, 7);
    nf_cli_free(&cli);
    ASSERT_USAGE(PARSE("--threads", "0"), "--threads takes a number from 1 to 1024, not '0'");
    ASSERT_USAGE(PARSE("-j", "1025"), "--threads takes a number from 1 to 1024, not '1025'");
    ASSERT_USAGE(PARSE("-j", "x"), "--threads takes a number from 1 to 1024, not 'x'");
    ASSERT_USAGE(PARSE("-j", "-1"), "--threads takes a number from 1 to 1024, not '-1'");
    ASSERT_USAGE(PARSE("-j", "+3"), "--threads takes a number from 1 to 1024, not '+3'");
    ASSERT_USAGE(PARSE("-j", "3 "), "--threads takes a number from 1 to 1024, not '3 '");
    ASSERT_USAGE(PARSE("--threads="), "--threads takes a number from 1 to 1024, not ''");
    /* beyond 64 bits is not taken modulo anything */
    ASSERT_USAGE(PARSE("-j", "18446744073709551617"),
                 "--threads takes a number from 1 to 1024, not '18446744073709551617'");
    ASSERT_USAGE(PARSE("--threads"), "option '--threads' needs a value");
    ASSERT_USAGE(PARSE("-j"), "option '-j' needs a value");
}

Test(cli_options, uint_optional_argument)
{
    DECLARE;
    cr_assert_eq(PARSE("--zstd"), NF_EXIT_OK);
    cr_assert_eq(o.level, 3);
    nf_cli_free(&cli);
    cr_assert_eq(PARSE("--zstd=22", "x"), NF_EXIT_OK);
    cr_assert_eq(o.level, 22);
    nf_cli_free(&cli);
    cr_assert_eq(PARSE("--zstd", "5"), NF_EXIT_OK); /* an optional value is never the next word */
    cr_assert_eq(o.level, 3);
    cr_assert_str_eq(cli.positional[0], "5");
    nf_cli_free(&cli);
    ASSERT_USAGE(PARSE("--zstd=0"), "--zstd takes a level from 1 to 22, not '0'");
    ASSERT_USAGE(PARSE("--zstd=23"), "--zstd takes a level from 1 to 22, not '23'");
}

Test(cli_options, u64_without_upper_bound)
{
    DECLARE;
    cr_assert_eq(PARSE("--count", "18446744073709551615"), NF_EXIT_OK);
    cr_assert_eq(o.count, UINT64_MAX);
    nf_cli_free(&cli);
    ASSERT_USAGE(PARSE("--count", "0"), "--count takes a positive count, not '0'");
    ASSERT_USAGE(PARSE("--count", "18446744073709551616"),
                 "--count takes a positive count, not '18446744073709551616'");
    ASSERT_USAGE(PARSE("--count", "1e3"), "--count takes a positive count, not '1e3'");
}

Test(cli_options, list_appends_in_order)
{
    DECLARE;
    cr_assert_eq(PARSE("--item", "a", "-i", "b", "x", "--item=c", "--pair", "k=v", "--pair=k2=v=2"), NF_EXIT_OK);
    cr_assert_eq(o.nitems, 3);
    cr_assert_str_eq(o.items[0], "a");
    cr_assert_str_eq(o.items[1], "b");
    cr_assert_str_eq(o.items[2], "c");
    cr_assert_eq(o.npairs, 2);
    cr_assert_str_eq(o.pairs[0], "k=v");
    cr_assert_str_eq(o.pairs[1], "k2=v=2");
    cr_assert_eq(cli.npositional, 1);
    nf_cli_free(&cli);
    cr_assert_eq(PARSE("--pair", "k="), NF_EXIT_OK); /* an empty value is the program's to judge */
    cr_assert_eq(o.npairs, 1);
    nf_cli_free(&cli);
    ASSERT_USAGE(PARSE("--item="), "--item takes a directory");
    ASSERT_USAGE(PARSE("--pair", "k"), "--pair takes NAME=PATH, not 'k'");
    ASSERT_USAGE(PARSE("--pair", "=v"), "--pair takes NAME=PATH, not '=v'");
    ASSERT_USAGE(PARSE("--item"), "option '--item' needs a value");
}

Test(cli_options, choice)
{
    DECLARE;
    cr_assert_eq(PARSE("--color", "blue"), NF_EXIT_OK);
    cr_assert_eq(o.color, SHADE_BLUE);
    nf_cli_free(&cli);
    cr_assert_eq(PARSE("--color=green", "--color=red"), NF_EXIT_OK);
    cr_assert_eq(o.color, SHADE_RED);
    nf_cli_free(&cli);
    ASSERT_USAGE(PARSE("--color", "Blue"), "--color takes red, green or blue, not 'Blue'");
    ASSERT_USAGE(PARSE("--color="), "--color takes red, green or blue, not ''");
}

Test(cli_options, span)
{
    DECLARE;
    cr_assert_eq(PARSE("--rows", "2:9"), NF_EXIT_OK);
    cr_assert(o.span.given && o.span.has_a && o.span.has_b);
    cr_assert(o.span.a == 2 && o.span.b == 9);
    nf_cli_free(&cli);
    cr_assert_eq(PARSE("--rows", ":4"), NF_EXIT_OK);
    cr_assert(o.span.given && !o.span.has_a && o.span.has_b && o.span.b == 4);
    nf_cli_free(&cli);
    cr_assert_eq(PARSE("--rows", ":"), NF_EXIT_OK);
    cr_assert(o.span.given && !o.span.has_a && !o.span.has_b);
    nf_cli_free(&cli);
    ASSERT_USAGE(PARSE("--rows", "3"), "--rows takes A:B, not '3'");
    ASSERT_USAGE(PARSE("--rows", "1:2:3"), "--rows takes A:B, not '1:2:3'");
    ASSERT_USAGE(PARSE("--rows", "a:2"), "--rows takes A:B, not 'a:2'");
}

Test(cli_options, callback)
{
    DECLARE;
    cr_assert_eq(PARSE("--check", "one", "--check", "two"), NF_EXIT_OK);
    cr_assert_eq(o.calls, 2);
    cr_assert_str_eq(o.seen, "two");
    nf_cli_free(&cli);
    /* its status stops the parse: the options after it are not looked at */
    ASSERT_USAGE(PARSE("--check", "bad", "--threads", "0"), "--check refuses 'bad'");
    cr_assert_eq(o.calls, 1);
}

Test(cli_options, common_options_set_cli)
{
    DECLARE;
    cr_assert_eq(PARSE("--json", "-v", "--verbose", "--progress", "never"), NF_EXIT_OK);
    cr_assert(cli.json);
    cr_assert_eq(cli.verbosity, 2);
    cr_assert_eq(cli.progress, NF_PROGRESS_NEVER);
    nf_cli_free(&cli);
    cr_assert_eq(PARSE("-q", "--progress=always"), NF_EXIT_OK);
    cr_assert_eq(cli.verbosity, -1);
    cr_assert_eq(cli.progress, NF_PROGRESS_ALWAYS);
    nf_cli_free(&cli);
    ASSERT_USAGE(PARSE("--progress", "often"), "--progress takes auto, always or never, not 'often'");
    ASSERT_USAGE(PARSE("--prog"), "option '--prog' needs a value");
}

Test(cli_options, unknown_and_ambiguous)
{
    DECLARE;
    ASSERT_USAGE(PARSE("--nope"), "unknown option '--nope'");
    ASSERT_USAGE(PARSE("-Z"), "unknown option '-Z'");
    ASSERT_USAGE(PARSE("--co", "1"), "option '--co' is ambiguous (--count, --color)");
    cr_assert_eq(PARSE("--thr", "4"), NF_EXIT_OK); /* a unique prefix is the option */
    cr_assert_eq(o.threads, 4);
    nf_cli_free(&cli);
}

Test(cli_options, double_dash_ends_options)
{
    DECLARE;
    cr_assert_eq(PARSE("-f", "--", "--threads", "0"), NF_EXIT_OK);
    cr_assert(o.flag);
    cr_assert_eq(o.threads, 0);
    cr_assert_eq(cli.npositional, 2);
    cr_assert_str_eq(cli.positional[0], "--threads");
    nf_cli_free(&cli);
}

Test(cli_options, help_is_printed_from_the_rows)
{
    DECLARE;
    cr_assert_eq(PARSE("--help", "--threads", "0"), NF_EXIT_OK); /* done before the bad value */
    cr_assert(done);
    const char *out = out_text;
    cr_assert(strstr(out, "usage: ninfer-test [OPTIONS] ARG...\n"));
    cr_assert(strstr(out, "  -j, --threads N              threads\n"), "%s", out);
    cr_assert(strstr(out, "      --zstd[=LEVEL]           a level\n"), "%s", out);
    cr_assert(strstr(out, "  -f, --flag                   a flag\n"), "%s", out);
    cr_assert(strstr(out, "      --progress auto|always|never\n"), "%s", out);
    nf_cli_free(&cli);
}
