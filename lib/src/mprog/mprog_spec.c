/* A --method-program as the plan holds it (mprog.h): its words, the file it runs and the digests
 * that the provenance, --dry-run and a scale-out plan record (docs/method-programs.md 2 and 5). */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ninfer/method.h>

#include "common/buf.h"
#include "common/fail.h"
#include "common/hex.h"
#include "common/sha256.h"
#include "mprog/mprog_module.h"

/* The most words a COMMAND may have: far above a real one, and bounds what we hash. */
#define MPROG_MAX_WORDS 4096u

nf_status nf_method_program_check_name(const char *name, nf_error *err)
{
    if (!name || !*name) return nf_error_set(err, NF_ERR_USAGE, "--method-program: a method name is empty");
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
              *c == '.' || *c == '-'))
            return nf_error_set(err, NF_ERR_USAGE,
                                "--method-program %.64s: a method name is made of letters, digits, '_', '.' and '-' "
                                "(byte 0x%02x at offset %zu)",
                                name, (unsigned)(unsigned char)*c, (size_t)(c - name));
    nf_method_id id;
    if (nf_method_find(name, &id, NULL) == NF_OK)
        return nf_error_set(err, NF_ERR_USAGE,
                            "--method-program %s: that is a built-in method's name; give the program another", name);
    if (!strcmp(name, "budget"))
        return nf_error_set(err, NF_ERR_USAGE, "--method-program budget: a recipe's `budget` is not a method name");
    return NF_OK;
}

static void free_words(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) free(v[i]);
    free(v);
}

nf_status nf_mprog_split(const char *command, char ***argv, size_t *argc, nf_error *err)
{
    *argv = NULL;
    *argc = 0;
    char **v = calloc(MPROG_MAX_WORDS + 1, sizeof *v);
    if (!v) return nf_common_nomem(err);
    size_t n = 0;
    const char *s = command;
    nf_status st = NF_OK;
    for (;;) {
        while (*s == ' ' || *s == '\t' || *s == '\n') s++;
        if (!*s) break;
        if (n == MPROG_MAX_WORDS) {
            st = nf_error_set(err, NF_ERR_USAGE, "more than %u words", MPROG_MAX_WORDS);
            break;
        }
        nf_buf b = {0};
        bool ok = true;
        while (*s && *s != ' ' && *s != '\t' && *s != '\n' && st == NF_OK) {
            if (*s == '\'' || *s == '"') {
                const char q = *s++;
                while (*s && *s != q) {
                    if (q == '"' && *s == '\\' && (s[1] == '"' || s[1] == '\\')) s++;
                    ok &= nf_buf_putc(&b, *s++);
                }
                if (!*s) st = nf_error_set(err, NF_ERR_USAGE, "an unterminated %c quote", q);
                else s++;
            } else if (*s == '\\' && s[1]) {
                ok &= nf_buf_putc(&b, s[1]);
                s += 2;
            } else {
                ok &= nf_buf_putc(&b, *s++);
            }
        }
        ok &= nf_buf_putc(&b, '\0');
        if (!ok && st == NF_OK) st = nf_common_nomem(err);
        if (st != NF_OK) {
            free(b.data);
            break;
        }
        v[n++] = b.data;
    }
    if (st == NF_OK && n == 0) st = nf_error_set(err, NF_ERR_USAGE, "no command given");
    if (st != NF_OK) {
        free_words(v, n);
        return st;
    }
    *argv = v;
    *argc = n;
    return NF_OK;
}

static bool executable_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* argv[0] as execvp would find it: itself when it has a '/', else the first PATH entry that
 * holds an executable regular file of that name; then every symbolic link resolved, so that what
 * is digested is what runs. */
static nf_status find_exe(const char *name, const char *word0, char **out, nf_error *err)
{
    char buf[PATH_MAX];
    const char *found = NULL;
    if (strchr(word0, '/')) {
        if (executable_file(word0)) found = word0;
    } else {
        const char *path = getenv("PATH");
        if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
        for (const char *d = path; !found;) {
            const char *e = strchr(d, ':');
            size_t len = e ? (size_t)(e - d) : strlen(d);
            int k = len ? snprintf(buf, sizeof buf, "%.*s/%s", (int)len, d, word0)
                        : snprintf(buf, sizeof buf, "%s", word0);
            if (k > 0 && (size_t)k < sizeof buf && executable_file(buf)) found = buf;
            if (!e) break;
            d = e + 1;
        }
    }
    if (!found)
        return nf_error_set(err, NF_ERR_USAGE, "--method-program %s: '%s' is not an executable file%s", name, word0,
                            strchr(word0, '/') ? "" : " in PATH");
    char *real = realpath(found, NULL);
    if (!real) return nf_error_errno(err, errno, "--method-program %s: %s", name, found);
    *out = real;
    return NF_OK;
}

