/* ggml's grid index for its i-quant searches (ggml_grid.h; docs/methods.md "ggml_quantize").
 *
 * Sizes: the map is 43691 int32 (171 KiB) per grid; the neighbour lists of the 43691 - size
 * off-grid codes hold 0.42 M (IQ2_XXS), 0.55 M (IQ2_XS), 0.21 M (IQ2_S) and 1.38 M (IQ1) uint16
 * entries, and as many codes beside them (which the vector searches of simd/ggml_iq2_simd.h load
 * instead of looking each listed point up), so the IQ1 grid takes about 6 MiB.  Building costs
 * one pass over every grid point for each off-grid code (for IQ1, about 85 M point distances,
 * two table lookups each: about 0.3 s of CPU; the IQ2 grids 0.05 .. 0.14 s, where ggml's own
 * init takes 1 .. 6 s).  ggml sorts the whole grid by distance for every code, which gives the
 * same lists: the distances are small integers (0 .. 72), so a histogram finds the nwant
 * smallest ones and the points at each are taken in index order. */
#include "method/ggml_grid.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/checked.h"

/* 8 values, each at most (3 - 0)^2: a code below 43691 may hold level 3 (the code 3 does), and
 * ggml lists neighbours for those codes too */
#define GG_MAX_DIST 72

typedef struct gg_built {
    nf_ggml_grid grid;
    uint8_t *level;
    int32_t *map;
    uint16_t *neighbours;
    uint16_t *neighbour_codes;
    uint64_t cap;
} gg_built;

/* The level of a table byte of grid g, or -1 for a byte no point of g holds. */
static int gg_byte_level(nf_ggml_grid8 g, unsigned b)
{
    if (g == NF_GGML_GRID8_IQ1S) return b == 0xFFu ? 0 : b == 0x00u ? 1 : b == 0x01u ? 2 : -1;
    return b == 0x08u ? 0 : b == 0x19u ? 1 : b == 0x2Bu ? 2 : -1;
}

/* How many distinct distances of neighbours ggml keeps for grid g (iq2xs_init_impl's nwant). */
static int gg_nwant(nf_ggml_grid8 g)
{
    return g == NF_GGML_GRID8_IQ1S ? 3 : g == NF_GGML_GRID8_IQ2S ? 1 : 2;
}

/* Room for `want` entries in the neighbour lists (doubling). */
static bool gg_reserve(gg_built *b, uint64_t want)
{
    if (want <= b->cap) return true;
    uint64_t cap = b->cap ? b->cap : 65536, bytes;
    while (cap < want)
        if (!nf_mul_u64(cap, 2, &cap)) return false;
    size_t size;
    if (!nf_mul_u64(cap, sizeof *b->neighbours, &bytes) || !nf_u64_to_size(bytes, &size)) return false;
    uint16_t *p = realloc(b->neighbours, size);
    if (!p) return false;
    b->neighbours = p;
    b->cap = cap;
    return true;
}

/* Levels and map of the grid points; false for a table byte that is no level or two points
 * with one code (neither happens with the spec's tables: test_ggml_grid). */
static bool gg_points(nf_ggml_grid8 g, gg_built *b)
{
    unsigned n;
    const uint64_t *pts = nf_ggml_grid8_points(g, &n);
    for (uint32_t c = 0; c < NF_GGML_GRID_CODES; c++) b->map[c] = -1;
    for (unsigned k = 0; k < n; k++) {
        for (unsigned i = 0; i < 8; i++) {
            int l = gg_byte_level(g, (unsigned)(pts[k] >> 8 * i) & 0xFFu);
            if (l < 0) return false;
            b->level[8 * k + i] = (uint8_t)l;
        }
        uint32_t code = nf_ggml_grid_code(b->level + 8 * k);
        if (b->map[code] >= 0) return false;
        b->map[code] = (int32_t)k;
    }
    b->grid.size = n;
    return true;
}

/* The distance of two 4-value halves of codes (levels 0 .. 3 each): half[a * 256 + b]. */
static void gg_half_distances(uint8_t *half)
{
    for (unsigned a = 0; a < 256; a++)
        for (unsigned b = 0; b < 256; b++) {
            unsigned d = 0;
            for (unsigned i = 0; i < 4; i++) {
                int la = (int)(a >> 2 * i & 3u), lb = (int)(b >> 2 * i & 3u);
                d += (unsigned)((la - lb) * (la - lb));
            }
            half[a * 256 + b] = (uint8_t)d;
        }
}

/* Scratch of the neighbour search: the halves of every grid point's code, the distance table of
 * halves and each point's distance to the code at hand. */
typedef struct gg_scratch {
    uint8_t *lo, *hi, *half, *dist;
} gg_scratch;

/* Appends the neighbour list of the off-grid code c and points its map entry at it: the points
 * of the nwant smallest distances, by distance, then index (one stable counting pass). */
