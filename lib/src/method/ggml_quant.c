/* ggml_quantize (docs/methods.md "ggml_quantize"): binary32 source rows into the gguf_* block
 * formats, giving the bytes ggml's own quantizer writes for them (ggml_quantize_chunk, which
 * llama-quantize calls) at the ggml version docs/methods.md names.
 *
 * Every choice below -- the order of each binary32 operation, the integer conversions, which
 * path runs with and without an importance vector -- is the one ggml makes, because the point of
 * the method is the same bytes (docs/methods.md lists the facts per type).  The arithmetic is
 * plain binary32 without contraction (-ffp-contract=off, docs/library.md "Build flags"), as in
 * ggml's portable build.  The searches below are the scalar reference; the encoders call them
 * through the kernels table of method/simd/ggml_simd.h (one sub-block a vector lane, the same
 * bytes), taken once per call of nf_ggml_quantize_rows for the level common/cpu.h chose.
 *
 * Layering: below the dispatcher (dispatch.c); uses common.c's checks and messages and the
 * format module's interface (format/ggml.h) for the non-finite scale check. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "format/ggml.h"
#include "method/common.h"
#include "method/ggml_encoders.h"
#include "method/method_impl.h"
#include "method/simd/ggml_simd.h"

/* ---------------------------------------------------------------- the searches' kernels table */

/* The scalar instance of ggml_simd.h's table: the reference searches, one sub-block after the
 * other. */
static void fit_min_scalar(int nsub, int n, int nmax, const float *x, const float *w, uint8_t *L, float *scales,
                           float *mins, float rmin, float rdelta, int nstep, bool use_mad)
{
    for (int j = 0; j < nsub; j++)
        scales[j] = nf_gq_fit_min(n, nmax, x + j * n, w + j * n, L + j * n, &mins[j], rmin, rdelta, nstep, use_mad);
}

static void fit_signed_scalar(int nsub, int n, int nmax, const float *x, const float *qw, int8_t *L, float *scales)
{
    for (int j = 0; j < nsub; j++) scales[j] = nf_gq_fit_signed(n, nmax, x + j * n, L + j * n, qw ? qw + j * n : NULL);
}

static void fit_q3_scalar(int nsub, int n, int nmax, const float *x, int8_t *L, float *scales)
{
    for (int j = 0; j < nsub; j++) scales[j] = nf_gq_fit_q3(n, nmax, x + j * n, L + j * n);
}

static size_t plain_blocks_scalar(nf_gq_plain type, nf_gq_words words, size_t nblk, const void *src, uint8_t *out);

static void sqrt_weights_scalar(size_t n, const float *x, const float *qw, float s2, float *w)
{
    for (size_t j = 0; j < n; j++) w[j] = qw[j] * sqrtf(s2 + x[j] * x[j]);
}
static void gq_q2_0_plain(const float *x, float *d, uint8_t *q);

static void requant_scalar(int n, const float *x, float d, bool with_min, float dm, int lo, int hi, int offset,
                           uint8_t *L)
{
    for (int i = 0; i < n; i++)
        L[i] = (uint8_t)(gq_clamp(gq_nearest((with_min ? x[i] + dm : x[i]) / d), lo, hi) + offset);
}

static void codes_q2_0_scalar(unsigned nblk, const float *x, float *d, uint8_t *q)
{
    for (unsigned i = 0; i < nblk; i++) gq_q2_0_plain(x + 64 * i, d + i, q + 16 * i);
}

static void iq4_scales_scalar(int nsub, const float *x, const float *w, const int8_t *values, float *scales)
{
    (void)values; /* gq_iq4_values, which the reference reads itself */
    uint8_t L[32];
    for (int j = 0; j < nsub; j++) scales[j] = nf_gq_iq4_scale(x + 32 * j, w + 32 * j, L);
}

const nf_gq_kernels nf_gq_kernels_scalar = {.name = "scalar",
                                            .fit_min = fit_min_scalar,
                                            .fit_signed = fit_signed_scalar,
                                            .fit_q3 = fit_q3_scalar,
                                            .iq4_scales = iq4_scales_scalar,
                                            .requant = requant_scalar,
                                            .iq3_trials = nf_gq3_trials_ref,
                                            .iq1s_split = nf_gq1s_split_ref,
                                            .iq1m_split = nf_gq1m_split_ref,
                                            .iq1_nearest = nf_gq1_nearest_ref,
                                            .plain_blocks = plain_blocks_scalar,
                                            .sqrt_weights = sqrt_weights_scalar,
                                            .codes_q2_0 = codes_q2_0_scalar,
                                            .iq1_order = nf_gq1_order_ref};

NF_SIMD_SELECTOR(nf_gq_kernels, nf_gq_kernels, nf_gq_kernels_scalar, nf_gq_kernels_avx2, nf_gq_kernels_avx512,
                 nf_gq_kernels_neon)

/* The table of the running call of nf_ggml_quantize_rows on this thread: the block encoders keep
 * gq_block_fn's signature (encoders in other files need no table), so they find it here. */
static _Thread_local const nf_gq_kernels *gq_kern;

const nf_gq_kernels *nf_gq_kernels_current(void) { return gq_kern ? gq_kern : &nf_gq_kernels_scalar; }

/* ---------------------------------------------------------------- one encoder per block type */

/* Q8_0, 34 bytes: d, 32 int8 codes; d = amax / 127, codes roundf(x * (1 / d)).  ggml ignores the
 * importance vector for Q8_0. */
static void gq_q8_0_plain(const float *x, float *d, uint8_t *q)
{
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) {
        float a = fabsf(x[j]);
        amax = amax > a ? amax : a;
    }
    *d = amax / 127.0f;
    float id = *d != 0.0f ? 1.0f / *d : 0.0f;
    for (int j = 0; j < 32; j++) q[j] = (uint8_t)gq_trunc_i8(roundf(x[j] * id));
}

static void enc_q8_0(const float *x, const float *qw, float sigma2, uint8_t *b)
{
    (void)qw;
    (void)sigma2;
    float d;
    gq_q8_0_plain(x, &d, b + 2);
    gq_put_f16(b, d);
}

/* float -> int as x86-64 converts it (cvttss2si): truncation toward zero, and INT32_MIN for NaN
 * or a value outside int32.  Q2_0 converts a rounded product that is infinite or NaN when the
 * block's largest magnitude is so small that its inverse overflows. */
static int gq_trunc_i32(float f) { return (f > -2147483904.0f && f < 2147483648.0f) ? (int)f : INT32_MIN; }

/* Q2_0, 18 bytes: d, 16 bytes of 2-bit codes (value j in bits 2 (j % 4) of byte j / 4, code c
 * meaning (c - 1) d).  d = the block's largest magnitude (binary32, rounded only where stored),
 * code = clamp((int)roundf(x * (1 / d)) + 1, 0, 3), as ggml's quantize_row_q2_0_ref, which
 * ggml uses with and without an importance vector (it ignores the vector).  d (unrounded) to *d,
 * the 16 code bytes to q. */
