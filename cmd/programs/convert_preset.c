/* ninfer-convert --preset NAME (docs/presets.md): the checkpoint's tensors under llama.cpp's
 * names (ninfer/names.h), llama-quantize's type for each (ninfer/preset.h), and quick mode's
 * rules that give them those types with ggml_quantize. */
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "convert_preset.h"
#include "table.h"

/* ---------------------------------------------------------------- the model */
/* A positive count of config member `key` (0 when absent and optional). */
static int config_count(const nf_cli *cli, const json_t *cfg, const char *file, const char *key, bool required,
                        uint32_t *out)
{
    const json_t *v = json_object_get(cfg, key);
    *out = 0;
    if (!v && !required) return NF_EXIT_OK;
    if (!v) return nf_cli_error(cli, NF_ERR_INVALID, "%s: no '%s': --preset needs it (docs/presets.md)", file, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 1000000)
        return nf_cli_error(cli, NF_ERR_INVALID, "%s: '%s' is not a count from 0 to 1000000", file, key);
    *out = (uint32_t)json_integer_value(v);
    return NF_EXIT_OK;
}

/* The architecture and hyperparameters from a Hugging Face config.json (a multimodal one's
 * text_config, where the language model's are). */
static int model_from_config(const nf_cli *cli, const char *dir, nf_preset_model *m)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    json_t *root = NULL;
    nf_error err;
    if (nf_source_read_config(path, &root, &err) != NF_OK) return nf_cli_report(cli, &err);
    const json_t *cfg = json_is_object(json_object_get(root, "text_config")) ? json_object_get(root, "text_config")
                                                                             : root;
    const char *type = json_string_value(json_object_get(cfg, "model_type"));
    int rc = NF_EXIT_OK;
    if (!type)
        rc = nf_cli_error(cli, NF_ERR_INVALID, "%s: no model_type: --preset needs the architecture",
                          nf_cli_name(path).s);
    else if (!nf_arch_lookup(type, &m->arch))
        rc = nf_cli_error(cli, NF_ERR_INVALID,
                          "%s: model_type '%s' is not an architecture --preset knows (llama, "
                          "mistral, qwen2, qwen3, qwen3_moe, gemma, gemma2, gemma3, deepseek_v2, deepseek_v3, "
                          "gpt_oss; docs/names.md)",
                          nf_cli_name(path).s, nf_cli_name(type).s);
    const char *name = nf_cli_name(path).s;
    if (rc == NF_EXIT_OK) rc = config_count(cli, cfg, name, "num_hidden_layers", true, &m->layers);
    if (rc == NF_EXIT_OK) rc = config_count(cli, cfg, name, "num_attention_heads", true, &m->heads);
    if (rc == NF_EXIT_OK) rc = config_count(cli, cfg, name, "num_key_value_heads", false, &m->kv_heads);
    static const char *const expert_keys[] = {"num_experts", "n_routed_experts", "num_local_experts"};
    for (size_t k = 0; rc == NF_EXIT_OK && !m->experts && k < 3; k++)
        rc = config_count(cli, cfg, name, expert_keys[k], false, &m->experts);
    json_decref(root);
    return rc;
}

/* A GGUF's key ARCH.SUFFIX as a count (element 0 of a per-layer array); 0 when absent and optional. */
static int gguf_count(const nf_cli *cli, const nf_source *s, const char *arch, const char *suffix, bool required,
                      uint32_t *out)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    const nf_gguf_kv *kv = nf_source_gguf_kv_find(s, key);
    *out = 0;
    if (!kv && !required) return NF_EXIT_OK;
    if (!kv || kv->count == 0)
        return nf_cli_error(cli, NF_ERR_INVALID, "%s: no '%s': --preset needs it (docs/presets.md)",
                            nf_cli_name(nf_source_path(s)).s, key);
    uint64_t v;
    nf_error err;
    if (nf_gguf_kv_uint(kv, 0, &v, &err) != NF_OK) return nf_cli_report(cli, &err);
    if (v > 1000000)
        return nf_cli_error(cli, NF_ERR_INVALID, "%s: '%s' is %" PRIu64 ", not a count from 0 to 1000000",
                            nf_cli_name(nf_source_path(s)).s, key, v);
    *out = (uint32_t)v;
    return NF_EXIT_OK;
}

