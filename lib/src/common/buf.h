/* Growable byte buffer (buf.c): the container's JSON emitter and the recipe parser build text
 * in it.  A zeroed nf_buf is empty; nf_buf_free returns it to that state. */
#ifndef NINFER_COMMON_BUF_H
#define NINFER_COMMON_BUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct nf_buf {
    char *data;
    size_t len, cap;
} nf_buf;

/* false (the buffer unchanged) on ENOMEM or a size overflow */
bool nf_buf_append(nf_buf *b, const void *p, size_t n);
bool nf_buf_putc(nf_buf *b, char c);
void nf_buf_free(nf_buf *b);

#endif
