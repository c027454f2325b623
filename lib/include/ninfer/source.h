/* ninfer/source.h - readers of source checkpoints (docs/security.md 2.2 and 2.3).
 *
 * One opaque handle, nf_source, over either
 *   - Hugging Face safetensors: a single file, a sharded checkpoint through its
 *     `*.safetensors.index.json`, or a checkpoint directory (its `model.safetensors.index.json`
 *     when present, else its only `*.safetensors` file), or
 *   - a GGUF v2/v3 file written by ggml / gguf-py (little-endian only).
 *
 * Everything is validated at open, before any tensor is listed: framing, caps, checked
 * arithmetic, dtype/shape/size agreement, exact contiguity of the data (no hole, no overlap, no
 * trailing bytes for safetensors; GGUF offsets equal to the running padded sum), unique names.
 * Each rule violated gives NF_ERR_INVALID with a message naming the file, the tensor or key and
 * the byte position; NF_ERR_IO / NF_ERR_NOMEM are system errors.  Nothing asserts on input.
 *
 * Memory is bounded by what the file holds, not by what it claims: every count and length is
 * checked against the caps below *and* against the bytes that remain before anything is
 * allocated, so a 160-byte file cannot make the reader allocate gigabytes.  Tensor data is never
 * loaded at open; reads go through pread (the library's I/O shim) into caller buffers.
 *
 * Shapes are row-major, outermost dimension first.  GGUF's ggml `ne` (innermost first) is
 * reversed: ne = [K, N] is the project's [N, K] matrix, ne = [K, N, E] is [E, N, K].  A tensor is
 * read as `rows` rows of `row_elements` values: the last dimension is a row, every leading
 * dimension multiplies the row count (a rank-0 or rank-1 tensor is one row).
 *
 * An nf_source is immutable after open; reads may run concurrently from several threads.  It
 * keeps at most a quarter of the soft RLIMIT_NOFILE (4 to 64) of its files open and reopens a
 * closed shard when it is read again, refusing (NF_ERR_IO) a file that is no longer the one first
 * opened (device, inode, size): any shard count up to NF_SOURCE_MAX_FILES works under
 * `ulimit -n 64`.
 */
#ifndef NINFER_SOURCE_H
#define NINFER_SOURCE_H

#include <ninfer/export.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ninfer/error.h>
#include <ninfer/format.h>
#include <ninfer/layout.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- caps
 * Far above any real checkpoint, low enough that a hostile header is refused before it costs
 * memory (and that sanitizer runs never see giant allocations). */
#define NF_ST_MAX_HEADER_BYTES 100000000u /* safetensors MAX_HEADER_SIZE (upstream's value) */
#define NF_ST_MAX_INDEX_BYTES (64u << 20) /* *.safetensors.index.json */
#define NF_SOURCE_MAX_RANK 16u            /* safetensors rank (GGUF: 4, GGML_MAX_DIMS) */
#define NF_SOURCE_MAX_NAME_BYTES 1024u    /* tensor names (GGUF: < 64, GGML_MAX_NAME) */
#define NF_SOURCE_MAX_TENSORS (1u << 20)  /* tensors in one source, all shards together */
#define NF_SOURCE_MAX_FILES 65536u        /* shards of one checkpoint */
#define NF_GGUF_MAX_NAME_BYTES 63u        /* tensor name length < GGML_MAX_NAME (64) */
#define NF_GGUF_MAX_DIMS 4u               /* GGML_MAX_DIMS */
#define NF_GGUF_MAX_KV (1u << 20)
#define NF_GGUF_MAX_KEY_BYTES 4096u
#define NF_GGUF_MAX_STRING_BYTES (64u << 20) /* fits an embedded tokenizer.json */
#define NF_GGUF_MAX_ARRAY_COUNT (1u << 26)
#define NF_GGUF_MAX_HEADER_BYTES (256u << 20) /* KVs + tensor infos, before the data section */
#define NF_GGUF_MAX_ALIGNMENT (1u << 24)
#define NF_GGUF_DEFAULT_ALIGNMENT 32u
/* A checkpoint's config.json (nf_source_read_config): real ones are kilobytes with a few
 * hundred values; the caps bound jansson's tree at about 45 MB and keep the config well inside
 * what a .ninfer directory may hold (docs/security.md 2.1), where it is published. */
#define NF_SOURCE_MAX_CONFIG_BYTES (16u << 20)
#define NF_SOURCE_CONFIG_MAX_DEPTH 64u
#define NF_SOURCE_CONFIG_MAX_CONTAINERS 65536u
#define NF_SOURCE_CONFIG_MAX_VALUES 262144u

