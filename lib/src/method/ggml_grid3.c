/* The index of ggml's IQ3 grids (method/ggml_grid3.h says what it holds; docs/methods.md
 * "ggml_quantize").  Each grid's index is built once, on first use, into static storage: no
 * allocation, so nothing can fail after the build and the memory is fixed (about 350 KB a grid).
 *
 * Layering: part of the method module; reads the grids through the format module's interface
 * (format/ggml.h). */
#include <pthread.h>
#include <stdbool.h>

#include "format/ggml.h"
#include "method/ggml_grid3.h"

/* Squared distances between levels are at most 4 * 7^2. */
#define GQ3_MAX_D2 (4u * 49u)

static nf_gq3_grid gq3_grids[2];
static const nf_gq3_grid *gq3_ready[2];
static pthread_once_t gq3_once[2] = {PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT};

/* Levels of every entry: the rank of each byte among the grid's byte values.  False when the
 * grid uses other than NF_GQ3_LEVELS byte values. */
static bool gq3_levels(nf_gq3_grid *g, const uint32_t *entries, unsigned n)
{
    bool used[256] = {false};
    for (unsigned i = 0; i < n; i++)
        for (unsigned j = 0; j < 4; j++) used[(entries[i] >> (8 * j)) & 0xFFu] = true;
    uint8_t rank[256];
    unsigned levels = 0;
    for (unsigned v = 0; v < 256; v++) {
        rank[v] = (uint8_t)levels;
        if (used[v]) levels++;
    }
    if (levels != NF_GQ3_LEVELS) return false;
    for (unsigned i = 0; i < n; i++)
        for (unsigned j = 0; j < 4; j++) g->level[i][j] = rank[(entries[i] >> (8 * j)) & 0xFFu];
    return true;
}

/* Squared distance, in levels, between key and grid point p (ggml measures it between the
 * values 2l + 1: four times this, so the order is the same). */
static unsigned gq3_d2(const nf_gq3_grid *g, unsigned key, unsigned p)
{
    unsigned d2 = 0;
    for (unsigned j = 0; j < 4; j++) {
        int d = (int)((key >> (3 * j)) & 7u) - (int)g->level[p][j];
        d2 += (unsigned)(d * d);
    }
    return d2;
}

/* Appends the list of off-grid key: the grid points at the nwant smallest distances, by distance
 * and then by index.  False when the lists would exceed their storage. */
static bool gq3_add_list(nf_gq3_grid *g, unsigned key, unsigned nwant)
{
    uint8_t d2[NF_GQ3_MAX_POINTS];
    bool at[GQ3_MAX_D2 + 1] = {false};
    for (unsigned p = 0; p < g->size; p++) {
        d2[p] = (uint8_t)gq3_d2(g, key, p);
        at[d2[p]] = true;
    }
    unsigned start = g->list_len, n = 0, have = 0;
    if (start + 1 + g->size + NF_GQ3_LIST_PAD > NF_GQ3_LIST_CAP) return false;
    for (unsigned d = 0; d <= GQ3_MAX_D2 && have < nwant; d++) {
        if (!at[d]) continue;
        have++;
        for (unsigned p = 0; p < g->size; p++)
            if (d2[p] == d) g->list[start + 1 + n++] = (uint16_t)p;
    }
    for (unsigned j = 0; j < n; j++) {
        const unsigned p = g->list[start + 1 + j];
        int8_t l[4];
        for (unsigned c = 0; c < 4; c++) {
            l[c] = (int8_t)g->level[p][c];
            g->value[c][start + 1 + j] = (uint8_t)(2 * l[c] + 1);
        }
        g->entry[start + 1 + j] = p | nf_gq3_key(l) << 16;
    }
    g->list[start] = (uint16_t)n;
    g->entry[start] = n;
    for (unsigned c = 0; c < 4; c++) g->value[c][start] = 0;
    g->map[key] = -1 - (int32_t)start;
    g->list_len = start + 1 + n;
    return true;
}

static const nf_gq3_grid *gq3_build(nf_gq3_grid *g, nf_format_id id)
{
    unsigned n;
    const uint32_t *entries = nf_ggml_grid4_of(id, &n);
    if (!entries || n > NF_GQ3_MAX_POINTS || !gq3_levels(g, entries, n)) return NULL;
    g->size = n;
    for (unsigned key = 0; key < NF_GQ3_KEYS; key++) g->map[key] = INT32_MIN;
    for (unsigned p = 0; p < n; p++) {
        int8_t l[4];
        for (unsigned j = 0; j < 4; j++) l[j] = (int8_t)g->level[p][j];
        g->map[nf_gq3_key(l)] = (int32_t)p;
    }
    /* ggml's iq3xs_init_impl: 2 distances for the 256-point grid, 3 for the 512-point one */
    const unsigned nwant = n == 256 ? 2 : 3;
    g->list_len = 0;
    for (unsigned key = 0; key < NF_GQ3_KEYS; key++)
        if (g->map[key] == INT32_MIN && !gq3_add_list(g, key, nwant)) return NULL;
    return g;
}

static void gq3_init_xxs(void) { gq3_ready[0] = gq3_build(&gq3_grids[0], NF_FMT_GGUF_IQ3_XXS); }
static void gq3_init_s(void) { gq3_ready[1] = gq3_build(&gq3_grids[1], NF_FMT_GGUF_IQ3_S); }

const nf_gq3_grid *nf_gq3_grid_of(nf_format_id id)
{
    switch (id) {
    case NF_FMT_GGUF_IQ3_XXS: pthread_once(&gq3_once[0], gq3_init_xxs); return gq3_ready[0];
    case NF_FMT_GGUF_IQ3_S: pthread_once(&gq3_once[1], gq3_init_s); return gq3_ready[1];
    default: return NULL;
    }
}
