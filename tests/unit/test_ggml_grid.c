/* method/ggml_grid.h: ggml's grid index of its i-quant searches, for each of the four grids.
 * The points' codes are ggml's own lists (iq2xs_init_impl's kgrid_* arrays of ggml-org/ggml
 * d99724f2, compared here by their FNV-1a digest), every point maps to itself, and every
 * off-grid code's neighbour list is what a brute-force search gives: the whole grid sorted by
 * (distance, index) as ggml's qsort sorts it, cut after the nwant-th distinct distance. */
#include <criterion/criterion.h>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "method/ggml_grid.h"

typedef struct grid_case {
    nf_ggml_grid8 id;
    unsigned size;
    int nwant;
    uint32_t fnv; /* FNV-1a 32 of ggml's kgrid list, each code as 2 bytes little-endian */
} grid_case;

static const grid_case CASES[] = {
    {NF_GGML_GRID8_IQ2XXS, 256, 2, 0x0e66d01du},
    {NF_GGML_GRID8_IQ2XS, 512, 2, 0xf65db7a3u},
    {NF_GGML_GRID8_IQ2S, 1024, 1, 0xa1eb5434u},
    {NF_GGML_GRID8_IQ1S, 2048, 3, 0xfd6cbae4u},
};

static uint32_t fnv_step(uint32_t h, unsigned byte) { return (h ^ byte) * 0x01000193u; }

static int by_dist_index(const void *a, const void *b)
{
    const int *l = a, *r = b;
    return l[0] < r[0] ? -1 : l[0] > r[0] ? 1 : l[1] < r[1] ? -1 : l[1] > r[1] ? 1 : 0;
}

/* ggml's construction of one list, written plainly: positions 2l + 1, every point's squared
 * distance, qsort, then the points of the first nwant distinct distances.  Returns the count. */
static int brute_list(const nf_ggml_grid *g, int nwant, uint32_t code, int *pairs, uint16_t *out)
{
    for (unsigned j = 0; j < g->size; j++) {
        int d2 = 0;
        for (unsigned i = 0; i < 8; i++) {
            int p = 2 * (int)(code >> 2 * i & 3u) + 1, q = 2 * g->level[8 * j + i] + 1;
            d2 += (q - p) * (q - p);
        }
        pairs[2 * j] = d2;
        pairs[2 * j + 1] = (int)j;
    }
    qsort(pairs, g->size, 2 * sizeof(int), by_dist_index);
    int n = 0, have = 1, d2 = pairs[0];
    for (unsigned j = 0; j < g->size; j++) {
        if (pairs[2 * j] > d2) {
            if (have == nwant) break;
            d2 = pairs[2 * j];
            have++;
        }
        out[n++] = (uint16_t)pairs[2 * j + 1];
    }
    return n;
}

static void check_grid(const grid_case *c, uint32_t stride)
{
    const nf_ggml_grid *g = nf_ggml_grid_get(c->id);
    cr_assert_not_null(g);
    cr_assert_eq(g->size, c->size);
    uint32_t h = 0x811c9dc5u;
    for (unsigned k = 0; k < g->size; k++) {
        uint32_t code = nf_ggml_grid_code(g->level + 8 * k);
        h = fnv_step(fnv_step(h, code & 0xFFu), code >> 8);
        cr_assert_eq(g->map[code], (int32_t)k, "grid %d point %u", (int)c->id, k);
    }
    cr_assert_eq(h, c->fnv, "grid %d: codes differ from ggml's list", (int)c->id);
    int *pairs = malloc(2 * sizeof(int) * g->size);
    uint16_t *want = malloc(sizeof(uint16_t) * g->size);
    cr_assert(pairs && want);
    unsigned off = 0;
    for (uint32_t code = 0; code < NF_GGML_GRID_CODES; code++) {
        if (g->map[code] >= 0) continue;
        if (off++ % stride) continue;
        const uint16_t *list = nf_ggml_grid_neighbours(g, g->map[code]);
        int n = brute_list(g, c->nwant, code, pairs, want);
        cr_assert_eq(list[0], n, "grid %d code %u: %u neighbours, want %d", (int)c->id, code, list[0], n);
        for (int j = 0; j < n; j++)
            cr_assert_eq(list[1 + j], want[j], "grid %d code %u neighbour %d", (int)c->id, code, j);
    }
    cr_assert_eq(off, NF_GGML_GRID_CODES - g->size);
    free(pairs);
    free(want);
}

/* Every off-grid code of the smallest grid, every 2nd, 4th, 16th of the larger ones: about the
 * same brute-force work for each, to keep the test quick. */
Test(ggml_grid, iq2xxs) { check_grid(&CASES[0], 1); }
Test(ggml_grid, iq2xs) { check_grid(&CASES[1], 2); }
Test(ggml_grid, iq2s) { check_grid(&CASES[2], 4); }
Test(ggml_grid, iq1s) { check_grid(&CASES[3], 16); }

Test(ggml_grid, out_of_range_is_null)
{
    cr_assert_null(nf_ggml_grid_get(NF_GGML_GRID8_COUNT));
}

static void *get_iq2xs(void *arg)
{
    (void)arg;
    return (void *)nf_ggml_grid_get(NF_GGML_GRID8_IQ2XS);
}

/* Threads that ask at once all get the one grid. */
Test(ggml_grid, concurrent_first_use)
{
    pthread_t t[4];
    void *got[4];
    for (int i = 0; i < 4; i++) cr_assert_eq(pthread_create(&t[i], NULL, get_iq2xs, NULL), 0);
    for (int i = 0; i < 4; i++) cr_assert_eq(pthread_join(t[i], &got[i]), 0);
    for (int i = 0; i < 4; i++) cr_assert_not_null(got[i]);
    for (int i = 1; i < 4; i++) cr_assert_eq(got[i], got[0]);
}
