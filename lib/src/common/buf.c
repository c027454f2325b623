/* Growable byte buffer (common/buf.h). */
#include "common/buf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

bool nf_buf_append(nf_buf *b, const void *p, size_t n)
{
    if (n > SIZE_MAX - b->len) return false;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n) {
            if (cap > SIZE_MAX / 2) {
                cap = b->len + n;
                break;
            }
            cap *= 2;
        }
        char *d = realloc(b->data, cap);
        if (!d) return false;
        b->data = d;
        b->cap = cap;
    }
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    return true;
}

bool nf_buf_putc(nf_buf *b, char c) { return nf_buf_append(b, &c, 1); }

void nf_buf_free(nf_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
