/* Private header of the container module (docs/library.md, "Modules and headers"): the pieces
 * the reader, the writer and the container tests share but that are not part of the public API
 * (split planner, part naming, the JSON emitter that reproduces Python's json.dumps byte for
 * byte, the parsed directory tables, streaming XXH3).  Only lib/src/container includes it;
 * what other modules need from container is in container/container_module.h. */
#ifndef NINFER_CONTAINER_INTERNAL_H
#define NINFER_CONTAINER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <ninfer/container.h>
#include <ninfer/error.h>

#include "common/buf.h"
#include "common/strset.h"
#include "container/container_module.h"

#define NF_MAGIC_ENTRY_V2 "NINFER\0\2"
#define NF_MAGIC_ENTRY_V1 "NINFER\0\1"

/* Caps that keep hostile inputs from turning into huge allocations.  No legal artifact comes
 * near them: upstream directories are kilobytes to a few megabytes. */
#define NF_MAX_JSON_BYTES ((uint64_t)64 << 20) /* jansson needs ~20x the text in memory */
#define NF_MAX_FILES 100000u
/* Continuation parts the reader keeps open at once (reader.c): the least recently used one is
 * closed to open another, and reopened (and checked again) when a read needs it.  A descriptor
 * per part made a valid artifact of a few hundred parts fail under `ulimit -n 64` (docs/security.md 7.1, F8);
 * with this bound any part count up to NF_MAX_FILES works with the entry, the cache and a few
 * descriptors of the program's own. */
#define NF_OPEN_PARTS_MAX 16u
/* Pre-scan caps of the JSON directory (directory.c, docs/security.md 7, C2): nesting, objects + arrays, and
 * values (members and elements); they bound jansson's tree at about 1 GB. */
#define NF_MAX_JSON_DEPTH 900u /* json_emit.c refuses deeper values too */
#define NF_MAX_JSON_CONTAINERS 2000000u
#define NF_MAX_JSON_VALUES 8000000u

/* ---------------------------------------------------------------- split planner (2.5) */
/* Payload bytes of each file (entry first) for a logical payload of payload_bytes when the
 * entry's payload starts at entry_payload_start; max_file_bytes 0 = one file.  *segments is
 * malloc'ed (free it).  Fails with NF_ERR_INVALID when the payload is 0, the limit is too small
 * for one page of payload per file, a file size overflows U64, or more than NF_MAX_FILES files
 * would be needed. */
nf_status nf_split_plan(uint64_t payload_bytes, uint64_t entry_payload_start, uint64_t max_file_bytes,
                        uint64_t **segments, size_t *count, nf_error *err);

/* ---------------------------------------------------------------- JSON emitter */
/* Called for every string value (not object keys) as it is emitted; pos is the offset in the
 * output of the string's first character (just after the opening quote). */
typedef void (*nf_json_string_hook)(void *ctx, const json_t *node, size_t pos);

/* Append the compact JSON text of v exactly as Python's
 * json.dumps(v, ensure_ascii=False, allow_nan=False, separators=(",", ":")) writes it: object
 * members in insertion order, raw UTF-8, Python's escapes, floats in repr form.  Fails for
 * non-finite reals, invalid UTF-8 in a string and nesting deeper than Python would handle. */
nf_status nf_json_emit(const json_t *v, nf_buf *out, nf_json_string_hook hook, void *hook_ctx, nf_error *err);
/* Python's repr(float) for a finite double, NUL-terminated; returns its length (< 32). */
size_t nf_json_format_real(double v, char out[32]);

/* ---------------------------------------------------------------- parsed directory */
struct nf_dir_chunk; /* the directory's own copies of its strings (directory.c) */

typedef struct nf_dir {
    nf_object *objects;
    uint64_t *elements; /* elements(shape) of each object (1 for a resource) */
    size_t nobjects;
    nf_file_entry *files;
    size_t nfiles;
    uint64_t total_payload;
    nf_strset ids; /* object id -> index */
    struct nf_dir_chunk *strings;
} nf_dir;

/* Strict parse (UTF-8, duplicates, NaN, trailing data) and every record rule of docs/artifact.md
 * 2.6 in the reader's order.  The strings of *dir are its own (they outlive *root). */
nf_status nf_dir_parse(const uint8_t *json, size_t len, const char *entry_name, json_t **root, nf_dir *dir,
                       nf_error *err);
/* The same verdict and the same rules without the whole tree: each record parsed alone
 * (common/json_walk.h), so that checking a directory of 10^5 objects costs a few MiB, not
 * hundreds (the writer's check of what it writes, writer.c).  `piece`: values of at most so
 * many bytes are parsed whole (0: the default, 64 KiB); the tests make it small. */
nf_status nf_dir_check(const uint8_t *json, size_t len, const char *entry_name, size_t piece, nf_error *err);
void nf_dir_free(nf_dir *dir);


#endif
