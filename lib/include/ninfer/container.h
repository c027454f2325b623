/* ninfer/container.h - reader and writer of the .ninfer v3 container (docs/artifact.md).
 *
 * Reader: header framing, the JSON directory parsed strictly (jansson; duplicate members, NaN,
 * trailing data and bad UTF-8 rejected) and checked against every rule of docs/artifact.md 5 and
 * 2.8 at open; continuation parts opened lazily on the first read that needs them; range reads
 * across part boundaries through pread or mmap.  Per-object format/layout/size checks are
 * deferred to nf_artifact_check_object(), so an artifact holding an unknown format still opens.
 *
 * Writer: plan (objects in order, tensors 256-aligned), directory JSON in upstream member order,
 * compact and padded with spaces, split by max_file_bytes, temp files in the destination
 * directory, positional writes of object pieces in any order (each byte exactly once),
 * fdatasync, publish parts then the entry, keeping replaced files until a commit; nothing is
 * left behind on failure, and an uncommitted replacement can be rolled back.
 */
#ifndef NINFER_CONTAINER_H
#define NINFER_CONTAINER_H

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

struct json_t; /* jansson */

#define NF_HEADER_BYTES 32u
#define NF_PAGE_BYTES 4096u
#define NF_ARTIFACT_ID_BYTES 16u

typedef enum nf_object_kind { NF_OBJECT_TENSOR, NF_OBJECT_RESOURCE } nf_object_kind;

/* One entry of `objects`, as parsed.  format/layout are NULL when the name is not registered
 * (the error is deferred to nf_artifact_check_object). */
typedef struct nf_object {
    const char *id;
    nf_object_kind kind;
    uint32_t rank;
    uint64_t shape[NF_MAX_RANK];
    const char *format_name; /* tensor */
    const char *layout_name; /* tensor; for a resource: its encoding */
    uint64_t offset;
    uint64_t bytes;
    uint64_t divisors; /* 1 when absent */
    bool has_divisors; /* the member was present */
    const nf_format *format;
    const nf_layout *layout;
} nf_object;

typedef struct nf_file_entry {
    const char *path; /* NULL for the entry file */
    uint64_t payload_bytes;
    uint64_t logical_start; /* P_i */
} nf_file_entry;

typedef enum nf_read_mode { NF_READ_PREAD = 0, NF_READ_MMAP = 1 } nf_read_mode;

typedef struct nf_artifact nf_artifact;

/* Open an artifact: framing + directory + entry size.  NF_ERR_IO when the entry cannot be read,
 * NF_ERR_INVALID for any contract violation (message names the rule and position). */
NF_API nf_status nf_artifact_open(const char *path, nf_read_mode mode, nf_artifact **out, nf_error *err);
NF_API void nf_artifact_close(nf_artifact *a);

NF_API const char *nf_artifact_path(const nf_artifact *a);
NF_API const uint8_t *nf_artifact_id(const nf_artifact *a); /* 16 bytes */
NF_API void nf_artifact_id_hex(const nf_artifact *a, char out[33]);
NF_API uint64_t nf_artifact_json_bytes(const nf_artifact *a);
NF_API uint64_t nf_artifact_payload_bytes(const nf_artifact *a); /* total logical payload */
NF_API uint64_t nf_artifact_entry_payload_start(const nf_artifact *a);
/* The raw JSON text (json_bytes bytes, including padding) and the 32-byte header. */
NF_API const uint8_t *nf_artifact_json_text(const nf_artifact *a);
NF_API const uint8_t *nf_artifact_header(const nf_artifact *a);
/* The parsed directory root (owned by the artifact). */
NF_API const struct json_t *nf_artifact_directory(const nf_artifact *a);

