/* The nf_source structure shared by the safetensors and GGUF parsers, the reading code and the
 * openers, and what store.c keeps of it: a bump allocator for the many small strings and shapes
 * a checkpoint header holds, the tensor slots, the name index and the files' descriptor cache
 * (common/fd_cache.h).  The
 * parsers' entry points are in safetensors.h and gguf_parse.h, so that includes run one way: the
 * openers (source.c) above the parsers above this store. */
#ifndef NINFER_SOURCE_STORE_H
#define NINFER_SOURCE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ninfer/source.h>

#include "common/fd_cache.h"

/* ---------------------------------------------------------------- arena
 * Names, shapes and KV values live until the source is closed, so they are carved out of large
 * chunks and freed at once.  Allocations never move (pointers stay valid while parsing). */
typedef struct src_chunk src_chunk;
typedef struct src_arena {
    src_chunk *head;
} src_arena;

void *nf_source_arena_alloc(src_arena *a, size_t n);                  /* 8-byte aligned; NULL when out of memory */
char *nf_source_arena_strndup(src_arena *a, const char *s, size_t n); /* NUL-terminated copy */
void nf_source_arena_free(src_arena *a);

/* ---------------------------------------------------------------- files */
typedef struct src_file {
    char *path;         /* as used in messages: the path opened (or the memory name) */
    const uint8_t *mem; /* memory image, or NULL: the file is read through its source's fd cache */
    uint64_t size;      /* at first open: a reopen must find the same size */
    struct nf_source *owner;
    /* safetensors __metadata__, in header order */
    size_t nmeta;
    const char **meta_keys;
    const char **meta_values;
} src_file;

/* The public descriptor plus what the reader needs to find its way back. */
typedef struct src_tensor {
    nf_source_tensor pub; /* first member: a public pointer converts back to its slot */
    const struct nf_source *owner;
    uint64_t info_offset;                    /* GGUF: byte position of the tensor info (for messages) */
    const uint64_t *stride;                  /* PyTorch strided views: element strides per dimension (read.c gathers);
                               NULL for a tensor stored in place */
    const struct nf_inflate_member *inflate; /* PyTorch: its storage is a deflated member (inflate.h),
                                                pub.offset that member's compressed bytes */
    uint64_t inflate_at;                     /* ... and element 0 is this byte of it, inflated */
} src_tensor;

/* A GGUF string value: NUL-terminated copy plus its length (strings may hold NUL bytes). */
typedef struct src_str {
    const char *p;
    uint64_t len;
} src_str;

struct nf_source {
    nf_source_kind kind;
    src_arena arena;
    char *path;
    char *index_path;
    src_file *files;
    size_t nfiles;
    src_tensor *tensors;
    size_t ntensors, tensor_cap;
    const src_tensor **by_name; /* sorted by name, for nf_source_find */
    size_t ncompanions;
    const char **companion_names;
    const char **companion_paths;
    /* GGUF */
    uint32_t gguf_version;
    uint64_t gguf_alignment;
    uint64_t gguf_data_offset;
    nf_gguf_kv *kvs;
    size_t nkv;
    const nf_gguf_kv **kv_by_key; /* sorted by key */
    /* A bounded cache of open files (common/fd_cache.h; docs/security.md 7.1, F8: one descriptor
     * per shard made a 600-shard checkpoint fail under `ulimit -n 64`), slot k for files[k]: at
     * most a quarter of the soft RLIMIT_NOFILE (4 to 64) stay open; a file is reopened when read
     * again and checked to be the same file (store.c). */
    nf_fd_cache *fds;
    struct nf_inflate_pool *inflate; /* PyTorch archives with deflated members (inflate.h) */
};

/* __metadata__ pairs of one safetensors header (real files hold a handful).  Without it a 100 MB
 * header of 13 million "k":"" pairs cost 1.7 GB and 35 s inside jansson before any check. */
#define NF_ST_MAX_METADATA_ENTRIES 65536u

/* Pre-scan caps of a model.safetensors.index.json (source.c): nesting, objects + arrays, values
 * (members + elements).  A real index nests 2 levels, has a handful of containers and one value
 * per tensor; the caps bound jansson's tree at about 150 MB. */
#define NF_ST_INDEX_MAX_DEPTH 64u
#define NF_ST_INDEX_MAX_CONTAINERS 65536u
#define NF_ST_INDEX_MAX_VALUES (NF_SOURCE_MAX_TENSORS + 65536u)

/* Read [off, off + len) of file f (pread through the I/O shim, or memcpy from the image), opening
 * it again when the fd cache closed it (a file that is not the one first opened is NF_ERR_IO).
 * Reading past the recorded size is NF_ERR_IO (the file shrank after open). */
nf_status nf_source_file_read(const src_file *f, uint64_t off, void *buf, size_t len, nf_error *err);
/* The descriptor cache of a new source (store.c): its reopen checks that a file is still the
 * regular file of its first open (same size; same device and inode, the cache's check), and
 * words the failures as "<path>: ...".  NULL when out of memory. */
nf_fd_cache *nf_source_fd_cache_new(nf_source *s);

/* Append a tensor slot (zeroed, owner set) in *out; NF_ERR_NOMEM when out of memory,
 * NF_ERR_INVALID past NF_SOURCE_MAX_TENSORS (*out NULL). */
nf_status nf_source_add_tensor(nf_source *s, const char *file_name, src_tensor **out, nf_error *err);

/* Sort s->by_name; fails on a duplicate name (message names both files). */
nf_status nf_source_index_names(nf_source *s, nf_error *err);

static inline uint16_t src_rd16(const uint8_t *p) { return (uint16_t)((unsigned)p[0] | ((unsigned)p[1] << 8)); }
static inline uint32_t src_rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t src_rd64(const uint8_t *p) { return (uint64_t)src_rd32(p) | ((uint64_t)src_rd32(p + 4) << 32); }

#endif
