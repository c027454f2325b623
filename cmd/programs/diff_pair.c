/* ninfer-diff's pairing (docs/ninfer-diff.md, "Pairing"): the objects and tensors of A and B
 * paired by name, or, when one side carries llama.cpp's names and the other Hugging Face's,
 * through the table of ninfer/names.h (a stacked experts tensor pairs with each expert's matrix,
 * the llama family's q/k rows are read in llama.cpp's order); names the table does not hold are
 * listed as unmapped, never guessed.  Each pair is then classified: what differs in the records,
 * and whether its bytes or its values are to be compared (diff_values.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "common/fail.h"
#include "common/strset.h"
#include "diff.h"

/* ---------------------------------------------------------------- the model */
/* A count of a JSON member, or 0 (absent, or not a count). */
static uint64_t json_count(const json_t *cfg, const char *key)
{
    const json_t *v = json_object_get(cfg, key);
    return json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) <= 1000000
               ? (uint64_t)json_integer_value(v)
               : 0;
}

/* element 0 of a GGUF key ARCH.SUFFIX as a count, or 0 */
static uint64_t gguf_count(const nf_source *s, const char *arch, const char *suffix)
{
    char key[160];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    const nf_gguf_kv *kv = nf_source_gguf_kv_find(s, key);
    uint64_t v = 0;
    nf_error err;
    if (!kv || kv->count == 0 || nf_gguf_kv_uint(kv, 0, &v, &err) != NF_OK || v > 1000000) return 0;
    return v;
}

static void fill(uint64_t *dst, uint64_t v)
{
    if (!*dst) *dst = v;
}

/* What a side tells of the model: a GGUF's general.architecture and hyperparameters, a
 * checkpoint's config.json (a multimodal one's text_config).  Nothing is required: what is
 * missing leaves the names unmapped, or a q/k pair without statistics, and says why. */
static void model_from_side(diff_run *r, const diff_side *sd, char *why, size_t why_size)
{
    diff_model *m = &r->model;
    if (!sd->src) return;
    if (nf_source_kind_of(sd->src) == NF_SOURCE_GGUF) {
        const nf_gguf_kv *kv = nf_source_gguf_kv_find(sd->src, "general.architecture");
        const char *arch = NULL;
        size_t len = 0;
        nf_error err;
        if (!kv || nf_gguf_kv_string(kv, 0, &arch, &len, &err) != NF_OK || strlen(arch) != len) {
            if (!why[0]) snprintf(why, why_size, "no general.architecture: give --arch");
            return;
        }
        /* its hyperparameters, under its own architecture's keys, serve --arch too */
        fill(&m->heads, gguf_count(sd->src, arch, "attention.head_count"));
        fill(&m->kv_heads, gguf_count(sd->src, arch, "attention.head_count_kv"));
        fill(&m->experts, gguf_count(sd->src, arch, "expert_count"));
        nf_arch a;
        if (!nf_arch_lookup(arch, &a)) {
            if (!why[0])
                snprintf(why, why_size, "general.architecture '%s' is not in docs/names.md", nf_cli_name(arch).s);
            return;
        }
        if (!m->known) {
            m->known = true;
            m->arch = a;
            m->arch_from = sd->path;
        }
        return;
    }
    const char *path = nf_source_companion(sd->src, "config.json");
    json_t *root = NULL;
    nf_error err;
    if (!path || nf_source_read_config(path, &root, &err) != NF_OK) return;
    const json_t *cfg = json_is_object(json_object_get(root, "text_config")) ? json_object_get(root, "text_config")
                                                                             : root;
    const char *type = json_string_value(json_object_get(cfg, "model_type"));
    nf_arch a;
    if (type && nf_arch_lookup(type, &a)) {
        if (!m->known) {
            m->known = true;
            m->arch = a;
            m->arch_from = path;
        }
    } else if (!why[0]) {
        snprintf(why, why_size, "config.json: model_type '%s' is not in docs/names.md",
                 type ? nf_cli_name(type).s : "");
    }
    fill(&m->heads, json_count(cfg, "num_attention_heads"));
    fill(&m->kv_heads, json_count(cfg, "num_key_value_heads"));
    static const char *const expert_keys[] = {"num_experts", "n_routed_experts", "num_local_experts"};
    for (size_t k = 0; k < 3; k++) fill(&m->experts, json_count(cfg, expert_keys[k]));
    json_decref(root);
}

