/* SHA-256 (common/sha256.h): FIPS 180-4's example messages (their digests from the standard's
 * examples document, not from this code), and each kernel of the SHA-256 instructions -- x86's
 * SHA-NI, aarch64's ARMv8 SHA2 -- bit for bit against the scalar reference, selected through
 * the dispatch the library uses (nf_simd_force, nf_sha256_kernels_active): the example
 * messages, every length 0..1100 from an aligned and an unaligned start, random lengths up to
 * 8 KiB at random starts and up to 70000, hashed whole, in random split updates and in two or
 * three updates split at every offset of multi-block messages, and the block kernels on random
 * states.  A build for the other machine, or a CPU without the instructions (or
 * NINFER_SIMD=scalar), reports the comparison as skipped with the reason (never a warning:
 * Criterion exits 1 after one).  And the dispatch itself: NINFER_SIMD=scalar hashes with the
 * portable code, the best level with the instructions when the CPU has them. */
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

/* The digest of m through the dispatch at `level`, whose table must be `fast`. */
static void digest_at(nf_simd_level level, const nf_sha256_kernels *fast, const uint8_t *m, size_t n, char out[65])
{
    nf_simd_force(level);
    cr_assert_eq(nf_sha256_kernels_active(), fast, "level %s", nf_simd_level_name(level));
    digest_hex(m, n, out);
}

/* m hashed with the active kernels in updates of lengths cut[0], cut[1] - cut[0], ..., n - cut[k - 1]. */
static void pieces_hex(const uint8_t *m, size_t n, const size_t *cut, size_t k, char out[65])
{
    nf_sha256 s;
    uint8_t d[32];
    nf_sha256_init(&s);
    size_t at = 0;
    for (size_t i = 0; i <= k; i++) {
        size_t end = i < k ? cut[i] : n;
        nf_sha256_update(&s, m + at, end - at);
        at = end;
    }
    nf_sha256_final(&s, d);
    nf_hex_bytes(d, 32, out);
}

/* The kernel of `level` (named `name`) against the scalar reference, bit for bit. */
static void compare_with_scalar(nf_simd_level level, const char *name)
{
    const nf_sha256_kernels *fast = nf_sha256_kernels_for(level);
    cr_assert_str_eq(fast->name, name);
    nf_simd_force(level);
    cr_assert_eq(nf_sha256_kernels_active(), fast);
    known_answers();
    size_t cap = 70000;
    uint8_t *m = malloc(cap);
    for (size_t i = 0; i < cap; i++) m[i] = (uint8_t)next();
    char a[65], b[65], c[65];
    /* every length to 1100 (every tail of the padding, one to 17 blocks), then random ones */
    for (size_t len = 0; len < 1300; len++) {
        size_t n = len < 1100 ? len : (size_t)(next() % cap);
        for (size_t off = 0; off < 2; off++) { /* from an aligned start, then an odd one */
            const uint8_t *at = m + (off ? 1 + len % 15 : 0);
            if (n > cap - (size_t)(at - m)) n = cap - (size_t)(at - m);
            digest_at(NF_SIMD_SCALAR, &nf_sha256_kernels_scalar, at, n, a);
            digest_at(level, fast, at, n, b);
            split_hex(at, n, c);
            cr_assert_str_eq(b, a, "length %zu at offset %zu", n, (size_t)(at - m));
            cr_assert_str_eq(c, a, "length %zu at offset %zu in pieces", n, (size_t)(at - m));
        }
    }
    /* random lengths up to 8 KiB from random starts */
    for (int t = 0; t < 400; t++) {
        size_t off = (size_t)(next() % 64), n = (size_t)(next() % 8193);
        digest_at(NF_SIMD_SCALAR, &nf_sha256_kernels_scalar, m + off, n, a);
        digest_at(level, fast, m + off, n, b);
        cr_assert_str_eq(b, a, "length %zu at offset %zu", n, off);
    }
    /* multi-block messages in two updates split at every offset, and in three (the second piece
     * 67 bytes: it ends in another block than it starts) */
    static const size_t lens[] = {64, 128, 300, 1031};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        size_t n = lens[i];
        const uint8_t *at = m + 3; /* unaligned */
        digest_at(NF_SIMD_SCALAR, &nf_sha256_kernels_scalar, at, n, a);
        nf_simd_force(level);
        for (size_t cut = 0; cut <= n; cut++) {
            size_t two[2] = {cut, cut + 67 < n ? cut + 67 : n};
            pieces_hex(at, n, two, 1, b);
            pieces_hex(at, n, two, 2, c);
            cr_assert_str_eq(b, a, "length %zu split at %zu", n, cut);
            cr_assert_str_eq(c, a, "length %zu split at %zu and %zu", n, two[0], two[1]);
        }
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
    /* no block: the state is left as it was */
    uint32_t h[8], h0[8];
    for (int i = 0; i < 8; i++) h[i] = h0[i] = (uint32_t)next();
    fast->blocks(h, m, 0);
    cr_assert(memcmp(h, h0, sizeof h) == 0);
    nf_simd_force(nf_simd_best());
    free(m);
}

