/* A checkpoint's quantization declaration (docs/dialects.md, "Declarations"): config.json
 * `quantization_config` with quant_method fp8 (DeepSeek), compressed-tensors, modelopt, gptq or
 * awq, ModelOpt's hf_quant_config.json, AutoGPTQ's quantize_config.json and AutoAWQ's
 * quant_config.json.  Only what the values depend on is kept -- block sizes, the
 * compressed-tensors weight schemes and their targets, ModelOpt's algorithm, GPTQ's and AWQ's
 * bits, group size and packing -- and the lists of modules left unquantized.  Every problem names the file and the key. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <jansson.h>

#include <ninfer/escape.h>

#include "common/fail.h"
#include "dialect/dialect_internal.h"

static nf_status bad(nf_error *err, const decl *d, const char *key, const char *fmt, const char *detail)
{
    return nf_error_set(err, NF_ERR_INVALID, "%s: %s: %s%s", d->path, key, fmt, detail ? detail : "");
}

/* ---------------------------------------------------------------- module lists */
static nf_status list_add(decl_list *l, const char *name, bool allow_class, nf_error *err, const decl *d,
                          const char *key)
{
    if (!name[0]) return bad(err, d, key, "an empty module name", NULL);
    /* A class name (no dot, a capital first letter: "Linear") stands for every module of the
     * class; without the model's code every quantized module is taken to be one. */
    if (allow_class && !strchr(name, '.') && name[0] >= 'A' && name[0] <= 'Z' && strncmp(name, "re:", 3) != 0) {
        l->any_class = true;
        return NF_OK;
    }
    bool pattern = strncmp(name, "re:", 3) == 0 || strpbrk(name, "*?[") != NULL;
    if (pattern) {
        if (l->npatterns >= DIALECT_MAX_IGNORE_PATTERNS)
            return nf_error_set(err, NF_ERR_INVALID, "%s: %s: more than %u patterns (the cap)", d->path, key,
                                DIALECT_MAX_IGNORE_PATTERNS);
        nf_recipe_selector *sel = NULL;
        nf_error e;
        nf_status st = nf_recipe_selector_compile(name, &sel, &e);
        if (st != NF_OK) return nf_error_set(err, st, "%s: %s: '%.200s': %s", d->path, key, name, e.message);
        nf_recipe_selector **grown = realloc(l->patterns, (l->npatterns + 1) * sizeof *grown);
        if (!grown) {
            nf_recipe_selector_free(sel);
            return nf_common_nomem(err);
        }
        l->patterns = grown;
        l->patterns[l->npatterns++] = sel;
        return NF_OK;
    }
    if (l->nnames >= DIALECT_MAX_IGNORE)
        return nf_error_set(err, NF_ERR_INVALID, "%s: %s: more than %u names (the cap)", d->path, key,
                            DIALECT_MAX_IGNORE);
    char **grown = realloc(l->names, (l->nnames + 1) * sizeof *grown);
    if (!grown) return nf_common_nomem(err);
    l->names = grown;
    if (!(l->names[l->nnames] = strdup(name))) return nf_common_nomem(err);
    if (nf_strset_insert(&l->exact, l->names[l->nnames], NULL, 0, NULL) < 0) {
        free(l->names[l->nnames]);
        return nf_common_nomem(err);
    }
    l->nnames++;
    return NF_OK;
}

/* A JSON list of module names (or absent) into l. */
static nf_status read_list(const json_t *v, decl_list *l, bool allow_class, const decl *d, const char *key,
                           nf_error *err)
{
    if (!v || json_is_null(v)) return NF_OK;
    if (json_is_string(v)) return list_add(l, json_string_value(v), allow_class, err, d, key);
    if (!json_is_array(v)) return bad(err, d, key, "expected a list of module names", NULL);
    size_t i;
    const json_t *e;
    json_array_foreach(v, i, e)
    {
        char k[1024];
        snprintf(k, sizeof k, "%s[%zu]", key, i);
        if (!json_is_string(e)) return bad(err, d, k, "expected a module name (a string)", NULL);
        NF_TRY(list_add(l, json_string_value(e), allow_class, err, d, k));
    }
    return NF_OK;
}

static void free_list(decl_list *l)
{
    nf_strset_free(&l->exact);
    for (size_t i = 0; i < l->nnames; i++) free(l->names[i]);
    free(l->names);
    for (size_t i = 0; i < l->npatterns; i++) nf_recipe_selector_free(l->patterns[i]);
    free(l->patterns);
    memset(l, 0, sizeof *l);
}

int nf_dialect_list_match(const decl_list *l, const char *module)
{
    if (nf_strset_find(&l->exact, module, NULL, NULL)) return 3;
    for (size_t i = 0; i < l->npatterns; i++)
        if (nf_recipe_selector_match(l->patterns[i], module)) return 2;
    return l->any_class ? 1 : 0;
}

/* ---------------------------------------------------------------- values */
static nf_status get_uint(const json_t *o, const char *name, uint64_t max, uint64_t *out, bool *present, const decl *d,
                          const char *ctx, nf_error *err)
{
    const json_t *v = json_object_get(o, name);
    *present = v && !json_is_null(v);
    if (!*present) return NF_OK;
    char key[1024];
    snprintf(key, sizeof key, "%s.%s", ctx, name);
    if (!json_is_integer(v) || json_integer_value(v) < 1 || (uint64_t)json_integer_value(v) > max) {
        char why[64];
        snprintf(why, sizeof why, "%llu", (unsigned long long)max);
        return bad(err, d, key, "expected an integer from 1 to ", why);
    }
    *out = (uint64_t)json_integer_value(v);
    return NF_OK;
}

