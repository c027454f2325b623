/* The dialect module's shared structures: a checkpoint's quantization declaration as
 * declare.c reads it (config.json quantization_config, hf_quant_config.json) and the scan that
 * scan.c builds from it and the tensor names, read by qweight_values.c.  Private to lib/src/dialect:
 * includes run from scan.c (the scan) to declare.c (the declarations). */
#ifndef NINFER_DIALECT_INTERNAL_H
#define NINFER_DIALECT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ninfer/dialect.h>
#include <ninfer/recipe.h>

#include "common/strset.h"

/* Caps on what a declaration may hold (far above real ones: a few groups, hundreds of ignore
 * entries): they bound the cost of matching every module against the lists. */
#define DIALECT_MAX_GROUPS 64u
#define DIALECT_MAX_TARGETS 4096u
#define DIALECT_MAX_IGNORE 65536u
#define DIALECT_MAX_IGNORE_PATTERNS 4096u /* globs and regular expressions among them */
#define DIALECT_MAX_BLOCK (1u << 20)

typedef enum decl_kind {
    DECL_NONE,
    DECL_DEEPSEEK, /* quant_method fp8 (DeepSeek-V3, Hugging Face's fine-grained FP8) */
    DECL_CT,       /* quant_method compressed-tensors */
    DECL_MODELOPT  /* quant_method modelopt, or hf_quant_config.json */
} decl_kind;

/* A list of module selectors (exact names in a set, patterns compiled). */
typedef struct decl_list {
    nf_strset exact;
    char **names; /* the exact names (owned) */
    size_t nnames;
    nf_recipe_selector **patterns;
    size_t npatterns;
    bool any_class; /* a class name ("Linear"): every quantized module */
} decl_list;

/* One compressed-tensors config group's weights scheme. */
typedef struct ct_scheme {
    char name[64];
    decl_list targets;
    bool is_float;
    unsigned num_bits;
    char strategy[16];   /* tensor, channel, group, block, tensor_group ("" when absent) */
    uint64_t group_size; /* 0 when absent */
    uint64_t block[2];   /* block strategy */
    int symmetric;       /* -1 absent, 0, 1 */
} ct_scheme;

typedef struct decl {
    decl_kind kind;
    char what[160]; /* for nf_dialects_declared and messages */
    char *path;     /* the file that declares it */
    /* DECL_DEEPSEEK */
    bool has_block;
    uint64_t block[2];
    bool e5m2;    /* fmt: e5m2 */
    bool has_fmt; /* fmt given (else e4m3) */
    /* DECL_CT */
    ct_scheme *schemes;
    size_t nschemes;
    /* DECL_MODELOPT */
    char algo[48];
    /* modules left unquantized: ignore / exclude_modules / modules_to_not_convert */
    decl_list ignore;
} decl;

/* Read the declarations of a safetensors source (config.json, hf_quant_config.json); d is
 * zeroed first.  NF_ERR_INVALID names the file and key. */
nf_status nf_dialect_read_decl(const nf_source *src, decl *d, nf_error *err);
void nf_dialect_free_decl(decl *d);
/* A quantized checkpoint of a producer no dialect reads (docs/dialects.md, "Quantized checkpoints
 * not read yet"): NF_ERR_INVALID "WHERE: FORMAT (HOW): not read yet, ...; convert from the BF16
 * release of the model".  where: the file (and key, or tensor); how: the producer, its
 * parameters and what declared or showed it. */
nf_status nf_dialect_not_read(nf_error *err, const char *where, const char *format, const char *how);
/* Is module (a weight's name without ".weight") in list l?  level: 3 exact, 2 pattern, 1 class. */
int nf_dialect_list_match(const decl_list *l, const char *module);

struct nf_dialects {
    const nf_source *src;
    decl decl;
    nf_qweight *weights;
    size_t nweights;
    uint8_t *role;   /* per source tensor: nf_qrole */
    uint32_t *owner; /* per source tensor: index into weights, UINT32_MAX for none */
    char declared[200];
};

#endif
