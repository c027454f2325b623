/* Planning one tensor: the problem list and where a problem stems from, the sources by name, the
 * import of tensors that are already encoded, and one tensor's object (its choice, format,
 * layout, method and geometry checked).  planner.c builds the whole plan from these and
 * plan_budget.c plans again what the budget picked; both sit above this file (plan_impl.h). */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

#include "common/checked.h"
#include "common/fail.h"
#include "common/strset.h"
#include "convert/convert_impl.h"
#include "convert/plan_impl.h"

/* ---------------------------------------------------------------- problem list */
void nf_plan_add_problem(problems *p, const char *fmt, ...)
{
    char line[NF_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    size_t n = strlen(line) + 4;
    if (p->len + n + 1 > p->cap) {
        size_t cap = (p->cap + n + 1) * 2;
        char *t = realloc(p->text, cap);
        if (!t) {
            p->nomem = true;
            return;
        }
        p->text = t;
        p->cap = cap;
    }
    p->len += (size_t)snprintf(p->text + p->len, p->cap - p->len, "\n  %s", line);
    p->count++;
}

/* One error holding every problem: "<what>: N problems:\n  ...".  The message buffer of an
 * nf_error is bounded, so a very long list is cut (the count stays exact). */
nf_status nf_plan_problems_error(problems *p, const char *what, nf_error *err)
{
    if (p->nomem) return nf_common_nomem(err);
    return nf_error_set(err, NF_ERR_INVALID, "%s: %zu problem%s:%s", what, p->count, p->count == 1 ? "" : "s",
                        p->text ? p->text : "");
}

/* ---------------------------------------------------------------- where a problem stems from */
const char *nf_plan_recipe_label(const nf_recipe *r) { return r->path ? r->path : "<recipe>"; }

/* "FILE:LINE:COL: rules[i].field" (or "defaults.field") for the recipe line that decided one
 * field of a tensor's choice: the method and layout left unset fall back to the format's (they
 * are its natural ones); FIELD_RULE is the last rule that matched the tensor. */
void nf_plan_choice_origin(const nf_recipe *r, const nf_recipe_choice *c, choice_field f, char *buf, size_t size)
{
    const char *path = nf_plan_recipe_label(r);
    int ri = -1;
    nf_recipe_pos pos = {0, 0};
    const char *key = "";
    switch (f) {
    case FIELD_WITH:
        if (c->with_rule >= 0) {
            ri = c->with_rule;
            pos = r->rules[ri].with_pos;
            key = ".with";
            break;
        }
        /* parameters come with the method */
        /* fall through */
    case FIELD_METHOD:
        if (c->method_rule >= 0) {
            ri = c->method_rule;
            pos = r->rules[ri].method_pos;
            key = ".method";
            break;
        }
        if (r->default_method) {
            if (r->defaults_label) snprintf(buf, size, "%s", r->defaults_label);
            else
                snprintf(buf, size, "%s:%d:%d: defaults.method", path, r->default_method_pos.line,
                         r->default_method_pos.col);
            return;
        }
        /* the format's natural method */
        /* fall through */
    case FIELD_LAYOUT:
        if (f == FIELD_LAYOUT && c->layout_rule >= 0) {
            ri = c->layout_rule;
            pos = r->rules[ri].layout_pos;
            key = ".layout";
            break;
        }
        /* the format's default layout */
        /* fall through */
    case FIELD_FORMAT:
        if (c->format_rule >= 0) {
            ri = c->format_rule;
            pos = r->rules[ri].format_pos;
            key = ".format";
            break;
        }
        if (r->default_format_pos.line > 0) {
            if (r->defaults_label) snprintf(buf, size, "%s", r->defaults_label);
            else
                snprintf(buf, size, "%s:%d:%d: defaults.format", path, r->default_format_pos.line,
                         r->default_format_pos.col);
            return;
        }
        /* the default format bf16 */
        /* fall through */
    case FIELD_RULE:
        if (c->rule >= 0) {
            ri = c->rule;
            pos = r->rules[ri].pos;
            break;
        }
        snprintf(buf, size, "%s: (no rule matches the tensor)", path);
        return;
    }
    if (r->rules[ri].label) {
        snprintf(buf, size, "%s", r->rules[ri].label);
        return;
    }
    if (pos.line <= 0) pos = r->rules[ri].pos;
    snprintf(buf, size, "%s:%d:%d: rules[%d]%s", path, pos.line, pos.col, ri, key);
}

/* A library message without its leading "tensor 'NAME': " or "NAME: " (the problem line names
 * the tensor itself, once). */
static const char *without_tensor(const char *msg, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(msg, "tensor '", 8) == 0 && strncmp(msg + 8, name, n) == 0 && strncmp(msg + 8 + n, "': ", 3) == 0)
        return msg + 8 + n + 3;
    if (strncmp(msg, name, n) == 0 && strncmp(msg + n, ": ", 2) == 0) return msg + n + 2;
    return msg;
}

/* One problem of a tensor: "FILE:LINE:COL: rules[i].field: tensor 'NAME' (DTYPE): what". */
void nf_plan_tensor_problem(problems *probs, const nf_recipe *r, const nf_recipe_choice *c, choice_field f,
                            const nf_source_tensor *t, const char *what)
{
    char where[NF_ERROR_MESSAGE_MAX / 2];
    nf_plan_choice_origin(r, c, f, where, sizeof where);
    nf_plan_add_problem(probs, "%s: tensor '%s' (%s): %s", where, t->name, t->type_name, without_tensor(what, t->name));
}


