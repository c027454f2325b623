/* tests/fuzz/replay_main.c - replays inputs through a fuzz target without libFuzzer.
 *
 *   replay_<name> PATH...
 *
 * Every PATH is a file (one input) or a directory (each regular file in it, sorted by name,
 * names starting with '.' skipped, no recursion).  Each input is read into a buffer of exactly
 * its size, so that a sanitizer build reports any read past it, and passed to
 * LLVMFuzzerTestOneInput.  The name of each input is printed before it runs, so the last line
 * of a failing run names the culprit.  Exit status: 0 when every input ran, 2 when a PATH
 * cannot be read (a crash is the target's own exit). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_target.h"

static int run_file(const char *path, size_t *count)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s: %s\n", path, strerror(errno));
        return 2;
    }
    size_t cap = 4096, len = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (len < cap) break;
        unsigned char *grown = realloc(buf, cap * 2);
        if (!grown) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = grown;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        free(buf);
        fprintf(stderr, "replay: cannot read %s\n", path);
        return 2;
    }
    /* An exact-size copy: the slack of the read buffer would hide overreads from ASan. */
    unsigned char *exact = malloc(len ? len : 1);
    if (!exact) {
        free(buf);
        fprintf(stderr, "replay: out of memory for %s\n", path);
        return 2;
    }
    if (len) memcpy(exact, buf, len);
    free(buf);
    printf("replay: %s (%zu bytes)\n", path, len);
    fflush(stdout);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    (*count)++;
    return 0;
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int run_dir(const char *dir, size_t *count)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "replay: cannot open directory %s: %s\n", dir, strerror(errno));
        return 2;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 64;
            char **grown = realloc(names, nc * sizeof *names);
            if (!grown) {
                rc = 2;
                break;
            }
            names = grown;
            cap = nc;
        }
        size_t need = strlen(dir) + strlen(e->d_name) + 2;
        names[n] = malloc(need);
        if (!names[n]) {
            rc = 2;
            break;
        }
        snprintf(names[n], need, "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (rc == 0 && stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) rc = run_file(names[i], count);
        free(names[i]);
    }
    free(names);
    if (rc) fprintf(stderr, "replay: failed while reading %s\n", dir);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE_OR_DIRECTORY...\n", argv[0]);
        return 2;
    }
    size_t count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
            return 2;
        }
        int rc = S_ISDIR(st.st_mode) ? run_dir(argv[i], &count) : run_file(argv[i], &count);
        if (rc) return rc;
    }
    printf("replay: %zu inputs, no failure\n", count);
    return 0;
}
