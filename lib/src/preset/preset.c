/* llama-quantize's per-tensor type choice for its presets (see ninfer/preset.h; the rules in
 * words: docs/presets.md).  Each rule below names the condition llama-quant.cpp tests, in its
 * order: an earlier rule that matches a tensor ends the search, as its else-if chain does. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ninfer/escape.h>
#include <ninfer/preset.h>

#include "common/fail.h"

/* ggml types a preset may choose, with ggml's block sizes (values per block). */
typedef enum gtype {
    T_F16,
    T_Q4_0,
    T_Q4_1,
    T_Q5_0,
    T_Q5_1,
    T_Q8_0,
    T_Q2_K,
    T_Q3_K,
    T_Q4_K,
    T_Q5_K,
    T_Q6_K,
    T_IQ2_XXS,
    T_IQ2_XS,
    T_IQ2_S,
    T_IQ3_XXS,
    T_IQ3_S,
    T_IQ1_S,
    T_IQ1_M,
    T_IQ4_NL,
    T_IQ4_XS,
} gtype;

static const struct {
    const char *name;
    unsigned block;
} TYPES[] = {
    [T_F16] = {"f16", 1},         [T_Q4_0] = {"q4_0", 32},      [T_Q4_1] = {"q4_1", 32},
    [T_Q5_0] = {"q5_0", 32},      [T_Q5_1] = {"q5_1", 32},      [T_Q8_0] = {"q8_0", 32},
    [T_Q2_K] = {"q2_k", 256},     [T_Q3_K] = {"q3_k", 256},     [T_Q4_K] = {"q4_k", 256},
    [T_Q5_K] = {"q5_k", 256},     [T_Q6_K] = {"q6_k", 256},     [T_IQ2_XXS] = {"iq2_xxs", 256},
    [T_IQ2_XS] = {"iq2_xs", 256}, [T_IQ2_S] = {"iq2_s", 256},   [T_IQ3_XXS] = {"iq3_xxs", 256},
    [T_IQ3_S] = {"iq3_s", 256},   [T_IQ1_S] = {"iq1_s", 256},   [T_IQ1_M] = {"iq1_m", 256},
    [T_IQ4_NL] = {"iq4_nl", 32},  [T_IQ4_XS] = {"iq4_xs", 256},
};

/* Each preset's name and default type (llama_model_quantize_impl's switch). */
static const struct {
    const char *name;
    gtype base;
} PRESETS[NF_PRESET_COUNT] = {
    [NF_PRESET_Q2_K] = {"Q2_K", T_Q2_K},       [NF_PRESET_Q3_K_S] = {"Q3_K_S", T_Q3_K},
    [NF_PRESET_Q3_K_M] = {"Q3_K_M", T_Q3_K},   [NF_PRESET_Q3_K_L] = {"Q3_K_L", T_Q3_K},
    [NF_PRESET_Q4_K_S] = {"Q4_K_S", T_Q4_K},   [NF_PRESET_Q4_K_M] = {"Q4_K_M", T_Q4_K},
    [NF_PRESET_Q5_K_S] = {"Q5_K_S", T_Q5_K},   [NF_PRESET_Q5_K_M] = {"Q5_K_M", T_Q5_K},
    [NF_PRESET_Q6_K] = {"Q6_K", T_Q6_K},       [NF_PRESET_Q8_0] = {"Q8_0", T_Q8_0},
    [NF_PRESET_Q4_0] = {"Q4_0", T_Q4_0},       [NF_PRESET_Q5_0] = {"Q5_0", T_Q5_0},
    [NF_PRESET_IQ4_XS] = {"IQ4_XS", T_IQ4_XS}, [NF_PRESET_IQ4_NL] = {"IQ4_NL", T_IQ4_NL},
    [NF_PRESET_IQ3_M] = {"IQ3_M", T_IQ3_S},    [NF_PRESET_IQ3_S] = {"IQ3_S", T_IQ3_S},
    [NF_PRESET_IQ3_XS] = {"IQ3_XS", T_IQ3_S},  [NF_PRESET_IQ3_XXS] = {"IQ3_XXS", T_IQ3_XXS},
    [NF_PRESET_IQ2_M] = {"IQ2_M", T_IQ2_S},    [NF_PRESET_IQ2_S] = {"IQ2_S", T_IQ2_XS},
    [NF_PRESET_IQ2_XS] = {"IQ2_XS", T_IQ2_XS}, [NF_PRESET_IQ2_XXS] = {"IQ2_XXS", T_IQ2_XXS},
    [NF_PRESET_IQ1_S] = {"IQ1_S", T_IQ1_S},    [NF_PRESET_IQ1_M] = {"IQ1_M", T_IQ1_M},
};

