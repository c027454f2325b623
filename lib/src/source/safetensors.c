/* safetensors header parser (docs/security.md 2.2).
 *
 * File = u64 LE header length N, N bytes of UTF-8 JSON (an object, possibly right-padded with
 * spaces), then the data buffer.  The JSON is tokenized by jansson with duplicate members
 * rejected; every rule of the upstream reader is then checked with U64 arithmetic that cannot
 * wrap: known dtype, non-negative integer shape and offsets, begin <= end, element and bit
 * counts by checked multiplication, whole bytes for sub-byte dtypes, end - begin equal to the
 * tensor's size, and - sorted by offset - a first begin of 0, each begin equal to the previous
 * end and a last end equal to the buffer's length (no overlap, no hole, no trailing bytes).
 *
 * Before jansson sees the text a linear pre-scan bounds what it would build: nesting deeper than
 * a safetensors header goes, arrays longer than a shape can be, and more entries than the tensor
 * cap, or more __metadata__ pairs than NF_ST_MAX_METADATA_ENTRIES are refused, so a 100 MB header
 * cannot balloon into gigabytes of JSON nodes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/checked.h"
#include "common/fail.h"
#include "common/json_string.h"
#include "source/safetensors.h"
#include "source/store.h"

typedef struct st_dtype_info {
    const char *name;
    unsigned bits;
} st_dtype_info;

/* In nf_st_dtype order. */
static const st_dtype_info dtype_table[NF_ST_DTYPE_COUNT] = {
    {"BOOL", 8},        {"U8", 8},          {"I8", 8},      {"F8_E5M2", 8}, {"F8_E4M3", 8}, {"F8_E8M0", 8},
    {"F8_E4M3FNUZ", 8}, {"F8_E5M2FNUZ", 8}, {"I16", 16},    {"U16", 16},    {"F16", 16},    {"BF16", 16},
    {"I32", 32},        {"U32", 32},        {"F32", 32},    {"C64", 64},    {"F64", 64},    {"I64", 64},
    {"U64", 64},        {"F4", 4},          {"F6_E2M3", 6}, {"F6_E3M2", 6},
};

const char *nf_st_dtype_name(nf_st_dtype dtype)
{
    return dtype >= 0 && dtype < NF_ST_DTYPE_COUNT ? dtype_table[dtype].name : NULL;
}

unsigned nf_st_dtype_bits(nf_st_dtype dtype)
{
    return dtype >= 0 && dtype < NF_ST_DTYPE_COUNT ? dtype_table[dtype].bits : 0;
}

bool nf_st_dtype_lookup(const char *name, nf_st_dtype *out)
{
    if (!name) return false;
    for (int i = 0; i < NF_ST_DTYPE_COUNT; i++) {
        if (strcmp(dtype_table[i].name, name) == 0) {
            if (out) *out = (nf_st_dtype)i;
            return true;
        }
    }
    return false;
}

/* Storage block of a dtype: the fewest elements that fill whole bytes. */
static void dtype_block(nf_st_dtype d, uint32_t *values, uint32_t *bytes)
{
    unsigned bits = dtype_table[d].bits;
    if (bits == 4) {
        *values = 2;
        *bytes = 1;
    } else if (bits == 6) {
        *values = 4;
        *bytes = 3;
    } else {
        *values = 1;
        *bytes = bits / 8;
    }
}

static bool dtype_convertible(nf_st_dtype d)
{
    switch (d) {
    case NF_ST_F64:
    case NF_ST_F32:
    case NF_ST_F16:
    case NF_ST_BF16:
    case NF_ST_F8_E4M3:
    case NF_ST_F8_E5M2:
    case NF_ST_I8:
    case NF_ST_U8:
    case NF_ST_I16:
    case NF_ST_I32:
    case NF_ST_I64:
    case NF_ST_BOOL: return true;
    default: return false;
    }
}

