/* bitsandbytes weights in the scan (ninfer/dialect.h, docs/dialects.md "bitsandbytes"), as
 * transformers saves a model loaded in 4 or 8 bits:
 *   4-bit  <p>.weight U8 [ceil(N*K/2), 1], the row-major flattened weight's 4-bit indices two a
 *          byte (the first in the high nibble); <p>.weight.absmax, one per block of the flattened
 *          weight (F32, or U8 under double quantization with <p>.weight.nested_absmax F32 and
 *          <p>.weight.nested_quant_map F32 [256]); <p>.weight.quant_map F32 [16]; and
 *          <p>.weight.quant_state.bitsandbytes__nf4 (or __fp4), U8 bytes of the JSON object
 *          {quant_type, blocksize, dtype, shape[, nested_blocksize, nested_dtype, nested_offset]}.
 *   8-bit  <p>.weight I8 [N, K] with <p>.SCB F32 [N] (and <p>.weight_format U8, 0: row-major).
 * Every size the JSON state gives is checked against the tensors, so no read can go astray. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/checked.h"
#include "common/fail.h"
#include "dialect/dialect_internal.h"

/* A JSON state larger than this is no bitsandbytes state (real ones are about 200 bytes). */
#define BNB_STATE_MAX 65536u

static uint64_t cdiv(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

static const nf_source_tensor *beside(const nf_source *src, const char *base, const char *suffix)
{
    char name[2048];
    if ((size_t)snprintf(name, sizeof name, "%s%s", base, suffix) >= sizeof name) return NULL;
    return nf_source_find(src, name);
}

/* The quant_state tensor of a 4-bit <p>.weight, and its type ("nf4", "fp4"). */
static const nf_source_tensor *state_of(const nf_source *src, const nf_source_tensor *w, const char **type)
{
    const nf_source_tensor *t = beside(src, w->name, ".quant_state.bitsandbytes__nf4");
    *type = "nf4";
    if (!t) {
        t = beside(src, w->name, ".quant_state.bitsandbytes__fp4");
        *type = "fp4";
    }
    return t;
}

static bool is_weight(const nf_source_tensor *t)
{
    size_t n = strlen(t->name);
    return n > 7 && !strcmp(t->name + n - 7, ".weight");
}

/* A positive integer member of the state, at most max. */
static bool state_uint(const json_t *o, const char *key, uint64_t max, uint64_t *out)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) <= 0 || (uint64_t)json_integer_value(v) > max) return false;
    *out = (uint64_t)json_integer_value(v);
    return true;
}

/* "bfloat16", "float16", "float32" (older bitsandbytes: "torch.bfloat16") as a dtype; -1 else. */
static int state_dtype(const json_t *v)
{
    const char *s = json_is_string(v) ? json_string_value(v) : "";
    if (!strncmp(s, "torch.", 6)) s += 6;
    return !strcmp(s, "bfloat16")  ? NF_ST_BF16
           : !strcmp(s, "float16") ? NF_ST_F16
           : !strcmp(s, "float32") ? NF_ST_F32
                                   : -1;
}

/* Does t hold `count` elements of dtype (any shape)? */
static bool holds(const nf_source_tensor *t, nf_st_dtype dtype, uint64_t count)
{
    return t && t->dtype == dtype && t->elements == count;
}