static void gq_q2_0_plain(const float *x, float *d, uint8_t *q)
{
    float amax = 0.0f;
    for (int j = 0; j < 64; j++) {
        float a = fabsf(x[j]);
        if (a > amax) amax = a;
    }
    float id = amax > 0.0f ? 1.0f / amax : 0.0f;
    *d = amax;
    memset(q, 0, 16);
    for (int j = 0; j < 64; j++) {
        /* + 1 after the conversion, as ggml: INT32_MIN + 1 still clamps to 0 */
        int c = gq_clamp(gq_trunc_i32(roundf(x[j] * id)) + 1, 0, 3);
        q[j / 4] = (uint8_t)(q[j / 4] | (unsigned)c << (2 * (j % 4)));
    }
}

static void enc_q2_0(const float *x, const float *qw, float sigma2, uint8_t *b)
{
    (void)qw;
    (void)sigma2;
    float d;
    gq_q2_0_plain(x, &d, b + 2);
    gq_put_f16(b, d);
}

/* Q2_0, several blocks: the scales and codes through the kernels table. */
static void enc_q2_0_blocks(const float *x, const float *qw, float sigma2, unsigned nblk, uint8_t *out)
{
    (void)qw;
    (void)sigma2;
    float d[GQ_SPAN / 64];
    uint8_t q[GQ_SPAN / 4];
    gq_kern->codes_q2_0(nblk, x, d, q);
    for (unsigned i = 0; i < nblk; i++) {
        gq_put_f16(out + 18 * i, d[i]);
        memcpy(out + 18 * i + 2, q + 16 * i, 16);
    }
}

/* The scale (written to b) and codes L in [0, 2 nmax) of a Q4_0 (nmax 8) or Q5_0 (nmax 16)
 * block.  Without importance: d = extreme / -nmax, code = min(2 nmax - 1, trunc(x * (1 / d) +
 * nmax + 0.5)).  With it: nf_gq_fit_signed with weights qw * sqrt(sigma2 + x^2). */
static void gq_x0_plain(const float *x, int nmax, float *d, uint8_t *L)
{
    *d = nf_gq_extreme(x, 32) / -gq_f(nmax);
    float id = *d != 0.0f ? 1.0f / *d : 0.0f;
    /* the low byte is all the packing keeps of a code */
    for (int j = 0; j < 32; j++) L[j] = (uint8_t)gq_min(2 * nmax - 1, gq_trunc_i8(x[j] * id + (gq_f(nmax) + 0.5f)));
}

static void gq_codes_x0(const float *x, const float *qw, float sigma2, int nmax, uint8_t *b, int *L)
{
    if (!qw) {
        float d;
        uint8_t l8[32];
        gq_x0_plain(x, nmax, &d, l8);
        gq_put_f16(b, d);
        for (int j = 0; j < 32; j++) L[j] = l8[j];
    } else {
        float w[32];
        int8_t l8[32];
        for (int j = 0; j < 32; j++) w[j] = qw[j] * sqrtf(sigma2 + x[j] * x[j]);
        gq_put_f16(b, nf_gq_fit_signed(32, nmax, x, l8, w));
        for (int j = 0; j < 32; j++) L[j] = l8[j];
    }
}

/* gq_codes_x0 with importance for nblk blocks at once, their searches through the kernels table:
 * the scale of block i to b + i * bb, its codes to L + 32 * i. */
static void gq_codes_x0_imp(const float *x, const float *qw, float sigma2, int nmax, unsigned nblk, size_t bb,
                            uint8_t *b, int *L)
{
    float w[GQ_SPAN], scales[GQ_SPAN / 32];
    int8_t l8[GQ_SPAN];
    if (nblk == 0) return;
    gq_kern->sqrt_weights(32 * (size_t)nblk, x, qw, sigma2, w);
    gq_kern->fit_signed((int)nblk, 32, nmax, x, w, l8, scales);
    for (unsigned i = 0; i < nblk; i++) gq_put_f16(b + i * bb, scales[i]);
    for (unsigned j = 0; j < 32 * nblk; j++) L[j] = l8[j];
}

/* Q4_0, 18 bytes: d, 16 bytes of nibbles (value j low, j + 16 high); gq_codes_x0 with nmax 8. */
static void gq_pack_q4_0(const int *L, uint8_t *b)
{
    /* unmasked, as ggml ORs the two codes (both are in [0, 15] for finite products) */
    for (int j = 0; j < 16; j++) b[2 + j] = (uint8_t)((unsigned)L[j] | (unsigned)L[j + 16] << 4);
}

static void enc_q4_0(const float *x, const float *qw, float sigma2, uint8_t *b)
{
    int L[32];
    gq_codes_x0(x, qw, sigma2, 8, b, L);
    gq_pack_q4_0(L, b);
}

/* nblk Q4_0 or Q5_0 blocks of bb bytes at once: with importance their scales and codes (the
 * searches through the kernels table), then each block's codes packed; without, block by block
 * (gq_encode_row gives these rows to gq_plain_row first, so only a row it refused comes here). */
static void gq_x0_span(const float *x, const float *qw, float sigma2, int nmax, size_t bb,
                       void (*pack)(const int *L, uint8_t *b), unsigned nblk, uint8_t *out)
{
    int L[GQ_SPAN];
    if (!qw) {
        for (unsigned i = 0; i < nblk; i++) {
            gq_codes_x0(x + 32 * i, NULL, sigma2, nmax, out + bb * i, L);
            pack(L, out + bb * i);
        }
        return;
    }
    gq_codes_x0_imp(x, qw, sigma2, nmax, nblk, bb, out, L);
    for (unsigned i = 0; i < nblk; i++) pack(L + 32 * i, out + bb * i);
}

static void enc_q4_0_blocks(const float *x, const float *qw, float sigma2, unsigned nblk, uint8_t *out)
{
    gq_x0_span(x, qw, sigma2, 8, 18, gq_pack_q4_0, nblk, out);
}

/* Q5_0, 22 bytes: d, qh (the fifth bits, u32 little-endian: bit j of value j), 16 bytes of
 * nibbles; gq_codes_x0 with nmax 16. */
static void gq_pack_q5_0(const int *L, uint8_t *b)
{
    uint32_t qh = 0;
    for (int j = 0; j < 16; j++) {
        unsigned lo = (unsigned)L[j] & 0xFFu, hi = (unsigned)L[j + 16] & 0xFFu;
        b[6 + j] = (uint8_t)((lo & 0xFu) | (hi & 0xFu) << 4);
        qh |= ((lo & 0x10u) >> 4) << j;
        qh |= ((hi & 0x10u) >> 4) << (j + 16);
    }
    for (int i = 0; i < 4; i++) b[2 + i] = (uint8_t)(qh >> (8 * i));
}

static void enc_q5_0(const float *x, const float *qw, float sigma2, uint8_t *b)
{
    int L[32];
    gq_codes_x0(x, qw, sigma2, 16, b, L);
    gq_pack_q5_0(L, b);
}

