/* Open-addressing hash set of one or two strings: object IDs, part paths and (parameter, input)
 * pairs are checked for uniqueness in linear time, so a directory with many objects or parts
 * cannot make the reader quadratic. */
#include "common/strset.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash_str(uint64_t h, const char *s)
{
    /* FNV-1a, 64-bit */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint64_t hash_key(const char *a, const char *b)
{
    uint64_t h = hash_str(0xcbf29ce484222325ull, a);
    if (b) {
        h ^= 0xff; /* separator: ("ab","c") and ("a","bc") differ */
        h *= 0x100000001b3ull;
        h = hash_str(h, b);
    }
    return h;
}

static bool same(const nf_strset_slot *s, const char *a, const char *b)
{
    if (strcmp(s->a, a) != 0) return false;
    if (!s->b || !b) return s->b == b;
    return strcmp(s->b, b) == 0;
}

static size_t probe(const nf_strset_slot *slots, size_t cap, const char *a, const char *b)
{
    size_t mask = cap - 1;
    size_t i = (size_t)hash_key(a, b) & mask;
    while (slots[i].a && !same(&slots[i], a, b)) i = (i + 1) & mask;
    return i;
}

static bool grow(nf_strset *s)
{
    size_t cap = s->cap ? s->cap * 2 : 16;
    if (cap < s->cap || cap > SIZE_MAX / sizeof(nf_strset_slot)) return false;
    nf_strset_slot *slots = calloc(cap, sizeof *slots);
    if (!slots) return false;
    for (size_t i = 0; i < s->cap; i++) {
        if (!s->slots[i].a) continue;
        slots[probe(slots, cap, s->slots[i].a, s->slots[i].b)] = s->slots[i];
    }
    free(s->slots);
    s->slots = slots;
    s->cap = cap;
    return true;
}

int nf_strset_insert(nf_strset *s, const char *a, const char *b, size_t value, size_t *existing)
{
    if ((s->count + 1) * 2 > s->cap && !grow(s)) return -1;
    size_t i = probe(s->slots, s->cap, a, b);
    if (s->slots[i].a) {
        if (existing) *existing = s->slots[i].value;
        return 0;
    }
    s->slots[i].a = a;
    s->slots[i].b = b;
    s->slots[i].value = value;
    s->count++;
    return 1;
}

bool nf_strset_find(const nf_strset *s, const char *a, const char *b, size_t *value)
{
    if (!s->cap) return false;
    size_t i = probe(s->slots, s->cap, a, b);
    if (!s->slots[i].a) return false;
    if (value) *value = s->slots[i].value;
    return true;
}

void nf_strset_free(nf_strset *s)
{
    free(s->slots);
    s->slots = NULL;
    s->cap = s->count = 0;
}
