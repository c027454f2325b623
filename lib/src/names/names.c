/* GGUF <-> Hugging Face tensor names (see ninfer/names.h; the table is listed in docs/names.md). */
#include <stdio.h>
#include <string.h>

#include <ninfer/names.h>

static const struct {
    const char *name, *gguf;
    const char *aliases[3]; /* config.json model_type and GGUF spellings besides the name */
    bool permutes_qk;
} ARCHS[NF_ARCH_COUNT] = {
    [NF_ARCH_LLAMA] = {"llama", "llama", {NULL}, true},
    [NF_ARCH_MISTRAL] = {"mistral", "llama", {NULL}, true},
    [NF_ARCH_QWEN2] = {"qwen2", "qwen2", {NULL}, false},
    [NF_ARCH_QWEN3] = {"qwen3", "qwen3", {NULL}, false},
    [NF_ARCH_QWEN3_MOE] = {"qwen3_moe", "qwen3moe", {"qwen3moe", NULL}, false},
    [NF_ARCH_GEMMA] = {"gemma", "gemma", {NULL}, false},
    [NF_ARCH_GEMMA2] = {"gemma2", "gemma2", {NULL}, false},
    [NF_ARCH_GEMMA3] = {"gemma3", "gemma3", {"gemma3_text", NULL}, false},
    [NF_ARCH_DEEPSEEK2] = {"deepseek2", "deepseek2", {"deepseek_v2", "deepseek_v3", NULL}, false},
    [NF_ARCH_GPT_OSS] = {"gpt_oss", "gpt-oss", {"gpt-oss", NULL}, false},
};

const char *nf_arch_name(nf_arch arch) { return (unsigned)arch < NF_ARCH_COUNT ? ARCHS[arch].name : NULL; }

const char *nf_arch_gguf_name(nf_arch arch) { return (unsigned)arch < NF_ARCH_COUNT ? ARCHS[arch].gguf : NULL; }

bool nf_arch_permutes_qk(nf_arch arch) { return (unsigned)arch < NF_ARCH_COUNT && ARCHS[arch].permutes_qk; }

/* "llama" is both our name of llama and the GGUF name of mistral: the first entry wins. */
bool nf_arch_lookup(const char *name, nf_arch *out)
{
    for (unsigned a = 0; name && a < NF_ARCH_COUNT; a++) {
        bool hit = !strcmp(name, ARCHS[a].name) || !strcmp(name, ARCHS[a].gguf);
        for (unsigned k = 0; !hit && ARCHS[a].aliases[k]; k++) hit = !strcmp(name, ARCHS[a].aliases[k]);
        if (hit) {
            *out = (nf_arch)a;
            return true;
        }
    }
    return false;
}

/* ---------------------------------------------------------------- the table */
#define A(x) (1u << NF_ARCH_##x)
#define ALL ((1u << NF_ARCH_COUNT) - 1u)
#define DENSE_MLP (ALL & ~A(GPT_OSS)) /* gate_proj / up_proj / down_proj */
#define FFN_NORM_ARCHS (ALL & ~(A(GEMMA2) | A(GEMMA3) | A(GPT_OSS)))
#define POST_NORM_ARCHS (A(GEMMA2) | A(GEMMA3) | A(GPT_OSS))
#define QK_NORM_ARCHS (A(QWEN3) | A(QWEN3_MOE) | A(GEMMA3))
#define MOE_ARCHS (A(QWEN3_MOE) | A(DEEPSEEK2))
#define GEMMAS (A(GEMMA) | A(GEMMA2) | A(GEMMA3))

enum { F_QK = 1u, F_EXPERT = 2u, F_NORM = 4u };

