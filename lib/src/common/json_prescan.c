/* The JSON pre-scan of json_prescan.h. */
#include "common/json_prescan.h"

#include <stdbool.h>

nf_json_excess nf_json_prescan(const uint8_t *p, size_t n, const nf_json_caps *caps, size_t *at)
{
    bool in_str = false, esc = false;
    uint64_t depth = 0, containers = 0, values = 1;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = p[i];
        if (in_str) {
            if (esc) esc = false;
            else if (c == '\\') esc = true;
            else if (c == '"') in_str = false;
            continue;
        }
        *at = i;
        switch (c) {
        case '"': in_str = true; break;
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
