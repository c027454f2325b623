/* Handcrafted bad GGUF files, one per failure class of the GGUF bug trail (docs/security.md 2.3
 * section 2), in the style of llama.cpp's test-gguf: each test builds its file in memory and
 * checks that opening fails with NF_ERR_INVALID and a message naming the problem, the file and
 * the byte position.  Plus the success variants next to each boundary, and sweeps over every
 * truncation and every single-byte corruption of a valid file (must never crash). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ninfer/ninfer.h>

#include "support/source_writer.h"

#define T_F32 0
#define T_F16 1
#define T_Q4_K 12
#define T_I8 24

static nf_status try_open(const sw_buf *b, nf_source **s, nf_error *err)
{
    *s = NULL;
    return nf_source_open_memory(b->data, b->len, NF_SOURCE_GGUF, "bad.gguf", s, err);
}

/* Opening must fail with NF_ERR_INVALID and a message holding `needle`, the file name and,
 * when with_pos, a byte position. */
static void expect_bad_pos(sw_buf *b, const char *needle, bool with_pos)
{
    nf_source *s;
    nf_error err = {0};
    nf_status st = try_open(b, &s, &err);
    cr_assert_eq(st, NF_ERR_INVALID, "expected a failure mentioning '%s'; got status %d: %s", needle, st, err.message);
    cr_assert_null(s);
    cr_assert(strstr(err.message, needle), "message \"%s\" does not mention \"%s\"", err.message, needle);
    cr_assert(strncmp(err.message, "bad.gguf: ", 10) == 0, "message \"%s\" does not name the file", err.message);
    if (with_pos) cr_assert(strstr(err.message, "byte "), "message \"%s\" has no byte position", err.message);
    sw_free(b);
}

static void expect_bad(sw_buf *b, const char *needle) { expect_bad_pos(b, needle, true); }

static nf_source *expect_ok(sw_buf *b)
{
    nf_source *s;
    nf_error err = {0};
    nf_status st = try_open(b, &s, &err);
    cr_assert_eq(st, NF_OK, "%s", err.message);
    return s;
}

/* One F32 tensor [ne0] named "w" at offset 0, with n_kv KVs written by the caller before it. */
static void one_tensor_tail(sw_buf *b, uint64_t ne0)
{
    uint64_t ne[1] = {ne0};
    sw_gguf_tensor_info(b, "w", 1, ne, T_F32, 0);
    sw_pad(b, 32);
    sw_zeros(b, (size_t)(ne0 * 4));
    sw_pad(b, 32);
}

/* ---------------------------------------------------------------- header */
Test(source_gguf_bad, bad_magic)
{
    sw_buf b = {0};
    sw_bytes(&b, "GGUX", 4);
    sw_u32(&b, 3);
    sw_u64(&b, 0);
    sw_u64(&b, 0);
    expect_bad(&b, "bad magic");
}

Test(source_gguf_bad, empty_and_tiny_files)
{
    sw_buf b = {0};
    expect_bad(&b, "truncated");
    sw_bytes(&b, "GG", 2);
    expect_bad(&b, "truncated: the magic");
    sw_bytes(&b, "GGUF", 4);
    sw_u32(&b, 3);
    expect_bad(&b, "n_tensors");
}

Test(source_gguf_bad, version_1)
{
    sw_buf b = {0};
    sw_gguf_header(&b, 1, 0, 0);
    expect_bad(&b, "version 1 is not supported");
}

Test(source_gguf_bad, future_version)
{
    sw_buf b = {0};
    sw_gguf_header(&b, 4, 0, 0);
    expect_bad(&b, "version 4 is not supported");
    sw_gguf_header(&b, 0, 0, 0);
    expect_bad(&b, "version 0");
}

Test(source_gguf_bad, byte_swapped_version_hints_at_endianness)
{
    sw_buf b = {0};
    sw_gguf_header(&b, 0x03000000u, 0, 0);
    expect_bad(&b, "big-endian");
}

Test(source_gguf_bad, version_2_and_empty_file_are_fine)
{
    sw_buf b = {0};
    sw_gguf_header(&b, 2, 0, 0);
    nf_source *s = expect_ok(&b);
    cr_assert_eq(nf_source_gguf_version(s), 2);
    cr_assert_eq(nf_source_tensor_count(s), 0);
    cr_assert_eq(nf_source_gguf_kv_count(s), 0);
    nf_source_close(s);
    sw_free(&b);
}

