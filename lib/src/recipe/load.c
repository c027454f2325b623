/* Reading a recipe file: a path (through the I/O shim), "-" for stdin, ".zst" decompressed;
 * never more than NF_RECIPE_MAX_BYTES of recipe text. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "common/fail.h"
#include "common/hex.h"
#include "common/io.h"
#include "common/sha256.h"
#include "recipe/recipe_internal.h"

typedef struct rbuf {
    unsigned char *data;
    size_t len, cap;
} rbuf;

/* Room for `want` more bytes, but never beyond limit + 1 in all (one byte past the cap is how
 * an oversized input is noticed without reading all of it). */
static bool reserve(rbuf *b, size_t want, size_t limit)
{
    size_t need = b->len + want;
    if (need > limit + 1) need = limit + 1;
    if (need <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < need) cap *= 2;
    if (cap > limit + 1) cap = limit + 1;
    unsigned char *d = realloc(b->data, cap);
    if (!d) return false;
    b->data = d;
    b->cap = cap;
    return true;
}

static nf_status too_big(const char *path, nf_error *err)
{
    return nf_error_set(err, NF_ERR_INVALID, "%s: recipe larger than the %u-byte cap", path,
                        (unsigned)NF_RECIPE_MAX_BYTES);
}

/* The raw bytes of a file or of stdin, at most limit + 1 of them. */
static nf_status read_raw(const char *path, bool is_stdin, size_t limit, rbuf *b, nf_error *err)
{
    int fd = is_stdin ? STDIN_FILENO : nf_io_open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) return nf_error_errno(err, errno, "cannot read %s", path);
    /* Pipes and other streams (stdin, "-r <(envsubst < r.yaml)") cannot be pread: they are read
     * sequentially.  A directory fails on the first read with EISDIR, naming the path. */
    bool stream = is_stdin;
    if (!is_stdin) {
        struct stat sb;
        int rc = nf_io_fstat(fd, &sb);
        if (rc != 0) {
            nf_io_close(fd);
            return nf_error_errno(err, rc, "cannot read %s", path);
        }
        stream = !S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode);
    }
    nf_status st = NF_OK;
    uint64_t offset = 0;
    for (;;) {
        if (!reserve(b, 65536, limit)) {
            st = nf_common_nomem_in(err, path);
            break;
        }
        size_t room = b->cap - b->len;
        if (room == 0) break; /* limit + 1 bytes held: too big */
        size_t got = 0;
        int rc = 0;
        if (stream) {
            ssize_t k;
            do k = read(fd, b->data + b->len, room);
            while (k < 0 && errno == EINTR);
            if (k < 0) rc = errno;
            else got = (size_t)k;
        } else {
            rc = nf_io_pread_some(fd, b->data + b->len, room, offset, &got);
        }
        if (rc != 0) {
            st = nf_error_errno(err, rc, "cannot read %s", path);
            break;
        }
        if (got == 0) break;
        b->len += got;
        offset += got;
    }
    if (!is_stdin) nf_io_close(fd);
    return st;
}

static nf_status decompress(const char *path, const rbuf *in, size_t limit, rbuf *out, nf_error *err)
{
    ZSTD_DCtx *dctx = ZSTD_createDCtx();
    if (!dctx) return nf_common_nomem_in(err, path);
    ZSTD_inBuffer zin = {in->data, in->len, 0};
    size_t last = 1;
    nf_status st = NF_OK;
    while (st == NF_OK) {
        if (!reserve(out, 65536, limit)) {
            st = nf_common_nomem_in(err, path);
            break;
        }
        if (out->cap == out->len) {
            st = too_big(path, err);
            break;
        }
        ZSTD_outBuffer zout = {out->data + out->len, out->cap - out->len, 0};
        last = ZSTD_decompressStream(dctx, &zout, &zin);
        if (ZSTD_isError(last)) {
            st = nf_error_set(err, NF_ERR_INVALID, "%s: not a valid zstd stream: %s", path, ZSTD_getErrorName(last));
            break;
        }
        out->len += zout.pos;
        /* done when the input is used up and the decoder holds nothing more */
        if (zin.pos == zin.size && zout.pos < zout.size) break;
    }
    ZSTD_freeDCtx(dctx);
    if (st == NF_OK && last != 0) st = nf_error_set(err, NF_ERR_INVALID, "%s: truncated zstd stream", path);
    if (st == NF_OK && out->len > limit) st = too_big(path, err);
    return st;
}

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !memcmp(s + n - k, suffix, k);
}

nf_status nf_recipe_load(const char *path, nf_recipe **out, nf_error *err)
{
    return nf_recipe_load_ex(path, NULL, out, err);
}

nf_status nf_recipe_load_ex(const char *path, const nf_recipe_options *opt, nf_recipe **out, nf_error *err)
{
    if (!path || !out) return nf_error_set(err, NF_ERR_USAGE, "nf_recipe_load: missing argument");
    *out = NULL;
    bool is_stdin = !strcmp(path, "-");
    const char *name = is_stdin ? "<stdin>" : path;
    bool zst = !is_stdin && has_suffix(path, ".zst");
    /* A compressed recipe can be at most as large as its text plus framing; its own bytes are
     * capped at the same figure (a recipe that compresses worse than that is not a recipe). */
    const size_t limit = NF_RECIPE_MAX_BYTES;
    rbuf raw = {0};
    nf_status st = read_raw(name, is_stdin, limit, &raw, err);
    if (st == NF_OK && raw.len > limit) st = too_big(name, err);
    rbuf text = {0};
    if (st == NF_OK && zst) {
        st = decompress(path, &raw, limit, &text, err);
        free(raw.data);
        raw = (rbuf){0};
    } else {
        text = raw;
        raw = (rbuf){0};
    }
    char *dir = NULL;
    if (st == NF_OK && !is_stdin) {
        dir = nf_recipe_dirname(path);
        if (!dir) st = nf_common_nomem_in(err, name);
    }
    /* a recipe read from stdin has no directory of its own: nothing to read but what the command
     * line gives (docs/recipes.md, "What a recipe may read") */
    if (st == NF_OK) st = nf_recipe_parse_ex((const char *)text.data, text.len, name, dir, opt, out, err);
    if (st == NF_OK) ((recipe_impl *)*out)->loaded = true;
    free(dir);
    free(text.data);
    free(raw.data);
    return st;
}

bool nf_recipe_text_sha256(const nf_recipe *r, char hex[65])
{
    hex[0] = '\0';
    const recipe_impl *impl = (const recipe_impl *)r;
    if (!r || !impl->loaded || !impl->text) return false;
    nf_sha256 s;
    uint8_t d[32];
    nf_sha256_init(&s);
    nf_sha256_update(&s, impl->text, impl->text_len);
    nf_sha256_final(&s, d);
    nf_hex_bytes(d, sizeof d, hex);
    return true;
}
