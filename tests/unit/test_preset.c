/* llama-quantize's per-tensor types (ninfer/preset.h, docs/presets.md).  Every expected type
 * here is written by hand from llama.cpp's src/llama-quant.cpp (commit 8784689f), never computed
 * by the code under test: for 32 layers use_more_bits holds for layers 0-3, 6, 9, ..., 27 and
 * 28-31; n/8 = 4, n/16 = 2. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include <ninfer/ninfer.h>

#define MAXT 400

typedef struct model_tensors {
    nf_preset_tensor t[MAXT];
    char names[MAXT][64];
    size_t n;
} model_tensors;

static void add(model_tensors *m, const char *name, uint32_t dims, uint64_t row)
{
    cr_assert_lt(m->n, MAXT);
    snprintf(m->names[m->n], sizeof m->names[m->n], "%s", name);
    m->t[m->n] = (nf_preset_tensor){.name = m->names[m->n], .dims = dims, .row = row};
    m->n++;
}

/* A llama-shaped model of `layers` layers, hidden 4096, MLP 11008 (43 blocks of 256), listed in
 * the order a converter writes them (not llama-quantize's). */
static void llama(model_tensors *m, int layers, bool output)
{
    m->n = 0;
    add(m, "token_embd.weight", 2, 4096);
    for (int l = 0; l < layers; l++) {
        char b[64];
        static const struct {
            const char *suffix;
            uint32_t dims;
            uint64_t row;
        } per[] = {{"attn_norm.weight", 1, 4096}, {"attn_q.weight", 2, 4096},      {"attn_k.weight", 2, 4096},
                   {"attn_v.weight", 2, 4096},    {"attn_output.weight", 2, 4096}, {"ffn_norm.weight", 1, 4096},
                   {"ffn_gate.weight", 2, 4096},  {"ffn_up.weight", 2, 4096},      {"ffn_down.weight", 2, 11008}};
        for (size_t k = 0; k < sizeof per / sizeof per[0]; k++) {
            snprintf(b, sizeof b, "blk.%d.%s", l, per[k].suffix);
            add(m, b, per[k].dims, per[k].row);
        }
    }
    add(m, "output_norm.weight", 1, 4096);
    if (output) add(m, "output.weight", 2, 4096);
}

static const nf_preset_tensor *find(const model_tensors *m, const char *name)
{
    for (size_t i = 0; i < m->n; i++)
        if (!strcmp(m->t[i].name, name)) return &m->t[i];
    cr_assert_fail("no tensor %s", name);
    return NULL;
}

static void expect(const model_tensors *m, const char *name, const char *type)
{
    const nf_preset_tensor *t = find(m, name);
    if (!type) {
        cr_assert_not(t->quantized, "%s: kept expected, got %s (%s)", name, t->type, t->why);
        return;
    }
    cr_assert(t->quantized, "%s: %s expected, kept (%s)", name, type, t->why);
    cr_assert_str_eq(t->type, type, "%s: %s expected, got %s (%s)", name, type, t->type, t->why);
}

static void expect_layer(const model_tensors *m, int layer, const char *suffix, const char *type)
{
    char b[64];
    snprintf(b, sizeof b, "blk.%d.%s", layer, suffix);
    expect(m, b, type);
}

static void choose(model_tensors *m, nf_preset p, nf_preset_model mod)
{
    nf_error err;
    cr_assert_eq(nf_preset_choose(p, &mod, m->t, m->n, &err), NF_OK, "%s", err.message);
}

static const nf_preset_model LLAMA32 = {NF_ARCH_LLAMA, 32, 32, 8, 0, false}; /* 4 heads per kv head */
static const bool MORE32[32] = {1, 1, 1, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1,
                                0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 1, 1, 1, 1};

static model_tensors M; /* (too big for the stack) */

