/* The directory JSON emitter against Python's json.dumps(ensure_ascii=False, allow_nan=False,
 * separators=(",", ":")): reference outputs in tests/data/container were produced by Python
 * 3.11 (python_float_repr.txt: repr of ~1800 doubles incl. every 3rd power of two, both signs,
 * random bit patterns and the exponent-switch boundaries; python_dumps_*.json: strings with
 * every code point 0..255 and a whole document).  Also re-emits the directory of every upstream
 * artifact and compares it with the text upstream's writer stored. */
#include "test_container_util.h"

#include <math.h>

#include "container/container_internal.h"

#define DATA NINFER_TEST_DATA "/container/"

static char *emit(const json_t *v)
{
    nf_buf b = {0};
    nf_error err;
    cr_assert_eq(nf_json_emit(v, &b, NULL, NULL, &err), NF_OK, "%s", err.message);
    cr_assert(nf_buf_putc(&b, '\0'));
    return b.data;
}

Test(container_json, python_float_repr_table)
{
    FILE *f = fopen(DATA "python_float_repr.txt", "r");
    cr_assert_not_null(f);
    char line[256];
    size_t n = 0, bad = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        unsigned long long bits;
        char want[128];
        cr_assert_eq(sscanf(line, "%llx %127s", &bits, want), 2, "bad line %s", line);
        double v;
        uint64_t b64 = bits;
        memcpy(&v, &b64, sizeof v);
        char got[32];
        nf_json_format_real(v, got);
        if (strcmp(got, want) != 0) {
            if (bad++ < 10) cr_log_error("bits %016llx: got %s, Python %s", bits, got, want);
        }
        /* and through the emitter */
        json_t *j = json_real(v);
        char *text = emit(j);
        cr_assert_str_eq(text, want);
        free(text);
        json_decref(j);
        n++;
    }
    fclose(f);
    cr_assert_gt(n, 1000);
    cr_assert_eq(bad, 0, "%zu of %zu reals differ from Python's repr", bad, n);
}