const char *nf_preset_name(nf_preset p) { return (unsigned)p < NF_PRESET_COUNT ? PRESETS[p].name : NULL; }

bool nf_preset_lookup(const char *name, nf_preset *out)
{
    for (unsigned p = 0; name && p < NF_PRESET_COUNT; p++)
        if (!strcasecmp(name, PRESETS[p].name)) {
            *out = (nf_preset)p;
            return true;
        }
    return false;
}

/* ---------------------------------------------------------------- the model's state */
typedef struct state {
    nf_preset p;
    const nf_preset_model *m;
    int layers, experts, gqa;
    bool has_output, is_70b;
    int n_attn_v, i_attn_v, i_ffn_down, i_ffn_gate, i_ffn_up; /* llama-quantize's counters */
} state;

static bool has(const char *name, const char *part) { return strstr(name, part) != NULL; }

static bool is(const state *s, nf_preset a) { return s->p == a; }

/* the presets llama-quant.cpp treats together as its lowest-bit family */
static bool lowest_bits(const state *s)
{
    return is(s, NF_PRESET_IQ2_XXS) || is(s, NF_PRESET_IQ2_XS) || is(s, NF_PRESET_IQ1_S) || is(s, NF_PRESET_IQ2_S) ||
           is(s, NF_PRESET_IQ2_M) || is(s, NF_PRESET_IQ1_M);
}

static bool iq2_s_or_m(const state *s) { return is(s, NF_PRESET_IQ2_S) || is(s, NF_PRESET_IQ2_M); }

/* the first layers, the last ones and every third between get more bits (llama-quant.cpp) */
static bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

__attribute__((format(printf, 3, 4))) static void say(char *why, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
}

/* Why llama-quantize leaves a tensor as the converter wrote it, or NULL when it quantizes it
 * (its checks on the name and dimensions, those that concern the architectures here). */
static const char *kept_because(const nf_preset_tensor *t)
{
    size_t len = strlen(t->name);
    if (t->dims < 2) return "fewer than 2 dimensions";
    if (len < 6 || strcmp(t->name + len - 6, "weight") != 0) return "not a weight";
    if (has(t->name, "_norm.weight")) return "a norm";
    if (has(t->name, "ffn_gate_inp.weight")) return "the experts' router (ffn_gate_inp)";
    if (!strcmp(t->name, "position_embd.weight")) return "positional embeddings";
    static const char *const small[] = {"altup",
                                        "laurel",
                                        "per_layer_model_proj",
                                        "ssm_conv1d",
                                        "shortconv.conv.weight",
                                        "conv1d",
                                        "attn_rel_b.weight",
                                        ".position_embd",
                                        "token_types.weight"};
    for (size_t i = 0; i < sizeof small / sizeof small[0]; i++)
        if (has(t->name, small[i])) return "a small tensor llama-quantize keeps";
    return NULL;
}

/* The layer of an ffn tensor and the count it is judged against: llama-quantize's running
 * counter for a dense model, the name's blk.N for a mixture of experts. */