Test(preset, q4_k_m_llama)
{
    llama(&M, 32, true);
    choose(&M, NF_PRESET_Q4_K_M, LLAMA32);
    expect(&M, "token_embd.weight", "q4_k");
    expect(&M, "output.weight", "q6_k");
    expect(&M, "output_norm.weight", NULL);
    for (int l = 0; l < 32; l++) {
        expect_layer(&M, l, "attn_norm.weight", NULL);
        expect_layer(&M, l, "ffn_norm.weight", NULL);
        expect_layer(&M, l, "attn_q.weight", "q4_k");
        expect_layer(&M, l, "attn_k.weight", "q4_k");
        expect_layer(&M, l, "attn_output.weight", "q4_k");
        expect_layer(&M, l, "ffn_gate.weight", "q4_k");
        expect_layer(&M, l, "ffn_up.weight", "q4_k");
        expect_layer(&M, l, "attn_v.weight", MORE32[l] ? "q6_k" : "q4_k");
        expect_layer(&M, l, "ffn_down.weight", MORE32[l] ? "q6_k" : "q4_k");
    }
    cr_assert_str_eq(find(&M, "blk.0.ffn_down.weight")->why, "ffn_down, layer 0 of 32: use_more_bits -> q6_k");
}

Test(preset, q3_k_m_q2_k_q5_k_s_q6_k_llama)
{
    llama(&M, 32, true);
    choose(&M, NF_PRESET_Q3_K_M, LLAMA32);
    expect(&M, "token_embd.weight", "q3_k");
    expect(&M, "output.weight", "q6_k");
    for (int l = 0; l < 32; l++) {
        expect_layer(&M, l, "attn_v.weight", l < 2 ? "q5_k" : "q4_k");
        expect_layer(&M, l, "ffn_down.weight", l < 2 ? "q5_k" : "q4_k");
        expect_layer(&M, l, "attn_output.weight", "q4_k");
        expect_layer(&M, l, "attn_q.weight", "q3_k");
        expect_layer(&M, l, "ffn_up.weight", "q3_k");
    }
    llama(&M, 32, true);
    choose(&M, NF_PRESET_Q2_K, LLAMA32);
    expect(&M, "token_embd.weight", "q2_k");
    expect(&M, "output.weight", "q6_k");
    for (int l = 0; l < 32; l++) {
        expect_layer(&M, l, "attn_v.weight", "q4_k"); /* 4 heads per kv head */
        expect_layer(&M, l, "ffn_down.weight", "q3_k");
        expect_layer(&M, l, "attn_output.weight", "q3_k");
        expect_layer(&M, l, "attn_k.weight", "q2_k");
        expect_layer(&M, l, "ffn_gate.weight", "q2_k");
    }
    nf_preset_model mha = LLAMA32;
    mha.kv_heads = 32;
    llama(&M, 32, true);
    choose(&M, NF_PRESET_Q2_K, mha);
    expect_layer(&M, 5, "attn_v.weight", "q3_k");
    llama(&M, 32, true);
    choose(&M, NF_PRESET_Q5_K_S, LLAMA32);
    expect(&M, "token_embd.weight", "q5_k");
    expect(&M, "output.weight", "q6_k");
    for (int l = 0; l < 32; l++) {
        expect_layer(&M, l, "attn_v.weight", "q5_k");
        expect_layer(&M, l, "ffn_down.weight", "q5_k");
    }
    llama(&M, 32, true);
    choose(&M, NF_PRESET_Q6_K, LLAMA32);
    expect(&M, "token_embd.weight", "q6_k");
    expect(&M, "output.weight", "q6_k");
    expect_layer(&M, 9, "ffn_down.weight", "q6_k");
}

