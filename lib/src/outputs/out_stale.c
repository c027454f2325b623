/* What killed runs left beside an output (ninfer/outputs.h, nf_stale_find): every name is read
 * back by nf_outputs_recognise, the inverse of the forming functions the writer and the
 * converter name their files with (out_names.h), so the finder and the writers cannot drift
 * apart. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ninfer/outputs.h>

#include "outputs/out_names.h"

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
        nf_outputs_name nm;
        nf_outputs_kind kind = nf_outputs_recognise(name, base, &nm);
        if (kind == NF_OUTPUTS_TEMP || kind == NF_OUTPUTS_ASIDE) {
            bool backup = kind == NF_OUTPUTS_ASIDE, plain = nm.of == NF_OUTPUTS_OF_ENTRY, local = nm.local;
            long pid = nm.pid;
            if (!artifact && (backup || !plain)) continue;
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
        } else if (artifact && !entry_exists && kind == NF_OUTPUTS_PART) {
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