NF_API size_t nf_artifact_object_count(const nf_artifact *a);
NF_API const nf_object *nf_artifact_object(const nf_artifact *a, size_t index);
NF_API const nf_object *nf_artifact_find(const nf_artifact *a, const char *id);
NF_API size_t nf_artifact_file_count(const nf_artifact *a);
NF_API const nf_file_entry *nf_artifact_file(const nf_artifact *a, size_t index);

/* Read logical payload bytes [offset, offset + len) across files (docs/artifact.md 7 item 5);
 * a missing, foreign or wrongly sized part is NF_ERR_INVALID naming the part. */
NF_API nf_status nf_artifact_read(nf_artifact *a, uint64_t offset, void *buf, size_t len, nf_error *err);
/* Open and check part i now (header, index, artifact_id, size).  The reader keeps at most a
 * small fixed number of parts open at once (whatever the part count and the thread count): a
 * part it closed is reopened when a read needs it and checked again, including that it is still
 * the file checked first, so a part replaced while the artifact is open is NF_ERR_INVALID. */
NF_API nf_status nf_artifact_open_part(nf_artifact *a, size_t index, nf_error *err);
/* Per-object check (docs/artifact.md 7 item 6): known format and layout, accepted pair, shape,
 * divisors, bytes == encoded size, alignment; resources: encoding raw_bytes_v1.  Fills *g for a
 * tensor (may be NULL). */
NF_API nf_status nf_artifact_check_object(const nf_artifact *a, const nf_object *o, nf_geometry *g, nf_error *err);
/* A byte reader over one object's bytes (offsets relative to the object).  Its messages, like
 * nf_artifact_check_object's, name neither the artifact nor the object: the caller that chose
 * the object adds "PATH: object 'ID'" (docs/library.md, "Who names what"). */
NF_API void nf_artifact_object_reader(nf_artifact *a, const nf_object *o, nf_byte_reader *r);

/* Parse and check a directory held in memory (the same code nf_artifact_open uses; the fuzz
 * target's entry point).  On success *root owns the parsed JSON (json_decref it). */
NF_API nf_status nf_directory_parse(const uint8_t *json, size_t len, const char *entry_name, struct json_t **root,
                                    nf_error *err);

/* ---------------------------------------------------------------- writer */
typedef struct nf_writer nf_writer;

typedef struct nf_writer_options {
    uint64_t max_file_bytes;    /* 0: one file whatever its size */
    const uint8_t *artifact_id; /* 16 bytes, or NULL for a random UUIDv4 */
    bool overwrite;             /* replace existing destinations */
    bool checksums;             /* add metadata.checksums (objects + directory) */
} nf_writer_options;

NF_API nf_status nf_writer_create(const char *path, const nf_writer_options *opt, nf_writer **out, nf_error *err);
/* Plan objects in order.  *index receives the object's index for nf_writer_write. */
NF_API nf_status nf_writer_add_tensor(nf_writer *w, const char *id, const nf_geometry *g, size_t *index, nf_error *err);
NF_API nf_status nf_writer_add_resource(nf_writer *w, const char *id, uint64_t bytes, size_t *index, nf_error *err);
/* Directory members; each call takes over the caller's reference (json_decref'ed by the
 * writer).  Defaults: components {"text":{"config":{}}}, bindings {}, uses [], metadata {},
 * provenance {}. */
NF_API nf_status nf_writer_set_member(nf_writer *w, const char *member, struct json_t *value, nf_error *err);
/* The members of a directory member's object, one at a time: member i's name in *key (valid
 * until the next call) and its value in *value (a new reference the writer releases), or *value
 * NULL after the last.  Called with i = 0, 1, ... while the directory is written. */
typedef nf_status (*nf_writer_records_fn)(void *ctx, size_t i, const char **key, struct json_t **value, nf_error *err);
/* A member too large to hold as one tree (10^5 records; docs/scale-out.md): components,
 * bindings or provenance made of the members of `head` (taken over as by nf_writer_set_member;
 * NULL for none) followed by the members `next` yields -- under the name `records_key` (one
 * more member, last) or, when it is NULL, directly.  ctx must outlive the layout
 * (nf_writer_begin).  The text is the same as of the whole tree set with nf_writer_set_member;
 * a name that repeats is refused when the directory is checked. */