/* ---------------------------------------------------------------- types */
typedef enum nf_source_kind {
    NF_SOURCE_AUTO = 0, /* nf_source_open_memory: decide from the magic bytes */
    NF_SOURCE_SAFETENSORS,
    NF_SOURCE_GGUF,
    NF_SOURCE_TORCH /* torch.save's zip archive or legacy stream (pytorch_model.bin; docs/security.md 2.6) */
} nf_source_kind;

/* safetensors dtypes (docs/security.md 2.2), in the order of nf_st_dtype_name(). */
typedef enum nf_st_dtype {
    NF_ST_NONE = -1, /* not a safetensors tensor */
    NF_ST_BOOL = 0,
    NF_ST_U8,
    NF_ST_I8,
    NF_ST_F8_E5M2,
    NF_ST_F8_E4M3,
    NF_ST_F8_E8M0,
    NF_ST_F8_E4M3FNUZ,
    NF_ST_F8_E5M2FNUZ,
    NF_ST_I16,
    NF_ST_U16,
    NF_ST_F16,
    NF_ST_BF16,
    NF_ST_I32,
    NF_ST_U32,
    NF_ST_F32,
    NF_ST_C64,
    NF_ST_F64,
    NF_ST_I64,
    NF_ST_U64,
    NF_ST_F4,
    NF_ST_F6_E2M3,
    NF_ST_F6_E3M2,
    NF_ST_DTYPE_COUNT
} nf_st_dtype;

/* ggml type ids the reader has names for (ggml.h); others are "unknown". */
#define NF_GGML_TYPE_F32 0
#define NF_GGML_TYPE_F16 1
#define NF_GGML_TYPE_BF16 30
#define NF_GGML_TYPE_PQ2_0 142 /* PrismML ternary: 128 values in 34 bytes */

/* One tensor of a source.  Owned by the source; valid until nf_source_close(). */
typedef struct nf_source_tensor {
    const char *name;
    const char *type_name;   /* safetensors dtype ("BF16", "F8_E4M3") or ggml type ("Q4_K") */
    nf_st_dtype dtype;       /* safetensors; NF_ST_NONE for GGUF */
    int ggml_type;           /* GGUF type id; -1 for safetensors */
    const nf_format *format; /* GGUF tensors of the 18 imported block types: their gguf_*
                                 format (nf_format_by_ggml_type); NULL otherwise */
    uint32_t block_values;   /* values per storage block: ggml block size; 1 for byte-sized
                                 safetensors dtypes, 2 for F4, 4 for F6_* */
    uint32_t block_bytes;    /* bytes per block */
    uint32_t rank;
    const uint64_t *shape; /* rank dimensions, row-major (GGUF ne reversed) */
    uint64_t elements;     /* product of shape (1 for rank 0; 0 for an empty tensor) */
    uint64_t rows;         /* product of all dimensions but the last (1 for rank 0 and 1) */
    uint64_t row_elements; /* the last dimension (1 for rank 0) */
    uint64_t row_bytes;    /* bytes of one row; 0 when a row is not whole blocks (sub-byte
                                 safetensors dtypes with an odd row) */
    uint64_t bytes;        /* bytes of the whole tensor */
    size_t file;           /* index of the file holding it (nf_source_file_path) */
    uint64_t offset;       /* absolute byte offset of its first byte in that file */
    bool convertible;      /* nf_source_read_f32 can convert this type */
} nf_source_tensor;

typedef struct nf_source nf_source;
struct json_t;

/* ---------------------------------------------------------------- open */
/* Open `path`:
 *   - a directory: its model.safetensors.index.json if present, else its only
 *     *.safetensors.index.json, else its only *.safetensors file; without safetensors, its
 *     pytorch_model.bin.index.json, else its pytorch_model.bin, else its only *.bin;
 *   - a file named *.json: a sharded index (safetensors or PyTorch shards, resolved beside it);
 *   - a file named *.gguf, or starting with the bytes "GGUF": GGUF;
 *   - a file starting "PK\3\4" or with a pickled LONG1 (80 0N 8A): PyTorch (torch.save's zip or
 *     its legacy stream, docs/security.md 2.6);
 *   - any other file: a single safetensors file.
 * For safetensors sources the companion files present in the checkpoint's directory are
 * recorded (nf_source_companion).  A shard named by an index that does not exist makes the
 * checkpoint invalid (NF_ERR_INVALID); a missing `path` is NF_ERR_IO. */
NF_API nf_status nf_source_open(const char *path, nf_source **out, nf_error *err);