const plan_source *nf_plan_base_source(const nf_plan *p)
{
    const plan_source *only = NULL;
    size_t n = 0;
    for (size_t i = 0; i < p->nsources; i++) {
        if (!p->sources[i].src) continue;
        if (strcmp(p->sources[i].name, "base") == 0) return &p->sources[i];
        only = &p->sources[i];
        n++;
    }
    return n == 1 ? only : NULL;
}

size_t nf_plan_source_index(const nf_plan *p, const char *name)
{
    for (size_t i = 0; i < p->nsources; i++)
        if (strcmp(p->sources[i].name, name) == 0) return i;
    return SIZE_MAX;
}

/* ---------------------------------------------------------------- imports */
/* Import descriptor of a source tensor as the import module wants it. */
static nf_import_tensor import_tensor(const nf_source_tensor *t)
{
    return (nf_import_tensor){t->name, t->type_name, t->ggml_type, t->rank, t->shape};
}

/* Does any integer q - z of the GPTQ / AWQ weight lie outside [lo, hi]?  Read in pieces of rows
 * of at most 2^18 values (one row at least), stopping at the first; a weight that cannot be read
 * is taken to (its values path names the problem). */
static bool packed_outside(const nf_source *src, const nf_qweight *q, int lo, int hi)
{
    const uint64_t n = q->shape[0], k = q->shape[1];
    uint64_t per = ((uint64_t)1 << 18) / k;
    per = per ? per : 1;
    int16_t *ints = malloc((size_t)(per * k) * sizeof *ints);
    float *scales = malloc((size_t)(per * q->groups) * sizeof *scales);
    bool found = !ints || !scales;
    nf_error e;
    for (uint64_t a = 0; !found && a < n; a += per) {
        uint64_t b = a + per < n ? a + per : n;
        if (nf_qweight_read_ints(src, q, a, b, ints, (size_t)(per * k), scales, (size_t)(per * q->groups), &e) != NF_OK)
            found = true;
        for (uint64_t i = 0; !found && i < (b - a) * k; i++) found = ints[i] < lo || ints[i] > hi;
    }
    free(ints);
    free(scales);
    return found;
}

/* GPTQ's and AWQ's grouped format (docs/dialects.md "GPTQ and AWQ"): F16 scales in groups of
 * whole target groups, no act-order, and q - z inside the format's codes -- 2-bit in q2's
 * [-1, 2] when every code is (read when planned: z = 1 throughout; the import never negates a
 * word), else with 3-bit in q4's [-8, 7] by construction, 4-bit symmetric (z = 8) in q4, other
 * 4-bit (z <= 16) in q5's [-16, 15], 8-bit symmetric in q8 unless a code reaches -128 (read when
 * planned); NULL otherwise. */
static const char *packed_import_target(const nf_source *src, const nf_qweight *q)
{
    if (q->act_order || q->scale->dtype != NF_ST_F16) return NULL;
    const char *target = q->bits <= 3                        ? "q4_g64_fp16"
                         : q->bits == 4                      ? (q->symmetric == 1 ? "q4_g64_fp16" : "q5_g64_fp16")
                         : q->bits == 8 && q->symmetric == 1 ? "q8_g32_fp16"
                                                             : NULL;
    const uint64_t tg = target && !strcmp(target, "q8_g32_fp16") ? 32 : 64, k = q->shape[1];
    if (!target || k % tg || (q->block_cols < k && q->block_cols % tg)) return NULL;
    if (q->bits == 8 && packed_outside(src, q, -127, 127)) return NULL;
    if (q->bits == 2 && !packed_outside(src, q, -1, 2)) return "q2_g64_fp16";
    return target;
}

/* The format that holds a quantized weight's words exactly (import_encoded, docs/dialects.md), or
 * NULL when none does. */
static const char *import_target(const nf_source *src, const nf_qweight *q)
{
    if (q->dialect == NF_DIALECT_CT_NVFP4 || q->dialect == NF_DIALECT_MODELOPT_NVFP4) return "nvfp4";
    if (q->dialect == NF_DIALECT_CT_MXFP4 || q->dialect == NF_DIALECT_GPT_OSS_MXFP4) /* nvfp4's tiles */
        return q->shape[0] % 128 == 0 && q->shape[1] % 64 == 0 ? "nvfp4" : NULL;
    if (q->codes_kind == NF_QCODES_UINT_PACKED) return packed_import_target(src, q);
    bool rows = !strcmp(q->strategy, "tensor") || !strcmp(q->strategy, "channel");
    if ((q->dialect == NF_DIALECT_CT_FP8 || q->dialect == NF_DIALECT_MODELOPT_FP8 ||
         q->dialect == NF_DIALECT_FBGEMM_FP8) &&
        rows && q->codes_kind == NF_QCODES_E4M3 && (q->scale->dtype == NF_ST_F32 || q->scale->dtype == NF_ST_BF16))
        return "fp8_e4m3fn_row_bf16";
    return NULL;
}

