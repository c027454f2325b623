/* import_encoded: the checks and message helpers every dialect shares (source declarations,
 * names, dtypes, special values), for gguf_import.c, nvfp4_import.c and fp8.c and the dispatcher in import.c. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <ninfer/source.h>

#include "import/checks.h"

nf_status nf_import_fail(nf_error *err, nf_status status, const char *name, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    nf_error_vset(err, status, fmt, ap);
    va_end(ap);
    /* the name comes from the checkpoint: escaped (ninfer/escape.h) */
    nf_error_prefix(err, "%s", name ? nf_esc(name).s : "(unnamed tensor)");
    return status;
}

const char *nf_import_f16_problem(uint16_t h)
{
    if (h == 0x8000) return "-0";
    if ((h & 0x7C00) != 0x7C00) return NULL;
    if (h & 0x03FF) return "NaN";
    return (h & 0x8000) ? "-infinity" : "+infinity";
}

const char *nf_import_f32_problem(uint32_t bits)
{
    if (bits == 0x80000000u) return "-0";
    if ((bits & 0x7F800000u) == 0x7F800000u) {
        if (bits & 0x007FFFFFu) return "NaN";
        return (bits & 0x80000000u) ? "-infinity" : "+infinity";
    }
    if (bits & 0x80000000u) return "negative";
    if (bits == 0) return "+0";
    return NULL;
}

const char *nf_import_ggml_name(int ggml_type)
{
    /* the names of common/ggml_types.h, through the GGUF reader that uses them */
    const char *name = nf_ggml_type_name(ggml_type);
    return name ? name : "unknown";
}

const char *nf_import_shape_str(const nf_import_tensor *t, char *buf, size_t size)
{
    size_t used = 0;
    if (size == 0) return buf;
    buf[0] = '\0';
    int n = snprintf(buf, size, "[");
    used = n > 0 ? (size_t)n : 0;
    for (uint32_t i = 0; i < t->rank && used < size; i++) {
        n = snprintf(buf + used, size - used, "%s%" PRIu64, i ? "," : "", t->shape[i]);
        if (n < 0) break;
        used += (size_t)n;
    }
    if (used < size) snprintf(buf + used, size - used, "]");
    return buf;
}

nf_status nf_import_check_decl(const nf_import_tensor *t, const char *role, nf_error *err)
{
    if (!t) return nf_error_set(err, NF_ERR_USAGE, "import: no %s tensor given", role);
    if (!t->name) return nf_error_set(err, NF_ERR_USAGE, "import: the %s tensor has no name", role);
    if (t->rank > NF_MAX_RANK)
        return nf_import_fail(err, NF_ERR_INVALID, t->name, "rank %" PRIu32 " exceeds %d", t->rank, NF_MAX_RANK);
    if (t->rank > 0 && !t->shape)
        return nf_import_fail(err, NF_ERR_USAGE, t->name, "import: rank %" PRIu32 " without a shape", t->rank);
    return NF_OK;
}

bool nf_import_elements(const nf_import_tensor *t, uint64_t *out)
{
    uint64_t n = 1;
    for (uint32_t i = 0; i < t->rank; i++)
        if (!nf_mul_u64(n, t->shape[i], &n)) return false;
    *out = n;
    return true;
}

/* The last dot-separated component of a name; *prefix_len gets the length before its dot (0
 * when there is none). */
static const char *last_component(const char *name, size_t *prefix_len)
{
    const char *dot = strrchr(name, '.');
    if (!dot) {
        *prefix_len = 0;
        return name;
    }
    *prefix_len = (size_t)(dot - name);
    return dot + 1;
}

nf_status nf_import_expect_member(const nf_import_tensor *t, const nf_import_tensor *codes, const char *component,
                                  const char *what, nf_error *err)
{
    if (t->ggml_type >= 0)
        return nf_import_fail(err, NF_ERR_INVALID, t->name,
                              "is a GGUF tensor (ggml type %d, %s), not the safetensors %s of %s checkpoint",
                              t->ggml_type, nf_import_ggml_name(t->ggml_type), component, what);
    size_t plen, codes_plen;
    const char *comp = last_component(t->name, &plen);
    /* A dialect is recognised by its companion names: a weight_global_scale given as a ModelOpt
     * weight_scale_2 would silently invert the divisor, so names are not taken on trust. */
    if (strcmp(comp, component) != 0)
        return nf_import_fail(err, NF_ERR_INVALID, t->name,
                              "is not a '%s' tensor: %s checkpoint names it '<prefix>.%s'", component, what, component);
    last_component(codes->name, &codes_plen);
    if (t != codes && (plen != codes_plen || strncmp(t->name, codes->name, plen) != 0))
        return nf_import_fail(err, NF_ERR_INVALID, t->name, "does not belong to the same layer as '%s'", codes->name);
    return NF_OK;
}

nf_status nf_import_expect_dtype(const nf_import_tensor *t, const char *dtype, const char *what, nf_error *err)
{
    if (!t->dtype || strcmp(t->dtype, dtype) != 0)
        return nf_import_fail(err, NF_ERR_INVALID, t->name, "dtype %s is not %s, as %s requires",
                              t->dtype ? t->dtype : "(none)", dtype, what);
    return NF_OK;
}
