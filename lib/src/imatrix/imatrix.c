/* llama-imatrix GGUF reader and the source-name mapping (see ninfer/imatrix.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include <ninfer/format.h>
#include <ninfer/imatrix.h>
#include <ninfer/names.h>
#include <ninfer/source.h>

#include "common/fail.h"
#include "common/open_regular.h"


/* A .zst imatrix decompresses to at most MAX_ZST_BYTES, and to at most MAX_ZST_RATIO times its
 * compressed size (rounded up to a power of two, at least MIN_ZST_BYTES): llama-imatrix output is
 * floats that zstd shrinks by a few percent, while a "zip bomb" of zeros shrinks 30,000-fold, so
 * without the ratio a 40 KB file made the reader allocate 1 GiB. */
#define MAX_ZST_BYTES ((uint64_t)1 << 30)
#define MIN_ZST_BYTES ((uint64_t)16 << 20)
#define MAX_ZST_RATIO 64u

typedef struct entry {
    char *name;
    uint64_t length; /* values: mats x cols */
    uint64_t mats;   /* 1, or a stacked experts tensor's experts (one vector and count each); 0 in
                        a legacy file, which does not say: as many as the length holds */
    float *importance;
} entry;

struct nf_imatrix {
    entry *entries;
    size_t count;
    char **ignored; /* the tensors of a GGUF file that are not T.in_sum2 / T.counts */
    size_t nignored;
    char *label; /* the path (or name) it was opened from: its messages name it */
};

void nf_imatrix_close(nf_imatrix *m)
{
    if (!m) return;
    for (size_t i = 0; i < m->count; i++) {
        free(m->entries[i].name);
        free(m->entries[i].importance);
    }
    free(m->entries);
    for (size_t i = 0; i < m->nignored; i++) free(m->ignored[i]);
    free(m->ignored);
    free(m->label);
    free(m);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

/* Entries sorted by name, for find's binary search; a name given twice is refused. */
static nf_status sort_entries(nf_imatrix *m, const char *label, nf_error *err)
{
    qsort(m->entries, m->count, sizeof *m->entries, cmp_entry);
    for (size_t i = 0; i + 1 < m->count; i++)
        if (strcmp(m->entries[i].name, m->entries[i + 1].name) == 0)
            return nf_error_set(err, NF_ERR_INVALID, "%s: imatrix entry '%s' appears twice", label, m->entries[i].name);
    return NF_OK;
}

/* One entry from T.in_sum2 and T.counts. */
static nf_status load_entry(const nf_source *src, const nf_source_tensor *sum, const char *label, entry *e,
                            nf_error *err)
{
    size_t base = strlen(sum->name) - strlen(".in_sum2");
    e->name = strndup(sum->name, base);
    if (!e->name) return nf_common_nomem(err);
    char counts_name[1100];
    snprintf(counts_name, sizeof counts_name, "%s.counts", e->name);
    const nf_source_tensor *cnt = nf_source_find(src, counts_name);
    if (!cnt) return nf_error_set(err, NF_ERR_INVALID, "%s: '%s' has no '%s'", label, sum->name, counts_name);
    if (sum->ggml_type != 0 || cnt->ggml_type != 0)
        return nf_error_set(err, NF_ERR_INVALID, "%s: '%s' and '%s' must be F32", label, sum->name, counts_name);
    /* a stacked experts tensor's entry: one row of sums and one count per expert
     * (docs/names.md, "Experts") */
    if (sum->rank != 1 && sum->rank != 2)
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: '%s' must be a vector (one value per input column), or one "
                            "per expert",
                            label, sum->name);
    e->mats = sum->rank == 2 ? sum->rows : 1;
    if (cnt->elements != e->mats)
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: '%s' holds %llu values; expected %llu (dense counts: one per row of '%s')", label,
                            counts_name, (unsigned long long)cnt->elements, (unsigned long long)e->mats, sum->name);
    e->length = sum->elements;
    size_t n = (size_t)e->length, mats = (size_t)e->mats, cols = mats ? n / mats : 0;
    float *counts = malloc((mats ? mats : 1) * sizeof *counts);
    e->importance = malloc((n ? n : 1) * sizeof *e->importance);
    if (!e->importance || !counts) {
        free(counts);
        return nf_common_nomem(err);
    }
    nf_status st = nf_source_read_f32(src, cnt, 0, cnt->rows, counts, mats, err);
    for (size_t j = 0; st == NF_OK && j < mats; j++)
        if (!isfinite(counts[j]) || counts[j] < 0.0f)
            st = nf_error_set(err, NF_ERR_INVALID, "%s: '%s' value %zu is %g: counts must be finite and non-negative",
                              label, counts_name, j, (double)counts[j]);
    if (st == NF_OK) st = nf_source_read_f32(src, sum, 0, sum->rows, e->importance, n, err);
    for (size_t k = 0; st == NF_OK && k < n; k++) {
        float v = e->importance[k], count = counts[k / cols];
        if (!isfinite(v) || v < 0.0f)
            st = nf_error_set(err, NF_ERR_INVALID,
                              "%s: '%s' column %zu is %g: importance must be finite and non-negative", label, sum->name,
                              k % cols, (double)v);
        /* a row whose count is 0 never saw an input: llama.cpp's quantize weighs it 1 throughout
         * (docs/decisions.md D19) */
        e->importance[k] = count == 0.0f ? 1.0f : v / (count > 1.0f ? count : 1.0f);
    }
    free(counts);
    return st;
}

