#define _GNU_SOURCE /* mkostemps */
/* The names beside an output, formed and recognised (see out_names.h). */
#include "outputs/out_names.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/io.h"

/* This host's name as it appears in temp names: letters, digits and '-' (anything else, the
 * dots of a domain included, becomes '-'), at most NF_OUTPUTS_HOST_MAX characters; "unknown"
 * when the name cannot be read.  Read once per process. */
static char g_host[NF_OUTPUTS_HOST_MAX + 1];
static pthread_once_t g_host_once = PTHREAD_ONCE_INIT;

static void read_host(void)
{
    char name[256] = {0};
    if (gethostname(name, sizeof name - 1) != 0 || !name[0]) snprintf(name, sizeof name, "unknown");
    size_t n = 0;
    for (; n < NF_OUTPUTS_HOST_MAX && name[n]; n++) {
        char c = name[n];
        g_host[n] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ? c : '-';
    }
    g_host[n] = '\0';
}

const char *nf_outputs_host(void)
{
    pthread_once(&g_host_once, read_host);
    return g_host;
}

/* "<pid>@<host>" of this process, the owner part of the names below. */
static void owner_tag(char out[24 + NF_OUTPUTS_HOST_MAX + 2])
{
    snprintf(out, 24 + NF_OUTPUTS_HOST_MAX + 2, "%ld@%s", (long)getpid(), nf_outputs_host());
}

/* ---------------------------------------------------------------- forming */
int nf_outputs_temp(const char *dest, char **path_out) { return nf_outputs_temp_as(dest, ".tmp", path_out); }

int nf_outputs_temp_as(const char *dest, const char *suffix, char **path_out)
{
    *path_out = NULL;
    int e = nf_io_fault_point(NF_IO_OPEN);
    if (e) {
        errno = e > 0 ? e : EIO;
        return -1;
    }
    const char *slash = strrchr(dest, '/');
    size_t dir_len = slash ? (size_t)(slash - dest) + 1 : 0;
    const char *base = slash ? slash + 1 : dest;
    /* ".<base>.<pid>@<host>.XXXXXX.tmp": the pid and the host let a later run tell the temp files
     * of a killed process (which cannot clean up after SIGKILL) from those of one still running,
     * on a filesystem several hosts share (a process of another host is never judged from here). */
    char pid[24 + NF_OUTPUTS_HOST_MAX + 2];
    owner_tag(pid);
    size_t need = dir_len + 1 + strlen(base) + 1 + strlen(pid) + sizeof ".XXXXXX" + strlen(suffix);
    char *p = malloc(need);
    if (!p) {
        errno = ENOMEM;
        return -1;
    }
    snprintf(p, need, "%.*s.%s.%s.XXXXXX%s", (int)dir_len, dest, base, pid, suffix);
    int fd = mkostemps(p, (int)strlen(suffix), O_CLOEXEC);
    if (fd < 0) {
        int saved = errno;
        free(p);
        errno = saved;
        return -1;
    }
    *path_out = p;
    return fd;
}

int nf_outputs_link_aside(const char *target, const char *suffix, char **path_out)
{
    *path_out = NULL;
    int e = nf_io_fault_point(NF_IO_LINK);
    if (e) return e > 0 ? e : EIO;
    const char *slash = strrchr(target, '/');
    size_t dir_len = slash ? (size_t)(slash - target) + 1 : 0;
    const char *base = slash ? slash + 1 : target;
    char pid[24 + NF_OUTPUTS_HOST_MAX + 2];
    owner_tag(pid);
    size_t need = dir_len + 1 + strlen(base) + 1 + strlen(pid) + sizeof ".XXXXXX" + strlen(suffix);
    char *p = malloc(need);
    if (!p) return ENOMEM;
    static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    for (int attempt = 0; attempt < 100; attempt++) {
        unsigned char r[6];
        if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
            uint64_t x = (uint64_t)(uint32_t)getpid();
            x = x * UINT64_C(0x9E3779B97F4A7C15) + (uint64_t)(uint32_t)attempt;
            x = x * UINT64_C(0xBF58476D1CE4E5B9) + (uint64_t)(uintptr_t)p;
            for (int i = 0; i < 6; i++) r[i] = (unsigned char)(x >> (8 * i));
        }
        char x[7];
        for (int i = 0; i < 6; i++) x[i] = letters[r[i] % (sizeof letters - 1)];
        x[6] = '\0';
        snprintf(p, need, "%.*s.%s.%s.%s%s", (int)dir_len, target, base, pid, x, suffix);
        if (link(target, p) == 0) {
            *path_out = p;
            return 0;
        }
        if (errno != EEXIST) {
            int saved = errno;
            free(p);
            return saved;
        }
    }
    free(p);
    return EEXIST;
}

/* path followed by suffix, malloc'ed. */
static char *with_suffix(const char *path, const char *suffix)
{
    size_t need = strlen(path) + strlen(suffix) + 1;
    char *p = malloc(need);
    if (p) snprintf(p, need, "%s%s", path, suffix);
    return p;
}

char *nf_outputs_part_name(const char *entry_name, size_t index)
{
    size_t need = strlen(entry_name) + sizeof ".part-" + 24;
    char *s = malloc(need);
    if (s) snprintf(s, need, "%s.part-%04zu", entry_name, index);
    return s;
}

char *nf_outputs_report_name(const char *output) { return with_suffix(output, ".conversion.json"); }

char *nf_outputs_staged_name(const char *output) { return with_suffix(output, ".entry-staged"); }