static nf_status digest_file(const char *name, const char *path, char hex[65], nf_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return nf_error_errno(err, errno, "--method-program %s: %s", name, path);
    nf_sha256 h;
    nf_sha256_init(&h);
    uint8_t buf[1 << 16];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            return nf_error_errno(err, e, "--method-program %s: reading %s", name, path);
        }
        if (n == 0) break;
        nf_sha256_update(&h, buf, (size_t)n);
    }
    close(fd);
    uint8_t d[32];
    nf_sha256_final(&h, d);
    nf_hex_bytes(d, 32, hex);
    return NF_OK;
}

static bool regular_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static nf_status add_file(nf_mprog_spec *s, const char *path, nf_error *err)
{
    nf_mprog_file *f = &s->files[s->nfiles];
    if (!(f->path = strdup(path))) return nf_common_nomem(err);
    s->nfiles++;
    return digest_file(s->name, path, f->sha256, err);
}

nf_status nf_mprog_spec_init(nf_mprog_spec *s, const nf_method_program *m, nf_error *err)
{
    memset(s, 0, sizeof *s);
    NF_TRY(nf_method_program_check_name(m->name, err));
    if (!(s->name = strdup(m->name)) || !(s->command = strdup(m->command ? m->command : "")))
        return nf_common_nomem(err);
    if (m->timeout > 86400u * 7) /* (checked before the product: a larger one would wrap) */
        return nf_error_set(err, NF_ERR_USAGE, "--method-timeout %u: at most a week (604800 seconds)", m->timeout);
    s->timeout_ms = (m->timeout ? m->timeout : NF_METHOD_PROGRAM_TIMEOUT) * 1000u;
    NF_TRY_CTX(nf_mprog_split(s->command, &s->argv, &s->argc, err), err, "--method-program %s", s->name);
    NF_TRY(find_exe(s->name, s->argv[0], &s->exe, err));
    if (!(s->files = calloc(s->argc, sizeof *s->files))) return nf_common_nomem(err);
    NF_TRY(add_file(s, s->exe, err));
    for (size_t i = 1; i < s->argc; i++)
        if (regular_file(s->argv[i])) NF_TRY(add_file(s, s->argv[i], err));
    nf_sha256 h;
    nf_sha256_init(&h);
    for (size_t i = 0; i < s->argc; i++) { /* each word as its 8-byte little-endian length and its bytes */
        uint8_t len[8];
        const size_t n = strlen(s->argv[i]);
        for (int b = 0; b < 8; b++) len[b] = (uint8_t)((uint64_t)n >> (8 * b));
        nf_sha256_update(&h, len, sizeof len);
        nf_sha256_update(&h, s->argv[i], n);
    }
    for (size_t i = 0; i < s->nfiles; i++) {
        nf_sha256_update(&h, s->files[i].sha256, 64);
        nf_sha256_update(&h, "  ", 2);
        nf_sha256_update(&h, s->files[i].path, strlen(s->files[i].path));
        nf_sha256_update(&h, "\n", 1);
    }
    uint8_t d[32];
    nf_sha256_final(&h, d);
    nf_hex_bytes(d, 32, s->digest);
    return NF_OK;
}

void nf_mprog_spec_free(nf_mprog_spec *s)
{
    if (!s) return;
    free(s->name);
    free(s->command);
    free_words(s->argv, s->argc);
    free(s->exe);
    for (size_t i = 0; i < s->nfiles; i++) free(s->files[i].path);
    free(s->files);
    memset(s, 0, sizeof *s);
}

json_t *nf_mprog_spec_describe(const nf_mprog_spec *s)
{
    json_t *cmd = json_array(), *files = json_array();
    for (size_t i = 0; cmd && i < s->argc; i++) json_array_append_new(cmd, json_string(s->argv[i]));
    for (size_t i = 0; files && i < s->nfiles; i++)
        json_array_append_new(files, json_pack("{s:s,s:s}", "path", s->files[i].path, "sha256", s->files[i].sha256));
    return json_pack("{s:s,s:o,s:o,s:s}", "name", s->name, "command", cmd, "files", files, "digest", s->digest);
}
