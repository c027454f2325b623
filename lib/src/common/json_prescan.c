/* The JSON pre-scan of json_prescan.h. */
#include "common/json_prescan.h"

#include <string.h>

#include "common/json_string.h"

nf_json_excess nf_json_prescan(const uint8_t *p, size_t n, const nf_json_caps *caps, size_t *at)
{
    uint64_t depth = 0, containers = 0, values = 1;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = p[i];
        *at = i;
        switch (c) {
        case '"': /* stepped over; one not closed holds the rest of the text */
            if (!nf_json_string_end((const char *)p, n, i, &i)) return NF_JSON_WITHIN;
            i--; /* (the loop steps past the closing quote) */
            break;
        case '{':
        case '[':
            if (++depth > caps->depth) return NF_JSON_TOO_DEEP;
            if (++containers > caps->containers) return NF_JSON_TOO_MANY_CONTAINERS;
            if (++values > caps->values) return NF_JSON_TOO_MANY_VALUES;
            break;
        case '}':
        case ']':
            if (depth > 0) depth--;
            break;
        case ',':
            if (++values > caps->values) return NF_JSON_TOO_MANY_VALUES;
            break;
        default: break;
        }
    }
    return NF_JSON_WITHIN;
}

nf_status nf_json_prescan_check(const char *path, const char *p, size_t n, const nf_json_caps *caps, const char *what,
                                const char *detail, nf_error *err)
{
    size_t at = 0;
    switch (nf_json_prescan((const uint8_t *)p, n, caps, &at)) {
    case NF_JSON_TOO_DEEP:
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: byte %zu: JSON nested deeper than %llu levels (the reader's cap "
                            "for %s)",
                            path, at, (unsigned long long)caps->depth, what);
    case NF_JSON_TOO_MANY_CONTAINERS:
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: byte %zu: more than %llu JSON objects and arrays (the reader's "
                            "cap for %s)",
                            path, at, (unsigned long long)caps->containers, what);
    case NF_JSON_TOO_MANY_VALUES:
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: byte %zu: more than %llu JSON values (the reader's cap for "
                            "%s%s)",
                            path, at, (unsigned long long)caps->values, what, detail);
    default: return NF_OK;
    }
}

nf_status nf_json_syntax_error(nf_error *err, const char *path, const json_error_t *je)
{
    const char *near = strstr(je->text, " near ");
    int n = near ? (int)(near - je->text) : (int)strlen(je->text);
    return nf_error_set(err, NF_ERR_INVALID, "%s: byte %d (line %d, column %d): %.*s", path, je->position, je->line,
                        je->column, n, je->text);
}

nf_status nf_json_load_checked(const char *path, const char *text, size_t len, const nf_json_caps *caps,
                               const char *what, const char *detail, json_t **out, nf_error *err)
{
    *out = NULL;
    NF_TRY(nf_json_prescan_check(path, text, len, caps, what, detail, err));
    json_error_t je;
    *out = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    return *out ? NF_OK : nf_json_syntax_error(err, path, &je);
}
