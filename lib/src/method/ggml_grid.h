/* ggml's grid index, the lookup its i-quant encoders search with (docs/methods.md
 * "ggml_quantize"): for one of ggml's grids of 8-value points (IQ2_XXS, IQ2_XS, IQ2_S, and the
 * one IQ1_S and IQ1_M share), the map from an 8-value point's code to its grid index, and for a
 * point off the grid the list of grid points nearest to it, as ggml's iq2xs_init_impl builds them
 * (ggml-org/ggml d99724f2).
 *
 * A point is 8 levels l (0, 1, 2 on a grid; 3 too off it), ggml's position 2l + 1 of each value; its code is
 * sum_i l_i << 2i (at most 43690).  The levels of a grid point come from the spec's table
 * (format/ggml.h): for the IQ2 grids bytes 0x08, 0x19, 0x2b are levels 0, 1, 2; for the IQ1 grid
 * the signed bytes -1, 0, +1 are.  The distance of two points is the sum of the squared
 * differences of their levels (ggml sums those of the positions, 4 times as much: the same
 * order).  The neighbours of an off-grid point are all grid points at its nwant smallest
 * distinct distances (nwant 2 for IQ2_XXS and IQ2_XS, 1 for IQ2_S, 3 for IQ1), nearest first,
 * and at one distance by ascending grid index: ggml's qsort by (distance, index).
 *
 * Each grid is built once, at its first use, under pthread_once, and is then read-only and
 * shared by every thread; it belongs to the process and is never freed (its size is fixed:
 * at most about 6 MiB, for the IQ1 grid, see ggml_grid.c).
 *
 * Internal to the method module: included only by lib/src/method/ggml_*.c. */
#ifndef NF_METHOD_GGML_GRID_H
#define NF_METHOD_GGML_GRID_H

#include <stdint.h>

#include "format/ggml.h"

#define NF_GGML_GRID_CODES 43691u /* codes 0 .. 43690: those of 8 levels in {0, 1, 2} and below */

typedef struct nf_ggml_grid {
    unsigned size;                   /* grid points */
    const uint8_t *level;            /* size * 8: level of value i of point k at [8k + i] */
    const int32_t *map;              /* NF_GGML_GRID_CODES: the point's index, or -1 - the offset of
                                    its neighbour list in neighbours */
    const uint16_t *neighbours;      /* at an offset: the count n >= 1, then n grid indices */
    uint64_t neighbour_entries;      /* entries of neighbours (lists and their counts) */
    const uint16_t *neighbour_codes; /* beside neighbours, entry for entry: the count, then each
                                        listed point's code; then NF_GGML_GRID_PAD zeros, so a
                                        vector kernel may load a whole vector from any list */
} nf_ggml_grid;

#define NF_GGML_GRID_PAD 16u /* zero entries after neighbour_codes' last list (one 512-bit load of uint16) */

/* Grid g, built on the first call; NULL when memory ran out then (every later call gives NULL
 * too) or g is out of range. */
const nf_ggml_grid *nf_ggml_grid_get(nf_ggml_grid8 g);

/* The code of 8 levels (each 0, 1 or 2). */
static inline uint32_t nf_ggml_grid_code(const uint8_t *level)
{
    uint32_t u = 0;
    for (int i = 0; i < 8; i++) u |= (uint32_t)level[i] << 2 * i;
    return u;
}

/* The neighbour list of a code whose map entry m is negative: [0] the count n, [1..n] indices. */
static inline const uint16_t *nf_ggml_grid_neighbours(const nf_ggml_grid *grid, int32_t m)
{
    return grid->neighbours + (-(int64_t)m - 1);
}

#endif
