/* PyTorch checkpoints (torch.save's zip format, pytorch_model.bin; docs/security.md 2.6):
 * the archive's <stem>/data.pkl run by the pickle interpreter (torch_pickle.c), each tensor
 * placed in the member <stem>/data/<key> of its storage.  A tensor whose view is a contiguous run
 * of a stored member is read in place like a safetensors tensor (storages shared between tensors,
 * tied embeddings, and offsets into a storage, a fused qkv's slices, included); anything else is
 * refused by name. */
#include "source/torch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "common/fail.h"
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

/* Tensor tt of the pickle as a tensor of file fi. */
static nf_status add_one(nf_source *s, size_t fi, const nf_zip *z, const char *stem, size_t stem_len,
                         const nf_torch_tensor *tt, nf_error *err)
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
    uint64_t end;
    if (elements && (!nf_add_u64(tt->offset, elements, &end) || end > tt->storage_numel))
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: tensor '%s': its view (offset %llu, %llu elements) leaves its storage '%s' of %llu "
                            "elements",
                            f->path, tt->name, (unsigned long long)tt->offset, (unsigned long long)elements,
                            tt->storage_key, (unsigned long long)tt->storage_numel);
    if (elements && !contiguous(tt))
        return nf_error_set(
            err, NF_ERR_INVALID,
            "%s: tensor '%s': a strided view of storage '%s' (not one contiguous run): not read by this "
            "version",
            f->path, tt->name, tt->storage_key);
    if (elements && m->method != 0)
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: tensor '%s': member %s is deflated: not read by this version (torch.save stores its "
                            "members)",
                            f->path, tt->name, member);
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
    t->file = fi;
    return NF_OK;
}

nf_status nf_source_torch_parse(nf_source *s, size_t fi, nf_error *err)
{
    src_file *f = &s->files[fi];
    nf_zip z;
    NF_TRY(nf_source_zip_open(f, &z, err));
    const nf_zip_member *pkl = NULL;
    size_t stem = 0;
    nf_status st = find_pickle(f, &z, &pkl, &stem, err);
    if (st == NF_OK && pkl->method != 0)
        st = nf_error_set(err, NF_ERR_INVALID, "%s: %s is deflated: not read by this version", f->path, pkl->name);
    if (st == NF_OK && pkl->size > NF_TORCH_PICKLE_MAX_BYTES)
        st = nf_error_set(err, NF_ERR_INVALID, "%s: %s is %llu bytes, more than the reader's cap of %llu", f->path,
                          pkl->name, (unsigned long long)pkl->size, (unsigned long long)NF_TORCH_PICKLE_MAX_BYTES);
    uint8_t *p = NULL;
    nf_torch_tensors ts = {0};
    char where[NF_ERROR_MESSAGE_MAX / 2];
    if (st == NF_OK) {
        p = malloc(pkl->size ? (size_t)pkl->size : 1);
        st = p ? nf_source_file_read(f, pkl->data, p, (size_t)pkl->size, err) : nf_common_nomem_in(err, f->path);
    }
    if (st == NF_OK) {
        snprintf(where, sizeof where, "%s: %s", f->path, pkl->name);
        st = nf_source_torch_pickle(p, (size_t)pkl->size, where, &ts, err);
    }
    for (size_t i = 0; st == NF_OK && i < ts.n; i++) st = add_one(s, fi, &z, pkl->name, stem, &ts.t[i], err);
    free(p);
    nf_source_torch_tensors_free(&ts);
    nf_source_zip_free(&z);
    return st;
}