Test(source_gguf_bad, huge_counts)
{
    sw_buf b = {0};
    sw_gguf_header(&b, 3, (uint64_t)1 << 63, 0);
    expect_bad(&b, "n_tensors 9223372036854775808 exceeds");
    sw_gguf_header(&b, 3, 0, UINT64_MAX);
    expect_bad(&b, "n_kv 18446744073709551615 exceeds");
    /* Within the caps but not within the file: refused before any table is allocated. */
    sw_gguf_header(&b, 3, 1000, 1000);
    sw_zeros(&b, 100);
    expect_bad(&b, "1000 key/value pairs and 1000 tensor infos");
}

/* ---------------------------------------------------------------- truncation everywhere */
static void valid_file(sw_buf *b)
{
    sw_gguf_header(b, 3, 2, 4);
    sw_gguf_kv_str(b, "general.architecture", "llama");
    sw_gguf_kv_u32(b, "general.alignment", 32);
    sw_gguf_key(b, "tok.list", SW_GGUF_ARRAY);
    sw_u32(b, SW_GGUF_STRING);
    sw_u64(b, 2);
    sw_gguf_str(b, "ab");
    sw_gguf_str(b, "c");
    sw_gguf_key(b, "f.list", SW_GGUF_ARRAY);
    sw_u32(b, SW_GGUF_F32);
    sw_u64(b, 2);
    sw_u32(b, 0x3f800000u);
    sw_u32(b, 0x40000000u);
    uint64_t ne_a[2] = {8, 2}, ne_b[1] = {16};
    sw_gguf_tensor_info(b, "a", 2, ne_a, T_F32, 0);
    sw_gguf_tensor_info(b, "b", 1, ne_b, T_F16, 64);
    sw_pad(b, 32);
    for (int i = 0; i < 16; i++) sw_u32(b, 0x3f800000u + (uint32_t)i);
    for (int i = 0; i < 16; i++) sw_u16(b, (uint16_t)(0x3c00 + i));
}

Test(source_gguf_bad, truncated_everywhere)
{
    sw_buf full = {0};
    valid_file(&full);
    nf_source *s = NULL;
    nf_error err = {0};
    cr_assert_eq(nf_source_open_memory(full.data, full.len, NF_SOURCE_GGUF, "ok.gguf", &s, &err), NF_OK, "%s",
                 err.message);
    nf_source_close(s);
    for (size_t len = 0; len < full.len; len++) {
        s = NULL;
        nf_status st = nf_source_open_memory(full.data, len, NF_SOURCE_GGUF, "cut.gguf", &s, &err);
        cr_assert_eq(st, NF_ERR_INVALID, "prefix of %zu bytes (of %zu) opened: %s", len, full.len, err.message);
        cr_assert(strstr(err.message, "truncated"), "prefix %zu: %s", len, err.message);
    }
    sw_free(&full);
}

/* Every single-byte corruption opens or fails cleanly (ASan/UBSan runs make this a real check). */
Test(source_gguf_bad, every_byte_corrupted)
{
    sw_buf full = {0};
    valid_file(&full);
    static const uint8_t values[] = {0x00, 0xff, 0x80, 0x01, 0x7f};
    for (size_t i = 0; i < full.len; i++) {
        uint8_t saved = full.data[i];
        for (size_t v = 0; v < sizeof values; v++) {
            full.data[i] = saved ^ values[v];
            nf_source *s = NULL;
            nf_error err = {0};
            nf_status st = nf_source_open_memory(full.data, full.len, NF_SOURCE_GGUF, "x.gguf", &s, &err);
            cr_assert(st == NF_OK || st == NF_ERR_INVALID, "byte %zu: status %d: %s", i, st, err.message);
            if (st == NF_OK) {
                /* Whatever opened must read within bounds. */
                for (size_t k = 0; k < nf_source_tensor_count(s); k++) {
                    const nf_source_tensor *t = nf_source_tensor_at(s, k);
                    float out[64];
                    if (t->convertible && t->rows * t->row_elements <= 64)
                        (void)nf_source_read_f32(s, t, 0, t->rows, out, 64, &err);
                }
                nf_source_close(s);
            }
        }
        full.data[i] = saved;
    }
    sw_free(&full);
}

