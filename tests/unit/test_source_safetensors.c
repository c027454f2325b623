/* safetensors framing and header rules (docs/security.md 2.2): one handcrafted bad file per
 * rule, each refused with NF_ERR_INVALID and a message naming the file, the tensor and the
 * position; the allowed corner cases (empty tensors, rank 0, padding, JSON order unrelated to
 * offsets, no tensors) accepted; truncation and corruption sweeps never crash. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "support/source_writer.h"

static nf_status try_open(const sw_buf *b, nf_source **s, nf_error *err)
{
    *s = NULL;
    return nf_source_open_memory(b->data, b->len, NF_SOURCE_SAFETENSORS, "m.safetensors", s, err);
}

static void expect_bad(sw_buf *b, const char *needle)
{
    nf_source *s;
    nf_error err = {0};
    nf_status st = try_open(b, &s, &err);
    cr_assert_eq(st, NF_ERR_INVALID, "expected a failure mentioning '%s'; got status %d: %s", needle, st, err.message);
    cr_assert_null(s);
    cr_assert(strstr(err.message, needle), "message \"%s\" does not mention \"%s\"", err.message, needle);
    cr_assert(strncmp(err.message, "m.safetensors: ", 15) == 0, "message \"%s\" does not name the file", err.message);
    sw_free(b);
}

/* json + data_len zero bytes of data. */
static void bad_json(const char *json, size_t data_len, const char *needle)
{
    sw_buf b = {0};
    uint8_t *zeros = calloc(1, data_len + 1);
    sw_st_raw(&b, json, zeros, data_len);
    free(zeros);
    expect_bad(&b, needle);
}

static nf_source *ok_json(const char *json, const void *data, size_t data_len, sw_buf *b)
{
    sw_st_raw(b, json, data, data_len);
    nf_source *s;
    nf_error err = {0};
    nf_status st = try_open(b, &s, &err);
    cr_assert_eq(st, NF_OK, "%s: %s", json, err.message);
    return s;
}

/* ---------------------------------------------------------------- framing */
Test(source_safetensors, shorter_than_the_length_prefix)
{
    sw_buf b = {0};
    sw_bytes(&b, "\x02\0\0\0", 4);
    expect_bad(&b, "too short for the 8-byte safetensors header length");
}

Test(source_safetensors, header_size_above_the_cap)
{
    sw_buf b = {0};
    sw_u64(&b, 100000001);
    sw_bytes(&b, "{}", 2);
    expect_bad(&b, "byte 0: header length 100000001 exceeds the cap of 100000000 bytes");
    sw_u64(&b, UINT64_MAX);
    sw_bytes(&b, "{}", 2);
    expect_bad(&b, "exceeds the cap");
}

Test(source_safetensors, header_beyond_the_file)
{
    sw_buf b = {0};
    sw_u64(&b, 1000);
    sw_bytes(&b, "{}", 2);
    expect_bad(&b, "header length 1000 runs past the end of the file (10 bytes, so at most 2)");
    sw_u64(&b, 100000000);
    sw_bytes(&b, "{}", 2);
    expect_bad(&b, "runs past the end of the file");
}

Test(source_safetensors, not_an_object)
{
    bad_json("[1,2]", 0, "must start with '{'");
    bad_json(" {}", 0, "must start with '{'");
    bad_json("", 0, "header length is 0");
    bad_json("{", 0, "header byte");
    bad_json("{} x", 0, "header byte");
    bad_json("{\"a\":1}", 0, "tensor 'a': entry is an integer, expected an object");
    /* Invalid UTF-8 and raw NULs are refused by the tokenizer. */
    bad_json("{\"\xff\":{}}", 0, "header byte");
    sw_buf b = {0};
    sw_u64(&b, 4);
    sw_bytes(&b, "{}\0 ", 4);
    expect_bad(&b, "header byte");
}

