/* A linear pre-scan of JSON text that bounds what jansson would build before it builds anything
 * (internal).  jansson spends about 240 bytes per object or array and about 100 per member or
 * element, so tens of megabytes of "[{},{},...]" would cost gigabytes: a reader runs this first
 * with its own caps.  Containers ('{', '['), values (separators + containers) and nesting are
 * counted outside strings; malformed text is not judged (jansson says where it is wrong). */
#ifndef NINFER_COMMON_JSON_PRESCAN_H
#define NINFER_COMMON_JSON_PRESCAN_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <ninfer/error.h>

typedef struct nf_json_caps {
    uint64_t depth;      /* deepest nesting of objects and arrays */
    uint64_t containers; /* objects and arrays in all */
    uint64_t values;     /* values in all (members and elements) */
} nf_json_caps;

typedef enum nf_json_excess {
    NF_JSON_WITHIN = 0,
    NF_JSON_TOO_DEEP,
    NF_JSON_TOO_MANY_CONTAINERS,
    NF_JSON_TOO_MANY_VALUES
} nf_json_excess;

/* Which cap the n bytes at p exceed first, and the byte offset where (*at); NF_JSON_WITHIN when
 * none. */
nf_json_excess nf_json_prescan(const uint8_t *p, size_t n, const nf_json_caps *caps, size_t *at);

/* The pre-scan as a reader's check: NF_OK within the caps, else NF_ERR_INVALID naming the file
 * (path), the byte, the cap and what it is for: `what` ("an index", "a config.json", "a plan")
 * and `detail` (what the value cap counts, or ""). */
nf_status nf_json_prescan_check(const char *path, const char *p, size_t n, const nf_json_caps *caps, const char *what,
                                const char *detail, nf_error *err);

/* A JSON file that does not parse: where, and jansson's reason without its "near '...'" quote
 * of the text -- the file may be a link to anything (a config.json pointing at a private file),
 * and its bytes are not ours to print (docs/security.md 1.3).  NF_ERR_INVALID. */
nf_status nf_json_syntax_error(nf_error *err, const char *path, const json_error_t *je);

/* A reader's JSON file as text: the pre-scan (nf_json_prescan_check, with what and detail), then
 * jansson with duplicate keys refused (nf_json_syntax_error where it does not parse).  *out is
 * the document, of any kind: the caller checks it is what it expects. */
nf_status nf_json_load_checked(const char *path, const char *text, size_t len, const nf_json_caps *caps,
                               const char *what, const char *detail, json_t **out, nf_error *err);

#endif
