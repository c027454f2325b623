/* PyTorch checkpoints (torch.save's zip format, pytorch_model.bin; docs/security.md 2.6):
 * the archive's <stem>/data.pkl run by the pickle interpreter (torch_pickle.c), each tensor
 * placed in the member <stem>/data/<key> of its storage; and the stream torch.save wrote before
 * PyTorch 1.6.  A tensor whose view is a contiguous run of a stored member is read in place like a
 * safetensors tensor (storages shared between tensors, tied embeddings, and offsets into a storage,
 * a fused qkv's slices, included); a strided view (a transposed weight) is gathered by read.c. */
#include "source/torch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "common/fail.h"
#include "source/inflate.h"
#include "source/safetensors.h"
#include "source/torch_pickle.h"
#include "source/torch_zip.h"

/* The archive's one <stem>/data.pkl. */
static nf_status find_pickle(const src_file *f, const nf_zip *z, const nf_zip_member **pkl, size_t *stem, nf_error *err)
{
    *pkl = NULL;
    for (size_t i = 0; i < z->n; i++) {
        const char *nm = z->m[i].name, *slash = strchr(nm, '/');
        if (!slash || strcmp(slash, "/data.pkl") != 0) continue;
        if (*pkl)
            return nf_error_set(err, NF_ERR_INVALID, "%s: two pickles, '%s' and '%s': not one torch.save archive",
                                f->path, (*pkl)->name, nm);
        *pkl = &z->m[i];
        *stem = (size_t)(slash - nm) + 1;
    }
    if (!*pkl)
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: a zip archive without <name>/data.pkl: not a torch.save checkpoint", f->path);
    return NF_OK;
}

/* The row-major strides of sizes: a view with these is one contiguous run (dimensions of size 1
 * may have any stride). */
static bool contiguous(const nf_torch_tensor *t)
{
    uint64_t want = 1;
    for (uint32_t k = t->rank; k-- > 0;) {
        if (t->size[k] != 1 && t->stride[k] != want) return false;
        if (!nf_mul_u64(want, t->size[k], &want)) return false;
    }
    return true;
}

/* What the first tensor on each storage member said of it: every tensor on one storage must name
 * the same class and count, or one tensor's bytes would be read as two dtypes. */
typedef struct storage_use {
    const nf_torch_tensor *first;      /* NULL: not used yet */
    const nf_inflate_member *inflated; /* a deflated member's, made at its first use */
} storage_use;

/* The inflate record of deflated member m (in the source's arena, with the source's pool). */
static nf_status inflated_member(nf_source *s, const src_file *f, const nf_zip_member *m, storage_use *u, nf_error *err)
{
    if (u->inflated) return NF_OK;
    if (!s->inflate && !(s->inflate = nf_source_inflate_new())) return nf_common_nomem_in(err, f->path);
    nf_inflate_member *im = nf_source_arena_alloc(&s->arena, sizeof *im);
    char *name = nf_source_arena_strndup(&s->arena, m->name, strlen(m->name));
    if (!im || !name) return nf_common_nomem_in(err, f->path);
    *im = (nf_inflate_member){name, m->data, m->csize, m->size, m->crc32};
    u->inflated = im;
    return NF_OK;
}