static nf_status load(nf_source *src, const char *label, nf_imatrix **out, nf_error *err)
{
    nf_imatrix *m = calloc(1, sizeof *m);
    size_t total = nf_source_tensor_count(src);
    if (m) m->entries = calloc(total ? total : 1, sizeof *m->entries);
    if (m) m->label = strdup(label);
    if (!m || !m->entries || !m->label) {
        nf_imatrix_close(m);
        return nf_common_nomem(err);
    }
    for (size_t i = 0; i < total; i++) {
        const nf_source_tensor *t = nf_source_tensor_at(src, i);
        if (ends_with(t->name, ".in_sum2")) {
            nf_status st = load_entry(src, t, label, &m->entries[m->count], err);
            m->count++;
            if (st != NF_OK) {
                nf_imatrix_close(m);
                return st;
            }
        } else if (ends_with(t->name, ".counts")) {
            char sums[1100];
            snprintf(sums, sizeof sums, "%.*s.in_sum2", (int)(strlen(t->name) - strlen(".counts")), t->name);
            if (!nf_source_find(src, sums)) {
                nf_imatrix_close(m);
                return nf_error_set(err, NF_ERR_INVALID, "%s: '%s' has no '%s': sums and counts come in pairs", label,
                                    t->name, sums);
            }
        } else {
            /* another tensor (a newer llama-imatrix's T.in_sum, ...): llama.cpp's quantize ignores
             * it, and so does this reader; nf_imatrix_ignored_at names it */
            char **grown = realloc(m->ignored, (m->nignored + 1) * sizeof *grown);
            if (grown) m->ignored = grown;
            if (!grown || !(m->ignored[m->nignored] = strdup(t->name))) {
                nf_imatrix_close(m);
                return nf_common_nomem(err);
            }
            m->nignored++;
        }
    }
    if (m->count == 0) {
        nf_imatrix_close(m);
        return nf_error_set(err, NF_ERR_INVALID, "%s: no T.in_sum2 tensors: not a llama-imatrix file", label);
    }
    nf_status sorted = sort_entries(m, label, err);
    if (sorted != NF_OK) {
        nf_imatrix_close(m);
        return sorted;
    }
    *out = m;
    return NF_OK;
}

/* ---------------------------------------------------------------- the legacy format */
/* llama-imatrix's file before GGUF (ik_llama.cpp still writes it; docs/security.md 2.5), all
 * little-endian: int32 n_entries >= 1; per entry int32 len, len bytes of name, int32 ncall, int32
 * nval >= 1, nval binary32 values; then, optionally, int32 last_call, int32 dataset_len and that
 * many bytes of the dataset's name.  Importance = value / ncall when ncall > 0, as llama.cpp's
 * quantize reads it (the file stores sum / count * ncall), else the value.  A stacked experts
 * tensor's entry is its experts' vectors one after the other, without saying how many. */