Test(preset, iq_presets_llama)
{
    nf_preset_model im = LLAMA32;
    im.imatrix = true;
    llama(&M, 32, true);
    choose(&M, NF_PRESET_IQ2_M, im);
    expect(&M, "token_embd.weight", "iq3_s");
    expect(&M, "output.weight", "q5_k");
    for (int l = 0; l < 32; l++) {
        expect_layer(&M, l, "attn_v.weight", "q4_k");
        expect_layer(&M, l, "ffn_down.weight", l < 4 ? "iq3_s" : "iq2_s");
        expect_layer(&M, l, "attn_output.weight", "iq3_s");
        expect_layer(&M, l, "attn_q.weight", "iq2_s");
        expect_layer(&M, l, "attn_k.weight", "iq2_s");
        expect_layer(&M, l, "ffn_gate.weight", "iq2_s");
    }
    cr_assert(find(&M, "blk.0.attn_q.weight")->needs_imatrix);
    cr_assert_not(find(&M, "blk.0.attn_v.weight")->needs_imatrix);
    llama(&M, 32, true);
    choose(&M, NF_PRESET_IQ3_M, LLAMA32);
    expect(&M, "token_embd.weight", "iq3_s");
    expect(&M, "output.weight", "q6_k");
    for (int l = 0; l < 32; l++) {
        expect_layer(&M, l, "attn_v.weight", "q4_k");
        expect_layer(&M, l, "ffn_down.weight", l < 4 ? "q4_k" : "iq3_s");
        expect_layer(&M, l, "attn_output.weight", "q4_k");
        expect_layer(&M, l, "ffn_up.weight", "iq3_s");
    }
    llama(&M, 32, true);
    choose(&M, NF_PRESET_IQ4_XS, LLAMA32);
    expect(&M, "token_embd.weight", "iq4_xs");
    expect(&M, "output.weight", "q6_k");
    for (int l = 0; l < 32; l++) {
        expect_layer(&M, l, "attn_v.weight", "q5_k");
        expect_layer(&M, l, "ffn_down.weight", l < 4 ? "q5_k" : "iq4_xs");
    }
    llama(&M, 32, true);
    choose(&M, NF_PRESET_IQ4_XS, im); /* with an imatrix the first ffn_down keep iq4_xs */
    expect_layer(&M, 0, "ffn_down.weight", "iq4_xs");
    /* IQ3_XS: the middle layers' gate and up get iq3_xxs, q and k iq3_xxs */
    llama(&M, 32, true);
    choose(&M, NF_PRESET_IQ3_XS, LLAMA32);
    for (int l = 0; l < 32; l++) {
        bool middle = l >= 4 && l < 28;
        expect_layer(&M, l, "ffn_gate.weight", middle ? "iq3_xxs" : "iq3_s");
        expect_layer(&M, l, "ffn_up.weight", middle ? "iq3_xxs" : "iq3_s");
        expect_layer(&M, l, "attn_q.weight", "iq3_xxs");
        expect_layer(&M, l, "attn_v.weight", "q4_k");
    }
    /* IQ1_S: token_embd q2_k, attn_output iq2_xxs, ffn_down q2_k in the first eighth */
    llama(&M, 32, true);
    choose(&M, NF_PRESET_IQ1_S, im);
    expect(&M, "token_embd.weight", "q2_k");
    expect(&M, "output.weight", "q5_k");
    expect_layer(&M, 3, "ffn_down.weight", "q2_k");
    expect_layer(&M, 4, "ffn_down.weight", "iq1_s");
    expect_layer(&M, 4, "attn_output.weight", "iq2_xxs");
}

/* Without output.weight the embedding is the output's (tied): q6_k for Q4_K_M. */
Test(preset, tied_embeddings)
{
    llama(&M, 8, false);
    choose(&M, NF_PRESET_Q4_K_M, LLAMA32);
    expect(&M, "token_embd.weight", "q6_k");
    llama(&M, 8, false);
    choose(&M, NF_PRESET_Q8_0, LLAMA32);
    expect(&M, "token_embd.weight", "q8_0");
}

/* Q4_K_S: attn_v q5_k for the first four, ffn_down q5_k in the first eighth; Q4_0 with an
 * imatrix: q4_1 in the first eighth (a type no ninfer format holds: the command refuses it). */
Test(preset, counters_and_first_layers)
{
    llama(&M, 16, true);
    nf_preset_model m16 = {NF_ARCH_LLAMA, 16, 32, 8, 0, false};
    choose(&M, NF_PRESET_Q4_K_S, m16);
    for (int l = 0; l < 16; l++) {
        expect_layer(&M, l, "attn_v.weight", l < 4 ? "q5_k" : "q4_k");
        expect_layer(&M, l, "ffn_down.weight", l < 2 ? "q5_k" : "q4_k");
    }
    m16.imatrix = true;
    llama(&M, 16, true);
    choose(&M, NF_PRESET_Q4_0, m16);
    expect_layer(&M, 1, "ffn_down.weight", "q4_1");
    expect_layer(&M, 2, "ffn_down.weight", "q4_0");
    expect(&M, "output.weight", "q6_k");
}