static nf_status get_str(const json_t *o, const char *name, const char **out, const decl *d, const char *ctx,
                         nf_error *err)
{
    const json_t *v = json_object_get(o, name);
    *out = NULL;
    if (!v || json_is_null(v)) return NF_OK;
    if (!json_is_string(v)) {
        char key[1024];
        snprintf(key, sizeof key, "%s.%s", ctx, name);
        return bad(err, d, key, "expected a string", NULL);
    }
    *out = json_string_value(v);
    return NF_OK;
}

/* [rows, cols] of a block structure: a list of two integers (or "RxC", as some exports write). */
static nf_status get_block(const json_t *v, uint64_t block[2], const decl *d, const char *key, nf_error *err)
{
    if (json_is_array(v) && json_array_size(v) == 2) {
        for (size_t i = 0; i < 2; i++) {
            const json_t *e = json_array_get(v, i);
            if (!json_is_integer(e) || json_integer_value(e) < 1 || json_integer_value(e) > DIALECT_MAX_BLOCK)
                return bad(err, d, key, "expected two block sizes from 1 to 1048576", NULL);
            block[i] = (uint64_t)json_integer_value(e);
        }
        return NF_OK;
    }
    unsigned long long r = 0, c = 0;
    char tail;
    if (json_is_string(v) && sscanf(json_string_value(v), "%llux%llu%c", &r, &c, &tail) == 2 && r >= 1 && c >= 1 &&
        r <= DIALECT_MAX_BLOCK && c <= DIALECT_MAX_BLOCK) {
        block[0] = r;
        block[1] = c;
        return NF_OK;
    }
    return bad(err, d, key, "expected a block size [rows, cols]", NULL);
}

/* ---------------------------------------------------------------- compressed-tensors */
static nf_status read_scheme(const char *gname, const json_t *g, ct_scheme *s, const decl *d, nf_error *err)
{
    char ctx[128];
    snprintf(ctx, sizeof ctx, "quantization_config.config_groups.%.64s", gname);
    snprintf(s->name, sizeof s->name, "%.63s", gname);
    s->symmetric = -1;
    if (!json_is_object(g)) return bad(err, d, ctx, "expected an object", NULL);
    char key[512];
    snprintf(key, sizeof key, "%s.targets", ctx);
    NF_TRY(read_list(json_object_get(g, "targets"), &s->targets, true, d, key, err));
    if (s->targets.nnames + s->targets.npatterns > DIALECT_MAX_TARGETS)
        return bad(err, d, key, "more than 4096 targets (the cap)", NULL);
    const json_t *w = json_object_get(g, "weights");
    snprintf(key, sizeof key, "%s.weights", ctx);
    if (!json_is_object(w)) return bad(err, d, key, "expected the weights' scheme (an object)", NULL);
    const char *type = NULL, *strategy = NULL;
    NF_TRY(get_str(w, "type", &type, d, key, err));
    if (!type || (strcmp(type, "float") != 0 && strcmp(type, "int") != 0)) {
        char k2[640];
        snprintf(k2, sizeof k2, "%s.type", key);
        return bad(err, d, k2, "expected \"float\" or \"int\"", NULL);
    }
    s->is_float = strcmp(type, "float") == 0;
    bool present;
    uint64_t bits = 0;
    NF_TRY(get_uint(w, "num_bits", 8, &bits, &present, d, key, err));
    if (!present) {
        char k2[640];
        snprintf(k2, sizeof k2, "%s.num_bits", key);
        return bad(err, d, k2, "missing: the bits of a code", NULL);
    }
    s->num_bits = (unsigned)bits;
    NF_TRY(get_str(w, "strategy", &strategy, d, key, err));
    if (strategy) {
        static const char *const known[] = {"tensor", "channel", "group", "block", "tensor_group", NULL};
        bool ok = false;
        for (size_t i = 0; known[i]; i++) ok = ok || strcmp(strategy, known[i]) == 0;
        char k2[640];
        snprintf(k2, sizeof k2, "%s.strategy", key);
        if (!ok)
            return bad(err, d, k2,
                       "not a strategy of a supported dialect (tensor, channel, group, block, "
                       "tensor_group): ",
                       strategy);
        snprintf(s->strategy, sizeof s->strategy, "%s", strategy);
    }
    NF_TRY(get_uint(w, "group_size", DIALECT_MAX_BLOCK, &s->group_size, &present, d, key, err));
    const json_t *bs = json_object_get(w, "block_structure");
    if (bs && !json_is_null(bs)) {
        char k2[640];
        snprintf(k2, sizeof k2, "%s.block_structure", key);
        NF_TRY(get_block(bs, s->block, d, k2, err));
    }
    const json_t *sym = json_object_get(w, "symmetric");
    if (sym && !json_is_null(sym)) {
        if (!json_is_boolean(sym)) {
            char k2[640];
            snprintf(k2, sizeof k2, "%s.symmetric", key);
            return bad(err, d, k2, "expected true or false", NULL);
        }
        s->symmetric = json_is_true(sym);
    }
    if (!strcmp(s->strategy, "group") && !s->group_size) {
        char k2[640];
        snprintf(k2, sizeof k2, "%s.group_size", key);
        return bad(err, d, k2, "missing: strategy group needs it", NULL);
    }
    if (!strcmp(s->strategy, "block") && !s->block[0]) {
        char k2[640];
        snprintf(k2, sizeof k2, "%s.block_structure", key);
        return bad(err, d, k2, "missing: strategy block needs it", NULL);
    }
    return NF_OK;
}

