/* method/ggml_grid.h: ggml's grid index of its i-quant searches, for each of the four grids.
 * The points' codes are ggml's own lists (iq2xs_init_impl's kgrid_* arrays of ggml-org/ggml
 * d99724f2, compared here by their FNV-1a digest), every point maps to itself, and every
 * off-grid code's neighbour list is what a brute-force search gives: the whole grid sorted by
 * (distance, index) as ggml's qsort sorts it, cut after the nwant-th distinct distance; every
 * 2nd to 16th code that way, and every code of every grid by a plain scan of the grid (the
 * nwant smallest distances, then each one's points in index order), with the lists' totals and
 * the codes kept beside them. */
#include <criterion/criterion.h>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "method/ggml_grid.h"

typedef struct grid_case {
    nf_ggml_grid8 id;
    unsigned size;
    int nwant;
    uint32_t fnv;     /* FNV-1a 32 of ggml's kgrid list, each code as 2 bytes little-endian */
    uint64_t entries; /* the lists' entries (counts and indices): the brute-force search's */
} grid_case;

static const grid_case CASES[] = {
    {NF_GGML_GRID8_IQ2XXS, 256, 2, 0x0e66d01du, 417375},
    {NF_GGML_GRID8_IQ2XS, 512, 2, 0xf65db7a3u, 551719},
    {NF_GGML_GRID8_IQ2S, 1024, 1, 0xa1eb5434u, 209098},
    {NF_GGML_GRID8_IQ1S, 2048, 3, 0xfd6cbae4u, 1375316},
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

/* The list of code by scanning: every point's distance in levels, the nwant smallest distinct
 * ones found by repeated minimum, then for each of them its points in index order. */
static int scan_list(const nf_ggml_grid *g, int nwant, uint32_t code, uint8_t *dist, uint16_t *out)
{
    for (unsigned j = 0; j < g->size; j++) {
        int d2 = 0;
        for (unsigned i = 0; i < 8; i++) {
            int d = (int)(code >> 2 * i & 3u) - g->level[8 * j + i];
            d2 += d * d;
        }
        dist[j] = (uint8_t)d2;
    }
    int n = 0, last = -1;
    for (int have = 0; have < nwant; have++) {
        int next = 256;
        for (unsigned j = 0; j < g->size; j++)
            if (dist[j] > last && dist[j] < next) next = dist[j];
        if (next == 256) break;
        for (unsigned j = 0; j < g->size; j++)
            if (dist[j] == next) out[n++] = (uint16_t)j;
        last = next;
    }
    return n;
}

/* Every off-grid code's list, the codes beside it, the zero padding and the total. */
static void check_every_code(const grid_case *c)
{
    const nf_ggml_grid *g = nf_ggml_grid_get(c->id);
    cr_assert_not_null(g);
    uint8_t *dist = malloc(g->size);
    uint16_t *want = malloc(sizeof(uint16_t) * g->size);
    cr_assert(dist && want);
    uint64_t entries = 0;
    for (uint32_t code = 0; code < NF_GGML_GRID_CODES; code++) {
        if (g->map[code] >= 0) continue;
        uint64_t at = (uint64_t)(-(int64_t)g->map[code] - 1);
        cr_assert_eq(at, entries, "grid %d code %u: list at %llu, want %llu", (int)c->id, code, (unsigned long long)at,
                     (unsigned long long)entries);
        const uint16_t *list = nf_ggml_grid_neighbours(g, g->map[code]);
        int n = scan_list(g, c->nwant, code, dist, want);
        cr_assert_eq(list[0], n, "grid %d code %u: %u neighbours, want %d", (int)c->id, code, list[0], n);
        cr_assert_eq(g->neighbour_codes[at], n);
        for (int j = 0; j < n; j++) {
            cr_assert_eq(list[1 + j], want[j], "grid %d code %u neighbour %d", (int)c->id, code, j);
            cr_assert_eq(g->neighbour_codes[at + 1 + (unsigned)j], nf_ggml_grid_code(g->level + 8 * (size_t)want[j]));
        }
        entries += 1 + (unsigned)n;
    }
    cr_assert_eq(entries, g->neighbour_entries);
    cr_assert_eq(entries, c->entries, "grid %d: %llu entries, want %llu", (int)c->id, (unsigned long long)entries,
                 (unsigned long long)c->entries);
    for (unsigned j = 0; j < NF_GGML_GRID_PAD; j++) cr_assert_eq(g->neighbour_codes[entries + j], 0);
    free(dist);
    free(want);
}

Test(ggml_grid, every_code_iq2xxs) { check_every_code(&CASES[0]); }
Test(ggml_grid, every_code_iq2xs) { check_every_code(&CASES[1]); }
Test(ggml_grid, every_code_iq2s) { check_every_code(&CASES[2]); }
Test(ggml_grid, every_code_iq1s) { check_every_code(&CASES[3]); }

Test(ggml_grid, out_of_range_is_null) { cr_assert_null(nf_ggml_grid_get(NF_GGML_GRID8_COUNT)); }

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