void nf_source_st_set_dtype(nf_source_tensor *t, nf_st_dtype d)
{
    t->dtype = d;
    t->type_name = dtype_table[d].name;
    dtype_block(d, &t->block_values, &t->block_bytes);
    t->convertible = dtype_convertible(d);
}

/* ---------------------------------------------------------------- pre-scan */
#define ST_MAX_DEPTH 3 /* {name: {"shape": [...]}} */

/* Returns NF_OK when the text stays within the bounds (or is malformed in a way jansson will
 * report with a better message). */
static nf_status prescan(const char *fname, const uint8_t *p, size_t n, nf_error *err)
{
    unsigned depth = 0;
    bool is_array[ST_MAX_DEPTH + 1] = {false};
    uint64_t commas[ST_MAX_DEPTH + 1] = {0};
    uint64_t entries = 0, members = 0; /* depth-2 containers; commas between depth-2 object members */
    for (size_t i = 0; i < n; i++) {
        uint8_t c = p[i];
        switch (c) {
        case '"': /* stepped over; one not closed holds the rest of the text */
            if (!nf_json_string_end((const char *)p, n, i, &i)) return NF_OK;
            i--; /* (the loop steps past the closing quote) */
            break;
        case '{':
        case '[':
            if (depth == ST_MAX_DEPTH)
                return nf_error_set(err, NF_ERR_INVALID,
                                    "%s: header byte %llu: JSON nested deeper than %d levels "
                                    "(a safetensors header is {name: {\"shape\": [...], ...}})",
                                    fname, (unsigned long long)(8 + i), ST_MAX_DEPTH);
            depth++;
            is_array[depth] = c == '[';
            commas[depth] = 0;
            if (depth == 2 && ++entries > (uint64_t)NF_SOURCE_MAX_TENSORS + 1)
                return nf_error_set(err, NF_ERR_INVALID,
                                    "%s: header byte %llu: more than %u tensor entries (the "
                                    "reader's cap)",
                                    fname, (unsigned long long)(8 + i), NF_SOURCE_MAX_TENSORS);
            break;
        case '}':
        case ']':
            if (depth == 0) return NF_OK; /* unbalanced: jansson says where */
            depth--;
            break;
        case ',':
            /* A tensor entry has 3 members (2 commas); the rest are __metadata__ pairs (or
             * members an entry must not have), capped before jansson builds a node for each. */
            if (depth == 2 && !is_array[depth] && ++members > 2 * entries + NF_ST_MAX_METADATA_ENTRIES)
                return nf_error_set(err, NF_ERR_INVALID,
                                    "%s: header byte %llu: more than %u __metadata__ entries "
                                    "(the reader's cap)",
                                    fname, (unsigned long long)(8 + i), NF_ST_MAX_METADATA_ENTRIES);
            if (depth > 0 && is_array[depth] && ++commas[depth] >= NF_SOURCE_MAX_RANK)
                return nf_error_set(err, NF_ERR_INVALID,
                                    "%s: header byte %llu: array of more than %u elements (a "
                                    "shape has at most %u dimensions)",
                                    fname, (unsigned long long)(8 + i), NF_SOURCE_MAX_RANK, NF_SOURCE_MAX_RANK);
            break;
        default: break;
        }
    }
    return NF_OK;
}

/* ---------------------------------------------------------------- entries */
typedef struct st_entry {
    const char *name; /* jansson's key (valid while the root lives) */
    nf_st_dtype dtype;
    uint32_t rank;
    uint64_t shape[NF_SOURCE_MAX_RANK];
    uint64_t elements, bytes, begin, end;
    uint64_t at; /* file byte of its key */
} st_entry;

static int cmp_entry(const void *a, const void *b)
{
    const st_entry *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* A non-negative JSON integer (jansson refuses integers beyond int64 while tokenizing). */
static bool get_u64(const json_t *v, uint64_t *out)
{
    if (!json_is_integer(v)) return false;
    json_int_t i = json_integer_value(v);
    if (i < 0) return false;
    *out = (uint64_t)i;
    return true;
}

static const char *json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "a JSON value";
}

