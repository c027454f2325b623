/* Open-addressing hash set of one or two NUL-terminated strings (strset.c).  Generic, so it
 * lives in common: the container reader checks object IDs and part paths with it, the recipe
 * parser and resolver their keys, the planner (parameter, input) pairs. */
#ifndef NINFER_COMMON_STRSET_H
#define NINFER_COMMON_STRSET_H

#include <stdbool.h>
#include <stddef.h>

/* Keys are one or two NUL-terminated strings (the pair form serves (parameter, input)); the
 * set stores pointers, so the strings must outlive it. */
typedef struct nf_strset_slot {
    const char *a, *b;
    size_t value;
} nf_strset_slot;

typedef struct nf_strset {
    nf_strset_slot *slots;
    size_t cap, count;
} nf_strset;

/* Returns 1 when inserted, 0 when the key exists (*existing gets its value if non-NULL), -1 on
 * ENOMEM. */
int nf_strset_insert(nf_strset *s, const char *a, const char *b, size_t value, size_t *existing);
bool nf_strset_find(const nf_strset *s, const char *a, const char *b, size_t *value);
void nf_strset_free(nf_strset *s);

#endif
