/* Shared CLI machinery of the ninfer-* programs: declarative option tables, the common flags
 * (--help, --version, -q, -v, --json, --progress; docs/decisions.md, "Exit statuses"), message printing in
 * the form "ninfer-<prog>: error: <what>: <why>", and exit statuses 0/1/2/3. */
#ifndef NINFER_CMD_CLI_H
#define NINFER_CMD_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <ninfer/error.h>
#include <ninfer/mprog.h>

#include "common/pool.h"

struct json_t;

enum { NF_EXIT_OK = 0, NF_EXIT_INVALID = 1, NF_EXIT_USAGE = 2, NF_EXIT_SYSTEM = 3 };

typedef enum nf_arg_kind { NF_ARG_NONE, NF_ARG_REQUIRED, NF_ARG_OPTIONAL } nf_arg_kind;

/* What an option does with its field (the row's binding): the generic parser of cli.c stores
 * the value, checks it and prints the usage error (exit 2), so that each rule and its message
 * exist once.  Messages name the option by its long name: "--NAME takes ..., not 'ARG'". */
typedef enum nf_opt_kind {
    NF_OPT_FLAG,    /* bool field set true */
    NF_OPT_SET,     /* int-sized field (an enum) set to .value */
    NF_OPT_STRING,  /* const char * field = the argument */
    NF_OPT_UINT,    /* unsigned field, .min to .max */
    NF_OPT_U64,     /* uint64_t field, .min to .max */
    NF_OPT_LIST,    /* repeatable: appended to a const char ** array (room for argc entries,
                      * allocated by the program) whose size_t count is at .count_offset */
    NF_OPT_CHOICE,  /* int-sized field (an enum) = the .value of the .choices row named */
    NF_OPT_SPAN,    /* nf_cli_span field: "A:B", either side may be empty */
    NF_OPT_CALLBACK /* .callback does it (a rule no other kind states) */
} nf_opt_kind;

/* Checks on the text of a NF_OPT_STRING or NF_OPT_LIST argument. */
typedef enum nf_opt_check {
    NF_CHECK_NONE,
    NF_CHECK_NONEMPTY, /* "--NAME takes WHAT" when empty */
    NF_CHECK_KEY_VALUE /* KEY=VALUE with a non-empty KEY: "--NAME takes ARG_NAME, not 'ARG'" */
} nf_opt_check;

/* A name of a NF_OPT_CHOICE option and the value it stores; tables end with name NULL. */
typedef struct nf_opt_choice {
    const char *name;
    int value;
} nf_opt_choice;

/* The value of a NF_OPT_SPAN option: [a, b) where given, has_a and has_b say which sides were
 * written (the program supplies the defaults, e.g. 0 and the row count). */
typedef struct nf_cli_span {
    uint64_t a, b;
    bool has_a, has_b, given;
} nf_cli_span;

struct nf_cli;
struct nf_option;
/* field: the program's options struct (the ctx of nf_cli_parse); arg NULL when the option takes
 * none.  Returns NF_EXIT_OK, or an exit status after printing the problem (nf_cli_usage). */
typedef int (*nf_opt_callback)(struct nf_cli *cli, const struct nf_option *row, void *opts, const char *arg);

/* One row of a program's option table: the option's names and --help text, and the field of the
 * program's options struct it sets.  Write rows with the NF_OPT_*_ROW macros below: they take the
 * offset with offsetof and refuse, at compile time, a field of another type than the kind's (a
 * row with tags: NF_OPT_TAGGED with the same arguments given to NF_OPT_*_FIELDS). */
typedef struct nf_option {
    const char *long_name;
    char short_name; /* 0 if none */
    nf_arg_kind arg;
    const char *arg_name; /* shown in --help, e.g. "ID" */
    const char *help;
    nf_opt_kind kind;
    size_t offset;       /* of the field in the options struct */
    size_t count_offset; /* NF_OPT_LIST: of its size_t count */
    uint64_t min, max;   /* NF_OPT_UINT, NF_OPT_U64: the accepted values */
    uint64_t def;        /* NF_OPT_UINT, NF_OPT_U64 with NF_ARG_OPTIONAL: the value without one */
    int value;           /* NF_OPT_SET */
    const char *what;    /* the accepted text in messages, e.g. "a number" (see cli.c) */
    nf_opt_check check;
    const nf_opt_choice *choices;
    nf_opt_callback callback;
    unsigned tags; /* the program's own marks of the option (0 unless a row sets them with
                               * NF_OPT_TAGGED; e.g. ninfer-convert's: allowed with --plan) */
} nf_option;

