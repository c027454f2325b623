/* A GGUF file's metadata kept in the artifact (docs/ninfer-convert.md, "GGUF metadata"): every
 * key/value pair with its type as the resource gguf_metadata.json of the text component, and
 * the hyperparameters that have a config.json equivalent as the component's config.  Without
 * them a runtime has neither the tokenizer (tokenizer.ggml.*, arrays of 10^5 strings in real
 * files) nor the chat template nor the architecture's sizes. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/escape.h>

#include "common/buf.h"
#include "common/fail.h"
#include "common/utf8.h"
#include "convert/convert_impl.h"

static nf_status nomem(nf_error *err) { return nf_common_nomem(err); }

/* Element i of kv as JSON: integers exactly (u64 beyond 2^63-1 as a decimal string, which
 * jansson cannot hold as a number), floats as numbers or "NaN" / "Infinity" / "-Infinity"
 * (JSON has no such numbers), strings as text, or {"hex": ...} when they are not UTF-8. */
static json_t *element(const nf_gguf_kv *kv, uint64_t i, nf_error *err)
{
    switch (kv->elem_type) {
    case NF_GGUF_U8:
    case NF_GGUF_U16:
    case NF_GGUF_U32:
    case NF_GGUF_U64: {
        uint64_t u;
        if (nf_gguf_kv_uint(kv, i, &u, err) != NF_OK) return NULL;
        if (u > (uint64_t)INT64_MAX) {
            char text[24];
            snprintf(text, sizeof text, "%llu", (unsigned long long)u);
            return json_string(text);
        }
        return json_integer((json_int_t)u);
    }
    case NF_GGUF_I8:
    case NF_GGUF_I16:
    case NF_GGUF_I32:
    case NF_GGUF_I64: {
        int64_t v;
        return nf_gguf_kv_int(kv, i, &v, err) == NF_OK ? json_integer((json_int_t)v) : NULL;
    }
    case NF_GGUF_F32:
    case NF_GGUF_F64: {
        double d;
        if (nf_gguf_kv_float(kv, i, &d, err) != NF_OK) return NULL;
        if (isnan(d)) return json_string("NaN");
        if (isinf(d)) return json_string(d > 0 ? "Infinity" : "-Infinity");
        return json_real(d);
    }
    case NF_GGUF_BOOL: {
        bool b;
        return nf_gguf_kv_bool(kv, i, &b, err) == NF_OK ? json_boolean(b) : NULL;
    }
    case NF_GGUF_STRING: {
        const char *s;
        size_t len;
        if (nf_gguf_kv_string(kv, i, &s, &len, err) != NF_OK) return NULL;
        size_t bad;
        if (nf_utf8_valid((const uint8_t *)s, len, &bad)) return json_stringn(s, len);
        char *hex = malloc(2 * len + 1);
        if (!hex) return NULL;
        for (size_t k = 0; k < len; k++) snprintf(hex + 2 * k, 3, "%02x", (unsigned char)s[k]);
        json_t *v = json_pack("{s:s}", "hex", hex);
        free(hex);
        return v;
    }
    default: return NULL; /* (nested arrays are refused by the reader) */
    }
}

#define METADATA_MAX ((size_t)256 << 20) /* the text's cap, as quick mode's other resources */

/* ---------------------------------------------------------------- the text, in one pass */
/* The resource's text is what jansson made of each element with JSON_COMPACT |
 * JSON_REAL_PRECISION(17) when it was built a value at a time (a jansson value and two dumps per
 * element cost ~1 us: 13 s of CPU for a 32 MiB u8 array, docs/security.md 7.2), now written
 * straight into the buffer, byte for byte the same (tests/unit/test_gguf_meta_text.c holds the
 * former writer as its reference): integers in decimal, floats as jansson's "%.17g" with ".0"
 * added when it has neither '.' nor 'e' and the exponent's '+' and leading zeros removed,
 * strings with jansson's escapes. */

/* Room for n more bytes; false without memory (or beyond SIZE_MAX). */
static bool reserve(nf_buf *b, size_t n)
{
    if (b->cap - b->len >= n) return true;
    if (n > SIZE_MAX / 2 - b->len) return false;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < n) cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) return false;
    b->data = d;
    b->cap = cap;
    return true;
}

static bool put_text(nf_buf *b, const char *s) { return nf_buf_append(b, s, strlen(s)); }

/* u in decimal at o; returns the end (at most 20 bytes written).  The digits go straight to
 * their places, two at a time, with fixed-size copies only (a copy of variable length was a
 * library call per element, a quarter of the time of a large array). */
