/* The internals of scale-out shared by scaleout.c (a task, the assembly), scaleout_inputs.c
 * (helpers, fingerprints, allowed roots), scaleout_plan.c (writing the plan), scaleout_open.c
 * (reading it, rebuilding the conversion) and scaleout_receipt.c (receipts).  Nothing outside
 * those files includes it. */
#ifndef NINFER_SCALEOUT_IMPL_H
#define NINFER_SCALEOUT_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "container/container_module.h"
#include "convert/convert_impl.h"
#include "common/io.h"
#include "common/json_prescan.h"

#define PLAN_VERSION 2                     /* 1 recorded a command line (refused: make the plan again) */
#define PLAN_MAX_BYTES ((uint64_t)1 << 30) /* a plan of 10^6 objects is ~300 MB */
#define RECEIPT_MAX_BYTES ((uint64_t)256 << 20)
#define FINGERPRINT_HEAD ((size_t)1 << 20)  /* each input's first MiB (its header, index or text) */
#define FINGERPRINT_TAIL ((size_t)64 << 10) /* and its last 64 KiB */
#define MP(path) nf_io_msg_path((path), (char[NF_IO_MSG_PATH + 1]){0})

/* A file's run of ids in nf_scaleout.ids: n of them from byte at. */
typedef struct id_run {
    size_t at, n;
} id_run;

struct nf_scaleout {
    char *path;
    json_t *root;             /* the plan's members but "objects", and its files without their "objects" */
    const json_t *conversion; /* what rebuilds the conversion (checked by nf_scaleout_open) */
    char output[4096];
    char fingerprint[33];
    char inputs[33]; /* the digest of the plan's inputs (inputs_digest): what a receipt binds */
    uint8_t id[16];
    size_t nfiles, ntasks;
    size_t *task_first, *task_end; /* task t holds files [first, end) */
    /* files[i].objects, for nf_scaleout_task_objects: the ids NUL-terminated, file after file,
     * in one block (10^5 of them as JSON strings are several times their bytes) */
    char *ids;
    id_run *file_ids; /* file i's */
    /* nf_scaleout_rebuild's: the recipe and plan made from the conversion's data, and the
     * options of every task and of the assembler (the plan's, and the run's) */
    nf_recipe *recipe;
    nf_plan *plan;
    nf_convert_options opt;
};

/* ---------------------------------------------------------------- scaleout_inputs.c */
/* What jansson may build of a plan or a receipt (common/json_prescan.h). */
extern const nf_json_caps nf_convert_scaleout_json_caps;
/* Are the n bytes of s lowercase hex digits? */
bool nf_convert_scaleout_is_hex(const char *s, size_t n);
/* Does the inputs list arr hold path? */
bool nf_convert_scaleout_listed(const json_t *arr, const char *path);
/* Member key of o as a non-negative integer (false: absent or not one). */
bool nf_convert_scaleout_u64_member(const json_t *o, const char *key, uint64_t *out);
/* A file's receipt beside the output (outputs/out_names.h): "<file>.receipt.json", the entry's
 * "<OUT>.entry.receipt.json". */
char *nf_convert_scaleout_receipt_path(const nf_writer_file *f, size_t index, const char *output);
/* Member key of o as a string, NULL: absent or not one. */
const char *nf_convert_scaleout_str_member(const json_t *o, const char *key);
/* The inputs as the plan recorded them, unchanged: the first that differs is named. */
nf_status nf_convert_scaleout_check_inputs(const nf_plan *p, const nf_scaleout *s, nf_error *err);
/* Every input under the allowed roots.  plan_path NULL: the plan being made (the input named by
 * its path); else the plan file's inputs[i]. */
nf_status nf_convert_scaleout_check_roots(const nf_recipe *r, const json_t *inputs, const char *plan_path,
                                          nf_error *err);
/* The sources the rebuilt recipe names, under the allowed roots before any is opened (a source
 * the plan's text adds elsewhere is refused, named by the plan). */
nf_status nf_convert_scaleout_check_source_roots(const nf_recipe *r, const char *plan_path, nf_error *err);
/* The conversion as data: the recipe as made (nf_recipe_origin: its text, name and directory,
 * the variables it expanded, the sources and paths given to it) and the options that decide the
 * artifact's bytes.  What a task's host chooses (threads, chunk size, progress) is not in it. */
nf_status nf_convert_scaleout_conversion_of(const nf_plan *p, const nf_convert_options *opt, json_t **out,
                                            nf_error *err);
/* An input's fingerprint: its size and the digests of its first MiB and last 64 KiB -- what
 * changes when a checkpoint is rewritten (its header holds every tensor's offsets and dtype),
 * read in two small pieces (docs/scale-out.md, "What a plan checks"). */
nf_status nf_convert_scaleout_fingerprint(const char *path, json_t **out, nf_error *err);
/* Every file the plan reads: the recipe, each source's files, index and companions, the
 * imatrix files, the resources. */
nf_status nf_convert_scaleout_inputs_of(const nf_plan *p, json_t **out, nf_error *err);
/* A plan or receipt file of at most cap bytes, judged as untrusted JSON (nf_convert_scaleout_json_caps). */
nf_status nf_convert_scaleout_load_json(const char *path, uint64_t cap, json_t **out, nf_error *err);
/* "out of memory" (NF_ERR_NOMEM); _reading: while reading path. */
nf_status nf_convert_scaleout_nomem(nf_error *err);
nf_status nf_convert_scaleout_nomem_reading(const char *path, nf_error *err);
/* JSON text to path, atomically (nf_outputs_put_whole). */
nf_status nf_convert_scaleout_put_json(const char *path, const json_t *v, nf_error *err);
/* A whole file of at most cap bytes, NUL-terminated. */
nf_status nf_convert_scaleout_slurp(const char *path, uint64_t cap, char **out, size_t *len, nf_error *err);

/* ---------------------------------------------------------------- scaleout_open.c */
/* The plan rebuilt by this run lays out what the file says: same fingerprint, same files. */
nf_status nf_convert_scaleout_check_layout(const nf_scaleout *s, const nf_writer *w, nf_error *err);

/* ---------------------------------------------------------------- scaleout_receipt.c */
/* A receipt's figures of one object; budget: a budget chose it, so its weighted error is a
 * finite number >= 0 (else it is 0 or absent: the figure is the budget's only). */
bool nf_convert_scaleout_stats_of(const json_t *j, bool budget, nf_errstats_summary *m);
/* XXH3-128 of bytes [from, end) of a file, streamed. */
nf_status nf_convert_scaleout_file_digest(const char *path, uint64_t from, char out[33], nf_error *err);
/* Receipt of file i, checked against the plan and the file's size (NULL root when there is
 * none: *why says what is wrong). */
nf_status nf_convert_scaleout_read_receipt(const nf_scaleout *s, const nf_writer *w, size_t i, bool published,
                                           json_t **out, char *why, size_t whylen, nf_error *err);
/* Task `task`'s receipt of file i, written last (nf_convert_scaleout_put_json): the file's size,
 * digest and objects' checksums and statistics, bound to the plan and its inputs. */
nf_status nf_convert_scaleout_write_receipt(const nf_plan *p, const nf_scaleout *s, const nf_writer *w, size_t task,
                                            size_t i, const char *staged, const nf_errstats_summary *sums,
                                            char (*checksums)[33], nf_error *err);

#endif