Test(sha256, sha_ni_bit_for_bit_with_the_scalar_reference)
{
    if (!NF_X86_KERNELS) cr_skip_test("not an x86 build: the SHA-NI kernel is x86's (not built here)");
    if (!nf_simd_has_sha() || !nf_simd_supported(NF_SIMD_AVX2))
        cr_skip_test("the CPU lacks SHA-NI (or NINFER_SIMD=scalar): the SHA-NI kernel is NOT tested on this machine");
    compare_with_scalar(NF_SIMD_AVX2, "sha-ni");
}

Test(sha256, armv8_sha2_bit_for_bit_with_the_scalar_reference)
{
    if (!NF_ARM_KERNELS)
        cr_skip_test(
            "not an aarch64 build: the ARMv8 SHA-256 kernel is aarch64's (not built here; make test-arm64 runs it)");
    if (!nf_simd_has_sha() || !nf_simd_supported(NF_SIMD_NEON))
        cr_skip_test("the CPU lacks the ARMv8 SHA-256 instructions (HWCAP_SHA2, HWCAP_AES) (or NINFER_SIMD=scalar): "
                     "the ARMv8 kernel is NOT tested on this machine");
    compare_with_scalar(NF_SIMD_NEON, "armv8-sha2");
}

/* scripts/arm64.sh runs the suite under qemu-user, whose CPU has the ARMv8 SHA-256 instructions,
 * and says so (NINFER_TEST_EXPECT_SHA=1): there a detection that stopped seeing them fails,
 * instead of turning the comparison above into a skip and every expectation below into
 * "scalar". */
Test(sha256, detection_sees_what_the_run_expects)
{
    const char *e = getenv("NINFER_TEST_EXPECT_SHA");
    if (!e || strcmp(e, "1") != 0)
        cr_skip_test(
            "NINFER_TEST_EXPECT_SHA is not 1: this run does not know whether the CPU has SHA-256 instructions");
    cr_assert(nf_simd_has_sha(), "NINFER_TEST_EXPECT_SHA=1, but nf_simd_has_sha() sees no SHA-256 instructions");
}

/* The name of the table the level takes on this machine: the instructions' kernel where the CPU
 * has them (common/sha256.h), else the portable code. */
static const char *expected_name(nf_simd_level level)
{
    if (!nf_simd_has_sha()) return "scalar";
    if (NF_X86_KERNELS && (level == NF_SIMD_AVX2 || level == NF_SIMD_AVX512)) return "sha-ni";
    if (NF_ARM_KERNELS && level == NF_SIMD_NEON) return "armv8-sha2";
    return "scalar";
}

Test(sha256, every_level_takes_its_table)
{
    for (int l = 0; l < NF_SIMD_LEVEL_COUNT; l++)
        cr_assert_str_eq(nf_sha256_kernels_for((nf_simd_level)l)->name, expected_name((nf_simd_level)l), "level %s",
                         nf_simd_level_name((nf_simd_level)l));
}

/* Criterion runs each test in a fresh process, so the environment is read here for the first
 * time. */
Test(sha256, ninfer_simd_scalar_selects_the_portable_code)
{
    setenv("NINFER_SIMD", "scalar", 1);
    cr_assert_eq(nf_simd_active(), NF_SIMD_SCALAR);
    cr_assert_eq(nf_sha256_kernels_active(), &nf_sha256_kernels_scalar);
    known_answers();
}

Test(sha256, the_best_level_selects_the_instructions)
{
    unsetenv("NINFER_SIMD");
    const nf_sha256_kernels *k = nf_sha256_kernels_active();
    cr_assert_str_eq(k->name, expected_name(nf_simd_best()));
    cr_log_info("SHA-256 kernel on this CPU: %s", k->name);
    known_answers();
}