/* A GGUF tensor of ggml blocks (Q4_K, IQ2_XXS, ...), whose gguf_* format holds its words. */
bool nf_plan_gguf_blocks(const nf_source_tensor *t) { return t->ggml_type >= 0 && t->block_values > 1 && t->format; }

/* A GGUF tensor stored quantized: of any ggml block type, with a gguf_* format or read as values
 * only (Q4_1, TQ2_0, MXFP4, ...; docs/formats.md 8.5).  `when: {quantized: true}` sees it. */
bool nf_plan_gguf_quantized(const nf_source_tensor *t) { return t->ggml_type >= 0 && t->block_values > 1; }

/* Rows of the import trial's pieces: about TRIAL_BYTES of source blocks, at least one row. */
#define TRIAL_BYTES ((uint64_t)1 << 20)

/* Does every row of the tensor import into imp's target (nf_import_rows, read in pieces)?  The
 * import's own rules decide, so the plan and the conversion cannot disagree; *err has the first
 * row that does not. */
static nf_status import_trial(const nf_source *src, const nf_source_tensor *t, const nf_import *imp, nf_error *err)
{
    nf_geometry g;
    NF_TRY(nf_import_geometry(imp, &g, err));
    const uint64_t step = imp->row_bytes >= TRIAL_BYTES ? 1 : TRIAL_BYTES / imp->row_bytes;
    nf_words w;
    NF_TRY(nf_words_alloc(&w, &g, step < imp->rows ? step : imp->rows, err));
    uint8_t *buf = malloc((size_t)((step < imp->rows ? step : imp->rows) * imp->row_bytes));
    nf_status st = buf ? NF_OK : nf_common_nomem(err);
    for (uint64_t r = 0; st == NF_OK && r < imp->rows; r += step) {
        const uint64_t n = imp->rows - r < step ? imp->rows - r : step;
        st = nf_source_read_bytes(src, t, r * imp->row_bytes, buf, (size_t)(n * imp->row_bytes), err);
        nf_import_chunk c = {r, n, buf, (size_t)(n * imp->row_bytes), NULL, 0, 0};
        if (st == NF_OK) st = nf_import_rows(imp, &c, &w, 0, err);
    }
    free(buf);
    nf_words_free(&w);
    return st;
}

/* The format that holds a GGUF tensor of a values-only block type exactly (docs/formats.md 8.5),
 * or NULL: TQ1_0, TQ2_0 and Q1_0 go to t2_g128_fp16 when every block fits T2 (read when planned),
 * else to q2_g64_fp16, which holds every finite block; Q8_1 to q8_g32_fp16 when every block fits
 * Q8 (else *why says which does not); MXFP4 and NVFP4 to nvfp4 when its tiles fit (rows a
 * multiple of 128, K of 64; their blocks are read when the import is prepared: MXFP4's exponents,
 * NVFP4's scale bytes); PQ2_0 to t2_g128_fp16. */
static const char *gguf_values_target(const nf_source *src, const nf_source_tensor *t, nf_error *why)
{
    const char *fits = NULL;
    nf_import imp;
    nf_error e;
    nf_import_tensor it = import_tensor(t);
    if (why) why->message[0] = '\0';
    switch (t->ggml_type) {
    case NF_IMPORT_GGML_TQ1_0:
    case NF_IMPORT_GGML_TQ2_0:
    case NF_IMPORT_GGML_Q1_0: fits = "t2_g128_fp16"; break;
    case NF_IMPORT_GGML_Q8_1: fits = "q8_g32_fp16"; break;
    case NF_IMPORT_GGML_PQ2_0: return "t2_g128_fp16";
    case NF_IMPORT_GGML_MXFP4:
    case NF_IMPORT_GGML_NVFP4: return t->rows % 128 == 0 && t->row_elements % 64 == 0 ? "nvfp4" : NULL;
    default: return NULL;
    }
    if (nf_import_init_gguf(&imp, nf_format_lookup(fits), &it, &e) == NF_OK && import_trial(src, t, &imp, &e) == NF_OK)
        return fits;
    if (why) *why = e; /* the first block the exact target refuses */
    return t->ggml_type == NF_IMPORT_GGML_Q8_1 ? NULL : "q2_g64_fp16";
}

/* The format import_encoded puts a tensor in when no rule chose one: the one holding its words
 * (a quantized weight's, a GGUF block tensor's gguf_*, a values-only GGUF type's exact target),
 * or NULL. */
static const char *natural_import_format(const nf_source *src, const nf_source_tensor *t, const nf_qweight *q,
                                         nf_error *why)
{
    if (q) return import_target(src, q);
    if (nf_plan_gguf_blocks(t)) return t->format->name;
    if (nf_plan_gguf_quantized(t)) return gguf_values_target(src, t, why);
    return NULL;
}

/* A quantized weight imports only into the format that holds its words (docs/dialects.md). */
static nf_status check_quantized_import(const nf_source *src, const nf_source_tensor *t, const nf_qweight *q,
                                        const nf_format *fmt, nf_error *err)
{
    const char *target = import_target(src, q);
    char what[NF_ERROR_MESSAGE_MAX / 4];
    nf_qweight_describe(q, what, sizeof what);
    if (!target)
        return nf_error_set(err, NF_ERR_INVALID,
                            "tensor '%s': stored quantized (%s): no format holds its words exactly, so "
                            "import_encoded cannot keep them; requantize it from its values with a rule that names "
                            "the method (e.g. `method: grouped_absmax`), or --requantize in quick mode",
                            t->name, what);
    if (strcmp(target, fmt->name) != 0)
        return nf_error_set(err, NF_ERR_INVALID,
                            "tensor '%s': stored quantized (%s): import_encoded keeps its words in %s, not %s; or "
                            "requantize it from its values with a rule that names the method, or --requantize in "
                            "quick mode",
                            t->name, what, target, fmt->name);
    return NF_OK;
}