/* Tensor tt of the pickle as a tensor of file fi; use[] is indexed like z->m. */
static nf_status add_one(nf_source *s, size_t fi, const nf_zip *z, const char *stem, size_t stem_len,
                         const nf_torch_tensor *tt, storage_use *use, nf_error *err)
{
    const src_file *f = &s->files[fi];
    char member[NF_SOURCE_MAX_NAME_BYTES + 64];
    if (stem_len + 5 + strlen(tt->storage_key) >= sizeof member)
        return nf_error_set(err, NF_ERR_INVALID, "%s: tensor '%s': storage key too long", f->path, tt->name);
    snprintf(member, sizeof member, "%.*sdata/%s", (int)stem_len, stem, tt->storage_key);
    const nf_zip_member *m = nf_source_zip_find(z, member);
    if (!m)
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: tensor '%s': its storage '%s' is not in the archive (no member %s)", f->path, tt->name,
                            tt->storage_key, member);
    storage_use *u = &use[m - z->m];
    if (!u->first) u->first = tt;
    else if (u->first->dtype != tt->dtype || u->first->storage_numel != tt->storage_numel)
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: tensor '%s': storage '%s' is %llu %s elements for tensor '%s' but %llu %s elements "
                            "for this one: one storage has one class",
                            f->path, tt->name, tt->storage_key, (unsigned long long)u->first->storage_numel,
                            nf_st_dtype_name(u->first->dtype), u->first->name, (unsigned long long)tt->storage_numel,
                            nf_st_dtype_name(tt->dtype));
    const uint64_t es = nf_st_dtype_bits(tt->dtype) / 8;
    uint64_t sbytes, elements = 1;
    if (!nf_mul_u64(tt->storage_numel, es, &sbytes) || sbytes != m->size)
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: tensor '%s': storage '%s' holds %llu %s elements by its class and count, but member "
                            "%s holds %llu bytes: the storage class contradicts its bytes",
                            f->path, tt->name, tt->storage_key, (unsigned long long)tt->storage_numel,
                            nf_st_dtype_name(tt->dtype), member, (unsigned long long)m->size);
    for (uint32_t k = 0; k < tt->rank; k++)
        if (!nf_mul_u64(elements, tt->size[k], &elements))
            return nf_error_set(err, NF_ERR_INVALID, "%s: tensor '%s': its sizes overflow", f->path, tt->name);
    uint64_t end; /* an empty view too starts inside its storage (its offset places the tensor) */
    if (!nf_add_u64(tt->offset, elements, &end) || end > tt->storage_numel)
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: tensor '%s': its view (offset %llu, %llu elements) leaves its storage '%s' of %llu "
                            "elements",
                            f->path, tt->name, (unsigned long long)tt->offset, (unsigned long long)elements,
                            tt->storage_key, (unsigned long long)tt->storage_numel);
    /* a strided view: its last element's position inside the storage (no more elements than the
     * storage has after the offset, checked above, so t->bytes stays inside the member) */
    const bool strided = elements && !contiguous(tt);
    uint64_t last = 0;
    for (uint32_t k = 0; strided && k < tt->rank; k++) {
        uint64_t step;
        if (!nf_mul_u64(tt->size[k] - 1, tt->stride[k], &step) || !nf_add_u64(last, step, &last)) last = UINT64_MAX;
    }
    if (strided && last >= tt->storage_numel - tt->offset)
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: tensor '%s': its strided view (offset %llu, last element %s%llu) leaves its storage "
                            "'%s' of %llu elements",
                            f->path, tt->name, (unsigned long long)tt->offset, last == UINT64_MAX ? ">" : "+",
                            (unsigned long long)(last == UINT64_MAX ? tt->storage_numel : last), tt->storage_key,
                            (unsigned long long)tt->storage_numel);
    if (m->method != 0 && strided && m->size > NF_INFLATE_WHOLE_MAX)
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: tensor '%s': a strided view of deflated member %s of %llu bytes, more than the %llu "
                            "a strided view of a deflated member is read from: not read by this version (store the "
                            "archive's members, zip -0, or save the tensor contiguous)",
                            f->path, tt->name, member, (unsigned long long)m->size,
                            (unsigned long long)NF_INFLATE_WHOLE_MAX);
    if (m->method != 0) NF_TRY(inflated_member(s, f, m, u, err));
    src_tensor *st;
    NF_TRY(nf_source_add_tensor(s, f->path, &st, err));
    nf_source_tensor *t = &st->pub;
    uint64_t *shape = nf_source_arena_alloc(&s->arena, (tt->rank ? tt->rank : 1) * sizeof(uint64_t));
    t->name = nf_source_arena_strndup(&s->arena, tt->name, strlen(tt->name));
    if (!shape || !t->name) return nf_common_nomem_in(err, f->path);
    shape[0] = 0;
    if (tt->rank) memcpy(shape, tt->size, tt->rank * sizeof(uint64_t));
    t->shape = shape;
    t->rank = tt->rank;
    nf_source_st_set_dtype(t, tt->dtype);
    t->elements = elements;
    t->row_elements = tt->rank ? tt->size[tt->rank - 1] : 1;
    t->rows = 1;
    for (uint32_t d = 0; d + 1 < tt->rank; d++)
        if (!nf_mul_u64(t->rows, tt->size[d], &t->rows)) /* (unbounded when the last size is 0) */
            return nf_error_set(err, NF_ERR_INVALID, "%s: tensor '%s': its row count overflows", f->path, tt->name);
    t->row_bytes = t->row_elements * es;
    t->bytes = elements * es;              /* <= sbytes */
    t->offset = m->data + tt->offset * es; /* inside the member, checked above */
    if (u->inflated) {                     /* the member's bytes are compressed: placed by inflate_at */
        st->inflate = u->inflated;
        st->inflate_at = tt->offset * es;
        t->offset = m->data;
    }
    t->file = fi;
    if (strided) {
        uint64_t *stride = nf_source_arena_alloc(&s->arena, tt->rank * sizeof(uint64_t));
        if (!stride) return nf_common_nomem_in(err, f->path);
        memcpy(stride, tt->stride, tt->rank * sizeof(uint64_t));
        st->stride = stride;
    }
    return NF_OK;
}

