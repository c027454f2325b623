/* ninfer-convert's quick mode (docs/ninfer-convert.md, Description): the recipe a command line
 * without --recipe stands for, written as YAML text for the same parser, and the labels that make
 * its messages name the command line's words (convert.h). */
#define _XOPEN_SOURCE 700 /* realpath (XSI): quick mode's hub-cache links */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ninfer/ninfer.h>

#include "common/utf8.h"

#include "cli.h"
#include "convert.h"
#include "table.h"

/* ---------------------------------------------------------------- quick mode */
static void put_yaml_string(FILE *f, const char *s)
{
    json_t *j = json_string(s);
    char *t = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    fputs(t ? t : "\"\"", f);
    free(t);
    json_decref(j);
}

/* One rule: `quantized` -1 no such predicate, 0 / 1 when.quantized false / true; format NULL
 * leaves it to the defaults (import_encoded then picks the format holding the words). */
static void put_rule(FILE *f, const char *match, const char *dtype, int rank, int quantized, const char *format,
                     const char *method, bool optional)
{
    fputs("  - match: ", f);
    put_yaml_string(f, match);
    fputs("\n", f);
    if (optional) fputs("    optional: true\n", f);
    if (dtype || rank >= 0 || quantized >= 0) {
        fputs("    when:\n", f);
        if (dtype) {
            fputs("      dtype: ", f);
            put_yaml_string(f, dtype);
            fputs("\n", f);
        }
        if (rank >= 0) fprintf(f, "      rank: %d\n", rank);
        if (quantized >= 0) fprintf(f, "      quantized: %s\n", quantized ? "true" : "false");
    }
    if (format) {
        fputs("    format: ", f);
        put_yaml_string(f, format);
        fputs("\n", f);
    }
    if (method) {
        fputs("    method: ", f);
        put_yaml_string(f, method);
        fputs("\n", f);
    }
}

/* Quick mode's rules, in order: what it keeps as it is (by source dtype), the floats it gives
 * --format, the quantized weights' rule, then each --rule. */
static const struct {
    const char *dtype, *format;
} quick_keep[] = {{"BF16", "bf16"},    {"F32", "fp32"},  {"F16", "fp32"},  {"F64", "fp32"},  {"F8_E4M3", "bf16"},
                  {"F8_E5M2", "bf16"}, {"I8", "int32"},  {"I16", "int32"}, {"I32", "int32"}, {"I64", "int32"},
                  {"U8", "int32"},     {"U16", "int32"}, {"U32", "int32"}, {"BOOL", "int32"}};
#define QUICK_KEEP (sizeof quick_keep / sizeof quick_keep[0])
static const char *const quick_floats[] = {"BF16", "F32", "F16", "F64"};
#define QUICK_FLOATS (sizeof quick_floats / sizeof quick_floats[0])
/* GGUF block types that no format holds exactly (docs/formats.md 8.5): ggml's values get --format
 * as the floats do (a K-quant file's Q5_1 fallback tensors), where the other block types import. */
static const char *const quick_values[] = {"Q4_1", "Q5_1", "Q8_K"};
#define QUICK_VALUES (sizeof quick_values / sizeof quick_values[0])

/* The files a runtime needs beside the weights of a Hugging Face checkpoint: quick mode keeps
 * them as resources of the text component, each one at most QUICK_RESOURCE_MAX bytes
 * (docs/ninfer-convert.md, "Quick mode's resources"); config.json is the component's config. */
static const char *const quick_resources[] = {
    "tokenizer.json",
    "tokenizer.model",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "merges.txt",
    "generation_config.json",
    "chat_template.jinja",
    "chat_template.json",
    "preprocessor_config.json",
};
#define QUICK_RESOURCES (sizeof quick_resources / sizeof quick_resources[0])

/* A GGUF file, by its magic (the source reader decides the same way). */
static bool quick_is_gguf(const char *source)
{
    char magic[4] = "";
    FILE *f = fopen(source, "rb");
    bool gguf = f && fread(magic, 1, 4, f) == 4 && memcmp(magic, "GGUF", 4) == 0;
    if (f) fclose(f);
    return gguf;
}

/* The directory whose files stand beside a source's weights: the source itself, or the
 * directory of a safetensors file or index; none for GGUF (its tokenizer is in the file). */
bool convert_quick_source_dir(const char *source, char *dir, size_t size)
{
    struct stat sb;
    if (stat(source, &sb) != 0) return false;
    if (S_ISDIR(sb.st_mode)) return (size_t)snprintf(dir, size, "%s", source) < size;
    if (quick_is_gguf(source)) return false;
    const char *slash = strrchr(source, '/');
    if (!slash) return (size_t)snprintf(dir, size, ".") < size;
    return (size_t)snprintf(dir, size, "%.*s", (int)(slash - source) + (slash == source), source) < size;
}