Test(source_safetensors, duplicate_names)
{
    bad_json("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
             "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}",
             2, "duplicate object key");
    /* Even when spelled with an escape. */
    bad_json("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
             "\"\\u0061\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}",
             2, "duplicate object key");
}

Test(source_safetensors, bad_dtype)
{
    /* The message points at the entry's key in the file. */
    const char *json = "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},  "
                       "\"w\":{\"dtype\":\"F31\",\"shape\":[1],\"data_offsets\":[1,5]}}";
    char needle[64];
    snprintf(needle, sizeof needle, "header byte %d: tensor 'w': unknown dtype",
             8 + (int)(strstr(json, "\"w\"") - json));
    bad_json(json, 5, needle);
    bad_json("{\"w\":{\"dtype\":\"F31\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
             "tensor 'w': unknown dtype \"F31\"");
    bad_json("{\"w\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "unknown dtype \"f32\"");
    bad_json("{\"w\":{\"dtype\":32,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "dtype is an integer");
}

Test(source_safetensors, entry_members)
{
    bad_json("{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "tensor 'w': missing \"dtype\"");
    bad_json("{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, "missing \"shape\"");
    bad_json("{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "missing \"data_offsets\"");
    bad_json("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1}}", 4, "unknown member \"x\"");
    bad_json("{\"\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "empty tensor name");
}

Test(source_safetensors, shape_dtype_size_mismatch)
{
    bad_json("{\"w\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,12]}}", 12,
             "tensor 'w': data_offsets [0, 12] hold 12 bytes but F32 with 4 elements needs 16");
    bad_json("{\"w\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, "needs 6");
    bad_json("{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,4]}}", 4,
             "element count of the shape overflows U64");
    bad_json("{\"w\":{\"dtype\":\"F64\",\"shape\":[4611686018427387904],\"data_offsets\":[0,8]}}", 8,
             "F64 size of the shape overflows U64");
    bad_json("{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, "shape[0] is an integer below 0");
    bad_json("{\"w\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}", 4, "shape[0] is a real number");
    bad_json("{\"w\":{\"dtype\":\"F32\",\"shape\":{},\"data_offsets\":[0,4]}}", 4, "shape is an object");
    bad_json("{\"w\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4,
             "array of more than 16 elements");
    /* Sub-byte dtypes must end on a byte boundary. */
    bad_json("{\"w\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,2]}}", 2, "misaligned slice");
    bad_json("{\"w\":{\"dtype\":\"F6_E2M3\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2, "misaligned slice");
}

Test(source_safetensors, bad_offsets)
{
    bad_json("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", 4,
             "data_offsets[0] is an integer below 0");
    bad_json("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4.0]}}", 4,
             "data_offsets[1] is a real number");
    bad_json("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[\"0\",4]}}", 4, "data_offsets[0] is a string");
    bad_json("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4, "expected [begin, end]");
    bad_json("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", 8, "expected [begin, end]");
    bad_json("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":{}}}", 8, "data_offsets is an object");
    /* Offsets beyond int64 are refused while tokenizing. */
    bad_json("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[18446744073709551612,18446744073709551616]}}",
             4, "header byte");
}

Test(source_safetensors, offsets_out_of_order)
{
    bad_json("{\"w\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[8,0]}}", 8,
             "tensor 'w': data_offsets [8, 0] end before they begin");
}

Test(source_safetensors, overlap)
{
    bad_json("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
             "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
             12, "tensor 'b': data_offsets [4, 12] overlap tensor 'a', which ends at 8");
    /* Ten entries aliasing one region (the attacks/README DoS): the second one is refused. */
    bad_json("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
             "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
             "\"c\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}",
             4, "overlap tensor 'a'");
}

Test(source_safetensors, hole)
{
    bad_json("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
             "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]}}",
             20, "tensor 'b': data_offsets [12, 20] leave a hole of 4 bytes after tensor 'a'");
    bad_json("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12,
             "leave a hole of 4 bytes after the header");
}

Test(source_safetensors, trailing_bytes)
{
    bad_json("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 12,
             "4 trailing bytes after the last tensor");
    bad_json("{}", 1, "1 trailing bytes");
}

Test(source_safetensors, data_beyond_the_file)
{
    bad_json("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8,
             "tensor 'a': data_offsets [0, 16] run past the end of the data buffer (8 bytes");
}

Test(source_safetensors, metadata_must_map_strings_to_strings)
{
    bad_json("{\"__metadata__\":{\"a\":1}}", 0, "__metadata__[\"a\"] is an integer, expected a string");
    bad_json("{\"__metadata__\":{\"a\":{\"b\":\"c\"}}}", 0, "__metadata__[\"a\"] is an object");
    bad_json("{\"__metadata__\":[\"a\"]}", 0, "__metadata__ is an array");
    bad_json("{\"__metadata__\":\"x\"}", 0, "__metadata__ is a string");
    bad_json("{\"__metadata__\":null}", 0, "__metadata__ is null");
}

Test(source_safetensors, nesting_is_bounded_before_parsing)
{
    bad_json("{\"a\":{\"b\":{\"c\":{}}}}", 0, "nested deeper than 3 levels");
    char deep[5000];
    size_t n = 0;
    deep[n++] = '{';
    deep[n++] = '"';
    deep[n++] = 'a';
    deep[n++] = '"';
    deep[n++] = ':';
    for (int i = 0; i < 2000; i++) deep[n++] = '[';
    deep[n] = '\0';
    bad_json(deep, 0, "nested deeper");
}

/* ---------------------------------------------------------------- accepted corners */
Test(source_safetensors, empty_tensors_rank_0_padding_and_order)
{
    sw_buf b = {0};
    uint8_t data[12] = {0, 0, 0x80, 0x3f, 1, 2, 3, 4, 5, 6, 7, 8};
    /* JSON order is unrelated to the offsets; the header is right-padded with spaces. */
    nf_source *s = ok_json("{\"u\":{\"dtype\":\"U8\",\"shape\":[2,4],\"data_offsets\":[4,12]},"
                           "\"__metadata__\":{\"format\":\"pt\",\"note\":\"\xce\xb3\"},"
                           "\"e\":{\"dtype\":\"F32\",\"shape\":[3,0],\"data_offsets\":[4,4]},"
                           "\"z\":{\"dtype\":\"BF16\",\"shape\":[0],\"data_offsets\":[0,0]},"
                           "\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}      ",
                           data, sizeof data, &b);
    cr_assert_eq(nf_source_tensor_count(s), 4);
    /* File order: by offset, then end, then name. */
    static const char *order[] = {"z", "s", "e", "u"};
    for (size_t i = 0; i < 4; i++) cr_assert_str_eq(nf_source_tensor_at(s, i)->name, order[i]);
    const nf_source_tensor *sc = nf_source_find(s, "s");
    cr_assert_eq(sc->rank, 0);
    cr_assert_eq(sc->elements, 1);
    cr_assert_eq(sc->rows, 1);
    cr_assert_eq(sc->row_elements, 1);
    float v = 0;
    nf_error err = {0};
    cr_assert_eq(nf_source_read_f32(s, sc, 0, 1, &v, 1, &err), NF_OK, "%s", err.message);
    cr_assert_eq(v, 1.0f);
    const nf_source_tensor *e = nf_source_find(s, "e");
    cr_assert_eq(e->elements, 0);
    cr_assert_eq(e->rows, 3);
    cr_assert_eq(e->row_elements, 0);
    cr_assert_eq(e->bytes, 0);
    cr_assert_eq(nf_source_read_f32(s, e, 0, 3, NULL, 0, &err), NF_OK, "%s", err.message);
    const nf_source_tensor *u = nf_source_find(s, "u");
    cr_assert_eq(u->offset, b.len - 8);
    uint8_t row[4];
    cr_assert_eq(nf_source_read_rows(s, u, 1, 2, row, 4, &err), NF_OK, "%s", err.message);
    cr_assert(memcmp(row, data + 8, 4) == 0);
    cr_assert_eq(nf_source_st_metadata_count(s, 0), 2);
    cr_assert_str_eq(nf_source_st_metadata(s, 0, "format"), "pt");
    cr_assert_str_eq(nf_source_st_metadata(s, 0, "note"), "\xce\xb3");
    cr_assert_null(nf_source_st_metadata(s, 0, "nope"));
    const char *k, *val;
    cr_assert(nf_source_st_metadata_at(s, 0, 1, &k, &val));
    cr_assert_str_eq(k, "note");
    cr_assert(!nf_source_st_metadata_at(s, 0, 2, &k, &val));
    nf_source_close(s);
    sw_free(&b);
}

Test(source_safetensors, no_tensors)
{
    sw_buf b = {0};
    nf_source *s = ok_json("{}", NULL, 0, &b);
    cr_assert_eq(nf_source_tensor_count(s), 0);
    cr_assert_null(nf_source_find(s, "x"));
    cr_assert_null(nf_source_tensor_at(s, 0));
    nf_source_close(s);
    sw_free(&b);
    s = ok_json("{\"__metadata__\":{}}", NULL, 0, &b);
    cr_assert_eq(nf_source_st_metadata_count(s, 0), 0);
    nf_source_close(s);
    sw_free(&b);
}

Test(source_safetensors, unsupported_dtypes_are_listed_and_named)
{
    sw_buf b = {0};
    uint8_t data[16] = {0};
    nf_source *s = ok_json("{\"p\":{\"dtype\":\"F4\",\"shape\":[2,4],\"data_offsets\":[0,4]},"
                           "\"q\":{\"dtype\":\"U32\",\"shape\":[1],\"data_offsets\":[4,8]},"
                           "\"r\":{\"dtype\":\"F6_E3M2\",\"shape\":[1,4],\"data_offsets\":[8,11]},"
                           "\"t\":{\"dtype\":\"F6_E2M3\",\"shape\":[2,2],\"data_offsets\":[11,14]},"
                           "\"v\":{\"dtype\":\"F8_E8M0\",\"shape\":[2],\"data_offsets\":[14,16]}}",
                           data, sizeof data, &b);
    nf_error err = {0};
    float out[8];
    uint8_t raw[8];
    static const char *names[] = {"p", "q", "r", "t", "v"};
    static const char *types[] = {"F4", "U32", "F6_E3M2", "F6_E2M3", "F8_E8M0"};
    for (size_t i = 0; i < 5; i++) {
        const nf_source_tensor *t = nf_source_find(s, names[i]);
        cr_assert_str_eq(t->type_name, types[i]);
        cr_assert(!t->convertible);
        cr_assert_eq(nf_source_read_f32(s, t, 0, 1, out, 8, &err), NF_ERR_INVALID);
        cr_assert(strstr(err.message, types[i]) && strstr(err.message, "not supported"), "%s", err.message);
        cr_assert_eq(nf_source_read_bytes(s, t, 0, raw, (size_t)t->bytes, &err), NF_OK, "%s", err.message);
    }
    const nf_source_tensor *p = nf_source_find(s, "p");
    cr_assert_eq(p->block_values, 2);
    cr_assert_eq(p->row_bytes, 2);
    cr_assert_eq(nf_source_read_rows(s, p, 1, 2, raw, 2, &err), NF_OK, "%s", err.message);
    /* F6 rows of 2 elements are 12 bits: not whole bytes, only the raw tensor can be read. */
    const nf_source_tensor *t = nf_source_find(s, "t");
    cr_assert_eq(t->row_bytes, 0);
    cr_assert_eq(nf_source_read_rows(s, t, 0, 1, raw, 8, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "not whole bytes"), "%s", err.message);
    nf_source_close(s);
    sw_free(&b);
}

/* ---------------------------------------------------------------- sweeps */
static void valid_file(sw_buf *b)
{
    static const uint16_t bf[6] = {0x3f80, 0x4000, 0xc040, 0, 0x8000, 0x7f80};
    static const uint8_t u8[3] = {1, 2, 3};
    sw_st_tensor t[2] = {
        {"w.bf16", "BF16", 2, {2, 3}, bf, sizeof bf},
        {"w.u8", "U8", 1, {3}, u8, 3},
    };
    sw_st_file(b, t, 2, "{\"format\":\"pt\"}");
}

Test(source_safetensors, truncated_everywhere)
{
    sw_buf full = {0};
    valid_file(&full);
    nf_source *s = NULL;
    nf_error err = {0};
    cr_assert_eq(try_open(&full, &s, &err), NF_OK, "%s", err.message);
    nf_source_close(s);
    for (size_t len = 0; len < full.len; len++) {
        nf_status st = nf_source_open_memory(full.data, len, NF_SOURCE_SAFETENSORS, "cut", &s, &err);
        cr_assert_eq(st, NF_ERR_INVALID, "prefix of %zu bytes opened", len);
    }
    /* One byte too many is a trailing byte. */
    sw_u8(&full, 0);
    expect_bad(&full, "1 trailing bytes");
}

Test(source_safetensors, every_byte_corrupted)
{
    sw_buf full = {0};
    valid_file(&full);
    static const uint8_t values[] = {0x00, 0xff, 0x80, 0x01, 0x20};
    for (size_t i = 0; i < full.len; i++) {
        uint8_t saved = full.data[i];
        for (size_t v = 0; v < sizeof values; v++) {
            full.data[i] = saved ^ values[v];
            nf_source *s = NULL;
            nf_error err = {0};
            nf_status st = try_open(&full, &s, &err);
            cr_assert(st == NF_OK || st == NF_ERR_INVALID, "byte %zu: status %d: %s", i, st, err.message);
            if (st == NF_OK) {
                for (size_t k = 0; k < nf_source_tensor_count(s); k++) {
                    const nf_source_tensor *t = nf_source_tensor_at(s, k);
                    float out[16];
                    if (t->convertible && t->elements <= 16) (void)nf_source_read_f32(s, t, 0, t->rows, out, 16, &err);
                }
                nf_source_close(s);
            }
        }
        full.data[i] = saved;
    }
    sw_free(&full);
}

Test(source_safetensors, auto_kind_from_magic)
{
    sw_buf b = {0};
    valid_file(&b);
    nf_source *s = NULL;
    nf_error err = {0};
    cr_assert_eq(nf_source_open_memory(b.data, b.len, NF_SOURCE_AUTO, NULL, &s, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_source_kind_of(s), NF_SOURCE_SAFETENSORS);
    cr_assert_str_eq(nf_source_path(s), "<memory>");
    cr_assert_eq(nf_source_gguf_version(s), 0);
    cr_assert_eq(nf_source_gguf_kv_count(s), 0);
    nf_source_close(s);
    sw_free(&b);
}

Test(source_safetensors, dtype_table)
{
    nf_st_dtype d;
    cr_assert(nf_st_dtype_lookup("F8_E4M3", &d));
    cr_assert_eq(d, NF_ST_F8_E4M3);
    cr_assert_eq(nf_st_dtype_bits(d), 8);
    cr_assert_str_eq(nf_st_dtype_name(NF_ST_F6_E3M2), "F6_E3M2");
    cr_assert_eq(nf_st_dtype_bits(NF_ST_F4), 4);
    cr_assert_eq(nf_st_dtype_bits(NF_ST_C64), 64);
    cr_assert(!nf_st_dtype_lookup("bf16", &d));
    cr_assert_null(nf_st_dtype_name(NF_ST_NONE));
    cr_assert_null(nf_st_dtype_name(NF_ST_DTYPE_COUNT));
    for (int i = 0; i < NF_ST_DTYPE_COUNT; i++) {
        cr_assert(nf_st_dtype_lookup(nf_st_dtype_name((nf_st_dtype)i), &d));
        cr_assert_eq((int)d, i);
    }
}