static nf_status layer_of(const state *s, const nf_preset_tensor *t, int counter, int *layer, nf_error *err)
{
    *layer = counter;
    if (s->experts <= 1) return NF_OK;
    int n = -1, used = 0;
    if (sscanf(t->name, "blk.%d.%n", &n, &used) != 1 || used == 0)
        return nf_error_set(err, NF_ERR_INVALID, "tensor '%s': no layer number (blk.N.) in its name",
                            nf_esc(t->name).s);
    if (n < 0 || n >= s->layers)
        return nf_error_set(err, NF_ERR_INVALID, "tensor '%s': layer %d is not in [0, %d) (llama-quantize refuses it)",
                            nf_esc(t->name).s, n, s->layers);
    *layer = n;
    return NF_OK;
}

/* ---------------------------------------------------------------- the rules, by tensor */
static gtype output_rule(const state *s, const nf_preset_tensor *t, gtype ty, char *why, size_t size)
{
    const char *what = strcmp(t->name, "output.weight") ? "token_embd (tied to the output)" : "output";
    if (t->row % TYPES[ty].block != 0) {
        say(why, size, "%s: row of %llu not a multiple of %u -> q8_0", what, (unsigned long long)t->row,
            TYPES[ty].block);
        return T_Q8_0;
    }
    if (lowest_bits(s) || is(s, NF_PRESET_IQ3_XXS)) {
        say(why, size, "%s: preset %s -> q5_k", what, PRESETS[s->p].name);
        return T_Q5_K;
    }
    if (ty != T_Q8_0) {
        say(why, size, "%s -> q6_k", what);
        return T_Q6_K;
    }
    say(why, size, "%s: preset %s keeps q8_0", what, PRESETS[s->p].name);
    return ty;
}

static gtype token_embd_rule(const state *s, gtype ty, char *why, size_t size)
{
    gtype to = ty;
    if (is(s, NF_PRESET_IQ2_XXS) || is(s, NF_PRESET_IQ2_XS) || is(s, NF_PRESET_IQ1_S) || is(s, NF_PRESET_IQ1_M))
        to = T_Q2_K;
    else if (iq2_s_or_m(s) || is(s, NF_PRESET_IQ3_XXS)) to = T_IQ3_S;
    say(why, size, "token_embd%s -> %s", to == ty ? ": the preset's type" : "", TYPES[to].name);
    return to;
}

/* IQ2_XXS, IQ2_XS, IQ2_S, IQ2_M, IQ1_S, IQ1_M: their own rules (a tensor they do not name keeps
 * the preset's type). */
static gtype lowest_bits_rule(state *s, const nf_preset_tensor *t, gtype ty, char *why, size_t size)
{
    if (has(t->name, "attn_v.weight")) {
        gtype to;
        if (s->gqa >= 4 || s->experts >= 4) {
            to = T_Q4_K;
            say(why, size, "attn_v: %d heads per kv head, %d experts (either >= 4) -> q4_k", s->gqa, s->experts);
        } else {
            to = iq2_s_or_m(s) ? T_IQ3_S : T_Q2_K;
            say(why, size, "attn_v: fewer than 4 heads per kv head and experts -> %s", TYPES[to].name);
        }
        s->i_attn_v++;
        return to;
    }
    if (s->experts == 8 && has(t->name, "attn_k.weight")) {
        say(why, size, "attn_k: 8 experts -> q4_k");
        return T_Q4_K;
    }
    if (has(t->name, "ffn_down")) {
        gtype to = ty;
        if (s->i_ffn_down < s->layers / 8) {
            to = iq2_s_or_m(s) ? T_IQ3_S : T_Q2_K;
            say(why, size, "ffn_down #%d (of %d layers): in the first eighth -> %s", s->i_ffn_down, s->layers,
                TYPES[to].name);
        } else {
            say(why, size, "ffn_down #%d (of %d layers): the preset's type -> %s", s->i_ffn_down, s->layers,
                TYPES[to].name);
        }
        s->i_ffn_down++;
        return to;
    }
    if (has(t->name, "attn_output.weight")) {
        gtype to = ty;
        if (s->experts == 8) to = T_Q5_K;
        else if (is(s, NF_PRESET_IQ1_S) || is(s, NF_PRESET_IQ1_M)) to = T_IQ2_XXS;
        else if (iq2_s_or_m(s)) to = T_IQ3_S;
        say(why, size, "attn_output%s -> %s",
            s->experts == 8 ? ": 8 experts"
            : to == ty      ? ": the preset's type"
                            : "",
            TYPES[to].name);
        return to;
    }
    say(why, size, "the preset's type -> %s", TYPES[ty].name);
    return ty;
}

