/* Small safetensors checkpoints and recipes for the planner's tests (test_convert_plan.c,
 * test_convert_plan_inputs.c): tensors of a given name, dtype and shape whose bytes are small
 * finite values, written as one file, and a recipe of "base: PATH" plus a body, planned. */
#ifndef NINFER_TEST_PLAN_CKPT_H
#define NINFER_TEST_PLAN_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include <ninfer/ninfer.h>

#include "support/source_writer.h"

#define PC_MAX_TENSORS 32

/* The test's scratch directory: made by pc_dir_make (a suite's .init), removed with what it
 * holds by pc_dir_remove (its .fini). */
extern char *pc_dir;
void pc_dir_make(void);
void pc_dir_remove(void);

typedef struct pc_ckpt {
    sw_st_tensor t[PC_MAX_TENSORS];
    size_t n;
    void *data[PC_MAX_TENSORS];
    char names[PC_MAX_TENSORS][128];
} pc_ckpt;

/* Adds a tensor (rank 0, 1 or 2: [d0] or [d0, d1]) of `word`-byte elements whose bytes are
 * 0x31 + (i * 7 + seed) mod 61: two checkpoints that differ only in seed have the same names,
 * shapes and dtypes and other weights.  The name is copied. */
void pc_add_seeded(pc_ckpt *c, const char *name, const char *dtype, uint32_t rank, uint64_t d0, uint64_t d1,
                   size_t word, unsigned seed);
void pc_add(pc_ckpt *c, const char *name, const char *dtype, uint32_t rank, uint64_t d0, uint64_t d1, size_t word);
/* Writes the checkpoint as DIR/NAME and frees its data (c is empty again); returns the path
 * (malloc'ed). */
char *pc_write(pc_ckpt *c, const char *dir, const char *name);
/* Parses "recipe: 1\nsources:\n  base: SOURCE\n" + body as a recipe living in DIR and plans it;
 * returns the planner's status (the plan in *out when built, else NULL).  A recipe that does not
 * parse fails the test. */
nf_status pc_build(const char *dir, const char *source, const char *body, nf_recipe **recipe, nf_plan **out,
                   nf_error *err);

#endif
