/* ninfer-convert's pieces shared by convert.c (options, modes, main), convert_quick.c (quick
 * mode's recipe) and convert_print.c (--dry-run's tables and the re-encoding warning). */
#ifndef NINFER_CMD_CONVERT_H
#define NINFER_CMD_CONVERT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <ninfer/ninfer.h>

#include "cli.h"
#include "convert_preset.h"

/* The largest file quick mode keeps beside the weights (docs/ninfer-convert.md, "Quick mode's
 * resources"). */
#define QUICK_RESOURCE_MAX ((uint64_t)256 << 20)

typedef struct convert_opts {
    const char *recipe, *output, *format, *method;
    const char *preset, *imatrix; /* --preset NAME, --imatrix FILE (docs/presets.md) */
    preset_run *prun;             /* the preset's choice, made once (freed by main) */
    bool has_target_bpw;          /* --target-bpw X: quick mode's budget (docs/recipes.md, "Budgets") */
    double target_bpw;
    const char *sensitivity; /* --sensitivity FILE: the budget's per-tensor factors */
    const char **rules;
    size_t nrules;
    nf_cli_recipe_args ra; /* --source, --allow-path, --allow-env */
    unsigned threads;
    bool has_max_file_bytes, dry_run, force, no_report, has_id, remove_stale, requantize, no_resources;
    bool no_source_digests;
    const char *attest; /* --attest STATEMENT.json */
    char **rule_labels; /* quick mode: "--rule 'GLOB=FORMAT'" per --rule, for messages (freed by main) */
    uint64_t max_file_bytes, chunk_values;
    uint8_t artifact_id[16];
    /* scale-out (docs/scale-out.md) */
    const char *plan_out, *plan, *task;
    unsigned tasks;
    bool assemble, verify;
    bool staging; /* --plan: parts without their entry are the tasks' work, not an interrupted publication */
} convert_opts;

/* ---------------------------------------------------------------- convert_quick.c */
/* A Hugging Face hub cache holds a snapshot's files (models--ORG--NAME/snapshots/REV/FILE) as
 * links to the same model's content-addressed blobs (models--ORG--NAME/blobs/HASH): such a link
 * is the checkpoint's own file, and the one place outside the directory a kept resource may come
 * from.  Any other link out of it is refused as a recipe's would be (docs/security.md 7.1, F2):
 * --allow-path or --no-resources decides. */
nf_status convert_allow_hub_blobs(nf_recipe *r, const char *dir, nf_error *err);
/* Free the labels convert_label_quick_rules took from --rule (o->rule_labels). */
void convert_free_rule_labels(convert_opts *o);
/* Messages name what the command line said, not lines of the recipe quick mode wrote: one label
 * per rule of quick_recipe, in its order (the keep rules, the float rules, the quantized weights'
 * rule, then each --rule). */
void convert_label_quick_rules(nf_recipe *r, const convert_opts *o);
/* The recipe quick mode stands for, as YAML text (the same parser and rules as a file). */
char *convert_quick_recipe(const char *source, const convert_opts *o, size_t *len, char *too_big, size_t size);
/* The directory whose files stand beside a source's weights: the source itself, or the
 * directory of a safetensors file or index; none for GGUF (its tokenizer is in the file). */
bool convert_quick_source_dir(const char *source, char *dir, size_t size);

/* ---------------------------------------------------------------- convert_print.c */
/* Every column as wide as its widest cell (table.h): ids, dtypes (a GGUF's IQ2_XXS) and
 * shapes have no bound, and fixed widths let a long one push the rest of its line out of line. */
int convert_print_plan(const nf_cli *cli, const json_t *plan);
/* One warning line when the plan re-encodes tensors that are already encoded (GGUF blocks, F8
 * codes without a scale): quick mode does it by default, and it is lossy (docs/security.md 7.1, M5); each
 * object's note says what (--dry-run's note column, "note" in --json). */
void convert_warn_reencoded(const nf_cli *cli, const nf_plan *plan);

#endif