static void enc_q5_0_blocks(const float *x, const float *qw, float sigma2, unsigned nblk, uint8_t *out)
{
    gq_x0_span(x, qw, sigma2, 16, 22, gq_pack_q5_0, nblk, out);
}

/* ---------------------------------------------------------------- Q4_0, Q5_0, Q8_0 without importance */

static bool gq_values_ok(const float *x, size_t n);

/* A block's 32 values from little-endian source words (ggml_simd.h plain_blocks). */
static void gq_plain_load(nf_gq_words words, const uint8_t *p, float *x)
{
    for (int j = 0; j < 32; j++) {
        switch (words) {
        case NF_GQ_WORDS_F32: x[j] = nf_f32_from_bits(nf_method_le32(p + 4 * j)); break;
        case NF_GQ_WORDS_F16: x[j] = nf_f16_to_f32(nf_method_le16(p + 2 * j)); break;
        case NF_GQ_WORDS_BF16: x[j] = nf_f32_from_bits((uint32_t)nf_method_le16(p + 2 * j) << 16); break;
        }
    }
}

/* The scalar reference of plain_blocks: each block loaded, checked as gq_encode_row checks it,
 * encoded by the type's block encoder, its binary16 scale checked. */
static size_t plain_blocks_scalar(nf_gq_plain type, nf_gq_words words, size_t nblk, const void *src, uint8_t *out)
{
    static const gq_block_fn enc[] =
        {[NF_GQ_PLAIN_Q4_0] = enc_q4_0, [NF_GQ_PLAIN_Q5_0] = enc_q5_0, [NF_GQ_PLAIN_Q8_0] = enc_q8_0};
    static const size_t block_bytes[] = {[NF_GQ_PLAIN_Q4_0] = 18, [NF_GQ_PLAIN_Q5_0] = 22, [NF_GQ_PLAIN_Q8_0] = 34};
    const size_t bb = block_bytes[type], wb = 32 * (words == NF_GQ_WORDS_F32 ? 4 : 2);
    float x[32];
    for (size_t i = 0; i < nblk; i++) {
        uint8_t *b = out + bb * i;
        gq_plain_load(words, (const uint8_t *)src + wb * i, x);
        if (!gq_values_ok(x, 32)) return i;
        enc[type](x, NULL, 0.0f, b);
        if ((b[1] & 0x7Cu) == 0x7Cu) return i; /* the scale's exponent field all ones */
    }
    return nblk;
}

/* 2-bit codes of a super-block, four 32-value quarters per 128 into one byte (Q2_K, Q3_K). */
static void gq_pack_2bit(const uint8_t *L, uint8_t *qs)
{
    for (unsigned j = 0; j < GQ_SUPER; j += 128)
        for (unsigned l = 0; l < 32; l++)
            qs[j / 4 + l] = (uint8_t)(L[j + l] | L[j + l + 32] << 2 | L[j + l + 64] << 4 | L[j + l + 96] << 6);
}

/* Q2_K and Q4_K/Q5_K's last step: codes again from the stored d, dmin and 4- or 6-bit sub-block
 * scale and minimum, l = nearest((x + dm) / d) in [0, nmax]; a zero d keeps the fit's codes. */
static void gq_requant_min(const float *x, int n, float d, float dm, int nmax, uint8_t *L)
{
    if (d == 0.0f) return;
    gq_kern->requant(n, x, d, true, dm, 0, nmax, 0, L);
}

