/* ggml's grid index for its i-quant searches (ggml_grid.h; docs/methods.md "ggml_quantize").
 *
 * Sizes: the map is 43691 int32 (171 KiB) per grid; the neighbour lists of the 43691 - size
 * off-grid codes hold 0.42 M (IQ2_XXS), 0.55 M (IQ2_XS), 0.21 M (IQ2_S) and 1.38 M (IQ1) uint16
 * entries, and as many codes beside them (which the vector searches of simd/ggml_iq2_simd.h load
 * instead of looking each listed point up), so the IQ1 grid takes about 6 MiB.  ggml sorts the
 * whole grid by distance for every code; measuring every point for every code gives the same
 * lists but costs 85 M point distances for IQ1 (0.25 s of CPU, 0.45 s for the four grids).  The
 * search here splits a code into its two 4-value halves, whose distances add up (gg_list): per
 * code it reads one bit mask of distances per group of points sharing a high half, nearest
 * groups first and only until the nearest distances are settled, then walks only the points it
 * lists, so building costs little more than writing the lists (about 0.1 s for IQ1, 0.2 s for
 * the four grids on the machine of bench/README.md, "The budget's measuring pass").  The lists are
 * byte for byte those of the brute-force search (tests/unit/test_ggml_grid.c). */
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
static int gg_nwant(nf_ggml_grid8 g) { return g == NF_GGML_GRID8_IQ1S ? 3 : g == NF_GGML_GRID8_IQ2S ? 1 : 2; }

/* Room for `want` entries in the neighbour lists and the codes beside them, and the padding
 * after them (doubling). */
