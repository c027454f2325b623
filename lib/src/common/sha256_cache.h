/* The digest cache (docs/provenance.md, "The digest cache"): a source file's SHA-256 kept under
 * what identifies its bytes -- device, inode, size, modification and change times to the
 * nanosecond -- so that converting the same checkpoint again (one quant after another) does not
 * hash it again.  A file written since has a new change time (which no user can set), so its
 * entry no longer matches.  The cache lives in $XDG_CACHE_HOME/ninfer-tools/sha256 (else
 * ~/.cache/...), a directory of the user's own (mode 0700, owned by them: otherwise unused);
 * NINFER_DIGEST_CACHE=0 turns it off.  Entries are tiny files, each written whole (temp +
 * rename); anything unreadable, oversized or malformed is a miss, never an error. */
#ifndef NINFER_COMMON_SHA256_CACHE_H
#define NINFER_COMMON_SHA256_CACHE_H

#include <stdbool.h>
#include <sys/stat.h>

/* The recorded digest of the file whose fstat is sb, or false. */
bool nf_sha256_cache_get(const struct stat *sb, char hex[65]);
/* Records hex for it (best effort). */
void nf_sha256_cache_put(const struct stat *sb, const char hex[65]);

#endif
