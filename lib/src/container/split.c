/* How an artifact is split into files: the split policy (docs/artifact.md 4); the continuation
 * files' names (section 1) are formed with the other names beside an output, in
 * lib/src/outputs/out_names.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "common/fail.h"
#include "container/container_internal.h"

nf_status nf_split_plan(uint64_t payload_bytes, uint64_t entry_payload_start, uint64_t max_file_bytes,
                        uint64_t **segments, size_t *count, nf_error *err)
{
    *segments = NULL;
    *count = 0;
    if (payload_bytes == 0) return nf_error_set(err, NF_ERR_INVALID, "the payload is empty (0 bytes)");
    uint64_t single;
    bool fits = nf_add_u64(entry_payload_start, payload_bytes, &single);
    if (max_file_bytes == 0 || (fits && single <= max_file_bytes)) {
        if (!fits)
            return nf_error_set(err, NF_ERR_INVALID, "payload %llu bytes: the entry file size overflows U64",
                                (unsigned long long)payload_bytes);
        uint64_t *s = malloc(sizeof *s);
        if (!s) return nf_common_nomem(err);
        s[0] = payload_bytes;
        *segments = s;
        *count = 1;
        return NF_OK;
    }
    /* The limit counts everything in a file: header, JSON and gap for the entry, the 4096-byte
     * header page for a part.  Capacities are whole pages so that every segment starts at a
     * 4096-aligned logical offset. */
    uint64_t limit = max_file_bytes;
    uint64_t entry_cap = limit > entry_payload_start ? (limit - entry_payload_start) / NF_PAGE_BYTES * NF_PAGE_BYTES
                                                     : 0;
    uint64_t part_cap = limit > NF_PAGE_BYTES ? (limit - NF_PAGE_BYTES) / NF_PAGE_BYTES * NF_PAGE_BYTES : 0;
    if (entry_payload_start >= limit || entry_cap == 0 || part_cap == 0)
        return nf_error_set(err, NF_ERR_INVALID,
                            "max_file_bytes %llu is too small: each file needs its header (the entry %llu bytes "
                            "before its payload) plus at least one 4096-byte page of payload",
                            (unsigned long long)limit, (unsigned long long)entry_payload_start);
    uint64_t rest = payload_bytes - entry_cap; /* entry_cap < payload: the single file did not fit */
    uint64_t parts = nf_ceil_div_u64(rest, part_cap);
    if (parts >= NF_MAX_FILES)
        return nf_error_set(err, NF_ERR_INVALID,
                            "max_file_bytes %llu splits the %llu-byte payload into %llu files, more than %u",
                            (unsigned long long)limit, (unsigned long long)payload_bytes,
                            (unsigned long long)(parts + 1), NF_MAX_FILES);
    size_t n = (size_t)parts + 1;
    uint64_t *s = malloc(n * sizeof *s);
    if (!s) return nf_common_nomem(err);
    s[0] = entry_cap;
    for (size_t i = 1; i < n; i++) {
        s[i] = rest < part_cap ? rest : part_cap;
        rest -= s[i];
    }
    *segments = s;
    *count = n;
    return NF_OK;
}
