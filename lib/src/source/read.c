/* Reading tensor data: raw bytes, raw rows, and rows converted to binary32.
 *
 * Reads are bounded: every range is checked against the tensor, and conversion works through a
 * scratch buffer of at most SRC_READ_CHUNK bytes (whole storage blocks), so converting a huge
 * row never allocates more than that.  Nothing here keeps state between calls, which is what
 * makes concurrent reads on one source safe. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "common/fail.h"
#include "format/ggml.h"
#include "source/inflate.h"
#include "source/store.h"

#define SRC_READ_CHUNK ((size_t)1 << 20)

/* The slot of a public tensor pointer, or NULL when it is not one of s's tensors. */
static const src_tensor *owned(const nf_source *s, const nf_source_tensor *t)
{
    if (!s || !t || s->ntensors == 0) return NULL;
    uintptr_t base = (uintptr_t)s->tensors, p = (uintptr_t)t;
    if (p < base || p >= base + s->ntensors * sizeof(src_tensor) || (p - base) % sizeof(src_tensor) != 0) return NULL;
    return (const src_tensor *)t;
}

static nf_status not_owned(const nf_source *s, const char *fn, nf_error *err)
{
    return nf_error_set(err, NF_ERR_USAGE, "%s: %s: the tensor does not belong to this source", s ? s->path : "?", fn);
}

/* ---------------------------------------------------------------- storage */
/* Bytes [at, at + len) of the tensor's storage counted from its element 0: in the file, or in the
 * deflated member holding it (PyTorch archives, inflate.h). */
static nf_status storage_read(const nf_source *s, const src_tensor *st, uint64_t at, void *buf, size_t len,
                              nf_error *err)
{
    const src_file *f = &s->files[st->pub.file];
    if (st->inflate && st->stride)
        return nf_source_inflate_read_whole(s->inflate, f, st->inflate, st->inflate_at + at, buf, len, err);
    if (st->inflate) return nf_source_inflate_read(s->inflate, f, st->inflate, st->inflate_at + at, buf, len, err);
    return nf_source_file_read(f, st->pub.offset + at, buf, len, err);
}

/* ---------------------------------------------------------------- strided views */
/* A PyTorch view that is not one contiguous run of its storage (a transposed weight, a slice of
 * columns; docs/security.md 2.6) is read by gathering: t->offset places the view's element 0 in the
 * file, st->stride[k] the storage elements between neighbours along dimension k (the reader checked
 * every position lies inside the storage).  The bytes produced are those of the row-major tensor. */
static uint64_t view_position(const src_tensor *st, uint64_t element)
{
    const nf_source_tensor *t = &st->pub;
    uint64_t pos = 0;
    for (uint32_t k = t->rank; k-- > 0;) {
        pos += (element % t->shape[k]) * st->stride[k];
        element /= t->shape[k];
    }
    return pos;
}

/* At most SRC_READ_CHUNK bytes of elements [e, e + m): when the storage span they lie in is at most
 * GATHER_SPAN times their bytes (a step slice, columns with small gaps between rows), the span is
 * read once and the elements picked from it; else each run along a row with stride 1, or each
 * element, is read on its own. */
#define GATHER_SPAN 8u
static nf_status gather_batch(const nf_source *s, const src_tensor *st, uint64_t e, uint64_t m, uint8_t *out,
                              nf_error *err)
{
    const nf_source_tensor *t = &st->pub;
    const uint64_t es = t->block_bytes, cols = t->rank ? t->shape[t->rank - 1] : 1;
    const uint64_t last = t->rank ? st->stride[t->rank - 1] : 1;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint64_t k = 0; k < m; k++) {
        const uint64_t p = view_position(st, e + k);
        if (p < lo) lo = p;
        if (p > hi) hi = p;
    }
    if (m > 0 && hi - lo < GATHER_SPAN * m) {
        uint8_t *span = malloc((size_t)((hi - lo + 1) * es));
        if (!span) return nf_common_nomem_in(err, s->files[t->file].path);
        nf_status rc = storage_read(s, st, lo * es, span, (size_t)((hi - lo + 1) * es), err);
        for (uint64_t k = 0; rc == NF_OK && k < m; k++)
            memcpy(out + k * es, span + (view_position(st, e + k) - lo) * es, (size_t)es);
        free(span);
        return rc;
    }
    for (uint64_t k = 0; k < m;) {
        const uint64_t c = (e + k) % cols;
        uint64_t run = 1;
        if (last == 1) run = cols - c < m - k ? cols - c : m - k;
        NF_TRY(storage_read(s, st, view_position(st, e + k) * es, out + k * es, (size_t)(run * es), err));
        k += run;
    }
    return NF_OK;
}

