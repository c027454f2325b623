/* What killed runs left beside an output (ninfer/convert.h, nf_stale_find): the names are the
 * writer's and the converter's own -- temp files named by common/io.c (nf_io_mkstemp_beside,
 * read back with nf_io_beside_pid), parts ".part-NNNN" (container/split.c) and the report
 * ".conversion.json" (convert/execute.c) -- so the finder lives in the library beside them. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ninfer/convert.h>

#include "common/io.h"

/* Length of a ".part-NNNN" (4 or more digits) prefix of s, or 0. */
static size_t part_suffix(const char *s)
{
    if (strncmp(s, ".part-", 6) != 0) return 0;
    size_t n = 0;
    while (s[6 + n] >= '0' && s[6 + n] <= '9') n++;
    return n >= 4 ? 6 + n : 0;
}

/* rest = "[.part-NNNN[.receipt.json] | .entry.receipt.json | .entry-staged | .conversion.json]
 * .<pid>@<host>.XXXXXX.tmp" (or ".old" for a file set aside; the receipts are a scale-out task's,
 * the staged entry's name an assembler's own link of it, docs/scale-out.md): the
 * pid, or -1; *backup tells the suffix, *plain whether it is a temp of dest itself (no part,
 * receipt or report infix), *local whether its host is this one.  The
 * "<pid>@<host>.XXXXXX<suffix>" tail is read by common/io.c, which names them. */
static long temp_pid(const char *rest, bool *backup, bool *plain, bool *local)
{
    size_t skip = part_suffix(rest);
    if (skip && strncmp(rest + skip, ".receipt.json.", 14) == 0) skip += 13;
    if (!skip && strncmp(rest, ".conversion.json.", 17) == 0) skip = 16;
    if (!skip && strncmp(rest, ".entry.receipt.json.", 20) == 0) skip = 19;
    if (!skip && strncmp(rest, ".entry-staged.", 14) == 0) skip = 13;
    *plain = skip == 0;
    rest += skip;
    if (*rest != '.') return -1;
    const char *suffix = NULL;
    long pid = nf_io_beside_pid(rest + 1, &suffix, local);
    if (pid < 0) return -1;
    *backup = strcmp(suffix, ".old") == 0;
    if (strcmp(suffix, ".tmp") != 0 && !*backup) return -1;
    return pid;
}

/* Is process pid running on this host?  EPERM: it exists but belongs to someone else. */
static bool process_alive(long pid)
{
    if (pid == (long)getpid()) return true;
    return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

/* A set-aside name ".<X>.<pid>@<host>.XXXXXX.old" was X: the name without its leading dot and
 * its last three dot-separated fields (the owner, the six characters, "old"). */
static char *original_of(const char *dir, const char *name)
{
    size_t need = strlen(dir) + strlen(name) + 1;
    char *p = malloc(need);
    if (!p) return NULL;
    snprintf(p, need, "%s%s", dir, name + 1);
    for (int dots = 0; dots < 3; dots++) {
        char *d = strrchr(p + strlen(dir), '.');
        if (d) *d = '\0';
    }
    return p;
}

static bool push_stale(nf_stale **v, size_t *n, size_t *cap, const char *dir, const char *name, long pid,
                       nf_stale_kind kind)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 4;
        nf_stale *nv = realloc(*v, c * sizeof *nv);
        if (!nv) return false;
        *v = nv;
        *cap = c;
    }
    size_t need = strlen(dir) + strlen(name) + 1;
    char *path = malloc(need);
    if (!path) return false;
    snprintf(path, need, "%s%s", dir, name);
    (*v)[*n].path = path;
    (*v)[*n].pid = pid;
    (*v)[*n].kind = kind;
    (*v)[*n].original = NULL;
    (*v)[*n].entry = false;
    if (kind == NF_STALE_BACKUP && ((*v)[*n].original = original_of(dir, name)) == NULL) {
        free(path);
        return false;
    }
    (*n)++;
    return true;
}

nf_status nf_stale_find(const char *dest, bool artifact, nf_stale **out, size_t *count, nf_error *err)
{
    *out = NULL;
    *count = 0;
    const char *slash = strrchr(dest, '/');
    const char *base = slash ? slash + 1 : dest;
    size_t blen = strlen(base);
    char *dir = slash ? strndup(dest, (size_t)(slash - dest) + 1) : strdup("");
    if (!dir) return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    DIR *d = opendir(*dir ? dir : ".");
    if (!d) {
        nf_status st = errno == ENOENT ? NF_OK : nf_error_errno(err, errno, "cannot list %s", *dir ? dir : ".");
        free(dir);
        return st;
    }
    struct stat sb;
    bool entry_exists = lstat(dest, &sb) == 0;
    nf_stale *v = NULL, *parts = NULL;
    size_t n = 0, cap = 0, nparts = 0, capparts = 0;
    bool live_temp = false, ok = true;
    struct dirent *e;
    while (ok && (e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        if (name[0] == '.' && strncmp(name + 1, base, blen) == 0) {
            bool backup = false, plain = false, local = true;
            long pid = temp_pid(name + 1 + blen, &backup, &plain, &local);
            if (pid < 0 || (!artifact && (backup || !plain))) continue;
            /* a process of another host sharing this filesystem cannot be asked from here: its
             * files count as a live run's, never stale */
            if (!local || process_alive(pid)) {
                live_temp = true;
                continue;
            }
            char *full = NULL;
            size_t need = strlen(dir) + strlen(name) + 1;
            if ((full = malloc(need)) == NULL) {
                ok = false;
                break;
            }
            snprintf(full, need, "%s%s", dir, name);
            bool regular = lstat(full, &sb) == 0 && S_ISREG(sb.st_mode);
            free(full);
            if (regular) ok = push_stale(&v, &n, &cap, dir, name, pid, backup ? NF_STALE_BACKUP : NF_STALE_TEMP);
            if (regular && ok && backup && plain) v[n - 1].entry = true;
        } else if (artifact && !entry_exists && strncmp(name, base, blen) == 0) {
            size_t k = part_suffix(name + blen);
            if (k && name[blen + k] == '\0')
                ok = push_stale(&parts, &nparts, &capparts, dir, name, 0, NF_STALE_ORPHAN_PART);
        }
    }
    closedir(d);
    free(dir);
    /* Parts without their entry: an interrupted publication (parts are published first), unless
     * a live process is publishing right now. */
    for (size_t i = 0; ok && i < nparts; i++) {
        if (live_temp) {
            free(parts[i].path);
            continue;
        }
        ok = push_stale(&v, &n, &cap, "", parts[i].path, 0, NF_STALE_ORPHAN_PART);
        free(parts[i].path);
    }
    free(parts);
    if (!ok) {
        nf_stale_free(v, n);
        return nf_error_set(err, NF_ERR_NOMEM, "out of memory");
    }
    *out = v;
    *count = n;
    return NF_OK;
}

void nf_stale_free(nf_stale *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(s[i].path);
        free(s[i].original);
    }
    free(s);
}