/* where: "<file>: header byte <position of the tensor's key>", the prefix of every message. */
static nf_status parse_entry(const char *where, const char *name, const json_t *v, st_entry *e, nf_error *err)
{
    size_t nlen = strlen(name);
    if (nlen == 0) return nf_error_set(err, NF_ERR_INVALID, "%s: empty tensor name", where);
    if (nlen > NF_SOURCE_MAX_NAME_BYTES)
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: tensor name of %zu bytes ('%.40s...'), more than the "
                            "reader's cap of %u",
                            where, nlen, name, NF_SOURCE_MAX_NAME_BYTES);
    if (!json_is_object(v))
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: tensor '%s': entry is %s, expected an object {dtype, "
                            "shape, data_offsets}",
                            where, name, json_kind(v));
    const json_t *dt = json_object_get(v, "dtype"), *sh = json_object_get(v, "shape"),
                 *off = json_object_get(v, "data_offsets");
    if (!dt || !sh || !off)
        return nf_error_set(err, NF_ERR_INVALID, "%s: tensor '%s': missing \"%s\"", where, name,
                            !dt   ? "dtype"
                            : !sh ? "shape"
                                  : "data_offsets");
    if (json_object_size(v) != 3) {
        const char *k;
        const json_t *x;
        json_object_foreach((json_t *)v, k, x)
        {
            if (strcmp(k, "dtype") != 0 && strcmp(k, "shape") != 0 && strcmp(k, "data_offsets") != 0)
                return nf_error_set(err, NF_ERR_INVALID, "%s: tensor '%s': unknown member \"%s\"", where, name, k);
        }
    }
    e->name = name;
    if (!json_is_string(dt))
        return nf_error_set(err, NF_ERR_INVALID, "%s: tensor '%s': dtype is %s, expected a string", where, name,
                            json_kind(dt));
    if (!nf_st_dtype_lookup(json_string_value(dt), &e->dtype))
        return nf_error_set(err, NF_ERR_INVALID, "%s: tensor '%s': unknown dtype \"%s\"", where, name,
                            json_string_value(dt));
    if (!json_is_array(sh))
        return nf_error_set(err, NF_ERR_INVALID, "%s: tensor '%s': shape is %s, expected an array", where, name,
                            json_kind(sh));
    size_t rank = json_array_size(sh);
    if (rank > NF_SOURCE_MAX_RANK)
        return nf_error_set(err, NF_ERR_INVALID, "%s: tensor '%s': rank %zu exceeds the reader's cap of %u", where,
                            name, rank, NF_SOURCE_MAX_RANK);
    e->rank = (uint32_t)rank;
    e->elements = 1;
    for (size_t i = 0; i < rank; i++) {
        const json_t *d = json_array_get(sh, i);
        if (!get_u64(d, &e->shape[i]))
            return nf_error_set(err, NF_ERR_INVALID,
                                "%s: tensor '%s': shape[%zu] is %s%s, expected a "
                                "non-negative integer",
                                where, name, i, json_kind(d), json_is_integer(d) ? " below 0" : "");
        if (!nf_mul_u64(e->elements, e->shape[i], &e->elements))
            return nf_error_set(err, NF_ERR_INVALID,
                                "%s: tensor '%s': element count of the shape overflows "
                                "U64",
                                where, name);
    }
    if (!json_is_array(off) || json_array_size(off) != 2)
        return nf_error_set(err, NF_ERR_INVALID, "%s: tensor '%s': data_offsets is %s, expected [begin, end]", where,
                            name, json_is_array(off) ? "an array of the wrong length" : json_kind(off));
    for (size_t i = 0; i < 2; i++) {
        const json_t *o = json_array_get(off, i);
        if (!get_u64(o, i == 0 ? &e->begin : &e->end))
            return nf_error_set(err, NF_ERR_INVALID,
                                "%s: tensor '%s': data_offsets[%zu] is %s%s, expected a "
                                "non-negative integer",
                                where, name, i, json_kind(o), json_is_integer(o) ? " below 0" : "");
    }
    if (e->end < e->begin)
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: tensor '%s': data_offsets [%llu, %llu] end before they "
                            "begin",
                            where, name, (unsigned long long)e->begin, (unsigned long long)e->end);
    uint64_t bits;
    if (!nf_mul_u64(e->elements, dtype_table[e->dtype].bits, &bits))
        return nf_error_set(err, NF_ERR_INVALID, "%s: tensor '%s': %s size of the shape overflows U64", where, name,
                            dtype_table[e->dtype].name);
    if (bits % 8 != 0)
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: tensor '%s': %llu %s elements do not end on a byte "
                            "boundary (misaligned slice)",
                            where, name, (unsigned long long)e->elements, dtype_table[e->dtype].name);
    e->bytes = bits / 8;
    if (e->end - e->begin != e->bytes)
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: tensor '%s': data_offsets [%llu, %llu] hold %llu bytes "
                            "but %s with %llu elements needs %llu",
                            where, name, (unsigned long long)e->begin, (unsigned long long)e->end,
                            (unsigned long long)(e->end - e->begin), dtype_table[e->dtype].name,
                            (unsigned long long)e->elements, (unsigned long long)e->bytes);
    return NF_OK;
}

