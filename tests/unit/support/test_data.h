/* Whole files of test data for the unit tests (one reader instead of a copy per test file). */
#ifndef NINFER_TEST_DATA_H
#define NINFER_TEST_DATA_H

#include <stddef.h>
#include <stdint.h>

/* The bytes of the file at `path` (malloc'd, one spare byte after them), its size in *len; a
 * file that cannot be read fails the test, naming it. */
uint8_t *nf_test_read_file(const char *path, size_t *len);
/* The same for a file of tests/data, named by a printf format relative to it. */
uint8_t *nf_test_data(size_t *len, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
