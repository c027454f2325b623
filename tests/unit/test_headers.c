/* The public headers and the library's private ones declare no name twice: a translation unit
 * of the library (or of a test) may include any of them together.  This file compiling is the
 * test; the one Test makes it a Criterion executable like the others. */
#include <criterion/criterion.h>

#include <ninfer/ninfer.h>

#include "layout/layout_impl.h"

Test(headers, public_and_private_declarations_coexist)
{
    nf_problem p = {0};     /* the public verify report entry (ninfer/verify.h) */
    nf_problems sink = {0}; /* the layout checks' private problem counter */
    cr_assert_null(p.object);
    cr_assert_eq(sink.count, 0);
}
