/* XXH3-128 checksums in the canonical form docs/decisions.md D17 fixes: the 16 bytes of
 * XXH128_canonicalFromHash (big-endian, high 64 bits first) as 32 lowercase hex digits, which is
 * what `xxhsum -H2` prints.  The system libxxhash does the hashing. */
#include <xxhash.h>

#include <ninfer/container.h>

#include "container/container_internal.h"

static void canonical_hex(XXH128_hash_t h, char out[33])
{
    static const char hex[] = "0123456789abcdef";
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, h);
    for (size_t i = 0; i < sizeof c.digest; i++) {
        out[2 * i] = hex[c.digest[i] >> 4];
        out[2 * i + 1] = hex[c.digest[i] & 15];
    }
    out[32] = '\0';
}

void nf_xxh3_128_hex(const void *data, size_t len, char out[33]) { canonical_hex(XXH3_128bits(data, len), out); }

nf_xxh3_stream *nf_xxh3_stream_new(void)
{
    XXH3_state_t *s = XXH3_createState();
    if (s && XXH3_128bits_reset(s) != XXH_OK) {
        XXH3_freeState(s);
        return NULL;
    }
    return (nf_xxh3_stream *)s;
}

void nf_xxh3_stream_update(nf_xxh3_stream *s, const void *data, size_t len)
{
    XXH3_128bits_update((XXH3_state_t *)s, data, len);
}

void nf_xxh3_stream_final(nf_xxh3_stream *s, char out[33])
{
    canonical_hex(XXH3_128bits_digest((XXH3_state_t *)s), out);
    XXH3_freeState((XXH3_state_t *)s);
}
