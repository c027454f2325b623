/* Whole files of test data (test_data.h). */
#include "support/test_data.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <criterion/criterion.h>

uint8_t *nf_test_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0, "cannot seek in %s", path);
    long n = ftell(f);
    cr_assert_geq(n, 0, "cannot size %s", path);
    rewind(f);
    uint8_t *buf = malloc((size_t)n + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n, "short read of %s", path);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

uint8_t *nf_test_data(size_t *len, const char *fmt, ...)
{
    char rel[768], path[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(rel, sizeof rel, fmt, ap);
    va_end(ap);
    cr_assert(n >= 0 && (size_t)n < sizeof rel, "test data name too long");
    snprintf(path, sizeof path, "%s/%s", NINFER_TEST_DATA, rel);
    return nf_test_read_file(path, len);
}
