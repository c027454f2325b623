/* Fuzz target: YAML recipe text through nf_recipe_parse (libyaml events -> positioned tree ->
 * validated rules); when it parses, its sources are overridden the way --source does, and the
 * rules are resolved against a fixed small Llama-shaped tensor list (exact names, globs,
 * regular expressions, `when` predicates, groups of names that may or may not exist).
 *
 * The text is passed as is (not NUL-terminated).  Relative paths resolve against a directory
 * that does not exist, so nothing the recipe names is ever opened.  `${VAR}` expands from the
 * environment like in the real program, for the variables the command line allows
 * (nf_recipe_options): the harness allows and sets MODEL_DIR and MODEL_GGUF (the shipped
 * recipes' variables) and NINFER_FUZZ_EMPTY (the empty string), and allows HOME; any other
 * variable leaves its path unexpanded (nf_recipe_source.blocked). */
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "fuzz_target.h"

static const uint64_t SHAPE_EMB[2] = {64, 32}, SHAPE_Q[2] = {32, 32}, SHAPE_KV[2] = {16, 32}, SHAPE_UP[2] = {64, 32},
                      SHAPE_DOWN[2] = {32, 64}, SHAPE_NORM[1] = {32}, SHAPE_GG[2] = {32, 256}, SHAPE_3D[3] = {4, 8, 32},
                      SHAPE_0[1] = {0};

static const nf_recipe_tensor TENSORS[] = {
    {"model.embed_tokens.weight", "BF16", 2, SHAPE_EMB, 64 * 32, false},
    {"model.layers.0.self_attn.q_proj.weight", "BF16", 2, SHAPE_Q, 32 * 32, false},
    {"model.layers.0.self_attn.k_proj.weight", "BF16", 2, SHAPE_KV, 16 * 32, false},
    {"model.layers.0.self_attn.v_proj.weight", "BF16", 2, SHAPE_KV, 16 * 32, false},
    {"model.layers.0.self_attn.o_proj.weight", "BF16", 2, SHAPE_Q, 32 * 32, false},
    {"model.layers.0.mlp.gate_proj.weight", "BF16", 2, SHAPE_UP, 64 * 32, false},
    {"model.layers.0.mlp.up_proj.weight", "BF16", 2, SHAPE_UP, 64 * 32, false},
    {"model.layers.0.mlp.down_proj.weight", "BF16", 2, SHAPE_DOWN, 32 * 64, false},
    {"model.layers.0.input_layernorm.weight", "F32", 1, SHAPE_NORM, 32, false},
    {"model.layers.0.post_attention_layernorm.weight", "F32", 1, SHAPE_NORM, 32, false},
    {"model.layers.1.mlp.down_proj.weight", "BF16", 2, SHAPE_DOWN, 32 * 64, false},
    {"model.layers.1.mlp.experts.weight", "F8_E4M3", 3, SHAPE_3D, 4 * 8 * 32, false},
    {"model.norm.weight", "F32", 1, SHAPE_NORM, 32, false},
    {"lm_head.weight", "BF16", 2, SHAPE_EMB, 64 * 32, false},
    {"blk.0.attn_q.weight", "Q4_K", 2, SHAPE_GG, 32 * 256, false},
    {"token_embd.weight", "Q8_0", 2, SHAPE_GG, 32 * 256, false},
    {"model.scale", "F32", 0, SHAPE_NORM, 1, false},
    {"model.empty", "I32", 1, SHAPE_0, 0, false},
    {"weird name with spaces [x]*?", "U8", 1, SHAPE_NORM, 32, false},
};
#define N_TENSORS (sizeof TENSORS / sizeof TENSORS[0])

