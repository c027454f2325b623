/* llama-imatrix entries of a stacked experts tensor (docs/names.md, "Experts"): T.in_sum2 holds
 * one vector per expert (GGUF ne {cols, experts}), T.counts one count per expert; a Hugging Face
 * expert's matrix model.layers.N.mlp.experts.E.*_proj.weight finds slice E of
 * blk.N.ffn_*_exps.weight, each slice divided by its own count.  Answers written out by hand. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "support/source_writer.h"

/* blk.3.ffn_up_exps.weight: 3 experts of 4 columns, counts 2, 4, 0; blk.3.attn_q.weight and
 * blk.3.ffn_up_shexp.weight dense. */
static nf_status open_stack(nf_imatrix **m, nf_error *err, uint64_t count_values)
{
    static const float sums[12] = {2, 4, 6, 8, 4, 8, 12, 16, 5, 6, 7, 8};
    static const float counts[3] = {2, 4, 0};
    static const float q[4] = {1, 2, 3, 4}, one = 1.0f;
    sw_gguf_tensor t[] = {
        {"blk.3.ffn_up_exps.weight.in_sum2", 0, 2, {4, 3, 1, 1}, sums, sizeof sums},
        {"blk.3.ffn_up_exps.weight.counts", 0, 2, {1, count_values, 1, 1}, counts, count_values * 4},
        {"blk.3.attn_q.weight.in_sum2", 0, 1, {4, 1, 1, 1}, q, sizeof q},
        {"blk.3.attn_q.weight.counts", 0, 1, {1, 1, 1, 1}, &one, 4},
        {"blk.3.ffn_up_shexp.weight.in_sum2", 0, 1, {4, 1, 1, 1}, q, sizeof q},
        {"blk.3.ffn_up_shexp.weight.counts", 0, 1, {1, 1, 1, 1}, &one, 4},
    };
    sw_buf b = {0};
    sw_gguf_file(&b, 0, t, 6);
    nf_status st = nf_imatrix_open_memory(b.data, b.len, "moe.imatrix.gguf", m, err);
    sw_free(&b);
    return st;
}

Test(imatrix_experts, each_expert_gets_its_slice)
{
    nf_imatrix *m;
    nf_error err;
    cr_assert_eq(open_stack(&m, &err, 3), NF_OK, "%s", err.message);
    const float *imp;
    const char *matched;
    /* expert 2's count is 0: it saw no input, so every column weighs 1 (llama.cpp's quantize) */
    static const float want[3][4] = {{1, 2, 3, 4}, {1, 2, 3, 4}, {1, 1, 1, 1}};
    for (int e = 0; e < 3; e++) {
        char name[96];
        snprintf(name, sizeof name, "model.layers.3.mlp.experts.%d.up_proj.weight", e);
        cr_assert_eq(nf_imatrix_lookup(m, name, 4, &imp, &matched, &err), NF_OK, "%s", err.message);
        cr_assert_not_null(imp, "expert %d", e);
        cr_assert_str_eq(matched, "blk.3.ffn_up_exps.weight");
        for (int k = 0; k < 4; k++) cr_assert_eq(imp[k], want[e][k], "expert %d col %d: %g", e, k, (double)imp[k]);
    }
    /* an expert beyond the stack, or rows of another length: invalid, naming the file */
    cr_assert_eq(nf_imatrix_lookup(m, "model.layers.3.mlp.experts.3.up_proj.weight", 4, &imp, NULL, &err),
                 NF_ERR_INVALID);
    cr_assert(strstr(err.message, "moe.imatrix.gguf") && strstr(err.message, "3 experts"), "%s", err.message);
    cr_assert_eq(nf_imatrix_lookup(m, "model.layers.3.mlp.experts.0.up_proj.weight", 8, &imp, NULL, &err),
                 NF_ERR_INVALID);
    /* the stacked name itself with one expert's columns: the entry holds 12 values, not 4 */
    cr_assert_eq(nf_imatrix_lookup(m, "blk.3.ffn_up_exps.weight", 4, &imp, NULL, &err), NF_ERR_INVALID);
    /* other experts' names find nothing (no guess) */
    cr_assert_eq(nf_imatrix_lookup(m, "model.layers.3.mlp.experts.0.gate_proj.weight", 4, &imp, NULL, &err), NF_OK);
    cr_assert_null(imp);
    /* a shared expert (DeepSeek) finds its entry through the names table */
    cr_assert_eq(nf_imatrix_lookup(m, "model.layers.3.mlp.shared_experts.up_proj.weight", 4, &imp, &matched, &err),
                 NF_OK);
    cr_assert(imp && imp[0] == 1.0f && imp[3] == 4.0f);
    cr_assert_str_eq(matched, "blk.3.ffn_up_shexp.weight");
    cr_assert_eq(nf_imatrix_lookup(m, "model.layers.3.mlp.shared_experts.up_proj.weight", 5, &imp, NULL, &err),
                 NF_ERR_INVALID);
    /* a dense entry is unchanged */
    cr_assert_eq(nf_imatrix_lookup(m, "model.layers.3.self_attn.q_proj.weight", 4, &imp, NULL, &err), NF_OK);
    cr_assert(imp && imp[3] == 4.0f);
    nf_imatrix_close(m);
}

Test(imatrix_experts, counts_must_match_the_experts)
{
    nf_imatrix *m;
    nf_error err;
    cr_assert_eq(open_stack(&m, &err, 2), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "blk.3.ffn_up_exps.weight.counts"), "%s", err.message);
}
