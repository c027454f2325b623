/* The GGUF <-> Hugging Face name table (ninfer/names.h, docs/names.md): each architecture's
 * names both ways, experts' slices of a stacked tensor, unmapped names (with and without a
 * reason), and the q/k row permutation, whose answers are written out by hand here. */
#include <criterion/criterion.h>
#include <string.h>

#include <ninfer/ninfer.h>

static void both_ways(nf_arch arch, const char *hf, const char *gguf, int expert)
{
    char out[256];
    nf_name_map how;
    cr_assert_eq(nf_hf_name_to_gguf(arch, hf, out, sizeof out, &how), strlen(gguf), "%s: %s", nf_arch_name(arch), hf);
    cr_assert_str_eq(out, gguf);
    cr_assert_eq(how.expert, expert);
    cr_assert_eq(how.stacked, expert >= 0);
    cr_assert_eq(nf_gguf_name_to_hf(arch, gguf, expert, out, sizeof out, &how), strlen(hf), "%s: %s",
                 nf_arch_name(arch), gguf);
    cr_assert_str_eq(out, hf);
}

static void unmapped(nf_arch arch, const char *hf, bool with_reason)
{
    char out[256] = "x";
    nf_name_map how;
    cr_assert_eq(nf_hf_name_to_gguf(arch, hf, out, sizeof out, &how), 0, "%s: %s", nf_arch_name(arch), hf);
    cr_assert_str_eq(out, "");
    cr_assert_eq(how.reason != NULL, with_reason, "%s", hf);
}

Test(names, llama_family)
{
    for (nf_arch a = NF_ARCH_LLAMA; a < NF_ARCH_COUNT; a++) {
        both_ways(a, "model.embed_tokens.weight", "token_embd.weight", -1);
        both_ways(a, "lm_head.weight", "output.weight", -1);
        both_ways(a, "model.norm.weight", "output_norm.weight", -1);
        both_ways(a, "model.layers.0.self_attn.q_proj.weight", "blk.0.attn_q.weight", -1);
        both_ways(a, "model.layers.12.self_attn.k_proj.weight", "blk.12.attn_k.weight", -1);
        both_ways(a, "model.layers.3.self_attn.v_proj.weight", "blk.3.attn_v.weight", -1);
        both_ways(a, "model.layers.3.self_attn.o_proj.weight", "blk.3.attn_output.weight", -1);
        both_ways(a, "model.layers.7.input_layernorm.weight", "blk.7.attn_norm.weight", -1);
    }
    for (nf_arch a = NF_ARCH_LLAMA; a <= NF_ARCH_DEEPSEEK2; a++) {
        both_ways(a, "model.layers.31.mlp.gate_proj.weight", "blk.31.ffn_gate.weight", -1);
        both_ways(a, "model.layers.31.mlp.up_proj.weight", "blk.31.ffn_up.weight", -1);
        both_ways(a, "model.layers.31.mlp.down_proj.weight", "blk.31.ffn_down.weight", -1);
    }
    both_ways(NF_ARCH_LLAMA, "model.layers.1.post_attention_layernorm.weight", "blk.1.ffn_norm.weight", -1);
    both_ways(NF_ARCH_QWEN2, "model.layers.1.self_attn.q_proj.bias", "blk.1.attn_q.bias", -1);
    both_ways(NF_ARCH_QWEN3, "model.layers.1.self_attn.q_norm.weight", "blk.1.attn_q_norm.weight", -1);
    both_ways(NF_ARCH_QWEN3, "model.layers.1.self_attn.k_norm.weight", "blk.1.attn_k_norm.weight", -1);
    unmapped(NF_ARCH_LLAMA, "model.layers.1.self_attn.q_norm.weight", false);
}

Test(names, gemma_norms)
{
    char out[256];
    nf_name_map how;
    both_ways(NF_ARCH_GEMMA, "model.layers.2.post_attention_layernorm.weight", "blk.2.ffn_norm.weight", -1);
    both_ways(NF_ARCH_GEMMA2, "model.layers.2.post_attention_layernorm.weight", "blk.2.post_attention_norm.weight", -1);
    both_ways(NF_ARCH_GEMMA3, "model.layers.2.pre_feedforward_layernorm.weight", "blk.2.ffn_norm.weight", -1);
    both_ways(NF_ARCH_GEMMA3, "model.layers.2.post_feedforward_layernorm.weight", "blk.2.post_ffw_norm.weight", -1);
    both_ways(NF_ARCH_GEMMA3, "model.layers.2.self_attn.q_norm.weight", "blk.2.attn_q_norm.weight", -1);
    unmapped(NF_ARCH_GEMMA, "model.layers.2.pre_feedforward_layernorm.weight", false);
    cr_assert(nf_hf_name_to_gguf(NF_ARCH_GEMMA2, "model.norm.weight", out, sizeof out, &how));
    cr_assert_str_eq(how.change, "adds 1");
    cr_assert(nf_hf_name_to_gguf(NF_ARCH_LLAMA, "model.norm.weight", out, sizeof out, &how));
    cr_assert_null(how.change);
    cr_assert(nf_hf_name_to_gguf(NF_ARCH_GEMMA2, "model.layers.0.self_attn.q_proj.weight", out, sizeof out, &how));
    cr_assert_null(how.change);
}