/* MXFP4's divisor 2^p in nvfp4 (docs/dialects.md "MXFP4"): p = min(135 - max e, 127) puts the
 * largest E8M0 exponent at E4M3's 2^8, and a block more than 17 octaves below it must hold only
 * zeros (its codes are read), else no one divisor holds the matrix exactly.  Scales are read in
 * pieces of MXFP4_PIECE bytes, twice. */
#define MXFP4_PIECE ((size_t)1 << 20)
static nf_status mxfp4_divisor(const nf_source *src, const nf_qweight *q, int32_t *p, nf_error *err)
{
    const uint64_t nb = q->scale_cols, total = q->shape[0] * nb, half = q->shape[1] / 2;
    uint8_t *buf = malloc(MXFP4_PIECE), codes[16];
    if (!buf) return nf_common_nomem(err);
    int maxe = 0;
    nf_status st = NF_OK;
    for (int pass = 0; st == NF_OK && pass < 2; pass++)
        for (uint64_t a = 0; st == NF_OK && a < total; a += MXFP4_PIECE) {
            size_t len = (size_t)(total - a < MXFP4_PIECE ? total - a : MXFP4_PIECE);
            st = nf_source_read_bytes(src, q->scale, a, buf, len, err);
            for (size_t i = 0; st == NF_OK && i < len; i++) {
                const uint64_t row = (a + i) / nb, b = (a + i) % nb;
                if (buf[i] == 0xFF)
                    st = nf_error_set(err, NF_ERR_INVALID,
                                      "%s: tensor '%s': row %" PRIu64 " block %" PRIu64 ": E8M0 scale 0xFF is NaN",
                                      nf_source_file_path(src, q->scale->file), q->scale->name, row, b);
                else if (pass == 0 && buf[i] > maxe) maxe = buf[i];
                else if (pass == 1 && buf[i] - 127 + *p < -9) {
                    st = nf_source_read_bytes(src, q->codes, row * half + b * 16, codes, 16, err);
                    for (size_t j = 0; st == NF_OK && j < 16; j++)
                        if (codes[j] & 0x77)
                            st = nf_error_set(err, NF_ERR_INVALID,
                                              "%s: tensor '%s': row %" PRIu64 " block %" PRIu64
                                              ": scale 2^%d lies more "
                                              "than 17 octaves below the matrix's largest, 2^%d, and nvfp4's E4M3 "
                                              "block scales span 2^-9..2^8 under one divisor: no format holds its "
                                              "words exactly; requantize it from its values with a rule that names "
                                              "the method, or --requantize in quick mode",
                                              nf_source_file_path(src, q->codes->file), q->codes->name, row, b,
                                              buf[i] - 127, maxe - 127);
                }
            }
            if (pass == 0) *p = 135 - maxe < 127 ? 135 - maxe : 127;
        }
    free(buf);
    return st;
}

/* MXFP4 GGUF blocks' divisor 2^p in nvfp4, as mxfp4_divisor's: p = min(135 - max e, 127) from the
 * E8M0 byte heading each 17-byte block that has a nonzero code (an all-zero block takes any
 * scale), in one pass that also finds the lowest such exponent: more than 17 octaves below the
 * largest, no one divisor holds the matrix.  (The import checks each block again, and refuses a
 * value past binary32.) */
static nf_status gguf_mxfp4_divisor(const nf_source *src, const nf_source_tensor *t, int32_t *p, nf_error *err)
{
    const uint64_t total = t->bytes, piece = TRIAL_BYTES / 17 * 17, per_row = t->row_elements / 32;
    uint8_t *buf = malloc((size_t)piece);
    if (!buf) return nf_common_nomem(err);
    unsigned maxe = 0, mine = 256;
    uint64_t low = 0; /* the block of mine */
    nf_status st = NF_OK;
    for (uint64_t a = 0; st == NF_OK && a < total; a += piece) {
        const size_t len = (size_t)(total - a < piece ? total - a : piece);
        st = nf_source_read_bytes(src, t, a, buf, len, err);
        for (size_t i = 0; st == NF_OK && i + 17 <= len; i += 17) {
            const unsigned e = buf[i];
            bool nonzero = false;
            for (size_t j = 1; j < 17; j++) nonzero = nonzero || (buf[i + j] & 0x77);
            if (nonzero && e > maxe) maxe = e; /* an all-zero block takes any scale */
            if (nonzero && e < mine) {
                mine = e;
                low = (a + i) / 17;
            }
        }
    }
    free(buf);
    NF_TRY(st);
    *p = 135 - (int)maxe < 127 ? 135 - (int)maxe : 127;
    if (mine < 256 && (int)mine - 127 + *p < -9)
        return nf_error_set(err, NF_ERR_INVALID,
                            "row %" PRIu64 " block %" PRIu64 ": scale 2^%d lies more than 17 octaves below the "
                            "matrix's largest, 2^%d, and nvfp4's E4M3 block scales span 2^-9..2^8 under one divisor: "
                            "no format holds its values exactly; requantize it from its values with a rule that names "
                            "the method, or --requantize in quick mode",
                            low / per_row, low % per_row, (int)mine - 127, (int)maxe - 127);
    return NF_OK;
}