char *nf_outputs_receipt_name(const char *output, const char *part)
{
    return part ? with_suffix(part, ".receipt.json") : with_suffix(output, ".entry.receipt.json");
}

char *nf_outputs_lock_name(const char *dest)
{
    const char *slash = strrchr(dest, '/');
    size_t dir_len = slash ? (size_t)(slash - dest) + 1 : 0;
    const char *base = slash ? slash + 1 : dest;
    size_t need = dir_len + 1 + strlen(base) + sizeof ".lock";
    char *p = malloc(need);
    if (p) snprintf(p, need, "%.*s.%s.lock", (int)dir_len, dest, base);
    return p;
}

/* ---------------------------------------------------------------- recognising */
long nf_outputs_owner(const char *tail, const char **suffix, bool *local)
{
    size_t digits = 0;
    while (tail[digits] >= '0' && tail[digits] <= '9') digits++;
    if (digits == 0 || digits > 10) return -1;
    const char *x = tail + digits;
    bool here = true; /* the form without a host (earlier versions) is taken for this host's */
    if (*x == '@') {
        size_t n = 0;
        const char *h = x + 1;
        while ((h[n] >= 'a' && h[n] <= 'z') || (h[n] >= 'A' && h[n] <= 'Z') || (h[n] >= '0' && h[n] <= '9') ||
               h[n] == '-')
            n++;
        if (n == 0 || n > NF_OUTPUTS_HOST_MAX) return -1;
        const char *me = nf_outputs_host();
        here = strlen(me) == n && memcmp(me, h, n) == 0;
        x = h + n;
    }
    if (*x != '.') return -1;
    x++;
    for (int i = 0; i < 6; i++) {
        char c = x[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) return -1;
    }
    long pid = strtol(tail, NULL, 10);
    if (pid <= 0) return -1;
    *suffix = x + 6;
    if (local) *local = here;
    return pid;
}

/* Length of a ".part-NNNN" (4 or more digits) prefix of s, or 0. */
static size_t part_suffix(const char *s)
{
    if (strncmp(s, ".part-", 6) != 0) return 0;
    size_t n = 0;
    while (s[6 + n] >= '0' && s[6 + n] <= '9') n++;
    return n >= 4 ? 6 + n : 0;
}

/* rest: what follows ".B" in a dotted name, "[INFIX].<pid>@<host>.XXXXXX.tmp|.old" (INFIX: of
 * the parts, receipts, report and staged entry; none for B itself) or ".lock". */
static nf_outputs_kind dotted(const char *rest, nf_outputs_name *n)
{
    if (strcmp(rest, ".lock") == 0) return n->kind = NF_OUTPUTS_LOCK;
    size_t skip = part_suffix(rest);
    n->of = skip ? NF_OUTPUTS_OF_PART : NF_OUTPUTS_OF_ENTRY;
    if (skip && strncmp(rest + skip, ".receipt.json.", 14) == 0) {
        skip += 13;
        n->of = NF_OUTPUTS_OF_PART_RECEIPT;
    }
    static const struct {
        const char *infix; /* with the dot that follows it */
        nf_outputs_of of;
    } infixes[] = {{".conversion.json.", NF_OUTPUTS_OF_REPORT},
                   {".entry.receipt.json.", NF_OUTPUTS_OF_ENTRY_RECEIPT},
                   {".entry-staged.", NF_OUTPUTS_OF_STAGED}};
    for (size_t i = 0; !skip && i < sizeof infixes / sizeof infixes[0]; i++)
        if (strncmp(rest, infixes[i].infix, strlen(infixes[i].infix)) == 0) {
            skip = strlen(infixes[i].infix) - 1;
            n->of = infixes[i].of;
        }
    rest += skip;
    const char *suffix = NULL;
    long pid = *rest == '.' ? nf_outputs_owner(rest + 1, &suffix, &n->local) : -1;
    if (pid < 0) return NF_OUTPUTS_OTHER;
    if (strcmp(suffix, ".tmp") == 0) n->kind = NF_OUTPUTS_TEMP;
    else if (strcmp(suffix, ".old") == 0) n->kind = NF_OUTPUTS_ASIDE;
    else return NF_OUTPUTS_OTHER;
    n->pid = pid;
    return n->kind;
}

/* rest: what follows B in a plain name. */
static nf_outputs_kind plain(const char *rest)
{
    if (!*rest) return NF_OUTPUTS_ENTRY;
    if (strcmp(rest, ".conversion.json") == 0) return NF_OUTPUTS_REPORT;
    if (strcmp(rest, ".entry-staged") == 0) return NF_OUTPUTS_STAGED;
    if (strcmp(rest, ".entry.receipt.json") == 0) return NF_OUTPUTS_RECEIPT;
    size_t k = part_suffix(rest);
    if (k && !rest[k]) return NF_OUTPUTS_PART;
    if (k && strcmp(rest + k, ".receipt.json") == 0) return NF_OUTPUTS_RECEIPT;
    return NF_OUTPUTS_OTHER;
}

nf_outputs_kind nf_outputs_recognise(const char *name, const char *base, nf_outputs_name *out)
{
    static const nf_outputs_name none = {NF_OUTPUTS_OTHER, NF_OUTPUTS_OF_ENTRY, 0, false};
    nf_outputs_name n = none;
    size_t bl = strlen(base);
    if (name[0] == '.' && strncmp(name + 1, base, bl) == 0) {
        if (dotted(name + 1 + bl, &n) == NF_OUTPUTS_OTHER) n = none;
    } else if (strncmp(name, base, bl) == 0) {
        n.kind = plain(name + bl);
    }
    if (out) *out = n;
    return n.kind;
}
