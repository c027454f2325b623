/* Column tables sized from their data (table.h). */
#include "table.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

size_t nf_table_text_width(const char *s)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (!nf_utf8_continues(*p)) n++;
    return n;
}

static void push(nf_table *t, char *cell)
{
    if (!cell) {
        t->failed = true;
        return;
    }
    if (t->ncells == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        char **c = realloc(t->cells, cap * sizeof *c);
        if (!c) {
            free(cell);
            t->failed = true;
            return;
        }
        t->cells = c;
        t->cap = cap;
    }
    t->cells[t->ncells++] = cell;
}

void nf_table_init(nf_table *t, const char *indent, const char *align, const char *const *headers)
{
    memset(t, 0, sizeof *t);
    t->indent = indent;
    t->ncols = strlen(align) < NF_TABLE_MAX_COLS ? strlen(align) : NF_TABLE_MAX_COLS;
    memcpy(t->align, align, t->ncols);
    for (size_t i = 0; i < t->ncols; i++) push(t, strdup(headers[i]));
}

void nf_table_cell(nf_table *t, const char *fmt, ...)
{
    if (t->failed) return;
    va_list ap, again;
    va_start(ap, fmt);
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *cell = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (cell) vsnprintf(cell, (size_t)n + 1, fmt, again);
    va_end(again);
    push(t, cell);
}

bool nf_table_print(const nf_table *t, FILE *out)
{
    if (t->failed) return false;
    size_t width[NF_TABLE_MAX_COLS] = {0};
    for (size_t i = 0; i < t->ncells; i++) {
        size_t w = nf_table_text_width(t->cells[i]);
        if (w > width[i % t->ncols]) width[i % t->ncols] = w;
    }
    for (size_t r = 0; r * t->ncols < t->ncells; r++) {
        char **row = t->cells + r * t->ncols;
        size_t n = t->ncells - r * t->ncols < t->ncols ? t->ncells - r * t->ncols : t->ncols;
        /* the last cell that is not empty ends the line: no trailing blanks */
        size_t last = n;
        while (last > 0 && row[last - 1][0] == '\0') last--;
        fputs(t->indent, out);
        for (size_t c = 0; c < last; c++) {
            size_t pad = width[c] - nf_table_text_width(row[c]);
            if (c) fputs("  ", out);
            if (t->align[c] == 'r')
                for (size_t k = 0; k < pad; k++) fputc(' ', out);
            fputs(row[c], out);
            if (t->align[c] != 'r' && c + 1 < last)
                for (size_t k = 0; k < pad; k++) fputc(' ', out);
        }
        fputc('\n', out);
    }
    return true;
}

void nf_table_free(nf_table *t)
{
    for (size_t i = 0; i < t->ncells; i++) free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof *t);
}