/* NVFP4 GGUF blocks into nvfp4 (divisor 1): a scale byte 0xFF, which ggml reads as 240, has no
 * E4M3 word; found when planned, so the plan says so before anything is written. */
static nf_status gguf_nvfp4_scales(const nf_source *src, const nf_source_tensor *t, nf_error *err)
{
    const uint64_t total = t->bytes, piece = TRIAL_BYTES / 36 * 36, per_row = t->row_elements / 64;
    uint8_t *buf = malloc((size_t)piece);
    if (!buf) return nf_common_nomem(err);
    nf_status st = NF_OK;
    for (uint64_t a = 0; st == NF_OK && a < total; a += piece) {
        const size_t len = (size_t)(total - a < piece ? total - a : piece);
        st = nf_source_read_bytes(src, t, a, buf, len, err);
        for (size_t i = 0; st == NF_OK && i + 36 <= len; i += 36)
            for (unsigned k = 0; st == NF_OK && k < 4; k++)
                if (buf[i + k] == 0xFF) {
                    const uint64_t b = (a + i) / 36;
                    st = nf_error_set(err, NF_ERR_INVALID,
                                      "row %" PRIu64 " block %" PRIu64 " sub-block %u (cols %" PRIu64 "..%" PRIu64
                                      "): UE4M3 scale 0xFF, which ggml reads as 240, has no E4M3 word: no format "
                                      "holds its values exactly; requantize it from its values with a rule that names "
                                      "the method, or --requantize in quick mode",
                                      b / per_row, b % per_row, k, b % per_row * 64 + 16 * k,
                                      b % per_row * 64 + 16 * k + 15);
                }
    }
    free(buf);
    return st;
}

/* Reads a tensor-level scalar (4 bytes of an F32 tensor, or 2 of a BF16 one). */
static nf_status read_scalar(const nf_source *src, const nf_source_tensor *t, void *buf, size_t *len, nf_error *err)
{
    if (t->bytes > 4 || t->bytes == 0)
        return nf_error_set(err, NF_ERR_INVALID, "tensor '%s' must hold one value, not %llu bytes", t->name,
                            (unsigned long long)t->bytes);
    *len = (size_t)t->bytes;
    return nf_source_read_bytes(src, t, 0, buf, *len, err);
}

/* Prepare member m for import_encoded into fmt (checked against the weight's dialect by
 * check_quantized_import first).  A safetensors source imports only a quantized weight, whose
 * companions the dialect scan found (docs/dialects.md). */
static nf_status prepare_import(const plan_source *s, const nf_source_tensor *t, const nf_qweight *q,
                                const nf_format *fmt, plan_member *m, nf_error *err)
{
    const nf_source *src = s->src;
    nf_import_tensor it = import_tensor(t);
    if (t->ggml_type >= 0 && fmt->category == NF_CAT_NVFP4) {
        int32_t p = 0;
        if (t->ggml_type == NF_IMPORT_GGML_MXFP4) NF_TRY(gguf_mxfp4_divisor(src, t, &p, err));
        else if (t->ggml_type == NF_IMPORT_GGML_NVFP4) NF_TRY(gguf_nvfp4_scales(src, t, err));
        return nf_import_init_gguf_fp4(&m->imp, &it, p, err);
    }
    if (t->ggml_type >= 0) return nf_import_init_gguf(&m->imp, fmt, &it, err);
    if (!q)
        return nf_error_set(err, NF_ERR_INVALID,
                            "tensor '%s': import_encoded needs a GGUF block tensor or a quantized weight with its "
                            "companions (its scales, docs/dialects.md), and this %s tensor has none: no import into %s",
                            t->name, t->type_name, fmt->name);
    nf_import_tensor is = import_tensor(q->scale);
    if (q->codes_kind == NF_QCODES_UINT_PACKED) { /* read through the dialect: m->q */
        NF_TRY(nf_import_init_int_groups(&m->imp, fmt, &it, &is, q->shape[0], q->shape[1], q->block_cols, err));
        m->q = q;
        return NF_OK;
    }
    if (q->dialect == NF_DIALECT_CT_MXFP4 || q->dialect == NF_DIALECT_GPT_OSS_MXFP4) {
        int32_t p = 0;
        NF_TRY(mxfp4_divisor(src, q, &p, err));
        NF_TRY(nf_import_init_mxfp4(&m->imp, &it, &is, q->shape[0], q->shape[1], p, err));
        m->scale_t = q->scale;
        m->q = q; /* the report compares the values */
        return NF_OK;
    }
    uint8_t bytes[4];
    size_t len = 0;
    if (fmt->category == NF_CAT_NVFP4) {
        nf_import_tensor ic = import_tensor(q->global);
        NF_TRY(read_scalar(src, q->global, bytes, &len, err));
        nf_import_kind kind = q->dialect == NF_DIALECT_MODELOPT_NVFP4 ? NF_IMPORT_NVFP4_MODELOPT
                                                                      : NF_IMPORT_NVFP4_COMPRESSED;
        NF_TRY(nf_import_init_nvfp4(&m->imp, kind, &it, &is, &ic, bytes, len, err));
        m->scale_t = q->scale;
        return NF_OK;
    }
    /* fp8 rows: a per-tensor scale is read now, per-row scales with each chunk */
    bool per_tensor = q->scale->elements == 1;
    if (per_tensor) NF_TRY(read_scalar(src, q->scale, bytes, &len, err));
    NF_TRY(nf_import_init_fp8(&m->imp, fmt, &it, &is, per_tensor ? bytes : NULL, len, err));
    if (!per_tensor) m->scale_t = q->scale;
    return NF_OK;
}

