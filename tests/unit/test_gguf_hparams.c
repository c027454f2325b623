/* A GGUF file's hyperparameters as the text component's config (convert/gguf_meta.c,
 * nf_gguf_hparams_config; docs/ninfer-convert.md, "GGUF metadata"): llama.cpp's names mapped to
 * config.json's, numbers of any GGUF integer or float type kept, values that are no number (a
 * string, a bool, a u64 beyond 2^63-1) and per-layer arrays left out, the vocabulary's size from
 * the tokenizer's tokens when the architecture does not give it, and nothing at all without a
 * usable general.architecture.  Also the metadata text's refusal of a key that is not UTF-8. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <ninfer/ninfer.h>

#include "convert/convert_impl.h"
#include "support/source_writer.h"

/* ---------------------------------------------------------------- a GGUF by hand */
static sw_buf g_kvs;
static uint64_t g_nkv;

static void kv_begin(void)
{
    sw_free(&g_kvs);
    g_nkv = 0;
}

static void kv_str(const char *key, const char *v)
{
    sw_gguf_kv_str(&g_kvs, key, v);
    g_nkv++;
}

static void kv_u32(const char *key, uint32_t v)
{
    sw_gguf_kv_u32(&g_kvs, key, v);
    g_nkv++;
}

static void kv_u64(const char *key, uint64_t v)
{
    sw_gguf_key(&g_kvs, key, SW_GGUF_U64);
    sw_u64(&g_kvs, v);
    g_nkv++;
}

static void kv_i8(const char *key, int8_t v)
{
    sw_gguf_key(&g_kvs, key, SW_GGUF_I8);
    sw_u8(&g_kvs, (uint8_t)v);
    g_nkv++;
}

static void kv_i64(const char *key, int64_t v)
{
    sw_gguf_key(&g_kvs, key, SW_GGUF_I64);
    sw_u64(&g_kvs, (uint64_t)v);
    g_nkv++;
}

static void kv_f32(const char *key, float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    sw_gguf_key(&g_kvs, key, SW_GGUF_F32);
    sw_u32(&g_kvs, u);
    g_nkv++;
}

static void kv_bool(const char *key, uint8_t v)
{
    sw_gguf_key(&g_kvs, key, SW_GGUF_BOOL);
    sw_u8(&g_kvs, v);
    g_nkv++;
}

static void kv_u32_array(const char *key, uint64_t n, uint32_t v)
{
    sw_gguf_key(&g_kvs, key, SW_GGUF_ARRAY);
    sw_u32(&g_kvs, SW_GGUF_U32);
    sw_u64(&g_kvs, n);
    for (uint64_t i = 0; i < n; i++) sw_u32(&g_kvs, v);
    g_nkv++;
}

static void kv_tokens(uint64_t n)
{
    sw_gguf_key(&g_kvs, "tokenizer.ggml.tokens", SW_GGUF_ARRAY);
    sw_u32(&g_kvs, SW_GGUF_STRING);
    sw_u64(&g_kvs, n);
    for (uint64_t i = 0; i < n; i++) sw_gguf_str(&g_kvs, i % 2 ? "<s>" : "a");
    g_nkv++;
}

static char *g_dir;

/* The pairs given since kv_begin, then one tensor "w" of 32 f32, opened. */
static nf_source *open_kvs(const char *name)
{
    sw_buf b = {0};
    sw_gguf_header(&b, 3, 1, g_nkv);
    sw_bytes(&b, g_kvs.data, g_kvs.len);
    uint64_t ne[1] = {32};
    sw_gguf_tensor_info(&b, "w", 1, ne, 0, 0);
    sw_pad(&b, 32);
    sw_zeros(&b, 32 * 4);
    char *path = sw_path(g_dir, name);
    cr_assert_eq(sw_write_file(path, b.data, b.len), 0);
    sw_free(&b);
    nf_source *s = NULL;
    nf_error err = {0};
    cr_assert_eq(nf_source_open(path, &s, &err), NF_OK, "%s", err.message);
    free(path);
    return s;
}

static void setup(void) { g_dir = sw_tempdir(); }
static void teardown(void)
{
    sw_free(&g_kvs);
    sw_rmtree(g_dir);
    free(g_dir);
}

/* The config as compact text with sorted keys, to compare with a literal. */
static void check_config(nf_source *s, const char *want)
{
    json_t *cfg = nf_gguf_hparams_config(s);
    cr_assert_not_null(cfg);
    char *text = json_dumps(cfg, JSON_COMPACT | JSON_SORT_KEYS);
    cr_assert_str_eq(text, want);
    free(text);
    json_decref(cfg);
    nf_source_close(s);
}

TestSuite(gguf_hparams, .init = setup, .fini = teardown);

/* ---------------------------------------------------------------- the mapping */
Test(gguf_hparams, every_name_of_the_table_from_integers_and_floats_of_each_width)
{
    kv_begin();
    kv_str("general.architecture", "llama");
    kv_u32("llama.context_length", 4096);
    kv_u64("llama.embedding_length", 2048);
    kv_i8("llama.block_count", 16);
    kv_i64("llama.feed_forward_length", 8192);
    kv_u32("llama.attention.head_count", 32);
    kv_u32("llama.attention.head_count_kv", 8);
    kv_f32("llama.attention.layer_norm_rms_epsilon", 0.5f);
    kv_f32("llama.attention.layer_norm_epsilon", 0.25f);
    kv_u32("llama.attention.key_length", 64);
    kv_f32("llama.rope.freq_base", 10000.0f);
    kv_u32("llama.expert_count", 8);
    kv_u32("llama.expert_used_count", 2);
    kv_u32("llama.vocab_size", 32000);
    kv_u32("mistral.context_length", 7); /* another architecture's: not this one's */
    check_config(open_kvs("all.gguf"),
                 "{\"head_dim\":64,\"hidden_size\":2048,\"intermediate_size\":8192,\"layer_norm_eps\":0.25,"
                 "\"max_position_embeddings\":4096,\"model_type\":\"llama\",\"num_attention_heads\":32,"
                 "\"num_experts_per_tok\":2,\"num_hidden_layers\":16,\"num_key_value_heads\":8,"
                 "\"num_local_experts\":8,\"rms_norm_eps\":0.5,\"rope_theta\":10000.0,\"vocab_size\":32000}");
}