/* A Hugging Face hub cache holds a snapshot's files (models--ORG--NAME/snapshots/REV/FILE) as
 * links to the same model's content-addressed blobs (models--ORG--NAME/blobs/HASH): such a link
 * is the checkpoint's own file, and the one place outside the directory a kept resource may come
 * from.  Any other link out of it is refused as a recipe's would be (docs/security.md 7.1, F2):
 * --allow-path or --no-resources decides. */
nf_status convert_allow_hub_blobs(nf_recipe *r, const char *dir, nf_error *err)
{
    char *real = realpath(dir, NULL);
    char blobs[4200];
    const char *snap = real ? strrchr(real, '/') : NULL; /* .../snapshots/REV */
    size_t at = snap ? (size_t)(snap - real) : 0;
    bool hub = snap && at >= 10 && strncmp(real + at - 10, "/snapshots", 10) == 0;
    if (hub) snprintf(blobs, sizeof blobs, "%.*s/blobs/", (int)(at - 10), real);
    nf_status st = NF_OK;
    for (size_t i = 0; hub && st == NF_OK && i < QUICK_RESOURCES; i++) {
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, quick_resources[i]);
        char *target = realpath(path, NULL);
        if (target && strncmp(target, blobs, strlen(blobs)) == 0 && !strchr(target + strlen(blobs), '/'))
            st = nf_recipe_allow_path(r, target, err);
        free(target);
    }
    free(real);
    return st;
}

/* The resources quick mode keeps, as the components of its recipe (nothing when there are
 * none).  A file over the cap is refused (*too_big gets its path), never embedded. */
static void put_quick_components(FILE *f, const char *source, const convert_opts *o, char *too_big, size_t size)
{
    char dir[4096];
    if (o->no_resources || !convert_quick_source_dir(source, dir, sizeof dir)) return;
    bool any = false, config = false;
    char path[8192];
    struct stat sb;
    snprintf(path, sizeof path, "%s/config.json", dir);
    config = stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
    for (size_t i = 0; i < QUICK_RESOURCES; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, quick_resources[i]);
        if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size == 0) continue;
        if ((uint64_t)sb.st_size > QUICK_RESOURCE_MAX) {
            if (!*too_big) snprintf(too_big, size, "%s", path);
            continue;
        }
        if (!any)
            fputs(config ? "components:\n  text:\n    config: {from: base}\n    resources:\n"
                         : "components:\n  text:\n    config: {}\n    resources:\n",
                  f);
        any = true;
        char ref[128]; /* SOURCE/file: the source's directory, wherever --source or a plan puts it */
        snprintf(ref, sizeof ref, "base/%s", quick_resources[i]);
        fputs("      ", f);
        put_yaml_string(f, quick_resources[i]);
        fputs(": ", f);
        put_yaml_string(f, ref);
        fputs("\n", f);
    }
}

