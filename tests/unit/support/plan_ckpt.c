/* Checkpoints and recipes for the planner's tests (plan_ckpt.h). */
#include "support/plan_ckpt.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *pc_dir;

void pc_dir_make(void)
{
    pc_dir = sw_tempdir();
    cr_assert_not_null(pc_dir);
}

void pc_dir_remove(void)
{
    if (pc_dir) sw_rmtree(pc_dir);
    free(pc_dir);
    pc_dir = NULL;
}

void pc_add_seeded(pc_ckpt *c, const char *name, const char *dtype, uint32_t rank, uint64_t d0, uint64_t d1,
                   size_t word, unsigned seed)
{
    cr_assert_lt(c->n, PC_MAX_TENSORS);
    uint64_t elements = rank == 0 ? 1 : rank == 1 ? d0 : d0 * d1;
    size_t bytes = (size_t)elements * word;
    uint8_t *p = malloc(bytes ? bytes : 1);
    cr_assert_not_null(p);
    for (size_t i = 0; i < bytes; i++) p[i] = (uint8_t)(0x31 + (i * 7 + seed) % 61);
    snprintf(c->names[c->n], sizeof c->names[0], "%s", name);
    c->t[c->n] = (sw_st_tensor){c->names[c->n], dtype, rank, {d0, d1}, p, bytes};
    c->data[c->n++] = p;
}

void pc_add(pc_ckpt *c, const char *name, const char *dtype, uint32_t rank, uint64_t d0, uint64_t d1, size_t word)
{
    pc_add_seeded(c, name, dtype, rank, d0, d1, word, 0);
}

char *pc_write(pc_ckpt *c, const char *dir, const char *name)
{
    sw_buf b = {0};
    sw_st_file(&b, c->t, c->n, NULL);
    char *path = sw_path(dir, name);
    cr_assert_eq(sw_write_file(path, b.data, b.len), 0);
    sw_free(&b);
    for (size_t i = 0; i < c->n; i++) free(c->data[i]);
    c->n = 0;
    return path;
}

nf_status pc_build(const char *dir, const char *source, const char *body, nf_recipe **recipe, nf_plan **out,
                   nf_error *err)
{
    char text[4096];
    snprintf(text, sizeof text, "recipe: 1\nsources:\n  base: %s\n%s", source, body);
    cr_assert_eq(nf_recipe_parse(text, strlen(text), "plan.yaml", dir, recipe, err), NF_OK, "%s", err->message);
    *out = NULL;
    return nf_plan_build(*recipe, out, err);
}
