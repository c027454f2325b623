/* llama-imatrix GGUF reading: importance = in_sum2 / max(counts, 1) (docs/vectors.md item 14's
 * numbers), every column 1 under a count of 0 (llama.cpp's quantize), the name mapping (exact, then
 * llama.cpp's GGUF name), other tensors ignored and named, refusals, .zst input, the legacy format. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include <ninfer/ninfer.h>

#include "support/source_writer.h"

typedef struct vec {
    const char *name; /* T */
    const float *sum;
    uint64_t n;
    const float *counts;
    uint64_t ncounts;
} vec;

static void build(sw_buf *b, const vec *v, size_t nv)
{
    sw_gguf_tensor t[16];
    char names[16][128];
    size_t k = 0;
    for (size_t i = 0; i < nv; i++) {
        snprintf(names[k], sizeof names[k], "%s.in_sum2", v[i].name);
        t[k] = (sw_gguf_tensor){names[k], 0, 1, {v[i].n, 1, 1, 1}, v[i].sum, v[i].n * 4};
        k++;
        snprintf(names[k], sizeof names[k], "%s.counts", v[i].name);
        t[k] = (sw_gguf_tensor){names[k], 0, 1, {v[i].ncounts, 1, 1, 1}, v[i].counts, v[i].ncounts * 4};
        k++;
    }
    sw_gguf_file(b, 0, t, k);
}

static nf_status open_vecs(const vec *v, size_t nv, nf_imatrix **m, nf_error *err)
{
    sw_buf b = {0};
    build(&b, v, nv);
    nf_status st = nf_imatrix_open_memory(b.data, b.len, "test.imatrix.gguf", m, err);
    sw_free(&b);
    return st;
}

static const float two = 2.0f;

Test(imatrix, importance_is_in_sum2_over_counts)
{
    /* docs/vectors.md item 14: 6.0 / 2 -> 3.0, 9.0 / 2 -> 4.5, 4.0 / 2 -> 2.0 */
    const float qkv[3] = {6.0f, 6.0f, 6.0f}, q[2] = {9.0f, 0.0f}, down[4] = {4.0f, 4.0f, 8.0f, 1.0f};
    const float zero = 0.0f;
    vec v[] = {{"blk.0.attn_qkv.weight", qkv, 3, &two, 1},
               {"blk.1.attn_q.weight", q, 2, &two, 1},
               {"blk.1.ffn_down.weight", down, 4, &two, 1},
               {"blk.2.ffn_up.weight", down, 4, &zero, 1}};
    nf_imatrix *m;
    nf_error err;
    cr_assert_eq(open_vecs(v, 4, &m, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_imatrix_count(m), 4);
    const float *imp;
    const char *matched;
    cr_assert_eq(nf_imatrix_lookup(m, "blk.0.attn_qkv.weight", 3, &imp, &matched, &err), NF_OK);
    cr_assert_not_null(imp);
    for (int i = 0; i < 3; i++) cr_assert_eq(imp[i], 3.0f);
    cr_assert_eq(nf_imatrix_lookup(m, "model.layers.1.self_attn.q_proj.weight", 2, &imp, &matched, &err), NF_OK);
    cr_assert_not_null(imp, "HF name maps to the GGUF name");
    cr_assert_str_eq(matched, "blk.1.attn_q.weight");
    cr_assert_eq(imp[0], 4.5f);
    cr_assert_eq(imp[1], 0.0f);
    cr_assert_eq(nf_imatrix_lookup(m, "model.layers.1.mlp.down_proj.weight", 4, &imp, NULL, &err), NF_OK);
    cr_assert(imp && imp[0] == 2.0f && imp[1] == 2.0f && imp[2] == 4.0f && imp[3] == 0.5f);
    /* counts 0: no input seen, every column weighs 1 (llama.cpp's quantize) */
    cr_assert_eq(nf_imatrix_lookup(m, "blk.2.ffn_up.weight", 4, &imp, NULL, &err), NF_OK);
    cr_assert(imp && imp[0] == 1.0f && imp[2] == 1.0f && imp[3] == 1.0f);
    /* no entry: no importance, not an error */
    cr_assert_eq(nf_imatrix_lookup(m, "model.layers.7.mlp.up_proj.weight", 4, &imp, NULL, &err), NF_OK);
    cr_assert_null(imp);
    /* wrong length */
    cr_assert_eq(nf_imatrix_lookup(m, "blk.1.attn_q.weight", 3, &imp, NULL, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "blk.1.attn_q.weight") && strstr(err.message, "2 values"), "%s", err.message);
    nf_imatrix_close(m);
}

Test(imatrix, gguf_names)
{
    static const char *pairs[][2] = {
        {"model.layers.0.self_attn.q_proj.weight", "blk.0.attn_q.weight"},
        {"model.layers.12.self_attn.o_proj.weight", "blk.12.attn_output.weight"},
        {"model.layers.3.mlp.gate_proj.weight", "blk.3.ffn_gate.weight"},
        {"model.layers.3.mlp.up_proj.weight", "blk.3.ffn_up.weight"},
        {"model.layers.3.mlp.down_proj.weight", "blk.3.ffn_down.weight"},
        {"model.layers.0.input_layernorm.weight", "blk.0.attn_norm.weight"},
        {"model.embed_tokens.weight", "token_embd.weight"},
        {"lm_head.weight", "output.weight"},
        {"model.norm.weight", "output_norm.weight"},
    };
    char out[128];
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        cr_assert_neq(nf_imatrix_gguf_name(pairs[i][0], out, sizeof out), 0, "%s", pairs[i][0]);
        cr_assert_str_eq(out, pairs[i][1]);
    }
    cr_assert_eq(nf_imatrix_gguf_name("model.layers.x.mlp.up_proj.weight", out, sizeof out), 0);
    cr_assert_eq(nf_imatrix_gguf_name("model.layers.0.mlp.experts.weight", out, sizeof out), 0);
    cr_assert_eq(nf_imatrix_gguf_name("something", out, sizeof out), 0);
    cr_assert_eq(nf_imatrix_gguf_name("model.layers.0.self_attn.q_proj.weight", out, 8), 0, "too small");
}

