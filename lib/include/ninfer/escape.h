/* ninfer/escape.h - names from files, made safe to show (docs/security.md 1.3:
 * "Names from files are escaped in human output; JSON output stays exact").
 *
 * Object ids, tensor names, part paths, GGUF keys and values are written by someone else.  Shown
 * raw, a newline in an id forges an output line ("x.ninfer: valid (...)"), an ESC or OSC
 * sequence reaches the terminal, invalid UTF-8 garbles it.  Every program and every library
 * message that embeds such a string passes it through nf_escape first.  The rule:
 *
 *   - valid, printable UTF-8 is kept as is (names in any script stay readable);
 *   - '\n', '\r', '\t' become the two characters \n, \r, \t;
 *   - every other C0 control byte and DEL (0x00-0x1F, 0x7F) becomes \xNN (two lowercase hex
 *     digits); so does every byte that is not part of strict UTF-8 (no overlong forms, no
 *     surrogates, nothing above U+10FFFF);
 *   - the C1 controls U+0080-U+009F (U+009B is CSI on some terminals), the bidirectional
 *     controls (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069) and U+2028, U+2029
 *     become \uXXXX;
 *   - a backslash becomes \\, so that the escaped text reads back unambiguously.
 *
 * The output holds printable characters only: no byte below 0x20 and no DEL.  JSON output does
 * not use this: it carries the exact strings (JSON has escapes of its own). */
#ifndef NINFER_ESCAPE_H
#define NINFER_ESCAPE_H

#include <ninfer/export.h>

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Flags of nf_escape. */
#define NF_ESCAPE_KEEP_BACKSLASH 1u /* the text already holds escapes (a message built from escaped names) */
#define NF_ESCAPE_KEEP_NEWLINE 2u   /* '\n' separates lines of a multi-line message and is kept */

/* Escapes s[0..len) into buf (size bytes, at least 8), always NUL-terminated.  What does not fit
 * is cut at a character boundary and "..." appended.  Returns buf. */
NF_API const char *nf_escape(const char *s, size_t len, unsigned flags, char *buf, size_t size);

/* An escaped copy of a NUL-terminated string that fits a message: names longer than about 500
 * bytes are cut.  For printf arguments: printf("object '%s'", nf_esc(id).s).  NULL gives
 * "(null)". */
#define NF_ESCAPED_MAX 512
typedef struct nf_escaped {
    char s[NF_ESCAPED_MAX];
} nf_escaped;
NF_API nf_escaped nf_esc(const char *s);

#ifdef __cplusplus
}
#endif
#endif
