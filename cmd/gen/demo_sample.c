/* ninfer-demo-sample: writes a sample artifact holding every format and layout through the
 * library's writer, with deterministic pseudo-random legal words (used by `make demo` until the
 * converter lands, and handy for trying inspect and verify).
 *
 * usage: ninfer-demo-sample OUT.ninfer [GGUF_FIXTURE_DIR] [--max-file-bytes N]
 * GGUF_FIXTURE_DIR holds <type>.qbytes files ([16,512] blocks written by ggml); without it the
 * gguf_* objects are left out. */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ninfer/ninfer.h>

typedef struct rng {
    uint64_t s;
} rng;

static uint32_t next_u32(rng *r)
{
    /* splitmix64: small, deterministic on every platform */
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

static int uniform(rng *r, int lo, int hi) { return lo + (int)(next_u32(r) % (uint32_t)(hi - lo + 1)); }

/* A weight-like value: roughly normal with a few outliers, via the sum of uniforms. */
static float weight(rng *r, float sigma)
{
    float s = 0.0f;
    for (int i = 0; i < 4; i++) s += (float)next_u32(r) / 4294967296.0f - 0.5f;
    if (next_u32(r) % 97 == 0) s *= 6.0f;
    return s * sigma * 1.7f;
}

static int fail(const nf_error *err)
{
    fprintf(stderr, "ninfer-demo-sample: error: %s\n", err->message);
    return nf_status_exit_code(err->status);
}

typedef struct planned {
    const char *id;
    nf_geometry g;
    nf_words w;
    uint8_t *raw; /* resources and gguf blocks */
    uint64_t raw_bytes;
    size_t index;
} planned;

static void fill_words(planned *p, rng *r)
{
    const nf_geometry *g = &p->g;
    const nf_format *f = g->format;
    uint64_t n = g->rows, k = g->cols;
    switch (f->category) {
    case NF_CAT_DIRECT:
        for (uint64_t i = 0; i < n * k; i++) {
            float v = weight(r, 0.05f);
            if (f->id == NF_FMT_BF16) p->w.w16[i] = nf_f32_to_bf16(v);
            else if (f->id == NF_FMT_FP32) p->w.w32[i] = nf_f32_bits(v);
            else p->w.w32[i] = (uint32_t)(int32_t)uniform(r, -1000, 1000);
        }
        break;
    case NF_CAT_GROUPED:
        for (uint64_t i = 0; i < n * g->logical_groups; i++)
            p->w.scales[i] = nf_f32_to_f16(0.002f + (float)(next_u32(r) % 1000) * 1e-5f);
        for (uint64_t i = 0; i < n * k; i++) {
            int q = uniform(r, f->code_min, f->code_max);
            if (f->id == NF_FMT_Q8_G32_FP16 && q == -128) q = -127;
            if (f->id == NF_FMT_T2_G128_FP16 && q == -2) q = -1;
            p->w.codes[i] = (int8_t)q;
        }
        break;
    case NF_CAT_NVFP4:
        for (uint64_t i = 0; i < n * k; i++) p->w.codes8[i] = (uint8_t)(next_u32(r) & 15u);
        for (uint64_t i = 0; i < n * (k / 16); i++) p->w.scales8[i] = (uint8_t)uniform(r, 0x20, 0x50);
        for (uint64_t i = 0; i < g->divisors; i++) p->w.divisors[i] = nf_f32_bits(1.5f + (float)i);
        break;
    case NF_CAT_FP8_ROW:
        for (uint64_t i = 0; i < n; i++)
            p->w.scales[i] = f->scale_type == NF_SCALE_BF16 ? nf_f32_to_bf16(1e-4f * (float)(i + 1))
                                                            : nf_f32_to_f16(1e-4f * (float)(i + 1));
        for (uint64_t i = 0; i < n * k; i++) {
            uint8_t c = (uint8_t)next_u32(r);
            if ((c & 0x7F) == 0x7F) c ^= 1; /* never NaN */
            p->w.codes8[i] = c;
        }
        break;
    case NF_CAT_GGUF: break;
    }
}

/* Objects 1.. own their words; gguf objects also own their id and block bytes (object 0 is the
 * static tokenizer). */
static void release(planned *objs, size_t count)
{
    for (size_t i = 1; i < count; i++) {
        nf_words_free(&objs[i].w);
        if (objs[i].raw) {
            free(objs[i].raw);
            free((char *)objs[i].id);
        }
    }
}

static uint8_t *read_file(const char *path, uint64_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n > 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n)) != NULL) {
            if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
                free(buf);
                buf = NULL;
            } else {
                *size = (uint64_t)n;
            }
        }
    }
    fclose(f);
    return buf;
}