/* ---------------------------------------------------------------- units */
/* What one side holds: an artifact's objects, or a checkpoint's tensors (a quantized weight as
 * one tensor under its codes tensor's name, its scales and zero points part of it). */
typedef struct unit {
    const char *name;
    const nf_object *o;
    const nf_source_tensor *t;
    const nf_qweight *q;
    char *alias; /* a quantized weight's name as its unquantized source has it (<p>.weight), or NULL */
    bool paired;
    uint8_t *seen; /* a stack of llama.cpp's: which experts were paired (mats of them), or NULL */
    uint64_t mats;
} unit;

typedef struct units {
    unit *u;
    size_t n;
    nf_strset by_name;
} units;

static nf_status units_of(const diff_side *sd, units *us, nf_error *err)
{
    size_t n = sd->art ? nf_artifact_object_count(sd->art) : nf_source_tensor_count(sd->src);
    us->u = calloc(n ? n : 1, sizeof *us->u);
    if (!us->u) return nf_common_nomem(err);
    for (size_t i = 0; i < n; i++) {
        unit u = {0};
        if (sd->art) {
            u.o = nf_artifact_object(sd->art, i);
            u.name = u.o->id;
        } else {
            u.t = nf_source_tensor_at(sd->src, i);
            nf_qrole role = nf_dialects_role(sd->dialects, u.t, &u.q);
            if (role == NF_QROLE_COMPANION) continue;
            if (role != NF_QROLE_WEIGHT) u.q = NULL;
            u.name = u.t->name;
        }
        if (nf_strset_insert(&us->by_name, u.name, NULL, us->n, NULL) < 0) return nf_common_nomem(err);
        us->u[us->n++] = u;
    }
    /* GPTQ's <p>.qweight, compressed-tensors' <p>.weight_packed: the module's <p>.weight in the
     * checkpoint it was made from (after every name, so that a real name wins) */
    for (size_t i = 0; i < us->n; i++) {
        unit *u = &us->u[i];
        const char *dot = u->q ? strrchr(u->name, '.') : NULL;
        if (!dot || !strcmp(dot, ".weight")) continue;
        size_t plen = (size_t)(dot - u->name);
        if (!(u->alias = malloc(plen + sizeof ".weight"))) return nf_common_nomem(err);
        memcpy(u->alias, u->name, plen);
        memcpy(u->alias + plen, ".weight", sizeof ".weight");
        if (nf_strset_insert(&us->by_name, u->alias, NULL, i, NULL) < 0) return nf_common_nomem(err);
    }
    return NF_OK;
}

static void units_free(units *us)
{
    for (size_t i = 0; i < us->n; i++) {
        free(us->u[i].alias);
        free(us->u[i].seen);
    }
    free(us->u);
    nf_strset_free(&us->by_name);
}

static unit *unit_find(units *us, const char *name)
{
    size_t i;
    return nf_strset_find(&us->by_name, name, NULL, &i) ? &us->u[i] : NULL;
}

/* A side "carries llama.cpp's names": a GGUF file, or an artifact with blk.N tensors (one made
 * from a GGUF keeps its names). */
static bool uses_gguf_names(const diff_side *sd, const units *us)
{
    if (sd->src) return nf_source_kind_of(sd->src) == NF_SOURCE_GGUF;
    for (size_t i = 0; i < us->n; i++)
        if (!strncmp(us->u[i].name, "blk.", 4) || !strcmp(us->u[i].name, "token_embd.weight")) return true;
    return false;
}

/* The matrices of a stacked tensor: its outer dimension when it has three, else the model's
 * experts (an artifact's [E*I, H] object); 0 when unknown. */
