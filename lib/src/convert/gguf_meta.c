/* A GGUF file's metadata kept in the artifact (docs/ninfer-convert.md, "GGUF metadata"): every
 * key/value pair with its type as the resource gguf_metadata.json of the text component, and
 * the hyperparameters that have a config.json equivalent as the component's config.  Without
 * them a runtime has neither the tokenizer (tokenizer.ggml.*, arrays of 10^5 strings in real
 * files) nor the chat template nor the architecture's sizes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/escape.h>

#include "common/buf.h"
#include "common/json_walk.h"
#include "common/utf8.h"
#include "convert/convert_impl.h"

static nf_status nomem(nf_error *err) { return nf_error_set(err, NF_ERR_NOMEM, "out of memory"); }

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
#define METADATA_DUMP (JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17) | JSON_ENCODE_ANY)

/* v's compact text appended (v consumed); false without memory. */
static bool put_json(nf_buf *b, json_t *v)
{
    size_t len = 0;
    char *text = v ? nf_jw_dump(v, METADATA_DUMP, 0, &len) : NULL;
    json_decref(v);
    bool ok = text && nf_buf_append(b, text, len);
    free(text);
    return ok;
}

static bool put_text(nf_buf *b, const char *s) { return nf_buf_append(b, s, strlen(s)); }

/* KEY:{"type":T,"value":V} or, for an array, KEY:{"type":"array","element_type":T,"value":[...]},
 * written an element at a time: an array of 2^26 values is its text, never a tree of 2^26
 * values (docs/security.md: no input makes a reader allocate far more than its size).
 * NF_ERR_INVALID for a value the accessors refuse or text beyond the cap. */
static nf_status put_pair(nf_buf *b, const nf_source *s, const nf_gguf_kv *kv, nf_error *err)
{
    bool array = kv->type == NF_GGUF_ARRAY;
    bool ok = put_json(b, json_string(kv->key)) && put_text(b, ":{\"type\":") &&
              put_json(b, json_string(nf_gguf_type_name(kv->type)));
    if (ok && array)
        ok = put_text(b, ",\"element_type\":") && put_json(b, json_string(nf_gguf_type_name(kv->elem_type)));
    ok = ok && put_text(b, array ? ",\"value\":[" : ",\"value\":");
    for (uint64_t i = 0; ok && i < kv->count; i++) {
        nf_error e;
        nf_error_clear(&e);
        json_t *v = element(kv, i, &e);
        if (!v && e.message[0])
            return nf_error_set(err, NF_ERR_INVALID, "%s: metadata key '%s': %s", nf_source_path(s), kv->key, e.message);
        ok = (i == 0 || put_text(b, ",")) && put_json(b, v);
        if (ok && b->len > METADATA_MAX)
            return nf_error_set(err, NF_ERR_INVALID, "%s: its metadata is more than %zu MiB as JSON (at key '%s'); "
                                "leave it out with --no-resources or defaults: {gguf_metadata: drop}",
                                nf_source_path(s), METADATA_MAX >> 20, kv->key);
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
        return nf_error_set(err, NF_ERR_INVALID, "%s: tensor %zu ('%s'): its name is not UTF-8 (byte %zu of it), and an "
                            "artifact's object names are; rename the tensor in the file", nf_source_file_path(s, t->file),
                            i, nf_esc(t->name).s, bad);
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
