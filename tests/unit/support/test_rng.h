/* The tests' pseudo-random generator: xorshift64* (Vigna), upper 32 bits of the product.
 * Header-only.  Each test file keeps its own state and seed, so a file draws exactly the
 * sequence it always drew:
 *
 *     TEST_RNG(0x243F6A8885A308D3ull)   -- defines rng_state, rng32() and uniform()
 *                                          (either may go unused: Clang would warn)
 *
 * or, for a state of its own, test_rng32(&state) and test_uniform(&state). */
#ifndef NINFER_TEST_RNG_H
#define NINFER_TEST_RNG_H

#include <stdint.h>

/* The next 32 random bits of *state (which must not be 0). */
static inline uint32_t test_rng32(uint64_t *state)
{
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return (uint32_t)((*state * 0x2545F4914F6CDD1Dull) >> 32);
}

/* Uniform in [-1, 1), from one draw. */
static inline double test_uniform(uint64_t *state) { return (double)test_rng32(state) / 2147483648.0 - 1.0; }

/* The file's generator: a state seeded with `seed` and rng32()/uniform() drawing from it. */
#define TEST_RNG(seed)                                                                            \
    static uint64_t rng_state = (seed);                                                           \
    __attribute__((unused)) static inline uint32_t rng32(void) { return test_rng32(&rng_state); } \
    __attribute__((unused)) static inline double uniform(void) { return test_uniform(&rng_state); }

#endif