static uint64_t stack_mats(const diff_run *r, const unit *u)
{
    if (u->t && u->t->rank == 3) return u->t->shape[0];
    if (u->o && u->o->rank == 3) return u->o->shape[0];
    return r->model.experts;
}

/* A unit's rows: the product of its dimensions but the last. */
static uint64_t unit_rows(const unit *u)
{
    if (u->t) return u->t->rows;
    if (u->o->kind != NF_OBJECT_TENSOR) return 0;
    uint64_t rows = 1; /* the reader has checked that the product fits */
    for (uint32_t i = 0; i + 1 < u->o->rank; i++) rows *= u->o->shape[i];
    return rows;
}

/* More experts than any model has: a stack claiming them is not paired expert by expert. */
#define DIFF_MAX_EXPERTS 65536u

/* ---------------------------------------------------------------- pairs */
static diff_pair *new_pair(diff_run *r, nf_error *err)
{
    if (r->npairs == r->pairs_cap) {
        size_t cap = r->pairs_cap ? 2 * r->pairs_cap : 64;
        diff_pair *p = cap > SIZE_MAX / sizeof *p ? NULL : realloc(r->pairs, cap * sizeof *p);
        if (!p) {
            nf_common_nomem(err);
            return NULL;
        }
        r->pairs = p;
        r->pairs_cap = cap;
    }
    diff_pair *p = &r->pairs[r->npairs++];
    memset(p, 0, sizeof *p);
    p->expert = -1;
    return p;
}

static void set_end(diff_end *e, unit *u)
{
    e->name = u->name;
    e->o = u->o;
    e->t = u->t;
    e->q = u->q;
    u->paired = true;
}

/* "A's name (expert E) = B's name" for a pair whose names differ. */
static nf_status label_pair(diff_pair *p, nf_error *err)
{
    char ex[48] = "";
    if (p->expert >= 0) snprintf(ex, sizeof ex, " (expert %d)", p->expert);
    if ((!p->e[0].name || !p->e[1].name) && p->expert >= 0) { /* an expert of one side only */
        const char *name = p->e[0].name ? p->e[0].name : p->e[1].name;
        size_t n = strlen(name) + sizeof ex;
        if (!(p->label = malloc(n))) return nf_common_nomem(err);
        snprintf(p->label, n, "%s%s", name, ex);
        return NF_OK;
    }
    if (!p->e[0].name || !p->e[1].name || (p->expert < 0 && !strcmp(p->e[0].name, p->e[1].name))) return NF_OK;
    bool a_stack = p->e[0].mats > 0;
    size_t n = strlen(p->e[0].name) + strlen(p->e[1].name) + sizeof ex + 8;
    if (!(p->label = malloc(n))) return nf_common_nomem(err);
    snprintf(p->label, n, "%s%s = %s%s", p->e[0].name, a_stack ? ex : "", p->e[1].name, a_stack ? "" : ex);
    return NF_OK;
}

static nf_status set_unmapped(diff_pair *p, const char *why, nf_error *err)
{
    if (!why) return NF_OK;
    if (!(p->unmapped = strdup(why))) return nf_common_nomem(err);
    return NF_OK;
}

static const char *not_in_table(const diff_run *r)
{
    static const char *const why[NF_ARCH_COUNT] = {
        [NF_ARCH_LLAMA] = "not in docs/names.md's table for llama",
        [NF_ARCH_MISTRAL] = "not in docs/names.md's table for mistral",
        [NF_ARCH_QWEN2] = "not in docs/names.md's table for qwen2",
        [NF_ARCH_QWEN3] = "not in docs/names.md's table for qwen3",
        [NF_ARCH_QWEN3_MOE] = "not in docs/names.md's table for qwen3_moe",
        [NF_ARCH_GEMMA] = "not in docs/names.md's table for gemma",
        [NF_ARCH_GEMMA2] = "not in docs/names.md's table for gemma2",
        [NF_ARCH_GEMMA3] = "not in docs/names.md's table for gemma3",
        [NF_ARCH_DEEPSEEK2] = "not in docs/names.md's table for deepseek2",
        [NF_ARCH_GPT_OSS] = "not in docs/names.md's table for gpt_oss",
    };
    return r->model.arch < NF_ARCH_COUNT && why[r->model.arch] ? why[r->model.arch] : "not in docs/names.md's table";
}

