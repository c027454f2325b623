/* The index of ggml's IQ3 grids that ggml_quantize's IQ3_XXS and IQ3_S encoders search
 * (docs/methods.md "ggml_quantize"): for the 256- and 512-point grids of 4-value points, the map
 * from a point of the 8^4 lattice to its grid index and, for a lattice point off the grid, the
 * list of its nearest grid points in the order ggml's encoder tries them.
 *
 * A point has 4 levels l in [0, 8) and ggml's encoder sees the value 2l + 1 for each; its key is
 * l0 | l1 << 3 | l2 << 6 | l3 << 9.  The grid points come from the dequantizers' tables
 * (format/ggml.h, nf_ggml_grid4_of): level j of an entry is the rank of its byte j among the 8
 * byte values the grid uses.  The neighbours of an off-grid key are the grid points at the
 * smallest 2 (256-point grid) or 3 (512-point grid) squared distances, by distance and then by
 * grid index -- ggml's iq3xs_init_impl.
 *
 * Internal to the method module: included by lib/src/method/ggml_grid3.c and the IQ3 encoders. */
#ifndef NF_METHOD_GGML_GRID3_H
#define NF_METHOD_GGML_GRID3_H

#include <stdint.h>

#include "ninfer/format.h"

#define NF_GQ3_LEVELS 8u       /* levels per value of a point */
#define NF_GQ3_KEYS 4096u      /* lattice points: NF_GQ3_LEVELS^4 */
#define NF_GQ3_MAX_POINTS 512u /* the larger grid (IQ3_S) */
#define NF_GQ3_LIST_CAP 32768u /* words of a grid's neighbour lists (ggml's: 22825 and 28317) */
#define NF_GQ3_LIST_PAD \
    64u /* words after the last list that stay in the arrays, so a vector
                                * load of up to 64 words from inside a list stays there too */

typedef struct nf_gq3_grid {
    unsigned size;                       /* grid points: 256 (IQ3_XXS) or 512 (IQ3_S) */
    uint8_t level[NF_GQ3_MAX_POINTS][4]; /* the 4 levels of each grid point */
    int32_t map[NF_GQ3_KEYS];            /* key -> grid index, or -1 - offset of its list */
    uint16_t list[NF_GQ3_LIST_CAP];      /* per off-grid key: n, then n grid indices */
    uint32_t entry[NF_GQ3_LIST_CAP];     /* list[i] with, for a grid index p, p's key at
                                               * bit 16 (for the vector searches, which then
                                               * read a candidate's levels with its index) */
    uint8_t value[4][NF_GQ3_LIST_CAP];   /* for a grid index p at list[i], value[c][i] is
                                               * 2 level[p][c] + 1, the value ggml's search
                                               * weighs (the vector searches load a list's
                                               * values contiguously, a value a lane) */
    unsigned list_len;                   /* words of list in use, at most
                                               * NF_GQ3_LIST_CAP - NF_GQ3_LIST_PAD */
} nf_gq3_grid;

/* The index of the grid of IQ3_XXS or IQ3_S, built on first use (once, thread-safe); NULL for
 * any other format or if the grid's table is not one of 8 levels. */
const nf_gq3_grid *nf_gq3_grid_of(nf_format_id id);

/* The key of 4 levels. */
static inline unsigned nf_gq3_key(const int8_t *l)
{
    return (unsigned)l[0] | (unsigned)l[1] << 3 | (unsigned)l[2] << 6 | (unsigned)l[3] << 9;
}

/* The grid index of a key, or -1 when the key is off the grid. */
static inline int nf_gq3_point(const nf_gq3_grid *g, unsigned key) { return g->map[key] >= 0 ? (int)g->map[key] : -1; }

/* The neighbour list of an off-grid key: *n grid indices, nearest first. */
static inline const uint16_t *nf_gq3_neighbours(const nf_gq3_grid *g, unsigned key, unsigned *n)
{
    const uint16_t *p = g->list + (-1 - g->map[key]);
    *n = p[0];
    return p + 1;
}

#endif
