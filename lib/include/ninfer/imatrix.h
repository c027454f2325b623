/* ninfer/imatrix.h - the importance matrix written by llama.cpp's llama-imatrix (GGUF output),
 * read for grouped_search.
 *
 * For each weight tensor T the file holds T.in_sum2 (F32, one value per input column: the sum
 * of squared activations) and T.counts (F32, one value: how many activations were summed).  The
 * importance of column k is in_sum2[k] / max(counts, 1), computed in binary32; a count of 0 (a
 * tensor that saw no input) makes every column weigh 1, as llama.cpp's quantize does.  Every
 * entry must be finite and non-negative; counts must hold exactly one value.  A stacked experts
 * tensor's entry (blk.N.ffn_up_exps.weight) holds one vector per expert: T.in_sum2 is a matrix of
 * one row per expert, T.counts one value per expert ([1, E] as llama-imatrix writes it), and each
 * row is divided by its own count.  Other tensors (a newer llama-imatrix's T.in_sum) are ignored
 * (nf_imatrix_ignored_at names them); a T.counts without its T.in_sum2 is refused.
 *
 * The legacy format (before GGUF; ik_llama.cpp still writes it) is read too, recognised by not
 * starting with "GGUF": int32 n_entries >= 1, then per entry int32 name length, the name, int32
 * ncall, int32 nval >= 1 and nval binary32 values, then optionally int32 last_call, int32 length
 * and the dataset's name (all little-endian).  Importance = value / ncall when ncall > 0, as
 * llama.cpp's quantize reads it.  A stacked tensor's entry is its experts' vectors in a row.
 *
 * Name mapping (how a source tensor finds its vector), tried in order:
 *   1. the exact name: the imatrix entry T equals the source tensor's name;
 *   2. the GGUF name of the same weight: a Hugging Face name is rewritten with llama.cpp's
 *      tensor naming (model.layers.N.self_attn.q_proj.weight -> blk.N.attn_q.weight,
 *      mlp.down_proj -> ffn_down, lm_head -> output, ...; see nf_imatrix_gguf_name);
 *   3. the GGUF names of ninfer/names.h's table (shared experts, DeepSeek's attention, ...: the
 *      first architecture whose name the file has); an expert's matrix
 *      (model.layers.N.mlp.experts.E.up_proj.weight) takes slice E of the stacked tensor's entry
 *      (blk.N.ffn_up_exps.weight; docs/names.md "Experts").
 * A tensor with no entry gets no importance (every column weighs 1).  An entry whose length
 * differs from the tensor's column count is an error. */
#ifndef NINFER_IMATRIX_H
#define NINFER_IMATRIX_H

#include <ninfer/export.h>

#include <stddef.h>
#include <stdint.h>

#include <ninfer/error.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nf_imatrix nf_imatrix;

/* Open a llama-imatrix GGUF file.  A name ending in ".zst" is decompressed first, to at most 64
 * times the compressed file's size (rounded up to a power of two), but never less than 16 MiB
 * nor more than 1 GiB: a file that would decompress to more is refused without being inflated. */
NF_API nf_status nf_imatrix_open(const char *path, nf_imatrix **out, nf_error *err);
/* The same from a file image in memory (copied); `name` is used in messages. */
NF_API nf_status nf_imatrix_open_memory(const void *data, size_t len, const char *name, nf_imatrix **out,
                                        nf_error *err);
NF_API void nf_imatrix_close(nf_imatrix *m);

NF_API size_t nf_imatrix_count(const nf_imatrix *m);
/* Entry i: its tensor name T (without ".in_sum2"), length and importance vector. */
NF_API const char *nf_imatrix_name_at(const nf_imatrix *m, size_t i, uint64_t *length, const float **importance);

/* Importance for a source tensor with `cols` input columns: *importance is NULL when the file
 * has no entry for it (by the mapping above); NF_ERR_INVALID when the entry's length is not
 * `cols` (an expert's: when the stack's rows are not `cols` long or it has no expert E; the
 * message names the file).  *matched (may be NULL) receives the entry name that matched. */
NF_API nf_status nf_imatrix_lookup(const nf_imatrix *m, const char *tensor, uint64_t cols, const float **importance,
                                   const char **matched, nf_error *err);

/* A tensor stacking `mats` matrices of `cols` input columns each (an experts tensor [E, R, K]:
 * mats E, cols K; its rows [e*R, (e+1)*R) are matrix e), found by the exact name or, for a Hugging
 * Face stack (model.layers.N.mlp.experts.down_proj[.weight], gate_proj, up_proj, gate_up_proj),
 * llama.cpp's (blk.N.ffn_down_exps.weight; gate_up_proj reads ffn_gate_exps').  *importance
 * gets the entry's mats * cols values (matrix e's vector at e * cols) and *length that count, or
 * cols when the entry holds one vector for all; NULL and 0 when there is no entry.  Another length
 * is NF_ERR_INVALID.  mats <= 1 is nf_imatrix_lookup. */
NF_API nf_status nf_imatrix_lookup_stack(const nf_imatrix *m, const char *tensor, uint64_t mats, uint64_t cols,
                                         const float **importance, uint64_t *length, const char **matched,
                                         nf_error *err);

/* The tensors of a GGUF imatrix that are neither T.in_sum2 nor T.counts (a newer llama-imatrix's
 * T.in_sum, ...), which the reader ignores as llama.cpp's quantize does: their count, and name i. */
NF_API size_t nf_imatrix_ignored_count(const nf_imatrix *m);
NF_API const char *nf_imatrix_ignored_at(const nf_imatrix *m, size_t i);

/* llama.cpp's GGUF name of a Hugging Face tensor name, written into out; 0 when the name has
 * no GGUF counterpart known here. */
NF_API size_t nf_imatrix_gguf_name(const char *hf_name, char *out, size_t size);

#ifdef __cplusplus
}
#endif
#endif
