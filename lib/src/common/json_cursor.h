/* A cursor over JSON text that walks an object member by member and an array element by element
 * (json_cursor.c), so that a reader keeps only the members it needs: the scale-out plan's
 * "objects" (10^5 records, tens of MB of text) are read one record at a time and dropped.
 * Each value is still parsed by jansson -- a container from its first byte on with
 * JSON_DISABLE_EOF_CHECK (jansson stops after its closing bracket and says how many bytes it
 * read), a string or a scalar on exactly its bytes -- so the text is judged by jansson's rules
 * throughout, and what the cursor itself reads (the brackets, names, ':' and ',' between the
 * values) it reads as jansson would, with jansson's messages.  A failure is recorded once, as
 * jansson records one, with the byte, line and column in the whole text (not in the piece
 * jansson was given): nf_json_syntax_error (common/json_prescan.h) reports it.
 *
 *   nf_json_cursor c;
 *   nf_json_cursor_init(&c, text, len);
 *   int more = nf_json_cursor_open(&c, '{');
 *   while (more == 1) {
 *       json_t *key = NULL, *value = NULL;
 *       if (!nf_json_cursor_key(&c, seen, &key) || !(value = nf_json_cursor_value(&c, flags))) ...
 *       more = nf_json_cursor_next(&c, '}');
 *   }
 *   if (more < 0 || !nf_json_cursor_end(&c)) ... c.error, c.nomem ...
 *
 * No pre-scan is made here: a reader bounds what jansson may build first (nf_json_prescan). */
#ifndef NINFER_COMMON_JSON_CURSOR_H
#define NINFER_COMMON_JSON_CURSOR_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

typedef struct nf_json_cursor {
    const char *text;
    size_t len;
    size_t pos;         /* the next byte to read */
    bool failed;        /* error holds the first failure; every call fails from then on */
    bool nomem;         /* that failure was out of memory (jansson's or the cursor's) */
    json_error_t error; /* position, line and column in the whole text, jansson's way */
} nf_json_cursor;

/* The cursor at the start of text's len bytes.  false (the cursor failed) when len exceeds
 * INT_MAX: json_error_t holds positions as int. */
bool nf_json_cursor_init(nf_json_cursor *c, const char *text, size_t len);

/* The next byte that is not whitespace (nothing is consumed), or -1 at the end of the text or
 * after a failure. */
int nf_json_cursor_peek(nf_json_cursor *c);

/* Reads the opening bracket ('{' or '[', as `open` says) of a container: 1 when a member or an
 * element follows, 0 when the container is empty (its closing bracket read too), -1 on failure. */
int nf_json_cursor_open(nf_json_cursor *c, char open);

/* An object's next member name and the ':' after it: *key (a new reference to a string).  seen,
 * when not NULL, is an object of the names read so far in this object: a name already there is
 * refused as JSON_REJECT_DUPLICATES refuses it, and the name is added.  false on failure. */
bool nf_json_cursor_key(nf_json_cursor *c, json_t *seen, json_t **key);

/* The value at the cursor, whole (a new reference), read by jansson with `flags` (e.g.
 * JSON_REJECT_DUPLICATES; JSON_DECODE_ANY and JSON_DISABLE_EOF_CHECK are the cursor's own).
 * NULL on failure. */
json_t *nf_json_cursor_value(nf_json_cursor *c, size_t flags);

/* After a member or an element of a container closed by `close` ('}' or ']'): 1 when another
 * follows (its ',' read), 0 when the container ends (its closing bracket read), -1 on failure. */
int nf_json_cursor_next(nf_json_cursor *c, char close);

/* true when nothing but whitespace is left (what jansson's end-of-file check asks). */
bool nf_json_cursor_end(nf_json_cursor *c);

#endif
