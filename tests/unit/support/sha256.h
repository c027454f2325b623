/* SHA-256 (FIPS 180-4) for the tests: the upstream sidecars record each object's sha256. */
#ifndef NINFER_TEST_SHA256_H
#define NINFER_TEST_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct nf_test_sha256 {
    uint32_t h[8];
    uint64_t total;
    uint8_t block[64];
    size_t fill;
} nf_test_sha256;

void nf_test_sha256_init(nf_test_sha256 *s);
void nf_test_sha256_update(nf_test_sha256 *s, const void *data, size_t len);
/* Lowercase hex digest (64 digits + NUL). */
void nf_test_sha256_final(nf_test_sha256 *s, char hex[65]);
void nf_test_sha256_hex(const void *data, size_t len, char hex[65]);

#endif