/* ---------------------------------------------------------------- KVs */
Test(source_gguf_bad, bad_key_size)
{
    sw_buf b = {0};
    sw_gguf_header(&b, 3, 0, 1);
    sw_gguf_kv_u32(&b, "", 1);
    expect_bad(&b, "empty key");

    sw_gguf_header(&b, 3, 0, 1);
    sw_u64(&b, (uint64_t)1 << 40); /* a key length of a terabyte */
    sw_bytes(&b, "abc", 3);
    sw_zeros(&b, 16);
    expect_bad(&b, "key length 1099511627776 exceeds the cap");

    sw_gguf_header(&b, 3, 0, 1);
    sw_u64(&b, 100); /* within the cap, beyond the file */
    sw_bytes(&b, "abcdefghijklmnopqrstuvwxyz", 26);
    expect_bad(&b, "truncated: the key needs 100 bytes");

    sw_gguf_header(&b, 3, 0, 1);
    sw_u64(&b, 3);
    sw_bytes(&b, "a\0b", 3);
    sw_u32(&b, SW_GGUF_U8);
    sw_u8(&b, 1);
    expect_bad(&b, "NUL");
}

Test(source_gguf_bad, bad_kv_type)
{
    sw_buf b = {0};
    sw_gguf_header(&b, 3, 0, 1);
    sw_gguf_key(&b, "x.y", 13);
    sw_u32(&b, 0);
    expect_bad(&b, "key 0 'x.y': bad value type 13");

    sw_gguf_header(&b, 3, 0, 1);
    sw_gguf_key(&b, "x.y", 0xffffffffu);
    expect_bad(&b, "bad value type 4294967295");

    sw_gguf_header(&b, 3, 0, 1);
    sw_gguf_key(&b, "x.arr", SW_GGUF_ARRAY);
    sw_u32(&b, 77);
    sw_u64(&b, 1);
    sw_u8(&b, 0);
    expect_bad(&b, "bad array element type 77");
}

Test(source_gguf_bad, nested_arrays)
{
    sw_buf b = {0};
    sw_gguf_header(&b, 3, 0, 1);
    sw_gguf_key(&b, "x.arr", SW_GGUF_ARRAY);
    sw_u32(&b, SW_GGUF_ARRAY);
    sw_u64(&b, 1);
    sw_u32(&b, SW_GGUF_U8);
    sw_u64(&b, 1);
    sw_u8(&b, 0);
    expect_bad(&b, "nested arrays are not supported");
}

Test(source_gguf_bad, duplicate_key)
{
    sw_buf b = {0};
    sw_gguf_header(&b, 3, 0, 3);
    sw_gguf_kv_u32(&b, "a.b", 1);
    sw_gguf_kv_str(&b, "c", "x");
    sw_gguf_kv_u32(&b, "a.b", 2);
    expect_bad(&b, "duplicate key 'a.b'");
}

Test(source_gguf_bad, bad_alignment)
{
    static const uint32_t bad[] = {0, 3, 48, 1u << 30};
    static const char *why[] = {"alignment 0", "alignment 3 is not a power of two",
                                "alignment 48 is not a power of two", "exceeds the reader's cap"};
    for (size_t i = 0; i < 4; i++) {
        sw_buf b = {0};
        sw_gguf_header(&b, 3, 1, 1);
        sw_gguf_kv_u32(&b, "general.alignment", bad[i]);
        one_tensor_tail(&b, 8);
        expect_bad(&b, why[i]);
    }
    sw_buf b = {0};
    sw_gguf_header(&b, 3, 1, 1);
    sw_gguf_key(&b, "general.alignment", SW_GGUF_U64);
    sw_u64(&b, 32);
    one_tensor_tail(&b, 8);
    expect_bad(&b, "general.alignment': must be a u32, not u64");

    sw_gguf_header(&b, 3, 1, 1);
    sw_gguf_kv_str(&b, "general.alignment", "32");
    one_tensor_tail(&b, 8);
    expect_bad(&b, "must be a u32, not string");

    sw_gguf_header(&b, 3, 1, 1);
    sw_gguf_key(&b, "general.alignment", SW_GGUF_ARRAY);
    sw_u32(&b, SW_GGUF_U32);
    sw_u64(&b, 1);
    sw_u32(&b, 32);
    one_tensor_tail(&b, 8);
    expect_bad(&b, "must be a u32, not array of u32");
}