static bool gg_reserve(gg_built *b, uint64_t want)
{
    if (!nf_add_u64(want, NF_GGML_GRID_PAD, &want)) return false;
    if (want <= b->cap) return true;
    uint64_t cap = b->cap ? b->cap : 65536, bytes;
    while (cap < want)
        if (!nf_mul_u64(cap, 2, &cap)) return false;
    size_t size;
    if (!nf_mul_u64(cap, sizeof *b->neighbours, &bytes) || !nf_u64_to_size(bytes, &size)) return false;
    uint16_t *p = realloc(b->neighbours, size);
    if (!p) return false;
    b->neighbours = p;
    p = realloc(b->neighbour_codes, size);
    if (!p) return false;
    b->neighbour_codes = p;
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

/* The neighbour search, by halves (docs/methods.md "ggml_quantize", *Grid tables*): a code's
 * distance to a point is the distance of their low halves plus that of their high halves.  The
 * grid's points are put in groups of one high half; for every low half a, each group's points are
 * ordered by their low half's distance to a (then by index) and the set of those distances is a
 * bit mask.  A code then finds the distances present from one shifted mask per group, and walks
 * only the points at the nwant smallest of them, instead of measuring every point of the grid. */
__extension__ typedef unsigned __int128 gg_u128;

typedef struct gg_scratch {
    uint8_t *half;        /* 256 * 256: half[a * 256 + b] */
    unsigned groups;      /* distinct high halves of the points */
    uint8_t ghi[256];     /* each group's high half */
    unsigned gstart[257]; /* group k's points are order[gstart[k] .. gstart[k + 1]) */
    uint16_t *order;      /* 256 * size: for low half a, the points of each group by distance */
    uint8_t *dlo;         /* 256 * size: beside order, each point's low-half distance to a */
    uint64_t *mask;       /* 256 * groups: for low half a, the distances of each group's points */
    uint64_t *bits;       /* GG_NWANT_MAX * words: the points found at each kept distance */
    uint16_t *code;       /* size: each point's code */
    uint8_t *gsort;       /* 256 * 256: for high half h, the groups by their distance to h */
    uint8_t *gdist;       /* 256 * 256: beside gsort, that distance */
    unsigned words;       /* 64-bit words of a bitmap of the grid's points */
} gg_scratch;

#define GG_NWANT_MAX 3

/* Groups, orders and masks of the grid's points (b->level, b->grid.size set).  False when
 * memory runs out. */
static bool gg_scratch_init(const gg_built *b, gg_scratch *s)
{
    const unsigned n = b->grid.size;
    s->words = (n + 63) / 64;
    s->half = malloc(256 * 256);
    s->order = malloc((size_t)256 * n * sizeof *s->order);
    s->dlo = malloc((size_t)256 * n);
    s->mask = calloc((size_t)256 * 256, sizeof *s->mask);
    s->bits = calloc((size_t)GG_NWANT_MAX * s->words, sizeof *s->bits);
    s->code = malloc((n ? n : 1) * sizeof *s->code);
    s->gsort = malloc(256 * 256);
    s->gdist = malloc(256 * 256);
    uint8_t *lo = malloc(n ? n : 1);
    uint16_t *byhi = malloc((n ? n : 1) * sizeof *byhi);
    if (!s->half || !s->order || !s->dlo || !s->mask || !s->bits || !s->code || !s->gsort || !s->gdist || !lo ||
        !byhi) {
        free(lo);
        free(byhi);
        return false;
    }
    gg_half_distances(s->half);
    /* the points by high half, then index: a counting sort */
    unsigned count[257] = {0};
    for (unsigned j = 0; j < n; j++) {
        uint32_t code = nf_ggml_grid_code(b->level + 8 * (size_t)j);
        s->code[j] = (uint16_t)code;
        lo[j] = (uint8_t)(code & 0xFFu);
        count[(code >> 8) + 1]++;
    }
    for (unsigned h = 0; h < 256; h++) count[h + 1] += count[h];
    unsigned at[256];
    for (unsigned h = 0; h < 256; h++) at[h] = count[h];
    for (unsigned j = 0; j < n; j++) byhi[at[s->code[j] >> 8]++] = (uint16_t)j;
    s->groups = 0;
    for (unsigned h = 0; h < 256; h++)
        if (count[h + 1] > count[h]) {
            s->ghi[s->groups] = (uint8_t)h;
            s->gstart[s->groups++] = count[h];
        }
    s->gstart[s->groups] = n;
    /* for each low half a, each group by (distance to a, index): a stable counting sort */
    for (unsigned a = 0; a < 256; a++) {
        const uint8_t *row = s->half + a * 256;
        uint16_t *ord = s->order + (size_t)a * n;
        uint8_t *dl = s->dlo + (size_t)a * n;
        for (unsigned k = 0; k < s->groups; k++) {
            unsigned c[GG_MAX_DIST / 2 + 2] = {0};
            uint64_t m = 0;
            for (unsigned p = s->gstart[k]; p < s->gstart[k + 1]; p++) {
                unsigned d = row[lo[byhi[p]]];
                c[d + 1]++;
                m |= (uint64_t)1 << d;
            }
            for (unsigned d = 0; d <= GG_MAX_DIST / 2; d++) c[d + 1] += c[d];
            for (unsigned p = s->gstart[k]; p < s->gstart[k + 1]; p++) {
                unsigned d = row[lo[byhi[p]]], q = s->gstart[k] + c[d]++;
                ord[q] = byhi[p];
                dl[q] = (uint8_t)d;
            }
            s->mask[a * 256 + k] = m;
        }
    }
    /* for each high half h, the groups by (distance of their high half to h, group): a stable
     * counting sort */
    for (unsigned h = 0; h < 256; h++) {
        unsigned c[GG_MAX_DIST / 2 + 2] = {0};
        for (unsigned k = 0; k < s->groups; k++) c[s->half[h * 256 + s->ghi[k]] + 1]++;
        for (unsigned d = 0; d <= GG_MAX_DIST / 2; d++) c[d + 1] += c[d];
        for (unsigned k = 0; k < s->groups; k++) {
            unsigned d = s->half[h * 256 + s->ghi[k]], q = c[d]++;
            s->gsort[h * 256 + q] = (uint8_t)k;
            s->gdist[h * 256 + q] = (uint8_t)d;
        }
    }
    free(lo);
    free(byhi);
    return true;
}

static void gg_scratch_free(gg_scratch *s)
{
    free(s->half);
    free(s->order);
    free(s->dlo);
    free(s->mask);
    free(s->bits);
    free(s->code);
    free(s->gsort);
    free(s->gdist);
}

/* The lowest set bit of a nonzero 128-bit mask. */
static unsigned gg_ctz128(gg_u128 m)
{
    uint64_t low = (uint64_t)m;
    return low ? (unsigned)__builtin_ctzll(low) : 64u + (unsigned)__builtin_ctzll((uint64_t)(m >> 64));
}

/* Appends the neighbour list of the off-grid code c and points its map entry at it: the points
 * of the nwant smallest distances, by distance, then index. */
static bool gg_list(gg_built *b, int nwant, uint32_t c, const gg_scratch *s)
{
    const unsigned a = c & 0xFFu, n = b->grid.size;
    const uint8_t *gk = s->gsort + (c >> 8) * 256, *gd = s->gdist + (c >> 8) * 256;
    const uint64_t *mask = s->mask + a * 256;
    /* The distances of the grid's points to c, the groups taken nearest first: once nwant
     * distances lie below the next group's high-half distance, no later group adds one there. */
    gg_u128 present = 0;
    for (unsigned k = 0; k < s->groups; k++) {
        uint64_t below = (uint64_t)present & (((uint64_t)1 << gd[k]) - 1); /* gd[k] <= 36 */
        unsigned found = 0;
        for (; below && found < (unsigned)nwant; below &= below - 1) found++;
        if (found == (unsigned)nwant) break;
        present |= (gg_u128)mask[gk[k]] << gd[k];
    }
    /* the kept distances, nearest first; a point's rank among them is how many it exceeds */
    unsigned kept[GG_NWANT_MAX], have = 0;
    for (gg_u128 m = present; m && have < (unsigned)nwant; m &= m - 1) kept[have++] = gg_ctz128(m);
    const unsigned top = have ? kept[have - 1] : 0;
    for (unsigned r = have; r < GG_NWANT_MAX; r++) kept[r] = top;
    const uint16_t *ord = s->order + (size_t)a * n;
    const uint8_t *dl = s->dlo + (size_t)a * n;
    unsigned count = 0;
    for (unsigned k = 0; k < s->groups && gd[k] <= top; k++) {
        const unsigned dh = gd[k], g = gk[k];
        for (unsigned p = s->gstart[g]; p < s->gstart[g + 1] && dh + dl[p] <= top; p++) {
            const unsigned d = dh + dl[p], r = (unsigned)(d > kept[0]) + (unsigned)(d > kept[1]);
            s->bits[(size_t)r * s->words + ord[p] / 64] |= (uint64_t)1 << (ord[p] % 64);
            count++;
        }
    }
    uint64_t at = b->grid.neighbour_entries, end;
    if (at > (uint64_t)INT32_MAX || !nf_add_u64(at, 1 + (uint64_t)count, &end) || !gg_reserve(b, end)) return false;
    b->map[c] = -1 - (int32_t)at;
    uint16_t *list = b->neighbours + at, *codes = b->neighbour_codes + at;
    list[0] = codes[0] = (uint16_t)count;
    unsigned out = 1;
    uint64_t *bits = s->bits;
    for (unsigned r = 0; r < have; r++) /* rank by rank, each in index order */
        for (unsigned w = 0; w < s->words; w++, bits++) {
            for (uint64_t m = *bits; m; m &= m - 1) {
                const unsigned j = w * 64 + (unsigned)__builtin_ctzll(m);
                list[out] = (uint16_t)j;
                codes[out++] = s->code[j];
            }
            *bits = 0;
        }
    b->grid.neighbour_entries = end;
    return true;
}

static bool gg_build(nf_ggml_grid8 g, gg_built *b)
{
    unsigned n;
    if (!nf_ggml_grid8_points(g, &n)) return false;
    gg_scratch s = {0};
    b->level = malloc((size_t)n * 8);
    b->map = malloc(NF_GGML_GRID_CODES * sizeof *b->map);
    bool ok = b->level && b->map && gg_points(g, b) && gg_scratch_init(b, &s);
    for (uint32_t c = 0; ok && c < NF_GGML_GRID_CODES; c++)
        if (b->map[c] < 0) ok = gg_list(b, gg_nwant(g), c, &s);
    gg_scratch_free(&s);
    if (ok) { /* the lists' padding (ggml_grid.h), then what the doubling left unused */
        memset(b->neighbour_codes + b->grid.neighbour_entries, 0, NF_GGML_GRID_PAD * sizeof *b->neighbour_codes);
        size_t entries = (size_t)b->grid.neighbour_entries;
        uint16_t *fit = realloc(b->neighbours, entries * sizeof *fit);
        if (fit) b->neighbours = fit;
        fit = realloc(b->neighbour_codes, (entries + NF_GGML_GRID_PAD) * sizeof *fit);
        if (fit) b->neighbour_codes = fit;
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
static void gg_init_iq2xxs(void)
{
    gg_ok[NF_GGML_GRID8_IQ2XXS] = gg_build(NF_GGML_GRID8_IQ2XXS, &gg_grids[NF_GGML_GRID8_IQ2XXS]);
}
static void gg_init_iq2xs(void)
{
    gg_ok[NF_GGML_GRID8_IQ2XS] = gg_build(NF_GGML_GRID8_IQ2XS, &gg_grids[NF_GGML_GRID8_IQ2XS]);
}
static void gg_init_iq2s(void)
{
    gg_ok[NF_GGML_GRID8_IQ2S] = gg_build(NF_GGML_GRID8_IQ2S, &gg_grids[NF_GGML_GRID8_IQ2S]);
}
static void gg_init_iq1s(void)
{
    gg_ok[NF_GGML_GRID8_IQ1S] = gg_build(NF_GGML_GRID8_IQ1S, &gg_grids[NF_GGML_GRID8_IQ1S]);
}

const nf_ggml_grid *nf_ggml_grid_get(nf_ggml_grid8 g)
{
    static void (*const init[NF_GGML_GRID8_COUNT])(void) = {gg_init_iq2xxs, gg_init_iq2xs, gg_init_iq2s, gg_init_iq1s};
    if ((unsigned)g >= NF_GGML_GRID8_COUNT) return NULL;
    pthread_once(&gg_once[g], init[g]);
    return gg_ok[g] ? &gg_grids[g].grid : NULL;
}