/* Parse a whole safetensors or GGUF file image held in memory (`kind` NF_SOURCE_AUTO decides
 * from the magic).  Same validation as nf_source_open; reads are served from `data`, which
 * must outlive the source.  `name` (may be NULL: "<memory>") is used in messages.  This is the
 * fuzz targets' entry point: any byte string gives NF_OK or NF_ERR_INVALID, never a crash. */
NF_API nf_status nf_source_open_memory(const void *data, size_t len, nf_source_kind kind, const char *name,
                                       nf_source **out, nf_error *err);

NF_API void nf_source_close(nf_source *s);

/* ---------------------------------------------------------------- what was opened */
NF_API nf_source_kind nf_source_kind_of(const nf_source *s);
NF_API const char *nf_source_path(const nf_source *s);       /* as given to open */
NF_API const char *nf_source_index_path(const nf_source *s); /* the index read, or NULL */
NF_API size_t nf_source_file_count(const nf_source *s);      /* shards: sorted by file name */
NF_API const char *nf_source_file_path(const nf_source *s, size_t file);
NF_API uint64_t nf_source_file_size(const nf_source *s, size_t file);

/* Tensors in file order (shard by shard, by offset); find by exact name (NULL if absent). */
NF_API size_t nf_source_tensor_count(const nf_source *s);
NF_API const nf_source_tensor *nf_source_tensor_at(const nf_source *s, size_t index);
NF_API const nf_source_tensor *nf_source_find(const nf_source *s, const char *name);
/* The index of t in file order (nf_source_tensor_at(s, i) == t), or SIZE_MAX when t is not one
 * of s's tensors. */
NF_API size_t nf_source_tensor_index(const nf_source *s, const nf_source_tensor *t);

/* Companion files found in a safetensors checkpoint's directory at open, from the fixed list
 * config.json, generation_config.json, hf_quant_config.json, tokenizer.json,
 * tokenizer_config.json, tokenizer.model, special_tokens_map.json, added_tokens.json,
 * vocab.json, merges.txt, chat_template.jinja, chat_template.json, preprocessor_config.json
 * (regular files or links to them).  `name` is one of these; the result is its path, or NULL
 * when the file is absent (always NULL for GGUF, whose tokenizer lives in its KVs). */
NF_API const char *nf_source_companion(const nf_source *s, const char *name);
NF_API size_t nf_source_companion_count(const nf_source *s);

/* A config.json as the converter takes it (the config of an artifact's component): at most
 * NF_SOURCE_MAX_CONFIG_BYTES, pre-scanned before it is parsed (nesting at most
 * NF_SOURCE_CONFIG_MAX_DEPTH, at most NF_SOURCE_CONFIG_MAX_CONTAINERS objects and arrays, at most
 * NF_SOURCE_CONFIG_MAX_VALUES values), strict JSON with duplicate members refused, and an object.
 * Every refusal is NF_ERR_INVALID naming the file (`name`) and the cap or position.  The reader
 * opens `path` without blocking (a FIFO is refused) and checks the size before reading. *out is
 * a new reference, NULL on failure. */
NF_API nf_status nf_source_parse_config(const void *text, size_t len, const char *name, struct json_t **out,
                                        nf_error *err);
NF_API nf_status nf_source_read_config(const char *path, struct json_t **out, nf_error *err);
/* The index-th companion present: *name gets its file name; returns its path (NULL past the end). */
NF_API const char *nf_source_companion_at(const nf_source *s, size_t index, const char **name);

/* ---------------------------------------------------------------- reading
 * All offsets and row ranges are checked; `t` must be a tensor of `s` (NF_ERR_USAGE otherwise,
 * and for a too small buffer or r0 > r1 or r1 > t->rows). */

/* Raw bytes [offset, offset + len) of the tensor (offset relative to its first byte). */
NF_API nf_status nf_source_read_bytes(const nf_source *s, const nf_source_tensor *t, uint64_t offset, void *buf,
                                      size_t len, nf_error *err);
/* Raw bytes of rows [r0, r1): (r1 - r0) * row_bytes bytes into buf (buf_len at least that).
 * NF_ERR_INVALID when rows are not whole bytes (use nf_source_read_bytes). */
NF_API nf_status nf_source_read_rows(const nf_source *s, const nf_source_tensor *t, uint64_t r0, uint64_t r1, void *buf,
                                     size_t buf_len, nf_error *err);