#define USAGE "usage: ninfer-demo-sample OUT.ninfer [GGUF_FIXTURE_DIR] [--max-file-bytes N]\n"

static int usage(void)
{
    fprintf(stderr, USAGE);
    return 2;
}

static int help(void)
{
    printf(USAGE "Writes a sample artifact holding every format and layout through the library's writer, with\n"
                 "deterministic pseudo-random legal words.  GGUF_FIXTURE_DIR holds <type>.qbytes files; without\n"
                 "it the gguf_* objects are left out.\n"
                 "\n"
                 "  --max-file-bytes N  split the artifact into parts of at most N bytes\n"
                 "  -h, --help          this text\n");
    return 0;
}

int main(int argc, char **argv)
{
    const char *out = NULL, *gguf_dir = NULL;
    uint64_t max_file_bytes = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) return help();
        if (strcmp(a, "--max-file-bytes") == 0 && i + 1 < argc) max_file_bytes = strtoull(argv[++i], NULL, 10);
        else if (a[0] == '-') {
            /* an option we do not know is a usage error, never a file name (issue 25 item 4) */
            fprintf(stderr, "ninfer-demo-sample: error: unknown option '%s'\n", a);
            return usage();
        } else if (!out) out = a;
        else if (!gguf_dir) gguf_dir = a;
        else return usage();
    }
    if (!out) return usage();
    static const struct {
        const char *id, *format;
        uint32_t rank;
        uint64_t shape[3];
        uint64_t divisors;
    } tensors[] = {
        {"model.embed_tokens.weight", "bf16", 2, {96, 72}, 1},
        {"model.norm.weight", "fp32", 1, {72}, 1},
        {"model.token_types", "int32", 3, {2, 3, 5}, 1},
        {"model.scalar", "fp32", 0, {0}, 1},
        {"layers.0.q_proj.weight", "q4_g64_fp16", 2, {72, 72}, 1},
        {"layers.0.k_proj.weight", "q5_g64_fp16", 2, {24, 72}, 1},
        {"layers.0.v_proj.weight", "q6_g64_fp16", 2, {24, 72}, 1},
        {"layers.0.o_proj.weight", "q8_g32_fp16", 2, {72, 72}, 1},
        {"layers.0.gate_proj.weight", "t2_g128_fp16", 2, {40, 130}, 1},
        {"layers.0.up_proj.weight", "q2_g64_fp16", 2, {40, 72}, 1},
        {"layers.0.down_proj.weight", "nvfp4", 2, {128, 128}, 1},
        {"layers.0.experts.weight", "nvfp4", 2, {256, 64}, 2},
        {"layers.0.fp8_bf16.weight", "fp8_e4m3fn_row_bf16", 2, {17, 45}, 1},
        {"ngram.table", "fp8_e4m3fn_row_fp16", 2, {12, 160}, 1},
    };
    enum { NT = sizeof tensors / sizeof tensors[0], NMAX = NT + 32 };
    planned objs[NMAX];
    memset(objs, 0, sizeof objs);
    size_t count = 0;
    nf_error err;
    rng r = {20261129};

    nf_writer_options wo = {max_file_bytes, NULL, true, true};
    nf_writer *w = NULL;
    if (nf_writer_create(out, &wo, &w, &err) != NF_OK) return fail(&err);

    static const char tokenizer[] = "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"<s>\": 0}}}";
    objs[count] = (planned){.id = "tokenizer.json", .raw = (uint8_t *)tokenizer, .raw_bytes = sizeof tokenizer - 1};
    if (nf_writer_add_resource(w, objs[count].id, objs[count].raw_bytes, &objs[count].index, &err) != NF_OK) goto fail;
    count++;
    for (size_t i = 0; i < NT; i++) {
        planned *p = &objs[count];
        const nf_format *f = nf_format_lookup(tensors[i].format);
        p->id = tensors[i].id;
        if (!f || nf_geometry_init(&p->g, nf_layout_default_for(f), f, tensors[i].rank, tensors[i].shape,
                                   tensors[i].divisors, &err) != NF_OK)
            goto fail;
        if (nf_words_alloc(&p->w, &p->g, p->g.rows, &err) != NF_OK) goto fail;
        fill_words(p, &r);
        if (nf_writer_add_tensor(w, p->id, &p->g, &p->index, &err) != NF_OK) goto fail;
        count++;
    }
    if (gguf_dir) {
        for (size_t i = 0; i < nf_format_count() && count < NMAX; i++) {
            const nf_format *f = nf_format_at(i);
            if (f->category != NF_CAT_GGUF) continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s.qbytes", gguf_dir, f->short_name);
            planned *p = &objs[count];
            p->raw = read_file(path, &p->raw_bytes);
            if (!p->raw) {
                fprintf(stderr, "ninfer-demo-sample: error: cannot read %s\n", path);
                nf_writer_free(w);
                return 3;
            }
            char *id = malloc(64);
            if (!id) goto fail;
            snprintf(id, 64, "gguf.%s", f->short_name);
            p->id = id;
            uint64_t shape[2] = {16, 512};
            if (nf_geometry_init(&p->g, nf_layout_default_for(f), f, 2, shape, 1, &err) != NF_OK) goto fail;
            if (nf_writer_add_tensor(w, p->id, &p->g, &p->index, &err) != NF_OK) goto fail;
            count++;
        }
    }

    /* Directory members: a text component with its tokenizer, every tensor bound under its own
     * name, one parameter stacked from two tensors' rows, and a few uses. */
    json_t *bindings = json_object();
    for (size_t i = 1; i < count; i++)
        json_object_set_new(bindings, objs[i].id, json_pack("{s:s}", "object", objs[i].id));
    json_object_set_new(bindings, "layers.0.kv_proj.weight",
                        json_pack("{s:[{s:s,s:[i,i]},{s:s,s:[i,i]}]}", "parts", "object", "layers.0.k_proj.weight",
                                  "range", 0, 24 * 72, "object", "layers.0.v_proj.weight", "range", 0, 24 * 72));
    json_t *uses = json_pack("[{s:s,s:s,s:s},{s:s,s:s,s:s},{s:s,s:s}]", "parameter", "layers.0.q_proj.weight", "input",
                             "attn_in", "activation_policy", "AllowA8", "parameter", "layers.0.down_proj.weight",
                             "input", "mlp_hidden", "activation_policy", "AllowA4", "parameter",
                             "layers.0.kv_proj.weight", "input", "attn_in");
    json_t *components = json_pack("{s:{s:{s:[s],s:i,s:i,s:f},s:{s:s}}}", "text", "config", "architectures",
                                   "DemoForCausalLM", "hidden_size", 72, "num_hidden_layers", 1, "rms_norm_eps", 1e-06,
                                   "resources", "tokenizer.json", "tokenizer.json");
    json_t *metadata = json_pack("{s:s}", "name", "ninfer-demo-sample");
    json_t *provenance = json_pack("{s:s}", "converter", "ninfer-demo-sample");
    if (nf_writer_set_member(w, "components", components, &err) != NF_OK ||
        nf_writer_set_member(w, "bindings", bindings, &err) != NF_OK ||
        nf_writer_set_member(w, "uses", uses, &err) != NF_OK ||
        nf_writer_set_member(w, "metadata", metadata, &err) != NF_OK ||
        nf_writer_set_member(w, "provenance", provenance, &err) != NF_OK || nf_writer_begin(w, &err) != NF_OK)
        goto fail;

    /* Objects are streamed in reverse order, tensors row by row: the writer accepts pieces in
     * any order as long as every byte is written once. */
    for (size_t j = count; j-- > 0;) {
        planned *p = &objs[j];
        nf_writer_sink sink = {w, p->index};
        if (p->raw) {
            if (nf_writer_write(w, p->index, 0, p->raw, (size_t)p->raw_bytes, &err) != NF_OK) goto fail;
            continue;
        }
        if (nf_layout_encode_rows(&p->g, &p->w, 0, false, nf_writer_sink_write, &sink, &err) != NF_OK ||
            nf_layout_encode_tail(&p->g, &p->w, false, nf_writer_sink_write, &sink, &err) != NF_OK)
            goto fail;
    }
    if (nf_writer_finish(w, &err) != NF_OK) goto fail;
    nf_writer_free(w);
    release(objs, count);
    printf("wrote %s (%zu objects)\n", out, count);
    return 0;
fail:
    nf_writer_free(w);
    release(objs, count);
    return fail(&err);
}
