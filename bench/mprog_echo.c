/* ninfer-mprog-echo: a method program (docs/method-programs.md) that answers every chunk with
 * precomputed words -- all zero, which every format accepts -- as fast as it can read the
 * chunk's values, so that `make bench` measures the protocol and the pipes alone (issue 28, item
 * 5: the protocol must never be the bottleneck of a program in C).  It reads every byte it is
 * sent and checks the frames' magic, nothing more.
 * usage: ninfer-mprog-echo   (started by ninfer-convert --method-program NAME=ninfer-mprog-echo) */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int read_all(void *buf, size_t n)
{
    uint8_t *p = buf;
    while (n > 0) {
        ssize_t k = read(0, p, n);
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static int write_all(const void *buf, size_t n)
{
    const uint8_t *p = buf;
    while (n > 0) {
        ssize_t k = write(1, p, n);
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static void header(uint8_t h[16], uint32_t type, uint64_t len)
{
    memcpy(h, "NFMP", 4);
    for (int i = 0; i < 4; i++) h[4 + i] = (uint8_t)(type >> (8 * i));
    for (int i = 0; i < 8; i++) h[8 + i] = (uint8_t)(len >> (8 * i));
}

/* The answer's bytes for n rows of the tensor described by doc (docs/method-programs.md 3.3). */
static uint64_t words_bytes(const json_t *doc, uint64_t n)
{
    const char *cat = json_string_value(json_object_get(doc, "category"));
    uint64_t k = (uint64_t)json_integer_value(json_object_get(doc, "cols"));
    uint64_t g = (uint64_t)json_integer_value(json_object_get(doc, "group_size"));
    uint64_t bv = (uint64_t)json_integer_value(json_object_get(doc, "block_values"));
    uint64_t bb = (uint64_t)json_integer_value(json_object_get(doc, "block_bytes"));
    uint64_t wb = (uint64_t)json_integer_value(json_object_get(doc, "word_bytes"));
    if (!cat) return 0;
    if (!strcmp(cat, "grouped")) return n * k + n * ((k + g - 1) / g) * 2;
    if (!strcmp(cat, "fp8_row")) return n * k + n * 2;
    if (!strcmp(cat, "nvfp4")) return n * k + n * k / 16;
    if (!strcmp(cat, "gguf")) return n * (k / bv) * bb;
    return n * k * wb;
}

int main(void)
{
    json_t *tensor = NULL;
    uint8_t *in = NULL, *out = NULL;
    size_t in_cap = 0, out_cap = 0;
    for (;;) {
        uint8_t h[16];
        if (read_all(h, sizeof h) != 0) return 0; /* the end of the input */
        if (memcmp(h, "NFMP", 4) != 0) return 2;
        const uint32_t type = (uint32_t)h[4] | (uint32_t)h[5] << 8 | (uint32_t)h[6] << 16 | (uint32_t)h[7] << 24;
        const uint64_t len = le64(h + 8);
        if (len > ((uint64_t)1 << 32)) return 2;
        if (len > in_cap) {
            free(in);
            if (!(in = malloc(len))) return 3;
            in_cap = len;
        }
        if (read_all(in, len) != 0) return 2;
        if (type == 1) { /* hello: protocol 1 */
            uint8_t a[20];
            header(a, 1, 4);
            memcpy(a + 16, "\1\0\0\0", 4);
            if (write_all(a, sizeof a) != 0) return 2;
        } else if (type == 2) {
            json_decref(tensor);
            if (!(tensor = json_loadb((const char *)in, len, 0, NULL))) return 2;
        } else if (type == 3) {
            const uint64_t rows = le64(in + 8), bytes = words_bytes(tensor, rows);
            if (bytes + 16 > out_cap) {
                free(out);
                if (!(out = calloc(1, bytes + 16))) return 3;
                out_cap = bytes + 16;
            }
            header(out, 3, bytes);
            if (write_all(out, bytes + 16) != 0) return 2;
        } else {
            return 2;
        }
    }
}