static char *put_digits(char *o, uint64_t u)
{
    static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                "8081828384858687888990919293949596979899";
    unsigned n = 1;
    for (uint64_t v = u; v >= 10; v /= 10) n++;
    char *end = o + n, *p = end;
    while (u >= 100) {
        p -= 2;
        memcpy(p, pairs + 2 * (u % 100), 2);
        u /= 100;
    }
    if (u >= 10) {
        p -= 2;
        memcpy(p, pairs + 2 * u, 2);
    } else {
        *--p = (char)('0' + u);
    }
    return end;
}

/* A double as jansson's dump with JSON_REAL_PRECISION(17) (its jsonp_dtostr; the programs never
 * change LC_NUMERIC, so the decimal point is '.'), or the strings that stand for NaN and the
 * infinities (JSON has no such numbers). */
static bool put_real(nf_buf *b, double d)
{
    if (isnan(d)) return put_text(b, "\"NaN\"");
    if (isinf(d)) return put_text(b, d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    char t[40];
    int n = snprintf(t, sizeof t - 2, "%.17g", d);
    if (n <= 0 || (size_t)n >= sizeof t - 2) return false;
    size_t len = (size_t)n;
    char *e = memchr(t, 'e', len);
    if (!e && !memchr(t, '.', len)) {
        t[len++] = '.';
        t[len++] = '0';
    } else if (e) {
        char *from = e + 1, *to = e + 1;
        if (*to == '-') to++, from++;
        else if (*from == '+') from++;
        while (*from == '0' && from[1]) from++; /* (an exponent of 0 keeps its one digit) */
        memmove(to, from, (size_t)(t + len - from));
        len -= (size_t)(from - to);
    }
    return nf_buf_append(b, t, len);
}

/* A valid UTF-8 string as jansson dumps it: '"' and '\\' escaped, \b \f \n \r \t, the other
 * controls below 0x20 as \u00XX (upper-case hex), everything else as it is. */
static bool put_string(nf_buf *b, const char *s, size_t len)
{
    static const char hexd[] = "0123456789ABCDEF";
    if (len > (SIZE_MAX - 2) / 6 || !reserve(b, 6 * len + 2)) return false;
    char *o = b->data + b->len;
    *o++ = '"';
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            *o++ = (char)c;
            continue;
        }
        *o++ = '\\';
        switch (c) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '\b': *o++ = 'b'; break;
        case '\f': *o++ = 'f'; break;
        case '\n': *o++ = 'n'; break;
        case '\r': *o++ = 'r'; break;
        case '\t': *o++ = 't'; break;
        default:
            memcpy(o, "u00", 3);
            o[3] = hexd[c >> 4];
            o[4] = hexd[c & 15];
            o += 5;
        }
    }
    *o++ = '"';
    b->len = (size_t)(o - b->data);
    return true;
}

/* A GGUF string: its text when it is UTF-8, else {"hex":"..."} of its bytes. */
static bool put_gguf_string(nf_buf *b, const char *s, size_t len)
{
    size_t bad;
    if (nf_utf8_valid((const uint8_t *)s, len, &bad)) return put_string(b, s, len);
    static const char hexd[] = "0123456789abcdef";
    if (len > (SIZE_MAX - 12) / 2 || !reserve(b, 2 * len + 12) || !put_text(b, "{\"hex\":\"")) return false;
    for (size_t k = 0; k < len; k++) {
        b->data[b->len++] = hexd[(unsigned char)s[k] >> 4];
        b->data[b->len++] = hexd[(unsigned char)s[k] & 15];
    }
    return put_text(b, "\"}");
}

/* Element i of kv, a float, bool or string (integers: put_integers), appended: 1, 0 without
 * memory, -1 when the accessor refuses it (*err set). */
static int put_element(nf_buf *b, const nf_gguf_kv *kv, uint64_t i, nf_error *err)
{
    if (kv->elem_type == NF_GGUF_STRING) {
        const char *s;
        size_t len;
        if (nf_gguf_kv_string(kv, i, &s, &len, err) != NF_OK) return -1;
        return put_gguf_string(b, s, len);
    }
    switch (kv->elem_type) {
    case NF_GGUF_F32:
    case NF_GGUF_F64: {
        double d;
        if (nf_gguf_kv_float(kv, i, &d, err) != NF_OK) return -1;
        return put_real(b, d);
    }
    case NF_GGUF_BOOL: {
        bool v;
        if (nf_gguf_kv_bool(kv, i, &v, err) != NF_OK) return -1;
        return put_text(b, v ? "true" : "false");
    }
    default: /* (nested arrays are refused by the reader) */
        nf_error_set(err, NF_ERR_INVALID, "element type %d", (int)kv->elem_type);
        return -1;
    }
}

/* Integer element i of kv as stored (little-endian), as the accessors read it; true when its
 * type is signed (two's complement in size bytes). */