/* Values of rows [r0, r1) as binary32: (r1 - r0) * row_elements floats, row-major, into out
 * (out_len floats at least that).  Conversions:
 *   F32: the words as stored (NaN payloads kept).  F16, BF16, F8_E4M3 (E4M3FN), F8_E5M2: exact.
 *   F64: rounded to nearest, ties to even; a finite value beyond binary32's range is
 *   NF_ERR_INVALID naming it ("source value 1e+300 (F64) overflows binary32"); infinities and
 *   NaNs stay what they are.
 *   I8, U8, I16, BOOL: exact (a BOOL byte other than 0 or 1 is NF_ERR_INVALID).
 *   I32, I64: exact when |v| <= 2^24, else nearest binary32, ties to even.
 *   GGUF F32/F16/BF16 and I8/I16/I32/I64/F64 like the above; the 18 imported block types through
 *   ggml's own dequantization (bit-exact, nf_format's gguf_* dequantizers); PQ2_0 as
 *   (c - 1) * f16(d) with code 3 refused.
 * Any other type (F4, F6_*, F8_E8M0, F8_*FNUZ, U16, U32, U64, C64; ggml Q4_1, TQ1_0, ...) is
 * NF_ERR_INVALID naming the type as unsupported (t->convertible is false); its bytes remain
 * readable raw. */
NF_API nf_status nf_source_read_f32(const nf_source *s, const nf_source_tensor *t, uint64_t r0, uint64_t r1, float *out,
                                    size_t out_len, nf_error *err);
/* Values of columns [c0, c0 + n) of one row, converted as nf_source_read_f32 does: for rows too
 * long to hold at once.  c0 and n are whole blocks of the type (any column for element types);
 * n may end the row. */
NF_API nf_status nf_source_read_f32_span(const nf_source *s, const nf_source_tensor *t, uint64_t row, uint64_t c0,
                                         uint64_t n, float *out, size_t out_len, nf_error *err);
/* A byte reader over the tensor's raw bytes (offsets relative to its first byte), e.g. for the
 * layout module's gatherers.  Valid while s is open. */
NF_API void nf_source_tensor_reader(const nf_source *s, const nf_source_tensor *t, nf_byte_reader *r);

/* ---------------------------------------------------------------- safetensors
 * Validation follows the upstream reader (docs/security.md 2.2): u64 LE header length N <=
 * NF_ST_MAX_HEADER_BYTES and <= file size - 8; the header a UTF-8 JSON object starting with '{'
 * (right-padding with spaces allowed), duplicate members refused; optional __metadata__ mapping
 * strings to strings; every other member {dtype, shape, data_offsets} and nothing else, a known
 * dtype, a shape of non-negative integers (rank <= NF_SOURCE_MAX_RANK), integer offsets with
 * begin <= end, element and bit counts by checked multiplication, sub-byte dtypes ending on a
 * byte boundary, end - begin equal to the size; sorted by offset, the tensors start at 0, each
 * begins where the previous ended and the last ends exactly at the end of the file.  Empty
 * tensors (a zero dimension) and rank-0 scalars are allowed.  Tensor names are 1 to
 * NF_SOURCE_MAX_NAME_BYTES bytes.  A sharded index is a JSON object whose "weight_map" maps
 * every tensor to a shard file name in the index's directory (no path separators); every listed
 * tensor must be in its shard, every shard tensor listed, and no name may be in two shards. */
NF_API const char *nf_st_dtype_name(nf_st_dtype dtype);             /* "BF16"; NULL if out of range */
NF_API bool nf_st_dtype_lookup(const char *name, nf_st_dtype *out); /* exact, case-sensitive */
NF_API unsigned nf_st_dtype_bits(nf_st_dtype dtype);                /* 4, 6, 8, 16, 32, 64; 0 if bad */
/* `__metadata__` of one file (string -> string), in the header's order. */
NF_API size_t nf_source_st_metadata_count(const nf_source *s, size_t file);
NF_API bool nf_source_st_metadata_at(const nf_source *s, size_t file, size_t index, const char **key,
                                     const char **value);
NF_API const char *nf_source_st_metadata(const nf_source *s, size_t file, const char *key); /* NULL if absent */

