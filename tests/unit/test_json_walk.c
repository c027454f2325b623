/* The JSON walk (common/json_walk.h) against jansson itself: nf_jw_validate must accept exactly
 * what json_loadb accepts, and say where as it does; nf_dir_check (the writer's record-at-a-time
 * check of a directory, container_internal.h) must give nf_dir_parse's verdict and message on
 * every text.  Piece sizes from 1 byte (every container walked) to the default. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_walk.h"
#include "container/container_internal.h"
#include "test_container_util.h"

#define FLAGS (JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL)
static const size_t PIECES[] = {1, 2, 3, 5, 8, 16, 64, 1 << 20};

/* Both verdicts on one text, and when both refuse, the same code, position, line and column (a
 * walked container's structural error is reported by jansson itself, from the container's
 * start, so it must agree too). */
static void same_verdict(const char *t, size_t n, size_t piece)
{
    json_error_t a, b;
    json_t *v = json_loadb(t, n, FLAGS | JSON_DECODE_ANY, &a);
    bool ok = nf_jw_validate(t, n, FLAGS, piece, &b);
    cr_assert_eq(ok, v != NULL, "piece %zu: '%.*s': jansson %s, the walk %s", piece, (int)n, t,
                 v ? "accepts" : "refuses", ok ? "accepts" : "refuses");
    json_decref(v);
    if (ok) return;
    cr_assert_eq(json_error_code(&b), json_error_code(&a), "piece %zu: '%.*s': code %d, jansson's %d (%s / %s)", piece,
                 (int)n, t, json_error_code(&b), json_error_code(&a), b.text, a.text);
    cr_assert_eq(b.position, a.position, "piece %zu: '%.*s': position %d, jansson's %d (%s / %s)", piece, (int)n, t,
                 b.position, a.position, b.text, a.text);
    cr_assert_eq(b.line, a.line, "piece %zu: '%.*s': line %d, jansson's %d", piece, (int)n, t, b.line, a.line);
    cr_assert_eq(b.column, a.column, "piece %zu: '%.*s': column %d, jansson's %d", piece, (int)n, t, b.column,
                 a.column);
    cr_assert_str_eq(b.text, a.text, "piece %zu: '%.*s'", piece, (int)n, t);
}

static const char *const SEEDS[] = {
    "{\"a\":[1,2,{\"b\":null}],\"c\":{\"d\":\"x\\\"y\",\"e\":[]},\"f\":true}",
    " [ {\"k\" : -1.5e3 } ,\n [\"\\u0000\", false ] , \"}\" ]\n",
    "{\"x\":{\"y\":{\"z\":{}}},\"\\u0078\":1}",
    "\"only\"",
    "{\"m\":{\"name\":\"n\",\"k\":[[],[[]],{}]}}",
};

/* Every text one edit away from a seed: each byte deleted, each of a set of bytes put in place of
 * it and inserted before it. */
Test(json_walk, validate_agrees_with_jansson_one_edit_from_seeds)
{
    static const char alphabet[] = "{}[]\":,0a\\ -.\nu\0"; /* the NUL too: jansson reads "2\0" as 2 */
    for (size_t s = 0; s < sizeof SEEDS / sizeof SEEDS[0]; s++) {
        const char *seed = SEEDS[s];
        size_t n = strlen(seed);
        char *buf = malloc(n + 2);
        for (size_t pi = 0; pi < sizeof PIECES / sizeof PIECES[0]; pi++) {
            same_verdict(seed, n, PIECES[pi]);
            for (size_t at = 0; at < n; at++) {
                memcpy(buf, seed, at); /* deleted */
                memcpy(buf + at, seed + at + 1, n - at - 1);
                same_verdict(buf, n - 1, PIECES[pi]);
                for (const char *c = alphabet; c < alphabet + sizeof alphabet - 1; c++) {
                    memcpy(buf, seed, n); /* replaced */
                    buf[at] = *c;
                    same_verdict(buf, n, PIECES[pi]);
                    memcpy(buf, seed, at); /* inserted */
                    buf[at] = *c;
                    memcpy(buf + at + 1, seed + at, n - at);
                    same_verdict(buf, n + 1, PIECES[pi]);
                }
            }
        }
        free(buf);
    }
}