static gtype attn_v_rule(state *s, gtype ty, char *why, size_t size)
{
    int i = s->i_attn_v, n = s->n_attn_v;
    gtype to = ty;
    const char *rule = "the preset's type";
    char buf[96];
    if (is(s, NF_PRESET_Q2_K)) {
        to = s->gqa >= 4 ? T_Q4_K : T_Q3_K;
        rule = s->gqa >= 4 ? "Q2_K, >= 4 heads per kv head" : "Q2_K";
    } else if (is(s, NF_PRESET_IQ3_XXS)) {
        to = s->gqa >= 4 ? T_Q4_K : !s->m->imatrix ? T_IQ3_S : T_IQ3_XXS;
        rule = s->gqa >= 4      ? "IQ3_XXS, >= 4 heads per kv head"
               : !s->m->imatrix ? "IQ3_XXS without imatrix"
                                : "IQ3_XXS with imatrix";
    } else if ((is(s, NF_PRESET_IQ3_XS) || is(s, NF_PRESET_IQ3_S)) && s->gqa >= 4) {
        to = T_Q4_K;
        rule = ">= 4 heads per kv head";
    } else if (is(s, NF_PRESET_IQ3_M)) {
        to = T_Q4_K;
        rule = "IQ3_M";
    } else if (is(s, NF_PRESET_Q3_K_M)) {
        to = i < 2 ? T_Q5_K : T_Q4_K;
        rule = i < 2 ? "Q3_K_M, one of the first two" : "Q3_K_M";
    } else if (is(s, NF_PRESET_Q3_K_L)) {
        to = T_Q5_K;
        rule = "Q3_K_L";
    } else if ((is(s, NF_PRESET_IQ4_NL) || is(s, NF_PRESET_IQ4_XS)) && s->gqa >= 4) {
        to = T_Q5_K;
        rule = ">= 4 heads per kv head";
    } else if ((is(s, NF_PRESET_Q4_K_M) || is(s, NF_PRESET_Q5_K_M)) && use_more_bits(i, n)) {
        to = T_Q6_K;
        rule = "use_more_bits";
    } else if (is(s, NF_PRESET_Q4_K_S) && i < 4) {
        to = T_Q5_K;
        rule = "Q4_K_S, one of the first four";
    }
    if (s->is_70b && (to == T_Q3_K || to == T_Q4_K)) {
        snprintf(buf, sizeof buf, "%s; a 70B model's attn_v gets q5_k", rule);
        rule = buf;
        to = T_Q5_K;
    }
    if (s->experts == 8) {
        to = T_Q8_0;
        rule = "8 experts";
    }
    say(why, size, "attn_v #%d of %d: %s -> %s", i, n, rule, TYPES[to].name);
    s->i_attn_v++;
    return to;
}

static gtype attn_qk_rule(const state *s, bool k, gtype ty, char *why, size_t size)
{
    const char *what = k ? "attn_k" : "attn_q";
    if (k && s->experts == 8) {
        say(why, size, "%s: 8 experts -> q8_0", what);
        return T_Q8_0;
    }
    gtype to = is(s, NF_PRESET_IQ3_XS) ? T_IQ3_XXS : is(s, NF_PRESET_IQ3_XXS) ? T_IQ2_S : ty;
    say(why, size, "%s%s -> %s", what, to == ty ? ": the preset's type" : "", TYPES[to].name);
    return to;
}

