/* The digest cache (sha256_cache.h). */
#define _GNU_SOURCE /* mkostemp's flags */
#include "common/sha256_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/hex.h"
#include "common/sha256.h"

#define CACHE_MAGIC "ninfer-sha256-cache 1"
#define ENTRY_MAX 512

/* The cache directory (created, 0700, ours), or false when there is none to use. */
static bool cache_dir(char *out, size_t size)
{
    const char *off = getenv("NINFER_DIGEST_CACHE");
    if (off && strcmp(off, "0") == 0) return false;
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char base[4096];
    int n;
    if (xdg && xdg[0] == '/') n = snprintf(base, sizeof base, "%s", xdg);
    else if (home && home[0] == '/') n = snprintf(base, sizeof base, "%s/.cache", home);
    else return false;
    if (n < 0 || (size_t)n >= sizeof base) return false;
    char tool[4200];
    snprintf(tool, sizeof tool, "%s/ninfer-tools", base);
    n = snprintf(out, size, "%s/sha256", tool);
    if (n < 0 || (size_t)n >= size) return false;
    (void)mkdir(base, 0700);
    (void)mkdir(tool, 0700);
    (void)mkdir(out, 0700);
    struct stat sb;
    return lstat(out, &sb) == 0 && S_ISDIR(sb.st_mode) && sb.st_uid == geteuid() && !(sb.st_mode & 022);
}

/* The entry's identity line and its file name (the SHA-256 of that line). */
static bool entry_of(const struct stat *sb, char *key, size_t ksize, char *path, size_t psize)
{
    char dir[4300];
    if (!cache_dir(dir, sizeof dir)) return false;
    int n = snprintf(key, ksize, "%s %ju %ju %jd %jd.%09ld %jd.%09ld", CACHE_MAGIC, (uintmax_t)sb->st_dev,
                     (uintmax_t)sb->st_ino, (intmax_t)sb->st_size, (intmax_t)sb->st_mtim.tv_sec, sb->st_mtim.tv_nsec,
                     (intmax_t)sb->st_ctim.tv_sec, sb->st_ctim.tv_nsec);
    if (n < 0 || (size_t)n >= ksize) return false;
    nf_sha256 s;
    uint8_t d[32];
    char name[65];
    nf_sha256_init(&s);
    nf_sha256_update(&s, key, (size_t)n);
    nf_sha256_final(&s, d);
    nf_hex_bytes(d, sizeof d, name);
    n = snprintf(path, psize, "%s/%s", dir, name);
    return n > 0 && (size_t)n < psize;
}

static bool lower_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
    return true;
}

bool nf_sha256_cache_get(const struct stat *sb, char hex[65])
{
    char key[256], path[4400], text[ENTRY_MAX + 1];
    if (!entry_of(sb, key, sizeof key, path, sizeof path)) return false;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat eb;
    ssize_t n = -1;
    if (fstat(fd, &eb) == 0 && S_ISREG(eb.st_mode) && eb.st_uid == geteuid() && eb.st_size <= ENTRY_MAX)
        n = read(fd, text, ENTRY_MAX);
    close(fd);
    if (n <= 0) return false;
    text[n] = '\0';
    /* "<key> <64 hex>\n", exactly */
    size_t kl = strlen(key);
    if ((size_t)n != kl + 1 + 64 + 1 || memcmp(text, key, kl) != 0 || text[kl] != ' ' || text[n - 1] != '\n' ||
        !lower_hex(text + kl + 1, 64))
        return false;
    memcpy(hex, text + kl + 1, 64);
    hex[64] = '\0';
    return true;
}

void nf_sha256_cache_put(const struct stat *sb, const char hex[65])
{
    char key[256], path[4400], tmp[4410], text[ENTRY_MAX + 1];
    if (!entry_of(sb, key, sizeof key, path, sizeof path)) return;
    int n = snprintf(text, sizeof text, "%s %s\n", key, hex);
    int m = snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
    if (n < 0 || (size_t)n >= sizeof text || m < 0 || (size_t)m >= sizeof tmp) return;
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) return;
    /* plain write(2), not the I/O shim: a best-effort side file is no step of the run that fault
     * injection counts (its calls would differ between a first run and a later one) */
    bool ok = write(fd, text, (size_t)n) == (ssize_t)n;
    close(fd);
    if (!ok || rename(tmp, path) != 0) unlink(tmp);
}