/* Compile-time checks of a binding: the offset of `member` in `type`, which must have type T
 * (_Generic has no association for another type), or be int-sized for enums (whose compatible
 * integer type is the compiler's choice). */
#define NF_OPT_FIELD_(type, member, T) _Generic(((type *)0)->member, T : offsetof(type, member))
#define NF_OPT_INTFIELD_(type, member) \
    (offsetof(type, member) + 0 * sizeof(char[sizeof(((type *)0)->member) == sizeof(int) ? 1 : -1]))

#define NF_OPT_FLAG_FIELDS(type, member, lname, sname, help_)                                              \
    .long_name = (lname), .short_name = (sname), .arg = NF_ARG_NONE, .help = (help_), .kind = NF_OPT_FLAG, \
    .offset = NF_OPT_FIELD_(type, member, bool)
#define NF_OPT_FLAG_ROW(type, member, lname, sname, help_)    \
    {                                                         \
        NF_OPT_FLAG_FIELDS(type, member, lname, sname, help_) \
    }
#define NF_OPT_SET_FIELDS(type, member, val, lname, sname, help_)                                         \
    .long_name = (lname), .short_name = (sname), .arg = NF_ARG_NONE, .help = (help_), .kind = NF_OPT_SET, \
    .offset = NF_OPT_INTFIELD_(type, member), .value = (int)(val)
#define NF_OPT_SET_ROW(type, member, val, lname, sname, help_)    \
    {                                                             \
        NF_OPT_SET_FIELDS(type, member, val, lname, sname, help_) \
    }
#define NF_OPT_STRING_FIELDS(type, member, lname, sname, argname, help_)                                         \
    .long_name = (lname), .short_name = (sname), .arg = NF_ARG_REQUIRED, .arg_name = (argname), .help = (help_), \
    .kind = NF_OPT_STRING, .offset = NF_OPT_FIELD_(type, member, const char *)
#define NF_OPT_STRING_ROW(type, member, lname, sname, argname, help_)    \
    {                                                                    \
        NF_OPT_STRING_FIELDS(type, member, lname, sname, argname, help_) \
    }
#define NF_OPT_UINT_FIELDS(type, member, lo, hi, what_, lname, sname, argname, help_)                            \
    .long_name = (lname), .short_name = (sname), .arg = NF_ARG_REQUIRED, .arg_name = (argname), .help = (help_), \
    .kind = NF_OPT_UINT, .offset = NF_OPT_FIELD_(type, member, unsigned), .min = (lo), .max = (hi), .what = (what_)
#define NF_OPT_UINT_ROW(type, member, lo, hi, what_, lname, sname, argname, help_)    \
    {                                                                                 \
        NF_OPT_UINT_FIELDS(type, member, lo, hi, what_, lname, sname, argname, help_) \
    }
#define NF_OPT_U64_FIELDS(type, member, lo, hi, what_, lname, sname, argname, help_)                             \
    .long_name = (lname), .short_name = (sname), .arg = NF_ARG_REQUIRED, .arg_name = (argname), .help = (help_), \
    .kind = NF_OPT_U64, .offset = NF_OPT_FIELD_(type, member, uint64_t), .min = (lo), .max = (hi), .what = (what_)
#define NF_OPT_U64_ROW(type, member, lo, hi, what_, lname, sname, argname, help_)    \
    {                                                                                \
        NF_OPT_U64_FIELDS(type, member, lo, hi, what_, lname, sname, argname, help_) \
    }
/* An optional argument: --NAME alone stores dflt, --NAME=N stores N (min to max). */
#define NF_OPT_UINT_OPTARG_FIELDS(type, member, lo, hi, dflt, what_, lname, sname, argname, help_)                 \
    .long_name = (lname), .short_name = (sname), .arg = NF_ARG_OPTIONAL, .arg_name = (argname), .help = (help_),   \
    .kind = NF_OPT_UINT, .offset = NF_OPT_FIELD_(type, member, unsigned), .min = (lo), .max = (hi), .def = (dflt), \
    .what = (what_)
#define NF_OPT_UINT_OPTARG_ROW(type, member, lo, hi, dflt, what_, lname, sname, argname, help_)    \
    {                                                                                              \
        NF_OPT_UINT_OPTARG_FIELDS(type, member, lo, hi, dflt, what_, lname, sname, argname, help_) \
    }