static nf_status read_ct(const json_t *q, decl *d, nf_error *err)
{
    d->kind = DECL_CT;
    const char *format = NULL;
    NF_TRY(get_str(q, "format", &format, d, "quantization_config", err));
    snprintf(d->what, sizeof d->what, "config.json quantization_config (compressed-tensors%s%.40s)", format ? ", " : "",
             format ? format : "");
    const json_t *groups = json_object_get(q, "config_groups");
    if (!json_is_object(groups) || json_object_size(groups) == 0)
        return bad(err, d, "quantization_config.config_groups", "expected at least one group (an object)", NULL);
    if (json_object_size(groups) > DIALECT_MAX_GROUPS)
        return bad(err, d, "quantization_config.config_groups", "more than 64 groups (the cap)", NULL);
    d->schemes = calloc(json_object_size(groups), sizeof *d->schemes);
    if (!d->schemes) return nf_common_nomem(err);
    const char *name;
    const json_t *g;
    json_object_foreach((json_t *)groups, name, g) NF_TRY(read_scheme(name, g, &d->schemes[d->nschemes++], d, err));
    return read_list(json_object_get(q, "ignore"), &d->ignore, false, d, "quantization_config.ignore", err);
}

/* ---------------------------------------------------------------- DeepSeek / fine-grained FP8 */
static nf_status read_deepseek(const json_t *q, decl *d, nf_error *err)
{
    d->kind = DECL_DEEPSEEK;
    const char *fmt = NULL;
    NF_TRY(get_str(q, "fmt", &fmt, d, "quantization_config", err));
    if (fmt && strcmp(fmt, "e4m3") != 0 && strcmp(fmt, "e5m2") != 0)
        return bad(err, d, "quantization_config.fmt", "expected e4m3 or e5m2, not ", fmt);
    d->e5m2 = fmt && !strcmp(fmt, "e5m2");
    d->has_fmt = fmt != NULL;
    const json_t *bs = json_object_get(q, "weight_block_size");
    if (bs && !json_is_null(bs)) {
        NF_TRY(get_block(bs, d->block, d, "quantization_config.weight_block_size", err));
        d->has_block = true;
    }
    snprintf(d->what, sizeof d->what, "config.json quantization_config (fp8, block-scaled%s)", d->e5m2 ? ", e5m2" : "");
    NF_TRY(read_list(json_object_get(q, "modules_to_not_convert"), &d->ignore, false, d,
                     "quantization_config.modules_to_not_convert", err));
    return read_list(json_object_get(q, "ignored_layers"), &d->ignore, false, d, "quantization_config.ignored_layers",
                     err);
}

/* ---------------------------------------------------------------- gpt-oss MXFP4 */
/* transformers' Mxfp4Config as gpt-oss ships it: quant_method mxfp4 and the modules left in
 * BF16 (attention, router, embeddings); the experts' <p>_blocks / <p>_scales say the rest. */
static nf_status read_mxfp4(const json_t *q, decl *d, nf_error *err)
{
    d->kind = DECL_MXFP4;
    snprintf(d->what, sizeof d->what, "config.json quantization_config (mxfp4)");
    return read_list(json_object_get(q, "modules_to_not_convert"), &d->ignore, false, d,
                     "quantization_config.modules_to_not_convert", err);
}

/* ---------------------------------------------------------------- fbgemm FP8 */
/* transformers' FbgemmFp8Config (Meta's FP8 releases): E4M3 weights with an F32 scale per output
 * row, the modules left in BF16, and an activation bound that concerns inference only. */
static nf_status read_fbgemm(const json_t *q, decl *d, nf_error *err)
{
    d->kind = DECL_FBGEMM;
    snprintf(d->what, sizeof d->what, "config.json quantization_config (fbgemm_fp8)");
    return read_list(json_object_get(q, "modules_to_not_convert"), &d->ignore, false, d,
                     "quantization_config.modules_to_not_convert", err);
}

/* ---------------------------------------------------------------- bitsandbytes */
/* transformers' BitsAndBytesConfig: 4-bit (load_in_4bit, NF4 or FP4) or 8-bit; the modules left
 * unquantized; the tensors and their JSON states say the rest (scan_bnb.c). */
static nf_status read_bnb(const json_t *q, decl *d, nf_error *err)
{
    d->kind = DECL_BNB;
    const json_t *four = json_object_get(q, "load_in_4bit"), *type = json_object_get(q, "bnb_4bit_quant_type");
    bool is4 = json_is_true(four) || json_is_true(json_object_get(q, "_load_in_4bit"));
    snprintf(d->what, sizeof d->what, "config.json quantization_config (bitsandbytes %s)",
             !is4                                                              ? "8-bit"
             : json_is_string(type) && !strcmp(json_string_value(type), "fp4") ? "4-bit FP4"
                                                                               : "4-bit NF4");
    const json_t *skip = json_object_get(q, "llm_int8_skip_modules");
    if (!skip || json_is_null(skip)) return NF_OK;
    return read_list(skip, &d->ignore, false, d, "quantization_config.llm_int8_skip_modules", err);
}