static nf_status bnb4_weight(nf_dialects *d, const nf_source_tensor *w, const nf_source_tensor *st, const char *type,
                             nf_qweight *q, nf_error *err)
{
    const nf_source *src = d->src;
    if (st->dtype != NF_ST_U8 || st->rank != 1 || st->elements == 0 || st->elements > BNB_STATE_MAX)
        return nf_dialect_fail(err, src, st, "%s with %" PRIu64 " elements: a bitsandbytes state is U8 bytes of JSON",
                               st->type_name, st->elements);
    char *text = malloc((size_t)st->elements + 1);
    if (!text) return nf_common_nomem(err);
    nf_status s = nf_source_read_bytes(src, st, 0, text, (size_t)st->elements, err);
    json_error_t je;
    json_t *j = s == NF_OK ? json_loadb(text, (size_t)st->elements, JSON_REJECT_DUPLICATES, &je) : NULL;
    free(text);
    if (s != NF_OK) return s;
    if (!json_is_object(j)) {
        json_decref(j);
        return nf_dialect_fail(err, src, st, "not a JSON object: %s", j ? "another JSON value" : je.text);
    }
    const json_t *qt = json_object_get(j, "quant_type"), *shape = json_object_get(j, "shape");
    uint64_t block = 0, nested_block = 0, n = 0, k = 0;
    const char *why = NULL;
    int dtype = state_dtype(json_object_get(j, "dtype"));
    if (!json_is_string(qt) || strcmp(json_string_value(qt), type) != 0) why = "quant_type is not the name's";
    else if (!state_uint(j, "blocksize", 1u << 20, &block) || (block & (block - 1)) || block < 16)
        why = "blocksize is not a power of two from 16 to 2^20";
    else if (dtype < 0) why = "dtype is not bfloat16, float16 or float32";
    else if (!json_is_array(shape) || json_array_size(shape) != 2 || !json_is_integer(json_array_get(shape, 0)) ||
             !json_is_integer(json_array_get(shape, 1)) || json_integer_value(json_array_get(shape, 0)) <= 0 ||
             json_integer_value(json_array_get(shape, 1)) <= 0)
        why = "shape is not two positive integers [N, K]";
    if (!why) {
        n = (uint64_t)json_integer_value(json_array_get(shape, 0));
        k = (uint64_t)json_integer_value(json_array_get(shape, 1));
    }
    uint64_t elements = 0;
    if (!why && (!nf_mul_u64(n, k, &elements) || elements > ((uint64_t)1 << 50))) why = "shape [N, K] overflows";
    const nf_source_tensor *absmax = beside(src, w->name, ".absmax"), *map = beside(src, w->name, ".quant_map");
    const nf_source_tensor *nabs = beside(src, w->name, ".nested_absmax"),
                           *nmap = beside(src, w->name, ".nested_quant_map");
    const json_t *off = json_object_get(j, "nested_offset");
    const bool nested = nabs || nmap || json_object_get(j, "nested_blocksize");
    float offset = 0.0f;
    if (!why && nested) {
        if (!state_uint(j, "nested_blocksize", 1u << 20, &nested_block))
            why = "nested_blocksize is not a positive integer";
        else if (!json_is_number(off) || !isfinite((float)json_number_value(off)))
            why = "nested_offset is not a finite number";
        else if (state_dtype(json_object_get(j, "nested_dtype")) != NF_ST_F32) why = "nested_dtype is not float32";
        else offset = (float)json_number_value(off); /* torch.tensor(float): binary32, nearest */
    }
    char shp[64];
    snprintf(shp, sizeof shp, "[%" PRIu64 ",%" PRIu64 "]", n, k);
    json_decref(j);
    if (why) return nf_dialect_fail(err, src, st, "%s", why);
    const uint64_t blocks = cdiv(elements, block);
    if (w->elements != cdiv(elements, 2) || w->rank < 1)
        return nf_dialect_fail(err, src, w,
                               "%" PRIu64 " bytes, but its state's shape %s needs %" PRIu64 " (two 4-bit codes a byte)",
                               w->elements, shp, cdiv(elements, 2));
    if (!map || map->dtype != NF_ST_F32 || map->elements != 16)
        return nf_dialect_fail(err, src, w, "its .quant_map (F32 [16], the code table) is %s",
                               map ? "not F32 [16]" : "in no shard");
    if (!absmax || !holds(absmax, nested ? NF_ST_U8 : NF_ST_F32, blocks))
        return nf_dialect_fail(err, src, absmax ? absmax : w,
                               "%s: the state's shape %s in blocks of %" PRIu64 " needs %" PRIu64 " %s absmax values",
                               absmax ? "its shape or dtype does not fit" : "its .absmax is in no shard", shp, block,
                               blocks, nested ? "U8 (double-quantized)" : "F32");
    if (nested && (!holds(nabs, NF_ST_F32, cdiv(blocks, nested_block)) || !holds(nmap, NF_ST_F32, 256)))
        return nf_dialect_fail(err, src, w,
                               "double quantization needs .nested_absmax F32 [%" PRIu64 "] and .nested_quant_map F32 "
                               "[256] beside it",
                               cdiv(blocks, nested_block));
    NF_TRY(nf_dialect_check_marker(d, DECL_BNB, -1, w, "bitsandbytes codes", err));
    q->dialect = NF_DIALECT_BNB_4BIT;
    q->pack = NF_QPACK_BNB;
    q->codes = w;
    q->scale = absmax;
    q->shape_tensor = st;
    q->quant_map = map;
    q->nested_absmax = nabs;
    q->nested_quant_map = nmap;
    q->nested_block = nested_block;
    memcpy(&q->nested_offset_bits, &offset, 4);
    q->value_dtype = dtype;
    q->codes_kind = NF_QCODES_BNB4;
    q->bits = 4;
    q->shape[0] = n;
    q->shape[1] = k;
    q->strategy = "block";
    q->block_rows = 1;
    q->block_cols = block;
    q->scale_rows = 1;
    q->scale_cols = blocks;
    q->symmetric = -1;
    return NF_OK;
}