static int model_from_gguf(const nf_cli *cli, const nf_source *s, nf_preset_model *m)
{
    const nf_gguf_kv *kv = nf_source_gguf_kv_find(s, "general.architecture");
    const char *arch = NULL;
    size_t len = 0;
    nf_error err;
    if (!kv)
        return nf_cli_error(cli, NF_ERR_INVALID, "%s: no general.architecture: --preset needs the architecture",
                            nf_cli_name(nf_source_path(s)).s);
    if (nf_gguf_kv_string(kv, 0, &arch, &len, &err) != NF_OK) return nf_cli_report(cli, &err);
    if (strlen(arch) != len || !nf_arch_lookup(arch, &m->arch))
        return nf_cli_error(cli, NF_ERR_INVALID,
                            "%s: general.architecture '%s' is not an architecture --preset "
                            "knows (llama, qwen2, qwen3, qwen3moe, gemma, gemma2, gemma3, deepseek2, gpt-oss; "
                            "docs/names.md)",
                            nf_cli_name(nf_source_path(s)).s, nf_cli_name(arch).s);
    int rc = gguf_count(cli, s, arch, "block_count", true, &m->layers);
    if (rc == NF_EXIT_OK) rc = gguf_count(cli, s, arch, "attention.head_count", true, &m->heads);
    if (rc == NF_EXIT_OK) rc = gguf_count(cli, s, arch, "attention.head_count_kv", false, &m->kv_heads);
    if (rc == NF_EXIT_OK) rc = gguf_count(cli, s, arch, "expert_count", false, &m->experts);
    return rc;
}

/* The directory of a safetensors source (the source itself, or the directory of its file). */
static void source_dir(const char *source, char *dir, size_t size)
{
    struct stat sb;
    const char *slash = strrchr(source, '/');
    if (stat(source, &sb) == 0 && S_ISDIR(sb.st_mode)) snprintf(dir, size, "%s", source);
    else if (!slash) snprintf(dir, size, ".");
    else snprintf(dir, size, "%.*s", (int)(slash - source) + (slash == source), source);
}

/* ---------------------------------------------------------------- names and stacks */
static bool is_float(const nf_source_tensor *t)
{
    if (t->ggml_type >= 0) return t->ggml_type == 0 || t->ggml_type == 1 || t->ggml_type == 30; /* F32 F16 BF16 */
    static const char *const floats[] = {"BF16", "F16", "F32", "F64"};
    for (size_t i = 0; i < 4; i++)
        if (!strcmp(t->type_name, floats[i])) return true;
    return false;
}

/* ggml_n_dims: the dimensions but outer ones of 1 (at least 1). */
static uint32_t ggml_dims(const nf_source_tensor *t)
{
    uint32_t d = t->rank, k = 0;
    while (d > 1 && t->shape[k] == 1) d--, k++;
    return d ? d : 1;
}

static const preset_run *sort_run; /* qsort's context: the choices sorted by llama.cpp name */
static int by_gguf(const void *a, const void *b)
{
    const preset_choice *x = &sort_run->c[*(const size_t *)a], *y = &sort_run->c[*(const size_t *)b];
    return strcmp(x->gguf, y->gguf);
}