/* ---------------------------------------------------------------- ModelOpt */
static nf_status read_modelopt(const json_t *q, decl *d, const char *ctx, const char *algo_key, nf_error *err)
{
    const char *algo = NULL;
    NF_TRY(get_str(q, algo_key, &algo, d, ctx, err));
    char key[128];
    snprintf(key, sizeof key, "%s.%s", ctx, algo_key);
    if (!algo) return bad(err, d, key, "missing: the quantization algorithm", NULL);
    static const char *const known[] = {"FP8", "FP8_PER_CHANNEL_PER_TOKEN", "FP8_PB_WO", "NVFP4", NULL};
    bool ok = false;
    for (size_t i = 0; known[i]; i++) ok = ok || strcmp(algo, known[i]) == 0;
    if (!ok)
        return bad(err, d, key,
                   "not an algorithm of a supported dialect (FP8, FP8_PER_CHANNEL_PER_TOKEN, FP8_PB_WO, "
                   "NVFP4): ",
                   algo);
    if (d->kind == DECL_MODELOPT && strcmp(d->algo, algo) != 0) {
        char why[160];
        snprintf(why, sizeof why, "%s, but the other ModelOpt declaration says %s: conflicting dialect markers", algo,
                 d->algo);
        return bad(err, d, key, why, NULL);
    }
    d->kind = DECL_MODELOPT;
    snprintf(d->algo, sizeof d->algo, "%s", algo);
    bool present;
    uint64_t group = 0;
    NF_TRY(get_uint(q, "group_size", DIALECT_MAX_BLOCK, &group, &present, d, ctx, err));
    if (present && !strcmp(algo, "NVFP4") && group != 16) {
        snprintf(key, sizeof key, "%s.group_size", ctx);
        return bad(err, d, key, "NVFP4 blocks are 16 values", NULL);
    }
    snprintf(key, sizeof key, "%s.exclude_modules", ctx);
    NF_TRY(read_list(json_object_get(q, "exclude_modules"), &d->ignore, false, d, key, err));
    snprintf(key, sizeof key, "%s.ignore", ctx);
    return read_list(json_object_get(q, "ignore"), &d->ignore, false, d, key, err);
}

/* ---------------------------------------------------------------- formats not read yet */
nf_status nf_dialect_not_read(nf_error *err, const char *where, const char *format, const char *how)
{
    return nf_error_set(err, NF_ERR_INVALID,
                        "%s: %s (%s): not read yet, its weights are no dialect ninfer-tools reads (docs/dialects.md, "
                        "\"Quantized checkpoints not read yet\"); convert from the BF16 release of the model",
                        where, format, how);
}

/* ", 4-bit, group 128" from a declaration's integer keys (absent ones left out). */
static void bits_group(const json_t *o, const char *bits_key, const char *group_key, char *buf, size_t size)
{
    const json_t *b = json_object_get(o, bits_key), *g = json_object_get(o, group_key);
    size_t used = 0;
    buf[0] = '\0';
    if (json_is_number(b)) used += (size_t)snprintf(buf, size, ", %g-bit", json_number_value(b));
    if (json_is_integer(g) && used < size)
        snprintf(buf + used, size - used, ", group %lld", (long long)json_integer_value(g));
}

/* config.json quantization_config.quant_method of a producer no dialect covers: the format's
 * name; NULL for the methods declare.c reads (fp8, compressed-tensors, modelopt, gptq, awq, mxfp4,
 * fbgemm_fp8, bitsandbytes). */
static const char *foreign_method(const char *method)
{
    static const char *const known[][2] = {
        {"exl2", "EXL2"},
        {"hqq", "HQQ"},
        {"aqlm", "AQLM"},
        {"quanto", "Quanto"},
        {"eetq", "EETQ"},
        {"torchao", "torchao"},
        {"bitnet", "BitNet"},
        {"vptq", "VPTQ"},
        {"higgs", "HIGGS"},
        {"spqr", "SpQR"},
        {"fp_quant", "FP-Quant"},
        {"auto-round", "AutoRound"},
        {"intel/auto-round", "AutoRound"},
        {"quark", "Quark"},
    };
    if (!strcmp(method, "fp8") || !strcmp(method, "compressed-tensors") || !strcmp(method, "modelopt") ||
        !strcmp(method, "gptq") || !strcmp(method, "awq") || !strcmp(method, "mxfp4") ||
        !strcmp(method, "fbgemm_fp8") || !strcmp(method, "bitsandbytes"))
        return NULL;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(method, known[i][0])) return known[i][1];
    return "";
}

/* A compressed-tensors format (quantization_config.format, a group's format, sparsity_config.
 * format) that no dialect here reads, by name; NULL for the ones read and for "dense". */
static const char *foreign_ct_format(const char *format)
{
    if (!strcmp(format, "sparse-24-bitmask")) return "2:4 sparse";
    if (!strcmp(format, "sparse-bitmask")) return "sparse";
    if (!strcmp(format, "marlin-24")) return "2:4 sparse GPTQ";
    return NULL;
}

/* A compressed-tensors sparsity_config at `key` that is not dense: the weights are stored
 * compressed (values and a bitmask), which no dialect reads. */
static nf_status sparsity_foreign(const json_t *sp, const char *path, const char *key, nf_error *err)
{
    if (!sp || json_is_null(sp)) return NF_OK;
    const json_t *f = json_object_get(sp, "format");
    const char *fs = json_is_string(f) ? json_string_value(f) : "";
    if (!strcmp(fs, "dense")) return NF_OK; /* weights stored as they are: plain values */
    const char *name = foreign_ct_format(fs);
    char where[2048], how[1024];
    snprintf(how, sizeof how, "compressed-tensors %s, declared in config.json %s", nf_esc(fs[0] ? fs : "(no format)").s,
             key);
    snprintf(where, sizeof where, "%s: %s", path, key);
    return nf_dialect_not_read(err, where, name ? name : "sparse", how);
}