/* Rows that are not whole blocks: q4_k falls back to q5_0, q6_k to q8_0, an i-quant to iq4_nl,
 * then f16 when 32 does not divide the row either; the output's own rule gives q8_0. */
Test(preset, fallbacks)
{
    model_tensors *m = &M;
    m->n = 0;
    add(m, "token_embd.weight", 2, 200);
    add(m, "blk.0.attn_q.weight", 2, 288);
    add(m, "blk.0.attn_v.weight", 2, 288);
    add(m, "blk.0.ffn_down.weight", 2, 200);
    add(m, "output.weight", 2, 288);
    nf_preset_model m1 = {NF_ARCH_LLAMA, 1, 4, 4, 0, false};
    choose(m, NF_PRESET_Q4_K_M, m1);
    expect(m, "token_embd.weight", "f16");
    expect(m, "blk.0.attn_q.weight", "q5_0");
    expect(m, "blk.0.attn_v.weight", "q8_0"); /* use_more_bits: q6_k, then its fallback */
    expect(m, "blk.0.ffn_down.weight", "f16");
    expect(m, "output.weight", "q8_0");
    choose(m, NF_PRESET_IQ3_XXS, m1);
    expect(m, "blk.0.attn_q.weight", "iq4_nl"); /* iq2_s */
    /* Q8_0 has no fallback: llama-quantize stops */
    nf_error err;
    cr_assert_eq(nf_preset_choose(NF_PRESET_Q8_0, &m1, m->t, m->n, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "token_embd.weight"), "%s", err.message);
}

/* 8 experts (Mixtral-like rules): attn_v and attn_k q8_0, attn_output q5_k, layers from names. */
Test(preset, eight_experts)
{
    model_tensors *m = &M;
    m->n = 0;
    add(m, "token_embd.weight", 2, 4096);
    for (int l = 0; l < 32; l++) {
        char b[64];
        static const char *const two[] = {"attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight"};
        for (int k = 0; k < 4; k++) {
            snprintf(b, sizeof b, "blk.%d.%s", l, two[k]);
            add(m, b, 2, 4096);
        }
        snprintf(b, sizeof b, "blk.%d.ffn_gate_inp.weight", l);
        add(m, b, 2, 4096);
        snprintf(b, sizeof b, "blk.%d.ffn_gate_exps.weight", l);
        add(m, b, 3, 4096);
        snprintf(b, sizeof b, "blk.%d.ffn_up_exps.weight", l);
        add(m, b, 3, 4096);
        snprintf(b, sizeof b, "blk.%d.ffn_down_exps.weight", l);
        add(m, b, 3, 14336);
    }
    add(m, "output.weight", 2, 4096);
    nf_preset_model moe = {NF_ARCH_QWEN3_MOE, 32, 32, 8, 8, false};
    choose(m, NF_PRESET_Q4_K_M, moe);
    for (int l = 0; l < 32; l++) {
        expect_layer(m, l, "attn_v.weight", "q8_0");
        expect_layer(m, l, "attn_k.weight", "q8_0");
        expect_layer(m, l, "attn_output.weight", "q5_k");
        expect_layer(m, l, "ffn_gate_inp.weight", NULL);
        expect_layer(m, l, "ffn_down_exps.weight", MORE32[l] ? "q6_k" : "q4_k");
        expect_layer(m, l, "ffn_up_exps.weight", "q4_k");
    }
    choose(m, NF_PRESET_IQ3_M, moe);
    for (int l = 0; l < 32; l++) /* IQ3_M with 8 experts: q4_k where use_more_bits */
        expect_layer(m, l, "ffn_down_exps.weight", l < 4 || MORE32[l] ? "q4_k" : "iq3_s");
    /* a layer beyond the model's count: llama-quantize stops ("Bad layer") */
    moe.layers = 16;
    nf_error err;
    cr_assert_eq(nf_preset_choose(NF_PRESET_Q4_K_M, &moe, m->t, m->n, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "blk.16.ffn_down_exps.weight"), "%s", err.message);
}

