/* SHA-256 (FIPS 180-4), for the digests of method programs' files (docs/method-programs.md 5):
 * the figure `sha256sum` prints, so a user can check what the provenance records. */
#ifndef NINFER_COMMON_SHA256_H
#define NINFER_COMMON_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct nf_sha256 {
    uint32_t h[8];
    uint64_t bytes;    /* hashed so far */
    uint8_t block[64]; /* the partial block */
    size_t used;
} nf_sha256;

void nf_sha256_init(nf_sha256 *s);
void nf_sha256_update(nf_sha256 *s, const void *data, size_t len);
void nf_sha256_final(nf_sha256 *s, uint8_t out[32]);

#endif
