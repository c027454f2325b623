/* The one JSON string tokenizer (json_string.c): every reader that steps over or decodes a JSON
 * string literal -- the pre-scans that bound what jansson would build (json_prescan.c, the
 * safetensors header's), the walk that splits a document into pieces (json_walk.c) and the
 * sensitivity reader that decodes names itself (budget/sensitivity.c) -- takes the token's
 * extent and its problems from here, so that they all agree where a string ends. */
#ifndef NINFER_COMMON_JSON_STRING_H
#define NINFER_COMMON_JSON_STRING_H

#include <stdbool.h>
#include <stddef.h>

/* What is wrong with a string token, the first thing in reading order (RFC 8259, section 7). */
typedef enum nf_json_string_problem {
    NF_JSON_STRING_OK = 0,
    NF_JSON_STRING_UNCLOSED,      /* the text ends before the closing quote */
    NF_JSON_STRING_CONTROL,       /* a byte below 0x20 not escaped */
    NF_JSON_STRING_BAD_ESCAPE,    /* '\' not followed by one of "\/bfnrt or by u and 4 hex digits */
    NF_JSON_STRING_LONE_SURROGATE /* \uD800-\uDBFF without a \uDC00-\uDFFF after it, or one of those alone */
} nf_json_string_problem;

typedef struct nf_json_string_token {
    bool closed;  /* the closing quote was found */
    size_t end;   /* past the closing quote (n when not closed) */
    size_t where; /* the byte of the problem: the opening quote (unclosed), the control byte, the
                      escape's backslash (for a surrogate pair, the first one's) */
    size_t len;   /* bytes decoded into out (when given and the token has no problem) */
} nf_json_string_token;

/* The string token whose opening quote is t[at], of the n bytes of t.  Its extent is the lexical
 * one -- the first '"' not after a '\' -- whatever the token's problems, so that a reader that
 * leaves judging to jansson steps over it exactly as jansson's scanner does; the problem returned
 * is the first in reading order (NF_JSON_STRING_UNCLOSED only when there is no other).  With out
 * (room for end - at bytes: decoding never lengthens), the decoded value is written there,
 * escapes resolved and \u code points in UTF-8 (\u0000 a NUL byte), not terminated. */
nf_json_string_problem nf_json_string_scan(const char *t, size_t n, size_t at, char *out, nf_json_string_token *tok);

/* Only the extent: *end past the closing quote of the token whose opening quote is t[at]; false
 * when the text ends first. */
bool nf_json_string_end(const char *t, size_t n, size_t at, size_t *end);

#endif
