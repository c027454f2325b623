/* SHA-256 (common/sha256.h): FIPS 180-4's example messages (their digests from the standard's
 * examples document, not from this code), and the SHA-NI kernel bit for bit against the scalar
 * reference: every length 0..1100 and random lengths up to 70000, hashed whole and in random
 * split updates, and the block kernels on random states.  A CPU without SHA-NI reports the
 * comparison as skipped (never a warning: Criterion exits 1 after one). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cpu.h"
#include "common/hex.h"
#include "common/sha256.h"

static void digest_hex(const void *m, size_t len, char out[65])
{
    nf_sha256 s;
    uint8_t d[32];
    nf_sha256_init(&s);
    nf_sha256_update(&s, m, len);
    nf_sha256_final(&s, d);
    nf_hex_bytes(d, 32, out);
}

static void known_answers(void)
{
    static const struct {
        const char *m, *hex;
    } v[] = {
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqr"
         "stu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    };
    char hex[65];
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        digest_hex(v[i].m, strlen(v[i].m), hex);
        cr_assert_str_eq(hex, v[i].hex, "message %zu at %s", i, nf_sha256_kernels_active()->name);
    }
    size_t n = 1000000;
    char *a = malloc(n);
    memset(a, 'a', n);
    digest_hex(a, n, hex);
    cr_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(a);
}

Test(sha256, known_answers_at_every_level)
{
    for (int l = 0; l < NF_SIMD_LEVEL_COUNT; l++) {
        if (!nf_simd_supported((nf_simd_level)l)) continue;
        nf_simd_force((nf_simd_level)l);
        known_answers();
    }
    nf_simd_force(nf_simd_best());
}

Test(sha256, the_scalar_level_is_the_reference)
{
    cr_assert_eq(nf_sha256_kernels_for(NF_SIMD_SCALAR), &nf_sha256_kernels_scalar);
    cr_assert_eq(nf_sha256_kernels_for((nf_simd_level)-1), &nf_sha256_kernels_scalar);
    cr_assert_eq(nf_sha256_kernels_for(NF_SIMD_LEVEL_COUNT), &nf_sha256_kernels_scalar);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* The digest of m hashed in random pieces with the active kernels. */
static void split_hex(const uint8_t *m, size_t len, char out[65])
{
    nf_sha256 s;
    uint8_t d[32];
    nf_sha256_init(&s);
    for (size_t at = 0; at < len;) {
        size_t k = (size_t)(next() % 200);
        if (k > len - at) k = len - at;
        nf_sha256_update(&s, m + at, k);
        at += k;
    }
    nf_sha256_final(&s, d);
    nf_hex_bytes(d, 32, out);
}

Test(sha256, sha_ni_bit_for_bit_with_the_scalar_reference)
{
    if (!nf_simd_has_sha() || !nf_simd_supported(NF_SIMD_AVX2))
        cr_skip_test("the CPU lacks SHA-NI (or NINFER_SIMD=scalar): the SHA-NI kernel is NOT tested on this machine");
    const nf_sha256_kernels *fast = nf_sha256_kernels_for(NF_SIMD_AVX2);
    cr_assert_str_eq(fast->name, "sha-ni");
    size_t cap = 70000;
    uint8_t *m = malloc(cap);
    for (size_t i = 0; i < cap; i++) m[i] = (uint8_t)next();
    char a[65], b[65], c[65];
    for (size_t len = 0; len < 1300; len++) {
        size_t n = len < 1100 ? len : (size_t)(next() % cap);
        nf_simd_force(NF_SIMD_SCALAR);
        digest_hex(m, n, a);
        nf_simd_force(NF_SIMD_AVX2);
        cr_assert_eq(nf_sha256_kernels_active(), fast);
        digest_hex(m, n, b);
        split_hex(m, n, c);
        cr_assert_str_eq(b, a, "length %zu", n);
        cr_assert_str_eq(c, a, "length %zu in pieces", n);
    }
    /* the block kernels on random states and blocks */
    for (int t = 0; t < 2000; t++) {
        uint32_t h1[8], h2[8];
        for (int i = 0; i < 8; i++) h1[i] = h2[i] = (uint32_t)next();
        size_t nb = 1 + (size_t)(next() % 8), off = (size_t)(next() % 64);
        nf_sha256_kernels_scalar.blocks(h1, m + off, nb);
        fast->blocks(h2, m + off, nb);
        cr_assert(memcmp(h1, h2, sizeof h1) == 0, "blocks differ (trial %d)", t);
    }
    nf_simd_force(nf_simd_best());
    free(m);
}
