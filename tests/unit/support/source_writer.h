/* Tiny writers for the source tests: byte buffers, GGUF pieces and whole files, safetensors
 * files, temporary directories.  Deliberately dumb: they write exactly what they are told, so
 * the bad-input tests can build every malformed file by hand.  Out of memory aborts. */
#ifndef NINFER_TEST_SOURCE_WRITER_H
#define NINFER_TEST_SOURCE_WRITER_H

#include <stddef.h>
#include <stdint.h>

typedef struct sw_buf {
    uint8_t *data;
    size_t len, cap;
} sw_buf;

void sw_bytes(sw_buf *b, const void *p, size_t n);
void sw_u8(sw_buf *b, uint8_t v);
void sw_u16(sw_buf *b, uint16_t v);
void sw_u32(sw_buf *b, uint32_t v);
void sw_u64(sw_buf *b, uint64_t v);
void sw_zeros(sw_buf *b, size_t n);
void sw_pad(sw_buf *b, size_t align); /* zero bytes up to a multiple of align */
void sw_free(sw_buf *b);

/* ---------------------------------------------------------------- GGUF */
enum {
    SW_GGUF_U8 = 0,
    SW_GGUF_I8,
    SW_GGUF_U16,
    SW_GGUF_I16,
    SW_GGUF_U32,
    SW_GGUF_I32,
    SW_GGUF_F32,
    SW_GGUF_BOOL,
    SW_GGUF_STRING,
    SW_GGUF_ARRAY,
    SW_GGUF_U64,
    SW_GGUF_I64,
    SW_GGUF_F64
};

void sw_gguf_header(sw_buf *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv);
void sw_gguf_str(sw_buf *b, const char *s);                  /* u64 length + bytes */
void sw_gguf_key(sw_buf *b, const char *key, uint32_t type); /* key + value type */
void sw_gguf_kv_u32(sw_buf *b, const char *key, uint32_t v);
void sw_gguf_kv_str(sw_buf *b, const char *key, const char *v);
void sw_gguf_tensor_info(sw_buf *b, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type,
                         uint64_t offset);

typedef struct sw_gguf_tensor {
    const char *name;
    uint32_t type;
    uint32_t n_dims;
    uint64_t ne[4];
    const void *data;
    size_t bytes;
} sw_gguf_tensor;

/* A whole valid GGUF v3: KV general.architecture = "test" and, when alignment != 0,
 * general.alignment; tensors laid out at the running padded offsets (alignment or 32). */
void sw_gguf_file(sw_buf *b, uint32_t alignment, const sw_gguf_tensor *t, size_t n);

/* ---------------------------------------------------------------- safetensors */
/* u64 length + json (as given, not padded) + data. */
void sw_st_raw(sw_buf *b, const char *json, const void *data, size_t data_len);

typedef struct sw_st_tensor {
    const char *name;
    const char *dtype;
    uint32_t rank;
    uint64_t shape[8];
    const void *data;
    size_t bytes;
} sw_st_tensor;

/* A whole valid file: tensors stored in the given order, header padded with spaces to a multiple
 * of 8; metadata_json (e.g. "{\"format\":\"pt\"}") or NULL. */
void sw_st_file(sw_buf *b, const sw_st_tensor *t, size_t n, const char *metadata_json);

/* ---------------------------------------------------------------- files */
int sw_write_file(const char *path, const void *data, size_t len); /* 0 on success */
int sw_write_text(const char *dir, const char *name, const char *text);
char *sw_path(const char *dir, const char *name);     /* malloc'ed dir/name */
char *sw_tempdir(void);                               /* malloc'ed, created */
void sw_rmtree(const char *dir);                      /* the whole tree; links not followed */
uint8_t *sw_read_file(const char *path, size_t *len); /* malloc'ed, NULL on failure */

#endif