Test(source_gguf_bad, alignment_64_is_used)
{
    static const float v[20] = {1, 2, 3};
    sw_gguf_tensor t[2] = {
        {"a", T_F32, 1, {20}, v, 80},
        {"b", T_F32, 1, {4}, v, 16},
    };
    sw_buf b = {0};
    sw_gguf_file(&b, 64, t, 2);
    nf_source *s = expect_ok(&b);
    cr_assert_eq(nf_source_gguf_alignment(s), 64);
    cr_assert_eq(nf_source_gguf_data_offset(s) % 64, 0);
    cr_assert_eq(nf_source_tensor_at(s, 1)->offset, nf_source_gguf_data_offset(s) + 128);
    nf_source_close(s);
    sw_free(&b);
}

/* A string of 2^64 - 1 bytes: refused on its length, before any allocation (the calloc(n + 1)
 * wrap of PowerInfer#256). */
Test(source_gguf_bad, string_length_2_64_minus_1)
{
    sw_buf b = {0};
    sw_gguf_header(&b, 3, 0, 1);
    sw_gguf_key(&b, "general.name", SW_GGUF_STRING);
    sw_u64(&b, UINT64_MAX);
    sw_bytes(&b, "abc", 3);
    expect_bad(&b, "length 18446744073709551615 exceeds the cap");

    /* Below the cap but beyond the file. */
    sw_gguf_header(&b, 3, 0, 1);
    sw_gguf_key(&b, "general.name", SW_GGUF_STRING);
    sw_u64(&b, 1u << 20);
    sw_bytes(&b, "abc", 3);
    expect_bad(&b, "truncated: the string needs 1048576 bytes, 3 remain");
}

/* A ~60-byte file whose array header asks for gigabytes: refused at once, nothing allocated
 * (ggml#1516 / ollama#17042). */
Test(source_gguf_bad, array_count_requesting_gigabytes)
{
    clock_t t0 = clock();
    sw_buf b = {0};
    sw_gguf_header(&b, 3, 0, 1);
    sw_gguf_key(&b, "tokenizer.ggml.scores", SW_GGUF_ARRAY);
    sw_u32(&b, SW_GGUF_U64);
    sw_u64(&b, (uint64_t)1 << 26); /* at the count cap: 512 MiB of u64 */
    sw_u64(&b, 0);
    expect_bad(&b, "an array of 67108864 u64 values needs 536870912 bytes");

    sw_gguf_header(&b, 3, 0, 1);
    sw_gguf_key(&b, "tokenizer.ggml.tokens", SW_GGUF_ARRAY);
    sw_u32(&b, SW_GGUF_STRING);
    sw_u64(&b, (uint64_t)1 << 25);
    sw_gguf_str(&b, "a");
    expect_bad(&b, "an array of 33554432 string values");

    sw_gguf_header(&b, 3, 0, 1);
    sw_gguf_key(&b, "x", SW_GGUF_ARRAY);
    sw_u32(&b, SW_GGUF_U8);
    sw_u64(&b, (uint64_t)1 << 40);
    expect_bad(&b, "exceeds the cap of 67108864 elements");

    /* Array of strings whose second string lies about its length. */
    sw_gguf_header(&b, 3, 0, 1);
    sw_gguf_key(&b, "x", SW_GGUF_ARRAY);
    sw_u32(&b, SW_GGUF_STRING);
    sw_u64(&b, 2);
    sw_gguf_str(&b, "ok");
    sw_u64(&b, UINT64_MAX - 7);
    sw_zeros(&b, 8);
    expect_bad(&b, "string 1 length");
    cr_assert_lt((double)(clock() - t0) / CLOCKS_PER_SEC, 0.5, "refusals must be immediate");
}

Test(source_gguf_bad, bool_values_kept_and_checked_on_access)
{
    sw_buf b = {0};
    sw_gguf_header(&b, 3, 0, 1);
    sw_gguf_key(&b, "x.flag", SW_GGUF_BOOL);
    sw_u8(&b, 2);
    nf_source *s = expect_ok(&b);
    const nf_gguf_kv *kv = nf_source_gguf_kv_find(s, "x.flag");
    bool v;
    nf_error err = {0};
    cr_assert_eq(nf_gguf_kv_bool(kv, 0, &v, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "x.flag"), "%s", err.message);
    nf_source_close(s);
    sw_free(&b);
}