static void expect_refused(const vec *v, size_t nv, const char *fragment)
{
    nf_imatrix *m = NULL;
    nf_error err;
    cr_assert_eq(open_vecs(v, nv, &m, &err), NF_ERR_INVALID, "expected a refusal mentioning %s", fragment);
    cr_assert(strstr(err.message, fragment), "'%s' lacks '%s'", err.message, fragment);
    cr_assert_null(m);
}

Test(imatrix, refusals)
{
    const float neg[2] = {1.0f, -1.0f}, nan2[2] = {1.0f, NAN}, inf2[2] = {INFINITY, 1.0f}, ok[2] = {1.0f, 2.0f};
    const float two_counts[2] = {2.0f, 2.0f}, neg_count = -1.0f;
    vec a[] = {{"blk.0.attn_q.weight", neg, 2, &two, 1}};
    expect_refused(a, 1, "column 1");
    vec b[] = {{"blk.0.attn_q.weight", nan2, 2, &two, 1}};
    expect_refused(b, 1, "finite");
    vec c[] = {{"blk.0.attn_q.weight", inf2, 2, &two, 1}};
    expect_refused(c, 1, "finite");
    vec d[] = {{"blk.0.attn_q.weight", ok, 2, two_counts, 2}};
    expect_refused(d, 1, "dense counts");
    vec e[] = {{"blk.0.attn_q.weight", ok, 2, &neg_count, 1}};
    expect_refused(e, 1, "counts must be");

    /* a T.in_sum2 without its T.counts, and a stray tensor */
    sw_gguf_tensor only_sum[] = {{"w.in_sum2", 0, 1, {2, 1, 1, 1}, ok, 8}};
    sw_buf buf = {0};
    sw_gguf_file(&buf, 0, only_sum, 1);
    nf_imatrix *m = NULL;
    nf_error err;
    cr_assert_eq(nf_imatrix_open_memory(buf.data, buf.len, "x", &m, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "w.counts"), "%s", err.message);
    sw_free(&buf);
    /* a T.counts without its T.in_sum2 */
    sw_gguf_tensor only_counts[] = {{"w.in_sum2", 0, 1, {2, 1, 1, 1}, ok, 8},
                                    {"w.counts", 0, 1, {1, 1, 1, 1}, &two, 4},
                                    {"v.counts", 0, 1, {1, 1, 1, 1}, &two, 4}};
    sw_gguf_file(&buf, 0, only_counts, 3);
    cr_assert_eq(nf_imatrix_open_memory(buf.data, buf.len, "x", &m, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "'v.counts' has no 'v.in_sum2'"), "%s", err.message);
    sw_free(&buf);
    /* only other tensors: nothing to read */
    sw_gguf_tensor stray[] = {{"token_embd.weight", 0, 1, {2, 1, 1, 1}, ok, 8}};
    sw_gguf_file(&buf, 0, stray, 1);
    cr_assert_eq(nf_imatrix_open_memory(buf.data, buf.len, "x", &m, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "not a llama-imatrix file"), "%s", err.message);
    sw_free(&buf);
    /* neither GGUF nor the legacy format */
    cr_assert_eq(nf_imatrix_open_memory("hello", 5, "x", &m, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "neither GGUF nor a legacy llama-imatrix file"), "%s", err.message);
}