/* Patterns: {L} a layer number, {E} an expert number, {S} "weight" or "bias". */
static const struct {
    unsigned archs;
    const char *hf, *gguf;
    unsigned flags;
} NAMES[] = {
    {ALL, "model.embed_tokens.weight", "token_embd.weight", 0},
    {ALL, "model.norm.weight", "output_norm.weight", F_NORM},
    {ALL, "lm_head.weight", "output.weight", 0},
    {ALL, "model.layers.{L}.input_layernorm.weight", "blk.{L}.attn_norm.weight", F_NORM},
    {ALL, "model.layers.{L}.self_attn.q_proj.{S}", "blk.{L}.attn_q.{S}", F_QK},
    {ALL, "model.layers.{L}.self_attn.k_proj.{S}", "blk.{L}.attn_k.{S}", F_QK},
    {ALL, "model.layers.{L}.self_attn.v_proj.{S}", "blk.{L}.attn_v.{S}", 0},
    {ALL, "model.layers.{L}.self_attn.o_proj.{S}", "blk.{L}.attn_output.{S}", 0},
    {QK_NORM_ARCHS, "model.layers.{L}.self_attn.q_norm.weight", "blk.{L}.attn_q_norm.weight", F_NORM},
    {QK_NORM_ARCHS, "model.layers.{L}.self_attn.k_norm.weight", "blk.{L}.attn_k_norm.weight", F_NORM},
    {FFN_NORM_ARCHS, "model.layers.{L}.post_attention_layernorm.weight", "blk.{L}.ffn_norm.weight", F_NORM},
    {POST_NORM_ARCHS, "model.layers.{L}.post_attention_layernorm.weight", "blk.{L}.post_attention_norm.weight", F_NORM},
    {A(GEMMA2) | A(GEMMA3), "model.layers.{L}.pre_feedforward_layernorm.weight", "blk.{L}.ffn_norm.weight", F_NORM},
    {A(GEMMA2) | A(GEMMA3), "model.layers.{L}.post_feedforward_layernorm.weight", "blk.{L}.post_ffw_norm.weight",
     F_NORM},
    {DENSE_MLP, "model.layers.{L}.mlp.gate_proj.weight", "blk.{L}.ffn_gate.weight", 0},
    {DENSE_MLP, "model.layers.{L}.mlp.up_proj.weight", "blk.{L}.ffn_up.weight", 0},
    {DENSE_MLP, "model.layers.{L}.mlp.down_proj.weight", "blk.{L}.ffn_down.weight", 0},
    /* mixtures of experts: the router, each expert's matrices (stacked), shared experts */
    {MOE_ARCHS, "model.layers.{L}.mlp.gate.weight", "blk.{L}.ffn_gate_inp.weight", 0},
    {MOE_ARCHS, "model.layers.{L}.mlp.experts.{E}.gate_proj.weight", "blk.{L}.ffn_gate_exps.weight", F_EXPERT},
    {MOE_ARCHS, "model.layers.{L}.mlp.experts.{E}.up_proj.weight", "blk.{L}.ffn_up_exps.weight", F_EXPERT},
    {MOE_ARCHS, "model.layers.{L}.mlp.experts.{E}.down_proj.weight", "blk.{L}.ffn_down_exps.weight", F_EXPERT},
    {A(DEEPSEEK2), "model.layers.{L}.mlp.shared_experts.gate_proj.weight", "blk.{L}.ffn_gate_shexp.weight", 0},
    {A(DEEPSEEK2), "model.layers.{L}.mlp.shared_experts.up_proj.weight", "blk.{L}.ffn_up_shexp.weight", 0},
    {A(DEEPSEEK2), "model.layers.{L}.mlp.shared_experts.down_proj.weight", "blk.{L}.ffn_down_shexp.weight", 0},
    {A(DEEPSEEK2), "model.layers.{L}.mlp.gate.e_score_correction_bias", "blk.{L}.exp_probs_b.bias", 0},
    /* DeepSeek's multi-head latent attention */
    {A(DEEPSEEK2), "model.layers.{L}.self_attn.q_a_proj.weight", "blk.{L}.attn_q_a.weight", 0},
    {A(DEEPSEEK2), "model.layers.{L}.self_attn.q_a_layernorm.weight", "blk.{L}.attn_q_a_norm.weight", 0},
    {A(DEEPSEEK2), "model.layers.{L}.self_attn.q_b_proj.weight", "blk.{L}.attn_q_b.weight", 0},
    {A(DEEPSEEK2), "model.layers.{L}.self_attn.kv_a_proj_with_mqa.weight", "blk.{L}.attn_kv_a_mqa.weight", 0},
    {A(DEEPSEEK2), "model.layers.{L}.self_attn.kv_a_layernorm.weight", "blk.{L}.attn_kv_a_norm.weight", 0},
    /* gpt-oss: attention sinks, the router (with its bias), the experts' down bias */
    {A(GPT_OSS), "model.layers.{L}.self_attn.sinks", "blk.{L}.attn_sinks.weight", 0},
    {A(GPT_OSS), "model.layers.{L}.mlp.router.{S}", "blk.{L}.ffn_gate_inp.{S}", 0},
    {A(GPT_OSS), "model.layers.{L}.mlp.experts.down_proj_bias", "blk.{L}.ffn_down_exps.bias", 0},
};
#define NNAMES (sizeof NAMES / sizeof NAMES[0])

