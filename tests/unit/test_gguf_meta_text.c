/* The resource gguf_metadata.json (convert/gguf_meta.c, docs/ninfer-convert.md "GGUF metadata")
 * written in one pass (issue 23 item 13: one jansson value and two dumps per array element cost
 * ~1 us each, 13 s of CPU for a 32 MiB u8 array): byte for byte the text the former writer made
 * -- every element a jansson value dumped with the same flags, kept here as the reference --
 * on arrays and scalars of every GGUF type with random values (NaN, infinities, -0, subnormals,
 * u64 beyond 2^63, strings with every control, quotes, backslashes, multi-byte and invalid
 * UTF-8); and it makes no jansson allocation per element (counted through
 * json_set_alloc_funcs: the timing itself is no test's business). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <ninfer/ninfer.h>

#include "common/utf8.h"
#include "convert/convert_impl.h"
#include "support/source_writer.h"
#include "support/test_rng.h"

TEST_RNG(0x243F6A8885A308D3ull)

/* ---------------------------------------------------------------- the reference */
#define REF_DUMP (JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17) | JSON_ENCODE_ANY)

static void ref_put(sw_buf *b, json_t *v)
{
    cr_assert_not_null(v);
    size_t n = json_dumpb(v, NULL, 0, REF_DUMP);
    char *t = malloc(n + 1);
    cr_assert_eq(json_dumpb(v, t, n, REF_DUMP), n);
    sw_bytes(b, t, n);
    free(t);
    json_decref(v);
}

static void ref_text(sw_buf *b, const char *s) { sw_bytes(b, s, strlen(s)); }

static json_t *ref_element(const nf_gguf_kv *kv, uint64_t i)
{
    nf_error e;
    switch (kv->elem_type) {
    case NF_GGUF_U8:
    case NF_GGUF_U16:
    case NF_GGUF_U32:
    case NF_GGUF_U64: {
        uint64_t u;
        cr_assert_eq(nf_gguf_kv_uint(kv, i, &u, &e), NF_OK);
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
        cr_assert_eq(nf_gguf_kv_int(kv, i, &v, &e), NF_OK);
        return json_integer((json_int_t)v);
    }
    case NF_GGUF_F32:
    case NF_GGUF_F64: {
        double d;
        cr_assert_eq(nf_gguf_kv_float(kv, i, &d, &e), NF_OK);
        if (isnan(d)) return json_string("NaN");
        if (isinf(d)) return json_string(d > 0 ? "Infinity" : "-Infinity");
        return json_real(d);
    }
    case NF_GGUF_BOOL: {
        bool v;
        cr_assert_eq(nf_gguf_kv_bool(kv, i, &v, &e), NF_OK);
        return json_boolean(v);
    }
    case NF_GGUF_STRING: {
        const char *s;
        size_t len, bad;
        cr_assert_eq(nf_gguf_kv_string(kv, i, &s, &len, &e), NF_OK);
        if (nf_utf8_valid((const uint8_t *)s, len, &bad)) return json_stringn(s, len);
        char *hex = malloc(2 * len + 1);
        for (size_t k = 0; k < len; k++) snprintf(hex + 2 * k, 3, "%02x", (unsigned char)s[k]);
        hex[2 * len] = '\0';
        json_t *v = json_pack("{s:s}", "hex", hex);
        free(hex);
        return v;
    }
    default: cr_assert_fail("element type %d", kv->elem_type); return NULL;
    }
}

static void reference(const nf_source *s, sw_buf *b)
{
    ref_text(b, "{");
    for (size_t i = 0; i < nf_source_gguf_kv_count(s); i++) {
        const nf_gguf_kv *kv = nf_source_gguf_kv_at(s, i);
        bool array = kv->type == NF_GGUF_ARRAY;
        if (i) ref_text(b, ",");
        ref_put(b, json_string(kv->key));
        ref_text(b, ":{\"type\":");
        ref_put(b, json_string(nf_gguf_type_name(kv->type)));
        if (array) {
            ref_text(b, ",\"element_type\":");
            ref_put(b, json_string(nf_gguf_type_name(kv->elem_type)));
        }
        ref_text(b, array ? ",\"value\":[" : ",\"value\":");
        for (uint64_t k = 0; k < kv->count; k++) {
            if (k) ref_text(b, ",");
            ref_put(b, ref_element(kv, k));
        }
        ref_text(b, array ? "]}" : "}");
    }
    ref_text(b, "}\n");
}