static nf_status ffn_down_rule(state *s, const nf_preset_tensor *t, gtype ty, gtype *out, char *why, size_t size,
                               nf_error *err)
{
    int i, n = s->layers;
    NF_TRY(layer_of(s, t, s->i_ffn_down, &i, err));
    gtype to = ty;
    const char *rule = "the preset's type";
    bool more = use_more_bits(i, n);
    if (is(s, NF_PRESET_Q2_K)) {
        to = T_Q3_K;
        rule = "Q2_K";
    } else if (is(s, NF_PRESET_IQ3_XXS) && !s->m->imatrix) {
        to = i < n / 8 ? T_Q4_K : T_Q3_K;
        rule = i < n / 8 ? "IQ3_XXS without imatrix, first eighth" : "IQ3_XXS without imatrix";
    } else if (is(s, NF_PRESET_Q3_K_M)) {
        to = i < n / 16 ? T_Q5_K : T_Q4_K;
        rule = i < n / 16 ? "Q3_K_M, first sixteenth" : "Q3_K_M";
    } else if (is(s, NF_PRESET_IQ3_M) && (i < n / 8 || (s->experts == 8 && more))) {
        to = T_Q4_K;
        rule = i < n / 8 ? "IQ3_M, first eighth" : "IQ3_M, 8 experts, use_more_bits";
    } else if (is(s, NF_PRESET_Q3_K_L)) {
        to = T_Q5_K;
        rule = "Q3_K_L";
    } else if (is(s, NF_PRESET_Q4_K_M)) {
        if (more) to = T_Q6_K, rule = "use_more_bits";
    } else if (i < n / 8 && (is(s, NF_PRESET_IQ4_NL) || is(s, NF_PRESET_IQ4_XS)) && !s->m->imatrix) {
        to = T_Q5_K;
        rule = "first eighth, without imatrix";
    } else if (is(s, NF_PRESET_Q5_K_M) && more) {
        to = T_Q6_K;
        rule = "use_more_bits";
    } else if (is(s, NF_PRESET_Q4_K_S) && i < n / 8) {
        to = T_Q5_K;
        rule = "Q4_K_S, first eighth";
    } else if ((is(s, NF_PRESET_Q4_0) || is(s, NF_PRESET_Q5_0)) && s->m->imatrix && i < n / 8) {
        to = is(s, NF_PRESET_Q4_0) ? T_Q4_1 : T_Q5_1;
        rule = "first eighth, with imatrix";
    }
    say(why, size, "ffn_down, layer %d of %d: %s -> %s", i, n, rule, TYPES[to].name);
    s->i_ffn_down++;
    *out = to;
    return NF_OK;
}

static gtype attn_output_rule(const state *s, gtype ty, char *why, size_t size)
{
    gtype to = ty;
    if (s->experts == 8) {
        static const nf_preset five[] = {NF_PRESET_Q2_K,   NF_PRESET_IQ3_XS, NF_PRESET_IQ3_XXS, NF_PRESET_Q3_K_S,
                                         NF_PRESET_Q3_K_M, NF_PRESET_IQ4_NL, NF_PRESET_Q4_K_S,  NF_PRESET_Q4_K_M,
                                         NF_PRESET_IQ3_S,  NF_PRESET_IQ3_M,  NF_PRESET_IQ4_XS};
        for (size_t k = 0; k < sizeof five / sizeof five[0]; k++)
            if (is(s, five[k])) to = T_Q5_K;
        say(why, size, "attn_output: 8 experts -> %s", TYPES[to].name);
        return to;
    }
    if (is(s, NF_PRESET_Q2_K)) to = T_Q3_K;
    else if (is(s, NF_PRESET_IQ3_XXS)) to = T_IQ3_S;
    else if (is(s, NF_PRESET_Q3_K_M)) to = T_Q4_K;
    else if (is(s, NF_PRESET_Q3_K_L)) to = T_Q5_K;
    else if (is(s, NF_PRESET_IQ3_M)) to = T_Q4_K;
    say(why, size, "attn_output%s -> %s", to == ty ? ": the preset's type" : "", TYPES[to].name);
    return to;
}