/* Elements [e, e + n): down the columns when rows [ra, rb) are whole and the first dimension's
 * stride is 1 (a transposed matrix: one read per column of the rows), else in batches
 * (gather_batch). */
static nf_status gather_elements(const nf_source *s, const src_tensor *st, uint64_t e, uint64_t n, uint8_t *out,
                                 nf_error *err)
{
    const nf_source_tensor *t = &st->pub;
    const src_file *f = &s->files[t->file];
    const uint64_t es = t->block_bytes, cols = t->rank ? t->shape[t->rank - 1] : 1;
    const uint64_t last = t->rank ? st->stride[t->rank - 1] : 1;
    if (t->rank == 2 && cols > 0 && st->stride[0] == 1 && last != 1 && e % cols == 0 && n % cols == 0 &&
        n >= 2 * cols) {
        const uint64_t ra = e / cols, nr = n / cols;
        const uint64_t piece = SRC_READ_CHUNK / es < nr ? SRC_READ_CHUNK / es : nr;
        uint8_t *col = malloc((size_t)(piece * es));
        if (!col) return nf_common_nomem_in(err, f->path);
        nf_status rc = NF_OK;
        for (uint64_t j = 0; j < cols && rc == NF_OK; j++)
            for (uint64_t i = 0; i < nr && rc == NF_OK; i += piece) {
                const uint64_t m = nr - i < piece ? nr - i : piece;
                rc = storage_read(s, st, (ra + i + j * last) * es, col, (size_t)(m * es), err);
                for (uint64_t q = 0; rc == NF_OK && q < m; q++)
                    memcpy(out + ((i + q) * cols + j) * es, col + q * es, (size_t)es);
            }
        free(col);
        return rc;
    }
    const uint64_t batch = SRC_READ_CHUNK / es;
    for (uint64_t k = 0; k < n;) {
        const uint64_t m = n - k < batch ? n - k : batch;
        NF_TRY(gather_batch(s, st, e + k, m, out + k * es, err));
        k += m;
    }
    return NF_OK;
}

/* Bytes [off, off + len) of the row-major tensor: whole elements gathered, a partial one at either
 * end through a one-element buffer. */
static nf_status gather(const nf_source *s, const src_tensor *st, uint64_t off, uint8_t *buf, size_t len, nf_error *err)
{
    const uint64_t es = st->pub.block_bytes;
    while (len > 0) {
        const uint64_t e = off / es, within = off % es;
        if (within != 0 || len < es) {
            uint8_t one[16];
            NF_TRY(gather_elements(s, st, e, 1, one, err));
            const size_t k = es - within < len ? (size_t)(es - within) : len;
            memcpy(buf, one + within, k);
            buf += k, off += k, len -= k;
            continue;
        }
        const uint64_t n = len / es;
        NF_TRY(gather_elements(s, st, e, n, buf, err));
        buf += n * es, off += n * es, len -= (size_t)(n * es);
    }
    return NF_OK;
}

/* The one way tensor bytes are read: in place, or gathered for a strided view. */
static nf_status tensor_read(const nf_source *s, const nf_source_tensor *t, uint64_t off, void *buf, size_t len,
                             nf_error *err)
{
    const src_tensor *st = (const src_tensor *)t;
    if (!st->stride) return storage_read(s, st, off, buf, len, err);
    return gather(s, st, off, buf, len, err);
}