#define NF_OPT_LIST_FIELDS(type, member, count, check_, what_, lname, sname, argname, help_)                     \
    .long_name = (lname), .short_name = (sname), .arg = NF_ARG_REQUIRED, .arg_name = (argname), .help = (help_), \
    .kind = NF_OPT_LIST, .offset = NF_OPT_FIELD_(type, member, const char **),                                   \
    .count_offset = NF_OPT_FIELD_(type, count, size_t), .check = (check_), .what = (what_)
#define NF_OPT_LIST_ROW(type, member, count, check_, what_, lname, sname, argname, help_)    \
    {                                                                                        \
        NF_OPT_LIST_FIELDS(type, member, count, check_, what_, lname, sname, argname, help_) \
    }
#define NF_OPT_CHOICE_FIELDS(type, member, table, lname, sname, argname, help_)                                  \
    .long_name = (lname), .short_name = (sname), .arg = NF_ARG_REQUIRED, .arg_name = (argname), .help = (help_), \
    .kind = NF_OPT_CHOICE, .offset = NF_OPT_INTFIELD_(type, member), .choices = (table)
#define NF_OPT_CHOICE_ROW(type, member, table, lname, sname, argname, help_)    \
    {                                                                           \
        NF_OPT_CHOICE_FIELDS(type, member, table, lname, sname, argname, help_) \
    }
#define NF_OPT_SPAN_FIELDS(type, member, lname, sname, argname, help_)                                           \
    .long_name = (lname), .short_name = (sname), .arg = NF_ARG_REQUIRED, .arg_name = (argname), .help = (help_), \
    .kind = NF_OPT_SPAN, .offset = NF_OPT_FIELD_(type, member, nf_cli_span)
#define NF_OPT_SPAN_ROW(type, member, lname, sname, argname, help_)    \
    {                                                                  \
        NF_OPT_SPAN_FIELDS(type, member, lname, sname, argname, help_) \
    }
#define NF_OPT_CALLBACK_FIELDS(fn, argkind, lname, sname, argname, help_)                                  \
    .long_name = (lname), .short_name = (sname), .arg = (argkind), .arg_name = (argname), .help = (help_), \
    .kind = NF_OPT_CALLBACK, .callback = (fn)
#define NF_OPT_CALLBACK_ROW(fn, argkind, lname, sname, argname, help_)    \
    {                                                                     \
        NF_OPT_CALLBACK_FIELDS(fn, argkind, lname, sname, argname, help_) \
    }
/* A row with tags: NF_OPT_TAGGED(TAGS, NF_OPT_FLAG_FIELDS(...)) in place of NF_OPT_FLAG_ROW(...). */
#define NF_OPT_TAGGED(tags_, fields) \
    {                                \
        fields, .tags = (tags_)      \
    }
#define NF_OPT_END        \
    {                     \
        .long_name = NULL \
    }

typedef enum nf_progress_mode { NF_PROGRESS_AUTO, NF_PROGRESS_ALWAYS, NF_PROGRESS_NEVER } nf_progress_mode;

/* State common to every program. */
typedef struct nf_cli {
    const char *prog; /* "ninfer-verify" */
    int verbosity;    /* -1 quiet, 0 normal, 1+ verbose */
    bool json;
    nf_progress_mode progress;
    char **positional; /* argv entries that are not options */
    int npositional;
    const struct nf_program *program; /* for --help and --version */
    bool done;                        /* --help or --version printed: exit 0 */
    const struct nf_option **given;   /* the rows of the program's own options given, in command-line
                                     * order (once per time given): what a program refuses in a mode
                                     * is decided from them (e.g. by their tags) */
    size_t ngiven;
} nf_cli;

typedef struct nf_program {
    const char *name;         /* "ninfer-verify" */
    const char *synopsis;     /* usage lines */
    const char *description;  /* one paragraph */
    const nf_option *options; /* program options, terminated by a row with long_name NULL */
    const char *examples;     /* shown at the end of --help */
    const char *exit_status;  /* the --help line when not the usual "0 success, 1 invalid input, ..."
                                 (ninfer-diff: 1 means different); NULL: the usual */
} nf_program;

/* Parse argv: every option given sets the field its row binds in opts (the program's options
 * struct), the common ones fields of cli (--help and --version print and set *done).  Returns
 * NF_EXIT_OK, or NF_EXIT_USAGE (or a callback's status) after printing the problem. */