/* The pair of GGUF unit g (side gs) and Hugging Face unit h (named hf): expert `expert` of g's
 * stack of `mats` matrices when the table says g stacks them, its rows in llama.cpp's q/k order
 * when it says so. */
static nf_status link_pair(diff_run *r, unit *g, unit *h, int gs, const nf_name_map *how, uint64_t expert,
                           uint64_t mats, nf_error *err)
{
    uint64_t rows = unit_rows(g);
    diff_pair *p = new_pair(r, err);
    if (!p) return NF_ERR_NOMEM;
    set_end(&p->e[gs], g);
    if (h) set_end(&p->e[1 - gs], h);
    p->id = p->e[0].name ? p->e[0].name : p->e[1].name;
    if (!h) p->changes = gs ? DIFF_ADDED : DIFF_REMOVED; /* an expert with no matrix on the other side */
    if (how->stacked) {
        if (!g->seen && !(g->seen = calloc(mats, 1))) return nf_common_nomem(err);
        g->mats = mats;
        g->seen[expert] = 1;
        p->expert = (int)expert;
        p->e[gs].mats = mats;
        p->e[gs].row0 = expert * (rows / mats);
        /* a stack of rows that are not whole matrices: no expert's rows are known */
        if (rows % mats) p->no_stats = "the stack's rows are not a whole number of matrices per expert";
    }
    if (how->qk_permuted && h) { /* q_proj: the attention heads; k_proj: the key/value heads */
        bool k = strstr(h->name, "k_proj") != NULL;
        p->e[gs].qk_heads = k && r->model.kv_heads ? r->model.kv_heads : r->model.heads;
        uint64_t x;
        if (!p->e[gs].qk_heads) p->no_stats = "llama.cpp reorders its rows by head: the head count is unknown";
        else if (!nf_qk_gguf_row(rows, p->e[gs].qk_heads, 0, &x)) {
            p->no_stats = "llama.cpp reorders its rows by head: the head count does not divide them";
            p->e[gs].qk_heads = 0;
        }
    }
    if (how->change) p->no_stats = "llama.cpp's converter changes its values besides its name";
    return label_pair(p, err);
}

/* Pair u (a unit of side `gs`, carrying llama.cpp's names) with the other side's units through
 * the table: one pair per expert of a stack, or one pair.  *mapped: the name is in the table. */
static nf_status pair_from_gguf(diff_run *r, units *other, int gs, unit *u, const char **why, nf_error *err)
{
    char hf[512];
    nf_name_map how;
    *why = NULL;
    size_t len = nf_gguf_name_to_hf(r->model.arch, u->name, 0, hf, sizeof hf, &how);
    if (!len) {
        *why = how.reason ? how.reason : not_in_table(r);
        return NF_OK;
    }
    uint64_t mats = how.stacked ? stack_mats(r, u) : 1;
    if (how.stacked && !mats) {
        *why = "a stack of experts whose count is unknown";
        return NF_OK;
    }
    if (mats > DIFF_MAX_EXPERTS) { /* a file's outer dimension: not a loop of 2^40 names */
        *why = "a stack of more than 65536 experts";
        return NF_OK;
    }
    /* a stack none of whose experts the other side holds stays one tensor only in its side */
    uint64_t found = 0;
    for (uint64_t e = 0; how.stacked && e < mats && !found; e++)
        if (nf_gguf_name_to_hf(r->model.arch, u->name, (int)e, hf, sizeof hf, &how) && unit_find(other, hf)) found++;
    if (how.stacked && !found) return NF_OK;
    for (uint64_t e = 0; e < mats; e++) {
        if (how.stacked && !nf_gguf_name_to_hf(r->model.arch, u->name, (int)e, hf, sizeof hf, &how)) continue;
        unit *v = unit_find(other, hf);
        if (v && v->paired) v = NULL;
        /* an expert without its matrix on the other side is listed, as only in the stack's side */
        NF_TRY(link_pair(r, u, v, gs, &how, e, mats, err));
    }
    return NF_OK;
}