/* The recipe quick mode stands for, as YAML text (the same parser and rules as a file). */
char *convert_quick_recipe(const char *source, const convert_opts *o, size_t *len, char *too_big, size_t size)
{
    char *text = NULL;
    FILE *f = open_memstream(&text, len);
    if (!f) return NULL;
    fputs("recipe: 1\nsources:\n  base: ", f);
    put_yaml_string(f, source);
    if (o->imatrix) { /* (main sets it again as the command line's, as it does base) */
        fputs("\n  imatrix: ", f);
        put_yaml_string(f, o->imatrix);
    }
    fputs("\noutput:\n  name: ", f);
    const char *slash = strrchr(o->output, '/');
    char name[256];
    snprintf(name, sizeof name, "%s", slash ? slash + 1 : o->output);
    char *dot = strstr(name, ".ninfer");
    if (dot && dot != name) *dot = '\0';
    put_yaml_string(f, name);
    fputs("\n", f);
    put_quick_components(f, source, o, too_big, size);
    /* --target-bpw: the budget chooses the floats' format (and method, unless --method) */
    if (o->has_target_bpw) fprintf(f, "budget:\n  bits_per_weight: %.17g\n", o->target_bpw);
    fputs(o->no_resources && quick_is_gguf(source) ? "defaults:\n  format: \"bf16\"\n  gguf_metadata: drop\nrules:\n"
                                                   : "defaults:\n  format: \"bf16\"\nrules:\n",
          f);
    const char *format = o->has_target_bpw ? NF_RECIPE_BUDGET : o->format;
    const char *method = o->method ? o->method : o->has_target_bpw ? NULL : nf_recipe_default_method(o->format);
    for (size_t i = 0; i < QUICK_KEEP; i++)
        put_rule(f, "*", quick_keep[i].dtype, -1, 0, quick_keep[i].format, "cast_direct", true);
    /* --preset: no rule for every float tensor; one per tensor llama-quantize names, below */
    for (size_t i = 0; !o->preset && i < QUICK_FLOATS; i++)
        put_rule(f, "*", quick_floats[i], 2, 0, format, method, true);
    /* Quantized weights of a checkpoint dialect (docs/dialects.md): imported as they are into the
     * format that holds their words, or, with --requantize, given FORMAT from their values. */
    if (o->requantize) put_rule(f, "*", NULL, -1, 1, o->format, method, true);
    else put_rule(f, "*", NULL, -1, 1, NULL, "import_encoded", true);
    /* (after the rule above: a later rule's fields win; GGUF sources only) */
    const bool gguf = quick_is_gguf(source);
    for (size_t i = 0; gguf && !o->preset && i < QUICK_VALUES; i++)
        put_rule(f, "*", quick_values[i], 2, -1, format, method, true);
    if (o->prun) preset_put_rules(f, o->prun);
    for (size_t i = 0; i < o->nrules; i++) {
        char glob[1024];
        snprintf(glob, sizeof glob, "%s", o->rules[i]);
        char *eq = strrchr(glob, '=');
        *eq = '\0';
        char *fmt = eq + 1, *colon = strchr(fmt, ':');
        if (colon) *colon = '\0';
        const char *rule_method = colon ? colon + 1 : nf_recipe_default_method(fmt);
        put_rule(f, glob, NULL, -1, -1, fmt, rule_method, false);
        /* beside --preset, a --rule into ggml_quantize is encoded with --imatrix as the preset's
         * rules are (llama-quantize's --tensor-type; docs/presets.md) */
        if (o->prun && o->imatrix && rule_method && !strcmp(rule_method, "ggml_quantize"))
            fputs("    with: {imatrix: imatrix}\n", f);
    }
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* Messages name what the command line said, not lines of the recipe quick mode wrote: one label
 * per rule of quick_recipe, in its order (the keep rules, the float rules, the quantized weights'
 * rule, then each --rule). */
void convert_label_quick_rules(nf_recipe *r, const convert_opts *o)
{
    static char format_label[200];
    static const char keep_label[] = "quick mode (the tensors it keeps as they are)";
    static const char import_label[] = "quick mode (quantized weights imported as they are; --requantize gives "
                                       "them --format)";
    static const char requant_label[] = "quick mode (--requantize: quantized weights given --format)";
    char what[96];
    if (o->preset) snprintf(what, sizeof what, "--preset %.64s", o->preset);
    else if (o->has_target_bpw) snprintf(what, sizeof what, "--target-bpw %g", o->target_bpw);
    else snprintf(what, sizeof what, "--format %.64s", o->format);
    snprintf(format_label, sizeof format_label, "quick mode (%s%s%.64s for rank-2 float tensors)", what,
             o->method ? " --method " : "", o->method ? o->method : "");
    r->defaults_label = "quick mode (bf16 for the other tensors)";
    static char budget_label[96];
    snprintf(budget_label, sizeof budget_label, "quick mode (--target-bpw %g)", o->target_bpw);
    if (o->has_target_bpw) r->budget.label = budget_label;
    size_t i = 0;
    for (; i < r->nrules && i < QUICK_KEEP; i++) r->rules[i].label = keep_label;
    for (; !o->preset && i < r->nrules && i < QUICK_KEEP + QUICK_FLOATS; i++) r->rules[i].label = format_label;
    if (i < r->nrules) r->rules[i++].label = o->requantize ? requant_label : import_label;
    const nf_recipe_source *base = nf_recipe_find_source(r, "base");
    const bool gguf = base && base->path && quick_is_gguf(base->path);
    for (size_t v = 0; gguf && !o->preset && i < r->nrules && v < QUICK_VALUES; v++) r->rules[i++].label = format_label;
    if (o->prun) {
        preset_label_rules(r, i, o->prun);
        i += o->prun->rules;
    }
    for (size_t k = 0; i < r->nrules && k < o->nrules && o->rule_labels; i++, k++)
        r->rules[i].label = o->rule_labels[k];
}

void convert_free_rule_labels(convert_opts *o)
{
    for (size_t k = 0; o->rule_labels && k < o->nrules; k++) free(o->rule_labels[k]);
    free(o->rule_labels);
    o->rule_labels = NULL;
}
