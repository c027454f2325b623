/* Tiny writers for the source tests (see source_writer.h). */
#define _DEFAULT_SOURCE /* mkdtemp */
#include "support/source_writer.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fprintf(stderr, "source_writer: out of memory\n");
        abort();
    }
    return q;
}

void sw_bytes(sw_buf *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n) cap *= 2;
        b->data = xrealloc(b->data, cap);
        b->cap = cap;
    }
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
}

void sw_u8(sw_buf *b, uint8_t v) { sw_bytes(b, &v, 1); }

void sw_u16(sw_buf *b, uint16_t v)
{
    uint8_t p[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    sw_bytes(b, p, 2);
}

void sw_u32(sw_buf *b, uint32_t v)
{
    uint8_t p[4];
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
    sw_bytes(b, p, 4);
}

void sw_u64(sw_buf *b, uint64_t v)
{
    uint8_t p[8];
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
    sw_bytes(b, p, 8);
}

void sw_zeros(sw_buf *b, size_t n)
{
    for (size_t i = 0; i < n; i++) sw_u8(b, 0);
}

void sw_pad(sw_buf *b, size_t align)
{
    while (b->len % align) sw_u8(b, 0);
}

void sw_free(sw_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* ---------------------------------------------------------------- GGUF */
void sw_gguf_header(sw_buf *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    sw_bytes(b, "GGUF", 4);
    sw_u32(b, version);
    sw_u64(b, n_tensors);
    sw_u64(b, n_kv);
}

void sw_gguf_str(sw_buf *b, const char *s)
{
    size_t n = strlen(s);
    sw_u64(b, n);
    sw_bytes(b, s, n);
}

void sw_gguf_key(sw_buf *b, const char *key, uint32_t type)
{
    sw_gguf_str(b, key);
    sw_u32(b, type);
}

void sw_gguf_kv_u32(sw_buf *b, const char *key, uint32_t v)
{
    sw_gguf_key(b, key, SW_GGUF_U32);
    sw_u32(b, v);
}

void sw_gguf_kv_str(sw_buf *b, const char *key, const char *v)
{
    sw_gguf_key(b, key, SW_GGUF_STRING);
    sw_gguf_str(b, v);
}

void sw_gguf_tensor_info(sw_buf *b, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type,
                         uint64_t offset)
{
    sw_gguf_str(b, name);
    sw_u32(b, n_dims);
    for (uint32_t i = 0; i < n_dims; i++) sw_u64(b, ne[i]);
    sw_u32(b, type);
    sw_u64(b, offset);
}

void sw_gguf_file(sw_buf *b, uint32_t alignment, const sw_gguf_tensor *t, size_t n)
{
    size_t align = alignment ? alignment : 32;
    sw_gguf_header(b, 3, n, alignment ? 2 : 1);
    sw_gguf_kv_str(b, "general.architecture", "test");
    if (alignment) sw_gguf_kv_u32(b, "general.alignment", alignment);
    uint64_t off = 0;
    for (size_t i = 0; i < n; i++) {
        sw_gguf_tensor_info(b, t[i].name, t[i].n_dims, t[i].ne, t[i].type, off);
        off += (t[i].bytes + align - 1) / align * align;
    }
    sw_pad(b, align);
    for (size_t i = 0; i < n; i++) {
        sw_bytes(b, t[i].data, t[i].bytes);
        sw_pad(b, align);
    }
}

/* ---------------------------------------------------------------- safetensors */
void sw_st_raw(sw_buf *b, const char *json, const void *data, size_t data_len)
{
    size_t n = strlen(json);
    sw_u64(b, n);
    sw_bytes(b, json, n);
    sw_bytes(b, data, data_len);
}

void sw_st_file(sw_buf *b, const sw_st_tensor *t, size_t n, const char *metadata_json)
{
    sw_buf j = {0};
    sw_bytes(&j, "{", 1);
    int first = 1;
    if (metadata_json) {
        sw_bytes(&j, "\"__metadata__\":", 15);
        sw_bytes(&j, metadata_json, strlen(metadata_json));
        first = 0;
    }
    uint64_t off = 0;
    char tmp[512];
    for (size_t i = 0; i < n; i++) {
        int k = snprintf(tmp, sizeof tmp, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[", first ? "" : ",", t[i].name,
                         t[i].dtype);
        sw_bytes(&j, tmp, (size_t)k);
        for (uint32_t d = 0; d < t[i].rank; d++) {
            k = snprintf(tmp, sizeof tmp, "%s%llu", d ? "," : "", (unsigned long long)t[i].shape[d]);
            sw_bytes(&j, tmp, (size_t)k);
        }
        k = snprintf(tmp, sizeof tmp, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                     (unsigned long long)(off + t[i].bytes));
        sw_bytes(&j, tmp, (size_t)k);
        off += t[i].bytes;
        first = 0;
    }
    sw_bytes(&j, "}", 1);
    while (j.len % 8) sw_bytes(&j, " ", 1);
    sw_u64(b, j.len);
    sw_bytes(b, j.data, j.len);
    for (size_t i = 0; i < n; i++) sw_bytes(b, t[i].data, t[i].bytes);
    sw_free(&j);
}

/* ---------------------------------------------------------------- files */
int sw_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = len ? fwrite(data, 1, len, f) : 0;
    int rc = fclose(f);
    return w == len && rc == 0 ? 0 : -1;
}

char *sw_path(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = xrealloc(NULL, n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

int sw_write_text(const char *dir, const char *name, const char *text)
{
    char *p = sw_path(dir, name);
    int rc = sw_write_file(p, text, strlen(text));
    free(p);
    return rc;
}

char *sw_tempdir(void)
{
    const char *base = getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
    char *p = sw_path(base, "ninfer-source-XXXXXX");
    if (!mkdtemp(p)) {
        free(p);
        return NULL;
    }
    return p;
}

/* whole: the tests' scratch trees hold directories (out/, r/ck/), which a removal of the top
 * level's files alone left in /tmp at every run; a symbolic link is removed, never followed */
void sw_rmtree(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
            char *p = sw_path(dir, de->d_name);
            struct stat st;
            if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) sw_rmtree(p);
            else unlink(p);
            free(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

uint8_t *sw_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 65536;
            buf = xrealloc(buf, cap);
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0) break;
    }
    fclose(f);
    *len = n;
    return buf;
}