int nf_cli_parse(nf_cli *cli, const nf_program *prog, int argc, char **argv, void *opts, bool *done);
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
/* A malloc'd, NUL-terminated copy of s[0..len) with every byte that is not part of strict UTF-8
 * (common/utf8.h) replaced by U+FFFD (names and paths from files need not be UTF-8; JSON strings
 * must be); *out_len (if given) gets its length.  NULL when out of memory. */
char *nf_cli_utf8_clean(const char *s, size_t len, size_t *out_len);
/* A JSON string of bytes that need not be UTF-8 (a path given on the command line, a GGUF
 * name): exact when they are UTF-8, else every invalid byte replaced by U+FFFD (never NULL). */
struct json_t *nf_cli_json_text(const char *s, size_t len);
struct json_t *nf_cli_json_cstr(const char *s);

/* Parse "A:B" (either side may be empty: ":B", "A:", ":") into [a, b) with defaults 0 and
 * limit; false when malformed. */
bool nf_cli_parse_range(const char *text, uint64_t *a, uint64_t *b, bool *has_a, bool *has_b);
bool nf_cli_parse_u64(const char *text, uint64_t *out);
/* The largest --threads N (-j N) of every program (an NF_OPT_UINT row from 1): the pool's cap,
 * which also bounds the default count (common/pool.h, nf_pool_threads). */
#define NF_CLI_MAX_THREADS NF_POOL_MAX_THREADS

/* Write a jansson value to stdout as indented JSON followed by a newline. */
int nf_cli_print_json(const nf_cli *cli, struct json_t *value);

/* A temp file that an interrupted run (process pid, gone) left at path: named in a warning that
 * ends with keep_hint, or, with remove, removed (one line on stderr unless quiet).  Returns
 * NF_EXIT_OK, or the exit status of a removal that failed. */
int nf_cli_stale_temp(const nf_cli *cli, const char *path, long pid, bool remove, const char *keep_hint);

/* What the command line lets a recipe read and expand (docs/recipes.md, "What a recipe may
 * read"): --source NAME=PATH (checked for '=' by its NF_CHECK_KEY_VALUE row), --allow-path DIR and
 * --allow-env NAME, in command-line order.  Arrays sized for argc entries. */
typedef struct nf_cli_recipe_args {
    const char **sources, **allow_paths, **allow_env;
    size_t nsources, nallow_paths, nallow_env;
    /* --method-program NAME=COMMAND (repeatable) and --method-timeout SECONDS; programs is
     * what nf_cli_method_programs makes of them (nf_recipe_options.programs) */
    const char **method_programs;
    size_t nmethod_programs;
    unsigned method_timeout;
    nf_method_program *programs;
    size_t nprograms;
} nf_cli_recipe_args;

bool nf_cli_recipe_args_init(nf_cli_recipe_args *a, int argc);
/* a->programs from --method-program NAME=COMMAND and --method-timeout (docs/method-programs.md 2);
 * NF_ERR_USAGE for a name nf_method_program_check_name refuses or one given twice. */
nf_status nf_cli_method_programs(nf_cli_recipe_args *a, nf_error *err);
void nf_cli_recipe_args_free(nf_cli_recipe_args *a);
/* Apply the --source and --allow-path arguments to a loaded recipe (--allow-env is given to
 * nf_recipe_load_ex: it decides how the recipe's paths expand). */
struct nf_recipe;
nf_status nf_cli_recipe_apply(struct nf_recipe *r, const nf_cli_recipe_args *a, nf_error *err);

/* What a command-line path is, decided by content, not by name (input_kind.c): a regular file
 * starting with "NINFER\0" is an artifact (whatever its version byte: the artifact reader
 * explains old versions); any other file or a directory is a checkpoint; a path that cannot be
 * examined is left to the reader that opens it, whose message names it (UNREADABLE).  What is
 * neither a regular file nor a directory (a device, a FIFO, a socket), and a pseudo-file of /proc
 * or /sys (regular and 0 bytes by stat, yet reads fail or return text), is NOT_A_FILE: a system
 * error (docs/decisions.md, "Exit statuses": exit 3), *err saying why. */
typedef enum nf_cli_input {
    NF_INPUT_UNREADABLE,
    NF_INPUT_ARTIFACT,
    NF_INPUT_CHECKPOINT,
    NF_INPUT_NOT_A_FILE
} nf_cli_input;
nf_cli_input nf_cli_input_kind(const char *path, nf_error *err);

#endif