Test(gguf_hparams, a_negative_integer_is_kept_as_it_is)
{
    kv_begin();
    kv_str("general.architecture", "llama");
    kv_i8("llama.block_count", -3);
    check_config(open_kvs("neg.gguf"), "{\"model_type\":\"llama\",\"num_hidden_layers\":-3}");
}

Test(gguf_hparams, values_that_are_no_number_and_arrays_are_left_out)
{
    kv_begin();
    kv_str("general.architecture", "llama");
    kv_str("llama.context_length", "4096");                      /* a string */
    kv_str("llama.embedding_length", "\xff\xfe");                /* a string that is not UTF-8 */
    kv_bool("llama.block_count", 1);                             /* a bool */
    kv_u64("llama.block_count.x", 0);                            /* no name of the table */
    kv_u64("llama.expert_count", 0x8000000000000000ull);         /* 2^63: JSON text, not an integer */
    kv_u32_array("llama.feed_forward_length", 4, 11008);         /* per layer */
    kv_u64("llama.attention.head_count", 0x7FFFFFFFFFFFFFFFull); /* 2^63-1: still an integer */
    check_config(open_kvs("nonum.gguf"), "{\"model_type\":\"llama\",\"num_attention_heads\":9223372036854775807}");
}

/* ---------------------------------------------------------------- the vocabulary's size */
Test(gguf_hparams, vocab_size_from_the_tokens_when_the_architecture_has_none)
{
    kv_begin();
    kv_str("general.architecture", "qwen2");
    kv_tokens(5);
    check_config(open_kvs("tokens.gguf"), "{\"model_type\":\"qwen2\",\"vocab_size\":5}");
}

Test(gguf_hparams, the_architectures_vocab_size_wins_over_the_tokens)
{
    kv_begin();
    kv_str("general.architecture", "qwen2");
    kv_tokens(5);
    kv_u32("qwen2.vocab_size", 151936);
    check_config(open_kvs("both.gguf"), "{\"model_type\":\"qwen2\",\"vocab_size\":151936}");
}

Test(gguf_hparams, tokens_that_are_no_array_give_no_vocab_size)
{
    kv_begin();
    kv_str("general.architecture", "qwen2");
    kv_u32("tokenizer.ggml.tokens", 5);
    check_config(open_kvs("scalar_tokens.gguf"), "{\"model_type\":\"qwen2\"}");
}

/* ---------------------------------------------------------------- no usable architecture */
Test(gguf_hparams, no_architecture_no_config)
{
    kv_begin();
    kv_u32("llama.context_length", 4096);
    kv_tokens(3);
    check_config(open_kvs("noarch.gguf"), "{}");
}

Test(gguf_hparams, an_architecture_that_is_no_string_or_empty_or_too_long_gives_none)
{
    kv_begin();
    kv_u32("general.architecture", 1);
    kv_u32("1.context_length", 4096);
    check_config(open_kvs("u32arch.gguf"), "{}");

    kv_begin();
    kv_str("general.architecture", "");
    kv_u32(".context_length", 4096);
    check_config(open_kvs("emptyarch.gguf"), "{}");

    char arch[66]; /* 65 bytes: one more than a name may have */
    memset(arch, 'a', 65);
    arch[65] = '\0';
    char key[100];
    snprintf(key, sizeof key, "%s.context_length", arch);
    kv_begin();
    kv_str("general.architecture", arch);
    kv_u32(key, 4096);
    check_config(open_kvs("longarch.gguf"), "{}");

    arch[64] = '\0'; /* 64 bytes: still a name */
    snprintf(key, sizeof key, "%s.context_length", arch);
    kv_begin();
    kv_str("general.architecture", arch);
    kv_u32(key, 4096);
    char want[200];
    snprintf(want, sizeof want, "{\"max_position_embeddings\":4096,\"model_type\":\"%s\"}", arch);
    check_config(open_kvs("arch64.gguf"), want);
}

/* ---------------------------------------------------------------- the metadata text */
Test(gguf_hparams, a_key_that_is_not_utf8_is_refused_with_its_offset)
{
    kv_begin();
    kv_u32("general.alignment", 32); /* 8 + 17 + 4 + 4 = 33 bytes, at byte 24 */
    kv_u32("bad.\xc3(key", 1);       /* at byte 24 + 33 = 57; byte 4 starts a 2-byte sequence,
                                          byte 5 does not continue it */
    nf_source *s = open_kvs("badkey.gguf");
    uint8_t *text = NULL;
    size_t len = 0;
    nf_error err = {0};
    cr_assert_eq(nf_gguf_metadata_text(s, &text, &len, &err), NF_ERR_INVALID);
    cr_assert_null(text);
    char *path = sw_path(g_dir, "badkey.gguf");
    char want[4200];
    snprintf(want, sizeof want, "%s: the metadata key at byte 57 is not UTF-8 (byte 4 of it)", path);
    cr_assert_str_eq(err.message, want);
    free(path);
    nf_source_close(s);
}
