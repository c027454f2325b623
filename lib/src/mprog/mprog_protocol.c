/* The frames of docs/method-programs.md 3 on a running program (mprog.h): the hello, a tensor's
 * header, and per chunk its rows out and the words back.  Nothing a program answers is trusted:
 * a frame's type and length are checked against what the chunk's words take before a byte of
 * them is read, an error text is bounded and shown escaped, and the words' legality is the
 * caller's nf_words_check. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "common/fail.h"
#include "mprog/mprog_module.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the method-program protocol sends host words as its little-endian ones"
#endif

#define FRAME_MAGIC "NFMP"
enum { FRAME_HELLO = 1, FRAME_TENSOR = 2, FRAME_CHUNK = 3, FRAME_ERROR = 4 };
/* The most bytes of an error frame's text (longer: out of protocol). */
#define ERROR_TEXT_MAX 4096u

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32; }

static void frame_header(uint8_t h[16], uint32_t type, uint64_t len)
{
    memcpy(h, FRAME_MAGIC, 4);
    put32(h + 4, type);
    put64(h + 8, len);
}

/* A JSON frame: header and text in one buffer. */
static nf_status send_json(nf_mprog_proc *p, uint32_t type, json_t *doc, const char *what, nf_error *err)
{
    char *text = doc ? json_dumps(doc, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
    json_decref(doc);
    if (!text) return nf_common_nomem(err);
    size_t len = strlen(text);
    uint8_t *buf = malloc(16 + len);
    if (!buf) {
        free(text);
        return nf_common_nomem(err);
    }
    frame_header(buf, type, len);
    memcpy(buf + 16, text, len);
    free(text);
    nf_mprog_proc_arm(p);
    nf_status st = nf_mprog_proc_exchange(p, buf, 16 + len, NULL, 0, what, err);
    free(buf);
    return st;
}

static const char *category_name(nf_category c)
{
    switch (c) {
    case NF_CAT_DIRECT: return "direct";
    case NF_CAT_GROUPED: return "grouped";
    case NF_CAT_NVFP4: return "nvfp4";
    case NF_CAT_FP8_ROW: return "fp8_row";
    case NF_CAT_GGUF: return "gguf";
    }
    return "?";
}

static const char *scale_name(nf_scale_type t)
{
    switch (t) {
    case NF_SCALE_FP16: return "fp16";
    case NF_SCALE_BF16: return "bf16";
    case NF_SCALE_E4M3FN: return "e4m3fn";
    case NF_SCALE_GGML: return "ggml";
    case NF_SCALE_NONE: break;
    }
    return "none";
}

/* The bytes of a frame's first 4 as text for a message: printable ASCII kept, others as \xHH. */
static void show_bytes(const uint8_t *b, size_t n, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && used + 5 < size; i++) {
        int k = b[i] >= 0x20 && b[i] < 0x7F && b[i] != '\\' ? snprintf(out + used, size - used, "%c", b[i])
                                                            : snprintf(out + used, size - used, "\\x%02x", b[i]);
        used += k > 0 ? (size_t)k : 0;
    }
}

/* A frame header the program sent where one of `type` was due. */
static nf_status check_header(nf_mprog_proc *p, const uint8_t h[16], uint32_t type, uint64_t want, const char *what,
                              nf_error *err)
{
    const nf_mprog_spec *s = nf_mprog_proc_spec(p);
    if (memcmp(h, FRAME_MAGIC, 4) != 0) {
        char shown[64];
        show_bytes(h, 16, shown, sizeof shown);
        return nf_error_set(err, NF_ERR_INVALID,
                            "method program '%s' (pid %ld): %s begins \"%s\", not a frame (\"NFMP\"...): it wrote to "
                            "its standard output out of protocol (docs/method-programs.md 3)",
                            s->name, nf_mprog_proc_pid(p), what, shown);
    }
    uint32_t t = get32(h + 4);
    uint64_t len = get64(h + 8);
    if (t == type && len == want) return NF_OK;
    if (t == FRAME_ERROR && len > ERROR_TEXT_MAX)
        return nf_error_set(err, NF_ERR_INVALID,
                            "method program '%s' (pid %ld): %s is an error frame of %" PRIu64
                            " bytes; its text may have at most %u (docs/method-programs.md 3.4)",
                            s->name, nf_mprog_proc_pid(p), what, len, ERROR_TEXT_MAX);
    if (t == FRAME_ERROR) {
        char text[ERROR_TEXT_MAX + 1];
        NF_TRY(nf_mprog_proc_exchange(p, NULL, 0, text, (size_t)len, what, err));
        for (size_t i = 0; i < len; i++)
            if ((unsigned char)text[i] < 0x20 || text[i] == 0x7F) text[i] = ' ';
        text[len] = '\0';
        return nf_error_set(err, NF_ERR_INVALID, "method program '%s' (pid %ld) refused: %s: %s", s->name,
                            nf_mprog_proc_pid(p), what, text);
    }
    if (t == type)
        return nf_error_set(err, NF_ERR_INVALID,
                            "method program '%s' (pid %ld): %s holds %" PRIu64
                            " bytes; the words it answers take %" PRIu64 " (docs/method-programs.md 3.3)",
                            s->name, nf_mprog_proc_pid(p), what, len, want);
    return nf_error_set(err, NF_ERR_INVALID,
                        "method program '%s' (pid %ld): %s is a frame of type %" PRIu32 " (%" PRIu64
                        " bytes) where type %" PRIu32 " was due (docs/method-programs.md 3)",
                        s->name, nf_mprog_proc_pid(p), what, t, len, type);
}