/* ---------------------------------------------------------------- tensor infos */
Test(source_gguf_bad, bad_tensor_name_size)
{
    char name64[65];
    memset(name64, 'n', 64);
    name64[64] = '\0';
    uint64_t ne[1] = {8};
    sw_buf b = {0};
    sw_gguf_header(&b, 3, 1, 0);
    sw_gguf_tensor_info(&b, name64, 1, ne, T_F32, 0);
    sw_pad(&b, 32);
    sw_zeros(&b, 32);
    expect_bad(&b, "tensor name (GGML_MAX_NAME 64) length 64 exceeds the cap of 63");

    /* 63 bytes is the longest name ggml allows. */
    name64[63] = '\0';
    sw_gguf_header(&b, 3, 1, 0);
    sw_gguf_tensor_info(&b, name64, 1, ne, T_F32, 0);
    sw_pad(&b, 32);
    sw_zeros(&b, 32);
    nf_source *s = expect_ok(&b);
    cr_assert_eq(strlen(nf_source_tensor_at(s, 0)->name), 63);
    nf_source_close(s);
    sw_free(&b);

    sw_gguf_header(&b, 3, 1, 0);
    sw_gguf_tensor_info(&b, "", 1, ne, T_F32, 0);
    sw_pad(&b, 32);
    sw_zeros(&b, 32);
    expect_bad(&b, "empty tensor name");

    sw_gguf_header(&b, 3, 1, 0);
    sw_u64(&b, UINT64_MAX);
    sw_zeros(&b, 32);
    expect_bad(&b, "tensor info 0: the tensor name (GGML_MAX_NAME 64) length 18446744073709551615");
}

Test(source_gguf_bad, duplicate_tensor_name)
{
    uint64_t ne[1] = {8};
    sw_buf b = {0};
    sw_gguf_header(&b, 3, 2, 0);
    sw_gguf_tensor_info(&b, "w", 1, ne, T_F32, 0);
    sw_gguf_tensor_info(&b, "w", 1, ne, T_F32, 32);
    sw_pad(&b, 32);
    sw_zeros(&b, 64);
    expect_bad(&b, "duplicate tensor name 'w'");
}

Test(source_gguf_bad, n_dims_above_4)
{
    uint64_t ne[5] = {8, 1, 1, 1, 1};
    sw_buf b = {0};
    sw_gguf_header(&b, 3, 1, 0);
    sw_gguf_tensor_info(&b, "w", 5, ne, T_F32, 0);
    sw_pad(&b, 32);
    sw_zeros(&b, 32);
    expect_bad(&b, "tensor 0 'w': n_dims 5 exceeds GGML_MAX_DIMS");

    sw_gguf_header(&b, 3, 1, 0);
    sw_gguf_str(&b, "w");
    sw_u32(&b, 0xffffffffu);
    sw_zeros(&b, 64);
    expect_bad(&b, "n_dims 4294967295");
}

Test(source_gguf_bad, bad_shapes)
{
    sw_buf b = {0};
    uint64_t zero[2] = {8, 0};
    sw_gguf_header(&b, 3, 1, 0);
    sw_gguf_tensor_info(&b, "w", 2, zero, T_F32, 0);
    sw_pad(&b, 32);
    expect_bad(&b, "ne[1] is 0");

    uint64_t neg[2] = {8, (uint64_t)1 << 63};
    sw_gguf_header(&b, 3, 1, 0);
    sw_gguf_tensor_info(&b, "w", 2, neg, T_F32, 0);
    sw_pad(&b, 32);
    expect_bad(&b, "ne[1] = 9223372036854775808 is negative");

    uint64_t big[2] = {(uint64_t)1 << 32, (uint64_t)1 << 31}; /* product 2^63 */
    sw_gguf_header(&b, 3, 1, 0);
    sw_gguf_tensor_info(&b, "w", 2, big, T_F32, 0);
    sw_pad(&b, 32);
    expect_bad(&b, "overflows int64");

    uint64_t four[4] = {1u << 16, 1u << 16, 1u << 16, 1u << 16};
    sw_gguf_header(&b, 3, 1, 0);
    sw_gguf_tensor_info(&b, "w", 4, four, T_I8, 0);
    sw_pad(&b, 32);
    expect_bad(&b, "ne[0..3] overflows int64");

    /* ne fits int64 but its F32 byte size does not fit U64. */
    uint64_t huge[1] = {(uint64_t)1 << 62};
    sw_gguf_header(&b, 3, 1, 0);
    sw_gguf_tensor_info(&b, "w", 1, huge, T_F32, 0);
    sw_pad(&b, 32);
    expect_bad(&b, "byte size overflows U64");
}