/* llama.cpp's 70B type (80 layers, fewer kv heads than heads): attn_v's q3_k / q4_k become q5_k;
 * with as many kv heads as heads (its 65B) they stay. */
Test(preset, seventy_b)
{
    nf_preset_model m70 = {NF_ARCH_LLAMA, 80, 64, 8, 0, false};
    llama(&M, 40, true); /* (the first 40 of the 80 layers: the rule reads the model's count) */
    choose(&M, NF_PRESET_Q3_K_M, m70);
    expect_layer(&M, 1, "attn_v.weight", "q5_k");
    expect_layer(&M, 2, "attn_v.weight", "q5_k");
    expect_layer(&M, 2, "attn_q.weight", "q3_k");
    llama(&M, 40, true);
    choose(&M, NF_PRESET_Q2_K, m70);
    expect_layer(&M, 7, "attn_v.weight", "q5_k");
    m70.kv_heads = 64;
    llama(&M, 40, true);
    choose(&M, NF_PRESET_Q2_K, m70);
    expect_layer(&M, 7, "attn_v.weight", "q3_k");
    nf_preset_model q72 = {NF_ARCH_QWEN2, 80, 64, 64, 0, false};
    llama(&M, 40, true);
    choose(&M, NF_PRESET_Q2_K, q72);
    expect_layer(&M, 7, "attn_v.weight", "q5_k");
}

Test(preset, names)
{
    nf_preset p;
    cr_assert(nf_preset_lookup("q4_k_m", &p) && p == NF_PRESET_Q4_K_M);
    cr_assert(nf_preset_lookup("IQ2_XXS", &p) && p == NF_PRESET_IQ2_XXS);
    cr_assert_not(nf_preset_lookup("Q4_K", &p));
    cr_assert_not(nf_preset_lookup("Q2_K_S", &p));
    cr_assert_str_eq(nf_preset_name(NF_PRESET_IQ1_M), "IQ1_M");
    cr_assert_null(nf_preset_name(NF_PRESET_COUNT));
}

/* Which choices need an importance vector (llama.cpp v0.5.0, 0ad4a86, the release the peer test
 * runs: tensor_requires_imatrix): iq3_xxs, iq2_xxs, iq2_xs, iq2_s, iq1_s and iq1_m, except on
 * token_embd and output, whatever their type. */
Test(preset, needs_imatrix_pinned_release)
{
    llama(&M, 32, true);
    choose(&M, NF_PRESET_IQ3_XS, LLAMA32);
    expect_layer(&M, 0, "attn_k.weight", "iq3_xxs");
    cr_assert(find(&M, "blk.0.attn_k.weight")->needs_imatrix);
    cr_assert(find(&M, "blk.0.attn_q.weight")->needs_imatrix);
    cr_assert_not(find(&M, "blk.0.attn_output.weight")->needs_imatrix); /* iq3_s */
    llama(&M, 32, true);
    choose(&M, NF_PRESET_IQ3_XXS, LLAMA32);
    expect_layer(&M, 5, "ffn_up.weight", "iq3_xxs");
    cr_assert(find(&M, "blk.5.ffn_up.weight")->needs_imatrix);
    llama(&M, 32, false);
    choose(&M, NF_PRESET_IQ1_S, LLAMA32);
    expect(&M, "token_embd.weight", "q5_k"); /* tied: the output's rule */
    cr_assert_not(find(&M, "token_embd.weight")->needs_imatrix);
    llama(&M, 32, true);
    choose(&M, NF_PRESET_IQ1_M, LLAMA32);
    cr_assert_not(find(&M, "token_embd.weight")->needs_imatrix);
    cr_assert_not(find(&M, "output.weight")->needs_imatrix);
    cr_assert(find(&M, "blk.3.ffn_gate.weight")->needs_imatrix);
}