#define LEGACY_NAME_MAX 4096u

typedef struct legacy_cursor {
    const uint8_t *p;
    size_t len, at;
} legacy_cursor;

static bool legacy_i32(legacy_cursor *c, int32_t *v)
{
    if (c->len - c->at < 4) return false;
    const uint8_t *b = c->p + c->at;
    uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    *v = u <= INT32_MAX ? (int32_t)u : -(int32_t)(~u) - 1;
    c->at += 4;
    return true;
}

#define LEGACY_FAIL(...)                                     \
    do {                                                     \
        st = nf_error_set(err, NF_ERR_INVALID, __VA_ARGS__); \
        goto done;                                           \
    } while (0)

static nf_status load_legacy(const uint8_t *data, size_t len, const char *label, nf_imatrix **out, nf_error *err)
{
    legacy_cursor c = {data, len, 0};
    nf_status st = NF_OK;
    int32_t n = 0;
    nf_imatrix *m = calloc(1, sizeof *m);
    if (!m || !(m->label = strdup(label))) {
        nf_imatrix_close(m);
        return nf_common_nomem(err);
    }
    if (!legacy_i32(&c, &n) || n < 1)
        LEGACY_FAIL("%s: neither GGUF nor a legacy llama-imatrix file (its first 4 bytes are no entry count >= 1)",
                    label);
    /* every entry takes at least 17 bytes: a count the file cannot hold is refused before memory
     * is taken for it */
    if ((uint64_t)n > (len - 4) / 17)
        LEGACY_FAIL("%s: neither GGUF nor a legacy llama-imatrix file: %d entries do not fit in its %zu bytes", label,
                    (int)n, len);
    if (!(m->entries = calloc((size_t)n, sizeof *m->entries))) {
        st = nf_common_nomem(err);
        goto done;
    }
    for (int32_t i = 0; i < n; i++) {
        const size_t at = c.at;
        int32_t nlen = 0, ncall = 0, nval = 0;
        if (!legacy_i32(&c, &nlen) || nlen < 1 || (uint32_t)nlen > LEGACY_NAME_MAX || (size_t)nlen > c.len - c.at)
            LEGACY_FAIL("%s: legacy imatrix: entry %d at byte %zu: name length %d is not 1..%u bytes inside the file",
                        label, (int)i, at, (int)nlen, LEGACY_NAME_MAX);
        if (memchr(c.p + c.at, 0, (size_t)nlen))
            LEGACY_FAIL("%s: legacy imatrix: entry %d at byte %zu: its name holds a NUL byte", label, (int)i, at);
        entry *e = &m->entries[m->count];
        if (!(e->name = strndup((const char *)c.p + c.at, (size_t)nlen))) {
            st = nf_common_nomem(err);
            goto done;
        }
        m->count++;
        c.at += (size_t)nlen;
        if (!legacy_i32(&c, &ncall) || !legacy_i32(&c, &nval) || nval < 1 || (size_t)nval > (c.len - c.at) / 4)
            LEGACY_FAIL("%s: legacy imatrix: entry %d '%s' at byte %zu: %d values do not fit in the file (%zu bytes "
                        "left)",
                        label, (int)i, e->name, at, (int)nval, c.len - c.at);
        e->length = (uint64_t)nval;
        e->mats = 0;
        if (!(e->importance = malloc((size_t)nval * sizeof *e->importance))) {
            st = nf_common_nomem(err);
            goto done;
        }
        for (int32_t k = 0; k < nval; k++) {
            int32_t bits = 0;
            (void)legacy_i32(&c, &bits); /* inside the file: checked above */
            float v = nf_f32_from_bits((uint32_t)bits);
            if (!isfinite(v) || v < 0.0f)
                LEGACY_FAIL("%s: legacy imatrix: entry '%s' value %d (byte %zu) is %g: importance must be finite and "
                            "non-negative",
                            label, e->name, (int)k, c.at - 4, (double)v);
            e->importance[k] = ncall > 0 ? v / (float)ncall : v;
        }
    }
    if (c.at < c.len) { /* the trailer: the last chunk and the dataset's name */
        const size_t at = c.at;
        int32_t last = 0, dlen = 0;
        if (!legacy_i32(&c, &last) || !legacy_i32(&c, &dlen) || dlen < 0 || (size_t)dlen > c.len - c.at)
            LEGACY_FAIL("%s: legacy imatrix: byte %zu: %zu bytes after the last entry are not its trailer (int32 "
                        "chunks, int32 length, the dataset's name)",
                        label, at, len - at);
        c.at += (size_t)dlen;
        if (c.at != c.len)
            LEGACY_FAIL("%s: legacy imatrix: byte %zu: %zu bytes after the dataset's name", label, c.at, c.len - c.at);
    }
    st = sort_entries(m, label, err);
done:
    if (st != NF_OK) {
        nf_imatrix_close(m);
        return st;
    }
    *out = m;
    return NF_OK;
}