Test(json_walk, duplicate_and_nul_names_in_walked_objects)
{
    static const char *const texts[] = {
        "{\"a\":1,\"b\":{\"c\":1,\"c\":2}}",
        "{\"a\":1,\"\\u0061\":2}",
        "{\"a\":{\"\\u0000\":1}}",
        "{\"a\":[{\"b\":1},{\"b\":1,\"b\":1}]}",
        "[{\"a\":1},\n{\"a\":1,\n  \"a\":3}]",
        /* names of 18 to 21 bytes with their quotes: jansson quotes only tokens of up to 20 */
        "{\"abcdefghijklmnop\":1,\"abcdefghijklmnop\":2}",
        "{\"abcdefghijklmnopq\":1,\"abcdefghijklmnopq\":2}",
        "{\"abcdefghijklmnopqr\":1,\"abcdefghijklmnopqr\":2}",
        "{\"x\":{\"\\u0000bcdefghijklmn\":1}}",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        for (size_t pi = 0; pi < sizeof PIECES / sizeof PIECES[0]; pi++)
            same_verdict(texts[i], strlen(texts[i]), PIECES[pi]);
    /* a scalar followed at once by another token: where jansson stops */
    static const char *const adjacent[] = {"3\"\\\r", "[1\"a\"]", "{\"a\":1\"b\"}", "[0[1]]", "[true{}]", "tru\"e\""};
    for (size_t i = 0; i < sizeof adjacent / sizeof adjacent[0]; i++)
        for (size_t pi = 0; pi < sizeof PIECES / sizeof PIECES[0]; pi++)
            same_verdict(adjacent[i], strlen(adjacent[i]), PIECES[pi]);
    /* a NUL after a number is read as nothing, and jansson's positions after it lose a byte */
    static const char after_nul[] = "[{\"a\":1\0},\n {\"b\":[2\0,3]},{\"c\":1 2}]";
    for (size_t pi = 0; pi < sizeof PIECES / sizeof PIECES[0]; pi++)
        same_verdict(after_nul, sizeof after_nul - 1, PIECES[pi]);
    /* without JSON_ALLOW_NUL a NUL is refused in any string, as jansson refuses it */
    json_error_t a, b;
    const char *t = "{\"a\":\"\\u0000\"}";
    cr_assert_null(json_loadb(t, strlen(t), JSON_DECODE_ANY, &a));
    cr_assert_not(nf_jw_validate(t, strlen(t), 0, 1, &b));
    cr_assert_eq(b.position, a.position);
}

Test(json_walk, items_and_value_end)
{
    const char *t = "{ \"a\" : [1, \"]\"] , \"b\":{\"c\":\"}\"} }";
    nf_jw_items it;
    nf_jw_items_open(&it, t, strlen(t), 0);
    nf_jw_span k, v;
    cr_assert_eq(nf_jw_items_next(&it, &k, &v), 1);
    cr_assert_eq(strncmp(t + k.at, "\"a\"", k.end - k.at), 0);
    cr_assert_eq(strncmp(t + v.at, "[1, \"]\"]", v.end - v.at), 0);
    cr_assert_eq(nf_jw_items_next(&it, &k, &v), 1);
    cr_assert_eq(strncmp(t + v.at, "{\"c\":\"}\"}", v.end - v.at), 0);
    cr_assert_eq(nf_jw_items_next(&it, &k, &v), 0);
    cr_assert_eq(it.pos, strlen(t));
    size_t end;
    cr_assert_not(nf_jw_value_end("[\"]", 3, 0, &end));
    cr_assert(nf_jw_value_end("12,", 3, 0, &end));
    cr_assert_eq(end, 2);
}

/* ---------------------------------------------------------------- the directory check */
static void same_directory_verdict(const uint8_t *t, size_t n)
{
    json_t *root = NULL;
    nf_dir dir;
    nf_error a, b;
    nf_status want = nf_dir_parse(t, n, "a.ninfer", &root, &dir, &a);
    if (want == NF_OK) nf_dir_free(&dir);
    json_decref(root);
    for (size_t pi = 0; pi < sizeof PIECES / sizeof PIECES[0]; pi++) {
        nf_status got = nf_dir_check(t, n, "a.ninfer", PIECES[pi], &b);
        cr_assert_eq(got, want, "piece %zu: '%.*s': %d (%s), the parse %d (%s)", PIECES[pi], (int)n, (const char *)t,
                     got, got ? b.message : "", want, want ? a.message : "");
        if (got != NF_OK)
            cr_assert_str_eq(b.message, a.message, "piece %zu: '%.*s'", PIECES[pi], (int)n, (const char *)t);
    }
}

#define OBJ                                                                                                          \
    "{\"id\":\"t\",\"shape\":[2],\"format\":\"fp32\",\"layout\":\"row_major_v1\",\"offset\":0,\"bytes\":8,\"kind\":" \
    "\"tensor\"}"
#define RES "{\"id\":\"r\",\"encoding\":\"raw_bytes_v1\",\"offset\":64,\"bytes\":5,\"kind\":\"resource\"}"
static const char DIRECTORY[] =
    "{\"components\":{\"text\":{\"config\":{\"n\":[1,2]},\"resources\":{\"tok\":\"r\"}}},\"objects\":[" OBJ "," RES
    "],\"bindings\":{\"t\":{\"object\":\"t\"},\"u\":{\"parts\":[{\"object\":\"t\",\"range\":[0,2]}]}},"
    "\"uses\":[{\"parameter\":\"t\",\"input\":\"x\",\"activation_policy\":\"AllowA8\"}],"
    "\"files\":[{\"path\":null,\"payload_bytes\":69}],\"metadata\":{\"k\":{\"a\":[]},\"name\":\"m\"},"
    "\"provenance\":{\"objects\":{\"t\":{}}}}";

Test(json_walk, directory_check_agrees_with_the_parse)
{
    size_t n = strlen(DIRECTORY);
    same_directory_verdict((const uint8_t *)DIRECTORY, n);
    json_error_t je;
    json_t *v = json_loads(DIRECTORY, 0, &je);
    cr_assert_not_null(v, "the test's directory is JSON: %s", je.text);
    json_decref(v);
    nf_error err;
    cr_assert_eq(nf_dir_check((const uint8_t *)DIRECTORY, n, "a.ninfer", 1, &err), NF_OK, "%s", err.message);
    /* every single-byte edit; and random multi-byte edits */
    static const char alphabet[] = "{}[]\":,0a\\ 9tx\0";
    uint8_t *buf = malloc(n + 8);
    for (size_t at = 0; at < n; at++)
        for (const char *c = alphabet; c < alphabet + sizeof alphabet - 1; c++) {
            memcpy(buf, DIRECTORY, n);
            buf[at] = (uint8_t)*c;
            same_directory_verdict(buf, n);
        }
    tc_rng rng = {7};
    for (int iter = 0; iter < 3000; iter++) {
        memcpy(buf, DIRECTORY, n);
        size_t len = n;
        for (int e = 0, edits = 1 + (int)tc_below(&rng, 3); e < edits; e++) {
            size_t at = (size_t)tc_below(&rng, len);
            if (tc_below(&rng, 2)) {
                memmove(buf + at, buf + at + 1, len - at - 1);
                len--;
            } else {
                buf[at] = (uint8_t)alphabet[tc_below(&rng, sizeof alphabet - 1)];
            }
        }
        same_directory_verdict(buf, len);
    }
    free(buf);
}
