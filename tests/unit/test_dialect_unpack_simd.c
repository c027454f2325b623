/* GPTQ's and AWQ's values by bands (dialect/qweight_packed.c, dialect/simd/unpack_simd.h,
 * dialect/qweight_rows.h; docs/dialects.md "GPTQ and AWQ"):
 *   - every kernel level gives the scalar kernels' bits, for every code of every width, zero
 *     points 0..256, scales of every kind and word strides, and MXFP4's every code byte under
 *     scales 2^-127 .. 2^127 (each level the CPU lacks is skipped, naming it);
 *   - the values of GPTQ (2, 4, 8 bits, v1 and v2 zero points) and AWQ GEMM weights laid out as
 *     AutoGPTQ and AutoAWQ pack them equal (q - z) * s computed here from the codes, zero points
 *     and scales the test packed, whether read whole (the bands), a row at a time from an
 *     unaligned column (fetch_codes and piece_values), or through nf_dialect_rows (words held,
 *     rows taken at any offset, a cut AWQ word read the plain way), at every kernel level. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "common/cpu.h"
#include "dialect/qweight_rows.h"
#include "dialect/simd/unpack_simd.h"
#include "support/source_writer.h"

static uint32_t rng = 12345u;
static uint32_t next(void)
{
    rng = rng * 1664525u + 1013904223u;
    return rng >> 8 ^ rng << 13;
}

static void restore(void) { nf_simd_force(nf_simd_best()); }

static void require(nf_simd_level level)
{
    if (!nf_simd_supported(level))
        cr_skip_test("the CPU lacks the %s variant (best here: %s): its kernels are NOT tested on this machine",
                     nf_simd_level_name(level), nf_simd_level_name(nf_simd_best()));
    cr_assert_eq(nf_simd_force(level), level);
}

/* ---------------------------------------------------------------- kernels against scalar */
static const float scales[] = {1.0f,          0.5f,    0.0078125f, 65504.0f, 6.103515625e-05f, 5.96046448e-08f,
                               0.0999755859f, -0.375f, 1.5e-3f,    3.0e38f};
static const int32_t zeros[] = {0, 1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 127, 128, 129, 255, 256};