static bool stored_integer(const nf_gguf_kv *kv, uint64_t i, unsigned size, uint64_t *u)
{
    const uint8_t *p = (const uint8_t *)kv->priv_values + i * size;
    uint64_t x = 0;
    for (unsigned k = 0; k < size; k++) x |= (uint64_t)p[k] << (8 * k);
    *u = x;
    return kv->elem_type == NF_GGUF_I8 || kv->elem_type == NF_GGUF_I16 || kv->elem_type == NF_GGUF_I32 ||
           kv->elem_type == NF_GGUF_I64;
}

/* The bytes of one integer element; 0 for the types put_element writes. */
static unsigned integer_size(nf_gguf_type t)
{
    switch (t) {
    case NF_GGUF_U8:
    case NF_GGUF_I8: return 1;
    case NF_GGUF_U16:
    case NF_GGUF_I16: return 2;
    case NF_GGUF_U32:
    case NF_GGUF_I32: return 4;
    case NF_GGUF_U64:
    case NF_GGUF_I64: return 8;
    default: return 0;
    }
}

#define INT_BLOCK 4096u /* integer elements written between two checks of the room and the cap */

/* Elements [from, to) of an integer array or scalar (to - from <= INT_BLOCK), a comma before each
 * but the first, without a call per element: a JSON integer, or beyond 2^63-1 (no jansson
 * integer) a string of the decimal digits. */
static bool put_integers(nf_buf *b, const nf_gguf_kv *kv, unsigned size, uint64_t from, uint64_t to)
{
    if (!reserve(b, (size_t)(to - from) * 23)) return false; /* ,"18446744073709551615" */
    char *o = b->data + b->len;
    unsigned bits = 8 * size;
    uint64_t mask = bits == 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1;
    for (uint64_t i = from; i < to; i++) {
        if (i) *o++ = ',';
        uint64_t u;
        bool sgn = stored_integer(kv, i, size, &u);
        if (sgn && u >> (bits - 1)) {
            *o++ = '-';
            u = (~u & mask) + 1; /* the magnitude: 2^63 for INT64_MIN */
        }
        bool str = !sgn && u > (uint64_t)INT64_MAX;
        if (str) *o++ = '"';
        o = put_digits(o, u);
        if (str) *o++ = '"';
    }
    b->len = (size_t)(o - b->data);
    return true;
}

static nf_status too_big(const nf_source *s, const nf_gguf_kv *kv, nf_error *err)
{
    return nf_error_set(err, NF_ERR_INVALID,
                        "%s: its metadata is more than %zu MiB as JSON (at key '%s'); leave it out "
                        "with --no-resources or defaults: {gguf_metadata: drop}",
                        nf_source_path(s), METADATA_MAX >> 20, kv->key);
}

/* KEY:{"type":T,"value":V} or, for an array, KEY:{"type":"array","element_type":T,"value":[...]},
 * written an element at a time: an array of 2^26 values is its text, never a tree of 2^26
 * values (docs/security.md: no input makes a reader allocate far more than its size).
 * NF_ERR_INVALID for a value the accessors refuse or text beyond the cap. */
static nf_status put_pair(nf_buf *b, const nf_source *s, const nf_gguf_kv *kv, nf_error *err)
{
    bool array = kv->type == NF_GGUF_ARRAY;
    bool ok = put_string(b, kv->key, strlen(kv->key)) && put_text(b, ":{\"type\":\"") &&
              put_text(b, nf_gguf_type_name(kv->type)) && put_text(b, "\"");
    if (ok && array)
        ok = put_text(b, ",\"element_type\":\"") && put_text(b, nf_gguf_type_name(kv->elem_type)) && put_text(b, "\"");
    ok = ok && put_text(b, array ? ",\"value\":[" : ",\"value\":");
    unsigned size = integer_size(kv->elem_type);
    for (uint64_t i = 0; ok && size && i < kv->count; i += INT_BLOCK) {
        ok = put_integers(b, kv, size, i, kv->count - i < INT_BLOCK ? kv->count : i + INT_BLOCK);
        if (ok && b->len > METADATA_MAX)
            return too_big(s, kv, err); /* (the text only grows: the verdict of a
                                                                          check after each element) */
    }
    for (uint64_t i = 0; ok && !size && i < kv->count; i++) {
        nf_error e;
        nf_error_clear(&e);
        if (i) ok = nf_buf_putc(b, ',');
        int r = ok ? put_element(b, kv, i, &e) : 0;
        if (r < 0)
            return nf_error_set(err, NF_ERR_INVALID, "%s: metadata key '%s': %s", nf_source_path(s), kv->key,
                                e.message);
        ok = r > 0;
        if (ok && b->len > METADATA_MAX) return too_big(s, kv, err);
    }
    ok = ok && put_text(b, array ? "]}" : "}");
    return ok ? NF_OK : nomem(err);
}

