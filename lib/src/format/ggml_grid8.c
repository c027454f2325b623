/* ggml's grids of 8-value points for the layers above (ggml.h): the tables stay private to this
 * module (ggml_tables.h), and the i-quant encoders' grid index (method/ggml_grid.c) reads them
 * through this one accessor instead of holding a second copy. */
#include "format/ggml.h"

#include <stddef.h>
#include <stdint.h>

#include "format/ggml_tables.h"

const uint64_t *nf_ggml_grid8_points(nf_ggml_grid8 g, unsigned *size)
{
    switch (g) {
    case NF_GGML_GRID8_IQ2XXS: *size = NF_GGML_IQ2XXS_GRID_SIZE; return nf_ggml_iq2xxs_grid;
    case NF_GGML_GRID8_IQ2XS: *size = NF_GGML_IQ2XS_GRID_SIZE; return nf_ggml_iq2xs_grid;
    case NF_GGML_GRID8_IQ2S: *size = NF_GGML_IQ2S_GRID_SIZE; return nf_ggml_iq2s_grid;
    case NF_GGML_GRID8_IQ1S: *size = NF_GGML_IQ1S_GRID_SIZE; return nf_ggml_iq1s_grid;
    case NF_GGML_GRID8_COUNT: break;
    }
    *size = 0;
    return NULL;
}