/* Q2_K, 84 bytes: scales[16] (low nibble scale, high nibble minimum), qs[64], d, dmin. */
static void enc_q2_k(const float *x, const float *qw, float sigma2, uint8_t *b)
{
    (void)sigma2;
    uint8_t L[GQ_SUPER], *sc = b, *qs = b + 16;
    float scales[16], mins[16], w[GQ_SUPER];
    if (!qw) {
        float max_scale = 0.0f, max_min = 0.0f;
        for (unsigned l = 0; l < GQ_SUPER; l++) w[l] = fabsf(x[l]);
        gq_kern->fit_min(16, 16, 3, x, w, L, scales, mins, -0.5f, 0.1f, 15, true);
        for (int j = 0; j < 16; j++) {
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        if (max_scale > 0.0f) {
            float iscale = 15.0f / max_scale;
            for (int j = 0; j < 16; j++) sc[j] = (uint8_t)gq_nearest(iscale * scales[j]);
            gq_put_f16(b + 80, max_scale / 15.0f);
        } else {
            memset(sc, 0, 16);
            gq_put_f16(b + 80, 0.0f);
        }
        if (max_min > 0.0f) {
            float iscale = 15.0f / max_min;
            for (int j = 0; j < 16; j++) sc[j] = (uint8_t)(sc[j] | (unsigned)gq_nearest(iscale * mins[j]) << 4);
            gq_put_f16(b + 82, max_min / 15.0f);
        } else {
            gq_put_f16(b + 82, 0.0f);
        }
    } else {
        /* ggml's importance path: weights qw * sqrt(mean square + x^2), the 16 scales and minima
         * fitted as 4-bit codes (nf_method_gq_fit_positive) weighted by each sub-block's weight sum. */
        float sumx2 = 0.0f, sw[16];
        uint8_t Ls[16], Lm[16];
        for (unsigned j = 0; j < GQ_SUPER; j++) sumx2 += x[j] * x[j];
        float s2 = sumx2 / 256.0f;
        for (int j = 0; j < 16; j++) {
            sw[j] = 0.0f;
            for (int l = 0; l < 16; l++) w[16 * j + l] = qw[16 * j + l] * sqrtf(s2 + x[16 * j + l] * x[16 * j + l]);
            for (int l = 0; l < 16; l++) sw[j] += w[16 * j + l];
        }
        gq_kern->fit_min(16, 16, 3, x, w, L, scales, mins, -0.9f, 0.05f, 36, false);
        gq_put_f16(b + 80, nf_method_gq_fit_positive(16, 15, scales, Ls, sw));
        gq_put_f16(b + 82, nf_method_gq_fit_positive(16, 15, mins, Lm, sw));
        for (int j = 0; j < 16; j++) sc[j] = (uint8_t)(Ls[j] | Lm[j] << 4);
    }
    float d = gq_get_f16(b + 80), dmin = gq_get_f16(b + 82);
    for (int j = 0; j < 16; j++)
        gq_requant_min(x + 16 * j, 16, d * gq_f(sc[j] & 0xF), dmin * gq_f(sc[j] >> 4), 3, L + 16 * j);
    gq_pack_2bit(L, qs);
}

/* Q3_K's 6-bit sub-block scale j of its 12 packed bytes, minus 32. */
static int gq_q3_scale(const uint8_t *s, int j)
{
    int lo = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
    return (lo | ((s[8 + j % 4] >> (2 * (j / 4))) & 3) << 4) - 32;
}

/* Q3_K, 110 bytes: hmask[32], qs[64], scales[12] (16 six-bit values), d. */
/* Q3_K with L and scales, without an importance vector, already fitted when `fitted`. */
static void gq_enc_q3_k(const float *x, const float *qw, uint8_t *b, int8_t *L, float *scales, bool fitted)
{
    uint8_t *hmask = b, *qs = b + 32, *sc = b + 96, *dp = b + 108;
    memset(sc, 0, 12);
    int ls[16];
    if (!qw) {
        float max_scale = 0.0f, amax = 0.0f;
        if (!fitted) gq_kern->fit_q3(16, 16, 4, x, L, scales);
        for (int j = 0; j < 16; j++) {
            if (fabsf(scales[j]) > amax) {
                amax = fabsf(scales[j]);
                max_scale = scales[j];
            }
        }
        if (max_scale != 0.0f) {
            float iscale = -32.0f / max_scale;
            /* ggml keeps the rounded value in an int8_t before clamping */
            for (int j = 0; j < 16; j++)
                ls[j] = gq_clamp((int8_t)(uint8_t)gq_nearest(iscale * scales[j]), -32, 31) + 32;
            gq_put_f16(dp, 1 / iscale);
        } else {
            for (int j = 0; j < 16; j++) ls[j] = -1; /* no scale bits stored */
            gq_put_f16(dp, 0.0f);
        }
    } else {
        float sumx2 = 0.0f, w[GQ_SUPER], sw[16];
        int8_t Ls[16];
        for (unsigned j = 0; j < GQ_SUPER; j++) sumx2 += x[j] * x[j];
        float s2 = 2 * sumx2 / 256.0f;
        gq_kern->sqrt_weights(GQ_SUPER, x, qw, s2, w);
        for (int j = 0; j < 16; j++) {
            float sumw = 0.0f;
            for (int l = 0; l < 16; l++) sumw += w[16 * j + l];
            sw[j] = sumw;
        }
        gq_kern->fit_signed(16, 16, 4, x, w, L, scales);
        float d_block = nf_gq_fit_signed(16, 32, scales, Ls, sw);
        for (int j = 0; j < 16; j++) ls[j] = Ls[j];
        gq_put_f16(dp, d_block);
    }
    for (int j = 0; j < 16; j++) {
        if (ls[j] < 0) continue;
        unsigned l = (unsigned)ls[j];
        if (j < 8) sc[j] = (uint8_t)(l & 0xF);
        else sc[j - 8] = (uint8_t)(sc[j - 8] | (l & 0xF) << 4);
        sc[j % 4 + 8] = (uint8_t)(sc[j % 4 + 8] | (l >> 4) << (2 * (j / 4)));
    }
    float dall = gq_get_f16(dp);
    for (int j = 0; j < 16; j++) {
        float d = dall * gq_f(gq_q3_scale(sc, j));
        if (d == 0.0f) continue;
        gq_kern->requant(16, x + 16 * j, d, false, 0.0f, -4, 3, 4, (uint8_t *)L + 16 * j);
    }
    memset(hmask, 0, 32);
    uint8_t u[GQ_SUPER];
    /* every code is in [0, 7] here: bit 2 of value j goes to bit j / 32 of hmask[j % 32], the low
     * 2 bits to qs (without a branch, which the codes' pattern makes unpredictable; one 32-value
     * plane at a time, which vectorizes) */
    for (unsigned q = 0; q < GQ_SUPER / 32; q++)
        for (unsigned i = 0; i < 32; i++) {
            unsigned l = (uint8_t)L[32 * q + i];
            hmask[i] = (uint8_t)(hmask[i] | (l >> 2) << q);
            u[32 * q + i] = (uint8_t)(l & 3u);
        }
    gq_pack_2bit(u, qs);
}

static void enc_q3_k(const float *x, const float *qw, float sigma2, uint8_t *b)
{
    (void)sigma2;
    int8_t L[GQ_SUPER];
    float scales[16];
    gq_enc_q3_k(x, qw, b, L, scales, false);
}

/* Q3_K without importance, two super-blocks at once: their 32 sweeps in one call of the kernels
 * table (more independent chains to interleave). */
static void enc_q3_k_blocks(const float *x, const float *qw, float sigma2, unsigned nblk, uint8_t *out)
{
    if (qw || nblk != 2) {
        for (unsigned i = 0; i < nblk; i++)
            enc_q3_k(x + GQ_SUPER * i, qw ? qw + GQ_SUPER * i : NULL, sigma2, out + 110 * i);
        return;
    }
    int8_t L[2 * GQ_SUPER];
    float scales[32];
    gq_kern->fit_q3(32, 16, 4, x, L, scales);
    gq_enc_q3_k(x, NULL, out, L, scales, true);
    gq_enc_q3_k(x + GQ_SUPER, NULL, out + 110, L + GQ_SUPER, scales + 16, true);
}

/* The 12 bytes of Q4_K / Q5_K's eight 6-bit scales and minima. */
static void gq_pack_k4(const uint8_t *ls, const uint8_t *lm, uint8_t *s)
{
    for (int j = 0; j < 8; j++) {
        if (j < 4) {
            s[j] = ls[j];
            s[j + 4] = lm[j];
        } else {
            s[j + 4] = (uint8_t)((ls[j] & 0xF) | (lm[j] & 0xF) << 4);
            s[j - 4] = (uint8_t)(s[j - 4] | (ls[j] >> 4) << 6);
            s[j] = (uint8_t)(s[j] | (lm[j] >> 4) << 6);
        }
    }
}

static void gq_unpack_k4(int j, const uint8_t *q, int *d, int *m)
{
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (q[j + 4] & 0xF) | (q[j - 4] >> 6) << 4;
        *m = (q[j + 4] >> 4) | (q[j] >> 6) << 4;
    }
}

/* Q4_K and Q5_K share everything up to the codes: eight 32-value sub-blocks with a scale and a
 * minimum each, both quantized to 6 bits under the super-block's d and dmin (bytes 0..3), the
 * 12 scale bytes at 4.  nmax is 15 or 31; the fit's trial parameters differ per type. */
typedef struct gq_kmin {
    int nmax;
    float rmin, rdelta;
    int nstep;
    bool clamp_fitted; /* Q5_K clamps the fitted 6-bit codes to 63; ggml's Q4_K does not */
} gq_kmin;

/* The weights of a super-block's 8 fits (w) and, with importance, their sums (sw). */
static void gq_kmin_weights(const float *x, const float *qw, float *w, float *sw)
{
    if (!qw) {
        for (int j = 0; j < 8; j++) {
            float sum_x2 = 0.0f;
            for (int l = 0; l < 32; l++) sum_x2 += x[32 * j + l] * x[32 * j + l];
            float av_x = sqrtf(sum_x2 / 32.0f);
            for (int l = 0; l < 32; l++) w[32 * j + l] = av_x + fabsf(x[32 * j + l]);
        }
        return;
    }
    /* the importance path: weights qw * sqrt(2 * mean square + x^2) */
    float sum_x2 = 0.0f;
    for (unsigned l = 0; l < GQ_SUPER; l++) sum_x2 += x[l] * x[l];
    float s2 = 2 * sum_x2 / 256.0f;
    for (int j = 0; j < 8; j++) {
        for (int l = 0; l < 32; l++) w[32 * j + l] = qw[32 * j + l] * sqrtf(s2 + x[32 * j + l] * x[32 * j + l]);
        float sumw = 0.0f;
        for (int l = 0; l < 32; l++) sumw += w[32 * j + l];
        sw[j] = sumw;
    }
}