nf_status nf_mprog_start(const nf_mprog_spec *s, nf_mprog_stop_fn stop, void *stop_ctx, nf_mprog_proc **out,
                         nf_error *err)
{
    nf_mprog_proc *p;
    NF_TRY(nf_mprog_proc_start(s, stop, stop_ctx, &p, err));
    json_t *hello = json_pack("{s:i,s:s}", "protocol", (int)NF_METHOD_PROGRAM_PROTOCOL, "method", s->name);
    uint8_t h[20];
    nf_status st = send_json(p, FRAME_HELLO, hello, "its hello", err);
    if (st == NF_OK) st = nf_mprog_proc_exchange(p, NULL, 0, h, 16, "its answer to the hello", err);
    if (st == NF_OK) st = check_header(p, h, FRAME_HELLO, 4, "its answer to the hello", err);
    if (st == NF_OK) st = nf_mprog_proc_exchange(p, NULL, 0, h + 16, 4, "its answer to the hello", err);
    if (st == NF_OK && get32(h + 16) != NF_METHOD_PROGRAM_PROTOCOL)
        st = nf_error_set(err, NF_ERR_INVALID,
                          "method program '%s' (pid %ld) speaks protocol version %" PRIu32 "; this converter speaks %u "
                          "(docs/method-programs.md 3.1)",
                          s->name, nf_mprog_proc_pid(p), get32(h + 16), NF_METHOD_PROGRAM_PROTOCOL);
    if (st != NF_OK) {
        nf_mprog_proc_kill(p);
        return st;
    }
    *out = p;
    return NF_OK;
}

nf_status nf_mprog_begin_tensor(nf_mprog_proc *p, const nf_mprog_tensor *t, nf_error *err)
{
    const nf_format *f = t->fmt;
    json_t *params = t->params ? json_deep_copy(t->params) : json_object();
    json_t *doc = json_pack("{s:s,s:s,s:s,s:I,s:I,s:I,s:i,s:i,s:i,s:s,s:I,s:I,s:I,s:o}", "tensor", t->name, "format",
                            f->name, "category", category_name(f->category), "rows", (json_int_t)t->rows, "cols",
                            (json_int_t)t->cols, "group_size", (json_int_t)f->group_size, "code_min", f->code_min,
                            "code_max", f->code_max, "qmax", f->encoder_qmax, "scale", scale_name(f->scale_type),
                            "word_bytes", (json_int_t)f->word_bytes, "block_values", (json_int_t)f->block_values,
                            "block_bytes", (json_int_t)f->block_bytes, "params", params);
    if (doc && f->category == NF_CAT_NVFP4) json_object_set_new(doc, "divisor", json_integer((json_int_t)t->divisor));
    char what[NF_ERROR_MESSAGE_MAX / 2];
    snprintf(what, sizeof what, "the header of tensor '%.200s'", t->name);
    return send_json(p, FRAME_TENSOR, doc, what, err);
}

uint64_t nf_mprog_words_bytes(const nf_format *f, uint64_t rows, uint64_t cols, bool *ok)
{
    uint64_t n = 0, a = 0, b = 0;
    bool good = nf_mul_u64(rows, cols, &n);
    switch (f->category) {
    case NF_CAT_DIRECT: good = good && nf_mul_u64(n, f->word_bytes, &a); break;
    case NF_CAT_GROUPED:
        good = good && nf_mul_u64(rows, (cols + f->group_size - 1) / f->group_size, &b) && nf_mul_u64(b, 2, &b) &&
               nf_add_u64(n, b, &a);
        break;
    case NF_CAT_FP8_ROW: good = good && nf_mul_u64(rows, 2, &b) && nf_add_u64(n, b, &a); break;
    case NF_CAT_NVFP4: good = good && nf_add_u64(n, n / 16, &a); break;
    case NF_CAT_GGUF: good = good && nf_mul_u64(rows, cols / f->block_values * f->block_bytes, &a); break;
    }
    *ok = good;
    return good ? a : 0;
}

/* An answer to a chunk as its frame header says: the words into the chunk's arrays, or a
 * refusal's text; anything else fails at once (nf_mprog_proc_io's on_head). */
