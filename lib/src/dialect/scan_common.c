/* What every recogniser of the scan shares (dialect_internal.h), below scan.c and the files it
 * dispatches to (scan_packed.c, scan_bnb.c): the message naming a tensor, the check of a
 * conflicting declaration, and the list of weights with their tensors' roles (a weight's
 * companions: nf_qweight_companions). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/fail.h"
#include "dialect/dialect_internal.h"

/* (ninfer/dialect.h) */
size_t nf_qweight_companions(const nf_qweight *q, const nf_source_tensor *out[NF_QWEIGHT_MAX_READS])
{
    const nf_source_tensor *all[NF_QWEIGHT_MAX_READS] = {q->scale,        q->global,        q->zero_point,
                                                         q->shape_tensor, q->g_idx,         q->biases,
                                                         q->quant_map,    q->nested_absmax, q->nested_quant_map};
    size_t n = 0;
    for (size_t i = 0; i < NF_QWEIGHT_MAX_READS; i++)
        if (all[i]) out[n++] = all[i];
    return n;
}

/* (dialect_internal.h) */
nf_status nf_dialect_fail(nf_error *err, const nf_source *src, const nf_source_tensor *t, const char *fmt, ...)
{
    char msg[NF_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return nf_error_set(err, NF_ERR_INVALID, "%s: tensor '%s': %s", nf_source_file_path(src, t->file), t->name, msg);
}

/* (dialect_internal.h) */
nf_status nf_dialect_check_marker(const nf_dialects *d, int kind, int other, const nf_source_tensor *t,
                                  const char *what, nf_error *err)
{
    const decl *dc = &d->decl;
    if (dc->kind == DECL_NONE || (int)dc->kind == kind || (int)dc->kind == other) return NF_OK;
    return nf_dialect_fail(err, d->src, t, "%s, but %s declares %s: conflicting dialect markers", what, dc->path,
                           dc->what);
}

/* (dialect_internal.h) */
nf_status nf_dialect_grow(nf_dialects *d, size_t count, nf_error *err)
{
    if (!count) return NF_OK;
    nf_qweight *grown = realloc(d->weights, (d->nweights + count) * sizeof *grown);
    if (!grown) return nf_common_nomem(err);
    d->weights = grown;
    return NF_OK;
}

/* (dialect_internal.h) */
void nf_dialect_add(nf_dialects *d, const nf_qweight *q)
{
    d->weights[d->nweights] = *q;
    nf_dialect_set_roles(d, q, (uint32_t)d->nweights);
    d->nweights++;
}

/* (dialect_internal.h) */
void nf_dialect_set_roles(nf_dialects *d, const nf_qweight *q, uint32_t wi)
{
    const nf_source_tensor *comp[NF_QWEIGHT_MAX_READS];
    size_t n = nf_qweight_companions(q, comp);
    size_t ti = nf_source_tensor_index(d->src, q->codes);
    d->role[ti] = NF_QROLE_WEIGHT;
    d->owner[ti] = wi;
    for (size_t i = 0; i < n; i++) {
        ti = nf_source_tensor_index(d->src, comp[i]);
        d->role[ti] = NF_QROLE_COMPANION;
        d->owner[ti] = wi;
    }
}