static bool is_gguf(const void *data, size_t len) { return len >= 4 && memcmp(data, "GGUF", 4) == 0; }

nf_status nf_imatrix_open_memory(const void *data, size_t len, const char *name, nf_imatrix **out, nf_error *err)
{
    *out = NULL;
    if (!is_gguf(data, len)) return load_legacy(data, len, name ? name : "<memory>", out, err);
    nf_source *src = NULL;
    NF_TRY(nf_source_open_memory(data, len, NF_SOURCE_GGUF, name, &src, err));
    nf_status st = load(src, name ? name : "<memory>", out, err);
    nf_source_close(src);
    return st;
}

/* Reads and decompresses a .zst file whole (imatrix files are a few MB). */
static nf_status read_zst(const char *path, void **data, size_t *len, nf_error *err)
{
    *data = NULL;
    /* (not fopen: it would block on a FIFO until a writer comes, a hang; common/open_regular.h) */
    int fd;
    struct stat sb;
    NF_TRY(nf_common_open_regular(path, path, NF_ERR_INVALID, &fd, &sb, err));
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        close(fd);
        return nf_error_errno(err, e, "cannot open %s", path);
    }
    uint64_t limit = MIN_ZST_BYTES;
    while (limit < MAX_ZST_BYTES && limit / MAX_ZST_RATIO < (uint64_t)sb.st_size) limit *= 2;
    ZSTD_DCtx *dctx = ZSTD_createDCtx();
    size_t in_cap = ZSTD_DStreamInSize();
    unsigned char *in = malloc(in_cap);
    size_t cap = 1 << 20, used = 0;
    unsigned char *buf = malloc(cap);
    nf_status st = NF_OK;
    size_t last = 1;
    if (!dctx || !in || !buf) st = nf_common_nomem(err);
    size_t n;
    while (st == NF_OK && (n = fread(in, 1, in_cap, f)) > 0) {
        ZSTD_inBuffer zin = {in, n, 0};
        while (st == NF_OK && zin.pos < zin.size) {
            if (cap - used < (1 << 16)) {
                if ((uint64_t)cap * 2 > limit) {
                    st = nf_error_set(err, NF_ERR_INVALID,
                                      "%s: after %llu compressed bytes: decompresses to more "
                                      "than %llu bytes (the reader's cap for a %llu-byte file: %u times its "
                                      "size, at least 16 MiB, at most 1 GiB)",
                                      path, (unsigned long long)ftell(f), (unsigned long long)limit,
                                      (unsigned long long)sb.st_size, MAX_ZST_RATIO);
                    break;
                }
                unsigned char *grown = realloc(buf, cap * 2);
                if (!grown) {
                    st = nf_common_nomem(err);
                    break;
                }
                buf = grown;
                cap *= 2;
            }
            ZSTD_outBuffer zout = {buf + used, cap - used, 0};
            last = ZSTD_decompressStream(dctx, &zout, &zin);
            if (ZSTD_isError(last)) st = nf_error_set(err, NF_ERR_INVALID, "%s: %s", path, ZSTD_getErrorName(last));
            used += zout.pos;
        }
    }
    if (st == NF_OK && ferror(f)) st = nf_error_errno(err, errno, "cannot read %s", path);
    if (st == NF_OK && last != 0) st = nf_error_set(err, NF_ERR_INVALID, "%s: truncated zstd stream", path);
    fclose(f);
    ZSTD_freeDCtx(dctx);
    free(in);
    if (st != NF_OK) {
        free(buf);
        return st;
    }
    *data = buf;
    *len = used;
    return NF_OK;
}