static gtype attn_qkv_rule(const state *s, gtype ty, char *why, size_t size)
{
    gtype to = ty;
    if (is(s, NF_PRESET_Q3_K_M) || is(s, NF_PRESET_Q3_K_L) || is(s, NF_PRESET_IQ3_M)) to = T_Q4_K;
    else if (is(s, NF_PRESET_Q4_K_M)) to = T_Q5_K;
    else if (is(s, NF_PRESET_Q5_K_M)) to = T_Q6_K;
    say(why, size, "attn_qkv%s -> %s", to == ty ? ": the preset's type" : "", TYPES[to].name);
    return to;
}

/* ffn_gate and ffn_up: IQ3_XS gives the middle layers iq3_xxs. */
static nf_status ffn_gate_up_rule(state *s, const nf_preset_tensor *t, bool up, gtype ty, gtype *out, char *why,
                                  size_t size, nf_error *err)
{
    int *counter = up ? &s->i_ffn_up : &s->i_ffn_gate, i, n = s->layers;
    NF_TRY(layer_of(s, t, *counter, &i, err));
    bool middle = i >= n / 8 && i < 7 * n / 8;
    *out = is(s, NF_PRESET_IQ3_XS) && middle ? T_IQ3_XXS : ty;
    say(why, size, "%s, layer %d of %d: %s -> %s", up ? "ffn_up" : "ffn_gate", i, n,
        *out != ty ? "IQ3_XS, a middle layer" : "the preset's type", TYPES[*out].name);
    (*counter)++;
    return NF_OK;
}

/* The type llama_tensor_get_type gives one tensor, before the row-length fallback. */
static nf_status rules(state *s, const nf_preset_tensor *t, gtype *out, char *why, size_t size, nf_error *err)
{
    gtype ty = PRESETS[s->p].base;
    const char *name = t->name;
    bool token_embd = !strcmp(name, "token_embd.weight") || !strcmp(name, "per_layer_token_embd.weight");
    *out = ty;
    if (!strcmp(name, "output.weight") || (!s->has_output && !strcmp(name, "token_embd.weight")))
        *out = output_rule(s, t, ty, why, size);
    else if (token_embd) *out = token_embd_rule(s, ty, why, size);
    else if (lowest_bits(s)) *out = lowest_bits_rule(s, t, ty, why, size);
    else if (has(name, "attn_v.weight")) *out = attn_v_rule(s, ty, why, size);
    else if (has(name, "attn_k.weight")) *out = attn_qk_rule(s, true, ty, why, size);
    else if (has(name, "attn_q.weight")) *out = attn_qk_rule(s, false, ty, why, size);
    else if (has(name, "ffn_down")) return ffn_down_rule(s, t, ty, out, why, size, err);
    else if (has(name, "attn_output.weight")) *out = attn_output_rule(s, ty, why, size);
    else if (has(name, "attn_qkv.weight")) *out = attn_qkv_rule(s, ty, why, size);
    else if (has(name, "ffn_gate")) return ffn_gate_up_rule(s, t, false, ty, out, why, size, err);
    else if (has(name, "ffn_up")) return ffn_gate_up_rule(s, t, true, ty, out, why, size, err);
    else say(why, size, "the preset's type -> %s", TYPES[ty].name);
    return NF_OK;
}

/* A row length the type's blocks do not divide: llama-quantize's fallback type, then f16 when
 * that one's blocks do not divide it either. */
static nf_status fallback(const nf_preset_tensor *t, gtype *ty, char *why, size_t size, nf_error *err)
{
    if (t->row % TYPES[*ty].block == 0) return NF_OK;
    gtype from = *ty;
    switch (from) {
    case T_IQ2_XXS:
    case T_IQ2_XS:
    case T_IQ2_S:
    case T_IQ3_XXS:
    case T_IQ3_S:
    case T_IQ1_S:
    case T_IQ1_M:
    case T_Q2_K:
    case T_Q3_K:
    case T_IQ4_XS: *ty = T_IQ4_NL; break;
    case T_Q4_K: *ty = T_Q5_0; break;
    case T_Q5_K: *ty = T_Q5_1; break;
    case T_Q6_K: *ty = T_Q8_0; break;
    default:
        return nf_error_set(err, NF_ERR_INVALID,
                            "tensor '%s': rows of %llu values are not whole %s blocks of %u, and llama-quantize has "
                            "no fallback for %s (\"Unsupported tensor size\")",
                            nf_esc(t->name).s, (unsigned long long)t->row, TYPES[from].name, TYPES[from].block,
                            TYPES[from].name);
    }
    if (t->row % TYPES[*ty].block != 0) *ty = T_F16;
    size_t used = strlen(why);
    snprintf(why + used, size - used, "; row of %llu not a multiple of %u: fallback %s", (unsigned long long)t->row,
             TYPES[from].block, TYPES[*ty].name);
    return NF_OK;
}

