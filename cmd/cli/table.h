/* Text tables whose every column is as wide as its widest cell (header included), so that a long
 * object id or format name (iq2_xxs, a 90-character tensor name) shifts the columns instead of
 * breaking them.  Cells are collected first and printed at the end: the widths are known only
 * after the last row.  Widths count characters (UTF-8 sequences), not bytes, since escaped
 * names (nf_cli_name) are printable UTF-8. */
#ifndef NINFER_CMD_TABLE_H
#define NINFER_CMD_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum { NF_TABLE_MAX_COLS = 16 };

typedef struct nf_table {
    size_t ncols;
    const char *indent;            /* printed before every line, e.g. "  " */
    char align[NF_TABLE_MAX_COLS]; /* 'l' or 'r' per column */
    char **cells;                  /* row-major, ncols per row; row 0 the headers */
    size_t ncells, cap;
    bool failed; /* out of memory: nf_table_print prints nothing */
} nf_table;

/* A table of strlen(align) columns ("llrr": left, left, right, right; at most
 * NF_TABLE_MAX_COLS), headers[i] heading column i. */
void nf_table_init(nf_table *t, const char *indent, const char *align, const char *const *headers);
/* The next cell, left to right, rows wrapping after ncols cells; printf-formatted. */
void nf_table_cell(nf_table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Print every row: cells padded to their column's width and separated by two spaces, no space at
 * the end of a line (so an empty last cell adds nothing).  false when a cell could not be
 * stored (out of memory), and then nothing is printed. */
bool nf_table_print(const nf_table *t, FILE *out);
void nf_table_free(nf_table *t);

/* Characters of a UTF-8 string (bytes that are not the start of a sequence's continuation). */
size_t nf_table_text_width(const char *s);

#endif