/* The first bytes of a file (fewer, zero-filled, when it is shorter). */
static nf_status read_head(const char *path, uint8_t magic[4], nf_error *err)
{
    int fd;
    struct stat sb;
    NF_TRY(nf_common_open_regular(path, path, NF_ERR_INVALID, &fd, &sb, err));
    ssize_t n = pread(fd, magic, 4, 0);
    int e = errno;
    close(fd);
    if (n < 0) return nf_error_errno(err, e, "cannot read %s", path);
    return NF_OK;
}

/* A legacy imatrix file, whole (its importance is held whole anyway). */
static nf_status read_whole(const char *path, void **data, size_t *len, nf_error *err)
{
    int fd;
    struct stat sb;
    *data = NULL;
    NF_TRY(nf_common_open_regular(path, path, NF_ERR_INVALID, &fd, &sb, err));
    size_t size = (size_t)sb.st_size, got = 0;
    uint8_t *buf = malloc(size ? size : 1);
    nf_status st = buf ? NF_OK : nf_common_nomem(err);
    while (st == NF_OK && got < size) {
        ssize_t n = pread(fd, buf + got, size - got, (off_t)got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            st = n < 0 ? nf_error_errno(err, errno, "cannot read %s", path)
                       : nf_error_set(err, NF_ERR_IO, "%s: shrank while read", path);
        else got += (size_t)n;
    }
    close(fd);
    if (st != NF_OK) {
        free(buf);
        return st;
    }
    *data = buf;
    *len = size;
    return NF_OK;
}

nf_status nf_imatrix_open(const char *path, nf_imatrix **out, nf_error *err)
{
    *out = NULL;
    if (ends_with(path, ".zst")) {
        void *data = NULL;
        size_t len = 0;
        NF_TRY(read_zst(path, &data, &len, err));
        nf_status st = nf_imatrix_open_memory(data, len, path, out, err);
        free(data);
        return st;
    }
    uint8_t magic[4] = {0};
    NF_TRY(read_head(path, magic, err));
    if (!is_gguf(magic, 4)) { /* the legacy format, read whole */
        void *data = NULL;
        size_t len = 0;
        NF_TRY(read_whole(path, &data, &len, err));
        nf_status st = load_legacy(data, len, path, out, err);
        free(data);
        return st;
    }
    nf_source *src = NULL;
    NF_TRY(nf_source_open(path, &src, err));
    nf_status st = nf_source_kind_of(src) == NF_SOURCE_GGUF
                       ? load(src, path, out, err)
                       : nf_error_set(err, NF_ERR_INVALID, "%s: an imatrix must be llama-imatrix GGUF output", path);
    nf_source_close(src);
    return st;
}

size_t nf_imatrix_count(const nf_imatrix *m) { return m->count; }

const char *nf_imatrix_name_at(const nf_imatrix *m, size_t i, uint64_t *length, const float **importance)
{
    if (i >= m->count) return NULL;
    if (length) *length = m->entries[i].length;
    if (importance) *importance = m->entries[i].importance;
    return m->entries[i].name;
}

/* ---------------------------------------------------------------- name mapping */
/* Suffixes of a layer's Hugging Face names and their llama.cpp counterparts. */
static const struct {
    const char *hf, *gguf;
} layer_map[] = {
    {"self_attn.q_proj", "attn_q"},
    {"self_attn.k_proj", "attn_k"},
    {"self_attn.v_proj", "attn_v"},
    {"self_attn.o_proj", "attn_output"},
    {"self_attn.qkv_proj", "attn_qkv"},
    {"self_attn.q_norm", "attn_q_norm"},
    {"self_attn.k_norm", "attn_k_norm"},
    {"mlp.gate_proj", "ffn_gate"},
    {"mlp.up_proj", "ffn_up"},
    {"mlp.down_proj", "ffn_down"},
    {"mlp.gate_up_proj", "ffn_gate_up"},
    {"input_layernorm", "attn_norm"},
    {"post_attention_layernorm", "ffn_norm"},
};

size_t nf_imatrix_gguf_name(const char *hf, char *out, size_t size)
{
    if (size == 0) return 0;
    out[0] = '\0';
    const char *kind = ends_with(hf, ".weight") ? "weight" : ends_with(hf, ".bias") ? "bias" : NULL;
    if (!kind) return 0;
    size_t stem = strlen(hf) - strlen(kind) - 1;
    int n;
    if (strncmp(hf, "model.embed_tokens", stem) == 0 && stem == strlen("model.embed_tokens"))
        n = snprintf(out, size, "token_embd.%s", kind);
    else if (strncmp(hf, "lm_head", stem) == 0 && stem == strlen("lm_head")) n = snprintf(out, size, "output.%s", kind);
    else if (strncmp(hf, "model.norm", stem) == 0 && stem == strlen("model.norm"))
        n = snprintf(out, size, "output_norm.%s", kind);
    else {
        unsigned layer;
        int used = 0;
        if (sscanf(hf, "model.layers.%u.%n", &layer, &used) != 1 || used == 0) return 0;
        const char *rest = hf + used;
        size_t rest_len = stem - (size_t)used;
        n = -1;
        for (size_t i = 0; i < sizeof layer_map / sizeof layer_map[0]; i++)
            if (strlen(layer_map[i].hf) == rest_len && strncmp(rest, layer_map[i].hf, rest_len) == 0) {
                n = snprintf(out, size, "blk.%u.%s.%s", layer, layer_map[i].gguf, kind);
                break;
            }
        if (n < 0) return 0;
    }
    if (n < 0 || (size_t)n >= size) {
        out[0] = '\0';
        return 0;
    }
    return (size_t)n;
}

static const entry *find(const nf_imatrix *m, const char *name)
{
    const entry key = {.name = (char *)name};
    return bsearch(&key, m->entries, m->count, sizeof *m->entries, cmp_entry);
}

/* A Hugging Face name through the names table (docs/names.md), the first architecture whose GGUF
 * name the file has: shared experts, DeepSeek's attention, ...; an expert's matrix of a mixture of
 * experts takes its slice of the stacked tensor's entry ("Experts").  *e_out: the entry, or NULL
 * (then *importance is already set, or there is none). */
static nf_status find_by_table(const nf_imatrix *m, const char *tensor, uint64_t cols, const entry **e_out,
                               const float **importance, const char **matched, nf_error *err)
{
    char gguf[1100];
    nf_name_map how;
    *e_out = NULL;
    for (unsigned a = 0; a < NF_ARCH_COUNT; a++) {
        if (!nf_hf_name_to_gguf((nf_arch)a, tensor, gguf, sizeof gguf, &how)) continue;
        const entry *e = find(m, gguf);
        if (!e) continue;
        if (!how.stacked) {
            *e_out = e;
            return NF_OK;
        }
        const uint64_t mats = e->mats ? e->mats : cols ? e->length / cols : 0; /* legacy: as many as it holds */
        if (e->length != mats * cols || (uint64_t)how.expert >= mats)
            return nf_error_set(err, NF_ERR_INVALID,
                                "%s: imatrix entry '%s' holds %llu experts of %llu values; "
                                "tensor '%s' is expert %d with %llu input columns",
                                m->label, e->name, (unsigned long long)mats,
                                (unsigned long long)(mats ? e->length / mats : 0), tensor, how.expert,
                                (unsigned long long)cols);
        *importance = e->importance + (size_t)how.expert * (size_t)cols;
        if (matched) *matched = e->name;
        return NF_OK;
    }
    return NF_OK;
}

nf_status nf_imatrix_lookup(const nf_imatrix *m, const char *tensor, uint64_t cols, const float **importance,
                            const char **matched, nf_error *err)
{
    *importance = NULL;
    if (matched) *matched = NULL;
    const entry *e = find(m, tensor);
    if (!e) {
        char gguf[1100];
        if (nf_imatrix_gguf_name(tensor, gguf, sizeof gguf)) e = find(m, gguf);
    }
    if (!e) {
        NF_TRY(find_by_table(m, tensor, cols, &e, importance, matched, err));
        if (!e) return NF_OK;
    }
    if (e->length != cols)
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: imatrix entry '%s' has %llu values but tensor '%s' has %llu input columns", m->label,
                            e->name, (unsigned long long)e->length, tensor, (unsigned long long)cols);
    *importance = e->importance;
    if (matched) *matched = e->name;
    return NF_OK;
}