static void touch_recipe(const nf_recipe *r)
{
    fz_consume_str(r->path);
    fz_consume_str(r->dir);
    fz_consume_str(r->output_name);
    fz_consume_str(r->default_format);
    fz_consume_str(r->default_method);
    for (size_t i = 0; i < r->nsources; i++) {
        fz_consume_str(r->sources[i].name);
        fz_consume_str(r->sources[i].path);
        fz_consume_str(r->sources[i].written);
        fz_consume_str(r->sources[i].blocked);
        /* a path is known, or held back by a variable nobody allowed */
        if (!r->sources[i].path == !r->sources[i].blocked) abort();
        if (nf_recipe_find_source(r, r->sources[i].name) == NULL) abort();
    }
    for (size_t i = 0; i < r->ncomponents; i++) {
        const nf_recipe_component *c = &r->components[i];
        fz_consume_str(c->name);
        fz_consume_str(c->config_from);
        for (size_t k = 0; k < c->nresources; k++) {
            fz_consume_str(c->resources[k].role);
            fz_consume_str(c->resources[k].source);
            fz_consume_str(c->resources[k].path);
            fz_consume_str(c->resources[k].written);
            fz_consume_str(c->resources[k].blocked);
        }
    }
    for (size_t i = 0; i < r->nrules; i++) {
        const nf_recipe_rule *rule = &r->rules[i];
        for (size_t k = 0; k < rule->nmatch; k++) fz_consume_str(rule->match[k]);
        fz_consume_str(rule->when_dtype);
        fz_consume_str(rule->format);
        fz_consume_str(rule->layout);
        fz_consume_str(rule->method);
        fz_consume_str(nf_recipe_default_method(rule->format));
    }
    for (size_t i = 0; i < r->ngroups; i++) {
        fz_consume_str(r->groups[i].id);
        for (size_t k = 0; k < r->groups[i].nmembers; k++) fz_consume_str(r->groups[i].members[k]);
    }
}

/* The variables the shipped recipes use, so that their seeds get past `sources`. */
static void set_environment(void)
{
    static int done;
    if (done) return;
    done = 1;
    setenv("MODEL_DIR", "/nonexistent/ninfer-fuzz/model", 1);
    setenv("MODEL_GGUF", "/nonexistent/ninfer-fuzz/model.gguf", 1);
    setenv("NINFER_FUZZ_EMPTY", "", 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    set_environment();
    nf_recipe *r = NULL;
    nf_error err;
    nf_error_clear(&err);
    static const char *const allowed[] = {"MODEL_DIR", "MODEL_GGUF", "NINFER_FUZZ_EMPTY", "HOME"};
    nf_recipe_options opt = {.allow_env = allowed, .nallow_env = sizeof allowed / sizeof allowed[0]};
    nf_status st = nf_recipe_parse_ex((const char *)data, size, "fuzz.yaml", "/nonexistent/ninfer-fuzz", &opt, &r,
                                      &err);
    fz_note("nf_recipe_parse", st == NF_OK, err.message);
    if (st != NF_OK) {
        fz_consume_str(err.message);
        return 0;
    }
    touch_recipe(r);
    nf_recipe_choice choices[N_TENSORS];
    memset(choices, 0, sizeof choices);
    st = nf_recipe_resolve(r, TENSORS, N_TENSORS, choices, &err);
    fz_note("nf_recipe_resolve", st == NF_OK, err.message);
    if (st == NF_OK) {
        for (size_t i = 0; i < N_TENSORS; i++) {
            if (!choices[i].method || (!choices[i].skip && !choices[i].format)) abort();
            fz_consume_str(choices[i].format);
            fz_consume_str(choices[i].layout);
            fz_consume_str(choices[i].method);
        }
    } else {
        fz_consume_str(err.message);
    }
    /* --source overrides, then resolve again: the override must not disturb the rules. */
    if (nf_recipe_set_source(r, "base", "/nonexistent/ninfer-fuzz/base", &err) == NF_OK &&
        nf_recipe_set_source(r, "imatrix", "imatrix.gguf", &err) == NF_OK) {
        if (nf_recipe_find_source(r, "base") == NULL) abort();
        nf_recipe_resolve(r, TENSORS, N_TENSORS, choices, &err);
    }
    touch_recipe(r);
    nf_recipe_free(r);
    return 0;
}