Test(source_gguf_bad, scalar_n_dims_0_is_accepted)
{
    sw_buf b = {0};
    sw_gguf_header(&b, 3, 1, 0);
    sw_gguf_tensor_info(&b, "s", 0, NULL, T_F32, 0);
    sw_pad(&b, 32);
    sw_u32(&b, 0x40490fdbu); /* pi */
    nf_source *s = expect_ok(&b);
    const nf_source_tensor *t = nf_source_tensor_at(s, 0);
    cr_assert_eq(t->rank, 0);
    cr_assert_eq(t->elements, 1);
    cr_assert_eq(t->rows, 1);
    cr_assert_eq(t->row_elements, 1);
    float v;
    nf_error err = {0};
    cr_assert_eq(nf_source_read_f32(s, t, 0, 1, &v, 1, &err), NF_OK, "%s", err.message);
    cr_assert_eq(v, 3.14159274f);
    nf_source_close(s);
    sw_free(&b);
}

Test(source_gguf_bad, bad_type)
{
    uint64_t ne[1] = {256};
    sw_buf b = {0};
    sw_gguf_header(&b, 3, 1, 0);
    sw_gguf_tensor_info(&b, "w", 1, ne, 200, 0);
    sw_pad(&b, 32);
    sw_zeros(&b, 1024);
    expect_bad(&b, "unknown ggml type 200");

    sw_gguf_header(&b, 3, 1, 0);
    sw_gguf_tensor_info(&b, "w", 1, ne, 0x80000000u, 0);
    expect_bad(&b, "unknown ggml type 2147483648");

    sw_gguf_header(&b, 3, 1, 0);
    sw_gguf_tensor_info(&b, "w", 1, ne, 4, 0);
    sw_pad(&b, 32);
    sw_zeros(&b, 1024);
    expect_bad(&b, "ggml type 4 (Q4_2) was removed");
}

Test(source_gguf_bad, ne0_not_a_multiple_of_the_block)
{
    uint64_t ne[2] = {100, 2};
    sw_buf b = {0};
    sw_gguf_header(&b, 3, 1, 0);
    sw_gguf_tensor_info(&b, "w", 2, ne, T_Q4_K, 0);
    sw_pad(&b, 32);
    sw_zeros(&b, 1024);
    expect_bad(&b, "ne[0] = 100 is not a multiple of the Q4_K block size 256");
}

static void two_tensors(sw_buf *b, uint64_t second_offset)
{
    uint64_t ne[1] = {12}; /* 48 bytes, padded to 64 */
    sw_gguf_header(b, 3, 2, 0);
    sw_gguf_tensor_info(b, "a", 1, ne, T_F32, 0);
    sw_gguf_tensor_info(b, "b", 1, ne, T_F32, second_offset);
    sw_pad(b, 32);
    sw_zeros(b, 256);
}

Test(source_gguf_bad, bad_offsets)
{
    sw_buf b = {0};
    two_tensors(&b, 64);
    nf_source *s = expect_ok(&b);
    nf_source_close(s);
    sw_free(&b);

    two_tensors(&b, 96);
    expect_bad(&b, "data offset 96 leaves a gap of 32 bytes after tensor 'a' (expected 64)");
    two_tensors(&b, 32);
    expect_bad(&b, "data offset 32 overlaps tensor 'a', which ends at 64");
    two_tensors(&b, 0);
    expect_bad(&b, "overlaps");
    two_tensors(&b, 48);
    expect_bad(&b, "data offset 48 is not a multiple of the alignment 32");

    uint64_t ne[1] = {8};
    sw_gguf_header(&b, 3, 1, 0);
    sw_gguf_tensor_info(&b, "a", 1, ne, T_F32, 32);
    sw_pad(&b, 32);
    sw_zeros(&b, 64);
    expect_bad(&b, "leaves a gap of 32 bytes after the start of the data section");
}

