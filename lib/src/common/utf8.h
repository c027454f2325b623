/* Strict UTF-8 validation (utf8.c): the container reader checks the directory's JSON text with
 * it, the writer and the JSON emitter the strings they store. */
#ifndef NINFER_COMMON_UTF8_H
#define NINFER_COMMON_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Strict UTF-8 (no overlong forms, no surrogates, <= U+10FFFF).  Returns true when valid;
 * otherwise *bad gets the offset of the first invalid sequence. */
bool nf_utf8_valid(const uint8_t *s, size_t len, size_t *bad);

#endif