/* Names the converter writes as something other than one renamed tensor: unmapped, with why. */
static const struct {
    unsigned archs;
    const char *hf, *reason;
} CHANGED[] = {
    {A(DEEPSEEK2), "model.layers.{L}.self_attn.kv_b_proj.weight",
     "the converter splits kv_b_proj into attn_k_b (each head's block transposed) and attn_v_b"},
    {A(GPT_OSS), "model.layers.{L}.mlp.experts.gate_up_proj",
     "gate and up of every expert fused (interleaved columns): the converter splits it into ffn_gate_exps and "
     "ffn_up_exps and transposes them"},
    {A(GPT_OSS), "model.layers.{L}.mlp.experts.gate_up_proj_bias",
     "gate and up biases fused (interleaved): the converter splits them into ffn_gate_exps.bias and ffn_up_exps.bias"},
    {A(GPT_OSS), "model.layers.{L}.mlp.experts.gate_up_proj_blocks",
     "MXFP4 blocks of the fused gate/up experts: the converter splits and repacks them"},
    {A(GPT_OSS), "model.layers.{L}.mlp.experts.gate_up_proj_scales",
     "MXFP4 scales of the fused gate/up experts: the converter splits and repacks them"},
    {A(GPT_OSS), "model.layers.{L}.mlp.experts.down_proj",
     "the experts' down matrices stored transposed: the "
     "converter transposes them into ffn_down_exps"},
    {A(GPT_OSS), "model.layers.{L}.mlp.experts.down_proj_blocks",
     "MXFP4 blocks of the experts' down matrices: the converter repacks them into ffn_down_exps"},
    {A(GPT_OSS), "model.layers.{L}.mlp.experts.down_proj_scales",
     "MXFP4 scales of the experts' down matrices: the converter repacks them into ffn_down_exps"},
};
#define NCHANGED (sizeof CHANGED / sizeof CHANGED[0])

typedef struct fields {
    long layer, expert;
    const char *kind; /* {S}: "weight" or "bias" */
} fields;

/* A decimal number without a sign or leading zeros (as the converter writes them), at most 9
 * digits; its length, 0 when none. */
static size_t number(const char *s, long *v)
{
    size_t n = 0;
    long x = 0;
    while (s[n] >= '0' && s[n] <= '9' && n < 9) x = x * 10 + (s[n++] - '0');
    if (n == 0 || (s[n] >= '0' && s[n] <= '9') || (n > 1 && s[0] == '0')) return 0;
    *v = x;
    return n;
}

/* Does `name` fit pattern `pat`?  Fills f. */
static bool match(const char *pat, const char *name, fields *f)
{
    f->layer = f->expert = -1;
    f->kind = NULL;
    while (*pat) {
        if (!strncmp(pat, "{L}", 3) || !strncmp(pat, "{E}", 3)) {
            size_t n = number(name, pat[1] == 'L' ? &f->layer : &f->expert);
            if (!n) return false;
            name += n, pat += 3;
        } else if (!strncmp(pat, "{S}", 3)) {
            f->kind = !strcmp(name, "weight") ? "weight" : !strcmp(name, "bias") ? "bias" : NULL;
            if (!f->kind) return false;
            name += strlen(f->kind), pat += 3;
        } else if (*pat++ != *name++) {
            return false;
        }
    }
    return *name == '\0';
}

/* Pattern `pat` with f's values, into out; its length, 0 when it does not fit. */
static size_t fill(const char *pat, const fields *f, char *out, size_t size)
{
    size_t n = 0;
    while (*pat) {
        char piece[24];
        const char *s = piece;
        size_t len;
        if (!strncmp(pat, "{L}", 3) || !strncmp(pat, "{E}", 3)) {
            snprintf(piece, sizeof piece, "%ld", pat[1] == 'L' ? f->layer : f->expert);
            len = strlen(piece);
            pat += 3;
        } else if (!strncmp(pat, "{S}", 3)) {
            s = f->kind;
            len = strlen(s);
            pat += 3;
        } else {
            s = pat++;
            len = 1;
        }
        if (n + len >= size) {
            if (size) out[0] = '\0';
            return 0;
        }
        memcpy(out + n, s, len);
        n += len;
    }
    out[n] = '\0';
    return n;
}