NF_API nf_status nf_writer_set_member_records(nf_writer *w, const char *member, struct json_t *head,
                                              const char *records_key, nf_writer_records_fn next, void *ctx,
                                              nf_error *err);
/* Freeze the plan: build the directory, lay out files, refuse destinations that are not regular
 * files (NF_ERR_USAGE) or exist (without overwrite), take the output's lock (".<name>.lock"
 * beside the entry, held until commit or rollback; NF_ERR_IO when another writer holds it),
 * create the temp files and write headers and JSON. */
NF_API nf_status nf_writer_begin(nf_writer *w, nf_error *err);
/* Offset of a planned object in the logical payload (valid after add_*). */
NF_API uint64_t nf_writer_object_offset(const nf_writer *w, size_t index);
/* Write bytes [offset, offset + len) of object `index`; each object byte exactly once
 * ("duplicate output coverage" otherwise). */
NF_API nf_status nf_writer_write(nf_writer *w, size_t index, uint64_t offset, const void *data, size_t len,
                                 nf_error *err);
/* A write callback (nf_write_fn) bound to one object, for nf_layout_encode_rows. */
typedef struct nf_writer_sink {
    nf_writer *writer;
    size_t index;
} nf_writer_sink;
NF_API nf_status nf_writer_sink_write(void *sink, uint64_t offset, const void *buf, size_t len, nf_error *err);
/* Replace the only occurrence of `placeholder` in the directory's text by `value`, of the same
 * length (at least 32 bytes, neither holding '"' or '\\'): a figure known only once the payload is
 * written (a source file's SHA-256, docs/provenance.md) put in a string laid out with a
 * placeholder of its size.  Between begin and publish, before the checksums are filled in;
 * NF_ERR_USAGE in any other state, for lengths that differ, or when the placeholder occurs not
 * exactly once. */
NF_API nf_status nf_writer_patch_text(nf_writer *w, const char *placeholder, const char *value, nf_error *err);
/* Check coverage, fill checksums, fdatasync, publish parts then the entry, sync the directory.
 * With overwrite, the files replaced (and the old artifact's parts beyond the new one's last)
 * are kept as ".<name>.<pid>@<host>.XXXXXX.old" links until nf_writer_commit; a failure puts them back
 * and removes everything new (the writer is then dead). */
NF_API nf_status nf_writer_publish(nf_writer *w, nf_error *err);
/* After a successful publish: remove the kept files (best effort: one that cannot be removed
 * stays under its ".old" name; that is no error).  NF_ERR_USAGE in any other state. */
NF_API nf_status nf_writer_commit(nf_writer *w, nf_error *err);
/* publish + commit. */
NF_API nf_status nf_writer_finish(nf_writer *w, nf_error *err);
/* Unless committed: remove temp files and everything published, and put every replaced file
 * back (also after a successful publish).  The writer is then dead (only free remains). */
NF_API void nf_writer_abort(nf_writer *w);
/* nf_writer_abort (if not committed), then free. */
NF_API void nf_writer_free(nf_writer *w);
/* Hex artifact id of the writer (valid after create). */
NF_API void nf_writer_id_hex(const nf_writer *w, char out[33]);

/* ---------------------------------------------------------------- scale-out
 * One artifact written as independent tasks and assembled (docs/scale-out.md).  Every party lays
 * the same plan out (the same objects, members, options and artifact id give the same layout and
 * directory); then
 *  - a task selects its files, begins, writes every selected object (nf_writer_object_selected)
 *    whole, and stages: its parts are renamed to their final names, the entry (if selected, its
 *    directory's checksum digits still zero) to a staging name; nf_writer_object_checksum then
 *    gives the checksums of its objects;
 *  - the assembler, given every object's checksum, checks the parts (size, header) and the staged
 *    entry (size, this plan's header and directory), completes the directory and publishes the
 *    entry (the commit point), under the output's lock.
 * The files are byte for byte those nf_writer_finish writes for the same plan. */
