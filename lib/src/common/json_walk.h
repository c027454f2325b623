/* Walking JSON text without building its whole tree (internal; json_walk.c).  jansson builds a
 * tree of about 5x the text: a directory of 10^5 objects (56 MB) became 244 MiB.  These
 * helpers let a reader take a large document a member or an element at a time, each parsed
 * by jansson alone and dropped (docs/scale-out.md, the coordinator's memory):
 *
 *   nf_jw_value_end   where the value at a byte ends, from its tokens alone;
 *   nf_jw_items_*     the members of an object or the elements of an array, as spans;
 *   nf_jw_parse       one span parsed by jansson, its error positions made absolute;
 *   nf_jw_validate    jansson's verdict on a whole text (syntax, duplicate names, NUL in names)
 *                     in bounded memory: values longer than `piece` bytes are walked, the
 *                     others parsed whole;
 *   nf_jw_dump        a value's text, never one with a member left out. */
#ifndef NINFER_COMMON_JSON_WALK_H
#define NINFER_COMMON_JSON_WALK_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

typedef struct nf_jw_span {
    size_t at, end; /* bytes [at, end) of the text */
} nf_jw_span;

/* The first byte at or after i that is not JSON whitespace (n when none). */
size_t nf_jw_space(const char *t, size_t n, size_t i);

/* The end of the value starting at t[i], judged by its tokens only: a string ends after its
 * closing quote, an object or array after its matching bracket (outside strings), anything
 * else before the next whitespace or , : [ ] { } ".  false when the text ends first. */
bool nf_jw_value_end(const char *t, size_t n, size_t i, size_t *end);

typedef struct nf_jw_items {
    const char *t;
    size_t n, pos;
    bool object, started;
} nf_jw_items;

/* Items of the object or array whose opening bracket is t[at]. */
void nf_jw_items_open(nf_jw_items *it, const char *t, size_t n, size_t at);

/* The next member (*key: its name's string token) or element: 1; 0 after the closing bracket
 * (it->pos just past it); -1 where the text stops being JSON of that shape (it->pos there).
 * The value is delimited by nf_jw_value_end, not judged: parse or validate it. */
int nf_jw_items_next(nf_jw_items *it, nf_jw_span *key, nf_jw_span *value);

/* json_loadb of exactly the bytes of s (any value, flags added), errors at positions of the
 * whole text (position, line, column). */
json_t *nf_jw_parse(const char *t, size_t n, nf_jw_span s, size_t flags, json_error_t *je);

/* Whether json_loadb(t, n, flags | JSON_DECODE_ANY) accepts the text (the flags honoured are
 * JSON_REJECT_DUPLICATES and JSON_ALLOW_NUL), holding at most the tree of one value of about
 * `piece` bytes at a time plus the names of the walked objects.  On refusal *je says where as
 * jansson would: the same position for every error jansson finds in a value it parses, the
 * same code and position for a duplicate or NUL name in a walked object.  A refused text costs
 * no more than an accepted one when what is wrong is data after the value or an element of a
 * walked array; an error among a walked object's members is judged by a parse of that object. */
bool nf_jw_validate(const char *t, size_t n, size_t flags, size_t piece, json_error_t *je);

/* The other way: v's text (json_dumpb flags), NUL-terminated and malloc'ed, with `extra` spare
 * bytes after the NUL; *len its length (may be NULL); NULL without memory.  Dumped into room
 * counted first: json_dumps, out of memory, can return a text with an object's key left out
 * (docs/security.md 1.2). */
char *nf_jw_dump(const json_t *v, size_t flags, size_t extra, size_t *len);

#endif
