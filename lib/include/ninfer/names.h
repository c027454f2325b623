/* ninfer/names.h - the tensor names of llama.cpp's GGUF files and of Hugging Face checkpoints,
 * one to the other, for the architectures of docs/names.md (llama, mistral, qwen2, qwen3,
 * qwen3-moe, gemma, gemma2, gemma3, deepseek v2/v3, gpt-oss).
 *
 * The table is ours, written from what llama.cpp's converter (convert_hf_to_gguf.py with
 * gguf-py's tensor_mapping.py and constants.py, commit 8784689f) writes for each Hugging Face
 * name; docs/names.md lists it.  A name the table does not hold is unmapped (the calls return
 * 0): it is never guessed from a similar one.  Some names the converter changes in more than its
 * name (it splits, fuses or transposes them); those are unmapped too, and nf_hf_name_to_gguf
 * says why in `how->reason`.
 *
 * Mixture-of-experts weights: a Hugging Face checkpoint holds one matrix per expert
 * (model.layers.N.mlp.experts.E.gate_proj.weight, [I, H]); llama.cpp stacks them into one 3-D
 * tensor blk.N.ffn_gate_exps.weight of shape [E_count, I, H] (GGUF ne {H, I, E_count}), expert E
 * being slice E of the outer dimension: rows E*I .. E*I+I-1 of the stack seen as a matrix of
 * E_count*I rows.  An imatrix entry of a stacked tensor holds E_count vectors of H values, expert
 * E's at E*H (docs/names.md, "Experts").
 *
 * The llama family's q/k rows: for llama and mistral the converter reorders the rows of q_proj
 * and k_proj (the rotary halves of each head interleaved, llama.cpp's rope layout); the GGUF
 * tensor's row r is the Hugging Face tensor's row nf_qk_hf_row(rows, heads, r), with `heads` the
 * attention heads for q_proj and the key/value heads for k_proj. */
#ifndef NINFER_NAMES_H
#define NINFER_NAMES_H

#include <ninfer/export.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nf_arch {
    NF_ARCH_LLAMA,
    NF_ARCH_MISTRAL,
    NF_ARCH_QWEN2,
    NF_ARCH_QWEN3,
    NF_ARCH_QWEN3_MOE,
    NF_ARCH_GEMMA,
    NF_ARCH_GEMMA2,
    NF_ARCH_GEMMA3,
    NF_ARCH_DEEPSEEK2, /* DeepSeek V2 and V3 (llama.cpp's deepseek2) */
    NF_ARCH_GPT_OSS,
    NF_ARCH_COUNT
} nf_arch;

/* Our name of an architecture ("llama", "qwen3_moe", "deepseek2", "gpt_oss", ...); NULL when out
 * of range. */
NF_API const char *nf_arch_name(nf_arch arch);
/* llama.cpp's general.architecture for it ("llama" for mistral too, "qwen3moe", "gpt-oss"). */
NF_API const char *nf_arch_gguf_name(nf_arch arch);
/* An architecture by our name, a config.json model_type ("qwen3_moe", "deepseek_v3",
 * "gemma3_text", "gpt_oss") or a GGUF general.architecture; false when none. */
NF_API bool nf_arch_lookup(const char *name, nf_arch *out);
/* Does the converter reorder this architecture's q_proj / k_proj rows (nf_qk_hf_row)? */
NF_API bool nf_arch_permutes_qk(nf_arch arch);

/* How a name maps (filled by both calls; any field may be ignored). */
typedef struct nf_name_map {
    int layer;          /* the N of model.layers.N / blk.N, or -1 */
    int expert;         /* the E of an expert's matrix within its stacked tensor, or -1 */
    bool stacked;       /* the GGUF tensor stacks every expert's matrix (ffn_*_exps) */
    bool qk_permuted;   /* the GGUF rows are the Hugging Face rows reordered (nf_qk_hf_row) */
    const char *change; /* NULL, or what the converter does to the values besides renaming
                           ("adds 1": Gemma's norms) */
    const char *reason; /* unmapped: why, when the table knows the name (else NULL) */
} nf_name_map;

/* The GGUF name of Hugging Face tensor `hf` under `arch`, into out (size bytes); its length, or
 * 0 when the name is unmapped or does not fit (out is then ""). */
NF_API size_t nf_hf_name_to_gguf(nf_arch arch, const char *hf, char *out, size_t size, nf_name_map *how);
/* The Hugging Face name of GGUF tensor `gguf` under `arch`; for a stacked experts tensor,
 * expert `expert`'s matrix (expert is ignored for other tensors; a stacked tensor with expert
 * < 0 is unmapped).  Its length, or 0. */
NF_API size_t nf_gguf_name_to_hf(nf_arch arch, const char *gguf, int expert, char *out, size_t size, nf_name_map *how);

/* The Hugging Face row of GGUF row `gguf_row` of a q_proj / k_proj of `rows` rows and `heads`
 * heads, for an architecture that permutes them; false when rows is not a multiple of 2 * heads
 * or gguf_row >= rows. */
NF_API bool nf_qk_hf_row(uint64_t rows, uint64_t heads, uint64_t gguf_row, uint64_t *hf_row);
/* Its inverse: the GGUF row holding Hugging Face row `hf_row` (nf_qk_hf_row(rows, heads, result)
 * is hf_row); false under the same conditions. */
NF_API bool nf_qk_gguf_row(uint64_t rows, uint64_t heads, uint64_t hf_row, uint64_t *gguf_row);

#ifdef __cplusplus
}
#endif
#endif