/* ---------------------------------------------------------------- GGUF
 * Validation follows ggml's gguf.cpp checklist (docs/security.md 2.3), each failure named:
 * magic; version 2 or 3 (v1 refused; a byte-swapped version gets a big-endian hint); n_tensors
 * and n_kv capped and checked against the bytes left; keys 1..NF_GGUF_MAX_KEY_BYTES bytes,
 * NUL-free, unique; value types 0..12; strings capped and within the file; arrays of a checked
 * element type (nested arrays refused), count capped and within the file; general.alignment a
 * u32 non-zero power of two <= NF_GGUF_MAX_ALIGNMENT (default 32); tensor names 1..63 bytes,
 * NUL-free, unique; n_dims <= 4; every ne >= 1 and < 2^63 with a product that fits int64; the
 * type known with a block size; ne[0] a multiple of it; sizes checked; offsets equal to the
 * running padded sum (no gap, no overlap, nothing misaligned); every tensor inside the file.
 * Choices where ggml leaves room:
 *   - ne = 0 is refused (ggml accepts empty tensors; no weight is one, and an importer has no
 *     rows to take); n_dims = 0 is a scalar, as ggml reads it;
 *   - the last tensor's padding may be absent and bytes after the data section are ignored;
 *   - BOOL values are kept as stored; nf_gguf_kv_bool refuses bytes other than 0 and 1. */
typedef enum nf_gguf_type {
    NF_GGUF_U8 = 0,
    NF_GGUF_I8 = 1,
    NF_GGUF_U16 = 2,
    NF_GGUF_I16 = 3,
    NF_GGUF_U32 = 4,
    NF_GGUF_I32 = 5,
    NF_GGUF_F32 = 6,
    NF_GGUF_BOOL = 7,
    NF_GGUF_STRING = 8,
    NF_GGUF_ARRAY = 9,
    NF_GGUF_U64 = 10,
    NF_GGUF_I64 = 11,
    NF_GGUF_F64 = 12,
    NF_GGUF_TYPE_COUNT = 13
} nf_gguf_type;

/* One key/value pair.  Values are read with the nf_gguf_kv_* accessors below: `index` is 0 for a
 * scalar and the element index for an array. */
typedef struct nf_gguf_kv {
    const char *key;
    nf_gguf_type type;      /* NF_GGUF_ARRAY for arrays */
    nf_gguf_type elem_type; /* arrays: the element type; scalars: == type */
    uint64_t count;         /* arrays: elements; scalars: 1 */
    uint64_t file_offset;   /* byte position of the pair in the file (for messages) */
    /* private to the reader */
    const void *priv_values;
} nf_gguf_kv;

/* For a safetensors source these return 0 and the KV table is empty. */
NF_API uint32_t nf_source_gguf_version(const nf_source *s);     /* 2 or 3 */
NF_API uint64_t nf_source_gguf_alignment(const nf_source *s);   /* general.alignment, or 32 */
NF_API uint64_t nf_source_gguf_data_offset(const nf_source *s); /* file offset of the data section */
NF_API size_t nf_source_gguf_kv_count(const nf_source *s);
NF_API const nf_gguf_kv *nf_source_gguf_kv_at(const nf_source *s, size_t index); /* file order */
NF_API const nf_gguf_kv *nf_source_gguf_kv_find(const nf_source *s, const char *key);

/* Typed access; NF_ERR_INVALID naming the key when the stored type does not convert exactly:
 *   uint:  U8/U16/U32/U64, or a signed type holding a value >= 0;
 *   int:   any integer type whose value fits int64;
 *   float: F32 (widened exactly) or F64;
 *   bool:  BOOL (a byte other than 0 or 1 is refused);
 *   string: STRING; *str is NUL-terminated and *len its byte length (strings may hold NULs).
 * NF_ERR_USAGE for index >= count. */
NF_API nf_status nf_gguf_kv_uint(const nf_gguf_kv *kv, uint64_t index, uint64_t *out, nf_error *err);
NF_API nf_status nf_gguf_kv_int(const nf_gguf_kv *kv, uint64_t index, int64_t *out, nf_error *err);
NF_API nf_status nf_gguf_kv_float(const nf_gguf_kv *kv, uint64_t index, double *out, nf_error *err);
NF_API nf_status nf_gguf_kv_bool(const nf_gguf_kv *kv, uint64_t index, bool *out, nf_error *err);
NF_API nf_status nf_gguf_kv_string(const nf_gguf_kv *kv, uint64_t index, const char **str, size_t *len, nf_error *err);

NF_API const char *nf_gguf_type_name(nf_gguf_type type); /* "u32", "string", "array"; NULL if bad */
/* ggml type name ("Q4_K", "IQ2_XXS", "F32", "PQ2_0"), or NULL when the id is unknown. */
NF_API const char *nf_ggml_type_name(int ggml_type);
/* Block geometry of a ggml type: false for unknown ids and for types removed from ggml
 * (Q4_2, Q4_0_4_4, ...), which have no block size. */
NF_API bool nf_ggml_type_block(int ggml_type, uint32_t *block_values, uint32_t *block_bytes);

#ifdef __cplusplus
}
#endif
#endif