/* The formats of a compressed-tensors declaration no dialect reads: its quantization format, a
 * group's, and a sparsity_config that is not dense (2:4 sparse weights are stored compressed). */
static nf_status ct_foreign(const json_t *q, const char *path, nf_error *err)
{
    char where[2048], how[1024];
    const json_t *f = json_object_get(q, "format");
    const char *name = json_is_string(f) ? foreign_ct_format(json_string_value(f)) : NULL;
    if (name) {
        snprintf(where, sizeof where, "%s: quantization_config.format", path);
        snprintf(how, sizeof how, "compressed-tensors %s, declared in config.json quantization_config",
                 json_string_value(f));
        return nf_dialect_not_read(err, where, name, how);
    }
    const json_t *groups = json_object_get(q, "config_groups");
    const char *gname;
    const json_t *g;
    if (json_is_object(groups)) json_object_foreach((json_t *)groups, gname, g)
        {
            f = json_object_get(g, "format");
            if (!json_is_string(f) || !(name = foreign_ct_format(json_string_value(f)))) continue;
            snprintf(where, sizeof where, "%s: quantization_config.config_groups.%s.format", path, nf_esc(gname).s);
            snprintf(how, sizeof how, "compressed-tensors %s, declared in config.json quantization_config",
                     json_string_value(f));
            return nf_dialect_not_read(err, where, name, how);
        }
    return sparsity_foreign(json_object_get(q, "sparsity_config"), path, "quantization_config.sparsity_config", err);
}

/* MLX (mlx-lm): a `quantization` object, and since 2024 the same in `quantization_config`,
 * with bits and group_size but no quant_method: affine 2- to 8-bit codes in U32 words, with
 * per-group scales and biases. */
static bool is_mlx(const json_t *q)
{
    return json_is_object(q) && !json_object_get(q, "quant_method") && json_is_integer(json_object_get(q, "bits")) &&
           json_is_integer(json_object_get(q, "group_size"));
}

/* MLX's modes other than affine (mxfp4, nvfp4, mxfp8: scales without biases) are no dialect
 * here: refused by name. */
static nf_status mlx_foreign_mode(const json_t *q, const char *cfg_path, const char *key, nf_error *err)
{
    const json_t *mode = json_object_get(q, "mode");
    if (!mode || (json_is_string(mode) && !strcmp(json_string_value(mode), "affine"))) return NF_OK;
    char where[2048], how[1024], detail[64], name[96];
    bits_group(q, "bits", "group_size", detail, sizeof detail);
    snprintf(where, sizeof where, "%s: %s.mode", cfg_path, key);
    snprintf(how, sizeof how, "mlx-lm%s, declared in config.json %s", detail, key);
    snprintf(name, sizeof name, "MLX %.64s", json_is_string(mode) ? nf_esc(json_string_value(mode)).s : "(a mode)");
    return nf_dialect_not_read(err, where, name, how);
}

/* The path of file `name` beside the checkpoint's weights -- in the directory given, or in the
 * directory of the file or index given, where its config.json is found -- when it is a regular
 * file or a link to one.  A source parsed from memory has no directory. */
static bool beside(const nf_source *src, const char *name, char *path, size_t size)
{
    const char *given = nf_source_path(src);
    struct stat st;
    if (!given || stat(given, &st) != 0) return false;
    const char *slash = strrchr(given, '/');
    int n;
    size_t len = strlen(given);
    while (len > 1 && given[len - 1] == '/') len--; /* "ckpt/" names ckpt/quantize_config.json */
    if (S_ISDIR(st.st_mode)) n = snprintf(path, size, "%.*s/%s", (int)len, given, name);
    else if (slash) n = snprintf(path, size, "%.*s/%s", (int)(slash - given), given, name);
    else n = snprintf(path, size, "%s", name);
    return n >= 0 && (size_t)n < size && stat(path, &st) == 0 && S_ISREG(st.st_mode); /* hub snapshots: links */
}

/* The declarations of producers no dialect covers, in config.json (quantization_config,
 * quantization, sparsity_config): any of them refuses the checkpoint (docs/dialects.md). */
static nf_status foreign_decl(const json_t *cfg, const char *cfg_path, nf_error *err)
{
    char where[2048], how[1024], detail[64];
    const json_t *q = cfg ? json_object_get(cfg, "quantization_config") : NULL;
    if (json_is_object(q)) {
        const json_t *m = json_object_get(q, "quant_method");
        if (is_mlx(q)) return mlx_foreign_mode(q, cfg_path, "quantization_config", err);
        const char *name = json_is_string(m) ? foreign_method(json_string_value(m)) : NULL;
        if (name) {
            bits_group(q, json_object_get(q, "w_bit") ? "w_bit" : "bits",
                       json_object_get(q, "q_group_size") ? "q_group_size" : "group_size", detail, sizeof detail);
            snprintf(where, sizeof where, "%s: quantization_config.quant_method", cfg_path);
            snprintf(how, sizeof how, "quant_method '%s'%s, declared in config.json quantization_config",
                     nf_esc(json_string_value(m)).s, detail);
            return nf_dialect_not_read(err, where, name[0] ? name : "an unknown quantization", how);
        }
        if (json_is_string(m) && !strcmp(json_string_value(m), "compressed-tensors"))
            NF_TRY(ct_foreign(q, cfg_path, err));
    }
    const json_t *mq = cfg ? json_object_get(cfg, "quantization") : NULL;
    if ((!q || json_is_null(q)) && is_mlx(mq)) return mlx_foreign_mode(mq, cfg_path, "quantization", err);
    if (cfg) NF_TRY(sparsity_foreign(json_object_get(cfg, "sparsity_config"), cfg_path, "sparsity_config", err));
    return NF_OK;
}