/* The running padded sum must not wrap (GGML_PAD near 2^64 gave 0: #24759). */
Test(source_gguf_bad, padded_offset_overflow)
{
    uint64_t ne[1] = {((uint64_t)1 << 63) - 1}; /* I8: 2^63 - 1 bytes, padded to 2^63 */
    sw_buf b = {0};
    sw_gguf_header(&b, 3, 2, 0);
    sw_gguf_tensor_info(&b, "a", 1, ne, T_I8, 0);
    sw_gguf_tensor_info(&b, "b", 1, ne, T_I8, (uint64_t)1 << 63);
    sw_pad(&b, 32);
    expect_bad(&b, "data section size overflows U64");
}

Test(source_gguf_bad, data_truncated)
{
    sw_buf full = {0};
    valid_file(&full);
    full.len -= 1;
    expect_bad_pos(&full, "data section truncated", true);

    /* A tensor claiming far more data than the file holds ("Bleeding Llama": dims lie). */
    uint64_t ne[2] = {4096, 4096};
    sw_buf b = {0};
    sw_gguf_header(&b, 3, 1, 0);
    sw_gguf_tensor_info(&b, "w", 2, ne, T_F32, 0);
    sw_pad(&b, 32);
    sw_zeros(&b, 64);
    expect_bad(&b, "tensor 'w': data offset 0 + 67108864 bytes from the data section at byte 96");
}

Test(source_gguf_bad, last_padding_may_be_missing)
{
    uint64_t ne[1] = {3};
    sw_buf b = {0};
    sw_gguf_header(&b, 3, 1, 0);
    sw_gguf_tensor_info(&b, "w", 1, ne, T_F32, 0);
    sw_pad(&b, 32);
    sw_u32(&b, 0x3f800000u);
    sw_u32(&b, 0x40000000u);
    sw_u32(&b, 0x40400000u);
    nf_source *s = expect_ok(&b);
    float v[3];
    nf_error err = {0};
    cr_assert_eq(nf_source_read_f32(s, nf_source_tensor_at(s, 0), 0, 1, v, 3, &err), NF_OK, "%s", err.message);
    cr_assert(v[0] == 1.0f && v[1] == 2.0f && v[2] == 3.0f);
    nf_source_close(s);
    sw_free(&b);
}

/* Unsupported ggml types are listed, readable raw, refused by name for values. */
Test(source_gguf_bad, values_only_type_read)
{
    /* Q4_1 has no gguf_* format: its values are read (docs/formats.md 8.5), its rows raw */
    uint8_t blocks[40] = {0x00, 0x3C, 0x00, 0xC8}; /* d = 1, m = -8; codes 0 */
    sw_gguf_tensor t[1] = {{"w", 3 /* Q4_1 */, 2, {32, 2}, blocks, 40}};
    sw_buf b = {0};
    sw_gguf_file(&b, 0, t, 1);
    nf_source *s = expect_ok(&b);
    const nf_source_tensor *w = nf_source_tensor_at(s, 0);
    cr_assert_str_eq(w->type_name, "Q4_1");
    cr_assert_null(w->format);
    cr_assert(w->convertible);
    cr_assert_eq(w->row_bytes, 20);
    uint8_t raw[40];
    float out[64];
    nf_error err = {0};
    cr_assert_eq(nf_source_read_rows(s, w, 0, 2, raw, sizeof raw, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_source_read_f32(s, w, 0, 2, out, 64, &err), NF_OK, "%s", err.message);
    cr_assert_eq(out[0], -8.0f);
    cr_assert_eq(out[32], 0.0f); /* row 1: d = m = +0 */
    nf_source_close(s);
    sw_free(&b);
}

Test(source_gguf_bad, file_mode_reports_the_same)
{
    char *dir = sw_tempdir();
    cr_assert_not_null(dir);
    sw_buf b = {0};
    two_tensors(&b, 96);
    char *p = sw_path(dir, "gap.gguf");
    cr_assert_eq(sw_write_file(p, b.data, b.len), 0);
    nf_source *s = NULL;
    nf_error err = {0};
    cr_assert_eq(nf_source_open(p, &s, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "gap.gguf: byte ") && strstr(err.message, "leaves a gap"), "%s", err.message);
    /* Without the .gguf extension the magic decides. */
    char *q = sw_path(dir, "model.bin");
    cr_assert_eq(sw_write_file(q, b.data, b.len), 0);
    cr_assert_eq(nf_source_open(q, &s, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "leaves a gap"), "%s", err.message);
    free(p);
    free(q);
    sw_free(&b);
    sw_rmtree(dir);
    free(dir);
}