/* Pair u (a unit of side `hs`, Hugging Face's names) with the GGUF-named side's unit. */
static nf_status pair_from_hf(diff_run *r, units *other, int hs, unit *u, bool *done, nf_error *err)
{
    char gguf[512];
    nf_name_map how;
    *done = false;
    if (!nf_hf_name_to_gguf(r->model.arch, u->name, gguf, sizeof gguf, &how) &&
        (!u->alias || !nf_hf_name_to_gguf(r->model.arch, u->alias, gguf, sizeof gguf, &how)))
        return NF_OK;
    unit *v = unit_find(other, gguf);
    if (!v) return NF_OK;
    uint64_t mats = how.stacked ? stack_mats(r, v) : 1;
    if (how.stacked && (!mats || how.expert < 0 || (uint64_t)how.expert >= mats)) return NF_OK;
    if (!how.stacked && v->paired) return NF_OK; /* a stack pairs once per expert */
    *done = true;
    return link_pair(r, v, u, 1 - hs, &how, how.stacked ? (uint64_t)how.expert : 0, mats, err);
}

/* ---------------------------------------------------------------- classification */
/* An end's logical shape: a stack's matrix is [rows / mats, cols]. */
static uint32_t end_shape(const diff_end *e, uint64_t *shape)
{
    uint32_t rank;
    if (e->q) {
        shape[0] = e->q->shape[0];
        shape[1] = e->q->shape[1];
        rank = 2;
    } else {
        rank = e->o ? e->o->rank : e->t->rank;
        if (rank > 8) rank = 8;
        memcpy(shape, e->o ? e->o->shape : e->t->shape, rank * sizeof *shape);
    }
    if (e->mats) { /* the matrix of one expert: rows / mats rows */
        uint64_t rows = 1;
        for (uint32_t i = 0; i + 1 < rank; i++) rows *= shape[i];
        shape[0] = rank ? rows / e->mats : 0;
        shape[1] = rank ? shape[rank - 1] : 1;
        rank = 2;
    }
    return rank;
}

static bool shape_equal(uint32_t ra, const uint64_t *sa, uint32_t rb, const uint64_t *sb)
{
    if (ra != rb) return false;
    for (uint32_t i = 0; i < ra; i++)
        if (sa[i] != sb[i]) return false;
    return true;
}

/* A tensor [N, K] holding one of rank 3 or more as its rows: N is the product of the leading
 * dimensions and K the last (an import of a GGUF expert bank [E, R, K], ninfer/import.h). */
static bool rows_of(uint32_t ra, const uint64_t *sa, uint32_t rt, const uint64_t *st)
{
    if (ra != 2 || rt < 3 || sa[1] != st[rt - 1]) return false;
    uint64_t n = 1;
    for (uint32_t i = 0; i + 1 < rt; i++)
        if (!nf_mul_u64(n, st[i], &n)) return false;
    return n == sa[0];
}

/* [2,3] */
void diff_shape_text(const diff_end *e, char *out, size_t n)
{
    uint64_t shape[8];
    uint32_t rank = end_shape(e, shape);
    size_t k = (size_t)snprintf(out, n, "[");
    for (uint32_t i = 0; i < rank && k < n; i++)
        k += (size_t)snprintf(out + k, n - k, "%s%llu", i ? "," : "", (unsigned long long)shape[i]);
    if (k < n) snprintf(out + k, n - k, "]");
}

/* Rows and columns of an end's values (a quantized weight [N, K]; an expert's matrix of a stack). */
static void end_rows_cols(const diff_end *e, uint64_t *rows, uint64_t *cols)
{
    uint64_t shape[8];
    uint32_t rank = end_shape(e, shape);
    *cols = rank ? shape[rank - 1] : 1;
    *rows = 1;
    for (uint32_t i = 0; i + 1 < rank; i++) *rows *= shape[i];
}