static nf_status set_path(decl *d, const char *path)
{
    free(d->path);
    d->path = strdup(path);
    return d->path ? NF_OK : NF_ERR_NOMEM;
}

/* ---------------------------------------------------------------- GPTQ and AWQ */
/* A GPTQ or AWQ integer key (bits, group size) of object o at ctx; -1 is allowed where whole
 * rows form one group.  *present says whether it was given. */
static nf_status get_int(const json_t *o, const char *name, int64_t min, int64_t max, int64_t *out, bool *present,
                         const decl *d, const char *ctx, nf_error *err)
{
    const json_t *v = json_object_get(o, name);
    *present = v && !json_is_null(v);
    if (!*present) return NF_OK;
    char key[1024];
    snprintf(key, sizeof key, "%s%s%s", ctx, ctx[0] ? "." : "", name);
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max ||
        (min < 0 && json_integer_value(v) == 0)) {
        char why[96];
        snprintf(why, sizeof why, "%lld to %lld%s", (long long)(min < 0 ? 1 : min), (long long)max,
                 min < 0 ? ", or -1 for one group per row" : "");
        return bad(err, d, key, "expected an integer from ", why);
    }
    *out = (int64_t)json_integer_value(v);
    return NF_OK;
}

/* The first of two spellings of a key that o has (AutoAWQ's w_bit / q_group_size beside
 * transformers' bits / group_size). */
static const char *spelling(const json_t *o, const char *a, const char *b) { return json_object_get(o, a) ? a : b; }

/* "config.json quantization_config (GPTQ, 4-bit, group 128, act-order, v1)": what a GPTQ or
 * AWQ declaration says, for plans and messages. */
static void packed_what(decl *d, const char *format, const char *where)
{
    char bits[16] = "", group[48] = "";
    if (d->has_bits) snprintf(bits, sizeof bits, ", %u-bit", d->bits);
    if (d->has_group && d->group < 0) snprintf(group, sizeof group, ", one group per row");
    else if (d->has_group) snprintf(group, sizeof group, ", group %lld", (long long)d->group);
    const char *gptq = d->kind != DECL_GPTQ ? "" : d->gptq_v2 ? ", gptq_v2" : ", v1";
    snprintf(d->what, sizeof d->what, "%s (%s%s%s%s%s)", where, format, bits, group,
             d->kind == DECL_GPTQ && d->desc_act ? ", act-order" : "", gptq);
}

/* GPTQ (AutoGPTQ, GPTQModel, optimum): bits 2, 3, 4 or 8, group_size, desc_act and the
 * checkpoint format (gptq: zero points stored minus one; gptq_v2: as they are), from
 * config.json quantization_config (ctx) or quantize_config.json (ctx ""). */
static nf_status read_gptq(const json_t *q, decl *d, const char *ctx, const char *where, nf_error *err)
{
    int64_t bits = 0;
    char key[1024];
    d->kind = DECL_GPTQ;
    NF_TRY(get_int(q, "bits", 2, 8, &bits, &d->has_bits, d, ctx, err));
    snprintf(key, sizeof key, "%s%sbits", ctx, ctx[0] ? "." : "");
    if (d->has_bits && bits != 2 && bits != 3 && bits != 4 && bits != 8)
        return bad(err, d, key, "GPTQ codes are 2, 3, 4 or 8 bits", NULL);
    d->bits = (unsigned)bits;
    NF_TRY(get_int(q, "group_size", -1, 1 << 24, &d->group, &d->has_group, d, ctx, err));
    const json_t *da = json_object_get(q, "desc_act"), *sym = json_object_get(q, "sym");
    d->desc_act = json_is_true(da);
    d->has_sym = json_is_boolean(sym);
    d->sym = json_is_true(sym);
    const char *fkey = spelling(q, "checkpoint_format", "format"), *format = NULL;
    NF_TRY(get_str(q, fkey, &format, d, ctx, err));
    if (format && strcmp(format, "gptq") != 0 && strcmp(format, "gptq_v2") != 0) {
        char w[2048], how[512];
        snprintf(w, sizeof w, "%s: %s%s%s", d->path, ctx, ctx[0] ? "." : "", fkey);
        snprintf(how, sizeof how, "GPTQ repacked for the %.64s kernels, declared in %s", nf_esc(format).s, where);
        return nf_dialect_not_read(err, w, "GPTQ", how);
    }
    d->gptq_v2 = format && !strcmp(format, "gptq_v2");
    packed_what(d, "GPTQ", where);
    return NF_OK;
}

/* AWQ (AutoAWQ, llm-compressor's legacy export): 4-bit codes, the group size, and the version
 * that says how they are packed (GEMM or GEMV; the others are kernels' repackings). */
