/* ninfer: git-style dispatcher.  `ninfer verify ...` runs `ninfer-verify ...`, looked up first
 * beside this executable, then on PATH; every program of the build is a command. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ninfer/ninfer.h>

/* The commands: the build's list of programs (NINFER_PROGRAMS in CMakeLists.txt). */
static const struct command {
    const char *name;
    const char *summary;
} commands[] = {
#include "ninfer_commands.h"
};

static void usage(FILE *out)
{
    fprintf(out, "usage: ninfer COMMAND [ARGS...]\n       ninfer --help | --version\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n`ninfer COMMAND --help` shows a command's options.\n"
                 "exit status: 0 success, 1 invalid input (diff: different), 2 usage error, 3 system error\n");
}

static const struct command *find(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(commands[i].name, name) == 0) return &commands[i];
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
        printf("ninfer (ninfer-tools) %s\n", nf_version());
        return 0;
    }
    const struct command *cmd = find(argv[1]);
    if (!cmd) {
        fprintf(stderr, "ninfer: error: unknown command '%s'\n", argv[1]);
        usage(stderr);
        return 2;
    }
    char prog[64];
    snprintf(prog, sizeof prog, "ninfer-%s", cmd->name);
    argv[1] = prog;

    /* Beside this executable first, so a build tree's ninfer runs its own programs. */
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash && (size_t)(slash - self) + 1 + strlen(prog) < sizeof self) {
            strcpy(slash + 1, prog);
            execv(self, argv + 1);
        }
    }
    execvp(prog, argv + 1);
    fprintf(stderr, "ninfer: error: cannot run %s: %s\n", prog, strerror(errno));
    return 3;
}