/* <stem>/byteorder, which torch.save writes since 1.10: the storages' bytes are read as little-endian
 * values, so any other order is refused (an archive without the member is little-endian). */
static nf_status check_byteorder(src_file *f, const nf_zip *z, const nf_zip_member *pkl, size_t stem, nf_error *err)
{
    char member[NF_SOURCE_MAX_NAME_BYTES + 16];
    snprintf(member, sizeof member, "%.*sbyteorder", (int)stem, pkl->name);
    const nf_zip_member *m = nf_source_zip_find(z, member);
    if (!m) return NF_OK;
    char order[16] = {0};
    if (m->size < sizeof order) NF_TRY(nf_source_zip_read(f, m, order, (size_t)m->size, err));
    if (m->size == 6 && memcmp(order, "little", 6) == 0) return NF_OK;
    return nf_error_set(err, NF_ERR_INVALID,
                        "%s: member %s says the storages are not little-endian ('%.*s'): not read by this version",
                        f->path, member, m->size < sizeof order ? (int)m->size : 15, order);
}

bool nf_source_torch_legacy_magic(const uint8_t *p, size_t n)
{
    return n >= 3 && p[0] == 0x80 && p[1] <= 5 && p[2] == 0x8a;
}

/* ---------------------------------------------------------------- the legacy stream */
/* torch.save before PyTorch 1.6 (and with _use_new_zipfile_serialization=False), docs/security.md
 * 2.6: five pickles one after the other -- the magic number 0x1950a86a20f9469cfc6c, the protocol
 * version 1001, sys_info, the state dict, the list of storage keys -- then each storage of that
 * list in its order: its element count as a little-endian int64 and its bytes. */
static const uint8_t LEGACY_HEAD[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a,
                                      0xa8, 0x50, 0x19, 0x2e, 0x80, 0x02, 0x4d, 0xe9, 0x03, 0x2e};
#define LEGACY_WINDOW ((size_t)4 << 20) /* the pickles are read from a window that grows to the cap */

static int cmp_tensor_key(const void *a, const void *b)
{
    return strcmp((*(const nf_torch_tensor *const *)a)->storage_key, (*(const nf_torch_tensor *const *)b)->storage_key);
}

