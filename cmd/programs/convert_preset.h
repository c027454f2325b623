/* ninfer-convert --preset NAME: llama-quantize's choice of a ggml type per tensor
 * (ninfer/preset.h) for a checkpoint, as quick mode's rules (docs/presets.md). */
#ifndef NINFER_CMD_CONVERT_PRESET_H
#define NINFER_CMD_CONVERT_PRESET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <ninfer/ninfer.h>

#include "cli.h"

/* One tensor of the source and what the preset gives it. */
typedef struct preset_choice {
    const char *tensor; /* the source's name (owned by the source) */
    char gguf[256];     /* llama.cpp's name; "" when unmapped */
    int expert;         /* its slice of a stacked experts tensor, or -1 */
    bool floats;        /* a BF16/F16/F32/F64 tensor: the preset's rules give it a format */
    size_t pt;          /* its entry of preset_run.pts (mapped tensors only) */
    const char *type;   /* the ggml type llama-quantize gives it, NULL when it keeps it */
    const char *format; /* the format its rule names; NULL: no rule (quick mode's other rules) */
    const char *method;
    bool encodable;          /* the format exists and the method can target it in this build */
    const char *replaced_by; /* the last --rule GLOB=FORMAT[:METHOD] whose GLOB matches it, or NULL */
    char why[320];
    char label[640]; /* the rule's label in messages */
} preset_choice;

typedef struct preset_run {
    nf_preset preset;
    nf_preset_model model;
    const char *imatrix; /* --imatrix FILE, or NULL */
    nf_source *src;
    preset_choice *c;
    size_t n;
    nf_preset_tensor *pts; /* one per llama.cpp tensor (a stack of experts is one) */
    size_t npts;
    size_t unmapped, unencodable, rules;
} preset_run;

/* Reads SOURCE (its config.json, or a GGUF's hyperparameters) and chooses every tensor's type;
 * an exit status (unknown architecture or missing hyperparameter: 1, naming the file).  A tensor
 * one of the command line's `rules` (GLOB=FORMAT[:METHOD], the later winning) matches keeps the
 * preset's choice for --dry-run but is the rule's: neither refused nor counted unconvertible. */
int preset_prepare(const nf_cli *cli, const char *source, const char *name, const char *imatrix,
                   const char *const *rules, size_t nrules, preset_run *run);
/* The rules of quick mode's recipe for the preset, in the order of run->c (one per tensor that
 * gets a format). */
void preset_put_rules(FILE *f, const preset_run *run);
/* Labels rules[first ...] (as put by preset_put_rules) with each tensor's reason. */
void preset_label_rules(nf_recipe *r, size_t first, const preset_run *run);
/* --dry-run: the choice per tensor, as a table or (json) as a member of `doc`. */
int preset_print(const nf_cli *cli, const preset_run *run);
struct json_t *preset_describe(const preset_run *run);
void preset_free(preset_run *run);

#endif