/* ---------------------------------------------------------------- one tensor object */
/* Method parameters from `with`: imatrix (a source name) and negative_scales.  An imatrix problem
 * names the imatrix file. */
/* nf_method_check_choice, its message saying where the missing importance vector should come
 * from: ggml quantizes some types only with one (docs/methods.md, ggml_quantize). */
static nf_status check_choice(const nf_recipe_choice *c, nf_method_id method, const nf_format *fmt,
                              const nf_method_params *params, nf_error *e)
{
    if (nf_method_check_choice(method, fmt, params, e) == NF_OK) return NF_OK;
    if (method != NF_METHOD_GGML_QUANTIZE || (params && params->importance)) return e->status;
    bool named = c->with && json_object_get(c->with, "imatrix");
    snprintf(e->message, sizeof e->message, "ggml_quantize into %s needs an importance vector, as ggml does, %s",
             fmt->name,
             named ? "and the rule's imatrix has none for this tensor"
                   : "and none is given: add `with: {imatrix: NAME}` naming an imatrix source");
    return e->status;
}

/* What a method program can be given (docs/method-programs.md 3.2): rows of the format's whole
 * blocks (nvfp4: of 16 values, gguf: of the type's block), and a row's values in one chunk. */
static nf_status check_program_choice(const tensor_plan *tp, nf_error *e)
{
    const nf_format *f = tp->fmt;
    const uint64_t k = tp->cols;
    if (f->category == NF_CAT_GGUF && (f->block_values == 0 || k % f->block_values != 0))
        return nf_error_set(e, NF_ERR_INVALID,
                            "%s holds rows of whole %u-value blocks; this tensor's rows have %llu values", f->name,
                            f->block_values, (unsigned long long)k);
    if (f->category == NF_CAT_NVFP4 && k % 16 != 0)
        return nf_error_set(e, NF_ERR_INVALID,
                            "nvfp4 holds rows of whole 16-value blocks; this tensor's rows have %llu "
                            "values",
                            (unsigned long long)k);
    /* a chunk holds whole rows (nvfp4: a band of 128 of them), at most NF_MPROG_MAX_ROW_VALUES values */
    const uint64_t most = NF_MPROG_MAX_ROW_VALUES / (f->category == NF_CAT_NVFP4 ? 128 : 1);
    if (k > most)
        return nf_error_set(e, NF_ERR_INVALID,
                            "method program '%s' is sent whole rows%s, of at most %llu values; this tensor's have %llu",
                            tp->program->name, f->category == NF_CAT_NVFP4 ? " in bands of 128" : "",
                            (unsigned long long)most, (unsigned long long)k);
    return NF_OK;
}

nf_status nf_plan_method_params(nf_plan *p, const nf_recipe_choice *c, const nf_source_tensor *t, uint64_t cols,
                                nf_method_params *params, nf_error *err)
{
    memset(params, 0, sizeof *params);
    if (!c->with) return NF_OK;
    json_t *neg = json_object_get(c->with, "negative_scales");
    if (neg) params->negative_scales = json_is_true(neg);
    json_t *im = json_object_get(c->with, "imatrix");
    if (!im) return NF_OK;
    size_t i = nf_plan_source_index(p, json_string_value(im));
    if (i == SIZE_MAX || !p->imatrices[i])
        return nf_error_set(err, NF_ERR_INVALID, "imatrix '%s' is not an imatrix source of the recipe",
                            json_string_value(im));
    const float *imp = NULL;
    uint64_t mats, per, len = 0;
    nf_plan_stack_of(t, &mats, &per);
    if (t->row_elements != cols) mats = 1; /* a quantized weight's codes tensor: not its matrix's shape */
    NF_TRY(nf_imatrix_lookup_stack(p->imatrices[i], t->name, mats, cols, &imp, &len, NULL, err)); /* names its file */
    params->importance = imp;
    params->importance_len = imp ? cols : 0;
    if (imp && len > cols) { /* an experts stack's entry: a vector per matrix */
        params->importance_rows = per;
        params->importance_mats = mats;
        params->importance_stride = cols;
    }
    return NF_OK;
}

void nf_plan_stack_of(const nf_source_tensor *t, uint64_t *mats, uint64_t *per)
{
    *mats = 1;
    *per = t->rows;
    if (t->rank < 3) return;
    *per = t->shape[t->rank - 2];
    *mats = *per ? t->rows / *per : 1;
}