nf_status nf_source_read_bytes(const nf_source *s, const nf_source_tensor *t, uint64_t offset, void *buf, size_t len,
                               nf_error *err)
{
    if (!owned(s, t)) return not_owned(s, "nf_source_read_bytes", err);
    if (!buf && len > 0) return nf_error_set(err, NF_ERR_USAGE, "%s: nf_source_read_bytes: NULL buffer", s->path);
    uint64_t end;
    if (!nf_add_u64(offset, len, &end) || end > t->bytes)
        return nf_error_set(err, NF_ERR_USAGE, "%s: tensor '%s': bytes [%llu, +%zu) outside its %llu bytes",
                            s->files[t->file].path, t->name, (unsigned long long)offset, len,
                            (unsigned long long)t->bytes);
    return tensor_read(s, t, offset, buf, len, err);
}

static nf_status check_rows(const nf_source *s, const nf_source_tensor *t, uint64_t r0, uint64_t r1, nf_error *err)
{
    if (r0 > r1 || r1 > t->rows)
        return nf_error_set(err, NF_ERR_USAGE, "%s: tensor '%s': rows [%llu, %llu) outside its %llu rows",
                            s->files[t->file].path, t->name, (unsigned long long)r0, (unsigned long long)r1,
                            (unsigned long long)t->rows);
    if (t->row_elements % t->block_values != 0)
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: tensor '%s': a row of %llu %s values is not whole bytes; read "
                            "the tensor's bytes instead",
                            s->files[t->file].path, t->name, (unsigned long long)t->row_elements, t->type_name);
    return NF_OK;
}

nf_status nf_source_read_rows(const nf_source *s, const nf_source_tensor *t, uint64_t r0, uint64_t r1, void *buf,
                              size_t buf_len, nf_error *err)
{
    if (!owned(s, t)) return not_owned(s, "nf_source_read_rows", err);
    NF_TRY(check_rows(s, t, r0, r1, err));
    uint64_t need = (r1 - r0) * t->row_bytes; /* <= t->bytes */
    if (need > buf_len)
        return nf_error_set(err, NF_ERR_USAGE,
                            "%s: tensor '%s': rows [%llu, %llu) need %llu bytes, the buffer holds "
                            "%zu",
                            s->files[t->file].path, t->name, (unsigned long long)r0, (unsigned long long)r1,
                            (unsigned long long)need, buf_len);
    if (!buf && need > 0) return nf_error_set(err, NF_ERR_USAGE, "%s: nf_source_read_rows: NULL buffer", s->path);
    return tensor_read(s, t, r0 * t->row_bytes, buf, (size_t)need, err);
}

/* ---------------------------------------------------------------- conversion */
typedef enum conv_kind {
    CONV_NONE,
    CONV_F32,
    CONV_F16,
    CONV_BF16,
    CONV_F64,
    CONV_E4M3,
    CONV_E5M2,
    CONV_I8,
    CONV_U8,
    CONV_I16,
    CONV_I32,
    CONV_I64,
    CONV_BOOL,
    CONV_GGML,        /* one of the 18 imported block types */
    CONV_GGML_VALUES, /* a ggml block type read as values only (format/ggml.h) */
    CONV_PQ2
} conv_kind;

static conv_kind conv_of(const nf_source_tensor *t)
{
    if (t->dtype != NF_ST_NONE) {
        switch (t->dtype) {
        case NF_ST_F32: return CONV_F32;
        case NF_ST_F16: return CONV_F16;
        case NF_ST_BF16: return CONV_BF16;
        case NF_ST_F64: return CONV_F64;
        case NF_ST_F8_E4M3: return CONV_E4M3;
        case NF_ST_F8_E5M2: return CONV_E5M2;
        case NF_ST_I8: return CONV_I8;
        case NF_ST_U8: return CONV_U8;
        case NF_ST_I16: return CONV_I16;
        case NF_ST_I32: return CONV_I32;
        case NF_ST_I64: return CONV_I64;
        case NF_ST_BOOL: return CONV_BOOL;
        default: return CONV_NONE;
        }
    }
    switch (t->ggml_type) {
    case NF_GGML_TYPE_F32: return CONV_F32;
    case NF_GGML_TYPE_F16: return CONV_F16;
    case NF_GGML_TYPE_BF16: return CONV_BF16;
    case 24: return CONV_I8;
    case 25: return CONV_I16;
    case 26: return CONV_I32;
    case 27: return CONV_I64;
    case 28: return CONV_F64;
    case NF_GGML_TYPE_PQ2_0: return CONV_PQ2;
    default: return t->format ? CONV_GGML : nf_ggml_values_type(t->ggml_type) ? CONV_GGML_VALUES : CONV_NONE;
    }
}

