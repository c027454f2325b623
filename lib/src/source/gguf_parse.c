/* GGUF v2/v3 parser (docs/security.md 2.3).
 *
 * Little-endian: magic "GGUF", u32 version, u64 n_tensors, u64 n_kv, the key/value pairs, the
 * tensor infos, padding to general.alignment, the data section.  Each class of the GGUF bug
 * trail is refused with its own message before it can cost anything:
 *   - counts and lengths are capped and checked against the bytes that remain *before* any
 *     allocation (a string of 2^64-1 bytes or an array of 2^40 elements in a tiny file fails
 *     at once; what gets allocated is bounded by bytes actually present, times a small factor);
 *   - v1 (32-bit counts) and versions above 3 are refused, with a hint when the version looks
 *     byte-swapped (a big-endian file);
 *   - KV types are range-checked, array element types too, and nested arrays are refused (no
 *     recursion at all); keys are non-empty, NUL-free and unique;
 *   - general.alignment must be a u32, a non-zero power of two, at most NF_GGUF_MAX_ALIGNMENT;
 *     padding is computed with checked arithmetic (GGML_PAD near 2^64 wrapped to 0 in ggml);
 *   - tensor names are 1..63 bytes (GGML_MAX_NAME 64), NUL-free and unique; n_dims <= 4; every
 *     ne is >= 1 and below 2^63 and their product fits int64 (division-based check); the type
 *     is known and has a block size; ne[0] is a multiple of it; the byte size is checked;
 *   - offsets must equal the running padded sum (no gap, no overlap, nothing misaligned), and
 *     every tensor's data must lie inside the file.
 *
 * Decisions beyond ggml's checks:
 *   - ne = 0 (an empty tensor) is refused: ggml accepts it, but nothing writes one for a weight
 *     and an importer has no rows to take from it.  n_dims = 0 is accepted as a scalar, as ggml
 *     reads it (every ne then defaults to 1).
 *   - the last tensor's padding may be missing from the file (its bytes are all present), and
 *     bytes after the data section are ignored, as ggml does.
 *   - a BOOL value is kept as stored; nf_gguf_kv_bool refuses bytes other than 0 and 1.
 *
 * The parser reads through a small window (pread) or straight from a memory image, so the
 * whole header never needs to be in memory at once; values are copied into the source's arena. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "common/fail.h"
#include "common/ggml_types.h"
#include "format/ggml.h"
#include "source/gguf_parse.h"
#include "source/store.h"

/* ---------------------------------------------------------------- ggml types */
typedef struct ggml_type_info {
    int id;
    const char *name;
    uint32_t block_values, block_bytes; /* 0, 0: removed from ggml */
} ggml_type_info;

/* common/ggml_types.h, the one table of ggml's types */
#define GGML_TYPE_ROW(id, name, values, bytes) {id, #name, values, bytes},
static const ggml_type_info ggml_types[] = {NF_GGML_TYPES(GGML_TYPE_ROW)};
#undef GGML_TYPE_ROW
#define N_GGML_TYPES (sizeof ggml_types / sizeof ggml_types[0])

static const ggml_type_info *ggml_type_find(int id)
{
    for (size_t i = 0; i < N_GGML_TYPES; i++)
        if (ggml_types[i].id == id) return &ggml_types[i];
    return NULL;
}

const char *nf_ggml_type_name(int ggml_type)
{
    const ggml_type_info *t = ggml_type_find(ggml_type);
    return t ? t->name : NULL;
}

bool nf_ggml_type_block(int ggml_type, uint32_t *block_values, uint32_t *block_bytes)
{
    const ggml_type_info *t = ggml_type_find(ggml_type);
    if (!t || t->block_values == 0) return false;
    if (block_values) *block_values = t->block_values;
    if (block_bytes) *block_bytes = t->block_bytes;
    return true;
}

/* Types nf_source_read_f32 converts. */
static bool ggml_convertible(int id)
{
    switch (id) {
    case 0:
    case 1:
    case 30:
    case 24:
    case 25:
    case 26:
    case 27:
    case 28:
    case NF_GGML_TYPE_PQ2_0: return true;
    default: return nf_format_by_ggml_type(id) != NULL || nf_ggml_values_type(id);
    }
}

