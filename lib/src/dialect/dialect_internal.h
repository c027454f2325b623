/* The dialect module's shared structures: a checkpoint's quantization declaration as
 * declare.c reads it (config.json quantization_config, hf_quant_config.json) and the scan that
 * scan.c builds from it and the tensor names, read by qweight_values.c.  Private to lib/src/dialect:
 * includes run from scan.c (the scan) to declare.c (the declarations). */
#ifndef NINFER_DIALECT_INTERNAL_H
#define NINFER_DIALECT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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
    DECL_MODELOPT, /* quant_method modelopt, or hf_quant_config.json */
    DECL_GPTQ,     /* quant_method gptq, or AutoGPTQ's quantize_config.json */
    DECL_AWQ,      /* quant_method awq, or AutoAWQ's quant_config.json */
    DECL_MLX,      /* mlx-lm: quantization / quantization_config without quant_method */
    DECL_MXFP4,    /* quant_method mxfp4 (gpt-oss, transformers' Mxfp4Config) */
    DECL_FBGEMM,   /* quant_method fbgemm_fp8 (Meta's FP8 releases: Llama 3.1 405B FP8, Llama 4) */
    DECL_BNB       /* quant_method bitsandbytes (transformers' BitsAndBytesConfig, 4-bit or 8-bit) */
} decl_kind;

/* mlx-lm's mixed quantization: a module's own bits and group size, or none (left unquantized). */
typedef struct mlx_override {
    char *module;
    unsigned bits;
    uint64_t group;
    bool quantized;
} mlx_override;

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
    /* DECL_GPTQ, DECL_AWQ: what was declared (has_*: given at all) */
    bool has_bits, has_group, desc_act, gptq_v2, has_sym, sym;
    unsigned bits;
    int64_t group;        /* -1: one group per row */
    char awq_version[16]; /* "gemm" or "gemv" ("" when not declared) */
    /* DECL_MLX: bits and group above are the defaults; overrides sorted by module */
    mlx_override *mlx;
    size_t nmlx;
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
/* The scale word w of a dtype (F32, BF16, F16, F8_E4M3) as binary32 into *out; NULL when it is
 * finite and > 0, else why not ("NaN", "infinite", "zero", "-0", "negative"). */
const char *nf_dialect_scale_value(nf_st_dtype dtype, uint32_t w, float *out);

/* Entry i of a g_idx read as little-endian I32 (es 4) or I64 (es 8) words. */
static inline int64_t nf_dialect_g_idx_entry(const uint8_t *buf, uint64_t i, unsigned es)
{
    const uint8_t *p = buf + i * es;
    uint64_t u = 0;
    for (unsigned b = 0; b < es; b++) u |= (uint64_t)p[b] << (8 * b);
    return es == 4 ? (int64_t)(int32_t)(uint32_t)u : (int64_t)u;
}

/* The MLX bits and group size declared for a module (an override, else the defaults); false
 * when an override leaves it unquantized. */
bool nf_dialect_mlx_module(const decl *d, const char *module, size_t len, unsigned *bits, uint64_t *group);

/* GPTQ and AWQ modules (scan_packed.c): every <p>.qweight I32 with <p>.scales, checked against
 * the declaration, appended to d->weights (room for one per tensor) with the roles of its
 * tensors.  NF_ERR_INVALID names the tensor. */
nf_status nf_dialect_scan_packed(nf_dialects *d, nf_error *err);

/* gpt-oss's MXFP4 experts (scan_packed.c): every <p>_blocks U8 [..., R, B, 16] with <p>_scales
 * U8 [..., R, B] (Hugging Face), or <p>.blocks with <p>.scales (OpenAI's original/), one weight
 * [prod(...) * R, 32 * B] appended to d->weights with its roles.  NF_ERR_INVALID names the
 * tensor. */
nf_status nf_dialect_scan_mxfp4(nf_dialects *d, nf_error *err);

/* "FILE: tensor 'NAME': MESSAGE" (NF_ERR_INVALID), FILE the shard holding t. */
nf_status nf_dialect_fail(nf_error *err, const nf_source *src, const nf_source_tensor *t, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A weight's layout says `kind` (or `other`; -1 for none): refused naming t when a declaration
 * says another dialect ("<what>, but <file> declares <...>: conflicting dialect markers"). */
nf_status nf_dialect_check_marker(const nf_dialects *d, int kind, int other, const nf_source_tensor *t,
                                  const char *what, nf_error *err);

/* Room in d->weights for count more weights; then each appended by nf_dialect_add, which sets
 * the roles of its tensors (nf_dialect_set_roles). */
nf_status nf_dialect_grow(nf_dialects *d, size_t count, nf_error *err);
void nf_dialect_add(nf_dialects *d, const nf_qweight *q);
/* The roles of a weight's tensors: its codes the weight, every companion (nf_qweight_companions)
 * part of weight wi. */
void nf_dialect_set_roles(nf_dialects *d, const nf_qweight *q, uint32_t wi);

/* bitsandbytes (scan_bnb.c): every <p>.weight U8 with <p>.weight.quant_state.bitsandbytes__nf4
 * (or __fp4) and its absmax and quant_map, and every <p>.weight I8 with <p>.SCB, checked against
 * the JSON state and appended to d->weights with its roles. */
nf_status nf_dialect_scan_bnb(nf_dialects *d, nf_error *err);
/* bitsandbytes' values (qweight_bnb.c): flattened elements [a, b) of the weight into out. */
nf_status nf_dialect_bnb_read(const nf_source *src, const nf_qweight *q, uint64_t a, uint64_t b, float *out,
                              nf_error *err);

/* fbgemm's stacked FP8 experts (scan_packed.c): every <x> F8_E4M3 [E, H, C] with <x>_scale F32
 * [E, 1, C] (Llama 4's feed_forward.experts.gate_up_proj, down_proj) is one weight [E * H, C],
 * a scale per expert and column (blocks of H x 1). */
nf_status nf_dialect_scan_fbgemm_experts(nf_dialects *d, nf_error *err);

/* GPTQ's and AWQ's values (qweight_packed.c), for nf_qweight_read_f32 and _span once their
 * arguments are checked: rows [r0, r1) into out, or columns [c0, c0 + n) of one row. */
nf_status nf_dialect_packed_read(const nf_source *src, const nf_qweight *q, uint64_t r0, uint64_t r1, float *out,
                                 nf_error *err);
/* Is some value not finite?  One branch-free pass (values are almost always finite) before a
 * reader looks for the one it names (qweight_values.c, qweight_packed.c). */
static inline bool nf_dialect_any_nonfinite(const float *v, uint64_t n)
{
    unsigned any = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint32_t w;
        memcpy(&w, &v[i], sizeof w);
        any |= (w & 0x7F800000u) == 0x7F800000u;
    }
    return any != 0;
}

/* Test hook: the window in which GPTQ's and AWQ's runs of words closer than 8 KiB are read together
 * (qweight_packed.c; 1 MiB). */
extern size_t nf_dialect_runs_window;
nf_status nf_dialect_packed_span(const nf_source *src, const nf_qweight *q, uint64_t row, uint64_t c0, uint64_t n,
                                 float *out, nf_error *err);

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
