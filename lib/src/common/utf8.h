/* Strict UTF-8 (utf8.c), the one decoder and the one encoder of the tree: the container reader
 * checks the directory's JSON text with the decoder, the writer and the JSON emitter the strings
 * they store, nf_escape and the programs' text cleaning split what they show into its
 * characters; the JSON string tokenizer (json_string.c) encodes a \u escape's value. */
#ifndef NINFER_COMMON_UTF8_H
#define NINFER_COMMON_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The strict UTF-8 sequence starting at p (n >= 1 bytes left): its length (1 to 4) and its code
 * point in *cp (cp may be NULL), or 0 when no sequence starts there -- an overlong form, a
 * surrogate (U+D800..U+DFFF), a value above U+10FFFF, a byte that cannot begin one, or a
 * sequence cut short by the end or by a byte that does not continue it. */
size_t nf_utf8_decode(const uint8_t *p, size_t n, uint32_t *cp);

/* The encoding of the scalar value cp (RFC 3629, section 3) in out[0..len): its length (1 to 4),
 * or 0 (out untouched) for a surrogate (U+D800..U+DFFF) or a value above U+10FFFF, which have
 * none.  What it writes, nf_utf8_decode reads back as cp. */
size_t nf_utf8_encode(uint32_t cp, uint8_t out[4]);

/* Strict UTF-8 (nf_utf8_decode) throughout.  Returns true when valid; otherwise *bad gets the
 * offset of the first invalid sequence. */
bool nf_utf8_valid(const uint8_t *s, size_t len, size_t *bad);

/* Whether byte c continues a sequence (10xxxxxx) rather than beginning a character: what
 * counting characters (columns, widths) and cutting text on a character boundary look at. */
static inline bool nf_utf8_continues(uint8_t c) { return (c & 0xC0u) == 0x80u; }

#endif
