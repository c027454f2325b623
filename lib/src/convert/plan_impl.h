/* The planner's internals shared by planner.c (building the plan), plan_budget.c (the budget
 * glue) and plan_tensor.c (one tensor's plan, below both): the problem list, one tensor's plan,
 * and the steps of nf_plan_build_ex the budget takes part in (docs/recipes.md, "Budgets").
 * Nothing outside those three files includes it. */
#ifndef NINFER_PLAN_IMPL_H
#define NINFER_PLAN_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/strset.h"
#include "convert/convert_impl.h"

/* The problems found while planning, collected so that one run reports all of them. */
typedef struct problems {
    char *text;
    size_t len, cap;
    size_t count;
    bool nomem;
} problems;

/* The field of a rule's choice a problem points at (nf_plan_tensor_problem). */
typedef enum choice_field { FIELD_FORMAT, FIELD_LAYOUT, FIELD_METHOD, FIELD_WITH, FIELD_RULE } choice_field;

/* One source tensor as planned: its choice, format, layout, method and member. */
typedef struct tensor_plan {
    const nf_source_tensor *t;
    const nf_qweight *q; /* t is the codes tensor of this quantized weight, or NULL */
    const nf_recipe_choice *c;
    const nf_format *fmt;
    const nf_layout *layout;
    nf_method_id method;
    const nf_mprog_spec *program; /* method NF_PLAN_METHOD_PROGRAM: the program */
    nf_method_params params;
    plan_member member;
    uint64_t rows, cols;
    bool ok;
    bool consumed; /* a companion of a quantized weight: never a tensor of its own */
    int group;     /* index into recipe groups, -1 */
    bool budget;   /* a rule left it to the budget (planned first with a stand-in) */
    size_t object; /* its single object (add_single), SIZE_MAX: none */
} tensor_plan;

/* Group membership and tensor lookups by name are hashed: a recipe may hold up to 200,000 YAML
 * nodes of group members, and a scan of every group for every tensor (and of every tensor for
 * every member) would be their product (docs/security.md 7.1, F9). */
typedef struct name_index {
    nf_strset members; /* member name -> group index */
    nf_strset tensors; /* tensor name -> index into the tensor plans */
} name_index;

/* ---------------------------------------------------------------- plan_tensor.c */
/* Add one problem (printf-style) to the list; out of memory is remembered, not lost. */
void nf_plan_add_problem(problems *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The collected problems as one error, "WHAT: N problems:\n  ..." (NF_ERR_INVALID). */
nf_status nf_plan_problems_error(problems *p, const char *what, nf_error *err);
/* "FILE:LINE:COL: rules[i].field" of a choice's field, for a problem's prefix. */
void nf_plan_choice_origin(const nf_recipe *r, const nf_recipe_choice *c, choice_field f, char *buf, size_t size);
/* The recipe's file for messages, "<recipe>" without one. */
const char *nf_plan_recipe_label(const nf_recipe *r);
/* One problem of a tensor: "FILE:LINE:COL: rules[i].field: tensor 'NAME' (DTYPE): what". */
void nf_plan_tensor_problem(problems *probs, const nf_recipe *r, const nf_recipe_choice *c, choice_field f,
                            const nf_source_tensor *t, const char *what);
/* The index of the recipe's source `name`, SIZE_MAX: none. */
size_t nf_plan_source_index(const nf_plan *p, const char *name);
/* Is t a GGUF tensor of quantized blocks that a gguf_* format holds?  Of any ggml block type? */
bool nf_plan_gguf_blocks(const nf_source_tensor *t);
bool nf_plan_gguf_quantized(const nf_source_tensor *t);
/* The geometry of a source tensor's object in fmt (a stack of matrices [E, R, K] is [E*R, K] in
 * a matrix format). */
nf_status nf_plan_tensor_geometry(const nf_layout *layout, const nf_format *fmt, const nf_source_tensor *t,
                                  nf_geometry *g, nf_error *err);
/* A tensor of rank 3 or more as a stack of matrices (an experts tensor [E, R, K]): *mats E (the
 * leading dimensions' product), *per R rows each; a matrix is one matrix of t->rows rows. */
void nf_plan_stack_of(const nf_source_tensor *t, uint64_t *mats, uint64_t *per);
/* Method parameters from `with`: imatrix (a source name) and negative_scales. */
nf_status nf_plan_method_params(nf_plan *p, const nf_recipe_choice *c, const nf_source_tensor *t, uint64_t cols,
                                nf_method_params *params, nf_error *err);
/* Plan one tensor with its choice tp->c: tp->ok when every check passed, else problems added. */
void nf_plan_tensor(nf_plan *p, const plan_source *s, tensor_plan *tp, problems *probs,
                    const nf_source_tensor **companions);
/* Geometry of a single-member object: shape as the source's (direct) or [N, K]. */
nf_status nf_plan_object_geometry(const tensor_plan *tp, nf_geometry *g, nf_error *err);
/* The recipe group holding the tensor `name`, -1: none. */
int nf_plan_group_of(const name_index *ix, const char *name);

/* ---------------------------------------------------------------- plan_budget.c */
/* Did the rule leave the tensor to the budget (`format: budget`)? */
bool nf_plan_is_budget(const nf_recipe_choice *c);
/* The candidates: every (format, method) pair of the budget's lists the method can produce. */
nf_status nf_plan_budget_candidates(nf_plan *p, nf_error *err);
/* Before planning: a tensor left to the budget gets a stand-in candidate as its choice c. */
void nf_plan_budget_stand_in(nf_plan *p, tensor_plan *tp, nf_recipe_choice *c, problems *probs);
/* After the objects: the items, what they may take, and the capacity. */
nf_status nf_plan_budget_items(nf_plan *p, tensor_plan *tps, size_t n, const name_index *ix, problems *probs,
                               nf_error *err);
/* The bytes the items may have, or the refusal naming the range the budget can reach. */
nf_status nf_plan_budget_capacity(nf_plan *p, nf_error *err);
/* After the allocation: each item's object planned again with its pick. */
void nf_plan_budget_patch(nf_plan *p, tensor_plan *tps, size_t n, problems *probs);

#endif
