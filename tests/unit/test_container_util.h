/* Shared helpers of the container tests (test_container_*.c): temp directories, whole-file I/O,
 * a deterministic PRNG, hand framing of artifacts exactly as docs/artifact.md 2-3 describe
 * (independent of the library's writer), and a small artifact builder whose directory text
 * comes from jansson's own dumper, so that mutations can be applied to the text or to the
 * tree.  Everything is static inline so each test executable takes what it uses. */
#ifndef TEST_CONTAINER_UTIL_H
#define TEST_CONTAINER_UTIL_H

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ninfer/ninfer.h>

#include "common/io.h"
#include "container/container_internal.h"

#define TC_PAGE 4096u
#define TC_UPSTREAM NINFER_TEST_DATA "/upstream/"

/* ---------------------------------------------------------------- paths and files */
/* snprintf without GCC's truncation analysis (paths here are short; truncation would only make
 * a test fail on a missing file). */
static inline void tc_sprintf(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline void tc_sprintf(char *buf, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, n, fmt, ap);
    va_end(ap);
}

typedef struct tc_path {
    char s[1024];
} tc_path;

static inline tc_path tc_join(const char *dir, const char *name)
{
    tc_path p;
    tc_sprintf(p.s, sizeof p.s, "%s/%s", dir, name);
    return p;
}

static inline char *tc_tmpdir(void)
{
    char tmpl[] = "/tmp/nf-container-XXXXXX";
    char *d = mkdtemp(tmpl);
    cr_assert_not_null(d, "mkdtemp: %s", strerror(errno));
    return strdup(d);
}

/* Remove dir and everything in it (two levels are enough for these tests). */
static inline void tc_rmtree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        tc_path p = tc_join(dir, e->d_name);
        struct stat st;
        if (lstat(p.s, &st) == 0 && S_ISDIR(st.st_mode)) tc_rmtree(p.s);
        else unlink(p.s);
    }
    closedir(d);
    rmdir(dir);
}

/* Names in dir (excluding . and ..), newline-separated, for assertion messages; *count gets how
 * many there are. */
static inline char *tc_listing(const char *dir, size_t *count)
{
    static char buf[4096];
    buf[0] = '\0';
    *count = 0;
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "opendir %s", dir);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        (*count)++;
        size_t used = strlen(buf);
        tc_sprintf(buf + used, sizeof buf - used, "%s%s", used ? " " : "", e->d_name);
    }
    closedir(d);
    return buf;
}

static inline void tc_assert_dir_empty(const char *dir)
{
    size_t n;
    char *names = tc_listing(dir, &n);
    cr_assert_eq(n, 0, "directory %s is not empty: %s", dir, names);
}

static inline void tc_write(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot create %s", path);
    cr_assert_eq(fwrite(data, 1, len, f), len);
    cr_assert_eq(fclose(f), 0);
}

static inline uint8_t *tc_read(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)n + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    buf[n] = 0;
    *len = (size_t)n;
    return buf;
}