void nf_plan_tensor(nf_plan *p, const plan_source *s, tensor_plan *tp, problems *probs,
                    const nf_source_tensor **companions)
{
    const nf_source_tensor *t = tp->t;
    const nf_recipe_choice *c = tp->c;
    const nf_recipe *r = p->recipe;
    nf_error e;
    /* import_encoded with no rule choosing the format: the format that holds the words */
    /* import_encoded with no rule choosing the format: the format that holds the words (a
     * values-only GGUF type's reads the tensor: only then) */
    nf_error first = {0};
    const bool natural_wanted = c->format_rule < 0 && c->method && !strcmp(c->method, "import_encoded");
    const char *format = c->format, *natural = natural_wanted ? natural_import_format(s->src, t, tp->q, &first) : NULL;
    if (natural) format = natural;
    if (nf_format_find(format, &tp->fmt, &e) != NF_OK) {
        nf_plan_tensor_problem(probs, r, c, FIELD_FORMAT, t, e.message);
        return;
    }
    tp->layout = c->layout && strcmp(c->layout, "auto") != 0 ? nf_layout_lookup(c->layout)
                                                             : nf_layout_default_for(tp->fmt);
    if (!tp->layout) {
        snprintf(e.message, sizeof e.message, "unknown layout '%s'", c->layout ? c->layout : "(default)");
        nf_plan_tensor_problem(probs, r, c, FIELD_LAYOUT, t, e.message);
        return;
    }
    tp->program = NULL;
    for (size_t i = 0; i < p->nprograms; i++) /* a method program the command line gave */
        if (!strcmp(p->programs[i].name, c->method)) tp->program = &p->programs[i];
    if (tp->program) {
        tp->method = NF_PLAN_METHOD_PROGRAM;
    } else if (nf_method_find(c->method, &tp->method, &e) != NF_OK) {
        nf_plan_tensor_problem(probs, r, c, FIELD_METHOD, t, e.message);
        return;
    }
    if (tp->q && tp->method == NF_METHOD_IMPORT_ENCODED &&
        check_quantized_import(s->src, t, tp->q, tp->fmt, &e) != NF_OK) {
        nf_plan_tensor_problem(probs, r, c, FIELD_METHOD, t, without_tensor(e.message, t->name));
        return;
    }
    if (!tp->q && nf_plan_gguf_quantized(t) && !nf_plan_gguf_blocks(t) && tp->method == NF_METHOD_IMPORT_ENCODED &&
        c->format_rule < 0 && !natural) {
        const bool fp4 = t->ggml_type == NF_IMPORT_GGML_MXFP4 || t->ggml_type == NF_IMPORT_GGML_NVFP4;
        char why[200] = "";
        if (fp4)
            snprintf(why, sizeof why,
                     " (nvfp4 would, in tiles of 128 rows and 64 columns: this tensor has %" PRIu64 " rows of %" PRIu64
                     ")",
                     t->rows, t->row_elements);
        else if (t->ggml_type == NF_IMPORT_GGML_Q8_1)
            snprintf(why, sizeof why, " (q8_g32_fp16 would, but %.120s)",
                     *first.message ? without_tensor(first.message, t->name) : "a block does not fit it");
        snprintf(e.message, sizeof e.message,
                 "stored as GGUF %s blocks in %s: no format holds their values exactly%s, so import_encoded cannot "
                 "keep them; requantize them from ggml's values with a rule that names the method (e.g. `method: "
                 "grouped_absmax`), or --requantize in quick mode",
                 t->type_name, nf_source_file_path(s->src, t->file), why);
        nf_plan_tensor_problem(probs, r, c, FIELD_METHOD, t, e.message);
        return;
    }
    if (!tp->program && nf_method_check_target(tp->method, tp->fmt, &e) != NF_OK) {
        /* a method and a format that do not fit: point at the method, and at the format when
         * another line chose it */
        char fwhere[NF_ERROR_MESSAGE_MAX / 4], mwhere[NF_ERROR_MESSAGE_MAX / 4];
        nf_plan_choice_origin(r, c, FIELD_FORMAT, fwhere, sizeof fwhere);
        nf_plan_choice_origin(r, c, FIELD_METHOD, mwhere, sizeof mwhere);
        if (strcmp(fwhere, mwhere) != 0) {
            char what[NF_ERROR_MESSAGE_MAX];
            snprintf(what, sizeof what, "%.*s (format %s from %s)", (int)(sizeof what / 2), e.message, c->format,
                     fwhere);
            nf_plan_tensor_problem(probs, r, c, FIELD_METHOD, t, what);
        } else {
            nf_plan_tensor_problem(probs, r, c, FIELD_METHOD, t, e.message);
        }
        return;
    }
    tp->rows = t->rows;
    tp->cols = t->row_elements;
    plan_member *m = &tp->member;
    m->source = s;
    m->t = t;
    if (tp->method == NF_METHOD_IMPORT_ENCODED) {
        if (prepare_import(s, t, tp->q, tp->fmt, m, &e) != NF_OK) {
            /* a companion the import read (a scale) may be what is wrong: name the checkpoint */
            char what[NF_ERROR_MESSAGE_MAX];
            snprintf(what, sizeof what, "%s: %.*s", nf_source_path(s->src), (int)(sizeof what / 2),
                     without_tensor(e.message, t->name));
            nf_plan_tensor_problem(probs, r, c, FIELD_METHOD, t, what);
            return;
        }
        tp->rows = m->imp.rows;
        tp->cols = m->imp.cols;
    } else if (tp->q) {
        /* requantizing a quantized weight from its values: only when a rule names the method
         * (docs/dialects.md, "Imported or requantized") */
        const nf_qweight *q = tp->q;
        if (c->method_rule < 0) {
            char what[NF_ERROR_MESSAGE_MAX / 4];
            nf_qweight_describe(q, what, sizeof what);
            const char *target = import_target(s->src, q);
            snprintf(e.message, sizeof e.message,
                     "stored quantized (%s): %s by %s would requantize it, and no rule names that method; %s%s%s "
                     "permit requantizing with a rule that names the method (e.g. `method: %s`), or --requantize in "
                     "quick mode",
                     what, tp->fmt->name, nf_plan_method_name(tp->method, tp->program),
                     target ? "import it exactly (`method: import_encoded`, into "
                            : "no format holds its words exactly;",
                     target ? target : "", target ? "), or" : "", nf_plan_method_name(tp->method, tp->program));
            nf_plan_tensor_problem(probs, r, c, FIELD_METHOD, t, e.message);
            return;
        }
        tp->rows = q->shape[0];
        tp->cols = q->shape[1];
        m->q = q;
        m->raw = false;
        m->src_type = NF_SRC_F32;
        if (nf_plan_method_params(p, c, t, tp->cols, &tp->params, &e) != NF_OK ||
            (!tp->program && nf_method_check_params(tp->method, &tp->params, tp->cols, &e) != NF_OK) ||
            (!tp->program && check_choice(c, tp->method, tp->fmt, &tp->params, &e) != NF_OK) ||
            (tp->program && check_program_choice(tp, &e) != NF_OK)) {
            nf_plan_tensor_problem(probs, r, c, c->with ? FIELD_WITH : FIELD_METHOD, t, e.message);
            return;
        }
    } else {
        if (t->elements == 0) {
            nf_plan_tensor_problem(probs, r, c, FIELD_RULE, t, "empty tensors cannot be stored");
            return;
        }
        m->raw = nf_src_type_lookup(t->type_name, &m->src_type);
        if (tp->program && !t->convertible) {
            snprintf(e.message, sizeof e.message,
                     "method program '%s' is sent binary32 values, and source dtype %s cannot be read as values",
                     tp->program->name, t->type_name);
            nf_plan_tensor_problem(probs, r, c, FIELD_METHOD, t, e.message);
            return;
        }
        if (tp->program) m->raw = false; /* a program is sent binary32 values (docs/method-programs.md 3.3) */
        if (!m->raw && !t->convertible) {
            snprintf(e.message, sizeof e.message, "source dtype %s cannot be read as values", t->type_name);
            nf_plan_tensor_problem(probs, r, c, FIELD_RULE, t, e.message);
            return;
        }
        if (!m->raw) m->src_type = NF_SRC_F32;
        /* Floating-point sources of grouped/fp8 methods are read as binary32 values either way;
         * raw words matter for cast_direct (NaN payloads, integers). */
        if (nf_plan_method_params(p, c, t, tp->cols, &tp->params, &e) != NF_OK ||
            (!tp->program && nf_method_check_params(tp->method, &tp->params, tp->cols, &e) != NF_OK) ||
            (!tp->program && check_choice(c, tp->method, tp->fmt, &tp->params, &e) != NF_OK) ||
            (tp->program && check_program_choice(tp, &e) != NF_OK)) {
            nf_plan_tensor_problem(probs, r, c, c->with ? FIELD_WITH : FIELD_METHOD, t, e.message);
            return;
        }
    }
    m->rows = tp->rows;
    /* the companions its words or values are read with (the content digest reads them) */
    if (tp->q) nf_qweight_companions(tp->q, companions);
    tp->ok = true;
}