static bool same_name(const char *x, const char *y) { return (!x && !y) || (x && y && strcmp(x, y) == 0); }

/* Two artifacts' objects of one id: records, then bytes or values. */
static nf_status classify_objects(diff_run *r, diff_pair *p, nf_error *err)
{
    const nf_object *a = p->e[0].o, *b = p->e[1].o;
    nf_geometry g;
    if (a->kind == NF_OBJECT_TENSOR) NF_TRY(diff_end_geometry(r, 0, &p->e[0], &g, err));
    if (b->kind == NF_OBJECT_TENSOR) NF_TRY(diff_end_geometry(r, 1, &p->e[1], &g, err));
    if (a->kind != b->kind) {
        p->changes = DIFF_KIND;
        p->no_stats = "a tensor on one side, a resource on the other";
        return NF_OK;
    }
    if (a->kind == NF_OBJECT_RESOURCE) {
        /* a resource's bytes are its value: equal or not */
        if (a->bytes != b->bytes) p->changes = DIFF_WORDS;
        else p->want_bytes = true;
        return NF_OK;
    }
    if (!same_name(a->format_name, b->format_name)) p->changes |= DIFF_FORMAT;
    if (!same_name(a->layout_name, b->layout_name)) p->changes |= DIFF_LAYOUT;
    if (!shape_equal(a->rank, a->shape, b->rank, b->shape)) {
        p->changes |= DIFF_SHAPE | DIFF_WORDS;
        p->no_stats = "the shapes differ";
        return NF_OK;
    }
    end_rows_cols(&p->e[0], &p->rows, &p->cols);
    if (p->changes || a->bytes != b->bytes || a->divisors != b->divisors) {
        /* another encoding of the same shape: the words differ, the values may not */
        p->changes |= DIFF_WORDS;
        p->want_stats = p->rows && p->cols;
    } else {
        p->want_bytes = true;
    }
    return p->want_stats ? diff_plan_chunks(r, p, err) : NF_OK;
}

/* Why an end's values cannot be read, or NULL. */
static const char *unreadable(const diff_run *r, int side, const diff_end *e)
{
    if (e->o && e->o->kind != NF_OBJECT_TENSOR) return "a resource, not a tensor";
    if (e->t && !e->q && !e->t->convertible)
        return side == 0 ? "A's type cannot be read as values" : "B's type cannot be read as values";
    if (e->o && (e->row0 || e->qk_heads)) {
        nf_geometry g;
        nf_error err;
        /* nvfp4's scales are tiled by bands of 128 rows: its rows are read band by band */
        if (nf_artifact_check_object(r->side[side].art, e->o, &g, &err) == NF_OK && nf_layout_colspan_rows(&g) > 1)
            return "a slice or reordering of an nvfp4 object is not compared";
    }
    return NULL;
}

/* A pair with a checkpoint on either side: its values only. */
static nf_status classify_values(diff_run *r, diff_pair *p, nf_error *err)
{
    uint64_t sa[8], sb[8];
    uint32_t ra = end_shape(&p->e[0], sa), rb = end_shape(&p->e[1], sb);
    for (int k = 0; k < 2; k++) {
        const char *why = unreadable(r, k, &p->e[k]);
        if (why && p->e[k].o && p->e[k].o->kind != NF_OBJECT_TENSOR) {
            p->changes = DIFF_KIND;
            p->no_stats = "a resource in one, a tensor in the other";
            return NF_OK;
        }
        if (why && !p->no_stats) p->no_stats = why;
    }
    if (!shape_equal(ra, sa, rb, sb) && !rows_of(ra, sa, rb, sb) && !rows_of(rb, sb, ra, sa)) {
        p->changes = DIFF_SHAPE;
        p->no_stats = "the shapes differ";
        return NF_OK;
    }
    if (p->no_stats) {
        p->changes = DIFF_VALUES;
        return NF_OK;
    }
    end_rows_cols(&p->e[0], &p->rows, &p->cols);
    p->want_stats = p->rows && p->cols;
    return p->want_stats ? diff_plan_chunks(r, p, err) : NF_OK;
}