static nf_status parse_metadata(nf_source *s, src_file *f, const char *where, const json_t *meta, nf_error *err)
{
    if (!json_is_object(meta))
        return nf_error_set(err, NF_ERR_INVALID, "%s: __metadata__ is %s, expected an object of strings", where,
                            json_kind(meta));
    size_t n = json_object_size(meta);
    f->meta_keys = nf_source_arena_alloc(&s->arena, (n ? n : 1) * sizeof(char *));
    f->meta_values = nf_source_arena_alloc(&s->arena, (n ? n : 1) * sizeof(char *));
    if (!f->meta_keys || !f->meta_values) return nf_common_nomem_in(err, f->path);
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)meta, k, v)
    {
        if (!json_is_string(v))
            return nf_error_set(err, NF_ERR_INVALID, "%s: __metadata__[\"%s\"] is %s, expected a string", where, k,
                                json_kind(v));
        const char *kc = nf_source_arena_strndup(&s->arena, k, strlen(k));
        const char *vc = nf_source_arena_strndup(&s->arena, json_string_value(v), json_string_length(v));
        if (!kc || !vc) return nf_common_nomem_in(err, f->path);
        f->meta_keys[f->nmeta] = kc;
        f->meta_values[f->nmeta] = vc;
        f->nmeta++;
    }
    return NF_OK;
}

/* File byte of each top-level key, in order (valid JSON only: called after jansson accepted the
 * text, whose object iteration follows insertion order), so that messages can point at the
 * entry they are about. */
static void key_positions(const uint8_t *p, size_t n, uint64_t *pos, size_t count)
{
    unsigned depth = 0;
    bool expect_key = false;
    size_t k = 0;
    for (size_t i = 0; i < n && k < count; i++) {
        uint8_t c = p[i];
        if (c == '"') {
            if (depth == 1 && expect_key) {
                pos[k++] = 8 + (uint64_t)i;
                expect_key = false;
            }
            if (!nf_json_string_end((const char *)p, n, i, &i)) break;
            i--; /* (the loop steps past the closing quote) */
        } else if (c == '{' || c == '[') {
            if (++depth == 1) expect_key = true;
        } else if (c == '}' || c == ']') {
            if (depth > 0) depth--;
        } else if (c == ',' && depth == 1) {
            expect_key = true;
        }
    }
    for (; k < count; k++) pos[k] = 8;
}

/* Check the JSON header text (hdr, n bytes, from file byte 8) against a data buffer of data_len
 * bytes and append the tensors. */
