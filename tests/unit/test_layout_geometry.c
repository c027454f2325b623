/* Layout registry, format/layout compatibility, shape rules, every worked size of docs/layouts.md
 * 3-8 and docs/vectors.md item 16, row views, and checked-overflow refusals. */
#include "test_layout_util.h"

/* ---------------------------------------------------------------- registry */
Test(layout_registry, seven_layouts_in_id_order)
{
    static const char *names[] = {"contiguous_le_v1", "row_split_k128_v1",  "block_scale_k16_m128x4_v1",
                                  "row_scale_v1",     "row_interleaved_v1", "gguf_blocks_v1",
                                  "raw_bytes_v1"};
    cr_assert_eq(nf_layout_count(), 7);
    for (size_t i = 0; i < 7; i++) {
        const nf_layout *l = nf_layout_at(i);
        cr_assert_not_null(l);
        cr_assert_str_eq(l->name, names[i]);
        cr_assert_eq((size_t)l->id, i);
        cr_assert_eq(nf_layout_by_id(l->id), l);
        cr_assert_eq(nf_layout_lookup(names[i]), l);
        cr_assert_eq(l->alignment, i == 6 ? 1u : 256u);
        cr_assert_eq(l->resource_encoding, i == 6);
    }
    cr_assert_null(nf_layout_at(7));
    cr_assert_null(nf_layout_lookup("row_split_panel4_v1")); /* device-only, never declared */
    cr_assert_null(nf_layout_lookup("Contiguous_le_v1"));
    cr_assert_null(nf_layout_lookup(""));
    cr_assert_null(nf_layout_lookup(NULL));
}

static const char *expected_layout(const nf_format *f)
{
    switch (f->category) {
    case NF_CAT_DIRECT: return "contiguous_le_v1";
    case NF_CAT_GROUPED: return "row_split_k128_v1";
    case NF_CAT_NVFP4: return "block_scale_k16_m128x4_v1";
    case NF_CAT_FP8_ROW: return f->id == NF_FMT_FP8_E4M3FN_ROW_BF16 ? "row_scale_v1" : "row_interleaved_v1";
    case NF_CAT_GGUF: return "gguf_blocks_v1";
    }
    return NULL;
}

Test(layout_registry, every_format_has_exactly_one_layout)
{
    cr_assert_eq(nf_format_count(), 30);
    for (size_t i = 0; i < nf_format_count(); i++) {
        const nf_format *f = nf_format_at(i);
        const char *want = expected_layout(f);
        int accepted = 0;
        for (size_t j = 0; j < nf_layout_count(); j++) {
            const nf_layout *l = nf_layout_at(j);
            bool a = nf_layout_accepts(l, f);
            cr_assert_eq(a, strcmp(l->name, want) == 0, "%s / %s", l->name, f->name);
            accepted += a;
        }
        cr_assert_eq(accepted, 1, "%s", f->name);
        cr_assert_str_eq(nf_layout_default_for(f)->name, want, "%s", f->name);
        if (f->default_layout) cr_assert_str_eq(f->default_layout, want, "%s registry default", f->name);
    }
    cr_assert_not(nf_layout_accepts(NULL, F("bf16")));
    cr_assert_not(nf_layout_accepts(L("contiguous_le_v1"), NULL));
    cr_assert_null(nf_layout_default_for(NULL));
}

