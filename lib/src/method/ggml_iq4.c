/* ggml_quantize's IQ4_NL and IQ4_XS encoders (docs/methods.md "ggml_quantize"): 4-bit indices
 * into ggml's non-linear table of 16 values, with its scale search (ggml_encoders.h). */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "format/ggml.h"
#include "method/common.h"
#include "method/ggml_encoders.h"
#include "method/method_impl.h"
#include "method/simd/ggml_simd.h"

/* IQ4_NL / IQ4_XS: 4-bit indices into ggml's non-linear table of 16 values (its kvalues_iq4nl). */
static const int8_t gq_iq4_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

/* Index of the table value nearest x (ggml's best_index_int8: bisection, the upper one on a tie). */
static int gq_iq4_index(float x)
{
    const int8_t *v = gq_iq4_values;
    if (x <= gq_f(v[0])) return 0;
    if (x >= gq_f(v[15])) return 15;
    int lo = 0, hi = 15;
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (x < gq_f(v[mid])) hi = mid;
        else lo = mid;
    }
    return x - gq_f(v[hi - 1]) < gq_f(v[hi]) - x ? hi - 1 : hi;
}

/* The scale of one 32-value sub-block (ggml's quantize_row_iq4_nl_impl, ntry 7, which
 * ggml_quantize_chunk uses with and without importance): indices of -max / -127, their weighted
 * least-squares scale, and 15 more trial inverse scales (t - 127) / max kept when the fit
 * improves.  L receives the first trial's indices; 0 for an all-zero sub-block (L untouched). */