/* llama-quantize's order: by the N of blk.N (other names first), then by name. */
static int by_layer_then_name(const void *a, const void *b)
{
    const nf_preset_tensor *x = *(const nf_preset_tensor *const *)a, *y = *(const nf_preset_tensor *const *)b;
    int lx = -1, ly = -1;
    sscanf(x->name, "blk.%d.", &lx);
    sscanf(y->name, "blk.%d.", &ly);
    if (lx != ly) return lx < ly ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void init_state(state *s, nf_preset p, const nf_preset_model *m, const nf_preset_tensor *ts, size_t n)
{
    *s = (state){.p = p, .m = m, .layers = (int)m->layers, .experts = (int)m->experts};
    uint32_t kv = m->kv_heads ? m->kv_heads : m->heads;
    s->gqa = kv ? (int)(m->heads / kv) : 0;
    /* llama.cpp's model types: 80 layers of a dense llama with grouped kv heads, or of qwen2, are
     * 70B (docs/presets.md) */
    bool llama = (m->arch == NF_ARCH_LLAMA || m->arch == NF_ARCH_MISTRAL) && m->experts == 0;
    s->is_70b = m->layers == 80 && ((llama && kv != m->heads) || m->arch == NF_ARCH_QWEN2);
    for (size_t i = 0; i < n; i++) {
        const char *name = ts[i].name;
        if (has(name, "attn_v.weight") || has(name, "attn_qkv.weight") || has(name, "attn_kv_b.weight")) s->n_attn_v++;
        else if (!strcmp(name, "output.weight")) s->has_output = true;
    }
}

nf_status nf_preset_choose(nf_preset p, const nf_preset_model *model, nf_preset_tensor *tensors, size_t n,
                           nf_error *err)
{
    if ((unsigned)p >= NF_PRESET_COUNT) return nf_error_set(err, NF_ERR_USAGE, "preset %d is out of range", (int)p);
    nf_preset_tensor **order = malloc((n ? n : 1) * sizeof *order);
    if (!order) return nf_common_nomem(err);
    for (size_t i = 0; i < n; i++) order[i] = &tensors[i];
    qsort(order, n, sizeof *order, by_layer_then_name);
    state s;
    init_state(&s, p, model, tensors, n);
    nf_status st = NF_OK;
    for (size_t i = 0; st == NF_OK && i < n; i++) {
        nf_preset_tensor *t = order[i];
        const char *kept = kept_because(t);
        t->quantized = kept == NULL;
        t->type = NULL;
        t->needs_imatrix = false;
        if (kept) {
            say(t->why, sizeof t->why, "kept: %s", kept);
            continue;
        }
        gtype ty;
        st = rules(&s, t, &ty, t->why, sizeof t->why, err);
        if (st == NF_OK) st = fallback(t, &ty, t->why, sizeof t->why, err);
        if (st != NF_OK) break;
        t->type = TYPES[ty].name;
        /* the types llama-quantize refuses to write without an importance vector (llama.cpp
         * v0.5.0's tensor_requires_imatrix; docs/presets.md): token_embd and output never need one */
        bool ends = !strcmp(t->name, "token_embd.weight") || !strcmp(t->name, "output.weight");
        t->needs_imatrix = !ends && (ty == T_IQ3_XXS || ty == T_IQ2_XXS || ty == T_IQ2_XS || ty == T_IQ2_S ||
                                     ty == T_IQ1_S || ty == T_IQ1_M);
    }
    free(order);
    return st;
}
