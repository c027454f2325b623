/* ninfer/preset.h - llama-quantize's presets (Q4_K_M, IQ2_M, ...): the ggml type llama-quantize
 * gives each tensor of a model, by its rules (llama.cpp src/llama-quant.cpp,
 * llama_tensor_get_type and the default type of each file type, commit 8784689f), written again
 * here; docs/presets.md lists them.
 *
 * The rules read GGUF tensor names (ninfer/names.h maps a checkpoint's names), the number of
 * layers, attention heads, key/value heads and experts, whether an importance matrix is given,
 * and each tensor's row length.  Some advance counters in llama-quantize's order of the tensors
 * (by layer, then by name); nf_preset_choose visits them in that order whatever the order given. */
#ifndef NINFER_PRESET_H
#define NINFER_PRESET_H

#include <ninfer/export.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ninfer/error.h>
#include <ninfer/names.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nf_preset {
    NF_PRESET_Q2_K,
    NF_PRESET_Q3_K_S,
    NF_PRESET_Q3_K_M,
    NF_PRESET_Q3_K_L,
    NF_PRESET_Q4_K_S,
    NF_PRESET_Q4_K_M,
    NF_PRESET_Q5_K_S,
    NF_PRESET_Q5_K_M,
    NF_PRESET_Q6_K,
    NF_PRESET_Q8_0,
    NF_PRESET_Q4_0,
    NF_PRESET_Q5_0,
    NF_PRESET_IQ4_XS,
    NF_PRESET_IQ4_NL,
    NF_PRESET_IQ3_M,
    NF_PRESET_IQ3_S,
    NF_PRESET_IQ3_XS,
    NF_PRESET_IQ3_XXS,
    NF_PRESET_IQ2_M,
    NF_PRESET_IQ2_S,
    NF_PRESET_IQ2_XS,
    NF_PRESET_IQ2_XXS,
    NF_PRESET_IQ1_S,
    NF_PRESET_IQ1_M,
    NF_PRESET_COUNT
} nf_preset;

/* "Q4_K_M" ...; NULL when out of range. */
NF_API const char *nf_preset_name(nf_preset p);
/* A preset by its name (as llama-quantize spells it; case-insensitive). */
NF_API bool nf_preset_lookup(const char *name, nf_preset *out);

/* What the rules read of the model (config.json, or a GGUF's hyperparameters). */
typedef struct nf_preset_model {
    nf_arch arch;
    uint32_t layers;   /* num_hidden_layers (GGUF: ARCH.block_count) */
    uint32_t heads;    /* num_attention_heads */
    uint32_t kv_heads; /* num_key_value_heads (0: heads) */
    uint32_t experts;  /* routed experts (num_experts, n_routed_experts, num_local_experts); 0 dense */
    bool imatrix;      /* an importance matrix is given (llama-quantize --imatrix) */
} nf_preset_model;

/* One GGUF tensor in, its choice out. */
typedef struct nf_preset_tensor {
    const char *name;   /* in: the GGUF name (blk.3.ffn_down_exps.weight) */
    uint32_t dims;      /* in: dimensions, not counting outer ones of 1 (ggml_n_dims); 3 for a stack */
    uint64_t row;       /* in: values per row (GGUF ne[0]) */
    bool quantized;     /* out: false: llama-quantize keeps it as the converter wrote it */
    const char *type;   /* out: the ggml type when quantized ("q4_K" spelled as ggml spells it,
                           lowercased: "q4_k", "iq2_xxs", "q8_0", "f16") */
    bool needs_imatrix; /* out: llama-quantize refuses this type here without an importance vector */
    char why[200];      /* out: the rule that chose it ("ffn_down, layer 0 of 32: use_more_bits") */
} nf_preset_tensor;

/* Choose every tensor's type for preset p.  NF_ERR_INVALID when llama-quantize would refuse the
 * model (a layer number out of range in a mixture of experts; a row length no type of the
 * preset's fallbacks divides, where llama-quantize stops with "Unsupported tensor size"), the
 * message naming the tensor. */
NF_API nf_status nf_preset_choose(nf_preset p, const nf_preset_model *model, nf_preset_tensor *tensors, size_t n,
                                  nf_error *err);

#ifdef __cplusplus
}
#endif
#endif