nf_status nf_gguf_metadata_text(const nf_source *s, uint8_t **out, size_t *len, nf_error *err)
{
    nf_buf b = {0};
    nf_status st = put_text(&b, "{") ? NF_OK : nomem(err);
    for (size_t i = 0; st == NF_OK && i < nf_source_gguf_kv_count(s); i++) {
        const nf_gguf_kv *kv = nf_source_gguf_kv_at(s, i);
        size_t bad;
        if (!nf_utf8_valid((const uint8_t *)kv->key, strlen(kv->key), &bad)) {
            st = nf_error_set(err, NF_ERR_INVALID, "%s: the metadata key at byte %llu is not UTF-8 (byte %zu of it)",
                              nf_source_path(s), (unsigned long long)kv->file_offset, bad);
            break;
        }
        if (i && !put_text(&b, ",")) st = nomem(err);
        if (st == NF_OK) st = put_pair(&b, s, kv, err);
    }
    if (st == NF_OK && !put_text(&b, "}\n")) st = nomem(err);
    if (st != NF_OK) {
        nf_buf_free(&b);
        return st;
    }
    *out = (uint8_t *)b.data;
    *len = b.len;
    return NF_OK;
}

nf_status nf_gguf_check_names(const nf_source *s, nf_error *err)
{
    /* A GGUF string is bytes with a length (ggml's names are char[64]); an object id is a JSON
     * string, UTF-8 (docs/artifact.md).  The planner would otherwise lose the tensor: jansson
     * makes no string of it, so --dry-run's table and --json dropped it and the budget's table
     * printed "(null)".  Refused rather than renamed: a made-up id matches no recipe rule and
     * no runtime's name for the tensor. */
    for (size_t i = 0; i < nf_source_tensor_count(s); i++) {
        const nf_source_tensor *t = nf_source_tensor_at(s, i);
        size_t bad;
        if (nf_utf8_valid((const uint8_t *)t->name, strlen(t->name), &bad)) continue;
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: tensor %zu ('%s'): its name is not UTF-8 (byte %zu of it), and an "
                            "artifact's object names are; rename the tensor in the file",
                            nf_source_file_path(s, t->file), i, nf_esc(t->name).s, bad);
    }
    return NF_OK;
}

/* GGUF hyperparameter -> config.json key, for "<arch>.<suffix>" (llama.cpp's names on the left,
 * Hugging Face's on the right; docs/ninfer-convert.md has the table). */
static const struct {
    const char *suffix, *key;
} hparams[] = {
    {"context_length", "max_position_embeddings"},
    {"embedding_length", "hidden_size"},
    {"block_count", "num_hidden_layers"},
    {"feed_forward_length", "intermediate_size"},
    {"attention.head_count", "num_attention_heads"},
    {"attention.head_count_kv", "num_key_value_heads"},
    {"attention.layer_norm_rms_epsilon", "rms_norm_eps"},
    {"attention.layer_norm_epsilon", "layer_norm_eps"},
    {"attention.key_length", "head_dim"},
    {"rope.freq_base", "rope_theta"},
    {"expert_count", "num_local_experts"},
    {"expert_used_count", "num_experts_per_tok"},
    {"vocab_size", "vocab_size"},
};

json_t *nf_gguf_hparams_config(const nf_source *s)
{
    json_t *cfg = json_object();
    const nf_gguf_kv *arch = nf_source_gguf_kv_find(s, "general.architecture");
    const char *name = NULL;
    size_t len = 0;
    nf_error e;
    if (!cfg || !arch || nf_gguf_kv_string(arch, 0, &name, &len, &e) != NF_OK || len == 0 || len > 64 ||
        memchr(name, '\0', len))
        return cfg;
    json_object_set_new(cfg, "model_type", json_stringn(name, len));
    for (size_t i = 0; i < sizeof hparams / sizeof hparams[0]; i++) {
        char key[160];
        snprintf(key, sizeof key, "%s.%s", name, hparams[i].suffix);
        const nf_gguf_kv *kv = nf_source_gguf_kv_find(s, key);
        if (!kv || kv->type == NF_GGUF_ARRAY) continue; /* (per-layer arrays have no single value) */
        json_t *v = element(kv, 0, &e);
        if (v && (json_is_integer(v) || json_is_real(v))) json_object_set_new(cfg, hparams[i].key, v);
        else json_decref(v);
    }
    /* the vocabulary's size when the architecture does not say it: the tokenizer's tokens */
    const nf_gguf_kv *tokens = nf_source_gguf_kv_find(s, "tokenizer.ggml.tokens");
    if (!json_object_get(cfg, "vocab_size") && tokens && tokens->type == NF_GGUF_ARRAY)
        json_object_set_new(cfg, "vocab_size", json_integer((json_int_t)tokens->count));
    return cfg;
}