Test(names, experts_stack)
{
    both_ways(NF_ARCH_QWEN3_MOE, "model.layers.5.mlp.experts.0.gate_proj.weight", "blk.5.ffn_gate_exps.weight", 0);
    both_ways(NF_ARCH_QWEN3_MOE, "model.layers.5.mlp.experts.127.up_proj.weight", "blk.5.ffn_up_exps.weight", 127);
    both_ways(NF_ARCH_DEEPSEEK2, "model.layers.60.mlp.experts.255.down_proj.weight", "blk.60.ffn_down_exps.weight",
              255);
    both_ways(NF_ARCH_QWEN3_MOE, "model.layers.5.mlp.gate.weight", "blk.5.ffn_gate_inp.weight", -1);
    both_ways(NF_ARCH_DEEPSEEK2, "model.layers.3.mlp.shared_experts.gate_proj.weight", "blk.3.ffn_gate_shexp.weight",
              -1);
    both_ways(NF_ARCH_DEEPSEEK2, "model.layers.3.mlp.shared_experts.down_proj.weight", "blk.3.ffn_down_shexp.weight",
              -1);
    both_ways(NF_ARCH_DEEPSEEK2, "model.layers.3.mlp.gate.e_score_correction_bias", "blk.3.exp_probs_b.bias", -1);
    both_ways(NF_ARCH_DEEPSEEK2, "model.layers.0.self_attn.kv_a_proj_with_mqa.weight", "blk.0.attn_kv_a_mqa.weight",
              -1);
    both_ways(NF_ARCH_DEEPSEEK2, "model.layers.0.self_attn.q_b_proj.weight", "blk.0.attn_q_b.weight", -1);
    both_ways(NF_ARCH_GPT_OSS, "model.layers.0.mlp.router.weight", "blk.0.ffn_gate_inp.weight", -1);
    both_ways(NF_ARCH_GPT_OSS, "model.layers.0.mlp.router.bias", "blk.0.ffn_gate_inp.bias", -1);
    both_ways(NF_ARCH_GPT_OSS, "model.layers.0.self_attn.sinks", "blk.0.attn_sinks.weight", -1);
    both_ways(NF_ARCH_GPT_OSS, "model.layers.0.post_attention_layernorm.weight", "blk.0.post_attention_norm.weight",
              -1);
    /* a stacked tensor names no one expert's matrix without the expert */
    char out[256];
    cr_assert_eq(nf_gguf_name_to_hf(NF_ARCH_QWEN3_MOE, "blk.5.ffn_up_exps.weight", -1, out, sizeof out, NULL), 0);
    /* dense architectures have no experts */
    unmapped(NF_ARCH_LLAMA, "model.layers.5.mlp.experts.0.gate_proj.weight", false);
}

Test(names, unmapped_are_never_guessed)
{
    unmapped(NF_ARCH_LLAMA, "model.layers.0.self_attn.q_proj.weight_scale", false);
    unmapped(NF_ARCH_LLAMA, "model.layers.01.self_attn.q_proj.weight", false); /* no leading zeros */
    unmapped(NF_ARCH_LLAMA, "model.layers.x.self_attn.q_proj.weight", false);
    unmapped(NF_ARCH_LLAMA, "vision_tower.blocks.0.attn.qkv.weight", false);
    unmapped(NF_ARCH_LLAMA, "model.layers.0.self_attn.q_proj.weightx", false);
    unmapped(NF_ARCH_DEEPSEEK2, "model.layers.0.self_attn.kv_b_proj.weight", true);
    unmapped(NF_ARCH_GPT_OSS, "model.layers.0.mlp.experts.gate_up_proj", true);
    unmapped(NF_ARCH_GPT_OSS, "model.layers.0.mlp.experts.down_proj_blocks", true);
    char out[256];
    cr_assert_eq(nf_gguf_name_to_hf(NF_ARCH_LLAMA, "blk.0.attn_kv_b.weight", -1, out, sizeof out, NULL), 0);
    cr_assert_eq(nf_hf_name_to_gguf(NF_ARCH_COUNT, "lm_head.weight", out, sizeof out, NULL), 0);
    /* too small an output buffer: 0 and "" */
    cr_assert_eq(nf_hf_name_to_gguf(NF_ARCH_LLAMA, "lm_head.weight", out, 13, NULL), 0);
    cr_assert_str_eq(out, "");
    cr_assert_eq(nf_hf_name_to_gguf(NF_ARCH_LLAMA, "lm_head.weight", out, 14, NULL), 13);
}