static nf_status read_awq(const json_t *q, decl *d, const char *ctx, const char *where, nf_error *err)
{
    int64_t bits = 0;
    char key[1024];
    d->kind = DECL_AWQ;
    const char *bkey = spelling(q, "w_bit", "bits");
    NF_TRY(get_int(q, bkey, 1, 8, &bits, &d->has_bits, d, ctx, err));
    snprintf(key, sizeof key, "%s%s%s", ctx, ctx[0] ? "." : "", bkey);
    if (d->has_bits && bits != 4) return bad(err, d, key, "AWQ codes are 4 bits", NULL);
    d->bits = 4;
    NF_TRY(get_int(q, spelling(q, "q_group_size", "group_size"), -1, 1 << 24, &d->group, &d->has_group, d, ctx, err));
    const char *version = NULL;
    NF_TRY(get_str(q, "version", &version, d, ctx, err));
    if (version && strcasecmp(version, "gemm") != 0 && strcasecmp(version, "gemv") != 0) {
        char w[2048], how[512];
        snprintf(w, sizeof w, "%s: %s%sversion", d->path, ctx, ctx[0] ? "." : "");
        snprintf(how, sizeof how, "AutoAWQ version %.64s (a kernel's repacking, not GEMM or GEMV), declared in %s",
                 nf_esc(version).s, where);
        return nf_dialect_not_read(err, w, "AWQ", how);
    }
    if (version) snprintf(d->awq_version, sizeof d->awq_version, "%s", strcasecmp(version, "gemv") ? "gemm" : "gemv");
    packed_what(d, !version ? "AWQ" : !strcmp(d->awq_version, "gemv") ? "AWQ GEMV" : "AWQ GEMM", where);
    return NF_OK;
}

/* ---------------------------------------------------------------- MLX */
static int cmp_override(const void *a, const void *b)
{
    return strcmp(((const mlx_override *)a)->module, ((const mlx_override *)b)->module);
}

/* mlx-lm's declaration at ctx (`quantization_config` or `quantization`): bits (2, 3, 4, 5, 6,
 * 8) and group_size (32, 64, 128), and for mixed quantization a member per module, its own
 * {bits, group_size} or false (left unquantized). */
static nf_status read_mlx(const json_t *q, decl *d, const char *ctx, const char *where, nf_error *err)
{
    int64_t bits = 0;
    char key[1024];
    d->kind = DECL_MLX;
    NF_TRY(get_int(q, "bits", 2, 8, &bits, &d->has_bits, d, ctx, err));
    NF_TRY(get_int(q, "group_size", 32, 128, &d->group, &d->has_group, d, ctx, err));
    snprintf(key, sizeof key, "%s.bits", ctx);
    if (bits == 7) return bad(err, d, key, "MLX codes are 2, 3, 4, 5, 6 or 8 bits", NULL);
    snprintf(key, sizeof key, "%s.group_size", ctx);
    if (d->group != 32 && d->group != 64 && d->group != 128)
        return bad(err, d, key, "MLX groups are 32, 64 or 128 values", NULL);
    d->bits = (unsigned)bits;
    const char *name;
    const json_t *v;
    json_object_foreach((json_t *)q, name, v)
    {
        if (!json_is_object(v) && !json_is_false(v)) continue; /* bits, group_size, mode */
        if (d->nmlx >= DIALECT_MAX_IGNORE) return bad(err, d, ctx, "more than 65536 modules (the cap)", NULL);
        mlx_override *grown = realloc(d->mlx, (d->nmlx + 1) * sizeof *grown);
        if (!grown) return nf_common_nomem(err);
        d->mlx = grown;
        mlx_override *o = &d->mlx[d->nmlx];
        *o = (mlx_override){strdup(name), d->bits, (uint64_t)d->group, json_is_object(v)};
        if (!o->module) return nf_common_nomem(err);
        d->nmlx++;
        if (!o->quantized) continue;
        char sub[1200];
        snprintf(sub, sizeof sub, "%s.%s", ctx, name);
        int64_t b = d->bits, g = d->group;
        bool given;
        NF_TRY(get_int(v, "bits", 2, 8, &b, &given, d, sub, err));
        NF_TRY(get_int(v, "group_size", 32, 128, &g, &given, d, sub, err));
        if (b == 7 || (g != 32 && g != 64 && g != 128))
            return bad(err, d, sub, "MLX codes are 2, 3, 4, 5, 6 or 8 bits in groups of 32, 64 or 128", NULL);
        o->bits = (unsigned)b;
        o->group = (uint64_t)g;
    }
    if (d->nmlx) qsort(d->mlx, d->nmlx, sizeof *d->mlx, cmp_override); /* d->mlx is NULL without overrides */
    char detail[64];
    bits_group(q, "bits", "group_size", detail, sizeof detail);
    snprintf(d->what, sizeof d->what, "%s (MLX affine%s%s)", where, detail, d->nmlx ? ", mixed" : "");
    return NF_OK;
}

bool nf_dialect_mlx_module(const decl *d, const char *module, size_t len, unsigned *bits, uint64_t *group)
{
    *bits = d->bits;
    *group = (uint64_t)d->group;
    size_t lo = 0, hi = d->nmlx;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strncmp(d->mlx[mid].module, module, len);
        if (c == 0 && d->mlx[mid].module[len]) c = 1;
        if (c == 0) {
            *bits = d->mlx[mid].bits;
            *group = d->mlx[mid].group;
            return d->mlx[mid].quantized;
        }
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return true;
}

/* AutoGPTQ (<= 0.4) and AutoAWQ (before 2023-10-31) declared their format in a file of its own
 * beside the weights, quantize_config.json and quant_config.json: read when config.json
 * declares nothing (GPTQModel writes both, alike).  A quant_method there that is neither GPTQ
 * nor AWQ is refused by name. */