/* ---------------------------------------------------------------- KV value types */
static const char *const kv_type_names[NF_GGUF_TYPE_COUNT] = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64",
};
/* Encoded size of a scalar; for STRING the minimum (its u64 length). */
static const uint8_t kv_type_size[NF_GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 8, 0, 8, 8, 8};

const char *nf_gguf_type_name(nf_gguf_type type)
{
    return (int)type >= 0 && type < NF_GGUF_TYPE_COUNT ? kv_type_names[type] : NULL;
}

/* ---------------------------------------------------------------- cursor */
#define GG_WINDOW ((size_t)64 << 10)

typedef struct gg_cur {
    nf_source *s;
    const src_file *f;
    uint64_t pos;
    uint64_t limit; /* min(file size, header cap): no header byte may lie beyond it */
    uint8_t *win;   /* file mode only */
    uint64_t win_off;
    size_t win_len;
    char ctx[200]; /* what is being read, e.g. "key 3 'general.alignment'" */
    nf_error *err;
} gg_cur;

__attribute__((format(printf, 3, 4))) static nf_status gg_fail(gg_cur *c, uint64_t at, const char *fmt, ...)
{
    char msg[NF_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return nf_error_set(c->err, NF_ERR_INVALID, "%s: byte %llu: %s%s%s", c->f->path, (unsigned long long)at, c->ctx,
                        c->ctx[0] ? ": " : "", msg);
}

static uint64_t gg_remaining(const gg_cur *c) { return c->pos < c->limit ? c->limit - c->pos : 0; }

/* Why the bytes stop: the file ends, or the header cap does. */
static nf_status gg_short(gg_cur *c, const char *what, uint64_t need)
{
    if (c->limit < c->f->size)
        return gg_fail(c, c->pos, "%s needs %llu bytes, but the header would then pass the reader's cap of %u bytes",
                       what, (unsigned long long)need, NF_GGUF_MAX_HEADER_BYTES);
    return gg_fail(c, c->pos, "truncated: %s needs %llu bytes, %llu remain in the file", what, (unsigned long long)need,
                   (unsigned long long)gg_remaining(c));
}

static nf_status gg_take(gg_cur *c, void *dst, uint64_t n, const char *what)
{
    if (n > gg_remaining(c)) return gg_short(c, what, n);
    uint8_t *d = dst;
    if (c->f->mem) {
        if (n) memcpy(d, c->f->mem + c->pos, (size_t)n);
        c->pos += n;
        return NF_OK;
    }
    uint64_t left = n;
    while (left > 0) {
        if (c->pos >= c->win_off && c->pos < c->win_off + c->win_len) {
            uint64_t avail = c->win_off + c->win_len - c->pos;
            size_t k = (size_t)(left < avail ? left : avail);
            memcpy(d, c->win + (c->pos - c->win_off), k);
            d += k;
            c->pos += k;
            left -= k;
        } else if (left >= GG_WINDOW) {
            NF_TRY(nf_source_file_read(c->f, c->pos, d, (size_t)left, c->err));
            c->pos += left;
            left = 0;
        } else {
            uint64_t k = c->f->size - c->pos;
            if (k > GG_WINDOW) k = GG_WINDOW;
            NF_TRY(nf_source_file_read(c->f, c->pos, c->win, (size_t)k, c->err));
            c->win_off = c->pos;
            c->win_len = (size_t)k;
        }
    }
    return NF_OK;
}

static nf_status gg_u32(gg_cur *c, uint32_t *v, const char *what)
{
    uint8_t b[4];
    NF_TRY(gg_take(c, b, 4, what));
    *v = src_rd32(b);
    return NF_OK;
}

static nf_status gg_u64(gg_cur *c, uint64_t *v, const char *what)
{
    uint8_t b[8];
    NF_TRY(gg_take(c, b, 8, what));
    *v = src_rd64(b);
    return NF_OK;
}

/* A GGUF string (u64 length + bytes) of at most cap bytes, copied NUL-terminated into the arena.
 * The length is checked against the cap and the remaining bytes before anything is allocated. */
static nf_status gg_string(gg_cur *c, uint64_t cap, const char *what, src_str *out)
{
    uint64_t at = c->pos;
    uint64_t len;
    NF_TRY(gg_u64(c, &len, what));
    if (len > cap)
        return gg_fail(c, at, "%s length %llu exceeds the cap of %llu bytes", what, (unsigned long long)len,
                       (unsigned long long)cap);
    if (len > gg_remaining(c)) return gg_short(c, what, len);
    char *p = nf_source_arena_alloc(&c->s->arena, (size_t)len + 1);
    if (!p) return nf_common_nomem_in(c->err, c->f->path);
    NF_TRY(gg_take(c, p, len, what));
    p[len] = '\0';
    out->p = p;
    out->len = len;
    return NF_OK;
}

/* ---------------------------------------------------------------- KVs */
static void set_ctx_kv(gg_cur *c, uint64_t i, const char *key)
{
    if (key) snprintf(c->ctx, sizeof c->ctx, "key %llu '%.120s'", (unsigned long long)i, key);
    else snprintf(c->ctx, sizeof c->ctx, "key %llu", (unsigned long long)i);
}

/* count values of type t (not ARRAY) into the arena; kv->priv_values points at them. */
static nf_status read_values(gg_cur *c, nf_gguf_type t, uint64_t count, const void **out)
{
    if (t == NF_GGUF_STRING) {
        /* count * 8 <= remaining was checked by the caller, so this table is bounded by the
         * bytes present. */
        src_str *v = nf_source_arena_alloc(&c->s->arena, (size_t)(count ? count : 1) * sizeof *v);
        if (!v) return nf_common_nomem_in(c->err, c->f->path);
        for (uint64_t i = 0; i < count; i++) {
            char what[48];
            if (count == 1) snprintf(what, sizeof what, "the string");
            else snprintf(what, sizeof what, "string %llu", (unsigned long long)i);
            NF_TRY(gg_string(c, NF_GGUF_MAX_STRING_BYTES, what, &v[i]));
        }
        *out = v;
        return NF_OK;
    }
    uint64_t bytes = count * kv_type_size[t]; /* count <= remaining / size: no overflow */
    uint8_t *v = nf_source_arena_alloc(&c->s->arena, (size_t)(bytes ? bytes : 1));
    if (!v) return nf_common_nomem_in(c->err, c->f->path);
    NF_TRY(gg_take(c, v, bytes, count == 1 ? "the value" : "the array values"));
    *out = v;
    return NF_OK;
}

static nf_status read_kv(gg_cur *c, uint64_t i, nf_gguf_kv *kv)
{
    kv->file_offset = c->pos;
    set_ctx_kv(c, i, NULL);
    uint64_t at = c->pos;
    src_str key;
    NF_TRY(gg_string(c, NF_GGUF_MAX_KEY_BYTES, "the key", &key));
    if (key.len == 0) return gg_fail(c, at, "empty key");
    if (strlen(key.p) != key.len) return gg_fail(c, at, "the key contains a NUL byte");
    kv->key = key.p;
    set_ctx_kv(c, i, key.p);
    at = c->pos;
    uint32_t type;
    NF_TRY(gg_u32(c, &type, "the value type"));
    if (type >= NF_GGUF_TYPE_COUNT) return gg_fail(c, at, "bad value type %u (GGUF defines 0..12)", type);
    kv->type = (nf_gguf_type)type;
    kv->elem_type = kv->type;
    kv->count = 1;
    if (kv->type == NF_GGUF_ARRAY) {
        uint32_t et;
        at = c->pos;
        NF_TRY(gg_u32(c, &et, "the array element type"));
        if (et == NF_GGUF_ARRAY) return gg_fail(c, at, "nested arrays are not supported");
        if (et >= NF_GGUF_TYPE_COUNT) return gg_fail(c, at, "bad array element type %u (GGUF defines 0..12)", et);
        kv->elem_type = (nf_gguf_type)et;
        at = c->pos;
        NF_TRY(gg_u64(c, &kv->count, "the array length"));
        if (kv->count > NF_GGUF_MAX_ARRAY_COUNT)
            return gg_fail(c, at, "array of %llu %s values exceeds the cap of %u elements",
                           (unsigned long long)kv->count, kv_type_names[et], NF_GGUF_MAX_ARRAY_COUNT);
        /* Fail fast: every element takes at least this many bytes of the file. */
        uint64_t min = kv->count * kv_type_size[et];
        if (min > gg_remaining(c)) {
            char what[96];
            snprintf(what, sizeof what, "an array of %llu %s values", (unsigned long long)kv->count, kv_type_names[et]);
            return gg_short(c, what, min);
        }
    }
    return read_values(c, kv->elem_type, kv->count, &kv->priv_values);
}

static int cmp_kv_key(const void *a, const void *b)
{
    const nf_gguf_kv *x = *(const nf_gguf_kv *const *)a, *y = *(const nf_gguf_kv *const *)b;
    int r = strcmp(x->key, y->key);
    if (r) return r;
    return x->file_offset < y->file_offset ? -1 : x->file_offset > y->file_offset;
}

/* ---------------------------------------------------------------- tensor infos */
static int cmp_tensor_name_pos(const void *a, const void *b)
{
    const src_tensor *x = *(const src_tensor *const *)a, *y = *(const src_tensor *const *)b;
    int r = strcmp(x->pub.name, y->pub.name);
    if (r) return r;
    return x->info_offset < y->info_offset ? -1 : x->info_offset > y->info_offset;
}

static nf_status read_tensor_info(gg_cur *c, uint64_t i, uint64_t alignment, uint64_t *expected, const char **prev_name)
{
    snprintf(c->ctx, sizeof c->ctx, "tensor info %llu", (unsigned long long)i);
    uint64_t info_at = c->pos;
    src_str name;
    uint64_t at = c->pos;
    NF_TRY(gg_string(c, NF_GGUF_MAX_NAME_BYTES, "the tensor name (GGML_MAX_NAME 64)", &name));
    if (name.len == 0) return gg_fail(c, at, "empty tensor name");
    if (strlen(name.p) != name.len) return gg_fail(c, at, "the tensor name contains a NUL byte");
    snprintf(c->ctx, sizeof c->ctx, "tensor %llu '%s'", (unsigned long long)i, name.p);

    uint32_t n_dims;
    at = c->pos;
    NF_TRY(gg_u32(c, &n_dims, "n_dims"));
    if (n_dims > NF_GGUF_MAX_DIMS)
        return gg_fail(c, at, "n_dims %u exceeds GGML_MAX_DIMS (%u)", n_dims, NF_GGUF_MAX_DIMS);
    uint64_t ne[NF_GGUF_MAX_DIMS] = {1, 1, 1, 1};
    uint64_t elements = 1;
    for (uint32_t j = 0; j < n_dims; j++) {
        at = c->pos;
        NF_TRY(gg_u64(c, &ne[j], "ne"));
        if (ne[j] == 0) return gg_fail(c, at, "ne[%u] is 0: empty tensors are not accepted", j);
        if (ne[j] > (uint64_t)INT64_MAX)
            return gg_fail(c, at, "ne[%u] = %llu is negative as ggml's int64", j, (unsigned long long)ne[j]);
        if (elements > (uint64_t)INT64_MAX / ne[j])
            return gg_fail(c, at, "the element count ne[0..%u] overflows int64", j);
        elements *= ne[j];
    }
    uint32_t type;
    at = c->pos;
    NF_TRY(gg_u32(c, &type, "the ggml type"));
    const ggml_type_info *ti = type <= 255u ? ggml_type_find((int)type) : NULL;
    if (!ti) return gg_fail(c, at, "unknown ggml type %u", type);
    if (ti->block_values == 0)
        return gg_fail(c, at, "ggml type %u (%s) was removed from ggml and has no block size", type, ti->name);
    if (ne[0] % ti->block_values != 0)
        return gg_fail(c, at, "ne[0] = %llu is not a multiple of the %s block size %u", (unsigned long long)ne[0],
                       ti->name, ti->block_values);
    uint64_t bytes;
    if (!nf_mul_u64(elements / ti->block_values, ti->block_bytes, &bytes))
        return gg_fail(c, at, "the tensor's byte size overflows U64");
    uint64_t offset;
    at = c->pos;
    NF_TRY(gg_u64(c, &offset, "the data offset"));
    if (offset % alignment != 0)
        return gg_fail(c, at, "data offset %llu is not a multiple of the alignment %llu (expected %llu)",
                       (unsigned long long)offset, (unsigned long long)alignment, (unsigned long long)*expected);
    if (offset < *expected)
        return gg_fail(c, at, "data offset %llu overlaps tensor '%s', which ends at %llu", (unsigned long long)offset,
                       *prev_name ? *prev_name : "?", (unsigned long long)*expected);
    if (offset > *expected)
        return gg_fail(c, at, "data offset %llu leaves a gap of %llu bytes after %s%s%s (expected %llu)",
                       (unsigned long long)offset, (unsigned long long)(offset - *expected),
                       *prev_name ? "tensor '" : "the start of the data section", *prev_name ? *prev_name : "",
                       *prev_name ? "'" : "", (unsigned long long)*expected);
    /* Pad with a check *before* adding: GGML_PAD near 2^64 wrapped to 0. */
    uint64_t padded;
    if (!nf_align_up_u64(bytes, alignment, &padded) || !nf_add_u64(offset, padded, expected))
        return gg_fail(c, at, "the data section size overflows U64");

    src_tensor *st;
    NF_TRY(nf_source_add_tensor(c->s, c->f->path, &st, c->err));
    nf_source_tensor *t = &st->pub;
    st->info_offset = info_at;
    uint64_t *shape = nf_source_arena_alloc(&c->s->arena, (n_dims ? n_dims : 1) * sizeof(uint64_t));
    if (!shape) return nf_common_nomem_in(c->err, c->f->path);
    shape[0] = 0; /* defined even for rank 0 */
    for (uint32_t j = 0; j < n_dims; j++) shape[j] = ne[n_dims - 1 - j];
    t->name = name.p;
    t->type_name = ti->name;
    t->ggml_type = ti->id;
    t->format = nf_format_by_ggml_type(ti->id);
    t->block_values = ti->block_values;
    t->block_bytes = ti->block_bytes;
    t->rank = n_dims;
    t->shape = shape;
    t->elements = elements;
    t->row_elements = ne[0];
    t->rows = elements / ne[0];
    t->row_bytes = ne[0] / ti->block_values * ti->block_bytes; /* <= bytes */
    t->bytes = bytes;
    t->file = 0;
    t->offset = offset; /* relative for now: the data section's start is not known yet */
    t->convertible = ggml_convertible(ti->id);
    *prev_name = name.p;
    return NF_OK;
}

/* ---------------------------------------------------------------- the file */
static nf_status parse(gg_cur *c)
{
    nf_source *s = c->s;
    const char *fname = c->f->path;
    uint8_t magic[4];
    snprintf(c->ctx, sizeof c->ctx, "header");
    NF_TRY(gg_take(c, magic, 4, "the magic"));
    if (memcmp(magic, "GGUF", 4) != 0)
        return gg_fail(c, 0, "bad magic %02x %02x %02x %02x, expected \"GGUF\" (47 47 55 46)", magic[0], magic[1],
                       magic[2], magic[3]);
    uint32_t version;
    NF_TRY(gg_u32(c, &version, "the version"));
    if (version == 1)
        return gg_fail(c, 4, "GGUF version 1 is not supported (it used 32-bit counts; re-convert the model)");
    if (version == 0) return gg_fail(c, 4, "version 0 is not a GGUF version");
    if ((version & 0xFFFFu) == 0)
        return gg_fail(c, 4,
                       "version 0x%08x looks byte-swapped: a big-endian GGUF file? Only little-endian files "
                       "are supported",
                       version);
    if (version > 3) return gg_fail(c, 4, "GGUF version %u is not supported (2 and 3 are)", version);
    s->gguf_version = version;
    uint64_t n_tensors, n_kv;
    NF_TRY(gg_u64(c, &n_tensors, "n_tensors"));
    NF_TRY(gg_u64(c, &n_kv, "n_kv"));
    if (n_tensors > NF_SOURCE_MAX_TENSORS)
        return gg_fail(c, 8, "n_tensors %llu exceeds the reader's cap of %u", (unsigned long long)n_tensors,
                       NF_SOURCE_MAX_TENSORS);
    if (n_kv > NF_GGUF_MAX_KV)
        return gg_fail(c, 16, "n_kv %llu exceeds the reader's cap of %u", (unsigned long long)n_kv, NF_GGUF_MAX_KV);
    /* Smallest encodings: a KV is a 1-byte key + u32 type + 1-byte value (8 + 1 + 4 + 1), a
     * tensor info a 1-byte name + n_dims 0 + type + offset (8 + 1 + 4 + 4 + 8).  Checking both
     * against the bytes left bounds the tables allocated below by the file's real size. */
    uint64_t min_bytes = n_kv * 14 + n_tensors * 25;
    if (min_bytes > gg_remaining(c)) {
        char what[128];
        snprintf(what, sizeof what, "the smallest encoding of %llu key/value pairs and %llu tensor infos",
                 (unsigned long long)n_kv, (unsigned long long)n_tensors);
        return gg_short(c, what, min_bytes);
    }
    s->nkv = (size_t)n_kv;
    s->kvs = calloc(s->nkv ? s->nkv : 1, sizeof *s->kvs);
    s->kv_by_key = malloc((s->nkv ? s->nkv : 1) * sizeof *s->kv_by_key);
    if (!s->kvs || !s->kv_by_key) return nf_common_nomem_in(c->err, fname);
    for (uint64_t i = 0; i < n_kv; i++) NF_TRY(read_kv(c, i, &s->kvs[i]));

    /* Unique keys (gguf-py rejects duplicates; ggml keeps the first silently). */
    for (size_t i = 0; i < s->nkv; i++) s->kv_by_key[i] = &s->kvs[i];
    qsort(s->kv_by_key, s->nkv, sizeof *s->kv_by_key, cmp_kv_key);
    for (size_t i = 1; i < s->nkv; i++) {
        if (strcmp(s->kv_by_key[i - 1]->key, s->kv_by_key[i]->key) == 0) {
            c->ctx[0] = '\0';
            return gg_fail(c, s->kv_by_key[i]->file_offset, "duplicate key '%s' (first at byte %llu)",
                           s->kv_by_key[i]->key, (unsigned long long)s->kv_by_key[i - 1]->file_offset);
        }
    }

    uint64_t alignment = NF_GGUF_DEFAULT_ALIGNMENT;
    const nf_gguf_kv *al = nf_source_gguf_kv_find(s, "general.alignment");
    if (al) {
        snprintf(c->ctx, sizeof c->ctx, "key 'general.alignment'");
        if (al->type != NF_GGUF_U32)
            return gg_fail(c, al->file_offset, "must be a u32, not %s%s%s", kv_type_names[al->type],
                           al->type == NF_GGUF_ARRAY ? " of " : "",
                           al->type == NF_GGUF_ARRAY ? kv_type_names[al->elem_type] : "");
        uint32_t a = src_rd32(al->priv_values);
        if (a == 0) return gg_fail(c, al->file_offset, "alignment 0 (must be a non-zero power of two)");
        if ((a & (a - 1)) != 0) return gg_fail(c, al->file_offset, "alignment %u is not a power of two", a);
        if (a > NF_GGUF_MAX_ALIGNMENT)
            return gg_fail(c, al->file_offset, "alignment %u exceeds the reader's cap of %u", a, NF_GGUF_MAX_ALIGNMENT);
        alignment = a;
    }
    s->gguf_alignment = alignment;

    uint64_t expected = 0;
    const char *prev = NULL;
    for (uint64_t i = 0; i < n_tensors; i++) NF_TRY(read_tensor_info(c, i, alignment, &expected, &prev));

    /* Unique tensor names, reported with both positions. */
    if (s->ntensors > 1) {
        const src_tensor **v = malloc(s->ntensors * sizeof *v);
        if (!v) return nf_common_nomem_in(c->err, fname);
        for (size_t i = 0; i < s->ntensors; i++) v[i] = &s->tensors[i];
        qsort(v, s->ntensors, sizeof *v, cmp_tensor_name_pos);
        for (size_t i = 1; i < s->ntensors; i++) {
            if (strcmp(v[i - 1]->pub.name, v[i]->pub.name) == 0) {
                c->ctx[0] = '\0';
                nf_status rc = gg_fail(c, v[i]->info_offset, "duplicate tensor name '%s' (first at byte %llu)",
                                       v[i]->pub.name, (unsigned long long)v[i - 1]->info_offset);
                free(v);
                return rc;
            }
        }
        free(v);
    }

    /* The data section: after the infos, padded; every tensor's bytes inside the file. */
    c->ctx[0] = '\0';
    uint64_t data;
    if (!nf_align_up_u64(c->pos, alignment, &data)) return gg_fail(c, c->pos, "data section offset overflows U64");
    s->gguf_data_offset = data;
    uint64_t size = c->f->size;
    for (size_t i = 0; i < s->ntensors; i++) {
        nf_source_tensor *t = &s->tensors[i].pub;
        uint64_t begin, end;
        if (!nf_add_u64(data, t->offset, &begin) || !nf_add_u64(begin, t->bytes, &end) || end > size)
            return nf_error_set(c->err, NF_ERR_INVALID,
                                "%s: tensor '%s': data offset %llu + %llu bytes from the data "
                                "section at byte %llu runs past the end of the file (%llu bytes): data section "
                                "truncated",
                                fname, t->name, (unsigned long long)t->offset, (unsigned long long)t->bytes,
                                (unsigned long long)data, (unsigned long long)size);
        t->offset = begin;
    }
    return NF_OK;
}

nf_status nf_source_gguf_parse(nf_source *s, nf_error *err)
{
    gg_cur c = {.s = s, .f = &s->files[0], .err = err};
    c.limit = c.f->size < NF_GGUF_MAX_HEADER_BYTES ? c.f->size : NF_GGUF_MAX_HEADER_BYTES;
    if (!c.f->mem) {
        c.win = malloc(GG_WINDOW);
        if (!c.win) return nf_common_nomem_in(err, c.f->path);
    }
    nf_status rc = parse(&c);
    free(c.win);
    return rc;
}

/* ---------------------------------------------------------------- KV access */
uint32_t nf_source_gguf_version(const nf_source *s) { return s->gguf_version; }
uint64_t nf_source_gguf_alignment(const nf_source *s) { return s->kind == NF_SOURCE_GGUF ? s->gguf_alignment : 0; }
uint64_t nf_source_gguf_data_offset(const nf_source *s) { return s->gguf_data_offset; }
size_t nf_source_gguf_kv_count(const nf_source *s) { return s->nkv; }

const nf_gguf_kv *nf_source_gguf_kv_at(const nf_source *s, size_t index)
{
    return index < s->nkv ? &s->kvs[index] : NULL;
}

const nf_gguf_kv *nf_source_gguf_kv_find(const nf_source *s, const char *key)
{
    if (!key || !s->kv_by_key) return NULL;
    size_t lo = 0, hi = s->nkv;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int r = strcmp(s->kv_by_key[mid]->key, key);
        if (r == 0) return s->kv_by_key[mid];
        if (r < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

/* Two's complement of the low `bits` bits of u, without implementation-defined conversions. */
static int64_t as_signed(uint64_t u, unsigned bits)
{
    if (bits == 64) return u <= (uint64_t)INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
    uint64_t half = (uint64_t)1 << (bits - 1);
    return u < half ? (int64_t)u : (int64_t)u - (int64_t)(half << 1);
}

static nf_status kv_check(const nf_gguf_kv *kv, uint64_t index, const void *out, nf_error *err)
{
    if (!kv || !out) return nf_error_set(err, NF_ERR_USAGE, "GGUF key access: NULL argument");
    if (index >= kv->count)
        return nf_error_set(err, NF_ERR_USAGE, "key '%s': index %llu out of range (%llu values)", kv->key,
                            (unsigned long long)index, (unsigned long long)kv->count);
    return NF_OK;
}

static nf_status kv_wrong(const nf_gguf_kv *kv, const char *wanted, nf_error *err)
{
    return nf_error_set(err, NF_ERR_INVALID, "key '%s' holds %s%s, not %s", kv->key,
                        kv->type == NF_GGUF_ARRAY ? "an array of " : "a ", kv_type_names[kv->elem_type], wanted);
}

/* The integer element at index as (is_signed, value). */
static bool kv_integer(const nf_gguf_kv *kv, uint64_t index, bool *is_signed, uint64_t *u, int64_t *i)
{
    const uint8_t *p = kv->priv_values;
    switch (kv->elem_type) {
    case NF_GGUF_U8:
        *u = p[index];
        *is_signed = false;
        return true;
    case NF_GGUF_U16:
        *u = src_rd16(p + 2 * index);
        *is_signed = false;
        return true;
    case NF_GGUF_U32:
        *u = src_rd32(p + 4 * index);
        *is_signed = false;
        return true;
    case NF_GGUF_U64:
        *u = src_rd64(p + 8 * index);
        *is_signed = false;
        return true;
    case NF_GGUF_I8:
        *i = as_signed(p[index], 8);
        *is_signed = true;
        return true;
    case NF_GGUF_I16:
        *i = as_signed(src_rd16(p + 2 * index), 16);
        *is_signed = true;
        return true;
    case NF_GGUF_I32:
        *i = as_signed(src_rd32(p + 4 * index), 32);
        *is_signed = true;
        return true;
    case NF_GGUF_I64:
        *i = as_signed(src_rd64(p + 8 * index), 64);
        *is_signed = true;
        return true;
    default: return false;
    }
}

nf_status nf_gguf_kv_uint(const nf_gguf_kv *kv, uint64_t index, uint64_t *out, nf_error *err)
{
    NF_TRY(kv_check(kv, index, out, err));
    bool sg;
    uint64_t u = 0;
    int64_t i = 0;
    if (!kv_integer(kv, index, &sg, &u, &i)) return kv_wrong(kv, "an unsigned integer", err);
    if (sg) {
        if (i < 0)
            return nf_error_set(err, NF_ERR_INVALID, "key '%s'[%llu] holds %lld, not an unsigned integer", kv->key,
                                (unsigned long long)index, (long long)i);
        u = (uint64_t)i;
    }
    *out = u;
    return NF_OK;
}

nf_status nf_gguf_kv_int(const nf_gguf_kv *kv, uint64_t index, int64_t *out, nf_error *err)
{
    NF_TRY(kv_check(kv, index, out, err));
    bool sg;
    uint64_t u = 0;
    int64_t i = 0;
    if (!kv_integer(kv, index, &sg, &u, &i)) return kv_wrong(kv, "an integer", err);
    if (!sg) {
        if (u > (uint64_t)INT64_MAX)
            return nf_error_set(err, NF_ERR_INVALID, "key '%s'[%llu] holds %llu, beyond int64", kv->key,
                                (unsigned long long)index, (unsigned long long)u);
        i = (int64_t)u;
    }
    *out = i;
    return NF_OK;
}

nf_status nf_gguf_kv_float(const nf_gguf_kv *kv, uint64_t index, double *out, nf_error *err)
{
    NF_TRY(kv_check(kv, index, out, err));
    const uint8_t *p = kv->priv_values;
    if (kv->elem_type == NF_GGUF_F32) {
        *out = (double)nf_f32_from_bits(src_rd32(p + 4 * index));
    } else if (kv->elem_type == NF_GGUF_F64) {
        uint64_t b = src_rd64(p + 8 * index);
        double d;
        memcpy(&d, &b, sizeof d);
        *out = d;
    } else {
        return kv_wrong(kv, "a float", err);
    }
    return NF_OK;
}

nf_status nf_gguf_kv_bool(const nf_gguf_kv *kv, uint64_t index, bool *out, nf_error *err)
{
    NF_TRY(kv_check(kv, index, out, err));
    if (kv->elem_type != NF_GGUF_BOOL) return kv_wrong(kv, "a bool", err);
    uint8_t b = ((const uint8_t *)kv->priv_values)[index];
    if (b > 1)
        return nf_error_set(err, NF_ERR_INVALID, "key '%s'[%llu]: bool byte 0x%02x is neither 0 nor 1", kv->key,
                            (unsigned long long)index, b);
    *out = b == 1;
    return NF_OK;
}

nf_status nf_gguf_kv_string(const nf_gguf_kv *kv, uint64_t index, const char **str, size_t *len, nf_error *err)
{
    NF_TRY(kv_check(kv, index, str, err));
    if (kv->elem_type != NF_GGUF_STRING) return kv_wrong(kv, "a string", err);
    const src_str *v = kv->priv_values;
    *str = v[index].p;
    if (len) *len = (size_t)v[index].len;
    return NF_OK;
}