static bool gg_list(gg_built *b, int nwant, uint32_t c, const gg_scratch *s)
{
    const uint8_t *rlo = s->half + (c & 0xFFu) * 256, *rhi = s->half + (c >> 8) * 256;
    unsigned hist[GG_MAX_DIST + 1] = {0};
    for (unsigned j = 0; j < b->grid.size; j++) {
        uint8_t d = (uint8_t)(rlo[s->lo[j]] + rhi[s->hi[j]]);
        s->dist[j] = d;
        hist[d]++;
    }
    unsigned n = 0, top = 0, start[GG_MAX_DIST + 1];
    int have = 0;
    for (unsigned d = 0; d <= GG_MAX_DIST && have < nwant; d++) {
        if (!hist[d]) continue;
        have++;
        start[d] = n;
        n += hist[d];
        top = d;
    }
    uint64_t at = b->grid.neighbour_entries, end;
    if (at > (uint64_t)INT32_MAX || !nf_add_u64(at, 1 + (uint64_t)n, &end) || !gg_reserve(b, end)) return false;
    b->map[c] = -1 - (int32_t)at;
    uint16_t *list = b->neighbours + at;
    list[0] = (uint16_t)n;
    for (unsigned j = 0; j < b->grid.size; j++)
        if (s->dist[j] <= top) list[1 + start[s->dist[j]]++] = (uint16_t)j;
    b->grid.neighbour_entries = end;
    return true;
}

/* The codes beside the neighbour lists (ggml_grid.h), padded for vector loads. */
static bool gg_list_codes(gg_built *b)
{
    uint64_t entries = b->grid.neighbour_entries, total, bytes;
    size_t size;
    if (!nf_add_u64(entries, NF_GGML_GRID_PAD, &total) || !nf_mul_u64(total, sizeof *b->neighbour_codes, &bytes) ||
        !nf_u64_to_size(bytes, &size))
        return false;
    b->neighbour_codes = calloc(1, size);
    if (!b->neighbour_codes) return false;
    for (uint32_t c = 0; c < NF_GGML_GRID_CODES; c++) {
        if (b->map[c] >= 0) continue;
        uint64_t at = (uint64_t)(-(int64_t)b->map[c] - 1);
        const uint16_t *list = b->neighbours + at;
        b->neighbour_codes[at] = list[0];
        for (unsigned j = 1; j <= list[0]; j++)
            b->neighbour_codes[at + j] = (uint16_t)nf_ggml_grid_code(b->level + 8 * (size_t)list[j]);
    }
    return true;
}

static bool gg_build(nf_ggml_grid8 g, gg_built *b)
{
    unsigned n;
    if (!nf_ggml_grid8_points(g, &n)) return false;
    gg_scratch s = {malloc(n), malloc(n), malloc(256 * 256), malloc(n)};
    b->level = malloc((size_t)n * 8);
    b->map = malloc(NF_GGML_GRID_CODES * sizeof *b->map);
    bool ok = b->level && b->map && s.lo && s.hi && s.half && s.dist && gg_points(g, b);
    if (ok) {
        gg_half_distances(s.half);
        for (unsigned j = 0; j < n; j++) {
            uint32_t code = nf_ggml_grid_code(b->level + 8 * j);
            s.lo[j] = (uint8_t)(code & 0xFFu);
            s.hi[j] = (uint8_t)(code >> 8);
        }
    }
    for (uint32_t c = 0; ok && c < NF_GGML_GRID_CODES; c++)
        if (b->map[c] < 0) ok = gg_list(b, gg_nwant(g), c, &s);
    free(s.lo);
    free(s.hi);
    free(s.half);
    free(s.dist);
    if (ok) {
        uint16_t *fit = realloc(b->neighbours, (size_t)b->grid.neighbour_entries * sizeof *fit);
        if (fit) b->neighbours = fit;
        ok = gg_list_codes(b);
    }
    if (ok) {
        b->grid.level = b->level;
        b->grid.map = b->map;
        b->grid.neighbours = b->neighbours;
        b->grid.neighbour_codes = b->neighbour_codes;
        return true;
    }
    free(b->level);
    free(b->map);
    free(b->neighbours);
    free(b->neighbour_codes);
    memset(b, 0, sizeof *b);
    return false;
}

static gg_built gg_grids[NF_GGML_GRID8_COUNT];
static bool gg_ok[NF_GGML_GRID8_COUNT];
static pthread_once_t gg_once[NF_GGML_GRID8_COUNT] = {PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT,
                                                      PTHREAD_ONCE_INIT};

/* pthread_once takes no argument: one starter per grid. */
static void gg_init_iq2xxs(void) { gg_ok[NF_GGML_GRID8_IQ2XXS] = gg_build(NF_GGML_GRID8_IQ2XXS, &gg_grids[NF_GGML_GRID8_IQ2XXS]); }
static void gg_init_iq2xs(void) { gg_ok[NF_GGML_GRID8_IQ2XS] = gg_build(NF_GGML_GRID8_IQ2XS, &gg_grids[NF_GGML_GRID8_IQ2XS]); }
static void gg_init_iq2s(void) { gg_ok[NF_GGML_GRID8_IQ2S] = gg_build(NF_GGML_GRID8_IQ2S, &gg_grids[NF_GGML_GRID8_IQ2S]); }
static void gg_init_iq1s(void) { gg_ok[NF_GGML_GRID8_IQ1S] = gg_build(NF_GGML_GRID8_IQ1S, &gg_grids[NF_GGML_GRID8_IQ1S]); }

const nf_ggml_grid *nf_ggml_grid_get(nf_ggml_grid8 g)
{
    static void (*const init[NF_GGML_GRID8_COUNT])(void) = {gg_init_iq2xxs, gg_init_iq2xs, gg_init_iq2s,
                                                            gg_init_iq1s};
    if ((unsigned)g >= NF_GGML_GRID8_COUNT) return NULL;
    pthread_once(&gg_once[g], init[g]);
    return gg_ok[g] ? &gg_grids[g].grid : NULL;
}
