/* The artifact writer's state, shared by its four files (internal to container/), which depend
 * on each other one way: writer.c (the entry points: planning, begin, writes) above
 * writer_directory.c (the JSON directory and file table) and writer_publish.c (publish, commit,
 * rollback, the output's lock), both above writer_io.c (routing across the files, streaming
 * digests).  What each lower file gives the ones above it is declared in its own header
 * (writer_directory.h, writer_publish.h, writer_io.h); this one declares no function.  The
 * writer's design is described at the top of writer.c. */
#ifndef NINFER_CONTAINER_WRITER_STATE_H
#define NINFER_CONTAINER_WRITER_STATE_H

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ninfer/container.h>

#include "common/checked.h"
#include "common/fd_cache.h"
#include "common/io.h"
#include "container/container_internal.h"
#include "outputs/out_lock.h"
#include "outputs/out_names.h"

#define JSON_INT_MAX ((uint64_t)INT64_MAX) /* jansson integers are signed 64-bit */
#define READBACK_CHUNK ((size_t)1 << 20)
/* Copies of pieces written ahead of their object's digest, for the whole writer: beyond this,
 * pieces are read back from the temp files when their object is complete. */
#define PARK_BUDGET ((uint64_t)8 << 20)
#define DIGEST_LOCKS 64u
#define CHECKSUM_ZEROS "00000000000000000000000000000000"
/* A path as messages show it (common/io.h, nf_io_msg_path): a long one is shortened in the
 * middle, so the message keeps its reason (docs/security.md 7.1, M8).  The buffer is a compound literal: it
 * lives until the end of the enclosing block, past the nf_error_* call it is an argument of. */
#define MP(path) nf_io_msg_path((path), (char[NF_IO_MSG_PATH + 1]){0})

typedef struct interval {
    uint64_t a, b;
} interval;

/* One planned object: what its directory record needs (not its whole nf_geometry: a writer of
 * hundreds of thousands of objects keeps this per object), and which of its bytes are written. */
typedef struct wobj {
    char *id;
    bool tensor;
    bool complete; /* every byte written (cov freed) */
    uint32_t rank;
    const nf_layout *layout;
    const nf_format *format;
    uint64_t *shape; /* rank entries (NULL for rank 0) */
    uint64_t divisors;
    uint64_t offset, bytes;
    interval *cov; /* sorted, disjoint, non-adjacent intervals written so far */
    size_t ncov, capcov;
} wobj;

typedef struct wfile {
    char *dest;
    char *temp;
    bool temp_exists;
    bool published;
    char *backup; /* overwrite: where the replaced destination was set aside */
    bool backed_up;
    uint64_t payload_bytes, logical_start, size;
} wfile;

/* Overwrite: a part of the replaced artifact beyond the new one's last part (the old artifact
 * had more parts).  Set aside like a replaced file once the new entry is published; removed on
 * commit, put back on rollback. */
typedef struct wsurplus {
    char *dest;
    char *backup;
    bool backed_up;
} wsurplus;

/* A copy of a piece written beyond its object's digest so far. */
typedef struct parked {
    struct parked *next;
    uint64_t offset;
    size_t len;
    uint8_t data[];
} parked;

/* The streaming digest of one object (checksums on): bytes [0, hashed) are in s. */
typedef struct wdigest {
    nf_xxh3_stream *s; /* created by the first piece at the digest's position */
    uint64_t hashed;
    uint64_t written; /* bytes written; the write that completes the object finishes it */
    parked *park;     /* sorted by offset */
    bool done;        /* hex holds the digest */
    bool failed;      /* no stream (out of memory): fill_checksums reads the object back */
    char hex[33];
} wdigest;

/* PUBLISHED: the new set is in place and synced, the replaced files are still kept (".old"):
 * nf_writer_commit drops them, nf_writer_abort/nf_writer_free put them back. */
enum { W_PLANNING, W_BEGUN, W_PUBLISHED, W_FINISHED, W_FAILED };

enum { M_COMPONENTS, M_BINDINGS, M_USES, M_METADATA, M_PROVENANCE, M_COUNT };

struct nf_writer {
    char *path;
    char *prefix; /* directory of path including '/', or "" */
    const char *entry_name;
    nf_writer_options opt;
    uint8_t id[NF_ARTIFACT_ID_BYTES];
    mode_t file_mode;
    wobj *objs;
    size_t nobjs, capobjs;
    nf_strset ids;
    uint64_t payload_end;
    json_t *members[M_COUNT];
    struct {
        nf_writer_records_fn next; /* NULL: the member is members[m] alone */
        void *ctx;
        char *key;
    } records[M_COUNT]; /* nf_writer_set_member_records */
    _Atomic int state;
    nf_error failure; /* the first write error, returned again to every later write (under lock) */
    wfile *files;
    size_t nfiles;
    wsurplus *surplus;
    size_t nsurplus;
    uint64_t json_bytes;
    uint64_t entry_payload_start;
    nf_buf image; /* header + padded JSON: the entry's first 32 + json_bytes bytes */
    /* where the checksum placeholders (32 zeros) of each object and of the directory are in
     * the JSON text */
    size_t *sum_pos;
    size_t dir_sum_pos;
    /* the output's lock (outputs/out_lock.h, nf_outputs_lock): held from before the first temp file
     * until the commit or the rollback, so that two writers of one output never publish a
     * mixed set (docs/security.md 1.3) */
    int lock_fd;
    char *lock_path;
    /* taken by nf_writer_hold_lock: held until nf_writer_free (a scale-out task's, shared, or
     * assembler's, exclusive, from its first look at the output to its last file) */
    bool lock_kept;
    pthread_mutex_t lock; /* coverage bookkeeping: writes may come from several threads */
    /* scale-out (writer_stage.c, docs/scale-out.md): the file table laid out before begin; a
     * task's selection of files (and the files and objects it touches); an assembler's state */
    bool laid_out;
    bool *selected;                         /* nfiles flags, or NULL: the whole artifact */
    bool *touched;                          /* nfiles flags (with selected): files holding bytes of a selected object */
    bool *objsel;                           /* nobjs flags (with selected): objects with bytes in a selected file */
    wdigest *dig;                           /* checksums: one per object (from begin) */
    pthread_mutex_t dig_lock[DIGEST_LOCKS]; /* object i's digest under dig_lock[i % DIGEST_LOCKS] */
    _Atomic uint64_t parked_bytes;
    /* the temp files' descriptors, slot i for files[i]: a bounded cache (common/fd_cache.h,
     * writer_io.c; docs/security.md 7.2), so that an artifact of more parts than the process may
     * open files is written all the same */
    nf_fd_cache *fds;
};

/* Part i's continuation header (docs/artifact.md 3): magic, index, artifact id -- what a writer
 * writes at a part's start and what an assembler finds there. */
static inline void nf_wr_part_header(const nf_writer *w, size_t i, uint8_t hdr[NF_HEADER_BYTES])
{
    memcpy(hdr, NF_MAGIC_PART, NF_MAGIC_BYTES);
    for (int b = 0; b < 8; b++) hdr[8 + b] = (uint8_t)((uint64_t)i >> (8 * b));
    memcpy(hdr + 16, w->id, NF_ARTIFACT_ID_BYTES);
}

/* The out-of-memory failure, as every file of the writer reports it. */
static inline nf_status nf_wr_nomem(nf_error *err) { return nf_error_set(err, NF_ERR_NOMEM, "out of memory"); }

#endif