/* One preset tensor per llama.cpp name: a stack of experts is one tensor of one more dimension. */
static int group(const nf_cli *cli, preset_run *run)
{
    size_t *idx = malloc((run->n ? run->n : 1) * sizeof *idx), m = 0;
    run->pts = calloc(run->n ? run->n : 1, sizeof *run->pts);
    if (!idx || !run->pts) {
        free(idx);
        return nf_cli_error(cli, NF_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < run->n; i++)
        if (run->c[i].gguf[0]) idx[m++] = i;
    sort_run = run;
    qsort(idx, m, sizeof *idx, by_gguf);
    int rc = NF_EXIT_OK;
    for (size_t i = 0; i < m && rc == NF_EXIT_OK; i++) {
        preset_choice *c = &run->c[idx[i]];
        const nf_source_tensor *t = nf_source_find(run->src, c->tensor);
        bool same = run->npts && !strcmp(run->pts[run->npts - 1].name, c->gguf);
        if (!same) {
            run->pts[run->npts] = (nf_preset_tensor){.name = c->gguf, .dims = ggml_dims(t), .row = t->row_elements};
            run->npts++;
        } else if (c->expert < 0 || run->pts[run->npts - 1].row != t->row_elements) {
            rc = nf_cli_error(cli, NF_ERR_INVALID,
                              "%s: tensor '%s' and another tensor both become llama.cpp's "
                              "'%s'%s",
                              nf_cli_name(nf_source_path(run->src)).s, nf_cli_name(c->tensor).s, nf_cli_name(c->gguf).s,
                              c->expert < 0 ? "" : " with rows of other lengths");
        } else {
            run->pts[run->npts - 1].dims = ggml_dims(t) + 1; /* more than one expert: ne[2] > 1 */
        }
        c->pt = run->npts - 1;
    }
    free(idx);
    return rc;
}

/* ---------------------------------------------------------------- the choice, per tensor */
/* The format and method a tensor's rule names, and why. */
static void give_format(preset_run *run, preset_choice *c)
{
    const nf_preset_tensor *p = &run->pts[c->pt];
    size_t used = (size_t)snprintf(c->why, sizeof c->why, "%s", p->why);
    c->type = p->quantized ? p->type : NULL;
    c->method = "cast_direct";
    if (!p->quantized || !strcmp(p->type, "f16")) {
        /* kept tensors: the converter's F32 (1-D tensors, routers); f16: no plain binary16 format here */
        c->format = "fp32";
        c->encodable = true;
        if (p->quantized)
            snprintf(c->why + used, sizeof c->why - used, "; no plain binary16 format here: fp32 (exact)");
        else snprintf(c->why + used, sizeof c->why - used, " -> fp32");
        return;
    }
    char name[32];
    snprintf(name, sizeof name, "gguf_%s", p->type);
    const nf_format *fmt = nf_format_lookup(name);
    c->format = fmt ? fmt->name : NULL;
    c->method = "ggml_quantize";
    c->encodable = fmt && nf_method_check_target(NF_METHOD_GGML_QUANTIZE, fmt, NULL) == NF_OK;
    if (!fmt) snprintf(c->why + used, sizeof c->why - used, " (no ninfer format holds %s)", p->type);
    else if (!c->encodable)
        snprintf(c->why + used, sizeof c->why - used, " (ggml_quantize has no encoder for %s yet)", fmt->name);
}

/* llama-quantize stops on a very-low-bit type without the tensor's importance vector. */
static int check_imatrix(const nf_cli *cli, const preset_run *run, const nf_imatrix *im, const preset_choice *c)
{
    const nf_preset_tensor *p = &run->pts[c->pt];
    if (!p->needs_imatrix) return NF_EXIT_OK;
    const nf_source_tensor *t = nf_source_find(run->src, c->tensor);
    const float *imp = NULL;
    nf_error err;
    /* (a stacked experts tensor [E, R, K] finds its entry of E vectors) */
    const uint64_t per = t->rank >= 3 ? t->shape[t->rank - 2] : t->rows, mats = per ? t->rows / per : 1;
    if (im && nf_imatrix_lookup_stack(im, c->tensor, mats, t->row_elements, &imp, NULL, NULL, &err) != NF_OK)
        return nf_cli_report(cli, &err);
    if (imp) return NF_EXIT_OK;
    return nf_cli_error(cli, NF_ERR_INVALID,
                        "preset %s: tensor '%s' (%s) gets %s, which llama-quantize refuses "
                        "without its importance vector (\"Missing importance matrix\"): %s",
                        nf_preset_name(run->preset), nf_cli_name(c->tensor).s, nf_cli_name(c->gguf).s, p->type,
                        im ? "the imatrix has no entry for it" : "give --imatrix FILE");
}

/* Each --rule GLOB=FORMAT[:METHOD]'s GLOB compiled once (a checkpoint may have 100,000 tensors):
 * sels[k], or NULL for a GLOB that does not compile, which matches nothing here (the recipe's
 * parser refuses it with its position).  Returns NULL when memory ran out. */
static nf_recipe_selector **compile_rules(const char *const *rules, size_t nrules)
{
    nf_recipe_selector **sels = calloc(nrules ? nrules : 1, sizeof *sels);
    for (size_t k = 0; sels && k < nrules; k++) {
        const char *eq = strrchr(rules[k], '=');
        char *glob = eq ? strndup(rules[k], (size_t)(eq - rules[k])) : NULL;
        nf_error err;
        if (glob && nf_recipe_selector_compile(glob, &sels[k], &err) != NF_OK) sels[k] = NULL;
        free(glob);
    }
    return sels;
}

static void free_rules(nf_recipe_selector **sels, size_t nrules)
{
    for (size_t k = 0; sels && k < nrules; k++) nf_recipe_selector_free(sels[k]);
    free(sels);
}

/* The last --rule whose GLOB matches `tensor` (a later rule of quick mode's recipe wins,
 * docs/presets.md), or NULL. */
static const char *replacing_rule(const char *tensor, nf_recipe_selector **sels, const char *const *rules,
                                  size_t nrules)
{
    const char *found = NULL;
    for (size_t k = 0; k < nrules; k++)
        if (sels[k] && nf_recipe_selector_match(sels[k], tensor)) found = rules[k];
    return found;
}

int preset_prepare(const nf_cli *cli, const char *source, const char *name, const char *imatrix,
                   const char *const *rules, size_t nrules, preset_run *run)
{
    nf_error err;
    memset(run, 0, sizeof *run);
    if (!nf_preset_lookup(name, &run->preset)) {
        char list[400] = "";
        for (unsigned p = 0; p < NF_PRESET_COUNT; p++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", p ? ", " : "",
                     nf_preset_name((nf_preset)p));
        return nf_cli_usage(cli, "unknown preset '%s' (one of %s)", nf_cli_name(name).s, list);
    }
    run->imatrix = imatrix;
    if (nf_source_open(source, &run->src, &err) != NF_OK) return nf_cli_report(cli, &err);
    char dir[4096];
    source_dir(source, dir, sizeof dir);
    int rc = nf_source_kind_of(run->src) == NF_SOURCE_GGUF ? model_from_gguf(cli, run->src, &run->model)
                                                           : model_from_config(cli, dir, &run->model);
    if (rc != NF_EXIT_OK) return rc;
    run->model.imatrix = imatrix != NULL;
    run->n = nf_source_tensor_count(run->src);
    run->c = calloc(run->n ? run->n : 1, sizeof *run->c);
    if (!run->c) return nf_cli_error(cli, NF_ERR_NOMEM, "out of memory");
    bool gguf = nf_source_kind_of(run->src) == NF_SOURCE_GGUF;
    for (size_t i = 0; i < run->n; i++) {
        const nf_source_tensor *t = nf_source_tensor_at(run->src, i);
        preset_choice *c = &run->c[i];
        nf_name_map how;
        c->tensor = t->name;
        c->floats = is_float(t);
        c->expert = -1;
        if (gguf) {
            snprintf(c->gguf, sizeof c->gguf, "%s", strlen(t->name) < sizeof c->gguf ? t->name : "");
        } else if (nf_hf_name_to_gguf(run->model.arch, t->name, c->gguf, sizeof c->gguf, &how)) {
            c->expert = how.stacked ? how.expert : -1;
        } else {
            snprintf(c->why, sizeof c->why, "no llama.cpp name under %s%s%s: quick mode keeps it",
                     nf_arch_name(run->model.arch), how.reason ? " (" : "", how.reason ? how.reason : "");
            if (how.reason) snprintf(c->why + strlen(c->why), sizeof c->why - strlen(c->why), ")");
        }
        if (!c->gguf[0] && c->floats) run->unmapped++;
    }
    if ((rc = group(cli, run)) != NF_EXIT_OK) return rc;
    if (nf_preset_choose(run->preset, &run->model, run->pts, run->npts, &err) != NF_OK) {
        nf_error_prefix(&err, "%s: preset %s", nf_cli_name(source).s, nf_preset_name(run->preset));
        return nf_cli_report(cli, &err);
    }
    nf_recipe_selector **sels = compile_rules(rules, nrules);
    if (!sels) return nf_cli_error(cli, NF_ERR_NOMEM, "out of memory");
    nf_imatrix *im = NULL;
    if (imatrix && nf_imatrix_open(imatrix, &im, &err) != NF_OK) {
        free_rules(sels, nrules);
        return nf_cli_report(cli, &err);
    }
    for (size_t i = 0; i < run->n && rc == NF_EXIT_OK; i++) {
        preset_choice *c = &run->c[i];
        if (!c->gguf[0] || !c->floats) continue;
        give_format(run, c);
        c->replaced_by = replacing_rule(c->tensor, sels, rules, nrules);
        if ((!c->format || !c->encodable) && !c->replaced_by) run->unencodable++;
        if (c->format) run->rules++;
        if (c->replaced_by) {
            size_t used = strlen(c->why);
            snprintf(c->why + used, sizeof c->why - used, "; --rule '%s' replaces it", nf_cli_line(c->replaced_by).s);
        }
        /* a label cut short (only with very long escaped names) ends in "..." */
        if (snprintf(c->label, sizeof c->label, "--preset %s (%s: %s)", nf_preset_name(run->preset),
                     nf_cli_name(c->gguf).s, c->why) >= (int)sizeof c->label)
            memcpy(c->label + sizeof c->label - 4, "...", 4);
        if (!c->replaced_by) rc = check_imatrix(cli, run, im, c);
    }
    nf_imatrix_close(im);
    free_rules(sels, nrules);
    return rc;
}

/* ---------------------------------------------------------------- quick mode's rules */
static void put_string(FILE *f, const char *s)
{
    json_t *j = json_string(s);
    char *t = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    fputs(t ? t : "\"\"", f);
    free(t);
    json_decref(j);
}

void preset_put_rules(FILE *f, const preset_run *run)
{
    for (size_t i = 0; i < run->n; i++) {
        const preset_choice *c = &run->c[i];
        if (!c->gguf[0] || !c->floats || !c->format) continue;
        fputs("  - match: ", f);
        put_string(f, c->tensor); /* an exact name selects exactly that tensor (docs/recipes.md) */
        fputs("\n    format: ", f);
        put_string(f, c->format);
        fputs("\n    method: ", f);
        put_string(f, c->method);
        fputs("\n", f);
        if (run->imatrix && !strcmp(c->method, "ggml_quantize")) fputs("    with: {imatrix: imatrix}\n", f);
    }
}

void preset_label_rules(nf_recipe *r, size_t first, const preset_run *run)
{
    size_t k = first;
    for (size_t i = 0; i < run->n && k < r->nrules; i++) {
        const preset_choice *c = &run->c[i];
        if (c->gguf[0] && c->floats && c->format) r->rules[k++].label = c->label;
    }
}

/* ---------------------------------------------------------------- --dry-run */
static const char *shown_type(const preset_choice *c)
{
    if (!c->gguf[0]) return "-";
    if (!c->floats) return "(not floats)";
    return c->type ? c->type : "(kept)";
}

int preset_print(const nf_cli *cli, const preset_run *run)
{
    nf_table t;
    nf_table_init(&t, "", "lllll", (const char *[]){"tensor", "llama.cpp name", "type", "format", "why"});
    for (size_t i = 0; i < run->n; i++) {
        const preset_choice *c = &run->c[i];
        nf_table_cell(&t, "%s", nf_cli_name(c->tensor).s);
        if (c->expert >= 0) nf_table_cell(&t, "%s[%d]", nf_cli_name(c->gguf).s, c->expert);
        else nf_table_cell(&t, "%s", c->gguf[0] ? nf_cli_name(c->gguf).s : "-");
        nf_table_cell(&t, "%s", shown_type(c));
        nf_table_cell(&t, "%s", c->format ? c->format : c->gguf[0] && c->floats ? "(none)" : "-");
        nf_table_cell(&t, "%s", c->gguf[0] && !c->floats ? "quick mode's rules (not floating point)" : c->why);
    }
    bool printed = nf_table_print(&t, stdout);
    nf_table_free(&t);
    if (!printed) return nf_cli_error(cli, NF_ERR_NOMEM, "out of memory for the preset's table");
    const nf_preset_model *m = &run->model;
    printf("preset %s (llama-quantize of llama.cpp 8784689f): %s, %u layers, %u heads, %u kv heads, %u experts, %s\n",
           nf_preset_name(run->preset), nf_arch_name(m->arch), m->layers, m->heads,
           m->kv_heads ? m->kv_heads : m->heads, m->experts, m->imatrix ? "with imatrix" : "no imatrix");
    if (run->unmapped)
        printf("%zu floating-point tensor%s without a llama.cpp name: kept as quick mode keeps them\n", run->unmapped,
               run->unmapped == 1 ? "" : "s");
    if (run->unencodable)
        printf("not convertible with this build: %zu tensor%s get a type it cannot write yet (see why)\n",
               run->unencodable, run->unencodable == 1 ? "" : "s");
    return NF_EXIT_OK;
}

json_t *preset_describe(const preset_run *run)
{
    json_t *tensors = json_array(), *unmapped = json_array();
    for (size_t i = 0; tensors && unmapped && i < run->n; i++) {
        const preset_choice *c = &run->c[i];
        if (!c->gguf[0]) {
            json_array_append_new(unmapped, json_string(c->tensor));
            continue;
        }
        json_t *o = json_pack("{s:s,s:s,s:b}", "tensor", c->tensor, "gguf", c->gguf, "floats", c->floats);
        if (!o) continue;
        if (c->expert >= 0) json_object_set_new(o, "expert", json_integer(c->expert));
        if (c->floats) {
            json_object_set_new(o, "type", c->type ? json_string(c->type) : json_null());
            json_object_set_new(o, "format", c->format ? json_string(c->format) : json_null());
            json_object_set_new(o, "method", json_string(c->method ? c->method : ""));
            json_object_set_new(o, "convertible", json_boolean((c->format && c->encodable) || c->replaced_by));
            if (c->replaced_by) json_object_set_new(o, "replaced_by", json_sprintf("--rule '%s'", c->replaced_by));
            json_object_set_new(o, "why", json_string(c->why));
        }
        json_array_append_new(tensors, o);
    }
    const nf_preset_model *m = &run->model;
    return json_pack("{s:s,s:s,s:s,s:{s:i,s:i,s:i,s:i,s:b},s:o,s:o,s:b}", "preset", nf_preset_name(run->preset),
                     "llama_cpp", "8784689fee07c6daabf3487d24e1535534ef6e6b", "architecture", nf_arch_name(m->arch),
                     "model", "layers", (int)m->layers, "heads", (int)m->heads, "kv_heads",
                     (int)(m->kv_heads ? m->kv_heads : m->heads), "experts", (int)m->experts, "imatrix", m->imatrix,
                     "tensors", tensors, "unmapped", unmapped, "convertible", run->unencodable == 0);
}

void preset_free(preset_run *run)
{
    free(run->c);
    free(run->pts);
    nf_source_close(run->src);
    memset(run, 0, sizeof *run);
}