/* The storages after the pickles, from byte at: a member "data/<key>" for each, as in an archive. */
static nf_status legacy_storages(src_file *f, uint64_t at, char **keys, size_t nkeys, const nf_torch_tensors *ts,
                                 nf_zip *z, nf_error *err)
{
    const nf_torch_tensor **by = malloc((ts->n ? ts->n : 1) * sizeof *by);
    z->m = calloc(nkeys ? nkeys : 1, sizeof *z->m);
    if (!by || !z->m) {
        free(by);
        return nf_common_nomem_in(err, f->path);
    }
    for (size_t i = 0; i < ts->n; i++) by[i] = &ts->t[i];
    qsort(by, ts->n, sizeof *by, cmp_tensor_key);
    nf_status st = NF_OK;
    for (size_t k = 0; st == NF_OK && k < nkeys; k++) {
        const nf_torch_tensor key = {.storage_key = keys[k]}, *kp = &key;
        const nf_torch_tensor **t = bsearch(&kp, by, ts->n, sizeof *by, cmp_tensor_key);
        uint8_t b[8];
        uint64_t numel = 0, bytes = 0;
        if (!t) {
            st = nf_error_set(err, NF_ERR_INVALID, "%s: storage '%s' is used by no tensor: its element size is unknown",
                              f->path, keys[k]);
            break;
        }
        if (at > f->size || f->size - at < 8) {
            st = nf_error_set(err, NF_ERR_INVALID, "%s: byte %llu: the stream ends before storage '%s'", f->path,
                              (unsigned long long)at, keys[k]);
            break;
        }
        if ((st = nf_source_file_read(f, at, b, 8, err)) != NF_OK) break;
        for (int i = 0; i < 8; i++) numel |= (uint64_t)b[i] << (8 * i);
        if (!nf_mul_u64(numel, nf_st_dtype_bits((*t)->dtype) / 8, &bytes) || bytes > f->size - at - 8) {
            st = nf_error_set(
                err, NF_ERR_INVALID, "%s: byte %llu: storage '%s' says %llu %s elements, more than the file holds",
                f->path, (unsigned long long)at, keys[k], (unsigned long long)numel, nf_st_dtype_name((*t)->dtype));
            break;
        }
        char name[NF_TORCH_PICKLE_MAX_KEY_BYTES + 8];
        snprintf(name, sizeof name, "data/%s", keys[k]);
        nf_zip_member *m = &z->m[z->n];
        if (!(m->name = strdup(name))) {
            st = nf_common_nomem_in(err, f->path);
            break;
        }
        z->n++;
        m->local = at;
        m->data = at + 8;
        m->csize = m->size = bytes;
        at += 8 + bytes;
    }
    free(by);
    if (st == NF_OK && at != f->size)
        st = nf_error_set(err, NF_ERR_INVALID, "%s: byte %llu: %llu bytes after the last storage", f->path,
                          (unsigned long long)at, (unsigned long long)(f->size - at));
    if (st == NF_OK) {
        qsort(z->m, z->n, sizeof *z->m, nf_source_zip_cmp_member);
        for (size_t i = 0; st == NF_OK && i + 1 < z->n; i++)
            if (!strcmp(z->m[i].name, z->m[i + 1].name))
                st = nf_error_set(err, NF_ERR_INVALID, "%s: storage '%s' is listed twice", f->path, z->m[i].name + 5);
    }
    return st;
}

/* The pickles of the stream, read from the window p[0..n) of the file. */
static nf_status legacy_pickles(src_file *f, const uint8_t *p, size_t n, nf_torch_tensors *ts, char ***keys,
                                size_t *nkeys, uint64_t *end, nf_error *err)
{
    if (n < sizeof LEGACY_HEAD || memcmp(p, LEGACY_HEAD, sizeof LEGACY_HEAD) != 0)
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: a pickle stream that does not start with torch.save's magic number and protocol "
                            "version 1001",
                            f->path);
    size_t at = sizeof LEGACY_HEAD, used = 0;
    char where[NF_ERROR_MESSAGE_MAX / 2];
    snprintf(where, sizeof where, "%s: sys_info pickle at byte %zu", f->path, at);
    NF_TRY(nf_source_torch_sys_info(p + at, n - at, where, &used, err));
    at += used;
    snprintf(where, sizeof where, "%s: state dict pickle at byte %zu", f->path, at);
    NF_TRY(nf_source_torch_pickle(p + at, n - at, where, true, &used, ts, err));
    at += used;
    snprintf(where, sizeof where, "%s: storage keys pickle at byte %zu", f->path, at);
    NF_TRY(nf_source_torch_keys(p + at, n - at, where, &used, keys, nkeys, err));
    *end = at + used;
    return NF_OK;
}

static void free_keys(char **keys, size_t n)
{
    for (size_t i = 0; i < n; i++) free(keys[i]);
    free(keys);
}