static nf_status parse_header(nf_source *s, size_t fi, const uint8_t *hdr, size_t n, uint64_t data_len, nf_error *err)
{
    src_file *f = &s->files[fi];
    const char *fname = f->path;
    if (n == 0 || hdr[0] != '{')
        return nf_error_set(err, NF_ERR_INVALID, "%s: header byte 8: the JSON header must start with '{'%s", fname,
                            n == 0 ? " (header length is 0)" : "");
    NF_TRY(prescan(fname, hdr, n, err));
    json_error_t je;
    json_t *root = json_loadb((const char *)hdr, n, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return nf_error_set(err, NF_ERR_INVALID, "%s: header byte %llu (JSON line %d, column %d): %s", fname,
                            (unsigned long long)(8 + (je.position > 0 ? (uint64_t)je.position : 0)), je.line, je.column,
                            je.text);
    nf_status rc = NF_OK;
    st_entry *entries = NULL;
    uint64_t *keypos = NULL;
    size_t count = 0, member = 0;
    char where[NF_ERROR_MESSAGE_MAX];
    if (!json_is_object(root)) {
        rc = nf_error_set(err, NF_ERR_INVALID, "%s: header is %s, expected a JSON object", fname, json_kind(root));
        goto done;
    }
    size_t members = json_object_size(root);
    entries = malloc((members ? members : 1) * sizeof *entries);
    keypos = malloc((members ? members : 1) * sizeof *keypos);
    if (!entries || !keypos) {
        rc = nf_error_set(err, NF_ERR_NOMEM, "%s: out of memory for %zu header entries", fname, members);
        goto done;
    }
    const char *key;
    json_t *v;
    key_positions(hdr, n, keypos, members);
    json_object_foreach(root, key, v)
    {
        snprintf(where, sizeof where, "%s: header byte %llu", fname, (unsigned long long)keypos[member++]);
        if (strcmp(key, "__metadata__") == 0) {
            rc = parse_metadata(s, f, where, v, err);
        } else {
            rc = parse_entry(where, key, v, &entries[count], err);
            entries[count].at = keypos[member - 1];
            count++;
        }
        if (rc != NF_OK) goto done;
    }
    qsort(entries, count, sizeof *entries, cmp_entry);
    /* Contiguity: sorted by offset, each tensor starts where the previous one ended. */
    uint64_t pos = 0;
    const char *prev = NULL;
    for (size_t i = 0; i < count; i++) {
        const st_entry *e = &entries[i];
        if (e->begin < pos) {
            rc = nf_error_set(err, NF_ERR_INVALID,
                              "%s: header byte %llu: tensor '%s': data_offsets [%llu, %llu] "
                              "overlap tensor '%s', which ends at %llu (file bytes from %llu)",
                              fname, (unsigned long long)e->at, e->name, (unsigned long long)e->begin,
                              (unsigned long long)e->end, prev, (unsigned long long)pos,
                              (unsigned long long)(8 + n + e->begin));
            goto done;
        }
        if (e->begin > pos) {
            rc = nf_error_set(err, NF_ERR_INVALID,
                              "%s: header byte %llu: tensor '%s': data_offsets [%llu, %llu] "
                              "leave a hole of %llu bytes after %s%s%s (file bytes [%llu, %llu) belong to no "
                              "tensor)",
                              fname, (unsigned long long)e->at, e->name, (unsigned long long)e->begin,
                              (unsigned long long)e->end, (unsigned long long)(e->begin - pos),
                              prev ? "tensor '" : "the header", prev ? prev : "", prev ? "'" : "",
                              (unsigned long long)(8 + n + pos), (unsigned long long)(8 + n + e->begin));
            goto done;
        }
        if (e->end > data_len) {
            rc = nf_error_set(err, NF_ERR_INVALID,
                              "%s: header byte %llu: tensor '%s': data_offsets [%llu, %llu] run "
                              "past the end of the data buffer (%llu bytes; file size %llu)",
                              fname, (unsigned long long)e->at, e->name, (unsigned long long)e->begin,
                              (unsigned long long)e->end, (unsigned long long)data_len, (unsigned long long)f->size);
            goto done;
        }
        pos = e->end;
        prev = e->name;
    }
    if (pos != data_len) {
        rc = nf_error_set(err, NF_ERR_INVALID,
                          "%s: %llu trailing bytes after the last tensor: the tensors cover "
                          "data bytes [0, %llu) of %llu (file bytes from %llu belong to no tensor)",
                          fname, (unsigned long long)(data_len - pos), (unsigned long long)pos,
                          (unsigned long long)data_len, (unsigned long long)(8 + n + pos));
        goto done;
    }
    for (size_t i = 0; i < count; i++) {
        const st_entry *e = &entries[i];
        src_tensor *st;
        if ((rc = nf_source_add_tensor(s, fname, &st, err)) != NF_OK) goto done;
        nf_source_tensor *t = &st->pub;
        uint64_t *shape = nf_source_arena_alloc(&s->arena, (e->rank ? e->rank : 1) * sizeof(uint64_t));
        t->name = nf_source_arena_strndup(&s->arena, e->name, strlen(e->name));
        if (!shape || !t->name) {
            rc = nf_common_nomem_in(err, fname);
            goto done;
        }
        shape[0] = 0; /* defined even for rank 0 */
        if (e->rank) memcpy(shape, e->shape, e->rank * sizeof(uint64_t));
        t->shape = shape;
        t->rank = e->rank;
        nf_source_st_set_dtype(t, e->dtype);
        t->elements = e->elements;
        t->row_elements = e->rank ? e->shape[e->rank - 1] : 1;
        /* Checked even though elements bounds it when non-zero: with a zero last dimension the
         * leading product is bounded by nothing. */
        t->rows = 1;
        for (uint32_t d = 0; d + 1 < e->rank; d++)
            if (!nf_mul_u64(t->rows, e->shape[d], &t->rows)) {
                rc = nf_error_set(err, NF_ERR_INVALID, "%s: tensor '%s': row count of the shape overflows U64", fname,
                                  e->name);
                goto done;
            }
        t->row_bytes = t->row_elements % t->block_values == 0 ? t->row_elements / t->block_values * t->block_bytes : 0;
        t->bytes = e->bytes;
        t->file = fi;
        t->offset = 8 + n + e->begin; /* <= file size, checked above */
    }
done:
    free(keypos);
    free(entries);
    json_decref(root);
    return rc;
}

nf_status nf_source_st_parse(nf_source *s, size_t fi, nf_error *err)
{
    src_file *f = &s->files[fi];
    if (f->size < 8)
        return nf_error_set(err, NF_ERR_INVALID, "%s: %llu bytes, too short for the 8-byte safetensors header length",
                            f->path, (unsigned long long)f->size);
    uint8_t prefix[8];
    NF_TRY(nf_source_file_read(f, 0, prefix, 8, err));
    uint64_t n = src_rd64(prefix);
    if (n > NF_ST_MAX_HEADER_BYTES)
        return nf_error_set(err, NF_ERR_INVALID, "%s: byte 0: header length %llu exceeds the cap of %u bytes", f->path,
                            (unsigned long long)n, NF_ST_MAX_HEADER_BYTES);
    if (n > f->size - 8)
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: byte 0: header length %llu runs past the end of the file (%llu "
                            "bytes, so at most %llu)",
                            f->path, (unsigned long long)n, (unsigned long long)f->size,
                            (unsigned long long)(f->size - 8));
    size_t len = (size_t)n; /* <= 100,000,000 */
    uint64_t data_len = f->size - 8 - n;
    if (f->mem) return parse_header(s, fi, f->mem + 8, len, data_len, err);
    uint8_t *hdr = malloc(len ? len : 1);
    if (!hdr) return nf_error_set(err, NF_ERR_NOMEM, "%s: out of memory for a %zu-byte header", f->path, len);
    nf_status rc = nf_source_file_read(f, 8, hdr, len, err);
    if (rc == NF_OK) rc = parse_header(s, fi, hdr, len, data_len, err);
    free(hdr);
    return rc;
}