/* ---------------------------------------------------------------- GGUF files */
static const uint8_t size_of[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

/* A float's bits: random, or one of the special values now and then. */
static uint64_t float_bits(bool f64)
{
    static const uint32_t s32[] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u,
                                   0x00000001u, 0x007fffffu, 0x7f7fffffu, 0x3f800000u, 0x4b000000u, 0x3eaaaaabu};
    static const uint64_t s64[] = {0,
                                   0x8000000000000000ull,
                                   0x7ff0000000000000ull,
                                   0xfff0000000000000ull,
                                   0x7ff8000000000000ull,
                                   1,
                                   0x7fefffffffffffffull,
                                   0x3ff0000000000000ull,
                                   0x4330000000000000ull,
                                   0x44b52d02c7e14af6ull,
                                   0x3e7ad7f29abcaf48ull};
    uint32_t pick = rng32() % 8;
    if (pick == 0) return f64 ? s64[rng32() % (sizeof s64 / sizeof *s64)] : s32[rng32() % (sizeof s32 / sizeof *s32)];
    if (pick == 1) { /* a small integer-valued float: "%.17g" prints it without a point */
        float v = (float)((int)(rng32() % 2001) - 1000);
        double d = v;
        uint64_t u = 0;
        if (f64) memcpy(&u, &d, 8);
        else {
            uint32_t w;
            memcpy(&w, &v, 4);
            u = w;
        }
        return u;
    }
    uint64_t u = ((uint64_t)rng32() << 32) | rng32();
    return f64 ? u : (uint32_t)u;
}

/* A random string: printable ASCII, every control, quotes, backslashes, slashes, multi-byte
 * UTF-8, or (invalid) stray bytes. */
static size_t random_string(char *s, size_t cap)
{
    static const char *const pieces[] = {
        "\"", "\\", "/", "\x7f", "\xc3\xa9", "\xe2\x80\xa8", "\xf0\x9f\x98\x80", "\xef\xbf\xbf", "ab", " ", "\xc2\x80"};
    size_t n = 0, want = rng32() % 24;
    while (n < want && n + 4 < cap) {
        uint32_t r = rng32() % 10;
        if (r < 3) s[n++] = (char)(rng32() % 0x20);
        else if (r < 7) s[n++] = (char)(0x20 + rng32() % 0x5f);
        else {
            const char *p = pieces[rng32() % (sizeof pieces / sizeof *pieces)];
            memcpy(s + n, p, strlen(p));
            n += strlen(p);
        }
    }
    if (rng32() % 6 == 0 && n < cap) s[n++] = (char)(0x80 + rng32() % 0x80); /* invalid UTF-8 */
    return n;
}

static void put_value(sw_buf *b, uint32_t t)
{
    if (t == SW_GGUF_STRING) {
        char s[128];
        size_t n = random_string(s, sizeof s);
        sw_u64(b, n);
        sw_bytes(b, s, n);
    } else if (t == SW_GGUF_BOOL) {
        sw_u8(b, (uint8_t)(rng32() & 1));
    } else if (t == SW_GGUF_F32 || t == SW_GGUF_F64) {
        uint64_t u = float_bits(t == SW_GGUF_F64);
        sw_bytes(b, &u, size_of[t]); /* (little-endian host) */
    } else {
        uint64_t u = ((uint64_t)rng32() << 32) | rng32();
        if (rng32() % 4 == 0) u = rng32() % 3 ? u >> (rng32() % 64) : ~(u >> (rng32() % 64));
        sw_bytes(b, &u, size_of[t]);
    }
}

/* A GGUF of the given key/value pairs (one tensor "w" of 32 f32): keys[i] of type types[i],
 * arrays of counts[i] elements of elem[i]. */
static char *write_gguf(const char *dir, const char *name, size_t n, const char *const *keys, const uint32_t *types,
                        const uint32_t *elem, const uint64_t *counts)
{
    sw_buf b = {0};
    sw_gguf_header(&b, 3, 1, n);
    for (size_t i = 0; i < n; i++) {
        sw_gguf_key(&b, keys[i], types[i]);
        if (types[i] == SW_GGUF_ARRAY) {
            sw_u32(&b, elem[i]);
            sw_u64(&b, counts[i]);
            for (uint64_t k = 0; k < counts[i]; k++) put_value(&b, elem[i]);
        } else {
            put_value(&b, types[i]);
        }
    }
    uint64_t ne[1] = {32};
    sw_gguf_tensor_info(&b, "w", 1, ne, 0, 0);
    sw_pad(&b, 32);
    sw_zeros(&b, 32 * 4);
    char *path = sw_path(dir, name);
    cr_assert_eq(sw_write_file(path, b.data, b.len), 0);
    sw_free(&b);
    return path;
}

static void check_same(const char *path)
{
    nf_source *s = NULL;
    nf_error err = {0};
    cr_assert_eq(nf_source_open(path, &s, &err), NF_OK, "%s", err.message);
    uint8_t *text = NULL;
    size_t len = 0;
    cr_assert_eq(nf_gguf_metadata_text(s, &text, &len, &err), NF_OK, "%s", err.message);
    sw_buf want = {0};
    reference(s, &want);
    size_t at = 0;
    while (at < len && at < want.len && text[at] == want.data[at]) at++;
    cr_assert(len == want.len && at == len, "differs at byte %zu (lengths %zu, %zu): got '%.60s', want '%.60s'", at,
              len, want.len, (const char *)text + (at > 20 ? at - 20 : 0),
              (const char *)want.data + (at > 20 ? at - 20 : 0));
    free(text);
    sw_free(&want);
    nf_source_close(s);
}

