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
#include "common/io.h"
#include "dialect/dialect_internal.h"
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
Test(dialect_unpack, neon_kernels_match_scalar, .fini = restore) { kernels_match(NF_SIMD_NEON); }

/* ---------------------------------------------------------------- whole readings */
static char *dir;
static void make_dir(void) { dir = sw_tempdir(); }
static void remove_dir(void)
{
    sw_rmtree(dir);
    free(dir);
    restore();
    nf_dialect_runs_window = (size_t)1 << 20;
}

/* A GPTQ (b bits, v1 or v2 zero points) or AWQ GEMM (b = 4) weight of n rows, k columns, groups
 * of g columns (0: one group, group_size -1), F16 or F32 scales, packed from random codes, zero
 * points and scales as the producers pack them; want gets (q - z) * s.  A F32 scale of 2^127 at
 * (over_row, its group of column over_col) makes that value overflow when q - z is 2 or more. */
typedef struct shape {
    bool awq;
    unsigned bits;
    bool v2;
    size_t n, k, g;
    bool f32;
    size_t over_row, over_col; /* over_row == n: none */
} shape;

typedef struct packed_case {
    shape sh;
    size_t g, ng;
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

static void make_case(packed_case *c, shape sh)
{
    const size_t N = sh.n, K = sh.k, G = sh.g ? sh.g : sh.k, NG = (K + G - 1) / G;
    const unsigned bits = sh.bits, per = 32 / bits, mask = (1u << bits) - 1;
    c->sh = sh;
    c->g = G;
    c->ng = NG;
    uint8_t *codes = malloc(N * K), *z = malloc(N * NG);
    float *sv = malloc(N * NG * sizeof *sv);
    uint8_t *sc = malloc(N * NG * 4);
    for (size_t i = 0; i < N * K; i++) codes[i] = (uint8_t)(next() & mask);
    for (size_t i = 0; i < N * NG; i++) {
        z[i] = (uint8_t)(next() & mask); /* v1 stores z - 1: z 1..2^b here (AutoGPTQ's reading) */
        if (!sh.awq && !sh.v2) z[i] = (uint8_t)(z[i] == 0 ? 1 : z[i]);
    }
    for (size_t g = 0; g < NG; g++) /* scales [G, N] */
        for (size_t n = 0; n < N; n++) {
            if (sh.f32) {
                float f = n == sh.over_row && g == sh.over_col / G ? 0x1p127f : ldexpf((float)(next() % 1000 + 1), -9);
                memcpy(sc + (g * N + n) * 4, &f, 4);
                sv[n * NG + g] = f;
            } else {
                uint16_t w = f16_scale();
                memcpy(sc + (g * N + n) * 2, &w, 2);
                sv[n * NG + g] = nf_f16_to_f32(w);
            }
        }
    if (sh.over_row < N) { /* q - z = 2 there, 0 in the rest of its group */
        const size_t g = sh.over_col / G;
        z[sh.over_row * NG + g] = 1;
        for (size_t k = g * G; k < (g + 1) * G && k < K; k++) codes[sh.over_row * K + k] = k == sh.over_col ? 3 : 1;
    }
    c->want = malloc(N * K * sizeof *c->want);
    for (size_t n = 0; n < N; n++)
        for (size_t k = 0; k < K; k++)
            c->want[n * K + k] = (float)((int)codes[n * K + k] - (int)z[n * NG + k / G]) * sv[n * NG + k / G];
    uint32_t *qw, *qz;
    sw_st_tensor t[3];
    if (!sh.awq) { /* qweight [K / per, N]: bit stream down each column; qzeros [G, N / per] along N */
        qw = calloc(K / per * N, 4);
        qz = calloc(NG * (N / per), 4);
        for (size_t k = 0; k < K; k++)
            for (size_t n = 0; n < N; n++) qw[k / per * N + n] |= (uint32_t)codes[n * K + k] << (bits * (k % per));
        for (size_t g = 0; g < NG; g++)
            for (size_t n = 0; n < N; n++)
                qz[g * (N / per) + n / per] |= (uint32_t)(z[n * NG + g] - (sh.v2 ? 0 : 1)) << (bits * (n % per));
        t[0] = (sw_st_tensor){"m.qweight", "I32", 2, {K / per, N}, qw, K / per * N * 4};
        t[1] = (sw_st_tensor){"m.qzeros", "I32", 2, {NG, N / per}, qz, NG * (N / per) * 4};
    } else { /* qweight [K, N / 8], qzeros [G, N / 8]: columns 0,2,4,6,1,3,5,7 of 8 in nibbles 0..7 */
        static const unsigned nib[8] = {0, 4, 1, 5, 2, 6, 3, 7};
        qw = calloc(K * (N / 8), 4);
        qz = calloc(NG * (N / 8), 4);
        for (size_t k = 0; k < K; k++)
            for (size_t n = 0; n < N; n++) qw[k * (N / 8) + n / 8] |= (uint32_t)codes[n * K + k] << (4 * nib[n % 8]);
        for (size_t g = 0; g < NG; g++)
            for (size_t n = 0; n < N; n++) qz[g * (N / 8) + n / 8] |= (uint32_t)z[n * NG + g] << (4 * nib[n % 8]);
        t[0] = (sw_st_tensor){"m.qweight", "I32", 2, {K, N / 8}, qw, K * (N / 8) * 4};
        t[1] = (sw_st_tensor){"m.qzeros", "I32", 2, {NG, N / 8}, qz, NG * (N / 8) * 4};
    }
    t[2] = (sw_st_tensor){"m.scales", sh.f32 ? "F32" : "F16", 2, {NG, N}, sc, NG * N * (sh.f32 ? 4 : 2)};
    sw_buf b = {0};
    sw_st_file(&b, t, 3, NULL);
    char *path = sw_path(dir, "model.safetensors");
    cr_assert_eq(sw_write_file(path, b.data, b.len), 0);
    free(path);
    sw_free(&b);
    char cfg[256];
    const int group = sh.g ? (int)sh.g : -1;
    if (sh.awq)
        snprintf(cfg, sizeof cfg,
                 "{\"quantization_config\": {\"quant_method\": \"awq\", \"bits\": 4, \"group_size\": %d, "
                 "\"version\": \"gemm\"}}",
                 group);
    else
        snprintf(cfg, sizeof cfg,
                 "{\"quantization_config\": {\"quant_method\": \"gptq\", \"bits\": %u, \"group_size\": %d, "
                 "\"desc_act\": false, \"checkpoint_format\": \"%s\"}}",
                 bits, group, sh.v2 ? "gptq_v2" : "gptq");
    cr_assert_eq(sw_write_text(dir, "config.json", cfg), 0);
    nf_error err;
    cr_assert_eq(nf_source_open(dir, &c->src, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_dialects_scan(c->src, &c->d, &err), NF_OK, "%s", err.message);
    c->q = nf_dialects_weight_at(c->d, 0);
    cr_assert(c->q && c->q->shape[0] == N && c->q->shape[1] == K);
    free(codes);
    free(z);
    free(sv);
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

static void same_rows(const packed_case *c, const float *got, uint64_t r0, uint64_t r1, uint64_t c0, uint64_t c1,
                      const char *how)
{
    const uint64_t K = c->sh.k, w = c1 - c0;
    for (uint64_t i = 0; i < (r1 - r0) * w; i++)
        if (memcmp(&got[i], &c->want[(r0 + i / w) * K + c0 + i % w], 4) != 0)
            cr_assert_fail("%s (%s): row %llu col %llu: got %a, want %a", how, nf_simd_level_name(nf_simd_active()),
                           (unsigned long long)(r0 + i / w), (unsigned long long)(c0 + i % w), (double)got[i],
                           (double)c->want[(r0 + i / w) * K + c0 + i % w]);
}

/* Every way of reading the weight, at every kernel level the CPU has, gives want. */
static void read_every_way(shape sh)
{
    packed_case c;
    make_case(&c, sh);
    const uint64_t N = sh.n, K = sh.k;
    float *got = malloc(N * K * sizeof *got);
    nf_error err;
    for (int level = NF_SIMD_SCALAR; level < NF_SIMD_LEVEL_COUNT; level++) {
        if (!nf_simd_supported((nf_simd_level)level)) continue; /* the kernels' own tests say so */
        nf_simd_force((nf_simd_level)level);
        /* whole: by bands */
        cr_assert_eq(nf_qweight_read_f32(c.src, c.q, 0, N, got, N * K, &err), NF_OK, "%s", err.message);
        same_rows(&c, got, 0, N, 0, K, "whole");
        /* spans of a row: from column 1 (the plain reading), from a word's and a group's start (bands) */
        const uint64_t from[] = {1, 8, c.g < K ? c.g : 16, K - 8};
        for (uint64_t r = 0; r < N; r += N / 5 + 1)
            for (size_t i = 0; i < sizeof from / sizeof *from; i++) {
                cr_assert_eq(nf_qweight_read_f32_span(c.src, c.q, r, from[i], K - from[i], got, K, &err), NF_OK, "%s",
                             err.message);
                same_rows(&c, got, r, r + 1, from[i], K, "span");
            }
        /* rows held: any offset within the band; a cut AWQ word read the plain way */
        nf_dialect_rows *h;
        const uint64_t cuts[][2] = {{64, 72}, {72, N - 56}, {N - 56, N}, {101, 103}, {64, N}, {N - 8, N}};
        cr_assert_eq(nf_dialect_rows_open(c.src, c.q, 64, N, &h, &err), NF_OK, "%s", err.message);
        for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
            cr_assert_eq(nf_dialect_rows_read(h, cuts[i][0], cuts[i][1], got, N * K, &err), NF_OK, "%s", err.message);
            same_rows(&c, got, cuts[i][0], cuts[i][1], 0, K, "held rows");
        }
        /* outside the band, or a buffer too small: a usage error */
        cr_assert_eq(nf_dialect_rows_read(h, 8, 16, got, N * K, &err), NF_ERR_USAGE);
        cr_assert_eq(nf_dialect_rows_read(h, 64, 72, got, 8 * K - 1, &err), NF_ERR_USAGE);
        nf_dialect_rows_close(h);
    }
    free(got);
    free_case(&c);
}

TestSuite(dialect_unpack_read, .init = make_dir, .fini = remove_dir);
Test(dialect_unpack_read, gptq4_v1) { read_every_way((shape){false, 4, false, 256, 512, 64, false, 256, 0}); }
Test(dialect_unpack_read, gptq4_v2_bf16_group_128)
{
    read_every_way((shape){false, 4, true, 256, 512, 128, true, 256, 0});
}
Test(dialect_unpack_read, gptq2_v1_group_32) { read_every_way((shape){false, 2, false, 256, 512, 32, false, 256, 0}); }
Test(dialect_unpack_read, gptq8_v2) { read_every_way((shape){false, 8, true, 256, 512, 64, false, 256, 0}); }
/* K not a multiple of the group (a last group of 32 columns), one group (group_size -1) */
Test(dialect_unpack_read, gptq4_partial_group)
{
    read_every_way((shape){false, 4, false, 128, 480, 64, false, 128, 0});
}
Test(dialect_unpack_read, gptq4_one_group) { read_every_way((shape){false, 4, false, 128, 256, 0, false, 128, 0}); }
Test(dialect_unpack_read, awq_gemm) { read_every_way((shape){true, 4, false, 256, 512, 64, false, 256, 0}); }
Test(dialect_unpack_read, awq_gemm_partial_group)
{
    read_every_way((shape){true, 4, false, 128, 480, 128, false, 128, 0});
}

/* read_runs' two ways: runs far apart one read each (rows [0, 256) of 4096: 1 KiB runs 16 KiB
 * apart), and near ones in windows (a small window: several windows a band) */
Test(dialect_unpack_read, runs_apart_and_in_small_windows)
{
    nf_error err;
    for (int awq = 0; awq < 2; awq++) {
        nf_dialect_runs_window = (size_t)1 << 20;
        packed_case c;
        make_case(&c, (shape){awq, 4, false, 4096, 64, 32, false, 4096, 0});
        float *got = malloc(4096 * 64 * sizeof *got);
        nf_dialect_rows *h;
        cr_assert_eq(nf_dialect_rows_open(c.src, c.q, 256, 512, &h, &err), NF_OK, "%s", err.message);
        cr_assert_eq(nf_dialect_rows_read(h, 256, 512, got, 4096 * 64, &err), NF_OK, "%s", err.message);
        same_rows(&c, got, 256, 512, 0, 64, "runs apart");
        nf_dialect_rows_close(h);
        nf_dialect_runs_window = 300; /* a few runs a window, and a window smaller than some runs */
        cr_assert_eq(nf_qweight_read_f32(c.src, c.q, 0, 4096, got, 4096 * 64, &err), NF_OK, "%s", err.message);
        same_rows(&c, got, 0, 4096, 0, 64, "small windows");
        cr_assert_eq(nf_qweight_read_f32(c.src, c.q, 8, 48, got, 4096 * 64, &err), NF_OK, "%s", err.message);
        same_rows(&c, got, 8, 48, 0, 64, "small windows");
        free(got);
        free_case(&c);
    }
}

/* A long row of a narrow weight (8 rows of 2^16 columns, groups of 128) read as one span: its
 * codes, scales and zero points lie 8 values apart down qweight, scales and qzeros, and are read
 * a window of runs at a time, not a word or a group a read (the long-rows test's [2, 2^24] GPTQ
 * weight took 4.7 million reads). */
Test(dialect_unpack_read, a_long_row_in_few_reads)
{
    nf_error err;
    for (int awq = 0; awq < 2; awq++) {
        packed_case c;
        make_case(&c, (shape){awq, 4, false, 8, 65536, 128, false, 8, 0});
        float *got = malloc(65536 * sizeof *got);
        const uint64_t from[] = {0, 1}; /* a word's start (GPTQ's bands), and the plain reading */
        for (size_t i = 0; i < 2; i++) {
            const uint64_t before = nf_io_calls(NF_IO_READ);
            cr_assert_eq(nf_qweight_read_f32_span(c.src, c.q, 3, from[i], 65536 - from[i], got, 65536, &err), NF_OK,
                         "%s", err.message);
            const uint64_t reads = nf_io_calls(NF_IO_READ) - before;
            same_rows(&c, got, 3, 4, from[i], 65536, "a long row");
            cr_assert_leq(reads, 16, "%s from column %llu: %llu reads", awq ? "awq" : "gptq",
                          (unsigned long long)from[i], (unsigned long long)reads);
        }
        /* all 8 rows, by bands: a band of few rows holds many words (band_rows) */
        float *all = malloc(8 * 65536 * sizeof *all);
        const uint64_t before = nf_io_calls(NF_IO_READ);
        cr_assert_eq(nf_qweight_read_f32(c.src, c.q, 0, 8, all, 8 * 65536, &err), NF_OK, "%s", err.message);
        const uint64_t reads = nf_io_calls(NF_IO_READ) - before;
        same_rows(&c, all, 0, 8, 0, 65536, "8 long rows");
        cr_assert_leq(reads, 16, "%s, 8 rows: %llu reads", awq ? "awq" : "gptq", (unsigned long long)reads);
        free(all);
        free(got);
        free_case(&c);
    }
}

/* A value past binary32 inside a held band (F32 scales): named by row and column; the band's
 * other rows still read (the plain way, after the error). */
Test(dialect_unpack_read, overflow_inside_a_held_band)
{
    for (int awq = 0; awq < 2; awq++) {
        packed_case c;
        make_case(&c, (shape){awq, 4, false, 256, 128, 64, true, 100, 70});
        float *got = malloc(256 * 128 * sizeof *got);
        nf_error err;
        nf_dialect_rows *h;
        cr_assert_eq(nf_dialect_rows_open(c.src, c.q, 64, 256, &h, &err), NF_OK, "%s", err.message);
        cr_assert_eq(nf_dialect_rows_read(h, 64, 96, got, 256 * 128, &err), NF_OK, "%s", err.message);
        same_rows(&c, got, 64, 96, 0, 128, "before the overflow");
        cr_assert_eq(nf_dialect_rows_read(h, 96, 104, got, 256 * 128, &err), NF_ERR_INVALID);
        cr_assert(strstr(err.message, "row 100 col 70: integer code 2 (q - z) x scale") != NULL, "%s", err.message);
        cr_assert(strstr(err.message, "overflows binary32") != NULL, "%s", err.message);
        cr_assert_eq(nf_dialect_rows_read(h, 104, 256, got, 256 * 128, &err), NF_OK, "%s", err.message);
        same_rows(&c, got, 104, 256, 0, 128, "after the overflow");
        cr_assert_eq(nf_qweight_read_f32(c.src, c.q, 96, 104, got, 256 * 128, &err), NF_ERR_INVALID);
        cr_assert(strstr(err.message, "row 100 col 70: integer code 2") != NULL, "%s", err.message);
        nf_dialect_rows_close(h);
        free(got);
        free_case(&c);
    }
}

/* The most rows a band holds: a multiple of 8 within 32 MiB, none for act-order's or 3-bit words. */
Test(dialect_unpack_read, rows_a_band_holds)
{
    packed_case c;
    make_case(&c, (shape){false, 4, false, 64, 4096, 128, false, 64, 0});
    const uint64_t most = nf_dialect_rows_most(c.q);
    cr_assert(most % 8 == 0 && most >= 8 && most * (4096 / 2) <= ((uint64_t)32 << 20), "%llu",
              (unsigned long long)most);
    cr_assert_eq(nf_dialect_rows_most(NULL), 0);
    free_case(&c);
}