/* --imatrix: the importance of the pair's columns, found by either side's name (the
 * reference's first): an expert's matrix takes its slice of a stack's entry. */
static nf_status pair_weights(diff_run *r, diff_pair *p, nf_error *err)
{
    for (int i = 0; i < 2 && !p->weights; i++) {
        const diff_end *e = &p->e[i == 0 ? r->ref : 1 - r->ref];
        const float *imp = NULL;
        uint64_t len = 0, mats = e->mats;
        const char *matched = NULL;
        if (!mats && e->t && e->t->rank == 3) mats = e->t->shape[0]; /* a whole stack */
        nf_status st = mats > 1 ? nf_imatrix_lookup_stack(r->imatrix, e->name, mats, p->cols, &imp, &len, &matched, err)
                                : nf_imatrix_lookup(r->imatrix, e->name, p->cols, &imp, &matched, err);
        if (st != NF_OK) return st;
        if (!imp) continue;
        p->weights = imp;
        p->weights_entry = matched;
        if (mats > 1 && len == mats * p->cols) {
            if (e->mats) p->weights = imp + (uint64_t)p->expert * p->cols; /* this expert's vector */
            else p->wmats = mats;
        }
    }
    return NF_OK;
}

/* ---------------------------------------------------------------- pairing */
static nf_status pair_artifacts(diff_run *r, nf_error *err)
{
    units ua = {0}, ub = {0};
    nf_status st = units_of(&r->side[0], &ua, err);
    if (st == NF_OK) st = units_of(&r->side[1], &ub, err);
    /* A's objects in A's order, then what only B has in B's order */
    for (size_t i = 0; st == NF_OK && i < ua.n; i++) {
        diff_pair *p = new_pair(r, err);
        if (!p) st = NF_ERR_NOMEM;
        else {
            set_end(&p->e[0], &ua.u[i]);
            p->id = ua.u[i].name;
            unit *v = unit_find(&ub, p->id);
            if (v) set_end(&p->e[1], v);
            else p->changes = DIFF_REMOVED;
        }
    }
    for (size_t i = 0; st == NF_OK && i < ub.n; i++) {
        if (ub.u[i].paired) continue;
        diff_pair *p = new_pair(r, err);
        if (!p) st = NF_ERR_NOMEM;
        else {
            set_end(&p->e[1], &ub.u[i]);
            p->id = ub.u[i].name;
            p->changes = DIFF_ADDED;
        }
    }
    for (size_t i = 0; st == NF_OK && i < r->npairs; i++) {
        diff_pair *p = &r->pairs[i];
        if (p->changes) continue;
        st = classify_objects(r, p, err);
        /* tensors of one shape: their values may be compared (the bytes phase decides) */
        if (st == NF_OK && r->imatrix && p->cols) st = pair_weights(r, p, err);
    }
    units_free(&ua);
    units_free(&ub);
    return st;
}

/* A checkpoint on either side: tensors paired by name, then through llama.cpp's names when
 * exactly one side carries them. */
