/* Module interface of container (docs/library.md, "Modules and headers"): what higher modules
 * may use of container beyond <ninfer/container.h>.  The rest of container's internals are in
 * container_internal.h, which only lib/src/container includes. */
#ifndef NINFER_CONTAINER_MODULE_H
#define NINFER_CONTAINER_MODULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ninfer/container.h>
#include <ninfer/error.h>

/* The magics of an entry and of a part (docs/artifact.md 2 and 3): the first 8 bytes of each
 * file, which a scale-out task reads to tell this plan's published entry (convert/scaleout.c). */
#define NF_MAGIC_ENTRY "NINFER\0\3"
#define NF_MAGIC_PART "NINPRT\0\3"
#define NF_MAGIC_BYTES 8u

/* Bytes [offset, offset + len) of file `index` of the artifact (0: the entry file; a part is
 * opened and checked first), as stored, not through the logical payload: verify checks with it
 * that the bytes the payload skips (after the entry's directory, in each part's header) are 0.  NF_ERR_INVALID for a missing/foreign part or a range
 * beyond the file. */
nf_status nf_artifact_read_file(nf_artifact *a, size_t index, uint64_t offset, void *buf, size_t len, nf_error *err);

/* Scale-out (docs/scale-out.md, "The output's lock"): the output's lock taken now and held until
 * nf_writer_free -- shared by a task (with the plan's other tasks; never with a run or an
 * assembler, which take it exclusively), exclusive for an assembler -- so that what it finds at
 * the output stays true while it works.  Exit-3 errors as nf_writer_begin's when it is held. */
nf_status nf_writer_hold_lock(nf_writer *w, bool shared, nf_error *err);
/* Is the file at path this laid-out writer's complete entry: a regular file of the entry's size
 * whose header and directory are the layout's but for the checksum digits, and whose directory
 * checksum is its own (what an assembler or a run publishes, never a staged entry); without
 * checksums, the layout's bytes.  A missing file (or a symbolic link) is not; before assembly
 * (nf_writer_assemble fills the layout in). */
nf_status nf_writer_entry_complete(const nf_writer *w, const char *path, bool *complete, nf_error *err);

/* Streaming XXH3-128 (checksum.c): the writer's object digests, and the scale-out receipts'
 * digests of whole files (convert/scaleout_receipt.c). */
typedef struct nf_xxh3_stream nf_xxh3_stream;
nf_xxh3_stream *nf_xxh3_stream_new(void); /* NULL on ENOMEM */
void nf_xxh3_stream_update(nf_xxh3_stream *s, const void *data, size_t len);
/* Canonical hex digest (as nf_xxh3_128_hex); frees the stream. */
void nf_xxh3_stream_final(nf_xxh3_stream *s, char out[33]);

#endif