typedef struct answer {
    nf_mprog_proc *p;
    const nf_format *f;
    uint64_t n, want; /* values of the chunk, bytes of its words */
    nf_words *out;
    const char *what;
    uint8_t head[16];
    bool refused;
    char text[ERROR_TEXT_MAX + 1];
    size_t text_len;
} answer;

static nf_status answer_head(void *ctx, nf_mprog_io *io, nf_error *err)
{
    answer *a = ctx;
    const uint32_t t = get32(a->head + 4);
    const uint64_t len = get64(a->head + 8);
    if (memcmp(a->head, FRAME_MAGIC, 4) == 0 && t == FRAME_ERROR && len <= ERROR_TEXT_MAX) {
        a->refused = true; /* its text, and nothing more sent */
        a->text_len = (size_t)len;
        io->in[io->nin++] = (struct iovec){a->text, (size_t)len};
        io->stop_writing = true;
        return NF_OK;
    }
    if (memcmp(a->head, FRAME_MAGIC, 4) != 0 || t != FRAME_CHUNK || len != a->want)
        return check_header(a->p, a->head, FRAME_CHUNK, a->want, a->what, err); /* says what is wrong */
    const nf_words *w = a->out;
    const size_t n = (size_t)a->n, rest = (size_t)(a->want - a->n);
    switch (a->f->category) {
    case NF_CAT_DIRECT:
        io->in[io->nin++] = (struct iovec){a->f->word_bytes == 2 ? (void *)w->w16 : (void *)w->w32, (size_t)a->want};
        break;
    case NF_CAT_GROUPED:
        io->in[io->nin++] = (struct iovec){w->codes, n};
        io->in[io->nin++] = (struct iovec){w->scales, rest};
        break;
    case NF_CAT_FP8_ROW:
        io->in[io->nin++] = (struct iovec){w->codes8, n};
        io->in[io->nin++] = (struct iovec){w->scales, rest};
        break;
    case NF_CAT_NVFP4:
        io->in[io->nin++] = (struct iovec){w->codes8, n};
        io->in[io->nin++] = (struct iovec){w->scales8, rest};
        break;
    case NF_CAT_GGUF: io->in[io->nin++] = (struct iovec){w->blocks, (size_t)a->want}; break;
    }
    return NF_OK;
}

nf_status nf_mprog_encode(nf_mprog_proc *p, const nf_mprog_tensor *t, uint64_t first_row, uint64_t rows,
                          const float *values, const float *importance, nf_words *out, nf_error *err)
{
    const nf_format *f = t->fmt;
    const uint64_t k = t->cols;
    bool ok = true;
    uint64_t nvalues = 0, payload = 0, want = nf_mprog_words_bytes(f, rows, k, &ok);
    ok = ok && nf_mul_u64(rows, k * sizeof(float), &nvalues) && nf_add_u64(nvalues, 32, &payload) &&
         nf_add_u64(payload, importance ? k * sizeof(float) : 0, &payload) && nvalues <= SIZE_MAX && want <= SIZE_MAX;
    if (!ok) return nf_error_set(err, NF_ERR_USAGE, "a chunk of %" PRIu64 " rows of %" PRIu64 " is too large", rows, k);
    char what[NF_ERROR_MESSAGE_MAX / 2];
    snprintf(what, sizeof what, "the answer to rows %" PRIu64 "..%" PRIu64 " of tensor '%.200s'", first_row,
             first_row + rows - 1, t->name);
    uint8_t h[48];
    frame_header(h, FRAME_CHUNK, payload);
    put64(h + 16, first_row);
    put64(h + 24, rows);
    put64(h + 32, k);
    put64(h + 40, importance ? 1 : 0);
    /* The chunk written and its answer read together: a program may answer (or refuse) while it is
     * still reading, and neither side waits for the other (docs/method-programs.md 3). */
    answer a = {.p = p, .f = f, .n = rows * k, .want = want, .out = out, .what = what};
    nf_mprog_io io = {.nout = importance ? 3 : 2, .nin = 1, .on_head = answer_head, .ctx = &a};
    io.out[0] = (struct iovec){h, sizeof h};
    io.out[1] = (struct iovec){(void *)values, (size_t)nvalues};
    if (importance) io.out[2] = (struct iovec){(void *)importance, (size_t)(k * sizeof(float))};
    io.in[0] = (struct iovec){a.head, sizeof a.head};
    nf_mprog_proc_arm(p);
    NF_TRY(nf_mprog_proc_io(p, &io, what, err));
    if (!a.refused) return NF_OK;
    for (size_t i = 0; i < a.text_len; i++)
        if ((unsigned char)a.text[i] < 0x20 || a.text[i] == 0x7F) a.text[i] = ' ';
    a.text[a.text_len] = '\0';
    return nf_error_set(err, NF_ERR_INVALID, "method program '%s' (pid %ld) refused: %s: %s",
                        nf_mprog_proc_spec(p)->name, nf_mprog_proc_pid(p), what, a.text);
}