static nf_status pair_units(diff_run *r, units *us, nf_error *err)
{
    bool g0 = uses_gguf_names(&r->side[0], &us[0]), g1 = uses_gguf_names(&r->side[1], &us[1]);
    int gs = g0 != g1 ? (g0 ? 0 : 1) : -1; /* the side with llama.cpp's names, when one has them */
    char why[8800] = "";
    if (r->arch_option) {
        nf_arch a;
        if (!nf_arch_lookup(r->arch_option, &a)) /* checked by main */
            return nf_error_set(err, NF_ERR_USAGE, "--arch: unknown architecture");
        r->model = (diff_model){true, a, "--arch", 0, 0, 0};
    }
    if (gs >= 0) {
        model_from_side(r, &r->side[gs], why, sizeof why);
        /* a GGUF that names an architecture of its own decides: another side's config.json
         * does not map names the table does not know for it */
        if (!why[0] || r->arch_option) model_from_side(r, &r->side[1 - gs], why, sizeof why);
        if (r->arch_option) why[0] = '\0'; /* --arch decides */
        if (!r->model.known && !why[0]) snprintf(why, sizeof why, "the architecture is unknown: give --arch");
    }
    nf_status st = NF_OK;
    for (size_t i = 0; st == NF_OK && i < us[0].n; i++) {
        unit *u = &us[0].u[i];
        if (u->paired) continue;
        unit *v = unit_find(&us[1], u->name);
        if ((!v || v->paired) && u->alias) v = unit_find(&us[1], u->alias);
        if (v && !v->paired) {
            diff_pair *p = new_pair(r, err);
            if (!p) return NF_ERR_NOMEM;
            set_end(&p->e[0], u);
            set_end(&p->e[1], v);
            p->id = u->name;
            NF_TRY(label_pair(p, err));
            continue;
        }
        const char *reason = NULL;
        bool done = false;
        if (gs == 0 && r->model.known) {
            st = pair_from_gguf(r, &us[1], 0, u, &reason, err);
            done = u->paired;
        } else if (gs == 1 && r->model.known) {
            st = pair_from_hf(r, &us[1], 0, u, &done, err);
        } else if (gs == 0) {
            reason = why;
        }
        if (st != NF_OK || done) continue;
        diff_pair *p = new_pair(r, err);
        if (!p) return NF_ERR_NOMEM;
        set_end(&p->e[0], u);
        p->id = u->name;
        p->changes = DIFF_REMOVED;
        st = set_unmapped(p, reason, err);
    }
    for (size_t i = 0; st == NF_OK && i < us[1].n; i++) {
        unit *v = &us[1].u[i];
        if (v->paired && v->seen) { /* a stack of B paired from A's matrices: the experts A lacks */
            const nf_name_map stacked = {.layer = -1, .expert = -1, .stacked = true};
            for (uint64_t e = 0; st == NF_OK && e < v->mats; e++)
                if (!v->seen[e]) st = link_pair(r, v, NULL, 1, &stacked, e, v->mats, err);
        }
        if (v->paired) continue;
        const char *reason = NULL;
        if (gs == 1 && !r->model.known) reason = why;
        else if (gs == 1) {
            char hf[512];
            nf_name_map how;
            if (!nf_gguf_name_to_hf(r->model.arch, v->name, 0, hf, sizeof hf, &how))
                reason = how.reason ? how.reason : not_in_table(r);
        }
        diff_pair *p = new_pair(r, err);
        if (!p) return NF_ERR_NOMEM;
        set_end(&p->e[1], v);
        p->id = v->name;
        p->changes = DIFF_ADDED;
        st = set_unmapped(p, reason, err);
    }
    for (size_t i = 0; st == NF_OK && i < r->npairs; i++) {
        diff_pair *p = &r->pairs[i];
        if (p->changes & (DIFF_ADDED | DIFF_REMOVED)) continue;
        st = classify_values(r, p, err);
        if (st == NF_OK && p->want_stats && r->imatrix) st = pair_weights(r, p, err);
    }
    return st;
}

static nf_status pair_values(diff_run *r, nf_error *err)
{
    units us[2] = {{0}};
    nf_status st = units_of(&r->side[0], &us[0], err);
    if (st == NF_OK) st = units_of(&r->side[1], &us[1], err);
    if (st == NF_OK) st = pair_units(r, us, err);
    units_free(&us[0]);
    units_free(&us[1]);
    return st;
}

nf_status diff_make_pairs(diff_run *r, nf_error *err)
{
    if (r->artifacts) return pair_artifacts(r, err);
    NF_TRY(pair_values(r, err));
    /* a checkpoint holds tensors; its companion files (tokenizer.json, ...) are the recipe's to
     * map onto resources, so a resource of an artifact has nothing to be compared with */
    for (size_t i = 0; i < r->npairs; i++) {
        diff_pair *p = &r->pairs[i];
        for (int k = 0; k < 2; k++)
            if (p->e[k].o && p->e[k].o->kind == NF_OBJECT_RESOURCE && !p->e[1 - k].name) {
                p->not_compared = true;
                p->changes = 0;
            }
    }
    return NF_OK;
}
