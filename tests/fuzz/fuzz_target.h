/* tests/fuzz/fuzz_target.h - the one entry point every fuzz target defines (libFuzzer's
 * interface), plus small helpers the targets share.
 *
 * Each tests/fuzz/fuzz_<name>.c defines LLVMFuzzerTestOneInput over raw bytes.  It is linked
 * either with libFuzzer (the NINFER_FUZZ build, `make fuzz`) or with replay_main.c (every
 * normal build: ctest replays the seed and regression corpora through it).  A target must
 * never crash, hang, leak or trip a sanitizer on any input; it returns 0 always. */
#ifndef NINFER_FUZZ_TARGET_H
#define NINFER_FUZZ_TARGET_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static inline uint64_t fz_min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* Keeps a computed value alive so that reads of library output cannot be optimised away
 * (reading every byte the library hands back is how a harness turns a dangling or short
 * buffer into a sanitizer report). */
static inline void fz_consume(const void *p, size_t n)
{
    const volatile unsigned char *b = (const volatile unsigned char *)p;
    volatile unsigned sink = 0;
    for (size_t i = 0; i < n; i++) sink += b[i];
    (void)sink;
}

static inline void fz_consume_str(const char *s)
{
    if (!s) return;
    size_t n = 0;
    while (s[n]) n++;
    fz_consume(s, n);
}

/* With NINFER_FUZZ_VERBOSE set, targets say what the library answered (to check that the
 * seeds are accepted, or why a corpus input is refused): "<stage>: ok" or "<stage>: <error>". */
static inline void fz_note(const char *stage, int ok, const char *message)
{
    static int verbose = -1;
    if (verbose < 0) verbose = getenv("NINFER_FUZZ_VERBOSE") != NULL;
    if (verbose) fprintf(stderr, "  %s: %s\n", stage, ok ? "ok" : message);
}

#endif