/* The fits of nsup super-blocks' 8 * nsup sub-blocks in one call of the kernels table: without
 * importance with the type's trial parameters, with it with 37 trials from -0.9. */
static void gq_kmin_fit(const float *x, const float *w, bool imp, const gq_kmin *k, int nsup, uint8_t *L, float *scales,
                        float *mins)
{
    if (!imp) gq_kern->fit_min(8 * nsup, 32, k->nmax, x, w, L, scales, mins, k->rmin, k->rdelta, k->nstep, false);
    else gq_kern->fit_min(8 * nsup, 32, k->nmax, x, w, L, scales, mins, -0.9f, 0.05f, 36, false);
}

/* A super-block after its fits: d, dmin and the 6-bit scales and minima (with importance fitted
 * as codes weighted by sw), then the codes again from the stored values. */
static void gq_kmin_finish(const float *x, bool imp, const gq_kmin *k, const float *scales, const float *mins,
                           const float *sw, uint8_t *b, uint8_t *L)
{
    uint8_t ls[8], lm[8];
    if (!imp) {
        float max_scale = 0.0f, max_min = 0.0f;
        for (int j = 0; j < 8; j++) {
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
        float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
        for (int j = 0; j < 8; j++) {
            ls[j] = (uint8_t)gq_min(63, (uint8_t)gq_nearest(inv_scale * scales[j]));
            lm[j] = (uint8_t)gq_min(63, (uint8_t)gq_nearest(inv_min * mins[j]));
        }
        gq_put_f16(b, max_scale / 63.0f);
        gq_put_f16(b + 2, max_min / 63.0f);
    } else {
        float d_block = nf_method_gq_fit_positive(8, 63, scales, ls, sw);
        float m_block = nf_method_gq_fit_positive(8, 63, mins, lm, sw);
        for (int j = 0; j < 8 && k->clamp_fitted; j++) {
            ls[j] = (uint8_t)gq_min(63, ls[j]);
            lm[j] = (uint8_t)gq_min(63, lm[j]);
        }
        gq_put_f16(b, d_block);
        gq_put_f16(b + 2, m_block);
    }
    gq_pack_k4(ls, lm, b + 4);
    float d = gq_get_f16(b), dmin = gq_get_f16(b + 2);
    for (int j = 0; j < 8; j++) {
        int sc, m;
        gq_unpack_k4(j, b + 4, &sc, &m);
        gq_requant_min(x + 32 * j, 32, d * gq_f(sc), dmin * gq_f(m), k->nmax, L + 32 * j);
    }
}

static void gq_encode_kmin(const float *x, const float *qw, const gq_kmin *k, uint8_t *b, uint8_t *L)
{
    float scales[8], mins[8], w[GQ_SUPER], sw[8];
    gq_kmin_weights(x, qw, w, sw);
    gq_kmin_fit(x, w, qw != NULL, k, 1, L, scales, mins);
    gq_kmin_finish(x, qw != NULL, k, scales, mins, sw, b, L);
}

/* Two super-blocks at once, their 16 fits in one call (16 lanes at AVX-512); the codes of
 * super-block i to L + 256 * i. */
static void gq_encode_kmin2(const float *x, const float *qw, const gq_kmin *k, size_t bb, uint8_t *out, uint8_t *L)
{
    const unsigned nsup = 2;
    float scales[16], mins[16], w[2 * GQ_SUPER], sw[16];
    for (unsigned i = 0; i < nsup; i++)
        gq_kmin_weights(x + GQ_SUPER * i, qw ? qw + GQ_SUPER * i : NULL, w + GQ_SUPER * i, sw + 8 * i);
    gq_kmin_fit(x, w, qw != NULL, k, (int)nsup, L, scales, mins);
    for (unsigned i = 0; i < nsup; i++)
        gq_kmin_finish(x + GQ_SUPER * i, qw != NULL, k, scales + 8 * i, mins + 8 * i, sw + 8 * i, out + bb * i,
                       L + GQ_SUPER * i);
}

/* Q4_K, 144 bytes: d, dmin, scales[12], qs[128] (values l and l + 32 of each 64 in a byte). */
static const gq_kmin gq_q4_k = {15, -1.0f, 0.1f, 20, false};
static const gq_kmin gq_q5_k = {31, -0.5f, 0.1f, 15, true};

static void gq_pack_q4_k(const uint8_t *L, uint8_t *b)
{
    uint8_t *q = b + 16;
    for (unsigned j = 0; j < GQ_SUPER; j += 64, q += 32)
        for (unsigned l = 0; l < 32; l++) q[l] = (uint8_t)(L[j + l] | L[j + l + 32] << 4);
}

static void enc_q4_k(const float *x, const float *qw, float sigma2, uint8_t *b)
{
    (void)sigma2;
    uint8_t L[GQ_SUPER];
    gq_encode_kmin(x, qw, &gq_q4_k, b, L);
    gq_pack_q4_k(L, b);
}

/* nblk Q4_K or Q5_K super-blocks of bb bytes, two at a time (gq_encode_kmin2), the last odd one
 * by itself (one). */
static void gq_kmin_span(const float *x, const float *qw, float sigma2, const gq_kmin *k, size_t bb,
                         void (*pack)(const uint8_t *L, uint8_t *b), gq_block_fn one, unsigned nblk, uint8_t *out)
{
    uint8_t L[2 * GQ_SUPER];
    for (unsigned i = 0; i + 1 < nblk; i += 2) {
        gq_encode_kmin2(x + GQ_SUPER * i, qw ? qw + GQ_SUPER * i : NULL, k, bb, out + bb * i, L);
        pack(L, out + bb * i);
        pack(L + GQ_SUPER, out + bb * (i + 1));
    }
    if (nblk % 2) one(x + GQ_SUPER * (nblk - 1), qw ? qw + GQ_SUPER * (nblk - 1) : NULL, sigma2, out + bb * (nblk - 1));
}

static void enc_q4_k_blocks(const float *x, const float *qw, float sigma2, unsigned nblk, uint8_t *out)
{
    gq_kmin_span(x, qw, sigma2, &gq_q4_k, 144, gq_pack_q4_k, enc_q4_k, nblk, out);
}

/* Q5_K, 176 bytes: d, dmin, scales[12], qh[32] (fifth bits), qs[128] (low nibbles). */
static void gq_pack_q5_k(const uint8_t *L, uint8_t *b)
{
    uint8_t *qh = b + 16, *ql = b + 48;
    memset(qh, 0, 32);
    /* codes are in [0, 31]: bit 4 of values n + j and n + j + 32 of each 64 goes to bits 2 (n / 64)
     * and 2 (n / 64) + 1 of qh[j] (without a branch) */
    for (unsigned n = 0, p = 0; n < GQ_SUPER; n += 64, p += 2, ql += 32) {
        for (unsigned j = 0; j < 32; j++) {
            unsigned l1 = L[n + j], l2 = L[n + j + 32];
            qh[j] = (uint8_t)(qh[j] | (l1 >> 4) << p | (l2 >> 4) << (p + 1));
            ql[j] = (uint8_t)((l1 & 15u) | (l2 & 15u) << 4);
        }
    }
}

static void enc_q5_k(const float *x, const float *qw, float sigma2, uint8_t *b)
{
    (void)sigma2;
    uint8_t L[GQ_SUPER];
    gq_encode_kmin(x, qw, &gq_q5_k, b, L);
    gq_pack_q5_k(L, b);
}

static void enc_q5_k_blocks(const float *x, const float *qw, float sigma2, unsigned nblk, uint8_t *out)
{
    gq_kmin_span(x, qw, sigma2, &gq_q5_k, 176, gq_pack_q5_k, enc_q5_k, nblk, out);
}

/* Q6_K, 210 bytes: ql[128], qh[64], int8 scales[16], d.  Both paths fit each 16 values with
 * nf_gq_fit_signed (nmax 32), weighted by x^2 or by the importance values themselves. */
static void enc_q6_k(const float *x, const float *qw, float sigma2, uint8_t *b)
{
    (void)sigma2;
    int8_t L[GQ_SUPER];
    float scales[16], max_scale = 0.0f, max_abs = 0.0f;
    gq_kern->fit_signed(16, 16, 32, x, qw, L, scales);
    for (int ib = 0; ib < 16; ib++) {
        if (fabsf(scales[ib]) > max_abs) {
            max_abs = fabsf(scales[ib]);
            max_scale = scales[ib];
        }
    }
    if (max_abs < GQ_ZERO_EPS) {
        memset(b, 0, 210);
        return;
    }
    float iscale = -128.0f / max_scale;
    int8_t *sc = (int8_t *)(b + 192);
    gq_put_f16(b + 208, 1 / iscale);
    for (int ib = 0; ib < 16; ib++) sc[ib] = (int8_t)gq_min(127, gq_nearest(iscale * scales[ib]));
    float dall = gq_get_f16(b + 208);
    for (int j = 0; j < 16; j++) {
        float d = dall * gq_f(sc[j]);
        if (d == 0.0f) continue;
        gq_kern->requant(16, x + 16 * j, d, false, 0.0f, -32, 31, 32, (uint8_t *)L + 16 * j);
    }
    uint8_t *ql = b, *qh = b + 128;
    for (unsigned j = 0; j < GQ_SUPER; j += 128, ql += 64, qh += 32) {
        for (unsigned l = 0; l < 32; l++) {
            unsigned q1 = (uint8_t)L[j + l], q2 = (uint8_t)L[j + l + 32], q3 = (uint8_t)L[j + l + 64],
                     q4 = (uint8_t)L[j + l + 96];
            ql[l] = (uint8_t)((q1 & 0xF) | (q3 & 0xF) << 4);
            ql[l + 32] = (uint8_t)((q2 & 0xF) | (q4 & 0xF) << 4);
            qh[l] = (uint8_t)((q1 >> 4) | (q2 >> 4) << 2 | (q3 >> 4) << 4 | (q4 >> 4) << 6);
        }
    }
}

/* ---------------------------------------------------------------- rows */

typedef struct gq_type {
    nf_format_id fmt;
    gq_block_fn encode;
    bool row_sigma;             /* with importance, ggml weighs by the mean square of the whole row */
    gq_block_try_fn try_encode; /* instead of encode: an encoder that can fail (ggml_encoders.h) */
} gq_type;

static const gq_type gq_types[] = {
    {NF_FMT_GGUF_Q8_0, enc_q8_0, false, NULL},
    {NF_FMT_GGUF_Q4_0, enc_q4_0, true, NULL},
    {NF_FMT_GGUF_Q5_0, enc_q5_0, true, NULL},
    {NF_FMT_GGUF_Q2_K, enc_q2_k, false, NULL},
    {NF_FMT_GGUF_Q3_K, enc_q3_k, false, NULL},
    {NF_FMT_GGUF_Q4_K, enc_q4_k, false, NULL},
    {NF_FMT_GGUF_Q5_K, enc_q5_k, false, NULL},
    {NF_FMT_GGUF_Q6_K, enc_q6_k, false, NULL},
    {NF_FMT_GGUF_IQ4_NL, nf_gq_enc_iq4_nl, false, NULL},
    {NF_FMT_GGUF_IQ4_XS, nf_gq_enc_iq4_xs, false, NULL},
    {NF_FMT_GGUF_IQ2_XXS, NULL, false, nf_ggml_enc_iq2_xxs},
    {NF_FMT_GGUF_IQ2_XS, NULL, false, nf_ggml_enc_iq2_xs},
    {NF_FMT_GGUF_IQ2_S, NULL, false, nf_ggml_enc_iq2_s},
    {NF_FMT_GGUF_IQ3_XXS, NULL, false, nf_ggml_enc_iq3_xxs},
    {NF_FMT_GGUF_IQ3_S, NULL, false, nf_ggml_enc_iq3_s},
    {NF_FMT_GGUF_Q2_0, enc_q2_0, false, NULL},
    {NF_FMT_GGUF_IQ1_S, NULL, false, nf_ggml_enc_iq1_s},
    {NF_FMT_GGUF_IQ1_M, NULL, false, nf_ggml_enc_iq1_m},
};

/* The types that also encode GQ_SPAN / block_values blocks at once (their searches a block per
 * vector lane); a type not listed is encoded block by block. */
static const struct {
    nf_format_id fmt;
    gq_blocks_fn encode_blocks;
} gq_batched[] = {
    {NF_FMT_GGUF_Q4_0, enc_q4_0_blocks},           {NF_FMT_GGUF_Q5_0, enc_q5_0_blocks},
    {NF_FMT_GGUF_IQ4_NL, nf_gq_enc_iq4_nl_blocks}, {NF_FMT_GGUF_Q4_K, enc_q4_k_blocks},
    {NF_FMT_GGUF_Q5_K, enc_q5_k_blocks},           {NF_FMT_GGUF_Q3_K, enc_q3_k_blocks},
    {NF_FMT_GGUF_Q2_0, enc_q2_0_blocks},
};

static gq_blocks_fn gq_blocks_of(nf_format_id fmt)
{
    for (size_t i = 0; i < sizeof gq_batched / sizeof gq_batched[0]; i++)
        if (gq_batched[i].fmt == fmt) return gq_batched[i].encode_blocks;
    return NULL;
}

static const gq_type *gq_type_of(const nf_format *fmt)
{
    for (size_t i = 0; i < sizeof gq_types / sizeof gq_types[0]; i++)
        if (gq_types[i].fmt == fmt->id) return &gq_types[i];
    return NULL;
}

/* Load block values, refusing a non-finite one with its row and column. */
static nf_status gq_load(const nf_src_rows *src, uint64_t r, size_t c0, size_t n, float *x, nf_error *err)
{
    nf_method_load_f32(src, r, c0, n, x);
    size_t bad = nf_method_first_nonfinite(x, n);
    if (bad < n)
        return nf_method_row_error(err, NF_ERR_INVALID, src, r, " col %" PRIu64 ": source value %s is not finite",
                                   (uint64_t)nf_method_col(src, c0 + bad), nf_method_nonfinite_name(x[bad]));
    return NF_OK;
}

/* ggml would store an infinite (or NaN) d or dmin for a block whose values are too large for
 * binary16; the gguf_* formats refuse such a block (docs/formats.md 8.1), so the method does. */
static nf_status gq_check_scales(const nf_format *fmt, const nf_src_rows *src, uint64_t r, size_t c0,
                                 const uint8_t *blk, nf_error *err)
{
    nf_ggml_bad_scale bad;
    if (!nf_ggml_find_nonfinite_scale(fmt, blk, 0, 1, &bad)) return NF_OK;
    const char *what = nf_ggml_f16_nonfinite_name(bad.word);
    return nf_method_row_error(err, NF_ERR_INVALID, src, r,
                               " block %" PRIu64 " (cols %" PRIu64 "..%" PRIu64 "): %s scale %s would be %s: the "
                               "values are too large for binary16",
                               (uint64_t)(c0 / fmt->block_values), (uint64_t)nf_method_col(src, c0),
                               (uint64_t)nf_method_col(src, c0 + fmt->block_values - 1), nf_ggml_block_name(fmt),
                               bad.field, what ? what : "not finite");
}

/* A value of 2^64 or more: ggml squares the values for its weights, the square is infinite, and
 * ggml then writes a block of zero scales (Q3_K, Q6_K, ...) or an infinite one.  No gguf_* block
 * holds such a value (the largest is below 2^32), so the method refuses it as too large. */
static nf_status gq_check_range(const nf_format *fmt, const nf_src_rows *src, uint64_t r, size_t c0, const float *x,
                                nf_error *err)
{
    for (size_t j = 0; j < fmt->block_values; j++)
        if (fabsf(x[j]) >= 18446744073709551616.0f)
            return nf_method_row_error(err, NF_ERR_INVALID, src, r,
                                       " col %" PRIu64 ": source value %g is too large for %s (its square overflows "
                                       "binary32 in ggml's weights; blocks hold magnitudes below 2^32)",
                                       (uint64_t)nf_method_col(src, c0 + j), (double)x[j], fmt->name);
    return NF_OK;
}

/* A block's values, refused as gq_load and gq_check_range refuse them.  One branch-free pass
 * finds whether any value is NaN, infinite or of magnitude 2^64 or more; only then do the two
 * checks run, for their message. */
static bool gq_values_ok(const float *x, size_t n)
{
    int bad = 0;
    for (size_t j = 0; j < n; j++) bad |= !(fabsf(x[j]) < 18446744073709551616.0f);
    return !bad;
}

static nf_status gq_load_block(const nf_format *fmt, const nf_src_rows *src, uint64_t r, size_t c0, float *x,
                               nf_error *err)
{
    const size_t n = fmt->block_values;
    nf_method_load_f32(src, r, c0, n, x);
    if (gq_values_ok(x, n)) return NF_OK;
    NF_TRY(gq_load(src, r, c0, n, x, err));
    return gq_check_range(fmt, src, r, c0, x, err);
}

/* Adds the x^2 of the k values of row r of src to *sum, in column order. */
static nf_status gq_sum2(const nf_src_rows *src, uint64_t r, size_t k, size_t bv, float *sum, nf_error *err)
{
    float x[GQ_SUPER];
    for (size_t c0 = 0; c0 < k; c0 += bv) {
        NF_TRY(gq_load(src, r, c0, bv, x, err));
        for (size_t j = 0; j < bv; j++) *sum += x[j] * x[j];
    }
    return NF_OK;
}

/* Runs an encoder that can fail on the block at column c0 of row r, naming the block when ggml
 * would abort on it. */
static nf_status gq_try_block(const nf_format *fmt, const gq_type *t, const float *x, const float *qw, float sigma2,
                              const nf_src_rows *src, uint64_t r, size_t c0, uint8_t *b, nf_error *err)
{
    switch (t->try_encode(x, qw, sigma2, b)) {
    case GQ_OK: return NF_OK;
    case GQ_NO_MEMORY:
        return nf_error_set(err, NF_ERR_NOMEM, "out of memory building ggml's grid index of %s", fmt->name);
    case GQ_NEEDS_IMATRIX: return nf_method_check_choice(NF_METHOD_GGML_QUANTIZE, fmt, NULL, err);
    case GQ_GGML_ABORTS: break;
    }
    return nf_method_row_error(err, NF_ERR_INVALID, src, r,
                               " block %" PRIu64 " (cols %" PRIu64 "..%" PRIu64 "): the values are too large for "
                               "%s: ggml's search overflows binary32 on them, or ends off its grid or at a NaN "
                               "scale (ggml's encoder stops with an assertion, so the block has no bytes)",
                               (uint64_t)(c0 / fmt->block_values), (uint64_t)nf_method_col(src, c0),
                               (uint64_t)nf_method_col(src, c0 + fmt->block_values - 1), fmt->name);
}

/* One block: its encoder, or the encoder that can fail and its refusal (gq_try_block). */
static nf_status gq_block(const nf_format *fmt, const gq_type *t, const float *x, const float *qw, float sigma2,
                          const nf_src_rows *src, uint64_t r, size_t c0, uint8_t *b, nf_error *err)
{
    if (t->try_encode) return gq_try_block(fmt, t, x, qw, sigma2, src, r, c0, b, err);
    t->encode(x, qw, sigma2, b);
    return NF_OK;
}

/* Row r of a Q4_0 or Q5_0 target without importance, or of a Q8_0 target (whose encoder ignores
 * it, as ggml's), in one call of the kernels table, straight from the source words (no search:
 * each block's extreme, scale and codes, packed).  False for another target or source type, and
 * for a row holding a block to refuse, which the span loop of gq_encode_row then encodes again to
 * name the first value or scale refused. */
static bool gq_plain_row(const nf_format *fmt, const float *imp, const nf_src_rows *src, uint64_t r, size_t k,
                         uint8_t *out)
{
    nf_gq_plain type;
    nf_gq_words words;
    switch (fmt->id) {
    case NF_FMT_GGUF_Q4_0: type = NF_GQ_PLAIN_Q4_0; break;
    case NF_FMT_GGUF_Q5_0: type = NF_GQ_PLAIN_Q5_0; break;
    case NF_FMT_GGUF_Q8_0: type = NF_GQ_PLAIN_Q8_0; break;
    default: return false;
    }
    if (imp && type != NF_GQ_PLAIN_Q8_0) return false;
    switch (src->type) {
    case NF_SRC_F32: words = NF_GQ_WORDS_F32; break;
    case NF_SRC_F16: words = NF_GQ_WORDS_F16; break;
    case NF_SRC_BF16: words = NF_GQ_WORDS_BF16; break;
    default: return false;
    }
    /* as nf_method_load_f32 addresses a row (its size proved by nf_method_check_rows) */
    const size_t esize = words == NF_GQ_WORDS_F32 ? 4 : 2;
    const uint8_t *p = (const uint8_t *)src->data + (size_t)r * (size_t)src->cols * esize;
    const size_t nblk = k / fmt->block_values;
    return gq_kern->plain_blocks(type, words, nblk, p, out) == nblk;
}

static nf_status gq_encode_row(const nf_format *fmt, const gq_type *t, const float *imp, const nf_src_rows *src,
                               uint64_t r, size_t k, uint8_t *out, nf_error *err)
{
    if (gq_plain_row(fmt, imp, src, r, k, out)) return NF_OK;
    float x[GQ_SPAN];
    const size_t bv = fmt->block_values, bb = fmt->block_bytes;
    float sigma2 = 0.0f;
    if (imp && t->row_sigma) {
        /* ggml sums x^2 over the row in column order, then divides by the row length; a span
         * has the whole row's sum from its first pass */
        float sum = 0.0f;
        if (src->has_row_sum2) sum = src->row_sum2;
        else NF_TRY(gq_sum2(src, r, k, bv, &sum, err));
        sigma2 = sum / (float)(src->row_cols ? src->row_cols : k);
    }
    /* a span of blocks at once where the type can (refusals and their order unchanged: a span
     * holding a refused value goes block by block, and scales are checked in block order) */
    const gq_blocks_fn blocks = gq_blocks_of(fmt->id);
    const size_t per = blocks ? GQ_SPAN / bv : 1;
    for (size_t c0 = 0; c0 < k; c0 += per * bv) {
        const size_t nb = (k - c0) / bv < per ? (k - c0) / bv : per;
        uint8_t *b = out + c0 / bv * bb;
        nf_method_load_f32(src, r, c0, nb * bv, x);
        if (!gq_values_ok(x, nb * bv)) {
            for (size_t i = 0; i < nb; i++) {
                NF_TRY(gq_load_block(fmt, src, r, c0 + i * bv, x, err));
                NF_TRY(
                    gq_block(fmt, t, x, imp ? imp + c0 + i * bv : NULL, sigma2, src, r, c0 + i * bv, b + i * bb, err));
                NF_TRY(gq_check_scales(fmt, src, r, c0 + i * bv, b + i * bb, err));
            }
            continue;
        }
        if (nb > 1) blocks(x, imp ? imp + c0 : NULL, sigma2, (unsigned)nb, b);
        else NF_TRY(gq_block(fmt, t, x, imp ? imp + c0 : NULL, sigma2, src, r, c0, b, err));
        /* the span's scales in one scan; the first bad block gets the message */
        nf_ggml_bad_scale bad;
        if (nf_ggml_find_nonfinite_scale(fmt, b, 0, nb, &bad))
            NF_TRY(gq_check_scales(fmt, src, r, c0 + (size_t)bad.block * bv, b + (size_t)bad.block * bb, err));
    }
    return NF_OK;
}

nf_status nf_ggml_quantize_rows(const nf_format *fmt, const nf_method_params *params, const nf_src_rows *src,
                                nf_words *out, nf_error *err)
{
    NF_TRY(nf_method_check_target(NF_METHOD_GGML_QUANTIZE, fmt, err));
    size_t k;
    NF_TRY(nf_method_check_rows(src, out, &k, err));
    NF_TRY(nf_method_check_params(NF_METHOD_GGML_QUANTIZE, params, src->cols, err));
    if (src->type != NF_SRC_F32 && src->type != NF_SRC_F16 && src->type != NF_SRC_BF16)
        return nf_method_error(err, NF_ERR_INVALID, src, "ggml_quantize needs a floating-point source, not %s",
                               nf_src_type_name(src->type));
    const gq_type *t = gq_type_of(fmt);
    if (!t) return nf_error_set(err, NF_ERR_USAGE, "ggml_quantize has no encoder for %s", fmt->name);
    const unsigned bv = fmt->block_values;
    uint64_t row_len = src->row_cols ? src->row_cols : src->cols;
    if (row_len % bv != 0 || src->cols % bv != 0 || src->first_col % bv != 0)
        return nf_method_error(err, NF_ERR_INVALID, src,
                               "row length %" PRIu64 " is not a multiple of %s's block of %u values (ggml "
                               "quantizes whole blocks)",
                               row_len, fmt->name, bv);
    const float *imp = params ? params->importance : NULL;
    nf_error choice;
    if (nf_method_check_choice(NF_METHOD_GGML_QUANTIZE, fmt, params, &choice) != NF_OK)
        return nf_method_error(err, NF_ERR_USAGE, src, "%s", choice.message);
    if (imp && t->row_sigma && src->row_cols && src->row_cols != src->cols && !src->has_row_sum2)
        return nf_method_error(err, NF_ERR_USAGE, src,
                               "%s with an importance vector needs whole rows (ggml weighs by the mean square of "
                               "the row), or the row's row_sum2, not a span of %" PRIu64 " of its %" PRIu64 " columns",
                               fmt->name, src->cols, src->row_cols);
    if (src->rows > 0 && !out->blocks)
        return nf_method_error(err, NF_ERR_USAGE, src, "output words lack the blocks array of %s", fmt->name);
    const size_t row_bytes = k / bv * fmt->block_bytes;
    gq_kern = nf_gq_kernels_active();
    for (uint64_t r = 0; r < src->rows; r++)
        NF_TRY(gq_encode_row(fmt, t, imp, src, r, k, out->blocks + (size_t)r * row_bytes, err));
    return NF_OK;
}

nf_status nf_ggml_quantize_row_sum2(const nf_format *fmt, const nf_src_rows *src, float *sum2, nf_error *err)
{
    NF_TRY(nf_method_check_target(NF_METHOD_GGML_QUANTIZE, fmt, err));
    const gq_type *t = gq_type_of(fmt);
    if (!t || !t->row_sigma) return NF_OK;
    const unsigned bv = fmt->block_values;
    if (!src || !sum2 || src->rows != 1 || src->cols % bv != 0)
        return nf_error_set(err, NF_ERR_USAGE, "nf_ggml_quantize_row_sum2: one row of whole %u-value blocks", bv);
    return gq_sum2(src, 0, (size_t)src->cols, bv, sum2, err);
}