static void describe(nf_arch arch, unsigned i, const fields *f, nf_name_map *how)
{
    if (!how) return;
    how->layer = (int)f->layer;
    how->expert = (int)f->expert;
    how->stacked = (NAMES[i].flags & F_EXPERT) != 0;
    how->qk_permuted = (NAMES[i].flags & F_QK) && ARCHS[arch].permutes_qk && f->kind && !strcmp(f->kind, "weight");
    /* docs/names.md: Gemma's RMSNorm multiplies by 1 + w; the converter stores 1 + w */
    how->change = (NAMES[i].flags & F_NORM) && (GEMMAS & (1u << arch)) ? "adds 1" : NULL;
    how->reason = NULL;
}

static void unmapped(nf_name_map *how, const char *reason, char *out, size_t size)
{
    if (size) out[0] = '\0';
    if (!how) return;
    *how = (nf_name_map){.layer = -1, .expert = -1, .reason = reason};
}

size_t nf_hf_name_to_gguf(nf_arch arch, const char *hf, char *out, size_t size, nf_name_map *how)
{
    unmapped(how, NULL, out, size);
    if ((unsigned)arch >= NF_ARCH_COUNT || !hf) return 0;
    fields f;
    for (unsigned i = 0; i < NNAMES; i++)
        if ((NAMES[i].archs & (1u << arch)) && match(NAMES[i].hf, hf, &f)) {
            size_t n = fill(NAMES[i].gguf, &f, out, size);
            if (n) describe(arch, i, &f, how);
            return n;
        }
    for (unsigned i = 0; i < NCHANGED; i++)
        if ((CHANGED[i].archs & (1u << arch)) && match(CHANGED[i].hf, hf, &f)) {
            unmapped(how, CHANGED[i].reason, out, size);
            if (how) how->layer = (int)f.layer;
            return 0;
        }
    return 0;
}

size_t nf_gguf_name_to_hf(nf_arch arch, const char *gguf, int expert, char *out, size_t size, nf_name_map *how)
{
    unmapped(how, NULL, out, size);
    if ((unsigned)arch >= NF_ARCH_COUNT || !gguf) return 0;
    fields f;
    for (unsigned i = 0; i < NNAMES; i++)
        if ((NAMES[i].archs & (1u << arch)) && match(NAMES[i].gguf, gguf, &f)) {
            if (NAMES[i].flags & F_EXPERT) {
                if (expert < 0) return 0;
                f.expert = expert;
            }
            size_t n = fill(NAMES[i].hf, &f, out, size);
            if (n) describe(arch, i, &f, how);
            return n;
        }
    return 0;
}

/* docs/names.md, "q and k rows": the converter views the rows as [heads][2][rows/heads/2] and
 * swaps the last two axes, so GGUF row (h, j, s) is Hugging Face row (h, s, j). */
bool nf_qk_hf_row(uint64_t rows, uint64_t heads, uint64_t gguf_row, uint64_t *hf_row)
{
    if (heads == 0 || rows % heads != 0 || (rows / heads) % 2 != 0 || gguf_row >= rows) return false;
    uint64_t per_head = rows / heads, half = per_head / 2;
    uint64_t h = gguf_row / per_head, r = gguf_row % per_head;
    *hf_row = h * per_head + (r % 2) * half + r / 2;
    return true;
}

bool nf_qk_gguf_row(uint64_t rows, uint64_t heads, uint64_t hf_row, uint64_t *gguf_row)
{
    if (heads == 0 || rows % heads != 0 || (rows / heads) % 2 != 0 || hf_row >= rows) return false;
    /* within a head, Hugging Face row j * half + i (j: the rotary half) is GGUF row 2 * i + j */
    uint64_t per_head = rows / heads, half = per_head / 2;
    uint64_t h = hf_row / per_head, r = hf_row % per_head;
    *gguf_row = h * per_head + 2 * (r % half) + r / half;
    return true;
}