size_t nf_imatrix_ignored_count(const nf_imatrix *m) { return m->nignored; }

const char *nf_imatrix_ignored_at(const nf_imatrix *m, size_t i) { return i < m->nignored ? m->ignored[i] : NULL; }

/* llama.cpp's name of a Hugging Face tensor holding a layer's experts stacked
 * (model.layers.N.mlp.experts.down_proj[.weight] -> blk.N.ffn_down_exps.weight; gate_up_proj, whose
 * gate and up halves read the same input, takes ffn_gate_exps' vectors); 0 when it is not one. */
static size_t stacked_gguf_name(const char *hf, char *out, size_t size)
{
    static const struct {
        const char *hf, *gguf;
    } parts[] = {{"gate_proj", "ffn_gate_exps"},
                 {"up_proj", "ffn_up_exps"},
                 {"down_proj", "ffn_down_exps"},
                 {"gate_up_proj", "ffn_gate_exps"}};
    unsigned layer;
    int used = 0;
    if (sscanf(hf, "model.layers.%u.mlp.experts.%n", &layer, &used) != 1 || used == 0) return 0;
    const char *rest = hf + used;
    size_t n = strcspn(rest, ".");
    if (rest[n] != '\0' && strcmp(rest + n, ".weight") != 0) return 0;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (strlen(parts[i].hf) == n && strncmp(rest, parts[i].hf, n) == 0) {
            int k = snprintf(out, size, "blk.%u.%s.weight", layer, parts[i].gguf);
            return k > 0 && (size_t)k < size ? (size_t)k : 0;
        }
    return 0;
}

