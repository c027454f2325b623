/* The budget's sensitivity file (docs/recipes.md, "Budgets", *Sensitivity*): a non-negative
 * factor per tensor that multiplies the tensor's error in the allocation's objective (for
 * example a KL-divergence or Fisher score measured once with a runtime).  Two spellings:
 *
 *   JSON   one object, tensor name -> number:  {"blk.0.attn_q.weight": 2.5, ...}
 *   CSV    one NAME,FACTOR a line (the name up to the line's last comma, or "quoted" with ""
 *          for a quote); an optional first line `name,factor`; blank lines and lines starting
 *          with # are skipped
 *
 * told apart by the first byte that is not white space ('{': JSON).  Every refusal names the
 * file, the line and column (and byte) and, once it is known, the tensor: malformed text, a
 * factor that is negative, not a number or not finite, a name given twice.  Whether each name
 * is a tensor of the checkpoint is the caller's check (nf_sensitivity.line/col say where). */
#ifndef NINFER_BUDGET_SENSITIVITY_H
#define NINFER_BUDGET_SENSITIVITY_H

#include <stddef.h>
#include <stdint.h>

#include <ninfer/error.h>

#define NF_SENSITIVITY_MAX_BYTES ((uint64_t)64 << 20) /* a larger file is refused */

typedef struct nf_sensitivity {
    size_t n;
    char **names;         /* [n], UTF-8, in the file's order */
    double *factors;      /* [n], finite, >= 0 */
    uint64_t *line, *col; /* [n], where each entry's name starts (1-based; col in bytes) */
    uint64_t *byte;       /* [n], the same as a byte offset from 0 */
} nf_sensitivity;

/* Reads path whole.  NF_ERR_INVALID for a file that is not one of the two spellings (the
 * message starts "PATH:LINE:COL (byte B): "), NF_ERR_IO when it cannot be read. */
nf_status nf_sensitivity_read(const char *path, nf_sensitivity *out, nf_error *err);
/* The same from memory (path names it in messages). */
nf_status nf_sensitivity_parse(const char *path, const char *text, size_t len, nf_sensitivity *out, nf_error *err);
/* The index of name's entry, or SIZE_MAX (its factor is then 1). */
size_t nf_sensitivity_find(const nf_sensitivity *s, const char *name);
void nf_sensitivity_free(nf_sensitivity *s);

#endif