float nf_gq_iq4_scale(const float *x, const float *w, uint8_t *L)
{
    const float max = nf_gq_extreme(x, 32), amax = fabsf(max);
    if (amax < GQ_ZERO_EPS) return 0.0f;
    float d = -max / gq_f(gq_iq4_values[0]);
    float id = 1 / d;
    float sumqx = 0.0f, sumq2 = 0.0f;
    for (int j = 0; j < 32; j++) {
        int l = gq_iq4_index(id * x[j]);
        L[j] = (uint8_t)l;
        float q = gq_f(gq_iq4_values[l]);
        sumqx += w[j] * q * x[j];
        sumq2 += w[j] * q * q;
    }
    d = sumq2 > 0.0f ? sumqx / sumq2 : 0.0f;
    float best = d * sumqx;
    for (int itry = -7; itry <= 7; itry++) {
        id = gq_f(itry + gq_iq4_values[0]) / max;
        sumqx = sumq2 = 0.0f;
        for (int j = 0; j < 32; j++) {
            float q = gq_f(gq_iq4_values[gq_iq4_index(id * x[j])]);
            sumqx += w[j] * q * x[j];
            sumq2 += w[j] * q * q;
        }
        if (sumq2 > 0.0f && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}

/* Weights of a sub-block: qw * sqrt(sigma2 + x^2) with importance, x^2 without. */
static void gq_iq4_weights(const float *x, const float *qw, float sigma2, float *w)
{
    for (int j = 0; j < 32; j++) w[j] = qw ? qw[j] * sqrtf(sigma2 + x[j] * x[j]) : x[j] * x[j];
}

/* sigma2 of a super-block of n values: 2 * mean square, summed and scaled as ggml does. */
static float gq_iq4_sigma2(const float *x, int n)
{
    float s = 0.0f;
    for (int j = 0; j < n; j++) s += x[j] * x[j];
    return s * (2.0f / gq_f(n));
}

static void gq_iq4_pack(const uint8_t *L, int n, uint8_t *q4)
{
    for (int i = 0; i < n / 32; i++)
        for (int j = 0; j < 16; j++) q4[16 * i + j] = (uint8_t)(L[32 * i + j] | L[32 * i + 16 + j] << 4);
}

/* IQ4_NL, 18 bytes: d, 16 bytes of indices; d = the sub-block's scale, indices again from 1/d. */
static void gq_iq4_nl_finish(const float *x, float d, uint8_t *b)
{
    uint8_t L[32];
    gq_put_f16(b, d);
    float id = d != 0.0f ? 1 / d : 0.0f;
    for (int j = 0; j < 32; j++) L[j] = (uint8_t)gq_iq4_index(id * x[j]);
    gq_iq4_pack(L, 32, b + 2);
}

void nf_gq_enc_iq4_nl(const float *x, const float *qw, float sigma2, uint8_t *b)
{
    (void)sigma2;
    float w[32];
    uint8_t L[32];
    gq_iq4_weights(x, qw, gq_iq4_sigma2(x, 32), w);
    gq_iq4_nl_finish(x, nf_gq_iq4_scale(x, w, L), b);
}

/* IQ4_NL, several blocks: their scale searches through the kernels table, a block a lane. */
void nf_gq_enc_iq4_nl_blocks(const float *x, const float *qw, float sigma2, unsigned nblk, uint8_t *out)
{
    (void)sigma2;
    float w[GQ_SPAN], d[GQ_SPAN / 32], s2[GQ_SPAN / 32];
    if (nblk == 0) return;
    for (unsigned i = 0; i < nblk; i++) s2[i] = gq_iq4_sigma2(x + 32 * i, 32);
    /* gq_iq4_weights of each block */
    for (unsigned j = 0; j < 32 * nblk; j++) w[j] = qw ? qw[j] * sqrtf(s2[j / 32] + x[j] * x[j]) : x[j] * x[j];
    nf_gq_kernels_current()->iq4_scales((int)nblk, x, w, gq_iq4_values, d);
    for (unsigned i = 0; i < nblk; i++) gq_iq4_nl_finish(x + 32 * i, d[i], out + 18 * i);
}

/* IQ4_XS, 136 bytes: d, scales_h (u16: the high 2 bits of eight 6-bit scales), scales_l[4]
 * (their low nibbles), 128 bytes of indices.  d = -(the scale of largest magnitude) / 32; each
 * sub-block's scale is rounded to l in [-32, 31] and its indices chosen again from 1 / (d * l). */
void nf_gq_enc_iq4_xs(const float *x, const float *qw, float sigma2, uint8_t *b)
{
    (void)sigma2;
    float w[GQ_SUPER], scales[8], max_scale = 0.0f, amax_scale = 0.0f;
    uint8_t L[GQ_SUPER];
    float s2 = gq_iq4_sigma2(x, (int)GQ_SUPER);
    for (int ib = 0; ib < 8; ib++) gq_iq4_weights(x + 32 * ib, qw ? qw + 32 * ib : NULL, s2, w + 32 * ib);
    nf_gq_kernels_current()->iq4_scales(8, x, w, gq_iq4_values, scales);
    for (int ib = 0; ib < 8; ib++) {
        if (fabsf(scales[ib]) > amax_scale) {
            amax_scale = fabsf(scales[ib]);
            max_scale = scales[ib];
        }
    }
    float d = -max_scale / 32.0f;
    gq_put_f16(b, d);
    float id = d != 0.0f ? 1 / d : 0.0f;
    unsigned sh = 0;
    uint8_t *sl = b + 4;
    memset(sl, 0, 4);
    for (int ib = 0; ib < 8; ib++) {
        int l = gq_clamp(gq_nearest(id * scales[ib]), -32, 31);
        float dl = d * gq_f(l);
        float idl = dl != 0.0f ? 1 / dl : 0.0f;
        for (int j = 0; j < 32; j++) L[32 * ib + j] = (uint8_t)gq_iq4_index(idl * x[32 * ib + j]);
        unsigned u = (unsigned)(l + 32);
        sl[ib / 2] = (uint8_t)(sl[ib / 2] | (u & 0xFu) << (4 * (ib % 2)));
        sh |= (u >> 4) << (2 * (ib % 8));
    }
    b[2] = (uint8_t)(sh & 0xFFu);
    b[3] = (uint8_t)(sh >> 8);
    gq_iq4_pack(L, (int)GQ_SUPER, b + 8);
}