static nf_status bad_value(const nf_source *s, const nf_source_tensor *t, uint64_t element, const char *what,
                           unsigned byte, nf_error *err)
{
    uint64_t row = t->row_elements ? element / t->row_elements : 0;
    uint64_t col = t->row_elements ? element % t->row_elements : 0;
    return nf_error_set(err, NF_ERR_INVALID, "%s: tensor '%s': row %llu column %llu: %s 0x%02x", s->files[t->file].path,
                        t->name, (unsigned long long)row, (unsigned long long)col, what, byte);
}

/* The shortest %.Ng that reads back as d (15 to 17 significant digits): 1e300 prints as 1e+300. */
static void format_f64(double d, char *buf, size_t size)
{
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, size, "%.*g", digits, d);
        if (strtod(buf, NULL) == d) return;
    }
}

static nf_status f64_overflow(const nf_source *s, const nf_source_tensor *t, uint64_t element, double d, nf_error *err)
{
    uint64_t row = t->row_elements ? element / t->row_elements : 0;
    uint64_t col = t->row_elements ? element % t->row_elements : 0;
    char value[40];
    format_f64(d, value, sizeof value);
    return nf_error_set(err, NF_ERR_INVALID,
                        "%s: tensor '%s': row %llu column %llu: source value %s (%s) overflows "
                        "binary32",
                        s->files[t->file].path, t->name, (unsigned long long)row, (unsigned long long)col, value,
                        t->type_name);
}