nf_status nf_imatrix_lookup_stack(const nf_imatrix *m, const char *tensor, uint64_t mats, uint64_t cols,
                                  const float **importance, uint64_t *length, const char **matched, nf_error *err)
{
    *importance = NULL;
    if (length) *length = 0;
    if (matched) *matched = NULL;
    if (mats <= 1) {
        NF_TRY(nf_imatrix_lookup(m, tensor, cols, importance, matched, err));
        if (length && *importance) *length = cols;
        return NF_OK;
    }
    const entry *e = find(m, tensor);
    char gguf[1100];
    if (!e && stacked_gguf_name(tensor, gguf, sizeof gguf)) e = find(m, gguf);
    if (!e) return NF_OK;
    const uint64_t held = e->mats ? e->mats : cols ? e->length / cols : 0;
    if (e->length == cols && e->mats <= 1) { /* one vector: every matrix weighs the same */
        *importance = e->importance;
        if (length) *length = cols;
    } else if (held == mats && e->length == mats * cols) {
        *importance = e->importance;
        if (length) *length = mats * cols;
    } else {
        return nf_error_set(err, NF_ERR_INVALID,
                            "%s: imatrix entry '%s' holds %llu values (%llu experts); tensor '%s' stacks %llu matrices "
                            "of %llu input columns",
                            m->label, e->name, (unsigned long long)e->length, (unsigned long long)held, tensor,
                            (unsigned long long)mats, (unsigned long long)cols);
    }
    if (matched) *matched = e->name;
    return NF_OK;
}