Test(imatrix, zstd_file)
{
    const float q[2] = {9.0f, 1.0f};
    vec v[] = {{"blk.0.attn_q.weight", q, 2, &two, 1}};
    sw_buf b = {0};
    build(&b, v, 1);
    size_t cap = ZSTD_compressBound(b.len);
    void *z = malloc(cap);
    size_t zn = ZSTD_compress(z, cap, b.data, b.len, 3);
    cr_assert_not(ZSTD_isError(zn));
    char *dir = sw_tempdir();
    char *path = sw_path(dir, "imatrix.gguf.zst");
    char *plain = sw_path(dir, "imatrix.gguf");
    cr_assert_eq(sw_write_file(path, z, zn), 0);
    cr_assert_eq(sw_write_file(plain, b.data, b.len), 0);
    nf_imatrix *m;
    nf_error err;
    const float *imp;
    cr_assert_eq(nf_imatrix_open(path, &m, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_imatrix_lookup(m, "blk.0.attn_q.weight", 2, &imp, NULL, &err), NF_OK);
    cr_assert(imp && imp[0] == 4.5f && imp[1] == 0.5f);
    nf_imatrix_close(m);
    cr_assert_eq(nf_imatrix_open(plain, &m, &err), NF_OK, "%s", err.message);
    nf_imatrix_close(m);
    /* a truncated .zst is refused */
    cr_assert_eq(sw_write_file(path, z, zn / 2), 0);
    cr_assert_eq(nf_imatrix_open(path, &m, &err), NF_ERR_INVALID);
    sw_rmtree(dir);
    free(dir);
    free(path);
    free(plain);
    free(z);
    sw_free(&b);
}

/* A newer llama-imatrix writes T.in_sum beside T.in_sum2 and T.counts: ignored, and named. */
Test(imatrix, other_tensors_ignored)
{
    const float q[2] = {9.0f, 1.0f}, in_sum[2] = {3.0f, -1.0f};
    sw_gguf_tensor t[] = {{"blk.0.attn_q.weight.in_sum2", 0, 1, {2, 1, 1, 1}, q, 8},
                          {"blk.0.attn_q.weight.in_sum", 0, 1, {2, 1, 1, 1}, in_sum, 8},
                          {"blk.0.attn_q.weight.counts", 0, 1, {1, 1, 1, 1}, &two, 4}};
    sw_buf b = {0};
    sw_gguf_file(&b, 0, t, 3);
    nf_imatrix *m;
    nf_error err;
    cr_assert_eq(nf_imatrix_open_memory(b.data, b.len, "new.imatrix.gguf", &m, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_imatrix_count(m), 1);
    cr_assert_eq(nf_imatrix_ignored_count(m), 1);
    cr_assert_str_eq(nf_imatrix_ignored_at(m, 0), "blk.0.attn_q.weight.in_sum");
    cr_assert_null(nf_imatrix_ignored_at(m, 1));
    const float *imp;
    cr_assert_eq(nf_imatrix_lookup(m, "blk.0.attn_q.weight", 2, &imp, NULL, &err), NF_OK);
    cr_assert(imp && imp[0] == 4.5f && imp[1] == 0.5f);
    nf_imatrix_close(m);
    sw_free(&b);
}

/* The legacy format, written here as llama.cpp's save_imatrix_legacy lays it out. */
typedef struct legacy {
    uint8_t b[4096];
    size_t n;
} legacy;
static void put32(legacy *l, uint32_t v)
{
    for (int i = 0; i < 4; i++) l->b[l->n++] = (uint8_t)(v >> (8 * i));
}
static void putf(legacy *l, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    put32(l, u);
}
static void put_entry(legacy *l, const char *name, int32_t ncall, const float *v, int32_t nval)
{
    put32(l, (uint32_t)strlen(name));
    memcpy(l->b + l->n, name, strlen(name));
    l->n += strlen(name);
    put32(l, (uint32_t)ncall);
    put32(l, (uint32_t)nval);
    for (int32_t i = 0; i < nval; i++) putf(l, v[i]);
}

Test(imatrix, legacy_format)
{
    const float q[2] = {9.0f, 3.0f}, exps[6] = {1, 2, 3, 4, 5, 6};
    legacy l = {.n = 0};
    put32(&l, 3);
    put_entry(&l, "blk.0.attn_q.weight", 3, q, 2);           /* divided by ncall 3 */
    put_entry(&l, "blk.0.attn_k.weight", 0, q, 2);           /* ncall 0: as stored */
    put_entry(&l, "blk.1.ffn_down_exps.weight", 2, exps, 6); /* 3 experts of 2 columns */
    put32(&l, 100);                                          /* last chunk */
    put32(&l, 8);
    memcpy(l.b + l.n, "wiki.raw", 8);
    l.n += 8;
    nf_imatrix *m;
    nf_error err;
    cr_assert_eq(nf_imatrix_open_memory(l.b, l.n, "old.dat", &m, &err), NF_OK, "%s", err.message);
    cr_assert_eq(nf_imatrix_count(m), 3);
    const float *imp;
    uint64_t len;
    cr_assert_eq(nf_imatrix_lookup(m, "model.layers.0.self_attn.q_proj.weight", 2, &imp, NULL, &err), NF_OK);
    cr_assert(imp && imp[0] == 3.0f && imp[1] == 1.0f);
    cr_assert_eq(nf_imatrix_lookup(m, "blk.0.attn_k.weight", 2, &imp, NULL, &err), NF_OK);
    cr_assert(imp && imp[0] == 9.0f);
    /* an expert's slice, and the whole stack */
    cr_assert_eq(nf_imatrix_lookup(m, "model.layers.1.mlp.experts.2.down_proj.weight", 2, &imp, NULL, &err), NF_OK);
    cr_assert(imp && imp[0] == 2.5f && imp[1] == 3.0f, "%g %g", imp ? (double)imp[0] : -1.0,
              imp ? (double)imp[1] : -1.0);
    cr_assert_eq(nf_imatrix_lookup_stack(m, "model.layers.1.mlp.experts.down_proj", 3, 2, &imp, &len, NULL, &err),
                 NF_OK, "%s", err.message);
    cr_assert(imp && len == 6 && imp[4] == 2.5f);
    cr_assert_eq(nf_imatrix_lookup_stack(m, "blk.1.ffn_down_exps.weight", 2, 2, &imp, &len, NULL, &err),
                 NF_ERR_INVALID);
    cr_assert(strstr(err.message, "stacks 2 matrices"), "%s", err.message);
    nf_imatrix_close(m);
    /* without the trailer */
    legacy s = {.n = 0};
    put32(&s, 1);
    put_entry(&s, "blk.0.attn_q.weight", 1, q, 2);
    cr_assert_eq(nf_imatrix_open_memory(s.b, s.n, "old.dat", &m, &err), NF_OK, "%s", err.message);
    nf_imatrix_close(m);
}

static void legacy_refused(const legacy *l, const char *fragment)
{
    nf_imatrix *m = NULL;
    nf_error err;
    cr_assert_eq(nf_imatrix_open_memory(l->b, l->n, "bad.dat", &m, &err), NF_ERR_INVALID, "wanted '%s'", fragment);
    cr_assert(strstr(err.message, "bad.dat") && strstr(err.message, fragment), "'%s' lacks '%s'", err.message,
              fragment);
    cr_assert_null(m);
}

/* A file of `count` entries (the count as written), then one entry `name` of n values (n may be
 * 0) and `tail` bytes from tail_bytes. */
static legacy one_entry(int32_t count, const char *name, const float *v, int32_t n, const uint8_t *tail,
                        size_t tail_len)
{
    legacy l = {.n = 0};
    put32(&l, (uint32_t)count);
    put_entry(&l, name, 1, v, n);
    if (tail_len) memcpy(l.b + l.n, tail, tail_len);
    l.n += tail_len;
    return l;
}

Test(imatrix, legacy_refusals)
{
    const float q[2] = {9.0f, 3.0f}, neg[2] = {1.0f, -2.0f};
    static const uint8_t zeros[16] = {0}, half_trailer[4] = {5}, after[10] = {5, 0, 0, 0, 1, 0, 0, 0, 'x', 'y'};
    legacy l = one_entry(0, "w", q, 2, NULL, 0);
    legacy_refused(&l, "neither GGUF nor a legacy");
    l = one_entry(1000000, "a", q, 2, NULL, 0);
    legacy_refused(&l, "1000000 entries do not fit");
    l = one_entry(1, "blk.0.attn_q.weight", q, 2, NULL, 0);
    l.n -= 3; /* a truncated value */
    legacy_refused(&l, "entry 0 'blk.0.attn_q.weight' at byte 4: 2 values do not fit");
    l = one_entry(2, "w", q, 2, NULL, 0);
    put_entry(&l, "w", 1, q, 2);
    legacy_refused(&l, "'w' appears twice");
    l = one_entry(1, "w", neg, 2, NULL, 0);
    legacy_refused(&l, "entry 'w' value 1 (byte 21) is -2");
    l = (legacy){.n = 0};
    put32(&l, 1);
    put32(&l, 70000); /* name length past the cap */
    memcpy(l.b + l.n, zeros, sizeof zeros);
    l.n += sizeof zeros;
    legacy_refused(&l, "entry 0 at byte 4: name length 70000 is not 1..4096 bytes");
    l = one_entry(1, "w", q, 2, half_trailer, sizeof half_trailer);
    legacy_refused(&l, "are not its trailer");
    l = one_entry(1, "w", q, 2, after, sizeof after);
    legacy_refused(&l, "1 bytes after the dataset's name");
    l = one_entry(1, "w", q, 0, zeros, 4);
    legacy_refused(&l, "0 values do not fit");
}
