/* nf_method_load_f32 (method/common.h) widens source words exactly: every binary16 word (normal,
 * subnormal, zero, infinity, NaN with its payload) and every bfloat16 word gives the bits of
 * nf_f16_to_f32 / nf_bf16_to_f32, at any start column, any count and any alignment of the data,
 * at every SIMD level the CPU has (binary16 words take F16C at the avx2 level and above). */
#include <criterion/criterion.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "common/cpu.h"
#include "method/common.h"

static uint32_t bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

static void every_word(nf_src_type type)
{
    enum { N = 65536 };
    uint8_t *buf = malloc(2 * N + 1);
    float *out = malloc(sizeof(float) * N);
    for (int l = 0; l < NF_SIMD_LEVEL_COUNT; l++) {
        for (int shift = 0; shift < 2; shift++) { /* words at an even and at an odd address */
            if (!nf_simd_supported((nf_simd_level)l)) continue;
            cr_assert_eq(nf_simd_force((nf_simd_level)l), (nf_simd_level)l);
            uint8_t *p = buf + shift;
            for (uint32_t w = 0; w < N; w++) {
                uint16_t h = (uint16_t)w;
                memcpy(p + 2 * w, &h, 2);
            }
            nf_src_rows src = {.name = "w", .type = type, .data = p, .rows = 256, .cols = 256};
            for (uint64_t r = 0; r < 256; r++) {
                size_t c0 = (size_t)(r * 7 % 200), n = 256 - c0; /* starts and lengths of every residue */
                nf_method_load_f32(&src, r, c0, n, out);
                for (size_t i = 0; i < n; i++) {
                    uint16_t h = (uint16_t)(r * 256 + c0 + i);
                    float want = type == NF_SRC_F16 ? nf_f16_to_f32(h) : nf_bf16_to_f32(h);
                    if (bits(out[i]) != bits(want))
                        cr_assert_fail("%s: word 0x%04x: 0x%08x, want 0x%08x", nf_simd_level_name((nf_simd_level)l), h,
                                       bits(out[i]), bits(want));
                }
            }
        }
    }
    free(out);
    free(buf);
}

Test(method_load, every_f16_word) { every_word(NF_SRC_F16); }
Test(method_load, every_bf16_word) { every_word(NF_SRC_BF16); }