static void kernels_match(nf_simd_level level)
{
    require(level);
    const nf_dialect_unpack_kernels *k = nf_dialect_unpack_kernels_for(level), *ref = &nf_dialect_unpack_kernels_scalar;
    enum { MAXW = 72, STRIDE = 17 };
    uint32_t words[MAXW * STRIDE];
    float got[MAXW * 16 + 1], want[MAXW * 16 + 1];
    for (size_t i = 0; i < MAXW * STRIDE; i++) words[i] = next();
    /* every code of every width: nibbles 0..15 and bytes 0..255 somewhere in the words */
    words[0] = 0x76543210u;
    words[STRIDE] = 0xFEDCBA98u;
    for (unsigned b = 0; b < 64; b++) words[(2 + b) * STRIDE] = 0x03020100u + 0x04040404u * b;
    static const unsigned bits[] = {2, 4, 8};
    for (size_t bi = 0; bi < 3; bi++)
        for (size_t stride = 1; stride <= STRIDE; stride += 8)
            for (size_t n = 0; n <= MAXW; n += n < 4 ? 1 : 9)
                for (size_t zi = 0; zi < sizeof zeros / sizeof *zeros; zi++)
                    for (size_t si = 0; si < sizeof scales / sizeof *scales; si++) {
                        memset(got, 0x5A, sizeof got);
                        memset(want, 0x5A, sizeof want);
                        ref->packed_run(words, stride, n, bits[bi], zeros[zi], scales[si], want);
                        k->packed_run(words, stride, n, bits[bi], zeros[zi], scales[si], got);
                        cr_assert_eq(memcmp(got, want, sizeof got), 0,
                                     "%s packed_run: %u bits, %zu words, stride %zu, z %d, s %g", k->name, bits[bi], n,
                                     stride, (int)zeros[zi], (double)scales[si]);
                    }
    /* MXFP4: every byte (both nibbles), E2M1's values, scales 2^-127 (subnormal products) .. 2^127 */
    uint8_t bytes[300];
    float table[16];
    static const float e2m1[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    for (int c = 0; c < 16; c++) table[c] = c < 8 ? e2m1[c] : -e2m1[c - 8];
    for (size_t i = 0; i < sizeof bytes; i++) bytes[i] = (uint8_t)(i < 256 ? i : next());
    for (int e = -127; e <= 127; e += 7)
        for (size_t n = 0; n <= sizeof bytes; n += n < 40 ? 1 : 37) {
            float big[2 * sizeof bytes + 1], bigw[2 * sizeof bytes + 1];
            memset(big, 0x5A, sizeof big);
            memset(bigw, 0x5A, sizeof bigw);
            ref->e2m1_run(bytes, n, table, ldexpf(1.0f, e), bigw);
            k->e2m1_run(bytes, n, table, ldexpf(1.0f, e), big);
            cr_assert_eq(memcmp(big, bigw, sizeof big), 0, "%s e2m1_run: %zu bytes, scale 2^%d", k->name, n, e);
        }
    for (unsigned shift = 0; shift < 32; shift += 4)
        for (size_t n = 0; n <= MAXW; n += n < 20 ? 1 : 7)
            for (size_t zi = 0; zi < sizeof zeros / sizeof *zeros; zi++)
                for (size_t si = 0; si < sizeof scales / sizeof *scales; si++) {
                    memset(got, 0x5A, sizeof got);
                    memset(want, 0x5A, sizeof want);
                    ref->nibble_run(words, n, shift, zeros[zi], scales[si], want);
                    k->nibble_run(words, n, shift, zeros[zi], scales[si], got);
                    cr_assert_eq(memcmp(got, want, sizeof got), 0, "%s nibble_run: shift %u, %zu words, z %d, s %g",
                                 k->name, shift, n, (int)zeros[zi], (double)scales[si]);
                }
}

/* The scalar kernels themselves against the definition, on words holding every code. */
Test(dialect_unpack, scalar_kernels_are_the_definition)
{
    const uint32_t w[2] = {0x76543210u, 0xFEDCBA98u};
    float out[16];
    nf_dialect_unpack_packed_run_scalar(w, 1, 2, 4, 8, 0.5f, out);
    for (int c = 0; c < 16; c++) cr_assert_eq(out[c], (float)(c - 8) * 0.5f, "4-bit code %d", c);
    nf_dialect_unpack_packed_run_scalar(w, 1, 1, 8, 16, 2.0f, out);
    for (int c = 0; c < 4; c++) cr_assert_eq(out[c], (float)((int)(w[0] >> 8 * c & 255) - 16) * 2.0f, "byte %d", c);
    nf_dialect_unpack_packed_run_scalar(w, 1, 1, 2, 1, 1.0f, out);
    for (int c = 0; c < 16; c++) cr_assert_eq(out[c], (float)((int)(w[0] >> 2 * c & 3) - 1), "2-bit code %d", c);
    for (unsigned i = 0; i < 8; i++) {
        nf_dialect_unpack_nibble_run_scalar(w, 2, 4 * i, 3, 0.25f, out);
        cr_assert(out[0] == (float)((int)i - 3) * 0.25f && out[1] == (float)((int)i + 8 - 3) * 0.25f, "nibble %u", i);
    }
    /* E2M1 pairs: the low nibble first */
    const float table[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
    const uint8_t b[2] = {0x7F, 0x81};
    nf_dialect_unpack_e2m1_run_scalar(b, 2, table, 0.25f, out);
    cr_assert(out[0] == -1.5f && out[1] == 1.5f && out[2] == 0.125f && out[3] == -0.0f && signbit(out[3]));
}

Test(dialect_unpack, avx2_kernels_match_scalar, .fini = restore) { kernels_match(NF_SIMD_AVX2); }
Test(dialect_unpack, avx512_kernels_match_scalar, .fini = restore) { kernels_match(NF_SIMD_AVX512); }

/* ---------------------------------------------------------------- whole readings */
static char *dir;
static void make_dir(void) { dir = sw_tempdir(); }
static void remove_dir(void)
{
    sw_rmtree(dir);
    free(dir);
    restore();
}

enum { N = 256, K = 512, G = 64, NG = K / G };

/* A GPTQ (b bits, v1 or v2 zero points) or AWQ GEMM (b = 4) weight of N rows, K columns, groups
 * of G, packed from random codes, zero points and F16 scales as the producers pack them; want
 * gets (q - z) * s. */
typedef struct packed_case {
    nf_source *src;
    nf_dialects *d;
    const nf_qweight *q;
    float *want;
} packed_case;

static uint16_t f16_scale(void) /* a positive finite binary16 word, normal or subnormal */
{
    uint16_t w;
    do w = (uint16_t)(next() & 0x7FFF);
    while (w == 0 || (w & 0x7C00) == 0x7C00);
    return w;
}

static void make_case(packed_case *c, bool awq, unsigned bits, bool v2)
{
    const unsigned per = 32 / bits, mask = (1u << bits) - 1;
    uint8_t *codes = malloc((size_t)N * K), *z = malloc((size_t)N * NG);
    uint16_t *sc = malloc((size_t)N * NG * 2);
    for (size_t i = 0; i < (size_t)N * K; i++) codes[i] = (uint8_t)(next() & mask);
    for (size_t i = 0; i < (size_t)N * NG; i++) {
        z[i] = (uint8_t)(next() & mask); /* v1 stores z - 1: z 1..2^b here (AutoGPTQ's reading) */
        if (!awq && !v2) z[i] = (uint8_t)(z[i] == 0 ? 1 : z[i]);
    }
    for (size_t g = 0; g < NG; g++) /* scales [G, N] */
        for (size_t n = 0; n < N; n++) sc[g * N + n] = f16_scale();
    c->want = malloc((size_t)N * K * sizeof *c->want);
    for (size_t n = 0; n < N; n++)
        for (size_t k = 0; k < K; k++) {
            const size_t g = k / G;
            c->want[n * K + k] = (float)((int)codes[n * K + k] - (int)z[n * NG + g]) * nf_f16_to_f32(sc[g * N + n]);
        }
    uint32_t *qw, *qz;
    size_t qw_n, qz_n;
    sw_st_tensor t[3];
    if (!awq) { /* qweight [K / per, N]: bit stream down each column; qzeros [G, N / per] along N */
        qw_n = (size_t)K / per * N;
        qz_n = (size_t)NG * (N / per);
        qw = calloc(qw_n, 4);
        qz = calloc(qz_n, 4);
        for (size_t k = 0; k < K; k++)
            for (size_t n = 0; n < N; n++) qw[k / per * N + n] |= (uint32_t)codes[n * K + k] << (bits * (k % per));
        for (size_t g = 0; g < NG; g++)
            for (size_t n = 0; n < N; n++)
                qz[g * (N / per) + n / per] |= (uint32_t)(z[n * NG + g] - (v2 ? 0 : 1)) << (bits * (n % per));
        t[0] = (sw_st_tensor){"m.qweight", "I32", 2, {K / per, N}, qw, qw_n * 4};
        t[1] = (sw_st_tensor){"m.qzeros", "I32", 2, {NG, N / per}, qz, qz_n * 4};
    } else { /* qweight [K, N / 8], qzeros [G, N / 8]: columns 0,2,4,6,1,3,5,7 of 8 in nibbles 0..7 */
        static const unsigned nib[8] = {0, 4, 1, 5, 2, 6, 3, 7};
        qw_n = (size_t)K * (N / 8);
        qz_n = (size_t)NG * (N / 8);
        qw = calloc(qw_n, 4);
        qz = calloc(qz_n, 4);
        for (size_t k = 0; k < K; k++)
            for (size_t n = 0; n < N; n++) qw[k * (N / 8) + n / 8] |= (uint32_t)codes[n * K + k] << (4 * nib[n % 8]);
        for (size_t g = 0; g < NG; g++)
            for (size_t n = 0; n < N; n++) qz[g * (N / 8) + n / 8] |= (uint32_t)z[n * NG + g] << (4 * nib[n % 8]);
        t[0] = (sw_st_tensor){"m.qweight", "I32", 2, {K, N / 8}, qw, qw_n * 4};
        t[1] = (sw_st_tensor){"m.qzeros", "I32", 2, {NG, N / 8}, qz, qz_n * 4};
    }
    t[2] = (sw_st_tensor){"m.scales", "F16", 2, {NG, N}, sc, (size_t)NG * N * 2};
    sw_buf b = {0};
    sw_st_file(&b, t, 3, NULL);
    char *path = sw_path(dir, "model.safetensors");
    cr_assert_eq(sw_write_file(path, b.data, b.len), 0);
    free(path);
    sw_free(&b);
    char cfg[256];
    if (awq)
        snprintf(cfg, sizeof cfg,
                 "{\"quantization_config\": {\"quant_method\": \"awq\", \"bits\": 4, \"group_size\": %d, "
                 "\"version\": \"gemm\"}}",
                 G);
    else
        snprintf(cfg, sizeof cfg,
                 "{\"quantization_config\": {\"quant_method\": \"gptq\", \"bits\": %u, \"group_size\": %d, "
                 "\"desc_act\": false, \"checkpoint_format\": \"%s\"}}",
                 bits, G, v2 ? "gptq_v2" : "gptq");
    cr_assert_eq(sw_write_text(dir, "config.json", cfg), 0);
    nf_error err;
    cr_assert_eq(nf_source_open(dir, &c->src, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_dialects_scan(c->src, &c->d, &err), NF_OK, "%s", err.message);
    c->q = nf_dialects_weight_at(c->d, 0);
    cr_assert(c->q && c->q->shape[0] == N && c->q->shape[1] == K);
    free(codes);
    free(z);
    free(sc);
    free(qw);
    free(qz);
}

static void free_case(packed_case *c)
{
    nf_dialects_free(c->d);
    nf_source_close(c->src);
    free(c->want);
}

static void same_rows(const packed_case *c, const float *got, uint64_t r0, uint64_t r1, const char *how)
{
    for (uint64_t i = 0; i < (r1 - r0) * K; i++)
        if (memcmp(&got[i], &c->want[r0 * K + i], 4) != 0)
            cr_assert_fail("%s (%s): row %llu col %llu: got %a, want %a", how, nf_simd_level_name(nf_simd_active()),
                           (unsigned long long)(r0 + i / K), (unsigned long long)(i % K), (double)got[i],
                           (double)c->want[r0 * K + i]);
}

static void read_every_way(bool awq, unsigned bits, bool v2)
{
    packed_case c;
    make_case(&c, awq, bits, v2);
    float *got = malloc((size_t)N * K * sizeof *got);
    nf_error err;
    for (int level = NF_SIMD_SCALAR; level < NF_SIMD_LEVEL_COUNT; level++) {
        if (!nf_simd_supported((nf_simd_level)level)) continue; /* the kernels' own tests say so */
        nf_simd_force((nf_simd_level)level);
        /* whole: by bands */
        cr_assert_eq(nf_qweight_read_f32(c.src, c.q, 0, N, got, (size_t)N * K, &err), NF_OK, "%s", err.message);
        same_rows(&c, got, 0, N, "whole");
        /* a row from column 1 on: the plain reading */
        for (uint64_t r = 0; r < N; r += 37) {
            got[0] = c.want[r * K];
            cr_assert_eq(nf_qweight_read_f32_span(c.src, c.q, r, 1, K - 1, got + 1, K - 1, &err), NF_OK, "%s",
                         err.message);
            same_rows(&c, got, r, r + 1, "span from column 1");
        }
        /* rows held: any offset within the band; a cut AWQ word read the plain way */
        nf_dialect_rows *h;
        cr_assert_eq(nf_dialect_rows_open(c.src, c.q, 64, N, &h, &err), NF_OK, "%s", err.message);
        static const uint64_t cuts[][2] = {{64, 72}, {72, 200}, {200, 256}, {101, 103}, {64, 256}, {248, 256}};
        for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
            cr_assert_eq(nf_dialect_rows_read(h, cuts[i][0], cuts[i][1], got, (size_t)N * K, &err), NF_OK, "%s",
                         err.message);
            same_rows(&c, got, cuts[i][0], cuts[i][1], "held rows");
        }
        /* outside the band, or a buffer too small: a usage error */
        cr_assert_eq(nf_dialect_rows_read(h, 8, 16, got, (size_t)N * K, &err), NF_ERR_USAGE);
        cr_assert_eq(nf_dialect_rows_read(h, 64, 72, got, 8 * K - 1, &err), NF_ERR_USAGE);
        nf_dialect_rows_close(h);
    }
    free(got);
    free_case(&c);
}

TestSuite(dialect_unpack_read, .init = make_dir, .fini = remove_dir);
Test(dialect_unpack_read, gptq4_v1) { read_every_way(false, 4, false); }
Test(dialect_unpack_read, gptq4_v2) { read_every_way(false, 4, true); }
Test(dialect_unpack_read, gptq2_v1) { read_every_way(false, 2, false); }
Test(dialect_unpack_read, gptq8_v2) { read_every_way(false, 8, true); }
Test(dialect_unpack_read, awq_gemm) { read_every_way(true, 4, false); }
