/* The index of ggml's IQ3 grids (lib/src/method/ggml_grid3.h): every grid point maps to itself,
 * the levels keep the order of the dequantizers' byte values, and every off-grid neighbour list
 * equals a brute-force search done ggml's way (all grid points sorted by squared distance between
 * the values 2l + 1, then by index; the points of the nearest 2 or 3 distances kept).  The list
 * totals are the ones ggml's iq3xs_init_impl builds (22825 and 28317 words, counted on ggml
 * d99724f2), every list word's entry and values (what the vector searches load) say the same
 * grid point as the list, with room after the last list for a vector load, and concurrent first
 * uses get the same index. */
#include <criterion/criterion.h>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "format/ggml.h"
#include "method/ggml_grid3.h"

typedef struct grid_case {
    nf_format_id id;
    unsigned size, nwant, list_len;
} grid_case;

static const grid_case CASES[] = {
    {NF_FMT_GGUF_IQ3_XXS, 256, 2, 22825},
    {NF_FMT_GGUF_IQ3_S, 512, 3, 28317},
};

Test(ggml_grid3, every_grid_point_maps_to_itself)
{
    for (size_t c = 0; c < 2; c++) {
        const nf_gq3_grid *g = nf_gq3_grid_of(CASES[c].id);
        cr_assert_not_null(g);
        cr_assert_eq(g->size, CASES[c].size);
        unsigned n;
        const uint32_t *entries = nf_ggml_grid4_of(CASES[c].id, &n);
        cr_assert_eq(n, CASES[c].size);
        unsigned on_grid = 0;
        for (unsigned p = 0; p < g->size; p++) {
            int8_t l[4];
            for (unsigned j = 0; j < 4; j++) {
                cr_assert_lt(g->level[p][j], NF_GQ3_LEVELS);
                l[j] = (int8_t)g->level[p][j];
            }
            cr_expect_eq(nf_gq3_point(g, nf_gq3_key(l)), (int)p, "grid %u point %u", g->size, p);
            /* a higher level is a larger byte of the dequantizers' entry */
            for (unsigned q = 0; q < g->size; q++)
                for (unsigned j = 0; j < 4; j++)
                    if (g->level[p][j] < g->level[q][j])
                        cr_assert_lt((entries[p] >> (8 * j)) & 0xFFu, (entries[q] >> (8 * j)) & 0xFFu);
        }
        for (unsigned key = 0; key < NF_GQ3_KEYS; key++) on_grid += nf_gq3_point(g, key) >= 0;
        cr_expect_eq(on_grid, g->size, "distinct points");
    }
    /* IQ3_S's bytes are the values 2l + 1 themselves */
    const nf_gq3_grid *s = nf_gq3_grid_of(NF_FMT_GGUF_IQ3_S);
    unsigned n;
    const uint32_t *entries = nf_ggml_grid4_of(NF_FMT_GGUF_IQ3_S, &n);
    for (unsigned p = 0; p < n; p++)
        for (unsigned j = 0; j < 4; j++) cr_expect_eq((entries[p] >> (8 * j)) & 0xFFu, 2u * s->level[p][j] + 1u);
    cr_expect_null(nf_gq3_grid_of(NF_FMT_GGUF_IQ2_XXS));
    cr_expect_null(nf_gq3_grid_of(NF_FMT_Q4_G64_FP16));
}

static int by_d2_then_index(const void *a, const void *b)
{
    const int *l = a, *r = b;
    return l[0] != r[0] ? (l[0] < r[0] ? -1 : 1) : (l[1] < r[1] ? -1 : l[1] > r[1]);
}

