/* Shared CLI machinery of the ninfer-* programs: declarative option tables, the common flags
 * (--help, --version, -q, -v, --json, --progress; docs/decisions.md, "Exit statuses"), message printing in
 * the form "ninfer-<prog>: error: <what>: <why>", and exit statuses 0/1/2/3. */
#ifndef NINFER_CMD_CLI_H
#define NINFER_CMD_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <ninfer/error.h>

struct json_t;

enum { NF_EXIT_OK = 0, NF_EXIT_INVALID = 1, NF_EXIT_USAGE = 2, NF_EXIT_SYSTEM = 3 };

typedef enum nf_arg_kind { NF_ARG_NONE, NF_ARG_REQUIRED, NF_ARG_OPTIONAL } nf_arg_kind;

/* One row of a program's option table.  id is what the program's handler switches on. */
typedef struct nf_option {
    const char *long_name;
    char short_name;          /* 0 if none */
    nf_arg_kind arg;
    int id;
    const char *arg_name;     /* shown in --help, e.g. "ID" */
    const char *help;
} nf_option;

/* Ids of the common options.  Programs number theirs from NF_OPT_PROGRAM; ids stay above 255 so
 * they never collide with the short-option characters getopt returns. */
enum {
    NF_OPT_HELP = 1000,
    NF_OPT_VERSION,
    NF_OPT_QUIET,
    NF_OPT_VERBOSE,
    NF_OPT_JSON,
    NF_OPT_PROGRESS,
    NF_OPT_PROGRAM = 2000
};

typedef enum nf_progress_mode { NF_PROGRESS_AUTO, NF_PROGRESS_ALWAYS, NF_PROGRESS_NEVER } nf_progress_mode;

/* State common to every program. */
typedef struct nf_cli {
    const char *prog;         /* "ninfer-verify" */
    int verbosity;            /* -1 quiet, 0 normal, 1+ verbose */
    bool json;
    nf_progress_mode progress;
    char **positional;        /* argv entries that are not options */
    int npositional;
} nf_cli;

typedef struct nf_program {
    const char *name;         /* "ninfer-verify" */
    const char *synopsis;     /* usage lines */
    const char *description;  /* one paragraph */
    const nf_option *options; /* program options, terminated by a row with long_name NULL */
    const char *examples;     /* shown at the end of --help */
} nf_program;

/* Called for each program option found; return NF_EXIT_OK to go on, or an exit status. */
typedef int (*nf_option_handler)(void *ctx, nf_cli *cli, int id, const char *arg);

/* Parse argv.  Common options are handled here (--help and --version print and set *done).
 * Returns NF_EXIT_OK, or NF_EXIT_USAGE after printing the problem. */
int nf_cli_parse(nf_cli *cli, const nf_program *prog, int argc, char **argv, nf_option_handler handler,
                 void *ctx, bool *done);
void nf_cli_free(nf_cli *cli);

/* "ninfer-x: error: <msg>" on stderr; returns the exit status for `status`. */
int nf_cli_error(const nf_cli *cli, nf_status status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int nf_cli_report(const nf_cli *cli, const nf_error *err);
/* Usage error: message + "try --help"; returns NF_EXIT_USAGE. */
int nf_cli_usage(const nf_cli *cli, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void nf_cli_warn(const nf_cli *cli, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void nf_cli_info(const nf_cli *cli, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Strings from files (object ids, tensor names, part paths, keys, values) and paths shown to
 * people go through nf_escape (ninfer/escape.h), the one rule of every program:
 * nf_cli_name for a name (control bytes, invalid UTF-8, C1 and bidi controls, backslashes
 * escaped; long ones cut with "..."), nf_cli_line for a message that already holds escaped
 * names (backslashes kept; a newline escaped, so it stays one line).  For printf arguments:
 * printf("object '%s'", nf_cli_name(id).s).  JSON output never uses them: it keeps the exact
 * strings (nf_cli_json_text for bytes that may not be UTF-8). */
typedef struct nf_cli_text {
    char s[4 * 1024 + 16];
} nf_cli_text;
nf_cli_text nf_cli_name(const char *s);
nf_cli_text nf_cli_line(const char *s);
/* A JSON string of bytes that need not be UTF-8 (a path given on the command line, a GGUF
 * name): exact when they are UTF-8, else every invalid byte replaced by U+FFFD (never NULL). */
/* Length of the strict UTF-8 sequence at p (n >= 1 bytes left: no overlong forms, surrogates
 * or code points beyond U+10FFFF), 0 when none starts there. */
size_t nf_cli_utf8_seq(const unsigned char *p, size_t n);
/* A malloc'd, NUL-terminated copy of s[0..len) with every byte that is not part of valid UTF-8
 * replaced by U+FFFD (names and paths from files need not be UTF-8; JSON strings must be);
 * *out_len (if given) gets its length.  NULL when out of memory. */
char *nf_cli_utf8_clean(const char *s, size_t len, size_t *out_len);
struct json_t *nf_cli_json_text(const char *s, size_t len);
struct json_t *nf_cli_json_cstr(const char *s);

/* Parse "A:B" (either side may be empty: ":B", "A:", ":") into [a, b) with defaults 0 and
 * limit; false when malformed. */
bool nf_cli_parse_range(const char *text, uint64_t *a, uint64_t *b, bool *has_a, bool *has_b);
bool nf_cli_parse_u64(const char *text, uint64_t *out);
/* --threads N (-j N) of every program: 1 to NF_CLI_MAX_THREADS into *threads, or a usage error
 * (exit 2) naming the option and the text. */
#define NF_CLI_MAX_THREADS 1024u
int nf_cli_parse_threads(const nf_cli *cli, const char *arg, unsigned *threads);

/* Write a jansson value to stdout as indented JSON followed by a newline. */
int nf_cli_print_json(const nf_cli *cli, struct json_t *value);

/* A temp file that an interrupted run (process pid, gone) left at path: named in a warning that
 * ends with keep_hint, or, with remove, removed (one line on stderr unless quiet).  Returns
 * NF_EXIT_OK, or the exit status of a removal that failed. */
int nf_cli_stale_temp(const nf_cli *cli, const char *path, long pid, bool remove, const char *keep_hint);

/* What the command line lets a recipe read and expand (docs/recipes.md, "What a recipe may
 * read"): --source NAME=PATH (checked for '=' by the option handler), --allow-path DIR and
 * --allow-env NAME, in command-line order.  Arrays sized for argc entries. */
typedef struct nf_cli_recipe_args {
    const char **sources, **allow_paths, **allow_env;
    size_t nsources, nallow_paths, nallow_env;
} nf_cli_recipe_args;

bool nf_cli_recipe_args_init(nf_cli_recipe_args *a, int argc);
void nf_cli_recipe_args_free(nf_cli_recipe_args *a);
/* Apply the --source and --allow-path arguments to a loaded recipe (--allow-env is given to
 * nf_recipe_load_ex: it decides how the recipe's paths expand). */
struct nf_recipe;
nf_status nf_cli_recipe_apply(struct nf_recipe *r, const nf_cli_recipe_args *a, nf_error *err);

#endif
