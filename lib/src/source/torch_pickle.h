/* The pickle interpreter of PyTorch checkpoints (torch_pickle.c; docs/security.md 2.6): it runs
 * only the opcodes torch.save emits and knows only the globals a weights-only load allows, so
 * nothing a file says is ever imported or called.  Its result is the tensors of the pickled
 * state dict: for each, its name and what _rebuild_tensor_v2 was given (the storage's key, class
 * and element count, the offset, sizes and strides). */
#ifndef NINFER_SOURCE_TORCH_PICKLE_H
#define NINFER_SOURCE_TORCH_PICKLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ninfer/error.h>
#include <ninfer/source.h>

/* Caps (docs/security.md 2.6): a pickle bomb is refused within them, naming the byte. */
#define NF_TORCH_PICKLE_MAX_BYTES ((uint64_t)256 << 20)       /* data.pkl */
#define NF_TORCH_PICKLE_MAX_VALUES (1u << 22)                 /* objects built */
#define NF_TORCH_PICKLE_MAX_MEMO (1u << 22)                   /* memo slots */
#define NF_TORCH_PICKLE_MAX_DEPTH 64u                         /* nesting of containers */
#define NF_TORCH_PICKLE_MAX_ITEMS (1u << 24)                  /* items of all containers together */
#define NF_TORCH_PICKLE_MAX_KEY_BYTES 256u                    /* a storage key (torch writes "0", "1", ...) */
#define NF_TORCH_PICKLE_MAX_NAME_BYTES ((uint64_t)64 << 20)   /* tensor names and keys copied out */
#define NF_TORCH_PICKLE_MAX_STRING_BYTES ((uint64_t)64 << 20) /* the pickle's strings, all together */

typedef struct nf_torch_tensor {
    char *name;        /* dotted path of the dict keys */
    char *storage_key; /* the persistent id's key: the archive member data/<key> */
    nf_st_dtype dtype; /* from the storage class (FloatStorage: F32, ...) */
    uint64_t storage_numel;
    uint64_t offset; /* storage offset, in elements */
    uint32_t rank;
    uint64_t size[NF_SOURCE_MAX_RANK], stride[NF_SOURCE_MAX_RANK];
} nf_torch_tensor;

typedef struct nf_torch_tensors {
    nf_torch_tensor *t;
    size_t n;
} nf_torch_tensors;

/* Runs the pickle p[0..n) (`where` names it in messages: "model.bin: archive/data.pkl") and
 * collects the tensors of the state dict it builds (a dict of tensors, dicts nested in it giving
 * dotted names).  NF_ERR_INVALID for anything else, naming the opcode or global and its byte.
 * In the zip format the pickle is all of p[0..n); in the legacy stream (legacy: persistent ids
 * of six fields) it is the first pickle of p[0..n), and *used gets its length. */
nf_status nf_source_torch_pickle(const uint8_t *p, size_t n, const char *where, bool legacy, size_t *used,
                                 nf_torch_tensors *out, nf_error *err);

/* The legacy stream's other pickles, each the first of p[0..n) (*used its length): sys_info, a
 * dict which must say little_endian: True; the storage keys, a list of strings, in the order of
 * the storages that follow (*keys, *nkeys: free each and the array). */
nf_status nf_source_torch_sys_info(const uint8_t *p, size_t n, const char *where, size_t *used, nf_error *err);
nf_status nf_source_torch_keys(const uint8_t *p, size_t n, const char *where, size_t *used, char ***keys, size_t *nkeys,
                               nf_error *err);
void nf_source_torch_tensors_free(nf_torch_tensors *ts);

#endif
