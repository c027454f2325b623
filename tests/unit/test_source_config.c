/* A checkpoint's config.json (docs/security.md 7.1, F14): read with a size cap and pre-scanned like the
 * safetensors index (lib/src/common/json_prescan.c) before jansson builds anything, so 125 MB of
 * "[]," can no longer cost gigabytes; every refusal names the file and the cap.  Both entry
 * points are checked: the text parser the fuzz target drives and the file reader the planner
 * uses. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ninfer/ninfer.h>

#include "support/source_writer.h"

static char *g_dir;

static void setup(void) { g_dir = sw_tempdir(); }
static void teardown(void)
{
    if (g_dir) sw_rmtree(g_dir);
    free(g_dir);
    g_dir = NULL;
}

TestSuite(source_config, .init = setup, .fini = teardown);

/* "[" + n copies of item separated by "," + "]" (malloc'ed, length in *len). */
static char *repeated(const char *item, size_t n, size_t *len)
{
    size_t k = strlen(item);
    char *t = malloc(n * (k + 1) + 3);
    cr_assert_not_null(t);
    size_t at = 0;
    t[at++] = '[';
    for (size_t i = 0; i < n; i++) {
        if (i) t[at++] = ',';
        memcpy(t + at, item, k);
        at += k;
    }
    t[at++] = ']';
    t[at] = '\0';
    *len = at;
    return t;
}

/* {"x": TEXT} */
static char *wrapped(const char *text, size_t *len)
{
    size_t n = strlen(text);
    char *t = malloc(n + 8);
    cr_assert_not_null(t);
    snprintf(t, n + 8, "{\"x\":%s}", text);
    *len = strlen(t);
    return t;
}

static void expect_text_refused(const char *text, size_t len, const char *needle)
{
    json_t *cfg = (json_t *)1;
    nf_error err = {0};
    nf_status st = nf_source_parse_config(text, len, "ck/config.json", &cfg, &err);
    cr_assert_eq(st, NF_ERR_INVALID, "%s", st == NF_OK ? "accepted" : err.message);
    cr_assert_null(cfg);
    cr_assert(strstr(err.message, "ck/config.json"), "%s", err.message);
    cr_assert(strstr(err.message, needle), "'%s' lacks '%s'", err.message, needle);
}

Test(source_config, valid_config_parses)
{
    const char *text = "{\"architectures\":[\"LlamaForCausalLM\"],\"hidden_size\":200,\"rope\":{\"theta\":1e4}}";
    json_t *cfg = NULL;
    nf_error err = {0};
    cr_assert_eq(nf_source_parse_config(text, strlen(text), "config.json", &cfg, &err), NF_OK, "%s", err.message);
    cr_assert_eq(json_integer_value(json_object_get(cfg, "hidden_size")), 200);
    json_decref(cfg);
}

Test(source_config, nesting_beyond_the_cap_refused)
{
    size_t depth = NF_SOURCE_CONFIG_MAX_DEPTH + 1, len = 0;
    char *t = malloc(2 * depth + 1);
    for (size_t i = 0; i < depth; i++) t[i] = '[', t[2 * depth - 1 - i] = ']';
    t[2 * depth] = '\0';
    char *w = wrapped(t, &len);
    expect_text_refused(w, len, "nested deeper than 64 levels");
    free(w);
    free(t);
}

/* A config of `count` copies of `unit` (wrapped into an object) is refused naming the cap. */
static void expect_repeated_refused(const char *unit, size_t count, const char *needle)
{
    size_t len = 0, wlen = 0;
    char *t = repeated(unit, count, &len);
    char *w = wrapped(t, &wlen);
    expect_text_refused(w, wlen, needle);
    free(w);
    free(t);
}

Test(source_config, containers_beyond_the_cap_refused)
{
    expect_repeated_refused("[]", NF_SOURCE_CONFIG_MAX_CONTAINERS, "more than 65536 JSON objects and arrays");
}

Test(source_config, values_beyond_the_cap_refused)
{
    expect_repeated_refused("0", NF_SOURCE_CONFIG_MAX_VALUES, "more than 262144 JSON values");
}

Test(source_config, malformed_duplicate_and_not_object_refused)
{
    expect_text_refused("{\"a\":1,", 7, "line 1");
    expect_text_refused("{\"a\":1,\"a\":2}", 13, "duplicate");
    expect_text_refused("[1,2]", 5, "not a JSON object");
}

/* The file reader: the size cap is checked before anything is read, and the same pre-scan
 * applies; a FIFO is refused without blocking. */
Test(source_config, file_reader_caps_size_and_prescans)
{
    char *p = sw_path(g_dir, "config.json");
    /* 125 MB of "[]," in the report; the cap is 16 MiB, so one byte more is enough */
    size_t n = NF_SOURCE_MAX_CONFIG_BYTES + 1;
    char *big = malloc(n);
    memset(big, ' ', n);
    big[0] = '{', big[n - 1] = '}';
    cr_assert_eq(sw_write_file(p, big, n), 0);
    free(big);
    json_t *cfg = NULL;
    nf_error err = {0};
    cr_assert_eq(nf_source_read_config(p, &cfg, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, p) && strstr(err.message, "16777216"), "%s", err.message);
    cr_assert_null(cfg);

    size_t len = 0, wlen = 0;
    char *t = repeated("[]", NF_SOURCE_CONFIG_MAX_CONTAINERS, &len);
    char *w = wrapped(t, &wlen);
    cr_assert_eq(sw_write_file(p, w, wlen), 0);
    free(w);
    free(t);
    cr_assert_eq(nf_source_read_config(p, &cfg, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, p) && strstr(err.message, "65536"), "%s", err.message);

    cr_assert_eq(sw_write_text(g_dir, "config.json", "{\"hidden_size\": 8}"), 0);
    cr_assert_eq(nf_source_read_config(p, &cfg, &err), NF_OK, "%s", err.message);
    cr_assert_eq(json_integer_value(json_object_get(cfg, "hidden_size")), 8);
    json_decref(cfg);

    cr_assert_eq(remove(p), 0);
    cr_assert_eq(mkfifo(p, 0600), 0);
    cr_assert_eq(nf_source_read_config(p, &cfg, &err), NF_ERR_INVALID);
    cr_assert(strstr(err.message, "not a regular file"), "%s", err.message);
    free(p);
}

/* A config.json may be a link to any file: a syntax error names where, never the text there
 * (jansson's "near '...'" quote is dropped). */
Test(source_config, syntax_errors_do_not_quote_the_file)
{
    const char *text = "root:x:0:0:hunter2:/root:/bin/bash\n";
    json_t *cfg = NULL;
    nf_error err;
    cr_assert_eq(nf_source_parse_config(text, strlen(text), "ck/config.json", &cfg, &err), NF_ERR_INVALID);
    cr_assert_null(cfg);
    cr_assert(strstr(err.message, "ck/config.json: byte"), "%s", err.message);
    cr_assert_null(strstr(err.message, "root"), "%s", err.message);
    cr_assert_null(strstr(err.message, "hunter2"), "%s", err.message);
}
