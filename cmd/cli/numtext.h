/* Numbers as text for people (docs/ninfer-inspect.md, "Numbers"): the shortest decimal that
 * reads back to the same bits, and integer words with their sign.  Our own search over %.*e
 * precisions rather than a Ryu-style digit generator: the programs print few numbers, and a
 * loop whose every answer is checked by strtof/strtod cannot print a value that reads back
 * wrong. */
#ifndef NINFER_CMD_NUMTEXT_H
#define NINFER_CMD_NUMTEXT_H

#include <stddef.h>
#include <stdint.h>

/* Room for any text below: "-2.2250738585072014e-308" is 24 bytes, a fixed-notation value at
 * most 27, and the NUL. */
enum { NF_NUM_TEXT = 32 };

/* The shortest decimal (fewest significant digits, 1 to 9) that strtof reads back to the same
 * binary32 bits; the form is described at nf_num_format.  NaN "nan" (its sign and payload
 * are not shown), infinities "inf" and "-inf", negative zero "-0".  Returns buf. */
char *nf_num_shortest_f32(float v, char *buf, size_t size);
/* The same for binary64 through strtod (1 to 17 digits). */
char *nf_num_shortest_f64(double v, char *buf, size_t size);
/* A binary16 word's value: the shortest decimal that strtof reads to a binary32 which rounds
 * (nf_f32_to_f16, to nearest, ties to even) back to the same word, so "0.1" rather than the
 * exact 0.0999755859375.  At most 5 digits. */
char *nf_num_shortest_f16(uint16_t h, char *buf, size_t size);
/* The same for a bfloat16 word (nf_f32_to_bf16); at most 4 digits. */
char *nf_num_shortest_bf16(uint16_t b, char *buf, size_t size);

/* The form of every shortest decimal: the digits in fixed notation when the decimal exponent E
 * of the first digit is -7 < E < 21 ("0.000001", "100", "123456790"), otherwise one digit, the
 * rest after a point and "e" with the signed exponent without '+' or leading zeros
 * ("1e-7", "1.5e21", "4.9e-324").  This is JavaScript's rule for Number's text, so that
 * readers see one form whatever the precision.  digits: the significant digits without
 * trailing zeros (at least one), exp = E. */
char *nf_num_format(int negative, const char *digits, int exp, char *buf, size_t size);

#endif