/* Convert nblocks storage blocks at raw (whose first element is element `first` of the tensor). */
static nf_status convert(const nf_source *s, const nf_source_tensor *t, conv_kind k, const uint8_t *raw, size_t nblocks,
                         float *out, uint64_t first, nf_error *err)
{
    size_t n = nblocks; /* element kinds: one value per block */
    switch (k) {
    case CONV_F32:
        for (size_t i = 0; i < n; i++) out[i] = nf_f32_from_bits(src_rd32(raw + 4 * i));
        return NF_OK;
    case CONV_F16:
        for (size_t i = 0; i < n; i++) out[i] = nf_f16_to_f32(src_rd16(raw + 2 * i));
        return NF_OK;
    case CONV_BF16:
        for (size_t i = 0; i < n; i++) out[i] = nf_bf16_to_f32(src_rd16(raw + 2 * i));
        return NF_OK;
    case CONV_F64:
        for (size_t i = 0; i < n; i++) {
            uint64_t b = src_rd64(raw + 8 * i);
            double d;
            memcpy(&d, &b, sizeof d);
            out[i] = (float)d; /* round to nearest even (the default mode; no -ffast-math) */
            /* A finite value that rounds to infinity is not a binary32 value: refused here, with the
             * value as stored, rather than passed on as an infinity that every encoder would then
             * report as "source value +inf" (docs/security.md 7.1, M6). */
            if (isinf(out[i]) && !isinf(d)) return f64_overflow(s, t, first + i, d, err);
        }
        return NF_OK;
    case CONV_E4M3:
        for (size_t i = 0; i < n; i++) out[i] = nf_e4m3fn_to_f32(raw[i]);
        return NF_OK;
    case CONV_E5M2:
        /* E5M2 is the high byte of a binary16: same exponent bias and width. */
        for (size_t i = 0; i < n; i++) out[i] = nf_f16_to_f32((uint16_t)(raw[i] << 8));
        return NF_OK;
    case CONV_I8:
        for (size_t i = 0; i < n; i++) out[i] = (float)(raw[i] < 128 ? (int)raw[i] : (int)raw[i] - 256);
        return NF_OK;
    case CONV_U8:
        for (size_t i = 0; i < n; i++) out[i] = (float)raw[i];
        return NF_OK;
    case CONV_I16:
        for (size_t i = 0; i < n; i++) {
            int32_t v = src_rd16(raw + 2 * i);
            out[i] = (float)(v < 32768 ? v : v - 65536);
        }
        return NF_OK;
    case CONV_I32:
        for (size_t i = 0; i < n; i++) out[i] = nf_int32_value(src_rd32(raw + 4 * i));
        return NF_OK;
    case CONV_I64:
        for (size_t i = 0; i < n; i++) {
            uint64_t u = src_rd64(raw + 8 * i);
            int64_t v = u <= (uint64_t)INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
            out[i] = (float)v; /* one rounding, to nearest even */
        }
        return NF_OK;
    case CONV_BOOL:
        for (size_t i = 0; i < n; i++) {
            if (raw[i] > 1) return bad_value(s, t, first + i, "BOOL byte is neither 0 nor 1:", raw[i], err);
            out[i] = raw[i] ? 1.0f : 0.0f;
        }
        return NF_OK;
    case CONV_GGML: {
        nf_status rc = nf_ggml_dequant_row(t->format, raw, (uint64_t)nblocks * t->block_values, out, err);
        if (rc != NF_OK) nf_error_prefix(err, "%s: tensor '%s'", s->files[t->file].path, t->name);
        return rc;
    }
    case CONV_GGML_VALUES: {
        nf_status rc = nf_ggml_values_row(t->ggml_type, raw, (uint64_t)nblocks * t->block_values, out, err);
        if (rc != NF_OK) nf_error_prefix(err, "%s: tensor '%s'", s->files[t->file].path, t->name);
        return rc;
    }
    case CONV_PQ2:
        /* 128 values per 34-byte block: binary16 d, then 2-bit codes, element j in byte 2 + j/4
         * at bits 2(j%4); 00 = -1, 01 = 0, 10 = +1, 11 is not a code. */
        for (size_t b = 0; b < nblocks; b++) {
            const uint8_t *blk = raw + 34 * b;
            float d = nf_f16_to_f32(src_rd16(blk));
            for (unsigned j = 0; j < 128; j++) {
                unsigned code = ((unsigned)blk[2 + j / 4] >> (2 * (j % 4))) & 3u;
                if (code == 3)
                    return bad_value(s, t, first + 128 * b + j, "PQ2_0 code 3 is not a ternary code; byte",
                                     blk[2 + j / 4], err);
                out[128 * b + j] = (float)((int)code - 1) * d;
            }
        }
        return NF_OK;
    case CONV_NONE: break;
    }
    return nf_error_set(err, NF_ERR_INVALID, "%s: tensor '%s': %s values are not supported by this reader", s->path,
                        t->name, t->type_name);
}

/* Values [first, first + nvalues) of the tensor (element indices, both whole blocks). */
static nf_status read_values(const nf_source *s, const nf_source_tensor *t, conv_kind k, uint64_t first,
                             uint64_t nvalues, float *out, nf_error *err)
{
    const uint64_t bv = t->block_values, bb = t->block_bytes;
    uint64_t first_block = first / bv;
    uint64_t nblocks = nvalues / bv;
    uint64_t chunk = SRC_READ_CHUNK / bb;
    if (chunk == 0) chunk = 1;
    if (chunk > nblocks) chunk = nblocks;
    uint8_t *raw = malloc((size_t)(chunk * bb));
    if (!raw) return nf_common_nomem_in(err, s->path);
    nf_status rc = NF_OK;
    for (uint64_t done = 0; done < nblocks && rc == NF_OK; done += chunk) {
        uint64_t nb = nblocks - done < chunk ? nblocks - done : chunk;
        rc = tensor_read(s, t, (first_block + done) * bb, raw, (size_t)(nb * bb), err);
        if (rc == NF_OK) rc = convert(s, t, k, raw, (size_t)nb, out + done * bv, (first_block + done) * bv, err);
    }
    free(raw);
    return rc;
}