static inline bool tc_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static inline void tc_put_u64le(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t tc_get_u64le(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static inline uint64_t tc_align(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

/* ---------------------------------------------------------------- PRNG (splitmix64) */
typedef struct tc_rng {
    uint64_t s;
} tc_rng;

static inline uint64_t tc_next(tc_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline uint64_t tc_below(tc_rng *r, uint64_t n) { return n ? tc_next(r) % n : 0; }

/* ---------------------------------------------------------------- hand framing */
typedef enum tc_pad { TC_PAD_SPACES, TC_PAD_ZERO_GAP } tc_pad;

/* Write the file set of an artifact byte by byte as docs/artifact.md 2-3 define it.
 * TC_PAD_SPACES: json_bytes = reserve, JSON padded with spaces (the Python writer);
 * TC_PAD_ZERO_GAP: json_bytes = len(JSON), zero bytes up to the page (the C++ fixture).
 * part_names NULL: "<entry>.part-NNNN". */
static inline void tc_frame(const char *dir, const char *entry_name, const char *json, size_t json_len, tc_pad pad,
                            const uint64_t *segs, size_t nfiles, const char *const *part_names, const uint8_t *payload,
                            const uint8_t id[16])
{
    uint64_t eps = tc_align(32 + json_len, TC_PAGE);
    uint64_t json_bytes = pad == TC_PAD_SPACES ? eps - 32 : json_len;
    uint64_t pos = 0;
    for (size_t i = 0; i < nfiles; i++) {
        uint64_t head = i ? TC_PAGE : eps;
        size_t size = (size_t)(head + segs[i]);
        uint8_t *buf = calloc(1, size);
        cr_assert_not_null(buf);
        if (i == 0) {
            memcpy(buf, "NINFER\0\3", 8);
            tc_put_u64le(buf + 8, json_bytes);
            memcpy(buf + 16, id, 16);
            memcpy(buf + 32, json, json_len);
            if (pad == TC_PAD_SPACES) memset(buf + 32 + json_len, ' ', (size_t)(json_bytes - json_len));
        } else {
            memcpy(buf, "NINPRT\0\3", 8);
            tc_put_u64le(buf + 8, i);
            memcpy(buf + 16, id, 16);
        }
        memcpy(buf + head, payload + pos, (size_t)segs[i]);
        pos += segs[i];
        char name[512];
        if (i == 0) tc_sprintf(name, sizeof name, "%s", entry_name);
        else if (part_names) tc_sprintf(name, sizeof name, "%s", part_names[i]);
        else tc_sprintf(name, sizeof name, "%s.part-%04zu", entry_name, i);
        tc_path p = tc_join(dir, name);
        tc_write(p.s, buf, size);
        free(buf);
    }
}

/* docs/artifact.md 4, written again for the tests (the library's planner is tested separately
 * against the spec's vectors). */
static inline size_t tc_split(uint64_t payload, uint64_t eps, uint64_t limit, uint64_t *segs, size_t cap)
{
    if (!limit || eps + payload <= limit) {
        segs[0] = payload;
        return 1;
    }
    uint64_t ecap = (limit - eps) / TC_PAGE * TC_PAGE, pcap = (limit - TC_PAGE) / TC_PAGE * TC_PAGE;
    cr_assert(eps < limit && ecap > 0 && pcap > 0, "test split: limit too small");
    size_t n = 0;
    segs[n++] = ecap;
    uint64_t rest = payload - ecap;
    while (rest > 0) {
        cr_assert(n < cap, "test split: too many files");
        segs[n] = rest < pcap ? rest : pcap;
        rest -= segs[n++];
    }
    return n;
}

/* ---------------------------------------------------------------- artifact builder */
typedef struct tc_art {
    json_t *root; /* components, objects, bindings, uses, metadata, provenance (no files) */
    uint8_t *payload;
    size_t len;
    uint8_t id[16];
} tc_art;

static inline void tc_art_init(tc_art *a)
{
    memset(a, 0, sizeof *a);
    a->root = json_pack("{s:{s:{s:{}}},s:[],s:{},s:[],s:{},s:{}}", "components", "text", "config", "objects",
                        "bindings", "uses", "metadata", "provenance");
    cr_assert_not_null(a->root);
    for (int i = 0; i < 16; i++) a->id[i] = (uint8_t)(0xA0 + i);
}

static inline void tc_art_free(tc_art *a)
{
    json_decref(a->root);
    free(a->payload);
    memset(a, 0, sizeof *a);
}

static inline void tc_art_grow(tc_art *a, size_t new_len)
{
    a->payload = realloc(a->payload, new_len ? new_len : 1);
    cr_assert_not_null(a->payload);
    if (new_len > a->len) memset(a->payload + a->len, 0, new_len - a->len);
    a->len = new_len;
}

/* A tensor with the format's default layout; data (may be NULL = zeros) of geometry bytes.
 * Descriptor members in upstream order. */
static inline uint64_t tc_art_tensor(tc_art *a, const char *id, const char *format, const uint64_t *shape,
                                     uint32_t rank, uint64_t divisors, const uint8_t *data)
{
    const nf_format *f = nf_format_lookup(format);
    cr_assert_not_null(f, "format %s", format);
    const nf_layout *l = nf_layout_lookup(f->default_layout);
    cr_assert_not_null(l, "layout %s", f->default_layout);
    nf_geometry g;
    nf_error err;
    cr_assert_eq(nf_geometry_init(&g, l, f, rank, shape, divisors, &err), NF_OK, "%s: %s", id, err.message);
    size_t off = (size_t)tc_align(a->len, 256);
    tc_art_grow(a, off + (size_t)g.bytes);
    if (data) memcpy(a->payload + off, data, (size_t)g.bytes);
    json_t *d = json_object();
    json_t *js = json_array();
    for (uint32_t k = 0; k < rank; k++) json_array_append_new(js, json_integer((json_int_t)shape[k]));
    json_object_set_new(d, "id", json_string(id));
    json_object_set_new(d, "shape", js);
    json_object_set_new(d, "format", json_string(format));
    json_object_set_new(d, "layout", json_string(l->name));
    json_object_set_new(d, "offset", json_integer((json_int_t)off));
    json_object_set_new(d, "bytes", json_integer((json_int_t)g.bytes));
    if (divisors != 1) json_object_set_new(d, "divisors", json_integer((json_int_t)divisors));
    json_object_set_new(d, "kind", json_string("tensor"));
    json_array_append_new(json_object_get(a->root, "objects"), d);
    return off;
}

static inline uint64_t tc_art_resource(tc_art *a, const char *id, const uint8_t *data, size_t len)
{
    size_t off = a->len;
    tc_art_grow(a, off + len);
    memcpy(a->payload + off, data, len);
    json_t *d = json_pack("{s:s,s:s,s:I,s:I,s:s}", "id", id, "encoding", "raw_bytes_v1", "offset", (json_int_t)off,
                          "bytes", (json_int_t)len, "kind", "resource");
    json_array_append_new(json_object_get(a->root, "objects"), d);
    return off;
}

static inline json_t *tc_art_obj(tc_art *a, const char *id)
{
    json_t *objs = json_object_get(a->root, "objects");
    for (size_t i = 0; i < json_array_size(objs); i++) {
        json_t *o = json_array_get(objs, i);
        if (strcmp(json_string_value(json_object_get(o, "id")), id) == 0) return o;
    }
    cr_assert_fail("no object %s", id);
    return NULL;
}

typedef struct tc_text {
    char *s;
    size_t len;
} tc_text;

static inline char *tc_memmem(char *hay, size_t n, const char *needle, size_t m)
{
    if (m == 0) return hay;
    for (size_t i = 0; i + m <= n; i++)
        if (memcmp(hay + i, needle, m) == 0) return hay + i;
    return NULL;
}

/* Replace the first occurrence of `from` in t (asserting there is one). */
static inline void tc_text_replace(tc_text *t, const char *from, const char *to)
{
    char *at = tc_memmem(t->s, t->len, from, strlen(from));
    cr_assert_not_null(at, "text mutation: '%s' not found", from);
    size_t pre = (size_t)(at - t->s), fl = strlen(from), tl = strlen(to);
    char *n = malloc(t->len - fl + tl + 1);
    memcpy(n, t->s, pre);
    memcpy(n + pre, to, tl);
    memcpy(n + pre + tl, at + fl, t->len - pre - fl);
    t->len = t->len - fl + tl;
    n[t->len] = '\0';
    free(t->s);
    t->s = n;
}

typedef void (*tc_text_fn)(tc_text *t);
typedef void (*tc_files_fn)(json_t *files);

static inline json_t *tc_files_json(const char *entry_name, const uint64_t *segs, size_t n)
{
    json_t *files = json_array();
    for (size_t i = 0; i < n; i++) {
        char name[512];
        tc_sprintf(name, sizeof name, "%s.part-%04zu", entry_name, i);
        json_array_append_new(files, json_pack("{s:o,s:I}", "path", i ? json_string(name) : json_null(),
                                               "payload_bytes", (json_int_t)segs[i]));
    }
    return files;
}

static inline tc_text tc_dump(json_t *root)
{
    tc_text t;
    t.s = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    cr_assert_not_null(t.s);
    t.len = strlen(t.s);
    return t;
}

/* Write the artifact into dir like the upstream writer (reserve + space padding + split);
 * files_fn edits the files table shown in the JSON (not the files written), text_fn the JSON
 * text.  Returns the entry path. */
static inline tc_path tc_art_emit(tc_art *a, const char *dir, const char *name, uint64_t max_file_bytes,
                                  tc_text_fn text_fn, tc_files_fn files_fn)
{
    uint64_t segs[256];
    size_t n = 1;
    segs[0] = a->len;
    json_t *root = json_deep_copy(a->root);
    json_object_set_new(root, "files", tc_files_json(name, segs, 1));
    tc_text t = tc_dump(root);
    uint64_t reserve = tc_align(32 + t.len, TC_PAGE) - 32;
    for (;;) {
        n = tc_split(a->len, 32 + reserve, max_file_bytes, segs, 256);
        json_object_set_new(root, "files", tc_files_json(name, segs, n));
        free(t.s);
        t = tc_dump(root);
        if (t.len <= reserve) break;
        reserve = tc_align(32 + t.len, TC_PAGE) - 32;
    }
    if (files_fn || text_fn) {
        json_t *files = json_deep_copy(json_object_get(root, "files"));
        if (files_fn) files_fn(files);
        json_object_set_new(root, "files", files);
        free(t.s);
        t = tc_dump(root);
        if (text_fn) text_fn(&t);
    }
    tc_frame(dir, name, t.s, t.len, TC_PAD_SPACES, segs, n, NULL, a->payload, a->id);
    free(t.s);
    json_decref(root);
    return tc_join(dir, name);
}

/* ---------------------------------------------------------------- reader checks */
/* Open, open every part, check every object: the structural pass a verifier makes.  Returns
 * the first failing status (NF_OK if none) with its message in *err. */
static inline nf_status tc_structure(const char *path, nf_error *err)
{
    nf_artifact *a = NULL;
    nf_status st = nf_artifact_open(path, NF_READ_PREAD, &a, err);
    if (st != NF_OK) return st;
    for (size_t i = 1; i < nf_artifact_file_count(a) && st == NF_OK; i++) st = nf_artifact_open_part(a, i, err);
    for (size_t i = 0; i < nf_artifact_object_count(a) && st == NF_OK; i++) {
        /* the caller that chose the object names it (docs/library.md, "Who names what") */
        const nf_object *o = nf_artifact_object(a, i);
        st = nf_artifact_check_object(a, o, NULL, err);
        if (st != NF_OK) nf_error_prefix(err, "object '%s'", o->id);
    }
    nf_artifact_close(a);
    return st;
}

#define tc_expect_invalid(path, needle)                                                                               \
    do {                                                                                                              \
        nf_error e_;                                                                                                  \
        nf_error_clear(&e_);                                                                                          \
        nf_status st_ = tc_structure((path), &e_);                                                                    \
        cr_assert_eq(st_, NF_ERR_INVALID, "expected NF_ERR_INVALID, got %d: %s", st_, e_.message);                    \
        cr_assert_not_null(strstr(e_.message, (needle)), "message '%s' does not mention '%s'", e_.message, (needle)); \
    } while (0)

#endif
