/* cmd/cli/table.h: columns as wide as their widest cell (counted in UTF-8 characters), left or right
 * aligned, two spaces apart, and no blanks at the end of a line. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"

static char *printed(const nf_table *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert(f);
    cr_assert(nf_table_print(t, f));
    fclose(f);
    return buf;
}

Test(table, widths_from_cells)
{
    nf_table t;
    nf_table_init(&t, "  ", "llr", (const char *[]){"id", "format", "bytes"});
    nf_table_cell(&t, "%s", "a.very.long.tensor.name");
    nf_table_cell(&t, "%s", "gguf_iq2_xxs");
    nf_table_cell(&t, "%d", 5);
    nf_table_cell(&t, "%s", "b");
    nf_table_cell(&t, "%s", "bf16");
    nf_table_cell(&t, "%d", 123456);
    char *out = printed(&t);
    cr_assert_str_eq(out, "  id                       format         bytes\n"
                          "  a.very.long.tensor.name  gguf_iq2_xxs       5\n"
                          "  b                        bf16          123456\n");
    free(out);
    nf_table_free(&t);
}

Test(table, utf8_width_and_no_trailing_blanks)
{
    nf_table t;
    nf_table_init(&t, "", "lll", (const char *[]){"name", "x", "note"});
    nf_table_cell(&t, "%s", "gamma \xce\xb3"); /* 7 characters, 8 bytes */
    nf_table_cell(&t, "%s", "1");
    nf_table_cell(&t, "%s", "");
    nf_table_cell(&t, "%s", "abcdefg");
    nf_table_cell(&t, "%s", "2");
    nf_table_cell(&t, "%s", "why");
    char *out = printed(&t);
    cr_assert_str_eq(out, "name     x  note\n"
                          "gamma \xce\xb3  1\n"
                          "abcdefg  2  why\n");
    free(out);
    nf_table_free(&t);
}