Test(container_json, float_repr_spot_checks)
{
    static const struct {
        double v;
        const char *want;
    } cases[] = {
        {1e-06, "1e-06"},
        {1e16, "1e+16"},
        {1e15, "1000000000000000.0"},
        {1.0, "1.0"},
        {0.0001, "0.0001"},
        {1.5e-05, "1.5e-05"},
        {-0.0, "-0.0"},
        {0.1, "0.1"},
        {1e22, "1e+22"},
        {5e-324, "5e-324"},
        {1.7976931348623157e308, "1.7976931348623157e+308"},
        {123.456, "123.456"},
        {2.5, "2.5"},
        {1000000.0, "1000000.0"},
        {9007199254740992.0, "9007199254740992.0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char got[32];
        nf_json_format_real(cases[i].v, got);
        cr_expect_str_eq(got, cases[i].want);
    }
}

/* Random doubles: the emitted text must read back to the same bits and be no longer than
 * 17 significant digits (the repr property; the table above pins the exact digits). */
Test(container_json, float_repr_round_trips)
{
    tc_rng r = {12345};
    for (int i = 0; i < 200000; i++) {
        uint64_t bits = tc_next(&r);
        double v;
        memcpy(&v, &bits, sizeof v);
        if (!isfinite(v)) continue;
        char got[32];
        size_t n = nf_json_format_real(v, got);
        cr_assert_lt(n, 32);
        double back = strtod(got, NULL);
        uint64_t bb;
        memcpy(&bb, &back, sizeof bb);
        cr_assert_eq(bb, bits, "%016llx -> %s -> %016llx", (unsigned long long)bits, got, (unsigned long long)bb);
    }
}

Test(container_json, python_string_escapes)
{
    /* Every code point 0..255, then U+2014, U+1F600, U+00FC (python_dumps_string.json). */
    nf_buf in = {0};
    for (unsigned c = 0; c < 256; c++) {
        if (c < 0x80) {
            cr_assert(nf_buf_putc(&in, (char)c));
        } else {
            cr_assert(nf_buf_putc(&in, (char)(0xC0 | (c >> 6))));
            cr_assert(nf_buf_putc(&in, (char)(0x80 | (c & 0x3F))));
        }
    }
    cr_assert(nf_buf_append(&in, "\xe2\x80\x94\xf0\x9f\x98\x80\xc3\xbc", 9));
    json_t *s = json_stringn(in.data, in.len);
    cr_assert_not_null(s);
    nf_buf out = {0};
    nf_error err;
    cr_assert_eq(nf_json_emit(s, &out, NULL, NULL, &err), NF_OK);
    size_t wlen;
    uint8_t *want = tc_read(DATA "python_dumps_string.json", &wlen);
    cr_assert_eq(out.len, wlen, "length %zu, Python %zu", out.len, wlen);
    cr_assert_eq(memcmp(out.data, want, wlen), 0);
    free(want);
    nf_buf_free(&out);
    nf_buf_free(&in);
    json_decref(s);
}

Test(container_json, python_document)
{
    json_t *doc = json_object();
    json_object_set_new(doc, "a", json_pack("[i,f,{s:n,s:b,s:b}]", 1, 2.5, "b", "c", 1, "d", 0));
    json_object_set_new(doc, "\xc3\xa9\xc3\xbc", json_string("x\ny"));
    json_object_set_new(doc, "", json_object());
    json_object_set_new(doc, "n", json_integer(-7));
    json_object_set_new(doc, "big", json_integer(INT64_MAX));
    json_object_set_new(doc, "neg", json_integer(INT64_MIN));
    json_object_set_new(doc, "f", json_pack("[f,f,f,f]", 1e-06, 1e16, -0.0, 0.1));
    json_object_set_new(doc, "e", json_array());
    char *text = emit(doc);
    size_t wlen;
    uint8_t *want = tc_read(DATA "python_dumps_doc.json", &wlen);
    cr_assert_str_eq(text, (const char *)want);
    free(want);
    free(text);
    json_decref(doc);
}

/* Dict order is insertion order; replacing a member's value keeps its place (the writer
 * relies on that when it swaps the files table). */
Test(container_json, insertion_order_and_replacement)
{
    json_t *o = json_object();
    json_object_set_new(o, "zeta", json_integer(1));
    json_object_set_new(o, "alpha", json_integer(2));
    json_object_set_new(o, "mid", json_integer(3));
    json_object_set_new(o, "zeta", json_integer(4));
    char *text = emit(o);
    cr_assert_str_eq(text, "{\"zeta\":4,\"alpha\":2,\"mid\":3}");
    free(text);
    json_decref(o);
}

Test(container_json, refuses_invalid_utf8_and_deep_nesting)
{
    nf_buf b = {0};
    nf_error err;
    json_t *s = json_stringn_nocheck("a\xff", 2);
    cr_assert_eq(nf_json_emit(s, &b, NULL, NULL, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "UTF-8"));
    json_decref(s);
    json_t *deep = json_array();
    for (int i = 0; i < 2000; i++) deep = json_pack("[o]", deep);
    b.len = 0;
    cr_assert_eq(nf_json_emit(deep, &b, NULL, NULL, &err), NF_ERR_INVALID);
    cr_assert_not_null(strstr(err.message, "nests"));
    json_decref(deep);
    nf_buf_free(&b);
}

typedef struct hook_seen {
    size_t pos[4];
    size_t n;
    const json_t *mark;
} hook_seen;

static void hook(void *ctx, const json_t *node, size_t pos)
{
    hook_seen *seen = ctx;
    if (node == seen->mark && seen->n < 4) seen->pos[seen->n++] = pos;
}

Test(container_json, string_hook_reports_positions)
{
    json_t *mark = json_string("0123");
    json_t *o = json_pack("{s:O,s:[O,s]}", "x", mark, "y", mark, "zz");
    hook_seen seen = {{0}, 0, mark};
    nf_buf b = {0};
    nf_error err;
    cr_assert_eq(nf_json_emit(o, &b, hook, &seen, &err), NF_OK);
    cr_assert_eq(seen.n, 2);
    for (size_t i = 0; i < seen.n; i++) cr_assert_eq(memcmp(b.data + seen.pos[i], "0123", 4), 0);
    nf_buf_free(&b);
    json_decref(o);
    json_decref(mark);
}

/* Upstream's writer produced these directories with json.dumps; our emitter must give the same
 * bytes for the same tree (the stored text minus its space padding). */
Test(container_json, reemits_every_upstream_directory)
{
    static const char *const names[] = {"container_small", "direct",    "fp8_row", "gguf",          "model",
                                        "nvfp4",           "row_split", "split",   "wide_directory"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[512];
        tc_sprintf(path, sizeof path, TC_UPSTREAM "%s.ninfer", names[i]);
        nf_artifact *a;
        nf_error err;
        cr_assert_eq(nf_artifact_open(path, NF_READ_PREAD, &a, &err), NF_OK, "%s", err.message);
        const char *text = (const char *)nf_artifact_json_text(a);
        size_t len = (size_t)nf_artifact_json_bytes(a);
        while (len > 0 && text[len - 1] == ' ') len--;
        nf_buf b = {0};
        cr_assert_eq(nf_json_emit(nf_artifact_directory(a), &b, NULL, NULL, &err), NF_OK, "%s", err.message);
        cr_assert_eq(b.len, len, "%s: emitted %zu bytes, upstream %zu", names[i], b.len, len);
        cr_assert_eq(memcmp(b.data, text, len), 0, "%s: emitted text differs from upstream's", names[i]);
        nf_buf_free(&b);
        nf_artifact_close(a);
    }
}