static nf_status parse_legacy(nf_source *s, size_t fi, nf_error *err)
{
    src_file *f = &s->files[fi];
    const uint64_t cap = f->size < NF_TORCH_PICKLE_MAX_BYTES ? f->size : NF_TORCH_PICKLE_MAX_BYTES;
    nf_torch_tensors ts = {0};
    char **keys = NULL;
    size_t nkeys = 0;
    uint64_t end = 0;
    nf_status st = NF_OK;
    /* a window of 4 MiB holds the pickles of most checkpoints; one that fails is tried again on a
     * larger window, up to the cap, and the answer on the largest is the one given */
    for (size_t w = LEGACY_WINDOW;; w *= 16) {
        const size_t n = w < cap ? w : (size_t)cap;
        uint8_t *p = malloc(n ? n : 1);
        st = p ? nf_source_file_read(f, 0, p, n, err) : nf_common_nomem_in(err, f->path);
        if (st == NF_OK) st = legacy_pickles(f, p, n, &ts, &keys, &nkeys, &end, err);
        free(p);
        if (st == NF_OK || st == NF_ERR_NOMEM || n == cap) break;
        nf_source_torch_tensors_free(&ts);
        free_keys(keys, nkeys);
        keys = NULL;
        nkeys = 0;
    }
    nf_zip z = {0};
    storage_use *use = NULL;
    if (st == NF_OK) st = legacy_storages(f, end, keys, nkeys, &ts, &z, err);
    if (st == NF_OK && !(use = calloc(z.n ? z.n : 1, sizeof *use))) st = nf_common_nomem_in(err, f->path);
    for (size_t i = 0; st == NF_OK && i < ts.n; i++) st = add_one(s, fi, &z, "", 0, &ts.t[i], use, err);
    free(use);
    free_keys(keys, nkeys);
    nf_source_torch_tensors_free(&ts);
    nf_source_zip_free(&z);
    return st;
}

/* ---------------------------------------------------------------- the zip archive */
nf_status nf_source_torch_parse(nf_source *s, size_t fi, nf_error *err)
{
    src_file *f = &s->files[fi];
    uint8_t magic[4] = {0};
    const size_t mn = f->size < 4 ? (size_t)f->size : 4;
    NF_TRY(nf_source_file_read(f, 0, magic, mn, err));
    if (nf_source_torch_legacy_magic(magic, mn)) return parse_legacy(s, fi, err);
    if (mn < 4 || memcmp(magic, "PK\3\4", 4) != 0)
        return nf_error_set(err, NF_ERR_INVALID, "%s: neither a torch.save zip archive nor its legacy stream", f->path);
    nf_zip z;
    NF_TRY(nf_source_zip_open(f, &z, err));
    const nf_zip_member *pkl = NULL;
    size_t stem = 0;
    storage_use *use = calloc(z.n ? z.n : 1, sizeof *use);
    nf_status st = use ? find_pickle(f, &z, &pkl, &stem, err) : nf_common_nomem_in(err, f->path);
    if (st == NF_OK) st = check_byteorder(f, &z, pkl, stem, err);
    if (st == NF_OK && pkl->size > NF_TORCH_PICKLE_MAX_BYTES)
        st = nf_error_set(err, NF_ERR_INVALID, "%s: %s is %llu bytes, more than the reader's cap of %llu", f->path,
                          pkl->name, (unsigned long long)pkl->size, (unsigned long long)NF_TORCH_PICKLE_MAX_BYTES);
    uint8_t *p = NULL;
    nf_torch_tensors ts = {0};
    char where[NF_ERROR_MESSAGE_MAX / 2];
    if (st == NF_OK) {
        p = malloc(pkl->size ? (size_t)pkl->size : 1);
        st = p ? nf_source_zip_read(f, pkl, p, (size_t)pkl->size, err) : nf_common_nomem_in(err, f->path);
    }
    if (st == NF_OK) {
        snprintf(where, sizeof where, "%s: %s", f->path, pkl->name);
        size_t used = 0;
        st = nf_source_torch_pickle(p, (size_t)pkl->size, where, false, &used, &ts, err);
    }
    for (size_t i = 0; st == NF_OK && i < ts.n; i++) st = add_one(s, fi, &z, pkl->name, stem, &ts.t[i], use, err);
    free(p);
    free(use);
    nf_source_torch_tensors_free(&ts);
    nf_source_zip_free(&z);
    return st;
}