Test(ggml_grid3, off_grid_lists_equal_a_brute_force_search)
{
    static int d2[2 * NF_GQ3_MAX_POINTS];
    for (size_t c = 0; c < 2; c++) {
        const nf_gq3_grid *g = nf_gq3_grid_of(CASES[c].id);
        cr_assert_not_null(g);
        unsigned words = 0;
        for (unsigned key = 0; key < NF_GQ3_KEYS; key++) {
            if (nf_gq3_point(g, key) >= 0) continue;
            for (unsigned p = 0; p < g->size; p++) {
                int s = 0;
                for (unsigned j = 0; j < 4; j++) {
                    int a = 2 * (int)((key >> (3 * j)) & 7u) + 1, b = 2 * (int)g->level[p][j] + 1;
                    s += (a - b) * (a - b);
                }
                d2[2 * p] = s;
                d2[2 * p + 1] = (int)p;
            }
            qsort(d2, g->size, 2 * sizeof(int), by_d2_then_index);
            unsigned n, want = 0, have = 1;
            const uint16_t *list = nf_gq3_neighbours(g, key, &n);
            for (unsigned p = 0; p < g->size; p++) {
                if (d2[2 * p] > d2[2 * (p > 0 ? p - 1 : 0)] && ++have > CASES[c].nwant) break;
                cr_assert_lt(want, n, "grid %u key %u: list too short", g->size, key);
                cr_assert_eq(list[want], (unsigned)d2[2 * p + 1], "grid %u key %u neighbour %u", g->size, key, want);
                want++;
            }
            cr_assert_eq(n, want, "grid %u key %u: list length", g->size, key);
            words += 1 + n;
        }
        cr_expect_eq(words, CASES[c].list_len);
        cr_expect_eq(g->list_len, CASES[c].list_len);
    }
}

Test(ggml_grid3, entries_and_values_follow_the_lists)
{
    for (size_t c = 0; c < 2; c++) {
        const nf_gq3_grid *g = nf_gq3_grid_of(CASES[c].id);
        cr_assert_not_null(g);
        cr_assert_leq(g->list_len + NF_GQ3_LIST_PAD, NF_GQ3_LIST_CAP, "grid %u: no room after the lists", g->size);
        for (unsigned key = 0; key < NF_GQ3_KEYS; key++) {
            if (nf_gq3_point(g, key) >= 0) continue;
            unsigned n;
            const uint16_t *list = nf_gq3_neighbours(g, key, &n);
            const size_t at = (size_t)(list - g->list);
            cr_assert_eq(g->entry[at - 1], n, "grid %u key %u: count word", g->size, key);
            for (unsigned j = 0; j < n; j++) {
                const unsigned p = list[j];
                unsigned pkey = 0;
                for (unsigned d = 0; d < 4; d++) {
                    pkey |= (unsigned)g->level[p][d] << (3 * d);
                    cr_assert_eq(g->value[d][at + j], 2 * g->level[p][d] + 1, "grid %u key %u neighbour %u value %u",
                                 g->size, key, j, d);
                }
                cr_assert_eq(g->entry[at + j], p | pkey << 16, "grid %u key %u neighbour %u: entry", g->size, key, j);
            }
        }
    }
}

typedef struct use {
    nf_format_id id;
    const nf_gq3_grid *got;
} use;

static void *first_use(void *arg)
{
    use *u = arg;
    u->got = nf_gq3_grid_of(u->id);
    return NULL;
}

Test(ggml_grid3, concurrent_first_uses_get_one_index)
{
    pthread_t t[8];
    use uses[8];
    for (int i = 0; i < 8; i++) {
        uses[i] = (use){.id = i % 2 ? NF_FMT_GGUF_IQ3_S : NF_FMT_GGUF_IQ3_XXS};
        cr_assert_eq(pthread_create(&t[i], NULL, first_use, &uses[i]), 0);
    }
    for (int i = 0; i < 8; i++) cr_assert_eq(pthread_join(t[i], NULL), 0);
    for (int i = 0; i < 8; i++) {
        cr_expect_not_null(uses[i].got);
        cr_expect_eq(uses[i].got, nf_gq3_grid_of(uses[i].id));
    }
}