static const uint32_t all_types[] = {SW_GGUF_U8,  SW_GGUF_I8,   SW_GGUF_U16,    SW_GGUF_I16, SW_GGUF_U32, SW_GGUF_I32,
                                     SW_GGUF_F32, SW_GGUF_BOOL, SW_GGUF_STRING, SW_GGUF_U64, SW_GGUF_I64, SW_GGUF_F64};
#define NTYPES (sizeof all_types / sizeof *all_types)

Test(gguf_meta_text, every_type_as_the_former_writer)
{
    char *dir = sw_tempdir();
    const char *keys[2 * NTYPES + 2];
    uint32_t types[2 * NTYPES + 2], elem[2 * NTYPES + 2];
    uint64_t counts[2 * NTYPES + 2];
    char names[2 * NTYPES + 2][48];
    size_t n = 0;
    for (size_t i = 0; i < NTYPES; i++) { /* a scalar and a big array of each type */
        snprintf(names[n], sizeof names[n], "scalar.%zu", i);
        keys[n] = names[n];
        types[n] = all_types[i];
        elem[n] = 0;
        counts[n++] = 1;
        snprintf(names[n], sizeof names[n], "array.%zu", i);
        keys[n] = names[n];
        types[n] = SW_GGUF_ARRAY;
        elem[n] = all_types[i];
        counts[n++] = all_types[i] == SW_GGUF_STRING ? 20000 : 100000;
    }
    keys[n] = "empty";
    types[n] = SW_GGUF_ARRAY;
    elem[n] = SW_GGUF_F32;
    counts[n++] = 0;
    keys[n] = "key with \"quote\", \\, \x01 and \xc3\xa9";
    types[n] = SW_GGUF_U32;
    elem[n] = 0;
    counts[n++] = 1;
    char *path = write_gguf(dir, "m.gguf", n, keys, types, elem, counts);
    check_same(path);
    free(path);
    sw_rmtree(dir);
    free(dir);
}

/* ---------------------------------------------------------------- refusals, the same */
Test(gguf_meta_text, a_bool_neither_0_nor_1_refused_as_before)
{
    char *dir = sw_tempdir();
    sw_buf b = {0};
    sw_gguf_header(&b, 3, 1, 1);
    sw_gguf_key(&b, "flags", SW_GGUF_ARRAY);
    sw_u32(&b, SW_GGUF_BOOL);
    sw_u64(&b, 3);
    sw_u8(&b, 1);
    sw_u8(&b, 0);
    sw_u8(&b, 2);
    uint64_t ne[1] = {32};
    sw_gguf_tensor_info(&b, "w", 1, ne, 0, 0);
    sw_pad(&b, 32);
    sw_zeros(&b, 128);
    char *path = sw_path(dir, "b.gguf");
    cr_assert_eq(sw_write_file(path, b.data, b.len), 0);
    sw_free(&b);
    nf_source *s = NULL;
    nf_error err = {0};
    cr_assert_eq(nf_source_open(path, &s, &err), NF_OK, "%s", err.message);
    uint8_t *text = NULL;
    size_t len = 0;
    cr_assert_eq(nf_gguf_metadata_text(s, &text, &len, &err), NF_ERR_INVALID);
    char want[4200];
    snprintf(want, sizeof want, "%s: metadata key 'flags': key 'flags'[2]: bool byte 0x02 is neither 0 nor 1", path);
    cr_assert_str_eq(err.message, want);
    nf_source_close(s);
    free(path);
    sw_rmtree(dir);
    free(dir);
}

/* ---------------------------------------------------------------- no value per element */
static size_t g_allocs;
static void *count_malloc(size_t n)
{
    g_allocs++;
    return malloc(n);
}

Test(gguf_meta_text, no_jansson_value_per_element)
{
    char *dir = sw_tempdir();
    const char *keys[] = {"tokenizer.ggml.token_type", "tokenizer.ggml.scores", "tokenizer.ggml.tokens"};
    uint32_t types[] = {SW_GGUF_ARRAY, SW_GGUF_ARRAY, SW_GGUF_ARRAY};
    uint32_t elem[] = {SW_GGUF_U8, SW_GGUF_F32, SW_GGUF_STRING};
    uint64_t counts[] = {1u << 20, 1u << 16, 1u << 16};
    char *path = write_gguf(dir, "big.gguf", 3, keys, types, elem, counts);
    check_same(path);
    nf_source *s = NULL;
    nf_error err = {0};
    cr_assert_eq(nf_source_open(path, &s, &err), NF_OK, "%s", err.message);
    uint8_t *text = NULL;
    size_t len = 0;
    g_allocs = 0;
    json_set_alloc_funcs(count_malloc, free);
    nf_status st = nf_gguf_metadata_text(s, &text, &len, &err);
    json_set_alloc_funcs(malloc, free);
    cr_assert_eq(st, NF_OK, "%s", err.message);
    /* the former writer made about three per element (a value and two dumps): 3.4 million */
    cr_assert_lt(g_allocs, 64, "%zu jansson allocations for 1.1 million elements", g_allocs);
    free(text);
    nf_source_close(s);
    free(path);
    sw_rmtree(dir);
    free(dir);
}