static nf_status check_convertible(const nf_source *s, const nf_source_tensor *t, conv_kind k, nf_error *err)
{
    if (k == CONV_NONE || !t->convertible)
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: tensor '%s': type %s is not supported for reading values (its "
                            "bytes can be read raw)",
                            s->files[t->file].path, t->name, t->type_name);
    return NF_OK;
}

nf_status nf_source_read_f32(const nf_source *s, const nf_source_tensor *t, uint64_t r0, uint64_t r1, float *out,
                             size_t out_len, nf_error *err)
{
    if (!owned(s, t)) return not_owned(s, "nf_source_read_f32", err);
    conv_kind k = conv_of(t);
    NF_TRY(check_convertible(s, t, k, err));
    NF_TRY(check_rows(s, t, r0, r1, err));
    uint64_t nvalues = (r1 - r0) * t->row_elements; /* <= elements */
    if (nvalues > out_len)
        return nf_error_set(err, NF_ERR_USAGE, "%s: tensor '%s': rows [%llu, %llu) hold %llu values, the buffer %zu",
                            s->files[t->file].path, t->name, (unsigned long long)r0, (unsigned long long)r1,
                            (unsigned long long)nvalues, out_len);
    if (nvalues == 0) return NF_OK;
    if (!out) return nf_error_set(err, NF_ERR_USAGE, "%s: nf_source_read_f32: NULL buffer", s->path);
    /* rows are whole blocks (checked when the tensor was read) */
    return read_values(s, t, k, r0 * t->row_elements, nvalues, out, err);
}

nf_status nf_source_read_f32_span(const nf_source *s, const nf_source_tensor *t, uint64_t row, uint64_t c0, uint64_t n,
                                  float *out, size_t out_len, nf_error *err)
{
    if (!owned(s, t)) return not_owned(s, "nf_source_read_f32_span", err);
    conv_kind k = conv_of(t);
    NF_TRY(check_convertible(s, t, k, err));
    const uint64_t cols = t->row_elements, bv = t->block_values;
    if (row >= t->rows || c0 > cols || n > cols - c0 || c0 % bv || (n % bv && c0 + n != cols))
        return nf_error_set(err, NF_ERR_USAGE,
                            "%s: tensor '%s': columns [%llu, +%llu) of row %llu are not whole "
                            "blocks of a row of %llu columns in %llu rows",
                            s->files[t->file].path, t->name, (unsigned long long)c0, (unsigned long long)n,
                            (unsigned long long)row, (unsigned long long)cols, (unsigned long long)t->rows);
    if (n > out_len)
        return nf_error_set(err, NF_ERR_USAGE, "%s: tensor '%s': a span of %llu values, the buffer %zu",
                            s->files[t->file].path, t->name, (unsigned long long)n, out_len);
    if (n == 0) return NF_OK;
    if (!out) return nf_error_set(err, NF_ERR_USAGE, "%s: nf_source_read_f32_span: NULL buffer", s->path);
    return read_values(s, t, k, row * cols + c0, n, out, err);
}

/* ---------------------------------------------------------------- byte reader */
static nf_status reader_read(void *ctx, uint64_t offset, void *buf, size_t len, nf_error *err)
{
    const src_tensor *st = ctx;
    return nf_source_read_bytes(st->owner, &st->pub, offset, buf, len, err);
}

static nf_status reader_refuse(void *ctx, uint64_t offset, void *buf, size_t len, nf_error *err)
{
    (void)ctx, (void)offset, (void)buf, (void)len;
    return nf_error_set(err, NF_ERR_USAGE, "nf_source_tensor_reader: the tensor does not belong to the source");
}

void nf_source_tensor_reader(const nf_source *s, const nf_source_tensor *t, nf_byte_reader *r)
{
    const src_tensor *st = owned(s, t);
    r->read = st ? reader_read : reader_refuse;
    r->ctx = (void *)(uintptr_t)st; /* the reader only ever reads through it */
}