Test(names, architectures)
{
    nf_arch a;
    cr_assert(nf_arch_lookup("qwen3_moe", &a) && a == NF_ARCH_QWEN3_MOE);
    cr_assert(nf_arch_lookup("qwen3moe", &a) && a == NF_ARCH_QWEN3_MOE);
    cr_assert(nf_arch_lookup("deepseek_v3", &a) && a == NF_ARCH_DEEPSEEK2);
    cr_assert(nf_arch_lookup("deepseek_v2", &a) && a == NF_ARCH_DEEPSEEK2);
    cr_assert(nf_arch_lookup("gemma3_text", &a) && a == NF_ARCH_GEMMA3);
    cr_assert(nf_arch_lookup("gpt-oss", &a) && a == NF_ARCH_GPT_OSS);
    cr_assert(nf_arch_lookup("llama", &a) && a == NF_ARCH_LLAMA);
    cr_assert(nf_arch_lookup("mistral", &a) && a == NF_ARCH_MISTRAL);
    cr_assert_not(nf_arch_lookup("falcon", &a));
    cr_assert_not(nf_arch_lookup(NULL, &a));
    cr_assert_str_eq(nf_arch_gguf_name(NF_ARCH_MISTRAL), "llama");
    cr_assert_str_eq(nf_arch_gguf_name(NF_ARCH_GPT_OSS), "gpt-oss");
    cr_assert(nf_arch_permutes_qk(NF_ARCH_LLAMA) && nf_arch_permutes_qk(NF_ARCH_MISTRAL));
    cr_assert_not(nf_arch_permutes_qk(NF_ARCH_QWEN2) || nf_arch_permutes_qk(NF_ARCH_GEMMA3));
    cr_assert_null(nf_arch_name(NF_ARCH_COUNT));
}

/* 2 heads of 8 rows: each head's halves [0..3] and [4..7] interleave to 0 4 1 5 2 6 3 7. */
Test(names, qk_rows)
{
    static const uint64_t want[16] = {0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15};
    for (uint64_t r = 0; r < 16; r++) {
        uint64_t hf = 99;
        cr_assert(nf_qk_hf_row(16, 2, r, &hf));
        cr_assert_eq(hf, want[r], "row %llu", (unsigned long long)r);
    }
    uint64_t hf;
    cr_assert_not(nf_qk_hf_row(16, 2, 16, &hf));
    cr_assert_not(nf_qk_hf_row(12, 4, 0, &hf)); /* 3 rows a head: no halves */
    cr_assert_not(nf_qk_hf_row(16, 0, 0, &hf));
    /* the inverse, exhaustively over small shapes: every Hugging Face row has exactly its GGUF row */
    for (uint64_t heads = 1; heads <= 6; heads++)
        for (uint64_t rows = 2 * heads; rows <= 48 * heads; rows += 2 * heads)
            for (uint64_t h = 0; h < rows; h++) {
                uint64_t g = rows, back = rows;
                cr_assert(nf_qk_gguf_row(rows, heads, h, &g));
                cr_assert(g < rows && nf_qk_hf_row(rows, heads, g, &back) && back == h, "rows %llu heads %llu row %llu",
                          (unsigned long long)rows, (unsigned long long)heads, (unsigned long long)h);
            }
    cr_assert(nf_qk_gguf_row(16, 2, 4, &hf) && hf == 1);
    cr_assert_not(nf_qk_gguf_row(16, 2, 16, &hf));
    cr_assert_not(nf_qk_gguf_row(12, 4, 0, &hf));
    cr_assert_not(nf_qk_gguf_row(16, 0, 0, &hf));
    char out[256];
    nf_name_map how;
    cr_assert(nf_hf_name_to_gguf(NF_ARCH_MISTRAL, "model.layers.0.self_attn.k_proj.weight", out, sizeof out, &how));
    cr_assert(how.qk_permuted);
    cr_assert(nf_hf_name_to_gguf(NF_ARCH_QWEN3, "model.layers.0.self_attn.k_proj.weight", out, sizeof out, &how));
    cr_assert_not(how.qk_permuted);
    cr_assert(nf_hf_name_to_gguf(NF_ARCH_LLAMA, "model.layers.0.self_attn.v_proj.weight", out, sizeof out, &how));
    cr_assert_not(how.qk_permuted);
}