static nf_status read_own_file(const nf_source *src, decl *d, nf_error *err)
{
    static const char *const files[][2] = {{"quantize_config.json", "gptq"}, {"quant_config.json", "awq"}};
    for (size_t i = 0; i < 2; i++) {
        char path[4096];
        if (!beside(src, files[i][0], path, sizeof path)) continue;
        json_t *j = NULL;
        NF_TRY(nf_source_read_config(path, &j, err));
        nf_status st = set_path(d, path) == NF_OK ? NF_OK : nf_common_nomem(err);
        const json_t *m = json_object_get(j, "quant_method");
        const char *method = json_is_string(m) ? json_string_value(m) : files[i][1];
        const char *other = foreign_method(method);
        if (st == NF_OK && other) {
            char how[512];
            snprintf(how, sizeof how, "quant_method '%.64s', declared in %s", nf_esc(method).s, files[i][0]);
            st = nf_dialect_not_read(err, path, other[0] ? other : "an unknown quantization", how);
        } else if (st == NF_OK && !strcmp(method, "gptq")) st = read_gptq(j, d, "", files[i][0], err);
        else if (st == NF_OK && !strcmp(method, "awq")) st = read_awq(j, d, "", files[i][0], err);
        else if (st == NF_OK) st = bad(err, d, "quant_method", "not GPTQ or AWQ, which this file declares: ", method);
        json_decref(j);
        return st;
    }
    return NF_OK;
}

/* ---------------------------------------------------------------- the files */

nf_status nf_dialect_read_decl(const nf_source *src, decl *d, nf_error *err)
{
    memset(d, 0, sizeof *d);
    const char *cfg_path = nf_source_companion(src, "config.json");
    const char *hf_path = nf_source_companion(src, "hf_quant_config.json");
    json_t *cfg = NULL, *hf = NULL;
    nf_status st = NF_OK;
    if (cfg_path) st = nf_source_read_config(cfg_path, &cfg, err);
    if (st == NF_OK && hf_path) st = nf_source_read_config(hf_path, &hf, err);
    const json_t *q = cfg ? json_object_get(cfg, "quantization_config") : NULL;
    if (st == NF_OK) st = foreign_decl(cfg, cfg_path, err);
    const json_t *mq = cfg ? json_object_get(cfg, "quantization") : NULL;
    if (st == NF_OK && (is_mlx(q) || ((!q || json_is_null(q)) && is_mlx(mq)))) {
        bool in_config = is_mlx(q);
        if (set_path(d, cfg_path) != NF_OK) st = nf_common_nomem(err);
        if (st == NF_OK)
            st = read_mlx(in_config ? q : mq, d, in_config ? "quantization_config" : "quantization",
                          in_config ? "config.json quantization_config" : "config.json quantization", err);
    } else if (st == NF_OK && q && !json_is_null(q)) {
        if (set_path(d, cfg_path) != NF_OK) st = nf_common_nomem(err);
        const char *method = NULL;
        if (st == NF_OK && !json_is_object(q)) st = bad(err, d, "quantization_config", "expected an object", NULL);
        if (st == NF_OK) st = get_str(q, "quant_method", &method, d, "quantization_config", err);
        if (st == NF_OK && !method)
            st = bad(err, d, "quantization_config.quant_method", "missing: which quantization the checkpoint holds",
                     NULL);
        if (st == NF_OK) {
            if (!strcmp(method, "fp8")) st = read_deepseek(q, d, err);
            else if (!strcmp(method, "compressed-tensors")) st = read_ct(q, d, err);
            else if (!strcmp(method, "modelopt")) {
                st = read_modelopt(q, d, "quantization_config", "quant_algo", err);
                if (st == NF_OK)
                    snprintf(d->what, sizeof d->what, "config.json quantization_config (ModelOpt %s)", d->algo);
            } else if (!strcmp(method, "gptq"))
                st = read_gptq(q, d, "quantization_config", "config.json quantization_config", err);
            else if (!strcmp(method, "awq"))
                st = read_awq(q, d, "quantization_config", "config.json quantization_config", err);
            else if (!strcmp(method, "mxfp4")) st = read_mxfp4(q, d, err);
            else if (!strcmp(method, "fbgemm_fp8")) st = read_fbgemm(q, d, err);
            else if (!strcmp(method, "bitsandbytes")) st = read_bnb(q, d, err);
            else
                st = bad(err, d, "quantization_config.quant_method",
                         "not a supported dialect (fp8, compressed-tensors, modelopt, gptq, awq, mxfp4, fbgemm_fp8, "
                         "bitsandbytes; "
                         "docs/dialects.md): ",
                         method);
        }
    }
    if (st == NF_OK && d->kind == DECL_NONE && !hf) st = read_own_file(src, d, err);
    if (st == NF_OK && hf) {
        if (d->kind != DECL_NONE && d->kind != DECL_MODELOPT)
            st = nf_error_set(err, NF_ERR_INVALID,
                              "%s: ModelOpt's declaration, but %s declares %s: conflicting dialect markers", hf_path,
                              d->path, d->what);
        const json_t *hq = json_object_get(hf, "quantization");
        if (st == NF_OK && set_path(d, hf_path) != NF_OK) st = nf_common_nomem(err);
        if (st == NF_OK && !json_is_object(hq)) st = bad(err, d, "quantization", "expected an object", NULL);
        if (st == NF_OK) st = read_modelopt(hq, d, "quantization", "quant_algo", err);
        if (st == NF_OK) snprintf(d->what, sizeof d->what, "hf_quant_config.json (ModelOpt %s)", d->algo);
    }
    json_decref(cfg);
    json_decref(hf);
    if (st != NF_OK) nf_dialect_free_decl(d);
    return st;
}

void nf_dialect_free_decl(decl *d)
{
    for (size_t i = 0; i < d->nschemes; i++) free_list(&d->schemes[i].targets);
    for (size_t i = 0; i < d->nmlx; i++) free(d->mlx[i].module);
    free(d->mlx);
    free(d->schemes);
    free_list(&d->ignore);
    free(d->path);
    memset(d, 0, sizeof *d);
}