/* Freeze the plan without touching the filesystem: the directory and the file table.
 * nf_writer_begin may follow (it then uses this layout). */
NF_API nf_status nf_writer_layout(nf_writer *w, nf_error *err);
/* The same, where an earlier layout of the same plan was checked: when the layout's digest
 * (nf_writer_layout_digest) is `fingerprint`, the directory is not parsed again (a scale-out
 * task or assembler: the plan's maker checked it, and the parse is the largest memory of a
 * layout of 10^5 objects); otherwise as nf_writer_layout. */
NF_API nf_status nf_writer_layout_known(nf_writer *w, const char *fingerprint, nf_error *err);
typedef struct nf_writer_file {
    const char *path;       /* the destination (for file 0, the entry) */
    uint64_t size;          /* its bytes */
    uint64_t logical_start; /* its payload's first byte in the logical payload */
    uint64_t payload_bytes;
} nf_writer_file;
/* The file table (after nf_writer_layout or begin; 0 files before). */
NF_API size_t nf_writer_file_count(const nf_writer *w);
NF_API void nf_writer_file_info(const nf_writer *w, size_t index, nf_writer_file *out);
NF_API uint64_t nf_writer_object_bytes(const nf_writer *w, size_t index);
/* XXH3-128 of the laid-out entry header and directory, checksum digits zero: equal for two
 * writers exactly when they would write the same directory (the plan's fingerprint); valid after
 * nf_writer_layout, before nf_writer_assemble. */
NF_API void nf_writer_layout_digest(const nf_writer *w, char out[33]);
/* The objects with bytes in file `index`: indices [*first, *end) (objects lie in the payload in
 * the order they were planned), found by binary search. */
NF_API void nf_writer_file_objects(const nf_writer *w, size_t index, size_t *first, size_t *end);
/* Between layout and begin: a task writes the files flagged in files[nf_writer_file_count]. */
NF_API nf_status nf_writer_select_files(nf_writer *w, const bool *files, nf_error *err);
/* Has object `index` bytes in a selected file (always true without a selection)? */
NF_API bool nf_writer_object_selected(const nf_writer *w, size_t index);
/* A task's end instead of publish: coverage of its objects checked, their checksums formed, its
 * files synced and renamed into place (the entry to entry_staged), the other temp files removed.
 * The output's lock is held shared from begin until nf_writer_free: the tasks of one artifact run
 * at once (a task run twice writes the same bytes), and no writer or assembler publishes the
 * output meanwhile.  Refused (EEXIST, NF_ERR_IO) at begin when the output's entry exists. */
NF_API nf_status nf_writer_stage(nf_writer *w, const char *entry_staged, nf_error *err);
/* After nf_writer_stage: the checksum of a selected object (false otherwise). */
NF_API bool nf_writer_object_checksum(const nf_writer *w, size_t index, char out[33]);
/* The assembler (after nf_writer_layout, no selection): checksums[i] is object i's 32 hex
 * digits.  Takes the output's lock; an existing entry is replaced only with overwrite.  The file
 * checked, completed and published is the staged entry as linked to a name of this process's own
 * first, whatever is renamed over entry_staged meanwhile. */
NF_API nf_status nf_writer_assemble(nf_writer *w, const char *const *checksums, const char *entry_staged,
                                    nf_error *err);

/* ---------------------------------------------------------------- checksums */
/* XXH3-128 in canonical form: 32 lowercase hex digits, high 64 bits first (xxhsum -H2). */
NF_API void nf_xxh3_128_hex(const void *data, size_t len, char out[33]);

#ifdef __cplusplus
}
#endif
#endif