/* docs/vectors.md item 9: the two FP8 formats each have only their own layout. */
Test(layout_registry, does_not_accept_messages)
{
    struct {
        const char *layout, *format;
    } pairs[] = {
        {"row_scale_v1", "fp8_e4m3fn_row_fp16"},
        {"row_interleaved_v1", "fp8_e4m3fn_row_bf16"},
        {"row_split_k128_v1", "bf16"},
        {"contiguous_le_v1", "q4_g64_fp16"},
        {"block_scale_k16_m128x4_v1", "fp8_e4m3fn_row_bf16"},
        {"gguf_blocks_v1", "q2_g64_fp16"},
        {"raw_bytes_v1", "bf16"},
        {"row_split_k128_v1", "gguf_q2_0"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        nf_geometry g;
        nf_error err = {0};
        uint64_t shape[2] = {128, 256};
        nf_status st = nf_geometry_init(&g, L(pairs[i].layout), F(pairs[i].format), 2, shape, 1, &err);
        cr_assert_eq(st, NF_ERR_INVALID);
        char want[200];
        snprintf(want, sizeof want, "layout '%s' does not accept format '%s'", pairs[i].layout, pairs[i].format);
        cr_assert_str_eq(err.message, want);
    }
}

/* ---------------------------------------------------------------- worked sizes */
typedef struct rs_case {
    const char *fmt;
    uint64_t n, k, k_pad, gpr, base, high_off, high, scale_off, scale, total;
} rs_case;

Test(layout_geometry, row_split_worked_sizes)
{
    static const rs_case cases[] = {
        {"q4_g64_fp16", 2, 130, 256, 4, 256, 256, 0, 256, 16, 272},
        {"q5_g64_fp16", 2, 130, 256, 4, 256, 256, 64, 512, 16, 528},
        {"q6_g64_fp16", 2, 130, 256, 4, 256, 256, 128, 512, 16, 528},
        {"q8_g32_fp16", 2, 130, 256, 8, 512, 512, 0, 512, 32, 544},
        {"t2_g128_fp16", 2, 130, 256, 2, 128, 256, 0, 256, 8, 264},
        {"q2_g64_fp16", 2, 65, 128, 2, 64, 256, 0, 256, 8, 264},
        {"q2_g64_fp16", 2, 130, 256, 4, 128, 256, 0, 256, 16, 272},
        {"q4_g64_fp16", 7168, 5120, 5120, 80, 18350080, 18350080, 0, 18350080, 1146880, 19496960},
        {"q5_g64_fp16", 7168, 5120, 5120, 80, 18350080, 18350080, 4587520, 22937600, 1146880, 24084480},
        /* upstream row_split fixture objects (tests/data/upstream) */
        {"q6_g64_fp16", 3, 65, 128, 2, 192, 256, 96, 512, 12, 524},
        {"q4_g64_fp16", 1, 65, 128, 2, 64, 256, 0, 256, 4, 260},
        {"q8_g32_fp16", 1, 33, 128, 4, 128, 256, 0, 256, 8, 264},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const rs_case *c = &cases[i];
        nf_geometry g = geo2(c->fmt, c->n, c->k, 1);
        cr_assert_eq(g.k_pad, c->k_pad, "%s", c->fmt);
        cr_assert_eq(g.groups_per_row, c->gpr, "%s", c->fmt);
        cr_assert_eq(g.logical_groups, (c->k + F(c->fmt)->group_size - 1) / F(c->fmt)->group_size);
        cr_assert_eq(g.rows, c->n);
        cr_assert_eq(g.cols, c->k);
        cr_assert_eq(g.elements, c->n * c->k);
        cr_assert_eq(g.bytes, c->total, "%s [%" PRIu64 ",%" PRIu64 "] bytes %" PRIu64, c->fmt, c->n, c->k, g.bytes);
        cr_assert_eq(g.nplanes, c->high ? 3u : 2u);
        cr_assert_str_eq(g.planes[0].name, "codes");
        cr_assert_eq(g.planes[0].offset, 0);
        cr_assert_eq(g.planes[0].bytes, c->base);
        cr_assert_eq(g.planes[0].row_bytes, c->base / c->n);
        if (c->high) {
            cr_assert_str_eq(g.planes[1].name, "high");
            cr_assert_eq(g.planes[1].offset, c->high_off);
            cr_assert_eq(g.planes[1].bytes, c->high);
            cr_assert_eq(g.planes[1].row_bytes, c->high / c->n);
        }
        const nf_plane *s = &g.planes[g.nplanes - 1];
        cr_assert_str_eq(s->name, "scales");
        cr_assert_eq(s->offset, c->scale_off, "%s scale offset %" PRIu64, c->fmt, s->offset);
        cr_assert_eq(s->bytes, c->scale);
        cr_assert_eq(s->row_bytes, c->gpr * 2);
        cr_assert_eq(g.divisors, 1);
    }
}

Test(layout_geometry, nvfp4_worked_sizes)
{
    nf_geometry g = geo2("nvfp4", 128, 64, 1);
    cr_assert_eq(g.nplanes, 3);
    cr_assert_str_eq(g.planes[0].name, "codes");
    cr_assert_str_eq(g.planes[1].name, "scales");
    cr_assert_str_eq(g.planes[2].name, "divisors");
    cr_assert_eq(g.planes[0].bytes, 4096);
    cr_assert_eq(g.planes[0].row_bytes, 32);
    cr_assert_eq(g.planes[1].offset, 4096);
    cr_assert_eq(g.planes[1].bytes, 512);
    cr_assert_eq(g.planes[1].row_bytes, 0);
    cr_assert_eq(g.planes[2].offset, 4608);
    cr_assert_eq(g.planes[2].bytes, 4);
    cr_assert_eq(g.planes[2].row_bytes, 0);
    cr_assert_eq(g.bytes, 4612);

    g = geo2("nvfp4", 256, 64, 2);
    cr_assert_eq(g.divisors, 2);
    cr_assert_eq(g.planes[0].bytes, 8192);
    cr_assert_eq(g.planes[1].offset, 8192);
    cr_assert_eq(g.planes[1].bytes, 1024);
    cr_assert_eq(g.planes[2].offset, 9216);
    cr_assert_eq(g.bytes, 9224);

    g = geo2("nvfp4", 14336, 5120, 1);
    cr_assert_eq(g.bytes, 41287684);
    g = geo2("nvfp4", 384, 64, 3); /* 128 rows per divisor */
    cr_assert_eq(g.bytes, 384 * 32 + 384 * 4 + 12);
}

Test(layout_geometry, fp8_row_worked_sizes)
{
    nf_geometry g = geo2("fp8_e4m3fn_row_bf16", 2, 4, 1);
    cr_assert_eq(g.nplanes, 2);
    cr_assert_str_eq(g.planes[0].name, "codes");
    cr_assert_eq(g.planes[0].bytes, 8);
    cr_assert_eq(g.planes[0].row_bytes, 4);
    cr_assert_str_eq(g.planes[1].name, "scales");
    cr_assert_eq(g.planes[1].offset, 256);
    cr_assert_eq(g.planes[1].bytes, 4);
    cr_assert_eq(g.planes[1].row_bytes, 2);
    cr_assert_eq(g.bytes, 260);
    g = geo2("fp8_e4m3fn_row_bf16", 256, 64, 1);
    cr_assert_eq(g.planes[1].offset, 16384);
    cr_assert_eq(g.bytes, 16896);
    g = geo2("fp8_e4m3fn_row_bf16", 14336, 5120, 1);
    cr_assert_eq(g.bytes, 73428992);
    g = geo2("fp8_e4m3fn_row_bf16", 3, 300, 1);
    cr_assert_eq(g.bytes, 1030);

    g = geo2("fp8_e4m3fn_row_fp16", 424, 160, 1);
    cr_assert_eq(g.row_bytes, 162);
    cr_assert_eq(g.bytes, 68688);
    cr_assert_eq(g.nplanes, 1);
    cr_assert_str_eq(g.planes[0].name, "rows");
    cr_assert_eq(g.planes[0].row_bytes, 162);
    cr_assert_eq(geo2("fp8_e4m3fn_row_fp16", 2, 160, 1).bytes, 324);
    g = geo2("fp8_e4m3fn_row_fp16", 3, 160, 1);
    cr_assert_eq(g.bytes, 486);
    nf_span sp[NF_MAX_PLANES];
    uint32_t n = 0;
    cr_assert_eq(nf_layout_row_spans(&g, 2, 3, sp, &n, NULL), NF_OK);
    cr_assert_eq(n, 1);
    cr_assert_eq(sp[0].offset + 160, 484); /* row-2 scale */
    cr_assert_eq(geo2("fp8_e4m3fn_row_fp16", 2, 4, 1).bytes, 12);
}

Test(layout_geometry, gguf_sizes)
{
    static const struct {
        const char *fmt;
        uint64_t row_bytes, bytes;
    } cases[] = {
        {"gguf_q8_0", 544, 8704},   {"gguf_q4_0", 288, 4608},    {"gguf_q5_0", 352, 5632},
        {"gguf_q2_k", 168, 2688},   {"gguf_q3_k", 220, 3520},    {"gguf_q4_k", 288, 4608},
        {"gguf_q5_k", 352, 5632},   {"gguf_q6_k", 420, 6720},    {"gguf_iq2_xxs", 132, 2112},
        {"gguf_iq2_xs", 148, 2368}, {"gguf_iq3_xxs", 196, 3136}, {"gguf_iq1_s", 100, 1600},
        {"gguf_iq4_nl", 288, 4608}, {"gguf_iq3_s", 220, 3520},   {"gguf_iq2_s", 164, 2624},
        {"gguf_iq4_xs", 272, 4352}, {"gguf_iq1_m", 112, 1792},   {"gguf_q2_0", 144, 2304},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        nf_geometry g = geo2(cases[i].fmt, 16, 512, 1);
        cr_assert_eq(g.row_bytes, cases[i].row_bytes, "%s", cases[i].fmt);
        cr_assert_eq(g.bytes, cases[i].bytes, "%s", cases[i].fmt);
        cr_assert_eq(g.nplanes, 1);
        cr_assert_str_eq(g.planes[0].name, "blocks");
        cr_assert_eq(g.planes[0].row_bytes, cases[i].row_bytes);
    }
    /* K must be whole blocks */
    nf_geometry g;
    nf_error err = {0};
    uint64_t shape[2] = {2, 96};
    cr_assert_eq(nf_geometry_init(&g, L("gguf_blocks_v1"), F("gguf_q4_k"), 2, shape, 1, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "256") && strstr(err.message, "K=96"), "%s", err.message);
    shape[1] = 64;
    cr_assert_eq(nf_geometry_init(&g, L("gguf_blocks_v1"), F("gguf_q2_0"), 2, shape, 1, &err), NF_OK);
    cr_assert_eq(g.bytes, 36);
}

Test(layout_geometry, contiguous_shapes)
{
    nf_geometry g;
    nf_error err = {0};
    cr_assert_eq(nf_geometry_init(&g, L("contiguous_le_v1"), F("bf16"), 0, NULL, 1, &err), NF_OK);
    cr_assert_eq(g.bytes, 2);
    cr_assert_eq(g.elements, 1);
    cr_assert_eq(g.rows, 1);
    cr_assert_eq(g.cols, 1);
    cr_assert_eq(nf_geometry_init(&g, L("contiguous_le_v1"), F("fp32"), 0, NULL, 1, &err), NF_OK);
    cr_assert_eq(g.bytes, 4);
    uint64_t v[1] = {5};
    cr_assert_eq(nf_geometry_init(&g, L("contiguous_le_v1"), F("fp32"), 1, v, 1, &err), NF_OK);
    cr_assert_eq(g.bytes, 20);
    cr_assert_eq(g.rows, 1);
    cr_assert_eq(g.cols, 5);
    cr_assert_eq(g.row_bytes, 20);
    uint64_t s3[3] = {2, 3, 4};
    cr_assert_eq(nf_geometry_init(&g, L("contiguous_le_v1"), F("int32"), 3, s3, 1, &err), NF_OK);
    cr_assert_eq(g.bytes, 96);
    cr_assert_eq(g.rows, 6);
    cr_assert_eq(g.cols, 4);
    cr_assert_eq(g.row_bytes, 16);
    cr_assert_eq(g.nplanes, 1);
    cr_assert_str_eq(g.planes[0].name, "words");
    cr_assert_eq(g.planes[0].bytes, 96);
    cr_assert_eq(g.planes[0].row_bytes, 16);
    cr_assert_eq(g.rank, 3);
    cr_assert_eq(g.shape[2], 4);

    uint64_t ones[17];
    for (int i = 0; i < 17; i++) ones[i] = 1;
    cr_assert_eq(nf_geometry_init(&g, L("contiguous_le_v1"), F("bf16"), 16, ones, 1, &err), NF_OK);
    cr_assert_eq(g.bytes, 2);
    cr_assert_eq(nf_geometry_init(&g, L("contiguous_le_v1"), F("bf16"), 17, ones, 1, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "rank 17"), "%s", err.message);
    uint64_t z[2] = {3, 0};
    cr_assert_eq(nf_geometry_init(&g, L("contiguous_le_v1"), F("bf16"), 2, z, 1, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "dimension 1 is 0"), "%s", err.message);
    cr_assert_eq(nf_geometry_init(&g, L("contiguous_le_v1"), F("bf16"), 1, v, 2, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "divisors"), "%s", err.message);
    /* usage errors */
    cr_assert_eq(nf_geometry_init(&g, NULL, F("bf16"), 1, v, 1, &err), NF_ERR_USAGE);
    cr_assert_eq(nf_geometry_init(&g, L("contiguous_le_v1"), F("bf16"), 1, NULL, 1, &err), NF_ERR_USAGE);
}

Test(layout_geometry, matrix_shape_rules)
{
    struct {
        const char *fmt;
        uint32_t rank;
        uint64_t shape[3];
        uint64_t divisors;
        const char *needle;
    } bad[] = {
        {"q4_g64_fp16", 1, {64}, 1, "rank-2"},
        {"q4_g64_fp16", 3, {1, 2, 64}, 1, "rank-2"},
        {"q4_g64_fp16", 2, {0, 64}, 1, "N,K > 0"},
        {"q4_g64_fp16", 2, {2, 0}, 1, "N,K > 0"},
        {"q4_g64_fp16", 2, {2, 64}, 2, "divisors=2"},
        {"q4_g64_fp16", 2, {2, 64}, 0, "divisors=0"},
        {"fp8_e4m3fn_row_bf16", 2, {0, 4}, 1, "rank-2"},
        {"fp8_e4m3fn_row_fp16", 1, {4}, 1, "rank-2"},
        {"gguf_q8_0", 2, {2, 33}, 1, "K % 32"},
        {"nvfp4", 2, {100, 64}, 1, "N % 128"},
        {"nvfp4", 2, {128, 32}, 1, "K % 64"},
        {"nvfp4", 2, {128, 64}, 0, "divisors=0"},
        {"nvfp4", 2, {128, 64}, 2, "divisors=2"},
        {"nvfp4", 2, {256, 64}, 3, "divisors=3"},
        {"nvfp4", 2, {384, 64}, 2, "divisors=2"},
        {"nvfp4", 2, {256, 64}, 512, "divisors=512"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        nf_geometry g;
        nf_error err = {0};
        const nf_format *f = F(bad[i].fmt);
        nf_status st = nf_geometry_init(&g, nf_layout_default_for(f), f, bad[i].rank, bad[i].shape, bad[i].divisors,
                                        &err);
        cr_assert_eq(st, NF_ERR_INVALID, "case %zu", i);
        cr_assert(strstr(err.message, bad[i].needle), "case %zu: %s", i, err.message);
    }
}

/* Shapes near 2^63 / 2^64 fail cleanly with an overflow message, never wrap. */
Test(layout_geometry, overflow_refused)
{
    const uint64_t M = UINT64_MAX, H = (uint64_t)1 << 63;
    struct {
        const char *fmt;
        uint32_t rank;
        uint64_t shape[3];
    } cases[] = {
        {"bf16", 2, {H, 2}},
        {"fp32", 1, {H}}, /* elements fit, bytes do not */
        {"bf16", 1, {M}},
        {"int32", 3, {(uint64_t)1 << 32, (uint64_t)1 << 32, 2}},
        {"q4_g64_fp16", 2, {1, M}},       /* align_up(K,128) */
        {"q8_g32_fp16", 2, {1, M - 127}}, /* elements fit; align_up(base, 256) does not */
        {"q4_g64_fp16", 2, {H, 128}},     /* N * base_row */
        {"q8_g32_fp16", 2, {(uint64_t)1 << 40, (uint64_t)1 << 30}},
        {"q5_g64_fp16", 2, {(uint64_t)1 << 55, 1024}},
        {"t2_g128_fp16", 2, {M, M}},
        {"nvfp4", 2, {H, 64}},
        {"nvfp4", 2, {128, (uint64_t)1 << 62}},
        {"fp8_e4m3fn_row_bf16", 2, {H, 2}},
        {"fp8_e4m3fn_row_bf16", 2, {(uint64_t)1 << 62, 4}},
        {"fp8_e4m3fn_row_bf16", 2, {1, M}}, /* align_up(N*K, 256) */
        {"fp8_e4m3fn_row_fp16", 2, {1, M}}, /* K + 2 */
        {"fp8_e4m3fn_row_fp16", 2, {2, M - 2}},
        {"gguf_q8_0", 2, {H, 64}},
        {"gguf_q8_0", 2, {1, M - 31}}, /* elements fit, 34 bytes per 32 values do not */
        {"gguf_q4_k", 2, {(uint64_t)1 << 56, 256 * 1024}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        nf_geometry g;
        nf_error err = {0};
        const nf_format *f = F(cases[i].fmt);
        nf_status st = nf_geometry_init(&g, nf_layout_default_for(f), f, cases[i].rank, cases[i].shape, 1, &err);
        cr_assert_eq(st, NF_ERR_INVALID, "case %zu (%s) gave %d, bytes %" PRIu64, i, cases[i].fmt, st, g.bytes);
        cr_assert(strstr(err.message, "overflow"), "case %zu: %s", i, err.message);
    }
    /* Large but representable: no false positives. */
    nf_geometry g = geo2("fp8_e4m3fn_row_fp16", 1, M - 2, 1);
    cr_assert_eq(g.bytes, M);
    g = geo2("q2_g64_fp16", (uint64_t)1 << 40, (uint64_t)1 << 20, 1);
    cr_assert_eq(g.bytes, ((uint64_t)1 << 58) + ((uint64_t)1 << 55));
}

Test(layout_geometry, resource)
{
    nf_geometry g;
    nf_error err = {0};
    cr_assert_eq(nf_geometry_resource(&g, 5, &err), NF_OK);
    cr_assert_str_eq(g.layout->name, "raw_bytes_v1");
    cr_assert_eq(g.layout->alignment, 1);
    cr_assert_null(g.format);
    cr_assert_eq(g.bytes, 5);
    cr_assert_eq(g.nplanes, 1);
    cr_assert_eq(g.planes[0].bytes, 5);
    cr_assert_eq(nf_geometry_resource(&g, 0, &err), NF_ERR_INVALID);

    /* A resource round-trips through the row machinery as one row of bytes. */
    nf_geometry r;
    cr_assert_eq(nf_geometry_resource(&r, 5, &err), NF_OK);
    nf_words w;
    cr_assert_eq(nf_words_alloc(&w, &r, 1, &err), NF_OK);
    memcpy(w.blocks, "hello", 5);
    uint8_t out[5];
    cr_assert_eq(nf_layout_encode(&r, &w, out, &err), NF_OK, "%s", err.message);
    cr_assert_eq(memcmp(out, "hello", 5), 0);
    nf_words d;
    cr_assert_eq(nf_words_alloc(&d, &r, 1, &err), NF_OK);
    nf_memory_source mem;
    nf_byte_reader rd;
    nf_byte_reader_memory(&rd, &mem, out, 5);
    cr_assert_eq(nf_layout_decode_rows(&r, &rd, 0, 1, &d, &err), NF_OK, "%s", err.message);
    cr_assert_eq(memcmp(d.blocks, "hello", 5), 0);
    uint64_t problems = 99;
    cr_assert_eq(nf_layout_check(&r, &rd, NULL, NULL, 0, &problems, &err), NF_OK);
    cr_assert_eq(problems, 0);
    float f;
    cr_assert_eq(nf_words_to_f32(&r, &d, 0, &f, &err), NF_ERR_USAGE);
    nf_geometry og;
    uint64_t rows[1] = {0};
    cr_assert_eq(nf_layout_gather_rows(&r, &rd, rows, 1, &og, NULL, &err), NF_ERR_USAGE);
    nf_words_free(&w);
    nf_words_free(&d);
}

/* ---------------------------------------------------------------- row views */
static void spans_of(const nf_geometry *g, uint64_t r0, uint64_t r1, nf_span *sp, uint32_t *n)
{
    nf_error err = {0};
    cr_assert_eq(nf_layout_row_spans(g, r0, r1, sp, n, &err), NF_OK, "%s", err.message);
}

Test(layout_spans, q5_and_q2_row_one)
{
    nf_span sp[NF_MAX_PLANES];
    uint32_t n;
    nf_geometry g = geo2("q5_g64_fp16", 2, 130, 1);
    spans_of(&g, 1, 2, sp, &n);
    cr_assert_eq(n, 3);
    cr_assert_eq(sp[0].plane, 0);
    cr_assert_eq(sp[0].offset, 128);
    cr_assert_eq(sp[0].bytes, 128);
    cr_assert_eq(sp[1].plane, 1);
    cr_assert_eq(sp[1].offset, 288);
    cr_assert_eq(sp[1].bytes, 32);
    cr_assert_eq(sp[2].plane, 2);
    cr_assert_eq(sp[2].offset, 520);
    cr_assert_eq(sp[2].bytes, 8);

    g = geo2("q2_g64_fp16", 2, 65, 1);
    spans_of(&g, 1, 2, sp, &n);
    cr_assert_eq(n, 2);
    cr_assert_eq(sp[0].offset, 32);
    cr_assert_eq(sp[0].bytes, 32);
    cr_assert_eq(sp[1].plane, 1);
    cr_assert_eq(sp[1].offset, 260);
    cr_assert_eq(sp[1].bytes, 4);

    spans_of(&g, 0, 2, sp, &n);
    cr_assert_eq(sp[0].bytes, 64);
    cr_assert_eq(sp[1].offset, 256);
    cr_assert_eq(sp[1].bytes, 8);
    spans_of(&g, 1, 1, sp, &n); /* empty range */
    cr_assert_eq(sp[0].bytes, 0);
    nf_error err = {0};
    cr_assert_eq(nf_layout_row_spans(&g, 1, 3, sp, &n, &err), NF_ERR_INVALID);
    cr_assert_eq(nf_layout_row_spans(&g, 2, 1, sp, &n, &err), NF_ERR_INVALID);
}

/* docs/vectors.md item 16: the doc's Q/K/gate/V code ranges of an fp8 row bf16 [14336,5120] plane. */
Test(layout_spans, doc_fp8_ranges)
{
    nf_geometry g = geo2("fp8_e4m3fn_row_bf16", 14336, 5120, 1);
    static const uint64_t rows[5] = {0, 6144, 7168, 13312, 14336};
    static const uint64_t ranges[4][2] = {{0, 31457280},
                                          {31457280, 36700160},
                                          {36700160, 68157440},
                                          {68157440, 73400320}};
    for (int i = 0; i < 4; i++) {
        nf_span sp[NF_MAX_PLANES];
        uint32_t n;
        spans_of(&g, rows[i], rows[i + 1], sp, &n);
        cr_assert_eq(n, 2);
        cr_assert_eq(sp[0].offset, ranges[i][0]);
        cr_assert_eq(sp[0].offset + sp[0].bytes, ranges[i][1]);
        cr_assert_eq(sp[1].offset, 73400320 + 2 * rows[i]); /* scale plane at align_up(N*K,256) */
        cr_assert_eq(sp[1].bytes, 2 * (rows[i + 1] - rows[i]));
    }
}

Test(layout_spans, nvfp4_tiles_only)
{
    nf_geometry g = geo2("nvfp4", 512, 128, 4);
    nf_span sp[NF_MAX_PLANES];
    uint32_t n;
    spans_of(&g, 128, 384, sp, &n);
    cr_assert_eq(n, 2); /* the divisor plane is not part of a row view */
    cr_assert_eq(sp[0].offset, 128 * 64);
    cr_assert_eq(sp[0].bytes, 256 * 64);
    cr_assert_eq(sp[1].plane, 1);
    cr_assert_eq(sp[1].offset, g.planes[1].offset + 128 * 8);
    cr_assert_eq(sp[1].bytes, 256 * 8);
    nf_error err = {0};
    cr_assert_eq(nf_layout_row_spans(&g, 1, 128, sp, &n, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "128"), "%s", err.message);
    cr_assert_eq(nf_layout_row_spans(&g, 0, 130, sp, &n, &err), NF_ERR_INVALID);
}

Test(layout_spans, other_layouts)
{
    nf_span sp[NF_MAX_PLANES];
    uint32_t n;
    uint64_t s3[3] = {2, 3, 4};
    nf_geometry g;
    cr_assert_eq(nf_geometry_init(&g, L("contiguous_le_v1"), F("bf16"), 3, s3, 1, NULL), NF_OK);
    spans_of(&g, 2, 5, sp, &n);
    cr_assert_eq(n, 1);
    cr_assert_eq(sp[0].offset, 16);
    cr_assert_eq(sp[0].bytes, 24);
    g = geo2("gguf_q8_0", 4, 64, 1);
    spans_of(&g, 1, 3, sp, &n);
    cr_assert_eq(n, 1);
    cr_assert_eq(sp[0].offset, 68);
    cr_assert_eq(sp[0].bytes, 136);
    g = geo2("fp8_e4m3fn_row_fp16", 5, 7, 1);
    spans_of(&g, 4, 5, sp, &n);
    cr_assert_eq(sp[0].offset, 36);
    cr_assert_eq(sp[0].bytes, 9);
}
