/* SHA-256 block compression with x86's SHA extensions (common/sha256.h), bit for bit the scalar
 * reference's.  The state lives in two registers in the order the round instruction takes, ABEF
 * and CDGH; each call of sha256rnds2 does two rounds, so a group of four message words is two
 * calls, the second on the group's upper half.  The message schedule of FIPS 180-4 6.2.2 step 1,
 * W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16], is made four words at a time: sha256msg1
 * adds s0 of the next word, alignr brings in W[t-7], sha256msg2 adds s1 of the words two back. */
#include "common/sha256.h"
#include "common/simd_target.h"

#if NF_X86_KERNELS
#include <immintrin.h>


static NF_SHANI_FN void blocks_shani(uint32_t h[8], const uint8_t *p, size_t n)
{
    /* big-endian words (FIPS 180-4 3.1) from little-endian lanes */
    const __m128i swap = _mm_set_epi8(12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3);
    /* h[0..3] = A B C D and h[4..7] = E F G H, lane 0 first, into ABEF and CDGH (lane 3 first) */
    __m128i dcba = _mm_loadu_si128((const __m128i *)h), hgfe = _mm_loadu_si128((const __m128i *)(h + 4));
    __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1), efgh = _mm_shuffle_epi32(hgfe, 0x1B);
    __m128i abef = _mm_alignr_epi8(cdab, efgh, 8), cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
    for (size_t b = 0; b < n; b++, p += 64) {
        const __m128i abef0 = abef, cdgh0 = cdgh;
        __m128i w[4];
        for (int j = 0; j < 4; j++) w[j] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * j)), swap);
        for (int g = 0; g < 16; g++) {
            __m128i wk = _mm_add_epi32(w[g & 3], _mm_load_si128((const __m128i *)(nf_sha256_k + 4 * g)));
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);
            if (g < 12) { /* W[4g+16 .. 4g+19] in place of W[4g .. 4g+3] */
                __m128i t = _mm_sha256msg1_epu32(w[g & 3], w[(g + 1) & 3]);
                t = _mm_add_epi32(t, _mm_alignr_epi8(w[(g + 3) & 3], w[(g + 2) & 3], 4));
                w[g & 3] = _mm_sha256msg2_epu32(t, w[(g + 3) & 3]);
            }
            abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0E));
        }
        abef = _mm_add_epi32(abef, abef0);
        cdgh = _mm_add_epi32(cdgh, cdgh0);
    }
    __m128i feba = _mm_shuffle_epi32(abef, 0x1B), dchg = _mm_shuffle_epi32(cdgh, 0xB1);
    _mm_storeu_si128((__m128i *)h, _mm_blend_epi16(feba, dchg, 0xF0));
    _mm_storeu_si128((__m128i *)(h + 4), _mm_alignr_epi8(dchg, feba, 8));
}

const nf_sha256_kernels nf_sha256_kernels_shani = {"sha-ni", blocks_shani};
#endif