/* Geometry of a single-member object: shape as the source's (direct) or [N, K]. */
nf_status nf_plan_object_geometry(const tensor_plan *tp, nf_geometry *g, nf_error *err)
{
    if (tp->method == NF_METHOD_IMPORT_ENCODED) return nf_import_geometry(&tp->member.imp, g, err);
    if (tp->q) return nf_geometry_init(g, tp->layout, tp->fmt, 2, tp->q->shape, 1, err);
    return nf_plan_tensor_geometry(tp->layout, tp->fmt, tp->t, g, err);
}

nf_status nf_plan_tensor_geometry(const nf_layout *layout, const nf_format *fmt, const nf_source_tensor *t,
                                  nf_geometry *g, nf_error *err)
{
    /* a stack of matrices (an experts tensor [E, R, K]) quantized into a matrix format (gguf_*
     * included) is one matrix [E*R, K], as its import would be (ninfer/import.h "Matrices"); direct
     * formats keep the tensor's shape */
    if (t->rank > 2 && fmt->category != NF_CAT_DIRECT) {
        const uint64_t shape[2] = {t->rows, t->row_elements};
        return nf_geometry_init(g, layout, fmt, 2, shape, 1, err);
    }
    return nf_geometry_init(g, layout, fmt, t->rank, t->shape, 1, err);
}


int nf_plan_group_of(const name_index *ix, const char *name)
{
    size_t g = 0;
    return nf_strset_find(&ix->members, name, NULL, &g) ? (int)g : -1;
}