static nf_status bnb8_weight(nf_dialects *d, const nf_source_tensor *w, const nf_source_tensor *scb, nf_qweight *q,
                             nf_error *err)
{
    const nf_source *src = d->src;
    if (w->rank != 2 || w->elements == 0)
        return nf_dialect_fail(err, src, w, "an LLM.int8 weight is a non-empty matrix [N, K]");
    if (scb->dtype != NF_ST_F32 || scb->elements != w->shape[0])
        return nf_dialect_fail(err, src, scb, "%s with %" PRIu64 " elements: LLM.int8's SCB is F32 [N], N = %" PRIu64,
                               scb->type_name, scb->elements, w->shape[0]);
    char name[2048];
    snprintf(name, sizeof name, "%.*sweight_format", (int)(strlen(w->name) - 6), w->name);
    const nf_source_tensor *fmt = nf_source_find(src, name);
    if (fmt) { /* transformers writes 0 (row-major); col32 and the GPU tile orders are other layouts */
        uint8_t b = 0;
        if (fmt->dtype != NF_ST_U8 || fmt->elements != 1)
            return nf_dialect_fail(err, src, fmt, "a weight_format is one U8 (0: row-major)");
        NF_TRY(nf_source_read_bytes(src, fmt, 0, &b, 1, err));
        if (b != 0)
            return nf_dialect_fail(err, src, fmt,
                                   "%u: only format 0 (row-major) is read; col32 and the tiled "
                                   "GPU formats are not",
                                   b);
    }
    NF_TRY(nf_dialect_check_marker(d, DECL_BNB, -1, w, "bitsandbytes codes", err));
    q->dialect = NF_DIALECT_BNB_INT8;
    q->pack = NF_QPACK_BNB;
    q->codes = w;
    q->scale = scb;
    q->shape_tensor = fmt;
    q->codes_kind = NF_QCODES_INT8;
    q->bits = 8;
    q->shape[0] = w->shape[0];
    q->shape[1] = w->shape[1];
    q->strategy = "channel";
    q->block_rows = 1;
    q->block_cols = w->shape[1];
    q->scale_rows = w->shape[0];
    q->scale_cols = 1;
    q->value_dtype = NF_ST_F32;
    q->symmetric = -1;
    return NF_OK;
}

/* What t is of bitsandbytes: 4 (a 4-bit weight, *state its JSON state), 8 (an int8 weight, *state
 * its SCB), or 0. */
static int kind_of(const nf_source *src, const nf_source_tensor *t, const nf_source_tensor **state, const char **type)
{
    if (!is_weight(t)) return 0;
    if (t->dtype == NF_ST_U8 && (*state = state_of(src, t, type))) return 4;
    char name[2048];
    if (t->dtype == NF_ST_I8 &&
        (size_t)snprintf(name, sizeof name, "%.*sSCB", (int)(strlen(t->name) - 6), t->name) < sizeof name &&
        (*state = nf_source_find(src, name)))
        return 8;
    return 0;
}

nf_status nf_dialect_scan_bnb(nf_dialects *d, nf_error *err)
{
    const nf_source *src = d->src;
    size_t n = nf_source_tensor_count(src), count = 0;
    const nf_source_tensor *state;
    const char *type;
    for (size_t i = 0; i < n; i++) {
        const nf_source_tensor *t = nf_source_tensor_at(src, i);
        if (kind_of(src, t, &state, &type)) {
            count++;
            continue;
        }
        /* a 4-bit weight's companion without its JSON state: the weight cannot be read */
        const char *dot = strstr(t->name, ".weight.");
        if (dot && (!strcmp(dot, ".weight.absmax") || !strcmp(dot, ".weight.quant_map"))) {
            char w[2048];
            snprintf(w, sizeof w, "%.*s.weight", (int)(dot - t->name), t->name);
            const nf_source_tensor *wt = nf_source_find(src, w);
            if (wt && wt->dtype == NF_ST_U8 && !state_of(src, wt, &type))
                return nf_dialect_fail(err, src, t,
                                       "a bitsandbytes 4-bit companion, but %s.quant_state.bitsandbytes__nf4 (or "
                                       "__fp4), the JSON state that gives the weight's shape, is in no shard",
                                       w);
        }
    }
    NF_TRY(nf_dialect_grow(d, count, err));
    for (size_t i = 0; i < n; i++) {
        const nf_source_tensor *t = nf_source_tensor_at(src, i);
        nf_qweight q = {0};
        int kind = kind_of(src, t, &state, &type);
        if (kind == 4) NF_TRY(bnb4_weight(d, t, state, type, &q, err));
        else if (kind == 8) NF_TRY(bnb8_weight(d, t, state, &q, err));
        else continue;
        nf_dialect_add(d, &q);
    }
    return NF_OK;
}
